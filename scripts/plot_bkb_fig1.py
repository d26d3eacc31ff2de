"""BKB Fig. 1 (COLT 2019): variance starvation — the exact GP, BKB's DTC posterior and subset of regressors.

One panel per number of observations t: the function f, the observations (all in [0, 0.5]), the
dictionary points of BKB, and μ ± 3σ of the exact GP (shaded), of BKB's DTC posterior (dashed) and
of the subset-of-regressors (SoR) posterior (dotted; it has BKB's mean). Away from the dictionary the
SoR variance collapses to zero — variance starvation — while DTC and the exact GP return to the prior.

Reads ``bkb_fig1.npz`` written by ``experiments/bkb_fig1.py`` (the setting is described there and stored
in the file) and writes ``bkb_fig1.png`` and ``bkb_fig1.pdf``::

    python scripts/plot_bkb_fig1.py --results results/quick/bkb_fig1 --out figures/quick
"""
from __future__ import annotations


import numpy as np

from sketchbo.cli import plots

NAME = "bkb_fig1"
FILENAME = "bkb_fig1.npz"
KEYS = ("x", "f", "ts", "obs_idx", "obs_y", "dict_idx", "exact_mean", "exact_var", "bkb_mean", "bkb_var",
        "sor_var", "settings")
HINT = "run `python experiments/bkb_fig1.py --out DIR` (or `scripts/reproduce.sh quick --only bkb_fig1`) first"


def load(results) -> dict:
    return plots.load_npz(results, FILENAME, KEYS, HINT)



def main(argv=None):
    parser = plots.figure_parser(__doc__.splitlines()[0], f"directory holding {FILENAME} (or the file itself)")
    args = parser.parse_args(argv)
    d = load(args.results)
    s = d["settings"]
    x, f, ts = d["x"], d["f"], d["ts"]
    plt = plots.pyplot()
    fig, axes = plt.subplots(1, len(ts), figsize=(4.6 * len(ts), 4.0), squeeze=False, sharey=True)
    bottom = float(f.min() - 3.6)
    for i, (ax, t) in enumerate(zip(axes[0], ts)):
        sd_exact, sd_bkb, sd_sor = (np.sqrt(np.clip(d[k][i], 0, None)) for k in ("exact_var", "bkb_var", "sor_var"))
        ax.fill_between(x, d["exact_mean"][i] - 3 * sd_exact, d["exact_mean"][i] + 3 * sd_exact, color="tab:blue",
                        alpha=0.18, lw=0, label=r"exact GP $\mu \pm 3\sigma$")
        ax.plot(x, d["exact_mean"][i], color="tab:blue", lw=1.2)
        ax.plot(x, d["bkb_mean"][i], color="tab:red", lw=1.2, label=r"BKB (DTC) / SoR $\tilde\mu$")
        for sign in (-1, 1):
            ax.plot(x, d["bkb_mean"][i] + sign * 3 * sd_bkb, color="tab:red", ls="--", lw=1.1,
                    label=r"BKB (DTC) $\tilde\mu \pm 3\tilde\sigma$" if sign > 0 else None)
            ax.plot(x, d["bkb_mean"][i] + sign * 3 * sd_sor, color="tab:green", ls=":", lw=1.6,
                    label=r"SoR $\tilde\mu \pm 3\sigma_{\mathrm{SoR}}$" if sign > 0 else None)
        ax.plot(x, f, color="k", lw=1.4, label="f")
        obs = d["obs_idx"][:t]
        ax.plot(x[obs], d["obs_y"][:t], "o", ms=3, mfc="none", color="0.35", label="observations")
        S = d["dict_idx"][i][d["dict_idx"][i] >= 0]
        ax.plot(x[S], np.full(S.size, bottom + 0.25), "|", ms=10, mew=1.5, color="tab:red", label="dictionary")
        ax.axvspan(s["interval"][0], s["interval"][1], color="0.5", alpha=0.06, lw=0)
        ax.set_title(f"t = {t}, |S| = {S.size}", fontsize=10)
        ax.set_xlabel("x")
        ax.set_xlim(0, 1)
        ax.set_ylim(bottom, float(f.max() + 3.6))
        ax.grid(alpha=0.3)
    axes[0, 0].set_ylabel("f(x)")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), frameon=False, fontsize=9,
               bbox_to_anchor=(0.5, -0.04))
    fig.suptitle(f"1-D GP on [0, 1], {s['n_arms']} arms, k = exp(−(x−x')²·{s['precision']:g}/2), "
                 f"λ = {s['lam']:g}, q̄ = {s['qbar']:g}; observations uniform in [{s['interval'][0]:g}, {s['interval'][1]:g}]",
                 fontsize=10)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    paths = plots.save_figure(fig, args.out or (args.results if args.results.is_dir() else args.results.parent), NAME)
    plt.close(fig)
    return paths


if __name__ == "__main__":
    plots.script_main(main)
