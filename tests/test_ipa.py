"""IPA (Moss, Ober & Picheny 2023; ``subset.quality_dpp_subset``, ``subset_bo.ipa_rows``): EI against its
closed form, the quality-weighted DPP greedy against a brute-force determinant greedy, the qualities against a
dense exact GP, the continuous contract and learning on Hartmann6."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.stats import norm

import sketchbo as sb
from sketchbo.algorithms.subset_bo import IPA_FLOOR, BOState, Data, ipa_quality, ipa_rows
from sketchbo.gp import hyper, subset
from sketchbo.kernels import gram
from sketchbo.problems import make_problem


def test_expected_improvement_matches_the_closed_form():
    rng = np.random.default_rng(0)
    mean, var = rng.normal(size=50), rng.uniform(0.01, 2.0, size=50)
    var[:3] = 0.0
    ei = np.asarray(subset.expected_improvement(jnp.asarray(mean), jnp.asarray(var), 0.3))
    sd = np.sqrt(var[3:])
    z = (mean[3:] - 0.3) / sd
    np.testing.assert_allclose(ei[3:], (mean[3:] - 0.3) * norm.cdf(z) + sd * norm.pdf(z), rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(ei[:3], np.maximum(mean[:3] - 0.3, 0.0))


def _greedy_dpp(K, q, M):
    """Greedy MAP of the DPP with L = diag(q) K diag(q): each step the row maximising det(L_{S+i})."""
    L = K * q[:, None] * q[None, :]
    S = []
    for _ in range(M):
        dets = [np.linalg.det(L[np.ix_(S + [i], S + [i])]) if i not in S else -np.inf for i in range(len(q))]
        S.append(int(np.argmax(dets)))
    return S


def _samples(n=24, cap=30, d=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(cap, d))
    y = np.sin(5 * X).sum(1)
    return X, y, np.arange(cap) < n


def test_quality_dpp_is_the_greedy_determinant_map():
    X, _, valid = _samples()
    n, M = 24, 8
    ls = np.array([0.25, 0.4])
    h = hyper.GPHyper(jnp.log(jnp.asarray(ls)), jnp.log(1.0), jnp.log(1e-3))
    K = np.asarray(hyper.MATERN.k(hyper.kernel_params(h), jnp.asarray(X), jnp.asarray(X)))
    q = np.random.default_rng(1).uniform(0.05, 2.0, size=len(X))
    select = jax.jit(subset.quality_dpp_subset, static_argnums=3)
    idx, mask = select(jnp.asarray(K), jnp.asarray(q), jnp.asarray(valid), M)
    chosen = sorted(np.asarray(idx)[np.asarray(mask)].tolist())
    assert chosen == sorted(_greedy_dpp(K[:n, :n], q[:n], M))
    assert chosen != sorted(_greedy_dpp(K[:n, :n], np.ones(n), M))  # the qualities change the choice


def test_ipa_qualities_are_the_ei_of_the_previous_model_and_choose_the_rows():
    """With every sample an inducing point the previous DTC model is the exact GP (test_gssbo), so the
    qualities are EI under the dense exact posterior (baseline: best observed reward) + IPA_FLOOR, and the
    rows are the quality-weighted DPP greedy of those qualities."""
    X, y, valid = _samples()
    n, M, cap = 24, 8, 30
    ls = np.array([0.3, 0.5])
    h = hyper.GPHyper(jnp.log(jnp.asarray(ls)), jnp.log(1.2), jnp.log(1e-2))
    w = valid.astype(float)
    data = Data(jnp.asarray(X), jnp.asarray(y * w), jnp.asarray(w), jnp.asarray(n, jnp.int32))
    z = jnp.zeros(())
    state = BOState(data, jnp.arange(cap, dtype=jnp.int32), jnp.asarray(valid), h, z, jnp.zeros(2),
                    jnp.ones((), jnp.int32), jnp.asarray(n, jnp.int32), jnp.asarray(True))
    yv, vv = jnp.asarray(y * w), jnp.asarray(valid)
    q = np.asarray(jax.jit(ipa_quality)(state, vv, yv))
    Xv, ys = X[:n], (y[:n] - y[:n].mean()) / y[:n].std()
    K = np.asarray(hyper.MATERN.k(hyper.kernel_params(h), jnp.asarray(Xv), jnp.asarray(Xv)))
    A = K + 1e-2 * np.eye(n)
    mean = K @ np.linalg.solve(A, ys)
    sd = np.sqrt(np.clip(1.2 - np.einsum("ij,ji->i", K, np.linalg.solve(A, K)), 0, None))
    zz = (mean - ys.max()) / sd
    ref = (mean - ys.max()) * norm.cdf(zz) + sd * norm.pdf(zz) + IPA_FLOOR
    np.testing.assert_allclose(q[:n], ref, rtol=1e-6, atol=1e-12)
    assert np.all(q[n:] == 1.0) and q[:n].max() > 1e3 * IPA_FLOOR
    idx, mask = jax.jit(ipa_rows, static_argnums=3)(state, vv, yv, M)
    # many qualities sit at the floor, where the greedy meets near ties: the reference runs the same jitted
    # greedy (validated against brute force above) on the buffer's kernel matrix and the qualities checked here
    Kc = gram(hyper.MATERN, hyper.kernel_params(h), data.x)
    ref_rows, rmask = jax.jit(subset.quality_dpp_subset, static_argnums=3)(Kc, jnp.asarray(q), vv, M)
    chosen = sorted(np.asarray(idx)[np.asarray(mask)].tolist())
    assert chosen == sorted(np.asarray(ref_rows)[np.asarray(rmask)].tolist())


def test_ipa_learns_on_hartmann6():
    p = make_problem("hartmann6")
    params = {"n0": 10, "n_uniform": 512, "n_local": 128, "m": 20}
    res = sb.run("ipa", p, T=60, n_seeds=2, params=params, progress=False, seed_axis="map")
    unif = res.hyperparameters["uniform_mean"] - p.f_min
    after = res.traces["instant_regret"][:, 10:].mean(axis=1)
    assert np.all(after < 0.75 * unif), (after, unif)
    assert np.all(res.traces["dict_size"][:, -1] == 20) and np.all(np.isfinite(res.traces["instant_regret"]))


@pytest.mark.extended
def test_ipa_runs_vmapped_like_mapped():
    """At both of XLA's levels (level 0 in the default suite, the default level in CI's extended set). Before
    the selections built K with its exact diagonal (kernels.gram, 2026-11-24), seed 1 parted at step 20 at
    level 0: the first pivot's exact tie was decided by rounding (docs/reliability.md#determinism)."""
    p = make_problem("hartmann6")
    params = {"n0": 10, "n_uniform": 512, "n_local": 128, "m": 12}
    short = dict(T=30, n_seeds=2, params=params, progress=False)
    a = sb.run("ipa", p, seed_axis="map", **short)
    b = sb.run("ipa", p, seed_axis="vmap", **short)
    np.testing.assert_allclose(a.traces["x"], b.traces["x"], atol=1e-6)


@pytest.mark.extended
def test_ipa_keeps_up_with_sparse_gp_on_hartmann6():
    """IPA's landmarks crowd the promising region; fitted on those rows alone (before 2026-11-23) its
    hyperparameters misled it: R_T at T = 300 (3 seeds) was 609 against SparseGP's 154. With the collapsed bound
    over every sample both learn alike (measured 136 and 123)."""
    p = make_problem("hartmann6")
    kw = dict(T=300, n_seeds=3, progress=False)
    ipa = sb.run("ipa", p, **kw).cumulative_regret.mean()
    sparse = sb.run("sparse_gp", p, **kw).cumulative_regret.mean()
    assert ipa < 2.0 * sparse, (ipa, sparse)
