"""One job of a resolved config, run without Hydra: the half of ``sketchbo-run`` after composition.

``sketchbo.cli`` composes a config with Hydra, then calls `run_job` with the resolved config of each
algorithm (a plain dict: ``cli.job_config``). ``scripts/run_jobs.py`` calls the same function on configs
composed elsewhere (``scripts/reproduce.py --export``), on machines that have JAX but not Hydra (the
accelerator machines): their results are the files ``sketchbo-run`` writes, complete for the same config.

Files of a job: ``config.yaml`` (when ``config_text`` is given), ``traces.npz``, ``curves.png`` when the
config's ``plots`` is true, W&B runs when the config's logger is ``wandb``, and ``summary.json`` last, whose
presence marks the result complete; then the checkpoint (``checkpoint_every`` rounds,
``<run_dir>/checkpoint.npz``) is deleted. A comparison (``algorithm=compare``) adds ``comparison.json`` and
``comparison.png`` (its members' curves on the same panels) in the directory above its members'.

Before anything compiles, `check_domains` and `check_hyperparameters` check the algorithm configs (compare
members, grid points) against the problem (``sketchbo-run`` checks every job of a sweep with them).
"""
from __future__ import annotations

import importlib
import json
import os
import sys
from pathlib import Path

import numpy as np

from sketchbo import approximation, certificates
from sketchbo.cli import results, tracking
from sketchbo.algorithms import domain_names, get_spec, register
from sketchbo.spec import AlgorithmSpec
from sketchbo.problems import CONTINUOUS_PROBLEMS, ContinuousProblem, make_problem
from sketchbo.engine.run import run
from sketchbo.cli.tracking import CURVES_FILE, RUNTIME_KEYS  # RUNTIME_KEYS: config keys that do not change a result

# Config keys added after paper-scale results were stored, with the value those results ran with: a stored
# config without the key is complete for a config that holds this value (tracking.load_complete's ``added``).
ADDED_KEYS = {"problem.shift": 0.0, "approximation": False}
CHECKPOINT_FILE = "checkpoint.npz"  # a job's checkpoint inside its run directory (grid runs: grid/)
COMPARISON_FIGURE = "comparison.png"  # a comparison's members drawn together, beside comparison.json
BOX_PROBLEMS = {*CONTINUOUS_PROBLEMS, "diabetes"}  # problems of the continuous algorithms (BO_ALGORITHMS)


def build_problem(problem: dict):
    """The problem of a config's ``problem`` section: ``make_problem(name, **other keys)``; a rejected key is
    named with its ``problem.`` prefix, as it is written on the command line."""
    kwargs = dict(problem)
    try:
        return make_problem(kwargs.pop("name"), **kwargs)
    except ValueError as err:
        message = str(err)
        if any(message.startswith(f"{key}=") for key in kwargs):
            raise ValueError(f"problem.{message}") from None
        raise


def kernel_override(config: dict) -> dict | None:
    """``None`` (the problem's kernel) when ``kernel.name`` is null, else the kernel dict."""
    kernel = config.get("kernel") or {}
    return None if kernel.get("name") is None else dict(kernel)


def load_spec(target, name):
    """Import ``module:ATTR`` (the working directory on the import path), check that it is an AlgorithmSpec
    named ``name`` and register it; ValueError naming ``algorithm.spec`` otherwise."""
    if not isinstance(target, str) or target.count(":") != 1:
        raise ValueError(f"algorithm.spec={target!r} is invalid; write module:NAME, e.g. my_ucb1:UCB1")
    module, attr = target.split(":")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        spec = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as err:
        raise ValueError(f"algorithm.spec={target!r} cannot be imported ({type(err).__name__}: {err})") from None
    if not isinstance(spec, AlgorithmSpec):
        raise ValueError(f"algorithm.spec={target!r} is a {type(spec).__name__}, not a sketchbo.AlgorithmSpec")
    if spec.name != name:
        raise ValueError(f"algorithm.spec={target!r} is named {spec.name!r}, but the config's name is {name!r}")
    register(spec, replace=True)


