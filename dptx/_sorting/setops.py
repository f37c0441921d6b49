"""numpy's set operations on dptx arrays, as numpy 2's ``_arraysetops_impl`` computes them:
``isin`` (a sort of the test elements and a binary search of each element), ``intersect1d``
(with ``return_indices``), ``union1d``, ``setdiff1d`` and ``setxor1d`` (unique, concatenate,
a stable sort and comparisons of neighbours). Everything runs on the devices; only the sizes
of the data-dependent results come back, as for ``a[mask]``.

Values are compared in the arrays' common type, as numpy's sort method does (NaN equals
nothing, -0.0 equals 0.0); numpy's table method for integers gives the same answers."""
from __future__ import annotations

import numpy as np

from .._manipulation import joining
from . import sorting
from .._core import ufuncs
from ..runtime.ndarray import asarray, full, ndarray
from ..errors import DptxError

__all__ = ["intersect1d", "isin", "setdiff1d", "setxor1d", "union1d"]


def _flat(a) -> ndarray:
    return asarray(a).reshape(-1)


def _common(x: ndarray, y: ndarray) -> tuple:
    T = np.result_type(x.dtype, y.dtype)
    if x.dtype.kind in "iu" and y.dtype.kind in "iu" and T.kind == "f":
        # numpy compares such integers exactly (its table method); a float64 comparison
        # would call 2**63 and 2**63 + 1 equal
        raise DptxError(f"set operations between {x.dtype} and {y.dtype} arrays are not "
                        f"supported on dptx arrays (no type holds both exactly); convert "
                        f"one of them")
    if T == np.bool_:
        T = np.dtype(np.uint8)      # (the sort's types: numbers)
    return tuple(v if v.dtype == T else ufuncs.astype(v, T) for v in (x, y))


def isin(element, test_elements, assume_unique=False, invert=False, *, kind=None):
    """numpy.isin: whether each element of ``element`` is among ``test_elements`` (``invert``:
    is not), of ``element``'s shape; ``kind`` is checked as numpy checks it."""
    if kind not in (None, "sort", "table"):
        raise ValueError(f"Invalid kind: '{kind}'. Please use None, 'sort' or 'table'.")
    el, test = asarray(element), _flat(test_elements)
    if kind == "table" and not (el.dtype.kind in "uib" and test.dtype.kind in "uib"):
        raise ValueError("The 'table' method is only supported for boolean or integer "
                         "arrays. Please select 'sort' or None for kind.")
    if test.size == 0 or el.size == 0:
        return full(el.shape, bool(invert) if test.size == 0 else False, np.bool_)
    values, test = _common(el.reshape(-1), test)
    table = sorting.sort(test)
    place = sorting.searchsorted(table, values)
    # the first test element not below each value: a hit where it equals the value
    nearest = table[ufuncs.apply(np.minimum, place, table.size - 1)]
    # (a value past every test element, or a NaN, meets one it does not equal)
    hit = ufuncs.apply(np.not_equal if invert else np.equal, nearest, values)
    return hit.reshape(el.shape)


def union1d(ar1, ar2):
    """numpy.union1d: the sorted unique elements of both."""
    return sorting.unique(joining.concatenate((_flat(ar1), _flat(ar2))))


def intersect1d(ar1, ar2, assume_unique=False, return_indices=False):
    """numpy.intersect1d: the sorted elements both hold (each once), with ``return_indices``
    the index of each in ``ar1`` and ``ar2`` (its first occurrence)."""
    ar1, ar2 = _flat(ar1), _flat(ar2)
    if not assume_unique:
        if return_indices:
            ar1, ind1 = sorting.unique(ar1, return_index=True)
            ar2, ind2 = sorting.unique(ar2, return_index=True)
        else:
            ar1, ar2 = sorting.unique(ar1), sorting.unique(ar2)
    aux = joining.concatenate((ar1, ar2))
    if return_indices:
        order = sorting.argsort(aux, kind="stable")
        aux = aux[order]
    else:
        aux = sorting.sort(aux)
    if aux.size == 0:
        mask = full((0,), False, np.bool_)
    else:
        mask = ufuncs.apply(np.equal, aux[1:], aux[:-1])
    common = aux[:-1][mask] if aux.size else aux
    if not return_indices:
        return common
    if aux.size == 0:
        empty_index = full((0,), 0, np.int64)
        return common, empty_index, empty_index.copy()
    ar1_indices = order[:-1][mask]
    ar2_indices = ufuncs.apply(np.subtract, order[1:][mask], ar1.size)
    if not assume_unique:
        ar1_indices, ar2_indices = ind1[ar1_indices], ind2[ar2_indices]
    return common, ar1_indices, ar2_indices


def setdiff1d(ar1, ar2, assume_unique=False):
    """numpy.setdiff1d: the (sorted, unique unless ``assume_unique``) elements of ``ar1``
    that ``ar2`` does not hold."""
    if assume_unique:
        ar1 = _flat(ar1)
    else:
        ar1, ar2 = sorting.unique(_flat(ar1)), sorting.unique(_flat(ar2))
    return ar1[isin(ar1, ar2, invert=True)]


def setxor1d(ar1, ar2, assume_unique=False):
    """numpy.setxor1d: the sorted elements that exactly one of the two holds."""
    if not assume_unique:
        ar1, ar2 = sorting.unique(_flat(ar1)), sorting.unique(_flat(ar2))
    aux = joining.concatenate((_flat(ar1), _flat(ar2)))
    if aux.size == 0:
        return aux
    aux = sorting.sort(aux)
    differs = ufuncs.apply(np.not_equal, aux[1:], aux[:-1])
    edge = full((1,), True, np.bool_)
    flag = joining.concatenate((edge, differs, edge))
    return aux[ufuncs.apply(np.logical_and, flag[1:], flag[:-1])]
