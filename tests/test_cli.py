"""The Hydra app (`python -m sketchbo` / `sketchbo-run`): configs, result files, error reporting,
multirun sweeps and their resumption, W&B logging (offline, no network) and progress output."""
from __future__ import annotations

import inspect
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

import sketchbo as sb

from sketchbo.cli import app as cli
from sketchbo.cli import tracking
from sketchbo.domains import finite
from sketchbo.algorithms import ALGORITHMS as FINITE_REGISTRY
from sketchbo.algorithms import BO_ALGORITHMS
from sketchbo.cli.app import CONFIG_DIR, RUNTIME_KEYS, algorithm_configs
from sketchbo.engine.progress import Progress
from sketchbo.problems import PROBLEMS

REPO = Path(__file__).resolve().parent.parent
ALGORITHMS = sorted(p.stem for p in (CONFIG_DIR / "algorithm").glob("*.yaml") if p.stem != "compare")
REGISTRY = {**FINITE_REGISTRY, **BO_ALGORITHMS}  # finite-arm and continuous-domain algorithms
PROBLEM_NAMES = sorted(p.stem for p in (CONFIG_DIR / "problem").glob("*.yaml"))
SMALL = ["problem.A=200", "T=30", "n_seeds=2", "progress=false"]
SUMMARY_KEYS = {
    "algorithm", "problem", "T", "n_seeds", "seeds", "cumulative_regret", "regret_ratio", "n_batches",
    "max_batch_size", "max_dict_size", "wall_time_s", "compile_time_s", "device", "dtype", "config",
    "capacity_events",
}


def cli_env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR" and not k.startswith("WANDB_")}
    return {**env, **extra}


def run_cli(tmp_path: Path, *overrides: str, env: dict | None = None) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "sketchbo", f"hydra.run.dir={tmp_path}", *overrides]
    return subprocess.run(cmd, cwd=REPO, env=env or cli_env(), capture_output=True, text=True, timeout=600)


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


def mtimes(*paths: Path) -> list[int]:
    return [p.stat().st_mtime_ns for p in paths]


def test_single_algorithm_writes_summary_and_traces(tmp_path):
    proc = run_cli(tmp_path, "algorithm=bbkb", *SMALL)
    assert proc.returncode == 0, proc.stderr
    check_run_files(tmp_path, "bbkb", n_seeds=2, T=30)
    assert "regret R_T mean ± std" in proc.stdout and "bbkb" in proc.stdout
    assert "skipping" not in proc.stdout
    config = (tmp_path / "config.yaml").read_text()  # the resolved config
    assert "name: bbkb" in config and "T: 30" in config and "${" not in config


def test_compare_writes_one_directory_per_member_and_reruns_only_incomplete_members(tmp_path):
    args = ("algorithm.members=[bbkb,gp_ucb]", "algorithm.lam=0.5", *SMALL)
    proc = run_cli(tmp_path, *args)
    assert proc.returncode == 0, proc.stderr
    for name in ("bbkb", "gp_ucb"):
        summary = check_run_files(tmp_path / name, name, n_seeds=2, T=30)
        assert summary["config"]["algorithm"]["lam"] == 0.5
    comparison = json.loads((tmp_path / "comparison.json").read_text())
    assert comparison["members"] == ["bbkb", "gp_ucb"]
    assert [row["algorithm"] for row in comparison["rows"]] == ["bbkb", "gp_ucb"]
    table_lines = [line for line in proc.stdout.splitlines() if re.match(r"(bbkb|gp_ucb) ", line)]
    assert len(table_lines) == 2

    # gp_ucb interrupted before its summary: a re-run (progress on, which does not count) redoes only gp_ucb
    kept = mtimes(tmp_path / "bbkb" / "summary.json", tmp_path / "bbkb" / "traces.npz")
    (tmp_path / "gp_ucb" / "summary.json").unlink()
    proc = run_cli(tmp_path, *args[:-1], "progress=true")
    assert proc.returncode == 0, proc.stderr
    assert f"skipping: complete results in {tmp_path / 'bbkb'}" in proc.stdout
    assert "gp_ucb" not in "".join(line for line in proc.stdout.splitlines() if line.startswith("skipping"))
    assert mtimes(tmp_path / "bbkb" / "summary.json", tmp_path / "bbkb" / "traces.npz") == kept
    check_run_files(tmp_path / "gp_ucb", "gp_ucb", n_seeds=2, T=30)
    redone = json.loads((tmp_path / "comparison.json").read_text())
    assert redone["members"] == comparison["members"]
    for old, new in zip(comparison["rows"], redone["rows"]):  # same numbers, timings aside
        assert {k: v for k, v in old.items() if "time" not in k} == {k: v for k, v in new.items() if "time" not in k}


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
    assert not tmp_path.exists() or not any(tmp_path.iterdir())  # not even Hydra's .hydra is left behind


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
    if "lam" in params and algorithm not in BO_ALGORITHMS:  # finite arms: null takes the problem's suggested values,
        # else the protocol's (finite.FALLBACK); a box algorithm (sbpe_box) has its own, boxes suggest none
        assert (params["lam"], params["F"], params["delta"], params.get("beta", "code")) == (None, None, None, "code")
        assert finite.FALLBACK == {"lam": 0.2, "F": 20.0}


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


