"""Interruption: checkpoints of the runner's carry, resumed bit for bit with capacity growth, with real
SIGKILLed `python -m sketchbo` processes (single runs and multiruns), and checkpoints of other runs ignored.
Every registered algorithm's stop-and-resume is in the conformance suite (test_conformance.py), which uses
this file's helpers and reference configurations."""
from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

import sketchbo as sb
from sketchbo.engine import checkpoint
from sketchbo.algorithms import ALGORITHMS, BO_ALGORITHMS
from sketchbo.problems import make_problem
from sketchbo import run
from sketchbo.domains import box
from sketchbo.cli.tracking import TRACE_KEYS

REPO = Path(__file__).resolve().parent.parent
# the conformance suite's problem (test_algorithms.py); with kwargs(), one compiled program per algorithm serves
# this file and test_reliability.py
SMALL = make_problem("gp_sample", A=120, d=2, sigma2=0.2, seed=1)
CAPACITY = make_problem("gp_sample", A=100, d=2, sigma2=0.2, seed=2)


def kwargs(name):
    """One round per call: a checkpoint can fall between any two rounds, even of a run of three batches."""
    return dict(T=40, n_seeds=3, seed=5, seed_axis="map", progress=False, rounds_per_call=1,
                params=None if "lam" not in ALGORITHMS[name].defaults else {"F": 1.0})


def assert_same_run(a, b):
    """Bit-identical traces and the same derived numbers (timings aside)."""
    for key in TRACE_KEYS:
        assert a.traces[key].dtype == b.traces[key].dtype
        np.testing.assert_array_equal(a.traces[key], b.traces[key], err_msg=key)
    np.testing.assert_array_equal(a.cumulative_regret, b.cumulative_regret)
    np.testing.assert_array_equal(a.n_batches, b.n_batches)
    assert len(a.round_time_s) == len(b.round_time_s)
    assert a.capacity_events == b.capacity_events
    assert a.hyperparameters == b.hyperparameters


def interrupt_after(monkeypatch, n_saves, record=None):
    """Make the n-th checkpoint write the last one: the run stops right after it (KeyboardInterrupt)."""
    save = checkpoint.save_checkpoint
    count = [0]

    def save_then_stop(path, identity, capacities, *rest):
        save(path, identity, capacities, *rest)
        count[0] += 1
        if record is not None:
            record.append(tuple(capacities.values()))
        if count[0] == n_saves:
            raise KeyboardInterrupt

    monkeypatch.setattr(checkpoint, "save_checkpoint", save_then_stop)
    return count


def stop_after_write(monkeypatch, n_saves, start_run) -> None:
    """Call ``start_run()`` and let it stop right after its n-th checkpoint write."""
    with monkeypatch.context() as m:
        interrupt_after(m, n_saves)
        with pytest.raises(KeyboardInterrupt):
            start_run()


def resumed_at(stderr: str) -> int:
    """The step t a run reported resuming at."""
    found = [int(t) for t in re.findall(r"resuming from checkpoint .* at t=(\d+)/", stderr)]
    assert len(found) == 1, stderr
    return found[0]


# ------------------------------------------------------------------------------------ in-process

