"""The compiled round program of the finite domain (``sketchbo.domains.finite``): the traces, the feedback
rule, and the chunk of segments that the host loop calls (docs/architecture.md#rounds).

Papers: BKB (Calandriello et al., COLT 2019) and Batch-BKB (Calandriello et al., ICML 2020), Alg. 1: a batch
is selected without feedback (L3–8, ``engine.rounds.select_batch``), then fed back and the model rebuilt
(L9–16, ``engine.rounds.finish_batch``).
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from sketchbo.algorithms import ArmSet
from sketchbo.algorithms.common import any_seed, arm_feedback, seeds_vmapped
from sketchbo.contract import own_fields, reported
from sketchbo.engine.program import SeedKeys, jitted, over_seeds, seed_keys, traced_once, tree_where
from sketchbo.engine.rounds import capacity_request, finish_batch, select_batch


class Traces(NamedTuple):
    """Per-seed run buffers. A chunk reads them and writes its segments' selections in after its loop (no loop carries
    the T-sized fields).

    Attributes:
        query: `(T,)` int32 arm pulled at each step (-1 before it happens)
        batch_index: `(T,)` int32 round (batch) of each step
        dict_size: `(T,)` int32 dictionary size used by each selection
        rounds: `()` int32 rounds executed
        overflow: `()` bool, a resparsification wanted more than a capacity holds (the seed stops)
        wanted: `(2,)` int32 largest sizes wanted: [dictionary, unique pulled arms]
        loop_iterations: `(T,)` int32 fallback rounds of each in-batch step (0 where not reported)
        batch_start: `()` int32 step at which the open batch began
        info: {name: (T,)} the fields of the algorithm's step info beyond the core report (own_fields)
    """

    query: jax.Array
    batch_index: jax.Array
    dict_size: jax.Array
    rounds: jax.Array
    overflow: jax.Array
    wanted: jax.Array
    loop_iterations: jax.Array
    batch_start: jax.Array
    info: dict = {}


def feedback(queries, noise, f, xi, recorded):
    """Rewards of a batch (``queries`` (T,), -1 padding): f[q] + xi noise_t (docs/protocols.md#finite-arm-protocol), or with
    ``recorded = (samples (A, S), n_samples (A,))`` one recorded repetition of arm q, drawn uniformly by
    u_t = Phi(noise_t) (the standard normal draw turned uniform): samples[q, floor(u_t n_q)]."""
    q = jnp.maximum(queries, 0)
    if recorded is None:
        return f[q] + xi * noise
    samples, n_samples = recorded
    n = n_samples[q]
    j = jnp.minimum(jnp.floor(jax.scipy.special.ndtr(noise) * n).astype(jnp.int32), n - 1)
    return samples[q, j]


ROUND_BUFFER = 256
"""The most selections of one segment (the in-batch loop's records between two writes into the traces)."""


class StepRecords(NamedTuple):
    """The selections of one segment (part of one batch), written into the traces after the chunk's loop.

    Attributes:
        query: `(L,)` int32 arm of each selection
        dict_size: `(L,)` int32 dictionary size used by each selection
        loop_iterations: `(L,)` int32 fallback rounds of each selection
        n: `()` int32 selections recorded
        info: {name: (L,)} the step info's own fields of each selection
    """

    query: jax.Array
    dict_size: jax.Array
    loop_iterations: jax.Array
    n: jax.Array
    info: dict = {}


class Segment(NamedTuple):
    """What one segment of a chunk emits (stacked over the chunk's segments by its scan).

    Attributes:
        records: the segment's selections
        start: `()` int32 step of its first selection
        batch: `()` int32 round (batch) they belong to
    """

    records: StepRecords
    start: jax.Array
    batch: jax.Array


def empty_traces(T: int, info: dict | None = None) -> Traces:
    """The traces of a seed before its first step; ``info``: {name: ShapeDtypeStruct} of the step info's own
    fields (``contract.own_fields``)."""
    return Traces(info={k: jnp.zeros((T,), v.dtype) for k, v in (info or {}).items()},
                  query=-jnp.ones((T,), jnp.int32), batch_index=jnp.zeros((T,), jnp.int32),
                  dict_size=jnp.zeros((T,), jnp.int32), rounds=jnp.zeros((), jnp.int32), overflow=jnp.asarray(False),
                  wanted=jnp.zeros((2,), jnp.int32), loop_iterations=jnp.zeros((T,), jnp.int32),
                  batch_start=jnp.zeros((), jnp.int32))


def _written(tr: Traces, segs: Segment, T: int) -> Traces:
    """``tr`` with the selections of the chunk's segments written in (one scatter per trace, outside every
    loop: no loop carries a T-sized array)."""
    L = segs.records.query.shape[-1]
    j = jnp.arange(L)[None, :]
    pos = jnp.where(j < segs.records.n[:, None], segs.start[:, None] + j, T).reshape(-1)  # T: dropped

    def put(a, v):
        return a.at[pos].set(v.reshape(-1), mode="drop")

    return tr._replace(query=put(tr.query, segs.records.query), dict_size=put(tr.dict_size, segs.records.dict_size),
                       loop_iterations=put(tr.loop_iterations, segs.records.loop_iterations),
                       info={k: put(tr.info[k], segs.records.info[k]) for k in tr.info},
                       batch_index=put(tr.batch_index, jnp.broadcast_to(segs.batch[:, None], segs.records.query.shape)))


def make_chunk(alg, T: int, segments: int):
    """``chunk(carry, keys, noise, params, f, xi, recorded) -> carry`` for one seed of a finite problem, with
    ``carry = (state, Traces)``: up to ``segments`` segments, each the in-batch loop for at most
    L = min(T, ROUND_BUFFER) selections (``engine.rounds.select_batch``: one loop iteration per step, no loop
    nested in it) and, where that closed the batch, its feedback and the new model (``finish_batch``).

    The selections go into an L-sized buffer and are written into the (T,) traces after the chunk's scan,
    so that no while-loop carries a T-sized array: under ``vmap`` a while loop selects every carried array
    per seed at every iteration (Cadata, T = 10^4, 1000 seeds: 160 MB per in-batch step with the traces in
    the carry). A batch that the segment did not close (longer than L) ends the seed's chunk: the next chunk
    continues it and reads its earlier selections from the traces, which the chunk only reads. A seed whose
    model overflowed a capacity stops until the host loop has grown it."""
    L = min(T, ROUND_BUFFER)

    def empty_records(tr: Traces) -> StepRecords:  # NumPy constants: no eager computation before the program
        return StepRecords(np.zeros((L,), np.int32), np.zeros((L,), np.int32), np.zeros((L,), np.int32),
                           np.zeros((), np.int32), {k: np.zeros((L,), v.dtype) for k, v in tr.info.items()})

    def record(buf, t, q, info):
        del t
        own = own_fields(info)
        return StepRecords(buf.query.at[buf.n].set(q), buf.dict_size.at[buf.n].set(reported(info, "dict_size", 0)),
                           buf.loop_iterations.at[buf.n].set(reported(info, "loop_iterations", 0)), buf.n + 1,
                           {k: buf.info[k].at[buf.n].set(own[k]) for k in buf.info})

    def chunk(carry, keys: SeedKeys, noise, params, f, xi, recorded):
        state0, tr = carry
        pos = jnp.arange(T)
        empty = empty_records(tr)

        def finish(state, tr_s, start, buf):  # the batch's feedback (steps tr_s.batch_start, ..., state.t - 1)
            queries = jnp.where((pos >= tr_s.batch_start) & (pos < start), tr.query, -1)
            j = jnp.arange(L)
            queries = queries.at[jnp.where(j < buf.n, start + j, T)].set(buf.query, mode="drop")
            ys = feedback(queries, noise, f, xi, recorded)
            state, info = finish_batch(alg, keys.resparsify, params, state, arm_feedback(queries, ys))
            overflow, wanted = capacity_request(info)
            return state, tr_s._replace(rounds=tr_s.rounds + 1, overflow=tr_s.overflow | overflow,
                                        wanted=jnp.maximum(tr_s.wanted, wanted), batch_start=state.t)

        def segment(c):
            state, tr_s, _ = c
            start, batch = state.t, tr_s.rounds
            state, buf = select_batch(alg, keys.select, params, state, empty, record,
                                      lambda s, b: (s.t < T) & (b.n < L))
            closed = ~state.batch_open | (state.t >= T)
            # the feedback and resparsification only where a seed closed its batch: one flag for the vmapped
            # seeds (any_seed), so that a segment where every batch goes on skips them, then kept per seed
            # (without a seed axis the flag is the seed's own: nothing to select)
            def finish_closed(st, ts, start, buf):
                done = finish(st, ts, start, buf)
                return tree_where(closed, done, (st, ts)) if seeds_vmapped() else done

            state, tr_s = jax.lax.cond(any_seed(closed), finish_closed, lambda st, ts, *_: (st, ts),
                                       state, tr_s, start, buf)
            return (state, tr_s, ~closed), Segment(buf, start, batch)

        def idle(c):
            return c, Segment(empty, c[0].t, c[1].rounds)

        def step(c, _):
            state, tr_s, stalled = c
            return jax.lax.cond((state.t < T) & ~tr_s.overflow & ~stalled, segment, idle, c)

        small = tr._replace(query=None, batch_index=None, dict_size=None, loop_iterations=None, info=None)  # no (T,)
        (state, small, _), segs = jax.lax.scan(step, (state0, small, jnp.asarray(False)), None, length=segments)
        tr = _written(tr, segs, T)
        return state, tr._replace(rounds=small.rounds, overflow=small.overflow, wanted=small.wanted,
                                  batch_start=small.batch_start)

    return chunk


def make_program(alg, T: int, seed_axis: str, rounds_per_call: int, n_devices: int = 1):
    """(init_fn, chunk_fn) jitted over stacked elements (a seed at a grid point; ``engine.program.jitted``):
    ``init_fn(seeds, (params, xi), (arms, f, recorded))``,
    ``chunk_fn(seeds, carry, noise, (params, xi), (arms, f, recorded))``; ``params`` is the algorithm's pytree, ``xi``
    each element's noise level, and each element's keys derive from its seed (``engine.program.seed_keys``). A chunk is
    ``rounds_per_call`` segments ([`make_chunk`][])."""
    alg = alg._replace(select=traced_once(alg.select))  # init's shape query and the chunk share one trace
    chunk_one = make_chunk(alg, T, rounds_per_call)

    def init_one(keys: SeedKeys, params, arms):
        state = alg.init(keys.init, ArmSet(arms), params)
        noise = jax.random.normal(keys.noise, (T,), dtype=arms.dtype)
        info = own_fields(jax.eval_shape(alg.select, keys.select, state, params)[2])  # shapes only
        return (state, empty_traces(T, info)), noise

    def init_all(seeds, elements, shared):
        return over_seeds(lambda s, e: init_one(seed_keys(s), e[0], shared[0]), seed_axis)(seeds, elements)

    def chunk_all(seeds, carry, noise, elements, shared):
        _, f, recorded = shared
        return over_seeds(lambda s, c, n, e: chunk_one(c, seed_keys(s), n, e[0], f, e[1], recorded), seed_axis)(
            seeds, carry, noise, elements)

    return jitted(init_all, chunk_all, n_devices)


__all__ = ["ROUND_BUFFER", "Segment", "StepRecords", "Traces", "empty_traces", "feedback", "make_chunk", "make_program"]
