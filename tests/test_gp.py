"""Numerical tests of the GP engines against a dense float64 exact GP."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sketchbo.gp import exact, nystrom
from sketchbo.kernels import get_kernel, kernel_params
from sketchbo.linalg import (
    FEW_ROWS, eig_on_width, psd_inv_sqrt, spd_inverse, take_rows, upper_triangular_gram, upper_triangular_inverse,
)

RBF = get_kernel("rbf")


def _problem(A=60, d=3, seed=0, n_pulls=40):
    rng = np.random.default_rng(seed)
    arms = jnp.asarray(rng.uniform(-1, 1, (A, d)))
    kp = kernel_params("rbf", d, sigma2=0.5)
    pulled = rng.integers(0, A // 2, n_pulls)  # repeats on purpose
    counts = np.bincount(pulled, minlength=A).astype(float)
    ysum = np.zeros(A)
    np.add.at(ysum, pulled, rng.normal(size=n_pulls))
    return arms, kp, jnp.asarray(counts), jnp.asarray(ysum)


def _pulled(counts, u_max=64):
    return nystrom.pulled_list(counts, u_max)[:2]


def _dict_of(counts, m_max):
    return nystrom.exact_dictionary(counts, m_max)[:2]


@pytest.mark.parametrize("lam", [0.05, 0.2, 1.0])
def test_dtc_equals_exact_gp_when_dictionary_holds_every_pulled_arm(lam):
    arms, kp, counts, ysum = _problem()
    idx, mask = _dict_of(counts, 40)
    kdiag = RBF.diag(kp, arms)
    post = nystrom.posterior(RBF, kp, arms, kdiag, idx, mask, *_pulled(counts), counts, ysum, lam)
    mean, var = exact.dense_posterior(RBF, kp, arms, counts, ysum, lam)
    np.testing.assert_allclose(post.mean, mean, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(post.var, var / lam, rtol=1e-8, atol=1e-10)  # lam-scaled units


def _partial_posterior(seed: int, used: int, lam: float, m: int = 12):
    """A posterior whose dictionary holds the first ``used`` pulled arms in ``m`` slots: (arms, kp, kdiag, idx, mask,
    post)."""
    arms, kp, counts, ysum = _problem(seed=seed)
    idx = jnp.asarray(np.r_[np.nonzero(np.asarray(counts))[0][:used], np.zeros(m - used, int)], jnp.int32)
    mask = jnp.arange(m) < used
    kdiag = RBF.diag(kp, arms)
    post = nystrom.posterior(RBF, kp, arms, kdiag, idx, mask, *_pulled(counts), counts, ysum, lam)
    return arms, kp, kdiag, idx, mask, post


def test_one_gemm_variance_equals_embedded_form_for_a_partial_dictionary():
    lam = 0.2
    arms, kp, kdiag, idx, mask, post = _partial_posterior(1, 7, lam)
    Xs = arms[idx]
    K_AS = nystrom.cross_kernel(RBF, kp, arms, Xs, mask)
    emb = jax.vmap(lambda k, kd: nystrom.embedded_variance(k, kd, post.W, post.Vinv, lam))(K_AS, kdiag)
    np.testing.assert_allclose(post.var, emb, rtol=1e-9, atol=1e-12)
    assert float(post.max_clamp) < 1e-10  # any clamped value was rounding only


def test_batched_embedded_variances_equal_the_one_arm_form():
    """The in-batch step's batched refresh (nystrom.embedded_variances) against embedded_variance arm by arm."""
    lam = 0.2
    arms, kp, kdiag, idx, mask, post = _partial_posterior(2, 9, lam)
    Vinv = nystrom.add_to_batch(post.Vinv, post.W, nystrom.cross_kernel(RBF, kp, arms[:1], arms[idx], mask)[0])
    K_AS = nystrom.cross_kernel(RBF, kp, arms, arms[idx], mask)
    one = jax.vmap(lambda k, kd: nystrom.embedded_variance(k, kd, post.W, Vinv, lam))(K_AS, kdiag)
    np.testing.assert_allclose(nystrom.embedded_variances(K_AS, kdiag, post.W, Vinv, lam), one, rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("n", [1, 8, FEW_ROWS, FEW_ROWS + 1, 128])
@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64])
def test_take_rows_equals_the_gather(n, dtype):
    """Rows read as slices (up to FEW_ROWS) or by a gather are the gather's rows, repeats and both ends included."""
    rng = np.random.default_rng(n)
    x = jnp.asarray(rng.standard_normal((3000, 8)), dtype)
    idx = jnp.asarray(np.r_[2999, rng.integers(0, 3000, n)][:n], jnp.int32).at[-1].set(0)
    got = jax.jit(take_rows)(x, idx)
    assert got.shape == (n, 8) and got.dtype == x.dtype
    np.testing.assert_array_equal(np.asarray(got), np.asarray(x)[np.asarray(idx)])


