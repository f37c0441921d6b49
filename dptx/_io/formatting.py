"""How dptx arrays print, as numpy's print: ``str``/``repr``/``format`` of an array, and
numpy's ``array2string``, ``array_str`` and ``array_repr`` (also through ``np.array2string``
and the others), with numpy's print options (``np.set_printoptions``, ``np.printoptions``)
and their arguments.

numpy formats an array of more than ``threshold`` elements from its ``edgeitems`` first and
last items along every axis (its summary: ``[0 1 2 ... 7 8 9]``), and chooses the format of
the elements (precision, width, sign) from those items only. Such an array's items are read
back alone, in one gather on the devices, then formatted by numpy: the text is numpy's, and
printing an array of a billion elements moves a few hundred bytes, not gigabytes (CuPy reads
the whole array back)."""
from __future__ import annotations

import numpy as np

from ..runtime.ndarray import ndarray

__all__ = ["array2string", "array_repr", "array_str"]


def _shown(a: ndarray, threshold=None, edgeitems=None) -> tuple:
    """(host array, summarized?): the whole array where numpy prints it whole, else the
    items numpy's summary shows (each axis longer than 2 ``edgeitems``: its first
    ``edgeitems`` + 1 and last ``edgeitems``, so that the axis is still too long and numpy
    elides its middle, the one extra item never shown) and True: format it with threshold
    0."""
    options = np.get_printoptions()
    threshold = options["threshold"] if threshold is None else threshold
    edge = options["edgeitems"] if edgeitems is None else edgeitems
    if a.size <= threshold or a.ndim == 0:
        return a.get(), False
    keep = [np.arange(n) if n <= 2 * edge else np.r_[0:edge + 1, n - edge:n]
            for n in a.shape]
    if all(len(k) == n for k, n in zip(keep, a.shape)):
        return a.get(), True        # summarized, with nothing long enough to elide
    return a[np.ix_(*keep)].get(), True


def array2string(a, max_line_width=None, precision=None, suppress_small=None,
                 separator=" ", prefix="", *, formatter=None, threshold=None, edgeitems=None,
                 sign=None, floatmode=None, suffix="", legacy=None) -> str:
    """numpy.array2string of a dptx array (numpy's text; see the module doc)."""
    if not isinstance(a, ndarray):
        return np.array2string(a, max_line_width, precision, suppress_small, separator,
                               prefix, formatter=formatter, threshold=threshold,
                               edgeitems=edgeitems, sign=sign, floatmode=floatmode,
                               suffix=suffix, legacy=legacy)
    host, summarized = _shown(a, threshold, edgeitems)
    return np.array2string(host, max_line_width, precision, suppress_small, separator, prefix,
                           formatter=formatter, threshold=0 if summarized else threshold,
                           edgeitems=edgeitems, sign=sign, floatmode=floatmode, suffix=suffix,
                           legacy=legacy)


def array_repr(arr, max_line_width=None, precision=None, suppress_small=None) -> str:
    """``repr`` of a dptx array: ``dptx.ndarray([...], dtype=...)``, the items as numpy's
    ``repr`` writes them, and, as numpy 2's, the shape where the items do not show it (a
    summarized array, an empty one of more than one axis)."""
    if not isinstance(arr, ndarray):
        return np.array_repr(arr, max_line_width, precision, suppress_small)
    if arr._buffer.is_lost():       # (a debugger's display of it must not fail)
        return (f"<dptx.ndarray shape={arr.shape} dtype={arr.dtype}: its bytes are lost, "
                f"{arr._buffer.pieces.why}>")
    host, summarized = _shown(arr)
    legacy = np.get_printoptions()["legacy"]
    shape = (summarized or (arr.size == 0 and arr.shape != (0,))) and legacy is False
    prefix = "dptx.ndarray("
    body = np.array2string(host, max_line_width, precision, suppress_small, separator=", ",
                           prefix=prefix, suffix=")", threshold=0 if summarized else None)
    # numpy's layout of what follows the items: on the last line where it fits, else on a
    # line of its own under them
    text = prefix + body + ","
    extras = (f"shape={arr.shape}, " if shape else "") + f"dtype={arr.dtype})"
    width = np.get_printoptions()["linewidth"] if max_line_width is None else max_line_width
    last_line = len(text) - (text.rfind("\n") + 1)
    spacer = " " if last_line + 1 + len(extras) <= width else "\n" + " " * len(prefix)
    return text + spacer + extras


def array_str(a, max_line_width=None, precision=None, suppress_small=None) -> str:
    """``str`` of a dptx array, numpy's: ``[[0 1 2] [3 4 5]]`` on two lines; of a 0-d array,
    its item's text."""
    if not isinstance(a, ndarray):
        return np.array_str(a, max_line_width, precision, suppress_small)
    host, summarized = _shown(a)
    if not summarized:
        return np.array_str(host, max_line_width, precision, suppress_small)
    with np.printoptions(threshold=0):
        return np.array_str(host, max_line_width, precision, suppress_small)


def format_array(self, spec: str) -> str:
    """``format(a, spec)``, numpy's: a 0-d array formats its item (``f"{a.sum():.3f}"``);
    another takes only the empty spec (its ``str``)."""
    if self.ndim == 0:
        return format(self.get()[()], spec)
    if spec:
        raise TypeError("unsupported format string passed to dptx.ndarray.__format__")
    return array_str(self)
