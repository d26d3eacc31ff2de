"""The algorithm registry: every algorithm by name, with its defaults and its factory.

| name         | paper                                   | engine       | batch rule (``batch_rules.py``)      |
|--------------|-----------------------------------------|--------------|--------------------------------------|
| ``gp_ucb``   | Srinivas et al. 2010                    | exact GP     | ``sequential_rule``                  |
| ``gp_bucb``  | Desautels et al. 2014                   | exact GP     | ``gp_bucb_product_rule`` (or sum)    |
| ``bkb``      | Calandriello et al., COLT 2019, Alg. 1  | Nyström      | ``sequential_rule``                  |
| ``bbkb``     | Calandriello et al., ICML 2020, Alg. 1  | Nyström      | ``bbkb_global_rule``                 |
| ``bbkb_local`` | public code's ``Local_Batch_BKB``     | Nyström      | ``bbkb_local_rule``                  |
| ``eps_greedy`` | baseline of BBKB Fig. 1               | none         | ``sequential_rule``                  |
| ``sbpe``     | Vakili et al., ICML 2022, App. B, Alg. 1 | Nyström (SVGP) | own schedule N_i = ceil(sqrt(T N_{i-1})) |

Continuous domains ([0, 1]^d, GSSBO, Wei et al. 2025) are the ``box`` domain of the same registry ([`REGISTRY`][];
[`ALGORITHMS`][] and [`BO_ALGORITHMS`][] are its two domains), run by the engine's box domain (``sketchbo.domains.box``;
``subset_bo.py``): ``std_gp_ucb``, ``gssbo``, ``rssbo``, ``kmeans_pp``, ``lr_first_m``, ``sparse_gp``, ``ipa``,
``mini_gp_ucb``; the random embeddings ``rembo``, ``hesbo`` (``embeddings.py``), ``vecchia_bo`` (``vecchia_bo.py``),
continuous S-BPE ``sbpe_box`` (Vakili et al. §5.2, ``sbpe_box.py``: its own hyperparameters, no sample buffer) and
the neural surrogates of GSSBO's App. B.5:

| name        | paper                                           | surrogate (module)                                   |
|-------------|-------------------------------------------------|------------------------------------------------------|
| ``dkl_ucb`` | Wilson et al., AISTATS 2016 (Fig. 10)           | exact GP, Matérn-5/2 on MLP features (``dkl_bo.py``) |
| ``bnn_ucb`` | Lakshminarayanan et al., NeurIPS 2017 (Fig. 11) | deep ensemble, mean + kappa std (``bnn_bo.py``)      |

Every algorithm of both domains follows one contract (``sketchbo.contract.Algorithm``): ``init(key, space, params)``,
``select(key, state, params) -> (query, state, info)``, ``update(state, Feedback, params) -> state``,
``refit(key, state, params) -> (state, info)``; each entry of [`REGISTRY`][] is a [`sketchbo.spec.AlgorithmSpec`][], the
same type a user passes or adds with [`register`][]. The finite algorithms' hyperparameters are ``finite_hyper``'s, the
box algorithms' ``box_hyper``'s.
"""
from __future__ import annotations

import functools

from sketchbo.algorithms import box_hyper, finite_hyper
from sketchbo.algorithms.batch_rules import BATCH_RULES
from sketchbo.algorithms.bnn_bo import BNNParams, make_bnn_bo
from sketchbo.algorithms.common import Algorithm, ArmSet, BoxSet, Feedback, RoundInfo, Static, StepInfo
from sketchbo.algorithms.dkl_bo import DKLParams, make_dkl_bo
from sketchbo.algorithms.embeddings import EMBEDDINGS, make_embedding_bo
from sketchbo.algorithms.vecchia_bo import VecchiaParams, make_vecchia_bo
from sketchbo.algorithms.eps_greedy import EpsGreedyParams, make_eps_greedy
from sketchbo.algorithms.exact_ucb import ExactUCBParams, make_exact_ucb
from sketchbo.algorithms.sbpe import SBPEParams, make_sbpe
from sketchbo.algorithms import sbpe_box
from sketchbo.algorithms.sparse_ucb import SparseUCBParams, make_sparse_ucb
from sketchbo.algorithms.subset_bo import VARIANTS, BOStatic, SubsetParams, make_subset_bo
from sketchbo.algorithms.box_hyper import GP_CORES
from sketchbo.algorithms.finite_hyper import oversampling
from sketchbo.spec import AlgorithmSpec, Hooks


