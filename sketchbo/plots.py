"""Figures from result files on disk: loading, per-step curves and figure output for ``scripts/plot_*.py``.

The plot scripts read only what runs wrote (``summary.json`` and ``traces.npz`` of every result
directory, README "Outputs"; the BKB Fig. 1 ``.npz``), never the W&B API, so figures work offline and
can be redrawn without recomputing anything.

Per-step curves of a result (arrays of shape (n_seeds, T), step t = 1..T):

* :func:`cumulative_regret` R_t = Σ_{s ≤ t} (f* − f(x_s)) on the noiseless f;
* :func:`regret_ratio` R_t / R_t^unif with R_t^unif = t·(f* − mean f); the gap f* − mean f is read
  back from ``summary.json`` as R_T / (T · ratio_T), so no problem has to be loaded;
* :func:`batch_size` the size of the batch (round) that step t belongs to;
* :func:`dict_size` the dictionary size used by the selection at step t;
* :func:`cumulative_time` the wall time spent up to step t, per seed (see there).

Figures are written with matplotlib's Agg backend (no display needed), as PNG and PDF, atomically.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sketchbo import tracking
from sketchbo.tracking import TRACE_KEYS

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
MAX_POINTS = 1500  # points drawn per curve (evenly spaced steps); keeps the PDFs small at T = 10^4


class ResultsError(Exception):
    """The results a figure needs are missing or unusable; the message says which and what to run."""


@dataclass
class Result:
    """One result directory: its ``summary.json`` and the arrays of its ``traces.npz``."""

    path: Path
    summary: dict
    traces: dict
    parts: tuple = ()  # the results of disjoint seed slices this one joins (:func:`join_seed_slices`); () when one run

    @property
    def algorithm(self) -> str:
        return str(self.summary["algorithm"])

    @property
    def problem(self) -> str:
        return str(self.summary["problem"])

    @property
    def T(self) -> int:
        return int(self.summary["T"])

    @property
    def n_seeds(self) -> int:
        return int(self.summary["n_seeds"])

    @property
    def hyperparameters(self) -> dict:
        return dict(self.summary.get("hyperparameters") or {})


def label(algorithm: str) -> str:
    return LABELS.get(algorithm, algorithm)


def color(algorithm: str):
    return COLORS.get(algorithm)


def ordered(algorithms) -> list[str]:
    """Algorithm names in the figures' order (known ones first, the others sorted)."""
    algorithms = set(algorithms)
    return [a for a in ORDER if a in algorithms] + sorted(algorithms - set(ORDER))


# ------------------------------------------------------------------------------------------ loading

def load_result(run_dir) -> Result:
    """The result in ``run_dir``; ResultsError when its files are missing or unreadable."""
    run_dir = Path(run_dir)
    try:
        summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
        shape = (int(summary["n_seeds"]), int(summary["T"]))
        missing = [key for key in ("algorithm", "problem", "cumulative_regret", "regret_ratio") if key not in summary]
        if missing:
            raise KeyError(f"summary.json has no {missing}")
        with np.load(run_dir / "traces.npz") as npz:
            traces = {key: np.asarray(npz[key]) for key in (*TRACE_KEYS, "round_time_s")}
    except (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile) as err:
        raise ResultsError(f"unreadable result in {run_dir} ({type(err).__name__}: {err})") from err
    for key in TRACE_KEYS:
        if traces[key].shape != shape:
            raise ResultsError(f"{run_dir}/traces.npz has {key} of shape {traces[key].shape}, not {shape}")
    return Result(run_dir, summary, traces)


