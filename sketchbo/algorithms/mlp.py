"""Small multilayer perceptrons in plain JAX, and the projected Adam loop that trains them, for the neural
surrogates of GSSBO's appendix baselines (Wei et al. 2025, App. B.5: deep-kernel UCB, Fig. 10, and BNN-UCB,
Fig. 11): ``dkl_bo.py`` (Wilson et al. 2016) and ``bnn_bo.py`` (Lakshminarayanan et al. 2017).

An MLP with widths w_0 = d_in, w_1, ..., w_L is a tuple of L layers (W_l (w_{l-1}, w_l), b_l (w_l,));
every layer but the last applies the activation. Weights start as N(0, 1 / w_{l-1}) (LeCun normal), biases
at zero (our choice). Inputs in [0, 1]^d are mapped affinely to [-1, 1]^d before the first layer.
"""
from __future__ import annotations

from typing import Callable

import jax
import jax.numpy as jnp
import optax

ACTIVATIONS = {"tanh": jnp.tanh, "relu": jax.nn.relu}
"""The activations of the networks, by name."""


def init_mlp(key, widths: tuple, dtype) -> tuple:
    """((W_1, b_1), ..., (W_L, b_L)) with W_l (widths[l-1], widths[l]) ~ N(0, 1 / widths[l-1]), b_l = 0."""
    keys = jax.random.split(key, len(widths) - 1)
    return tuple((jax.random.normal(k, (a, b), dtype) / jnp.sqrt(jnp.asarray(a, dtype)), jnp.zeros((b,), dtype))
                 for k, a, b in zip(keys, widths[:-1], widths[1:]))


def mlp_apply(net: tuple, x, activation: str):
    """The network's outputs (q, w_L) at points x (q, d) of the unit cube."""
    act = ACTIVATIONS[activation]
    h = 2.0 * x - 1.0
    for i, (W, b) in enumerate(net):
        h = h @ W + b
        if i < len(net) - 1:
            h = act(h)
    return h


def adam_fit(loss: Callable, p0, steps: int, lr, project: Callable = lambda p: p):
    """``steps`` projected Adam steps on ``loss`` from the warm start p0 (any pytree); a step whose gradient
    is not finite is rejected (the parameters stay), as ``sketchbo.gp.hyper.fit`` does. Returns p."""
    opt = optax.adam(lr)

    def step(carry, _):
        p, s = carry
        g = jax.grad(loss)(p)
        upd, s_new = opt.update(g, s, p)
        p_new = project(optax.apply_updates(p, upd))
        ok = jnp.all(jnp.array([jnp.all(jnp.isfinite(v)) for v in jax.tree.leaves(g)]))
        return (jax.tree.map(lambda a, b: jnp.where(ok, a, b), p_new, p), s_new), None

    p0 = project(p0)
    (p, _), _ = jax.lax.scan(step, (p0, opt.init(p0)), None, length=steps)
    return p


__all__ = ["ACTIVATIONS", "init_mlp", "mlp_apply", "adam_fit"]
