"""A CuPy stand-in for TESTS ONLY (DESIGN.md point 10): the subset of CuPy's API that
``dptx/gpu`` uses, with the module, class and function names, signatures and return types of
CuPy's own source (``cupy/cuda/function.pyx``, ``memory.pyx``, ``pinned_memory.pyx``,
``stream.pyx``, ``device.pyx``, ``cupy_backends/cuda/api/runtime.pyx`` and ``driver.pyx``,
``cupy/_core/core.pyx`` for ``ndarray.get/set``), over a fake machine (``_machine``):

- device memory is host memory in a registry keyed by fake device pointers;
- ``Module.load`` runs NVIDIA's ``ptxas`` on the PTX (the driver's JIT), refusing what ptxas
  refuses (with its message) and a ``.version`` newer than the fake driver loads;
- kernels run on dptx's CPU executor; a fault (an out-of-bounds access...) becomes the CUDA
  error a GPU reports, and leaves the device's context corrupted until the (fake) process
  restarts (``testing.restart_process``), as CUDA's sticky errors do.

dptx selects it with ``DPTX_CUPY_MODULE=tests.cupy_standin``. It never replaces the tests
that run on real GPUs. ``testing`` has what tests inspect (launches, copies, attribute calls).
"""
from __future__ import annotations

import numpy

from . import cuda  # noqa: F401
from . import _state  # noqa: F401
from . import fft, linalg  # noqa: F401
from ._library import run as _run_library
from .cuda import memory as _memory
from .cuda import pinned_memory as _pinned_memory
from .cuda import runtime as _runtime
from .cuda import stream as _stream

_default_memory_pool = _memory.MemoryPool()
_default_pinned_memory_pool = _pinned_memory.PinnedMemoryPool()
_memory.set_allocator(_default_memory_pool.malloc)
_pinned_memory.set_pinned_memory_allocator(_default_pinned_memory_pool.malloc)


def get_default_memory_pool():
    return _default_memory_pool


def get_default_pinned_memory_pool():
    return _default_pinned_memory_pool


class ndarray:
    """A C-contiguous device array: ``shape``, ``dtype``, ``size``, ``nbytes``, ``data`` (a
    MemoryPointer), ``get(stream=None, order='C', out=None, blocking=True)``, ``set(arr,
    stream=None)``."""

    def __init__(self, shape, dtype=float, memptr=None, strides=None, order="C"):
        self._shape = tuple(int(s) for s in (shape if isinstance(shape, tuple) else (shape,)))
        self.dtype = numpy.dtype(dtype)
        if strides is not None or order != "C":
            raise NotImplementedError("the stand-in has C-contiguous arrays only")
        self.data = memptr if memptr is not None else _memory.alloc(self.nbytes)
        self.device = self.data.device

    shape = property(lambda self: self._shape)
    ndim = property(lambda self: len(self._shape))
    size = property(lambda self: int(numpy.prod(self._shape, dtype=numpy.int64)))
    itemsize = property(lambda self: self.dtype.itemsize)
    nbytes = property(lambda self: self.size * self.dtype.itemsize)

    def __len__(self):
        return self._shape[0]

    def __repr__(self):
        return f"<stand-in ndarray shape={self.shape} dtype={self.dtype} ptr={self.data.ptr:#x}>"

    def get(self, stream=None, order="C", out=None, blocking=True):
        if stream is None:
            stream = _stream.get_current_stream()
        if out is not None:
            if not isinstance(out, numpy.ndarray):
                raise TypeError("Only numpy.ndarray can be obtained fromcupy.ndarray")
            if self.dtype != out.dtype:
                raise TypeError(f"{out.dtype} array cannot be obtained from {self.dtype} array")
            if self.shape != out.shape:
                raise ValueError(f"Shape mismatch. Expected shape: {self.shape}, actual shape: "
                                 f"{out.shape}")
            if not out.flags.c_contiguous:
                raise RuntimeError("`out` cannot be specified when copying to non-contiguous "
                                   "ndarray")
            a_cpu = out
        else:
            a_cpu = numpy.empty(self._shape, dtype=self.dtype)
        previous = _runtime.getDevice()
        try:
            _runtime.setDevice(self.device.id)
            self.data.copy_to_host_async(a_cpu.ctypes.data, self.nbytes, stream)
            if blocking:
                stream.synchronize()
        finally:
            _runtime.setDevice(previous)
        return a_cpu

    def set(self, arr, stream=None):
        if not isinstance(arr, numpy.ndarray):
            raise TypeError("Only numpy.ndarray can be set to cupy.ndarray")
        if self.dtype != arr.dtype:
            raise TypeError(f"{arr.dtype} array cannot be set to {self.dtype} array")
        if self.shape != arr.shape:
            raise ValueError(f"Shape mismatch. Old shape: {self.shape}, new shape: {arr.shape}")
        arr = numpy.ascontiguousarray(arr)
        if stream is None:
            stream = _stream.get_current_stream()
        previous = _runtime.getDevice()
        try:
            _runtime.setDevice(self.device.id)
            self.data.copy_from_host_async(arr.ctypes.data, self.nbytes, stream)
        finally:
            _runtime.setDevice(previous)


def empty(shape, dtype=float, order="C"):
    return ndarray(shape, dtype, order=order)


def zeros(shape, dtype=float, order="C"):
    a = ndarray(shape, dtype, order=order)
    a.data.memset_async(0, a.nbytes)
    return a


def asarray(a, dtype=None, order=None):
    if isinstance(a, ndarray) and (dtype is None or numpy.dtype(dtype) == a.dtype):
        return a
    host = numpy.ascontiguousarray(numpy.asarray(a if not isinstance(a, ndarray) else a.get(),
                                                 dtype=dtype))
    out = ndarray(host.shape, host.dtype)
    out.set(host)
    return out


def asnumpy(a, stream=None, order="C", out=None, blocking=True):
    if isinstance(a, ndarray):
        return a.get(stream=stream, order=order, out=out, blocking=blocking)
    return numpy.asarray(a, order=order)


def matmul(a, b):
    """cuBLAS's product on a GPU (the stand-in: numpy's, ``_library``)."""
    return _run_library("matmul", numpy.matmul, a, b)

