"""numpy's rounding: ``around``/``round`` (numpy's scaling by a power of ten, its half-to-even
rounding) and ``fix``, on the devices, step for step as numpy's."""
from __future__ import annotations

import numpy as np

from .._core import outputs, ufuncs
from ..runtime.ndarray import asarray, ndarray


def around(a, decimals=0, out=None) -> ndarray:
    """numpy.round: multiplied by 10**decimals, rounded half to even (``rint``), divided
    back (divided then multiplied for negative decimals); integers with decimals >= 0 are
    returned unchanged (a copy), with negative ones rounded through float64 and converted
    back, as numpy does."""
    a = asarray(a)
    if a.dtype.kind == "b":
        # numpy: rint of booleans is float16; scaling them first fails its casting check
        if decimals != 0:
            op = "multiply" if decimals > 0 else "divide"
            raise TypeError(f"Cannot cast ufunc '{op}' output from dtype('float64') to "
                            f"dtype('bool') with casting rule 'same_kind'")
        return ufuncs.apply(np.rint, a, out=out)
    if a.dtype.kind in "iu" and decimals >= 0:
        if out is None:
            return a.copy()
        return outputs.store(out, a, "round", casting="same_kind")
    factor = float(10.0 ** abs(decimals))
    scale, unscale = (np.multiply, np.true_divide) if decimals >= 0 else \
        (np.true_divide, np.multiply)
    scaled = ufuncs.apply(scale, a, factor)
    result = ufuncs.apply(unscale, ufuncs.apply(np.rint, scaled), factor)
    if a.dtype.kind in "iu":
        result = ufuncs.astype(result, a.dtype)
    if out is None:
        return result
    return outputs.store(out, result, "round", casting="same_kind")


round_ = around


def fix(x, out=None):
    """numpy.fix: rounded towards zero (numpy's ``trunc``)."""
    return ufuncs.apply(np.trunc, asarray(x), out=out)