# ----------------------------------------------------------------------------- logger, experiment, launchers

def option_names(group: str) -> list[str]:
    return sorted(p.stem for p in (CONFIG_DIR / group).glob("*.yaml"))


def compose_with_hydra(*overrides: str):
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        return compose(config_name="config", overrides=list(overrides), return_hydra_config=True)


def test_defaults_log_nothing_and_sweeps_resume_in_a_fixed_directory():
    cfg = compose_with_hydra("algorithm.qbar=2", "T=20", "progress=false", "logger=wandb", "logger.mode=online")
    assert cfg.logger.name == "wandb"
    assert compose_config().logger.name == "none" and cfg.experiment.name == "default"
    assert cfg.hydra.sweep.dir == "multirun/default"
    assert cfg.hydra.sweep.subdir == "T=20,algorithm.qbar=2"  # the job's overrides that change results
    assert cfg.hydra.launcher._target_.endswith("BasicLauncher")
    excluded = set(cfg.hydra.job.config.override_dirname.exclude_keys)
    assert {"progress", "logger", "logger.mode", "logger.dir", "experiment.name"} <= excluded
    assert not excluded & {"T", "n_seeds", "seed", "algorithm", "algorithm.qbar", "problem", "problem.A"}
    assert {"progress", "logger"} <= set(RUNTIME_KEYS)


@pytest.mark.parametrize("logger", option_names("logger"))
def test_every_logger_config_composes(logger):
    cfg = compose_config(f"logger={logger}", "experiment.name=exp1", "algorithm=bkb", "problem=linear")
    assert cfg.logger.name == logger
    if logger == "wandb":
        assert cfg.logger.mode == "offline" and cfg.logger.project == "sketchbo" and cfg.logger.entity is None
        assert cfg.logger.group == "exp1/bkb/linear" and cfg.logger.dir is None and list(cfg.logger.tags) == []


@pytest.mark.parametrize("experiment", option_names("experiment"))
def test_every_experiment_config_composes(experiment):
    cfg = compose_with_hydra(f"experiment={experiment}")
    assert cfg.experiment.name and cfg.hydra.sweep.dir == f"multirun/{cfg.experiment.name}"


@pytest.mark.parametrize("launcher, target", [
    ("basic", "BasicLauncher"), ("joblib", "JoblibLauncher"), ("submitit_slurm", "SlurmLauncher"),
    ("submitit_local", "LocalLauncher"), ("parallel", "JoblibLauncher"), ("slurm", "SlurmLauncher"),
])
def test_every_launcher_composes(launcher, target):
    cfg = compose_with_hydra(f"hydra/launcher={launcher}")
    assert cfg.hydra.launcher._target_.endswith(f".{target}")
    if launcher == "parallel":
        assert cfg.hydra.launcher.n_jobs == 2 and cfg.hydra.launcher.prefer == "processes"
    if launcher == "slurm":
        keys = {"partition", "timeout_min", "cpus_per_task", "gpus_per_node", "mem_gb", "array_parallelism", "setup"}
        assert keys <= set(cfg.hydra.launcher)
        assert cfg.hydra.launcher.submitit_folder == "multirun/default/.submitit/%j"


