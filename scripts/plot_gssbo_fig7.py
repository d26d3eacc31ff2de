"""GSSBO Fig. 7: the samples each subset keeps on Hartmann6, first two dimensions.

Panels: all samples of Standard GP-UCB, then the subsets kept by GSSBO (its default subset rule, selection=pivoted), RSSBO (random)
and k-means++; colour = f(x) (darker = closer to the minimum), the global minimiser marked. Reads
``gssbo_fig7.npz`` of ``experiments/gssbo_fig7.py`` and writes ``gssbo_fig7.png`` and ``.pdf``::

    python scripts/plot_gssbo_fig7.py --results results/quick/gssbo_fig7 --out figures/quick
"""
from __future__ import annotations


import numpy as np

from sketchbo.cli import plots
from sketchbo.problems.continuous import HARTMANN6_XOPT

NAME = "gssbo_fig7"
FILENAME = "gssbo_fig7.npz"
HINT = "run `scripts/reproduce.sh quick --only gssbo_fig7` (or paper) first"
PANELS = (("all", "Standard GP-UCB: all {n} samples"), ("gssbo", "GSSBO ({rule}): {m} kept"),
          ("rssbo", "RSSBO: {m} kept"), ("kmeans_pp", "K-means++: {m} kept"))


def load(results) -> dict:
    return plots.load_npz(results, FILENAME, ("x", "f", "settings", "keep_gssbo", "keep_rssbo", "keep_kmeans_pp"),
                          HINT)



def main(argv=None):
    parser = plots.figure_parser(__doc__.splitlines()[0], f"directory holding {FILENAME}")
    args = parser.parse_args(argv)
    data = load(args.results)
    x, f = data["x"], data["f"]
    rule = data["settings"].get("selection", "unrecorded rule")  # GSSBO's subset rule, named in its panel
    plt = plots.pyplot()
    fig, axes = plt.subplots(1, len(PANELS), figsize=(4.0 * len(PANELS), 3.9), sharex=True, sharey=True)
    vmin, vmax = float(f.min()), float(f.max())
    for ax, (key, title) in zip(axes, PANELS):
        idx = np.arange(len(f)) if key == "all" else data[f"keep_{key}"]
        sc = ax.scatter(x[idx, 0], x[idx, 1], c=f[idx], cmap="viridis", vmin=vmin, vmax=vmax, s=16,
                        edgecolors="k", linewidths=0.2)
        ax.plot(HARTMANN6_XOPT[0], HARTMANN6_XOPT[1], marker="*", color="red", ms=12, ls="none")
        ax.set_title(title.format(n=len(f), m=len(idx), rule=rule), loc="left", fontsize=10)
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_xlabel("$x_1$")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("$x_2$")
    fig.colorbar(sc, ax=list(axes), shrink=0.85, label="f(x) (Hartmann6; darker = lower = better)")
    paths = plots.save_figure(fig, args.out or args.results, NAME)
    plt.close(fig)
    return paths


if __name__ == "__main__":
    plots.script_main(main)
