"""Approximation certificates (sketchbo.approximation, sketchbo.gp.dtc): the replay of BKB / BBKB runs, the exact and
sketched variances against dense float64 references, the papers' accuracy statements on runs that meet their
conditions, a broken sketch that fails them, and the command line's summary and footer."""
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sketchbo import approximation as ap
from sketchbo import certificates as cert
from sketchbo import run
from sketchbo.gp import dtc
from sketchbo.kernels import get_kernel, gram, kernel_params
from sketchbo.problems import make_problem

REPO = Path(__file__).resolve().parent.parent
T = 60
PROBLEM = make_problem("gp_sample", A=200, d=2, seed=0)
KP = {k: v for k, v in PROBLEM.kernel.items() if k != "name"}
DELTA = 1.0 / T  # the runner's default delta


def _condition_qbar(algorithm):
    """The smallest integer q-bar that meets the algorithm's theorem (BKB Thm. 1 / BBKB Thm. 1) at T and DELTA."""
    return float(math.ceil(cert.qbar_condition(1.0, T, DELTA, algorithm=algorithm)[1]))


@pytest.fixture(scope="module")
def runs():
    """BKB and BBKB on PROBLEM under their theorems' conditions (lam = 1, q-bar at the threshold), one seed each,
    and BBKB at its defaults on a smoother kernel (a dictionary that leaves pulled arms out)."""
    out = {name: run(name, PROBLEM, T=T, n_seeds=1, progress=False, params={"lam": 1.0, "qbar": _condition_qbar(name)})
           for name in ("bkb", "bbkb")}
    out["bbkb_sparse"] = run("bbkb", PROBLEM, T=T, n_seeds=1, progress=False, kernel={"name": "rbf", "sigma2": 1.0},
                             params={"lam": 1.0, "qbar": 1.5, "C": 3.0})
    return out


def _dense_variance(X_rows, x, lam):
    """sigma^2(x) (lam-scaled) of the exact GP with every pull a row of K_t (repeats as separate rows)."""
    kern, params = get_kernel("rbf"), kernel_params("rbf", 2, **KP)
    K = np.asarray(gram(kern, params, np.vstack([X_rows, x[None, :]])))
    k, Kt = K[-1, :-1], K[:-1, :-1]
    return (K[-1, -1] - k @ np.linalg.solve(Kt + lam * np.eye(len(Kt)), k)) / lam


def _dense_dtc(X_rows, S, x, lam):
    """BKB Eq. 4's sigma~^2(x) with dictionary points S and pulls X_rows, in the t x t form of the Nyström kernel
    q(a, b) = k_S(a)^T K_S^+ k_S(b): z^T Z^T Z (Z^T Z + lam I)^{-1} z = q_x^T (Q + lam I)^{-1} q_x (push-through)."""
    kern, params = get_kernel("rbf"), kernel_params("rbf", 2, **KP)
    k = lambda A, B: np.asarray(kern.k(params, A, B))
    Kplus = np.linalg.pinv(k(S, S), hermitian=True)
    q = lambda A, B: k(A, S) @ Kplus @ k(S, B)
    qx, Q = q(X_rows, x[None, :])[:, 0], q(X_rows, X_rows)
    return (1.0 - qx @ np.linalg.solve(Q + lam * np.eye(len(Q)), qx)) / lam  # rbf: k(x, x) = 1


def _pull_rows(end):
    return np.repeat(np.arange(PROBLEM.arms.shape[0]), end.counts.astype(int))


# ------------------------------------------------------------------------------------------------ replay, variances

@pytest.mark.parametrize("name", ["bkb", "bbkb", "bbkb_sparse"])
def test_replay_asks_the_runs_queries_and_the_variances_match_dense_references(runs, name):
    res = runs[name]
    kernel = {"name": "rbf", "sigma2": 1.0} if name == "bbkb_sparse" else None
    ends, mismatch = ap.replay(res, PROBLEM, kernel, max_batch_ends=5)
    assert mismatch is None and 1 <= len(ends) <= 5
    assert [e.t for e in ends] == sorted({e.t for e in ends})
    kp = {"sigma2": 1.0} if kernel else KP
    end = ends[-1]
    v = dtc.variances(end, PROBLEM.arms, "rbf", kp, 1.0, np.arange(0, 200, 7))
    assert np.all(np.isfinite(v.exact)) and np.all(v.exact > 0) and np.all(np.isfinite(v.sketch))
    np.testing.assert_allclose(v.sketch_numpy, v.sketch, rtol=1e-8)  # BKB Eq. 4 here = the algorithm's var_fb
    if kernel is None:  # the dense references use PROBLEM's kernel
        rows, i = PROBLEM.arms[_pull_rows(end)], 3
        assert v.exact[i] == pytest.approx(_dense_variance(rows, PROBLEM.arms[v.arms[i]], 1.0), rel=1e-9)


