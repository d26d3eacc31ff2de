"""Every GP product runs at full float32 precision whatever the backend's default (docs/architecture.md#numerics,
issue 15).

GPUs run float32 matmuls in TF32 unless a dot asks for HIGHEST; the request is part of the lowered
program (StableHLO prints ``precision = [HIGHEST, HIGHEST]`` on ``dot_general``), on CPU too, so the test
reads it from the round program of every finite-arm algorithm lowered in float32.
"""
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sketchbo.algorithms import ALGORITHMS, Static, build, params_of, rule_name
from sketchbo.kernels import kernel_params
from sketchbo.linalg import mm
from sketchbo.problems import make_problem
from sketchbo.domains.finite import make_program

PROBLEM = make_problem("gp_sample", A=60, d=2, sigma2=0.2, seed=3)
FINITE = sorted(ALGORITHMS)
DOT = re.compile(r"stablehlo\.(dot_general|dot|convolution)\b")


def dots_below_highest(text: str) -> tuple[int, list[str]]:
    """(number of dots, the dots that do not ask for HIGHEST precision on both operands) of StableHLO text."""
    dots = [line.strip() for line in text.splitlines() if DOT.search(line)]
    return len(dots), [d for d in dots if "precision = [HIGHEST, HIGHEST]" not in d]


def test_the_check_flags_a_default_precision_product():
    a = jnp.ones((4, 3), jnp.float32)
    n, low = dots_below_highest(jax.jit(lambda x: x @ x.T).lower(a).as_text())
    assert n == 1 and len(low) == 1
    n, low = dots_below_highest(jax.jit(lambda x: jnp.einsum("ij,kj->ik", x, x)).lower(a).as_text())
    assert n == 1 and len(low) == 1
    n, low = dots_below_highest(jax.jit(lambda x: mm(x, x.T) + mm(x[0], x[1])).lower(a).as_text())
    assert n == 2 and low == []


def lowered_round(name: str) -> str:
    """StableHLO text of one chunk (two rounds) of the runner's program for ``name`` in float32."""
    spec = ALGORITHMS[name]
    static = Static(A=PROBLEM.arms.shape[0], d=2, T=20, m_max=16, u_max=32, kernel="rbf",
                    beta_family=spec.defaults.get("beta_family", "bbkb"), beta_mode="code", resample="code",
                    batch_rule=rule_name(spec, spec.defaults))
    alg = build(spec, static)
    init_fn, chunk_fn = make_program(alg, static.T, "map", rounds_per_call=2)
    f32 = jnp.float32
    values = dict(lam=0.2, qbar=2.0, C=2.0, F=1.0, delta=0.1, xi=0.2 ** 0.5, eps=0.1)
    params = params_of(name, **{k: jnp.full((1,), v, f32) for k, v in values.items()},
                       kernel={k: v[None] for k, v in kernel_params("rbf", 2, f32, sigma2=0.2).items()})
    seeds = jnp.zeros((1,), jnp.int64)  # one element, seed 0
    shared = (jnp.asarray(PROBLEM.arms, f32), jnp.asarray(PROBLEM.f, f32), None)  # arms, f, recorded
    elements = (params, jnp.full((1,), 0.2 ** 0.5, f32))  # (the algorithm's params, the noise level xi)
    carry, noise = init_fn(seeds, elements, shared)
    return chunk_fn.lower(seeds, carry, noise, elements, shared).as_text()


@pytest.mark.parametrize("name", FINITE)
def test_float32_round_program_has_no_default_precision_dot(name):
    text = lowered_round(name)
    assert "f32" in text
    n, low = dots_below_highest(text)
    assert low == [], f"{len(low)} of {n} dots below HIGHEST precision, e.g. {low[:2]}"
    if name != "eps_greedy":  # every GP engine multiplies matrices
        assert n > 0


def test_float32_bbkb_keeps_the_dictionary_algebra_in_float64():
    """The m x m algebra of a float32 run is in float64 (nystrom.factor_dtype); its O(A m) work in float32."""
    text = lowered_round("bbkb")
    assert "tensor<16x16xf64>" in text  # W, V^{-1}, B (m_max = 16)
    assert "tensor<60x16xf32>" in text  # the kernel block K_AS of the resparsification (A = 60)


def test_float32_posterior_with_float64_factors_matches_float64():
    """An ill-conditioned dictionary (wide rbf, 40 close points): the float32 posterior whose m x m algebra is in
    float64 keeps the full rank and stays close to the float64 one; the all-float32 path drops part of the rank."""
    from sketchbo.gp import nystrom
    from sketchbo.kernels import get_kernel

    kern = get_kernel("rbf")
    rng = np.random.default_rng(0)
    arms = rng.uniform(-1, 1, size=(400, 2))
    counts = np.zeros(400)
    counts[rng.choice(400, 60, replace=False)] = rng.integers(1, 5, 60)
    ysum = counts * np.sin(3 * arms[:, 0])
    idx = np.flatnonzero(counts)[:40]

    def post(dt, fdt):
        c = jnp.asarray(counts, dt)
        p_idx, p_mask, _ = nystrom.pulled_list(c, 64)
        X = jnp.asarray(arms, dt)
        return nystrom.posterior(kern, {"sigma2": jnp.asarray(1.0, dt)}, X, jnp.ones(400, dt), jnp.asarray(idx),
                                 jnp.ones(40, bool), p_idx, p_mask, c, jnp.asarray(ysum, dt), jnp.asarray(0.2, dt),
                                 fdtype=fdt)

    ref, mixed, f32 = post(jnp.float64, None), post(jnp.float32, jnp.float64), post(jnp.float32, None)
    assert mixed.B.dtype == jnp.float64 and mixed.var.dtype == jnp.float32 and int(mixed.rank) == int(ref.rank)
    assert int(f32.rank) < int(ref.rank)  # float32 threshold max_eig m eps_32 drops what float64 keeps
    for field in ("var", "mean"):
        err_mixed, err_f32 = (float(np.max(np.abs(np.asarray(getattr(p, field), np.float64) - getattr(ref, field))))
                              for p in (mixed, f32))
        assert err_mixed <= 1e-3 * float(np.max(np.abs(getattr(ref, field)))), field
        assert err_mixed <= err_f32 / 5, field
