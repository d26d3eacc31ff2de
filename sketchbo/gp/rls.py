"""Recursive ridge-leverage-score (RLS) sampling of inducing points, with static capacities.

Papers: Musco & Musco, "Recursive Sampling for the Nyström Method" (NeurIPS 2017, arXiv 1605.07583),
Alg. 2, as used by Vakili et al. (ICML 2022, Lemma 3.8) to choose inducing points with
lambda_max(K_XX - kappa_XX) <= tau^2 and m <= 384 d~ log(3 d~ / delta) w.p. >= 1 - delta.

Alg. 2 on a multiset of n points with ridge tau^2 and failure probability delta (constants as we read
them from the paper; they are arguments here):

  L1  if n <= c_base log(1/delta): return every point with weight 1            (c_base = 192)
  L2  keep each point independently with probability 1/2                       (uniform halving)
  L3  recurse on the kept points with delta/32: a weighted sample S~
  L5  l~_i = (3 / (2 tau^2)) (K - K S (S^T K S + tau^2 I)^{-1} S^T K)_ii
  L6  p_i = min(1, l~_i c_os log(sum_i l~_i / delta))                         (c_os = 16)
  L7  keep point i with probability p_i and weight 1/sqrt(p_i).

Static form. The data are the U unique points (slots of ``pulled_idx``, capacity u_max) with counts n_i; each level is a
vector of per-slot copy counts: the halvings draw c_l ~ Binomial(c_{l-1}, 1/2) for a static number of levels, and the
recursion is unrolled bottom-up (deepest level first, a ``lax.scan``), each level being the base case L1 when its size
is below its threshold. With weights 1/sqrt(p) per copy, s copies of a point act as one column of squared weight s/p,
and (K_SS + tau^2 diag(p/s))^{-1} is the exact GP posterior with per-point noise tau^2 p/s; so L5's score is 3/2 times
the lam-scaled variance of [`sketchbo.gp.nystrom.posterior`][] with the dictionary = the pulled set = S and counts s/p
(no second implementation). The deepest level is always a base case. Every level's sample must fit ``m_max``; more is
reported (``wanted``) so that the caller can grow the capacity, as for BKB's dictionary.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp

from sketchbo.gp import nystrom, sparse_bounds
from sketchbo.linalg import psd_inv_sqrt

THEORY = {"c_base": 192.0, "c_os": 16.0}
"""The constants of Vakili et al.'s Alg. 2 (L1, L6)."""
LEVERAGE_SCALE = 1.5  # L5: l~ = 3/(2 tau^2) x (posterior variance)
DELTA_SHRINK = 32.0  # L3: the recursion runs with delta/32


class RLSSample(NamedTuple):
    """An inducing set drawn by recursive ridge-leverage-score sampling, in fixed-capacity slots.

    Attributes:
        idx: `(m_max,)` int32 arm index of each inducing point
        mask: `(m_max,)` bool, slot in use
        wanted: `()` int32 largest sample any used level wanted (> m_max: overflow)
        levels_used: `()` int32 recursion depth reached before a base case
    """

    idx: jax.Array
    mask: jax.Array
    wanted: jax.Array
    levels_used: jax.Array


def n_levels(n: int, deepest: int = 32) -> int:
    """Static recursion depth: enough halvings to bring n points (copies included) down to about ``deepest``."""
    return max(1, math.ceil(math.log2(max(n, 2) / deepest)))


def slot_binomial(key, arm_idx, n, p):
    """Binomial(n_i, p_i) for every slot i, each drawn with its own key folded with the slot's arm index
    ``arm_idx`` (u,): a point's draws do not depend on the list's capacity or on its slot (a run that grows
    u_max keeps its trajectory, issue 14)."""
    keys = jax.vmap(jax.random.fold_in, (None, 0))(key, arm_idx)
    return jax.vmap(jax.random.binomial)(keys, n, jnp.broadcast_to(p, n.shape)).astype(n.dtype)


def level_counts(key, counts_u, levels: int, arm_idx):
    """Copy counts of every level (levels + 1, u): c_0 = counts_u, c_l ~ Binomial(c_{l-1}, 1/2) (Alg. 2, L2),
    slot i's draws keyed by its arm ``arm_idx[i]`` and level l by ``split(key, levels)[l - 1]``."""

    def halve(c, k):
        c_next = slot_binomial(k, arm_idx, c, 0.5)
        return c_next, c_next

    _, deeper = jax.lax.scan(halve, counts_u, jax.random.split(key, levels))
    return jnp.concatenate([counts_u[None], deeper])


def leverage_scores(kernel, kparams, X_u, kdiag_u, weights, tau2, m_max):
    """Alg. 2, L5: l~_i for every slot from the weighted sample ``weights`` (u,) (s/p per slot, 0 = absent).

    Returns ``(scores (u,), n_sample)``; a sample larger than ``m_max`` is truncated (reported by the caller).
    """
    idx, mask, n_sample = nystrom.exact_dictionary(weights, m_max)
    post = nystrom.posterior(kernel, kparams, X_u, kdiag_u, idx, mask, idx, mask, weights,
                             jnp.zeros_like(weights), tau2)
    return LEVERAGE_SCALE * post.var, n_sample


