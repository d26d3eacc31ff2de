"""The compiled program of a run: seed keys, the seed axis (vmap or a sequential map), the program's elements,
the chunk of rounds, device sharding, the cache of compiled programs, and growth of capacity buffers
(docs/architecture.md#the-engine, docs/architecture.md#capacity-growth).

A domain (``sketchbo.domains.finite`` for finite arm sets, ``sketchbo.domains.box`` for boxes) gives one round for one
element (a seed at a grid point): ``round_(carry, keys, ...) -> carry``, where ``carry = (state, traces)`` and
``traces.rounds`` counts the rounds done; [`chunk_of_rounds`][] makes a chunk of ``rounds_per_call`` rounds (a round is
skipped once the domain's ``active(carry)`` is false) and [`jitted`][] jits it over the stacked elements, sharded over
devices where there are several.
"""
from __future__ import annotations

import concurrent.futures
import contextlib
import os
import time
import warnings
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from sketchbo.algorithms.common import SEED_AXIS
from sketchbo.engine import compile_cache, replicas
from sketchbo.engine.lapack_overlap import LapackOverlapWarning, batched_lapack_calls, overlapping_lapack_calls


class SeedKeys(NamedTuple):
    """The typed keys of one seed, one per purpose (derived inside the program, never stored).

    Attributes:
        init: typed key of the initial state (x_1)
        noise: typed key of the observation noise
        select: folded with the step t
        resparsify: folded with the step t at the batch end
    """

    init: jax.Array
    noise: jax.Array
    select: jax.Array
    resparsify: jax.Array


def seed_keys(seed: int) -> SeedKeys:
    """The keys of one seed: the same whatever runs beside it (every draw folds in the step or round)."""
    k_init, k_noise, k_select, k_resp = jax.random.split(jax.random.key(seed), 4)
    return SeedKeys(k_init, k_noise, k_select, k_resp)


def default_seed_axis() -> str:
    return "map" if jax.default_backend() == "cpu" else "vmap"


def over_seeds(fn, seed_axis: str):
    """Apply a per-seed function ``fn(per_seed_args...)`` to stacked seeds (vmap or sequential map)."""
    if seed_axis == "vmap":  # named, so that a step can branch on all seeds at once (common.any_seed)
        return jax.vmap(fn, axis_name=SEED_AXIS)
    return lambda *args: jax.lax.map(lambda a: fn(*a), args)


def tree_where(pred, new, old):
    """``new`` where the scalar ``pred`` holds, else ``old`` (leaf by leaf)."""
    return jax.tree.map(lambda a, b: jnp.where(pred, a, b), new, old)


def chunk_of_rounds(round_, active, rounds_per_call: int):
    """``rounds_per_call`` rounds of one seed; a round runs only while ``active(carry)`` holds."""

    def maybe_round(carry, *args):
        return jax.lax.cond(active(carry), lambda c: round_(c, *args), lambda c: c, carry)

    def chunk(carry, *args):
        return jax.lax.fori_loop(0, rounds_per_call, lambda _, c: maybe_round(c, *args), carry)

    return chunk