def _ucb_factory(make, batched: bool, static: Static) -> Algorithm:
    """BKB / BBKB (``sparse_ucb``) or exact GP-UCB / GP-BUCB (``exact_ucb``) with the static config's batch rule."""
    return make(static, BATCH_RULES[static.batch_rule], sequential=not batched)


# engine -> (factory of a batched flag, params): the finite registry's four families
_FINITE = {"sparse": (lambda b: functools.partial(_ucb_factory, make_sparse_ucb, b), SparseUCBParams),
           "exact": (lambda b: functools.partial(_ucb_factory, make_exact_ucb, b), ExactUCBParams),
           "sbpe": (lambda b: make_sbpe, SBPEParams), "none": (lambda b: make_eps_greedy, EpsGreedyParams)}


def _arms(name, description, engine, batched, defaults, default_rule) -> AlgorithmSpec:
    """A finite registry algorithm: its factory and params by engine, its hyperparameters ``finite_hyper``'s."""
    factory, params = _FINITE[engine]
    grid = tuple(k for k in finite_hyper.GRID_KEYS if k in defaults)
    return AlgorithmSpec(name, "arms", factory(batched), defaults, params=params, grid_keys=grid,
                         description=description, batched=batched,
                         hooks=finite_hyper.hooks(defaults, default_rule, nystrom_engine=engine == "sparse",
                                                  exact=engine == "exact", params_cls=params))


_BOX = {"vecchia_bo": (make_vecchia_bo, VecchiaParams), "dkl_ucb": (make_dkl_bo, DKLParams),
        "bnn_ucb": (make_bnn_bo, BNNParams), **{e: (make_embedding_bo, SubsetParams) for e in EMBEDDINGS}}


def _box(name, description, engine, batched, defaults, rule, domain, batched_lapack=False) -> AlgorithmSpec:
    """A box registry algorithm: its factory and params by name (the subset variants' by default), its
    hyperparameters ``box_hyper``'s."""
    del engine, rule, domain
    factory, params = _BOX.get(name, (make_subset_bo, SubsetParams))
    grid = tuple(k for k in params._fields if k in defaults)
    merged = VARIANTS.get(name, ("", "", False))[2]  # mini-META: a batch's evaluations in one row
    return AlgorithmSpec(name, "box", factory, defaults, params=params, grid_keys=grid, description=description,
                         batched=batched, batched_lapack=batched_lapack, merged_rows=merged,
                         hooks=box_hyper.hooks(name, params))


# docs/protocols.md#finite-arm-protocol (Abalone / Cadata) and #bbkb-experiments: q-bar = 2, C~ = 2, delta = 1/T (None). lam and F: None = the
# problem's suggested values (Problem.suggested), else the protocol's lam = 0.2, F = 20 (domains.finite.FALLBACK).
# u_max: initial capacity of the list of unique pulled arms (exact GP: its posterior's size), grown on overflow
_UCB = {"lam": None, "F": None, "delta": None, "beta": "code", "u_max": 128}
# dictionary: "resampled" (the papers) or "all_pulled" (S_t = X_t: BKB -> GP-UCB, BBKB -> sum-rule GP-BUCB)
# m_max: initial dictionary capacity (grown on overflow); None = domains.finite.default_m_max: 96 on the CPU from 10^4
# arms, else 128
_SPARSE = {**_UCB, "qbar": 2.0, "m_max": None, "u_max": 256, "resample": "code", "dictionary": "resampled"}

