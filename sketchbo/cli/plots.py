"""Figures from result files on disk: loading, per-step curves and figure output for ``scripts/plot_*.py``.

The plot scripts read only what runs wrote (``summary.json`` and ``traces.npz`` of every result
directory, docs/guide.md#outputs; the BKB Fig. 1 ``.npz``), or a committed regret record of them
(``sketchbo.cli.records.write_record``: R_t at 101 steps), never the W&B API, so figures work offline and can be
redrawn without recomputing anything.

Per-step curves of a result (arrays of shape (n_seeds, T), step t = 1..T):

* `cumulative_regret` R_t = Σ_{s ≤ t} (f* − f(x_s)) on the noiseless f;
* `regret_ratio` R_t / R_t^unif with R_t^unif = t·(f* − mean f); the gap f* − mean f is read
  back from ``summary.json`` as R_T / (T · ratio_T), so no problem has to be loaded;
* `batch_size` the size of the batch (round) that step t belongs to;
* `dict_size` the dictionary size used by the selection at step t;
* `cumulative_time` the wall time spent up to step t, per seed (see there).

Figures are written with matplotlib's Agg backend (no display needed), as PNG and PDF, atomically.

The pictures of one's own runs (a result's ``curves.png``, a comparison's ``comparison.png``) are drawn by
[`sketchbo.cli.pictures`][sketchbo.cli.pictures] from these curves, and the command ``sketchbo-plot`` is
[`sketchbo.cli.overlay`][sketchbo.cli.overlay].
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

from sketchbo.cli import tracking
from sketchbo.cli.curves import (  # noqa: F401  (re-exported: the plot scripts read the curves through plots)
    MAX_POINTS,
    batch_size,
    cumulative_regret,
    cumulative_time,
    dict_size,
    mean_std,
    number,
    regret_ratio,
    run_time,
    seeds_sequential,
    steps,
    thin,
    time_scale,
    time_up_to,
    uniform_gap,
)
from sketchbo.cli.results import (  # noqa: F401  (re-exported: the plot scripts read results through plots)
    SLICE_FREE_KEYS,
    RecordedResult,
    Result,
    ResultsError,
    consecutive,
    join_seed_slices,
    joined_result,
    load_npz,
    load_result,
    load_results,
    pick,
    problems_of,
    recorded,
    seed_chain,
    seed_span,
    slice_identity,
)

# Display names and colours of the algorithms (the poster's names).
LABELS = {
    "bbkb": "BBKB", "bbkb_local": "GlobalLocal-BBKB", "bkb": "BKB", "gp_ucb": "GP-UCB",
    "gp_bucb": "GP-BUCB", "eps_greedy": "EpsGreedy", "sbpe": "S-BPE",
    # continuous domains (GSSBO's names)
    "std_gp_ucb": "Standard GP-UCB", "gssbo": "GSSBO", "rssbo": "RSSBO", "kmeans_pp": "K-means++",
    "lr_first_m": "LR-First m", "sparse_gp": "SparseGP", "mini_gp_ucb": "mini-META",
    "dkl_ucb": "Deep-kernel UCB", "bnn_ucb": "BNN-UCB", "vecchia_bo": "VecchiaBO", "ipa": "IPA",
    "rembo": "REMBO", "hesbo": "HeSBO",
}
COLORS = {
    "bbkb": "tab:red", "bbkb_local": "tab:orange", "bkb": "tab:blue", "gp_ucb": "tab:green",
    "gp_bucb": "tab:purple", "eps_greedy": "tab:gray", "sbpe": "tab:pink",
    "std_gp_ucb": "tab:green", "gssbo": "tab:red", "rssbo": "tab:blue", "kmeans_pp": "tab:brown",
    "lr_first_m": "tab:olive", "sparse_gp": "tab:purple", "mini_gp_ucb": "tab:cyan",
    "dkl_ucb": "tab:blue", "bnn_ucb": "tab:orange", "vecchia_bo": "tab:orange", "ipa": "tab:pink",
    "rembo": "tab:blue", "hesbo": "tab:green",
}
ORDER = ("bbkb", "bbkb_local", "bkb", "gp_ucb", "gp_bucb", "eps_greedy", "sbpe",
         "gssbo", "rssbo", "std_gp_ucb", "vecchia_bo", "lr_first_m", "sparse_gp", "ipa", "mini_gp_ucb", "kmeans_pp",
         "dkl_ucb", "bnn_ucb", "rembo", "hesbo")


def label(algorithm: str) -> str:
    return LABELS.get(algorithm, algorithm)


def rule_of(res) -> str | None:
    """GSSBO's subset rule of a result (``pivoted``, ``projection``, ``cosine``); None for the other algorithms."""
    return (res.hyperparameters or {}).get("selection") if res.algorithm == "gssbo" else None


