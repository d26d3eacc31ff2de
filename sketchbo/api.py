r"""Ask/tell optimisation of any black box, over a finite candidate set or a box. Rewards are **maximised**.

Every algorithm of the registry (``sketchbo.ALGORITHMS``) runs here: on an (A, d) array of candidates the finite-arm
ones — BKB (Calandriello et al., COLT 2019), Batch-BKB (Calandriello et al., ICML 2020), exact GP-UCB, GP-BUCB,
eps-greedy, S-BPE — and on a [`sketchbo.Box`][sketchbo.spaces.Box] the box ones — GSSBO (Wei et al. 2025) and its
baselines. The loop: ``ask`` a batch, evaluate it, ``tell`` its rewards; ``best`` at the end.

``ask`` runs the algorithm's ``select`` until its batch rule closes the batch (BBKB: $1 + \sum_s \tilde\sigma^2_{fb}(x_s) > \tilde C$,
Alg. 1, L5; sequential algorithms: one point) in one compiled loop; until ``tell`` it is idempotent. ``tell``
feeds the batch back and refreshes the model (BBKB Alg. 1, L9–16). Both are the engine's halves
(``engine.asktell``), so told a run's rewards, an optimiser asks exactly what ``sketchbo.run`` queries, and
a saved and restored optimiser asks exactly (bit for bit in float64) what an uninterrupted one asks. The
objective never enters JAX: the optimiser calls nothing, it only proposes points.

Keys: arm indices into the candidates, or on a box the positions (steps 0, 1, ...) of the pending points.
Capacities (dictionary, unique pulled arms, sample buffer) start and grow by the engine's rules.
"""
from __future__ import annotations

import json
import os
import zipfile
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from numpy.typing import ArrayLike

from sketchbo.algorithms import domain_names, get_spec
from sketchbo.spec import AlgorithmSpec, Setting
from sketchbo.engine import files
from sketchbo.engine.asktell import BoxConfig, BoxSession, FiniteConfig, FiniteSession
from sketchbo.engine.run import entry_settings
from sketchbo.engine.validate import check_float, check_int, invalid_value
from sketchbo.kernels import kernel_params, median_sigma2
from sketchbo.spaces import Box, as_candidates

FORMAT = "sketchbo.api.Optimizer/2"
"""The tag of the files [`Optimizer.save`][] writes (version 2: both spaces)."""


class Best(NamedTuple):
    """The best point told so far.

    Attributes:
        index: the point's row in the candidates; None on a box.
        point: `(d,)` the point, in the candidates' (or the box's) coordinates.
        mean: the mean of the rewards told for it (on a box: its reward).
    """

    index: int | None
    point: np.ndarray
    mean: float


class _Pending(NamedTuple):
    keys: np.ndarray  # (n,) int keys of the pending batch, in the order they were selected
    points: np.ndarray  # (n, d) its points
    state: object  # the algorithm state after selecting them
    extra: object  # what the session needs back at tell (box: the unit-cube points)


# ------------------------------------------------------------------------------------------ validation

def _kernel_spec(kernel: dict | None, arms: np.ndarray) -> dict:
    """The kernel as a JSON-serialisable dict; None gives the rbf kernel of [`median_sigma2`][]."""
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


def _algorithm(algorithm, space) -> AlgorithmSpec:
    """The spec of ``algorithm`` for the space's domain (the registry's default where None)."""
    on_box = isinstance(space, Box)
    if algorithm is None:
        algorithm = "gssbo" if on_box else "bbkb"
    spec = get_spec(algorithm)
    if on_box and spec.domain != "box":
        raise invalid_value("algorithm", spec.name, f"it runs on a finite candidate set: pass an (A, d) array of "
                            f"candidates, or on a Box choose one of {domain_names('box')}")
    if not on_box and spec.domain != "arms":
        raise invalid_value("algorithm", spec.name, f"it optimises over a box: pass a sketchbo.Box(lower, upper), "
                            f"or on a candidate set choose one of {domain_names('arms')}")
    return spec


