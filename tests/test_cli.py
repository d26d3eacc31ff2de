"""The Hydra app (`python -m sketchbo` / `sketchbo-run`): configs, result files, error reporting."""
from __future__ import annotations

import inspect
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hydra import compose, initialize_config_dir

from sketchbo import tracking
from sketchbo.algorithms import ALGORITHMS as REGISTRY
from sketchbo.cli import CONFIG_DIR, algorithm_configs
from sketchbo.problems import PROBLEMS

REPO = Path(__file__).resolve().parent.parent
ALGORITHMS = sorted(p.stem for p in (CONFIG_DIR / "algorithm").glob("*.yaml") if p.stem != "compare")
PROBLEM_NAMES = sorted(p.stem for p in (CONFIG_DIR / "problem").glob("*.yaml"))
SMALL = ["problem.A=200", "T=30", "n_seeds=2", "progress=false"]
SUMMARY_KEYS = {
    "algorithm", "problem", "T", "n_seeds", "seeds", "cumulative_regret", "regret_ratio", "n_batches",
    "max_batch_size", "max_dict_size", "wall_time_s", "compile_time_s", "device", "dtype", "config",
    "capacity_events",
}


def run_cli(tmp_path: Path, *overrides: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR"}
    cmd = [sys.executable, "-m", "sketchbo", f"hydra.run.dir={tmp_path}", *overrides]
    return subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)


def check_run_files(run_dir: Path, algorithm: str, n_seeds: int, T: int) -> dict:
    summary = json.loads((run_dir / "summary.json").read_text())
    assert SUMMARY_KEYS <= set(summary)
    assert summary["algorithm"] == algorithm
    assert (summary["T"], summary["n_seeds"], summary["dtype"]) == (T, n_seeds, "float64")
    assert summary["seeds"] == list(range(n_seeds))
    for key in tracking.PER_SEED_KEYS:
        assert np.asarray(summary[key]).shape == (n_seeds,), key
    assert np.all(np.asarray(summary["cumulative_regret"]) >= 0)
    assert summary["wall_time_s"] >= summary["compile_time_s"] >= 0
    assert summary["config"]["algorithm"]["name"] == algorithm
    with np.load(run_dir / "traces.npz") as traces:
        for key in tracking.TRACE_KEYS:
            assert traces[key].shape == (n_seeds, T), key
        assert traces["round_time_s"].ndim == 1 and traces["round_time_s"].size >= 1
        regret = traces["instant_regret"].sum(axis=1)
        np.testing.assert_allclose(regret, summary["cumulative_regret"], rtol=1e-9, atol=1e-9)
        assert np.all(traces["batch_index"][:, -1] + 1 == np.asarray(summary["n_batches"]))
    return summary


def test_single_algorithm_writes_summary_and_traces(tmp_path):
    proc = run_cli(tmp_path, "algorithm=bbkb", *SMALL)
    assert proc.returncode == 0, proc.stderr
    check_run_files(tmp_path, "bbkb", n_seeds=2, T=30)
    assert "regret R_T mean ± std" in proc.stdout and "bbkb" in proc.stdout


def test_compare_writes_one_directory_per_member(tmp_path):
    proc = run_cli(tmp_path, "algorithm.members=[bbkb,gp_ucb]", "algorithm.lam=0.5", *SMALL)
    assert proc.returncode == 0, proc.stderr
    for name in ("bbkb", "gp_ucb"):
        summary = check_run_files(tmp_path / name, name, n_seeds=2, T=30)
        assert summary["config"]["algorithm"]["lam"] == 0.5
    comparison = json.loads((tmp_path / "comparison.json").read_text())
    assert comparison["members"] == ["bbkb", "gp_ucb"]
    assert [row["algorithm"] for row in comparison["rows"]] == ["bbkb", "gp_ucb"]
    table_lines = [line for line in proc.stdout.splitlines() if re.match(r"(bbkb|gp_ucb) ", line)]
    assert len(table_lines) == 2


