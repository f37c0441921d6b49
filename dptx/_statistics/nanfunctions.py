"""numpy's NaN-aware functions on dptx arrays, as numpy 2's ``_nanfunctions_impl`` computes
them (its formulas, dtypes and errors): the reductions (``nansum nanprod nanmin nanmax
nanmean nanvar nanstd nanargmin nanargmax``), the running ``nancumsum``/``nancumprod``, and
the order statistics ``nanmedian``/``nanquantile``/``nanpercentile`` (numpy's 13 methods over
each slice's non-NaN elements). NaNs are replaced or counted on the devices; the order
statistics sort each slice (NaNs last) and read each slice's elements at indices computed on
the devices from its count of numbers, as numpy indexes the slice with its NaNs removed.

Where numpy warns (an all-NaN slice, degrees of freedom <= 0) the result is numpy's (NaN)
without the warning: knowing would need a wait for the data, as for CuPy. ``nanargmin`` and
``nanargmax`` raise numpy's ValueError for an all-NaN slice (one value read back)."""
from __future__ import annotations

import numpy as np

from .._manipulation import joining
from . import moments
from .._core import outputs, reductions, scan, ufuncs
from .._sorting import sorting
from . import statistics
from ..runtime.ndarray import asarray, ndarray
from ..errors import DptxError
from .._creation.ranges import arange

__all__ = ["nanargmax", "nanargmin", "nancumprod", "nancumsum", "nanmax", "nanmean",
           "nanmedian", "nanmin", "nanpercentile", "nanprod", "nanquantile", "nanstd",
           "nansum", "nanvar"]


def _nan_mask(a: ndarray):
    return ufuncs.apply(np.isnan, a) if a.dtype.kind == "f" else None


def _replace_nan(a: ndarray, value):
    """(``a`` with its NaNs replaced by ``value``, the NaN mask), numpy's ``_replace_nan``;
    arrays that cannot hold NaN unchanged, with no mask."""
    mask = _nan_mask(a)
    return (a, None) if mask is None else (ufuncs.where(mask, value, a), mask)


def _numbers(mask: ndarray, axis, keepdims: bool, dtype=np.intp, where=True) -> ndarray:
    """How many elements of each slice are numbers (where the NaN mask is False; of those
    ``where`` selects)."""
    return reductions.sum_(ufuncs.apply(np.logical_not, mask), axis=axis, dtype=dtype,
                           keepdims=keepdims, where=where)


def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    a, _ = _replace_nan(asarray(a), 0)
    return reductions.sum_(a, axis=axis, dtype=dtype, out=out, keepdims=keepdims,
                           initial=initial, where=where)


def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=True):
    a, _ = _replace_nan(asarray(a), 1)
    return reductions.prod(a, axis=axis, dtype=dtype, out=out, keepdims=keepdims,
                           initial=initial, where=where)


def _nan_extreme(a, axis, out, keepdims, op: str, initial, where):
    a = asarray(a)
    if a.dtype.kind != "f":
        if where is not True and initial is None:      # (numpy reduces with fmin/fmax)
            raise ValueError(f"reduction operation '{op}' does not have an identity, so to "
                             f"use a where mask one has to specify 'initial'")
        fn = reductions.min_ if op == "fmin" else reductions.max_
        return fn(a, axis=axis, out=out, keepdims=keepdims, initial=initial, where=where)
    # numpy's fmin.reduce: NaN only for an all-NaN slice (numpy also warns there: that
    # would need a wait for the result; CuPy does not warn either)
    return reductions._reduce_where(a, op, axis, None, out, keepdims, a.dtype, where, initial)


def nanmin(a, axis=None, out=None, keepdims=False, initial=None, where=True):
    return _nan_extreme(a, axis, out, keepdims, "fmin", initial, where)


def nanmax(a, axis=None, out=None, keepdims=False, initial=None, where=True):
    return _nan_extreme(a, axis, out, keepdims, "fmax", initial, where)


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
    """numpy.nanmean: the sum of the non-NaN elements (of those ``where`` selects) divided
    by their count, in the sum's type (NaN where a slice has none)."""
    a = asarray(a)
    arr, mask = _replace_nan(a, 0)
    if mask is None:
        return reductions.mean(a, axis=axis, dtype=dtype, out=out, keepdims=keepdims,
                               where=where)
    if dtype is not None and np.dtype(dtype).kind != "f":
        raise TypeError("If a is inexact, then dtype must be inexact")
    total = reductions.sum_(arr, axis=axis, dtype=dtype, keepdims=keepdims, where=where)
    quotient = _divide_by_count(total, _numbers(mask, axis, keepdims, where=where))
    return quotient if out is None else outputs.store(out, quotient, "nanmean")


