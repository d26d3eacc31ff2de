"""The finite domain: a query is an arm index of a finite candidate set (docs/architecture.md#domains).

Papers: BKB (Calandriello et al., COLT 2019) and Batch-BKB (Calandriello et al., ICML 2020), with the exact
GP-UCB / GP-BUCB, eps-greedy and S-BPE baselines (``sketchbo.algorithms.ALGORITHMS``).

One round = the selections of one batch (``engine.rounds.select_batch``: select until the batch rule closes
it or t = T), then the feedback of that batch and the new model (``engine.rounds.finish_batch``: ``update``
then ``refit``), for every seed; the engine (``sketchbo.engine.run``) runs the rounds of every seed and
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
from types import SimpleNamespace

import jax.numpy as jnp
import numpy as np

from sketchbo.algorithms import get_spec
from sketchbo.algorithms.finite_hyper import (  # noqa: F401 (re-exported: the finite registry's hyperparameters)
    CHOICES, DEFAULT_M_MAX, FALLBACK, GRID_KEYS, MANY_ARMS, default_m_max,
)
from sketchbo.domains.finite_program import (  # noqa: F401 (re-exported: the domain's round program)
    ROUND_BUFFER, Traces, empty_traces, feedback, make_chunk, make_program,
)
from sketchbo.engine import checkpoint as ckpt
from sketchbo.engine.domain import Domain, RunSpec, Setup, register_domain
from sketchbo.engine.program import FAST_CPU_COMPILE, padded_into
from sketchbo.engine.result import RunResult, result, spec_layout
from sketchbo.engine.validate import invalid_value
from sketchbo.kernels import KERNELS, kernel_params
from sketchbo.problems.base import Problem, check_problem
from sketchbo.spec import Setting


# ---------------------------------------------------------------------------------------- validation

def resolve_hyperparameters(algorithm, params: dict | None, T: int, suggested: dict | None = None) -> dict:
    """The spec's defaults completed by ``params`` and checked (``AlgorithmSpec.resolve``) with a problem's
    ``suggested`` values (lam, F). Raises ValueError naming the parameter."""
    return get_spec(algorithm, "arms").resolve(params, T, SimpleNamespace(suggested=suggested))


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

def initial_capacities(algorithm, hyper: dict, A: int, T: int) -> dict:
    """The first static capacities of a finite algorithm ({} where it has none)."""
    return get_spec(algorithm, "arms").first_capacities(hyper, Setting(T, 0, A, None))


def next_capacities(algorithm, wanted, capacities: dict, A: int, T: int) -> tuple[dict | None, list]:
    """``(larger, messages)`` where a need exceeds a capacity; (None, []) when everything fits."""
    return get_spec(algorithm, "arms").next_capacities(wanted, capacities, Setting(T, 0, A, None))


def make_static(algorithm, hyper: dict, A: int, d: int, T: int, kernel_name: str, capacities: dict):
    """The static config of a finite algorithm (``AlgorithmSpec.static``)."""
    return get_spec(algorithm, "arms").static(hyper, Setting(T, d, A, kernel_name), capacities)


# ------------------------------------------------------------------------------------ the domain

def check_space(algorithm: str, problem) -> Problem:
    """The validated benchmark of a finite-domain run (ValueError naming what is wrong)."""
    if not isinstance(problem, Problem):
        raise ValueError(f"algorithm {algorithm!r} runs on a finite arm set: pass a sketchbo Problem (e.g. "
                         f"sketchbo.make_problem('gp_sample')); got a {type(problem).__name__}")
    return check_problem(problem)


def check_options(spec, kernel, capacity) -> None:
    """A finite arm set takes a kernel override; its capacities are the algorithm's hyperparameters."""
    del kernel
    if capacity is not None:
        raise invalid_value("capacity", capacity, f"{spec.name!r} runs on a finite arm set, whose capacities are "
                            "its hyperparameters (m_max / u_max where it has them); leave capacity at None")