def test_our_launcher_presets_cover_the_plugins_and_do_not_shadow_them():
    # a preset named like the plugin's own config would be schema-matched (deprecated in Hydra 1.1)
    assert option_names("hydra/launcher") == ["parallel", "slurm"]


def test_only_cli_imports_hydra_and_only_tracking_imports_wandb():
    for path in sorted((REPO / "sketchbo").rglob("*.py")):
        text = path.read_text()
        if path.relative_to(REPO).as_posix() != "sketchbo/cli/app.py":
            assert not re.search(r"^\s*(import|from) (hydra|omegaconf)\b", text, re.M), path
        if path.relative_to(REPO).as_posix() != "sketchbo/cli/tracking.py":
            assert not re.search(r"^\s*(import|from) wandb\b", text, re.M), path
    code = "import sys, sketchbo.cli.app, sketchbo.cli.tracking; assert 'wandb' not in sys.modules"
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr


# ---------------------------------------------------------------------------------- multirun and resume

def run_multirun(sweep_dir: Path, *overrides: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "sketchbo", "-m", "algorithm=bbkb", "algorithm.qbar=1,2", "problem.A=100",
           "T=20", "n_seeds=1", f"hydra.sweep.dir={sweep_dir}", *overrides]
    return subprocess.run(cmd, cwd=REPO, env=cli_env(), capture_output=True, text=True, timeout=600)


def test_multirun_writes_one_directory_per_job_and_resumes(tmp_path):
    proc = run_multirun(tmp_path)
    assert proc.returncode == 0, proc.stderr
    jobs = sorted(p.parent for p in tmp_path.glob("*/summary.json"))
    assert [p.name for p in jobs] == [f"T=20,algorithm.qbar={q},algorithm=bbkb,n_seeds=1,problem.A=100" for q in (1, 2)]
    for job, qbar in zip(jobs, (1, 2)):
        summary = check_run_files(job, "bbkb", n_seeds=1, T=20)
        assert summary["config"]["algorithm"]["qbar"] == qbar and (job / "config.yaml").exists()
    files = [job / name for job in jobs for name in ("summary.json", "traces.npz")]
    before = mtimes(*files)

    # the same command again: both jobs are complete, nothing is recomputed or rewritten
    proc = run_multirun(tmp_path)
    assert proc.returncode == 0, proc.stderr
    output = proc.stdout + proc.stderr
    assert all(f"skipping: complete results in {job}" in output for job in jobs), output
    assert mtimes(*files) == before

    # a job interrupted before its summary.json: only that job runs again
    (jobs[1] / "summary.json").unlink()
    proc = run_multirun(tmp_path, "progress=false")  # excluded from the job directory names
    assert proc.returncode == 0, proc.stderr
    assert f"skipping: complete results in {jobs[0]}" in proc.stdout
    assert f"skipping: complete results in {jobs[1]}" not in proc.stdout
    assert mtimes(*files[:2]) == before[:2]
    assert (jobs[1] / "traces.npz").stat().st_mtime_ns > before[3]
    check_run_files(jobs[1], "bbkb", n_seeds=1, T=20)
    assert sorted(p.parent for p in tmp_path.glob("*/summary.json")) == jobs


class FakeResult:
    """What ``tracking.write_results`` reads from a RunResult: 2 seeds, T = 5, 3 and 2 rounds."""

    algorithm, problem, T, n_seeds, seeds = "bbkb", "gp_sample", 5, 2, [0, 1]
    traces = {
        "query": np.array([[0, 1, 2, 3, 4], [4, 3, 2, 1, 0]]),
        "reward": np.zeros((2, 5)),
        "instant_regret": np.array([[1.0, 1.0, 0.5, 0.5, 0.0], [2.0, 0.0, 0.0, 0.0, 0.0]]),
        "batch_index": np.array([[0, 1, 1, 2, 2], [0, 0, 0, 1, 1]]),
        "dict_size": np.array([[1, 2, 2, 3, 3], [1, 1, 1, 2, 2]]),
    }
    round_time_s = np.array([0.1, 0.2, 0.3])
    cumulative_regret, regret_ratio = np.array([3.0, 2.0]), np.array([0.6, 0.4])
    n_batches, max_batch_size, max_dict_size = np.array([3, 2]), np.array([2, 3]), np.array([3, 2])
    wall_time_s, compile_time_s, device, dtype = 1.0, 0.5, "cpu:", "float64"
    capacity_events, hyperparameters = [], {"lam": 0.2}


