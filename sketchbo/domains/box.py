"""The box domain: a query is a point of a box, evaluated by the problem's JAX objective as it is selected
(docs/architecture.md#domains).

Paper: GSSBO (Wei et al. 2025, Alg. 1 and §6) and its baselines (``sketchbo.algorithms.BO_ALGORITHMS``);
benchmarks: ``sketchbo.problems.continuous`` (and the diabetes task), or a user's ``sketchbo.box_problem``.

A round = the selections of one batch (``engine.rounds.select_batch``), the feedback of the batch
(``update``) and one ``resparsify`` (subset choice, hyperparameter fit, acquisition). What is this domain's
own: the box (queries in [0, 1]^d, mapped to the problem's bounds by ``problems.continuous.value``), the
feedback checks (a NaN/inf from the objective never reaches the GP and stops the run with an error naming
the evaluation), the objective's fingerprint in a checkpoint's identity, and the capacity: the sample buffer
D (``cap`` rows) starts small and grows by about 1.5x when a seed's next round would not fit (padded rows cost
real time in an O(n^3) factorisation: docs/architecture.md#capacity-growth); a seed waits at a full buffer,
the host loop grows it and continues from the last completed chunk. Regret is traced only where the problem
knows its minimum (``f_min``); the objective is called at the T queries and nowhere else (a checkpointed run
adds three calls for its fingerprint; a benchmark without a stored uniform mean adds its Monte-Carlo estimate).
"""
from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from sketchbo import acquisition
from sketchbo.algorithms import BO_ALGORITHMS, GP_CORES, BOParams, BoxSet, BOStatic, Feedback, build_bo
from sketchbo.algorithms.common import present
from sketchbo.algorithms.subset_bo import VARIANTS, dynamic_buffer_size
from sketchbo.engine import checkpoint as ckpt
from sketchbo.engine import host
from sketchbo.engine.domain import Prepared, RunSpec
from sketchbo.engine.program import (
    SeedKeys, chunk_of_rounds, compiled_program, element_seeds, jitted, over_seeds, padded_into, seed_keys,
    stack_elements,
)
from sketchbo.engine.result import RunResult, result, spec_layout
from sketchbo.engine.rounds import finish_batch, select_batch
from sketchbo.engine.validate import check_float, check_int, invalid_value, with_defaults
from sketchbo.gp.hyper import FITS, OUTPUT_WARPS
from sketchbo.problems.continuous import ContinuousProblem, batch_values, estimate_uniform_mean, to_box, value


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


# gssbo's subset rules (docs/protocols.md#gssbo-subset-rules, subset.SELECTIONS): projection (appendix greedy on the gradient vectors),
# pivoted (greedy pivoted Cholesky on K), cosine (Eq. (1) as written); gradient = cosine's deprecated name
_SELECTIONS = ("projection", "pivoted", "cosine", "gradient")


