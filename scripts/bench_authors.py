"""BBKB side by side: the authors' public code against ``sb.run("bbkb", ...)``, same protocol, same problem.

Calandriello et al. published their BBKB (ICML 2020) as the GitHub repository ``luigicarratino/batch-bkb``.
This optional benchmark runs its ``Batch_BKB`` class and our ``bbkb`` on one of our finite-arm problems
(Cadata, Abalone, or the small embedded ``gp_sample``) with the protocol of
docs/protocols.md#finite-arm-protocol, and prints one row per implementation: R_T, R_T / R_T^unif (with
R_T^unif = T·(max f − mean f)), time per seed, number of batches, largest batch, final and largest
dictionary size, each as mean ± sample standard deviation over the seeds, with the date and the machine.

Nothing of the authors' code is part of this repository, and nothing here installs it: clone the
repository yourself (it needs numpy, scipy and scikit-learn, ``pip install scikit-learn``) and point
``--authors-dir`` at the clone::

    git clone https://github.com/luigicarratino/batch-bkb ~/src/batch-bkb
    SKETCHBO_DATA_DIR=/path/to/data python scripts/bench_authors.py --authors-dir ~/src/batch-bkb \\
        --problem cadata --T 10000 --seeds 10 --out bench_authors.json

How the protocol maps onto their interface (``Batch_BKB(lam, dot, fnorm, noise_variance, delta, qbar,
ratio_threshold)``, then ``initialize`` / ``predict`` / ``update``):

* λ → ``lam``; F → ``fnorm``; δ = 1/T → ``delta``; q̄ → ``qbar``; C̃ → ``ratio_threshold``; the feedback
  noise ξ (the problem's ``noise_std``, or √λ where it is None, as our runner does) → ``noise_variance = ξ²``.
  Their code does not draw noise: we add ξ·N(0, 1) to the noiseless f of our problem before ``update``.
* The kernel ``{"name": "rbf", "sigma2": s}``, k(x, x') = exp(−‖x − x'‖² / (2s)), → their
  ``utils.FastMixinKernel`` of scikit-learn's ``RBF(length_scale=√s)`` and
  ``PairwiseKernel(metric="rbf", gamma=1/(2s))``, the same function.
* Like ours, their run starts from one uniformly drawn arm (``initialize(arms, [i], [y_i])``), which counts as
  the first of the T pulls and as a batch of its own; the last batch is cut at T.
* Their ``predict`` squeezes the chosen arm's embedding to a 0-d array when the embedding has one dimension
  (a one-arm dictionary, always the case after a one-arm ``initialize``), which scipy's ``qr_update``
  rejects. At run time, in this process only, we wrap the ``qr_update`` their module calls so that it gets
  1-d vectors; with two or more dimensions the call is unchanged.
* Regret: R_T of both is computed here from the arms each pulled and our problem's noiseless f.

``--speed`` makes it the performance benchmark that docs/benchmarks.md#authors-speed quotes: both codes, same
protocol, each measurement in a fresh process started from this one, alternating the two codes ``--repeats`` times
(default 2), medians reported, and the ratio authors / sketchbo of each row::

    SKETCHBO_DATA_DIR=/path/to/data python scripts/bench_authors.py --authors-dir ~/src/batch-bkb --speed \\
        --out experiments/bench_authors_speed.json

Rows: one seed (the authors' code with one BLAS thread, and with two), sketchbo cold (compilation cache off, so it
compiles) and warm (a second identical process, loading the programs a first one stored); ten seeds (the authors'
seeds one after another, as the issue's target counts them, and over two processes, one per core), sketchbo
float64 and float32 in one program (cold). Times are of the run alone: Python's start, the imports (their code's
SciPy and scikit-learn; the SciPy that JAX's LAPACK kernels load) and the data's loading are left out for both
codes. sketchbo's compilation and execution are reported apart.

Seeds: their randomness (the initial arm, the feedback noise, the dictionary resampling) comes from
``numpy.random.RandomState(s)`` for s = 0..n−1; ours from JAX keys of seeds 0..n−1. They are not the same
random streams: compare statistics, not trajectories. Our seeds run one after another, like theirs; the
compilation of our program (first seed) is reported apart and excluded from the time per seed.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import importlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import sketchbo as sb  # noqa: I001  (first: sets OPENBLAS_NUM_THREADS before numpy loads OpenBLAS)
import numpy as np

AUTHORS_REPO = "https://github.com/luigicarratino/batch-bkb"
AUTHORS_FILES = ("bkb_lib.py", "utils.py")
PROBLEMS = ("cadata", "abalone", "gp_sample")
PROTOCOL = {"lam": 0.2, "F": 20.0, "qbar": 2.0, "C": 2.0}  # docs/protocols.md#finite-arm-protocol; delta = 1/T
IMPLEMENTATIONS = ("authors", "sketchbo")
SEEDS_NOTE = ("seeds: the authors' runs use numpy.random.RandomState(s), ours JAX keys of seed s, s = 0..n-1; "
              "not the same random streams: compare statistics, not trajectories")
# (key, column title, format) of the table, in order
METRICS = (("R_T", "R_T", "{:.1f}"), ("ratio", "R_T/R_unif", "{:.4f}"), ("time_s", "time/seed [s]", "{:.2f}"),
           ("n_batches", "batches", "{:.1f}"), ("max_batch", "largest batch", "{:.1f}"),
           ("dict_final", "dict final", "{:.1f}"), ("dict_max", "dict largest", "{:.1f}"))


class AuthorsCodeError(ValueError):
    """The directory given as ``--authors-dir`` does not hold a usable copy of the authors' code."""


