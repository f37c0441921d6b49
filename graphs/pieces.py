"""Where the bytes of a device buffer live (DESIGN.md point 6).

A buffer's current version is a list of *pieces*: byte ranges [start, end) of the buffer, each
held by a Dask future whose value is a 1-D ``uint8`` array. A piece may be a view: its bytes
start at ``offset`` in that array (what is left of a chunk's output after a later launch
overwrote part of it), so re-tiling a buffer never needs a task. Pieces are sorted, disjoint
and cover the whole buffer. ``worker`` is where the piece is expected to be (the worker the
producing task was placed on): a hint for placement, never needed for correctness.

A piece whose future is ``ZEROS`` holds zero bytes that no task has made (a new array's
memory): a chunk that reads it zeroes that part of its window itself, and nothing travels or
waits for it.

Nothing here talks to Dask; futures are opaque values.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass


class _Zeros:
    """The ``future`` of a piece of zero bytes that no task holds."""
    key = "dptx-zeros"

    def __repr__(self):
        return "ZEROS"

    def __reduce__(self):
        return "ZEROS"


ZEROS = _Zeros()


@dataclass(frozen=True)
class Piece:
    start: int
    end: int
    future: object
    offset: int = 0          # where byte ``start`` is in the future's array
    worker: str = None       # expected holder (a hint)
    length: int = None       # bytes of the whole array (None: this piece's size)
    element: int = None      # the array is this element of the future's value (a tuple: the
                             # outputs of a task that makes several)

    def __post_init__(self):
        if self.length is None:
            object.__setattr__(self, "length", self.offset + self.end - self.start)

    @property
    def size(self) -> int:
        return self.end - self.start

    @property
    def zero(self) -> bool:
        """Zero bytes no task holds (see the module doc)."""
        return self.future is ZEROS

    def moved(self, by: int) -> "Piece":
        """The same bytes at buffer position ``start + by`` (a range of a buffer taken as a
        buffer of its own, or put back)."""
        return Piece(self.start + by, self.end + by, self.future, self.offset, self.worker,
                     self.length, self.element)

    def cut(self, lo: int, hi: int) -> "Piece":
        """The part of this piece inside [lo, hi) (which must overlap it), as a view."""
        a, b = max(lo, self.start), min(hi, self.end)
        return Piece(a, b, self.future, self.offset + (a - self.start), self.worker, self.length,
                     self.element)


class PieceMap:
    """The pieces of one buffer version: sorted, disjoint, covering [0, nbytes)."""

    __slots__ = ("nbytes", "pieces", "_starts")

    def __init__(self, nbytes: int, pieces: list):
        self.nbytes = int(nbytes)
        self.pieces = list(pieces)
        self._starts = [p.start for p in self.pieces]
        pos = 0
        for p in self.pieces:
            if p.start != pos or p.end <= p.start:
                raise ValueError(f"pieces do not tile [0, {nbytes}): {self.describe()}")
            pos = p.end
        if pos != self.nbytes and not (self.nbytes == 0 and not self.pieces):
            raise ValueError(f"pieces do not tile [0, {nbytes}): {self.describe()}")

    def describe(self) -> str:
        return ", ".join(f"[{p.start}, {p.end})" for p in self.pieces)

    def overlapping(self, lo: int, hi: int) -> list:
        """The pieces that hold bytes of [lo, hi), cut to it."""
        if hi <= lo:
            return []
        i = max(0, bisect.bisect_right(self._starts, lo) - 1)
        out = []
        while i < len(self.pieces) and self.pieces[i].start < hi:
            p = self.pieces[i]
            if p.end > lo:
                out.append(p.cut(lo, hi))
            i += 1
        return out

    def window(self, lo: int, hi: int) -> "PieceMap":
        """Bytes [lo, hi) as a PieceMap of their own (starting at 0): a view's bytes."""
        return PieceMap(hi - lo, [p.moved(-lo) for p in self.overlapping(lo, hi)])

    def replaced(self, new: list) -> "PieceMap":
        """A new version where each of ``new`` (disjoint pieces) replaces the bytes it covers;
        the rest keeps the current pieces (cut where needed)."""
        if not new:
            return self
        new = sorted(new, key=lambda p: p.start)
        out, pos = [], 0
        for p in new:
            if p.start < pos:
                raise ValueError("replacement pieces overlap")
            out.extend(self.overlapping(pos, p.start))
            out.append(p)
            pos = p.end
        out.extend(self.overlapping(pos, self.nbytes))
        return PieceMap(self.nbytes, out)

    def futures(self) -> list:
        """Each distinct future once, in order (zero pieces have none)."""
        seen, out = {id(ZEROS)}, []
        for p in self.pieces:
            if id(p.future) not in seen:
                seen.add(id(p.future))
                out.append(p.future)
        return out

    def bytes_on(self, lo: int, hi: int) -> dict:
        """worker -> bytes of [lo, hi) expected on it (unknown holders under None)."""
        out: dict = {}
        for p in self.overlapping(lo, hi):
            out[p.worker] = out.get(p.worker, 0) + p.size
        return out
