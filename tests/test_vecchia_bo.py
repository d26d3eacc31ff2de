"""VecchiaBO (``sketchbo.algorithms.vecchia_bo``): the maximin ordering and conditioning sets against numpy
brute force, Vecchia's likelihood and prediction against the dense exact GP when the sets hold every earlier
sample, the continuous contract (jit, vmap == map, growing the buffer, finite outputs) and learning on
Hartmann6."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sketchbo as sb
from sketchbo.algorithms.vecchia_bo import (
    _conditionals, conditioning_sets, maximin_rank, vecchia_log_likelihood, vecchia_predict,
)
from sketchbo.gp import hyper
from sketchbo.problems import make_problem


def _buffer(n=30, cap=36, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(cap, d))
    y = np.sin(4 * X).sum(1) + 0.05 * rng.standard_normal(cap)
    return jnp.asarray(X), jnp.asarray(y), jnp.arange(cap) < n


def test_maximin_order_and_conditioning_sets_match_brute_force():
    X, _, valid = _buffer()
    n, m = 30, 5
    rank = np.asarray(jax.jit(maximin_rank)(X, valid))
    Xv = np.asarray(X)[:n]
    order = [int(np.argmin(((Xv - Xv.mean(0)) ** 2).sum(1)))]
    while len(order) < n:  # farthest from everything ordered so far
        d2 = ((Xv[:, None] - Xv[order][None]) ** 2).sum(-1).min(1)
        d2[order] = -1
        order.append(int(np.argmax(d2)))
    assert rank[:n].tolist() == np.argsort(order).tolist() and np.all(rank[n:] >= n)
    idx, mask = jax.jit(conditioning_sets, static_argnums=3)(X, valid, jnp.asarray(rank), m)
    idx, mask = np.asarray(idx), np.asarray(mask)
    for i in range(n):
        earlier = [j for j in range(n) if rank[j] < rank[i]]
        near = sorted(earlier, key=lambda j: ((Xv[j] - Xv[i]) ** 2).sum())[:m]
        assert idx[i][mask[i]].tolist() == near
    assert mask[order[0]].sum() == 0 and mask[order[-1]].sum() == m


def test_likelihood_and_prediction_equal_the_exact_gp_when_the_sets_hold_every_earlier_sample():
    """Vecchia's product of conditionals is the chain rule of the joint when c(i) = all earlier samples, so
    its log-likelihood is R&W Eq. 2.30 and each candidate's conditional is the exact posterior."""
    X, y, valid = _buffer(n=20, cap=24)
    h = hyper.GPHyper(jnp.log(jnp.array([0.3, 0.5, 0.8])), jnp.log(1.4), jnp.log(0.01))
    y_std, _, _ = hyper.standardise(y, valid)
    Z = X * jnp.exp(-h.log_ls)
    m_all = 24
    idx, cmask = conditioning_sets(Z, valid, maximin_rank(Z, valid), m_all)
    ll = jax.jit(vecchia_log_likelihood)(h, X, y_std, valid, idx, cmask)
    ref = hyper.log_marginal_likelihood(h, X, y_std, valid)
    assert float(ll) == pytest.approx(float(ref), rel=1e-9)
    few, fmask = conditioning_sets(Z, valid, maximin_rank(Z, valid), 3)
    assert abs(float(vecchia_log_likelihood(h, X, y_std, valid, few, fmask)) - float(ref)) > 1e-3  # an approximation
    Xq = jnp.asarray(np.random.default_rng(3).uniform(size=(9, 3)))
    mean, var = jax.jit(lambda q: vecchia_predict(h, X, y, valid, m_all)(q))(Xq)
    mref, vref = hyper.predict(hyper.posterior(h, X, y, valid), Xq)
    np.testing.assert_allclose(mean, mref, rtol=1e-8)
    np.testing.assert_allclose(var, vref, rtol=1e-6, atol=1e-12)


