"""The fake machine behind the CuPy stand-in (tests only): CUDA devices, one context per device
with its device memory, loaded modules, streams and sticky error; the driver's PTX JIT (NVIDIA's
``ptxas`` of the CUDA release closest to the fake driver); and kernel execution on dptx's CPU
executor.

"Device memory" is host memory (numpy arrays) in a registry keyed by fake device pointers, so
that a pointer the code under test computes wrongly is caught, as on a GPU. Everything runs at
once, in call order: a stream's order is trivially kept, and what a real GPU would report at a
later call (a kernel's fault) is reported from the next call on that device, as CUDA does.

Settings (read when the fake "process" starts, i.e. on first use and after
``testing.restart_process()``):

- ``DPTX_STANDIN_DEVICES``: number of devices (default 1);
- ``DPTX_STANDIN_DRIVER``: the ``cuDriverGetVersion`` number (default 13000, CUDA 13.0);
- ``DPTX_STANDIN_ARCH``: the devices' architecture (default ``sm_90``);
- ``DPTX_STANDIN_RUNTIME``: the CUDA runtime "CuPy" was built with (default 13000, as
  cupy-cuda13x); a driver of an older major version makes every call fail with
  cudaErrorInsufficientDriver, as on a real machine;
- ``DPTX_STANDIN_FAULT_KERNELS``: comma-separated kernel names whose launches fault with an
  illegal address, as if they had read out of bounds (to fault one worker of a cluster only).
"""
from __future__ import annotations

import bisect
import ctypes
import functools
import itertools
import os
import re
import threading
from dataclasses import dataclass, field

import numpy as np

DEVICES_ENV = "DPTX_STANDIN_DEVICES"
DRIVER_ENV = "DPTX_STANDIN_DRIVER"
ARCH_ENV = "DPTX_STANDIN_ARCH"
FAULT_ENV = "DPTX_STANDIN_FAULT_KERNELS"
RUNTIME_ENV = "DPTX_STANDIN_RUNTIME"

RUNTIME_VERSION = 13000          # default CUDA runtime of this "CuPy" (cupy-cuda13x)
DEFAULT_SHARED = 48 * 1024       # dynamic + static shared memory a launch gets without opt-in
POINTER_BASE = 0x7F00_0000_0000  # fake device addresses: far from any size a kernel takes
DEVICE_SPAN = 1 << 40            # address space of one device
ALIGN = 256                      # cudaMalloc's alignment

# sharedMemPerBlockOptin of each architecture (bytes), as the CUDA programming guide lists
OPTIN_SHARED = {"sm_75": 65536, "sm_80": 166912, "sm_86": 101376, "sm_87": 166912,
                "sm_89": 101376, "sm_90": 232448, "sm_100": 232448, "sm_120": 101376}

# (driver API name, runtime API name, message) of the CUDA errors the stand-in reports
ERRORS = {
    1: ("CUDA_ERROR_INVALID_VALUE", "cudaErrorInvalidValue", "invalid argument"),
    2: ("CUDA_ERROR_OUT_OF_MEMORY", "cudaErrorMemoryAllocation", "out of memory"),
    35: ("CUDA_ERROR_UNKNOWN", "cudaErrorInsufficientDriver",
         "CUDA driver version is insufficient for CUDA runtime version"),
    100: ("CUDA_ERROR_NO_DEVICE", "cudaErrorNoDevice", "no CUDA-capable device is detected"),
    101: ("CUDA_ERROR_INVALID_DEVICE", "cudaErrorInvalidDevice", "invalid device ordinal"),
    200: ("CUDA_ERROR_INVALID_IMAGE", "cudaErrorInvalidKernelImage",
          "device kernel image is invalid"),
    209: ("CUDA_ERROR_NO_BINARY_FOR_GPU", "cudaErrorNoKernelImageForDevice",
          "no kernel image is available for execution on the device"),
    218: ("CUDA_ERROR_INVALID_PTX", "cudaErrorInvalidPtx", "a PTX JIT compilation failed"),
    222: ("CUDA_ERROR_UNSUPPORTED_PTX_VERSION", "cudaErrorUnsupportedPtxVersion",
          "the provided PTX was compiled with an unsupported toolchain."),
    400: ("CUDA_ERROR_INVALID_HANDLE", "cudaErrorInvalidResourceHandle",
          "invalid resource handle"),
    500: ("CUDA_ERROR_NOT_FOUND", "cudaErrorSymbolNotFound", "named symbol not found"),
    700: ("CUDA_ERROR_ILLEGAL_ADDRESS", "cudaErrorIllegalAddress",
          "an illegal memory access was encountered"),
    702: ("CUDA_ERROR_LAUNCH_TIMEOUT", "cudaErrorLaunchTimeout",
          "the launch timed out and was terminated"),
    710: ("CUDA_ERROR_ASSERT", "cudaErrorAssert", "device-side assert triggered"),
    719: ("CUDA_ERROR_LAUNCH_FAILED", "cudaErrorLaunchFailure", "unspecified launch failure"),
}
# Errors that corrupt the context: every later call on the device returns them, until the
# process ends (CUDA: "To continue using CUDA, the process must be terminated and relaunched").
STICKY = {700, 702, 710, 719}

