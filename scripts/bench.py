"""Benchmark suite: time, throughput and memory of the bandit algorithms, and the evidence for their cost.

Cases come in groups (``--only`` picks some; ``--algorithms``, ``--problems`` and the size options narrow
them further, so that a subset runs in minutes):

* ``protocols`` — BBKB, GlobalLocal-BBKB, BKB, GP-UCB and GP-BUCB, one seed each, on the Abalone and Cadata
  bandits of the BBKB paper (Calandriello et al., ICML 2020) with the protocol of docs/protocols.md#finite-arm-protocol
  (lam = 0.2, q-bar = 2, C~ = 2, F = 20, delta = 1/T); T = 10^4 for BBKB and GlobalLocal-BBKB, 2000 for the
  others (the poster's GP-UCB horizon; BKB resparsifies after every pull);
* ``seeds`` — S seeds in one program (``lax.map`` and ``vmap``) against the same S seeds run one after
  another in this process (the runner reuses the compiled program, so only the first compiles);
* ``dtype`` — the S seeds in float64 against float32, with the difference of R_T / R_T^unif;
* ``gp_sample`` — GP-sample problems with A = 10^3, 10^4, 10^5 arms and T = 10^3, 10^4 (see
  :func:`gp_problem`);
* ``step`` — the complexity evidence: the median time of one in-batch selection step of BBKB (Alg. 1,
  L4–L8) and of one resparsification (L11–L16) against the dictionary size m and the number of arms A;
* ``accelerator`` (only when named) — the table of issue 15: BBKB on Cadata (T = 10^4) with S seeds in one
  program (the backend's default seed axis) in float64 and float32: wall, compilation and execution time,
  R_T / R_T^unif (mean +- sd), batches, dictionary size, fallback rounds per in-batch step (mean, max: in-batch loop iterations beyond the first) and
  the GPU's busy fraction (nvidia-smi's utilization over the run, compilation included; "n/a" elsewhere).
  S = 1, 10 on a CPU, 1, 10, 100, 1000 on an accelerator (``--seeds 1,10,100``).

A run row reports the wall time (compilation included) split into compilation and execution, the median
time of one round of the program, the execution time per seed-step and the throughput, the peak memory
(host: peak RSS of this process during the case, what it already held included, reset before it on
Linux; device: JAX's ``memory_stats()['peak_bytes_in_use']``, where the backend has it, a peak over the
process's life), and R_T / R_T^unif. Rows of one-seed runs (and of seeds run one after another) keep
seed 0's timeline (t at the end of each round, execution time up to it) from which
``scripts/plot_bench.py`` draws the amortised cost per step against t. Every ratio is measured in this
process, in this run. XLA on CPU slows down many times when another process competes for the
cores: the load average at the start and at the end is recorded.

    python scripts/bench.py                                  # everything (long on a CPU)
    python scripts/bench.py --only seeds dtype step --problems cadata --out bench.json
    python scripts/bench.py --quick --out /tmp/bench.json    # tiny sizes: seconds, checks the script
    python scripts/bench.py --only accelerator --out accel.json
    python scripts/plot_bench.py --results bench.json        # the figures
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import sketchbo  # first: sets OPENBLAS_NUM_THREADS before numpy loads OpenBLAS
import jax
import jax.numpy as jnp
import numpy as np

from sketchbo.cli import plots
from sketchbo.algorithms import ALGORITHMS, ArmSet, Static, build
from sketchbo.algorithms.sparse_ucb import SparseUCBParams
from sketchbo.kernels import kernel_params
from sketchbo.problems import Problem, make_problem
from sketchbo.problems.synthetic import rbf_gram, standardise
from sketchbo import run

# docs/protocols.md#finite-arm-protocol; delta None = 1/T
PROTOCOL = {"lam": 0.2, "qbar": 2.0, "C": 2.0, "F": 20.0, "delta": None}
GROUPS = ("protocols", "seeds", "dtype", "gp_sample", "step", "accelerator")
DEFAULT_GROUPS = GROUPS[:5]  # the accelerator table runs when named
ACCEL_SEEDS = {"cpu": (1, 10), "accelerator": (1, 10, 100, 1000)}  # S of the accelerator table by backend
ALL_ALGORITHMS = ("bbkb", "bbkb_local", "bkb", "gp_ucb", "gp_bucb")
LONG_T = {"bbkb": 10_000, "bbkb_local": 10_000}  # the others: SHORT_T
SHORT_T = 2000
GP_D, GP_SIGMA2, GP_BASE = 3, 0.5, 1000  # gp_sample problems: dimension, rbf bandwidth, exactly drawn arms
GP_INTERP_NOISE = 1e-6  # regulariser of the interpolant beyond GP_BASE arms
TIMELINE_POINTS = 400  # points kept of a one-seed run's timeline

# Sizes. T None: LONG_T / SHORT_T; step_m: the dictionary size of the A sweep; protocol_gp_A: the arms of
# gp_sample where a group names it as its problem.
FULL = {"problems": ("abalone", "cadata"), "algorithms": ALL_ALGORITHMS, "T": None, "seeds": 10,
        "gp_A": (1000, 10_000, 100_000), "gp_T": (1000, 10_000), "m": (32, 64, 128, 256, 512),
        "step_A": (1000, 10_000, 100_000), "step_m": 128, "step_problem": "cadata", "n_steps": 200, "repeats": 7,
        "protocol_gp_A": 1000, "accel_seeds": None, "accel_dtypes": ("float64", "float32")}
QUICK = {"problems": ("gp_sample",), "algorithms": ("bbkb",), "T": 60, "seeds": 2, "gp_A": (300,), "gp_T": (60,),
         "m": (8, 16), "step_A": (150, 300), "step_m": 16, "step_problem": "gp_sample", "n_steps": 20, "repeats": 3,
         "protocol_gp_A": 300, "accel_seeds": (1, 2), "accel_dtypes": ("float64", "float32")}


# ------------------------------------------------------------------------------------------ machine

def memory_method() -> str:
    dev = "jax memory_stats()['peak_bytes_in_use'] (peak over the process's life)" if device_peak_mb() is not None \
        else "none (the backend has no memory_stats)"
    host = "VmHWM of /proc/self/status, reset before each case" if Path("/proc/self/clear_refs").exists() \
        else "resource.getrusage ru_maxrss (peak over the process's life)"
    return f"host: {host}; device: {dev}"


def reset_host_peak() -> None:
    """Reset the peak RSS of this process (Linux: write 5 to /proc/self/clear_refs); a no-op elsewhere."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass


