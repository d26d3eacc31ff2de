"""Reproduce the papers' figures: run every experiment of ``experiments/*.yaml``, then every plot script.

    scripts/reproduce.sh quick                      # the whole set at quick scale (minutes on a laptop CPU)
    scripts/reproduce.sh paper                      # the papers' scale (T = 10^4, 10 seeds: hours)
    scripts/reproduce.sh quick --only bkb_fig1 bbkb_sweep
    scripts/reproduce.sh paper hydra/launcher=slurm hydra.launcher.partition=cpu   # extra sketchbo-run overrides
    scripts/reproduce.sh quick --plots-only         # redraw from the results on disk
    scripts/reproduce.sh paper --dry-run            # print the commands only

Each ``experiments/<figure>.yaml`` names its result set (``results``), its plot script (``plot``) and,
per scale, the commands writing the result set (``runs``): ``sketchbo: <overrides>`` is one
``sketchbo-run -m <overrides>`` sweep whose jobs go to ``<results dir>/<scale>/<result set>/<job overrides>/``
(``hydra.sweep.dir``), ``script: <path> [args]`` a Python script called with ``--out <result set dir>``.
The figure is written to ``<figures dir>/<scale>/<figure>.png`` and ``.pdf``. A result set shared by
several figures (Fig. 2 reads Fig. 1's runs) is computed once. Re-running the same command resumes:
complete jobs are skipped (``skipping: complete results in ...``), so after an interruption only what is
missing runs. Extra ``key=value`` arguments are passed to every ``sketchbo-run`` command (e.g.
``progress=false``, a launcher); ``problem.*`` keys cannot be (the sweeps over problems are composed
from the default problem first): give the data directory as ``SKETCHBO_DATA_DIR`` instead.
"""
from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
EXPERIMENTS = REPO / "experiments"
SCALES = ("quick", "paper")
RUN_KINDS = ("sketchbo", "script")


class SpecError(Exception):
    """An experiment file is malformed."""


def load_specs(directory: Path = EXPERIMENTS) -> dict:
    """The experiment specs ``{figure name: spec}``, validated, in file-name order."""
    specs = {}
    for path in sorted(directory.glob("*.yaml")):
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
        specs[spec["name"]] = {**spec, "file": str(where)}
    owners = {}
    for spec in specs.values():
        if spec.get("runs") is not None:
            if spec["results"] in owners:
                raise SpecError(f"{spec['file']}: result set {spec['results']!r} is also written by "
                                f"{owners[spec['results']]}")
            owners[spec["results"]] = spec["file"]
    for spec in specs.values():
        if spec["results"] not in owners:
            raise SpecError(f"{spec['file']}: no experiment has runs writing the result set {spec['results']!r}")
    return specs


def run_commands(specs: dict, figures: list[str], scale: str, results: Path,
                 extra: list[str]) -> list[tuple[str, list[str]]]:
    """``(result set, command)`` of every run the selected figures need, each result set once."""
    needed = []
    for name in figures:
        if specs[name]["results"] not in needed:
            needed.append(specs[name]["results"])
    commands = []
    for result_set in needed:
        owner = next(s for s in specs.values() if s["results"] == result_set and s.get("runs") is not None)
        out = results / scale / result_set
        for entry in owner["runs"][scale] or []:
            (kind, text), = entry.items()
            if kind == "sketchbo":
                cmd = [sys.executable, "-m", "sketchbo", "-m", *shlex.split(text), f"hydra.sweep.dir={out}",
                       f"experiment.name={result_set}", *extra]
            else:
                script, *args = shlex.split(text)
                cmd = [sys.executable, str(REPO / script), *args, "--out", str(out)]
            commands.append((result_set, cmd))
    return commands


def plot_commands(specs: dict, figures: list[str], scale: str, results: Path, out: Path) -> list[tuple[str, list[str]]]:
    commands = []
    for name in figures:
        script, *args = shlex.split(specs[name]["plot"])
        cmd = [sys.executable, str(REPO / script), *args, "--results", str(results / scale / specs[name]["results"]),
               "--out", str(out / scale)]
        commands.append((name, cmd))
    return commands


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        prog="reproduce.sh", description="Run the experiments of experiments/*.yaml and draw the figures.",
        epilog="Other KEY=VALUE arguments are passed to every sketchbo-run command.")
    parser.add_argument("scale", nargs="?", default="quick", choices=SCALES, help="quick (default) or paper")
    parser.add_argument("--only", nargs="+", metavar="FIGURE", help="figures to make (default: all)")
    parser.add_argument("--results", type=Path, default=REPO / "results",
                        help="results root; runs go to <results>/<scale>/<result set> "
                             "(default: results/ in the repository)")
    parser.add_argument("--figures", type=Path, default=REPO / "figures",
                        help="figures root; files go to <figures>/<scale>/ (default: figures/ in the repository)")
    parser.add_argument("--plots-only", action="store_true",
                        help="draw the figures from the results on disk, run nothing")
    parser.add_argument("--dry-run", action="store_true", help="print the commands without running them")
    args, rest = parser.parse_known_args(argv)
    bad = [a for a in rest if "=" not in a or a.startswith("-")]
    if bad:
        parser.error(f"unrecognized arguments: {' '.join(bad)} (extra sketchbo-run overrides look like key=value)")
    args.overrides = rest
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


def main(argv=None) -> None:
    parser, args = parse_args(argv)
    try:
        specs = load_specs()
    except (SpecError, yaml.YAMLError) as err:
        parser.error(str(err))
    figures = args.only or list(specs)
    unknown = [f for f in figures if f not in specs]
    if unknown:
        parser.error(f"unknown figure(s) {unknown}; choose from {list(specs)}")
    results, out = args.results.resolve(), args.figures.resolve()
    runs = [] if args.plots_only else run_commands(specs, figures, args.scale, results, args.overrides)
    plots = plot_commands(specs, figures, args.scale, results, out)
    if args.dry_run:
        for _, cmd in runs + plots:
            print(shlex.join(cmd))
        return
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    t0 = time.perf_counter()
    times = []
    for label, cmd in runs:
        times.append((f"run  {label}", execute(cmd, env)))
    for label, cmd in plots:
        times.append((f"plot {label}", execute(cmd, env)))
    total = time.perf_counter() - t0
    print(f"\n{args.scale} scale: {len(runs)} run command(s), {len(plots)} figure(s) in {total:.0f} s")
    for label, seconds in times:
        print(f"  {label:<24} {seconds:7.1f} s")
    for name in figures:
        print(f"  {out / args.scale / name}.png, .pdf")


if __name__ == "__main__":
    main()
