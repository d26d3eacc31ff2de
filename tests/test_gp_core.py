"""The box GP core's MAP fit (``gp.hyper.fit(method="map")``): the dimension-scaled prior, L-BFGS to a
stationary point of the log posterior, and the ``gp_fit`` switch of the box algorithms."""
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sketchbo as sb
from sketchbo.domains import box
from sketchbo.gp import hyper


def lognormal_logpdf(x, loc, scale):
    """log density of LogNormal(loc, scale) at x > 0, written out."""
    return -np.log(x) - np.log(scale * math.sqrt(2 * math.pi)) - (np.log(x) - loc) ** 2 / (2 * scale ** 2)


def test_log_prior_is_the_lognormal_density_of_the_lengthscales_and_the_noise():
    d = 7
    rng = np.random.default_rng(0)
    hs = [hyper.GPHyper(jnp.asarray(rng.normal(size=d)), jnp.asarray(rng.normal()), jnp.asarray(rng.normal() - 4))
          for _ in range(2)]

    def reference(h):
        ls, noise = np.exp(np.asarray(h.log_ls)), math.exp(float(h.log_noise))
        loc = math.sqrt(2) + 0.5 * math.log(d)
        return lognormal_logpdf(ls, loc, math.sqrt(3)).sum() + lognormal_logpdf(noise, -4.0, 1.0)

    # equal up to the normalising constants, which do not depend on theta
    assert float(hyper.log_prior(hs[0]) - hyper.log_prior(hs[1])) == pytest.approx(reference(hs[0]) - reference(hs[1]),
                                                                                     rel=1e-12)


@pytest.mark.parametrize("d", [2, 20, 100])
def test_the_prior_mode_of_a_lengthscale_grows_with_the_dimension(d):
    """d/du [-u - (u - mu)^2 / (2 s^2)] = 0 at u = mu - s^2 = sqrt 2 + log(d)/2 - 3: a median lengthscale
    sqrt(d) e^{sqrt 2}, a mode sqrt(d) e^{sqrt 2 - 3}."""
    u = math.sqrt(2) + 0.5 * math.log(d) - 3.0
    h = hyper.GPHyper(jnp.full((d,), u), jnp.zeros(()), jnp.asarray(-4.0 - 1.0))
    g = jax.grad(hyper.log_prior)(h)
    np.testing.assert_allclose(np.asarray(g.log_ls), 0.0, atol=1e-12)
    assert float(g.log_noise) == pytest.approx(0.0, abs=1e-12)


def test_map_fit_reaches_a_stationary_point_above_the_adam_fit():
    rng = np.random.default_rng(0)
    d, n = 6, 60
    X = jnp.asarray(rng.random((n, d)))
    y = jnp.sin(3 * X[:, 0]) + X[:, 1] ** 2 + 0.05 * jnp.asarray(rng.normal(size=n))
    mask = jnp.ones((n,), bool).at[-5:].set(False)  # masked rows take no part
    h0 = hyper.init_hyper(d)
    y_std, _, _ = hyper.standardise(y, mask)

    def log_post(h):
        return hyper.log_marginal_likelihood(h, X, y_std, mask) + hyper.log_prior(h)

    fits = {m: jax.jit(lambda h, m=m: hyper.fit(h, X, y, mask, 100 if m == "map" else 20, 0.05, method=m))(h0)
            for m in hyper.FITS}
    h_map, info = fits["map"]
    assert 0 < int(info["fit_iterations"]) < 100  # converged before the cap
    g = jax.grad(lambda h: -log_post(h) / jnp.sum(mask))(h_map)
    lo, hi = np.log(hyper.HyperBounds().ls)
    inside = (np.asarray(h_map.log_ls) > lo + 1e-9) & (np.asarray(h_map.log_ls) < hi - 1e-9)
    assert np.max(np.abs(np.asarray(g.log_ls)[inside])) < 1e-3  # stationary where no bound holds it
    assert float(log_post(h_map)) > float(log_post(fits["adam"][0])) + 1.0
    assert float(info["lml"]) == pytest.approx(float(hyper.log_marginal_likelihood(h_map, X, y_std, mask)), rel=1e-12)
    # the lengthscales of the two inputs f depends on are shorter than the others'
    ls = np.exp(np.asarray(h_map.log_ls))
    assert ls[:2].max() < ls[2:].min()


