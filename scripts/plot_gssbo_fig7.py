"""GSSBO Fig. 7: the samples each subset keeps on Hartmann6, first two dimensions, and how near the optimum they are.

Panels (seed 0): all samples of Standard GP-UCB, then the subsets kept by GSSBO under each of its rules (the paper's
gradient rule ``projection``, Eq. (1)'s ``cosine``, our default ``pivoted``), RSSBO (random) and k-means++; colour
= f(x) (darker = closer to the minimum), the global minimiser marked. Each panel's title gives, over every seed of
the record, the mean number of kept samples among the best quarter of the samples. Reads the record
``gssbo_fig7.json`` of ``experiments/gssbo_fig7.py`` and writes ``gssbo_fig7.png`` and ``.pdf``::

    python scripts/plot_gssbo_fig7.py --results experiments/gssbo_fig7_record.json --out docs/figures
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from sketchbo.cli import plots

NAME = "gssbo_fig7"
FILENAME = "gssbo_fig7.json"
HINT = "run `scripts/reproduce.sh quick --only gssbo_fig7` (or paper) first"
TITLES = {"gssbo_projection": "GSSBO (projection)", "gssbo_cosine": "GSSBO (cosine)",
          "gssbo_pivoted": "GSSBO (pivoted)", "rssbo": "RSSBO", "kmeans_pp": "K-means++"}


def load(results) -> dict:
    """The record at ``results`` (the JSON file, or a directory holding ``gssbo_fig7.json``)."""
    path = Path(results)
    path = path / FILENAME if path.is_dir() else path
    if not path.is_file():
        raise plots.ResultsError(f"{path} does not exist; {HINT}")
    try:
        record = json.loads(path.read_text())
        record["seed0"]["x"] = np.asarray(record["seed0"]["x"])
        record["seed0"]["f"] = np.asarray(record["seed0"]["f"])
    except (OSError, ValueError, KeyError) as err:
        raise plots.ResultsError(f"unreadable {path} ({type(err).__name__}: {err}); {HINT}") from err
    return record


def best_quarter_means(record) -> dict[str, float]:
    """Per subset: the mean over seeds of its kept samples among the best quarter of the samples."""
    by = {}
    for row in record["rows"]:
        by.setdefault(row["subset"], []).append(row["best_quarter"])
    return {name: float(np.mean(v)) for name, v in by.items()}


def main(argv=None):
    parser = plots.figure_parser(__doc__.splitlines()[0], f"the record {FILENAME} or a directory holding it")
    args = parser.parse_args(argv)
    record = load(args.results)
    x, f, keep = record["seed0"]["x"], record["seed0"]["f"], record["seed0"]["keep"]
    x_opt, seeds = np.asarray(record["x_opt"]), record["settings"]["seeds"]
    means = best_quarter_means(record)
    panels = [("all", f"Standard GP-UCB: all {len(f)} samples")]
    panels += [(name, f"{TITLES.get(name, name)}: {len(keep[name])} kept,\n"
                      f"{means[name]:.1f} of the best {len(f) // 4} (mean of {seeds} seeds)") for name in keep]
    plt = plots.pyplot()
    cols = 3
    rows = -(-len(panels) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.0 * cols, 3.9 * rows), sharex=True, sharey=True, squeeze=False)
    vmin, vmax = float(f.min()), float(f.max())
    for ax, (key, title) in zip(axes.flat, panels):
        idx = np.arange(len(f)) if key == "all" else np.asarray(keep[key], int)
        sc = ax.scatter(x[idx, 0], x[idx, 1], c=f[idx], cmap="viridis", vmin=vmin, vmax=vmax, s=16,
                        edgecolors="k", linewidths=0.2)
        ax.plot(x_opt[0], x_opt[1], marker="*", color="red", ms=12, ls="none")
        ax.set_title(title, loc="left", fontsize=9)
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.grid(alpha=0.3)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    for ax in axes[-1]:
        ax.set_xlabel("$x_1$")
    for ax in axes[:, 0]:
        ax.set_ylabel("$x_2$")
    fig.colorbar(sc, ax=list(axes.flat), shrink=0.85, label="f(x) (Hartmann6; darker = lower = better)")
    results = Path(args.results)
    paths = plots.save_figure(fig, args.out or (results if results.is_dir() else results.parent), NAME)
    plt.close(fig)
    return paths


if __name__ == "__main__":
    plots.script_main(main)
