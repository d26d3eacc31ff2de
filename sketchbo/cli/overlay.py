"""``sketchbo-plot DIR...``: the runs found under directories drawn on the same panels, in one image
(docs/guide.md#plotting-your-runs).

`main` is the command: `find_runs` looks for every run under the directories it is given (each directory
holding ``summary.json`` and ``traces.npz``), `plot_dirs` joins runs of one config on disjoint seeds and draws
them with [`write_overlay`][sketchbo.cli.pictures.write_overlay], one curve per setting of the swept config
keys, and `plotted_lines` is what it prints of them. It reads only what runs wrote, never the W&B API.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from sketchbo.cli.pictures import BAND_NOTE, key_name, overlay_curves, seeds_text, swept_keys, write_overlay
from sketchbo.cli.results import Result, ResultsError, join_seed_slices, load_result

PLOT_PROG = "sketchbo-plot"
OVERLAY_FILE = "overlay.png"  # sketchbo-plot's image when -o is not given


def find_runs(root) -> list[Result]:
    """Every run under the directory ``root`` (itself included): each directory holding ``summary.json`` and
    ``traces.npz``. ResultsError naming ``root`` when it does not exist or holds no run."""
    root = Path(root)
    if not root.exists():
        raise ResultsError(f"{root} does not exist")
    if not root.is_dir():
        raise ResultsError(f"{root} is not a directory; give a run's or a sweep's directory")
    found = sorted({p.parent for p in root.rglob("summary.json")})
    runs = [d for d in found if (d / "traces.npz").is_file()]
    if not runs:
        unfinished = f" (summary.json without traces.npz in {found[0]})" if found else ""
        raise ResultsError(f"no runs under {root}: expected directories holding summary.json and traces.npz, as "
                           f"sketchbo-run writes them{unfinished}")
    return [load_result(d) for d in runs]


def plot_dirs(dirs, out=None) -> tuple[Path, list[Result], list[str]]:
    """``sketchbo-plot``: every run under ``dirs`` (`find_runs`; a directory named twice, or below another,
    counts once; runs of one config on disjoint seeds joined, `join_seed_slices`), drawn with `write_overlay`
    to ``out`` (default: ``<DIR>/overlay.png`` for one directory, ``./overlay.png`` for several). Returns the
    image, the results drawn and the swept keys."""
    dirs = [Path(d) for d in dirs]
    seen, results = set(), []
    for root in dirs:
        for res in find_runs(root):
            if res.path.resolve() not in seen:
                seen.add(res.path.resolve())
                results.append(res)
    results = join_seed_slices(results)
    out = Path(out) if out is not None else (dirs[0] / OVERLAY_FILE if len(dirs) == 1 else Path(OVERLAY_FILE))
    swept = swept_keys(results)
    where = ", ".join(str(d) for d in dirs)
    where = where if len(where) <= 80 else f"{len(dirs)} directories"  # a title on one line
    head = f"{len(results)} run{'s' if len(results) != 1 else ''} under {where}"
    shown = ", ".join(key_name(k) for k in swept)
    title = f"{head}" + (f"; swept: {shown}" if swept else "") + f"\n{BAND_NOTE}"
    return write_overlay(out, results, title), results, swept


def plotted_lines(results, swept) -> list[str]:
    """What ``sketchbo-plot`` drew, one line per curve: problem, name, T, seeds, median R_T/R_unif, mean
    batches, largest dictionary and the directory."""
    rows = [("problem", "curve", "T", "seeds", "R_T/R_unif", "batches", "max dict", "directory")]
    for problem, curves in overlay_curves(results):
        for c in curves:
            res = c.result
            ratio = np.median(np.asarray(res.summary.get("regret_ratio") or [np.nan], dtype=np.float64))
            batches = np.mean(res.summary["n_batches"]) if res.summary.get("n_batches") else float("nan")
            dictionary = np.max(res.summary["max_dict_size"]) if res.summary.get("max_dict_size") else "-"
            rows.append((problem, c.name, str(res.T), seeds_text(res.summary.get("seeds") or []), f"{ratio:.3f}",
                         f"{batches:g}", str(dictionary), str(res.path)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows]
    swept_text = ", ".join(swept) if swept else "none (one config)"
    return [f"swept keys: {swept_text}", *lines]


PLOT_EPILOG = """\
examples:
  sketchbo-plot outputs/2026-12-01/10-00-00           # a single run, or a compare run's members together
  sketchbo-plot multirun/qbar -o qbar.png             # every job of a sweep, one curve per setting
  sketchbo-plot runs/bbkb runs/gp_ucb -o both.pdf     # several directories on the same panels

Each curve is one run's seeds: the median over seeds as a line, the lowest to the highest seed as a band.
Runs are named by the config keys that differ between them (e.g. BBKB qbar=2); one row of panels per problem.
Runs of one config on disjoint seeds (seed=0 n_seeds=5 and seed=5 n_seeds=5) are joined into one curve.
Exit status 2, with a message, when a directory does not exist or holds no run."""


def plot_parser() -> argparse.ArgumentParser:
    """The command line of ``sketchbo-plot``."""
    parser = argparse.ArgumentParser(
        prog=PLOT_PROG, epilog=PLOT_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Overlay the regret, batch-size and dictionary-size curves of sketchbo-run results\n"
                    "(single runs, compare runs, sweeps) in one image.")
    parser.add_argument("dirs", nargs="+", type=Path, metavar="DIR",
                        help="a run directory (holding summary.json and traces.npz) or any directory above runs, "
                             "e.g. a compare run's or a sweep's (multirun/<experiment.name>): searched recursively")
    parser.add_argument("-o", "--out", type=Path, default=None, metavar="FILE",
                        help=f"the image to write, .png, .pdf or .svg (default: DIR/{OVERLAY_FILE} for one DIR, "
                             f"./{OVERLAY_FILE} for several)")
    return parser


def main(argv=None) -> None:
    """Console entry point of ``sketchbo-plot`` (`plot_parser`): draw the runs under the directories given
    (`plot_dirs`), print what was drawn and where; a missing directory, one without runs or an unwritable
    image is ``sketchbo-plot: error: ...`` on stderr with exit status 2."""
    args = plot_parser().parse_args(argv)
    try:
        out, results, swept = plot_dirs(args.dirs, args.out)
    except ResultsError as err:
        print(f"{PLOT_PROG}: error: {err}", file=sys.stderr)
        sys.exit(2)
    except OSError as err:
        print(f"{PLOT_PROG}: error: cannot write {err.filename or args.out}: {err.strerror or err}", file=sys.stderr)
        sys.exit(2)
    print("\n".join(plotted_lines(results, swept)))
    print(f"wrote {out}")


__all__ = ["PLOT_PROG", "OVERLAY_FILE", "find_runs", "plot_dirs", "plotted_lines", "plot_parser", "main"]


if __name__ == "__main__":
    main()
