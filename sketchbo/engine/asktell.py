"""The engine's two halves for ask/tell, on both domains (docs/architecture.md#asktell).

``ask`` = the in-batch loop of a round (``engine.rounds.select_batch``: ``select`` until the batch rule closes
the batch, BBKB Alg. 1, L3–8); ``tell`` = its feedback half (``engine.rounds.finish_batch``: ``update`` then
``resparsify``, L9–16). The keys are the engine's (``engine.program.seed_keys``: ``select`` folds in the step t,
``resparsify`` the step after the batch) and the capacities start and grow by the domains' rules, so told the
rewards of a run, a session asks exactly the run's queries.

A session holds the device state and its compiled programs; ``sketchbo.api.Optimizer`` validates the user's
calls and keeps the host-side record (the told batches, the pending one, files).
"""
from __future__ import annotations

import functools
import math
from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from sketchbo.algorithms.common import arm_feedback
from sketchbo.contract import ArmSet, BoxSet, Feedback
from sketchbo.algorithms.box_hyper import needs_room
from sketchbo.engine.program import padded_into, seed_keys
from sketchbo.engine.rounds import capacity_request, finish_batch, select_batch
from sketchbo.kernels import kernel_params
from sketchbo.spec import AlgorithmSpec, Setting


class Programs(NamedTuple):
    """The jit-compiled halves of one static configuration.

    Attributes:
        init: `(key, params)` -> state
        ask: `(state, key, params)` -> (state, (selections buffer, n () int32))
        tell: (state, feedback..., key, params) -> (state, (overflow, wanted))
    """

    init: Callable
    ask: Callable
    tell: Callable


def _jdtype(dtype: str):
    return jnp.float64 if dtype == "float64" else jnp.float32


# ------------------------------------------------------------------------------------ finite candidates

class FiniteConfig(NamedTuple):
    """Everything that defines a finite session besides its candidates and data (JSON-serialisable).

    Attributes:
        algorithm: the algorithm's name (the registry's key, or the spec's name)
        hyper: resolved hyperparameters (delta already 1/horizon when it was None)
        kernel: {"name": ..., **hyperparameters as floats or lists}
        seed: the session's seed (its keys are ``jax.random.key(seed)``'s)
        horizon: the planned number of evaluations T
        dtype: "float64" | "float32"
        noise_std: xi of the width; None: sqrt(lam) (the run's rule)
        m_max: current dictionary capacity
        u_max: current capacity of the unique pulled arms
    """

    algorithm: str
    hyper: dict
    kernel: dict
    seed: int
    horizon: int
    dtype: str
    noise_std: float | None
    m_max: int
    u_max: int


@functools.lru_cache(maxsize=32)
def finite_programs(spec: AlgorithmSpec, static, T: int) -> Programs:
    """Jitted init / ask / tell for one static configuration of a finite algorithm (cached)."""
    alg = spec.build(static)

    def init(key, arms, params):
        return alg.init(key, ArmSet(arms), params)

    def record(acc, t, q, info):  # pull j of the batch at position t mod T, its step in the run's trace
        queries, n = acc
        return queries.at[t % T].set(q), n + 1

    def ask(state, key, params):  # at most T pulls in a batch
        empty = (-jnp.ones((T,), jnp.int32), jnp.int32(0))
        return select_batch(alg, key, params, state, empty, record, lambda st, acc: acc[1] < T)

    def tell(state, queries, ys, key, params):
        state, info = finish_batch(alg, key, params, state, arm_feedback(queries, ys))
        return state, capacity_request(info)

    return Programs(jax.jit(init), jax.jit(ask), jax.jit(tell))