ALGORITHMS: dict[str, AlgorithmSpec] = {
    "gp_ucb": _arms("gp_ucb", "exact GP-UCB", "exact", False,
                            {**_UCB, "beta_family": "bbkb"}, "sequential"),
    "gp_bucb": _arms("gp_bucb", "exact GP-BUCB (product rule; batch_rule=sum: BBKB's sum rule)", "exact",
                             True, {**_UCB, "C": 2.0, "batch_rule": "product", "beta_family": "bbkb"}, "product"),
    "bkb": _arms("bkb", "BKB: Nyström GP-UCB, dictionary resampled every step", "sparse", False,
                         {**_SPARSE, "beta_family": "bkb"}, "sequential"),
    "bbkb": _arms("bbkb", "Batch-BKB, global batch rule", "sparse", True,
                          {**_SPARSE, "C": 2.0, "beta_family": "bbkb"}, "bbkb_global"),
    "bbkb_local": _arms("bbkb_local", "GlobalLocal-BBKB, per-arm batch rule", "sparse", True,
                                {**_SPARSE, "C": 2.0, "beta_family": "bbkb"}, "bbkb_local"),
    "eps_greedy": _arms("eps_greedy", "eps-greedy on empirical means", "none", False,
                                {"eps": 0.1}, "sequential"),
    # S-BPE: lam = tau^2, F = C_k, xi = R of Thm 3.5; rls_qbar = Alg. 2's RLS oversampling (16 = the theory's; not
    # BBKB's dictionary oversampling qbar, hence its own name);
    # beta: code (practical width) | paper (Thm 3.5, Eq. (13)); resample: code (exact in-batch variance, rank-one
    # per choice) | paper (RLS inducing points before every choice, Alg. 1 L6)
    "sbpe": _arms("sbpe", "S-BPE: batched pure exploration on SVGP statistics, elimination by Thm 3.5",
                          "sbpe", True, {"lam": None, "F": None, "delta": None, "rls_qbar": 1.0, "m_max": 192,
                                         "u_max": 256, "beta": "code", "resample": "code"}, "schedule"),
}
"""The finite-arm algorithms the package ships, by name."""

# Continuous domains (docs/protocols.md#box-protocol): n0 = 20 uniform initial points, beta_t = beta_c d log(2t), the
# GP refitted per round, warm-started (gp_core below; dkl_ucb sets its own gp_fit, beta_c and fit_steps); the
# acquisition maximiser's sizes (n_uniform, n_local, n_starts, acq_steps, lr_acq, local_scale) are our choices.
_BO = {"n0": 20, "beta_c": 0.2, "fit_steps": 20, "lr_fit": 0.05, "n_uniform": 2048, "n_local": 512,
       "n_starts": 4, "acq_steps": 25, "acq_method": "adam", "lr_acq": 0.01, "local_scale": 0.05,
       "beta_rule": "protocol"}