# ------------------------------------------------------------------------------------------ the authors' code

def _authors_error(authors_dir, why: str) -> AuthorsCodeError:
    return AuthorsCodeError(
        f"--authors-dir {str(authors_dir)!r} {why}. It must be a clone of the authors' BBKB code "
        f"({AUTHORS_REPO}, holding {' and '.join(AUTHORS_FILES)}); clone it yourself and pass its directory, "
        "e.g. --authors-dir ~/src/batch-bkb")


def load_authors(authors_dir):
    """Import the authors' ``bkb_lib`` and ``utils`` from ``authors_dir`` (added to ``sys.path``).

    Args:
        authors_dir: the directory of a clone of the authors' repository.

    Returns:
        ``(bkb_lib, utils)``, the two imported modules, with :func:`patch_qr_update` applied to ``bkb_lib``.

    Raises:
        AuthorsCodeError: the directory is missing, lacks their files, cannot be imported (e.g. scikit-learn
            is not installed), or another module of the same name is already imported.
    """
    root = Path(authors_dir).expanduser().resolve()
    if not root.is_dir():
        raise _authors_error(authors_dir, "is not an existing directory")
    missing = [name for name in AUTHORS_FILES if not (root / name).is_file()]
    if missing:
        raise _authors_error(authors_dir, f"does not hold the authors' code (no {', '.join(missing)})")
    for name in ("bkb_lib", "utils"):
        loaded = sys.modules.get(name)
        where = getattr(loaded, "__file__", None)
        if loaded is not None and (where is None or Path(where).resolve().parent != root):
            raise _authors_error(authors_dir, f"cannot be imported: a different module {name!r} ({where}) is "
                                              "already loaded in this process")
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    try:
        bkb_lib, utils = importlib.import_module("bkb_lib"), importlib.import_module("utils")
    except ImportError as err:
        raise _authors_error(authors_dir, f"could not be imported ({err}); their code needs numpy, scipy and "
                                          "scikit-learn (pip install scikit-learn)") from err
    if not hasattr(bkb_lib, "Batch_BKB") or not hasattr(utils, "FastMixinKernel"):
        raise _authors_error(authors_dir, "holds files of those names without Batch_BKB / FastMixinKernel")
    patch_qr_update(bkb_lib)
    return bkb_lib, utils


def patch_qr_update(bkb_lib) -> None:
    """Make the ``qr_update`` that ``bkb_lib`` calls accept the 0-d vectors of a one-dimensional embedding.

    Their in-batch step passes ``chosen_arm.squeeze()``, a 0-d array when the dictionary has one arm, and
    scipy's ``qr_update`` wants 1-d or 2-d vectors. The wrapper only lifts 0-d vectors to 1-d; it changes
    nothing else, in this process only.

    Args:
        bkb_lib: the imported ``bkb_lib`` module of the authors.
    """
    original = bkb_lib.qr_update
    if getattr(original, "sketchbo_wrapped", False):
        return

    def qr_update_1d(Q, R, u, v, *args, **kwargs):
        return original(Q, R, np.atleast_1d(u), np.atleast_1d(v), *args, **kwargs)

    qr_update_1d.sketchbo_wrapped = True
    bkb_lib.qr_update = qr_update_1d


