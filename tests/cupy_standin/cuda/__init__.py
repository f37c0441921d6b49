"""Stand-in for ``cupy.cuda``: the names dptx uses, from the same submodules as CuPy's.
Tests only."""
from . import device, driver, function, memory, pinned_memory, runtime, stream  # noqa: F401
from .device import Device, get_device_id  # noqa: F401
from .function import Function, Module  # noqa: F401
from .memory import (BaseMemory, Memory, MemoryPointer, MemoryPool, UnownedMemory,  # noqa: F401
                     alloc, get_allocator, set_allocator)
from .pinned_memory import (PinnedMemory, PinnedMemoryPointer, PinnedMemoryPool,  # noqa: F401
                            alloc_pinned_memory, set_pinned_memory_allocator)
from .stream import Event, Stream, get_current_stream  # noqa: F401


def is_available() -> bool:
    try:
        return runtime.getDeviceCount() > 0
    except Exception:
        return False