def load_results(root, hint: str = "") -> list[Result]:
    """Every complete result under ``root`` (each directory holding a ``summary.json``), sorted by path, with
    runs of one configuration on disjoint seeds joined into one result (:func:`join_seed_slices`).

    A result whose ``traces.npz`` is missing or unreadable is an error (the run that wrote it did not
    finish; re-running its command completes it). ResultsError when ``root`` holds no result at all;
    ``hint`` (e.g. the command that produces the results) is added to that message.
    """
    root = Path(root)
    hint = f"; {hint}" if hint else ""
    if not root.is_dir():
        raise ResultsError(f"results directory {root} does not exist{hint}")
    results = [load_result(p.parent) for p in sorted(root.rglob("summary.json"))]
    if not results:
        raise ResultsError(f"no results (no summary.json) under {root}{hint}")
    return join_seed_slices(results)


# Config keys in which runs that are slices of one experiment may differ: their seeds, the name of their
# result set, and the keys that do not change a result.
SLICE_FREE_KEYS = ("seed", "n_seeds", "experiment", *tracking.RUNTIME_KEYS)


def slice_identity(result: Result) -> str | None:
    """What runs must share to be joined: algorithm, problem, T, device, dtype and the config without
    :data:`SLICE_FREE_KEYS`; None for a result that cannot be joined (no ``config``/``seeds`` recorded)."""
    config, seeds = result.summary.get("config"), result.summary.get("seeds")
    if not isinstance(config, dict) or not isinstance(seeds, list):
        return None
    kept = tracking.without_keys(config, SLICE_FREE_KEYS)
    shared = [result.algorithm, result.problem, result.T, result.summary.get("device"), result.summary.get("dtype"), kept]
    return json.dumps(shared, sort_keys=True, default=str)


def join_seed_slices(results) -> list[Result]:
    """``results`` with the runs of one configuration on disjoint seeds joined into one result (e.g. ``seed=0
    n_seeds=3`` and ``seed=3 n_seeds=7``: seeds 0-9). A seed's trajectory is a function of its seed (the
    conformance suite checks, bit for bit over short runs, that a seed run alone or among others makes the same
    queries), so the joined result is a run of all its seeds. Runs whose seeds are pairwise disjoint are joined
    all; when some overlap, the chain of consecutive runs from the first seed (:func:`seed_chain`, the runs
    ``scripts/reproduce.py`` counts as complete) is joined and the others are left as they are (:func:`pick`
    takes the result with the most seeds). Joined results are named on stderr."""
    groups: dict[str, list[Result]] = {}
    out = []
    for res in results:
        key = slice_identity(res)
        (groups.setdefault(key, []) if key is not None else out).append(res)
    for group in groups.values():
        seeds = [s for res in group for s in res.summary["seeds"]]
        if len(set(seeds)) == len(seeds):
            parts = sorted(group, key=lambda r: min(r.summary["seeds"], default=0))
        else:
            spans = [(r.summary["seeds"][0], len(r.summary["seeds"]), r) for r in group if consecutive(r.summary["seeds"])]
            parts = [r for _, _, r in seed_chain(spans, min(seeds))]
        if len(parts) < 2:
            out.extend(group)
            continue
        joined = joined_result(parts)
        out.extend(r for r in group if all(r is not p for p in parts))
        names = ", ".join(f"{seed_span(r.summary['seeds'])} ({r.path})" for r in parts)
        print(f"note: {joined.algorithm} on {joined.problem}: seeds {names} read as one result of "
              f"{joined.n_seeds} seeds", file=sys.stderr)
        out.append(joined)
    return sorted(out, key=lambda r: str(r.path))


def consecutive(seeds) -> bool:
    """Whether ``seeds`` is a non-empty run ``s, s + 1, ...`` (what ``seed=s n_seeds=n`` records)."""
    seeds = [int(s) for s in seeds]
    return bool(seeds) and seeds == list(range(seeds[0], seeds[0] + len(seeds)))


