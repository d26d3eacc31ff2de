"""Cyclic Jacobi eigensolver (linalg.jacobi_eigh) against LAPACK's eigh, the rank threshold of the dictionary's
pseudo-inverse root with either solver (docs/architecture.md#numerics), and a BBKB run with the Jacobi solver forced."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sketchbo as sb
from sketchbo.domains import finite
from sketchbo import linalg
from sketchbo.linalg import jacobi_eigh, psd_inv_sqrt, resolve_eig_method, round_robin, sym_eig
from sketchbo.problems import make_problem


def check_decomposition(A, w, V, tol):
    """Orthonormal eigenvectors, A = V diag(w) V^T, ascending w: all to ``tol`` relative to ||A||."""
    A, w, V = (np.asarray(x, np.float64) for x in (A, w, V))
    m = A.shape[0]
    scale = np.abs(A).max()
    assert w.shape == (m,) and V.shape == (m, m)
    assert np.all(np.diff(w) >= 0)
    np.testing.assert_allclose(V.T @ V, np.eye(m), rtol=0, atol=tol)
    np.testing.assert_allclose(V @ np.diag(w) @ V.T, A, rtol=0, atol=tol * scale)


def rbf(X, width):
    return np.exp(-((X[:, None] - X[None]) ** 2).sum(-1) / (2 * width ** 2))


def test_round_robin_meets_every_pair_once():
    for n in (2, 4, 10, 34):
        steps = round_robin(n)
        assert len(steps) == n - 1
        for pairs in steps:  # n/2 disjoint pairs per step
            assert sorted(i for pair in pairs for i in pair) == list(range(n))
        assert len({pair for pairs in steps for pair in pairs}) == n * (n - 1) // 2  # every pair once a sweep
        X = np.arange(n * 3).reshape(n, 3)  # the slices of the solver move the slots as round_robin says
        np.testing.assert_array_equal(linalg._permute(jnp.asarray(X), n // 2, 0), X[linalg._move(n // 2)])
        np.testing.assert_array_equal(linalg._permute(jnp.asarray(X.T), n // 2, 1), X.T[:, linalg._move(n // 2)])


@pytest.mark.parametrize("m", [1, 2, 3, 8, 33, 80, 128])
def test_random_spd_matches_eigh(m):
    X = np.random.default_rng(m).standard_normal((m, m))
    A = X @ X.T / m + 0.5 * np.eye(m)  # condition number about 20
    w, V = jacobi_eigh(jnp.asarray(A))
    np.testing.assert_allclose(w, np.linalg.eigvalsh(A), rtol=1e-12)
    check_decomposition(A, w, V, 1e-12)
    # eigenvectors up to sign (the eigenvalues are distinct)
    _, U = np.linalg.eigh(A)
    np.testing.assert_allclose(np.abs(np.sum(np.asarray(V) * U, 0)), 1.0, atol=1e-9)


def test_indefinite_symmetric_matrix():
    X = np.random.default_rng(0).standard_normal((20, 20))
    A = X + X.T
    w, V = jacobi_eigh(jnp.asarray(A))
    np.testing.assert_allclose(w, np.linalg.eigvalsh(A), rtol=0, atol=1e-12 * np.abs(A).max())
    check_decomposition(A, w, V, 1e-12)


def test_ill_conditioned_kernel_of_close_points():
    """RBF kernel of 40 points within 0.05 of each other at width 0.3: condition ~1e18 (numerical rank ~12)."""
    X = 0.05 * np.random.default_rng(1).uniform(size=(40, 2))
    K = rbf(X, 0.3)
    w, V = jacobi_eigh(jnp.asarray(K))
    ref = np.linalg.eigvalsh(K)
    np.testing.assert_allclose(w, ref, rtol=0, atol=1e-13 * ref.max())  # eigh itself is only accurate to eps ||K||
    check_decomposition(K, w, V, 1e-12)


@pytest.mark.parametrize("m,r", [(12, 5), (33, 10), (64, 64)])
def test_rank_threshold_gives_the_same_pseudo_inverse_root(m, r):
    """Rank-deficient PSD K (rank r) with two masked slots: same rank, same K^+ = W^T W, same embedding norms."""
    rng = np.random.default_rng(r)
    X = rng.standard_normal((m, r))
    K = X @ X.T / r
    mask = np.ones(m, bool)
    mask[[1, m - 2]] = False
    W_e, rank_e = psd_inv_sqrt(jnp.asarray(K), jnp.asarray(mask), "eigh")
    W_j, rank_j = psd_inv_sqrt(jnp.asarray(K), jnp.asarray(mask), "jacobi")
    assert int(rank_j) == int(rank_e) == min(r, m - 2)
    P_e, P_j = np.asarray(W_e.T @ W_e), np.asarray(W_j.T @ W_j)
    np.testing.assert_allclose(P_j, P_e, rtol=0, atol=1e-9 * np.abs(P_e).max())
    assert np.all(np.asarray(W_j)[:, ~mask] == 0)  # empty slots stay empty
    Km = K * mask[:, None] * mask[None, :]
    np.testing.assert_allclose(P_j, np.linalg.pinv(Km, rcond=1e-10, hermitian=True), rtol=0,
                               atol=1e-9 * np.abs(P_e).max())


def test_rank_threshold_on_a_kernel_of_close_points():
    """Near the threshold max_eig m eps both solvers keep the same eigenvalues, and the embedding norms
    ||K^{+1/2} k_S(x)||^2 = k_S(x)^T K^+ k_S(x) (what the posterior uses) agree."""
    rng = np.random.default_rng(2)
    Xs = 0.2 * rng.uniform(size=(30, 2))
    Xq = 0.2 * rng.uniform(size=(50, 2))
    K, kq = rbf(Xs, 0.3), np.exp(-((Xq[:, None] - Xs[None]) ** 2).sum(-1) / (2 * 0.3 ** 2))
    mask = jnp.ones(30, bool)
    (W_e, rank_e), (W_j, rank_j) = (psd_inv_sqrt(jnp.asarray(K), mask, meth) for meth in ("eigh", "jacobi"))
    ev = np.linalg.eigvalsh(K)
    thr = ev.max() * 30 * np.finfo(float).eps
    assert int(rank_e) == int(rank_j) == np.sum(ev > thr)
    z_e, z_j = np.asarray(W_e) @ kq.T, np.asarray(W_j) @ kq.T
    np.testing.assert_allclose((z_j ** 2).sum(0), (z_e ** 2).sum(0), rtol=0, atol=1e-8)
    assert np.all((z_j ** 2).sum(0) <= 1 + 1e-8)  # z^T z <= k(x, x) = 1


def test_vmap_over_seeds_matches_single_calls():
    rng = np.random.default_rng(3)
    X = rng.standard_normal((10, 24, 24))
    A = np.einsum("sij,skj->sik", X, X) / 24 + np.eye(24)
    w, V = jax.vmap(jacobi_eigh)(jnp.asarray(A))
    for s in range(10):
        w1, V1 = jacobi_eigh(jnp.asarray(A[s]))
        np.testing.assert_allclose(w[s], w1, rtol=1e-14)
        np.testing.assert_allclose(V[s], V1, rtol=0, atol=1e-13)
        np.testing.assert_allclose(w[s], np.linalg.eigvalsh(A[s]), rtol=1e-12)
        check_decomposition(A[s], w[s], V[s], 1e-12)
    # psd_inv_sqrt with masks, vmapped
    masks = jnp.asarray(np.arange(24)[None, :] < rng.integers(10, 25, size=(10, 1)))
    W, rank = jax.vmap(lambda k, mk: psd_inv_sqrt(k, mk, "jacobi"))(jnp.asarray(A), masks)
    We, rank_e = jax.vmap(lambda k, mk: psd_inv_sqrt(k, mk, "eigh"))(jnp.asarray(A), masks)
    np.testing.assert_array_equal(rank, rank_e)
    np.testing.assert_allclose(jnp.einsum("sji,sjk->sik", W, W), jnp.einsum("sji,sjk->sik", We, We), atol=1e-11)


def test_float32():
    X = np.random.default_rng(4).standard_normal((33, 33))
    A = (X @ X.T / 33 + 0.5 * np.eye(33)).astype(np.float32)
    w, V = jacobi_eigh(jnp.asarray(A))
    assert w.dtype == jnp.float32 and V.dtype == jnp.float32
    np.testing.assert_allclose(w, np.linalg.eigvalsh(A.astype(np.float64)), rtol=2e-5)
    check_decomposition(A, w, V, 2e-5)
    W, rank = psd_inv_sqrt(jnp.asarray(A), jnp.ones(33, bool), "jacobi")
    assert int(rank) == 33
    np.testing.assert_allclose(np.asarray(W.T @ W, np.float64), np.linalg.inv(A.astype(np.float64)), rtol=0,
                               atol=1e-4)


def test_method_selection():
    assert resolve_eig_method("eigh") == "eigh" and resolve_eig_method("jacobi") == "jacobi"
    assert resolve_eig_method("auto") == "eigh"  # on every backend until Jacobi is measured faster
    with pytest.raises(ValueError, match="eig_method='qr'"):
        sym_eig(jnp.eye(3), "qr")
    A = jnp.asarray(np.diag([3.0, 1.0, 2.0]))
    for method in ("auto", "eigh", "jacobi"):
        np.testing.assert_allclose(sym_eig(A, method)[0], [1.0, 2.0, 3.0])


@pytest.mark.extended
def test_bbkb_run_with_jacobi_gives_the_same_queries(monkeypatch):
    """BBKB in float64 with the dictionary's eigendecompositions by Jacobi (vmapped seeds): the same pulls as
    with eigh (seeds by lax.map).

    Every posterior quantity is a spectral function of K_S and V (invariant to the eigenvectors' signs and
    to rotations inside repeated eigenvalues), so the two solvers differ by rounding only."""
    problem = make_problem("gp_sample", A=100, d=2, sigma2=0.2, seed=2)
    make_static = finite.make_static
    results = {}
    for method, seed_axis in (("eigh", "map"), ("jacobi", "vmap")):  # Jacobi vmapped over the seeds
        monkeypatch.setattr(finite, "make_static",
                            lambda *a, _m=method, **k: make_static(*a, **k)._replace(eig_method=_m))
        results[method] = sb.run("bbkb", problem, T=100, n_seeds=2, progress=False, seed_axis=seed_axis,
                                     params={"C": 2.0, "lam": 0.2, "m_max": 32})
    e, j = results["eigh"], results["jacobi"]
    # m_max = 32 overflows and grows to 51: Jacobi also runs at an odd size (one padding row and column)
    assert e.max_dict_size.max() > 32 and any("m_max=51" in ev for ev in j.capacity_events)
    np.testing.assert_array_equal(j.traces["query"], e.traces["query"])
    np.testing.assert_array_equal(j.traces["dict_size"], e.traces["dict_size"])
    np.testing.assert_allclose(j.regret_ratio, e.regret_ratio, rtol=1e-12)


def test_benchmark_script_runs_at_tiny_sizes(tmp_path):
    """scripts/bench_eig.py at tiny sizes (XLA's backend optimisation off, as in tests/test_bench.py): a row per
    m with positive times and an accurate Jacobi, the sweep counts, bad sizes refused with the option's name."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    env = dict(os.environ, XLA_FLAGS="--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true",
               PYTHONPATH=os.pathsep.join([str(repo), os.environ.get("PYTHONPATH", "")]))

    def script(*args):
        return subprocess.run([sys.executable, str(repo / "scripts" / "bench_eig.py"), *map(str, args)], cwd=repo,
                              env=env, capture_output=True, text=True, timeout=300)

    out = tmp_path / "eig.json"
    proc = script("--m", 5, 8, "--seeds", 2, "--repeats", 1, "--convergence", "--out", out)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rep = json.loads(out.read_text())
    assert [r["m"] for r in rep["rows"]] == [5, 8] and rep["machine"]["device"].startswith("cpu")
    for r in rep["rows"]:
        for key in ("eigh_single_ms", "jacobi_single_ms", "eigh_vmap_ms", "jacobi_vmap_ms"):
            assert np.isfinite(r[key]) and r[key] > 0
        assert r["jacobi_recon_err"] < 1e-13 and r["eigh_recon_err"] < 1e-13
    assert all(1 <= c["random_spd"] <= rep["default_sweeps"] for c in rep["convergence"])
    assert "| m | eigh 1 (ms) |" in proc.stdout and "load average" in proc.stdout
    proc = script("--m", 0, "--out", tmp_path / "x.json")
    assert proc.returncode == 2 and "--m: must be >= 1" in proc.stderr and not (tmp_path / "x.json").exists()