@pytest.mark.parametrize("n,size,p", [(20640, 96, 0.004), (20640, 96, 0.6), (500, 40, 0.0), (500, 40, 1.0),
                                      (30, 30, 0.5), (5, 8, 0.5)])
def test_first_true_equals_nonzero(n, size, p):
    """The dictionary's and the pulled arms' compaction (one top-k) against jnp.nonzero, counts above and below size."""
    mask = jnp.asarray(np.random.default_rng(n + size).random(n) < p)
    np.testing.assert_array_equal(nystrom.first_true(mask, size), jnp.nonzero(mask, size=size, fill_value=0)[0])


@pytest.mark.parametrize("used", [5, 32, 33, 64, 90])
@pytest.mark.parametrize("packed", [True, False])
def test_posterior_on_a_narrower_width_equals_the_full_one(used, packed):
    """``posterior_on_width`` (the resparsification on the narrowest width holding the dictionary, returned
    at m_max) equals ``posterior`` at m_max = 96: means, variances, mean weights, and the
    rotation-invariant products of the factors (W^T W = K_S^+, W^T V^{-1} W, B B^T), to float64 rounding; the
    V^{-1} it returns is I/lam on the empty slots, and W and B are zero there. Unpacked masks (a used slot
    after an empty one) take the width of their last used slot; a width that leaves out used slots gives
    other moments."""
    arms, kp, counts, ysum = _problem(A=200, d=3, seed=4, n_pulls=150)
    m_max, lam = 96, 0.2
    rng = np.random.default_rng(used)
    slots = np.arange(used) if packed else np.sort(rng.choice(m_max, used, replace=False))
    mask = np.zeros(m_max, bool)
    mask[slots] = True
    idx = jnp.asarray(np.where(mask, rng.permutation(200)[:m_max], 0), jnp.int32)
    mask = jnp.asarray(mask)
    kdiag = RBF.diag(kp, arms)
    args = (RBF, kp, arms, kdiag, idx, mask, *_pulled(counts), counts, ysum, lam)
    full = nystrom.posterior(*args)
    widths = nystrom.slot_widths(m_max)
    assert widths == (32, 48, 64, 80, 96)
    assert nystrom.slot_widths(32) == (16, 32) and nystrom.slot_widths(64) == (16, 32, 48, 64)
    assert nystrom.slot_widths(918) == (192, 368, 560, 736, 918) and nystrom.slot_widths(918, block=0) == (918,)
    assert nystrom.slot_widths(96, block=32, most=4) == (32, 64, 96)
    need = int(nystrom.width_index(mask, widths))
    last = int(np.flatnonzero(np.asarray(mask))[-1]) + 1  # slots up to the last used one
    assert widths[need] >= last and (need == 0 or widths[need - 1] < last)
    on_width = jax.jit(nystrom.posterior_on_width, static_argnums=(1,))
    if need > 0:
        assert float(np.max(np.abs(np.asarray(on_width(need - 1, *args).mean - full.mean)))) > 1e-3
    for index in range(need, len(widths)):
        post = on_width(index, *args)
        assert post.W.shape == post.Vinv.shape == post.B.shape == (m_max, m_max) and int(post.rank) == int(full.rank)
        for got, want in ((post.mean, full.mean), (post.var, full.var), (post.a, full.a),
                          (post.W.T @ post.W, full.W.T @ full.W), (post.B @ post.B.T, full.B @ full.B.T),
                          (post.W.T @ post.Vinv @ post.W, full.W.T @ full.Vinv @ full.W)):
            np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9 * float(np.max(np.abs(want))))
        empty = np.arange(m_max) >= widths[index]
        np.testing.assert_array_equal(np.asarray(post.Vinv)[np.ix_(empty, empty)], np.eye(int(empty.sum())) / lam)
        for factor in (post.W, post.B):
            assert not np.any(np.asarray(factor)[empty]) and not np.any(np.asarray(factor)[:, empty])