CONFIG = {"algorithm": {"name": "bbkb", "lam": 0.2}, "T": 5, "n_seeds": 2, "progress": True,
          "logger": {"name": "none"}, "problem": {"name": "gp_sample", "data_dir": None}}


def test_load_complete_accepts_only_finished_results_of_the_same_config(tmp_path):
    assert tracking.load_complete(tmp_path, CONFIG, RUNTIME_KEYS) == (None, "")
    summary = tracking.write_results(tmp_path, FakeResult(), CONFIG)
    assert tracking.load_complete(tmp_path, CONFIG, RUNTIME_KEYS) == (summary, "")
    runtime_only = {**CONFIG, "progress": False, "logger": {"name": "wandb", "mode": "offline"}}
    assert tracking.load_complete(tmp_path, runtime_only, RUNTIME_KEYS)[0] == summary
    stored, why = tracking.load_complete(tmp_path, {**CONFIG, "algorithm": {"name": "bbkb", "lam": 0.5}}, RUNTIME_KEYS)
    assert stored is None and "algorithm.lam" in why
    (tmp_path / "traces.npz").write_bytes(b"truncated")
    stored, why = tracking.load_complete(tmp_path, CONFIG, RUNTIME_KEYS)
    assert stored is None and "traces.npz" in why
    (tmp_path / "traces.npz").unlink()
    assert tracking.load_complete(tmp_path, CONFIG, RUNTIME_KEYS)[0] is None


def test_results_stored_before_a_key_was_added_stay_complete_at_its_neutral_value(tmp_path):
    """``problem.shift`` came after paper-scale results were stored: a config with shift 0 (what they ran with)
    reuses them, any other shift does not, and a stored shift is compared as usual."""
    from sketchbo.cli.jobs import ADDED_KEYS
    summary = tracking.write_results(tmp_path, FakeResult(), CONFIG)  # no problem.shift stored
    now = {**CONFIG, "problem": {**CONFIG["problem"], "shift": 0.0}}
    assert tracking.load_complete(tmp_path, now, RUNTIME_KEYS)[0] is None  # without ``added``: a difference
    assert tracking.load_complete(tmp_path, now, RUNTIME_KEYS, added=ADDED_KEYS)[0] == summary
    moved = {**CONFIG, "problem": {**CONFIG["problem"], "shift": 0.3}}
    stored, why = tracking.load_complete(tmp_path, moved, RUNTIME_KEYS, added=ADDED_KEYS)
    assert stored is None and "problem.shift" in why
    tracking.write_results(tmp_path / "new", FakeResult(), moved)  # stored with a shift: compared as any key
    assert tracking.load_complete(tmp_path / "new", now, RUNTIME_KEYS, added=ADDED_KEYS)[0] is None


def test_round_metrics_follow_the_traces():
    traces = {**FakeResult.traces, "round_time_s": FakeResult.round_time_s}
    rows = tracking.round_metrics(traces, 0, uniform_gap=1.0)
    assert [r["round"] for r in rows] == [0, 1, 2]
    assert [r["t"] for r in rows] == [1, 3, 5]
    assert [r["cumulative_regret"] for r in rows] == [1.0, 2.5, 3.0]
    assert [r["regret_ratio"] for r in rows] == pytest.approx([1.0, 2.5 / 3, 3.0 / 5])
    assert [r["batch_size"] for r in rows] == [1, 2, 2]
    assert [r["dict_size"] for r in rows] == [1, 2, 3]
    assert [r["round_time_s"] for r in rows] == [0.1, 0.2, 0.3]
    rows = tracking.round_metrics(traces, 1)
    assert [r["batch_size"] for r in rows] == [3, 2] and np.isnan(rows[0]["regret_ratio"])


