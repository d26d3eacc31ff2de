r"""Dense float64 references of the exact and the Nyström (DTC) posterior variances at a batch end of a BKB / BBKB
run (BKB, Calandriello et al., COLT 2019; Batch-BKB, Calandriello et al., ICML 2020), for
[`sketchbo.approximation`][].

* exact: $\sigma_t^2(x) = (k(x, x) - k_U(x)^\top C^{1/2} (C^{1/2} K_U C^{1/2} + \lambda I)^{-1} C^{1/2} k_U(x))/\lambda$
  over the U unique pulled arms with their counts C, which equals the dense formula with every pull a row of
  $K_t$ (BBKB Eq. 2 with $S = X_t$);
* sketched: BKB Eq. 4, $\tilde\sigma_t^2(x) = (k(x, x) - z(x)^\top z(x))/\lambda + z(x)^\top V_t^{-1} z(x)$ with the
  Nyström embedding $z(x) = K_S^{+1/2} k_S(x)$ and $V_t = \sum_i n_i z(x_i) z(x_i)^\top + \lambda I$ (BBKB Eq. 2 prints
  the middle term without its $\lambda$; $Z^\top Z V^{-1} = I - \lambda V^{-1}$ gives it);
* inside a batch, the variance of each pull at its selection, given the batch's earlier pulls: for the exact GP by
  sequential conditioning on the start-of-batch posterior (BBKB Lemma 7), for the sketch by the rank-one updates of
  $V$ that BBKB's Alg. 1, L7 makes with the dictionary fixed ([`InBatch`][]).

Units: the papers' $\lambda$-scaled variances ([`sketchbo.certificates`][]). Kernel matrices through
[`sketchbo.kernels`][] in float64 (``information._gram``); everything else numpy, on the host.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from sketchbo.gp.information import _arms, _cholesky_shifted, _gram, _kernel, _positive, _pull_variances


class BatchEnd(NamedTuple):
    """The state after a batch's feedback and resparsification, from which the next batch is selected.

    Attributes:
        batch: the batch (0-based) whose feedback the state includes.
        t: the pulls told so far.
        dict_idx: `(m,)` int the arms of the dictionary S_fb.
        counts: `(A,)` float the pulls of every arm so far.
        var_fb: `(A,)` the start-of-batch variances s~^2_fb (lam-scaled) the algorithm selects the next batch with.
        next_pulls: `(n,)` int the next batch's pulls, in selection order.
    """

    batch: int
    t: int
    dict_idx: np.ndarray
    counts: np.ndarray
    var_fb: np.ndarray
    next_pulls: np.ndarray


class InBatch(NamedTuple):
    """The next batch's pulls x_j, j >= 2, each at its selection (lam-scaled variances).

    Attributes:
        exact: `(n - 1,)` sigma_t^2(x_j) of the exact GP given X_fb and the batch's earlier pulls (BBKB Lemma 7).
        sketch: `(n - 1,)` sigma~_t^2(x_j, S_fb): the DTC variance rank-one updated with the earlier pulls (Alg. 1, L7).
        exact_fb: `(n - 1,)` sigma_fb^2(x_j) at the batch start.
        sketch_fb: `(n - 1,)` sigma~_fb^2(x_j) at the batch start (recomputed, BKB Eq. 4).
        rule: `(n - 1,)` 1 + sum_{s < j} s~^2_fb(x_s) with the algorithm's variances (Alg. 1, L5's left side).
    """

    exact: np.ndarray
    sketch: np.ndarray
    exact_fb: np.ndarray
    sketch_fb: np.ndarray
    rule: np.ndarray


class Variances(NamedTuple):
    """The variances of one batch end (lam-scaled), on the arms evaluated there.

    Attributes:
        t: the pulls told so far.
        arms: `(n,)` int the arms evaluated.
        exact: `(n,)` the exact GP posterior variance sigma_t^2.
        sketch: `(n,)` the algorithm's start-of-batch variance s~^2_fb (its state's ``var_fb``).
        sketch_numpy: `(n,)` the same DTC variance recomputed here from the dictionary (BKB Eq. 4).
        in_batch: the next batch's in-batch variances ([`InBatch`][]), None when it has a single pull.
    """

    t: int
    arms: np.ndarray
    exact: np.ndarray
    sketch: np.ndarray
    sketch_numpy: np.ndarray
    in_batch: InBatch | None


def _exact_factor(K_UU: np.ndarray, counts: np.ndarray, K_UE: np.ndarray, lam: float) -> np.ndarray:
    """R = L^{-1} C^{1/2} K_UE with L L^T = C^{1/2} K_UU C^{1/2} + lam I: the exact GP posterior covariance of the
    evaluated arms given the pulls (counts C) is K_EE - R^T R (GP units)."""
    r = np.sqrt(counts)
    L = _cholesky_shifted(r[:, None] * K_UU * r[None, :], lam)
    return np.linalg.solve(L, r[:, None] * K_UE)


def _embedding(K_SS: np.ndarray) -> np.ndarray:
    """W (m, r) with W W^T = K_S^+, so z(x) = W^T k_S(x) is the Nyström embedding (BKB Sec. 3.1); eigenvalues below
    max_eig m eps are dropped, as the algorithm does (``linalg.psd_inv_sqrt``)."""
    if K_SS.shape[0] == 0:
        return np.zeros((0, 0))
    e, V = np.linalg.eigh(K_SS)
    keep = e > max(float(e.max()), 0.0) * e.size * np.finfo(np.float64).eps
    return V[:, keep] / np.sqrt(e[keep])


def _dtc(K: np.ndarray, i_dict: np.ndarray, i_pulled: np.ndarray, counts: np.ndarray, lam: float):
    """(Z (n, r) the embedded evaluated arms, V^{-1} (r, r) with V = Z_U^T C Z_U + lam I, residual (n,)
    (k(x, x) - z^T z) / lam): BKB Eq. 4's sigma~^2(x) = residual + z^T V^{-1} z."""
    Z = K[:, i_dict] @ _embedding(K[np.ix_(i_dict, i_dict)])
    Zu = Z[i_pulled]
    Vinv = np.linalg.inv((Zu * counts[:, None]).T @ Zu + lam * np.eye(Z.shape[1]))
    residual = np.maximum(np.diagonal(K) - np.sum(Z * Z, axis=1), 0.0) / lam
    return Z, Vinv, residual


