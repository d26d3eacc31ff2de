"""GP-UCB on continuous domains with a GP fitted on a subset of the samples: GSSBO and the baselines of its
figures (Wei et al. 2025, "Gradient-based Sample Selection for Faster Bayesian Optimization", Alg. 1, §6).

One factory, eight variants (``VARIANTS``), differing in which rows of the data buffer D the GP sees and in
the posterior engine:

| name          | subset of D (``sketchbo.gp.subset``)                      | engine            |
|---------------|-----------------------------------------------------------|-------------------|
| ``std_gp_ucb``  | all samples ("Standard GP-UCB", Srinivas et al. 2010)     | exact GP          |
| ``gssbo``       | n0 initial + newest + a named greedy rule (``selection``) | exact GP on M     |
| ``rssbo``       | n0 initial + newest + uniformly random                    | exact GP on M     |
| ``kmeans_pp``   | n0 initial + newest + k-means++ in the RKHS               | exact GP on M     |
| ``lr_first_m``  | the first m samples as Nyström landmarks                  | Nyström (DTC), all D |
| ``sparse_gp``   | m inducing points by greedy pivoted Cholesky (IVM-style)  | Nyström (DTC), all D |
| ``ipa``         | m inducing points: greedy MAP of the DPP diag(q) K diag(q),| Nyström (DTC), all D |
|               | q = EI under the previous model (Moss et al. 2023)        |                   |
| ``mini_gp_ucb`` | unique points with counts; a point is repeated while      | exact GP on unique |
|               | 1 + n s~^2(x_h) <= C (BBKB's sum rule, docs/protocols.md#mini-meta-rule)      | points            |

Subsets of GSSBO, RSSBO and k-means++ hold M rows once |D| > M; before that the GP uses all of D (Alg. 1, L17). M is
fixed (``M``) or set by the dynamic rule with factor Z ([`dynamic_buffer_size`][]). Options (static): ``selection``
names GSSBO's rule for its free members (``sketchbo.gp.subset``, docs/protocols.md#gssbo-subset-rules): ``projection``
(the appendix's greedy: largest residual norm of the perturbed gradient vector after projecting out the kept ones'
span), ``pivoted`` (greedy pivoted Cholesky on K, the greedy Nyström column selection the appendix proves equivalent in
the noiseless limit) or ``cosine`` (Eq. (1)'s summed cosine similarity as written; ``gradient`` is its deprecated name);
``keep_best`` also forces the best observed sample into the subset of GSSBO, RSSBO and k-means++ (our option, not the
paper's; default off).

The round structure of the runner (docs/architecture.md#rounds) carries over: ``select`` returns the planned query
(a point
of the uniform initial design for t < n0), ``update`` appends the batch to D, and ``resparsify`` does the
expensive work once per round — choose the subset (Alg. 1 L12-14), fit the hyperparameters by maximum
likelihood (warm start; ``sketchbo.gp.hyper``), and maximise UCB(x) = mu(x) + sqrt(beta_t) sigma(x) with
beta_t = beta_c d log(2t) (docs/protocols.md#box-protocol) inside the box (``sketchbo.acquisition``) to plan the
next query.
Nyström variants fit their hyperparameters on every sample with the round's landmarks held fixed, by Titsias'
collapsed bound (``hyper.collapsed_bound``: a sparse GP's own objective, O(n m^2) per step; until 2026-11-23
they fitted the exact likelihood of the landmark rows alone, which misled IPA, whose landmarks crowd the
promising region), and share the BKB engine (``sketchbo.gp.nystrom``) with noise variance lam = s2
(variances in its lam-scaled units, rescaled here).
"""
from __future__ import annotations

import math
import warnings
from typing import NamedTuple

import jax
import jax.numpy as jnp

from sketchbo import acquisition
from sketchbo.algorithms.common import Algorithm, Feedback, RoundInfo, StepInfo
from sketchbo.gp import hyper, nystrom, subset
from sketchbo.kernels import get_kernel, gram

MATERN = get_kernel("matern52")

