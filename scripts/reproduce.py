"""Reproduce the papers' figures: run every experiment of ``experiments/*.yaml`` job by job, then every plot script.

    scripts/reproduce.sh quick                      # the whole set at quick scale (minutes on a laptop CPU)
    scripts/reproduce.sh paper                      # the papers' scale (T = 10^4, 10 seeds: hours)
    scripts/reproduce.sh quick --only bkb_fig1 bbkb_sweep
    scripts/reproduce.sh paper --only gssbo_fig2 --seeds 10 --seeds std_gp_ucb=3   # 10 seeds, GP-UCB 3
    scripts/reproduce.sh paper --sweeps hydra/launcher=slurm hydra.launcher.partition=cpu   # whole sweeps, a launcher
    scripts/reproduce.sh quick --plots-only         # redraw from the results on disk
    scripts/reproduce.sh paper --dry-run            # the plan: what is complete, what would run, the estimate
    scripts/reproduce.sh paper --only gssbo_fig2 --seeds 50 --export jobs.json   # for a machine without Hydra

Each ``experiments/<figure>.yaml`` names its result set (``results``), its plot script (``plot``) and,
per scale, the commands writing the result set (``runs``): ``sketchbo: <overrides>`` is a
``sketchbo-run -m <overrides>`` sweep whose jobs go to ``<results dir>/<scale>/<result set>/<job overrides>/``
(``hydra.sweep.dir``; one directory per (problem, algorithm, swept value)), ``script: <path> [args]`` a
Python script called with ``--out <result set dir>``. The figure is written to
``<figures dir>/<scale>/<figure>.png`` and ``.pdf``. A result set shared by several figures (Fig. 2 reads
Fig. 1's runs) is computed once. ``reads`` (optional, per scale) names further result sets the plot reads
(each passed as ``--also <dir>``), so that runs another figure already makes are not run twice (GSSBO
Fig. 4 at paper scale takes GSSBO at Z = 4, RSSBO and GP-UCB from Fig. 2's runs). A ``reads`` entry may
select the jobs the plot needs, ``"gssbo_fig2 algorithm=gssbo,rssbo problem=hartmann6"`` (keys ``algorithm``
and ``problem``, values of the composed job): making only that figure then runs only those jobs of the other
set, not the whole of it.

Job by job. Every sweep is expanded here into its jobs (Hydra's own basic-sweeper expansion, so the job
directories are those of the sweep), and each job is its own ``sketchbo-run -m <one value per key>``
process. Before running anything, every job's directory is checked for the complete result of the job's
resolved config (``tracking.load_complete``, as ``sketchbo-run`` does); complete jobs are skipped
(``skipping: complete results in <dir>``) without starting a process, so re-running the same command
continues where it stopped. A job killed half-way resumes from its checkpoint (``<job dir>/checkpoint.npz``,
written every ``checkpoint_every`` rounds, ``sketchbo/cli/configs/config.yaml``); the progress line says so. Script
entries always run (each script skips its own complete output). ``--sweeps`` runs one ``sketchbo-run -m``
per entry instead (the previous behaviour; for the ``parallel`` and ``slurm`` launchers, which run a sweep's
jobs at once).

Seeds. ``--seeds N`` sets ``n_seeds=N`` in every ``sketchbo`` job, ``--seeds ALGO=N`` (repeatable) for one
algorithm config only, after the general value: ``--seeds 10 --seeds std_gp_ucb=3`` runs everything at 10
seeds except GP-UCB at 3. The seed count is part of a job's directory name (Hydra's ``override_dirname``),
so runs at different counts sit side by side; the plot scripts use the one with the most seeds. A job
whose seeds are all in a complete result beside it (the same config on seeds that include its own, e.g.
``n_seeds=3`` for ``--seeds std_gp_ucb=1``), or in complete results beside it on consecutive disjoint seeds
(``seed=0 n_seeds=3`` and ``seed=3 n_seeds=7`` for ``n_seeds=10``: the plots read those as one result), is
skipped as complete: ``skipping: complete results in <that dir> (its seeds include those of <the job's dir>)``.

Progress and estimate. Before each job: ``[3/14 done, 11 left] gssbo_fig2 hartmann6 gssbo — ETA 12 min``.
The estimate of a job is a rate times its size T × n_seeds: the rate (seconds per evaluation and seed)
pooled over the timed jobs of the same algorithm on the same problem, else of the same algorithm, else of
all ``sketchbo`` jobs (scripts: the same script). Timed jobs are those finished in this invocation (the
wall time of their process, start-up and compilation included) and those already complete on disk (the
``wall_time_s`` recorded in their ``summary.json``: compilation included, process start-up not). The ETA is
the sum of the estimates of this job and those after it. The other complete results in the same result sets
count too (``wall_time_s``, algorithm, problem, T and seed count of their ``summary.json``): a job at 10
seeds is estimated from the same algorithm's 1-seed run on the same problem, whose directory differs. Jobs
nothing is known about yet are counted
apart (``ETA >= 12 min, 2 jobs not timed yet``). Costs that grow faster than linearly in T (exact GP-UCB)
are underestimated when T differs between the timed and the estimated job.

Machines without Hydra (the accelerators). ``--export FILE`` writes the pending ``sketchbo`` jobs, with their
resolved configs and their directories relative to the results root, instead of running them;
``scripts/run_jobs.py FILE --results <root>`` runs them there with the code ``sketchbo-run`` runs after
composition (``sketchbo.cli.jobs``). Copied back into the results root, they count as complete here.

Extra ``key=value`` arguments are passed to every ``sketchbo-run`` command (e.g. ``progress=false``, a
launcher); ``problem.*`` keys cannot be (the sweeps over problems are composed from the default problem
first): give the data directory as ``SKETCHBO_DATA_DIR`` instead. ``algorithm=`` and ``problem=`` replace the
values of a selected figure's own runs (``--only gssbo_fig2 problem=powell50`` runs every Fig. 2 method on
Powell50), but in a result set that the selected figures only read they select among its jobs:
``--only gssbo_dkl_bnn algorithm=bnn_ucb`` runs BNN-UCB and nothing of Fig. 2, whose methods do not include it.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import NamedTuple

import yaml
from hydra.errors import HydraException

REPO = Path(__file__).resolve().parent.parent
EXPERIMENTS = REPO / "experiments"
CONFIGS = REPO / "sketchbo" / "cli" / "configs"
SCALES = ("quick", "paper")
RUN_KINDS = ("sketchbo", "script")
LABEL_KEYS = ("problem", "algorithm")  # named first in a job's label, by value
SELECT_KEYS = ("algorithm", "problem")  # keys of a `reads` entry's job selection


class SpecError(Exception):
    """An experiment file is malformed."""


RECORDS_INDEX = "records.yaml"  # experiments/records.yaml indexes the committed records; it is no experiment


def load_specs(directory: Path = EXPERIMENTS) -> dict:
    """The experiment specs ``{figure name: spec}``, validated, in file-name order."""
    specs = {}
    for path in sorted(Path(directory).glob("*.yaml")):
        if path.name == RECORDS_INDEX:
            continue
        spec = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        where = path.relative_to(REPO) if path.is_relative_to(REPO) else path
        for key in ("name", "results", "plot"):
            if not isinstance(spec.get(key), str) or not spec[key].strip():
                raise SpecError(f"{where}: missing or empty {key!r}")
        if spec["name"] in specs:
            raise SpecError(f"{where}: figure name {spec['name']!r} is used twice")
        runs = spec.get("runs")
        if runs is not None:
            if not isinstance(runs, dict) or set(runs) != set(SCALES):
                raise SpecError(f"{where}: 'runs' must have exactly the scales {list(SCALES)}")
            for scale, entries in runs.items():
                for entry in entries or []:
                    if not (isinstance(entry, dict) and len(entry) == 1 and next(iter(entry)) in RUN_KINDS
                            and isinstance(next(iter(entry.values())), str)):
                        raise SpecError(f"{where}: runs.{scale} entry {entry!r} must be one of "
                                        f"{{sketchbo: <overrides>}} or {{script: <path> [args]}}")
        reads = spec.get("reads")
        if reads is not None and not (isinstance(reads, dict) and set(reads) <= set(SCALES) and all(
                isinstance(sets, list) and all(isinstance(x, str) and x.split() for x in sets)
                for sets in reads.values())):
            raise SpecError(f"{where}: 'reads' must map scales {list(SCALES)} to lists of result-set names")
        for entries in (reads or {}).values():
            for entry in entries:
                read_entry(entry, where)
        specs[spec["name"]] = {**spec, "file": str(where)}
    owners = {}
    for spec in specs.values():
        if spec.get("runs") is not None:
            if spec["results"] in owners:
                raise SpecError(f"{spec['file']}: result set {spec['results']!r} is also written by "
                                f"{owners[spec['results']]}")
            owners[spec["results"]] = spec["file"]
    for spec in specs.values():
        for result_set in [spec["results"], *read_sets(spec)]:
            if result_set not in owners:
                raise SpecError(f"{spec['file']}: no experiment has runs writing the result set {result_set!r}")
    return specs


def read_entry(text: str, where: object = "reads") -> tuple[str, dict]:
    """``(result set, {key: allowed values})`` of a ``reads`` entry ``"<result set> [key=v1,v2 ...]"``."""
    name, *selectors = text.split()
    selection = {}
    for selector in selectors:
        key, _, values = selector.partition("=")
        if key not in SELECT_KEYS or not values or key in selection:
            raise SpecError(f"{where}: reads entry {text!r}: {selector!r} is not a job selection; write "
                            f"<key>=<value>[,<value>...] with each key once, key one of {list(SELECT_KEYS)}")
        selection[key] = set(values.split(","))
    return name, selection


def read_entries(spec: dict, scale: str | None = None) -> list[tuple[str, dict]]:
    """The further result sets a figure's plot reads at ``scale`` (every scale's when None), with the
    selection of their jobs the plot needs."""
    reads = spec.get("reads") or {}
    scales = SCALES if scale is None else (scale,)
    return [read_entry(entry, spec.get("file", "reads")) for s in scales for entry in reads.get(s) or []]


def read_sets(spec: dict, scale: str | None = None) -> list[str]:
    """The names of the further result sets a figure's plot reads at ``scale`` (every scale's when None)."""
    return [result_set for result_set, _ in read_entries(spec, scale)]


def selected(job: "Job", selection: dict) -> bool:
    """Whether a job's algorithm and problem are among a selection's values (a key not named: any value)."""
    values = {"algorithm": job.algorithm, "problem": job.problem}
    return all(values[key] in allowed for key, allowed in selection.items())


# ------------------------------------------------------------------------------------------ jobs

class Job(NamedTuple):
    """One result-writing job: what the estimate needs and where its results go."""

    kind: str  # "sketchbo" or "script"
    algorithm: str  # algorithm config name (a script: its path)
    problem: str  # problem name ("" for a script)
    evals: int  # T × n_seeds (1 for a script): the size the time estimate scales with
    directory: Path  # the job directory (a script: its --out directory)
    results: tuple  # ((result dir, resolved config), ...) the job writes; () = unknown: always run
    error: str = ""  # why its config does not compose ("" when it does); sketchbo-run reports it when run


class Unit(NamedTuple):
    """One process to run: a single job (default) or a whole sweep (``--sweeps``)."""

    label: str
    cmd: list
    jobs: tuple  # the Jobs it runs


def seed_count(seeds: dict, algorithm: str) -> int | None:
    """``--seeds``' count for an algorithm config (None: keep the experiment's)."""
    return seeds.get(algorithm, seeds.get(None))


def with_seeds(overrides: list[str], seeds: dict) -> list[str]:
    """One job's overrides with ``n_seeds`` replaced (or added) as ``--seeds`` asks."""
    values = dict(o.split("=", 1) for o in overrides if "=" in o)
    n = seed_count(seeds, values.get("algorithm", "compare"))
    if n is None:
        return overrides
    return [o for o in overrides if not o.startswith("n_seeds=")] + [f"n_seeds={n}"]


