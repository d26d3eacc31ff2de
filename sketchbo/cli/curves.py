"""Per-step curves of a result, arrays of shape (n_seeds, T) at steps t = 1..T (or a regret record's steps): R_t,
R_t / R_t^unif, batch and dictionary sizes, the time up to t; and the helpers that summarise and thin them for a
figure. [`sketchbo.cli.plots`][sketchbo.cli.plots] re-exports every name, as the plot scripts read them there.
"""
from __future__ import annotations

import numpy as np

from sketchbo.cli.results import RecordedResult, Result, recorded
from sketchbo.engine.result import seed_time_factor

MAX_POINTS = 1500  # points drawn per curve (evenly spaced steps); keeps the PDFs small at T = 10^4


def steps(result: Result) -> np.ndarray:
    """t = 1..T; of a regret record's result, the steps it recorded."""
    if isinstance(result, RecordedResult):
        return result.t
    return np.arange(1, result.T + 1)


def cumulative_regret(result: Result) -> np.ndarray:
    """R_t per seed, (n_seeds, T); of a regret record's result, at its recorded steps (`steps`)."""
    if isinstance(result, RecordedResult):
        return result.regret
    return np.cumsum(np.asarray(result.traces["instant_regret"], dtype=np.float64), axis=1)


def uniform_gap(result: Result) -> float:
    """f* − mean f, recovered from ``summary.json`` as R_T / (T · R_T/R_T^unif) (NaN if every R_T is 0)."""
    regret = np.asarray(result.summary["cumulative_regret"], dtype=np.float64)
    ratio = np.asarray(result.summary["regret_ratio"], dtype=np.float64)
    ok = np.isfinite(ratio) & (ratio > 0) & np.isfinite(regret)
    if not np.any(ok):
        return float("nan")
    return float(np.median(regret[ok] / (result.T * ratio[ok])))


def regret_ratio(result: Result) -> np.ndarray:
    """R_t / R_t^unif per seed, (n_seeds, T), with R_t^unif = t · (f* − mean f)."""
    return cumulative_regret(result) / (steps(result) * uniform_gap(result))[None, :]


@recorded
def batch_size(result: Result) -> np.ndarray:
    """Size of the batch containing step t, per seed, (n_seeds, T)."""
    batch = np.asarray(result.traces["batch_index"]).astype(np.int64)
    out = np.empty(batch.shape, dtype=np.int64)
    for i, row in enumerate(batch):
        out[i] = np.bincount(row, minlength=int(row.max()) + 1)[row]
    return out


@recorded
def dict_size(result: Result) -> np.ndarray:
    """Dictionary size used by the selection at step t, per seed, (n_seeds, T)."""
    return np.asarray(result.traces["dict_size"]).astype(np.int64)


def seeds_sequential(result: Result) -> bool:
    """Whether the job's seeds ran one after another (``lax.map``: seed_axis=map, or auto on a CPU)."""
    axis = result.summary.get("seed_axis") or str((result.summary.get("config") or {}).get("seed_axis", "auto"))
    if axis == "auto":  # a summary written before 2026-11-27 records the config's value only
        return str(result.summary.get("device", "cpu")).lower().startswith("cpu")
    return axis != "vmap"


def time_scale(result: Result) -> float:
    """Factor from the job's round times (all seeds) to one seed's: when the seeds ran in sequence, 1 over the
    number each device ran one after another (``elements_per_device`` of ``summary.json``: the devices ran
    their shares side by side; a summary without it is of one device holding every seed)."""
    return seed_time_factor("map" if seeds_sequential(result) else "vmap",
                            result.summary.get("elements_per_device", result.n_seeds))


@recorded
def cumulative_time(result: Result) -> np.ndarray:
    """Wall time (s) spent up to step t, per seed, (n_seeds, T); compilation excluded.

    ``traces.npz`` has the wall time of each round (``round_time_s``, for all seeds of the job
    together: the host loop times a chunk of rounds and splits it evenly over them), not of each
    seed. Step t of seed i lies in round ``batch_index[i, t]``, so the time up to t is the sum of the
    round times of the rounds ≤ that round. When the seeds ran one after another (``lax.map``, the
    default on CPU) a round's time is the sum over the seeds each device ran, and it is divided by their
    number (`time_scale`): the curve is the time of one seed, as in the papers' plots. With ``vmap``
    (seeds together, on accelerators) it is the time of the whole job. The spread over seeds only comes from their different batch schedules.
    """
    if result.parts:  # joined seed slices: each part's own rounds
        return np.concatenate([cumulative_time(p) for p in result.parts])
    rounds = np.cumsum(np.asarray(result.traces["round_time_s"], dtype=np.float64)) * time_scale(result)
    batch = np.asarray(result.traces["batch_index"]).astype(np.int64)
    if rounds.size == 0:
        return np.zeros(batch.shape)
    return rounds[np.minimum(batch, rounds.size - 1)]


def time_up_to(result: Result, t: int) -> float:
    """One seed's wall time (s) up to step t, mean over seeds (`cumulative_time`); compilation excluded. Of a regret
    record's result, t must be one of its recorded steps (`steps`).

    Raises:
        ValueError: t is not a step of ``result``.
    """
    at = np.flatnonzero(steps(result) == t)
    if at.size == 0:
        raise ValueError(f"t = {t} is not a step of {result.algorithm} on {result.problem} (T = {result.T}"
                         f"{', a regret record keeps only its recorded steps' if isinstance(result, RecordedResult) else ''})")
    return float(np.mean(cumulative_time(result)[:, at[0]]))


def run_time(result: Result) -> float:
    """Wall time (s) of the whole run for one seed (see `cumulative_time`); compilation excluded. Of
    joined seed slices: the parts' times weighted by their seed counts. A regret record's result: the time
    recorded with it."""
    if isinstance(result, RecordedResult):
        return float(result.summary["exec_s_per_seed"])
    if result.parts:
        return sum(p.n_seeds * run_time(p) for p in result.parts) / result.n_seeds
    return float(np.sum(np.asarray(result.traces["round_time_s"], dtype=np.float64)) * time_scale(result))


def number(v: float) -> str:
    """195, 84.1, 0.0642, 2.885e8 (for tables): whole numbers up to 10^5, four digits beyond, three below 100."""
    if abs(v) >= 1e5:
        mantissa, exponent = f"{v:.3e}".split("e")
        return f"{mantissa}e{int(exponent)}"
    return f"{v:.0f}" if abs(v) >= 100 else f"{v:.3g}"


def mean_std(curves: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and (population) standard deviation over seeds (axis 0)."""
    curves = np.asarray(curves, dtype=np.float64)
    return curves.mean(axis=0), curves.std(axis=0)


def thin(n: int, max_points: int = MAX_POINTS) -> np.ndarray:
    """At most ``max_points`` evenly spaced indices of 0..n-1, the first and the last included."""
    if n <= max_points:
        return np.arange(n)
    return np.unique(np.linspace(0, n - 1, max_points).round().astype(np.int64))


__all__ = ["batch_size", "cumulative_regret", "cumulative_time", "dict_size", "mean_std", "number", "regret_ratio", "run_time", "seeds_sequential", "steps", "thin", "time_scale", "time_up_to", "uniform_gap"]
