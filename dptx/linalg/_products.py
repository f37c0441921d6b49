"""numpy's products beyond ``matmul`` and ``dot`` (dptx._core.reductions), made of them as numpy makes
them: ``tensordot`` (axes moved, reshaped to a matrix product), ``inner``, ``vdot``, ``kron``
(a broadcast product reshaped), ``cross`` (of 3- and 2-vectors, numpy's axes, multiply and subtract
order). Each runs as device launches; only shapes are worked out on the host."""
from __future__ import annotations

import warnings

import numpy as np

from .._core import products, ufuncs
from ..runtime.ndarray import asarray, empty, expand_dims, ndarray
from .._manipulation.views import moveaxis

# numpy's functions of these names (array_api dispatches numpy's to them)
__all__ = ["cross", "inner", "kron", "tensordot", "vdot"]


def tensordot(a, b, axes=2) -> ndarray:
    """numpy.tensordot: the sum over ``axes`` of a and b (the last ``axes`` of a with the
    first of b for an integer), as one matrix product of the arrays moved and reshaped."""
    a, b = asarray(a), asarray(b)
    try:
        iter(axes)
    except TypeError:
        axes_a, axes_b = list(range(-axes, 0)), list(range(0, axes))
    else:
        axes_a, axes_b = axes
    axes_a = [axes_a] if np.ndim(axes_a) == 0 else list(axes_a)
    axes_b = [axes_b] if np.ndim(axes_b) == 0 else list(axes_b)
    if len(axes_a) != len(axes_b):
        raise ValueError("shape-mismatch for sum")
    axes_a = [k + a.ndim if k < 0 else k for k in axes_a]
    axes_b = [k + b.ndim if k < 0 else k for k in axes_b]
    for ka, kb in zip(axes_a, axes_b):
        if not (0 <= ka < a.ndim and 0 <= kb < b.ndim) or a.shape[ka] != b.shape[kb]:
            raise ValueError("shape-mismatch for sum")
    keep_a = [k for k in range(a.ndim) if k not in axes_a]
    keep_b = [k for k in range(b.ndim) if k not in axes_b]
    n = int(np.prod([a.shape[k] for k in axes_a], dtype=np.int64))
    rows = int(np.prod([a.shape[k] for k in keep_a], dtype=np.int64))
    cols = int(np.prod([b.shape[k] for k in keep_b], dtype=np.int64))
    at = a.transpose(keep_a + axes_a).reshape(rows, n)
    bt = b.transpose(axes_b + keep_b).reshape(n, cols)
    shape = tuple(a.shape[k] for k in keep_a) + tuple(b.shape[k] for k in keep_b)
    return products.dot(at, bt).reshape(shape)


def inner(a, b) -> ndarray:
    """numpy.inner: the sum over the last axes (a scalar's product for 0-d operands)."""
    a, b = asarray(a), asarray(b)
    if a.ndim == 0 or b.ndim == 0:
        return ufuncs.apply(np.multiply, a, b)
    if a.shape[-1] != b.shape[-1]:
        raise ValueError("shapes " + str(a.shape) + " and " + str(b.shape) + " not aligned: "
                         f"{a.shape[-1]} (dim {a.ndim - 1}) != {b.shape[-1]} (dim "
                         f"{b.ndim - 1})")
    return tensordot(a, b, axes=([-1], [-1]))


def vdot(a, b) -> ndarray:
    """numpy.vdot: the dot product of the flattened arrays, ``a`` conjugated."""
    a, b = asarray(a), asarray(b)
    if a.size != b.size:
        raise ValueError("vectors have different lengths")
    if a.dtype.kind == "c":
        a = ufuncs.apply(np.conjugate, a)
    return products.dot(a.reshape(-1), b.reshape(-1))


