"""What capacity growth costs: a run started at a small capacity against the same run started at its final one.

The engine (``sketchbo/engine/host.py``) grows an overflowing capacity to 1.5 times the need and continues
from the last completed chunk of rounds in the padded state (docs/architecture.md#capacity-growth). This
benchmark runs each case twice
in this process, in float64: ``small`` from a small first capacity (``m_max``, ``u_max``), ``final`` from the
capacities ``small`` ended with, and reports compilation and execution (the sum of the round times, chunks
computed again after a growth included) of both, their ratio, the growth events and whether the queries are
identical. Timings depend on the load: the load average is recorded; run it on an otherwise idle machine.

    python scripts/bench_growth.py                         # BBKB on Cadata, T = 10^4, 10 seeds; 5-d gp_sample
    python scripts/bench_growth.py --quick                 # tiny sizes, seconds
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import sketchbo  # noqa: F401  (first: sets OPENBLAS_NUM_THREADS before numpy loads OpenBLAS)
import jax
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import PROTOCOL, machine_info  # noqa: E402

from sketchbo.problems import make_problem  # noqa: E402
from sketchbo import run  # noqa: E402

CASES = {  # name: (problem factory, T, seeds, hyperparameters, first capacities)
    "cadata": (lambda: make_problem("cadata"), 10_000, 10, PROTOCOL, {"m_max": 16, "u_max": 32}),
    "gp5": (lambda: make_problem("gp_sample", A=3000, d=5, sigma2=0.5), 1500, 4, {"lam": 0.05, "F": 1.0},
            {"m_max": 16, "u_max": 32}),
    "quick": (lambda: make_problem("gp_sample", A=300, d=2, sigma2=0.2), 200, 2, {"lam": 0.05, "F": 1.0},
              {"m_max": 12, "u_max": 24}),
}


def execution_s(result) -> float:
    return float(np.sum(result.round_time_s))


def case(name: str, algorithm: str) -> dict:
    make, T, seeds, hyper, first = CASES[name]
    problem = make()
    small = run(algorithm, problem, T=T, n_seeds=seeds, params={**hyper, **first}, progress=False)
    final = {"m_max": small.hyperparameters["m_max_final"], "u_max": small.hyperparameters["u_max_final"]}
    large = run(algorithm, problem, T=T, n_seeds=seeds, params={**hyper, **final}, progress=False)
    return {
        "case": name, "algorithm": algorithm, "T": T, "seeds": seeds, "first": first, "final": final,
        "events": small.capacity_events, "compile_small_s": small.compile_time_s,
        "compile_final_s": large.compile_time_s, "exec_small_s": execution_s(small),
        "exec_final_s": execution_s(large), "ratio": execution_s(small) / execution_s(large),
        "same_queries": bool(np.array_equal(small.traces["query"], large.traces["query"])),
        "regret_ratio": float(np.mean(small.regret_ratio)),
    }


def table(rows) -> str:
    head = ("| case | growth steps | first → final (m_max, u_max) | compile s small / final | exec s small / final "
            "| exec ratio | same queries | R/Runif |\n|---|---|---|---|---|---|---|---|")
    lines = [f"| {r['case']} {r['algorithm']} T={r['T']} x{r['seeds']} | {len(r['events'])} | "
             f"{tuple(r['first'].values())} → {tuple(r['final'].values())} | "
             f"{r['compile_small_s']:.1f} / {r['compile_final_s']:.1f} | {r['exec_small_s']:.2f} / "
             f"{r['exec_final_s']:.2f} | {r['ratio']:.2f} | {r['same_queries']} | {r['regret_ratio']:.3f} |"
             for r in rows]
    return "\n".join([head, *lines])


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", nargs="+", default=["cadata", "gp5"], choices=sorted(CASES))
    ap.add_argument("--algorithm", default="bbkb")
    ap.add_argument("--quick", action="store_true", help="the tiny case only")
    ap.add_argument("--out", type=Path, default=None, help="JSON file for the rows and the machine")
    args = ap.parse_args(argv)
    jax.config.update("jax_enable_x64", True)  # entry point: float64 (docs/architecture.md#numerics)
    info = machine_info()
    rows = [case(name, args.algorithm) for name in (["quick"] if args.quick else args.cases)]
    info["load_avg_end"] = list(os.getloadavg())
    print(table(rows))
    print(f"load average start {info['load_avg_start']}, end {info['load_avg_end']}; {info['device']}")
    if args.out is not None:
        from sketchbo.engine.files import atomic_write_json  # noqa: PLC0415  (written whole)
        atomic_write_json(args.out, {"machine": info, "rows": rows}, indent=1)


if __name__ == "__main__":
    main()
