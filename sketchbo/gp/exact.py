"""Exact GP posterior over a finite arm set: the reference every approximation is tested against.

GP-UCB (Srinivas et al. 2010) and GP-BUCB (Desautels et al. 2014) as used by BBKB (ICML 2020) for
comparison. Noise variance lam; the returned variances are in GP units (divide by lam for the papers'
lam-scaled sigma~^2).

Two forms:

* :func:`dense_posterior` — dense float64 solve over the unique pulled arms with counts n_i and summed
  rewards Y_i: mu(x) = k_U(x)^T (K_UU + lam N^{-1})^{-1} Ybar_U, sigma^2(x) = k(x,x) - k_U(x)^T (K_UU +
  lam N^{-1})^{-1} k_U(x) (PROTOCOLS §3, "derived"). Host-side reference, not jitted.
* :class:`ExactGP` — the incremental engine used by the algorithms. Each observation r at arm j_r adds
  one column c_r = k_{r-1}(., x_{j_r}) / sqrt(lam + sigma^2_{r-1}(x_{j_r})) so that the posterior covariance
  is k_t(x, x') = k(x, x') - sum_r c_r(x) c_r(x'); the variance update needs no feedback (GP-BUCB's
  hallucinated in-batch update), and the mean mu_t = sum_r c_r w_r follows from the whitened residuals
  w_r = (y_r - mu_{r-1}(x_{j_r})) / sqrt(lam + sigma^2_{r-1}(x_{j_r})). Cost O(A t) per observation.
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np


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
    mean = K_AU @ alpha
    B = jax.scipy.linalg.solve_triangular(L, K_AU.T, lower=True)
    var = kdiag - jnp.sum(B * B, axis=0)
    return mean, var


BLOCK = 128  # observation columns per block: work per observation is O(A * blocks in use)


class ExactGP(NamedTuple):
    C: jax.Array  # (n_blocks, A, BLOCK) posterior-covariance factor columns, column r in block r // BLOCK
    d: jax.Array  # (T_cap,) sqrt(lam + sigma^2_{r-1}(x_{j_r})) of each observation
    piv: jax.Array  # (T_cap,) int32 arm of each observation
    w: jax.Array  # (T_cap,) whitened residuals (0 until the feedback arrives)
    n_obs: jax.Array  # () int32 observations added (with or without feedback)
    n_fb: jax.Array  # () int32 observations whose feedback has been folded into the mean
    mean: jax.Array  # (A,) posterior mean given the feedback so far
    var: jax.Array  # (A,) posterior variance of the n_obs observations (GP units)


def init_exact(kdiag, T_cap):
    A = kdiag.shape[0]
    dt = kdiag.dtype
    n_blocks = -(-T_cap // BLOCK)
    return ExactGP(
        C=jnp.zeros((n_blocks, A, BLOCK), dt), d=jnp.ones((T_cap,), dt), piv=jnp.zeros((T_cap,), jnp.int32),
        w=jnp.zeros((T_cap,), dt), n_obs=jnp.zeros((), jnp.int32), n_fb=jnp.zeros((), jnp.int32),
        mean=jnp.zeros((A,), dt), var=kdiag,
    )


def _blocks_used(n):
    return (n + BLOCK - 1) // BLOCK


def _factor_times(gp: ExactGP, v_of_block):
    """sum over blocks in use of C[b] @ v_of_block(b): (A,), O(A * n_obs)."""
    return jax.lax.fori_loop(0, _blocks_used(gp.n_obs), lambda b, acc: acc + gp.C[b] @ v_of_block(b),
                             jnp.zeros_like(gp.mean))


def _row(gp: ExactGP, j, b):
    """Row j of factor block b: (BLOCK,)."""
    return gp.C[b, j]


def add_observation(kernel, kparams, arms, gp: ExactGP, j, lam) -> ExactGP:
    """Fold one (feedback-free) observation at arm j into the variance: O(A n_obs)."""
    r = gp.n_obs
    prior = kernel.k(kparams, arms, arms[j][None, :])[:, 0]
    col = prior - _factor_times(gp, lambda b: _row(gp, j, b))  # k_{r-1}(., x_j)
    d = jnp.sqrt(lam + gp.var[j])
    c = col / d
    return gp._replace(
        C=gp.C.at[r // BLOCK, :, r % BLOCK].set(c), d=gp.d.at[r].set(d), piv=gp.piv.at[r].set(j),
        n_obs=r + 1, var=jnp.maximum(gp.var - c * c, 0.0),
    )


def add_feedback(gp: ExactGP, ys) -> ExactGP:
    """Fold the rewards of observations n_fb .. n_obs-1 (``ys`` (T_cap,) indexed by observation) into the mean.

    w_r = (y_r - mu_{r-1}(x_{j_r})) / d_r in order; then mu += sum_{new r} c_r w_r. O(n_obs) per reward and
    O(A) per new column."""

    def whiten(r, w):
        row = gp.C[:, gp.piv[r], :].reshape(-1)[: w.shape[0]]  # C[j_r, :] over all observations
        return w.at[r].set((ys[r] - row @ w) / gp.d[r])  # w is zero from r on

    w = jax.lax.fori_loop(gp.n_fb, gp.n_obs, whiten, gp.w)

    def add_column(r, mean):
        return mean + gp.C[r // BLOCK, :, r % BLOCK] * w[r]

    mean = jax.lax.fori_loop(gp.n_fb, gp.n_obs, add_column, gp.mean)
    return gp._replace(w=w, n_fb=gp.n_obs, mean=mean)
