"""Validation shared by every entry point: one clear ValueError naming the parameter, before any compilation."""
from __future__ import annotations

import math
import os
from pathlib import Path

import jax
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


def check_run_args(T, n_seeds, seed, dtype, seed_axis, rounds_per_call):
    """(T, n_seeds, seed) as ints; every other run argument checked."""
    T = check_int("T", T, 1)
    n_seeds = check_int("n_seeds", n_seeds, 1)
    seed = check_int("seed", seed, 0)
    if not isinstance(dtype, str) or dtype not in ("float64", "float32"):
        raise invalid_value("dtype", dtype, "choose 'float64' or 'float32'")
    if not isinstance(seed_axis, str) or seed_axis not in ("auto", "map", "vmap"):
        raise invalid_value("seed_axis", seed_axis, "choose 'auto', 'map' or 'vmap'")
    if rounds_per_call is not None:
        check_int("rounds_per_call", rounds_per_call, 1)
    return T, n_seeds, seed


def check_devices(devices, n_elements: int | None = None) -> int:
    """The local devices a run's ``n_elements`` elements (grid points x seeds) are sharded over: ``devices``
    checked against what this process sees, or by default all of them but no more than there are elements."""
    available = len(jax.devices())
    if devices is None:
        return available if n_elements is None else max(1, min(available, n_elements))
    n = check_int("devices", devices, 1)
    if n > available:
        raise invalid_value("devices", devices, f"this process sees {available} device(s)")
    return n


def check_checkpoint(checkpoint, checkpoint_every) -> tuple[Path | None, int | None]:
    """``(path, every)`` validated: both given (a file path and an integer >= 1) or both None."""
    if checkpoint is None and checkpoint_every is None:
        return None, None
    if checkpoint is None:
        raise invalid_value("checkpoint", checkpoint, "checkpoint_every needs a file path to write to")
    if isinstance(checkpoint, bytes) or not isinstance(checkpoint, (str, os.PathLike)) or not os.fspath(checkpoint):
        raise invalid_value("checkpoint", checkpoint, "it must be a file path (str or os.PathLike)")
    if checkpoint_every is None:
        raise invalid_value("checkpoint_every", checkpoint_every,
                            "with a checkpoint path it must be an integer >= 1 (rounds between two writes)")
    every = check_int("checkpoint_every", checkpoint_every, 1)
    path = Path(checkpoint)
    if path.is_dir():
        raise invalid_value("checkpoint", checkpoint, "it is a directory; give a file path")
    return path, every