def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True,
           mean=None, correction=None):
    """numpy.nanvar: the squared deviations of the non-NaN elements (of those ``where``
    selects) from their mean (or the ``mean=`` given), summed and divided by their count
    less ``ddof`` (NaN where that is <= 0), in numpy's types and order of operations."""
    if correction is not None:
        if ddof != 0:
            raise ValueError("ddof and correction can't be provided simultaneously.")
        ddof = correction
    a = asarray(a)
    arr, mask = _replace_nan(a, 0)
    if mask is None:
        return moments.var(arr, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims,
                           where=where, mean=mean)
    if dtype is not None and np.dtype(dtype).kind != "f":
        raise TypeError("If a is inexact, then dtype must be inexact")
    if out is not None and out.dtype.kind != "f":
        raise TypeError("If a is inexact, then out must be inexact")
    count = _numbers(mask, axis, True, where=where)
    if mean is not None:
        avg = asarray(mean)
    else:
        avg = _divide_by_count(reductions.sum_(arr, axis=axis, dtype=dtype, keepdims=True,
                                               where=where), count)
    # numpy subtracts into arr (its type, an unsafe cast), zeroes the NaNs' places, squares
    deviation = _in_type(ufuncs.apply(np.subtract, arr, avg), arr.dtype)
    deviation = ufuncs.where(mask, np.zeros((), arr.dtype)[()], deviation)
    squares = ufuncs.apply(np.multiply, deviation, deviation)
    var = reductions.sum_(squares, axis=axis, dtype=dtype, keepdims=keepdims, where=where)
    dof = ufuncs.apply(np.subtract, count if keepdims else count.reshape(var.shape), ddof)
    var = _divide_by_count(var, dof)
    var = ufuncs.where(ufuncs.apply(np.less_equal, dof, 0), np.array(np.nan, var.dtype)[()], var)
    return var if out is None else outputs.store(out, var, "nanvar")


def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True,
           mean=None, correction=None):
    """numpy.nanstd: the square root of ``nanvar``, in its type."""
    var = nanvar(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims, where=where,
                 mean=mean, correction=correction)
    std = ufuncs.apply(np.sqrt, var)
    return std if out is None else outputs.store(out, std, "nanstd")


def _in_type(x: ndarray, dtype) -> ndarray:
    return x if x.dtype == dtype else ufuncs.astype(x, dtype)


def _divide_by_count(total: ndarray, count: ndarray) -> ndarray:
    """numpy's ``_divide_by_count``: a true division written back in the dividend's type."""
    return _in_type(ufuncs.apply(np.true_divide, total, count), total.dtype)


def _nan_arg(a, axis, out, keepdims, op: str):
    a = asarray(a)
    arr, mask = _replace_nan(a, np.inf if op == "min" else -np.inf)
    if mask is not None and mask.size:
        if bool(reductions.any_(reductions.all_(mask, axis=axis))):
            raise ValueError("All-NaN slice encountered")
    fn = reductions.argmin if op == "min" else reductions.argmax
    return fn(arr, axis=axis, out=out, keepdims=keepdims)


def nanargmin(a, axis=None, out=None, *, keepdims=False):
    """numpy.nanargmin: argmin with NaNs as +inf; numpy's ValueError for an all-NaN slice."""
    return _nan_arg(a, axis, out, keepdims, "min")


def nanargmax(a, axis=None, out=None, *, keepdims=False):
    """numpy.nanargmax: argmax with NaNs as -inf; numpy's ValueError for an all-NaN slice."""
    return _nan_arg(a, axis, out, keepdims, "max")


def nancumsum(a, axis=None, dtype=None, out=None):
    """numpy.nancumsum: the running sum with NaNs as zeros."""
    arr, _ = _replace_nan(asarray(a), 0)
    return scan.cumsum(arr, axis=axis, dtype=dtype, out=out)


def nancumprod(a, axis=None, dtype=None, out=None):
    """numpy.nancumprod: the running product with NaNs as ones."""
    arr, _ = _replace_nan(asarray(a), 1)
    return scan.cumprod(arr, axis=axis, dtype=dtype, out=out)


# -- order statistics over the numbers of each slice ---------------------------------------
def _gather_last(s: ndarray, index: ndarray) -> ndarray:
    """``s[..., index]`` per slice: ``s`` of shape S + (N,), ``index`` of shape P + S (or
    broadcasting to it); the result P + S."""
    S = s.shape[:-1]
    shape = np.broadcast_shapes(index.shape, S)
    if not shape:
        return s[index.reshape(1)].reshape(())
    lead = len(shape) - len(S)
    grids = tuple(arange(n).reshape((1,) * (lead + k) + (n,) + (1,) * (len(S) - k - 1))
                  for k, n in enumerate(S))
    return s[grids + (index,)]


def _sorted_with_counts(a: ndarray, axis):
    """(each slice sorted, NaNs last: shape S + (N,); its count of numbers: S, int64)."""
    x = statistics.along_last(a, axis)
    counts = _numbers(ufuncs.apply(np.isnan, x), -1, False, np.int64)
    return sorting.sort(x, axis=-1), counts


def _nan_where_empty(result: ndarray, counts: ndarray) -> ndarray:
    """NaN (numpy's value for an all-NaN slice) where a slice has no numbers."""
    return ufuncs.where(ufuncs.apply(np.equal, counts, 0), np.array(np.nan, result.dtype)[()],
                        result)


