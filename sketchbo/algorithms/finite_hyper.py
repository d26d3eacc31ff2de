"""The hyperparameters of the finite registry's algorithms (BKB, BBKB, GP-UCB, GP-BUCB, eps-greedy, S-BPE): their
checks, their static config [`Static`][], how their params (each algorithm's own NamedTuple) are filled, and their
capacities (``m_max``, ``u_max``): the [`sketchbo.spec.Hooks`][] of the specs in ``sketchbo.algorithms``.

Protocol values: docs/protocols.md#finite-arm-protocol (lam, F: the problem's suggested values, else [`FALLBACK`][];
delta = 1/T).
"""
from __future__ import annotations

import functools
import math

import jax
import numpy as np

from sketchbo.algorithms.common import Static
from sketchbo.checks import check_float, check_int, invalid_value
from sketchbo.gp import nystrom
from sketchbo.spec import Hooks, Setting

CHOICES = {"beta": ("code", "paper", "vakili"), "beta_family": ("bkb", "bbkb"), "resample": ("code", "paper"),
           "batch_rule": ("product", "sum"), "dictionary": ("resampled", "all_pulled")}
"""The allowed values of the finite algorithms' string options."""
_FLOATS = {
    "lam": (lambda v: v > 0, "it must be a finite number > 0"),
    "qbar": (lambda v: v > 0, "it must be a finite number > 0"),
    "rls_qbar": (lambda v: v > 0, "it must be a finite number > 0"),
    "C": (lambda v: v >= 1, "it must be a finite number >= 1"),
    "F": (lambda v: v >= 0, "it must be a finite number >= 0"),
    "delta": (lambda v: 0 < v < 1, "it must be in (0, 1), or null for 1/T"),
    "eps": (lambda v: 0 <= v <= 1, "it must be in [0, 1]"),
}
GRID_KEYS = ("lam", "qbar", "rls_qbar", "C", "F", "delta", "eps")
"""The float hyperparameters a grid may sweep (those an algorithm's defaults have)."""

FALLBACK = {"lam": 0.2, "F": 20.0}
"""``lam`` and ``F`` where neither the user nor the problem sets them (docs/protocols.md#finite-arm-protocol)."""

# The first dictionary capacity where the user leaves m_max at None (the default): a grown run equals a run
# started at its final capacity bit for bit (float64; below MANY_ARMS, whose resparsification widths depend
# on the capacity), and other capacities differ only by rounding (a GEMM's
# summation order depends on its size); the time depends on it. Each round costs an A x m_max^2 product
# (docs/architecture.md#cost-model) and each growth step a compilation of the whole program. On the CPU with
# many arms the product is most of the execution, so the capacity sits just above the papers' dictionaries:
# BBKB on Cadata (A = 20640, T = 10^4, largest dictionary 85 in 10 seeds, 89 in 1000 on 2026-11-23) runs without growth
# from 96; from 64 it grew once, to 98 (docs/benchmarks.md#first-capacity: 96 against 64 on 2026-11-26,
# 10 seeds float64 wall 65.4 s against 70.2 s, float32 38.1 against 49.3 s, one seed 15.7 against 20.8 s,
# a loaded 2-core CPU). With few arms the product is cheap and growth is not (gp_sample, A = 1000, T = 500,
# dictionary 104: 9.4 s from 64, 3.1 s at 128 on 2026-11-23); on accelerators a compilation costs about 10 s: 128.
DEFAULT_M_MAX = {"cpu_many_arms": 96, "other": 128}
"""The first dictionary capacity where the user leaves ``m_max`` at None: ``cpu_many_arms`` on the CPU from
[`MANY_ARMS`][] arms, ``other`` elsewhere. It decides the time a run takes (each growth recompiles); a grown run equals
one started at its final capacity up to rounding."""
# A from which the CPU starts at DEFAULT_M_MAX["cpu_many_arms"], and from which a resparsification computes on
# the dictionary's width (Static.slot_block; below it the product is cheap and each width's branch costs
# compilation: docs/benchmarks.md#dictionary-width)
MANY_ARMS = 10_000
"""The number of arms from which the CPU starts at ``DEFAULT_M_MAX['cpu_many_arms']`` and a resparsification computes on
the dictionary's width."""
_BATCH_RULE_NAMES = {"product": "product", "sum": "bbkb_global"}  # gp_bucb's ``batch_rule`` option


def default_m_max(A: int) -> int:
    """The first dictionary capacity ([`DEFAULT_M_MAX`][]) for A arms on JAX's default backend."""
    many = jax.default_backend() == "cpu" and A >= MANY_ARMS
    return DEFAULT_M_MAX["cpu_many_arms" if many else "other"]


def oversampling(hyper: dict) -> float:
    """``Params.qbar`` from a finite-arm algorithm's hyperparameters: BBKB/BKB's dictionary oversampling
    ``qbar``, or S-BPE's recursive-RLS oversampling ``rls_qbar`` (1.0 for algorithms with neither)."""
    return hyper.get("qbar", hyper.get("rls_qbar", 1.0))


