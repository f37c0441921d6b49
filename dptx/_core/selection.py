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

from ..runtime.ndarray import asarray, ascontiguousarray, empty, ndarray
from .elementwise import KernelCache, c_type, with_type_headers
from ..runtime.module import RawModule

PIECE = 4096        # elements a thread scans: few pieces for the one-thread prefix sum
BLOCK = 128

_SOURCE = r"""
// Loops run a count from 0 bounded by PIECE_ and the size (not from a start to an end that
// both depend on the thread), not unrolled, and sizes and offsets are 32-bit unless the
// launch is wide: the access
// footprint then bounds a chunk by its own pieces, and knows a stored-to offset read from
// memory for a number, not a pointer that might reach the inputs.
extern "C" __global__ void dptx_mask_count(const M_* m, I_ n, int* counts, I_ P) {
    const I_ p = (I_)blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= P) return;
    const I_ a = p * PIECE_;
    int c = 0;
    #pragma unroll 1
    for (I_ k = 0; k < PIECE_ && a + k < n; k++) c += (m[a + k] != (M_)0) ? 1 : 0;
    counts[p] = c;
}
extern "C" __global__ void dptx_mask_offsets(const int* counts, I_* offsets, I_ P) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    I_ s = 0;
    for (I_ p = 0; p < P; p++) { offsets[p] = s; s += counts[p]; }
    offsets[P] = s;
}
extern "C" __global__ void dptx_mask_select(const T_* x, const M_* m, I_ n, const I_* offsets,
                                            T_* out, I_ P) {
    const I_ p = (I_)blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= P) return;
    const I_ a = p * PIECE_;
    I_ o = offsets[p];
    #pragma unroll 1
    for (I_ k = 0; k < PIECE_ && a + k < n; k++)
        if (m[a + k] != (M_)0) out[o++] = x[a + k];
}
// the C-order index of each non-zero element, axis k of the i-th written at
// out[i * row + k * col] (nonzero: row 1, col total; argwhere: row ndim, col 1)
extern "C" __global__ void dptx_mask_indices(const M_* m, I_ n, const I_* offsets,
                                             const long long* dims, int ndim, I_ row,
                                             I_ col, long long* out, I_ P) {
    const I_ p = (I_)blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= P) return;
    const I_ a = p * PIECE_;
    I_ o = offsets[p];
    #pragma unroll 1
    for (I_ k = 0; k < PIECE_ && a + k < n; k++) {
        if (m[a + k] == (M_)0) continue;
        long long rest = a + k;
        for (int d = ndim - 1; d >= 0; d--) {
            out[o * row + d * col] = rest % dims[d];
            rest /= dims[d];
        }
        o++;
    }
}
"""

_modules = KernelCache()


def _module(values: np.dtype, mask: np.dtype, wide: bool = False) -> RawModule:
    return _modules.get(("mask_select", str(values), str(mask), wide), lambda: RawModule(
        with_type_headers(f"typedef {'long long' if wide else 'int'} I_;\n"
                         f"#define PIECE_ ((I_){PIECE})\n"
                         f"typedef {c_type(values)} T_;\ntypedef {c_type(mask)} M_;\n"
                         + _SOURCE)))


def _wide(n: int) -> bool:
    return n > np.iinfo(np.int32).max


def _offsets(mod: RawModule, m: ndarray, wide: bool):
    """Launch the count and the prefix sum over the flat ``m``: (offsets, pieces, grid)."""
    n = m.size
    I = np.int64 if wide else np.int32
    P = -(-n // PIECE)
    grid = (-(-P // BLOCK),)
    counts = empty((P,), np.int32)
    offsets = empty((P + 1,), I)
    mod.get_function("dptx_mask_count")(grid, (BLOCK,), [m, I(n), counts, I(P)])
    mod.get_function("dptx_mask_offsets")((1,), (1,), [counts, offsets, I(P)])
    return offsets, P, grid


def mask_select(a: ndarray, mask: ndarray) -> ndarray:
    """``a[mask]`` for a boolean dptx ``mask`` of ``a``'s shape (checked by the caller)."""
    x = ascontiguousarray(a).reshape(-1)
    m = ascontiguousarray(mask).reshape(-1)
    n = x.size
    if n == 0:
        return empty((0,), a.dtype)
    I = np.int64 if _wide(n) else np.int32
    mod = _module(a.dtype, m.dtype, _wide(n))
    offsets, P, grid = _offsets(mod, m, _wide(n))
    total = int(offsets[P])         # the one wait: the result's size
    out = empty((total,), a.dtype)
    if total:
        mod.get_function("dptx_mask_select")(grid, (BLOCK,), [x, m, I(n), offsets, out, I(P)])
    return out


def _indices(a: ndarray, shape: tuple, by_row: bool) -> ndarray:
    """The indices along ``shape`` of ``a``'s non-zero elements (NaN is non-zero, as in
    numpy), as a (len(shape), total) array, or (total, len(shape)) where ``by_row``."""
    m = ascontiguousarray(a).reshape(-1)
    ndim = len(shape)
    if m.size == 0:
        return empty((0, ndim) if by_row else (ndim, 0), np.int64)
    wide = _wide(m.size * max(ndim, 1))
    I = np.int64 if wide else np.int32
    mod = _module(m.dtype, m.dtype, wide)
    offsets, P, grid = _offsets(mod, m, wide)
    dims = asarray(np.array(shape, np.int64))
    total = int(offsets[P])         # the one wait: the result's size
    out = empty((total, ndim) if by_row else (ndim, total), np.int64)
    if total:
        row, col = (ndim, 1) if by_row else (1, total)
        mod.get_function("dptx_mask_indices")(grid, (BLOCK,), [
            m, I(m.size), offsets, dims, np.int32(ndim), I(row), I(col), out, I(P)])
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