def authors_kernel(utils, kernel: dict):
    """Their ``dot`` for our kernel dict (rbf only): k(x, x') = exp(-||x - x'||^2 / (2 sigma2)).

    Args:
        utils: the authors' imported ``utils`` module.
        kernel: our problem's kernel, ``{"name": "rbf", "sigma2": s}``.

    Returns:
        A ``utils.FastMixinKernel`` of scikit-learn's ``RBF`` and ``PairwiseKernel`` with that width.

    Raises:
        ValueError: the kernel is not an rbf with a single ``sigma2``.
    """
    if kernel.get("name") != "rbf" or set(kernel) != {"name", "sigma2"}:
        raise ValueError(f"kernel {kernel!r}: only {{'name': 'rbf', 'sigma2': s}} maps onto the authors' code here")
    from sklearn.gaussian_process.kernels import RBF, PairwiseKernel

    sigma2 = float(kernel["sigma2"])
    return utils.FastMixinKernel(RBF(length_scale=np.sqrt(sigma2)),
                                 PairwiseKernel(metric="rbf", gamma=1.0 / (2.0 * sigma2)))


def run_authors_seed(bkb_lib, dot, problem, proto: dict, T: int, seed: int, cls: str = "Batch_BKB") -> dict:
    """One seed of the authors' ``Batch_BKB`` (or another class of theirs with its interface) for T pulls, timed.

    Args:
        bkb_lib: the authors' imported ``bkb_lib`` module.
        dot: their kernel object (:func:`authors_kernel`).
        problem: our finite-arm problem (arms, noiseless f).
        proto: ``lam``, ``F``, ``qbar``, ``C`` and ``xi`` (the feedback noise's standard deviation).
        T: pulls, the initial arm included.
        seed: the seed of their ``numpy.random.RandomState`` (initial arm, noise, resampling).
        cls: the name of their class in ``bkb_lib``: ``Batch_BKB`` (default) or ``Local_Batch_BKB``.

    Returns:
        The seed's record (:func:`make_record`).

    Raises:
        AttributeError: ``bkb_lib`` has no class ``cls``.
    """
    if not hasattr(bkb_lib, cls):
        raise AttributeError(f"the authors' bkb_lib ({getattr(bkb_lib, '__file__', '?')}) has no class {cls!r}")
    rng = np.random.RandomState(seed)
    xi = proto["xi"]
    alg = getattr(bkb_lib, cls)(lam=proto["lam"], dot=dot, fnorm=proto["F"], noise_variance=xi ** 2, delta=1.0 / T,
                                qbar=proto["qbar"], ratio_threshold=proto["C"], verbose=0)
    start = time.perf_counter()
    first = int(rng.randint(problem.arms.shape[0]))
    alg.initialize(problem.arms, [first], np.array([problem.f[first] + xi * rng.randn()]))
    pulled, sizes, dicts = [first], [1], [0]  # the initial arm: a batch of its own, chosen without a dictionary
    while len(pulled) < T:
        dicts.append(int(alg.dict_size))  # the dictionary this batch is chosen with
        batch, _ = alg.predict()
        batch = np.asarray(batch, dtype=int)[:T - len(pulled)]
        feedback = problem.f[batch] + xi * rng.randn(len(batch))
        pulled.extend(batch.tolist())
        sizes.append(len(batch))
        if len(pulled) < T:  # the last update would only serve a next batch
            alg.update(batch, feedback, rng)
    return make_record(pulled, sizes, dicts, time.perf_counter() - start)


