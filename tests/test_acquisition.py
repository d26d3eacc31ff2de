"""The acquisition maximiser's refinements (``sketchbo.acquisition``): the spectral projected gradient (``spg``)
against closed-form and converged references, its stopping rule, its report of faces, and the switch."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sketchbo as sb
from sketchbo import acquisition
from sketchbo.cli import tracking
from sketchbo.gp import hyper

SPG = acquisition.AcqStatic(n_uniform=256, n_local=64, n_starts=4, steps=400, method="spg")


def separable_quadratic(d=12, seed=0):
    """-sum w_i (x_i - c_i)^2, condition number up to e^4, its centre partly outside the box: the box maximiser
    is clip(c, 0, 1) (separable), with coordinates on both faces."""
    rng = np.random.default_rng(seed)
    c = jnp.asarray(rng.uniform(-0.4, 1.4, d))
    w = jnp.asarray(np.exp(rng.uniform(-2, 2, d)))
    return (lambda x: -jnp.sum(w * (x - c) ** 2, axis=-1)), jnp.clip(c, 0.0, 1.0)


def test_spg_reaches_the_box_maximiser_of_a_concave_quadratic():
    f, x_star = separable_quadratic()
    x0 = jnp.asarray(np.random.default_rng(1).uniform(size=(4, x_star.shape[0])))
    x, v, iters = jax.jit(lambda x0: acquisition.refine_spg(f, x0, SPG))(x0)
    np.testing.assert_allclose(np.asarray(x), np.broadcast_to(x_star, x.shape), atol=1e-5)
    np.testing.assert_allclose(np.asarray(v), float(f(x_star[None])[0]), atol=1e-9)
    assert 0 < int(iters) < SPG.steps  # it stopped on its tolerance, not on the iteration bound
    # the same 4 starts by 25 projected Adam steps (the protocol's refinement) stop far from it
    xa, _ = acquisition.refine(f, x0, acquisition.AcqStatic(steps=25), 0.01)
    assert float(jnp.max(jnp.abs(xa - x_star))) > 0.1


def test_spg_stops_at_a_first_order_stationary_point_of_a_multimodal_function():
    def f(x):
        return jnp.sum(jnp.sin(12 * x) * jnp.exp(-x), axis=-1) - 0.3 * jnp.sum(x, axis=-1) ** 2

    x0 = jnp.asarray(np.random.default_rng(2).uniform(size=(6, 5)))
    x, v, _ = acquisition.refine_spg(f, x0, SPG)
    g = jax.vmap(jax.grad(lambda z: f(z[None])[0]))(x)
    # the projected gradient P(x + g) - x vanishes: free coordinates have g = 0, coordinates on a face push out
    assert float(jnp.max(acquisition._projected_gradient(x, g))) <= 10 * acquisition.SPG_TOL
    assert np.all(np.asarray(v) >= np.asarray(f(x0)))  # monotone from every start
    assert np.all((np.asarray(x) >= 0) & (np.asarray(x) <= 1))


def test_spg_vmapped_over_seeds_equals_each_seed_alone():
    f, _ = separable_quadratic(d=6, seed=3)
    x0s = jnp.asarray(np.random.default_rng(4).uniform(size=(3, 4, 6)))
    xs, vs, ks = jax.jit(jax.vmap(lambda x0: acquisition.refine_spg(f, x0, SPG)))(x0s)
    for i in range(3):
        x, v, _ = acquisition.refine_spg(f, x0s[i], SPG)
        np.testing.assert_allclose(np.asarray(xs[i]), np.asarray(x), rtol=0, atol=1e-12)
        np.testing.assert_allclose(np.asarray(vs[i]), np.asarray(v), rtol=0, atol=1e-12)
    assert int(jnp.max(ks)) < SPG.steps


def _gp_ucb(seed=0, n=40, d=4):
    """A GP-UCB acquisition on random data (exact GP, fixed hyperparameters)."""
    rng = np.random.default_rng(seed)
    X = jnp.asarray(rng.uniform(size=(n, d)))
    y = jnp.sin(6 * X[:, 0]) * jnp.cos(4 * X[:, 1]) + 0.5 * X[:, 2] + 0.05 * jnp.asarray(rng.normal(size=n))
    h = hyper.GPHyper(jnp.full((d,), np.log(0.3)), jnp.zeros(()), jnp.asarray(np.log(1e-3)))
    post = hyper.posterior(h, X, y, jnp.ones((n,), bool))

    def ucb(xq):
        mean, var = hyper.predict(post, xq)
        return mean + 2.0 * jnp.sqrt(var + 1e-30)

    return ucb, X, y


def test_spg_climbs_a_gp_ucb_at_least_as_high_as_projected_adam_from_the_same_candidates():
    ucb, X, y = _gp_ucb()
    inc, mask = X[jnp.argsort(-y)[:5]], jnp.ones((5,), bool)
    base = acquisition.AcqStatic(n_uniform=512, n_local=128, n_starts=4, steps=25)
    adam = jax.jit(lambda key: acquisition.maximize(key, ucb, inc, mask, base, lr=0.01))
    spg = jax.jit(lambda key: acquisition.maximize(key, ucb, inc, mask, base._replace(method="spg", steps=100)))
    for k in range(3):
        key = jax.random.key(k)
        _, v_a, info_a = adam(key)
        x_s, v_s, info_s = spg(key)
        assert float(v_s) >= float(v_a) - 1e-9
        assert float(info_s["refine_gain"]) >= float(info_a["refine_gain"]) - 1e-9 >= -1e-9
        assert int(info_s["acq_iterations"]) <= 100 and int(info_a["acq_iterations"]) == 25
        assert float(v_s) == pytest.approx(float(ucb(x_s[None])[0]), rel=1e-12)


def test_maximize_reports_the_winner_and_the_starts_on_a_face():
    f, x_star = separable_quadratic()  # its maximiser has coordinates on faces: every converged start ends there
    static = SPG._replace(n_starts=5)
    x, _, info = jax.jit(lambda k: acquisition.maximize(k, f, jnp.full((1, 12), 0.5), jnp.array([True]), static))(
        jax.random.key(0))
    assert bool(info["on_face"]) and float(info["starts_on_face"]) == 1.0
    inner = lambda x: -jnp.sum((x - 0.4) ** 2, axis=-1)  # noqa: E731 - an interior maximiser
    _, _, info = jax.jit(lambda k: acquisition.maximize(k, inner, jnp.full((1, 3), 0.5), jnp.array([True]),
                                                        static))(jax.random.key(0))
    assert not bool(info["on_face"]) and float(info["starts_on_face"]) == 0.0
    assert bool(acquisition.on_face(jnp.array([0.2, 1.0]))) and not bool(acquisition.on_face(jnp.array([0.2, 0.9])))


def test_acq_method_switch_changes_the_queries_and_is_checked_before_compilation():
    p = sb.box_problem(sb.Box([0.0] * 3, [1.0] * 3), lambda x: jnp.sum((x - 0.3) ** 2), f_min=0.0)
    kw = dict(T=26, n_seeds=2, progress=False)
    small = {"n0": 8, "n_uniform": 128, "n_local": 32, "fit_steps": 10}
    runs = {m: sb.run("std_gp_ucb", p, params={**small, "acq_method": m}, **kw) for m in acquisition.ACQ_METHODS}
    assert runs["spg"].hyperparameters["acq_method"] == "spg"
    np.testing.assert_array_equal(runs["spg"].traces["x"][:, :8], runs["adam"].traces["x"][:, :8])  # same design
    assert not np.allclose(runs["spg"].traces["x"][:, 8:], runs["adam"].traces["x"][:, 8:])
    summary = tracking.summary_of(runs["spg"], {})  # summary.json: each seed's rate of queries on a face after n0
    np.testing.assert_allclose(summary["on_face"], runs["spg"].traces["on_face"][:, 8:].mean(axis=1))
    with pytest.raises(ValueError, match=r"algorithm.acq_method='lbfgsb' .*'adam', 'spg'"):
        sb.run("gssbo", sb.make_problem("hartmann6"), T=30, params={"acq_method": "lbfgsb"}, progress=False)