def expand_sweep(arguments: list[str]) -> tuple[list[str], list[str], list[list[str]]]:
    """``(hydra overrides, task overrides, [task overrides of each job])`` of ``sketchbo-run -m <arguments>``,
    the jobs in Hydra's basic-sweeper order and spelling (the spelling names the job directories)."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parsed = OverridesParser.create().parse_overrides(arguments)
    hydra_overrides = [o.input_line for o in parsed if o.is_hydra_override()]
    task = [o for o in parsed if not o.is_hydra_override()]
    (jobs,) = BasicSweeper.split_arguments(task, None)
    return hydra_overrides, [o.input_line for o in task], jobs


def sketchbo_import():
    """The CLI helpers (imported on first use: they load JAX)."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    from sketchbo.cli import app as cli
    from sketchbo.cli import tracking

    return cli, tracking


def describe_job(overrides: list[str], out: Path) -> Job:
    """The Job of one ``sketchbo-run`` job: its directory and the results it writes, from its composed config.

    A config that does not compose or validate gives a Job whose results are unknown (it runs and
    ``sketchbo-run`` reports the problem).
    """
    from hydra import compose
    from omegaconf import OmegaConf

    cli, _ = sketchbo_import()
    values = dict(o.split("=", 1) for o in overrides if "=" in o)
    try:
        cfg = compose(config_name="config", overrides=overrides, return_hydra_config=True)
        directory = out / cfg.hydra.job.override_dirname
        with_hydra = OmegaConf.to_container(cfg)
        del with_hydra["hydra"]
        cfg = OmegaConf.create(with_hydra)
        cli.check_run_keys(cfg)
        algos = cli.algorithm_configs(cfg)
        compare = cfg.algorithm.name == cli.COMPARE
        grid = bool(cli.grid_of(cfg))
        evals = int(cfg.T) * int(cfg.n_seeds)
        results = () if grid else tuple(
            (directory / a["name"] if compare else directory, cli.job_config(cfg, a)) for a in algos)
        return Job("sketchbo", str(cfg.algorithm.name), str(cfg.problem.name), evals, directory, results)
    except Exception as err:  # noqa: BLE001 (any composition error: sketchbo-run reports it)
        return Job("sketchbo", values.get("algorithm", "?"), values.get("problem", "?"), 0, out, (),
                   f"{type(err).__name__}: {err}".splitlines()[0])


