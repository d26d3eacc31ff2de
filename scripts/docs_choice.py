"""The tables and numbers of docs/choosing.md ("Which algorithm should I use"), computed from committed records.

* ``experiments/choice_bbkb_vs_gp_ucb.json`` (written by ``scripts/bench_choice.py``): BBKB against exact
  GP-UCB, compilation and execution time and R_T / R_unif by number of arms A and horizon T, the medians of
  the repeats of every cell;
* ``experiments/gssbo_fig2_record.json`` (the regret record of GSSBO's Fig. 2, read as
  ``scripts/table_gssbo.py`` reads it): GSSBO against Standard GP-UCB on boxes, one seed's execution time and
  R_T / R_unif.

``tables()`` maps a name to a Markdown table, ``values()`` a name to a number as the page writes it inline;
``scripts/docs_records.py`` fills and checks the page's markers (``python scripts/docs_choice.py`` prints them).

Only numpy and ``sketchbo.cli`` (for the GSSBO record) are imported: no JAX program runs.
"""
from __future__ import annotations

import re
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "scripts"
CHOICE_RECORD = REPO / "experiments" / "choice_bbkb_vs_gp_ucb.json"
GSSBO_RECORD = REPO / "experiments" / "gssbo_fig2_record.json"
LABELS = {"bbkb": "BBKB", "gp_ucb": "GP-UCB"}
RATIO = r"$R_T/R_T^{\mathrm{unif}}$"  # column titles are LaTeX (the site renders it)
HIGH_D = 10  # the guide groups the box problems into d < HIGH_D and d >= HIGH_D
DIMENSIONS = {"diabetes": 4}  # the box problems whose name does not end in their dimension (docs/problems.md)



# ------------------------------------------------------------------------------------------ BBKB vs GP-UCB

def load(path: Path) -> dict:
    """A record's raw numbers, read through scripts/docs_records.py (its cache: the drift test can change them)."""
    from docs_records import load as load_record
    return load_record({CHOICE_RECORD: "choice_bbkb_vs_gp_ucb", GSSBO_RECORD: "gssbo_fig2"}[path])


def cells(record: dict, setting: str) -> dict:
    """``{(A, T): {algorithm: medians}}`` of one setting: per algorithm the medians over the repeats of
    compile_s, exec_s, total_s (compile + exec of each run), regret_ratio, max_model, n_batches, max_batch,
    growths (capacity growths, each a recompilation counted in compile_s) and the number of runs ``n``; an
    algorithm not run in the cell has ``{"not_run": why}``."""
    out: dict = {}
    grid = next(g for g in record["grid"] if g["setting"] == setting)
    for A in grid["A"]:
        for T in grid["T"]:
            out[A, T] = {}
    runs: dict = {}
    for r in record["runs"]:
        if r["setting"] == setting and "error" not in r:
            runs.setdefault((r["A"], r["T"], r["algorithm"]), []).append(r)
    for (A, T, algorithm), rs in runs.items():
        med = {key: statistics.median(float(r[key]) for r in rs)
               for key in ("compile_s", "exec_s", "regret_ratio", "max_model", "n_batches", "max_batch")}
        med["total_s"] = statistics.median(float(r["compile_s"]) + float(r["exec_s"]) for r in rs)
        med["growths"] = statistics.median(len(r["capacity_events"]) for r in rs)
        med["n"] = len(rs)
        out[A, T][algorithm] = med
    for n in record["not_run"]:
        if n["setting"] == setting:
            out[n["A"], n["T"]].setdefault(n["algorithm"], {"not_run": n["why"]})
    return out


def speedups(cell: dict) -> tuple[float, float] | None:
    """(GP-UCB's total time / BBKB's, GP-UCB's execution time / BBKB's) of a cell, None unless both ran."""
    b, g = cell.get("bbkb", {}), cell.get("gp_ucb", {})
    if "total_s" not in b or "total_s" not in g:
        return None
    return g["total_s"] / b["total_s"], g["exec_s"] / b["exec_s"]


