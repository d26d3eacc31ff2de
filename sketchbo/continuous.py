"""The runner for continuous domains: many seeds of a GSSBO-family algorithm in one compiled program.

Paper: GSSBO (Wei et al. 2025, Alg. 1 and §6). Algorithms: ``sketchbo.algorithms.BO_ALGORITHMS``
(``subset_bo.py``); problems: ``sketchbo.problems.continuous`` (and the diabetes task).

The structure is the finite-arm runner's (DESIGN §3), whose helpers it reuses: a round = the selections of
one batch (inner ``while_loop``; each query evaluated by the problem's JAX function as it is selected), the
feedback of the batch (``update``) and one ``resparsify`` (subset choice, hyperparameter fit, acquisition).
Seeds run through ``vmap`` or a sequential ``lax.map`` (``runner._over_seeds``; the CPU default is the map),
seed i uses ``jax.random.key(seed + i)`` with draws keyed by the step, so a seed's trajectory does not depend
on the seeds beside it. A host loop calls jitted chunks of rounds (progress, per-round times).

Capacity: the sample buffer D has a static capacity that starts small and grows by about 1.5x when a seed
needs more rows (DESIGN §3: capacities track the actual sizes; padded rows cost real time in an O(n^3)
factorisation). Growing pads the state and recompiles; the trajectory is unchanged (a test).

Checkpoints (``checkpoint=path, checkpoint_every=k``) work as in the finite runner and share its writer
and reader (``runner.save_checkpoint``, ``runner.load_checkpoint``): after the first chunk that ends k or
more rounds after the last write, the carry, the buffer capacity, the per-round times and the capacity
events are written atomically; a run of the same identity (algorithm, problem incl. a fingerprint of its
objective, hyperparameters, T, seeds, dtype, seed axis, chunk length, first capacity, jax version) resumes
there and ends with the uninterrupted run's traces bit for bit; another run's checkpoint is ignored with a
message naming what differs.
"""
from __future__ import annotations

import math
import time
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from sketchbo import acquisition, runner, tracking
from sketchbo.algorithms import BO_ALGORITHMS, BOParams, BOStatic, build_bo
from sketchbo.algorithms.subset_bo import VARIANTS, dynamic_buffer_size, grow
from sketchbo.problems.continuous import ContinuousProblem, estimate_uniform_mean, value
from sketchbo.runner import (
    RunResult, SeedKeys, _check_run_args, _default_seed_axis, _over_seeds, _Progress, check_checkpoint, check_float,
    check_int, compiled_program, invalid_value, seed_keys, with_defaults,
)


class BOTraces(NamedTuple):
    """Per-seed run buffers carried through the rounds."""

    x: jax.Array  # (T, d) query of each step in [0, 1]^d
    reward: jax.Array  # (T,) observed reward -f(x) + xi N(0, 1)
    regret: jax.Array  # (T,) f(x) - f_min (noiseless)
    row: jax.Array  # (T,) int32 row of D the query went into
    batch_index: jax.Array  # (T,) int32 round of each step
    dict_size: jax.Array  # (T,) int32 rows of the model used to choose the query
    rounds: jax.Array  # () int32 rounds executed


# ----------------------------------------------------------------------------------- validation

