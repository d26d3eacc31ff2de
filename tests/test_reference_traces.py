"""Trajectories recorded before the round engine existed (main at 0091b38: three copies of the round loop,
growth by re-running from round 0; float64, CPU) against today's engine, for every finite-arm algorithm of
the registry, on a run whose capacities grow several times (except where the algorithm has none).

The digest is over the discrete traces (queries, batch indices, dictionary sizes), which do not depend on the
last bits of the floating-point arithmetic. S-BPE is run with the width and resampling that were its only
ones then (``beta: paper``, ``resample: paper``; its defaults changed since, issue 13).
"""
import numpy as np
import pytest

from sketchbo.algorithms import ALGORITHMS
from sketchbo.engine import checkpoint
from sketchbo.problems import make_problem
from sketchbo import run

REFERENCE = {  # recorded with main at 0091b38 (the same function, the same arguments)
    "bbkb": "da7884f8634fbde9", "bbkb_local": "d311394d5a2c1dfb", "bkb": "04d70bd192e56e5e",
    "eps_greedy": "15943f6a9c13d7c5", "gp_bucb": "b5e439733745ec24", "gp_ucb": "b12aaee8ea3e4579",
    "sbpe": "c4f12c7adc8c2768",
}
# S-BPE: the options that select what was its only behaviour then, at the capacities that run ended with (the
# old runner re-ran from round 0 at the final one). Its RLS coin flips were then drawn over its capacity-sized
# list; they are keyed by arm and level now (gp.rls.slot_binomial), so that growth keeps the trajectory (the
# growth test below covers ``resample: paper``); the digest recorded then still holds at T = 60.
THEN = {"sbpe": {"beta": "paper", "resample": "paper", "m_max": 39, "u_max": 41}}


def digest(*arrays) -> str:
    return checkpoint.digest(*arrays)[:16]


def test_every_finite_algorithm_has_a_reference():
    assert sorted(REFERENCE) == sorted(ALGORITHMS)


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.extended) if n in ("bbkb_local", "bkb") else n
                                  for n in sorted(REFERENCE)])  # the two slowest: CI's extended set
def test_trajectory_equals_the_one_recorded_before_the_engine(name):
    problem = make_problem("gp_sample", A=120, d=2, sigma2=0.2)
    params = {"lam": 0.05, "F": 1.0} if "lam" in ALGORITHMS[name].defaults else None
    if name in ("bbkb", "bbkb_local", "bkb", "sbpe"):
        params = {**params, "m_max": 8, "u_max": 16, **THEN.get(name, {})}  # grows during the run (not S-BPE)
    res = run(name, problem, T=60, n_seeds=2, seed=1, params=params, progress=False)
    assert digest(res.traces["query"], res.traces["batch_index"], res.traces["dict_size"]) == REFERENCE[name]


@pytest.mark.slow  # ~2 min in all; tests/test_runner.py checks the same for BBKB in the default suite
@pytest.mark.parametrize("name,options", [(n, {}) for n in sorted(ALGORITHMS) if "u_max" in ALGORITHMS[n].defaults]
                         + [("sbpe", {"beta": "paper", "resample": "paper"})])
def test_growth_continues_to_the_queries_of_a_run_started_at_the_final_capacity(name, options):
    """docs/architecture.md#capacity-growth: on overflow the engine continues from the last completed chunk in padded
    buffers."""
    problem = make_problem("gp_sample", A=120, d=2, sigma2=0.2)
    small = {"m_max": 6, "u_max": 8} if "m_max" in ALGORITHMS[name].defaults else {"u_max": 8}
    small = {**small, **options}
    kw = dict(T=60, n_seeds=2, seed=1, progress=False)
    grown = run(name, problem, params={"lam": 0.05, "F": 1.0, **small}, **kw)
    final = {k: grown.hyperparameters[f"{k}_final"] if k.endswith("_max") else v for k, v in small.items()}
    assert grown.capacity_events and final["u_max"] > small["u_max"]
    assert all("continuing from the last completed chunk" in e for e in grown.capacity_events)
    direct = run(name, problem, params={"lam": 0.05, "F": 1.0, **final}, **kw)
    assert direct.capacity_events == []
    for key in ("query", "batch_index", "dict_size"):
        np.testing.assert_array_equal(grown.traces[key], direct.traces[key], err_msg=key)
