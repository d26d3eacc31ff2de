"""The runner for continuous domains: many seeds of a GSSBO-family algorithm in one compiled program.

Paper: GSSBO (Wei et al. 2025, Alg. 1 and §6). Algorithms: ``sketchbo.algorithms.BO_ALGORITHMS``
(``subset_bo.py``); problems: ``sketchbo.problems.continuous`` (and the diabetes task).

This module is the continuous domain of the round engine (``sketchbo.engine``, DESIGN §3a): a round = the
selections of one batch (``runner.select_batch``; each query evaluated by the problem's JAX function as it
is selected), the feedback of the batch (``update``) and one ``resparsify`` (subset choice, hyperparameter
fit, acquisition). The engine runs the seeds (vmap or a sequential map), the host loop, progress,
checkpoints (the identity holds a fingerprint of the objective) and capacity growth.

What is this domain's own: the box (queries in [0, 1]^d, mapped to the problem's bounds by
``problems.continuous.value``), the feedback checks (a NaN/inf from the objective never reaches the GP and
stops the run with an error naming the evaluation), the objective's fingerprint, and the capacity: the
sample buffer D (``cap`` rows) starts small and grows by about 1.5x when a seed's next round would not fit
(DESIGN §3: padded rows cost real time in an O(n^3) factorisation); a seed waits at a full buffer, the
host loop grows it and continues from the last completed chunk.
"""
from __future__ import annotations

import math
import time
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from sketchbo import acquisition
from sketchbo.algorithms import BO_ALGORITHMS, BOParams, BoxSet, BOStatic, Feedback, build_bo
from sketchbo.algorithms.common import present
from sketchbo.algorithms.subset_bo import VARIANTS, dynamic_buffer_size
from sketchbo.engine import checkpoint as ckpt
from sketchbo.engine import host
from sketchbo.engine.program import (
    SeedKeys, chunk_of_rounds, compiled_program, default_seed_axis, over_seeds, padded_into, stacked_keys,
)
from sketchbo.engine.progress import Progress
from sketchbo.engine.result import RunResult, result
from sketchbo.engine.rounds import finish_batch, select_batch
from sketchbo.engine.validate import (
    check_checkpoint, check_float, check_int, check_run_args, invalid_value, with_defaults,
)
from sketchbo.problems.continuous import ContinuousProblem, batch_values, estimate_uniform_mean, value


class BOTraces(NamedTuple):
    """Per-seed run buffers carried through the rounds."""

    x: jax.Array  # (T, d) query of each step in [0, 1]^d
    reward: jax.Array  # (T,) observed reward -f(x) + xi N(0, 1)
    regret: jax.Array  # (T,) f(x) - f_min (noiseless)
    row: jax.Array  # (T,) int32 row of D the query went into
    batch_index: jax.Array  # (T,) int32 round of each step
    dict_size: jax.Array  # (T,) int32 rows of the model used to choose the query
    ucb: jax.Array  # (T,) UCB value of the query under the model that chose it (RoundInfo.ucb); NaN: initial design
    planned_ucb: jax.Array  # () UCB value of the query the last round planned (NaN before the first fit)
    rounds: jax.Array  # () int32 rounds executed


# ----------------------------------------------------------------------------------- validation

_INTS = {"n0": 1, "fit_steps": 0, "n_uniform": 1, "n_local": 0, "n_starts": 1, "acq_steps": 0, "m": 1,
         "features": 1, "ensemble": 1}
_FLOATS = {
    "beta_c": (lambda v: v >= 0, "it must be a finite number >= 0"),
    "lr_fit": (lambda v: v > 0, "it must be a finite number > 0"),
    "lr_acq": (lambda v: v > 0, "it must be a finite number > 0"),
    "local_scale": (lambda v: v >= 0, "it must be a finite number >= 0"),
    "Z": (lambda v: v > 1, "it must be a finite number > 1"),
    "n_overhead": (lambda v: v >= 0, "it must be a finite number >= 0"),
    "sigma_d2": (lambda v: v >= 0, "it must be a finite number >= 0"),
    "C": (lambda v: v >= 1, "it must be a finite number >= 1"),
    "kappa": (lambda v: v >= 0, "it must be a finite number >= 0"),
}


