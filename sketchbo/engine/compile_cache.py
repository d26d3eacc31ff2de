"""Compiled programs kept on disk between processes (docs/benchmarks.md#compilation-cache).

Every entry point (``sb.run``, ``sb.run_grid``, ``sb.Optimizer``, ``sketchbo-run``) keeps what it compiles in one
directory: ``$SKETCHBO_COMPILE_CACHE``, else ``~/.cache/sketchbo/jax``; ``SKETCHBO_COMPILE_CACHE=off`` turns it off.
A process that finds a program there loads it instead of compiling it. Two layers share the directory:

* **JAX's persistent compilation cache** (its files at the top level), keyed by the lowered program itself: every
  program of every algorithm, a user's own included. A cached program still costs its tracing and lowering (about
  0.5 s for BBKB's Cadata program on the 2-core CPU).
* **sketchbo's program store** (``programs/``): the serialized executables of the finite domain's built-in
  algorithms, keyed without tracing by what decides the program (the algorithm, its static configuration, the
  shapes, dtypes and devices, the XLA options, the JAX and jaxlib versions and a digest of sketchbo's own source
  files), so that a second identical run neither traces, lowers nor compiles it. A run's two programs (init and
  chunk) are stored apart, each only when the process compiled it: one that JAX's layer served does not serialize
  whole ([`jax_cache_hits`][]), and a later run traces and loads that one from JAX's layer.

A user's algorithm and the box domain, whose objective's code is part of its program, use JAX's layer only. Where
the user configured JAX's cache directory already, both layers use that directory. Both are bounded
([`MAX_BYTES`][], least recently used first out). To clear them, delete the directory or call [`clear`][].
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import pickle
import sys
import tempfile
import threading
from functools import lru_cache
from pathlib import Path

import jax

ENV = "SKETCHBO_COMPILE_CACHE"
"""The environment variable naming the cache directory (``off``, ``none``, ``null``, ``0`` or empty: no cache)."""
DEFAULT_DIR = "~/.cache/sketchbo/jax"
"""The cache directory where ``$SKETCHBO_COMPILE_CACHE`` is unset."""
OFF = ("", "off", "none", "null", "0", "false", "no")
MAX_BYTES = 2 * 1024 ** 3
"""The most bytes each layer keeps: the store's least recently used entries go first, and JAX evicts its own files
likewise where the ``filelock`` package is installed (without it JAX's layer is not bounded)."""
STORE_DIR = "programs"

STORE = True
"""Whether the program store is used (the test suite turns it off: its tests patch module globals that the store's key
cannot see)."""
_state = {"dir": None, "configured": False}


def requested_dir(value: str | None = None) -> Path | None:
    """The cache directory asked for: ``value`` (e.g. the CLI's ``compile_cache``), else ``$SKETCHBO_COMPILE_CACHE``,
    else [`DEFAULT_DIR`][]; None where it says off."""
    value = os.environ.get(ENV, DEFAULT_DIR) if value is None else value
    if str(value).strip().lower() in OFF:
        return None
    return Path(str(value)).expanduser()


def configure(path: str | os.PathLike | None) -> Path | None:
    """Keep compiled programs in the directory ``path`` (None: no cache): JAX's persistent cache and the program
    store. A directory that cannot be created or written leaves the cache off, with one line on stderr.

    Returns:
        The directory in use, or None.
    """
    _state["configured"] = True
    _state["dir"] = None
    if path is None:
        return None
    path = Path(path).expanduser()
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path):
            pass
    except OSError as err:
        print(f"[sketchbo] compilation cache off: cannot write to {path} ({err.strerror or err}); set "
              f"{ENV} to a writable directory, or to 'off'", file=sys.stderr, flush=True)
        return None
    _atomic_jax_writes()
    jax.config.update("jax_compilation_cache_dir", os.fspath(path))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    if importlib.util.find_spec("filelock") is not None:  # JAX's eviction needs it; without it JAX's layer is unbounded
        jax.config.update("jax_compilation_cache_max_size", MAX_BYTES)
    _state["dir"] = path
    return path