def test_checkpoint_of_another_run_is_ignored_with_the_difference_named(tmp_path, monkeypatch, capfd):
    path = tmp_path / "ck.npz"
    kw = kwargs("bbkb")
    stop_after_write(monkeypatch, 1, lambda: run("bbkb", SMALL, checkpoint=path, checkpoint_every=1, **kw))
    stale = path.read_bytes()
    capfd.readouterr()
    other = run("bbkb", SMALL, checkpoint=path, checkpoint_every=1, **{**kw, "params": {"F": 1.0, "lam": 0.3}})
    err = capfd.readouterr().err
    assert f"ignoring checkpoint {path}: it belongs to a different run (differs in hyperparameters[0].lam)" in err
    assert "resuming" not in err
    assert_same_run(other, run("bbkb", SMALL, **{**kw, "params": {"F": 1.0, "lam": 0.3}}))
    assert path.read_bytes() != stale  # the new run's checkpoints
    kept = list(tmp_path.glob("ck.other-run-*.npz"))  # the other run's progress is set aside, never overwritten
    assert [k.read_bytes() for k in kept] == [stale] and f"kept as {kept[0].name}" in err

    # other seeds, horizon or problem data are other runs too
    path.write_bytes(stale)
    run("bbkb", SMALL, checkpoint=path, checkpoint_every=100, **{**kw, "seed": 6})
    assert "differs in seeds" in capfd.readouterr().err
    assert sorted(k.read_bytes() == stale for k in tmp_path.glob("ck.other-run-*.npz")) == [True, True]  # none lost
    f = SMALL.f.copy()
    f[0] += 1e-9
    path.write_bytes(stale)
    run("bbkb", SMALL._replace(f=f), checkpoint=path, checkpoint_every=100, **kw)
    assert "differs in problem.sha256" in capfd.readouterr().err

    # a file that is not a checkpoint is ignored, a checkpoint whose arrays do not fit is refused
    path.write_bytes(b"not a checkpoint")
    assert_same_run(run("bbkb", SMALL, checkpoint=path, checkpoint_every=100, **kw), run("bbkb", SMALL, **kw))
    assert f"ignoring checkpoint {path}: unreadable" in capfd.readouterr().err
    (tmp_path / "stale.npz").write_bytes(stale)
    with np.load(tmp_path / "stale.npz") as data:
        arrays = {k: data[k] for k in data.files}
    arrays["carry_0000"] = arrays["carry_0000"][:-1]
    np.savez(path, **arrays)
    with pytest.raises(ValueError, match=r"checkpoint .*ck.npz: state array 0 is .*delete the file"):
        run("bbkb", SMALL, checkpoint=path, checkpoint_every=100, **kw)


def test_capacity_growth_with_checkpoints(tmp_path, monkeypatch, capfd):
    """A checkpoint records the capacities it was made with: a run interrupted before or after a growth
    step resumes at that capacity and ends with the uninterrupted run's traces and capacity events."""
    kw = dict(T=60, n_seeds=2, progress=False, params={"m_max": 25, "u_max": 60, "F": 1.0, "lam": 0.2})
    ref = run("bbkb", CAPACITY, **kw)
    assert len(ref.capacity_events) == 1 and "m_max=25 overflowed" in ref.capacity_events[0]  # one growth step
    saves = []
    with monkeypatch.context() as m:
        interrupt_after(m, 10 ** 6, record=saves)  # record the capacity of every write, never stop
        assert_same_run(run("bbkb", CAPACITY, checkpoint=tmp_path / "all.npz", checkpoint_every=1, **kw), ref)
    final = (ref.hyperparameters["m_max_final"], ref.hyperparameters["u_max_final"])
    assert saves[0] == (25, 60) and saves[-1] == final == (41, 60)  # writes before and after the growth
    for n in (1, len(saves) - 1):
        path = tmp_path / f"ck{n}.npz"
        stop_after_write(monkeypatch, n, lambda: run("bbkb", CAPACITY, checkpoint=path, checkpoint_every=1, **kw))
        capfd.readouterr()
        resumed = run("bbkb", CAPACITY, checkpoint=path, checkpoint_every=1, **kw)
        err = capfd.readouterr().err
        assert f"m_max={saves[n - 1][0]}, u_max={saves[n - 1][1]})" in err  # resumed at the recorded capacity
        assert_same_run(resumed, ref)


# ---------------------------------------------------------------------------------- real processes

CLI_ARGS = ["algorithm=bbkb", "problem.A=200", "T=1000", "n_seeds=2", "checkpoint_every=1"]
KILL_SEED = 7  # seeds the random kill moments


def cli_env() -> dict:
    env = {k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR" and not k.startswith("WANDB_")}
    return {**env, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))}


def start(log: Path, *args: str) -> subprocess.Popen:
    with open(log, "w") as fh:
        return subprocess.Popen([sys.executable, "-m", "sketchbo", *args], cwd=REPO, env=cli_env(),
                                stdout=fh, stderr=subprocess.STDOUT)