def recursive_rls(key, kernel, kparams, arms, kdiag, pulled_idx, pulled_mask, counts, tau2, delta, m_max: int,
                  levels: int, c_base=THEORY["c_base"], c_os=THEORY["c_os"]) -> RLSSample:
    """Inducing points by Alg. 2 among the pulled arms (``pulled_idx``/``pulled_mask`` (u_max,), ``counts`` (A,)).

    ``tau2``, ``delta``, ``c_base``, ``c_os`` are dynamic floats (the theory's constants by default); ``m_max``
    and ``levels`` are static. Returns arm indices of the sample (its weights are not needed: the SVGP
    statistics depend only on the span of k_Z).
    """
    k_halve, k_sample = jax.random.split(key)
    X_u = arms[pulled_idx]
    kdiag_u = kdiag[pulled_idx]
    c = level_counts(k_halve, jnp.where(pulled_mask, counts[pulled_idx], 0.0), levels, pulled_idx)  # (levels + 1, u)
    sizes = jnp.sum(c, axis=1)
    log_inv = jnp.log(1.0 / delta) + jnp.arange(levels + 1) * jnp.log(DELTA_SHRINK)  # delta_l = delta / 32^l
    is_base = sizes <= c_base * log_inv  # Alg. 2, L1 at each level
    # a level is used when every shallower level recursed (was not a base case)
    used = jnp.concatenate([jnp.ones((1,), bool), jnp.cumprod(~is_base[:-1]).astype(bool)])

    def level(carry, xs):
        weights, wanted = carry  # the weighted sample S~ of the level below
        c_l, base, use, log_inv_l, k = xs
        scores, n_below = leverage_scores(kernel, kparams, X_u, kdiag_u, weights, tau2, m_max)  # L5
        scores = jnp.where(c_l > 0, scores, 0.0)
        total = jnp.sum(c_l * scores)
        log_term = jnp.maximum(jnp.log(total) + log_inv_l, 1.0)  # log(sum l~ / delta_l), kept >= 1
        p = jnp.clip(scores * c_os * log_term, 0.0, 1.0)  # L6
        s = slot_binomial(k, pulled_idx, c_l, jnp.where(c_l > 0, p, 0.0))  # L7, per copy
        sampled = jnp.where(s > 0, s / jnp.where(s > 0, p, 1.0), 0.0)  # merged squared weight s/p
        new = jnp.where(base, c_l, sampled)  # L1: every point, weight 1 per copy
        wanted = jnp.maximum(wanted, jnp.where(use & ~base, n_below, 0).astype(wanted.dtype))
        wanted = jnp.maximum(wanted, jnp.where(use, jnp.sum(new > 0), 0).astype(wanted.dtype))
        return (new, wanted), None

    keys = jax.random.split(k_sample, levels)  # level l samples with keys[l] (whatever the depth)
    # the deepest level is a base case (all of its points); then levels - 1, ..., 0
    xs = (c[:-1][::-1], is_base[:-1][::-1], used[:-1][::-1], log_inv[:-1][::-1], keys[::-1])
    (weights, wanted), _ = jax.lax.scan(level, (c[-1], jnp.zeros((), jnp.int32)), xs)
    local, mask, n_final = nystrom.exact_dictionary(weights, m_max)
    wanted = jnp.maximum(wanted, n_final).astype(jnp.int32)
    return RLSSample(pulled_idx[local], mask, wanted, jnp.sum(used).astype(jnp.int32) - 1)


class RLSReport(NamedTuple):
    """What one inducing set says about the conditions of Vakili et al. (Lemma 3.8).

    Attributes:
        m: `()` number of inducing points
        n: `()` number of data points (pulls, repeats included)
        d_eff: `()` d~ = Tr(K (K + tau^2 I)^{-1}) over the pulls (Eq. (9))
        m_bound: `()` 384 d~ log(3 d~ / delta) (Lemma 3.8)
        lam_max: `()` lambda_max(K_XX - kappa_XX)
        tau2: `()` tau^2, the bound on lam_max of Lemma 3.8
    """

    m: jax.Array
    n: jax.Array
    d_eff: jax.Array
    m_bound: jax.Array
    lam_max: jax.Array
    tau2: jax.Array


def report(kernel, kparams, arms, z_idx, z_mask, pulled_idx, pulled_mask, counts, tau2, delta) -> RLSReport:
    """m and lambda_max of an inducing set against Lemma 3.8's guarantees (dense eigen-solvers; diagnostics)."""
    X_u = arms[pulled_idx]
    root_n = jnp.sqrt(jnp.where(pulled_mask, counts[pulled_idx], 0.0))
    K = root_n[:, None] * kernel.k(kparams, X_u, X_u) * root_n[None, :]  # nonzero spectrum of K over the pulls
    ev = jnp.maximum(jnp.linalg.eigvalsh(K), 0.0)
    d_eff = jnp.sum(ev / (ev + tau2))
    Xz = arms[z_idx]
    W, _ = psd_inv_sqrt(kernel.k(kparams, Xz, Xz), z_mask)
    lam = sparse_bounds.lambda_max(kernel, kparams, arms, W, z_idx, z_mask, pulled_idx, pulled_mask, counts)
    m_bound = 384.0 * d_eff * jnp.log(jnp.maximum(3.0 * d_eff / delta, 1.0))
    return RLSReport(jnp.sum(z_mask), jnp.sum(root_n ** 2), d_eff, m_bound, lam, jnp.asarray(tau2))


__all__ = ["THEORY", "RLSSample", "RLSReport", "n_levels", "slot_binomial", "level_counts", "leverage_scores",
           "recursive_rls", "report"]
