"""``dptx.ndarray``: a C-contiguous device array that lives on the Dask cluster, following
CuPy's conventions.

The bytes of an array are a ``DeviceBuffer``: its current version is a set of pieces, byte
ranges held by futures on the workers that made them (DESIGN.md point 6). Memcpys are
operations of the stream like launches (asynchronous in stream order; ``get()``
synchronizes).
"""
from __future__ import annotations

import numbers
import weakref

import numpy as np

from . import runtime
from .errors import DptxError
from .stream import Operation, Submitted, default_stream


class DeviceBuffer:
    """A device allocation of ``nbytes`` bytes; ``pieces`` (a ``graphs.pieces.PieceMap``) is
    its current version."""

    def __init__(self, nbytes: int):
        from graphs.pieces import PieceMap
        self.nbytes = int(nbytes)
        self.pieces = PieceMap(0, []) if self.nbytes == 0 else None

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

    def upload(self, data: np.ndarray) -> None:
        """Host -> device. The bytes leave the client now (as ``cudaMemcpy`` does), straight
        to the workers; the new version takes effect in stream order."""
        from graphs.memcpy import upload
        session = runtime.get_session()
        pieces = upload(session.client, data, session.model.workers(), session.model.host_replicas)
        default_stream.enqueue(_SetPieces(self, pieces, "host-to-device copy"))

    def fill(self, pattern: bytes) -> None:
        default_stream.enqueue(_Fill(self, pattern))

    def copy(self) -> "DeviceBuffer":
        out = DeviceBuffer(self.nbytes)
        default_stream.enqueue(_Copy(out, self))
        return out

    def lose(self, why: str) -> None:
        """Its bytes are gone (their cluster closed): any later use says so."""
        if self.nbytes:
            self.pieces = _Lost(why, self.nbytes)

    def is_lost(self) -> bool:
        return type(self.pieces) is _Lost

    def read(self) -> np.ndarray:
        """The current bytes, after every pending operation (raises a launch's error)."""
        from graphs.memcpy import download
        default_stream.synchronize()
        return download(runtime.get_session().client, self.pieces)


class _Lost:
    """The pieces of a buffer whose cluster is gone: every use raises a clear DptxError
    (rather than a Future of a closed client failing somewhere inside)."""

    def __init__(self, why: str, nbytes: int):
        self.why, self.nbytes = why, nbytes

    def __getattr__(self, name):
        raise DptxError(f"this dptx array's {self.nbytes} bytes are lost: {self.why}; "
                        f"create it again (or get() it before closing)")


class _SetPieces(Operation):
    def __init__(self, buf: DeviceBuffer, pieces, description: str):
        self.buf, self.pieces, self.description = buf, pieces, description

    def submit(self) -> Submitted:
        before, self.buf.pieces = self.buf.pieces, self.pieces
        return Submitted([self.buf], [before], self.pieces.futures())


class _Fill(Operation):
    description = "fill"

    def __init__(self, buf: DeviceBuffer, pattern: bytes):
        self.buf, self.pattern = buf, pattern

    def submit(self) -> Submitted:
        from graphs.memcpy import filled
        session = runtime.get_session()
        before = self.buf.pieces
        self.buf.pieces = filled(session.client, self.buf.nbytes, self.pattern,
                                 session.model.workers())
        return Submitted([self.buf], [before], self.buf.pieces.futures())


class _Copy(Operation):
    description = "device-to-device copy"

    def __init__(self, dst: DeviceBuffer, src: DeviceBuffer):
        self.dst, self.src = dst, src

    def submit(self) -> Submitted:
        from graphs.memcpy import copied
        before = self.dst.pieces
        self.dst.pieces = copied(runtime.get_session().client, self.src.pieces)
        return Submitted([self.dst], [before], self.dst.pieces.futures())


def _dtype(dtype) -> np.dtype:
    dt = np.dtype(dtype)
    if dt.hasobject:
        raise DptxError(f"dtype {dt} holds Python objects; device arrays need plain data")
    return dt


def _shape(shape) -> tuple:
    if isinstance(shape, numbers.Integral):
        shape = (int(shape),)
    shape = tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise DptxError(f"negative dimensions are not allowed: {shape}")
    return shape


