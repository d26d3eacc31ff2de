r"""Approximation certificates: how close the sketched variances of a BKB or BBKB run were to the exact GP's.

BKB (Calandriello et al., COLT 2019) and Batch-BKB (BBKB, Calandriello et al., ICML 2020) rank arms with the
Nyström (DTC) variance $\tilde\sigma_t^2$ of a resampled dictionary $S_t$ (BKB Eq. 4, BBKB Eq. 2) in place of the
exact GP posterior variance $\sigma_t^2$. The papers' accuracy statements, checked here on a run:

* BKB Thm. 1 (its variance statement): for $\varepsilon, \delta \in (0, 1)$, $\alpha = (1 + \varepsilon)/(1 -
  \varepsilon)$ and $\bar q \ge 6 \alpha \log(4T/\delta)/\varepsilon^2$, w.p. $1 - \delta$, for all $t$ and all
  arms $x$: $\sigma_t^2(x)/\alpha \le \tilde\sigma_t^2(x) \le \alpha \sigma_t^2(x)$ ([`start_theorem`][]);
* BBKB Lemma 3 (restated as App. A.2's Lemma 6): under Thm. 1's conditions, at every batch start fb[t],
  $\sigma_{fb}^2(x)/3 \le \tilde\sigma_{fb}^2(x) \le 3 \sigma_{fb}^2(x)$;
* inside a BBKB batch, [`within_batch_bounds`][]: BBKB Lemma 4 (= Lemma 8, deterministic), Lemma 5 (= Lemma 10) and
  Lemma 7 with the batch rule (Alg. 1, L5) bound the in-batch, rank-one-updated $\tilde\sigma_t^2$ against the exact
  $\sigma_t^2$ given the batch's earlier pulls: $\sigma_t^2/\tilde\sigma_t^2 \le 3\tilde C$ and
  $\tilde\sigma_t^2/\sigma_t^2 \le 9\tilde C$.

A ``RunResult`` does not store the dictionaries, so [`replay`][] drives one seed through the ask/tell API
([`sketchbo.api.Optimizer`][]), told the run's rewards: it asks exactly what ``sketchbo.run`` queried (the replay
checks it and says where it diverged otherwise). At up to ``max_batch_ends`` evenly spaced batch ends it keeps the
state the next batch is selected from: the dictionary, the pull counts and the start-of-batch variances
$\tilde\sigma^2_{fb}$ the algorithm used. [`sketchbo.gp.dtc.variances`][] then computes, in dense float64 numpy, the
exact $\sigma^2$ (the pulled arms weighted by their counts, the run's $\lambda$) on a fixed random subsample of
``max_arms`` arms (all arms when $A$ is at most that; ``np.random.default_rng(seed)``), every arm pulled so far (where
the variances are smallest and relative errors largest) and the next batch's arms, beside the algorithm's
$\tilde\sigma^2$ there and the in-batch variances of the next batch's pulls.

Units: every variance is the papers' $\lambda$-scaled one, $\sigma_t^2(x) = (k(x, x) - k_t(x)^\top (K_t +
\lambda I)^{-1} k_t(x))/\lambda$ (see [`sketchbo.certificates`][]). Host-side float64 numpy, once per seed after a
run; the replay costs about what the run cost (its programs compile once per configuration).
"""
from __future__ import annotations

import numbers
import time

import numpy as np

from sketchbo import certificates as cert
from sketchbo.api import Optimizer
from sketchbo.engine.result import RunResult
from sketchbo.gp.dtc import BatchEnd, InBatch, Variances, sketched_variances, variances  # noqa: F401 (re-exported)
from sketchbo.gp.information import _at_least_one, _delta, _horizon, _positive
from sketchbo.problems.base import Problem