def run_authors(authors_dir, problem, proto: dict, T: int, n_seeds: int, log=None) -> list[dict]:
    """The authors' BBKB on seeds 0..n_seeds-1, one after another.

    Args:
        authors_dir: the directory of their code (:func:`load_authors`).
        problem: our finite-arm problem.
        proto: the protocol (:func:`protocol`).
        T: pulls per seed.
        n_seeds: how many seeds.
        log: a callable taking a progress line, or None.

    Returns:
        One record per seed (:func:`make_record`).
    """
    bkb_lib, utils = load_authors(authors_dir)
    dot = authors_kernel(utils, problem.kernel)
    records = []
    for seed in range(n_seeds):
        records.append(run_authors_seed(bkb_lib, dot, problem, proto, T, seed))
        if log:
            log(f"authors  seed {seed}: {records[-1]['time_s']:.1f} s")
    return records


# ------------------------------------------------------------------------------------------ ours

def our_params(proto: dict, T: int) -> dict:
    """Our ``bbkb`` hyperparameters for the protocol (ξ comes from the problem: None means √λ)."""
    return {"lam": proto["lam"], "F": proto["F"], "delta": 1.0 / T, "qbar": proto["qbar"], "C": proto["C"]}


def batch_starts(batch_index) -> np.ndarray:
    """Indices of the pulls that open a batch, from a per-pull batch-index trace."""
    b = np.asarray(batch_index)
    return np.flatnonzero(np.r_[True, b[1:] != b[:-1]])


def run_ours(problem, proto: dict, T: int, n_seeds: int, log=None,
             algorithm: str = "bbkb") -> tuple[list[dict], float]:
    """Our ``bbkb`` on seeds 0..n_seeds-1, one ``sb.run`` per seed (the compiled program is reused).

    Args:
        problem: our finite-arm problem.
        proto: the protocol (:func:`protocol`); its ``xi`` must be the one our runner uses.
        T: pulls per seed.
        n_seeds: how many seeds.
        log: a callable taking a progress line, or None.
        algorithm: ``bbkb`` (default) or another of the family taking the same parameters (``bbkb_local``).

    Returns:
        ``(records, compile_s)``: one record per seed (time without compilation) and the compilation time.
    """
    records, compile_s = [], 0.0
    for seed in range(n_seeds):
        res = sb.run(algorithm, problem, T=T, n_seeds=1, seed=seed, params=our_params(proto, T), progress=False)
        xi = res.hyperparameters.get("xi")
        if xi is not None and not np.isclose(xi, proto["xi"]):
            raise RuntimeError(f"our run used xi={xi}, the authors' run xi={proto['xi']}: the protocols differ")
        tr = res.traces
        starts = batch_starts(tr["batch_index"][0])
        sizes = np.diff(np.r_[starts, T])
        compile_s += float(res.compile_time_s)
        records.append(make_record(tr["query"][0], sizes, np.asarray(tr["dict_size"][0])[starts],
                                   float(res.wall_time_s - res.compile_time_s)))
        if log:
            log(f"sketchbo seed {seed}: {records[-1]['time_s']:.1f} s (+{res.compile_time_s:.1f} s compilation)")
    return records, compile_s


# ------------------------------------------------------------------------------------------ metrics

def make_record(pulled, batch_sizes, batch_dicts, time_s: float) -> dict:
    """One seed's raw outcome.

    Args:
        pulled: the T pulled arm indices, in order.
        batch_sizes: the size of each batch (they sum to T).
        batch_dicts: the dictionary size each batch was chosen with.
        time_s: the seed's wall time in seconds.

    Returns:
        ``{"pulled", "batch_sizes", "batch_dicts", "time_s"}`` as int arrays and a float.
    """
    return {"pulled": np.asarray(pulled, dtype=np.int64), "batch_sizes": np.asarray(batch_sizes, dtype=np.int64),
            "batch_dicts": np.asarray(batch_dicts, dtype=np.int64), "time_s": float(time_s)}


def cumulative_regret(f, pulled) -> float:
    """R_T = sum over the pulls of (max f - f(x_t)), on the noiseless f.

    Args:
        f: the (A,) noiseless rewards.
        pulled: the pulled arm indices.

    Returns:
        The cumulative regret.
    """
    f = np.asarray(f, dtype=np.float64)
    return float(np.sum(f.max() - f[np.asarray(pulled, dtype=np.int64)]))


def uniform_regret(f, T: int) -> float:
    """R_T^unif = T·(max f - mean f), the expected regret of T uniformly drawn arms.

    Args:
        f: the (A,) noiseless rewards.
        T: the number of pulls.

    Returns:
        The uniform baseline's expected cumulative regret.
    """
    f = np.asarray(f, dtype=np.float64)
    return float(T * (f.max() - f.mean()))


