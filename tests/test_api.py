"""The ask/tell API: same trajectories as the runner, save/restore, bad calls, capacity growth, a real function."""
import os

import jax
import numpy as np
import pytest

import sketchbo.api as api
from sketchbo.engine import asktell
from sketchbo.algorithms import ALGORITHMS
from sketchbo.api import Optimizer
from sketchbo.problems import make_problem
from sketchbo import run

# without its suggested lam and F: an Optimizer knows no problem, so both sides use the same defaults
PROBLEM = make_problem("gp_sample", A=100, d=2, sigma2=0.2)._replace(suggested=None)
F = np.asarray(PROBLEM.f)
T = 40
BATCHED = {"C": 5.0}  # BBKB with C~ = 5: batches of 2 to 3 arms after the first 10 pulls on PROBLEM


def make(algorithm="bbkb", **kw):
    """An optimiser on PROBLEM with the runner's setting (noise-free: xi = 0 in the width, as the runner)."""
    kw = {"kernel": PROBLEM.kernel, "seed": 3, "horizon": T, "noise_std": 0.0, **kw}
    return Optimizer(PROBLEM.arms, algorithm, **kw)


def drive(opt, n=T):
    """Ask and tell noiseless rewards until n evaluations are told; all told indices in asked order."""
    while opt.n_told < n:
        idx, X = opt.ask()
        np.testing.assert_array_equal(X, PROBLEM.arms[idx])
        opt.tell(idx, F[idx])
    return np.concatenate([idx for idx, _ in opt.history])


def leaves(opt):
    return [np.asarray(x) for x in jax.tree.leaves(opt.state)]


def assert_same_state(a, b):
    la, lb = leaves(a), leaves(b)
    assert len(la) == len(lb)
    for x, y in zip(la, lb):
        assert x.dtype == y.dtype and np.array_equal(x, y)


@pytest.mark.parametrize("algorithm", sorted(ALGORITHMS))
def test_ask_tell_reproduces_the_runner_trajectory(algorithm):
    res = run(algorithm, PROBLEM._replace(noise_std=0.0), T=T, seed=3, progress=False)
    opt = make(algorithm)
    queries = drive(opt)
    np.testing.assert_array_equal(queries[:T], res.traces["query"][0])
    # batches end where the runner's rounds end (the last one may be cut at T by the runner)
    sizes = np.bincount(res.traces["batch_index"][0])
    np.testing.assert_array_equal([len(i) for i, _ in opt.history][:-1], sizes[:-1])
    if algorithm == "bbkb":
        assert sizes.max() > 1  # the comparison covers real batches

    # noisy feedback (xi = sqrt(lam), the default of both): tell the runner's rewards, get its queries
    res = run(algorithm, PROBLEM, T=T, seed=3, progress=False)
    reward = np.r_[res.traces["reward"][0], np.zeros(T)]  # zeros: past T, where the runner stops
    opt = make(algorithm, noise_std=None)
    while opt.n_told < T:
        idx, _ = opt.ask()
        opt.tell(idx, reward[opt.n_told:opt.n_told + len(idx)])
    np.testing.assert_array_equal(np.concatenate([i for i, _ in opt.history])[:T], res.traces["query"][0])


@pytest.mark.parametrize("algorithm", ["bbkb", "gp_ucb"])
def test_save_and_restore_mid_run_gives_the_uninterrupted_suggestions(tmp_path, algorithm):
    full = make(algorithm)
    expected = drive(full)

    part = make(algorithm)
    drive(part, 6)
    part.save(tmp_path / "a.npz")
    resumed = Optimizer.load(tmp_path / "a.npz")
    assert resumed.n_told == part.n_told and repr(resumed) == repr(part)
    assert_same_state(resumed, part)
    np.testing.assert_array_equal(drive(resumed), expected)
    assert_same_state(resumed, full)  # bit for bit

    # saved with a pending batch: the restored optimiser has the same batch pending
    part = make(algorithm)
    drive(part, 9)
    idx, X = part.ask()
    part.save(tmp_path / "b.npz")
    resumed = Optimizer.load(tmp_path / "b.npz")
    idx2, X2 = resumed.ask()
    np.testing.assert_array_equal(idx2, idx)
    np.testing.assert_array_equal(X2, X)
    np.testing.assert_array_equal(drive(resumed), expected)
    assert_same_state(resumed, full)
    assert sorted(os.listdir(tmp_path)) == ["a.npz", "b.npz"]  # no temporary files left behind


