"""What a domain (finite candidate set, box) hands the engine: the types between ``engine.run`` and
``sketchbo.domains`` (docs/architecture.md#domains).

The engine validates the arguments every run shares into a :class:`RunSpec`; the domain of the algorithm
(``sketchbo.domains.finite`` or ``.box``) turns it into a :class:`Prepared` run: the programs at given
capacities, the first capacities and how they grow, the per-element arguments, the run's identity for
checkpoints and how a grid point's result is collected. The host loop (``engine.host``) drives it.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

from sketchbo.engine import host


class RunSpec(NamedTuple):
    """A run validated by the engine: everything the domain needs to prepare it."""

    algorithm: str
    problem: object  # the domain's benchmark, validated by the domain
    T: int
    seeds: list  # the seeds of one grid point
    points: list  # grid points [{name: value}], [{}] without a grid
    hypers: list  # resolved hyperparameters of each point (the domain's resolve_hyperparameters)
    dtype: str  # "float64" | "float32"
    seed_axis: str  # "vmap" | "map"
    rounds_per_call: int | None  # None: the domain's default
    n_devices: int
    kernel: dict | None  # finite domains: a kernel override, or None for the problem's own
    capacity: int | None  # box domains: the first sample-buffer capacity, or None for the default


class Prepared(NamedTuple):
    """A prepared run: the host loop's domain and what the engine feeds it."""

    domain: host.Domain
    capacities: dict  # first static capacities
    init_args: tuple  # (seeds (E,) int64, element params, shared) of the init program
    chunk_args: tuple  # (element params, shared) after (seeds, carry, noise) in the chunk program
    identity: Callable  # () -> the run's identity (plain JSON) for checkpoints
    collect: Callable  # (g, carry, noise, driven, wall0) -> RunResult of grid point g (sliced carry/noise)
