"""The memory layout of a new array: numpy's ``order`` argument turned into byte strides, as
numpy lays new arrays out. "C" (the last index fastest), "F" (the first fastest: what a
column-major kernel reads, ``asfortranarray``), and, given a prototype array, "A" (F when the
prototype is F- and not C-contiguous) and "K" (the prototype's own order of axes: its axes
sorted by the size of their strides, largest outermost; ``empty_like``, ``copy``, ``astype``).
No device here: numbers only."""
from __future__ import annotations

ORDERS = "CFAK"


def c_strides(shape: tuple, itemsize: int) -> tuple:
    """numpy's byte strides of a C-contiguous array of ``shape`` (a dimension of 0 counts as
    1)."""
    strides, step = [], itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(int(n), 1)
    return tuple(reversed(strides))


def f_strides(shape: tuple, itemsize: int) -> tuple:
    """Byte strides of an F-contiguous (column-major) array of ``shape``."""
    return c_strides(tuple(shape)[::-1], itemsize)[::-1]


def check_order(order, allowed: str = ORDERS) -> str:
    """numpy's ``order`` argument upper-cased (None is "C"), or numpy's ValueError: an unknown
    letter, or "A"/"K" where there is no prototype to follow."""
    if order is None:
        return "C"
    letter = order.upper() if isinstance(order, str) else order
    if letter not in tuple(ORDERS):
        raise ValueError(f"order must be one of 'C', 'F', 'A', or 'K' (got {order!r})")
    if letter not in allowed:
        raise ValueError("only 'C' or 'F' order is permitted")
    return letter


def is_c_contiguous(shape: tuple, strides: tuple, itemsize: int) -> bool:
    """numpy's rule: empty, or the strides of every axis longer than 1 are C order's."""
    if any(n == 0 for n in shape):
        return True
    step = itemsize
    for n, s in zip(reversed(shape), reversed(strides)):
        if n != 1 and s != step:
            return False
        step *= n
    return True


def is_f_contiguous(shape: tuple, strides: tuple, itemsize: int) -> bool:
    """The same with the first index fastest."""
    return is_c_contiguous(tuple(shape)[::-1], tuple(strides)[::-1], itemsize)


def new_strides(shape: tuple, itemsize: int, order: str = "C", like=None) -> tuple:
    """Byte strides of a new array of ``shape`` laid out in ``order``; "A" and "K" follow
    ``like`` (an array with ``shape``, ``strides`` and ``flags``), and with a ``shape`` of
    another number of dimensions than its, are C (numpy's ``empty_like(..., shape=)``)."""
    order = check_order(order, ORDERS if like is not None else "CF")
    shape = tuple(int(n) for n in shape)
    if order in "AK" and len(shape) != len(like.shape):
        order = "C"
    if order == "A":
        order = "F" if like.flags.f_contiguous and not like.flags.c_contiguous else "C"
    if order == "K":
        if like.flags.c_contiguous:
            order = "C"
        elif like.flags.f_contiguous:
            order = "F"
        else:
            # the prototype's axes from the largest stride to the smallest (a stable sort,
            # as numpy's PyArray_CreateSortedStridePerm), laid out C-contiguous in that order
            perm = sorted(range(len(shape)), key=lambda k: -abs(like.strides[k]))
            packed = c_strides(tuple(shape[k] for k in perm), itemsize)
            strides = [0] * len(shape)
            for k, s in zip(perm, packed):
                strides[k] = s
            return tuple(strides)
    return f_strides(shape, itemsize) if order == "F" else c_strides(shape, itemsize)


def same_layout(shape: tuple, strides: tuple, other: tuple) -> bool:
    """Whether two arrays of ``shape`` with these strides place their elements alike (the
    stride of an axis of length 1 is never used)."""
    return all(n <= 1 or a == b for n, a, b in zip(shape, strides, other))


def copy_order(order: str, source, target) -> str:
    """The order numpy's ``array(a, dtype=target, order=order, copy=True)`` lays its copy out
    in, of an ``a`` of dtype ``source``: "A" is kept for a copy of the same dtype and is "K"
    for a conversion (numpy's PyArray_FromArray casts in the source's order unless asked for
    C or F)."""
    return "K" if order == "A" and source != target else order


def result_strides(shape: tuple, itemsize: int, operand_strides: list) -> tuple:
    """Byte strides of the result of an element-wise operation with numpy's default order
    "K": its axes in the order the operands' strides agree on (F operands give an F result,
    F and C ones a C result; broadcast axes, of stride 0, have no say). numpy's nditer
    (npyiter_find_best_axis_ordering), ported: an insertion sort of the axes, fastest first,
    an axis moving before another only while no operand's strides say otherwise.
    ``operand_strides``: each operand's strides broadcast to ``shape``."""
    ndim = len(shape)
    perm = list(range(ndim - 1, -1, -1))        # iterator order: the last C axis fastest
    for i0 in range(1, ndim):
        pos, axis0 = i0, perm[i0]
        for i1 in range(i0 - 1, -1, -1):
            axis1 = perm[i1]
            ambiguous, swap = True, False
            for strides in operand_strides:
                s0, s1 = strides[axis0], strides[axis1]
                if s0 != 0 and s1 != 0:
                    if abs(s1) <= abs(s0):
                        swap = False        # a conflict between operands: C order wins
                    elif ambiguous:
                        swap = True
                    ambiguous = False
            if ambiguous:
                continue
            if not swap:
                break
            pos = i1
        if pos != i0:
            perm.insert(pos, perm.pop(i0))
    strides, step = [0] * ndim, itemsize
    for axis in perm:
        strides[axis] = step
        step *= max(int(shape[axis]), 1)
    return tuple(strides)
