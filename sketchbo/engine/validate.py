"""Validation shared by every entry point: one clear ValueError naming the parameter, before any compilation."""
from __future__ import annotations

import os
from pathlib import Path

import jax

from sketchbo.checks import check_float, check_int, invalid_value, with_defaults  # noqa: F401 (re-exported)


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
