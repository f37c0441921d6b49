"""Run blocks [first, end) of a launch on a CUDA GPU through CuPy (>= 13), with the argument
conventions of ``dptx.cpu.launch``: numpy arrays are device buffers (copied in, run, and the
bytes the launch may write copied back in place), scalars are converted to the PTX parameter
types as on the CPU (``launch_config.convert_scalar``: a Python float for a ``.f32`` is a
float32), structs are bytes or numpy structured scalars, ``globals`` maps module variable names
to numpy uint8 buffers holding their contents (copied in before, back after).

The range runs as a 1-D sub-grid of the block-offset rewrite of the kernel; what the device
loads is ``loadable_for`` (``dptx.gpu.loadable.ptx_for_device``: PTX at a ``.version`` the
worker's driver accepts).

CuPy comes from ``cupy_module()``: the module that ``DPTX_CUPY_MODULE`` names (default
``cupy``; the tests name a CuPy stand-in that runs kernels on the CPU).

Devices and lanes: a process runs one chunk per CUDA device at a time. ``launch(...,
device=None)`` (and ``lane()``, which a worker's chunk task holds around its steps) takes the
free usable device that has waited longest (round robin under a lock), waiting when all are busy;
a Dask worker declares ``GPU`` = its number of devices, so it never has more GPU chunks running
than devices. Each device has its own non-blocking stream (no device-wide synchronize: a
chunk waits for its own stream only), pinned host staging buffer and loaded modules.

Copies: host arrays are staged through pinned memory; the same host buffer passed twice (or
overlapping views of one) is one device allocation, so writes through either alias are seen
by the other, as on the CPU. ``writes`` limits what comes back: ``{argument index or variable
name: (lo, hi)}`` byte ranges; buffers it does not list are not copied back (None: all).

Faults: an error that corrupts a CUDA context (an illegal address, a device assert...) raises
``GpuFault`` naming the kernel, the block range, the device and the CUDA error. CUDA requires
the process to restart before that device works again, so dptx stops using the device in this
process and tells the ``on_device_lost`` listeners (a worker restarts itself, see
``dptx.worker``); the other devices of the process go on.
"""
from __future__ import annotations

import collections
import contextlib
import ctypes
import hashlib
import importlib
import logging
import os
import threading
from dataclasses import dataclass, field

import numpy as np

from ..device.launch_config import check_arg_count, check_shape, convert_scalar
from ..device.pointer import Pointer, StructValue
from ..device.window import Window
from ..errors import DptxError, ExecutorRefusedError, LaunchError
from ..ptx.rewrite import sub_grid_arguments
from .loadable import ptx_for_device

logger = logging.getLogger("dptx.gpu")

CUPY_MODULE_ENV = "DPTX_CUPY_MODULE"
DEFAULT_SHARED = 48 * 1024      # static + dynamic shared memory a launch gets without opt-in
STAGING_ALIGN = 256
# CUDA errors that leave the context unusable ("sticky"): illegal address, launch timeout,
# assert, hardware stack error, illegal instruction, misaligned address, invalid address
# space, invalid PC, launch failure, cooperative launch too large.
STICKY_ERRORS = {700, 702, 710, 714, 715, 716, 717, 718, 719, 720}
CUDA_ERROR_INSUFFICIENT_DRIVER = 35
CUDA_ERROR_NO_DEVICE = 100
CUDA_ERROR_NOT_FOUND = 500


class GpuUnavailable(DptxError):
    """This process cannot use a GPU through CuPy; the message says why."""


class GpuModuleError(ExecutorRefusedError):
    """A device cannot load a kernel (its driver or architecture cannot take the PTX)."""


class GpuFault(DptxError):
    """A kernel faulted on a GPU; the device is unusable in this process from then on."""


def cupy_module():
    """The CuPy module dptx uses: ``cupy``, or the module ``DPTX_CUPY_MODULE`` names."""
    return importlib.import_module(os.environ.get(CUPY_MODULE_ENV) or "cupy")


