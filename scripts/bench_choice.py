"""When does BBKB beat exact GP-UCB in time? ``sb.run`` of both on GP-sample problems over a grid of A and T.

The record behind the guide docs/choosing.md. For every setting, number of arms A and horizon T it runs
``sb.run("bbkb", ...)`` and ``sb.run("gp_ucb", ...)`` (one seed, float64, the library's defaults otherwise),
each in a fresh Python process so that every run compiles cold, and keeps per run: compilation and execution
time apart (``RunResult.compile_time_s``; execution = the sum of ``round_time_s``, the rounds' wall time),
the whole ``sb.run`` wall time, R_T, R_T / R_T^unif, the number of batches, the largest batch and the largest
model (BBKB's dictionary m_T, GP-UCB's unique pulled arms U_T: both are ``max_dict_size``). The two algorithms
alternate (repeat r runs BBKB first when r is even, GP-UCB first when it is odd) and every cell is repeated
``--repeats`` times; the table prints the medians.

Problems: ``gp_sample`` with d = 3, rbf width sigma^2 = 0.5 and A arms, as ``scripts/bench.py`` builds it
(:func:`bench.gp_problem`: an exact GP draw up to 1000 arms, beyond that the kernel interpolant of the draw on
the first 1000 arms), the same problem (arms and f) for both algorithms and every repeat. Settings:

* ``protocol``: the BBKB paper's hyperparameters (lam = 0.2, F = 20, q-bar = 2, C~ = 2, delta = 1/T;
  docs/protocols.md#finite-arm-protocol), the setting of the paper's timing figure;
* ``suggested``: ``gp_sample``'s own suggested lam = 0.01, F = 1 (q-bar = 2, C~ = 2), the quick start's values,
  with which GP-UCB explores far less.

Exact GP-UCB costs O(A U_t) per pull, U_t <= min(t, A), so the grid's corner gets expensive: a cell is not
run (and recorded as such, with the prediction) when its predicted wall time exceeds ``--max-run-s``. The
prediction scales the median measured time of the nearest smaller cell of the same algorithm and A by
(T / T')·min(T / T', A / U_T') (at most quadratic in T while GP-UCB keeps finding new arms), or of the same T
by A / A'; a child process still running after 2 × ``--max-run-s`` is stopped and recorded as timed out.

    python scripts/bench_choice.py                     # the full grid (about 20 min on one free core)
    python scripts/bench_choice.py --quick --out /tmp/choice.json   # tiny sizes: checks the script
    python scripts/docs_choice.py --write              # the tables of docs/choosing.md from the record

The runs import the package from a ``git archive`` of HEAD extracted to a temporary directory (``--working-tree``:
from this checkout instead), so that edits made while the benchmark runs do not change what it measures.

XLA on the CPU slows down many times when other processes compete for the cores: the load average is
recorded at the start and end of the whole run and before and after every run. Compare the two algorithms
within one record (they alternate), not across records.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = REPO / "scripts"
OUT = REPO / "experiments" / "choice_bbkb_vs_gp_ucb.json"
ALGORITHMS = ("bbkb", "gp_ucb")  # the registry names (sketchbo/algorithms/__init__.py)
SETTINGS = {
    "protocol": {"lam": 0.2, "F": 20.0, "qbar": 2.0, "C": 2.0, "delta": None},  # docs/protocols.md, delta = 1/T
    "suggested": {"lam": 0.01, "F": 1.0, "qbar": 2.0, "C": 2.0, "delta": None},  # gp_sample's Problem.suggested
}
# (setting, A values, T values): the protocol on the whole grid, the suggested values on its larger corner
FULL = (("protocol", (500, 2000, 8000), (250, 1000, 4000)), ("suggested", (2000, 8000), (1000, 4000)))
QUICK = (("protocol", (200, 400), (40, 80)), ("suggested", (400,), (80,)))
MAX_RUN_S = 180.0


# ------------------------------------------------------------------------------------------ one run (child)

def child(algorithm: str, setting: str, A: int, T: int) -> dict:
    """One ``sb.run`` in this process (fresh: the compilation is cold) -> the run's numbers."""
    import numpy as np

    import sketchbo as sb

    sys.path.insert(0, str(Path(sb.__file__).resolve().parents[1] / "scripts"))  # the scripts beside that package
    from bench import gp_problem

    problem = gp_problem(A)
    accepted = sb.ALGORITHMS[algorithm].defaults
    params = {k: v for k, v in SETTINGS[setting].items() if k in accepted}
    res = sb.run(algorithm, problem, T=T, n_seeds=1, seed=0, params=params, progress=False)
    return {"wall_s": float(res.wall_time_s), "compile_s": float(res.compile_time_s),
            "exec_s": float(np.sum(res.round_time_s)), "R_T": float(res.cumulative_regret[0]),
            "regret_ratio": float(res.regret_ratio[0]), "n_batches": int(res.n_batches[0]),
            "max_batch": int(res.max_batch_size[0]), "max_model": int(res.max_dict_size[0]),
            "capacity_events": list(res.capacity_events), "device": res.device, "dtype": res.dtype,
            "params": params, "package": str(Path(sb.__file__).resolve().parent)}


