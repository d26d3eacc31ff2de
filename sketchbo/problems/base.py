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


def _numeric(name: str, value) -> np.ndarray:
    """``value`` as a float64 array; ValueError naming the field when it is not numeric."""
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError):  # ragged nested lists
        raw = np.asarray(None)
    if raw.dtype.kind not in "biuf":  # strings, complex numbers, objects (booleans count as 0 / 1)
        raise ValueError(f"{name} must be a real-valued numeric array; got dtype {raw.dtype}")
    return raw.astype(np.float64)


def check_problem(problem: Problem) -> Problem:
    """Validate shapes and finiteness; raise ValueError naming the field."""
    if not isinstance(problem, Problem):
        raise ValueError(f"problem must be a sketchbo Problem (see sketchbo.problems.make_problem); "
                         f"got {type(problem).__name__}")
    arms, f = _numeric("problem.arms", problem.arms), _numeric("problem.f", problem.f)
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
    noise = problem.noise_std
    if noise is not None and (isinstance(noise, (bool, np.bool_)) or not isinstance(noise, (int, float, np.number))
                              or not (np.isfinite(noise) and noise >= 0)):
        raise ValueError(f"problem.noise_std={problem.noise_std!r}; it must be finite and >= 0 (or None)")
    return problem._replace(arms=arms, f=f)