def mtime(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except FileNotFoundError:
        return 0


def kill_after_a_new_write(proc, path: Path, rng: random.Random, timeout=300.0) -> bool:
    """SIGKILL ``proc`` at a random moment after it (re)writes ``path``; False when it finished first."""
    before, deadline = mtime(path), time.monotonic() + timeout
    while mtime(path) == before:
        if proc.poll() is not None:
            return False
        assert time.monotonic() < deadline, "no checkpoint was written"
        time.sleep(0.01)
    time.sleep(rng.uniform(0.0, 0.25))
    if proc.poll() is not None:
        return False
    proc.send_signal(signal.SIGKILL)
    assert proc.wait(timeout=60) == -signal.SIGKILL
    return True


def assert_valid_checkpoint(path: Path):
    """An atomic write: whatever the moment of the kill, the file holds a complete checkpoint."""
    with np.load(path, allow_pickle=False) as data:
        meta = json.loads(str(data["meta"]))
        assert meta["rounds"] >= 1 and data["round_times"].size == meta["rounds"]  # one time per round done
        assert all(f"carry_{k:04d}" in data.files for k in range(meta["n_leaves"]))


def assert_same_traces(a: Path, b: Path):
    with np.load(a) as x, np.load(b) as y:
        for key in TRACE_KEYS:
            np.testing.assert_array_equal(x[key], y[key], err_msg=key)
        assert x["round_time_s"].shape == y["round_time_s"].shape


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    """An uninterrupted CLI run of CLI_ARGS (checkpoints on: they change nothing)."""
    out = tmp_path_factory.mktemp("reference")
    proc = start(out.parent / "reference.log", f"hydra.run.dir={out}", *CLI_ARGS)
    assert proc.wait(timeout=600) == 0, (out.parent / "reference.log").read_text()[-3000:]
    assert not (out / "checkpoint.npz").exists()  # deleted once the results are written
    return out / "traces.npz"


def test_sigkilled_run_resumes_to_the_uninterrupted_traces(tmp_path, reference):
    rng = random.Random(KILL_SEED)
    out = tmp_path / "run"
    ckpt = out / "checkpoint.npz"
    kills, logs = 0, []
    for attempt in range(3):  # up to two kills at random moments, then run to the end
        logs.append(tmp_path / f"attempt{attempt}.log")
        proc = start(logs[-1], f"hydra.run.dir={out}", *CLI_ARGS)
        if attempt == 2 or not kill_after_a_new_write(proc, ckpt, rng):
            assert proc.wait(timeout=600) == 0, logs[-1].read_text()[-3000:]
            break
        kills += 1
        assert not (out / "summary.json").exists()
        assert_valid_checkpoint(ckpt)
    assert kills >= 1, "every run finished before the kill"
    for log in logs[1:]:  # every later start resumed from a checkpoint of the one before
        assert resumed_at(log.read_text()) > 0
    assert_same_traces(out / "traces.npz", reference)
    assert not ckpt.exists() and not list(out.glob(".checkpoint.npz.*"))  # nothing left behind
    print(f"interruptions survived: {kills}")


def test_sigkilled_multirun_resumes_without_losing_or_redoing_jobs(tmp_path, reference):
    """Three jobs in one process; killed during the second: the re-run skips the first (files untouched),
    resumes the second from its checkpoint and runs the third."""
    args = ["-m", *CLI_ARGS[:1], "algorithm.qbar=1,2,3", *CLI_ARGS[1:], f"hydra.sweep.dir={tmp_path / 'sweep'}"]
    name = "T=1000,algorithm.qbar={},algorithm=bbkb,n_seeds=2,problem.A=200"
    jobs = [tmp_path / "sweep" / name.format(q) for q in (1, 2, 3)]
    proc = start(tmp_path / "first.log", *args)
    deadline = time.monotonic() + 600
    while not (jobs[0] / "summary.json").exists():  # the first job finished ...
        assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "first.log").read_text()[-3000:]
        time.sleep(0.01)
    assert kill_after_a_new_write(proc, jobs[1] / "checkpoint.npz", random.Random(KILL_SEED))  # ... in the second
    assert not (jobs[1] / "summary.json").exists() and not jobs[2].exists()
    assert_valid_checkpoint(jobs[1] / "checkpoint.npz")
    kept = [mtime(jobs[0] / f) for f in ("summary.json", "traces.npz", "config.yaml")]

    proc = start(tmp_path / "second.log", *args)
    assert proc.wait(timeout=600) == 0, (tmp_path / "second.log").read_text()[-3000:]
    log = (tmp_path / "second.log").read_text()
    assert f"skipping: complete results in {jobs[0]}" in log
    assert log.count("skipping") == 1 and log.count("resuming from checkpoint") == 1
    assert resumed_at(log) > 0 and f"resuming from checkpoint {jobs[1] / 'checkpoint.npz'}" in log
    assert [mtime(jobs[0] / f) for f in ("summary.json", "traces.npz", "config.yaml")] == kept
    for job, qbar in zip(jobs, (1, 2, 3)):
        summary = json.loads((job / "summary.json").read_text())
        assert summary["config"]["algorithm"]["qbar"] == qbar and summary["T"] == 1000
        assert not (job / "checkpoint.npz").exists()
    assert_same_traces(jobs[1] / "traces.npz", reference)  # qbar = 2 is bbkb's default: the reference run


