"""One compiled program run by several CPU devices: compiled once, for the first, and loaded onto the others
(docs/architecture.md#rounds).

Where the elements of a run (seeds at grid points) run one after another on each of several CPU devices, every
element runs the same one-element program. XLA's CPU executable does not depend on which CPU device runs it, only its
device assignment does; so the executable compiled for the first device is serialized (as the program store keeps it,
``engine.compile_cache``) and loaded once per other device with that device's assignment ([`load_on`][]), instead of a
program that maps over each device's elements and is partitioned over the devices. An executable that does not load
there is compiled for its device. The serialized executable must be the one XLA compiled (or the store's copy of it):
an executable loaded from JAX's persistent cache, or from a serialization, does not serialize whole again
(``compile_cache.jax_cache_hits``).
"""
from __future__ import annotations

import io
import pickle
from typing import Callable

import jax
import numpy as np


def device_of(array) -> jax.Device:
    """The one device ``array`` (a single-device ``jax.Array``) lives on."""
    return next(iter(array.devices()))


class OnDevices:
    """A compiled program as one callable over several devices: each call runs the executable of the device its first
    argument (the elements' seeds) lives on.

    Attributes:
        by_device: {device: compiled program}
    """

    def __init__(self, by_device: dict):
        self.by_device = by_device

    def __call__(self, seeds, *args):
        return self.by_device[device_of(seeds)](seeds, *args)

    def as_text(self) -> str:
        """The first device's optimized HLO (every device runs the same)."""
        return next(iter(self.by_device.values())).as_text()


class _OnDevice(pickle.Unpickler):
    """Reads what ``jax.experimental.serialize_executable`` wrote (its persistent ids: ``("exec", bytes)``,
    ``("device", id)``, ``("client",)``), loading the executable onto ``device`` and placing every device reference
    there: a one-device program's only device is the one it was compiled for."""

    def __init__(self, data: bytes, device):
        super().__init__(io.BytesIO(data))
        self.device = device

    def persistent_load(self, pid):
        from jax._src.lib import xla_client as xc  # noqa: PLC0415  (the device assignment has no public type)

        backend = self.device.client
        if pid[0] == "exec":
            options = xc.CompileOptions()
            options.num_replicas, options.num_partitions = 1, 1
            options.device_assignment = xc.DeviceAssignment.create(np.array([[self.device.id]]))
            return backend.deserialize_executable(pid[1], xc.DeviceList((self.device,)), options)
        if pid[0] == "device":
            return self.device
        if pid[0] == "client":
            return backend
        raise pickle.UnpicklingError(f"unknown persistent id {pid[0]!r}")


def load_on(entry, device):
    """The one-device executable serialized in ``entry`` (``compile_cache.serialized``: ``(bytes, in_tree,
    out_tree)``) loaded to run on ``device``; None where it does not load."""
    try:
        data, in_tree, out_tree = entry
        unloaded, args_info, no_kwargs = _OnDevice(data, device).load()
        return jax.stages.Compiled(unloaded.load(), [], in_tree.unflatten(args_info), out_tree, no_kwargs=no_kwargs)
    except Exception:  # noqa: BLE001  (compile for the device instead)
        return None


def spread(programs: tuple, entries: tuple, devices: list, compile_on: Callable) -> tuple:
    """``programs`` (compiled for ``devices[0]``) as [`OnDevices`][] over ``devices``: each other device loads the
    serialized ``entries`` (None: there are none), or where one does not load gets ``compile_on(device)``, the
    programs compiled for it (a tuple like ``programs``)."""
    per_device = [programs]
    for device in devices[1:]:
        loaded = tuple(None if e is None else load_on(e, device) for e in entries)
        per_device.append(loaded if None not in loaded else compile_on(device))
    return tuple(OnDevices({d: progs[i] for d, progs in zip(devices, per_device)}) for i in range(len(programs)))


__all__ = ["OnDevices", "device_of", "load_on", "spread"]
