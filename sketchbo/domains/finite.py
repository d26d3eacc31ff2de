"""The finite domain: a query is an arm index of a finite candidate set (docs/architecture.md#domains).

Papers: BKB (Calandriello et al., COLT 2019) and Batch-BKB (Calandriello et al., ICML 2020), with the exact
GP-UCB / GP-BUCB, eps-greedy and S-BPE baselines (``sketchbo.algorithms.ALGORITHMS``).

One round = the selections of one batch (``engine.rounds.select_batch``: select until the batch rule closes
it or t = T), then the feedback of that batch and the new model (``engine.rounds.finish_batch``: ``update``
then ``resparsify``), for every seed; the engine (``sketchbo.engine.run``) runs the rounds of every seed and
grid point in one program. What is this domain's own:

* feedback ``y = f[q] + xi * noise_t`` (docs/protocols.md#finite-arm-protocol) or, on a problem with recorded
  repetitions (``Problem.samples``: tabular benchmarks), the reward of one recorded repetition of arm q drawn
  uniformly (index floor(Phi(noise_t) n_q));
* the capacities: the dictionary ``m_max`` and the list of unique pulled arms ``u_max``. A round whose model
  wants more than a capacity holds reports it (``RoundInfo.overflow``) and its seed stops; the host loop grows
  the capacity to 1.5 times the largest need and continues from the last completed chunk in the larger,
  padded buffers (docs/architecture.md#capacity-growth).
"""
from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from sketchbo.algorithms import ALGORITHMS, ArmSet, Params, Static, build, oversampling, rule_name
from sketchbo.algorithms.common import arm_feedback, present
from sketchbo.engine import checkpoint as ckpt
from sketchbo.engine import host
from sketchbo.engine.domain import Prepared, RunSpec
from sketchbo.engine.program import (
    SeedKeys, chunk_of_rounds, compiled_program, element_keys, jitted, over_seeds, padded_into, stack_elements,
)
from sketchbo.engine.result import RunResult, result
from sketchbo.engine.rounds import capacity_request, finish_batch, select_batch
from sketchbo.engine.validate import check_float, check_int, invalid_value, with_defaults
from sketchbo.kernels import KERNELS, kernel_params
from sketchbo.problems.base import Problem, check_problem


class Traces(NamedTuple):
    """Per-seed run buffers carried through the rounds."""

    query: jax.Array  # (T,) int32 arm pulled at each step (-1 before it happens)
    batch_index: jax.Array  # (T,) int32 round (batch) of each step
    dict_size: jax.Array  # (T,) int32 dictionary size used by each selection
    rounds: jax.Array  # () int32 rounds executed
    overflow: jax.Array  # () bool, a resparsification wanted more than a capacity holds (the seed stops)
    wanted: jax.Array  # (2,) int32 largest sizes wanted: [dictionary, unique pulled arms]
    loop_iterations: jax.Array  # (T,) int32 loop iterations of each in-batch step (0 where not reported)


# ---------------------------------------------------------------------------------------- validation

CHOICES = {"beta": ("code", "paper", "vakili"), "beta_family": ("bkb", "bbkb"), "resample": ("code", "paper"),
           "batch_rule": ("product", "sum"), "dictionary": ("resampled", "all_pulled")}
_FLOATS = {
    "lam": (lambda v: v > 0, "it must be a finite number > 0"),
    "qbar": (lambda v: v > 0, "it must be a finite number > 0"),
    "rls_qbar": (lambda v: v > 0, "it must be a finite number > 0"),
    "C": (lambda v: v >= 1, "it must be a finite number >= 1"),
    "F": (lambda v: v >= 0, "it must be a finite number >= 0"),
    "delta": (lambda v: 0 < v < 1, "it must be in (0, 1), or null for 1/T"),
    "eps": (lambda v: 0 <= v <= 1, "it must be in [0, 1]"),
}


FALLBACK = {"lam": 0.2, "F": 20.0}  # docs/protocols.md#finite-arm-protocol: lam and F where neither the user nor the problem sets them

