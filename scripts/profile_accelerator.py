"""Where a vmapped run's execution time goes, kernel by kernel: BBKB on a finite problem with S seeds in one
program, run under JAX's profiler. The profiler's trace (Perfetto JSON) is summarised per device kernel (total
time, count, share of the kernels' time), per XLA module, and as the time the device is busy against the run's
execution time (its rounds, compilation excluded); the host's share is what is left. Keep T short enough for
the trace to stay small (a few thousand steps at 1000 seeds). docs/benchmarks.md#h200 quotes it (issue 63's profile of the 1000-seed row).

    SKETCHBO_DATA_DIR=/path/to/data python scripts/profile_accelerator.py --seeds 1000 --T 2000 \\
        --out profile.json [--trace-out trace.json.gz]

On a CPU the same script runs (the "device" is then XLA:CPU's thunk threads), which is how it is tested.
"""
from __future__ import annotations

import argparse
import collections
import datetime
import glob
import gzip
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import sketchbo as sb  # first: sets OPENBLAS_NUM_THREADS before numpy loads OpenBLAS
import jax
import numpy as np

PARAMS = {"lam": 0.2, "F": 20.0, "qbar": 2.0, "C": 2.0}  # the BBKB protocol of scripts/bench.py (Cadata)


def device_processes(events: list) -> dict:
    """{pid: name} of the trace's device processes (``/device:...``), or of the host's XLA threads on a CPU."""
    names = {e["pid"]: e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "process_name" and "pid" in e}
    devices = {pid: n for pid, n in names.items() if "/device:" in n}
    return devices or {pid: n for pid, n in names.items() if "host" in n.lower()}


def busy_seconds(intervals: list) -> float:
    """Length of the union of ``(start, end)`` intervals (microseconds in, seconds out)."""
    total, end = 0.0, -np.inf
    for s, e in sorted(intervals):
        if e > end:
            total += e - max(s, end)
            end = e
    return total * 1e-6


def summarise(events: list, top: int) -> dict:
    """Kernels of the device processes: per name total seconds and count, per XLA module, and the busy time."""
    devices = device_processes(events)
    kernels = [e for e in events if e.get("ph") == "X" and e.get("pid") in devices and "dur" in e]
    on_cpu = not any("/device:" in n for n in devices.values())
    if on_cpu:  # XLA:CPU: the thunks run on the PjRt client's threads, the Python thread is not a kernel
        threads = {e["tid"] for e in events if e.get("ph") == "M" and e.get("name") == "thread_name"
                   and "python" not in str(e.get("args", {}).get("name", "")).lower()}
        kernels = [e for e in kernels if e.get("tid") in threads]
    by_name, by_module = collections.defaultdict(lambda: [0.0, 0]), collections.defaultdict(lambda: [0.0, 0])
    for e in kernels:
        args = e.get("args", {})
        for table, key in ((by_name, e["name"]), (by_module, args.get("hlo_module", args.get("long_name", "?")))):
            table[key][0] += e["dur"] * 1e-6
            table[key][1] += 1
    busy = busy_seconds([(e["ts"], e["ts"] + e["dur"]) for e in kernels])
    span = (max(e["ts"] + e["dur"] for e in kernels) - min(e["ts"] for e in kernels)) * 1e-6 if kernels else 0.0
    ranked = sorted(by_name.items(), key=lambda kv: -kv[1][0])
    kernel_s = sum(v[0] for v in by_name.values())
    return {"devices": sorted(set(devices.values())), "kernel_events": len(kernels), "kernel_s": kernel_s,
            "busy_s": busy, "span_s": span,
            "top": [{"kernel": k, "s": v[0], "count": v[1], "share": v[0] / kernel_s if kernel_s else 0.0}
                    for k, v in ranked[:top]],
            "modules": sorted(({"module": k, "s": v[0], "count": v[1]} for k, v in by_module.items()),
                              key=lambda r: -r["s"])[:10]}


def profiled_run(problem, args) -> tuple:
    """(result, profile summary, wall seconds, the trace's path in a temporary directory)."""
    log_dir = tempfile.mkdtemp(prefix="profile-")
    with jax.profiler.trace(log_dir, create_perfetto_trace=True):
        t0 = time.perf_counter()
        res = sb.run("bbkb", problem, T=args.T, n_seeds=args.seeds, dtype=args.dtype, params=PARAMS,
                     progress=False)
        wall = time.perf_counter() - t0
    trace = glob.glob(os.path.join(log_dir, "plugins", "profile", "*", "perfetto_trace.json.gz"))[0]
    with gzip.open(trace) as fh:
        events = json.load(fh)["traceEvents"]
    print(f"profiled run {wall:.1f} s; {len(events)} trace events", flush=True)
    return res, summarise(events, args.top), wall, trace


def print_summary(s: dict, exec_s: float) -> None:
    """The summary as a table on stdout."""
    print(f"\ndevice(s) {s['devices']}: {s['kernel_events']} kernels, {s['kernel_s']:.2f} s of kernels, busy "
          f"{s['busy_s']:.2f} s over a span of {s['span_s']:.2f} s; the run executed {exec_s:.2f} s")
    print(f"{'kernel':60s} {'s':>8s} {'count':>8s} {'share':>6s}")
    for r in s["top"]:
        print(f"{r['kernel'][:60]:60s} {r['s']:8.3f} {r['count']:8d} {r['share']:6.3f}")
    print("modules: " + "; ".join(f"{m['module']} {m['s']:.2f} s ({m['count']})" for m in s["modules"]))


def main(argv=None) -> dict:
    """Profile, print the summary, write ``--out``."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--problem", default="cadata")
    ap.add_argument("--seeds", type=int, default=1000)
    ap.add_argument("--T", type=int, default=2000)
    ap.add_argument("--dtype", default="float64", choices=("float64", "float32"))
    ap.add_argument("--top", type=int, default=30, help="kernels listed (default 30)")
    ap.add_argument("--out", type=Path, default=Path("profile.json"))
    ap.add_argument("--trace-out", type=Path, default=None, help="copy the Perfetto trace (json.gz) here")
    args = ap.parse_args(argv)
    problem = sb.make_problem(args.problem)
    res, summary, wall, trace = profiled_run(problem, args)
    exec_s = float(np.sum(res.round_time_s))
    print_summary(summary, exec_s)
    if args.trace_out:
        shutil.copyfile(trace, args.trace_out)
    data = {"command": "python scripts/profile_accelerator.py " + " ".join(sys.argv[1:] if argv is None else argv),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "jax": jax.__version__, "device": f"{jax.default_backend()}:{jax.devices()[0].device_kind}",
            "problem": args.problem, "seeds": args.seeds, "T": args.T, "dtype": args.dtype,
            "wall_s": wall, "compile_s": float(res.compile_time_s), "exec_s": exec_s, "regret_ratio_mean": float(res.regret_ratio.mean()),
            "profile": summary}
    from sketchbo.engine.files import atomic_write_json  # noqa: PLC0415

    atomic_write_json(args.out, data, indent=1)
    print(f"saved {args.out}")
    return data


if __name__ == "__main__":
    main()
