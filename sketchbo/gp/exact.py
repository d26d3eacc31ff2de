"""Exact GP posterior over a finite arm set: the reference every approximation is tested against.

GP-UCB (Srinivas et al. 2010) and GP-BUCB (Desautels et al. 2014) as used by BBKB (ICML 2020) for
comparison. Noise variance lam; the returned variances are in GP units (divide by lam for the papers'
lam-scaled sigma~^2).

Two forms:

* [`dense_posterior`][] — dense float64 solve over the unique pulled arms with counts n_i and summed rewards Y_i:
  mu(x) = k_U(x)^T (K_UU + lam N^{-1})^{-1} Ybar_U, sigma^2(x) = k(x,x) - k_U(x)^T (K_UU + lam N^{-1})^{-1} k_U(x)
  (docs/algorithms.md#exact-posterior). Host-side reference, not jitted.
* [`ExactGP`][] — the incremental engine used by the algorithms, on the same counts: the U unique pulled arms sit in
  fixed-capacity slots with their kernel rows, counts n_u and summed rewards Y_u, and Q = (K_UU + lam N^{-1})^{-1} (the
  kernel rows are stored as K_UA (u_max, A)). A pull at arm x_j (with or without feedback: the variance does not need
  it, which is GP-BUCB's hallucinated in-batch update) changes every variance by the rank-one rule sigma^2(x) -= cov(x,
  x_j)^2 / (lam + sigma^2(x_j)), cov(x, x_j) = k(x, x_j) - k_U(x)^T Q k_U(x_j): O(A U) per pull, U <= min(t, A). Q
  follows by a Sherman–Morrison update (a repeat) or a bordered inverse (a new arm), and is recomputed exactly from K_UU
  when feedback arrives, where the mean mu(x) = k_U(x)^T Q (Y_U / n_U) is refreshed.
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from sketchbo.linalg import mm


def dense_posterior(kernel, kparams, arms, counts, ysum, lam):
    """Exact posterior (mean, GP variance) of every arm from per-arm counts and summed rewards."""
    arms = jnp.asarray(arms)
    counts = np.asarray(counts, dtype=np.float64)
    pulled = np.nonzero(counts > 0)[0]
    kdiag = kernel.diag(kparams, arms)
    if pulled.size == 0:
        return jnp.zeros(arms.shape[0], arms.dtype), kdiag
    n = jnp.asarray(counts[pulled])
    ybar = jnp.asarray(np.asarray(ysum)[pulled]) / n
    XU = arms[pulled]
    K_UU = kernel.k(kparams, XU, XU)
    K_AU = kernel.k(kparams, arms, XU)
    G = K_UU + jnp.diag(lam / n)
    L = jnp.linalg.cholesky(G)
    alpha = jax.scipy.linalg.cho_solve((L, True), ybar)
    mean = mm(K_AU, alpha)
    B = jax.scipy.linalg.solve_triangular(L, K_AU.T, lower=True)
    var = kdiag - jnp.sum(B * B, axis=0)
    return mean, var


class ExactGP(NamedTuple):
    """The exact GP posterior over a finite arm set, held on at most ``u_max`` slots of unique pulled arms.

    Attributes:
        slot_arm: `(u_max,)` int32 arm held by each slot
        arm_slot: `(A,)` int32 slot of each arm, -1 if never pulled
        n_slots: `()` int32 slots in use (may exceed u_max: overflow, reported by the caller)
        K_UA: `(u_max, A)` kernel row k(x_u, .) of each slot (0 for empty slots)
        counts: `(u_max,)` pulls of each slot, including pulls still waiting for feedback
        ysum: `(u_max,)` summed rewards of each slot
        Q: `(u_max, u_max)` (K_UU + lam N^{-1})^{-1} on used slots, 0 elsewhere
        mean: `(A,)` posterior mean given the feedback so far
        var: `(A,)` posterior variance given every pull so far (GP units)
    """

    slot_arm: jax.Array
    arm_slot: jax.Array
    n_slots: jax.Array
    K_UA: jax.Array
    counts: jax.Array
    ysum: jax.Array
    Q: jax.Array
    mean: jax.Array
    var: jax.Array


ROWS = 32  # slot rows per block: products with K_UA touch only the blocks in use, O(A U) not O(A u_max)


def _used_rows_times(gp, v):
    """v @ K_UA over the blocks of used slots: (A,)."""
    n_blocks = (jnp.minimum(gp.n_slots, gp.K_UA.shape[0]) + ROWS - 1) // ROWS

    def body(b, acc):
        rows = jax.lax.dynamic_slice_in_dim(gp.K_UA, b * ROWS, ROWS, axis=0)
        return acc + mm(jax.lax.dynamic_slice_in_dim(v, b * ROWS, ROWS), rows)

    return jax.lax.fori_loop(0, n_blocks, body, jnp.zeros_like(gp.mean))


def init_exact(kdiag, u_max):
    """Empty posterior with capacity for u_max unique arms (rounded up to a multiple of ROWS)."""
    A = kdiag.shape[0]
    u_max = -(-u_max // ROWS) * ROWS
    dt = kdiag.dtype
    return ExactGP(
        slot_arm=jnp.zeros((u_max,), jnp.int32), arm_slot=-jnp.ones((A,), jnp.int32),
        n_slots=jnp.zeros((), jnp.int32), K_UA=jnp.zeros((u_max, A), dt), counts=jnp.zeros((u_max,), dt),
        ysum=jnp.zeros((u_max,), dt), Q=jnp.zeros((u_max, u_max), dt), mean=jnp.zeros((A,), dt), var=kdiag,
    )


def add_observation(kernel, kparams, arms, gp: ExactGP, j, lam) -> ExactGP:
    """Fold one (feedback-free) pull of arm j into the variances and Q: O(A U + U^2)."""
    u_max = gp.Q.shape[0]
    k_j = kernel.k(kparams, arms, arms[j][None, :])[:, 0]  # (A,) k(., x_j)
    new = gp.arm_slot[j] < 0
    s = jnp.where(new, gp.n_slots, gp.arm_slot[j])
    in_range = s < u_max  # beyond capacity nothing is written; the caller re-runs with a larger u_max
    # Write the new slot's kernel row first (in place; Q is zero on that slot, so the reads below are
    # unchanged by it). Writing after the reads made XLA copy the whole (u_max, A) buffer on every pull.
    s_row = jnp.minimum(s, u_max - 1)
    K_UA = gp.K_UA.at[s_row].set(jnp.where(new & in_range, k_j, gp.K_UA[s_row]))
    gp = gp._replace(K_UA=K_UA)

    g = K_UA[:, j]  # (u_max,) k_U(x_j)
    Qg = mm(gp.Q, g)
    cov = k_j - _used_rows_times(gp, Qg)  # posterior covariance of every arm with x_j
    denom = lam + gp.var[j]
    var = jnp.maximum(gp.var - cov * cov / denom, 0.0)

    e_s = (jnp.arange(u_max) == s).astype(gp.Q.dtype)
    # a repeat: the diagonal entry lam / n_s of K_UU + lam N^{-1} becomes lam / (n_s + 1) (Sherman–Morrison)
    n_s = jnp.maximum(gp.counts[s_row], 1.0)
    delta = lam / (n_s + 1.0) - lam / n_s
    q_s = mm(gp.Q, e_s)
    Q_repeat = gp.Q - jnp.outer(q_s, q_s) * delta / (1.0 + delta * q_s[s_row])
    # a new arm: border K_UU + lam N^{-1} with k_U(x_j) and k(x_j, x_j) + lam; Schur complement = denom
    border = e_s - Qg * (1.0 - e_s)  # (-Q g, 1) placed at slot s
    Q_new = gp.Q + jnp.outer(border, border) / denom
    Q = jnp.where(new, Q_new, Q_repeat)
    return gp._replace(
        slot_arm=gp.slot_arm.at[s].set(j, mode="drop"),
        arm_slot=gp.arm_slot.at[j].set(jnp.where(in_range, s, gp.arm_slot[j])),
        n_slots=gp.n_slots + new.astype(jnp.int32),
        counts=gp.counts.at[s].add(1.0, mode="drop"),
        Q=jnp.where(in_range, Q, gp.Q), var=var,
    )


def exact_Q(gp: ExactGP, lam):
    """(K_UU + lam N^{-1})^{-1} recomputed from the slots by Cholesky: O(U^3)."""
    used = gp.counts > 0
    K_UU = gp.K_UA[:, gp.slot_arm]
    G = jnp.where(used[:, None] & used[None, :], K_UU, 0.0)
    G = G + jnp.diag(jnp.where(used, lam / jnp.maximum(gp.counts, 1.0), 1.0))
    L = jnp.linalg.cholesky(G)
    Ginv = jax.scipy.linalg.cho_solve((L, True), jnp.eye(G.shape[0], dtype=G.dtype))
    return jnp.where(used[:, None] & used[None, :], Ginv, 0.0)


def add_feedback(gp: ExactGP, queries, ys, lam) -> ExactGP:
    """Rewards ``ys`` of the pulls ``queries`` (-1 = padding), all already folded in by add_observation.

    Recomputes Q exactly (no drift from the in-batch updates) and the mean mu = k_U(x)^T Q (Y_U / n_U)."""
    valid = queries >= 0
    slots = jnp.where(valid, gp.arm_slot[jnp.maximum(queries, 0)], -1)
    slots = jnp.where(slots < 0, gp.Q.shape[0], slots)  # padding and overflowed arms are dropped
    ysum = gp.ysum.at[slots].add(jnp.where(valid, ys, 0.0), mode="drop")
    Q = exact_Q(gp, lam)
    ybar = jnp.where(gp.counts > 0, ysum / jnp.maximum(gp.counts, 1.0), 0.0)
    return gp._replace(ysum=ysum, Q=Q, mean=_used_rows_times(gp, mm(Q, ybar)))