def test_summary_records_the_cores_the_run_could_use(monkeypatch):
    """A CPU run's rounding can depend on its usable cores (docs/reliability.md#determinism): the summary says
    how many there were, from the process's affinity."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 2, 5}, raising=False)
    assert tracking.summary_of(FakeResult(), CONFIG)["cpu_cores"] == 3
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {1}, raising=False)
    assert tracking.summary_of(FakeResult(), CONFIG)["cpu_cores"] == 1


def test_wandb_disabled_logs_nothing_and_a_bad_mode_is_an_error(tmp_path):
    summary = tracking.summary_of(FakeResult(), CONFIG)
    assert tracking.log_wandb(summary, FakeResult.traces, {"name": "wandb", "mode": "disabled"}, tmp_path) == []
    assert not list(tmp_path.iterdir())
    with pytest.raises(ValueError, match="logger.mode"):
        tracking.log_wandb(summary, FakeResult.traces, {"name": "wandb", "mode": "cloud"}, tmp_path)


def test_wandb_offline_writes_one_run_per_seed_without_network(tmp_path):
    offline = tmp_path / "wandb_dir"
    no_network = "http://127.0.0.1:9"  # nothing listens there: any connection attempt would fail
    env = cli_env(WANDB_DIR=str(offline), WANDB_BASE_URL=no_network, HTTP_PROXY=no_network,
                  HTTPS_PROXY=no_network, NO_PROXY="", HOME=str(tmp_path / "home"))
    proc = run_cli(tmp_path / "run", "algorithm=bbkb", "problem.A=100", "T=20", "n_seeds=2", "progress=false",
                   "logger=wandb", "logger.mode=offline", "experiment.name=wbtest", env=env)
    assert proc.returncode == 0, proc.stderr
    check_run_files(tmp_path / "run", "bbkb", n_seeds=2, T=20)
    runs = sorted((offline / "wandb").glob("offline-run-*"))
    assert len(runs) == 2
    recorded = b"".join(next(run.glob("run-*.wandb")).read_bytes() for run in runs)
    for text in (b"bbkb-seed0", b"bbkb-seed1", b"wbtest/bbkb/gp_sample", b"cumulative_regret", b"regret_ratio",
                 b"batch_size", b"dict_size", b"round_time_s"):
        assert text in recorded, text
    assert not (tmp_path / "run" / "wandb").exists()  # WANDB_DIR, not the run directory
    assert "wandb:" not in proc.stdout + proc.stderr  # quiet


# -------------------------------------------------------------------------------------------- progress

class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_is_one_redrawn_line_on_a_terminal_and_plain_lines_otherwise(monkeypatch):
    monkeypatch.setattr(sys, "stderr", Terminal())
    bar = Progress(True, "bbkb/test", T=100, every_s=0.0)
    bar.every_s = 0.0
    for t in (10, 50):
        bar(t, t)
    bar(100, 100, final=True)
    out = sys.stderr.getvalue()
    assert out.count("\r") == 3 and out.count("\n") == 1 and out.endswith("\n")
    assert "100%" in out and "eta" in out and "#" * Progress.BAR in out

    monkeypatch.setattr(sys, "stderr", io.StringIO())
    plain = Progress(True, "bbkb/test", T=100, every_s=0.0)
    plain(50, 10)
    plain(100, 20, final=True)
    lines = sys.stderr.getvalue().splitlines()
    assert "\r" not in sys.stderr.getvalue() and len(lines) == 2
    assert lines[1].startswith("[bbkb/test] round 20: t=100/100 (100%)") and "eta" in lines[1]

    monkeypatch.setattr(sys, "stderr", Terminal())
    Progress(False, "bbkb/test", T=100)(100, 1, final=True)
    assert sys.stderr.getvalue() == ""


def test_progress_eta_extrapolates_the_phase_since_the_last_capacity_growth(monkeypatch):
    clock = [0.0]
    monkeypatch.setattr("sketchbo.engine.progress.time.perf_counter", lambda: clock[0])
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    p = Progress(True, "gp/test", T=100, every_s=0.0)
    clock[0] = 50.0
    p(50, 5)  # 1 s per step so far: 50 s left
    clock[0] = 60.0
    p.mark(50)  # grown (10 s compiling): steps cost 2 s from here
    clock[0] = 60.5
    p(50, 5)  # nothing done in the new phase yet: the rate since the start (60.5 s for 50 steps)
    clock[0] = 80.0
    p(60, 6)  # 10 steps in 20 s: 40 steps left take 80 s (the rate since the start would say 53 s)
    etas = [float(line.rsplit("eta ", 1)[1].rstrip("s")) for line in sys.stderr.getvalue().splitlines()]
    assert etas == [50.0, 60.5, 80.0]


def test_progress_eta_of_a_resumed_run_counts_only_its_own_steps(monkeypatch):
    """Resumed at t = 80 of 100: 5 steps in 10 s leave 15 steps, 30 s (not 10 s x 15 / 85 as if the clock
    had run since t = 0)."""
    clock = [0.0]
    monkeypatch.setattr("sketchbo.engine.progress.time.perf_counter", lambda: clock[0])
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    p = Progress(True, "gp/test", T=100, every_s=0.0)
    p.restart(80)
    clock[0] = 10.0
    p(85, 85)
    assert float(sys.stderr.getvalue().rsplit("eta ", 1)[1].strip().rstrip("s")) == 30.0


@pytest.mark.extended
def test_float_grid_in_one_program_equals_the_multirun(tmp_path):
    """grid.qbar=[1,3] grid.C=[1.5,3] runs the four points in one program with the multirun's numbers."""
    common = ["algorithm=bbkb", "problem.A=100", "T=25", "n_seeds=2", "progress=false"]
    proc = run_cli(tmp_path / "grid", *common, "grid.qbar=[1,3]", "grid.C=[1.5,3]")
    assert proc.returncode == 0, proc.stderr
    assert "bbkb qbar=3,C=1.5" in proc.stdout
    sweep = tmp_path / "sweep"
    cmd = [sys.executable, "-m", "sketchbo", "-m", *common, "algorithm.qbar=1,3", "algorithm.C=1.5,3",
           f"hydra.sweep.dir={sweep}"]
    multi = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert multi.returncode == 0, multi.stderr
    for qbar in (1, 3):
        for C in (1.5, 3):
            job = next(sweep.glob(f"*algorithm.C={C},algorithm.qbar={qbar},*"))
            with np.load(tmp_path / "grid" / "grid" / f"qbar={qbar},C={C}" / "traces.npz") as g, \
                    np.load(job / "traces.npz") as m:
                for key in tracking.TRACE_KEYS:
                    np.testing.assert_array_equal(g[key], m[key], err_msg=f"{key} qbar={qbar} C={C}")
    # a re-run finds every point complete
    again = run_cli(tmp_path / "grid", *common, "grid.qbar=[1,3]", "grid.C=[1.5,3]")
    assert again.returncode == 0 and again.stdout.count("skipping: complete results") == 4


