"""Ask/tell optimisation of a real black box over a finite set of candidate points.

Algorithms: BKB (Calandriello, Carratino, Lazaric, Valko, Rosasco; "Gaussian process optimization with
adaptive sketching: scalable and no regret", COLT 2019) and Batch-BKB (Calandriello, Carratino, Lazaric,
Valko, Rosasco; "Near-linear time Gaussian process optimization with adaptive batching and
resparsification", ICML 2020), with exact GP-UCB, GP-BUCB and eps-greedy as baselines: every name of
:data:`sketchbo.algorithms.ALGORITHMS`. Rewards are **maximised**.

The loop::

    opt = Optimizer(candidates, "bbkb", seed=0)     # candidates: (A, d) array of points
    for _ in range(20):
        idx, X = opt.ask()                          # the next batch: indices into candidates, points (n, d)
        ys = [f(x) for x in X]                      # evaluate the black box (the batch may run in parallel)
        opt.tell(idx, ys)                           # the whole batch, in any order
    index, point, mean = opt.best()

``ask`` runs the algorithm's ``select`` until its batch rule closes the batch (BBKB: 1 + sum_s
s~^2_fb(x_s) > C~, Alg. 1, L5; sequential algorithms: one point), in one jit-compiled ``while_loop``.
Until ``tell`` it is idempotent: asking again returns the same pending batch. ``tell`` feeds the batch
back (``update``) and refreshes the model (``resparsify``: BBKB Alg. 1, L11-16). ``save`` / ``load``
round-trip the whole optimiser through one ``.npz`` file.

Ask and tell are the two halves of the round engine's finite round (``sketchbo.engine.rounds``:
``select_batch`` and ``finish_batch``), with the runner's keys (``engine.program.seed_keys``: ``select``
folds in the step t, ``resparsify`` the step after the batch), so with the runner's rewards the asked points
equal :func:`sketchbo.runner.run`'s queries, and a saved and restored optimiser asks exactly (bit for bit in
float64) what an uninterrupted one asks.

Capacities (dictionary ``m_max``, unique pulled arms ``u_max``) are static buffer sizes with the runner's
first values (``runner.initial_capacities``; a user's ``m_max``/``u_max`` are honoured). When a model needs
more, the optimiser grows it as the runner does: to 1.5 times the need (``runner.next_capacities``), the
state before the step that overflowed padded into the larger buffers (``engine.program.padded_into``), and
the step done again. The Nyström engine (BKB, BBKB) and S-BPE overflow when the model is rebuilt after a
``tell``; the exact engine (GP-UCB, GP-BUCB) can overflow while selecting, which ``ask`` answers the same way.

Continuous domains (GSSBO and its baselines) are not driven by this class: their queries are points of a
box chosen by an acquisition maximiser over a JAX objective; use :func:`sketchbo.continuous.run`.
"""
from __future__ import annotations

import functools
import json
import math
import os
import zipfile
from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from sketchbo import tracking
from sketchbo.algorithms import ALGORITHMS, BO_ALGORITHMS, ArmSet, Params, Static, build, oversampling
from sketchbo.algorithms.common import arm_feedback
from sketchbo.engine.program import padded_into, seed_keys
from sketchbo.engine.rounds import capacity_request, finish_batch, select_batch
from sketchbo.engine.validate import check_int, invalid_value
from sketchbo.kernels import kernel_params, median_sigma2
from sketchbo.problems.base import Problem, check_problem
from sketchbo.runner import initial_capacities, make_static, next_capacities, resolve_hyperparameters

FORMAT = "sketchbo.api.Optimizer/1"  # tag of the files written by Optimizer.save


class Best(NamedTuple):
    """The candidate with the best observed mean reward."""

    index: int
    point: np.ndarray  # (d,)
    mean: float  # mean of the rewards told for this candidate


class _Config(NamedTuple):
    """Everything that defines an optimiser besides its candidates and its data (JSON-serialisable)."""

    algorithm: str
    hyper: dict  # resolved hyperparameters (delta already 1/horizon when it was None)
    kernel: dict  # {"name": ..., **hyperparameters as floats or lists}
    seed: int
    horizon: int
    dtype: str  # "float64" | "float32"
    noise_std: float | None  # xi of the width; None: sqrt(lam) (the runner's rule)
    m_max: int  # current dictionary capacity
    u_max: int  # current capacity of the unique pulled arms


