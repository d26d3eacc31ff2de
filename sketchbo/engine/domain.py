"""What a domain (finite candidate set, box) hands the engine (docs/architecture.md#domains).

The engine holds a [`Domain`][]: a NamedTuple of functions, one per spec domain (``AlgorithmSpec.domain``), registered
by ``sketchbo.domains`` ([`register_domain`][]), so that the engine never imports a domain. It validates the arguments
every run shares into a [`RunSpec`][]; the domain's ``setup`` turns it into a [`Setup`][] (its setting, feedback,
program and capacities), and the one skeleton (``engine.prepare.prepare``) assembles the [`Prepared`][] run the host
loop (``engine.host``) drives.
"""
from __future__ import annotations

from typing import Callable, NamedTuple, Protocol

from sketchbo.engine import host


class RunSpec(NamedTuple):
    """A run validated by the engine: everything the domain needs to prepare it.

    Attributes:
        algorithm: the algorithm's name
        alg: its sketchbo.spec.AlgorithmSpec
        problem: the domain's benchmark, validated by the domain
        T: evaluations per seed
        seeds: the seeds of one grid point
        points: grid points [{name: value}], [{}] without a grid
        hypers: resolved hyperparameters of each point (AlgorithmSpec.resolve)
        dtype: "float64" | "float32"
        seed_axis: "vmap" | "map"
        rounds_per_call: None: the domain's default
        n_devices: local devices the elements are sharded over
        kernel: finite domains: a kernel override, or None for the problem's own
        capacity: box domains: the first sample-buffer capacity, or None for the default
    """

    algorithm: str
    alg: object
    problem: object
    T: int
    seeds: list
    points: list
    hypers: list
    dtype: str
    seed_axis: str
    rounds_per_call: int | None
    n_devices: int
    kernel: dict | None
    capacity: int | None


class Setup(NamedTuple):
    """What a domain makes of a run: the pieces that the one skeleton (``engine.prepare``) assembles.

    Attributes:
        setting: sketchbo.spec.Setting: the run's shape, for the spec's static config and capacities
        contexts: per grid point: the keyword context of AlgorithmSpec.make_params (xi, kernel)
        xis: per grid point: the noise level of the feedback (an element's second entry)
        shared: arrays every element reads (replicated), after (seeds, carry, noise, elements)
        rounds_per_call: rounds per compiled chunk
        capacities: the first capacities
        make_program: (algorithm's functions, static, capacities, n_devices) -> (init_fn, chunk_fn), jitted over
            ``n_devices`` devices (``engine.program.jitted``)
        cache_key: what identifies the compiled program besides the spec, static and run layout
        next_capacities: `(carry, capacities)` -> (larger capacities, [messages]) or (None, [])
        grow: (carry, template carry of the larger program) -> the carry in the larger buffers
        problem_identity: `()` -> the problem's part of the run identity (plain JSON)
        identity_extra: more keys of the run identity (kernel, first_capacity)
        collect: `(g, carry, noise, driven, wall0)` -> RunResult of grid point g (sliced carry/noise)
        cpu_options: XLA compiler options of the programs on the CPU
        check: raises on a chunk whose feedback is unusable
        waits: host.Loop.waits: a seed at a full buffer waits (True) or overflows (False)
    """

    setting: object
    contexts: list
    xis: list
    shared: tuple
    rounds_per_call: int
    capacities: dict
    make_program: Callable
    cache_key: tuple
    next_capacities: Callable
    grow: Callable
    problem_identity: Callable
    identity_extra: dict
    collect: Callable
    cpu_options: dict | None = None
    check: Callable = lambda carry: None
    waits: bool = False


class Prepared(NamedTuple):
    """A prepared run: the host loop's view and what the engine feeds it.

    Attributes:
        domain: the host loop's view of the run (``engine.host.Loop``)
        capacities: first static capacities
        waves: the elements' waves (``engine.host.Wave``: each wave's init and chunk arguments; one wave unless the
            elements run one after another on each device, ``engine.program.wave_bounds``)
        identity: `()` -> the run's identity (plain JSON) for checkpoints
        collect: `(g, carry, noise, driven, wall0)` -> RunResult of grid point g (sliced carry/noise)
    """

    domain: host.Loop
    capacities: dict
    waves: list
    identity: Callable
    collect: Callable


class CheckSpace(Protocol):
    """The type of a domain's ``check_space``: the benchmark of a run, validated."""

    def __call__(self, name: str, problem) -> object:
        """The validated benchmark of the domain (ValueError naming what is wrong)."""


class CheckOptions(Protocol):
    """The type of a domain's ``check_options``: the run options that the domain takes, checked."""

    def __call__(self, spec, kernel, capacity) -> None:
        """ValueError for a run option the domain or the algorithm does not take (kernel, capacity)."""


class SetupFn(Protocol):
    """The type of a domain's ``setup``: its pieces of a validated run."""

    def __call__(self, run: RunSpec, dtype) -> Setup:
        """The domain's pieces of a validated run (``dtype``: the JAX float dtype)."""


class Domain(NamedTuple):
    """A domain as the engine holds it: what differs between a finite candidate set and a box.

    Attributes:
        name: the AlgorithmSpec.domain it serves: "arms" | "box"
        check_space: validates a run's benchmark ([`CheckSpace`][])
        check_options: rejects the run options the domain does not take ([`CheckOptions`][])
        setup: makes the domain's pieces of a validated run ([`SetupFn`][])
    """

    name: str
    check_space: CheckSpace
    check_options: CheckOptions
    setup: SetupFn


DOMAINS: dict[str, Domain] = {}
"""The engine's domains by spec domain, filled by ``sketchbo.domains`` ([`register_domain`][])."""


def register_domain(domain: Domain) -> Domain:
    """Make ``domain`` the engine's domain for specs of ``domain.name``."""
    DOMAINS[domain.name] = domain
    return domain


def get_domain(name: str) -> Domain:
    """The registered domain of a spec's ``domain`` (ValueError listing the known ones)."""
    if name not in DOMAINS:
        raise ValueError(f"no domain {name!r} is registered; known: {sorted(DOMAINS)} (import sketchbo first)")
    return DOMAINS[name]


__all__ = ["DOMAINS", "Domain", "Prepared", "RunSpec", "Setup", "get_domain", "register_domain"]
