"""Stand-in for ``cupy.cuda.memory`` (``cupy/cuda/memory.pyx``): Memory (cudaMalloc'd),
UnownedMemory, MemoryPointer with the copy methods, and ``alloc`` from a default pool that
keeps freed blocks (like CuPy's MemoryPool, freeing a block makes no CUDA call). Tests only."""
from __future__ import annotations

import sys
import threading

from .. import _state
from . import device, runtime
from . import stream as stream_module


class OutOfMemoryError(MemoryError):
    def __init__(self, size, total, limit=0):
        super().__init__(f"Out of memory allocating {size:,} bytes (allocated so far: {total:,} bytes).")


class BaseMemory:
    """Memory on a CUDA device: ``ptr``, ``size``, ``device_id``."""
    ptr = 0
    size = 0
    device_id = -1

    def __int__(self):
        return self.ptr

    @property
    def device(self):
        return device.Device(self.device_id)


class Memory(BaseMemory):
    """cudaMalloc'd memory, freed with the object."""

    def __init__(self, size):
        self.size = size
        self.device_id = device.get_device_id()
        self.ptr = runtime.malloc(size) if size > 0 else 0
        self._generation = _state.generation()

    def __del__(self):
        if sys.is_finalizing():
            return
        if self.ptr and self._generation == _state.generation():
            with device.Device(self.device_id):
                runtime.free(self.ptr)


class UnownedMemory(BaseMemory):
    """CUDA memory that is not owned by CuPy (e.g. a module variable)."""

    def __init__(self, ptr, size, owner, device_id=-1):
        if device_id < 0:
            if ptr == 0:
                raise RuntimeError("UnownedMemory requires explicit device ID for a null pointer.")
            found = _state.process().device_of(ptr)
            device_id = found[0] if found else device.get_device_id()
        self.size = size
        self.device_id = device_id
        self.ptr = ptr
        self._owner = owner


def _stream_ptr(stream) -> int:
    return stream_module.get_current_stream_ptr() if stream is None else stream.ptr


def _host(mem) -> int:
    return mem if isinstance(mem, int) else mem.value


class MemoryPointer:
    """A pointer into device memory ``mem`` at ``offset``."""

    def __init__(self, mem, offset):
        assert mem.ptr != 0 or offset == 0
        self.mem = mem
        self.ptr = mem.ptr + offset
        self.device_id = mem.device_id

    def __int__(self):
        return self.ptr

    def __repr__(self):
        return "<{} 0x{:x} device={} mem={!r}>".format(type(self).__name__, self.ptr,
                                                       self.device_id, self.mem)

    @property
    def device(self):
        return device.Device(self.device_id)

    def __add__(self, offset):
        assert self.ptr != 0 or offset == 0
        return MemoryPointer(self.mem, self.ptr - self.mem.ptr + offset)

    __radd__ = __add__

    def __sub__(self, offset):
        return self + -offset

    def copy_from_device(self, src, size):
        if size > 0:
            runtime.memcpy(self.ptr, src.ptr, size, runtime.memcpyDefault)

    def copy_from_device_async(self, src, size, stream=None):
        if size > 0:
            runtime.memcpyAsync(self.ptr, src.ptr, size, runtime.memcpyDefault,
                                _stream_ptr(stream))

    def copy_from_host(self, mem, size):
        if size > 0:
            runtime.memcpy(self.ptr, _host(mem), size, runtime.memcpyHostToDevice)

    def copy_from_host_async(self, mem, size, stream=None):
        if size > 0:
            runtime.memcpyAsync(self.ptr, _host(mem), size, runtime.memcpyHostToDevice,
                                _stream_ptr(stream))

    def copy_from(self, mem, size):
        if isinstance(mem, MemoryPointer):
            self.copy_from_device(mem, size)
        else:
            self.copy_from_host(mem, size)

    def copy_from_async(self, mem, size, stream=None):
        if isinstance(mem, MemoryPointer):
            self.copy_from_device_async(mem, size, stream)
        else:
            self.copy_from_host_async(mem, size, stream)

    def copy_to_host(self, mem, size):
        if size > 0:
            runtime.memcpy(_host(mem), self.ptr, size, runtime.memcpyDeviceToHost)

    def copy_to_host_async(self, mem, size, stream=None):
        if size > 0:
            runtime.memcpyAsync(_host(mem), self.ptr, size, runtime.memcpyDeviceToHost,
                                _stream_ptr(stream))

    def memset(self, value, size):
        if size > 0:
            runtime.memset(self.ptr, value, size)

    def memset_async(self, value, size, stream=None):
        if size > 0:
            runtime.memsetAsync(self.ptr, value, size, _stream_ptr(stream))


def _round_size(size: int) -> int:
    return -(-size // 512) * 512


class PooledMemory(BaseMemory):
    """A block of the pool; it goes back to the pool (no CUDA call) when dropped."""

    def __init__(self, block, pool):
        self.ptr, self.size, self.device_id = block.ptr, block.size, block.device_id
        self._block, self._pool = block, pool

    def __del__(self):
        self._pool._release(self._block)


class SingleDeviceMemoryPool:
    def __init__(self):
        self._free = {}
        self._lock = threading.Lock()
        self._generation = _state.generation()

    def malloc(self, size):
        if self._generation != _state.generation():     # a new process: forget stale blocks
            self._free, self._generation = {}, _state.generation()
        rounded = _round_size(size)
        with self._lock:
            blocks = self._free.get(rounded)
            block = blocks.pop() if blocks else None
        if block is None:
            block = Memory(rounded)
        return MemoryPointer(PooledMemory(block, self), 0)

    def _release(self, block):
        if block._generation == self._generation:
            with self._lock:
                self._free.setdefault(block.size, []).append(block)

    def free_all_blocks(self):
        with self._lock:
            self._free = {}


class MemoryPool:
    """Per-device pools, as CuPy's default ``MemoryPool``."""

    def __init__(self, allocator=None):
        self._pools = {}
        self._lock = threading.Lock()

    def _pool(self):
        dev = device.get_device_id()
        with self._lock:
            return self._pools.setdefault(dev, SingleDeviceMemoryPool())

    def malloc(self, size):
        if size == 0:
            return MemoryPointer(Memory(0), 0)
        return self._pool().malloc(size)

    def free_all_blocks(self, stream=None):
        self._pool().free_all_blocks()


def _malloc(size):
    return MemoryPointer(Memory(size), 0)


_allocator = None


def set_allocator(allocator=None):
    global _allocator
    _allocator = allocator if allocator is not None else _malloc


def get_allocator():
    return _allocator


def alloc(size):
    """Calls the current allocator (by default the pool) and returns a MemoryPointer."""
    return _allocator(size)
