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


class ExactGP(NamedTuple):
    C: jax.Array  # (A, T_cap) posterior-covariance factor columns, one per observation
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
    return ExactGP(
        C=jnp.zeros((A, T_cap), dt), d=jnp.ones((T_cap,), dt), piv=jnp.zeros((T_cap,), jnp.int32),
        w=jnp.zeros((T_cap,), dt), n_obs=jnp.zeros((), jnp.int32), n_fb=jnp.zeros((), jnp.int32),
        mean=jnp.zeros((A,), dt), var=kdiag,
    )


def add_observation(kernel, kparams, arms, gp: ExactGP, j, lam) -> ExactGP:
    """Fold one (feedback-free) observation at arm j into the variance: O(A T_cap)."""
    r = gp.n_obs
    col = kernel.k(kparams, arms, arms[j][None, :])[:, 0] - gp.C @ gp.C[j]  # k_{r-1}(., x_j)
    d = jnp.sqrt(lam + gp.var[j])
    c = col / d
    return gp._replace(
        C=gp.C.at[:, r].set(c), d=gp.d.at[r].set(d), piv=gp.piv.at[r].set(j),
        n_obs=r + 1, var=jnp.maximum(gp.var - c * c, 0.0),
    )


def add_feedback(gp: ExactGP, ys) -> ExactGP:
    """Fold the rewards of observations n_fb .. n_obs-1 (``ys`` (T_cap,) indexed by observation) into the mean."""

    def body(r, w):
        resid = ys[r] - gp.C[gp.piv[r]] @ w  # y_r - mu_{r-1}(x_{j_r}); w is zero from r on
        return w.at[r].set(resid / gp.d[r])

    w = jax.lax.fori_loop(gp.n_fb, gp.n_obs, body, gp.w)
    return gp._replace(w=w, n_fb=gp.n_obs, mean=gp.C @ w)
