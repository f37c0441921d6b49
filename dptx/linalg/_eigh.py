"""numpy.linalg.eigh and eigvalsh on the devices: the cyclic Jacobi method, a block per
symmetric matrix of the stack, one launch. Each sweep visits every pair (p, q) once in the
round-robin order, n/2 disjoint pairs at a time, each pair's rotation (Golub and Van Loan's
sym.schur2) zeroing its off-diagonal entry: the rows rotated in place, the columns into a
second buffer (row by row: every access along rows) and copied back, and the rotations
gathered in the transposed eigenvector matrix. Sweeps end when the off-diagonal part is
below a few n eps of the whole (``_TOLERANCE``); numpy's LinAlgError if 60 sweeps do not get
there. Eigenvalues ascend as numpy's (a device sort); eigenvectors are unique up to sign
(and within repeated eigenvalues), so they agree with numpy's LAPACK in what the
factorization defines: a v = v w, v orthonormal."""
from __future__ import annotations

import collections

import numpy as np

from .._sorting import sorting
from .._core import ufuncs
from ..runtime.ndarray import asarray, empty
from .._core.elementwise import KernelCache, c_type
from .._indexing.index_tricks import take_along_axis
from ._lu import _THREADS, _flagged, _square, _type
from .._creation.matrices import tril, triu
from ..runtime.module import RawModule
from . import _library

__all__ = ["eigh", "eigvalsh"]

EighResult = collections.namedtuple("EighResult", ["eigenvalues", "eigenvectors"])
MAX_SWEEPS = 60
# Sweeps end when the off-diagonal part's norm is below _TOLERANCE n eps of the whole: what a
# rotation leaves of an entry it zeroes is rounding, up to about 2 eps of the diagonal's
# entries, so a bound tighter than n eps may never be reached (and Weyl's inequality bounds
# the eigenvalues' errors by that norm: LAPACK's are of that order too)
_TOLERANCE = 4


def warps_for(n: int) -> int:
    """Warps of a block that works on an n x n matrix (_svd's too): fewer for small ones,
    whose other warps would idle at every barrier (1000 8 x 8 matrices took 1.5 s with 8
    warps each, 0.48 s with one)."""
    return 1 if n <= 32 else 4 if n <= 128 else _THREADS // 32
_kernels = KernelCache()


def _source(T: np.dtype) -> str:
    sqrt, fabs = ("sqrtf", "fabsf") if T == np.float32 else ("sqrt", "fabs")
    return (f"typedef {c_type(T)} T_;\n#define SQRT_ {sqrt}\n#define FABS_ {fabs}\n"
            f"#define THREADS_ {_THREADS}\n" + _BODY)


# The round-robin schedule of m (even) indices, m - 1 steps of m / 2 disjoint pairs that meet
# every pair once: index 0 fixed, the others rotating (_svd's too)
ROUND_ROBIN = r"""
__device__ __forceinline__ long long member(long long k, long long s, long long m, int second) {
    const long long r = m - 1;
    if (k == 0) return second ? 1 + s % r : 0;
    return 1 + (second ? (s - k + r) % r : (s + k) % r);
}
"""

