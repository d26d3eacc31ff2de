"""Choosing which samples a GP is fitted on: GSSBO's gradient-diversity subset and its baselines.

Paper: GSSBO, "Gradient-based Sample Selection for Faster Bayesian Optimization" (Wei et al. 2025),
Eq. (1), Eq. (3), Alg. 1 L12-14; choices fixed in docs/protocols.md#gssbo-subset-rules.

Every selector works on a data buffer of static capacity n (``valid`` marks the filled rows) and returns
``(idx (M,) int32, mask (M,) bool)``: M row indices, distinct, every ``forced`` valid row among them (the
n0 initial samples and the newest, Alg. 1 L13). When there are at most M valid rows, all of them are kept.

GSSBO's three named rules (``selection`` of ``gssbo``; docs/protocols.md#gssbo-subset-rules, decided 2026-11-22).
Gradient vectors: g_i = psi_i r_i with psi_i = (K + s2 I)^{-1} e_i and r_i = ((K + s2 I)^{-1} (y - mu))_i (Eq. (3)'s
scalar), each perturbed by N(0, sigma_d^2 I) ([`perturbed_gradients`][]).

* [`projection_subset`][] (``projection``) — the appendix's greedy max gradient-direction diversity: add the row whose
  perturbed gradient vector has the largest residual norm after projecting out the span of the vectors kept so far
  (Gram–Schmidt greedy = pivoted Cholesky on the Gram matrix of the g_i).
* [`pivoted_cholesky_subset`][] (``pivoted``) — greedy pivoted Cholesky on K (greedy Nyström column selection; the
  appendix shows it equal to the projection greedy in the noiseless limit): the rest by largest residual variance. Also
  the IVM-style inducing-point choice of ``sparse_gp``.
* [`cosine_subset`][] (``cosine``) — Eq. (1) as literally written: greedily add the row whose normalised perturbed
  gradient vector has the smallest summed cosine similarity to the rows kept so far.

Baselines:
* [`random_subset`][] — RSSBO: the rest uniformly at random.
* [`kmeanspp_subset`][] — k-means++ seeding in the RKHS (Oglic & Gärtner 2017): the rest drawn with probability
  proportional to the squared RKHS distance to the nearest kept row.
* [`first_rows`][] — the first M rows (LR-First m).
* [`quality_dpp_subset`][] — IPA (Moss, Ober & Picheny 2023): greedy MAP of a quality-weighted DPP, i.e. pivoted
  Cholesky of diag(q) K diag(q): residual variance times q_i^2 (qualities from [`expected_improvement`][]).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

from sketchbo import linalg
from sketchbo.gp import hyper
from sketchbo.kernels import gram


def forced_rows(n, n0: int, cap: int):
    """(cap,) bool: the n0 initial rows and the newest row n - 1 (Alg. 1 L13)."""
    rows = jnp.arange(cap)
    return (rows < jnp.minimum(n0, n)) | (rows == n - 1)


def _as_subset(chosen, M: int):
    """Indices of the (at most M) chosen rows, in row order, and their mask."""
    k = jnp.sum(chosen)
    (idx,) = jnp.nonzero(chosen, size=M, fill_value=0)
    return idx.astype(jnp.int32), jnp.arange(M) < k


def _start(valid, forced, M: int):
    """Rows kept before the greedy part: the forced valid rows, or every valid row when they fit in M."""
    fits = jnp.sum(valid) <= M
    return jnp.where(fits, valid, valid & forced)


def first_rows(valid, M: int):
    """LR-First m: the first M valid rows."""
    return _as_subset(valid & (jnp.cumsum(valid) <= M), M)


def top_priority(priority, valid, forced, M: int):
    """Forced valid rows, then the valid rows of highest ``priority`` up to M."""
    p = jnp.where(forced, jnp.inf, priority)
    p = jnp.where(valid, p, -jnp.inf)
    _, idx = jax.lax.top_k(p, M)
    chosen = jnp.zeros(valid.shape, bool).at[idx].set(valid[idx])
    return _as_subset(chosen, M)


def random_subset(key, valid, forced, M: int):
    """RSSBO: forced rows plus uniformly random valid rows."""
    return top_priority(jax.random.uniform(key, valid.shape), valid, forced, M)


def gradient_vectors(h: hyper.GPHyper, X, y, valid):
    """Rows g_i = psi_i r_i (docs/protocols.md#gssbo-subset-rules): (n, n), zero in masked rows and columns.

    A = K + s2 I over the valid rows (standardised targets, mu = 0), psi_i = A^{-1} e_i (row i of the
    symmetric A^{-1}), r = A^{-1} y, so that Eq. (3)'s scalar gradient is -r_i.
    """
    y_std, _, _ = hyper.standardise(y, valid)
    Ainv = linalg.spd_inverse(jnp.linalg.cholesky(hyper.masked_kernel(h, X, valid)))
    w = valid.astype(X.dtype)
    Ainv = Ainv * w[:, None] * w[None, :]
    r = Ainv @ y_std
    return Ainv * r[:, None]


def row_normals(key, n: int, dtype):
    """(n, n) standard normals, row i drawn from ``fold_in(key, i)``: entry (i, j) does not depend on n
    (1-D draws are prefix-consistent), so a grown buffer sees the same perturbations."""
    return jax.vmap(lambda i: jax.random.normal(jax.random.fold_in(key, i), (n,), dtype))(jnp.arange(n))


def perturbed_gradients(key, G, valid, sigma_d2):
    """(n, n): each valid row's gradient vector plus N(0, sigma_d2 I) on its valid components (GSSBO §6.1,
    sigma_d^2 = 0.01); masked rows and columns stay zero. The same draws for every rule (``row_normals``)."""
    w = valid.astype(G.dtype)
    return (G + jnp.sqrt(sigma_d2) * row_normals(key, G.shape[0], G.dtype) * w[None, :]) * w[:, None]


def projection_subset(key, G, valid, forced, M: int, sigma_d2):
    """The appendix's greedy gradient-direction diversity (``projection``):
    i_{t+1} = argmax_{i not in U_t} ||(I - P_t) g~_i||, P_t the orthogonal projector on span{g~_j : j in U_t}.

    ``G`` (n, n): gradient vector of row i in row i, perturbed by [`perturbed_gradients`][]. Starting from the forced
    rows, keep the valid row of largest residual norm until M rows are kept. The squared residual norms are the residual
    diagonal of a pivoted Cholesky of the Gram matrix G~ G~^T (Gram–Schmidt on the rows), so this is
    [`pivoted_cholesky_subset`][] on that Gram matrix. Cost O(n^3) for the product, O(n M^2) after.

    Behaviour to know: the appendix's equivalence with greedy Nyström columns equates argmax ||K^{-1} v_i||
    with argmax ||v_i||, which needs K^{-1} to be a multiple of an isometry. With an ill-conditioned K (noiseless
    objectives fit s2 at its 1e-6 bound) the g_i of clustered, near-duplicate samples have by far the largest
    norms (|g| ~ 1e7 against sigma_d = 0.1) and directions that stay far from each other's span, so they are
    kept and isolated samples are dropped (measured on 200 Hartmann6 samples, M = 100: median nearest-neighbour
    distance 0.005 of the kept rows, against 0.060 for ``pivoted``); on Hartmann6 at N = 1000 its regret is
    ~15x pivoted's (issue 16).
    """
    noisy = perturbed_gradients(key, G, valid, sigma_d2)
    return pivoted_cholesky_subset(noisy @ noisy.T, valid, forced, M)


def cosine_subset(key, G, valid, forced, M: int, sigma_d2):
    """Eq. (1) greedily (``cosine``): minimise the summed pairwise cosine similarity of the kept normalised
    gradients.

    ``G`` (n, n): gradient vector of row i in row i, perturbed by [`perturbed_gradients`][], then normalised. Starting
    from the forced rows, M - |kept| times: add the valid row whose normalised vector has the smallest summed cosine
    similarity to the kept ones.

    Behaviour to know: an isolated sample has psi_i close to e_i / k_ii, nearly orthogonal to every other
    vector (summed similarity ~ 0), whereas samples in clusters (e.g. around the incumbent) can have negative
    sums, so they are added first and isolated exploration samples are the first left out. The subset GP
    then forgets those regions and UCB may query them again (measured on Hartmann6: most of GSSBO's
    high-regret queries after the switch land next to a dropped sample). ``projection`` and ``pivoted``
    keep the isolated samples instead.
    """
    noisy = perturbed_gradients(key, G, valid, sigma_d2)
    norms = jnp.linalg.norm(noisy, axis=1)
    Gn = noisy / jnp.where(norms > 0, norms, 1.0)[:, None]
    cos = Gn @ Gn.T  # (n, n) pairwise cosine similarities: one product, then each step reads one row
    chosen = _start(valid, forced, M)
    score = cos @ chosen.astype(G.dtype)  # summed cosine similarity to the kept rows

    def add(_, carry):
        chosen, score = carry
        room = jnp.sum(chosen) < jnp.minimum(M, jnp.sum(valid))
        i = jnp.argmin(jnp.where(valid & ~chosen, score, jnp.inf))
        chosen = chosen.at[i].set(chosen[i] | room)
        score = score + jnp.where(room, cos[i], 0.0)
        return chosen, score

    chosen, _ = jax.lax.fori_loop(0, M, add, (chosen, score))
    return _as_subset(chosen, M)


SELECTIONS = ("projection", "pivoted", "cosine")
"""GSSBO's named subset rules (docs/protocols.md#gssbo-subset-rules)."""


