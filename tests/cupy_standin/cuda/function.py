"""Stand-in for ``cupy.cuda.function`` (``cupy/cuda/function.pyx``): ``Module`` (``load``,
``load_file``, ``get_function``, ``get_global_var`` returning an int device pointer) and
``Function.__call__(grid, block, args, shared_mem=0, stream=None)``. Arguments are converted
as CuPy 13's ``_pointer`` does (the strictest of the versions dptx allows): device arrays and
MemoryPointers by their pointer, numpy arrays of size one by their bytes, numpy scalars of the
numeric types and Python numbers by value; anything else (``numpy.void`` structs included)
raises TypeError. The driver then reads each parameter's size from the pointer it is given.
Tests only."""
from __future__ import annotations

import ctypes
import sys

import numpy

from .. import _state
from . import driver, runtime
from . import stream as stream_module
from .memory import MemoryPointer


class CPointer:
    """A host pointer to a kernel argument's bytes (``ptr``); keeps the bytes alive."""

    def __init__(self, p=0):
        self.ptr = p


class _CValue(CPointer):
    """CInt8 .. CInt128, CIntptr, CUIntMax: the value in 16 zeroed bytes of its own."""

    def __init__(self, raw: bytes):
        self._buf = ctypes.create_string_buffer(raw, 16)
        super().__init__(ctypes.addressof(self._buf))


class CNumpyArray(CPointer):
    def __init__(self, v):
        self.val = v
        super().__init__(v.__array_interface__["data"][0])


def CIntptr(v):
    return _CValue(int(v).to_bytes(8, "little", signed=int(v) < 0))


_pointer_numpy_types = {numpy.dtype(c).type for c in "?bhilqBHILQefdFD"}


def _pointer(x) -> CPointer:
    from .. import ndarray
    if x is None:
        return CPointer()
    if isinstance(x, ndarray):
        return CIntptr(x.data.ptr)
    if isinstance(x, MemoryPointer):
        return CIntptr(x.ptr)
    if isinstance(x, CPointer):
        return x
    if isinstance(x, numpy.ndarray):
        if x.size == 1:
            return CNumpyArray(x)
        raise TypeError(
            "You are trying to pass a numpy.ndarray of shape {} as a kernel parameter. Only "
            "numpy.ndarrays of size one can be passed by value. If you meant to pass a pointer "
            "to __global__ memory, you need to pass a cupy.ndarray instead.".format(x.shape))
    if type(x) not in _pointer_numpy_types:
        if isinstance(x, int):
            x = numpy.int64(x)
        elif isinstance(x, float):
            x = numpy.float64(x)
        elif isinstance(x, bool):
            x = numpy.bool_(x)
        elif isinstance(x, complex):
            x = numpy.complex128(x)
        else:
            raise TypeError("Unsupported type %s" % type(x))
    if x.itemsize not in (1, 2, 4, 8, 16):
        raise TypeError("Unsupported type %s. (size=%d)" % (type(x), x.itemsize))
    return _CValue(x.tobytes())


def _launch(func, grid, block, args, shared_mem, stream):
    pargs = [_pointer(a) for a in args]     # keep the CPointer objects alive
    kargs = (ctypes.c_void_p * max(1, len(pargs)))(*[p.ptr for p in pargs])
    runtime._ensure_context()
    driver.launchKernel(func, grid[0], grid[1], grid[2], block[0], block[1], block[2],
                        shared_mem, stream, ctypes.addressof(kargs), 0)


class Function:
    """CUDA kernel function."""

    def __init__(self, module, funcname):
        self.module = module        # to keep module loaded
        self.ptr = driver.moduleGetFunction(module.ptr, funcname)

    def __call__(self, grid, block, args, shared_mem=0, stream=None,
                 enable_cooperative_groups=False):
        if not isinstance(grid, tuple) or not isinstance(block, tuple):
            raise TypeError("grid and block must be tuples")
        if shared_mem < 0:
            raise OverflowError("can't convert negative value to size_t")
        grid = (grid + (1, 1))[:3]
        block = (block + (1, 1))[:3]
        s = stream_module.get_current_stream_ptr() if stream is None else stream.ptr
        _launch(self.ptr, tuple(max(1, g) for g in grid), tuple(max(1, b) for b in block),
                args, shared_mem, s)


class Module:
    """CUDA kernel module."""

    def __init__(self):
        self.ptr = 0
        self.mapping = None
        self._generation = _state.generation()
        self._device = None

    def __del__(self):
        if sys.is_finalizing():
            return
        if self.ptr and self._generation == _state.generation():
            with _CurrentDevice(self._device):
                driver.moduleUnload(self.ptr)
            self.ptr = 0

    def load_file(self, filename):
        if isinstance(filename, bytes):
            filename = filename.decode()
        runtime._ensure_context()
        self._device = runtime.getDevice()
        self.ptr = driver.moduleLoad(filename)

    def load(self, cubin):
        if not isinstance(cubin, bytes):
            raise TypeError(f"Argument 'cubin' has incorrect type (expected bytes, got "
                            f"{type(cubin).__name__})")
        runtime._ensure_context()
        self._device = runtime.getDevice()
        self.ptr = driver.moduleLoadData(cubin)

    def get_global_var(self, name):
        if isinstance(name, bytes):
            name = name.decode()
        return driver.moduleGetGlobal(self.ptr, name)

    def get_function(self, name):
        if isinstance(name, bytes):
            name = name.decode()
        return Function(self, name)


class _CurrentDevice:
    """The module's device made current for unloading (the stand-in keeps modules per
    device; a real module belongs to the context it was loaded in)."""

    def __init__(self, device):
        self.device = device

    def __enter__(self):
        self.previous = runtime.getDevice()
        if self.device is not None:
            runtime.setDevice(self.device)

    def __exit__(self, *args):
        runtime.setDevice(self.previous)
