"""Exact-GP information quantities of a run's pulled arms: the effective dimension and the posterior variances
of the pulls (BKB, Calandriello et al., COLT 2019; Batch-BKB, Calandriello et al., ICML 2020).

* [`effective_dimension`][] d_eff(lam, X_T) = Tr(K_T (K_T + lam I)^{-1}) (BKB Sec. 3; BKB Prop. 5: = sum_s
  sigma_T^2(x_s)), exact, on the unique pulled arms with their counts;
* [`pull_variances`][] / [`sum_posterior_variance`][]: sigma_{t-1}^2(x_t) of every pull (or sigma_t^2(x_t),
  ``after_pull=True``) of the exact GP, computed block by block.

Units: the papers' lam-scaled variances, sigma_t^2(x) = (k(x, x) - k_t(x)^T (K_t + lam I)^{-1} k_t(x)) / lam (BBKB Eq. 2
with S = X_t; BKB Eq. 4); in them sum_t log(1 + sigma_{t-1}^2(x_t)) = log det(I + K_T / lam). Host-side float64 numpy
(kernel matrices through [`sketchbo.kernels`][]), run once per seed after a run.
"""
from __future__ import annotations

import functools
import math
import numbers
from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp
import numpy as np

from sketchbo.kernels import get_kernel, gram, kernel_params as _kernel_params

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

BLOCK = 256
"""Pulls per block of [`pull_variances`][]."""


# ------------------------------------------------------------------------------------------------- validation

def _real(name: str, value, ok, allowed: str) -> float:
    """``value`` (a Python, numpy or JAX real scalar) as a float meeting ``ok``; ValueError naming it otherwise."""
    bad = isinstance(value, (bool, np.bool_, str, bytes)) or value is None
    try:
        v = float(value) if not bad and np.ndim(value) == 0 and np.asarray(value).dtype.kind in "iuf" else None
    except (TypeError, ValueError):
        v = None
    if v is None or not (math.isfinite(v) and ok(v)):
        raise ValueError(f"{name}={value!r} is invalid; it must be {allowed}")
    return v


def _positive(name: str, value) -> float:
    return _real(name, value, lambda v: v > 0, "a finite number > 0")


def _nonnegative(name: str, value) -> float:
    return _real(name, value, lambda v: v >= 0, "a finite number >= 0")


def _at_least_one(name: str, value) -> float:
    return _real(name, value, lambda v: v >= 1, "a finite number >= 1")


def _horizon(T) -> int:
    ok = isinstance(T, numbers.Integral) and not isinstance(T, bool) and T >= 1
    if not ok:
        raise ValueError(f"T={T!r} is invalid; it must be an integer >= 1")
    return int(T)


def _delta(delta) -> float:
    return _real("delta", delta, lambda v: 0 < v < 1, "in (0, 1)")


