"""The result of a run (both domains)."""
from __future__ import annotations

import time
from typing import NamedTuple

import jax
import numpy as np


class RunResult(NamedTuple):
    """What [`sketchbo.run`][sketchbo.engine.run.run] returns: per-seed traces and summaries of one algorithm on one
    problem.

    Regret exists only where the benchmark knows its optimum: on a user's objective without one, ``cumulative_regret``
    and ``regret_ratio`` are None and the traces hold no ``instant_regret``. The arrays with a leading `n_seeds` axis
    hold one row per seed, in the order of ``seeds``.

    Attributes:
        algorithm: the algorithm's name.
        problem: the problem's name.
        T: evaluations per seed.
        n_seeds: the number of seeds run in the program.
        seeds: the seeds, ``[seed, seed + 1, ...]``.
        traces: per-step traces, each `(n_seeds, T)`: ``query`` (the arm index; on a box the row of the sample buffer),
            ``reward``, ``batch_index``, ``dict_size``, ``instant_regret`` (where the optimum is known);
            ``loop_iterations`` on finite arm sets; ``x`` `(n_seeds, T, d)`, ``ucb`` and ``on_face`` on boxes (the query
            has a coordinate on a face of the unit cube, [`on_face`][sketchbo.domains.box.on_face]); ``info_<name>`` for
            the other number fields of an algorithm's step info ([`own_fields`][sketchbo.contract.own_fields]).
        round_time_s: `(n_rounds,)` wall time of each round (all seeds together; a chunk's time is split evenly over its
            rounds).
        cumulative_regret: `(n_seeds,)` the cumulative regret $R_T = \\sum_{t \\le T} (f^\\star - f(x_t))$; None when
            the optimum is unknown.
        regret_ratio: `(n_seeds,)` $R_T / R_T^{\\mathrm{unif}}$, where $R_T^{\\mathrm{unif}}$ is T times the mean regret
            of a uniformly random query; None when the optimum is unknown.
        n_batches: `(n_seeds,)` int, batches (rounds) of each seed.
        max_batch_size: `(n_seeds,)` int, the longest batch of each seed.
        max_dict_size: `(n_seeds,)` int, the largest model (dictionary, posterior, subset) of each seed.
        wall_time_s: the whole run's wall time in seconds, compilation included.
        compile_time_s: seconds spent compiling the programs.
        device: the device the run ran on, ``"<platform>:<kind>"`` (e.g. ``"cpu:cpu"``).
        dtype: ``"float64"`` or ``"float32"``.
        capacity_events: messages about capacity growth (dictionary, pulled arms, sample buffer).
        hyperparameters: the resolved hyperparameters (the defaults completed by the user's values).
        best_reward: `(n_seeds,)` the best observed reward of each seed.
        best_point: `(n_seeds, d)` the point where it was observed (on a box: in the box's coordinates).
        certificates: per-seed theory certificates of a finite-arm run
            ([`certificates.of_run`][sketchbo.certificates.of_run]; the CLI's jobs add them); None otherwise.
        seed_axis: how the elements (grid points × seeds) ran, which the round times cover ([`spec_layout`][]):
            ``"map"`` (each device's elements one after another) or ``"vmap"`` (together); None: unknown.
        n_devices: the devices the elements were sharded over; None: unknown.
        elements_per_device: the elements in each device's program (its padded share); None: unknown.
    """

    algorithm: str
    problem: str
    T: int
    n_seeds: int
    seeds: list
    traces: dict
    round_time_s: np.ndarray
    cumulative_regret: np.ndarray | None
    regret_ratio: np.ndarray | None
    n_batches: np.ndarray
    max_batch_size: np.ndarray
    max_dict_size: np.ndarray
    wall_time_s: float
    compile_time_s: float
    device: str
    dtype: str
    capacity_events: list
    hyperparameters: dict
    best_reward: np.ndarray
    best_point: np.ndarray
    certificates: list | None = None
    seed_axis: str | None = None
    n_devices: int | None = None
    elements_per_device: int | None = None


def spec_layout(spec) -> dict:
    """The ``RunResult`` fields that say how a run's elements (grid points × seeds of a ``RunSpec``) ran: each of
    ``spec.n_devices`` devices holds ceil(elements / devices) of them (padded), one after another when
    ``spec.seed_axis == "map"``, together when ``"vmap"``."""
    n_elements = len(spec.points) * len(spec.seeds)
    return {"seed_axis": spec.seed_axis, "n_devices": int(spec.n_devices),
            "elements_per_device": -(-n_elements // spec.n_devices)}


def seed_time_factor(seed_axis: str | None, elements_per_device: int | None) -> float:
    """Factor from a run's round times (all its elements together) to one element's: 1 / ``elements_per_device``
    where each device ran its elements one after another (``seed_axis`` "map"), else 1 ("vmap": together).
    ``RunResult`` and ``summary.json`` both record the two."""
    return 1.0 / int(elements_per_device) if seed_axis == "map" else 1.0


def result(algorithm, problem_name, T, seeds, traces: dict, rounds, uniform_regret: float | None, driven, wall0,
           dtype, hyperparameters, best_point, run_layout: dict) -> RunResult:
    """RunResult of per-seed ``traces`` (``reward``, ``batch_index``, ``dict_size`` and, when the optimum is known,
    ``instant_regret``), ``rounds`` (n_seeds,), the mean instant regret of a uniformly random query (None: the optimum
    is unknown), the host loop's ``driven`` bookkeeping (times, compilation, capacity events), the best observed points
    (n_seeds, d) and the elements' ``run_layout`` ([`spec_layout`][])."""
    if uniform_regret is None:
        cum = ratio = None
    else:
        cum = traces["instant_regret"].sum(axis=1)
        unif = T * uniform_regret
        ratio = cum / unif if unif > 0 else np.full_like(cum, np.nan)
    dev = jax.devices()[0]
    return RunResult(
        algorithm=algorithm, problem=problem_name, T=T, n_seeds=len(seeds), seeds=list(seeds), traces=traces,
        round_time_s=driven.round_times, cumulative_regret=cum, regret_ratio=ratio,
        n_batches=np.asarray(rounds).astype(int),
        max_batch_size=np.array([np.bincount(b).max() for b in traces["batch_index"]]),
        max_dict_size=traces["dict_size"].max(axis=1).astype(int),
        wall_time_s=time.perf_counter() - wall0, compile_time_s=driven.compile_s,
        device=f"{dev.platform}:{getattr(dev, 'device_kind', '')}", dtype=dtype,
        capacity_events=list(driven.events), hyperparameters=hyperparameters,
        best_reward=np.max(traces["reward"], axis=1), best_point=np.asarray(best_point, np.float64),
        **run_layout)
