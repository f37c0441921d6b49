"""Running sums and products along an axis, numpy's ``cumsum`` and ``cumprod``.

The axis is moved last and each row cut into pieces of ``PIECE`` elements. Three launches: each
piece's total (sequential within the piece), each row's exclusive running total of its pieces
(one thread per row: a row has few pieces), then each piece's running values from that offset.
A row of at most ``PIECE`` elements is one piece, added up strictly in order as numpy does; a
longer one adds each piece's running sum to the total before it, so float results may differ
from numpy's strictly sequential order in the last bits (integers are exact).
"""
from __future__ import annotations

import numpy as np

from .array import _axes, asarray, ascontiguousarray, empty, ndarray
from .elementwise import KernelCache, c_type
from .module import RawModule

PIECE = 4096
BLOCK = 128

_SOURCE = r"""
extern "C" __global__ void dptx_scan_totals(const X_* x, long long L, long long P,
                                            long long pieces, R_* totals) {
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= pieces) return;
    const long long row = t / P, p = t % P;
    const long long a = p * PIECE_, b = a + PIECE_ < L ? a + PIECE_ : L;
    R_ s = IDENTITY_;
    for (long long j = a; j < b; j++) s = s OP_ (R_)x[row * L + j];
    totals[t] = s;
}
extern "C" __global__ void dptx_scan_offsets(R_* totals, long long P, long long rows) {
    const long long row = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    R_ s = IDENTITY_;
    for (long long p = 0; p < P; p++) {
        R_ t = totals[row * P + p];
        totals[row * P + p] = s;
        s = s OP_ t;
    }
}
extern "C" __global__ void dptx_scan_pieces(const X_* x, long long L, long long P,
                                            long long pieces, const R_* offsets, R_* out) {
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= pieces) return;
    const long long row = t / P, p = t % P;
    const long long a = p * PIECE_, b = a + PIECE_ < L ? a + PIECE_ : L;
    R_ s;
    if (p == 0) {           // the row's first element as it is: numpy starts from it
        s = (R_)x[row * L + a];
        out[row * L + a] = s;
        for (long long j = a + 1; j < b; j++) { s = s OP_ (R_)x[row * L + j]; out[row * L + j] = s; }
        return;
    }
    s = offsets[t];
    for (long long j = a; j < b; j++) { s = s OP_ (R_)x[row * L + j]; out[row * L + j] = s; }
}
"""

_modules = KernelCache()


def _module(X: np.dtype, R: np.dtype, op: str) -> RawModule:
    identity = "0" if op == "sum" else "1"
    return _modules.get(("scan", str(X), str(R), op), lambda: RawModule(
        f"#define PIECE_ {PIECE}LL\n#define OP_ {'+' if op == 'sum' else '*'}\n"
        f"typedef {c_type(X)} X_;\ntypedef {c_type(R)} R_;\n#define IDENTITY_ (R_){identity}\n"
        + _SOURCE, options=("--fmad=false",)))


def _scan(a, axis, dtype, out, op: str) -> ndarray:
    a = asarray(a)
    probe = np.zeros(1, a.dtype)
    R = (np.cumsum if op == "sum" else np.cumprod)(probe, dtype=dtype).dtype
    if axis is None or a.ndim == 0:     # numpy scans a 0-d array as a 1-element 1-D one
        a, axis = a.reshape(-1), 0 if axis is None else axis
    axis = _axes((axis,), a.ndim)[0]
    moved = a.swapaxes(axis, -1)
    rows_shape = moved.shape
    x = ascontiguousarray(moved)
    L = rows_shape[-1]
    result = empty(rows_shape, R)
    if x.size:
        rows = x.size // L
        P = -(-L // PIECE)
        pieces = rows * P
        mod = _module(a.dtype, R, op)
        grid = (-(-pieces // BLOCK),)
        totals = empty((pieces,), R)
        if P > 1:
            mod.get_function("dptx_scan_totals")(grid, (BLOCK,), [
                x, np.int64(L), np.int64(P), np.int64(pieces), totals])
            mod.get_function("dptx_scan_offsets")((-(-rows // BLOCK),), (BLOCK,), [
                totals, np.int64(P), np.int64(rows)])
        mod.get_function("dptx_scan_pieces")(grid, (BLOCK,), [
            x, np.int64(L), np.int64(P), np.int64(pieces), totals, result])
    result = result.swapaxes(axis, -1) if a.ndim > 1 else result.reshape(a.shape)
    if out is not None:
        out[...] = result
        return out
    return result if result._contiguous else result.copy()


def cumsum(a, axis=None, dtype=None, out=None) -> ndarray:
    """numpy.cumsum: the running sum along ``axis`` (of the flattened array by default), in
    numpy's type (a platform integer for small integers and booleans)."""
    return _scan(a, axis, dtype, out, "sum")


def cumprod(a, axis=None, dtype=None, out=None) -> ndarray:
    """numpy.cumprod: the running product along ``axis``, as ``cumsum``."""
    return _scan(a, axis, dtype, out, "prod")
