"""What a domain (finite candidate set, box) hands the engine (docs/architecture.md#domains).

The engine holds a :class:`Domain`: a NamedTuple of functions, one per spec domain (``AlgorithmSpec.domain``),
registered by ``sketchbo.domains`` (:func:`register_domain`), so that the engine never imports a domain. It
validates the arguments every run shares into a :class:`RunSpec`; the domain's ``setup`` turns it into a
:class:`Setup` (its setting, feedback, program and capacities), and the one skeleton
(``engine.prepare.prepare``) assembles the :class:`Prepared` run the host loop (``engine.host``) drives.
"""
from __future__ import annotations

from typing import Callable, NamedTuple, Protocol

from sketchbo.engine import host


class RunSpec(NamedTuple):
    """A run validated by the engine: everything the domain needs to prepare it."""

    algorithm: str  # the algorithm's name
    alg: object  # its sketchbo.spec.AlgorithmSpec
    problem: object  # the domain's benchmark, validated by the domain
    T: int
    seeds: list  # the seeds of one grid point
    points: list  # grid points [{name: value}], [{}] without a grid
    hypers: list  # resolved hyperparameters of each point (AlgorithmSpec.resolve)
    dtype: str  # "float64" | "float32"
    seed_axis: str  # "vmap" | "map"
    rounds_per_call: int | None  # None: the domain's default
    n_devices: int
    kernel: dict | None  # finite domains: a kernel override, or None for the problem's own
    capacity: int | None  # box domains: the first sample-buffer capacity, or None for the default


class Setup(NamedTuple):
    """What a domain makes of a run: the pieces that the one skeleton (``engine.prepare``) assembles."""

    setting: object  # sketchbo.spec.Setting: the run's shape, for the spec's static config and capacities
    contexts: list  # per grid point: the keyword context of AlgorithmSpec.make_params (xi, kernel)
    xis: list  # per grid point: the noise level of the feedback (an element's second entry)
    shared: tuple  # arrays every element reads (replicated), after (seeds, carry, noise, elements)
    rounds_per_call: int  # rounds per compiled chunk
    capacities: dict  # the first capacities
    make_program: Callable  # (algorithm's functions, static, capacities) -> (init_fn, chunk_fn), jitted
    cache_key: tuple  # what identifies the compiled program besides the spec, static and run layout
    next_capacities: Callable  # (carry, capacities) -> (larger capacities, [messages]) or (None, [])
    grow: Callable  # (carry, template carry of the larger program) -> the carry in the larger buffers
    problem_identity: Callable  # () -> the problem's part of the run identity (plain JSON)
    identity_extra: dict  # more keys of the run identity (kernel, first_capacity)
    collect: Callable  # (g, carry, noise, driven, wall0) -> RunResult of grid point g (sliced carry/noise)
    cpu_options: dict | None = None  # XLA compiler options of the programs on the CPU
    check: Callable = lambda carry: None  # raises on a chunk whose feedback is unusable
    waits: bool = False  # host.Loop.waits: a seed at a full buffer waits (True) or overflows (False)


class Prepared(NamedTuple):
    """A prepared run: the host loop's view and what the engine feeds it."""

    domain: host.Loop
    capacities: dict  # first static capacities
    init_args: tuple  # (seeds (E,) int64, elements, shared) of the init program
    chunk_args: tuple  # (elements, shared) after (seeds, carry, noise) in the chunk program
    identity: Callable  # () -> the run's identity (plain JSON) for checkpoints
    collect: Callable  # (g, carry, noise, driven, wall0) -> RunResult of grid point g (sliced carry/noise)


class CheckSpace(Protocol):
    def __call__(self, name: str, problem) -> object:
        """The validated benchmark of the domain (ValueError naming what is wrong)."""


class CheckOptions(Protocol):
    def __call__(self, spec, kernel, capacity) -> None:
        """ValueError for a run option the domain or the algorithm does not take (kernel, capacity)."""


class SetupFn(Protocol):
    def __call__(self, run: RunSpec, dtype) -> Setup:
        """The domain's pieces of a validated run (``dtype``: the JAX float dtype)."""


class Domain(NamedTuple):
    """A domain as the engine holds it: what differs between a finite candidate set and a box."""

    name: str  # the AlgorithmSpec.domain it serves: "arms" | "box"
    check_space: CheckSpace
    check_options: CheckOptions
    setup: SetupFn


DOMAINS: dict[str, Domain] = {}  # filled by sketchbo.domains (register_domain)


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