def test_in_batch_variances_equal_dense_conditioning_with_the_batchs_earlier_pulls(runs):
    ends, _ = ap.replay(runs["bbkb"], PROBLEM)
    end = next(e for e in ends if e.next_pulls.size >= 3)
    v = dtc.variances(end, PROBLEM.arms, "rbf", KP, 1.0, np.arange(3))
    rows, S = PROBLEM.arms[_pull_rows(end)], PROBLEM.arms[end.dict_idx]
    for j in (1, 2):  # pulls 2 and 3 of the batch, given X_fb and the pulls before them
        earlier = np.vstack([rows, PROBLEM.arms[end.next_pulls[:j]]])
        x = PROBLEM.arms[end.next_pulls[j]]
        assert v.in_batch.exact[j - 1] == pytest.approx(_dense_variance(earlier, x, 1.0), rel=1e-8)
        assert v.in_batch.sketch[j - 1] == pytest.approx(_dense_dtc(earlier, S, x, 1.0), rel=1e-6)
        assert v.in_batch.rule[j - 1] == pytest.approx(1.0 + end.var_fb[end.next_pulls[:j]].sum())


def test_a_tampered_trace_is_reported_as_a_mismatch(runs):
    res = runs["bbkb"]
    q = res.traces["query"].copy()
    q[0, 7] = (q[0, 7] + 1) % PROBLEM.arms.shape[0]
    _, mismatch = ap.replay(res._replace(traces={**res.traces, "query": q}), PROBLEM, max_batch_ends=1)
    assert mismatch == 7


# ----------------------------------------------------------------------------------------------- the statements

@pytest.mark.parametrize("name", ["bkb", "bbkb"])
def test_runs_under_the_theorems_conditions_stay_within_their_factor(runs, name):
    c = ap.of_run(runs[name], PROBLEM)[0]
    json.dumps(c, allow_nan=False)
    assert c["conditions_met"] and c["note"] is None and c["replay_matches"]
    assert c["theorem"] == ("BKB Thm 1" if name == "bkb" else "BBKB Lemma 3")
    if name == "bkb":  # alpha at the smallest admissible eps
        eps = cert.bkb_epsilon(_condition_qbar("bkb"), T, DELTA)
        assert c["bound"] == pytest.approx((1 + eps) / (1 - eps))
    assert c["ratio"]["n"] > 0 and c["within"]
    lower = 1.0 / c["bound"]  # the theorem's interval [1/alpha, alpha]
    assert lower <= c["ratio"]["min"] <= c["ratio"]["q50"] <= c["ratio"]["max"] <= c["bound"]
    assert c["inverse_ratio"]["max"] == pytest.approx(1.0 / c["ratio"]["min"])
    if name == "bbkb":
        w = c["within_batch"]
        assert w["n_pulls"] > 0 and w["within"] and w["max_rule"] <= runs[name].hyperparameters["C"]
        assert w["lemma4_max"] <= 1.0 + 1e-9  # BBKB Lemma 4, deterministic


def test_conditions_not_met_are_named_and_the_ratios_still_reported(runs):
    c = ap.of_run(runs["bbkb_sparse"], PROBLEM, {"name": "rbf", "sigma2": 1.0}, max_arms=50)[0]
    assert not c["conditions_met"] and c["note"].startswith("qbar=1.5 < 8 log(4T/delta)=")
    assert "BBKB Lemma 3 does not apply" in c["note"]
    assert c["ratio"]["n"] > 0 and np.isfinite(c["ratio"]["max"]) and c["within"] is not None
    assert c["max_arms_per_end"] < PROBLEM.arms.shape[0]  # 50 random arms, the pulled ones and the next batch's
    with pytest.raises(ValueError, match="max_arms"):
        ap.of_run(runs["bbkb"], PROBLEM, max_arms=0)
    with pytest.raises(ValueError, match="gp_ucb"):
        ap.of_run(run("gp_ucb", PROBLEM, T=5, progress=False), PROBLEM)


