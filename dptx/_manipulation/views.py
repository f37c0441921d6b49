"""numpy's functions that make views, on dptx arrays: numpy itself works out each view on the
array's stand-in (``ndarray._stand_in``: its shape and strides, no memory), and the view is
made over the same device buffer (``ndarray._like``), so the rules (shapes, strides, errors)
are numpy's own. ``broadcast_to``'s views repeat elements and are read-only, as numpy's."""
from __future__ import annotations

import numpy as np

from ..runtime.ndarray import asarray, ndarray

# numpy's functions of these names (array_api dispatches numpy's to them)
__all__ = ["array_split", "atleast_1d", "atleast_2d", "atleast_3d", "broadcast_arrays",
           "broadcast_to", "dsplit", "hsplit", "meshgrid", "moveaxis", "rollaxis", "rot90",
           "split", "vsplit"]


def _views(arrays, fn):
    """``fn`` applied to the stand-ins of ``arrays``; each array numpy returns, mapped back
    to the dptx array whose stand-in it views."""
    arrays = [asarray(a) for a in arrays]
    probes = [a._stand_in() for a in arrays]
    result = fn(*probes)

    def back(view):
        for a, probe in zip(arrays, probes):
            if _base_of(view) is _base_of(probe):
                return a._like(probe, view)
        raise AssertionError("numpy made a copy where a view was expected")
    if isinstance(result, np.ndarray):
        return back(result)
    return type(result)(back(v) for v in result) if isinstance(result, tuple) else \
        [back(v) for v in result]


def _base_of(a):
    """The object at the end of a numpy view's chain of bases (a stand-in's own memory: the
    addresses of two stand-ins' views may overlap, their bases never do)."""
    while getattr(a, "base", None) is not None:
        a = a.base
    return a


def broadcast_to(array, shape) -> ndarray:
    """numpy.broadcast_to: a read-only view of ``shape`` (strides of 0 where it repeats)."""
    return _views([array], lambda p: np.broadcast_to(p, shape))


def broadcast_arrays(*args) -> tuple:
    """numpy.broadcast_arrays: views of the arrays broadcast to one shape (read-only where
    they repeat elements)."""
    return tuple(_views(args, lambda *ps: np.broadcast_arrays(*ps)))


def moveaxis(a, source, destination) -> ndarray:
    return _views([a], lambda p: np.moveaxis(p, source, destination))


def rollaxis(a, axis, start=0) -> ndarray:
    return _views([a], lambda p: np.rollaxis(p, axis, start))


def _at_least(arys, fn):
    out = [_views([a], fn) for a in arys]
    return out[0] if len(out) == 1 else tuple(out)


def atleast_1d(*arys):
    return _at_least(arys, np.atleast_1d)


def atleast_2d(*arys):
    return _at_least(arys, np.atleast_2d)


def atleast_3d(*arys):
    return _at_least(arys, np.atleast_3d)


def split(ary, indices_or_sections, axis=0) -> list:
    """numpy.split: views along ``axis`` (numpy's error when sections do not divide it)."""
    return list(_views([ary], lambda p: np.split(p, indices_or_sections, axis)))


def array_split(ary, indices_or_sections, axis=0) -> list:
    return list(_views([ary], lambda p: np.array_split(p, indices_or_sections, axis)))


def hsplit(ary, indices_or_sections) -> list:
    return list(_views([ary], lambda p: np.hsplit(p, indices_or_sections)))


def vsplit(ary, indices_or_sections) -> list:
    return list(_views([ary], lambda p: np.vsplit(p, indices_or_sections)))


def dsplit(ary, indices_or_sections) -> list:
    return list(_views([ary], lambda p: np.dsplit(p, indices_or_sections)))


def rot90(m, k=1, axes=(0, 1)) -> ndarray:
    """numpy.rot90: a view (flips and a transpose)."""
    return _views([m], lambda p: np.rot90(p, k, axes))


def meshgrid(*xi, copy=True, sparse=False, indexing="xy") -> tuple:
    """numpy.meshgrid of 1-D (or flattened) arrays: broadcast views, copied unless
    ``copy=False``."""
    if indexing not in ("xy", "ij"):
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    xs = [asarray(x).reshape(-1) for x in xi]
    n = len(xs)
    grids = []
    for k, x in enumerate(xs):
        shape = [1] * n
        shape[k] = -1
        if indexing == "xy" and n > 1 and k < 2:
            shape[0], shape[1] = shape[1], shape[0]
        grids.append(x.reshape(shape))
    if not sparse:
        grids = list(broadcast_arrays(*grids))
    return tuple(g.copy() for g in grids) if copy else tuple(grids)
