"""Kernels against their textbook formulas."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sketchbo.gp import subset
from sketchbo.kernels import get_kernel, gram, kernel_params

rng = np.random.default_rng(0)
X = rng.normal(size=(7, 3))
Y = rng.normal(size=(5, 3))


def test_rbf_uses_the_papers_width():
    kp = kernel_params("rbf", 3, sigma2=5.0)
    K = np.asarray(get_kernel("rbf").k(kp, jnp.asarray(X), jnp.asarray(Y)))
    ref = np.exp(-((X[:, None] - Y[None]) ** 2).sum(-1) / (2 * 5.0))
    np.testing.assert_allclose(K, ref, rtol=1e-12)
    np.testing.assert_allclose(get_kernel("rbf").diag(kp, jnp.asarray(X)), 1.0)


def test_matern52_ard():
    ls = np.array([0.5, 1.0, 2.0])
    kp = kernel_params("matern52", 3, lengthscales=ls, variance=1.7)
    K = np.asarray(get_kernel("matern52").k(kp, jnp.asarray(X), jnp.asarray(Y)))
    r = np.sqrt((((X[:, None] - Y[None]) / ls) ** 2).sum(-1))
    ref = 1.7 * (1 + np.sqrt(5) * r + 5 * r ** 2 / 3) * np.exp(-np.sqrt(5) * r)
    np.testing.assert_allclose(K, ref, rtol=1e-10)
    Kxx = np.asarray(get_kernel("matern52").k(kp, jnp.asarray(X), jnp.asarray(X)))
    np.testing.assert_allclose(np.diag(Kxx), get_kernel("matern52").diag(kp, jnp.asarray(X)), rtol=1e-10)


def test_gram_has_the_exact_diagonal_so_a_greedy_pivot_starts_at_the_lowest_row():
    """kernels.gram: K(X, X) with kernel.diag on the diagonal: the Matérn diagonal is the output variance on every
    row, bit for bit (k(X, X) leaves a rounding residue there that differs per row), the rest is k(X, X)'s.
    With all diagonal entries equal, greedy pivoted Cholesky's first pivot is the lowest valid row, in a jitted
    and a vmapped program alike (before, the residue decided it: sparse_gp's vmapped and mapped seeds parted)."""
    kern = get_kernel("matern52")
    Z = jnp.asarray(np.random.default_rng(1).uniform(size=(40, 6)) * 7.3)
    kp = kernel_params("matern52", 6, lengthscales=np.linspace(0.1, 0.9, 6), variance=0.57917)
    G, K = np.asarray(gram(kern, kp, Z)), np.asarray(kern.k(kp, Z, Z))
    assert np.all(np.diag(G) == np.asarray(kern.diag(kp, Z)))
    off = ~np.eye(40, dtype=bool)
    np.testing.assert_array_equal(G[off], K[off])
    np.testing.assert_allclose(np.diag(K), np.diag(G), rtol=1e-12)  # measured: up to 1.9e-13 apart
    valid = jnp.arange(40) >= 3
    none = jnp.zeros(40, bool)

    def first_pivot(Zs):
        idx, mask = subset.pivoted_cholesky_subset(gram(kern, kp, Zs), valid, none, 1)
        return idx[0]

    assert int(jax.jit(first_pivot)(Z)) == 3
    assert np.all(np.asarray(jax.jit(jax.vmap(first_pivot))(jnp.stack([Z, Z[::-1], Z * 0.5]))) == 3)


def test_linear():
    kp = kernel_params("linear", 3, variance=2.0)
    np.testing.assert_allclose(get_kernel("linear").k(kp, jnp.asarray(X), jnp.asarray(Y)), 2.0 * X @ Y.T, rtol=1e-12)
    np.testing.assert_allclose(get_kernel("linear").diag(kp, jnp.asarray(X)), 2.0 * (X * X).sum(1), rtol=1e-12)


@pytest.mark.parametrize("name,kw,match", [
    ("rbf", {"sigma2": 0.0}, "kernel.sigma2"), ("rbf", {"width": 1.0}, "no parameter"),
    ("matern52", {"lengthscales": [1.0, 2.0]}, "lengthscales has shape"), ("cosine", {}, "not a known kernel"),
])
def test_bad_kernel_parameters(name, kw, match):
    with pytest.raises(ValueError, match=match):
        kernel_params(name, 3, **kw)


@pytest.mark.parametrize("key", ["d", "name", "dtype"])
def test_kernel_spec_keys_named_like_arguments_are_unknown_parameters(key):
    with pytest.raises(ValueError, match=rf"kernel 'linear' has no parameter\(s\) \['{key}'\]"):
        kernel_params("linear", 3, **{key: 1})
