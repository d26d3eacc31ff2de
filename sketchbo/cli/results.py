"""Result directories on disk read back for figures and tables: loading, completeness and seed slices.

Part of the experiment system (with ``plots``, ``tracking`` and ``jobs``): it reads what runs wrote
(``summary.json`` and ``traces.npz`` of every result directory, docs/guide.md#outputs) and joins runs of one
config on disjoint seeds into one result. A regret record (`write_record`) is a small JSON file that keeps
each result's summary and R_t at 101 steps, so that a figure of regret curves can be committed with the
numbers it was drawn from and redrawn without the result directories.
"""
from __future__ import annotations

import functools
import json
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sketchbo.cli import tracking
from sketchbo.cli.tracking import TRACE_KEYS


class ResultsError(Exception):
    """The results a figure needs are missing or unusable; the message says which and what to run."""


@dataclass
class Result:
    """One result directory: its ``summary.json`` and the arrays of its ``traces.npz``.

    Attributes:
        path: the result's directory (of joined seed slices: the first slice's).
        summary: the content of its ``summary.json``.
        traces: the arrays of its ``traces.npz`` by name: those of ``TRACE_KEYS``, each (n_seeds, T), and
            ``round_time_s`` (one entry per round).
        parts: the results of the disjoint seed slices this one joins (`join_seed_slices`); () when it is one
            run.
    """

    path: Path
    summary: dict
    traces: dict
    parts: tuple = ()  # the results of disjoint seed slices this one joins (`join_seed_slices`); () when one run

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
    runs of one configuration on disjoint seeds joined into one result (`join_seed_slices`); when
    ``root`` is a file, the results of that regret record (`load_record`).

    A result whose ``traces.npz`` is missing or unreadable is an error (the run that wrote it did not
    finish; re-running its command completes it). ResultsError when ``root`` holds no result at all;
    ``hint`` (e.g. the command that produces the results) is added to that message.
    """
    root = Path(root)
    hint = f"; {hint}" if hint else ""
    if root.is_file():
        return load_record(root)
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
    `SLICE_FREE_KEYS`; None for a result that cannot be joined (no ``config``/``seeds`` recorded)."""
    config, seeds = result.summary.get("config"), result.summary.get("seeds")
    if not isinstance(config, dict) or not isinstance(seeds, list):
        return None
    kept = tracking.without_keys(config, SLICE_FREE_KEYS)
    shared = [result.algorithm, result.problem, result.T, result.summary.get("device"), result.summary.get("dtype"), kept]
    return json.dumps(shared, sort_keys=True, default=str)


# What ``summary.json`` holds per seed (lists, one item per seed) besides ``seeds``: `tracking.summary_of`'s
SUMMARY_PER_SEED_KEYS = (*tracking.PER_SEED_KEYS, "certificates", "d_eff", "dict_bound", "batch_bound", "approximation",
                         "on_face")


def join_seed_slices(results) -> list[Result]:
    """``results`` with the runs of one configuration on disjoint seeds joined into one result (e.g. ``seed=0
    n_seeds=3`` and ``seed=3 n_seeds=7``: seeds 0-9). A seed's trajectory is a function of its seed (the
    conformance suite checks, bit for bit over short runs, that a seed run alone or among others makes the same
    queries), so the joined result is a run of all its seeds. Runs whose seeds are pairwise disjoint are joined
    all; when some overlap, the chain of consecutive runs from the first seed (`seed_chain`, the runs
    ``scripts/reproduce.py`` counts as complete) is joined and the others are left as they are (`pick`
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
    each part (`run_time`, `cumulative_time`). Its path is the first part's."""
    first = parts[0].summary
    n_seeds = sum(p.n_seeds for p in parts)
    summary = dict(first, n_seeds=n_seeds, seeds=[s for p in parts for s in p.summary["seeds"]],
                   config={**first["config"], "n_seeds": n_seeds},  # from the first part's first seed
                   wall_time_s=sum(float(p.summary.get("wall_time_s", 0.0)) for p in parts),
                   compile_time_s=sum(float(p.summary.get("compile_time_s", 0.0)) for p in parts))
    summary["hyperparameters"] = joined_hyperparameters([p.summary.get("hyperparameters") for p in parts])
    for key in SUMMARY_PER_SEED_KEYS:  # a per-seed list that some part lacks is left out, not the first's kept
        summary.pop(key, None)
        if all(isinstance(p.summary.get(key), list) for p in parts):
            summary[key] = [v for p in parts for v in p.summary[key]]
    traces = {key: np.concatenate([p.traces[key] for p in parts]) for key in TRACE_KEYS}
    return Result(parts[0].path, summary, traces, parts=tuple(parts))


# hyperparameters a run reports as the capacities it grew to: they differ between seed slices of one job
CAPACITY_KEYS = ("m_max_final", "u_max_final")


