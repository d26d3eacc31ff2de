"""EpsGreedy, the simplest baseline of BBKB's Fig. 1 (ICML 2020; docs/protocols.md#baselines).

With probability eps a uniformly random arm, otherwise the pulled arm with the best empirical mean
reward (ties: lowest index). The first pull is uniform. No model, batches of one.
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from sketchbo.algorithms.common import Algorithm, Feedback, RoundInfo, Static, StepInfo, batch_feedback


class EpsGreedyParams(NamedTuple):
    """eps-greedy's float hyperparameter (() array).

    Attributes:
        eps: exploration probability
    """

    eps: jax.Array


class EpsGreedyState(NamedTuple):
    """The state of ε-greedy: the pulls and summed rewards of every arm.

    Attributes:
        counts: `(A,)` float pulls with feedback
        ysum: `(A,)` summed rewards
        batch_open: `()` bool
        t: `()` int32 pulls selected so far
    """

    counts: jax.Array
    ysum: jax.Array
    batch_open: jax.Array
    t: jax.Array


def make_eps_greedy(static: Static) -> Algorithm:
    def init(key, problem, params: EpsGreedyParams) -> EpsGreedyState:
        del key
        A = problem.arms.shape[0]
        dt = problem.arms.dtype
        return EpsGreedyState(jnp.zeros((A,), dt), jnp.zeros((A,), dt), jnp.asarray(True), jnp.zeros((), jnp.int32))

    def select(key, state: EpsGreedyState, params: EpsGreedyParams):
        k_explore, k_arm = jax.random.split(key)
        A = state.counts.shape[0]
        emp = jnp.where(state.counts > 0, state.ysum / jnp.maximum(state.counts, 1.0), -jnp.inf)
        explore = (jax.random.uniform(k_explore, dtype=state.counts.dtype) < params.eps) | (state.t == 0)
        q = jnp.where(explore, jax.random.randint(k_arm, (), 0, A, dtype=jnp.int32), jnp.argmax(emp))
        new = state._replace(batch_open=jnp.asarray(False), t=state.t + 1)
        return q.astype(jnp.int32), new, StepInfo()  # no model, no refresh loop: nothing to report

    def update(state: EpsGreedyState, fb: Feedback, params: EpsGreedyParams):
        counts, qi, wy, _ = batch_feedback(state.counts, fb, state.counts, "code")
        return state._replace(counts=counts, ysum=state.ysum.at[qi].add(wy))

    def resparsify(key, state: EpsGreedyState, params: EpsGreedyParams):
        """No model to rebuild: only opens the next batch (of one)."""
        del key
        return state._replace(batch_open=jnp.asarray(True)), RoundInfo()

    return Algorithm(init, select, update, refit=resparsify)