def host_peak_mb() -> float:
    """Peak RSS of this process in MB (since the last reset on Linux)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return float(line.split()[1]) / 1024
    except OSError:
        pass
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KB on Linux, bytes on macOS
    return rss / 2**20 if sys.platform == "darwin" else rss / 1024


def device_peak_mb() -> float | None:
    stats = jax.devices()[0].memory_stats()
    return stats["peak_bytes_in_use"] / 2**20 if stats and "peak_bytes_in_use" in stats else None


def machine_info() -> dict:
    dev = jax.devices()[0]
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "platform": platform.platform(), "machine": platform.machine(), "python": platform.python_version(),
        "cpu_count": os.cpu_count(), "cpu_affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
        else None, "jax": jax.__version__, "jaxlib": _jaxlib_version(),
        "backend": jax.default_backend(), "device": f"{dev.platform}:{getattr(dev, 'device_kind', '')}",
        "n_devices": len(jax.devices()), "load_avg_start": list(os.getloadavg()),
        "env": {k: os.environ.get(k) for k in ("OPENBLAS_NUM_THREADS", "XLA_FLAGS", "JAX_PLATFORMS")},
        "memory_method": memory_method(),
    }


def _jaxlib_version():
    import jaxlib

    return jaxlib.__version__


# ------------------------------------------------------------------------------------------ problems

def _rbf_cross(X, Y, sigma2):
    d2 = np.maximum(np.sum(X * X, 1)[:, None] + np.sum(Y * Y, 1)[None, :] - 2.0 * X @ Y.T, 0.0)
    return np.exp(-d2 / (2.0 * sigma2))


def gp_problem(A: int, seed: int = 0) -> Problem:
    """``gp_sample`` (d = 3, sigma2 = 0.5) with A arms.

    Up to GP_BASE arms it is ``make_problem("gp_sample")``. An exact draw needs an A x A Cholesky (80 GB at
    A = 10^5), so beyond that the first GP_BASE arms are those of the exact problem, the others are uniform
    in [-1, 1]^d too, and f is the kernel interpolant (the GP posterior mean, noise GP_INTERP_NOISE) of the
    exact draw on the first GP_BASE arms, standardised: a smooth function of the same kernel's RKHS."""
    if A <= GP_BASE:
        return make_problem("gp_sample", A=A, d=GP_D, sigma2=GP_SIGMA2, seed=seed)
    base = make_problem("gp_sample", A=GP_BASE, d=GP_D, sigma2=GP_SIGMA2, seed=seed)
    extra = np.random.default_rng([seed, A]).uniform(-1.0, 1.0, size=(A - GP_BASE, GP_D))
    arms = np.concatenate([base.arms, extra])
    alpha = np.linalg.solve(rbf_gram(base.arms, GP_SIGMA2) + GP_INTERP_NOISE * np.eye(GP_BASE), base.f)
    f = np.concatenate([_rbf_cross(arms[lo:lo + 8192], base.arms, GP_SIGMA2) @ alpha for lo in range(0, A, 8192)])
    return Problem("gp_sample", arms, standardise(f), None, dict(base.kernel))