def job_label(result_set: str, job: Job, overrides: list[str], swept: set) -> str:
    """``<result set> <problem> <algorithm> [other swept key=value ...]``."""
    others = [o for o in overrides if o.split("=", 1)[0] in swept and o.split("=", 1)[0] not in LABEL_KEYS]
    return " ".join([result_set, job.problem, job.algorithm, *others])


class Entry(NamedTuple):
    """One ``sketchbo: <overrides>`` entry, expanded into its jobs (each composed once)."""

    result_set: str
    text: str  # the entry's overrides, as written
    base: list  # the command up to the overrides
    task: list  # the sweep's task overrides (a whole-sweep command)
    tail: list  # hydra.sweep.dir and Hydra's own overrides
    overrides: list  # per job: its overrides (one value per key)
    jobs: list  # per job: its Job


def expand_entry(result_set: str, text: str, out: Path, extra: list[str], seeds: dict) -> Entry:
    hydra_overrides, task, jobs = expand_sweep([*shlex.split(text), f"experiment.name={result_set}", *extra])
    jobs = [with_seeds(o, seeds) for o in jobs]
    return Entry(result_set, text, [sys.executable, "-m", "sketchbo", "-m"], task,
                 [f"hydra.sweep.dir={out}", *hydra_overrides], jobs, [describe_job(o, out) for o in jobs])


