"""numpy.linalg through the devices' own libraries (the ``dptx.library`` setting, "device" by
default): each routine one task on the worker holding its operands, LAPACK's on a CPU
worker (numpy's), cuSOLVER's on a GPU worker (CuPy's); ``dptx.runtime.library_call``. The
callers (solve, svd...) check their arguments as numpy does first and compute in numpy's
type (``_lu._type``); results have numpy's shapes and types."""
from __future__ import annotations


from .._manipulation.views import broadcast_to
from ..runtime import library_call
from ..runtime.library_call import enabled

__all__ = ["enabled", "svd", "eigh", "qr", "cholesky", "solve", "inv", "slogdet", "det", "matmul"]


def _in(a, T, shape=None):
    """``a`` in type T (broadcast to ``shape``), as the routine's input."""
    a = a if a.dtype == T else a.astype(T)
    return a if shape is None or a.shape == tuple(shape) else broadcast_to(a, shape)


def svd(a, T, full_matrices: bool, compute_uv: bool):
    M, N = a.shape[-2:]
    K, stack = min(M, N), a.shape[:-2]
    if not compute_uv:
        (S,) = library_call.call("linalg.svd", [_in(a, T)], [(stack + (K,), T)],
                                 compute_uv=False)
        return S
    rows, cols = (M, N) if full_matrices else (K, K)
    return library_call.call("linalg.svd", [_in(a, T)],
                             [(stack + (M, rows), T), (stack + (K,), T),
                              (stack + (cols, N), T)], full_matrices=full_matrices)


def eigh(a, T, UPLO: str, vectors: bool):
    n, stack = a.shape[-1], a.shape[:-2]
    if not vectors:
        (w,) = library_call.call("linalg.eigvalsh", [_in(a, T)], [(stack + (n,), T)],
                                 UPLO=UPLO)
        return w
    return library_call.call("linalg.eigh", [_in(a, T)],
                             [(stack + (n,), T), (stack + (n, n), T)], UPLO=UPLO)


def qr(a, T, mode: str):
    m, n = a.shape[-2:]
    k, stack = min(m, n), a.shape[:-2]
    rows = m if mode == "complete" else k
    if mode == "r":
        (R,) = library_call.call("linalg.qr", [_in(a, T)], [(stack + (rows, n), T)], mode="r")
        return R
    return library_call.call("linalg.qr", [_in(a, T)],
                             [(stack + (m, rows), T), (stack + (rows, n), T)], mode=mode)


def cholesky(a, T, upper: bool):
    (L,) = library_call.call("linalg.cholesky", [_in(a, T)], [(a.shape, T)])
    return L.swapaxes(-1, -2).copy() if upper else L


def solve(a, b2, T, batch: tuple):
    """x with a x = b2 (b2 a stack of n x k matrices), the stacks broadcast to ``batch``."""
    n, k = a.shape[-1], b2.shape[-1]
    (x,) = library_call.call("linalg.solve", [_in(a, T, batch + (n, n)),
                                              _in(b2, T, batch + (n, k))],
                             [(batch + (n, k), T)])
    return x


def inv(a, T):
    (x,) = library_call.call("linalg.inv", [_in(a, T)], [(a.shape, T)])
    return x


def slogdet(a, T):
    stack = a.shape[:-2]
    return library_call.call("linalg.slogdet", [_in(a, T)], [(stack, T), (stack, T)])


def det(a, T):
    (d,) = library_call.call("linalg.det", [_in(a, T)], [(a.shape[:-2], T)])
    return d


def matmul(a, b, R, shape: tuple):
    """numpy.matmul of ``a`` and ``b`` (each a matrix or a stack, in type R), of ``shape``."""
    (c,) = library_call.call("matmul", [_in(a, R), _in(b, R)], [(shape, R)])
    return c