def seed_chain(spans, first: int, until: int | None = None) -> list:
    """Consecutive seed slices from seed ``first``: ``spans`` holds a tuple ``(first seed, seed count, ...)`` per
    slice; the chain's first slice holds seed ``first``, each next one starts where the chain ends (disjoint
    seeds), and of the candidates the one reaching furthest is taken (one slice that holds every seed, when
    there is one). Stops when no slice continues it or once it reaches seed ``until`` (excluded). Returns the
    chain's ``spans`` entries, empty when no slice holds ``first``."""
    chain, end = [], first
    while until is None or end < until:
        after = [c for c in spans if c[1] > 0 and (c[0] == end if chain else c[0] <= end < c[0] + c[1])]
        if not after:
            break
        chain.append(max(after, key=lambda c: c[0] + c[1]))
        end = chain[-1][0] + chain[-1][1]
    return chain


def seed_span(seeds) -> str:
    """'0-2' for [0, 1, 2], '4' for [4], '1,5' otherwise."""
    seeds = [int(s) for s in seeds]
    if len(seeds) > 1 and consecutive(seeds):
        return f"{seeds[0]}-{seeds[-1]}"
    return ",".join(map(str, seeds))


def joined_result(parts: list[Result]) -> Result:
    """One result of ``parts`` (same configuration, disjoint seeds, in order): per-seed traces and summary
    lists concatenated; ``wall_time_s`` and ``compile_time_s`` summed over the jobs; round times stay with
    each part (:func:`run_time`, :func:`cumulative_time`). Its path is the first part's."""
    first = parts[0].summary
    n_seeds = sum(p.n_seeds for p in parts)
    summary = dict(first, n_seeds=n_seeds, seeds=[s for p in parts for s in p.summary["seeds"]],
                   config={**first["config"], "n_seeds": n_seeds},  # from the first part's first seed
                   wall_time_s=sum(float(p.summary.get("wall_time_s", 0.0)) for p in parts),
                   compile_time_s=sum(float(p.summary.get("compile_time_s", 0.0)) for p in parts))
    for key in tracking.PER_SEED_KEYS:
        if all(key in p.summary for p in parts):
            summary[key] = [v for p in parts for v in p.summary[key]]
    traces = {key: np.concatenate([p.traces[key] for p in parts]) for key in TRACE_KEYS}
    return Result(parts[0].path, summary, traces, parts=tuple(parts))


def load_npz(results, filename: str, keys, hint: str = "") -> dict:
    """The arrays ``keys`` of ``<results>/<filename>`` (or of the file ``results``), with the JSON string
    ``settings`` decoded when present; ResultsError naming the file when it is missing or unreadable."""
    results = Path(results)
    path = results / filename if results.is_dir() else results
    if not path.is_file():
        raise ResultsError(f"{path} does not exist; {hint}")
    try:
        with np.load(path) as npz:
            data = {key: np.asarray(npz[key]) for key in keys}
        if "settings" in data:
            data["settings"] = json.loads(str(data["settings"]))
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as err:
        raise ResultsError(f"unreadable {path} ({type(err).__name__}: {err}); {hint}") from err
    return data


def problems_of(results) -> list[str]:
    """Problem names in the order abalone, cadata, then the others sorted."""
    names = {r.problem for r in results}
    first = [p for p in ("abalone", "cadata") if p in names]
    return first + sorted(names - set(first))


def pick(results, problem: str, algorithm: str) -> Result | None:
    """The result of ``algorithm`` on ``problem`` with the longest horizon (then the most seeds); None if absent.

    When several results of the pair exist (e.g. runs of two horizons), the others are named on stderr.
    """
    found = [r for r in results if r.problem == problem and r.algorithm == algorithm]
    if not found:
        return None
    found.sort(key=lambda r: (r.T, r.n_seeds, str(r.path)), reverse=True)
    for other in found[1:]:
        print(f"note: {algorithm} on {problem}: using {found[0].path}, ignoring {other.path}", file=sys.stderr)
    return found[0]


# ------------------------------------------------------------------------------------------- curves