def sweep_unit(entry: Entry, seeds: dict) -> Unit:
    """The whole sweep as one ``sketchbo-run -m`` process (``--sweeps``)."""
    counts = {seed_count(seeds, job.algorithm) for job in entry.jobs}
    if len(counts) > 1:
        raise SpecError(f"--sweeps with per-algorithm --seeds: the sweep {entry.text!r} would mix the seed counts "
                        f"{sorted(counts)}; run it job by job (without --sweeps)")
    (count,) = counts
    task = entry.task
    if count is not None:
        task = [o for o in task if not o.startswith("n_seeds=")] + [f"n_seeds={count}"]
    return Unit(f"{entry.result_set} ({len(entry.jobs)} jobs: {entry.text})", [*entry.base, *task, *entry.tail],
                tuple(entry.jobs))


def job_units(entry: Entry) -> list[Unit]:
    """One ``sketchbo-run -m`` process per job, labelled by the keys the sweep varies."""
    swept = {key for key in {o.split("=", 1)[0] for o in entry.overrides[0]}
             if len({o for job in entry.overrides for o in job if o.split("=", 1)[0] == key}) > 1}
    return [Unit(job_label(entry.result_set, job, o, swept), [*entry.base, *o, *entry.tail], (job,))
            for o, job in zip(entry.overrides, entry.jobs)]


def script_unit(result_set: str, text: str, out: Path) -> Unit:
    script, *args = shlex.split(text)
    cmd = [sys.executable, str(REPO / script), *args, "--out", str(out)]
    return Unit(f"{result_set} {script}", cmd, (Job("script", text, "", 1, out, ()),))