# The first dictionary capacity where the user leaves m_max at None (the default): a grown run equals a run
# started at its final capacity bit for bit (float64), and other capacities differ only by rounding (a GEMM's
# summation order depends on its size); the time depends on it. Each round costs an A x m_max^2 product
# (docs/architecture.md#cost-model) and each growth step a compilation (~3 s on the 2-core CPU, ~10 s on an H100). On the CPU with many
# arms the product is most of a run: BBKB on Cadata (A = 20640, docs/protocols.md#finite-arm-protocol, T = 10^4, dictionary <= 85),
# float64, 10 seeds execute in 12.4 s from 64 (one growth, to 98) against 22.2 s at 128 (wall 18.8 s against
# 25.8 s), one seed in 1.4 s against 2.2 s. With few arms it is not: on the quick start's gp_sample (A = 1000,
# T = 500, dictionary 104) BBKB grew twice from 64 and took 9.4 s against 3.1 s at 128. On accelerators the
# product is cheap and compilation is not: 128.
DEFAULT_M_MAX = {"cpu_many_arms": 64, "other": 128}
MANY_ARMS = 10_000  # A from which the CPU starts at DEFAULT_M_MAX["cpu_many_arms"]


def default_m_max(A: int) -> int:
    """The first dictionary capacity (:data:`DEFAULT_M_MAX`) for A arms on JAX's default backend."""
    many = jax.default_backend() == "cpu" and A >= MANY_ARMS
    return DEFAULT_M_MAX["cpu_many_arms" if many else "other"]


def resolve_hyperparameters(algorithm: str, params: dict | None, T: int, suggested: dict | None = None) -> dict:
    """Defaults completed by ``params``; every value checked. Raises ValueError naming the parameter.

    ``lam`` and ``F`` left at None (the registry's default, or a user's null) take the problem's
    ``suggested`` value, else :data:`FALLBACK`."""
    if not isinstance(algorithm, str) or algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm={algorithm!r} is not a known algorithm; choose one of {sorted(ALGORITHMS)}")
    spec = ALGORITHMS[algorithm]
    hyper = with_defaults(algorithm, spec.defaults, params)
    for key, fallback in FALLBACK.items():
        if key in hyper and hyper[key] is None:
            hyper[key] = (suggested or {}).get(key, fallback)
    if hyper.get("delta", 0.5) is None:
        hyper["delta"] = 1.0 / T if T > 1 else 0.5
    for key, (ok, allowed) in _FLOATS.items():
        if key in hyper:
            hyper[key] = check_float(f"algorithm.{key}", hyper[key], ok, allowed)
    for key, choices in CHOICES.items():
        if key in hyper and (not isinstance(hyper[key], str) or hyper[key] not in choices):
            raise invalid_value(f"algorithm.{key}", hyper[key], f"choose one of {list(choices)}")
    if hyper.get("beta") == "vakili" and spec.engine != "sparse":
        raise invalid_value("algorithm.beta", "vakili", "Theorem 3.5's width needs the Nyström engine (bkb, bbkb, "
                            "bbkb_local); choose 'code' or 'paper'")
    for key in ("m_max", "u_max"):
        if key in hyper and not (key == "m_max" and hyper[key] is None):  # m_max None: default_m_max(A)
            hyper[key] = check_int(f"algorithm.{key}", hyper[key], 1)
    return hyper


def resolve_kernel(problem: Problem, kernel: dict | None, d: int, dtype) -> tuple[str, dict]:
    """(kernel name, kernel hyperparameters as arrays): ``kernel`` or, when None, the problem's own."""
    if kernel is not None and not isinstance(kernel, dict):
        raise invalid_value("kernel", kernel, "pass a dict such as {'name': 'rbf', 'sigma2': 5.0}, or None")
    spec = dict(kernel if kernel is not None else problem.kernel)
    name = spec.pop("name", None)
    if not isinstance(name, str) or name not in KERNELS:
        raise ValueError(f"kernel.name={name!r} is not a known kernel; choose one of {sorted(KERNELS)}")
    return name, kernel_params(name, d, dtype, **spec)


# ------------------------------------------------------------------------------------ capacities

def initial_capacities(algorithm: str, hyper: dict, A: int, T: int) -> dict:
    """The first static capacities: the algorithm's ``m_max`` (None: :func:`default_m_max`) / ``u_max`` (1
    where it has none), at most A (and u_max at most T)."""
    m_max = hyper.get("m_max", 1)
    m_max = default_m_max(A) if m_max is None else m_max
    return {"m_max": min(m_max, A), "u_max": min(hyper.get("u_max", 1), A, T)}


def next_capacities(algorithm: str, wanted, capacities: dict, A: int, T: int) -> tuple[dict | None, list]:
    """Capacities 1.5 times the largest need where a need (``wanted`` = [dictionary, unique pulled arms])
    exceeds a capacity that the algorithm has, with a message each; (None, []) when everything fits."""
    limits = {"m_max": A, "u_max": min(A, T)}
    names = {"m_max": "dictionary capacity m_max", "u_max": "pulled-arm capacity u_max"}
    larger, messages = dict(capacities), []
    for key, want in zip(("m_max", "u_max"), (int(wanted[0]), int(wanted[1]))):
        if key in ALGORITHMS[algorithm].defaults and want > capacities[key]:
            larger[key] = min(limits[key], max(capacities[key], math.ceil(1.5 * want)))
            messages.append(f"{names[key]}={capacities[key]} overflowed (a seed wanted {want}); continuing "
                            f"from the last completed chunk with {key}={larger[key]}")
    return (larger, messages) if messages else (None, [])


