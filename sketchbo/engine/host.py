"""The host loop of every run (docs/architecture.md#the-engine): compiled chunks of rounds, progress, per-round times,
checkpoints and capacity growth, the same for finite arm sets and continuous boxes.

The loop calls the compiled chunk until every seed has reached T, on the CPU starting each chunk before it waits
for the one before (``_next_chunks``). After each chunk it asks the domain whether a capacity must grow; if so it
compiles the program at the larger capacities and **continues from the last completed chunk**, padded into the larger
buffers ([`sketchbo.engine.program.padded_into`][]), never from round 0. Which chunk that is depends on how the
domain's rounds meet a full buffer: a seed whose next round would not fit waits (boxes: ``Loop.waits``), so the chunk
just done is complete; a round that wanted more than a buffer holds is known only after it ran (finite arms), so the
chunk before it is the last complete one (chunks do not donate their carry) and at most one chunk is computed twice
per growth step (and the one started after it is dropped). Every few rounds (``checkpoint_every``) the carry is
written atomically, with the capacities it was made at; a run of the same identity resumes there.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Callable, NamedTuple

import jax
import numpy as np

from sketchbo.engine import checkpoint as ckpt
from sketchbo.engine.progress import Progress


class Loop(NamedTuple):
    """What the host loop needs to know of a domain (finite arm set or box) and its algorithm.

    Attributes:
        label: names the run in messages, e.g. "bbkb/cadata"
        T: horizon: the run ends when every seed's state.t reaches it
        program: `(capacities)` -> (init_c, chunk_c, compile_s)
        grow: (carry, template carry of the larger program) -> the carry in the larger buffers
        next_capacities: `(carry, capacities)` -> (larger capacities, [event messages]) or (None, [])
        check: raises on a chunk whose feedback is unusable (stops the run)
        waits: True: a seed whose next round would not fit waits (its carry stays valid), so growth goes on from the
            chunk just done; False: a round that overflowed is only known after it ran, so from the chunk before
    """

    label: str
    T: int
    program: Callable
    grow: Callable
    next_capacities: Callable
    check: Callable = lambda carry: None
    waits: bool = False


class Checkpointing(NamedTuple):
    """Where and how often the host loop writes a run's checkpoint.

    Attributes:
        path: the checkpoint file
        every: rounds between two writes (at the first chunk boundary after them)
        identity: run_identity of the run
    """

    path: Path
    every: int
    identity: dict


class Driven(NamedTuple):
    """What a run produced: the final carry and its bookkeeping.

    Attributes:
        carry: `(state, traces)` , stacked over every element (numpy arrays where the run had several waves)
        noise: `(n_elements, T)` standard normal draws of the observation noise
        round_times: `(rounds,)` wall time per round (a chunk's time split over its rounds)
        compile_s: compilation time of every program used (growth steps included)
        capacities: the final capacities
        events: capacity growth messages
    """

    carry: tuple
    noise: object
    round_times: np.ndarray
    compile_s: float
    capacities: dict
    events: list


class Wave(NamedTuple):
    """The arguments of one wave of elements (``engine.program.wave_bounds``).

    Attributes:
        init_args: `(seeds (E_w,) int64, elements, shared)` of the init program
        chunk_args: `(elements, shared)` after (seeds, carry, noise) in the chunk program
    """

    init_args: tuple
    chunk_args: tuple


class _Joined:
    """One leaf of the waves' carries read as one array over every element: concatenated on the host when read
    (``np.asarray``), so that the domain's checks and a checkpoint see the carry of the whole run."""

    def __init__(self, parts):
        self.parts = parts

    def __array__(self, dtype=None, copy=None):
        joined = np.concatenate([np.asarray(p) for p in self.parts])
        return joined if dtype is None else joined.astype(dtype, copy=False)


def joined(trees: list, eager: bool = False):
    """The waves' trees (carries or noises) as one tree over every element: the tree itself for one wave, else leaves
    concatenated on the host when read (``_Joined``) or, with ``eager``, now (numpy arrays)."""
    if len(trees) == 1:
        return trees[0]
    if eager:
        return jax.tree.map(lambda *parts: np.concatenate([np.asarray(p) for p in parts]), *trees)
    return jax.tree.map(lambda *parts: _Joined(parts), *trees)


def _rounds(carries: list) -> int:
    return max(int(np.max(np.asarray(c[1].rounds))) for c in carries)


def _t_min(carries: list) -> int:
    return min(int(np.min(np.asarray(c[0].t))) for c in carries)


def _start(domain: Loop, capacities: dict, waves: list, saved):
    """(init_c, chunk_c, compile_s, carries, noises) at ``capacities``, one carry and noise per wave, from round 0 or
    the checkpoint (whose carry holds every element, in the waves' order)."""
    init_c, chunk_c, compile_s = domain.program(capacities)
    carries, noises = map(list, zip(*(init_c(*w.init_args) for w in waves)))  # noise: from the seeds' keys
    if saved is not None:
        lo = np.cumsum([0] + [int(w.init_args[0].shape[0]) for w in waves])
        carries = [ckpt.restored(saved._replace(leaves=[leaf[a:b] for leaf in saved.leaves]), c)
                   for a, b, c in zip(lo[:-1], lo[1:], carries)]
        ckpt.say_resuming(domain.label, saved, _t_min(carries), domain.T, _rounds(carries))
    return init_c, chunk_c, compile_s, carries, noises


def _grown(domain: Loop, init_c, waves: list, carries: list) -> list:
    """Every wave's carry in the buffers of the program ``init_c`` belongs to (capacity growth)."""
    out = []
    for w, carry in zip(waves, carries):
        template = init_c(*w.init_args)[0]
        out.append(jax.tree.map(lambda a, ref: jax.device_put(a, ref.sharding), domain.grow(carry, template), template))
    return out


AHEAD_BACKENDS = ("cpu",)
"""The backends on which the host loop starts each chunk before it waits for the one before (``_next_chunks``)."""


def _next_chunks(chunk_c, waves: list, carries: list, noises: list) -> list:
    """Every wave's next chunk, started (JAX dispatches asynchronously) from ``carries``, which may still be computing:
    a device then goes on from one chunk to the next without waiting for the host loop, which reads each chunk's
    carry while its successor runs, nor for the other devices' waves. The chunk started after the last one needed runs
    no round (every seed is at T) and is dropped, as are those started from a carry that overflowed. BBKB on Cadata,
    T = 10^4, ten seeds on the 2-core CPU's two devices, 4 alternations (2026-12-05): execution 8.13 s against
    8.46 s when the loop started each chunk after reading the one before; one seed 1.17 s against 1.18 s. Only on the
    CPU: there a carry more is cheap, while on an accelerator the carries of many seeds fill its memory, and a chunk
    ahead was not measured there."""
    return [chunk_c(w.init_args[0], c, n, *w.chunk_args) for w, c, n in zip(waves, carries, noises)]


def drive(domain: Loop, capacities: dict, waves: list, progress: Progress,
          checkpointing: Checkpointing | None = None) -> Driven:
    """Run to t = T for every element: per wave ``w`` ([`Wave`][]), ``chunk_c(seeds, carry, noise, *w.chunk_args)``
    with ``seeds = w.init_args[0]``; every wave's chunk is started before the loop waits for the first, and on the CPU
    each chunk's successor before the loop waits for it (``_next_chunks``)."""
    events, round_times, saved = [], [], None
    if checkpointing is not None:
        saved = ckpt.load_checkpoint(checkpointing.path, checkpointing.identity, domain.label)
        if saved is not None:  # go on at the capacities (with the events and round times) of the checkpoint
            capacities, events, round_times = dict(saved.capacities), list(saved.events), list(saved.round_times)
    init_c, chunk_c, compile_s, carries, noises = _start(domain, capacities, waves, saved)
    last_write = len(round_times)
    progress.restart(_t_min(carries))  # a resumed run's ETA counts only its new steps
    ahead = jax.default_backend() in AHEAD_BACKENDS  # a chunk ahead (``_next_chunks``)
    pending = _next_chunks(chunk_c, waves, carries, noises)
    while True:
        last, before, t_call = carries, _rounds(carries), time.perf_counter()
        carries, pending = pending, (_next_chunks(chunk_c, waves, pending, noises) if ahead else None)
        t_min = _t_min(carries)  # blocks until the chunks are done
        dt, rounds = time.perf_counter() - t_call, _rounds(carries)
        round_times.extend([dt / (rounds - before)] * (rounds - before) if rounds > before else [])
        progress(t_min, rounds)
        domain.check(joined(carries))
        if t_min >= domain.T:
            progress(t_min, rounds, final=True)
            return Driven(joined(carries, eager=True), joined(noises, eager=True), np.asarray(round_times),
                          compile_s, capacities, events)
        larger, messages = domain.next_capacities(joined(carries), capacities)
        if larger is not None:  # grow, and go on from the last completed chunk (docs/architecture.md#capacity-growth)
            for message in messages:
                print(f"[{domain.label}] {message}", file=sys.stderr, flush=True)
            events += messages
            if not domain.waits:
                del round_times[len(round_times) - (rounds - before):]  # this chunk is computed again
            init_c, chunk_c, cs = domain.program(larger)
            carries = _grown(domain, init_c, waves, carries if domain.waits else last)
            pending = _next_chunks(chunk_c, waves, carries, noises)  # the chunks started from the old ones: dropped
            compile_s, capacities = compile_s + cs, larger
            progress.mark(_t_min(carries))  # a step costs more from here on
            continue
        if checkpointing is not None and rounds - last_write >= checkpointing.every:
            ckpt.save_checkpoint(checkpointing.path, checkpointing.identity, capacities, events, rounds,
                                 round_times, joined(carries))
            last_write = rounds
        if not ahead:
            pending = _next_chunks(chunk_c, waves, carries, noises)
