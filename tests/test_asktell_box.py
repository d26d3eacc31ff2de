"""Ask/tell on a box: the same queries as ``sketchbo.run`` told the same rewards, for every box algorithm;
save/load bit for bit; a plain Python objective without a known optimum; bad calls; safe files."""
import os

import chex
import jax.numpy as jnp
import numpy as np
import pytest

import sketchbo as sb
from sketchbo.algorithms import box_hyper
from test_checkpoint import BO_ALWAYS, BO_BUFFERED, HARTMANN, bo_kwargs

CASES = [n if n in BO_ALWAYS else pytest.param(n, marks=pytest.mark.slow) for n in BO_BUFFERED]
UNIT6 = sb.Box(np.zeros(6), np.ones(6))  # hartmann6's box: unit points are the problem's points


def drive(opt, reward_of):
    """Ask and tell until the horizon; the told steps in asked order and their points."""
    keys, points = [], []
    while opt.n_told < opt._s.cfg.horizon:
        k, X = opt.ask()
        opt.tell(k, reward_of(k, X))
        keys.append(k)
        points.append(X)
    return np.concatenate(keys), np.concatenate(points)


@pytest.mark.parametrize("name", CASES)
def test_ask_tell_asks_what_the_run_queries(name, monkeypatch):
    """Told the run's rewards (noiseless Hartmann6), the optimiser asks the run's queries, bit for bit, through
    one capacity growth at the same step (12 -> 24)."""
    kw = bo_kwargs(name)
    res = sb.run(name, HARTMANN, **{**kw, "n_seeds": 1, "seed": 3})
    monkeypatch.setattr(box_hyper, "initial_capacity", lambda T, n0: kw["capacity"])
    opt = sb.Optimizer(UNIT6, name, horizon=kw["T"], seed=3, params=kw["params"])
    steps, X = drive(opt, lambda k, X: res.traces["reward"][0][k])
    np.testing.assert_array_equal(steps, np.arange(kw["T"]))
    np.testing.assert_array_equal(X, res.traces["x"][0])
    assert opt.capacities == {"cap": res.hyperparameters["capacity_final"]} and opt.capacities["cap"] > kw["capacity"]
    sizes = np.bincount(res.traces["batch_index"][0])
    np.testing.assert_array_equal([len(k) for k, _ in opt.history], sizes[sizes > 0])


def quadratic(x):
    """The acceptance objective: a plain Python function, maximum 0 at x = 0.3 (unknown to the optimiser)."""
    return -float(np.sum((np.asarray(x) - 0.3) ** 2))


@pytest.mark.parametrize("name", ["gssbo", "std_gp_ucb"])
def test_a_plain_python_objective_on_a_box_is_optimised(name, tmp_path):
    space = sb.Box([0.0] * 4, [1.0] * 4)
    calls = []
    for seed in range(3):
        opt = sb.Optimizer(space, name, horizon=60, seed=seed)
        while opt.n_told < 60:
            keys, X = opt.ask()
            assert np.all((X >= 0.0) & (X <= 1.0))
            calls.extend(X)
            opt.tell(keys, [quadratic(x) for x in X])
        index, point, mean = opt.best()
        assert index is None and mean == pytest.approx(quadratic(point), abs=1e-12)
        np.testing.assert_array_less(np.abs(point - 0.3), 0.05)
    assert len(calls) == 180  # the objective is called at the asked points, never elsewhere
    opt.save(tmp_path / "box.npz")
    again = sb.Optimizer.load(tmp_path / "box.npz")
    assert again.best().mean == opt.best().mean
    np.testing.assert_array_equal(again.best().point, opt.best().point)


def test_box_save_and_load_mid_run_continue_bit_for_bit(tmp_path):
    space = sb.Box([-2.0, 0.0, 1.0], [2.0, 1.0, 3.0])
    params = {"n0": 6, "n_uniform": 128, "n_local": 32, "fit_steps": 5}

    def reward(keys, X):
        return [-(float(np.sum(np.sin(3 * x)))) for x in X]

    full = sb.Optimizer(space, "gssbo", horizon=14, seed=1, params=params)
    expected = drive(full, reward)
    part = sb.Optimizer(space, "gssbo", horizon=14, seed=1, params=params)
    while part.n_told < 9:
        k, X = part.ask()
        part.tell(k, reward(k, X))
    part.ask()  # saved with a pending batch
    part.save(tmp_path / "p.npz")
    resumed = sb.Optimizer.load(tmp_path / "p.npz")
    chex.assert_trees_all_equal(resumed.state, part.state)
    assert repr(resumed) == repr(part)
    steps, X = drive(resumed, reward)
    np.testing.assert_array_equal(X, expected[1][9:])
    chex.assert_trees_all_equal(resumed.state, full.state)
    assert sorted(os.listdir(tmp_path)) == ["p.npz"]


