"""Random-embedding baselines (REMBO, HeSBO; ``sketchbo.algorithms.embeddings``): the embedding maps against
a dense numpy reference of each paper's definition, the continuous contract (jit, vmap == map over seeds,
growing the buffer, finite outputs) and learning on Powell50 (GSSBO App. Fig. 9's problems)."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sketchbo import acquisition
import sketchbo as sb
from sketchbo.algorithms import BO_ALGORITHMS, BOStatic, Feedback, build_bo
from sketchbo.algorithms.subset_bo import SubsetParams
from sketchbo.algorithms.embeddings import draw_embedding, low_box_halfwidth, to_box
from sketchbo.problems import make_problem

QUICK = {"n0": 10, "n_uniform": 256, "n_local": 64}


def test_rembo_map_is_the_clipped_gaussian_embedding():
    """Wang et al. 2016, Alg. 2: A has N(0, 1) entries, y in [-sqrt(d), sqrt(d)]^d, x = clip(A y, -1, 1)."""
    D, d = 40, 4
    A = np.asarray(draw_embedding(jax.random.key(0), "rembo", D, d, jnp.float64))
    assert A.shape == (D, d) and abs(A.mean()) < 0.2 and 0.8 < A.std() < 1.2
    u = np.random.default_rng(0).uniform(size=(16, d))
    h = low_box_halfwidth("rembo", d)
    assert h == pytest.approx(2.0)
    x = np.asarray(jax.vmap(lambda v: to_box(v, jnp.asarray(A), h))(jnp.asarray(u)))
    y = (2 * u - 1) * np.sqrt(d)
    ref = (np.clip(y @ A.T, -1, 1) + 1) / 2
    np.testing.assert_allclose(x, ref, rtol=1e-12, atol=1e-14)
    assert np.any(np.abs(y @ A.T) > 1)  # the clipping acts on these points
    np.testing.assert_allclose(to_box(jnp.full(d, 0.5), jnp.asarray(A), h), 0.5)  # y = 0: the box centre


def test_hesbo_map_is_a_count_sketch_inside_the_box_without_clipping():
    """Nayebi et al. 2019, §3: one +-1 per input coordinate, x_i = s_i y_{h(i)}, y in [-1, 1]^d."""
    D, d = 50, 4
    S = np.asarray(draw_embedding(jax.random.key(1), "hesbo", D, d, jnp.float64))
    assert S.shape == (D, d)
    assert np.all(np.sum(S != 0, axis=1) == 1) and set(np.unique(S).tolist()) == {-1.0, 0.0, 1.0}
    hash_, sign = np.argmax(S != 0, axis=1), S[np.arange(D), np.argmax(S != 0, axis=1)]
    assert len(set(hash_.tolist())) == d and len(set(sign.tolist())) == 2  # all buckets and both signs used
    u = np.random.default_rng(1).uniform(size=(16, d))
    assert low_box_halfwidth("hesbo", d) == 1.0
    x = np.asarray(jax.vmap(lambda v: to_box(v, jnp.asarray(S), 1.0))(jnp.asarray(u)))
    y = 2 * u - 1
    np.testing.assert_allclose(x, (sign * y[:, hash_] + 1) / 2, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", ["rembo", "hesbo"])
def test_select_update_fit_the_low_gp_on_the_low_points(name):
    """The state's low points map to the queries, the low GP's buffer holds them, resparsify plans a finite
    query inside the low cube (jit of every function, finite outputs)."""
    D, d, T, n0 = 20, 3, 12, 5
    static = BOStatic(variant=name, d=D, T=T, cap=T, n0=n0, M=d, fit_steps=3, acq=acquisition.AcqStatic(64, 16, 2, 3))
    alg = build_bo(BO_ALGORITHMS[name], static)
    f = jnp.asarray
    params = SubsetParams(beta_c=f(0.2), sigma_d2=f(0.0), C=f(1.0), lr_fit=f(0.05), lr_acq=f(0.01), local_scale=f(0.05))
    state = jax.jit(alg.init, static_argnums=1)(jax.random.key(0), None, params)
    assert state.embed.shape == (D, d) and state.data.x.shape == (T, d) and state.low.shape == (T, d)
    select = jax.jit(alg.select)
    xs = []
    for t in range(n0):
        x, state, _ = select(jax.random.key(10 + t), state, params)
        xs.append(np.asarray(x))
    assert not bool(state.batch_open) and int(state.t) == n0
    xs = np.array(xs)
    np.testing.assert_allclose(xs, np.asarray(jax.vmap(lambda u: to_box(u, state.embed, low_box_halfwidth(name, d)))(
        state.low[:n0])), rtol=1e-12)
    ys = -np.sum((xs - 0.5) ** 2, axis=1)
    pad = np.zeros(T - n0)
    fb = Feedback(f(np.vstack([xs, np.zeros((T - n0, D))])), f(np.concatenate([ys, pad])), jnp.arange(T) < n0)
    state = jax.jit(alg.update)(state, fb, params)
    assert int(state.data.n) == n0
    np.testing.assert_array_equal(state.data.x[:n0], state.low[:n0])
    state, info = jax.jit(alg.refit)(jax.random.key(2), state, params)
    nx = np.asarray(state.next_x)
    assert nx.shape == (d,) and np.all(np.isfinite(nx)) and np.all((nx >= 0) & (nx <= 1))
    assert np.isfinite(float(info.ucb)) and int(info.dict_size) == n0


@pytest.mark.parametrize("name", ["rembo", "hesbo"])
def test_vmap_equals_map_and_a_grown_buffer_gives_the_same_trajectories(name):
    p = make_problem("levy20")
    # the paper protocol's core (Adam's fixed steps): the MAP fit's line search turns rounding into different
    # accepted steps (rembo, default core: 1.1e-3 at T = 30), which would hide what this test checks, the embedding
    kw = dict(T=30, n_seeds=2, params={"n0": 8, "n_uniform": 128, "n_local": 32, "m": 3, "gp_core": "protocol"},
              progress=False)
    a = sb.run(name, p, seed_axis="map", **kw)
    b = sb.run(name, p, seed_axis="vmap", **kw)
    # equal up to rounding, amplified by the acquisition's Adam refinement: largest difference at XLA level 0,
    # rembo 2.2e-6 (6.2e-7 before the closed-form likelihood gradient), hesbo 6e-11
    np.testing.assert_allclose(a.traces["x"], b.traces["x"], atol=1e-5)
    grown = sb.run(name, p, seed_axis="map", capacity=12, **kw)
    assert grown.capacity_events[0] == "sample buffer capacity 12 -> 30"
    # the low GP uses every row: a padded buffer changes its sums' order, so equal up to rounding
    np.testing.assert_allclose(grown.traces["x"], a.traces["x"], atol=1e-5)
    assert np.all(np.isfinite(a.traces["instant_regret"])) and a.hyperparameters["M_static"] == 3


@pytest.mark.parametrize("name", ["rembo", "hesbo"])
def test_learns_on_powell50_below_uniform_random_search(name):
    """After its exploration of the low box, the instant regret of the last 40 of 100 steps is below
    uniform random search's expected instant regret (both seeds)."""
    p = make_problem("powell50")
    res = sb.run(name, p, T=100, n_seeds=2, params=QUICK, progress=False)
    unif = res.hyperparameters["uniform_mean"] - p.f_min
    late = res.traces["instant_regret"][:, -40:].mean(axis=1)
    assert np.all(late < 0.75 * unif), (late, unif)
    assert res.traces["x"].shape == (2, 100, 50) and np.all(res.traces["instant_regret"] >= -1e-9)