def run_units(specs: dict, figures: list[str], scale: str, results: Path, extra: list[str],
              seeds: dict | None = None, sweeps: bool = False) -> list[Unit]:
    """The units of every run the selected figures need, each result set once.

    A result set that a selected figure writes runs whole, ``extra`` appended to its commands. One that the
    selected figures only read runs the jobs some ``reads`` entry selects, and ``extra``'s ``algorithm=`` and
    ``problem=`` select among those instead of replacing their values.
    """
    from hydra import initialize_config_dir

    needed = {}  # result set -> the job selections that need it ({} = every job)
    for name in figures:
        for result_set, selection in [(specs[name]["results"], {}), *read_entries(specs[name], scale)]:
            needed.setdefault(result_set, []).append(selection)
    chosen = {key: set(value.split(",")) for key, value in (o.split("=", 1) for o in extra if "=" in o)
              if key in SELECT_KEYS}
    units = []
    with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
        for result_set, selections in needed.items():
            owner = next(s for s in specs.values() if s["results"] == result_set and s.get("runs") is not None)
            out = results / scale / result_set
            read_only = {} not in selections
            passed = [o for o in extra if o.split("=", 1)[0] not in SELECT_KEYS] if read_only else extra
            for entry in owner["runs"][scale] or []:
                (kind, text), = entry.items()
                if kind == "script":
                    units.append(script_unit(result_set, text, out))
                    continue
                entry = expand_entry(result_set, text, out, passed, seeds or {})
                if not read_only:
                    units += [sweep_unit(entry, seeds or {})] if sweeps else job_units(entry)
                    continue
                # only read: the selected jobs, or the whole sweep (--sweeps) when it is all selected
                each = job_units(entry)
                kept = [u for u in each if selected(u.jobs[0], chosen)
                        and any(selected(u.jobs[0], selection) for selection in selections)]
                units += [sweep_unit(entry, seeds or {})] if sweeps and kept and len(kept) == len(each) else kept
    return units


def plot_commands(specs: dict, figures: list[str], scale: str, results: Path, out: Path) -> list[tuple[str, list[str]]]:
    commands = []
    for name in figures:
        script, *args = shlex.split(specs[name]["plot"])
        also = [a for read in read_sets(specs[name], scale) for a in ("--also", str(results / scale / read))]
        cmd = [sys.executable, str(REPO / script), *args, "--results", str(results / scale / specs[name]["results"]),
               *also, "--out", str(out / scale)]
        commands.append((name, cmd))
    return commands


# ------------------------------------------------------------------------------ completeness, estimate

def stored(job: Job) -> list[tuple[tuple[Path, ...], tuple[dict, ...]]] | None:
    """Per result of a job, the directories holding it and their summaries; None when any result is missing (or
    unknown). A result is found in its own directory or, for a single-algorithm job, in sibling directories of
    the same result set that hold the same config on seeds that include its own (``covering``)."""
    if not job.results:
        return None
    found = []
    for directory, config in job.results:
        summary = complete_summary(directory, config)
        if summary is not None:
            found.append(((directory,), (summary,)))
        elif directory == job.directory and (others := covering(directory, config)) is not None:
            found.append((tuple(d for d, _ in others), tuple(s for _, s in others)))
        else:
            return None
    return found


