"""The runner: many seeds of one algorithm in one compiled program, driven round by round (DESIGN §3).

One round = the selections of one batch (inner ``while_loop``: select until the batch rule closes it or
t = T), then the feedback of that batch (``update``) and a resparsification, for every seed. Seeds run
either through ``vmap`` (the default on accelerators; a seed whose batch has ended waits, masked) or a
sequential ``lax.map`` (the default on CPU, where batched small decompositions are slow). Both give the
same trajectories as single-seed runs: seed i uses ``jax.random.key(seed + i)`` and every random draw is
keyed by the step or round at which it happens, never by how many seeds run beside it.

A host loop calls a jitted chunk of ``rounds_per_call`` rounds, which gives progress output, per-round
timings and a check of the dictionary capacity after every call: an overflow is never silent; the run is
redone with a capacity about 1.5 times larger and the event is reported.

Checkpoints (``checkpoint=path, checkpoint_every=k``): at the first chunk boundary after every k rounds the
host loop writes the whole carry (every seed's state and traces), the round timings, the capacities in use
and the capacity events to ``path`` (temporary file, fsync, rename). A run of the same identity
(:func:`run_identity`: algorithm, problem data, kernel, hyperparameters, T, seeds, dtype and the program's
shape) started with the same ``path`` resumes there, at the checkpoint's capacities, and yields bit for bit
the trajectories of an uninterrupted run (the chunk function is deterministic and the keys derive from the
seeds); a checkpoint of another run is ignored with a message saying what differs, and overwritten.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
import sys
import time
import zipfile
from pathlib import Path
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from sketchbo import tracking
from sketchbo.algorithms import ALGORITHMS, ArmSet, Params, Static, build, rule_name
from sketchbo.kernels import KERNELS, kernel_params
from sketchbo.problems.base import Problem, check_problem


class RunResult(NamedTuple):
    algorithm: str
    problem: str
    T: int
    n_seeds: int
    seeds: list
    traces: dict  # query, reward, instant_regret, batch_index, dict_size, loop_iterations: (n_seeds, T) numpy
    round_time_s: np.ndarray  # (n_rounds,) wall time of each round (all seeds), chunk time split evenly
    cumulative_regret: np.ndarray  # (n_seeds,)
    regret_ratio: np.ndarray  # (n_seeds,) R_T / (T (f* - mean f))
    n_batches: np.ndarray  # (n_seeds,) int
    max_batch_size: np.ndarray  # (n_seeds,) int
    max_dict_size: np.ndarray  # (n_seeds,) int
    wall_time_s: float  # whole run, compilation included
    compile_time_s: float
    device: str
    dtype: str
    capacity_events: list  # messages about capacity growth
    hyperparameters: dict  # the resolved hyperparameters


class Traces(NamedTuple):
    """Per-seed run buffers carried through the rounds."""

    query: jax.Array  # (T,) int32 arm pulled at each step (-1 before it happens)
    batch_index: jax.Array  # (T,) int32 round (batch) of each step
    dict_size: jax.Array  # (T,) int32 dictionary size used by each selection
    rounds: jax.Array  # () int32 rounds executed
    overflow: jax.Array  # () bool, a resparsification wanted more than a capacity holds
    wanted: jax.Array  # (2,) int32 largest sizes wanted: [dictionary, unique pulled arms]
    loop_iterations: jax.Array  # (T,) int32 loop iterations of each in-batch step (info; 0 where not reported)


class SeedKeys(NamedTuple):
    init: jax.Array  # typed key of the initial state (x_1)
    noise: jax.Array  # typed key of the observation noise
    select: jax.Array  # folded with the step t
    resparsify: jax.Array  # folded with the step t at the batch end


# ---------------------------------------------------------------------------------------- validation

_CHOICES = {"beta": ("code", "paper", "vakili"), "beta_family": ("bkb", "bbkb"), "resample": ("code", "paper"),
            "batch_rule": ("product", "sum"), "dictionary": ("resampled", "all_pulled")}


def invalid_value(name, value, allowed):
    return ValueError(f"{name}={value!r} is invalid; {allowed}")


def check_int(name, value, lo):
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


def resolve_hyperparameters(algorithm: str, params: dict | None, T: int) -> dict:
    """Defaults completed by ``params``; every value checked. Raises ValueError naming the parameter."""
    if not isinstance(algorithm, str) or algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm={algorithm!r} is not a known algorithm; choose one of {sorted(ALGORITHMS)}")
    spec = ALGORITHMS[algorithm]
    hyper = with_defaults(algorithm, spec.defaults, params)
    checks = {
        "lam": (lambda v: v > 0, "it must be a finite number > 0"),
        "qbar": (lambda v: v > 0, "it must be a finite number > 0"),
        "C": (lambda v: v >= 1, "it must be a finite number >= 1"),
        "F": (lambda v: v >= 0, "it must be a finite number >= 0"),
        "delta": (lambda v: 0 < v < 1, "it must be in (0, 1), or null for 1/T"),
        "eps": (lambda v: 0 <= v <= 1, "it must be in [0, 1]"),
    }
    if hyper.get("delta", 0.5) is None:
        hyper["delta"] = 1.0 / T if T > 1 else 0.5
    for key, (ok, allowed) in checks.items():
        if key in hyper:
            hyper[key] = check_float(f"algorithm.{key}", hyper[key], ok, allowed)
    for key, choices in _CHOICES.items():
        if key in hyper and (not isinstance(hyper[key], str) or hyper[key] not in choices):
            raise invalid_value(f"algorithm.{key}", hyper[key], f"choose one of {list(choices)}")
    if hyper.get("beta") == "vakili" and spec.engine != "sparse":
        raise invalid_value("algorithm.beta", "vakili", "Theorem 3.5's width needs the Nyström engine (bkb, bbkb, "
                            "bbkb_local); choose 'code' or 'paper'")
    for key in ("m_max", "u_max"):
        if key in hyper:
            hyper[key] = check_int(f"algorithm.{key}", hyper[key], 1)
    return hyper


def _check_run_args(T, n_seeds, seed, dtype, seed_axis, rounds_per_call):
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


def _resolve_kernel(problem: Problem, kernel: dict | None, d: int, dtype) -> tuple[str, dict]:
    if kernel is not None and not isinstance(kernel, dict):
        raise invalid_value("kernel", kernel, "pass a dict such as {'name': 'rbf', 'sigma2': 5.0}, or None")
    spec = dict(kernel if kernel is not None else problem.kernel)
    name = spec.pop("name", None)
    if not isinstance(name, str) or name not in KERNELS:
        raise ValueError(f"kernel.name={name!r} is not a known kernel; choose one of {sorted(KERNELS)}")
    return name, kernel_params(name, d, dtype=dtype, **spec)


# ------------------------------------------------------------------------------------ the program

def seed_keys(seed: int) -> SeedKeys:
    k_init, k_noise, k_select, k_resp = jax.random.split(jax.random.key(seed), 4)
    return SeedKeys(k_init, k_noise, k_select, k_resp)


def _make_round(alg, T: int):
    """One round for one seed: select a batch, feed it back, resparsify; a no-op once t = T."""

    def select_step(carry, keys: SeedKeys, params):
        state, tr = carry
        t = state.t
        q, state, info = alg.select(jax.random.fold_in(keys.select, t), state, params)
        tr = tr._replace(
            query=tr.query.at[t].set(q), batch_index=tr.batch_index.at[t].set(tr.rounds),
            dict_size=tr.dict_size.at[t].set(info["dict_size"]),
            loop_iterations=tr.loop_iterations.at[t].set(info.get("loop_iterations", 0)))
        return state, tr

    def round_(carry, keys: SeedKeys, params, f, noise, xi):
        state, tr = carry
        t0 = state.t
        state, tr = jax.lax.while_loop(
            lambda c: c[0].batch_open & (c[0].t < T), lambda c: select_step(c, keys, params), (state, tr))
        pos = jnp.arange(T)
        queries = jnp.where((pos >= t0) & (pos < state.t), tr.query, -1)
        ys = f[jnp.maximum(queries, 0)] + xi * noise  # feedback y = f(x) + xi N(0, 1)
        state, _ = alg.update(state, queries, ys, params)
        state, info = alg.resparsify(jax.random.fold_in(keys.resparsify, state.t), state, params)
        wanted = jnp.stack([info["dict_wanted"], info["pulled_wanted"]]).astype(jnp.int32)
        tr = tr._replace(rounds=tr.rounds + 1, overflow=tr.overflow | info["overflow"],
                         wanted=jnp.maximum(tr.wanted, wanted))
        return state, tr

    def maybe_round(carry, keys, params, f, noise, xi):
        return jax.lax.cond(carry[0].t < T, lambda c: round_(c, keys, params, f, noise, xi), lambda c: c, carry)

    return maybe_round


def _over_seeds(fn, seed_axis: str):
    """Apply a per-seed function ``fn(per_seed_args...)`` to stacked seeds (vmap or sequential map)."""
    if seed_axis == "vmap":
        return jax.vmap(fn)
    return lambda *args: jax.lax.map(lambda a: fn(*a), args)


def make_program(alg, T: int, seed_axis: str, rounds_per_call: int, n_devices: int = 1):
    """(init_fn, chunk_fn): jitted functions over stacked elements (a seed at a hyperparameter point):
    keys, params and xi carry one leading entry per element.

    With ``n_devices > 1`` the elements are sharded over a 1-D device mesh (``shard_map``; the element
    count must be a multiple of ``n_devices``) and each device runs its share by ``seed_axis``: every
    element's computation is the one-device computation."""
    maybe_round = _make_round(alg, T)

    def init_one(keys: SeedKeys, arms, params):
        state = alg.init(keys.init, ArmSet(arms), params)
        noise = jax.random.normal(keys.noise, (T,), dtype=arms.dtype)
        tr = Traces(query=-jnp.ones((T,), jnp.int32), batch_index=jnp.zeros((T,), jnp.int32),
                    dict_size=jnp.zeros((T,), jnp.int32), rounds=jnp.zeros((), jnp.int32),
                    overflow=jnp.asarray(False), wanted=jnp.zeros((2,), jnp.int32),
                    loop_iterations=jnp.zeros((T,), jnp.int32))
        return (state, tr), noise

    def chunk_one(keys, carry, noise, params, f, xi):
        return jax.lax.fori_loop(0, rounds_per_call, lambda _, c: maybe_round(c, keys, params, f, noise, xi), carry)

    def init_all(keys, arms, params):
        return _over_seeds(lambda k, p: init_one(k, arms, p), seed_axis)(keys, params)

    def chunk_all(keys, carry, noise, params, f, xi):
        return _over_seeds(lambda k, c, n, p, x: chunk_one(k, c, n, p, f, x), seed_axis)(keys, carry, noise, params, xi)

    if n_devices == 1:
        return jax.jit(init_all), jax.jit(chunk_all, donate_argnums=(1,))
    mesh = jax.make_mesh((n_devices,), ("elements",), axis_types=(jax.sharding.AxisType.Auto,),
                         devices=jax.devices()[:n_devices])
    el, rep = jax.sharding.PartitionSpec("elements"), jax.sharding.PartitionSpec()
    sh_el, sh_rep = jax.sharding.NamedSharding(mesh, el), jax.sharding.NamedSharding(mesh, rep)
    init_sm = jax.shard_map(init_all, mesh=mesh, in_specs=(el, rep, el), out_specs=el, check_vma=False)
    chunk_sm = jax.shard_map(chunk_all, mesh=mesh, in_specs=(el, el, el, el, rep, el), out_specs=el,
                             check_vma=False)
    return (jax.jit(init_sm, in_shardings=(sh_el, sh_rep, sh_el), out_shardings=sh_el),
            jax.jit(chunk_sm, in_shardings=(sh_el, sh_el, sh_el, sh_el, sh_rep, sh_el), out_shardings=sh_el,
                    donate_argnums=(1,)))


