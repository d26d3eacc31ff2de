"""Theory certificates for finite-arm runs: the papers' bounds evaluated on the arms a run pulled.

After a run of BKB (Calandriello et al., COLT 2019) or Batch-BKB (BBKB, Calandriello et al., ICML 2020) this
module computes, from the trace of pulled arms alone, the quantities the papers' complexity theorems are stated
in, and the bounds themselves, so that a run can be checked against them:

* [`effective_dimension`][] d_eff(lam, X_T) = Tr(K_T (K_T + lam I)^{-1}) (BKB Sec. 3, Eq. before Thm. 1; BKB Prop. 5: =
  sum_s sigma_T^2(x_s)), exact, on the unique pulled arms with their counts;
* [`sum_posterior_variance`][] sum_t sigma_{t-1}^2(x_t) of the exact GP (BBKB Thm. 2's regret is stated in it) or, with
  ``after_pull=True``, sum_t sigma_t^2(x_t) (the sum of BBKB App. B.1's bound on the number of batches), exact, blocked;
* the bounds: [`bbkb_dictionary_bound`][] (BBKB Thm. 1 (1)), [`bbkb_batch_bound`][] (BBKB App. B.1, proof of Thm. 1
  (2)), [`bkb_dictionary_bound`][] (BKB Thm. 1), their conditions ([`qbar_condition`][], [`bkb_epsilon`][]) and
  [`collapse_warning`][];
* [`certificates`][]: all of it for one seed of a run, as plain JSON-serialisable Python values.

Units: every variance here is the papers' lam-scaled one, sigma_t^2(x) = (k(x, x) - k_t(x)^T (K_t + lam I)^{-1}
k_t(x)) / lam (BBKB Eq. 2 with S = X_t; BKB Eq. 4), i.e. the GP posterior variance with noise variance lam,
divided by lam. In these units sum_t log(1 + sigma_{t-1}^2(x_t)) = log det(I + K_T / lam).

Where the papers' statements and proofs differ, the statement is implemented and the proof's value is offered beside it
([`bbkb_dictionary_bound`][] ``form="proof"``; see its docstring and [`BBKB_QBAR_FACTOR`][]).

Everything is host-side float64 numpy (the kernel matrices through [`sketchbo.kernels`][], evaluated with float64
enabled), not jitted: it runs once per seed after a run.
"""
from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from sketchbo.gp.information import (  # noqa: F401  (effective_dimension & co. re-exported: the certificates' inputs)
    _arms, _at_least_one, _delta, _diag, _effective_dimension, _horizon, _kernel, _nonnegative, _positive,
    _pull_variances, _pulled, _real,
    effective_dimension, pull_variances, sum_posterior_variance,
)
from sketchbo.engine.result import RunResult
from sketchbo.problems.base import Problem

BBKB_QBAR_FACTOR = 8.0
r"""BBKB Thm. 1's condition $\bar q \ge 8 \log(4T/\delta)$ as stated (Sec. 3, restated in App. B.1). The proof of Thm. 1
(1) invokes Thm. 3 (= Lemma 6), which asks for inclusion probabilities $\ge 24 \log(4T/\delta) \sigma^2$ with
$\tilde\sigma^2 \ge \sigma^2 / 3$: $\bar q \ge 72 \log(4T/\delta)$ (Thm. 2: $72 \tilde C \log(4T/\delta)$)."""
GOLDEN = (1.0 + math.sqrt(5.0)) / 2.0
BKB_EPS_LOOSEST = 1.0 / GOLDEN
r"""The $\varepsilon$ of BKB Thm. 1 with the weakest condition on $\bar q$, $1/\varphi$ ($\varphi$ the golden ratio):
the condition $\bar q \ge 6 \alpha \log(4T/\delta) / \varepsilon^2$, $\alpha = (1 + \varepsilon)/(1 - \varepsilon)$, has
its smallest factor, $\varphi^5$, there."""
BKB_QBAR_FACTOR = 6.0 * GOLDEN ** 5
r"""BKB Thm. 1 holds for no $\varepsilon$ when $\bar q < 6 \varphi^5 \log(4T/\delta) \approx 66.5 \log(4T/\delta)$."""
COLLAPSE_QBAR = 1.0
r"""At $\bar q$ at most this, the resampled dictionary collapsed exploration in our runs ([`collapse_warning`][]): BBKB
at $\bar q = 1$ had $R_T / R_T^{\mathrm{unif}}$ 0.95 on gp_sample, near 1 on Cadata, the authors' code too."""

