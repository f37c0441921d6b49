"""``a.flat``: numpy's flat iterator over a dptx array, its elements in C order whatever the
layout. Indexing reads a copy (``a.flat[2:5]``, ``a.flat[[0, 3]]``, ``a.flat[mask]``; an
integer, the element), assignment writes through (``a.flat[::2] = 0``; a value shorter than
the selection repeats, as numpy's), both on the devices; iteration reads the array back
once and yields its elements."""
from __future__ import annotations

import numpy as np

from .._core.selection import flatnonzero
from ..runtime.ndarray import may_share_memory, ndarray, ravel
from .indexing import put


class flatiter:
    """numpy's ``numpy.flatiter`` (CuPy's ``cupy.flatiter``) of a dptx array."""

    def __init__(self, base: ndarray):
        self.base = base
        self._host = None       # the values, read back when iteration starts
        self.index = 0          # the flat position of the next element iteration yields

    def __len__(self) -> int:
        return self.base.size

    def __repr__(self):
        return f"<dptx.flatiter of {self.base.shape} {self.base.dtype}>"

    @property
    def coords(self) -> tuple:
        """The N-dimensional index of the next element (numpy's ``coords``)."""
        return tuple(int(i) for i in np.unravel_index(self.index, self.base.shape)) \
            if self.index < self.base.size else tuple(self.base.shape)

    def copy(self) -> ndarray:
        """A 1-D copy of the elements in C order (numpy's ``flat.copy()``)."""
        return self.base.flatten()

    def __array__(self, dtype=None, copy=None):
        out = self.base.get().reshape(-1)
        return out if dtype is None else out.astype(dtype, copy=False)

    def __iter__(self):
        return self

    def __next__(self):
        if self.index >= self.base.size:
            raise StopIteration
        if self._host is None:
            self._host = self.base.get().reshape(-1)
        self.index += 1
        return self._host[self.index - 1]

    @staticmethod
    def _key(key):
        if isinstance(key, tuple) and len(key) == 1:
            key = key[0]
        return slice(None) if key is Ellipsis else key

    def __getitem__(self, key):
        key = self._key(key)
        flat = ravel(self.base)
        out = flat[key]
        if isinstance(out, ndarray) and out.ndim and may_share_memory(out, self.base):
            out = out.copy()        # numpy's flat indexing gives a new array, never a view
        return out

    def __setitem__(self, key, value) -> None:
        a = self.base
        key = self._positions(self._key(key))
        shape = self._selected_shape(key, a.size)
        count = int(np.prod(shape, dtype=np.int64))
        size = value.size if isinstance(value, ndarray) else np.size(value)
        if shape == () and np.ndim(value) != 0:
            raise ValueError("Error setting single item of array (a.flat[i] takes a scalar, "
                             f"not a value of shape {np.shape(value)})")
        if size in (1, count):
            # the common case, all on the devices: into a view of a C-contiguous array, or
            # into the flat copy of another, written back in its layout
            value = value.reshape(shape if size == count else ()) if isinstance(
                value, ndarray) else np.reshape(value, shape if size == count else ())
            flat = ravel(a)
            flat[key] = value
            if not may_share_memory(flat, a):
                a[...] = flat.reshape(a.shape)
            return
        # a value of another length repeats (or is cut) over the selection, as numpy's put
        put(a, np.arange(*key.indices(a.size)) if isinstance(key, slice) else key, value)

    @staticmethod
    def _positions(key):
        """A boolean mask as the flat positions it selects (the assignment's count)."""
        if isinstance(key, ndarray) and key.dtype == np.bool_:
            return flatnonzero(key)
        if isinstance(key, (np.ndarray, list)) and np.asarray(key).dtype == np.bool_:
            return np.flatnonzero(key)
        return key

    @staticmethod
    def _selected_shape(key, n: int) -> tuple:
        """The shape ``arange(n)[key]`` has, without making it."""
        if isinstance(key, slice):
            return (len(range(*key.indices(n))),)
        if isinstance(key, (int, np.integer)):
            return ()
        if isinstance(key, ndarray):
            return key.shape
        if isinstance(key, (np.ndarray, list, tuple)):
            return np.shape(key)
        raise IndexError("only integers, slices (`:`), ellipsis (`...`) and integer or "
                         "boolean arrays are valid indices of a.flat")


def flat_of(self) -> flatiter:
    return flatiter(self)


def set_flat(self, value) -> None:
    """``a.flat = v``: every element, ``v`` repeated in C order (numpy's)."""
    flatiter(self)[...] = value
