"""GSSBO Fig. 3: cumulative wall time against t (one seed, compilation excluded) on each problem found.

Mean ± std over seeds of the time spent up to step t (``sketchbo.cli.plots.cumulative_time``: the job's round
times, divided by the number of seeds when they ran one after another). The paper reports GSSBO's total
at t = 1000 near 10% of Standard GP-UCB's on Hartmann6 and Powell50; each panel's title gives the seed
counts (as Fig. 2's panels do) and our ratio of the totals. Reads the Fig. 2 runs
(``experiments/gssbo_fig3.yaml``) and writes ``gssbo_fig3.png`` and ``.pdf``::

    python scripts/plot_gssbo_fig3.py --results results/quick/gssbo_fig2 --out figures/quick

Given a regret record (``scripts/record_regret.py``), which keeps each job's total time but no per-round times,
each panel draws the totals at T instead of the curves, one bar per method on a log scale, as the committed
image is drawn::

    python scripts/plot_gssbo_fig3.py --results experiments/gssbo_fig2_record.json --out docs/figures
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

from sketchbo.cli import plots

NAME = "gssbo_fig3"
HINT = "run `scripts/reproduce.sh quick --only gssbo_fig3` (or paper) first"


def _fig2():
    spec = importlib.util.spec_from_file_location("plot_gssbo_fig2", Path(__file__).with_name("plot_gssbo_fig2.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def share_note(totals: dict) -> str:
    """The panel title's second line: GSSBO's total time as a share of GP-UCB's (the paper's 10%)."""
    if totals.get("std_gp_ucb", 0) > 0 and "gssbo" in totals:
        return f"\nGSSBO (pivoted) / GP-UCB time: {totals['gssbo'] / totals['std_gp_ucb']:.1%}"
    return ""


def totals_panel(ax, shown, totals: dict) -> None:
    """One horizontal bar per method: one seed's total time at T (a record has no per-round times)."""
    for i, res in enumerate(shown):
        ax.barh(i, totals[plots.variant(res)], color=plots.color(res.algorithm),
                hatch="//" if plots.variant_style(res) else None, edgecolor="white")
    ax.set_yticks(range(len(shown)), [f"{plots.result_label(r)}, {r.n_seeds} seeds" for r in shown], fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("time to t = T (s, one seed)")


def main(argv=None):
    fig2 = _fig2()
    parser = plots.figure_parser(__doc__.splitlines()[0], "directory holding the Fig. 2 runs (searched recursively)")
    args = parser.parse_args(argv)
    results = plots.load_results(args.results, HINT)
    problems = fig2.continuous_problems(results, HINT, args.results)
    plt = plots.pyplot()
    fig, axes = fig2.grid(plt, len(problems))
    handles = {}
    for ax, problem in zip(axes, problems):
        shown = plots.shown_results(results, problem, fig2.METHODS)
        totals = {plots.variant(res): plots.run_time(res) for res in shown}
        if all(isinstance(res, plots.RecordedResult) for res in shown):
            totals_panel(ax, shown, totals)
            ax.set_title(problem + share_note(totals), loc="left", fontsize=10)
            continue
        for res in shown:
            handles[plots.variant(res)] = plots.band(ax, plots.steps(res), plots.cumulative_time(res), res.algorithm,
                                                     plots.result_label(res), **plots.variant_style(res))
        ax.set_title(f"{problem} ({plots.seeds_note(shown)})" + share_note(totals), loc="left", fontsize=10)
        ax.set_ylabel("cumulative time (s)")
    out = args.out or (args.results if args.results.is_dir() else args.results.parent)
    if not handles:  # a record: the bars' tick labels name the methods
        fig.tight_layout()
        paths = plots.save_figure(fig, out, NAME)
        plt.close(fig)
        return paths
    return plots.finish_with_legend(fig, handles, out, NAME)


if __name__ == "__main__":
    plots.script_main(main)