class Problems:
    """The problems of the suite, built once each."""

    def __init__(self, data_dir, protocol_gp_A):
        self.data_dir, self.protocol_gp_A, self.cache = data_dir, protocol_gp_A, {}

    def get(self, name: str, A: int | None = None) -> Problem:
        key = (name, A)
        if key not in self.cache:
            if name == "gp_sample":
                self.cache[key] = gp_problem(A or self.protocol_gp_A)
            else:
                self.cache[key] = make_problem(name, data_dir=self.data_dir)
        return self.cache[key]


# ------------------------------------------------------------------------------------------ run rows

def hyperparameters(algorithm: str, m_max: int | None = None) -> dict:
    """The protocol's hyperparameters that ``algorithm`` takes, with the initial capacity ``m_max`` if given."""
    accepted = ALGORITHMS[algorithm].defaults
    params = {**PROTOCOL, **({"m_max": m_max} if m_max is not None else {})}
    return {k: v for k, v in params.items() if k in accepted}


def timeline(result) -> dict:
    """t at the end of each round of seed 0 and the execution time up to it (at most TIMELINE_POINTS)."""
    t_end = np.cumsum(np.bincount(result.traces["batch_index"][0]))
    exec_s = np.cumsum(result.round_time_s)
    n = min(len(t_end), len(exec_s))
    idx = plots.thin(n, TIMELINE_POINTS)
    return {"t": t_end[:n][idx].tolist(), "exec_s": exec_s[:n][idx].tolist()}


def run_row(case: str, group: str, results: list, A: int, seed_axis: str, memory: tuple) -> dict:
    """One row of the table from the results of one case (several when its seeds ran one after another)."""
    r0 = results[0]
    T, S = r0.T, sum(r.n_seeds for r in results)
    exec_s = float(sum(np.sum(r.round_time_s) for r in results))
    rounds = np.concatenate([np.asarray(r.round_time_s) for r in results])
    ratio = np.concatenate([r.regret_ratio for r in results])
    row = {
        "case": case, "group": group, "algorithm": r0.algorithm, "problem": r0.problem, "A": A, "T": T,
        "n_seeds": S, "seed_axis": seed_axis, "dtype": r0.dtype, "device": r0.device,
        "wall_s": float(sum(r.wall_time_s for r in results)),
        "compile_s": float(sum(r.compile_time_s for r in results)), "exec_s": exec_s,
        "rounds": int(max(r.n_batches.max() for r in results)), "round_median_ms": 1e3 * float(np.median(rounds)),
        "step_us": 1e6 * exec_s / (T * S), "seed_steps_per_s": T * S / exec_s,
        "peak_host_mb": memory[0], "peak_device_mb": memory[1],
        "regret_ratio_mean": float(np.mean(ratio)), "regret_ratio": ratio.tolist(),
        "max_batch": int(max(r.max_batch_size.max() for r in results)),
        "max_dict": int(max(r.max_dict_size.max() for r in results)),
        "capacity_events": [e for r in results for e in r.capacity_events],
    }
    if r0.n_seeds == 1:  # one-seed runs (also the first of sequential ones): the timeline of seed 0
        row["timeline"] = timeline(r0)
    return row


