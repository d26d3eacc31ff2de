"""Maximising an acquisition function inside the unit box [0, 1]^d (GSSBO, Wei et al. 2025;
docs/protocols.md#box-protocol).

The paper does not say how its UCB is maximised. Ours, in two stages, all with static sizes:

1. Score ``n_uniform`` uniform candidates and ``n_local`` Gaussian perturbations (std ``local_scale``,
   projected onto the box) of the incumbents (e.g. the best observed points).
2. Take the ``n_starts`` best candidates and run ``steps`` projected Adam steps on each: an Adam ascent step
   followed by the projection onto the box (clipping is the Euclidean projection onto a box), never an
   unconstrained optimisation clipped at the end. The best point seen by any start wins.

``acq`` is a batched differentiable function (q, d) -> (q,); NaN scores count as -inf.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import optax


class AcqStatic(NamedTuple):
    """Sizes of the acquisition maximiser (static)."""

    n_uniform: int = 2048  # uniform candidates
    n_local: int = 512  # perturbations of the incumbents
    n_starts: int = 4  # candidates refined by projected Adam
    steps: int = 25  # projected Adam steps per start


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


def refine(acq: Callable, x0, static: AcqStatic, lr):
    """Projected Adam ascent from the rows of x0 (s, d); returns the best point seen per row and its value."""
    opt = optax.adam(lr)

    def value_and_grad(x):
        vals, vjp = jax.vjp(acq, x)
        return vals, vjp(jnp.ones_like(vals))[0]

    def step(carry, _):
        x, s, best_x, best_v = carry
        v, g = value_and_grad(x)
        v = _finite(v)
        better = v > best_v
        best_x = jnp.where(better[:, None], x, best_x)
        best_v = jnp.where(better, v, best_v)
        g = jnp.where(jnp.isfinite(g), g, 0.0)
        upd, s = opt.update(-g, s, x)  # ascent
        x = jnp.clip(optax.apply_updates(x, upd), 0.0, 1.0)  # projection onto the box
        return (x, s, best_x, best_v), None

    init = (x0, opt.init(x0), x0, jnp.full((x0.shape[0],), -jnp.inf, x0.dtype))
    (x, _, best_x, best_v), _ = jax.lax.scan(step, init, None, length=static.steps)
    v = _finite(acq(x))
    better = v > best_v
    return jnp.where(better[:, None], x, best_x), jnp.where(better, v, best_v)


def maximize(key, acq: Callable, incumbents, inc_mask, static: AcqStatic, lr=0.01, local_scale=0.05):
    """argmax of ``acq`` over [0, 1]^d. Returns ``(x (d,), value (), info)``."""
    cand = candidates(key, incumbents, inc_mask, static, local_scale)
    scores = _finite(acq(cand))
    top_v, top_i = jax.lax.top_k(scores, static.n_starts)
    xs, vs = refine(acq, cand[top_i], static, lr)
    j = jnp.argmax(vs)
    gain = vs[j] - top_v[0]
    return xs[j], vs[j], {"refine_gain": gain}


BETA_RULES = ("protocol", "theory")  # the UCB widths of ucb_width
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


__all__ = ["AcqStatic", "BETA_RULES", "candidates", "refine", "maximize", "ucb_width"]


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