def result_label(res) -> str:
    """The legend name of a result: the algorithm's label, and for GSSBO the subset rule it ran (``pivoted``, the
    default, is not the paper's gradient rule: docs/protocols.md#gssbo-subset-rules)."""
    rule = rule_of(res)
    return f"{label(res.algorithm)} ({rule})" if rule else label(res.algorithm)


def variant(res) -> str:
    """The key of a result's line in a figure: the algorithm, with GSSBO's rule when it is not the default
    ``pivoted`` (``gssbo:projection``), so that two rules of GSSBO are two lines."""
    rule = rule_of(res)
    return f"{res.algorithm}:{rule}" if rule and rule != "pivoted" else res.algorithm


def shown_results(results, problem: str, algorithms=None) -> list:
    """The results of ``problem`` a panel draws, one per `variant` (of ``algorithms`` when given), in the figures'
    order, each the one with the longest horizon (`pick`)."""
    found = [r for r in results if r.problem == problem and (algorithms is None or r.algorithm in algorithms)]
    return [pick([r for r in found if variant(r) == v], problem, v.split(":")[0])
            for v in ordered({variant(r) for r in found})]


def color(algorithm: str):
    return COLORS.get(algorithm)


def ordered(algorithms) -> list[str]:
    """Algorithm names (or `variant` keys, placed after their algorithm) in the figures' order (known ones first,
    the others sorted)."""
    algorithms = set(algorithms)
    rank = {a: i for i, a in enumerate(ORDER)}
    return sorted(algorithms, key=lambda v: (rank.get(v.split(":")[0], len(ORDER)), v.split(":")[0], v))


# ------------------------------------------------------------------------------------------ drawing

