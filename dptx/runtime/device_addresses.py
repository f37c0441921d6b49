"""Device addresses a program can hold: ``a.data.ptr``, as CuPy's ``MemoryPointer``.

A dptx array's bytes live on the cluster's workers, and each chunk of a launch maps them at
an address of its own (the CPU executor's windows, a GPU worker's allocation). A program
still needs a number that stands for "this array's byte n" where CUDA code takes a pointer
by a way other than a pointer parameter: inside a struct passed by value (Warp passes every
array as ``{data pointer, shape, strides}``; ``struct { float* p; int n; }``), or an
address computed on the host (``a.data.ptr + 4 * k``). This module hands out such numbers:
each device buffer asked for one gets a range of a private 64-bit address space, and a launch
turns every such number it finds in its arguments back into (buffer, offset), which each
chunk then rewrites to the address its executor maps the buffer at.

The range starts at ``BASE`` (0x7d9 in the top bits: a value no pointer of a host process
and no small integer takes) and each buffer's range is followed by an unmapped gap, so that
"one past the end" still names its buffer and no two buffers' ranges touch. A number in the
range that names no live buffer (the array was freed) is an error at launch, never a guess.
"""
from __future__ import annotations

import bisect
import threading
import weakref

from ..errors import LaunchError

BASE = 0x7D9 << 52          # first address handed out
LIMIT = BASE + (1 << 52)    # end of the range (4 PiB of addresses)
ALIGN = 1 << 21             # buffers start 2 MiB apart at least (CUDA aligns to 256 bytes)

_lock = threading.Lock()
_next = BASE
_starts: list = []          # sorted starts of live ranges
_ranges: dict = {}          # start -> (end, weakref to the DeviceBuffer)
_by_buffer = weakref.WeakKeyDictionary()    # DeviceBuffer -> start


def in_range(value: int) -> bool:
    """Whether an integer is in the range device addresses are handed out from."""
    return BASE <= value < LIMIT


def address_of(buffer, offset: int = 0) -> int:
    """The device address of byte ``offset`` of ``buffer`` (a ``DeviceBuffer``), the same
    number for the buffer's whole life."""
    global _next
    with _lock:
        start = _by_buffer.get(buffer)
        if start is None:
            start = _next
            span = -(-(buffer.nbytes + 1) // ALIGN) * ALIGN + ALIGN   # + an unmapped gap
            if start + span > LIMIT:
                raise LaunchError("dptx ran out of device addresses for a.data.ptr (4 PiB "
                                  "handed out in this process)")
            _next = start + span
            _by_buffer[buffer] = start
            _ranges[start] = (start + buffer.nbytes, weakref.ref(buffer, _forget(start)))
            bisect.insort(_starts, start)
    return start + offset


def _forget(start: int):
    def forget(_):
        with _lock:
            _ranges.pop(start, None)
            i = bisect.bisect_left(_starts, start)
            if i < len(_starts) and _starts[i] == start:
                del _starts[i]
    return forget


def resolve(value: int):
    """(buffer, offset) for a device address handed out by ``address_of``: the offset may be
    the buffer's size (one past its end). Raises ``LaunchError`` for an address in the range
    that names no live buffer; returns None for a number outside the range."""
    if not in_range(value):
        return None
    with _lock:
        i = bisect.bisect_right(_starts, value) - 1
        if i >= 0:
            start = _starts[i]
            end, ref = _ranges[start]
            buffer = ref()
            if buffer is not None and value <= end:
                return buffer, value - start
    raise LaunchError(f"0x{value:x} is in dptx's range of device addresses but is the address "
                      f"of no live dptx array (the array was freed, or the number is not a.data.ptr"
                      f" of one plus an offset inside it)")


class MemoryPointer:
    """``a.data`` of a dptx array, as CuPy's ``cupy.cuda.MemoryPointer``: ``ptr`` is the
    device address of the array's first byte, which a kernel argument may carry wherever CUDA
    takes a pointer (a pointer parameter, a field of a struct passed by value); ``+ n`` moves
    it ``n`` bytes."""

    __slots__ = ("_buffer", "_offset")

    def __init__(self, buffer, offset: int = 0):
        self._buffer = buffer
        self._offset = int(offset)

    @property
    def ptr(self) -> int:
        return address_of(self._buffer, self._offset)

    @property
    def mem(self):
        return self._buffer

    def __int__(self) -> int:
        return self.ptr

    def __add__(self, n: int) -> "MemoryPointer":
        return MemoryPointer(self._buffer, self._offset + int(n))

    def __sub__(self, n: int) -> "MemoryPointer":
        return MemoryPointer(self._buffer, self._offset - int(n))

    def __repr__(self) -> str:
        return f"<dptx MemoryPointer 0x{self.ptr:x} ({self._offset} bytes into a " \
               f"{self._buffer.nbytes}-byte buffer)>"


def embedded_addresses(raw: bytes, dtype=None) -> list:
    """The device addresses held in a struct's bytes, as [(byte offset, buffer, offset)].

    With the struct's numpy dtype (a structured scalar, as CuPy users pass structs), only its
    8-byte integer fields (and their sub-arrays, nested structs included) can hold one; with
    bytes alone, every 8-byte-aligned word is looked at (a pointer field of a C struct is
    8-byte aligned). A word in the range that names no live array raises, as ``resolve``."""
    found = []
    for at in _word_offsets(dtype, len(raw)):
        value = int.from_bytes(raw[at:at + 8], "little")
        if in_range(value):
            buffer, offset = resolve(value)
            found.append((at, buffer, offset))
    return found


def _word_offsets(dtype, size: int) -> list:
    if dtype is None or dtype.fields is None and dtype.subdtype is None:
        return list(range(0, size - 7, 8)) if dtype is None or dtype.kind == "V" else \
            ([0] if dtype.kind in "iu" and dtype.itemsize == 8 else [])
    out = []
    _walk(dtype, 0, out)
    return out


def _walk(dtype, base: int, out: list) -> None:
    if dtype.subdtype is not None:
        inner, shape = dtype.subdtype
        count = 1
        for n in shape:
            count *= n
        for k in range(count):
            _walk(inner, base + k * inner.itemsize, out)
    elif dtype.fields is not None:
        for name in dtype.names:
            field, offset = dtype.fields[name][:2]
            _walk(field, base + offset, out)
    elif dtype.kind in "iu" and dtype.itemsize == 8:
        out.append(base)
