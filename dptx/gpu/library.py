"""Library routines on a GPU (``dptx.device.library``): CuPy's, which call cuBLAS and
cuSOLVER, on the device the task holds. Inputs go to the device, results come back to the
worker's host memory, where the task's outputs live (as a chunk's do)."""
from __future__ import annotations

import contextlib

import numpy as np

from ..device.library import results, routine
from .runner import cupy_module


def _raising(cp):
    """CuPy's linear algebra says nothing of a singular matrix unless asked (cupyx.errstate):
    asked, it raises numpy's LinAlgError, as numpy does (the stand-in raises it always)."""
    if cp.__name__ != "cupy":
        return contextlib.nullcontext()
    # lazy: CuPy's extras, on a GPU worker only
    import cupyx
    return cupyx.errstate(linalg="raise")


def run_library(name: str, arrays: list, kwargs: dict, device: int) -> tuple:
    """The arrays ``name`` returns for ``arrays``, run on CUDA device ``device``."""
    cp = cupy_module()
    with cp.cuda.Device(device), _raising(cp):
        inputs = [cp.asarray(a) for a in arrays]
        got = results(routine(cp, name)(*inputs, **kwargs))
        return tuple(cp.asnumpy(r) if isinstance(r, cp.ndarray) else np.asarray(r)
                     for r in got)
