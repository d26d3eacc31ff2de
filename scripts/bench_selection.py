"""Per-round cost of GSSBO's subset selection (Wei et al. 2025, Alg. 1 L12-14) at n samples.

Times, on one seed's buffer of n samples of Hartmann6 (d = 6, M = 102 as Z = 4 gives):
- the inverse of the n x n kernel matrix that the gradient vectors need, as a Cholesky solve against the
  identity (the textbook way) and as ``linalg.spd_inverse`` (blocked triangular inverse, then X X^T: what
  ``subset.gradient_vectors`` uses), with the largest relative difference between the two;
- GSSBO's three named rules (docs/protocols.md#gssbo-subset-rules): ``projection`` and ``cosine`` (gradient
  vectors + greedy selection;
  ``cosine_rule_ms``) and ``pivoted`` (pivoted Cholesky on K).
Each entry: the median of ``--repeats`` jitted calls after one warm-up call (compilation excluded).

    python scripts/bench_selection.py                      # n = 256, 512, 1008
    python scripts/bench_selection.py --n 128 --repeats 3 --out results/bench_selection.json

Prints a table and writes the JSON (``--out``, default ``results/bench_selection.json``).
"""
from __future__ import annotations

import argparse
from pathlib import Path

import sketchbo  # noqa: F401  (first: sets OPENBLAS_NUM_THREADS before numpy loads OpenBLAS)
import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from bench import machine_info, median_time  # noqa: E402  (scripts/bench.py)

from sketchbo import linalg  # noqa: E402
from sketchbo.cli import tracking
from sketchbo.gp import hyper, subset  # noqa: E402
from sketchbo.problems import continuous as cproblems  # noqa: E402
from sketchbo.problems import make_problem  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
M, N0 = 102, 20


def median_ms(fn, args, repeats: int) -> float:
    return 1e3 * median_time(lambda: fn(*args), repeats)


def measure(n: int, repeats: int) -> dict:
    problem = make_problem("hartmann6")
    X = jax.random.uniform(jax.random.key(n), (n, problem.d), jnp.float64)
    y = -jax.vmap(lambda u: cproblems.value(problem, u))(X)
    valid = jnp.ones((n,), bool)
    forced = subset.forced_rows(n, N0, n)
    h = hyper.init_hyper(problem.d, jnp.float64, lengthscale=0.3)
    L = jax.jit(lambda: jnp.linalg.cholesky(hyper.masked_kernel(h, X, valid)))()
    eye = jnp.eye(n, dtype=jnp.float64)
    solve = jax.jit(lambda L: jax.scipy.linalg.cho_solve((L, True), eye))
    product = jax.jit(linalg.spd_inverse)
    def rule(name):
        return jax.jit(lambda key: subset.gssbo_subset(name, key, h, X, y, valid, forced, M, 0.01))
    ref, new = np.asarray(solve(L)), np.asarray(product(L))
    row = {"n": n, "M": M,
           "cho_solve_inverse_ms": median_ms(solve, (L,), repeats),
           "product_inverse_ms": median_ms(product, (L,), repeats),
           "inverse_max_rel_diff": float(np.max(np.abs(new - ref)) / np.max(np.abs(ref))),
           "cosine_rule_ms": median_ms(rule("cosine"), (jax.random.key(0),), repeats),
           "projection_rule_ms": median_ms(rule("projection"), (jax.random.key(0),), repeats),
           "pivoted_rule_ms": median_ms(rule("pivoted"), (jax.random.key(0),), repeats)}
    row["inverse_speedup"] = row["cho_solve_inverse_ms"] / row["product_inverse_ms"]
    return row


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[256, 512, 1008], help="buffer sizes (each > 102)")
    ap.add_argument("--repeats", type=int, default=7, help="timed calls per entry (median reported)")
    ap.add_argument("--out", default=str(REPO / "results" / "bench_selection.json"))
    args = ap.parse_args(argv)
    if any(n <= M for n in args.n):
        ap.error(f"--n: every size must exceed M = {M}, got {args.n}")
    if args.repeats < 1:
        ap.error(f"--repeats: must be >= 1, got {args.repeats}")
    rows = [measure(n, args.repeats) for n in args.n]
    cols = ["n", "cho_solve_inverse_ms", "product_inverse_ms", "inverse_speedup", "inverse_max_rel_diff",
            "cosine_rule_ms", "projection_rule_ms", "pivoted_rule_ms"]
    print(" | ".join(cols))
    for r in rows:
        print(" | ".join(f"{r[c]:.3g}" if isinstance(r[c], float) else str(r[c]) for c in cols))
    report = {"machine": machine_info(), "repeats": args.repeats, "rows": rows}
    tracking.atomic_write_json(Path(args.out), report)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
