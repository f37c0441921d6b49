"""``dptx.ndarray``: a C-contiguous device array that lives on the Dask cluster, following
CuPy's conventions.

The bytes of an array are a ``DeviceBuffer``: its current version is a set of pieces, byte
ranges held by futures on the workers that made them (DESIGN.md point 6). Memcpys are
operations of the stream like launches (asynchronous in stream order; ``get()``
synchronizes).
"""
from __future__ import annotations

import numbers
import operator

import numpy as np

from . import runtime
from .errors import DptxError
from .stream import Operation, Submitted, stream_for, synchronize


class DeviceBuffer:
    """A device allocation of ``nbytes`` bytes; ``pieces`` (a ``graphs.pieces.PieceMap``) is
    its current version."""

    def __init__(self, nbytes: int):
        from graphs.pieces import PieceMap
        self.nbytes = int(nbytes)
        self.pieces = PieceMap(0, []) if self.nbytes == 0 else None
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

    def upload(self, data: np.ndarray, at: int = 0, stream=None) -> None:
        """Host -> device, into bytes [at, at + data.nbytes) (a view's). The bytes leave the
        client now (as ``cudaMemcpy`` does), straight to the workers; the new version takes
        effect in stream order."""
        from graphs.memcpy import upload
        session = runtime.get_session()
        pieces = upload(session.client, data, session.model.workers(), session.model.host_replicas)
        if at == 0 and pieces.nbytes == self.nbytes:
            stream_for(stream).enqueue(_SetPieces(self, pieces, "host-to-device copy"))
        else:
            stream_for(stream).enqueue(_SetRange(self, at, pieces, "host-to-device copy"))

    def fill(self, pattern: bytes, lo: int = 0, hi: int = None, stream=None) -> None:
        """Bytes [lo, hi) (all by default) repeat ``pattern``."""
        hi = self.nbytes if hi is None else hi
        stream_for(stream).enqueue(_Fill(self, pattern, lo, hi))

    def copy(self, lo: int = 0, hi: int = None, stream=None) -> "DeviceBuffer":
        """A new buffer holding a copy of bytes [lo, hi) (all by default)."""
        hi = self.nbytes if hi is None else hi
        out = DeviceBuffer(hi - lo)
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
        from graphs.memcpy import download
        synchronize()       # every stream: a copy to the host is a synchronization point
        hi = self.nbytes if hi is None else hi
        pieces = self.pieces if (lo, hi) == (0, self.nbytes) else self.pieces.window(lo, hi)
        return download(runtime.get_session().client, pieces)


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
        from graphs.memcpy import copied
        before = self.dst.pieces
        pieces = self.src.pieces
        if (self.lo, self.hi) != (0, self.src.nbytes):
            pieces = pieces.window(self.lo, self.hi)
        self.dst.pieces = copied(runtime.get_session().client, pieces)
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


def _contiguous_view(shape: tuple, dtype: np.dtype, key) -> tuple:
    """(byte offset, shape) of ``key`` applied to a C-contiguous array, found by numpy on a
    stand-in that has the array's strides but no memory of its size (nothing is read).
    Raises DptxError when the result is not contiguous."""
    from numpy.lib.stride_tricks import as_strided
    if isinstance(key, ndarray) or (isinstance(key, (list, np.ndarray))) or (
            isinstance(key, tuple) and any(isinstance(k, (list, np.ndarray, ndarray))
                                           for k in key)):
        raise DptxError("dptx arrays take basic indexing (integers and slices); integer "
                        "and boolean array indexing is not supported")
    if any(s == 0 for s in shape):
        probe = np.empty(shape, dtype)
    else:
        strides, step = [], dtype.itemsize
        for n in reversed(shape):
            strides.insert(0, step)
            step *= n
        probe = as_strided(np.empty(1, dtype), shape=shape, strides=strides, writeable=False)
    try:
        view = probe[key]
    except IndexError as exc:
        raise IndexError(f"{exc} (an array of shape {shape})") from None
    if not isinstance(view, np.ndarray):        # all integers: numpy gives a scalar
        view = probe[key + (Ellipsis,) if isinstance(key, tuple) else (key, Ellipsis)]
    if view.size > 1 and not view.flags.c_contiguous:
        raise DptxError(f"index {key!r} of an array of shape {shape} gives a non-contiguous "
                        f"view (steps, or a slice of an inner axis); dptx views are "
                        f"contiguous byte ranges: copy it on the host, or index outer axes")
    offset = view.__array_interface__["data"][0] - probe.__array_interface__["data"][0]
    return offset, view.shape