def hyperparameters(algo: dict) -> dict:
    """The runner's ``params`` of an algorithm config: every key but ``name`` and ``spec`` (a user's
    algorithm's ``module:NAME``)."""
    return {k: v for k, v in algo.items() if k not in ("name", "spec")}


def check_hyperparameters(algos: list[dict], T) -> None:
    """Validate every algorithm config before the first one compiles (ValueError naming the key).

    A T that is not an integer is left for ``run`` to report; only delta's default depends on it.
    """
    T = T if isinstance(T, int) else 1
    for algo in algos:
        get_spec(algo["name"]).resolve(hyperparameters(algo), T)


def check_domains(algos: list[dict], problem_name: str) -> None:
    """ValueError when an algorithm (a compare member too) cannot run on the problem's domain."""
    domain = "box" if problem_name in BOX_PROBLEMS else "arms"
    for algo in algos:
        if get_spec(algo["name"]).domain != domain:
            kind = "a continuous box" if domain == "box" else "a finite arm set"
            raise ValueError(f"algorithm {algo['name']!r} cannot run on problem={problem_name!r}, {kind}; "
                             f"algorithms for it: {domain_names(domain)}")


def uniform_gap(problem) -> float:
    """f* - mean f: the expected instant regret of uniform arm choice (R_t^unif = t · gap)."""
    f = np.asarray(problem.f, dtype=np.float64)
    return float(f.max() - f.mean())


def checkpoint_args(config: dict, directory: Path) -> dict:
    """The runners' checkpoint arguments: ``<directory>/checkpoint.npz`` every ``checkpoint_every`` rounds."""
    every = config.get("checkpoint_every")
    if every is None:
        return {"checkpoint": None, "checkpoint_every": None}
    return {"checkpoint": Path(directory) / CHECKPOINT_FILE, "checkpoint_every": every}


def remove_checkpoint(directory: Path) -> None:
    """Delete a job's checkpoint and any temporary file that a write killed half-way left beside it."""
    directory = Path(directory)
    (directory / CHECKPOINT_FILE).unlink(missing_ok=True)
    if directory.is_dir():
        tracking.remove_temporaries(directory)


def stored_result(run_dir: Path, config: dict) -> tuple[dict | None, str]:
    """``tracking.load_complete`` as every job runner checks a result: ``RUNTIME_KEYS`` ignored, ``ADDED_KEYS``
    at their old values (sketchbo-run, ``scripts/run_jobs.py``, ``scripts/reproduce.py``)."""
    return tracking.load_complete(run_dir, config, ignore=RUNTIME_KEYS, added=ADDED_KEYS)


def completed(run_dir: Path, config: dict) -> dict | None:
    """The stored summary when ``run_dir`` holds the complete result of ``config`` (then it says so)."""
    summary, why = stored_result(run_dir, config)
    if summary is not None:
        print(f"skipping: complete results in {run_dir}", flush=True)
    elif why:
        print(f"recomputing {run_dir}: {why}", flush=True)
    return summary


def run_job(config: dict, run_dir: Path, problem=None, config_text: str | None = None) -> dict:
    """Run the resolved config of one algorithm (``config["algorithm"]`` one algorithm's config), write its
    result files into ``run_dir`` and return its summary. ``problem``: the built problem (default: built from
    ``config["problem"]``)."""
    run_dir = Path(run_dir)
    algo = config["algorithm"]
    problem = build_problem(config["problem"]) if problem is None else problem
    common = dict(T=config["T"], n_seeds=config["n_seeds"], seed=config["seed"], params=hyperparameters(algo),
                  dtype=config["dtype"], seed_axis=config["seed_axis"], progress=config["progress"],
                  devices=config.get("devices"), **checkpoint_args(config, run_dir))
    if get_spec(algo["name"]).domain == "box" or isinstance(problem, ContinuousProblem):
        _check_continuous(algo["name"], problem, config)
        result = run(algo["name"], problem, **common)
        gap = result.hyperparameters["uniform_mean"] - problem.f_min
    else:
        result = run(algo["name"], problem, kernel=kernel_override(config), **common)
        result = result._replace(certificates=certificates.of_run(result, problem, kernel_override(config)))
        gap = uniform_gap(problem)
    summary = tracking.write_results(run_dir, result, config, uniform_gap=gap, config_text=config_text,
                                     approximation=approximation_of(config, result, problem))
    remove_checkpoint(run_dir)
    return summary


