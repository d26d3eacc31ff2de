"""Ablation of the box GP core (docs/reproductions.md#box-gp-core): the hyperparameter fit and the UCB width,
each alone and together, for the box algorithms on the continuous benchmarks.

Variants (``--variants``; every other hyperparameter is the paper protocol's core, ``gp_core=protocol``; for
``dkl_ucb``, whose fit is its own, the protocol's ``gp_fit=adam`` and β_c = 0.2 with its own steps, its ``map``
the same Adam steps on the log posterior; a variant that sets a key the algorithm lacks is refused):

* ``protocol`` — the paper protocol's core: 20 warm-started Adam steps on the marginal likelihood, β_c = 0.2;
* ``map`` — MAP hyperparameters (``gp_fit=map``: dimension-scaled LogNormal lengthscale prior, L-BFGS to
  convergence, at most ``--fit-steps`` iterations), β_c = 0.2;
* ``beta`` — the protocol's fit with β_c = 0.02;
* ``map+beta`` — both;
* ``theory``, ``map+theory`` — the width of Srinivas et al. (2010), Thm 2 (``beta_rule=theory``), with either fit.
* ``map+beta+bilog``, ``map+beta+copula`` — ``map+beta`` with the GP on warped targets (``output_warp``:
  sign(z) log(1 + |z|) of the standardised targets, or the normal scores of their ranks).
* ``map+beta+starts``, ``map+beta+spg``, ``map+beta+starts+spg`` — ``map+beta`` with the acquisition's 16 best
  candidates refined instead of 4, and/or refined by the spectral projected gradient to convergence
  (``acq_method=spg``, at most 100 iterations) instead of 25 projected Adam steps.

Each (problem, algorithm, variant, T, seeds) is one ``sketchbo.run`` of S seeds in one program, saved as one JSON
file under ``--out`` (written whole, then renamed: an interrupted ablation resumes and skips what is on disk).
With ``--per-seed`` each seed is its own one-seed run and file (``..._S1.json`` for seed 0, ``..._S1_from{k}.json``
for seed k; a seed's keys do not depend on the seeds run beside it), and the S-seed row is assembled from them once
all are on disk: an hour-long exact GP-UCB row then resumes seed by seed.
The table printed at the end (Markdown) has R_T/R_unif (mean and per seed), the median simple regret
(f* minus the best value found), the fraction of the model's queries (after the n₀ initial points) with a
coordinate on a face of the box, and the run's wall, compilation and execution time per iteration::

    python scripts/ablate_box_core.py --problems levy20 --algorithms std_gp_ucb gssbo --T 300 --seeds 5
    python scripts/ablate_box_core.py --problems hartmann6 levy20 --algorithms std_gp_ucb gssbo rssbo \\
        --variants protocol map+beta --T 1000 --seeds 5 --out results/box_core
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

import sketchbo as sb
from sketchbo.cli import tracking

SYNTHETIC = ["eggholder2", "hartmann6", "levy20", "powell50", "rastrigin100"]  # the box benchmarks with known f*
BASE = {"gp_core": "protocol"}  # every variant starts from the paper protocol's core and changes what it names
VARIANTS = {
    "protocol": {},
    "map": {"gp_fit": "map"},
    "beta": {"beta_c": 0.02},
    "map+beta": {"gp_fit": "map", "beta_c": 0.02},
    "theory": {"beta_rule": "theory"},  # the width rules of sketchbo.acquisition.ucb_width
    "map+theory": {"gp_fit": "map", "beta_rule": "theory"},
    "map+beta+bilog": {"gp_fit": "map", "beta_c": 0.02, "output_warp": "bilog"},
    "map+beta+copula": {"gp_fit": "map", "beta_c": 0.02, "output_warp": "copula"},
    "map+beta+starts": {"gp_fit": "map", "beta_c": 0.02, "n_starts": 16},  # more starts, the protocol's Adam
    "map+beta+spg": {"gp_fit": "map", "beta_c": 0.02, "acq_method": "spg", "acq_steps": 100},  # converged, 4 starts
    "map+beta+starts+spg": {"gp_fit": "map", "beta_c": 0.02, "n_starts": 16, "acq_method": "spg", "acq_steps": 100},
}


def config_path(out: Path, problem: str, algorithm: str, variant: str, T: int, seeds: int, first: int = 0) -> Path:
    """The file of ``seeds`` seeds from seed ``first`` (the suffix ``_from{first}`` only when first > 0)."""
    start = f"_from{first}" if first else ""
    return out / f"{problem}_{algorithm}_{variant.replace('+', '-')}_T{T}_S{seeds}{start}.json"


def summarise(res) -> dict:
    """The row of one run: regret ratios, simple regrets, the on-face fraction after n₀ (mean over seeds), times."""
    regret = res.traces["instant_regret"]  # (S, T) f(x_t) - f* >= 0 (minimisation benchmarks)
    on_face = tracking.on_face_rates(res)
    exec_s = float(np.sum(res.round_time_s))
    return {"regret_ratio": [float(v) for v in res.regret_ratio],
            "simple_regret": [float(v) for v in regret.min(axis=1)],
            "on_face": float(np.mean(on_face)) if on_face else float("nan"),
            "wall_s": float(res.wall_time_s), "compile_s": float(res.compile_time_s), "exec_s": exec_s,
            "exec_per_iter_ms": 1e3 * exec_s / res.T, "device": res.device, "hyperparameters": res.hyperparameters}


def variant_params(algorithm: str, variant: str) -> dict:
    """The variant's parameters on top of the protocol's core. An algorithm without ``gp_core`` (``dkl_ucb``, whose
    fit is its own) starts from the protocol core's fit and width where it has those keys (its own step count)."""
    defaults = sb.algorithms.REGISTRY[algorithm].defaults
    if "gp_core" in defaults:
        return {**BASE, **VARIANTS[variant]}
    protocol = sb.algorithms.GP_CORES["protocol"]
    return {**{k: v for k, v in protocol.items() if k in defaults and k != "fit_steps"}, **VARIANTS[variant]}


