"""GPU execution of PTX through CuPy: a range of blocks of a launch runs as a sub-grid of the
block-offset-rewritten kernel (``dptx.ptx.rewrite``), loaded as ``ptx_for_device`` gives it for
the worker's driver and device. CuPy is the ``gpu`` extra (``runner.cupy_module``, set by
``DPTX_CUPY_MODULE``); nothing here imports it on a CPU-only install until a GPU chunk runs."""
from .blocks import run_blocks
from .library import run_library
from .loadable import ptx_for_device
from .runner import (GpuFault, GpuModuleError, GpuUnavailable, available, devices, lane,
                     launch)

__all__ = ["available", "devices", "lane", "launch", "ptx_for_device", "GpuFault",
           "GpuModuleError", "GpuUnavailable", "run_blocks", "run_library"]
