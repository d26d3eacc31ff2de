"""The two halves of a round, shared by both domains' rounds and by the ask/tell API (docs/architecture.md#rounds).

BBKB (Calandriello et al., ICML 2020), Alg. 1: a batch is selected without feedback (L3–8: ``select`` until
the batch rule closes it), then its feedback arrives and the model is rebuilt (L9–16: ``update``, then
``refit``). Sequential algorithms are batches of one.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

from sketchbo.contract import Feedback, reported


def select_batch(alg, key, params, state, acc, record, room):
    """The in-batch loop (BBKB Alg. 1, L3–8): ``select`` until the batch rule closes the batch or
    ``room(state, acc)`` fails; ``record(acc, t, query, info)`` keeps each selection. ``key`` is folded
    with the step t. Returns ``(state, acc)``. Shared by the rounds of both domains and by ``ask``.

    One loop level per step: an iteration is one ``select`` call, which either decides the step or, where
    it reports ``StepInfo.committed`` False (the lazy argmax of ``sparse_ucb`` still stale after its refresh
    round), leaves the step to the next iteration; only decided steps are recorded. No loop is nested in
    the step, so that on an accelerator, where each while-loop iteration is a host round trip, a step costs
    one."""

    def body(c):
        st, a = c
        q, new, info = alg.select(jax.random.fold_in(key, st.t), st, params)
        kept = record(a, st.t, q, info)
        committed = reported(info, "committed", None)
        if committed is not None:
            kept = jax.tree.map(lambda r, old: jnp.where(committed, r, old), kept, a)
        return new, kept

    return jax.lax.while_loop(lambda c: c[0].batch_open & room(*c), body, (state, acc))


def finish_batch(alg, key, params, state, feedback: Feedback):
    """The feedback of a finished batch and the new model (BBKB Alg. 1, L9–16): ``update`` with the batch's
    [`Feedback`][], then ``refit`` keyed by the step after the batch. Returns ``(state, info)`` of ``refit``. Shared by
    both rounds and by ``tell``."""
    state = alg.update(state, feedback, params)
    return alg.refit(jax.random.fold_in(key, state.t), state, params)


def capacity_request(info):
    """``(overflow, wanted)`` of a finished round: whether a capacity was too small, and (2,) int32 the
    dictionary rows and unique pulled arms the new model wants. An algorithm without a capacity reports
    neither: no overflow, nothing wanted."""
    overflow = jnp.asarray(reported(info, "overflow", False))
    wanted = jnp.stack([jnp.asarray(reported(info, "dict_wanted", 0)), jnp.asarray(reported(info, "pulled_wanted", 0))])
    return overflow, wanted.astype(jnp.int32)
