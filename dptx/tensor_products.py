"""numpy's products beyond ``matmul`` and ``dot`` (reductions.py), made of them as numpy makes
them: ``tensordot`` (axes moved, reshaped to a matrix product), ``inner``, ``vdot``, ``kron``
(a broadcast product reshaped), ``cross`` (of 3-vectors, numpy's multiply and subtract
order). Each runs as device launches; only shapes are worked out on the host."""
from __future__ import annotations

import numpy as np

from . import reductions, ufuncs
from .array import _axes, asarray, expand_dims, ndarray
from .errors import DptxError

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
    return reductions.dot(at, bt).reshape(shape)


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
    """numpy.vdot of real arrays: the dot product of the flattened arrays."""
    a, b = asarray(a), asarray(b)
    if a.size != b.size:
        raise ValueError("vectors have different lengths")
    return reductions.dot(a.reshape(-1), b.reshape(-1))


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
    """numpy.cross of 3-vectors along the given axes (numpy's products and differences, in
    its order); 2-vectors, which numpy 2 deprecates, are not supported."""
    if axis is not None:
        axisa = axisb = axisc = axis
    a, b = asarray(a), asarray(b)
    a = a.swapaxes(_axes((axisa,), a.ndim)[0], -1) if a.ndim else a
    b = b.swapaxes(_axes((axisb,), b.ndim)[0], -1) if b.ndim else b
    if a.ndim == 0 or b.ndim == 0 or a.shape[-1] not in (2, 3) or b.shape[-1] not in (2, 3):
        raise ValueError("incompatible dimensions for cross product\n(dimension must be 2 "
                         "or 3)")
    if a.shape[-1] != 3 or b.shape[-1] != 3:
        raise DptxError("cross of 2-vectors is not supported on dptx arrays (numpy 2 "
                        "deprecates it)")
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    sub, mul = np.subtract, np.multiply
    parts = [ufuncs.apply(sub, ufuncs.apply(mul, a1, b2), ufuncs.apply(mul, a2, b1)),
             ufuncs.apply(sub, ufuncs.apply(mul, a2, b0), ufuncs.apply(mul, a0, b2)),
             ufuncs.apply(sub, ufuncs.apply(mul, a0, b1), ufuncs.apply(mul, a1, b0))]
    from .joining import stack
    out = stack(parts, axis=-1)
    return out.swapaxes(-1, _axes((axisc,), out.ndim)[0])
