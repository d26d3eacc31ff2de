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

from sketchbo import plots

NAME = "sbpe"
HINT = "run `scripts/reproduce.sh quick --only sbpe` (or paper) first"


def main(argv=None):
    parser = plots.figure_parser(__doc__.splitlines()[0], "directory holding the runs (searched recursively)")
    args = parser.parse_args(argv)
    results = plots.load_results(args.results, HINT)
    problems = plots.problems_of(results)
    plt = plots.pyplot()
    fig, axes = plt.subplots(len(problems), 2, figsize=(9, 3.6 * len(problems)), squeeze=False)
    handles = {}
    for row, problem in zip(axes, problems):
        for algorithm in plots.ordered({r.algorithm for r in results if r.problem == problem}):
            res = plots.pick(results, problem, algorithm)
            t = plots.steps(res)
            handles[algorithm] = plots.band(row[0], t, plots.cumulative_regret(res), algorithm)
            plots.band(row[1], t, plots.regret_ratio(res), algorithm)
        T = max(r.T for r in results if r.problem == problem)
        seeds = sorted({r.n_seeds for r in results if r.problem == problem})
        row[0].set_ylabel(f"{problem}\ncumulative regret $R_t$")
        row[1].set_ylabel(r"$R_t / R_t^{\mathrm{unif}}$")
        row[0].set_title(f"{problem} (T = {T}, {'/'.join(map(str, seeds))} seeds, mean ± std)", loc="left",
                         fontsize=10)
    return plots.finish_with_legend(fig, handles, args.out or args.results, NAME)


if __name__ == "__main__":
    plots.script_main(main)
