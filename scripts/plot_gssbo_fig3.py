"""GSSBO Fig. 3: cumulative wall time against t (one seed, compilation excluded) on each problem found.

Mean ± std over seeds of the time spent up to step t (``sketchbo.cli.plots.cumulative_time``: the job's round
times, divided by the number of seeds when they ran one after another). The paper reports GSSBO's total
at t = 1000 near 10% of Standard GP-UCB's on Hartmann6 and Powell50; each panel's title gives the seed
counts (as Fig. 2's panels do) and our ratio of the totals. Reads the Fig. 2 runs
(``experiments/gssbo_fig3.yaml``) and writes ``gssbo_fig3.png`` and ``.pdf``::

    python scripts/plot_gssbo_fig3.py --results results/quick/gssbo_fig2 --out figures/quick
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
        present = {r.algorithm for r in results if r.problem == problem} & set(fig2.METHODS)
        shown = [plots.pick(results, problem, algorithm) for algorithm in plots.ordered(present)]
        totals = {}
        for res in shown:
            handles[res.algorithm] = plots.band(ax, plots.steps(res), plots.cumulative_time(res), res.algorithm,
                                                   plots.result_label(res))
            totals[res.algorithm] = plots.run_time(res)
        title = f"{problem} ({plots.seeds_note(shown)})"
        if totals.get("std_gp_ucb", 0) > 0 and "gssbo" in totals:
            title += f"\nGSSBO / GP-UCB time: {totals['gssbo'] / totals['std_gp_ucb']:.1%}"
        ax.set_title(title, loc="left", fontsize=10)
        ax.set_ylabel("cumulative time (s)")
    return plots.finish_with_legend(fig, handles, args.out or args.results, NAME)


if __name__ == "__main__":
    plots.script_main(main)
