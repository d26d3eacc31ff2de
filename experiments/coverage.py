"""Empirical coverage of confidence bounds: exact GP, Nyström with BKB's beta, Nyström with Vakili's beta.

Setting (Vakili et al., ICML 2022, Thm 3.5; docs/algorithms.md#sparse-confidence-bounds; our choices are stored in
the file):

* arms: ``n_arms`` points uniform in [-1, 1]^2 (fixed by ``seed``); rbf kernel with width ``sigma2``;
* f of known RKHS norm (Assumption 3.3): f = sum_j alpha_j k(., z_j) over ``n_centers`` centres drawn among
  the arms, alpha ~ N(0, I) rescaled so that ||f||_k = sqrt(alpha^T K_zz alpha) = C_k exactly;
* data chosen independently of the noise (Thm 3.5's assumption): ``n_obs`` arms drawn uniformly with
  replacement, y = f(x) + N(0, R^2) with R = tau (xi^2 = lam, docs/protocols.md#finite-arm-protocol), tau^2 = lam;
* inducing points: recursive RLS (``sketchbo.gp.rls``, q-bar = ``qbar``) on the data;
* bounds at nominal level 1 - delta for a fixed arm, as the fraction of arms x with |f(x) - mu(x)| <= width(x):
  - exact GP (the dictionary holding every pulled arm), beta = C_k + (R/tau) sqrt(2 log(1/delta)) (Vakili 2021a);
  - Nyström, BKB's beta (the public code's, ``common.beta_bkb`` mode code with t = n, C_k = F): width
    beta_BKB s~ with s~ = sigma-bar / sqrt(lam);
  - Nyström, Vakili's beta (Thm 3.5) with the measured lambda_max: width beta sigma-bar;
  and, for Thm 3.5 with the union bound delta/|X|, whether the bound holds at every arm at once.

Each trial is a pure function of a key (:func:`trial`), vmapped over ``n_trials`` keys.
``python experiments/coverage.py --out results/quick/coverage`` writes ``coverage.npz`` there (an existing
file with the same settings is kept); ``scripts/plot_coverage.py`` draws it.
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
from sketchbo.algorithms.common import beta_bkb  # noqa: E402
from sketchbo.algorithms.sparse_ucb import SparseUCBParams  # noqa: E402
from sketchbo.gp import nystrom, rls, sparse_bounds  # noqa: E402
from sketchbo.kernels import get_kernel, kernel_params  # noqa: E402

FILENAME = "coverage.npz"
VERSION = 1  # raise when the computation changes so that old files are recomputed
DEFAULTS = {"n_arms": 200, "n_obs": 100, "n_centers": 8, "sigma2": 1.0, "lam": 0.2, "C_k": 1.0, "qbar": 0.5,
            "n_trials": 200, "seed": 0, "deltas": [0.5, 0.3, 0.2, 0.1, 0.05, 0.01]}
METHODS = ("exact", "nystrom_bkb", "nystrom_vakili")
KERNEL = get_kernel("rbf")


def make_arms(n_arms, seed):
    return jnp.asarray(np.random.default_rng(seed).uniform(-1.0, 1.0, (n_arms, 2)))


def rkhs_function(key, arms, kparams, n_centers, C_k):
    """f = sum_j alpha_j k(., z_j) with ||f||_k = C_k: (f on the arms (A,), its RKHS norm)."""
    k_c, k_a = jax.random.split(key)
    centers = arms[jax.random.choice(k_c, arms.shape[0], (n_centers,), replace=False)]
    alpha = jax.random.normal(k_a, (n_centers,), dtype=arms.dtype)
    norm = jnp.sqrt(alpha @ KERNEL.k(kparams, centers, centers) @ alpha)
    alpha = alpha * C_k / norm
    return KERNEL.k(kparams, arms, centers) @ alpha, jnp.sqrt(alpha @ KERNEL.k(kparams, centers, centers) @ alpha)


def trial(key, arms, kparams, deltas, n_obs, n_centers, lam, C_k, qbar, u_max):
    """One trial: per method and delta, the fraction of arms covered; and whether Thm 3.5 with delta/|X|
    holds at every arm. Returns a dict of arrays ``{method: (n_deltas,)}, "all_arms": (n_deltas,) bool,
    "lam_max", "m", "n_unique"``."""
    A = arms.shape[0]
    k_f, k_x, k_y, k_z = jax.random.split(key, 4)
    f, _ = rkhs_function(k_f, arms, kparams, n_centers, C_k)
    tau = jnp.sqrt(lam)
    pulls = jax.random.randint(k_x, (n_obs,), 0, A)
    y = f[pulls] + tau * jax.random.normal(k_y, (n_obs,), dtype=arms.dtype)  # R = tau
    counts = jnp.zeros((A,), arms.dtype).at[pulls].add(1.0)
    ysum = jnp.zeros((A,), arms.dtype).at[pulls].add(y)
    kdiag = KERNEL.diag(kparams, arms)
    p_idx, p_mask, n_unique = nystrom.pulled_list(counts, u_max)
    sample = rls.recursive_rls(k_z, KERNEL, kparams, arms, kdiag, p_idx, p_mask, counts, lam, 0.1, u_max,
                               rls.n_levels(u_max), c_base=12.0 * qbar, c_os=qbar)
    sparse = sparse_bounds.svgp_statistics(KERNEL, kparams, arms, kdiag, sample.idx, sample.mask, p_idx, p_mask,
                                           counts, ysum, lam)
    ex_idx, ex_mask, _ = nystrom.exact_dictionary(counts, u_max)
    exact = sparse_bounds.svgp_statistics(KERNEL, kparams, arms, kdiag, ex_idx, ex_mask, p_idx, p_mask, counts,
                                          ysum, lam)
    lam_max = sparse_bounds.lambda_max(KERNEL, kparams, arms, sparse.post.W, sample.idx, sample.mask, p_idx,
                                       p_mask, counts)
    log_inv = -jnp.log(deltas)  # (n_deltas,)
    params = SparseUCBParams(lam=lam, qbar=qbar, C=1.0, F=C_k, delta=deltas, xi=tau, kernel=kparams)
    b_exact = sparse_bounds.beta_exact(tau, C_k, tau, log_inv)
    b_bkb = beta_bkb("code", params, n_obs, jnp.sum(counts * sparse.post.var), 1.0)  # lam-scaled units
    b_vak = sparse_bounds.beta(lam_max, tau, C_k, tau, log_inv)

    def covered(mean, width):  # (n_deltas, A) -> fraction of arms per delta
        return jnp.mean((jnp.abs(f - mean)[None, :] <= width).astype(f.dtype), axis=1)

    sd_sparse, sd_exact = jnp.sqrt(sparse.var), jnp.sqrt(exact.var)
    out = {
        "exact": covered(exact.mean, b_exact[:, None] * sd_exact[None, :]),
        "nystrom_bkb": covered(sparse.mean, b_bkb[:, None] * jnp.sqrt(sparse.post.var)[None, :]),
        "nystrom_vakili": covered(sparse.mean, b_vak[:, None] * sd_sparse[None, :]),
    }
    b_union = sparse_bounds.beta(lam_max, tau, C_k, tau, sparse_bounds.log_inv_delta_finite(deltas, A))
    out["all_arms"] = jnp.all(jnp.abs(f - sparse.mean)[None, :] <= b_union[:, None] * sd_sparse[None, :], axis=1)
    out.update(lam_max=lam_max, m=jnp.sum(sample.mask), n_unique=n_unique, wanted=sample.wanted)
    return out


# Trials run one after another (lax.map), not vmapped: a vmap batches the eigh of every trial into one LAPACK
# call that jaxlib 0.10.2 splits over its CPU thread pool (jax::ParallelBatchMap), and two such calls running at
# once can wait on each other for ever (seen under gdb: both pool threads parked in ParallelBatchMap's
# BlockingCounter). Reproduced with one vmap over >= 64 trials, and under load with 25-trial chunks.


def run_trials(n_arms, n_obs, n_centers, sigma2, lam, C_k, qbar, n_trials, seed, deltas):
    """Every trial, one after another in one program (see above); numpy arrays with a leading trial axis."""
    arms = make_arms(n_arms, seed)
    kparams = kernel_params("rbf", 2, sigma2=sigma2)
    u_max = min(n_arms, n_obs)
    keys = jax.random.split(jax.random.key(seed), n_trials)
    fn = jax.jit(lambda ks: jax.lax.map(
        lambda k: trial(k, arms, kparams, jnp.asarray(deltas), n_obs, n_centers, lam, C_k, qbar, u_max), ks))
    out = {k: np.asarray(v) for k, v in fn(keys).items()}
    if np.any(out["wanted"] > u_max):
        raise RuntimeError("the RLS sample overflowed its capacity")  # cannot happen: u_max = all data
    return out


def settings_of(**kw) -> dict:
    return {"version": VERSION, **{k: (sorted(map(float, v), reverse=True) if k == "deltas" else v)
                                   for k, v in sorted(kw.items())}}


def main(argv=None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help=f"directory for {FILENAME}")
    for name, value in DEFAULTS.items():
        if name == "deltas":
            parser.add_argument("--deltas", type=float, nargs="+", default=value, help="confidence levels delta")
        else:
            parser.add_argument(f"--{name.replace('_', '-')}", type=type(value), default=value,
                                help=f"default {value}")
    args = parser.parse_args(argv)
    kw = {name: getattr(args, name) for name in DEFAULTS}
    if not all(0 < d < 1 for d in kw["deltas"]):
        parser.error(f"--deltas={kw['deltas']} is invalid; every delta must be in (0, 1)")
    settings = settings_of(**kw)
    path = args.out / FILENAME
    try:
        with np.load(path) as npz:
            stored = json.loads(str(npz["settings"]))
    except (OSError, ValueError, KeyError):
        stored = None
    if stored == settings:
        print(f"skipping: complete results in {path}")
        return path
    kw["deltas"] = settings["deltas"]
    out = run_trials(**kw)
    tracking.atomic_savez(path, deltas=np.asarray(kw["deltas"]), settings=np.asarray(json.dumps(settings)), **out)
    means = ", ".join(f"{m}: {out[m].mean(axis=0).round(4).tolist()}" for m in METHODS)
    print(f"wrote {path} (coverage per delta {kw['deltas']}: {means}; all arms, union bound: "
          f"{out['all_arms'].mean(axis=0).round(4).tolist()}; lambda_max/tau^2 max {out['lam_max'].max() / kw['lam']:.2e})")
    return path


if __name__ == "__main__":
    main()
