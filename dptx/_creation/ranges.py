"""numpy's numerical ranges on the devices: ``arange``, ``linspace``, ``logspace`` (the type,
length and values numpy gives; the values made by ``ufuncs``' fill kernels)."""
from __future__ import annotations

import operator

import numpy as np

from .._core import reductions, ufuncs
from .._manipulation import views
from ..runtime.ndarray import asarray, empty, expand_dims, ndarray
from ..errors import DptxError


def arange(start, stop=None, step=1, dtype=None) -> ndarray:
    """numpy.arange: the dtype and length numpy gives, the values made on the device as
    numpy fills them (element 0 is start, 1 is start + step, then start + i * delta in the
    array's type, delta being the difference of the first two)."""
    if stop is None:
        start, stop = 0, start
    if step is None:            # (numpy's default step)
        step = 1
    if step == 0:
        raise ZeroDivisionError("division by zero (arange's step)")
    if dtype is not None and np.dtype(dtype) == np.bool_:
        # numpy fills a boolean range of at most two elements (start, start + step as
        # truth values), and has no fill for longer ones
        values = arange(start, stop, step, dtype=np.result_type(start, stop, step, np.intp))
        if values.size > 2:
            raise TypeError("arange() is only supported for booleans when the result has at "
                            "most length 2.")
        return values.astype(np.bool_)
    # numpy's arange type: at least intp, with Python numbers taken at their default types
    # (not weak): arange(0, 1, np.float32(0.1)) is float64, arange(np.int8(5)) int64
    dt = np.dtype(dtype) if dtype is not None else np.result_type(
        np.intp, *[np.asarray(v).dtype for v in (start, stop, step)])
    if all(type(v) is int for v in (start, stop, step)):
        n = len(range(start, stop, step))
    else:
        # numpy's length: (stop - start) / step in the operands' own arithmetic (numpy
        # scalars wrap: arange(np.uint8(200), 0) has 56 elements in numpy), rounded up
        with np.errstate(all="ignore"):
            length = float(np.ceil((stop - start) / step))
        if not np.isfinite(length) or length > float(np.iinfo(np.intp).max):
            raise ValueError("Maximum allowed size exceeded")
        n = max(0, int(length))
    out = empty((n,), dt)
    if n:
        ufuncs.fill_arange(out, start, step)
    return out


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    """numpy.linspace of scalars: i * step + start (i / div * delta + start where the step
    is 0) computed in numpy's computation type (float64 for Python numbers, float32 or
    float16 for numpy scalars of those types: numpy 2's promotion), then converted; the
    last element is ``stop`` when ``endpoint``. The step and its type are numpy's own.
    Array ``start``/``stop``: a range per element, along a new ``axis`` (``_linspaces``)."""
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    if np.ndim(start) or np.ndim(stop) or np.iscomplexobj(start) or np.iscomplexobj(stop):
        # (complex ends: numpy's steps as device operations, as for array ends)
        return _linspaces(start, stop, num, endpoint, retstep, dtype, axis)
    start, stop = (v.get()[()] if isinstance(v, ndarray) else v for v in (start, stop))
    start, stop = (v[()] if isinstance(v, np.ndarray) else v for v in (start, stop))
    div = (num - 1) if endpoint else num
    dt = _computation_type(start, stop)
    # numpy's own scalar arithmetic in dt: the step it computes, and returns
    delta = np.subtract(stop, start, dtype=dt)
    with np.errstate(all="ignore"):
        step = delta / div if div > 0 else np.nan
    zero = div > 0 and step == 0
    out = empty((num,), np.dtype(dtype) if dtype is not None else dt)
    if num:
        # no step (one element with endpoint, or none): numpy computes i * delta + start
        ufuncs.fill_linspace(out, dt, start, stop, step if div > 0 else delta,
                             div if div > 0 else 1, delta, zero or div <= 0,
                             endpoint and num > 1)
    return (out, step) if retstep else out


def _computation_type(start, stop) -> np.dtype:
    """numpy's: the endpoints' common type (Python numbers weak), at least a float."""
    dt = np.result_type(start, stop)
    if dt.kind not in "fc":
        dt = np.result_type(dt, 0.0)
    return dt