class Suite:
    """Runs the cases and keeps every result with its peak memory: a run already done is not done again
    (its row says ``reused``)."""

    def __init__(self, problems: Problems, progress: bool, m_max: int | None = None):
        self.problems, self.progress, self.m_max = problems, progress, m_max
        self.results, self.steps, self.rows = {}, {}, []

    def result(self, algorithm, problem, T, n_seeds=1, seed=0, seed_axis="map", dtype="float64"):
        """(RunResult, (host peak MB, device peak MB), reused)."""
        key = (algorithm, problem.name, problem.arms.shape[0], T, n_seeds, seed, seed_axis, dtype)
        if key in self.results:
            return (*self.results[key], True)
        reset_host_peak()
        res = run(algorithm, problem, T=T, n_seeds=n_seeds, seed=seed, seed_axis=seed_axis, dtype=dtype,
                  params=hyperparameters(algorithm, self.m_max), progress=self.progress)
        self.results[key] = (res, (host_peak_mb(), device_peak_mb()))
        return (*self.results[key], False)

    def case(self, group, algorithm, problem, T, n_seeds=1, seed_axis="map", dtype="float64") -> dict:
        """One case: ``seed_axis`` "map" / "vmap" (the seeds in one program) or "sequential"."""
        A = problem.arms.shape[0]
        label = f"{algorithm} {problem.name} A={A} T={T} S={n_seeds} {seed_axis} {dtype}"
        print(f"  {label} ...", flush=True)
        if seed_axis == "sequential":
            done = [self.result(algorithm, problem, T, 1, seed=i, dtype=dtype) for i in range(n_seeds)]
        else:
            done = [self.result(algorithm, problem, T, n_seeds, seed_axis=seed_axis, dtype=dtype)]
        memory = tuple(max((d[1][i] for d in done if d[1][i] is not None), default=None) for i in (0, 1))
        row = run_row(label, group, [d[0] for d in done], A, seed_axis, memory)
        row["reused"] = all(d[2] for d in done)
        self.rows.append(row)
        print(f"    wall {row['wall_s']:.2f}s (compile {row['compile_s']:.2f}s, exec {row['exec_s']:.2f}s), "
              f"{row['step_us']:.1f} us/seed-step, R/Runif {row['regret_ratio_mean']:.4f}, dict {row['max_dict']}, "
              f"batch {row['max_batch']}{' (reused: measured in an earlier case)' if row['reused'] else ''}",
              flush=True)
        return row

    def step_cost(self, problem, m, n_steps, repeats) -> dict:
        key = (problem.name, problem.arms.shape[0], m)
        if key not in self.steps:
            self.steps[key] = {"problem": problem.name, **step_cost(problem, m, n_steps, repeats)}
        return self.steps[key]


# ------------------------------------------------------------------------------------------ groups

def t_of(algorithm: str, T: int | None) -> int:
    return T if T is not None else LONG_T.get(algorithm, SHORT_T)


def protocol_cases(suite: Suite, cfg: dict):
    """``(problem name, problem, algorithm, T)`` of every algorithm on every selected protocol problem."""
    for name in cfg["problems"]:
        problem = suite.problems.get(name)
        for algorithm in cfg["algorithms"]:
            yield name, problem, algorithm, t_of(algorithm, cfg["T"])


def group_protocols(suite: Suite, cfg: dict) -> dict:
    for _, problem, algorithm, T in protocol_cases(suite, cfg):
        suite.case("protocols", algorithm, problem, T)
    return {}


def group_seeds(suite: Suite, cfg: dict) -> dict:
    """Sequential runs first: their first run compiles, as the one-program cases do."""
    ratios = {}
    S = cfg["seeds"]
    for name, problem, algorithm, T in protocol_cases(suite, cfg):
        seq = suite.case("seeds", algorithm, problem, T, S, "sequential")
        one = run_row("one seed", "seeds", [suite.result(algorithm, problem, T)[0]], seq["A"], "map", (None, None))
        prefix = f"{algorithm}/{name}/S={S}"
        for axis in ("map", "vmap"):
            row = suite.case("seeds", algorithm, problem, T, S, axis)
            ratios[f"{prefix}/{axis}_vs_sequential_exec"] = row["exec_s"] / seq["exec_s"]
            ratios[f"{prefix}/{axis}_vs_sequential_wall"] = row["wall_s"] / seq["wall_s"]
            ratios[f"{prefix}/{axis}_vs_one_seed_exec"] = row["exec_s"] / one["exec_s"]
            ratios[f"{prefix}/{axis}_same_regret_as_sequential"] = bool(
                np.allclose(row["regret_ratio"], seq["regret_ratio"], rtol=1e-9, atol=1e-12))
    return ratios