ALGORITHMS = ("bkb", "bbkb", "bbkb_local")
"""The algorithms with a sketch-accuracy statement: BKB (Thm. 1) and BBKB (Lemmas 3–5; ``bbkb_local`` shares them)."""
MAX_BATCH_ENDS = 20
"""Batch ends checked per seed by default (all of them when there are fewer)."""
MAX_ARMS = 500
"""Arms of the fixed random subsample by default (all arms when the problem has at most this many)."""
QUANTILES = (0.5, 0.9, 0.99)
"""The quantiles of the ratios reported beside their minimum and maximum."""
BBKB_FACTOR = 3.0
"""BBKB Lemma 3's factor: BKB Thm. 1 at eps = 1/2, alpha = (1 + 1/2) / (1 - 1/2)."""


# ------------------------------------------------------------------------------------------------ arguments

def _count(name: str, value) -> int:
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name}={value!r} is invalid; it must be an integer >= 1")
    return int(value)


def _check_run(result, problem) -> None:
    if not isinstance(result, RunResult):
        raise ValueError(f"result is a {type(result).__name__}; it must be the RunResult of sketchbo.run")
    if result.algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm={result.algorithm!r} has no sketch-accuracy statement; the certificates are "
                         f"for {list(ALGORITHMS)}")
    if not isinstance(problem, Problem):
        raise ValueError(f"problem is a {type(problem).__name__}; it must be the finite Problem the run used")


def _batch_ends(n_ends: int, max_batch_ends: int) -> np.ndarray:
    """All ``n_ends`` batch ends (0-based batches that a selection follows) when at most ``max_batch_ends``, else
    that many evenly spaced, the first and last included."""
    if n_ends <= max_batch_ends:
        return np.arange(n_ends, dtype=np.int64)
    return np.unique(np.round(np.linspace(0, n_ends - 1, max_batch_ends)).astype(np.int64))


def _arm_subsample(A: int, max_arms: int, seed) -> np.ndarray:
    """All A arms when A <= max_arms, else max_arms drawn without replacement by ``np.random.default_rng(seed)``."""
    if not isinstance(seed, numbers.Integral) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed={seed!r} is invalid; it must be an integer >= 0")
    if A <= max_arms:
        return np.arange(A, dtype=np.int64)
    return np.sort(np.random.default_rng(int(seed)).choice(A, size=max_arms, replace=False)).astype(np.int64)


# ---------------------------------------------------------------------------------------------------- replay

def _optimizer(result: RunResult, problem: Problem, kernel: dict | None, seed_index: int) -> Optimizer:
    """An optimiser with the run's algorithm, resolved hyperparameters, kernel, noise level, dtype and seed."""
    hyper = {k: v for k, v in result.hyperparameters.items() if k != "xi" and not k.endswith("_final")}
    return Optimizer(problem.arms, result.algorithm, horizon=int(result.T), seed=int(result.seeds[seed_index]),
                     params=hyper, kernel=dict(kernel if kernel is not None else problem.kernel), dtype=result.dtype,
                     noise_std=result.hyperparameters.get("xi"))


def _snapshot(state, batch: int, t: int) -> dict:
    mask = np.asarray(state.dict_mask)
    return {"batch": batch, "t": t, "dict_idx": np.asarray(state.dict_idx)[mask].astype(np.int64),
            "counts": np.asarray(state.counts, np.float64), "var_fb": np.asarray(state.var_fb, np.float64)}


