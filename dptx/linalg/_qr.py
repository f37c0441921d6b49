"""numpy.linalg.qr on the devices: LAPACK's unblocked Householder QR (geqr2: each column's
reflector from larfg, beta = -sign(alpha) |x|, applied to the columns right of it), then Q
formed from the reflectors as org2r forms it, a block per matrix of the stack, one launch
each. The reflectors' signs are LAPACK's, so Q and R are numpy's to rounding (its blocked
code orders the sums differently); modes 'reduced', 'complete', 'r' and 'raw' as numpy's."""
from __future__ import annotations

import collections

import numpy as np

from ..runtime.ndarray import asarray, empty
from .._core.elementwise import KernelCache, c_type
from ._lu import _THREADS, _matrices, _type
from .._creation.matrices import triu
from ..runtime.module import RawModule
from . import _library

__all__ = ["qr"]

QRResult = collections.namedtuple("QRResult", ["Q", "R"])
_kernels = KernelCache()

# H = I - tau v v^T (v[0] = 1, v[1:] in column c below row r0) applied from the left to
# columns j0.. of M (rows r0..): a thread per column, its lanes on neighbouring columns (the
# CPU executor's vector code), the rows in order
_REFLECT = r"""
__device__ void reflect(T_* M, long long ld, long long rows, long long r0, long long c,
                        long long j0, long long cols, T_ tau, int t, int nt) {
    if (tau == (T_)0) return;
    for (long long j = j0 + t; j < cols; j += nt) {
        T_ w = M[r0 * ld + j];
        for (long long r = r0 + 1; r < rows; r++) w += M[r * ld + c] * M[r * ld + j];
        w *= tau;
        M[r0 * ld + j] -= w;
        for (long long r = r0 + 1; r < rows; r++) M[r * ld + j] -= M[r * ld + c] * w;
    }
}
"""


def _source(T: np.dtype) -> str:
    t = c_type(T)
    hypot, sqrt, copysign = (("hypotf", "sqrtf", "copysignf") if T == np.float32 else
                             ("hypot", "sqrt", "copysign"))
    return f"typedef {t} T_;\n" + _REFLECT + f'''
extern "C" __global__ void dptx_geqr2(T_* __restrict__ A, T_* __restrict__ tau, long long m,
                                      long long n) {{
    // one block per matrix z: A (m x n, row-major) becomes R on and above the diagonal and
    // the reflectors' v below it; tau[z * k + i] the i-th reflector's factor
    const long long z = blockIdx.x, k = m < n ? m : n;
    A += z * m * n;
    tau += z * k;
    __shared__ T_ part[{_THREADS}];
    __shared__ T_ s_tau, s_scale, s_beta;
    const int t = threadIdx.y * 32 + threadIdx.x, nt = 32 * blockDim.y;
    for (long long i = 0; i < k; i++) {{
        // larfg: the norm of the column below the diagonal
        T_ s = 0;
        for (long long r = i + 1 + t; r < m; r += nt) s += A[r * n + i] * A[r * n + i];
        part[t] = s;
        __syncthreads();
        for (int h = nt / 2; h > 0; h >>= 1) {{
            if (t < h) part[t] += part[t + h];
            __syncthreads();
        }}
        if (t == 0) {{
            const T_ alpha = A[i * n + i], xnorm = {sqrt}(part[0]);
            if (xnorm == (T_)0) {{ s_tau = 0; s_scale = 1; s_beta = alpha; }}
            else {{
                const T_ beta = -{copysign}({hypot}(alpha, xnorm), alpha);
                s_tau = (beta - alpha) / beta;
                s_scale = (T_)1 / (alpha - beta);
                s_beta = beta;
            }}
        }}
        __syncthreads();
        const T_ ti = s_tau, scale = s_scale, beta = s_beta;
        if (ti != (T_)0)
            for (long long r = i + 1 + t; r < m; r += nt) A[r * n + i] *= scale;
        __syncthreads();
        reflect(A, n, m, i, i, i + 1, n, ti, t, nt);
        __syncthreads();
        if (t == 0) {{ A[i * n + i] = beta; tau[i] = ti; }}
        __syncthreads();
    }}
}}

extern "C" __global__ void dptx_org2r(T_* __restrict__ Q, const T_* __restrict__ tau,
                                      long long m, long long q, long long k) {{
    // Q (m x q, row-major) holds the reflectors in its first k columns; it becomes the
    // product of the reflectors' first q columns, as org2r forms it
    const long long z = blockIdx.x;
    Q += z * m * q;
    tau += z * k;
    const int t = threadIdx.y * 32 + threadIdx.x, nt = 32 * blockDim.y;
    for (long long j = k; j < q; j++)           // columns k..q-1: the unit matrix's
        for (long long r = t; r < m; r += nt) Q[r * q + j] = (r == j) ? (T_)1 : (T_)0;
    __syncthreads();
    for (long long i = k - 1; i >= 0; i--) {{
        const T_ ti = tau[i];
        if (i < q - 1) reflect(Q, q, m, i, i, i + 1, q, ti, t, nt);
        __syncthreads();
        for (long long r = i + 1 + t; r < m; r += nt) Q[r * q + i] *= -ti;
        for (long long r = t; r < i; r += nt) Q[r * q + i] = 0;
        if (t == 0) Q[i * q + i] = (T_)1 - ti;
        __syncthreads();
    }}
}}
'''


def _module(T: np.dtype) -> RawModule:
    return _kernels.get(("qr", str(T)), lambda: RawModule(_source(T), options=("--fmad=false",)))


_MODES = ("reduced", "complete", "r", "raw")


def qr(a, mode="reduced"):
    """numpy.linalg.qr: Q with orthonormal columns and upper triangular R with a = Q R, for
    each matrix of a stack; ``mode`` 'reduced' (Q m x k, R k x n), 'complete' (Q m x m,
    R m x n), 'r' (R alone) or 'raw' (numpy's (h, tau): the reflectors transposed)."""
    if mode not in _MODES:
        raise ValueError(f"Unrecognized mode '{mode}'")
    a = asarray(a)
    _matrices(a)
    T = _type(a)
    if mode != "raw" and _library.enabled():
        got = _library.qr(a, T, mode)
        return got if mode == "r" else QRResult(*got)
    m, n = a.shape[-2:]
    k = min(m, n)
    stack = a.shape[:-2]
    count = int(np.prod(stack, dtype=np.int64))
    A = empty(a.shape, T)
    A[...] = a
    tau = empty(stack + (k,), T)
    mod = _module(T)
    block = (32, _THREADS // 32)
    if count and k:
        mod.get_function("dptx_geqr2")((count,), block, (A, tau, np.int64(m), np.int64(n)))
    if mode == "raw":
        axes = tuple(range(len(stack))) + (A.ndim - 1, A.ndim - 2)
        return A.transpose(axes).copy(), tau
    rows = m if mode == "complete" else k
    R = triu(A[..., :rows, :])
    if mode == "r":
        return R
    q = m if mode == "complete" else k
    Q = empty(stack + (m, q), T)
    if Q.size:
        Q[..., :k] = A[..., :k]
        mod.get_function("dptx_org2r")((count,), block,
                                       (Q, tau, np.int64(m), np.int64(q), np.int64(k)))
    return QRResult(Q, R)
