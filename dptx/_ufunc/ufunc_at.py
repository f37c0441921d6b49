"""numpy's ``ufunc.at``: ``np.add.at(a, indices, b)``, the unbuffered in-place operation, on
the devices. Where an index repeats, the operation applies once per occurrence, in the order
of the occurrences, as numpy's loop does (the scatter-add idiom: ``np.add.at(counts, idx,
1)``), for every ufunc ``ufuncs.apply`` computes and in every type: exact, not just for the
operations atomics could do.

The positions the indices name in the flattened array are sorted (stably: the occurrences
of one position stay in order), and the first thread of each run of equal positions applies
the run's values one after another (a float16 result rounded to half at each step, as
numpy's half loop, and converted into ``a``'s type as numpy's ``at`` does, unsafely)."""
from __future__ import annotations

import numpy as np

from .._core import ufuncs
from .._core.elementwise import (ElementwiseKernel, HALF, KernelCache, c_type, compute_type,
                                 conversion)
from .._core.reduction_kernel import EXACT
from .._creation.ranges import arange
from .._manipulation.views import broadcast_to
from .._sorting import sorting
from ..errors import DptxError
from ..runtime.ndarray import asarray, check_writeable, ndarray

_kernels = KernelCache()


def at(np_ufunc, a, indices, b=None) -> None:
    """``np_ufunc.at(a, indices, b)``: ``a[indices] = np_ufunc(a[indices], b)`` with every
    occurrence of a repeated index applied, in order."""
    if np_ufunc.nout != 1:
        raise ValueError("Only single output ufuncs supported at this time")
    if np_ufunc.nin == 1 and b is not None:
        raise ValueError("second operand provided when ufunc is unary")
    if np_ufunc.nin == 2 and b is None:
        raise ValueError("second operand needed for ufunc")
    if np_ufunc not in ufuncs.SUPPORTED:
        raise DptxError(f"numpy.{np_ufunc.__name__} is not supported on dptx arrays yet")
    if not isinstance(a, ndarray):
        raise TypeError(f"{np_ufunc.__name__}.at: the first operand must be a dptx array, got "
                        f"{type(a).__name__}")
    check_writeable(a)
    positions = _positions(a, indices)
    if b is not None and (isinstance(b, ndarray) or np.ndim(b) > 0):
        b = asarray(b)
        try:
            b = broadcast_to(b, positions.shape)
        except ValueError:
            raise ValueError("array is not broadcastable to correct shape") from None
    p = positions.reshape(-1)
    if not p.size:
        return
    target = a if a.flags.c_contiguous else a.copy()
    operands = [a] if b is None else [a, b]
    probes = [ufuncs._probe(v) for v in operands]
    R = np_ufunc(*probes).dtype
    # (a comparison computes in the operands' common type, as in ufuncs.apply)
    C = np.result_type(*probes) if np_ufunc in ufuncs._COMPARE else R
    types = [a.dtype] + ([] if b is None else [b.dtype if isinstance(b, ndarray) else C])
    scalar = b is not None and not isinstance(b, ndarray)
    if np_ufunc in _ATOMIC and R == a.dtype and a.dtype in _ATOMIC_TYPES and \
            (scalar or b.dtype.kind in "biu"):
        _atomically(np_ufunc, p, b, scalar, target)
    else:
        _in_order(np_ufunc, p, b, scalar, target, types, R, C, operands)
    if target is not a:
        a[...] = target


# Operations whose result does not depend on the order of the occurrences, in types with
# atomics: integer sums (wrapping), extremes and bitwise ones. One atomic per occurrence, no
# sort (np.add.at(counts, idx, 1)).
_ATOMIC = {np.add: "atomicAdd", np.subtract: "atomicAdd", np.maximum: "atomicMax",
           np.minimum: "atomicMin", np.bitwise_or: "atomicOr", np.bitwise_and: "atomicAnd",
           np.bitwise_xor: "atomicXor"}
_ATOMIC_TYPES = {np.dtype(t) for t in (np.int32, np.uint32, np.int64, np.uint64)}


def _atomically(np_ufunc, p: ndarray, b, scalar: bool, target: ndarray) -> None:
    A = target.dtype
    if target.size <= np.iinfo(np.int32).max:
        # 32-bit positions: the atomics' addresses are then the target plus data, which the
        # analysis can tell (a loaded 64-bit value might be a pointer), so the launch splits
        # across the workers and their contributions merge
        p = p.astype(np.int32, copy=False)
    # CUDA's 64-bit atomics: unsigned for the sums and bitwise ones (wrapping, as numpy's
    # int64), signed for the extremes of int64
    signed_extreme = A == np.int64 and np_ufunc in (np.maximum, np.minimum)
    T = "long long" if signed_extreme else \
        "unsigned long long" if A.itemsize == 8 else c_type(A)
    value = "_s" if scalar else "v[i]"
    if np_ufunc is np.subtract:
        value = f"({T})0 - ({T})({c_type(A)}){value}"
    kernel = _kernels.get(("atomic", np_ufunc.__name__, str(A), scalar, str(p.dtype)),
                          lambda: ElementwiseKernel(
        f"raw {p.dtype} p" + (f", {A} _s" if scalar else f", raw {A} v"), f"raw {A} w",
        f"{_ATOMIC[np_ufunc]}(({T}*)&w[p[i]], ({T})({c_type(A)}){value});",
        f"dptx_{np_ufunc.__name__}_at_atomic_{A}", options=EXACT))
    args = [p, ufuncs._as_param(b, A) if scalar else b.reshape(-1).astype(A, copy=False)]
    kernel(*args, target.reshape(-1), size=p.size)


