"""GSSBO and its baselines on continuous domains: the MLE GP, the box-constrained acquisition maximiser,
subset selection, the dynamic buffer, the Nyström engine against the exact GP, the continuous runner
(capacity growth, seeds), and learning on Hartmann6 (docs/protocols.md#box-protocol)."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sketchbo import acquisition
import sketchbo as sb
from sketchbo.domains import box
from sketchbo.algorithms import BO_ALGORITHMS, BoxSet, Feedback
from sketchbo.algorithms.subset_bo import Data, _nystrom_predict, append_batch, dynamic_buffer_size
from sketchbo.gp import hyper, subset
from sketchbo.problems import make_problem


def matern_dense(X, Y, ls, scale):
    r = np.sqrt(((X[:, None, :] / ls - Y[None, :, :] / ls) ** 2).sum(-1))
    return scale * (1 + np.sqrt(5) * r + 5 / 3 * r ** 2) * np.exp(-np.sqrt(5) * r)


def gp_data(n=40, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, d))
    y = np.sin(3 * X).sum(1) + 0.1 * rng.standard_normal(n)
    h = hyper.GPHyper(jnp.log(jnp.array([0.3, 0.5, 0.8])[:d]), jnp.log(1.7), jnp.log(0.02))
    return X, y, h


# -------------------------------------------------------------------------------------------- GP + MLE

def test_log_marginal_likelihood_matches_dense_reference_and_ignores_masked_rows():
    X, y, h = gp_data()
    ys = (y - y.mean()) / y.std()
    Kn = matern_dense(X, X, np.exp(h.log_ls), np.exp(h.log_scale)) + np.exp(h.log_noise) * np.eye(len(y))
    sign, logdet = np.linalg.slogdet(Kn)
    ref = -0.5 * ys @ np.linalg.solve(Kn, ys) - 0.5 * logdet - 0.5 * len(y) * np.log(2 * np.pi)
    pad = 7
    Xp = np.vstack([X, np.random.default_rng(1).uniform(size=(pad, 3))])
    yp = np.concatenate([y, 100 * np.ones(pad)])
    mask = np.arange(len(yp)) < len(y)
    y_std, mean, std = hyper.standardise(jnp.asarray(yp), jnp.asarray(mask))
    assert float(mean) == pytest.approx(y.mean()) and float(std) == pytest.approx(y.std())
    Xq = np.random.default_rng(2).uniform(size=(5, 3))

    @jax.jit
    def compute(Xp, yp, y_std, mask, Xq):
        lml = hyper.log_marginal_likelihood(h, Xp, y_std, mask)
        return lml, hyper.predict(hyper.posterior(h, Xp, yp, mask), Xq)

    lml, (mu, var) = compute(jnp.asarray(Xp), jnp.asarray(yp), y_std, jnp.asarray(mask), jnp.asarray(Xq))
    assert float(lml) == pytest.approx(ref, rel=1e-10)
    # posterior mean / variance against the dense formulas (R&W Eq. 2.25-26), in the targets' units
    Kq = matern_dense(Xq, X, np.exp(h.log_ls), np.exp(h.log_scale))
    mu_ref = y.mean() + y.std() * Kq @ np.linalg.solve(Kn, ys)
    var_ref = y.std() ** 2 * (np.exp(h.log_scale) - np.einsum("qi,iq->q", Kq, np.linalg.solve(Kn, Kq.T)))
    np.testing.assert_allclose(mu, mu_ref, rtol=1e-9)
    np.testing.assert_allclose(var, var_ref, rtol=1e-7, atol=1e-12)


@pytest.mark.parametrize("with_counts", [False, True])
def test_likelihood_gradient_is_the_dense_closed_form_and_ignores_masked_rows(with_counts):
    """d log p / d theta_j = 1/2 tr((a a^T - Kn^{-1}) dKn/dtheta_j) (R&W Eq. 5.9): the closed-form VJP of
    hyper.gaussian_log_density against dense NumPy (dKn/dtheta by central differences of the dense kernel)."""
    X, y, h = gp_data()
    n = len(y)
    counts = np.arange(1, n + 1) % 3 + 1.0 if with_counts else np.ones(n)
    ys = (y - y.mean()) / y.std()

    def dense_Kn(theta):
        ls, scale, noise = np.exp(theta[:3]), np.exp(theta[3]), np.exp(theta[4])
        return matern_dense(X, X, ls, scale) + np.diag(noise / counts)

    theta = np.concatenate([np.asarray(h.log_ls), [float(h.log_scale), float(h.log_noise)]])
    Kn = dense_Kn(theta)
    Kinv = np.linalg.inv(Kn)
    a = Kinv @ ys
    ref = []
    for j in range(theta.size):
        e = np.zeros_like(theta)
        e[j] = 1e-6
        dK = (dense_Kn(theta + e) - dense_Kn(theta - e)) / 2e-6
        ref.append(0.5 * np.sum((np.outer(a, a) - Kinv) * dK))
    pad = 6
    Xp = np.vstack([X, np.full((pad, 3), 0.5)])  # masked rows: duplicates of each other, garbage targets
    mask = np.arange(n + pad) < n
    y_std, _, _ = hyper.standardise(jnp.asarray(np.concatenate([y, 50 * np.ones(pad)])), jnp.asarray(mask))
    cp = jnp.asarray(np.concatenate([counts, np.ones(pad)])) if with_counts else None
    g = jax.jit(jax.grad(lambda h: hyper.log_marginal_likelihood(h, jnp.asarray(Xp), y_std, jnp.asarray(mask), cp)))(h)
    got = np.concatenate([np.asarray(g.log_ls), [float(g.log_scale), float(g.log_noise)]])
    np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-8)


def test_collapsed_bound_matches_dense_titsias_reference_and_ignores_masked_rows_and_slots():
    """Titsias (2009) Eq. 9 against dense NumPy: log N(y; 0, Q_nn + s2 I) - tr(K_nn - Q_nn) / (2 s2) with
    Q_nn = K_nZ (K_ZZ + jitter I)^{-1} K_Zn; padded data rows and empty landmark slots change nothing; with
    every point a landmark the bound is the exact log marginal likelihood (up to the jitter); it is below it
    for fewer landmarks; its gradient matches central differences."""
    X, y, h = gp_data()
    n = len(y)
    ys = (y - y.mean()) / y.std()
    ls, scale, s2 = np.exp(np.asarray(h.log_ls)), float(np.exp(h.log_scale)), float(np.exp(h.log_noise))
    Zi = np.array([0, 3, 5, 11, 17, 23, 31, 38])

    def dense_bound(theta, Zi):
        ls, scale, s2 = np.exp(theta[:3]), np.exp(theta[3]), np.exp(theta[4])
        Kzz = matern_dense(X[Zi], X[Zi], ls, scale) + hyper.JITTER * scale * np.eye(len(Zi))
        Kzn = matern_dense(X[Zi], X, ls, scale)
        Q = Kzn.T @ np.linalg.solve(Kzz, Kzn)
        C = Q + s2 * np.eye(n)
        _, logdet = np.linalg.slogdet(C)
        log_n = -0.5 * ys @ np.linalg.solve(C, ys) - 0.5 * logdet - 0.5 * n * np.log(2 * np.pi)
        return log_n - (n * scale - np.trace(Q)) / (2 * s2)

    theta = np.concatenate([np.log(ls), [np.log(scale), np.log(s2)]])
    pad = 5
    Xp = jnp.asarray(np.vstack([X, np.full((pad, 3), 0.5)]))
    mask = jnp.asarray(np.arange(n + pad) < n)
    y_std, _, _ = hyper.standardise(jnp.asarray(np.concatenate([y, 40 * np.ones(pad)])), mask)
    Z = jnp.asarray(np.vstack([X[Zi], np.full((3, 3), 0.5)]))  # three empty slots
    z_mask = jnp.asarray(np.arange(len(Zi) + 3) < len(Zi))
    bound = jax.jit(hyper.collapsed_bound)
    got = float(bound(h, Xp, y_std, mask, Z, z_mask))
    assert got == pytest.approx(dense_bound(theta, Zi), rel=1e-9)
    exact = float(hyper.log_marginal_likelihood(h, Xp, y_std, mask))
    assert got < exact - 1.0
    all_z = float(bound(h, Xp, y_std, mask, Xp, mask))
    assert all_z == pytest.approx(exact, rel=1e-4)
    g = jax.jit(jax.grad(hyper.collapsed_bound))(h, Xp, y_std, mask, Z, z_mask)
    got_g = np.concatenate([np.asarray(g.log_ls), [float(g.log_scale), float(g.log_noise)]])
    eps = 1e-5
    ref_g = np.array([(dense_bound(theta + eps * e, Zi) - dense_bound(theta - eps * e, Zi)) / (2 * eps)
                      for e in np.eye(5)])
    np.testing.assert_allclose(got_g, ref_g, rtol=1e-5, atol=1e-6)


def test_sparse_fit_raises_the_collapsed_bound_and_rejects_counts():
    X, y, h = gp_data()
    Xj, yj = jnp.asarray(X), jnp.asarray(y)
    mask = jnp.ones(len(y), bool)
    Z, z_mask = Xj[:10], jnp.ones(10, bool)
    fit = jax.jit(lambda h, steps: hyper.fit(h, Xj, yj, mask, steps, 0.05, inducing=(Z, z_mask)), static_argnums=1)
    _, info0 = fit(h, 0)
    h1, info = fit(h, 50)
    y_std, _, _ = hyper.standardise(yj, mask)
    assert float(info0["lml"]) == pytest.approx(float(hyper.collapsed_bound(h, Xj, y_std, mask, Z, z_mask)))
    assert float(info["lml"]) > float(info0["lml"]) + 1.0
    with pytest.raises(ValueError, match="counts"):
        hyper.fit(h, Xj, yj, mask, 1, 0.05, counts=jnp.ones(len(y)), inducing=(Z, z_mask))


def test_mle_recovers_the_lengthscales_of_gp_sampled_data_within_20_percent():
    n, d = 256, 2
    true_ls = np.array([0.2, 0.4])
    h_true = hyper.GPHyper(jnp.log(jnp.asarray(true_ls)), jnp.log(2.0), jnp.log(1e-3))

    @jax.jit
    def sample():  # a GP draw at n uniform points, in a buffer with 40 empty rows of garbage
        X = jax.random.uniform(jax.random.key(1), (n, d), dtype=jnp.float64)
        L = jnp.linalg.cholesky(hyper.masked_kernel(h_true, X, jnp.ones(n, bool)))
        y = 3.0 + L @ jax.random.normal(jax.random.key(2), (n,), dtype=jnp.float64)
        return jnp.concatenate([X, jnp.full((40, d), 0.5)]), jnp.concatenate([y, jnp.full((40,), -7.0)])

    Xp, yp = sample()
    mask = jnp.arange(n + 40) < n
    h0 = hyper.init_hyper(d)
    fit = jax.jit(lambda h, lr: hyper.fit(h, Xp, yp, mask, 150, lr))
    h, info = fit(h0, 0.1)
    ls = np.exp(np.asarray(h.log_ls))
    np.testing.assert_allclose(ls, true_ls, rtol=0.2)
    _, info0 = jax.jit(lambda h: hyper.fit(h, Xp, yp, mask, 0, 0.1))(h0)  # zero steps: the lml at h0
    assert float(info["lml"]) > float(info0["lml"]) + 50
    # warm start: more steps from the optimum stay there
    h2, _ = fit(h, 0.01)
    np.testing.assert_allclose(np.exp(np.asarray(h2.log_ls)), ls, rtol=0.05)


# --------------------------------------------------------------------------------------- acquisition

@pytest.mark.parametrize("centre", [[0.3, 0.7, 0.55], [1.3, 0.5, -0.2]])
def test_acquisition_finds_the_maximum_of_a_concave_function_in_the_box(centre):
    c = jnp.asarray(centre)
    A = jnp.array([[2.0, 0.3, 0.0], [0.3, 1.0, 0.2], [0.0, 0.2, 0.5]])  # positive definite: concave acq

    def acq(x):
        z = x - c
        return -jnp.einsum("qi,ij,qj->q", z, A, z)

    static = acquisition.AcqStatic(n_uniform=256, n_local=64, n_starts=3, steps=200)
    inc = jnp.full((2, 3), 0.5)
    x, v, info = jax.jit(lambda k: acquisition.maximize(k, acq, inc, jnp.array([True, False]), static, lr=0.02))(
        jax.random.key(0))
    assert np.all((np.asarray(x) >= 0) & (np.asarray(x) <= 1))
    # reference: the box-constrained maximiser by projected gradient ascent run to convergence
    ref = jnp.full(3, 0.5)
    for _ in range(5000):
        ref = jnp.clip(ref + 0.05 * (-2 * A @ (ref - c)), 0, 1)
    np.testing.assert_allclose(x, ref, atol=2e-3)
    assert float(v) == pytest.approx(float(acq(ref[None])[0]), abs=1e-5)
    assert float(info["refine_gain"]) >= 0.0


# -------------------------------------------------------------------------------------- subsets

def _buffer(n_valid=30, cap=40, d=2, seed=0):
    rng = np.random.default_rng(seed)
    X = jnp.asarray(rng.uniform(size=(cap, d)))
    y = jnp.asarray(np.sin(5 * np.asarray(X)).sum(1))
    valid = jnp.arange(cap) < n_valid
    return X, y, valid


@pytest.mark.parametrize("how", ["projection", "cosine", "random", "kmeanspp", "pivoted"])
def test_subset_keeps_forced_members_and_returns_m_distinct_valid_rows(how):
    X, y, _ = _buffer()
    n0, M = 5, 12
    h = hyper.init_hyper(2)

    @jax.jit
    def select(n):
        valid = jnp.arange(40) < n
        forced = subset.forced_rows(n, n0, 40)
        K = hyper.MATERN.k(hyper.kernel_params(h), X, X)
        key = jax.random.key(3)
        if how in ("projection", "cosine"):
            return subset.gssbo_subset(how, key, h, X, y, valid, forced, M, 0.01)
        if how == "random":
            return subset.random_subset(key, valid, forced, M)
        if how == "kmeanspp":
            return subset.kmeanspp_subset(key, K, valid, forced, M)
        return subset.pivoted_cholesky_subset(K, valid, forced, M)

    forced = subset.forced_rows(jnp.asarray(30), n0, 40)
    assert list(np.nonzero(np.asarray(forced))[0]) == [0, 1, 2, 3, 4, 29]
    idx, mask = select(jnp.asarray(30))
    idx = np.asarray(idx)[np.asarray(mask)]
    assert len(idx) == M == len(set(idx.tolist()))
    assert set(range(5)) | {29} <= set(idx.tolist()) and np.all(idx < 30)
    # with fewer valid rows than M, every valid row is kept
    i2, m2 = select(jnp.asarray(9))
    assert sorted(np.asarray(i2)[np.asarray(m2)].tolist()) == list(range(9))


def _dense_gradients(n=25, cap=32):
    """A buffer of n valid rows in capacity cap, its hyperparameters and (G (cap, cap) from
    subset.gradient_vectors, the dense float64 psi_i r_i of its valid rows (n, n))."""
    X, y, valid = _buffer(n_valid=n, cap=cap)
    h = hyper.GPHyper(jnp.log(jnp.array([0.3, 0.4])), jnp.log(1.0), jnp.log(1e-2))
    G = np.asarray(jax.jit(subset.gradient_vectors)(h, X, y, valid))
    Xv, yv = np.asarray(X)[:n], np.asarray(y)[:n]
    ys = (yv - yv.mean()) / yv.std()
    Ainv = np.linalg.inv(matern_dense(Xv, Xv, np.array([0.3, 0.4]), 1.0) + 1e-2 * np.eye(n))
    r = Ainv @ ys  # Eq. (3): the gradient of log p(y) w.r.t. y_i is -r_i
    return X, y, valid, h, G, Ainv * r[:, None]


def _dense_noise(key, n, cap, sigma_d2):
    """The N(0, sigma_d2) perturbation of the valid block, drawn as the rules draw it (row i from fold_in(key, i))."""
    return np.sqrt(sigma_d2) * np.asarray(subset.row_normals(key, cap, jnp.float64))[:n, :n]


def test_gradient_vectors_match_a_dense_reference():
    n = 25
    _, _, _, _, G, ref = _dense_gradients(n)
    np.testing.assert_allclose(G[:n, :n], ref, rtol=1e-8, atol=1e-10)
    assert np.all(G[n:] == 0) and np.all(G[:, n:] == 0)


@pytest.mark.parametrize("sigma_d2", [0.0, 0.01])
def test_cosine_rule_matches_a_dense_reference_of_eq1(sigma_d2):
    """cosine: Eq. (1) greedily, min summed cosine similarity of the perturbed normalised gradients."""
    n, M = 25, 10
    _, _, valid, _, G, ref = _dense_gradients(n)
    key = jax.random.key(4)
    forced = subset.forced_rows(jnp.asarray(n), 4, 32)
    idx, mask = jax.jit(subset.cosine_subset, static_argnums=4)(key, jnp.asarray(G), valid, forced, M, sigma_d2)
    Gt = ref + _dense_noise(key, n, 32, sigma_d2)
    Gn = Gt / np.linalg.norm(Gt, axis=1, keepdims=True)
    kept = [0, 1, 2, 3, n - 1]
    while len(kept) < M:
        score = Gn @ Gn[kept].sum(0)
        score[kept] = np.inf
        kept.append(int(np.argmin(score)))
    assert sorted(np.asarray(idx)[np.asarray(mask)].tolist()) == sorted(kept)


@pytest.mark.parametrize("sigma_d2", [0.0, 0.01, 1.0])
def test_projection_rule_matches_a_dense_gram_schmidt_reference(sigma_d2):
    """projection: keep the row whose perturbed gradient vector has the largest residual norm after projecting
    out the span of the kept ones (appendix greedy), written out with an explicit QR basis in numpy."""
    n, M = 25, 12
    _, _, valid, _, G, ref = _dense_gradients(n)
    key = jax.random.key(5)
    forced = subset.forced_rows(jnp.asarray(n), 4, 32)
    idx, mask = jax.jit(subset.projection_subset, static_argnums=4)(key, jnp.asarray(G), valid, forced, M, sigma_d2)
    Gt = ref + _dense_noise(key, n, 32, sigma_d2)
    kept = [0, 1, 2, 3, n - 1]
    while len(kept) < M:
        Q, _ = np.linalg.qr(Gt[kept].T)  # orthonormal basis of the kept vectors' span
        res = np.linalg.norm(Gt - (Gt @ Q) @ Q.T, axis=1)
        res[kept] = -np.inf
        kept.append(int(np.argmax(res)))
    chosen = np.asarray(idx)[np.asarray(mask)]
    assert sorted(chosen.tolist()) == sorted(kept)
    # the rule is not the cosine rule on these data (the test can tell the two apart)
    other, omask = subset.cosine_subset(key, jnp.asarray(G), valid, forced, M, sigma_d2)
    assert sorted(np.asarray(other)[np.asarray(omask)].tolist()) != sorted(kept)


def test_pivoted_rule_matches_a_dense_residual_variance_reference():
    """pivoted: keep the row of largest Nyström residual variance k_ii - K_iS K_SS^{-1} K_Si (greedy
    pivoted Cholesky on K), written out with dense solves in numpy."""
    n, M = 25, 12
    X, y, valid, h, _, _ = _dense_gradients(n)
    forced = subset.forced_rows(jnp.asarray(n), 4, 32)
    idx, mask = jax.jit(subset.gssbo_subset, static_argnums=(0, 7))("pivoted", jax.random.key(0), h, X, y, valid,
                                                                   forced, M, 0.01)
    K = matern_dense(np.asarray(X)[:n], np.asarray(X)[:n], np.array([0.3, 0.4]), 1.0)
    kept = [0, 1, 2, 3, n - 1]
    while len(kept) < M:
        KS = K[:, kept]
        res = np.diag(K) - np.einsum("is,is->i", KS, np.linalg.solve(K[np.ix_(kept, kept)], KS.T).T)
        res[kept] = -np.inf
        kept.append(int(np.argmax(res)))
    assert sorted(np.asarray(idx)[np.asarray(mask)].tolist()) == sorted(kept)


def test_gssbo_rule_names_gradient_is_a_deprecated_alias_and_others_are_errors():
    from sketchbo.algorithms import BOStatic
    from sketchbo.algorithms.subset_bo import gssbo_rule
    static = BOStatic(variant="gssbo", d=2, T=10, cap=10, n0=2, M=5, fit_steps=1,
                      acq=acquisition.AcqStatic(8, 8, 1, 1))
    assert gssbo_rule(static) == BO_ALGORITHMS["gssbo"].defaults["selection"]  # one default, two places
    for rule in subset.SELECTIONS:
        assert gssbo_rule(static._replace(selection=rule)) == rule
    with pytest.warns(FutureWarning, match="'cosine'"):
        assert gssbo_rule(static._replace(selection="gradient")) == "cosine"
    with pytest.raises(ValueError, match="projection"):
        gssbo_rule(static._replace(selection="nearest"))
    with pytest.raises(ValueError, match="choose one of"):
        subset.gssbo_subset("nearest", jax.random.key(0), hyper.init_hyper(2), jnp.zeros((4, 2)), jnp.zeros(4),
                            jnp.ones(4, bool), jnp.ones(4, bool), 2, 0.01)


def _subset_state(variant, n=40, M=16, d=3, cap=48, **static_kw):
    """A subset-BO state holding n samples of a smooth function of d inputs, and its factory."""
    from sketchbo.algorithms import BOStatic, build_bo
    from sketchbo.algorithms.subset_bo import SubsetParams
    static = BOStatic(variant=variant, d=d, T=cap, cap=cap, n0=6, M=M, fit_steps=5,
                      acq=acquisition.AcqStatic(256, 64, 2, 5), **static_kw)
    alg = build_bo(BO_ALGORITHMS[variant], static)
    f = jnp.asarray
    params = SubsetParams(beta_c=f(0.2), sigma_d2=f(0.01), C=f(1.0), lr_fit=f(0.05), lr_acq=f(0.01), local_scale=f(0.05))
    rng = np.random.default_rng(7)
    X = rng.uniform(size=(cap, d))
    X[n - 5] = X[n - 4] + 1e-3  # a near-duplicate pair
    y = np.sin(4 * X).sum(1) + X[:, 0]
    state = alg.init(jax.random.key(0), BoxSet(jnp.zeros(d), jnp.ones(d)), params)
    state = alg.update(state, Feedback(f(X), f(y), jnp.arange(cap) < n), params)
    return alg, params, state._replace(t=jnp.asarray(n, jnp.int32)), X[:n], y[:n]


@pytest.mark.parametrize("variant,kw", [("gssbo", {}), ("rssbo", {}), ("gssbo", {"selection": "pivoted"}),
                                        ("gssbo", {"selection": "projection"}), ("gssbo", {"selection": "cosine"}),
                                        ("gssbo", {"keep_best": True})])
def test_resparsify_ucb_is_the_dense_gp_on_the_chosen_rows_with_the_global_step(variant, kw):
    """The planned query's UCB is mu + sqrt(beta_t) sigma of an exact GP on D[idx] alone (targets standardised
    over the subset), beta_t = 0.2 d log(2t) with t the global step, and the subset keeps its forced rows."""
    n, M, d = 40, 16, 3
    alg, params, state, X, y = _subset_state(variant, n, M, d, **kw)
    new, info = jax.jit(alg.refit)(jax.random.key(1), state, params)
    idx = np.asarray(new.sub_idx)[np.asarray(new.sub_mask)]
    assert len(idx) == M == len(set(idx.tolist())) and set(range(6)) | {n - 1} <= set(idx.tolist())
    if kw.get("keep_best"):
        assert int(np.argmax(y)) in idx
    if "selection" in kw:  # the named rule's rows, with the previous hyperparameters and resparsify's subkey
        Xp = jnp.asarray(np.vstack([X, np.zeros((8, d))]))
        yp = jnp.asarray(np.concatenate([y, np.zeros(8)]))
        k_sel = jax.random.split(jax.random.key(1))[0]
        ref, rmask = subset.gssbo_subset(kw["selection"], k_sel, state.hyper, Xp, yp, jnp.arange(48) < n,
                                         subset.forced_rows(n, 6, 48), M, 0.01)
        assert sorted(np.asarray(ref)[np.asarray(rmask)].tolist()) == sorted(idx.tolist())
    h = new.hyper
    ls, sc, s2 = np.exp(np.asarray(h.log_ls)), float(np.exp(h.log_scale)), float(np.exp(h.log_noise))
    Xs, ys = X[idx], y[idx]
    z = (ys - ys.mean()) / ys.std()
    A = matern_dense(Xs, Xs, ls, sc) + s2 * np.eye(M)
    xq = np.asarray(new.next_x)[None]
    kq = matern_dense(xq, Xs, ls, sc)[0]
    mu = ys.mean() + ys.std() * kq @ np.linalg.solve(A, z)
    var = ys.std() ** 2 * (sc - kq @ np.linalg.solve(A, kq))
    beta = 0.2 * d * np.log(2 * (n + 1))  # the planned query is step n + 1
    assert float(info.beta) == pytest.approx(beta, rel=1e-12)
    assert float(info.ucb) == pytest.approx(mu + np.sqrt(beta) * np.sqrt(max(var, 0.0)), rel=1e-6, abs=1e-9)


def test_dynamic_buffer_size_follows_the_cost_model():
    assert dynamic_buffer_size(20, 4.0, 70.0) == 102  # "M is usually around 100" (GSSBO §6.1)
    sizes = [dynamic_buffer_size(20, z, 70.0) for z in (2, 4, 6, 8)]
    assert sizes == sorted(sizes) and len(set(sizes)) == 4
    for z in (2.0, 4.0, 8.0):  # pure cubic model: c(M) = M^3 > Z n0^3 first at ceil(n0 Z^(1/3))
        m = dynamic_buffer_size(20, z, 0.0)
        assert m ** 3 > z * 20 ** 3 >= (m - 1) ** 3
    hyper_ = box.resolve_hyperparameters("gssbo", {"Z": 2.0}, 1000)
    assert hyper_["M_resolved"] == dynamic_buffer_size(20, 2.0, 70.0)
    assert box.resolve_hyperparameters("rssbo", {"M": 64}, 1000)["M_resolved"] == 64


def test_nystrom_with_every_row_as_landmark_equals_the_exact_gp():
    X, y, valid = _buffer(n_valid=20, cap=24, d=3)
    h = hyper.GPHyper(jnp.log(jnp.array([0.4, 0.5, 0.6])), jnp.log(1.3), jnp.log(1e-2))
    data = Data(X, jnp.where(valid, y, 0.0), valid.astype(X.dtype), jnp.asarray(20, jnp.int32))
    Xq = jnp.asarray(np.random.default_rng(5).uniform(size=(7, 3)))

    @jax.jit
    def both(Xq):
        idx, mask = subset.first_rows(valid, 24)
        predict, _ = _nystrom_predict(h, data, idx, mask, valid, jnp.where(valid, y, 0.0))
        idx8, mask8 = subset.first_rows(valid, 8)
        few, _ = _nystrom_predict(h, data, idx8, mask8, valid, jnp.where(valid, y, 0.0))
        return predict(Xq), hyper.predict(hyper.posterior(h, X, y, valid), Xq), few(Xq)

    (m1, v1), (m2, v2), (_, v8) = both(Xq)
    np.testing.assert_allclose(m1, m2, rtol=1e-7)
    np.testing.assert_allclose(v1, v2, rtol=1e-5, atol=1e-10)
    assert np.all(np.asarray(v8) >= np.asarray(v2) - 1e-10)  # fewer landmarks: DTC variance >= exact


def test_repeated_evaluations_share_a_row_for_mini_meta_only():
    data = Data(jnp.zeros((6, 2)), jnp.zeros(6), jnp.zeros(6), jnp.asarray(2, jnp.int32))
    xs = jnp.tile(jnp.array([[0.1, 0.2]]), (8, 1))
    ys = jnp.arange(8.0)
    valid = (jnp.arange(8) >= 3) & (jnp.arange(8) < 6)  # a batch of three evaluations
    merged = append_batch(data, xs, ys, valid, True, n0=2)
    assert int(merged.n) == 3 and float(merged.count[2]) == 3 and float(merged.ysum[2]) == 3 + 4 + 5
    plain = append_batch(data, xs, ys, valid, False, n0=2)
    assert int(plain.n) == 5 and list(np.asarray(plain.ysum[2:5])) == [3, 4, 5]


def test_bad_hyperparameters_are_clear_errors():
    with pytest.raises(ValueError, match="algorithm.M=5"):
        box.resolve_hyperparameters("gssbo", {"M": 5}, 100)
    with pytest.raises(ValueError, match="algorithm.Z=1"):
        box.resolve_hyperparameters("gssbo", {"Z": 1}, 100)
    with pytest.raises(ValueError, match=r"no parameter\(s\) \['qbar'\]"):
        box.resolve_hyperparameters("std_gp_ucb", {"qbar": 2}, 100)
    with pytest.raises(ValueError, match=r"algorithm=.bbkb. runs on a finite candidate set \(domain .arms.\); algorithms for this problem: \[.bnn_ucb."):
        box.resolve_hyperparameters("bbkb", {}, 100)
    with pytest.raises(ValueError, match="optimises over a box: pass a box problem"):
        sb.run("gssbo", make_problem("gp_sample", A=10), T=5)
    with pytest.raises(ValueError, match=r"algorithm.selection='nearest'.*'projection', 'pivoted', 'cosine'"):
        box.resolve_hyperparameters("gssbo", {"selection": "nearest"}, 100)
    with pytest.raises(ValueError, match="algorithm.keep_best='yes'"):
        box.resolve_hyperparameters("rssbo", {"keep_best": "yes"}, 100)
    with pytest.raises(ValueError, match=r"no parameter\(s\) \['selection'\]"):
        box.resolve_hyperparameters("rssbo", {"selection": "pivoted"}, 100)
    with pytest.raises(ValueError, match="algorithm.n0=30"):
        sb.run("gssbo", make_problem("hartmann6"), T=20, params={"n0": 30})


# ---------------------------------------------------------------------------------- runs on Hartmann6

QUICK = {"n0": 10, "n_uniform": 512, "n_local": 128}
T_QUICK = 60


@pytest.fixture(scope="module")
def hartmann_runs():
    p = make_problem("hartmann6")
    out = {}
    for name in ("std_gp_ucb", "gssbo", "rssbo"):
        params = {**QUICK, **({"M": 30} if name != "std_gp_ucb" else {})}
        out[name] = sb.run(name, p, T=T_QUICK, n_seeds=2, params=params, progress=False)
    return p, out


@pytest.mark.parametrize("name", ["std_gp_ucb", "gssbo", "rssbo"])
def test_learns_on_hartmann6_below_uniform_random_search(hartmann_runs, name):
    p, runs = hartmann_runs
    res = runs[name]
    regret = res.traces["instant_regret"]
    assert np.all(regret >= -1e-9) and res.traces["x"].shape == (2, T_QUICK, 6)
    unif = res.hyperparameters["uniform_mean"] - p.f_min  # expected instant regret of uniform search
    after = regret[:, QUICK["n0"]:].mean(axis=1)  # the algorithm's own choices
    assert np.all(after < 0.75 * unif), (after, unif)
    assert np.all(res.regret_ratio < 1.0)
    if name != "std_gp_ucb":  # the subset holds M = 30 rows once |D| > 30
        assert np.all(res.traces["dict_size"][:, -1] == 30)
    else:
        assert np.all(res.traces["dict_size"][:, -1] == T_QUICK - 1)


def test_growing_the_buffer_and_single_seed_runs_give_the_same_trajectories(hartmann_runs):
    p, runs = hartmann_runs
    ref = runs["gssbo"]
    params = {**QUICK, "M": 30}
    grown = sb.run("gssbo", p, T=T_QUICK, n_seeds=2, params=params, progress=False, capacity=32)
    assert grown.capacity_events == ["sample buffer capacity 32 -> 60"]
    np.testing.assert_array_equal(grown.traces["x"], ref.traces["x"])
    np.testing.assert_array_equal(grown.traces["query"], np.tile(np.arange(T_QUICK), (2, 1)))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["kmeans_pp", "lr_first_m", "sparse_gp", "mini_gp_ucb"])
def test_other_baselines_learn_on_hartmann6(name):
    p = make_problem("hartmann6")
    params = {**QUICK, **({"M": 30} if "M" in BO_ALGORITHMS[name].defaults else {})}
    if "m" in BO_ALGORITHMS[name].defaults:
        params["m"] = 20
    res = sb.run(name, p, T=T_QUICK, n_seeds=2, params=params, progress=False)
    unif = res.hyperparameters["uniform_mean"] - p.f_min
    assert np.all(res.traces["instant_regret"][:, QUICK["n0"]:].mean(axis=1) < 0.75 * unif)


@pytest.mark.slow
@pytest.mark.parametrize("selection", ["pivoted", "projection", "cosine"])
def test_vmap_equals_map_over_seeds(selection):
    """Batched and single factorisations round differently and the fits amplify it (about 10x every two
    steps: 1e-10 by step 24); later a discrete choice (a subset row, an acquisition start) can flip, so the
    runs are compared over 24 steps."""
    p = make_problem("hartmann6")
    params = {"n0": 8, "M": 12, "n_uniform": 256, "n_local": 64, "selection": selection}
    kw = dict(T=24, n_seeds=2, params=params, progress=False)
    a = sb.run("gssbo", p, seed_axis="map", **kw)
    b = sb.run("gssbo", p, seed_axis="vmap", **kw)
    np.testing.assert_allclose(a.traces["x"], b.traces["x"], atol=1e-6)
    assert np.all(a.traces["dict_size"][:, -1] == 12)


# -------------------------------------------------------------------------------------------------- CLI

def _cli(tmp_path, *overrides):
    import os
    import subprocess
    import sys
    from pathlib import Path
    repo = Path(__file__).resolve().parent.parent
    env = {k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR" and not k.startswith("WANDB_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(repo), env.get("PYTHONPATH")]))
    cmd = [sys.executable, "-m", "sketchbo", f"hydra.run.dir={tmp_path}", "progress=false", *overrides]
    return subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True, timeout=600)


def test_cli_rejects_mismatched_algorithm_and_problem_before_running(tmp_path):
    proc = _cli(tmp_path, "algorithm=gp_ucb", "problem=hartmann6", "T=30")
    assert proc.returncode == 2 and "continuous box" in proc.stderr and "gssbo" in proc.stderr
    assert not (tmp_path / "summary.json").exists()


@pytest.mark.slow
def test_cli_runs_gssbo_on_hartmann6_and_writes_the_standard_result_files(tmp_path):
    proc = _cli(tmp_path, "algorithm=gssbo", "problem=hartmann6", "T=30", "n_seeds=2", "algorithm.n0=10",
                "algorithm.M=15", "algorithm.n_uniform=256", "algorithm.n_local=64")
    assert proc.returncode == 0, proc.stderr
    import json
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["algorithm"] == "gssbo" and summary["problem"] == "hartmann6"
    assert summary["hyperparameters"]["M_resolved"] == 15 and summary["max_dict_size"] == [15, 15]
    with np.load(tmp_path / "traces.npz") as tr:
        assert tr["x"].shape == (2, 30, 6) and tr["instant_regret"].shape == (2, 30)
        np.testing.assert_allclose(tr["instant_regret"].sum(1), summary["cumulative_regret"])