# name -> (subset selection, engine, repeat points): every continuous algorithm's entry, read by the factory and
# the runner; ``rembo``, ``hesbo`` (``embeddings.py``), ``vecchia_bo`` (``vecchia_bo.py``), ``dkl_ucb`` (``dkl_bo.py``)
# and ``bnn_ucb`` (``bnn_bo.py``) have their own factories
VARIANTS = {
    "std_gp_ucb": ("all", "exact", False),
    "gssbo": ("named", "exact", False),  # the rule named by BOStatic.selection
    "rssbo": ("random", "exact", False),
    "kmeans_pp": ("kmeanspp", "exact", False),
    "lr_first_m": ("first", "nystrom", False),
    "sparse_gp": ("pivoted", "nystrom", False),
    "mini_gp_ucb": ("all", "exact", True),
    # random embeddings (``embeddings.py``): an exact GP on all rows of a low-dimensional buffer
    "rembo": ("all", "exact", False),
    "hesbo": ("all", "exact", False),
    "ipa": ("ipa", "nystrom", False),  # m inducing points by IPA's quality-weighted DPP (ipa_rows)
    "vecchia_bo": ("vecchia", "vecchia", False),  # ``vecchia_bo.py``: every row, Vecchia's likelihood
    "dkl_ucb": ("all", "dkl", False),  # ``dkl_bo.py``: exact GP on MLP features of every row
    "bnn_ucb": ("all", "ensemble", False),  # ``bnn_bo.py``: a deep ensemble of MLPs trained on every row
}
"""Every continuous subset algorithm by name: its subset selection, its engine and whether it repeats points."""


class BOStatic(NamedTuple):
    """Static configuration of a continuous-domain algorithm (shapes, capacities, discrete choices).

    Attributes:
        variant: key of VARIANTS
        d: dimension of the unit cube
        T: evaluations per run
        cap: capacity of the data buffer D (rows), grown by the runner
        n0: uniform initial design
        M: subset size (exact engines) or number of landmarks m (Nyström)
        fit_steps: hyperparameter fit per round: Adam steps (gp_fit adam) or most L-BFGS iterations (map)
        acq: sizes of the acquisition maximiser
        n_incumbents: best observed points whose perturbations are candidates
        selection: gssbo's rule: one of subset.SELECTIONS (default by measurement; "gradient" = "cosine")
        keep_best: also force the best observed sample into the subset (our option, not the paper's)
        gp_fit: the hyperparameter fit, one of gp.hyper.FITS (adam: the paper protocol; map: MAP, L-BFGS)
        beta_rule: the UCB width, one of acquisition.BETA_RULES (acquisition.ucb_width)
        output_warp: the targets the GP models, one of gp.hyper.OUTPUT_WARPS (hyper.warp_outputs)
        hidden: hidden-layer widths of the MLPs of dkl_ucb and bnn_ucb (``dkl_bo.py``, ``bnn_bo.py``)
        features: dkl_ucb: width of the MLP's output, the features the GP's kernel sees
        ensemble: bnn_ucb: members E of the deep ensemble
    """

    variant: str
    d: int
    T: int
    cap: int
    n0: int
    M: int
    fit_steps: int
    acq: acquisition.AcqStatic
    n_incumbents: int = 5
    selection: str = "pivoted"
    keep_best: bool = False
    gp_fit: str = "adam"
    beta_rule: str = "protocol"
    output_warp: str = "none"
    hidden: tuple = ()
    features: int = 0
    ensemble: int = 0


class SubsetParams(NamedTuple):
    """The subset variants' (and the random embeddings') float hyperparameters (() arrays).

    Attributes:
        beta_c: beta_t = beta_c d log(2t) (beta_rule protocol)
        sigma_d2: GSSBO gradient-perturbation variance sigma_d^2
        C: mini-META repetition threshold C~ (1 for the others)
        lr_fit: Adam step of the fit
        lr_acq: Adam step of the acquisition refinement
        local_scale: std of the incumbent perturbations
    """

    beta_c: jax.Array
    sigma_d2: jax.Array
    C: jax.Array
    lr_fit: jax.Array
    lr_acq: jax.Array
    local_scale: jax.Array


class Data(NamedTuple):
    """The samples D, one row per distinct point (mini-META merges repeats).

    Attributes:
        x: `(cap, d)` points in [0, 1]^d
        ysum: `(cap,)` sum of the rewards observed at the row
        count: `(cap,)` evaluations merged into the row (0 for empty rows)
        n: `()` int32 rows in use
    """

    x: jax.Array
    ysum: jax.Array
    count: jax.Array
    n: jax.Array


