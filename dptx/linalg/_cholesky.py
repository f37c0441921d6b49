"""numpy.linalg.cholesky on the devices: a block per matrix of the stack factors it in one
launch (right-looking: each column's pivot square-rooted, the column below divided by it,
the trailing lower triangle updated), as LAPACK's potrf defines the result: L lower
triangular with a positive diagonal and zeros above (``upper=True``: its transpose), and
numpy's LinAlgError where a pivot is not positive, the matrix then not positive
definite (a wait for one flag per matrix, as for solve). Only the lower triangle is read,
as LAPACK reads it."""
from __future__ import annotations

import numpy as np

from ..runtime.ndarray import asarray, empty, ndarray
from .._core.elementwise import KernelCache, c_type
from ._lu import _THREADS, _flagged, _square, _stack, _type
from ..runtime.module import RawModule
from . import _library

__all__ = ["cholesky"]

_kernels = KernelCache()


def _kernel(T: np.dtype):
    """The factorization of a stack, a block of 32 x 8 threads per matrix (a warp per row
    of the trailing update, its lanes along the row: vector code on the CPU executor)."""
    t = c_type(T)
    src = f'''
extern "C" __global__ void dptx_cholesky(
        {t}* __restrict__ A, int* __restrict__ info, long long n) {{
    // one block per matrix z: A (n x n, row-major) becomes L in place; info[z]: 0, or the
    // first column (1-based) whose pivot was not positive
    const long long z = blockIdx.x;
    A += z * n * n;
    __shared__ int failed;
    const int lane = threadIdx.x, row = threadIdx.y, rows = blockDim.y;
    const int t = row * 32 + lane, nt = 32 * rows;
    if (t == 0) failed = 0;
    __syncthreads();
    for (long long c = 0; c < n; c++) {{
        const {t} pivot = A[c * n + c];
        if (pivot <= 0) {{       // (a NaN goes on, as numpy's LAPACK lets it: NaNs result)
            if (t == 0) failed = (int)(c + 1);
            break;
        }}
        const {t} d = sqrt(pivot);
        __syncthreads();
        if (t == 0) A[c * n + c] = d;
        for (long long i = c + 1 + t; i < n; i += nt) A[i * n + c] /= d;
        __syncthreads();
        // the trailing lower triangle: A[i, j] -= L[i, c] L[j, c] for c < j <= i
        for (long long i = c + 1 + row; i < n; i += rows) {{
            const {t} l = A[i * n + c];
            for (long long j = c + 1 + lane; j <= i; j += 32) A[i * n + j] -= l * A[j * n + c];
        }}
        __syncthreads();
    }}
    __syncthreads();
    if (t == 0) info[z] = failed;
    // zeros above the diagonal, as numpy returns L
    for (long long i = row; i < n; i += rows)
        for (long long j = i + 1 + lane; j < n; j += 32) A[i * n + j] = 0;
}}'''
    return RawModule(src, options=("--fmad=false",)).get_function("dptx_cholesky")


def cholesky(a, /, *, upper=False) -> ndarray:
    """numpy.linalg.cholesky: L with a = L L^T for each matrix of the stack (``upper``: L^T)."""
    a = asarray(a)
    _square(a)
    T = _type(a)
    if _library.enabled():
        return _library.cholesky(a, T, upper)
    n = a.shape[-1]
    L = _stack(a, a.shape, T)
    count = int(np.prod(a.shape[:-2], dtype=np.int64))
    if L.size:
        info = empty((count,), np.int32)
        kernel = _kernels.get(("cholesky", str(T)), lambda: _kernel(T))
        kernel((count,), (32, _THREADS // 32), (L, info, np.int64(n)))
        if _flagged(info):
            raise np.linalg.LinAlgError("Matrix is not positive definite")
    if upper:
        axes = tuple(range(L.ndim - 2)) + (L.ndim - 1, L.ndim - 2)
        return L.transpose(axes).copy()
    return L
