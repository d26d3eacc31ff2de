"""Checkpoints within a run (both domains): the whole carry, the capacities it was made at, the capacity
events and the round times, written atomically; read back only by a run of the same identity.

A run's identity ([`run_identity`][]) is everything its trajectories depend on, as plain JSON: the algorithm, the
problem (a digest of its data or a fingerprint of its objective), hyperparameters, T, seeds, dtype and the program's
shape; the capacities a checkpoint was made at are stored beside it, so a run resumes at them and grows from there as
usual.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import zipfile
from pathlib import Path
from typing import NamedTuple

import jax
import numpy as np

from sketchbo.engine import files

CHECKPOINT_FORMAT = "sketchbo.checkpoint/5"  # tag of the identity stored in every checkpoint (3: box traces hold ucb;
# 4: finite traces hold batch_start, the BKB-family state its refresh attempt; 5: that state's exactness as step
# stamps, exact_at, in place of flags)


def run_identity(algorithm: str, problem: dict, hyperparameters, *, T: int, seeds, dtype: str, seed_axis: str,
                 rounds_per_call: int, **program) -> dict:
    """Everything a run's trajectories depend on, as plain JSON (``problem``: the domain's description of
    its problem; ``program``: further shape arguments such as the device count or the first capacity)."""
    identity = {"format": CHECKPOINT_FORMAT, "jax": jax.__version__, "algorithm": algorithm, "problem": problem,
                "hyperparameters": hyperparameters, "T": T, "seeds": list(seeds), "dtype": dtype,
                "seed_axis": seed_axis, "rounds_per_call": rounds_per_call, **program}
    return files.plain(identity)


class Saved(NamedTuple):
    """A checkpoint read back: the carry after ``rounds`` rounds, made at the static ``capacities``.

    Attributes:
        path: the checkpoint file
        capacities: static buffer sizes the carry was made with, e.g. {"m_max": 64, "u_max": 512}
        events: capacity events of the run so far (messages)
        rounds: rounds executed (the most of any seed)
        round_times: `(rounds,)` wall time per round so far
        leaves: the carry's leaves (numpy), in ``jax.tree.leaves`` order
    """

    path: Path
    capacities: dict
    events: list
    rounds: int
    round_times: list
    leaves: list


def digest(*arrays) -> str:
    """sha256 of arrays (dtype, shape and bytes)."""
    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(f"{a.dtype.str}{a.shape}".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def save_checkpoint(path: Path, identity: dict, capacities: dict, events: list, rounds: int,
                    round_times: list, carry) -> None:
    """Write the carry and what is needed to go on from it to ``path`` atomically (files.atomic_savez);
    ``capacities`` names the static buffer sizes the carry was made with."""
    leaves = jax.tree.leaves(carry)
    meta = {"identity": identity, "capacities": {k: int(v) for k, v in capacities.items()}, "events": list(events),
            "rounds": int(rounds), "n_leaves": len(leaves)}
    arrays = {f"carry_{k:04d}": np.asarray(leaf) for k, leaf in enumerate(leaves)}
    files.atomic_savez(path, meta=np.array(json.dumps(meta)),
                          round_times=np.asarray(round_times, np.float64), **arrays)


def load_checkpoint(path: Path, identity: dict, label: str) -> Saved | None:
    """The checkpoint at ``path`` when it belongs to a run of this ``identity``; None (and a message on
    stderr saying why it is ignored) when it is unreadable or belongs to another run; None without a
    message when there is none."""
    if not path.exists():
        return None
    try:
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(str(data["meta"]))
            stored = meta["identity"]
            saved = Saved(path, {str(k): int(v) for k, v in meta["capacities"].items()}, [str(e) for e in meta["events"]],
                          int(meta["rounds"]), data["round_times"].tolist(),
                          [data[f"carry_{k:04d}"] for k in range(int(meta["n_leaves"]))])
    except (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile) as err:
        print(f"[{label}] ignoring checkpoint {path}: unreadable ({type(err).__name__}: {err}); starting at "
              "round 0, the file will be overwritten", file=sys.stderr, flush=True)
        return None
    diff = files.differences(stored, identity)
    if diff:
        shown = ", ".join(diff[:5]) + (", ..." if len(diff) > 5 else "")
        aside = set_aside(path, saved.rounds)
        print(f"[{label}] ignoring checkpoint {path}: it belongs to a different run (differs in {shown}); "
              f"starting at round 0; that run's checkpoint is kept as {aside.name} (rename it back to resume it)",
              file=sys.stderr, flush=True)
        return None
    return saved


def set_aside(path: Path, rounds: int) -> Path:
    """Move another run's checkpoint at ``path`` out of this run's way, to ``<stem>.other-run-<rounds>.npz`` beside
    it (``-2``, ``-3``, ... appended while that name is taken), and return the new path: hours of another run's
    progress are never overwritten (e.g. a job resumed with another number of CPU devices, which is another run)."""
    aside, k = path.with_name(f"{path.stem}.other-run-{rounds}{path.suffix}"), 1
    while aside.exists():
        k += 1
        aside = path.with_name(f"{path.stem}.other-run-{rounds}-{k}{path.suffix}")
    os.replace(path, aside)
    return aside


def say_resuming(label: str, saved: Saved, t: int, T: int, rounds: int) -> None:
    caps = "".join(f", {k}={v}" for k, v in saved.capacities.items())
    print(f"[{label}] resuming from checkpoint {saved.path} at t={t}/{T} (round {rounds}{caps})",
          file=sys.stderr, flush=True)


def restored(saved: Saved, carry):
    """``carry``'s tree with the checkpoint's leaves, placed as ``carry``'s (ValueError when they do not fit)."""
    template, treedef = jax.tree.flatten(carry)
    if len(saved.leaves) != len(template):
        raise ValueError(f"checkpoint {saved.path} holds {len(saved.leaves)} state arrays but this run has "
                         f"{len(template)}; delete the file to start over")
    for k, (leaf, ref) in enumerate(zip(saved.leaves, template)):
        if leaf.shape != ref.shape or leaf.dtype != ref.dtype:
            raise ValueError(f"checkpoint {saved.path}: state array {k} is {leaf.dtype}{leaf.shape}, this run "
                             f"needs {ref.dtype}{ref.shape}; delete the file to start over")
    return jax.tree.unflatten(treedef, [jax.device_put(leaf, ref.sharding) for leaf, ref in zip(saved.leaves, template)])
