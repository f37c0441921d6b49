"""``dptx.ndarray``: a C-contiguous device array that lives on the Dask cluster, following
CuPy's conventions.

The bytes of an array are a ``DeviceBuffer`` (``dptx.runtime.buffers``): its current version
is a set of pieces, byte ranges held by futures on the workers that made them (DESIGN.md
point 6). Memcpys are operations of the stream like launches (asynchronous in stream order;
``get()`` synchronizes).
"""
from __future__ import annotations

import numbers
import operator

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ..errors import DptxError
from .buffers import DeviceBuffer
from .device_addresses import MemoryPointer
from .layout import (c_strides, check_order, copy_order, is_c_contiguous, is_f_contiguous,
                     new_strides, same_layout)
from .stream import stream_for


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
        raise ValueError("negative dimensions are not allowed")     # (numpy's error)
    return shape


def _stand_in(shape: tuple, strides: tuple, dtype: np.dtype) -> np.ndarray:
    """A numpy array with this shape and these strides but no memory of its size, for numpy
    to compute views on (indexing, transposes, reshapes); nothing in it is ever read."""
    if any(n == 0 for n in shape):
        return np.empty(shape, dtype)
    return as_strided(np.empty(1, dtype), shape=shape, strides=strides, writeable=False)


def _address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def _is_basic_item(k) -> bool:
    """An index numpy treats as basic (a view): an integer, a slice, None or ``...``. A bool
    (``a[True]``) or any sequence makes numpy index by advanced rules, which copy: on the
    stand-in that copy would be a whole array of the client's memory and its offset
    meaningless."""
    if k is None or k is Ellipsis or isinstance(k, slice):
        return True
    if isinstance(k, (ndarray, np.ndarray)):        # a 0-d integer array is an integer
        return k.ndim == 0 and k.dtype.kind in "iu"
    if isinstance(k, (bool, np.bool_)):
        return False
    return hasattr(k, "__index__")


def _is_bool_scalar(k) -> bool:
    return isinstance(k, (bool, np.bool_)) or \
        isinstance(k, (ndarray, np.ndarray)) and k.ndim == 0 and k.dtype == np.bool_


def _boolean_scalars(key, ndim: int):
    """numpy's boolean scalar indices in an otherwise basic key (``a[True]``, ``m[:, False]``):
    (the key without them, where their axis goes in the result, its length: 1 if all are
    True, else 0), or None when the key has none. numpy takes them as 0-d masks, advanced
    indices, with any integers of the key: their one axis goes where the first of them
    stands when they are next to each other in the key, else first."""
    items = key if isinstance(key, tuple) else (key,)
    if not any(_is_bool_scalar(k) for k in items):
        return None
    # (integers count as advanced indices alongside them)
    advanced = [i for i, k in enumerate(items)
                if not isinstance(k, (slice, type(None), type(Ellipsis)))]
    rest = tuple(k for k in items if not _is_bool_scalar(k))
    length = int(all(bool(k) for k in items if _is_bool_scalar(k)))
    if advanced != list(range(advanced[0], advanced[-1] + 1)):
        return rest, 0, length
    consumed = sum(1 for k in rest if k is not None and k is not Ellipsis)
    position = 0
    for k in items[:advanced[0]]:
        if k is Ellipsis:
            position += ndim - consumed
        elif k is None or isinstance(k, slice):
            position += 1
    return rest, position, length


def _basic_key(key):
    """``key`` checked to be basic, with 0-d integer arrays as the integers they are (numpy
    indexes by them as by arrays, which copy)."""
    items = key if isinstance(key, tuple) else (key,)
    if not all(_is_basic_item(k) for k in items):
        bad = next(k for k in items if not _is_basic_item(k))
        if not isinstance(bad, (bool, np.bool_, ndarray, np.ndarray, list, tuple)):
            raise IndexError("only integers, slices (`:`), ellipsis (`...`), numpy.newaxis "
                             "(`None`) and integer or boolean arrays are valid indices")
        raise DptxError(f"dptx arrays take integers, slices, None, ..., integer arrays and "
                        f"boolean masks as indices, not "
                        f"{type(bad).__name__} {bad!r:.60} (boolean scalars are not supported)")
    if any(isinstance(k, (ndarray, np.ndarray)) for k in items):
        items = tuple(operator.index(k) if isinstance(k, (ndarray, np.ndarray)) else k
                      for k in items)
        return items if isinstance(key, tuple) else items[0]
    return key