def replay(result: RunResult, problem: Problem, kernel: dict | None = None, seed_index: int = 0,
           max_batch_ends: int = MAX_BATCH_ENDS) -> tuple[list[BatchEnd], int | None]:
    """Replay one seed of a BKB / BBKB run through ask/tell, keeping up to ``max_batch_ends`` evenly spaced batch ends
    ([`BatchEnd`][sketchbo.gp.dtc.BatchEnd]; all when fewer). Told the run's rewards, an
    [`Optimizer`][sketchbo.api.Optimizer] with the run's settings asks the run's queries ([`sketchbo.api`][]); every
    asked batch is compared with the trace. The last batch, cut at T, is not told.

    Args:
        result: the ``RunResult`` of ``sketchbo.run`` (an algorithm of [`ALGORITHMS`][]).
        problem: the finite ``Problem`` it ran on.
        kernel: the kernel the run used when it overrode the problem's, else None.
        seed_index: the seed's row in the traces, in [0, n_seeds).
        max_batch_ends: the most batch ends to keep, >= 1.

    Returns:
        ``(ends, first_mismatch)``: the kept batch ends in order, and the first step where the replay asked another
        arm than the run (None: it asked exactly the run's queries).

    Raises:
        ValueError: naming the argument that is invalid.
    """
    _check_run(result, problem)
    max_batch_ends = _count("max_batch_ends", max_batch_ends)
    if not isinstance(seed_index, numbers.Integral) or not 0 <= seed_index < result.n_seeds:
        raise ValueError(f"seed_index={seed_index!r} is invalid; it must be an integer in [0, {result.n_seeds})")
    queries = np.asarray(result.traces["query"][seed_index]).astype(np.int64)
    rewards = np.asarray(result.traces["reward"][seed_index], dtype=np.float64)
    keep = set(_batch_ends(int(np.max(result.traces["batch_index"][seed_index])), max_batch_ends).tolist())
    opt, T = _optimizer(result, problem, kernel, int(seed_index)), int(result.T)
    ends, pending, mismatch, t, b = [], None, None, 0, 0
    while t < T:
        keys = opt.ask()[0].astype(np.int64)
        n = min(keys.size, T - t)
        if mismatch is None and not np.array_equal(keys[:n], queries[t:t + n]):
            mismatch = t + int(np.argmax(keys[:n] != queries[t:t + n]))
        if pending is not None:
            ends.append(BatchEnd(**pending, next_pulls=keys[:n].copy()))
            pending = None
        if n < keys.size:
            break
        opt.tell(keys, rewards[t:t + n])
        t, b = t + n, b + 1
        if b - 1 in keep:
            pending = _snapshot(opt.state, b - 1, t)
    return ends, mismatch


# ------------------------------------------------------------------------------------------------ certificate

def _ratios(num: np.ndarray, den: np.ndarray) -> dict:
    """``n``, ``min``, ``max`` and the [`QUANTILES`][] (``q50``, ``q90``, ``q99``) of num / den, pairs where both are
    0 left out (inf where only den is); None values when nothing is left."""
    keep = (num > 0) | (den > 0)
    with np.errstate(divide="ignore"):
        r = num[keep] / den[keep]
    keys = ["min", "max", *(f"q{round(100 * q)}" for q in QUANTILES)]
    if r.size == 0:
        return {"n": 0, **dict.fromkeys(keys)}
    return {"n": int(r.size), **{k: float(v) for k, v in zip(keys, [r.min(), r.max(), *np.quantile(r, QUANTILES)])}}


def start_theorem(algorithm: str, lam: float, qbar: float, T: int, delta: float) -> dict:
    """The start-of-batch accuracy statement of the algorithm, its factor and whether its conditions hold.

    "bkb": BKB Thm. 1, factor alpha = (1 + eps)/(1 - eps) at the smallest eps whose condition q-bar >= 6 alpha
    log(4T/delta)/eps^2 holds ([`sketchbo.certificates.bkb_epsilon`][]); when none does, the theorem does not apply
    and alpha is shown at eps = 1/phi (the weakest condition, q-bar >= 66.5 log(4T/delta)). "bbkb" / "bbkb_local":
    BBKB Lemma 3, factor 3, under Thm. 1's conditions as stated, q-bar >= 8 log(4T/delta) and lam >= 1 (its proof
    asks 72 log(4T/delta): [`sketchbo.certificates.BBKB_QBAR_FACTOR`][]).

    Args:
        algorithm: one of [`ALGORITHMS`][].
        lam: lambda > 0.
        qbar: q-bar > 0.
        T: the horizon, >= 1.
        delta: delta in (0, 1).

    Returns:
        ``{"theorem", "bound", "eps", "conditions_met", "note"}`` (eps None for BBKB; note None when the conditions
        hold, else which fails).

    Raises:
        ValueError: naming the argument that is invalid.
    """
    if algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm={algorithm!r} is invalid; choose one of {list(ALGORITHMS)}")
    lam, qbar, T, delta = _positive("lam", lam), _positive("qbar", qbar), _horizon(T), _delta(delta)
    met, threshold = cert.qbar_condition(qbar, T, delta, algorithm=algorithm)
    factor = "66.5" if algorithm == "bkb" else "8"
    problems = [] if met else [f"qbar={qbar:g} < {factor} log(4T/delta)={threshold:.4g}"]
    eps, theorem, bound = None, "BBKB Lemma 3", BBKB_FACTOR
    if algorithm == "bkb":
        eps = cert.bkb_epsilon(qbar, T, delta)
        e = cert.BKB_EPS_LOOSEST if eps is None else eps
        theorem, bound = "BKB Thm 1", (1.0 + e) / (1.0 - e)
    elif lam < 1.0:
        problems.append(f"lam={lam:g} < 1")
    note = f"{'; '.join(problems)}: {theorem} does not apply" if problems else None
    return {"theorem": theorem, "bound": float(bound), "eps": eps, "conditions_met": not problems, "note": note}


