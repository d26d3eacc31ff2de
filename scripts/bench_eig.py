"""Symmetric eigensolvers for the dictionary's m x m algebra: LAPACK/cuSOLVER ``eigh`` against the cyclic
Jacobi of ``linalg.jacobi_eigh`` (issue 15), in float64.

For each m: an RBF kernel matrix of m points (the dictionary kernel K_S of BBKB, d = 3, width 0.5), solved
once (``single``) and for ``--seeds`` such matrices in one vmapped call (``vmap``). Each entry is the median
of ``--repeats`` jitted calls after one warm-up call (compilation excluded), with the largest reconstruction
error ||V diag(w) V^T - A|| / ||A|| of Jacobi. ``--convergence`` adds, per m, the sweeps Jacobi needs
before its off-diagonal part is below 10 m eps ||A|| (random SPD and kernel matrices; ``linalg.default_sweeps``).

    python scripts/bench_eig.py                                  # m = 32, 64, 128; 10 seeds
    python scripts/bench_eig.py --m 8 16 --seeds 2 --repeats 2 --out /tmp/eig.json

Prints a table and writes the JSON (``--out``, default ``results/bench_eig.json``). XLA on CPU slows down
many times when other processes compete for the cores: the table states the load average.
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path

import sketchbo  # noqa: F401  (first: sets OPENBLAS_NUM_THREADS before numpy loads OpenBLAS)
import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from bench import machine_info, median_time  # noqa: E402  (scripts/bench.py)

from sketchbo import linalg  # noqa: E402
from sketchbo.cli import tracking

REPO = Path(__file__).resolve().parent.parent


def kernel_matrices(m: int, n: int, seed: int = 0, d: int = 3, width: float = 0.5) -> np.ndarray:
    """(n, m, m) RBF kernel matrices of m uniform points in [0, 1]^d."""
    X = np.random.default_rng(seed).uniform(size=(n, m, d))
    return np.exp(-((X[:, :, None] - X[:, None]) ** 2).sum(-1) / (2 * width ** 2))


def reconstruction_error(A, w, V) -> float:
    A, w, V = (np.asarray(x) for x in (A, w, V))
    R = np.einsum("...ij,...j,...kj->...ik", V, w, V) - A
    return float(np.max(np.linalg.norm(R, axis=(-2, -1)) / np.linalg.norm(A, axis=(-2, -1))))


def measure(m: int, seeds: int, repeats: int) -> dict:
    A = jnp.asarray(kernel_matrices(m, seeds))
    solvers = {"eigh": jnp.linalg.eigh, "jacobi": linalg.jacobi_eigh}
    row = {"m": m, "seeds": seeds}
    for name, solve in solvers.items():
        single, batched = jax.jit(solve), jax.jit(jax.vmap(solve))
        row[f"{name}_single_ms"] = 1e3 * median_time(lambda: single(A[0]), repeats)
        row[f"{name}_vmap_ms"] = 1e3 * median_time(lambda: batched(A), repeats)
        row[f"{name}_recon_err"] = reconstruction_error(A, *batched(A))
    row["jacobi_over_eigh_single"] = row["jacobi_single_ms"] / row["eigh_single_ms"]
    row["jacobi_over_eigh_vmap"] = row["jacobi_vmap_ms"] / row["eigh_vmap_ms"]
    return row


def sweeps_needed(A: np.ndarray, max_sweeps: int = 30) -> int:
    """Fewest sweeps after which Jacobi's off-diagonal part is <= 10 m eps ||A||_F (max_sweeps + 1 if never)."""
    m = A.shape[0]
    n = m + m % 2
    tol = 10 * m * np.finfo(A.dtype).eps * np.linalg.norm(A)
    sweep = jax.jit(lambda B, V: linalg.jacobi_sweeps(B, V, 1, unroll=False))
    B, V = jnp.pad(jnp.asarray(A), ((n - m, 0), (n - m, 0))), jnp.eye(n, dtype=A.dtype)
    for k in range(1, max_sweeps + 1):
        B, V = sweep(B, V)
        Bn = np.asarray(B)
        if np.linalg.norm(Bn - np.diag(np.diag(Bn))) <= tol:
            return k
    return max_sweeps + 1


def convergence(m: int) -> dict:
    rng = np.random.default_rng(m)
    X = rng.standard_normal((m, m))
    cases = {"random_spd": X @ X.T / m}
    for d, width in ((8, 2.0), (3, 0.5), (2, 0.3)):
        cases[f"rbf_d{d}_w{width}"] = kernel_matrices(m, 1, seed=m, d=d, width=width)[0]
    return {"m": m, **{name: sweeps_needed(A) for name, A in cases.items()},
            **{f"cond_{name}": float(np.linalg.cond(A)) for name, A in cases.items() if name != "random_spd"}}


def print_table(rows, machine) -> None:
    print(f"device {machine['device']}, {machine['cpu_count']} CPUs, load average at start "
          f"{machine['load_avg_start'][0]:.2f}, at end {machine['load_avg_end'][0]:.2f} (a shared machine: "
          "other processes compete for the cores, times are loaded)")
    s = rows[0]["seeds"]
    print(f"| m | eigh 1 (ms) | jacobi 1 (ms) | jacobi/eigh | eigh vmap {s} (ms) | jacobi vmap {s} (ms) | jacobi/eigh "
          "| jacobi err |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['m']} | {r['eigh_single_ms']:.3g} | {r['jacobi_single_ms']:.3g} | "
              f"{r['jacobi_over_eigh_single']:.2f} | {r['eigh_vmap_ms']:.3g} | {r['jacobi_vmap_ms']:.3g} | "
              f"{r['jacobi_over_eigh_vmap']:.2f} | {r['jacobi_recon_err']:.1e} |")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--m", type=int, nargs="+", default=[32, 64, 128], help="matrix sizes (each >= 1)")
    ap.add_argument("--seeds", type=int, default=10, help="matrices in the vmapped call")
    ap.add_argument("--repeats", type=int, default=7, help="timed calls per entry (median reported)")
    ap.add_argument("--convergence", action="store_true", help="also count the sweeps Jacobi needs")
    ap.add_argument("--out", default=str(REPO / "results" / "bench_eig.json"))
    args = ap.parse_args(argv)
    for name in ("m", "seeds", "repeats"):
        value = getattr(args, name)
        if min(value if isinstance(value, list) else [value]) < 1:
            ap.error(f"--{name}: must be >= 1, got {value}")
    machine = machine_info()
    rows = [measure(m, args.seeds, args.repeats) for m in args.m]
    machine["load_avg_end"] = list(os.getloadavg())
    print_table(rows, machine)
    report = {"machine": machine, "repeats": args.repeats, "default_sweeps": linalg.default_sweeps(jnp.float64),
              "rows": rows}
    if args.convergence:
        report["convergence"] = [convergence(m) for m in args.m]
        print("sweeps to 10 m eps ||A|| (float64):")
        for c in report["convergence"]:
            print("  " + ", ".join(f"{k}={v:.1e}" if k.startswith("cond") else f"{k}={v}" for k, v in c.items()))
    tracking.atomic_write_json(Path(args.out), report)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
