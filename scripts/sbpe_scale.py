"""S-BPE at scale: cumulative regret R_N against the horizon N on one GP sample, beside the rate sqrt(gamma_N N) of
Vakili et al. (ICML 2022) Thm 5.2 (docs/reproductions-bbkb.md#sbpe-scale).

Thm 5.2 bounds S-BPE's regret by O~(sqrt(N gamma_k(N) log(|X|/delta))), gamma_k(N) the maximal information gain of
Eq. (10), sup over N points of (1/2) log det(I + K / tau^2); for the SE kernel gamma_k(N) = O(log^{d+1} N) (Remark 4.3).
This script runs S-BPE (``sb.run("sbpe", ...)``, the seeds of one horizon in one compiled program, on the seed axis
the engine picks: ``lax.map`` on the CPU, where vmapping these seeds took 164 s against 15 s at N = 2000 on
2026-12-03, ``vmap`` on accelerators; the trajectories are the same) on the embedded
``gp_sample`` problem (A = 1000 arms uniform in [-1, 1]^2, f drawn from an RBF GP of width sigma2 = 0.1 and
standardised) with its registry defaults (lam = tau^2 = 0.01 and F = C_k = 1, the problem's suggested values;
noise xi = sqrt(lam) = R; delta = 1/N; the exact in-batch variance, ``resample=code``) for each width
(``beta=code``, the practical default; ``beta=paper``, Thm 3.5's width with the union bound of Eq. (13)) and each N
of a geometric range, and records R_N per seed.

gamma_N is estimated on the same arms and tau^2 by the greedy design x_t = argmax sigma^2_{t-1}(x) (one pull at a
time, repeats allowed), whose information gain (1/2) sum_t log(1 + sigma^2_{t-1}(x_t) / tau^2) is within a factor
1 - 1/e of gamma_N (the log-determinant is submodular; Srinivas et al. 2010): it is a lower bound and an
estimate of gamma_N. It is computed twice, by a rank-one numpy update of the posterior covariance of all arms and by
``sketchbo.gp.information.pull_variances`` on the greedy pulls (the two must agree). The rate curve is
c sqrt(gamma_N N) with c chosen so that it meets each width's mean R_N at the smallest N (the theorem gives no usable
constant: its 12 C_k + ... prefactor bounds R_N far above these runs); the fitted slope is the least-squares slope of
log R_N against log N.

With ``--box`` it measures continuous S-BPE (``sbpe_box``, §5.2, Eq. (15)) instead: Hartmann6 (the registered box
benchmark, noiseless), one horizon, a grid over the rbf width sigma2 with the practical width (one program for every
width and seed, ``sb.run_grid``) and one run with Eq. (15)'s width, recording R_T / R_T^unif, the last batch's mean
instant regret and the best regret per seed.

    python scripts/sbpe_scale.py --out experiments/sbpe_scale.json          # about 20 minutes on one shared core
    python scripts/sbpe_scale.py --plot experiments/sbpe_scale.json --out docs/figures
    python scripts/sbpe_scale.py --box --seeds 4 --out experiments/sbpe_box.json   # about a minute
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

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_N = (100, 200, 500, 1000, 2000, 5000, 10000)
WIDTHS = ("code", "paper")
LABELS = {"code": "S-BPE, beta = code (practical width)", "paper": "S-BPE, beta = paper (Thm 3.5, Eq. (13))"}
PROBLEM = {"name": "gp_sample"}  # the embedded problem with its defaults (A = 1000, d = 2, sigma2 = 0.1, seed 0)
BOX = {"problem": "hartmann6", "T": 1000, "sigma2": (0.05, 0.2, 0.5, 1.0), "paper_sigma2": 0.5}


def greedy_information_gain(arms: np.ndarray, sigma2: float, lam: float, n_max: int) -> tuple[np.ndarray, np.ndarray]:
    """The greedy maximum-variance design on ``arms`` (``n_max`` pulls, repeats allowed) and its cumulative
    information gain after each pull, (1/2) sum_{s <= t} log(1 + sigma^2_{s-1}(x_s) / lam), by rank-one updates of the
    exact posterior covariance of all arms (rbf kernel of width ``sigma2``, noise variance ``lam``)."""
    sq = np.sum(arms * arms, axis=1)
    S = np.exp(-np.maximum(sq[:, None] + sq[None, :] - 2.0 * arms @ arms.T, 0.0) / (2.0 * sigma2))
    queries = np.empty(n_max, np.int64)
    gain = np.empty(n_max)
    total = 0.0
    for t in range(n_max):
        q = int(np.argmax(np.diag(S)))
        v = S[q, q]
        total += 0.5 * np.log1p(v / lam)
        s = S[:, q].copy()
        S -= np.outer(s, s) / (v + lam)
        queries[t], gain[t] = q, total
    return queries, gain


def information_gain(problem, lam: float, Ns: list[int], log) -> dict:
    """gamma_N estimated at every N of ``Ns`` (the greedy design's gain, module docstring), checked against the
    library's exact pull variances."""
    from sketchbo.gp import information  # noqa: PLC0415

    kernel = dict(problem.kernel)
    name, sigma2 = kernel.pop("name"), float(kernel["sigma2"])
    t0 = time.perf_counter()
    queries, gain = greedy_information_gain(np.asarray(problem.arms), sigma2, lam, max(Ns))
    s = information.pull_variances(name, kernel, problem.arms, queries, lam)  # lam-scaled: s = sigma^2 / lam
    library = 0.5 * np.cumsum(np.log1p(s))
    worst = float(np.max(np.abs(library - gain) / gain))
    if worst > 1e-6:
        raise RuntimeError(f"the greedy design's information gain differs from the library's by {worst:.2e} (relative)")
    log(f"gamma_N (greedy) at N = {max(Ns)}: {library[-1]:.2f}; {time.perf_counter() - t0:.1f} s; "
        f"numpy vs library {worst:.1e}")
    return {"gamma": {str(N): float(library[N - 1]) for N in Ns}, "unique_arms": {str(N): int(np.unique(
        queries[:N]).size) for N in Ns}, "numpy_vs_library_rel": worst}


def fit(Ns, values) -> dict:
    """Least-squares line of log(values) against log(N): ``{"slope", "intercept"}`` (natural logs), and the slope
    between the two largest N."""
    x, y = np.log(np.asarray(Ns, float)), np.log(np.asarray(values, float))
    slope, intercept = np.polyfit(x, y, 1)
    last = float((y[-1] - y[-2]) / (x[-1] - x[-2]))
    return {"slope": float(slope), "intercept": float(intercept), "last_slope": last}


def measure(Ns: list[int], n_seeds: int, widths: list[str], log) -> dict:
    """Every (width, N): one ``sb.run`` of ``n_seeds`` seeds (seeds 0 .. n_seeds - 1, one program), R_N per seed."""
    import sketchbo as sb  # noqa: PLC0415

    problem = sb.make_problem(**PROBLEM)
    out = {}
    for width in widths:
        rows = []
        for N in Ns:
            t0 = time.perf_counter()
            res = sb.run("sbpe", problem, T=N, n_seeds=n_seeds, seed=0, params={"beta": width}, progress=False)
            R = np.asarray(res.cumulative_regret, float)
            rows.append({"N": N, "R": R.tolist(), "mean": float(R.mean()), "sd": float(R.std(ddof=1)),
                         "ratio": np.asarray(res.regret_ratio, float).tolist(),
                         "batches": np.asarray(res.n_batches).tolist(), "wall_s": time.perf_counter() - t0,
                         "compile_s": float(res.compile_time_s)})
            log(f"beta={width:5s} N = {N:6d}: R_N = {R.mean():9.2f} ± {R.std(ddof=1):7.2f}  "
                f"({rows[-1]['wall_s']:.1f} s, {int(np.max(res.n_batches))} batches)")
        out[width] = {"rows": rows, "fit": fit(Ns, [r["mean"] for r in rows])}
        hyper = {k: res.hyperparameters[k] for k in ("lam", "F", "xi", "beta", "resample") if k in res.hyperparameters}
        out[width]["hyperparameters"] = hyper
    return out


def box_row(res, params: dict) -> dict:
    """What the box record keeps of one ``sbpe_box`` run: per seed R_T / R_T^unif, R_T, the last batch's mean
    instant regret and the best instant regret, and the batches."""
    regret = np.asarray(res.traces["instant_regret"], float)
    batch = np.asarray(res.traces["batch_index"])
    last = batch == batch.max(axis=1, keepdims=True)
    return {"params": params, "ratio": np.asarray(res.regret_ratio, float).tolist(),
            "R": regret.sum(axis=1).tolist(), "last_batch_regret": [float(r[m].mean()) for r, m in zip(regret, last)],
            "best_regret": regret.min(axis=1).tolist(), "batches": np.asarray(res.n_batches).tolist(),
            "last_batch_length": int(last[0].sum())}


def measure_box(n_seeds: int, log) -> dict:
    """``sbpe_box`` on BOX's problem: the practical width over the sigma2 grid (one program), then Eq. (15)'s."""
    import sketchbo as sb  # noqa: PLC0415

    problem = sb.make_problem(BOX["problem"])
    rows, T = [], BOX["T"]
    t0 = time.perf_counter()
    for point, res in sb.run_grid("sbpe_box", problem, T=T, n_seeds=n_seeds, grid={"sigma2": list(BOX["sigma2"])},
                                  progress=False):
        rows.append(box_row(res, {"beta": "code", **point}))
        log(f"sbpe_box beta=code sigma2={point['sigma2']}: R_T/R_unif {np.mean(rows[-1]['ratio']):.3f}")
    grid_s = time.perf_counter() - t0
    paper = {"beta": "paper", "sigma2": BOX["paper_sigma2"]}
    res = sb.run("sbpe_box", problem, T=T, n_seeds=n_seeds, params=paper, progress=False)
    rows.append(box_row(res, paper))
    log(f"sbpe_box beta=paper sigma2={paper['sigma2']}: R_T/R_unif {np.mean(rows[-1]['ratio']):.3f}")
    defaults = {k: v for k, v in res.hyperparameters.items() if k in sb.ALGORITHMS["sbpe_box"].defaults}
    return {"problem": BOX["problem"], "T": T, "n_seeds": n_seeds, "seeds": list(range(n_seeds)), "rows": rows,
            "hyperparameters": {**defaults, "sigma2": "per row", "beta": "per row"}, "grid_wall_s": grid_s,
            "uniform_mean_minus_f_min": float(res.hyperparameters["uniform_mean"] - problem.f_min)}


def rate_curve(record: dict, width: str) -> tuple[np.ndarray, np.ndarray]:
    """(N, c sqrt(gamma_N N)) with c meeting ``width``'s mean R_N at the smallest N."""
    rows = record["results"][width]["rows"]
    N = np.array([r["N"] for r in rows], float)
    rate = np.sqrt(np.array([record["gamma"]["gamma"][str(int(n))] for n in N]) * N)
    return N, rate * rows[0]["mean"] / rate[0]


def summarise(record: dict) -> None:
    """The rate's own fitted slope over the same N, beside each width's (stored in the record)."""
    Ns = [r["N"] for r in next(iter(record["results"].values()))["rows"]]
    gam = [record["gamma"]["gamma"][str(N)] for N in Ns]
    record["rate_fit"] = fit(Ns, np.sqrt(np.asarray(gam) * np.asarray(Ns, float)))
    d = record["problem"]["d"]
    record["log_rate_fit"] = fit(Ns, np.sqrt(np.asarray(Ns, float) * np.log(Ns) ** (d + 1)))


def plot(record: dict, out: Path) -> Path:
    """sbpe_scale.png: mean R_N ± sd against N on log axes per width, each beside its scaled rate curve."""
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    for width, res in record["results"].items():
        N = np.array([r["N"] for r in res["rows"]], float)
        mean = np.array([r["mean"] for r in res["rows"]])
        sd = np.array([r["sd"] for r in res["rows"]])
        line = ax.errorbar(N, mean, yerr=sd, fmt="o-", capsize=3,
                           label=f"{LABELS.get(width, width)}: slope {res['fit']['slope']:.2f}")[0]
        Nr, rate = rate_curve(record, width)
        ax.plot(Nr, rate, ":", color=line.get_color(), lw=1.5)
    ax.plot([], [], "k:", lw=1.5,
            label=f"c·sqrt(γ_N N), met at N = {record['Ns'][0]} (slope {record['rate_fit']['slope']:.2f})")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("horizon N")
    ax.set_ylabel("cumulative regret R_N (mean ± sd over seeds)")
    p = record["problem"]
    ax.set_title(f"S-BPE on gp_sample (A = {p['A']}, d = {p['d']}), {record['n_seeds']} seeds; "
                 f"{record['meta']['date'][:10]}", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    out.mkdir(parents=True, exist_ok=True)
    path = out / "sbpe_scale.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False).stdout.strip()


def main(argv=None) -> dict | None:
    """Measure (``--out`` a JSON file) or draw the figure from a record (``--plot RECORD --out DIR``)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--N", default=",".join(map(str, DEFAULT_N)), help="comma-separated horizons, increasing")
    ap.add_argument("--seeds", type=int, default=6)
    ap.add_argument("--widths", default=",".join(WIDTHS), help=f"comma-separated, of {', '.join(WIDTHS)}")
    ap.add_argument("--plot", type=Path, default=None, help="draw sbpe_scale.png from this record into --out")
    ap.add_argument("--box", action="store_true", help="measure continuous S-BPE (sbpe_box) on Hartmann6 instead")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    if args.plot is not None:
        if args.out is None:
            ap.error("--plot needs --out DIR")
        print(f"wrote {plot(json.loads(args.plot.read_text()), args.out)}")
        return None
    try:
        Ns = [int(n) for n in args.N.split(",") if n]
    except ValueError:
        ap.error(f"--N must be comma-separated integers; got {args.N!r}")
    widths = [w for w in args.widths.split(",") if w]
    if len(Ns) < 2 or Ns != sorted(set(Ns)) or Ns[0] < 2:
        ap.error(f"--N needs at least two increasing horizons >= 2; got {Ns}")
    if not widths or any(w not in WIDTHS for w in widths) or args.seeds < 2:
        ap.error(f"--widths must name some of {list(WIDTHS)} (got {widths}); --seeds >= 2")
    import sketchbo as sb  # noqa: PLC0415

    def log(line):
        print(line, file=sys.stderr, flush=True)

    date = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    load0, t0 = os.getloadavg()[0], time.perf_counter()
    meta = {"date": date, "commit": git("rev-parse", "--short", "HEAD"),
            "dirty_tree": bool(git("status", "--porcelain")), "host": platform.node(),
            "machine": f"{platform.platform()}, {os.cpu_count()} CPUs", "cpu_count": os.cpu_count(),
            "load_avg_start": load0,
            "argv": [Path(sys.argv[0]).name] + list(argv if argv is not None else sys.argv[1:])}
    if args.box:
        record = {"meta": meta, **measure_box(args.seeds, log)}
        record["meta"].update(total_s=time.perf_counter() - t0, load_avg_end=os.getloadavg()[0])
        if args.out is not None:
            from sketchbo.engine.files import atomic_write_json  # noqa: PLC0415  (written whole)
            atomic_write_json(args.out, record, indent=2)
            print(f"wrote {args.out}")
        return record
    problem = sb.make_problem(**PROBLEM)
    results = measure(Ns, args.seeds, widths, log)
    lam = results[widths[0]]["hyperparameters"]["lam"]
    record = {"meta": meta,
              "problem": {**PROBLEM, "A": int(problem.arms.shape[0]), "d": int(problem.arms.shape[1]),
                          "kernel": dict(problem.kernel), "suggested": dict(problem.suggested or {})},
              "Ns": Ns, "n_seeds": args.seeds, "seeds": list(range(args.seeds)), "results": results,
              "gamma": information_gain(problem, float(lam), Ns, log)}
    summarise(record)
    record["meta"].update(total_s=time.perf_counter() - t0, load_avg_end=os.getloadavg()[0])
    for width, res in results.items():
        print(f"beta={width}: slope {res['fit']['slope']:.2f} over N = {Ns[0]}..{Ns[-1]} "
              f"({res['fit']['last_slope']:.2f} between the two largest); rate sqrt(gamma_N N): "
              f"{record['rate_fit']['slope']:.2f}")
    if args.out is not None:
        from sketchbo.engine.files import atomic_write_json  # noqa: PLC0415  (written whole)
        atomic_write_json(args.out, record, indent=2)
        print(f"wrote {args.out}")
    return record


if __name__ == "__main__":
    main()