def kron(a, b) -> ndarray:
    """numpy.kron: the blocks a[i] * b, as numpy builds it (a broadcast product with the
    axes interleaved, reshaped)."""
    a, b = asarray(a), asarray(b)
    if a.ndim == 0 or b.ndim == 0:
        return ufuncs.apply(np.multiply, a, b)
    nd = max(a.ndim, b.ndim)
    as_ = (1,) * max(0, b.ndim - a.ndim) + a.shape
    bs = (1,) * max(0, a.ndim - b.ndim) + b.shape
    a_arr = expand_dims(a, tuple(range(b.ndim - a.ndim))) if b.ndim > a.ndim else a
    b_arr = expand_dims(b, tuple(range(a.ndim - b.ndim))) if a.ndim > b.ndim else b
    a_arr = expand_dims(a_arr, tuple(range(1, nd * 2, 2)))
    b_arr = expand_dims(b_arr, tuple(range(0, nd * 2, 2)))
    product = ufuncs.apply(np.multiply, a_arr, b_arr)
    return product.reshape(tuple(int(x) * int(y) for x, y in zip(as_, bs)))


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None) -> ndarray:
    """numpy.cross of 3-vectors (and of 2-vectors, with numpy 2's DeprecationWarning) along
    the given axes, moved last as numpy moves them, in numpy's order of products and
    differences and its type."""
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = asarray(a), asarray(b)
    if a.ndim < 1 or b.ndim < 1:
        raise ValueError("At least one array has zero dimension")
    a = moveaxis(a, _axis(axisa, a.ndim, "axisa"), -1)
    b = moveaxis(b, _axis(axisb, b.ndim, "axisb"), -1)
    if a.shape[-1] not in (2, 3) or b.shape[-1] not in (2, 3):
        raise ValueError("incompatible dimensions for cross product\n(dimension must be 2 "
                         "or 3)")
    if a.shape[-1] == 2 or b.shape[-1] == 2:
        warnings.warn("Arrays of 2-dimensional vectors are deprecated. Use arrays of "
                      "3-dimensional vectors instead. (deprecated in NumPy 2.0)",
                      DeprecationWarning, stacklevel=2)
    three = a.shape[-1] == 3 or b.shape[-1] == 3
    shape = np.broadcast_shapes(a.shape[:-1], b.shape[:-1]) + ((3,) if three else ())
    if three:
        axisc = _axis(axisc, len(shape), "axisc")
    dtype = np.promote_types(a.dtype, b.dtype)
    a, b = (x if x.dtype == dtype else x.astype(dtype) for x in (a, b))
    sub, mul = np.subtract, np.multiply

    def diff(x, y, u, v):           # x * y - u * v, numpy's two products and a subtraction
        return ufuncs.apply(sub, ufuncs.apply(mul, x, y), ufuncs.apply(mul, u, v))

    def negated_product(x, y):
        return ufuncs.apply(np.negative, ufuncs.apply(mul, x, y))

    a0, a1 = a[..., 0], a[..., 1]
    b0, b1 = b[..., 0], b[..., 1]
    if not three:
        return diff(a0, b1, a1, b0)
    if a.shape[-1] == 2:
        b2 = b[..., 2]
        parts = [ufuncs.apply(mul, a1, b2), negated_product(a0, b2), diff(a0, b1, a1, b0)]
    elif b.shape[-1] == 2:
        a2 = a[..., 2]
        parts = [negated_product(a2, b1), ufuncs.apply(mul, a2, b0), diff(a0, b1, a1, b0)]
    else:
        a2, b2 = a[..., 2], b[..., 2]
        parts = [diff(a1, b2, a2, b1), diff(a2, b0, a0, b2), diff(a0, b1, a1, b0)]
    out = empty(shape, dtype)
    for c, part in enumerate(parts):
        out[..., c] = part
    return moveaxis(out, -1, axisc)


def _axis(axis: int, ndim: int, name: str) -> int:
    """numpy's ``normalize_axis_index`` with its message prefix (``axisa: axis 3 is out of
    bounds...``)."""
    if not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(axis, ndim, msg_prefix=name)
    return axis % ndim
