"""The compilation cache on disk (sketchbo.engine.compile_cache): a second process loads a built-in finite-arm program
from the program store without tracing or compiling it and runs the same trajectory; what must miss misses, a damaged
entry is replaced, a user's algorithm is left to JAX's own cache, and 'off' writes nothing."""
import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

import sketchbo as sb
from sketchbo.engine import compile_cache, program

SCRIPT = """
import json, sys
import sketchbo as sb
import sketchbo.engine.program as program
from sketchbo.engine import compile_cache
calls = []
real = program.compile_lowered
program.compile_lowered = lambda *a, **k: calls.append(1) or real(*a, **k)
res = sb.run("bbkb", sb.make_problem("gp_sample", A=80, d=2, seed=0), T=24, n_seeds=2, progress=False,
             rounds_per_call=int(sys.argv[1]) if len(sys.argv) > 1 else None)
print(json.dumps({"compiled": len(calls), "query": res.traces["query"].tolist(),
                  "stored": [p.name for p in (compile_cache.cache_dir() / "programs").glob("*.pkl")]}))
"""


def _run_script(cache, code=SCRIPT, *args):
    env = {**os.environ, compile_cache.ENV: str(cache)}
    proc = subprocess.run([sys.executable, "-c", code, *map(str, args)], env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_a_second_process_loads_the_program_and_compiles_nothing(tmp_path):
    first = _run_script(tmp_path / "cache")
    second = _run_script(tmp_path / "cache")
    assert first["compiled"] == 2 and len(first["stored"]) == 2  # init and chunk, each stored
    assert second["compiled"] == 0  # loaded: neither traced, lowered nor compiled
    assert second["query"] == first["query"]


def test_a_program_from_jaxs_cache_is_not_stored_and_every_later_run_loads(tmp_path):
    """An executable that XLA:CPU loaded from JAX's persistent cache does not serialize whole: stored, it failed the
    next process with "Function ... not found" (compile_cache.jax_cache_hits). A run that fills JAX's cache only (the
    store off), then runs that miss the store and hit JAX's cache: nothing is stored from them, and each runs."""
    cache = tmp_path / "cache"
    jax_only = SCRIPT.replace("calls = []", "compile_cache.STORE = False\ncalls = []").replace(
        '(compile_cache.cache_dir() / "programs").glob("*.pkl")', "[]")
    first = _run_script(cache, jax_only)
    assert first["compiled"] == 2 and not (cache / "programs").exists()
    for _ in range(2):
        later = _run_script(cache)
        assert later["compiled"] == 2 and later["stored"] == []  # JAX's cache hit: traced and loaded, not stored
        assert later["query"] == first["query"]


def test_a_program_that_jaxs_cache_served_leaves_the_other_stored(tmp_path):
    """Two configurations with the same init program and chunks of their own (BBKB with another number of rounds per
    call): the second's init comes from JAX's cache and is not stored, its chunk is; a third run loads the chunk and
    traces only the init."""
    cache = tmp_path / "cache"
    first = _run_script(cache, SCRIPT, 4)
    second = _run_script(cache, SCRIPT, 6)
    assert first["compiled"] == second["compiled"] == 2
    assert len(second["stored"]) == 3 and set(first["stored"]) < set(second["stored"])  # its chunk only
    third = _run_script(cache, SCRIPT, 6)
    assert third["compiled"] == 1 and sorted(third["stored"]) == sorted(second["stored"])  # the init, from JAX's cache
    assert third["query"] == second["query"] == first["query"]


def test_off_writes_nothing(tmp_path):
    env = {**os.environ, compile_cache.ENV: "off"}
    code = ("import sketchbo as sb; from sketchbo.engine import compile_cache as c; "
            "sb.run('bbkb', sb.make_problem('gp_sample', A=50, d=2), T=6, progress=False); print(c.cache_dir())")
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "None"
    assert compile_cache.requested_dir("off") is None and compile_cache.requested_dir("null") is None


@pytest.fixture
def store(tmp_path, monkeypatch):
    """The program store on, in a fresh directory, for this test, and JAX's persistent cache in it too (JAX opens its
    cache once per process: reset, so that no earlier test's programs are hits); JAX's cache settings restored after
    it."""
    from jax._src import compilation_cache as jax_cache  # noqa: PLC0415  (test-only: a fresh JAX layer per test)

    saved = {k: jax.config.values[k] for k in ("jax_compilation_cache_dir", "jax_persistent_cache_min_compile_time_secs")}
    monkeypatch.setattr(compile_cache, "STORE", True)
    monkeypatch.setattr(compile_cache, "_state", {"dir": None, "configured": False})
    monkeypatch.setattr(program, "_PROGRAMS", {})
    jax_cache.reset_cache()
    compile_cache.configure(tmp_path / "cache")
    yield tmp_path / "cache" / compile_cache.STORE_DIR
    for k, v in saved.items():
        jax.config.update(k, v)
    jax_cache.reset_cache()


def _run(algorithm="bbkb"):
    return sb.run(algorithm, sb.make_problem("gp_sample", A=60, d=2, seed=1), T=12, progress=False)


def _no_compiling(monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("compiled although the program is stored")
    monkeypatch.setattr(program, "compile_lowered", refuse)


def test_stored_program_is_loaded_in_process(store, monkeypatch):
    first = _run()
    assert len(list(store.glob("*.pkl"))) == 2  # init and chunk
    monkeypatch.setattr(program, "_PROGRAMS", {})
    with monkeypatch.context() as m:
        _no_compiling(m)
        again = _run()
    np.testing.assert_array_equal(again.traces["query"], first.traces["query"])


def test_an_edit_of_the_source_misses_and_a_damaged_entry_is_replaced(store, monkeypatch):
    _run()
    entries = sorted(store.glob("*.pkl"))
    fresh, real = [], program.compile_fresh

    def recorded(*args):
        out = real(*args)
        fresh.append(out[1])
        return out

    with monkeypatch.context() as m:
        m.setattr(program, "_PROGRAMS", {})
        m.setattr(compile_cache, "source_digest", lambda: "edited")
        m.setattr(program, "compile_fresh", recorded)
        _run()  # new keys: the store misses and JAX's cache serves both programs ...
    assert fresh == [False, False]
    assert sorted(store.glob("*.pkl")) == entries  # ... which are not stored (they would not load whole)
    entry = entries[0]
    entry.write_bytes(b"not a program")
    for f in store.parent.glob("*-cache"):  # JAX's files: the program compiles afresh
        f.unlink()
    monkeypatch.setattr(program, "_PROGRAMS", {})
    res = _run()  # the damaged entry is deleted, the program compiled and stored again
    assert res.traces["query"].shape == (1, 12)
    assert entry.is_file() and entry.read_bytes() != b"not a program"


def test_a_users_algorithm_is_not_stored(store):
    mine = dataclasses.replace(sb.ALGORITHMS["bbkb"], name="my_bbkb")
    _run(mine)
    assert not list(store.glob("*.pkl"))


def test_the_store_keeps_its_size(store, monkeypatch):
    _run()
    old = {p.name: p.stat().st_size for p in store.glob("*.pkl")}
    monkeypatch.setattr(compile_cache, "MAX_BYTES", sum(old.values()) + 1)
    monkeypatch.setattr(program, "_PROGRAMS", {})
    _run("gp_ucb")  # two more entries (no program in common with the first two): the older ones go
    now = {p.name: p.stat().st_size for p in store.glob("*.pkl")}
    assert now and not set(now) & set(old) and sum(now.values()) <= compile_cache.MAX_BYTES


def test_an_unwritable_directory_turns_the_cache_off_with_a_message(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(compile_cache, "_state", {"dir": None, "configured": False})
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert compile_cache.configure(blocker / "cache") is None
    assert "compilation cache off: cannot write to" in capsys.readouterr().err
    assert compile_cache.cache_dir() is None


def test_clear_deletes_both_layers(tmp_path):
    (tmp_path / "programs").mkdir()
    (tmp_path / "programs" / "a.pkl").write_bytes(b"x")
    (tmp_path / "jit_chunk_all-abc-cache").write_bytes(b"y")
    assert compile_cache.clear(tmp_path) == 2
    assert not any(p.is_file() for p in tmp_path.rglob("*"))


def test_jax_cache_files_appear_whole(store, tmp_path, monkeypatch):
    """Without JAX's file lock its cache wrote each file in place, so a process reading it meanwhile (the jobs of a
    parallel sweep) could load half an executable; after ``configure`` (the fixture's) a file appears only by a
    rename, whole."""
    from jax._src import lru_cache

    (tmp_path / "c").mkdir()
    cache = lru_cache.LRUCache(str(tmp_path / "c"), max_size=-1)  # no eviction: JAX's unlocked path
    assert not cache.eviction_enabled
    renamed = []
    real_replace = os.replace
    monkeypatch.setattr(os, "replace", lambda a, b: renamed.append((Path(a), Path(b))) or real_replace(a, b))
    cache.put("k", b"x" * 1000)
    assert [b.name for _, b in renamed] == ["k-cache"] and renamed[0][0].parent == tmp_path / "c"
    assert cache.get("k") == b"x" * 1000
    cache.put("k", b"other")  # an existing entry is kept, as JAX keeps it
    assert cache.get("k") == b"x" * 1000
    assert not list((tmp_path / "c").glob("*.tmp")) and not list((tmp_path / "c").glob(".*.tmp"))


def test_a_finite_program_traces_the_in_batch_step_once(monkeypatch):
    """program.traced_once: the init program's shape query of the step info and the chunk's in-batch loop share one
    trace of ``select`` (each trace of BBKB's select makes one rank-one update of V^{-1}); every trace of the run is
    that of the run without it, to the last bit."""
    from sketchbo.domains import finite_program
    from sketchbo.gp import nystrom

    calls = []
    real = nystrom.add_to_batch
    monkeypatch.setattr(nystrom, "add_to_batch", lambda *a: calls.append(1) or real(*a))
    monkeypatch.setattr(program, "_PROGRAMS", {})
    problem = sb.make_problem("gp_sample", A=70, d=2, seed=3)
    shared = sb.run("bbkb", problem, T=20, n_seeds=2, progress=False)
    assert len(calls) == 1
    monkeypatch.setattr(finite_program, "traced_once", lambda select: select)
    monkeypatch.setattr(program, "_PROGRAMS", {})
    twice = sb.run("bbkb", problem, T=20, n_seeds=2, progress=False)
    assert len(calls) == 3  # without it: once for init, once for the chunk
    for name in shared.traces:
        np.testing.assert_array_equal(shared.traces[name], twice.traces[name], err_msg=name)

