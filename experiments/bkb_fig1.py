"""BKB Fig. 1 (COLT 2019): variance starvation on a 1-D GP — compute the posteriors, save them as .npz.

Setting (docs/protocols.md#bkb-figure-1; the choices the paper leaves open are stated here and stored in the file):

* arms: 1000 points evenly spaced on [0, 1];
* kernel: k(x, x') = exp(-(x - x')² · 100 / 2), i.e. the paper's "bandwidth σ² = 100" read as a
  precision (sketchbo's rbf kernel with sigma2 = 1/100, a length scale of 0.1);
* f: one draw from the GP prior with this kernel (``--seed``, default 0);
* observations: t_max = 215 points drawn uniformly in [0, 0.5], each snapped to the nearest arm, with
  feedback y = f(x) + N(0, λ), λ = 0.01 (noise standard deviation 0.1); the panels t ∈ {6, 63, 215}
  use the first t of them (nested histories, as a sequential algorithm would have);
* three posteriors from the same t observations, all variances in GP units:
  - the exact GP (``sketchbo.gp.exact.dense_posterior``, noise variance λ);
  - BKB's DTC posterior on a dictionary drawn by BKB's rule (``nystrom.resample_dictionary``: each
    pulled arm kept with probability min(1, q̄ · n_i · σ²_t(x_i)/λ), q̄ = 2, σ²_t the exact variance:
    the rule of the public code with exact rather than sketched variances):
    σ̃²(x) = k(x, x) − z(x)ᵀz(x) + λ·z(x)ᵀV⁻¹z(x), z(x) = K_S^{+1/2} k_S(x), V = Σ_i n_i z_i z_iᵀ + λI
    (BBKB Eq. (2) times λ: sketchbo's Nyström variances are λ-scaled). It is computed here in the
    embedded form with V as a Gram matrix of the embedded pulled arms (:func:`sketched_posterior`,
    an independent computation of what ``nystrom.posterior`` returns; tests check they agree, on this
    figure's own grid too, where the dictionary holds near-duplicate points and K_S has eigenvalues near
    1e-14: within 1e-5 at every panel, finite everywhere);
  - subset of regressors (SoR) on the same dictionary: the same mean and the variance
    λ·z(x)ᵀV⁻¹z(x), i.e. DTC without the k(x, x) − z(x)ᵀz(x) term. It collapses to 0 away from the
    dictionary (variance starvation), where DTC and the exact GP return to the prior variance 1.

``python experiments/bkb_fig1.py --out results/quick/bkb_fig1`` writes ``bkb_fig1.npz`` there (an
existing file computed with the same settings is kept); ``scripts/plot_bkb_fig1.py`` draws it.
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
from sketchbo.gp import exact, nystrom  # noqa: E402
from sketchbo.kernels import get_kernel, kernel_params  # noqa: E402
from sketchbo.linalg import psd_inv_sqrt  # noqa: E402

FILENAME = "bkb_fig1.npz"
VERSION = 1  # stored with the settings; raise it when the computation changes so that old files are recomputed
DEFAULTS = {"n_arms": 1000, "ts": [6, 63, 215], "lam": 0.01, "precision": 100.0, "qbar": 2.0, "seed": 0,
            "interval": [0.0, 0.5]}


def draw_function(K: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One draw from N(0, K) through the eigendecomposition (K on a fine grid is numerically singular)."""
    evals, U = np.linalg.eigh(K)
    return U @ (np.sqrt(np.clip(evals, 0.0, None)) * rng.standard_normal(K.shape[0]))


def sketched_posterior(kernel, kparams, arms, S, counts, ysum, lam):
    """BKB's DTC posterior and the SoR variance on the dictionary ``S`` (arm indices), in GP units.

    The embedded form of BBKB Eqs. (1)-(2) (as ``nystrom.embedded_variance``): z(x) = W k_S(x) with
    W = K_S^{+1/2} (``sketchbo.linalg.psd_inv_sqrt``), V = Σ_i n_i z_i z_iᵀ + λI formed as a Gram matrix of
    the embedded pulled arms, μ̃(x) = z(x)ᵀV⁻¹Σ_i z_i Y_i, and, multiplied by λ into GP units,
    DTC σ̃²(x) = k(x, x) − z(x)ᵀz(x) + λ z(x)ᵀV⁻¹z(x) and SoR σ²(x) = λ z(x)ᵀV⁻¹z(x).
    Returns ``(mean, dtc_var, sor_var)``, each (A,) numpy.
    """
    S = jnp.asarray(S, dtype=jnp.int32)
    W, _ = psd_inv_sqrt(kernel.k(kparams, arms[S], arms[S]), jnp.ones(S.shape[0], dtype=bool))
    Z = np.asarray(kernel.k(kparams, arms, arms[S]) @ W.T)  # (A, m) rows z(x)
    pulled = np.nonzero(counts > 0)[0]
    Zu = Z[pulled]
    V = Zu.T @ (counts[pulled, None] * Zu) + lam * np.eye(Z.shape[1])
    L = np.linalg.cholesky(V)
    B = np.linalg.solve(L, Z.T)  # L^{-1} z(x): z(x)ᵀV⁻¹z(x) = ||B[:, x]||²
    mean = Z @ np.linalg.solve(L.T, np.linalg.solve(L, Zu.T @ ysum[pulled]))
    sor = lam * np.sum(B * B, axis=0)
    dtc = np.asarray(kernel.diag(kparams, arms)) - np.sum(Z * Z, axis=1) + sor
    return mean, np.clip(dtc, 0.0, None), sor