class ndarray:
    """A device array. Create one with ``dptx.asarray``, ``dptx.zeros``... and read it back with
    ``get()`` or ``numpy.asarray``."""

    __array_priority__ = 100

    def __init__(self, shape, dtype=np.float64, _buffer: DeviceBuffer = None,
                 _offset: int = 0, _base: "ndarray" = None):
        self._shape = _shape(shape)
        self._dtype = _dtype(dtype)
        nbytes = int(np.prod(self._shape, dtype=np.int64)) * self._dtype.itemsize
        if _buffer is None:
            _buffer = DeviceBuffer.filled(nbytes, b"\0")
        if (_base is None and _buffer.nbytes != nbytes) or \
                not 0 <= _offset <= _offset + nbytes <= _buffer.nbytes:
            raise DptxError(f"buffer of {_buffer.nbytes} bytes does not hold shape "
                            f"{self._shape} of {self._dtype} at byte {_offset}")
        self._buffer = _buffer
        self._offset = int(_offset)     # a view: where its bytes start in the buffer
        self._base = _base              # the array it views (None: it owns its buffer)

    # -- attributes ----------------------------------------------------------------------------
    shape = property(lambda self: self._shape)
    dtype = property(lambda self: self._dtype)
    ndim = property(lambda self: len(self._shape))
    size = property(lambda self: int(np.prod(self._shape, dtype=np.int64)))
    itemsize = property(lambda self: self._dtype.itemsize)
    nbytes = property(lambda self: self.size * self._dtype.itemsize)
    base = property(lambda self: self._base, doc="The array this one views, or None (numpy's "
                    "and CuPy's ``base``).")

    @property
    def _range(self) -> tuple:
        """Its bytes in the buffer: [lo, hi)."""
        return self._offset, self._offset + self.nbytes

    def _describe_view(self) -> str:
        return (f"a view of {self.nbytes} bytes at byte {self._offset} of a "
                f"{self._buffer.nbytes}-byte array")

    def __len__(self):
        if not self._shape:
            raise TypeError("len() of a 0-d array")
        return self._shape[0]

    # -- data movement -------------------------------------------------------------------------
    def get(self, stream=None) -> np.ndarray:
        """Copy to the host (synchronizes: every stream, as CUDA's legacy default stream;
        ``stream`` is taken for CuPy's signature)."""
        stream_for(stream)
        raw = self._buffer.read(*self._range) if self.nbytes else np.empty(0, np.uint8)
        return raw.view(self._dtype).reshape(self._shape).copy() if raw.size else \
            np.empty(self._shape, self._dtype)

    def set(self, arr, stream=None) -> None:
        """Copy a host array of the same shape and dtype into this array (or view), in
        ``stream`` (default: the current stream)."""
        arr = np.asarray(arr)
        if arr.shape != self._shape or arr.dtype != self._dtype:
            raise DptxError(f"set() needs an array of shape {self._shape} and dtype "
                            f"{self._dtype}, got shape {arr.shape} and dtype {arr.dtype}")
        if self.nbytes:
            self._buffer.upload(np.ascontiguousarray(arr), at=self._offset, stream=stream)

    def copy(self, stream=None) -> "ndarray":
        return ndarray(self._shape, self._dtype,
                       self._buffer.copy(*self._range, stream=stream))

    def fill(self, value, stream=None) -> None:
        if self.nbytes:
            self._buffer.fill(np.array(value, dtype=self._dtype).tobytes(), *self._range,
                              stream=stream)

    # -- views ---------------------------------------------------------------------------------
    def __getitem__(self, key) -> "ndarray":
        """Basic indexing that keeps the data contiguous (``a[500:]``, ``m[10:20]``, ``m[3]``,
        ``m[2:4, :]``): a ``dptx.ndarray`` over the same bytes, which a kernel receives as the
        buffer's pointer plus the view's offset (CUDA's ``d_ptr + n``)."""
        lo, shape = _contiguous_view(self._shape, self._dtype, key)
        return ndarray(shape, self._dtype, self._buffer, self._offset + lo,
                       self if self._base is None else self._base)

    def __setitem__(self, key, value) -> None:
        """``a[100:200] = 0`` (a scalar fills the view), or a host or dptx array that
        broadcasts to the view's shape (a dptx array is copied on the devices)."""
        view = self[key]
        if isinstance(value, ndarray):
            # device to device, broadcast and converted as numpy assigns (one launch)
            from . import ufuncs
            ufuncs.assign(view, value)
            return
        if np.ndim(value) == 0:
            view.fill(value)
        else:
            view.set(np.broadcast_to(np.asarray(value, dtype=self._dtype), view.shape))

    # -- arithmetic: numpy's operators and ufuncs, each one launch (ufuncs.py) -------------
    def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
        from . import ufuncs
        if method != "__call__" or kwargs.get("where", True) is not True or \
                set(kwargs) - {"where", "dtype", "casting"} or kwargs.get("dtype") is not None:
            return NotImplemented
        if out is not None:
            out = out[0] if isinstance(out, tuple) else out
        return ufuncs.apply(ufunc, *inputs, out=out)

    def __array_function__(self, func, types, args, kwargs):
        from . import reductions, ufuncs
        handler = {np.where: ufuncs.where, np.clip: ufuncs.clip, np.reshape: reshape,
                   np.ravel: ravel, np.sum: reductions.sum_, np.prod: reductions.prod,
                   np.min: reductions.min_, np.max: reductions.max_, np.amin: reductions.min_,
                   np.amax: reductions.max_, np.mean: reductions.mean,
                   np.argmin: reductions.argmin, np.argmax: reductions.argmax,
                   np.any: reductions.any_, np.all: reductions.all_,
                   np.dot: reductions.dot, np.matmul: reductions.matmul,
                   np.concatenate: concatenate, np.copy: copy}.get(func)
        if handler is None:
            return NotImplemented
        return handler(*args, **kwargs)

    def _ufunc(name):
        ufunc = getattr(np, name)

        def method(self, other):
            from . import ufuncs
            return ufuncs.apply(ufunc, self, other)

        def reflected(self, other):
            from . import ufuncs
            return ufuncs.apply(ufunc, other, self)

        def inplace(self, other):
            from . import ufuncs
            ufuncs.apply(ufunc, self, other, out=self)
            return self
        return method, reflected, inplace

    for _op, _name in (("add", "add"), ("sub", "subtract"), ("mul", "multiply"),
                       ("truediv", "true_divide"), ("floordiv", "floor_divide"),
                       ("mod", "remainder"), ("pow", "power"), ("and", "bitwise_and"),
                       ("or", "bitwise_or"), ("xor", "bitwise_xor"), ("lshift", "left_shift"),
                       ("rshift", "right_shift")):
        locals()[f"__{_op}__"], locals()[f"__r{_op}__"], locals()[f"__i{_op}__"] = _ufunc(_name)
    for _op, _name in (("eq", "equal"), ("ne", "not_equal"), ("lt", "less"),
                       ("le", "less_equal"), ("gt", "greater"), ("ge", "greater_equal")):
        locals()[f"__{_op}__"] = _ufunc(_name)[0]
    del _op, _name, _ufunc
    __hash__ = None          # == is element-wise, as numpy's

    def __neg__(self):
        from . import ufuncs
        return ufuncs.apply(np.negative, self)

    def __pos__(self):
        from . import ufuncs
        return ufuncs.apply(np.positive, self)

    def __abs__(self):
        from . import ufuncs
        return ufuncs.apply(np.absolute, self)

    def __invert__(self):
        from . import ufuncs
        return ufuncs.apply(np.invert, self)

    def __bool__(self):
        if self.size != 1:
            raise ValueError("The truth value of an array with more than one element is "
                             "ambiguous. Use a.any() or a.all()")
        return bool(self.get().reshape(()))

    def __float__(self):
        return float(self._scalar("float"))

    def __int__(self):
        return int(self._scalar("int"))

    def __index__(self):
        if self._dtype.kind not in "iu":
            raise TypeError("only integer arrays can be used as an index")
        return int(self._scalar("index"))

    def _scalar(self, what: str):
        if self.size != 1:
            raise TypeError(f"only arrays of size 1 can be converted to Python scalars "
                            f"({what}() of an array of shape {self._shape})")
        return self.get().reshape(())[()]

    def astype(self, dtype, copy=True) -> "ndarray":
        from . import ufuncs
        dt = _dtype(dtype)
        if dt == self._dtype:
            return self.copy() if copy else self
        return ufuncs.astype(self, dt)

    # -- shapes: views of the same (contiguous) bytes ----------------------------------------
    def reshape(self, *shape, order="C") -> "ndarray":
        return reshape(self, shape[0] if len(shape) == 1 and not isinstance(
            shape[0], numbers.Integral) else shape, order=order)

    def ravel(self, order="C") -> "ndarray":
        return ravel(self, order)

    def flatten(self) -> "ndarray":
        return ravel(self).copy()

    def squeeze(self, axis=None) -> "ndarray":
        axes = _axes(axis, self.ndim) if axis is not None else \
            tuple(k for k, d in enumerate(self._shape) if d == 1)
        for k in axes:
            if self._shape[k] != 1:
                raise ValueError("cannot select an axis to squeeze out which has size not "
                                 "equal to one")
        return self._view(tuple(d for k, d in enumerate(self._shape) if k not in axes))

    def _view(self, shape) -> "ndarray":
        return ndarray(shape, self._dtype, self._buffer, self._offset,
                       self if self._base is None else self._base)

    @property
    def T(self) -> "ndarray":
        return self.transpose()

    def transpose(self, *axes) -> "ndarray":
        if self.ndim <= 1:
            return self._view(self._shape)
        raise DptxError("transpose of an array of 2 or more dimensions needs a strided view, "
                        "which dptx arrays do not have yet (views are contiguous byte "
                        "ranges); transpose on the host, or write the kernel to read "
                        "columns")

    # -- reductions (reductions.py) ---------------------------------------------------------
    def sum(self, axis=None, dtype=None, out=None, keepdims=False):
        from . import reductions
        return reductions.sum_(self, axis=axis, dtype=dtype, out=out, keepdims=keepdims)

    def prod(self, axis=None, dtype=None, out=None, keepdims=False):
        from . import reductions
        return reductions.prod(self, axis=axis, dtype=dtype, out=out, keepdims=keepdims)

    def min(self, axis=None, out=None, keepdims=False):
        from . import reductions
        return reductions.min_(self, axis=axis, out=out, keepdims=keepdims)

    def max(self, axis=None, out=None, keepdims=False):
        from . import reductions
        return reductions.max_(self, axis=axis, out=out, keepdims=keepdims)

    def mean(self, axis=None, dtype=None, out=None, keepdims=False):
        from . import reductions
        return reductions.mean(self, axis=axis, dtype=dtype, out=out, keepdims=keepdims)

    def argmin(self, axis=None, out=None, keepdims=False):
        from . import reductions
        return reductions.argmin(self, axis=axis, out=out, keepdims=keepdims)

    def argmax(self, axis=None, out=None, keepdims=False):
        from . import reductions
        return reductions.argmax(self, axis=axis, out=out, keepdims=keepdims)

    def any(self, axis=None, out=None, keepdims=False):
        from . import reductions
        return reductions.any_(self, axis=axis, out=out, keepdims=keepdims)

    def all(self, axis=None, out=None, keepdims=False):
        from . import reductions
        return reductions.all_(self, axis=axis, out=out, keepdims=keepdims)

    def dot(self, other):
        from . import reductions
        return reductions.dot(self, other)

    def __matmul__(self, other):
        from . import reductions
        return reductions.matmul(self, other)

    def __rmatmul__(self, other):
        from . import reductions
        return reductions.matmul(other, self)

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