class ndarray:
    """A device array. Create one with ``dptx.asarray``, ``dptx.zeros``... and read it back with
    ``get()`` or ``numpy.asarray``.

    This class body is the array's storage: its buffer, shape, strides and views, copies and
    transfers, basic indexing. The rest of its surface generates kernels, a layer above this
    one, and is attached by ``dptx._ndarray_surface``, whose ``SURFACE`` table lists every
    name with what implements it: operators, numpy's methods (``sum``, ``sort``, ``astype``,
    ``round``...), ``__array_ufunc__`` and ``__array_function__``, printing, pickling and
    files, ``flat``, ``device``, and the two hooks below."""

    # filled in from SURFACE: dst[...] = src on the devices (the array API's copy kernel,
    # which reads and writes through strides), and the module that indexes by masks and
    # index arrays (its ``handles(key)``, ``getitem(a, key)`` and ``setitem(a, key, value)``)
    _device_assign = None
    _advanced_indexing = None

    __array_priority__ = 100
    # says "an array on the cluster" to the layers below, which do not import this module
    # (launch_config.is_cluster_array: the in-process launch refuses one with a clear error)
    __dptx_cluster_array__ = True

    _strides = None     # byte strides of a strided view; None: C-contiguous

    def __init__(self, shape, dtype=np.float64, _buffer: DeviceBuffer = None,
                 _offset: int = 0, _base: "ndarray" = None, _strides: tuple = None, *,
                 strides=None, order="C"):
        self._shape = _shape(shape)
        self._dtype = _dtype(dtype)
        nbytes = int(np.prod(self._shape, dtype=np.int64)) * self._dtype.itemsize
        if strides is not None or order not in ("C", None):
            # numpy's and CuPy's constructor: an array of these strides (or order "F") over
            # a new buffer of the shape's size (numpy's error where they reach past it)
            if _strides is not None:
                raise TypeError("ndarray(): give strides= or _strides, not both")
            order = check_order(order)
            _strides = tuple(int(s) for s in strides) if strides is not None else \
                new_strides(self._shape, self._dtype.itemsize, order)
            if len(_strides) != len(self._shape):
                raise ValueError("strides, if given, must be the same length as shape")
            reach = sum((n - 1) * abs(s) for n, s in zip(self._shape, _strides) if n) + \
                self._dtype.itemsize
            if nbytes and (reach > nbytes or any(s < 0 for s in _strides)):
                raise ValueError("strides is incompatible with shape of requested array and "
                                 "size of buffer")
        if _buffer is None:
            _buffer = DeviceBuffer.filled(nbytes, b"\0")
        self._buffer = _buffer
        self._offset = int(_offset)     # a view: where its element [0, ..., 0] is in the buffer
        self._base = _base              # the array it views (None: it owns its buffer)
        if _strides is not None and not is_c_contiguous(self._shape, tuple(_strides),
                                                        self._dtype.itemsize):
            self._strides = tuple(int(s) for s in _strides)
        lo, hi = self._range
        if (_base is None and _buffer.nbytes != nbytes) or not 0 <= lo <= hi <= _buffer.nbytes:
            raise DptxError(f"buffer of {_buffer.nbytes} bytes does not hold shape "
                            f"{self._shape} of {self._dtype} at byte {_offset}"
                            + (f" with strides {self._strides}" if self._strides else ""))

    # -- attributes ----------------------------------------------------------------------------
    def _set_shape(self, shape) -> None:
        """``a.shape = s``, numpy's and CuPy's: this array becomes its view of shape ``s``
        (numpy's errors where the shape does not fit, or where only a copy could have it)."""
        view = reshape(self, shape)         # (a copy where no view has the shape: refused)
        if view._buffer is not self._buffer:
            raise AttributeError("Incompatible shape for in-place modification. Use "
                                 "`.reshape()` to make a copy with the desired shape.")
        self._shape, self._offset, self._strides = view._shape, view._offset, view._strides

    shape = property(lambda self: self._shape, _set_shape)
    dtype = property(lambda self: self._dtype)
    ndim = property(lambda self: len(self._shape))
    size = property(lambda self: int(np.prod(self._shape, dtype=np.int64)))
    itemsize = property(lambda self: self._dtype.itemsize)
    nbytes = property(lambda self: self.size * self._dtype.itemsize)
    base = property(lambda self: self._base, doc="The array this one views, or None (numpy's "
                    "and CuPy's ``base``).")

    @property
    def strides(self) -> tuple:
        """Bytes between consecutive elements along each axis (numpy's and CuPy's)."""
        if self._strides is not None:
            return self._strides
        return c_strides(self._shape, self._dtype.itemsize)

    @property
    def data(self) -> MemoryPointer:
        """A pointer to the array's first element, as CuPy's ``a.data``: ``a.data.ptr`` is a
        device address a kernel argument may carry (a pointer parameter, a field of a struct
        passed by value: ``np.array((a.data.ptr, n), dtype=[("p", "u8"), ("n", "i4")])``),
        valid while the array lives."""
        return MemoryPointer(self._buffer, self._offset)

    def data_ptr(self) -> int:
        """``a.data.ptr``, by torch's name, which Triton's launcher reads of its arguments."""
        return self.data.ptr

    @property
    def _contiguous(self) -> bool:
        return self._strides is None

    @property
    def flags(self) -> "Flags":
        return Flags(self)

    @property
    def _range(self) -> tuple:
        """The bytes of the buffer its elements lie in: [lo, hi) (for a strided view, the
        span from its lowest to its highest element, gaps included)."""
        if self._strides is None or self.size == 0:
            return self._offset, self._offset + self.nbytes
        lo = self._offset + sum((n - 1) * s for n, s in zip(self._shape, self._strides) if s < 0)
        hi = self._offset + sum((n - 1) * s for n, s in zip(self._shape, self._strides) if s > 0)
        return lo, hi + self.itemsize

    def _span(self) -> tuple:
        """(a contiguous 1-D array of the bytes of ``_range``, the index of element [0, ..., 0]
        in it): what a generated kernel receives for a strided view, indexing it with the
        view's element strides."""
        lo, hi = self._range
        span = ndarray(((hi - lo) // self.itemsize,), self._dtype, self._buffer, lo,
                       self if self._base is None else self._base)
        return span, (self._offset - lo) // self.itemsize

    def _stand_in(self) -> np.ndarray:
        return _stand_in(self._shape, self.strides, self._dtype)

    def _like(self, stand_in: np.ndarray, view: np.ndarray) -> "ndarray":
        """The view of this array that numpy made as ``view`` of ``stand_in`` (this array's
        stand-in): its shape, dtype, strides and offset on the same buffer."""
        offset = self._offset
        if view.size:
            offset += _address(view) - _address(stand_in)
        strides = view.strides if view.size else None
        return ndarray(view.shape, view.dtype, self._buffer, offset,
                       self if self._base is None else self._base, strides)

    @property
    def _repeats_elements(self) -> bool:
        """Whether two of its indices name one element (a stride of 0 along an axis longer
        than 1: ``broadcast_to``): such a view is read-only, as numpy's, since parallel
        writes through it would race for the element."""
        return self._strides is not None and \
            any(s == 0 and n > 1 for n, s in zip(self._shape, self._strides))

    def _describe_view(self) -> str:
        return (f"a view of {self.nbytes} bytes at byte {self._offset} of a "
                f"{self._buffer.nbytes}-byte array")

    def __len__(self):
        if not self._shape:
            raise TypeError("len() of a 0-d array")
        return self._shape[0]

    # -- data movement -------------------------------------------------------------------------
    def get(self, stream=None, order="C", out=None) -> np.ndarray:
        """Copy to the host (synchronizes: every stream, as CUDA's legacy default stream;
        ``stream`` is taken for CuPy's signature), as a new numpy array laid out in ``order``
        ("C", "F", or "A": F where this array is F-contiguous), or into ``out``, a numpy
        array of the same shape and dtype (CuPy's ``get``)."""
        stream_for(stream)
        order = check_order(order, "CFA")
        if order == "A":
            order = "F" if self.flags.f_contiguous and not self._contiguous else "C"
        if out is not None:
            _check_out(out, self)
        if not self.nbytes:
            result = np.empty(self._shape, self._dtype, order=order)
        else:
            lo, hi = self._range
            raw = self._buffer.read(lo, hi)
            # a strided view: its span comes back, its elements are picked out here
            result = np.ndarray(self._shape, self._dtype, raw, self._offset - lo,
                                self.strides).copy(order=order)
        if out is not None:
            np.copyto(out, result)
            return out
        return result

    def set(self, arr, stream=None) -> None:
        """Copy a host array of the same shape and dtype into this array (or view), in
        ``stream`` (default: the current stream)."""
        arr = np.asarray(arr)
        if arr.shape != self._shape or arr.dtype != self._dtype:
            raise DptxError(f"set() needs an array of shape {self._shape} and dtype "
                            f"{self._dtype}, got shape {arr.shape} and dtype {arr.dtype}")
        if not self.nbytes:
            return
        if self._strides is None:
            self._buffer.upload(np.ascontiguousarray(arr), at=self._offset, stream=stream)
        else:   # into a strided view: to the devices, then scattered there
            _strided_assign(self, ndarray(arr.shape, arr.dtype, DeviceBuffer.from_host(
                np.ascontiguousarray(arr))))

    def copy(self, order="C", stream=None) -> "ndarray":
        """A copy made on the devices, laid out in ``order`` (numpy's ``ndarray.copy``: "C" by
        default; "F", "A": F where this array is F-contiguous, "K": as this array). Where
        source and copy are laid out alike and dense, a copy of the bytes."""
        strides = new_strides(self._shape, self.itemsize, order, self)
        lo, hi = self._range
        if same_layout(self._shape, strides, self.strides) and hi - lo == self.nbytes and \
                self._offset == lo:
            return ndarray(self._shape, self._dtype, self._buffer.copy(lo, hi, stream=stream),
                           _strides=strides)
        out = ndarray(self._shape, self._dtype, _strides=strides)
        _strided_assign(out, self)
        return out

    def fill(self, value, stream=None) -> None:
        if not self.nbytes:
            return
        if self._strides is None:
            self._buffer.fill(np.array(value, dtype=self._dtype).tobytes(), *self._range,
                              stream=stream)
        else:
            _strided_assign(self, np.array(value, dtype=self._dtype)[()])

    # -- views ---------------------------------------------------------------------------------
    def __getitem__(self, key) -> "ndarray":
        """Basic indexing, as numpy's: a view over the same bytes (``a[500:]``, ``m[3]``,
        ``m[::2, 1:]``, ``a[::-1]``, ``m[:, None]``); ``a[i, j]`` is a 0-d view, as CuPy's.
        A contiguous view reaches a kernel as the buffer's pointer plus its offset (CUDA's
        ``d_ptr + n``); a strided one only through the array API (a kernel takes contiguous
        arrays, as CuPy's RawKernel). Integer arrays (``a[idx]``, ``m[rows, cols]``) and a
        boolean mask of ``a``'s shape make a new array on the devices (``indexing``)."""
        advanced = self._advanced_indexing
        if advanced is not None and advanced.handles(key):
            return advanced.getitem(self, key)
        scalars = _boolean_scalars(key, self.ndim)
        if scalars is not None:
            # numpy's copy, with the boolean scalars' axis of length 1 (or 0)
            return self._with_boolean_axis(scalars).copy()
        key = _basic_key(key)
        probe = self._stand_in()
        try:
            view = probe[key]
        except IndexError as exc:
            raise IndexError(f"{exc} (an array of shape {self._shape})") from None
        if not isinstance(view, np.ndarray):        # all integers: numpy gives a scalar
            view = probe[key + (Ellipsis,) if isinstance(key, tuple) else (key, Ellipsis)]
        return self._like(probe, view)

    def _with_boolean_axis(self, scalars) -> "ndarray":
        """The view a key with boolean scalars selects (``_boolean_scalars``' answer)."""
        rest, position, length = scalars
        view = self[rest] if rest else self[...]
        at = (slice(None),) * position
        return view[at + (None,)] if length else view[at + (None,)][at + (slice(0, 0),)]

    def __setitem__(self, key, value) -> None:
        """``a[100:200] = 0`` (a scalar fills the view), or a host or dptx array that
        broadcasts to the view's shape (a dptx array is copied on the devices);
        ``a[idx] = value`` and ``a[mask] = scalar`` on the devices (``indexing``)."""
        advanced = self._advanced_indexing
        if advanced is not None and advanced.handles(key):
            advanced.setitem(self, key, value)
            return
        scalars = _boolean_scalars(key, self.ndim)
        view = self[key] if scalars is None else self._with_boolean_axis(scalars)
        if isinstance(value, ndarray):
            # device to device, broadcast and converted as numpy assigns: one launch of the
            # array API's copy kernel (dptx._ndarray_surface installs it; without it, via the host)
            if self._device_assign is not None:
                self._device_assign(view, value)
                return
            value = value.get()
        if np.ndim(value) == 0:
            view.fill(value)
        else:
            view.set(np.broadcast_to(np.asarray(value, dtype=self._dtype), view.shape))

    # -- Python scalars ------------------------------------------------------------------------
    def __bool__(self):
        if self.size == 0:
            raise ValueError("The truth value of an empty array is ambiguous. Use "
                             "`array.size > 0` to check that an array is not empty.")
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

    def item(self, *args):
        """numpy's ``item``: one element as a Python scalar (of a size-1 array, at a flat
        index, or at a multi-index), read back."""
        if not args:
            return self._scalar("item").item()
        if len(args) == 1 and not isinstance(args[0], tuple):
            i = operator.index(args[0])
            if not -self.size <= i < self.size:
                raise IndexError(f"index {i} is out of bounds for size {self.size}")
            return self.reshape(-1)[i].get()[()].item()
        key = args[0] if len(args) == 1 else args
        if len(key) != self.ndim:
            raise ValueError("incorrect number of indices for array")
        return self[tuple(operator.index(k) for k in key)].get()[()].item()

    def tolist(self):
        """numpy's ``tolist``: nested Python lists of Python scalars (read back)."""
        return self.get().tolist()

    def tobytes(self, order="C") -> bytes:
        """numpy's ``tobytes``: the elements' bytes in ``order`` ("C"; "F"; "A": F where this
        array is F-contiguous; "K" is C, as numpy's), read back."""
        order = check_order(order)
        return self.get(order="A").tobytes("C" if order == "K" else order)

    def __iter__(self):
        """Over the first axis, each item a view (a 0-d array for a 1-D array), as CuPy's."""
        if not self._shape:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self._shape[0]))

    def __copy__(self):
        return self.copy()

    def __deepcopy__(self, memo):
        return self.copy()

    def view(self, dtype=None) -> "ndarray":
        """numpy's ``view(dtype)``: the same bytes read as another type (the last axis
        rescaled where the item sizes differ, numpy's rule and errors)."""
        if dtype is None:
            dtype = self._dtype
        if isinstance(dtype, type) and issubclass(dtype, ndarray):
            return self[...]
        probe = self._stand_in()
        return self._like(probe, probe.view(np.dtype(dtype)))

    def _scalar(self, what: str):
        if self.size != 1:
            # numpy's errors: item() a ValueError, int()/float()... a TypeError
            error = ValueError if what == "item" else TypeError
            raise error(("can only convert an array of size 1 to a Python scalar"
                         if what == "item" else
                         "only arrays of size 1 can be converted to Python scalars")
                        + f" ({what}() of an array of shape {self._shape})")
        return self.get().reshape(())[()]

    # -- shapes: views of the same (contiguous) bytes ----------------------------------------
    def reshape(self, *shape, order="C", copy=None) -> "ndarray":
        return reshape(self, shape[0] if len(shape) == 1 and not isinstance(
            shape[0], numbers.Integral) else shape, order=order, copy=copy)

    def ravel(self, order="C") -> "ndarray":
        return ravel(self, order)

    def flatten(self, order="C") -> "ndarray":
        flat = ravel(self, order)
        return flat.copy() if flat._buffer is self._buffer else flat

    def squeeze(self, axis=None) -> "ndarray":
        axes = _axes(axis, self.ndim) if axis is not None else \
            tuple(k for k, d in enumerate(self._shape) if d == 1)
        for k in axes:
            if self._shape[k] != 1:
                raise ValueError("cannot select an axis to squeeze out which has size not "
                                 "equal to one")
        probe = self._stand_in()
        return self._like(probe, probe.squeeze(axes))

    def _view(self, shape) -> "ndarray":
        """This array's elements in C order with another shape: a view where numpy would
        make one (always, for a contiguous array), else a contiguous copy."""
        if self._strides is None:
            return ndarray(shape, self._dtype, self._buffer, self._offset,
                           self if self._base is None else self._base)
        probe = self._stand_in()
        try:
            return self._like(probe, np.reshape(probe, shape, copy=False))
        except ValueError:      # numpy would copy too
            return self.copy()._view(shape)

    @property
    def T(self) -> "ndarray":
        return self.transpose()

    @property
    def mT(self) -> "ndarray":
        """The transpose of the matrices of a stack (the last two axes swapped), numpy 2's
        and the array API's."""
        if self.ndim < 2:
            raise ValueError("matrix transpose with ndim < 2 is undefined")
        return self.swapaxes(-1, -2)

    def transpose(self, *axes) -> "ndarray":
        """A view with the axes permuted (reversed by default), as numpy's."""
        if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
            axes = axes[0]
        probe = self._stand_in()
        return self._like(probe, probe.transpose(axes or None))

    def swapaxes(self, axis1, axis2) -> "ndarray":
        probe = self._stand_in()
        return self._like(probe, probe.swapaxes(axis1, axis2))

    def __array__(self, dtype=None, copy=None):
        if copy is False:       # numpy 2's protocol: the values must come from the devices
            raise ValueError("Unable to avoid copy while creating an array as requested: a "
                             "dptx array's values are on the cluster (a.get() copies them)")
        a = self.get()
        return a if dtype is None else a.astype(dtype, copy=False)

    # (str, repr and format: dptx._io.formatting, installed with the array API)