# --------------------------------------------------------------------------------------- host loop

class _Progress:
    """Per-round progress of a run on stderr, timed from the end of compilation.

    On a terminal: one line redrawn in place (carriage return) with a bar, t/T, the round, elapsed time
    and ETA, at most every 0.2 s, ended by a newline when the run finishes. Otherwise (a log file, a
    pipe, a batch job): a plain line every ``every_s`` seconds and at the end.
    """

    BAR = 24  # bar width in characters

    def __init__(self, enabled: bool, label: str, T: int, every_s: float = 2.0):
        self.enabled, self.label, self.T = enabled, label, T
        try:
            self.tty = bool(enabled) and sys.stderr.isatty()
        except (AttributeError, ValueError):  # a replaced or closed stderr
            self.tty = False
        self.every_s = 0.2 if self.tty else every_s
        if self.tty:
            import shutil  # local: this class is the only user
            self.columns = shutil.get_terminal_size(fallback=(120, 24)).columns
        self.width = 0  # length of the last line drawn on the terminal
        self.restart()

    def restart(self):
        """Start the clock (after compilation, so that the ETA measures execution)."""
        self.start = time.perf_counter()
        self.last = -math.inf

    @staticmethod
    def _clock(seconds: float) -> str:
        if not math.isfinite(seconds):
            return "?"
        seconds = int(round(seconds))
        h, rest = divmod(seconds, 3600)
        return f"{h}:{rest // 60:02d}:{rest % 60:02d}" if h else f"{rest // 60:02d}:{rest % 60:02d}"

    def __call__(self, t_min: int, rounds: int, final: bool = False):
        now = time.perf_counter()
        if not self.enabled or (not final and now - self.last < self.every_s):
            return
        self.last = now
        elapsed = now - self.start
        frac = min(max(t_min / self.T, 0.0), 1.0)
        eta = elapsed * (1 - frac) / frac if frac > 0 else float("nan")
        if not self.tty:
            print(f"[{self.label}] round {rounds}: t={t_min}/{self.T} ({100 * frac:.0f}%) "
                  f"elapsed {elapsed:.1f}s eta {eta:.1f}s", file=sys.stderr, flush=True)
            return
        filled = int(frac * self.BAR)
        line = (f"[{self.label}] |{'#' * filled}{'.' * (self.BAR - filled)}| {100 * frac:3.0f}% "
                f"t={t_min}/{self.T} round {rounds} elapsed {self._clock(elapsed)} eta {self._clock(eta)}")
        line = line[:max(self.columns - 1, 1)]
        pad = " " * max(self.width - len(line), 0)  # clear the rest of a longer previous line
        self.width = len(line)
        sys.stderr.write("\r" + line + pad + ("\n" if final else ""))
        sys.stderr.flush()
        if final:
            self.width = 0


