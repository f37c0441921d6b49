"""numpy's matrix routines on dptx arrays, made of views, device copies and element-wise
launches: ``eye``/``identity``, ``diagonal``/``diag``/``diagflat``/``trace``,
``tril``/``triu``, ``outer``, ``vander``.
``diagonal`` is a view, as numpy's (read it, copy it); the others are new arrays."""
from __future__ import annotations

import numpy as np

from .._core import reductions, ufuncs
from .._indexing import indexing
from ..runtime.ndarray import asarray, empty, ndarray, zeros


def _indices(n: int) -> ndarray:
    out = empty((n,), np.int64)
    if n:
        ufuncs.fill_arange(out, 0, 1)
    return out


def eye(N, M=None, k=0, dtype=np.float64, order="C") -> ndarray:
    """numpy.eye: ones on the k-th diagonal (a strided view of the zeros, filled), laid out
    in ``order``."""
    M = N if M is None else M
    out = zeros((N, M), dtype, order)
    d = diagonal(out, k)
    if d.size:
        d[...] = 1
    return out


def identity(n, dtype=np.float64) -> ndarray:
    return eye(n, dtype=dtype)


def diagonal(a, offset=0, axis1=0, axis2=1) -> ndarray:
    """numpy.diagonal: a view of the diagonal's elements (numpy's stride arithmetic on the
    array's stand-in)."""
    a = asarray(a)
    probe = a._stand_in()
    return a._like(probe, np.diagonal(probe, offset, axis1, axis2))


def diag(v, k=0) -> ndarray:
    """numpy.diag: a 1-D array's square matrix with it on the k-th diagonal, or a 2-D array's
    k-th diagonal as a new array."""
    v = asarray(v)
    if v.ndim == 1:
        n = v.shape[0] + abs(k)
        out = zeros((n, n), v.dtype)
        if v.size:
            diagonal(out, k)[...] = v
        return out
    if v.ndim == 2:
        return diagonal(v, k).copy()
    raise ValueError("Input must be 1- or 2-d.")


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    """numpy.trace: the sum along the diagonal (in numpy's sum type)."""
    return reductions.sum_(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype, out=out)


def _triangle(m, k, lower: bool) -> ndarray:
    m = asarray(m)
    if m.ndim < 2:
        raise ValueError("input array must be at least 2-d")
    rows = _indices(m.shape[-2]).reshape(-1, 1)
    cols = _indices(m.shape[-1]).reshape(1, -1)
    # numpy's tri: keep j <= i + k (tril) or j >= i + k (triu)
    shifted = ufuncs.apply(np.add, rows, k)
    keep = ufuncs.apply(np.less_equal if lower else np.greater_equal, cols, shifted)
    return ufuncs.where(keep, m, np.zeros((), m.dtype)[()])


def fill_diagonal(a, val, wrap=False) -> None:
    """numpy.fill_diagonal, in place: the main diagonal of a 2-D array (wrapping down a tall
    one with ``wrap``) or of an array whose dimensions are all equal; ``val`` repeated along
    it. A strided view of the diagonal where numpy's step lands on it, else ``put``."""
    if a.ndim < 2:
        raise ValueError("array must be at least 2-d")
    end = None
    if a.ndim == 2:
        step = a.shape[1] + 1
        if not wrap:
            end = a.shape[1] * a.shape[1]
    else:
        if len(set(a.shape)) != 1:
            raise ValueError("All dimensions of input must be of equal length")
        step = 1 + int(np.cumprod(a.shape[:-1]).sum())
    positions = np.arange(0, a.size if end is None else min(end, a.size), step)
    if np.ndim(val) == 0 and not isinstance(val, ndarray) and not wrap and a.ndim == 2:
        if positions.size:
            diagonal(a)[...] = val
        return
    indexing.put(a, positions, val)


def tri(N, M=None, k=0, dtype=float) -> ndarray:
    """numpy.tri: ones at and below the k-th diagonal (j <= i + k), zeros above."""
    M = N if M is None else M
    rows = _indices(N).reshape(-1, 1)
    cols = _indices(M).reshape(1, -1)
    below = ufuncs.apply(np.less_equal, cols, ufuncs.apply(np.add, rows, k))
    return ufuncs.astype(below, dtype)


def tril(m, k=0) -> ndarray:
    """numpy.tril: the elements on and below the k-th diagonal, zeros above."""
    return _triangle(m, k, lower=True)


def triu(m, k=0) -> ndarray:
    """numpy.triu: the elements on and above the k-th diagonal, zeros below."""
    return _triangle(m, k, lower=False)


def outer(a, b, out=None) -> ndarray:
    """numpy.outer: a.ravel()[:, None] * b.ravel()[None, :] (one launch)."""
    a, b = asarray(a).reshape(-1), asarray(b).reshape(-1)
    return ufuncs.apply(np.multiply, a.reshape(-1, 1), b.reshape(1, -1), out=out)


def diagflat(v, k=0) -> ndarray:
    """numpy.diagflat: the flattened input on the k-th diagonal of a square of zeros."""
    return diag(asarray(v).reshape(-1), k)


def vander(x, N=None, increasing=False) -> ndarray:
    """numpy.vander: the powers of ``x`` as columns (decreasing by default), each column the
    one before times ``x``, as numpy's ``multiply.accumulate`` (the same roundings)."""
    x = asarray(x)
    if x.ndim != 1:
        raise ValueError("x must be a one-dimensional array or sequence.")
    N = len(x) if N is None else N
    v = empty((len(x), N), np.promote_types(x.dtype, int))
    tmp = v[:, ::-1] if not increasing else v
    if N > 0:
        tmp[:, 0] = 1
    if N > 1:
        tmp[:, 1] = x
        for j in range(2, N):
            tmp[:, j] = ufuncs.apply(np.multiply, tmp[:, j - 1], x)
    return v