def gssbo_subset(rule: str, key, h: hyper.GPHyper, X, y, valid, forced, M: int, sigma_d2):
    """GSSBO's subset (Alg. 1 L12-14) by the rule named in [`SELECTIONS`][], with hyperparameters ``h``: X (n, d), y
    (n,) the buffer's rows and rewards, ``valid`` / ``forced`` (n,) bool."""
    if rule == "pivoted":
        return pivoted_cholesky_subset(gram(hyper.MATERN, hyper.kernel_params(h), X), valid, forced, M)
    if rule not in SELECTIONS:
        raise ValueError(f"selection={rule!r} is not a GSSBO subset rule; choose one of {list(SELECTIONS)}")
    G = gradient_vectors(h, X, y, valid)
    select = projection_subset if rule == "projection" else cosine_subset
    return select(key, G, valid, forced, M, sigma_d2)


def kmeanspp_subset(key, K, valid, forced, M: int):
    """k-means++ seeding in the RKHS of K (n, n): forced rows first, then rows drawn with probability
    proportional to the squared RKHS distance k_ii + k_cc - 2 k_ic to the nearest kept row c."""
    kd = jnp.diagonal(K)
    D = jnp.maximum(kd[:, None] + kd[None, :] - 2.0 * K, 0.0)  # squared RKHS distances (n, n)
    chosen = _start(valid, forced, M)
    d2 = jnp.min(jnp.where(chosen[None, :], D, jnp.inf), axis=1)
    d2 = jnp.where(jnp.isfinite(d2), d2, 1.0)  # nothing kept yet: uniform

    def add(j, carry):
        chosen, d2 = carry
        room = jnp.sum(chosen) < jnp.minimum(M, jnp.sum(valid))
        free = valid & ~chosen
        logits = jnp.where(free & (d2 > 0), jnp.log(jnp.where(d2 > 0, d2, 1.0)), -jnp.inf)
        logits = jnp.where(jnp.any(jnp.isfinite(logits)), logits, jnp.where(free, 0.0, -jnp.inf))
        i = jax.random.categorical(jax.random.fold_in(key, j), logits)
        chosen = chosen.at[i].set(chosen[i] | room)
        d2 = jnp.where(room, jnp.minimum(d2, D[:, i]), d2)
        return chosen, d2

    chosen, _ = jax.lax.fori_loop(0, M, add, (chosen, d2))
    return _as_subset(chosen, M)