def run_child(algorithm: str, setting: str, A: int, T: int, timeout_s: float, code: Path) -> dict:
    """:func:`child` in a fresh Python process that imports sketchbo (and ``scripts/bench.py``) from ``code``;
    its numbers, or ``{"error": ...}``."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(code), os.environ.get("PYTHONPATH")])))
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", algorithm, setting, str(A), str(T)]
    load0, t0 = list(os.getloadavg()), time.perf_counter()
    try:
        proc = subprocess.run(cmd, check=False, cwd=code, env=env, capture_output=True, text=True,
                              timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout_s:.0f} s", "load_before": load0,
                "load_after": list(os.getloadavg())}
    out = {"process_s": time.perf_counter() - t0, "load_before": load0, "load_after": list(os.getloadavg())}
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        return {**out, "error": f"exit {proc.returncode}: {proc.stderr.strip()[-500:]}"}
    return {**out, **json.loads(lines[-1])}


# ------------------------------------------------------------------------------------------ the grid

def machine() -> dict:
    model = ""
    try:
        model = next(ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                     if ln.startswith("model name"))
    except (OSError, StopIteration):
        model = platform.processor()
    return {"cpu_model": model, "cores": os.cpu_count(),
            "cores_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
            "platform": platform.platform(), "python": platform.python_version(),
            "env": {k: os.environ.get(k) for k in ("OPENBLAS_NUM_THREADS", "XLA_FLAGS", "JAX_PLATFORMS")},
            "load_avg_start": list(os.getloadavg())}


def git(*args) -> str:
    try:
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def snapshot(commit: str) -> Path:
    """The package and scripts of ``commit`` extracted (``git archive``) into a new temporary directory: the runs
    measure that commit, whatever happens to the working tree meanwhile."""
    import tempfile

    where = Path(tempfile.mkdtemp(prefix=f"bench_choice_{commit}_"))
    archive = subprocess.run(["git", "archive", commit, "sketchbo", "scripts", "pyproject.toml"], cwd=REPO,
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(where)], input=archive, check=True)
    return where


def predict(runs: list, algorithm: str, setting: str, A: int, T: int) -> tuple[float, str] | None:
    """Predicted wall time of a cell from the median of the nearest smaller measured cell (module docstring)."""
    import statistics

    def cells(match):
        got = {}
        for r in runs:
            if r["algorithm"] == algorithm and r["setting"] == setting and "error" not in r and match(r):
                got.setdefault((r["A"], r["T"]), []).append(r)
        return got

    guesses = []
    same_a = cells(lambda r: r["A"] == A and r["T"] < T)
    if same_a:
        (a, t), rs = max(same_a.items(), key=lambda kv: kv[0][1])
        model = statistics.median(r["max_model"] for r in rs)
        factor = (T / t) * min(T / t, A / max(model, 1))
        wall = statistics.median(r["compile_s"] for r in rs) + statistics.median(r["exec_s"] for r in rs) * factor
        guesses.append((wall, f"A={a}, T={t} measured, execution x{factor:.1f}"))
    same_t = cells(lambda r: r["T"] == T and r["A"] < A)
    if same_t:
        (a, t), rs = max(same_t.items(), key=lambda kv: kv[0][0])
        wall = statistics.median(r["compile_s"] for r in rs) + statistics.median(r["exec_s"] for r in rs) * A / a
        guesses.append((wall, f"A={a}, T={t} measured, execution x{A / a:.1f}"))
    return max(guesses) if guesses else None


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help=f"the JSON record (default {OUT.relative_to(REPO)})")
    parser.add_argument("--repeats", type=int, default=2, help="runs of every cell and algorithm (default 2)")
    parser.add_argument("--max-run-s", type=float, default=MAX_RUN_S,
                        help="do not run a cell whose predicted wall time exceeds this (default 180 s)")
    parser.add_argument("--quick", action="store_true", help="tiny sizes (seconds per run): checks the script")
    parser.add_argument("--working-tree", action="store_true",
                        help="run the package of the working tree (default: a git archive of HEAD, so that edits made "
                        "while the benchmark runs do not change what it measures)")
    parser.add_argument("--child", nargs=4, metavar=("ALGORITHM", "SETTING", "A", "T"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        algorithm, setting, A, T = args.child
        print(json.dumps(child(algorithm, setting, int(A), int(T))), flush=True)
        return {}
    grid = QUICK if args.quick else FULL
    commit = git("rev-parse", "--short", "HEAD")
    code = REPO if args.working_tree or not commit else snapshot(commit)
    record = {
        "what": "exact GP-UCB (gp_ucb) against BBKB (bbkb): compilation and execution time and R_T/R_unif of one "
                "seed of sb.run, by number of arms A and horizon T, on gp_sample problems (d = 3, rbf sigma^2 = "
                "0.5; scripts/bench.py's gp_problem), each run in a fresh process, the two algorithms alternated",
        "command": " ".join(["python", "scripts/bench_choice.py", *(argv if argv is not None else sys.argv[1:])]),
        "commit": commit,
        "code": (f"the working tree at {REPO}, uncommitted package files: "
                 + (", ".join(ln[3:] for ln in git("status", "--porcelain", "--", "sketchbo").splitlines()) or "none")
                 if code == REPO else f"git archive of {commit} (sketchbo/, scripts/), uncommitted changes excluded"),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine(),
        "settings": SETTINGS, "grid": [{"setting": s, "A": list(As), "T": list(Ts)} for s, As, Ts in grid],
        "repeats": args.repeats, "max_run_s": args.max_run_s,
        "problem": {"name": "gp_sample", "d": 3, "sigma2": 0.5, "seed": 0, "builder": "scripts/bench.py:gp_problem"},
        "runs": [], "not_run": [],
    }
    print(f"bench_choice: {record['code']}; {record['machine']['cpu_model']}, "
          f"{record['machine']['cores']} cores, load {record['machine']['load_avg_start']}", flush=True)
    skipped = set()
    for setting, As, Ts in grid:
        for A in As:
            for T in Ts:
                for rep in range(args.repeats):
                    order = ALGORITHMS if rep % 2 == 0 else ALGORITHMS[::-1]
                    for algorithm in order:
                        if (algorithm, setting, A, T) in skipped:
                            continue
                        guess = predict(record["runs"], algorithm, setting, A, T)
                        smaller = [(a, t) for (alg, s, a, t) in skipped if alg == algorithm and s == setting
                                   and a <= A and t <= T]
                        if smaller or (guess and guess[0] > args.max_run_s):
                            why = (f"a smaller cell (A={smaller[0][0]}, T={smaller[0][1]}) was not run" if smaller
                                   else f"predicted {guess[0]:.0f} s > {args.max_run_s:.0f} s ({guess[1]})")
                            record["not_run"].append({"algorithm": algorithm, "setting": setting, "A": A, "T": T,
                                                      "why": why, "predicted_s": guess[0] if guess else None})
                            skipped.add((algorithm, setting, A, T))
                            print(f"  {setting:9} A={A:5d} T={T:5d} {algorithm:6}: not run, {why}", flush=True)
                            continue
                        row = {"algorithm": algorithm, "setting": setting, "A": A, "T": T, "repeat": rep,
                               "position": order.index(algorithm),
                               **run_child(algorithm, setting, A, T, 2 * args.max_run_s, code)}
                        record["runs"].append(row)
                        if "error" in row:
                            print(f"  {setting:9} A={A:5d} T={T:5d} {algorithm:6}: {row['error']}", flush=True)
                            skipped.add((algorithm, setting, A, T))
                            record["not_run"].append({"algorithm": algorithm, "setting": setting, "A": A, "T": T,
                                                      "why": row["error"], "predicted_s": None})
                            continue
                        print(f"  {setting:9} A={A:5d} T={T:5d} {algorithm:6} r{rep}: "
                              f"compile {row['compile_s']:6.2f} s, "
                              f"exec {row['exec_s']:7.2f} s, R/Runif {row['regret_ratio']:.4f}, "
                              f"model {row['max_model']}, batches {row['n_batches']}, load {row['load_after'][0]:.2f}",
                              flush=True)
                        args.out.parent.mkdir(parents=True, exist_ok=True)
                        from sketchbo.engine.files import atomic_write_json  # noqa: PLC0415  (written whole)
                        atomic_write_json(args.out, record, indent=1)  # partial record as it goes
    record["machine"]["load_avg_end"] = list(os.getloadavg())
    record["date_end"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    from sketchbo.engine.files import atomic_write_json  # noqa: PLC0415  (written whole)
    atomic_write_json(args.out, record, indent=1)
    if code != REPO:
        import shutil

        shutil.rmtree(code, ignore_errors=True)
    sys.path.insert(0, str(SCRIPTS))
    import docs_choice

    for setting, _, _ in grid:
        print(f"\n{setting}: medians of {args.repeats} runs (compile + exec s); speed-up = GP-UCB's time / BBKB's")
        print(docs_choice.bbkb_table(record, setting))
    print(f"\nload average at start {record['machine']['load_avg_start']}, at end {record['machine']['load_avg_end']}; "
          f"record: {args.out}")
    return record


if __name__ == "__main__":
    main()
