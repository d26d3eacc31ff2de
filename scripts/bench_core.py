"""Benchmark of the core algorithms on the BBKB paper's Cadata protocol (PROTOCOLS §9).

Measures, in one process and on this machine:

* BBKB (T = 10^4): one seed, and n seeds in one program (sequential ``lax.map`` and ``vmap``), wall time
  with compilation reported apart, median time per round;
* the cost of one in-batch selection step and of one resparsification at several dictionary capacities
  m_max (the in-batch step must not grow with m^2; the resparsification does);
* BKB and exact GP-UCB at T = 2000, one seed.

Run on an otherwise idle machine (XLA on CPU slows down many times when another process competes for the
cores); report medians. ``--quick`` runs a tiny version (seconds) to check that the script works.

    python scripts/bench_core.py                 # the full benchmark (several minutes on 2 CPU cores)
    python scripts/bench_core.py --quick --out /tmp/bench.json
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from sketchbo.algorithms import ALGORITHMS, ArmSet, Params, Static, build  # noqa: E402
from sketchbo.kernels import kernel_params  # noqa: E402
from sketchbo.problems import make_problem  # noqa: E402
from sketchbo.runner import run  # noqa: E402

PROTOCOL = {"lam": 0.2, "qbar": 2.0, "C": 2.0, "F": 20.0}  # PROTOCOLS §9; delta = 1/T


def _median_time(fn, repeats):
    jax.block_until_ready(fn())
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        jax.block_until_ready(fn())
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def time_run(label, algorithm, problem, T, n_seeds, seed_axis="map", params=None):
    accepted = ALGORITHMS[algorithm].defaults
    hyper = {k: v for k, v in {**PROTOCOL, **(params or {})}.items() if k in accepted}
    res = run(algorithm, problem, T=T, n_seeds=n_seeds, seed_axis=seed_axis, progress=False, params=hyper)
    exec_s = float(res.round_time_s.sum())
    row = {
        "case": label, "algorithm": algorithm, "T": T, "n_seeds": n_seeds, "seed_axis": seed_axis,
        "wall_s": res.wall_time_s, "compile_s": res.compile_time_s, "exec_s": exec_s,
        "rounds": int(res.n_batches.max()), "round_median_ms": 1e3 * float(np.median(res.round_time_s)),
        "step_mean_us": 1e6 * exec_s / (T * n_seeds),
        "seed_steps_per_s": T * n_seeds / exec_s,
        "regret_ratio": float(res.regret_ratio.mean()), "max_batch": int(res.max_batch_size.max()),
        "max_dict": int(res.max_dict_size.max()), "capacity_events": res.capacity_events,
    }
    print(f"  {label}: wall {row['wall_s']:.2f}s (compile {row['compile_s']:.2f}s, exec {exec_s:.2f}s), "
          f"R/Runif {row['regret_ratio']:.3f}, dict {row['max_dict']}", flush=True)
    return row, res


def step_costs(problem, queries, m_values, n_steps, repeats):
    """Median time of one in-batch selection and of one resparsification for dictionary capacities m_max.

    The state holds the feedback of the given pulls (a real BBKB trajectory) and a dictionary of
    min(m, #pulled arms) pulled arms padded to m."""
    A, d = problem.arms.shape
    arms = jnp.asarray(problem.arms)
    f = jnp.asarray(problem.f)
    kp = kernel_params("rbf", d, sigma2=5.0)
    params = Params(lam=jnp.asarray(0.2), qbar=jnp.asarray(1e9), C=jnp.asarray(1e9), F=jnp.asarray(20.0),
                    delta=jnp.asarray(1e-4), xi=jnp.asarray(0.2 ** 0.5), eps=jnp.asarray(0.0), kernel=kp)
    rows = []
    for m in m_values:
        static = Static(A=A, d=d, T=10_000, m_max=m, u_max=max(m, 1024), kernel="rbf", beta_family="bbkb",
                        beta_mode="code", resample="code", batch_rule="bbkb_global")
        alg = build(ALGORITHMS["bbkb"], static)
        state = alg.init(jax.random.key(0), ArmSet(arms), params)
        q = jnp.asarray(queries)
        state = state._replace(counts=state.counts.at[q].add(1.0), ysum=state.ysum.at[q].add(f[q]),
                               t=jnp.asarray(len(queries), jnp.int32))
        resparsify = jax.jit(alg.resparsify)  # q-bar = 1e9 keeps every pulled arm up to the capacity
        s2, info = resparsify(jax.random.key(1), state, params)

        def steps(s):
            return jax.lax.fori_loop(0, n_steps, lambda i, c: alg.select(jax.random.key(0), c, params)[1], s)

        steps_c = jax.jit(steps)
        t_res = _median_time(lambda: resparsify(jax.random.key(1), state, params)[0].Vinv, repeats)
        t_step = _median_time(lambda: steps_c(s2).Vinv, repeats) / n_steps
        rows.append({"m_max": m, "dict_size": int(info["dict_size"]), "resparsify_ms": 1e3 * t_res,
                     "select_step_us": 1e6 * t_step})
        print(f"  m_max={m}: dictionary {rows[-1]['dict_size']}, resparsify {1e3 * t_res:.2f} ms, "
              f"in-batch step {1e6 * t_step:.1f} us", flush=True)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="tiny sizes: check that the script works")
    ap.add_argument("--seeds", type=int, default=10, help="seeds for the multi-seed runs (default 10)")
    ap.add_argument("--no-vmap", action="store_true", help="skip the vmap multi-seed run")
    ap.add_argument("--out", default="bench_core.json", help="where to save the results as JSON")
    args = ap.parse_args(argv)

    if args.quick:
        problem = make_problem("gp_sample", A=2000, d=3, sigma2=0.5, seed=0)
        T_long, T_short, seeds, m_values, n_steps, repeats = 300, 100, 2, [16, 32], 20, 3
    else:
        problem = make_problem("cadata")
        T_long, T_short, seeds, m_values, n_steps, repeats = 10_000, 2000, args.seeds, [64, 128, 256, 512], 200, 7
    dev = jax.devices()[0]
    meta = {"device": f"{dev.platform}:{getattr(dev, 'device_kind', '')}", "cpu_count": os.cpu_count(),
            "machine": platform.machine(), "jax": jax.__version__, "problem": problem.name,
            "A": int(problem.arms.shape[0]), "dtype": "float64", "load_avg_at_start": os.getloadavg()}
    print(f"benchmark on {meta['device']} ({meta['cpu_count']} cores), problem {problem.name}, "
          f"load average {meta['load_avg_at_start']}", flush=True)

    runs = []
    print("BBKB", flush=True)
    row, one = time_run("bbkb 1 seed", "bbkb", problem, T_long, 1)
    runs.append(row)
    row, _ = time_run(f"bbkb {seeds} seeds (map)", "bbkb", problem, T_long, seeds, "map")
    runs.append(row)
    if not args.no_vmap:
        row, _ = time_run(f"bbkb {seeds} seeds (vmap)", "bbkb", problem, T_long, seeds, "vmap")
        runs.append(row)
    print("BKB and GP-UCB", flush=True)
    for alg in ("bkb", "gp_ucb"):
        row, _ = time_run(f"{alg} 1 seed", alg, problem, T_short, 1)
        runs.append(row)

    print("in-batch step and resparsification against the dictionary capacity", flush=True)
    queries = one.traces["query"][0][: min(T_long, 3000)]
    costs = step_costs(problem, queries, m_values, n_steps, repeats)

    print()
    header = f"{'case':<24} {'wall s':>8} {'compile s':>9} {'exec s':>8} {'rounds':>6} {'round ms':>9} " \
             f"{'seed-steps/s':>12} {'R/Runif':>8} {'batch':>6} {'dict':>5}"
    print(header)
    print("-" * len(header))
    for r in runs:
        print(f"{r['case']:<24} {r['wall_s']:8.2f} {r['compile_s']:9.2f} {r['exec_s']:8.2f} {r['rounds']:6d} "
              f"{r['round_median_ms']:9.2f} {r['seed_steps_per_s']:12.0f} {r['regret_ratio']:8.3f} "
              f"{r['max_batch']:6d} {r['max_dict']:5d}")
    print()
    print(f"{'m_max':>6} {'dict':>5} {'resparsify ms':>14} {'in-batch step us':>17}")
    for c in costs:
        print(f"{c['m_max']:6d} {c['dict_size']:5d} {c['resparsify_ms']:14.2f} {c['select_step_us']:17.1f}")
    by_case = {r["case"]: r for r in runs}
    map_key = f"bbkb {seeds} seeds (map)"
    ratios = {"map_vs_sequential_seeds": by_case[map_key]["exec_s"] / (seeds * by_case["bbkb 1 seed"]["exec_s"])}
    vmap_key = f"bbkb {seeds} seeds (vmap)"
    if vmap_key in by_case:
        ratios["vmap_vs_map"] = by_case[vmap_key]["exec_s"] / by_case[map_key]["exec_s"]
    print("\nratios measured in this run:", {k: round(v, 3) for k, v in ratios.items()})
    out = {"meta": meta, "runs": runs, "step_costs": costs, "ratios": ratios}
    tmp = args.out + ".tmp"
    with open(tmp, "w") as fh:
        json.dump(out, fh, indent=2)
    os.replace(tmp, args.out)
    print(f"saved {args.out}")
    return out


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
