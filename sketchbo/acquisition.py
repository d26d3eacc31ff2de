"""Maximising an acquisition function inside the unit box [0, 1]^d (GSSBO, Wei et al. 2025;
docs/protocols.md#box-protocol).

The paper does not say how its UCB is maximised. Ours, in two stages, all with static sizes:

1. Score ``n_uniform`` uniform candidates and ``n_local`` Gaussian perturbations (std ``local_scale``,
   projected onto the box) of the incumbents (e.g. the best observed points).
2. Take the ``n_starts`` best candidates and refine each inside the box by the rule ``method``
   ([`ACQ_METHODS`][]); the best refined point of any start wins.

   * ``adam`` (the default): ``steps`` projected Adam steps, an Adam ascent step followed by the
     projection onto the box (clipping is the Euclidean projection onto a box), never an unconstrained
     optimisation clipped at the end; the best point seen wins.
   * ``spg`` (an option: its converged queries sit on faces more often and measured worse regret,
     docs/reproductions.md#box-maximiser): the spectral projected gradient method (Birgin, Martínez & Raydan 2000,
     "Nonmonotone spectral projected gradient methods on convex sets", SIAM J. Optim. 10(4), Alg. SPG2 with a monotone
     line search): the direction d = P(x + α g) − x with the Barzilai–Borwein step α = sᵀs / sᵀy (a scalar secant,
     quasi-Newton, model of the curvature), an Armijo backtracking along d, run to a projected-gradient tolerance
     ([`SPG_TOL`][]) or at most ``steps`` iterations. Its backtracking tries [`SPG_TRIALS`][] step lengths at once (one
     batched acquisition call), so each iteration is one flat loop iteration.

``acq`` is a batched differentiable function (q, d) -> (q,); NaN scores count as -inf. ``maximize``'s info reports
whether the winning start ends on a face of the box (a coordinate within [`FACE_TOL`][] of 0 or 1) and the fraction of
the refined starts that do.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import optax


class AcqStatic(NamedTuple):
    """Sizes of the acquisition maximiser (static).

    Attributes:
        n_uniform: uniform candidates
        n_local: perturbations of the incumbents
        n_starts: candidates refined inside the box
        steps: projected Adam steps (adam) or most iterations (spg) per start
        method: the refinement rule (ACQ_METHODS)
    """

    n_uniform: int = 2048
    n_local: int = 512
    n_starts: int = 4
    steps: int = 25
    method: str = "adam"


ACQ_METHODS = ("adam", "spg")
"""The refinement rules of [`maximize`][]: projected Adam steps or spectral projected gradient."""
FACE_TOL = 1e-6
"""A coordinate this close to 0 or 1 (unit-cube coordinates) lies on a face of the box."""
SPG_TOL = 1e-6
"""spg stops refining a start when the projected gradient's size, max |P(x + g) - x|, is at most this."""
SPG_TRIALS = 8
r"""The step lengths $4^0, \dots, 4^{-7}$ of the direction that spg's backtracking tries at once."""
SPG_ARMIJO = 1e-4  # sufficient increase f(x + t d) >= f(x) + SPG_ARMIJO t g.d (Birgin et al.'s gamma)
SPG_ALPHA = (1e-10, 1e10)  # the safeguard interval of the Barzilai-Borwein step


def _finite(v):
    return jnp.where(jnp.isnan(v), -jnp.inf, v)


def candidates(key, incumbents, inc_mask, static: AcqStatic, local_scale):
    """(n_uniform + n_local, d) candidate points in the box. Perturbations cycle over the valid incumbents;
    without any valid incumbent they are uniform points too."""
    k_u, k_pick, k_eps, k_fill = jax.random.split(key, 4)
    d = incumbents.shape[1]
    dt = incumbents.dtype
    uniform = jax.random.uniform(k_u, (static.n_uniform, d), dtype=dt)
    logits = jnp.where(inc_mask, 0.0, -jnp.inf)
    pick = jax.random.categorical(k_pick, jnp.where(jnp.any(inc_mask), logits, 0.0), shape=(static.n_local,))
    eps = local_scale * jax.random.normal(k_eps, (static.n_local, d), dtype=dt)
    local = jnp.clip(incumbents[pick] + eps, 0.0, 1.0)
    local = jnp.where(jnp.any(inc_mask), local, jax.random.uniform(k_fill, (static.n_local, d), dtype=dt))
    return jnp.concatenate([uniform, local], axis=0)