# algorithms with a dictionary-size theorem, and the theorem's paper
_BBKB_FAMILY = ("bbkb", "bbkb_local")
_BKB_FAMILY = ("bkb",)


# ------------------------------------------------------------------------------------------------- the bounds

def bbkb_dictionary_bound(d_eff: float, C: float, qbar: float, lam: float, kappa2: float, *,
                          form: str = "statement") -> float:
    """BBKB Thm. 1 (1): |S_t| <= 9 C~ (1 + kappa^2 / lam) q-bar d_eff(X_t), w.p. 1 - delta for all t.

    The theorem (BBKB, ICML 2020, Sec. 3, restated in App. B.1) holds for delta in (0, 1), C~ >= 1, lam >= 1 and
    q-bar >= 8 log(4T/delta) ([`qbar_condition`][]). Its proof in App. B.1 plugs the over-estimation constant 9 C~ (1 +
    kappa^2 / lam) of Eq. 3 into BKB's Thm. 1 and arrives at the larger 81 C~ (1 + kappa^2 / lam)^2 q-bar d_eff(X_t)
    (``form="proof"``).

    Args:
        d_eff: the effective dimension d_eff(lam, X_t) ([`effective_dimension`][]), >= 0.
        C: the batch threshold C~ >= 1.
        qbar: the oversampling q-bar > 0.
        lam: the regulariser lambda > 0.
        kappa2: kappa^2 = max_x k(x, x) over the arms, > 0.
        form: "statement" (default, the theorem as stated) or "proof" (the constant its proof derives).

    Returns:
        The bound on the dictionary size, a float.

    Raises:
        ValueError: naming the argument that is invalid.

    """
    d_eff, C, qbar = _nonnegative("d_eff", d_eff), _at_least_one("C", C), _positive("qbar", qbar)
    lam, kappa2 = _positive("lam", lam), _positive("kappa2", kappa2)
    g = 1.0 + kappa2 / lam
    if form == "statement":
        return 9.0 * C * g * qbar * d_eff
    if form == "proof":
        return 81.0 * C * g * g * qbar * d_eff
    raise ValueError(f"form={form!r} is invalid; choose one of ['statement', 'proof']")


def bbkb_batch_bound(sum_var: float, C: float, lam: float, kappa2: float) -> float:
    """BBKB's bound on the number of batches (resparsifications): C~ / (C~ - 1) 9 (1 + kappa^2 / lam) sum_var.

    BBKB (ICML 2020) Thm. 1 (2) states B <= O(d_eff(X_T)); its proof (App. B.1, "Bounding the total number of
    resparsifications") derives B <= C~ / (C~ - 1) * 9 (1 + kappa^2 / lam) * sum_{t=1}^T sigma_t^2(x_t), w.p. 1 - delta
    under Thm. 1's conditions, from the terminating inequality C~ < 1 + sum_{s in batch} sigma~_fb^2(x_s) of every batch
    that ended by the rule. The paper's sum is of sigma_t^2(x_t), the variance after x_t's own pull
    ([`sum_posterior_variance`][] with ``after_pull=True``); the larger sum_t sigma_{t-1}^2(x_t) gives a valid, looser
    bound. B counts the batches closed by the rule: a run's batch count is at most B + 2 (x_1's round and a last batch
    cut at T).

    Args:
        sum_var: sum_t sigma_t^2(x_t) (lam-scaled), >= 0.
        C: the batch threshold C~ >= 1; C~ = 1 gives inf (every batch has one pull, no bound from the rule).
        lam: the regulariser lambda > 0.
        kappa2: kappa^2 = max_x k(x, x), > 0.

    Returns:
        The bound, a float (``inf`` at C~ = 1).

    Raises:
        ValueError: naming the argument that is invalid.
    """
    sum_var, C = _nonnegative("sum_var", sum_var), _at_least_one("C", C)
    lam, kappa2 = _positive("lam", lam), _positive("kappa2", kappa2)
    if C == 1.0:
        return math.inf
    return C / (C - 1.0) * 9.0 * (1.0 + kappa2 / lam) * sum_var