def test_gp_fit_is_checked_before_compilation():
    with pytest.raises(ValueError, match=r"algorithm.gp_fit='lbfgs' .*'adam', 'map'"):
        sb.run("gssbo", sb.make_problem("hartmann6"), T=30, params={"gp_fit": "lbfgs"}, progress=False)
    with pytest.raises(ValueError, match=r"algorithm.gp_fit='lbfgs' .*'adam', 'map'"):  # dkl_ucb's own fit too
        sb.run("dkl_ucb", sb.make_problem("hartmann6"), T=30, params={"gp_fit": "lbfgs"}, progress=False)
    with pytest.raises(ValueError, match="gp_fit"):  # an algorithm without a GP has no such switch
        sb.run("bnn_ucb", sb.make_problem("hartmann6"), T=30, params={"gp_fit": "map"}, progress=False)


def test_vecchia_map_fit_climbs_its_posterior_and_protocol_fit_unchanged():
    """VecchiaBO's fit by hyper.maximise: map climbs Vecchia's log posterior above the warm start and above the
    protocol's Adam with the same budget; adam is the protocol's projected Adam, step for step. (With two
    lengthscales at their upper bound this projected L-BFGS does not reach the tolerance in 60 iterations.)"""
    import optax

    from sketchbo.algorithms import vecchia_bo as vb

    rng = np.random.default_rng(3)
    n, d, m = 50, 4, 8
    X = jnp.asarray(rng.uniform(size=(n, d)))
    y = jnp.sin(4 * X[:, 0]) + 0.5 * X[:, 1] ** 2
    valid = jnp.ones((n,), bool)
    Z = X / 0.3
    idx, cmask = vb.conditioning_sets(Z, valid, vb.maximin_rank(Z, valid), m)
    h0 = hyper.init_hyper(d, jnp.float64)
    y_std, _, _ = hyper.standardise(y, valid)

    def log_post(h):
        return float(vb.vecchia_log_likelihood(h, X, y_std, valid, idx, cmask) + hyper.log_prior(h))

    h_map, info = vb.fit_vecchia(h0, X, y, valid, idx, cmask, 60, 0.05, method="map")
    h_adam60, _ = vb.fit_vecchia(h0, X, y, valid, idx, cmask, 60, 0.05, method="adam")
    assert log_post(h_map) > log_post(hyper.project(h0)) + 5.0
    assert log_post(h_map) > log_post(h_adam60) + 1.0
    assert float(info["lml"]) == pytest.approx(
        float(vb.vecchia_log_likelihood(h_map, X, y_std, valid, idx, cmask)), rel=1e-12)
    assert np.exp(np.asarray(h_map.log_ls))[0] < np.exp(np.asarray(h_map.log_ls))[2:].min()  # x_0 matters most
    # the protocol's fit: 5 projected Adam steps written out
    h_adam, _ = vb.fit_vecchia(h0, X, y, valid, idx, cmask, 5, 0.05, method="adam")
    opt, h = optax.adam(0.05), hyper.project(h0)
    s = opt.init(h)
    for _ in range(5):
        gr = jax.grad(lambda h: -vb.vecchia_log_likelihood(h, X, y_std, valid, idx, cmask) / n)(h)
        upd, s = opt.update(gr, s, h)
        h = hyper.project(optax.apply_updates(h, upd))
    for a, b in zip(jax.tree.leaves(h_adam), jax.tree.leaves(h)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12, atol=1e-14)


def test_a_map_run_reports_which_queries_sit_on_a_face():
    p = sb.box_problem(sb.Box([0.0] * 3, [1.0] * 3), lambda x: -jnp.sum((x - 0.3) ** 2), f_min=None)
    res = sb.run("std_gp_ucb", p, T=24, n_seeds=2, progress=False,
                 params={"gp_fit": "map", "fit_steps": 10, "n0": 8, "n_uniform": 128, "n_local": 32})
    x = res.traces["x"]
    assert res.traces["on_face"].shape == (2, 24) and np.all(np.isfinite(res.best_reward))
    np.testing.assert_array_equal(res.traces["on_face"], np.any((x <= box.FACE_TOL) | (x >= 1 - box.FACE_TOL), -1))


