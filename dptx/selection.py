"""``a[mask]``: the elements where a boolean mask of ``a``'s shape is True, in C order, as a
new 1-D array (numpy's and CuPy's boolean selection).

Three launches and one wait, as CuPy's: the mask's True elements counted per piece of
``PIECE`` elements, the pieces' starting offsets (an exclusive prefix sum, one thread: there
are few pieces), then each piece's selected elements copied to its offset. Only the total
comes back to the host, before the last launch: the result's size depends on the data.
"""
from __future__ import annotations

import numpy as np

from .array import ascontiguousarray, empty, ndarray
from .elementwise import KernelCache, c_type
from .module import RawModule

PIECE = 4096        # elements a thread scans: few pieces for the one-thread prefix sum
BLOCK = 128

_SOURCE = r'''
extern "C" __global__ void dptx_mask_count(const bool* m, long long n, int* counts,
                                           long long P) {
    const long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= P) return;
    const long long a = p * PIECE_, b = a + PIECE_ < n ? a + PIECE_ : n;
    int c = 0;
    for (long long j = a; j < b; j++) c += m[j] ? 1 : 0;
    counts[p] = c;
}
extern "C" __global__ void dptx_mask_offsets(const int* counts, long long* offsets,
                                             long long P) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    long long s = 0;
    for (long long p = 0; p < P; p++) { offsets[p] = s; s += counts[p]; }
    offsets[P] = s;
}
extern "C" __global__ void dptx_mask_select(const T_* x, const bool* m, long long n,
                                            const long long* offsets, T_* out, long long P) {
    const long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= P) return;
    const long long a = p * PIECE_, b = a + PIECE_ < n ? a + PIECE_ : n;
    long long o = offsets[p];
    for (long long j = a; j < b; j++)
        if (m[j]) out[o++] = x[j];
}
'''

_modules = KernelCache()


def _module(dtype: np.dtype) -> RawModule:
    return _modules.get(("mask_select", str(dtype)), lambda: RawModule(
        f"#define PIECE_ {PIECE}LL\ntypedef {c_type(dtype)} T_;\n" + _SOURCE))


def mask_select(a: ndarray, mask: ndarray) -> ndarray:
    """``a[mask]`` for a boolean dptx ``mask`` of ``a``'s shape (checked by the caller)."""
    x = ascontiguousarray(a).reshape(-1)
    m = ascontiguousarray(mask).reshape(-1)
    n = x.size
    if n == 0:
        return empty((0,), a.dtype)
    P = -(-n // PIECE)
    mod = _module(a.dtype)
    grid = (-(-P // BLOCK),)
    counts = empty((P,), np.int32)
    offsets = empty((P + 1,), np.int64)
    mod.get_function("dptx_mask_count")(grid, (BLOCK,), [m, np.int64(n), counts, np.int64(P)])
    mod.get_function("dptx_mask_offsets")((1,), (1,), [counts, offsets, np.int64(P)])
    total = int(offsets[P])         # the one wait: the result's size
    out = empty((total,), a.dtype)
    if total:
        mod.get_function("dptx_mask_select")(grid, (BLOCK,), [x, m, np.int64(n), offsets, out,
                                                              np.int64(P)])
    return out