def test_grid_rejects_unknown_axes_and_compare(tmp_path):
    proc = run_cli(tmp_path, "algorithm=bkb", "problem.A=50", "T=5", "grid.C=[1.5,2]")
    assert proc.returncode == 2 and "grid.C is not a grid axis of 'bkb'" in proc.stderr
    proc = run_cli(tmp_path, "problem.A=50", "T=5", "grid.lam=[0.1,0.2]")
    assert proc.returncode == 2 and "grid.* needs a single algorithm" in proc.stderr


def test_compile_cache_directory_is_filled_and_shared(tmp_path):
    cache = tmp_path / "jax-cache"
    proc = run_cli(tmp_path / "a", "algorithm=bbkb", "problem.A=60", "T=10", "n_seeds=1", "progress=false",
                   f"compile_cache={cache}")
    assert proc.returncode == 0, proc.stderr
    entries = set(os.listdir(cache))
    assert any("chunk_all" in e for e in entries)  # the runner's round program is cached
    # a second process with the same program reuses the entries instead of adding new ones for it
    proc = run_cli(tmp_path / "b", "algorithm=bbkb", "problem.A=60", "T=10", "n_seeds=1", "progress=false",
                   f"compile_cache={cache}")
    assert proc.returncode == 0, proc.stderr
    assert {e for e in os.listdir(cache) if "chunk_all" in e} == {e for e in entries if "chunk_all" in e}


