"""Arrays made from something other than arrays, as numpy's functions of these names:
``fromfunction`` (the function called once on the arrays of indices, so that what it computes
runs on the devices, as numpy calls it on its index arrays) and ``frombuffer`` (a host
buffer's bytes read as numpy reads them, then copied to the devices: the one explicit
upload)."""
from __future__ import annotations

import numpy as np

from ..runtime.ndarray import asarray, ndarray
from .._indexing.index_tricks import indices

# numpy's functions of these names (array_api dispatches numpy's to them)
__all__ = ["frombuffer", "fromfunction"]


def fromfunction(function, shape, *, dtype=float, like=None, **kwargs):
    """numpy.fromfunction: ``function(*indices(shape, dtype), **kwargs)``, whatever it
    returns (numpy does not check that it is an array of that shape)."""
    return function(*indices(shape, dtype=dtype), **kwargs)


def frombuffer(buffer, dtype=float, count=-1, offset=0, *, like=None) -> ndarray:
    """numpy.frombuffer, on the devices: the buffer's bytes from ``offset``, ``count`` items
    of ``dtype`` (all that fit for -1), numpy's errors for a size that is not a multiple."""
    return asarray(np.frombuffer(buffer, dtype=dtype, count=count, offset=offset))
