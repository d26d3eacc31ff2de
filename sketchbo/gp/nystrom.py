"""Nyström (DTC) posterior on a fixed-capacity dictionary: the engine of BKB and BBKB.

Papers: BKB (Calandriello, Carratino, Lazaric, Valko, Rosasco; COLT 2019) and BBKB ("Scaling parallel
Gaussian process optimization with adaptive batching and resparsification", ICML 2020).

With the dictionary S (``dict_idx``/``dict_mask``, capacity m_max), the embedding z(x) = W k_S(x) with
W = K_S^{+1/2}, and pulled arms stored as counts n_i and summed rewards Y_i (docs/protocols.md#bbkb-code-vs-paper):

    V        = sum_i n_i z(x_i) z(x_i)^T + lam I                              (m, m)
    mu~(x)   = z(x)^T V^{-1} sum_i z(x_i) Y_i                                 BBKB Eq. (1)
    s~^2(x)  = (k(x,x) - z(x)^T z(x)) / lam + z(x)^T V^{-1} z(x)              BBKB Eq. (2), lam-scaled

The variance of all A arms uses one GEMM (docs/architecture.md#cost-model), in a square-root form that is stable for an
ill-conditioned K_S,

    s~^2(x) = k(x,x)/lam - ||B^T k_S(x)||^2,   B = W^T (I/lam - V^{-1})^{1/2}
             (= k(x,x)/lam + k_S(x)^T M k_S(x) with M = W^T V^{-1} W - K_S^+/lam = -B B^T),
    mu~(x)  = k_S(x)^T a,                       a = W^T V^{-1} sum_i z(x_i) Y_i,

and is tested against the embedded form ([`embedded_variance`][]). Variances are in the papers' lam-scaled units: s~^2 =
(GP posterior variance with noise lam) / lam.
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from sketchbo.linalg import eig_on_width, mm, psd_inv_sqrt, sherman_morrison, sym_eig


class NystromPosterior(NamedTuple):
    """W, Vinv, B and a are in the factor dtype (``posterior``'s ``fdtype``), the rest in the arms' dtype.

    Attributes:
        W: `(m_max, m_max)` K_S^{+1/2}, zero rows for dropped eigenvalues, zero columns for empty slots
        Vinv: `(m_max, m_max)` V^{-1}
        B: `(m_max, m_max)` W^T (I/lam - V^{-1})^{1/2}: s~^2(x) = k(x,x)/lam - ||B^T k_S(x)||^2
        a: `(m_max,)` mean weights on k_S(x)
        mean: `(A,)` mu~(x) for every arm
        var: `(A,)` s~^2(x) for every arm (lam-scaled), clamped at 0
        rank: `()` int, number of eigenvalues of K_S kept
        max_clamp: `()` largest negative rounding clamped to zero in var
    """

    W: jax.Array
    Vinv: jax.Array
    B: jax.Array
    a: jax.Array
    mean: jax.Array
    var: jax.Array
    rank: jax.Array
    max_clamp: jax.Array


def cross_kernel(kernel, kparams, X, Xs, mask):
    """k_S(x) for each row of X: (n, m_max), zero in empty dictionary slots."""
    return kernel.k(kparams, X, Xs) * mask.astype(X.dtype)[None, :]


def factor_dtype(dtype):
    """dtype of the dictionary's m x m algebra for arms of ``dtype``: float64 wherever JAX has it.

    In float32 the pseudo-inverse root of K_S drops every eigenvalue below max_eig m eps_32
    (docs/architecture.md#numerics),
    about ten of 64 on Cadata: the model loses part of its dictionary (mean off by 0.1, variances by 3e-3
    after 3000 pulls, against 2e-3 and 6e-5 from float32 rounding alone), which raised R_T/R_unif from 0.109
    to 0.120. The O(m^3 + U m^2) factorisation therefore runs in float64 and only the O(A m) work (the kernel
    block, the resparsification GEMM, the UCBs) in float32. The GEMM's rounding grows with the entries of B
    and a, which stay moderate (the 1/sqrt(e) of W mostly cancels against (I/lam - V^{-1})^{1/2}; on Cadata
    |B| <= 70, |a| <= 200, variances within 4e-6 and means within 2e-4 of float64).
    Without float64 (x64 disabled) everything stays in ``dtype``.
    """
    return jnp.promote_types(dtype, jax.dtypes.canonicalize_dtype(jnp.float64))


def dictionary_factors(kernel, kparams, Xs, dict_mask, X_U, n_U, Y_U, lam, eig_method: str = "auto", eig=None):
    """The m x m algebra of a resparsification, in the dtype of its inputs: ``(W, Vinv, B, a, rank)``.

    ``Xs`` (m_max, d) dictionary points, ``X_U`` (u_max, d) unique pulled arms with counts ``n_U`` and summed rewards
    ``Y_U`` (0 in empty slots). V = Z_U^T N Z_U + lam I is formed from the embedded pulled arms Z_U = K_US W^T, so it is
    positive definite by construction whatever the conditioning of K_S. ``eig_method`` (static; ``linalg.EIG_METHODS``):
    the solver of both eigendecompositions, K_S and V (``auto``: LAPACK's eigh on CPU, cyclic Jacobi on accelerators,
    ``linalg.resolve_eig_method``), or ``eig``, a function of the matrix giving its ``(w, V)``
    ([`posterior_on_width`][]).
    """
    W, rank = psd_inv_sqrt(kernel.k(kparams, Xs, Xs), dict_mask, eig_method, eig)
    # Empty slots need no masking below: W has zero columns there.
    Z_U = mm(kernel.k(kparams, X_U, Xs), W.T)  # (u_max, m_max) embedded pulled arms
    m = W.shape[0]
    V = mm((Z_U * n_U[:, None]).T, Z_U) + lam * jnp.eye(m, dtype=W.dtype)  # sum_i n_i z_i z_i^T + lam I
    evals, Q = sym_eig(V, eig_method) if eig is None else eig(V)
    evals = jnp.maximum(evals, lam)  # V >= lam I exactly; guard the rounding
    Vinv = mm(Q / evals, Q.T)
    B = mm(W.T, mm(Q * jnp.sqrt(jnp.maximum(1.0 / lam - 1.0 / evals, 0.0)), Q.T))
    a = mm(W.T, mm(Vinv, mm(Z_U.T, Y_U)))  # mu~(x) = z(x)^T V^{-1} sum_i z_i Y_i = k_S(x)^T a
    return W, Vinv, B, a, rank


def posterior(kernel, kparams, arms, kdiag, dict_idx, dict_mask, pulled_idx, pulled_mask, counts, ysum, lam,
              fdtype=None, eig_method: str = "auto"):
    """Full DTC posterior of all arms for a new dictionary (one resparsification, docs/architecture.md#cost-model).

    ``pulled_idx``/``pulled_mask`` (u_max,) list the unique pulled arms; ``counts``/``ysum`` are (A,). The variance uses
    the square-root form s~^2(x) = k(x,x)/lam - ||B^T k_S(x)||^2 with B = W^T (I/lam - V^{-1})^{1/2} (V >= lam I): one
    (A x m)(m x m) product, and no cancellation between terms of size 1/(lam e_min(K_S)) as in k_S^T M k_S. Cost: K_AS
    (A m d), one A m^2 GEMM, O(U m^2 + m^3). ``fdtype`` (static; default the arms' dtype) is the dtype of the m x m
    algebra ([`factor_dtype`][]): W, Vinv, B, a come back in it, mean and var in the arms' dtype. ``eig_method``
    (static): the eigensolver of [`dictionary_factors`][].
    """
    fdt = arms.dtype if fdtype is None else fdtype
    Xs, W, Vinv, B, a, rank = _factors(kernel, kparams, arms, dict_idx, dict_mask, pulled_idx, pulled_mask, counts,
                                       ysum, lam, fdt, eig_method)
    mean, var, max_clamp = arm_moments(kernel, kparams, arms, kdiag, Xs, a, B, lam)
    return NystromPosterior(W, Vinv, B, a, mean, var, rank, max_clamp)


def _factors(kernel, kparams, arms, dict_idx, dict_mask, pulled_idx, pulled_mask, counts, ysum, lam, fdt, eig_method,
             eig=None):
    """The dictionary points ``Xs`` (m_max, d) and [`dictionary_factors`][] of a new dictionary, in ``fdt``."""
    kp_f = jax.tree.map(lambda v: jnp.asarray(v).astype(fdt), kparams)
    n_U = jnp.where(pulled_mask, counts[pulled_idx], 0.0).astype(fdt)
    Y_U = jnp.where(pulled_mask, ysum[pulled_idx], 0.0).astype(fdt)
    Xs = arms[dict_idx]  # (m_max, d)
    W, Vinv, B, a, rank = dictionary_factors(kernel, kp_f, Xs.astype(fdt), dict_mask, arms[pulled_idx].astype(fdt),
                                             n_U, Y_U, jnp.asarray(lam).astype(fdt), eig_method, eig)
    return Xs, W, Vinv, B, a, rank


def arm_moments(kernel, kparams, arms, kdiag, Xs, a, B, lam):
    """The O(A m^2) part of [`posterior`][]: ``(mean (A,), var (A,), max_clamp)`` of every arm from the dictionary
    points ``Xs`` (w, d) and the factors ``a`` (w,), ``B`` (w, k) of their slots, in the arms' dtype. Empty slots have
    zero rows in ``a`` and ``B``, so slots beyond the last used one may be left out."""
    dt = arms.dtype
    # The barrier materialises K_AS once; without it XLA on CPU fuses (and repeats) the exp into every
    # consumer, which measured 3x slower.
    K_AS = jax.lax.optimization_barrier(kernel.k(kparams, arms, Xs))  # (A, w)
    mean = mm(K_AS, a.astype(dt))  # Eq. (1)
    R = mm(K_AS, B.astype(dt))
    var_raw = kdiag / lam - jnp.sum(R * R, axis=1)  # Eq. (2)
    return mean, jnp.maximum(var_raw, 0.0), jnp.maximum(-jnp.min(var_raw), 0.0)


SLOT_BLOCK = 16
"""The granularity of the dictionary widths a resparsification computes on ([`slot_widths`][])."""
MOST_WIDTHS = 5
"""The most dictionary widths: each is a branch of the compiled program, compiled once, that saves work on every
resparsification of every seed (docs/benchmarks.md#dictionary-width)."""


def slot_widths(m_max: int, block: int = SLOT_BLOCK, most: int = MOST_WIDTHS) -> tuple[int, ...]:
    """The static widths of [`posterior_on_width`][]: m_max j / most for j < most, each rounded up to a multiple of
    ``block``, those at least block / 2 below m_max, then m_max (``block`` 0: m_max alone). m_max = 96: (32, 48, 64,
    80, 96); 99: (32, 48, 64, 80, 99); 128: (32, 64, 80, 112, 128); 918: (192, 368, 560, 736, 918)."""
    if block <= 0:
        return (m_max,)
    below = {block * -(-(m_max * j) // (most * block)) for j in range(1, most)}
    return tuple(sorted(w for w in below if w <= m_max - block / 2)) + (m_max,)


def width_index(dict_mask, widths):
    """Index into ``widths`` of the narrowest one holding every slot in use (the last used slot, whatever the
    layout of ``dict_mask``)."""
    used = jnp.max(jnp.where(dict_mask, jnp.arange(dict_mask.shape[0]) + 1, 0))
    return jnp.sum(jnp.asarray(widths) < used).astype(jnp.int32)


def posterior_on_width(index, kernel, kparams, arms, kdiag, dict_idx, dict_mask, pulled_idx, pulled_mask, counts,
                       ysum, lam, fdtype=None, eig_method: str = "auto", block: int = SLOT_BLOCK):
    """[`posterior`][] computed on the first w = ``slot_widths(m_max, block)[index]`` dictionary slots, returned at
    m_max slots (docs/architecture.md#cost-model). The slots beyond w must be empty ([`width_index`][] gives the
    narrowest such w). Then K_S and V are block diagonal beyond w (zero, and lam I), so both eigendecompositions come
    from their w x w blocks (``linalg.eig_on_width``), W, B and a are zero beyond w and V^{-1} is I/lam there, and every
    arm's mean and variance ([`arm_moments`][]) needs only the first w slots: O(A w^2) for the arms and O(w^3) for the
    eigendecompositions in place of O(A m_max^2) and O(m_max^3) (the m x m products between them stay at m_max), while
    the dictionary grows slowly (Cadata: 32 arms at t = 100, 79 at 10^4). The result is the full posterior up to the
    rounding of products of another size and a rotation of the embedding (which leaves W^T W, B B^T, W^T V^{-1} W and a
    unchanged). ``index`` may be traced: a ``lax.switch`` per eigendecomposition and one for the arms, one branch per
    width (under ``vmap`` a per-seed index computes every branch)."""
    fdt = arms.dtype if fdtype is None else fdtype
    widths = slot_widths(dict_idx.shape[0], block)
    Xs, W, Vinv, B, a, rank = _factors(kernel, kparams, arms, dict_idx, dict_mask, pulled_idx, pulled_mask, counts,
                                       ysum, lam, fdt, eig_method,
                                       lambda M: eig_on_width(M, index, widths, eig_method))

    def at(w):
        return lambda Xs, a, B: arm_moments(kernel, kparams, arms, kdiag, Xs[:w], a[:w], B[:w, :w], lam)

    mean, var, max_clamp = jax.lax.switch(index, [at(w) for w in widths], Xs, a, B)
    return NystromPosterior(W, Vinv, B, a, mean, var, rank, max_clamp)


def first_true(mask, size: int):
    """The indices of the first ``size`` True entries of the 1-D ``mask`` in increasing order, 0 beyond their count:
    ``jnp.nonzero(mask, size=size, fill_value=0)[0]`` as int32, computed by one top-k of -i over the True entries
    instead of a cumulative sum, which XLA:CPU compiles into a tree of about 35 reduce-window kernels for A = 20640
    arms (docs/benchmarks.md#compile-time). The scores -i are exact in float32 up to 2^24 entries; beyond that, or
    for ``size`` above the length, ``jnp.nonzero`` is used."""
    n = mask.shape[0]
    if n > 2 ** 24 or size > n:
        return jnp.nonzero(mask, size=size, fill_value=0)[0].astype(jnp.int32)
    score = jnp.where(mask, -jnp.arange(n, dtype=jnp.float32), -jnp.inf)
    idx = jax.lax.top_k(score, size)[1]
    return jnp.where(jnp.arange(size) < jnp.sum(mask), idx, 0).astype(jnp.int32)


def pulled_list(counts, u_max):
    """The unique pulled arms as a fixed-capacity list: (idx (u_max,) int32, mask (u_max,) bool, n_unique)."""
    keep = counts > 0
    n = jnp.sum(keep)
    return first_true(keep, u_max), jnp.arange(u_max) < n, n


def embedded_variance(kS_x, kdiag_x, W, Vinv, lam):
    """BBKB Eq. (2) for one arm from its kernel row k_S(x) (m_max,): O(m^2)."""
    z = mm(W, kS_x)
    return jnp.maximum((kdiag_x - mm(z, z)) / lam + mm(z, mm(Vinv, z)), 0.0)


def embedded_variances(K_xS, kdiag_x, W, Vinv, lam):
    """[`embedded_variance`][] of n arms at once from their kernel rows ``K_xS`` (n, m_max): O(n m^2) in two products
    with the m x m factor on the left, Z = W K_xS^T and V^{-1} Z (V^{-1} is symmetric), the layouts XLA:CPU runs
    fastest (a product with the factor transposed on the right ran 10x slower for the in-batch step's 8 arms)."""
    Z = mm(W, K_xS.T)  # (m, n): column i is z(x_i) = W k_S(x_i)
    return jnp.maximum((kdiag_x - jnp.sum(Z * Z, axis=0)) / lam + jnp.sum(mm(Vinv, Z) * Z, axis=0), 0.0)


def add_to_batch(Vinv, W, kS_x):
    """In-batch variance update: V <- V + z(x) z(x)^T for a selected arm, O(m^2) (BBKB Alg. 1, L7)."""
    return sherman_morrison(Vinv, mm(W, kS_x))


def covariance_with(kernel, kparams, arms, Xs, dict_mask, B, x, lam):
    """Approximate posterior covariance s~(x_i, x) of every arm with one point (lam-scaled, (A,)).

    s~(x_i, x) = z_i^T V^{-1} z + (k(x_i, x) - z_i^T z)/lam = k(x_i, x)/lam - k_S(x_i)^T B B^T k_S(x).
    Used by the GlobalLocal batch rule (docs/algorithms.md#globallocal-bbkb). Cost O(A m d).
    """
    K_AS = cross_kernel(kernel, kparams, arms, Xs, dict_mask)
    kS_x = cross_kernel(kernel, kparams, x[None, :], Xs, dict_mask)[0]
    v = mm(B, mm(B.T, kS_x.astype(B.dtype))).astype(arms.dtype)  # B may be in the factor dtype
    return kernel.k(kparams, arms, x[None, :])[:, 0] / lam - mm(K_AS, v)


def inclusion_probability(var_fb, counts, qbar, per_pull):
    """Probability that each arm enters the new dictionary (BBKB Alg. 1, L13; BKB Alg. 1).

    ``per_pull=True`` (paper): one Bernoulli(min(1, qbar s~^2_fb(x_s))) per pull; as the dictionary is a
    set, an arm pulled n_i times enters with 1 - (1 - p_i)^{n_i} — the same distribution of S.
    ``per_pull=False`` (public code): one Bernoulli(min(1, qbar n_i s~^2_fb(x_i))) per unique arm.
    """
    p = jnp.clip(qbar * var_fb, 0.0, 1.0)
    pulled = counts > 0
    if per_pull:
        prob = 1.0 - jnp.power(1.0 - p, counts)
    else:
        prob = jnp.clip(qbar * counts * var_fb, 0.0, 1.0)
    return jnp.where(pulled, prob, 0.0)


def resample_dictionary(key, var_fb, counts, qbar, per_pull, m_max):
    """Ridge-leverage resampling of the dictionary among pulled arms (BBKB Alg. 1, L11–16).

    Returns ``(dict_idx (m_max,) int32, dict_mask (m_max,) bool, wanted () int)``; ``wanted > m_max``
    means the capacity overflowed (the kept slots are then a truncation and the runner must re-run).
    """
    prob = inclusion_probability(var_fb, counts, qbar, per_pull)
    keep = jax.random.uniform(key, var_fb.shape, dtype=var_fb.dtype) < prob
    wanted = jnp.sum(keep)
    return first_true(keep, m_max), jnp.arange(m_max) < wanted, wanted


def exact_dictionary(counts, m_max):
    """The dictionary holding every pulled arm (S = X_t): BKB/BBKB then equal GP-UCB/GP-BUCB. It is the
    list of unique pulled arms at the dictionary's capacity: (idx (m_max,), mask, wanted)."""
    return pulled_list(counts, m_max)


__all__ = [
    "NystromPosterior", "MOST_WIDTHS", "SLOT_BLOCK", "factor_dtype", "dictionary_factors", "posterior", "arm_moments",
    "posterior_on_width",
    "slot_widths", "width_index", "embedded_variance", "embedded_variances", "add_to_batch",
    "covariance_with", "cross_kernel", "first_true", "inclusion_probability", "resample_dictionary", "exact_dictionary",
]