# ----------------------------------------------------------------------------------------------
# creation, following CuPy / numpy names
# ----------------------------------------------------------------------------------------------
def array(obj, dtype=None, copy=True, order="K", subok=False, ndmin=0) -> ndarray:
    """numpy.array on the devices. A dptx array is copied (``copy=True``, or where the dtype
    or the layout ``order`` asks for it; ``copy=False`` then raises numpy 2's ValueError)
    on the devices; host data is uploaded (``copy=False`` cannot avoid that transfer, and
    asks nothing more). A copy is laid out as numpy lays out its own (``layout.copy_order``:
    "K" keeps the source's order of axes, "A" is F for an F-contiguous source, "C", "F");
    ``ndmin`` adds leading axes of length 1. ``subok`` is taken for numpy's signature."""
    order = check_order(order)
    if isinstance(obj, ndarray):
        dt = obj.dtype if dtype is None else np.dtype(dtype)
        out = obj
        if copy or dt != obj.dtype or not satisfies(obj, order):
            if copy is False:
                raise ValueError("Unable to avoid copy while creating an array as requested.")
            out = ndarray(obj.shape, dt, _strides=new_strides(
                obj.shape, dt.itemsize, copy_order(order, obj.dtype, dt), obj))
            out[...] = obj      # converted on the devices (numpy's astype conversions)
    else:
        # (lists and scalars become a new C or F array here; a numpy array is uploaded as it
        # lies where it is laid out as numpy's copy of it would be)
        host = obj if isinstance(obj, np.ndarray) else \
            np.array(obj, dtype=dtype, order="F" if order == "F" else "C")
        dt = _dtype(host.dtype if dtype is None else dtype)     # (refuses Python objects)
        order = copy_order(order, host.dtype, dt)
        if dt != host.dtype or not same_layout(host.shape, host.strides, new_strides(
                host.shape, dt.itemsize, order, host)):
            host = np.array(host, dtype=dt, order=order)
        out = _upload(host)
    if out.ndim < ndmin:
        probe = out._stand_in()
        out = out._like(probe, probe.reshape((1,) * (ndmin - out.ndim) + out.shape))
    return out


