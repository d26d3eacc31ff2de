"""The compiled round program of the box domain (``sketchbo.domains.box``): the traces and the chunk of rounds
that the host loop calls (docs/architecture.md#rounds), each query evaluated by the problem's JAX objective as
it is selected.

Paper: GSSBO (Wei et al. 2025, Alg. 1): a round = the selections of one batch (``engine.rounds.select_batch``),
its feedback and one ``refit`` (``engine.rounds.finish_batch``).
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from sketchbo.contract import BoxSet, Feedback, own_fields, reported
from sketchbo.engine.program import SeedKeys, chunk_of_rounds, jitted, over_seeds, seed_keys, traced_once
from sketchbo.engine.rounds import finish_batch, select_batch
from sketchbo.problems.continuous import ContinuousProblem, value


class BOTraces(NamedTuple):
    """Per-seed run buffers carried through the rounds.

    Attributes:
        x: `(T, d)` query of each step in [0, 1]^d
        reward: `(T,)` observed reward -f(x) + xi N(0, 1)
        regret: `(T,)` f(x) - f_min (noiseless)
        row: `(T,)` int32 row of D the query went into
        batch_index: `(T,)` int32 round of each step
        dict_size: `(T,)` int32 rows of the model used to choose the query
        ucb: `(T,)` UCB value of the query under the model that chose it (RoundInfo.ucb); NaN: initial design
        planned_ucb: `()` UCB value of the query the last round planned (NaN before the first fit)
        rounds: `()` int32 rounds executed
        info: {name: (T,)} the fields of the algorithm's step info beyond the core report (own_fields)
    """

    x: jax.Array
    reward: jax.Array
    regret: jax.Array
    row: jax.Array
    batch_index: jax.Array
    dict_size: jax.Array
    ucb: jax.Array
    planned_ucb: jax.Array
    rounds: jax.Array
    info: dict = {}


class Buffer(NamedTuple):
    """The sample buffer of a box algorithm that grows it (``AlgorithmSpec.hooks.buffer_rows``).

    Attributes:
        rows: state -> () int32 rows in use
        n0: rows the initial design adds
        cap: rows it holds at this capacity
    """

    rows: object
    n0: int
    cap: int


def make_round(alg, problem: ContinuousProblem, T: int, buffer: Buffer | None, merged: bool = False):
    """(round_, active) for one seed on a box: each query is evaluated as it is selected. ``buffer``: the
    algorithm's growing sample buffer (None: none, the seed runs to T); ``merged``: a batch's evaluations go
    into one row (mini-META), for the row trace."""
    n0 = 0 if buffer is None else buffer.n0
    f_min = 0.0 if problem.f_min is None else problem.f_min  # regret traced only where the minimum is known

    def record(acc, t, x, info):
        tr, noise, xi = acc
        own = own_fields(info)  # the step info's own fields (trace-time)
        fx = value(problem, x)
        tr = tr._replace(
            x=tr.x.at[t].set(x), reward=tr.reward.at[t].set(-fx + xi * noise[t]),
            regret=tr.regret.at[t].set(fx - f_min), batch_index=tr.batch_index.at[t].set(tr.rounds),
            dict_size=tr.dict_size.at[t].set(reported(info, "dict_size", 0)),
            ucb=tr.ucb.at[t].set(tr.planned_ucb),  # NaN in the design: no model planned it
            info={k: v.at[t].set(own[k]) for k, v in tr.info.items()})
        return tr, noise, xi

    def round_(carry, keys: SeedKeys, noise, params, xi):
        state, tr = carry
        t0 = state.t
        n_before = t0 if buffer is None else buffer.rows(state)
        state, (tr, _, _) = select_batch(alg, keys.select, params, state, (tr, noise, xi), record,
                                         lambda st, _: st.t < T)
        pos = jnp.arange(T)
        valid = (pos >= t0) & (pos < state.t) & jnp.isfinite(tr.reward)  # a NaN/inf of f never reaches the GP
        state, info = finish_batch(alg, keys.resparsify, params, state, Feedback(tr.x, tr.reward, valid))
        tr = tr._replace(planned_ucb=jnp.asarray(reported(info, "ucb", jnp.nan), tr.ucb.dtype))
        rows = jnp.where(valid, n_before + jnp.cumsum(valid) - 1, tr.row)
        if merged:
            rows = jnp.where(valid & (pos >= n0), n_before, rows)
        return state, tr._replace(row=rows.astype(jnp.int32), rounds=tr.rounds + 1)

    def active(carry):  # a seed whose next round would not fit in D waits for the host loop to grow it
        state = carry[0]
        if buffer is None:
            return state.t < T
        need = jnp.where(state.t == 0, n0, 1)
        return (state.t < T) & (buffer.rows(state) + need <= buffer.cap)

    return round_, active


def make_program(alg, problem: ContinuousProblem, T: int, seed_axis: str, rounds_per_call: int,
                 n_devices: int = 1, buffer: Buffer | None = None, merged: bool = False):
    """(init_fn, chunk_fn) jitted over stacked elements (``engine.program.jitted``):
    ``init_fn(seeds, (params, xi), ())``, ``chunk_fn(seeds, carry, noise, (params, xi), ())``; each element's keys
    derive from its seed (``engine.program.seed_keys``). ``buffer``, ``merged``: [`make_round`][]'s."""
    d = problem.d
    alg = alg._replace(select=traced_once(alg.select))  # init's shape query and the rounds share one trace
    round_, active = make_round(alg, problem, T, buffer, merged)
    chunk_one = chunk_of_rounds(round_, active, rounds_per_call)

    def init_one(keys: SeedKeys, element):
        params, xi = element
        dt = xi.dtype
        state = alg.init(keys.init, BoxSet(jnp.zeros((d,), dt), jnp.ones((d,), dt)), params)
        own = own_fields(jax.eval_shape(alg.select, keys.select, state, params)[2])  # shapes only
        noise = jax.random.normal(keys.noise, (T,), dtype=dt)
        tr = BOTraces(x=jnp.zeros((T, d), dt), reward=jnp.zeros((T,), dt), regret=jnp.zeros((T,), dt),
                      row=-jnp.ones((T,), jnp.int32), batch_index=jnp.zeros((T,), jnp.int32),
                      dict_size=jnp.zeros((T,), jnp.int32), ucb=jnp.full((T,), jnp.nan, dt),
                      planned_ucb=jnp.full((), jnp.nan, dt), rounds=jnp.zeros((), jnp.int32),
                      info={k: jnp.zeros((T,), v.dtype) for k, v in own.items()})
        return (state, tr), noise

    def init_all(seeds, elements, shared):
        return over_seeds(lambda s, e: init_one(seed_keys(s), e), seed_axis)(seeds, elements)

    def chunk_all(seeds, carry, noise, elements, shared):
        return over_seeds(lambda s, c, n, e: chunk_one(c, seed_keys(s), n, e[0], e[1]), seed_axis)(
            seeds, carry, noise, elements)

    return jitted(init_all, chunk_all, n_devices)


__all__ = ["BOTraces", "Buffer", "make_program", "make_round"]
