"""Search spaces: what an optimiser searches, apart from any objective.

Two kinds, one per domain of the engine:

* a **finite candidate set**: an (A, d) array of points (``as_candidates``); queries are row indices;
* a **box** [`Box`][] ``[lower, upper]`` in R^d; the box algorithms work in the unit cube [0, 1]^d and a point u maps to
  ``lower + u (upper - lower)`` ([`Box.from_unit`][]).

A benchmark (``sketchbo.problems``) is a space with an objective and, where known, its optimum; a user's
problem is a space and a callable (``sketchbo.Optimizer``), and no optimum is ever required.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from numpy.typing import ArrayLike


def _vector(name: str, value) -> np.ndarray:
    try:
        arr = np.array(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name}={value!r} is invalid; it must be a sequence of numbers") from None
    arr = np.atleast_1d(arr)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} has shape {arr.shape}; it must be a non-empty 1-D sequence of numbers")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name}={arr.tolist()} contains NaN or inf; the box must be bounded")
    return arr


class Box:
    """The box ``{x : lower <= x <= upper}`` in R^d.

    Args:
        lower: (d,) lower corner (a scalar broadcasts to ``upper``'s length).
        upper: (d,) upper corner, every entry > the lower one.

    Raises:
        ValueError: naming ``lower`` or ``upper`` when they are not finite numbers of one length with
            ``lower < upper`` in every coordinate.

    Examples:
        ```python
        import sketchbo as sb

        box = sb.Box(lower=[0.0, -1.0], upper=[1.0, 1.0])
        box.d                          # 2
        box.from_unit([0.5, 0.5])      # array([0.5, 0. ])
        box.to_unit([1.0, 1.0])        # array([1., 1.])
        opt = sb.Optimizer(box, "gssbo", horizon=30)   # a box is an optimiser's search space
        ```
    """

    __slots__ = ("lower", "upper")

    def __init__(self, lower: ArrayLike, upper: ArrayLike):
        lo, hi = _vector("lower", lower), _vector("upper", upper)
        if lo.size == 1 and hi.size > 1:
            lo = np.full_like(hi, lo[0])
        if hi.size == 1 and lo.size > 1:
            hi = np.full_like(lo, hi[0])
        if lo.shape != hi.shape:
            raise ValueError(f"lower has {lo.size} coordinates and upper {hi.size}; they must have the same length")
        bad = np.flatnonzero(~(lo < hi))
        if bad.size:
            k = int(bad[0])
            raise ValueError(f"lower[{k}]={float(lo[k])!r} is not below upper[{k}]={float(hi[k])!r}; every lower "
                             "bound must be below its upper bound")
        lo.setflags(write=False)
        hi.setflags(write=False)
        self.lower, self.upper = lo, hi

    @property
    def d(self) -> int:
        """The dimension."""
        return int(self.lower.size)

    def from_unit(self, u: ArrayLike) -> np.ndarray:
        """Points of the unit cube mapped into the box.

        Args:
            u: (..., d) points of [0, 1]^d.

        Returns:
            (..., d) float64 points ``lower + u (upper - lower)``.
        """
        return self.lower + np.asarray(u, np.float64) * (self.upper - self.lower)

    def to_unit(self, x: ArrayLike) -> np.ndarray:
        """Points of the box mapped into the unit cube (the inverse of [`from_unit`][]).

        Args:
            x: (..., d) points of the box.

        Returns:
            (..., d) float64 points of [0, 1]^d.
        """
        return (np.asarray(x, np.float64) - self.lower) / (self.upper - self.lower)

    def __eq__(self, other) -> bool:
        return (isinstance(other, Box) and np.array_equal(self.lower, other.lower)
                and np.array_equal(self.upper, other.upper))

    def __hash__(self) -> int:
        return hash((self.lower.tobytes(), self.upper.tobytes()))

    def __repr__(self) -> str:
        return f"Box(lower={self.lower.tolist()}, upper={self.upper.tolist()})"


def as_candidates(candidates: ArrayLike, name: str = "candidates") -> np.ndarray:
    """A finite candidate set as an (A, d) float64 array.

    Args:
        candidates: array-like of A points in d dimensions.
        name: the argument's name in error messages.

    Returns:
        (A, d) float64 copy.

    Raises:
        ValueError: naming ``name`` when it is not a finite numeric (A, d) array with A, d >= 1.

    Examples:
        ```python
        from sketchbo.spaces import as_candidates

        as_candidates([[0, 1], [2, 3]]).dtype       # float64, shape (2, 2)
        as_candidates([[0.0], [0.5], [1.0]]).shape  # (3, 1): one-dimensional points are a column
        ```
    """
    try:
        arr = np.array(candidates, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a numeric (A, d) array of points") from None
    if arr.ndim == 1:
        raise ValueError(f"{name} has shape {arr.shape}; expected (A, d) "
                         f"(for one-dimensional points use {name}.reshape(-1, 1))")
    if arr.ndim != 2 or arr.shape[0] < 1 or arr.shape[1] < 1:
        raise ValueError(f"{name} has shape {arr.shape}; expected (A, d) with A >= 1, d >= 1")
    if not np.all(np.isfinite(arr)):
        bad = int(np.argwhere(~np.isfinite(arr))[0, 0])
        raise ValueError(f"{name} contains NaN or inf (first at row {bad}); points must be finite")
    return arr


__all__ = ["Box", "as_candidates"]
