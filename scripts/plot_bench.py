"""Benchmark figures: the cost of BBKB's in-batch step against m and A, and the amortised cost per step against t.

Reads the JSON of ``scripts/bench.py`` and writes, as PNG and PDF:

* ``<name>_step_cost``: log-log, the median time of one in-batch selection step (BBKB Alg. 1, L4–L8) and
  of one resparsification (L11–L16) against the dictionary size m (left) and the number of arms A
  (right), with the least-squares slope of each curve in its label and reference slopes 1 and 2 drawn
  through the first in-batch point (the ``step`` group);
* ``<name>_amortised``: for every one-seed run (seed 0), the execution time per step averaged up to t (left) and
  over 20 windows evenly spaced in log t (right), against t: flat curves mean a cost per step that does not
  grow with t. The runner times chunks of rounds and splits each chunk evenly over its rounds, so the
  windowed curve is smooth over a few rounds.

    python scripts/plot_bench.py --results bench.json --out figures
"""
from __future__ import annotations

import json

import numpy as np

from sketchbo.cli import plots

HINT = "run `python scripts/bench.py --out bench.json` (or --quick) first"
WINDOWS = 20  # windows of the windowed cost per step


def load(path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data.get("runs"), list) or not isinstance(data.get("step_costs"), dict):
            raise KeyError("no 'runs' list or 'step_costs' object")
    except (OSError, ValueError, KeyError, AttributeError) as err:
        raise plots.ResultsError(f"unreadable benchmark results {path} ({type(err).__name__}: {err}); {HINT}") from err
    return data


def slope(x, y) -> float:
    """Least-squares slope of log y against log x."""
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


def style_log_axis(ax) -> None:
    """A light grid; no labels at the minor ticks of an axis spanning more than a decade (they overlap)."""
    from matplotlib.ticker import NullFormatter

    ax.grid(alpha=0.3, which="both")
    for axis, (lo, hi) in ((ax.xaxis, ax.get_xlim()), (ax.yaxis, ax.get_ylim())):
        if hi > 10 * lo > 0:
            axis.set_minor_formatter(NullFormatter())


def step_panel(ax, costs: list, key: str, symbol: str, references: tuple) -> None:
    costs = sorted(costs, key=lambda c: c[key])
    x = np.array([c[key] for c in costs], dtype=np.float64)
    step = np.array([c["step_us"] for c in costs]) * 1e-6
    resp = np.array([c["resparsify_ms"] for c in costs]) * 1e-3
    for y, name, marker in ((step, "in-batch step", "o"), (resp, "resparsification", "s")):
        fit = f" (slope {slope(x, y):.2f})" if len(x) > 1 else ""
        ax.loglog(x, y, marker=marker, lw=1.5, label=name + fit)
    for power, style in zip(references, ("--", ":")):
        ax.loglog(x, step[0] * (x / x[0]) ** power, style, color="gray", lw=1, label=f"slope {power}")
    fixed = "A" if key == "m" else "m"
    held = sorted({c[fixed] for c in costs})
    ax.set_xlabel(symbol)
    ax.set_ylabel("seconds")
    ax.set_title(f"{costs[0]['problem']}, {fixed} = {', '.join(map(str, held))}", loc="left", fontsize=10)
    style_log_axis(ax)
    ax.legend(fontsize=8)


def step_figure(data: dict, out_dir, name: str) -> list:
    vs_m, vs_A = data["step_costs"].get("vs_m") or [], data["step_costs"].get("vs_A") or []
    panels = [(c, k, s, r) for c, k, s, r in ((vs_m, "m", "dictionary size m", (1, 2)),
                                             (vs_A, "A", "number of arms A", (1,))) if c]
    if not panels:
        return []
    plt = plots.pyplot()
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4.2), squeeze=False)
    for ax, panel in zip(axes[0], panels):
        step_panel(ax, *panel)
    fig.suptitle(f"BBKB step costs on {data['meta'].get('device', '?')}", fontsize=11)
    fig.tight_layout()
    paths = plots.save_figure(fig, out_dir, f"{name}_step_cost")
    plt.close(fig)
    return paths


def timelines(data: dict) -> list:
    """The rows with a timeline (seed 0 of one-seed runs), each run once."""
    seen, rows = set(), []
    for row in data["runs"]:
        key = tuple(row.get(k) for k in ("algorithm", "problem", "A", "T", "dtype"))
        if row.get("timeline") and len(row["timeline"]["t"]) > 1 and key not in seen:
            seen.add(key)
            rows.append(row)
    return rows


def windowed(t, exec_s) -> tuple:
    """Execution time per step over at most WINDOWS windows evenly spaced in log t (midpoints, s per step)."""
    t, exec_s = np.asarray(t, np.float64), np.asarray(exec_s, np.float64)
    edges = np.unique(np.searchsorted(t, np.geomspace(t[0], t[-1], WINDOWS + 1)))
    lo, hi = edges[:-1], edges[1:]
    return 0.5 * (t[lo] + t[hi]), (exec_s[hi] - exec_s[lo]) / (t[hi] - t[lo])


def amortised_figure(data: dict, out_dir, name: str) -> list:
    rows = timelines(data)
    if not rows:
        return []
    plt = plots.pyplot()
    fig, (ax_avg, ax_win) = plt.subplots(1, 2, figsize=(12, 4.5))
    for row in rows:
        t, exec_s = np.asarray(row["timeline"]["t"], np.float64), np.asarray(row["timeline"]["exec_s"])
        text = f"{plots.label(row['algorithm'])} {row['problem']} A={row['A']} {row['dtype']}"
        (line,) = ax_avg.plot(t, 1e6 * exec_s / t, lw=1.5, label=text)
        tw, cost = windowed(t, exec_s)
        ax_win.plot(tw, 1e6 * cost, marker=".", lw=1.2, color=line.get_color())
    ax_avg.set_ylabel("execution time up to t / t  (µs per step)")
    ax_win.set_ylabel("execution time per step in windows of log t (µs)")
    for ax in (ax_avg, ax_win):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("t")
        style_log_axis(ax)
    ax_avg.legend(fontsize=7)
    fig.suptitle(f"amortised cost per step, one seed, on {data['meta'].get('device', '?')}", fontsize=11)
    fig.tight_layout()
    paths = plots.save_figure(fig, out_dir, f"{name}_amortised")
    plt.close(fig)
    return paths


def main(argv=None):
    parser = plots.figure_parser(__doc__.splitlines()[0], "the JSON file written by scripts/bench.py")
    parser.add_argument("--name", default="bench", help="prefix of the output file names (default bench)")
    args = parser.parse_args(argv)
    data = load(args.results)
    out_dir = args.out or args.results.parent
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = step_figure(data, out_dir, args.name) + amortised_figure(data, out_dir, args.name)
    if not paths:
        raise plots.ResultsError(f"{args.results} has neither step costs nor one-seed timelines; {HINT}")
    return paths


if __name__ == "__main__":
    plots.script_main(main)
