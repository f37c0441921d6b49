"""Questions about arrays that numpy and CuPy answer from their types and layout:
``iscomplexobj``/``isrealobj`` (dptx arrays are never complex), ``iscomplex``/``isreal`` (per
element: every element of a real array is real), ``shares_memory`` (exact, where
``may_share_memory`` only compares spans), and CuPy's ``get_array_module`` (dptx for dptx
arrays, else numpy), with which code written for CuPy and numpy runs on dptx as it is."""
from __future__ import annotations

import sys

import numpy as np

from .._core import ufuncs

from ..runtime.ndarray import asarray, may_share_memory, ndarray, ones, zeros

# numpy's functions of these names (array_api dispatches numpy's to them)
__all__ = ["iscomplex", "iscomplexobj", "isfortran", "isreal", "isrealobj", "shares_memory"]


def get_array_module(*args):
    """cupy.get_array_module: the module of the arrays, dptx when any is a dptx array."""
    if any(isinstance(a, ndarray) for a in args):
        return sys.modules["dptx"]
    return np


def isfortran(a) -> bool:
    """numpy.isfortran: F-contiguous and not C-contiguous (a 1-D array never is)."""
    if isinstance(a, ndarray):
        return a.flags.fnc
    return np.isfortran(a)


def iscomplexobj(x) -> bool:
    """numpy.iscomplexobj: whether the type is complex."""
    if isinstance(x, ndarray):
        return x.dtype.kind == "c"
    return np.iscomplexobj(x)


def isrealobj(x) -> bool:
    return not iscomplexobj(x)


def iscomplex(x) -> ndarray:
    """numpy.iscomplex: per element, whether its imaginary part is nonzero (all False for a
    real array; a 0-d array for a scalar, as CuPy's)."""
    x = asarray(x)
    if x.dtype.kind == "c":
        return ufuncs.apply(np.not_equal, x.imag, 0)
    return zeros(x.shape, np.bool_)


def isreal(x) -> ndarray:
    """numpy.isreal: per element, whether its imaginary part is zero (all True for a real
    array)."""
    x = asarray(x)
    if x.dtype.kind == "c":
        return ufuncs.apply(np.equal, x.imag, 0)
    return ones(x.shape, np.bool_)


def shares_memory(a, b, max_work=None) -> bool:
    """numpy.shares_memory: whether some byte is an element of both arrays (numpy's solver
    on the two layouts, placed over one reserved span of the buffer's size: nothing is read
    or copied, and the pages are never touched; ``max_work`` as numpy's, TooHardError
    included)."""
    if not may_share_memory(a, b):
        return False
    span = np.empty(a._buffer.nbytes, np.uint8)        # reserved, not touched
    # each array as its bytes: its elements' layout with an axis of the element's bytes
    views = [np.lib.stride_tricks.as_strided(span[x._offset:], x.shape + (x.itemsize,),
                                             x.strides + (1,)) for x in (a, b)]
    return bool(np.shares_memory(views[0], views[1], max_work=max_work))
