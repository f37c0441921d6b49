"""numpy's order statistics on dptx arrays, as numpy computes them (its formulas, dtypes and
corner rules, read from numpy 2's ``_function_base_impl``): ``ptp``, ``average``, ``median``,
``quantile``/``percentile`` (numpy's 13 methods; ``nanfunctions`` has the NaN-aware ones).
Sorting, taking and interpolating run on the devices; the host works out indices and
weights from shapes and ``q`` only (and ``average`` reads back whether its weights sum to
zero, as numpy and CuPy raise for it)."""
from __future__ import annotations

import warnings

import numpy as np

from .._indexing import indexing
from .._core import outputs, reductions, scan, ufuncs
from .._sorting import sorting
from ..runtime.ndarray import _axes, asarray, ndarray
from .._indexing.index_tricks import take_along_axis
from .._manipulation.views import broadcast_to

# numpy's functions of these names (array_api dispatches numpy's to them)
__all__ = ["average", "median", "percentile", "ptp", "quantile"]


def ptp(a, axis=None, out=None, keepdims=False):
    """numpy.ptp: max - min (in the array's type, wrapping for integers as numpy's)."""
    a = asarray(a)
    hi = reductions.max_(a, axis=axis, keepdims=keepdims)
    lo = reductions.min_(a, axis=axis, keepdims=keepdims)
    return ufuncs.apply(np.subtract, hi, lo, out=out)


def average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    """numpy.average: the mean, or the weighted mean sum(a * w) / sum(w) in numpy's type
    (float64 at least for integer data); numpy's ZeroDivisionError where the weights sum to
    zero (one value read back)."""
    a = asarray(a)
    axes = None if axis is None else _axes(axis, a.ndim)
    if weights is None:
        avg = reductions.mean(a, axis=axes, keepdims=keepdims)
        # (numpy's ZeroDivisionError where the result is empty: a.size / 0)
        scale = np.array(a.size / avg.size, dtype=avg.dtype)[()]
        if returned:
            return avg, asarray(np.broadcast_to(scale, avg.shape).copy())
        return avg
    w = asarray(weights)
    R = np.result_type(a.dtype, w.dtype, "f8") if a.dtype.kind in "iub" else \
        np.result_type(a.dtype, w.dtype)
    if a.shape != w.shape:
        if axes is None:
            raise TypeError("Axis must be specified when shapes of a and weights differ.")
        if w.shape != tuple(a.shape[k] for k in axes):
            raise ValueError("Shape of weights must be consistent with shape of a along "
                             "specified axis.")
        w = w.transpose(tuple(int(k) for k in np.argsort(axes)))
        w = w.reshape(tuple(s if k in axes else 1 for k, s in enumerate(a.shape)))
    scale = reductions.sum_(w, axis=axes, dtype=R, keepdims=keepdims)
    if bool(reductions.any_(ufuncs.apply(np.equal, scale, 0.0))):
        raise ZeroDivisionError("Weights sum to zero, can't be normalized")
    products = ufuncs.apply(np.multiply, a.astype(R, copy=False), w.astype(R, copy=False))
    avg = ufuncs.apply(np.true_divide,
                       reductions.sum_(products, axis=axes, keepdims=keepdims), scale)
    if returned:
        if scale.shape != avg.shape:
            scale = ufuncs.apply(np.add, scale, np.zeros((), scale.dtype)[()])
        return avg, scale
    return avg


def along_last(a: ndarray, axis) -> ndarray:
    """``a`` with the axes in ``axis`` (all for None) moved last and merged into one (the
    keepdims shape is ``kept_shape``'s)."""
    if axis is None:
        return a.reshape(-1)
    axes = _axes(axis, a.ndim)
    kept = [k for k in range(a.ndim) if k not in axes]
    moved = a.transpose(kept + list(axes))
    n = int(np.prod([a.shape[k] for k in axes], dtype=np.int64))
    merged = moved.reshape(tuple(a.shape[k] for k in kept) + (n,))
    return merged


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """numpy.median: the middle element of each sorted slice, or the mean of the middle two
    (numpy's mean, so numpy's type); a slice holding a NaN gives that NaN."""
    a = asarray(a)
    x = along_last(a, axis)
    n = x.shape[-1]
    part = sorting.sort(x, axis=-1)
    middle = part[..., n // 2:n // 2 + 1] if n % 2 else part[..., max(n // 2 - 1, 0):n // 2 + 1]
    result = reductions.mean(middle, axis=-1)
    if a.dtype.kind == "f" and n:
        last = part[..., -1]
        result = ufuncs.where(ufuncs.apply(np.isnan, last), last, result)
    if keepdims:
        result = result.reshape(kept_shape(a, axis))
    return result if out is None else outputs.store(out, result, "median")


def kept_shape(a: ndarray, axis) -> tuple:
    axes = range(a.ndim) if axis is None else _axes(axis, a.ndim)
    return tuple(1 if k in axes else a.shape[k] for k in range(a.ndim))


def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
             keepdims=False, *, weights=None, interpolation=None):
    """numpy.quantile with numpy's 13 methods ('linear' its default): for each q, the sorted
    slice's element at the method's index, or the two around its fractional index
    interpolated as numpy's ``lerp`` with the method's weight; the result
    of shape ``q.shape + kept axes``; a slice holding a NaN gives that NaN (in the result's
    type: numpy returns a 0-d result's NaN in the input's type, a type that depends on the
    data, which a device array cannot have without a wait)."""
    weak = type(q) in (int, float)
    q = np.asanyarray(q.get() if isinstance(q, ndarray) else q)
    if not (np.all(q >= 0) and np.all(q <= 1)):
        raise ValueError("Quantiles must be in the range [0, 1]")
    return _quantile(a, q, axis, out, method, keepdims, weights, interpolation, weak)


