"""Continuous test functions of GSSBO (Wei et al. 2025, §6.1), on the unit cube (docs/protocols.md#test-functions).

Every problem is a minimisation benchmark f on its standard box [lower, upper]^d. The optimiser sees
u in [0, 1]^d, mapped affinely to x = lower + u (upper - lower), and maximises the reward -f(x); the
regret of a query is f(x_t) - f_min >= 0 (noiseless). Definitions follow the SFU virtual library and
BoTorch's ``test_functions/synthetic.py`` (docs/protocols.md#test-functions):

| name          | d   | box               | f_min      | argmin                          |
|---------------|-----|-------------------|------------|---------------------------------|
| eggholder2    | 2   | [-512, 512]^2     | -959.6407  | (512, 404.2319), on the boundary |
| hartmann6     | 6   | [0, 1]^6          | -3.32237   | (0.20169, 0.150011, ..., 0.6573) |
| levy20        | 20  | [-10, 10]^20      | 0          | (1, ..., 1)                     |
| powell50      | 50  | [-4, 5]^50        | 0          | (0, ..., 0)                     |
| rastrigin100  | 100 | [-5.12, 5.12]^100 | 0          | (0, ..., 0)                     |

Powell convention (BoTorch's, docs/protocols.md#test-functions): the sum runs over the d // 4 complete blocks of four
coordinates, so for d = 50 there are 12 blocks and coordinates 49 and 50 have no effect on f.

Shifted variants (ours, not GSSBO's): ``levy20``, ``powell50`` and ``rastrigin100`` take ``shift`` = c >= 0,
which translates the objective by o_i = c (upper - lower) (-1)^i, i = 0, ..., d - 1: f_c(x) = f(x - o) on the
same box, minimiser x* + o (it must stay in the box), same f_min. At c = 0 it is the problem itself. The
standard boxes of these three put the minimiser at or near the box centre, where the random-embedding methods
(REMBO, HeSBO) map y = 0; the alternating signs make o no multiple of (1, ..., 1).

A [`ContinuousProblem`][] carries ``fn``, a pure JAX function of one point on the standard box, so that algorithms
evaluate it inside their compiled program (``value``).
"""
from __future__ import annotations

import functools

from typing import TYPE_CHECKING, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from sketchbo.problems.synthetic import check_int, check_noise_std

if TYPE_CHECKING:
    from sketchbo.spaces import Box


class ContinuousProblem(NamedTuple):
    """A box-constrained minimisation problem seen through the unit cube: a box, an objective and, for a benchmark, its
    minimum (``f_min``; None for a user's objective: no regret is computed).

    Attributes:
        name: the problem's key (results, progress, checkpoints).
        d: the dimension.
        lower: `(d,)` float64, the lower corner of the standard box.
        upper: `(d,)` float64, the upper corner.
        fn: the objective, a pure JAX function: a point `(d,)` of the standard box to its value `()`.
        f_min: the global minimum of $f$ (regret $= f(x) - f_{\\min}$); None: unknown.
        u_opt: `(d,)` a minimiser in unit-cube coordinates, when known.
        noise_std: the feedback is $y = -f(x) + \\sigma \\varepsilon$, $\\varepsilon \\sim N(0, 1)$, with $\\sigma$ =
            ``noise_std``.
        uniform_mean: $E_{u \\sim U[0,1]^d} f(u)$; None: estimated when needed.
        uniform_samples: the Monte Carlo points of that estimate.
    """

    name: str
    d: int
    lower: np.ndarray
    upper: np.ndarray
    fn: Callable
    f_min: float | None
    u_opt: np.ndarray | None
    noise_std: float
    uniform_mean: float | None
    uniform_samples: int = 4096


def to_box(problem: ContinuousProblem, u):
    """The affine map [0, 1]^d -> [lower, upper] (docs/protocols.md#box-protocol)."""
    lo = jnp.asarray(problem.lower, u.dtype)
    return lo + u * (jnp.asarray(problem.upper, u.dtype) - lo)


def value(problem: ContinuousProblem, u):
    """f at the unit-cube point u (d,) -> () in u's dtype (an objective whose constants are float64 numpy
    arrays computes in float64; a float32 run gets float32 values); vmap it for batches."""
    return jnp.asarray(problem.fn(to_box(problem, u))).astype(u.dtype)


@functools.lru_cache(maxsize=64)
def _jitted_values(fn, lower: tuple, upper: tuple):
    box = ContinuousProblem("", len(lower), np.asarray(lower), np.asarray(upper), fn, 0.0, None, 0.0, None)
    return jax.jit(jax.vmap(lambda u: value(box, u)))


def batch_values(problem: ContinuousProblem, u):
    """f at unit-cube points u (n, d), jit-compiled once per objective and shape (not once per run)."""
    return _jitted_values(problem.fn, tuple(map(float, problem.lower)), tuple(map(float, problem.upper)))(u)


