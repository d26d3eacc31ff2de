"""Continuous S-BPE on the box [0, 1]^d (Vakili, Scarlett, Shiu, Bernacchia, ICML 2022, §5.2, Eq. (15), Thm 5.3;
App. B, Alg. 1).

S-BPE on a compact domain is Alg. 1 with the finite set X replaced by the box and the confidence bounds of Eq. (13) by
those of Eq. (15). Two things have no closed form there, the argmax of the sparse variance over the active region
X_i (L8) and the region itself (L17), so both live on a **pool** of ``n_pool`` points of the box, a discretisation
in the sense of Assumption 3.6 (far coarser than the Gamma_n points Corollary 3.7's union bound counts):

* the pool starts as ``n_pool`` points drawn uniformly in [0, 1]^d (``init``'s key), all active (X_1 = the box);
* batches N_i = ceil(sqrt(N N_{i-1})), N_0 = 1, as the finite ``sbpe`` ([`sketchbo.algorithms.sbpe.batch_lengths`][],
  Alg. 1, L3); inside batch i the query is the active pool point of largest sparse variance sigma-bar_{j-1,i} given
  the batch's earlier points only (L6–L8, Remark 5.1), ties broken uniformly;
* at the batch end ``resparsify`` computes mu-bar_{N_i,i}, sigma-bar_{N_i,i} from the batch's points and rewards
  (L16; inducing points by recursive RLS on the batch, [`sketchbo.gp.rls.recursive_rls`][], delta_j = 3 delta /
  (pi^2 B j^2), Thm 5.2/5.3) and eliminates (L17): X_{i+1} = {x in X_i : u_i(x) >= L_i}, L_i = max over X_i of
  l_i, taken over the active pool points (a lower value than the max over the region: the region kept is larger,
  never smaller);
* the batch's bounds are **stored** (its inducing points, the posterior's factors a and B, its width and L_i), so
  that membership of any point of the box in X_{i+1} = the intersection over k <= i of {u_k(x) >= L_k} can be
  decided later;
* the pool then **refills** its eliminated slots (``refill`` rounds): each proposes a point near a random active
  pool point (Gaussian steps of ``jitter`` times the active points' spread per coordinate, clipped to the box) and
  keeps it where it lies in X_{i+1} by every stored bound. The pool concentrates on the region as it shrinks, so
  the resolution of the discretisation grows where the maximiser can be; ``refill = 0`` keeps a fixed pool (then
  the algorithm is the finite ``sbpe`` on the pool's points, with Eq. (15)'s widths under ``beta = paper``).

Widths (static option ``beta``):

* ``paper`` — Eq. (15): u_i, l_i = mu-bar +- (2/N_i + beta~_{N_i}(delta / (4B)) (sigma-bar + 2/sqrt(N_i))), with
  Corollary 3.7's beta~_n(delta) = beta(delta / (2 Gamma_n)), Gamma_n = c (C_k^{mu-bar}(delta/2))^d n^d
  ([`sketchbo.gp.sparse_bounds.continuous_width`][]; ``c_disc`` is Assumption 3.6's constant c, k_max = 1 for the
  rbf kernel) and the measured lambda_max of Thm 3.5;
* ``code`` (practical, the default) — the finite ``sbpe``'s practical width, beta = C_k + (R / tau) sqrt(2 log(1 /
  delta)) (the exact-GP width quoted in §3.2, ``sparse_bounds.beta_exact``), without the union bound and without
  Eq. (15)'s discretisation terms.

In-batch variance (static option ``resample``), as the finite ``sbpe``: ``code`` the exact variance given the batch's
points, one rank-one step per choice on the pool (pivoted-Cholesky columns G (n_pool, N_max)); ``paper`` inducing
points redrawn by recursive RLS before every choice (L6) and the sparse variance of the whole pool.

The kernel is the rbf kernel k(x, x') = exp(-||x - x'||^2 / (2 sigma2)) on the unit cube with the fixed width
``sigma2`` (S-BPE's theory is for a known kernel: nothing is fitted); lam = tau^2, F = C_k and R, Assumption 3.4's
noise constant (None: sqrt(lam), the finite runs' fallback for xi; a box problem's noise level is not read, so that a
run and ask/tell on the same box agree; the name is not ``xi``, which a box run's result reports as the problem's
noise).
Rewards enter the GP as they come (zero prior mean): F is a bound on the RKHS norm of the reward in the box's unit
coordinates, so an objective of another scale needs its own F.

Capacities are static and never overflow: the inducing set holds at most min(m_max, N_max) points (a recursive RLS
sample that wants more keeps its first min(m_max, N_max), and lambda_max, measured on the batch, says how good they
are), the batch's unique points at most N_max. Costs per selection: ``resample = code`` O(n_pool (d + N_max)); per
batch one recursive RLS, one sparse posterior of the pool O(n_pool m^2 + m^3) and ``refill`` x B membership
evaluations O(n_pool m^2) each. State memory: O(n_pool N_max + B m^2).
"""
from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp

from sketchbo.algorithms.common import Algorithm, Feedback, RoundInfo, StepInfo
from sketchbo.algorithms.sbpe import BASE_PER_QBAR, batch_lengths, pick_max_variance
from sketchbo.checks import check_float, check_int, invalid_value
from sketchbo.gp import nystrom, rls, sparse_bounds
from sketchbo.kernels import get_kernel
from sketchbo.linalg import mm
from sketchbo.spec import StaticConfig

RBF = get_kernel("rbf")
WIDTHS = ("code", "paper")
"""The elimination widths (``beta``): the finite ``sbpe``'s practical width, or Eq. (15)."""
IN_BATCH = ("code", "paper")
"""The in-batch variances (``resample``): exact rank-one updates, or recursive RLS before every choice (L6)."""
K_MAX = 1.0  # sup_x k(x, x) of the rbf kernel (Corollary 3.7)
SCALE_FLOOR = 1e-3  # smallest spread per coordinate of the refill's steps (unit-cube coordinates; our choice)

DEFAULTS = {"lam": 0.01, "F": 1.0, "R": None, "delta": None, "sigma2": 0.5, "rls_qbar": 1.0, "jitter": 0.5,
            "c_disc": 1.0, "n_pool": 1024, "refill": 4, "m_max": 256, "beta": "code", "resample": "code"}
"""Every hyperparameter of ``sbpe_box`` with its default (docs/algorithms.md#sbpe-box says where each comes from)."""


class SBPEBoxParams(NamedTuple):
    """The float hyperparameters of continuous S-BPE (() arrays).

    Attributes:
        lam: tau^2, the GP's regulariser (noise variance of the model)
        F: C_k, the RKHS-norm bound of the width
        R: the noise's sub-Gaussian constant R of Assumption 3.4 in the width
        delta: the confidence level delta
        sigma2: width of the rbf kernel on the unit cube
        rls_qbar: Alg. 2's recursive-RLS oversampling q-bar (16: the theory's constants)
        jitter: the refill's steps, in units of the active pool points' spread per coordinate
        c_disc: Assumption 3.6's constant c of the discretisation size (``beta = paper``)
    """

    lam: jax.Array
    F: jax.Array
    R: jax.Array
    delta: jax.Array
    sigma2: jax.Array
    rls_qbar: jax.Array
    jitter: jax.Array
    c_disc: jax.Array


class Bounds(NamedTuple):
    """The confidence bounds of every finished batch, kept to decide membership of new points in X_{i+1}.

    Attributes:
        Z: `(B, m, d)` inducing points of batch k
        mask: `(B, m)` bool inducing slot in use
        a: `(B, m)` mean weights: mu-bar_k(x) = k_Z(x)^T a_k
        Bf: `(B, m, m)` variance factor: sigma-bar_k^2(x) = lam (k(x, x) / lam - ||B_k^T k_Z(x)||^2)
        width: `(B,)` beta of batch k (Eq. (15)'s beta~ or the practical beta)
        shift: `(B,)` the additive part of the width (Eq. (15): 2/N_k + 2 beta~ / sqrt(N_k); code: 0)
        floor: `(B,)` L_k = max over X_k of l_k: x stays in play while u_k(x) >= L_k
        done: `(B,)` bool batch k has finished
    """

    Z: jax.Array
    mask: jax.Array
    a: jax.Array
    Bf: jax.Array
    width: jax.Array
    shift: jax.Array
    floor: jax.Array
    done: jax.Array