_INTS = {"n0": 1, "fit_steps": 0, "n_uniform": 1, "n_local": 0, "n_starts": 1, "acq_steps": 0, "m": 1}
_FLOATS = {
    "beta_c": (lambda v: v >= 0, "it must be a finite number >= 0"),
    "lr_fit": (lambda v: v > 0, "it must be a finite number > 0"),
    "lr_acq": (lambda v: v > 0, "it must be a finite number > 0"),
    "local_scale": (lambda v: v >= 0, "it must be a finite number >= 0"),
    "Z": (lambda v: v > 1, "it must be a finite number > 1"),
    "n_overhead": (lambda v: v >= 0, "it must be a finite number >= 0"),
    "sigma_d2": (lambda v: v >= 0, "it must be a finite number >= 0"),
    "C": (lambda v: v >= 1, "it must be a finite number >= 1"),
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


# ------------------------------------------------------------------------------------- the program

def make_program(alg, problem: ContinuousProblem, static: BOStatic, seed_axis: str, rounds_per_call: int):
    """(init_fn, chunk_fn) jitted over stacked seeds: keys and params carry one leading entry per seed."""
    T, n0, cap = static.T, static.n0, static.cap

    def f(u):
        return value(problem, u)

    def select_step(carry, keys: SeedKeys, params, noise, xi):
        state, tr = carry
        t = state.t
        x, state, info = alg.select(jax.random.fold_in(keys.select, t), state, params)
        fx = f(x)
        tr = tr._replace(
            x=tr.x.at[t].set(x), reward=tr.reward.at[t].set(-fx + xi * noise[t]),
            regret=tr.regret.at[t].set(fx - problem.f_min), batch_index=tr.batch_index.at[t].set(tr.rounds),
            dict_size=tr.dict_size.at[t].set(info["dict_size"]))
        return state, tr

    def round_(carry, keys, params, noise, xi):
        state, tr = carry
        t0, n_before = state.t, state.data.n
        state, tr = jax.lax.while_loop(lambda c: c[0].batch_open & (c[0].t < T),
                                       lambda c: select_step(c, keys, params, noise, xi), (state, tr))
        pos = jnp.arange(T)
        valid = (pos >= t0) & (pos < state.t) & jnp.isfinite(tr.reward)  # a NaN/inf of f never reaches the GP
        state, _ = alg.update(state, tr.x, tr.reward, valid, params)
        rows = jnp.where(valid, n_before + jnp.cumsum(valid) - 1, tr.row)
        if VARIANTS[static.variant][2]:  # merged repeats: every evaluation of the batch in one row
            rows = jnp.where(valid & (pos >= n0), n_before, rows)
        state, _ = alg.resparsify(jax.random.fold_in(keys.resparsify, state.t), state, params)
        return state, tr._replace(row=rows.astype(jnp.int32), rounds=tr.rounds + 1)

    def maybe_round(carry, keys, params, noise, xi):
        state = carry[0]
        need = jnp.where(state.t == 0, n0, 1)
        go = (state.t < T) & (state.data.n + need <= cap)
        return jax.lax.cond(go, lambda c: round_(c, keys, params, noise, xi), lambda c: c, carry)

    def init_one(keys: SeedKeys, params, xi):
        state = alg.init(keys.init, None, params)
        dt = params.beta_c.dtype
        noise = jax.random.normal(keys.noise, (T,), dtype=dt)
        tr = BOTraces(x=jnp.zeros((T, static.d), dt), reward=jnp.zeros((T,), dt), regret=jnp.zeros((T,), dt),
                      row=-jnp.ones((T,), jnp.int32), batch_index=jnp.zeros((T,), jnp.int32),
                      dict_size=jnp.zeros((T,), jnp.int32), rounds=jnp.zeros((), jnp.int32))
        return (state, tr), noise

    def chunk_one(keys, carry, noise, params, xi):
        return jax.lax.fori_loop(0, rounds_per_call, lambda _, c: maybe_round(c, keys, params, noise, xi), carry)

    init_all = _over_seeds(init_one, seed_axis)
    chunk_all = _over_seeds(chunk_one, seed_axis)
    return jax.jit(init_all), jax.jit(chunk_all, donate_argnums=(1,))


def _compiled(algorithm, problem, static, seed_axis, rounds_per_call, keys, params, xi):
    key = ("continuous", algorithm, problem.name, problem.d, problem.fn, static, seed_axis, rounds_per_call,
           keys.init.shape, str(params.beta_c.dtype))
    return compiled_program(key, lambda: make_program(build_bo(BO_ALGORITHMS[algorithm], static), problem, static,
                                                      seed_axis, rounds_per_call),
                            (keys, params, xi), (params, xi))


CHECKPOINT_FORMAT = "sketchbo.continuous.checkpoint/1"  # tag of the identity stored in every checkpoint
FINGERPRINT_POINTS = 3  # objective values at fixed points of the cube, stored in a checkpoint's identity


def objective_fingerprint(problem: ContinuousProblem) -> list[float]:
    """f at FINGERPRINT_POINTS fixed interior points of [0, 1]^d (float64): two problems with the same
    name but another objective (a custom one, other data) do not share checkpoints."""
    u = (np.arange(1, FINGERPRINT_POINTS + 1)[:, None] * (0.5 + np.arange(problem.d)) / (problem.d + 1)) % 1.0
    return [float(v) for v in jax.jit(jax.vmap(lambda x: value(problem, x)))(jnp.asarray(u, jnp.float64))]


def run_identity(algorithm, problem, T, seeds, hyper, dtype, seed_axis, rounds_per_call, first_cap) -> dict:
    """Everything a continuous run's trajectories depend on, as plain JSON (``runner.run_identity``'s
    counterpart); the capacity a checkpoint was made at is stored beside it."""
    identity = {
        "format": CHECKPOINT_FORMAT, "jax": jax.__version__, "algorithm": algorithm,
        "problem": {"name": problem.name, "d": problem.d, "lower": problem.lower, "upper": problem.upper,
                    "f_min": problem.f_min, "noise_std": problem.noise_std,
                    "objective": getattr(problem.fn, "__qualname__", type(problem.fn).__name__),
                    "fingerprint": objective_fingerprint(problem)},
        "hyperparameters": hyper, "T": T, "seeds": seeds, "dtype": dtype, "seed_axis": seed_axis,
        "rounds_per_call": rounds_per_call, "first_capacity": first_cap,
    }
    return tracking.plain(identity)


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


def _grown(carry, static: BOStatic, cap: int):
    state, tr = carry
    return grow(state, static, cap), tr


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
    resume a run of the same identity from it (module docstring); the file is left in place at the end.
    """
    wall0 = time.perf_counter()
    if not isinstance(problem, ContinuousProblem):
        raise ValueError(f"algorithm {algorithm!r} optimises continuous problems (sketchbo.problems: "
                         f"eggholder2, hartmann6, levy20, powell50, rastrigin100, diabetes); got a "
                         f"{type(problem).__name__}")
    T, n_seeds, seed = _check_run_args(T, n_seeds, seed, dtype, seed_axis, rounds_per_call)
    hyper = resolve_hyperparameters(algorithm, params, T)
    ckpt_path, ckpt_every = check_checkpoint(checkpoint, checkpoint_every)
    cap = initial_capacity(T, hyper["n0"]) if capacity is None else check_int("capacity", capacity, hyper["n0"])
    cap = min(cap, T)
    if dtype == "float64":
        jax.config.update("jax_enable_x64", True)  # entry point: float64 on by default (DESIGN §4)
    jdt = jnp.float64 if dtype == "float64" else jnp.float32
    seed_axis = _default_seed_axis() if seed_axis == "auto" else seed_axis
    rounds_per_call = rounds_per_call or max(1, min(16, T // 50))
    M = model_rows(algorithm, hyper, T)
    acq_static = acquisition.AcqStatic(hyper["n_uniform"], hyper["n_local"], hyper["n_starts"], hyper["acq_steps"])

    def per_seed(v):
        return jnp.full((n_seeds,), v, jdt)

    pvals = BOParams(beta_c=per_seed(hyper["beta_c"]), sigma_d2=per_seed(hyper.get("sigma_d2", 0.0)),
                     C=per_seed(hyper.get("C", 1.0)), lr_fit=per_seed(hyper["lr_fit"]),
                     lr_acq=per_seed(hyper["lr_acq"]), local_scale=per_seed(hyper["local_scale"]))
    xi = per_seed(problem.noise_std)
    seeds = [seed + i for i in range(n_seeds)]
    keys = jax.tree.map(lambda *k: jnp.stack(k), *[seed_keys(s) for s in seeds])
    label = f"{algorithm}/{problem.name}"
    prog = _Progress(progress, label, T)
    compile_s, round_times, events = 0.0, [], []
    carry, noise, static, saved = None, None, None, None
    if ckpt_path is not None:
        identity = run_identity(algorithm, problem, T, seeds, hyper, dtype, seed_axis, rounds_per_call, cap)
        saved = runner.load_checkpoint(ckpt_path, identity, label)
        if saved is not None:  # go on at the capacity (with the events and round times) of the checkpoint
            cap, events, round_times = saved.capacities["cap"], list(saved.events), list(saved.round_times)
    last_write = len(round_times)
    while True:
        new_static = BOStatic(variant=algorithm, d=problem.d, T=T, cap=cap, n0=hyper["n0"], M=M,
                              fit_steps=hyper["fit_steps"], acq=acq_static,
                              selection=hyper.get("selection", "gradient"), keep_best=hyper.get("keep_best", False))
        init_c, chunk_c, cs = _compiled(algorithm, problem, new_static, seed_axis, rounds_per_call, keys, pvals, xi)
        compile_s += cs
        if carry is None:
            carry, noise = init_c(keys, pvals, xi)  # the noise derives from the keys: recomputed, not stored
            if saved is not None:
                carry = runner.restored(saved, carry)
                runner.say_resuming(label, saved, int(np.min(carry[0].t)), T, int(np.max(carry[1].rounds)))
            prog.restart()
        else:
            carry = _grown(carry, static, cap)
        static = new_static
        done = False
        while True:
            rounds_before = int(np.max(np.asarray(carry[1].rounds)))
            t_call = time.perf_counter()
            carry = chunk_c(keys, carry, noise, pvals, xi)
            state, tr = carry
            t_all = np.asarray(state.t)  # blocks until the chunk is done
            dt = time.perf_counter() - t_call
            rounds = int(np.max(np.asarray(tr.rounds)))
            if rounds > rounds_before:
                round_times.extend([dt / (rounds - rounds_before)] * (rounds - rounds_before))
            prog(int(t_all.min()), rounds)
            check_feedback(problem, carry, seeds)
            if int(t_all.min()) >= T:
                prog(int(t_all.min()), rounds, final=True)
                done = True
                break
            need = np.where(t_all == 0, hyper["n0"], 1)
            if np.any((t_all < T) & (np.asarray(state.data.n) + need > cap)):
                break
            if ckpt_path is not None and rounds - last_write >= ckpt_every:
                runner.save_checkpoint(ckpt_path, identity, {"cap": cap}, events, rounds, round_times, carry)
                last_write = rounds
        if done:
            break
        new_cap = next_capacity(cap, T)
        events.append(f"sample buffer capacity {cap} -> {new_cap}")
        cap = new_cap
    return _collect(algorithm, problem, T, seeds, carry, np.asarray(round_times), wall0, compile_s, dtype, events,
                    {**hyper, "capacity_final": cap, "M_static": M, "xi": problem.noise_std})


def _collect(algorithm, problem, T, seeds, carry, round_times, wall0, compile_s, dtype, events, hyper):
    state, tr = carry
    regret = np.asarray(tr.regret, dtype=np.float64)
    cum = regret.sum(axis=1)
    mean_f = problem.uniform_mean if problem.uniform_mean is not None else estimate_uniform_mean(problem)
    unif = T * (mean_f - problem.f_min)
    batch_index = np.asarray(tr.batch_index)
    dev = jax.devices()[0]
    return RunResult(
        algorithm=algorithm, problem=problem.name, T=T, n_seeds=len(seeds), seeds=list(seeds),
        traces={"query": np.asarray(tr.row), "reward": np.asarray(tr.reward), "instant_regret": regret,
                "batch_index": batch_index, "dict_size": np.asarray(tr.dict_size), "x": np.asarray(tr.x)},
        round_time_s=round_times, cumulative_regret=cum, regret_ratio=cum / unif if unif > 0 else np.full_like(cum, np.nan),
        n_batches=np.asarray(tr.rounds).astype(int),
        max_batch_size=np.array([np.bincount(b).max() for b in batch_index]),
        max_dict_size=np.asarray(tr.dict_size).max(axis=1).astype(int),
        wall_time_s=time.perf_counter() - wall0, compile_time_s=compile_s,
        device=f"{dev.platform}:{getattr(dev, 'device_kind', '')}", dtype=dtype, capacity_events=events,
        hyperparameters={**hyper, "uniform_mean": mean_f})


__all__ = ["BOTraces", "resolve_hyperparameters", "model_rows", "initial_capacity", "next_capacity", "make_program",
           "run"]