def bkb_epsilon(qbar: float, T: int, delta: float) -> float | None:
    """The smallest eps in (0, 1) for which q-bar meets BKB Thm. 1's condition q-bar >= 6 alpha log(4T/delta) / eps^2,
    alpha = (1 + eps) / (1 - eps); None when no eps does (q-bar < 6 phi^5 log(4T/delta), [`BKB_QBAR_FACTOR`][]).

    The condition's factor (1 + eps) / ((1 - eps) eps^2) decreases on (0, 1/phi], so the smallest admissible eps
    (the smallest alpha, the tightest dictionary bound) is its root there, found by bisection.

    Args:
        qbar: the oversampling q-bar > 0.
        T: the horizon, an integer >= 1.
        delta: the confidence delta in (0, 1).

    Returns:
        eps as a float, or None.

    Raises:
        ValueError: naming the argument that is invalid.
    """
    qbar, T, delta = _positive("qbar", qbar), _horizon(T), _delta(delta)
    need = 6.0 * math.log(4.0 * T / delta)

    def short(eps):  # > 0 where the condition fails at eps
        return need * (1.0 + eps) / ((1.0 - eps) * eps * eps) - qbar

    if short(BKB_EPS_LOOSEST) > 0:
        return None
    lo, hi = 0.0, BKB_EPS_LOOSEST  # short(lo+) = +inf, short(hi) <= 0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        lo, hi = (mid, hi) if short(mid) > 0 else (lo, mid)
    return hi


def bkb_dictionary_bound(d_eff: float, qbar: float, lam: float, kappa2: float, *,
                         eps: float = BKB_EPS_LOOSEST) -> float:
    """BKB Thm. 1: |S_t| <= 3 (1 + kappa^2 / lam) alpha q-bar d_eff(lam, X_t), alpha = (1 + eps) / (1 - eps).

    BKB (Calandriello et al., COLT 2019) Thm. 1: for eps, delta in (0, 1), if q-bar >= 6 alpha log(4T/delta) / eps^2,
    then w.p. 1 - delta, for all t, sigma_t^2/alpha <= sigma~_t^2 <= alpha sigma_t^2 and the bound above holds. The
    theorem holds for every admissible eps; [`bkb_epsilon`][] gives the smallest (the tightest bound). The default eps =
    1/phi ~ 0.618 (alpha = 2 + sqrt(5) ~ 4.24) is the eps whose condition on q-bar is the weakest (q-bar >= 66.5
    log(4T/delta)).

    Args:
        d_eff: the effective dimension d_eff(lam, X_t), >= 0.
        qbar: the oversampling q-bar > 0.
        lam: the regulariser lambda > 0.
        kappa2: kappa^2 = max_x k(x, x), > 0.
        eps: the accuracy eps in (0, 1) of the theorem.

    Returns:
        The bound on the dictionary size, a float.

    Raises:
        ValueError: naming the argument that is invalid.
    """
    d_eff, qbar = _nonnegative("d_eff", d_eff), _positive("qbar", qbar)
    lam, kappa2 = _positive("lam", lam), _positive("kappa2", kappa2)
    eps = _real("eps", eps, lambda v: 0 < v < 1, "in (0, 1)")
    alpha = (1.0 + eps) / (1.0 - eps)
    return 3.0 * (1.0 + kappa2 / lam) * alpha * qbar * d_eff