def _session(space, algorithm, params, kernel, seed, horizon, dtype, noise_std):
    """The validated session (ValueError naming the argument; nothing compiled before every check passed)."""
    spec = _algorithm(algorithm, space)
    horizon, seed = check_int("horizon", horizon, 1), check_int("seed", seed, 0)
    if not isinstance(dtype, str) or dtype not in ("float64", "float32"):
        raise invalid_value("dtype", dtype, "choose 'float64' or 'float32'")
    if isinstance(space, Box):
        for name, value in (("kernel", kernel), ("noise_std", noise_std)):
            if value is not None:
                raise invalid_value(name, value, f"{spec.name!r} fits its own kernel and noise; leave {name} at None")
        hyper = spec.resolve(params, horizon)
        caps = spec.first_capacities(hyper, Setting(horizon, space.d, None, None))
        cfg = BoxConfig(spec.name, hyper, seed, horizon, dtype, caps.get("cap"))
        entry_settings()
        return BoxSession(space, cfg, spec)
    arms = as_candidates(space)
    hyper = spec.resolve(params, horizon)
    nstd = None if noise_std is None else check_float("noise_std", noise_std, lambda v: v >= 0,
                                                            "it must be a finite number >= 0, or None")
    kspec = _kernel_spec(kernel, arms)
    entry_settings()
    kparams = dict(kspec)
    name = kparams.pop("name", None)
    kernel_params(name, arms.shape[1], jnp.float64, **kparams)  # validates the name and the hyperparameters
    caps = spec.first_capacities(hyper, Setting(horizon, arms.shape[1], arms.shape[0], name))  # a run's first ones
    cfg = FiniteConfig(spec.name, hyper, kspec, seed, horizon, dtype, nstd, caps.get("m_max"), caps.get("u_max"))
    return FiniteSession(arms, cfg, spec)


def _checked_feedback(pending: _Pending | None, keys, rewards) -> tuple[np.ndarray, np.ndarray]:
    """(pending keys in asked order, rewards mapped to that order), or ValueError; mutates nothing."""
    if pending is None:
        raise ValueError("tell() without a pending batch: call ask() first and tell its keys")
    asked = pending.keys
    k = np.asarray(keys)
    if k.ndim != 1 or (k.size and k.dtype.kind not in "iu"):
        raise ValueError(f"keys must be a 1-D sequence of integers (the keys returned by ask()); got {keys!r}")
    try:
        y = np.asarray(rewards, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"rewards must be a 1-D sequence of numbers; got {rewards!r}") from None
    if y.ndim != 1:
        raise ValueError(f"rewards must be a 1-D sequence of numbers; got shape {y.shape}")
    if y.shape[0] != k.shape[0]:
        raise ValueError(f"length mismatch: {k.shape[0]} keys but {y.shape[0]} values in rewards")
    in_batch = set(asked.tolist())
    for pos, i in enumerate(k.tolist()):
        if i not in in_batch:
            raise ValueError(f"key {i} (position {pos}) is not in the pending batch {asked.tolist()}")
    if k.shape[0] != asked.shape[0] or not np.array_equal(np.sort(k), np.sort(asked)):
        raise ValueError(f"tell() takes the whole pending batch {asked.tolist()} (each key as often as asked, any "
                         f"order); got {k.tolist()}")
    bad = np.flatnonzero(~np.isfinite(y))
    if bad.size:
        j = int(bad[0])
        raise ValueError(f"rewards[{j}] = {y[j]} (for key {int(k[j])}) is not finite; rewards must be finite "
                         "numbers (NaN and inf are rejected)")
    y_asked = np.empty_like(y)
    y_asked[np.argsort(asked, kind="stable")] = y[np.argsort(k, kind="stable")]  # k-th repeat -> k-th
    return asked.copy(), y_asked


# ------------------------------------------------------------------------------------- the optimiser

