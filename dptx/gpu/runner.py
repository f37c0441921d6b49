"""Run blocks [first, end) of a launch on the GPU, with the same argument conventions as
``dptx.cpu.launch``: numpy arrays are device buffers (copied to the GPU, run, copied back in
place), scalars are numpy scalars or bytes (structs), ``globals`` maps module variable names to
numpy buffers holding their contents (loaded before, read back after)."""
from __future__ import annotations

import functools
import hashlib
import threading

import numpy as np

from ..errors import DptxError, LaunchError
from ..launch_config import check_shape
from ..ptx import print_module
from ..ptx.rewrite import add_block_offset, sub_grid_arguments

_lock = threading.Lock()
_modules: dict = {}


@functools.lru_cache(maxsize=None)
def available() -> bool:
    """Whether CuPy is installed and sees a CUDA device."""
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


def _module_for(kernel):
    """CuPy module of the rewritten PTX, loaded once per (PTX, kernel) per process."""
    import cupy
    key = (hashlib.sha256(kernel.ptx.encode()).hexdigest(), kernel.name)
    with _lock:
        mod = _modules.get(key)
        if mod is None:
            text = print_module(add_block_offset(kernel.module, kernel.name))
            mod = cupy.cuda.function.Module()
            mod.load(text.encode())
            _modules[key] = mod
        return mod


def _kernel_arg(value):
    import cupy
    if isinstance(value, (bytes, bytearray)):
        # a struct passed by value: CuPy passes numpy structured scalars as raw bytes
        return np.frombuffer(bytes(value), dtype=np.dtype([("raw", np.uint8, len(value))]))[0]
    if isinstance(value, np.ndarray):
        return cupy.asarray(value)
    return value


def launch(kernel, grid, block, args, shared_mem: int = 0, blocks=None, globals=None, threads=None):
    if not available():
        raise DptxError("no CUDA GPU is available to CuPy on this machine")
    import cupy
    g, b = check_shape(grid, block, shared_mem)
    nblocks = g[0] * g[1] * g[2]
    rng = range(nblocks) if blocks is None else blocks
    if rng.step != 1 or not 0 <= rng.start < rng.stop <= nblocks:
        raise LaunchError(f"blocks={blocks!r} is not a contiguous range inside the grid of {nblocks} blocks")
    mod = _module_for(kernel)
    func = mod.get_function(kernel.name)
    if int(shared_mem) > 48 * 1024:
        # more than 48 KiB of dynamic shared memory must be opted into per kernel
        func.max_dynamic_shared_size_bytes = int(shared_mem)
    device_args = [_kernel_arg(a) for a in args]
    for name, host in (globals or {}).items():
        ptr = mod.get_global_var(name)
        ptr.copy_from_host(host.ctypes.data, host.nbytes)
    sub_grid, extra = sub_grid_arguments(g, rng.start, rng.stop)
    func(sub_grid, b, tuple(device_args) + tuple(np.uint32(v) for v in extra),
         shared_mem=int(shared_mem))
    cupy.cuda.runtime.deviceSynchronize()
    for host, dev in zip(args, device_args):
        if isinstance(host, np.ndarray):
            dev.get(out=host)
    for name, host in (globals or {}).items():
        mod.get_global_var(name).copy_to_host(host.ctypes.data, host.nbytes)
