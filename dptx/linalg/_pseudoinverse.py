"""numpy.linalg's routines made of a singular value decomposition (``_svd``), step for step
as numpy writes them: ``pinv`` (the pseudo-inverse, small singular values discarded),
``matrix_rank`` (singular values above a tolerance) and ``lstsq`` (the minimum-norm
least-squares solution, as LAPACK's gelsd defines it: singular values at most ``rcond``
times the largest count as zero). Values agree with numpy's to rounding (the decomposition
is a Jacobi one, LAPACK's a bidiagonal one)."""
from __future__ import annotations

import numpy as np

from .._core import products, reductions, ufuncs
from ..runtime.ndarray import asarray, empty, ndarray, zeros
from ._lu import _matrices, _type
from ._svd import svd

# numpy.linalg's functions of these names (array_api dispatches numpy's to them)
__all__ = ["lstsq", "matrix_rank", "pinv"]

_UNSET = object()


def pinv(a, rcond=None, hermitian=False, *, rtol=_UNSET) -> ndarray:
    """numpy.linalg.pinv: V diag(1/s) U^T of each matrix, the singular values at most
    ``rcond`` (1e-15 by default; ``rtol=None``: max(M, N) eps) times the largest set to 0."""
    a = asarray(a)
    _matrices(a)
    if rcond is None:
        if rtol is _UNSET:
            rcond = 1e-15
        elif rtol is None:
            rcond = max(a.shape[-2:]) * np.finfo(_type(a)).eps
        else:
            rcond = rtol
    elif rtol is not _UNSET:
        raise ValueError("`rtol` and `rcond` can't be both set.")
    M, N = a.shape[-2:]
    if M == 0 or N == 0:
        return empty(a.shape[:-2] + (N, M), _type(a))
    u, s, vt = svd(a, full_matrices=False, hermitian=hermitian)
    rcond = asarray(np.asarray(rcond)) if not isinstance(rcond, ndarray) else rcond
    cutoff = ufuncs.apply(np.multiply, rcond[..., None],
                          reductions.max_(s, axis=-1, keepdims=True))
    large = ufuncs.apply(np.greater, s, cutoff)
    inverse = ufuncs.where(large, ufuncs.apply(np.true_divide, 1, s), 0).astype(s.dtype)
    scaled = ufuncs.apply(np.multiply, inverse[..., None], u.swapaxes(-1, -2))
    return products.matmul(vt.swapaxes(-1, -2), scaled)


def matrix_rank(A, tol=None, hermitian=False, *, rtol=None):
    """numpy.linalg.matrix_rank: the singular values above ``tol`` (by default the largest
    times ``rtol``, itself max(M, N) eps by default), counted per matrix; for fewer than two
    dimensions, 1 unless every element is 0."""
    A = asarray(A)
    if A.ndim < 2:
        return ufuncs.apply(np.logical_not, reductions.all_(
            ufuncs.apply(np.equal, A, 0))).astype(np.int64)
    S = svd(A, compute_uv=False, hermitian=hermitian)
    if tol is None:
        if rtol is None:
            rtol = asarray(np.asarray(max(A.shape[-2:]) * np.finfo(S.dtype).eps))
        else:
            rtol = asarray(rtol)[..., None]
        tol = ufuncs.apply(np.multiply, reductions.max_(S, axis=-1, keepdims=True), rtol)
    else:
        tol = asarray(tol)[..., None]
    return reductions.sum_(ufuncs.apply(np.greater, S, tol), axis=-1, dtype=np.int64)


def lstsq(a, b, rcond=None):
    """numpy.linalg.lstsq: (x, residuals, rank, s) of the least-squares problem a x = b for
    a 2-D ``a`` (M x N) and ``b`` of M rows: x the minimum-norm solution with the singular
    values at most ``rcond`` (max(M, N) eps by default) times the largest taken as 0, the
    residuals' squared norms per column where the rank is N < M (else empty), the rank (a
    Python int: one read back, as numpy returns one) and the singular values."""
    a, b = asarray(a), asarray(b)
    one = b.ndim == 1
    if one:
        b = b[:, None]
    for m in (a, b):
        if m.ndim != 2:
            raise np.linalg.LinAlgError(f"{m.ndim}-dimensional array given. Array must be "
                                        f"two-dimensional")
    M, N = a.shape
    if b.shape[0] != M:
        raise np.linalg.LinAlgError("Incompatible dimensions")
    T = _type(a, b)
    if rcond is None:
        rcond = np.finfo(T).eps * max(N, M)
    K = b.shape[1]
    if min(M, N) == 0:
        x = zeros((N, K), T)
        s = empty((0,), T)
        rank = 0
    else:
        u, s, vt = svd(a.astype(T), full_matrices=False)
        large = ufuncs.apply(np.greater, s, ufuncs.apply(np.multiply, rcond, s[:1]))
        inverse = ufuncs.where(large, ufuncs.apply(np.true_divide, 1, s), 0).astype(T)
        ub = products.matmul(u.swapaxes(-1, -2), b.astype(T))
        x = products.matmul(vt.swapaxes(-1, -2),
                              ufuncs.apply(np.multiply, inverse[:, None], ub))
        rank = int(reductions.sum_(large, dtype=np.int64).get())
    if rank == N and M > N:
        r = ufuncs.apply(np.subtract, b.astype(T), products.matmul(a.astype(T), x))
        residuals = reductions.sum_(ufuncs.apply(np.multiply, r, r), axis=0)
    else:
        residuals = empty((0,), T)
    return (x[:, 0] if one else x), residuals, rank, s
