"""Writing regret records: a result's entry (`record_entry`), and a record's entries added, replaced or, for a
job whose seeds ran in several sessions, joined seed slice by seed slice (`write_record`). Reading a record is
``sketchbo.cli.results`` (`read_record`, `load_record`), which the figures use."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from sketchbo.cli import tracking
from sketchbo.cli.results import (
    CAPACITY_KEYS, RECORD_FORMAT, RECORD_POINTS, SUMMARY_PER_SEED_KEYS, Result, ResultsError, joined_hyperparameters,
    read_record, record_steps, seed_span,
)


def record_entry(result: Result, regret: np.ndarray, exec_s_per_seed: float, points: int = RECORD_POINTS,
                 curves: dict | None = None) -> dict:
    """A result's entry in a regret record: what ``summary.json`` says of it, without the config; its
    directories, the UTC date its last summary was written, one seed's execution time, and ``regret``, R_t
    per seed, (n_seeds, T) (``plots.cumulative_regret``), kept at the steps ``t`` (`record_steps`) to 6
    significant digits (R_T itself is kept exactly in ``cumulative_regret``), and the further per-seed
    ``curves`` given ({name: (n_seeds, T)}) at the same steps. The directories are named relative to the
    working directory when below it."""
    t = record_steps(result.T, points)
    kept = {name: [[float(f"{v:.6g}") for v in row] for row in np.asarray(c)[:, t - 1]]
            for name, c in (curves or {}).items()}
    parts = result.parts or (result,)
    written = max((Path(p.path) / "summary.json").stat().st_mtime for p in parts)
    summary = {key: value for key, value in result.summary.items() if key not in ("config", "capacity_events")}
    return {
        **summary,
        "paths": [relative(p.path) for p in parts],
        "written": np.datetime_as_string(np.datetime64(int(written), "s"), unit="s") + "Z",
        "exec_s_per_seed": float(exec_s_per_seed),
        "t": t.tolist(),
        "regret": [[float(f"{v:.6g}") for v in row] for row in regret[:, t - 1]],
        **({"curves": kept} if kept else {}),
    }


def relative(path) -> str:
    """``path`` relative to the working directory when it lies below it (a record names no one's home)."""
    path = Path(path).resolve()
    return str(path.relative_to(Path.cwd().resolve())) if path.is_relative_to(Path.cwd().resolve()) else str(path)


def record_key(entry: dict) -> str:
    """What identifies a job in a record: algorithm, problem, T and hyperparameters (not its seeds)."""
    return json.dumps([entry["algorithm"], entry["problem"], entry["T"], entry.get("hyperparameters")],
                      sort_keys=True, default=str)


# What a record entry holds per seed besides `SUMMARY_PER_SEED_KEYS` (``regret`` and every curve: a row per seed)
ENTRY_PER_SEED_KEYS = ("seeds", *SUMMARY_PER_SEED_KEYS, "regret")


def seed_free_key(entry: dict) -> str:
    """What the entries of one job's seed slices share: algorithm, problem, T, device, dtype and the
    hyperparameters but the capacities each slice grew to (`CAPACITY_KEYS`)."""
    hyper = {k: v for k, v in (entry.get("hyperparameters") or {}).items() if k not in CAPACITY_KEYS}
    return json.dumps([entry["algorithm"], entry["problem"], entry["T"], entry.get("device"), entry.get("dtype"), hyper],
                      sort_keys=True, default=str)


def join_entries(parts: list[dict]) -> dict:
    """One record entry of a job's entries on disjoint seeds (the record-level `joined_result`): the per-seed
    lists, ``regret`` and the curves concatenated in seed order (a per-seed key that some part lacks is left
    out), the seed counts, wall and compile times summed, one seed's execution time weighted by the parts' seed
    counts, their directories listed, the latest date, the largest capacities. Every other key must agree;
    ResultsError names the one that does not."""
    parts = sorted(parts, key=lambda e: min(e["seeds"]))
    first = parts[0]
    seeds = [s for e in parts for s in e["seeds"]]
    if len(set(seeds)) != len(seeds):
        raise ResultsError(f"{first['algorithm']} on {first['problem']}: the seed slices "
                           f"{[seed_span(e['seeds']) for e in parts]} overlap; only disjoint seeds join")
    n = sum(int(e["n_seeds"]) for e in parts)
    joined = {"n_seeds": n, "paths": [p for e in parts for p in e["paths"]],
              "written": max(e["written"] for e in parts),
              "wall_time_s": sum(float(e.get("wall_time_s", 0.0)) for e in parts),
              "compile_time_s": sum(float(e.get("compile_time_s", 0.0)) for e in parts),
              "exec_s_per_seed": sum(int(e["n_seeds"]) * float(e["exec_s_per_seed"]) for e in parts) / n}
    for key in ENTRY_PER_SEED_KEYS:
        if all(isinstance(e.get(key), list) for e in parts):
            joined[key] = [v for e in parts for v in e[key]]
    names = set.intersection(*(set(e.get("curves", {})) for e in parts))
    if names:
        joined["curves"] = {name: [row for e in parts for row in e["curves"][name]] for name in sorted(names)}
    joined["hyperparameters"] = joined_hyperparameters([e.get("hyperparameters") for e in parts])
    for key in sorted(set().union(*parts) - set(joined) - set(ENTRY_PER_SEED_KEYS) - {"curves"}):
        values = [e.get(key) for e in parts]
        if any(v != values[0] for v in values):
            raise ResultsError(f"{first['algorithm']} on {first['problem']}: the seed slices "
                               f"{[seed_span(e['seeds']) for e in parts]} differ in {key!r} ({values}); "
                               "only slices of one job join")
        joined[key] = values[0]
    return joined


def add_seeds(entry: dict, recorded: list[dict]) -> tuple[dict, list[dict]]:
    """``entry`` joined with the recorded slices of its job (`seed_free_key`) on other seeds, and the recorded
    entries it takes the place of: those slices, and those whose seeds it holds all of (a re-recording). Seeds
    already recorded within a larger entry of the job keep that entry (noted on stderr). A recorded slice that
    shares some seeds with ``entry`` but not all is a ResultsError."""
    same = [e for e in recorded if seed_free_key(e) == seed_free_key(entry)]
    mine = set(entry["seeds"])
    holder = next((e for e in same if mine < set(e["seeds"])), None)
    if holder is not None:
        print(f"note: {entry['algorithm']} on {entry['problem']}: seeds {seed_span(entry['seeds'])} are recorded "
              f"already, with seeds {seed_span(holder['seeds'])}; that entry is kept", file=sys.stderr)
        return holder, [holder]
    overlapping = [e for e in same if set(e["seeds"]) & mine and not set(e["seeds"]) <= mine]
    if overlapping:
        raise ResultsError(f"{entry['algorithm']} on {entry['problem']}: seeds {seed_span(entry['seeds'])} share "
                           f"some but not all seeds with the recorded seeds {seed_span(overlapping[0]['seeds'])}; "
                           "record them without --add-seeds to replace that entry")
    others = [e for e in same if not set(e["seeds"]) & mine]
    return (join_entries([entry, *others]) if others else entry), same


def write_record(path, entries: list[dict], join_seeds: bool = False) -> list[dict]:
    """Add ``entries`` to the regret record ``path`` (created if absent), each replacing the entry of the same
    job (`record_key`) already there; written whole, atomically, one entry a line. With ``join_seeds`` an
    entry is joined with the recorded slices of its job on other seeds instead (`add_seeds`): a job whose seeds
    ran in several sessions is recorded slice by slice. Returns the record's entries."""
    path = Path(path)
    recorded = read_record(path) if path.exists() else []
    entries = list(entries)
    if join_seeds:
        replaced = []
        for i, entry in enumerate(entries):
            entries[i], gone = add_seeds(entry, recorded)
            replaced += gone
        recorded = [e for e in recorded if all(e is not g for g in replaced)]
    new = {record_key(e): e for e in entries}
    kept = [e for e in recorded if record_key(e) not in new]
    merged = sorted(kept + list(new.values()), key=lambda e: (e["problem"], e["algorithm"], record_key(e)))
    lines = ",\n".join(json.dumps(tracking.to_jsonable(e), sort_keys=True) for e in merged)
    tracking.atomic_write_text(path, f'{{"format": "{RECORD_FORMAT}", "results": [\n{lines}\n]}}\n')
    return merged