def group_dtype(suite: Suite, cfg: dict) -> dict:
    ratios = {}
    S = cfg["seeds"]
    for name, problem, algorithm, T in protocol_cases(suite, cfg):
        r64, r32 = (suite.case("dtype", algorithm, problem, T, S, "map", dt) for dt in ("float64", "float32"))
        diff = np.asarray(r32["regret_ratio"]) - np.asarray(r64["regret_ratio"])
        prefix = f"{algorithm}/{name}/S={S}"
        ratios[f"{prefix}/float32_vs_float64_exec"] = r32["exec_s"] / r64["exec_s"]
        ratios[f"{prefix}/float32_vs_float64_wall"] = r32["wall_s"] / r64["wall_s"]
        ratios[f"{prefix}/regret_ratio_float64"] = r64["regret_ratio_mean"]
        ratios[f"{prefix}/regret_ratio_float32"] = r32["regret_ratio_mean"]
        ratios[f"{prefix}/regret_ratio_f32_minus_f64_mean"] = float(diff.mean())
        ratios[f"{prefix}/regret_ratio_f32_minus_f64_max_abs"] = float(np.abs(diff).max())
    return ratios


def group_gp_sample(suite: Suite, cfg: dict) -> dict:
    for A in cfg["gp_A"]:
        problem = suite.problems.get("gp_sample", A)
        for T in cfg["gp_T"]:
            for algorithm in cfg["algorithms"]:
                suite.case("gp_sample", algorithm, problem, T)
    return {}


