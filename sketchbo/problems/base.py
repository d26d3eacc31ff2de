"""The finite-arm problem type shared by every bandit algorithm (BKB / BBKB protocol, docs/protocols.md#finite-arm-protocol)."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np


class Problem(NamedTuple):
    """A finite arm set with a noiseless reward per arm.

    Feedback is ``y = f[i] + noise_std * N(0, 1)``; regret is always measured on the noiseless ``f``.
    ``kernel`` is the problem's default kernel, ``{"name": ..., **hyperparameters}``; a run may override it.

    Recorded noise (tabular benchmarks, ``tabular.py``): ``samples[i, :n_samples[i]]`` are the rewards that
    arm i gave in its recorded repetitions (training seeds) and ``f[i]`` is their mean; the feedback of a
    pull of arm i is then one of them, drawn uniformly, instead of the Gaussian (``noise_std`` stays the xi
    of the confidence widths). Entries of a row from ``n_samples[i]`` on are padding (NaN) and never read.

    ``suggested``: hyperparameters that suit the problem (e.g. ``{"lam": 0.01, "F": 1.0}``), which a run of
    an algorithm that takes them uses unless the user sets them; None: the algorithm's own defaults.

    Attributes:
        name: the problem's key (results, progress, checkpoints).
        arms: `(A, d)` float64, the arms.
        f: `(A,)` float64, the noiseless reward of each arm.
        noise_std: the standard deviation of the Gaussian feedback noise; None: a run uses $\\xi = \\sqrt{\\lambda}$
            (docs/protocols.md#finite-arm-protocol, $\\xi^2 = \\lambda$).
        kernel: the problem's default kernel, ``{"name": ..., **hyperparameters}``.
        samples: `(A, S)` float64, the recorded rewards of each arm, NaN-padded; None: Gaussian feedback.
        n_samples: `(A,)` int64 in $[1, S]$, the number of recorded rewards of each arm (with ``samples``).
        suggested: hyperparameters suited to the problem, e.g. ``{"lam": 0.01, "F": 1.0}``; None: the algorithm's
            defaults.

    Examples:
        Your own finite benchmark: 400 arms of a line, a known reward, Gaussian feedback:

        ```python
        import numpy as np
        import sketchbo as sb

        arms = np.linspace(0, 1, 400)[:, None]
        mine = sb.Problem(name="wave", arms=arms, f=np.sin(12 * arms[:, 0]), noise_std=0.1,
                          kernel={"name": "rbf", "sigma2": 0.01})
        res = sb.run("bbkb", mine, T=50, progress=False)   # regret is measured on f
        ```
    """

    name: str
    arms: np.ndarray
    f: np.ndarray
    noise_std: float | None
    kernel: dict
    samples: np.ndarray | None = None
    n_samples: np.ndarray | None = None
    suggested: dict | None = None


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
    samples, n_samples = check_samples(problem.samples, problem.n_samples, f)
    return problem._replace(arms=arms, f=f, samples=samples, n_samples=n_samples,
                            suggested=check_suggested(problem.suggested))


def check_samples(samples, n_samples, f: np.ndarray):
    """``(samples (A, S) float64, n_samples (A,) int64)`` validated against f, or ``(None, None)``.

    Every recorded entry ``samples[i, :n_samples[i]]`` must be finite and ``f[i]`` their mean (the feedback
    drawn from them is unbiased, so regret on f is the regret of the recorded rewards' expectation).
    """
    if samples is None and n_samples is None:
        return None, None
    if samples is None or n_samples is None:
        raise ValueError("problem.samples and problem.n_samples go together; set both or neither")
    samples = _numeric("problem.samples", samples)
    counts = np.asarray(n_samples)
    A = f.shape[0]
    if samples.ndim != 2 or samples.shape[0] != A or samples.shape[1] < 1:
        raise ValueError(f"problem.samples has shape {samples.shape}; expected ({A}, S) with S >= 1")
    if counts.shape != (A,) or counts.dtype.kind not in "iu":
        raise ValueError(f"problem.n_samples must be ({A},) integers; got shape {counts.shape}, dtype {counts.dtype}")
    if counts.min() < 1 or counts.max() > samples.shape[1]:
        raise ValueError(f"problem.n_samples must lie in [1, {samples.shape[1]}]; got [{counts.min()}, {counts.max()}]")
    recorded = np.arange(samples.shape[1])[None, :] < counts[:, None]  # (A, S)
    if not np.all(np.isfinite(samples[recorded])):
        bad = int(np.argwhere(recorded & ~np.isfinite(samples))[0, 0])
        raise ValueError(f"problem.samples has a NaN or inf recorded reward (first at arm {bad})")
    means = np.where(recorded, samples, 0.0).sum(axis=1) / counts
    scale = max(float(np.max(np.abs(f))), 1.0)
    if not np.allclose(means, f, rtol=0.0, atol=1e-9 * scale):
        bad = int(np.argmax(np.abs(means - f)))
        raise ValueError(f"problem.f[{bad}]={f[bad]!r} is not the mean {means[bad]!r} of its recorded samples")
    return np.where(recorded, samples, np.nan), counts.astype(np.int64)


SUGGESTED_CHECKS = {"lam": (lambda v: v > 0, "> 0"), "F": (lambda v: v >= 0, ">= 0")}


def check_suggested(suggested) -> dict | None:
    """None, or a dict of hyperparameter names to finite floats (``lam`` > 0, ``F`` >= 0)."""
    if suggested is None:
        return None
    if not isinstance(suggested, dict):
        raise ValueError(f"problem.suggested={suggested!r}; it must be a dict such as {{'lam': 0.01, 'F': 1.0}} or None")
    out = {}
    for key, value in suggested.items():
        ok, allowed = SUGGESTED_CHECKS.get(key, (lambda v: True, "finite"))
        if (not isinstance(key, str) or isinstance(value, (bool, np.bool_))
                or not isinstance(value, (int, float, np.number)) or not np.isfinite(value) or not ok(value)):
            raise ValueError(f"problem.suggested[{key!r}]={value!r}; it must be a finite number {allowed}")
        out[key] = float(value)
    return out