def make_static(algorithm: str, hyper: dict, A: int, d: int, T: int, kernel_name: str, capacities: dict) -> Static:
    spec = ALGORITHMS[algorithm]
    return Static(A=A, d=d, T=T, m_max=capacities["m_max"], u_max=capacities["u_max"], kernel=kernel_name,
                  beta_family=hyper.get("beta_family", "bbkb"), beta_mode=hyper.get("beta", "code"),
                  resample=hyper.get("resample", "code"), batch_rule=rule_name(spec, hyper),
                  exact_dictionary=hyper.get("dictionary") == "all_pulled")


# ------------------------------------------------------------------------------------- the round

def feedback(queries, noise, f, xi, recorded):
    """Rewards of a batch (``queries`` (T,), -1 padding): f[q] + xi noise_t (docs/protocols.md#finite-arm-protocol), or with
    ``recorded = (samples (A, S), n_samples (A,))`` one recorded repetition of arm q, drawn uniformly by
    u_t = Phi(noise_t) (the standard normal draw turned uniform): samples[q, floor(u_t n_q)]."""
    q = jnp.maximum(queries, 0)
    if recorded is None:
        return f[q] + xi * noise
    samples, n_samples = recorded
    n = n_samples[q]
    j = jnp.minimum(jnp.floor(jax.scipy.special.ndtr(noise) * n).astype(jnp.int32), n - 1)
    return samples[q, j]


ROUND_BUFFER = 256  # selections recorded in the round's buffer between two writes into the T-sized traces


class StepRecords(NamedTuple):
    """The selections of (part of) one batch, written into the traces when the in-batch loop stops."""

    query: jax.Array  # (L,) int32 arm of each selection
    dict_size: jax.Array  # (L,) int32 dictionary size used by each selection
    loop_iterations: jax.Array  # (L,) int32 loop iterations of each selection
    n: jax.Array  # () int32 selections recorded


def make_round(alg, T: int):
    """(round_, active) for one seed of a finite problem.

    The in-batch loop records its selections in a buffer of L = min(T, ROUND_BUFFER) steps, written into the
    (T,) traces after the loop (again if a batch is longer than L): under ``vmap`` a while loop selects every
    carried array per seed at every iteration, and the traces are T-sized (Cadata, T = 10^4, 1000 seeds:
    160 MB) where the buffer is L-sized."""
    L = min(T, ROUND_BUFFER)
    empty = StepRecords(jnp.zeros((L,), jnp.int32), jnp.zeros((L,), jnp.int32), jnp.zeros((L,), jnp.int32),
                        jnp.zeros((), jnp.int32))

    def record(buf, t, q, info):
        del t
        return StepRecords(buf.query.at[buf.n].set(q), buf.dict_size.at[buf.n].set(present(info.dict_size, 0)),
                           buf.loop_iterations.at[buf.n].set(present(info.loop_iterations, 0)), buf.n + 1)

    def write(tr, buf, t_start):  # the buffer's n selections at steps t_start, ..., t_start + n - 1
        pos = jnp.where(jnp.arange(L) < buf.n, t_start + jnp.arange(L), T)  # T: dropped

        def put(a, v):
            return a.at[pos].set(v, mode="drop")

        return tr._replace(query=put(tr.query, buf.query), batch_index=put(tr.batch_index, tr.rounds),
                           dict_size=put(tr.dict_size, buf.dict_size),
                           loop_iterations=put(tr.loop_iterations, buf.loop_iterations))

    def round_(carry, keys: SeedKeys, noise, params, f, xi, recorded):
        state, tr = carry
        t0 = state.t

        def part(c):  # up to L selections of the batch, then written into the traces
            st, tr = c
            t_start = st.t
            st, buf = select_batch(alg, keys.select, params, st, empty, record,
                                   lambda s, b: (s.t < T) & (b.n < L))
            return st, write(tr, buf, t_start)

        state, tr = jax.lax.while_loop(lambda c: c[0].batch_open & (c[0].t < T), part, (state, tr))
        pos = jnp.arange(T)
        queries = jnp.where((pos >= t0) & (pos < state.t), tr.query, -1)
        ys = feedback(queries, noise, f, xi, recorded)
        state, info = finish_batch(alg, keys.resparsify, params, state, arm_feedback(queries, ys))
        overflow, wanted = capacity_request(info)
        return state, tr._replace(rounds=tr.rounds + 1, overflow=tr.overflow | overflow,
                                  wanted=jnp.maximum(tr.wanted, wanted))

    def active(carry):  # a seed whose model overflowed stops until the host loop has grown the capacity
        return (carry[0].t < T) & ~carry[1].overflow

    return round_, active