def _one_point_ends(ends):
    """Each batch end's dictionary cut to one pulled arm, and the algorithm's variances replaced by that sketch's."""
    out = []
    for e in ends:
        one = np.flatnonzero(e.counts > 0)[:1]
        var = dtc.sketched_variances(PROBLEM.arms, "rbf", KP, one, e.counts, 1.0)
        out.append(e._replace(dict_idx=one, var_fb=var))
    return out


@pytest.mark.parametrize("name", ["bkb", "bbkb"])
def test_a_one_point_dictionary_fails_the_certificate(runs, name):
    """The same states with a one-point dictionary: the sketch forgets every other pull, sigma~^2 far above sigma^2,
    and the certificate (conditions as met as before) says EXCEEDED."""
    res = runs[name]
    ends, _ = ap.replay(res, PROBLEM)
    h = res.hyperparameters
    per_end = [dtc.variances(e, PROBLEM.arms, "rbf", KP, 1.0, np.arange(200)) for e in _one_point_ends(ends)]
    c = ap.certificate(name, per_end, h["lam"], h["qbar"], h.get("C"), T, h["delta"])
    assert c["conditions_met"] and c["within"] is False
    assert c["ratio"]["max"] > 1.5 * c["bound"]
    line = ap.summary_line({"algorithm": name, "approximation": [c]})
    assert "EXCEEDED" in line and "within)" not in line.split(";")[0]
    if name == "bbkb":
        assert c["within_batch"]["lemma4_max"] <= 1.0 + 1e-9  # Lemma 4 holds for any dictionary


def test_statements_and_bounds_follow_the_papers():
    bkb = ap.start_theorem("bkb", 0.5, 2.0, 100, 0.01)
    assert not bkb["conditions_met"] and bkb["eps"] is None
    assert bkb["bound"] == pytest.approx(2 + math.sqrt(5))  # alpha at eps = 1/phi
    bbkb = ap.start_theorem("bbkb", 0.5, 1e4, 100, 0.01)
    assert bbkb["bound"] == 3.0 and bbkb["note"] == "lam=0.5 < 1: BBKB Lemma 3 does not apply"
    assert ap.within_batch_bounds(2.0) == {"under": 6.0, "over": 18.0, "exact": 6.0}
    for bad, match in ((("bbkb", -1.0, 2.0, 10, 0.1), "lam"), (("bbkb", 1.0, 2.0, 10, 1.5), "delta"),
                       (("gp_ucb", 1.0, 2.0, 10, 0.1), "algorithm")):
        with pytest.raises(ValueError, match=match):
            ap.start_theorem(*bad)
    with pytest.raises(ValueError, match="C="):
        ap.within_batch_bounds(0.5)


# ---------------------------------------------------------------------------------------------- command line

def test_the_command_line_stores_them_per_seed_and_prints_one_footer_line(tmp_path):
    cmd = [sys.executable, "-m", "sketchbo", f"hydra.run.dir={tmp_path}", "algorithm=bbkb", "problem.A=200", "T=30",
           "n_seeds=2", "progress=false", "plots=false", "approximation=true"]
    proc = subprocess.run(cmd, check=False, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["config"]["approximation"] is True and len(summary["approximation"]) == 2
    for c in summary["approximation"]:
        assert c["algorithm"] == "bbkb" and c["replay_matches"] and c["ratio"]["n"] > 0
        assert 0 < c["ratio"]["min"] <= c["ratio"]["max"] < math.inf and "within_batch" in c
    lines = [line for line in proc.stdout.splitlines() if "sketch accuracy" in line]
    assert len(lines) == 1 and lines[0].startswith("bbkb: sketch accuracy sigma~^2/sigma^2 in [")
    assert "BBKB Lemma 3 allows [1/3, 3]" in lines[0]


def test_the_switch_is_off_by_default_and_checked_before_anything_runs():
    from hydra import compose, initialize_config_dir

    from sketchbo.cli import app, jobs, tracking
    with initialize_config_dir(config_dir=str(app.CONFIG_DIR), version_base="1.3"):
        assert compose(config_name="config").approximation is False
        with pytest.raises(ValueError, match="approximation=2 is invalid"):
            app.check_config(compose(config_name="config", overrides=["approximation=2"]))
    res = run("gp_ucb", PROBLEM, T=5, progress=False)
    assert jobs.approximation_of({"approximation": True}, res, PROBLEM) is None  # no sketch to certify
    assert "approximation" not in tracking.summary_of(res, {})
    assert ap.summary_line(tracking.summary_of(res, {})) is None
