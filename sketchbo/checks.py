"""Checks of user values, shared by the specs, the algorithms' hyperparameters and the engine: one clear
ValueError naming the parameter, its value and what is allowed, before anything compiles."""
from __future__ import annotations

import math

import numpy as np


def invalid_value(name, value, allowed):
    return ValueError(f"{name}={value!r} is invalid; {allowed}")


def check_int(name, value, lo):
    """``value`` as an int >= lo; a float that is a whole number (``T=1e3`` from a command line) is accepted."""
    if isinstance(value, (float, np.floating)) and math.isfinite(value) and float(value).is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < lo:
        raise invalid_value(name, value, f"it must be an integer >= {lo}")
    return int(value)


def check_float(name, value, ok, allowed):
    if isinstance(value, (bool, np.bool_)):  # float(True) would pass as 1.0
        raise invalid_value(name, value, allowed)
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise invalid_value(name, value, allowed) from None
    if not math.isfinite(v) or not ok(v):
        raise invalid_value(name, value, allowed)
    return v


def with_defaults(algorithm: str, defaults: dict, params) -> dict:
    """``defaults`` completed by the user's ``params`` (a dict; its ``name`` key, Hydra's group name, ignored);
    ValueError naming any parameter the algorithm does not take."""
    if params is not None and not isinstance(params, dict):
        raise invalid_value("params", params, "pass a dict of hyperparameters, e.g. {'lam': 0.2}")
    params = dict(params or {})
    params.pop("name", None)
    unknown = sorted(set(params) - set(defaults))
    if unknown:
        raise ValueError(f"algorithm {algorithm!r} has no parameter(s) {unknown}; it takes {sorted(defaults)}")
    return {**defaults, **params}


__all__ = ["check_float", "check_int", "invalid_value", "with_defaults"]