def seed_metrics(record: dict, f) -> dict:
    """The table's metrics of one seed (keys of :data:`METRICS`).

    Args:
        record: a seed's record (:func:`make_record`).
        f: the problem's noiseless rewards.

    Returns:
        ``{metric: float}``.
    """
    T = len(record["pulled"])
    r_t = cumulative_regret(f, record["pulled"])
    return {"R_T": r_t, "ratio": r_t / uniform_regret(f, T), "time_s": record["time_s"],
            "n_batches": float(len(record["batch_sizes"])), "max_batch": float(record["batch_sizes"].max()),
            "dict_final": float(record["batch_dicts"][-1]), "dict_max": float(record["batch_dicts"].max())}


def summarise(records: list[dict], f) -> dict:
    """Mean, sample standard deviation and per-seed values of every metric over the seeds.

    Args:
        records: the seeds' records.
        f: the problem's noiseless rewards.

    Returns:
        ``{metric: {"mean", "std", "values"}}`` (std 0 for a single seed).
    """
    per_seed = [seed_metrics(r, f) for r in records]
    out = {}
    for key, _, _ in METRICS:
        values = np.array([m[key] for m in per_seed])
        std = float(values.std(ddof=1)) if len(values) > 1 else 0.0
        out[key] = {"mean": float(values.mean()), "std": std, "values": values.tolist()}
    return out


# ------------------------------------------------------------------------------------------ output

def format_table(summaries: dict) -> str:
    """The side-by-side table: one row per implementation, "mean ± std" per metric.

    Args:
        summaries: ``{implementation: summarise(...)}``.

    Returns:
        The table as text (header, rule, rows).
    """
    header = ["implementation"] + [title for _, title, _ in METRICS]
    rows = [[name] + [f"{fmt.format(s[key]['mean'])} ± {fmt.format(s[key]['std'])}" for key, _, fmt in METRICS]
            for name, s in summaries.items()]
    widths = [max(len(line[i]) for line in [header] + rows) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(line, widths)).rstrip() for line in [header] + rows]
    lines.insert(1, "-" * len(lines[0]))
    return "\n".join(lines)


def machine_info() -> dict:
    """Date, machine and library versions of this run.

    Returns:
        A JSON-able dict.
    """
    versions = {"python": platform.python_version(), "numpy": np.__version__,
                "sketchbo": getattr(sb, "__version__", None)}
    for name in ("scipy", "sklearn", "jax"):
        try:
            versions[name] = importlib.import_module(name).__version__
        except ImportError:
            versions[name] = None
    return {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "host": platform.node(), "platform": platform.platform(), "processor": platform.processor(),
            "cpu_count": os.cpu_count(), "load_avg_start": list(os.getloadavg()), "versions": versions,
            "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS")}


def protocol(problem, T: int, **overrides) -> dict:
    """The protocol's values for a problem: λ, F, q̄, C̃, δ = 1/T and ξ (the problem's noise_std or √λ).

    Args:
        problem: our finite-arm problem.
        T: pulls per seed.
        **overrides: values replacing those of :data:`PROTOCOL` (``lam``, ``F``, ``qbar``, ``C``).

    Returns:
        The protocol dict.
    """
    values = {**PROTOCOL, **overrides}
    xi = problem.noise_std if problem.noise_std is not None else float(np.sqrt(values["lam"]))
    return {**values, "delta": 1.0 / T, "xi": float(xi), "kernel": dict(problem.kernel)}


def header_lines(problem, proto: dict, T: int, n_seeds: int, meta: dict) -> list[str]:
    """The lines printed above the table: setting, date and machine.

    Args:
        problem: our finite-arm problem.
        proto: the protocol (:func:`protocol`).
        T: pulls per seed.
        n_seeds: seeds per implementation.
        meta: :func:`machine_info`.

    Returns:
        The lines.
    """
    A, d = problem.arms.shape
    return [f"BBKB, the authors' code against sketchbo: {problem.name} (A = {A}, d = {d}), T = {T}, {n_seeds} seeds",
            f"lam = {proto['lam']}, F = {proto['F']}, delta = 1/T, qbar = {proto['qbar']}, C~ = {proto['C']}, "
            f"xi = {proto['xi']:.4g}, kernel = {proto['kernel']}",
            f"date {meta['date']}; machine {meta['host']} ({meta['platform']}, {meta['cpu_count']} CPUs, "
            f"load {meta['load_avg_start'][0]:.2f} at start); OPENBLAS_NUM_THREADS={meta['OPENBLAS_NUM_THREADS']}"]