class FiniteSession:
    """The device side of ask/tell on an (A, d) candidate set: queries are arm indices."""

    kind = "finite"

    def __init__(self, candidates: np.ndarray, cfg: FiniteConfig, spec: AlgorithmSpec):
        self.candidates, self.cfg, self.spec = candidates, cfg, spec
        self.keys = seed_keys(cfg.seed)
        self.arms = jnp.asarray(candidates, _jdtype(cfg.dtype))
        self.params = self._params()
        self.prog = self._programs(cfg)
        self.state = self.prog.init(self.keys.init, self.arms, self.params)

    def _params(self):
        """The algorithm's params (``AlgorithmSpec.make_params``), as a run's: xi^2 = lam where no noise level
        is given, the session's kernel."""
        cfg, jdt, h = self.cfg, _jdtype(self.cfg.dtype), self.cfg.hyper
        xi = cfg.noise_std if cfg.noise_std is not None else math.sqrt(h.get("lam", 1.0))
        spec = dict(cfg.kernel)
        kparams = kernel_params(spec.pop("name"), self.candidates.shape[1], jdt, **spec)
        return jax.tree.map(jnp.asarray, self.spec.make_params(h, jdt, xi=xi, kernel=kparams))

    def _setting(self) -> Setting:
        A, d = self.candidates.shape
        return Setting(self.cfg.horizon, d, A, self.cfg.kernel["name"])

    def _programs(self, cfg: FiniteConfig) -> Programs:
        static = self.spec.static(cfg.hyper, self._setting(), self._caps(cfg))
        return finite_programs(self.spec, static, cfg.horizon)

    @staticmethod
    def _caps(cfg: FiniteConfig) -> dict:
        return {k: v for k, v in (("m_max", cfg.m_max), ("u_max", cfg.u_max)) if v is not None}

    @property
    def capacities(self) -> dict:
        return self._caps(self.cfg)

    def select(self, told: list, t0: int):
        """(keys (n,), points (n, d), state after selecting them, None) of the next batch."""
        T = self.cfg.horizon
        while True:
            state, (q_pad, n) = self.prog.ask(self.state, self.keys.select, self.params)
            queries = np.asarray(q_pad)[(t0 + np.arange(int(n))) % T].astype(np.int64)
            wanted_by = self.spec.hooks.ask_wanted
            wanted = (0, 0) if wanted_by is None else wanted_by(np.concatenate([queries, *told]))
            if wanted[1] <= (self.cfg.u_max or 0):
                return queries, self.candidates[queries].copy(), state, None
            # the exact GP ran out of slots while selecting: grow (the state padded) and ask again
            self.cfg, self.prog, self.state = self._grown(self.cfg, wanted, self.state)

    def tell(self, before, keys: np.ndarray, rewards: np.ndarray, t0: int, extra=None) -> None:
        """Feed the batch (asked order) back from the state ``before`` (the pending one); grow on overflow."""
        T = self.cfg.horizon
        pos = (t0 + np.arange(len(keys))) % T
        q_pad, y_pad = np.full((T,), -1, np.int32), np.zeros((T,))
        q_pad[pos], y_pad[pos] = keys, rewards
        q_pad, y_pad = jnp.asarray(q_pad), jnp.asarray(y_pad, self.arms.dtype)
        cfg, prog = self.cfg, self.prog
        while True:
            state, (overflow, wanted) = prog.tell(before, q_pad, y_pad, self.keys.resparsify, self.params)
            if not bool(overflow):
                break
            # the new model wants more than a capacity holds: grow, and tell again from the padded state
            cfg, prog, before = self._grown(cfg, tuple(int(w) for w in wanted), before)
        self.state, self.cfg, self.prog = state, cfg, prog

    def _grown(self, cfg: FiniteConfig, wanted, state):
        """(config, programs, state padded into them) at the domain's grown capacities (1.5x the need)."""
        A, d = self.candidates.shape
        larger, _ = self.spec.next_capacities(wanted, self._caps(cfg), Setting(A, d, A, cfg.kernel["name"]))
        if larger is None:
            raise AssertionError(f"grow called without an overflow: wanted {wanted}, capacities {cfg}")
        cfg = cfg._replace(**larger)
        prog = self._programs(cfg)
        return cfg, prog, padded_into(state, prog.init(self.keys.init, self.arms, self.params))

    def best(self, history: list):
        """(index, point, mean of its told rewards) of the candidate with the best mean."""
        idx = np.concatenate([k for k, _ in history])
        ys = np.concatenate([y for _, y in history])
        A = self.candidates.shape[0]
        counts = np.bincount(idx, minlength=A)
        means = np.where(counts > 0, np.bincount(idx, weights=ys, minlength=A) / np.maximum(counts, 1), -np.inf)
        i = int(np.argmax(means))
        return i, self.candidates[i].copy(), float(means[i])

    def template(self):
        return jax.eval_shape(self.prog.init, self.keys.init, self.arms, self.params)

    def space_arrays(self) -> dict:
        return {"candidates": self.candidates}


# ---------------------------------------------------------------------------------------------- boxes

class BoxConfig(NamedTuple):
    """Everything that defines a box session besides its data (JSON-serialisable).

    Attributes:
        algorithm: the algorithm's name (the registry's key, or the spec's name)
        hyper: resolved hyperparameters
        seed: the session's seed (its keys are ``jax.random.key(seed)``'s)
        horizon: the planned number of evaluations T
        dtype: "float64" | "float32"
        cap: current capacity of the sample buffer D (None: the algorithm has none)
    """

    algorithm: str
    hyper: dict
    seed: int
    horizon: int
    dtype: str
    cap: int | None