class BOState(NamedTuple):
    """The state of a subset GP-UCB (GSSBO and its subset and embedding baselines): the sample buffer, the rows the
    model is fitted on, the fitted hyperparameters and the planned query.

    Attributes:
        data: the sample buffer
        sub_idx: `(M,)` int32 rows of D the model uses (subset or landmarks)
        sub_mask: `(M,)` bool slot in use
        hyper: fitted hyperparameters (warm start of the next fit)
        beta: `()` beta_t of the planned query
        next_x: `(d,)` planned query
        repeats: `()` int32 evaluations of next_x left in the current batch
        t: `()` int32 evaluations selected so far
        batch_open: `()` bool
    """

    data: Data
    sub_idx: jax.Array
    sub_mask: jax.Array
    hyper: hyper.GPHyper
    beta: jax.Array
    next_x: jax.Array
    repeats: jax.Array
    t: jax.Array
    batch_open: jax.Array


def dynamic_buffer_size(n0: int, Z: float, n_overhead: float) -> int:
    """GSSBO's dynamic buffer (§4.3, Alg. 1 L5-8) on a cost model of one iteration.

    The paper switches to the subset at the first iteration whose time exceeds Z times the average initial
    iteration time T-bar, and sets M = |D| then. In a compiled program the iteration time is modelled:
    c(n) = n^3 + n_overhead^3 (the O(n^3) exact fit plus a fixed overhead expressed in samples). M is the
    smallest |D| > n0 with c(|D|) > Z c(n0). ``n_overhead = 70`` makes Z = 4 give M = 102, the "M is usually
    around 100" of §6.1 (our calibration, not the paper's); ``n_overhead = 0`` is the pure cubic model,
    M = ceil(n0 Z^(1/3)).
    """
    target = Z * (n0 ** 3 + n_overhead ** 3) - n_overhead ** 3
    m = max(n0 + 1, int(math.floor(max(target, 0.0) ** (1.0 / 3.0))))
    while m ** 3 <= target:
        m += 1
    while m - 1 > n0 and (m - 1) ** 3 > target:
        m -= 1
    return m


def data_valid(data: Data):
    return jnp.arange(data.x.shape[0]) < data.n


def data_mean(data: Data):
    """(cap,) mean reward of each row (0 for empty rows)."""
    return data.ysum / jnp.maximum(data.count, 1.0)


def empty_data(cap: int, d: int, dtype) -> Data:
    """An empty sample buffer D of ``cap`` rows."""
    return Data(jnp.zeros((cap, d), dtype), jnp.zeros((cap,), dtype), jnp.zeros((cap,), dtype), jnp.zeros((), jnp.int32))


def design_or_planned(key, state, n0: int):
    """``select`` of a single-model BO algorithm (docs/protocols.md#box-protocol): the first n0 queries uniform in
    [0, 1]^d as
    one batch, then the query planned by the last ``resparsify`` (``state.next_x``), batches of one. Returns
    ``(x, state)`` with the step counted and the batch closed where it ends."""
    initial = state.t < n0
    x = jnp.where(initial, jax.random.uniform(key, state.next_x.shape, dtype=state.next_x.dtype), state.next_x)
    close = ~initial | (state.t + 1 >= n0)
    return x, state._replace(t=state.t + 1, batch_open=~close)


def append_batch(data: Data, xs, ys, valid, merge: bool, n0: int) -> Data:
    """Add a batch (``xs`` (T, d), ``ys`` (T,), ``valid`` (T,)) to D. With ``merge`` (mini-META) the
    evaluations of a batch after the initial design are repeats of one point and share one row."""
    pos = jnp.arange(valid.shape[0])
    new_row = valid & ((pos < n0) | (pos == jnp.argmax(valid))) if merge else valid
    cap = data.x.shape[0]
    row = jnp.where(valid, data.n + jnp.cumsum(new_row) - 1, cap)  # cap: dropped
    return Data(
        x=data.x.at[row].set(xs, mode="drop"), ysum=data.ysum.at[row].add(ys, mode="drop"),
        count=data.count.at[row].add(valid.astype(ys.dtype), mode="drop"),
        n=(data.n + jnp.sum(new_row)).astype(jnp.int32))


def model_size(static: BOStatic) -> int:
    """Capacity of the model's rows: every row for ``all`` selections, else M."""
    return static.cap if VARIANTS[static.variant][0] == "all" else static.M


def gssbo_rule(static: BOStatic) -> str:
    """GSSBO's subset rule, one of ``subset.SELECTIONS``; ``gradient`` (its name before 2026-11-22) is read as
    ``cosine`` with a FutureWarning; anything else is a ValueError naming the choices."""
    if static.selection == "gradient":
        warnings.warn("selection='gradient' is deprecated: it is Eq. (1)'s rule, now named 'cosine' (the choices "
                      f"are {list(subset.SELECTIONS)})", FutureWarning, stacklevel=3)
        return "cosine"
    if static.selection not in subset.SELECTIONS:
        raise ValueError(f"selection={static.selection!r} is not a GSSBO subset rule; choose one of "
                         f"{list(subset.SELECTIONS)}")
    return static.selection


