"""Small, stable linear-algebra primitives on fixed-capacity (masked) matrices.

Used by the Nyström engine of BKB (Calandriello et al., COLT 2019) and BBKB (Calandriello et al., ICML 2020): the
pseudo-inverse square root K_S^{+1/2} of a dictionary kernel matrix and Sherman–Morrison rank-one updates of V^{-1} for
in-batch variance updates; and an SPD inverse built from matrix products (GSSBO's gradient vectors need the whole
inverse of an N x N kernel matrix every round); and a cyclic Jacobi eigensolver for the small symmetric matrices of the
dictionary on accelerators ([`jacobi_eigh`][]).
"""
from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

HIGHEST = jax.lax.Precision.HIGHEST


def mm(a, b):
    """``a @ b`` at the full precision of its dtype on every backend (docs/architecture.md#numerics): GPUs otherwise run
    float32 products in TF32 (a 10-bit mantissa), which doubled BBKB's regret on Cadata. Every GP product
    of the library goes through this (tests/test_precision.py checks the lowered programs)."""
    return jnp.matmul(a, b, precision=HIGHEST)



FEW_ROWS = 16
"""Up to this many rows, [`take_rows`][] reads them as slices."""


def take_rows(x, idx):
    """``x[idx]`` for a 1-D ``idx`` of in-range indices (0 <= i < len(x); out of range the two forms differ). Up to
    [`FEW_ROWS`][] static rows it stacks one dynamic slice per row: XLA:CPU's cost model counts the whole operand of
    a gather, so a gather of 8 rows of Cadata's (20640, 8) arm matrix was split over the thread pool, and the
    dispatch cost more than the read (a loop of that 8-row read on the 2-core CPU: 3.2 us an iteration as a gather,
    0.23 us as slices; BBKB's in-batch step 32.8 -> 27.9 us). Bit-identical to the gather (a copy)."""
    n = idx.shape[0]
    if n > FEW_ROWS:
        return x[idx]
    return jnp.stack([jax.lax.dynamic_index_in_dim(x, idx[i], 0, keepdims=False) for i in range(n)])


def masked_gram(K, mask):
    """Zero the rows and columns of masked-out slots: (m, m) -> (m, m)."""
    mf = mask.astype(K.dtype)
    return K * mf[:, None] * mf[None, :]


def round_robin(n: int):
    """The index pairs of a sweep in the parallel ordering of [`jacobi_eigh`][], for an even n: a list of n - 1 steps,
    each a list of n/2 disjoint pairs, together every pair (i, j) once. Documents and tests the order."""
    h = n // 2
    pos = np.arange(n)  # pos[slot] = matrix index held by the slot; slots k and h + k are a pair
    steps = []
    for _ in range(n - 1):
        steps.append([tuple(sorted((int(pos[k]), int(pos[h + k])))) for k in range(h)])
        pos = pos[_move(h)]
    return steps


def _move(h: int):
    """Slots after one round-robin move ("circle" method): slot 0 stays, the 2h - 1 others turn by one place.
    Top row t_0..t_{h-1} (slots 0..h-1), bottom row b_0..b_{h-1} (slots h..2h-1); new top = t_0, b_0, t_1, ...,
    t_{h-2}; new bottom = b_1, ..., b_{h-1}, t_{h-1}. Returns the old slot of each new slot."""
    if h == 1:
        return np.arange(2)
    return np.concatenate([[0, h], np.arange(1, h - 1), np.arange(h + 1, 2 * h), [h - 1]])


def _permute(X, h: int, axis: int):
    """X with its slots along ``axis`` in the order of ``_move`` (static slices, no gather)."""
    if h == 1:
        return X
    take = lambda a, b: jax.lax.slice_in_dim(X, a, b, axis=axis)  # noqa: E731
    return jnp.concatenate([take(0, 1), take(h, h + 1), take(1, h - 1), take(h + 1, 2 * h), take(h - 1, h)],
                           axis=axis)