def estimate_uniform_mean(problem: ContinuousProblem, n: int | None = None, chunk: int = 1024) -> float:
    """E_u[f(u)] under u ~ U[0, 1]^d by Monte Carlo with a fixed key and ``n`` (default
    ``problem.uniform_samples``) points: the expected value of uniform random search, R_t^unif = t (E f - f_min)."""
    n = problem.uniform_samples if n is None else n
    u = jax.random.uniform(jax.random.key(12345), (n, problem.d), dtype=jnp.float64)
    return float(np.mean(np.concatenate([np.asarray(batch_values(problem, u[i:i + chunk]))
                                         for i in range(0, n, chunk)])))


def box_problem(space: Box, fn: Callable, *, name: str = "objective", f_min: float | None = None,
                noise_std: float = 0.0) -> ContinuousProblem:
    """A user's box problem: minimise ``fn`` over ``space`` (the box algorithms maximise the reward -fn).

    Args:
        space: a [`sketchbo.Box`][sketchbo.spaces.Box].
        fn: a pure JAX function of one point ``x`` (d,) in the box's coordinates, returning a scalar; it is
            evaluated inside the compiled program, once per query (T times in a run of horizon T).
        name: names the problem in messages and results.
        f_min: the minimum of ``fn`` when known (regret is then reported), else None.
        noise_std: standard deviation of Gaussian noise added to each observed reward.

    Returns:
        The [`ContinuousProblem`][] that ``sketchbo.run`` takes.

    Raises:
        ValueError: naming the argument that is not valid.

    Examples:
        A quadratic bowl on $[-2, 2]^2$ with its known minimum, so that regret is reported:

        ```python
        import jax.numpy as jnp
        import sketchbo as sb

        bowl = sb.box_problem(sb.Box([-2.0, -2.0], [2.0, 2.0]), lambda x: jnp.sum((x - 0.5) ** 2), name="bowl",
                              f_min=0.0)
        res = sb.run("gssbo", bowl, T=22, progress=False)
        res.best_point                 # (1, 2), in the box's coordinates
        ```
    """
    from sketchbo.spaces import Box

    if not isinstance(space, Box):
        raise ValueError(f"space={space!r} is invalid; pass a sketchbo.Box(lower, upper)")
    if not callable(fn):
        raise ValueError(f"fn={fn!r} is not callable; pass a pure JAX function of one point x (d,)")
    if not isinstance(name, str) or not name:
        raise ValueError(f"name={name!r} is invalid; it must be a non-empty string")
    if f_min is not None:
        if isinstance(f_min, bool) or not isinstance(f_min, (int, float, np.number)) or not np.isfinite(f_min):
            raise ValueError(f"f_min={f_min!r} is invalid; a finite number, or None when the minimum is unknown")
        f_min = float(f_min)
    return ContinuousProblem(name, space.d, np.array(space.lower), np.array(space.upper), fn, f_min, None,
                             check_noise_std(noise_std) or 0.0, None)


# ----------------------------------------------------------------------------------------- functions

def eggholder(x):
    x1, x2 = x[0], x[1]
    return (-(x2 + 47.0) * jnp.sin(jnp.sqrt(jnp.abs(x2 + x1 / 2.0 + 47.0)))
            - x1 * jnp.sin(jnp.sqrt(jnp.abs(x1 - (x2 + 47.0)))))


HARTMANN6_ALPHA = np.array([1.0, 1.2, 3.0, 3.2])
HARTMANN6_A = np.array([[10, 3, 17, 3.5, 1.7, 8], [0.05, 10, 17, 0.1, 8, 14],
                        [3, 3.5, 1.7, 10, 17, 8], [17, 8, 0.05, 10, 0.1, 14]])
HARTMANN6_P = 1e-4 * np.array([[1312, 1696, 5569, 124, 8283, 5886], [2329, 4135, 8307, 3736, 1004, 9991],
                               [2348, 1451, 3522, 2883, 3047, 6650], [4047, 8828, 8732, 5743, 1091, 381]])
HARTMANN6_XOPT = np.array([0.20169, 0.150011, 0.476874, 0.275332, 0.311652, 0.6573])


def hartmann6_fn(x):
    inner = jnp.sum(HARTMANN6_A * (x[None, :] - HARTMANN6_P) ** 2, axis=1)
    return -jnp.sum(HARTMANN6_ALPHA * jnp.exp(-inner))


def levy_fn(x):
    w = 1.0 + (x - 1.0) / 4.0
    body = (w[:-1] - 1.0) ** 2 * (1.0 + 10.0 * jnp.sin(jnp.pi * w[:-1] + 1.0) ** 2)
    tail = (w[-1] - 1.0) ** 2 * (1.0 + jnp.sin(2.0 * jnp.pi * w[-1]) ** 2)
    return jnp.sin(jnp.pi * w[0]) ** 2 + jnp.sum(body) + tail


def powell_fn(x):
    """BoTorch's Powell: the d // 4 complete blocks only (trailing d % 4 coordinates are inert)."""
    nb = x.shape[0] // 4
    b = x[:4 * nb].reshape(nb, 4)
    return jnp.sum((b[:, 0] + 10 * b[:, 1]) ** 2 + 5 * (b[:, 2] - b[:, 3]) ** 2
                   + (b[:, 1] - 2 * b[:, 2]) ** 4 + 10 * (b[:, 0] - b[:, 3]) ** 4)