def _atomic_jax_writes() -> None:
    """Make JAX's cache write each file to a temporary name and rename it, where it runs without its file lock (the
    ``filelock`` package absent). It then writes the file in place while another process may read it, and the jobs
    of a parallel sweep compile the same programs at once: a reader could load a partial executable. With the lock,
    JAX's reads and writes exclude each other already. (The "Function ... not found" failure once suspected of this
    came from the program store: [`jax_cache_hits`][].)"""
    from jax._src import lru_cache  # noqa: PLC0415  (no public hook for the file cache's writes)

    put = lru_cache.LRUCache.put
    if getattr(put, "atomic", False):
        return

    def atomic_put(self, key: str, value: bytes) -> None:
        if getattr(self, "eviction_enabled", True) or not key:
            return put(self, key, value)
        path = self.path / f"{key}{lru_cache._CACHE_SUFFIX}"
        if path.exists():
            return None
        with tempfile.NamedTemporaryFile(dir=self.path, prefix=".", suffix=".tmp", delete=False) as tmp:
            tmp.write(value)
        os.replace(tmp.name, path)
        return None

    atomic_put.atomic = True
    lru_cache.LRUCache.put = atomic_put


def enable_default() -> Path | None:
    """The entry points' default, once per process: the directory JAX's cache was given by the user if any, else
    [`requested_dir`][]. A later call changes nothing.

    Returns:
        The directory in use, or None.
    """
    if _state["configured"]:
        return _state["dir"]
    users = jax.config.jax_compilation_cache_dir
    return configure(Path(users) if users else requested_dir())


def cache_dir() -> Path | None:
    """The directory compiled programs are kept in (None: off, or not configured yet in this process)."""
    return _state["dir"]


def clear(path: str | os.PathLike | None = None) -> int:
    """Delete the cached programs of both layers in ``path`` (default: the directory in use, else the one asked for).

    Returns:
        The number of files deleted.
    """
    path = Path(path).expanduser() if path is not None else (cache_dir() or requested_dir())
    if path is None or not path.is_dir():
        return 0
    removed = 0
    for f in sorted(path.rglob("*"), reverse=True):
        if f.is_file():
            f.unlink(missing_ok=True)
            removed += 1
        elif f.is_dir():
            f.rmdir()
    return removed


# ------------------------------------------------------------------------------------------------ the program store

@lru_cache(maxsize=1)
def source_digest() -> str:
    """sha256 of every Python file of the sketchbo package (paths and contents): an edit changes every store key."""
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for f in sorted(root.rglob("*.py")):
        h.update(str(f.relative_to(root)).encode())
        h.update(f.read_bytes())
    return h.hexdigest()


def _environment() -> tuple:
    """What outside the program decides its executable: versions, backend, devices, flags and JAX's settings."""
    import jaxlib  # noqa: PLC0415

    devices = jax.devices()
    settings = tuple(sorted((k, v) for k, v in jax.config.values.items()
                            if isinstance(v, (bool, int, float, str, type(None))) and "cache" not in k))
    return (jax.__version__, jaxlib.__version__, devices[0].platform, devices[0].client.platform_version,
            tuple(d.device_kind for d in devices), os.environ.get("XLA_FLAGS", ""), settings, sys.version_info[:2])


def program_key(parts: tuple, args) -> str:
    """The store key of a program: its description ``parts`` (reprs that identify it: algorithm, static
    configuration, horizon, seed axis, ...), the shapes, dtypes and shardings of its arguments ``args``, the
    environment and sketchbo's [`source_digest`][]."""
    avals = [(tuple(x.shape), str(x.dtype), str(getattr(x, "sharding", ""))) for x in jax.tree.leaves(args)]
    text = repr((parts, avals, jax.tree.structure(args), _environment(), source_digest()))
    return hashlib.sha256(text.encode()).hexdigest()


def _store() -> Path | None:
    """The store's directory; None where it is off. CPU only: the backend it is tested on."""
    if not STORE or cache_dir() is None or jax.default_backend() != "cpu":
        return None
    return cache_dir() / STORE_DIR


def _ensure_lapack() -> None:
    """Register JAX's LAPACK kernels with XLA, as lowering a LAPACK call does and as ``jax.export`` does before it
    loads a program: an executable that calls LAPACK (every eigh of the Nyström factors), loaded by a process that
    has lowered none, would otherwise call a kernel that is not registered (a crash)."""
    from jax._src.lax import linalg  # noqa: PLC0415  (no public way; an AttributeError keeps the program compiled)

    linalg.initialize_lapack()


