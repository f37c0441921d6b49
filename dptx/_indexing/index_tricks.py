"""numpy's index helpers on dptx arrays, with numpy's results and errors: ``take_along_axis``
and ``put_along_axis`` (a gather or a scatter through one fancy index, as numpy builds it),
``indices``, ``ix_``, ``unravel_index`` and ``ravel_multi_index`` (element-wise arithmetic),
``diag_indices``/``tril_indices``/``triu_indices`` (and their ``_from`` forms), ``select``
(a chain of ``where``), ``putmask`` and ``place`` (one kernel each: the values repeat
cyclically, as numpy's), ``choose`` (a gather from the stacked choices), ``compress`` and
``extract`` (a take of the condition's nonzero indices). Every index array is made and used on the devices; only the checks
numpy makes of data (an index out of bounds) read back one value."""
from __future__ import annotations

import numpy as np

from .._core import reductions, scan, selection, ufuncs
from .._core.elementwise import ElementwiseKernel, KernelCache
from .._core.reduction_kernel import EXACT
from .._creation import matrices
from .._creation.ranges import arange
from .._manipulation.joining import stack
from .._manipulation.views import broadcast_arrays
from ..runtime.ndarray import _axes, asarray, empty, ndarray, ones
from . import indexing

__all__ = ["choose", "compress", "diag_indices", "diag_indices_from", "extract", "indices", "ix_",
           "mask_indices", "place", "put_along_axis", "putmask", "ravel_multi_index", "select",
           "take_along_axis", "tril_indices", "tril_indices_from", "triu_indices",
           "triu_indices_from", "unravel_index"]

_kernels = KernelCache()


def _index_dtype_of(a) -> np.dtype:
    return a.dtype if isinstance(a, (ndarray, np.ndarray)) else np.asarray(a).dtype


# -- along an axis ----------------------------------------------------------------------------
def _along_axis_index(shape: tuple, indices, axis: int) -> tuple:
    """numpy's ``_make_along_axis_idx``: ``indices`` at ``axis``, an arange along each other
    axis shaped to broadcast against it."""
    if _index_dtype_of(indices).kind not in "iu":
        raise IndexError("`indices` must be an integer array")
    if len(shape) != np.ndim(indices):
        raise ValueError("`indices` and `arr` must have the same number of dimensions")
    ones = (1,) * len(shape)
    return tuple(indices if d == axis else
                 arange(n).reshape(ones[:d] + (-1,) + ones[d + 1:])
                 for d, n in enumerate(shape))


def _flat_axis(indices) -> None:
    if np.ndim(indices) != 1:
        raise ValueError("when axis=None, `indices` must have a single dimension.")


def take_along_axis(arr, indices, axis=-1):
    """numpy.take_along_axis: ``arr`` at ``indices`` along ``axis`` (the flattened array for
    None), the other axes matched element for element (one gather)."""
    arr = asarray(arr)
    if axis is None:
        _flat_axis(indices)
        arr, axis = arr.reshape(-1), 0
    else:
        axis = _axes(axis, arr.ndim)[0]
    return arr[_along_axis_index(arr.shape, indices, axis)]


def put_along_axis(arr, indices, values, axis) -> None:
    """numpy.put_along_axis: ``values`` written into ``arr`` at ``indices`` along ``axis``,
    the last one landing where an index repeats; for ``axis=None`` into the flattened array,
    which numpy can write through only for a contiguous one (a strided one's is a read-only
    copy there: numpy's ValueError)."""
    if not isinstance(arr, ndarray):
        raise TypeError(f"put_along_axis: arr must be a dptx array, got {type(arr).__name__}")
    if axis is None:
        _flat_axis(indices)
        if not arr._contiguous:
            raise ValueError("assignment destination is read-only")
        flat = arr.reshape(-1)
        flat[_along_axis_index(flat.shape, indices, 0)] = values
        return
    axis = _axes(axis, arr.ndim)[0]
    arr[_along_axis_index(arr.shape, indices, axis)] = values


# -- index grids --------------------------------------------------------------------------------
def indices(dimensions, dtype=int, sparse=False):
    """numpy.indices: the grid of indices of a shape, one row per axis (``sparse``: a tuple
    of aranges shaped to broadcast against each other)."""
    dimensions = tuple(int(d) for d in dimensions)
    N, dt = len(dimensions), np.dtype(dtype)
    ones = (1,) * N
    grids = [arange(d, dtype=dt).reshape(ones[:k] + (d,) + ones[k + 1:])
             for k, d in enumerate(dimensions)]
    if sparse:
        return tuple(grids)
    out = empty((N,) + dimensions, dt)
    for k, g in enumerate(grids):
        out[k] = g
    return out