@pytest.mark.parametrize("override, names", [
    ("algorithm.lam=-1", ("lam", "-1")),
    ("algorithm.C=0.5", ("C", "0.5")),
    ("T=0", ("T", "0")),
])
def test_bad_parameter_is_a_clean_error_and_writes_nothing(tmp_path, override, names):
    proc = run_cli(tmp_path, "algorithm=bbkb", *SMALL, override)
    assert proc.returncode == 2
    assert proc.stderr.startswith("sketchbo-run: error: "), proc.stderr
    assert all(name in proc.stderr for name in names), proc.stderr
    assert "Traceback" not in proc.stderr
    assert not list(tmp_path.rglob("summary.json")) and not list(tmp_path.rglob("traces.npz"))


def test_unknown_compare_member_is_a_clean_error(tmp_path):
    proc = run_cli(tmp_path, "algorithm.members=[bbkb,nope]", *SMALL)
    assert proc.returncode == 2
    assert "nope" in proc.stderr and "bbkb" in proc.stderr and "Traceback" not in proc.stderr
    assert not list(tmp_path.rglob("summary.json"))


def test_unknown_algorithm_group_fails(tmp_path):
    proc = run_cli(tmp_path, "algorithm=nope", *SMALL)
    assert proc.returncode != 0
    assert "nope" in proc.stderr and "bbkb" in proc.stderr
    assert not list(tmp_path.rglob("summary.json"))


def compose_config(*overrides: str):
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        return compose(config_name="config", overrides=list(overrides))


def test_default_config_is_the_small_comparison():
    cfg = compose_config()
    assert cfg.algorithm.name == "compare" and list(cfg.algorithm.members) == ["bbkb", "bkb", "gp_ucb"]
    assert cfg.problem.name == "gp_sample" and cfg.kernel.name is None
    assert {"T", "n_seeds", "seed", "dtype", "seed_axis", "progress"} <= set(cfg)
    assert [a["name"] for a in algorithm_configs(cfg)] == ["bbkb", "bkb", "gp_ucb"]


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_every_algorithm_config_composes_with_the_registry_defaults(algorithm):
    cfg = compose_config(f"algorithm={algorithm}")
    assert cfg.algorithm.name == algorithm and algorithm in REGISTRY
    params = {k: v for k, v in cfg.algorithm.items() if k != "name"}
    assert params == REGISTRY[algorithm].defaults  # same keys and values as the runner's registry
    if "lam" in params:  # PROTOCOLS §9
        assert (params["lam"], params["F"], params["delta"], params["beta"]) == (0.2, 20, None, "code")


def test_registry_has_a_config_for_every_algorithm():
    assert sorted(REGISTRY) == ALGORITHMS


def test_compare_overrides_only_the_keys_a_member_has():
    cfg = compose_config("algorithm.members=[bbkb,eps_greedy]", "algorithm.C=3", "algorithm.lam=0.5")
    bbkb, eps_greedy = algorithm_configs(cfg)
    assert (bbkb["C"], bbkb["lam"], bbkb["qbar"]) == (3, 0.5, 2)
    assert eps_greedy == {"name": "eps_greedy", **REGISTRY["eps_greedy"].defaults}


@pytest.mark.parametrize("problem", PROBLEM_NAMES)
def test_every_problem_config_composes(problem):
    cfg = compose_config(f"problem={problem}")
    assert cfg.problem.name == problem and problem in PROBLEMS
    kwargs = set(cfg.problem) - {"name"}
    assert kwargs <= set(inspect.signature(PROBLEMS[problem]).parameters)


@pytest.mark.parametrize("kernel", ["problem_default", "rbf", "matern52", "linear"])
def test_every_kernel_config_composes(kernel):
    cfg = compose_config(f"kernel={kernel}")
    assert cfg.kernel.name == (None if kernel == "problem_default" else kernel)


def test_every_yaml_key_has_a_comment():
    key_line = re.compile(r"^\s*(- )?[A-Za-z_][\w]*:")
    missing = []
    for path in sorted(CONFIG_DIR.rglob("*.yaml")):
        for lineno, line in enumerate(path.read_text().splitlines(), 1):
            if key_line.match(line) and "#" not in line:
                missing.append(f"{path.relative_to(CONFIG_DIR)}:{lineno}: {line.strip()}")
    assert not missing, "\n".join(missing)