def _version_text(version: int) -> str:
    return f"{version // 1000}.{version % 1000 // 10}"


@dataclass(frozen=True)
class DeviceInfo:
    index: int
    name: str
    arch: str                   # "sm_90"
    driver_version: int         # cuDriverGetVersion, e.g. 12040
    optin_shared: int           # sharedMemPerBlockOptin (bytes)


def _cuda_errors(cp) -> tuple:
    return (cp.cuda.runtime.CUDARuntimeError, cp.cuda.driver.CUDADriverError)


def _driver_problem(cp, exc) -> str:
    """Why CUDA cannot start, from the status of its first call."""
    rt = cp.cuda.runtime
    status = getattr(exc, "status", None)
    if status == CUDA_ERROR_INSUFFICIENT_DRIVER:
        try:
            driver = _version_text(rt.driverGetVersion())
        except _cuda_errors(cp):
            driver = "unknown"
        runtime = _version_text(rt.runtimeGetVersion())
        return (f"the CUDA driver ({driver}) is older than the CUDA runtime CuPy was built for "
                f"({runtime}): {exc}. Install a newer NVIDIA driver, or the CuPy wheel for the "
                f"driver's CUDA major version")
    if status == CUDA_ERROR_NO_DEVICE:
        return f"CuPy sees no CUDA device: {exc}"
    return f"CUDA cannot start: {exc}"


def probe() -> list:
    """The CUDA devices this process can use, as DeviceInfo; raises GpuUnavailable saying why
    there are none (CuPy cannot be imported, the driver is too old, no device)."""
    name = os.environ.get(CUPY_MODULE_ENV) or "cupy"
    try:
        cp = cupy_module()
    except ImportError as exc:
        raise GpuUnavailable(f"CuPy ({name}) cannot be imported: {exc}") from exc
    except OSError as exc:      # a CUDA library that cannot be loaded
        raise GpuUnavailable(f"CuPy ({name}) cannot load a CUDA library: {exc}") from exc
    rt = cp.cuda.runtime
    try:
        count = rt.getDeviceCount()
        driver = rt.driverGetVersion()
        infos = []
        for i in range(count):
            props = rt.getDeviceProperties(i)
            raw = props["name"]
            infos.append(DeviceInfo(i, raw.decode() if isinstance(raw, bytes) else str(raw),
                                    f"sm_{props['major']}{props['minor']}", driver,
                                    int(props.get("sharedMemPerBlockOptin", DEFAULT_SHARED))))
    except _cuda_errors(cp) as exc:
        raise GpuUnavailable(_driver_problem(cp, exc)) from exc
    if not infos:
        raise GpuUnavailable("CuPy sees no CUDA device")
    return infos


def loadable_for(kernel, device: DeviceInfo) -> bytes:
    """The image a device loads for ``kernel``'s chunks (what ``Module.load`` gets)."""
    return ptx_for_device(kernel, driver_version=device.driver_version, arch=device.arch).encode()


# -- per-process state: devices, lanes, listeners ----------------------------------------------------
@dataclass
class _Loaded:
    module: object              # cupy.cuda.function.Module
    function: object            # cupy.cuda.function.Function
    static_shared: int          # CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES
    dynamic_allowed: int        # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES as set


@dataclass
class _Lane:
    """One device and what a chunk on it uses: its stream, staging buffer and modules. Only
    the thread holding the lane touches them."""
    cp: object
    info: DeviceInfo
    stream: object = None
    staging: object = None      # PinnedMemoryPointer
    staging_view: np.ndarray = None
    modules: dict = field(default_factory=dict)

    @property
    def device(self) -> int:
        return self.info.index