# gssbo's subset rules (PROTOCOLS §9, subset.SELECTIONS): projection (appendix greedy on the gradient vectors),
# pivoted (greedy pivoted Cholesky on K), cosine (Eq. (1) as written); gradient = cosine's deprecated name
_SELECTIONS = ("projection", "pivoted", "cosine", "gradient")


def resolve_hyperparameters(algorithm: str, params: dict | None, T: int) -> dict:
    """Defaults completed by ``params``, every value checked (ValueError naming the parameter), and the
    subset size resolved: ``M_resolved`` (fixed M or the dynamic rule) for the subset variants."""
    if algorithm not in BO_ALGORITHMS:
        raise ValueError(f"algorithm={algorithm!r} is not a continuous-domain algorithm; choose one of "
                         f"{sorted(BO_ALGORITHMS)}")
    hyper = with_defaults(algorithm, BO_ALGORITHMS[algorithm].defaults, params)
    for key, lo in _INTS.items():
        if key in hyper:
            hyper[key] = check_int(f"algorithm.{key}", hyper[key], lo)
    for key, (ok, allowed) in _FLOATS.items():
        if key in hyper:
            hyper[key] = check_float(f"algorithm.{key}", hyper[key], ok, allowed)
    if "selection" in hyper and hyper["selection"] not in _SELECTIONS:
        raise invalid_value("algorithm.selection", hyper["selection"], f"one of {list(_SELECTIONS)}")
    if "keep_best" in hyper and not isinstance(hyper["keep_best"], bool):
        raise invalid_value("algorithm.keep_best", hyper["keep_best"], "true or false")
    if "hidden" in hyper:
        hyper["hidden"] = check_widths("algorithm.hidden", hyper["hidden"])
    if hyper["n0"] > T:
        raise invalid_value("algorithm.n0", hyper["n0"], f"the initial design cannot exceed T={T}")
    if hyper["n_starts"] > hyper["n_uniform"] + hyper["n_local"]:
        raise invalid_value("algorithm.n_starts", hyper["n_starts"],
                            "it must be <= n_uniform + n_local (the candidates it refines)")
    if "M" in hyper:
        if hyper["M"] is None:
            hyper["M_resolved"] = dynamic_buffer_size(hyper["n0"], hyper["Z"], hyper["n_overhead"])
        else:
            hyper["M"] = check_int("algorithm.M", hyper["M"], hyper["n0"] + 1)
            hyper["M_resolved"] = hyper["M"]
    return hyper


def check_widths(name: str, value) -> list:
    """An MLP's hidden widths: a list (or tuple) of ints >= 1, possibly empty; ValueError naming ``name``."""
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise invalid_value(name, value, "a list of hidden-layer widths (ints >= 1), e.g. [32, 32]")
    try:
        return [check_int(name, v, 1) for v in value]
    except ValueError:
        raise invalid_value(name, value, "a list of hidden-layer widths (ints >= 1), e.g. [32, 32]") from None


def model_rows(algorithm: str, hyper: dict, T: int) -> int:
    """Static M of BOStatic: the subset size, the landmark count m, or T (unused: all rows)."""
    if "M_resolved" in hyper:
        return min(hyper["M_resolved"], T)
    return min(hyper.get("m", T), T)


def initial_capacity(T: int, n0: int) -> int:
    """The first capacity of D: all of T for short runs, else 128 rows (at least 2 n0)."""
    return T if T <= 160 else min(T, max(128, 2 * n0))


def next_capacity(cap: int, T: int) -> int:
    """About 1.5x, rounded up to a multiple of 32, at most T."""
    return min(T, 32 * math.ceil(1.5 * cap / 32))



FINGERPRINT_POINTS = 3  # objective values at fixed points of the cube, stored in a checkpoint's identity


def objective_fingerprint(problem: ContinuousProblem) -> list[float]:
    """f at FINGERPRINT_POINTS fixed interior points of [0, 1]^d (float64): two problems with the same
    name but another objective (a custom one, other data) do not share checkpoints."""
    u = (np.arange(1, FINGERPRINT_POINTS + 1)[:, None] * (0.5 + np.arange(problem.d)) / (problem.d + 1)) % 1.0
    return [float(v) for v in batch_values(problem, jnp.asarray(u, jnp.float64))]




