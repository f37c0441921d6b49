"""numpy's functions that make an edited copy of an array, on dptx arrays: ``append``,
``insert`` and ``delete`` (along an axis, or of the flattened array), ``resize`` (repeating
the data cyclically) and ``trim_zeros``, as numpy 2 writes them: device copies between views,
and for index arrays one gather or scatter. Their index arguments (``obj``) are positions,
worked out on the host as numpy does (a device array of them is read back first);
``trim_zeros`` reads back where the first and last non-zero elements are."""
from __future__ import annotations

import numpy as np

from .._core import reductions, selection
from ..runtime.ndarray import _axes, asarray, empty, ndarray, ravel, zeros
from .joining import concatenate

__all__ = ["append", "delete", "insert", "resize", "trim_zeros"]


def _along(arr, axis):
    """(array, axis): the flattened array and its only axis for None (numpy's rule)."""
    arr = asarray(arr)
    if axis is None:
        arr = arr.reshape(-1) if arr.ndim != 1 else arr
        return arr, 0
    return arr, _axes(axis, arr.ndim)[0]


def _at(ndim: int, axis: int, index) -> tuple:
    return (slice(None),) * axis + (index,) + (slice(None),) * (ndim - axis - 1)


def _host(obj):
    return obj.get() if isinstance(obj, ndarray) else obj


def append(arr, values, axis=None):
    """numpy.append: ``values`` after ``arr`` (both flattened when ``axis`` is None)."""
    arr = asarray(arr)
    if axis is None:
        arr = arr.reshape(-1) if arr.ndim != 1 else arr
        values, axis = ravel(asarray(values)), arr.ndim - 1
    return concatenate((arr, values), axis=axis)


def delete(arr, obj, axis=None):
    """numpy.delete: ``arr`` without the positions ``obj`` (an integer, a slice, integers
    or a boolean mask) along ``axis``."""
    arr, axis = _along(arr, axis)
    ndim, N = arr.ndim, arr.shape[axis]
    newshape = list(arr.shape)
    obj = _host(obj)
    if isinstance(obj, slice):
        start, stop, step = obj.indices(N)
        xr = range(start, stop, step)
        numtodel = len(xr)
        if numtodel <= 0:
            return arr.copy()
        if step < 0:
            step, start, stop = -step, xr[-1], xr[0] + 1
        newshape[axis] -= numtodel
        new = empty(tuple(newshape), arr.dtype)
        if start != 0:
            new[_at(ndim, axis, slice(None, start))] = arr[_at(ndim, axis, slice(None, start))]
        if stop != N:
            new[_at(ndim, axis, slice(stop - numtodel, None))] = \
                arr[_at(ndim, axis, slice(stop, None))]
        if step != 1:
            keep = np.ones(stop - start, dtype=bool)
            keep[:stop - start:step] = False
            middle = arr[_at(ndim, axis, slice(start, stop))]
            new[_at(ndim, axis, slice(start, stop - numtodel))] = middle[_at(ndim, axis, keep)]
        return new
    single = isinstance(obj, (int, np.integer)) and not isinstance(obj, bool)
    if not single:
        given = obj
        obj = np.asarray(obj)
        if obj.size == 0 and not isinstance(given, np.ndarray):
            obj = obj.astype(np.intp)
        elif obj.size == 1 and obj.dtype.kind in "ui":
            obj, single = obj.item(), True
    if single:
        if obj < -N or obj >= N:
            raise IndexError(f"index {obj} is out of bounds for axis {axis} with size {N}")
        if obj < 0:
            obj += N
        newshape[axis] -= 1
        new = empty(tuple(newshape), arr.dtype)
        new[_at(ndim, axis, slice(None, obj))] = arr[_at(ndim, axis, slice(None, obj))]
        new[_at(ndim, axis, slice(obj, None))] = arr[_at(ndim, axis, slice(obj + 1, None))]
        return new
    if obj.dtype == bool:
        if obj.shape != (N,):
            raise ValueError(f"boolean array argument obj to delete must be one dimensional "
                             f"and match the axis length of {N}")
        keep = ~obj
    else:
        keep = np.ones(N, dtype=bool)
        keep[obj,] = False              # numpy's IndexError for a position out of bounds
    return arr[_at(ndim, axis, keep)]


