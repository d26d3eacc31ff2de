"""GSSBO Fig. 7 (Wei et al. 2025, App.): which samples each subset keeps on Hartmann6 — compute, save .npz.

Setting (App.: "the first 200 sequential samples from a standard BO process ... buffer size 100"):

* samples: the first ``--n`` (200) queries of Standard GP-UCB (``std_gp_ucb``, with the defaults of
  docs/protocols.md#box-protocol,
  ``--n0`` uniform initial points, seed ``--seed``) on Hartmann6;
* hyperparameters: Matérn-5/2 ARD fitted by maximum likelihood on all n samples (300 Adam steps from the
  default start; our choice — the paper does not say which model the selection used);
* subsets of ``--buffer`` (100) rows, each keeping the n0 initial samples and the newest:
  GSSBO's default rule (the registry's ``selection``; sigma_d^2 = 0.01), RSSBO's random choice and
  k-means++ in the RKHS (``sketchbo.gp.subset``).

``python experiments/gssbo_fig7.py --out results/quick/gssbo_fig7`` writes ``gssbo_fig7.npz`` there (an
existing file computed with the same settings is kept); ``scripts/plot_gssbo_fig7.py`` draws it.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import sketchbo  # noqa: F401  (first: sets OPENBLAS_NUM_THREADS before numpy loads OpenBLAS)
import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from sketchbo.cli import tracking  # noqa: E402
import sketchbo as sb  # noqa: E402
from sketchbo.algorithms import BO_ALGORITHMS  # noqa: E402
from sketchbo.gp import hyper, subset  # noqa: E402
from sketchbo.problems import make_problem  # noqa: E402

FILENAME = "gssbo_fig7.npz"
QUICK = {"n_uniform": 256, "n_local": 64}
# GSSBO's panel: its default subset rule (docs/protocols.md#gssbo-subset-rules)
RULE = BO_ALGORITHMS["gssbo"].defaults["selection"]


def stored_settings(path: Path):
    try:
        with np.load(path) as npz:
            return json.loads(str(npz["settings"]))
    except (OSError, KeyError, ValueError):
        return None


def compute(n: int, buffer: int, n0: int, seed: int, quick: bool) -> dict:
    if not n0 < buffer < n:
        raise ValueError(f"--n0={n0}, --buffer={buffer}, --n={n}: need n0 < buffer < n")
    problem = make_problem("hartmann6")
    params = {"n0": n0, "gp_core": "protocol", **(QUICK if quick else {})}  # the paper protocol's GP core
    res = sb.run("std_gp_ucb", problem, T=n, seed=seed, params=params, progress=False)
    X = jnp.asarray(res.traces["x"][0])
    y = jnp.asarray(res.traces["reward"][0])
    valid = jnp.ones((n,), bool)
    forced = subset.forced_rows(jnp.asarray(n), n0, n)

    @jax.jit
    def select(key):
        h, _ = hyper.fit(hyper.init_hyper(6), X, y, valid, 300, 0.05)
        k_g, k_r, k_k = jax.random.split(key, 3)
        K = hyper.MATERN.k(hyper.kernel_params(h), X, X)
        return (h, subset.gssbo_subset(RULE, k_g, h, X, y, valid, forced, buffer, 0.01),
                subset.random_subset(k_r, valid, forced, buffer), subset.kmeanspp_subset(k_k, K, valid, forced, buffer))

    h, g, r, k = select(jax.random.key(seed))
    keep = {name: np.asarray(idx)[np.asarray(mask)] for name, (idx, mask) in
            (("gssbo", g), ("rssbo", r), ("kmeans_pp", k))}
    return {"x": np.asarray(X), "f": -np.asarray(y), "f_min": problem.f_min, "lengthscales": np.exp(np.asarray(h.log_ls)),
            **{f"keep_{name}": idx for name, idx in keep.items()}}


def main(argv=None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help=f"directory for {FILENAME}")
    parser.add_argument("--n", type=int, default=200, help="GP-UCB samples (default 200)")
    parser.add_argument("--buffer", type=int, default=100, help="subset size (default 100)")
    parser.add_argument("--n0", type=int, default=20, help="uniform initial design (default 20)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the GP-UCB run and the subsets")
    parser.add_argument("--quick", action="store_true", help="small acquisition candidate sets")
    args = parser.parse_args(argv)
    settings = {"n": args.n, "buffer": args.buffer, "n0": args.n0, "seed": args.seed, "quick": args.quick,
                "selection": RULE}
    path = args.out / FILENAME
    if stored_settings(path) == settings:
        print(f"skipping: complete results in {path}")
        return path
    try:
        arrays = compute(args.n, args.buffer, args.n0, args.seed, args.quick)
    except ValueError as err:
        parser.error(str(err))
    tracking.atomic_savez(path, settings=json.dumps(settings), **arrays)
    print(f"wrote {path}")
    return path


if __name__ == "__main__":
    main()
