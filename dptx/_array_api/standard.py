"""The names numpy 2 added from the array API standard (and numpy 2.2's ``matvec`` and
``vecmat``), on dptx's own functions: ``concat``, ``permute_dims``, ``matrix_transpose``,
``unstack``, ``astype``, ``cumulative_sum``/``cumulative_prod`` (``include_initial``),
``unique_values/counts/inverse/all``, ``vecdot``. Each computes on the devices as the
function it names does; the semantics are numpy's (numpy/_core/fromnumeric.py,
numpy/lib/_arraysetops_impl.py), errors included."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.lib.array_utils import normalize_axis_index

from .._manipulation import joining, views
from .._core import products, reductions, scan, ufuncs
from .._sorting import sorting
from ..runtime.ndarray import asarray, full, ndarray, transpose

__all__ = ["concat", "permute_dims", "matrix_transpose", "unstack", "astype", "cumulative_sum",
           "cumulative_prod", "unique_values", "unique_counts", "unique_inverse", "unique_all"]

concat = joining.concatenate


def permute_dims(a, axes=None) -> ndarray:
    """numpy.permute_dims: ``transpose``."""
    return transpose(asarray(a), axes)


def matrix_transpose(x) -> ndarray:
    """numpy.matrix_transpose: the last two axes swapped (a view)."""
    x = asarray(x)
    if x.ndim < 2:
        raise ValueError(f"Input array must be at least 2-dimensional, but it is {x.ndim}")
    return x.swapaxes(-1, -2)


def unstack(x, *, axis=0) -> tuple:
    """numpy.unstack: the views along ``axis``, in a tuple."""
    x = asarray(x)
    if x.ndim == 0:
        raise ValueError("Input array must be at least 1-d.")
    return tuple(views.moveaxis(x, axis, 0))


def astype(x, dtype, *, copy=True, device=None) -> ndarray:
    """numpy.astype (the array API's function form of ``x.astype``)."""
    if not isinstance(x, ndarray):
        raise TypeError(f"Input should be a dptx array, got {type(x).__name__}")
    return x.astype(dtype, copy=copy)


def cumulative_sum(x, *, axis=None, dtype=None, out=None, include_initial=False) -> ndarray:
    """numpy.cumulative_sum: ``cumsum`` along ``axis`` (required past 1-D), with the sum of
    nothing (0) first where ``include_initial``."""
    return _cumulative(scan.cumsum, 0, x, axis, dtype, out, include_initial)


def cumulative_prod(x, *, axis=None, dtype=None, out=None, include_initial=False) -> ndarray:
    """numpy.cumulative_prod: as ``cumulative_sum``, with products (1 first)."""
    return _cumulative(scan.cumprod, 1, x, axis, dtype, out, include_initial)


def _cumulative(running, identity, x, axis, dtype, out, include_initial) -> ndarray:
    x = views.atleast_1d(asarray(x))
    if axis is None:
        if x.ndim >= 2:
            raise ValueError("For arrays which have more than one dimension ``axis`` "
                             "argument is required.")
        axis = 0
    axis = normalize_axis_index(axis, x.ndim)
    if not include_initial:
        return running(x, axis=axis, dtype=dtype, out=out)
    rest = [slice(None)] * x.ndim
    first = list(rest)
    rest[axis], first[axis] = slice(1, None), slice(0, 1)
    if out is None:
        shape = list(x.shape)
        shape[axis] += 1
        result_type = running(x[tuple(first)], axis=axis, dtype=dtype).dtype
        out = full(tuple(shape), identity, result_type)
    else:
        out[tuple(first)] = identity
    running(x, axis=axis, dtype=dtype, out=out[tuple(rest)])
    return out


class UniqueAllResult(NamedTuple):
    values: ndarray
    indices: ndarray
    inverse_indices: ndarray
    counts: ndarray


class UniqueCountsResult(NamedTuple):
    values: ndarray
    counts: ndarray


class UniqueInverseResult(NamedTuple):
    values: ndarray
    inverse_indices: ndarray


def unique_values(x) -> ndarray:
    """numpy.unique_values: the distinct values (sorted here; numpy leaves the order
    unspecified), NaNs each distinct, as the array API has them."""
    return sorting.unique(x, equal_nan=False)


def unique_counts(x) -> UniqueCountsResult:
    """numpy.unique_counts: (values, how often each occurs)."""
    return UniqueCountsResult(*sorting.unique(x, return_counts=True, equal_nan=False))


def unique_inverse(x) -> UniqueInverseResult:
    """numpy.unique_inverse: (values, for each element of ``x`` the index of its value),
    the indices in ``x``'s shape."""
    x = asarray(x)
    values, inverse = sorting.unique(x, return_inverse=True, equal_nan=False)
    return UniqueInverseResult(values, inverse.reshape(x.shape))


def unique_all(x) -> UniqueAllResult:
    """numpy.unique_all: (values, the index of each one's first occurrence, the inverse
    indices in ``x``'s shape, the counts)."""
    x = asarray(x)
    values, index, inverse, counts = sorting.unique(
        x, return_index=True, return_inverse=True, return_counts=True, equal_nan=False)
    return UniqueAllResult(values, index, inverse.reshape(x.shape), counts)


def vecdot(x1, x2, /, out=None, *, axis=-1, dtype=None) -> ndarray:
    """numpy.vecdot (the ufunc ``(n),(n)->()``): the dot products of the vectors along
    ``axis``, the other axes broadcast. As numpy's loops: in the operands' common type
    (integers wrap), booleans as any(x1 & x2), float16 products and sum in float32, rounded
    once."""
    x1, x2 = asarray(x1), asarray(x2)
    for i, x in enumerate((x1, x2)):
        if x.ndim == 0:
            raise ValueError(f"vecdot: Input operand {i} does not have enough dimensions "
                             f"(has 0, gufunc core with signature (n),(n)->() requires 1)")
    n1 = x1.shape[normalize_axis_index(axis, x1.ndim)]
    n2 = x2.shape[normalize_axis_index(axis, x2.ndim)]
    if n1 != n2:
        raise ValueError(f"vecdot: Input operand 1 has a mismatch in its core dimension 0, "
                         f"with gufunc signature (n),(n)->() (size {n2} is different from "
                         f"{n1})")
    R = np.dtype(dtype) if dtype is not None else np.result_type(x1.dtype, x2.dtype)
    x1, x2 = views.moveaxis(x1, axis, -1), views.moveaxis(x2, axis, -1)
    if R == np.bool_:
        result = reductions.any_(ufuncs.apply(np.logical_and, x1, x2), axis=-1)
    elif R == np.float16:
        products = ufuncs.apply(np.multiply, x1.astype(np.float32), x2.astype(np.float32))
        result = reductions.sum_(products, axis=-1, dtype=np.float32).astype(np.float16)
    else:
        products = ufuncs.apply(np.multiply, x1.astype(R, copy=False), x2.astype(R, copy=False))
        result = reductions.sum_(products, axis=-1, dtype=R)
    return _into(out, result)


def matvec(x1, x2, /, out=None) -> ndarray:
    """numpy.matvec (``(m,n),(n)->(m)``): each matrix of ``x1`` times each vector of ``x2``,
    the stacks broadcast, as ``matmul``."""
    x1, x2 = asarray(x1), asarray(x2)
    if x1.ndim < 2 or x2.ndim < 1:
        raise ValueError("matvec: needs a matrix (or a stack of them) and a vector (or a "
                         f"stack), got {x1.ndim}-D and {x2.ndim}-D operands")
    result = products.matmul(x1, x2[..., None])[..., 0]
    return _into(out, result)


def vecmat(x1, x2, /, out=None) -> ndarray:
    """numpy.vecmat (``(n),(n,m)->(m)``): each vector of ``x1`` times each matrix of ``x2``,
    the stacks broadcast, as ``matmul``."""
    x1, x2 = asarray(x1), asarray(x2)
    if x1.ndim < 1 or x2.ndim < 2:
        raise ValueError("vecmat: needs a vector (or a stack of them) and a matrix (or a "
                         f"stack), got {x1.ndim}-D and {x2.ndim}-D operands")
    result = products.matmul(x1[..., None, :], x2)[..., 0, :]
    return _into(out, result)


def _into(out, result: ndarray) -> ndarray:
    """``result``, or ``out`` with it written in (converted, as a ufunc's out=)."""
    if out is None:
        return result
    out[...] = result
    return out