class _Process:
    """The devices of this process for one CuPy module, and which are busy or lost."""

    def __init__(self, cp, infos: list):
        self.cp = cp
        self.lanes = {i.index: _Lane(cp, i) for i in infos}
        self.order = collections.deque(sorted(self.lanes))   # free devices, longest idle first
        self.busy = set()
        self.lost = {}          # device -> why
        self.cond = threading.Condition()

    def acquire(self, device=None):
        """A lane to hold: ``device``'s (waiting while another chunk holds it), or the free
        usable one idle longest; None when no device is usable any more."""
        with self.cond:
            while True:
                if device is not None:
                    if device not in self.lanes:
                        raise LaunchError(f"device={device}: this process has CUDA devices "
                                          f"{sorted(self.lanes)}")
                    if device in self.lost:
                        raise GpuFault(f"CUDA device {device} of this process is unusable: "
                                       f"{self.lost[device]}")
                    if device not in self.busy:
                        self.busy.add(device)
                        return self.lanes[device]
                else:
                    if len(self.lost) == len(self.lanes):
                        return None
                    free = [d for d in self.order if d not in self.busy and d not in self.lost]
                    if free:
                        self.order.remove(free[0])
                        self.order.append(free[0])
                        self.busy.add(free[0])
                        return self.lanes[free[0]]
                self.cond.wait()

    def release(self, lane: _Lane) -> None:
        with self.cond:
            self.busy.discard(lane.device)
            self.cond.notify_all()

    def lose(self, device: int, why: str) -> None:
        with self.cond:
            self.lost[device] = why
            self.cond.notify_all()


_lock = threading.Lock()
_processes: dict = {}           # CuPy module name -> _Process
_listeners: list = []
_held = threading.local()       # lanes this thread holds: device -> _Lane


def _process() -> _Process:
    name = os.environ.get(CUPY_MODULE_ENV) or "cupy"
    with _lock:
        proc = _processes.get(name)
    if proc is None:
        infos = probe()
        with _lock:
            proc = _processes.setdefault(name, _Process(cupy_module(), infos))
    return proc


def devices() -> list:
    """The usable CUDA devices of this process (DeviceInfo); raises GpuUnavailable."""
    proc = _process()
    return [lane.info for d, lane in sorted(proc.lanes.items()) if d not in proc.lost]


def available() -> bool:
    """Whether CuPy is installed and a usable CUDA device is there."""
    try:
        return bool(devices())
    except GpuUnavailable:
        return False


def on_device_lost(callback) -> None:
    """Call ``callback(device, message)`` when a fault makes a device unusable."""
    _listeners.append(callback)


def reset_process_state() -> None:
    """Forget devices, lanes and lost devices, as a fresh process starts (tests that stand
    in for a worker restart call it)."""
    with _lock:
        _processes.clear()


@contextlib.contextmanager
def lane(device: int = None):
    """Hold a device for a chunk: yields its index, or None when this process has no usable
    GPU (every device lost, or none at all). ``launch`` calls of this thread use it."""
    try:
        proc = _process()
    except GpuUnavailable:
        yield None
        return
    held = getattr(_held, "lanes", None)
    if held is None:
        held = _held.lanes = {}
    if device is not None and device in held:
        yield device
        return
    taken = proc.acquire(device)
    if taken is None:
        yield None
        return
    held[taken.device] = taken
    try:
        yield taken.device
    finally:
        del held[taken.device]
        proc.release(taken)


# -- a launch's host side ----------------------------------------------------------------------------
@dataclass
class _Group:
    """Host arrays whose bytes overlap (the same buffer passed twice, views of one): one
    device allocation over ``host``, the union of their bytes."""
    host: np.ndarray            # uint8 view of the union
    members: list               # (argument index, byte offset in the union)
    back: list = field(default_factory=list)    # (lo, hi) union ranges to copy back
    staged: int = 0             # offset in the staging buffer


@dataclass
class _Plan:
    groups: list
    params: list                # per parameter: ("buffer", group, offset) / ("value", array) /
                                # ("struct", bytes, ((byte, group, offset), ...))
    variables: list             # (name, host uint8 array, (lo, hi) to copy back or None, staged)
    staging_bytes: int


