"""The continuous test functions of GSSBO (docs/protocols.md#test-functions): values at the known optima, the unit-cube
map, an independent loop implementation at random points, and Powell's block convention."""
from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sketchbo.problems import CONTINUOUS_PROBLEMS, make_problem
from sketchbo.problems.continuous import estimate_uniform_mean, value

OPTIMA = {  # name -> (f_min, tolerance at the literature's rounded argmin)
    "eggholder2": (-959.6407, 1e-3),
    "hartmann6": (-3.32237, 1e-5),
    "levy20": (0.0, 1e-12),
    "powell50": (0.0, 0.0),
    "rastrigin100": (0.0, 1e-9),
}


@pytest.mark.parametrize("name", sorted(OPTIMA))
def test_value_at_the_known_optimum(name):
    p = make_problem(name)
    f_min, tol = OPTIMA[name]
    assert p.f_min == f_min and p.d == int("".join(c for c in name if c.isdigit()))
    assert np.all((p.u_opt >= 0) & (p.u_opt <= 1))
    assert float(value(p, jnp.asarray(p.u_opt))) == pytest.approx(f_min, abs=tol)
    # nearby points are worse (a local minimum, inside the box)
    rng = np.random.default_rng(0)
    for _ in range(5):
        u = np.clip(p.u_opt + 1e-3 * rng.standard_normal(p.d), 0, 1)
        assert float(value(p, jnp.asarray(u))) >= f_min - tol


def test_unit_cube_maps_to_the_standard_boxes():
    boxes = {"eggholder2": (-512, 512), "hartmann6": (0, 1), "levy20": (-10, 10), "powell50": (-4, 5),
             "rastrigin100": (-5.12, 5.12)}
    for name, (lo, hi) in boxes.items():
        p = make_problem(name)
        assert np.all(p.lower == lo) and np.all(p.upper == hi)
    np.testing.assert_allclose(make_problem("levy20").u_opt, 0.55)
    np.testing.assert_allclose(make_problem("powell50").u_opt, 4 / 9)
    np.testing.assert_allclose(make_problem("rastrigin100").u_opt, 0.5)


