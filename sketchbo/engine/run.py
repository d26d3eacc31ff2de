"""``run`` and ``run_grid``: every algorithm of the registry, on either domain, through one engine
(docs/architecture.md#the-engine).

A run is validated whole (ValueError naming the parameter) before anything is compiled; the algorithm's
domain (``sketchbo.domains``: a finite candidate set or a box) prepares its program; the host loop
(``engine.host``) drives the chunks of rounds, progress, checkpoints and capacity growth. Seeds and the
points of a hyperparameter grid are the elements of one compiled program: seed i uses
``jax.random.key(seed + i)`` at every grid point, and every random draw is keyed by the step or round at
which it happens, never by how many elements run beside it, so each element's trajectory is that of a
single-seed run (vmapped or mapped, sharded over devices or not).
"""
from __future__ import annotations

import itertools
import os
import sys
import time
from typing import TYPE_CHECKING

import jax

from sketchbo.algorithms import get_spec
from sketchbo.certificates import collapse_warning
from sketchbo.engine import compile_cache, host
from sketchbo.engine.domain import RunSpec, get_domain
from sketchbo.engine.prepare import prepare
from sketchbo.engine.program import default_seed_axis
from sketchbo.engine.progress import Progress
from sketchbo.engine.result import RunResult
from sketchbo.engine.validate import check_checkpoint, check_devices, check_int, check_run_args, invalid_value
from sketchbo.spec import AlgorithmSpec, grid_values

if TYPE_CHECKING:
    from sketchbo.problems.base import Problem
    from sketchbo.problems.continuous import ContinuousProblem


def enable_x64() -> None:
    """Turn on JAX's 64-bit mode (the entry points' duty: float64 is the default dtype, and a float32 run keeps
    its float64 pieces, e.g. the Nyström factor's m x m algebra, whatever ran before it in the process)."""
    jax.config.update("jax_enable_x64", True)


def entry_settings() -> None:
    """What every entry point (``run``, ``run_grid``, ``Optimizer``) sets before it compiles: [`enable_x64`][] and, once
    per process, the compilation cache on disk
    ([`compile_cache.enable_default`][sketchbo.engine.compile_cache.enable_default])."""
    enable_x64()
    compile_cache.enable_default()