def _default_seed_axis() -> str:
    return "map" if jax.default_backend() == "cpu" else "vmap"


_PROGRAMS: dict = {}  # compiled (init, chunk) executables, reused by later runs with the same static config
_MAX_PROGRAMS = 32


def compiled_program(cache_key, make_fns, init_args, chunk_rest):
    """``(init_c, chunk_c, compile_s)`` of the program ``make_fns() -> (init_fn, chunk_fn)``, compiled on first
    use of ``cache_key`` and reused after (compile_s = 0). ``init_fn(*init_args) -> (carry, noise)``;
    ``chunk_fn(init_args[0], carry, noise, *chunk_rest)`` (the first argument is the seeds' keys)."""
    if cache_key in _PROGRAMS:
        return (*_PROGRAMS[cache_key], 0.0)
    init_fn, chunk_fn = make_fns()
    tc = time.perf_counter()
    init_c = init_fn.lower(*init_args).compile()
    carry, noise = jax.eval_shape(init_fn, *init_args)
    chunk_c = chunk_fn.lower(init_args[0], carry, noise, *chunk_rest).compile()
    compile_s = time.perf_counter() - tc
    if len(_PROGRAMS) >= _MAX_PROGRAMS:
        _PROGRAMS.pop(next(iter(_PROGRAMS)))
    _PROGRAMS[cache_key] = (init_c, chunk_c)
    return init_c, chunk_c, compile_s


