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

from ..runtime.ndarray import _axes, asarray, ascontiguousarray, empty, ndarray
from . import outputs
from .elementwise import KernelCache, c_type, conversion, with_type_headers
from ..runtime.module import RawModule

# The loops run a count from 0 bounded by a constant (PIECE_) and the row's length, not
# unrolled, rather than from a start to an end that both depend on the thread: the access
# footprint then bounds a chunk's elements by its own pieces (from a start to an end, or
# unrolled by NVRTC, it came out reaching about twice as far, or from the array's start, and
# every chunk's window was the whole array, diffed byte by byte)

PIECE = 4096
BLOCK = 128

_SOURCE = r"""
extern "C" __global__ void dptx_scan_totals(const X_* x, I_ L, I_ P, I_ pieces, R_* totals) {
    const I_ t = (I_)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= pieces) return;
    const I_ row = t / P, p = t % P;
    const I_ a = p * PIECE_;
    R_ s = IDENTITY_;
    #pragma unroll 1
    for (I_ k = 0; k < PIECE_ && a + k < L; k++) s = s OP_ CONVERT_(x[row * L + a + k]);
    totals[t] = s;
}
extern "C" __global__ void dptx_scan_offsets(R_* totals, I_ P, I_ rows) {
    const I_ row = (I_)blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    R_ s = IDENTITY_;
    for (I_ p = 0; p < P; p++) {
        R_ t = totals[row * P + p];
        totals[row * P + p] = s;
        s = s OP_ t;
    }
}
extern "C" __global__ void dptx_scan_pieces(const X_* x, I_ L, I_ P, I_ pieces,
                                            const R_* offsets, R_* out) {
    const I_ t = (I_)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= pieces) return;
    const I_ row = t / P, p = t % P;
    const I_ a = p * PIECE_;
    // a row starts from its first element as it is (numpy's: -0.0 stays -0.0), a later
    // piece from the total before it (offsets is only written where a row has pieces)
    bool first = p == 0;
    R_ s = first ? IDENTITY_ : offsets[t];
    #pragma unroll 1
    for (I_ k = 0; k < PIECE_ && a + k < L; k++) {
        const R_ v = CONVERT_(x[row * L + a + k]);
        s = first ? v : s OP_ v;
        first = false;
        out[row * L + a + k] = s;
    }
}
"""

_modules = KernelCache()


def _module(X: np.dtype, R: np.dtype, op: str, wide: bool) -> RawModule:
    """The kernels for these types; sizes as 32-bit parameters unless ``wide``: the
    footprint analysis takes a 64-bit parameter for a possible pointer, and then every
    chunk's window would be every buffer, diffed byte by byte."""
    identity = "0" if op == "sum" else "1"
    return _modules.get(("scan", str(X), str(R), op, wide), lambda: RawModule(with_type_headers(
        f"#define PIECE_ ((I_){PIECE})\n#define OP_ {'+' if op == 'sum' else '*'}\n"
        f"typedef {'long long' if wide else 'int'} I_;\n"
        f"typedef {c_type(X)} X_;\ntypedef {c_type(R)} R_;\n#define IDENTITY_ (R_){identity}\n"
        # each element converted as numpy converts it (a negative float into uint64 wraps)
        f"#define CONVERT_(v) ({conversion(X, R, '(v)')})\n"
        + _SOURCE), options=("--fmad=false",)))


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
        wide = x.size > np.iinfo(np.int32).max
        I = np.int64 if wide else np.int32
        mod = _module(a.dtype, R, op, wide)
        grid = (-(-pieces // BLOCK),)
        totals = empty((pieces,), R)
        if P > 1:
            mod.get_function("dptx_scan_totals")(grid, (BLOCK,), [
                x, I(L), I(P), I(pieces), totals])
            mod.get_function("dptx_scan_offsets")((-(-rows // BLOCK),), (BLOCK,), [
                totals, I(P), I(rows)])
        mod.get_function("dptx_scan_pieces")(grid, (BLOCK,), [
            x, I(L), I(P), I(pieces), totals, result])
    result = result.swapaxes(axis, -1) if a.ndim > 1 else result.reshape(a.shape)
    if out is not None:
        return outputs.store(out, result, f"cum{op}")
    return result if result._contiguous else result.copy()


def cumsum(a, axis=None, dtype=None, out=None) -> ndarray:
    """numpy.cumsum: the running sum along ``axis`` (of the flattened array by default), in
    numpy's type (a platform integer for small integers and booleans)."""
    return _scan(a, axis, dtype, out, "sum")


def cumprod(a, axis=None, dtype=None, out=None) -> ndarray:
    """numpy.cumprod: the running product along ``axis``, as ``cumsum``."""
    return _scan(a, axis, dtype, out, "prod")
