"""Benchmark of GSSBO's speed claim (Wei et al. 2025, Fig. 3): cumulative time at N evaluations.

GSSBO, RSSBO, SparseGP and Standard GP-UCB on Hartmann6 and Powell50, measured in the same process, one
after another, each with its registry defaults (n0 = 20, Z = 4, beta_t = 0.2 d log(2t), docs/protocols.md#box-protocol).
Reported per run: execution time (the sum of the round times, compilation excluded, per seed), compile
time, the final cumulative regret R_N and the best regret min_t (f(x_t) - f_min), and both ratios to
Standard GP-UCB. The paper's number: GSSBO's time ≈ 10% of GP-UCB's; our target: GSSBO ≤ 10% of our own
GP-UCB's time with R_N within 20% of GP-UCB's on Hartmann6.

    python scripts/bench_gssbo.py                  # N = 1000 (long on a CPU: the exact GP is O(N^3) per step)
    python scripts/bench_gssbo.py --quick          # N = 100, seconds per run after compilation
    python scripts/bench_gssbo.py --N 400 --seeds 2 --out results/bench_gssbo_400.json
    python scripts/bench_gssbo.py --N 400 --variant gssbo:selection=pivoted gssbo:keep_best=true
    python scripts/bench_gssbo.py --problems hartmann6 --algorithms gssbo --gp-ucb-per-iteration 100 250 500 750 1000

Prints a table and writes the JSON (``--out``, default ``results/bench_gssbo.json``).

``--gp-ucb-per-iteration n ...`` estimates Standard GP-UCB's time to N instead of running it (its exact GP
refits an n × n model every step: hours at N = 1000 on a CPU). For each n it runs GP-UCB with an initial
design of n uniform points (n0 = n) in a buffer of exactly n + 4 rows, one round per call, and takes the
median time of the last three model rounds (the first one's fit starts cold; in a run every fit is warm-
started from the previous round's). Its cumulative time to N is the sum over n = 20 … N − 1 of that time
interpolated linearly between the measured n (and down to 0 at n = 0). The estimate is low: a real run's
buffer grows by 1.5× steps and carries up to a third of its rows as padding through each O(n³) factorisation.
"""
from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

import sketchbo  # noqa: F401  (first: sets OPENBLAS_NUM_THREADS before numpy loads OpenBLAS)
import jax

jax.config.update("jax_enable_x64", True)

import numpy as np  # noqa: E402
import yaml  # noqa: E402

from sketchbo.cli import tracking  # noqa: E402
import sketchbo as sb  # noqa: E402
from sketchbo.algorithms import BO_ALGORITHMS  # noqa: E402
from sketchbo.engine.result import seed_time_factor  # noqa: E402
from sketchbo.problems import CONTINUOUS_PROBLEMS, make_problem  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
ALGORITHMS = ("gssbo", "rssbo", "sparse_gp", "std_gp_ucb")
PROBLEMS = ("hartmann6", "powell50")
REFERENCE = "std_gp_ucb"


def parse_variant(text: str) -> tuple[str, dict]:
    """``"gssbo:selection=pivoted,keep_best=true"`` -> ("gssbo", {"selection": "pivoted", "keep_best": True})."""
    name, _, rest = text.partition(":")
    params = {}
    for item in filter(None, rest.split(",")):
        key, eq, raw = item.partition("=")
        if not eq:
            raise ValueError(f"--variant {text!r}: {item!r} is not key=value")
        params[key] = yaml.safe_load(raw)
    if name not in BO_ALGORITHMS:
        raise ValueError(f"--variant {text!r}: {name!r} is not one of {sorted(BO_ALGORITHMS)}")
    return name, params


def measure(algorithm: str, problem, N: int, seeds: int, progress: bool, params: dict | None = None,
            label: str | None = None) -> dict:
    res = sb.run(algorithm, problem, T=N, n_seeds=seeds, progress=progress, params=params)
    per_seed = seed_time_factor(res.seed_axis, res.elements_per_device)
    regret = np.asarray(res.traces["instant_regret"])
    return {
        "algorithm": label or algorithm, "params": dict(params or {}), "problem": problem.name, "N": N, "n_seeds": seeds,
        "exec_time_s": float(np.sum(res.round_time_s) * per_seed),
        "compile_time_s": float(res.compile_time_s), "wall_time_s": float(res.wall_time_s),
        "cumulative_regret": float(np.mean(res.cumulative_regret)),
        "cumulative_regret_std": float(np.std(res.cumulative_regret)),
        "best_regret": float(np.mean(regret.min(axis=1))),
        "model_rows": int(np.max(res.max_dict_size)),
        "capacity_events": list(res.capacity_events), "device": res.device,
    }


PER_ITERATION_ROUNDS = 4  # model rounds after the n-point design; the first (a cold fit) is not timed


def time_per_iteration(problem, n: int) -> dict:
    """Standard GP-UCB's wall time of one model round with n samples (median of the warm-started rounds)."""
    res = sb.run(REFERENCE, problem, T=n + PER_ITERATION_ROUNDS, params={"n0": n}, capacity=n + PER_ITERATION_ROUNDS,
                 rounds_per_call=1, progress=False)
    rounds = np.asarray(res.round_time_s)[2:]  # [0] the design, [1] the cold fit
    return {"n": n, "s_per_iteration": float(np.median(rounds)), "rounds_s": rounds.tolist(),
            "compile_time_s": float(res.compile_time_s)}