# ------------------------------------------------------------------------- continuous domains (GSSBO family)

HARTMANN = make_problem("hartmann6")
BO_TINY = {"n0": 6, "n_uniform": 128, "n_local": 32, "fit_steps": 20, "acq_steps": 5}


def bo_kwargs(name, **extra):
    """A short run whose buffer grows once (capacity 12 -> 24) and whose subsets bind (M = 10 < 24)."""
    params = dict(BO_TINY)
    if "M" in BO_ALGORITHMS[name].defaults:
        params["M"] = 10
    if "m" in BO_ALGORITHMS[name].defaults:
        params["m"] = 8
    return dict(T=24, params=params, progress=False, rounds_per_call=1, capacity=12, seed_axis="map", **extra)


def assert_same_bo_run(a, b):
    assert_same_run(a, b)
    np.testing.assert_array_equal(a.traces["x"], b.traces["x"])
    np.testing.assert_array_equal(a.traces["ucb"], b.traces["ucb"])  # NaN (initial design) == NaN


BO_ALWAYS = ("gssbo", "sparse_gp", "std_gp_ucb")  # one per engine (subset, Nyström, all rows); the rest: -m slow
# the box algorithms of box_hyper's family (n0, a growing sample buffer: bo_kwargs above); the others (sbpe_box) take
# their own hyperparameters and run the same checks in their own tests (tests/test_sbpe_box.py)
BO_BUFFERED = sorted(n for n, s in BO_ALGORITHMS.items() if s.hooks.buffer_rows is not None)


@pytest.mark.extended
def test_continuous_checkpoint_of_another_run_is_ignored(tmp_path, monkeypatch, capfd):
    path = tmp_path / "ck.npz"
    kw = bo_kwargs("rssbo")
    stop_after_write(monkeypatch, 2,
                     lambda: sb.run("rssbo", HARTMANN, n_seeds=2, checkpoint=path, checkpoint_every=1, **kw))
    stale = path.read_bytes()
    capfd.readouterr()
    other = {**kw, "params": {**kw["params"], "beta_c": 0.5}}
    res = sb.run("rssbo", HARTMANN, n_seeds=2, checkpoint=path, checkpoint_every=100, **other)
    err = capfd.readouterr().err
    assert "it belongs to a different run (differs in hyperparameters[0].beta_c)" in err and "resuming" not in err
    assert_same_bo_run(res, sb.run("rssbo", HARTMANN, n_seeds=2, **other))
    # the same name with another objective is another run (the fingerprint of f)
    path.write_bytes(stale)
    shifted = HARTMANN._replace(fn=lambda x: HARTMANN.fn(x) + 1e-9)
    sb.run("rssbo", shifted, n_seeds=2, checkpoint=path, checkpoint_every=100, **kw)
    err = capfd.readouterr().err
    assert "differs in problem.fingerprint" in err and "resuming" not in err
    with pytest.raises(ValueError, match="checkpoint_every"):
        sb.run("rssbo", HARTMANN, n_seeds=2, checkpoint=path, **kw)