def qbar_condition(qbar: float, T: int, delta: float, *, algorithm: str = "bbkb") -> tuple[bool, float]:
    """Whether q-bar meets the dictionary theorem's condition, and its threshold.

    "bbkb" / "bbkb_local": BBKB Thm. 1, q-bar >= 8 log(4T/delta) (as stated; its proof needs 72 log(4T/delta), see
    [`BBKB_QBAR_FACTOR`][]). "bkb": BKB Thm. 1 for some eps, q-bar >= 6 phi^5 log(4T/delta) ~ 66.5 log(4T/delta)
    ([`bkb_epsilon`][]).

    Args:
        qbar: the oversampling q-bar > 0.
        T: the horizon, an integer >= 1.
        delta: the confidence delta in (0, 1).
        algorithm: "bbkb" (default), "bbkb_local" or "bkb".

    Returns:
        ``(met, threshold)``: whether ``qbar >= threshold``, and the threshold.

    Raises:
        ValueError: naming the argument that is invalid.

    Examples:
        ```python
        from sketchbo import certificates
        certificates.qbar_condition(2.0, T=1000, delta=1e-3)   # (False, 121.6...): qbar < 8 log(4T/delta)
        ```
    """
    qbar, T, delta = _positive("qbar", qbar), _horizon(T), _delta(delta)
    if algorithm in _BBKB_FAMILY:
        factor = BBKB_QBAR_FACTOR
    elif algorithm in _BKB_FAMILY:
        factor = BKB_QBAR_FACTOR
    else:
        raise ValueError(f"algorithm={algorithm!r} has no q-bar condition; choose one of "
                         f"{list(_BBKB_FAMILY + _BKB_FAMILY)}")
    threshold = factor * math.log(4.0 * T / delta)
    return bool(qbar >= threshold), float(threshold)


def collapse_warning(qbar: float) -> str | None:
    """A one-line warning when q-bar is so small that resampling the dictionary collapses exploration, else None.

    The dictionary is resampled with inclusion probabilities q-bar sigma~^2 (BKB Alg. 1, BBKB Alg. 1 L13); at q-bar <= 1
    ([`COLLAPSE_QBAR`][]) it stays too small to keep the variances of the explored arms, and BBKB's regret was close to
    that of uniformly random arms (R_T / R_unif 0.95 on gp_sample; Cadata likewise, with the authors' code too). The
    theorems ask q-bar >= 8 log(4T/delta) ([`qbar_condition`][]).

    Args:
        qbar: the oversampling q-bar > 0.

    Returns:
        The warning (one line), or None when q-bar > 1.

    Raises:
        ValueError: naming qbar when it is not a finite number > 0.
    """
    qbar = _positive("qbar", qbar)
    if qbar > COLLAPSE_QBAR:
        return None
    return (f"warning: qbar={qbar:g} <= {COLLAPSE_QBAR:g}: the dictionary resampled with probabilities "
            f"qbar*sigma~^2 is too small and exploration collapses (at qbar=1 BBKB's regret was near that of "
            f"uniformly random arms); the theorems ask qbar >= 8 log(4T/delta)")


# --------------------------------------------------------------------------------------------- one seed's run

def _counts_of_run(queries: np.ndarray, batch_index, dict_size) -> dict:
    """max_dict_size, n_batches, max_batch_size of one seed from its traces (steps with a query only)."""
    q = np.asarray(queries)
    b, m = np.asarray(batch_index), np.asarray(dict_size)
    for name, arr in (("batch_index", b), ("dict_size", m)):
        if arr.shape != q.shape:
            raise ValueError(f"{name} has shape {arr.shape}; it must have the shape {q.shape} of queries")
        if arr.size and arr.dtype.kind not in "iuf":
            raise ValueError(f"{name} has dtype {arr.dtype}; it must hold integers")
    taken = q >= 0
    b, m = b[taken].astype(np.int64), m[taken].astype(np.int64)
    if b.size and b.min() < 0:
        raise ValueError(f"batch_index holds {int(b.min())} at a step taken; it must hold round numbers >= 0")
    if m.size and m.min() < 0:
        raise ValueError(f"dict_size holds {int(m.min())}; it must hold sizes >= 0")
    _, sizes = np.unique(b, return_counts=True)
    return {"max_dict_size": int(m.max()) if m.size else 0, "n_batches": int(sizes.size),
            "max_batch_size": int(sizes.max()) if sizes.size else 0}