def test_ask_is_idempotent_and_tell_accepts_any_order():
    a, b = make(params=BATCHED), make(params=BATCHED)
    drive(a, 15)
    drive(b, 15)
    idx, X = a.ask()
    idx_again, X_again = a.ask()
    np.testing.assert_array_equal(idx, idx_again)
    np.testing.assert_array_equal(X, X_again)
    assert a.n_told == 16
    assert len(idx) > 1  # a real batch, so that the order matters
    perm = np.arange(len(idx))[::-1]
    a.tell(idx[perm], F[idx][perm])
    b_idx, _ = b.ask()
    b.tell(b_idx, F[b_idx])
    assert_same_state(a, b)
    np.testing.assert_array_equal(a.history[-1][0], idx)  # history keeps the asked order
    np.testing.assert_array_equal(a.history[-1][1], F[idx])


def test_bad_tells_raise_clear_errors_and_change_nothing():
    opt = make(params=BATCHED)
    with pytest.raises(ValueError, match="without a pending batch.*ask"):
        opt.tell([0], [1.0])
    drive(opt, 15)
    idx, X = opt.ask()
    n = len(idx)
    assert n >= 2 and len(set(idx.tolist())) >= 2
    outside = int(np.setdiff1d(np.arange(100), idx)[0])
    other = idx.copy()
    other[-1] = idx[idx != idx[-1]][0]  # the batch's arms, but another multiset
    ys = F[idx].copy()
    bad_calls = [
        (np.r_[idx[:-1], outside], ys, rf"key {outside} \(position {n - 1}\) is not in the pending batch"),
        (idx, ys[:-1], f"length mismatch: {n} keys but {n - 1} values"),
        (idx[:-1], ys[:-1], "whole pending batch"),
        (other, ys, "whole pending batch"),
        (idx, np.r_[ys[:1], np.nan, ys[2:]], r"rewards\[1\] = nan .*not finite"),
        (idx, np.r_[ys[:-1], np.inf], rf"rewards\[{n - 1}\] = inf .*not finite"),
        (idx.astype(float), ys, "keys must be a 1-D sequence of integers"),
        (idx[:, None], ys, "keys must be a 1-D sequence of integers"),
        (idx, ["a"] * n, "rewards must be a 1-D sequence of numbers"),
        (idx, ys[:, None], "rewards must be a 1-D sequence of numbers"),
    ]
    before, hist = leaves(opt), opt.history
    for bad_idx, bad_ys, message in bad_calls:
        with pytest.raises(ValueError, match=message):
            opt.tell(bad_idx, bad_ys)
        assert all(np.array_equal(x, y) for x, y in zip(before, leaves(opt)))
        assert opt.n_told == 16 and len(opt.history) == len(hist)
        np.testing.assert_array_equal(opt.ask()[0], idx)  # the same batch is still pending
    # after all that, the optimiser goes on exactly as an untroubled one
    opt.tell(idx, ys)
    clean = make(params=BATCHED)
    drive(clean, opt.n_told)
    assert_same_state(opt, clean)
    with pytest.raises(ValueError, match="without a pending batch"):
        opt.tell(idx, ys)  # the batch was already told


@pytest.fixture
def no_compile(monkeypatch):
    def boom(*a, **k):
        raise AssertionError("compilation started before the arguments were validated")

    monkeypatch.setattr(asktell, "finite_programs", boom)
    monkeypatch.setattr(asktell, "box_programs", boom)


@pytest.mark.parametrize("kwargs,message", [
    ({"candidates": np.zeros(5)}, r"candidates has shape \(5,\)"),
    ({"candidates": [[0.0, 1.0], [np.nan, 2.0]]}, "candidates contains NaN or inf.*row 1"),
    ({"candidates": "abc"}, "candidates must be a numeric"),
    ({"algorithm": "bkkb"}, "algorithm='bkkb'.*choose one of"),
    ({"params": {"lam": -1.0}}, "algorithm.lam=-1.0 is invalid"),
    ({"params": {"gamma": 1.0}}, "no parameter"),
    ({"kernel": {"name": "cosine"}}, "kernel.name='cosine'"),
    ({"kernel": {"name": "rbf", "sigma2": -2.0}}, "kernel.sigma2"),
    ({"horizon": 0}, "horizon=0 is invalid"),
    ({"seed": -1}, "seed=-1 is invalid"),
    ({"dtype": "float16"}, "dtype='float16' is invalid"),
    ({"noise_std": -0.5}, "noise_std=-0.5"),
])
def test_bad_arguments_are_named_before_compiling(no_compile, kwargs, message):
    args = {"candidates": PROBLEM.arms, "algorithm": "bbkb", **kwargs}
    with pytest.raises(ValueError, match=message):
        Optimizer(args.pop("candidates"), args.pop("algorithm"), **args)


