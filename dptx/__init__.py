"""dptx: a distributed PTX virtual machine.

Runs unmodified CUDA kernels (PTX, or CUDA C through NVRTC) on CPUs through LLVM and on a Dask
cluster of CPU and GPU workers. See README.md and DESIGN.md.
"""
from .errors import (CompileError, DptxError, DptxMemoryError, KernelNotFoundError,
                     LaunchError, PtxSyntaxError, PtxUnsupportedError)
from .module import KernelParam, RawKernel, RawModule

__version__ = "0.1.0"

__all__ = [
    "RawModule", "RawKernel", "KernelParam", "DptxError", "CompileError", "PtxSyntaxError",
    "PtxUnsupportedError", "LaunchError", "DptxMemoryError", "KernelNotFoundError",
    "__version__",
]
