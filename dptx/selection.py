"""Selections whose size depends on the data: ``a[mask]`` (the elements where a boolean mask
of ``a``'s shape is True, in C order, as a new 1-D array) and ``nonzero``/``argwhere``/
``flatnonzero`` (the indices of the non-zero elements), as numpy and CuPy give them.

Three launches and one wait, as CuPy's: the mask's True (non-zero) elements counted per piece
of ``PIECE`` elements, the pieces' starting offsets (an exclusive prefix sum, one thread:
there are few pieces), then each piece's selected elements, or their indices, written at its
offset. Only the total comes back to the host, before the last launch: the result's size
depends on the data.
"""
from __future__ import annotations

import numpy as np

from .array import asarray, ascontiguousarray, empty, ndarray
from .elementwise import KernelCache, c_type
from .module import RawModule

PIECE = 4096        # elements a thread scans: few pieces for the one-thread prefix sum
BLOCK = 128

_SOURCE = r"""
extern "C" __global__ void dptx_mask_count(const M_* m, long long n, int* counts,
                                           long long P) {
    const long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= P) return;
    const long long a = p * PIECE_, b = a + PIECE_ < n ? a + PIECE_ : n;
    int c = 0;
    for (long long j = a; j < b; j++) c += (m[j] != (M_)0) ? 1 : 0;
    counts[p] = c;
}
extern "C" __global__ void dptx_mask_offsets(const int* counts, long long* offsets,
                                             long long P) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    long long s = 0;
    for (long long p = 0; p < P; p++) { offsets[p] = s; s += counts[p]; }
    offsets[P] = s;
}
extern "C" __global__ void dptx_mask_select(const T_* x, const M_* m, long long n,
                                            const long long* offsets, T_* out, long long P) {
    const long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= P) return;
    const long long a = p * PIECE_, b = a + PIECE_ < n ? a + PIECE_ : n;
    long long o = offsets[p];
    for (long long j = a; j < b; j++)
        if (m[j] != (M_)0) out[o++] = x[j];
}
// the C-order index of each non-zero element, axis k of the i-th written at
// out[i * row + k * col] (nonzero: row 1, col total; argwhere: row ndim, col 1)
extern "C" __global__ void dptx_mask_indices(const M_* m, long long n, const long long* offsets,
                                             const long long* dims, int ndim, long long row,
                                             long long col, long long* out, long long P) {
    const long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= P) return;
    const long long a = p * PIECE_, b = a + PIECE_ < n ? a + PIECE_ : n;
    long long o = offsets[p];
    for (long long j = a; j < b; j++) {
        if (m[j] == (M_)0) continue;
        long long rest = j;
        for (int k = ndim - 1; k >= 0; k--) {
            out[o * row + k * col] = rest % dims[k];
            rest /= dims[k];
        }
        o++;
    }
}
"""

_modules = KernelCache()


def _module(values: np.dtype, mask: np.dtype) -> RawModule:
    return _modules.get(("mask_select", str(values), str(mask)), lambda: RawModule(
        f"#define PIECE_ {PIECE}LL\ntypedef {c_type(values)} T_;\ntypedef {c_type(mask)} M_;\n"
        + _SOURCE))


def _offsets(mod: RawModule, m: ndarray):
    """Launch the count and the prefix sum over the flat ``m``: (offsets, pieces, grid)."""
    n = m.size
    P = -(-n // PIECE)
    grid = (-(-P // BLOCK),)
    counts = empty((P,), np.int32)
    offsets = empty((P + 1,), np.int64)
    mod.get_function("dptx_mask_count")(grid, (BLOCK,), [m, np.int64(n), counts, np.int64(P)])
    mod.get_function("dptx_mask_offsets")((1,), (1,), [counts, offsets, np.int64(P)])
    return offsets, P, grid


def mask_select(a: ndarray, mask: ndarray) -> ndarray:
    """``a[mask]`` for a boolean dptx ``mask`` of ``a``'s shape (checked by the caller)."""
    x = ascontiguousarray(a).reshape(-1)
    m = ascontiguousarray(mask).reshape(-1)
    n = x.size
    if n == 0:
        return empty((0,), a.dtype)
    mod = _module(a.dtype, m.dtype)
    offsets, P, grid = _offsets(mod, m)
    total = int(offsets[P])         # the one wait: the result's size
    out = empty((total,), a.dtype)
    if total:
        mod.get_function("dptx_mask_select")(grid, (BLOCK,), [x, m, np.int64(n), offsets, out,
                                                              np.int64(P)])
    return out


def _indices(a: ndarray, shape: tuple, by_row: bool) -> ndarray:
    """The indices along ``shape`` of ``a``'s non-zero elements (NaN is non-zero, as in
    numpy), as a (len(shape), total) array, or (total, len(shape)) where ``by_row``."""
    m = ascontiguousarray(a).reshape(-1)
    ndim = len(shape)
    if m.size == 0:
        return empty((0, ndim) if by_row else (ndim, 0), np.int64)
    mod = _module(m.dtype, m.dtype)
    offsets, P, grid = _offsets(mod, m)
    dims = asarray(np.array(shape, np.int64))
    total = int(offsets[P])         # the one wait: the result's size
    out = empty((total, ndim) if by_row else (ndim, total), np.int64)
    if total:
        row, col = (ndim, 1) if by_row else (1, total)
        mod.get_function("dptx_mask_indices")(grid, (BLOCK,), [
            m, np.int64(m.size), offsets, dims, np.int32(ndim), np.int64(row), np.int64(col),
            out, np.int64(P)])
    return out


def nonzero(a) -> tuple:
    """numpy.nonzero: a tuple of int64 arrays, one per axis, of the non-zero elements'
    indices in C order (each a row of one array on the devices)."""
    a = asarray(a)
    if a.ndim == 0:
        raise ValueError("Calling nonzero on 0d arrays is not allowed. Use "
                         "np.atleast_1d(scalar).nonzero() instead. If the context of this "
                         "error is of the form `arr[nonzero(cond)]`, just use `arr[cond]`.")
    rows = _indices(a, a.shape, by_row=False)
    return tuple(rows[k] for k in range(a.ndim))


def flatnonzero(a) -> ndarray:
    """numpy.flatnonzero: the flat (C-order) indices of the non-zero elements."""
    a = asarray(a)
    return _indices(a, (a.size,), by_row=False)[0]


def argwhere(a) -> ndarray:
    """numpy.argwhere: a (count, ndim) int64 array of the non-zero elements' indices."""
    a = asarray(a)
    if a.ndim == 0:     # numpy: a 0-d array is taken as a 1-element 1-d one, then no axis
        return _indices(a.reshape(1), (1,), by_row=True)[:, :0]
    return _indices(a, a.shape, by_row=True)