def resolve(hyper: dict, T: int, problem, *, nystrom_engine: bool) -> dict:
    """Every value of ``hyper`` (defaults already completed) checked; ValueError naming the parameter.

    ``lam`` and ``F`` left at None take the problem's suggested value, else [`FALLBACK`][]; ``delta`` None is 1/T."""
    suggested = getattr(problem, "suggested", None) or {}
    for key, fallback in FALLBACK.items():
        if key in hyper and hyper[key] is None:
            hyper[key] = suggested.get(key, fallback)
    if hyper.get("delta", 0.5) is None:
        hyper["delta"] = 1.0 / T if T > 1 else 0.5
    for key, (ok, allowed) in _FLOATS.items():
        if key in hyper:
            hyper[key] = check_float(f"algorithm.{key}", hyper[key], ok, allowed)
    for key, choices in CHOICES.items():
        if key in hyper and (not isinstance(hyper[key], str) or hyper[key] not in choices):
            raise invalid_value(f"algorithm.{key}", hyper[key], f"choose one of {list(choices)}")
    if hyper.get("beta") == "vakili" and not nystrom_engine:
        raise invalid_value("algorithm.beta", "vakili", "Theorem 3.5's width needs the Nyström engine (bkb, bbkb, "
                            "bbkb_local); choose 'code' or 'paper'")
    for key in ("m_max", "u_max"):
        if key in hyper and not (key == "m_max" and hyper[key] is None):  # m_max None: default_m_max(A)
            hyper[key] = check_int(f"algorithm.{key}", hyper[key], 1)
    return hyper


def rule_name(default_rule: str, hyper: dict) -> str:
    """The batch rule (``batch_rules.BATCH_RULES``) of an algorithm: gp_bucb's ``batch_rule`` option, else its
    own."""
    if "batch_rule" in hyper:
        return _BATCH_RULE_NAMES[hyper["batch_rule"]]
    return default_rule


def static(hyper: dict, setting: Setting, capacities: dict, *, default_rule: str) -> Static:
    """The shared [`Static`][] of a finite registry algorithm at the given capacities."""
    A = setting.n_arms
    return Static(A=A, d=setting.d, T=setting.T, m_max=capacities["m_max"], u_max=capacities["u_max"],
                  kernel=setting.kernel, beta_family=hyper.get("beta_family", "bbkb"),
                  beta_mode=hyper.get("beta", "code"), resample=hyper.get("resample", "code"),
                  batch_rule=rule_name(default_rule, hyper), exact_dictionary=hyper.get("dictionary") == "all_pulled",
                  slot_block=nystrom.SLOT_BLOCK if A >= MANY_ARMS else 0)


def params(hyper: dict, dtype, context: dict, *, cls):
    """The algorithm's params ``cls`` (its NamedTuple: fields of lam, qbar, C, F, delta, xi, eps, kernel) of one
    grid point as () NumPy arrays, with the run's noise level ``context["xi"]`` and the kernel's
    hyperparameters ``context["kernel"]``."""
    values = {"lam": hyper.get("lam", 1.0), "qbar": oversampling(hyper), "C": hyper.get("C", 1.0),
              "F": hyper.get("F", 0.0), "delta": hyper.get("delta", 0.5), "xi": context["xi"],
              "eps": hyper.get("eps", 0.0)}
    return cls(**{f: context["kernel"] if f == "kernel" else np.asarray(values[f], dtype) for f in cls._fields})


def capacities(hyper: dict, setting: Setting) -> dict:
    """The first capacities: ``m_max`` (None: [`default_m_max`][]) and ``u_max`` (1 where the algorithm has none), at
    most A (and u_max at most T)."""
    A, T = setting.n_arms, setting.T
    m_max = hyper.get("m_max", 1)
    m_max = default_m_max(A) if m_max is None else m_max
    return {"m_max": min(m_max, A), "u_max": min(hyper.get("u_max", 1), A, T)}


def grow(wanted, capacities: dict, setting: Setting, *, keys: tuple) -> tuple[dict | None, list]:
    """Capacities 1.5 times the largest need where a need (``wanted`` = [dictionary, unique pulled arms])
    exceeds a capacity of ``keys`` (those the algorithm has), with a message each; (None, []) when all fit."""
    A, T = setting.n_arms, setting.T
    limits = {"m_max": A, "u_max": min(A, T)}
    names = {"m_max": "dictionary capacity m_max", "u_max": "pulled-arm capacity u_max"}
    larger, messages = dict(capacities), []
    for key, want in zip(("m_max", "u_max"), (int(wanted[0]), int(wanted[1]))):
        if key in keys and want > capacities[key]:
            larger[key] = min(limits[key], max(capacities[key], math.ceil(1.5 * want)))
            messages.append(f"{names[key]}={capacities[key]} overflowed (a seed wanted {want}); continuing "
                            f"from the last completed chunk with {key}={larger[key]}")
    return (larger, messages) if messages else (None, [])


def unique_pulled(queries) -> tuple[int, int]:
    """Ask/tell's need before a tell of the exact GP: (0, unique arms pulled so far)."""
    return 0, int(np.unique(queries).size)


def hooks(defaults: dict, default_rule: str, nystrom_engine: bool, exact: bool, params_cls) -> Hooks:
    """The [`Hooks`][] of a finite registry algorithm with these ``defaults`` and its params ``params_cls``."""
    keys = tuple(k for k in ("m_max", "u_max") if k in defaults)
    return Hooks(resolve=functools.partial(resolve, nystrom_engine=nystrom_engine),
                 static=functools.partial(static, default_rule=default_rule),
                 params=functools.partial(params, cls=params_cls),
                 capacities=capacities, grow=functools.partial(grow, keys=keys),
                 ask_wanted=unique_pulled if exact else None)


__all__ = ["CHOICES", "DEFAULT_M_MAX", "FALLBACK", "GRID_KEYS", "MANY_ARMS", "capacities", "default_m_max", "grow",
           "hooks", "oversampling", "params", "resolve", "rule_name", "static", "unique_pulled"]
