"""What CuPy re-exports from numpy, so that code written against ``cupy`` (``cp.float32``,
``cp.newaxis``, ``cp.pi``, ``cp.finfo``, ``cp.result_type``) runs against ``dptx``: numpy's
own objects (types, constants, type queries, numbers as text, print options), nothing
re-implemented. ``shape``, ``size`` and ``ndim`` also take dptx arrays (they read only the
description)."""
from __future__ import annotations

import numpy as np

from .runtime.ndarray import ndarray

# scalar types and dtype objects, as CuPy has them (cupy.float32 is numpy.float32)
TYPES = ("bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
         "float16", "float32", "float64", "intp", "uintp", "byte", "ubyte", "short",
         "ushort", "intc", "uintc", "longlong", "ulonglong", "half", "single", "double",
         "dtype", "generic", "number", "integer", "signedinteger", "unsignedinteger",
         "floating", "inexact", "bool", "int_", "uint", "long", "ulong", "complex64",
         "complex128", "csingle", "cdouble", "complexfloating")
CONSTANTS = ("newaxis", "pi", "e", "inf", "nan", "euler_gamma")
QUERIES = ("finfo", "iinfo", "result_type", "can_cast", "promote_types", "min_scalar_type",
           "common_type", "issubdtype", "isscalar", "broadcast_shapes", "isdtype", "typename",
           "mintypecode", "iterable")
# numbers as text, and the print options that dptx arrays print with (dptx._io.formatting)
TEXT = ("base_repr", "binary_repr", "format_float_positional", "format_float_scientific",
        "printoptions", "get_printoptions", "set_printoptions")


def shape(a) -> tuple:
    return a.shape if isinstance(a, ndarray) else np.shape(a)


def size(a, axis=None) -> int:
    if isinstance(a, ndarray):
        return a.size if axis is None else a.shape[axis]
    return np.size(a, axis)


def ndim(a) -> int:
    return a.ndim if isinstance(a, ndarray) else np.ndim(a)


def names() -> dict:
    """name -> numpy's object, for ``dptx``'s namespace."""
    out = {name: getattr(np, name) for name in TYPES + CONSTANTS + QUERIES + TEXT}
    out.update(shape=shape, size=size, ndim=ndim)
    return out