def make_program(alg, T: int, seed_axis: str, rounds_per_call: int, n_devices: int = 1):
    """(init_fn, chunk_fn) jitted over stacked elements (a seed at a grid point; ``engine.program.jitted``):
    ``init_fn(keys, params, (arms, f, recorded))``, ``chunk_fn(keys, carry, noise, params, (arms, f,
    recorded))``; ``params.xi`` is each element's noise level."""
    round_, active = make_round(alg, T)
    chunk_one = chunk_of_rounds(round_, active, rounds_per_call)

    def init_one(keys: SeedKeys, params, arms):
        state = alg.init(keys.init, ArmSet(arms), params)
        noise = jax.random.normal(keys.noise, (T,), dtype=arms.dtype)
        tr = Traces(query=-jnp.ones((T,), jnp.int32), batch_index=jnp.zeros((T,), jnp.int32),
                    dict_size=jnp.zeros((T,), jnp.int32), rounds=jnp.zeros((), jnp.int32),
                    overflow=jnp.asarray(False), wanted=jnp.zeros((2,), jnp.int32),
                    loop_iterations=jnp.zeros((T,), jnp.int32))
        return (state, tr), noise

    def init_all(keys, params, shared):
        return over_seeds(lambda k, p: init_one(k, p, shared[0]), seed_axis)(keys, params)

    def chunk_all(keys, carry, noise, params, shared):
        _, f, recorded = shared
        return over_seeds(lambda k, c, n, p: chunk_one(c, k, n, p, f, p.xi, recorded), seed_axis)(
            keys, carry, noise, params)

    return jitted(init_all, chunk_all, n_devices)


# ------------------------------------------------------------------------------------ the domain

GRID_KEYS = ("lam", "qbar", "rls_qbar", "C", "F", "delta", "eps")  # float hyperparameters that can be a grid axis


def check_space(algorithm: str, problem) -> Problem:
    """The validated benchmark of a finite-domain run (ValueError naming what is wrong)."""
    if not isinstance(problem, Problem):
        raise ValueError(f"algorithm {algorithm!r} runs on a finite arm set: pass a sketchbo Problem (e.g. "
                         f"sketchbo.make_problem('gp_sample')); got a {type(problem).__name__}")
    return check_problem(problem)


def _point_params(hyper: dict, xi: float, kparams: dict, jdt) -> Params:
    """The float hyperparameters of one grid point as 0-d arrays (stacked over the elements by the engine)."""
    def scalar(key, default):
        return jnp.asarray(hyper.get(key, default), jdt)

    return Params(lam=scalar("lam", 1.0), qbar=jnp.asarray(oversampling(hyper), jdt), C=scalar("C", 1.0),
                  F=scalar("F", 0.0), delta=scalar("delta", 0.5), xi=jnp.asarray(xi, jdt), eps=scalar("eps", 0.0),
                  kernel=kparams)


