"""Batch-termination rules: when does the current batch end?

Each rule is ``BatchRule(init, step)``: ``init(A, dtype) -> acc`` at batch start and
``step(acc, var_fb_q, cov_q, C) -> (acc, close)`` after every selection, where ``var_fb_q`` is the
start-of-batch variance s~^2_fb(x_q) of the arm just selected (lam-scaled), ``cov_q()`` lazily returns
``(cov (A,), var_fb (A,))``, the start-of-batch covariance of x_q with every arm and every arm's
start-of-batch variance, and ``close`` ends the batch. In every rule the arm
that crosses the threshold belongs to the batch (the authors' code, docs/protocols.md#bbkb-code-vs-paper).
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import jax.numpy as jnp


class BatchRule(NamedTuple):
    """A batch-termination rule: an accumulator and the step that says whether the batch closes.

    Attributes:
        init: `(A, dtype)` -> acc
        step: `(acc, var_fb_q, cov_q, C)` -> (acc, close)
    """

    init: Callable
    step: Callable


def _scalar(A, dtype):
    return jnp.zeros((), dtype)


# Sequential algorithms (GP-UCB, BKB, eps-greedy): every batch has one pull.
sequential_rule = BatchRule(_scalar, lambda acc, v, cov, C: (acc + v, jnp.asarray(True)))


def _bbkb_global_step(acc, var_fb_q, cov_q, C):
    acc = acc + var_fb_q
    return acc, 1.0 + acc > C  # BBKB Alg. 1, L5: continue while 1 + sum_s s~^2_fb(x_s) <= C~


# BBKB's global rule (Alg. 1, L5, with the squared sigma of the proofs and of the public code).
bbkb_global_rule = BatchRule(_scalar, _bbkb_global_step)


def _bbkb_local_init(A, dtype):
    return jnp.zeros((A,), dtype)


def _local_step(acc, var_fb_q, cov_q, C):
    """GlobalLocal-BBKB (the public code's ``Local_Batch_BKB``, docs/algorithms.md#globallocal-bbkb).

    ratio_i = 1 + sum_{s in batch} s~_fb(x_i, x_s)^2 / s~^2_fb(x_i); the batch ends when max_i ratio_i > C~.
    The code starts with the global rule and switches to the local ratios once the global bound exceeds
    C~; by Cauchy–Schwarz ratio_i <= 1 + sum_s s~^2_fb(x_s) for every i, so stopping on max_i ratio_i from
    the first pull makes exactly the same decisions. Cost O(A m d) per pull.
    """
    cov, var_fb = cov_q()  # (A,) start-of-batch covariances with x_q, (A,) start-of-batch variances
    acc = acc + cov * cov
    ratio = 1.0 + acc / jnp.maximum(var_fb, jnp.finfo(var_fb.dtype).tiny)
    return acc, jnp.max(ratio) > C


bbkb_local_rule = BatchRule(_bbkb_local_init, _local_step)


def _product_step(acc, var_fb_q, cov_q, C):
    acc = acc + jnp.log1p(var_fb_q)
    return acc, acc > jnp.log(C)  # GP-BUCB: continue while prod_s (1 + s^2_fb(x_s)) <= C


# GP-BUCB's rule (Desautels et al. 2014, as compared in BBKB §2).
gp_bucb_product_rule = BatchRule(_scalar, _product_step)

BATCH_RULES = {
    "sequential": sequential_rule,
    "bbkb_global": bbkb_global_rule,
    "bbkb_local": bbkb_local_rule,
    "product": gp_bucb_product_rule,
}
