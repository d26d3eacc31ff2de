"""Where a run's compilation time goes: per compiled program, JAX's tracing, its lowering to MLIR and XLA's backend
compilation, with the size of each optimized program; cold (no cache) and warm (a second process with the cache that
a first one filled). docs/benchmarks.md#compile-time quotes it.

Every measurement runs in a fresh Python process started from this one, so that nothing compiled before it counts.
SciPy, which JAX's LAPACK kernels load at their first use, is imported before the clock starts. The timings come
from JAX's own compilation events (``jax.monitoring``: ``jaxpr_trace_duration``,
``jaxpr_to_mlir_module_duration``, ``backend_compile_duration``), grouped by the program's name; ``compile [s]`` is
the run's ``compile_time_s`` and ``exec [s]`` the rest of its wall time.

    SKETCHBO_DATA_DIR=/path/to/data python scripts/bench_compile.py --problem cadata --T 10000 --seeds 1 --repeats 2 \\
        --out compile.json

``--src DIR`` runs the measurement on another checkout of sketchbo (e.g. ``git worktree add /tmp/before <commit>``),
to compare a change with what came before it in the same run.
"""
from __future__ import annotations

import argparse
import collections
import datetime
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

EVENTS = {"/jax/core/compile/jaxpr_trace_duration": "trace_s",
          "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower_s",
          "/jax/core/compile/backend_compile_duration": "backend_s"}
PROGRAMS = ("jit(init_all)", "jit(chunk_all)")
# the ops of an optimized CPU program that become kernels of their own (each compiled by LLVM or a library call)
_KERNEL = re.compile(r"= \S+ (fusion|custom-call|dot|reduce-window|reduce|call|sort|scatter|gather|copy|"
                     r"dynamic-update-slice|dynamic-slice|transpose|convolution)\(")


def worker(job: dict) -> dict:
    """One measurement in this fresh process: the run's times and, per program, JAX's compilation events."""
    import jax  # noqa: PLC0415
    import jax.monitoring as mon  # noqa: PLC0415

    events = collections.defaultdict(lambda: collections.defaultdict(float))

    def listen(name, duration, **kw):
        if name in EVENTS:
            fun = kw.get("fun_name", "?")
            fun = fun if fun.startswith("jit(") else f"jit({fun})"
            events[fun][EVENTS[name]] += duration

    mon.register_event_duration_secs_listener(listen)
    import sketchbo as sb  # noqa: PLC0415
    from sketchbo.engine import program  # noqa: PLC0415

    if job["cache"] != "off":
        try:
            from sketchbo.engine import compile_cache  # noqa: F401,PLC0415  (sb.run turns the cache on itself)
        except ImportError:  # a checkout from before the default cache: JAX's persistent cache only
            program.enable_compilation_cache(job["cache"])
    import scipy.linalg  # noqa: F401,PLC0415  (loaded by JAX's LAPACK kernels: an import, not compilation)

    sb.use_cpu_cores()
    problem = sb.make_problem(job["problem"])
    params = {"lam": 0.2, "F": 20.0, "qbar": 2.0, "C": 2.0} if job["algorithm"] == "bbkb" else None
    t0 = time.perf_counter()
    res = sb.run(job["algorithm"], problem, T=job["T"], n_seeds=job["seeds"], dtype=job["dtype"], params=params,
                 progress=False)
    wall = time.perf_counter() - t0
    sizes = {}
    for fns in program._PROGRAMS.values():  # noqa: SLF001  (the compiled programs of this run)
        for name, compiled in zip(PROGRAMS, fns):
            text = compiled.as_text() or ""
            sizes[name] = {"hlo_chars": len(text), "kernels": len(_KERNEL.findall(text))}
    programs = {name: {**{k: round(v, 4) for k, v in events[name].items()}, **sizes.get(name, {})}
                for name in PROGRAMS}
    other = {k: round(sum(ev[k] for fun, ev in events.items() if fun not in PROGRAMS), 4) for k in EVENTS.values()}
    return {"wall_s": wall, "compile_s": float(res.compile_time_s), "exec_s": wall - float(res.compile_time_s),
            "ratio": float(res.regret_ratio.mean()), "programs": programs, "other_programs": other,
            "sketchbo": sb.__file__}


