"""Types shared by every algorithm, and the confidence widths beta of BKB / BBKB.

The contract (``sketchbo.contract``, docs/architecture.md#algorithm-contract): a factory closes over a hashable static
config and returns ``Algorithm(init, select, update, refit)`` of pure functions. The finite registry's algorithms share
[`Static`][]; each owns its params (float hyperparameters as arrays, so a sweep can be a vmap axis without recompiling).

Confidence widths (docs/algorithms.md#confidence-width), in the papers' lam-scaled variance units (UCB = mu + beta s~):

* family ``bkb``  — BKB (COLT 2019):
    code  : beta_t = sqrt(lam) F + xi sqrt(log(t) sum_s s~^2_t(x_s) + log(1/delta))      (BKB._update_beta)
    paper : beta_t = 2 xi sqrt(alpha log(kappa^2 t) sum_s s~^2_t(x_s) + log(1/delta))
                     + (1 + 1/sqrt(1-eps)) sqrt(lam) F,  eps = 1/2, alpha = 3             (BKB Thm 2)
* family ``bbkb`` — BBKB (ICML 2020), with logdet accumulated once per batch over its pulls:
    code  : logdet += sum_batch log(1 + s~^2_fb(x_s));
            beta = sqrt(lam) F + xi sqrt(C logdet + log(1/delta))                          (Batch_BKB.update)
    paper : logdet += sum_batch log(1 + 3 s~^2_fb(x_s));
            alpha~ = C [2 xi sqrt(logdet + log(1/delta)) + (1 + sqrt 2) sqrt(lam) F]          (BBKB Thm 2)
  For the exact GP with batches of one, the code form's logdet is log det(I + K/lam) (chain rule), the
  GP-UCB width of docs/protocols.md#baselines. Sequential algorithms use C = 1 in these formulas.
* mode ``vakili`` (either family, Nyström engine only) — Theorem 3.5 of Vakili et al. (ICML 2022) with the current
  dictionary, union bound over the arms: beta = (2 sqrt(lam) + sqrt(lam_max)) F + xi sqrt(2 log(A/delta))
  ([`beta_vakili`][]).
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from sketchbo.contract import (  # noqa: F401  (the contract's types, re-exported)
    Algorithm, ArmSet, BoxSet, Feedback, RoundInfo, StepInfo,
)
from sketchbo.gp import sparse_bounds


def arm_feedback(queries, ys) -> Feedback:
    """Feedback of a finite-arm batch from the trace layout: ``queries`` (T,) with -1 padding."""
    return Feedback(queries, ys, queries >= 0)


def padded_queries(fb: Feedback):
    """(T,) arm indices with -1 where the entry is not part of the batch."""
    return jnp.where(fb.valid, fb.points, -1)


def present(value, default):
    """``value`` if the algorithm reports it, else ``default`` (trace-time: absent fields are None)."""
    return default if value is None else value


class Static(NamedTuple):
    """Static (hashable) configuration: shapes, capacities and discrete choices.

    Attributes:
        A: number of arms
        d: arm dimension
        T: horizon of the run (the runner's trace buffers)
        m_max: dictionary capacity
        u_max: capacity of the list of unique pulled arms
        kernel: kernel family name
        beta_family: "bkb" | "bbkb"
        beta_mode: "code" | "paper"
        resample: "code" (per unique arm, with counts) | "paper" (per pull)
        batch_rule: name of the batch rule (see batch_rules.py)
        exact_dictionary: force S = all pulled arms (testing: Nyström == exact)
        eig_method: eigensolver of the dictionary's m x m algebra (linalg.EIG_METHODS)
        slot_block: granularity of the dictionary widths a resparsification runs on (nystrom.slot_widths); 0: always
            m_max
    """

    A: int
    d: int
    T: int
    m_max: int
    u_max: int
    kernel: str
    beta_family: str
    beta_mode: str
    resample: str
    batch_rule: str
    exact_dictionary: bool = False
    eig_method: str = "auto"
    slot_block: int = 0


BETA_FAMILIES = ("bkb", "bbkb")
BETA_MODES = ("code", "paper", "vakili")  # vakili: Nyström engine only (Thm 3.5 of Vakili et al. 2022)


def logdet_increment(mode: str, var_fb):
    """Per-pull term of the BBKB width's log-determinant (code: log(1+s^2), paper: log(1+3 s^2))."""
    return jnp.log1p(var_fb) if mode == "code" else jnp.log1p(3.0 * var_fb)


def batch_feedback(counts, fb: Feedback, var_fb, beta_mode: str):
    """Bookkeeping of a finished batch of arm pulls.

    Returns ``(counts, qi, wy, logdet_increment)``: the new pull counts, the clipped arm indices, the
    masked rewards (scatter-add them into summed rewards at ``qi``) and the BBKB width's increment over the
    batch's pulls with their start-of-batch variances ``var_fb``.
    """
    qi = jnp.where(fb.valid, fb.points, 0)
    w = fb.valid.astype(counts.dtype)
    incr = jnp.sum(w * logdet_increment(beta_mode, var_fb[qi]))
    if beta_mode == "code":  # the public code starts its logdet after the initial arm
        incr = jnp.where(jnp.sum(counts) == 0, 0.0, incr)
    return counts.at[qi].add(w), qi, w * fb.rewards, incr


def beta_bkb(mode: str, params, t, sum_n_var, kappa2):
    """BKB width from the current variances of the pulled arms (sum_n_var = sum_i n_i s~^2_t(x_i))."""
    log_inv_delta = jnp.log(1.0 / params.delta)
    root_lam_F = jnp.sqrt(params.lam) * params.F
    t = jnp.maximum(t, 1.0)
    if mode == "code":
        return root_lam_F + params.xi * jnp.sqrt(jnp.maximum(jnp.log(t) * sum_n_var + log_inv_delta, 0.0))
    log_k2t = jnp.maximum(jnp.log(kappa2 * t), 0.0)
    return 2.0 * params.xi * jnp.sqrt(3.0 * log_k2t * sum_n_var + log_inv_delta) + (1.0 + jnp.sqrt(2.0)) * root_lam_F


def beta_bbkb(mode: str, params, logdet, c):
    """BBKB width from the accumulated log-determinant; ``c`` is C~ for batched algorithms, 1 otherwise."""
    log_inv_delta = jnp.log(1.0 / params.delta)
    root_lam_F = jnp.sqrt(params.lam) * params.F
    if mode == "code":
        return root_lam_F + params.xi * jnp.sqrt(jnp.maximum(c * logdet + log_inv_delta, 0.0))
    return c * (2.0 * params.xi * jnp.sqrt(logdet + log_inv_delta) + (1.0 + jnp.sqrt(2.0)) * root_lam_F)


def beta_vakili(params, lam_max, n_arms):
    """Theorem 3.5 of Vakili et al. (ICML 2022) in the lam-scaled units of the UCB (``beta: vakili``).

    With C_k = F, R = xi, tau^2 = lam and the union bound over the n_arms arms (delta / |X|):
    f(x) in mu~ +- beta_V sigma-bar with sigma-bar = sqrt(lam) s~, so the width multiplying s~ is
    sqrt(lam) beta_V = (2 sqrt(lam) + sqrt(lam_max)) F + xi sqrt(2 log(|X| / delta)), lam_max being that of
    the pulled arms against the current dictionary. (The theorem assumes points chosen independently of the
    noise, which UCB does not satisfy; the mode applies the formula as a heuristic width, as BKB's code does.)
    """
    log_inv = sparse_bounds.log_inv_delta_finite(params.delta, n_arms)
    return jnp.sqrt(params.lam) * sparse_bounds.beta(lam_max, jnp.sqrt(params.lam), params.F, params.xi, log_inv)


def first_argmax(u):
    """Index of the first maximum of a 1-D array (``jnp.argmax`` semantics, about 3x faster on CPU)."""
    n = u.shape[0]
    return jnp.minimum(jnp.min(jnp.where(u == jnp.max(u), jnp.arange(n), n)), n - 1)


class UCBTable(NamedTuple):
    """UCB values of A arms in blocks of B with each block's maximum: argmax and single-entry updates in O(A/B + B)
    instead of O(A) (B ~ sqrt(A)). Padding entries hold -inf.

    Attributes:
        values: `(n_blocks, B)` UCB of arm b*B + j
        block_max: `(n_blocks,)` max of each block
    """

    values: jax.Array
    block_max: jax.Array


def ucb_table(u, block: int) -> UCBTable:
    A = u.shape[0]
    nb = -(-A // block)
    vals = jnp.full((nb * block,), -jnp.inf, u.dtype).at[:A].set(u).reshape(nb, block)
    return UCBTable(vals, jnp.max(vals, axis=1))


def table_argmax(tab: UCBTable):
    b = first_argmax(tab.block_max)
    return b * tab.values.shape[1] + first_argmax(tab.values[b])


def table_set(tab: UCBTable, i, value) -> UCBTable:
    B = tab.values.shape[1]
    b, j = i // B, i % B
    row = tab.values[b].at[j].set(value)
    return UCBTable(tab.values.at[b].set(row), tab.block_max.at[b].set(jnp.max(row)))


def block_size(A: int) -> int:
    return max(1, int(round(A ** 0.5)))


REFRESH_K = 8  # arms refreshed together by the first round of the in-batch step (lazy_argmax_round)
# Each further round (the fallback, rare on most problems: Cadata 0.001 rounds per step) refreshes the
# REFRESH_PER_BLOCK largest stale entries of each of the REFRESH_BLOCKS blocks with the largest maxima (128
# arms). Where many stale bounds tie above the best exact UCB (FCNet's duplicated configurations, early
# rounds) rounds of 8 needed thousands of iterations in one step; rounds of 128 arms a few. The candidates
# are found per block (candidate_indices: XLA:CPU's float32 top-k on the CPU, extractions elsewhere), not by
# a sort over the k blocks' B entries.
REFRESH_BLOCKS = 16
REFRESH_PER_BLOCK = 8


SCAN_TOP_K = 16  # up to this k, top_k_indices extracts maxima one by one instead of sorting


def top_k_indices(x, k: int):
    """Indices of the k largest entries of a 1-D array, in ``lax.top_k``'s order (descending; ties to the
    lower index; -inf entries last).

    In float64 XLA lowers ``top_k`` to a full sort (seen on the CPU and on an H100, where it was the largest
    device cost of a 1000-seed in-batch step: ~1.8 ms a step for 1000 x 144 and 1000 x 1152 entries, issue
    15); on the CPU it cost a third of float64 BBKB's execution time. float32 ``top_k`` was faster than the
    extractions on the CPU (the GPU's float32 case is not measured). So float32 keeps ``top_k``, and other
    dtypes with k <= SCAN_TOP_K take k successive first-maximum extractions (2k reductions over x): Cadata,
    T = 10^4, 10 seeds on the 2-core CPU, float64 execution 33.1 -> 21.8 s (float32 with the extractions:
    12.7 -> 15.1 s, hence the split).
    Larger k of other dtypes is ``lax.top_k`` (a sort)."""
    if x.dtype == jnp.float32 or k > SCAN_TOP_K:
        return jax.lax.top_k(x, k)[1]
    n = x.shape[0]
    pos = jnp.arange(n)
    taken = jnp.zeros((n,), bool)
    out = []
    for _ in range(k):
        best = jnp.max(jnp.where(taken, -jnp.inf, x))
        i = jnp.min(jnp.where(~taken & (x == best), pos, n))
        out.append(i)
        taken = taken.at[i].set(True)
    return jnp.stack(out).astype(jnp.int32)


def candidate_indices(x, k: int):
    """Indices of k of the largest entries of x along its last axis, for the lazy argmax's refresh rounds, where which
    stale arms are refreshed changes the work and never the selection (``_refresh_round``). On the CPU: ``lax.top_k`` of
    x rounded to float32 (entries within float32 rounding of each other may come in another order), XLA:CPU's top-k
    routine, 6x faster than float64's extractions ([`top_k_indices`][]; Cadata's in-batch step, 1152 + 144 entries: 10
    against 63 us on the 2-core CPU, 2026-11-27). The indices pass an optimisation barrier: without it XLA folded the
    slice of the first k into the gathers that consume them, and a top-k whose slice is gone is no longer recognised as
    one, so it ran as a full sort of x (Cadata's in-batch step: 34 against 24 us, one core, 2026-12-04; the same
    selections). Elsewhere [`top_k_indices`][]."""
    if jax.default_backend() == "cpu":
        return jax.lax.optimization_barrier(jax.lax.top_k(x.astype(jnp.float32), k)[1])
    return top_k_indices(x, k) if x.ndim == 1 else jax.vmap(lambda row: top_k_indices(row, k))(x)


def _refresh_round(tab: UCBTable, exact_at, epoch, refresh_many, A: int, k: int, per_block: int | None = None,
                   size: int | None = None, n_blocks: int | None = None):
    """The stale arms to refresh, with large bounds, and their exact UCBs (one batched call of ``refresh_many``),
    without writing the table.

    An entry is exact where ``exact_at >= epoch`` ((n_blocks * B,); padding counts as exact). The candidates come
    from the k blocks with the largest maxima (all blocks if fewer): their k largest stale entries together
    (``per_block=None``, the first round), or the ``per_block`` largest stale entries of each (the fallback
    rounds: no top-k over k * B entries, which XLA sorts); and always the table's argmax when it is stale (so
    that every round makes progress, whatever the ties and -inf entries). Which stale arms are refreshed
    changes the work, not the selection (the step is decided at the first exact maximiser whatever
    was refreshed). Returns ``(idx, values, valid, rows)``: the candidates, their values (refreshed where
    ``valid``, the table's elsewhere), and the blocks they lie in, padded to ``size`` candidates and ``n_blocks``
    blocks by repeats of the first (the same writes again), so that both rounds return the same shapes.
    """
    nb, B = tab.values.shape
    kb = min(k, nb)
    blocks = candidate_indices(tab.block_max, kb)  # (kb,)
    stale = exact_at.reshape(nb, B)[blocks] < epoch
    cand = jnp.where(stale, tab.values[blocks], -jnp.inf)  # (kb, B)
    if per_block is None:
        pos = candidate_indices(cand.reshape(-1), min(k, kb * B))
        idx = blocks[pos // B] * B + pos % B  # flat indices of the candidates
    else:
        pos = candidate_indices(cand, min(per_block, B))  # (kb, per_block)
        idx = (blocks[:, None] * B + pos).reshape(-1)
    best = table_argmax(tab)
    idx = idx.at[0].set(jnp.where(exact_at[best] >= epoch, idx[0], best).astype(idx.dtype))
    valid = exact_at[idx] < epoch  # stale real arms; a repeated candidate writes the same value twice
    flat = tab.values.reshape(-1)
    values = jnp.where(valid, refresh_many(jnp.minimum(idx, A - 1)), flat[idx])
    rows = jnp.concatenate([blocks.astype(idx.dtype), (idx[:1] // B)])  # every block a candidate lies in

    def pad(x, n, fill):
        return x if n is None or x.shape[0] >= n else jnp.concatenate([x, jnp.full((n - x.shape[0],), fill, x.dtype)])

    return pad(idx, size, idx[0]), pad(values, size, values[0]), pad(valid, size, False), pad(rows, n_blocks, rows[0])


SEED_AXIS = "seeds"
"""The name of the vmap axis of the seeds, over which [`any_seed`][] reduces."""


def any_seed(flag):
    """True where ``flag`` holds for any seed of the program: reduced over the vmapped seed axis ([`SEED_AXIS`][]), so
    that a ``lax.cond`` on it stays a branch under ``vmap`` instead of becoming a select that computes both sides for
    every seed; ``flag`` itself where no seed axis is bound (one seed, ``seed_axis='map'``, ask/tell)."""
    try:
        return jax.lax.psum(jnp.asarray(flag, jnp.int32), SEED_AXIS) > 0
    except NameError:  # no vmapped seed axis around this call
        return jnp.asarray(flag)


def seeds_vmapped() -> bool:
    """Whether the code being traced runs under the seeds' ``vmap`` ([`SEED_AXIS`][] bound); False for one seed,
    ``seed_axis='map'`` and ask/tell. Trace-time."""
    try:
        jax.lax.axis_index(SEED_AXIS)
    except NameError:
        return False
    return True


def lazy_argmax_round(tab: UCBTable, exact_at, epoch, refresh_many, A: int, fallback, k: int = REFRESH_K,
                      more_blocks: int = REFRESH_BLOCKS, per_block: int = REFRESH_PER_BLOCK):
    """One round of the bounded lazy argmax (docs/architecture.md#cost-model; BBKB Alg. 1, L7–8).

    ``tab`` holds upper bounds of UCBs that only decrease in a batch (values computed earlier in the batch); the exact
    ones are those where ``exact_at >= epoch`` ((n_blocks * B,) int32 stamps, padding int32 max: an algorithm stamps
    refreshed entries with its step count and every entry goes stale when the count moves on, with no pass over the
    table); ``refresh_many(idx)`` returns the exact UCBs of the arms ``idx``. The first round of a step refreshes the
    k largest stale bounds together (k m^2 work in one batched product); a ``fallback`` round (the step's argmax was
    still stale after the first) refreshes the ``per_block`` largest stale entries of each of the ``more_blocks``
    blocks with the largest maxima. After either, the table's argmax (first index among its maxima) is the answer if
    it is exact: every stale entry bounds its arm's current UCB from above, so that arm is the first maximiser of the
    exact UCBs — the selection of the one-at-a-time lazy rule, ties included. ``fallback`` is one flag for the seeds
    of a vmapped program ([`any_seed`][]): the branch not taken costs nothing. Returns ``(tab, exact_at,
    n_refreshed)``, the refreshed entries stamped ``epoch``; the step is decided iff
    ``exact_at[table_argmax(tab)] >= epoch``.
    """
    nb, B = tab.values.shape
    size = max(min(k, min(k, nb) * B), min(more_blocks, nb) * min(per_block, B))  # candidates of either round
    n_blocks = max(min(k, nb), min(more_blocks, nb)) + 1  # blocks they lie in, the argmax's included
    # The round's writes are made here, outside the branches: a table written inside a branch is copied whole
    # at every step (XLA:CPU, two copies of the A-entry table per in-batch step).
    idx, values, valid, rows = jax.lax.cond(
        fallback,
        lambda: _refresh_round(tab, exact_at, epoch, refresh_many, A, more_blocks, per_block, size, n_blocks),
        lambda: _refresh_round(tab, exact_at, epoch, refresh_many, A, k, None, size, n_blocks))
    table = tab.values.reshape(-1).at[idx].set(values).reshape(nb, B)
    block_max = tab.block_max.at[rows].set(jnp.max(table[rows], axis=1))
    return UCBTable(table, block_max), exact_at.at[idx].set(epoch), jnp.sum(valid).astype(jnp.int32)
