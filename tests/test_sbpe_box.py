"""Continuous S-BPE (``sbpe_box``; Vakili et al., ICML 2022, §5.2, Eq. (15), Thm 5.3): the public conformance check,
the finite ``sbpe`` on the pool when the pool is fixed, Eq. (15)'s width, the region's invariant, and the maximiser kept
on a function of the kernel's RKHS."""
from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sketchbo as sb
from sketchbo.algorithms import ALGORITHMS, REGISTRY, ArmSet, BoxSet, Feedback, Static, build
from sketchbo.algorithms.sbpe import SBPEParams, batch_lengths
from sketchbo.algorithms.sbpe_box import SBPEBoxParams, batch_width, in_region
from sketchbo.gp import sparse_bounds
from sketchbo.problems import make_problem
from sketchbo.spec import Setting

SPEC = REGISTRY["sbpe_box"]
HARTMANN = make_problem("hartmann6")
SMALL = {"n_pool": 64, "refill": 2, "m_max": 16}  # small shapes: each check compiles a few programs
S2 = 0.05  # the rbf width of the tests' function and of the algorithm


def bumps(seed: int):
    """A function of the rbf kernel's RKHS on [0, 1]^2 (six bumps of width S2, the first the tallest), its maximiser
    on a 1001 x 1001 grid and its RKHS norm sqrt(alpha^T K alpha)."""
    rng = np.random.default_rng(seed)
    C = rng.uniform(0.15, 0.85, (6, 2))
    alpha = rng.uniform(-1.0, 1.0, 6)
    alpha[0] = 1.5
    grid = np.stack(np.meshgrid(np.linspace(0, 1, 1001), np.linspace(0, 1, 1001)), -1).reshape(-1, 2)
    values = np.exp(-((grid[:, None, :] - C[None]) ** 2).sum(-1) / (2 * S2)) @ alpha
    K = np.exp(-((C[:, None] - C[None]) ** 2).sum(-1) / (2 * S2))
    f = lambda X: jnp.exp(-jnp.sum((X[..., None, :] - C) ** 2, -1) / (2 * S2)) @ alpha  # noqa: E731
    return f, grid[np.argmax(values)], float(values.max()), float(np.sqrt(alpha @ K @ alpha))


def parts(T: int, d: int, params: dict):
    """(algorithm, params) of ``sbpe_box`` for a run of horizon T in dimension d."""
    hyper = SPEC.resolve(params, T)
    alg = SPEC.build(SPEC.static(hyper, Setting(T, d, None, None), {}))
    return alg, jax.tree.map(jnp.asarray, SPEC.make_params(hyper, np.float64)), hyper


def drive(alg, params, T: int, d: int, reward, seed: int, finite=None):
    """Run ``alg`` (and, given ``finite`` = (algorithm, params), the finite ``sbpe`` on the box algorithm's pool with
    the same keys and rewards) by its four functions; ``reward(x, t)`` gives the reward of the point x at step t.
    Returns the points, the queried pool indices of the finite run (or None), the final states and the box
    algorithm's active masks after each batch."""
    key = jax.random.key(seed)
    sel, upd, ref = jax.jit(alg.select), jax.jit(alg.update), jax.jit(alg.refit)
    state = alg.init(jax.random.fold_in(key, 0), BoxSet(jnp.zeros(d), jnp.ones(d)), params)
    if finite is not None:
        f_alg, f_params = finite
        f_sel, f_upd, f_ref = jax.jit(f_alg.select), jax.jit(f_alg.update), jax.jit(f_alg.refit)
        f_state = f_alg.init(key, ArmSet(state.pool), f_params)
    xs, ys, qs, actives = np.zeros((T, d)), np.zeros(T), np.full(T, -1), []
    t, r = 0, 0
    while t < T:
        t0 = t
        while True:
            k = jax.random.fold_in(key, 1000 + t)
            x, state, _ = sel(k, state, params)
            xs[t], ys[t] = np.asarray(x), reward(np.asarray(x), t)
            if finite is not None:
                q, f_state, _ = f_sel(k, f_state, f_params)
                qs[t] = int(q)
            t += 1
            if not bool(state.batch_open) or t >= T:
                break
        valid = jnp.asarray((np.arange(T) >= t0) & (np.arange(T) < t))
        state = upd(state, Feedback(jnp.asarray(xs), jnp.asarray(ys), valid), params)
        k = jax.random.fold_in(key, 10 ** 6 + r)
        state, _ = ref(k, state, params)
        if finite is not None:
            f_state = f_upd(f_state, Feedback(jnp.asarray(qs, jnp.int32), jnp.asarray(ys), valid), f_params)
            f_state, _ = f_ref(k, f_state, f_params)
        actives.append(np.asarray(state.active))
        r += 1
    return xs, (qs if finite is not None else None), (state, f_state if finite is not None else None), actives