def satisfies(a, order: str) -> bool:
    """Whether ``a`` is laid out as ``order`` requires without a copy ("A" and "K": any)."""
    return order in "AK" or (a.flags.c_contiguous if order == "C" else a.flags.f_contiguous)


def _upload(host: np.ndarray) -> ndarray:
    """A device copy of a host array, in its layout where that is dense (C, F, or another
    order of its axes), else C."""
    perm = sorted(range(host.ndim), key=lambda k: -host.strides[k])
    packed = host.transpose(perm)
    if host.size and all(s > 0 for s in host.strides) and packed.flags.c_contiguous and \
            not host.flags.c_contiguous:
        return ndarray(host.shape, host.dtype, DeviceBuffer.from_host(packed), 0, None,
                       host.strides)
    host = np.ascontiguousarray(host) if host.ndim else host
    return ndarray(host.shape, host.dtype, DeviceBuffer.from_host(host))


def asarray(obj, dtype=None, order=None, *, copy=None) -> ndarray:
    """numpy.asarray: ``obj`` itself where it is a dptx array of ``dtype`` (and layout
    ``order``), else a copy; ``copy`` as numpy 2's (True: always; False: never, or raise)."""
    return array(obj, dtype, copy=copy, order="K" if order is None else order)


def empty(shape, dtype=np.float64, order="C") -> ndarray:
    # Device memory is zeroed rather than left undefined: results are reproducible, and a
    # chunk that writes part of its window keeps defined bytes in the rest. For initcheck
    # (dptx sanitize) its bytes are still unwritten: reading one before writing it is a bug.
    out = _new(shape, dtype, order)
    out._buffer.unwritten = [(0, out._buffer.nbytes)] if out._buffer.nbytes else []
    return out