def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False, *, weights=None, interpolation=None):
    """numpy.percentile: ``quantile`` of q / 100."""
    weak = type(q) in (int, float)
    q = np.true_divide(q.get() if isinstance(q, ndarray) else q, 100)
    q = np.asanyarray(q)
    if not (np.all(q >= 0) and np.all(q <= 1)):
        raise ValueError("Percentiles must be in the range [0, 100]")
    return _quantile(a, q, axis, out, method, keepdims, weights, interpolation, weak)


# Hyndman and Fan's continuous methods: the virtual index n q + alpha + q (1 - alpha - beta) - 1
_CONTINUOUS = {"interpolated_inverted_cdf": (0.0, 1.0), "hazen": (0.5, 0.5),
               "weibull": (0.0, 0.0), "median_unbiased": (1 / 3.0, 1 / 3.0),
               "normal_unbiased": (3 / 8.0, 3 / 8.0)}
DISCRETE = ("inverted_cdf", "closest_observation", "lower", "higher", "nearest")
_METHODS = ("inverted_cdf", "averaged_inverted_cdf", "closest_observation",
            "interpolated_inverted_cdf", "hazen", "weibull", "linear", "median_unbiased",
            "normal_unbiased", "lower", "higher", "midpoint", "nearest")


def _array(x):
    """``x`` as an array: numpy's ``asanyarray`` of host values; device arrays as they are."""
    return x if isinstance(x, ndarray) else np.asanyarray(x)


def virtual_index(method: str, n, q):
    """numpy's (fractional) index into the sorted slice for each q, per method: what its
    quantile methods' ``get_virtual_index`` compute (integers for the discrete ones). ``n``
    and ``q`` are host values, or device arrays (nanquantile: a count per slice) of the
    type numpy's arithmetic with a Python ``n`` gives."""
    if method == "linear":
        return (n - 1) * q
    if method in _CONTINUOUS:
        alpha, beta = _CONTINUOUS[method]
        return n * q + (alpha + q * (1 - alpha - beta)) - 1
    if method == "averaged_inverted_cdf":
        return n * q - 1
    if method == "lower":
        return np.floor((n - 1) * q).astype(np.intp)
    if method == "higher":
        return np.ceil((n - 1) * q).astype(np.intp)
    if method == "nearest":
        return np.around((n - 1) * q).astype(np.intp)
    if method == "midpoint":
        return 0.5 * (np.floor((n - 1) * q) + np.ceil((n - 1) * q))
    # the discrete inverses of the empirical distribution: the previous order statistic
    # where the fraction is 0 (closest_observation: where that one is odd, 1-based even)
    index = _array(n * q - 1 - (0.5 if method == "closest_observation" else 0))
    previous = np.floor(index)
    at = (index - previous) == 0
    if method == "closest_observation":
        at = at & (previous % 2 == 1)
    chosen = _array(np.where(at, previous, previous + 1)).astype(np.intp)
    return np.maximum(chosen, 0)


def interpolation_weight(method: str, virtual: np.ndarray, previous: np.ndarray) -> np.ndarray:
    """numpy's interpolation weight: the virtual index past the previous one, except where
    the method fixes it (averaged_inverted_cdf: 1/2 at a whole index, else 1; midpoint: 0
    at a whole index, else 1/2), in the virtual index's type."""
    gamma = _array(virtual - previous)
    if method == "averaged_inverted_cdf":
        gamma = np.where(gamma == 0, 0.5, 1.0)
    elif method == "midpoint":
        gamma = np.where(virtual % 1 == 0, 0.0, 0.5)
    if isinstance(gamma, ndarray):
        return gamma if gamma.dtype == virtual.dtype else gamma.astype(virtual.dtype)
    return np.asanyarray(gamma, dtype=virtual.dtype)


