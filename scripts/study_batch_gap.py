"""The Cadata batch-size gap: which reading of BBKB's set-up makes batches of about 3,900 arms?

BBKB's text (Calandriello et al., ICML 2020, §4 and its Fig. 2) says the batches grow "up to 3700 and 3900 in size
for Abalone and Cadata". Under our finite-arm protocol (docs/protocols.md#finite-arm-protocol) both our ``bbkb`` and
the authors' public ``Batch_BKB`` reach about 3,600 on Abalone but only about 400 on Cadata (record
``bbkb_authors_cadata``). The text leaves several choices open; this study changes one at a time, starting from the
protocol, and measures the batches at T = 10^4:

* the batch rule: BBKB's global rule (Alg. 1, line 4, with the squared σ̃ of the proofs and of the public code)
  against the per-arm (local) rule of the public code's ``Local_Batch_BKB`` (our ``bbkb_local``,
  docs/algorithms.md#globallocal-bbkb);
* C̃ (``ratio_threshold``): the protocol's 2 against 4, 8 and 16;
* the kernel's "width σ² = 5": ours is exp(−‖x − x'‖²/(2σ²)) with σ² = 5; also exp(−‖x − x'‖²/σ²) (our σ² = 2.5)
  and σ = 5 read as the lengthscale (our σ² = 25);
* the features (the text states no scaling): the protocol's per-column min–max to [−1, 1] against min–max to
  [0, 1], standardised columns (z-score) and raw rows scaled to unit Euclidean norm.

Each variant runs in our code and, wherever the variant can be expressed in it, in the authors' code, which is the
arbiter (the same problem, protocol and noise as ``scripts/bench_authors.py``, whose functions this script uses).
Standardised columns make the kernel almost diagonal on Cadata: the dictionary grows by almost one arm per pull
and a full horizon would take far longer than the rest of the study, so that variant runs in our code only, on a short
horizon (``--short-T``, ``--short-seeds``); the rows say so.

Usage (a clone of https://github.com/luigicarratino/batch-bkb, which needs scikit-learn)::

    SKETCHBO_DATA_DIR=/path/to/data python scripts/study_batch_gap.py --authors-dir /path/to/batch-bkb \\
        --T 10000 --seeds 3 --out experiments/bbkb_batch_gap_cadata.json

Without ``--authors-dir`` only our code runs. ``--only protocol,local`` picks variants; ``--problem abalone`` or
``gp_sample`` runs the same variants elsewhere. Progress lines go to stderr, the table to stdout; the JSON holds
a ``meta`` block (date, commit, machine, argv) and one row per (variant, implementation) with every seed's values
and batch sizes.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_authors as ba  # first: it imports sketchbo, which sets OPENBLAS_NUM_THREADS before numpy loads OpenBLAS
import numpy as np

import sketchbo as sb
from sketchbo.problems import check_problem
from sketchbo.problems.datasets import load_abalone_raw, load_cadata_raw

HERE = Path(__file__).resolve().parent
PROBLEMS = ("cadata", "abalone", "gp_sample")
RAW_LOADERS = {"cadata": load_cadata_raw, "abalone": load_abalone_raw}
IMPLEMENTATIONS = {"authors": {"global": "Batch_BKB", "local": "Local_Batch_BKB"},
                   "sketchbo": {"global": "bbkb", "local": "bbkb_local"}}
# The text's "width sigma^2 = w" read three ways, as our rbf's sigma2 (k = exp(-||x - x'||^2 / (2 sigma2))).
WIDTH_READINGS = {
    "protocol": ("exp(−‖x−x'‖²/(2σ²)), σ² = w", lambda w: w),
    "no_two": ("exp(−‖x−x'‖²/σ²), σ² = w", lambda w: w / 2.0),
    "lengthscale": ("exp(−‖x−x'‖²/(2σ²)), σ = w", lambda w: w * w),
}
SCALINGS = {
    "protocol": "the problem's own features (Cadata, Abalone: columns min–max to [−1, 1])",
    "minmax01": "columns min–max to [0, 1]",
    "zscore": "columns standardised (zero mean, unit variance)",
    "unitnorm": "raw rows scaled to unit Euclidean norm",
}


class Variant(NamedTuple):
    """One change to the protocol (every other choice stays the protocol's)."""

    name: str
    group: str  # baseline, rule, C, kernel, scaling
    label: str  # plain words, for the table
    rule: str = "global"  # or "local"
    C: float | None = None  # None: the protocol's C~
    width: str = "protocol"  # a key of WIDTH_READINGS
    scaling: str = "protocol"  # a key of SCALINGS
    short: bool = False  # a costly variant: our code only, on --short-T pulls and --short-seeds seeds


VARIANTS = (
    Variant("protocol", "baseline", "the protocol"),
    Variant("local", "rule", "per-arm (local) rule", rule="local"),
    Variant("C4", "C", "C̃ = 4", C=4.0),
    Variant("C8", "C", "C̃ = 8", C=8.0),
    Variant("C16", "C", "C̃ = 16", C=16.0),
    Variant("no_two", "kernel", "kernel exp(−‖x−x'‖²/σ²)", width="no_two"),
    Variant("lengthscale", "kernel", "σ = 5 as the lengthscale", width="lengthscale"),
    Variant("minmax01", "scaling", "columns min–max to [0, 1]", scaling="minmax01"),
    Variant("unitnorm", "scaling", "rows of unit norm", scaling="unitnorm"),
    Variant("zscore", "scaling", "standardised columns", scaling="zscore", short=True),
)
VARIANT_NAMES = tuple(v.name for v in VARIANTS)


# ------------------------------------------------------------------------------------------ problems

def scale_rows(X, scaling: str) -> np.ndarray:
    """Raw features ``X`` (n, d) scaled as ``scaling`` says (a key of :data:`SCALINGS` but "protocol").

    A constant column maps to zeros under "minmax01" and "zscore"; a zero row stays zero under "unitnorm".
    """
    X = np.asarray(X, dtype=np.float64)
    if scaling == "minmax01":
        lo, hi = X.min(axis=0), X.max(axis=0)
        return np.where(hi > lo, (X - lo) / np.where(hi > lo, hi - lo, 1.0), 0.0)
    if scaling == "zscore":
        sd = X.std(axis=0)
        return np.where(sd > 0, (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0), 0.0)
    if scaling == "unitnorm":
        norms = np.linalg.norm(X, axis=1, keepdims=True)
        return X / np.where(norms > 0, norms, 1.0)
    raise ValueError(f"scaling={scaling!r}: choose one of {sorted(set(SCALINGS) - {'protocol'})}")


def raw_features(problem_name: str, problem) -> np.ndarray:
    """The unscaled features the scalings start from: the data file's columns for Cadata and Abalone, the arms
    themselves for a synthetic problem."""
    loader = RAW_LOADERS.get(problem_name)
    return problem.arms if loader is None else loader()[0]


def variant_problem(problem_name: str, variant: Variant, base=None):
    """Our problem ``problem_name`` with the variant's features and kernel (the rule and C̃ are run settings).

    Args:
        problem_name: a key of :data:`PROBLEMS`.
        variant: the variant.
        base: the problem as the protocol builds it (built here when None).

    Returns:
        A validated finite ``Problem``.
    """
    base = sb.make_problem(problem_name) if base is None else base
    if base.kernel.get("name") != "rbf":
        raise ValueError(f"problem {problem_name!r} has kernel {base.kernel!r}; the study needs an rbf kernel")
    if variant.width not in WIDTH_READINGS:
        raise ValueError(f"variant {variant.name!r}: width reading {variant.width!r} is not one of "
                         f"{sorted(WIDTH_READINGS)}")
    sigma2 = WIDTH_READINGS[variant.width][1](float(base.kernel["sigma2"]))
    arms = base.arms if variant.scaling == "protocol" else scale_rows(raw_features(problem_name, base),
                                                                        variant.scaling)
    return check_problem(base._replace(arms=arms, kernel={"name": "rbf", "sigma2": sigma2}))


# ------------------------------------------------------------------------------------------ runs

def make_row(variant: Variant, impl: str, problem, proto: dict, T: int, records: list[dict], **extra) -> dict:
    """One row of the record: the variant's setting, the summary of every metric over the seeds (mean, sample
    sd, per-seed values; ``scripts/bench_authors.py``'s ``summarise``) and each seed's batch sizes."""
    return {"variant": variant.name, "group": variant.group, "label": variant.label, "implementation": impl,
            "code": IMPLEMENTATIONS[impl][variant.rule], "T": T, "n_seeds": len(records),
            "setting": {"rule": variant.rule, "C": proto["C"], "sigma2": float(problem.kernel["sigma2"]),
                        "width_reading": WIDTH_READINGS[variant.width][0], "scaling": SCALINGS[variant.scaling],
                        "lam": proto["lam"], "F": proto["F"], "qbar": proto["qbar"], "xi": proto["xi"]},
            "summary": ba.summarise(records, problem.f),
            "batch_sizes": [np.asarray(r["batch_sizes"]).tolist() for r in records], **extra}


def run_variant(problem_name: str, variant: Variant, T: int, n_seeds: int, authors=None, base=None,
                log=None) -> list[dict]:
    """The variant in our code and, when ``authors`` is given and the variant is not a short one, in theirs.

    Args:
        problem_name: a key of :data:`PROBLEMS`.
        variant: the variant.
        T: pulls per seed.
        n_seeds: seeds 0..n_seeds-1 of each implementation.
        authors: ``(bkb_lib, utils)`` from ``bench_authors.load_authors``, or None (our code only).
        base: the protocol's problem (built when None).
        log: a callable taking a progress line, or None.

    Returns:
        One row (:func:`make_row`) per implementation run, the authors' first.
    """
    base = sb.make_problem(problem_name) if base is None else base
    problem = variant_problem(problem_name, variant, base)
    overrides = dict(base.suggested or {})
    if variant.C is not None:
        overrides["C"] = variant.C
    proto = ba.protocol(problem, T, **overrides)
    rows = []
    if authors is not None and not variant.short:
        bkb_lib, utils = authors
        dot = ba.authors_kernel(utils, problem.kernel)
        cls = IMPLEMENTATIONS["authors"][variant.rule]
        records = []
        for seed in range(n_seeds):
            records.append(ba.run_authors_seed(bkb_lib, dot, problem, proto, T, seed, cls=cls))
            if log:
                log(f"{variant.name:12s} authors  seed {seed}: {records[-1]['time_s']:.1f} s, largest batch "
                    f"{records[-1]['batch_sizes'].max()}")
        rows.append(make_row(variant, "authors", problem, proto, T, records))
    algorithm = IMPLEMENTATIONS["sketchbo"][variant.rule]
    records, compile_s = ba.run_ours(problem, proto, T, n_seeds, algorithm=algorithm)
    if log:
        for seed, r in enumerate(records):
            log(f"{variant.name:12s} sketchbo seed {seed}: {r['time_s']:.1f} s, largest batch {r['batch_sizes'].max()}")
    rows.append(make_row(variant, "sketchbo", problem, proto, T, records, compile_s=compile_s))
    return rows


def run_study(problem_name: str, variants, T: int, n_seeds: int, authors=None, short_T: int | None = None,
              short_seeds: int | None = None, log=None, done=None) -> list[dict]:
    """Every variant of ``variants`` (short ones on ``short_T`` pulls and ``short_seeds`` seeds, our code only).

    Args:
        done: a callable given the rows so far after each variant (e.g. to write them), or None.

    Returns:
        The rows of every variant, in order (:func:`run_variant`).
    """
    base = sb.make_problem(problem_name)
    rows = []
    for variant in variants:
        t, n = (min(T, short_T or T), min(n_seeds, short_seeds or n_seeds)) if variant.short else (T, n_seeds)
        rows += run_variant(problem_name, variant, t, n, None if variant.short else authors, base, log)
        if done is not None:
            done(rows)
    return rows


# ------------------------------------------------------------------------------------------ output

def format_rows(rows: list[dict]) -> str:
    """The study's table as printed: one line per row."""
    head = ("variant", "code", "T", "seeds", "batches", "largest batch (max)", "dict largest", "R_T/R_unif")
    lines = [head]
    for r in rows:
        s = r["summary"]
        mb = s["max_batch"]
        lines.append((r["variant"], r["code"], str(r["T"]), str(r["n_seeds"]), f"{s['n_batches']['mean']:.1f}",
                      f"{mb['mean']:.0f} ± {mb['std']:.0f} ({max(mb['values']):.0f})",
                      f"{s['dict_max']['mean']:.1f}", f"{s['ratio']['mean']:.4f} ± {s['ratio']['std']:.4f}"))
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    text = ["  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() for line in lines]
    text.insert(1, "-" * len(text[0]))
    return "\n".join(text)


def commit() -> str | None:
    """``git rev-parse --short HEAD`` of this repository (None outside a checkout), ``+dirty`` when the tracked
    files differ from it."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE, capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=HERE,
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + ("+dirty" if dirty else "")


def dumps(record: dict) -> str:
    """The record as JSON, one key per line but every list of numbers on one line."""
    text = json.dumps(record, indent=1)
    number = r"-?[0-9][0-9.eE+-]*"
    flat = re.compile(rf"\[\s*(?:{number}\s*,\s*)*{number}\s*\]")
    return flat.sub(lambda m: json.dumps(json.loads(m.group(0))), text) + "\n"


def parse_variants(text: str | None) -> list[Variant]:
    """The variants named in ``--only`` (comma separated), in the study's order; all when None."""
    if text is None:
        return list(VARIANTS)
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in VARIANT_NAMES]
    if unknown or not names:
        raise ValueError(f"--only {text!r}: unknown variant(s) {unknown}; choose from {list(VARIANT_NAMES)}")
    return [v for v in VARIANTS if v.name in names]


def parse_args(argv=None) -> argparse.Namespace:
    """The command line (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--authors-dir", default=None,
                    help=f"a clone of {ba.AUTHORS_REPO} (holding bkb_lib.py); without it only our code runs")
    ap.add_argument("--problem", choices=PROBLEMS, default="cadata")
    ap.add_argument("--T", type=int, default=10000, help="pulls per seed (default 10000)")
    ap.add_argument("--seeds", type=int, default=3, help="seeds 0..n-1 per variant and implementation (default 3)")
    ap.add_argument("--short-T", type=int, default=500, help="pulls of the short variants (default 500)")
    ap.add_argument("--short-seeds", type=int, default=1, help="seeds of the short variants (default 1)")
    ap.add_argument("--only", default=None, help=f"comma-separated variants (default all: {','.join(VARIANT_NAMES)})")
    ap.add_argument("--out", type=Path, default=None, help="write the record to this JSON file")
    args = ap.parse_args(argv)
    if args.T < 2 or args.seeds < 1 or args.short_T < 2 or args.short_seeds < 1:
        ap.error(f"--T and --short-T must be >= 2, --seeds and --short-seeds >= 1; got --T {args.T}, --seeds "
                 f"{args.seeds}, --short-T {args.short_T}, --short-seeds {args.short_seeds}")
    try:
        args.variants = parse_variants(args.only)
        args.authors = None if args.authors_dir is None else ba.load_authors(args.authors_dir)
    except (ValueError, ba.AuthorsCodeError) as err:
        ap.error(str(err))
    if args.authors is not None and not hasattr(args.authors[0], "Local_Batch_BKB") and any(
            v.rule == "local" for v in args.variants):
        ap.error(f"--authors-dir {args.authors_dir!r}: their bkb_lib has no Local_Batch_BKB for the 'local' variant; "
                 "leave it out with --only")
    return args


def _log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def main(argv=None) -> dict:
    """Run the study, print its table and write the record when ``--out`` is given.

    Returns:
        The record (what ``--out`` holds).
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parse_args(argv)
    meta = ba.machine_info()
    meta.update(commit=commit(), argv=[Path(__file__).name] + argv, cpu_affinity=len(os.sched_getaffinity(0)),
                authors_repo=ba.AUTHORS_REPO if args.authors is not None else None, seeds_note=ba.SEEDS_NOTE)
    meta["SKETCHBO_COMPILE_CACHE"] = os.environ.get("SKETCHBO_COMPILE_CACHE")
    if args.authors is None:
        _log("no --authors-dir: our code only")
    problem = sb.make_problem(args.problem)
    record = {"meta": meta, "problem": args.problem, "T": args.T, "n_seeds": args.seeds, "short_T": args.short_T,
              "short_seeds": args.short_seeds, "protocol": ba.protocol(problem, args.T, **(problem.suggested or {})),
              "variants": [v._asdict() for v in args.variants], "complete": False, "rows": []}
    start = time.perf_counter()

    def write(rows):  # after every variant, so that a failure late in the study keeps what was measured
        record["rows"] = rows
        meta.update(load_avg_end=list(os.getloadavg()), wall_s=time.perf_counter() - start)
        if args.out is not None:
            args.out.write_text(dumps(record), encoding="utf-8")

    rows = run_study(args.problem, args.variants, args.T, args.seeds, args.authors, args.short_T, args.short_seeds,
                     _log, write)
    record["complete"] = True
    write(rows)
    print(f"BBKB batch sizes by variant: {args.problem}, T = {args.T} (short variants {args.short_T}), {args.seeds} "
          f"seeds; commit {meta['commit']}; {meta['date']}")
    print(format_rows(rows))
    if args.out is not None:
        print(f"wrote {args.out}")
    return record


if __name__ == "__main__":
    main()
