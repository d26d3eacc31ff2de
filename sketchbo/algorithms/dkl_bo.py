"""Deep-kernel UCB, the baseline of GSSBO's Fig. 10 (Wei et al. 2025, App. B.5): GP-UCB with a deep kernel
(Wilson, Hu, Salakhutdinov & Xing, "Deep kernel learning", AISTATS 2016).

The deep kernel is a base kernel on learned features (Wilson et al. 2016, Eq. 5),

    k(x, x' | theta, w) = k_Matérn-5/2(g(x, w), g(x', w) | theta),

g an MLP with weights w, theta the base kernel's ARD lengthscales (one per feature), outputscale and noise
(on standardised targets). w and theta are trained jointly on the exact GP log marginal likelihood
(Wilson et al. 2016, Eq. 6-7: R&W Eq. 2.30 with K the deep kernel's matrix), here by Adam on -log p / n
(``fit_steps`` steps of ``lr_fit`` per round, warm-started from the previous round's w and theta, theta
projected onto ``sketchbo.gp.hyper``'s box after every step). ``gp_fit=adam`` (the default) is this
likelihood; ``gp_fit=map`` adds the box GP core's prior on theta (``sketchbo.gp.hyper.log_prior``) to log p.
The posterior is the exact GP's on the features (``sketchbo.gp.hyper.posterior``); UCB = mu + sqrt(beta_t)
sigma with beta_t = beta_c d log(2t) (the box protocol, docs/protocols.md#box-protocol, as every continuous
algorithm), maximised by ``sketchbo.acquisition.maximize_ucb``.

Our choices (the GSSBO paper gives none of them): g = d -> ``hidden`` -> ``features`` with tanh hidden
layers (smooth features for the Matérn kernel and the acquisition's gradient steps) and a linear output;
LeCun-normal weights drawn from the run's key (``sketchbo.algorithms.mlp``); exact GP on every sample (no
KISS-GP grid: the sample counts of BO are small).
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from sketchbo import acquisition
from sketchbo.algorithms.common import Algorithm, Feedback, RoundInfo, StepInfo
from sketchbo.algorithms.mlp import adam_fit, init_mlp, mlp_apply
from sketchbo.algorithms.subset_bo import (BOStatic, Data, append_batch, data_mean, data_valid,
                                           design_or_planned, empty_data)
from sketchbo.gp import hyper

ACTIVATION = "tanh"


class DeepKernel(NamedTuple):
    """The trained parameters of the deep kernel.

    Attributes:
        net: the MLP g: per layer (W (w_in, w_out), b (w_out,)), widths d -> hidden -> features
        hyper: base Matérn-5/2 on the features: log_ls (features,), log_scale (), log_noise ()
    """

    net: tuple
    hyper: hyper.GPHyper


class DKLParams(NamedTuple):
    """Deep-kernel UCB's float hyperparameters (() arrays).

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


class DKLState(NamedTuple):
    """The state of deep-kernel UCB: the samples, the fitted deep kernel and the planned query.

    Attributes:
        data: the samples D: x (cap, d), ysum (cap,), count (cap,), n () int32
        kernel: fitted MLP weights and GP hyperparameters (warm start of the next fit)
        beta: `()` beta_t of the planned query
        next_x: `(d,)` planned query
        t: `()` int32 evaluations selected so far
        batch_open: `()` bool
    """

    data: Data
    kernel: DeepKernel
    beta: jax.Array
    next_x: jax.Array
    t: jax.Array
    batch_open: jax.Array


def init_kernel(key, d: int, hidden: tuple, features: int, dtype) -> DeepKernel:
    """Random MLP weights (LeCun normal) and the exact GP's starting hyperparameters on the features."""
    return DeepKernel(init_mlp(key, (d, *hidden, features), dtype), hyper.init_hyper(features, dtype))


def features(k: DeepKernel, X):
    """(q, features) the MLP's features g(x) of the points X (q, d)."""
    return mlp_apply(k.net, X, ACTIVATION)


