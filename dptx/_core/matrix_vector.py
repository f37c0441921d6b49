"""Products with a vector, for ``matmul``/``dot`` (``products.matmul`` hands them here): a
16 x 16 tile of the matrix-matrix kernel would leave 15 of every 16 threads idle.

- matrix @ vector (and vector @ vector, one row): a warp per row, its lanes along the row
  (each step one contiguous read), each lane's sum in order, then a tree of shuffles;
- vector @ matrix: a thread per output column, walking a piece of rows in order (each step
  of a warp reads a contiguous piece of a row), the pieces' sums then added in order.

Integers narrower than 32 bits accumulate in 32 (shuffles move 32-bit words) and wrap to the
result type at the end, which is what numpy's wrapping arithmetic gives.
"""
from __future__ import annotations

import numpy as np

from ..runtime.ndarray import empty, ndarray
from .elementwise import KernelCache, c_type, with_type_headers
from ..runtime.module import RawModule
from ..runtime.stream import stream_for

BLOCK = 256
_kernels = KernelCache()

_SOURCE = r"""
extern "C" __global__ void dptx_matvec(const R_* __restrict__ a, const R_* __restrict__ v,
                                       R_* __restrict__ out, I_ N, I_ K) {
    const long long w = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (w >= N) return;                      // a whole warp leaves together
    const int lane = threadIdx.x & 31;
    S_ s = 0;
    #pragma unroll 1
    for (I_ k = lane; k < K; k += 32) s += (S_)(a[(long long)w * K + k] * v[k]);
    for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
    if (lane == 0) out[w] = (R_)s;
}
extern "C" __global__ void dptx_vecmat(const R_* __restrict__ v, const R_* __restrict__ m,
                                       S_* __restrict__ partial, I_ K, I_ N, I_ rows) {
    // block (x, p): outputs x * blockDim.x.., rows p * rows.. in order
    const long long n = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (n >= N) return;
    const I_ k0 = (I_)blockIdx.y * rows;
    S_ s = 0;
    #pragma unroll 1
    for (I_ i = 0; i < rows && k0 + i < K; i++)
        s += (S_)(v[k0 + i] * m[(long long)(k0 + i) * N + n]);
    partial[(long long)blockIdx.y * N + n] = s;
}
extern "C" __global__ void dptx_vecmat_final(const S_* __restrict__ partial,
                                             R_* __restrict__ out, I_ N, I_ P) {
    const long long n = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (n >= N) return;
    S_ s = partial[n];
    for (I_ p = 1; p < P; p++) s += partial[(long long)p * N + n];
    out[n] = (R_)s;
}
"""


def _accumulator(R: np.dtype) -> np.dtype:
    if R.kind in "iu" and R.itemsize < 4:
        return np.dtype(np.uint32 if R.kind == "u" else np.int32)
    return R


def _module(R: np.dtype, wide: bool) -> RawModule:
    S = c_type(_accumulator(R))
    return _kernels.get(("matvec", str(R), wide), lambda: RawModule(with_type_headers(
        f"typedef {c_type(R)} R_;\ntypedef {S} S_;\n"
        f"typedef {'long long' if wide else 'int'} I_;\n" + _SOURCE),
        options=("--fmad=false",)))


def matvec(a: ndarray, v: ndarray, out: ndarray) -> None:
    """out[i] = sum over k of a[i, k] * v[k]: C-contiguous operands of out's type."""
    N, K = a.shape
    wide = N * K > np.iinfo(np.int32).max
    I = np.int64 if wide else np.int32
    warps = BLOCK // 32
    _module(out.dtype, wide).get_function("dptx_matvec")(
        (-(-N // warps),), (BLOCK,), [a, v, out, I(N), I(K)])


def vecmat(v: ndarray, m: ndarray, out: ndarray, rows: int) -> None:
    """out[j] = sum over k of v[k] * m[k, j]: C-contiguous operands of out's type. The rows
    in pieces of ``rows`` (the caller's: ``reduction_kernel.column_pieces``), each piece's sums then
    added in order: a chunk of blocks reads only its rows of the matrix."""
    K, N = m.shape
    wide = N * K > np.iinfo(np.int32).max
    I = np.int64 if wide else np.int32
    P = max(1, -(-K // rows))
    mod = _module(out.dtype, wide)
    partial = empty((P * N,), _accumulator(out.dtype))
    with stream_for(None).together():       # both launches in one message
        mod.get_function("dptx_vecmat")((-(-N // BLOCK), P), (BLOCK,),
                                        [v, m, partial, I(K), I(N), I(rows)])
        mod.get_function("dptx_vecmat_final")((-(-N // BLOCK),), (BLOCK,),
                                              [partial, out, I(N), I(P)])
