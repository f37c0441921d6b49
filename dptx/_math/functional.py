"""numpy's helpers that call a user's function, written as numpy writes them, on dptx arrays:
``piecewise`` (the function of each condition on the elements where it holds, through
boolean masks on the devices), ``apply_along_axis`` (the function on each 1-D slice: one
call per slice from Python, as numpy and CuPy do it, each call's launches on the devices)
and ``apply_over_axes``. The functions receive dptx arrays: what they compute runs on the
devices."""
from __future__ import annotations

import itertools

import numpy as np

from .._core import reductions, ufuncs
from .._manipulation.joining import stack
from ..runtime.ndarray import _axes, asarray, expand_dims, ndarray, zeros, zeros_like

# numpy's functions of these names (array_api dispatches numpy's to them)
__all__ = ["apply_along_axis", "apply_over_axes", "piecewise"]


def piecewise(x, condlist, funclist, *args, **kw) -> ndarray:
    """numpy.piecewise: zeros of x's type, then for each condition, in order, its function
    of the elements where it holds (or its constant) written there; one function more than
    conditions is the otherwise case."""
    x = asarray(x)
    n2 = len(funclist)
    # (numpy's rule for one condition given bare: its first item is not an array; an item
    # of a dptx array is a 0-d array, numpy's would be a scalar)
    first = None if np.isscalar(condlist) else condlist[0]
    if first is None or (not isinstance(first, (list, np.ndarray)) and
                         not (isinstance(first, ndarray) and first.ndim) and x.ndim != 0):
        condlist = [condlist]
    conditions = [ufuncs.astype(asarray(c), np.bool_) if isinstance(c, ndarray)
                  else asarray(np.asarray(c, dtype=bool)) for c in condlist]
    n = len(conditions)
    if n == n2 - 1:
        anything = reductions.any_(stack(conditions), axis=0) if n else \
            zeros(x.shape, np.bool_)
        conditions.append(ufuncs.apply(np.logical_not, anything))
        n += 1
    elif n != n2:
        raise ValueError(f"with {n} condition(s), either {n} or {n + 1} functions are expected")
    y = zeros_like(x)
    for cond, func in zip(conditions, funclist):
        if not callable(func):
            y[cond] = func
        else:
            vals = x[cond]
            if vals.size > 0:
                y[cond] = func(vals, *args, **kw)
    return y


def apply_along_axis(func1d, axis, arr, *args, **kwargs) -> ndarray:
    """numpy.apply_along_axis: ``func1d`` of each 1-D slice along ``axis``, the results (of
    one shape, taken from the first) placed where the axis was."""
    arr = asarray(arr)
    nd = arr.ndim
    axis = _axes((axis,), nd)[0]
    in_dims = list(range(nd))
    view = arr.transpose(in_dims[:axis] + in_dims[axis + 1:] + [axis])
    indices = (index + (Ellipsis,) for index in itertools.product(
        *(range(n) for n in view.shape[:-1])))
    try:
        first = next(indices)
    except StopIteration:
        raise ValueError("Cannot apply_along_axis when any iteration dimensions are 0") \
            from None
    result = asarray(func1d(view[first], *args, **kwargs))
    buff = zeros(view.shape[:-1] + result.shape, result.dtype)
    dims = list(range(buff.ndim))
    permute = dims[:axis] + dims[buff.ndim - result.ndim:] + dims[axis:buff.ndim - result.ndim]
    buff[first] = result
    for index in indices:
        buff[index] = asarray(func1d(view[index], *args, **kwargs))
    return buff.transpose(permute)


def apply_over_axes(func, a, axes) -> ndarray:
    """numpy.apply_over_axes: ``func(a, axis)`` for each axis in turn, each result given
    back the axis it reduced."""
    val = asarray(a)
    N = val.ndim
    if np.ndim(axes) == 0:
        axes = (axes,)
    for axis in axes:
        if axis < 0:
            axis = N + axis
        res = func(val, axis)
        if res.ndim != val.ndim:
            res = expand_dims(res, axis)
            if res.ndim != val.ndim:
                raise ValueError("function is not returning an array of the correct shape")
        val = res
    return val
