"""BBKB Fig. 2: batch sizes against t, and dictionary sizes against t.

One row per problem, two panels: the size of the batch that step t belongs to, for the batched
algorithms found (BBKB, GlobalLocal-BBKB, GP-BUCB), and the dictionary size |S_t| used at step t, for
the Nyström algorithms found (BBKB, GlobalLocal-BBKB, BKB); mean ± std over seeds. The paper reports
BBKB batches growing to about 3700 (Abalone) and 3900 (Cadata) by T = 10^4 (docs/protocols.md#bbkb-experiments).

Reads the same results as Fig. 1 (``experiments/bbkb_fig1.yaml``) and writes ``bbkb_fig2.png`` and
``bbkb_fig2.pdf``::

    python scripts/plot_bbkb_fig2.py --results results/quick/bbkb_fig1 --out figures/quick
"""
from __future__ import annotations

from sketchbo.cli import plots

NAME = "bbkb_fig2"
HINT = "run `scripts/reproduce.sh quick --only bbkb_fig2` (or paper) first"
BATCHED = ("bbkb", "bbkb_local", "gp_bucb")
SPARSE = ("bbkb", "bbkb_local", "bkb")


def main(argv=None):
    parser = plots.figure_parser(__doc__.splitlines()[0], "directory holding the runs (searched recursively)")
    args = parser.parse_args(argv)
    results = plots.load_results(args.results, HINT)
    problems = [p for p in plots.problems_of(results)
                if any(r.problem == p and r.algorithm in BATCHED + SPARSE for r in results)]
    if not problems:
        found = sorted({r.algorithm for r in results})
        raise plots.ResultsError(f"no BBKB, GlobalLocal-BBKB, GP-BUCB or BKB results under {args.results} "
                                 f"(found {found}); {HINT}")
    plt = plots.pyplot()
    fig, axes = plt.subplots(len(problems), 2, figsize=(10, 3.6 * len(problems)), squeeze=False)
    handles = {}
    for row, problem in zip(axes, problems):
        present = {r.algorithm for r in results if r.problem == problem}
        for algorithm in plots.ordered(present & set(BATCHED)):
            res = plots.pick(results, problem, algorithm)
            handles[algorithm] = plots.band(row[0], plots.steps(res), plots.batch_size(res), algorithm)
        for algorithm in plots.ordered(present & set(SPARSE)):
            res = plots.pick(results, problem, algorithm)
            handles[algorithm] = plots.band(row[1], plots.steps(res), plots.dict_size(res), algorithm)
        row[0].set_ylabel(f"{problem}\nbatch size")
        row[0].set_title(f"{problem}: size of the batch holding step t", loc="left", fontsize=10)
        row[1].set_ylabel(r"dictionary size $|S_t|$")
        row[1].set_title(f"{problem}: dictionary size at step t", loc="left", fontsize=10)
    return plots.finish_with_legend(fig, handles, args.out or args.results, NAME)


if __name__ == "__main__":
    plots.script_main(main)