def _compiled(spec, static, T, keys, arms, params, f, xi, seed_axis, rounds_per_call, n_devices):
    """Compiled executables for this configuration and these shapes; (init_c, chunk_c, compile_s)."""
    cache_key = ("finite", spec.name, static, T, seed_axis, rounds_per_call, n_devices, keys.init.shape,
                 str(arms.dtype), jax.tree.structure(params))
    return compiled_program(cache_key, lambda: make_program(build(spec, static), T, seed_axis, rounds_per_call,
                                                            n_devices),
                            (keys, arms, params), (params, f, xi))


# -------------------------------------------------------------------------------------- checkpoints

CHECKPOINT_FORMAT = "sketchbo.runner.checkpoint/1"  # tag of the identity stored in every checkpoint


class Saved(NamedTuple):
    """A checkpoint read back: the carry after ``calls`` chunks, made at the static ``capacities``."""

    path: Path
    capacities: dict  # static buffer sizes the carry was made with, e.g. {"m_max": 64, "u_max": 512}
    events: list  # capacity events of the run so far (messages)
    calls: int  # chunks of ``rounds_per_call`` rounds executed
    round_times: list  # (calls * rounds_per_call,) wall time per round so far
    leaves: list  # the carry's leaves (numpy), in ``jax.tree.leaves`` order


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


