"""BKB, BBKB and GlobalLocal-BBKB: UCB on the Nyström (DTC) posterior with a resampled dictionary.

Papers: BKB (Calandriello et al., COLT 2019, Alg. 1) and BBKB (Calandriello et al., ICML 2020, Alg. 1).
One engine, three batch rules (``batch_rules.py``):

* ``bkb``        — sequential rule: every step is a batch of one, so the dictionary is resampled and the
                   posterior recomputed after each pull (BKB Alg. 1).
* ``bbkb``       — BBKB's global rule 1 + sum_s s~^2_fb(x_s) <= C~ (Alg. 1, L5).
* ``bbkb_local`` — the per-arm GlobalLocal rule of the public code.

Within a batch the mean, dictionary and width are frozen; variances shrink by rank-one updates of V^{-1} (Alg. 1, L7)
and the argmax is taken lazily over stale UCBs (L8; ``common.lazy_argmax_round``): O(A/B + B + k (m^2 + m d)) per
in-batch step for k arms refreshed together. A ``select`` call is one iteration of the in-batch loop: it commits the
step when the argmax is exact after its refresh round, and otherwise only keeps the refreshed bounds
(``StepInfo.committed`` False; rare) for the next iteration's fallback round. At the batch end the feedback is added
(``update``) and the dictionary resampled with the start-of-batch variances (L11–16, ``resparsify``).
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from sketchbo.algorithms.batch_rules import BatchRule
from sketchbo.algorithms.common import (
    Algorithm, Feedback, RoundInfo, Static, StepInfo, UCBTable, any_seed, batch_feedback, beta_bbkb,
    beta_bkb, beta_vakili, block_size, lazy_argmax_round, seeds_vmapped, table_argmax, ucb_table,
)
from sketchbo.gp import nystrom, sparse_bounds
from sketchbo.kernels import get_kernel
from sketchbo.linalg import take_rows


def _as(dtype, tree):
    """``tree`` (arrays, dicts of arrays) cast to ``dtype``; a no-op where it already has it."""
    return jax.tree.map(lambda v: jnp.asarray(v).astype(dtype), tree)


def _finite_or_worst(u):
    """A NaN UCB (a numerical failure) never wins the argmax and cannot select a padding slot."""
    return jnp.where(jnp.isnan(u), -jnp.inf, u)


class SparseUCBParams(NamedTuple):
    """BKB / BBKB's float hyperparameters (() arrays; the kernel's a dict of them).

    Attributes:
        lam: regulariser / noise variance lambda of the GP
        qbar: dictionary oversampling q-bar
        C: batch threshold C~ (BBKB) or C (GP-BUCB); 1 for sequential algorithms
        F: RKHS-norm bound F of the confidence width
        delta: confidence level delta
        xi: noise standard deviation xi used in the width
        kernel: kernel hyperparameters, e.g. {"sigma2": ()} for rbf
    """

    lam: jax.Array
    qbar: jax.Array
    C: jax.Array
    F: jax.Array
    delta: jax.Array
    xi: jax.Array
    kernel: dict


class SparseUCBState(NamedTuple):
    """The state of BKB, BBKB and GlobalLocal-BBKB: the dictionary and its Nyström factors, the start-of-batch
    posterior, the lazy UCB table and the batch's accumulators.

    Attributes:
        arms: `(A, d)` arm matrix
        kdiag: `(A,)` k(x, x)
        counts: `(A,)` float, pulls whose feedback has arrived
        ysum: `(A,)` summed rewards of those pulls
        dict_idx: `(m_max,)` int32 arm index of each dictionary slot
        dict_mask: `(m_max,)` bool, slot in use
        W: W, Vinv, B are in nystrom.factor_dtype(arms.dtype) (float64 for float32 arms), the rest in arms.dtype (m_max,
            m_max) K_S^{+1/2}
        Vinv: `(m_max, m_max)` V^{-1} including the pulls of the current batch
        B: `(m_max, m_max)` start-of-batch W^T (I/lam - V^{-1})^{1/2} (nystrom.posterior)
        mean: `(A,)` start-of-batch mean mu~_fb
        var_fb: `(A,)` start-of-batch variances s~^2_fb (lam-scaled)
        ucb: UCBs in blocks: exact where ``exact_at >= t``, upper bounds elsewhere
        exact_at: `(n_blocks * B,)` int32 the step count t at which each UCB was last made exact: exact for the current
            in-batch posterior iff ``exact_at >= t``, so a pull (t + 1) makes every UCB stale (padding: int32 max)
        attempt: `()` int32 refresh rounds already spent on the current step without deciding it
        beta: `()` width of the current batch
        logdet: `()` BBKB width accumulator (sum over pulls of log(1 + c s~^2_fb))
        rule_acc: `()` or (A,) batch-rule accumulator
        batch_open: `()` bool, the current batch continues
        t: `()` int32 pulls selected so far
        first_arm: `()` int32 the uniformly drawn initial arm x_1
    """

    arms: jax.Array
    kdiag: jax.Array
    counts: jax.Array
    ysum: jax.Array
    dict_idx: jax.Array
    dict_mask: jax.Array
    W: jax.Array
    Vinv: jax.Array
    B: jax.Array
    mean: jax.Array
    var_fb: jax.Array
    ucb: UCBTable
    exact_at: jax.Array
    attempt: jax.Array
    beta: jax.Array
    logdet: jax.Array
    rule_acc: jax.Array
    batch_open: jax.Array
    t: jax.Array
    first_arm: jax.Array


def make_sparse_ucb(static: Static, rule: BatchRule, sequential: bool) -> Algorithm:
    """Factory of the BKB-family algorithms for a static config and a batch rule."""
    kernel = get_kernel(static.kernel)
    m_max = static.m_max
    per_pull = static.resample == "paper"
    block = block_size(static.A)

    def init(key, problem, params: SparseUCBParams) -> SparseUCBState:
        arms = problem.arms
        dt = arms.dtype
        fdt = nystrom.factor_dtype(dt)
        A = arms.shape[0]
        kdiag = kernel.diag(params.kernel, arms)
        eye = jnp.eye(m_max, dtype=fdt)
        return SparseUCBState(
            arms=arms, kdiag=kdiag, counts=jnp.zeros((A,), dt), ysum=jnp.zeros((A,), dt),
            dict_idx=jnp.zeros((m_max,), jnp.int32), dict_mask=jnp.zeros((m_max,), bool),
            W=jnp.zeros((m_max, m_max), fdt), Vinv=eye / _as(fdt, params.lam), B=jnp.zeros((m_max, m_max), fdt),
            mean=jnp.zeros((A,), dt), var_fb=kdiag / params.lam, ucb=ucb_table(jnp.zeros((A,), dt), block),
            exact_at=_all_exact(A, 0), attempt=jnp.zeros((), jnp.int32), beta=jnp.zeros((), dt),
            logdet=jnp.zeros((), dt),
            rule_acc=rule.init(A, dt), batch_open=jnp.asarray(True),
            t=jnp.zeros((), jnp.int32),
            first_arm=jax.random.randint(key, (), 0, A, dtype=jnp.int32),  # Alg. 1, L1: x_1 uniform
        )

    def _all_exact(A, t):  # (n_blocks * B,) stamps of a new posterior at step t: every UCB exact until the next pull
        return jnp.where(jnp.arange(-(-A // block) * block) < A, t, jnp.iinfo(jnp.int32).max).astype(jnp.int32)

    def _dict_points(state):
        return state.arms[state.dict_idx]

    def select(key, state: SparseUCBState, params: SparseUCBParams):
        del key  # selection is deterministic given the state
        dt, fdt = state.arms.dtype, state.W.dtype  # the m x m algebra in the factor dtype (nystrom.factor_dtype)
        Xs = _dict_points(state)
        Xs_f, kp_f, lam_f = _as(fdt, (Xs, params.kernel, params.lam))

        def kS(i):  # (m_max,) k_S(x_i) in the factor dtype
            return nystrom.cross_kernel(kernel, kp_f, state.arms[i][None, :].astype(fdt), Xs_f, state.dict_mask)[0]

        def refresh(idx):  # (k,) exact UCBs of the arms idx under the current in-batch posterior
            K_xS = nystrom.cross_kernel(kernel, kp_f, take_rows(state.arms, idx).astype(fdt), Xs_f, state.dict_mask)
            var = nystrom.embedded_variances(K_xS, state.kdiag[idx].astype(fdt), state.W, state.Vinv, lam_f)
            return _finite_or_worst(state.mean[idx] + state.beta * jnp.sqrt(var)).astype(dt)

        A = state.arms.shape[0]
        fallback = any_seed(state.attempt > 0)  # the step's first round left its argmax stale
        ucb, exact_at, n_refresh = lazy_argmax_round(state.ucb, state.exact_at, state.t, refresh, A, fallback)  # L4, L8
        best = table_argmax(ucb)
        first = state.t == 0
        commit = first | (exact_at[best] >= state.t)  # the argmax is exact: this iteration decides the step
        q = jnp.where(first, state.first_arm, best).astype(jnp.int32)

        def cov_q():
            cov = nystrom.covariance_with(
                kernel, params.kernel, state.arms, Xs, state.dict_mask, state.B, state.arms[q], params.lam)
            return cov, state.var_fb

        acc, close = rule.step(state.rule_acc, state.var_fb[q], cov_q, params.C)  # Alg. 1, L5
        Vinv = nystrom.add_to_batch(state.Vinv, state.W, kS(q))  # Alg. 1, L7: s~_t shrinks in-batch
        new = state._replace(
            ucb=ucb, exact_at=exact_at, attempt=jnp.where(commit, 0, state.attempt + 1),
            Vinv=jnp.where(commit, Vinv, state.Vinv), rule_acc=jnp.where(commit, acc, state.rule_acc),
            batch_open=jnp.where(commit, ~(close | first), state.batch_open), t=state.t + commit.astype(jnp.int32),
        )
        return q, new, StepInfo(dict_size=jnp.sum(state.dict_mask).astype(jnp.int32), n_refresh=n_refresh,
                                loop_iterations=state.attempt, committed=commit)

    def update(state: SparseUCBState, fb: Feedback, params: SparseUCBParams):
        counts, qi, wy, incr = batch_feedback(state.counts, fb, state.var_fb, static.beta_mode)
        return state._replace(counts=counts, ysum=state.ysum.at[qi].add(wy), logdet=state.logdet + incr)

    def _posterior(state, idx, mask, p_idx, p_mask, params):
        """The new dictionary's posterior (BBKB Eq. 1–2), on the narrowest slot width holding the dictionary
        where ``static.slot_block`` allows (``nystrom.posterior_on_width``). Under the seeds' vmap every seed
        computes at m_max: a per-seed width would compute every width's branch for every seed."""
        widths = nystrom.slot_widths(m_max, static.slot_block)
        args = (kernel, params.kernel, state.arms, state.kdiag, idx, mask, p_idx, p_mask, state.counts, state.ysum,
                params.lam, state.W.dtype, static.eig_method)
        if len(widths) == 1 or seeds_vmapped():
            return nystrom.posterior(*args)
        return nystrom.posterior_on_width(nystrom.width_index(mask, widths), *args, block=static.slot_block)

    def resparsify(key, state: SparseUCBState, params: SparseUCBParams):
        if static.exact_dictionary:
            idx, mask, wanted = nystrom.exact_dictionary(state.counts, m_max)
        else:  # Alg. 1, L11–16 with the start-of-batch variances s~^2_fb
            idx, mask, wanted = nystrom.resample_dictionary(
                key, state.var_fb, state.counts, params.qbar, per_pull, m_max)
        p_idx, p_mask, n_unique = nystrom.pulled_list(state.counts, static.u_max)
        dt, fdt = state.arms.dtype, state.W.dtype
        post = _posterior(state, idx, mask, p_idx, p_mask, params)
        if static.beta_mode == "vakili":  # Thm 3.5 with lambda_max of the pulled arms against the new dictionary
            lam_max = sparse_bounds.lambda_max(kernel, _as(fdt, params.kernel), state.arms.astype(fdt), post.W, idx,
                                               mask, p_idx, p_mask, state.counts)
            beta = beta_vakili(params, lam_max.astype(dt), state.arms.shape[0])
        elif static.beta_family == "bkb":
            beta = beta_bkb(static.beta_mode, params, jnp.sum(state.counts),
                            jnp.sum(state.counts * post.var), jnp.max(state.kdiag))
        else:
            c = 1.0 if sequential else params.C
            beta = beta_bbkb(static.beta_mode, params, state.logdet, c)
        beta = beta.astype(dt)
        A = state.arms.shape[0]
        new = state._replace(
            dict_idx=idx, dict_mask=mask, W=post.W, Vinv=post.Vinv, B=post.B, mean=post.mean,
            var_fb=post.var, ucb=ucb_table(_finite_or_worst(post.mean + beta * jnp.sqrt(post.var)), block),
            exact_at=_all_exact(A, state.t), attempt=jnp.zeros((), jnp.int32),
            beta=beta, rule_acc=rule.init(A, state.var_fb.dtype), batch_open=jnp.asarray(True),
        )
        return new, RoundInfo(
            dict_size=jnp.minimum(wanted, m_max).astype(jnp.int32), beta=beta, dict_wanted=wanted.astype(jnp.int32),
            pulled_wanted=n_unique.astype(jnp.int32), overflow=(wanted > m_max) | (n_unique > static.u_max),
            rank=post.rank.astype(jnp.int32), max_clamp=post.max_clamp)

    return Algorithm(init, select, update, refit=resparsify)