def _in_order(np_ufunc, p: ndarray, b, scalar: bool, target: ndarray, types, R, C,
              operands) -> None:
    """Each position's occurrences one after another, in order: the positions sorted
    stably, the first thread of each run applying the run's values."""
    if target.size <= np.iinfo(np.int32).max:
        p = p.astype(np.int32)                  # (a 32-bit sort is faster than a 64-bit one)
    order = sorting.argsort(p)                   # stable: each position's occurrences in order
    p = p[order]
    expr = ufuncs.expression(np_ufunc, R, C, types, operands)
    if expr is None:
        raise DptxError(f"numpy.{np_ufunc.__name__}.at on {', '.join(str(t) for t in types)} "
                        f"is not supported on dptx arrays yet")
    kernel = _kernels.get((np_ufunc.__name__, tuple(str(t) for t in types), str(R), expr,
                           scalar, str(p.dtype)),
                          lambda: _kernel(np_ufunc, types, R, C, expr, scalar, p.dtype))
    args = [p, order]
    if b is not None:
        args.append(ufuncs._as_param(b, C) if scalar else b.reshape(-1))
    kernel(*args, np.int64(p.size), target.reshape(-1), size=p.size)


def _positions(a: ndarray, indices) -> ndarray:
    """The flat positions (int64) of the elements ``a[indices]`` names, in its shape: for a
    1-D array indexed by integers, the indices themselves (negative ones wrapped, numpy's
    bounds errors for host ones); else through an index array of ``a``'s shape."""
    if a.ndim == 1 and not isinstance(indices, tuple):
        idx = indices if isinstance(indices, ndarray) else np.asarray(indices)
        if idx.dtype.kind in "iu" and idx.ndim > 0:
            if isinstance(idx, np.ndarray):
                n = a.shape[0]
                bad = (idx < -n) | (idx >= n)
                if bad.any():
                    raise IndexError(f"index {idx[bad][0]} is out of bounds for axis 0 with "
                                     f"size {n}")
                return asarray(np.where(idx < 0, idx + n, idx).astype(np.int64))
            return _wrapped(idx, a.shape[0])
    return arange(a.size, dtype=np.int64).reshape(a.shape)[indices]


def _wrapped(idx: ndarray, n: int) -> ndarray:
    """Device indices with negative ones counted from the end (as numpy's, with no bounds
    check: that would be a wait; a position past the end is a bounds error of the launch)."""
    kernel = _kernels.get(("wrap", str(idx.dtype)), lambda: ElementwiseKernel(
        f"{idx.dtype} x, int64 n", "int64 z", "z = x < 0 ? (long long)x + n : (long long)x",
        f"dptx_at_positions_{idx.dtype}", options=EXACT))
    return kernel(idx, np.int64(n))


def _kernel(np_ufunc, types, R: np.dtype, C: np.dtype, expr: str, scalar: bool, P):
    A = types[0]
    binary = len(types) == 2
    params = f"raw {P} p, raw int64 o"
    if binary:
        params += f", {types[1]} _s" if scalar else f", raw {types[1]} v"
    params += ", int64 k"
    read_y = ""
    if binary:
        value = "_s" if scalar else "v[o[t]]"
        y_type = "float" if types[1] == HALF else c_type(types[1])
        read_y = f" const {y_type} y = ({y_type}){value};"
    x_type = "float" if A == HALF else c_type(A)
    body = expr[len("__STMT__"):] if expr.startswith("__STMT__") else f" z = ({expr});"
    op = (f"typedef {compute_type(R)} R; typedef {compute_type(C)} C;"
          f" const long long j = i;"
          f" if (j == 0 || p[j] != p[j - 1]) {{"
          f"  const long long at = p[j]; {c_type(A)} acc = w[at];"
          f"  for (long long t = j; t < k && p[t] == at; t++) {{"
          f"   const {x_type} x = ({x_type})acc;{read_y}"
          f"   {c_type(R)} z; {{{body}}}"
          f"   acc = {conversion(R, A, 'z')};"
          f"  }}"
          f"  w[at] = acc;"
          f" }}")
    return ElementwiseKernel(params, f"raw {A} w", op,
                             f"dptx_{np_ufunc.__name__}_at_{'_'.join(str(t) for t in types)}_{P}",
                             options=EXACT)