def ones_like(a, dtype=None) -> ndarray:
    return full(a.shape, 1, dtype or a.dtype)


def full_like(a, fill_value, dtype=None) -> ndarray:
    return full(a.shape, fill_value, dtype or a.dtype)


def copy(a) -> ndarray:
    return asarray(a).copy() if isinstance(a, ndarray) else array(a)


def arange(start, stop=None, step=1, dtype=None) -> ndarray:
    """numpy.arange: the dtype and length numpy gives, the values made on the device as
    numpy fills them (element 0 is start, 1 is start + step, then start + i * delta in the
    array's type, delta being the difference of the first two)."""
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise ZeroDivisionError("division by zero (arange's step)")
    dt = np.dtype(dtype) if dtype is not None else np.result_type(start, stop, step)
    if all(isinstance(v, numbers.Integral) for v in (start, stop, step)):
        n = len(range(int(start), int(stop), int(step)))
    else:
        n = max(0, int(np.ceil((stop - start) / step)))
    out = empty((n,), dt)
    if n:
        from .ufuncs import fill_arange
        fill_arange(out, start, step)
    return out


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None):
    """numpy.linspace: i * step + start computed in float64 (i / div * delta + start where
    the step is 0), then converted; the last element is ``stop`` when ``endpoint``."""
    num = operator.index(num)
    if num < 0:
        raise ValueError(f"Number of samples, {num}, must be non-negative.")
    div = (num - 1) if endpoint else num
    delta = float(stop) - float(start)
    step = delta / div if div > 0 else float("nan")
    dt = np.dtype(dtype) if dtype is not None else np.result_type(start, stop, float(num))
    out = empty((num,), dt)
    if num:
        from .ufuncs import fill_linspace
        # no step (one element with endpoint, or none): numpy computes i * delta + start
        fill_linspace(out, float(start), float(stop), step if div > 0 else delta,
                      div if div > 0 else 1, delta, endpoint and num > 1)
    return (out, step) if retstep else out


