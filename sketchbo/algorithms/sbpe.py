"""S-BPE: Sparse Batched Pure Exploration (Vakili, Scarlett, Shiu, Bernacchia, ICML 2022, App. B, Alg. 1).

The horizon N = T is cut into batches of lengths N_i = ceil(sqrt(N N_{i-1})), N_0 = 1 (Alg. 1, L3; a static table, the
last batch truncated at T). Inside batch i the algorithm explores the active set X_i by maximum sparse variance, x =
argmax_{x in X_i} sigma-bar_{j-1,i}(x) (L8), where sigma-bar_{j-1,i} uses only the j - 1 points already chosen in this
batch and no reward (Remark 5.1); its inducing points are redrawn before every choice by recursive ridge-leverage-score
sampling (L6; [`sketchbo.gp.rls.recursive_rls`][], Musco & Musco 2016 Alg. 2) with confidence delta_j = 3 delta / (pi^2
B j^2) (Thm 5.2). At the batch end the batch's rewards arrive (``update``) and ``resparsify`` computes mu-bar_{N_i,i},
sigma-bar_{N_i,i} from the batch's points and rewards only (L16; inducing points by recursive RLS on the whole batch)
and eliminates (L17):

    X_{i+1} = {x in X_i : u_i(x) >= max_{x' in X_i} l_i(x')},   u_i, l_i = mu-bar +- beta(delta/(4B|X|)) sigma-bar
                                                                                                  (Eq. (13))

with Theorem 3.5's beta (``sparse_bounds.beta``) evaluated with the measured lambda_max of the batch's
points against the inducing points (<= tau^2 when RLS succeeds, Lemma 3.8, giving the paper's 3 C_k), C_k =
F, R = xi, tau^2 = lam. Ties of the maximum variance (the first choice of a batch: the prior variance is
flat) are broken uniformly at random.

RLS constants: q-bar is Alg. 2's oversampling constant c_os (L6) and the base-case size is 12 q-bar log(1/delta)
(L1), so q-bar = 16 gives Alg. 2's constants (16 and 192) and smaller values scale both down (the theory's
constants keep every point of a batch shorter than ~200 log(1/delta), i.e. the exact GP, on small problems).

Two discrete options (static; the registry's ``beta`` and ``resample`` keys, default ``code`` for both):

* ``beta`` — the elimination width. ``paper``: Theorem 3.5's beta(delta / (4 B |X|)) of Eq. (13) above.
  ``code`` (practical): beta = C_k + (R / tau) sqrt(2 log(1/delta)), the exact-GP width of Vakili et al.
  2021a quoted in §3.2 (``sparse_bounds.beta_exact``), without the lambda_max term and without the union
  bound over the B batches and |X| arms. Theorem 3.5's width multiplies C_k by 2 + sqrt(lam_max)/tau >= 2 and
  takes the log over 4 B |X| / delta; on ``gp_sample`` (A = 1000, T = 1000) it eliminates almost nothing and
  S-BPE then plays like uniform sampling of the whole set.
* ``resample`` — the in-batch variance of L7–L8. ``paper``: inducing points redrawn by recursive RLS before
  every choice (L6), then the sparse posterior of all A arms. ``code`` (practical): the exact posterior
  variance given the batch's points so far (what L6's RLS returns while the batch is shorter than Alg. 2's
  base case, 12 q-bar log(1/delta_j) points, where every point is kept), updated by one rank-one step per
  choice: with g_1 .. g_{j-1} the columns of the pivoted Cholesky factor of the batch's kernel,
  c(x, x_j) = k(x, x_j) - sum_l g_l(x) g_l(x_j), g_j = c(., x_j) / sqrt(c(x_j, x_j) + tau^2) and
  sigma^2_j = sigma^2_{j-1} - g_j^2. The batch's end (L16–17) is the same in both modes.

Costs per selection: ``resample=paper``: one recursive RLS over the batch's unique points
(``rls.n_levels(longest batch)`` posteriors of O(u_max m_max^2 + m_max^3)) and one sparse posterior of all A arms
(O(A m_max^2)); ``resample=code``: O(A d + A N_max) with N_max the longest batch (state: an (A, N_max) factor).
Per batch: one recursive RLS, one sparse posterior and one (u_max x u_max) eigenvalue problem for lambda_max.
The dictionary capacity m_max and the list of the batch's unique arms u_max overflow like BKB's and are grown
by the runner.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp

from sketchbo.algorithms.common import Algorithm, Feedback, RoundInfo, Static, StepInfo, first_argmax
from sketchbo.gp import nystrom, rls, sparse_bounds
from sketchbo.kernels import get_kernel
from sketchbo.linalg import mm

BASE_PER_QBAR = 12.0  # Alg. 2, L1 base size c_base = 12 q-bar log(1/delta) (192 at q-bar = 16)


def batch_lengths(T: int) -> tuple[int, ...]:
    """N_i = ceil(sqrt(T N_{i-1})), N_0 = 1, until the lengths cover T (Alg. 1, L3); the last is cut at T."""
    lengths, total, prev = [], 0, 1
    while total < T:
        n = min(math.ceil(math.sqrt(T * prev)), T - total)
        lengths.append(n)
        total += n
        prev = math.ceil(math.sqrt(T * prev))
    return tuple(lengths)


class SBPEParams(NamedTuple):
    """S-BPE's float hyperparameters (() arrays; the kernel's a dict of them).

    Attributes:
        lam: regulariser / noise variance lambda of the GP
        qbar: Alg. 2's RLS oversampling (the hyperparameter rls_qbar)
        F: RKHS-norm bound F of the confidence width
        delta: confidence level delta
        xi: noise standard deviation xi used in the width
        kernel: kernel hyperparameters, e.g. {"sigma2": ()} for rbf
    """

    lam: jax.Array
    qbar: jax.Array
    F: jax.Array
    delta: jax.Array
    xi: jax.Array
    kernel: dict


class SBPEState(NamedTuple):
    """The state of S-BPE: the arms still in play, the current batch's pulls and rewards, and the variances the in-batch
    choices use.

    Attributes:
        arms: `(A, d)` arm matrix
        kdiag: `(A,)` k(x, x)
        active: `(A,)` bool, the set X_i of potential maximisers
        batch_counts: `(A,)` float, pulls of the current batch (chosen, feedback pending or arrived)
        batch_ysum: `(A,)` summed rewards of the current batch (after ``update``)
        batch: `()` int32 index i - 1 of the current batch
        batch_t: `()` int32 pulls chosen in the current batch (j - 1 before the j-th choice)
        dict_wanted: `()` int32 largest inducing set an in-batch RLS wanted (capacity check, reset per batch)
        var: `(A,)` resample=code: exact GP variance given the batch's points so far (GP units)
        G: `(A, N_max)` resample=code: pivoted Cholesky columns g_j of the batch's kernel; (A, 1) unused
        batch_open: `()` bool, the current batch continues
        t: `()` int32 pulls chosen so far
    """

    arms: jax.Array
    kdiag: jax.Array
    active: jax.Array
    batch_counts: jax.Array
    batch_ysum: jax.Array
    batch: jax.Array
    batch_t: jax.Array
    dict_wanted: jax.Array
    var: jax.Array
    G: jax.Array
    batch_open: jax.Array
    t: jax.Array


WIDTHS = ("code", "paper")
"""S-BPE's widths (``beta_mode``): practical, or Theorem 3.5 (Eq. (13))."""
IN_BATCH = ("code", "paper")
"""S-BPE's in-batch variances (``resample``): the exact rank-one update, or RLS before every choice (L6)."""