def check_feedback(problem: ContinuousProblem, carry, seeds) -> None:
    """Stop the run with a clear error at the first evaluation where the objective returned NaN or inf.
    Such an evaluation was kept out of the GP's data (``round_``'s mask); this checks that too."""
    state, tr = carry
    t = np.asarray(state.t)
    reward = np.asarray(tr.reward)
    done = np.arange(reward.shape[1])[None, :] < t[:, None]
    bad = done & ~np.isfinite(reward)
    if not bad.any():
        return
    s, step = (int(v) for v in np.argwhere(bad)[0])
    x = np.asarray(tr.x)[s, step]
    gp_finite = bool(np.all(np.isfinite(np.asarray(state.data.ysum))))
    assert gp_finite, "a non-finite evaluation reached the GP's data"
    raise ValueError(f"problem {problem.name!r}: the objective returned {reward[s, step] + 0.0} (as reward -f + noise) "
                     f"at x={np.array2string(x, precision=4)} (unit cube; seed {seeds[s]}, evaluation {step}). "
                     "It was kept out of the GP (its data stayed finite); the run stops here and writes no "
                     "results. Make f return finite values on the whole box, e.g. a large penalty for failures")


# ------------------------------------------------------------------------------------- the program

def make_round(alg, problem: ContinuousProblem, static: BOStatic):
    """(round_, active) for one seed on a box: each query is evaluated as it is selected."""
    T, n0, cap = static.T, static.n0, static.cap
    merged = VARIANTS[static.variant][2]  # mini-META: every evaluation of a batch in one row

    def record(acc, t, x, info):
        tr, noise, xi = acc
        fx = value(problem, x)
        tr = tr._replace(
            x=tr.x.at[t].set(x), reward=tr.reward.at[t].set(-fx + xi * noise[t]),
            regret=tr.regret.at[t].set(fx - problem.f_min), batch_index=tr.batch_index.at[t].set(tr.rounds),
            dict_size=tr.dict_size.at[t].set(present(info.dict_size, 0)),
            ucb=tr.ucb.at[t].set(tr.planned_ucb))  # NaN in the design: no model planned it
        return tr, noise, xi

    def round_(carry, keys: SeedKeys, noise, params, xi):
        state, tr = carry
        t0, n_before = state.t, state.data.n
        state, (tr, _, _) = select_batch(alg, keys.select, params, state, (tr, noise, xi), record,
                                         lambda st, _: st.t < T)
        pos = jnp.arange(T)
        valid = (pos >= t0) & (pos < state.t) & jnp.isfinite(tr.reward)  # a NaN/inf of f never reaches the GP
        state, info = finish_batch(alg, keys.resparsify, params, state, Feedback(tr.x, tr.reward, valid))
        tr = tr._replace(planned_ucb=jnp.asarray(present(info.ucb, jnp.nan), tr.ucb.dtype))
        rows = jnp.where(valid, n_before + jnp.cumsum(valid) - 1, tr.row)
        if merged:
            rows = jnp.where(valid & (pos >= n0), n_before, rows)
        return state, tr._replace(row=rows.astype(jnp.int32), rounds=tr.rounds + 1)

    def active(carry):  # a seed whose next round would not fit in D waits for the host loop to grow it
        state = carry[0]
        need = jnp.where(state.t == 0, n0, 1)
        return (state.t < T) & (state.data.n + need <= cap)

    return round_, active


def make_program(alg, problem: ContinuousProblem, static: BOStatic, seed_axis: str, rounds_per_call: int):
    """(init_fn, chunk_fn) jitted over stacked seeds: keys and params carry one leading entry per seed."""
    T = static.T
    round_, active = make_round(alg, problem, static)
    chunk_one = chunk_of_rounds(round_, active, rounds_per_call)

    def init_one(keys: SeedKeys, params, xi):
        dt = params.beta_c.dtype
        state = alg.init(keys.init, BoxSet(jnp.zeros((static.d,), dt), jnp.ones((static.d,), dt)), params)
        noise = jax.random.normal(keys.noise, (T,), dtype=dt)
        tr = BOTraces(x=jnp.zeros((T, static.d), dt), reward=jnp.zeros((T,), dt), regret=jnp.zeros((T,), dt),
                      row=-jnp.ones((T,), jnp.int32), batch_index=jnp.zeros((T,), jnp.int32),
                      dict_size=jnp.zeros((T,), jnp.int32), ucb=jnp.full((T,), jnp.nan, dt),
                      planned_ucb=jnp.full((), jnp.nan, dt), rounds=jnp.zeros((), jnp.int32))
        return (state, tr), noise

    def chunk_all(keys, carry, noise, params, xi):
        return over_seeds(lambda k, c, n, p, x: chunk_one(c, k, n, p, x), seed_axis)(keys, carry, noise, params, xi)

    return jax.jit(over_seeds(init_one, seed_axis)), jax.jit(chunk_all)