def lacking(algorithm: str, variant: str) -> list[str]:
    """The parameters the variant sets that the algorithm does not have (none: the variant applies)."""
    return sorted(set(variant_params(algorithm, variant)) - set(sb.algorithms.REGISTRY[algorithm].defaults))


def run_one(problem: str, algorithm: str, variant: str, T: int, seeds: int, fit_steps: int, first: int = 0) -> dict:
    params = variant_params(algorithm, variant)
    if params.get("gp_fit") == "map" and "gp_core" in params:  # L-BFGS iterations of the core's map fit
        params["fit_steps"] = fit_steps
    res = sb.run(algorithm, sb.make_problem(problem), T=T, n_seeds=seeds, seed=first, params=params, progress=False)
    row = summarise(res)
    row.update(problem=problem, algorithm=algorithm, variant=variant, T=T, seeds=seeds, first_seed=first,
               date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))
    return row


def assemble(parts: list[dict], files: list[str]) -> dict:
    """The S-seed row of S one-seed rows (seeds in order): per-seed lists joined, times summed (the seeds one after
    another, as one S-seed program runs them on a CPU), the on-face fraction averaged over seeds."""
    row = dict(parts[0])
    for key in ("regret_ratio", "simple_regret"):
        row[key] = [v for p in parts for v in p[key]]
    for key in ("wall_s", "compile_s", "exec_s"):
        row[key] = float(sum(p[key] for p in parts))
    row.update(on_face=float(np.mean([p["on_face"] for p in parts])), exec_per_iter_ms=1e3 * row["exec_s"] / row["T"],
               seeds=len(parts), first_seed=parts[0].get("first_seed", 0), date=max(p["date"] for p in parts),
               assembled_from=files)
    return row


def log(path: Path, row: dict, how: str) -> None:
    print(f"[ablate] {path.name}: R_T/R_unif {np.mean(row['regret_ratio']):.3f}, {how}", file=sys.stderr, flush=True)


