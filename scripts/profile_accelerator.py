"""Where a vmapped run's execution time goes, kernel by kernel: BBKB on a finite problem with S seeds in one
program, run under JAX's profiler. The profiler's trace (Perfetto JSON) is summarised per device kernel (total
time, count, share of the kernels' time), per XLA module, and as the time the device is busy against the run's
execution time (its rounds, compilation excluded); the host's share is what is left. Keep T short enough for
the trace to stay small (a few thousand steps at 1000 seeds). docs/benchmarks.md#h200 quotes it (issue 63's profile of the 1000-seed row).

    SKETCHBO_DATA_DIR=/path/to/data python scripts/profile_accelerator.py --seeds 1000 --T 2000 \\
        --out profile.json [--trace-out trace.json.gz]

On a CPU the same script profiles XLA:CPU's thunks (``--xla_cpu_enable_xprof_traceme``, which this script adds to
``XLA_FLAGS``): each thunk's own time on the execution threads, a control-flow thunk (a while loop, a conditional)
counting only what its nested thunks leave. Python's tracer is off (its events would fill the trace).

    SKETCHBO_DATA_DIR=/path/to/data python scripts/profile_accelerator.py --seeds 1 --T 2000 --warm
"""
from __future__ import annotations

import argparse
import collections
import datetime
import glob
import gzip
import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

TRACEME_FLAG = "--xla_cpu_enable_xprof_traceme=true"  # XLA:CPU's thunks in the profiler's trace (before JAX starts)
if "xla_cpu_enable_xprof_traceme" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {TRACEME_FLAG}".strip()

import sketchbo as sb  # noqa: E402  (first of ours: sets OPENBLAS_NUM_THREADS before numpy loads OpenBLAS)
import jax  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_compile import nested  # noqa: E402  (events with their own time, shared with the compile breakdown)

TRACE_EVENT_LIMIT = 1_000_000  # the profiler drops events beyond about this many
PARAMS = {"lam": 0.2, "F": 20.0, "qbar": 2.0, "C": 2.0}  # the BBKB protocol of scripts/bench.py (Cadata)


CPU_EXEC_THREADS = ("XLAEigen", "PjRtCpuClient")  # XLA:CPU's execution pools (not its compiler's threads)
WRAPPERS = ("ThunkExecutor::", "SlinkyThreadPool::", "TaskDispatcher::", "PjitFunction", "CommonPjRt", "PjRtCpu")
"""Names of the CPU trace's scheduling and host-API events, which wrap the thunks rather than compute."""


def device_processes(events: list) -> dict:
    """{pid: name} of the trace's device processes (``/device:...``), or of the host (XLA:CPU) on a CPU."""
    names = {e["pid"]: e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "process_name" and "pid" in e}
    devices = {pid: n for pid, n in names.items() if "/device:" in n}
    return devices or {pid: n for pid, n in names.items() if "host" in n.lower()}


def kernel_events(events: list, devices: dict) -> list:
    """The kernels of the device processes; on a CPU, the thunks on XLA:CPU's execution threads, without the
    events that schedule them."""
    kernels = [e for e in events if e.get("ph") == "X" and e.get("pid") in devices and "dur" in e]
    if any("/device:" in n for n in devices.values()):
        return kernels
    threads = {(e["pid"], e["tid"]) for e in events if e.get("ph") == "M" and e.get("name") == "thread_name"
               and any(p in str(e.get("args", {}).get("name", "")) for p in CPU_EXEC_THREADS)}
    return [e for e in kernels if (e["pid"], e.get("tid")) in threads and not e["name"].startswith(WRAPPERS)]


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
    kernels = kernel_events(events, devices)
    by_name, by_module = collections.defaultdict(lambda: [0.0, 0]), collections.defaultdict(lambda: [0.0, 0])
    for e, _, own in nested(kernels):  # each kernel by its own time (a CPU's control-flow thunks hold others)
        args = e.get("args", {})
        for table, key in ((by_name, e["name"]), (by_module, args.get("hlo_module", args.get("long_name", "?")))):
            table[key][0] += own * 1e-6
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
    kw = {"T": args.T, "n_seeds": args.seeds, "dtype": args.dtype, "params": PARAMS, "progress": False}
    if args.warm:  # compiled first: the profiled run only executes
        sb.run("bbkb", problem, **kw)
    options = jax.profiler.ProfileOptions()
    options.python_tracer_level = 0  # Python's frames would fill the trace's event budget
    with jax.profiler.trace(log_dir, create_perfetto_trace=True, profiler_options=options):
        t0 = time.perf_counter()
        res = sb.run("bbkb", problem, **kw)
        wall = time.perf_counter() - t0
    trace = glob.glob(os.path.join(log_dir, "plugins", "profile", "*", "perfetto_trace.json.gz"))[0]
    with gzip.open(trace) as fh:
        events = json.load(fh)["traceEvents"]
    print(f"profiled run {wall:.1f} s; {len(events)} trace events", flush=True)
    if len(events) >= TRACE_EVENT_LIMIT:
        print(f"warning: the trace holds {len(events)} events, the profiler's limit: later kernels are missing "
              "(profile a shorter run, --T)", file=sys.stderr, flush=True)
    return res, summarise(events, args.top), wall, trace