class SBPEBoxState(NamedTuple):
    """The state of continuous S-BPE: the pool (the discretisation of the active region), the current batch, its
    in-batch variances and the stored bounds of the finished batches.

    Attributes:
        pool: `(n_pool, d)` points of [0, 1]^d
        kdiag: `(n_pool,)` k(x, x) of the pool points
        active: `(n_pool,)` bool pool point in X_i
        batch_counts: `(n_pool,)` float pulls of the current batch (counted when chosen)
        batch_ysum: `(n_pool,)` summed rewards of the current batch (after ``update``)
        batch_q: `(N_max,)` int32 pool index of the j-th choice of the current batch
        var: `(n_pool,)` resample=code: exact variance given the batch's points so far (GP units)
        G: `(n_pool, N_max)` resample=code: pivoted-Cholesky columns of the batch's kernel; (n_pool, 1) unused
        bounds: the finished batches' bounds ([`Bounds`][])
        batch: `()` int32 index i - 1 of the current batch
        batch_t: `()` int32 choices made in the current batch
        t: `()` int32 evaluations chosen so far
        batch_open: `()` bool the current batch continues
    """

    pool: jax.Array
    kdiag: jax.Array
    active: jax.Array
    batch_counts: jax.Array
    batch_ysum: jax.Array
    batch_q: jax.Array
    var: jax.Array
    G: jax.Array
    bounds: Bounds
    batch: jax.Array
    batch_t: jax.Array
    t: jax.Array
    batch_open: jax.Array


_FLOATS = {
    "lam": (lambda v: v > 0, "it must be a finite number > 0"),
    "F": (lambda v: v >= 0, "it must be a finite number >= 0"),
    "R": (lambda v: v >= 0, "it must be a finite number >= 0, or null for sqrt(lam)"),
    "delta": (lambda v: 0 < v < 1, "it must be in (0, 1), or null for 1/T"),
    "sigma2": (lambda v: v > 0, "it must be a finite number > 0"),
    "rls_qbar": (lambda v: v > 0, "it must be a finite number > 0"),
    "jitter": (lambda v: v > 0, "it must be a finite number > 0"),
    "c_disc": (lambda v: v > 0, "it must be a finite number > 0"),
}
_INTS = {"n_pool": 2, "refill": 0, "m_max": 1}


def resolve(hyper: dict, T: int, problem=None) -> dict:
    """Every hyperparameter checked (ValueError naming it); ``delta`` None is 1/T (0.5 for T = 1), ``R`` None
    is sqrt(lam)."""
    del problem  # the algorithm reads nothing from a box problem (module docstring)
    if hyper["delta"] is None:
        hyper["delta"] = 1.0 / T if T > 1 else 0.5
    lam = check_float("algorithm.lam", hyper["lam"], *_FLOATS["lam"])
    if hyper["R"] is None:
        hyper["R"] = math.sqrt(lam)
    for key, (ok, allowed) in _FLOATS.items():
        hyper[key] = check_float(f"algorithm.{key}", hyper[key], ok, allowed)
    for key, lo in _INTS.items():
        hyper[key] = check_int(f"algorithm.{key}", hyper[key], lo)
    for key, choices in (("beta", WIDTHS), ("resample", IN_BATCH)):
        if not isinstance(hyper[key], str) or hyper[key] not in choices:
            raise invalid_value(f"algorithm.{key}", hyper[key], f"choose one of {list(choices)}")
    return hyper


def _bound_values(kp, X, kdiag, bounds: Bounds, lam):
    """(u_k(x) - L_k) (B, n) of every stored batch k at the points X (n, d): positive where x passes batch k."""

    def one(Z, mask, a, Bf, width, shift, floor):
        mean, var, _ = nystrom.arm_moments(RBF, kp, X, kdiag, Z, jnp.where(mask, a, 0.0),
                                           jnp.where(mask[:, None], Bf, 0.0), lam)
        return mean + shift + width * jnp.sqrt(lam * var) - floor  # u_k(x) - L_k, Eq. (15) / L17

    return jax.vmap(one)(bounds.Z, bounds.mask, bounds.a, bounds.Bf, bounds.width, bounds.shift, bounds.floor)