def checked_quantile_call(a, q: np.ndarray, method: str, weights, interpolation=None):
    """(method, a as a dptx array) after numpy's checks of a quantile call (nanquantile's
    too), and its deprecated ``interpolation=``."""
    if interpolation is not None:
        if method != "linear":
            raise TypeError("You shall not pass both `method` and `interpolation`!\n"
                            "(`interpolation` is Deprecated in favor of `method`)")
        warnings.warn("the `interpolation=` argument to quantile was renamed to `method=`, "
                      "which has additional options.", DeprecationWarning, stacklevel=4)
        method = interpolation
    if method not in _METHODS:
        raise ValueError(f"{method!r} is not a valid method. Use one of: {_METHODS}")
    if weights is not None and method != "inverted_cdf":
        raise ValueError(f"Only method 'inverted_cdf' supports weights. Got: {method}.")
    if q.ndim > 1:
        raise ValueError("q must be a scalar or 1d")
    a = asarray(a)
    if a.dtype.kind == "b":
        raise TypeError("numpy boolean subtract, the `-` operator, is not supported, use the "
                        "bitwise_xor, the `^` operator, or the logical_xor function instead.")
    return method, a


def _quantile(a, q: np.ndarray, axis, out, method, keepdims, weights, interpolation, weak):
    method, a = checked_quantile_call(a, q, method, weights, interpolation)
    if weights is not None:
        result = weighted_quantile(a, q, axis, valid_weights(weights, a, axis))
        if keepdims:
            result = result.reshape(q.shape + kept_shape(a, axis))
        return result if out is None else outputs.store(out, result, "quantile")
    x = along_last(a, axis)
    n = x.shape[-1]
    if n == 0:
        raise IndexError("index -1 is out of bounds for axis 0 with size 0")
    # numpy's arrangement: the sampled axis first, the result q.shape + the kept axes
    arr = sorting.sort(x, axis=-1).transpose((x.ndim - 1,) + tuple(range(x.ndim - 1)))
    virtual = np.asanyarray(virtual_index(method, n, q))
    if method in DISCRETE or (method == "linear" and virtual.dtype.kind in "iu"):
        result = _take_first(arr, virtual)
    else:
        # numpy's _get_indexes: past the last element both are the last; before the first,
        # both the first
        previous = np.asanyarray(np.floor(virtual)).copy()
        following = np.asanyarray(previous + 1).copy()
        above, below = virtual >= n - 1, virtual < 0
        previous = np.where(above, -1, np.where(below, 0, previous))
        following = np.where(above, -1, np.where(below, 0, following))
        previous, following = previous.astype(np.intp), following.astype(np.intp)
        gamma = interpolation_weight(method, virtual, previous)
        lo = _take_first(arr, previous)
        hi = _take_first(arr, following)
        if weak:
            t = float(gamma)
        else:
            t = asarray(gamma.reshape(gamma.shape + (1,) * (arr.ndim - 1)))
        result = lerp(lo, hi, t)
    if a.dtype.kind == "f":
        last = arr[-1]
        nans = ufuncs.apply(np.isnan, last)
        result = ufuncs.where(nans, ufuncs.astype(last, result.dtype)
                              if last.dtype != result.dtype else last, result)
    if keepdims:
        result = result.reshape(q.shape + kept_shape(a, axis))
    return result if out is None else outputs.store(out, result, "quantile")


def valid_weights(weights, a: ndarray, axis) -> ndarray:
    """numpy's ``_weights_are_valid``: weights of a's shape, or of its shape along ``axis``
    (then broadcast along the others); and none negative (one value read back)."""
    w = asarray(weights if isinstance(weights, ndarray) else np.asanyarray(weights))
    if w.shape != a.shape:
        if axis is None:
            raise TypeError("Axis must be specified when shapes of a and weights differ.")
        axes = _axes(axis if isinstance(axis, tuple) else (axis,), a.ndim)
        if w.shape != tuple(a.shape[k] for k in axes):
            raise ValueError("Shape of weights must be consistent with shape of a along "
                             "specified axis.")
        w = w.transpose(tuple(np.argsort(axes)))
        w = broadcast_to(w.reshape(tuple(n if k in axes else 1 for k, n in enumerate(a.shape))),
                         a.shape)
    if w.size and bool(reductions.any_(ufuncs.apply(np.less, w, 0)).get()):
        raise ValueError("Weights must be non-negative.")
    return w