_INSTR = re.compile(r"^\s*(?:ROOT )?%(\S+) = (\(.*?\)|\S+) ([a-z][a-z0-9_-]*)\((.*)$")
_NOTABLE = ("dot", "exponential", "reduce", "sort", "scatter", "gather", "custom-call", "convolution", "log", "sqrt",
            "divide", "dynamic-update-slice", "while", "conditional")


def hlo_instructions(text: str) -> tuple[dict, dict]:
    """``(instructions, computations)`` of an optimized HLO module's text: {instruction name: (result shape, opcode,
    the computation it calls or its custom-call target, or None)} and {computation name: [opcodes]}."""
    instructions, computations, current = {}, {}, None
    for line in text.splitlines():
        if line.startswith("%") or line.startswith("ENTRY"):
            current = line.split()[1 if line.startswith("ENTRY") else 0].lstrip("%")
            computations[current] = []
            continue
        m = _INSTR.match(line)
        if m:
            called = re.search(r"calls=%([\w.-]+)|custom_call_target=\"([^\"]+)\"", m.group(4))
            instructions[m.group(1)] = (m.group(2), m.group(3), (called.group(1) or called.group(2)) if called else None)
            if current is not None:
                computations[current].append(m.group(3))
    return instructions, computations


def describe(kernel: str, instructions: dict, computations: dict) -> str:
    """``shape opcode [what it computes]`` of a profiled kernel, from the program's HLO (GPU kernels are named like
    their instruction with "_" for "."), or "" where no instruction has its name."""
    name = kernel if kernel in instructions else re.sub(r"_(\d+)$", r".\1", kernel)
    if name not in instructions:
        return ""
    shape, opcode, called = instructions[name]
    inner = [op for op in dict.fromkeys(computations.get(called, [])) if op in _NOTABLE]
    if opcode == "custom-call" and called:  # the library routine it calls
        inner = [called]
    return f"{shape} {opcode}" + (f" [{', '.join(inner)}]" if inner else "")


def print_summary(s: dict, exec_s: float) -> None:
    """The summary as a table on stdout."""
    print(f"\ndevice(s) {s['devices']}: {s['kernel_events']} kernels, {s['kernel_s']:.2f} s of kernels, busy "
          f"{s['busy_s']:.2f} s over a span of {s['span_s']:.2f} s; the run executed {exec_s:.2f} s")
    print(f"{'kernel':60s} {'s':>8s} {'count':>8s} {'share':>6s}")
    for r in s["top"]:
        print(f"{r['kernel'][:60]:60s} {r['s']:8.3f} {r['count']:8d} {r['share']:6.3f}  {r.get('hlo', '')}")
    print("modules: " + "; ".join(f"{m['module']} {m['s']:.2f} s ({m['count']})" for m in s["modules"]))


def main(argv=None) -> dict:
    """Profile, print the summary, write ``--out``."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--problem", default="cadata")
    ap.add_argument("--seeds", type=int, default=1000)
    ap.add_argument("--T", type=int, default=2000)
    ap.add_argument("--dtype", default="float64", choices=("float64", "float32"))
    ap.add_argument("--top", type=int, default=30, help="kernels listed (default 30)")
    ap.add_argument("--warm", action="store_true", help="run once before the profiled run (compilation left out)")
    ap.add_argument("--out", type=Path, default=Path("profile.json"))
    ap.add_argument("--trace-out", type=Path, default=None, help="copy the Perfetto trace (json.gz) here")
    args = ap.parse_args(argv)
    problem = sb.make_problem(args.problem)
    res, summary, wall, trace = profiled_run(problem, args)
    from sketchbo.engine import program  # noqa: PLC0415  (the run's compiled programs)

    instructions, computations = {}, {}
    for compiled in (c for fns in program._PROGRAMS.values() for c in fns):  # noqa: SLF001
        ins, comps = hlo_instructions(compiled.as_text() or "")
        instructions.update(ins)
        computations.update(comps)
    for row in summary["top"]:
        row["hlo"] = describe(row["kernel"], instructions, computations)
    exec_s = float(np.sum(res.round_time_s))
    print_summary(summary, exec_s)
    if args.trace_out:
        shutil.copyfile(trace, args.trace_out)
    data = {"command": "python scripts/profile_accelerator.py " + " ".join(sys.argv[1:] if argv is None else argv),
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "jax": jax.__version__, "device": f"{jax.default_backend()}:{jax.devices()[0].device_kind}",
            "problem": args.problem, "arms": int(np.shape(problem.arms)[0]),
            "batches": np.asarray(res.n_batches).tolist(), "seeds": args.seeds, "T": args.T, "dtype": args.dtype, "warm": args.warm,
            "wall_s": wall, "compile_s": float(res.compile_time_s), "exec_s": exec_s, "regret_ratio_mean": float(res.regret_ratio.mean()),
            "profile": summary}
    from sketchbo.engine.files import atomic_write_json  # noqa: PLC0415

    atomic_write_json(args.out, data, indent=1)
    print(f"saved {args.out}")
    return data


if __name__ == "__main__":
    main()