def estimated_reference(problem, N: int, ns: list[int]) -> dict:
    """A GP-UCB row whose time to N is the sum of :func:`time_per_iteration` interpolated over n = 20 … N − 1."""
    points = [time_per_iteration(problem, n) for n in sorted(ns)]
    x = np.array([0] + [p["n"] for p in points], dtype=np.float64)
    y = np.array([0.0] + [p["s_per_iteration"] for p in points])
    n0 = int(BO_ALGORITHMS[REFERENCE].defaults["n0"])
    total = float(np.sum(np.interp(np.arange(n0, N), x, y)))
    return {"algorithm": f"{REFERENCE} (estimated)", "params": {}, "problem": problem.name, "N": N, "n_seeds": 1,
            "exec_time_s": total, "compile_time_s": float(sum(p["compile_time_s"] for p in points)),
            "wall_time_s": float("nan"), "cumulative_regret": float("nan"), "cumulative_regret_std": float("nan"),
            "best_regret": float("nan"), "model_rows": N, "capacity_events": [], "device": "",
            "per_iteration": points}


def add_ratios(rows: list[dict]) -> None:
    for row in rows:
        ref = next((r for r in rows if r["problem"] == row["problem"] and r["algorithm"].startswith(REFERENCE)), None)
        row["time_vs_gp_ucb"] = row["exec_time_s"] / ref["exec_time_s"] if ref else None
        row["regret_vs_gp_ucb"] = row["cumulative_regret"] / ref["cumulative_regret"] if ref else None


def table(rows: list[dict]) -> str:
    header = ("problem", "algorithm", "N", "exec s", "compile s", "time/GP-UCB", "R_N mean ± std", "R_N/GP-UCB",
              "best regret", "model rows")
    cells = [header]
    for r in rows:
        def ratio(v):
            return "-" if v is None else f"{v:.1%}"
        cells.append((r["problem"], r["algorithm"], str(r["N"]), f"{r['exec_time_s']:.1f}", f"{r['compile_time_s']:.1f}",
                      ratio(r["time_vs_gp_ucb"]), f"{r['cumulative_regret']:.1f} ± {r['cumulative_regret_std']:.1f}",
                      ratio(r["regret_vs_gp_ucb"]), f"{r['best_regret']:.3g}", str(r["model_rows"])))
    widths = [max(len(c[i]) for c in cells) for i in range(len(header))]
    lines = [" | ".join(c.ljust(w) for c, w in zip(row, widths)) for row in cells]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    return "\n".join(lines)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--N", type=int, default=None, help="evaluations per run (default 1000; --quick: 100)")
    parser.add_argument("--quick", action="store_true", help="N = 100")
    parser.add_argument("--seeds", type=int, default=1, help="seeds per run (default 1)")
    parser.add_argument("--problems", nargs="+", default=list(PROBLEMS), choices=sorted(CONTINUOUS_PROBLEMS))
    parser.add_argument("--algorithms", nargs="*", default=list(ALGORITHMS), choices=sorted(BO_ALGORITHMS))
    parser.add_argument("--variant", nargs="*", default=[], metavar="ALG:KEY=VALUE,...",
                        help="extra rows with non-default parameters, e.g. gssbo:selection=pivoted")
    parser.add_argument("--gp-ucb-per-iteration", nargs="+", type=int, default=None, metavar="n",
                        help="estimate GP-UCB's time to N from its time per iteration at these sample counts "
                             "(the largest must be N) instead of running it")
    parser.add_argument("--out", type=Path, default=REPO / "results" / "bench_gssbo.json", help="JSON file written")
    parser.add_argument("--no-progress", action="store_true", help="no progress lines on stderr")
    args = parser.parse_args(argv)
    N = args.N if args.N is not None else (100 if args.quick else 1000)
    if N < 21 or args.seeds < 1:
        parser.error(f"--N={N} must be > 20 (the initial design) and --seeds={args.seeds} >= 1")
    ns = args.gp_ucb_per_iteration
    if ns is not None and (min(ns) <= 20 or max(ns) != N):
        parser.error(f"--gp-ucb-per-iteration={ns}: every n must be > 20 (the initial design) and the largest N={N}")
    variants = [parse_variant(v) for v in args.variant]
    t0 = time.perf_counter()
    rows = []
    for name in args.problems:
        problem = make_problem(name)
        for algorithm in args.algorithms:
            rows.append(measure(algorithm, problem, N, args.seeds, not args.no_progress))
            print(f"{name} {algorithm}: {rows[-1]['exec_time_s']:.1f} s", file=sys.stderr, flush=True)
        if ns is not None:
            rows.append(estimated_reference(problem, N, ns))
            print(f"{name} {rows[-1]['algorithm']}: {rows[-1]['exec_time_s']:.1f} s", file=sys.stderr, flush=True)
        for text, (algorithm, params) in zip(args.variant, variants):
            rows.append(measure(algorithm, problem, N, args.seeds, not args.no_progress, params, text))
            print(f"{name} {text}: {rows[-1]['exec_time_s']:.1f} s", file=sys.stderr, flush=True)
    add_ratios(rows)
    report = {"N": N, "seeds": args.seeds, "rows": rows, "total_wall_s": time.perf_counter() - t0,
              "device": rows[0]["device"] if rows else "", "host": platform.node(), "jax": jax.__version__}
    print(table(rows))
    for r in rows:
        for point in r.get("per_iteration", []):
            print(f"{r['problem']} {REFERENCE}: {point['s_per_iteration']:.3f} s per iteration at n = {point['n']} "
                  f"(rounds {', '.join(f'{v:.3f}' for v in point['rounds_s'])} s)")
    tracking.atomic_write_json(args.out, report)
    print(f"wrote {args.out}")
    return report


if __name__ == "__main__":
    main()