def _arms(arms) -> np.ndarray:
    try:
        X = np.asarray(arms, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError("arms is invalid; it must be an (A, d) array of finite numbers") from None
    if X.ndim != 2 or X.shape[0] < 1 or X.shape[1] < 1:
        raise ValueError(f"arms has shape {X.shape}; it must be an (A, d) array with A, d >= 1")
    if not np.all(np.isfinite(X)):
        raise ValueError("arms holds non-finite values; it must be an (A, d) array of finite numbers")
    return X


def _queries(queries, A: int) -> np.ndarray:
    """The pulled arm indices in order, -1 entries (steps not taken) dropped."""
    q = np.asarray(queries)
    if q.ndim != 1:
        raise ValueError(f"queries has shape {q.shape}; it must be a (T,) array of arm indices")
    if q.size and q.dtype.kind not in "iu":
        if q.dtype.kind != "f" or not np.all(np.isfinite(q)) or not np.all(q == np.round(q)):
            raise ValueError(f"queries has dtype {q.dtype} with non-integer entries; it must hold arm indices")
    q = q.astype(np.int64)
    bad = (q < -1) | (q >= A)
    if np.any(bad):
        raise ValueError(f"queries holds {q[bad][0]} at step {int(np.argmax(bad))}; every entry must be an arm "
                         f"index in [0, {A}) or -1 (a step not taken)")
    return q[q >= 0]


def _kernel(kernel_name, kernel_params, d: int):
    """(Kernel, params as float64 arrays) for ``kernel_name`` with ``kernel_params`` (raw values or the arrays of
    [`sketchbo.kernels.kernel_params`][]; missing ones take the kernel's defaults). ValueError naming it."""
    kern = get_kernel(kernel_name)
    if kernel_params is None:
        kernel_params = {}
    if not isinstance(kernel_params, dict):
        raise ValueError(f"kernel_params={kernel_params!r} is invalid; it must be a dict of the kernel's parameters")
    if "name" in kernel_params:  # a problem's kernel dict {"name": ..., **params}
        if kernel_params["name"] != kernel_name:
            raise ValueError(f"kernel_params names the kernel {kernel_params['name']!r}, not kernel_name="
                             f"{kernel_name!r}")
        kernel_params = {k: v for k, v in kernel_params.items() if k != "name"}
    with jax.enable_x64(True):
        params = _kernel_params(kernel_name, d, jnp.float64, **{k: np.asarray(v) for k, v in kernel_params.items()})
    return kern, params


GRAM_BLOCK = 128
"""The rows of a Gram matrix are padded to a multiple of it: one compiled program per size class."""


@functools.partial(jax.jit, static_argnums=0)
def _gram_program(kern, params, X):
    return gram(kern, params, X)


def _gram(kern, params, X: np.ndarray) -> np.ndarray:
    """K(X, X) in float64 (diagonal from ``kern.diag``, [`sketchbo.kernels.gram`][]), by one compiled program per
    multiple of [`GRAM_BLOCK`][] rows (X padded with zero rows, cut off after): eager operations would compile each
    operation anew for every number of rows, about 0.5 s per seed of a run's certificates."""
    n, d = X.shape
    padded = np.zeros((-(-n // GRAM_BLOCK) * GRAM_BLOCK, d))
    padded[:n] = X
    with jax.enable_x64(True):
        return np.asarray(_gram_program(kern, params, jax.device_put(padded)), dtype=np.float64)[:n, :n]


def _diag(kern, params, X: np.ndarray) -> np.ndarray:
    with jax.enable_x64(True):
        return np.asarray(kern.diag(params, jnp.asarray(X, dtype=jnp.float64)), dtype=np.float64)


def _pulled(kernel_name, kernel_params, arms, queries, lam):
    """Validated inputs as (K_UU (U, U), position in the unique list of every pull (T,), counts (U,), lam)."""
    lam = _positive("lam", lam)
    X = _arms(arms)
    q = _queries(queries, X.shape[0])
    kern, params = _kernel(kernel_name, kernel_params, X.shape[1])
    uniq, pos, counts = np.unique(q, return_inverse=True, return_counts=True)
    K = _gram(kern, params, X[uniq]) if uniq.size else np.zeros((0, 0))
    return K, pos.reshape(-1), counts.astype(np.float64), lam


# --------------------------------------------------------------------------------------- the run's quantities

def _effective_dimension(K: np.ndarray, counts: np.ndarray, lam: float) -> float:
    if counts.size == 0:
        return 0.0
    r = np.sqrt(counts)
    e = np.clip(np.linalg.eigvalsh(r[:, None] * K * r[None, :]), 0.0, None)
    return float(np.sum(e / (e + lam)))


def effective_dimension(kernel_name: str, kernel_params: dict, arms: ArrayLike, queries: ArrayLike,
                        lam: float) -> float:
    """Effective dimension d_eff(lam, X_T) = Tr(K_T (K_T + lam I)^{-1}) of the pulled arms, repeats counted.

    BKB (COLT 2019) Sec. 3 defines it (the display before Thm. 1) and Prop. 5 gives d_eff = sum_s sigma_T^2(x_s);
    BBKB (ICML 2020) Sec. 3 uses the same d_eff(X_t) in Thm. 1. Computed exactly on the U unique pulled arms
    with counts n_i: with C = diag(n), K_T = E K_U E^T for the (T, U) indicator E with E^T E = C, so the nonzero
    eigenvalues of K_T are those of C^{1/2} K_U C^{1/2} and d_eff = sum_j e_j / (e_j + lam) over them
    (``np.linalg.eigvalsh``, float64, O(U^3)).

    Args:
        kernel_name: a key of [`sketchbo.kernels.KERNELS`][] ("rbf", "matern52", "linear").
        kernel_params: the kernel's parameters, e.g. ``{"sigma2": 0.1}`` or the arrays of
            [`sketchbo.kernels.kernel_params`][]; missing ones take the kernel's defaults.
        arms: (A, d) candidate arms.
        queries: (T,) int arm index of every pull, in order; -1 entries (steps not taken) are ignored.
        lam: the regulariser lambda > 0 (the GP's noise variance).

    Returns:
        d_eff as a float; 0.0 when nothing was pulled.

    Raises:
        ValueError: naming the argument that is invalid (lam <= 0, a query outside [0, A) other than -1, ...).

    Examples:
        Four pulls of three distinct arms on a line:

        ```python
        import numpy as np
        from sketchbo.gp.information import effective_dimension

        arms = np.linspace(0, 1, 20)[:, None]
        effective_dimension("rbf", {"sigma2": 0.1}, arms, np.array([0, 0, 5, 19]), lam=1.0)   # 1.498...
        ```
    """
    K, _, counts, lam = _pulled(kernel_name, kernel_params, arms, queries, lam)
    return _effective_dimension(K, counts, lam)


def _cholesky_shifted(S: np.ndarray, lam: float) -> np.ndarray:
    """Lower Cholesky factor of S + lam I for a PSD S; should rounding have left S with eigenvalues below -lam
    (lam tiny against the kernel's scale), of S with its negative eigenvalues clipped to zero."""
    try:
        return np.linalg.cholesky(S + lam * np.eye(S.shape[0]))
    except np.linalg.LinAlgError:
        w, V = np.linalg.eigh(0.5 * (S + S.T))
        return np.linalg.cholesky((V * np.maximum(w, 0.0)) @ V.T + lam * np.eye(S.shape[0]))


def _pull_variances(K: np.ndarray, pos: np.ndarray, lam: float, block: int | None = None) -> np.ndarray:
    """sigma_{t-1}^2(x_t) (lam-scaled) of every pull: blocked exact sequential conditioning.

    P is the GP posterior covariance (GP units) among the unique pulled arms given the pulls before the current
    block. For a block of pulls z_1..z_b (repeats allowed), the Cholesky factor L of P[Z, Z] + lam I gives every
    in-block conditional variance at once: P[z_k, z_k] - sum_{j<k} L_kj^2 = var(z_k | earlier pulls) (the Schur
    complement of the leading block). Then P <- P - W^T W with W = L^{-1} P[Z, :], the posterior given the block
    too, only on the arms still to be pulled after the block (the unique arms are ordered by their last pull, so
    they are a trailing block of P). O(U^2 T) flops in matrix products, 8 U^2 bytes of memory.
    """
    T, U = pos.size, K.shape[0]
    block = BLOCK if block is None else block
    out = np.empty(T)
    if T == 0:
        return out
    last = np.full(U, -1, dtype=np.int64)
    np.maximum.at(last, pos, np.arange(T))
    order = np.argsort(last, kind="stable")  # unique arms by their last pull
    rank = np.empty(U, dtype=np.int64)
    rank[order] = np.arange(U)
    last_sorted = last[order]
    P = K[np.ix_(order, order)].copy()
    seq = rank[pos]
    for t0 in range(0, T, block):
        t1 = min(t0 + block, T)
        Z = seq[t0:t1]
        PZZ = P[np.ix_(Z, Z)]
        L = _cholesky_shifted(PZZ, lam)
        var = np.diagonal(PZZ) - np.sum(np.tril(L, -1) ** 2, axis=1)
        out[t0:t1] = np.maximum(var, 0.0) / lam
        a = int(np.searchsorted(last_sorted, t1))  # arms [a, U) are pulled again after this block
        if a < U:
            W = np.linalg.solve(L, P[Z, a:])
            P[a:, a:] -= W.T @ W
    return out


def pull_variances(kernel_name: str, kernel_params: dict, arms: ArrayLike, queries: ArrayLike, lam: float, *,
                   after_pull: bool = False) -> np.ndarray:
    """The exact GP posterior variance of every pulled arm, before (or after) its pull, lam-scaled.

    sigma_{t-1}^2(x_t) = (k(x_t, x_t) - k_{t-1}(x_t)^T (K_{t-1} + lam I)^{-1} k_{t-1}(x_t)) / lam, the variance of the
    t-th pulled arm given all t - 1 earlier pulls (repeats counted), in the lam-scaled units of BBKB Eq. 2 with S = X_t
    (BKB Eq. 4). With ``after_pull=True``, sigma_t^2(x_t) = s / (1 + s) for s = sigma_{t-1}^2(x_t) (one more observation
    of x_t with noise variance lam). Exact, blocked (see [`sum_posterior_variance`][]).

    Args:
        kernel_name: a key of [`sketchbo.kernels.KERNELS`][].
        kernel_params: the kernel's parameters (missing ones take the kernel's defaults).
        arms: (A, d) candidate arms.
        queries: (T,) int arm indices in pull order; -1 entries are ignored.
        lam: the regulariser lambda > 0.
        after_pull: False: sigma_{t-1}^2(x_t); True: sigma_t^2(x_t).

    Returns:
        (T',) float64 array, one value per pull (T' = the number of entries that are not -1).

    Raises:
        ValueError: naming the argument that is invalid.
    """
    K, pos, _, lam = _pulled(kernel_name, kernel_params, arms, queries, lam)
    s = _pull_variances(K, pos, lam)
    return s / (1.0 + s) if after_pull else s


def sum_posterior_variance(kernel_name: str, kernel_params: dict, arms: ArrayLike, queries: ArrayLike, lam: float, *,
                           after_pull: bool = False) -> float:
    """sum_t sigma_{t-1}^2(x_t) of the exact GP posterior, lam-scaled (or sum_t sigma_t^2(x_t)).

    BBKB (ICML 2020) Thm. 2 states the regret in sum_{t=1}^T sigma_{t-1}^2(x_t) (the exact posterior, S = X_t in
    Eq. 2: sigma_t^2(x) = (k(x, x) - k_t(x)^T (K_t + lam I)^{-1} k_t(x)) / lam); BBKB App. B.1 bounds the number of
    batches by sum_{t=1}^T sigma_t^2(x_t), the variance of x_t *after* its own pull (``after_pull=True``), which
    is sigma_{t-1}^2 / (1 + sigma_{t-1}^2) and never larger. In these units sum_t log(1 + sigma_{t-1}^2(x_t)) =
    log det(I + K_T / lam) (the chain rule of the Gaussian log-determinant).

    Computation: exact, on the U unique pulled arms. Pulls are taken in blocks of [`BLOCK`][]; one Cholesky
    factorisation of the block's posterior covariance (plus lam I) gives the sequential variances inside the block, and
    a rank-block update of the posterior covariance brings it past the block, only for arms pulled again later. O(U^2 T)
    flops as matrix products and O(U^2) memory; T = 10^4 random pulls of 2000 arms (d = 8) take a few seconds on one CPU
    core.

    Args:
        kernel_name: a key of [`sketchbo.kernels.KERNELS`][].
        kernel_params: the kernel's parameters (missing ones take the kernel's defaults).
        arms: (A, d) candidate arms.
        queries: (T,) int arm indices in pull order; -1 entries are ignored.
        lam: the regulariser lambda > 0.
        after_pull: False (default): sum_t sigma_{t-1}^2(x_t); True: sum_t sigma_t^2(x_t).

    Returns:
        The sum as a float (0.0 when nothing was pulled).

    Raises:
        ValueError: naming the argument that is invalid.
    """
    return float(np.sum(pull_variances(kernel_name, kernel_params, arms, queries, lam, after_pull=after_pull)))


__all__ = ["BLOCK", "effective_dimension", "pull_variances", "sum_posterior_variance"]