# ------------------------------------------------------------------------------------- the domain

class _Setup(NamedTuple):
    """A validated continuous run."""

    algorithm: str
    problem: ContinuousProblem
    T: int
    seeds: list
    hyper: dict
    dtype: str
    seed_axis: str
    rounds_per_call: int
    first_cap: int


def _static(s: _Setup, cap: int) -> BOStatic:
    h = s.hyper
    acq = acquisition.AcqStatic(h["n_uniform"], h["n_local"], h["n_starts"], h["acq_steps"])
    return BOStatic(variant=s.algorithm, d=s.problem.d, T=s.T, cap=cap, n0=h["n0"], M=model_rows(s.algorithm, h, s.T),
                    fit_steps=h["fit_steps"], acq=acq, selection=h.get("selection", "pivoted"),
                    keep_best=h.get("keep_best", False), hidden=tuple(h.get("hidden", ())),
                    features=h.get("features", 0), ensemble=h.get("ensemble", 0))


def _element_args(s: _Setup):
    """(keys, params, xi) stacked over the seeds."""
    jdt = jnp.float64 if s.dtype == "float64" else jnp.float32

    def per_seed(v):
        return jnp.full((len(s.seeds),), v, jdt)

    h = s.hyper
    params = BOParams(beta_c=per_seed(h.get("beta_c", 0.0)), sigma_d2=per_seed(h.get("sigma_d2", 0.0)),
                      C=per_seed(h.get("C", 1.0)), lr_fit=per_seed(h["lr_fit"]), lr_acq=per_seed(h["lr_acq"]),
                      local_scale=per_seed(h["local_scale"]), kappa=per_seed(h.get("kappa", 0.0)))
    return stacked_keys(s.seeds), params, per_seed(s.problem.noise_std)


def _domain(s: _Setup, args) -> host.Domain:
    keys, params, xi = args
    p = s.problem

    def program(capacities):
        static = _static(s, capacities["cap"])
        cache_key = ("continuous", s.algorithm, p.name, p.d, p.fn, static, s.seed_axis, s.rounds_per_call,
                     keys.init.shape, str(params.beta_c.dtype))
        return compiled_program(cache_key, lambda: make_program(build_bo(BO_ALGORITHMS[s.algorithm], static), p,
                                                                static, s.seed_axis, s.rounds_per_call),
                                args, (params, xi))

    def next_caps(carry, capacities):
        state = carry[0]
        t = np.asarray(state.t)
        need = np.where(t == 0, s.hyper["n0"], 1)
        if not np.any((t < s.T) & (np.asarray(state.data.n) + need > capacities["cap"])):
            return None, []
        cap = next_capacity(capacities["cap"], s.T)
        return {"cap": cap}, [f"sample buffer capacity {capacities['cap']} -> {cap}"]

    def grow(carry, template):  # the new rows of D (and, for models on every row, of the subset) are zeros
        return padded_into(carry, jax.tree.map(jnp.zeros_like, template))

    return host.Domain(label=f"{s.algorithm}/{p.name}", T=s.T, program=program, grow=grow,
                       next_capacities=next_caps, check=lambda carry: check_feedback(p, carry, s.seeds), waits=True)


def _identity(s: _Setup) -> dict:
    p = s.problem
    problem = {"name": p.name, "d": p.d, "lower": p.lower, "upper": p.upper, "f_min": p.f_min,
               "noise_std": p.noise_std, "objective": getattr(p.fn, "__qualname__", type(p.fn).__name__),
               "fingerprint": objective_fingerprint(p)}
    return ckpt.run_identity(s.algorithm, problem, s.hyper, T=s.T, seeds=s.seeds, dtype=s.dtype,
                             seed_axis=s.seed_axis, rounds_per_call=s.rounds_per_call, first_capacity=s.first_cap)


