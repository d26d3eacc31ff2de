"""The bounded in-batch step (``common.lazy_argmax_round``: a first round, then fallback rounds while the
argmax is stale, each an iteration of the in-batch loop) selects what the one-at-a-time lazy rule selected.

The reference below is the library's previous in-batch step (kept here only as a test oracle): refresh the
argmax of the stale table until it is exact, one arm per while-loop iteration.
"""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sketchbo.engine import program
from sketchbo.algorithms import common, sparse_ucb
from sketchbo.algorithms.common import (
    REFRESH_BLOCKS, REFRESH_K, REFRESH_PER_BLOCK, UCBTable, lazy_argmax_round, table_argmax, table_set, ucb_table,
)
from sketchbo.problems import make_problem
from sketchbo import run


needs = {"abalone": pytest.mark.real_data("abalone.data"), "cadata": pytest.mark.real_data("cal_housing.data")}


def bounded_argmax(tab: UCBTable, fresh, refresh_many, k=REFRESH_K, more_blocks=REFRESH_BLOCKS,
                   per_block=REFRESH_PER_BLOCK):
    """One in-batch step as ``sparse_ucb.select`` runs it over in-batch loop iterations: a first round of
    ``lazy_argmax_round``, then fallback rounds until the argmax is exact. ``fresh`` (A,) marks exact entries.
    Returns ``(tab, fresh, i, n_refresh, fallback_rounds)``."""
    A = fresh.shape[0]
    # stamps at epoch 0: exact entries 0, stale ones -1, padding int32 max (always exact)
    ea = jnp.full((tab.values.size,), jnp.iinfo(jnp.int32).max, jnp.int32).at[:A].set(jnp.where(fresh, 0, -1))
    tab, ea, n = lazy_argmax_round(tab, ea, 0, refresh_many, A, False, k, more_blocks, per_block)

    def body(c):
        tb, e, n, it = c
        tb, e, dn = lazy_argmax_round(tb, e, 0, refresh_many, A, True, k, more_blocks, per_block)
        return tb, e, n + dn, it + 1

    tab, ea, n, it = jax.lax.while_loop(lambda c: c[1][table_argmax(c[0])] < 0, body,
                                        (tab, ea, n, jnp.zeros((), jnp.int32)))
    return tab, ea[:A] >= 0, table_argmax(tab), n, it


def reference_lazy_argmax(tab: UCBTable, fresh, refresh):
    """The previous in-batch step: ``(tab, fresh, i, n_refresh)``, one refresh per loop iteration."""

    def cond(c):
        _, fr, i, _ = c
        return ~fr[i]

    def body(c):
        tb, fr, i, n = c
        tb = table_set(tb, i, refresh(i))
        return tb, fr.at[i].set(True), table_argmax(tb), n + 1

    return jax.lax.while_loop(cond, body, (tab, fresh, table_argmax(tab), jnp.zeros((), jnp.int32)))


def reference_round(tab, exact_at, epoch, refresh_many, A, fallback, *rest):
    """``lazy_argmax_round``'s signature on the reference rule: each in-batch loop iteration refreshes the
    table's argmax alone (when stale), so a step takes one iteration per refresh."""
    del fallback, rest
    i = table_argmax(tab)
    stale = exact_at[i] < epoch
    value = jnp.where(stale, refresh_many(jnp.minimum(i, A - 1)[None])[0], tab.values.reshape(-1)[i])
    return table_set(tab, i, value), exact_at.at[i].set(epoch), stale.astype(jnp.int32)


# ------------------------------------------------------------------------------- random stale tables

def random_case(rng, A):
    """Exact UCBs with ties, -inf and NaN (mapped to -inf as sparse_ucb does), and stale upper bounds."""
    u = rng.choice([-1.0, 0.0, 0.5, 0.5, 1.0, 2.0], size=A) + (rng.random(A) < 0.5) * rng.normal(size=A)
    u[rng.random(A) < 0.1] = -np.inf
    u[rng.random(A) < 0.05] = np.nan
    exact = np.where(np.isnan(u), -np.inf, u)
    slack = np.where(rng.random(A) < 0.3, 0.0, rng.exponential(size=A))  # bound == exact value: a tie
    fresh = rng.random(A) < 0.2
    bound = np.where(fresh | np.isneginf(exact), exact, exact + slack)
    return exact, bound, fresh


