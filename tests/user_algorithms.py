"""Two algorithms written as a user writes them, outside the package (nothing under sketchbo/ knows them):
the acceptance case of the open contract (tests/test_user_algorithm.py, docs/tutorials/new-algorithm.md).

* ``UCB1``: UCB1 on empirical means (Auer et al. 2002), index mean_i + width * sqrt(2 log t / n_i), with a
  float hyperparameter ``width`` that no registered algorithm has; finite arm sets.
* ``LOCAL``: a local random search on a box: the best point told so far perturbed by ``scale`` N(0, I).
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

import sketchbo as sb


# ----------------------------------------------------------------------------------- UCB1 (finite arms)

class UCB1Params(NamedTuple):
    width: jax.Array  # () exploration width of the index


class UCB1Info(NamedTuple):
    pulls: jax.Array  # () pulls of the chosen arm before this one (recorded by the engine as info_pulls)


class UCB1State(NamedTuple):
    counts: jax.Array  # (A,) pulls of each arm
    sums: jax.Array  # (A,) summed rewards of each arm
    t: jax.Array  # () int32 pulls selected so far
    batch_open: jax.Array  # () bool: one pull a batch


def make_ucb1(static: sb.StaticConfig) -> sb.Algorithm:
    del static  # nothing static besides the shapes the arms carry

    def init(key, space, params):
        A = space.arms.shape[0]
        zeros = jnp.zeros((A,), space.arms.dtype)
        return UCB1State(zeros, zeros, jnp.zeros((), jnp.int32), jnp.asarray(True))

    def select(key, state, params):
        n = jnp.maximum(state.counts, 1.0)
        t = jnp.maximum(state.t, 1).astype(n.dtype)
        index = state.sums / n + params.width * jnp.sqrt(2.0 * jnp.log(t) / n)
        u = jax.random.uniform(key, index.shape, index.dtype)  # ties broken at random
        index = jnp.where(state.counts == 0, 1e30 * (1.0 + u), index + 1e-9 * u)  # every arm once first
        query = jnp.argmax(index).astype(jnp.int32)
        return query, state._replace(t=state.t + 1, batch_open=jnp.asarray(False)), UCB1Info(state.counts[query])

    def update(state, feedback, params):
        arm = jnp.where(feedback.valid, feedback.points, 0)
        w = feedback.valid.astype(state.counts.dtype)
        return state._replace(counts=state.counts.at[arm].add(w), sums=state.sums.at[arm].add(w * feedback.rewards))

    def refit(key, state, params):
        return state._replace(batch_open=jnp.asarray(True)), None

    return sb.Algorithm(init, select, update, refit)


UCB1 = sb.AlgorithmSpec(name="ucb1", domain="arms", factory=make_ucb1, params=UCB1Params, defaults={"width": 1.0},
                        description="UCB1 on empirical means with a tunable width")


# --------------------------------------------------------------------------------- local search (boxes)

class LocalParams(NamedTuple):
    scale: jax.Array  # () standard deviation of the perturbation (unit-cube units)


class LocalState(NamedTuple):
    best_x: jax.Array  # (d,) best point told so far (unit cube)
    best_y: jax.Array  # () its reward (-inf before the first)
    t: jax.Array  # () int32 points selected so far
    batch_open: jax.Array  # () bool: one point a batch


def make_local(static: sb.StaticConfig) -> sb.Algorithm:
    first = static.option("n_uniform")  # the first points are uniform (an int: a static option)

    def init(key, space, params):
        return LocalState(jnp.full_like(space.lower, 0.5), jnp.asarray(-jnp.inf, space.lower.dtype),
                          jnp.zeros((), jnp.int32), jnp.asarray(True))

    def select(key, state, params):
        k_u, k_n = jax.random.split(key)
        uniform = jax.random.uniform(k_u, state.best_x.shape, state.best_x.dtype)
        local = jnp.clip(state.best_x + params.scale * jax.random.normal(k_n, state.best_x.shape, state.best_x.dtype),
                         0.0, 1.0)
        x = jnp.where(state.t < first, uniform, local)
        return x, state._replace(t=state.t + 1, batch_open=jnp.asarray(False)), None

    def update(state, feedback, params):
        y = jnp.where(feedback.valid, feedback.rewards, -jnp.inf)
        i = jnp.argmax(y)
        better = y[i] > state.best_y
        return state._replace(best_x=jnp.where(better, feedback.points[i], state.best_x),
                              best_y=jnp.where(better, y[i], state.best_y))

    def refit(key, state, params):
        return state._replace(batch_open=jnp.asarray(True)), None

    return sb.Algorithm(init, select, update, refit)


def check_local(hyper: dict, T: int) -> dict:
    if not hyper["scale"] > 0:
        raise ValueError(f"algorithm.scale={hyper['scale']!r} is invalid; it must be > 0")
    if not isinstance(hyper["n_uniform"], int) or hyper["n_uniform"] < 1:
        raise ValueError(f"algorithm.n_uniform={hyper['n_uniform']!r} is invalid; it must be an integer >= 1")
    return hyper


LOCAL = sb.AlgorithmSpec(name="local_search", domain="box", factory=make_local, params=LocalParams,
                         defaults={"scale": 0.1, "n_uniform": 5}, check=check_local)