def elimination_width(beta_mode: str, params: SBPEParams, lam_max, n_batches: int, n_arms: int):
    """beta of Eq. (13) (``paper``: Thm 3.5 with delta / (4 B |X|)) or the practical exact-GP width (``code``)."""
    tau = jnp.sqrt(params.lam)
    if beta_mode == "paper":
        log_inv = jnp.log(4.0 * n_batches * n_arms / params.delta)  # beta(delta / (4 B |X|)), Eq. (13)
        return sparse_bounds.beta(lam_max, tau, params.F, params.xi, log_inv)
    return sparse_bounds.beta_exact(tau, params.F, params.xi, jnp.log(1.0 / params.delta))


def pick_max_variance(key, var, active):
    """L8: argmax of the variance over the active set, ties (a flat prior variance) broken uniformly."""
    var = jnp.where(active, var, -1.0)
    top = var >= jnp.max(var) * (1.0 - 1e-12)
    noise = jax.random.uniform(key, var.shape, dtype=var.dtype)
    return first_argmax(jnp.where(top & active, noise, -1.0)).astype(jnp.int32)


def make_sbpe(static: Static) -> Algorithm:
    """Factory of S-BPE for a static config (``static.T`` fixes the batch schedule; ``static.beta_mode`` the
    width and ``static.resample`` the in-batch variance, module docstring)."""
    if static.beta_mode not in WIDTHS or static.resample not in IN_BATCH:
        raise ValueError(f"S-BPE takes beta in {WIDTHS} and resample in {IN_BATCH}; got "
                         f"{static.beta_mode!r}, {static.resample!r}")
    kernel = get_kernel(static.kernel)
    m_max, u_max = static.m_max, static.u_max
    lengths = batch_lengths(static.T)
    n_batches = len(lengths)  # B of Eq. (13) and Thm 5.2
    levels = rls.n_levels(max(lengths))  # from the longest batch, not the capacity: growth keeps the trajectory
    exact_in_batch = static.resample == "code"
    n_cols = max(lengths) if exact_in_batch else 1  # N_max: columns of the in-batch factor

    def _inducing(key, state, params: SBPEParams, j):
        """Alg. 1, L6: recursive RLS on the batch's points with delta_j = 3 delta / (pi^2 B j^2) (Thm 5.2)."""
        p_idx, p_mask, n_unique = nystrom.pulled_list(state.batch_counts, u_max)
        delta_j = 3.0 * params.delta / (jnp.pi ** 2 * n_batches * jnp.maximum(j, 1) ** 2)
        sample = rls.recursive_rls(key, kernel, params.kernel, state.arms, state.kdiag, p_idx, p_mask,
                                   state.batch_counts, params.lam, delta_j, m_max, levels,
                                   c_base=BASE_PER_QBAR * params.qbar, c_os=params.qbar)
        return sample, p_idx, p_mask, n_unique

    def init(key, problem, params: SBPEParams) -> SBPEState:
        del key  # the first choice is random through select's tie-breaking
        arms = problem.arms
        A = arms.shape[0]
        dt = arms.dtype
        kdiag = kernel.diag(params.kernel, arms)
        return SBPEState(
            arms=arms, kdiag=kdiag, active=jnp.ones((A,), bool),
            batch_counts=jnp.zeros((A,), dt), batch_ysum=jnp.zeros((A,), dt), batch=jnp.zeros((), jnp.int32),
            batch_t=jnp.zeros((), jnp.int32), dict_wanted=jnp.zeros((), jnp.int32), var=kdiag,
            G=jnp.zeros((A, n_cols), dt), batch_open=jnp.asarray(True), t=jnp.zeros((), jnp.int32),
        )

    def _select_rls(key, state: SBPEState, params: SBPEParams):
        """``resample=paper``: L6–L8 as printed, the sparse variance with inducing points redrawn now."""
        k_rls, k_tie = jax.random.split(key)
        sample, p_idx, p_mask, _ = _inducing(k_rls, state, params, state.batch_t)
        post = nystrom.posterior(kernel, params.kernel, state.arms, state.kdiag, sample.idx, sample.mask, p_idx,
                                 p_mask, state.batch_counts, jnp.zeros_like(state.batch_ysum), params.lam)  # L7
        q = pick_max_variance(k_tie, post.var, state.active)  # lam-scaled sigma-bar^2 / tau^2: same argmax (L8)
        new = state._replace(dict_wanted=jnp.maximum(state.dict_wanted, sample.wanted))
        return q, new, jnp.sum(sample.mask).astype(jnp.int32)

    def _select_exact(key, state: SBPEState, params: SBPEParams):
        """``resample=code``: L8 on the exact in-batch variance, then its rank-one update by the new point."""
        q = pick_max_variance(key, state.var, state.active)
        cov = kernel.k(params.kernel, state.arms, state.arms[q][None, :])[:, 0] - mm(state.G, state.G[q])  # (A,)
        g = cov / jnp.sqrt(jnp.maximum(cov[q], 0.0) + params.lam)  # new pivoted-Cholesky column
        new = state._replace(var=jnp.maximum(state.var - g * g, 0.0), G=state.G.at[:, state.batch_t].set(g))
        return q, new, state.batch_t + 1  # the exact posterior of the batch's points, this one included

    def select(key, state: SBPEState, params: SBPEParams):
        choose = _select_exact if exact_in_batch else _select_rls
        q, state, dict_size = choose(key, state, params)
        batch_t = state.batch_t + 1
        n_i = jnp.asarray(lengths, jnp.int32)[jnp.minimum(state.batch, n_batches - 1)]
        new = state._replace(batch_counts=state.batch_counts.at[q].add(1.0), batch_t=batch_t,
                             batch_open=batch_t < n_i, t=state.t + 1)
        return q, new, StepInfo(dict_size=dict_size)

    def update(state: SBPEState, fb: Feedback, params: SBPEParams):
        """Alg. 1, L14: the batch's rewards (its pulls were counted when chosen)."""
        qi = jnp.where(fb.valid, fb.points, 0)
        return state._replace(batch_ysum=state.batch_ysum.at[qi].add(jnp.where(fb.valid, fb.rewards, 0.0)))

    def resparsify(key, state: SBPEState, params: SBPEParams):
        """Alg. 1, L16–17: statistics of the finished batch, elimination with Eq. (13), a new empty batch."""
        sample, p_idx, p_mask, n_unique = _inducing(key, state, params, state.batch_t)
        stats = sparse_bounds.svgp_statistics(kernel, params.kernel, state.arms, state.kdiag, sample.idx,
                                              sample.mask, p_idx, p_mask, state.batch_counts, state.batch_ysum,
                                              params.lam)
        lam_max = sparse_bounds.lambda_max(kernel, params.kernel, state.arms, stats.post.W, sample.idx,
                                           sample.mask, p_idx, p_mask, state.batch_counts)
        A = state.arms.shape[0]
        beta = elimination_width(static.beta_mode, params, lam_max, n_batches, A)
        width = beta * jnp.sqrt(stats.var)
        upper, lower = stats.mean + width, stats.mean - width
        best_lower = jnp.max(jnp.where(state.active, lower, -jnp.inf))
        active = state.active & (upper >= best_lower)  # L17
        wanted = jnp.maximum(state.dict_wanted, sample.wanted)
        dt = state.batch_ysum.dtype
        new = state._replace(
            active=active, batch_counts=jnp.zeros((A,), dt), batch_ysum=jnp.zeros((A,), dt),
            batch=state.batch + 1, batch_t=jnp.zeros((), jnp.int32), dict_wanted=jnp.zeros((), jnp.int32),
            var=state.kdiag, G=jnp.zeros_like(state.G), batch_open=jnp.asarray(True),
        )
        return new, RoundInfo(
            dict_size=jnp.sum(sample.mask).astype(jnp.int32), beta=beta, dict_wanted=wanted,
            pulled_wanted=n_unique.astype(jnp.int32), overflow=(wanted > m_max) | (n_unique > u_max),
            rank=stats.post.rank.astype(jnp.int32), max_clamp=stats.post.max_clamp, lam_max=lam_max,
            n_active=jnp.sum(active).astype(jnp.int32))

    return Algorithm(init, select, update, refit=resparsify)


__all__ = ["SBPEParams", "IN_BATCH", "SBPEState", "WIDTHS", "batch_lengths", "elimination_width", "make_sbpe",
           "pick_max_variance"]