def resolve_hyperparameters(algorithm: str, params: dict | None, T: int) -> dict:
    """Defaults completed by ``params``, every value checked (ValueError naming the parameter), and the
    subset size resolved: ``M_resolved`` (fixed M or the dynamic rule) for the subset variants."""
    if algorithm not in BO_ALGORITHMS:
        raise ValueError(f"algorithm={algorithm!r} is not a continuous-domain algorithm; choose one of "
                         f"{sorted(BO_ALGORITHMS)}")
    hyper = with_defaults(algorithm, BO_ALGORITHMS[algorithm].defaults, params)
    if "gp_core" in hyper:  # the core's values for the keys left at None
        if hyper["gp_core"] not in GP_CORES:
            raise invalid_value("algorithm.gp_core", hyper["gp_core"], f"one of {list(GP_CORES)}")
        hyper.update({k: v for k, v in GP_CORES[hyper["gp_core"]].items() if hyper.get(k) is None})
    for key, lo in _INTS.items():
        if key in hyper:
            hyper[key] = check_int(f"algorithm.{key}", hyper[key], lo)
    for key, (ok, allowed) in _FLOATS.items():
        if key in hyper:
            hyper[key] = check_float(f"algorithm.{key}", hyper[key], ok, allowed)
    if "selection" in hyper and hyper["selection"] not in _SELECTIONS:
        raise invalid_value("algorithm.selection", hyper["selection"], f"one of {list(_SELECTIONS)}")
    if "gp_fit" in hyper and hyper["gp_fit"] not in FITS:
        raise invalid_value("algorithm.gp_fit", hyper["gp_fit"], f"one of {list(FITS)}")
    if "beta_rule" in hyper and hyper["beta_rule"] not in acquisition.BETA_RULES:
        raise invalid_value("algorithm.beta_rule", hyper["beta_rule"], f"one of {list(acquisition.BETA_RULES)}")
    if hyper["acq_method"] not in acquisition.ACQ_METHODS:
        raise invalid_value("algorithm.acq_method", hyper["acq_method"], f"one of {list(acquisition.ACQ_METHODS)}")
    if "output_warp" in hyper and hyper["output_warp"] not in OUTPUT_WARPS:
        raise invalid_value("algorithm.output_warp", hyper["output_warp"], f"one of {list(OUTPUT_WARPS)}")
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
    f_min = 0.0 if problem.f_min is None else problem.f_min  # regret traced only where the minimum is known
    merged = VARIANTS[static.variant][2]  # mini-META: every evaluation of a batch in one row

    def record(acc, t, x, info):
        tr, noise, xi = acc
        fx = value(problem, x)
        tr = tr._replace(
            x=tr.x.at[t].set(x), reward=tr.reward.at[t].set(-fx + xi * noise[t]),
            regret=tr.regret.at[t].set(fx - f_min), batch_index=tr.batch_index.at[t].set(tr.rounds),
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


def make_program(alg, problem: ContinuousProblem, static: BOStatic, seed_axis: str, rounds_per_call: int,
                 n_devices: int = 1):
    """(init_fn, chunk_fn) jitted over stacked elements (``engine.program.jitted``): ``init_fn(seeds, (params,
    xi), ())``, ``chunk_fn(seeds, carry, noise, (params, xi), ())``; each element's keys derive from its seed
    (``engine.program.seed_keys``)."""
    T = static.T
    round_, active = make_round(alg, problem, static)
    chunk_one = chunk_of_rounds(round_, active, rounds_per_call)

    def init_one(keys: SeedKeys, element):
        params, _ = element
        dt = params.beta_c.dtype
        state = alg.init(keys.init, BoxSet(jnp.zeros((static.d,), dt), jnp.ones((static.d,), dt)), params)
        noise = jax.random.normal(keys.noise, (T,), dtype=dt)
        tr = BOTraces(x=jnp.zeros((T, static.d), dt), reward=jnp.zeros((T,), dt), regret=jnp.zeros((T,), dt),
                      row=-jnp.ones((T,), jnp.int32), batch_index=jnp.zeros((T,), jnp.int32),
                      dict_size=jnp.zeros((T,), jnp.int32), ucb=jnp.full((T,), jnp.nan, dt),
                      planned_ucb=jnp.full((), jnp.nan, dt), rounds=jnp.zeros((), jnp.int32))
        return (state, tr), noise

    def init_all(seeds, elements, shared):
        return over_seeds(lambda s, e: init_one(seed_keys(s), e), seed_axis)(seeds, elements)

    def chunk_all(seeds, carry, noise, elements, shared):
        return over_seeds(lambda s, c, n, e: chunk_one(c, seed_keys(s), n, e[0], e[1]), seed_axis)(
            seeds, carry, noise, elements)

    return jitted(init_all, chunk_all, n_devices)


# ------------------------------------------------------------------------------------- the domain

GRID_KEYS = ("beta_c", "sigma_d2", "C", "lr_fit", "lr_acq", "local_scale", "kappa")  # BOParams: grid axes


def check_space(algorithm: str, problem) -> ContinuousProblem:
    """The benchmark of a box-domain run (ValueError when it is not one)."""
    if not isinstance(problem, ContinuousProblem):
        raise ValueError(f"algorithm {algorithm!r} optimises over a box: pass a box problem (sketchbo.make_problem: "
                         "eggholder2, hartmann6, levy20, powell50, rastrigin100, diabetes; or sketchbo.box_problem("
                         f"space, fn) for your own function); got a {type(problem).__name__}")
    return problem


def static_config(algorithm: str, hyper: dict, d: int, T: int, cap: int) -> BOStatic:
    """The static config of a box algorithm with a sample buffer of ``cap`` rows."""
    h = hyper
    acq = acquisition.AcqStatic(h["n_uniform"], h["n_local"], h["n_starts"], h["acq_steps"], h["acq_method"])
    return BOStatic(variant=algorithm, d=d, T=T, cap=cap, n0=h["n0"], M=model_rows(algorithm, h, T),
                    fit_steps=h["fit_steps"], acq=acq, selection=h.get("selection", "pivoted"),
                    keep_best=h.get("keep_best", False), gp_fit=h.get("gp_fit", "adam"),
                    beta_rule=h.get("beta_rule", "protocol"), output_warp=h.get("output_warp", "none"),
                    hidden=tuple(h.get("hidden", ())),
                    features=h.get("features", 0), ensemble=h.get("ensemble", 0))


def point_params(hyper: dict, jdt) -> BOParams:
    """The float hyperparameters of one grid point as 0-d arrays."""
    def scalar(key, default=0.0):
        return jnp.asarray(hyper.get(key, default), jdt)

    return BOParams(beta_c=scalar("beta_c"), sigma_d2=scalar("sigma_d2"), C=scalar("C", 1.0), lr_fit=scalar("lr_fit"),
                    lr_acq=scalar("lr_acq"), local_scale=scalar("local_scale"), kappa=scalar("kappa"))


def needs_room(state, n0: int):
    """Rows the next round of each seed adds to D before its feedback (n0 for the initial design, else 1)."""
    return np.where(np.asarray(state.t) == 0, n0, 1)


def prepare(spec: RunSpec) -> Prepared:
    """The run of ``spec`` on a box problem, ready for the host loop (``engine.domain.Prepared``)."""
    p, T, h0 = spec.problem, spec.T, spec.hypers[0]
    jdt = jnp.float64 if spec.dtype == "float64" else jnp.float32
    cap0 = initial_capacity(T, h0["n0"]) if spec.capacity is None else check_int("capacity", spec.capacity, h0["n0"])
    cap0 = min(cap0, T)
    rounds_per_call = spec.rounds_per_call or max(1, min(16, T // 50))
    seeds = element_seeds(spec.seeds, len(spec.points), spec.n_devices)
    elements = stack_elements([(point_params(h, jdt), jnp.asarray(p.noise_std, jdt)) for h in spec.hypers],
                              len(spec.seeds), spec.n_devices)

    def program(capacities):
        static = static_config(spec.algorithm, h0, p.d, T, capacities["cap"])
        cache_key = ("box", spec.algorithm, p.name, p.d, p.fn, static, spec.seed_axis, rounds_per_call,
                     spec.n_devices, seeds.shape, str(jdt.dtype))
        return compiled_program(cache_key, lambda: make_program(build_bo(BO_ALGORITHMS[spec.algorithm], static), p,
                                                                static, spec.seed_axis, rounds_per_call,
                                                                spec.n_devices),
                                (seeds, elements, ()), (elements, ()), n_devices=spec.n_devices)

    def next_caps(carry, capacities):
        state = carry[0]
        full = (np.asarray(state.t) < T) & (np.asarray(state.data.n) + needs_room(state, h0["n0"]) > capacities["cap"])
        if not np.any(full):
            return None, []
        cap = next_capacity(capacities["cap"], T)
        return {"cap": cap}, [f"sample buffer capacity {capacities['cap']} -> {cap}"]

    def grow(carry, template):  # the new rows of D (and, for models on every row, of the subset) are zeros
        return padded_into(carry, jax.tree.map(jnp.zeros_like, template))

    label = f"{spec.algorithm}/{p.name}" + (f" grid of {len(spec.points)}" if len(spec.points) > 1 else "")
    domain = host.Domain(label=label, T=T, program=program, grow=grow, next_capacities=next_caps,
                         check=lambda carry: check_feedback(p, carry, spec.seeds), waits=True)

    def identity():
        problem = {"name": p.name, "d": p.d, "lower": p.lower, "upper": p.upper, "f_min": p.f_min,
                   "noise_std": p.noise_std, "objective": getattr(p.fn, "__qualname__", type(p.fn).__name__),
                   "fingerprint": objective_fingerprint(p)}
        return ckpt.run_identity(spec.algorithm, problem, spec.hypers, T=T, seeds=spec.seeds, dtype=spec.dtype,
                                 seed_axis=spec.seed_axis, rounds_per_call=rounds_per_call, first_capacity=cap0,
                                 devices=spec.n_devices)

    def collect(g, carry, noise, driven, wall0):
        return _collect(spec, g, carry, driven, wall0)

    return Prepared(domain, {"cap": cap0}, (seeds, elements, ()), (elements, ()), identity, collect)


FACE_TOL = acquisition.FACE_TOL  # a coordinate this close to 0 or 1 (unit-cube coordinates) lies on a face


def on_face(x) -> np.ndarray:
    """(n_seeds, T) bool: the query has a coordinate on a face of the box (within :data:`FACE_TOL`). An
    acquisition maximiser whose queries sit on faces far more often than the objective's optimum does is
    chasing the variance at the box's boundary (docs/reproductions.md#box-gp-core)."""
    return np.asarray(acquisition.on_face(jnp.asarray(x)))


def _collect(spec: RunSpec, g: int, carry, driven, wall0) -> RunResult:
    _, tr = carry
    p = spec.problem
    x = np.asarray(tr.x)
    traces = {"query": np.asarray(tr.row), "reward": np.asarray(tr.reward), "batch_index": np.asarray(tr.batch_index),
              "dict_size": np.asarray(tr.dict_size), "x": x, "ucb": np.asarray(tr.ucb), "on_face": on_face(x)}
    gap = None
    hyper = {**spec.hypers[g], "capacity_final": driven.capacities["cap"],
             "M_static": model_rows(spec.algorithm, spec.hypers[g], spec.T), "xi": p.noise_std}
    if p.f_min is not None:  # regret only where the minimum is known
        mean_f = p.uniform_mean if p.uniform_mean is not None else estimate_uniform_mean(p)
        traces["instant_regret"] = np.asarray(tr.regret, dtype=np.float64)
        gap, hyper["uniform_mean"] = mean_f - p.f_min, mean_f
    best = np.argmax(traces["reward"], axis=1)
    best_u = x[np.arange(len(best)), best]
    best_point = np.asarray(to_box(p, jnp.asarray(best_u, jnp.float64)))
    return result(spec.algorithm, p.name, spec.T, spec.seeds, traces, np.asarray(tr.rounds), gap, driven, wall0,
                  spec.dtype, hyper, best_point, spec_layout(spec))


__all__ = ["BOTraces", "FACE_TOL", "GRID_KEYS", "check_feedback", "check_space", "initial_capacity", "make_program",
           "make_round", "model_rows", "needs_room", "next_capacity", "objective_fingerprint", "on_face", "point_params",
           "prepare", "resolve_hyperparameters", "static_config"]


def resolve(algorithm: str, params: dict | None, T: int, problem: ContinuousProblem) -> dict:
    """:func:`resolve_hyperparameters` (the engine's one signature; a box problem suggests nothing)."""
    del problem
    return resolve_hyperparameters(algorithm, params, T)
