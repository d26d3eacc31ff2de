"""The algorithm contract: the four pure functions every algorithm of both domains is, and what the engine
reads of them (docs/architecture.md#algorithm-contract).

Modelled on optax's ``GradientTransformation`` typed by Protocols: an algorithm is any value of [`Algorithm`][], made by
a factory from a hashable static config; nothing registers it. BBKB (Calandriello et al., ICML 2020), Alg. 1, is the
shape of a round: ``select`` until the batch closes (L3–8, no feedback), then ``update`` with the batch's [`Feedback`][]
and ``refit`` (L9–16: BBKB's resparsification, a box GP's hyperparameter fit and acquisition). Sequential algorithms are
batches of one.

What the engine reads, and nothing else:

* of a state, the fields of [`AlgorithmState`][]: the step ``t`` and ``batch_open``;
* of the info that ``select`` returns, the [`STEP_REPORT`][] fields the info has (any NamedTuple, or None); its other ()
  number fields are recorded in the traces as ``info_<name>`` ([`own_fields`][]);
* of the info that ``refit`` returns, the [`ROUND_REPORT`][] fields it has.

[`StepInfo`][] and [`RoundInfo`][] are the registry's infos; an algorithm may return its own.
"""
from __future__ import annotations

from typing import Any, NamedTuple, Protocol, runtime_checkable

import jax


@runtime_checkable
class AlgorithmState(Protocol):
    """The fields of a state that the engine reads (a NamedTuple of arrays whose shapes never change).

    Attributes:
        t: `()` int32 evaluations selected so far (the step of the next selection)
        batch_open: `()` bool the current batch takes another selection
    """

    t: jax.Array
    batch_open: jax.Array


class ArmSet(NamedTuple):
    """What an algorithm sees of a finite problem.

    Attributes:
        arms: `(A, d)` the candidate points.
    """

    arms: jax.Array


class BoxSet(NamedTuple):
    """What an algorithm sees of a continuous problem: its search box, [0, 1]^d (the problem maps it to its own bounds).

    Attributes:
        lower: `(d,)` zeros, the unit cube's lower corner.
        upper: `(d,)` ones, the unit cube's upper corner.
    """

    lower: jax.Array
    upper: jax.Array


class Feedback(NamedTuple):
    """The feedback of one finished batch (BBKB Alg. 1 L9–10), in the engine's padded layout: one entry per step of the
    trace, ``valid`` marking the batch's entries.

    Attributes:
        points: `(T,)` int32 arm indices (finite arms) | (T, d) points of [0, 1]^d (boxes)
        rewards: `(T,)` observed rewards y_s
        valid: `(T,)` bool: the entries that belong to the batch
    """

    points: jax.Array
    rewards: jax.Array
    valid: jax.Array


class InitFn(Protocol):
    """The type of an algorithm's ``init``: the state before the first selection."""

    def __call__(self, key: jax.Array, space: ArmSet | BoxSet, params: Any) -> AlgorithmState:
        """The state before the first selection (``key``: a typed key, never stored)."""


class SelectFn(Protocol):
    """The type of an algorithm's ``select``: one choice of the open batch."""

    def __call__(self, key: jax.Array, state: AlgorithmState, params: Any) -> tuple[jax.Array, AlgorithmState, Any]:
        """``(query, state, info)``: one choice of the open batch, without feedback (BBKB Alg. 1, L3–8). The
        query is an int32 arm index (finite arms) or a (d,) point of [0, 1]^d (boxes); ``state.t`` advances by
        one where the info does not report ``committed`` False."""


class UpdateFn(Protocol):
    """The type of an algorithm's ``update``: a finished batch's feedback folded into the state."""

    def __call__(self, state: AlgorithmState, feedback: Feedback, params: Any) -> AlgorithmState:
        """The state with a finished batch's rewards folded in (BBKB Alg. 1, L9–10)."""


class RefitFn(Protocol):
    """The type of an algorithm's ``refit``: the model for the next batch."""

    def __call__(self, key: jax.Array, state: AlgorithmState, params: Any) -> tuple[AlgorithmState, Any]:
        """``(state, info)``: the model rebuilt for the next batch, which it opens (BBKB Alg. 1, L11–16: the
        resparsification; on a box the hyperparameter fit and the acquisition)."""


class Algorithm(NamedTuple):
    """The contract every algorithm of both domains follows: four pure functions, jit- and vmap-able.

    Attributes:
        init: the state before the first selection
        select: one choice of the open batch, without feedback
        update: a finished batch's feedback folded in
        refit: the model for the next batch, which it opens
    """

    init: InitFn
    select: SelectFn
    update: UpdateFn
    refit: RefitFn