def dkl_log_marginal_likelihood(k: DeepKernel, X, y_std, valid):
    """log p(y | X, theta, w) of the valid rows: the exact GP's (R&W Eq. 2.30) on the features g(X)."""
    return hyper.log_marginal_likelihood(k.hyper, features(k, X), y_std, valid)


def fit_dkl(k0: DeepKernel, X, y, valid, steps: int, lr, method: str = "adam"):
    """The weights and the hyperparameters fitted jointly by ``steps`` Adam steps from k0: ``method="adam"``,
    maximum likelihood (Wilson et al. 2016, §5); ``method="map"``, the log posterior with
    ``sketchbo.gp.hyper.log_prior`` on the base kernel's hyperparameters (the lengthscale prior's dimension is
    the number of features; no prior on the weights). Returns (k, info) with info["lml"] the log marginal
    likelihood at k."""
    if method not in hyper.FITS:
        raise ValueError(f"method={method!r}; choose one of {list(hyper.FITS)}")
    y_std, _, _ = hyper.standardise(y, valid)
    n = jnp.maximum(jnp.sum(valid), 1).astype(y.dtype)

    def loss(k):
        prior = hyper.log_prior(k.hyper) if method == "map" else 0.0
        return -(dkl_log_marginal_likelihood(k, X, y_std, valid) + prior) / n

    k = adam_fit(loss, k0, steps, lr, lambda k: k._replace(hyper=hyper.project(k.hyper)))
    return k, {"lml": dkl_log_marginal_likelihood(k, X, y_std, valid)}


def dkl_predict(k: DeepKernel, X, y, valid):
    """predict(xq (q, d)) -> (mean (q,), var (q,)) of the latent f in the targets' units: the exact GP
    posterior (R&W Eq. 2.25-26) on the features."""
    post = hyper.posterior(k.hyper, features(k, X), y, valid)
    return lambda xq: hyper.predict(post, features(k, xq))


def make_dkl_bo(static: BOStatic) -> Algorithm:
    """Deep-kernel UCB with the MLP d -> ``static.hidden`` -> ``static.features``."""
    cap, d, n0 = static.cap, static.d, static.n0

    def init(key, problem, params: DKLParams) -> DKLState:
        del problem
        dt = params.beta_c.dtype
        data = empty_data(cap, d, dt)
        return DKLState(data=data, kernel=init_kernel(key, d, static.hidden, static.features, dt),
                        beta=jnp.zeros((), dt), next_x=jnp.full((d,), 0.5, dt), t=jnp.zeros((), jnp.int32),
                        batch_open=jnp.asarray(True))

    def select(key, state: DKLState, params: DKLParams):
        x, new = design_or_planned(key, state, n0)
        return x, new, StepInfo(dict_size=state.data.n)

    def update(state: DKLState, fb: Feedback, params: DKLParams):
        return state._replace(data=append_batch(state.data, fb.points, fb.rewards, fb.valid, False, n0))

    def resparsify(key, state: DKLState, params: DKLParams):
        data = state.data
        valid, y = data_valid(data), data_mean(data)
        k, fit_info = fit_dkl(state.kernel, data.x, y, valid, static.fit_steps, params.lr_fit, static.gp_fit)
        beta = acquisition.ucb_width(static.beta_rule, params.beta_c, d, (state.t + 1).astype(y.dtype))
        x, val, acq_info = acquisition.maximize_ucb(key, dkl_predict(k, data.x, y, valid), beta, data.x, y, valid,
                                                    static.n_incumbents, static.acq, params.lr_acq,
                                                    params.local_scale)
        new = state._replace(kernel=k, beta=beta, next_x=x, batch_open=jnp.asarray(True))
        return new, RoundInfo(dict_size=data.n, beta=beta, lml=fit_info["lml"], ucb=val,
                              noise=jnp.exp(k.hyper.log_noise), **acq_info)

    return Algorithm(init, select, update, refit=resparsify)


__all__ = ["DKLParams", "DeepKernel", "DKLState", "init_kernel", "features", "dkl_log_marginal_likelihood", "fit_dkl",
           "dkl_predict", "make_dkl_bo"]