def certificates(algorithm: str, kernel_name: str, kernel_params: dict, arms: ArrayLike, queries: ArrayLike,
                 batch_index: ArrayLike, dict_size: ArrayLike, lam: float, qbar: float, C: float | None, T: int,
                 delta: float | None) -> dict:
    """The theory certificates of one seed of a finite-arm run: the run's counts beside the papers' bounds.

    Always: ``d_eff`` ([`effective_dimension`][], of all pulls), ``sum_variance`` (sum_t sigma_{t-1}^2(x_t), BBKB Thm.
    2), ``sum_variance_after`` (sum_t sigma_t^2(x_t), BBKB App. B.1), and the run's ``max_dict_size``, ``n_batches`` and
    ``max_batch_size``. For "bbkb" and "bbkb_local" also ``kappa2``, ``dict_bound`` (BBKB Thm. 1 (1) as stated,
    [`bbkb_dictionary_bound`][]), ``dict_bound_proof`` (the constant of its proof), ``batch_bound`` (App. B.1,
    [`bbkb_batch_bound`][] with ``sum_variance_after``), ``qbar_condition_met``, ``qbar_threshold`` (8 log(4T/delta)),
    ``lam_condition_met`` (Thm. 1 asks lam >= 1) and ``note``. For "bkb": ``kappa2``, ``dict_bound`` (BKB Thm. 1 at the
    smallest admissible eps, [`bkb_epsilon`][], else at eps = 1/phi), ``bkb_eps``, ``qbar_condition_met``,
    ``qbar_threshold`` and ``note``. ``note`` is None when the theorem's conditions hold, else one line saying which
    fails. (bbkb_local's rule is the authors' code's, not the paper's; every batch it closes also meets the global
    terminating inequality C~ < 1 + sum_s sigma~_fb^2(x_s) that the batch bound uses, and it is reported with BBKB's
    bounds.)

    Args:
        algorithm: the algorithm's name (``sketchbo.algorithms.ALGORITHMS``); those without a dictionary theorem
            (gp_ucb, gp_bucb, eps_greedy, sbpe) get d_eff, the sums and the counts only.
        kernel_name: the run's kernel name.
        kernel_params: its parameters (the problem's kernel without "name", or [`sketchbo.kernels.kernel_params`][]).
        arms: (A, d) the problem's arms.
        queries: (T,) int the seed's pulled arm per step (``traces["query"][s]``; -1 = not taken).
        batch_index: (T,) int the round of each step (``traces["batch_index"][s]``).
        dict_size: (T,) int the dictionary size each selection used (``traces["dict_size"][s]``).
        lam: the resolved lambda > 0.
        qbar: the resolved q-bar (any value > 0; unused for algorithms without a dictionary theorem).
        C: the resolved C~ >= 1 (BBKB; unused otherwise, may be None).
        T: the horizon, an integer >= 1.
        delta: the resolved delta in (0, 1) (None: 1/T, as the runner resolves it).

    Returns:
        A dict of plain Python floats, ints, bools, str or None (JSON-serialisable; an infinite batch bound at
        C~ = 1 is ``float("inf")``).

    Raises:
        ValueError: naming the argument that is invalid.
    """
    if not isinstance(algorithm, str):
        raise ValueError(f"algorithm={algorithm!r} is invalid; it must be an algorithm's name")
    T = _horizon(T)
    if delta is None:
        delta = 1.0 / T if T > 1 else 0.5
    delta = _delta(delta)
    K, pos, counts, lam = _pulled(kernel_name, kernel_params, arms, queries, lam)
    q = np.asarray(queries)
    out: dict = {}
    s = _pull_variances(K, pos, lam)
    out["d_eff"] = _effective_dimension(K, counts, lam)
    out["sum_variance"] = float(np.sum(s))
    out["sum_variance_after"] = float(np.sum(s / (1.0 + s)))
    out.update(_counts_of_run(q, batch_index, dict_size))
    if algorithm not in _BBKB_FAMILY + _BKB_FAMILY:
        return out
    X = _arms(arms)
    kern, params = _kernel(kernel_name, kernel_params, X.shape[1])
    out["kappa2"] = float(np.max(_diag(kern, params, X)))
    out.update(_theorem(algorithm, out["d_eff"], out["sum_variance_after"], out["kappa2"], lam, qbar, C, T, delta))
    return out


