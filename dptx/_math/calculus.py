"""numpy's numerical ``gradient`` (second-order central differences inside, first- or
second-order one-sided ones at the edges, uniform or given spacing) and ``trapezoid`` (the
trapezoidal rule) on dptx arrays, as numpy 2's ``_function_base_impl`` computes them: the
same operations in the same order on views of the array, each a device launch. Whether given
coordinates are evenly spaced (numpy then takes the scalar path) reads back one value."""
from __future__ import annotations

import numpy as np

from .._core import reductions, ufuncs
from ..runtime.ndarray import _axes, asarray, empty
from ..errors import DptxError
from .._manipulation.rearranging import diff

__all__ = ["gradient", "trapezoid"]


def _spacings(varargs, f, axes) -> list:
    """Each axis's spacing: a number, or the differences of its coordinates (a device
    array), numpy's rules and errors."""
    n = len(varargs)
    if n == 0:
        return [1.0] * len(axes)
    if n == 1 and np.ndim(varargs[0]) == 0:
        return list(varargs) * len(axes)
    if n != len(axes):
        raise TypeError("invalid number of arguments")
    dx = list(varargs)
    for i, distances in enumerate(dx):
        if np.ndim(distances) == 0:
            continue
        if np.ndim(distances) != 1:
            raise ValueError("distances must be either scalars or 1d")
        distances = asarray(distances)
        if len(distances) != f.shape[axes[i]]:
            raise ValueError("when 1d, distances must match the length of the corresponding "
                             "dimension")
        if distances.dtype.kind in "iu":
            distances = distances.astype(np.float64)     # no modular differences
        diffx = diff(distances)
        # evenly spaced coordinates take numpy's scalar path (its rounding differs)
        if diffx.size and bool(reductions.all_(ufuncs.apply(np.equal, diffx, diffx[0]))):
            diffx = diffx[0]
        dx[i] = diffx
    return dx


def gradient(f, *varargs, axis=None, edge_order=1):
    """numpy.gradient: the derivative estimate along each axis (a tuple for several)."""
    f = asarray(f)
    N = f.ndim
    axes = tuple(range(N)) if axis is None else _axes(axis, N)
    dx = _spacings(varargs, f, axes)
    if edge_order > 2:
        raise ValueError("'edge_order' greater than 2 not supported")
    otype = f.dtype
    if otype.kind not in "f":
        if otype.kind == "c":
            raise DptxError("complex dtypes are not supported on dptx arrays yet")
        if otype.kind in "iu":
            f = f.astype(np.float64)        # no modular differences
        otype = np.dtype(np.float64)
    outvals = []
    for ax, ax_dx in zip(axes, dx):
        if f.shape[ax] < edge_order + 1:
            raise ValueError("Shape of array too small to calculate a numerical gradient, at "
                             "least (edge_order + 1) elements are required.")
        out = empty(f.shape, otype)
        uniform = np.ndim(ax_dx) == 0

        def at(index):
            return f[(slice(None),) * ax + (index,)]

        def into(index, value):
            out[(slice(None),) * ax + (index,)] = value

        if uniform:
            into(slice(1, -1), (at(slice(2, None)) - at(slice(None, -2))) / (2. * ax_dx))
        else:
            dx1, dx2 = ax_dx[0:-1], ax_dx[1:]
            shape = [1] * N
            shape[ax] = -1
            a = (-(dx2) / (dx1 * (dx1 + dx2))).reshape(shape)
            b = ((dx2 - dx1) / (dx1 * dx2)).reshape(shape)
            c = (dx1 / (dx2 * (dx1 + dx2))).reshape(shape)
            into(slice(1, -1), a * at(slice(None, -2)) + b * at(slice(1, -1)) +
                 c * at(slice(2, None)))
        if edge_order == 1:
            dx_0 = ax_dx if uniform else ax_dx[0]
            into(0, (at(1) - at(0)) / dx_0)
            dx_n = ax_dx if uniform else ax_dx[-1]
            into(-1, (at(-1) - at(-2)) / dx_n)
        else:
            if uniform:
                a, b, c = -1.5 / ax_dx, 2. / ax_dx, -0.5 / ax_dx
            else:
                dx1, dx2 = ax_dx[0], ax_dx[1]
                a = -(2. * dx1 + dx2) / (dx1 * (dx1 + dx2))
                b = (dx1 + dx2) / (dx1 * dx2)
                c = - dx1 / (dx2 * (dx1 + dx2))
            into(0, a * at(0) + b * at(1) + c * at(2))
            if uniform:
                a, b, c = 0.5 / ax_dx, -2. / ax_dx, 1.5 / ax_dx
            else:
                dx1, dx2 = ax_dx[-2], ax_dx[-1]
                a = (dx2) / (dx1 * (dx1 + dx2))
                b = - (dx2 + dx1) / (dx1 * dx2)
                c = (2. * dx2 + dx1) / (dx2 * (dx1 + dx2))
            into(-1, a * at(-3) + b * at(-2) + c * at(-1))
        outvals.append(out)
    return outvals[0] if len(axes) == 1 else tuple(outvals)


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """numpy.trapezoid: the integral of ``y`` along ``axis`` by the trapezoidal rule, at
    coordinates ``x`` or spacing ``dx``."""
    y = asarray(y)
    if x is None:
        d = dx
    else:
        x = asarray(x)
        if x.ndim == 1:
            d = diff(x)
            shape = [1] * y.ndim
            shape[axis] = d.shape[0]
            d = d.reshape(shape)
        else:
            d = diff(x, axis=axis)
    nd = y.ndim
    slice1, slice2 = [slice(None)] * nd, [slice(None)] * nd
    slice1[axis] = slice(1, None)
    slice2[axis] = slice(None, -1)
    return reductions.sum_(d * (y[tuple(slice1)] + y[tuple(slice2)]) / 2.0, axis=axis)
