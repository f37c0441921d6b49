"""Stand-in for ``cupy.cuda.pinned_memory``: page-locked host memory from
``runtime.hostAlloc`` (a registry the machine checks async copies against), from a pool that
keeps freed blocks. Tests only."""
from __future__ import annotations

import ctypes
import sys
import threading

from .. import _state
from . import runtime


class PinnedMemory:
    def __init__(self, size, flags=0):
        self.size = size
        self.ptr = runtime.hostAlloc(size, flags) if size > 0 else 0
        self._generation = _state.generation()

    def __del__(self):
        if sys.is_finalizing():     # as CuPy's is_shutting_down()
            return
        if self.ptr and self._generation == _state.generation():
            runtime.freeHost(self.ptr)

    def __int__(self):
        return self.ptr


class PinnedMemoryPointer:
    """A pointer into pinned memory ``mem`` at ``offset``; it exposes the bytes to the end of
    the allocation through the buffer protocol (``numpy.frombuffer``)."""

    def __init__(self, mem, offset):
        self.mem = mem
        self.ptr = mem.ptr + offset

    def __int__(self):
        return self.ptr

    def __add__(self, offset):
        return PinnedMemoryPointer(self.mem, self.ptr - self.mem.ptr + offset)

    def __sub__(self, offset):
        return self + -offset

    def size(self):
        return self.mem.size - (self.ptr - self.mem.ptr)

    def __buffer__(self, flags):        # Python 3.12+
        return memoryview((ctypes.c_byte * self.size()).from_address(self.ptr)).cast("b")


class _PooledPinnedMemory:
    def __init__(self, mem, pool):
        self.mem, self.pool = mem, pool
        self.ptr, self.size = mem.ptr, mem.size

    def __del__(self):
        self.pool._release(self.mem)


class PinnedMemoryPool:
    def __init__(self, allocator=None):
        self._free = {}
        self._lock = threading.Lock()

    def malloc(self, size):
        rounded = -(-size // 512) * 512
        with self._lock:
            blocks = self._free.get(rounded)
            mem = blocks.pop() if blocks else None
        if mem is None or mem._generation != _state.generation():
            mem = PinnedMemory(rounded, runtime.hostAllocPortable)
        return PinnedMemoryPointer(_PooledPinnedMemory(mem, self), 0)

    def _release(self, mem):
        if mem._generation == _state.generation():
            with self._lock:
                self._free.setdefault(mem.size, []).append(mem)

    def free_all_blocks(self):
        with self._lock:
            self._free = {}


def _malloc(size):
    return PinnedMemoryPointer(PinnedMemory(size, runtime.hostAllocPortable), 0)


_allocator = _malloc


def set_pinned_memory_allocator(allocator=None):
    global _allocator
    _allocator = allocator if allocator is not None else _malloc


def alloc_pinned_memory(size):
    """Calls the current pinned allocator; returns a PinnedMemoryPointer."""
    return _allocator(size)
