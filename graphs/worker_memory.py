"""Worker-side memory for chunk windows, cuts and merges, recycled.

Every launch makes new versions of the bytes it writes, so a worker allocates about as much as
it computes on. On virtual machines a page touched for the first time is expensive (measured
on the development machine: 20-80 ms to first write 32 MiB, 4 ms to copy it into memory
touched before), more than the copies themselves. The pool keeps the arrays it handed out and
hands one out again once nothing refers to it any more (the piece it held was released by
Dask): the memory is reused without new page faults.

An array is free when the pool's own reference is the only one left: numpy views keep a
reference to the array that owns the memory, so any live piece, window or slice of it keeps
it busy.
"""
from __future__ import annotations

import os
import sys
import threading

import numpy as np

MIN_BYTES = 1 << 20                 # smaller arrays come from numpy directly
LIMIT = int(os.environ.get("DPTX_POOL_BYTES", 2 << 30))   # free memory kept at most


class BytePool:
    def __init__(self, limit: int = LIMIT):
        self.limit = limit
        self._arrays: list = []
        self._lock = threading.Lock()

    @staticmethod
    def _free(a: np.ndarray) -> bool:
        # references when nothing else holds it: the pool's list, the caller's loop variable,
        # this function's argument and getrefcount's own argument
        return sys.getrefcount(a) <= 4

    def empty(self, nbytes: int) -> np.ndarray:
        """An uninitialized uint8 array of ``nbytes`` (a view of a recycled one where
        possible)."""
        if nbytes < MIN_BYTES:
            return np.empty(nbytes, np.uint8)
        with self._lock:
            best = self._smallest_free(nbytes)
            if best is None:
                best = np.empty(nbytes, np.uint8)
                # Touch the pages now: a kernel's measured time must not include the page
                # faults of memory it happens to be the first to write (the scheduler plugin
                # learns each worker's speed from that time).
                best[::4096] = 0
                self._arrays.append(best)
                self._trim()
            return best[:nbytes]

    def _smallest_free(self, nbytes: int):
        """The smallest free array of nbytes..2*nbytes (in a frame of its own: a loop
        variable left over in the caller would keep an array busy)."""
        best = None
        for a in self._arrays:
            if nbytes <= a.size <= 2 * nbytes and self._free(a) and \
                    (best is None or a.size < best.size):
                best = a
        return best

    def zeros(self, nbytes: int) -> np.ndarray:
        out = self.empty(nbytes)
        out[:] = 0
        return out

    def _trim(self) -> None:
        """Drop free arrays, largest first, while the free memory held exceeds the limit."""
        free = sorted((a for a in self._arrays if self._free(a)), key=lambda a: -a.size)
        held = sum(a.size for a in free)
        for a in free:
            if held <= self.limit:
                break
            held -= a.size
            self._arrays = [b for b in self._arrays if b is not a]

    def held_bytes(self) -> tuple:
        """(bytes in use, bytes free) of the pool's arrays."""
        with self._lock:
            free = sum(a.size for a in self._arrays if self._free(a))
            return sum(a.size for a in self._arrays) - free, free


pool = BytePool()