def rastrigin_fn(x):
    return 10.0 * x.shape[0] + jnp.sum(x * x - 10.0 * jnp.cos(2.0 * jnp.pi * x))


# ------------------------------------------------------------------------------------------ factories

def _problem(name, d, lo, hi, fn, f_min, x_opt, noise_std, uniform_mean=None) -> ContinuousProblem:
    lower, upper = np.full(d, float(lo)), np.full(d, float(hi))
    u_opt = None if x_opt is None else (np.asarray(x_opt, float) - lower) / (upper - lower)
    return ContinuousProblem(name, d, lower, upper, fn, float(f_min), u_opt, check_noise_std(noise_std) or 0.0,
                             uniform_mean)


def _shifted(name, d, lo, hi, fn, f_min, x_opt, noise_std, shift) -> ContinuousProblem:
    """``_problem`` with the objective translated by o = shift (hi - lo) (-1)^i (module docstring); ValueError
    naming ``shift`` when it is not a finite number >= 0 or moves the minimiser out of the box."""
    ok = isinstance(shift, (int, float, np.floating, np.integer)) and not isinstance(shift, bool)
    if not ok or not (np.isfinite(shift) and shift >= 0):
        raise ValueError(f"shift={shift!r} is invalid; it must be a finite number >= 0 (0: the standard problem)")
    if shift == 0:
        return _problem(name, d, lo, hi, fn, f_min, x_opt, noise_std)
    offset = float(shift) * (hi - lo) * (-1.0) ** np.arange(d)  # (d,)
    moved = np.asarray(x_opt, float) + offset
    if np.any(moved < lo) or np.any(moved > hi):
        limit = min(min(hi - x, x - lo) for x in np.unique(np.asarray(x_opt, float))) / (hi - lo)
        raise ValueError(f"shift={shift!r} moves the minimiser of {name} out of its box [{lo:g}, {hi:g}]^{d}; "
                         f"it must be <= {limit:.4g}")
    return _problem(f"{name}_shift{float(shift):g}", d, lo, hi, _translated(fn, tuple(offset)), f_min, moved,
                    noise_std)


@functools.lru_cache(maxsize=64)
def _translated(fn, offset: tuple):
    """x -> fn(x - offset), one function object per (fn, offset): problems built twice share compiled code."""
    o = np.asarray(offset, np.float64)
    return lambda x: fn(x - jnp.asarray(o, x.dtype))


def eggholder2(noise_std=0.0) -> ContinuousProblem:
    """Eggholder on [-512, 512]^2; the minimiser lies on the boundary x1 = 512."""
    return _problem("eggholder2", 2, -512.0, 512.0, eggholder, -959.6407, [512.0, 404.2319], noise_std)


def hartmann6(noise_std=0.0) -> ContinuousProblem:
    """Hartmann-6 on [0, 1]^6 (the identity map)."""
    return _problem("hartmann6", 6, 0.0, 1.0, hartmann6_fn, -3.32237, HARTMANN6_XOPT, noise_std)


def levy20(d=20, noise_std=0.0, shift=0.0) -> ContinuousProblem:
    """Levy on [-10, 10]^d (d = 20 in GSSBO); minimum 0 at (1, ..., 1), u = 0.55; ``shift``: module docstring."""
    d = check_int("d", d, 2)
    return _shifted(f"levy{d}", d, -10.0, 10.0, levy_fn, 0.0, np.ones(d), noise_std, shift)


def powell50(d=50, noise_std=0.0, shift=0.0) -> ContinuousProblem:
    """Powell on [-4, 5]^d with BoTorch's d // 4 blocks (d = 50: coordinates 49, 50 inert); min 0 at 0;
    ``shift``: module docstring."""
    d = check_int("d", d, 4)
    return _shifted(f"powell{d}", d, -4.0, 5.0, powell_fn, 0.0, np.zeros(d), noise_std, shift)


def rastrigin100(d=100, noise_std=0.0, shift=0.0) -> ContinuousProblem:
    """Rastrigin on [-5.12, 5.12]^d (d = 100 in GSSBO); minimum 0 at 0, u = 0.5; ``shift``: module docstring."""
    d = check_int("d", d, 1)
    return _shifted(f"rastrigin{d}", d, -5.12, 5.12, rastrigin_fn, 0.0, np.zeros(d), noise_std, shift)


CONTINUOUS_PROBLEMS = {
    "eggholder2": eggholder2,
    "hartmann6": hartmann6,
    "levy20": levy20,
    "powell50": powell50,
    "rastrigin100": rastrigin100,
}
"""The continuous benchmarks' factories, by name."""

__all__ = ["CONTINUOUS_PROBLEMS", "ContinuousProblem", "batch_values", "box_problem", "estimate_uniform_mean", "to_box", "value",
           "eggholder2", "hartmann6", "levy20", "powell50", "rastrigin100"]