class GpuBusy:
    """Mean GPU utilisation (nvidia-smi, sampled every 100 ms) while a case runs: None where there is no GPU."""

    def __init__(self):
        self.proc = None
        if jax.default_backend() == "gpu" and shutil.which("nvidia-smi"):
            self.proc = subprocess.Popen(
                ["nvidia-smi", "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits", "-lms", "100",
                 "-i", str(jax.devices()[0].id)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)

    def stop(self) -> float | None:
        if self.proc is None:
            return None
        self.proc.terminate()
        out, _ = self.proc.communicate()
        samples = [float(v) for v in out.split() if v.replace(".", "", 1).isdigit()]
        return float(np.mean(samples)) / 100 if samples else None


def accel_seeds(cfg: dict) -> tuple:
    if cfg["accel_seeds"] is not None:
        return tuple(cfg["accel_seeds"])
    return ACCEL_SEEDS["cpu" if jax.default_backend() == "cpu" else "accelerator"]


def group_accelerator(suite: Suite, cfg: dict) -> dict:
    """S seeds of BBKB in one program, float64 and float32 (the backend's seed axis): the rows of issue 15."""
    axis = "map" if jax.default_backend() == "cpu" else "vmap"  # the runner's default (seed_axis="auto")
    for name, problem, algorithm, T in protocol_cases(suite, cfg):
        for S in accel_seeds(cfg):
            for dtype in cfg["accel_dtypes"]:
                busy = GpuBusy()
                row = suite.case("accelerator", algorithm, problem, T, S, axis, dtype)
                res = suite.result(algorithm, problem, T, S, seed_axis=axis, dtype=dtype)[0]
                loops = res.traces["loop_iterations"]
                row.update(regret_ratio_sd=float(np.std(row["regret_ratio"], ddof=1)) if S > 1 else 0.0,
                           batches_mean=float(np.mean(res.n_batches)), loop_iter_mean=float(loops.mean()),
                           loop_iter_max=int(loops.max()), gpu_busy=busy.stop())
    return {}


def print_accelerator_table(rows: list) -> None:
    rows = [r for r in rows if r["group"] == "accelerator"]
    if not rows:
        return
    print(f"\naccelerator table ({rows[0]['device']}): loop it. = fallback rounds per in-batch step (in-batch loop iterations beyond the first)")
    header = (f"{'algorithm':<10} {'problem':<9} {'T':>6} {'seeds':>5} {'dtype':<8} {'wall s':>8} {'comp s':>7} "
              f"{'exec s':>8} {'R_T/R_unif':>16} {'batches':>7} {'dict':>5} {'loop it. mean':>13} {'max':>4} "
              f"{'GPU busy':>8}")
    print(header + "\n" + "-" * len(header))
    for r in rows:
        busy = "n/a" if r["gpu_busy"] is None else f"{r['gpu_busy']:.2f}"
        ratio = f"{r['regret_ratio_mean']:.4f} ± {r['regret_ratio_sd']:.4f}"
        print(f"{r['algorithm']:<10} {r['problem']:<9} {r['T']:6d} {r['n_seeds']:5d} {r['dtype']:<8} "
              f"{r['wall_s']:8.2f} {r['compile_s']:7.2f} {r['exec_s']:8.2f} {ratio:>16} {r['batches_mean']:7.1f} {r['max_dict']:5d} "
              f"{r['loop_iter_mean']:13.3f} {r['loop_iter_max']:4d} {busy:>8}")


# ------------------------------------------------------------------------------------------ step costs

def median_time(fn, repeats: int) -> float:
    jax.block_until_ready(fn())
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        jax.block_until_ready(fn())
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def step_cost(problem: Problem, m: int, n_steps: int, repeats: int) -> dict:
    """Median time of one BBKB in-batch selection step (Alg. 1, L4–L8) and of one resparsification
    (L11–L16) with a full dictionary of m arms, in float64.

    The state holds one noiseless pull of each of m distinct arms (uniform without replacement, fixed
    seed); q-bar = 1e9 makes the resparsification keep every pulled arm, so the dictionary holds exactly
    these m arms and the capacities m_max = u_max = m are full. The in-batch steps run ``n_steps`` times in
    a row from the resparsified state (a ``fori_loop``, as in a batch); ``refresh_per_step`` counts the exact
    UCB evaluations of the lazy argmax per step."""
    A, d = problem.arms.shape
    spec = dict(problem.kernel)
    kname = spec.pop("name")
    params = SparseUCBParams(lam=jnp.asarray(0.2), qbar=jnp.asarray(1e9), C=jnp.asarray(1e9), F=jnp.asarray(20.0),
                             delta=jnp.asarray(1e-4), xi=jnp.asarray(0.2 ** 0.5),
                             kernel=kernel_params(kname, d, jnp.float64, **spec))
    static = Static(A=A, d=d, T=10_000, m_max=m, u_max=m, kernel=kname, beta_family="bbkb", beta_mode="code",
                    resample="code", batch_rule="bbkb_global")
    alg = build(ALGORITHMS["bbkb"], static)
    q = jnp.asarray(np.random.default_rng(0).choice(A, size=m, replace=False))
    state = alg.init(jax.random.key(0), ArmSet(jnp.asarray(problem.arms)), params)
    state = state._replace(counts=state.counts.at[q].add(1.0), ysum=state.ysum.at[q].add(jnp.asarray(problem.f)[q]),
                           t=jnp.asarray(m, jnp.int32))
    resparsify = jax.jit(alg.refit)
    s2, info = resparsify(jax.random.key(1), state, params)

    @jax.jit
    def steps(s):
        def body(i, c):
            _, s, inf = alg.select(jax.random.fold_in(jax.random.key(2), i), c[0], params)
            return s, c[1] + inf.n_refresh
        return jax.lax.fori_loop(0, n_steps, body, (s, jnp.zeros((), jnp.int32)))

    t_res = median_time(lambda: resparsify(jax.random.key(1), state, params)[0].Vinv, repeats)
    t_step = median_time(lambda: steps(s2)[0].Vinv, repeats) / n_steps
    return {"A": A, "m": m, "dict_size": int(info.dict_size), "overflow": bool(info.overflow),
            "resparsify_ms": 1e3 * t_res, "step_us": 1e6 * t_step,
            "refresh_per_step": int(steps(s2)[1]) / n_steps}


def group_step(suite: Suite, cfg: dict) -> dict:
    """In-batch step and resparsification against m (``step_problem``) and against A (gp_sample, m fixed)."""
    jax.config.update("jax_enable_x64", True)
    rows = {"vs_m": [], "vs_A": []}
    problem = suite.problems.get(cfg["step_problem"])
    sweeps = [("vs_m", problem, m) for m in cfg["m"]]
    sweeps += [("vs_A", suite.problems.get("gp_sample", A), cfg["step_m"]) for A in cfg["step_A"]]
    for kind, prob, m in sweeps:
        row = suite.step_cost(prob, m, cfg["n_steps"], cfg["repeats"])
        rows[kind].append(row)
        print(f"  {kind}: {prob.name} A={row['A']} m={m} (dictionary {row['dict_size']}): in-batch step "
              f"{row['step_us']:.1f} us ({row['refresh_per_step']:.2f} refreshes), resparsify "
              f"{row['resparsify_ms']:.2f} ms", flush=True)
    return rows


# ------------------------------------------------------------------------------------------ output

def print_table(rows: list, step_costs: dict, ratios: dict) -> None:
    header = (f"{'case':<56} {'wall s':>8} {'comp s':>7} {'exec s':>8} {'rounds':>6} {'round ms':>9} "
              f"{'step us':>8} {'seed-st/s':>10} {'peak MB':>8} {'R/Runif':>8} {'batch':>5} {'dict':>5}")
    print("\n" + header + "\n" + "-" * len(header))
    for r in rows:
        peak = r["peak_device_mb"] if r["peak_device_mb"] is not None else r["peak_host_mb"]
        print(f"{r['case']:<56} {r['wall_s']:8.2f} {r['compile_s']:7.2f} {r['exec_s']:8.2f} {r['rounds']:6d} "
              f"{r['round_median_ms']:9.2f} {r['step_us']:8.1f} {r['seed_steps_per_s']:10.0f} {peak:8.0f} "
              f"{r['regret_ratio_mean']:8.4f} {r['max_batch']:5d} {r['max_dict']:5d}")
    for kind, costs in step_costs.items():
        if costs:
            print(f"\nin-batch step and resparsification {kind.replace('_', ' ')}")
            print(f"{'problem':<10} {'A':>7} {'m':>5} {'dict':>5} {'step us':>9} {'refresh/step':>12} {'resp ms':>9}")
            for c in costs:
                print(f"{c['problem']:<10} {c['A']:7d} {c['m']:5d} {c['dict_size']:5d} {c['step_us']:9.1f} "
                      f"{c['refresh_per_step']:12.2f} {c['resparsify_ms']:9.2f}")
    if ratios:
        print("\nratios measured in this run:")
        for k, v in ratios.items():
            print(f"  {k}: {v:.4f}" if isinstance(v, float) else f"  {k}: {v}")


def save(out: Path, data: dict) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1))
    os.replace(tmp, out)


