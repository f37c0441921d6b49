"""numpy's ``matmul`` and ``dot`` on the devices: a tiled kernel for matrix products (stacks
of matrices broadcast along the grid's z), products with a vector through
``matrix_vector``."""
from __future__ import annotations

import numpy as np

from .elementwise import HALF, KernelCache, c_type, with_type_headers
from ..errors import DptxError
from . import matrix_vector, outputs, ufuncs
from .reduction_kernel import EXACT, column_pieces
from ..runtime.ndarray import asarray, ascontiguousarray, empty, may_share_memory, ndarray
from ..runtime import library_call
from ..runtime.module import RawModule
from ..runtime.stream import stream_for

_builtins = KernelCache()   # the product kernels, by types and shapes
_MATMUL_TILE = 16
_MATMUL_ROWS_PER_THREAD = 4     # outputs per thread, a column of them, where n allows


def matmul(a, b, out=None, *, _in_order=False):
    """numpy.matmul: a tiled kernel (shared-memory tiles of 16 x 16, four outputs per thread
    where there are rows enough), each output the sum over k in order, in numpy's result
    type; arrays of more than 2 dimensions are stacks of matrices, their stack dimensions
    broadcast (one launch, the stack along the grid's z). Real matrix products are the
    device's library's where ``dptx.library`` says so (``_in_order``: the kernels', each sum
    in order, as numpy's half loops want)."""
    a, b = asarray(a), asarray(b)
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("matmul: Input operand does not have enough dimensions")
    a2 = a.reshape(1, -1) if a.ndim == 1 else a
    b2 = b.reshape(-1, 1) if b.ndim == 1 else b
    if a2.shape[-1] != b2.shape[-2]:
        raise ValueError(f"matmul: Input operand 1 has a mismatch in its core dimension 0, "
                         f"with gufunc signature (n?,k),(k,m?)->(n?,m?) (size {b2.shape[-2]} "
                         f"is different from {a2.shape[-1]})")
    if a.ndim > 2 or b.ndim > 2:
        try:
            np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
        except ValueError:
            def remapped(x):   # (as numpy's message writes it)
                return "(" + ",".join([str(d) for d in x.shape[:-2]] + ["newaxis"] * 2) + ")"
            raise ValueError(
                f"operands could not be broadcast together with remapped shapes "
                f"[original->remapped]: {_shape_text(a.shape)}->{remapped(a2)} "
                f"{_shape_text(b.shape)}->{remapped(b2)}  and requested shape "
                f"{_shape_text((a2.shape[-2], b2.shape[-1]))}") from None
    R = np.result_type(a.dtype, b.dtype)
    if R.kind == "b":
        # numpy's boolean product: any(a[i, k] and b[k, j]), as a count of the pairs that
        # are both true (int32 cannot overflow below 2**31 terms) compared with 0
        wide = np.int64 if a.shape[-1] >= np.iinfo(np.int32).max else np.int32
        counts = matmul(a.astype(wide), b.astype(wide))
        result = ufuncs.apply(np.not_equal, counts, 0)
        return result if out is None else outputs.store(out, result, "matmul",
                                                        casting="same_kind")
    if R == HALF:
        # numpy's half loops multiply and add in float, in order, and round each sum once:
        # the float32 product through the tiled kernel (its sums in order; a vector as a
        # one-row or one-column matrix, as the vector kernels sum in a warp's order), then
        # rounded
        a32, b32 = a.astype(np.float32), b.astype(np.float32)
        product = matmul(a32[None, :] if a.ndim == 1 else a32,
                         b32[:, None] if b.ndim == 1 else b32, _in_order=True)
        if b.ndim == 1:
            product = product[..., 0]
        if a.ndim == 1:
            product = product[..., 0, :] if b.ndim > 1 else product[..., 0]
        result = ufuncs.astype(product, HALF)
        return result if out is None else outputs.store(out, result, "matmul",
                                                        casting="same_kind")
    if R.kind == "c":
        # complex products are the device's library's whatever dptx.library says (dptx's
        # product kernels are real)
        batch = np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
        shape = batch + ((a2.shape[-2],) if a.ndim > 1 else ()) + \
            ((b2.shape[-1],) if b.ndim > 1 else ())
        return _library_matmul(a, b, R, shape, out)
    library = not _in_order and library_call.enabled() and R.kind in "fiu"
    if a.ndim > 2 or b.ndim > 2:
        return _stacked_matmul(a, b, a2, b2, R, out, library)
    if a.ndim == 2 and b.ndim == 2 and library:
        return _library_matmul(a, b, R, (a.shape[0], b.shape[1]), out)
    a2 = ascontiguousarray(a2) if a2.dtype == R else a2.astype(R)
    b2 = ascontiguousarray(b2) if b2.dtype == R else b2.astype(R)
    n, k = a2.shape
    m = b2.shape[1]
    shape = (n, m) if a.ndim == 2 and b.ndim == 2 else (n,) if a.ndim == 2 else \
        (m,) if b.ndim == 2 else ()
    if out is not None:
        _check_product_out(out, shape, R)
        if _through_temporary(out, R, a, b):
            out[...] = matmul(a, b)
            return out
    result = out if out is not None else empty(shape, R)
    if n * m == 0:
        return result
    if k and (a.ndim == 1 or b.ndim == 1):       # a vector: a warp per row, or per column
        flat = result.reshape(-1)
        if b.ndim == 1:
            matrix_vector.matvec(a2, b2.reshape(-1), flat)
        else:
            matrix_vector.vecmat(a2.reshape(-1), b2, flat, column_pieces(m, k)[1])
        return result
    wide, T, idx, rows = _tiling(n, k, m)
    kernel = _builtins.get(("matmul", str(R), wide, rows), lambda: _matmul_kernel(R, wide, rows))
    kernel(((m + T - 1) // T, (n + rows - 1) // rows), (T, T),
           [a2, b2, result, idx(n), idx(k), idx(m)])
    return result


_MAX_GRID_Z = 65535     # CUDA's limit on gridDim.z: larger stacks go in several launches


def _library_matmul(a, b, R, shape: tuple, out):
    """matmul as the device's library routine (BLAS's on a CPU worker, cuBLAS's on a GPU
    worker: the ``dptx.library`` setting), its operands in R; into ``out`` (checked as
    numpy checks it) through the result."""
    if out is not None:
        _check_product_out(out, shape, R)
    if 0 in shape:
        result = empty(shape, R)
    else:
        (result,) = library_call.call("matmul", [a if a.dtype == R else a.astype(R),
                                                 b if b.dtype == R else b.astype(R)],
                                      [(shape, R)])
    if out is None:
        return result
    out[...] = result
    return out


def _through_temporary(out, R, a, b) -> bool:
    """Whether a product goes into ``out`` through a temporary: the kernels write R
    contiguously, and read their inputs as they write (numpy's result is as if the inputs
    were read whole first)."""
    return not out._contiguous or out.dtype != R or may_share_memory(out, a) or \
        may_share_memory(out, b)


def _tiling(n: int, k: int, m: int) -> tuple:
    """(64-bit indices?, tile, index type, rows per block) of the tiled product."""
    wide = max(n * k, k * m, n * m) > np.iinfo(np.int32).max
    T = _MATMUL_TILE
    rows = T * _MATMUL_ROWS_PER_THREAD if n >= T * _MATMUL_ROWS_PER_THREAD else T
    return wide, T, (np.int64 if wide else np.int32), rows


def _shape_text(shape: tuple) -> str:
    return "(" + ",".join(str(d) for d in shape) + ")"


def _stacked_matmul(a, b, a2, b2, R, out, library: bool):
    """matmul of stacks of matrices (``a2``, ``b2``: the operands with a vector made a
    matrix): each operand contiguous in R, its stack dimensions broadcast by strides of 0,
    the product of stack entry z computed by blocks of grid z."""
    batch = np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
    n, k, m = a2.shape[-2], a2.shape[-1], b2.shape[-1]
    shape = batch + ((n,) if a.ndim > 1 else ()) + ((m,) if b.ndim > 1 else ())
    if library:
        return _library_matmul(a, b, R, shape, out)
    if out is not None:
        _check_product_out(out, shape, R)
        if _through_temporary(out, R, a, b):
            out[...] = matmul(a, b)
            return out
    result = out.reshape(batch + (n, m)) if out is not None else empty(batch + (n, m), R)
    if result.size == 0:
        return result.reshape(shape) if out is None else out
    A = ascontiguousarray(a2) if a2.dtype == R else a2.astype(R)
    B = ascontiguousarray(b2) if b2.dtype == R else b2.astype(R)
    params = []
    for d, size in enumerate(batch):
        params.append(np.int64(size))
        for op in (A, B):
            dims = (1,) * (len(batch) - (op.ndim - 2)) + op.shape[:-2]
            # elements from one matrix of the stack to the next along d (0: broadcast)
            step = int(np.prod(dims[d + 1:], dtype=np.int64)) * op.shape[-2] * op.shape[-1]
            params.append(np.int64(step if dims[d] == size and size > 1 else 0))
    wide, T, idx, rows = _tiling(n, k, m)
    kernel = _builtins.get(("matmul", str(R), wide, rows, len(batch)),
                           lambda: _matmul_kernel(R, wide, rows, len(batch)))
    total = int(np.prod(batch, dtype=np.int64))
    with stream_for(None).together():
        for z0 in range(0, total, _MAX_GRID_Z):
            kernel(((m + T - 1) // T, (n + rows - 1) // rows, min(_MAX_GRID_Z, total - z0)),
                   (T, T), [A, B, result, idx(n), idx(k), idx(m), *params, np.int64(z0)])
    return result.reshape(shape) if out is None else out


def _check_product_out(out, shape: tuple, R: np.dtype) -> None:
    """numpy's errors for matmul's ``out``: its shape, and a type the result casts to under
    the same_kind rule."""
    if not isinstance(out, ndarray):
        raise DptxError(f"out= must be a dptx array, got {type(out).__name__}")
    if not np.can_cast(R, out.dtype, casting="same_kind"):
        raise TypeError(f"Cannot cast ufunc 'matmul' output from {R!r} to {out.dtype!r} "
                        f"with casting rule 'same_kind'")
    if out.shape != shape:
        raise ValueError(f"matmul: Output operand 0 has shape {out.shape}, the result "
                         f"{shape}")


def _matmul_kernel(R, wide, rows, stacked: int = 0):
    """The tiled product: a block of 16 x 16 threads computes a tile of 16 ``rows`` x 16
    outputs, each thread ``rows // 16`` of them (independent sums: on the CPU executor, a
    warp's multiply-adds no longer wait on one another, and a block's barriers pay for
    ``rows // 16`` times the work), each the sum over k in order. ``stacked``: the number of
    stack dimensions, each with its size and A's and B's steps (0 where broadcast); the
    grid's z (plus ``z0``) is the matrix of the stack."""
    t, T, i = c_type(R), _MATMUL_TILE, ("long long" if wide else "int")
    per = rows // T
    stack_params = "".join(f", long long s{d}, long long sa{d}, long long sb{d}"
                           for d in range(stacked))
    stack_params += ", long long z0" if stacked else ""
    # the offsets of this block's matrices: z's digits in the stack's shape, last fastest
    digits = "".join(f"    {{ const long long q = z % s{d}; z /= s{d}; A += q * sa{d}; "
                     f"B += q * sb{d}; }}\n" for d in reversed(range(stacked)))
    stack = (f"    long long z = (long long)blockIdx.z + z0;\n"
             f"    C += z * (long long)n * m;\n{digits}") if stacked else ""
    src = f'''
extern "C" __global__ void dptx_matmul(const {t}* __restrict__ A, const {t}* __restrict__ B,
                                       {t}* __restrict__ C, {i} n, {i} k, {i} m{stack_params}) {{
{stack}    __shared__ {t} As[{rows}][{T}], Bs[{T}][{T}];
    const long long row0 = (long long)blockIdx.y * {rows} + threadIdx.y;
    const long long col = (long long)blockIdx.x * {T} + threadIdx.x;
    {t} acc[{per}];
    #pragma unroll
    for (int r = 0; r < {per}; r++) acc[r] = 0;
    for (long long t0 = 0; t0 < k; t0 += {T}) {{
        #pragma unroll
        for (int r = 0; r < {per}; r++) {{
            const long long row = row0 + {T} * r;
            As[threadIdx.y + {T} * r][threadIdx.x] =
                (row < n && t0 + threadIdx.x < k) ? A[row * k + t0 + threadIdx.x] : ({t})0;
        }}
        Bs[threadIdx.y][threadIdx.x] = (t0 + threadIdx.y < k && col < m) ? B[(t0 + threadIdx.y) * m + col] : ({t})0;
        __syncthreads();
        for (int j = 0; j < {T}; j++) {{
            const {t} b = Bs[j][threadIdx.x];
            #pragma unroll
            for (int r = 0; r < {per}; r++) acc[r] += As[threadIdx.y + {T} * r][j] * b;
        }}
        __syncthreads();
    }}
    #pragma unroll
    for (int r = 0; r < {per}; r++) {{
        const long long row = row0 + {T} * r;
        if (row < n && col < m) C[row * m + col] = acc[r];
    }}
}}'''
    return RawModule(with_type_headers(src), options=EXACT).get_function("dptx_matmul")


def dot(a, b, out=None):
    """numpy.dot: matmul for 1- and 2-D arrays, a product with a scalar for 0-D ones, and
    for more dimensions the sum over a's last axis and b's second-to-last (every pair of
    a's rows and b's columns, unlike matmul's stacks), as one matrix product."""
    if not isinstance(a, ndarray) and np.ndim(a) == 0 or not isinstance(b, ndarray) and np.ndim(b) == 0 \
            or (isinstance(a, ndarray) and a.ndim == 0) or (isinstance(b, ndarray) and b.ndim == 0):
        return ufuncs.apply(np.multiply, a, b, out=out)
    a, b = asarray(a), asarray(b)
    kb = max(b.ndim - 2, 0)              # b's axis summed over
    if a.shape[-1] != b.shape[kb]:
        raise ValueError(f"shapes {_shape_text(a.shape)} and {_shape_text(b.shape)} not "
                         f"aligned: {a.shape[-1]} (dim {a.ndim - 1}) != {b.shape[kb]} (dim {kb})")
    shape = a.shape[:-1] + b.shape[:kb] + b.shape[kb + 1:]
    if out is not None:
        # numpy.dot is stricter than matmul about out: exactly the result's type and shape,
        # C-contiguous
        if not isinstance(out, ndarray) or out.dtype != np.result_type(a.dtype, b.dtype) or \
                out.ndim != len(shape) or not out.flags.c_contiguous:
            raise ValueError("output array is not acceptable (must have the right datatype, "
                             "number of dimensions, and be a C-Array)")
        if out.shape != shape:
            raise ValueError("output array has wrong dimensions")
    if a.ndim <= 2 and b.ndim <= 2:
        return matmul(a, b, out=out)
    # b's summed axis first, then a (rows, k) by (k, columns) product
    moved = b if b.ndim == 1 else b.transpose((kb,) + tuple(d for d in range(b.ndim) if d != kb))
    product = matmul(a.reshape(-1, a.shape[-1]), moved.reshape(b.shape[kb], -1))
    if out is None:
        return product.reshape(shape)
    out.reshape(product.shape)[...] = product
    return out
