"""LU factorization on the devices, and numpy.linalg's routines made of it: ``solve``, ``inv``,
``det``, ``slogdet``. One launch per call: a block per matrix of the stack factors it with
partial pivoting (LAPACK's getrf rule: the first row of largest magnitude, a pivot of exactly
0 reported, not divided by), carrying the right-hand sides along, then solves by back
substitution; the determinant's sign and log magnitude are summed as numpy sums them. Results
agree with numpy's LAPACK to rounding (the order of the updates differs from its blocked
code). A singular matrix is numpy's ``LinAlgError`` for solve and inv (a wait for one flag
per matrix, as CuPy's check), a determinant of 0 otherwise."""
from __future__ import annotations

import numpy as np

from .._core import ufuncs
from .._core.elementwise import KernelCache, c_type
from .._creation.matrices import eye
from .._manipulation.views import broadcast_to
from ..runtime.module import RawModule
from ..runtime.ndarray import asarray, empty, ndarray
from . import _library

__all__ = ["det", "inv", "slogdet", "solve"]

_kernels = KernelCache()
_THREADS = 256


def _kernel(T: np.dtype):
    t = c_type(T)
    src = f'''
extern "C" __global__ void dptx_lu(
        {t}* __restrict__ A, {t}* __restrict__ B, int* __restrict__ info,
        {t}* __restrict__ sign, {t}* __restrict__ logdet, long long n, long long k, int det) {{
    // one block per matrix z of the stack: A (n x n, row-major) is factored in place, L
    // (unit) below the diagonal and U on and above; B (n x k) is overwritten by A^-1 B;
    // info[z]: 0, or the first column (1-based) whose pivot was exactly 0
    const long long z = blockIdx.x;
    A += z * n * n;
    B += z * n * k;
    __shared__ {t} best[{_THREADS}];
    __shared__ long long where[{_THREADS}];
    __shared__ int singular, swaps;
    // a warp per row of a block of 32 x {_THREADS // 32}: threadIdx.y is the same for a
    // warp's lanes (the CPU executor then runs the row loops as vector code)
    const int lane = threadIdx.x, row = threadIdx.y, rows = blockDim.y;
    const int t = row * 32 + lane, nt = 32 * rows;
    if (t == 0) {{ singular = 0; swaps = 0; }}
    __syncthreads();
    for (long long c = 0; c < n; c++) {{
        // the pivot: the first row i >= c of largest |A[i, c]|
        {t} v = -1;
        long long w = c;
        for (long long i = c + t; i < n; i += nt) {{
            const {t} a = fabs(A[i * n + c]);
            if (a > v) {{ v = a; w = i; }}
        }}
        best[t] = v;
        where[t] = w;
        __syncthreads();
        for (int s = nt / 2; s > 0; s >>= 1) {{
            if (t < s) {{
                const {t} o = best[t + s];
                const long long ow = where[t + s];
                if (o > best[t] || (o == best[t] && ow < where[t])) {{ best[t] = o; where[t] = ow; }}
            }}
            __syncthreads();
        }}
        const long long p = where[0];
        const {t} pivot = A[p * n + c];
        __syncthreads();
        if (pivot == 0) {{       // the column is 0 from c down: nothing to eliminate
            if (t == 0 && !singular) singular = (int)(c + 1);
            continue;
        }}
        if (p != c) {{
            for (long long j = t; j < n; j += nt) {{
                const {t} x = A[c * n + j]; A[c * n + j] = A[p * n + j]; A[p * n + j] = x;
            }}
            for (long long j = t; j < k; j += nt) {{
                const {t} x = B[c * k + j]; B[c * k + j] = B[p * k + j]; B[p * k + j] = x;
            }}
            if (t == 0) swaps++;
        }}
        __syncthreads();
        for (long long i = c + 1 + t; i < n; i += nt) A[i * n + c] /= pivot;
        __syncthreads();
        // the trailing rows, a warp's lanes along a row (consecutive columns): A's columns
        // right of c, then B's
        for (long long i = c + 1 + row; i < n; i += rows) {{
            const {t} l = A[i * n + c];
            for (long long j = c + 1 + lane; j < n; j += 32) A[i * n + j] -= l * A[c * n + j];
            for (long long j = lane; j < k; j += 32) B[i * k + j] -= l * B[c * k + j];
        }}
        __syncthreads();
    }}
    if (t == 0) {{
        info[z] = singular;
        if (det) {{
            // numpy's sum: the sign of each diagonal element, the logs of their magnitudes
            {t} s = (swaps & 1) ? -1 : 1, l = 0;
            if (singular) {{ s = 0; l = -({t})1 / ({t})0; }}
            else for (long long i = 0; i < n; i++) {{
                {t} u = A[i * n + i];
                if (u < 0) {{ s = -s; u = -u; }}
                l += log(u);
            }}
            sign[z] = s;
            logdet[z] = l;
        }}
    }}
    if (singular || k == 0) return;
    // U X = Y, from the last row up
    for (long long c = n - 1; c >= 0; c--) {{
        const {t} u = A[c * n + c];
        for (long long j = t; j < k; j += nt) B[c * k + j] /= u;
        __syncthreads();
        for (long long i = row; i < c; i += rows) {{
            const {t} a = A[i * n + c];
            for (long long j0 = 0; j0 < k; j0 += 32) {{
                const long long j = j0 + lane;
                if (j < k) B[i * k + j] -= a * B[c * k + j];
            }}
        }}
        __syncthreads();
    }}
}}'''
    return RawModule(src, options=("--fmad=false",)).get_function("dptx_lu")