def _host_bytes(a: np.ndarray, what: str) -> np.ndarray:
    if not a.flags.c_contiguous:
        raise LaunchError(f"{what}: arrays must be C-contiguous (np.ascontiguousarray)")
    return a.reshape(-1).view(np.uint8)


def _union_view(lo: int, hi: int) -> np.ndarray:
    """uint8 view of host bytes [lo, hi): memory that arrays of the launch hold alive."""
    return np.ctypeslib.as_array((ctypes.c_uint8 * (hi - lo)).from_address(lo))


def _group(arrays: dict) -> list:
    """Groups of the array arguments whose host bytes overlap."""
    # empty arrays hold no bytes: each is a group of its own (a null device pointer)
    groups = [[b.ctypes.data, b.ctypes.data, [(i, b.ctypes.data, b)]]
              for i, b in arrays.items() if b.size == 0]
    # (keys are argument indices, or (index, byte) for a pointer inside a struct: sorted by
    # the span alone, as the two kinds do not compare)
    spans = sorted(((b.ctypes.data, b.ctypes.data + b.size, i) for i, b in arrays.items()
                    if b.size), key=lambda span: span[:2])
    current = None
    for lo, hi, i in spans:
        if current is not None and lo < current[1]:
            current[1] = max(current[1], hi)
            current[2].append((i, lo, arrays[i]))
            continue
        current = [lo, hi, [(i, lo, arrays[i])]]
        groups.append(current)
    out = []
    for lo, hi, members in groups:
        host = members[0][2] if len(members) == 1 else _union_view(lo, hi)
        out.append(_Group(host, [(i, start - lo) for i, start, _ in members]))
    return out


def _ranges(writes, key, nbytes: int, what: str):
    """The byte range of a buffer to copy back: all without ``writes``, none when it is not
    listed, else the given one (checked)."""
    if writes is None:
        return (0, nbytes)
    if key not in writes or writes[key] is None:
        return None
    lo, hi = (int(v) for v in writes[key])
    if not 0 <= lo <= hi <= nbytes:
        raise LaunchError(f"writes[{key!r}] = {writes[key]!r} is not inside the {nbytes} bytes "
                          f"of {what}")
    return (lo, hi) if hi > lo else None


def _merged(ranges: list) -> list:
    out = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out


def _value(param, index: int, value, kernel_name: str) -> np.ndarray:
    """A scalar argument as a size-1 numpy array of the parameter's bytes: CuPy passes such
    arrays by value on every version (a numpy.void struct raises TypeError on CuPy 13)."""
    converted = convert_scalar(param, index, value, kernel_name)
    if isinstance(converted, bytes):
        return np.frombuffer(converted, dtype=np.dtype((np.void, len(converted)))).copy()
    return np.array([converted])