# acq_method: the acquisition refinement (acquisition.ACQ_METHODS): adam = acq_steps projected Adam steps of lr_acq;
# spg = spectral projected gradient to a tolerance, at most acq_steps iterations
# beta_rule: the UCB width (acquisition.ucb_width): protocol = beta_c d log(2t); theory = Srinivas et al. 2010, Thm 2
# gp_fit: the GP core's hyperparameter fit (gp.hyper.FITS): adam = the paper protocol's maximum likelihood by
# fit_steps Adam steps of lr_fit; map = MAP with the dimension-scaled lengthscale prior by L-BFGS to convergence
# (at most fit_steps iterations; gp.hyper.log_prior). Every algorithm whose GP is gp.hyper's has it.
# output_warp: the targets the GP models (gp.hyper.warp_outputs): none = the paper protocol; bilog, copula = monotone
# maps for heavy-tailed objectives
# gp_core: the defaults of gp_fit, beta_c and fit_steps for every algorithm on gp.hyper's GP (a key set to a value
# wins over its core; null takes the core's). map, the default: MAP by at most 50 L-BFGS iterations and
# beta_c = 0.02, the best variant without an output warp of the ablation on Hartmann6, Levy20, Powell50 and
# Rastrigin100 for GP-UCB and GSSBO (the other algorithms not measured)
# (docs/reproductions.md#box-gp-core); protocol: the GSSBO paper protocol's 20 Adam steps and beta_c = 0.2.
# (GP_CORES lives in box_hyper, with the checks that use it.)
_GP = {**_BO, "gp_core": "map", "gp_fit": None, "beta_c": None, "fit_steps": None, "output_warp": "none"}
# M: subset size, or null for the dynamic rule with factor Z (subset_bo.dynamic_buffer_size; Z = 4 -> M = 102)
# keep_best: also force the best observed sample into the subset (our option, not the paper's; default off)
_SUBSET = {**_GP, "M": None, "Z": 4.0, "n_overhead": 70.0, "keep_best": False}

BO_ALGORITHMS: dict[str, AlgorithmSpec] = {
    "std_gp_ucb": _box("std_gp_ucb", "Standard GP-UCB: exact GP on all samples", "continuous", False,
                                dict(_GP), "sequential", "box"),
    # selection: projection | pivoted | cosine (docs/protocols.md#gssbo-subset-rules); pivoted by measurement (issue 16: Hartmann6, N = 1000,
    # seeds 0-9, R_N 195 ± 79 against projection's 2867 ± 129)
    "gssbo": _box("gssbo", "GSSBO: exact GP on M samples chosen by a gradient-diversity greedy",
                           "continuous", False, {**_SUBSET, "sigma_d2": 0.01, "selection": "pivoted"}, "sequential", "box"),
    "rssbo": _box("rssbo", "RSSBO: exact GP on M samples, the rest chosen at random", "continuous",
                           False, dict(_SUBSET), "sequential", "box"),
    "kmeans_pp": _box("kmeans_pp", "exact GP on M samples chosen by k-means++ in the RKHS",
                               "continuous", False, dict(_SUBSET), "sequential", "box"),
    "lr_first_m": _box("lr_first_m", "LR-First m: Nyström (DTC) with the first m samples as landmarks",
                                "continuous", False, {**_GP, "m": 100}, "sequential", "box"),
    "sparse_gp": _box("sparse_gp", "SparseGP: DTC with m inducing points by greedy pivoted Cholesky",
                               "continuous", False, {**_GP, "m": 50}, "sequential", "box"),
    # m: number of inducing points (50 as sparse_gp: our choice; the GSSBO paper does not give it)
    "ipa": _box("ipa", "IPA: DTC with m inducing points by a DPP weighted by the samples' EI (Moss et "
                         "al. 2023)", "continuous", False, {**_GP, "m": 50}, "sequential", "box"),
    "mini_gp_ucb": _box("mini_gp_ucb", "mini-META GP-UCB: repeat x_h while 1 + n s~^2(x_h) <= C",
                                 "continuous", True, {**_GP, "C": 2.0}, "sequential", "box"),
    # m: the low dimension d of the random embedding (4: our choice, the GSSBO paper does not state it)
    "rembo": _box("rembo", "REMBO: GP-UCB on y in [-sqrt(d), sqrt(d)]^d, x = clip(A y), A Gaussian",
                           "continuous", False, {**_GP, "m": 4}, "sequential", "box"),
    "hesbo": _box("hesbo", "HeSBO: GP-UCB on y in [-1, 1]^d, x = S y, S a count sketch (one +-1 per row)",
                           "continuous", False, {**_GP, "m": 4}, "sequential", "box"),
    # m: conditioning-set size, fixed (32: our choice; Jimenez & Katzfuss grow it like 7.2 log10(n)^2)
    "vecchia_bo": _box("vecchia_bo", "VecchiaBO: GP-UCB on a Vecchia GP (maximin order, m nearest "
                                "earlier neighbours)", "continuous", False, {**_GP, "m": 32}, "sequential", "box",
                                batched_lapack=True),  # one m x m Cholesky per candidate point, batched
    # GSSBO App. B.5 (Figs. 10-11); the paper gives no settings: every value is our choice unless marked.
    # hidden: MLP hidden widths; features: dkl_ucb's feature dimension; fit_steps / lr_fit: the joint Adam fit
    # of MLP weights and GP hyperparameters (dkl_ucb) or of the members (bnn_ucb) per round, warm-started;
    # dkl_ucb's gp_fit: adam = the likelihood (Wilson et al.), map = the box core's prior on the base kernel added
    # to it (same Adam steps); beta_c = 0.02 as the box core's, by measurement (docs/reproductions.md#box-core-dkl)
    "dkl_ucb": _box("dkl_ucb", "Deep-kernel UCB: exact GP, Matérn-5/2 on MLP features (Wilson et al. "
                             "2016)", "continuous", False,
                             {**_BO, "gp_fit": "adam", "beta_c": 0.02, "fit_steps": 50, "lr_fit": 0.01,
                              "hidden": [32, 32], "features": 4}, "sequential", "box"),
    # ensemble: E members (5, with one hidden layer of 50 units: Lakshminarayanan et al.'s UCI setting); kappa:
    # UCB = mu + kappa sigma (our choice; it replaces beta_c); loss: mean squared error (bnn_bo.py says why not
    # the Gaussian NLL)
    "bnn_ucb": _box("bnn_ucb", "BNN-UCB: deep ensemble of E MLPs, UCB = mean + kappa std "
                             "(Lakshminarayanan et al. 2017)", "continuous", False,
                             {**{k: v for k, v in _BO.items() if k not in ("beta_c", "beta_rule")}, "fit_steps": 100,
                              "lr_fit": 0.01, "hidden": [50], "ensemble": 5, "kappa": 2.0}, "sequential", "box"),
    # continuous S-BPE (Vakili et al. §5.2, Eq. (15)): the finite sbpe's batches and elimination on a pool of points of
    # the box that refills inside the active region (sbpe_box.py); its own hyperparameters and checks (no sample
    # buffer, no fitted kernel): sbpe_box.DEFAULTS
    "sbpe_box": AlgorithmSpec("sbpe_box", "box", sbpe_box.make_sbpe_box, dict(sbpe_box.DEFAULTS),
                              params=sbpe_box.SBPEBoxParams, batched=True,
                              description="continuous S-BPE: batched pure exploration on a refilled pool of the box, "
                                          "elimination by Eq. (15)", hooks=Hooks(resolve=sbpe_box.resolve)),
}
"""The box algorithms the package ships, by name."""