def test_rejected_runs_are_one_line_and_leave_no_directory(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    for overrides, expected in ((["progress=maybe"], "progress='maybe' is invalid"),
                                (["problem.A=0"], "problem.A=0 is invalid"),
                                (["algorithm.members=[bbkb,gssbo]"], "algorithm 'gssbo' cannot run on problem='gp_sample'")):
        run_dir = tmp_path / "run"
        proc = run_cli(run_dir, "T=10", "n_seeds=1", *overrides)
        assert proc.returncode == 2 and proc.stderr.startswith(f"sketchbo-run: error: {expected}"), proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1 and not run_dir.exists()  # nothing left behind
    proc = run_cli(blocker / "run", "T=10", "n_seeds=1")  # Hydra could not create it
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip() == (f"sketchbo-run: error: hydra.run.dir={str(blocker / 'run')!r} cannot be created: "
                                   f"{str(blocker)!r} is not a directory")


def test_whole_number_floats_are_integers_and_file_errors_name_the_path():
    cfg = compose_config("T=1e3", "n_seeds=2.0")
    cli.check_run_keys(cfg)
    assert cfg.T == 1000 and isinstance(cfg.T, int) and cfg.n_seeds == 2
    with pytest.raises(ValueError, match=r"progress=1 is invalid"):
        cli.check_run_keys(compose_config("progress=1"))
    message = cli.describe(OSError(28, "No space left on device", "/data/run/traces.npz"))
    assert message == "cannot write or read /data/run/traces.npz: No space left on device"
    assert cli.writable_dir_error(Path("/proc/sketchbo-test/run"), "hydra.run.dir") is not None


def test_online_logging_without_credentials_is_refused_before_running(tmp_path, monkeypatch):
    for key in [k for k in os.environ if k.startswith("WANDB_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("NETRC", str(tmp_path / "netrc"))
    monkeypatch.setenv("WANDB_CONFIG_DIR", str(tmp_path / "wandb-config"))
    cfg = compose_config("algorithm=bbkb", "logger=wandb", "logger.mode=online")
    with pytest.raises(tracking.LoggingError, match="wandb login"):
        cli.check_logger(cfg)
    cli.check_logger(compose_config("algorithm=bbkb", "logger=wandb"))  # offline needs no account


@pytest.mark.parametrize("algorithm,problem", [("gssbo", "hartmann6"), ("bbkb", "gp_sample")])
def test_a_job_passes_devices_to_the_runner_on_both_domains(tmp_path, algorithm, problem):
    """``devices`` reaches a box problem's run as it does a finite one's (it was dropped for boxes, so that
    ``devices=1`` ran on every CPU device): an impossible count fails there, before anything compiles."""
    from sketchbo.cli import jobs

    cfg = compose_config(f"algorithm={algorithm}", f"problem={problem}", "T=30", "devices=99")
    config = cli.job_config(cfg, algorithm_configs(cfg)[0])
    with pytest.raises(ValueError, match="devices=99 is invalid; this process sees"):
        jobs.run_job(config, tmp_path / "run")
    assert not list(tmp_path.rglob("summary.json"))


@pytest.mark.parametrize("name", ALGORITHMS)
def test_an_algorithm_config_repeats_its_specs_defaults_exactly(name):
    """Defaults have one source, the spec (``sb.ALGORITHMS[name].defaults``): each config under
    ``sketchbo/cli/configs/algorithm/`` lists every one of them with the same value and nothing else, so that a
    default changed in the code and not in its YAML (or the reverse) fails here."""
    config = OmegaConf.to_container(OmegaConf.load(CONFIG_DIR / "algorithm" / f"{name}.yaml"), resolve=True)
    assert config.pop("name") == name
    defaults = sb.ALGORITHMS[name].defaults
    assert sorted(config) == sorted(defaults), f"{name}.yaml keys differ from the spec's defaults"
    drift = {k: (config[k], defaults[k]) for k in defaults if config[k] != defaults[k]}
    assert not drift, f"{name}.yaml (left) drifted from the spec's defaults (right): {drift}"
