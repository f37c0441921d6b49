"""numpy's rearranging routines on dptx arrays, made of views, device copies and gathers:
``flip``/``fliplr``/``flipud`` (views with negative strides, as numpy's), ``roll``, ``tile``,
``repeat`` (one count, or one per element), ``diff``, ``ediff1d``."""
from __future__ import annotations

import numpy as np

from .._indexing import indexing
from .._core import reductions, scan, ufuncs
from .._sorting import sorting
from ..runtime.ndarray import _axes, asarray, empty, ndarray
from .joining import concatenate
from .views import broadcast_to


def flip(m, axis=None) -> ndarray:
    """numpy.flip: a view reversed along ``axis`` (every axis by default)."""
    m = asarray(m)
    axes = range(m.ndim) if axis is None else _axes(axis, m.ndim)
    key = [slice(None)] * m.ndim
    for k in axes:
        key[k] = slice(None, None, -1)
    return m[tuple(key)]


def fliplr(m) -> ndarray:
    m = asarray(m)
    if m.ndim < 2:
        raise ValueError("Input must be >= 2-d.")
    return flip(m, 1)


def flipud(m) -> ndarray:
    m = asarray(m)
    if m.ndim < 1:
        raise ValueError("Input must be >= 1-d.")
    return flip(m, 0)


def roll(a, shift, axis=None) -> ndarray:
    """numpy.roll: elements shifted along ``axis`` (of the flattened array by default),
    those past the end coming back at the start: two slices joined."""
    a = asarray(a)
    if axis is None:
        return roll(a.reshape(-1), shift, 0).reshape(a.shape)
    shifts, axes = np.broadcast_arrays(np.asarray(shift), np.asarray(axis))
    out = a
    for s, ax in zip(shifts.ravel(), axes.ravel()):
        ax = _axes((int(ax),), a.ndim)[0]
        n = a.shape[ax]
        if n == 0:
            continue
        s = int(s) % n
        if s:
            head = [slice(None)] * a.ndim
            tail = [slice(None)] * a.ndim
            head[ax], tail[ax] = slice(n - s, None), slice(None, n - s)
            out = concatenate([out[tuple(head)], out[tuple(tail)]], axis=ax)
    return out if out is not a else a.copy()


def repeat(a, repeats, axis=None) -> ndarray:
    """numpy.repeat: each element ``repeats`` times in a row along ``axis`` (of the flattened
    array by default), one count for all (a gather by index // count) or one per element (a
    gather by where each output falls among the counts' running sums: one wait, for the
    total, as the result's size depends on the counts)."""
    a = asarray(a)
    if axis is None:
        a, axis = a.reshape(-1), 0
    ax = _axes((axis,), a.ndim)[0]
    n = a.shape[ax]
    counts = repeats if isinstance(repeats, ndarray) else np.asarray(repeats)
    if counts.size == 1:
        r = int(counts.reshape(()).get() if isinstance(counts, ndarray) else counts.reshape(()))
        if r < 0:
            raise ValueError("negative dimensions are not allowed")
        index = empty((n * r,), np.int64)
        if index.size:
            ufuncs.fill_arange(index, 0, 1)
            index = ufuncs.apply(np.floor_divide, index, r)
    else:
        if counts.ndim != 1 or counts.shape[0] != n:
            raise ValueError(f"operands could not be broadcast together with shape ({n},) "
                             f"({counts.shape[0] if counts.ndim == 1 else counts.shape},)")
        if counts.dtype.kind not in "iu":
            raise TypeError(f"Cannot cast array data from {counts.dtype} to int64 according "
                            f"to the rule 'safe'")
        counts = asarray(counts)
        if bool(reductions.any_(ufuncs.apply(np.less, counts, 0))):
            raise ValueError("repeats may not contain negative values.")
        ends = scan.cumsum(counts, dtype=np.int64)
        total = int(ends[-1]) if n else 0
        index = empty((total,), np.int64)
        if total:
            ufuncs.fill_arange(index, 0, 1)
            index = sorting.searchsorted(ends, index, side="right")
    return indexing.getitem(a, (slice(None),) * ax + (index,))


def tile(A, reps) -> ndarray:
    """numpy.tile: ``A`` repeated ``reps`` times along each axis: a broadcast copy of it
    with an axis of repetitions before each of its own, then reshaped."""
    A = asarray(A)
    reps = (int(reps),) if np.ndim(reps) == 0 else tuple(int(r) for r in reps)
    ndim = max(A.ndim, len(reps))
    A = A.reshape((1,) * (ndim - A.ndim) + A.shape)
    reps = (1,) * (ndim - len(reps)) + reps
    wide = []
    for r, n in zip(reps, A.shape):
        wide += [r, n]
    out = empty(tuple(wide), A.dtype)
    source = A.reshape(tuple(x for n in A.shape for x in (1, n)))
    if out.size:
        out[...] = source
    return out.reshape(tuple(r * n for r, n in zip(reps, A.shape)))


_NO_VALUE = object()


def diff(a, n=1, axis=-1, prepend=_NO_VALUE, append=_NO_VALUE) -> ndarray:
    """numpy.diff: the n-th difference along ``axis`` (a[1:] - a[:-1], n times; booleans
    differ by not_equal, as numpy's), of ``a`` with ``prepend`` and ``append`` joined to it
    along the axis first (a scalar as one slice of it)."""
    a = asarray(a)
    if n == 0:
        return a
    if n < 0:
        raise ValueError(f"order must be non-negative but got {n!r}")
    if a.ndim == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    ax = _axes((axis,), a.ndim)[0]
    parts = []
    for extra in (prepend, a, append):
        if extra is _NO_VALUE:
            continue
        extra = asarray(extra)
        if extra.ndim == 0:
            shape = list(a.shape)
            shape[ax] = 1
            extra = broadcast_to(extra, tuple(shape))
        parts.append(extra)
    if len(parts) > 1:
        a = concatenate(parts, axis=ax)
    upper, lower = [slice(None)] * a.ndim, [slice(None)] * a.ndim
    upper[ax], lower[ax] = slice(1, None), slice(None, -1)
    op = np.not_equal if a.dtype == np.bool_ else np.subtract
    for _ in range(n):
        a = ufuncs.apply(op, a[tuple(upper)], a[tuple(lower)])
    return a


def ediff1d(ary, to_end=None, to_begin=None) -> ndarray:
    """numpy.ediff1d: the differences of the flattened array in its type, with ``to_begin``
    and ``to_end`` (flattened, converted under numpy's same_kind rule) before and after."""
    a = asarray(ary).reshape(-1)
    if a.dtype == np.bool_:
        raise TypeError("numpy boolean subtract, the `-` operator, is not supported, use the "
                        "bitwise_xor, the `^` operator, or the logical_xor function instead.")
    parts = []
    for name, extra in (("to_begin", to_begin), ("to_end", to_end)):
        if extra is None:
            parts.append(None)
            continue
        extra = asarray(extra if isinstance(extra, ndarray) else np.asarray(extra)).reshape(-1)
        if not np.can_cast(extra.dtype, a.dtype, casting="same_kind"):
            raise TypeError(f"dtype of `{name}` must be compatible with input `ary` under the "
                            f"`same_kind` rule.")
        parts.append(extra.astype(a.dtype))
    middle = ufuncs.apply(np.subtract, a[1:], a[:-1]) if a.size else a[:0].copy()
    pieces = [p for p in (parts[0], middle, parts[1]) if p is not None]
    return concatenate(pieces) if len(pieces) > 1 else middle
