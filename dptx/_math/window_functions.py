"""numpy's window functions and the Bessel function they need, on the devices, as numpy
writes them: ``bartlett``, ``blackman``, ``hamming``, ``hanning`` (sums of cosines of
``arange(1 - M, M, 2)``), ``kaiser`` (``i0`` of the window's positions over ``i0(beta)``)
and ``i0`` (Cephes' Chebyshev series on [0, 8] and above, numpy's coefficients, in the
array's own float type as numpy's weak-scalar rules compute it). The cosines and
exponentials are the devices' (within an ulp or two of numpy's libm)."""
from __future__ import annotations

import numpy as np

from .._core import ufuncs
from ..runtime.ndarray import asarray, empty, ndarray
from .._core.elementwise import ElementwiseKernel, KernelCache
from .._creation.ranges import arange

# numpy's functions of these names (array_api dispatches numpy's to them)
__all__ = ["bartlett", "blackman", "hamming", "hanning", "i0", "kaiser"]

_kernels = KernelCache()

# numpy.lib._function_base_impl's _i0A and _i0B (Cephes), read from numpy itself
_I0A = tuple(float(v) for v in np.lib._function_base_impl._i0A)
_I0B = tuple(float(v) for v in np.lib._function_base_impl._i0B)


# exp and sqrt in the element's type: float16's through float, rounded back (numpy's half
# loops call the float functions)
_MATH = """
__device__ __forceinline__ double _exp(double x) { return exp(x); }
__device__ __forceinline__ float _exp(float x) { return expf(x); }
__device__ __forceinline__ __half _exp(__half x) { return __float2half(expf(__half2float(x))); }
__device__ __forceinline__ double _sqrt(double x) { return sqrt(x); }
__device__ __forceinline__ float _sqrt(float x) { return sqrtf(x); }
__device__ __forceinline__ __half _sqrt(__half x) { return __float2half(sqrtf(__half2float(x))); }
"""


def _chbevl(name: str, coefficients: tuple) -> str:
    """Cephes' chbevl as numpy's _chbevl runs it: each step x * b1 - b2 + c in T."""
    values = ", ".join(repr(c) for c in coefficients)
    return (f"template <typename T> __device__ __forceinline__ T {name}(T x) {{\n"
            f"    const double c[{len(coefficients)}] = {{{values}}};\n"
            f"    T b0 = (T)c[0], b1 = (T)0.0, b2 = (T)0.0;\n"
            f"    for (int i = 1; i < {len(coefficients)}; i++) {{\n"
            f"        b2 = b1; b1 = b0; b0 = x * b1 - b2 + (T)c[i];\n"
            f"    }}\n"
            f"    return (T)0.5 * (b0 - b2);\n"
            f"}}\n")


def i0(x) -> ndarray:
    """numpy.i0: the modified Bessel function of the first kind, order 0, of each element
    (integers as float64; a float array in its own type, as numpy's)."""
    x = asarray(x)
    if x.dtype.kind == "c":
        raise TypeError("i0 not supported for complex values")
    if x.dtype.kind != "f":
        x = ufuncs.astype(x, np.float64)
    kernel = _kernels.get("i0", lambda: ElementwiseKernel(
        "T v", "T y",
        "const T x = v < (T)0 ? -v : v;\n"
        "y = x <= (T)8.0 ? _exp(x) * _i0a(x / (T)2.0 - (T)2)\n"
        "               : _exp(x) * _i0b((T)32.0 / x - (T)2.0) / _sqrt(x);",
        "dptx_i0", options=("--fmad=false",),
        preamble=_MATH + _chbevl("_i0a", _I0A) + _chbevl("_i0b", _I0B)))
    return kernel(x)


def _positions(M):
    """numpy's ``arange(1 - M, M, 2)`` of a float M, or the empty or one-element window."""
    M = float(np.array([0.0, M])[1])
    if M < 1:
        return M, empty((0,), np.float64)
    if M == 1:
        out = empty((1,), np.float64)
        out.fill(1.0)
        return M, out
    return M, arange(1 - M, M, 2)


def _cosine_sum(M, terms) -> ndarray:
    """a0 + a1 cos(pi n / (M - 1)) + a2 cos(2 pi n / (M - 1)) ..., as numpy adds them."""
    M, n = _positions(M)
    if M <= 1:
        return n
    total = None
    for k, (factor, weight) in enumerate(terms):
        if k == 0:
            total = weight
            continue
        angle = ufuncs.apply(np.true_divide, ufuncs.apply(np.multiply, factor, n), M - 1)
        term = ufuncs.apply(np.multiply, weight, ufuncs.apply(np.cos, angle))
        total = ufuncs.apply(np.add, total, term)
    return total


def hanning(M) -> ndarray:
    """numpy.hanning: 0.5 + 0.5 cos(pi n / (M - 1))."""
    return _cosine_sum(M, [(None, 0.5), (np.pi, 0.5)])


def hamming(M) -> ndarray:
    """numpy.hamming: 0.54 + 0.46 cos(pi n / (M - 1))."""
    return _cosine_sum(M, [(None, 0.54), (np.pi, 0.46)])


def blackman(M) -> ndarray:
    """numpy.blackman: 0.42 + 0.5 cos(pi n / (M - 1)) + 0.08 cos(2 pi n / (M - 1))."""
    return _cosine_sum(M, [(None, 0.42), (np.pi, 0.5), (2.0 * np.pi, 0.08)])


def bartlett(M) -> ndarray:
    """numpy.bartlett: the triangle 1 + n / (M - 1) for n <= 0, 1 - n / (M - 1) after."""
    M, n = _positions(M)
    if M <= 1:
        return n
    ramp = ufuncs.apply(np.true_divide, n, M - 1)
    return ufuncs.where(ufuncs.apply(np.less_equal, n, 0), ufuncs.apply(np.add, 1, ramp),
                        ufuncs.apply(np.subtract, 1, ramp))


def kaiser(M, beta) -> ndarray:
    """numpy.kaiser: i0(beta sqrt(1 - ((n - alpha) / alpha)**2)) / i0(beta), n = 0..M-1,
    alpha = (M - 1) / 2."""
    values = np.array([0.0, M, beta])
    M, beta = values[1], values[2]
    if M == 1:
        out = empty((1,), np.float64)
        out.fill(1.0)
        return out
    n = arange(0, M)
    alpha = (M - 1) / 2.0
    ratio = ufuncs.apply(np.true_divide, ufuncs.apply(np.subtract, n, alpha), alpha)
    inside = ufuncs.apply(np.subtract, 1, ufuncs.apply(np.power, ratio, 2.0))
    top = i0(ufuncs.apply(np.multiply, beta, ufuncs.apply(np.sqrt, inside)))
    return ufuncs.apply(np.true_divide, top, i0(asarray(np.array([beta])))[0])
