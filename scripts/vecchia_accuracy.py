"""How far VecchiaBO's predictions are from the exact GP's on a run's own samples (a diagnostic of GSSBO Fig. 2).

Takes the first n samples of one seed of a continuous-domain run (``traces.npz``: ``x`` and ``reward``), fits
the exact GP's hyperparameters to them (``hyper.fit``, Matérn-5/2 ARD, from the default start), and with those
same hyperparameters compares, on uniform candidates in the box, the exact posterior with the Vecchia
prediction of ``sketchbo.algorithms.vecchia_bo`` (each candidate conditioned on its m nearest samples) for
every m asked for: the median and largest |mean difference| in units of sd(y), the 5th-95th percentiles of
the ratio of the standard deviations, and how much exact UCB the Vecchia UCB's argmax gives up (in sd(y);
beta_t = 0.2 d log(2n), docs/protocols.md#box-protocol). With m = n the prediction is the exact one::

    python scripts/vecchia_accuracy.py --results "results/paper/gssbo_fig2/T=1000,algorithm=gssbo,n_seeds=10,problem=hartmann6" \\
        --seed 0 --n 300 --m 8 32 64 128 256 300
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from sketchbo.algorithms import vecchia_bo  # noqa: E402
from sketchbo.gp import hyper  # noqa: E402

PROG = "vecchia_accuracy.py"


def compare(X, y, ms, n_candidates: int = 2048, fit_steps: int = 300, key: int = 0):
    """(rows, h): one row per m comparing the exact and Vecchia predictions at ``n_candidates`` uniform points,
    both with the hyperparameters h fitted by the exact GP."""
    n, d = X.shape
    mask = jnp.ones(n, bool)
    h, _ = jax.jit(lambda h0: hyper.fit(h0, X, y, mask, fit_steps, 0.05))(hyper.init_hyper(d, X.dtype))
    cand = jax.random.uniform(jax.random.key(key), (n_candidates, d), dtype=X.dtype)
    mean_e, var_e = hyper.predict(hyper.posterior(h, X, y, mask), cand)
    scale = float(jnp.std(y))
    root_beta = float(np.sqrt(0.2 * d * np.log(2.0 * n)))
    ucb_e = np.asarray(mean_e + root_beta * jnp.sqrt(var_e))
    rows = []
    for m in ms:
        predict = jax.jit(vecchia_bo.vecchia_predict(h, X, y, mask, m))
        step = max(1, 2 ** 26 // (m * m))  # candidates per call: their m x m sets take at most 512 MB
        parts = [predict(cand[i:i + step]) for i in range(0, n_candidates, step)]
        mean_v, var_v = (jnp.concatenate([p[k] for p in parts]) for k in (0, 1))
        err = np.abs(np.asarray(mean_e - mean_v)) / scale
        ratio = np.sqrt(np.asarray(var_v) / np.maximum(np.asarray(var_e), 1e-300))
        pick = int(jnp.argmax(mean_v + root_beta * jnp.sqrt(var_v)))
        rows.append({"m": m, "mean_err_median": float(np.median(err)), "mean_err_max": float(err.max()),
                     "sd_ratio_p5": float(np.percentile(ratio, 5)), "sd_ratio_p95": float(np.percentile(ratio, 95)),
                     "ucb_loss": float((ucb_e.max() - ucb_e[pick]) / scale)})
    return rows, h


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, required=True, help="a run directory holding traces.npz")
    parser.add_argument("--seed", type=int, default=0, help="index of the seed in the run (default 0)")
    parser.add_argument("--n", type=int, default=300, help="the first n samples (default 300)")
    parser.add_argument("--m", type=int, nargs="+", default=[8, 32, 64], help="conditioning-set sizes")
    args = parser.parse_args(argv)
    try:
        with np.load(args.results / "traces.npz") as traces:
            x, reward = traces["x"], traces["reward"]
    except (OSError, KeyError, ValueError) as err:
        parser.error(f"cannot read x and reward from {args.results / 'traces.npz'} ({err}); give a continuous-domain "
                     "run directory")
    if not 0 <= args.seed < x.shape[0] or not 2 <= args.n <= x.shape[1]:
        parser.error(f"--seed {args.seed} / --n {args.n}: the run has {x.shape[0]} seeds and {x.shape[1]} samples each")
    bad = [m for m in args.m if not 1 <= m <= args.n]
    if bad:
        parser.error(f"--m {bad}: every m must be in [1, n = {args.n}]")
    X, y = jnp.asarray(x[args.seed, :args.n], jnp.float64), jnp.asarray(reward[args.seed, :args.n], jnp.float64)
    rows, h = compare(X, y, args.m)
    print(f"{args.results.name}, seed index {args.seed}, first {args.n} samples; exact-GP MLE lengthscales "
          f"{np.round(np.exp(np.asarray(h.log_ls)), 3).tolist()}, noise {float(jnp.exp(h.log_noise)):.1e}")
    print("| m | mean diff / sd(y), median | max | sd ratio Vecchia / exact, 5%–95% | exact UCB lost at Vecchia's argmax / sd(y) |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['m']} | {r['mean_err_median']:.2e} | {r['mean_err_max']:.2e} | {r['sd_ratio_p5']:.3f}–"
              f"{r['sd_ratio_p95']:.3f} | {r['ucb_loss']:.3f} |")
    return rows


if __name__ == "__main__":
    main()