def seed_list(text: str) -> list:
    """``--seeds``: one integer or a comma-separated list of them."""
    try:
        return [int(v) for v in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer or a comma-separated list of integers")


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="tiny sizes on gp_sample (seconds): checks the script")
    ap.add_argument("--only", nargs="+", choices=GROUPS, default=list(DEFAULT_GROUPS), metavar="GROUP",
                    help=f"groups to run, of {list(GROUPS)} (default all but accelerator)")
    ap.add_argument("--algorithms", nargs="+", choices=ALL_ALGORITHMS, default=None,
                    help="algorithms (default: all in protocols (--quick: bbkb), bbkb in the other groups)")
    ap.add_argument("--problems", nargs="+", choices=("abalone", "cadata", "gp_sample"), default=None,
                    help="problems of protocols (default abalone cadata), seeds and dtype (default cadata)")
    ap.add_argument("--seeds", type=seed_list, default=None,
                    help="S of the seeds and dtype groups (default 10); a comma-separated list (1,10,100) gives the "
                         "accelerator group's seed counts, the others use the last")
    ap.add_argument("--dtypes", nargs="+", choices=("float64", "float32"), default=None,
                    help="dtypes of the accelerator group (default float64 float32)")
    ap.add_argument("--T", type=int, default=None, help="horizon of every protocols/seeds/dtype run "
                    f"(default {LONG_T['bbkb']} for bbkb and bbkb_local, {SHORT_T} for the others)")
    ap.add_argument("--gp-A", type=int, nargs="+", default=None, help="arms of the gp_sample group")
    ap.add_argument("--gp-T", type=int, nargs="+", default=None, help="horizons of the gp_sample group")
    ap.add_argument("--m", type=int, nargs="+", default=None, help="dictionary sizes of the step group")
    ap.add_argument("--step-A", type=int, nargs="+", default=None, help="arms of the step group's A sweep")
    ap.add_argument("--data-dir", default=None, help="directory of the dataset files (default: "
                    "$SKETCHBO_DATA_DIR, then the cache)")
    ap.add_argument("--m-max", type=int, default=None,
                    help="initial dictionary capacity of BKB/BBKB runs (default: the registry's 128). The "
                         "per-round GEMM costs A*m_max^2 whatever the dictionary in use, so a capacity near the "
                         "real size is faster (Cadata: dictionaries reach 85, --m-max 96); an overflow re-runs "
                         "at 1.5x the need, with the same results")
    ap.add_argument("--progress", action="store_true", help="the runner's progress lines on stderr")
    ap.add_argument("--out", type=Path, default=Path("bench.json"), help="JSON file of the results")
    ap.add_argument("--device-info", action="store_true", help="print the machine and device as JSON and exit")
    ap.add_argument("--cpu-devices", type=int, default=None,
                    help="JAX CPU devices the seeds are sharded over (sketchbo.use_cpu_cores; default: one per "
                         "core, as sketchbo-run; 1: every seed on one device, the library's default without it)")
    args = ap.parse_args(argv)
    if args.seeds is not None and min(args.seeds) < 1:
        ap.error(f"--seeds {','.join(map(str, args.seeds))} is invalid; it must be an integer >= 1")
    if args.T is not None and args.T < 1:
        ap.error(f"--T {args.T} is invalid; it must be an integer >= 1")
    if args.cpu_devices is not None and args.cpu_devices < 1:
        ap.error(f"--cpu-devices {args.cpu_devices} is invalid; it must be an integer >= 1")
    if args.m_max is not None and args.m_max < 1:
        ap.error(f"--m-max {args.m_max} is invalid; it must be an integer >= 1")
    for name in ("gp_A", "gp_T", "m", "step_A"):
        if getattr(args, name) is not None and min(getattr(args, name)) < 1:
            ap.error(f"--{name.replace('_', '-')} {getattr(args, name)} is invalid; every value must be >= 1")
    return args


