"""The Cadata batch-gap study's tables and numbers (docs/reproductions-bbkb.md#cadata-batch-gap), from records
``bbkb_batch_gap_cadata`` and ``bbkb_batch_gap_abalone`` (scripts/study_batch_gap.py), and the paper's stated batch
sizes, which record ``bbkb_fig1`` carries beside its runs (``paper_largest_batch``: BBKB §4 and its Fig. 2, "up to
3700 and 3900 in size for Abalone and Cadata").

    python scripts/docs_records.py --list      # every name, its generator and the pages using it
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from docs_records import index, load, md_table, pm

RECORDS = {"cadata": "bbkb_batch_gap_cadata", "abalone": "bbkb_batch_gap_abalone"}
RATIO = r"$R_T/R_T^{\mathrm{unif}}$"  # as the pages write it
CODE = {"authors": "authors' `{}`", "sketchbo": "sketchbo `{}`"}
NEAR = 0.10  # "reaches the paper's batch": a mean largest batch within 10% of it (as the summary's Fig. 2 rows)


def study(problem: str) -> dict:
    return load(RECORDS[problem])


def rows(problem: str) -> dict[tuple[str, str], dict]:
    """``{(variant, implementation): row}`` of the problem's study."""
    return {(r["variant"], r["implementation"]): r for r in study(problem)["rows"]}


def paper_batch(problem: str) -> int:
    """The paper's largest batch on ``problem`` (record ``bbkb_fig1``'s ``paper_largest_batch`` of BBKB)."""
    return int(next(r["paper_largest_batch"] for r in load("bbkb_fig1")
                    if r["problem"] == problem and r["algorithm"] == "bbkb"))


def largest(row: dict) -> tuple[float, float, list[float]]:
    """A row's largest batch per seed: mean, sample sd and the per-seed values."""
    mb = row["summary"]["max_batch"]
    return mb["mean"], mb["std"], mb["values"]


def largest_by(row: dict, t: int) -> float:
    """The mean over a row's seeds of the largest batch among its first ``t`` pulls (a batch cut at ``t``)."""
    out = []
    for sizes in row["batch_sizes"]:
        starts = np.cumsum([0] + list(sizes[:-1]))
        out.append(max(min(s, t - a) for s, a in zip(sizes, starts) if a < t))
    return float(np.mean(out))


def variants(problem: str) -> list[str]:
    """The problem's variants in the study's order."""
    return list(dict.fromkeys(v for v, _ in rows(problem)))


def table(problem: str) -> str:
    d = study(problem)
    out = []
    for r in d["rows"]:
        s = r["summary"]
        mean, sd, values = largest(r)
        what = r["label"]
        if r["T"] != d["T"] or r["n_seeds"] != d["n_seeds"]:
            what += f" ($T$ = {r['T']}, {r['n_seeds']} seed{'s' if r['n_seeds'] > 1 else ''})"
        out.append([what, CODE[r["implementation"]].format(r["code"]), f"{s['n_batches']['mean']:.1f}",
                    f"{mean:.0f} ± {sd:.0f} ({max(values):.0f})", f"{s['dict_max']['mean']:.1f}",
                    pm(s["ratio"]["mean"], s["ratio"]["std"])])
    return md_table(["change from the protocol", "code", "batches", "largest batch mean ± sd (max)",
                     "largest dictionary", RATIO + " mean ± sd"], out, "llrrrr")


def distance(problem: str, variant: str) -> float:
    """How far the variant's mean largest batch is from the paper's, relative, the worse of the two codes."""
    target = paper_batch(problem)
    return max(abs(largest(r)[0] / target - 1) for (v, _), r in rows(problem).items() if v == variant)


def labels(problem: str, names: list[str]) -> str:
    texts = [rows(problem)[n, "sketchbo"]["label"] for n in names]
    return "none" if not texts else texts[0] if len(texts) == 1 else ", ".join(texts[:-1]) + " and " + texts[-1]


def tables() -> dict[str, str]:
    out = {f"batch_gap.table.{p}": table(p) for p in RECORDS}
    for p, name in RECORDS.items():
        out[f"batch_gap.command.{p}"] = f"```bash\n{index()[name]['command'].rstrip()}\n```\n"
    return out


def both(problem: str, variant: str) -> str:
    """The variant's mean largest batch in the authors' code and in ours: ``2936 and 3042``."""
    rs = rows(problem)
    return " and ".join(f"{largest(rs[variant, i])[0]:.0f}" for i in ("authors", "sketchbo") if (variant, i) in rs)


def seed_range(problem: str, variant: str) -> str:
    """The lowest and highest largest batch of any seed of the variant, either code: ``2566–3918``."""
    vals = [v for (n, _), r in rows(problem).items() if n == variant for v in largest(r)[2]]
    return f"{min(vals):.0f}–{max(vals):.0f}"


def values() -> dict[str, str]:
    d, rs, pre = study("cadata"), rows("cadata"), "batch_gap.cadata"
    out = {f"{pre}.T": f"{d['T']}", f"{pre}.seeds": f"{d['n_seeds']}", f"{pre}.paper": f"{paper_batch('cadata')}",
           "batch_gap.abalone.paper": f"{paper_batch('abalone')}"}
    for variant in ("local", "unitnorm", "C16", "no_two"):
        out[f"{pre}.{variant}.both"] = both("cadata", variant)
    for variant in ("local", "unitnorm"):
        out[f"{pre}.{variant}.range"] = seed_range("cadata", variant)
    out[f"{pre}.protocol.both"] = both("cadata", "protocol")
    wide = [largest(rs[v, i])[2] for v in ("lengthscale", "minmax01") for i in ("authors", "sketchbo") if (v, i) in rs]
    out[f"{pre}.wide.range"] = f"{min(map(min, wide)):.0f}–{max(map(max, wide)):.0f}"
    out["batch_gap.near_pct"] = f"{100 * NEAR:.0f}%"
    for variant in ("protocol", "C16", "unitnorm"):
        out[f"{pre}.{variant}.sketchbo.ratio"] = f"{rs[variant, 'sketchbo']['summary']['ratio']['mean']:.3f}"
    z = rs["zscore", "sketchbo"]  # a short variant: beside the protocol's largest batch within as many pulls
    out[f"{pre}.zscore.largest"] = f"{largest(z)[0]:.0f}"
    out[f"{pre}.zscore.T"] = f"{z['T']}"
    out[f"{pre}.zscore.protocol_by_T"] = f"{largest_by(rs['protocol', 'sketchbo'], z['T']):.0f}"
    full = [v for v in variants("cadata") if all(r["T"] == d["T"] for (n, _), r in rs.items() if n == v)]
    out[f"{pre}.near"] = labels("cadata", [v for v in full if distance("cadata", v) <= NEAR])
    out[f"{pre}.closest"] = labels("cadata", sorted(full, key=lambda v: distance("cadata", v))[:2])
    for variant in ("protocol", "local"):
        out[f"batch_gap.abalone.{variant}.both"] = both("abalone", variant)
    return out