def covering(directory: Path, config: dict) -> list[tuple[Path, dict]] | None:
    """Complete results beside ``directory`` that hold ``config``'s seeds (seed, ..., seed + n_seeds - 1): the
    same config but for ``seed`` and ``n_seeds``, either one result whose seeds include them or consecutive
    results on disjoint seeds (``seed=0 n_seeds=3`` and ``seed=3 n_seeds=7`` for seeds 0-9; ``plots.seed_chain``,
    by which the plots read them as one result, ``plots.join_seed_slices``). A seed's trajectory is a function of its seed
    (tests/test_conformance.py checks it bit for bit over short runs). ``[(directory, summary), ...]`` or None."""
    first, n = int(config["seed"]), int(config["n_seeds"])
    slices = []  # (first seed, seed count, directory, summary) of every complete sibling of the same config
    for path in sorted(directory.parent.glob("*/summary.json")):
        try:
            stored_config = json.loads(path.read_text())["config"]
            seed, count = int(stored_config["seed"]), int(stored_config["n_seeds"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if path.parent == directory:
            continue
        summary = complete_summary(path.parent, {**config, "seed": seed, "n_seeds": count})
        if summary is not None:
            slices.append((seed, count, path.parent, summary))
    sketchbo_import()
    from sketchbo.cli.plots import seed_chain

    chain = seed_chain(slices, first, until=first + n)
    if not chain or chain[-1][0] + chain[-1][1] < first + n:
        return None
    return [(found, summary) for _, _, found, summary in chain]


def complete_summary(directory: Path, config: dict) -> dict | None:
    """The summary of the complete result of ``config`` in ``directory`` (as ``sketchbo-run`` checks it), or None."""
    sketchbo_import()
    from sketchbo.cli.jobs import stored_result

    return stored_result(directory, config)[0]


def has_checkpoint(unit: Unit) -> bool:
    return any(job.kind == "sketchbo" and job.directory.is_dir() and next(job.directory.rglob("checkpoint.npz"), None)
               for job in unit.jobs)


class Estimator:
    """Seconds per evaluation and seed, pooled over timed jobs; see the module docstring."""

    def __init__(self):
        self.samples = []  # (kind, algorithm, problem, evals, seconds)

    def add(self, job: Job, seconds: float) -> None:
        if job.evals > 0:
            self.samples.append((job.kind, job.algorithm, job.problem, job.evals, float(seconds)))

    def estimate(self, job: Job) -> float | None:
        """Seconds the job should take, or None when no comparable job was timed."""
        if job.evals <= 0:
            return None
        levels = [lambda s: s[1] == job.algorithm and s[2] == job.problem, lambda s: s[1] == job.algorithm]
        if job.kind == "sketchbo":
            levels.append(lambda s: True)
        for level in levels:
            pool = [s for s in self.samples if s[0] == job.kind and level(s)]
            if pool:
                return sum(s[4] for s in pool) / sum(s[3] for s in pool) * job.evals
        return None

    def add_stored(self, units: list[Unit]) -> None:
        """Time the other complete results in the result sets of ``units``' jobs: those no job of ``units``
        writes (other seed counts or overrides), read from their ``summary.json``."""
        jobs = [job for unit in units for job in unit.jobs if job.kind == "sketchbo"]
        owned = {job.directory for job in jobs}
        for result_set in sorted({job.directory.parent for job in jobs}):
            for path in sorted(result_set.glob("*/summary.json")):
                if path.parent in owned or not (path.parent / "traces.npz").is_file():
                    continue
                try:
                    s = json.loads(path.read_text())
                    other = Job("sketchbo", s["algorithm"], s["problem"], int(s["T"]) * int(s["n_seeds"]),
                                path.parent, ())
                    self.add(other, float(s["wall_time_s"]))
                except (OSError, ValueError, KeyError, TypeError):
                    continue  # unreadable or from another version: no estimate from it

    def remaining(self, units: list[Unit]) -> tuple[float, int]:
        """(estimated seconds, number of jobs without an estimate) of ``units``."""
        total, unknown = 0.0, 0
        for unit in units:
            for job in unit.jobs:
                seconds = self.estimate(job)
                total, unknown = (total + seconds, unknown) if seconds is not None else (total, unknown + 1)
        return total, unknown


def duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def eta(estimator: Estimator, units: list[Unit]) -> str:
    seconds, unknown = estimator.remaining(units)
    if unknown == 0:
        return f"ETA {duration(seconds)}"
    jobs = f"{unknown} job{'s' if unknown > 1 else ''} not timed yet"
    return f"ETA unknown ({jobs})" if seconds == 0 else f"ETA >= {duration(seconds)}, {jobs}"


def progress_line(done: int, pending: list[Unit], estimator: Estimator) -> str:
    unit = pending[0]
    resume = " (resuming from its checkpoint)" if has_checkpoint(unit) else ""
    counts = f"[{done}/{done + len(pending)} done, {len(pending)} left]"
    return f"{counts} {unit.label}{resume} — {eta(estimator, pending)}"


class Done(NamedTuple):
    """A unit whose results are all complete, and the directories that hold them."""

    unit: Unit
    directories: tuple  # per result, a tuple: the job's own directory, or the siblings that cover its seeds (``covering``)


def split_complete(units: list[Unit], estimator: Estimator) -> tuple[list[Done], list[Unit]]:
    """(complete units, pending units); the recorded times of complete jobs, and of the other complete
    results in their result sets, feed the estimator."""
    estimator.add_stored(units)
    complete, pending = [], []
    for unit in units:
        found = [stored(job) for job in unit.jobs]
        for job, results in zip(unit.jobs, found):
            # its own results only: a covering sibling's time is already in (add_stored), at its own size
            if results is not None and all(len(ds) == 1 and job.directory in (ds[0], ds[0].parent) for ds, _ in results):
                estimator.add(job, sum(float(s.get("wall_time_s", 0.0)) for _, ss in results for s in ss))
        if all(results is not None for results in found):
            complete.append(Done(unit, tuple(ds for results in found for ds, _ in results)))
        else:
            pending.append(unit)
    return complete, pending


# ------------------------------------------------------------------------------------------ main

def parse_seeds(parser, values) -> dict:
    """``--seeds`` values ``N`` / ``ALGO=N`` as ``{None or ALGO: N}``."""
    seeds = {}
    known = sorted(p.stem for p in (CONFIGS / "algorithm").glob("*.yaml"))
    for value in values or []:
        name, _, count = value.rpartition("=")
        if not re.fullmatch(r"[1-9]\d*", count) or (name and name not in known):
            parser.error(f"--seeds {value!r}: give N or ALGO=N with N >= 1 and ALGO one of {known}")
        seeds[name or None] = int(count)
    return seeds


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        prog="reproduce.sh", description="Run the experiments of experiments/*.yaml job by job and draw the figures.",
        epilog="Other KEY=VALUE arguments are passed to every sketchbo-run command.")
    parser.add_argument("scale", nargs="?", default="quick", choices=SCALES, help="quick (default) or paper")
    parser.add_argument("--only", nargs="+", metavar="FIGURE", help="figures to make (default: all)")
    parser.add_argument("--results", type=Path, default=REPO / "results",
                        help="results root; runs go to <results>/<scale>/<result set> "
                             "(default: results/ in the repository)")
    parser.add_argument("--figures", type=Path, default=REPO / "figures",
                        help="figures root; files go to <figures>/<scale>/ (default: figures/ in the repository)")
    parser.add_argument("--experiments", type=Path, default=EXPERIMENTS,
                        help="directory of the experiment files (default: experiments/ in the repository)")
    parser.add_argument("--seeds", action="append", metavar="N|ALGO=N",
                        help="n_seeds of every sketchbo job (N), or of one algorithm config's jobs (ALGO=N); "
                             "repeatable, e.g. --seeds 10 --seeds std_gp_ucb=3")
    parser.add_argument("--sweeps", action="store_true",
                        help="one sketchbo-run -m per experiment entry instead of one process per job "
                             "(for the parallel and slurm launchers)")
    parser.add_argument("--plots-only", action="store_true",
                        help="draw the figures from the results on disk, run nothing")
    parser.add_argument("--dry-run", action="store_true",
                        help="print the plan (complete jobs, commands to run, the estimate) without running")
    parser.add_argument("--export", type=Path, metavar="FILE",
                        help="write the pending sketchbo jobs (resolved configs, directories relative to --results) "
                             "to FILE for scripts/run_jobs.py on a machine without Hydra, and run nothing")
    args, rest = parser.parse_known_args(argv)
    if args.only:  # `--only FIG ... key=value`: the overrides after the figure names are overrides
        rest += [a for a in args.only if "=" in a]
        args.only = [a for a in args.only if "=" not in a] or None
    bad = [a for a in rest if "=" not in a or a.startswith("-")]
    if bad:
        parser.error(f"unrecognized arguments: {' '.join(bad)} (extra sketchbo-run overrides look like key=value)")
    args.overrides = rest
    args.seeds = parse_seeds(parser, args.seeds)
    if args.export and (args.plots_only or args.sweeps):
        parser.error("--export writes the pending jobs one by one: not with --plots-only or --sweeps")
    return parser, args


def execute(cmd: list[str], env: dict) -> float:
    """Run one command in the repository root, echoing it; return its wall time; exit on failure."""
    print("$ " + shlex.join(cmd), flush=True)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO, env=env)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        print(f"reproduce.sh: error: command failed with exit status {proc.returncode} after {elapsed:.0f} s: "
              f"{shlex.join(cmd)}", file=sys.stderr)
        sys.exit(proc.returncode if 0 < proc.returncode < 128 else 1)
    return elapsed