def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """numpy.nanmedian: the median of each slice's non-NaN elements (the middle one, or the
    mean of the middle two, in median's type); NaN for an all-NaN slice."""
    a = asarray(a)
    if a.size == 0:
        return nanmean(a, axis, out=out, keepdims=keepdims)
    if a.dtype.kind != "f":
        return statistics.median(a, axis=axis, out=out, keepdims=keepdims)
    s, counts = _sorted_with_counts(a, axis)
    lower = ufuncs.apply(np.floor_divide, ufuncs.apply(np.subtract, counts, 1), 2)
    upper = ufuncs.apply(np.floor_divide, counts, 2)
    low, high = _gather_last(s, lower), _gather_last(s, upper)
    # numpy's median: the mean of the middle two (mean's type and rounding), or of the middle
    # one, which is that element (the mean of two equal ones could overflow)
    pair = joining.stack([low, high], axis=-1)
    result = reductions.mean(pair, axis=-1)
    result = ufuncs.where(ufuncs.apply(np.equal, lower, upper), _in_type(low, result.dtype),
                          result)
    result = _nan_where_empty(result, counts)
    if keepdims:
        result = result.reshape(statistics.kept_shape(a, axis))
    return result if out is None else outputs.store(out, result, "nanmedian")


def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                keepdims=False, *, weights=None):
    """numpy.nanquantile: ``quantile`` (numpy's 13 methods) of each slice's non-NaN
    elements; NaN for an all-NaN slice. The result has shape q.shape + the kept axes."""
    weak = type(q) in (int, float)
    q = np.asanyarray(q.get() if isinstance(q, ndarray) else q)
    if not (np.all(q >= 0) and np.all(q <= 1)):
        raise ValueError("Quantiles must be in the range [0, 1]")
    return _nanquantile(a, q, axis, out, method, keepdims, weights, weak)


def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                  keepdims=False, *, weights=None):
    """numpy.nanpercentile: ``nanquantile`` of q / 100."""
    weak = type(q) in (int, float)
    q = np.asanyarray(np.true_divide(q.get() if isinstance(q, ndarray) else q, 100))
    if not (np.all(q >= 0) and np.all(q <= 1)):
        raise ValueError("Percentiles must be in the range [0, 100]")
    return _nanquantile(a, q, axis, out, method, keepdims, weights, weak)


def _nanquantile(a, q: np.ndarray, axis, out, method, keepdims, weights, weak):
    method, a = statistics.checked_quantile_call(a, q, method, weights)
    if weights is not None:
        result = statistics.weighted_quantile(
            a, q, axis, statistics.valid_weights(weights, a, axis), skip_nan=True)
        if keepdims:
            result = result.reshape(q.shape + statistics.kept_shape(a, axis))
        return result if out is None else outputs.store(out, result, "nanquantile")
    if a.size == 0:
        return nanmean(a, axis, out=out, keepdims=keepdims)     # numpy's, q aside
    if a.dtype.kind != "f":
        return statistics.quantile(a, q.item() if weak else q, axis=axis, out=out, method=method,
                                   keepdims=keepdims)
    s, counts = _sorted_with_counts(a, axis)
    # numpy computes each slice's indices with its count as a Python int: in q's type
    count_type = q.dtype if q.dtype.kind == "f" else np.dtype(np.int64)
    if count_type.kind == "f" and s.shape[-1] > 2 ** (np.finfo(count_type).nmant + 1):
        raise DptxError(f"nanquantile: q of type {q.dtype} over slices of {s.shape[-1]} "
                        f"elements (more than that type holds integers exactly) is not "
                        f"supported; pass q as float64")
    lead = (1,) * q.ndim
    n = _in_type(counts, count_type).reshape(lead + counts.shape)
    qd = q[()] if q.ndim == 0 else asarray(q.reshape(q.shape + (1,) * counts.ndim))
    virtual = statistics.virtual_index(method, n, qd)
    if method in statistics.DISCRETE or (method == "linear" and virtual.dtype.kind in "iu"):
        result = _gather_last(s, virtual)
    else:
        # numpy's _get_indexes over the slice without its NaNs: past its last number both
        # indices are that one (-1 there), before the first both the first
        last = ufuncs.apply(np.subtract, counts, 1).reshape(lead + counts.shape)
        above = ufuncs.apply(np.greater_equal, virtual, ufuncs.apply(np.subtract, n, 1))
        below = ufuncs.apply(np.less, virtual, 0)
        previous = ufuncs.apply(np.floor, virtual)
        following = ufuncs.apply(np.add, previous, 1)
        previous, following = (
            ufuncs.astype(ufuncs.where(above, -1, ufuncs.where(below, 0, x)), np.intp)
            for x in (previous, following))
        gamma = statistics.interpolation_weight(method, virtual, previous)
        low = _gather_last(s, ufuncs.where(above, last, previous))
        high = _gather_last(s, ufuncs.where(above, last, following))
        result = statistics.lerp(low, high, gamma, weak=weak)
    result = _nan_where_empty(result, counts)
    if keepdims:
        result = result.reshape(q.shape + statistics.kept_shape(a, axis))
    return result if out is None else outputs.store(out, result, "nanquantile")