def within_batch_bounds(C: float) -> dict:
    """BBKB's in-batch bounds, for a pull inside a batch whose rule kept 1 + sum_s sigma~_fb^2(x_s) <= C~ (Alg. 1, L5),
    under Thm. 1's conditions. ``under``: sigma_t^2 <= sigma_fb^2 (Lemma 7) <= 3 sigma~_fb^2 (Lemma 3) <= 3 (1 + sum_s
    sigma~_fb^2(x_s)) sigma~_t^2 (Lemma 4) <= 3 C~ sigma~_t^2. ``over``: sigma~_t^2 <= sigma~_fb^2 (Lemma 4) <= 3
    sigma_fb^2 (Lemma 3) <= 9 C~ sigma_t^2 (Lemma 5). ``exact``: Lemma 5, sigma_fb^2 / sigma_t^2 <= 3 C~. (Lemmas 4
    and 5 are printed with sigma; their proofs, and these bounds, are in sigma^2.)

    Args:
        C: the batch threshold C~ >= 1.

    Returns:
        ``{"under": 3 C~, "over": 9 C~, "exact": 3 C~}``.

    Raises:
        ValueError: naming C when it is not a finite number >= 1.
    """
    C = _at_least_one("C", C)
    return {"under": BBKB_FACTOR * C, "over": BBKB_FACTOR * BBKB_FACTOR * C, "exact": BBKB_FACTOR * C}


def _within_batch(parts: list, C: float) -> dict:
    """The in-batch ratios of the checked batches against [`within_batch_bounds`][] (BBKB family); ``lemma4_max``:
    the largest (sigma~_fb^2 / sigma~_t^2) / (1 + sum_s sigma~_fb^2(x_s)), <= 1 by Lemma 4 whatever the dictionary."""
    cat = {f: np.concatenate([getattr(p, f) for p in parts]) if parts else np.zeros(0) for f in InBatch._fields}
    bounds = within_batch_bounds(C)
    under, over = _ratios(cat["exact"], cat["sketch"]), _ratios(cat["sketch"], cat["exact"])
    exact = _ratios(cat["exact_fb"], cat["exact"])
    out = {"n_pulls": under["n"], "under": under, "over": over, "exact_shrink": exact, "bounds": bounds,
           "max_rule": float(cat["rule"].max()) if cat["rule"].size else None, "lemma4_max": None, "within": None,
           "note": None}
    if under["n"]:
        with np.errstate(divide="ignore", invalid="ignore"):
            out["lemma4_max"] = float(np.nanmax(cat["sketch_fb"] / cat["sketch"] / cat["rule"]))
        out["within"] = bool(under["max"] <= bounds["under"] and over["max"] <= bounds["over"]
                             and exact["max"] <= bounds["exact"])
        if out["max_rule"] > C:
            out["note"] = (f"1 + sum_s sigma~_fb^2(x_s) reached {out['max_rule']:.4g} > C~={C:g} inside a batch: "
                           "the in-batch bounds' rule step does not apply")
    return out


