"""The entry points: a sweep validated whole before its first job, no directory for a rejected run, float32
independent of what ran before in the process, a box grid as one program, certificates in summary.json."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

import sketchbo as sb
from sketchbo.domains import box
from test_cli import REPO, cli_env, run_cli

FLOAT32_RUN = ("import sketchbo as sb; r = sb.run('bbkb', sb.make_problem('gp_sample', A=300, seed=4), T=120, "
               "n_seeds=2, dtype='float32', progress=False); print(repr(r.traces['query'].tolist()))")


def test_a_float32_run_is_the_same_in_a_fresh_process():
    """A float32 run computes the same in a fresh process (nothing ran before it) as here, where the tests
    have float64 on: the entry point, not the process's history, decides the precision of its pieces."""
    proc = subprocess.run([sys.executable, "-c", FLOAT32_RUN], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    here = sb.run("bbkb", sb.make_problem("gp_sample", A=300, seed=4), T=120, n_seeds=2, dtype="float32",
                  progress=False)
    assert proc.stdout.strip() == repr(here.traces["query"].tolist())


def test_a_sweep_is_validated_whole_before_its_first_job(tmp_path):
    sweep = tmp_path / "sweep"
    cmd = [sys.executable, "-m", "sketchbo", "-m", "algorithm=bbkb", "algorithm.qbar=2,-1", "T=10", "n_seeds=1",
           f"hydra.sweep.dir={sweep}"]
    proc = subprocess.run(cmd, cwd=REPO, env=cli_env(), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().startswith("sketchbo-run: error: job 2 of 2 (algorithm=bbkb algorithm.qbar=-1")
    assert "algorithm.qbar=-1 is invalid" in proc.stderr
    assert not sweep.exists() and not list(tmp_path.iterdir())  # job 1 did not run: nothing was written


def test_a_rejected_run_leaves_no_directory_nor_its_parents(tmp_path):
    run_dir = tmp_path / "outputs" / "day" / "time"
    proc = run_cli(run_dir, "algorithm=bbkb", "algorithm.lam=-1", "T=10")
    assert proc.returncode == 2 and "algorithm.lam=-1 is invalid" in proc.stderr
    assert not (tmp_path / "outputs").exists()
    # an error only the job can see (the problem's data): the directories Hydra made for it are removed too
    proc = run_cli(run_dir, "problem=abalone", "problem.data_dir=" + str(tmp_path / "none"), "problem.download=false",
                   "T=10")
    assert proc.returncode == 2, proc.stderr
    assert not (tmp_path / "outputs").exists(), list((tmp_path / "outputs").rglob("*"))


def test_a_box_grid_is_one_compiled_program(monkeypatch):
    built = []
    make_program = box.make_program
    monkeypatch.setattr(box, "make_program", lambda *a, **k: built.append(1) or make_program(*a, **k))
    params = {"n0": 5, "n_uniform": 64, "n_local": 16, "fit_steps": 3, "acq_steps": 3}
    pairs = sb.run_grid("std_gp_ucb", sb.make_problem("hartmann6"), T=12, grid={"beta_c": [0.05, 2.0]}, n_seeds=3,
                        params=params, progress=False)
    assert len(built) == 1 and [p for p, _ in pairs] == [{"beta_c": 0.05}, {"beta_c": 2.0}]
    for point, res in pairs:  # each point equals its own run
        alone = sb.run("std_gp_ucb", sb.make_problem("hartmann6"), T=12, n_seeds=3, params={**params, **point},
                       progress=False)
        np.testing.assert_array_equal(res.traces["x"], alone.traces["x"])
    assert not np.array_equal(pairs[0][1].traces["x"], pairs[1][1].traces["x"])


def test_a_finite_cli_run_reports_its_certificates(tmp_path):
    proc = run_cli(tmp_path, "algorithm=bbkb", "T=60", "n_seeds=2", "problem.A=200", "algorithm.qbar=1")
    assert proc.returncode == 0, proc.stderr
    assert "warning: qbar=1 <= 1" in proc.stderr  # said before the run
    summary = json.loads((Path(tmp_path) / "summary.json").read_text())
    for key in ("d_eff", "dict_bound", "batch_bound"):
        assert len(summary[key]) == 2, key
    for c in summary["certificates"]:
        assert c["max_dict_size"] <= c["dict_bound"] and c["n_batches"] <= c["batch_bound"]
        assert c["qbar_condition_met"] is False and "guarantee does not apply" in c["note"]
    assert "bbkb: d_eff" in proc.stdout and "guarantee does not apply" in proc.stdout


@pytest.mark.extended
def test_an_installed_wheel_runs_the_cli_outside_the_repository(tmp_path):
    """The configs ship inside the package: a wheel (``pip wheel .``, not an editable checkout) installed into
    a fresh virtual environment runs ``sketchbo-run`` from a directory outside the repository."""
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", str(REPO), "--no-deps", "-q", "-w",
                            str(tmp_path / "dist")], capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr
    wheel = next((tmp_path / "dist").glob("sketchbo-*.whl"))
    with zipfile.ZipFile(wheel) as zf:
        assert "sketchbo/cli/configs/config.yaml" in zf.namelist()
    venv = tmp_path / "venv"  # the dependencies from this environment; sketchbo itself from the wheel
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True, timeout=300)
    bin_dir = venv / ("Scripts" if os.name == "nt" else "bin")
    subprocess.run([str(bin_dir / "python"), "-m", "pip", "install", "-q", "--no-deps", str(wheel)], check=True,
                   capture_output=True, timeout=600)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    where = subprocess.run([str(bin_dir / "python"), "-c", "import sketchbo; print(sketchbo.__file__)"], cwd=outside,
                           capture_output=True, text=True, timeout=300)
    assert Path(where.stdout.strip()).is_relative_to(venv), where.stdout  # not the checkout
    env = {k: v for k, v in cli_env().items() if k != "PYTHONPATH"}
    done = subprocess.run([str(bin_dir / "sketchbo-run"), "algorithm=bbkb", "T=20", "n_seeds=1", "progress=false",
                           f"hydra.run.dir={outside / 'run'}"], cwd=outside, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    assert (outside / "run" / "summary.json").is_file()
