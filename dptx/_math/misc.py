"""numpy's functions of elements made of the array API's launches, step by step as numpy's:
``nan_to_num``, ``sinc``, ``real``/``imag``/``angle``, ``unwrap``."""
from __future__ import annotations

import numpy as np

from .._core import ufuncs
from .._core.elementwise import ElementwiseKernel, KernelCache
from .._core.scan import cumsum
from .._manipulation.rearranging import diff
from ..runtime.ndarray import _axes, asarray, ndarray


_kernels = KernelCache()


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None) -> ndarray:
    """numpy.nan_to_num: NaN to ``nan``, infinities to ``posinf``/``neginf`` (the type's
    largest and lowest finite values by default), one launch; integers unchanged."""
    x = asarray(x)
    if x.dtype.kind == "c":
        # numpy's: each part on its own (the parts are strided views of the result)
        out = x.copy() if copy else x
        for part in (out.real, out.imag):
            nan_to_num(part, copy=False, nan=nan, posinf=posinf, neginf=neginf)
        return out
    if x.dtype.kind not in "f":
        return x.copy() if copy else x
    info = np.finfo(x.dtype)
    values = [np.array(v, dtype=x.dtype)[()] for v in (
        nan, info.max if posinf is None else posinf, info.min if neginf is None else neginf)]
    if x.dtype == np.float16:
        # computed in float: every float16 value, and each replacement, is exact there
        wide = nan_to_num(ufuncs.astype(x, np.float32), True, *[float(v) for v in values])
        result = ufuncs.astype(wide, np.float16)
    else:
        kernel = _kernels.get(("nan_to_num", str(x.dtype)), lambda: ElementwiseKernel(
            "T x, T n, T p, T m", "T z", "z = isnan(x) ? n : (isinf(x) ? (x > 0 ? p : m) : x)",
            "dptx_nan_to_num", options=("--fmad=false",)))
        result = kernel(x, *values)
    if copy:
        return result
    x[...] = result
    return x


def sinc(x):
    """numpy.sinc: sin(pi x) / (pi x), with numpy's eps for x = 0 (so sinc(0) is 1)."""
    x = ufuncs.apply(np.multiply, np.pi, asarray(x))
    eps = np.finfo(x.dtype).eps if x.dtype.kind == "f" else 1e-20
    y = ufuncs.where(x, x, np.array(eps, x.dtype)[()])
    return ufuncs.apply(np.true_divide, ufuncs.apply(np.sin, y), y)


def real(val):
    """numpy.real: the real parts (a view); of a real array, the array itself."""
    return asarray(val).real


def imag(val):
    """numpy.imag: the imaginary parts (a view); of a real array, zeros."""
    return asarray(val).imag


def angle(z, deg=False):
    """numpy.angle: arctan2(imag, real) (for real ``z``, arctan2(0, z): 0 or pi, signed zeros
    and NaNs as numpy's), in degrees with ``deg``."""
    z = asarray(z)
    a = ufuncs.apply(np.arctan2, z.imag, z.real) if z.dtype.kind == "c" else \
        ufuncs.apply(np.arctan2, 0, z)
    if deg:
        a = ufuncs.apply(np.multiply, a, 180 / np.pi)
    return a


def unwrap(p, discont=None, axis=-1, *, period=2 * np.pi) -> ndarray:
    """numpy.unwrap: jumps between neighbours along ``axis`` larger than ``discont`` (half
    the period by default) taken back by whole periods, numpy's steps (its boundary rule for
    a jump of exactly half a period, integer periods exactly)."""
    p = asarray(p)
    nd = p.ndim
    ax = _axes((axis,), nd)[0]
    dd = diff(p, axis=ax)
    if discont is None:
        discont = period / 2
    later = [slice(None)] * nd
    later[ax] = slice(1, None)
    later = tuple(later)
    dtype = np.result_type(dd.dtype, period)
    if np.issubdtype(dtype, np.integer):
        high, rem = divmod(period, 2)
        ambiguous = rem == 0
    else:
        high = period / 2
        ambiguous = True
    low = -high
    ddmod = ufuncs.apply(np.add, ufuncs.apply(np.mod, ufuncs.apply(np.subtract, dd, low),
                                              period), low)
    if ambiguous:
        at_low = ufuncs.apply(np.logical_and, ufuncs.apply(np.equal, ddmod, low),
                              ufuncs.apply(np.greater, dd, 0))
        ddmod = ufuncs.where(at_low, np.array(high, ddmod.dtype)[()], ddmod)
    correct = ufuncs.apply(np.subtract, ddmod, dd)
    small = ufuncs.apply(np.less, ufuncs.apply(np.absolute, dd), discont)
    correct = ufuncs.where(small, np.array(0, correct.dtype)[()], correct)
    up = ufuncs.astype(p, dtype) if p.dtype != dtype else p.copy()
    up[later] = ufuncs.apply(np.add, p[later], cumsum(correct, axis=ax))
    return up
