"""Finite arm sets on the round engine (DESIGN §3): many seeds of one algorithm in one compiled program.

One round = the selections of one batch (``engine.rounds.select_batch``: select until the batch rule closes
it or t = T), then the feedback of that batch and the new model (``engine.rounds.finish_batch``: ``update``
then ``resparsify``), for every seed. The engine (``sketchbo.engine``) runs the rounds: seeds through ``vmap``
(the default on accelerators; a seed whose batch has ended waits, masked) or a sequential ``lax.map`` (the
default on CPU), the same trajectories either way: seed i uses ``jax.random.key(seed + i)`` and every
random draw is keyed by the step or round at which it happens, never by how many seeds run beside it.

This module is the finite domain: a query is an arm index, its feedback ``y = f[q] + xi * noise_t``
(PROTOCOLS §9) or, on a problem with recorded repetitions (``Problem.samples``: tabular benchmarks), the
reward of one recorded repetition of arm q drawn uniformly (index floor(Phi(noise_t) n_q)); the capacities
are the dictionary ``m_max`` and the list of unique pulled arms ``u_max``.
A round whose model wants more than a capacity holds reports it (``RoundInfo.overflow``) and its seed stops;
the host loop grows the capacity to 1.5 times the largest need and continues from the last completed chunk
in the larger, padded buffers (one recompilation per growth step), never from round 0.

Checkpoints (``checkpoint=path, checkpoint_every=k``): ``sketchbo.engine.checkpoint``; a run of the same
identity resumes at the checkpoint's capacities and ends with the uninterrupted run's traces bit for bit.
"""
from __future__ import annotations

import itertools
import math
import time
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from sketchbo.algorithms import ALGORITHMS, ArmSet, Params, Static, build, oversampling, rule_name
from sketchbo.algorithms.common import arm_feedback, present
from sketchbo.engine import checkpoint as ckpt
from sketchbo.engine import host
from sketchbo.engine.program import (
    SeedKeys, chunk_of_rounds, compiled_program, default_seed_axis, enable_compilation_cache, over_seeds, padded_into,
    seed_keys, stacked_keys,
)
from sketchbo.engine.progress import Progress
from sketchbo.engine.rounds import capacity_request, finish_batch, select_batch
from sketchbo.engine.result import RunResult, result
from sketchbo.engine.validate import (
    check_checkpoint, check_devices, check_float, check_int, check_run_args, invalid_value, with_defaults,
)
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


FALLBACK = {"lam": 0.2, "F": 20.0}  # PROTOCOLS §9: lam and F where neither the user nor the problem sets them

