"""Files, text and pickles, as CuPy has them: numpy reads and writes the host side (``.npy``
and ``.npz`` files, text, raw bytes), dptx moves the arrays: ``load``/``loadtxt``/
``genfromtxt``/``fromfile``/``fromstring``/``fromiter`` upload what numpy read (an ``.npz``
file's arrays one by one as they are asked for), ``save``/``savez``/``savez_compressed``/
``savetxt`` and ``ndarray.tofile`` read dptx arrays back to write them. A pickled dptx array
carries its values (``ndarray.__reduce__``): unpickled, it is a new array on the cluster of
the process that unpickles it, as a pickled CuPy array comes back on the current device.
Files and text are host things: this is the one place where their bytes pass through
numpy, explicitly, as they would in any CuPy program."""
from __future__ import annotations

import asyncio
import pickle
import sys

import numpy as np

from ..runtime.ndarray import asarray, ndarray

__all__ = ["fromfile", "fromiter", "fromstring", "genfromtxt", "load", "loadtxt", "save",
           "savetxt", "savez", "savez_compressed"]


def _host(a):
    """A dptx array's values on the host (anything else as it is)."""
    return a.get(order="A") if isinstance(a, ndarray) else a


def _upload(a):
    """numpy's result on the devices; numpy's objects that are not arrays as they are."""
    return asarray(a) if isinstance(a, np.ndarray) else a


class NpzFile:
    """What ``load`` gives for an ``.npz`` file (numpy's ``NpzFile``, CuPy's wrapper): each
    array uploaded when it is asked for (``f["x"]``), ``files``, a context manager."""

    def __init__(self, npz_file):
        self.npz_file = npz_file

    @property
    def files(self) -> list:
        return self.npz_file.files

    def __getitem__(self, key):
        return _upload(self.npz_file[key])

    def __contains__(self, key) -> bool:
        return key in self.npz_file

    def __iter__(self):
        return iter(self.npz_file)

    def __len__(self) -> int:
        return len(self.npz_file)

    def keys(self):
        return self.npz_file.keys()

    def close(self) -> None:
        self.npz_file.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return f"<dptx.NpzFile of {self.npz_file!r}>"


def load(file, mmap_mode=None, allow_pickle=False, fix_imports=True, encoding="ASCII", *,
         max_header_size=10000):
    """numpy.load onto the devices: a ``.npy`` file's array uploaded, an ``.npz`` file as an
    ``NpzFile`` (each array uploaded when read), a pickle as numpy gives it."""
    obj = np.load(file, mmap_mode, allow_pickle, fix_imports, encoding,
                  max_header_size=max_header_size)
    if isinstance(obj, np.lib.npyio.NpzFile):
        return NpzFile(obj)
    return _upload(obj)


def save(file, arr, allow_pickle=True, **kwargs) -> None:
    """numpy.save of a dptx array's values (a ``.npy`` file numpy and CuPy read)."""
    np.save(file, _host(arr), allow_pickle, **kwargs)


def savez(file, *args, allow_pickle=True, **kwds) -> None:
    """numpy.savez of dptx (or numpy) arrays."""
    np.savez(file, *[_host(a) for a in args], allow_pickle=allow_pickle,
             **{k: _host(v) for k, v in kwds.items()})


def savez_compressed(file, *args, allow_pickle=True, **kwds) -> None:
    """numpy.savez_compressed of dptx (or numpy) arrays."""
    np.savez_compressed(file, *[_host(a) for a in args], allow_pickle=allow_pickle,
                        **{k: _host(v) for k, v in kwds.items()})


def savetxt(fname, X, *args, **kwargs) -> None:
    """numpy.savetxt of a dptx array's values (numpy's arguments and text)."""
    np.savetxt(fname, _host(X), *args, **kwargs)


