"""BBKB in float32 against float64 on the same seeds: does float32 keep R_T / R_T^unif? (docs/benchmarks.md)

Issue 63's float32 target asks for R_T / R_T^unif within 2% of float64's. Ten seeds cannot tell such a gap from
the seeds' spread (the float32 run's trajectories part from the float64 ones at the first rounding that changes a
selection, so the difference of two runs on the same seeds is about as noisy as two independent runs). This script
runs BBKB with the finite-arm protocol of ``scripts/bench_authors.py`` (docs/protocols.md#finite-arm-protocol) on
``--seeds`` seeds in both dtypes and records each seed's R_T / R_T^unif, the relative gap of the means and the paired
difference with its standard error. Times are not its subject (see ``scripts/bench_authors.py --speed``).

    SKETCHBO_DATA_DIR=/path/to/data python scripts/bench_f32.py --problem cadata --seeds 50 \\
        --out experiments/bench_f32_cadata.json
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_authors import machine_info, our_params, protocol  # noqa: E402  (the speed benchmark's protocol)


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problem", default="cadata")
    ap.add_argument("--T", type=int, default=10000)
    ap.add_argument("--seeds", type=int, default=50)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    if args.T < 2 or args.seeds < 2:
        ap.error(f"--T >= 2 and --seeds >= 2; got {args.T}, {args.seeds}")
    import sketchbo as sb  # noqa: PLC0415

    sb.use_cpu_cores()
    problem = sb.make_problem(args.problem)
    proto = protocol(problem, args.T)
    meta = machine_info()
    ratios = {}
    for dtype in ("float64", "float32"):
        res = sb.run("bbkb", problem, T=args.T, n_seeds=args.seeds, dtype=dtype, params=our_params(proto, args.T),
                     progress=False)
        ratios[dtype] = [float(r) for r in res.regret_ratio]
        print(f"{dtype}: R_T/R_unif {np.mean(ratios[dtype]):.4f} +- {np.std(ratios[dtype], ddof=1):.4f} (sd)",
              file=sys.stderr)
    a, b = np.asarray(ratios["float64"]), np.asarray(ratios["float32"])
    diff = b - a
    summary = {"mean_float64": float(a.mean()), "mean_float32": float(b.mean()),
               "gap_relative": float(b.mean() / a.mean() - 1.0), "paired_diff_mean": float(diff.mean()),
               "paired_diff_se": float(diff.std(ddof=1) / np.sqrt(args.seeds))}
    print(f"{args.problem}, T = {args.T}, {args.seeds} seeds: float64 {summary['mean_float64']:.4f}, float32 "
          f"{summary['mean_float32']:.4f}, gap {100 * summary['gap_relative']:+.2f}%, paired difference "
          f"{summary['paired_diff_mean']:+.4f} +- {summary['paired_diff_se']:.4f} (standard error)")
    meta.update(load_avg_end=list(os.getloadavg()),
                command=[Path(sys.argv[0]).name] + list(argv if argv is not None else sys.argv[1:]))
    out = {"meta": meta, "problem": args.problem, "T": args.T, "n_seeds": args.seeds, "protocol": proto,
           "ratios": ratios, "summary": summary}
    if args.out is not None:
        from sketchbo.engine.files import atomic_write_json  # noqa: PLC0415  (written whole)
        atomic_write_json(args.out, out, indent=1)
        print(f"wrote {args.out}")
    return out


if __name__ == "__main__":
    main()