# One registry for both domains; ALGORITHMS / BO_ALGORITHMS are its two domains as the package ships them
REGISTRY: dict[str, AlgorithmSpec] = {**ALGORITHMS, **BO_ALGORITHMS}
"""Every algorithm of both domains by name (``sb.ALGORITHMS``); [`register`][] adds to it."""
DEFAULT_RULES = {"gp_ucb": "sequential", "gp_bucb": "product", "bkb": "sequential", "bbkb": "bbkb_global",
                 "bbkb_local": "bbkb_local", "eps_greedy": "sequential", "sbpe": "schedule"}


def register(spec: AlgorithmSpec, *, replace: bool = False) -> AlgorithmSpec:
    """Add ``spec`` to [`REGISTRY`][] under its name, so that the name works wherever an algorithm is named
    (``sb.run("ucb1", ...)``, ``sb.Optimizer``, the CLI's ``algorithm.name``).

    Args:
        spec: the algorithm's [`AlgorithmSpec`][].
        replace: replace a spec of your own registered under the same name before (a name of the package's algorithms is
            never replaced: pass your spec itself instead).

    Returns:
        The spec.

    Raises:
        ValueError: when ``spec`` is not an ``AlgorithmSpec`` or its name is taken.

    Examples:
        BBKB with another default ``qbar``, under a name of its own (a spec of your own registers the same way):

        ```python
        import dataclasses
        import sketchbo as sb

        bbkb = sb.ALGORITHMS["bbkb"]
        sb.register(dataclasses.replace(bbkb, name="bbkb_q8", defaults={**bbkb.defaults, "qbar": 8.0}))
        res = sb.run("bbkb_q8", sb.make_problem("gp_sample", A=200, seed=0), T=30, progress=False)
        ```
    """
    if not isinstance(spec, AlgorithmSpec):
        raise ValueError(f"register takes a sketchbo.AlgorithmSpec; got a {type(spec).__name__}")
    taken = REGISTRY.get(spec.name)
    if taken is not None and taken is not spec:
        if spec.name in ALGORITHMS or spec.name in BO_ALGORITHMS:
            raise ValueError(f"algorithm name {spec.name!r} is a sketchbo algorithm; give your spec another name")
        if not replace:
            raise ValueError(f"algorithm name {spec.name!r} is registered already; pass replace=True to replace it")
    REGISTRY[spec.name] = spec
    return spec