def report_complete(complete: list[Done], prefix: str = "") -> None:
    for done in complete:
        asked = [directory for job in done.unit.jobs for directory, _ in job.results]
        for wanted, directories in zip(asked, done.directories):
            if directories == (wanted,):
                print(f"{prefix}skipping: complete results in {wanted}", flush=True)
            else:
                theirs = "its seeds include" if len(directories) == 1 else "their seeds include"
                print(f"{prefix}skipping: complete results in {' + '.join(map(str, directories))} ({theirs} those of "
                      f"{wanted.name})", flush=True)


def export_jobs(path: Path, pending: list[Unit], results: Path, scale: str) -> None:
    """Write the pending sketchbo jobs' results to run (``scripts/run_jobs.py``) as JSON at ``path``: label,
    directory relative to ``results``, resolved config and ``config.yaml`` text of each; say what is left out
    (script entries and grids: run them here)."""
    cli, tracking = sketchbo_import()
    jobs, left_out = [], []
    for unit in pending:
        for job in unit.jobs:
            if job.error:
                left_out.append(f"{unit.label} (its config does not compose: {job.error})")
                continue
            if job.kind != "sketchbo" or not job.results:
                left_out.append(f"{unit.label} (a script or a grid: run it here)")
                continue
            for directory, config in job.results:
                entry = {"label": unit.label if len(job.results) == 1 else f"{unit.label} {config['algorithm']['name']}",
                         "dir": directory.relative_to(results).as_posix(), "config": config,
                         "config_text": cli.config_text(config)}
                if directory != job.directory:  # a member of a comparison: comparison.json goes to the job's dir
                    entry["comparison"] = job.directory.relative_to(results).as_posix()
                jobs.append(entry)
    tracking.atomic_write_json(path, {"what": f"scripts/run_jobs.py {path.name} --results <root>: "
                                              "the jobs' results go to <root>/<dir>", "scale": scale, "jobs": jobs})
    print(f"exported {len(jobs)} job(s) to {path}; run them with: PYTHONPATH=. python scripts/run_jobs.py {path} "
          f"--results <root> --archive <file>.tar.gz, then extract the archive into {results} here", flush=True)
    for label in left_out:
        print(f"not exported: {label}", flush=True)


