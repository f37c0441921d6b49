"""CuPy's ``cupy.cuda`` names for dptx's one virtual GPU, so that CuPy code that times,
synchronizes or asks about its device runs against ``dptx`` as it is:
``dptx.cuda.Stream.null.synchronize()``, ``dptx.cuda.Device().synchronize()``,
``dptx.cuda.Event``/``get_elapsed_time``, ``dptx.cuda.runtime.getDeviceCount()``,
``dptx.get_default_memory_pool().used_bytes()``.

The cluster is one device, device 0 (DESIGN.md: a cluster that behaves as one virtual GPU):
``Device(1)`` is CUDA's invalid-device error. Its compute capability is the architecture
dptx compiles CUDA C for (``dptx.runtime.nvrtc``'s ``compute_80``). Memory has no pool to cache
blocks in: an array's device memory is released when the array is (its Dask futures), so
``used_bytes`` and ``total_bytes`` are the bytes of the live arrays and freeing blocks
frees nothing more."""
from __future__ import annotations

import types

from .runtime import cluster as _cluster
from .errors import DptxError
from .runtime.stream import Event, Stream, get_current_stream, get_elapsed_time, synchronize

__all__ = ["Device", "Event", "MemoryPool", "PinnedMemoryPool", "Stream", "get_current_stream",
           "get_device_id", "get_elapsed_time", "runtime", "stream"]

COMPUTE_CAPABILITY = "80"       # dptx.runtime.nvrtc's default architecture, compute_80


def _check_device(device: int) -> int:
    device = int(device)
    if device != 0:
        raise DptxError(f"invalid device ordinal {device} (cudaErrorInvalidDevice): dptx's "
                        f"cluster is one virtual GPU, device 0")
    return device


class Device:
    """``cupy.cuda.Device``: device 0, the cluster. ``with Device(0):`` and ``use()`` change
    nothing (there is no other device); ``synchronize()`` waits for every stream."""

    def __init__(self, device=None):
        self.id = _check_device(0 if device is None else device)

    compute_capability = COMPUTE_CAPABILITY

    def use(self) -> None:
        pass

    def synchronize(self) -> None:
        synchronize()

    def __enter__(self) -> "Device":
        return self

    def __exit__(self, *exc) -> None:
        pass

    def __int__(self) -> int:
        return self.id

    def __eq__(self, other) -> bool:
        return isinstance(other, Device) and other.id == self.id

    def __hash__(self) -> int:
        return hash(("dptx.cuda.Device", self.id))

    def __repr__(self):
        return f"<CUDA Device {self.id} (dptx's cluster)>"


def get_device_id() -> int:
    return 0


def _device_count() -> int:
    return 1


def _set_device(device: int) -> None:
    _check_device(device)


# cupy.cuda.runtime's calls that a program asks its devices with
runtime = types.SimpleNamespace(
    getDeviceCount=_device_count, getDevice=get_device_id, setDevice=_set_device,
    deviceSynchronize=synchronize)
# cupy.cuda.stream (the module): its names
stream = types.SimpleNamespace(Stream=Stream, Event=Event, get_current_stream=get_current_stream,
                               get_elapsed_time=get_elapsed_time)


def _live_bytes() -> int:
    """Bytes of device memory the live dptx arrays hold (a buffer counted once, however
    many views share it)."""
    return sum(b.nbytes for b in list(_cluster._live_buffers) if not b.is_lost())


class MemoryPool:
    """``cupy.get_default_memory_pool()``'s answers for the cluster (see the module doc: no
    blocks are cached, so nothing is free to give back)."""

    def used_bytes(self) -> int:
        return _live_bytes()

    def total_bytes(self) -> int:
        return _live_bytes()

    def free_bytes(self) -> int:
        return 0

    def n_free_blocks(self) -> int:
        return 0

    def free_all_blocks(self, stream=None) -> None:
        pass

    def get_limit(self) -> int:
        return 0            # CuPy's "no limit"

    def set_limit(self, size=None, fraction=None) -> None:
        raise DptxError("dptx has no device memory pool to limit: each worker's memory is "
                        "limited by its Dask memory limit (dask worker --memory-limit)")


class PinnedMemoryPool:
    """``cupy.get_default_pinned_memory_pool()``: dptx pins no host memory for transfers."""

    def n_free_blocks(self) -> int:
        return 0

    def free_all_blocks(self) -> None:
        pass


_memory_pool = MemoryPool()
_pinned_memory_pool = PinnedMemoryPool()


def get_default_memory_pool() -> MemoryPool:
    return _memory_pool


def get_default_pinned_memory_pool() -> PinnedMemoryPool:
    return _pinned_memory_pool