def load(key: str, devices):
    """``(executables, entries)`` stored under ``key``: the executables (a tuple, as given to [`save`][] serialized)
    loaded onto ``devices`` (those they were compiled for, e.g. ``jax.devices()[:n]``) and their serialized entries
    ([`serialized`][]); or None: not stored, the store off, or an entry that does not load (it is then deleted)."""
    store = _store()
    if store is None:
        return None
    f = store / f"{key}.pkl"
    if not f.is_file():
        return None
    from jax.experimental import serialize_executable  # noqa: PLC0415

    try:
        _ensure_lapack()
        entries = pickle.loads(f.read_bytes())
        loaded = tuple(serialize_executable.deserialize_and_load(*e, execution_devices=list(devices))
                       for e in entries)
    except Exception:  # noqa: BLE001  (a stale or damaged entry: compile instead)
        f.unlink(missing_ok=True)
        return None
    os.utime(f)  # recently used
    return loaded, entries


def serialized(compiled):
    """``compiled`` serialized for the store or for other devices (``jax.experimental.serialize_executable``:
    ``(bytes, in_tree, out_tree)``), or None where it cannot be. Only an executable compiled in this process
    serializes whole ([`jax_cache_hits`][])."""
    from jax.experimental import serialize_executable  # noqa: PLC0415

    try:
        return serialize_executable.serialize(compiled)
    except Exception:  # noqa: BLE001  (a cache never fails a run)
        return None


_THREAD_HITS = threading.local()  # per thread: programs it has loaded from JAX's persistent cache


def _count_jax_hit(event: str, **_) -> None:
    if event == "/jax/compilation_cache/cache_hits":  # reported in the thread that compiles
        _THREAD_HITS.n = getattr(_THREAD_HITS, "n", 0) + 1


jax.monitoring.register_event_listener(_count_jax_hit)


def jax_cache_hits() -> int:
    """How many programs the calling thread has loaded from JAX's persistent cache so far.

    An executable that XLA:CPU loaded from JAX's cache does not serialize whole again: a program store entry made
    from one lacks some of its kernels, and the process that loads it fails with "NOT_FOUND: Function ... not
    found" (reproduced with jaxlib 0.10.2: a run that fills JAX's cache only, then a run whose program store misses
    and stores what JAX's cache returned, then a run that loads that entry; ``tests/test_compile_cache.py``). So
    [`save`][] is given only programs compiled in this process: a compilation's caller compares this count before
    and after, per thread, which tells which of two programs compiled at once (``engine.program.compile_both``)
    JAX's cache served."""
    return getattr(_THREAD_HITS, "n", 0)


def save(key: str, entries) -> None:
    """Store the serialized executables ``entries`` (a tuple of [`serialized`][] ones) under ``key``, atomically;
    nothing where the store is off or an entry is None. The oldest entries go beyond [`MAX_BYTES`][]. The executables
    must have been compiled in this process, not loaded from JAX's persistent cache ([`jax_cache_hits`][])."""
    store = _store()
    if store is None or any(e is None for e in entries):
        return
    tmp = None
    try:
        blob = pickle.dumps(tuple(entries))
        store.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=store, suffix=".tmp", delete=False) as tmp:
            tmp.write(blob)
        os.replace(tmp.name, store / f"{key}.pkl")
        _evict(store)
    except Exception:  # noqa: BLE001  (a cache never fails a run)
        if tmp is not None:
            Path(tmp.name).unlink(missing_ok=True)


def _evict(store: Path) -> None:
    """Delete the least recently used entries beyond [`MAX_BYTES`][] (another process may delete them first)."""
    sizes = {}
    for f in store.glob("*.pkl"):
        try:
            sizes[f] = (f.stat().st_mtime, f.stat().st_size)
        except FileNotFoundError:
            continue
    total = sum(size for _, size in sizes.values())
    for f in sorted(sizes, key=lambda f: sizes[f][0]):
        if total <= MAX_BYTES:
            break
        f.unlink(missing_ok=True)
        total -= sizes[f][1]


__all__ = ["DEFAULT_DIR", "ENV", "MAX_BYTES", "STORE", "cache_dir", "clear", "configure", "enable_default",
           "jax_cache_hits", "load", "program_key", "requested_dir", "save", "serialized", "source_digest"]
