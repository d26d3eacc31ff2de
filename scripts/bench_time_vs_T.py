"""Execution time against the horizon T: BBKB beside BKB and exact GP-UCB, one machine, one run, log axes, fitted
slopes (docs/benchmarks.md#time-vs-t).

BBKB (Calandriello et al., ICML 2020) Thm. 1 (3): BBKB runs in at most Õ(T A d_eff(X_T)^2), near-linear in T,
against BKB's O(T max{A, T} d_eff^2) (quadratic once T exceeds A) and GP-UCB's O(A T^3) (Sec. 3). This script runs
each algorithm for one seed at a range of T on one finite problem with the finite-arm protocol (lambda = 0.2,
F = 20, q-bar = 2, C~ = 2, delta = 1/T), ``--repeats`` times per T (the first run of each T compiles; every run's
execution time is its wall time less its compilation), records the median execution time and the run's
R_T/R_unif, and fits the slope of log(time) against log(T) per algorithm by least squares.

    SKETCHBO_DATA_DIR=/path/to/data python scripts/bench_time_vs_T.py --problem cadata \\
        --out experiments/time_vs_T_cadata.json
    python scripts/bench_time_vs_T.py --plot experiments/time_vs_T_cadata.json --out docs/figures

The default horizons keep the run under a quarter of an hour on a 2-core CPU: BBKB from 10^3 to 10^5; BKB and
GP-UCB, whose costs grow faster, to 2000.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

DEFAULT_T = {"bbkb": [1000, 3000, 10000, 30000, 100000], "bkb": [250, 500, 1000, 2000],
             "gp_ucb": [250, 500, 1000, 2000]}
LABELS = {"bbkb": "BBKB", "bkb": "BKB", "gp_ucb": "exact GP-UCB"}
PAPER_RATE = {"bbkb": "Õ(T A d_eff²), near-linear", "bkb": "O(T max{A, T} d_eff²)", "gp_ucb": "O(A T³)"}
PROTOCOL = {"lam": 0.2, "F": 20.0, "qbar": 2.0, "C": 2.0}


def params(algorithm: str, T: int) -> dict:
    """The protocol's hyperparameters that ``algorithm`` takes, delta = 1/T."""
    import sketchbo as sb  # noqa: PLC0415

    keys = sb.ALGORITHMS[algorithm].defaults
    return {k: v for k, v in {**PROTOCOL, "delta": 1.0 / T}.items() if k in keys}


def measure(problem_name: str, horizons: dict, repeats: int, log) -> dict:
    """Every (algorithm, T) ``repeats`` times, one seed, in this process: execution and compilation times."""
    import sketchbo as sb  # noqa: PLC0415

    sb.use_cpu_cores()
    problem = sb.make_problem(problem_name)
    out = {}
    for algorithm, Ts in horizons.items():
        rows = []
        for T in Ts:
            runs = []
            for _ in range(repeats):
                res = sb.run(algorithm, problem, T=T, params=params(algorithm, T), progress=False)
                runs.append({"exec_s": float(res.wall_time_s - res.compile_time_s),
                             "compile_s": float(res.compile_time_s), "ratio": float(res.regret_ratio[0]),
                             "max_dict": int(np.max(res.traces["dict_size"])),
                             "batches": int(np.max(res.traces["batch_index"])) + 1})
            med = float(np.median([r["exec_s"] for r in runs]))
            rows.append({"T": T, "runs": runs, "exec_s": med})
            log(f"{algorithm:7s} T = {T:6d}: exec {med:.3f} s (runs {[round(r['exec_s'], 3) for r in runs]}), "
                f"R_T/R_unif {runs[-1]['ratio']:.3f}")
        out[algorithm] = {"rows": rows, **fit(rows)}
    return out


def fit(rows: list) -> dict:
    """The least-squares line of log(exec) against log(T): ``{"slope", "intercept"}`` (natural logs)."""
    T = np.log([r["T"] for r in rows])
    t = np.log([r["exec_s"] for r in rows])
    slope, intercept = np.polyfit(T, t, 1)
    return {"slope": float(slope), "intercept": float(intercept)}


def last_slope(rows: list) -> float:
    """The slope of log(exec) against log(T) between the two largest horizons (fixed costs weigh least there)."""
    a, b = rows[-2], rows[-1]
    return float(np.log(b["exec_s"] / a["exec_s"]) / np.log(b["T"] / a["T"]))


def plot(record: dict, out: Path) -> Path:
    """time_vs_T.png: execution time against T on log axes, one line per algorithm with its fitted slope."""
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    for algorithm, res in record["results"].items():
        T = np.array([r["T"] for r in res["rows"]], float)
        t = np.array([r["exec_s"] for r in res["rows"]])
        line, = ax.loglog(T, t, "o-", label=f"{LABELS.get(algorithm, algorithm)}: slope {res['slope']:.2f} "
                                                f"({last_slope(res['rows']):.2f} at the largest T)")
        grid = np.geomspace(T.min(), T.max(), 50)
        ax.loglog(grid, np.exp(res["intercept"]) * grid ** res["slope"], ":", color=line.get_color(), lw=1)
    ax.set_xlabel("horizon T")
    ax.set_ylabel("execution time, one seed [s]")
    meta = record["meta"]
    ax.set_title(f"{record['problem']}, one seed, median of {record['repeats']}; {meta['date'][:10]}", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    out.mkdir(parents=True, exist_ok=True)
    path = out / "time_vs_T.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main(argv=None) -> dict | None:
    """Measure (``--out`` a JSON file) or draw the figure from a record (``--plot RECORD --out DIR``)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--problem", default="cadata")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--algorithms", default="bbkb,bkb,gp_ucb", help="comma-separated, of " + ", ".join(DEFAULT_T))
    ap.add_argument("--plot", type=Path, default=None, help="draw time_vs_T.png from this record into --out")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    if args.plot is not None:
        if args.out is None:
            ap.error("--plot needs --out DIR")
        print(f"wrote {plot(json.loads(args.plot.read_text()), args.out)}")
        return None
    algorithms = [a for a in args.algorithms.split(",") if a]
    bad = [a for a in algorithms if a not in DEFAULT_T]
    if bad or args.repeats < 1:
        ap.error(f"--algorithms must name some of {list(DEFAULT_T)} (got {bad}); --repeats >= 1")
    date = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    load0 = os.getloadavg()[0]
    t0 = time.perf_counter()
    results = measure(args.problem, {a: DEFAULT_T[a] for a in algorithms}, args.repeats,
                      lambda line: print(line, file=sys.stderr, flush=True))
    record = {"meta": {"date": date, "host": platform.node(), "platform": platform.platform(),
                       "cpu_count": os.cpu_count(), "load_avg_start": load0, "load_avg_end": os.getloadavg()[0],
                       "total_s": time.perf_counter() - t0,
                       "command": [Path(sys.argv[0]).name] + list(argv if argv is not None else sys.argv[1:])},
              "problem": args.problem, "repeats": args.repeats, "protocol": PROTOCOL, "paper_rate": PAPER_RATE,
              "results": results}
    for algorithm, res in results.items():
        print(f"{LABELS[algorithm]:13s} slope {res['slope']:.2f} over T = {res['rows'][0]['T']}..{res['rows'][-1]['T']},"
              f" {last_slope(res['rows']):.2f} between the two largest"
              f" (paper: {PAPER_RATE[algorithm]})")
    if args.out is not None:
        from sketchbo.engine.files import atomic_write_json  # noqa: PLC0415  (written whole)
        atomic_write_json(args.out, record, indent=2)
        print(f"wrote {args.out}")
    return record


if __name__ == "__main__":
    main()
