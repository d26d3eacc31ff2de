"""GSSBO Fig. 7 (Wei et al. 2025, App.): which samples each subset keeps on Hartmann6 — compute, save a record.

Setting (App.: "the first 200 sequential samples from a standard BO process ... buffer size 100"):

* samples: the first ``--n`` (200) queries of Standard GP-UCB (``std_gp_ucb``, with the defaults of
  docs/protocols.md#box-protocol, ``--n0`` uniform initial points) on Hartmann6, seeds 0 .. ``--seeds`` - 1
  (one program);
* hyperparameters: Matérn-5/2 ARD fitted by maximum likelihood on all n samples of each seed (300 Adam steps
  from the default start; our choice — the paper does not say which model the selection used);
* subsets of ``--buffer`` (100) rows, each keeping the n0 initial samples and the newest: GSSBO by each of
  its rules (``sketchbo.gp.subset.SELECTIONS``: the paper's gradient rule ``projection``, Eq. (1) as written
  ``cosine``, and our default ``pivoted``; sigma_d^2 = 0.01), RSSBO's random choice and k-means++ in the RKHS.

What the figure claims — GSSBO keeps more of the samples near the optimum than RSSBO — is counted per seed and
rule: of the kept rows, how many are among the quarter of the n samples with the lowest f (``best_quarter``)
and the kept rows' mean distance to the global minimiser in the unit cube (``mean_dist``). The forced rows
(the n0 initial ones and the newest) are in every subset and counted too.

``python experiments/gssbo_fig7.py --out results/quick/gssbo_fig7`` writes the record ``gssbo_fig7.json``
there (a file computed with the same settings is kept): the counts of every seed, and seed 0's samples and
subsets, which ``scripts/plot_gssbo_fig7.py`` draws.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import sketchbo  # noqa: F401  (first: sets OPENBLAS_NUM_THREADS before numpy loads OpenBLAS)
import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from sketchbo.cli import tracking  # noqa: E402
import sketchbo as sb  # noqa: E402
from sketchbo.gp import hyper, subset  # noqa: E402
from sketchbo.problems import make_problem  # noqa: E402
from sketchbo.problems.continuous import HARTMANN6_XOPT  # noqa: E402

FILENAME = "gssbo_fig7.json"
QUICK = {"n_uniform": 256, "n_local": 64}
RULES = subset.SELECTIONS  # GSSBO's subset rules, every one of them a panel (docs/protocols.md#gssbo-subset-rules)
SUBSETS = tuple(f"gssbo_{rule}" for rule in RULES) + ("rssbo", "kmeans_pp")


def stored_settings(path: Path):
    try:
        return json.loads(path.read_text())["settings"]
    except (OSError, KeyError, ValueError):
        return None


def seed_subsets(key, X, y, n0: int, buffer: int) -> dict:
    """The subsets of one seed's samples X (n, d), rewards y (n,): name -> (buffer,) row indices and mask."""
    n = X.shape[0]
    valid = jnp.ones((n,), bool)
    forced = subset.forced_rows(jnp.asarray(n), n0, n)
    h, _ = hyper.fit(hyper.init_hyper(X.shape[1]), X, y, valid, 300, 0.05)
    k_g, k_r, k_k = jax.random.split(key, 3)
    K = hyper.MATERN.k(hyper.kernel_params(h), X, X)
    out = {f"gssbo_{rule}": subset.gssbo_subset(rule, k_g, h, X, y, valid, forced, buffer, 0.01) for rule in RULES}
    out["rssbo"] = subset.random_subset(k_r, valid, forced, buffer)
    out["kmeans_pp"] = subset.kmeanspp_subset(k_k, K, valid, forced, buffer)
    return out


def counts(x, f, keep) -> dict:
    """How near the optimum the kept rows ``keep`` of samples x (n, d), f (n,) are."""
    best = set(np.argsort(f, kind="stable")[: len(f) // 4].tolist())
    dist = np.linalg.norm(x[keep] - HARTMANN6_XOPT, axis=1)
    return {"kept": int(len(keep)), "best_quarter": int(sum(int(i) in best for i in keep)),
            "mean_dist": float(dist.mean()), "best_f": float(f[keep].min())}


def compute(n: int, buffer: int, n0: int, seeds: int, quick: bool) -> dict:
    if not n0 < buffer < n:
        raise ValueError(f"--n0={n0}, --buffer={buffer}, --n={n}: need n0 < buffer < n")
    if seeds < 1:
        raise ValueError(f"--seeds={seeds}: need at least 1")
    problem = make_problem("hartmann6")
    params = {"n0": n0, "gp_core": "protocol", **(QUICK if quick else {})}  # the paper protocol's GP core
    res = sb.run("std_gp_ucb", problem, T=n, n_seeds=seeds, seed=0, params=params, progress=False)
    X, y = jnp.asarray(res.traces["x"]), jnp.asarray(res.traces["reward"])  # (seeds, n, d), (seeds, n)
    keys = jax.vmap(jax.random.key)(jnp.arange(seeds))
    chosen = jax.jit(jax.vmap(lambda k, x, r: seed_subsets(k, x, r, n0, buffer)))(keys, X, y)
    X, f = np.asarray(X), -np.asarray(y)
    rows, subsets0 = [], {}
    for s in range(seeds):
        for name in SUBSETS:
            idx, mask = (np.asarray(a[s]) for a in chosen[name])
            keep = idx[mask]
            rows.append({"seed": s, "subset": name, **counts(X[s], f[s], keep)})
            if s == 0:
                subsets0[name] = keep.tolist()
    return {"rows": rows, "seed0": {"x": X[0].tolist(), "f": f[0].tolist(), "keep": subsets0},
            "f_min": problem.f_min, "x_opt": HARTMANN6_XOPT.tolist()}


def meta(argv) -> dict:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=Path(__file__).parent).stdout.strip()
    return {"date": datetime.date.today().isoformat(), "commit": commit, "machine": platform.platform(),
            "cpus": os.cpu_count(), "jax": jax.__version__, "argv": list(argv)}


def main(argv=None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help=f"directory for {FILENAME}")
    parser.add_argument("--n", type=int, default=200, help="GP-UCB samples (default 200)")
    parser.add_argument("--buffer", type=int, default=100, help="subset size (default 100)")
    parser.add_argument("--n0", type=int, default=20, help="uniform initial design (default 20)")
    parser.add_argument("--seeds", type=int, default=1, help="seeds 0 .. S-1 of the GP-UCB runs and subsets")
    parser.add_argument("--quick", action="store_true", help="small acquisition candidate sets")
    args = parser.parse_args(argv)
    settings = {"n": args.n, "buffer": args.buffer, "n0": args.n0, "seeds": args.seeds, "quick": args.quick,
                "rules": list(RULES)}
    path = args.out / FILENAME
    if stored_settings(path) == settings:
        print(f"skipping: complete results in {path}")
        return path
    try:
        record = compute(args.n, args.buffer, args.n0, args.seeds, args.quick)
    except ValueError as err:
        parser.error(str(err))
    record = {"settings": settings, "meta": meta(sys.argv if argv is None else argv), **record}
    tracking.atomic_write_text(path, json.dumps(record, indent=1) + "\n")
    print(f"wrote {path}")
    return path


if __name__ == "__main__":
    main()
