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
  k_xx - k_xc (K_cc + s2 I)^{-1} k_cx; UCB = mu + sqrt(beta_t) sigma, beta_t = beta_c d log(2t) (PROTOCOLS §9),
  maximised by ``sketchbo.acquisition`` as the other continuous methods.
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax

from sketchbo import acquisition
from sketchbo.algorithms.common import Algorithm, Feedback, RoundInfo, StepInfo
from sketchbo.algorithms.subset_bo import (BOParams, BOStatic, Data, append_batch, data_mean, data_valid,
                                           design_or_planned, empty_data)
from sketchbo.gp import hyper

MATERN = hyper.MATERN


class VecchiaState(NamedTuple):
    data: Data  # the samples D: x (cap, d), ysum (cap,), count (cap,), n () int32
    hyper: hyper.GPHyper  # fitted hyperparameters (warm start of the next fit)
    beta: jax.Array  # () beta_t of the planned query
    next_x: jax.Array  # (d,) planned query
    t: jax.Array  # () int32 evaluations selected so far
    batch_open: jax.Array  # () bool


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


def conditioning_sets(Z, valid, rank, m: int):
    """(idx (n, m) int32, mask (n, m) bool): for every row, its m nearest valid rows (in Z) earlier in the
    ordering ``rank``, nearest first; fewer than m earlier rows leave masked slots."""
    earlier = valid[None, :] & (rank[None, :] < rank[:, None])
    score = jnp.where(earlier, -_sqdist(Z, Z), -jnp.inf)
    vals, idx = jax.lax.top_k(score, m)
    return idx.astype(jnp.int32), jnp.isfinite(vals)


def _conditionals(h: hyper.GPHyper, Xq, Xc, yc, cmask, noise_q):
    """Gaussian conditionals of m-point sets: Xq (q, d) each given Xc (q, m, d), yc (q, m) standardised,
    cmask (q, m). Returns (mean (q,), variance (q,)) of y_q (noise_q = s2) or of f_q (noise_q = 0)."""
    kp = hyper.kernel_params(h)
    s2 = jnp.exp(h.log_noise)
    w = cmask.astype(Xq.dtype)
    Kcc = jax.vmap(lambda A: MATERN.k(kp, A, A))(Xc) * w[:, :, None] * w[:, None, :]
    Kcc = Kcc + jax.vmap(jnp.diag)(jnp.where(cmask, s2, 1.0))
    kqc = jax.vmap(lambda x, A: MATERN.k(kp, x[None, :], A)[0])(Xq, Xc) * w  # (q, m)
    L = jnp.linalg.cholesky(Kcc)
    # one batched solve for both right-hand sides: two independent batched LAPACK calls can deadlock the CPU
    # runtime (sketchbo.engine.lapack_overlap)
    ab = jax.scipy.linalg.solve_triangular(L, jnp.stack([kqc, yc * w], axis=-1), lower=True)  # (q, m, 2)
    a, b = ab[..., 0], ab[..., 1]
    var = MATERN.diag(kp, Xq) + noise_q - jnp.sum(a * a, axis=1)
    return jnp.sum(a * b, axis=1), var


def vecchia_log_likelihood(h: hyper.GPHyper, X, y_std, valid, idx, cmask):
    """Vecchia's log p(y) (module docstring) of the valid rows with conditioning sets (idx, cmask)."""
    mean, var = _conditionals(h, X, X[idx], y_std[idx], cmask, jnp.exp(h.log_noise))
    var = jnp.maximum(var, 1e-12)
    ll = -0.5 * ((y_std - mean) ** 2 / var + jnp.log(var) + hyper.LOG_2PI)
    return jnp.sum(jnp.where(valid, ll, 0.0))


