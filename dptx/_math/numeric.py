"""numpy functions built from the array API's launches, following numpy's own definitions step
by step (so their types, NaN handling and rounding are numpy's): ``round``/``around``,
``isclose``/``allclose``/``array_equal``, ``var``/``std``, ``sinc``, ``fix``,
``isposinf``/``isneginf``, ``real``/``imag``/``angle`` (of real arrays), ``polyval``,
``polyfit`` (numpy's scaled Vandermonde matrix through ``linalg.lstsq``), ``unwrap``.
Everything stays on the devices; where numpy returns a Python bool (``allclose``,
``array_equal``) the result is a 0-d array, as CuPy's, which ``bool()`` and ``assert`` read."""
from __future__ import annotations

import numpy as np

from .._core import outputs, reductions, ufuncs
from ..runtime.ndarray import _axes, asarray, ndarray, zeros_like
from .._core.elementwise import ElementwiseKernel, KernelCache
from ..errors import DptxError

_kernels = KernelCache()


def around(a, decimals=0, out=None) -> ndarray:
    """numpy.round: multiplied by 10**decimals, rounded half to even (``rint``), divided
    back (divided then multiplied for negative decimals); integers with decimals >= 0 are
    returned unchanged (a copy), with negative ones rounded through float64 and converted
    back, as numpy does."""
    a = asarray(a)
    if a.dtype.kind == "b":
        # numpy: rint of booleans is float16; scaling them first fails its casting check
        if decimals != 0:
            op = "multiply" if decimals > 0 else "divide"
            raise TypeError(f"Cannot cast ufunc '{op}' output from dtype('float64') to "
                            f"dtype('bool') with casting rule 'same_kind'")
        return ufuncs.apply(np.rint, a, out=out)
    if a.dtype.kind in "iu" and decimals >= 0:
        if out is None:
            return a.copy()
        return outputs.store(out, a, "round", casting="same_kind")
    factor = float(10.0 ** abs(decimals))
    scale, unscale = (np.multiply, np.true_divide) if decimals >= 0 else \
        (np.true_divide, np.multiply)
    scaled = ufuncs.apply(scale, a, factor)
    result = ufuncs.apply(unscale, ufuncs.apply(np.rint, scaled), factor)
    if a.dtype.kind in "iu":
        result = ufuncs.astype(result, a.dtype)
    if out is None:
        return result
    return outputs.store(out, result, "round", casting="same_kind")


round_ = around


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None) -> ndarray:
    """numpy.nan_to_num: NaN to ``nan``, infinities to ``posinf``/``neginf`` (the type's
    largest and lowest finite values by default), one launch; integers unchanged."""
    x = asarray(x)
    if x.dtype.kind not in "f":
        if x.dtype.kind == "c":
            raise DptxError("complex dtypes are not supported on dptx arrays yet")
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


_UNSET = object()


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=None,
        correction=_UNSET):
    """numpy.var, as numpy's ``_var`` computes it: the mean (kept dimensions, in ``dtype``,
    float64 for integers and booleans; or the ``mean=`` given), the squared deviations,
    their sum divided by ``count - ddof`` (at least 0); ``where=`` counts and sums the
    selected elements only; ``correction`` is ``ddof``'s other name; numpy's warning where
    the slices have no degrees of freedom (without ``where=``: their size says it)."""
    import warnings
    if correction is not _UNSET:
        if ddof != 0:
            raise ValueError("ddof and correction can't be provided simultaneously.")
        ddof = correction
    a = asarray(a)
    axes = tuple(range(a.ndim)) if axis is None else \
        _axes(axis if isinstance(axis, tuple) else (axis,), a.ndim)
    if where is True:
        count = int(np.prod([a.shape[k] for k in axes], dtype=np.int64))
        short = ddof >= count
        kept = count
    else:
        # (numpy also warns where a selected slice has no degrees of freedom: knowing would
        # need a wait for the counts, which dptx does not make behind the caller's back)
        mask = reductions._where_mask(where, a.shape)
        ones = ufuncs.astype(mask, np.int64) if mask.shape == a.shape else \
            reductions._broadcast_count(mask, a.shape)
        kept = reductions.sum_(ones, axis=axis, keepdims=True)
        count = kept if keepdims else kept.reshape(
            tuple(n for k, n in enumerate(a.shape) if k not in axes))
        short = False
    if short:
        warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=2)
    if dtype is None and a.dtype.kind in "iub":
        dtype = np.float64
    if mean is not None:
        center = asarray(mean)
    else:
        total = reductions.sum_(a, axis=axis, dtype=dtype, keepdims=True, where=where)
        center = ufuncs.apply(np.true_divide, total, kept)
        if center.dtype != total.dtype:          # numpy divides into the sum (unsafe)
            center = ufuncs.astype(center, total.dtype)
    deviation = ufuncs.apply(np.subtract, a, center)
    squares = ufuncs.apply(np.multiply, deviation, deviation)
    total = reductions.sum_(squares, axis=axis, dtype=dtype, keepdims=keepdims, where=where)
    dof = max(count - ddof, 0) if where is True else \
        ufuncs.apply(np.maximum, ufuncs.apply(np.subtract, count, ddof), 0)
    result = ufuncs.apply(np.true_divide, total, dof)
    if result.dtype != total.dtype:
        result = ufuncs.astype(result, total.dtype)
    if out is None:
        return result
    return outputs.store(out, result, "var")      # numpy: unsafe


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=None,
        correction=_UNSET):
    """numpy.std: the square root of ``var``."""
    result = ufuncs.apply(np.sqrt, var(a, axis=axis, dtype=dtype, ddof=ddof,
                                       keepdims=keepdims, where=where, mean=mean,
                                       correction=correction))
    if out is None:
        return result
    return outputs.store(out, result, "std", casting="same_kind")


