"""The hyperparameters of the box registry's algorithms (GSSBO, Wei et al. 2025, and its baselines): their checks, their
static config [`BOStatic`][], how their params (each algorithm's own NamedTuple) are filled, and the capacity of their
sample buffer D: the [`sketchbo.spec.Hooks`][] of the box specs in ``sketchbo.algorithms``
(docs/protocols.md#box-protocol).
"""
from __future__ import annotations

import functools
import math

import jax.numpy as jnp
import numpy as np

from sketchbo import acquisition
from sketchbo.algorithms.subset_bo import BOStatic, SubsetParams, dynamic_buffer_size
from sketchbo.checks import check_float, check_int, invalid_value
from sketchbo.gp.hyper import FITS, OUTPUT_WARPS
from sketchbo.spec import Hooks, Setting

# gp_core: the defaults of gp_fit, beta_c and fit_steps (docs/reproductions.md#box-gp-core; the registry's comment)
GP_CORES = {"map": {"gp_fit": "map", "beta_c": 0.02, "fit_steps": 50},
            "protocol": {"gp_fit": "adam", "beta_c": 0.2, "fit_steps": 20}}
"""The defaults of ``gp_fit``, ``beta_c`` and ``fit_steps`` per ``gp_core`` (docs/reproductions.md#box-gp-core)."""

_INTS = {"n0": 1, "fit_steps": 0, "n_uniform": 1, "n_local": 0, "n_starts": 1, "acq_steps": 0, "m": 1,
         "features": 1, "ensemble": 1}
_FLOATS = {
    "beta_c": (lambda v: v >= 0, "it must be a finite number >= 0"),
    "lr_fit": (lambda v: v > 0, "it must be a finite number > 0"),
    "lr_acq": (lambda v: v > 0, "it must be a finite number > 0"),
    "local_scale": (lambda v: v >= 0, "it must be a finite number >= 0"),
    "Z": (lambda v: v > 1, "it must be a finite number > 1"),
    "n_overhead": (lambda v: v >= 0, "it must be a finite number >= 0"),
    "sigma_d2": (lambda v: v >= 0, "it must be a finite number >= 0"),
    "C": (lambda v: v >= 1, "it must be a finite number >= 1"),
    "kappa": (lambda v: v >= 0, "it must be a finite number >= 0"),
}


# gssbo's subset rules (docs/protocols.md#gssbo-subset-rules, subset.SELECTIONS): projection (appendix greedy on the gradient vectors),
# pivoted (greedy pivoted Cholesky on K), cosine (Eq. (1) as written); gradient = cosine's deprecated name
_SELECTIONS = ("projection", "pivoted", "cosine", "gradient")


def resolve(hyper: dict, T: int, problem=None) -> dict:
    """Every value of ``hyper`` (defaults already completed) checked (ValueError naming the parameter), and the
    subset size resolved: ``M_resolved`` (fixed M or the dynamic rule) for the subset variants."""
    del problem  # a box problem suggests nothing
    if "gp_core" in hyper:  # the core's values for the keys left at None
        if hyper["gp_core"] not in GP_CORES:
            raise invalid_value("algorithm.gp_core", hyper["gp_core"], f"one of {list(GP_CORES)}")
        hyper.update({k: v for k, v in GP_CORES[hyper["gp_core"]].items() if hyper.get(k) is None})
    for key, lo in _INTS.items():
        if key in hyper:
            hyper[key] = check_int(f"algorithm.{key}", hyper[key], lo)
    for key, (ok, allowed) in _FLOATS.items():
        if key in hyper:
            hyper[key] = check_float(f"algorithm.{key}", hyper[key], ok, allowed)
    if "selection" in hyper and hyper["selection"] not in _SELECTIONS:
        raise invalid_value("algorithm.selection", hyper["selection"], f"one of {list(_SELECTIONS)}")
    if "gp_fit" in hyper and hyper["gp_fit"] not in FITS:
        raise invalid_value("algorithm.gp_fit", hyper["gp_fit"], f"one of {list(FITS)}")
    if "beta_rule" in hyper and hyper["beta_rule"] not in acquisition.BETA_RULES:
        raise invalid_value("algorithm.beta_rule", hyper["beta_rule"], f"one of {list(acquisition.BETA_RULES)}")
    if hyper["acq_method"] not in acquisition.ACQ_METHODS:
        raise invalid_value("algorithm.acq_method", hyper["acq_method"], f"one of {list(acquisition.ACQ_METHODS)}")
    if "output_warp" in hyper and hyper["output_warp"] not in OUTPUT_WARPS:
        raise invalid_value("algorithm.output_warp", hyper["output_warp"], f"one of {list(OUTPUT_WARPS)}")
    if "keep_best" in hyper and not isinstance(hyper["keep_best"], bool):
        raise invalid_value("algorithm.keep_best", hyper["keep_best"], "true or false")
    if "hidden" in hyper:
        hyper["hidden"] = check_widths("algorithm.hidden", hyper["hidden"])
    if hyper["n0"] > T:
        raise invalid_value("algorithm.n0", hyper["n0"], f"the initial design cannot exceed T={T}")
    if hyper["n_starts"] > hyper["n_uniform"] + hyper["n_local"]:
        raise invalid_value("algorithm.n_starts", hyper["n_starts"],
                            "it must be <= n_uniform + n_local (the candidates it refines)")
    if "M" in hyper:
        if hyper["M"] is None:
            hyper["M_resolved"] = dynamic_buffer_size(hyper["n0"], hyper["Z"], hyper["n_overhead"])
        else:
            hyper["M"] = check_int("algorithm.M", hyper["M"], hyper["n0"] + 1)
            hyper["M_resolved"] = hyper["M"]
    return hyper