def ix_(*args):
    """numpy.ix_: each 1-D sequence (a boolean one as its non-zero indices) shaped to index
    one axis of an open mesh."""
    out, nd = [], len(args)
    for k, new in enumerate(args):
        if not isinstance(new, ndarray):
            host = np.asarray(new)
            if host.size == 0:
                host = host.astype(np.intp)     # numpy's: an empty list is an index
            new = host
        if new.ndim != 1:
            raise ValueError("Cross index must be 1 dimensional")
        new = asarray(new)
        if new.dtype == np.bool_:
            new, = selection.nonzero(new)
        out.append(new.reshape((1,) * k + (new.size,) + (1,) * (nd - k - 1)))
    return tuple(out)


def _strides(dims: tuple, order: str) -> list:
    """Element strides of a C (or Fortran) ordered array of shape ``dims``."""
    if order not in ("C", "F"):
        raise ValueError("only 'C' or 'F' order is permitted")
    strides, s = [0] * len(dims), 1
    for k in (reversed(range(len(dims))) if order == "C" else range(len(dims))):
        strides[k] = s
        s *= dims[k]
    return strides


def _dims(shape) -> tuple:
    return (int(shape),) if np.ndim(shape) == 0 else tuple(int(d) for d in shape)


def _device_index(values) -> ndarray:
    """``values`` as an int64 device array; numpy's TypeError for other than integers."""
    if _index_dtype_of(values).kind not in "iu":
        raise TypeError("only int indices permitted")
    values = asarray(values)
    return values if values.dtype == np.int64 else ufuncs.astype(values, np.int64)


def _first_true(mask: ndarray):
    """The flat position of the first True of a device mask, or None (one read back)."""
    if not bool(reductions.any_(mask)):
        return None
    return int(selection.flatnonzero(mask)[0].get())


def unravel_index(indices, shape, order="C"):
    """numpy.unravel_index: a tuple of int64 arrays, the coordinates in an array of ``shape``
    of each flat index (numpy's ValueError, naming the first index out of bounds: one value
    read back)."""
    dims = _dims(shape)
    size = int(np.prod(dims, dtype=np.int64))
    flat = _device_index(indices)
    outside = ufuncs.apply(np.logical_or, ufuncs.apply(np.less, flat, 0),
                           ufuncs.apply(np.greater_equal, flat, size))
    at = _first_true(outside) if flat.size else None
    if at is not None:
        bad = int(flat.reshape(-1)[at].get())
        raise ValueError(f"index {bad} is out of bounds for array with size {size}")
    kernel = _kernels.get("unravel", lambda: ElementwiseKernel(
        "int64 x, int64 s, int64 d", "int64 z", "z = (x / s) % d", "dptx_unravel_index",
        options=EXACT))
    return tuple(kernel(flat, np.int64(s), np.int64(d))
                 for s, d in zip(_strides(dims, order), dims))


_MODES = ("raise", "wrap", "clip")


def ravel_multi_index(multi_index, dims, mode="raise", order="C"):
    """numpy.ravel_multi_index: the flat index (int64) of each coordinate tuple in an array
    of shape ``dims``; ``mode`` (one, or one per axis) 'raise' (numpy's ValueError: one
    value read back), 'wrap' (modulo) or 'clip'."""
    dims = _dims(dims)
    if len(multi_index) != len(dims):
        raise ValueError(f"parameter multi_index must be a sequence of length {len(dims)}")
    modes = (mode,) * len(dims) if isinstance(mode, str) else tuple(mode)
    if len(modes) != len(dims):
        raise ValueError(f"parameter mode must be a string or a sequence of length "
                         f"{len(dims)}")
    for m in modes:
        if m not in _MODES:
            raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' (got {m!r})")
    coords = [_device_index(c) for c in multi_index]
    total = None
    for c, d, s, m in zip(coords, dims, _strides(dims, order), modes):
        if m == "wrap":
            c = ufuncs.apply(np.remainder, c, d) if d else c
        elif m == "clip":
            c = ufuncs.clip(c, 0, max(d - 1, 0))
        elif c.size and bool(reductions.any_(ufuncs.apply(np.logical_or,
                                                          ufuncs.apply(np.less, c, 0),
                                                          ufuncs.apply(np.greater_equal, c, d)))):
            raise ValueError("invalid entry in coordinates array")
        term = ufuncs.apply(np.multiply, c, np.int64(s))
        total = term if total is None else ufuncs.apply(np.add, total, term)
    return total


def diag_indices(n, ndim=2):
    """numpy.diag_indices: ``ndim`` times the same arange(n) (one array, as numpy's)."""
    idx = arange(n)
    return (idx,) * ndim