def loadtxt(*args, **kwargs):
    """numpy.loadtxt onto the devices (numpy's arguments; a tuple of arrays for
    ``unpack=True`` with several columns)."""
    out = np.loadtxt(*args, **kwargs)
    return tuple(_upload(a) for a in out) if isinstance(out, tuple) else _upload(out)


def genfromtxt(*args, **kwargs):
    """numpy.genfromtxt onto the devices (numpy's arguments). Its masked arrays
    (``usemask=True``) and records (``names=``) have no dptx form: numpy's error names the
    dtype dptx cannot hold."""
    out = np.genfromtxt(*args, **kwargs)
    if isinstance(out, np.ma.MaskedArray):
        raise TypeError("dptx.genfromtxt: usemask=True gives a masked array, which dptx "
                        "arrays cannot hold; read it with numpy.genfromtxt")
    return tuple(_upload(a) for a in out) if isinstance(out, tuple) else _upload(out)


def fromfile(file, dtype=float, count=-1, sep="", offset=0, *, like=None):
    """numpy.fromfile onto the devices."""
    return _upload(np.fromfile(file, dtype, count, sep, offset))


def fromstring(string, dtype=float, count=-1, *, sep, like=None):
    """numpy.fromstring (text with ``sep``; numpy 2 has no binary mode) onto the devices."""
    return _upload(np.fromstring(string, dtype, count, sep=sep))


def fromiter(iter, dtype, count=-1, *, like=None):
    """numpy.fromiter onto the devices (the iterable is consumed on the host)."""
    return _upload(np.fromiter(iter, dtype, count))


# -- ndarray methods ------------------------------------------------------------------------------
def reduce_array(self):
    """Pickling: the values travel (a dptx array's buffer lives on one cluster: its pieces
    mean nothing to another process); unpickled, a new array on the current cluster. Not
    when Dask pickles it (a task's argument: in ``Client.submit``, which holds locks that the
    launches before it need to be submitted, or on the client's event loop, which reading
    the values would block): the pickle is then of an ``Unsent`` stand-in, which unpickles
    (a worker unpickles a task's arguments as the task arrives: an error there would take
    the worker down) and raises a TypeError saying why where the task uses it."""
    if not _pickled_by_dask():
        return asarray, (_host(self),)
    return Unsent, (f"a dptx array ({self.shape} {self.dtype}) cannot travel in a Dask "
                    f"task's arguments: give tasks host data (a.get()), or run the work as "
                    f"dptx kernels (dptx.RawKernel, ElementwiseKernel)",)


def _pickled_by_dask() -> bool:
    """Whether Dask's code is pickling (a caller from ``distributed``), or any event loop
    runs in this thread."""
    try:
        asyncio.get_running_loop()
        return True
    except RuntimeError:
        pass
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_globals.get("__name__", "").startswith("distributed."):
            return True
        frame = frame.f_back
    return False


class Unsent:
    """What a dptx array pickled on an event loop unpickles to: any use raises TypeError."""

    def __init__(self, message: str):
        object.__setattr__(self, "_message", message)

    def __getattr__(self, name):
        raise TypeError(object.__getattribute__(self, "_message"))

    def __reduce__(self):
        return Unsent, (object.__getattribute__(self, "_message"),)

    def __repr__(self):
        return f"<dptx._io.npyio.Unsent: {object.__getattribute__(self, '_message')}>"


def tofile(self, fid, sep="", format="%s") -> None:
    """numpy's ``tofile`` of the values (raw bytes in C order, or text with ``sep``)."""
    self.get().tofile(fid, sep, format)


def dump(self, file) -> None:
    """numpy's ``dump``: a pickle of the array to ``file`` (a path or a file)."""
    if isinstance(file, (str, bytes)) or hasattr(file, "__fspath__"):
        with open(file, "wb") as f:
            pickle.dump(self, f, protocol=2)
    else:
        pickle.dump(self, file, protocol=2)


def dumps(self) -> bytes:
    """numpy's ``dumps``: the pickle as bytes."""
    return pickle.dumps(self, protocol=2)
