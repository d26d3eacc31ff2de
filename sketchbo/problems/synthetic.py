"""Synthetic finite-arm problems (no download needed).

* [`gp_sample`][]: a reward function drawn from the zero-mean GP prior with the Gaussian (rbf) kernel k(x, x') =
  exp(-||x - x'||^2 / (2 sigma2)) of BKB (Calandriello et al., COLT 2019) and BBKB (Calandriello et al., ICML 2020), on
  arms uniform in [-1, 1]^d; the project's embedded default problem (docs/protocols.md#finite-arm-protocol).
* [`linear`][]: the linear problem of the examples in the authors' public BBKB code
  (docs/protocols.md#bbkb-code-vs-paper): arms ~ N(0, I), f(x) = x^T w* with w* ~ N(0, I), and the code's noise
  heuristic noise_std = sqrt((max f - min f) * 0.01).

Everything is float64 numpy; the arm set and f are deterministic functions of ``seed``.
"""
from __future__ import annotations

import numbers

import numpy as np

from sketchbo.problems.base import Problem, check_problem

JITTER = 1e-10  # added to the kernel diagonal before the Cholesky factorisation
GP_SAMPLE_SUGGESTED = {"lam": 0.01, "F": 1.0}  # Problem.suggested of gp_sample (sketchbo/cli/configs/algorithm/compare.yaml)
# linear: lam near the code heuristic's noise variance (~0.1), F near ||w*|| (~sqrt(d)); BBKB, T = 1000, 2 seeds,
# gave R_T/R_unif <= 0.016 at every lam in {0.01, 0.1, 1} x F in {0.5, 1, 3} (issue 13)
LINEAR_SUGGESTED = {"lam": 0.1, "F": 1.0}


def check_int(name: str, value, minimum: int) -> int:
    """``value`` as an int >= ``minimum``; ValueError naming the parameter otherwise."""
    ok = isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if isinstance(value, float) and value.is_integer():
        ok = True
    if not ok or int(value) < minimum:
        raise ValueError(f"{name}={value!r} is invalid; it must be an integer >= {minimum}")
    return int(value)


def check_positive(name: str, value) -> float:
    """``value`` as a finite float > 0; ValueError naming the parameter otherwise."""
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if not ok or not (np.isfinite(value) and value > 0):
        raise ValueError(f"{name}={value!r} is invalid; it must be a finite number > 0")
    return float(value)


def check_noise_std(value) -> float | None:
    """``None`` or a finite float >= 0; ValueError naming ``noise_std`` otherwise."""
    if value is None:
        return None
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if not ok or not (np.isfinite(value) and value >= 0):
        raise ValueError(
            f"noise_std={value!r} is invalid; it must be a finite number >= 0, or None "
            "(None: the runner uses xi = sqrt(lam))"
        )
    return float(value)


def standardise(y: np.ndarray) -> np.ndarray:
    """Zero mean and unit (population) variance; a constant vector becomes all zeros."""
    y = np.asarray(y, dtype=np.float64)
    centred = y - y.mean()
    std = centred.std()
    return centred / std if std > 0 else np.zeros_like(centred)


def rbf_gram(X: np.ndarray, sigma2: float) -> np.ndarray:
    """k(X, X) for k(x, x') = exp(-||x - x'||^2 / (2 sigma2)), in float64 numpy."""
    sq = np.sum(X * X, axis=1)
    d2 = np.maximum(sq[:, None] + sq[None, :] - 2.0 * X @ X.T, 0.0)
    return np.exp(-d2 / (2.0 * sigma2))


def sample_gp_prior(K: np.ndarray, z: np.ndarray) -> np.ndarray:
    """Draws L z of N(0, K) from standard normals ``z`` of shape (A,) or (A, n).

    Cholesky of K + JITTER I; if K is too ill-conditioned for that, the symmetric square root
    from ``eigh`` with negative round-off eigenvalues clipped at zero.
    """
    A = K.shape[0]
    try:
        L = np.linalg.cholesky(K + JITTER * np.eye(A))
        return L @ z
    except np.linalg.LinAlgError:
        w, V = np.linalg.eigh(K)
        root = np.sqrt(np.clip(w, 0.0, None))
        return V @ (root.reshape((-1,) + (1,) * (z.ndim - 1)) * z)


def gp_sample(A=1000, d=2, sigma2=0.1, seed=0, noise_std=None) -> Problem:
    """Arms uniform in [-1, 1]^d, f ~ GP(0, rbf(sigma2)) on them, standardised.

    The numpy Generator from ``seed`` draws the arms first, then the A standard normals of f.
    ``noise_std=None`` lets the runner use xi = sqrt(lam) (docs/protocols.md#finite-arm-protocol).
    """
    A = check_int("A", A, 1)
    d = check_int("d", d, 1)
    sigma2 = check_positive("sigma2", sigma2)
    seed = check_int("seed", seed, 0)
    noise_std = check_noise_std(noise_std)
    rng = np.random.default_rng(seed)
    arms = rng.uniform(-1.0, 1.0, size=(A, d))
    z = rng.standard_normal(A)
    f = standardise(sample_gp_prior(rbf_gram(arms, sigma2), z))
    kernel = {"name": "rbf", "sigma2": sigma2}
    # the demo values of sketchbo/cli/configs/algorithm/compare.yaml (lam, F) for this problem
    return check_problem(Problem("gp_sample", arms, f, noise_std, kernel, suggested=dict(GP_SAMPLE_SUGGESTED)))


def linear_noise_heuristic(f: np.ndarray) -> float:
    """The authors' code heuristic noise_std = sqrt((max f - min f) * 0.01) (docs/protocols.md#bbkb-code-vs-paper)."""
    return float(np.sqrt((np.max(f) - np.min(f)) * 0.01))


def linear(A=1000, d=3, seed=0, noise_std=None) -> Problem:
    """Arms ~ N(0, I_d), w* ~ N(0, I_d), f = arms @ w* (the authors' BBKB code examples).

    ``noise_std=None`` uses the code's heuristic sqrt((max f - min f) * 0.01).
    """
    A = check_int("A", A, 1)
    d = check_int("d", d, 1)
    seed = check_int("seed", seed, 0)
    noise_std = check_noise_std(noise_std)
    rng = np.random.default_rng(seed)
    arms = rng.standard_normal((A, d))
    w_star = rng.standard_normal(d)
    f = arms @ w_star
    if noise_std is None:
        noise_std = linear_noise_heuristic(f)
    kernel = {"name": "linear", "variance": 1.0}
    return check_problem(Problem("linear", arms, f, noise_std, kernel, suggested=dict(LINEAR_SUGGESTED)))