def _theorem(algorithm: str, d_eff: float, sum_after: float, kappa2: float, lam, qbar, C, T: int, delta) -> dict:
    """The dictionary (and, for BBKB, batch-count) bound of the algorithm's theorem and its conditions."""
    out: dict = {}
    qbar = _positive("qbar", qbar)
    met, threshold = qbar_condition(qbar, T, delta, algorithm=algorithm)
    problems = [] if met else [
        f"qbar={qbar:g} < {'8' if algorithm in _BBKB_FAMILY else '66.5'} log(4T/delta)={threshold:.4g}"]
    if algorithm in _BBKB_FAMILY:
        C = _at_least_one("C", C)
        out["dict_bound"] = bbkb_dictionary_bound(d_eff, C, qbar, lam, kappa2)
        out["dict_bound_proof"] = bbkb_dictionary_bound(d_eff, C, qbar, lam, kappa2, form="proof")
        out["batch_bound"] = float(bbkb_batch_bound(sum_after, C, lam, kappa2))
        out["lam_condition_met"] = bool(lam >= 1.0)
        if lam < 1.0:
            problems.append(f"lam={lam:g} < 1")
        theorem = "BBKB Thm 1"
    else:
        eps = bkb_epsilon(qbar, T, delta)
        out["bkb_eps"] = eps
        out["dict_bound"] = bkb_dictionary_bound(d_eff, qbar, lam, kappa2,
                                                 eps=BKB_EPS_LOOSEST if eps is None else eps)
        theorem = "BKB Thm 1"
    out["qbar_condition_met"] = met
    out["qbar_threshold"] = threshold
    out["note"] = f"{'; '.join(problems)}: {theorem}'s guarantee does not apply" if problems else None
    return out


def of_run(result: RunResult, problem: Problem, kernel: dict | None = None) -> list[dict]:
    """[`certificates`][] of every seed of a finite-arm run.

    Args:
        result: the ``RunResult`` of ``sketchbo.run`` on ``problem``.
        problem: the finite ``Problem`` it ran on.
        kernel: the kernel the run used when it overrode the problem's (``{"name": ..., ...}``), else None.

    Returns:
        One dict per seed (JSON-serialisable), in the order of ``result.seeds``.

    Examples:
        ```python
        import sketchbo as sb
        from sketchbo import certificates
        problem = sb.make_problem("gp_sample", A=200, d=2, seed=0)
        res = sb.run("bbkb", problem, T=60, n_seeds=2, progress=False)
        certs = certificates.of_run(res, problem)    # one dict per seed: d_eff, dict_bound, max_dict_size, note, ...
        res = res._replace(certificates=certs)       # what the command line does
        ```
    """
    spec = dict(kernel if kernel is not None else problem.kernel)
    name = spec.pop("name")
    h = result.hyperparameters
    return [certificates(result.algorithm, name, spec, problem.arms, result.traces["query"][s],
                         result.traces["batch_index"][s], result.traces["dict_size"][s], h.get("lam", 1.0),
                         h.get("qbar", h.get("rls_qbar", 1.0)), h.get("C"), result.T, h.get("delta"))
            for s in range(result.n_seeds)]


__all__ = [
    "BBKB_QBAR_FACTOR", "BKB_EPS_LOOSEST", "BKB_QBAR_FACTOR", "COLLAPSE_QBAR", "effective_dimension",
    "pull_variances", "sum_posterior_variance", "bbkb_dictionary_bound", "bbkb_batch_bound", "bkb_epsilon",
    "bkb_dictionary_bound", "qbar_condition", "collapse_warning", "certificates", "of_run",
]