def insert(arr, obj, values, axis=None):
    """numpy.insert: ``values`` put before the positions ``obj`` along ``axis``."""
    arr, axis = _along(arr, axis)
    ndim, N = arr.ndim, arr.shape[axis]
    newshape = list(arr.shape)
    obj = _host(obj)
    if isinstance(obj, slice):
        indices = np.arange(*obj.indices(N), dtype=np.intp)
    else:
        indices = np.array(obj)
        if indices.dtype == bool:
            if indices.ndim != 1:
                raise ValueError("boolean array argument obj to insert must be one dimensional")
            indices = np.flatnonzero(indices)
        elif indices.ndim > 1:
            raise ValueError("index array argument obj to insert must be one dimensional or "
                             "scalar")
    values = asarray(_host(values) if not isinstance(values, ndarray) else values)
    if values.dtype != arr.dtype:
        values = values.astype(arr.dtype)       # numpy's array(values, dtype=arr.dtype)
    if indices.size == 1:
        index = indices.item()
        if index < -N or index > N:
            raise IndexError(f"index {obj} is out of bounds for axis {axis} with size {N}")
        if index < 0:
            index += N
        values = values.reshape((1,) * (ndim - values.ndim) + values.shape)
        if indices.ndim == 0:
            # a[:, 0, :] = ... broadcasts differently from a[:, [0], :]: as numpy, the
            # values' first axis goes where the new positions are
            values = values.transpose(tuple(range(1, axis + 1)) + (0,) +
                                      tuple(range(axis + 1, values.ndim)))
        numnew = values.shape[axis]
        newshape[axis] += numnew
        new = empty(tuple(newshape), arr.dtype)
        new[_at(ndim, axis, slice(None, index))] = arr[_at(ndim, axis, slice(None, index))]
        new[_at(ndim, axis, slice(index, index + numnew))] = values
        new[_at(ndim, axis, slice(index + numnew, None))] = arr[_at(ndim, axis,
                                                                   slice(index, None))]
        return new
    if indices.size == 0 and not isinstance(obj, np.ndarray):
        indices = indices.astype(np.intp)
    indices = indices.copy()
    indices[indices < 0] += N
    numnew = len(indices)
    order = indices.argsort(kind="mergesort")
    indices[order] += np.arange(numnew)
    newshape[axis] += numnew
    old_mask = np.ones(newshape[axis], dtype=bool)
    old_mask[indices] = False           # numpy's IndexError for a position out of bounds
    new = empty(tuple(newshape), arr.dtype)
    new[_at(ndim, axis, indices)] = values
    new[_at(ndim, axis, old_mask)] = arr
    return new


def resize(a, new_shape):
    """numpy.resize: the flattened data repeated (or cut) to fill ``new_shape``."""
    if isinstance(new_shape, (int, np.integer)):
        new_shape = (new_shape,)
    a = ravel(asarray(a))
    new_size = 1
    for dim_length in new_shape:
        new_size *= dim_length
        if dim_length < 0:
            raise ValueError("all elements of `new_shape` must be non-negative")
    if a.size == 0 or new_size == 0:
        return zeros(tuple(new_shape), a.dtype)
    repeats = (new_size + a.size - 1) // a.size
    return concatenate((a,) * repeats)[:new_size].reshape(tuple(new_shape))


def trim_zeros(filt, trim="fb", axis=None):
    """numpy.trim_zeros: a view of ``filt`` without its leading ('f') and trailing ('b')
    zeros along ``axis`` (all axes by default): the bounding box of its non-zero elements
    (read back)."""
    filt = asarray(filt)
    trim = trim.lower()
    if trim not in {"fb", "bf", "f", "b"}:
        raise ValueError(f"unexpected character(s) in `trim`: {trim!r}")
    axes = tuple(range(filt.ndim)) if axis is None else _axes(axis, filt.ndim)
    if not axes:
        return filt
    nonzero = selection.argwhere(filt)
    if nonzero.shape[0] == 0:
        start = stop = np.zeros(filt.ndim, dtype=np.intp)
    else:
        start = reductions.min_(nonzero, axis=0).get()
        stop = reductions.max_(nonzero, axis=0).get() + 1
        if "f" not in trim:
            start = (None,) * filt.ndim
        if "b" not in trim:
            stop = (None,) * filt.ndim
    return filt[tuple(slice(start[ax], stop[ax]) if ax in axes else slice(None)
                      for ax in range(filt.ndim))]