def make_subset_bo(static: BOStatic) -> Algorithm:
    """Factory of the continuous-domain algorithms (see the module docstring)."""
    selection, engine, merge = VARIANTS[static.variant]
    rule = gssbo_rule(static) if selection == "named" else None
    M = model_size(static)
    cap, d, n0 = static.cap, static.d, static.n0

    def init(key, problem, params: SubsetParams) -> BOState:
        del key, problem  # the box is [0, 1]^d (static.d)
        dt = params.beta_c.dtype
        data = empty_data(cap, d, dt)
        return BOState(
            data=data, sub_idx=jnp.arange(M, dtype=jnp.int32), sub_mask=jnp.zeros((M,), bool),
            hyper=hyper.init_hyper(d, dt), beta=jnp.zeros((), dt), next_x=jnp.full((d,), 0.5, dt),
            repeats=jnp.ones((), jnp.int32), t=jnp.zeros((), jnp.int32), batch_open=jnp.asarray(True))

    def select(key, state: BOState, params: SubsetParams):
        initial = state.t < n0
        x = jnp.where(initial, jax.random.uniform(key, (d,), dtype=state.next_x.dtype), state.next_x)
        left = jnp.where(initial, 1, state.repeats - 1)
        close = jnp.where(initial, state.t + 1 >= n0, left <= 0)
        new = state._replace(t=state.t + 1, repeats=left, batch_open=~close)
        return x, new, StepInfo(dict_size=jnp.sum(state.sub_mask).astype(jnp.int32))

    def update(state: BOState, fb: Feedback, params: SubsetParams):
        return state._replace(data=append_batch(state.data, fb.points, fb.rewards, fb.valid, merge, n0))

    def choose_rows(key, state: BOState, params: SubsetParams, valid, y):
        """Alg. 1 L12-14: the model's rows (with the previous round's hyperparameters)."""
        data = state.data
        forced = subset.forced_rows(data.n, n0, cap)
        if static.keep_best:  # our option (not in the paper): the incumbent is never forgotten
            forced = forced | (jnp.arange(cap) == jnp.argmax(jnp.where(valid, y, -jnp.inf)))
        if selection == "all":
            return jnp.arange(M, dtype=jnp.int32), valid
        if selection == "first":
            return subset.first_rows(valid, M)
        if selection == "random":
            return subset.random_subset(key, valid, forced, M)
        if selection == "ipa":
            return ipa_rows(state, valid, y, M)
        if selection == "named":  # GSSBO's named rule (docs/protocols.md#gssbo-subset-rules)
            return subset.gssbo_subset(rule, key, state.hyper, data.x, y, valid, forced, M, params.sigma_d2)
        K = gram(MATERN, hyper.kernel_params(state.hyper), data.x)  # exact diagonal: the first pivot's tie by index
        if selection == "kmeanspp":
            return subset.kmeanspp_subset(key, K, valid, forced, M)
        return subset.pivoted_cholesky_subset(K, valid, jnp.zeros_like(valid), M)  # "pivoted"

    def exact_predictor(h, X, y, mask, counts):
        post = hyper.posterior(h, X, y, mask, counts)
        return lambda xq: hyper.predict(post, xq), jnp.exp(h.log_noise)

    def resparsify(key, state: BOState, params: SubsetParams):
        k_sel, k_acq = jax.random.split(key)
        data = state.data
        valid = data_valid(data)
        y = hyper.warp_outputs(static.output_warp, data_mean(data), valid)
        idx, mask = choose_rows(k_sel, state, params, valid, y)
        counts = data.count[idx] if merge else None
        if engine == "nystrom":  # every sample, the landmarks fixed: Titsias' collapsed bound (hyper.collapsed_bound)
            h, fit_info = hyper.fit(state.hyper, data.x, y, valid, static.fit_steps, params.lr_fit,
                                    inducing=(data.x[idx], mask), method=static.gp_fit)
        else:
            h, fit_info = hyper.fit(state.hyper, data.x[idx], y[idx], mask, static.fit_steps, params.lr_fit,
                                    counts=counts, method=static.gp_fit)
        if engine == "exact":
            predict, noise = exact_predictor(h, data.x[idx], y[idx], mask, counts)
        else:
            predict, noise = _nystrom_predict(h, data, idx, mask, valid, y)
        t_next = (state.t + 1).astype(y.dtype)
        beta = acquisition.ucb_width(static.beta_rule, params.beta_c, d, t_next)

        x, val, acq_info = acquisition.maximize_ucb(k_acq, predict, beta, data.x, y, valid, static.n_incumbents,
                                                    static.acq, params.lr_acq, params.local_scale)
        repeats = jnp.ones((), jnp.int32)
        if merge:  # mini-META: repeat x_h while 1 + n s~^2(x_h) <= C (sum rule; s~^2 = sigma^2 / s2)
            _, var_x = predict(x[None, :])
            _, _, y_scale = hyper.standardise(y, valid)
            s2_scaled = var_x[0] / (y_scale ** 2 * noise)
            n_h = jnp.floor((params.C - 1.0) / jnp.maximum(s2_scaled, 1e-12))
            repeats = jnp.clip(n_h, 1.0, static.T).astype(jnp.int32)
        new = state._replace(sub_idx=idx, sub_mask=mask, hyper=h, beta=beta, next_x=x, repeats=repeats,
                             batch_open=jnp.asarray(True))
        return new, RoundInfo(dict_size=jnp.sum(mask).astype(jnp.int32), beta=beta, lml=fit_info["lml"], ucb=val,
                              noise=noise, repeats=repeats if merge else None, **acq_info)

    return Algorithm(init, select, update, refit=resparsify)


