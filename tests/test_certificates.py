"""Theory certificates (sketchbo.certificates): exact d_eff and variance sums against dense float64 references, the
papers' bounds as formulas, and the bounds holding on real BKB / BBKB runs."""
import json
import math

import numpy as np
import pytest

from sketchbo import certificates as cert
from sketchbo.gp import information
from sketchbo.kernels import get_kernel, gram, kernel_params
from sketchbo.problems import make_problem

from sketchbo import run

KERNEL_CASES = [("rbf", {"sigma2": 0.5}), ("matern52", {"lengthscales": [0.7, 1.3], "variance": 1.5}),
                ("linear", {"variance": 0.8})]


def _case(A=15, T=60, d=2, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(-1.0, 1.0, (A, d)), rng.integers(0, A, T)  # repeats on purpose


def _dense_KT(name, kp, arms, q):
    """K_T (T, T) over the pulls, repeats as separate rows."""
    return np.asarray(gram(get_kernel(name), kernel_params(name, arms.shape[1], **kp), arms[q]))


def _brute_variances(KT, lam):
    """sigma_{t-1}^2(x_t) (lam-scaled) by a dense solve against the t - 1 earlier pulls, for every t."""
    out = []
    for t in range(KT.shape[0]):
        k = KT[t, :t]
        var = KT[t, t] - (k @ np.linalg.solve(KT[:t, :t] + lam * np.eye(t), k) if t else 0.0)
        out.append(var / lam)
    return np.array(out)


@pytest.mark.parametrize("name,kp", KERNEL_CASES)
@pytest.mark.parametrize("lam", [0.05, 1.0])
def test_effective_dimension_on_unique_arms_equals_the_dense_trace_with_repeats(name, kp, lam):
    arms, q = _case()
    KT = _dense_KT(name, kp, arms, q)
    dense = np.trace(np.linalg.solve(KT + lam * np.eye(q.size), KT))  # Tr(K_T (K_T + lam I)^-1), symmetric
    assert cert.effective_dimension(name, kp, arms, q, lam) == pytest.approx(dense, rel=0, abs=1e-10)


@pytest.mark.parametrize("name,kp", KERNEL_CASES)
@pytest.mark.parametrize("block", [7, 256])  # several blocks, and one block holding every pull
def test_pull_variances_equal_a_brute_force_sequential_exact_gp(name, kp, block, monkeypatch):
    monkeypatch.setattr(information, "BLOCK", block)
    arms, q = _case()
    lam = 0.3
    brute = _brute_variances(_dense_KT(name, kp, arms, q), lam)
    with_gaps = np.concatenate([q, -np.ones(5, dtype=q.dtype)])  # -1: steps not taken, ignored
    np.testing.assert_allclose(cert.pull_variances(name, kp, arms, with_gaps, lam), brute, rtol=0, atol=1e-10)
    assert cert.sum_posterior_variance(name, kp, arms, with_gaps, lam) == pytest.approx(brute.sum(), abs=1e-10)
    # after its own pull: sigma_t^2(x_t) = s / (1 + s), against a dense solve including x_t
    KT = _dense_KT(name, kp, arms, q)
    after = [(KT[t, t] - KT[t, :t + 1] @ np.linalg.solve(KT[:t + 1, :t + 1] + lam * np.eye(t + 1), KT[:t + 1, t]))
             / lam for t in range(q.size)]
    assert cert.sum_posterior_variance(name, kp, arms, q, lam, after_pull=True) == pytest.approx(
        np.sum(after), abs=1e-10)


@pytest.mark.parametrize("lam", [0.01, 1.0])
def test_log_det_identity_and_the_chain_of_sums(lam, monkeypatch):
    """sum_t log(1 + sigma_{t-1}^2(x_t)) = log det(I + K_T / lam), over several blocks; and d_eff <= sum_t
    sigma_t^2(x_t) <= log det <= sum_t sigma_{t-1}^2(x_t) (variances only shrink; s/(1+s) <= log(1+s) <= s)."""
    monkeypatch.setattr(information, "BLOCK", 64)
    arms, q = _case(A=50, T=400, d=3, seed=1)
    kp = {"sigma2": 0.3}
    s = cert.pull_variances("rbf", kp, arms, q, lam)
    logdet = np.linalg.slogdet(np.eye(q.size) + _dense_KT("rbf", kp, arms, q) / lam)[1]
    assert np.sum(np.log1p(s)) == pytest.approx(logdet, rel=1e-11)
    d_eff = cert.effective_dimension("rbf", kp, arms, q, lam)
    after = cert.sum_posterior_variance("rbf", kp, arms, q, lam, after_pull=True)
    assert d_eff <= after * (1 + 1e-12) and after <= logdet * (1 + 1e-12) and logdet <= s.sum() * (1 + 1e-12)


def test_many_pulls_of_many_arms_keep_the_log_det_identity():
    """The blocked computation at a larger size (2000 pulls of 300 arms in d = 8) against log det(I + C^1/2 K_U
    C^1/2 / lam), which equals log det(I + K_T / lam)."""
    rng = np.random.default_rng(2)
    arms, q = rng.uniform(-1.0, 1.0, (300, 8)), rng.integers(0, 300, 2000)
    lam, kp = 0.1, {"sigma2": 2.0}
    s = cert.pull_variances("rbf", kp, arms, q, lam)
    uniq, counts = np.unique(q, return_counts=True)
    r = np.sqrt(counts)
    KU = _dense_KT("rbf", kp, arms, uniq)
    logdet = np.linalg.slogdet(np.eye(uniq.size) + r[:, None] * KU * r[None, :] / lam)[1]
    assert np.sum(np.log1p(s)) == pytest.approx(logdet, rel=1e-10)


def test_bounds_follow_the_papers_formulas():
    # BBKB Thm. 1 (1): 9 C (1 + kappa^2/lam) qbar d_eff; its proof: 81 C (1 + kappa^2/lam)^2 qbar d_eff
    assert cert.bbkb_dictionary_bound(3.0, 2.0, 5.0, 2.0, 1.0) == pytest.approx(9 * 2 * 1.5 * 5 * 3)
    assert cert.bbkb_dictionary_bound(3.0, 2.0, 5.0, 2.0, 1.0, form="proof") == pytest.approx(81 * 2 * 1.5 ** 2 * 15)
    # BBKB App. B.1: C/(C - 1) 9 (1 + kappa^2/lam) sum; C = 1: no bound
    assert cert.bbkb_batch_bound(4.0, 3.0, 1.0, 1.0) == pytest.approx(1.5 * 9 * 2 * 4)
    assert cert.bbkb_batch_bound(4.0, 1.0, 1.0, 1.0) == math.inf
    # BKB Thm. 1: 3 (1 + kappa^2/lam) alpha qbar d_eff, alpha = (1 + eps)/(1 - eps)
    assert cert.bkb_dictionary_bound(3.0, 5.0, 2.0, 1.0, eps=0.5) == pytest.approx(3 * 1.5 * 3 * 5 * 3)
    assert cert.bkb_dictionary_bound(3.0, 5.0, 2.0, 1.0) == pytest.approx(3 * 1.5 * (2 + math.sqrt(5)) * 15)


def test_qbar_conditions_and_the_smallest_bkb_eps():
    T, delta = 1000, 1e-3
    L = math.log(4 * T / delta)
    met, thr = cert.qbar_condition(8 * L + 1e-9, T, delta)  # BBKB Thm. 1: qbar >= 8 log(4T/delta)
    assert met and thr == pytest.approx(8 * L)
    assert cert.qbar_condition(8 * L - 1e-6, T, delta) == (False, pytest.approx(8 * L))
    assert cert.qbar_condition(2.0, T, delta, algorithm="bkb")[1] == pytest.approx(6 * ((1 + 5 ** 0.5) / 2) ** 5 * L)
    # BKB Thm. 1: the smallest eps with qbar >= 6 alpha log(4T/delta) / eps^2, None below 6 phi^5 log(4T/delta)
    assert cert.bkb_epsilon(cert.BKB_QBAR_FACTOR * L * 0.999, T, delta) is None
    for qbar in (cert.BKB_QBAR_FACTOR * L * 1.001, cert.BKB_QBAR_FACTOR * L * 2, 1e5):
        eps = cert.bkb_epsilon(qbar, T, delta)
        need = 6 * (1 + eps) / (1 - eps) * L / eps ** 2
        assert 0 < eps <= cert.BKB_EPS_LOOSEST and need <= qbar * (1 + 1e-12) and need == pytest.approx(qbar, rel=1e-9)


def test_collapse_warning_only_at_small_qbar():
    assert cert.collapse_warning(2.0) is None and cert.collapse_warning(1.01) is None
    for qbar in (1.0, 0.5):
        msg = cert.collapse_warning(qbar)
        assert isinstance(msg, str) and "\n" not in msg and f"qbar={qbar:g}" in msg


def test_certificates_of_algorithms_without_a_dictionary_theorem_are_the_sums_and_counts():
    arms, q = _case()
    c = cert.certificates("gp_ucb", "rbf", {"name": "rbf", "sigma2": 0.5}, arms, q, np.arange(q.size),
                          np.zeros(q.size, int), 0.3, 1.0, None, q.size, None)
    assert set(c) == {"d_eff", "sum_variance", "sum_variance_after", "max_dict_size", "n_batches", "max_batch_size"}
    assert c["n_batches"] == q.size and c["max_batch_size"] == 1
    assert c["sum_variance"] == pytest.approx(cert.sum_posterior_variance("rbf", {"sigma2": 0.5}, arms, q, 0.3))
    json.dumps(c, allow_nan=False)


@pytest.mark.parametrize("value,arg", [(-1.0, "lam"), (0.0, "lam"), (float("nan"), "lam")])
def test_bad_lam_is_a_value_error_naming_it(value, arg):
    arms, q = _case()
    for fn in (cert.effective_dimension, cert.sum_posterior_variance, cert.pull_variances):
        with pytest.raises(ValueError, match=arg):
            fn("rbf", {}, arms, q, value)


def test_bad_inputs_are_value_errors_naming_the_argument():
    arms, q = _case()
    for bad in (np.array([0, 15]), np.array([0, -2]), np.array([[0, 1]]), np.array([0.5, 1.0])):
        with pytest.raises(ValueError, match="queries"):
            cert.effective_dimension("rbf", {}, arms, bad, 1.0)
        with pytest.raises(ValueError, match="queries"):
            cert.sum_posterior_variance("rbf", {}, arms, bad, 1.0)
    with pytest.raises(ValueError, match="arms"):
        cert.effective_dimension("rbf", {}, arms[0], q, 1.0)
    with pytest.raises(ValueError, match="kernel"):
        cert.effective_dimension("cosine", {}, arms, q, 1.0)
    with pytest.raises(ValueError, match="sigma2"):
        cert.effective_dimension("rbf", {"sigma2": -1.0}, arms, q, 1.0)
    with pytest.raises(ValueError, match="C="):
        cert.bbkb_dictionary_bound(1.0, 0.5, 2.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="kappa2"):
        cert.bbkb_batch_bound(1.0, 2.0, 1.0, -1.0)
    with pytest.raises(ValueError, match="d_eff"):
        cert.bkb_dictionary_bound(-1.0, 2.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="delta"):
        cert.qbar_condition(2.0, 100, 1.5)
    with pytest.raises(ValueError, match="T="):
        cert.qbar_condition(2.0, 0, 0.1)
    with pytest.raises(ValueError, match="qbar"):
        cert.collapse_warning(-1.0)
    with pytest.raises(ValueError, match="batch_index"):
        cert.certificates("bbkb", "rbf", {}, arms, q, np.arange(3), np.zeros(q.size, int), 1.0, 2.0, 2.0, 60, 0.1)


# --------------------------------------------------------------------------------------------- real runs

T_RUN = 200
A_RUN = 100  # gp_sample's rbf (sigma2 = 0.1) on 100 arms: the dictionary (pulled arms) never outgrows m_max = A


def _run_certificates(algorithm, params):
    problem = make_problem("gp_sample", A=A_RUN, d=2)
    res = run(algorithm, problem, T=T_RUN, n_seeds=3, progress=False, params={"m_max": A_RUN, **params})
    h = res.hyperparameters
    kp = {k: v for k, v in problem.kernel.items() if k != "name"}
    return [cert.certificates(algorithm, problem.kernel["name"], kp, problem.arms, res.traces["query"][s],
                              res.traces["batch_index"][s], res.traces["dict_size"][s], h["lam"], h["qbar"],
                              h.get("C"), T_RUN, h["delta"]) for s in range(res.n_seeds)]


def test_bbkb_runs_stay_within_theorem_1():
    """BBKB on gp_sample under Thm. 1's conditions (lam >= 1, qbar >= 8 log(4T/delta) with the runner's delta =
    1/T): the dictionary and the number of batches within the bounds, for every seed."""
    qbar = math.ceil(cert.qbar_condition(1.0, T_RUN, 1.0 / T_RUN)[1])
    for c in _run_certificates("bbkb", {"lam": 1.0, "qbar": float(qbar)}):
        assert c["qbar_condition_met"] and c["lam_condition_met"] and c["note"] is None
        assert c["kappa2"] == pytest.approx(1.0)
        assert 0 < c["max_dict_size"] <= c["dict_bound"] <= c["dict_bound_proof"]
        assert c["n_batches"] <= c["batch_bound"]
        assert c["d_eff"] <= c["sum_variance_after"] <= c["sum_variance"]
        json.dumps(c, allow_nan=False)


def test_bkb_runs_stay_within_theorem_1():
    """BKB on gp_sample with qbar meeting BKB Thm. 1's condition for some eps: |S_t| within the bound."""
    qbar = math.ceil(cert.qbar_condition(1.0, T_RUN, 1.0 / T_RUN, algorithm="bkb")[1])
    for c in _run_certificates("bkb", {"lam": 1.0, "qbar": float(qbar)}):
        assert c["qbar_condition_met"] and c["note"] is None and 0 < c["bkb_eps"] < cert.BKB_EPS_LOOSEST
        assert 0 < c["max_dict_size"] <= c["dict_bound"]
        assert c["n_batches"] == T_RUN and c["max_batch_size"] == 1
        json.dumps(c, allow_nan=False)


def test_bbkb_runs_at_the_default_hyperparameters_are_flagged_and_still_within_the_bounds():
    """Defaults (qbar = 2, gp_sample's lam = 0.01): the conditions fail and the note says so; the bounds, far
    looser than the run, hold anyway."""
    for c in _run_certificates("bbkb", {}):
        assert not c["qbar_condition_met"] and not c["lam_condition_met"]
        assert c["note"].startswith("qbar=2 < 8 log(4T/delta)=") and "guarantee does not apply" in c["note"]
        assert c["max_dict_size"] <= c["dict_bound"] and c["n_batches"] <= c["batch_bound"]


@pytest.mark.parametrize("name,kp", KERNEL_CASES)
def test_gram_of_the_pulled_arms_compiles_once_per_size_class(name, kp):
    """The certificates' Gram matrices come from one compiled program per multiple of GRAM_BLOCK rows (eager
    operations compiled every operation anew for each seed's number of unique arms), equal to the eager K."""
    information._gram_program.clear_cache()
    rng = np.random.default_rng(3)
    kern, params = information._kernel(name, kp, 2)
    for n in (5, 77, information.GRAM_BLOCK):  # one size class
        X = rng.uniform(-1.0, 1.0, (n, 2))
        np.testing.assert_allclose(information._gram(kern, params, X), np.asarray(gram(kern, params, X)),
                                   rtol=1e-12, atol=1e-14)
    assert information._gram_program._cache_size() == 1
    information._gram(kern, params, rng.uniform(-1.0, 1.0, (information.GRAM_BLOCK + 1, 2)))
    assert information._gram_program._cache_size() == 2