def footer_lines(summaries: dict, r_unif: float, compile_s: float, meta: dict) -> list[str]:
    """The lines printed below the table: R_unif, our compilation time, the seeds' caveat.

    Args:
        summaries: ``{implementation: summarise(...)}``.
        r_unif: R_T^unif of the problem.
        compile_s: our program's compilation time (excluded from its time per seed).
        meta: :func:`machine_info` (with ``load_avg_end``).

    Returns:
        The lines.
    """
    return [f"mean ± sample std over seeds; R_unif = T·(max f − mean f) = {r_unif:.1f}; R_T of both from the "
            "pulled arms and the noiseless f",
            f"sketchbo compilation {compile_s:.1f} s (not in its time/seed); load {meta['load_avg_end'][0]:.2f} "
            "at end", SEEDS_NOTE]


# ------------------------------------------------------------------------------------------ --speed

# (row, implementation, seeds, dtype or BLAS threads, compilation cache) of the speed table, in order; each row is one
# fresh process. The warm row runs after an unmeasured process that fills the cache with the same program.
SPEED_ROWS = (
    ("1 seed", "authors", 1, "1 thread", None),
    ("1 seed", "authors", 1, "2 threads", None),
    ("1 seed", "sketchbo", 1, "float64", "off"),
    ("1 seed, warm", "sketchbo", 1, "float64", "warm"),
    ("10 seeds", "authors", 10, "1 thread", None),
    ("10 seeds", "authors", 10, "2 processes", None),
    ("10 seeds", "sketchbo", 10, "float64", "off"),
    ("10 seeds", "sketchbo", 10, "float32", "off"),
)
# the ratios the speed table states: (name, authors' row, sketchbo's row), rows as indices into SPEED_ROWS
SPEED_RATIOS = (("1 seed, cold", 0, 2), ("1 seed, warm", 0, 3), ("10 seeds float64", 4, 6),
                ("10 seeds float32", 4, 7), ("10 seeds float64, authors on 2 cores", 5, 6))


def speed_worker(job: dict) -> dict:
    """One measurement, in this (fresh) process: ``job`` names the implementation, problem, T, seeds and dtype.

    Returns:
        ``{"wall_s", "compile_s", "exec_s", "ratio"}``: the run's time (sketchbo: ``sb.run``'s wall time, its
        compilation and execution apart; the authors: the sum of their seeds' times), and R_T/R_unif per seed.
    """
    problem = sb.make_problem(job["problem"])
    proto = protocol(problem, job["T"])
    seeds = list(job["seeds"])
    if job["impl"] == "authors":
        bkb_lib, utils = load_authors(job["authors_dir"])
        dot = authors_kernel(utils, problem.kernel)
        records = [run_authors_seed(bkb_lib, dot, problem, proto, job["T"], s) for s in seeds]
        wall, compile_s = sum(r["time_s"] for r in records), 0.0
        ratios = [seed_metrics(r, problem.f)["ratio"] for r in records]
    else:
        import scipy.linalg  # noqa: F401,PLC0415  (JAX's LAPACK kernels load it; an import, left out like theirs)

        sb.use_cpu_cores()
        res = sb.run("bbkb", problem, T=job["T"], n_seeds=len(seeds), seed=seeds[0], params=our_params(proto, job["T"]),
                     dtype=job["dtype"], progress=False)
        wall, compile_s = float(res.wall_time_s), float(res.compile_time_s)
        ratios = np.asarray(res.regret_ratio, float).tolist()
    return {"wall_s": wall, "compile_s": compile_s, "exec_s": wall - compile_s, "ratio": ratios}


