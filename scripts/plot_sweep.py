"""Sweep figure: final regret ratio R_T / R_T^unif and run time against q̄, C̃ and λ.

One-at-a-time sweeps around a reference point (default the protocol's q̄ = 2, C̃ = 2, λ = 0.2,
docs/protocols.md#finite-arm-protocol): the q̄ column shows the runs whose C̃ and λ equal the reference, and so on.
Two rows
per problem: R_T / R_T^unif (mean ± std over seeds) and the wall time of one seed's run (compilation
excluded; see ``sketchbo.cli.plots.run_time``). Values are read from each run's resolved hyperparameters
in ``summary.json``; when a problem has runs of several horizons, the longest is used.

Reads only the ``summary.json`` / ``traces.npz`` files under ``--results`` (the experiment
``experiments/bbkb_sweep.yaml`` writes them, one multirun job per value) and writes ``<name>.png`` and
``<name>.pdf`` (default name ``bbkb_sweep``)::

    python scripts/plot_sweep.py --results results/quick/bbkb_sweep --out figures/quick
"""
from __future__ import annotations

import math

import numpy as np

from sketchbo.cli import plots

PARAMS = {"qbar": r"$\bar q$", "C": r"$\tilde C$", "lam": r"$\lambda$"}
REFERENCE = {"qbar": 2.0, "C": 2.0, "lam": 0.2}  # docs/protocols.md#finite-arm-protocol
HINT = "run `scripts/reproduce.sh quick --only bbkb_sweep` (or paper) first"


def parse_reference(parser, items) -> dict:
    """The reference point: REFERENCE updated by ``KEY=VALUE`` items (a usage error for a bad item)."""
    reference = dict(REFERENCE)
    for item in items or []:
        key, sep, value = item.partition("=")
        try:
            if not sep or key not in PARAMS:
                raise ValueError
            reference[key] = float(value)
        except ValueError:
            parser.error(f"--reference {item!r} is invalid; use KEY=VALUE with KEY in {list(PARAMS)} and a number")
    return reference


def close(a, b) -> bool:
    return a is not None and b is not None and math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)


def sweep_of(results, param: str, reference: dict) -> list:
    """The runs that vary ``param`` with the other parameters at the reference, one per value, sorted."""
    by_value = {}
    for r in results:
        h = r.hyperparameters
        if param in h and all(close(h.get(o), reference[o]) for o in PARAMS if o != param):
            by_value.setdefault(float(h[param]), r)
    return [by_value[v] for v in sorted(by_value)]


def main(argv=None):
    parser = plots.figure_parser(__doc__.splitlines()[0], "directory holding the sweep's runs (searched recursively)")
    parser.add_argument("--algorithm", default="bbkb", help="algorithm whose runs are plotted (default bbkb)")
    parser.add_argument("--reference", nargs="*", metavar="KEY=VALUE",
                        help="reference point of the one-at-a-time sweeps (default qbar=2 C=2 lam=0.2)")
    parser.add_argument("--name", default="bbkb_sweep", help="output file name without extension")
    args = parser.parse_args(argv)
    reference = parse_reference(parser, args.reference)
    results = [r for r in plots.load_results(args.results, HINT) if r.algorithm == args.algorithm]
    if not results:
        raise plots.ResultsError(f"no {args.algorithm} results under {args.results}; {HINT}")
    problems = plots.problems_of(results)
    plt = plots.pyplot()
    fig, axes = plt.subplots(2 * len(problems), len(PARAMS), figsize=(12, 5.2 * len(problems)), squeeze=False)
    ref_text = ", ".join(f"{k} = {v:g}" for k, v in reference.items())
    for p, problem in enumerate(problems):
        runs = [r for r in results if r.problem == problem]
        T = max(r.T for r in runs)
        runs = [r for r in runs if r.T == T]
        for c, (param, symbol) in enumerate(PARAMS.items()):
            ax_ratio, ax_time = axes[2 * p, c], axes[2 * p + 1, c]
            sweep = sweep_of(runs, param, reference)
            if sweep:
                x = np.array([r.hyperparameters[param] for r in sweep], dtype=np.float64)
                ratio = [np.asarray(r.summary["regret_ratio"], dtype=np.float64) for r in sweep]
                ax_ratio.errorbar(x, [v.mean() for v in ratio], yerr=[v.std() for v in ratio], marker="o",
                                  capsize=3, color=plots.color(args.algorithm))
                ax_time.plot(x, [plots.run_time(r) for r in sweep], marker="s", color=plots.color(args.algorithm))
            else:
                for ax in (ax_ratio, ax_time):
                    ax.text(0.5, 0.5, f"no runs varying {param}\nat the reference", ha="center", va="center",
                            transform=ax.transAxes)
            for ax in (ax_ratio, ax_time):
                ax.axvline(reference[param], color="k", ls=":", lw=1)
                ax.set_xscale("log")
                ax.set_xlabel(symbol)
                ax.grid(alpha=0.3, which="both")
            if sweep:
                for ax in (ax_ratio, ax_time):
                    ax.set_xticks(x)
                    ax.set_xticklabels([f"{v:g}" for v in x])
                    ax.minorticks_off()
            seeds = sorted({r.n_seeds for r in sweep}) or ["-"]
            ax_ratio.set_title(f"{problem}, T = {T}, {'/'.join(map(str, seeds))} seeds: vary {symbol}",
                               fontsize=10, loc="left")
        axes[2 * p, 0].set_ylabel(r"final $R_T / R_T^{\mathrm{unif}}$")
        axes[2 * p + 1, 0].set_ylabel("run time (s, one seed)")
    fig.suptitle(f"{plots.label(args.algorithm)}: one parameter at a time around {ref_text} (dotted line)",
                 fontsize=11)
    fig.tight_layout()
    paths = plots.save_figure(fig, args.out or args.results, args.name)
    plt.close(fig)
    return paths


if __name__ == "__main__":
    plots.script_main(main)
