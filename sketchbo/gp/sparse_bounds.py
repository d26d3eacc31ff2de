"""Confidence bounds for sparse (Nyström / SVGP) GP statistics.

Paper: Vakili, Scarlett, Shiu, Bernacchia, "Improved Convergence Rates for Sparse Approximation Methods
in Kernel-Based Learning", ICML 2022 (docs/algorithms.md#sparse-confidence-bounds).

* [`svgp_statistics`][] — mu-bar and sigma-bar^2 of Eq. (4)–(5) for inducing points Z and data X_n with regulariser
  tau^2. They are the DTC statistics of BKB with lam = tau^2 (docs/algorithms.md#sparse-confidence-bounds): mu-bar = mu~
  and sigma-bar^2 = tau^2 s~^2, so they are computed by [`sketchbo.gp.nystrom.posterior`][] (no second implementation;
  ``tests/test_vakili.py`` checks the identity against Eq. (4)–(5) densely).
* [`lambda_max`][] — the largest eigenvalue of k_{X_n X_n} - kappa_{X_n X_n}, kappa(x, x') = k_Z(x)^T K_ZZ^{-1} k_Z(x')
  (Thm 3.5), for data stored as unique arms with counts.
* [`beta`][] — Theorem 3.5's width (2 + sqrt(lam_max)/tau) C_k + (R/tau) sqrt(2 log(1/delta)); every width here takes
  log(1/delta) so that tiny deltas (union bounds) never underflow.
* [`log_inv_delta_finite`][] — the union bound over a finite domain (delta -> delta/|X|).
* [`continuous_width`][] — Corollary 3.7's uniform width 2/n + beta~_n(delta) (sigma-bar + 2/sqrt(n)).
* [`beta_exact`][] — the exact-GP width of Vakili et al. 2021a, C_k + (R/tau) sqrt(2 log(1/delta)) (the paper prints it
  with R = tau), for comparison.

Every sigma-bar here is in GP units (the paper's); the Nyström engine's s~ are lam-scaled, s~^2 = sigma-bar^2 / lam.
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from sketchbo.gp import nystrom
from sketchbo.linalg import mm


class SVGPStatistics(NamedTuple):
    """The sparse GP statistics of Vakili et al. (Eqs. (4)-(5)) on every arm.

    Attributes:
        mean: `(A,)` mu-bar_n(x), Eq. (4)-(5)
        var: `(A,)` sigma-bar^2_n(x) in GP units, Eq. (4)
        post: the engine's posterior (lam = tau^2): W, V^{-1}, B, a, lam-scaled var
    """

    mean: jax.Array
    var: jax.Array
    post: nystrom.NystromPosterior


def svgp_statistics(kernel, kparams, arms, kdiag, z_idx, z_mask, pulled_idx, pulled_mask, counts, ysum, tau2):
    """mu-bar, sigma-bar^2 (Eq. (4)–(5)) of every arm; inducing points ``arms[z_idx]`` (``z_mask``) and data
    given as unique pulled arms with counts n_i and summed rewards Y_i (``counts``/``ysum`` (A,)).

    With z(x) = K_ZZ^{+1/2} k_Z(x): k_Z^T (tau^2 K_ZZ + K_ZX K_XZ)^{-1} K_ZX Y = z^T (Z_X^T Z_X + tau^2 I)^{-1}
    Z_X^T Y = mu~ and k - k_Z^T K_ZZ^{-1} k_Z + k_Z^T (K_ZZ + K_ZX K_XZ / tau^2)^{-1} k_Z = tau^2 s~^2.
    Points outside the arm set (a continuous domain) are handled by making them rows of ``arms``.
    """
    post = nystrom.posterior(kernel, kparams, arms, kdiag, z_idx, z_mask, pulled_idx, pulled_mask, counts, ysum,
                             tau2)
    return SVGPStatistics(post.mean, tau2 * post.var, post)


def residual_kernel(kernel, kparams, X, Xz, z_mask, W):
    """k_XX - kappa_XX (n, n) for points X (n, d), inducing points Xz (m_max, d) and W = K_ZZ^{+1/2}
    (``nystrom.posterior``'s W): kappa_XX = Z_X Z_X^T with Z_X = K_XZ W^T."""
    Z_X = mm(nystrom.cross_kernel(kernel, kparams, X, Xz, z_mask), W.T)
    return kernel.k(kparams, X, X) - mm(Z_X, Z_X.T)


def lambda_max(kernel, kparams, arms, W, z_idx, z_mask, pulled_idx, pulled_mask, counts):
    """lambda_max of k_{X_n X_n} - kappa_{X_n X_n} (Thm 3.5) over the n pulls, repeats included.

    With E = (k - kappa) on the U unique pulled arms and P the (n x U) selection of the pulls, the n x n
    matrix is P E P^T, whose nonzero eigenvalues are those of N^{1/2} E N^{1/2} (N = diag of counts): one
    (u_max x u_max) ``eigvalsh`` with empty slots zeroed.
    """
    E = residual_kernel(kernel, kparams, arms[pulled_idx], arms[z_idx], z_mask, W)
    root_n = jnp.sqrt(jnp.where(pulled_mask, counts[pulled_idx], 0.0))
    M = root_n[:, None] * E * root_n[None, :]
    return jnp.maximum(jnp.linalg.eigvalsh(M)[-1], 0.0)


def beta(lam_max, tau, C_k, R, log_inv_delta):
    """Theorem 3.5: f(x) in mu-bar(x) +- beta sigma-bar(x) w.p. >= 1 - delta for a fixed x,
    beta(delta) = (2 + sqrt(lam_max)/tau) C_k + (R/tau) sqrt(2 log(1/delta))."""
    return (2.0 + jnp.sqrt(lam_max) / tau) * C_k + (R / tau) * jnp.sqrt(2.0 * log_inv_delta)


def beta_exact(tau, C_k, R, log_inv_delta):
    """Exact-GP width (Vakili et al. 2021a, Thm 1, as quoted in §3.2): C_k + (R/tau) sqrt(2 log(1/delta))."""
    return C_k + (R / tau) * jnp.sqrt(2.0 * log_inv_delta)


def log_inv_delta_finite(delta, n_points):
    """log(|X|/delta): the union bound of Thm 3.5 over a finite domain (delta/|X| for delta)."""
    return jnp.log(n_points) - jnp.log(delta)


def continuous_log_inv_delta(delta, n, tau, C_k, R, k_max, d, c):
    """log(2 Gamma_n / delta) of Corollary 3.7, with Gamma_n = c (C_k^{mu-bar}(delta/2))^d n^d and
    C_k^{mu-bar}(delta') = C_k (1 + sqrt(n) k_max / tau) + (sqrt(n) R / tau) sqrt(2 log(2n/delta'))."""
    c_mu = C_k * (1.0 + jnp.sqrt(n) * k_max / tau) + (jnp.sqrt(n) * R / tau) * jnp.sqrt(2.0 * jnp.log(4.0 * n / delta))
    log_gamma = jnp.log(c) + d * jnp.log(c_mu) + d * jnp.log(n)
    return jnp.log(2.0) + log_gamma - jnp.log(delta)


def continuous_width(sigma_bar, n, lam_max, delta, tau, C_k, R, k_max, d, c):
    """Corollary 3.7: |f(x) - mu-bar_n(x)| <= 2/n + beta~_n(delta) (sigma-bar_n(x) + 2/sqrt(n)) uniformly in x
    w.p. >= 1 - delta, beta~_n(delta) = beta(delta / (2 Gamma_n)); ``c`` is Assumption 3.6's constant."""
    b = beta(lam_max, tau, C_k, R, continuous_log_inv_delta(delta, n, tau, C_k, R, k_max, d, c))
    return 2.0 / n + b * (sigma_bar + 2.0 / jnp.sqrt(n))


__all__ = [
    "SVGPStatistics", "svgp_statistics", "residual_kernel", "lambda_max", "beta", "beta_exact",
    "log_inv_delta_finite", "continuous_log_inv_delta", "continuous_width",
]