def test_likelihood_gradient_in_closed_form_equals_differentiating_through_the_factorisations():
    """``conditional_log_density``'s closed-form VJP against JAX's derivative of the same conditionals computed
    through the batched Cholesky factorisation, with masked rows and short (masked) conditioning sets."""
    X, y, valid = _buffer(n=30, cap=36, d=3, seed=1)
    h = hyper.GPHyper(jnp.log(jnp.array([0.25, 0.6, 0.9])), jnp.log(1.3), jnp.log(0.02))
    y_std, _, _ = hyper.standardise(y, valid)
    Z = X * jnp.exp(-h.log_ls)
    idx, cmask = conditioning_sets(Z, valid, maximin_rank(Z, valid), 6)
    assert not bool(jnp.all(cmask[valid]))  # the first rows of the ordering have fewer than 6 earlier samples

    def through_cholesky(h):
        mean, var = _conditionals(h, X, X[idx], y_std[idx], cmask, jnp.exp(h.log_noise))
        ll = -0.5 * ((y_std - mean) ** 2 / var + jnp.log(var) + hyper.LOG_2PI)
        return jnp.sum(jnp.where(valid, ll, 0.0))

    def closed_form(h):
        return vecchia_log_likelihood(h, X, y_std, valid, idx, cmask)

    assert float(closed_form(h)) == pytest.approx(float(through_cholesky(h)), rel=1e-12)
    for got, ref in zip(jax.tree.leaves(jax.jit(jax.grad(closed_form))(h)), jax.tree.leaves(jax.grad(through_cholesky)(h))):
        np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-9)
    step = 1e-6  # and against central differences in the noise
    fd = (closed_form(h._replace(log_noise=h.log_noise + step)) - closed_form(h._replace(log_noise=h.log_noise - step)))
    assert float(jax.grad(closed_form)(h).log_noise) == pytest.approx(float(fd) / (2 * step), rel=1e-6)


@pytest.mark.extended
def test_vmap_equals_map_and_a_grown_buffer_gives_the_same_trajectories():
    p = make_problem("hartmann6")
    # the paper protocol's core: the MAP fit's line search turns rounding into different accepted steps (queries
    # 0.15 apart by step 26 at XLA's default level), which would hide what this test checks
    kw = dict(T=30, n_seeds=2, params={"n0": 8, "n_uniform": 128, "n_local": 32, "m": 6, "gp_core": "protocol"},
              progress=False)
    a = sb.run("vecchia_bo", p, seed_axis="map", **kw)
    b = sb.run("vecchia_bo", p, seed_axis="vmap", **kw)
    # batched (vmap) and single m x m factorisations round differently; the fits amplify it to ~3e-6 by step 30
    np.testing.assert_allclose(a.traces["x"], b.traces["x"], atol=1e-4)
    grown = sb.run("vecchia_bo", p, seed_axis="map", capacity=12, **kw)
    assert grown.capacity_events[0] == "sample buffer capacity 12 -> 30"
    np.testing.assert_allclose(grown.traces["x"], a.traces["x"], atol=1e-4)  # padded rows: other sum orders
    assert np.all(np.isfinite(a.traces["instant_regret"])) and np.all(a.traces["dict_size"][:, -1] == 6)


def test_learns_on_hartmann6_below_uniform_random_search():
    p = make_problem("hartmann6")
    res = sb.run("vecchia_bo", p, T=60, n_seeds=2, params={"n0": 10, "n_uniform": 512, "n_local": 128},
                         progress=False)
    unif = res.hyperparameters["uniform_mean"] - p.f_min
    after = res.traces["instant_regret"][:, 10:].mean(axis=1)
    assert np.all(after < 0.75 * unif), (after, unif)
    assert np.all(res.regret_ratio < 1.0)


def test_accuracy_script_is_exact_with_every_sample_and_reports_bad_input(tmp_path, capsys):
    """scripts/vecchia_accuracy.py (docs/reproductions.md#fig-2, VecchiaBO): with m = n the Vecchia prediction is the
    exact GP's (mean difference at rounding level, sd ratio 1); with m = 4 of 40 it is not."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "scripts" / "vecchia_accuracy.py"
    spec = importlib.util.spec_from_file_location("vecchia_accuracy", path)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    rng = np.random.default_rng(0)
    x = rng.uniform(size=(2, 40, 6))
    reward = -np.asarray(jax.vmap(jax.vmap(make_problem("hartmann6").fn))(jnp.asarray(x)))
    np.savez(tmp_path / "traces.npz", x=x, reward=reward)
    coarse, exact = script.main(["--results", str(tmp_path), "--seed", "1", "--n", "40", "--m", "4", "40"])
    assert exact["mean_err_max"] < 1e-7 and abs(exact["sd_ratio_p5"] - 1) < 1e-6 and abs(exact["sd_ratio_p95"] - 1) < 1e-6
    assert exact["ucb_loss"] < 1e-7 and coarse["mean_err_median"] > 1e-3
    assert "| 40 |" in capsys.readouterr().out
    for bad in (["--n", "41"], ["--m", "0"], ["--seed", "2"]):
        with pytest.raises(SystemExit):
            script.main(["--results", str(tmp_path), *bad])
