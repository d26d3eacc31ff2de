"""The one skeleton of a run's preparation, for both domains (docs/architecture.md#the-engine): the dtype, the
elements (grid points x seeds: their seeds and stacked params), the compiled program at given capacities, the
host loop's view and the run's identity for checkpoints. What differs between the domains comes from the
domain's ``setup`` (``engine.domain.Setup``).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from sketchbo.algorithms import ALGORITHMS
from sketchbo.engine import checkpoint as ckpt
from sketchbo.engine import host
from sketchbo.engine.domain import Prepared, RunSpec, get_domain
from sketchbo.engine.program import (
    compiled_program, element_seeds, per_device_waves, split_waves, stack_elements, wave_bounds,
)


def builtin(spec) -> bool:
    """Whether ``spec`` is one of sketchbo's own finite-arm algorithms as the package defines it (not a copy, not a
    user's): its program is decided by its static configuration and sketchbo's source alone."""
    return ALGORITHMS.get(spec.name) is spec


def prepare(run: RunSpec) -> Prepared:
    """The run of ``run`` ready for the host loop (``engine.domain.Prepared``)."""
    alg = run.alg
    jdt = jnp.float64 if run.dtype == "float64" else jnp.float32
    setup = get_domain(alg.domain).setup(run, jdt)
    storable = alg.domain == "arms" and builtin(alg)  # engine.compile_cache: the program store's scope
    spread = per_device_waves(run.n_devices, run.seed_axis, storable)
    n_program = 1 if spread else run.n_devices  # the devices one program is partitioned over
    seeds = element_seeds(run.seeds, len(run.points), n_program)
    elements = stack_elements([(alg.make_params(h, jdt, **ctx), np.asarray(xi, jdt))
                               for h, ctx, xi in zip(run.hypers, setup.contexts, setup.xis)],
                              len(run.seeds), n_program)
    bounds = wave_bounds(seeds.shape[0], n_program, run.seed_axis)
    devices = jax.devices()[:run.n_devices] if spread else None  # wave i on devices[i % n_devices]
    shared = [jax.device_put(setup.shared, d) for d in devices] if spread else [setup.shared]
    waves = [host.Wave((s, e, shared[i % len(shared)]), (e, shared[i % len(shared)]))
             for i, (s, e) in enumerate(split_waves((seeds, elements), bounds, devices))]
    init_args, chunk_args = waves[0]  # every wave has the shapes of the first: one program

    def program(capacities):
        static = alg.static(run.hypers[0], setup.setting, capacities)
        key = (alg.domain, alg, static, *setup.cache_key, run.T, run.seed_axis, setup.rounds_per_call,
               run.n_devices, spread, seeds.shape, str(jdt.dtype), jax.tree.structure(elements))
        store = ((alg.name, repr(static), run.T, run.seed_axis, setup.rounds_per_call, n_program)
                 if storable else None)
        return compiled_program(key, lambda: setup.make_program(alg.build(static), static, capacities, n_program),
                                init_args, chunk_args, cpu_options=setup.cpu_options, n_devices=n_program,
                                store_parts=store, devices=devices)

    points = f" grid of {len(run.points)}" if len(run.points) > 1 else ""
    loop = host.Loop(label=f"{run.algorithm}/{run.problem.name}{points}", T=run.T, program=program,
                     grow=setup.grow, next_capacities=setup.next_capacities, check=setup.check, waits=setup.waits)

    def identity():
        return ckpt.run_identity(run.algorithm, setup.problem_identity(), run.hypers, T=run.T, seeds=run.seeds,
                                 dtype=run.dtype, seed_axis=run.seed_axis, rounds_per_call=setup.rounds_per_call,
                                 devices=run.n_devices, **setup.identity_extra)

    return Prepared(loop, setup.capacities, waves, identity, setup.collect)


__all__ = ["prepare"]