def zeros(shape, dtype=np.float64, order="C") -> ndarray:
    return _new(shape, dtype, order)


def _new(shape, dtype, order="C", like=None) -> ndarray:
    """A new array of zeros laid out in ``order`` (following ``like`` for "A" and "K")."""
    shape, dt = _shape(shape), _dtype(dtype)
    return ndarray(shape, dt, _strides=new_strides(shape, dt.itemsize, order, like))


def full(shape, fill_value, dtype=None, order="C") -> ndarray:
    """numpy.full: ``fill_value`` converted as numpy's ``copyto(..., casting='unsafe')`` does
    (a float -1.5 fills a uint8 array with 255) and broadcast to ``shape``: a pattern
    repeated over the buffer where it is the shape's trailing part (any value in any layout
    for a scalar), else uploaded broadcast (or a dptx array's values, copied on the
    devices)."""
    return _full(shape, fill_value, dtype, order)


def _full(shape, fill_value, dtype=None, order="C", like=None) -> ndarray:
    shape = _shape(shape)
    if isinstance(fill_value, ndarray):
        out = _new(shape, fill_value.dtype if dtype is None else dtype, order, like)
        out[...] = fill_value
        return out
    dt = np.dtype(dtype) if dtype is not None else np.array(fill_value).dtype
    layout = new_strides(shape, _dtype(dt).itemsize, order, like)
    value = np.empty(np.shape(fill_value), dt)
    np.copyto(value, fill_value, casting="unsafe")
    trailing = value.reshape(value.shape[next((k for k, n in enumerate(value.shape) if n != 1),
                                              value.ndim):])
    if shape[len(shape) - trailing.ndim:] == trailing.shape and \
            (trailing.ndim == 0 or layout == c_strides(shape, dt.itemsize)):
        nbytes = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
        return ndarray(shape, dt, DeviceBuffer.filled(nbytes, np.ascontiguousarray(
            trailing).tobytes()), _strides=layout)
    try:
        host = np.broadcast_to(value, shape)
    except ValueError:
        def text(s):
            return "(" + ",".join(str(n) for n in s) + ("," if len(s) == 1 else "") + ")"
        raise ValueError(f"could not broadcast input array from shape {text(value.shape)} "
                         f"into shape {text(shape)}") from None
    out = ndarray(shape, dt, _strides=layout)
    out.set(host)
    return out


