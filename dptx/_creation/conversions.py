"""numpy's conversions to arrays beyond ``asarray``: ``asanyarray`` (dptx has no subclasses:
``asarray``), ``asarray_chkfinite`` (the check on the devices, one boolean read back) and
``require`` (numpy's flags, a copy only where one is missing)."""
from __future__ import annotations

import numpy as np

from .._core import reductions, ufuncs
from ..runtime.ndarray import array, asarray

__all__ = ["asanyarray", "asarray_chkfinite", "require"]


def asanyarray(a, dtype=None, order=None, *, like=None, copy=None):
    """numpy.asanyarray: ``asarray`` (a dptx array is its own and only array type)."""
    return asarray(a, dtype, order, copy=copy)


def asarray_chkfinite(a, dtype=None, order=None):
    """numpy.asarray_chkfinite: ``asarray``, and numpy's ValueError where a float element is
    an infinity or a NaN."""
    a = asarray(a, dtype, order)
    if a.dtype.kind in "fc" and not bool(reductions.all_(ufuncs.apply(np.isfinite, a))):
        raise ValueError("array must not contain infs or NaNs")
    return a


# numpy's spellings of the requirements (numpy/_core/_asarray.py)
_REQUIREMENTS = {"C": "C", "C_CONTIGUOUS": "C", "CONTIGUOUS": "C",
                 "F": "F", "F_CONTIGUOUS": "F", "FORTRAN": "F",
                 "A": "A", "ALIGNED": "A", "W": "W", "WRITEABLE": "W",
                 "O": "O", "OWNDATA": "O", "E": "E", "ENSUREARRAY": "E"}


def require(a, dtype=None, requirements=None, *, like=None):
    """numpy.require: ``a`` as a dptx array of ``dtype`` that has every flag of
    ``requirements`` (C or F contiguous, aligned, writeable, owning its data; "E", an array
    and not a subclass, always holds), copied only where it lacks one."""
    if not requirements:
        return asarray(a, dtype)
    # (a string is its letters, as numpy reads it: "CW")
    try:
        wanted = {_REQUIREMENTS[r.upper()] for r in requirements}
    except KeyError as e:
        raise KeyError(f"Unknown requirement {e.args[0]!r}: numpy's are "
                       f"{', '.join(sorted(_REQUIREMENTS))}") from None
    wanted.discard("E")
    if {"C", "F"} <= wanted:
        raise ValueError('Cannot specify both "C" and "F" order')
    order = "C" if "C" in wanted else "F" if "F" in wanted else "A"
    wanted -= {"C", "F"}
    arr = array(a, dtype=dtype, order=order, copy=None)
    if any(not arr.flags[flag] for flag in wanted):
        return arr.copy(order)
    return arr
