"""Triton on dptx's virtual GPU: ``import dptx.triton as triton`` in place of ``import
triton``, and a Triton program runs as it is written, without a GPU: ``@triton.jit`` kernels
launched as ``kernel[grid](x, y, n, BLOCK=1024)`` on dptx arrays, ``triton.cdiv``,
``triton.autotune``/``triton.Config`` (timed on the cluster), ``import triton.language as
tl`` unchanged.

How: Triton's runtime asks its *active driver* for the target, for a launcher and for the
device's properties (``triton.runtime.driver``; ``triton/backends/driver.py`` says what a
driver provides). This module makes a driver of dptx's the active one: Triton's own compiler
then compiles each specialization for the target (sm_80 by default: ``set_target``), with
Triton's own cache, and the launcher runs the PTX Triton wrote (read from that cache) as any
dptx kernel: ``num_warps * 32`` threads a block, Triton's dynamic shared memory, the pointer
arguments as dptx arrays, the scalars as the kernel's parameter types, and the scratch memory
a kernel asks for allocated on the cluster. Arrays are ``dptx.ndarray``s (Triton reads their
``dtype`` and ``data_ptr()``, as it reads a torch tensor's).

Not supported (refused by name): tensor descriptors (TMA), tuples of arguments, thread-block
clusters (``num_ctas > 1``). ``set_target(90)`` compiles for sm_90: matmuls become wgmma
from shared memory, which runs (tensor-map copies, which Triton emits for tensor
descriptors, do not). Needs Triton (``pip install triton``, the ``generators`` extra)."""
from __future__ import annotations

import time as _time

import numpy as _np
import triton as _triton
from triton.backends.compiler import GPUTarget as _GPUTarget
from triton.backends.driver import DriverBase as _DriverBase
from triton.runtime import driver as _driver
from triton.runtime.cache import get_cache_manager as _cache_manager

from .device.launch_config import MAX_SHARED_BYTES as _MAX_SHARED
from .errors import DptxError, LaunchError
from .runtime.module import RawModule as _RawModule
from .runtime.ndarray import ndarray as _ndarray, zeros as _zeros
from .runtime.stream import synchronize as _synchronize

# triton's names as they are (jit, cdiv, autotune, Config, heuristics, language, testing...);
# this module's own imports are private names
globals().update({name: getattr(_triton, name) for name in dir(_triton)
                  if not name.startswith("__")})

_target = [80]      # compute capability Triton compiles for, as major * 10 + minor


def set_target(capability: int = 80) -> None:
    """The compute capability Triton compiles for (80: sm_80, the default; 75, 86, 89, 90...).
    An instruction dptx does not run raises ``PtxUnsupportedError`` at launch, naming it."""
    if not isinstance(capability, int) or not 50 <= capability < 200:
        raise DptxError(f"set_target({capability!r}): a compute capability as major * 10 + "
                        f"minor (80 for sm_80)")
    _target[0] = capability


def _module_for(metadata) -> "_RawModule":
    """The dptx module of a compiled kernel: the PTX Triton's compiler left in its cache (the
    binary it hands the driver is a cubin, which dptx does not run)."""
    found = _modules.get(metadata.hash)
    if found is None:
        path = _cache_manager(metadata.hash).get_file(f"{metadata.name}.ptx")
        if path is None:
            raise DptxError(f"kernel {metadata.name}: Triton's cache holds no PTX for it "
                            f"(TRITON_STORE_BINARY_ONLY set?); dptx runs Triton's PTX")
        with open(path) as f:
            found = _modules[metadata.hash] = _RawModule(ptx=f.read())
    return found


_modules: dict = {}

# Triton's scalar types -> what the PTX parameter takes (fp16/bf16 as their bits)
_SCALARS = {"i1": _np.int8, "u1": _np.uint8, "i8": _np.int8, "u8": _np.uint8,
            "i16": _np.int16, "u16": _np.uint16, "i32": _np.int32, "u32": _np.uint32,
            "i64": _np.int64, "u64": _np.uint64, "fp32": _np.float32, "fp64": _np.float64}


