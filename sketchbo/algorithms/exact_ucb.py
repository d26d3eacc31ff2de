"""GP-UCB and GP-BUCB on the exact posterior (the baselines of BBKB, ICML 2020, Fig. 1).

* ``gp_ucb``  — Srinivas et al. (2010): one pull per batch, exact posterior after each.
* ``gp_bucb`` — Desautels et al. (2014): the mean is frozen inside a batch, the variance is updated with
  every (hallucinated) pull; the batch ends by the product rule prod_s (1 + s^2_fb(x_s)) > C, or — with
  ``batch_rule: sum`` — by BBKB's sum rule, which is BBKB with the dictionary S_t = X_t (BBKB §2).

UCB = mu + beta s~ with the lam-scaled s~^2 = sigma^2_GP / lam, and the widths of ``common.py``. The posterior is the
incremental [`sketchbo.gp.exact.ExactGP`][] (O(A U) per pull over the U unique pulled arms); exact GP-UCB's "resparsify"
only refreshes the start-of-batch variances and the width.
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from sketchbo.algorithms.batch_rules import BatchRule
from sketchbo.algorithms.common import (Algorithm, Feedback, RoundInfo, Static, StepInfo, batch_feedback,
                                       beta_bbkb, beta_bkb, padded_queries)
from sketchbo.gp import exact
from sketchbo.kernels import get_kernel


class ExactUCBParams(NamedTuple):
    """Exact GP-UCB / GP-BUCB's float hyperparameters (() arrays; the kernel's a dict of them).

    Attributes:
        lam: regulariser / noise variance lambda of the GP
        C: batch threshold C~ (BBKB) or C (GP-BUCB); 1 for sequential algorithms
        F: RKHS-norm bound F of the confidence width
        delta: confidence level delta
        xi: noise standard deviation xi used in the width
        kernel: kernel hyperparameters, e.g. {"sigma2": ()} for rbf
    """

    lam: jax.Array
    C: jax.Array
    F: jax.Array
    delta: jax.Array
    xi: jax.Array
    kernel: dict


class ExactUCBState(NamedTuple):
    """The state of exact GP-UCB and GP-BUCB: the exact posterior over the pulled arms and the current batch's width and
    batch-rule accumulators.

    Attributes:
        arms: `(A, d)` arm matrix
        counts: `(A,)` float, pulls whose feedback has arrived
        gp: incremental exact posterior over at most u_max unique pulled arms
        var_fb: `(A,)` start-of-batch lam-scaled variances s^2_fb
        beta: `()` width of the current batch
        logdet: `()` BBKB-family width accumulator
        rule_acc: `()` batch-rule accumulator
        batch_open: `()` bool
        t: `()` int32 pulls selected so far
        first_arm: `()` int32 uniformly drawn initial arm
    """

    arms: jax.Array
    counts: jax.Array
    gp: exact.ExactGP
    var_fb: jax.Array
    beta: jax.Array
    logdet: jax.Array
    rule_acc: jax.Array
    batch_open: jax.Array
    t: jax.Array
    first_arm: jax.Array


def make_exact_ucb(static: Static, rule: BatchRule, sequential: bool) -> Algorithm:
    kernel = get_kernel(static.kernel)

    def init(key, problem, params: ExactUCBParams) -> ExactUCBState:
        arms = problem.arms
        A = arms.shape[0]
        dt = arms.dtype
        kdiag = kernel.diag(params.kernel, arms)
        return ExactUCBState(
            arms=arms, counts=jnp.zeros((A,), dt), gp=exact.init_exact(kdiag, static.u_max),
            var_fb=kdiag / params.lam, beta=jnp.zeros((), dt), logdet=jnp.zeros((), dt),
            rule_acc=rule.init(A, dt), batch_open=jnp.asarray(True),
            t=jnp.zeros((), jnp.int32), first_arm=jax.random.randint(key, (), 0, A, dtype=jnp.int32),
        )

    def select(key, state: ExactUCBState, params: ExactUCBParams):
        del key
        ucb = state.gp.mean + state.beta * jnp.sqrt(state.gp.var / params.lam)  # mean frozen in-batch
        first = state.t == 0
        q = jnp.where(first, state.first_arm, jnp.argmax(ucb)).astype(jnp.int32)

        def cov_q():  # start-of-batch covariances are not kept by the exact engine; no exact rule needs them
            raise ValueError("the exact engine does not support covariance-based batch rules")

        acc, close = rule.step(state.rule_acc, state.var_fb[q], cov_q, params.C)
        gp = exact.add_observation(kernel, params.kernel, state.arms, state.gp, q, params.lam)
        new = state._replace(
            gp=gp, rule_acc=acc, batch_open=~(close | first), t=state.t + 1)
        # the posterior's rows: the unique arms with feedback (no lazy refresh: the UCBs are all exact)
        return q, new, StepInfo(dict_size=jnp.sum(state.counts > 0).astype(jnp.int32))

    def update(state: ExactUCBState, fb: Feedback, params: ExactUCBParams):
        counts, _, _, incr = batch_feedback(state.counts, fb, state.var_fb, static.beta_mode)
        gp = exact.add_feedback(state.gp, padded_queries(fb), fb.rewards, params.lam)
        return state._replace(gp=gp, counts=counts, logdet=state.logdet + incr)

    def resparsify(key, state: ExactUCBState, params: ExactUCBParams):
        del key
        var = state.gp.var / params.lam
        if static.beta_family == "bkb":
            kappa2 = jnp.max(kernel.diag(params.kernel, state.arms))
            beta = beta_bkb(static.beta_mode, params, jnp.sum(state.counts), jnp.sum(state.counts * var), kappa2)
        else:
            beta = beta_bbkb(static.beta_mode, params, state.logdet, 1.0 if sequential else params.C)
        A = state.arms.shape[0]
        new = state._replace(
            var_fb=var, beta=beta, rule_acc=rule.init(A, var.dtype), batch_open=jnp.asarray(True))
        n_unique = state.gp.n_slots
        # no dictionary: the posterior holds every unique pulled arm (u_max of them)
        return new, RoundInfo(dict_size=n_unique, beta=beta, pulled_wanted=n_unique,
                              overflow=n_unique > static.u_max)

    return Algorithm(init, select, update, refit=resparsify)