def _jacobi_step(carry, _):
    """One parallel step: the n/2 rotations of the disjoint pairs (k, h + k) at once, then the round-robin move."""
    A, V = carry
    n = A.shape[0]
    h = n // 2
    d = jnp.diagonal(A)
    a_pp, a_qq, a_pq = d[:h], d[h:], jnp.diagonal(A[:h, h:])
    # Golub & Van Loan, Alg. 8.5.1 (symSchur2): t = tan(theta), the root of t^2 + 2 tau t - 1 = 0 of smaller
    # modulus, so that [c s; -s c]^T [a_pp a_pq; a_pq a_qq] [c s; -s c] is diagonal.
    nonzero = a_pq != 0
    tau = (a_qq - a_pp) / (2.0 * jnp.where(nonzero, a_pq, 1.0))
    t = jnp.where(nonzero, jnp.where(tau >= 0, 1.0, -1.0) / (jnp.abs(tau) + jnp.hypot(1.0, tau)), 0.0)
    c = 1.0 / jnp.sqrt(1.0 + t * t)
    s = t * c

    def rotate(X, axis):  # slot p <- c x_p - s x_q, slot q <- s x_p + c x_q along ``axis``
        p, q = jax.lax.slice_in_dim(X, 0, h, axis=axis), jax.lax.slice_in_dim(X, h, n, axis=axis)
        cc, ss = (c[:, None], s[:, None]) if axis == 0 else (c[None, :], s[None, :])
        return jnp.concatenate([cc * p - ss * q, ss * p + cc * q], axis=axis)

    A = rotate(rotate(A, 1), 0)  # J^T A J
    # The pairs' off-diagonal entries are zero by construction and their diagonals move by -/+ t a_pq (GvL §8.5).
    i = jnp.arange(n)
    d_new = jnp.concatenate([a_pp - t * a_pq, a_qq + t * a_pq])
    A = jnp.where(i[:, None] % h == i[None, :] % h, jnp.diag(d_new), A)
    V = rotate(V, 1)  # V J
    return (_permute(_permute(A, h, 0), h, 1), _permute(V, h, 1)), None


def default_sweeps(dtype) -> int:
    """Sweeps that bring the off-diagonal part of the matrices we tested to rounding level (Frobenius norm
    <= 10 m eps ||A||, scripts/bench_eig.py --convergence): random SPD matrices need 5-10 sweeps for m = 8-128;
    RBF kernel matrices need 8-14 at m = 32, 10-18 at m = 64-80 and 11-22 at m = 128, the most for the worst
    conditioned (cond 1e15-1e18): Jacobi's quadratic convergence starts late when many eigenvalues are tiny
    and clustered. float32 needs at most 6. Defaults: 20 in float64 (raise ``sweeps`` for m > 100 with
    cond > 1e15), 10 in float32."""
    return 10 if jnp.finfo(dtype).bits <= 32 else 20


def jacobi_sweeps(A, V, sweeps: int, unroll: bool = True):
    """``sweeps`` sweeps of [`jacobi_eigh`][] on (A, V) of even size n, V the rotations so far: returns (V^T A V with
    the new rotations, V J). Each sweep is n - 1 steps; the slots end in their first order."""
    n = A.shape[0]

    def sweep(_, carry):
        return jax.lax.scan(_jacobi_step, carry, None, length=n - 1, unroll=bool(unroll))[0]

    return jax.lax.fori_loop(0, sweeps, sweep, (A, V))


@functools.partial(jax.jit, static_argnames=("sweeps", "unroll"))
def jacobi_eigh(A, sweeps: int | None = None, unroll: bool = True):
    """Eigenvalues (ascending) and eigenvectors of a small symmetric (m, m) matrix by cyclic Jacobi with the
    parallel (round-robin) ordering: ``(w, V)`` with ``A = V diag(w) V^T``, like ``jnp.linalg.eigh``.

    Golub & Van Loan, *Matrix Computations* (4th ed.), §8.5 (Jacobi methods: the 2 x 2 symmetric Schur decomposition,
    cyclic Jacobi, the parallel ordering) and Brent & Luk, SIAM J. Sci. Stat. Comput. 6 (1985) 69–84. Written here from
    the algorithm, not from a library. A sweep is m - 1 steps (m rounded up to even); each step rotates m/2 disjoint
    index pairs at once, held in the slots (k, m/2 + k), as elementwise products on whole rows and columns, then moves
    the indices to their next slots by a fixed permutation written as slices (``_move``, the round-robin "circle"):
    O(m^2) work, no gathers. The number of ``sweeps`` is fixed (static; None: [`default_sweeps`][]): no data-dependent
    loop, so the same program runs under ``vmap`` for every seed. ``unroll``: unroll the steps of a sweep (one loop
    iteration per sweep instead of per step; every iteration of an XLA:GPU loop is a host round trip,
    docs/architecture.md#rounds).

    For the accelerators, where cuSOLVER's ``eigh`` of a small matrix is a long chain of tiny kernels; on CPU
    LAPACK's ``eigh`` is faster (scripts/bench_eig.py).
    """
    m = A.shape[-1]
    n = m + m % 2
    sweeps = default_sweeps(A.dtype) if sweeps is None else sweeps
    # An odd m gets a zero row and column in front: slot 0 never moves and its rotations all have a_pq = 0
    # (c = 1, s = 0), so index 0 stays decoupled and is dropped at the end.
    A = jnp.pad((A + A.T) / 2, ((n - m, 0), (n - m, 0)))
    A, V = jacobi_sweeps(A, jnp.eye(n, dtype=A.dtype), sweeps, unroll)
    w, V = jnp.diagonal(A)[n - m:], V[n - m:, n - m:]
    order = jnp.argsort(w)
    return w[order], V[:, order]