def diag_indices_from(arr):
    if arr.ndim < 2:
        raise ValueError("input array must be at least 2-d")
    if len(set(arr.shape)) != 1:
        raise ValueError("All dimensions of input must be of equal length")
    return diag_indices(arr.shape[0], arr.ndim)


def tril_indices(n, k=0, m=None):
    """numpy.tril_indices: the (row, column) indices of the lower triangle, in C order."""
    return selection.nonzero(matrices.tri(n, m, k=k, dtype=bool))


def triu_indices(n, k=0, m=None):
    """numpy.triu_indices: the (row, column) indices of the upper triangle, in C order."""
    return selection.nonzero(ufuncs.apply(np.logical_not,
                                          matrices.tri(n, m, k=k - 1, dtype=bool)))


def mask_indices(n, mask_func, k=0):
    """numpy.mask_indices: the indices of the nonzero entries of ``mask_func(ones((n, n)),
    k)`` (``dptx.triu``, ``np.tril``...: a function of a dptx array)."""
    mask = mask_func(ones((n, n), np.int64), k)
    return selection.nonzero(ufuncs.apply(np.not_equal, mask, 0))


def _two_d(arr):
    if arr.ndim != 2:
        raise ValueError("input array must be 2-d")


def tril_indices_from(arr, k=0):
    _two_d(arr)
    return tril_indices(arr.shape[-2], k=k, m=arr.shape[-1])


def triu_indices_from(arr, k=0):
    _two_d(arr)
    return triu_indices(arr.shape[-2], k=k, m=arr.shape[-1])


# -- choosing and writing by masks -----------------------------------------------------------------
def _weak(v):
    """numpy's rule in select: Python numbers stay weak scalars, the rest become arrays."""
    if type(v) in (int, float, complex) or isinstance(v, ndarray):
        return v
    host = np.asarray(v)
    return host[()] if host.ndim == 0 else asarray(host)


def select(condlist, choicelist, default=0):
    """numpy.select: where the first true condition's choice, else ``default``, in the
    choices' common type (a ``where`` per condition, the last one first)."""
    if len(condlist) != len(choicelist):
        raise ValueError("list of cases must be same length as list of conditions")
    if len(condlist) == 0:
        raise ValueError("select with an empty condition list is not possible")
    choices = [_weak(c) for c in choicelist] + [_weak(default)]
    probes = [ufuncs._probe(c) for c in choices]
    try:
        dtype = np.result_type(*probes)
    except TypeError as e:
        raise TypeError(f"Choicelist and default value do not have a common dtype: {e}") \
            from None
    conds = [c if isinstance(c, ndarray) else np.asarray(c) for c in condlist]
    for i, c in enumerate(conds):
        if c.dtype != np.bool_:
            raise TypeError(f"invalid entry {i} in condlist: should be boolean ndarray")
    shape = np.broadcast_shapes(*[np.shape(c) for c in conds + choices])
    result = empty(shape, dtype)
    result[...] = choices[-1]
    for cond, choice in zip(conds[::-1], choices[-2::-1]):
        if isinstance(cond, np.ndarray):
            cond = asarray(cond) if cond.ndim else bool(cond)
        if cond is True:
            result[...] = choice
        elif cond is not False:
            picked = ufuncs.where(cond, choice, result)
            result = picked if picked.dtype == dtype else ufuncs.astype(picked, dtype)
    return result


def _same_size_mask(name: str, a: ndarray, mask) -> ndarray:
    if not isinstance(a, ndarray):
        raise TypeError(f"{name}: first argument must be a dptx array")
    mask = asarray(mask)
    if mask.size != a.size:
        raise ValueError(f"{name}: mask and data must be the same size")
    if mask.dtype != np.bool_:
        mask = ufuncs.astype(mask, np.bool_)
    return mask.reshape(a.shape) if mask.shape != a.shape else mask


def _cyclic_values(a: ndarray, values) -> ndarray:
    """``values`` as a flat contiguous device array of ``a``'s type, converted as numpy's
    putmask and place convert them: an array under the 'safe' rule (numpy's TypeError), Python
    numbers and lists as numpy converts them to ``a``'s type (its OverflowError)."""
    if isinstance(values, (ndarray, np.ndarray)):
        if not np.can_cast(values.dtype, a.dtype, "safe"):
            raise TypeError(f"Cannot cast array data from dtype({str(values.dtype)!r}) to "
                            f"dtype({str(a.dtype)!r}) according to the rule 'safe'")
        v = asarray(values).reshape(-1)
        v = v if v.dtype == a.dtype else ufuncs.astype(v, a.dtype)
    else:
        v = asarray(np.array(values, dtype=a.dtype).reshape(-1))
    return v if v._contiguous else v.copy()


