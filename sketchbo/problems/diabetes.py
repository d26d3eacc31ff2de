"""The GSSBO "NAS" task (Wei et al. 2025, §6.2): tune a one-hidden-layer MLP on the Pima Indians diabetes
data; the objective is its test classification error (docs/protocols.md#diabetes-task).

* Data: ``pima-indians-diabetes.csv`` (768 rows, 8 features, binary target), found like the other data
  files (``datasets.find_data_file``: data_dir, $SKETCHBO_DATA_DIR, the cache) and checked
  against its published sha256. Inputs standardised with the training statistics; one fixed stratified
  70/30 split (numpy generator seeded with ``split_seed``).
* Search space u in [0, 1]^4 (§6.2): batch size 32 + 96 u0 rounded to an integer in [32, 128]; learning rate
  10^(-6 + 6 u1) (log scale over [1e-6, 1]); exponential decay rate 1e-6 + (1 - 1e-6) u2, the learning rate
  of epoch e being lr exp(-decay e); hidden width 1 + 7 u3 rounded to an integer in [1, 8].
* Training: 50 epochs of minibatch Adam on the logistic loss from N(0, 1/fan_in) weights, reshuffled every
  epoch. Shapes are static: the hidden layer has 8 units of which the first ``width`` are used, a minibatch
  has 128 slots of which the first ``batch`` are used, and an epoch has ceil(n_train / 32) steps of which
  those starting inside the data are used (masks, not dynamic shapes), so the whole objective is one
  jittable function of u.
* Objective f(u) = mean test error over 5 training seeds (vmapped), in [0, 1]; maximise -f. The optimum
  is unknown: f_min = 0 (a lower bound), so the regret is the test error itself.

The function is deterministic for a fixed ``seed`` (the training keys derive from it).
"""
from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import optax

from sketchbo.problems.continuous import ContinuousProblem
from sketchbo.problems.datasets import PIMA_FILE, find_data_file
from sketchbo.problems.synthetic import check_int

HIDDEN_MAX = 8
BATCH_MIN, BATCH_MAX = 32, 128
EPOCHS = 50
TRAIN_SEEDS = 5
TRAIN_FRACTION = 0.7


