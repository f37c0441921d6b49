"""numpy's ``out=`` for the array API's routines: the checks numpy makes before it writes
(an array of the result's shape, of a type the result casts to under the routine's rule),
then the result written into it. Without them ``out[...] = result`` broadcast a result into
an out of another shape (``np.trace(m, out=zeros(99))`` filled 99 elements) and converted
where numpy refuses."""
from __future__ import annotations

import numpy as np

from ..runtime.ndarray import ndarray


def check(out, shape: tuple, dtype, name: str, casting: str = "unsafe") -> None:
    """numpy's errors for an ``out`` that cannot take a result of ``shape`` and ``dtype``."""
    if not isinstance(out, ndarray):
        raise TypeError(f"{name}: out must be a dptx array, got {type(out).__name__}")
    if out.shape != tuple(shape):
        raise ValueError(f"{name}: out has shape {out.shape}, the result has shape "
                         f"{tuple(shape)}")
    if not np.can_cast(dtype, out.dtype, casting):
        raise TypeError(f"{name}: cannot cast the result from {np.dtype(dtype)!r} to out's "
                        f"{out.dtype!r} with casting rule {casting!r}")


def store(out, result: ndarray, name: str, casting: str = "unsafe") -> ndarray:
    """``result`` written into ``out`` (converted), after numpy's checks; ``out``."""
    check(out, result.shape, result.dtype, name, casting)
    out[...] = result
    return out