@pytest.mark.extended  # as every box algorithm's public check (tests/test_conformance.py): about a minute of compiling
def test_sbpe_box_passes_the_public_conformance_check():
    """``sb.testing.check_algorithm`` on Hartmann6: contract, no recompilation, seeds alone == beside another ==
    vmapped (bit for bit; the vmapped program passes the engine's LAPACK-overlap check), checkpoint resume and
    ask/tell == run."""
    assert sb.testing.check_algorithm("sbpe_box", HARTMANN, T=24, params=SMALL) == list(sb.testing.CHECKS)


def test_with_a_fixed_pool_and_the_practical_width_it_is_the_finite_sbpe_on_the_pool():
    """refill = 0, beta = code: every query and every active set equal those of the finite ``sbpe`` (beta = code,
    resample = code) on the pool's points, with the same keys and rewards, over three batches in which arms are
    eliminated."""
    T, d, P = 60, 2, 200
    f, _, _, _ = bumps(3)
    noise = np.random.default_rng(0).normal(size=T)
    values = {"lam": 0.01, "F": 0.3, "sigma2": S2, "n_pool": P, "refill": 0, "m_max": 64}
    alg, params, hyper = parts(T, d, values)
    n_max = max(batch_lengths(T))
    static = Static(A=P, d=d, T=T, m_max=min(64, n_max), u_max=n_max, kernel="rbf", beta_family="bbkb",
                    beta_mode="code", resample="code", batch_rule="schedule")
    f_alg = build(ALGORITHMS["sbpe"], static)
    f_params = SBPEParams(*(jnp.asarray(v) for v in (hyper["lam"], hyper["rls_qbar"], hyper["F"], hyper["delta"],
                                                      hyper["R"])), kernel={"sigma2": jnp.asarray(S2)})
    xs, qs, (state, f_state), actives = drive(alg, params, T, d, lambda x, t: float(f(x)) + 0.1 * noise[t], 5,
                                              finite=(f_alg, f_params))
    np.testing.assert_array_equal(xs, np.asarray(state.pool)[qs])  # the same pool point at every step
    np.testing.assert_array_equal(actives[-1], np.asarray(f_state.active))
    assert 0 < actives[-1].sum() < P  # the comparison covers eliminations


@pytest.mark.parametrize("n", [3, 40, 400])
def test_the_paper_width_is_eq_15_with_corollary_3_7s_beta(n):
    """beta = paper: shift + beta sigma-bar = 2/n + beta~_n(delta / (4B)) (sigma-bar + 2/sqrt(n)), Corollary 3.7's
    continuous width with delta / (4B); beta = code: the practical width C_k + (R/tau) sqrt(2 log(1/delta))."""
    d, B, lam_max = 3, 5, 0.003
    p = SBPEBoxParams(*(jnp.asarray(v) for v in (0.04, 2.0, 0.3, 0.01, S2, 1.0, 0.5, 1.7)))
    sigma = jnp.asarray([0.0, 0.05, 0.9])
    b, shift = batch_width("paper", p, lam_max, jnp.asarray(float(n)), B, d)
    want = sparse_bounds.continuous_width(sigma, n, lam_max, 0.01 / (4 * B), 0.2, 2.0, 0.3, 1.0, d, 1.7)
    np.testing.assert_allclose(shift + b * sigma, want, rtol=1e-12)
    assert float(b) > 2.0 * 2.0  # (2 + sqrt(lam_max)/tau) C_k and more
    b, shift = batch_width("code", p, lam_max, jnp.asarray(float(n)), B, d)
    assert float(shift) == 0.0 and float(b) == pytest.approx(2.0 + 0.3 / 0.2 * math.sqrt(2 * math.log(100.0)))