def test_box_misuse_is_a_clear_error():
    with pytest.raises(ValueError, match="algorithm='bbkb' is invalid; it runs on a finite candidate set"):
        sb.Optimizer(sb.Box([0, 0], [1, 1]), "bbkb")
    with pytest.raises(ValueError, match="kernel=.*leave kernel at None"):
        sb.Optimizer(sb.Box([0, 0], [1, 1]), "gssbo", kernel={"name": "rbf"})
    with pytest.raises(ValueError, match=r"lower\[1\]=2.0 is not below upper\[1\]=1.0"):
        sb.Box([0, 2], [1, 1])
    with pytest.raises(ValueError, match="lower has 2 coordinates and upper 3"):
        sb.Box([0, 0], [1, 1, 1])
    with pytest.raises(ValueError, match="algorithm.n0=20 is invalid; the initial design cannot exceed T=5"):
        sb.Optimizer(sb.Box([0, 0], [1, 1]), "gssbo", horizon=5)
    opt = sb.Optimizer(sb.Box([0, 0], [1, 1]), "std_gp_ucb", horizon=3, params={"n0": 3})
    keys, X = opt.ask()
    np.testing.assert_array_equal(keys, [0, 1, 2])
    with pytest.raises(ValueError, match=r"key 7 \(position 0\) is not in the pending batch"):
        opt.tell([7, 1, 2], [0.0, 0.0, 0.0])
    opt.tell(keys, [0.0, 1.0, 2.0])
    with pytest.raises(ValueError, match="horizon of 3 evaluations is reached"):
        opt.ask()
    assert opt.best().index is None and opt.best().mean == 2.0


def test_save_refuses_what_is_not_a_regular_file_and_names_the_path(tmp_path):
    opt = sb.Optimizer(np.eye(3), "gp_ucb", horizon=5)
    (tmp_path / "adir").mkdir()
    with pytest.raises(ValueError, match=r"Optimizer.save\('.*adir'\): .*is not a regular file"):
        opt.save(tmp_path / "adir")
    with pytest.raises(ValueError, match=r"Optimizer.save\('/dev/null'\): '/dev/null' exists and is not a regular"):
        opt.save("/dev/null")
    os.symlink(tmp_path / "target.npz", tmp_path / "link.npz")
    with pytest.raises(ValueError, match="is not a regular file"):
        opt.save(tmp_path / "link.npz")
    assert not (tmp_path / "target.npz").exists()
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        if os.access(locked, os.W_OK):  # root writes anywhere: the permission case cannot be made here
            opt.save(locked / "ok.npz")
        else:
            with pytest.raises(ValueError, match=r"Optimizer.save\('.*locked/x.npz'\): cannot write there"):
                opt.save(locked / "x.npz")
    finally:
        locked.chmod(0o700)
    assert not any(p.name.endswith(".tmp") for p in tmp_path.rglob("*"))


def test_a_user_objective_without_an_optimum_reports_no_regret_and_is_called_t_times():
    calls = []

    def fn(x):  # a pure JAX function; the host callback counts its evaluations
        import jax
        jax.debug.callback(lambda: calls.append(1))
        return jnp.sum((x - 0.25) ** 2)

    problem = sb.box_problem(sb.Box([0.0] * 3, [1.0] * 3), fn, name="mine")
    res = sb.run("std_gp_ucb", problem, T=15, n_seeds=2, progress=False,
                 params={"n0": 5, "n_uniform": 64, "n_local": 16, "fit_steps": 3})
    assert res.cumulative_regret is None and res.regret_ratio is None and "instant_regret" not in res.traces
    assert res.best_point.shape == (2, 3) and np.all(res.best_reward <= 0)
    best = np.argmax(res.traces["reward"], axis=1)
    np.testing.assert_allclose(res.best_point, res.traces["x"][np.arange(2), best], atol=0)  # unit box: same points
    assert len(calls) == 2 * 15
    with pytest.raises(ValueError, match="f_min=nan is invalid"):
        sb.box_problem(sb.Box([0], [1]), fn, f_min=float("nan"))