def fit_vecchia(h0: hyper.GPHyper, X, y, valid, idx, cmask, steps: int, lr):
    """Maximum Vecchia likelihood by ``steps`` projected Adam steps from h0 (NaN steps rejected, as
    ``hyper.fit``). Returns (h, info) with info["lml"] Vecchia's log-likelihood at h."""
    y_std, _, _ = hyper.standardise(y, valid)
    n = jnp.maximum(jnp.sum(valid), 1).astype(y.dtype)
    opt = optax.adam(lr)

    def loss(h):
        return -vecchia_log_likelihood(h, X, y_std, valid, idx, cmask) / n

    def step(carry, _):
        h, s = carry
        g = jax.grad(loss)(h)
        upd, s_new = opt.update(g, s, h)
        h_new = hyper.project(optax.apply_updates(h, upd))
        ok = jnp.all(jnp.array([jnp.all(jnp.isfinite(v)) for v in jax.tree.leaves(g)]))
        return (jax.tree.map(lambda a, b: jnp.where(ok, a, b), h_new, h), s_new), None

    h0 = hyper.project(h0)
    (h, _), _ = jax.lax.scan(step, (h0, opt.init(h0)), None, length=steps)
    return h, {"lml": -loss(h) * n}


def vecchia_predict(h: hyper.GPHyper, X, y, valid, m: int):
    """predict(xq (q, d)) -> (mean (q,), var (q,)) of the latent f, in the targets' units: each query
    conditioned on its m nearest valid samples in the scaled inputs."""
    y_std, y_mean, y_scale = hyper.standardise(y, valid)
    inv_ls = jnp.exp(-h.log_ls)

    def predict(xq):
        score = jnp.where(valid[None, :], -_sqdist(xq * inv_ls, X * inv_ls), -jnp.inf)
        vals, idx = jax.lax.top_k(score, m)
        mean, var = _conditionals(h, xq, X[idx], y_std[idx], jnp.isfinite(vals), 0.0)
        return y_mean + y_scale * mean, y_scale ** 2 * jnp.maximum(var, 0.0)

    return predict


def make_vecchia_bo(static: BOStatic) -> Algorithm:
    """VecchiaBO with m = ``static.M`` neighbours (the registry's ``m``)."""
    cap, d, n0, m = static.cap, static.d, static.n0, static.M

    def init(key, problem, params: BOParams) -> VecchiaState:
        del key, problem  # the box is [0, 1]^d (static.d)
        dt = params.beta_c.dtype
        data = empty_data(cap, d, dt)
        return VecchiaState(data=data, hyper=hyper.init_hyper(d, dt), beta=jnp.zeros((), dt),
                            next_x=jnp.full((d,), 0.5, dt), t=jnp.zeros((), jnp.int32), batch_open=jnp.asarray(True))

    def select(key, state: VecchiaState, params: BOParams):
        x, new = design_or_planned(key, state, n0)
        return x, new, StepInfo(dict_size=jnp.minimum(state.data.n, m).astype(jnp.int32))

    def update(state: VecchiaState, fb: Feedback, params: BOParams):
        return state._replace(data=append_batch(state.data, fb.points, fb.rewards, fb.valid, False, n0)), None

    def resparsify(key, state: VecchiaState, params: BOParams):
        data = state.data
        valid, y = data_valid(data), data_mean(data)
        Z = data.x * jnp.exp(-state.hyper.log_ls)  # scaled inputs of the previous fit
        idx, cmask = conditioning_sets(Z, valid, maximin_rank(Z, valid), m)
        h, fit_info = fit_vecchia(state.hyper, data.x, y, valid, idx, cmask, static.fit_steps, params.lr_fit)
        predict = vecchia_predict(h, data.x, y, valid, m)
        beta = params.beta_c * d * jnp.log(2.0 * (state.t + 1).astype(y.dtype))  # PROTOCOLS §9

        x, val, acq_info = acquisition.maximize_ucb(key, predict, beta, data.x, y, valid, static.n_incumbents,
                                                    static.acq, params.lr_acq, params.local_scale)
        new = state._replace(hyper=h, beta=beta, next_x=x, batch_open=jnp.asarray(True))
        return new, RoundInfo(dict_size=jnp.minimum(data.n, m).astype(jnp.int32), beta=beta, lml=fit_info["lml"],
                              ucb=val, noise=jnp.exp(h.log_noise), refine_gain=acq_info["refine_gain"])

    return Algorithm(init, select, update, resparsify)


__all__ = ["VecchiaState", "maximin_rank", "conditioning_sets", "vecchia_log_likelihood", "fit_vecchia",
           "vecchia_predict", "make_vecchia_bo"]