def _in_batch(K, R, Z, Vinv, residual, i_batch, pos, var_fb_pulls, lam) -> InBatch:
    """[`InBatch`][] by sequential conditioning on the batch's arms (``information._pull_variances``): exact, on the
    posterior covariance given X_fb; sketched, on lam z^T V_fb^{-1} z' (rank-one updates of V, BBKB Alg. 1 L7)."""
    P = K[np.ix_(i_batch, i_batch)] - R[:, i_batch].T @ R[:, i_batch]
    Zb = Z[i_batch]
    M = Zb @ Vinv @ Zb.T
    exact = _pull_variances(P, pos, lam)
    sketch = residual[i_batch][pos] + _pull_variances(lam * M, pos, lam)
    sketch_fb = residual[i_batch][pos] + np.diagonal(M)[pos]
    rule = 1.0 + np.concatenate([[0.0], np.cumsum(var_fb_pulls)[:-1]])
    return InBatch(exact[1:], sketch[1:], (np.diagonal(P)[pos] / lam)[1:], sketch_fb[1:], rule[1:])


def variances(end: BatchEnd, arms: ArrayLike, kernel_name: str, kernel_params: dict, lam: float,
              eval_arms: ArrayLike) -> Variances:
    """The exact and sketched variances of one batch end, on ``eval_arms``, every pulled arm and the next batch's.

    Exact: sigma_t^2(x) = (k(x, x) - k_U(x)^T C^{1/2} (C^{1/2} K_U C^{1/2} + lam I)^{-1} C^{1/2} k_U(x)) / lam over
    the U unique pulled arms with counts C (= the dense formula with every pull a row, BBKB Eq. 2 with S = X_t).
    Sketched: the algorithm's ``var_fb``, and BKB Eq. 4 recomputed from the dictionary, which checks it and gives the
    in-batch variances of the next batch's pulls ([`InBatch`][]).

    Args:
        end: the [`BatchEnd`][].
        arms: (A, d) the problem's arms.
        kernel_name: the run's kernel name.
        kernel_params: its parameters (missing ones take the kernel's defaults).
        lam: the run's lambda > 0.
        eval_arms: arm indices to evaluate besides the pulled ones.

    Returns:
        [`Variances`][].

    Raises:
        ValueError: naming the argument that is invalid.
    """
    X, lam = _arms(arms), _positive("lam", lam)
    kern, params = _kernel(kernel_name, kernel_params, X.shape[1])
    pulled = np.flatnonzero(end.counts > 0)
    batch, pos = np.unique(end.next_pulls, return_inverse=True)
    E = np.unique(np.concatenate([np.asarray(eval_arms, np.int64).ravel(), pulled, batch, end.dict_idx]))
    if E.size and (E[0] < 0 or E[-1] >= X.shape[0]):
        raise ValueError(f"eval_arms holds an index outside [0, {X.shape[0]})")
    K = _gram(kern, params, X[E])
    i_pulled, counts = np.searchsorted(E, pulled), end.counts[pulled]
    R = _exact_factor(K[np.ix_(i_pulled, i_pulled)], counts, K[i_pulled], lam)
    exact = np.maximum(np.diagonal(K) - np.sum(R * R, axis=0), 0.0) / lam
    Z, Vinv, residual = _dtc(K, np.searchsorted(E, end.dict_idx), i_pulled, counts, lam)
    sketch_numpy = residual + np.einsum("ij,jk,ik->i", Z, Vinv, Z)
    in_batch = None
    if end.next_pulls.size >= 2:
        in_batch = _in_batch(K, R, Z, Vinv, residual, np.searchsorted(E, batch), pos.reshape(-1),
                             end.var_fb[end.next_pulls], lam)
    return Variances(int(end.t), E, exact, end.var_fb[E], sketch_numpy, in_batch)


