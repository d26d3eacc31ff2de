"""Small, stable linear-algebra primitives on fixed-capacity (masked) matrices.

Used by the Nyström engine of BKB (Calandriello et al., COLT 2019) and BBKB (Calandriello et al.,
ICML 2020): the pseudo-inverse square root K_S^{+1/2} of a dictionary kernel matrix and Sherman–Morrison
rank-one updates of V^{-1} for in-batch variance updates.
"""
from __future__ import annotations

import jax.numpy as jnp


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
    u = Vinv @ z
    return Vinv - jnp.outer(u, u) / (1.0 + z @ u)