def ones(shape, dtype=np.float64, order="C") -> ndarray:
    return _full(shape, 1, dtype, order)


def _prototype(a):
    """What a ``*_like`` function reads the shape, dtype and layout of."""
    return a if isinstance(a, (ndarray, np.ndarray)) else np.asarray(a)


def empty_like(prototype, dtype=None, order="K", subok=None, shape=None) -> ndarray:
    """numpy.empty_like: ``prototype``'s shape (or ``shape``) and dtype (or ``dtype``), laid
    out in ``order`` ("K": as the prototype; "A": F where it is F-contiguous). Zeroed, as
    ``empty``. ``subok`` is taken for numpy's signature (dptx has no subclasses)."""
    a = _prototype(prototype)
    out = _new(a.shape if shape is None else shape, dtype or a.dtype, order, a)
    out._buffer.unwritten = [(0, out._buffer.nbytes)] if out._buffer.nbytes else []
    return out


def zeros_like(a, dtype=None, order="K", subok=None, shape=None) -> ndarray:
    return empty_like(a, dtype, order, subok, shape)


def asnumpy(a, stream=None, order="C", out=None) -> np.ndarray:
    """A host copy (CuPy's ``asnumpy``): of a dptx array, ``a.get(stream, order, out)``."""
    if isinstance(a, ndarray):
        return a.get(stream, order, out)
    result = np.asarray(a, order=order)
    if out is not None:
        _check_out(out, result)
        np.copyto(out, result)
        return out
    return result