def _spawn(job: dict, env: dict) -> dict:
    """``speed_worker(job)`` in a fresh Python process with the environment ``env``."""
    proc = subprocess.run([sys.executable, __file__, "--speed-worker", json.dumps(job)], env=env, capture_output=True,
                          text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"the measurement {job} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def speed_row(row: tuple, args, cache_dir: Path) -> dict:
    """One measurement of a row of [`SPEED_ROWS`][] (two processes side by side for the authors' "2 processes")."""
    _, impl, n, variant, cache = row
    env = dict(os.environ)
    job = {"impl": impl, "problem": args.problem, "T": args.T, "seeds": list(range(n)),
           "authors_dir": str(args.authors_dir),
           "dtype": variant if impl == "sketchbo" else "float64"}
    if impl == "authors":
        env["OPENBLAS_NUM_THREADS"] = "2" if variant == "2 threads" else "1"
        if variant == "2 processes":
            with concurrent.futures.ThreadPoolExecutor(2) as pool:
                halves = [{**job, "seeds": job["seeds"][i::2]} for i in range(2)]
                t0 = time.perf_counter()
                parts = list(pool.map(lambda j: _spawn(j, env), halves))
            return {"wall_s": max(p["wall_s"] for p in parts), "compile_s": 0.0,
                    "exec_s": max(p["wall_s"] for p in parts), "ratio": parts[0]["ratio"] + parts[1]["ratio"],
                    "processes_s": time.perf_counter() - t0}
        return _spawn(job, env)
    if cache == "warm":
        env["SKETCHBO_COMPILE_CACHE"] = str(cache_dir)
        _spawn(job, env)  # fills the cache (not measured)
    else:
        env["SKETCHBO_COMPILE_CACHE"] = "off"
    return _spawn(job, env)


def run_speed(args, log=None) -> dict:
    """Every row of [`SPEED_ROWS`][], ``args.repeats`` times in turn (the codes alternate within each repeat).

    Returns:
        ``{"rows": [{"row", "impl", "seeds", "variant", "runs": [measurement, ...], "median": {...}}],
        "ratios": {...}}``.
    """
    rows = [{"row": r[0], "impl": r[1], "seeds": r[2], "variant": r[3], "cache": r[4], "runs": []} for r in SPEED_ROWS]
    with tempfile.TemporaryDirectory(prefix="bench-cache-") as tmp:
        for rep in range(args.repeats):
            for i, row in enumerate(SPEED_ROWS):
                shutil.rmtree(Path(tmp) / str(i), ignore_errors=True)
                out = speed_row(row, args, Path(tmp) / str(i))
                rows[i]["runs"].append(out)
                if log:
                    log(f"repeat {rep + 1}/{args.repeats} {row[0]:13s} {row[1]:8s} {row[3]:11s}: "
                        f"{out['wall_s']:.2f} s (compile {out['compile_s']:.2f} s)")
    for r in rows:
        r["median"] = {k: float(np.median([run[k] for run in r["runs"]])) for k in ("wall_s", "compile_s", "exec_s")}
        r["median"]["ratio"] = float(np.mean([np.mean(run["ratio"]) for run in r["runs"]]))
    ratios = {name: rows[a]["median"]["wall_s"] / rows[b]["median"]["wall_s"] for name, a, b in SPEED_RATIOS}
    return {"rows": rows, "ratios": ratios}


def format_speed(result: dict) -> str:
    """The speed table (medians) and the ratios, as printed."""
    head = ("row", "code", "variant", "wall [s]", "compile [s]", "exec [s]", "R_T/R_unif", "runs [s]")
    lines = [head]
    for r in result["rows"]:
        m = r["median"]
        comp = f"{m['compile_s']:.2f}" if r["impl"] == "sketchbo" else "-"
        ex = f"{m['exec_s']:.2f}" if r["impl"] == "sketchbo" else "-"
        runs = ", ".join(f"{run['wall_s']:.2f}" for run in r["runs"])
        lines.append((r["row"], r["impl"], r["variant"] + (f", cache {r['cache']}" if r["cache"] else ""),
                      f"{m['wall_s']:.2f}", comp, ex, f"{m['ratio']:.4f}", runs))
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    text = ["  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() for line in lines]
    text.insert(1, "-" * len(text[0]))
    text.append("ratios (authors' median wall / sketchbo's): " + "; ".join(
        f"{name} {v:.2f}x" for name, v in result["ratios"].items()))
    return "\n".join(text)


def main_speed(args) -> dict:
    """``--speed``: the table of [`run_speed`][], printed, and written to ``args.out``."""
    meta = machine_info()
    result = run_speed(args, _log)
    meta["load_avg_end"] = list(os.getloadavg())
    print(f"BBKB speed, the authors' code against sketchbo: {args.problem}, T = {args.T}; medians of {args.repeats} "
          f"alternations; date {meta['date']}; machine {meta['host']} ({meta['platform']}, {meta['cpu_count']} CPUs, "
          f"load {meta['load_avg_start'][0]:.2f} at start, {meta['load_avg_end'][0]:.2f} at end)")
    print(format_speed(result))
    out = {"meta": {**meta, "command": [Path(sys.argv[0]).name] + sys.argv[1:], "authors_repo": AUTHORS_REPO},
           "problem": args.problem, "T": args.T, "repeats": args.repeats, **result}
    if args.out is not None:
        from sketchbo.engine.files import atomic_write_json  # noqa: PLC0415  (written whole)
        atomic_write_json(args.out, out, indent=2)
        print(f"wrote {args.out}")
    return out


# ------------------------------------------------------------------------------------------ main

def parse_args(argv=None) -> argparse.Namespace:
    """The command line (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--authors-dir", required=True, help=f"a clone of {AUTHORS_REPO} (holding bkb_lib.py)")
    ap.add_argument("--problem", choices=PROBLEMS, default="cadata")
    ap.add_argument("--T", type=int, default=10000, help="pulls per seed (default 10000)")
    ap.add_argument("--seeds", type=int, default=10, help="seeds 0..n-1 of each implementation (default 10)")
    ap.add_argument("--out", type=Path, default=None, help="write the numbers to this JSON file")
    ap.add_argument("--speed", action="store_true", help="the speed table (docs/benchmarks.md#authors-speed) instead")
    ap.add_argument("--repeats", type=int, default=2, help="--speed: alternations of the two codes (default 2)")
    args = ap.parse_args(argv)
    if args.T < 2 or args.seeds < 1 or args.repeats < 1:
        ap.error(f"--T must be >= 2, --seeds >= 1 and --repeats >= 1; got --T {args.T}, --seeds {args.seeds}, "
                 f"--repeats {args.repeats}")
    try:
        load_authors(args.authors_dir)
    except AuthorsCodeError as err:
        ap.error(str(err))
    return args


def _log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def main(argv=None) -> dict:
    """Run both implementations, print the table and write the JSON when ``--out`` is given.

    Args:
        argv: the command-line arguments (None: ``sys.argv[1:]``).

    Returns:
        The results dict (what ``--out`` holds).
    """
    args = parse_args(argv)
    if args.speed:
        return main_speed(args)
    meta = machine_info()
    problem = sb.make_problem(args.problem)
    proto = protocol(problem, args.T)
    authors = run_authors(args.authors_dir, problem, proto, args.T, args.seeds, _log)
    ours, compile_s = run_ours(problem, proto, args.T, args.seeds, _log)
    meta["load_avg_end"] = list(os.getloadavg())
    summaries = {"authors": summarise(authors, problem.f), "sketchbo": summarise(ours, problem.f)}
    r_unif = uniform_regret(problem.f, args.T)
    print("\n".join(header_lines(problem, proto, args.T, args.seeds, meta)))
    print(format_table(summaries))
    print("\n".join(footer_lines(summaries, r_unif, compile_s, meta)))
    results = {"meta": {**meta, "command": [Path(sys.argv[0]).name] + list(argv if argv is not None else sys.argv[1:]),
                        "authors_repo": AUTHORS_REPO, "seeds_note": SEEDS_NOTE},
               "problem": args.problem, "T": args.T, "n_seeds": args.seeds, "protocol": proto, "R_unif": r_unif,
               "sketchbo_compile_s": compile_s, "summaries": summaries}
    if args.out is not None:
        from sketchbo.engine.files import atomic_write_json  # noqa: PLC0415  (written whole)
        atomic_write_json(args.out, results, indent=2)
        print(f"wrote {args.out}")
    return results


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--speed-worker":  # one measurement of --speed, in a fresh process
        print(json.dumps(speed_worker(json.loads(sys.argv[2]))))
    else:
        main()