def approximation_of(config: dict, result, problem) -> list[dict] | None:
    """The sketch-accuracy certificates of a result (``approximation.of_run``, one dict per seed) when the config's
    ``approximation`` is true and the algorithm has a sketch-accuracy statement (bkb, bbkb, bbkb_local), else None."""
    if not config.get("approximation") or result.algorithm not in approximation.ALGORITHMS:
        return None
    return approximation.of_run(result, problem, kernel_override(config))


def ensure_curves(run_dir: Path, config: dict) -> None:
    """Draw ``curves.png`` for a complete result reused without one (stored before runs drew pictures, or run
    with ``plots=false``) when ``config`` asks for pictures; the result files are not touched."""
    run_dir = Path(run_dir)
    if not config.get("plots") or (run_dir / CURVES_FILE).exists():
        return
    try:
        result = results.load_result(run_dir)
    except results.ResultsError as err:
        print(f"warning: {run_dir / CURVES_FILE} not drawn ({err})", file=sys.stderr)
        return
    tracking.write_curves(run_dir, result.summary, result.traces)


def write_comparison_figure(run_dir: Path, members: list[str]) -> Path | None:
    """Draw the members' results of a comparison (``<run_dir>/<member>/``) on the same panels into
    ``<run_dir>/comparison.png`` (``pictures.write_overlay``, atomically); return its path. As for a result's
    ``curves.png``, a picture that cannot be drawn is a warning on stderr and None."""
    from sketchbo.cli import pictures, plots  # lazy: matplotlib is imported only by runs that draw

    path = Path(run_dir) / COMPARISON_FIGURE
    try:
        drawn = [results.load_result(Path(run_dir) / m) for m in members]
        first = drawn[0]
        title = (f"{', '.join(plots.result_label(r) for r in drawn)} on {first.problem}: T = {first.T}, "
                 f"{pictures.seeds_text(first.summary.get('seeds') or [])}\n{pictures.BAND_NOTE}")
        return pictures.write_overlay(path, drawn, title)
    except Exception as err:  # noqa: BLE001 (as tracking.write_curves: the results must not be lost)
        print(f"warning: {path} not drawn ({type(err).__name__}: {err})", file=sys.stderr)
        return None


def write_comparison(run_dir: Path, T: int, n_seeds: int, members: list[str], summaries: list[dict]) -> None:
    """Write a comparison's ``<run_dir>/comparison.json`` (its members' rows of the comparison table) from
    the members' summaries, in order, unless an identical one is already there."""
    comparison = tracking.to_jsonable({
        "problem": summaries[0]["problem"], "T": T, "n_seeds": n_seeds, "seeds": summaries[0]["seeds"],
        "members": list(members), "rows": [tracking.table_row(s) for s in summaries],
    })
    path = Path(run_dir) / "comparison.json"
    try:
        if json.loads(path.read_text(encoding="utf-8")) == comparison:
            return
    except (OSError, ValueError):
        pass
    tracking.atomic_write_json(path, comparison)


def _check_continuous(name: str, problem, config: dict) -> None:
    if get_spec(name).domain != "box":
        raise ValueError(f"problem {problem.name!r} is a continuous domain; algorithm={name!r} runs on "
                         f"finite arm sets. Continuous algorithms: {domain_names('box')}")
    if kernel_override(config) is not None:
        raise ValueError(f"kernel.name={config['kernel']['name']!r}: continuous-domain algorithms fit their own "
                         "Matérn-5/2 ARD kernel; use kernel=problem_default")


__all__ = ["ADDED_KEYS", "BOX_PROBLEMS", "CHECKPOINT_FILE", "COMPARISON_FIGURE", "RUNTIME_KEYS", "approximation_of",
           "build_problem", "check_domains", "check_hyperparameters", "checkpoint_args", "completed", "ensure_curves",
           "hyperparameters", "kernel_override", "load_spec", "remove_checkpoint", "run_job", "stored_result",
           "uniform_gap", "write_comparison", "write_comparison_figure"]
