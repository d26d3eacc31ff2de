"""Covariance functions used by the papers.

* ``rbf``: the Gaussian kernel of BKB (Calandriello et al., COLT 2019) and BBKB (Calandriello et al.,
  ICML 2020), k(x, x') = exp(-||x - x'||^2 / (2 sigma2)) with the papers' "width" sigma2.
* ``matern52``: Matérn-5/2 with ARD lengthscales and an output scale (GSSBO, Wei et al. 2025).
* ``linear``: k(x, x') = variance * x^T x' (the examples of the authors' public BBKB code).

Every kernel is a [`Kernel`][] of two pure functions, ``k(params, X, Y) -> (n, m)`` and ``diag(params, X) -> (n,)``;
``params`` is a dict of arrays so that it can be traced and vmapped.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from sketchbo.linalg import mm


class Kernel(NamedTuple):
    """A covariance function: its name, its kernel matrix, its diagonal and its default hyperparameters.

    Attributes:
        name: the kernel family: "rbf", "matern52", ...
        k: `(params, X (n, d), Y (m, d))` -> (n, m)
        diag: `(params, X (n, d))` -> (n,)
        default_params: (d: int) -> dict of float arrays
    """

    name: str
    k: Callable
    diag: Callable
    default_params: Callable


def sq_dist(X, Y):
    """Squared Euclidean distances (n, m), clamped at zero against cancellation."""
    x2 = jnp.sum(X * X, axis=-1)[:, None]
    y2 = jnp.sum(Y * Y, axis=-1)[None, :]
    return jnp.maximum(x2 + y2 - 2.0 * mm(X, Y.T), 0.0)


def gram(kernel: Kernel, params, X):
    """K(X, X) (n, n) with its diagonal from ``kernel.diag``: exact for stationary kernels (k(x, x) = the output
    variance on every row), where the expanded squared distance of [`sq_dist`][] leaves a rounding residue (up to 2e-13
    relative, measured in float64), different per row and per compiled program. A greedy pivot choice on K without
    forced rows starts at an exact tie of the diagonal; with the residue, rounding (a vmapped program's reductions,
    another fusion) would decide it, so the selections build K with this."""
    n = X.shape[0]
    return kernel.k(params, X, X).at[jnp.arange(n), jnp.arange(n)].set(kernel.diag(params, X))


def _rbf_k(params, X, Y):
    return jnp.exp(-sq_dist(X, Y) / (2.0 * params["sigma2"]))


def _rbf_diag(params, X):
    return jnp.ones(X.shape[:-1], dtype=X.dtype)


def _matern52_k(params, X, Y):
    ls = params["lengthscales"]
    r = jnp.sqrt(sq_dist(X / ls, Y / ls) + 1e-300)  # the tiny shift keeps the gradient at r = 0 finite
    s5r = jnp.sqrt(5.0) * r
    return params["variance"] * (1.0 + s5r + 5.0 / 3.0 * r * r) * jnp.exp(-s5r)


def _matern52_diag(params, X):
    return jnp.full(X.shape[:-1], params["variance"], dtype=X.dtype)


def _linear_k(params, X, Y):
    return params["variance"] * mm(X, Y.T)


def _linear_diag(params, X):
    return params["variance"] * jnp.sum(X * X, axis=-1)


KERNELS = {
    "rbf": Kernel("rbf", _rbf_k, _rbf_diag, lambda d: {"sigma2": 1.0}),
    "matern52": Kernel(
        "matern52", _matern52_k, _matern52_diag,
        lambda d: {"lengthscales": [1.0] * d, "variance": 1.0},
    ),
    "linear": Kernel("linear", _linear_k, _linear_diag, lambda d: {"variance": 1.0}),
}
"""The kernel families by name: ``rbf``, ``matern52`` and ``linear``."""


def get_kernel(name: str) -> Kernel:
    if not isinstance(name, str) or name not in KERNELS:
        raise ValueError(f"kernel.name={name!r} is not a known kernel; choose one of {sorted(KERNELS)}")
    return KERNELS[name]


def kernel_params(name: str, d: int, dtype=jnp.float64, /, **overrides) -> dict:
    """Kernel hyperparameters as arrays, defaults completed from ``overrides``; validated.

    ``name``, ``d`` and ``dtype`` are positional-only, so that a user's kernel spec holding a key of that
    name (``kernel.d=1``) is reported as an unknown kernel parameter, not a Python TypeError."""
    kern = get_kernel(name)
    params = dict(kern.default_params(d))
    unknown = set(overrides) - set(params)
    if unknown:
        raise ValueError(f"kernel {name!r} has no parameter(s) {sorted(unknown)}; it takes {sorted(params)}")
    params.update({k: v for k, v in overrides.items() if v is not None})
    out = {}
    for key, value in params.items():
        allowed = "a finite number > 0" + (f" or a list of {d} of them" if key == "lengthscales" else "")
        try:
            raw = np.asarray(value)
        except (TypeError, ValueError):  # ragged nested lists and the like
            raw = np.asarray(None)
        if raw.dtype.kind not in "iuf":  # strings, booleans, complex numbers, None, dicts
            raise ValueError(f"kernel.{key}={value!r} is invalid; it must be {allowed}")
        arr = np.asarray(raw, dtype=dtype)  # checked on the host: nothing is compiled before the run's program
        if not np.all(np.isfinite(arr)) or not np.all(arr > 0):
            raise ValueError(f"kernel.{key}={value!r} is invalid; it must be finite and > 0")
        if key != "lengthscales" and arr.ndim != 0:
            raise ValueError(f"kernel.{key} has shape {arr.shape}; expected a scalar")
        if key == "lengthscales":
            arr = np.broadcast_to(arr, (d,)) if arr.ndim == 0 else arr
            if arr.shape != (d,):
                raise ValueError(f"kernel.lengthscales has shape {arr.shape}; expected a scalar or ({d},)")
        out[key] = jax.device_put(arr)  # (jnp.asarray would compile a program for it)
    return out


MEDIAN_ROWS = 1000  # rows used by the median heuristic


def median_sigma2(arms: np.ndarray) -> float:
    """Default rbf width: half the median squared distance between candidates.

    k(x, x') = exp(-||x - x'||^2 / (2 sigma2)) is then e^-1 at the median distance. Computed on at most
    1000 evenly spaced rows (deterministic); 1.0 when all candidates coincide.
    """
    rows = np.unique(np.linspace(0, arms.shape[0] - 1, min(arms.shape[0], MEDIAN_ROWS)).astype(int))
    X = arms[rows] - arms[rows].mean(axis=0)  # (n, d), centred against cancellation
    x2 = np.sum(X * X, axis=1)
    sq = np.maximum(x2[:, None] + x2[None, :] - 2.0 * X @ X.T, 0.0)[np.triu_indices(len(rows), k=1)]
    sq = sq[sq > 1e-12 * max(float(x2.max()), 1e-300)]  # pairs of equal points (up to rounding) are ignored
    return float(np.median(sq)) / 2.0 if sq.size else 1.0
