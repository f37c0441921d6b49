"""numpy's discrete linear ``convolve`` and ``correlate`` of 1-D dptx arrays: one kernel,
a thread per output element summing its overlap in order of the second sequence's index, as
numpy's dot loops do (integers accumulate in 64 bits and wrap to the result's type, half
floats in float, booleans as or-of-ands). numpy's float loops call BLAS, whose order of
additions is its own: float results agree with numpy's to rounding, not bit for bit.

numpy's conventions are kept: the common type of both inputs; for ``correlate`` of a shorter
first sequence, the reversed correlation of the swapped pair; ``convolve`` swaps so that the
longer sequence comes first and correlates with the other reversed."""
from __future__ import annotations

import numpy as np

from .._core import ufuncs
from ..runtime.ndarray import asarray, ascontiguousarray, empty
from .._core.elementwise import HALF, ElementwiseKernel, KernelCache, c_type
from ..errors import DptxError
from .._core.reduction_kernel import EXACT

__all__ = ["convolve", "correlate"]

_kernels = KernelCache()
_MODES = {"valid": 0, "same": 1, "full": 2, 0: 0, 1: 1, 2: 2}


def _accumulator(dtype: np.dtype) -> str:
    if dtype == np.bool_:
        return "bool"
    if dtype.kind == "i":
        return "long long"
    if dtype.kind == "u":
        return "unsigned long long"
    return "float" if dtype == HALF else c_type(dtype)


def _kernel(dtype: np.dtype) -> ElementwiseKernel:
    acc = _accumulator(dtype)
    step = "s = s || (a[k + j] && v[j]);" if dtype == np.bool_ else \
        f"s += ({acc})a[k + j] * ({acc})v[j];"
    return _kernels.get(str(dtype), lambda: ElementwiseKernel(
        "raw T a, raw T v, int64 n1, int64 n2, int64 shift", "T z",
        # output i is the full correlation's element i + shift: a's elements from k on
        # against v's
        f"const long long k = (long long)i + shift - (n2 - 1);"
        f" const long long j0 = k < 0 ? -k : 0, j1 = n1 - k < n2 ? n1 - k : n2;"
        f" {acc} s = 0; for (long long j = j0; j < j1; j++) {{ {step} }} z = (T)s;",
        "dptx_correlate", options=EXACT))


def _operand(x, scalar_ok: bool):
    """``x`` as a 1-D dptx array (numpy's errors: convolve takes a scalar as one element,
    correlate does not)."""
    x = asarray(x)
    if x.ndim == 0 and scalar_ok:
        x = x.reshape(1)
    if x.ndim > 1:
        raise ValueError("object too deep for desired array")
    if x.ndim < 1:
        raise ValueError("object of too small depth for desired array")
    return x


def _correlate(a, v, mode):
    """numpy's ``multiarray.correlate`` (the longer sequence first, else swapped and the
    result reversed)."""
    if mode not in _MODES:
        raise ValueError("Use one of 'valid', 'same', or 'full' for convolve/correlate mode")
    mode = _MODES[mode]
    R = np.result_type(a.dtype, v.dtype)
    if R.kind == "c":
        raise DptxError("complex dtypes are not supported on dptx arrays yet")
    inverted = a.size < v.size
    if inverted:
        a, v = v, a
    n1, n2 = a.size, v.size
    left = (n2 - 1, n2 >> 1, 0)[2 - mode]
    length = (n1 - n2 + 1, n1, n1 + n2 - 1)[mode]
    a, v = (ascontiguousarray(x if x.dtype == R else ufuncs.astype(x, R)) for x in (a, v))
    out = empty((length,), R)
    if length:
        _kernel(R)(a, v, np.int64(n1), np.int64(n2), np.int64(n2 - 1 - left), out)
    return out[::-1].copy() if inverted else out


def correlate(a, v, mode="valid"):
    """numpy.correlate: c[k] = sum_n a[n + k] * v[n] over the overlap, 'valid' (default),
    'same' or 'full'."""
    a, v = _operand(a, False), _operand(v, False)
    if a.size == 0:
        raise ValueError("first array argument cannot be empty")
    if v.size == 0:
        raise ValueError("second array argument cannot be empty")
    return _correlate(a, v, mode)


def convolve(a, v, mode="full"):
    """numpy.convolve: the discrete linear convolution, 'full' (default), 'same' or
    'valid'."""
    a, v = _operand(a, True), _operand(v, True)
    if a.size == 0:
        raise ValueError("a cannot be empty")
    if v.size == 0:
        raise ValueError("v cannot be empty")
    if v.size > a.size:
        a, v = v, a
    return _correlate(a, v[::-1], mode)