def pivoted_cholesky_subset(K, valid, forced, M: int):
    """Greedy pivoted Cholesky of a PSD matrix K (n, n) (``pivoted`` on the kernel matrix): the forced valid
    rows are the first pivots, then the valid row of largest residual variance k_ii - sum_j L_ij^2 (the squared
    norm of phi_i's residual after projecting out the kept rows' span in the RKHS), up to M pivots. Cost O(n M^2)."""
    n = K.shape[0]
    start = _start(valid, forced, M)
    L = jnp.zeros((n, M), K.dtype)
    res = jnp.where(valid, jnp.diagonal(K), -jnp.inf)
    chosen = jnp.zeros((n,), bool)

    def add(s, carry):
        chosen, L, res = carry
        pending = start & ~chosen
        p = jnp.where(jnp.any(pending), jnp.argmax(pending), jnp.argmax(jnp.where(chosen, -jnp.inf, res)))
        room = jnp.sum(chosen) < jnp.minimum(M, jnp.sum(valid))
        piv = jnp.maximum(res[p], 1e-12 * jnp.max(jnp.diagonal(K)))
        col = (K[:, p] - L @ L[p]) / jnp.sqrt(piv)
        col = jnp.where(room & valid, col, 0.0)
        L = L.at[:, s].set(col)
        return chosen.at[p].set(chosen[p] | room), L, res - col * col

    chosen, _, _ = jax.lax.fori_loop(0, M, add, (chosen, L, res))
    return _as_subset(chosen, M)


def expected_improvement(mean, var, best):
    """EI of a maximisation at points with posterior mean and variance (q,) over the baseline ``best`` ():
    (mu - best) Phi(z) + sigma phi(z), z = (mu - best) / sigma (Jones et al. 1998); (mu - best)^+ where
    sigma = 0."""
    sd = jnp.sqrt(jnp.maximum(var, 0.0))
    diff = mean - best
    z = diff / jnp.where(sd > 0, sd, 1.0)
    ei = diff * jax.scipy.stats.norm.cdf(z) + sd * jax.scipy.stats.norm.pdf(z)
    return jnp.where(sd > 0, jnp.maximum(ei, 0.0), jnp.maximum(diff, 0.0))


def quality_dpp_subset(K, q, valid, M: int):
    """IPA's inducing points (Moss, Ober & Picheny 2023): the greedy MAP of the DPP with L-ensemble
    L = diag(q) K diag(q) over the valid rows, each step adding argmax_i det(L_{S+i}) / det(L_S) =
    q_i^2 (k_ii - K_iS K_SS^{-1} K_Si) (Chen, Zhang & Zhou 2018: a pivoted Cholesky of L). q (n,) > 0."""
    return pivoted_cholesky_subset(K * q[:, None] * q[None, :], valid, jnp.zeros_like(valid), M)


__all__ = ["row_normals", "forced_rows", "first_rows", "top_priority", "random_subset", "gradient_vectors",
           "perturbed_gradients", "projection_subset", "cosine_subset", "SELECTIONS", "gssbo_subset",
           "expected_improvement", "quality_dpp_subset", "kmeanspp_subset", "pivoted_cholesky_subset"]
