"""A pointer argument into the middle of a device buffer: CUDA's ``d_ptr + n``, what a kernel
gets for a view such as ``a[500:]``.

``base`` is the whole buffer (a numpy array, or a ``Window`` over part of it); the kernel
receives its address plus ``offset`` bytes and may reach every byte of the buffer, as on a
GPU, where the allocation and not the view bounds an access. Errors name the argument as a
view (``argument 1 (p, 2000 bytes into a 4000-byte array)``)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Pointer:
    base: object            # numpy uint8 array or dptx.device.Window: the buffer
    offset: int             # bytes from the buffer's start

    @property
    def nbytes(self) -> int:
        return int(self.base.nbytes)

    def describe(self) -> str:
        return f"{self.offset} bytes into a {self.nbytes}-byte array"
