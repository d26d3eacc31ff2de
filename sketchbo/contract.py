"""The algorithm contract: the four pure functions every algorithm of both domains is, and what the engine
reads of them (docs/architecture.md#algorithm-contract).

Modelled on optax's ``GradientTransformation`` typed by Protocols: an algorithm is any value of
:class:`Algorithm`, made by a factory from a hashable static config; nothing registers it. BBKB (Calandriello
et al., ICML 2020), Alg. 1, is the shape of a round: ``select`` until the batch closes (L3–8, no feedback),
then ``update`` with the batch's :class:`Feedback` and ``refit`` (L9–16: BBKB's resparsification, a box GP's
hyperparameter fit and acquisition). Sequential algorithms are batches of one.

What the engine reads, and nothing else:

* of a state, the fields of :class:`AlgorithmState`: the step ``t`` and ``batch_open``;
* of the info that ``select`` returns, the :data:`STEP_REPORT` fields the info has (any NamedTuple, or None);
  its other () number fields are recorded in the traces as ``info_<name>`` (:func:`own_fields`);
* of the info that ``refit`` returns, the :data:`ROUND_REPORT` fields it has.

:class:`StepInfo` and :class:`RoundInfo` are the registry's infos; an algorithm may return its own.
"""
from __future__ import annotations

from typing import Any, NamedTuple, Protocol, runtime_checkable

import jax


@runtime_checkable
class AlgorithmState(Protocol):
    """The fields of a state that the engine reads (a NamedTuple of arrays whose shapes never change)."""

    t: jax.Array  # () int32 evaluations selected so far (the step of the next selection)
    batch_open: jax.Array  # () bool the current batch takes another selection


class ArmSet(NamedTuple):
    """What an algorithm sees of a finite problem."""

    arms: jax.Array  # (A, d)


class BoxSet(NamedTuple):
    """What an algorithm sees of a continuous problem: its search box, [0, 1]^d (the problem maps it to its
    own bounds)."""

    lower: jax.Array  # (d,) zeros
    upper: jax.Array  # (d,) ones


class Feedback(NamedTuple):
    """The feedback of one finished batch (BBKB Alg. 1 L9–10), in the engine's padded layout: one entry per
    step of the trace, ``valid`` marking the batch's entries."""

    points: jax.Array  # (T,) int32 arm indices (finite arms) | (T, d) points of [0, 1]^d (boxes)
    rewards: jax.Array  # (T,) observed rewards y_s
    valid: jax.Array  # (T,) bool: the entries that belong to the batch


class InitFn(Protocol):
    def __call__(self, key: jax.Array, space: ArmSet | BoxSet, params: Any) -> AlgorithmState:
        """The state before the first selection (``key``: a typed key, never stored)."""


class SelectFn(Protocol):
    def __call__(self, key: jax.Array, state: AlgorithmState, params: Any) -> tuple[jax.Array, AlgorithmState, Any]:
        """``(query, state, info)``: one choice of the open batch, without feedback (BBKB Alg. 1, L3–8). The
        query is an int32 arm index (finite arms) or a (d,) point of [0, 1]^d (boxes); ``state.t`` advances by
        one where the info does not report ``committed`` False."""


class UpdateFn(Protocol):
    def __call__(self, state: AlgorithmState, feedback: Feedback, params: Any) -> AlgorithmState:
        """The state with a finished batch's rewards folded in (BBKB Alg. 1, L9–10)."""


class RefitFn(Protocol):
    def __call__(self, key: jax.Array, state: AlgorithmState, params: Any) -> tuple[AlgorithmState, Any]:
        """``(state, info)``: the model rebuilt for the next batch, which it opens (BBKB Alg. 1, L11–16: the
        resparsification; on a box the hyperparameter fit and the acquisition)."""


class Algorithm(NamedTuple):
    """The contract every algorithm of both domains follows: four pure functions, jit- and vmap-able."""

    init: InitFn
    select: SelectFn
    update: UpdateFn
    refit: RefitFn


class StepInfo(NamedTuple):
    """What the registry's ``select`` functions report about one choice. A field an algorithm has no such
    quantity for is None (absent), never an invented zero."""

    dict_size: jax.Array | None = None  # () int32 rows of the model the choice used (dictionary, posterior, subset)
    n_refresh: jax.Array | None = None  # () int32 stale UCBs recomputed exactly (lazy UCB engines)
    loop_iterations: jax.Array | None = None  # () int32 fallback iterations spent on the choice before it committed
    # () bool: the call chose a query. False: it only refreshed bounds, and the in-batch loop calls ``select``
    # again for the same step (one loop level per step, ``engine.rounds.select_batch``); None: always True
    committed: jax.Array | None = None


class RoundInfo(NamedTuple):
    """What the registry's ``refit`` functions report about the new model; absent fields are None."""

    dict_size: jax.Array | None = None  # () int32 rows of the new model
    beta: jax.Array | None = None  # () confidence width of the next batch
    dict_wanted: jax.Array | None = None  # () int32 dictionary rows wanted (Nyström engines; > m_max: overflow)
    pulled_wanted: jax.Array | None = None  # () int32 unique pulled arms to hold (> u_max: overflow)
    overflow: jax.Array | None = None  # () bool a capacity was too small: the engine grows it and redoes the round
    # () int32 numerical rank of the dictionary's kernel matrix (docs/architecture.md#numerics)
    rank: jax.Array | None = None
    max_clamp: jax.Array | None = None  # () largest negative variance clamped to zero
    lam_max: jax.Array | None = None  # () S-BPE: largest variance of the pulled arms (Thm 3.5)
    n_active: jax.Array | None = None  # () int32 S-BPE: arms not yet eliminated
    lml: jax.Array | None = None  # () log marginal likelihood at the fitted hyperparameters (boxes)
    ucb: jax.Array | None = None  # () UCB value of the next query (boxes)
    noise: jax.Array | None = None  # () fitted noise variance (boxes)
    repeats: jax.Array | None = None  # () int32 mini-META: repeated evaluations of the last point
    refine_gain: jax.Array | None = None  # () gain of the acquisition's gradient refinement (boxes)
    on_face: jax.Array | None = None  # () bool the next query (the best refined start) lies on a face of the box
    starts_on_face: jax.Array | None = None  # () fraction of the refined starts that end on a face (boxes)
    acq_iterations: jax.Array | None = None  # () int32 refinement iterations run (acquisition.maximize)
    mse: jax.Array | None = None  # () bnn_ucb: the ensemble's mean training loss (it has no likelihood)


# The core report: the info fields the engine reads where an info has them (each optional)
STEP_REPORT = ("committed", "dict_size", "loop_iterations")
ROUND_REPORT = ("overflow", "dict_wanted", "pulled_wanted", "ucb")


def own_fields(info) -> dict:
    """The fields of a step's info beyond the core report (:data:`STEP_REPORT`) that the engine records in the
    traces, one (T,) trace ``info_<name>`` each: those that are present (not None) and () numbers. Trace-time."""
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