class Optimizer:
    """Ask/tell optimiser (maximisation) of a black box over a finite candidate set or a box.

    Args:
        space: an (A, d) array-like of candidate points, or a [`sketchbo.Box`][sketchbo.spaces.Box].
        algorithm: an [`AlgorithmSpec`][] or a registered name (``sketchbo.ALGORITHMS``) of the space's domain; None:
            ``"bbkb"`` on candidates, ``"gssbo"`` on a box.
        horizon: the planned number of evaluations T (delta defaults to 1/T, buffers hold T evaluations).
            On candidates asking beyond it works the same way (the buffers wrap around); a box optimiser asks
            at most ``horizon`` points.
        seed: the keys are ``jax.random.key(seed)``'s, as in ``sketchbo.run``.
        params: the algorithm's hyperparameters (``spec.defaults`` names them).
        kernel: candidates only: e.g. ``{"name": "rbf", "sigma2": 0.5}``; default rbf with half the median squared
            distance between candidates ([`median_sigma2`][]).
        dtype: ``"float64"`` or ``"float32"``.
        noise_std: candidates only: xi in the confidence width; None uses sqrt(lam), as a run does.

    Raises:
        ValueError: naming the argument, before anything is compiled.

    Examples:
        ```python
        import numpy as np
        import sketchbo as sb

        candidates = np.random.default_rng(0).uniform(-1, 1, size=(300, 2))
        opt = sb.Optimizer(candidates, "bbkb", horizon=40, seed=0)
        while opt.n_told < 40:
            keys, X = opt.ask()                                 # arm indices (n,) and their points (n, 2)
            opt.tell(keys, -np.sum((X - 0.3) ** 2, axis=1))    # rewards are maximised
        index, point, mean = opt.best()                         # point is near (0.3, 0.3)
        ```
    """

    def __init__(self, space: ArrayLike | Box, algorithm: str | AlgorithmSpec | None = None, *, horizon: int = 1000,
                 seed: int = 0, params: dict | None = None, kernel: dict | None = None, dtype: str = "float64",
                 noise_std: float | None = None):
        self._s = _session(space, algorithm, params, kernel, seed, horizon, dtype, noise_std)
        self._history: list[tuple[np.ndarray, np.ndarray]] = []  # told batches (keys, rewards) in asked order
        self._pending: _Pending | None = None

    def ask(self) -> tuple[np.ndarray, np.ndarray]:
        """The next batch, n >= 1 points; idempotent until [`tell`][].

        Returns:
            ``(keys, points)``: keys `(n,)` int (arm indices; steps on a box) and points `(n, d)` float64.

        Examples:
            ```python
            import numpy as np
            import sketchbo as sb

            opt = sb.Optimizer(np.linspace(0, 1, 50)[:, None], "gp_ucb", horizon=10)
            keys, X = opt.ask()                    # gp_ucb is sequential: one key, X of shape (1, 1)
            assert (opt.ask()[0] == keys).all()    # the same batch until tell
            opt.tell(keys, np.sin(6 * X[:, 0]))    # each key with its reward, the keys in any order
            ```
        """
        if self._pending is None:
            self._pending = _Pending(*self._s.select([k for k, _ in self._history], self.n_told))
        return self._pending.keys.copy(), self._pending.points.copy()

    def tell(self, keys: ArrayLike, rewards: ArrayLike) -> None:
        """Feed back the rewards of the whole pending batch, in any order.

        Args:
            keys: the keys [`ask`][] returned (each as often as asked).
            rewards: (n,) finite rewards, in the order of ``keys``.

        Raises:
            ValueError: leaving the optimiser unchanged, when there is no pending batch, when the keys are not
                the pending batch, when the lengths differ or when a reward is NaN or infinite.

        """
        k, y = _checked_feedback(self._pending, keys, rewards)
        self._s.tell(self._pending.state, k, y, self.n_told, self._pending.extra)
        self._history.append((k, y))
        self._pending = None

    def best(self) -> Best:
        """The best point told so far.

        Returns:
            The candidate with the best mean told reward; on a box the point with the best reward (``index`` None).

        Raises:
            ValueError: before anything was told.
        """
        if not self._history:
            raise ValueError("best() needs at least one told evaluation; call ask() and tell() first")
        return Best(*self._s.best(self._history))

    @property
    def n_told(self) -> int:
        """Number of evaluations told so far."""
        return sum(len(k) for k, _ in self._history)

    @property
    def history(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """The told batches ``[(keys (n,), rewards (n,)), ...]``, each in the order ``ask`` returned it."""
        return [(k.copy(), y.copy()) for k, y in self._history]

    @property
    def state(self):
        """The algorithm state after the last ``tell`` (a NamedTuple of arrays; read-only)."""
        return self._s.state

    @property
    def capacities(self) -> dict:
        """Current static capacities (grown as needed): ``m_max``/``u_max`` on candidates, ``cap`` on a box."""
        return self._s.capacities

    # -------------------------------------------------------------------------------- files

    def save(self, path: str | os.PathLike) -> None:
        """Write the optimiser to ``path`` (an ``.npz``, written atomically: a temporary file, then renamed).

        Args:
            path: a file path whose directory exists; an existing regular file there is replaced.

        Raises:
            ValueError: naming ``path`` when its directory does not exist, when something other than a regular
                file stands there, or when it cannot be written.
        """
        shown = os.fspath(path)
        parent = os.path.dirname(os.path.abspath(shown))
        if not os.path.isdir(parent):
            raise ValueError(f"Optimizer.save({shown!r}): the directory {parent!r} does not exist")
        leaves = jax.tree.leaves(self._s.state)
        meta = {"format": FORMAT, "space": self._s.kind, "config": self._s.cfg._asdict(), "n_leaves": len(leaves),
                "has_pending": self._pending is not None}
        arrays = {f"state_{k:04d}": np.asarray(leaf) for k, leaf in enumerate(leaves)}
        arrays.update(self._s.space_arrays(), meta=np.array(json.dumps(meta)),
                      pending=self._pending.keys if self._pending is not None else np.zeros(0, np.int64),
                      history_len=np.array([len(k) for k, _ in self._history], np.int64),
                      history_keys=np.concatenate([np.zeros(0, np.int64), *[k for k, _ in self._history]]),
                      history_rewards=np.concatenate([np.zeros(0), *[y for _, y in self._history]]))
        try:
            files.atomic_savez(path, **arrays)  # temp file beside it, fsync, rename
        except ValueError as err:
            raise ValueError(f"Optimizer.save({shown!r}): {err}") from None
        except OSError as err:
            raise ValueError(f"Optimizer.save({shown!r}): cannot write there ({err.strerror or err})") from None

    @classmethod
    def load(cls, path: str | os.PathLike, algorithm: AlgorithmSpec | None = None) -> Optimizer:
        """Restore an optimiser written by [`save`][]; it asks what the saved one would have asked.

        Args:
            path: a file written by [`save`][].
            algorithm: the spec of an algorithm that is not registered (the saved optimiser's own, of the same
                name); None: the registered algorithm of the saved name.

        Returns:
            The restored [`Optimizer`][].

        Raises:
            ValueError: naming ``path`` when it is not a readable file written by [`save`][].

        Examples:
            ```python
            import tempfile
            import numpy as np
            import sketchbo as sb
            opt = sb.Optimizer(np.linspace(0, 1, 50)[:, None], "gp_ucb", horizon=10, seed=0)
            for _ in range(5):
                keys, X = opt.ask()
                opt.tell(keys, np.sin(6 * X[:, 0]))
            opt.save(path := tempfile.mkdtemp() + "/optimizer.npz")
            restored = sb.Optimizer.load(path)     # asks what opt asks next
            assert restored.n_told == 5 and (restored.ask()[0] == opt.ask()[0]).all()
            ```
        """
        shown = os.fspath(path)
        try:
            with np.load(shown, allow_pickle=False) as data:
                arrays = {k: data[k] for k in data.files}
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as err:
            raise ValueError(f"Optimizer.load({shown!r}): not a readable file written by Optimizer.save "
                             f"({type(err).__name__}: {err})") from None
        try:
            meta = json.loads(str(arrays["meta"]))
            if meta.get("format") != FORMAT:
                raise KeyError("format")
            opt = cls.__new__(cls)
            opt._s = _restored_session(meta, arrays, algorithm)
        except (KeyError, TypeError, ValueError) as err:
            raise ValueError(f"{shown} is not a file written by Optimizer.save (format {FORMAT!r} expected; "
                             f"{type(err).__name__}: {err})") from None
        ends = np.cumsum(arrays["history_len"])
        opt._history = [(arrays["history_keys"][e - n:e], arrays["history_rewards"][e - n:e])
                        for n, e in zip(arrays["history_len"], ends)]
        opt._pending = None
        if meta["has_pending"]:
            keys, _ = opt.ask()
            if not np.array_equal(keys, arrays["pending"]):
                raise ValueError(f"{shown}: the restored state does not reproduce the saved pending batch "
                                 f"{arrays['pending'].tolist()} (got {keys.tolist()})")
        return opt

    def __repr__(self) -> str:
        cfg = self._s.cfg
        space = (f"A={self._s.candidates.shape[0]}, d={self._s.candidates.shape[1]}" if self._s.kind == "finite"
                 else f"{self._s.space!r}")
        return (f"Optimizer({cfg.algorithm!r}, {space}, n_told={self.n_told}, "
                f"pending={0 if self._pending is None else len(self._pending.keys)}, seed={cfg.seed})")


def _restored_session(meta: dict, arrays: dict, algorithm: AlgorithmSpec | None = None):
    """The session of a saved optimiser: its config, its space and its state leaves (shapes checked)."""
    entry_settings()
    name = meta["config"]["algorithm"]
    spec = get_spec(name if algorithm is None else algorithm, "box" if meta["space"] == "box" else "arms")
    if spec.name != name:
        raise ValueError(f"the file was saved by algorithm {name!r}, not {spec.name!r}")
    if meta["space"] == "box":
        s = BoxSession(Box(arrays["lower"], arrays["upper"]), BoxConfig(**meta["config"]), spec)
        s.x, s.reward = arrays["x"].copy(), arrays["reward"].copy()
    else:
        s = FiniteSession(arrays["candidates"], FiniteConfig(**meta["config"]), spec)
    shapes, treedef = jax.tree.flatten(s.template())
    leaves = [arrays[f"state_{k:04d}"] for k in range(int(meta["n_leaves"]))]
    if len(leaves) != len(shapes):
        raise ValueError(f"{len(leaves)} state arrays saved but the algorithm has {len(shapes)}")
    for k, (leaf, ref) in enumerate(zip(leaves, shapes)):
        if leaf.shape != ref.shape or leaf.dtype != ref.dtype:
            raise ValueError(f"state array {k} has {leaf.dtype}{leaf.shape}; expected {ref.dtype}{ref.shape}")
    s.state = jax.tree.unflatten(treedef, [jnp.asarray(leaf) for leaf in leaves])
    return s


__all__ = ["Best", "FORMAT", "Optimizer", "median_sigma2"]
