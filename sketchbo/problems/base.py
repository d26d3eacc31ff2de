"""The finite-arm problem type shared by every bandit algorithm (BKB / BBKB protocol, PROTOCOLS §9)."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np


class Problem(NamedTuple):
    """A finite arm set with a noiseless reward per arm.

    Feedback is ``y = f[i] + noise_std * N(0, 1)``; regret is always measured on the noiseless ``f``.
    ``kernel`` is the problem's default kernel, ``{"name": ..., **hyperparameters}``; a run may override it.
    """

    name: str
    arms: np.ndarray  # (A, d) float64
    f: np.ndarray  # (A,) float64, noiseless reward of each arm
    noise_std: float | None  # None: the runner uses xi = sqrt(lam) (PROTOCOLS §9, xi^2 = lam)
    kernel: dict  # default kernel for this problem


def check_problem(problem: Problem) -> Problem:
    """Validate shapes and finiteness; raise ValueError naming the field."""
    arms = np.asarray(problem.arms, dtype=np.float64)
    f = np.asarray(problem.f, dtype=np.float64)
    if arms.ndim != 2 or arms.shape[0] < 1 or arms.shape[1] < 1:
        raise ValueError(f"problem.arms has shape {arms.shape}; expected (A, d) with A >= 1, d >= 1")
    if f.shape != (arms.shape[0],):
        raise ValueError(f"problem.f has shape {f.shape}; expected ({arms.shape[0]},), one reward per arm")
    if not np.all(np.isfinite(arms)):
        bad = int(np.argwhere(~np.isfinite(arms))[0, 0])
        raise ValueError(f"problem.arms contains NaN or inf (first at row {bad}); arms must be finite")
    if not np.all(np.isfinite(f)):
        bad = int(np.argwhere(~np.isfinite(f))[0, 0])
        raise ValueError(f"problem.f contains NaN or inf (first at arm {bad}); rewards must be finite")
    if problem.noise_std is not None and not (np.isfinite(problem.noise_std) and problem.noise_std >= 0):
        raise ValueError(f"problem.noise_std={problem.noise_std!r}; it must be finite and >= 0 (or None)")
    return problem._replace(arms=arms, f=f)