def _scalar(kind: str, value, name: str):
    if kind == "fp16":
        return _np.float16(value).view(_np.uint16)
    if kind == "bf16":
        bits = int(_np.float32(value).view(_np.uint32))
        # round to nearest even on the 16 bits kept (NaN stays NaN)
        if (bits & 0x7F800000) == 0x7F800000 and bits & 0x7FFFFF:
            return _np.uint16((bits >> 16) | 0x40)
        return _np.uint16(((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF)
    target = _SCALARS.get(kind)
    if target is None:
        raise LaunchError(f"argument {name}: Triton type {kind} is not supported by dptx's "
                          f"Triton launcher")
    return target(value)


class _Launcher:
    """What Triton calls to launch a compiled kernel (the driver's ``launcher_cls``)."""

    def __init__(self, src, metadata):
        self.metadata = metadata
        self.names = list(src.fn.arg_names) if hasattr(src, "fn") else \
            [f"arg{i}" for i in range(len(src.signature))]
        self.signature = list(src.signature.values())
        for kind, name in zip(self.signature, self.names):
            if isinstance(kind, tuple) or (isinstance(kind, str) and kind.startswith(
                    ("tensordesc", "nvTmaDesc"))):
                raise LaunchError(f"Triton kernel {metadata.name}, argument {name} ({kind}): "
                                  f"tuples and tensor descriptors are not supported by "
                                  f"dptx's Triton launcher yet")
        if getattr(metadata, "num_ctas", 1) != 1:
            raise LaunchError(f"Triton kernel {metadata.name}: num_ctas={metadata.num_ctas} "
                              f"(thread-block clusters) is not supported by dptx")

    def __call__(self, grid_x, grid_y, grid_z, stream, function, packed_metadata,
                 launch_metadata, enter_hook, exit_hook, *args):
        md = self.metadata
        grid = (int(grid_x), int(grid_y), int(grid_z))
        if 0 in grid:
            return      # Triton launches nothing for an empty grid
        kernel = _module_for(md).get_function(md.name)
        values = []
        for kind, name, value in zip(self.signature, self.names, args):
            if kind == "constexpr":
                continue
            if kind.startswith("*"):
                if not isinstance(value, _ndarray) and value is not None:
                    raise LaunchError(f"Triton kernel {md.name}, argument {name}: a pointer "
                                      f"argument must be a dptx array (dptx.asarray(x)), got "
                                      f"{type(value).__name__}")
                values.append(0 if value is None else value)
            else:
                values.append(_scalar(kind, value, name))
        programs = grid[0] * grid[1] * grid[2]
        for size in (md.global_scratch_size, md.profile_scratch_size)[
                :len(kernel.params) - len(values)]:
            values.append(_zeros(programs * size, _np.uint8) if size else 0)
        if len(values) != len(kernel.params):
            raise LaunchError(f"Triton kernel {md.name}: its PTX takes {len(kernel.params)} "
                              f"parameters, dptx's launcher has {len(values)} values for them")
        if enter_hook is not None:
            enter_hook(launch_metadata)
        kernel(grid, (32 * md.num_warps, 1, 1), tuple(values), shared_mem=int(md.shared))
        if exit_hook is not None:
            exit_hook(launch_metadata)


class _Utils:
    """The driver's ``utils``: loading a binary (the launcher runs PTX: nothing to load) and
    the device's properties."""

    def load_binary(self, name, kernel, shared, device):
        # (module, function, registers, spills, max threads per block)
        return None, name, 0, 0, 1024

    def unload_module(self, module):
        pass

    def get_device_properties(self, device):
        return {"max_shared_mem": _MAX_SHARED, "multiprocessor_count": 108,
                "max_num_regs": 65536, "warpSize": 32, "sm_clock_rate": 1_410_000,
                "mem_clock_rate": 1_215_000, "mem_bus_width": 5120}

    def set_printf_fifo_size(self, size):
        pass


def _bench(kernel_call, warmup=25, rep=100, grad_to_none=None, quantiles=None,
           return_mode="mean", **_):
    """Triton's ``do_bench`` on the cluster: milliseconds per call of ``kernel_call`` (which
    autotuning uses to pick a configuration), each call waited for."""
    kernel_call()
    _synchronize()
    start = _time.perf_counter()
    kernel_call()
    _synchronize()
    estimate = max(_time.perf_counter() - start, 1e-6)
    times = []
    for _ in range(max(1, min(1000, int(rep * 1e-3 / estimate)))):
        start = _time.perf_counter()
        kernel_call()
        _synchronize()
        times.append((_time.perf_counter() - start) * 1e3)
    data = _np.array(times)
    if quantiles is not None:
        out = [float(v) for v in _np.quantile(data, quantiles)]
        return out[0] if len(out) == 1 else out
    return float(getattr(_np, return_mode)(data))


class Driver(_DriverBase):
    """Triton's driver for dptx's virtual GPU: one device, its target ``set_target``'s."""

    def __init__(self):
        self.utils = _Utils()
        self.launcher_cls = _Launcher

    @classmethod
    def is_active(cls):
        return False    # (made active by this module, never chosen by Triton itself)

    def map_python_to_cpp_type(self, ty: str) -> str:
        return "void*" if ty.startswith("*") else {"fp32": "float", "fp64": "double"}.get(
            ty, f"{'uint' if ty.startswith('u') else 'int'}{ty[1:]}_t")

    def get_current_target(self):
        return _GPUTarget("cuda", _target[0], 32)

    def get_active_torch_device(self):
        raise DptxError("dptx's Triton driver has no torch device: kernels take dptx arrays")

    def get_current_device(self):
        return 0

    def set_current_device(self, device):
        pass

    def get_current_stream(self, device=None):
        return 0

    def get_device_capability(self, device=0):
        return divmod(_target[0], 10)

    def get_benchmarker(self):
        return _bench

    def get_empty_cache_for_benchmark(self):
        return None

    def clear_cache(self, cache):
        pass


_driver.set_active(Driver())