def reshape(a, newshape, order="C") -> ndarray:
    """A view with another shape (one dimension may be -1), as numpy's reshape of a
    C-contiguous array."""
    if order != "C":
        raise DptxError("dptx arrays are C-ordered: reshape(order='C') only")
    shape = _shape_with_inferred(newshape, a.size)
    return a._view(shape)


def ravel(a, order="C") -> ndarray:
    if order not in ("C", "K", "A"):
        raise DptxError("dptx arrays are C-ordered: ravel(order='C') only")
    return a._view((a.size,))


def expand_dims(a, axis) -> ndarray:
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    ndim = a.ndim + len(axes)
    axes = _axes(axes, ndim)
    shape, it = [], iter(a.shape)
    for k in range(ndim):
        shape.append(1 if k in axes else next(it))
    return a._view(tuple(shape))


def squeeze(a, axis=None) -> ndarray:
    return a.squeeze(axis)


def concatenate(arrays, axis=0, out=None, dtype=None) -> ndarray:
    """numpy.concatenate along ``axis`` (device to device copies of each part)."""
    arrays = [asarray(x) for x in arrays]
    if not arrays:
        raise ValueError("need at least one array to concatenate")
    ndim = arrays[0].ndim
    if ndim == 0:
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    ax = _axes((axis,), ndim)[0]
    for x in arrays:
        if x.ndim != ndim or any(x.shape[k] != arrays[0].shape[k] for k in range(ndim) if k != ax):
            raise ValueError("all the input array dimensions except for the concatenation "
                             "axis must match exactly")
    dt = np.dtype(dtype) if dtype is not None else np.result_type(*[x.dtype for x in arrays])
    shape = list(arrays[0].shape)
    shape[ax] = sum(x.shape[ax] for x in arrays)
    result = out if out is not None else empty(tuple(shape), dt)
    outer = int(np.prod(shape[:ax], dtype=np.int64))
    at = 0
    for x in arrays:
        part = x if x.dtype == dt else x.astype(dt)
        inner = int(np.prod(part.shape[ax:], dtype=np.int64))
        row = int(np.prod(shape[ax:], dtype=np.int64))
        flat, src = result.reshape(-1), part.reshape(-1)
        for o in range(outer):      # one contiguous copy per outer index
            if inner:
                flat[o * row + at:o * row + at + inner] = src[o * inner:(o + 1) * inner]
        at += inner
    return result


def _shape_with_inferred(newshape, size: int) -> tuple:
    if isinstance(newshape, numbers.Integral):
        newshape = (newshape,)
    newshape = tuple(int(d) for d in newshape)
    unknown = [k for k, d in enumerate(newshape) if d == -1]
    if len(unknown) > 1:
        raise ValueError("can only specify one unknown dimension")
    known = int(np.prod([d for d in newshape if d != -1], dtype=np.int64))
    if unknown:
        if known == 0 or size % known:
            raise ValueError(f"cannot reshape array of size {size} into shape {newshape}")
        newshape = tuple(size // known if d == -1 else d for d in newshape)
    if int(np.prod(newshape, dtype=np.int64)) != size or any(d < 0 for d in newshape):
        raise ValueError(f"cannot reshape array of size {size} into shape {newshape}")
    return newshape


def _axes(axis, ndim: int) -> tuple:
    """Axes normalized as numpy does (negative counted from the end), with numpy's error."""
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    out = []
    for a in axes:
        a = operator.index(a)
        if not -ndim <= a < ndim:
            raise np.exceptions.AxisError(a, ndim)
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise ValueError("repeated axis")
    return tuple(out)