EIG_METHODS = ("auto", "eigh", "jacobi")


def resolve_eig_method(method: str) -> str:
    """``auto`` -> ``eigh`` on every backend until Jacobi is measured faster somewhere. On CPU LAPACK wins by
    far (scripts/bench_eig.py, RBF kernel matrices, 2 shared cores under load ~8: eigh 0.19 / 0.35 / 1.7 ms at
    m = 32 / 64 / 128 against Jacobi's 2.3 / 11 / 185 ms; 10 seeds vmapped 0.66 / 7.9 / 23 ms against
    27 / 115 / 2500 ms). On a GPU cuSOLVER's small eigh takes ≈ 1.7 ms at m ≈ 80 (issue 15) while the
    unrolled Jacobi is ≈ 20 sweeps x (m - 1) steps x ~13 fused kernels, ~2·10^4 launches inside the program:
    not obviously faster, and not measured (no GPU was lent). ``jacobi`` is there to be chosen and measured
    (``python scripts/bench_eig.py`` on the accelerator)."""
    if method not in EIG_METHODS:
        raise ValueError(f"eig_method={method!r}; choose one of {list(EIG_METHODS)}")
    return "eigh" if method == "auto" else method


def sym_eig(A, method: str = "auto"):
    """``(w, V)`` of a symmetric matrix by ``jnp.linalg.eigh`` or [`jacobi_eigh`][] (``method`` static)."""
    if resolve_eig_method(method) == "jacobi":
        return jacobi_eigh(A)
    return jnp.linalg.eigh(A)


def eig_on_width(M, index, widths, method: str = "auto"):
    """[`sym_eig`][] of a symmetric (m, m) matrix that is block diagonal beyond its first ``widths[index]`` rows and
    columns, with a diagonal lower block: ``(w, V)`` from the leading w x w block alone, the lower block's diagonal
    appended to the eigenvalues and the identity to the eigenvectors (an exact eigendecomposition of such a matrix, its
    eigenvalues not sorted). ``index`` may be traced: one ``lax.switch`` branch per width (``widths`` static, the last
    m)."""
    m = M.shape[0]

    def at(w):
        def branch(M):
            e, U = sym_eig(M[:w, :w], method)
            if w == m:
                return e, U
            pad = jnp.zeros((w, m - w), M.dtype)
            U = jnp.block([[U, pad], [pad.T, jnp.eye(m - w, dtype=M.dtype)]])
            return jnp.concatenate([e, jnp.diagonal(M)[w:]]), U
        return branch

    return jax.lax.switch(index, [at(w) for w in widths], M)


def psd_inv_sqrt(K, mask, eig_method: str = "auto", eig=None):
    """Pseudo-inverse square root of a PSD matrix restricted to ``mask``.

    Returns ``(W, rank)`` with ``W`` (m, m) such that ``W.T @ W = K^+`` and ``z(x) = W k_S(x)`` is the Nyström embedding
    z(x) = K_S^{+1/2} k_S(x) (BBKB §2, up to an orthogonal rotation, which leaves every posterior quantity unchanged).
    Eigenvalues below ``max_eig * m * eps`` are dropped (docs/architecture.md#numerics; the same threshold as the
    authors' code) — no jitter is added. ``eig_method`` (static): the eigensolver ([`sym_eig`][]); the threshold is the
    same for each. ``eig``: a function of the masked matrix giving its ``(w, V)`` in place of ``sym_eig`` (e.g.
    [`eig_on_width`][]).
    """
    Km = masked_gram(K, mask)
    evals, U = sym_eig(Km, eig_method) if eig is None else eig(Km)
    m = jnp.sum(mask)
    eps = jnp.finfo(K.dtype).eps
    thr = jnp.maximum(jnp.max(evals), 0.0) * m * eps
    keep = evals > thr
    inv_sqrt = jnp.where(keep, 1.0 / jnp.sqrt(jnp.where(keep, evals, 1.0)), 0.0)
    W = inv_sqrt[:, None] * U.T * mask.astype(K.dtype)[None, :]
    return W, jnp.sum(keep)