def _setup(algorithm, problem, T, n_seeds, seed, params, dtype, seed_axis, rounds_per_call, capacity) -> _Setup:
    if not isinstance(problem, ContinuousProblem):
        raise ValueError(f"algorithm {algorithm!r} optimises continuous problems (sketchbo.problems: "
                         f"eggholder2, hartmann6, levy20, powell50, rastrigin100, diabetes); got a "
                         f"{type(problem).__name__}")
    T, n_seeds, seed = check_run_args(T, n_seeds, seed, dtype, seed_axis, rounds_per_call)
    hyper = resolve_hyperparameters(algorithm, params, T)
    cap = initial_capacity(T, hyper["n0"]) if capacity is None else check_int("capacity", capacity, hyper["n0"])
    if dtype == "float64":
        jax.config.update("jax_enable_x64", True)  # entry point: float64 on by default (DESIGN §4)
    seed_axis = default_seed_axis() if seed_axis == "auto" else seed_axis
    return _Setup(algorithm, problem, T, [seed + i for i in range(n_seeds)], hyper, dtype, seed_axis,
                  rounds_per_call or max(1, min(16, T // 50)), min(cap, T))


def run(algorithm: str, problem: ContinuousProblem, *, T: int, n_seeds: int = 1, seed: int = 0,
        params: dict | None = None, dtype: str = "float64", seed_axis: str = "auto", progress: bool = True,
        rounds_per_call: int | None = None, capacity: int | None = None, checkpoint=None,
        checkpoint_every: int | None = None) -> RunResult:
    """Run ``n_seeds`` seeds (``seed``, ``seed + 1``, ...) of a continuous-domain algorithm for T evaluations.

    Everything is validated before compilation (ValueError naming the parameter). ``params``: the
    algorithm's hyperparameters (``BO_ALGORITHMS[algorithm].defaults``). ``capacity``: the first capacity
    of the sample buffer (default :func:`initial_capacity`); it grows as needed. The result's traces hold
    ``x`` (n_seeds, T, d) besides the finite runner's keys (``query`` = the row of D of each query).
    ``checkpoint`` (a file path) with ``checkpoint_every`` (rounds): save the run's progress there and
    resume a run of the same identity from it (``sketchbo.engine.checkpoint``); the file is left in place.
    """
    wall0 = time.perf_counter()
    s = _setup(algorithm, problem, T, n_seeds, seed, params, dtype, seed_axis, rounds_per_call, capacity)
    ckpt_path, ckpt_every = check_checkpoint(checkpoint, checkpoint_every)
    args = _element_args(s)
    checkpointing = None if ckpt_path is None else host.Checkpointing(ckpt_path, ckpt_every, _identity(s))
    domain = _domain(s, args)
    driven = host.drive(domain, {"cap": s.first_cap}, args, args[1:], Progress(progress, domain.label, s.T),
                        checkpointing)
    return _collect(s, driven, wall0)


def _collect(s: _Setup, driven, wall0) -> RunResult:
    _, tr = driven.carry
    p = s.problem
    mean_f = p.uniform_mean if p.uniform_mean is not None else estimate_uniform_mean(p)
    traces = {"query": np.asarray(tr.row), "reward": np.asarray(tr.reward),
              "instant_regret": np.asarray(tr.regret, dtype=np.float64), "batch_index": np.asarray(tr.batch_index),
              "dict_size": np.asarray(tr.dict_size), "x": np.asarray(tr.x), "ucb": np.asarray(tr.ucb)}
    hyper = {**s.hyper, "capacity_final": driven.capacities["cap"], "M_static": model_rows(s.algorithm, s.hyper, s.T),
             "xi": p.noise_std, "uniform_mean": mean_f}
    return result(s.algorithm, p.name, s.T, s.seeds, traces, np.asarray(tr.rounds), mean_f - p.f_min, driven, wall0,
                  s.dtype, hyper)


__all__ = ["BOTraces", "check_feedback", "initial_capacity", "make_program", "make_round", "model_rows",
           "next_capacity", "objective_fingerprint", "resolve_hyperparameters", "run"]
