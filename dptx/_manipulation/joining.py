"""Joining arrays, as numpy's: ``concatenate``, the ``stack`` family and ``block``. Each part is one
device copy into its slab of the result (a strided view where the axis is not the first):
the parts never pass through the host."""
from __future__ import annotations

import numpy as np

from .._core import outputs
from ..runtime.ndarray import _axes, asarray, empty, ndarray


def concatenate(arrays, axis=0, out=None, dtype=None, casting="same_kind") -> ndarray:
    """numpy.concatenate along ``axis`` (``None``: of the flattened arrays): one device copy
    per part, into its slab of the result (a strided view where ``axis`` is not the first).
    Each part must convert to the result's type (``out``'s, ``dtype``, or the parts' common
    one) under ``casting``, as numpy checks."""
    if out is not None and dtype is not None:
        raise TypeError("concatenate() only takes `out` or `dtype` as an argument, but both "
                        "were provided.")
    arrays = [asarray(x) for x in arrays]
    if not arrays:
        raise ValueError("need at least one array to concatenate")
    if axis is None:
        arrays, axis = [x.reshape(-1) for x in arrays], 0
    ndim = arrays[0].ndim
    if ndim == 0:
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    ax = _axes((axis,), ndim)[0]
    for x in arrays:
        if x.ndim != ndim or any(x.shape[k] != arrays[0].shape[k] for k in range(ndim) if k != ax):
            raise ValueError("all the input array dimensions except for the concatenation "
                             "axis must match exactly")
    if out is not None:
        dt = out.dtype if isinstance(out, ndarray) else None
    else:
        dt = np.dtype(dtype) if dtype is not None else np.result_type(*[x.dtype for x in arrays])
    shape = list(arrays[0].shape)
    shape[ax] = sum(x.shape[ax] for x in arrays)
    if out is not None:
        outputs.check(out, tuple(shape), dt, "concatenate")     # (out's shape exactly)
    for x in arrays:
        if not np.can_cast(x.dtype, dt, casting):
            raise TypeError(f"Cannot cast array data from {x.dtype!r} to {dt!r} according to "
                            f"the rule {casting!r}")
    result = out if out is not None else empty(tuple(shape), dt)
    at = 0
    for x in arrays:
        n = x.shape[ax]
        if n and x.size:
            # the array API's device copy converts and writes through strides: one launch
            result[(slice(None),) * ax + (slice(at, at + n),)] = x
        at += n
    return result


def stack(arrays, axis=0, out=None, *, dtype=None, casting="same_kind") -> ndarray:
    """numpy.stack: the arrays (all of one shape) joined along a new axis."""
    arrays = [asarray(x) for x in arrays]
    if not arrays:
        raise ValueError("need at least one array to stack")
    if any(x.shape != arrays[0].shape for x in arrays):
        raise ValueError("all input arrays must have the same shape")
    ax = _axes((axis,), arrays[0].ndim + 1)[0]
    return concatenate([x.reshape(x.shape[:ax] + (1,) + x.shape[ax:]) for x in arrays],
                       axis=ax, out=out, dtype=dtype, casting=casting)


def _at_least(x: ndarray, ndim: int) -> ndarray:
    """numpy's atleast_1d/atleast_2d: a 1-D array becomes a row of a 2-D one."""
    if x.ndim >= ndim:
        return x
    if ndim == 1 or x.ndim == 0:
        return x.reshape((1,) * ndim)
    return x.reshape((1,) + x.shape)


def vstack(tup, *, dtype=None, casting="same_kind") -> ndarray:
    """numpy.vstack: along the first axis, 1-D arrays taken as rows."""
    return concatenate([_at_least(asarray(x), 2) for x in tup], axis=0, dtype=dtype,
                       casting=casting)


def hstack(tup, *, dtype=None, casting="same_kind") -> ndarray:
    """numpy.hstack: along the second axis, or the first for 1-D arrays."""
    arrays = [_at_least(asarray(x), 1) for x in tup]
    return concatenate(arrays, axis=0 if arrays and arrays[0].ndim == 1 else 1, dtype=dtype,
                       casting=casting)


def dstack(tup) -> ndarray:
    """numpy.dstack: along the third axis (1-D arrays as (1, n, 1), 2-D as (m, n, 1))."""
    arrays = []
    for x in tup:
        x = asarray(x)
        if x.ndim < 3:
            x = x.reshape((1,) * (x.ndim == 0) + ((1,) + x.shape if x.ndim == 1 else x.shape)
                          + (1,))
        arrays.append(x)
    return concatenate(arrays, axis=2)


def column_stack(tup) -> ndarray:
    """numpy.column_stack: 1-D arrays as columns of a 2-D one, 2-D ones as they are."""
    arrays = [asarray(x) for x in tup]
    arrays = [x.reshape(x.shape + (1,)) if x.ndim < 2 else x for x in arrays]
    return concatenate(arrays, axis=1)


def block(arrays) -> ndarray:
    """numpy.block: an array assembled from nested lists of blocks, the innermost lists
    joined along the last axis, the next ones along the one before, and so on (every block
    given at least the nesting's number of dimensions, ones in front, as numpy does)."""
    def depth(x, path, level=0):
        """(lists below x, most dimensions of its blocks, the path to its first block)."""
        if type(x) is tuple:
            raise TypeError(f"{path} is a tuple. Only lists can be used to arrange blocks, "
                            f"and np.block does not allow implicit conversion from tuple to "
                            f"ndarray.")
        if type(x) is not list:
            return 0, asarray(x).ndim, path
        if not x:
            raise ValueError(f"List at {path} cannot be empty")
        found = [depth(y, f"{path}[{k}]", level + 1) for k, y in enumerate(x)]
        odd = [f for f in found if f[0] != found[0][0]]
        if odd:
            raise ValueError(f"List depths are mismatched. First element was at depth "
                             f"{level + found[0][0] + 1}, but there is an element at depth "
                             f"{level + odd[0][0] + 1} ({odd[0][2]})")
        return found[0][0] + 1, max(n for _, n, _ in found), found[0][2]

    lists, most, _ = depth(arrays, "arrays")
    ndim = max(lists, most)

    def assemble(x, level):
        if level == lists:
            a = asarray(x)
            return a.reshape((1,) * (ndim - a.ndim) + a.shape)
        return concatenate([assemble(y, level + 1) for y in x], axis=-(lists - level))

    result = assemble(arrays, 0)
    return result.copy() if lists == 0 else result
