"""The closing lines of a ``sketchbo-run``: after its table (``tracking.format_table``), where BBKB wins
(`bbkb_note`), where the results are and where their pictures are (`pictures_line`); `closing_lines` is all of
it, as the run prints it.

The lines on BBKB quote the committed record of BBKB, BKB and exact GP-UCB at the paper's scale
(``experiments/bbkb_fig1_results.json``, docs/reproductions.md) beside what this run shows and does not.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from sketchbo.cli import tracking
from sketchbo.cli.jobs import COMPARISON_FIGURE
from sketchbo.cli.tracking import CURVES_FILE

REPOSITORY = Path(__file__).resolve().parents[2]
# BBKB, BKB and exact GP-UCB on Abalone and Cadata at the paper's scale (docs/reproductions.md), in the repository
# (an installed wheel has no copy: the note that quotes it is then left out)
BBKB_RECORD = REPOSITORY / "experiments" / "bbkb_fig1_results.json"
RECORD_PROBLEM = "cadata"  # the record's problem where BBKB's speed shows most


def record_rows(path, problem: str) -> dict[str, dict]:
    """The entries of a results record (a JSON list of ``{"problem", "algorithm", "T", "seeds",
    "exec_s_per_seed", "ratio_mean", ...}``, e.g. ``experiments/bbkb_fig1_results.json``) on ``problem``, by
    algorithm; {} when the file is absent or not such a list."""
    try:
        rows = json.loads(Path(path).read_text(encoding="utf-8"))
        return {str(r["algorithm"]): r for r in rows if r.get("problem") == problem and r.get("exec_s_per_seed")}
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return {}


def bbkb_note(summaries: list[dict], record=BBKB_RECORD, problem: str = RECORD_PROBLEM) -> list[str]:
    """Closing lines of a table that compares BBKB with BKB or exact GP-UCB (the default ``sketchbo-run``):
    where BBKB wins, from the committed ``record`` (its speed-up over BKB on ``problem`` at the paper's scale,
    computed from the record's times per seed), and what this run shows and does not: its batches, its
    R_T/R_unif beside the others', and how large exact GP-UCB's model grew beside BBKB's dictionary (when it
    is no larger, sketching has nothing to save, and this run cannot show BBKB's speed). An empty list for other
    tables."""
    runs = {s["algorithm"]: s for s in summaries if "label" not in s}  # grid points are labelled: not compared
    if "bbkb" not in runs or not {"bkb", "gp_ucb"} & set(runs):
        return []
    lines = []
    rows = record_rows(record, problem)
    if {"bbkb", "bkb"} <= set(rows):
        b, k = rows["bbkb"], rows["bkb"]
        try:
            shown = Path(record).resolve().relative_to(REPOSITORY)
        except ValueError:
            shown = Path(record)
        text = (f"Where BBKB wins ({shown}, {problem}, {b['seeds']} seeds): at T = {b['T']} it ran "
                f"{k['exec_s_per_seed'] / b['exec_s_per_seed']:.1f}x faster than BKB ({b['exec_s_per_seed']:.1f} vs "
                f"{k['exec_s_per_seed']:.1f} s per seed) at R_T/R_unif {b['ratio_mean']:.3f} vs {k['ratio_mean']:.3f}")
        if "gp_ucb" in rows:
            g = rows["gp_ucb"]
            if g["T"] < b["T"]:
                text += f"; exact GP-UCB needed {g['exec_s_per_seed']:.1f} s per seed for only T = {g['T']}"
            else:  # the same horizon: GP-UCB's regret is said too, as it may be lower
                text += (f"; exact GP-UCB took {g['exec_s_per_seed']:.1f} s per seed to the same T, at R_T/R_unif "
                         f"{g['ratio_mean']:.3f}")
        lines.append(text + ".")
    b = runs["bbkb"]
    ratio = {name: float(np.mean(s["regret_ratio"])) for name, s in runs.items()}
    text = f"This run ({b['problem']}, T = {b['T']})"
    if "gp_ucb" in runs:
        exact, sketch = int(np.max(runs["gp_ucb"]["max_dict_size"])), int(np.max(b["max_dict_size"]))
        if exact <= sketch:
            what = "it" if lines else "BBKB's speed"
            text += (f" is too small to show {what}: exact GP-UCB's model held at most {exact} pulled arms, no more "
                     f"than BBKB's dictionary of {sketch}, so the sketch has nothing to save")
        else:
            text += f": exact GP-UCB's model held at most {exact} pulled arms against BBKB's dictionary of {sketch}"
        text += ". BBKB"
    else:
        text += ": BBKB"
    others = [f"{ratio[name]:.3f} for {LONG_NAMES[name]}" for name in ("bkb", "gp_ucb") if name in runs]
    text += (f" made its {b['T']} pulls in {float(np.mean(b['n_batches'])):g} batches, at R_T/R_unif "
             f"{ratio['bbkb']:.3f} against " + " and ".join(others))
    lines.append(text + ".")
    return lines


LONG_NAMES = {"bkb": "BKB (the same sketch, one pull per batch)", "gp_ucb": "exact GP-UCB"}


def pictures_line(run_dir: Path) -> str | None:
    """Where a run's pictures are (``picture: ...``), None when it drew none (``plots=false``).

    Args:
        run_dir: the run's directory (a single result's, a comparison's or a grid run's).

    Returns:
        The line the run prints, or None.
    """
    top = [run_dir / name for name in (COMPARISON_FIGURE, CURVES_FILE) if (run_dir / name).exists()]
    members = sorted(run_dir.glob(f"*/{CURVES_FILE}"))
    points = sorted(run_dir.glob(f"grid/*/{CURVES_FILE}"))
    if top and members:
        return f"picture: {top[0]} (each member's: {run_dir}/<member>/{CURVES_FILE})"
    if top:
        return f"picture: {top[0]}"
    if points:
        return (f"pictures: {run_dir}/grid/<point>/{CURVES_FILE}, {len(points)} points; together: "
                f"sketchbo-plot {run_dir / 'grid'}")
    return None


def closing_lines(summaries: list[dict], run_dir: Path) -> list[str]:
    """What ``sketchbo-run`` prints once its results are written: the table of ``summaries``
    (``tracking.format_table``, one string of several lines), the lines of `bbkb_note`, ``results: <run_dir>``
    and the `pictures_line` when the run drew pictures.

    Args:
        summaries: the summaries of the run's results, in the table's order.
        run_dir: the run's directory.

    Returns:
        The lines, to be printed in order.
    """
    lines = [tracking.format_table(summaries), *bbkb_note(summaries), f"results: {run_dir}"]
    pictures = pictures_line(run_dir)
    return lines + [pictures] if pictures else lines


__all__ = ["BBKB_RECORD", "RECORD_PROBLEM", "record_rows", "bbkb_note", "pictures_line", "closing_lines"]