class ndarray:
    """A device array. Create one with ``dptx.asarray``, ``dptx.zeros``... and read it back with
    ``get()`` or ``numpy.asarray``."""

    __array_priority__ = 100
    live = weakref.WeakSet()       # every array alive (connect() must not strand them)

    def __init__(self, shape, dtype=np.float64, _buffer: DeviceBuffer = None):
        self._shape = _shape(shape)
        self._dtype = _dtype(dtype)
        nbytes = int(np.prod(self._shape, dtype=np.int64)) * self._dtype.itemsize
        if _buffer is None:
            _buffer = DeviceBuffer.filled(nbytes, b"\0")
        if _buffer.nbytes != nbytes:
            raise DptxError(f"buffer of {_buffer.nbytes} bytes does not hold shape "
                            f"{self._shape} of {self._dtype}")
        self._buffer = _buffer
        ndarray.live.add(self)

    # -- attributes ----------------------------------------------------------------------------
    shape = property(lambda self: self._shape)
    dtype = property(lambda self: self._dtype)
    ndim = property(lambda self: len(self._shape))
    size = property(lambda self: int(np.prod(self._shape, dtype=np.int64)))
    itemsize = property(lambda self: self._dtype.itemsize)
    nbytes = property(lambda self: self._buffer.nbytes)

    def __len__(self):
        if not self._shape:
            raise TypeError("len() of a 0-d array")
        return self._shape[0]

    # -- data movement -------------------------------------------------------------------------
    def get(self) -> np.ndarray:
        """Copy to the host (synchronizes)."""
        raw = self._buffer.read()
        return raw.view(self._dtype).reshape(self._shape).copy() if raw.size else \
            np.empty(self._shape, self._dtype)

    def set(self, arr) -> None:
        """Copy a host array of the same shape and dtype into this array."""
        arr = np.asarray(arr)
        if arr.shape != self._shape or arr.dtype != self._dtype:
            raise DptxError(f"set() needs an array of shape {self._shape} and dtype "
                            f"{self._dtype}, got shape {arr.shape} and dtype {arr.dtype}")
        self._buffer.upload(np.ascontiguousarray(arr))

    def copy(self) -> "ndarray":
        return ndarray(self._shape, self._dtype, self._buffer.copy())

    def fill(self, value) -> None:
        self._buffer.fill(np.array(value, dtype=self._dtype).tobytes())

    def __array__(self, dtype=None, copy=None):
        a = self.get()
        return a if dtype is None else a.astype(dtype, copy=False)

    def __repr__(self):
        if self.size <= 1000:
            body = np.array2string(self.get(), separator=", ", prefix="dptx.ndarray(")
            return f"dptx.ndarray({body}, dtype={self._dtype})"
        return f"<dptx.ndarray shape={self._shape} dtype={self._dtype}>"


# ----------------------------------------------------------------------------------------------
# creation, following CuPy / numpy names
# ----------------------------------------------------------------------------------------------
def array(obj, dtype=None, copy=True) -> ndarray:
    if isinstance(obj, ndarray):
        if dtype is None or np.dtype(dtype) == obj.dtype:
            return obj.copy() if copy else obj
        return array(obj.get(), dtype)
    host = np.array(obj, dtype=dtype, order="C")  # (ascontiguousarray would make 0-d 1-d)
    return ndarray(host.shape, host.dtype, DeviceBuffer.from_host(host))


def asarray(obj, dtype=None) -> ndarray:
    return array(obj, dtype, copy=False)


def empty(shape, dtype=np.float64) -> ndarray:
    # Device memory is zeroed rather than left undefined: results are reproducible, and a
    # chunk that writes part of its window keeps defined bytes in the rest.
    return ndarray(shape, dtype)


def zeros(shape, dtype=np.float64) -> ndarray:
    return ndarray(shape, dtype)


def full(shape, fill_value, dtype=None) -> ndarray:
    dt = np.dtype(dtype) if dtype is not None else np.array(fill_value).dtype
    shape = _shape(shape)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
    pattern = np.array(fill_value, dtype=dt).tobytes()
    return ndarray(shape, dt, DeviceBuffer.filled(nbytes, pattern))


def ones(shape, dtype=np.float64) -> ndarray:
    return full(shape, 1, dtype)


def empty_like(a, dtype=None) -> ndarray:
    return empty(a.shape, dtype or a.dtype)


def zeros_like(a, dtype=None) -> ndarray:
    return zeros(a.shape, dtype or a.dtype)


def asnumpy(a) -> np.ndarray:
    return a.get() if isinstance(a, ndarray) else np.asarray(a)
