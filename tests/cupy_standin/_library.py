"""What the stand-in's library routines share (``linalg``, ``matmul``): the inputs' bytes
read from the (fake) device, numpy's routine, each result put on the current device."""
from __future__ import annotations

import numpy

from . import _state
from .cuda import runtime as _runtime


def _device_array(value):
    """``value`` on the current device, of its shape (0-d too, as CuPy's results are)."""
    from . import ndarray
    host = numpy.asarray(value)
    out = ndarray(host.shape, host.dtype)
    out.set(host)
    return out


def run(name, routine, *arrays, **kwargs):
    from . import ndarray
    _state.process().calls.append(("library", _runtime.getDevice(), name))
    host = [a.get() if isinstance(a, ndarray) else numpy.asarray(a) for a in arrays]
    result = routine(*host, **kwargs)
    if isinstance(result, tuple):
        made = [_device_array(r) for r in result]
        return type(result)(*made) if hasattr(result, "_fields") else tuple(made)
    return _device_array(result)