def first_max(x):
    return int(np.flatnonzero(x == x.max())[0])


@pytest.mark.parametrize("A,block,k", [(1, 1, 8), (7, 3, 8), (50, 7, 8), (50, 7, 1), (300, 17, 4), (300, 300, 8)])
def test_bounded_step_matches_the_lazy_rule_on_random_tables(A, block, k):
    rng = np.random.default_rng(A * 1000 + block * 10 + k)

    @jax.jit
    def both(exact, bound, fresh):
        tab = ucb_table(bound, block)
        refresh_many = lambda idx: exact[idx]  # noqa: E731
        new = bounded_argmax(tab, fresh, refresh_many, k, k, 1)
        ref = reference_lazy_argmax(tab, fresh, lambda i: exact[i])
        return new, ref

    for _ in range(40):
        exact, bound, fresh = random_case(rng, A)
        (tab, fr, i, n, loops), (_, _, i_ref, n_ref) = both(*map(jnp.asarray, (exact, bound, fresh)))
        assert int(i) == int(i_ref) == first_max(exact)
        vals = np.asarray(tab.values).reshape(-1)[:A]
        fr = np.asarray(fr)
        np.testing.assert_array_equal(vals[fr], exact[fr])  # exact where marked fresh
        assert np.all(vals >= exact)  # upper bounds everywhere else
        np.testing.assert_array_equal(np.asarray(tab.block_max), np.asarray(tab.values).max(axis=1))
        assert fr[int(i)] and int(n) >= 0 and int(n) == int(np.sum(fr & ~fresh))
        assert 0 <= int(loops) <= -(-A // k)


def test_bounded_step_falls_back_to_further_rounds_when_the_bounds_are_loose():
    """All bounds 1, exact UCBs 0 except the last arm's 0.5: every arm must be refreshed — k in the first
    round, then per_block arms in each of more_blocks blocks per fallback round."""
    A, k = 40, 8
    exact = jnp.zeros((A,)).at[A - 1].set(0.5)
    tab = ucb_table(jnp.ones((A,)), 6)  # 7 blocks of 6 (the last: 4 arms and 2 padding entries)
    for more_blocks, per_block, rounds in ((1, 1, A - k), (2, 2, (A - k) // 4), (7, 6, 1), (16, 8, 1)):
        _, fresh, i, n, loops = jax.jit(lambda t: bounded_argmax(t, jnp.zeros((A,), bool), lambda idx: exact[idx], k,
                                                                 more_blocks, per_block))(tab)
        assert int(i) == A - 1 and int(n) == A and bool(jnp.all(fresh))
        assert int(loops) == rounds, (more_blocks, per_block)


def test_bounded_step_under_vmap_equals_single_tables():
    rng = np.random.default_rng(7)
    cases = [random_case(rng, 90) for _ in range(6)]
    exact, bound, fresh = (jnp.asarray(np.stack(c)) for c in zip(*cases))

    def one(e, b, f):
        _, _, i, n, loops = bounded_argmax(ucb_table(b, 9), f, lambda idx: e[idx])
        return i, n, loops

    batched = jax.jit(jax.vmap(one))(exact, bound, fresh)
    for s in range(6):
        single = jax.jit(one)(exact[s], bound[s], fresh[s])
        assert [int(x) for x in single] == [int(b[s]) for b in batched]


# ------------------------------------------------------------------------------- whole runs

def runs_with_both_rules(monkeypatch, algorithm, problem, T, n_seeds, params):
    """(run with the library's in-batch step, run with the reference rule); the reference compiles its own program."""
    new = run(algorithm, problem, T=T, n_seeds=n_seeds, progress=False, params=params)
    with monkeypatch.context() as mp:
        mp.setattr(sparse_ucb, "lazy_argmax_round", reference_round)
        mp.setattr(program, "_PROGRAMS", {})  # the engine's cache of compiled programs holds the new rule
        ref = run(algorithm, problem, T=T, n_seeds=n_seeds, progress=False, params=params)
    return new, ref


FINITE_CASES = [
    ("bbkb", "gp_sample", 300), ("bbkb_local", "gp_sample", 300), ("bkb", "gp_sample", 150),
    ("bbkb", "linear", 300), ("bkb", "linear", 150),
    pytest.param("bbkb", "abalone", 1000, marks=needs["abalone"]),
    pytest.param("bbkb_local", "abalone", 500, marks=needs["abalone"]),
]


@pytest.mark.parametrize("algorithm,problem,T", FINITE_CASES)
def test_selections_identical_to_the_lazy_rule_on_registry_problems(monkeypatch, algorithm, problem, T):
    prob = make_problem(problem)
    new, ref = runs_with_both_rules(monkeypatch, algorithm, prob, T, 2, {"F": 1.0} if problem != "abalone" else None)
    np.testing.assert_array_equal(new.traces["query"], ref.traces["query"])
    np.testing.assert_array_equal(new.traces["batch_index"], ref.traces["batch_index"])
    # the reference's loop runs once per refresh; the bounded step's fallback rounds at most as often
    assert np.all(new.traces["loop_iterations"] <= ref.traces["loop_iterations"])


@needs["cadata"]
def test_selections_identical_to_the_lazy_rule_on_cadata_T2000(monkeypatch):
    prob = make_problem("cadata")
    new, ref = runs_with_both_rules(monkeypatch, "bbkb", prob, 2000, 1, {"m_max": 96})
    np.testing.assert_array_equal(new.traces["query"], ref.traces["query"])
    loops_new, loops_ref = new.traces["loop_iterations"], ref.traces["loop_iterations"]
    assert loops_ref.max() >= 3  # the lazy rule needs several refreshes on some steps ...
    # ... the bounded one rarely loops
    assert loops_new.max() < loops_ref.max() and loops_new.mean() < 0.5 * loops_ref.mean()


@pytest.mark.parametrize("k", [1, 3, 8, 16, 128])
def test_top_k_indices_equals_lax_top_k_with_ties_and_minus_inf(k):
    """The in-batch step's top-k (float64: sort-free extraction for k <= 16, lax.top_k above) returns
    lax.top_k's indices, in its order."""
    rng = np.random.default_rng(k)
    fn = jax.jit(lambda x: common.top_k_indices(x, k))
    for n in (n for n in (k, 17, 144, 1152) if n >= k):
        for _ in range(20):
            x = rng.integers(0, 6, n).astype(float)  # many ties
            x[rng.random(n) < 0.3] = -np.inf
            np.testing.assert_array_equal(fn(jnp.asarray(x)), jax.lax.top_k(jnp.asarray(x), k)[1])


def test_selection_is_exact_where_bounds_differ_below_float32_resolution():
    """The refresh candidates are chosen on float32-rounded bounds on the CPU (``common.candidate_indices``):
    stale bounds and exact UCBs 1e-12 apart tie in float32 and come in any order there, yet the step selects
    the first maximiser of the float64 exact UCBs, as the one-at-a-time lazy rule does."""
    rng = np.random.default_rng(3)
    A = 300

    @jax.jit
    def both(exact, bound, fresh):
        tab = ucb_table(bound, 17)
        new = bounded_argmax(tab, fresh, lambda idx: exact[idx])
        ref = reference_lazy_argmax(tab, fresh, lambda i: exact[i])
        return new[2], ref[2]

    for _ in range(30):
        exact = 1.0 + 1e-12 * rng.permutation(A)  # distinct in float64, all 1.0 in float32
        bound = exact + 1e-12 * rng.integers(0, 50, A)  # upper bounds, also 1.0 in float32
        fresh = rng.random(A) < 0.1
        bound = np.where(fresh, exact, bound)
        i, i_ref = both(*map(jnp.asarray, (exact, bound, fresh)))
        assert int(i) == int(i_ref) == first_max(exact)


@pytest.mark.parametrize("shape,k", [((144,), 8), ((1152,), 8), ((16, 144), 8)])
def test_refresh_candidates_are_among_the_largest_entries(shape, k):
    """``candidate_indices`` returns k distinct positions per row holding k of the largest entries, up to
    float32 rounding (-inf entries last)."""
    rng = np.random.default_rng(k + len(shape))
    x = rng.normal(size=shape)
    x[rng.random(shape) < 0.3] = -np.inf
    idx = np.asarray(jax.jit(lambda v: common.candidate_indices(v, k))(jnp.asarray(x)))
    for row, pos in zip(x.reshape(-1, shape[-1]), idx.reshape(-1, k)):
        assert len(set(pos.tolist())) == k
        kth = np.sort(row)[::-1][k - 1]
        assert np.all(row[pos] >= np.float32(kth) - 1e-6 * abs(kth))