def get_spec(algorithm, domain: str | None = None) -> AlgorithmSpec:
    """The spec of ``algorithm``: an [`AlgorithmSpec`][] as it is, or a name of [`REGISTRY`][]. The one place where an
    algorithm is looked up: ValueError listing the names when it is unknown, or naming the domain when it is not
    ``domain``'s ("arms" | "box")."""
    if isinstance(algorithm, AlgorithmSpec):
        spec = algorithm
    elif isinstance(algorithm, str) and algorithm in REGISTRY:
        spec = REGISTRY[algorithm]
    else:
        raise ValueError(f"algorithm={algorithm!r} is not a known algorithm; choose one of {sorted(REGISTRY)}, or "
                         "pass a sketchbo.AlgorithmSpec")
    if domain is not None and spec.domain != domain:
        names = domain_names(domain)
        where = "a finite candidate set" if spec.domain == "arms" else "a box"
        raise ValueError(f"algorithm={spec.name!r} runs on {where} (domain {spec.domain!r}); algorithms for this "
                         f"problem: {names}")
    return spec


def domain_names(domain: str) -> list[str]:
    """The registered names of a domain's algorithms ("arms" | "box"), sorted."""
    return sorted(n for n, s in REGISTRY.items() if s.domain == domain)


def params_of(algorithm, **values):
    """The params NamedTuple of an algorithm (a spec or a registered name) filled from ``values``, which may
    hold more keys than it has fields (they are ignored), e.g. to call its functions by hand. ValueError
    naming the fields without a value."""
    cls = get_spec(algorithm).params
    missing = [f for f in cls._fields if f not in values]
    if missing:
        raise ValueError(f"params_of({getattr(algorithm, 'name', algorithm)!r}): no value for {missing}")
    return cls(**{f: values[f] for f in cls._fields})


def rule_name(spec: AlgorithmSpec, hyper: dict) -> str:
    """The batch rule of a finite registry algorithm (``finite_hyper.rule_name``)."""
    return finite_hyper.rule_name(DEFAULT_RULES[spec.name], hyper)


def build(spec: AlgorithmSpec, static) -> Algorithm:
    """The algorithm's functions for a static config of its domain (``spec.factory(static)``)."""
    return spec.build(static)


build_bo = build  # the box registry's name for the same call


__all__ = ["oversampling", "REGISTRY", "ALGORITHMS", "BO_ALGORITHMS", "BoxSet", "Feedback", "StepInfo", "RoundInfo",
           "BOStatic", "GP_CORES", "build_bo", "AlgorithmSpec", "Algorithm", "ArmSet",
           "Static", "build", "domain_names", "get_spec", "params_of", "register", "rule_name"]