def _value_and_grad(acq: Callable, x):
    vals, vjp = jax.vjp(acq, x)
    g = vjp(jnp.ones_like(vals))[0]
    return _finite(vals), jnp.where(jnp.isfinite(g), g, 0.0)


def refine(acq: Callable, x0, static: AcqStatic, lr):
    """Projected Adam ascent from the rows of x0 (s, d); returns the best point seen per row and its value."""
    opt = optax.adam(lr)

    def step(carry, _):
        x, s, best_x, best_v = carry
        v, g = _value_and_grad(acq, x)
        better = v > best_v
        best_x = jnp.where(better[:, None], x, best_x)
        best_v = jnp.where(better, v, best_v)
        upd, s = opt.update(-g, s, x)  # ascent
        x = jnp.clip(optax.apply_updates(x, upd), 0.0, 1.0)  # projection onto the box
        return (x, s, best_x, best_v), None

    init = (x0, opt.init(x0), x0, jnp.full((x0.shape[0],), -jnp.inf, x0.dtype))
    (x, _, best_x, best_v), _ = jax.lax.scan(step, init, None, length=static.steps)
    v = _finite(acq(x))
    better = v > best_v
    return jnp.where(better[:, None], x, best_x), jnp.where(better, v, best_v)


def _projected_gradient(x, g):
    """(s,) max |P(x + g) - x|: zero exactly at a first-order stationary point of the box problem."""
    return jnp.max(jnp.abs(jnp.clip(x + g, 0.0, 1.0) - x), axis=-1)


def refine_spg(acq: Callable, x0, static: AcqStatic):
    """Spectral projected gradient ascent (module docstring) from the rows of x0 (s, d): each start runs until
    its projected gradient is at most SPG_TOL (or no trial step length increases ``acq``) or for ``static.steps``
    iterations. Monotone: the returned point of a row is its best. Returns ``(x (s, d), value (s,), iterations
    ())``."""
    s, d = x0.shape
    dt = x0.dtype
    lengths = 0.25 ** jnp.arange(SPG_TRIALS, dtype=dt)  # (L,) backtracking step lengths t
    lo, hi = SPG_ALPHA
    v0, g0 = _value_and_grad(acq, x0)
    alpha0 = jnp.clip(1.0 / jnp.maximum(_projected_gradient(x0, g0), 1e-30), lo, hi)

    def body(carry):
        k, x, v, g, alpha, done = carry
        direction = jnp.clip(x + alpha[:, None] * g, 0.0, 1.0) - x  # (s, d) feasible ascent direction
        slope = jnp.sum(g * direction, axis=-1)  # (s,) g.d >= 0
        trial = x[:, None, :] + lengths[None, :, None] * direction[:, None, :]  # (s, L, d) inside the box
        tv = _finite(acq(trial.reshape(s * SPG_TRIALS, d))).reshape(s, SPG_TRIALS)
        ok = (tv >= v[:, None] + SPG_ARMIJO * lengths[None, :] * slope[:, None]) & (tv > v[:, None])
        found = jnp.any(ok, axis=1)
        t = jnp.where(found, lengths[jnp.argmax(ok, axis=1)], 0.0)  # the longest step with sufficient increase
        x_new = jnp.clip(x + t[:, None] * direction, 0.0, 1.0)  # the clip only undoes rounding
        v_new, g_new = _value_and_grad(acq, x_new)
        step, dg = x_new - x, g - g_new  # y = grad(-acq)(x_new) - grad(-acq)(x)
        sy, ss = jnp.sum(step * dg, axis=-1), jnp.sum(step * step, axis=-1)
        alpha_new = jnp.where(sy > 0, jnp.clip(ss / jnp.where(sy > 0, sy, 1.0), lo, hi), hi)
        # no increase at any trial length: a finer search next time (alpha shrinks past the shortest trial)
        alpha_new = jnp.where(found, alpha_new, alpha * lengths[-1] * 0.25)
        stop = (_projected_gradient(x_new, g_new) <= SPG_TOL) | (alpha_new <= lo)
        keep = done | ~found
        x = jnp.where(done[:, None], x, jnp.where(found[:, None], x_new, x))
        v = jnp.where(keep, v, v_new)
        g = jnp.where(keep[:, None], g, g_new)
        return k + 1, x, v, g, jnp.where(done, alpha, alpha_new), done | (found & stop) | (alpha_new <= lo)

    def cond(carry):
        return (carry[0] < static.steps) & ~jnp.all(carry[-1])

    init = (jnp.zeros((), jnp.int32), x0, v0, g0, alpha0, _projected_gradient(x0, g0) <= SPG_TOL)
    k, x, v, _, _, _ = jax.lax.while_loop(cond, body, init)
    return x, v, k