def sinc(x):
    """numpy.sinc: sin(pi x) / (pi x), with numpy's eps for x = 0 (so sinc(0) is 1)."""
    x = ufuncs.apply(np.multiply, np.pi, asarray(x))
    eps = np.finfo(x.dtype).eps if x.dtype.kind == "f" else 1e-20
    y = ufuncs.where(x, x, np.array(eps, x.dtype)[()])
    return ufuncs.apply(np.true_divide, ufuncs.apply(np.sin, y), y)


def fix(x, out=None):
    """numpy.fix: rounded towards zero (numpy's ``trunc``)."""
    return ufuncs.apply(np.trunc, asarray(x), out=out)


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


def real(val):
    """numpy.real: of a real array, the array itself (a view)."""
    return asarray(val).real


def imag(val):
    """numpy.imag: of a real array, zeros."""
    return asarray(val).imag


def angle(z, deg=False):
    """numpy.angle: arctan2(0, z) for real ``z`` (0 or pi, signed zeros and NaNs as
    numpy's), in degrees with ``deg``."""
    z = asarray(z)
    if z.dtype.kind == "c":
        raise DptxError("complex dtypes are not supported on dptx arrays yet")
    a = ufuncs.apply(np.arctan2, 0, z)
    if deg:
        a = ufuncs.apply(np.multiply, a, 180 / np.pi)
    return a


def polyval(p, x):
    """numpy.polyval: Horner's rule, y = y * x + c for each coefficient, highest first."""
    p, x = asarray(p), asarray(x)
    y = zeros_like(x)
    for k in range(p.shape[0]):
        y = ufuncs.apply(np.add, ufuncs.apply(np.multiply, y, x), p[k])
    return y


def unwrap(p, discont=None, axis=-1, *, period=2 * np.pi) -> ndarray:
    """numpy.unwrap: jumps between neighbours along ``axis`` larger than ``discont`` (half
    the period by default) taken back by whole periods, numpy's steps (its boundary rule for
    a jump of exactly half a period, integer periods exactly)."""
    from ..runtime.ndarray import _axes
    from .._manipulation.rearranging import diff
    from .._core.scan import cumsum
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


def polyfit(x, y, deg, rcond=None, full=False, w=None, cov=False):
    """numpy.polyfit: the least-squares polynomial of degree ``deg`` (coefficients highest
    first; one column per column of a 2-D y), numpy's scaled Vandermonde matrix through
    ``lstsq``; ``full`` adds (residuals, rank, singular values, rcond), ``cov`` the
    covariance matrices (scaled by the residuals over the degrees of freedom, or not with
    'unscaled'); numpy's RankWarning where the rank falls short."""
    import warnings
    from .._core import reductions as red
    from ..linalg._lu import inv
    from .._creation.matrices import vander
    from ..linalg._pseudoinverse import lstsq
    order = int(deg) + 1
    x = ufuncs.apply(np.add, asarray(x), 0.0)
    y = ufuncs.apply(np.add, asarray(y), 0.0)
    if deg < 0:
        raise ValueError("expected deg >= 0")
    if x.ndim != 1:
        raise TypeError("expected 1D vector for x")
    if x.size == 0:
        raise TypeError("expected non-empty vector for x")
    if y.ndim < 1 or y.ndim > 2:
        raise TypeError("expected 1D or 2D array for y")
    if x.shape[0] != y.shape[0]:
        raise TypeError("expected x and y to have same length")
    if rcond is None:
        rcond = len(x) * np.finfo(x.dtype).eps
    lhs = vander(x, order)
    rhs = y
    if w is not None:
        w = ufuncs.apply(np.add, asarray(w), 0.0)
        if w.ndim != 1:
            raise TypeError("expected a 1-d array for weights")
        if w.shape[0] != y.shape[0]:
            raise TypeError("expected w and y to have the same length")
        lhs = ufuncs.apply(np.multiply, lhs, w[:, None])
        rhs = ufuncs.apply(np.multiply, rhs, w if rhs.ndim == 1 else w[:, None])
    scale = ufuncs.apply(np.sqrt, red.sum_(ufuncs.apply(np.multiply, lhs, lhs), axis=0))
    lhs = ufuncs.apply(np.true_divide, lhs, scale)
    c, resids, rank, s = lstsq(lhs, rhs, rcond)
    c = ufuncs.apply(np.true_divide, c.T, scale).T
    if rank != order and not full:
        warnings.warn("Polyfit may be poorly conditioned", np.exceptions.RankWarning,
                      stacklevel=2)
    if full:
        return c, resids, rank, s, rcond
    if cov:
        Vbase = inv(red.matmul(lhs.T, lhs))
        Vbase = ufuncs.apply(np.true_divide, Vbase, _outer(scale))
        if cov == "unscaled":
            fac = 1
        else:
            if len(x) <= order:
                raise ValueError("the number of data points must exceed order to scale "
                                 "the covariance matrix")
            fac = ufuncs.apply(np.true_divide, resids, len(x) - order)
        if y.ndim == 1:
            return c, ufuncs.apply(np.multiply, Vbase, fac)
        return c, ufuncs.apply(np.multiply, Vbase[:, :, None], fac)
    return c


def _outer(v):
    return ufuncs.apply(np.multiply, v[:, None], v[None, :])
