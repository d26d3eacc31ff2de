"""Random-embedding BO, the baselines of GSSBO's appendix figure on Levy20, Powell50 and Rastrigin100
(Wei et al. 2025, App., Fig. 9): REMBO and HeSBO, each GP-UCB in a random low-dimensional subspace.

* ``rembo`` — Wang, Hutter, Zoghi, Matheson & de Freitas, "Bayesian optimization in a billion dimensions via
  random embeddings", JAIR 2016, Alg. 2: A in R^{D x d} with i.i.d. N(0, 1) entries, y in the box
  Y = [-sqrt(d), sqrt(d)]^d (their §4 recommendation), x = p_X(A y) with p_X the clipping onto X = [-1, 1]^D.
* ``hesbo`` — Nayebi, Munteanu & Poloczek, "A framework for Bayesian optimization in embedded subspaces",
  ICML 2019, §3: a count-sketch embedding; every input coordinate i gets one low coordinate h(i), uniform in
  {1..d}, and one sign s_i, uniform in {-1, +1}; x_i = s_i y_{h(i)} with y in [-1, 1]^d, so x is always inside
  X and no clipping is needed. As a matrix: S in R^{D x d} with one +-1 per row, x = S y.

X = [-1, 1]^D is our unit cube [0, 1]^D affinely (u = (x + 1) / 2), so the embedding's centre y = 0 is the
centre of the box. The low-dimensional GP-UCB is ``std_gp_ucb`` of ``subset_bo`` (Matérn-5/2 ARD by MLE, UCB
with beta_t = beta_c d log(2t) where d is the low dimension, the same box-constrained acquisition maximiser)
on the unit cube [0, 1]^d, mapped affinely onto Y. The low dimension d is the registry's ``m`` (default 4:
our choice; the GSSBO paper does not state it), carried to the factory as ``BOStatic.M``.

State: the low-dimensional algorithm's ``BOState`` fields (its data buffer holds the low points; capacity
growth pads it with zero rows as it pads any all-rows variant, ``domains.box.prepare``), plus the low point of every query (``update`` receives
only the D-dimensional ones) and the embedding matrix, drawn once in ``init``.
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from sketchbo.algorithms.common import Algorithm, BoxSet, Feedback
from sketchbo.algorithms.subset_bo import SubsetParams, BOState, BOStatic, Data, make_subset_bo

EMBEDDINGS = ("rembo", "hesbo")
"""The random-embedding baselines by name."""


class EmbedState(NamedTuple):
    """``BOState``'s fields (same order; the low-dimensional GP-UCB's state) and the embedding.

    Attributes:
        data: the sample buffer in the low unit cube: x (cap, d), ysum (cap,), count (cap,), n ()
        sub_idx: `(cap,)` int32 rows of D the GP uses (all)
        sub_mask: `(cap,)` bool
        hyper: fitted hyperparameters of the low-dimensional GP (d lengthscales)
        beta: `()` beta_t of the planned query
        next_x: `(d,)` planned query in the low unit cube
        repeats: `()` int32 (always 1)
        t: `()` int32 evaluations selected so far
        batch_open: `()` bool
        low: `(T, d)` low unit-cube point of query t
        embed: `(D, d)` embedding matrix: REMBO's Gaussian A or HeSBO's count sketch S
    """

    data: Data
    sub_idx: jax.Array
    sub_mask: jax.Array
    hyper: hyper.GPHyper
    beta: jax.Array
    next_x: jax.Array
    repeats: jax.Array
    t: jax.Array
    batch_open: jax.Array
    low: jax.Array
    embed: jax.Array


assert EmbedState._fields[:len(BOState._fields)] == BOState._fields


def low_box_halfwidth(kind: str, d: int) -> float:
    """Y = [-h, h]^d: h = sqrt(d) for REMBO (Wang et al. 2016, §4), 1 for HeSBO (Nayebi et al. 2019, §3)."""
    return float(d) ** 0.5 if kind == "rembo" else 1.0


def draw_embedding(key, kind: str, D: int, d: int, dtype):
    """(D, d): REMBO's A with i.i.d. N(0, 1) entries, or HeSBO's count sketch (one +-1 per row, at h(i))."""
    if kind == "rembo":
        return jax.random.normal(key, (D, d), dtype)
    k_h, k_s = jax.random.split(key)
    h = jax.random.randint(k_h, (D,), 0, d)
    s = jax.random.rademacher(k_s, (D,), dtype)
    return jax.nn.one_hot(h, d, dtype=dtype) * s[:, None]


def to_box(u, embed, halfwidth: float):
    """Low unit-cube point u (d,) -> the query in [0, 1]^D: y = (2u - 1) h in Y, x = p_X(embed y) clipped to
    [-1, 1]^D (REMBO Alg. 2; a no-op for HeSBO), mapped to the unit cube."""
    y = (2.0 * u - 1.0) * halfwidth
    return (jnp.clip(embed @ y, -1.0, 1.0) + 1.0) / 2.0


def make_embedding_bo(static: BOStatic) -> Algorithm:
    """REMBO / HeSBO (``static.variant``) in D = ``static.d`` dimensions with low dimension d = ``static.M``."""
    kind, D, d = static.variant, static.d, static.M
    if kind not in EMBEDDINGS:
        raise ValueError(f"variant={kind!r} is not a random embedding; choose one of {list(EMBEDDINGS)}")
    low = make_subset_bo(static._replace(variant="std_gp_ucb", d=d, M=static.cap))
    half = low_box_halfwidth(kind, d)
    n_inner = len(BOState._fields)

    def inner(state: EmbedState) -> BOState:
        return BOState(*state[:n_inner])

    def outer(b: BOState, lows, embed) -> EmbedState:
        return EmbedState(*b, low=lows, embed=embed)

    def init(key, problem, params: SubsetParams) -> EmbedState:
        k_embed, k_low = jax.random.split(key)
        dt = params.beta_c.dtype
        b = low.init(k_low, BoxSet(jnp.zeros((d,), dt), jnp.ones((d,), dt)), params)  # the low box
        return outer(b, jnp.zeros((static.T, d), dt), draw_embedding(k_embed, kind, D, d, dt))

    def select(key, state: EmbedState, params: SubsetParams):
        u, b, info = low.select(key, inner(state), params)
        lows = state.low.at[state.t].set(u)
        return to_box(u, state.embed, half), outer(b, lows, state.embed), info

    def update(state: EmbedState, fb: Feedback, params: SubsetParams):
        # fb.points are the D-dimensional queries; the low GP is fitted on their low points, by position
        b = low.update(inner(state), fb._replace(points=state.low), params)
        return outer(b, state.low, state.embed)

    def resparsify(key, state: EmbedState, params: SubsetParams):
        b, info = low.refit(key, inner(state), params)
        return outer(b, state.low, state.embed), info

    return Algorithm(init, select, update, refit=resparsify)


__all__ = ["EMBEDDINGS", "EmbedState", "low_box_halfwidth", "draw_embedding", "to_box", "make_embedding_bo"]