def on_face(x):
    """(...,) bool: the point (..., d) has a coordinate within FACE_TOL of a face of the unit box."""
    return jnp.any((x <= FACE_TOL) | (x >= 1.0 - FACE_TOL), axis=-1)


def maximize(key, acq: Callable, incumbents, inc_mask, static: AcqStatic, lr=0.01, local_scale=0.05):
    """argmax of ``acq`` over [0, 1]^d. Returns ``(x (d,), value (), info)``; info: ``refine_gain`` (the winner's
    value minus the best candidate's score), ``on_face`` (the winner ends on a face of the box),
    ``starts_on_face`` (fraction of the refined starts that do), ``acq_iterations`` (spg: loop iterations run;
    adam: ``steps``)."""
    if static.method not in ACQ_METHODS:
        raise ValueError(f"acquisition method={static.method!r}: one of {list(ACQ_METHODS)}")
    cand = candidates(key, incumbents, inc_mask, static, local_scale)
    scores = _finite(acq(cand))
    top_v, top_i = jax.lax.top_k(scores, static.n_starts)
    if static.method == "spg":
        xs, vs, iters = refine_spg(acq, cand[top_i], static)
    else:
        xs, vs = refine(acq, cand[top_i], static, lr)
        iters = jnp.asarray(static.steps, jnp.int32)
    j = jnp.argmax(vs)
    faces = on_face(xs)
    return xs[j], vs[j], {"refine_gain": vs[j] - top_v[0], "on_face": faces[j],
                          "starts_on_face": jnp.mean(faces.astype(xs.dtype)), "acq_iterations": iters}


BETA_RULES = ("protocol", "theory")
"""The UCB width rules of [`ucb_width`][]."""
THEORY_DELTA = 0.1  # the failure probability of the theory rule


def ucb_width(rule: str, beta_c, d: int, t):
    """beta_t of the box algorithms' UCB = mu + sqrt(beta_t) sigma for the query of step ``t`` (>= 1).

    ``protocol``: beta_c d log(2t), the paper protocol's width (docs/protocols.md#box-protocol; the scaled-down
    rule of Kandasamy et al. 2015's experiments). ``theory``: Srinivas et al. (2010), Theorem 2, on the unit
    box (r = 1) with a = b = 1 in its bound on the sample paths' derivatives and delta = ``THEORY_DELTA``:
    beta_t = 2 log(2 t^2 pi^2 / (3 delta)) + 2 d log(t^2 d b r sqrt(log(4 d a / delta))); it ignores beta_c.
    """
    if rule == "protocol":
        return beta_c * d * jnp.log(2.0 * t)
    if rule == "theory":
        delta, a, b, r = THEORY_DELTA, 1.0, 1.0, 1.0
        return (2.0 * jnp.log(2.0 * t**2 * jnp.pi**2 / (3.0 * delta))
                + 2.0 * d * jnp.log(t**2 * d * b * r * jnp.sqrt(jnp.log(4.0 * d * a / delta))))
    raise ValueError(f"beta_rule={rule!r}: one of {list(BETA_RULES)}")


def maximize_ucb(key, predict: Callable, beta, x, y, valid, n_incumbents: int, static: AcqStatic, lr, local_scale):
    """GP-UCB's next point (docs/protocols.md#box-protocol): the argmax of mu + sqrt(beta) sigma from
    ``predict(xq) -> (mean, var)``, the candidates perturbing the ``n_incumbents`` best valid samples (``x`` (n, d),
    ``y`` (n,))."""

    def ucb(xq):
        mean, var = predict(xq)
        return mean + jnp.sqrt(beta) * jnp.sqrt(var + 1e-30)

    n_incumbents = min(n_incumbents, y.shape[0])  # a sample buffer smaller than the incumbents (T < 5)
    inc_v, inc_i = jax.lax.top_k(jnp.where(valid, y, -jnp.inf), n_incumbents)
    return maximize(key, ucb, x[inc_i], jnp.isfinite(inc_v), static, lr, local_scale)


__all__ = ["ACQ_METHODS", "AcqStatic", "BETA_RULES", "FACE_TOL", "candidates", "maximize", "maximize_ucb", "on_face",
           "refine", "refine_spg", "ucb_width"]
