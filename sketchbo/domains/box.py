"""The box domain: a query is a point of a box, evaluated by the problem's JAX objective as it is selected
(docs/architecture.md#domains).

Paper: GSSBO (Wei et al. 2025, Alg. 1 and §6) and its baselines (``sketchbo.algorithms.BO_ALGORITHMS``);
benchmarks: ``sketchbo.problems.continuous`` (and the diabetes task), or a user's ``sketchbo.box_problem``.

A round = the selections of one batch (``engine.rounds.select_batch``), the feedback of the batch
(``update``) and one ``refit`` (subset choice, hyperparameter fit, acquisition). What is this domain's
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


import jax
import jax.numpy as jnp
import numpy as np

from sketchbo import acquisition
from sketchbo.algorithms import get_spec
from sketchbo.algorithms.box_hyper import (  # noqa: F401 (re-exported: the box registry's hyperparameters)
    _FLOATS, _INTS, _SELECTIONS, check_widths, initial_capacity, model_rows, needs_room, next_capacity,
    point_params, static_config,
)
from sketchbo.domains.box_program import BOTraces, Buffer, make_program, make_round  # noqa: F401 (re-exported)
from sketchbo.engine.domain import Domain, RunSpec, Setup, register_domain
from sketchbo.engine.program import padded_into
from sketchbo.engine.result import RunResult, result, spec_layout
from sketchbo.engine.validate import check_int, invalid_value
from sketchbo.problems.continuous import ContinuousProblem, batch_values, estimate_uniform_mean, to_box
from sketchbo.spec import Setting


# ----------------------------------------------------------------------------------- validation

def resolve_hyperparameters(algorithm, params: dict | None, T: int) -> dict:
    """The spec's defaults completed by ``params`` and checked (``AlgorithmSpec.resolve``; ValueError naming the
    parameter); for the subset variants the subset size ``M_resolved``."""
    return get_spec(algorithm, "box").resolve(params, T)


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
    raise ValueError(f"problem {problem.name!r}: the objective returned {reward[s, step] + 0.0} (as reward -f + noise) "
                     f"at x={np.array2string(x, precision=4)} (unit cube; seed {seeds[s]}, evaluation {step}). "
                     "It was kept out of the model (the feedback marks it invalid); the run stops here and "
                     "writes no results. Make f return finite values on the whole box, e.g. a large penalty for failures")


# ------------------------------------------------------------------------------------- the program

# ------------------------------------------------------------------------------------- the domain

def check_space(algorithm: str, problem) -> ContinuousProblem:
    """The benchmark of a box-domain run (ValueError when it is not one)."""
    if not isinstance(problem, ContinuousProblem):
        raise ValueError(f"algorithm {algorithm!r} optimises over a box: pass a box problem (sketchbo.make_problem: "
                         "eggholder2, hartmann6, levy20, powell50, rastrigin100, diabetes; or sketchbo.box_problem("
                         f"space, fn) for your own function); got a {type(problem).__name__}")
    return problem


def first_capacity(spec: RunSpec, setting: Setting) -> dict:
    """The first capacities: the algorithm's (``AlgorithmSpec.first_capacities``) or the user's ``capacity``
    for the sample buffer, at least n0 and at most T."""
    caps = spec.alg.first_capacities(spec.hypers[0], setting)
    if spec.capacity is not None and "cap" in caps:
        caps = {"cap": min(check_int("capacity", spec.capacity, spec.hypers[0]["n0"]), spec.T)}
    return caps


def check_options(spec, kernel, capacity) -> None:
    """A box algorithm fits its own kernel; a first capacity is for an algorithm with a growing buffer."""
    if kernel is not None:
        raise invalid_value("kernel", kernel, f"{spec.name!r} fits its own kernel on a box; leave kernel at None")
    if capacity is not None and spec.hooks.buffer_rows is None:
        raise invalid_value("capacity", capacity, f"{spec.name!r} has no growing sample buffer; leave capacity at None")


def setup(run: RunSpec, jdt) -> Setup:
    """The box domain's pieces of a run (``engine.domain.Setup``): the problem's objective inside the round
    program, the feedback checks, and the sample buffer's capacity where the algorithm grows one."""
    p, T, h0, alg = run.problem, run.T, run.hypers[0], run.alg
    setting = Setting(T, p.d, None, None)
    caps0 = first_capacity(run, setting)
    rounds_per_call = run.rounds_per_call or max(1, min(16, T // 50))
    rows = alg.hooks.buffer_rows

    def program(algorithm, static, capacities, n_devices):
        buffer = None if rows is None else Buffer(rows, h0["n0"], capacities["cap"])
        return make_program(algorithm, p, T, run.seed_axis, rounds_per_call, n_devices, buffer, alg.merged_rows)

    def next_caps(carry, capacities):
        state = carry[0]
        if rows is None:
            return None, []
        full = (np.asarray(state.t) < T) & (np.asarray(rows(state)) + needs_room(state, h0["n0"]) > capacities["cap"])
        return alg.next_capacities(None, capacities, setting) if np.any(full) else (None, [])

    def grow(carry, template):  # the new rows of D (and, for models on every row, of the subset) are zeros
        return padded_into(carry, jax.tree.map(jnp.zeros_like, template))

    def problem_identity():
        return {"name": p.name, "d": p.d, "lower": p.lower, "upper": p.upper, "f_min": p.f_min,
                "noise_std": p.noise_std, "objective": getattr(p.fn, "__qualname__", type(p.fn).__name__),
                "fingerprint": objective_fingerprint(p)}

    def collect(g, carry, noise, driven, wall0):
        return _collect(run, g, carry, driven, wall0)

    xis = [p.noise_std] * len(run.hypers)
    return Setup(setting=setting, contexts=[{"xi": np.asarray(xi, jdt)} for xi in xis], xis=xis, shared=(),
                 rounds_per_call=rounds_per_call, capacities=caps0, make_program=program,
                 cache_key=(p.name, p.d, p.fn), next_capacities=next_caps, grow=grow,
                 problem_identity=problem_identity, identity_extra={"first_capacity": caps0.get("cap")},
                 collect=collect, check=lambda carry: check_feedback(p, carry, run.seeds), waits=True)


FACE_TOL = acquisition.FACE_TOL
"""A coordinate this close to 0 or 1 (unit-cube coordinates) lies on a face ([`on_face`][])."""


def on_face(x) -> np.ndarray:
    """(n_seeds, T) bool: the query has a coordinate on a face of the box (within [`FACE_TOL`][]). An acquisition
    maximiser whose queries sit on faces far more often than the objective's optimum does is chasing the variance at the
    box's boundary (docs/reproductions.md#box-gp-core)."""
    return np.asarray(acquisition.on_face(jnp.asarray(x)))


def _collect(spec: RunSpec, g: int, carry, driven, wall0) -> RunResult:
    _, tr = carry
    p = spec.problem
    x = np.asarray(tr.x)
    traces = {"query": np.asarray(tr.row), "reward": np.asarray(tr.reward), "batch_index": np.asarray(tr.batch_index),
              "dict_size": np.asarray(tr.dict_size), "x": x, "ucb": np.asarray(tr.ucb), "on_face": on_face(x),
              **{f"info_{k}": np.asarray(v) for k, v in tr.info.items()}}  # the step info's own fields
    gap = None
    hyper = dict(spec.hypers[g])
    if "cap" in driven.capacities:  # an algorithm with a growing sample buffer
        hyper.update(capacity_final=driven.capacities["cap"], M_static=model_rows(spec.algorithm, hyper, spec.T))
    hyper["xi"] = p.noise_std
    if p.f_min is not None:  # regret only where the minimum is known
        mean_f = p.uniform_mean if p.uniform_mean is not None else estimate_uniform_mean(p)
        traces["instant_regret"] = np.asarray(tr.regret, dtype=np.float64)
        gap, hyper["uniform_mean"] = mean_f - p.f_min, mean_f
    best = np.argmax(traces["reward"], axis=1)
    best_u = x[np.arange(len(best)), best]
    best_point = np.asarray(to_box(p, jnp.asarray(best_u, jnp.float64)))
    return result(spec.algorithm, p.name, spec.T, spec.seeds, traces, np.asarray(tr.rounds), gap, driven, wall0,
                  spec.dtype, hyper, best_point, spec_layout(spec))


__all__ = ["BOTraces", "FACE_TOL", "check_feedback", "check_space", "initial_capacity", "make_program", "make_round",
           "model_rows", "needs_room", "next_capacity", "objective_fingerprint", "on_face", "point_params", "DOMAIN",
           "Buffer", "check_options", "resolve_hyperparameters", "setup", "static_config"]


DOMAIN = register_domain(Domain("box", check_space, check_options, setup))
"""The engine's box domain."""
