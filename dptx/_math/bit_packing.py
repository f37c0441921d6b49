"""numpy's ``packbits`` and ``unpackbits`` on the devices (CuPy has both): eight elements to
a byte along an axis (of the flattened array by default), most significant bit first
("big") or least ("little"), and back. A thread per output byte (packbits) or bit
(unpackbits), reading the axis as the last one of a C-contiguous copy."""
from __future__ import annotations

import operator

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from ..runtime.ndarray import asarray, ndarray
from .._core.elementwise import ElementwiseKernel, KernelCache
from .._core.reduction_kernel import EXACT
from .._manipulation.views import moveaxis

__all__ = ["packbits", "unpackbits"]

_kernels = KernelCache()


def _bitorder(bitorder: str) -> str:
    if bitorder not in ("big", "little"):
        raise ValueError("'order' must be either 'little' or 'big'")
    return bitorder


def _along_last(a: ndarray, axis):
    """(``a`` with ``axis`` last, flattened first for None, as a C-contiguous array, the
    axis)."""
    if axis is None or a.ndim == 0:         # (numpy takes a 0-d array as 1-d)
        a = a.reshape(-1)
    if axis is None:
        return a, None
    axis = normalize_axis_index(operator.index(axis), a.ndim)
    moved = moveaxis(a, axis, -1)
    return (moved if moved.flags.c_contiguous else moved.copy()), axis


def _placed(result: ndarray, axis) -> ndarray:
    """The result, computed with the axis last, with it back in place (a C-contiguous array,
    as numpy's)."""
    if axis is None:
        return result
    moved = moveaxis(result, -1, axis)
    return moved if moved.flags.c_contiguous else moved.copy()


def packbits(a, axis=None, bitorder="big") -> ndarray:
    """numpy.packbits: the elements' truth, eight to a uint8 along ``axis`` (the last byte
    padded with zero bits)."""
    a = asarray(a)
    if a.dtype.kind not in "biu":
        raise TypeError("Expected an input array of integer or boolean data type")
    little = _bitorder(bitorder) == "little"
    x, axis = _along_last(a, axis)
    n = x.shape[-1]
    out = ndarray(x.shape[:-1] + ((n + 7) // 8,), np.uint8)
    if out.size:
        shift = "j" if little else "7 - j"
        kernel = _kernels.get(("pack", str(x.dtype), little), lambda: ElementwiseKernel(
            f"raw {x.dtype} x, int64 n, int64 m", "uint8 z",
            # byte i is row i / m, bytes c = i % m: elements 8c .. 8c + 7 of the row
            f"const long long row = (long long)i / m, c = (long long)i % m;"
            f" unsigned int v = 0;"
            f" for (int j = 0; j < 8; j++) {{ const long long k = 8 * c + j;"
            f" if (k < n && x[row * n + k] != 0) v |= 1u << ({shift}); }}"
            f" z = (unsigned char)v;",
            f"dptx_packbits_{x.dtype}_{'little' if little else 'big'}", options=EXACT))
        kernel(x, np.int64(n), np.int64(out.shape[-1]), out)
    return _placed(out, axis)


def unpackbits(a, axis=None, count=None, bitorder="big") -> ndarray:
    """numpy.unpackbits: each uint8's eight bits as elements along ``axis``; ``count`` of
    them kept (from the end removed where negative, zeros added past the data)."""
    a = asarray(a)
    if a.dtype != np.uint8:
        raise TypeError("Expected an input array of unsigned byte data type")
    little = _bitorder(bitorder) == "little"
    x, axis = _along_last(a, axis)
    bits = 8 * x.shape[-1]
    if count is not None:
        count = operator.index(count)
        if count < 0 and -count > bits:
            raise ValueError("-count larger than number of elements")
        bits = bits + count if count < 0 else count
    out = ndarray(x.shape[:-1] + (bits,), np.uint8)
    if out.size:
        shift = "j" if little else "7 - j"
        kernel = _kernels.get(("unpack", little), lambda: ElementwiseKernel(
            "raw uint8 x, int64 n, int64 bits", "uint8 z",
            # bit i is row i / bits, position k = i % bits: bit k % 8 of byte k / 8
            f"const long long row = (long long)i / bits, k = (long long)i % bits;"
            f" const int j = (int)(k % 8);"
            f" z = k / 8 < n ? (unsigned char)((x[row * n + k / 8] >> ({shift})) & 1u) : 0;",
            f"dptx_unpackbits_{'little' if little else 'big'}", options=EXACT))
        kernel(x, np.int64(x.shape[-1]), np.int64(bits), out)
    return _placed(out, axis)