def joined_hyperparameters(hypers: list) -> dict:
    """The hyperparameters of joined seed slices: the first's, with the largest of each capacity the slices grew
    to (`CAPACITY_KEYS`)."""
    hyper = dict(hypers[0] or {})
    for key in CAPACITY_KEYS:
        if all(isinstance((h or {}).get(key), (int, float)) for h in hypers):
            hyper[key] = max(h[key] for h in hypers)
    return hyper


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


# ------------------------------------------------------------------------------------------ regret records

RECORD_FORMAT = "sketchbo regret record 1"
RECORD_POINTS = 100  # steps a record keeps per curve besides t = 1: T/100, 2T/100, ..., T


class RecordedTraces(dict):
    """The traces of a recorded result: none; asking for one is a ResultsError that says so."""

    def __missing__(self, key):
        raise ResultsError(f"a regret record keeps R_t and the per-seed summary only, not the trace {key!r}: "
                           "this needs the result directories themselves")


@dataclass
class RecordedResult(Result):
    """A result as a regret record keeps it (`write_record`): its summary (without the config), the
    cumulative regret of every seed at the recorded steps and one seed's execution time; no traces.

    Attributes:
        path: the result's first directory as the record names it (``paths`` of its entry).
        summary: the result's entry in the record but ``t`` and ``regret``: its ``summary.json`` without the
            config, with its directories, the date it was written and one seed's execution time
            (``exec_s_per_seed``).
        traces: none: asking for a trace is a ResultsError that says so (`RecordedTraces`).
        parts: () (the entry is one result, its seed slices joined when it was recorded).
        t: (K,) the recorded steps, 1 and T among them.
        regret: (n_seeds, K) R_t per seed at the steps ``t``.
        curves: further per-seed curves the record kept at the steps ``t``, each (n_seeds, K), by the name
            of the plots function that computes it (``batch_size``, ``dict_size``, ``cumulative_time``).
    """

    t: np.ndarray | None = None  # (K,) the recorded steps, 1 and T among them
    regret: np.ndarray | None = None  # (n_seeds, K) R_t per seed at the steps t
    curves: dict | None = None  # name -> (n_seeds, K) at the steps t

    def curve(self, name: str) -> np.ndarray:
        """The recorded curve ``name``, (n_seeds, K); ResultsError when the record did not keep it."""
        if not self.curves or name not in self.curves:
            raise ResultsError(f"the regret record of {self.algorithm} on {self.problem} keeps no {name!r} curve "
                               f"(kept: {sorted(self.curves or {})}); record it with scripts/record_regret.py --curves")
        return self.curves[name]


def recorded(fn):
    """Decorate a curve function of the plots (result → (n_seeds, T)) so that, of a regret record's result, it
    returns the curve of the same name the record kept at its steps (`RecordedResult.curve`)."""
    @functools.wraps(fn)
    def curve(result):
        return result.curve(fn.__name__) if isinstance(result, RecordedResult) else fn(result)
    return curve


def record_steps(T: int, points: int = RECORD_POINTS) -> np.ndarray:
    """The steps a record keeps: 1 and ``points`` evenly spaced steps up to T (all of 1..T when T ≤ points)."""
    spaced = np.linspace(0, T, points + 1)[1:].round().astype(np.int64)
    return np.unique(np.concatenate([[1], np.maximum(spaced, 1)]))


def read_record(path) -> list[dict]:
    """The entries of the regret record ``path``; ResultsError when it is unreadable or not a record."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ResultsError(f"unreadable regret record {path} ({type(err).__name__}: {err})") from err
    if not isinstance(data, dict) or data.get("format") != RECORD_FORMAT or not isinstance(data.get("results"), list):
        raise ResultsError(f"{path} is not a regret record (no \"format\": {RECORD_FORMAT!r} with \"results\")")
    return data["results"]


def load_record(path) -> list[RecordedResult]:
    """The results of the regret record ``path``, for the figures and tables that need only R_t."""
    out = []
    for entry in read_record(path):
        try:
            t = np.asarray(entry["t"], dtype=np.int64)
            regret = np.asarray(entry["regret"], dtype=np.float64)
            summary = {key: value for key, value in entry.items() if key not in ("t", "regret", "curves")}
            curves = {name: np.asarray(c, dtype=np.float64) for name, c in entry.get("curves", {}).items()}
            ok = regret.shape == (int(entry["n_seeds"]), t.size) and t[-1] == int(entry["T"])
        except (KeyError, TypeError, ValueError) as err:
            raise ResultsError(f"broken entry in regret record {path} ({type(err).__name__}: {err})") from err
        if not ok:
            raise ResultsError(f"broken entry in regret record {path}: {entry['algorithm']} on {entry['problem']} "
                               f"has R_t of shape {regret.shape} for {entry['n_seeds']} seeds and steps up to {t[-1]}")
        out.append(RecordedResult(Path(entry["paths"][0]), summary, RecordedTraces(), t=t, regret=regret,
                                  curves=curves))
    return out
