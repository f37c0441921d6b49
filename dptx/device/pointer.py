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


@dataclass(frozen=True)
class StructValue:
    """A struct passed by value whose bytes hold device pointers (Warp's arrays, ``struct {
    float* p; int n; }``): ``raw`` is its bytes, ``pointers`` says where each pointer goes,
    ((byte offset in ``raw``, buffer or ``Pointer``), ...). The executor writes the address it
    maps each buffer at into a copy of the bytes, and maps the whole buffer."""
    raw: bytes
    pointers: tuple

    def patched(self, address_of) -> bytes:
        """The bytes with the pointer at each byte offset ``at`` set to ``address_of(at,
        buffer or Pointer)``."""
        out = bytearray(self.raw)
        for at, target in self.pointers:
            out[at:at + 8] = int(address_of(at, target)).to_bytes(8, "little")
        return bytes(out)