_BODY = ROUND_ROBIN + r"""

extern "C" __global__ void dptx_jacobi(T_* __restrict__ A, T_* __restrict__ A2,
        T_* __restrict__ W, T_* __restrict__ rot, long long* __restrict__ partner,
        int* __restrict__ info, long long n, long long m, int max_sweeps, T_ eps) {
    // one block per matrix z: A (n x n, symmetric) becomes diagonal, W = V^T (rows: the
    // eigenvectors); A2 is scratch of A's size; rot: 2 per column (its cosine and signed
    // sine), partner: per column; info[z] 0 when the sweeps converged, else 1
    const long long z = blockIdx.x, npairs = m / 2;
    A += z * n * n; A2 += z * n * n; W += z * n * n; rot += z * 2 * m; partner += z * m;
    __shared__ T_ part[THREADS_], whole[THREADS_];
    __shared__ int done;
    const int t = threadIdx.y * 32 + threadIdx.x, nt = 32 * blockDim.y;
    // loops over a row's entries run along the lanes (threadIdx.x), rows along the warps
    // (threadIdx.y): no division per entry, and a warp's accesses side by side (the CPU
    // executor's vector code)
    const int lane = threadIdx.x, warp = threadIdx.y, warps = blockDim.y;
    for (long long i = warp; i < n; i += warps)
        for (long long j = lane; j < n; j += 32) W[i * n + j] = (i == j) ? (T_)1 : (T_)0;
    int converged = 0;
    for (int sweep = 0; sweep <= max_sweeps; sweep++) {
        T_ off = 0, all = 0;
        for (long long i = warp; i < n; i += warps)
            for (long long j = lane; j < n; j += 32) {
                const T_ v = A[i * n + j];
                all += v * v;
                if (i != j) off += v * v;
            }
        part[t] = off; whole[t] = all;
        __syncthreads();
        for (int h = nt / 2; h > 0; h >>= 1) {
            if (t < h) { part[t] += part[t + h]; whole[t] += whole[t + h]; }
            __syncthreads();
        }
        if (t == 0) done = part[0] <= eps * eps * whole[0];
        __syncthreads();
        if (done) { converged = 1; break; }
        if (sweep == max_sweeps) break;
        for (long long s = 0; s < m - 1; s++) {
            // the pairs' rotations (sym.schur2), per column: cosine, signed sine, partner
            for (long long k = t; k < npairs; k += nt) {
                const long long p = member(k, s, m, 0), q = member(k, s, m, 1);
                T_ c = 1, sn = 0;
                if (p < n && q < n && A[p * n + q] != (T_)0) {
                    const T_ tau = (A[q * n + q] - A[p * n + p]) / (2 * A[p * n + q]);
                    const T_ tt = (tau >= 0 ? (T_)1 : (T_)-1) /
                                  (FABS_(tau) + SQRT_((T_)1 + tau * tau));
                    c = (T_)1 / SQRT_((T_)1 + tt * tt);
                    sn = tt * c;
                }
                rot[2 * p] = c; rot[2 * p + 1] = -sn; partner[p] = q;
                rot[2 * q] = c; rot[2 * q + 1] = sn; partner[q] = p;
            }
            __syncthreads();
            // rows: A <- J^T A in place, and W <- J^T W (a pair's two rows per warp)
            for (long long k = warp; k < npairs; k += warps) {
                const long long p = member(k, s, m, 0), q = member(k, s, m, 1);
                if (p >= n || q >= n) continue;
                const T_ c = rot[2 * p], sn = rot[2 * q + 1];
                if (sn == (T_)0) continue;
                for (long long j = lane; j < n; j += 32) {
                    const T_ ap = A[p * n + j], aq = A[q * n + j];
                    A[p * n + j] = c * ap - sn * aq;
                    A[q * n + j] = sn * ap + c * aq;
                    const T_ wp = W[p * n + j], wq = W[q * n + j];
                    W[p * n + j] = c * wp - sn * wq;
                    W[q * n + j] = sn * wp + c * wq;
                }
            }
            __syncthreads();
            // columns: A2 = A J, row by row (each entry from its column and its partner's)
            for (long long i = warp; i < n; i += warps)
                for (long long j = lane; j < n; j += 32) {
                    const long long r = partner[j];
                    A2[i * n + j] = r < n ? rot[2 * j] * A[i * n + j] +
                                            rot[2 * j + 1] * A[i * n + r] : A[i * n + j];
                }
            __syncthreads();
            // back into A (a pointer swap would hide from the CPU executor which buffer
            // each access reads: every access would then take its per-lane path)
            for (long long i = warp; i < n; i += warps)
                for (long long j = lane; j < n; j += 32) A[i * n + j] = A2[i * n + j];
            __syncthreads();
        }
    }
    if (t == 0) info[z] = converged ? 0 : 1;
}
"""


def _decompose(a, UPLO: str, vectors: bool):
    UPLO = UPLO.upper()
    if UPLO not in ("L", "U"):
        raise ValueError("UPLO argument must be 'L' or 'U'")
    a = asarray(a)
    _square(a)
    T = _type(a)
    if _library.enabled():
        got = _library.eigh(a, T, UPLO, vectors)
        return EighResult(*got) if vectors else got
    n = a.shape[-1]
    stack = a.shape[:-2]
    count = int(np.prod(stack, dtype=np.int64))
    # numpy's LAPACK reads one triangle: the matrix it stands for
    half = tril(a) if UPLO == "L" else triu(a)
    strict = tril(a, -1) if UPLO == "L" else triu(a, 1)
    full = ufuncs.apply(np.add, half, strict.swapaxes(-1, -2))
    A = empty(a.shape, T)
    A[...] = full
    W = empty(a.shape, T)
    if count and n:
        m = n + n % 2
        info = empty((count,), np.int32)
        kernel = _kernels.get(("jacobi", str(T)), lambda: RawModule(
            _source(T), options=("--fmad=false",)).get_function("dptx_jacobi"))
        kernel((count,), (32, warps_for(n)),
               (A, empty(a.shape, T), W, empty((count, 2 * m), T),
                empty((count, m), np.int64), info, np.int64(n), np.int64(m),
                np.int32(MAX_SWEEPS), T.type(_TOLERANCE * n * np.finfo(T).eps)))
        if _flagged(info):
            raise np.linalg.LinAlgError("Eigenvalues did not converge")
    values = A.diagonal(0, -2, -1)
    order = sorting.argsort(values, axis=-1)
    w = take_along_axis(values, order, axis=-1)
    if not vectors:
        return w
    # W's rows are the eigenvectors: ordered as their values, then made columns
    v = take_along_axis(W, order[..., :, None], axis=-2).swapaxes(-1, -2).copy()
    return EighResult(w, v)


def eigh(a, UPLO="L"):
    """numpy.linalg.eigh: (eigenvalues ascending, eigenvectors as columns) of each symmetric
    matrix of the stack, from its lower (or ``UPLO='U'``: upper) triangle."""
    return _decompose(a, UPLO, True)


def eigvalsh(a, UPLO="L"):
    """numpy.linalg.eigvalsh: the eigenvalues of each symmetric matrix, ascending."""
    return _decompose(a, UPLO, False)
