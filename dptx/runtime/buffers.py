"""Device buffers and their memcpys: a ``DeviceBuffer`` is a device allocation whose current
version is a set of pieces, byte ranges held by futures on the workers that made them
(DESIGN.md point 6); filling, copying and replacing its bytes are operations of a stream, as
launches are (asynchronous in stream order). ``dptx.runtime.ndarray`` builds the array, its
views and its copies on them."""
from __future__ import annotations

import numpy as np

from . import cluster as runtime
from ..errors import DptxError, OutOfMemoryError
from .stream import Operation, Submitted, cancelled, data_lost, stream_for, synchronize


# buffers from this size on are checked against the cluster's memory (smaller ones are not
# worth a look at the model, and need no cluster started to be made)
CHECK_FROM = 1 << 28


def _check_size(nbytes: int) -> None:
    """numpy's error for a size past the address space; an OutOfMemoryError, as CuPy's, for
    one past the memory of the whole cluster (what its workers' memory limits add up to;
    nothing is said where a worker has none)."""
    if nbytes > np.iinfo(np.intp).max:
        raise ValueError("array is too big; `arr.size * arr.dtype.itemsize` is larger than "
                         "the maximum possible size.")
    if nbytes < CHECK_FROM:
        return
    workers = runtime.get_session().model.workers()
    if not workers or any(w.memory <= 0 for w in workers):
        return
    total = sum(w.memory for w in workers)
    if nbytes > total:
        raise OutOfMemoryError(
            f"out of memory allocating {_size_text(nbytes)} ({nbytes:,} bytes): the cluster's "
            f"{len(workers)} worker(s) hold {_size_text(total)} in all (their Dask memory "
            f"limits); add workers or memory (``dask worker --memory-limit``), or work on "
            f"smaller arrays")


def _size_text(nbytes: int) -> str:
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20)):
        if nbytes >= size:
            return f"{nbytes / size:.2f} {unit}"
    return f"{nbytes} bytes"


class DeviceBuffer:
    """A device allocation of ``nbytes`` bytes; ``pieces`` (a ``graphs.pieces.PieceMap``) is
    its current version."""

    def __init__(self, nbytes: int):
        # lazy: distributed loads on the first cluster call (`import dptx` stays light)
        from graphs.pieces import PieceMap
        _check_size(int(nbytes))
        self.nbytes = int(nbytes)
        self.pieces = PieceMap(0, []) if self.nbytes == 0 else None
        # bytes nothing wrote (dptx.empty's: initcheck, dptx sanitize), [(lo, hi), ...]
        self.unwritten = []
        runtime.track_buffer(self)

    @classmethod
    def from_host(cls, data: np.ndarray) -> "DeviceBuffer":
        buf = cls(data.nbytes)
        buf.upload(data)
        return buf

    @classmethod
    def filled(cls, nbytes: int, pattern: bytes) -> "DeviceBuffer":
        buf = cls(nbytes)
        buf.fill(pattern)
        return buf

    def written(self, lo: int, hi: int) -> None:
        """Bytes [lo, hi) hold what something wrote (initcheck's account)."""
        if self.unwritten:
            self.unwritten = [(a, b) for a0, b0 in self.unwritten
                              for a, b in ((a0, min(b0, lo)), (max(a0, hi), b0)) if a < b]

    def upload(self, data: np.ndarray, at: int = 0, stream=None) -> None:
        """Host -> device, into bytes [at, at + data.nbytes) (a view's). The bytes leave the
        client now (as ``cudaMemcpy`` does), straight to the workers; the new version takes
        effect in stream order."""
        # lazy: distributed loads on the first cluster call (`import dptx` stays light)
        from graphs.memcpy import upload
        session = runtime.get_session()
        pieces = upload(session.client, data, session.model.workers(), session.model.host_replicas)
        self.written(at, at + data.nbytes)
        if at == 0 and pieces.nbytes == self.nbytes:
            op = _SetPieces(self, pieces, "host-to-device copy")
            op.first_contents = self.pieces is None
            stream_for(stream).enqueue(op)
        else:
            stream_for(stream).enqueue(_SetRange(self, at, pieces, "host-to-device copy"))

    def fill(self, pattern: bytes, lo: int = 0, hi: int = None, stream=None) -> None:
        """Bytes [lo, hi) (all by default) repeat ``pattern``."""
        hi = self.nbytes if hi is None else hi
        self.written(lo, hi)
        op = _Fill(self, pattern, lo, hi)
        op.first_contents = self.pieces is None and (lo, hi) == (0, self.nbytes)
        stream_for(stream).enqueue(op)

    def copy(self, lo: int = 0, hi: int = None, stream=None) -> "DeviceBuffer":
        """A new buffer holding a copy of bytes [lo, hi) (all by default)."""
        hi = self.nbytes if hi is None else hi
        out = DeviceBuffer(hi - lo)
        out.unwritten = [(max(a, lo) - lo, min(b, hi) - lo) for a, b in self.unwritten
                         if max(a, lo) < min(b, hi)]
        stream_for(stream).enqueue(_Copy(out, self, lo, hi))
        return out

    def lose(self, why: str) -> None:
        """Its bytes are gone (their cluster closed): any later use says so."""
        if self.nbytes:
            self.pieces = _Lost(why, self.nbytes)

    def is_lost(self) -> bool:
        return type(self.pieces) is _Lost

    def read(self, lo: int = 0, hi: int = None) -> np.ndarray:
        """The current bytes [lo, hi) (all by default), after every pending operation (raises
        a launch's error)."""
        # lazy: distributed loads on the first cluster call (`import dptx` stays light)
        from graphs.memcpy import download
        if self.is_lost():  # (before asking for a cluster: none is needed to say so)
            raise self.pieces.error()
        synchronize()       # every stream: a copy to the host is a synchronization point
        hi = self.nbytes if hi is None else hi
        pieces = self.pieces if (lo, hi) == (0, self.nbytes) else self.pieces.window(lo, hi)
        try:
            return download(runtime.get_session().client, pieces)
        except Exception as exc:
            runtime.check_connection()      # a lost scheduler says so (ClusterLostError)
            if cancelled(exc):              # its data died with a worker: DataLostError
                raise data_lost("reading an array back", [self]) from None
            raise