def test_eig_on_width_is_an_eigendecomposition_of_a_block_diagonal_matrix():
    """``linalg.eig_on_width``: for a symmetric matrix that is block diagonal beyond w with a diagonal lower
    block, the w x w block's eigenpairs with the lower diagonal appended satisfy M = U diag(e) U^T with U
    orthogonal (float64, 1e-12), at every width from w up; the eigenvalues are those of eigh on M."""
    rng = np.random.default_rng(0)
    G = rng.normal(size=(20, 20))
    M = np.zeros((48, 48))
    M[:20, :20] = G @ G.T
    M[20:, 20:] = np.diag(rng.uniform(0.1, 2.0, 28))
    M = jnp.asarray(M)
    for index, w in enumerate((24, 40, 48)):
        e, U = jax.jit(eig_on_width, static_argnums=(2,))(M, index, (24, 40, 48))
        np.testing.assert_allclose(U @ jnp.diag(e) @ U.T, M, atol=1e-12 * float(jnp.max(jnp.abs(M))))
        np.testing.assert_allclose(U.T @ U, np.eye(48), atol=1e-12)
        np.testing.assert_allclose(np.sort(e), np.linalg.eigvalsh(np.asarray(M)), rtol=1e-10, atol=1e-12)
        if w < 48:  # the lower block is carried as it is
            np.testing.assert_array_equal(e[w:], jnp.diagonal(M)[w:])