def test_user_capacities_are_honoured_like_the_runners():
    for algorithm, params in (("sbpe", {"m_max": 64, "u_max": 128}), ("bbkb", {"m_max": 7, "u_max": 9}),
                              ("gp_ucb", {"u_max": 50})):
        caps = make(algorithm, params=params).capacities
        expected = {"m_max": params.get("m_max", 1), "u_max": min(params["u_max"], T)}
        assert caps == expected, (algorithm, caps)
    with pytest.raises(ValueError, match=r"algorithm='gssbo' is invalid; it optimises over a box: pass a sketchbo.Box"):
        make("gssbo")


@pytest.mark.extended
def test_capacity_growth_gives_the_trajectory_of_a_large_capacity():
    n = 25  # four growth steps of the dictionary: 2 -> 5 -> 9 -> 15 -> 24
    small, large = make(params={"m_max": 2}), make(params={"m_max": 100})
    np.testing.assert_array_equal(drive(small, n), drive(large, n))
    assert small.capacities["m_max"] >= 15
    # the exact engine runs out of slots while selecting: ask grows it and asks again
    small, large = make("gp_ucb", params={"u_max": 16}), make("gp_ucb")
    np.testing.assert_array_equal(drive(small, n), drive(large, n))
    assert small.capacities["u_max"] > 16


def test_optimises_a_plain_python_function(tmp_path):
    target = np.array([0.3, -0.5])

    def objective(x):
        return -float(np.sum((x - target) ** 2))

    g = np.linspace(-1.0, 1.0, 21)
    candidates = np.stack(np.meshgrid(g, g, indexing="ij"), -1).reshape(-1, 2)  # (441, 2)
    opt = Optimizer(candidates, "bbkb", params={"lam": 0.01, "F": 1.0}, horizon=60, seed=0)
    with pytest.raises(ValueError, match="at least one told evaluation"):
        opt.best()
    while opt.n_told < 60:
        idx, X = opt.ask()
        opt.tell(idx, [objective(x) for x in X])
    assert len(opt.history) < 60  # evaluated in batches
    index, point, mean = opt.best()
    np.testing.assert_array_equal(point, candidates[index])
    assert np.linalg.norm(point - target) < 0.15 and mean == pytest.approx(objective(point), abs=1e-12)
    opt.save(tmp_path / "opt.npz")
    restored = Optimizer.load(tmp_path / "opt.npz").best()
    assert (restored.index, restored.mean) == (index, mean)


def test_default_kernel_width_and_foreign_files(tmp_path):
    X = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
    assert api.median_sigma2(X) == 0.5  # squared distances 1, 1, 2, 1, 1 (the 0 of the repeat ignored)
    assert api.median_sigma2(np.zeros((3, 2))) == 1.0
    np.savez(tmp_path / "x.npz", a=np.zeros(3))
    with pytest.raises(ValueError, match="not a file written by Optimizer.save"):
        Optimizer.load(tmp_path / "x.npz")


def test_save_and_load_errors_name_the_file(tmp_path):
    opt = make("bbkb")
    missing = tmp_path / "no-such-dir" / "opt.npz"
    with pytest.raises(ValueError, match=r"Optimizer.save\(.*opt.npz'\): the directory .*no-such-dir' does not exist"):
        opt.save(missing)
    corrupt = tmp_path / "corrupt.npz"
    corrupt.write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(ValueError, match=r"Optimizer.load\(.*corrupt.npz'\): not a readable file"):
        Optimizer.load(corrupt)
    with pytest.raises(ValueError, match=r"Optimizer.load\(.*absent.npz'\)"):
        Optimizer.load(tmp_path / "absent.npz")