def prepare(spec: RunSpec) -> Prepared:
    """The run of ``spec`` on a finite problem, ready for the host loop (``engine.domain.Prepared``)."""
    p, T = spec.problem, spec.T
    A, d = p.arms.shape
    jdt = jnp.float64 if spec.dtype == "float64" else jnp.float32
    kern = resolve_kernel(p, spec.kernel, d, jdt)
    xis = [float(p.noise_std) if p.noise_std is not None else math.sqrt(h.get("lam", 1.0))
           for h in spec.hypers]  # xi^2 = lam (docs/protocols.md#finite-arm-protocol)
    rounds_per_call = spec.rounds_per_call or (4 if ALGORITHMS[spec.algorithm].batched else max(1, min(64, T // 100)))
    keys = element_keys(spec.seeds, len(spec.points), spec.n_devices)
    params = stack_elements([_point_params(h, xi, kern[1], jdt) for h, xi in zip(spec.hypers, xis)
                             for _ in spec.seeds], spec.n_devices)
    recorded = None if p.samples is None else (jnp.asarray(p.samples, jdt), jnp.asarray(p.n_samples, jnp.int32))
    shared = (jnp.asarray(p.arms, jdt), jnp.asarray(p.f, jdt), recorded)
    alg_spec = ALGORITHMS[spec.algorithm]

    def program(capacities):
        static = make_static(spec.algorithm, spec.hypers[0], A, d, T, kern[0], capacities)
        cache_key = ("finite", alg_spec.name, static, T, spec.seed_axis, rounds_per_call, spec.n_devices,
                     keys.init.shape, str(jdt.dtype), jax.tree.structure(params))
        return compiled_program(cache_key, lambda: make_program(build(alg_spec, static), T, spec.seed_axis,
                                                                rounds_per_call, spec.n_devices),
                                (keys, params, shared), (params, shared))

    def next_caps(carry, capacities):
        if not np.any(np.asarray(carry[1].overflow)):
            return None, []
        wanted = np.asarray(carry[1].wanted).max(axis=0)
        larger, messages = next_capacities(spec.algorithm, wanted, capacities, A, T)
        if larger is None:  # would stop the overflowing seed for good
            raise RuntimeError(f"{spec.algorithm}: a round overflowed (wanted {wanted.tolist()}) but no capacity of "
                               f"{capacities} can grow")
        return larger, messages

    label = f"{spec.algorithm}/{p.name}" + (f" grid of {len(spec.points)}" if len(spec.points) > 1 else "")
    domain = host.Domain(label=label, T=T, program=program, grow=padded_into, next_capacities=next_caps)

    def identity():
        name, kparams = kern
        rec = () if p.samples is None else (p.samples, p.n_samples)
        problem = {"name": p.name, "sha256": ckpt.digest(p.arms, p.f, *rec), "noise_std": p.noise_std}
        return ckpt.run_identity(
            spec.algorithm, problem, spec.hypers, T=T, seeds=spec.seeds, dtype=spec.dtype, seed_axis=spec.seed_axis,
            rounds_per_call=rounds_per_call, devices=spec.n_devices,
            kernel={"name": name, **{k: np.asarray(v).tolist() for k, v in kparams.items()}})

    def collect(g, carry, noise, driven, wall0):
        caps = driven.capacities
        hyper = {**spec.hypers[g], "m_max_final": caps["m_max"], "u_max_final": caps["u_max"], "xi": xis[g]}
        return _collect(spec, carry, noise, xis[g], driven, wall0, hyper)

    return Prepared(domain, initial_capacities(spec.algorithm, spec.hypers[0], A, T), (keys, params, shared),
                    (params, shared), identity, collect)


def _rewards(problem: Problem, query, noise, xi) -> np.ndarray:
    """:func:`feedback` in float64 numpy on the host (Phi(x) = erfc(-x / sqrt 2) / 2)."""
    q = np.maximum(query, 0)
    if problem.samples is None:
        return np.asarray(problem.f)[q] + xi * noise
    u = 0.5 * np.vectorize(math.erfc)(-noise / math.sqrt(2.0))
    n = problem.n_samples[q]
    return problem.samples[q, np.minimum(np.floor(u * n).astype(np.int64), n - 1)]


def _collect(spec: RunSpec, carry, noise, xi, driven, wall0, hyper) -> RunResult:
    """The RunResult of one grid point's seeds (``carry``, ``noise`` sliced to them). The rewards are
    recomputed here from the queries and the noise, in float64 (:func:`feedback`'s rule)."""
    _, tr = carry
    p = spec.problem
    query = np.asarray(tr.query)
    f = np.asarray(p.f)
    f_star = float(f.max())
    traces = {"query": query, "reward": _rewards(p, query, np.asarray(noise, np.float64), xi),
              "instant_regret": f_star - f[query], "batch_index": np.asarray(tr.batch_index),
              "dict_size": np.asarray(tr.dict_size), "loop_iterations": np.asarray(tr.loop_iterations)}
    best = np.argmax(traces["reward"], axis=1)
    best_point = np.asarray(p.arms)[query[np.arange(len(best)), best]]
    return result(spec.algorithm, p.name, spec.T, spec.seeds, traces, np.asarray(tr.rounds), f_star - float(f.mean()),
                  driven, wall0, spec.dtype, hyper, best_point)


__all__ = ["CHOICES", "DEFAULT_M_MAX", "FALLBACK", "GRID_KEYS", "MANY_ARMS", "Traces", "check_space", "default_m_max",
           "feedback", "initial_capacities", "make_program", "make_round", "make_static", "next_capacities", "prepare",
           "resolve_hyperparameters", "resolve_kernel"]


def resolve(algorithm: str, params: dict | None, T: int, problem: Problem) -> dict:
    """:func:`resolve_hyperparameters` with the problem's suggested values (the engine's one signature)."""
    return resolve_hyperparameters(algorithm, params, T, problem.suggested)
