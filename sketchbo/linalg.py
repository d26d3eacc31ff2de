"""Small, stable linear-algebra primitives on fixed-capacity (masked) matrices.

Used by the Nyström engine of BKB (Calandriello et al., COLT 2019) and BBKB (Calandriello et al.,
ICML 2020): the pseudo-inverse square root K_S^{+1/2} of a dictionary kernel matrix and Sherman–Morrison
rank-one updates of V^{-1} for in-batch variance updates; and an SPD inverse built from matrix products
(GSSBO's gradient vectors need the whole inverse of an N x N kernel matrix every round).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

HIGHEST = jax.lax.Precision.HIGHEST


def mm(a, b):
    """``a @ b`` at the full precision of its dtype on every backend (DESIGN §3): GPUs otherwise run
    float32 products in TF32 (a 10-bit mantissa), which doubled BBKB's regret on Cadata. Every GP product
    of the library goes through this (tests/test_precision.py checks the lowered programs)."""
    return jnp.matmul(a, b, precision=HIGHEST)



def masked_gram(K, mask):
    """Zero the rows and columns of masked-out slots: (m, m) -> (m, m)."""
    mf = mask.astype(K.dtype)
    return K * mf[:, None] * mf[None, :]


def psd_inv_sqrt(K, mask):
    """Pseudo-inverse square root of a PSD matrix restricted to ``mask``.

    Returns ``(W, rank)`` with ``W`` (m, m) such that ``W.T @ W = K^+`` and ``z(x) = W k_S(x)`` is the
    Nyström embedding z(x) = K_S^{+1/2} k_S(x) (BBKB §2, up to an orthogonal rotation, which leaves every
    posterior quantity unchanged). Eigenvalues below ``max_eig * m * eps`` are dropped (DESIGN §4; the
    same threshold as the authors' code) — no jitter is added.
    """
    Km = masked_gram(K, mask)
    evals, U = jnp.linalg.eigh(Km)
    m = jnp.sum(mask)
    eps = jnp.finfo(K.dtype).eps
    thr = jnp.maximum(jnp.max(evals), 0.0) * m * eps
    keep = evals > thr
    inv_sqrt = jnp.where(keep, 1.0 / jnp.sqrt(jnp.where(keep, evals, 1.0)), 0.0)
    W = inv_sqrt[:, None] * U.T * mask.astype(K.dtype)[None, :]
    return W, jnp.sum(keep)


def sherman_morrison(Vinv, z):
    """(V + z z^T)^{-1} from V^{-1} in O(m^2)."""
    u = mm(Vinv, z)
    return Vinv - jnp.outer(u, u) / (1.0 + mm(z, u))


def upper_triangular_inverse(U, block: int = 128):
    """U^{-1} of an upper-triangular (n, n) U by recursive 2 x 2 blocking:
    [[A, B], [0, C]]^{-1} = [[A^{-1}, -A^{-1} B C^{-1}], [0, C^{-1}]].

    Same result as a triangular solve against the identity (to rounding), but nearly all of its
    2n^3/3 flops are matrix products, which run several times faster on CPU than a triangular solve
    with n right-hand sides (n = 1008, a 2-core CPU: 8.9 ms against 36 ms, medians of 9). Blocks of at
    most ``block`` rows use the triangular solve.
    """
    n = U.shape[0]
    if n <= block:
        return jax.scipy.linalg.solve_triangular(U, jnp.eye(n, dtype=U.dtype), lower=False)
    k = n // 2
    Ai = upper_triangular_inverse(U[:k, :k], block)
    Ci = upper_triangular_inverse(U[k:, k:], block)
    top = jnp.concatenate([Ai, -mm(mm(Ai, U[:k, k:]), Ci)], axis=1)
    return jnp.concatenate([top, jnp.concatenate([jnp.zeros((n - k, k), U.dtype), Ci], axis=1)], axis=0)


def spd_inverse(L):
    """A^{-1} = X X^T with X = L^{-T}, for an SPD A = L L^T given its lower Cholesky factor L (n, n).

    Written as X X^T rather than W^T W (W = L^{-1}): XLA:CPU runs the former product about twice as fast.
    n = 1008 on a 2-core CPU: 23.5 ms against 56.7 ms for a Cholesky solve against the identity
    (scripts/bench_selection.py).
    """
    X = upper_triangular_inverse(L.T)
    return mm(X, X.T)
