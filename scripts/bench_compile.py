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

Where XLA's compilation goes (unless ``--no-phases``): one more cold process per checkout and repeat runs under
JAX's profiler (its Python tracer off), whose trace names XLA's pass pipelines and passes, the backend's emission
and LLVM's code generation, each tagged with its program; [`xla_phases`][] sums each event's own time (less that of
the events nested in it) per name within each program's compilation. That process is not timed.

``--src DIR`` runs the measurement on another checkout of sketchbo (e.g. ``git worktree add /tmp/before <commit>``),
to compare a change with what came before it in the same run.
"""
from __future__ import annotations

import argparse
import collections
import contextlib
import datetime
import glob
import gzip
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
    profiled = contextlib.nullcontext()
    if job.get("profile_dir"):
        options = jax.profiler.ProfileOptions()
        options.python_tracer_level = 0  # Python's frames would fill the trace
        profiled = jax.profiler.trace(job["profile_dir"], create_perfetto_trace=True, profiler_options=options)
    with profiled:
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


PHASES = {"hlo_passes_s": "HLO passes", "backend_s": "RunBackend", "codegen_s": "Codegen"}
"""The XLA phases totalled per program: its pass pipelines (through layout assignment, after it, after scheduling),
the backend (emission and code generation) and, within it, LLVM's code generation (event name prefixes/suffixes)."""


def _program_of(event: dict) -> str | None:
    """The XLA module an event of the compiler names (``jit_chunk_all``) or None."""
    args = event.get("args", {})
    name = args.get("module", args.get("name"))
    return name if isinstance(name, str) and name.startswith("jit_") else None


def nested(events: list):
    """``(event, its enclosing events (outermost first), own microseconds)`` for every complete event, thread by
    thread, each once its own time is known (its duration less that of the events directly nested in it)."""
    by_thread = collections.defaultdict(list)
    for e in events:
        if e.get("ph") == "X" and "dur" in e:
            by_thread[(e.get("pid"), e.get("tid"))].append(e)
    for evs in by_thread.values():
        stack = []  # [event, own time]
        for e in sorted(evs, key=lambda e: (e["ts"], -e["dur"])):
            while stack and stack[-1][0]["ts"] + stack[-1][0]["dur"] <= e["ts"]:
                done = stack.pop()
                yield done[0], [s[0] for s in stack], done[1]
            if stack:
                stack[-1][1] -= e["dur"]
            stack.append([e, float(e["dur"])])
        while stack:
            done = stack.pop()
            yield done[0], [s[0] for s in stack], done[1]


def xla_phases(events: list, top: int = 12) -> dict:
    """Per XLA module, from a profiler trace of its compilation: ``{module: {"total_s", "hlo_passes_s",
    "backend_s", "codegen_s", "passes": [[name, own seconds, count], ...]}}``. An event belongs to a module when it
    lies within an event tagged with that module (a pass pipeline, the backend) on the same thread; ``total_s``
    is the wall time of the module's outermost tagged events, a phase the wall time of its outermost events
    ([`PHASES`][]), ``passes`` the ``top`` names by own time (the event's duration less that of the events nested
    in it; a pipeline's suffix " (jit_...)" dropped)."""
    out, own = {}, collections.defaultdict(dict)
    for e, outer, own_us in nested(events):
        chain = outer + [e]
        module = next((m for m in map(_program_of, chain) if m is not None), None)
        if module is None:
            continue
        rec = out.setdefault(module, {"total_s": 0.0, **{k: 0.0 for k in PHASES}})
        if not any(_program_of(o) for o in outer):
            rec["total_s"] += e["dur"] * 1e-6
        for key, part in PHASES.items():
            if part in e["name"] and not any(part in o["name"] for o in outer):
                rec[key] += e["dur"] * 1e-6
        slot = own[module].setdefault(e["name"].replace(f" ({module})", ""), [0.0, 0])
        slot[0] += own_us * 1e-6
        slot[1] += 1
    for module, rec in out.items():
        ranked = sorted(own[module].items(), key=lambda kv: -kv[1][0])[:top]
        rec.update({k: round(v, 6) for k, v in rec.items()}, passes=[[k, round(t, 6), n] for k, (t, n) in ranked])
    return out


def profiled_phases(job: dict, src: str | None) -> dict:
    """[`xla_phases`][] of a cold run in a fresh process under JAX's profiler (not timed)."""
    with tempfile.TemporaryDirectory(prefix="compile-profile-") as log_dir:
        spawn({**job, "profile_dir": log_dir}, src, "off")
        trace = glob.glob(os.path.join(log_dir, "plugins", "profile", "*", "perfetto_trace.json.gz"))
        if not trace:
            return {}
        with gzip.open(trace[0]) as fh:
            return xla_phases(json.load(fh)["traceEvents"])


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


def measure(job: dict, sources: dict, repeats: int, log, phases: bool = True) -> dict:
    """Cold and warm measurements of every checkout in ``sources`` ({label: dir or None}), alternating, ``repeats``
    times; with ``phases``, also [`profiled_phases`][] of a cold run."""
    out = {label: {"cold": [], "warm": [], "phases": []} for label in sources}
    for rep in range(repeats):
        for label, src in sources.items():
            out[label]["cold"].append(spawn(job, src, "off"))
            if phases:
                out[label]["phases"].append(profiled_phases(job, src))
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


def phase_table(results: dict, top: int = 6) -> str:
    """Per checkout and program: the medians of XLA's phases over the profiled runs and the passes of the most own
    time (first profiled run)."""
    lines = []
    for label, runs in results.items():
        profiled = [p for p in runs.get("phases", []) if p]
        for module in sorted({m for p in profiled for m in p}):
            recs = [p[module] for p in profiled if module in p]
            med = {k: _median([r[k] for r in recs]) for k in ("total_s", *PHASES)}
            passes = ", ".join(f"{n} {t:.3f}" for n, t, _ in recs[0]["passes"][:top])
            lines.append(f"{label} {module}: XLA {med['total_s']:.3f} s = HLO passes {med['hlo_passes_s']:.3f} + "
                         f"backend {med['backend_s']:.3f} (LLVM code generation {med['codegen_s']:.3f}); "
                         f"most own time: {passes}")
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
    ap.add_argument("--no-phases", action="store_true", help="skip the profiled run of XLA's phases")
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
    results = measure(job, sources, args.repeats, lambda line: print(line, file=sys.stderr, flush=True),
                      phases=not args.no_phases)
    print(f"compilation of {args.algorithm} on {args.problem}, T = {args.T}, {args.seeds} seed(s), {args.dtype}; "
          f"medians of {args.repeats}; {date}; {platform.node()} ({platform.platform()}, {os.cpu_count()} CPUs, load "
          f"{load0:.2f} at start, {os.getloadavg()[0]:.2f} at end)")
    print(table(results))
    if not args.no_phases:
        print(phase_table(results))
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
