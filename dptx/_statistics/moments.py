"""numpy's ``var`` and ``std`` (``ddof``/``correction``, ``where=``, ``mean=``, ``dtype``,
``out=``), made of reductions as numpy's own definitions are, so that their types, NaN
handling and rounding are numpy's."""
from __future__ import annotations

import warnings

import numpy as np

from .._core import outputs, reductions, ufuncs
from ..runtime.ndarray import _axes, asarray

_UNSET = object()          # correction= not given (None is a value numpy refuses)


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=None,
        correction=_UNSET):
    """numpy.var, as numpy's ``_var`` computes it: the mean (kept dimensions, in ``dtype``,
    float64 for integers and booleans; or the ``mean=`` given), the squared deviations,
    their sum divided by ``count - ddof`` (at least 0); ``where=`` counts and sums the
    selected elements only; ``correction`` is ``ddof``'s other name; numpy's warning where
    the slices have no degrees of freedom (without ``where=``: their size says it)."""
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