def spawn(job: dict, src: str | None, cache: str) -> dict:
    """``worker(job)`` in a fresh process, on the checkout ``src`` (None: this one), with the cache ``cache``."""
    env = {**os.environ, "SKETCHBO_COMPILE_CACHE": cache}
    if src:
        env["PYTHONPATH"] = os.pathsep.join([str(Path(src).resolve()), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    proc = subprocess.run([sys.executable, __file__, "--worker", json.dumps({**job, "cache": cache})], env=env,
                          capture_output=True, text=True, check=False, cwd=tempfile.gettempdir())
    if proc.returncode != 0:
        raise RuntimeError(f"the measurement failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def measure(job: dict, sources: dict, repeats: int, log) -> dict:
    """Cold and warm measurements of every checkout in ``sources`` ({label: dir or None}), alternating, ``repeats``
    times."""
    out = {label: {"cold": [], "warm": []} for label in sources}
    for rep in range(repeats):
        for label, src in sources.items():
            out[label]["cold"].append(spawn(job, src, "off"))
            with tempfile.TemporaryDirectory(prefix="compile-cache-") as cache:
                spawn(job, src, cache)  # fills the cache
                out[label]["warm"].append(spawn(job, src, cache))
            c, w = out[label]["cold"][-1], out[label]["warm"][-1]
            log(f"repeat {rep + 1}/{repeats} {label}: cold compile {c['compile_s']:.2f} s exec {c['exec_s']:.2f} s; "
                f"warm compile {w['compile_s']:.2f} s exec {w['exec_s']:.2f} s")
    return out


def _median(values):
    values = sorted(values)
    n = len(values)
    return values[n // 2] if n % 2 else 0.5 * (values[n // 2 - 1] + values[n // 2])


def table(results: dict) -> str:
    """Per checkout: the medians of the run's times and of each program's compilation events and sizes."""
    head = ("checkout", "what", "trace [s]", "lower [s]", "backend [s]", "kernels", "HLO [kchar]")
    rows = [head]
    for label, runs in results.items():
        cold = runs["cold"]
        for name in PROGRAMS:
            p = [r["programs"][name] for r in cold]
            rows.append((label, f"{name}, cold", *(f"{_median([x.get(k, 0.0) for x in p]):.3f}"
                                                  for k in ("trace_s", "lower_s", "backend_s")),
                         str(p[0].get("kernels", "-")), f"{p[0].get('hlo_chars', 0) / 1000:.0f}"))
        for kind in ("cold", "warm"):
            r = runs[kind]
            med = {k: _median([x[k] for x in r]) for k in ("compile_s", "exec_s", "wall_s")}
            rows.append((label, f"run, {kind}: compile {med['compile_s']:.2f} s, exec {med['exec_s']:.2f} s, "
                                f"wall {med['wall_s']:.2f} s", "", "", "", "", ""))
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    lines.insert(1, "-" * len(lines[0]))
    return "\n".join(lines)


def main(argv=None) -> dict:
    """Measure, print the table, write ``--out``."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--algorithm", default="bbkb")
    ap.add_argument("--problem", default="cadata")
    ap.add_argument("--T", type=int, default=10000)
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--dtype", default="float64", choices=("float64", "float32"))
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--src", action="append", default=[], metavar="LABEL=DIR",
                    help="another checkout to measure beside this one, e.g. before=/tmp/before (repeatable)")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    if args.T < 2 or args.seeds < 1 or args.repeats < 1:
        ap.error(f"--T >= 2, --seeds >= 1, --repeats >= 1; got {args.T}, {args.seeds}, {args.repeats}")
    sources = {}
    for item in args.src:
        label, _, path = item.partition("=")
        if not path or not (Path(path) / "sketchbo" / "__init__.py").is_file():
            ap.error(f"--src {item!r}: give LABEL=DIR with DIR a checkout of sketchbo (holding sketchbo/__init__.py)")
        sources[label] = path
    sources["this"] = None
    job = {"algorithm": args.algorithm, "problem": args.problem, "T": args.T, "seeds": args.seeds, "dtype": args.dtype}
    date = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    load0 = os.getloadavg()[0]
    results = measure(job, sources, args.repeats, lambda line: print(line, file=sys.stderr, flush=True))
    print(f"compilation of {args.algorithm} on {args.problem}, T = {args.T}, {args.seeds} seed(s), {args.dtype}; "
          f"medians of {args.repeats}; {date}; {platform.node()} ({platform.platform()}, {os.cpu_count()} CPUs, load "
          f"{load0:.2f} at start, {os.getloadavg()[0]:.2f} at end)")
    print(table(results))
    out = {"meta": {"date": date, "host": platform.node(), "platform": platform.platform(), "cpu_count": os.cpu_count(),
                    "load_avg_start": load0, "load_avg_end": os.getloadavg()[0],
                    "command": [Path(sys.argv[0]).name] + list(argv if argv is not None else sys.argv[1:])},
           "job": job, "sources": {k: v for k, v in sources.items()}, "results": results}
    if args.out is not None:
        from sketchbo.engine.files import atomic_write_json  # noqa: PLC0415  (written whole)
        atomic_write_json(args.out, out, indent=2)
        print(f"wrote {args.out}")
    return out


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--worker":
        print(json.dumps(worker(json.loads(sys.argv[2]))))
    else:
        main()