def test_temporaries_of_a_killed_write_are_removed_when_the_results_are_written(tmp_path):
    """A SIGKILL during an atomic write leaves its temporary file (never a partial result file); the
    next write of the job's results deletes it."""
    from sketchbo.cli import tracking
    stale = [tmp_path / ".summary.json.k1x2.tmp", tmp_path / ".traces.npz.abc.tmp",
             tmp_path / ".checkpoint.npz.zz9.tmp"]
    for p in stale:
        p.write_bytes(b"half")
    keep = tmp_path / "notes.tmp"
    keep.write_text("not ours")
    res = run("bbkb", SMALL, **kwargs("bbkb"))
    tracking.write_results(tmp_path, res, {"algorithm": {"name": "bbkb"}})
    assert not any(p.exists() for p in stale) and keep.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.tmp", "summary.json", "traces.npz"]


def test_a_non_finite_objective_value_stops_the_run_and_never_reaches_the_gp(tmp_path, monkeypatch):
    """A user objective returning NaN (inf) on part of the box: the run stops with an error naming the
    evaluation; the GP's data in the carry the check saw stayed finite; nothing is written."""
    seen = []
    check = box.check_feedback
    monkeypatch.setattr(box, "check_feedback", lambda p, carry, seeds: seen.append(carry) or check(p, carry, seeds))
    for bad in (np.nan, np.inf):
        broken = HARTMANN._replace(name="broken", fn=lambda x, bad=bad: jnp.where(x[0] > 0.6, bad, HARTMANN.fn(x)))
        path = tmp_path / "ck.npz"
        with pytest.raises(ValueError, match=r"problem 'broken': the objective returned -?(nan|inf) .* evaluation \d+\)"
                                             r"\. It was kept out of the model \(the feedback marks it invalid\)"):
            sb.run("gssbo", broken, n_seeds=2, checkpoint=path, checkpoint_every=100, **bo_kwargs("gssbo"))
        assert not path.exists() and not list(tmp_path.iterdir())
        state = seen[-1][0]
        assert not np.all(np.isfinite(np.asarray(seen[-1][1].reward)))  # the carry holds the bad evaluation
        assert np.all(np.isfinite(np.asarray(state.data.ysum)))  # and the GP's data never saw it


def test_sigkilled_continuous_run_resumes_to_the_uninterrupted_traces(tmp_path):
    """`python -m sketchbo algorithm=gssbo problem=hartmann6` SIGKILLed at a random moment after a
    checkpoint write, started again: the traces of an uninterrupted run, bit for bit."""
    args = ["algorithm=gssbo", "problem=hartmann6", "T=60", "n_seeds=2", "checkpoint_every=1", "progress=false",
            "algorithm.n0=6", "algorithm.M=10", "algorithm.n_uniform=128", "algorithm.n_local=32"]
    ref = tmp_path / "reference"
    proc = start(tmp_path / "reference.log", f"hydra.run.dir={ref}", *args)
    assert proc.wait(timeout=600) == 0, (tmp_path / "reference.log").read_text()[-3000:]
    out, rng, logs = tmp_path / "run", random.Random(KILL_SEED), []
    for attempt in range(2):
        logs.append(tmp_path / f"attempt{attempt}.log")
        proc = start(logs[-1], f"hydra.run.dir={out}", *args)
        if attempt == 1:
            assert proc.wait(timeout=600) == 0, logs[-1].read_text()[-3000:]
            break
        assert kill_after_a_new_write(proc, out / "checkpoint.npz", rng), "the run finished before the kill"
        assert not (out / "summary.json").exists()
    assert resumed_at(logs[1].read_text()) > 0
    with np.load(out / "traces.npz") as x, np.load(ref / "traces.npz") as y:
        for key in (*TRACE_KEYS, "x"):
            np.testing.assert_array_equal(x[key], y[key], err_msg=key)
    assert not (out / "checkpoint.npz").exists() and not list(out.glob(".*.tmp"))