def sketched_variances(arms: ArrayLike, kernel_name: str, kernel_params: dict, dict_idx: ArrayLike,
                       counts: ArrayLike, lam: float) -> np.ndarray:
    """BKB Eq. 4's DTC variance sigma~^2 of every arm for the dictionary ``dict_idx`` and the pulls ``counts``.

    Args:
        arms: (A, d) the arms.
        kernel_name: a key of [`sketchbo.kernels.KERNELS`][].
        kernel_params: the kernel's parameters (missing ones take the kernel's defaults).
        dict_idx: (m,) int the dictionary's arms (any arms; empty: the prior variance k(x, x) / lam).
        counts: (A,) the pulls of every arm (>= 0).
        lam: lambda > 0.

    Returns:
        (A,) float64 lam-scaled variances.

    Raises:
        ValueError: naming the argument that is invalid.
    """
    X, lam = _arms(arms), _positive("lam", lam)
    n = np.asarray(counts, np.float64)
    if n.shape != (X.shape[0],) or not np.all(np.isfinite(n)) or np.any(n < 0):
        raise ValueError(f"counts must be an ({X.shape[0]},) array of finite numbers >= 0")
    kern, params = _kernel(kernel_name, kernel_params, X.shape[1])
    K = _gram(kern, params, X)
    pulled = np.flatnonzero(n > 0)
    Z, Vinv, residual = _dtc(K, np.unique(np.asarray(dict_idx, np.int64)), pulled, n[pulled], lam)
    return residual + np.einsum("ij,jk,ik->i", Z, Vinv, Z)


__all__ = ["BatchEnd", "InBatch", "Variances", "sketched_variances", "variances"]
