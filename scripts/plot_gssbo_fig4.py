"""GSSBO Fig. 4: sensitivity of GSSBO to the dynamic-buffer factor Z (or a fixed M): cumulative regret.

One panel per problem: GSSBO at every Z / M and subset rule found (one line each, labelled with the rule, Z and
the subset size M it gave; the default rule in shades of red, another rule dash-dotted),
and RSSBO and Standard GP-UCB when present, mean ± std over seeds (Wei et al. 2025, §6.1); the panel title gives
the seed counts. Reads the
runs of ``experiments/gssbo_fig4.yaml`` and, with ``--also``, further result sets (at paper scale Fig. 2's,
which hold GSSBO at its default Z = 4 and the references), and writes ``gssbo_fig4.png`` and ``.pdf``::

    python scripts/plot_gssbo_fig4.py --results results/quick/gssbo_fig4 --out figures/quick
    python scripts/plot_gssbo_fig4.py --results results/paper/gssbo_fig4 --also results/paper/gssbo_fig2 \\
        --out figures/paper

The panels are the problems GSSBO ran on in ``--results``; on each, a setting (Z, M) found in several
result sets is drawn once, from ``--results`` first.
"""
from __future__ import annotations

from sketchbo.cli import plots

NAME = "gssbo_fig4"
HINT = "run `scripts/reproduce.sh quick --only gssbo_fig4` (or paper) first"
REFERENCES = ("rssbo", "std_gp_ucb")


def setting(res) -> tuple[float, int]:
    """(Z, M) of a GSSBO result (Z is NaN for a fixed M)."""
    h = res.hyperparameters
    z = float("nan") if h.get("M") is not None else float(h.get("Z", float("nan")))
    return z, int(h.get("M_resolved", h.get("M_static", 0)))


def gssbo_settings(results, problem: str) -> dict:
    """``{(rule, Z, M): result}`` of GSSBO on ``problem``: per subset rule and setting the first found (the longest
    horizon, then the most seeds, among those of equal standing the earlier result set)."""
    found = {}
    for res in sorted((r for r in results if r.problem == problem and r.algorithm == "gssbo"),
                      key=lambda r: (-r.T, -r.n_seeds)):
        found.setdefault((str(plots.rule_of(res)),) + tuple(map(str, setting(res))), res)
    return found


def main(argv=None):
    parser = plots.figure_parser(__doc__.splitlines()[0], "directory holding the runs (searched recursively)")
    args = plots.add_also(parser).parse_args(argv)
    own = plots.load_results(args.results, HINT)
    problems = sorted({r.problem for r in own if r.algorithm == "gssbo"})
    if not problems:
        found = sorted({r.algorithm for r in own})
        raise plots.ResultsError(f"no gssbo results under {args.results} (found {found}); {HINT}")
    results = own + plots.also_results(args, HINT)
    plt = plots.pyplot()
    fig, axes = plt.subplots(1, len(problems), figsize=(5.2 * len(problems), 3.8), squeeze=False)
    handles, labels = [], []
    cmap = plt.get_cmap("Reds")
    for ax, problem in zip(axes[0], problems):
        runs = sorted(gssbo_settings(results, problem).values(), key=lambda r: (plots.variant(r), setting(r)))
        default = [r for r in runs if plots.variant(r) == "gssbo"]
        shown = list(runs)
        for res in runs:
            z, m = setting(res)
            name = plots.result_label(res) + (f" Z={z:g} (M={m})" if z == z else f" M={m}")
            if plots.variant(res) == "gssbo":  # the default rule: one shade of red per Z
                style = {"color": cmap(0.45 + 0.55 * (default.index(res) + 1) / len(default))}
            else:  # another rule (the paper's projection): its own colour, dash-dotted
                style = {"color": "tab:purple", "ls": "-."}
            h = plots.band(ax, plots.steps(res), plots.cumulative_regret(res), name=name, **style)
            if name not in labels:
                handles.append(h)
                labels.append(name)
        for algorithm in REFERENCES:
            res = plots.pick(results, problem, algorithm)
            if res is not None:
                shown.append(res)
                h = plots.band(ax, plots.steps(res), plots.cumulative_regret(res), algorithm, ls="--")
                if plots.label(algorithm) not in labels:
                    handles.append(h)
                    labels.append(plots.label(algorithm))
        ax.set_title(f"{problem} ({plots.seeds_note(shown)})", loc="left", fontsize=10)
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