def weighted_quantile(a: ndarray, q: np.ndarray, axis, weights: ndarray,
                       skip_nan: bool = False) -> ndarray:
    """numpy's weighted 'inverted_cdf': per slice, the values sorted with their weights, the
    weights' running sum in float64 over its last (the cdf; numpy's ValueError where that is
    NaN: one value read back), in q's type, its leading zeros -1 (where any slice has one),
    and the first value whose cdf reaches q (the count of cdf values below it, as numpy's
    searchsorted 'left'); a slice holding a NaN gives that NaN. ``skip_nan`` (nanquantile):
    the NaNs left out with their weights instead, an all-NaN slice giving NaN."""
    x = along_last(a, axis)
    n = x.shape[-1]
    if n == 0:
        raise IndexError("index -1 is out of bounds for axis 0 with size 0")
    weights = along_last(weights, axis)
    skip_nan = skip_nan and a.dtype.kind == "f"
    if skip_nan:
        nan = ufuncs.apply(np.isnan, x)
        none = reductions.all_(nan, axis=-1)
        # (a NaN weighs nothing; an all-NaN slice's weights are placeholders: its result
        # is NaN whatever they are)
        weights = ufuncs.where(nan, 0, weights).astype(weights.dtype)
        weights = ufuncs.where(none[..., None], 1, weights).astype(weights.dtype)
    order = sorting.argsort(x, axis=-1)
    values = take_along_axis(x, order, axis=-1)
    w = take_along_axis(weights, order, axis=-1)
    cdf = scan.cumsum(w, axis=-1, dtype=np.float64)
    cdf = ufuncs.apply(np.true_divide, cdf, cdf[..., -1:])
    if bool(reductions.any_(ufuncs.apply(np.isnan, cdf[..., -1])).get()):
        raise ValueError("Weights included NaN, inf or were all zero.")
    if q.dtype.kind == "f" and q.dtype != cdf.dtype:
        cdf = ufuncs.astype(cdf, q.dtype)
    if bool(reductions.any_(ufuncs.apply(np.equal, cdf[..., 0], 0)).get()):
        cdf = ufuncs.where(ufuncs.apply(np.equal, cdf, 0), np.array(-1, cdf.dtype)[()], cdf)
    qs = asarray(q.reshape((-1,) + (1,) * cdf.ndim).astype(cdf.dtype))
    below = reductions.sum_(ufuncs.apply(np.less, cdf[None], qs), axis=-1, dtype=np.int64)
    index = ufuncs.apply(np.minimum, below, n - 1)             # (q.size, kept...)
    picked = take_along_axis(broadcast_to(values[None], index.shape + (n,)),
                             index[..., None], axis=-1)[..., 0]
    if skip_nan:
        picked = ufuncs.where(none[None], np.array(np.nan, picked.dtype)[()], picked)
    elif a.dtype.kind == "f":
        last = values[..., -1]
        picked = ufuncs.where(ufuncs.apply(np.isnan, last)[None], last[None], picked)
    return picked.reshape(q.shape + picked.shape[1:])


def _take_first(arr: ndarray, index: np.ndarray) -> ndarray:
    """``arr[index]`` along the first axis for host indices (a view for a scalar one)."""
    if index.ndim == 0:
        return arr[int(index)]
    return indexing.take(arr, index, axis=0)


def lerp(a: ndarray, b: ndarray, t, weak: bool = False):
    """numpy's ``_lerp``: a + (b - a) t, or b - (b - a)(1 - t) where t >= 0.5 (so that t = 1
    gives b exactly), written in the first one's type. ``weak``: ``t`` (a device array) stands
    for a Python float per element, as numpy's weak ``q`` makes it: 1 - t is taken in double
    and both factors rounded to the data's type, where numpy converts the Python floats."""
    diff = ufuncs.apply(np.subtract, b, a)
    if weak and isinstance(t, ndarray):
        one_minus = ufuncs.apply(np.subtract, 1, t)
        to = diff.dtype if diff.dtype.kind == "f" else t.dtype     # (integers: double)
        factor, one_minus = (x if x.dtype == to else ufuncs.astype(x, to)
                             for x in (t, one_minus))
    else:
        factor = t
        one_minus = 1 - t if isinstance(t, float) else ufuncs.apply(np.subtract, 1, t)
    low = ufuncs.apply(np.add, a, ufuncs.apply(np.multiply, diff, factor))
    high = ufuncs.apply(np.subtract, b, ufuncs.apply(np.multiply, diff, one_minus))
    if high.dtype != low.dtype:
        high = ufuncs.astype(high, low.dtype)
    if isinstance(t, float):
        return high if t >= 0.5 else low
    return ufuncs.where(ufuncs.apply(np.greater_equal, t, 0.5), high, low)