def certificate(algorithm: str, per_end: list, lam: float, qbar: float, C: float | None, T: int,
                delta: float) -> dict:
    """The approximation certificate of one seed from its checked batch ends' variances.

    Args:
        algorithm: one of [`ALGORITHMS`][].
        per_end: the [`Variances`][sketchbo.gp.dtc.Variances] of the checked batch ends.
        lam: the run's lambda > 0.
        qbar: its q-bar > 0.
        C: its C~ >= 1 (BBKB; ignored for "bkb", may be None there).
        T: the horizon, >= 1.
        delta: the resolved delta in (0, 1).

    Returns:
        A JSON-serialisable dict: [`start_theorem`][]'s keys; ``ratio`` (sigma~^2 / sigma^2) and ``inverse_ratio``
        (``n``, ``min``, ``max``, ``q50``, ``q90``, ``q99`` over every batch end and arm); ``within`` (both maxima <=
        ``bound``; None with nothing checked); ``n_batch_ends``, ``batch_end_t``, ``max_arms_per_end``;
        ``sketch_recomputed_rel_err`` (largest relative gap between the algorithm's variances and BKB Eq. 4 recomputed
        here); BBKB also ``within_batch`` (the in-batch ratios, [`within_batch_bounds`][], ``within``, ``note``).

    Raises:
        ValueError: naming the argument that is invalid.
    """
    out = {"algorithm": algorithm, **start_theorem(algorithm, lam, qbar, T, delta)}
    cat = {f: np.concatenate([getattr(v, f) for v in per_end]) if per_end else np.zeros(0)
           for f in ("exact", "sketch", "sketch_numpy")}
    out["ratio"], out["inverse_ratio"] = _ratios(cat["sketch"], cat["exact"]), _ratios(cat["exact"], cat["sketch"])
    checked = out["ratio"]["n"] > 0
    out["within"] = bool(max(out["ratio"]["max"], out["inverse_ratio"]["max"]) <= out["bound"]) if checked else None
    out["n_batch_ends"], out["batch_end_t"] = len(per_end), [int(v.t) for v in per_end]
    out["max_arms_per_end"] = max((int(v.arms.size) for v in per_end), default=0)
    gap = np.abs(cat["sketch_numpy"] - cat["sketch"]) / np.maximum(np.abs(cat["sketch"]), np.finfo(np.float64).tiny)
    out["sketch_recomputed_rel_err"] = float(gap.max()) if gap.size else None
    if algorithm != "bkb":
        out["within_batch"] = _within_batch([v.in_batch for v in per_end if v.in_batch is not None], C)
    return out


def of_run(result: RunResult, problem: Problem, kernel: dict | None = None, max_batch_ends: int = MAX_BATCH_ENDS,
           max_arms: int = MAX_ARMS, seed: int = 0) -> list[dict]:
    """The approximation [`certificate`][] of every seed of a BKB / BBKB run: [`replay`][], then
    [`variances`][sketchbo.gp.dtc.variances] at each kept batch end on ``max_arms`` random arms (all when A is at
    most that), the arms pulled so far and the next batch's.

    Args:
        result: the ``RunResult`` of ``sketchbo.run`` with an algorithm of [`ALGORITHMS`][].
        problem: the finite ``Problem`` it ran on.
        kernel: the kernel the run used when it overrode the problem's (``{"name": ..., ...}``), else None.
        max_batch_ends: the most batch ends checked per seed, >= 1.
        max_arms: the random arms evaluated at every batch end, >= 1.
        seed: the numpy seed of that subsample, >= 0.

    Returns:
        One JSON-serialisable dict per seed, in the order of ``result.seeds``: [`certificate`][]'s keys and
        ``replay_matches``, ``replay_first_mismatch``, ``replay_time_s`` and ``time_s`` (replay included).

    Raises:
        ValueError: naming the argument that is invalid.

    Examples:
        ```python
        import sketchbo as sb
        from sketchbo import approximation
        problem = sb.make_problem("gp_sample", A=200, d=2, seed=0)
        res = sb.run("bbkb", problem, T=60, n_seeds=1, progress=False)
        cert = approximation.of_run(res, problem)[0]
        cert["ratio"]["max"], cert["bound"], cert["within"]   # max sigma~^2/sigma^2, BBKB Lemma 3's 3, bool
        ```
    """
    _check_run(result, problem)
    max_batch_ends, max_arms = _count("max_batch_ends", max_batch_ends), _count("max_arms", max_arms)
    sample = _arm_subsample(problem.arms.shape[0], max_arms, seed)
    spec = dict(kernel if kernel is not None else problem.kernel)
    name = spec.pop("name")
    h = result.hyperparameters
    delta = h.get("delta") or 1.0 / result.T
    out = []
    for s in range(result.n_seeds):
        start = time.perf_counter()
        ends, mismatch = replay(result, problem, kernel, s, max_batch_ends)
        replayed = time.perf_counter() - start
        per_end = [variances(e, problem.arms, name, spec, h["lam"], sample) for e in ends]
        c = certificate(result.algorithm, per_end, h["lam"], h["qbar"], h.get("C"), result.T, delta)
        c.update(replay_matches=mismatch is None, replay_first_mismatch=mismatch, replay_time_s=replayed,
                 time_s=time.perf_counter() - start)
        out.append(c)
    return out


