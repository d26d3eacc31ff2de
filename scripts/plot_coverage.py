"""Empirical coverage of confidence bounds against the nominal level 1 − δ (Vakili et al., ICML 2022, Thm 3.5).

Left: the fraction of arms x with |f(x) − μ(x)| ≤ β σ(x), mean ± std over trials, against 1 − δ, for the
exact GP (β of Vakili et al. 2021a), the Nyström (SVGP) posterior with BKB's β (the public code's form) and
with Vakili's β (Theorem 3.5 with the measured λ_max); the diagonal is the nominal level, which a valid
bound for a fixed x meets or exceeds. Right: the fraction of trials in which Theorem 3.5 with the union
bound δ/|X| holds at every arm at once, against 1 − δ.

Reads ``coverage.npz`` written by ``experiments/coverage.py`` (the setting is described there and stored in
the file) and writes ``coverage.png`` and ``coverage.pdf``::

    python scripts/plot_coverage.py --results results/quick/coverage --out figures/quick
"""
from __future__ import annotations

from sketchbo.cli import plots

NAME = "coverage"
FILENAME = "coverage.npz"
METHODS = {"exact": ("exact GP, β of Vakili 2021a", "tab:green"),
           "nystrom_bkb": ("Nyström, BKB's β", "tab:blue"),
           "nystrom_vakili": ("Nyström, Vakili's β (Thm 3.5)", "tab:red")}
HINT = "run `python experiments/coverage.py --out DIR` (or `scripts/reproduce.sh quick --only coverage`) first"


def load(results) -> dict:
    keys = (*METHODS, "all_arms", "deltas", "settings", "m", "n_unique", "lam_max")
    return plots.load_npz(results, FILENAME, keys, HINT)



def main(argv=None):
    parser = plots.figure_parser(__doc__.splitlines()[0], f"directory holding {FILENAME} (or the file)")
    args = parser.parse_args(argv)
    data = load(args.results)
    nominal = 1.0 - data["deltas"]
    plt = plots.pyplot()
    fig, (ax, ax_all) = plt.subplots(1, 2, figsize=(10, 4))
    for key, (name, color) in METHODS.items():
        mean, std = data[key].mean(axis=0), data[key].std(axis=0)
        ax.errorbar(nominal, mean, yerr=std, marker="o", ms=4, capsize=2, label=name, color=color)
    ax_all.plot(nominal, data["all_arms"].mean(axis=0), marker="o", ms=4, color=METHODS["nystrom_vakili"][1],
                label="Nyström, Thm 3.5 with δ/|X|")
    s = data["settings"]
    for a, title in ((ax, "fraction of arms covered"), (ax_all, "trials covering every arm")):
        lo = min(nominal.min(), 0.45)
        a.plot([lo, 1], [lo, 1], color="k", lw=0.8, ls="--", label="nominal 1 − δ")
        a.set_xlabel("nominal level 1 − δ")
        a.set_title(title, loc="left", fontsize=10)
        a.grid(alpha=0.3)
        a.legend(fontsize=8, loc="lower right")
    ax.set_ylabel("empirical coverage")
    fig.suptitle(f"‖f‖ = C_k = {s['C_k']}, τ² = λ = {s['lam']}, n = {s['n_obs']} points, {s['n_trials']} trials; "
                 f"inducing points by recursive RLS: m = {data['m'].mean():.0f} of {data['n_unique'].mean():.0f} "
                 f"unique, max λ_max/τ² = {data['lam_max'].max() / s['lam']:.1e}", fontsize=9)
    fig.tight_layout()
    paths = plots.save_figure(fig, args.out or (args.results if args.results.is_dir() else args.results.parent),
                              NAME)
    plt.close(fig)
    return paths


if __name__ == "__main__":
    plots.script_main(main)