def _plan(kernel, args, globals, writes) -> _Plan:
    # the device buffers: one per array argument (key: its index) and per pointer inside a
    # struct argument (key: (index, byte in the struct))
    arrays, where, shifts = {}, {}, {}

    def add(key, a, what):
        if isinstance(a, Pointer):      # a view: its whole buffer goes, the pointer is offset
            shifts[key] = a.offset
            a = a.base
        if isinstance(a, Window):
            raise LaunchError(f"{what}: GPU launches take whole numpy arrays, not windows")
        arrays[key] = _host_bytes(a, what)
        where[key] = what

    for i, ((p, _), a) in enumerate(zip(kernel.function.param_layout(), args)):
        what = f"argument {i} ({p.name}) of kernel {kernel.name}"
        if isinstance(a, StructValue):
            if len(a.raw) != p.size:
                raise LaunchError(f"{what}: expected {p.size} bytes, got a {len(a.raw)}-byte "
                                  f"struct")
            for at, target in a.pointers:
                add((i, at), target, f"{what}, the pointer at byte {at}")
        elif isinstance(a, (np.ndarray, Pointer, Window)):
            if p.size != 8:
                raise LaunchError(f"{what} is not a pointer (.{p.type}), got a numpy array")
            add(i, a, what)
    groups = _group(arrays)
    member = {key: (g, off + shifts.get(key, 0)) for g in groups for key, off in g.members}
    params = []
    for i, ((p, _), a) in enumerate(zip(kernel.function.param_layout(), args)):
        if isinstance(a, StructValue):
            params.append(("struct", a.raw, tuple((at, *member[(i, at)]) for at, _ in a.pointers)))
        elif i in member:
            params.append(("buffer", *member[i]))
        else:
            params.append(("value", _value(p, i, a, kernel.name)))
    for g in groups:
        back = []
        for i, off in g.members:
            r = _ranges(writes, i, arrays[i].size, where[i])
            if r is not None:
                back.append((r[0] + off, r[1] + off))
        g.back = _merged(back)
        if g.back and not all(arrays[i].flags.writeable for i, _ in g.members):
            raise LaunchError(f"{where[g.members[0][0]]}: the array is read-only but the "
                              f"launch may write it (pass writes= without it)")
    pos = 0
    for g in groups:
        g.staged = pos
        pos += -(-g.host.size // STAGING_ALIGN) * STAGING_ALIGN
    variables = []
    for name, buf in (globals or {}).items():
        host = _host_bytes(np.asarray(buf), f"module variable {name}")
        variables.append((name, host, _ranges(writes, name, host.size, f"module variable {name}"),
                          pos))
        pos += -(-host.size // STAGING_ALIGN) * STAGING_ALIGN
    return _Plan(groups, params, variables, pos)


# -- a launch's device side ----------------------------------------------------------------------------
def _staging(lane: _Lane, nbytes: int) -> tuple:
    """(pinned pointer, uint8 view) of at least ``nbytes`` of the lane's staging buffer."""
    have = 0 if lane.staging_view is None else lane.staging_view.size
    if nbytes > have:
        size = max(nbytes, 2 * have, 1 << 20)
        size = -(-size // (1 << 20)) * (1 << 20)
        lane.staging = lane.cp.cuda.alloc_pinned_memory(size)
        lane.staging_view = np.ctypeslib.as_array((ctypes.c_uint8 * size).from_address(
            int(lane.staging.ptr)))
    return int(lane.staging.ptr), lane.staging_view


def _loaded(lane: _Lane, kernel) -> _Loaded:
    """The kernel's module and function on the lane's device, loaded once per process."""
    key = (hashlib.sha256(kernel.ptx.encode()).hexdigest(), kernel.name)
    found = lane.modules.get(key)
    if found is not None:
        return found
    cp, info = lane.cp, lane.info
    where = (f"CUDA device {info.index} ({info.name}, {info.arch}, driver "
             f"{_version_text(info.driver_version)})")
    try:
        image = loadable_for(kernel, info)
    except DptxError as exc:
        raise GpuModuleError(f"{where} cannot run kernel {kernel.name}: {exc}") from exc
    module = cp.cuda.function.Module()
    try:
        module.load(image)
    except cp.cuda.driver.CUDADriverError as exc:
        if getattr(exc, "status", None) in STICKY_ERRORS:
            raise
        raise GpuModuleError(f"{where} cannot load kernel {kernel.name}: {exc}") from exc
    function = module.get_function(kernel.name)
    driver = cp.cuda.driver
    static = driver.funcGetAttribute(driver.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, function.ptr)
    found = lane.modules[key] = _Loaded(module, function, static, DEFAULT_SHARED - static)
    return found


def _allow_shared(lane: _Lane, loaded: _Loaded, kernel, dynamic: int) -> None:
    """Static + dynamic shared memory over 48 KiB must be opted into per function, with the
    dynamic part as the function's MAX_DYNAMIC_SHARED_SIZE_BYTES attribute."""
    if dynamic <= loaded.dynamic_allowed:
        return
    total = loaded.static_shared + dynamic
    if total > lane.info.optin_shared:
        raise LaunchError(
            f"kernel {kernel.name} needs {loaded.static_shared} bytes of static and {dynamic} of "
            f"dynamic shared memory per block; CUDA device {lane.device} ({lane.info.name}) "
            f"allows {lane.info.optin_shared}")
    driver = lane.cp.cuda.driver
    driver.funcSetAttribute(loaded.function.ptr,
                            driver.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, dynamic)
    loaded.dynamic_allowed = dynamic


def _variable_memory(lane: _Lane, loaded: _Loaded, kernel, name: str, size: int):
    """A MemoryPointer over module variable ``name``: ``get_global_var`` gives its device
    address as an int; CuPy wraps memory it does not own as UnownedMemory."""
    cp = lane.cp
    try:
        ptr = loaded.module.get_global_var(name)
    except cp.cuda.driver.CUDADriverError as exc:
        if getattr(exc, "status", None) != CUDA_ERROR_NOT_FOUND:
            raise
        raise LaunchError(f"kernel {kernel.name}: module variable {name!r} is not in the "
                          f"module loaded on CUDA device {lane.device}: {exc}") from exc
    return cp.cuda.MemoryPointer(cp.cuda.UnownedMemory(ptr, size, loaded.module, lane.device), 0)


def _copy_in(lane: _Lane, loaded: _Loaded, kernel, plan: _Plan, base: int,
             staging: np.ndarray) -> tuple:
    """Device memory for each group and variable, filled through the staging buffer on the
    lane's stream: (group buffers, variable buffers)."""
    cp, stream = lane.cp, lane.stream
    buffers = []
    for grp in plan.groups:
        mem = cp.cuda.alloc(grp.host.size)
        staging[grp.staged:grp.staged + grp.host.size] = grp.host
        mem.copy_from_host_async(base + grp.staged, grp.host.size, stream)
        buffers.append(mem)
    variables = []
    for name, host, _, at in plan.variables:
        mem = _variable_memory(lane, loaded, kernel, name, host.size)
        staging[at:at + host.size] = host
        mem.copy_from_host_async(base + at, host.size, stream)
        variables.append(mem)
    return buffers, variables


def _copy_back(lane: _Lane, plan: _Plan, buffers: list, variables: list, base: int) -> None:
    """Queue the copies of the written ranges into the staging buffer."""
    for grp, mem in zip(plan.groups, buffers):
        for lo, hi in grp.back:
            (mem + lo).copy_to_host_async(base + grp.staged + lo, hi - lo, lane.stream)
    for (name, host, back, at), mem in zip(plan.variables, variables):
        if back is not None:
            (mem + back[0]).copy_to_host_async(base + at + back[0], back[1] - back[0],
                                               lane.stream)


def _unstage(plan: _Plan, staging: np.ndarray) -> None:
    """The written ranges from the staging buffer into the host arrays."""
    for grp in plan.groups:
        for lo, hi in grp.back:
            grp.host[lo:hi] = staging[grp.staged + lo:grp.staged + hi]
    for name, host, back, at in plan.variables:
        if back is not None:
            host[back[0]:back[1]] = staging[at + back[0]:at + back[1]]


def _argument(param: tuple, buffers: list, index: dict):
    """A planned parameter as CuPy takes it: a device pointer into its group's buffer, the
    bytes of a struct with the device addresses of its pointers written in, or a value."""
    kind = param[0]
    if kind == "buffer":
        return buffers[index[id(param[1])]] + param[2]
    if kind == "struct":
        raw = bytearray(param[1])
        for at, group, offset in param[2]:
            raw[at:at + 8] = int((buffers[index[id(group)]] + offset).ptr).to_bytes(8, "little")
        return np.frombuffer(bytes(raw), dtype=np.dtype((np.void, len(raw)))).copy()
    return param[1]


def _run(lane: _Lane, kernel, g: tuple, b: tuple, rng: range, plan: _Plan, shared_mem: int):
    """Stage, copy in, launch, copy back the written ranges, wait for the lane's stream (not
    the whole device: other streams' work is none of this chunk's business)."""
    if lane.stream is None:
        lane.stream = lane.cp.cuda.Stream(non_blocking=True)
    loaded = _loaded(lane, kernel)
    _allow_shared(lane, loaded, kernel, shared_mem)
    base, staging = _staging(lane, plan.staging_bytes)
    buffers, variables = _copy_in(lane, loaded, kernel, plan, base, staging)
    index = {id(grp): k for k, grp in enumerate(plan.groups)}
    args = [_argument(p, buffers, index) for p in plan.params]
    sub_grid, extra = sub_grid_arguments(g, rng.start, rng.stop)
    args += [np.array([v], dtype=np.uint32) for v in extra]
    loaded.function(sub_grid, b, tuple(args), shared_mem=int(shared_mem), stream=lane.stream)
    _copy_back(lane, plan, buffers, variables, base)
    lane.stream.synchronize()
    _unstage(plan, staging)


def _failure(lane: _Lane, kernel, g: tuple, rng: range, exc) -> DptxError:
    """A CUDA error of a launch as a DptxError; a sticky one loses the device."""
    status = getattr(exc, "status", None)
    where = (f"kernel {kernel.name}, blocks [{rng.start}, {rng.stop}) of the grid {g} (run as a "
             f"sub-grid of {len(rng)} blocks on CUDA device {lane.device}, {lane.info.name})")
    if status not in STICKY_ERRORS:
        try:    # let copies already queued finish before their buffers go back to the pool
            lane.stream.synchronize()
        except _cuda_errors(lane.cp):
            pass
        return DptxError(f"CUDA error in {where}: {exc}")
    why = f"{exc} in {where}"
    _process().lose(lane.device, why)
    message = (f"GPU fault in {where}: {exc}. CUDA leaves device {lane.device} unusable in "
               f"this process until it restarts; dptx stops using it (a worker restarts).")
    for callback in list(_listeners):
        try:
            callback(lane.device, message)
        except Exception:   # a listener's bug must not hide the fault
            logger.exception("dptx.gpu: on_device_lost listener failed")
    return GpuFault(message)


def _block_range(blocks, g: tuple) -> range:
    nblocks = g[0] * g[1] * g[2]
    rng = range(nblocks) if blocks is None else blocks
    if not isinstance(rng, range) or rng.step != 1 or not 0 <= rng.start <= rng.stop <= nblocks:
        raise LaunchError(f"blocks={blocks!r} must be a contiguous range inside the {nblocks} "
                          f"blocks of the grid")
    return rng


def launch(kernel, grid, block, args, shared_mem: int = 0, blocks=None, globals=None,
           threads=None, device: int = None, writes: dict = None):
    """Run blocks ``blocks`` (a range, default all) of ``kernel`` on CUDA device ``device``
    (default: a free one, see the module docstring). ``writes``: byte ranges to copy back,
    ``{argument index or module variable name: (lo, hi)}``; None copies back everything.
    ``threads`` is accepted for the CPU executor's signature and ignored."""
    g, b = check_shape(grid, block, shared_mem)
    check_arg_count(kernel, args)
    rng = _block_range(blocks, g)
    if len(rng) == 0:
        return
    plan = _plan(kernel, args, globals, writes)
    proc = _process()
    with lane(device) as d:
        if d is None:
            raise GpuUnavailable("no CUDA device of this process is usable: " + "; ".join(
                f"device {k}: {why}" for k, why in sorted(proc.lost.items())))
        taken = proc.lanes[d]
        cp = taken.cp
        with cp.cuda.Device(d):
            try:
                _run(taken, kernel, g, b, rng, plan, shared_mem)
            except _cuda_errors(cp) as exc:
                raise _failure(taken, kernel, g, rng, exc) from exc