def ones_like(a, dtype=None, order="K", subok=None, shape=None) -> ndarray:
    return full_like(a, 1, dtype, order, subok, shape)


def full_like(a, fill_value, dtype=None, order="K", subok=None, shape=None) -> ndarray:
    a = _prototype(a)
    return _full(a.shape if shape is None else shape, fill_value, dtype or a.dtype, order, a)


def copy(a, order="K", subok=False) -> ndarray:
    """numpy.copy: a new array with ``a``'s values, laid out in ``order`` ("K": as ``a``)."""
    return array(a, copy=True, order=order)


def may_share_memory(a, b, max_work=None) -> bool:
    """numpy.may_share_memory: whether two dptx arrays' spans of bytes in one buffer overlap
    (strided views with interleaved elements count as sharing: what an operation writing one
    while reading the other must treat as aliased, a copy too many, never one too few)."""
    if not isinstance(a, ndarray) or not isinstance(b, ndarray) or a._buffer is not b._buffer:
        return False
    (lo_a, hi_a), (lo_b, hi_b) = a._range, b._range
    return lo_a < hi_b and lo_b < hi_a and a.size > 0 and b.size > 0


def _order(a: ndarray, order, allowed: str) -> str:
    """numpy's ``order`` argument resolved to "C" or "F" (or "K" where allowed): "A" is F for
    an array that is F- and not C-contiguous."""
    if order is None:
        order = "C"
    if not isinstance(order, str) or order.upper() not in allowed:
        raise ValueError(f"order must be one of {', '.join(repr(c) for c in allowed)}, "
                         f"not {order!r}")
    order = order.upper()
    if order == "A":
        return "F" if a.flags.f_contiguous and not a._contiguous else "C"
    return order


def reshape(a, shape=None, order="C", *, newshape=None, copy=None) -> ndarray:
    """A view with another shape (one dimension may be -1) where numpy would make one, else a
    copy (always with ``copy=True``; an error where one is needed with ``copy=False``), as
    numpy 2's signature has it. ``order="F"`` reads and places the elements with the first
    index fastest: the transpose of the C-order reshape of the transpose to the reversed
    shape."""
    if shape is None:
        if newshape is None:
            raise TypeError("reshape() missing 1 required positional argument: 'shape'")
        shape = newshape
    if copy:
        return reshape(a.copy(), shape, order)
    if copy is False:
        result = reshape(a, shape, order)
        if result._buffer is not a._buffer:
            raise ValueError("Unable to avoid creating a copy while reshaping.")
        return result
    shape = _shape_with_inferred(shape, a.size)
    if _order(a, order, "CFA") == "F":
        return a.transpose()._view(shape[::-1]).transpose()
    return a._view(shape)


def ravel(a, order="C") -> ndarray:
    """numpy.ravel: a 1-D view where the elements already lie in that order, else a copy.
    "F" reads the first index fastest; "K" in the order of the strides (the largest
    outermost; a negative stride is read as it is, not reversed, as numpy's)."""
    order = _order(a, order, "CFAK")
    if order == "K":
        if a._contiguous:
            order = "C"
        else:
            axes = sorted(range(a.ndim), key=lambda k: -abs(a.strides[k]))
            return ravel(a.transpose(axes), "C")
    if order == "F":
        return ravel(a.transpose(), "C")
    return a._view((a.size,)) if a._contiguous else a.copy()._view((a.size,))


