"""The result of a run (both domains)."""
from __future__ import annotations

import time
from typing import NamedTuple

import jax
import numpy as np


class RunResult(NamedTuple):
    algorithm: str
    problem: str
    T: int
    n_seeds: int
    seeds: list
    traces: dict  # query, reward, instant_regret, batch_index, dict_size (loop_iterations: finite arms): (n_seeds, T)
    round_time_s: np.ndarray  # (n_rounds,) wall time of each round (all seeds), chunk time split evenly
    cumulative_regret: np.ndarray  # (n_seeds,)
    regret_ratio: np.ndarray  # (n_seeds,) R_T / (T (mean regret of a uniformly random query))
    n_batches: np.ndarray  # (n_seeds,) int
    max_batch_size: np.ndarray  # (n_seeds,) int
    max_dict_size: np.ndarray  # (n_seeds,) int
    wall_time_s: float  # whole run, compilation included
    compile_time_s: float
    device: str
    dtype: str
    capacity_events: list  # messages about capacity growth
    hyperparameters: dict  # the resolved hyperparameters


def result(algorithm, problem_name, T, seeds, traces: dict, rounds, uniform_regret: float, driven, wall0, dtype,
           hyperparameters) -> RunResult:
    """RunResult of per-seed ``traces`` (``instant_regret``, ``batch_index``, ``dict_size`` among them) and
    ``rounds`` (n_seeds,), the mean instant regret of a uniformly random query and the host loop's
    ``driven`` bookkeeping (times, compilation, capacity events)."""
    cum = traces["instant_regret"].sum(axis=1)
    unif = T * uniform_regret
    dev = jax.devices()[0]
    return RunResult(
        algorithm=algorithm, problem=problem_name, T=T, n_seeds=len(seeds), seeds=list(seeds), traces=traces,
        round_time_s=driven.round_times, cumulative_regret=cum,
        regret_ratio=cum / unif if unif > 0 else np.full_like(cum, np.nan),
        n_batches=np.asarray(rounds).astype(int),
        max_batch_size=np.array([np.bincount(b).max() for b in traces["batch_index"]]),
        max_dict_size=traces["dict_size"].max(axis=1).astype(int),
        wall_time_s=time.perf_counter() - wall0, compile_time_s=driven.compile_s,
        device=f"{dev.platform}:{getattr(dev, 'device_kind', '')}", dtype=dtype,
        capacity_events=list(driven.events), hyperparameters=hyperparameters)