def _loops(name, x):
    """Independent scalar-loop definitions (SFU library)."""
    d = len(x)
    if name == "eggholder2":
        a, b = x
        return -(b + 47) * math.sin(math.sqrt(abs(b + a / 2 + 47))) - a * math.sin(math.sqrt(abs(a - (b + 47))))
    if name == "hartmann6":
        from sketchbo.problems.continuous import HARTMANN6_A as A, HARTMANN6_ALPHA as al, HARTMANN6_P as P
        return -sum(al[i] * math.exp(-sum(A[i][j] * (x[j] - P[i][j]) ** 2 for j in range(6))) for i in range(4))
    if name == "levy20":
        w = [1 + (v - 1) / 4 for v in x]
        s = math.sin(math.pi * w[0]) ** 2
        for i in range(d - 1):
            s += (w[i] - 1) ** 2 * (1 + 10 * math.sin(math.pi * w[i] + 1) ** 2)
        return s + (w[-1] - 1) ** 2 * (1 + math.sin(2 * math.pi * w[-1]) ** 2)
    if name == "powell50":
        s = 0.0
        for i in range(d // 4):
            a, b, c, e = x[4 * i:4 * i + 4]
            s += (a + 10 * b) ** 2 + 5 * (c - e) ** 2 + (b - 2 * c) ** 4 + 10 * (a - e) ** 4
        return s
    return 10 * d + sum(v * v - 10 * math.cos(2 * math.pi * v) for v in x)


@pytest.mark.parametrize("name", sorted(OPTIMA))
def test_values_match_an_independent_implementation(name):
    p = make_problem(name)
    rng = np.random.default_rng(1)
    for _ in range(3):
        u = rng.uniform(size=p.d)
        x = p.lower + u * (p.upper - p.lower)
        assert float(value(p, jnp.asarray(u))) == pytest.approx(_loops(name, list(x)), rel=1e-12, abs=1e-9)


def test_powell50_keeps_botorchs_twelve_blocks_and_last_two_dims_are_inert():
    p = make_problem("powell50")
    u = np.random.default_rng(2).uniform(size=50)
    base = float(value(p, jnp.asarray(u)))
    moved = u.copy()
    moved[48:] = 1.0 - moved[48:]
    assert float(value(p, jnp.asarray(moved))) == base
    moved[47] = 1.0 - moved[47]  # dimension 48 belongs to the 12th block
    assert float(value(p, jnp.asarray(moved))) != base


def test_registry_sizes_and_uniform_mean_is_above_the_minimum():
    assert set(CONTINUOUS_PROBLEMS) == set(OPTIMA)
    assert make_problem("levy20", d=5).d == 5 and make_problem("levy20", d=5).name == "levy5"
    p = make_problem("hartmann6")
    mean = estimate_uniform_mean(p, n=2048)
    u = jax.random.uniform(jax.random.key(7), (2048, 6), dtype=jnp.float64)
    other = float(jnp.mean(jax.vmap(lambda x: value(p, x))(u)))
    assert p.f_min < mean < 0 and abs(mean - other) < 0.05  # two Monte Carlo estimates agree
    with pytest.raises(ValueError, match="d=1"):
        make_problem("powell50", d=1)
    with pytest.raises(ValueError, match="noise_std=-1"):
        make_problem("hartmann6", noise_std=-1)


@pytest.mark.parametrize("name", ["levy20", "powell50", "rastrigin100"])
def test_shifted_variant_is_the_loop_definition_translated_with_its_minimiser_in_the_box(name):
    """``shift`` = c: f_c(x) = f(x - o), o_i = c (upper - lower) (-1)^i, against the scalar loops; f_min at the
    moved minimiser; the box centre no longer near-optimal; c = 0 is the standard problem."""
    base, p = make_problem(name), make_problem(name, shift=0.3)
    assert p.name == base.name + "_shift0.3" and p.f_min == base.f_min and p.d == base.d
    standard = make_problem(name, shift=0.0)
    assert standard.name == base.name and standard.fn is base.fn and np.array_equal(standard.u_opt, base.u_opt)
    assert make_problem(name, shift=0.3).fn is p.fn  # built twice, one function: compiled code is reused
    width = base.upper - base.lower
    offset = np.array([0.3 * w * (-1) ** i for i, w in enumerate(width)])
    rng = np.random.default_rng(3)
    for _ in range(3):
        u = rng.uniform(size=p.d)
        x = p.lower + u * width
        assert float(value(p, jnp.asarray(u))) == pytest.approx(_loops(name, list(x - offset)), rel=1e-12, abs=1e-9)
    np.testing.assert_allclose(p.lower + p.u_opt * width, base.lower + base.u_opt * width + offset)
    assert np.all((p.u_opt >= 0) & (p.u_opt <= 1))
    assert float(value(p, jnp.asarray(p.u_opt))) == pytest.approx(p.f_min, abs=1e-9)
    centre = jnp.full(p.d, 0.5)
    assert float(value(p, centre)) - p.f_min > 0.2 * (estimate_uniform_mean(p, n=2048) - p.f_min)
    for bad, message in [(-0.1, "finite number >= 0"), (float("inf"), "finite number >= 0"), (True, "finite"),
                         (0.6, "out of its box")]:
        with pytest.raises(ValueError, match=f"shift={bad!r}.*{message}"):
            make_problem(name, shift=bad)


# ------------------------------------------------------------------------------------------- diabetes

def test_diabetes_search_space_decoding():
    from sketchbo.problems.diabetes import decode
    lo = [int(v) if i in (0, 3) else float(v) for i, v in enumerate(decode(jnp.zeros(4)))]
    hi = [int(v) if i in (0, 3) else float(v) for i, v in enumerate(decode(jnp.ones(4)))]
    assert lo[0] == 32 and hi[0] == 128 and lo[3] == 1 and hi[3] == 8
    assert lo[1] == pytest.approx(1e-6) and hi[1] == pytest.approx(1.0)
    assert lo[2] == pytest.approx(1e-6) and hi[2] == pytest.approx(1.0)
    assert float(decode(jnp.full(4, 0.5))[1]) == pytest.approx(1e-3)  # log scale


@pytest.mark.real_data("pima-indians-diabetes.csv")
def test_diabetes_objective_is_deterministic_in_range_and_fast():
    import time

    from sketchbo.problems.diabetes import load_pima, stratified_split
    X, y = load_pima()
    assert X.shape == (768, 8) and set(np.unique(y)) == {0.0, 1.0}
    tr, te = stratified_split(y, 0.7, 0)
    assert len(tr) + len(te) == 768 and not set(tr) & set(te)
    assert abs(y[tr].mean() - y.mean()) < 0.01 and abs(y[te].mean() - y.mean()) < 0.01  # stratified
    p = make_problem("diabetes")
    f = jax.jit(jax.vmap(lambda u: value(p, u)))
    u = jnp.array([[0.5, 0.7, 0.05, 0.9], [0.0, 0.0, 1.0, 0.0], [1.0, 1.0, 0.0, 1.0]])
    a = np.asarray(f(u))
    t0 = time.perf_counter()
    b = np.asarray(f(u))
    elapsed = time.perf_counter() - t0
    np.testing.assert_array_equal(a, b)  # deterministic for a fixed seed
    assert np.all((a >= 0) & (a <= 1))
    assert a[0] < 0.35 < a[1]  # a sensible setting learns; lr = 1e-6 does not
    assert elapsed < 1.5, elapsed  # three evaluations, after compilation
    other = make_problem("diabetes", seed=1)
    c = np.asarray(jax.jit(jax.vmap(lambda v: value(other, v)))(u))
    assert np.all((c >= 0) & (c <= 1)) and not np.array_equal(a, c)
