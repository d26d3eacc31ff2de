"""The algorithm registry: every algorithm by name, with its defaults and its factory.

| name         | paper                                   | engine       | batch rule (``batch_rules.py``)      |
|--------------|-----------------------------------------|--------------|--------------------------------------|
| ``gp_ucb``   | Srinivas et al. 2010                    | exact GP     | ``sequential_rule``                  |
| ``gp_bucb``  | Desautels et al. 2014                   | exact GP     | ``gp_bucb_product_rule`` (or sum)    |
| ``bkb``      | Calandriello et al., COLT 2019, Alg. 1  | Nyström      | ``sequential_rule``                  |
| ``bbkb``     | Calandriello et al., ICML 2020, Alg. 1  | Nyström      | ``bbkb_global_rule``                 |
| ``bbkb_local`` | public code's ``Local_Batch_BKB``     | Nyström      | ``bbkb_local_rule``                  |
| ``eps_greedy`` | baseline of BBKB Fig. 1               | none         | ``sequential_rule``                  |
"""
from __future__ import annotations

from typing import NamedTuple

from sketchbo.algorithms.batch_rules import BATCH_RULES
from sketchbo.algorithms.common import Algorithm, ArmSet, Params, Static
from sketchbo.algorithms.eps_greedy import make_eps_greedy
from sketchbo.algorithms.exact_ucb import make_exact_ucb
from sketchbo.algorithms.sparse_ucb import make_sparse_ucb


class AlgorithmSpec(NamedTuple):
    name: str
    description: str
    engine: str  # "sparse" | "exact" | "none"
    batched: bool  # batches longer than one pull
    defaults: dict  # every accepted hyperparameter with its default
    default_rule: str  # key of BATCH_RULES


# PROTOCOLS §9 (Abalone / Cadata protocol) and §7: lam = 0.2, F = 20, q-bar = 2, C~ = 2, delta = 1/T (None).
# u_max: initial capacity of the list of unique pulled arms (exact GP: its posterior's size), grown on overflow
_UCB = {"lam": 0.2, "F": 20.0, "delta": None, "beta": "code", "u_max": 128}
# dictionary: "resampled" (the papers) or "all_pulled" (S_t = X_t: BKB -> GP-UCB, BBKB -> sum-rule GP-BUCB)
# m_max: initial dictionary capacity (grown on overflow)
_SPARSE = {**_UCB, "qbar": 2.0, "m_max": 128, "u_max": 256, "resample": "code", "dictionary": "resampled"}

ALGORITHMS: dict[str, AlgorithmSpec] = {
    "gp_ucb": AlgorithmSpec("gp_ucb", "exact GP-UCB", "exact", False,
                            {**_UCB, "beta_family": "bbkb"}, "sequential"),
    "gp_bucb": AlgorithmSpec("gp_bucb", "exact GP-BUCB (product rule; batch_rule=sum: BBKB's sum rule)", "exact",
                             True, {**_UCB, "C": 2.0, "batch_rule": "product", "beta_family": "bbkb"}, "product"),
    "bkb": AlgorithmSpec("bkb", "BKB: Nyström GP-UCB, dictionary resampled every step", "sparse", False,
                         {**_SPARSE, "beta_family": "bkb"}, "sequential"),
    "bbkb": AlgorithmSpec("bbkb", "Batch-BKB, global batch rule", "sparse", True,
                          {**_SPARSE, "C": 2.0, "beta_family": "bbkb"}, "bbkb_global"),
    "bbkb_local": AlgorithmSpec("bbkb_local", "GlobalLocal-BBKB, per-arm batch rule", "sparse", True,
                                {**_SPARSE, "C": 2.0, "beta_family": "bbkb"}, "bbkb_local"),
    "eps_greedy": AlgorithmSpec("eps_greedy", "eps-greedy on empirical means", "none", False,
                                {"eps": 0.1}, "sequential"),
}

_BATCH_RULE_NAMES = {"product": "product", "sum": "bbkb_global"}  # gp_bucb's ``batch_rule`` option


def rule_name(spec: AlgorithmSpec, hyper: dict) -> str:
    if spec.name == "gp_bucb":
        return _BATCH_RULE_NAMES[hyper.get("batch_rule", "product")]
    return spec.default_rule


def build(spec: AlgorithmSpec, static: Static) -> Algorithm:
    """The algorithm's functions for a static config (``static.batch_rule`` names the rule)."""
    rule = BATCH_RULES[static.batch_rule]
    if spec.engine == "sparse":
        return make_sparse_ucb(static, rule, sequential=not spec.batched)
    if spec.engine == "exact":
        return make_exact_ucb(static, rule, sequential=not spec.batched)
    return make_eps_greedy(static)


__all__ = ["ALGORITHMS", "AlgorithmSpec", "Algorithm", "ArmSet", "Params", "Static", "build", "rule_name"]