IPA_FLOOR = 1e-6  # added to every quality (standardised units): all samples keep a positive weight (our choice)


def ipa_quality(state: BOState, valid, y):
    """IPA's quality of every sample (cap,): q_i = EI of sample i under the previous round's model (its DTC
    posterior on the previous inducing points and hyperparameters; the EI's baseline: the best observed
    reward), in standardised units, + IPA_FLOOR; 1 in empty rows. Before the first fit (no inducing points)
    all qualities are equal."""
    predict, _ = _nystrom_predict(state.hyper, state.data, state.sub_idx, state.sub_mask, valid, y)
    mean, var = predict(state.data.x)
    _, _, y_scale = hyper.standardise(y, valid)
    best = jnp.max(jnp.where(valid, y, -jnp.inf))
    q = subset.expected_improvement(mean / y_scale, var / y_scale ** 2, best / y_scale) + IPA_FLOOR
    return jnp.where(valid, q, 1.0)


def ipa_rows(state: BOState, valid, y, M: int):
    """IPA (Moss, Ober & Picheny 2023): M inducing points among the samples by the greedy MAP of the DPP with L =
    diag(q) K diag(q) (``subset.quality_dpp_subset``), q = [`ipa_quality`][]."""
    K = gram(MATERN, hyper.kernel_params(state.hyper), state.data.x)
    return subset.quality_dpp_subset(K, ipa_quality(state, valid, y), valid, M)


def _nystrom_predict(h: hyper.GPHyper, data: Data, idx, mask, valid, y):
    """DTC posterior of all rows of D with the landmarks D[idx] (the BKB engine, ``nystrom.posterior``,
    with lam = s2 on standardised targets). Returns (predict, s2): predict(xq) -> (mean, var) of the latent f
    in the targets' units; the engine's lam-scaled variance is multiplied back by lam."""
    kp = hyper.kernel_params(h)
    lam = jnp.exp(h.log_noise)
    y_std, y_mean, y_scale = hyper.standardise(y, valid)
    cap = data.x.shape[0]
    w = valid.astype(y.dtype)
    kdiag = MATERN.diag(kp, data.x)
    post = nystrom.posterior(MATERN, kp, data.x, kdiag, idx, mask, jnp.arange(cap), valid, w, w * y_std, lam)
    Xs = data.x[idx]

    def predict(xq):
        kS = nystrom.cross_kernel(MATERN, kp, xq, Xs, mask)  # (q, m)
        mean = kS @ post.a
        R = kS @ post.B
        var_scaled = MATERN.diag(kp, xq) / lam - jnp.sum(R * R, axis=1)  # BBKB Eq. (2), lam-scaled
        return y_mean + y_scale * mean, y_scale ** 2 * lam * jnp.maximum(var_scaled, 0.0)

    return predict, lam


__all__ = ["VARIANTS", "BOStatic", "SubsetParams", "BOState", "Data", "dynamic_buffer_size", "append_batch", "empty_data",
           "design_or_planned",
           "model_size", "gssbo_rule", "ipa_quality", "ipa_rows",
           "make_subset_bo"]