# PTX parameter type -> numpy type of its bytes
_SCALARS = {"u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
            "s8": np.int8, "s16": np.int16, "s32": np.int32, "s64": np.int64,
            "b8": np.uint8, "b16": np.uint16, "b32": np.uint32, "b64": np.uint64,
            "f16": np.float16, "f32": np.float32, "f64": np.float64, "pred": np.uint8}


def api(error_class):
    """A decorator for the stand-in's CUDA calls: the machine's CudaStatus becomes
    ``error_class`` (CUDADriverError, CUDARuntimeError), as CuPy's check_status raises."""
    def decorate(fn):
        @functools.wraps(fn)
        def call(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except CudaStatus as exc:
                raise error_class(exc.status, exc.log) from None
        return call
    return decorate


class CudaStatus(Exception):
    """A failed CUDA call inside the machine; ``runtime``/``driver`` turn it into their own
    error class (``CUDARuntimeError``/``CUDADriverError``). ``log`` is the JIT's log."""

    def __init__(self, status: int, log: str = ""):
        super().__init__(status, log)
        self.status = status
        self.log = log


@dataclass
class Allocation:
    ptr: int
    data: np.ndarray            # uint8, the bytes
    what: str                   # "cudaMalloc", "module variable g of module 0x..."

    @property
    def end(self) -> int:
        return self.ptr + self.data.size


@dataclass
class LoadedModule:
    handle: int
    ptx: str
    ir: object                  # dptx.ptx.ir.Module
    variables: dict             # name -> Allocation
    functions: dict             # name -> handle
    ptxas: str                  # "ptxas 13.5 -arch=sm_90"


@dataclass
class LoadedFunction:
    handle: int
    module: LoadedModule
    name: str
    static_shared: int          # bytes, as ptxas compiled it
    registers: int
    max_dynamic_shared: int     # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    kernel: object = None       # what dptx.cpu.launch takes, made on first launch


@dataclass
class Context:
    """A device's primary context."""
    device: int
    sticky: int = 0             # the status of an error that corrupted it
    fault: str = ""             # what the executor said about that fault
    starts: list = field(default_factory=list)   # sorted allocation pointers
    allocations: dict = field(default_factory=dict)
    modules: dict = field(default_factory=dict)
    functions: dict = field(default_factory=dict)
    streams: dict = field(default_factory=dict)  # handle -> flags
    next_ptr: int = 0


@dataclass
class DeviceSpec:
    name: str
    arch: str

    @property
    def major_minor(self) -> tuple:
        digits = re.sub(r"\D", "", self.arch)
        return int(digits[:-1]), int(digits[-1])

    @property
    def optin_shared(self) -> int:
        return OPTIN_SHARED.get(re.sub(r"[a-z]$", "", self.arch), 101376)


class Process:
    """The CUDA state of one (fake) OS process."""

    def __init__(self):
        self.lock = threading.RLock()
        count = int(os.environ.get(DEVICES_ENV, "1"))
        arch = os.environ.get(ARCH_ENV, "sm_90")
        self.driver_version = int(os.environ.get(DRIVER_ENV, "13000"))
        self.runtime_version = int(os.environ.get(RUNTIME_ENV, str(RUNTIME_VERSION)))
        self.devices = [DeviceSpec(f"DPTX CuPy stand-in {arch} #{i}", arch) for i in range(count)]
        self.fault_kernels = {k for k in os.environ.get(FAULT_ENV, "").split(",") if k}
        self.contexts = {}
        self.local = threading.local()              # current device, per host thread
        self.handles = itertools.count(0x1000, 0x10)
        self.pinned = {}                            # host pointer -> numpy buffer
        # What tests look at (``testing``): one dict per event
        self.launches = []
        self.copies = []
        self.calls = []                             # ("funcSetAttribute", ...), ("deviceSynchronize", dev)

    # -- devices and contexts ------------------------------------------------------------------
    def check_driver(self) -> None:
        # CUDA's minor version compatibility: any driver of the runtime's major version
        if self.driver_version // 1000 < self.runtime_version // 1000:
            raise CudaStatus(35)    # cudaErrorInsufficientDriver, as cupy-cuda13x on a 12.x driver

    def device_count(self) -> int:
        self.check_driver()
        return len(self.devices)

    def current(self) -> int:
        return getattr(self.local, "device", 0)

    def set_current(self, device: int) -> None:
        self.check_device(device)
        self.local.device = device

    def check_device(self, device: int) -> None:
        self.check_driver()
        if not 0 <= device < len(self.devices):
            raise CudaStatus(101)

    def context(self, device: int = None, *, healthy: bool = True) -> Context:
        """The device's context (the current device's by default); raises its sticky error
        unless ``healthy`` is False."""
        device = self.current() if device is None else device
        self.check_device(device)
        with self.lock:
            ctx = self.contexts.get(device)
            if ctx is None:
                ctx = self.contexts[device] = Context(device, next_ptr=POINTER_BASE + device * DEVICE_SPAN)
        if healthy and ctx.sticky:
            raise CudaStatus(ctx.sticky)
        return ctx

    # -- device memory ---------------------------------------------------------------------------
    def malloc(self, size: int, what: str = "cudaMalloc", data: np.ndarray = None) -> int:
        ctx = self.context()
        with self.lock:
            ptr = ctx.next_ptr
            # addresses are never reused: a stale pointer is found out, not silently aliased
            ctx.next_ptr += max(ALIGN, -(-size // ALIGN) * ALIGN)
            buf = np.zeros(size, np.uint8) if data is None else data
            ctx.allocations[ptr] = Allocation(ptr, buf, what)
            bisect.insort(ctx.starts, ptr)
        return ptr

    def free(self, ptr: int) -> None:
        ctx = self.context()
        with self.lock:
            if ptr == 0:
                return
            if ptr not in ctx.allocations or ctx.allocations[ptr].what != "cudaMalloc":
                raise CudaStatus(1)
            del ctx.allocations[ptr]
            ctx.starts.remove(ptr)

    def find(self, ctx: Context, ptr: int, size: int = 1):
        """The allocation of ``ctx`` holding bytes [ptr, ptr + size), or None."""
        with self.lock:
            i = bisect.bisect_right(ctx.starts, ptr) - 1
            if i < 0:
                return None
            alloc = ctx.allocations[ctx.starts[i]]
        return alloc if ptr + size <= alloc.end else None

    def device_of(self, ptr: int):
        """(device, allocation) of a device pointer, or None (unified addressing)."""
        for device, ctx in list(self.contexts.items()):
            alloc = self.find(ctx, ptr)
            if alloc is not None:
                return device, alloc
        return None

    def memcpy(self, dst: int, src: int, size: int, kind: int, stream: int = None) -> None:
        """cudaMemcpy(Async): kinds 1 host->device, 2 device->host, 3 device->device, 4 either
        (the direction from the addresses, as with unified addressing)."""
        self.context()          # a corrupted context refuses copies
        if size == 0:
            return
        if kind == 4:
            kind = {(False, True): 1, (True, False): 2, (True, True): 3}.get(
                (self.device_of(src) is not None, self.device_of(dst) is not None), 0)
        if kind not in (1, 2, 3):
            raise CudaStatus(1)
        d_alloc = self._device_range(dst, size) if kind in (1, 3) else None
        s_alloc = self._device_range(src, size) if kind in (2, 3) else None
        host = src if kind == 1 else dst if kind == 2 else None
        d_addr = d_alloc.data.ctypes.data + dst - d_alloc.ptr if d_alloc else dst
        s_addr = s_alloc.data.ctypes.data + src - s_alloc.ptr if s_alloc else src
        ctypes.memmove(d_addr, s_addr, size)
        self.copies.append(dict(kind={1: "HtoD", 2: "DtoH", 3: "DtoD"}[kind], dst=dst, src=src,
                                size=size, stream=stream, device=self.current(),
                                pinned=None if host is None else self.is_pinned(host, size)))

    def _device_range(self, ptr: int, size: int) -> Allocation:
        found = self.device_of(ptr)
        if found is None or ptr + size > found[1].end:
            raise CudaStatus(1)     # cudaErrorInvalidValue: not inside one allocation
        return found[1]

    def memset(self, ptr: int, value: int, size: int) -> None:
        self.context()
        if size:
            alloc = self._device_range(ptr, size)
            alloc.data[ptr - alloc.ptr:ptr - alloc.ptr + size] = value & 0xFF

    # -- pinned host memory ----------------------------------------------------------------------
    def host_alloc(self, size: int) -> int:
        self.context()
        buf = np.zeros(max(size, 1), np.uint8)
        ptr = buf.ctypes.data
        with self.lock:
            self.pinned[ptr] = buf
        return ptr

    def free_host(self, ptr: int) -> None:
        self.context()
        with self.lock:
            if self.pinned.pop(ptr, None) is None:
                raise CudaStatus(1)

    def is_pinned(self, ptr: int, size: int) -> bool:
        with self.lock:
            return any(p <= ptr and ptr + size <= p + b.size for p, b in self.pinned.items())

    # -- streams -----------------------------------------------------------------------------------
    def stream_create(self, flags: int) -> int:
        ctx = self.context()
        handle = next(self.handles)
        ctx.streams[handle] = flags
        return handle

    def stream_context(self, handle: int) -> Context:
        """The context a stream belongs to (0: the current device's legacy stream)."""
        if handle in (0, 1, 2):     # legacy and per-thread default streams
            return self.context()
        for ctx in self.contexts.values():
            if handle in ctx.streams:
                if ctx.sticky:
                    raise CudaStatus(ctx.sticky)
                return ctx
        raise CudaStatus(400)

    def stream_destroy(self, handle: int) -> None:
        ctx = self.stream_context(handle)
        ctx.streams.pop(handle, None)

    # -- modules and launches ----------------------------------------------------------------------
    def load_module(self, image: bytes) -> int:
        from . import _jit
        ctx = self.context()
        module = _jit.load(self, ctx, image)
        ctx.modules[module.handle] = module
        return module.handle

    def module(self, handle: int) -> LoadedModule:
        ctx = self.context()
        module = ctx.modules.get(handle)
        if module is None:
            raise CudaStatus(400)
        return module

    def unload_module(self, handle: int) -> None:
        ctx = self.context()
        module = ctx.modules.pop(handle, None)
        if module is None:
            raise CudaStatus(400)
        with self.lock:
            for alloc in module.variables.values():
                ctx.allocations.pop(alloc.ptr, None)
                ctx.starts.remove(alloc.ptr)
        for f in module.functions.values():
            ctx.functions.pop(f, None)

    def function(self, handle: int) -> LoadedFunction:
        ctx = self.context()
        f = ctx.functions.get(handle)
        if f is None:
            raise CudaStatus(400)
        return f

    def launch(self, handle: int, grid: tuple, block: tuple, shared: int, stream: int,
               params: int) -> None:
        from . import _jit
        f = self.function(handle)
        ctx = self.stream_context(stream) if stream not in (0, 1, 2) else self.context()
        if ctx is not self.context():
            raise CudaStatus(400)   # a stream of another device
        _jit.launch(self, ctx, f, grid, block, shared, stream, params)

    def poison(self, ctx: Context, status: int, detail: str) -> None:
        ctx.sticky = status
        ctx.fault = detail