class StepInfo(NamedTuple):
    """What the registry's ``select`` functions report about one choice. A field an algorithm has no such quantity for
    is None (absent), never an invented zero.

    Attributes:
        dict_size: `()` int32 rows of the model the choice used (dictionary, posterior, subset)
        n_refresh: `()` int32 stale UCBs recomputed exactly (lazy UCB engines)
        loop_iterations: `()` int32 fallback iterations spent on the choice before it committed
        committed: `()` bool: the call chose a query. False: it only refreshed bounds, and the in-batch loop calls
            ``select`` again for the same step (one loop level per step, ``engine.rounds.select_batch``); None: always
            True
    """

    dict_size: jax.Array | None = None
    n_refresh: jax.Array | None = None
    loop_iterations: jax.Array | None = None
    committed: jax.Array | None = None


class RoundInfo(NamedTuple):
    """What the registry's ``refit`` functions report about the new model; absent fields are None.

    Attributes:
        dict_size: `()` int32 rows of the new model
        beta: `()` confidence width of the next batch
        dict_wanted: `()` int32 dictionary rows wanted (Nyström engines; > m_max: overflow)
        pulled_wanted: `()` int32 unique pulled arms to hold (> u_max: overflow)
        overflow: `()` bool a capacity was too small: the engine grows it and redoes the round
        rank: `()` int32 numerical rank of the dictionary's kernel matrix (docs/architecture.md#numerics)
        max_clamp: `()` largest negative variance clamped to zero
        lam_max: `()` S-BPE: largest variance of the pulled arms (Thm 3.5)
        n_active: `()` int32 S-BPE: arms not yet eliminated
        lml: `()` log marginal likelihood at the fitted hyperparameters (boxes)
        ucb: `()` UCB value of the next query (boxes)
        noise: `()` fitted noise variance (boxes)
        repeats: `()` int32 mini-META: repeated evaluations of the last point
        refine_gain: `()` gain of the acquisition's gradient refinement (boxes)
        on_face: `()` bool the next query (the best refined start) lies on a face of the box
        starts_on_face: `()` fraction of the refined starts that end on a face (boxes)
        acq_iterations: `()` int32 refinement iterations run (acquisition.maximize)
        mse: `()` bnn_ucb: the ensemble's mean training loss (it has no likelihood)
    """

    dict_size: jax.Array | None = None
    beta: jax.Array | None = None
    dict_wanted: jax.Array | None = None
    pulled_wanted: jax.Array | None = None
    overflow: jax.Array | None = None
    rank: jax.Array | None = None
    max_clamp: jax.Array | None = None
    lam_max: jax.Array | None = None
    n_active: jax.Array | None = None
    lml: jax.Array | None = None
    ucb: jax.Array | None = None
    noise: jax.Array | None = None
    repeats: jax.Array | None = None
    refine_gain: jax.Array | None = None
    on_face: jax.Array | None = None
    starts_on_face: jax.Array | None = None
    acq_iterations: jax.Array | None = None
    mse: jax.Array | None = None


# The core report: the info fields the engine reads where an info has them (each optional)
STEP_REPORT = ("committed", "dict_size", "loop_iterations")
"""The fields of a step's info that the engine reads where the info has them (each optional)."""
ROUND_REPORT = ("overflow", "dict_wanted", "pulled_wanted", "ucb")
"""The fields of a round's info that the engine reads where the info has them (each optional)."""


def own_fields(info) -> dict:
    """The fields of a step's info beyond the core report ([`STEP_REPORT`][]) that the engine records in the traces, one
    (T,) trace ``info_<name>`` each: those that are present (not None) and () numbers. Trace-time."""
    fields = getattr(info, "_asdict", lambda: {})()
    return {k: v for k, v in fields.items() if k not in STEP_REPORT and v is not None
            and getattr(v, "shape", None) == () and getattr(v, "dtype", None) is not None}


def reported(info, name: str, default):
    """``info.name`` where the info reports it (a field that exists and is not None), else ``default``.
    Trace-time; ``info`` may be any NamedTuple or None."""
    value = getattr(info, name, None)
    return default if value is None else value


__all__ = ["Algorithm", "AlgorithmState", "ArmSet", "BoxSet", "Feedback", "InitFn", "ROUND_REPORT", "RefitFn",
           "RoundInfo", "STEP_REPORT", "SelectFn", "StepInfo", "UpdateFn", "own_fields", "reported"]