def transpose(a, axes=None) -> ndarray:
    return a.transpose(axes)


def swapaxes(a, axis1, axis2) -> ndarray:
    return a.swapaxes(axis1, axis2)


def ascontiguousarray(a, dtype=None) -> ndarray:
    """``a`` itself when it is C-contiguous (and of ``dtype``), else a C-contiguous copy; at
    least 1-D, as numpy's."""
    return array(a, dtype, copy=None, order="C", ndmin=1)


def asfortranarray(a, dtype=None) -> ndarray:
    """``a`` itself when it is F-contiguous (and of ``dtype``), else an F-contiguous copy
    (what a column-major kernel reads); at least 1-D, as numpy's."""
    return array(a, dtype, copy=None, order="F", ndmin=1)


def _check_out(out, like) -> None:
    """A host ``out`` for a device array's values: numpy, of its shape and dtype (CuPy's
    errors)."""
    if not isinstance(out, np.ndarray):
        raise TypeError(f"out must be a numpy.ndarray, got {type(out).__name__}")
    if out.shape != like.shape:
        raise ValueError(f"Shape mismatch: out has shape {out.shape}, the array {like.shape}")
    if out.dtype != like.dtype:
        raise TypeError(f"dtype mismatch: out is {out.dtype}, the array {like.dtype}")


class Flags:
    """numpy's and CuPy's ``a.flags``: c_contiguous, f_contiguous, owndata, writeable (False
    for a view that repeats elements, as numpy's ``broadcast_to``), aligned (the elements at
    multiples of the item's alignment: a view of bytes at an odd offset is not), and numpy's
    combinations (fnc, forc, behaved, carray, farray); ``flags["C"]`` and numpy's other
    names and letters."""

    def __init__(self, a: ndarray):
        shape, strides, size = a.shape, a.strides, a.itemsize
        self.c_contiguous = a._contiguous
        self.f_contiguous = is_f_contiguous(shape, strides, size)
        self.owndata = a.base is None
        self.writeable = not a._repeats_elements
        align = a.dtype.alignment
        self.aligned = a._offset % align == 0 and all(
            s % align == 0 for s, n in zip(strides, shape) if n > 1)
        self.writebackifcopy = False
        self.fnc = self.f_contiguous and not self.c_contiguous
        self.forc = self.f_contiguous or self.c_contiguous
        self.behaved = self.aligned and self.writeable
        self.carray = self.behaved and self.c_contiguous
        self.farray = self.behaved and self.f_contiguous and not self.c_contiguous

    # numpy's keys of ``flags[...]``: their names, letters and other spellings
    _KEYS = {"C_CONTIGUOUS": "c_contiguous", "C": "c_contiguous", "CONTIGUOUS": "c_contiguous",
             "F_CONTIGUOUS": "f_contiguous", "F": "f_contiguous", "FORTRAN": "f_contiguous",
             "OWNDATA": "owndata", "O": "owndata", "WRITEABLE": "writeable", "W": "writeable",
             "ALIGNED": "aligned", "A": "aligned", "WRITEBACKIFCOPY": "writebackifcopy",
             "X": "writebackifcopy", "FNC": "fnc", "FORC": "forc", "BEHAVED": "behaved",
             "B": "behaved", "CARRAY": "carray", "CA": "carray", "FARRAY": "farray",
             "FA": "farray"}

    def __getitem__(self, name):
        key = self._KEYS.get(name.upper()) if isinstance(name, str) else None
        if key is None:
            raise KeyError(f"Unknown flag {name!r}")
        return getattr(self, key)

    def __repr__(self):
        return (f"  C_CONTIGUOUS : {self.c_contiguous}\n  F_CONTIGUOUS : "
                f"{self.f_contiguous}\n  OWNDATA : {self.owndata}\n  WRITEABLE : "
                f"{self.writeable}\n  ALIGNED : {self.aligned}\n  WRITEBACKIFCOPY : "
                f"{self.writebackifcopy}")


def check_writeable(a: ndarray) -> None:
    """numpy's error for a write into a read-only view."""
    if a._repeats_elements:
        raise ValueError("assignment destination is read-only (a view that repeats elements, "
                         "as broadcast_to makes: copy it first)")


def _strided_assign(dst: ndarray, src) -> None:
    """dst[...] = src on the devices (src a dptx array or a scalar): the array API's copy
    kernel, which reads and writes through strides."""
    if dst._device_assign is None:
        raise DptxError("strided views need the array API (import dptx)")
    dst._device_assign(dst, src)


def expand_dims(a, axis) -> ndarray:
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    axes = _axes(axes, a.ndim + len(axes))
    probe = a._stand_in()
    return a._like(probe, np.expand_dims(probe, axes))


def squeeze(a, axis=None) -> ndarray:
    return a.squeeze(axis)


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
