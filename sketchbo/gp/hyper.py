r"""Exact GP regression with a Matérn-5/2 ARD kernel on fixed-capacity masked buffers, and maximum-likelihood fitting of
its hyperparameters with optax (GSSBO, Wei et al. 2025, §6: "Matérn 5/2 kernel ... hyperparameters learned via maximum
likelihood"; docs/protocols.md#box-protocol).

Data live in buffers of static capacity n with a boolean ``mask``. Masked-out rows are neutralised before every
factorisation: their kernel rows and columns are zero, their diagonal entry is one and their target is zero, so they add
nothing to the log marginal likelihood and nothing to the posterior (docs/architecture.md#conventions).

Targets are standardised over the valid rows (zero mean, unit variance; the constant mean function is the sample mean).
With K_n = K + s2 I over the valid rows and L = chol(K_n) (Rasmussen & Williams 2006, Eq. 2.30),

$$\log p(y \mid X, \theta) = -\tfrac12 y^\top K_n^{-1} y - \sum_i \log L_{ii} - \tfrac n2 \log 2\pi.$$

theta = (log lengthscales (d,), log outputscale, log noise variance) is fitted by Adam on -log p / n for a fixed number
of steps from a warm start, projected onto box bounds after every step; the gradient in K_n is the closed form
1/2 (a a^T - K_n^{-1}), a = K_n^{-1} y (R&W Eq. 5.9; ``gaussian_log_density``), chained to theta by autodiff. Sparse
(Nyström/DTC) models fit theta on every valid row with m landmarks Z held fixed, by Titsias' (2009) collapsed
variational bound ([`collapsed_bound`][]) instead of the exact likelihood: O(n m^2) per step.
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax

from sketchbo import linalg
from sketchbo.kernels import get_kernel

MATERN = get_kernel("matern52")
LOG_2PI = 1.8378770664093453


class GPHyper(NamedTuple):
    """Log-parameterised hyperparameters of the Matérn-5/2 ARD GP.

    Attributes:
        log_ls: `(d,)` log lengthscales
        log_scale: `()` log outputscale (kernel variance)
        log_noise: `()` log noise variance (on the standardised targets)
    """

    log_ls: jax.Array
    log_scale: jax.Array
    log_noise: jax.Array


class HyperBounds(NamedTuple):
    """Box bounds of the hyperparameters (natural scale), onto which theta is projected after each step.

    Attributes:
        ls: `(low, high)` of the lengthscales (the inputs live in [0, 1]^d, which fixes sensible ranges)
        scale: `(low, high)` of the outputscale (the targets are standardised)
        noise: `(low, high)` of the noise variance
    """

    ls: tuple = (1e-2, 1e2)
    scale: tuple = (5e-2, 2e1)
    noise: tuple = (1e-6, 1.0)


class ExactPosterior(NamedTuple):
    """An exact GP posterior on a masked buffer of samples, ready for [`predict`][].

    Attributes:
        X: `(n, d)` inputs (masked rows are ignored)
        mask: `(n,)` bool valid rows
        L: `(n, n)` Cholesky factor of the masked K + s2 I
        alpha: `(n,)` K_n^{-1} y_std (zero in masked rows)
        hyper: hyperparameters used
        y_mean: `()` mean of the valid targets
        y_std: `()` std of the valid targets (1 when they are constant)
    """

    X: jax.Array
    mask: jax.Array
    L: jax.Array
    alpha: jax.Array
    hyper: GPHyper
    y_mean: jax.Array
    y_std: jax.Array


def init_hyper(d: int, dtype=jnp.float64, lengthscale=None) -> GPHyper:
    """Starting point: lengthscales sqrt(d)/4 (about a quarter of the cube's diagonal), outputscale 1, noise 1e-3."""
    ls = jnp.sqrt(float(d)) / 4.0 if lengthscale is None else lengthscale
    return GPHyper(jnp.full((d,), jnp.log(ls), dtype), jnp.zeros((), dtype), jnp.asarray(jnp.log(1e-3), dtype))


def kernel_params(h: GPHyper) -> dict:
    """The ``sketchbo.kernels`` matern52 parameters of ``h``."""
    return {"lengthscales": jnp.exp(h.log_ls), "variance": jnp.exp(h.log_scale)}


def project(h: GPHyper, bounds: HyperBounds = HyperBounds()) -> GPHyper:
    """theta clipped onto the box bounds (the projection of projected Adam)."""
    def clip(v, b):
        return jnp.clip(v, jnp.log(b[0]), jnp.log(b[1]))
    return GPHyper(clip(h.log_ls, bounds.ls), clip(h.log_scale, bounds.scale), clip(h.log_noise, bounds.noise))


def standardise(y, mask):
    """(y_std (n,) zero in masked rows, mean (), std ()) over the valid rows; std = 1 for constant data."""
    w = mask.astype(y.dtype)
    n = jnp.maximum(jnp.sum(w), 1.0)
    mean = jnp.sum(w * y) / n
    var = jnp.sum(w * (y - mean) ** 2) / n
    std = jnp.where(var > 0, jnp.sqrt(var), 1.0)
    return w * (y - mean) / std, mean, std


OUTPUT_WARPS = ("none", "bilog", "copula")  # algorithm.output_warp: the monotone map of the targets the GP models


def warp_outputs(rule: str, y, mask):
    """The targets the GP models, (n,) zero in masked rows: a monotone map of the raw targets ``y`` (n,).

    ``none``: ``y`` itself (the paper protocol; the fit standardises it). ``bilog``: sign(z)·log(1 + |z|) of the
    standardised z, which keeps the sign and compresses heavy tails (Eriksson & Poloczek 2021, SCBO). ``copula``: the
    normal scores Φ⁻¹((r + ½)/n) of the ranks r among the n valid rows, a Gaussian copula (Salinas et al. 2020), which
    makes any marginal Gaussian. Both keep the order of the targets, so the incumbents are the same; the GP and its UCB
    live on the warped scale. ``rule`` is static.
    """
    if rule == "none":
        return y
    z, _, _ = standardise(y, mask)
    if rule == "bilog":
        return jnp.where(mask, jnp.sign(z) * jnp.log1p(jnp.abs(z)), 0.0)
    if rule == "copula":
        n = jnp.maximum(jnp.sum(mask), 1).astype(y.dtype)
        order = jnp.argsort(jnp.where(mask, z, jnp.inf))
        ranks = jnp.zeros(y.shape[0], y.dtype).at[order].set(jnp.arange(y.shape[0], dtype=y.dtype))
        return jnp.where(mask, jax.scipy.special.ndtri((ranks + 0.5) / n), 0.0)
    raise ValueError(f"output_warp={rule!r}: one of {list(OUTPUT_WARPS)}")


def masked_kernel(h: GPHyper, X, mask, counts=None):
    """K + s2 W^{-1} over the valid rows; masked rows/columns are zero with a unit diagonal: (n, n).

    ``counts`` (n,) (default: ones) makes row i the mean of counts_i evaluations, of noise variance s2 / counts_i (the
    unique-point form of mini-META, docs/algorithms.md#mini-meta).
    """
    w = mask.astype(X.dtype)
    K = MATERN.k(kernel_params(h), X, X) * w[:, None] * w[None, :]
    noise = jnp.exp(h.log_noise) if counts is None else jnp.exp(h.log_noise) / jnp.maximum(counts, 1.0)
    return K + jnp.diag(jnp.where(mask, noise, 1.0))


@jax.custom_vjp
def gaussian_log_density(Kn, y):
    """log N(y; 0, Kn) without the -n/2 log(2 pi) term, for an SPD Kn (n, n): -1/2 y^T Kn^{-1} y - sum log L_ii.

    Its gradient in Kn is the closed form 1/2 (a a^T - Kn^{-1}), a = Kn^{-1} y (R&W Eq. 5.9), from the Cholesky factor
    and one inverse (``linalg.spd_inverse``). Differentiating through the factorisation instead (JAX's Cholesky VJP)
    cost 10x the factorisation at n = 1000 on the CPU and was most of Standard GP-UCB's time (20 likelihood gradients
    per iteration). ``y`` gets no gradient (data).
    """
    return _gaussian_log_density_fwd(Kn, y)[0]


def _gaussian_log_density_fwd(Kn, y):
    L = jnp.linalg.cholesky(Kn)
    z = jax.scipy.linalg.solve_triangular(L, y, lower=True)
    a = jax.scipy.linalg.solve_triangular(L.T, z, lower=False)
    return -0.5 * z @ z - jnp.sum(jnp.log(jnp.diagonal(L))), (L, a)


def _gaussian_log_density_bwd(res, g):
    L, a = res
    # the inverse's triangular solves after the forward's (a depends on them): under vmap they could otherwise
    # run concurrently, which can hang the CPU runtime (sketchbo.engine.lapack_overlap)
    return 0.5 * g * (jnp.outer(a, a) - linalg.spd_inverse(linalg.after(L, a))), None


gaussian_log_density.defvjp(_gaussian_log_density_fwd, _gaussian_log_density_bwd)


def log_marginal_likelihood(h: GPHyper, X, y_std, mask, counts=None):
    """log p(y | X, theta) of the valid rows (R&W Eq. 2.30); ``y_std`` standardised, zero in masked rows."""
    n = jnp.sum(mask)
    return gaussian_log_density(masked_kernel(h, X, mask, counts), y_std) - 0.5 * n * LOG_2PI


JITTER = 1e-6  # added to K_ZZ's diagonal, relative to the outputscale, in the collapsed bound (GPflow's default)


@jax.custom_vjp
def titsias_bound(Kzz, Kzn, s2, tr_knn, y, n):
    r"""Titsias' collapsed bound from its kernel matrices: K_ZZ (m, m) with its jitter, K_Zn (m, n_cap) (zero columns
    for masked rows), noise s2, tr K_nn over the valid rows, targets y (zero in masked rows) and the number n of valid
    rows. With L = chol(K_ZZ), A = L^{-1} K_Zn / s, B = I + A A^T = L_B L_B^T, c = L_B^{-1} A y / s:

    $$F = -\tfrac n2 \log(2 \pi s_2) - \sum \log \mathrm{diag}(L_B) - \frac{y^\top y - s_2 c^\top c}{2 s_2} - \tfrac12
    \left(\mathrm{tr} K_{nn} / s_2 - \|A\|_F^2\right).$$

    Its gradient is in closed form (``_titsias_bwd``); ``y`` and ``n`` get none (data).
    """
    return _titsias_fwd(Kzz, Kzn, s2, tr_knn, y, n)[0]


def _titsias_fwd(Kzz, Kzn, s2, tr_knn, y, n):
    m = Kzz.shape[0]
    L = jnp.linalg.cholesky(Kzz)
    A = jax.scipy.linalg.solve_triangular(L, Kzn, lower=True) / jnp.sqrt(s2)  # (m, n_cap)
    LB = jnp.linalg.cholesky(jnp.eye(m, dtype=Kzz.dtype) + A @ A.T)
    c = jax.scipy.linalg.solve_triangular(LB, A @ y, lower=True) / jnp.sqrt(s2)
    F = (-0.5 * n * (LOG_2PI + jnp.log(s2)) - jnp.sum(jnp.log(jnp.diagonal(LB))) - 0.5 * (y @ y) / s2
         + 0.5 * c @ c - 0.5 * (tr_knn / s2 - jnp.sum(A * A)))
    return F, (L, A, LB, c, y, s2, tr_knn, n)


def _titsias_bwd(res, g):
    """With C = Q + s2 I (Q = K_nZ K_ZZ^{-1} K_Zn), alpha = C^{-1} y, P = K_ZZ^{-1} K_Zn and G = (alpha alpha^T -
    C^{-1}) / 2 + I / (2 s2): dF = 2 tr(P G dK_Zn^T) - tr(P G P^T dK_ZZ) + [(alpha^T alpha - tr C^{-1}) / 2 + tr(K_nn -
    Q) / (2 s2^2)] ds2 - d tr K_nn / (2 s2), where C^{-1} = (I - A^T B^{-1} A) / s2 (Woodbury) keeps every term O(n
    m^2)."""
    L, A, LB, c, y, s2, tr_knn, n = res
    m = A.shape[0]
    # ordered after the forward's solves: concurrent batched LAPACK calls can hang the CPU runtime under vmap
    # (sketchbo.engine.lapack_overlap)
    Binv = linalg.spd_inverse(linalg.after(LB, c))
    P = jax.scipy.linalg.solve_triangular(linalg.after(L, Binv), A, lower=True, trans="T") * jnp.sqrt(s2)  # (m, n)
    alpha = (y - A.T @ (Binv @ (A @ y))) / s2
    P_alpha = P @ alpha
    P_Cinv = (P - (P @ A.T) @ Binv @ A) / s2  # P C^{-1} (m, n)
    PG = 0.5 * jnp.outer(P_alpha, alpha) - 0.5 * P_Cinv + P / (2.0 * s2)
    PGPt = 0.5 * jnp.outer(P_alpha, P_alpha) - 0.5 * P_Cinv @ P.T + P @ P.T / (2.0 * s2)
    tr_Cinv = (n - m + jnp.trace(Binv)) / s2  # tr(A^T B^{-1} A) = tr(I - B^{-1}) over the m slots
    tr_Q = s2 * jnp.sum(A * A)
    g_s2 = 0.5 * (alpha @ alpha - tr_Cinv) + (tr_knn - tr_Q) / (2.0 * s2 ** 2)
    return g * -0.5 * (PGPt + PGPt.T), g * 2.0 * PG, g * g_s2, g * -0.5 / s2, None, None


titsias_bound.defvjp(_titsias_fwd, _titsias_bwd)


def collapsed_bound(h: GPHyper, X, y_std, mask, Z, z_mask):
    r"""Titsias' (2009) collapsed lower bound on log p(y | X, theta) of a sparse GP with inducing inputs Z, over the
    valid rows of X (n, d) (``y_std`` standardised, zero in masked rows); Z (m, d) with ``z_mask``:

    $$F = \log N(y; 0, Q + s_2 I) - \mathrm{tr}(K_{nn} - Q) / (2 s_2), \quad Q = K_{nZ} K_{ZZ}^{-1} K_{Zn}$$

    (Titsias Eq. 9), K_ZZ with JITTER times the outputscale on its diagonal ([`titsias_bound`][]; the DTC mean and
    variance of ``sketchbo.gp.nystrom`` are this model's predictive equations). Masked landmarks have zero kernel rows
    and a unit diagonal; masked data rows zero kernel columns. O(n m^2).
    """
    kp = kernel_params(h)
    w = mask.astype(X.dtype)
    wz = z_mask.astype(X.dtype)
    Kzz = MATERN.k(kp, Z, Z) * wz[:, None] * wz[None, :]
    Kzz = Kzz + jnp.diag(jnp.where(z_mask, JITTER * jnp.exp(h.log_scale), 1.0))
    Kzn = MATERN.k(kp, Z, X) * wz[:, None] * w[None, :]
    tr_knn = jnp.sum(w * MATERN.diag(kp, X))
    return titsias_bound(Kzz, Kzn, jnp.exp(h.log_noise), tr_knn, y_std * w, jnp.sum(w))


SQRT2, SQRT3 = 1.4142135623730951, 1.7320508075688772
NOISE_PRIOR = (-4.0, 1.0)  # LogNormal (loc, scale) of the noise variance on standardised targets


def log_prior(h: GPHyper):
    """log p(theta) of the ``map`` fit (Hvarfner et al., "Vanilla Bayesian Optimization Performs Great in High
    Dimensions", ICML 2024; BoTorch's default GP since 0.12): ARD lengthscales LogNormal(sqrt 2 + log(d)/2, sqrt 3),
    whose median sqrt(d) e^{sqrt 2} grows with the dimension so that a d-dimensional model starts smooth, and the noise
    variance LogNormal(-4, 1) (prefers little noise on standardised targets). The densities are those of the
    lengthscales and the noise themselves (as GPyTorch adds them), in theta's log coordinates: log LogNormal(e^u; mu,
    s) = -u - (u - mu)^2 / (2 s^2) + const. No prior on the outputscale (its box bounds hold)."""
    d = h.log_ls.shape[0]

    def lognormal(u, loc, scale):
        return jnp.sum(-u - 0.5 * ((u - loc) / scale) ** 2)

    return lognormal(h.log_ls, SQRT2 + 0.5 * jnp.log(float(d)), SQRT3) + lognormal(h.log_noise, *NOISE_PRIOR)


FITS = ("adam", "map")  # "adam": the paper protocol's ML fit by Adam steps; "map": MAP by L-BFGS to convergence
LBFGS_TOL = 1e-5  # the map fit stops when the projected gradient's norm (of -objective / n) is below this
LBFGS_BACKTRACKS = 20  # most step shrinkings (each by 0.8) of the map fit's line search per iteration


def fit(h0: GPHyper, X, y, mask, steps: int, lr, bounds: HyperBounds = HyperBounds(), counts=None, inducing=None,
        method: str = "adam"):
    """The hyperparameters from the warm start ``h0``: ``method="adam"``, maximum likelihood by ``steps`` projected Adam
    steps of rate ``lr`` (the paper protocol); ``method="map"``, the maximum a posteriori with [`log_prior`][] by L-BFGS
    (``optax.lbfgs``, backtracking line search) until the projected gradient's norm is below ``LBFGS_TOL`` or ``steps``
    iterations, each projected onto the bounds (``lr`` unused).

    ``y`` are raw targets (standardised here). ``steps`` is static; ``lr`` may be traced. ``inducing``
    ``(Z (m, d), z_mask (m,))`` fits a sparse GP with those landmarks instead: the objective is Titsias' collapsed bound
    over every valid row ([`collapsed_bound`][]; ``counts`` is then not supported). Returns ``(h, info)`` with
    ``info["lml"]`` the likelihood objective (log marginal likelihood or bound) at ``h`` and ``info["fit_iterations"]``.
    A non-finite step (a failed factorisation) is rejected: the parameters stay where they were.
    """
    if inducing is not None and counts is not None:
        raise ValueError("fit: counts (repeated rows) are not supported with inducing points")
    y_std, _, _ = standardise(y, mask)
    n = jnp.maximum(jnp.sum(mask), 1).astype(y.dtype)

    def objective(h):
        if inducing is None:
            return log_marginal_likelihood(h, X, y_std, mask, counts)
        return collapsed_bound(h, X, y_std, mask, *inducing)

    h, iterations = maximise(objective, h0, n, steps, lr, method, bounds)
    return h, {"lml": objective(h), "fit_iterations": iterations}


def maximise(objective, h0: GPHyper, n, steps: int, lr, method: str = "adam",
             bounds: HyperBounds = HyperBounds()):
    """The hyperparameters maximising ``objective(h)`` (a log likelihood of n rows; ``method="map"`` adds
    [`log_prior`][]) from the projected warm start ``h0``, by [`fit`][]'s methods (``steps``, ``lr`` as there). Returns
    ``(h, iterations)``."""
    if method not in FITS:
        raise ValueError(f"method={method!r}; choose one of {list(FITS)}")

    def loss(h):
        return -(objective(h) + (log_prior(h) if method == "map" else 0.0)) / n

    run = _lbfgs if method == "map" else _adam
    return run(loss, project(h0, bounds), steps, lr, bounds)


def _finite(tree):
    return jnp.all(jnp.array([jnp.all(jnp.isfinite(v)) for v in jax.tree.leaves(tree)]))


def _adam(loss, h0, steps, lr, bounds):
    opt = optax.adam(lr)

    def step(carry, _):
        h, s = carry
        g = jax.grad(loss)(h)
        upd, s_new = opt.update(g, s, h)
        h_new = project(optax.apply_updates(h, upd), bounds)
        return (jax.tree.map(lambda a, b: jnp.where(_finite(g), a, b), h_new, h), s_new), None

    (h, _), _ = jax.lax.scan(step, (h0, opt.init(h0)), None, length=steps)
    return h, jnp.asarray(steps, jnp.int32)


def _projected_gradient_norm(h, g, bounds):
    """||h - project(h - g)||: the gradient's norm with the components that push against an active bound left out (0
    exactly at a bound-constrained stationary point)."""
    return optax.tree.norm(jax.tree.map(jnp.subtract, h, project(jax.tree.map(jnp.subtract, h, g), bounds)))


def _lbfgs(loss, h0, steps, lr, bounds):
    """L-BFGS with a backtracking (Armijo) line search. Not optax's default zoom line search: its step is a ``lax.cond``
    between two branches that each evaluate ``loss``, which under ``vmap`` (seeds) becomes a select that runs both
    Cholesky factorisations every iteration, concurrently (twice the work, and a hang risk on a small CPU:
    ``sketchbo.engine.lapack_overlap``). On three fits (d = 6 and 20, n = 60 to 200) both reach the same log posterior
    to 1e-3 in 21-35 iterations."""
    del lr
    opt = optax.lbfgs(linesearch=optax.scale_by_backtracking_linesearch(max_backtracking_steps=LBFGS_BACKTRACKS))
    value_and_grad = jax.value_and_grad(loss)

    def body(c):
        h, s, i, _ = c
        value, g = value_and_grad(h)
        upd, s_new = opt.update(g, s, h, value=value, grad=g, value_fn=loss)
        h_new = project(optax.apply_updates(h, upd), bounds)
        ok = _finite(g) & _finite(h_new)
        h_new = jax.tree.map(lambda a, b: jnp.where(ok, a, b), h_new, h)
        return h_new, s_new, i + 1, ok & (_projected_gradient_norm(h, g, bounds) > LBFGS_TOL)

    def cond(c):
        return (c[2] < steps) & c[3]

    h, _, i, _ = jax.lax.while_loop(cond, body, (h0, opt.init(h0), jnp.zeros((), jnp.int32), jnp.asarray(True)))
    return h, i


def posterior(h: GPHyper, X, y, mask, counts=None) -> ExactPosterior:
    """Exact posterior of the valid rows (one Cholesky factorisation)."""
    y_std, mean, std = standardise(y, mask)
    L = jnp.linalg.cholesky(masked_kernel(h, X, mask, counts))
    alpha = jax.scipy.linalg.cho_solve((L, True), y_std)
    # L held as computed after alpha, so that predict's solves follow alpha's: concurrent batched LAPACK calls
    # can hang the CPU runtime under vmap (sketchbo.engine.lapack_overlap); once per posterior, not per query
    return ExactPosterior(X, mask, linalg.after(L, alpha), alpha, h, mean, std)


def predict(post: ExactPosterior, Xq):
    """Posterior mean and variance of the latent f at query points Xq (q, d), in the targets' units.

    mean = y_mean + y_std k_q^T K_n^{-1} y_std; var = y_std^2 (k(x, x) - ||L^{-1} k_q||^2) (R&W Eq. 2.25-26).
    """
    w = post.mask.astype(Xq.dtype)
    Kq = MATERN.k(kernel_params(post.hyper), Xq, post.X) * w[None, :]  # (q, n)
    mean = post.y_mean + post.y_std * (Kq @ post.alpha)
    V = jax.scipy.linalg.solve_triangular(post.L, Kq.T, lower=True)  # (n, q)
    var = jnp.exp(post.hyper.log_scale) - jnp.sum(V * V, axis=0)
    return mean, post.y_std ** 2 * jnp.maximum(var, 0.0)


__all__ = ["GPHyper", "HyperBounds", "ExactPosterior", "init_hyper", "kernel_params", "project", "standardise",
           "OUTPUT_WARPS", "warp_outputs",
           "masked_kernel", "gaussian_log_density", "log_marginal_likelihood", "titsias_bound", "collapsed_bound",
           "fit", "log_prior", "posterior", "predict", "FITS"]