def check_widths(name: str, value) -> list:
    """An MLP's hidden widths: a list (or tuple) of ints >= 1, possibly empty; ValueError naming ``name``."""
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise invalid_value(name, value, "a list of hidden-layer widths (ints >= 1), e.g. [32, 32]")
    try:
        return [check_int(name, v, 1) for v in value]
    except ValueError:
        raise invalid_value(name, value, "a list of hidden-layer widths (ints >= 1), e.g. [32, 32]") from None


def model_rows(algorithm: str, hyper: dict, T: int) -> int:
    """Static M of BOStatic: the subset size, the landmark count m, or T (unused: all rows)."""
    if "M_resolved" in hyper:
        return min(hyper["M_resolved"], T)
    return min(hyper.get("m", T), T)


def initial_capacity(T: int, n0: int) -> int:
    """The first capacity of D: all of T for short runs, else 128 rows (at least 2 n0)."""
    return T if T <= 160 else min(T, max(128, 2 * n0))


def next_capacity(cap: int, T: int) -> int:
    """About 1.5x, rounded up to a multiple of 32, at most T."""
    return min(T, 32 * math.ceil(1.5 * cap / 32))



def static_config(algorithm: str, hyper: dict, d: int, T: int, cap: int) -> BOStatic:
    """The static config of a box algorithm with a sample buffer of ``cap`` rows."""
    h = hyper
    acq = acquisition.AcqStatic(h["n_uniform"], h["n_local"], h["n_starts"], h["acq_steps"], h["acq_method"])
    return BOStatic(variant=algorithm, d=d, T=T, cap=cap, n0=h["n0"], M=model_rows(algorithm, h, T),
                    fit_steps=h["fit_steps"], acq=acq, selection=h.get("selection", "pivoted"),
                    keep_best=h.get("keep_best", False), gp_fit=h.get("gp_fit", "adam"),
                    beta_rule=h.get("beta_rule", "protocol"), output_warp=h.get("output_warp", "none"),
                    hidden=tuple(h.get("hidden", ())),
                    features=h.get("features", 0), ensemble=h.get("ensemble", 0))


def point_params(hyper: dict, jdt, cls=SubsetParams):
    """The float hyperparameters of one grid point as () arrays of the algorithm's params ``cls`` (mini-META's
    C defaults to 1, the others to 0 where the algorithm has no such hyperparameter)."""
    return cls(**{f: jnp.asarray(hyper.get(f, 1.0 if f == "C" else 0.0), jdt) for f in cls._fields})


def needs_room(state, n0: int):
    """Rows the next round of each seed adds to D before its feedback (n0 for the initial design, else 1)."""
    return np.where(np.asarray(state.t) == 0, n0, 1)




def static(hyper: dict, setting: Setting, capacities: dict, *, variant: str) -> BOStatic:
    """[`static_config`][] as a spec's hook."""
    return static_config(variant, hyper, setting.d, setting.T, capacities["cap"])


def params(hyper: dict, dtype, context: dict, *, cls):
    """[`point_params`][] as a spec's hook (the noise level is the domain's)."""
    del context
    return point_params(hyper, dtype, cls)


def capacities(hyper: dict, setting: Setting) -> dict:
    """The first capacity of the sample buffer D ([`initial_capacity`][])."""
    return {"cap": min(initial_capacity(setting.T, hyper["n0"]), setting.T)}


def grow(wanted, caps: dict, setting: Setting):
    """The next capacity of D ([`next_capacity`][]) where a seed waits at a full buffer."""
    del wanted
    cap = next_capacity(caps["cap"], setting.T)
    return {"cap": cap}, [f"sample buffer capacity {caps['cap']} -> {cap}"]


def data_rows(state):
    """() int32 rows of the sample buffer D in use (every box registry algorithm keeps D as ``state.data``)."""
    return state.data.n


def hooks(variant: str, params_cls) -> Hooks:
    """The [`Hooks`][] of the box registry's algorithm ``variant`` with its params ``params_cls``."""
    return Hooks(resolve=resolve, static=functools.partial(static, variant=variant),
                 params=functools.partial(params, cls=params_cls),
                 capacities=capacities, grow=grow, buffer_rows=data_rows)


__all__ = ["GP_CORES", "capacities", "check_widths", "data_rows", "grow", "hooks", "initial_capacity",
           "model_rows", "needs_room", "next_capacity", "params", "point_params", "resolve", "static", "static_config"]
