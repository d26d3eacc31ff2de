"""An algorithm described to the engine: [`AlgorithmSpec`][] (docs/tutorials/new-algorithm.md).

A spec is a value, like optax's ``GradientTransformation``: ``sb.run(spec, ...)``, ``sb.run_grid``,
``sb.Optimizer`` and ``sketchbo.testing.check_algorithm`` take it as it is, and ``sb.register(spec)`` gives it
a name that the CLI and the registry know. It says which domain the algorithm runs on, how its factory makes
the four functions of ``sketchbo.contract.Algorithm`` from a hashable static config, and what its
hyperparameters are: their defaults (the one source: the CLI's configs are checked against them), which are
floats stacked as its ``params`` pytree (grid axes, one compiled program for seeds x grid points), and how
they are checked. Everything else a user's spec leaves at its default; the registry's own algorithms also set
``hooks`` (their shared static configs, params and capacities).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable, Mapping, NamedTuple

import numpy as np

from sketchbo.checks import check_float, invalid_value, with_defaults

DOMAIN_NAMES = ("arms", "box")
"""The domains of a spec: ``arms`` (a finite candidate set) and ``box`` (the box $[0, 1]^d$)."""


class Setting(NamedTuple):
    """What a static config may depend on besides the hyperparameters: the run's shape.

    Attributes:
        T: the horizon: evaluations per seed.
        d: the dimension of a query point.
        n_arms: on a finite arm set the number of arms A; on a box None.
        kernel: on a finite arm set the kernel family of the problem (or of the run's override); on a box None.
    """

    T: int
    d: int
    n_arms: int | None
    kernel: str | None


class StaticConfig(NamedTuple):
    """The static config a user's factory receives (hashable): the run's shape and the hyperparameters that are not
    params (strings, ints, flags: [`option`][]). A factory may use any of them as Python values.

    Attributes:
        T: the horizon: evaluations per seed.
        d: the dimension of a query point.
        n_arms: on a finite arm set the number of arms A; on a box None.
        kernel: on a finite arm set the kernel family; on a box None.
        options: ``((name, value), ...)`` sorted by name: the hyperparameters that are not params, lists as tuples.
    """

    T: int
    d: int
    n_arms: int | None
    kernel: str | None
    options: tuple

    def option(self, name: str, default=None):
        """The value of the non-params hyperparameter ``name`` (``default`` where it has none)."""
        return dict(self.options).get(name, default)


class Hooks(NamedTuple):
    """How a spec's hyperparameters become a program where the defaults do not fit (the registry's algorithms, whose
    static configs, params and capacities are shared by families of them). Each is optional.

    Attributes:
        resolve: ``(hyper, T, problem) -> hyper``: the hyperparameters checked and completed (the defaults already
            merged with the user's values).
        static: ``(hyper, Setting, capacities) -> static``: the hashable static config of the factory.
        params: ``(hyper, dtype, context) -> params``: the params pytree of `()` arrays; ``context`` holds ``xi`` and
            ``kernel``.
        capacities: ``(hyper, Setting) -> {name: int}``: the first capacities.
        grow: ``(wanted, capacities, Setting) -> (larger | None, messages)``: the growth of the capacities when a round
            reports an overflow.
        buffer_rows: boxes: ``state -> ()`` int32, the rows of the sample buffer in use (for growth).
        ask_wanted: finite ask/tell: ``(queries so far) -> (2,)``, the capacity needs to check before a tell.
    """

    resolve: Callable | None = None
    static: Callable | None = None
    params: Callable | None = None
    capacities: Callable | None = None
    grow: Callable | None = None
    buffer_rows: Callable | None = None
    ask_wanted: Callable | None = None


def _freeze(value):
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    return value


def _spec_error(name, what: str) -> ValueError:
    return ValueError(f"AlgorithmSpec {name!r}: {what}")


@dataclasses.dataclass(frozen=True, eq=False)
class AlgorithmSpec:
    """One algorithm as the engine runs it, of either domain.

    Args:
        name: the algorithm's name (results, progress, checkpoints; the registry's key once registered).
        domain: ``"arms"`` (a finite candidate set: queries are arm indices) or ``"box"`` (queries are points
            of [0, 1]^d, mapped to the problem's box).
        factory: ``static -> Algorithm`` (``sketchbo.contract``); ``static`` is a [`StaticConfig`][] unless
            ``hooks.static`` makes another.
        defaults: every hyperparameter the algorithm takes, with its default (the one source).
        params: a NamedTuple class whose fields are float hyperparameters: each run gets
            ``params(**{field: () array})``, stacked over seeds and grid points. None: no params (``()``).
        grid_keys: the hyperparameters a grid may sweep (default: the fields of ``params``).
        check: ``(hyper, T) -> hyper or None``: the user's own validation of the resolved hyperparameters,
            raising ValueError naming the parameter (``algorithm.<name>``) where one is wrong.
        description: one line for listings.
        batched: batches longer than one evaluation (the finite domain's default rounds per call).
        batched_lapack: an element's program holds batched LAPACK calls: it runs on one CPU device
            (``engine.lapack_overlap``).
        merged_rows: boxes: a batch's evaluations go into one row of the data (mini-META), for the row trace.
        hooks: the registry's own hooks ([`Hooks`][]); a user's spec leaves them.

    Examples:
        Uniformly random arms, the smallest algorithm there is (no hyperparameters, batches of one):

        ```python
        from typing import NamedTuple

        import jax
        import jax.numpy as jnp
        import sketchbo as sb

        class State(NamedTuple):
            t: jax.Array            # () int32: evaluations selected so far
            batch_open: jax.Array   # () bool: batches of one

        def make_uniform(static: sb.StaticConfig) -> sb.Algorithm:
            def init(key, space, params):
                return State(jnp.zeros((), jnp.int32), jnp.asarray(True))

            def select(key, state, params):
                arm = jax.random.randint(key, (), 0, static.n_arms, dtype=jnp.int32)
                return arm, state._replace(t=state.t + 1, batch_open=jnp.asarray(False)), None

            def update(state, feedback, params):
                return state                  # uniform sampling learns nothing

            def refit(key, state, params):
                return state._replace(batch_open=jnp.asarray(True)), None

            return sb.Algorithm(init, select, update, refit)

        uniform = sb.AlgorithmSpec(name="uniform", domain="arms", factory=make_uniform, defaults={})
        res = sb.run(uniform, sb.make_problem("gp_sample", A=200, seed=0), T=30, progress=False)
        ```

        One with float hyperparameters (a grid axis) is walked through in docs/tutorials/new-algorithm.md.
    """

    name: str
    domain: str
    factory: Callable[[Any], Any]
    defaults: Mapping[str, Any]
    params: type | None = None
    grid_keys: tuple | None = None
    check: Callable | None = None
    description: str = ""
    batched: bool = False
    batched_lapack: bool = False
    merged_rows: bool = False
    hooks: Hooks = Hooks()

    def __post_init__(self):
        validate_spec(self)
        if self.grid_keys is None:
            object.__setattr__(self, "grid_keys", tuple(getattr(self.params, "_fields", ())))
        object.__setattr__(self, "defaults", dict(self.defaults))
        object.__setattr__(self, "grid_keys", tuple(self.grid_keys))

    # ------------------------------------------------------------------------------------ hyperparameters

    def resolve(self, params: dict | None, T: int, problem=None) -> dict:
        """The defaults completed by ``params`` and checked (ValueError naming the parameter)."""
        hyper = with_defaults(self.name, self.defaults, params)
        if self.hooks.resolve is not None:
            hyper = self.hooks.resolve(hyper, T, problem)
        else:
            for key in getattr(self.params, "_fields", ()):
                hyper[key] = check_float(f"algorithm.{key}", hyper[key], math.isfinite, "it must be a finite number")
        if self.check is not None:
            checked = self.check(dict(hyper), T)
            hyper = hyper if checked is None else dict(checked)
        return hyper

    def static(self, hyper: dict, setting: Setting, capacities: dict):
        """The hashable static config of the factory ([`StaticConfig`][] by default)."""
        if self.hooks.static is not None:
            return self.hooks.static(hyper, setting, capacities)
        floats = set(getattr(self.params, "_fields", ()))
        options = tuple(sorted((k, _freeze(v)) for k, v in hyper.items() if k not in floats))
        return StaticConfig(*setting, options=options)

    def make_params(self, hyper: dict, dtype, **context):
        """The params pytree of one grid point: () NumPy arrays of ``dtype`` (stacked by the engine)."""
        if self.hooks.params is not None:
            return self.hooks.params(hyper, dtype, context)
        if self.params is None:
            return ()
        return self.params(**{k: np.asarray(hyper[k], dtype) for k in self.params._fields})

    def first_capacities(self, hyper: dict, setting: Setting) -> dict:
        """The first static capacities ({}: the algorithm has none)."""
        return {} if self.hooks.capacities is None else self.hooks.capacities(hyper, setting)

    def next_capacities(self, wanted, capacities: dict, setting: Setting):
        """``(larger, messages)`` where a round wanted more than ``capacities`` hold; ``(None, [])`` else."""
        return (None, []) if self.hooks.grow is None else self.hooks.grow(wanted, capacities, setting)

    def build(self, static):
        """The algorithm's four functions for a static config (``factory(static)``)."""
        return self.factory(static)


def validate_spec(spec: AlgorithmSpec) -> None:
    """ValueError naming what is wrong with a spec (before anything compiles)."""
    name = spec.name
    if not isinstance(name, str) or not name.isidentifier():
        raise _spec_error(name, "name must be a Python identifier (letters, digits, _), e.g. 'ucb1'")
    if spec.domain not in DOMAIN_NAMES:
        raise _spec_error(name, f"domain={spec.domain!r} is invalid; choose one of {list(DOMAIN_NAMES)}")
    if not callable(spec.factory):
        raise _spec_error(name, f"factory={spec.factory!r} is not callable; pass a function static -> Algorithm")
    if not isinstance(spec.defaults, Mapping) or not all(isinstance(k, str) for k in spec.defaults):
        raise _spec_error(name, "defaults must be a dict of every hyperparameter name to its default")
    fields = getattr(spec.params, "_fields", None)
    if spec.params is not None and (not isinstance(spec.params, type) or fields is None):
        raise _spec_error(name, f"params={spec.params!r} must be a NamedTuple class of float hyperparameters")
    missing = [f for f in fields or () if f not in spec.defaults]
    if missing and spec.hooks.params is None:  # hooks.params fills the fields that are not hyperparameters
        raise _spec_error(name, f"params field(s) {missing} have no default; add them to defaults")
    if spec.grid_keys is not None:
        if isinstance(spec.grid_keys, str) or not all(isinstance(k, str) for k in spec.grid_keys):
            raise _spec_error(name, f"grid_keys={spec.grid_keys!r} must be a tuple of hyperparameter names")
        extra = [k for k in spec.grid_keys if k not in spec.defaults]
        if extra:
            raise _spec_error(name, f"grid_keys {extra} are not hyperparameters (defaults)")
        if spec.hooks.params is None and any(k not in (fields or ()) for k in spec.grid_keys):
            raise _spec_error(name, f"grid_keys must be fields of params {list(fields or ())}: a grid axis is a "
                              "float stacked with the seeds")
    if spec.check is not None and not callable(spec.check):
        raise _spec_error(name, f"check={spec.check!r} is not callable")
    if not isinstance(spec.hooks, Hooks):
        raise _spec_error(name, "hooks must be a sketchbo.spec.Hooks")


def grid_values(spec: AlgorithmSpec, grid: dict | None) -> dict:
    """``grid`` ({name: [values]}, None values dropped) checked against the spec's grid axes."""
    grid = {k: v for k, v in (grid or {}).items() if v is not None}
    for key, values in grid.items():
        if key not in spec.grid_keys:
            raise ValueError(f"grid.{key} is not a grid axis of {spec.name!r}; allowed: {list(spec.grid_keys)}")
        if (isinstance(values, (str, bytes)) or not hasattr(values, "__len__") or len(values) == 0
                or any(v is None for v in values)):
            raise invalid_value(f"grid.{key}", values, "it must be a non-empty list of numbers")
    return grid


__all__ = ["AlgorithmSpec", "DOMAIN_NAMES", "Hooks", "Setting", "StaticConfig", "grid_values", "validate_spec"]