def stack_elements(points: list, n_seeds: int, n_devices: int):
    """The program's elements of per-grid-point pytrees (of arrays): points outer, each repeated for its
    ``n_seeds`` seeds, stacked on a leading axis and padded to a multiple of ``n_devices`` by repeats of the
    last element (whose results are dropped). Stacked on the host, moved to the device once per leaf."""
    n = len(points) * n_seeds
    n_pad = -(-n // n_devices) * n_devices - n
    index = np.concatenate([np.repeat(np.arange(len(points)), n_seeds), np.full(n_pad, len(points) - 1)])
    # device_put, not jnp.asarray, which compiles a small program per leaf shape
    return jax.tree.map(lambda *v: jax.device_put(np.stack([np.asarray(a) for a in v])[index]), *points)


def element_seeds(seeds: list, n_points: int, n_devices: int) -> jax.Array:
    """The seeds of the program's elements (int64, one per element): grid points outer, seeds inner (seed i of every
    point uses the same keys), padded as [`stack_elements`][]. The programs derive each element's keys from its seed
    ([`seed_keys`][]) themselves: no program of its own, and no keys held by the host."""
    el_seeds = [seed for _ in range(n_points) for seed in seeds]
    n_pad = -(-len(el_seeds) // n_devices) * n_devices - len(el_seeds)
    return jax.device_put(np.asarray(el_seeds + el_seeds[-1:] * n_pad, np.int64))


def wave_bounds(n_elements: int, n_devices: int, seed_axis: str) -> list[tuple[int, int]]:
    """The waves of a run's elements, ``[(lo, hi), ...]``, for a program partitioned over ``n_devices`` devices (1
    where each wave runs on one device, [`per_device_waves`][]): the program is compiled for one wave and the host
    loop calls it once per wave, every wave's call started before it waits for the first. Where a one-device program
    maps over elements one after another (``seed_axis="map"``), a wave is one element: XLA then compiles no loop over
    the elements, whose slicing and writing back of every carried array were 70 of the chunk's kernels and 0.26 s of
    its compilation (BBKB on Cadata, T = 10^4: 1.94 s for two elements against 1.68 s for one), and the device runs
    the waves one after another as it ran the loop's iterations (five seeds: the same execution time). Otherwise one
    wave holds every element: under a vmap, and over several devices, where waves of one element per device through
    the partitioned program compiled 0.15-0.2 s less but ran 0.3-0.6 s longer than each device's loop (its calls
    return only after most of their work; ten seeds on two CPU devices, 3 alternations)."""
    if seed_axis != "map" or n_devices > 1:
        return [(0, n_elements)]
    return [(i, i + 1) for i in range(n_elements)]


def per_device_waves(n_devices: int, seed_axis: str, storable: bool) -> bool:
    """Whether the elements of a run over ``n_devices`` devices run as waves of one element, each on one device, all
    with one compiled one-device program that the other devices load (``engine.replicas``): on several CPU devices
    mapping over their elements (``seed_axis="map"``), for a program of the program store (``storable``), whose
    serialized executable a later process loads from the store and copies to every device. Another program may come
    from JAX's persistent cache, whose executables do not serialize whole again, so it is partitioned instead. BBKB on
    Cadata, T = 10^4, ten seeds on the 2-core CPU's two devices (4 alternations, 2026-12-05): compilation 1.76 s, of
    which about 0.17 s loads the copy onto the second device, against 1.96 s for the partitioned program; execution
    8.30 s against 8.39 s."""
    return n_devices > 1 and seed_axis == "map" and storable and jax.default_backend() == "cpu"


def split_waves(tree, bounds: list[tuple[int, int]], devices: list | None = None) -> list:
    """``tree`` (arrays with a leading element axis) as one tree per wave of ``bounds`` ([`wave_bounds`][]), wave i
    on ``devices[i % len(devices)]`` (None: the default device); one wave: ``[tree]`` unchanged. Split on the
    host: no program is compiled for it."""
    if len(bounds) == 1:
        return [tree]
    host = jax.tree.map(np.asarray, tree)
    devices = devices or [None]
    return [jax.tree.map(lambda a, lo=lo, hi=hi, d=devices[i % len(devices)]: jax.device_put(a[lo:hi], d), host)
            for i, (lo, hi) in enumerate(bounds)]


def jitted(init_all, chunk_all, n_devices: int = 1):
    """``(init_fn, chunk_fn)`` jitted: ``init_all(seeds, params, shared)`` and ``chunk_all(seeds, carry, noise,
    params, shared)``, where ``shared`` is replicated and everything else has one leading entry per element.

    With ``n_devices > 1`` the elements are sharded over a 1-D device mesh (``shard_map``; the element count
    is a multiple of ``n_devices``) and each device runs its share: every element's computation is the
    one-device computation. The chunk does not donate its carry: the host loop keeps the last completed chunk
    to continue from after a capacity overflow."""
    if n_devices == 1:
        return jax.jit(init_all), jax.jit(chunk_all)
    mesh = jax.make_mesh((n_devices,), ("elements",), axis_types=(jax.sharding.AxisType.Auto,),
                         devices=jax.devices()[:n_devices])
    el, rep = jax.sharding.PartitionSpec("elements"), jax.sharding.PartitionSpec()
    sh_el, sh_rep = jax.sharding.NamedSharding(mesh, el), jax.sharding.NamedSharding(mesh, rep)
    init_sm = jax.shard_map(init_all, mesh=mesh, in_specs=(el, el, rep), out_specs=el, check_vma=False)
    chunk_sm = jax.shard_map(chunk_all, mesh=mesh, in_specs=(el, el, el, el, rep), out_specs=el, check_vma=False)
    return (jax.jit(init_sm, in_shardings=(sh_el, sh_el, sh_rep), out_shardings=sh_el),
            jax.jit(chunk_sm, in_shardings=(sh_el, sh_el, sh_el, sh_el, sh_rep), out_shardings=sh_el))


_PROGRAMS: dict = {}  # compiled (init, chunk) executables, reused by later runs with the same static config
_MAX_PROGRAMS = 32


def compiled_program(cache_key, make_fns, init_args, chunk_rest, cpu_options: dict | None = None,
                     n_devices: int = 1, store_parts: tuple | None = None, devices: list | None = None):
    """``(init_c, chunk_c, compile_s)`` of the program ``make_fns() -> (init_fn, chunk_fn)``, compiled on first use of
    ``cache_key`` and reused after (compile_s = 0). ``init_fn(*init_args) -> (carry, noise)``;
    ``chunk_fn(init_args[0], carry, noise, *chunk_rest)`` (the first argument is the elements' seeds). ``cpu_options``:
    XLA compiler options of both programs on the CPU backend (e.g. [`FAST_CPU_COMPILE`][]). ``n_devices``: the devices
    the program is sharded over (for [`check_lapack_overlap`][]). ``store_parts``: what identifies the program for
    the on-disk program store (``engine.compile_cache``; None: not stored), from which a later process loads each of
    the two programs without tracing it (compile_s is then the loading time). Each is stored on its own, and only
    when this process compiled it: one that JAX's persistent cache served is not ([`compile_fresh`][]), while the
    other still is (e.g. BBKB with another number of rounds per call: the same init program, a chunk of its own).
    ``devices``: CPU devices that each run this one-device program (its arguments on the first of them): both
    programs then come as ``engine.replicas.OnDevices``, compiled once and loaded onto the other devices."""
    if cache_key in _PROGRAMS:
        return (*_PROGRAMS[cache_key], 0.0)
    tc = time.perf_counter()
    keys = store_keys(store_parts, cpu_options, init_args, chunk_rest)
    stored = tuple(load_one(k, n_devices) for k in keys)
    programs, entries = tuple(s and s[0] for s in stored), tuple(s and s[1] for s in stored)
    if None in stored:
        programs, fresh = compile_both(*make_fns(), init_args, chunk_rest, cpu_options, have=programs)
        entries = tuple(e if e is not None else (compile_cache.serialized(c) if new and (key or devices) else None)
                        for key, e, c, new in zip(keys, entries, programs, fresh))
        for key, s, compiled, entry in zip(keys, stored, programs, entries):
            if s is None:
                check_lapack_overlap(compiled, len(devices or ()) or n_devices)
                if key is not None and entry is not None:
                    compile_cache.save(key, (entry,))
    if devices:
        programs = replicas.spread(programs, entries, devices, lambda d: compile_both(
            *make_fns(), *jax.device_put((init_args, chunk_rest), d), cpu_options)[0])
    compile_s = time.perf_counter() - tc
    if len(_PROGRAMS) >= _MAX_PROGRAMS:
        _PROGRAMS.pop(next(iter(_PROGRAMS)))
    _PROGRAMS[cache_key] = programs
    return (*programs, compile_s)


def load_one(key, n_devices: int):
    """``(program, entry)`` stored under ``key``, the program loaded on the first ``n_devices`` devices and its
    serialized entry; or None (no key, not stored, or an entry that does not hold one program)."""
    found = None if key is None else compile_cache.load(key, jax.devices()[:n_devices])
    return (found[0][0], found[1][0]) if found is not None and len(found[0]) == 1 else None


def store_keys(store_parts, cpu_options, init_args, chunk_rest) -> tuple:
    """The program store's keys ``(init, chunk)`` of a program (``(None, None)`` where ``store_parts`` is None): the
    init program's from its arguments, the chunk's from the init's arguments (which decide its carry) and its own."""
    if store_parts is None:
        return None, None
    parts = (store_parts, sorted((cpu_options or {}).items()))
    return (compile_cache.program_key((parts, "init"), init_args),
            compile_cache.program_key((parts, "chunk"), (init_args, chunk_rest)))


def compile_both(init_fn, chunk_fn, init_args, chunk_rest, cpu_options: dict | None = None, have=(None, None)):
    """``((init_c, chunk_c), (init_fresh, chunk_fresh))``: both programs compiled, the chunk's XLA compilation (the
    longer one) in a second thread from as soon as it is lowered, while this thread lowers and compiles the init
    program (JAX's tracing holds the GIL, XLA's compilation mostly releases it), so that init's compilation overlaps
    the chunk's (docs/benchmarks.md#compile-time). ``have``: either program already at hand (loaded from the store;
    None: compile it), returned as given. ``*_fresh``: compiled by XLA in this process ([`compile_fresh`][])."""
    init_have, chunk_have = have
    with lean_locations():
        traced = init_fn.trace(*init_args)  # the chunk's carry comes from init's outputs
        if chunk_have is None:
            carry, noise = traced.out_info
            chunk_lowered = chunk_fn.lower(init_args[0], carry, noise, *chunk_rest)
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="sketchbo-compile") as pool:
        chunk = None if chunk_have is not None else pool.submit(compile_fresh, chunk_lowered, cpu_options)
        with lean_locations():
            init_lowered = None if init_have is not None else traced.lower()
        init_c, init_fresh = (init_have, False) if init_have is not None else compile_fresh(init_lowered, cpu_options)
        chunk_c, chunk_fresh = (chunk_have, False) if chunk is None else chunk.result()
    return (init_c, chunk_c), (init_fresh, chunk_fresh)


def traced_once(select):
    """``select`` jitted, so that its jaxpr traced once (by the init program's shape query of its step info) is the
    one the chunk's in-batch loop uses: JAX caches a jitted function's trace by its argument types. XLA inlines the
    call; the trajectories are the same to the last bit (tests/test_compile_cache.py)."""
    return jax.jit(select)


SOURCE_LOCATIONS_ENV = "SKETCHBO_SOURCE_LOCATIONS"
"""Set to 1 to keep JAX's Python tracebacks on the operations of a run's programs ([`lean_locations`][])."""


def lean_locations():
    """A context (in this thread) in which JAX lowers without the Python traceback of each operation (its source
    locations, up to 100 frames each by default, which become stack-frame tables in the XLA program): debug
    information only, the compiled code is the same, while the program XLA reads is a third smaller (BBKB's
    chunk on Cadata) and compiles a little faster (docs/changelog.md). ``SKETCHBO_SOURCE_LOCATIONS=1`` keeps them (e.g. for a profile that
    names source lines); a JAX without these options changes nothing."""
    stack = contextlib.ExitStack()
    if os.environ.get(SOURCE_LOCATIONS_ENV, "").strip() in ("1", "true", "yes"):
        return stack
    from jax._src import config as jax_config  # noqa: PLC0415  (the options' thread-local context managers)

    for name, value in (("traceback_in_locations_limit", 0), ("include_full_tracebacks_in_locations", False)):
        option = getattr(jax_config, name, None)
        if callable(option):
            stack.enter_context(option(value))
    return stack


def compile_fresh(lowered, cpu_options: dict | None = None):
    """``(compiled, fresh)``: [`compile_lowered`][], and whether XLA compiled it here rather than JAX's persistent
    cache serving it (counted in this thread: ``compile_cache.jax_cache_hits``). Only a fresh executable
    serializes whole for the program store."""
    hits = compile_cache.jax_cache_hits()
    compiled = compile_lowered(lowered, cpu_options)
    return compiled, compile_cache.jax_cache_hits() == hits


# XLA's CPU backend with its elemental fusion emitters instead of the MLIR ones (its default), LLVM at optimisation
# level 1, four parallel code-generation parts, and without the tree-reduction rewriter (which splits long reductions
# into reduce-windows of 32 entries, a kernel each: 25 in BBKB's Cadata chunk, a fifth of its LLVM code, for reductions
# of at most a few ten thousand entries): BBKB's Cadata program compiles faster with the same execution time and the
# same trajectories to the last bit (docs/benchmarks.md#cpu-fusion-emitters, record bench_compile_cadata). The
# finite domain compiles with them; the box domain does not (its trajectories change in the last bits, and its
# committed results were made without them).
FAST_CPU_COMPILE = {"xla_cpu_use_fusion_emitters": False, "xla_backend_optimization_level": 1,
                    "xla_cpu_parallel_codegen_split_count": 4, "xla_disable_hlo_passes": "tree_reduction_rewriter"}
"""XLA CPU options of the finite domain's programs: the elemental fusion emitters, LLVM level 1, four code-generation
parts and no tree-reduction rewriting (faster compilation, the same execution time and trajectories)."""


def compile_lowered(lowered, cpu_options: dict | None = None):
    """``lowered.compile()``; on the CPU backend with the XLA compiler options ``cpu_options`` (an XLA without
    one of them compiles with its defaults; an option that ``XLA_FLAGS`` sets keeps the flag's value)."""
    flags = os.environ.get("XLA_FLAGS", "")
    cpu_options = {k: v for k, v in (cpu_options or {}).items() if f"--{k}=" not in flags}  # the user's flags win
    if not cpu_options or jax.default_backend() != "cpu":
        return lowered.compile()
    try:
        return lowered.compile(compiler_options=cpu_options)
    except jax.errors.JaxRuntimeError as err:
        if "No such compile option" not in str(err):
            raise
        return lowered.compile()


def check_lapack_overlap(compiled, n_devices: int = 1) -> None:
    """Warn ([`LapackOverlapWarning`][]) when a program compiled for the CPU has batched LAPACK calls that may run
    concurrently: two in one program that no data dependence orders, or, sharded over ``n_devices`` > 1 CPU devices
    (whose programs run at the same time), any one. On a machine with few cores such a program can hang
    (``engine.lapack_overlap``)."""
    if jax.default_backend() != "cpu":
        return
    text = compiled.as_text()
    pairs = overlapping_lapack_calls(text)
    if pairs:
        warnings.warn(
            f"this program has {len(pairs)} pair(s) of batched LAPACK calls that XLA's CPU runtime may run at the "
            f"same time (e.g. {pairs[0][1]} and {pairs[0][2]}); on a machine with few cores it can hang "
            "(sketchbo.engine.lapack_overlap). Where the seeds run with seed_axis='vmap', seed_axis='map' avoids "
            "batching them.",
            LapackOverlapWarning, stacklevel=3)
    calls = batched_lapack_calls(text) if n_devices > 1 else []
    if calls:
        warnings.warn(
            f"this program, sharded over {n_devices} CPU devices that run it at the same time, has batched LAPACK "
            f"calls ({calls[0]}); on a machine with few cores they can hang (sketchbo.engine.lapack_overlap): "
            "run it on one device (devices=1).",
            LapackOverlapWarning, stacklevel=3)


def enable_compilation_cache(path) -> None:
    """Keep compiled programs at ``path`` (None: nowhere), shared by every process that uses it, so that the jobs of a
    sweep compile each distinct program once ([`compile_cache.configure`][sketchbo.engine.compile_cache.configure])."""
    compile_cache.configure(path)


def padded_into(tree, template):
    """``tree`` written into the leading corner of ``template`` (same structure, leaves at least as large).

    Capacity growth (docs/architecture.md#capacity-growth): a state made at smaller capacities, embedded in the initial state of the
    larger ones, is the state of the larger program (the slots beyond the old capacity are empty, with the
    values an empty slot has). Leaves of equal shape are taken from ``tree``.
    """

    def put(ref, leaf):
        if ref.shape == leaf.shape:
            return jnp.asarray(leaf, ref.dtype)
        if ref.ndim != leaf.ndim or any(a < b for a, b in zip(ref.shape, leaf.shape)):
            raise ValueError(f"cannot grow a state array of shape {leaf.shape} into {ref.shape}")
        return jnp.asarray(ref).at[tuple(slice(0, n) for n in leaf.shape)].set(leaf)

    return jax.tree.map(put, template, tree)  # (ref, leaf) pairs