def in_region(kp, X, kdiag, bounds: Bounds, lam):
    """(n,) bool: the points X (n, d) lie in the active region, u_k(x) >= L_k for every finished batch k (L17)."""
    margin = _bound_values(kp, X, kdiag, bounds, lam)
    return jnp.all(~bounds.done[:, None] | (margin >= 0.0), axis=0)


def batch_width(beta_mode: str, params: SBPEBoxParams, lam_max, n, n_batches: int, d: int):
    """(beta, shift) of the batch's bounds u, l = mu-bar +- (shift + beta sigma-bar) for a batch of n points.

    ``paper``: Eq. (15), shift + beta sigma-bar = 2/n + beta~_n(delta / (4B)) (sigma-bar + 2/sqrt(n)), i.e.
    ``sparse_bounds.continuous_width`` with delta / (4B). ``code``: the practical width, shift 0."""
    tau = jnp.sqrt(params.lam)
    if beta_mode == "paper":
        log_inv = sparse_bounds.continuous_log_inv_delta(params.delta / (4.0 * n_batches), n, tau, params.F,
                                                         params.R, K_MAX, d, params.c_disc)
        b = sparse_bounds.beta(lam_max, tau, params.F, params.R, log_inv)  # beta~_{N_i}(delta / 4B), Eq. (15)
        return b, 2.0 / n + 2.0 * b / jnp.sqrt(n)
    b = sparse_bounds.beta_exact(tau, params.F, params.R, jnp.log(1.0 / params.delta))
    return b, jnp.zeros_like(b)