def _linspaces(start, stop, num, endpoint, retstep, dtype, axis):
    """numpy.linspace of array endpoints, numpy's steps (numpy/_core/function_base.py) as
    device operations: y = arange(num) * step + start along a new first axis (arange / div
    * delta where a step is 0), the last slice ``stop`` where ``endpoint``, moved to
    ``axis``, floored for an integer ``dtype``."""
    start, stop = (v if isinstance(v, ndarray) else np.asarray(v) if np.ndim(v) else v
                   for v in (start, stop))
    probes = [np.empty(0, v.dtype) if isinstance(v, (ndarray, np.ndarray)) else v
              for v in (start, stop)]
    dt = _computation_type(*probes)
    start, stop = (asarray(v) if isinstance(v, np.ndarray) else v for v in (start, stop))
    div = (num - 1) if endpoint else num
    # numpy's subtract(stop, start, dtype=dt): both converted to dt, then subtracted
    delta = ufuncs.apply(np.subtract, *(v.astype(dt, copy=False) if isinstance(v, ndarray)
                                        else dt.type(v) for v in (stop, start)))
    y = arange(0, num, dtype=dt).reshape((-1,) + (1,) * delta.ndim)
    if div > 0:
        step = ufuncs.apply(np.divide, delta, div)
        if bool(reductions.any_(ufuncs.apply(np.equal, step, 0))):
            y = ufuncs.apply(np.multiply, ufuncs.apply(np.divide, y, div), delta)
        else:
            y = ufuncs.apply(np.multiply, y, step)
    else:
        step = np.nan
        y = ufuncs.apply(np.multiply, y, delta)
    y = ufuncs.apply(np.add, y, start, out=y)       # (numpy's y += start)
    if endpoint and num > 1:
        y[-1, ...] = stop
    if axis != 0:
        y = views.moveaxis(y, 0, axis)
    if dtype is not None and np.issubdtype(dtype, np.integer):
        ufuncs.apply(np.floor, y, out=y)
    if dtype is not None:
        y = y.astype(dtype, copy=False)
    return (y, step) if retstep else y


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    """numpy.logspace: ``base ** linspace(start, stop)``, as numpy computes it (array
    endpoints and bases broadcast, the bases along ``axis`` as numpy expands them)."""
    ndmax = max(np.ndim(start), np.ndim(stop), np.ndim(base))
    if ndmax == 0:
        y = linspace(start, stop, num=num, endpoint=endpoint)
        result = ufuncs.apply(np.power, base, y)
        return result if dtype is None else ufuncs.astype(result, dtype)
    start, stop, base = (asarray(v).reshape((1,) * (ndmax - np.ndim(v)) + np.shape(v))
                         for v in (start, stop, base))
    y = linspace(start, stop, num=num, endpoint=endpoint, axis=axis)
    result = ufuncs.apply(np.power, expand_dims(base, axis), y)
    return result if dtype is None else result.astype(dtype, copy=False)


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """numpy.geomspace of scalars: ``logspace`` of their base-10 logarithms (of the start's
    sign taken out), with the ends set to ``start`` and ``stop`` exactly, as numpy does."""
    start, stop = (v.get() if isinstance(v, ndarray) else v for v in (start, stop))
    if np.ndim(start) or np.ndim(stop):
        raise DptxError("geomspace of array start or stop is not supported on dptx arrays yet")
    start, stop = np.asanyarray(start), np.asanyarray(stop)
    if start == 0 or stop == 0:
        raise ValueError("Geometric sequence cannot include zero")
    dt = np.result_type(start, stop, float(num), np.zeros((), dtype))
    if dt.kind == "c":
        raise DptxError("complex dtypes are not supported on dptx arrays yet")
    dtype = dt if dtype is None else np.dtype(dtype)
    # numpy's own host arithmetic on the two ends (their types and roundings)
    start, stop = start.astype(dt, copy=True), stop.astype(dt, copy=True)
    out_sign = np.sign(start)
    start /= out_sign
    stop = stop / out_sign
    result = logspace(np.log10(start), np.log10(stop), num=num, endpoint=endpoint, base=10.0,
                      dtype=dt)
    if num > 0:
        result[0] = start[()]
        if num > 1 and endpoint:
            result[-1] = stop[()]
    result = ufuncs.apply(np.multiply, result, out_sign[()])
    if axis != 0:
        raise DptxError("geomspace: axis applies to array start/stop, which dptx does not take")
    return result if result.dtype == dtype else ufuncs.astype(result, dtype)