# The first dictionary capacity where the user leaves m_max at None (the default): a grown run equals a run
# started at its final capacity bit for bit (float64), and other capacities differ only by rounding (a GEMM's
# summation order depends on its size); the time depends on it. Each round costs an A x m_max^2 product (DESIGN
# §3) and each growth step a compilation (~3 s on the 2-core CPU, ~10 s on an H100). On the CPU with many
# arms the product is most of a run: BBKB on Cadata (A = 20640, PROTOCOLS §9, T = 10^4, dictionary <= 85),
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
    """Rewards of a batch (``queries`` (T,), -1 padding): f[q] + xi noise_t (PROTOCOLS §9), or with
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
    """(init_fn, chunk_fn): jitted functions over stacked elements (a seed at a hyperparameter point):
    keys, params and xi carry one leading entry per element.

    With ``n_devices > 1`` the elements are sharded over a 1-D device mesh (``shard_map``; the element
    count must be a multiple of ``n_devices``) and each device runs its share by ``seed_axis``: every
    element's computation is the one-device computation. The chunk does not donate its carry: the host
    loop keeps the last completed chunk to continue from after a capacity overflow."""
    round_, active = make_round(alg, T)
    chunk_one = chunk_of_rounds(round_, active, rounds_per_call)

    def init_one(keys: SeedKeys, arms, params):
        state = alg.init(keys.init, ArmSet(arms), params)
        noise = jax.random.normal(keys.noise, (T,), dtype=arms.dtype)
        tr = Traces(query=-jnp.ones((T,), jnp.int32), batch_index=jnp.zeros((T,), jnp.int32),
                    dict_size=jnp.zeros((T,), jnp.int32), rounds=jnp.zeros((), jnp.int32),
                    overflow=jnp.asarray(False), wanted=jnp.zeros((2,), jnp.int32),
                    loop_iterations=jnp.zeros((T,), jnp.int32))
        return (state, tr), noise

    def init_all(keys, arms, params):
        return over_seeds(lambda k, p: init_one(k, arms, p), seed_axis)(keys, params)

    def chunk_all(keys, carry, noise, params, f, xi, recorded):
        return over_seeds(lambda k, c, n, p, x: chunk_one(c, k, n, p, f, x, recorded), seed_axis)(
            keys, carry, noise, params, xi)

    if n_devices == 1:
        return jax.jit(init_all), jax.jit(chunk_all)
    mesh = jax.make_mesh((n_devices,), ("elements",), axis_types=(jax.sharding.AxisType.Auto,),
                         devices=jax.devices()[:n_devices])
    el, rep = jax.sharding.PartitionSpec("elements"), jax.sharding.PartitionSpec()
    sh_el, sh_rep = jax.sharding.NamedSharding(mesh, el), jax.sharding.NamedSharding(mesh, rep)
    init_sm = jax.shard_map(init_all, mesh=mesh, in_specs=(el, rep, el), out_specs=el, check_vma=False)
    chunk_sm = jax.shard_map(chunk_all, mesh=mesh, in_specs=(el, el, el, el, rep, el, rep), out_specs=el,
                             check_vma=False)
    return (jax.jit(init_sm, in_shardings=(sh_el, sh_rep, sh_el), out_shardings=sh_el),
            jax.jit(chunk_sm, in_shardings=(sh_el, sh_el, sh_el, sh_el, sh_rep, sh_el, sh_rep), out_shardings=sh_el))


# ------------------------------------------------------------------------------------ the domain

class _Setup(NamedTuple):
    """A validated run: everything the program and the host loop need."""

    algorithm: str
    problem: Problem
    T: int
    seeds: list  # the seeds of one grid point
    points: list  # grid points [{name: value}], [{}] without a grid
    hypers: list  # resolved hyperparameters of each point
    xis: list  # noise level xi of each point
    kernel: tuple  # (name, kernel hyperparameters)
    dtype: str
    seed_axis: str
    rounds_per_call: int
    n_devices: int


def _element_args(s: _Setup):
    """(keys, arms, params, f, xi, recorded) stacked over the program's elements (grid points outer, seeds
    inner, then padding to a multiple of the device count: repeats of the last element, dropped at the end);
    f and the recorded repetitions (None without them) are shared."""
    jdt = jnp.float64 if s.dtype == "float64" else jnp.float32
    n_el = len(s.hypers) * len(s.seeds)
    n_pad = -(-n_el // s.n_devices) * s.n_devices - n_el

    def per_element(values):
        vals = [v for v in values for _ in s.seeds]
        return jnp.asarray(vals + vals[-1:] * n_pad, jdt)

    def hyper_values(key, default):
        return per_element([h.get(key, default) for h in s.hypers])

    kparams = s.kernel[1]
    params = Params(
        lam=hyper_values("lam", 1.0), qbar=per_element([oversampling(h) for h in s.hypers]),
        C=hyper_values("C", 1.0),
        F=hyper_values("F", 0.0), delta=hyper_values("delta", 0.5), xi=per_element(s.xis),
        eps=hyper_values("eps", 0.0),
        kernel=jax.tree.map(lambda v: jnp.broadcast_to(v, (n_el + n_pad,) + v.shape), kparams))
    el_seeds = [seed for _ in s.hypers for seed in s.seeds]
    keys = stacked_keys(el_seeds + el_seeds[-1:] * n_pad)
    p = s.problem
    recorded = None if p.samples is None else (jnp.asarray(p.samples, jdt), jnp.asarray(p.n_samples, jnp.int32))
    return keys, jnp.asarray(p.arms, jdt), params, jnp.asarray(p.f, jdt), params.xi, recorded


def _domain(s: _Setup, args) -> host.Domain:
    keys, arms, params, f, xi, recorded = args
    A, d = s.problem.arms.shape
    spec = ALGORITHMS[s.algorithm]

    def program(capacities):
        static = make_static(s.algorithm, s.hypers[0], A, d, s.T, s.kernel[0], capacities)
        cache_key = ("finite", spec.name, static, s.T, s.seed_axis, s.rounds_per_call, s.n_devices, keys.init.shape,
                     str(arms.dtype), jax.tree.structure(params))
        return compiled_program(cache_key, lambda: make_program(build(spec, static), s.T, s.seed_axis,
                                                                s.rounds_per_call, s.n_devices),
                                (keys, arms, params), (params, f, xi, recorded))

    def next_caps(carry, capacities):
        if not np.any(np.asarray(carry[1].overflow)):
            return None, []
        wanted = np.asarray(carry[1].wanted).max(axis=0)
        larger, messages = next_capacities(s.algorithm, wanted, capacities, A, s.T)
        if larger is None:  # would stop the overflowing seed for good
            raise RuntimeError(f"{s.algorithm}: a round overflowed (wanted {wanted.tolist()}) but no capacity of "
                               f"{capacities} can grow")
        return larger, messages

    label = f"{s.algorithm}/{s.problem.name}" + (f" grid of {len(s.points)}" if len(s.points) > 1 else "")
    return host.Domain(label=label, T=s.T, program=program, grow=padded_into, next_capacities=next_caps)


def _identity(s: _Setup) -> dict:
    name, kparams = s.kernel
    p = s.problem
    recorded = () if p.samples is None else (p.samples, p.n_samples)
    problem = {"name": p.name, "sha256": ckpt.digest(p.arms, p.f, *recorded), "noise_std": p.noise_std}
    return ckpt.run_identity(
        s.algorithm, problem, s.hypers, T=s.T, seeds=s.seeds, dtype=s.dtype, seed_axis=s.seed_axis,
        rounds_per_call=s.rounds_per_call, devices=s.n_devices,
        kernel={"name": name, **{k: np.asarray(v).tolist() for k, v in kparams.items()}})


GRID_KEYS = ("lam", "qbar", "rls_qbar", "C", "F", "delta", "eps")  # float hyperparameters that can be a grid axis


def grid_points(algorithm: str, grid: dict | None) -> list[dict]:
    """The Cartesian product of ``grid`` ({name: [values]}), validated; [{}] without a grid."""
    grid = {k: v for k, v in (grid or {}).items() if v is not None}
    defaults = ALGORITHMS[algorithm].defaults if algorithm in ALGORITHMS else {}
    for key, values in grid.items():
        if key not in GRID_KEYS or key not in defaults:
            allowed = [k for k in GRID_KEYS if k in defaults]
            raise ValueError(f"grid.{key} is not a grid axis of {algorithm!r}; allowed: {allowed}")
        if (isinstance(values, (str, bytes)) or not hasattr(values, "__len__") or len(values) == 0
                or any(v is None for v in values)):
            raise ValueError(f"grid.{key}={values!r} is invalid; it must be a non-empty list of numbers")
    return [dict(zip(grid, combo)) for combo in itertools.product(*grid.values())]


def _setup(algorithm, problem, T, grid, n_seeds, seed, params, kernel, dtype, seed_axis, rounds_per_call,
           devices) -> _Setup:
    """Everything validated (ValueError naming the parameter) before anything is compiled."""
    T, n_seeds, seed = check_run_args(T, n_seeds, seed, dtype, seed_axis, rounds_per_call)
    points = grid_points(algorithm, grid)
    n_dev = check_devices(devices)
    problem = check_problem(problem)
    hypers = [resolve_hyperparameters(algorithm, {**(params or {}), **pt}, T, problem.suggested) for pt in points]
    if dtype == "float64":
        jax.config.update("jax_enable_x64", True)  # entry point: float64 on by default (DESIGN §4)
    jdt = jnp.float64 if dtype == "float64" else jnp.float32
    kern = resolve_kernel(problem, kernel, problem.arms.shape[1], jdt)
    xis = [float(problem.noise_std) if problem.noise_std is not None else math.sqrt(h.get("lam", 1.0))
           for h in hypers]  # xi^2 = lam (PROTOCOLS §9)
    seed_axis = default_seed_axis() if seed_axis == "auto" else seed_axis
    if rounds_per_call is None:
        rounds_per_call = 4 if ALGORITHMS[algorithm].batched else max(1, min(64, T // 100))
    return _Setup(algorithm, problem, T, [seed + i for i in range(n_seeds)], points, hypers, xis, kern, dtype,
                  seed_axis, rounds_per_call, n_dev)


def run(algorithm: str, problem: Problem, *, T: int, n_seeds: int = 1, seed: int = 0, params: dict | None = None,
        kernel: dict | None = None, dtype: str = "float64", seed_axis: str = "auto", progress: bool = True,
        rounds_per_call: int | None = None, devices: int | None = None, checkpoint=None,
        checkpoint_every: int | None = None) -> RunResult:
    """Run ``n_seeds`` seeds (``seed``, ``seed + 1``, ...) of an algorithm for T pulls on a finite problem.

    Everything is validated before compilation (ValueError naming the parameter). ``params`` are the
    algorithm's hyperparameters (see ``ALGORITHMS[algorithm].defaults``); ``kernel`` overrides the
    problem's kernel, e.g. ``{"name": "rbf", "sigma2": 5.0}``. ``checkpoint`` (a file path) with
    ``checkpoint_every`` (rounds) saves the run's progress there and resumes a run of the same identity
    from it (module docstring); the file is left in place at the end.
    """
    return run_grid(algorithm, problem, T=T, n_seeds=n_seeds, seed=seed, params=params, kernel=kernel,
                    dtype=dtype, seed_axis=seed_axis, progress=progress, rounds_per_call=rounds_per_call,
                    devices=devices, checkpoint=checkpoint, checkpoint_every=checkpoint_every)[0][1]


def run_grid(algorithm: str, problem: Problem, *, T: int, grid: dict | None = None, n_seeds: int = 1, seed: int = 0,
             params: dict | None = None, kernel: dict | None = None, dtype: str = "float64", seed_axis: str = "auto",
             progress: bool = True, rounds_per_call: int | None = None, devices: int | None = None,
             checkpoint=None, checkpoint_every: int | None = None) -> list[tuple[dict, RunResult]]:
    """Like :func:`run`, for every point of a grid of float hyperparameters, in one compiled program.

    ``grid`` maps names of :data:`GRID_KEYS` to lists of values, e.g. ``{"qbar": [1, 2, 5], "C": [1.5, 2]}``;
    the grid points and the seeds share one program (the float hyperparameters are arguments, not
    constants), so a grid costs one compilation, and each point's result equals :func:`run` with those
    values. Returns ``[(point, result), ...]`` in the order of the Cartesian product. ``wall_time_s``,
    ``compile_time_s`` and ``round_time_s`` of every result are those of the whole grid program.
    ``devices``: how many local devices share the elements (None = all of the default backend); the
    element count is padded to a multiple of it and the results are those of one device.
    ``checkpoint``, ``checkpoint_every``: as in :func:`run`, for the whole grid program.
    """
    wall0 = time.perf_counter()
    s = _setup(algorithm, problem, T, grid, n_seeds, seed, params, kernel, dtype, seed_axis, rounds_per_call, devices)
    ckpt_path, ckpt_every = check_checkpoint(checkpoint, checkpoint_every)
    args = _element_args(s)
    checkpointing = None if ckpt_path is None else host.Checkpointing(ckpt_path, ckpt_every, _identity(s))
    domain = _domain(s, args)
    A = s.problem.arms.shape[0]
    driven = host.drive(domain, initial_capacities(algorithm, s.hypers[0], A, s.T), args[:3], args[2:],
                        Progress(progress, domain.label, s.T), checkpointing)
    caps = driven.capacities
    n = len(s.seeds)
    return [(pt, _collect(s, jax.tree.map(lambda x: x[g * n:(g + 1) * n], (driven.carry, driven.noise)), xi,
                          driven, wall0, {**h, "m_max_final": caps["m_max"], "u_max_final": caps["u_max"], "xi": xi}))
            for g, (pt, h, xi) in enumerate(zip(s.points, s.hypers, s.xis))]


def _rewards(problem: Problem, query, noise, xi) -> np.ndarray:
    """:func:`feedback` in float64 numpy on the host (Phi(x) = erfc(-x / sqrt 2) / 2)."""
    q = np.maximum(query, 0)
    if problem.samples is None:
        return np.asarray(problem.f)[q] + xi * noise
    u = 0.5 * np.vectorize(math.erfc)(-noise / math.sqrt(2.0))
    n = problem.n_samples[q]
    return problem.samples[q, np.minimum(np.floor(u * n).astype(np.int64), n - 1)]


def _collect(s: _Setup, part, xi, driven, wall0, hyper) -> RunResult:
    """The RunResult of one grid point's seeds (``part`` = (carry, noise) sliced to them). The rewards are
    recomputed here from the queries and the noise, in float64 (:func:`feedback`'s rule)."""
    (_, tr), noise = part
    query = np.asarray(tr.query)
    f = np.asarray(s.problem.f)
    f_star = float(f.max())
    traces = {"query": query, "reward": _rewards(s.problem, query, np.asarray(noise, np.float64), xi),
              "instant_regret": f_star - f[query], "batch_index": np.asarray(tr.batch_index),
              "dict_size": np.asarray(tr.dict_size), "loop_iterations": np.asarray(tr.loop_iterations)}
    return result(s.algorithm, s.problem.name, s.T, s.seeds, traces, np.asarray(tr.rounds), f_star - float(f.mean()),
                  driven, wall0, s.dtype, hyper)


__all__ = ["RunResult", "Traces", "CHOICES", "GRID_KEYS", "enable_compilation_cache", "grid_points",
           "initial_capacities", "make_program", "make_round", "make_static", "next_capacities",
           "resolve_hyperparameters", "resolve_kernel", "run", "run_grid", "seed_keys"]