def load_pima(data_dir=None, download: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Features (768, 8) and the binary target (768,) of the verified CSV (header row skipped)."""
    path = find_data_file(PIMA_FILE, data_dir, download)
    rows = np.loadtxt(path, delimiter=",", skiprows=1, dtype=np.float64, ndmin=2)
    if rows.shape[1] != 9:
        raise ValueError(f"data file {str(path)!r} parsed to shape {rows.shape}; expected (n, 9)")
    return rows[:, :8], rows[:, 8]


def stratified_split(y: np.ndarray, fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Train / test row indices with ``fraction`` of every class in the training part."""
    rng = np.random.default_rng(seed)
    train = []
    for c in np.unique(y):
        rows = rng.permutation(np.nonzero(y == c)[0])
        train.extend(rows[: int(round(fraction * rows.size))])
    train = np.sort(np.asarray(train))
    return train, np.setdiff1d(np.arange(y.size), train)


def decode(u):
    """u (4,) in [0, 1] -> (batch size, learning rate, decay rate, hidden width) (§6.2;
    docs/protocols.md#diabetes-task)."""
    batch = jnp.round(BATCH_MIN + (BATCH_MAX - BATCH_MIN) * u[0]).astype(jnp.int32)
    lr = 10.0 ** (-6.0 + 6.0 * u[1])
    decay = 1e-6 + (1.0 - 1e-6) * u[2]
    width = jnp.round(1.0 + (HIDDEN_MAX - 1) * u[3]).astype(jnp.int32)
    return batch, lr, decay, width


def _init_mlp(key, d_in: int, dtype):
    k1, k2 = jax.random.split(key)
    return {"W1": jax.random.normal(k1, (d_in, HIDDEN_MAX), dtype) / math.sqrt(d_in),
            "b1": jnp.zeros((HIDDEN_MAX,), dtype),
            "W2": jax.random.normal(k2, (HIDDEN_MAX,), dtype) / math.sqrt(HIDDEN_MAX),
            "b2": jnp.zeros((), dtype)}


def _logits(params, X, unit_mask):
    h = jax.nn.relu(X @ params["W1"] + params["b1"]) * unit_mask  # only the first ``width`` units
    return h @ params["W2"] + params["b2"]


def _loss(params, X, y, row_mask, unit_mask):
    z = _logits(params, X, unit_mask)
    per_row = optax.sigmoid_binary_cross_entropy(z, y)
    return jnp.sum(per_row * row_mask) / jnp.maximum(jnp.sum(row_mask), 1.0)


def train_error(key, u, Xtr, ytr, Xte, yte):
    """Test error of one training run with the hyperparameters encoded by u."""
    batch, lr, decay, width = decode(u)
    n = Xtr.shape[0]
    steps = -(-n // BATCH_MIN)  # static: the most steps an epoch can have
    unit_mask = (jnp.arange(HIDDEN_MAX) < width).astype(Xtr.dtype)
    k_init, k_perm = jax.random.split(key)
    params = _init_mlp(k_init, Xtr.shape[1], Xtr.dtype)
    adam = optax.scale_by_adam()
    slots = jnp.arange(BATCH_MAX)

    def step(carry, s, perm, rate):
        params, opt = carry
        pos = s * batch + slots
        rows = (slots < batch) & (pos < n)
        idx = perm[jnp.minimum(pos, n - 1)]
        g = jax.grad(_loss)(params, Xtr[idx], ytr[idx], rows.astype(Xtr.dtype), unit_mask)
        upd, opt_new = adam.update(g, opt)
        new = optax.apply_updates(params, jax.tree.map(lambda v: -rate * v, upd))
        live = s * batch < n  # a step that starts inside the data
        keep = lambda a, b: jnp.where(live, a, b)  # noqa: E731
        return (jax.tree.map(keep, new, params), jax.tree.map(keep, opt_new, opt)), None

    def epoch(carry, e):
        perm = jax.random.permutation(jax.random.fold_in(k_perm, e), n)
        rate = lr * jnp.exp(-decay * e)  # exponential learning-rate decay per epoch
        carry, _ = jax.lax.scan(lambda c, s: step(c, s, perm, rate), carry, jnp.arange(steps))
        return carry, None

    (params, _), _ = jax.lax.scan(epoch, (params, adam.init(params)), jnp.arange(EPOCHS))
    pred = _logits(params, Xte, unit_mask) > 0
    wrong = jnp.where(jnp.isfinite(_logits(params, Xte, unit_mask)), pred != (yte > 0.5), True)
    return jnp.mean(wrong.astype(Xte.dtype))


def diabetes(seed=0, split_seed=0, data_dir=None, download=True) -> ContinuousProblem:
    """The diabetes MLP-tuning problem on [0, 1]^4 (see the module docstring)."""
    seed = check_int("seed", seed, 0)
    split_seed = check_int("split_seed", split_seed, 0)
    X, y = load_pima(data_dir, download)
    tr, te = stratified_split(y, TRAIN_FRACTION, split_seed)
    mu, sd = X[tr].mean(axis=0), X[tr].std(axis=0)
    sd = np.where(sd > 0, sd, 1.0)
    Xtr, Xte = (X[tr] - mu) / sd, (X[te] - mu) / sd
    ytr, yte = y[tr], y[te]

    def fn(u):
        keys = jax.random.split(jax.random.key(seed), TRAIN_SEEDS)
        dt = u.dtype
        errors = jax.vmap(lambda k: train_error(k, u, jnp.asarray(Xtr, dt), jnp.asarray(ytr, dt),
                                                jnp.asarray(Xte, dt), jnp.asarray(yte, dt)))(keys)
        return jnp.mean(errors)

    return ContinuousProblem("diabetes", 4, np.zeros(4), np.ones(4), fn, 0.0, None, 0.0, None, uniform_samples=64)


__all__ = ["diabetes", "decode", "load_pima", "stratified_split", "train_error"]