def default_rounds_per_call(batched: bool, T: int, run: RunSpec) -> int:
    """Rounds per compiled chunk where the run does not set them: a sequential algorithm's rounds are single steps,
    so up to 64 of them (T / 100); a batched one's 4, or 8 where several devices each map over several elements. The
    devices wait for each other at the end of every chunk, the one whose elements' rounds took less for the other,
    and longer chunks spread that wait over more work: BBKB on Cadata, T = 10^4, ten seeds over the 2-core CPU's two
    devices, 8 rounds ran 1.6-4.2% faster than 4 in three sets of 2-4 alternations (2026-12-05); one seed, on one
    device, the same."""
    if not batched:
        return max(1, min(64, T // 100))
    per_device = len(run.seeds) * len(run.points) / max(run.n_devices, 1)
    return 8 if run.n_devices > 1 and run.seed_axis == "map" and per_device > 1 else 4


def setup(run: RunSpec, jdt) -> Setup:
    """The finite domain's pieces of a run (``engine.domain.Setup``): the kernel, the noise levels, the
    arms and values every element reads, the round program and the capacity growth of the overflow rule."""
    p, T, alg = run.problem, run.T, run.alg
    A, d = p.arms.shape
    kern = resolve_kernel(p, run.kernel, d, jdt)
    setting = Setting(T, d, A, kern[0])
    xis = [float(p.noise_std) if p.noise_std is not None else math.sqrt(h.get("lam", 1.0))
           for h in run.hypers]  # xi^2 = lam (docs/protocols.md#finite-arm-protocol)
    rounds_per_call = run.rounds_per_call or default_rounds_per_call(alg.batched, T, run)
    recorded = None if p.samples is None else (jnp.asarray(p.samples, jdt), jnp.asarray(p.n_samples, jnp.int32))

    def program(algorithm, static, capacities, n_devices):
        return make_program(algorithm, T, run.seed_axis, rounds_per_call, n_devices)

    def next_caps(carry, capacities):
        if not np.any(np.asarray(carry[1].overflow)):
            return None, []
        wanted = np.asarray(carry[1].wanted).max(axis=0)
        larger, messages = alg.next_capacities(wanted, capacities, setting)
        if larger is None:  # would stop the overflowing seed for good
            raise RuntimeError(f"{run.algorithm}: a round overflowed (wanted {wanted.tolist()}) but no capacity of "
                               f"{capacities} can grow")
        return larger, messages

    def problem_identity():
        rec = () if p.samples is None else (p.samples, p.n_samples)
        return {"name": p.name, "sha256": ckpt.digest(p.arms, p.f, *rec), "noise_std": p.noise_std}

    def collect(g, carry, noise, driven, wall0):
        final = {f"{k}_final": v for k, v in driven.capacities.items()}
        hyper = {**run.hypers[g], **final, "xi": xis[g]}
        return _collect(run, carry, noise, xis[g], driven, wall0, hyper)

    kernel = {"name": kern[0], **{k: np.asarray(v).tolist() for k, v in kern[1].items()}}
    return Setup(setting=setting, contexts=[{"xi": xi, "kernel": kern[1]} for xi in xis], xis=xis,
                 shared=(jnp.asarray(p.arms, jdt), jnp.asarray(p.f, jdt), recorded), rounds_per_call=rounds_per_call,
                 capacities=alg.first_capacities(run.hypers[0], setting), make_program=program, cache_key=(),
                 next_capacities=next_caps, grow=padded_into, problem_identity=problem_identity,
                 identity_extra={"kernel": kernel}, collect=collect, cpu_options=FAST_CPU_COMPILE)


def _rewards(problem: Problem, query, noise, xi) -> np.ndarray:
    """[`feedback`][] in float64 numpy on the host (Phi(x) = erfc(-x / sqrt 2) / 2)."""
    q = np.maximum(query, 0)
    if problem.samples is None:
        return np.asarray(problem.f)[q] + xi * noise
    u = 0.5 * np.vectorize(math.erfc)(-noise / math.sqrt(2.0))
    n = problem.n_samples[q]
    return problem.samples[q, np.minimum(np.floor(u * n).astype(np.int64), n - 1)]


def _collect(spec: RunSpec, carry, noise, xi, driven, wall0, hyper) -> RunResult:
    """The RunResult of one grid point's seeds (``carry``, ``noise`` sliced to them). The rewards are recomputed here
    from the queries and the noise, in float64 ([`feedback`][]'s rule)."""
    _, tr = carry
    p = spec.problem
    query = np.asarray(tr.query)
    f = np.asarray(p.f)
    f_star = float(f.max())
    traces = {"query": query, "reward": _rewards(p, query, np.asarray(noise, np.float64), xi),
              "instant_regret": f_star - f[query], "batch_index": np.asarray(tr.batch_index),
              "dict_size": np.asarray(tr.dict_size), "loop_iterations": np.asarray(tr.loop_iterations),
              **{f"info_{k}": np.asarray(v) for k, v in tr.info.items()}}  # the step info's own fields
    best = np.argmax(traces["reward"], axis=1)
    best_point = np.asarray(p.arms)[query[np.arange(len(best)), best]]
    return result(spec.algorithm, p.name, spec.T, spec.seeds, traces, np.asarray(tr.rounds), f_star - float(f.mean()),
                  driven, wall0, spec.dtype, hyper, best_point, spec_layout(spec))


__all__ = ["CHOICES", "DOMAIN", "check_options", "DEFAULT_M_MAX", "FALLBACK", "GRID_KEYS", "MANY_ARMS",
           "ROUND_BUFFER", "default_rounds_per_call", "Traces", "check_space", "default_m_max", "empty_traces",
           "feedback", "initial_capacities", "make_chunk", "make_program", "make_static", "next_capacities",
           "resolve_hyperparameters", "resolve_kernel", "setup"]


DOMAIN = register_domain(Domain("arms", check_space, check_options, setup))
"""The engine's finite domain."""
