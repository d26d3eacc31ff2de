"""The finite domain: a query is an arm index of a finite candidate set (docs/architecture.md#domains).

Papers: BKB (Calandriello et al., COLT 2019) and Batch-BKB (Calandriello et al., ICML 2020), with the exact
GP-UCB / GP-BUCB, eps-greedy and S-BPE baselines (``sketchbo.algorithms.ALGORITHMS``).

One round = the selections of one batch (``engine.rounds.select_batch``: select until the batch rule closes
it or t = T), then the feedback of that batch and the new model (``engine.rounds.finish_batch``: ``update``
then ``resparsify``), for every seed; the engine (``sketchbo.engine.run``) runs the rounds of every seed and
grid point in one program, compiled from ``sketchbo.domains.finite_program``. What is this domain's own:

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

import jax
import jax.numpy as jnp
import numpy as np

from sketchbo.algorithms import ALGORITHMS, Params, Static, build, oversampling, rule_name
from sketchbo.domains.finite_program import (  # noqa: F401 (re-exported: the domain's round program)
    ROUND_BUFFER, Traces, empty_traces, feedback, make_chunk, make_program,
)
from sketchbo.engine import checkpoint as ckpt
from sketchbo.engine import host
from sketchbo.engine.domain import Prepared, RunSpec
from sketchbo.engine.program import FAST_CPU_COMPILE, compiled_program, element_seeds, padded_into, stack_elements
from sketchbo.engine.result import RunResult, result, spec_layout
from sketchbo.engine.validate import check_float, check_int, invalid_value, with_defaults
from sketchbo.gp import nystrom
from sketchbo.kernels import KERNELS, kernel_params
from sketchbo.problems.base import Problem, check_problem


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
# started at its final capacity bit for bit (float64; below MANY_ARMS, whose resparsification widths depend
# on the capacity), and other capacities differ only by rounding (a GEMM's
# summation order depends on its size); the time depends on it. Each round costs an A x m_max^2 product
# (docs/architecture.md#cost-model) and each growth step a compilation of the whole program. On the CPU with
# many arms the product is most of the execution, so the capacity sits just above the papers' dictionaries:
# BBKB on Cadata (A = 20640, T = 10^4, largest dictionary 85 in 10 seeds, 89 in 1000 on 2026-11-23) runs without growth
# from 96; from 64 it grew once, to 98 (docs/benchmarks.md#first-capacity: 96 against 64 on 2026-11-26,
# 10 seeds float64 wall 65.4 s against 70.2 s, float32 38.1 against 49.3 s, one seed 15.7 against 20.8 s,
# a loaded 2-core CPU). With few arms the product is cheap and growth is not (gp_sample, A = 1000, T = 500,
# dictionary 104: 9.4 s from 64, 3.1 s at 128 on 2026-11-23); on accelerators a compilation costs about 10 s: 128.
DEFAULT_M_MAX = {"cpu_many_arms": 96, "other": 128}
# A from which the CPU starts at DEFAULT_M_MAX["cpu_many_arms"], and from which a resparsification computes on
# the dictionary's width (Static.slot_block; below it the product is cheap and each width's branch costs
# compilation: docs/benchmarks.md#dictionary-width)
MANY_ARMS = 10_000


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
                  exact_dictionary=hyper.get("dictionary") == "all_pulled",
                  slot_block=nystrom.SLOT_BLOCK if A >= MANY_ARMS else 0)


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
    def scalar(key, default):  # NumPy: the engine stacks the elements on the host
        return np.asarray(hyper.get(key, default), jdt)

    return Params(lam=scalar("lam", 1.0), qbar=np.asarray(oversampling(hyper), jdt), C=scalar("C", 1.0),
                  F=scalar("F", 0.0), delta=scalar("delta", 0.5), xi=np.asarray(xi, jdt), eps=scalar("eps", 0.0),
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
    seeds = element_seeds(spec.seeds, len(spec.points), spec.n_devices)
    params = stack_elements([_point_params(h, xi, kern[1], jdt) for h, xi in zip(spec.hypers, xis)],
                            len(spec.seeds), spec.n_devices)
    recorded = None if p.samples is None else (jnp.asarray(p.samples, jdt), jnp.asarray(p.n_samples, jnp.int32))
    shared = (jnp.asarray(p.arms, jdt), jnp.asarray(p.f, jdt), recorded)
    alg_spec = ALGORITHMS[spec.algorithm]

    def program(capacities):
        static = make_static(spec.algorithm, spec.hypers[0], A, d, T, kern[0], capacities)
        cache_key = ("finite", alg_spec.name, static, T, spec.seed_axis, rounds_per_call, spec.n_devices,
                     seeds.shape, str(jdt.dtype), jax.tree.structure(params))
        return compiled_program(cache_key, lambda: make_program(build(alg_spec, static), T, spec.seed_axis,
                                                                rounds_per_call, spec.n_devices),
                                (seeds, params, shared), (params, shared), cpu_options=FAST_CPU_COMPILE,
                                n_devices=spec.n_devices)

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

    return Prepared(domain, initial_capacities(spec.algorithm, spec.hypers[0], A, T), (seeds, params, shared),
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
                  driven, wall0, spec.dtype, hyper, best_point, spec_layout(spec))


__all__ = ["CHOICES", "DEFAULT_M_MAX", "FALLBACK", "GRID_KEYS", "MANY_ARMS", "ROUND_BUFFER", "Traces", "check_space",
           "default_m_max", "empty_traces", "feedback", "initial_capacities", "make_chunk", "make_program", "make_static",
           "next_capacities", "prepare", "resolve_hyperparameters", "resolve_kernel"]


def resolve(algorithm: str, params: dict | None, T: int, problem: Problem) -> dict:
    """:func:`resolve_hyperparameters` with the problem's suggested values (the engine's one signature)."""
    return resolve_hyperparameters(algorithm, params, T, problem.suggested)
