"""The host loop of every run (docs/architecture.md#the-engine): compiled chunks of rounds, progress, per-round times,
checkpoints and capacity growth, the same for finite arm sets and continuous boxes.

The loop calls the compiled chunk until every seed has reached T. After each chunk it asks the domain whether a capacity
must grow; if so it compiles the program at the larger capacities and **continues from the last completed chunk**,
padded into the larger buffers ([`sketchbo.engine.program.padded_into`][]), never from round 0. Which chunk that is
depends on how the domain's rounds meet a full buffer: a seed whose next round would not fit waits (boxes:
``Loop.waits``), so the chunk just done is complete; a round that wanted more than a buffer holds is known only after it
ran (finite arms), so the chunk before it is the last complete one (chunks do not donate their carry) and at most one
chunk is computed twice per growth step. Every few rounds (``checkpoint_every``) the carry is written atomically, with
the capacities it was made at; a run of the same identity resumes there.
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
        carry: `(state, traces)` , stacked over the program's elements
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


def _rounds(carry) -> int:
    return int(np.max(np.asarray(carry[1].rounds)))


def _start(domain: Loop, capacities: dict, init_args, saved):
    """(init_c, chunk_c, compile_s, carry, noise) at ``capacities``, from round 0 or the checkpoint."""
    init_c, chunk_c, compile_s = domain.program(capacities)
    carry, noise = init_c(*init_args)  # the noise derives from the seeds' keys: recomputed, not stored
    if saved is not None:
        carry = ckpt.restored(saved, carry)
        ckpt.say_resuming(domain.label, saved, int(np.min(np.asarray(carry[0].t))), domain.T, _rounds(carry))
    return init_c, chunk_c, compile_s, carry, noise


def drive(domain: Loop, capacities: dict, init_args, chunk_args, progress: Progress,
          checkpointing: Checkpointing | None = None) -> Driven:
    """Run to t = T for every element: ``chunk_c(seeds, carry, noise, *chunk_args)`` with ``seeds = init_args[0]``."""
    events, round_times, saved = [], [], None
    if checkpointing is not None:
        saved = ckpt.load_checkpoint(checkpointing.path, checkpointing.identity, domain.label)
        if saved is not None:  # go on at the capacities (with the events and round times) of the checkpoint
            capacities, events, round_times = dict(saved.capacities), list(saved.events), list(saved.round_times)
    init_c, chunk_c, compile_s, carry, noise = _start(domain, capacities, init_args, saved)
    seeds, last_write = init_args[0], len(round_times)
    progress.restart(int(np.min(np.asarray(carry[0].t))))  # a resumed run's ETA counts only its new steps
    while True:
        last, before, t_call = carry, _rounds(carry), time.perf_counter()
        carry = chunk_c(seeds, carry, noise, *chunk_args)
        t_all = np.asarray(carry[0].t)  # blocks until the chunk is done
        dt, rounds = time.perf_counter() - t_call, _rounds(carry)
        round_times.extend([dt / (rounds - before)] * (rounds - before) if rounds > before else [])
        progress(int(t_all.min()), rounds)
        domain.check(carry)
        if int(t_all.min()) >= domain.T:
            progress(int(t_all.min()), rounds, final=True)
            return Driven(carry, noise, np.asarray(round_times), compile_s, capacities, events)
        larger, messages = domain.next_capacities(carry, capacities)
        if larger is not None:  # grow, and go on from the last completed chunk (docs/architecture.md#capacity-growth)
            for message in messages:
                print(f"[{domain.label}] {message}", file=sys.stderr, flush=True)
            events += messages
            if not domain.waits:
                del round_times[len(round_times) - (rounds - before):]  # this chunk is computed again
            init_c, chunk_c, cs = domain.program(larger)
            template = init_c(*init_args)[0]
            carry = jax.tree.map(lambda a, ref: jax.device_put(a, ref.sharding),
                                 domain.grow(carry if domain.waits else last, template), template)
            compile_s, capacities = compile_s + cs, larger
            progress.mark(int(np.min(np.asarray(carry[0].t))))  # a step costs more from here on
            continue
        if checkpointing is not None and rounds - last_write >= checkpointing.every:
            ckpt.save_checkpoint(checkpointing.path, checkpointing.identity, capacities, events, rounds,
                                 round_times, carry)
            last_write = rounds