def _interval(certs: list, key: str) -> tuple[float, float] | None:
    lows = [c[key]["min"] for c in certs if c[key]["n"]]
    return (min(lows), max(c[key]["max"] for c in certs if c[key]["n"])) if lows else None


def summary_line(summary: dict) -> str | None:
    """One footer line of a result's approximation certificates (``summary["approximation"]``), None without them:
    the range of sigma~^2 / sigma^2 over every seed, batch end and arm against the theorem's [1/bound, bound], and for
    BBKB the in-batch maxima against 3 C~ and 9 C~ ([`within_batch_bounds`][]); notes in brackets."""
    certs = summary.get("approximation")
    if not certs:
        return None
    name, first = summary.get("label", summary["algorithm"]), certs[0]
    span = _interval(certs, "ratio")
    if span is None:
        return f"{name}: sketch accuracy: no batch end to check"
    ok = all(c["within"] is not False for c in certs)
    ends, arms = max(c["n_batch_ends"] for c in certs), max(c["max_arms_per_end"] for c in certs)
    seeds = f"{len(certs)} seed{'s' * (len(certs) > 1)}"
    parts = [(f"sketch accuracy sigma~^2/sigma^2 in [{span[0]:.3g}, {span[1]:.3g}] (max over {ends} batch ends x <= "
              f"{arms} arms, {seeds}; {first['theorem']} allows [1/{first['bound']:.3g}, {first['bound']:.3g}]: "
              f"{'within' if ok else 'EXCEEDED'})")]
    inside = [c["within_batch"] for c in certs if c.get("within_batch") and c["within_batch"]["n_pulls"]]
    if inside:
        b, ok = inside[0]["bounds"], all(w["within"] is not False for w in inside)
        parts.append(f"in-batch sigma^2/sigma~^2 <= {max(w['under']['max'] for w in inside):.3g} vs 3C~="
                     f"{b['under']:.3g}, sigma~^2/sigma^2 <= {max(w['over']['max'] for w in inside):.3g} vs 9C~="
                     f"{b['over']:.3g} ({'within' if ok else 'EXCEEDED'})")
    notes = {c["note"] for c in certs if c.get("note")} | {w["note"] for w in inside if w.get("note")}
    notes |= {f"replay diverged from the run at step {c['replay_first_mismatch']}: the ratios are the replay's"
              for c in certs if not c.get("replay_matches", True)}
    return f"{name}: " + "; ".join(parts) + "".join(f" [{n}]" for n in sorted(notes))


__all__ = ["ALGORITHMS", "BBKB_FACTOR", "MAX_ARMS", "MAX_BATCH_ENDS", "QUANTILES", "certificate", "of_run", "replay",
           "start_theorem", "summary_line", "within_batch_bounds"]
