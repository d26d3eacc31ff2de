"""BNN-UCB, the baseline of GSSBO's Fig. 11 (Wei et al. 2025, App. B.5): UCB on a deep ensemble, the
practical Bayesian-neural-network surrogate of Lakshminarayanan, Pritzel & Blundell, "Simple and scalable
predictive uncertainty estimation using deep ensembles" (NeurIPS 2017).

E MLPs f_1, ..., f_E, each from its own random initialisation (Lakshminarayanan et al. 2017, Alg. 1: no
bootstrap, the random initialisation gives the diversity), are trained on all samples (standardised targets)
by full-batch Adam (``fit_steps`` steps of ``lr_fit`` per round, warm-started from the previous round's
weights). The surrogate is the ensemble's mean and spread,

    mu(x) = 1/E sum_e f_e(x),    sigma^2(x) = 1/E sum_e (f_e(x) - mu(x))^2,

and UCB(x) = mu(x) + kappa sigma(x) (``kappa`` a float parameter), maximised by
``sketchbo.acquisition.maximize_ucb`` (with beta = kappa^2) as every continuous algorithm.

Our choices (the GSSBO paper gives none of them): the members' loss is the mean squared error, not the
paper's Gaussian NLL with a variance head: the objectives are noiseless, and a variance head would estimate
observation noise, which is not the uncertainty about f that UCB needs; sigma is therefore the spread of the
members' means only (the epistemic part of the paper's mixture variance). No adversarial training (the paper's
optional Alg. 1, L4). Architecture d -> ``hidden`` -> 1 with ReLU hidden layers (the paper's UCI networks:
one hidden layer of 50 ReLU units, E = 5), LeCun-normal weights (``sketchbo.algorithms.mlp``).
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

ACTIVATION = "relu"


class BNNParams(NamedTuple):
    """BNN-UCB's float hyperparameters (() arrays).

    Attributes:
        kappa: UCB = mu + kappa sigma of the ensemble
        lr_fit: Adam step of the fit
        lr_acq: Adam step of the acquisition refinement
        local_scale: std of the incumbent perturbations
    """

    kappa: jax.Array
    lr_fit: jax.Array
    lr_acq: jax.Array
    local_scale: jax.Array


class EnsembleState(NamedTuple):
    """The state of BNN-UCB: the samples, the trained ensemble and the planned query.

    Attributes:
        data: the samples D: x (cap, d), ysum (cap,), count (cap,), n () int32
        nets: the E members, stacked: per layer (W (E, w_in, w_out), b (E, w_out)), widths d -> hidden -> 1
        beta: `()` kappa^2 of the planned query (UCB = mu + sqrt(beta) sigma)
        next_x: `(d,)` planned query
        t: `()` int32 evaluations selected so far
        batch_open: `()` bool
    """

    data: Data
    nets: tuple
    beta: jax.Array
    next_x: jax.Array
    t: jax.Array
    batch_open: jax.Array


def init_ensemble(key, E: int, widths: tuple, dtype) -> tuple:
    """E independently initialised MLPs, stacked along a leading axis of every leaf."""
    return jax.vmap(lambda k: init_mlp(k, widths, dtype))(jax.random.split(key, E))


def member_outputs(nets: tuple, X):
    """(E, q) every member's output at the points X (q, d) (standardised units)."""
    return jax.vmap(lambda net: mlp_apply(net, X, ACTIVATION)[:, 0])(nets)


def ensemble_loss(nets: tuple, X, y_std, valid):
    """Sum over members of each member's mean squared error on the valid rows. The members share no
    parameters, so the gradient of the sum is each member's own gradient (and Adam, coordinate-wise,
    trains them independently)."""
    w = valid.astype(y_std.dtype)
    err = (member_outputs(nets, X) - y_std[None, :]) ** 2 * w[None, :]
    return jnp.sum(err) / jnp.maximum(jnp.sum(w), 1.0)


def fit_ensemble(nets0: tuple, X, y, valid, steps: int, lr):
    """``steps`` Adam steps of every member from its warm start. Returns (nets, info) with info["mse"] the
    members' mean squared error (E,) on the standardised targets."""
    y_std, _, _ = hyper.standardise(y, valid)
    nets = adam_fit(lambda p: ensemble_loss(p, X, y_std, valid), nets0, steps, lr)
    w = valid.astype(y.dtype)
    mse = jnp.sum((member_outputs(nets, X) - y_std) ** 2 * w, axis=1) / jnp.maximum(jnp.sum(w), 1.0)
    return nets, {"mse": mse}


def ensemble_predict(nets: tuple, y, valid):
    """predict(xq (q, d)) -> (mean (q,), var (q,)): the ensemble's mean and variance over members, in the
    targets' units."""
    _, y_mean, y_scale = hyper.standardise(y, valid)

    def predict(xq):
        out = member_outputs(nets, xq)
        mu = jnp.mean(out, axis=0)
        var = jnp.mean((out - mu) ** 2, axis=0)
        return y_mean + y_scale * mu, y_scale ** 2 * var

    return predict


def make_bnn_bo(static: BOStatic) -> Algorithm:
    """BNN-UCB with E = ``static.ensemble`` members d -> ``static.hidden`` -> 1."""
    cap, d, n0, E = static.cap, static.d, static.n0, static.ensemble
    widths = (d, *static.hidden, 1)

    def init(key, problem, params: BNNParams) -> EnsembleState:
        del problem
        dt = params.kappa.dtype
        data = empty_data(cap, d, dt)
        return EnsembleState(data=data, nets=init_ensemble(key, E, widths, dt), beta=jnp.zeros((), dt),
                             next_x=jnp.full((d,), 0.5, dt), t=jnp.zeros((), jnp.int32), batch_open=jnp.asarray(True))

    def select(key, state: EnsembleState, params: BNNParams):
        x, new = design_or_planned(key, state, n0)
        return x, new, StepInfo(dict_size=state.data.n)

    def update(state: EnsembleState, fb: Feedback, params: BNNParams):
        return state._replace(data=append_batch(state.data, fb.points, fb.rewards, fb.valid, False, n0))

    def resparsify(key, state: EnsembleState, params: BNNParams):
        data = state.data
        valid, y = data_valid(data), data_mean(data)
        nets, fit_info = fit_ensemble(state.nets, data.x, y, valid, static.fit_steps, params.lr_fit)
        beta = params.kappa ** 2  # UCB = mu + kappa sigma
        x, val, acq_info = acquisition.maximize_ucb(key, ensemble_predict(nets, y, valid), beta, data.x, y, valid,
                                                    static.n_incumbents, static.acq, params.lr_acq,
                                                    params.local_scale)
        new = state._replace(nets=nets, beta=beta, next_x=x, batch_open=jnp.asarray(True))
        return new, RoundInfo(dict_size=data.n, beta=beta, ucb=val, mse=jnp.mean(fit_info["mse"]),
                              **acq_info)

    return Algorithm(init, select, update, refit=resparsify)


__all__ = ["BNNParams", "EnsembleState", "init_ensemble", "member_outputs", "ensemble_loss", "fit_ensemble",
           "ensemble_predict", "make_bnn_bo"]
