"""Library routines on the CPU (``dptx.device.library``): numpy's, which call the BLAS and
LAPACK numpy was built with (OpenBLAS in its wheels), in this worker's process."""
from __future__ import annotations

import numpy as np

from ..device.library import results, routine


def run_library(name: str, arrays: list, kwargs: dict, device=None) -> tuple:
    """The arrays ``name`` returns for ``arrays`` (``device`` is the GPU executor's)."""
    return tuple(np.asarray(r) for r in results(routine(np, name)(*arrays, **kwargs)))