def _digest(*arrays) -> str:
    """sha256 of arrays (dtype, shape and bytes)."""
    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(f"{a.dtype.str}{a.shape}".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def run_identity(algorithm, problem, T, seeds, hypers, kname, kparams, dtype, seed_axis, rounds_per_call,
                 n_devices) -> dict:
    """Everything a run's trajectories depend on, as plain JSON: a checkpoint is resumed only by a run of
    the same identity. Capacities enter through the hyperparameters (initial m_max, u_max); the capacity
    a checkpoint was made with is stored beside it."""
    identity = {
        "format": CHECKPOINT_FORMAT, "jax": jax.__version__, "algorithm": algorithm,
        "problem": {"name": problem.name, "sha256": _digest(problem.arms, problem.f), "noise_std": problem.noise_std},
        "kernel": {"name": kname, **{k: np.asarray(v).tolist() for k, v in kparams.items()}},
        "hyperparameters": hypers, "T": T, "seeds": seeds, "dtype": dtype, "seed_axis": seed_axis,
        "rounds_per_call": rounds_per_call, "devices": n_devices,
    }
    return tracking.plain(identity)


def save_checkpoint(path: Path, identity: dict, capacities: dict, events: list, calls: int,
                    round_times: list, carry) -> None:
    """Write the carry and what is needed to go on from it to ``path`` atomically (tracking.atomic_savez).
    Shared by both runners: ``capacities`` names the static buffer sizes the carry was made with."""
    leaves = jax.tree.leaves(carry)
    meta = {"identity": identity, "capacities": {k: int(v) for k, v in capacities.items()}, "events": list(events),
            "calls": int(calls), "n_leaves": len(leaves)}
    arrays = {f"carry_{k:04d}": np.asarray(leaf) for k, leaf in enumerate(leaves)}
    tracking.atomic_savez(path, meta=np.array(json.dumps(meta)),
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
                          int(meta["calls"]), data["round_times"].tolist(),
                          [data[f"carry_{k:04d}"] for k in range(int(meta["n_leaves"]))])
    except (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile) as err:
        print(f"[{label}] ignoring checkpoint {path}: unreadable ({type(err).__name__}: {err}); starting at "
              "round 0, the file will be overwritten", file=sys.stderr, flush=True)
        return None
    diff = tracking.differences(stored, identity)
    if diff:
        shown = ", ".join(diff[:5]) + (", ..." if len(diff) > 5 else "")
        print(f"[{label}] ignoring checkpoint {path}: it belongs to a different run (differs in {shown}); "
              "starting at round 0, the file will be overwritten", file=sys.stderr, flush=True)
        return None
    return saved


def say_resuming(label: str, saved: Saved, t: int, T: int, rounds: int) -> None:
    caps = ", ".join(f"{k}={v}" for k, v in saved.capacities.items())
    print(f"[{label}] resuming from checkpoint {saved.path} at t={t}/{T} (round {rounds}, {caps})",
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


def _execute(spec, static, T, keys, arms, params, f, xi, seed_axis, rounds_per_call, n_devices, progress,
             resume: Saved | None = None, on_chunk=None):
    """Compile (or reuse) and run to t = T. Returns (carry, noise, round_times, compile_s).

    ``resume``: a checkpoint to go on from instead of the initial carry (its capacities are ``static``'s).
    ``on_chunk(carry, calls, round_times)`` is called after every chunk that did not overflow and did not
    finish the run (the checkpoint writer), before the carry is donated to the next chunk.
    """
    init_c, chunk_c, compile_s = _compiled(spec, static, T, keys, arms, params, f, xi, seed_axis, rounds_per_call,
                                           n_devices)
    carry, noise = init_c(keys, arms, params)  # the noise derives from the keys: recomputed, not stored
    round_times, calls = [], 0
    if resume is not None:
        carry = restored(resume, carry)
        round_times, calls = list(resume.round_times), resume.calls
        say_resuming(progress.label, resume, int(np.min(carry[0].t)), T, int(np.max(carry[1].rounds)))
    progress.restart()
    while True:
        t_call = time.perf_counter()
        carry = chunk_c(keys, carry, noise, params, f, xi)
        state, tr = carry
        t_all = np.asarray(state.t)  # blocks until the chunk is done
        dt = time.perf_counter() - t_call
        round_times.extend([dt / rounds_per_call] * rounds_per_call)
        calls += 1
        rounds = int(np.max(np.asarray(tr.rounds)))
        progress(int(t_all.min()), rounds)
        if bool(np.any(np.asarray(tr.overflow))) or int(t_all.min()) >= T:
            progress(int(t_all.min()), rounds, final=True)
            return carry, noise, np.asarray(round_times[:rounds]), compile_s
        if on_chunk is not None:
            on_chunk(carry, calls, round_times)


def _check_devices(devices) -> int:
    available = len(jax.devices())
    if devices is None:
        return available
    n = check_int("devices", devices, 1)
    if n > available:
        raise invalid_value("devices", devices, f"this process sees {available} device(s)")
    return n


def enable_compilation_cache(path) -> None:
    """Keep compiled programs in JAX's persistent cache at ``path``, shared by every process that uses it,
    so that the jobs of a sweep compile each distinct program once."""
    os.makedirs(path, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", os.fspath(path))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)


GRID_KEYS = ("lam", "qbar", "C", "F", "delta", "eps")  # float hyperparameters that can be a grid axis


def grid_points(algorithm: str, grid: dict | None) -> list[dict]:
    """The Cartesian product of ``grid`` ({name: [values]}), validated; [{}] without a grid."""
    grid = {k: v for k, v in (grid or {}).items() if v is not None}
    defaults = ALGORITHMS[algorithm].defaults if algorithm in ALGORITHMS else {}
    for key, values in grid.items():
        if key not in GRID_KEYS or key not in defaults:
            allowed = [k for k in GRID_KEYS if k in defaults]
            raise ValueError(f"grid.{key} is not a grid axis of {algorithm!r}; allowed: {allowed}")
        if isinstance(values, (str, bytes)) or not hasattr(values, "__len__") or len(values) == 0:
            raise ValueError(f"grid.{key}={values!r} is invalid; it must be a non-empty list of numbers")
    return [dict(zip(grid, combo)) for combo in itertools.product(*grid.values())]


def run(algorithm: str, problem: Problem, *, T: int, n_seeds: int = 1, seed: int = 0, params: dict | None = None,
        kernel: dict | None = None, dtype: str = "float64", seed_axis: str = "auto", progress: bool = True,
        rounds_per_call: int | None = None, devices: int | None = None, checkpoint=None,
        checkpoint_every: int | None = None) -> RunResult:
    """Run ``n_seeds`` seeds (``seed``, ``seed + 1``, ...) of an algorithm for T pulls on a finite problem.

    Everything is validated before compilation (ValueError naming the parameter). ``params`` are the
    algorithm's hyperparameters (see ``ALGORITHMS[algorithm].defaults``); ``kernel`` overrides the
    problem's kernel, e.g. ``{"name": "rbf", "sigma2": 5.0}``. ``checkpoint`` (a file path) with
    ``checkpoint_every`` (rounds) saves the run's progress there and resumes a run of the same identity
    from it (module docstring); the file is left in place at the end.
    """
    return run_grid(algorithm, problem, T=T, n_seeds=n_seeds, seed=seed, params=params, kernel=kernel,
                    dtype=dtype, seed_axis=seed_axis, progress=progress, rounds_per_call=rounds_per_call,
                    devices=devices, checkpoint=checkpoint, checkpoint_every=checkpoint_every)[0][1]


def run_grid(algorithm: str, problem: Problem, *, T: int, grid: dict | None = None, n_seeds: int = 1, seed: int = 0,
             params: dict | None = None, kernel: dict | None = None, dtype: str = "float64", seed_axis: str = "auto",
             progress: bool = True, rounds_per_call: int | None = None, devices: int | None = None,
             checkpoint=None, checkpoint_every: int | None = None) -> list[tuple[dict, RunResult]]:
    """Like :func:`run`, for every point of a grid of float hyperparameters, in one compiled program.

    ``grid`` maps names of :data:`GRID_KEYS` to lists of values, e.g. ``{"qbar": [1, 2, 5], "C": [1.5, 2]}``;
    the grid points and the seeds share one program (the float hyperparameters are arguments, not
    constants), so a grid costs one compilation, and each point's result equals :func:`run` with those
    values. Returns ``[(point, result), ...]`` in the order of the Cartesian product. ``wall_time_s``,
    ``compile_time_s`` and ``round_time_s`` of every result are those of the whole grid program.
    ``devices``: how many local devices share the elements (None = all of the default backend); the
    element count is padded to a multiple of it and the results are those of one device.
    ``checkpoint``, ``checkpoint_every``: as in :func:`run`, for the whole grid program.
    """
    wall0 = time.perf_counter()
    T, n_seeds, seed = _check_run_args(T, n_seeds, seed, dtype, seed_axis, rounds_per_call)
    ckpt_path, ckpt_every = check_checkpoint(checkpoint, checkpoint_every)
    points = grid_points(algorithm, grid)
    n_dev = _check_devices(devices)
    hypers = [resolve_hyperparameters(algorithm, {**(params or {}), **pt}, T) for pt in points]
    problem = check_problem(problem)
    if dtype == "float64":
        jax.config.update("jax_enable_x64", True)  # entry point: float64 on by default (DESIGN §4)
    jdt = jnp.float64 if dtype == "float64" else jnp.float32
    A, d = problem.arms.shape
    kname, kparams = _resolve_kernel(problem, kernel, d, jdt)
    spec = ALGORITHMS[algorithm]
    hyper = hypers[0]  # the discrete choices are the same at every point
    xis = [float(problem.noise_std) if problem.noise_std is not None else math.sqrt(h.get("lam", 1.0))
           for h in hypers]  # xi^2 = lam (PROTOCOLS §9)
    seed_axis = _default_seed_axis() if seed_axis == "auto" else seed_axis
    if rounds_per_call is None:
        rounds_per_call = 4 if spec.batched else max(1, min(64, T // 100))

    arms = jnp.asarray(problem.arms, jdt)
    f = jnp.asarray(problem.f, jdt)

    n_el = len(hypers) * n_seeds
    n_pad = -(-n_el // n_dev) * n_dev - n_el  # padding elements repeat the last one and are dropped

    def element_values(key, default):  # one entry per element: points outer, seeds inner, then padding
        vals = [h.get(key, default) for h in hypers for _ in range(n_seeds)]
        return jnp.asarray(vals + vals[-1:] * n_pad, jdt)

    xi_el = [x for x in xis for _ in range(n_seeds)]
    pvals = Params(
        lam=element_values("lam", 1.0), qbar=element_values("qbar", 1.0), C=element_values("C", 1.0),
        F=element_values("F", 0.0), delta=element_values("delta", 0.5),
        xi=jnp.asarray(xi_el + xi_el[-1:] * n_pad, jdt), eps=element_values("eps", 0.0),
        kernel=jax.tree.map(lambda v: jnp.broadcast_to(v, (n_el + n_pad,) + v.shape), kparams))
    seeds = [seed + i for i in range(n_seeds)]
    el_seeds = [s for _ in hypers for s in seeds]
    keys = jax.tree.map(lambda *k: jnp.stack(k), *[seed_keys(s) for s in el_seeds + el_seeds[-1:] * n_pad])
    m_max = min(hyper.get("m_max", 1), A) if "m_max" in spec.defaults else 1
    u_max = min(hyper.get("u_max", 1), A, T) if "u_max" in spec.defaults else 1
    events = []
    label = f"{algorithm}/{problem.name}" + (f" grid of {len(points)}" if len(points) > 1 else "")
    compile_total = 0.0
    saved = None
    if ckpt_path is not None:
        identity = run_identity(algorithm, problem, T, seeds, hypers, kname, kparams, dtype, seed_axis,
                                rounds_per_call, n_dev)
        saved = load_checkpoint(ckpt_path, identity, label)
        if saved is not None:  # go on at the capacities (and with the events) of the checkpoint
            m_max, u_max, events = saved.capacities["m_max"], saved.capacities["u_max"], list(saved.events)
    while True:
        static = Static(A=A, d=d, T=T, m_max=m_max, u_max=u_max, kernel=kname, beta_family=hyper.get("beta_family", "bbkb"),
                        beta_mode=hyper.get("beta", "code"), resample=hyper.get("resample", "code"),
                        batch_rule=rule_name(spec, hyper),
                        exact_dictionary=hyper.get("dictionary") == "all_pulled")
        on_chunk = None
        if ckpt_path is not None:
            every_calls = -(-ckpt_every // rounds_per_call)  # the first chunk boundary after every k rounds

            def on_chunk(carry, calls, round_times, m_max=m_max, u_max=u_max, events=list(events)):
                if calls % every_calls == 0:
                    save_checkpoint(ckpt_path, identity, {"m_max": m_max, "u_max": u_max}, events, calls,
                                    round_times, carry)
        carry, noise, round_times, compile_s = _execute(
            spec, static, T, keys, arms, pvals, f, pvals.xi, seed_axis, rounds_per_call, n_dev,
            _Progress(progress, label, T), resume=saved, on_chunk=on_chunk)
        saved = None  # a re-run after an overflow starts from round 0 at the larger capacity
        compile_total += compile_s
        tr = carry[1]
        if not bool(np.any(np.asarray(tr.overflow))):
            break
        wanted = np.asarray(tr.wanted).max(axis=0)
        for name, cap, want in (("dictionary capacity m_max", m_max, wanted[0]),
                                ("pulled-arm capacity u_max", u_max, wanted[1])):
            if want > cap:
                events.append(f"{name}={cap} overflowed (a seed wanted {want}); re-running with "
                              f"{name.split()[-1]}={min(A, math.ceil(1.5 * want))}")
                print(f"[{label}] {events[-1]}", file=sys.stderr, flush=True)
        m_max = min(A, max(m_max, math.ceil(1.5 * wanted[0]))) if wanted[0] > m_max else m_max
        u_max = min(A, T, max(u_max, math.ceil(1.5 * wanted[1]))) if wanted[1] > u_max else u_max
    results = []
    for g, (pt, h, xi) in enumerate(zip(points, hypers, xis)):
        part = jax.tree.map(lambda x: x[g * n_seeds:(g + 1) * n_seeds], (carry, noise))
        results.append((pt, _collect(algorithm, problem, T, seeds, part[0], part[1], xi, round_times, wall0,
                                     compile_total, dtype, events,
                                     {**h, "m_max_final": m_max, "u_max_final": u_max, "xi": xi})))
    return results


def _collect(algorithm, problem, T, seeds, carry, noise, xi, round_times, wall0, compile_s, dtype, events, hyper):
    tr = carry[1]
    query = np.asarray(tr.query)
    f = np.asarray(problem.f)
    f_star = float(f.max())
    inst = f_star - f[query]
    reward = f[query] + xi * np.asarray(noise, dtype=np.float64)
    batch_index = np.asarray(tr.batch_index)
    cum = inst.sum(axis=1)
    unif = T * (f_star - float(f.mean()))
    ratio = cum / unif if unif > 0 else np.full_like(cum, np.nan)
    max_batch = np.array([np.bincount(b).max() for b in batch_index])
    dev = jax.devices()[0]
    return RunResult(
        algorithm=algorithm, problem=problem.name, T=T, n_seeds=len(seeds), seeds=list(seeds),
        traces={"query": query, "reward": reward, "instant_regret": inst, "batch_index": batch_index,
                "dict_size": np.asarray(tr.dict_size), "loop_iterations": np.asarray(tr.loop_iterations)},
        round_time_s=round_times, cumulative_regret=cum, regret_ratio=ratio,
        n_batches=np.asarray(tr.rounds).astype(int), max_batch_size=max_batch,
        max_dict_size=np.asarray(tr.dict_size).max(axis=1).astype(int),
        wall_time_s=time.perf_counter() - wall0, compile_time_s=compile_s,
        device=f"{dev.platform}:{getattr(dev, 'device_kind', '')}", dtype=dtype, capacity_events=events,
        hyperparameters=hyper)
