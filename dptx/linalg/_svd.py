"""numpy.linalg.svd on the devices: one-sided Jacobi (Hestenes), a block per matrix of the
stack, one launch. The columns of a tall matrix (of its transpose for a wide one) are
rotated in pairs until every pair is orthogonal to the type's precision, n/2 disjoint pairs
at a time in the round-robin order, a warp per pair (its three dot products by warp
shuffles, the rotation as sym.schur2 gives it for the pair's Gram matrix), the rotations
gathered in V. The singular values are the columns' norms, descending as numpy's; U is the
normalized columns, made orthonormal and completed (a zero singular value's column, or
``full_matrices``' extra ones) by a Householder QR of them. Jacobi's singular values are
accurate to the type's precision relative to the largest, as LAPACK's; singular vectors
are unique up to sign (and within repeated values), so they are numpy's in what the
factorization defines: a = U diag(S) Vh with U and Vh orthonormal."""
from __future__ import annotations

import collections

import numpy as np

from .._core import reductions, ufuncs
from .._sorting import sorting
from ..runtime.ndarray import asarray, empty
from ._eigh import MAX_SWEEPS, ROUND_ROBIN, warps_for
from .._core.elementwise import KernelCache, c_type
from .._indexing.index_tricks import take_along_axis
from .._manipulation.joining import concatenate
from ._lu import _flagged, _matrices, _type
from .._creation.matrices import eye
from ..runtime.module import RawModule
from ._qr import qr
from . import _library

__all__ = ["svd"]

SVDResult = collections.namedtuple("SVDResult", ["U", "S", "Vh"])
_kernels = KernelCache()

_BODY = ROUND_ROBIN + r"""

__device__ __forceinline__ T_ warp_sum(T_ v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

extern "C" __global__ void dptx_svd_jacobi(T_* __restrict__ B, T_* __restrict__ W,
        int* __restrict__ info, long long r, long long c, long long m, int max_sweeps,
        T_ eps) {
    // one block per matrix z: the r rows of B (r x c: the columns of a tall matrix) are
    // rotated in pairs until orthogonal; W (r x r) gathers the rotations (it ends as V^T);
    // info[z]: 0 when the sweeps converged, else 1
    const long long z = blockIdx.x, npairs = m / 2;
    B += z * r * c; W += z * r * r;
    __shared__ int rotated;
    const int lane = threadIdx.x, warp = threadIdx.y, warps = blockDim.y;
    for (long long i = warp; i < r; i += warps)
        for (long long j = lane; j < r; j += 32) W[i * r + j] = (i == j) ? (T_)1 : (T_)0;
    int converged = 0;
    for (int sweep = 0; sweep < max_sweeps; sweep++) {
        if (warp == 0 && lane == 0) rotated = 0;
        __syncthreads();
        for (long long s = 0; s < m - 1; s++) {
            // a warp per pair; the loop's bound the same for every warp (the shuffles must
            // not be under control that differs between threads: the CPU executor's warp
            // form), a warp past the last pair summing nothing
            for (long long k0 = 0; k0 < npairs; k0 += warps) {
                const long long k = k0 + warp;
                const long long p = k < npairs ? member(k, s, m, 0) : r;
                const long long q = k < npairs ? member(k, s, m, 1) : r;
                const int valid = p < r && q < r;
                const long long len = valid ? c : 0;
                T_ a = 0, b = 0, g = 0;
                for (long long j = lane; j < len; j += 32) {
                    const T_ x = B[p * c + j], y = B[q * c + j];
                    a += x * x; b += y * y; g += x * y;
                }
                a = warp_sum(a); b = warp_sum(b); g = warp_sum(g);
                if (!valid || g == (T_)0 || FABS_(g) <= eps * SQRT_(a * b)) continue;
                if (lane == 0) rotated = 1;
                const T_ zeta = (b - a) / (2 * g);
                const T_ t = (zeta >= 0 ? (T_)1 : (T_)-1) /
                             (FABS_(zeta) + SQRT_((T_)1 + zeta * zeta));
                const T_ cs = (T_)1 / SQRT_((T_)1 + t * t), sn = t * cs;
                for (long long j = lane; j < c; j += 32) {
                    const T_ x = B[p * c + j], y = B[q * c + j];
                    B[p * c + j] = cs * x - sn * y;
                    B[q * c + j] = sn * x + cs * y;
                }
                for (long long j = lane; j < r; j += 32) {
                    const T_ x = W[p * r + j], y = W[q * r + j];
                    W[p * r + j] = cs * x - sn * y;
                    W[q * r + j] = sn * x + cs * y;
                }
            }
            __syncthreads();
        }
        if (!rotated) { converged = 1; break; }
        __syncthreads();
    }
    if (warp == 0 && lane == 0) info[z] = converged ? 0 : 1;
}
"""