def test_ucb_width_rules_are_the_written_formulas():
    """protocol: beta_c d log(2t); theory: Srinivas et al. 2010, Thm 2 with r = a = b = 1, delta = 0.1, written
    out here in numpy; a bad rule is refused before compilation."""
    import math

    from sketchbo import acquisition

    d, t, delta = 20, 300.0, acquisition.THEORY_DELTA
    assert float(acquisition.ucb_width("protocol", 0.2, d, t)) == pytest.approx(0.2 * d * math.log(2 * t))
    want = (2 * math.log(2 * t**2 * math.pi**2 / (3 * delta))
            + 2 * d * math.log(t**2 * d * math.sqrt(math.log(4 * d / delta))))
    assert float(acquisition.ucb_width("theory", 0.2, d, t)) == pytest.approx(want, rel=1e-12)
    assert want > 20 * 0.2 * d * math.log(2 * t)  # the theory's width is far wider than the protocol's
    with pytest.raises(ValueError, match="algorithm.beta_rule"):
        sb.run("std_gp_ucb", sb.make_problem("hartmann6"), T=25, params={"beta_rule": "srinivas"})


def test_theory_width_changes_the_queries_and_is_recorded():
    prob = sb.make_problem("hartmann6")
    runs = {rule: sb.run("std_gp_ucb", prob, T=24, params={"beta_rule": rule, "n0": 20}, progress=False)
            for rule in ("protocol", "theory")}
    assert runs["theory"].hyperparameters["beta_rule"] == "theory"
    np.testing.assert_array_equal(runs["theory"].traces["x"][:, :20], runs["protocol"].traces["x"][:, :20])
    assert not np.allclose(runs["theory"].traces["x"][:, 20:], runs["protocol"].traces["x"][:, 20:])


def test_output_warps_are_the_written_out_monotone_maps():
    """bilog: sign(z) log(1 + |z|) of the standardised targets; copula: Phi^-1((rank + 1/2) / n); masked rows 0."""
    from scipy.stats import norm

    rng = np.random.default_rng(3)
    y = np.concatenate([rng.standard_cauchy(9), [1e6], rng.normal(size=4)])  # heavy-tailed, one huge outlier
    mask = np.ones(y.size, bool)
    mask[[2, 11]] = False
    v = y[mask]
    z = (v - v.mean()) / v.std()
    bilog = np.asarray(hyper.warp_outputs("bilog", jnp.asarray(y), jnp.asarray(mask)))
    np.testing.assert_allclose(bilog[mask], np.sign(z) * np.log1p(np.abs(z)), rtol=1e-12)
    copula = np.asarray(hyper.warp_outputs("copula", jnp.asarray(y), jnp.asarray(mask)))
    ranks = np.argsort(np.argsort(v))
    np.testing.assert_allclose(copula[mask], norm.ppf((ranks + 0.5) / v.size), rtol=1e-10)
    for warped in (bilog, copula):
        assert np.all(warped[~mask] == 0.0)
        np.testing.assert_array_equal(np.argsort(warped[mask]), np.argsort(v))  # the order, hence the incumbent
    assert np.max(np.abs(copula)) < 2.0 < np.max(np.abs(z))  # the outlier no longer dominates
    np.testing.assert_array_equal(hyper.warp_outputs("none", jnp.asarray(y), jnp.asarray(mask)), y)
    with pytest.raises(ValueError, match="algorithm.output_warp"):
        sb.run("std_gp_ucb", sb.make_problem("hartmann6"), T=25, params={"output_warp": "log"})


@pytest.mark.parametrize("algorithm", ["std_gp_ucb", "vecchia_bo"])
def test_output_warp_changes_the_queries_and_is_recorded(algorithm):
    prob = sb.make_problem("hartmann6")
    runs = {w: sb.run(algorithm, prob, T=24, params={"output_warp": w, "n0": 20}, progress=False)
            for w in ("none", "copula")}
    assert runs["copula"].hyperparameters["output_warp"] == "copula"
    np.testing.assert_array_equal(runs["copula"].traces["x"][:, :20], runs["none"].traces["x"][:, :20])
    assert not np.allclose(runs["copula"].traces["x"][:, 20:], runs["none"].traces["x"][:, 20:])
