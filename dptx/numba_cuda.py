"""numba-cuda's ``cuda`` module on dptx's virtual GPU: ``from dptx import numba_cuda as cuda`` in
place of ``from numba import cuda``, and a numba-cuda program runs as it is written, without a
GPU: ``@cuda.jit`` kernels launched as ``kernel[grid, block](...)``, ``cuda.to_device``,
``cuda.device_array(_like)``, ``copy_to_host``, ``cuda.synchronize``; inside kernels
everything numba-cuda offers (``cuda.grid``, ``cuda.shared.array``, ``cuda.syncthreads``,
``cuda.atomic``, ``cuda.shfl_*_sync``...).

How: each kernel is compiled by numba-cuda's own compiler to PTX for sm_80 (no GPU needed:
``numba.cuda.compile_ptx``), once per argument types, and launched as any dptx kernel, its
arrays passed in numba's array ABI (meminfo, parent, item count, item size, data pointer,
shape, strides). Every name of ``numba.cuda`` that kernels use is numba's own object, so numba
types them as it types its own module's. Device arrays are ``dptx.ndarray``s; a numpy array
given to a kernel is copied to the cluster and back after the launch, as numba copies host
arrays. Needs numba-cuda (``pip install numba-cuda``); the cluster is dptx's (embedded, or the
``dptx.scheduler-address`` setting)."""
from __future__ import annotations

import sys as _sys
import types as _pytypes

import numba
import numpy as _np
from numba import cuda as _numba
from numba import types as _types

from .errors import LaunchError
from .runtime.module import RawModule
from .runtime.ndarray import asarray, empty, empty_like, ndarray
from .runtime.stream import synchronize as _synchronize

TARGET = (8, 0)            # the compute capability kernels are compiled for (dptx's: compute_80)

# numba.cuda's names as they are (the kernels' cuda.grid, cuda.shared, cuda.atomic...), then
# the host side replaced below (this module's own imports are private names, which this leaves
# alone: numba.cuda has a ``types`` of its own)
globals().update({name: getattr(_numba, name) for name in dir(_numba)
                  if not name.startswith("__")})


def synchronize() -> None:
    """numba's ``cuda.synchronize``: waits for every launch and copy on the cluster."""
    _synchronize()


def is_available() -> bool:
    """True: dptx's virtual GPU is there whether or not this machine has one."""
    return True


def to_device(ary, stream=0, copy=True, to=None):
    """numba's ``cuda.to_device``: a dptx array with ``ary``'s values (into ``to`` if given)."""
    if to is not None:
        to.set(_np.asarray(ary))
        return to
    return asarray(_np.asarray(ary))


def device_array(shape, dtype=_np.float64, strides=None, order="C", stream=0):
    return empty(shape, dtype, order=order)


def device_array_like(ary, stream=0):
    return empty_like(ary)


def pinned_array(shape, dtype=_np.float64, strides=None, order="C"):
    return _np.empty(shape, dtype, order=order)


def jit(func_or_sig=None, device=False, **options):
    """numba's ``cuda.jit``: a kernel launched on dptx (``kernel[grid, block](...)``); with
    ``device=True`` numba's own device function (kernels call it and numba inlines it)."""
    if device:
        return _numba.jit(func_or_sig, device=True, **options)
    if callable(func_or_sig):
        return Kernel(func_or_sig, options)
    return lambda fn: Kernel(fn, options)


def _against_numba(func):
    """``func`` as if written against ``numba.cuda``: the same code, with every global that
    names this module naming numba's (numba types ``cuda.shared.array``, ``cuda.atomic.add``...
    by their module, not by value)."""
    here = _sys.modules[__name__]
    names = {k: _numba for k, v in func.__globals__.items() if v is here}
    if not names:
        return func
    copy = _pytypes.FunctionType(func.__code__, {**func.__globals__, **names}, func.__name__,
                              func.__defaults__, func.__closure__)
    copy.__kwdefaults__ = func.__kwdefaults__
    return copy


def _numba_type(value):
    if isinstance(value, ndarray):
        layout = "C" if value.flags.c_contiguous else "F" if value.flags.f_contiguous else "A"
        return _types.Array(numba.from_dtype(value.dtype), value.ndim, layout)
    return numba.typeof(value)


def _abi(value) -> list:
    """A kernel argument as numba's ABI passes it: an array as meminfo, parent (both unused
    here: 0), item count, item size, data, shape..., strides...; a scalar as it is."""
    if isinstance(value, ndarray):
        return ([_np.uint64(0), _np.uint64(0), _np.uint64(value.size), _np.uint64(value.itemsize),
                 value] + [_np.uint64(s) for s in value.shape]
                + [_np.int64(s) for s in value.strides])
    return [value]


class Kernel:
    """A ``@cuda.jit`` kernel on dptx: compiled by numba-cuda per argument types, launched
    with ``kernel[grid, block](args)`` or ``kernel[grid, block, stream, shared_bytes]``."""

    def __init__(self, func, options: dict):
        self.py_func = func
        self.options = options
        self._kernels: dict = {}
        self.__name__ = getattr(func, "__name__", "kernel")
        self.__doc__ = func.__doc__

    def __getitem__(self, config):
        if not isinstance(config, tuple) or len(config) not in (2, 3, 4):
            raise LaunchError(f"{self.__name__}[grid, block] (or [grid, block, stream, "
                              f"shared_bytes]) launches a kernel, not [{config!r}]")
        grid, block = config[0], config[1]
        shared = config[3] if len(config) == 4 else 0
        return lambda *args: self._launch(grid, block, args, shared)

    def __call__(self, *args, **kwargs):
        raise LaunchError(f"kernel {self.__name__} needs a launch configuration: "
                          f"{self.__name__}[grid, block](...)")

    def compiled(self, signature: tuple):
        """The dptx kernel for these numba argument types (compiled once)."""
        kernel = self._kernels.get(signature)
        if kernel is None:
            ptx, _ = _numba.compile_ptx(_against_numba(self.py_func), signature, cc=TARGET,
                                        **self.options)
            module = RawModule(ptx=ptx)
            (name,) = module.kernel_names
            kernel = self._kernels[signature] = module.get_function(name)
        return kernel

    def _launch(self, grid, block, args, shared):
        host = {i: a for i, a in enumerate(args) if isinstance(a, _np.ndarray) and a.ndim}
        device = [asarray(host[i]) if i in host else a for i, a in enumerate(args)]
        kernel = self.compiled(tuple(_numba_type(a) for a in device))
        expanded = [part for a in device for part in _abi(a)]
        handle = kernel(grid, block, tuple(expanded), shared_mem=shared)
        for i, ary in host.items():          # numba copies host arrays back after the launch
            device[i].get(out=ary)
        return handle


__all__ = sorted(name for name in globals() if not name.startswith("_"))
