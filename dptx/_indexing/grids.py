"""numpy's index-expression objects on dptx arrays, as CuPy has them: ``mgrid`` and ``ogrid``
(dense and open grids from slices: numpy's sizes, types and values, the axes made by numpy's
own arithmetic on the host, one dimension each, then laid over the grid on the devices) and
``r_``/``c_`` (concatenation along an axis of arrays, scalars and slices, with numpy's string
directives "axis", "axis,ndmin" and "axis,ndmin,trans1d"; numpy's matrix directives "r"/"c"
need numpy's matrix class, which dptx has not)."""
from __future__ import annotations

import math

import numpy as np

from .._manipulation.joining import concatenate
from ..runtime.ndarray import asarray, empty, ndarray

__all__ = ["mgrid", "ogrid", "r_", "c_"]


def _slice_parts(s: slice) -> tuple:
    start = 0 if s.start is None else s.start
    step = 1 if s.step is None else s.step
    return start, s.stop, step


class _Grid:
    """``mgrid`` (dense) and ``ogrid`` (``sparse``: open), as numpy's ``nd_grid``."""

    def __init__(self, sparse: bool):
        self.sparse = sparse

    def __getitem__(self, key):
        if isinstance(key, slice):
            # numpy's one-slice form: an arange, or (a complex step: a point count, the stop
            # included) a linspace-like arange * step + start, computed as numpy does
            return asarray(np.mgrid[key])
        key = tuple(key)
        size, nums = [], [0]
        for k in key:
            start, stop, step = _slice_parts(k)
            if isinstance(step, (complex, np.complexfloating)):
                step = abs(step)
                size.append(int(step))
            else:
                size.append(math.ceil((stop - start) / step))
            nums += [start, stop, step]
        typ = np.result_type(*nums)
        axes = []
        for k, n in zip(key, size):
            start, stop, step = _slice_parts(k)
            if isinstance(step, (complex, np.complexfloating)):
                step = int(abs(step))
                if step != 1:
                    step = (stop - start) / float(step - 1)
            axes.append(np.arange(n, dtype=typ) * step + start)      # numpy's own values
        if self.sparse:
            return tuple(asarray(a.reshape([-1 if j == d else 1 for j in range(len(key))]))
                         for d, a in enumerate(axes))
        dtype = np.result_type(*[a.dtype for a in axes]) if axes else typ
        out = empty((len(key),) + tuple(size), dtype)
        for d, a in enumerate(axes):
            out[d] = asarray(a.reshape([-1 if j == d else 1 for j in range(len(key))]))
        return out

    def __len__(self):
        return 0


def _ndmin(a: ndarray, ndmin: int) -> ndarray:
    """``a`` with leading axes of 1 up to ``ndmin`` dimensions (numpy's ``array(ndmin=)``)."""
    return a.reshape((1,) * (ndmin - a.ndim) + a.shape) if a.ndim < ndmin else a


class _Concatenator:
    """``r_`` and ``c_``: numpy's ``AxisConcatenator`` over dptx arrays."""

    def __init__(self, axis=0, ndmin=1, trans1d=-1):
        self.axis, self.ndmin, self.trans1d = axis, ndmin, trans1d

    def __getitem__(self, key):
        if isinstance(key, str):
            raise NotImplementedError("r_/c_ of a matrix expression: dptx has no numpy.matrix")
        if not isinstance(key, tuple):
            key = (key,)
        axis, ndmin, trans1d = self.axis, self.ndmin, self.trans1d
        objs, types = [], []
        for k, item in enumerate(key):
            scalar = False
            if isinstance(item, slice):
                start, stop, step = _slice_parts(item)
                if isinstance(step, (complex, np.complexfloating)):
                    new = asarray(np.linspace(start, stop, num=int(abs(step))))
                else:
                    new = asarray(np.arange(start, stop, step))
                if ndmin > 1:
                    new = _ndmin(new, ndmin)
                    if trans1d != -1:
                        new = new.swapaxes(-1, trans1d)
            elif isinstance(item, str):
                if k != 0:
                    raise ValueError("special directives must be the first entry.")
                if item in ("r", "c"):
                    raise NotImplementedError(f"r_['{item}', ...]: a matrix; dptx has no "
                                              f"numpy.matrix")
                try:
                    if "," in item:
                        vec = [int(x) for x in item.split(",")]
                        axis, ndmin = vec[:2]
                        if len(vec) == 3:
                            trans1d = vec[2]
                    else:
                        axis = int(item)
                except (ValueError, TypeError) as e:
                    raise ValueError(f"unknown special directive {item!r}") from e
                continue
            elif type(item) in np.ScalarType:
                scalar = True
                new = item
            else:
                item_ndim = np.ndim(item)
                new = _ndmin(asarray(item), ndmin)
                if trans1d != -1 and item_ndim < ndmin:
                    k2 = ndmin - item_ndim
                    k1 = trans1d + k2 + 1 if trans1d < 0 else trans1d
                    dims = list(range(ndmin))
                    new = new.transpose(dims[:k1] + dims[k2:] + dims[k1:k2])
            objs.append(new)
            types.append(item if scalar else new.dtype)
        if types:
            final = np.result_type(*types)
            objs = [_ndmin(asarray(np.asarray(o, dtype=final)) if not isinstance(o, ndarray)
                           else o.astype(final, copy=False), ndmin) for o in objs]
        return concatenate(tuple(objs), axis=axis)

    def __len__(self):
        return 0


mgrid = _Grid(sparse=False)
ogrid = _Grid(sparse=True)
r_ = _Concatenator(0)
c_ = _Concatenator(-1, ndmin=2, trans1d=0)