def compute(n_arms=1000, ts=(6, 63, 215), lam=0.01, precision=100.0, qbar=2.0, seed=0, interval=(0.0, 0.5)) -> dict:
    """The arrays of ``bkb_fig1.npz`` (means and GP-unit variances of the three posteriors per t)."""
    ts = sorted(int(t) for t in ts)
    if n_arms < 2 or not ts or ts[0] < 1 or lam <= 0 or precision <= 0 or qbar <= 0:
        raise ValueError("need n_arms >= 2, t >= 1, lam > 0, precision > 0 and qbar > 0")
    rng = np.random.default_rng(seed)
    x = np.linspace(0.0, 1.0, n_arms)
    arms = jnp.asarray(x[:, None])
    kernel = get_kernel("rbf")
    kparams = kernel_params("rbf", 1, sigma2=1.0 / precision)  # exp(-(x - x')^2 / (2 sigma2)), sigma2 = 1/precision
    K = np.asarray(kernel.k(kparams, arms, arms))
    f = draw_function(K, rng)
    lo, hi = interval
    obs_idx = np.rint(rng.uniform(lo, hi, ts[-1]) * (n_arms - 1)).astype(np.int64)
    obs_y = f[obs_idx] + np.sqrt(lam) * rng.standard_normal(ts[-1])

    out = {key: [] for key in ("exact_mean", "exact_var", "bkb_mean", "bkb_var", "sor_var", "dict_size")}
    dicts = []
    for t in ts:
        counts = np.bincount(obs_idx[:t], minlength=n_arms).astype(np.float64)
        ysum = np.bincount(obs_idx[:t], weights=obs_y[:t], minlength=n_arms)
        mean, var = exact.dense_posterior(kernel, kparams, arms, counts, ysum, lam)
        n_unique = int(np.sum(counts > 0))
        key = jax.random.fold_in(jax.random.key(seed), t)
        dict_idx, dict_mask, wanted = nystrom.resample_dictionary(
            key, jnp.asarray(var) / lam, jnp.asarray(counts), qbar, False, n_unique)  # λ-scaled variances
        S = np.asarray(dict_idx)[np.asarray(dict_mask)]
        bkb_mean, bkb_var, sor_var = sketched_posterior(kernel, kparams, arms, S, counts, ysum, lam)
        out["exact_mean"].append(np.asarray(mean))
        out["exact_var"].append(np.clip(np.asarray(var), 0.0, None))
        out["bkb_mean"].append(bkb_mean)
        out["bkb_var"].append(bkb_var)
        out["sor_var"].append(sor_var)
        out["dict_size"].append(int(wanted))
        dicts.append(S)
    dict_idx = -np.ones((len(ts), max(1, max(d.size for d in dicts))), dtype=np.int64)
    for i, d in enumerate(dicts):
        dict_idx[i, :d.size] = d
    settings = settings_of(n_arms, ts, lam, precision, qbar, seed, interval)
    return {
        "x": x, "f": f, "ts": np.asarray(ts), "obs_idx": obs_idx, "obs_y": obs_y, "dict_idx": dict_idx,
        **{k: np.asarray(v) for k, v in out.items()},
        "lam": np.float64(lam), "precision": np.float64(precision), "qbar": np.float64(qbar),
        "settings": np.asarray(json.dumps(settings, sort_keys=True)),
    }


def settings_of(n_arms, ts, lam, precision, qbar, seed, interval) -> dict:
    """The settings stored in the file (as they read back from JSON); equal settings give equal files."""
    return {"version": VERSION, "n_arms": int(n_arms), "ts": sorted(int(t) for t in ts), "lam": float(lam),
            "precision": float(precision), "qbar": float(qbar), "seed": int(seed),
            "interval": [float(v) for v in interval]}


def stored_settings(path: Path):
    try:
        with np.load(path) as npz:
            return json.loads(str(npz["settings"]))
    except (OSError, ValueError, KeyError):
        return None


def main(argv=None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help=f"directory for {FILENAME}")
    parser.add_argument("--n-arms", type=int, default=DEFAULTS["n_arms"], help="grid arms on [0, 1] (default 1000)")
    parser.add_argument("--ts", type=int, nargs="+", default=DEFAULTS["ts"],
                        help="numbers of observations (default 6 63 215)")
    parser.add_argument("--lam", type=float, default=DEFAULTS["lam"], help="noise variance λ (default 0.01)")
    parser.add_argument("--precision", type=float, default=DEFAULTS["precision"],
                        help="kernel precision: k = exp(-(x - x')² · precision / 2) (default 100)")
    parser.add_argument("--qbar", type=float, default=DEFAULTS["qbar"], help="BKB oversampling q̄ (default 2)")
    parser.add_argument("--seed", type=int, default=DEFAULTS["seed"],
                        help="seed of f, the points, the noise and the dictionaries")
    args = parser.parse_args(argv)
    settings = settings_of(args.n_arms, args.ts, args.lam, args.precision, args.qbar, args.seed, DEFAULTS["interval"])
    path = args.out / FILENAME
    if stored_settings(path) == settings:
        print(f"skipping: complete results in {path}")
        return path
    try:
        arrays = compute(args.n_arms, args.ts, args.lam, args.precision, args.qbar, args.seed, DEFAULTS["interval"])
    except ValueError as err:
        parser.error(str(err))
    tracking.atomic_savez(path, **arrays)
    sizes = ", ".join(f"t={t}: |S|={m}" for t, m in zip(arrays["ts"], arrays["dict_size"]))
    print(f"wrote {path} ({sizes})")
    return path


if __name__ == "__main__":
    main()
