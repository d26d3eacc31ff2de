"""Bring your own algorithm: two algorithms defined outside the package (``user_algorithms.py``) run on the
engine with zero edits to sketchbo — seeds x a grid of their own hyperparameter in one compiled program,
ask/tell == run, checkpoint resume, the public conformance check, the CLI from a user's config directory —
and a broken spec is refused with a message that names what is wrong."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import jax.numpy as jnp
import numpy as np
import pytest

import sketchbo as sb
from sketchbo.engine import program
from sketchbo.testing import ConformanceError, backend_compilations
from user_algorithms import LOCAL, UCB1, UCB1Params, make_ucb1

SMALL = sb.make_problem("gp_sample", A=120, d=2, sigma2=0.2, seed=1)
HERE = Path(__file__).resolve().parent


def test_seeds_times_a_grid_of_the_users_own_hyperparameter_compile_one_program():
    """4 seeds x 3 widths: the engine compiles one program (its init and its chunk) for the 12 elements; each
    point equals a run at that width."""
    before = dict(program._PROGRAMS)
    out = sb.run_grid(UCB1, SMALL, T=150, n_seeds=4, grid={"width": [0.25, 1.0, 4.0]}, progress=False, devices=1)
    new = [key for key in program._PROGRAMS if key not in before]
    assert len(new) == 1 and out[0][1].compile_time_s > 0
    assert [pt for pt, _ in out] == [{"width": 0.25}, {"width": 1.0}, {"width": 4.0}]
    regrets = [res.cumulative_regret.mean() for _, res in out]
    assert len(set(np.round(regrets, 6))) == 3  # the width changes the trajectories
    alone = sb.run(UCB1, SMALL, T=150, n_seeds=4, params={"width": 4.0}, progress=False, devices=1)
    np.testing.assert_array_equal(alone.traces["query"], out[2][1].traces["query"])
    assert alone.hyperparameters["width"] == 4.0


def test_the_users_own_step_info_is_recorded_in_the_traces():
    """UCB1's info field ``pulls`` (not a field the engine knows) becomes the trace ``info_pulls``: at every step
    the chosen arm's earlier pulls, counted here from the query trace."""
    res = sb.run(UCB1, SMALL, T=200, n_seeds=2, progress=False)
    q, pulls = res.traces["query"], res.traces["info_pulls"]
    assert pulls.shape == q.shape == (2, 200)
    for s in range(2):
        expected = [np.sum(q[s, :t] == q[s, t]) for t in range(200)]
        np.testing.assert_array_equal(pulls[s], expected)
    assert pulls.max() > 0  # arms were pulled again: the check compares more than zeros


def test_the_users_algorithm_learns():
    res = sb.run(UCB1, SMALL, T=400, n_seeds=2, params={"width": 0.25}, progress=False)
    assert np.all(res.regret_ratio < 0.6), res.regret_ratio


@pytest.mark.parametrize("spec", [UCB1, LOCAL], ids=["ucb1", "local_search"])
def test_the_public_conformance_check_passes(spec):
    """contract, jit without recompilation, vmapped == mapped == alone, checkpoint resume and ask/tell == run:
    ``sb.testing.check_algorithm`` on the user's spec."""
    assert sb.testing.check_algorithm(spec, T=20) == list(sb.testing.CHECKS)


class GrowingState(NamedTuple):
    counts: object
    sums: object
    t: object
    batch_open: object


def test_the_check_names_a_state_whose_shape_changes():
    def make_broken(static):
        alg = make_ucb1(static)

        def update(state, feedback, params):  # appends instead of keeping a fixed capacity
            new = alg.update(state, feedback, params)
            return new._replace(sums=jnp.concatenate([new.sums, new.sums[:1]]))

        return alg._replace(update=update)

    broken = sb.AlgorithmSpec(name="broken", domain="arms", factory=make_broken, params=UCB1Params,
                              defaults={"width": 1.0})
    with pytest.raises(ConformanceError, match=r"broken: check 'contract' failed: update changed state\.sums "
                                               r"from float64\(120,\) to float64\(121,\)"):
        sb.testing.check_algorithm(broken)


def test_the_check_names_an_update_that_returns_a_tuple():
    def make_old_style(static):
        alg = make_ucb1(static)
        return alg._replace(update=lambda s, fb, p: (alg.update(s, fb, p), None))

    spec = sb.AlgorithmSpec(name="old_style", domain="arms", factory=make_old_style, params=UCB1Params,
                            defaults={"width": 1.0})
    with pytest.raises(ConformanceError, match="update must return the state alone"):
        sb.testing.check_algorithm(spec, checks=("contract",))


@pytest.mark.parametrize("kwargs, message", [
    ({"domain": "graph"}, "domain='graph' is invalid; choose one of \\['arms', 'box'\\]"),
    ({"name": "my ucb"}, "name must be a Python identifier"),
    ({"defaults": {}}, r"params field\(s\) \['width'\] have no default"),
    ({"factory": 3}, "factory=3 is not callable"),
    ({"params": dict}, "params=<class 'dict'> must be a NamedTuple class"),
    ({"grid_keys": ("other",)}, r"grid_keys \['other'\] are not hyperparameters"),
])
def test_a_bad_spec_is_refused_naming_what_is_wrong(kwargs, message):
    base = dict(name="ucb1", domain="arms", factory=make_ucb1, params=UCB1Params, defaults={"width": 1.0})
    with pytest.raises(ValueError, match=message):
        sb.AlgorithmSpec(**{**base, **kwargs})


