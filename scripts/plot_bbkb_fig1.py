"""BBKB Fig. 1 / ICML 2020 poster: cumulative regret, R_t / R_t^unif and time against t.

One row per problem (Abalone, Cadata, then any other found), three panels: the cumulative regret R_t,
the ratio R_t / R_t^unif (R_t^unif = t·(f* − mean f), the expected regret of uniform arm choice) and the
wall time up to t (one seed, compilation excluded; log scale; see ``sketchbo.cli.plots.cumulative_time``),
each as mean ± std over seeds for every algorithm found (BBKB, GlobalLocal-BBKB, BKB, GP-UCB, GP-BUCB,
EpsGreedy). Curves end at each run's own horizon (the exact methods stop at T = 2000 at paper scale,
as on the poster).

Reads only the ``summary.json`` / ``traces.npz`` files under ``--results`` (any layout; the experiment
``experiments/bbkb_fig1.yaml`` writes them) and writes ``bbkb_fig1.png`` and ``bbkb_fig1.pdf``::

    python scripts/plot_bbkb_fig1.py --results results/quick/bbkb_fig1 --out figures/quick
"""
from __future__ import annotations

from sketchbo.cli import plots

NAME = "bbkb_fig1"
HINT = "run `scripts/reproduce.sh quick --only bbkb_fig1` (or paper) first"


def main(argv=None):
    parser = plots.figure_parser(__doc__.splitlines()[0], "directory holding the runs (searched recursively)")
    args = parser.parse_args(argv)
    results = plots.load_results(args.results, HINT)
    fig, handles = plots.regret_rows(results, with_time=True)
    return plots.finish_with_legend(fig, handles, args.out or args.results, NAME)


if __name__ == "__main__":
    plots.script_main(main)