def usable_cores() -> int:
    """The number of CPU cores this process may run on (its affinity where the OS reports one)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def use_cpu_cores(n: int | None = None) -> int:
    """Give JAX's CPU backend ``n`` devices (default: one per core this process may use), so that a run on the CPU
    shards its seeds over the cores, each core running its share one after another (``lax.map``), instead of one core
    running them all (docs/benchmarks.md#cpu-cores). An entry point's duty, like [`enable_x64`][]: it must come before
    anything initialises JAX's backends, and it leaves a count the user set (``XLA_FLAGS``'
    ``--xla_force_host_platform_device_count`` or ``jax_num_cpu_devices``) alone.

    Returns:
        The CPU device count the process will have: ``n``, the user's count, or, once the backends are
        initialised, the count they have (then nothing changes).

    Examples:
        First thing in a script, before anything touches JAX's backends:

        ```python
        import sketchbo as sb

        sb.use_cpu_cores()            # e.g. 2 on a 2-core machine
        res = sb.run("bbkb", sb.make_problem("gp_sample", A=200, seed=0), T=60, n_seeds=2, progress=False)
        ```
    """
    from jax._src import xla_bridge  # noqa: PLC0415  (no public way to ask whether the backends are up)

    if n is not None:
        n = check_int("n", n, 1)
    if xla_bridge.backends_are_initialized():
        return len(jax.devices("cpu"))
    if "xla_force_host_platform_device_count" in os.environ.get("XLA_FLAGS", ""):
        return int(os.environ["XLA_FLAGS"].split("xla_force_host_platform_device_count=")[1].split()[0])
    if jax.config.jax_num_cpu_devices > 0:
        return int(jax.config.jax_num_cpu_devices)
    if n is None:
        n = usable_cores()
    jax.config.update("jax_num_cpu_devices", n)
    return n


def check_algorithm(algorithm) -> AlgorithmSpec:
    """The spec of ``algorithm`` (a spec, or a registered name; ValueError listing the names when unknown)."""
    return get_spec(algorithm)


def grid_points(algorithm: str | AlgorithmSpec, grid: dict | None) -> list[dict]:
    """The Cartesian product of ``grid`` ({name: [values]}), validated; [{}] without a grid.

    Args:
        algorithm: an [`AlgorithmSpec`][] or a registered name.
        grid: grid axes of the algorithm (``spec.grid_keys``) to lists of values.

    Returns:
        The grid points ``[{name: value}, ...]`` in the order of the Cartesian product.
    """
    grid = grid_values(get_spec(algorithm), grid)
    return [dict(zip(grid, combo)) for combo in itertools.product(*grid.values())]


def one_cpu_device(spec, devices, n_dev: int) -> int:
    """``n_dev``, or 1 for an algorithm whose element holds batched LAPACK calls (``spec.batched_lapack``) on
    the CPU: the devices' programs run at the same time on one thread pool, where such calls can hang
    (``engine.lapack_overlap``). ValueError when the user asked for more than one such device."""
    if not spec.batched_lapack or n_dev == 1 or jax.default_backend() != "cpu":
        return n_dev
    if devices is not None:
        raise invalid_value("devices", devices, f"{spec.name!r} runs batched LAPACK calls, which can hang XLA's "
                            "CPU runtime when several CPU devices run them at once; on the CPU it runs on one "
                            "device: pass devices=1 or leave devices unset")
    return 1


def check_run(algorithm, problem, *, T, grid=None, n_seeds=1, seed=0, params=None, kernel=None, dtype="float64",
              seed_axis="auto", rounds_per_call=None, devices=None, capacity=None) -> RunSpec:
    """Every argument of a run validated (ValueError naming the parameter), nothing compiled.

    Returns:
        The [`RunSpec`][] that the algorithm's domain prepares.
    """
    spec = get_spec(algorithm)
    dom = get_domain(spec.domain)
    T, n_seeds, seed = check_run_args(T, n_seeds, seed, dtype, seed_axis, rounds_per_call)
    problem = dom.check_space(spec.name, problem)
    points = grid_points(spec, grid)
    if params is not None and not isinstance(params, dict):
        raise invalid_value("params", params, "pass a dict of hyperparameters, e.g. {'lam': 0.2}")
    hypers = [spec.resolve({**(params or {}), **pt}, T, problem) for pt in points]
    n_dev = one_cpu_device(spec, devices, check_devices(devices, len(points) * n_seeds))
    dom.check_options(spec, kernel, capacity)
    seed_axis = default_seed_axis() if seed_axis == "auto" else seed_axis
    return RunSpec(spec.name, spec, problem, T, [seed + i for i in range(n_seeds)], points, hypers, dtype, seed_axis,
                   rounds_per_call, n_dev, kernel, capacity)


def run_grid(algorithm: str | AlgorithmSpec, problem: Problem | ContinuousProblem, *, T: int,
             grid: dict | None = None, n_seeds: int = 1, seed: int = 0, params: dict | None = None,
             kernel: dict | None = None, dtype: str = "float64", seed_axis: str = "auto", progress: bool = True,
             rounds_per_call: int | None = None, devices: int | None = None, capacity: int | None = None,
             checkpoint: str | os.PathLike | None = None, checkpoint_every: int | None = None
             ) -> list[tuple[dict, RunResult]]:
    """Run an algorithm at every point of a grid of float hyperparameters × ``n_seeds`` seeds, in one program.

    The grid points and the seeds are the elements of one compiled program (the floats are its arguments, not
    constants): one compilation, and each point's result equals [`run`][]'s.

    Args:
        algorithm: an [`AlgorithmSpec`][] or a registered name (``sketchbo.ALGORITHMS``).
        problem: a benchmark of the algorithm's domain (``sb.make_problem``, ``sb.box_problem``, a ``Problem``).
        T: evaluations per seed.
        grid: grid axes (``spec.grid_keys``) to lists of values, e.g. ``{"qbar": [1, 2, 5], "C": [1.5, 2]}``; None: one.
        n_seeds: seeds ``seed``, ``seed + 1``, ... at every point.
        seed: the first seed.
        params: the algorithm's other hyperparameters (``spec.defaults`` names them).
        kernel: finite domains: a kernel overriding the problem's, e.g. ``{"name": "rbf", "sigma2": 5.0}``.
        dtype: ``"float64"`` (default) or ``"float32"``.
        seed_axis: ``"vmap"``, ``"map"`` (one element after another) or ``"auto"`` (map on the CPU, vmap on
            accelerators): the same trajectories either way.
        progress: print a progress bar (a terminal) or lines (a log) on stderr.
        rounds_per_call: rounds per compiled chunk (None: the domain's default).
        devices: local devices sharing the elements (None: all of the default backend; padded to a multiple).
        capacity: box domains: the first sample-buffer capacity (None: the default; it grows as needed).
        checkpoint: a file the progress is saved to every ``checkpoint_every`` rounds; a run of the same identity
            resumes from it. The file is left in place.
        checkpoint_every: rounds between two checkpoint writes.

    Returns:
        ``[(point, RunResult), ...]`` in the order of the Cartesian product; ``wall_time_s``,
        ``compile_time_s`` and ``round_time_s`` of every result are those of the whole program.

    Examples:
        ```python
        import sketchbo as sb
        results = sb.run_grid("bbkb", sb.make_problem("gp_sample", A=200), T=60, grid={"qbar": [2.0, 4.0]}, n_seeds=2)
        ```
    """
    wall0 = time.perf_counter()
    spec = check_run(algorithm, problem, T=T, grid=grid, n_seeds=n_seeds, seed=seed, params=params, kernel=kernel,
                     dtype=dtype, seed_axis=seed_axis, rounds_per_call=rounds_per_call, devices=devices,
                     capacity=capacity)
    ckpt_path, ckpt_every = check_checkpoint(checkpoint, checkpoint_every)
    for warning in sorted({collapse_warning(h["qbar"]) for h in spec.hypers if "qbar" in h} - {None}):
        print(f"[{spec.algorithm}] {warning}", file=sys.stderr, flush=True)
    entry_settings()
    prepared = prepare(spec)
    checkpointing = None if ckpt_path is None else host.Checkpointing(ckpt_path, ckpt_every, prepared.identity())
    domain = prepared.domain
    driven = host.drive(domain, prepared.capacities, prepared.waves,
                        Progress(progress, domain.label, spec.T), checkpointing)
    n = len(spec.seeds)
    out = []
    for g, point in enumerate(spec.points):
        carry, noise = jax.tree.map(lambda x: x[g * n:(g + 1) * n], (driven.carry, driven.noise))
        out.append((point, prepared.collect(g, carry, noise, driven, wall0)))
    return out


def run(algorithm: str | AlgorithmSpec, problem: Problem | ContinuousProblem, *, T: int, n_seeds: int = 1,
        seed: int = 0, params: dict | None = None, kernel: dict | None = None, dtype: str = "float64",
        seed_axis: str = "auto", progress: bool = True, rounds_per_call: int | None = None, devices: int | None = None,
        capacity: int | None = None, checkpoint: str | os.PathLike | None = None,
        checkpoint_every: int | None = None) -> RunResult:
    """Run ``n_seeds`` seeds (``seed``, ``seed + 1``, ...) of an algorithm for T evaluations on a benchmark.

    Args:
        algorithm: an [`AlgorithmSpec`][] or a registered name (``sketchbo.ALGORITHMS``).
        problem: a benchmark of the algorithm's domain (see [`run_grid`][]).
        T: evaluations per seed.
        n_seeds: how many seeds run in the one program.
        seed: the first seed.
        params: the algorithm's hyperparameters (``spec.defaults`` names them).
        kernel: finite domains: a kernel overriding the problem's.
        dtype: ``"float64"`` or ``"float32"``.
        seed_axis: ``"vmap"``, ``"map"`` or ``"auto"``.
        progress: progress output on stderr.
        rounds_per_call: rounds per compiled chunk (None: the domain's default).
        devices: local devices that share the seeds (None: all).
        capacity: box domains: the first sample-buffer capacity.
        checkpoint: a file path to save progress to and resume from (with ``checkpoint_every``).
        checkpoint_every: rounds between two checkpoint writes.

    Returns:
        The [`RunResult`][] of the seeds.

    Examples:
        Two seeds of BBKB on a small GP sample, in one compiled program:

        ```python
        import sketchbo as sb

        problem = sb.make_problem("gp_sample", A=200, d=2, seed=0)
        res = sb.run("bbkb", problem, T=60, n_seeds=2, progress=False)
        res.cumulative_regret.shape, res.traces["reward"].shape   # (2,), (2, 60)
        res.regret_ratio                                           # R_T / R_T^unif per seed
        ```
    """
    return run_grid(algorithm, problem, T=T, n_seeds=n_seeds, seed=seed, params=params, kernel=kernel, dtype=dtype,
                    seed_axis=seed_axis, progress=progress, rounds_per_call=rounds_per_call, devices=devices,
                    capacity=capacity, checkpoint=checkpoint, checkpoint_every=checkpoint_every)[0][1]


__all__ = ["check_algorithm", "check_run", "enable_x64", "entry_settings", "grid_points", "run", "run_grid",
           "usable_cores", "use_cpu_cores"]