def run_or_load(path: Path, problem, algorithm, variant, args, seeds: int, first: int) -> dict:
    """The row on disk, else one run of ``seeds`` seeds from ``first``, written atomically."""
    if path.exists():
        print(f"[ablate] {path.name}: on disk", file=sys.stderr, flush=True)
        return json.loads(path.read_text())
    t0 = time.perf_counter()
    row = run_one(problem, algorithm, variant, args.T, seeds, args.fit_steps, first)
    write_atomic(path, row)
    log(path, row, f"{time.perf_counter() - t0:.1f} s")
    return row


def config_row(problem: str, algorithm: str, variant: str, args) -> dict:
    """One configuration's row: one S-seed run, or (``--per-seed``, S > 1) S one-seed runs assembled."""
    path = config_path(args.out, problem, algorithm, variant, args.T, args.seeds, args.first_seed)
    if path.exists() or not args.per_seed or args.seeds == 1:  # one seed: its own file is the row
        return run_or_load(path, problem, algorithm, variant, args, args.seeds, args.first_seed)
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    paths = [config_path(args.out, problem, algorithm, variant, args.T, 1, k) for k in seeds]
    parts = [run_or_load(p, problem, algorithm, variant, args, 1, k) for p, k in zip(paths, seeds)]
    row = assemble(parts, [p.name for p in paths])
    write_atomic(path, row)
    log(path, row, f"assembled from {len(parts)} one-seed files")
    return row


def write_atomic(path: Path, row: dict) -> None:
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(row, indent=1, default=str))
    os.replace(tmp, path)


def table(rows: list[dict]) -> str:
    head = ("| problem, T, seeds | algorithm | variant | R_T/R_unif (per seed) | median simple regret | on a face "
            "| wall s (compile s) | exec ms / iteration |\n|---|---|---|---|---|---|---|---|")
    lines = [head]
    for r in rows:
        per_seed = ", ".join(f"{v:.3f}" for v in r["regret_ratio"])
        lines.append(f"| {r['problem']}, {r['T']}, {r['seeds']} | {r['algorithm']} | {r['variant']} "
                     f"| {np.mean(r['regret_ratio']):.3f} ({per_seed}) | {np.median(r['simple_regret']):.4g} "
                     f"| {r['on_face']:.2f} | {r['wall_s']:.1f} ({r['compile_s']:.1f}) | {r['exec_per_iter_ms']:.1f} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--problems", nargs="+", default=["levy20"], choices=SYNTHETIC)
    ap.add_argument("--algorithms", nargs="+", default=["std_gp_ucb", "gssbo"])
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS)[:4], choices=list(VARIANTS))
    ap.add_argument("--T", type=int, default=300)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--first-seed", type=int, default=0, help="seeds first-seed, first-seed + 1, ...")
    ap.add_argument("--per-seed", action="store_true",
                    help="run every seed as its own one-seed run and file, then assemble the S-seed row")
    ap.add_argument("--fit-steps", type=int, default=50, help="L-BFGS iterations at most of the map variants")
    ap.add_argument("--out", type=Path, default=Path("results/box_core"))
    args = ap.parse_args(argv)
    for a in args.algorithms:  # every bad name before the first run
        if a not in sb.ALGORITHMS or sb.ALGORITHMS[a].domain != "box":
            ap.error(f"--algorithms: {a!r} is not a box algorithm; allowed: "
                     f"{sorted(n for n, s in sb.ALGORITHMS.items() if s.domain == 'box')}")
    for a in args.algorithms:
        for v in args.variants:
            if lacks := lacking(a, v):
                ap.error(f"--variants: {v!r} sets {lacks}, which --algorithms {a!r} does not have; "
                         f"its variants: {[w for w in VARIANTS if not lacking(a, w)]}")
    if args.T < 1 or args.seeds < 1 or args.fit_steps < 1:
        ap.error(f"--T, --seeds and --fit-steps must be >= 1 (got {args.T}, {args.seeds}, {args.fit_steps})")
    if args.first_seed < 0:
        ap.error(f"--first-seed must be >= 0 (got {args.first_seed})")
    args.out.mkdir(parents=True, exist_ok=True)
    rows = [config_row(problem, algorithm, variant, args)
            for problem in args.problems for algorithm in args.algorithms for variant in args.variants]
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
