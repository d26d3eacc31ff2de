"""S-BPE (Vakili et al., ICML 2022) against BKB, BBKB and GP-UCB: cumulative regret and R_t / R_t^unif.

One row per problem (Abalone, then gp_sample and any other found), two panels: the cumulative regret R_t
and the ratio R_t / R_t^unif (R_t^unif = t·(f* − mean f)), mean ± std over seeds for every algorithm
found. S-BPE's batches are N_i = ⌈√(T N_{i−1})⌉ long, so its regret is front-loaded: pure exploration of
the whole arm set first, eliminations at the batch ends (vertical steps in the slope).

Reads only the ``summary.json`` / ``traces.npz`` files under ``--results`` (``experiments/sbpe.yaml``
writes them) and writes ``sbpe.png`` and ``sbpe.pdf``::

    python scripts/plot_sbpe.py --results results/quick/sbpe --out figures/quick
"""
from __future__ import annotations

from sketchbo.cli import plots

NAME = "sbpe"
HINT = "run `scripts/reproduce.sh quick --only sbpe` (or paper) first"


def main(argv=None):
    parser = plots.figure_parser(__doc__.splitlines()[0], "directory holding the runs (searched recursively)")
    args = parser.parse_args(argv)
    results = plots.load_results(args.results, HINT)
    fig, handles = plots.regret_rows(results, with_time=False)
    return plots.finish_with_legend(fig, handles, args.out or args.results, NAME)


if __name__ == "__main__":
    plots.script_main(main)