def _times(m: dict) -> str:
    if "not_run" in m:
        return "not run"
    return f"{m['compile_s']:.1f} + {m['exec_s']:.1f}" if m else "–"


def _fold(x: float) -> str:
    return f"{x:#.2g}×" if x < 10 else f"{x:.0f}×"


def bbkb_table(record: dict, setting: str) -> str:
    """One row per (A, T): each algorithm's median compile + exec seconds, the speed-up of BBKB (GP-UCB's time
    over BBKB's, total and execution), R_T / R_unif of each, BBKB's dictionary m_T and GP-UCB's unique pulled
    arms U_T, and the capacity growths of each (each one a recompilation, counted in the compilation time)."""
    lines = [("| $A$ | $T$ | BBKB s (compile + exec) | GP-UCB s (compile + exec) | GP-UCB ÷ BBKB, total "
              f"| GP-UCB ÷ BBKB, exec | {RATIO} BBKB / GP-UCB | $m_T$ / $U_T$ | growths |"),
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for (A, T), cell in sorted(cells(record, setting).items()):
        b, g = cell.get("bbkb", {}), cell.get("gp_ucb", {})
        s = speedups(cell)
        ratio = " / ".join(f"{m['regret_ratio']:.3f}" if "regret_ratio" in m else "–" for m in (b, g))
        model = " / ".join(f"{m['max_model']:.0f}" if "max_model" in m else "–" for m in (b, g))
        growths = " / ".join(f"{m['growths']:g}" if "growths" in m else "–" for m in (b, g))
        fast = (_fold(s[0]), _fold(s[1])) if s else ("–", "–")
        lines.append(f"| {A} | {T} | {_times(b)} | {_times(g)} | {fast[0]} | {fast[1]} | {ratio} | {model} "
                     f"| {growths} |")
    return "\n".join(lines)


def not_run_table(record: dict) -> str:
    """The cells not run, with why."""
    lines = ["| setting | algorithm | $A$ | $T$ | why not run |", "|---|---|---:|---:|---|"]
    for n in record["not_run"]:
        lines.append(f"| `{n['setting']}` | {LABELS.get(n['algorithm'], n['algorithm'])} | {n['A']} | {n['T']} | "
                     f"{n['why']} |")
    return "\n".join(lines)


def _load(x) -> str:
    return " / ".join(f"{v:.1f}" for v in x)


def machine_line(record: dict) -> str:
    m = record["machine"]
    return (f"{m['cpu_model']}, {m['cores']} cores, load average (1 / 5 / 15 min) {_load(m['load_avg_start'])} at the "
            f"start and {_load(m.get('load_avg_end', [float('nan')] * 3))} at the end; commit {record['commit']}, "
            f"{record['date'][:10]}")


def duration(record: dict) -> str:
    """The record's wall-clock duration in minutes, from its start and end dates ("?" when it has no end)."""
    import datetime

    if "date_end" not in record:
        return "?"
    start, end = (datetime.datetime.fromisoformat(record[k]) for k in ("date", "date_end"))
    return f"{(end - start).total_seconds() / 60:.0f} min"


# ------------------------------------------------------------------------------------------ GSSBO vs GP-UCB

def gssbo_rows() -> list[dict]:
    """``scripts/table_gssbo.py``'s rows of the Fig. 2 record: GP-UCB (``std_gp_ucb``) and GSSBO (its default
    rule) only."""
    sys.path.insert(0, str(SCRIPTS))
    import table_gssbo

    from sketchbo.cli import plots

    rows = table_gssbo.rows(plots.load_results(GSSBO_RECORD, table_gssbo.HINT))
    return [r for r in rows if r["algorithm"] in ("std_gp_ucb", "gssbo (pivoted)")]


def _dimension(problem: str) -> int:
    digits = re.search(r"(\d+)$", problem)
    return int(digits.group(1)) if digits else DIMENSIONS[problem]


def gssbo_pairs(rows: list[dict]) -> list[tuple[dict, dict]]:
    """(GP-UCB's row, GSSBO's row) per problem, in order of dimension."""
    by = {(r["problem"], r["algorithm"]): r for r in rows}
    problems = sorted({r["problem"] for r in rows}, key=lambda p: (_dimension(p), p))
    return [(by[p, "std_gp_ucb"], by[p, "gssbo (pivoted)"]) for p in problems
            if (p, "std_gp_ucb") in by and (p, "gssbo (pivoted)") in by]


def _ratio(r: dict) -> str:
    return f"{r['ratio_mean']:#.3g} ({r['ratio_min']:#.3g}–{r['ratio_max']:#.3g})"


def gssbo_table(rows: list[dict]) -> str:
    lines = [("| problem | $d$ | exec s / seed GP-UCB / GSSBO | GSSBO's share of GP-UCB's time | "
              f"{RATIO} GP-UCB | {RATIO} GSSBO | GSSBO's $R_T$ / GP-UCB's |"), "|---|---:|---:|---:|---:|---:|---:|"]
    for g, s in gssbo_pairs(rows):
        lines.append(f"| {g['problem']} | {_dimension(g['problem'])} | {g['exec_s_per_seed']:.0f} / "
                     f"{s['exec_s_per_seed']:.1f} | {s['time_vs_gp_ucb']:.1%} | {_ratio(g)} | {_ratio(s)} | "
                     f"{s['regret_vs_gp_ucb']:.2f}× |")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------ the page's contents

def tables() -> dict[str, str]:
    """Name -> Markdown table of docs/choosing.md."""
    record = load(CHOICE_RECORD)
    out = {f"choice-{g['setting']}": bbkb_table(record, g["setting"]) for g in record["grid"]}
    out["choice-not-run"] = not_run_table(record)
    out["choice-gssbo"] = gssbo_table(gssbo_rows())
    return out


def values() -> dict[str, str]:
    """Name -> a number (with its unit) as docs/choosing.md writes it inline."""
    record = load(CHOICE_RECORD)
    out = {"choice-machine": machine_line(record), "choice-repeats": str(record["repeats"]),
           "choice-max-run": f"{record['max_run_s']:.0f} s", "choice-duration": duration(record)}
    for g in record["grid"]:
        setting = g["setting"]
        for (A, T), cell in cells(record, setting).items():
            key = f"{setting}-A{A}-T{T}"
            s = speedups(cell)
            if s:
                out[f"{key}-speedup-total"], out[f"{key}-speedup-exec"] = _fold(s[0]), _fold(s[1])
            for algorithm, m in cell.items():
                if "total_s" in m:
                    name = f"{key}-{algorithm}"
                    out[f"{name}-total"] = f"{m['total_s']:.1f} s"
                    out[f"{name}-compile"] = f"{m['compile_s']:.1f} s"
                    out[f"{name}-exec"] = f"{m['exec_s']:.1f} s"
                    out[f"{name}-ratio"] = f"{m['regret_ratio']:.3f}"
                    out[f"{name}-model"] = f"{m['max_model']:.0f}"
                    out[f"{name}-batches"] = f"{m['n_batches']:.0f}"
        both = {at: c for at, c in cells(record, setting).items() if speedups(c)}
        for T in g["T"]:
            got = [speedups(c) for (_, t), c in sorted(both.items()) if t == T]
            if got:
                for i, kind in enumerate(("total", "exec")):
                    lo, hi = min(x[i] for x in got), max(x[i] for x in got)
                    out[f"{setting}-T{T}-speedup-{kind}-range"] = (
                        _fold(lo) if _fold(lo) == _fold(hi) else f"{_fold(lo)[:-1]}–{_fold(hi)}")
        lower = sum(c["gp_ucb"]["regret_ratio"] < c["bbkb"]["regret_ratio"] for c in both.values())
        out[f"{setting}-gp-ucb-lower-regret"] = f"all {len(both)}" if lower == len(both) else f"{lower} of {len(both)}"
        out[f"{setting}-cells-both"] = str(len(both))
        for algorithm in LABELS:
            sizes = [c[algorithm]["max_model"] for c in cells(record, setting).values()
                     if "max_model" in c.get(algorithm, {})]
            if sizes:
                out[f"{setting}-{algorithm}-model-range"] = f"{min(sizes):.0f}–{max(sizes):.0f}"
    every = [c for g in record["grid"] for c in cells(record, g["setting"]).values() if speedups(c)]
    out["all-cells-both"] = str(len(every))
    lower = sum(c["gp_ucb"]["regret_ratio"] < c["bbkb"]["regret_ratio"] for c in every)
    out["all-gp-ucb-lower-regret"] = f"all {len(every)}" if lower == len(every) else f"{lower} of {len(every)}"
    longer = sum(c["bbkb"]["compile_s"] > c["gp_ucb"]["compile_s"] for c in every)
    out["all-bbkb-compile-longer"] = f"all {len(every)}" if longer == len(every) else f"{longer} of {len(every)}"
    for T in sorted({t for g in record["grid"] for t in g["T"]}):
        got = [speedups(c) for g in record["grid"] for (_, t), c in cells(record, g["setting"]).items()
               if t == T and speedups(c)]
        for i, kind in enumerate(("total", "exec")):
            if got:
                lo, hi = min(x[i] for x in got), max(x[i] for x in got)
                out[f"all-T{T}-speedup-{kind}-range"] = (
                    _fold(lo) if _fold(lo) == _fold(hi) else f"{_fold(lo)[:-1]}–{_fold(hi)}")
    pairs = gssbo_pairs(gssbo_rows())
    shares = [s["time_vs_gp_ucb"] for _, s in pairs]
    out["gssbo-share-min"], out["gssbo-share-max"] = f"{min(shares):.1%}", f"{max(shares):.1%}"
    out["gssbo-problems"] = str(len(pairs))
    for g, s in pairs:
        p = g["problem"]
        out[f"gssbo-{p}-share"] = f"{s['time_vs_gp_ucb']:.1%}"
        out[f"gssbo-{p}-regret"] = f"{s['regret_vs_gp_ucb']:.2f}×"
        out[f"gssbo-{p}-gp_ucb-exec"] = f"{g['exec_s_per_seed']:.0f} s"
        out[f"gssbo-{p}-gssbo-exec"] = f"{s['exec_s_per_seed']:.1f} s"
        out[f"gssbo-{p}-gp_ucb-ratio"] = f"{g['ratio_mean']:#.3g}"
        out[f"gssbo-{p}-gssbo-ratio"] = f"{s['ratio_mean']:#.3g}"
    for name, keep in (("low-d", lambda d: d < HIGH_D), ("high-d", lambda d: d >= HIGH_D)):
        group = [(g, s) for g, s in pairs if keep(_dimension(g["problem"]))]
        regret = [s["regret_vs_gp_ucb"] for _, s in group]
        share = [s["time_vs_gp_ucb"] for _, s in group]
        out[f"gssbo-{name}-regret-range"] = f"{min(regret):.2f}–{max(regret):.2f}×"
        out[f"gssbo-{name}-share-range"] = f"{min(share):.1%}–{max(share):.1%}"
        out[f"gssbo-{name}-problems"] = ", ".join(f"{g['problem']}" for g, _ in group)
    out["gssbo-high-d"] = str(HIGH_D)
    entries = [e for e in load(GSSBO_RECORD)["results"] if e["algorithm"] in ("std_gp_ucb", "gssbo")]
    out["gssbo-gp-core"] = ", ".join(sorted({str(e["hyperparameters"].get("gp_core")) for e in entries}))
    out["gssbo-T"] = ", ".join(sorted({str(e["T"]) for e in entries}))
    out["gssbo-gp_ucb-seeds"] = ", ".join(sorted({str(g["seeds"]) for g, _ in pairs}))
    out["gssbo-seeds"] = ", ".join(sorted({str(s["seeds"]) for _, s in pairs}))
    return out


if __name__ == "__main__":  # print every table and value (the check and --write: scripts/docs_records.py)
    for name, text in {**tables(), **values()}.items():
        print(f"{name}:\n{text}\n")