def test_bad_hyperparameters_of_a_users_spec_are_refused_before_compiling():
    with backend_compilations() as count:
        with pytest.raises(ValueError, match=r"algorithm\.width='wide' is invalid; it must be a finite number"):
            sb.run(UCB1, SMALL, T=10, params={"width": "wide"}, progress=False)
        with pytest.raises(ValueError, match=r"algorithm 'ucb1' has no parameter\(s\) \['lam'\]; it takes \['width'\]"):
            sb.run(UCB1, SMALL, T=10, params={"lam": 0.1}, progress=False)
        with pytest.raises(ValueError, match=r"grid.qbar is not a grid axis of 'ucb1'; allowed: \['width'\]"):
            sb.run_grid(UCB1, SMALL, T=10, grid={"qbar": [1, 2]}, progress=False)
        with pytest.raises(ValueError, match=r"algorithm\.scale=-1\.0 is invalid; it must be > 0"):
            sb.run(LOCAL, sb.make_problem("hartmann6"), T=10, params={"scale": -1.0}, progress=False)
        with pytest.raises(ValueError, match=r"algorithm=.local_search. is invalid; it optimises over a box"):
            sb.Optimizer(SMALL.arms, LOCAL)
    assert count[0] == 0


def test_register_gives_the_spec_a_name_and_refuses_a_taken_one():
    spec = sb.AlgorithmSpec(name="ucb1_registered", domain="arms", factory=make_ucb1, params=UCB1Params,
                            defaults={"width": 1.0})
    try:
        assert sb.register(spec) is spec and sb.ALGORITHMS["ucb1_registered"] is spec
        res = sb.run("ucb1_registered", SMALL, T=30, progress=False)
        assert res.algorithm == "ucb1_registered"
        other = sb.AlgorithmSpec(name="ucb1_registered", domain="arms", factory=make_ucb1, params=UCB1Params,
                                 defaults={"width": 2.0})
        with pytest.raises(ValueError, match="registered already; pass replace=True"):
            sb.register(other)
        with pytest.raises(ValueError, match="'bbkb' is a sketchbo algorithm"):
            sb.register(sb.AlgorithmSpec(name="bbkb", domain="arms", factory=make_ucb1, defaults={}))
    finally:
        sb.ALGORITHMS.pop("ucb1_registered", None)


def test_optimizer_save_and_load_of_a_users_algorithm(tmp_path):
    opt = sb.Optimizer(SMALL.arms, UCB1, horizon=30, seed=2)
    for _ in range(10):
        keys, _ = opt.ask()
        opt.tell(keys, np.asarray(SMALL.f)[keys])
    opt.save(tmp_path / "opt.npz")
    with pytest.raises(ValueError, match="'ucb1' is not a known algorithm"):
        sb.Optimizer.load(tmp_path / "opt.npz")
    again = sb.Optimizer.load(tmp_path / "opt.npz", algorithm=UCB1)
    np.testing.assert_array_equal(again.ask()[0], opt.ask()[0])


def test_cli_multirun_over_the_users_hyperparameter_from_a_user_config_dir(tmp_path):
    """``algorithm.spec: module:NAME`` in the user's own config directory (on Hydra's search path): a sweep over
    the user's ``width``, and a bad value refused before the first job."""
    conf = tmp_path / "my_conf" / "algorithm"
    conf.mkdir(parents=True)
    (conf / "ucb1.yaml").write_text("name: ucb1\nspec: user_algorithms:UCB1\nwidth: 1.0\n")
    common = [sys.executable, "-m", "sketchbo", "-m", "algorithm=ucb1", f"hydra.searchpath=[file://{conf.parent}]",
              "T=60", "n_seeds=2", "problem.A=100", "progress=false", f"hydra.sweep.dir={tmp_path / 'sweep'}"]
    env = {**os.environ, "SKETCHBO_COMPILE_CACHE": str(tmp_path / "cache")}
    out = subprocess.run(common + ["algorithm.width=0.5,2"], cwd=HERE, env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    runs = sorted(p.name for p in (tmp_path / "sweep").iterdir() if p.is_dir())
    assert runs == ["T=60,algorithm.width=0.5,algorithm=ucb1,n_seeds=2,problem.A=100",
                    "T=60,algorithm.width=2,algorithm=ucb1,n_seeds=2,problem.A=100"]
    for run_dir in runs:
        assert (tmp_path / "sweep" / run_dir / "summary.json").is_file()
    bad = subprocess.run(common + ["algorithm.width=1,wide", f"hydra.sweep.dir={tmp_path / 'bad'}"], cwd=HERE, env=env,
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2
    assert "job 2 of 2" in bad.stderr and "algorithm.width='wide' is invalid" in bad.stderr
    assert not (tmp_path / "bad").exists()
