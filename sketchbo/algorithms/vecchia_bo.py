"""VecchiaBO, a baseline of GSSBO's Figs. 2-3 (Wei et al. 2025, §6): GP-UCB with a Vecchia approximation of
the GP (Jimenez & Katzfuss, "Scalable Bayesian optimization using Vecchia approximations of Gaussian
processes", AISTATS 2023; scaled Vecchia of Katzfuss, Guinness & Lawrence 2022).

Vecchia's likelihood (Vecchia 1988; Katzfuss & Guinness 2021, Eq. 1): in an ordering i_1, ..., i_n of the
samples, p(y) ~= prod_k p(y_{i_k} | y_{c(i_k)}), with c(i) the m nearest samples earlier in the ordering, so

    log p(y) ~= sum_i log N(y_i; k_ic (K_cc + s2 I)^{-1} y_c, k_ii + s2 - k_ic (K_cc + s2 I)^{-1} k_ci),

m x m solves only, exact when every c(i) holds all earlier samples. Our choices, where the sources leave one:
* ordering: maximin (Guinness 2018) in the scaled inputs x / lengthscales of the previous round's fit,
  started at the sample nearest the centroid; neighbours: nearest in the same scaled inputs (scaled Vecchia);
  both recomputed every round and held fixed during the fit;
* m fixed (``m``, default 32; Jimenez & Katzfuss grow it like 7.2 log10(n)^2: 28 at n = 100, 64 at n = 1000);
* Matérn-5/2 ARD, outputscale and noise on standardised targets, fitted by projected Adam (``fit_steps``,
  ``lr_fit``; warm start, as ``sketchbo.gp.hyper.fit`` does for the exact GP);
* prediction: each candidate conditions on its m nearest samples in the scaled inputs (one at a time),
  mean k_xc (K_cc + s2 I)^{-1} y_c and latent variance
  k_xx - k_xc (K_cc + s2 I)^{-1} k_cx; UCB = mu + sqrt(beta_t) sigma, beta_t = beta_c d log(2t)
  (docs/protocols.md#box-protocol),
  maximised by ``sketchbo.acquisition`` as the other continuous methods.
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from sketchbo import acquisition
from sketchbo.algorithms.common import Algorithm, Feedback, RoundInfo, StepInfo
from sketchbo.algorithms.subset_bo import (BOStatic, Data, append_batch, data_mean, data_valid,
                                           design_or_planned, empty_data)
from sketchbo.gp import hyper
from sketchbo.kernels import sq_dist

MATERN = hyper.MATERN


class VecchiaParams(NamedTuple):
    """VecchiaBO's float hyperparameters (() arrays).

    Attributes:
        beta_c: beta_t = beta_c d log(2t) (beta_rule protocol)
        lr_fit: Adam step of the fit
        lr_acq: Adam step of the acquisition refinement
        local_scale: std of the incumbent perturbations
    """

    beta_c: jax.Array
    lr_fit: jax.Array
    lr_acq: jax.Array
    local_scale: jax.Array


class VecchiaState(NamedTuple):
    """The state of VecchiaBO: the samples, the fitted hyperparameters and the planned query.

    Attributes:
        data: the samples D: x (cap, d), ysum (cap,), count (cap,), n () int32
        hyper: fitted hyperparameters (warm start of the next fit)
        beta: `()` beta_t of the planned query
        next_x: `(d,)` planned query
        t: `()` int32 evaluations selected so far
        batch_open: `()` bool
    """

    data: Data
    hyper: hyper.GPHyper
    beta: jax.Array
    next_x: jax.Array
    t: jax.Array
    batch_open: jax.Array


def _sqdist(A, B):
    return jnp.sum((A[:, None, :] - B[None, :, :]) ** 2, axis=-1)


def maximin_rank(Z, valid):
    """(n,) int32 position of each valid row in the maximin ordering of the points Z (n, d) (Guinness 2018):
    first the valid row nearest the valid rows' centroid, then repeatedly the valid row farthest from all rows
    ordered so far. Masked rows get positions >= the number of valid rows."""
    n = Z.shape[0]
    w = valid.astype(Z.dtype)
    centre = jnp.sum(Z * w[:, None], axis=0) / jnp.maximum(jnp.sum(w), 1.0)
    D2 = _sqdist(Z, Z)
    first = jnp.argmin(jnp.where(valid, jnp.sum((Z - centre) ** 2, axis=1), jnp.inf))
    rank = jnp.full((n,), n, jnp.int32).at[first].set(0)
    mind = jnp.where(valid, D2[first], -jnp.inf).at[first].set(-jnp.inf)

    def add(k, carry):
        rank, mind = carry
        p = jnp.argmax(mind)
        ok = mind[p] > -jnp.inf
        rank = rank.at[p].set(jnp.where(ok, k, rank[p]))
        mind = jnp.where(ok, jnp.minimum(mind, D2[p]), mind).at[p].set(-jnp.inf)
        return rank, mind

    rank, _ = jax.lax.fori_loop(1, n, add, (rank, mind))
    return rank


def nearest(sqdist, allowed, m: int):
    """(idx (q, m) int32, mask (q, m) bool): per row of ``sqdist`` (q, n), the m nearest allowed columns,
    nearest first; fewer than m allowed columns leave masked slots.

    ``sqdist`` may come from the one-GEMM form (``kernels.sq_dist``): its rounding only reorders near-ties.
    Ranked in float32 whatever the dtype: XLA lowers a float64 ``top_k`` to a full sort of each row
    (q = 2560 candidates against n = 1000 samples: 762 ms against 51 ms for float32 on one core of this 2-core
    CPU, shared with another job), and a neighbour set need not break near-ties (relative gaps below
    float32's 6e-8) as float64 would."""
    score = jnp.where(allowed, -sqdist.astype(jnp.float32), -jnp.inf)
    vals, idx = jax.lax.top_k(score, m)
    return idx.astype(jnp.int32), jnp.isfinite(vals)


def conditioning_sets(Z, valid, rank, m: int):
    """(idx (n, m) int32, mask (n, m) bool): for every row, its m nearest valid rows (in Z) earlier in the
    ordering ``rank``, nearest first; fewer than m earlier rows leave masked slots."""
    earlier = valid[None, :] & (rank[None, :] < rank[:, None])
    return nearest(sq_dist(Z, Z), earlier, m)


def _set_kernels(h: hyper.GPHyper, Xq, Xc, cmask, noise_q):
    """The kernel blocks of m-point conditioning sets: Xq (q, d) each with its set Xc (q, m, d), cmask (q, m).
    Returns (Kcc (q, m, m) = K_cc + s2 I, kqc (q, m), kqq (q,) = k_qq + noise_q); masked slots have zero
    covariances and a unit diagonal, so they condition on nothing."""
    kp = hyper.kernel_params(h)
    w = cmask.astype(Xq.dtype)
    Kcc = jax.vmap(lambda A: MATERN.k(kp, A, A))(Xc) * w[:, :, None] * w[:, None, :]
    Kcc = Kcc + jax.vmap(jnp.diag)(jnp.where(cmask, jnp.exp(h.log_noise), 1.0))
    kqc = jax.vmap(lambda x, A: MATERN.k(kp, x[None, :], A)[0])(Xq, Xc) * w  # (q, m)
    return Kcc, kqc, MATERN.diag(kp, Xq) + noise_q


def _cholesky_solve_both(Kcc, kqc, yc):
    """(L, l, z): L = chol(Kcc), l = L^{-1} kqc, z = L^{-1} yc, batched over the sets.

    One batched solve for both right-hand sides: two independent batched LAPACK calls can deadlock the CPU
    runtime (sketchbo.engine.lapack_overlap)."""
    L = jnp.linalg.cholesky(Kcc)
    lz = jax.scipy.linalg.solve_triangular(L, jnp.stack([kqc, yc], axis=-1), lower=True)  # (q, m, 2)
    return L, lz[..., 0], lz[..., 1]


def _conditionals(h: hyper.GPHyper, Xq, Xc, yc, cmask, noise_q):
    """Gaussian conditionals of m-point sets: Xq (q, d) each given Xc (q, m, d), yc (q, m) standardised,
    cmask (q, m). Returns (mean (q,), variance (q,)) of y_q (noise_q = s2) or of f_q (noise_q = 0)."""
    Kcc, kqc, kqq = _set_kernels(h, Xq, Xc, cmask, noise_q)
    _, l, z = _cholesky_solve_both(Kcc, kqc, yc * cmask)
    return jnp.sum(l * z, axis=1), kqq - jnp.sum(l * l, axis=1)


VAR_FLOOR = 1e-12  # conditional variances are clamped here (they are >= s2 > 0 in exact arithmetic)


@jax.custom_vjp
def conditional_log_density(Kcc, kqc, kqq, yc, yq):
    """log N(y_q; mu, v) per set (q,), with mu = k_qc Kcc^{-1} y_c and v = k_qq - k_qc Kcc^{-1} k_cq: Vecchia's
    factors (module docstring). Kcc (q, m, m) SPD, kqc (q, m), kqq (q,), yc (q, m), yq (q,).

    Its gradient is in closed form from w = Kcc^{-1} k_cq and b = Kcc^{-1} y_c (one batched solve with the
    forward's factor), r = y_q - mu: d/dKcc = -(r/v) (w b^T + b w^T)/2 + D w w^T, d/dk_qc = (r/v) b - 2 D w,
    d/dk_qq = D, with D = (r^2/v^2 - 1/v)/2. Differentiating through the batched factorisations instead cost
    6x the forward pass (m = 32, 1000 sets, CPU). ``yc`` and ``yq`` get none (data)."""
    return _conditional_log_density_fwd(Kcc, kqc, kqq, yc, yq)[0]


def _conditional_log_density_fwd(Kcc, kqc, kqq, yc, yq):
    L, l, z = _cholesky_solve_both(Kcc, kqc, yc)
    v_raw = kqq - jnp.sum(l * l, axis=1)
    v = jnp.maximum(v_raw, VAR_FLOOR)
    r = yq - jnp.sum(l * z, axis=1)
    ll = -0.5 * (r * r / v + jnp.log(v) + hyper.LOG_2PI)
    return ll, (L, l, z, v, r, v_raw > VAR_FLOOR)


def _conditional_log_density_bwd(res, g):
    L, l, z, v, r, free = res
    wb = jax.scipy.linalg.solve_triangular(L, jnp.stack([l, z], axis=-1), lower=True, trans=1)  # L^T x = .
    w, b = wb[..., 0], wb[..., 1]
    dmu = g * r / v
    dv = jnp.where(free, 0.5 * g * (r * r / (v * v) - 1.0 / v), 0.0)
    wbT = w[:, :, None] * b[:, None, :]
    dK = -0.5 * dmu[:, None, None] * (wbT + jnp.swapaxes(wbT, 1, 2)) + dv[:, None, None] * w[:, :, None] * w[:, None, :]
    return dK, dmu[:, None] * b - 2.0 * dv[:, None] * w, dv, None, None


conditional_log_density.defvjp(_conditional_log_density_fwd, _conditional_log_density_bwd)


def vecchia_log_likelihood(h: hyper.GPHyper, X, y_std, valid, idx, cmask):
    """Vecchia's log p(y) (module docstring) of the valid rows with conditioning sets (idx, cmask)."""
    Kcc, kqc, kqq = _set_kernels(h, X, X[idx], cmask, jnp.exp(h.log_noise))
    ll = conditional_log_density(Kcc, kqc, kqq, y_std[idx] * cmask, y_std)
    return jnp.sum(jnp.where(valid, ll, 0.0))


def fit_vecchia(h0: hyper.GPHyper, X, y, valid, idx, cmask, steps: int, lr, method: str = "adam"):
    """Vecchia's likelihood maximised from h0 by ``hyper.maximise``: ``adam``, ``steps`` projected Adam steps
    (the protocol); ``map``, the MAP with ``hyper.log_prior`` by L-BFGS (at most ``steps`` iterations). NaN steps
    are rejected, as ``hyper.fit``. Returns (h, info) with info["lml"] Vecchia's log-likelihood at h."""
    y_std, _, _ = hyper.standardise(y, valid)
    n = jnp.maximum(jnp.sum(valid), 1).astype(y.dtype)

    def objective(h):
        return vecchia_log_likelihood(h, X, y_std, valid, idx, cmask)

    h, iterations = hyper.maximise(objective, h0, n, steps, lr, method)
    return h, {"lml": objective(h), "fit_iterations": iterations}


def vecchia_predict(h: hyper.GPHyper, X, y, valid, m: int):
    """predict(xq (q, d)) -> (mean (q,), var (q,)) of the latent f, in the targets' units: each query
    conditioned on its m nearest valid samples in the scaled inputs."""
    y_std, y_mean, y_scale = hyper.standardise(y, valid)
    inv_ls = jnp.exp(-h.log_ls)

    def predict(xq):
        idx, cmask = nearest(sq_dist(xq * inv_ls, X * inv_ls), valid[None, :], m)
        mean, var = _conditionals(h, xq, X[idx], y_std[idx], cmask, 0.0)
        return y_mean + y_scale * mean, y_scale ** 2 * jnp.maximum(var, 0.0)

    return predict


def make_vecchia_bo(static: BOStatic) -> Algorithm:
    """VecchiaBO with m = ``static.M`` neighbours (the registry's ``m``)."""
    cap, d, n0, m = static.cap, static.d, static.n0, static.M

    def init(key, problem, params: VecchiaParams) -> VecchiaState:
        del key, problem  # the box is [0, 1]^d (static.d)
        dt = params.beta_c.dtype
        data = empty_data(cap, d, dt)
        return VecchiaState(data=data, hyper=hyper.init_hyper(d, dt), beta=jnp.zeros((), dt),
                            next_x=jnp.full((d,), 0.5, dt), t=jnp.zeros((), jnp.int32), batch_open=jnp.asarray(True))

    def select(key, state: VecchiaState, params: VecchiaParams):
        x, new = design_or_planned(key, state, n0)
        return x, new, StepInfo(dict_size=jnp.minimum(state.data.n, m).astype(jnp.int32))

    def update(state: VecchiaState, fb: Feedback, params: VecchiaParams):
        return state._replace(data=append_batch(state.data, fb.points, fb.rewards, fb.valid, False, n0))

    def resparsify(key, state: VecchiaState, params: VecchiaParams):
        data = state.data
        valid = data_valid(data)
        y = hyper.warp_outputs(static.output_warp, data_mean(data), valid)
        Z = data.x * jnp.exp(-state.hyper.log_ls)  # scaled inputs of the previous fit
        idx, cmask = conditioning_sets(Z, valid, maximin_rank(Z, valid), m)
        h, fit_info = fit_vecchia(state.hyper, data.x, y, valid, idx, cmask, static.fit_steps, params.lr_fit,
                                  static.gp_fit)
        predict = vecchia_predict(h, data.x, y, valid, m)
        beta = acquisition.ucb_width(static.beta_rule, params.beta_c, d, (state.t + 1).astype(y.dtype))

        x, val, acq_info = acquisition.maximize_ucb(key, predict, beta, data.x, y, valid, static.n_incumbents,
                                                    static.acq, params.lr_acq, params.local_scale)
        new = state._replace(hyper=h, beta=beta, next_x=x, batch_open=jnp.asarray(True))
        return new, RoundInfo(dict_size=jnp.minimum(data.n, m).astype(jnp.int32), beta=beta, lml=fit_info["lml"],
                              ucb=val, noise=jnp.exp(h.log_noise), **acq_info)

    return Algorithm(init, select, update, refit=resparsify)


__all__ = ["VecchiaParams", "VecchiaState", "maximin_rank", "conditioning_sets", "vecchia_log_likelihood", "fit_vecchia",
           "vecchia_predict", "make_vecchia_bo"]