def test_dtc_against_explicit_nystrom_formula():
    """BBKB Eq. (1)-(2) written with an explicit embedding Z = K_AS K_SS^{+1/2} (dense numpy)."""
    arms, kp, counts, ysum = _problem(seed=2)
    lam = 0.3
    sel = np.nonzero(np.asarray(counts))[0][:9]
    idx = jnp.asarray(sel, jnp.int32)
    mask = jnp.ones(9, bool)
    kdiag = RBF.diag(kp, arms)
    post = nystrom.posterior(RBF, kp, arms, kdiag, idx, mask, *_pulled(counts), counts, ysum, lam)
    A_ = np.asarray(arms)
    Kss = np.asarray(RBF.k(kp, A_[sel], A_[sel]))
    w, U = np.linalg.eigh(Kss)
    Z = np.asarray(RBF.k(kp, A_, A_[sel])) @ U @ np.diag(w ** -0.5) @ U.T
    n = np.asarray(counts)
    V = Z.T @ (n[:, None] * Z) + lam * np.eye(9)
    mu = Z @ np.linalg.solve(V, Z.T @ np.asarray(ysum))
    var = (1.0 - np.sum(Z * Z, 1)) / lam + np.sum(Z * np.linalg.solve(V, Z.T).T, 1)
    np.testing.assert_allclose(post.mean, mu, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(post.var, var, rtol=1e-8, atol=1e-10)


def test_in_batch_update_equals_recomputation_from_scratch():
    arms, kp, counts, ysum = _problem(seed=3)
    lam = 0.2
    idx, mask = _dict_of(counts, 40)
    kdiag = RBF.diag(kp, arms)
    post = nystrom.posterior(RBF, kp, arms, kdiag, idx, mask, *_pulled(counts), counts, ysum, lam)
    Xs = arms[idx]
    batch = [50, 51, 50, 7]  # new arms, a repeat, an arm already pulled
    Vinv = post.Vinv
    for i in batch:
        Vinv = nystrom.add_to_batch(Vinv, post.W, nystrom.cross_kernel(RBF, kp, arms[i][None], Xs, mask)[0])
    counts2 = counts.at[jnp.asarray(batch)].add(1.0)
    # same dictionary, batch pulls added to V: the variance does not depend on the rewards
    ref = nystrom.posterior(RBF, kp, arms, kdiag, idx, mask, *_pulled(counts2), counts2, ysum, lam)
    K_AS = nystrom.cross_kernel(RBF, kp, arms, Xs, mask)
    upd = jax.vmap(lambda k, kd: nystrom.embedded_variance(k, kd, post.W, Vinv, lam))(K_AS, kdiag)
    np.testing.assert_allclose(upd, ref.var, rtol=1e-8, atol=1e-12)


def test_rank_deficient_dictionary_with_duplicate_arms_stays_finite_and_correct():
    arms, kp, counts, ysum = _problem(seed=4)
    arms = arms.at[1].set(arms[0]).at[2].set(arms[0])  # three identical arms
    counts = counts.at[0].set(2.0).at[1].set(1.0).at[2].set(3.0)
    lam = 0.1
    idx, mask = _dict_of(counts, 40)
    kdiag = RBF.diag(kp, arms)
    post = nystrom.posterior(RBF, kp, arms, kdiag, idx, mask, *_pulled(counts), counts, ysum, lam)
    assert int(post.rank) < int(jnp.sum(mask))  # duplicates dropped by the eigenvalue threshold
    assert np.all(np.isfinite(post.mean)) and np.all(np.isfinite(post.var))
    mean, var = exact.dense_posterior(RBF, kp, arms, counts, ysum, lam)
    np.testing.assert_allclose(post.mean, mean, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(post.var, var / lam, rtol=1e-7, atol=1e-9)


def test_psd_inv_sqrt_drops_small_eigenvalues_and_masked_slots():
    rng = np.random.default_rng(5)
    B = rng.normal(size=(6, 3))
    K = jnp.asarray(np.pad(B @ B.T, ((0, 2), (0, 2))) + np.diag([0] * 6 + [7.0, 7.0]))  # rank 3 + 2 masked
    mask = jnp.arange(8) < 6
    W, rank = psd_inv_sqrt(K, mask)
    assert int(rank) == 3
    assert np.all(np.asarray(W)[:, 6:] == 0)
    Kp = np.asarray(W.T @ W)[:6, :6]
    np.testing.assert_allclose(Kp, np.linalg.pinv(np.asarray(K)[:6, :6], rcond=1e-10), atol=1e-8)


@pytest.mark.parametrize("seed", range(5))
def test_lemma4_deterministic_in_batch_bound(seed):
    """BBKB Lemma 4 (squared form of the proofs): s~^2_fb(x)/(1 + sum_s s~^2_fb(x_s)) <= s~^2_t(x) <= s~^2_fb(x)."""
    rng = np.random.default_rng(100 + seed)
    arms, kp, counts, ysum = _problem(A=80, d=2, seed=seed, n_pulls=int(rng.integers(5, 40)))
    lam = float(rng.choice([0.05, 0.2, 1.0]))
    pulled = np.nonzero(np.asarray(counts))[0]
    sel = rng.choice(pulled, size=max(1, len(pulled) // 2), replace=False)
    m_max = 40
    idx = jnp.asarray(np.r_[sel, np.zeros(m_max - len(sel), int)], jnp.int32)
    mask = jnp.arange(m_max) < len(sel)
    kdiag = RBF.diag(kp, arms)
    post = nystrom.posterior(RBF, kp, arms, kdiag, idx, mask, *_pulled(counts), counts, ysum, lam)
    Xs = arms[idx]
    batch = rng.integers(0, 80, int(rng.integers(1, 30)))
    Vinv = post.Vinv
    for i in batch:
        Vinv = nystrom.add_to_batch(Vinv, post.W, nystrom.cross_kernel(RBF, kp, arms[i][None], Xs, mask)[0])
    K_AS = nystrom.cross_kernel(RBF, kp, arms, Xs, mask)
    var_t = np.asarray(jax.vmap(lambda k, kd: nystrom.embedded_variance(k, kd, post.W, Vinv, lam))(K_AS, kdiag))
    var_fb = np.asarray(post.var)
    lower = var_fb / (1.0 + var_fb[batch].sum())
    assert np.all(var_t <= var_fb * (1 + 1e-9) + 1e-12)
    assert np.all(var_t >= lower * (1 - 1e-9) - 1e-12)


@pytest.mark.parametrize("n_obs", [30, 300])  # few repeats, and many
def test_incremental_exact_gp_equals_dense_reference(n_obs):
    arms, kp, _, _ = _problem(A=50, seed=6)
    lam = 0.2
    rng = np.random.default_rng(6)
    pulls = rng.integers(0, 50, n_obs)
    ys = rng.normal(size=n_obs)
    gp = exact.init_exact(RBF.diag(kp, arms), 50)
    add_obs = jax.jit(lambda gp, j: exact.add_observation(RBF, kp, arms, gp, j, lam))
    add_fb = jax.jit(lambda gp, q, y: exact.add_feedback(gp, q, y, lam))
    start = 0
    for r, j in enumerate(pulls):
        gp = add_obs(gp, int(j))
        if r in (9, 140, n_obs - 1):  # feedback in batches
            q = np.full(n_obs, -1)
            q[start:r + 1] = pulls[start:r + 1]
            gp = add_fb(gp, jnp.asarray(q), jnp.asarray(ys))
            start = r + 1
    counts = np.bincount(pulls, minlength=50).astype(float)
    ysum = np.zeros(50)
    np.add.at(ysum, pulls, ys)
    mean, var = exact.dense_posterior(RBF, kp, arms, counts, ysum, lam)
    np.testing.assert_allclose(gp.mean, mean, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(gp.var, var, rtol=1e-8, atol=1e-10)


def test_resampling_probabilities_code_and_paper():
    var = jnp.asarray([0.1, 0.3, 0.6, 0.2])
    counts = jnp.asarray([2.0, 1.0, 0.0, 3.0])
    code = nystrom.inclusion_probability(var, counts, 2.0, per_pull=False)
    paper = nystrom.inclusion_probability(var, counts, 2.0, per_pull=True)
    np.testing.assert_allclose(code, [0.4, 0.6, 0.0, 1.0])
    np.testing.assert_allclose(paper, [1 - 0.8 ** 2, 0.6, 0.0, 1 - 0.6 ** 3])
    # empirical frequencies of the sampler match the probabilities
    keys = jax.random.split(jax.random.key(0), 4000)
    masks = jax.vmap(lambda k: nystrom.resample_dictionary(k, var, counts, 2.0, True, 4)[1])(keys)
    idxs = jax.vmap(lambda k: nystrom.resample_dictionary(k, var, counts, 2.0, True, 4)[0])(keys)
    freq = np.zeros(4)
    for i, m in zip(np.asarray(idxs), np.asarray(masks)):
        freq[i[m]] += 1
    np.testing.assert_allclose(freq / 4000, paper, atol=0.03)


def test_nearly_coincident_dictionary_stays_finite_and_exact():
    """A fine 1-D grid (BKB Fig. 1 setting): K_S has eigenvalues near m*eps*max; V stays positive definite
    and the posterior matches the exact GP when the dictionary holds every pulled arm."""
    rng = np.random.default_rng(7)
    arms = jnp.asarray(np.linspace(0, 1, 1000)[:, None])
    kp = kernel_params("rbf", 1, sigma2=0.01)  # k = exp(-(x - x')^2 * 100 / 2)
    pulled = rng.integers(0, 500, 215)  # t = 215 points in [0, 0.5]
    counts = jnp.asarray(np.bincount(pulled, minlength=1000).astype(float))
    ysum = jnp.zeros(1000).at[jnp.asarray(pulled)].add(jnp.asarray(rng.normal(size=215)))
    lam = 0.01
    idx, mask = _dict_of(counts, 256)
    kdiag = RBF.diag(kp, arms)
    post = nystrom.posterior(RBF, kp, arms, kdiag, idx, mask, *_pulled(counts, 256), counts, ysum, lam)
    assert int(post.rank) < int(jnp.sum(mask))  # near-duplicates dropped
    assert np.all(np.isfinite(post.mean)) and np.all(np.isfinite(post.var))
    mean, var = exact.dense_posterior(RBF, kp, arms, counts, ysum, lam)
    # dropping eigenvalues below max * m * eps truncates directions of size ~1e-14: small, not zero
    np.testing.assert_allclose(post.mean, mean, atol=1e-4)
    np.testing.assert_allclose(post.var * lam, var, atol=1e-4)


def test_bkb_never_selects_outside_the_arm_set_on_an_ill_conditioned_problem():
    from sketchbo.problems import make_problem
    from sketchbo import run

    res = run("bkb", make_problem("gp_sample", A=80, d=1, sigma2=0.05), T=40, n_seeds=2, progress=False,
              params={"lam": 0.05, "F": 1.0})
    assert res.traces["query"].max() < 80 and np.all(np.isfinite(res.cumulative_regret))


@pytest.mark.parametrize("n", [5, 128, 129, 300])
def test_blocked_triangular_and_spd_inverses_match_numpy(n):
    """The product-based inverses (GSSBO's gradient vectors) against numpy's inverse, float64, below, at
    and above one block and with an odd split."""
    rng = np.random.default_rng(n)
    B = rng.normal(size=(n, n))
    A = B @ B.T / n + 0.05 * np.eye(n)
    L = np.linalg.cholesky(A)
    Ui = np.asarray(jax.jit(upper_triangular_inverse)(jnp.asarray(L.T)))
    np.testing.assert_allclose(Ui, np.linalg.inv(L.T), rtol=1e-9, atol=1e-9 * np.abs(Ui).max())
    assert np.all(np.tril(Ui, -1) == 0)
    Ai = np.asarray(jax.jit(spd_inverse)(jnp.asarray(L)))
    ref = np.linalg.inv(A)
    np.testing.assert_allclose(Ai, ref, rtol=1e-8, atol=1e-10 * np.abs(ref).max())
    assert np.array_equal(Ai, Ai.T)  # the blocked Gram's off-diagonal blocks are one product and its transpose
    X = np.triu(rng.normal(size=(n, n)))
    np.testing.assert_allclose(np.asarray(jax.jit(upper_triangular_gram)(jnp.asarray(X))), X @ X.T,
                               rtol=1e-12, atol=1e-12 * n)