def _cyclic_kernel(dtype: np.dtype, by_count: bool) -> ElementwiseKernel:
    """``if (m) z = v[k % nv]``: k the element's flat index (putmask), or the number of True
    elements before it (place: from an inclusive count ``c``)."""
    where = "(c - 1)" if by_count else "i"
    ins = "bool m, int64 c, raw T v, int64 nv" if by_count else "bool m, raw T v, int64 nv"
    return _kernels.get(("cyclic", str(dtype), by_count), lambda: ElementwiseKernel(
        ins, "T z", f"if (m) z = v[{where} % nv]",
        "dptx_place" if by_count else "dptx_putmask", options=EXACT))


def putmask(a, mask, values) -> None:
    """numpy.putmask: ``a.flat[i] = values.flat[i % len(values)]`` wherever the mask is
    True (one kernel; nothing changes for empty values, as numpy)."""
    mask = _same_size_mask("putmask", a, mask)
    v = _cyclic_values(a, values)
    if v.size == 0 or a.size == 0:
        return
    target = a if a._contiguous else empty(a.shape, a.dtype)
    if target is not a:
        target[...] = a
    _cyclic_kernel(a.dtype, False)(mask, v, np.int64(v.size), target)
    if target is not a:
        a[...] = target


def place(arr, mask, vals) -> None:
    """numpy.place: the k-th True element of the mask (in C order) gets ``vals[k %
    len(vals)]`` (an inclusive count of the mask, then one kernel)."""
    mask = _same_size_mask("place", arr, mask)
    v = _cyclic_values(arr, vals)
    if arr.size == 0:
        return
    if v.size == 0:
        if bool(reductions.any_(mask)):
            raise ValueError("Cannot insert from an empty array!")
        return
    count = scan.cumsum(mask.reshape(-1), dtype=np.int64).reshape(arr.shape)
    target = arr if arr._contiguous else empty(arr.shape, arr.dtype)
    if target is not arr:
        target[...] = arr
    _cyclic_kernel(arr.dtype, True)(mask, count, v, np.int64(v.size), target)
    if target is not arr:
        arr[...] = target


# -- selection by an index or a condition -----------------------------------------------------
def choose(a, choices, out=None, mode="raise") -> ndarray:
    """numpy.choose: element i from ``choices[a[i]]``, ``a`` and the choices broadcast
    together; an index outside [0, n) is an error (``mode='raise'``: one value read back),
    taken modulo n (``'wrap'``) or clipped (``'clip'``)."""
    if mode not in ("raise", "wrap", "clip"):
        raise ValueError(f"clipmode must be one of 'clip', 'raise', or 'wrap' (got {mode!r})")
    a = asarray(a)
    if a.dtype.kind not in "iub":
        raise TypeError(f"Cannot cast array data from dtype('{a.dtype}') to dtype('int64') "
                        f"according to the rule 'safe'")
    choices = [asarray(c) for c in (choices if not isinstance(choices, ndarray)
                                    else [choices[k] for k in range(len(choices))])]
    n = len(choices)
    if n == 0:
        raise ValueError("0-length sequence.")
    index, *parts = broadcast_arrays(a.astype(np.int64), *choices)
    if mode == "raise":
        bad = ufuncs.apply(np.logical_or, ufuncs.apply(np.less, index, 0),
                           ufuncs.apply(np.greater_equal, index, n))
        if index.size and bool(reductions.any_(bad).get()):
            raise ValueError("invalid entry in choice array")
    elif mode == "wrap":
        index = ufuncs.apply(np.remainder, index, n)
    else:
        index = ufuncs.clip(index, 0, n - 1)
    result = take_along_axis(stack(parts), index[None], axis=0)[0]
    if out is not None:
        out[...] = result
        return out
    return result


def compress(condition, a, axis=None, out=None) -> ndarray:
    """numpy.compress: the slices along ``axis`` (of the flattened array for None) where the
    1-D ``condition`` is true; a shorter condition leaves the rest out, a longer one is an
    error where it is true past the end (numpy's take of its nonzero indices)."""
    condition = asarray(condition)
    if condition.ndim != 1:
        raise ValueError("condition must be a 1-d array")
    a = asarray(a)
    if axis is None:
        a, axis = a.reshape(-1), 0
    where = selection.flatnonzero(condition)
    return indexing.take(a, where, axis=axis, out=out)


def extract(condition, arr) -> ndarray:
    """numpy.extract: the elements of the flattened ``arr`` where the flattened ``condition``
    is nonzero."""
    where = selection.flatnonzero(asarray(condition).reshape(-1))
    return indexing.take(asarray(arr).reshape(-1), where)