class _Programs(NamedTuple):
    """The jit-compiled functions of one static configuration."""

    init: Callable  # (key, arms (A, d), params) -> state
    ask: Callable  # (state, key, params) -> (state, (queries (T,) int32 with -1 padding, n () int32), info)
    tell: Callable  # (state, queries (T,), ys (T,), key, params) -> (state, capacity info)


class _Pending(NamedTuple):
    queries: np.ndarray  # (n,) int arms of the pending batch, in the order they were selected
    state: object  # the algorithm state after selecting them


# ------------------------------------------------------------------------------------------ validation

def _as_candidates(candidates) -> np.ndarray:
    """(A, d) float64 copy of the candidate points; ValueError naming what is wrong."""
    try:
        arr = np.array(candidates, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError("candidates must be a numeric (A, d) array of points") from None
    if arr.ndim == 1:
        raise ValueError(f"candidates has shape {arr.shape}; expected (A, d) "
                         "(for one-dimensional points use candidates.reshape(-1, 1))")
    return arr


def _checked_problem(arms: np.ndarray, noise_std, kernel: dict) -> Problem:
    """check_problem on a reward-free Problem, its messages phrased for the API's arguments."""
    problem = Problem("ask_tell", arms, np.zeros(arms.shape[:1]), noise_std, kernel)
    try:
        return check_problem(problem)
    except ValueError as err:
        msg = str(err).replace("problem.arms", "candidates").replace("problem.noise_std", "noise_std")
        raise ValueError(msg) from None


def _kernel_spec(kernel: dict | None, arms: np.ndarray) -> dict:
    """The kernel as a JSON-serialisable dict; None gives the rbf kernel of :func:`median_sigma2`."""
    if kernel is None:
        return {"name": "rbf", "sigma2": median_sigma2(arms)}
    if not isinstance(kernel, dict):
        raise ValueError(f"kernel={kernel!r} is invalid; pass a dict such as {{'name': 'rbf', 'sigma2': 0.5}}")
    spec = {}
    for key, value in kernel.items():
        if key == "name" or value is None:
            spec[key] = value
            continue
        try:
            raw = np.asarray(value)
            if raw.dtype.kind not in "iuf":  # strings, booleans, complex numbers, objects
                raise TypeError(raw.dtype)
            spec[key] = raw.astype(np.float64).tolist()
        except (TypeError, ValueError):
            raise invalid_value(f"kernel.{key}", value, "it must be a number or a list of numbers") from None
    return spec


def _enable_dtype(dtype: str):
    if not isinstance(dtype, str) or dtype not in ("float64", "float32"):
        raise invalid_value("dtype", dtype, "choose 'float64' or 'float32'")
    if dtype == "float64":
        jax.config.update("jax_enable_x64", True)  # entry point: float64 (DESIGN §4), as runner.run does


def _config(algorithm, params, kernel, seed, horizon, dtype, noise_std, arms) -> _Config:
    if isinstance(algorithm, str) and algorithm in BO_ALGORITHMS:
        raise ValueError(f"algorithm={algorithm!r} optimises a continuous box, which ask/tell does not drive; "
                         f"use sketchbo.continuous.run with a ContinuousProblem (or one of {sorted(ALGORITHMS)} "
                         "over a finite set of candidate points)")
    horizon = check_int("horizon", horizon, 1)
    seed = check_int("seed", seed, 0)
    _enable_dtype(dtype)
    hyper = resolve_hyperparameters(algorithm, params, horizon)
    problem = _checked_problem(arms, noise_std, {})
    kspec = _kernel_spec(kernel, problem.arms)
    _kernel_params(kspec, arms.shape[1], _jdtype(dtype))  # validates the name and the hyperparameters
    caps = initial_capacities(algorithm, hyper, arms.shape[0], horizon)  # the runner's first capacities
    nstd = None if noise_std is None else float(noise_std)
    return _Config(algorithm, hyper, kspec, seed, horizon, dtype, nstd, caps["m_max"], caps["u_max"])


# ------------------------------------------------------------------------------------- the programs

def _static(cfg: _Config, A: int, d: int) -> Static:
    return make_static(cfg.algorithm, cfg.hyper, A, d, cfg.horizon, cfg.kernel["name"],
                       {"m_max": cfg.m_max, "u_max": cfg.u_max})


def _jdtype(dtype: str):
    return jnp.float64 if dtype == "float64" else jnp.float32


def _kernel_params(kspec: dict, d: int, jdt) -> dict:
    spec = dict(kspec)
    return kernel_params(spec.pop("name", None), d, jdt, **spec)


def _params(cfg: _Config, d: int) -> Params:
    """Params exactly as runner.run builds them (xi = noise_std, or sqrt(lam) when it is None)."""
    jdt = _jdtype(cfg.dtype)
    h = cfg.hyper
    lam = h.get("lam", 1.0)
    xi = cfg.noise_std if cfg.noise_std is not None else math.sqrt(lam)  # xi^2 = lam (PROTOCOLS §9)
    kparams = _kernel_params(cfg.kernel, d, jdt)
    return Params(lam=jnp.asarray(lam, jdt), qbar=jnp.asarray(oversampling(h), jdt),
                  C=jnp.asarray(h.get("C", 1.0), jdt), F=jnp.asarray(h.get("F", 0.0), jdt),
                  delta=jnp.asarray(h.get("delta", 0.5), jdt), xi=jnp.asarray(xi, jdt),
                  eps=jnp.asarray(h.get("eps", 0.0), jdt), kernel=kparams)


@functools.lru_cache(maxsize=32)
def _programs(algorithm: str, static: Static) -> _Programs:
    """Jitted init / ask / tell for one static configuration (cached across optimisers): the halves of the
    runner's round (``engine.rounds``)."""
    alg = build(ALGORITHMS[algorithm], static)
    T = static.T

    def init(key, arms, params):
        return alg.init(key, ArmSet(arms), params)

    def record(acc, t, q, info):  # pull j of the batch at position t mod T, its step in the runner's trace
        queries, n = acc
        return queries.at[t % T].set(q), n + 1

    def ask(state, key, params):  # at most T pulls in a batch
        empty = (-jnp.ones((T,), jnp.int32), jnp.int32(0))
        return select_batch(alg, key, params, state, empty, record, lambda st, acc: acc[1] < T)

    def tell(state, queries, ys, key, params):
        state, info = finish_batch(alg, key, params, state, arm_feedback(queries, ys))
        return state, capacity_request(info)

    return _Programs(jax.jit(init), jax.jit(ask), jax.jit(tell))


def _programs_for(cfg: _Config, A: int, d: int) -> _Programs:
    return _programs(cfg.algorithm, _static(cfg, A, d))


def _positions(t0: int, n: int, T: int) -> np.ndarray:
    """Buffer positions of the pulls t0, ..., t0 + n - 1 (n <= T): their steps modulo T."""
    return (t0 + np.arange(n)) % T


def _padded(t0: int, values, T: int, fill, dtype) -> np.ndarray:
    out = np.full((T,), fill, dtype=dtype)
    out[_positions(t0, len(values), T)] = values
    return out


# ------------------------------------------------------------------------------------- the optimiser

class Optimizer:
    """Ask/tell optimiser (maximisation) over a finite candidate set.

    Args:
        candidates: (A, d) array-like of points; ``ask`` returns indices into it and the points.
        algorithm: a name of :data:`sketchbo.algorithms.ALGORITHMS` (default Batch-BKB, ``"bbkb"``).
        params: the algorithm's hyperparameters (``ALGORITHMS[algorithm].defaults``), e.g.
            ``{"lam": 0.01, "F": 1.0, "C": 2.0}``. ``delta=None`` (the default) means 1 / ``horizon``.
        kernel: e.g. ``{"name": "rbf", "sigma2": 0.5}``; default rbf with half the median squared
            distance between candidates (:func:`median_sigma2`).
        seed: the keys (initial point, dictionary resampling) are ``jax.random.key(seed)``'s, as in the runner.
        dtype: ``"float64"`` (enables JAX's x64 mode, like the runner) or ``"float32"``.
        horizon: the planned number of evaluations T: delta defaults to 1/T, buffers hold T pulls and a
            batch is at most T long. Asking beyond it is allowed and works the same way (the step buffers
            wrap around), but delta = 1/T then no longer matches the run: pass the real horizon.
        noise_std: the noise standard deviation xi in the confidence width; ``None`` (default) uses
            sqrt(lam), the runner's rule.

    Every argument is validated (ValueError naming it) before anything is compiled.
    """

    def __init__(self, candidates, algorithm: str = "bbkb", *, params: dict | None = None,
                 kernel: dict | None = None, seed: int = 0, dtype: str = "float64", horizon: int = 1000,
                 noise_std: float | None = None):
        arms = _as_candidates(candidates)
        cfg = _config(algorithm, params, kernel, seed, horizon, dtype, noise_std, arms)
        self._setup(arms, cfg)
        self._state = self._prog.init(self._keys.init, self._arms, self._params)

    def _setup(self, arms: np.ndarray, cfg: _Config):
        _enable_dtype(cfg.dtype)
        self._candidates = arms  # (A, d) float64, host copy
        self._cfg = cfg  # with the current capacities
        self._prog = _programs_for(cfg, *arms.shape)  # compiled for self._cfg
        self._engine = ALGORITHMS[cfg.algorithm].engine
        self._keys = seed_keys(cfg.seed)
        self._arms = jnp.asarray(arms, _jdtype(cfg.dtype))  # (A, d)
        self._params = _params(cfg, arms.shape[1])
        self._history: list[tuple[np.ndarray, np.ndarray]] = []  # told batches (indices, ys) in asked order
        self._pending: _Pending | None = None

    # ------------------------------------------------------------------------------------- ask

    def ask(self) -> tuple[np.ndarray, np.ndarray]:
        """The next batch: ``(indices (n,) int, points (n, d))``, n >= 1.

        Idempotent until :meth:`tell`: asking again returns the same pending batch.
        """
        if self._pending is None:
            self._pending = self._select()
        q = self._pending.queries
        return q.copy(), self._candidates[q].copy()

    def _select(self) -> _Pending:
        while True:
            t0 = self.n_told
            state, (q_pad, n) = self._prog.ask(self._state, self._keys.select, self._params)
            queries = np.asarray(q_pad)[_positions(t0, int(n), self._cfg.horizon)].astype(np.int64)
            need = self._unique_pulled(queries) if self._engine == "exact" else 0
            if need <= self._cfg.u_max:
                return _Pending(queries, state)
            # the exact GP ran out of slots while selecting: grow (the state padded) and ask again
            self._cfg, self._prog, (self._state,) = self._grown(self._cfg, (0, need), self._state)

    def _unique_pulled(self, queries: np.ndarray) -> int:
        told = [idx for idx, _ in self._history]
        return int(np.unique(np.concatenate([queries, *told])).size)

    # ------------------------------------------------------------------------------------ tell

    def tell(self, indices, ys) -> None:
        """Feed back the rewards ``ys`` of the pending batch ``indices`` (all of it, in any order).

        Raises ValueError, leaving the optimiser unchanged, when there is no pending batch, when the
        indices are not exactly the pending batch (as a multiset), when the lengths differ or when a
        reward is NaN or infinite.
        """
        idx, ys_asked = self._checked_feedback(indices, ys)
        t0 = self.n_told
        T = self._cfg.horizon
        q_pad = jnp.asarray(_padded(t0, idx, T, -1, np.int32))
        y_pad = jnp.asarray(_padded(t0, ys_asked, T, 0.0, np.float64), self._params.lam.dtype)
        cfg, prog, before = self._cfg, self._prog, self._pending.state
        while True:
            state, (overflow, wanted) = prog.tell(before, q_pad, y_pad, self._keys.resparsify, self._params)
            if not bool(overflow):
                break
            # the new model wants more than a capacity holds: grow, and tell again from the padded state
            cfg, prog, (before,) = self._grown(cfg, tuple(int(w) for w in wanted), before)
        history = [*self._history, (idx, ys_asked)]
        self._state, self._cfg, self._prog, self._history, self._pending = state, cfg, prog, history, None

    def _checked_feedback(self, indices, ys) -> tuple[np.ndarray, np.ndarray]:
        """(pending indices in asked order, ys mapped to that order), or ValueError; mutates nothing."""
        if self._pending is None:
            raise ValueError("tell() without a pending batch: call ask() first and tell its indices")
        pending = self._pending.queries
        idx = np.asarray(indices)
        if idx.ndim != 1 or (idx.size and idx.dtype.kind not in "iu"):
            raise ValueError(f"indices must be a 1-D sequence of integers (the indices returned by ask()); "
                             f"got {indices!r}")
        try:
            y = np.asarray(ys, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"ys must be a 1-D sequence of numbers; got {ys!r}") from None
        if y.ndim != 1:
            raise ValueError(f"ys must be a 1-D sequence of numbers; got shape {y.shape}")
        if y.shape[0] != idx.shape[0]:
            raise ValueError(f"length mismatch: {idx.shape[0]} indices but {y.shape[0]} values in ys")
        in_batch = set(pending.tolist())
        for k, i in enumerate(idx.tolist()):
            if i not in in_batch:
                raise ValueError(f"index {i} (position {k}) is not in the pending batch {pending.tolist()}")
        if idx.shape[0] != pending.shape[0] or not np.array_equal(np.sort(idx), np.sort(pending)):
            raise ValueError(f"tell() takes the whole pending batch {pending.tolist()} (each index as often as "
                             f"asked, any order); got {idx.tolist()}")
        bad = np.flatnonzero(~np.isfinite(y))
        if bad.size:
            k = int(bad[0])
            raise ValueError(f"ys[{k}] = {y[k]} (for index {int(idx[k])}) is not finite; rewards must be finite "
                             "numbers (NaN and inf are rejected)")
        ys_asked = np.empty_like(y)
        ys_asked[np.argsort(pending, kind="stable")] = y[np.argsort(idx, kind="stable")]  # k-th repeat -> k-th
        return pending.copy(), ys_asked

    # ------------------------------------------------------------------------------ capacities

    def _grown(self, cfg: _Config, wanted, *states):
        """(config, programs, states padded into them) at the runner's grown capacities (1.5x the need).

        Mutates nothing: the caller commits the result."""
        A, d = self._candidates.shape
        larger, _ = next_capacities(cfg.algorithm, wanted, {"m_max": cfg.m_max, "u_max": cfg.u_max}, A, A)
        if larger is None:
            raise AssertionError(f"grow called without an overflow: wanted {wanted}, capacities {cfg}")
        cfg = cfg._replace(**larger)
        prog = _programs_for(cfg, A, d)
        template = prog.init(self._keys.init, self._arms, self._params)
        return cfg, prog, tuple(padded_into(state, template) for state in states)

    # -------------------------------------------------------------------------------- reading

    @property
    def n_told(self) -> int:
        """Number of evaluations told so far."""
        return sum(len(idx) for idx, _ in self._history)

    @property
    def history(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """The told batches ``[(indices (n,), ys (n,)), ...]``, each in the order ``ask`` returned it."""
        return [(idx.copy(), ys.copy()) for idx, ys in self._history]

    @property
    def state(self):
        """The algorithm state after the last ``tell`` (a NamedTuple of arrays; read-only)."""
        return self._state

    @property
    def capacities(self) -> dict:
        """Current static capacities ``{"m_max": ..., "u_max": ...}`` (grown on overflow)."""
        return {"m_max": self._cfg.m_max, "u_max": self._cfg.u_max}

    def best(self) -> Best:
        """``(index, point, mean)`` of the candidate with the best mean of its told rewards."""
        if not self._history:
            raise ValueError("best() needs at least one told evaluation; call ask() and tell() first")
        idx = np.concatenate([i for i, _ in self._history])
        ys = np.concatenate([y for _, y in self._history])
        A = self._candidates.shape[0]
        counts = np.bincount(idx, minlength=A)
        sums = np.bincount(idx, weights=ys, minlength=A)
        means = np.where(counts > 0, sums / np.maximum(counts, 1), -np.inf)
        i = int(np.argmax(means))
        return Best(i, self._candidates[i].copy(), float(means[i]))

    # -------------------------------------------------------------------------------- files

    def save(self, path) -> None:
        """Write the optimiser to ``path`` (an ``.npz``; written to a temporary file, then renamed).

        Stored: the candidates, the state's arrays, the told batches, and JSON metadata (algorithm,
        hyperparameters, kernel, seed, horizon, dtype, capacities, pending batch). Keys are not stored:
        they derive from the seed.
        """
        parent = os.path.dirname(os.path.abspath(os.fspath(path)))
        if not os.path.isdir(parent):
            raise ValueError(f"Optimizer.save({os.fspath(path)!r}): the directory {parent!r} does not exist")
        leaves = jax.tree.leaves(self._state)
        pending = self._pending.queries if self._pending is not None else np.zeros(0, np.int64)
        meta = {"format": FORMAT, **self._cfg._asdict(), "n_leaves": len(leaves),
                "has_pending": self._pending is not None}
        arrays = {f"state_{k:04d}": np.asarray(leaf) for k, leaf in enumerate(leaves)}
        arrays.update(
            meta=np.array(json.dumps(meta)), candidates=self._candidates, pending=pending,
            history_len=np.array([len(i) for i, _ in self._history], np.int64),
            history_idx=np.concatenate([np.zeros(0, np.int64), *[i for i, _ in self._history]]),
            history_ys=np.concatenate([np.zeros(0), *[y for _, y in self._history]]))
        tracking.atomic_savez(path, **arrays)  # temp file beside it, fsync, rename

    @classmethod
    def load(cls, path) -> "Optimizer":
        """Restore an optimiser written by :meth:`save`; it asks what the saved one would have asked."""
        try:
            with np.load(os.fspath(path), allow_pickle=False) as data:
                files = {k: data[k] for k in data.files}
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as err:
            raise ValueError(f"Optimizer.load({os.fspath(path)!r}): not a readable file written by Optimizer.save "
                             f"({type(err).__name__}: {err})") from None
        if "meta" not in files:
            raise ValueError(f"{path} is not a file written by Optimizer.save (no metadata)")
        meta = json.loads(str(files["meta"]))
        if meta.pop("format", None) != FORMAT:
            raise ValueError(f"{path} is not a file written by Optimizer.save (format {FORMAT!r} expected)")
        try:
            n_leaves, has_pending = meta.pop("n_leaves"), meta.pop("has_pending")
            cfg = _Config(**meta)
        except (KeyError, TypeError):
            raise ValueError(f"{path}: the metadata does not describe an Optimizer ({sorted(meta)})") from None
        opt = cls.__new__(cls)
        opt._setup(files["candidates"], cfg)
        opt._state = opt._restored_state([files[f"state_{k:04d}"] for k in range(n_leaves)], path)
        ends = np.cumsum(files["history_len"])
        opt._history = [(files["history_idx"][e - n:e], files["history_ys"][e - n:e])
                        for n, e in zip(files["history_len"], ends)]
        if has_pending:
            opt._pending = opt._select()
            if not np.array_equal(opt._pending.queries, files["pending"]):
                raise ValueError(f"{path}: the restored state does not reproduce the saved pending batch "
                                 f"{files['pending'].tolist()} (got {opt._pending.queries.tolist()})")
        return opt

    def _restored_state(self, leaves, path):
        """The state tree of the current programs with the saved leaves (shapes and dtypes checked)."""
        template = jax.eval_shape(self._prog.init, self._keys.init, self._arms, self._params)
        shapes, treedef = jax.tree.flatten(template)
        if len(leaves) != len(shapes):
            raise ValueError(f"{path}: {len(leaves)} state arrays saved but the algorithm has {len(shapes)}")
        for k, (leaf, ref) in enumerate(zip(leaves, shapes)):
            if leaf.shape != ref.shape or leaf.dtype != ref.dtype:
                raise ValueError(f"{path}: state array {k} has {leaf.dtype}{leaf.shape}; "
                                 f"expected {ref.dtype}{ref.shape}")
        return jax.tree.unflatten(treedef, [jnp.asarray(leaf) for leaf in leaves])

    def __repr__(self) -> str:
        A, d = self._candidates.shape
        return (f"Optimizer({self._cfg.algorithm!r}, A={A}, d={d}, n_told={self.n_told}, "
                f"pending={0 if self._pending is None else len(self._pending.queries)}, seed={self._cfg.seed})")