class _Lost:
    """The pieces of a buffer whose cluster is gone: every use raises a clear DptxError
    (rather than a Future of a closed client failing somewhere inside)."""

    def __init__(self, why: str, nbytes: int):
        self.why, self.nbytes = why, nbytes

    def error(self) -> DptxError:
        return DptxError(f"this dptx array's {self.nbytes} bytes are lost: {self.why}; "
                         f"create it again (or get() it before closing)")

    def __getattr__(self, name):
        raise self.error()


class _SetPieces(Operation):
    def __init__(self, buf: DeviceBuffer, pieces, description: str):
        self.buf, self.pieces, self.description = buf, pieces, description

    def submit(self) -> Submitted:
        before, self.buf.pieces = self.buf.pieces, self.pieces
        return Submitted([self.buf], [before], self.pieces.futures())


class _SetRange(Operation):
    """Bytes [at, at + pieces.nbytes) of a buffer become ``pieces`` (a view's new bytes); the
    rest keeps its current pieces."""

    def __init__(self, buf: DeviceBuffer, at: int, pieces, description: str):
        self.buf, self.at, self.pieces, self.description = buf, at, pieces, description

    def submit(self) -> Submitted:
        before = self.buf.pieces
        self.buf.pieces = before.replaced([p.moved(self.at) for p in self.pieces.pieces])
        return Submitted([self.buf], [before], self.pieces.futures())


class _Fill(Operation):
    description = "fill"

    def __init__(self, buf: DeviceBuffer, pattern: bytes, lo: int, hi: int):
        self.buf, self.pattern, self.lo, self.hi = buf, pattern, lo, hi

    def submit(self) -> Submitted:
        # lazy: distributed loads on the first cluster call (`import dptx` stays light)
        from graphs.memcpy import filled
        session = runtime.get_session()
        before = self.buf.pieces
        made = filled(session.client, self.hi - self.lo, self.pattern, session.model.workers())
        if (self.lo, self.hi) == (0, self.buf.nbytes):
            self.buf.pieces = made
        else:
            self.buf.pieces = before.replaced([p.moved(self.lo) for p in made.pieces])
        return Submitted([self.buf], [before], made.futures())


class _Copy(Operation):
    description = "device-to-device copy"

    def __init__(self, dst: DeviceBuffer, src: DeviceBuffer, lo: int, hi: int):
        self.dst, self.src, self.lo, self.hi = dst, src, lo, hi

    def submit(self) -> Submitted:
        # lazy: distributed loads on the first cluster call (`import dptx` stays light)
        from graphs.memcpy import copied
        before = self.dst.pieces
        pieces = self.src.pieces
        if (self.lo, self.hi) != (0, self.src.nbytes):
            pieces = pieces.window(self.lo, self.hi)
        self.dst.pieces = copied(runtime.get_session().client, pieces)
        return Submitted([self.dst], [before], self.dst.pieces.futures())