@functools.lru_cache(maxsize=32)
def box_programs(spec: AlgorithmSpec, static, T: int, d: int, dtype: str) -> Programs:
    """Jitted init / ask / tell for one static configuration of a box algorithm (cached)."""
    alg = spec.build(static)
    dt = _jdtype(dtype)

    def init(key, params):
        return alg.init(key, BoxSet(jnp.zeros((d,), dt), jnp.ones((d,), dt)), params)

    def record(acc, t, x, info):  # the query of step t, at its position in the run's trace
        xs, n = acc
        return xs.at[t].set(x), n + 1

    def ask(state, key, params):
        empty = (jnp.zeros((T, d), dt), jnp.int32(0))
        return select_batch(alg, key, params, state, empty, record, lambda st, acc: st.t < T)

    def tell(state, xs, rewards, valid, key, params):
        state, _ = finish_batch(alg, key, params, state, Feedback(xs, rewards, valid))
        return state

    return Programs(jax.jit(init), jax.jit(ask), jax.jit(tell))


class BoxSession:
    """The device side of ask/tell on a [`sketchbo.Box`][sketchbo.spaces.Box]: queries are positions (steps) of the run,
    and the points are chosen in the unit cube and mapped into the box."""

    kind = "box"

    def __init__(self, space, cfg: BoxConfig, spec: AlgorithmSpec):
        self.space, self.cfg, self.spec = space, cfg, spec
        self.keys = seed_keys(cfg.seed)
        jdt = _jdtype(cfg.dtype)
        self.params = jax.tree.map(jnp.asarray, spec.make_params(cfg.hyper, jdt, xi=None))
        self.prog = self._programs(cfg.cap)
        self.state = self.prog.init(self.keys.init, self.params)
        self.x = np.zeros((cfg.horizon, space.d))  # (T, d) unit-cube queries told so far, by step
        self.reward = np.zeros((cfg.horizon,))  # (T,) their rewards

    def _programs(self, cap: int | None) -> Programs:
        caps = {} if cap is None else {"cap": cap}
        static = self.spec.static(self.cfg.hyper, Setting(self.cfg.horizon, self.space.d, None, None), caps)
        return box_programs(self.spec, static, self.cfg.horizon, self.space.d, self.cfg.dtype)

    @property
    def capacities(self) -> dict:
        return {} if self.cfg.cap is None else {"cap": self.cfg.cap}

    def select(self, told: list, t0: int):
        """(keys = steps (n,), points (n, d) in the box, state after selecting them, their unit-cube points)."""
        del told
        if t0 >= self.cfg.horizon:
            raise ValueError(f"the horizon of {self.cfg.horizon} evaluations is reached; a box optimiser asks at most "
                             "horizon points (create it with a larger horizon)")
        rows = self.spec.hooks.buffer_rows
        while rows is not None and int(rows(self.state)) + int(needs_room(self.state, self.cfg.hyper["n0"])) > \
                self.cfg.cap:  # the run's growth rule, at the same step
            setting = Setting(self.cfg.horizon, self.space.d, None, None)
            cap = self.spec.next_capacities(None, self.capacities, setting)[0]["cap"]
            self.cfg, self.prog = self.cfg._replace(cap=cap), self._programs(cap)
            template = self.prog.init(self.keys.init, self.params)
            self.state = padded_into(self.state, jax.tree.map(jnp.zeros_like, template))
        state, (xs, n) = self.prog.ask(self.state, self.keys.select, self.params)
        steps = t0 + np.arange(int(n))
        u = np.asarray(xs, np.float64)[steps]
        return steps.astype(np.int64), self.space.from_unit(u), state, u

    def tell(self, before, keys: np.ndarray, rewards: np.ndarray, t0: int, extra=None) -> None:
        """Feed the batch (asked order; ``extra``: its unit-cube points) back from the pending state ``before``."""
        del t0
        jdt = _jdtype(self.cfg.dtype)
        x, reward = self.x.copy(), self.reward.copy()
        x[keys], reward[keys] = extra, rewards
        valid = np.zeros(self.cfg.horizon, bool)
        valid[keys] = True
        self.state = self.prog.tell(before, jnp.asarray(x, jdt), jnp.asarray(reward, jdt), jnp.asarray(valid),
                                    self.keys.resparsify, self.params)
        self.x, self.reward = x, reward

    def best(self, history: list):
        """(None, point in the box, reward) of the best told evaluation."""
        steps = np.concatenate([k for k, _ in history])
        ys = np.concatenate([y for _, y in history])
        i = int(np.argmax(ys))
        return None, self.space.from_unit(self.x[steps[i]]), float(ys[i])

    def template(self):
        return jax.eval_shape(self.prog.init, self.keys.init, self.params)

    def space_arrays(self) -> dict:
        return {"lower": self.space.lower, "upper": self.space.upper, "x": self.x, "reward": self.reward}


__all__ = ["BoxConfig", "BoxSession", "FiniteConfig", "FiniteSession", "Programs", "box_programs", "finite_programs"]
