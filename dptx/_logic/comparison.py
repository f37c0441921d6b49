"""numpy's comparisons of whole arrays, made of the array API's launches as numpy makes them:
``isclose``/``allclose``, ``array_equal``/``array_equiv``, ``isposinf``/``isneginf``. Where
numpy returns a Python bool (``allclose``, ``array_equal``) the result is a 0-d array, as
CuPy's, which ``bool()`` and ``assert`` read."""
from __future__ import annotations

import numpy as np

from .._core import reductions, ufuncs
from ..runtime.ndarray import asarray, ndarray


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False) -> ndarray:
    """numpy.isclose: |a - b| <= atol + rtol * |b| where b is finite, or a == b; b taken in
    an inexact type first (numpy's guard against abs(INT_MIN))."""
    x = a if isinstance(a, (int, float, complex, ndarray)) else asarray(a)
    y = b if isinstance(b, (int, float, complex, ndarray)) else asarray(b)
    if isinstance(y, ndarray):
        dt = np.result_type(y.dtype, 1.0)
        if y.dtype != dt:
            y = ufuncs.astype(y, dt)
    elif isinstance(y, int):
        y = float(y)
    apply = ufuncs.apply
    close = apply(np.less_equal, apply(np.absolute, apply(np.subtract, x, y)),
                  apply(np.add, atol, apply(np.multiply, rtol, apply(np.absolute, y))))
    close = apply(np.logical_or, apply(np.logical_and, close, apply(np.isfinite, y)),
                  apply(np.equal, x, y))
    if equal_nan:
        close = apply(np.logical_or, close,
                      apply(np.logical_and, apply(np.isnan, x), apply(np.isnan, y)))
    return close


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False) -> ndarray:
    """numpy.allclose: ``isclose`` everywhere, as a 0-d bool array (CuPy's)."""
    return reductions.all_(isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan))


def array_equal(a1, a2, equal_nan=False) -> ndarray:
    """numpy.array_equal: the same shape and equal elements (NaN equal to NaN with
    ``equal_nan``), as a 0-d bool array (CuPy's)."""
    a1, a2 = asarray(a1), asarray(a2)
    if a1.shape != a2.shape:
        return asarray(np.array(False))
    same = ufuncs.apply(np.equal, a1, a2)
    if equal_nan and (a1.dtype.kind == "f" or a2.dtype.kind == "f"):
        same = ufuncs.apply(np.logical_or, same, ufuncs.apply(
            np.logical_and, ufuncs.apply(np.isnan, a1), ufuncs.apply(np.isnan, a2)))
    return reductions.all_(same)


def array_equiv(a1, a2) -> ndarray:
    """numpy.array_equiv: the shapes broadcast to one another and the elements are equal
    there; as a 0-d bool array (as ``array_equal``, CuPy's way: no wait for the answer)."""
    a1, a2 = asarray(a1), asarray(a2)
    try:
        np.broadcast_shapes(a1.shape, a2.shape)
    except ValueError:
        return asarray(np.array(False))
    return reductions.all_(ufuncs.apply(np.equal, a1, a2))


def _signed_infinity(x, out, positive: bool):
    x = asarray(x)
    if x.dtype.kind == "c":
        raise TypeError(f"This operation is not supported for {x.dtype} values because it "
                        f"would be ambiguous.")
    sign = ufuncs.apply(np.signbit, x)
    if positive:
        sign = ufuncs.apply(np.logical_not, sign)
    return ufuncs.apply(np.logical_and, ufuncs.apply(np.isinf, x), sign, out=out)


def isposinf(x, out=None):
    """numpy.isposinf: x is +inf."""
    return _signed_infinity(x, out, True)


def isneginf(x, out=None):
    """numpy.isneginf: x is -inf."""
    return _signed_infinity(x, out, False)