def _source(T: np.dtype) -> str:
    sqrt, fabs = ("sqrtf", "fabsf") if T == np.float32 else ("sqrt", "fabs")
    return f"typedef {c_type(T)} T_;\n#define SQRT_ {sqrt}\n#define FABS_ {fabs}\n" + _BODY


def _orthonormal(Q_of, columns):
    """``columns`` (orthonormal or zero columns) as orthonormal columns, completed to
    ``Q_of``'s mode by a Householder QR: each nonzero column is Q's (its sign from R), a
    zero one Q's completion."""
    Q, R = qr(columns, mode=Q_of)
    k = columns.shape[-1]
    d = R.diagonal(0, -2, -1)[..., :k]
    sign = ufuncs.where(ufuncs.apply(np.less, d, 0), -1.0, 1.0).astype(Q.dtype)
    return ufuncs.apply(np.multiply, Q[..., :k], sign[..., None, :]), Q[..., k:]


def svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    """numpy.linalg.svd: (U, S, Vh) with a = U diag(S) Vh for each matrix of the stack, S
    descending; S alone without ``compute_uv``. ``hermitian`` is accepted and computed as a
    general matrix (the same values; numpy's vectors differ by sign there too)."""
    a = asarray(a)
    _matrices(a)
    T = _type(a)
    if _library.enabled():
        got = _library.svd(a, T, full_matrices, compute_uv)
        return SVDResult(*got) if compute_uv else got
    M, N = a.shape[-2:]
    wide = M < N
    rows, length = (M, N) if wide else (N, M)      # the rotated rows: a's (wide) or columns
    k = min(M, N)
    stack = a.shape[:-2]
    count = int(np.prod(stack, dtype=np.int64))
    B = empty(stack + (rows, length), T)
    B[...] = a if wide else a.swapaxes(-1, -2)
    W = empty(stack + (rows, rows), T)
    if count and rows and length:
        m = rows + rows % 2
        info = empty((count,), np.int32)
        kernel = _kernels.get(("svd", str(T)), lambda: RawModule(
            _source(T), options=("--fmad=false",)).get_function("dptx_svd_jacobi"))
        eps = 4 * max(1.0, float(np.sqrt(length))) * np.finfo(T).eps
        kernel((count,), (32, warps_for(rows)), (B, W, info, np.int64(rows), np.int64(length),
                                       np.int64(m), np.int32(MAX_SWEEPS), T.type(eps)))
        if _flagged(info):
            raise np.linalg.LinAlgError("SVD did not converge")
    else:
        W[...] = eye(rows, dtype=T)         # (no rotations: an empty matrix's)
    norms = ufuncs.apply(np.sqrt, reductions.sum_(ufuncs.apply(np.multiply, B, B), axis=-1))
    order = sorting.argsort(ufuncs.apply(np.negative, norms), axis=-1)   # descending, stable
    S = take_along_axis(norms, order, axis=-1)[..., :k]
    if not compute_uv:
        return S
    B = take_along_axis(B, order[..., :, None], axis=-2)[..., :k, :]
    W = take_along_axis(W, order[..., :, None], axis=-2)
    # the rotated rows over their norms: orthonormal, or zero for a zero singular value
    safe = ufuncs.where(ufuncs.apply(np.equal, S, 0), 1.0, S).astype(T)
    unit = ufuncs.where(ufuncs.apply(np.equal, S, 0)[..., :, None], 0.0,
                        ufuncs.apply(np.true_divide, B, safe[..., :, None])).astype(T)
    mode = "complete" if full_matrices else "reduced"
    left, extra = _orthonormal(mode, unit.swapaxes(-1, -2))      # length x k (and more)
    left = concatenate([left, extra], axis=-1) if full_matrices and extra.shape[-1] else left
    right = W if full_matrices or rows == k else W[..., :k, :]    # V^T of the rotated side
    if wide:        # a^T = left S right: a = right^T S left^T
        return SVDResult(right.swapaxes(-1, -2).copy(), S, left.swapaxes(-1, -2).copy())
    return SVDResult(left, S, right)
