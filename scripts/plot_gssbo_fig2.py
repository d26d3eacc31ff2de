"""GSSBO Fig. 2: cumulative regret R_t against t on each problem, every continuous-domain method found.

One panel per problem (Eggholder2, Hartmann6, Levy20, Powell50, Rastrigin100, diabetes, whichever were
run), mean ± std over seeds of R_t = sum_{s <= t} (f(x_s) - f_min) (Wei et al. 2025, §6.1; for diabetes
f_min = 0, so R_t sums test errors). Reads the runs of ``experiments/gssbo_fig2.yaml`` and writes
``gssbo_fig2.png`` and ``.pdf``; ``--results`` may also be a regret record of them
(``scripts/record_regret.py``), as the committed image is drawn::

    python scripts/plot_gssbo_fig2.py --results results/quick/gssbo_fig2 --out figures/quick
    python scripts/plot_gssbo_fig2.py --results experiments/gssbo_fig2_record.json --out docs/figures
"""
from __future__ import annotations

import math

from sketchbo.cli import plots

NAME = "gssbo_fig2"
HINT = "run `scripts/reproduce.sh quick --only gssbo_fig2` (or paper) first"
METHODS = ("std_gp_ucb", "gssbo", "rssbo", "vecchia_bo", "lr_first_m", "sparse_gp", "ipa", "mini_gp_ucb", "kmeans_pp")
ORDER = ("eggholder2", "hartmann6", "levy20", "powell50", "rastrigin100", "diabetes")


def continuous_problems(results, hint: str, root) -> list[str]:
    """The problems with results of the continuous methods, in the paper's order; ResultsError if none."""
    names = {r.problem for r in results if r.algorithm in METHODS}
    if not names:
        found = sorted({r.algorithm for r in results})
        raise plots.ResultsError(f"no GSSBO-family results ({', '.join(METHODS)}) under {root} "
                                 f"(found {found}); {hint}")
    return [p for p in ORDER if p in names] + sorted(names - set(ORDER))


def grid(plt, n: int, width: float = 4.2, height: float = 3.4):
    cols = min(3, n)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows), squeeze=False)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, list(axes.flat[:n])


def main(argv=None):
    parser = plots.figure_parser(__doc__.splitlines()[0], "directory holding the runs (searched recursively), "
                                 "or a regret record of them")
    args = parser.parse_args(argv)
    results = plots.load_results(args.results, HINT)
    problems = continuous_problems(results, HINT, args.results)
    plt = plots.pyplot()
    fig, axes = grid(plt, len(problems))
    handles = plots.regret_panels(axes, problems, results, METHODS)
    out = args.out or (args.results if args.results.is_dir() else args.results.parent)
    return plots.finish_with_legend(fig, handles, out, NAME)


if __name__ == "__main__":
    plots.script_main(main)