def config(args) -> dict:
    """The sizes of this run: QUICK or FULL, overridden by the options."""
    cfg = dict(QUICK if args.quick else FULL)
    if args.seeds is not None:
        cfg["seeds"], cfg["accel_seeds"] = args.seeds[-1], tuple(args.seeds)
    if args.dtypes is not None:
        cfg["accel_dtypes"] = tuple(args.dtypes)
    for key, value in (("T", args.T), ("gp_A", args.gp_A), ("gp_T", args.gp_T),
                       ("m", args.m), ("step_A", args.step_A)):
        if value is not None:
            cfg[key] = value
    return cfg


def group_config(cfg: dict, group: str, args) -> dict:
    """Algorithms and problems of a group: the options, else the group's defaults."""
    problems = args.problems or (cfg["problems"] if group == "protocols" or args.quick else ("cadata",))
    algorithms = args.algorithms or (cfg["algorithms"] if group == "protocols" else ("bbkb",))
    return {**cfg, "algorithms": algorithms, "problems": problems}


RUNNERS = {"protocols": group_protocols, "seeds": group_seeds, "dtype": group_dtype, "gp_sample": group_gp_sample,
           "accelerator": group_accelerator}


def main(argv=None) -> dict:
    args = parse_args(argv)
    jax.config.update("jax_enable_x64", True)  # entry point: float64 available (docs/architecture.md#numerics)
    sketchbo.use_cpu_cores(args.cpu_devices)  # before machine_info touches the backends (docs/benchmarks.md#cpu-cores)
    meta = machine_info()
    if args.device_info:
        print(json.dumps(meta, indent=1))
        return {"meta": meta}
    cfg = config(args)
    print(f"benchmark on {meta['device']} ({meta['cpu_count']} CPUs), jax {meta['jax']}, "
          f"load average {meta['load_avg_start']}, groups {args.only}", flush=True)
    suite = Suite(Problems(args.data_dir, cfg["protocol_gp_A"]), args.progress, args.m_max)
    ratios, step_costs = {}, {"vs_m": [], "vs_A": []}
    t0 = time.perf_counter()
    for group in (g for g in GROUPS if g in args.only):
        print(f"[{group}]", flush=True)
        gcfg = group_config(cfg, group, args)
        if group == "step":
            step_costs = group_step(suite, gcfg)
        else:
            ratios.update(RUNNERS[group](suite, gcfg))
    meta.update(load_avg_end=list(os.getloadavg()), total_s=time.perf_counter() - t0,
                date_end=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                argv=list(sys.argv[1:] if argv is None else argv), config=cfg)
    print_table(suite.rows, step_costs, ratios)
    print_accelerator_table(suite.rows)
    data = {"meta": meta, "runs": suite.rows, "step_costs": step_costs, "ratios": ratios}
    save(args.out, data)
    print(f"\nload average at the end {meta['load_avg_end']}; saved {args.out}", flush=True)
    return data


if __name__ == "__main__":
    main()
