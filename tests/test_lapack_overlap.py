"""Batched LAPACK calls that may run concurrently on the CPU (``sketchbo.engine.lapack_overlap``).

Two independent batched triangular solves hung a 2-core machine on the second call (jax 0.10.2): both of XLA's
intra-op threads waited in jaxlib's ParallelBatchMap for chunks queued behind them. The check reads the
compiled HLO; pyproject's pytest settings turn its warning into an error, so every program this suite compiles
through ``engine.program.compiled_program`` is checked too, and the extended set compiles every box algorithm
with vmapped seeds for it (the finite-arm ones run with both seed axes in test_conformance).
"""
import warnings

import jax
import jax.numpy as jnp
import pytest

import sketchbo as sb
from sketchbo.algorithms import BO_ALGORITHMS
from sketchbo.engine import program
from sketchbo.engine.lapack_overlap import LapackOverlapWarning, batched_lapack_calls, overlapping_lapack_calls
from sketchbo.engine.program import check_lapack_overlap
from test_checkpoint import BO_BUFFERED, HARTMANN, bo_kwargs

solve = jax.scipy.linalg.solve_triangular


def _spd(batch, m=8):
    A = jax.random.normal(jax.random.key(0), (*batch, m, m))
    return A @ jnp.swapaxes(A, -1, -2) + m * jnp.eye(m)


def _pairs(fn, *args):
    return overlapping_lapack_calls(jax.jit(fn).lower(*args).compile().as_text())


def two_solves(S, u, v):
    L = jnp.linalg.cholesky(S)
    return jnp.sum(solve(L, u, lower=True) * solve(L, v, lower=True))


def one_solve(S, u, v):
    L = jnp.linalg.cholesky(S)
    ab = solve(L, jnp.concatenate([u, v], axis=-1), lower=True)
    return jnp.sum(ab[..., :1] * ab[..., 1:])


def chained_solves(S, u, v):
    L = jnp.linalg.cholesky(S)
    return jnp.sum(solve(L, solve(L, u, lower=True) + v, lower=True))


def test_two_independent_batched_solves_are_found():
    S, u, v = _spd((5,)), jnp.ones((5, 8, 1)), jnp.ones((5, 8, 1))
    pairs = _pairs(two_solves, S, u, v)
    assert len(pairs) == 1 and all("triangular_solve" in name for name in pairs[0][1:])


def test_one_solve_chained_solves_and_unbatched_solves_are_not():
    S, u, v = _spd((5,)), jnp.ones((5, 8, 1)), jnp.ones((5, 8, 1))
    assert _pairs(one_solve, S, u, v) == []
    assert _pairs(chained_solves, S, u, v) == []
    assert _pairs(two_solves, _spd(()), jnp.ones((8, 1)), jnp.ones((8, 1))) == []  # batch of one: no thread pool
    assert _pairs(two_solves, _spd((1,)), jnp.ones((1, 8, 1)), jnp.ones((1, 8, 1))) == []


def test_a_loop_holding_a_batched_solve_counts_as_one():
    S, u = _spd((5,)), jnp.ones((5, 8, 1))

    def loop_beside_solve(S, u):
        L = jnp.linalg.cholesky(S)
        looped = jax.lax.fori_loop(0, 3, lambda i, x: solve(L, x, lower=True), u)
        return jnp.sum(looped) + jnp.sum(solve(L, 2.0 * u, lower=True))

    def loop_after_solve(S, u):
        L = jnp.linalg.cholesky(S)
        first = solve(L, 2.0 * u, lower=True)
        return jnp.sum(jax.lax.fori_loop(0, 3, lambda i, x: solve(L, x, lower=True), first))

    assert len(_pairs(loop_beside_solve, S, u)) == 1
    assert _pairs(loop_after_solve, S, u) == []


def test_compiled_program_warns_on_the_cpu():
    args = (_spd((5,)), jnp.ones((5, 8, 1)), jnp.ones((5, 8, 1)))
    with pytest.warns(LapackOverlapWarning, match="seed_axis='map' avoids"):
        check_lapack_overlap(jax.jit(two_solves).lower(*args).compile())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_lapack_overlap(jax.jit(one_solve).lower(*args).compile())


def test_a_program_sharded_over_cpu_devices_warns_on_any_batched_call():
    """Each CPU device runs its share at the same time as the others: one batched call per device can hang."""
    args = (_spd((5,)), jnp.ones((5, 8, 1)), jnp.ones((5, 8, 1)))
    compiled = jax.jit(one_solve).lower(*args).compile()
    assert sorted(set(batched_lapack_calls(compiled.as_text()))) == ["lapack_dpotrf_ffi", "lapack_dtrsm_ffi"]
    with pytest.warns(LapackOverlapWarning, match=r"sharded over 2 CPU devices.*devices=1"):
        check_lapack_overlap(compiled, n_devices=2)
    unbatched = jax.jit(one_solve).lower(_spd(()), jnp.ones((8, 1)), jnp.ones((8, 1))).compile()
    assert batched_lapack_calls(unbatched.as_text()) == []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_lapack_overlap(compiled, n_devices=1)
        check_lapack_overlap(unbatched, n_devices=2)