def test_every_active_pool_point_lies_in_the_region_of_every_stored_bound():
    """After each batch end the active pool is inside X_{i+1} = the intersection of {u_k >= L_k} over the finished
    batches (to rounding), the refill has moved pool points, and the pool's active points concentrate."""
    T, d = 200, 2
    f, _, _, _ = bumps(1)
    alg, params, _ = parts(T, d, {"sigma2": S2, "n_pool": 256, "m_max": 128})
    xs, _, (state, _), actives = drive(alg, params, T, d, lambda x, t: float(f(x)), 0)
    kp = {"sigma2": params.sigma2}
    pool = state.pool[jnp.asarray(actives[-1])]
    from sketchbo.algorithms.sbpe_box import _bound_values  # noqa: PLC0415
    margin = np.asarray(_bound_values(kp, pool, jnp.ones(pool.shape[0]), state.bounds, params.lam))
    done = np.asarray(state.bounds.done)
    assert done.sum() == len(batch_lengths(T)) and margin[done].min() >= -1e-9
    assert bool(jnp.all(in_region(kp, pool, jnp.ones(pool.shape[0]), state.bounds, params.lam)))
    assert np.asarray(pool).std(axis=0).max() < 0.5 * np.sqrt(1 / 12)  # narrower than the uniform pool's spread


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_it_keeps_the_maximiser_of_an_rkhs_function_and_its_last_batch_is_near_it(seed):
    """A function of the kernel's RKHS (F = its norm), noise 0.05, T = 300: the maximiser x* is in the final region
    by every stored bound (Thm 5.3's event: x* is never eliminated), and the last batch's mean regret is below a
    fifth of the first batch's and its queries within 0.15 of x* on average."""
    T, d = 300, 2
    f, x_star, f_max, norm = bumps(10 + seed)
    noise = np.random.default_rng(seed).normal(size=T)
    alg, params, _ = parts(T, d, {"sigma2": S2, "F": norm, "R": 0.05, "lam": 0.01})
    xs, _, (state, _), _ = drive(alg, params, T, d, lambda x, t: float(f(x)) + 0.05 * noise[t], seed)
    kp = {"sigma2": params.sigma2}
    assert bool(in_region(kp, jnp.asarray(x_star)[None], jnp.ones(1), state.bounds, params.lam)[0])
    regret = f_max - np.asarray(f(jnp.asarray(xs)))
    first, last = batch_lengths(T)[0], batch_lengths(T)[-1]
    assert regret[-last:].mean() < 0.2 * regret[:first].mean(), (regret[:first].mean(), regret[-last:].mean())
    assert np.linalg.norm(xs[-last:] - x_star, axis=1).mean() < 0.15


def test_a_float32_run_is_float32_and_finite():
    """dtype float32: the pool, the queries and the rewards are float32 and finite (float64 is the default)."""
    res = sb.run("sbpe_box", HARTMANN, T=24, n_seeds=2, params=SMALL, dtype="float32", progress=False)
    assert res.traces["x"].dtype == np.float32 and res.traces["reward"].dtype == np.float32
    assert np.all(np.isfinite(res.traces["x"])) and np.all(np.isfinite(res.traces["reward"]))
    assert np.all((res.traces["x"] >= 0) & (res.traces["x"] <= 1))


@pytest.mark.parametrize("params, name", [({"n_pool": 1}, "n_pool"), ({"beta": "theory"}, "beta"),
                                          ({"lam": -1.0}, "lam"), ({"R": -0.1}, "R"), ({"delta": 1.0}, "delta"),
                                          ({"refill": 1.5}, "refill"), ({"resample": None}, "resample"),
                                          ({"n0": 10}, r"\['n0'\]")])
def test_bad_hyperparameters_are_refused_by_name(params, name):
    """A ValueError naming the parameter, before anything compiles (``n0``, the other box algorithms' initial
    design, is not one of S-BPE's)."""
    with pytest.raises(ValueError, match=name if name.startswith("\\") else rf"algorithm\.{name}="):
        sb.run("sbpe_box", HARTMANN, T=10, params=params, progress=False)