def sherman_morrison(Vinv, z):
    """(V + z z^T)^{-1} from V^{-1} in O(m^2)."""
    u = mm(Vinv, z)
    return Vinv - jnp.outer(u, u) / (1.0 + mm(z, u))


def after(x, dep):
    """``x``, computed only once ``dep`` is (NaN where ``dep``'s first entry is NaN, else exactly ``x``).

    A data dependence that XLA keeps, to order two batched LAPACK calls that the CPU runtime could otherwise run
    concurrently, which can hang it (``sketchbo.engine.lapack_overlap``). ``jax.lax.optimization_barrier``
    does not: XLA:CPU drops it before scheduling (jax 0.10.2)."""
    return jnp.where(jnp.isnan(jnp.ravel(dep)[0]), jnp.nan, x)


def upper_triangular_inverse(U, block: int = 128):
    """U^{-1} of an upper-triangular (n, n) U by recursive 2 x 2 blocking:
    [[A, B], [0, C]]^{-1} = [[A^{-1}, -A^{-1} B C^{-1}], [0, C^{-1}]].

    Same result as a triangular solve against the identity (to rounding), but nearly all of its
    2n^3/3 flops are matrix products, which run several times faster on CPU than a triangular solve
    with n right-hand sides (n = 1008, a 2-core CPU: 8.9 ms against 36 ms, medians of 9). Blocks of at
    most ``block`` rows use the triangular solve.
    """
    n = U.shape[0]
    if n <= block:
        return jax.scipy.linalg.solve_triangular(U, jnp.eye(n, dtype=U.dtype), lower=False)
    k = n // 2
    Ai = upper_triangular_inverse(U[:k, :k], block)
    Ci = upper_triangular_inverse(after(U[k:, k:], Ai), block)  # not concurrently with A^{-1}'s solves
    top = jnp.concatenate([Ai, -mm(mm(Ai, U[:k, k:]), Ci)], axis=1)
    return jnp.concatenate([top, jnp.concatenate([jnp.zeros((n - k, k), U.dtype), Ci], axis=1)], axis=0)


def upper_triangular_gram(X, block: int = 128):
    """X X^T of an upper-triangular (n, n) X by recursive 2 x 2 blocking:
    ``[[A, B], [0, C]] [[A, B], [0, C]]^T = [[A A^T + B B^T, B C^T], [C B^T, C C^T]]``.

    The zero block is never multiplied, so the products take about a third of a full GEMM's flops (n = 1000,
    one core of this 2-core CPU: 37-41 ms against 84-92 ms for ``X @ X.T``), and the result is exactly
    symmetric. Blocks of at most ``block`` rows are one product."""
    n = X.shape[0]
    if n <= block:
        return mm(X, X.T)
    k = n // 2
    A, B, C = X[:k, :k], X[:k, k:], X[k:, k:]
    BCt = mm(B, C.T)
    top = jnp.concatenate([upper_triangular_gram(A, block) + mm(B, B.T), BCt], axis=1)
    return jnp.concatenate([top, jnp.concatenate([BCt.T, upper_triangular_gram(C, block)], axis=1)], axis=0)


def spd_inverse(L):
    """A^{-1} = X X^T with X = L^{-T}, for an SPD A = L L^T given its lower Cholesky factor L (n, n).

    Written as X X^T rather than W^T W (W = L^{-1}): XLA:CPU runs the former product about twice as fast.
    n = 1008 on a 2-core CPU: 23.5 ms against 56.7 ms for a Cholesky solve against the identity
    (scripts/bench_selection.py), before the product skipped X's zero triangle (``upper_triangular_gram``).
    """
    return upper_triangular_gram(upper_triangular_inverse(L.T))