def make_sbpe_box(static: StaticConfig) -> Algorithm:
    """Factory of continuous S-BPE (module docstring) for a static config: the run's T and d, and the options
    ``n_pool``, ``refill``, ``m_max``, ``beta``, ``resample``."""
    beta_mode, resample = static.option("beta", "code"), static.option("resample", "code")
    if beta_mode not in WIDTHS or resample not in IN_BATCH:
        raise ValueError(f"sbpe_box takes beta in {WIDTHS} and resample in {IN_BATCH}; got {beta_mode!r}, "
                         f"{resample!r}")
    T, d = static.T, static.d
    P = static.option("n_pool", DEFAULTS["n_pool"])
    n_refill = static.option("refill", DEFAULTS["refill"])
    lengths = batch_lengths(T)
    n_batches = len(lengths)  # B of Eq. (15) and Thm 5.3
    n_max = max(lengths)  # the longest batch: its unique points and inducing points never exceed it
    m_cap = min(static.option("m_max", DEFAULTS["m_max"]), n_max)
    u_cap = n_max
    levels = rls.n_levels(n_max)
    exact_in_batch = resample == "code"
    n_cols = n_max if exact_in_batch else 1

    def kparams(params: SBPEBoxParams):
        return {"sigma2": params.sigma2}

    def _inducing(key, state: SBPEBoxState, params: SBPEBoxParams, j):
        """Alg. 1, L6: recursive RLS on the batch's points with delta_j = 3 delta / (pi^2 B j^2) (Thm 5.3)."""
        p_idx, p_mask, n_unique = nystrom.pulled_list(state.batch_counts, u_cap)
        delta_j = 3.0 * params.delta / (jnp.pi ** 2 * n_batches * jnp.maximum(j, 1) ** 2)
        sample = rls.recursive_rls(key, RBF, kparams(params), state.pool, state.kdiag, p_idx, p_mask,
                                   state.batch_counts, params.lam, delta_j, m_cap, levels,
                                   c_base=BASE_PER_QBAR * params.rls_qbar, c_os=params.rls_qbar)
        return sample, p_idx, p_mask, n_unique

    def init(key, space, params: SBPEBoxParams) -> SBPEBoxState:
        dt = space.lower.dtype
        pool = jax.random.uniform(key, (P, d), dtype=dt)  # X_1 = the box, discretised (Assumption 3.6)
        kdiag = RBF.diag(kparams(params), pool)
        zeros = jnp.zeros((P,), dt)
        B = n_batches
        bounds = Bounds(Z=jnp.zeros((B, m_cap, d), dt), mask=jnp.zeros((B, m_cap), bool),
                        a=jnp.zeros((B, m_cap), dt), Bf=jnp.zeros((B, m_cap, m_cap), dt), width=jnp.zeros((B,), dt),
                        shift=jnp.zeros((B,), dt), floor=jnp.zeros((B,), dt), done=jnp.zeros((B,), bool))
        return SBPEBoxState(pool=pool, kdiag=kdiag, active=jnp.ones((P,), bool), batch_counts=zeros,
                            batch_ysum=zeros, batch_q=jnp.zeros((n_max,), jnp.int32), var=kdiag,
                            G=jnp.zeros((P, n_cols), dt), bounds=bounds, batch=jnp.zeros((), jnp.int32),
                            batch_t=jnp.zeros((), jnp.int32), t=jnp.zeros((), jnp.int32),
                            batch_open=jnp.asarray(True))

    def _select_exact(key, state: SBPEBoxState, params: SBPEBoxParams):
        """``resample=code``: L8 on the exact in-batch variance, then its rank-one update by the new point."""
        q = pick_max_variance(key, state.var, state.active)
        kp = kparams(params)
        cov = RBF.k(kp, state.pool, state.pool[q][None, :])[:, 0] - mm(state.G, state.G[q])  # (P,)
        g = cov / jnp.sqrt(jnp.maximum(cov[q], 0.0) + params.lam)  # new pivoted-Cholesky column
        new = state._replace(var=jnp.maximum(state.var - g * g, 0.0), G=state.G.at[:, state.batch_t].set(g))
        return q, new, state.batch_t + 1

    def _select_rls(key, state: SBPEBoxState, params: SBPEBoxParams):
        """``resample=paper``: L6–L8 as printed, the sparse variance of the pool with inducing points redrawn now."""
        k_rls, k_tie = jax.random.split(key)
        sample, p_idx, p_mask, _ = _inducing(k_rls, state, params, state.batch_t)
        post = nystrom.posterior(RBF, kparams(params), state.pool, state.kdiag, sample.idx, sample.mask, p_idx,
                                 p_mask, state.batch_counts, jnp.zeros_like(state.batch_ysum), params.lam)  # L7
        q = pick_max_variance(k_tie, post.var, state.active)  # lam-scaled sigma-bar^2: the same argmax (L8)
        return q, state, jnp.sum(sample.mask).astype(jnp.int32)

    def select(key, state: SBPEBoxState, params: SBPEBoxParams):
        choose = _select_exact if exact_in_batch else _select_rls
        q, state, dict_size = choose(key, state, params)
        batch_t = state.batch_t + 1
        n_i = jnp.asarray(lengths, jnp.int32)[jnp.minimum(state.batch, n_batches - 1)]
        new = state._replace(batch_counts=state.batch_counts.at[q].add(1.0),
                             batch_q=state.batch_q.at[jnp.minimum(state.batch_t, n_max - 1)].set(q),
                             batch_t=batch_t, batch_open=batch_t < n_i, t=state.t + 1)
        return state.pool[q], new, StepInfo(dict_size=dict_size)

    def update(state: SBPEBoxState, fb: Feedback, params: SBPEBoxParams):
        """Alg. 1, L14: the batch's rewards, in the order of its choices (its pulls were counted when chosen)."""
        j = jnp.arange(fb.valid.shape[0]) - (state.t - state.batch_t)  # position inside the batch
        ok = fb.valid & (j >= 0) & (j < state.batch_t)
        q = jnp.where(ok, state.batch_q[jnp.clip(j, 0, n_max - 1)], 0)
        return state._replace(batch_ysum=state.batch_ysum.at[q].add(jnp.where(ok, fb.rewards, 0.0)))

    def refill(key, pool, active, bounds: Bounds, params: SBPEBoxParams):
        """Eliminated pool slots take points near active ones that lie in X_{i+1} by every stored bound."""
        kp = kparams(params)

        def round_(carry, k):
            pool, active = carry
            k_parent, k_step = jax.random.split(k)
            w = active.astype(pool.dtype)[:, None]
            centre = jnp.sum(w * pool, axis=0) / jnp.sum(w)
            spread = jnp.sqrt(jnp.sum(w * (pool - centre) ** 2, axis=0) / jnp.sum(w))
            parent = jax.random.categorical(k_parent, jnp.where(active, 0.0, -jnp.inf), shape=(P,))
            step = params.jitter * jnp.maximum(spread, SCALE_FLOOR) * jax.random.normal(k_step, (P, d), pool.dtype)
            proposal = jnp.clip(pool[parent] + step, 0.0, 1.0)
            ok = in_region(kp, proposal, RBF.diag(kp, proposal), bounds, params.lam)
            take = ~active & ok
            return (jnp.where(take[:, None], proposal, pool), active | take), None

        (pool, active), _ = jax.lax.scan(round_, (pool, active), jax.random.split(key, n_refill))
        return pool, active

    def resparsify(key, state: SBPEBoxState, params: SBPEBoxParams):
        """Alg. 1, L16–17 with Eq. (15) (or the practical width), the bounds stored, the pool refilled, a new batch."""
        kp = kparams(params)
        sample, p_idx, p_mask, _ = _inducing(key, state, params, state.batch_t)  # the finite sbpe's key use
        stats = sparse_bounds.svgp_statistics(RBF, kp, state.pool, state.kdiag, sample.idx, sample.mask, p_idx,
                                              p_mask, state.batch_counts, state.batch_ysum, params.lam)  # L16
        lam_max = sparse_bounds.lambda_max(RBF, kp, state.pool, stats.post.W, sample.idx, sample.mask, p_idx,
                                           p_mask, state.batch_counts)
        n = jnp.maximum(state.batch_t, 1).astype(state.pool.dtype)  # N_i (the last batch: as cut at T)
        b, shift = batch_width(beta_mode, params, lam_max, n, n_batches, d)
        half = shift + b * jnp.sqrt(stats.var)
        upper, lower = stats.mean + half, stats.mean - half
        floor = jnp.max(jnp.where(state.active, lower, -jnp.inf))
        active = state.active & (upper >= floor)  # L17
        i = jnp.minimum(state.batch, n_batches - 1)
        bd = state.bounds
        dt = state.pool.dtype
        bounds = Bounds(Z=bd.Z.at[i].set(state.pool[sample.idx]), mask=bd.mask.at[i].set(sample.mask),
                        a=bd.a.at[i].set(stats.post.a.astype(dt)), Bf=bd.Bf.at[i].set(stats.post.B.astype(dt)),
                        width=bd.width.at[i].set(b), shift=bd.shift.at[i].set(shift), floor=bd.floor.at[i].set(floor),
                        done=bd.done.at[i].set(True))
        pool = state.pool
        if n_refill > 0:
            pool, active = refill(jax.random.fold_in(key, 1), pool, active, bounds, params)
        kdiag = RBF.diag(kp, pool)
        zeros = jnp.zeros_like(state.batch_ysum)
        new = state._replace(pool=pool, kdiag=kdiag, active=active, batch_counts=zeros, batch_ysum=zeros,
                             batch_q=jnp.zeros_like(state.batch_q), var=kdiag, G=jnp.zeros_like(state.G),
                             bounds=bounds, batch=state.batch + 1, batch_t=jnp.zeros((), jnp.int32),
                             batch_open=jnp.asarray(True))
        return new, RoundInfo(dict_size=jnp.sum(sample.mask).astype(jnp.int32), beta=b,
                              rank=stats.post.rank.astype(jnp.int32), max_clamp=stats.post.max_clamp,
                              lam_max=lam_max, n_active=jnp.sum(active).astype(jnp.int32))

    return Algorithm(init, select, update, refit=resparsify)


__all__ = ["Bounds", "DEFAULTS", "IN_BATCH", "SBPEBoxParams", "SBPEBoxState", "WIDTHS", "batch_width", "in_region",
           "make_sbpe_box", "resolve"]