def _element_lapack_calls(monkeypatch, name) -> list[str]:
    """The batched LAPACK calls of ``name``'s program for one seed (seed_axis='map', one device)."""
    seen = []
    monkeypatch.setattr(program, "_PROGRAMS", {})
    monkeypatch.setattr(program, "check_lapack_overlap",
                        lambda compiled, n_devices=1: seen.extend(batched_lapack_calls(compiled.as_text())))
    sb.run(name, HARTMANN, n_seeds=1, **{**bo_kwargs(name), "T": 12})
    return seen


def test_vecchia_bo_is_registered_as_holding_batched_lapack_calls(monkeypatch):
    """VecchiaBO factors one m x m matrix per candidate point in one batched call: the registry says so, and
    the engine then runs it on one CPU device (engine.run.one_cpu_device)."""
    assert "lapack_dpotrf_ffi" in _element_lapack_calls(monkeypatch, "vecchia_bo")
    assert BO_ALGORITHMS["vecchia_bo"].batched_lapack


@pytest.mark.extended
@pytest.mark.parametrize("name", BO_BUFFERED)  # sbpe_box: its vmapped runs in tests/test_sbpe_box.py
def test_the_registry_flags_exactly_the_box_algorithms_whose_element_holds_batched_lapack_calls(monkeypatch, name):
    assert bool(_element_lapack_calls(monkeypatch, name)) == BO_ALGORITHMS[name].batched_lapack


def test_after_orders_without_changing_values():
    from sketchbo import linalg

    S, u, v = _spd((5,)), jnp.ones((5, 8, 1)), jnp.ones((5, 8, 1))

    def ordered(S, u, v):
        L = jnp.linalg.cholesky(S)
        a = solve(L, u, lower=True)
        return jnp.sum(a * solve(linalg.after(L, a), v, lower=True))

    assert _pairs(ordered, S, u, v) == []
    assert float(jax.jit(ordered)(S, u, v)) == float(jax.jit(two_solves)(S, u, v))
    x = jnp.arange(4.0)
    assert jnp.array_equal(linalg.after(x, jnp.ones(3)), x)
    assert jnp.all(jnp.isnan(linalg.after(x, jnp.full(3, jnp.nan))))


def test_the_gp_algebra_keeps_its_batched_solves_ordered_under_vmap():
    """The blocked inverse (n > 128 recurses into two halves), the likelihood gradient and the exact prediction,
    vmapped over 3 seeds: the paths whose solves were independent before ``linalg.after``."""
    from sketchbo import linalg
    from sketchbo.gp import hyper

    n, d = 150, 2
    S = _spd((3,), n)
    inverse = jax.vmap(lambda S: linalg.spd_inverse(jnp.linalg.cholesky(S)))
    assert _pairs(inverse, S) == []
    X = jax.random.uniform(jax.random.key(1), (3, n, d))
    y = jnp.sin(3 * X[..., 0])
    mask = jnp.ones((3, n), bool)
    h = jax.tree.map(lambda a: jnp.broadcast_to(a, (3, *a.shape)), hyper.init_hyper(d, jnp.float64))

    def grad(h, X, y, mask):
        return jax.grad(lambda h: hyper.log_marginal_likelihood(h, X, y, mask))(h)

    def predict(h, X, y, mask):
        return hyper.predict(hyper.posterior(h, X, y, mask), X[:7] + 0.01)

    assert _pairs(jax.vmap(grad), h, X, y, mask) == []
    assert _pairs(jax.vmap(predict), h, X, y, mask) == []


@pytest.mark.extended
@pytest.mark.parametrize("name", BO_BUFFERED)  # sbpe_box: its vmapped runs in tests/test_sbpe_box.py
def test_every_box_algorithm_compiles_free_of_overlapping_calls_with_vmapped_seeds(name):
    """Every continuous algorithm's program with two vmapped seeds (its batched LAPACK calls span the seeds):
    compiled through the engine, whose check is an error in the tests (pyproject). The finite-arm algorithms
    run vmapped in test_conformance's default set."""
    kw = bo_kwargs(name)
    kw.update(seed_axis="vmap", T=12, capacity=12)
    sb.run(name, HARTMANN, n_seeds=2, **kw)