def run_all(pending: list[Unit], done: int, estimator: Estimator, env: dict) -> list[tuple[str, float]]:
    """Run the pending units in order with a progress line before each; the timings."""
    times = []
    for i, unit in enumerate(pending):
        print(progress_line(done + i, pending[i:], estimator), flush=True)
        seconds = execute(unit.cmd, env)
        if len(unit.jobs) == 1:
            estimator.add(unit.jobs[0], seconds)
        else:  # a whole sweep: its jobs' recorded times
            for job in unit.jobs:
                for _, summaries in stored(job) or []:
                    estimator.add(job, sum(float(s.get("wall_time_s", 0.0)) for s in summaries))
        times.append((f"run  {unit.label}", seconds))
    return times


def main(argv=None) -> None:
    parser, args = parse_args(argv)
    try:
        specs = load_specs(args.experiments)
    except (SpecError, yaml.YAMLError, OSError) as err:
        parser.error(str(err))
    figures = args.only or list(specs)
    unknown = [f for f in figures if f not in specs]
    if unknown:
        parser.error(f"unknown figure(s) {unknown}; choose from {list(specs)}")
    results, out = args.results.resolve(), args.figures.resolve()
    try:
        units = [] if args.plots_only else run_units(specs, figures, args.scale, results, args.overrides,
                                                     args.seeds, args.sweeps)
    except (SpecError, HydraException) as err:  # a malformed override
        parser.error(str(err))
    plots = plot_commands(specs, figures, args.scale, results, out)
    estimator = Estimator()
    complete, pending = split_complete(units, estimator)
    if args.export:
        report_complete(complete, "# ")
        export_jobs(args.export, pending, results, args.scale)
        return
    if args.dry_run:
        report_complete(complete, "# ")
        for i, unit in enumerate(pending):
            print("# " + progress_line(len(complete) + i, pending[i:], estimator))
            print(shlex.join(unit.cmd))
        for _, cmd in plots:
            print(shlex.join(cmd))
        return
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    t0 = time.perf_counter()
    report_complete(complete)
    if units:
        print(f"{len(complete)} of {len(units)} jobs complete, {len(pending)} to run — "
              f"{eta(estimator, pending)}", flush=True)
    times = run_all(pending, len(complete), estimator, env)
    for label, cmd in plots:
        times.append((f"plot {label}", execute(cmd, env)))
    total = time.perf_counter() - t0
    print(f"\n{args.scale} scale: {len(pending)} job(s) run, {len(complete)} complete before, "
          f"{len(plots)} figure(s) in {total:.0f} s")
    for label, seconds in times:
        print(f"  {label:<40} {seconds:7.1f} s")
    for name in figures:
        print(f"  {out / args.scale / name}.png, .pdf")


if __name__ == "__main__":
    main()