def _type(*arrays) -> np.dtype:
    """numpy.linalg's computation type: float32 where every input is, else float64."""
    for a in arrays:
        if a.dtype == np.float16 or a.dtype.kind not in "biuf":
            raise TypeError(f"array type {a.dtype} is unsupported in linalg")
    return np.dtype(np.float32) if all(a.dtype == np.float32 for a in arrays) \
        else np.dtype(np.float64)


def _matrices(a: ndarray) -> None:
    """numpy.linalg's check that ``a`` is a matrix or a stack of them."""
    if a.ndim < 2:
        raise np.linalg.LinAlgError(f"{a.ndim}-dimensional array given. Array must be at "
                                    f"least two-dimensional")


def _square(a: ndarray) -> None:
    _matrices(a)
    if a.shape[-1] != a.shape[-2]:
        raise np.linalg.LinAlgError("Last 2 dimensions of the array must be square")


def _stack(a: ndarray, shape: tuple, T: np.dtype) -> ndarray:
    """A contiguous copy of ``a`` broadcast to ``shape``, in T (the kernel writes it)."""
    out = empty(shape, T)
    out[...] = broadcast_to(a, shape)
    return out


def _factor(A: ndarray, B: ndarray, det: bool):
    """Run the kernel over the stack; (info, sign, logdet) device arrays per matrix."""
    n, k = A.shape[-1], B.shape[-1]
    count = int(np.prod(A.shape[:-2], dtype=np.int64))
    T = A.dtype
    info = empty((count,), np.int32)
    sign, logdet = empty((count,), T), empty((count,), T)
    kernel = _kernels.get(("lu", str(T)), lambda: _kernel(T))
    kernel((count,), (32, _THREADS // 32), (A, B, info, sign, logdet, np.int64(n), np.int64(k),
                                  np.int32(det)))
    return info, sign, logdet


def _flagged(info: ndarray) -> bool:
    """Whether any matrix's flag is set (read back: one wait)."""
    return bool(info.size) and bool(ufuncs.apply(np.not_equal, info, 0).any().get())


def _raise_if_singular(info: ndarray) -> None:
    if _flagged(info):
        raise np.linalg.LinAlgError("Singular matrix")


def solve(a, b) -> ndarray:
    """numpy.linalg.solve: x with a @ x = b, for stacks too (``b`` is a vector where it has
    one dimension, else a stack of matrices), broadcast as numpy's."""
    a, b = asarray(a), asarray(b)
    _square(a)
    T = _type(a, b)
    n = a.shape[-1]
    vector = b.ndim == 1
    b2 = b.reshape(-1, 1) if vector else b
    if b2.ndim < 2 or b2.shape[-2] != n:
        size = b2.shape[-2] if b2.ndim >= 2 else b2.size
        raise ValueError(f"solve: Input operand 1 has a mismatch in its core dimension 0, "
                         f"with gufunc signature (m,m),(m,n)->(m,n) (size {size} is "
                         f"different from {n})")
    batch = np.broadcast_shapes(a.shape[:-2], b2.shape[:-2])
    k = b2.shape[-1]
    if _library.enabled():
        x = _library.solve(a, b2, T, batch)
        return x.reshape(batch + (n,)) if vector else x
    B = _stack(b2, batch + (n, k), T)
    if B.size and n:
        info, _, _ = _factor(_stack(a, batch + (n, n), T), B, det=False)
        _raise_if_singular(info)
    return B.reshape(batch + (n,)) if vector else B


def _inverse(a):
    """(the inverse of each matrix of the stack, each one's singularity flag or None when
    there is nothing to invert)."""
    a = asarray(a)
    _square(a)
    T = _type(a)
    n = a.shape[-1]
    B = _stack(eye(n, dtype=T), a.shape, T)
    if not B.size:
        return B, None
    info, _, _ = _factor(_stack(a, a.shape, T), B, det=False)
    return B, info


def inv(a) -> ndarray:
    """numpy.linalg.inv: the inverse of each matrix of the stack (a solve for the identity)."""
    if _library.enabled():
        a = asarray(a)
        _square(a)
        return _library.inv(a, _type(a))
    B, info = _inverse(a)
    if info is not None:
        _raise_if_singular(info)
    return B


def inv_unchecked(a) -> ndarray:
    """The inverse of each square matrix of the stack, NaN for those that cannot be inverted
    (numpy.linalg.cond's inverse: its gufunc fills a failed inversion with NaN)."""
    B, info = _inverse(a)
    if info is None:
        return B
    failed = ufuncs.apply(np.not_equal, info, 0).reshape(B.shape[:-2] + (1, 1))
    return ufuncs.where(failed, np.nan, B).astype(B.dtype)


def slogdet(a) -> tuple:
    """numpy.linalg.slogdet: (sign, log|det|) per matrix of the stack, as numpy sums them
    (0 and -inf for a singular matrix)."""
    a = asarray(a)
    _square(a)
    T = _type(a)
    n, batch = a.shape[-1], a.shape[:-2]
    count = int(np.prod(batch, dtype=np.int64))
    if _library.enabled() and n and count:
        sign, logdet = _library.slogdet(a, T)
        return sign, logdet
    if n == 0 or count == 0:
        sign, logdet = empty(batch, T), empty(batch, T)
        sign.fill(1)
        logdet.fill(0)
        return sign, logdet
    _, sign, logdet = _factor(_stack(a, a.shape, T), empty(batch + (n, 0), T), det=True)
    return sign.reshape(batch), logdet.reshape(batch)


def det(a) -> ndarray:
    """numpy.linalg.det: sign * exp(log|det|), numpy's formula."""
    a = asarray(a)
    _square(a)
    if _library.enabled() and a.size:
        return _library.det(a, _type(a))
    sign, logdet = slogdet(a)
    return ufuncs.apply(np.multiply, sign, ufuncs.apply(np.exp, logdet))
