"""Batched LAPACK calls that the XLA CPU runtime may run at the same time — a deadlock on small machines.

jaxlib's CPU LAPACK kernels (``lapack_*_ffi``: Cholesky, triangular solve, eigh, ...) split a batch of matrices into
chunks on XLA's intra-op thread pool and block their thread until the chunks are done (jaxlib ``ParallelBatchMap``; in
jaxlib's source, when the batch holds >= 2e5 flops and the pool has > 1 thread). XLA's CPU runtime itself runs
independent operations of a program concurrently on the same pool. When as many batched LAPACK calls as the pool has
threads run at once, every thread waits for chunks that no thread is left to run: the process hangs in
``CpuPjRtRawLoadedExecutable::Execute`` with every worker idle. On a 2-core machine (the pool has two threads) two
independent batched triangular solves are enough; it was seen in VecchiaBO (jax 0.10.2, jaxlib's CPU build;
``XLA_FLAGS=--xla_cpu_multi_thread_eigen=false`` and ``--xla_cpu_use_thunk_runtime=false`` do not avoid it). Whether a
given call hangs depends on timing, so the programs are kept free of the pattern instead: every two batched LAPACK calls
of a computation are ordered by a data dependence (``sketchbo.linalg.after`` adds one where the algebra has none).
[`overlapping_lapack_calls`][] finds the pairs that are not in a compiled program's HLO text; ``compiled_program`` warns
about them and the tests turn the warning into an error.

Several devices: a program sharded over CPU devices runs one execution per device at the same time, on the same pool, so
with as many devices as the pool has threads a single batched LAPACK call per device is enough to hang. No data
dependence can order the devices, so an algorithm whose element holds such a call (``AlgorithmSpec.batched_lapack``:
VecchiaBO) runs on one CPU device (``engine.run.one_cpu_device``), and ``compiled_program`` warns about any other
sharded CPU program that holds one ([`batched_lapack_calls`][]).

Conservative: two calls count as ordered only through operands (and control predecessors) in the HLO; a
``while``/``call``/``conditional`` counts as a batched LAPACK call when a computation it runs holds one.
"""
from __future__ import annotations

import math
import re


class LapackOverlapWarning(RuntimeWarning):
    """A compiled CPU program holds batched LAPACK calls that may run concurrently (may hang)."""


_COMPUTATION = re.compile(r"^(?:ENTRY )?%([\w.\-]+) \(.*\{\s*$")
_INSTRUCTION = re.compile(r"^\s*(?:ROOT )?%([\w.\-]+) = (.*)$")
_CALLED = re.compile(r"\b(?:calls|to_apply|body|condition|true_computation|false_computation)=%([\w.\-]+)")
_BRANCHES = re.compile(r"\bbranch_computations=\{([^}]*)\}")
_NAME = re.compile(r"%([\w.\-]+)")
_LAPACK = re.compile(r'custom_call_target="(lapack_\w+)"')
_BATCH_DIMS = re.compile(r'num_batch_dims="(\d+)"')
_FIRST_SHAPE = re.compile(r"[a-z]\w*\[([\d,]*)\]")


def _computations(text: str) -> dict[str, list[tuple[str, str]]]:
    """{computation name: [(instruction name, the rest of its line)]} of HLO text."""
    comps: dict[str, list[tuple[str, str]]] = {}
    current = None
    for line in text.splitlines():
        start = _COMPUTATION.match(line)
        if start:
            current = comps.setdefault(start.group(1), [])
        elif line.startswith("}"):
            current = None
        elif current is not None:
            inst = _INSTRUCTION.match(line)
            if inst:
                current.append((inst.group(1), inst.group(2)))
    return comps


def _called(rest: str) -> list[str]:
    names = _CALLED.findall(rest)
    for group in _BRANCHES.findall(rest):
        names += _NAME.findall(group)
    return names


def _batched_lapack(rest: str) -> str | None:
    """The LAPACK target of a custom call over a batch of >= 2 matrices, else None."""
    target, batch = _LAPACK.search(rest), _BATCH_DIMS.search(rest)
    if target is None or batch is None or int(batch.group(1)) == 0:
        return None
    shape = _FIRST_SHAPE.search(rest)
    dims = [int(v) for v in shape.group(1).split(",") if v] if shape else []
    return target.group(1) if math.prod(dims[:int(batch.group(1))]) >= 2 else None


def _ancestors(name: str, preds: dict[str, set[str]]) -> set[str]:
    seen, stack = set(), [name]
    while stack:
        for p in preds[stack.pop()]:
            if p not in seen:
                seen.add(p)
                stack.append(p)
    return seen


_LAPACK_LINE = re.compile(r'^.*custom_call_target="lapack_\w+".*$', re.MULTILINE)


def _has_batched_lapack(text: str) -> bool:
    """Whether any line of the HLO ``text`` is a batched LAPACK call: a scan of the LAPACK lines alone, so that a
    program without one (e.g. every program of ``seed_axis='map'``) is not parsed (50 ms for BBKB's Cadata chunk)."""
    return any(_batched_lapack(m.group(0)) for m in _LAPACK_LINE.finditer(text))


def overlapping_lapack_calls(text: str) -> list[tuple[str, str, str]]:
    """(computation, call a, call b) for every two batched LAPACK calls (or ops running one) of a computation
    of the HLO ``text`` that no data dependence orders, i.e. that the CPU runtime may run concurrently."""
    if not _has_batched_lapack(text):
        return []
    comps = _computations(text)
    holds: dict[str, bool] = {}

    def holds_lapack(comp: str, seen=()) -> bool:
        if comp not in holds:
            inner = seen + (comp,)
            holds[comp] = any(_batched_lapack(rest) or any(c in comps and c not in inner and holds_lapack(c, inner)
                                                            for c in _called(rest))
                              for _, rest in comps.get(comp, []))
        return holds[comp]

    pairs = []
    for comp, insts in comps.items():
        names = {name for name, _ in insts}
        risky = [name for name, rest in insts
                 if _batched_lapack(rest) or any(c in comps and holds_lapack(c) for c in _called(rest))]
        if len(risky) < 2:
            continue
        preds = {name: {n for n in _NAME.findall(rest) if n in names and n != name} for name, rest in insts}
        ancestors = {name: _ancestors(name, preds) for name in risky}
        for i, a in enumerate(risky):
            for b in risky[i + 1:]:
                if a not in ancestors[b] and b not in ancestors[a]:
                    pairs.append((comp, a, b))
    return pairs


def batched_lapack_calls(text: str) -> list[str]:
    """The LAPACK target of every batched LAPACK call of the HLO ``text`` (any computation), in order."""
    if not _has_batched_lapack(text):
        return []
    return [target for insts in _computations(text).values() for _, rest in insts
            if (target := _batched_lapack(rest))]


__all__ = ["LapackOverlapWarning", "batched_lapack_calls", "overlapping_lapack_calls"]