def pyplot():
    """matplotlib.pyplot on the Agg backend (files only, no display)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def band(ax, x, curves, algorithm: str | None = None, name: str | None = None, **line):
    """Mean ± std over seeds of ``curves`` (n_seeds, len(x)) as a line and a shaded band."""
    mean, std = mean_std(curves)
    idx = thin(len(x))
    x, mean, std = np.asarray(x)[idx], mean[idx], std[idx]
    kwargs = {"color": color(algorithm) if algorithm else None, "lw": 1.5, **line}
    (handle,) = ax.plot(x, mean, label=name or (label(algorithm) if algorithm else None), **kwargs)
    ax.fill_between(x, mean - std, mean + std, color=handle.get_color(), alpha=0.2, lw=0)
    return handle


def variant_style(res) -> dict:
    """Line style of a result: dashed for a GSSBO rule other than the default, so both rules show in one colour."""
    return {"ls": "--"} if variant(res) != res.algorithm else {}


def regret_panels(axes, problems, results, methods) -> dict:
    """One panel per problem: cumulative regret R_t, mean ± std over seeds, for each of ``methods`` found
    there (figures' order; GSSBO once per subset rule). Returns the legend handles ``{variant: line}``."""
    handles = {}
    for ax, problem in zip(axes, problems):
        shown = shown_results(results, problem, methods)
        for res in shown:
            handles[variant(res)] = band(ax, steps(res), cumulative_regret(res), res.algorithm, result_label(res),
                                         **variant_style(res))
        ax.set_title(panel_title(problem, shown), loc="left", fontsize=10)
        ax.set_ylabel(r"cumulative regret $R_t$")
    return handles


def panel_title(problem: str, shown, width: int = 50) -> str:
    """``problem`` with the `seeds_note` of its panel's results; past ``width`` characters the exceptions go on
    further lines of at most ``width`` characters, so that the title does not run into the next panel's."""
    title = f"{problem} ({seeds_note(shown)})"
    if len(title) <= width:
        return title
    head, rest = title.split("; ", 1)
    lines = [head + ";"]
    for part in rest.split(", "):
        if len(lines) > 1 and len(lines[-1]) + len(part) + 2 <= width:
            lines[-1] += ", " + part
        else:
            lines[-1] += "" if len(lines) == 1 else ","
            lines.append(part)
    return "\n".join(lines)


def seeds_note(shown) -> str:
    """The seed counts of the results ``shown`` in one panel: "10 seeds", or the most common count (the larger
    on a tie) and the exceptions by label ("10 seeds; Standard GP-UCB 3") when they differ."""
    counts = [r.n_seeds for r in shown]
    if not counts:
        return "no runs"
    common = max(set(counts), key=lambda n: (counts.count(n), n))
    others = ", ".join(f"{result_label(r)} {r.n_seeds}" for r in shown if r.n_seeds != common)
    note = f"{common} seed{'s' if common != 1 else ''}"
    return f"{note}; {others}" if others else note


def regret_rows(results, with_time: bool = False):
    """One row per problem: R_t and R_t / R_t^unif (and, ``with_time``, the time up to t on a log scale),
    mean ± std over seeds for every algorithm found. Returns ``(fig, legend handles)``."""
    problems = problems_of(results)
    n_panels = 3 if with_time else 2
    fig, axes = pyplot().subplots(len(problems), n_panels, figsize=(4.3 * n_panels + 0.4, 3.6 * len(problems)),
                                  squeeze=False)
    handles = {}
    for row, problem in zip(axes, problems):
        shown = [pick(results, problem, a) for a in ordered({r.algorithm for r in results if r.problem == problem})]
        for res in shown:
            algorithm, t = res.algorithm, steps(res)
            handles[algorithm] = band(row[0], t, cumulative_regret(res), algorithm, result_label(res))
            band(row[1], t, regret_ratio(res), algorithm)
            if with_time:
                band(row[2], t, cumulative_time(res), algorithm)
        T = max(r.T for r in results if r.problem == problem)
        row[0].set_ylabel(f"{problem}\ncumulative regret $R_t$")
        row[1].set_ylabel(r"$R_t / R_t^{\mathrm{unif}}$")
        if with_time:
            row[2].set_ylabel("time (s, one seed)")
            row[2].set_yscale("log")
        row[0].set_title(f"{problem} (T = {T}, {seeds_note(shown)}, mean ± std)", loc="left",
                         fontsize=10)
    return fig, handles


def save_figure(fig, out_dir, name: str) -> list[Path]:
    """Write ``<out_dir>/<name>.png`` (150 dpi) and ``.pdf`` atomically (temp file + rename); return the paths."""
    paths = []
    for fmt in ("png", "pdf"):
        path = Path(out_dir) / f"{name}.{fmt}"
        tracking.atomic_write(path, lambda fh, fmt=fmt: fig.savefig(fh, format=fmt, dpi=150, bbox_inches="tight"))
        paths.append(path)
    return paths


def finish_with_legend(fig, handles: dict, out_dir, name: str) -> list[Path]:
    """Label every panel's x axis t with a light grid, put one legend below the panels (algorithms in the
    registry order), then save PNG + PDF and close."""
    for ax in fig.axes:
        ax.set_xlabel("t")
        ax.grid(alpha=0.3)
    order = ordered(handles)
    rows = 1 if len(order) <= 6 else 2
    names = [handles[a].get_label() if not handles[a].get_label().startswith("_") else label(a.split(":")[0])
             for a in order]
    fig.legend([handles[a] for a in order], names, loc="lower center",
               ncol=math.ceil(len(order) / rows), frameon=False, bbox_to_anchor=(0.5, -0.02))
    fig.tight_layout(rect=(0, 0.05 * rows, 1, 1))
    paths = save_figure(fig, out_dir, name)
    pyplot().close(fig)
    return paths


def add_also(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """``--also DIR`` (repeatable): a further result set to read, e.g. runs another figure already made."""
    parser.add_argument("--also", type=Path, action="append", default=[],
                        help="a further result set to read as well (repeatable), e.g. Fig. 2's runs")
    return parser


def also_results(args, hint: str = "") -> list[Result]:
    """Every complete result of the result sets given by ``--also`` (`add_also`)."""
    return [r for directory in args.also for r in load_results(directory, hint)]


PANELS_PER_ROW = 3  # methods_figure's panels wrap onto rows of this many


def methods_figure(argv, doc: str, name: str, hint: str, methods, panels_of=None) -> list[Path]:
    """A plot script's ``main``: one panel of cumulative regret per problem on which any of ``panels_of``
    (default: ``methods``) ran in ``--results``, every one of ``methods`` found there or in the result sets
    given by ``--also`` (repeatable: runs another figure already made, e.g. GSSBO from Fig. 2's), laid out by
    `panel_rows`; ``doc``'s first line is the description."""
    parser = add_also(figure_parser(doc.splitlines()[0], "directory holding the runs (searched recursively)"))
    args = parser.parse_args(argv)
    own = load_results(args.results, hint)
    panels_of = methods if panels_of is None else panels_of
    problems = sorted({r.problem for r in own if r.algorithm in panels_of})
    if not problems:
        raise ResultsError(f"no results of {', '.join(panels_of)} under {args.results} (found "
                           f"{sorted({r.algorithm for r in own})}); {hint}")
    results = own + also_results(args, hint)
    rows = panel_rows(problems)
    cols = max(len(row) for row in rows)
    fig, axes = pyplot().subplots(len(rows), cols, figsize=(4.8 * cols, 3.6 * len(rows)), squeeze=False)
    for i, row in enumerate(rows):
        for ax in axes[i, len(row):]:
            fig.delaxes(ax)
    handles = regret_panels([axes[i, j] for i, row in enumerate(rows) for j in range(len(row))],
                            [problem for row in rows for problem in row], results, methods)
    return finish_with_legend(fig, handles, args.out or args.results, name)


def panel_rows(problems) -> list[list[str]]:
    """Rows of at most ``PANELS_PER_ROW`` panels: the standard problems, then on rows of their own the shifted
    variants (``<name>_shift<c>``, sketchbo.problems.continuous), each sorted by name."""
    groups = [sorted(p for p in problems if "_shift" not in p), sorted(p for p in problems if "_shift" in p)]
    return [group[k:k + PANELS_PER_ROW] for group in groups for k in range(0, len(group), PANELS_PER_ROW)]


def figure_parser(description: str, results_help: str) -> argparse.ArgumentParser:
    """The common command line of the plot scripts: ``--results DIR --out DIR``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--results", required=True, type=Path, help=results_help)
    parser.add_argument("--out", type=Path, default=None,
                        help="directory for the PNG and PDF files (default: the --results directory)")
    return parser


def script_main(main, argv=None, wrote: bool = True) -> None:
    """Run a plot or table script's ``main(argv)``: print the files it returns (``wrote``: a plot script's);
    ResultsError -> stderr, exit status 2."""
    prog = Path(sys.argv[0]).name
    try:
        paths = main(argv)
    except ResultsError as err:
        print(f"{prog}: error: {err}", file=sys.stderr)
        sys.exit(2)
    for path in paths if wrote else ():
        print(f"wrote {path}")


def print_table(rows: list[dict], text: str, json_path=None) -> None:
    """A table script's output: the Markdown ``text``; with ``json_path`` also its ``rows`` as JSON, written whole."""
    print(text)
    if json_path is not None:
        tracking.atomic_write_text(json_path, json.dumps(rows, indent=1) + "\n")
        print(f"wrote {json_path}")


__all__ = ["Result", "ResultsError", "LABELS", "COLORS", "load_result", "load_results", "join_seed_slices", "pick",
           "problems_of", "cumulative_regret", "uniform_gap", "regret_ratio", "batch_size", "dict_size",
           "cumulative_time", "run_time", "time_up_to", "number", "print_table", "result_label", "mean_std", "thin",
           "pyplot", "band", "regret_panels", "rule_of", "variant", "variant_style", "shown_results", "seeds_note",
           "save_figure", "add_also", "also_results",
           "methods_figure", "panel_rows", "figure_parser", "script_main"]