def steps(result: Result) -> np.ndarray:
    """t = 1..T."""
    return np.arange(1, result.T + 1)


def cumulative_regret(result: Result) -> np.ndarray:
    """R_t per seed, (n_seeds, T)."""
    return np.cumsum(np.asarray(result.traces["instant_regret"], dtype=np.float64), axis=1)


def uniform_gap(result: Result) -> float:
    """f* − mean f, recovered from ``summary.json`` as R_T / (T · R_T/R_T^unif) (NaN if every R_T is 0)."""
    regret = np.asarray(result.summary["cumulative_regret"], dtype=np.float64)
    ratio = np.asarray(result.summary["regret_ratio"], dtype=np.float64)
    ok = np.isfinite(ratio) & (ratio > 0) & np.isfinite(regret)
    if not np.any(ok):
        return float("nan")
    return float(np.median(regret[ok] / (result.T * ratio[ok])))


def regret_ratio(result: Result) -> np.ndarray:
    """R_t / R_t^unif per seed, (n_seeds, T), with R_t^unif = t · (f* − mean f)."""
    return cumulative_regret(result) / (steps(result) * uniform_gap(result))[None, :]


def batch_size(result: Result) -> np.ndarray:
    """Size of the batch containing step t, per seed, (n_seeds, T)."""
    batch = np.asarray(result.traces["batch_index"]).astype(np.int64)
    out = np.empty(batch.shape, dtype=np.int64)
    for i, row in enumerate(batch):
        out[i] = np.bincount(row, minlength=int(row.max()) + 1)[row]
    return out


def dict_size(result: Result) -> np.ndarray:
    """Dictionary size used by the selection at step t, per seed, (n_seeds, T)."""
    return np.asarray(result.traces["dict_size"]).astype(np.int64)


def seeds_sequential(result: Result) -> bool:
    """Whether the job's seeds ran one after another (``lax.map``: seed_axis=map, or auto on a CPU)."""
    axis = str((result.summary.get("config") or {}).get("seed_axis", "auto"))
    if axis == "auto":
        return str(result.summary.get("device", "cpu")).lower().startswith("cpu")
    return axis != "vmap"


def time_scale(result: Result) -> float:
    """Factor from the job's round times (all seeds) to one seed's: 1/n_seeds when seeds ran in sequence."""
    return 1.0 / result.n_seeds if seeds_sequential(result) else 1.0


def cumulative_time(result: Result) -> np.ndarray:
    """Wall time (s) spent up to step t, per seed, (n_seeds, T); compilation excluded.

    ``traces.npz`` has the wall time of each round (``round_time_s``, for all seeds of the job
    together: the host loop times a chunk of rounds and splits it evenly over them), not of each
    seed. Step t of seed i lies in round ``batch_index[i, t]``, so the time up to t is the sum of the
    round times of the rounds ≤ that round. When the seeds ran one after another (``lax.map``, the
    default on CPU) a round's time is the sum over seeds, and it is divided by n_seeds: the curve is
    the time of one seed, as in the papers' plots. With ``vmap`` (seeds together, on accelerators) it is
    the time of the whole job. The spread over seeds only comes from their different batch schedules.
    """
    if result.parts:  # joined seed slices: each part's own rounds
        return np.concatenate([cumulative_time(p) for p in result.parts])
    rounds = np.cumsum(np.asarray(result.traces["round_time_s"], dtype=np.float64)) * time_scale(result)
    batch = np.asarray(result.traces["batch_index"]).astype(np.int64)
    if rounds.size == 0:
        return np.zeros(batch.shape)
    return rounds[np.minimum(batch, rounds.size - 1)]


def run_time(result: Result) -> float:
    """Wall time (s) of the whole run for one seed (see :func:`cumulative_time`); compilation excluded. Of
    joined seed slices: the parts' times weighted by their seed counts."""
    if result.parts:
        return sum(p.n_seeds * run_time(p) for p in result.parts) / result.n_seeds
    return float(np.sum(np.asarray(result.traces["round_time_s"], dtype=np.float64)) * time_scale(result))


