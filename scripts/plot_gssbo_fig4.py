"""GSSBO Fig. 4: sensitivity of GSSBO to the dynamic-buffer factor Z (or a fixed M): cumulative regret.

One panel per problem: GSSBO at every Z / M found (one line each, labelled with Z and the subset size M it
gave), and RSSBO and Standard GP-UCB when present, mean ± std over seeds (Wei et al. 2025, §6.1). Reads the
runs of ``experiments/gssbo_fig4.yaml`` and writes ``gssbo_fig4.png`` and ``.pdf``::

    python scripts/plot_gssbo_fig4.py --results results/quick/gssbo_fig4 --out figures/quick
"""
from __future__ import annotations

from sketchbo import plots

NAME = "gssbo_fig4"
HINT = "run `scripts/reproduce.sh quick --only gssbo_fig4` (or paper) first"
REFERENCES = ("rssbo", "std_gp_ucb")


def setting(res) -> tuple[float, int]:
    """(Z, M) of a GSSBO result (Z is NaN for a fixed M)."""
    h = res.hyperparameters
    z = float("nan") if h.get("M") is not None else float(h.get("Z", float("nan")))
    return z, int(h.get("M_resolved", h.get("M_static", 0)))


def main(argv=None):
    parser = plots.figure_parser(__doc__.splitlines()[0], "directory holding the runs (searched recursively)")
    args = parser.parse_args(argv)
    results = plots.load_results(args.results, HINT)
    problems = sorted({r.problem for r in results if r.algorithm == "gssbo"})
    if not problems:
        found = sorted({r.algorithm for r in results})
        raise plots.ResultsError(f"no gssbo results under {args.results} (found {found}); {HINT}")
    plt = plots.pyplot()
    fig, axes = plt.subplots(1, len(problems), figsize=(5.2 * len(problems), 3.8), squeeze=False)
    handles, labels = [], []
    cmap = plt.get_cmap("Reds")
    for ax, problem in zip(axes[0], problems):
        runs = sorted((r for r in results if r.problem == problem and r.algorithm == "gssbo"), key=setting)
        for i, res in enumerate(runs):
            z, m = setting(res)
            name = f"GSSBO Z={z:g} (M={m})" if z == z else f"GSSBO M={m}"
            shade = cmap(0.45 + 0.55 * (i + 1) / len(runs))
            h = plots.band(ax, plots.steps(res), plots.cumulative_regret(res), name=name, color=shade)
            if name not in labels:
                handles.append(h)
                labels.append(name)
        for algorithm in REFERENCES:
            res = plots.pick(results, problem, algorithm)
            if res is not None:
                h = plots.band(ax, plots.steps(res), plots.cumulative_regret(res), algorithm, ls="--")
                if plots.label(algorithm) not in labels:
                    handles.append(h)
                    labels.append(plots.label(algorithm))
        ax.set_title(problem, loc="left", fontsize=10)
        ax.set_ylabel(r"cumulative regret $R_t$")
        ax.set_xlabel("t")
        ax.grid(alpha=0.3)
    fig.legend(handles, labels, loc="lower center", ncol=min(len(labels), 4), frameon=False,
               bbox_to_anchor=(0.5, -0.02))
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    paths = plots.save_figure(fig, args.out or args.results, NAME)
    plt.close(fig)
    return paths


if __name__ == "__main__":
    plots.script_main(main)