def mean_std(curves: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and (population) standard deviation over seeds (axis 0)."""
    curves = np.asarray(curves, dtype=np.float64)
    return curves.mean(axis=0), curves.std(axis=0)


def thin(n: int, max_points: int = MAX_POINTS) -> np.ndarray:
    """At most ``max_points`` evenly spaced indices of 0..n-1, the first and the last included."""
    if n <= max_points:
        return np.arange(n)
    return np.unique(np.linspace(0, n - 1, max_points).round().astype(np.int64))


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


def regret_panels(axes, problems, results, methods) -> dict:
    """One panel per problem: cumulative regret R_t, mean ± std over seeds, for each of ``methods`` found
    there (figures' order). Returns the legend handles ``{algorithm: line}``."""
    handles = {}
    for ax, problem in zip(axes, problems):
        present = {r.algorithm for r in results if r.problem == problem} & set(methods)
        shown = [pick(results, problem, algorithm) for algorithm in ordered(present)]
        for res in shown:
            handles[res.algorithm] = band(ax, steps(res), cumulative_regret(res), res.algorithm)
        ax.set_title(f"{problem} ({seeds_note(shown)})", loc="left", fontsize=10)
        ax.set_ylabel(r"cumulative regret $R_t$")
    return handles


def seeds_note(shown) -> str:
    """The seed counts of the results ``shown`` in one panel: "10 seeds", or the most common count (the larger
    on a tie) and the exceptions by label ("10 seeds; Standard GP-UCB 3") when they differ."""
    counts = [r.n_seeds for r in shown]
    if not counts:
        return "no runs"
    common = max(set(counts), key=lambda n: (counts.count(n), n))
    others = ", ".join(f"{label(r.algorithm)} {r.n_seeds}" for r in shown if r.n_seeds != common)
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
            handles[algorithm] = band(row[0], t, cumulative_regret(res), algorithm)
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
        tracking._atomic_write(path, lambda fh, fmt=fmt: fig.savefig(fh, format=fmt, dpi=150, bbox_inches="tight"))
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
    fig.legend([handles[a] for a in order], [label(a) for a in order], loc="lower center",
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
    """Every complete result of the result sets given by ``--also`` (:func:`add_also`)."""
    return [r for directory in args.also for r in load_results(directory, hint)]


PANELS_PER_ROW = 3  # methods_figure's panels wrap onto rows of this many


def methods_figure(argv, doc: str, name: str, hint: str, methods, panels_of=None) -> list[Path]:
    """A plot script's ``main``: one panel of cumulative regret per problem on which any of ``panels_of``
    (default: ``methods``) ran in ``--results``, every one of ``methods`` found there or in the result sets
    given by ``--also`` (repeatable: runs another figure already made, e.g. GSSBO from Fig. 2's), laid out by
    :func:`panel_rows`; ``doc``'s first line is the description."""
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


def script_main(main, argv=None) -> None:
    """Run a plot script's ``main(argv)``: print the written files; ResultsError -> stderr, exit status 2."""
    prog = Path(sys.argv[0]).name
    try:
        paths = main(argv)
    except ResultsError as err:
        print(f"{prog}: error: {err}", file=sys.stderr)
        sys.exit(2)
    for path in paths:
        print(f"wrote {path}")


__all__ = [
    "Result", "ResultsError", "LABELS", "COLORS", "load_result", "load_results", "join_seed_slices", "pick", "problems_of",
    "cumulative_regret", "uniform_gap", "regret_ratio", "batch_size", "dict_size", "cumulative_time",
    "run_time", "mean_std", "thin", "pyplot", "band", "regret_panels", "seeds_note", "save_figure", "add_also",
    "also_results", "methods_figure", "panel_rows", "figure_parser",
    "script_main",
]
