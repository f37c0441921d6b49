"""``dptx.fft``: numpy.fft on the devices, as CuPy's ``cupy.fft``. Each transform is a library
routine (``dptx.runtime.library_call``): one task on the worker holding the array, run with its
device's own FFT (numpy's pocketfft on a CPU worker, cuFFT through CuPy on a GPU worker), with
numpy's arguments (``n``/``s``, ``axis``/``axes``, ``norm``), result shapes and types (numpy
2's: single precision stays single). ``fftfreq``/``rfftfreq`` are made on the host (their
values need no data), ``fftshift``/``ifftshift`` are rolls on the devices."""
from __future__ import annotations

import operator

import numpy as np

from .._manipulation.rearranging import roll
from ..runtime import library_call
from ..runtime.ndarray import asarray, ndarray

__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2",
           "fftn", "ifftn", "rfftn", "irfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]

_NORMS = (None, "backward", "ortho", "forward")


def _input(a, real: bool):
    """``a`` as the transform reads it: a device array of a float (``real``) or complex
    type, converted as numpy converts (integers and booleans to float64, float16 to
    float32)."""
    a = asarray(a)
    if a.dtype.kind == "c":
        if real:
            raise TypeError(f"ufunc 'rfft' did not contain a loop with signature matching "
                            f"types ({a.dtype!r}, ...): a complex input has no real transform")
        return a
    if a.dtype.kind in "biu":
        return a.astype(np.float64)
    return a.astype(np.float32) if a.dtype == np.float16 else a


def _complex_of(dtype) -> np.dtype:
    return np.dtype(np.complex64) if np.dtype(dtype) in (np.float32, np.complex64) \
        else np.dtype(np.complex128)


def _real_of(dtype) -> np.dtype:
    return np.dtype(np.float32) if np.dtype(dtype) in (np.float32, np.complex64) \
        else np.dtype(np.float64)


def _norm(norm):
    if norm not in _NORMS:
        raise ValueError(f'Invalid norm value {norm}; should be "backward", "ortho" or '
                         f'"forward".')
    return norm


def _axis(axis, ndim: int) -> int:
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(axis, ndim)
    return axis % ndim


def _length(n, default: int, what: str = "n") -> int:
    n = default if n is None else operator.index(n)
    if n < 1:
        raise ValueError(f"Invalid number of FFT data points ({n}) specified.")
    return n


def _one(routine: str, a, n, axis, norm, kind: str):
    """A transform along one axis: ``kind`` "c2c", "r2c" (rfft, ihfft) or "c2r" (irfft,
    hfft)."""
    a = _input(a, kind == "r2c")
    if a.ndim == 0:
        raise ValueError("Invalid number of FFT data points (0) specified.")
    ax = _axis(axis, a.ndim)
    m = a.shape[ax]
    n = _length(n, 2 * (m - 1) if kind == "c2r" else m)
    length = n // 2 + 1 if kind == "r2c" else n
    shape = a.shape[:ax] + (length,) + a.shape[ax + 1:]
    dtype = _real_of(a.dtype) if kind == "c2r" else _complex_of(a.dtype)
    (out,) = library_call.call(routine, [a], [(shape, dtype)], n=n, axis=ax, norm=_norm(norm))
    return out


def fft(a, n=None, axis=-1, norm=None) -> ndarray:
    return _one("fft.fft", a, n, axis, norm, "c2c")


def ifft(a, n=None, axis=-1, norm=None) -> ndarray:
    return _one("fft.ifft", a, n, axis, norm, "c2c")


def rfft(a, n=None, axis=-1, norm=None) -> ndarray:
    return _one("fft.rfft", a, n, axis, norm, "r2c")


def irfft(a, n=None, axis=-1, norm=None) -> ndarray:
    return _one("fft.irfft", a, n, axis, norm, "c2r")


def hfft(a, n=None, axis=-1, norm=None) -> ndarray:
    return _one("fft.hfft", a, n, axis, norm, "c2r")


def ihfft(a, n=None, axis=-1, norm=None) -> ndarray:
    return _one("fft.ihfft", a, n, axis, norm, "r2c")


def _many(routine: str, a, s, axes, norm, kind: str):
    """A transform along several axes (numpy's ``_raw_fftnd`` rules for ``s`` and ``axes``):
    ``kind`` as ``_one``'s, the real side's axis the last of ``axes``."""
    a = _input(a, kind == "r2c")
    if axes is None:
        axes = list(range(-len(s), 0)) if s is not None else list(range(a.ndim))
    axes = [_axis(ax, a.ndim) for ax in axes]
    if s is None:
        s = [a.shape[ax] for ax in axes]
        if kind == "c2r" and axes:
            s[-1] = 2 * (a.shape[axes[-1]] - 1)
    else:
        s = [operator.index(v) for v in s]
        if len(s) != len(axes):
            raise ValueError("Shape and axes have different lengths.")
    shape = list(a.shape)
    for k, (ax, n) in enumerate(zip(axes, s)):
        n = _length(n, n)
        shape[ax] = n // 2 + 1 if kind == "r2c" and k == len(axes) - 1 else n
    dtype = _real_of(a.dtype) if kind == "c2r" else _complex_of(a.dtype)
    (out,) = library_call.call(routine, [a], [(tuple(shape), dtype)], s=tuple(s),
                               axes=tuple(axes), norm=_norm(norm))
    return out


def fftn(a, s=None, axes=None, norm=None) -> ndarray:
    return _many("fft.fftn", a, s, axes, norm, "c2c")


def ifftn(a, s=None, axes=None, norm=None) -> ndarray:
    return _many("fft.ifftn", a, s, axes, norm, "c2c")


def rfftn(a, s=None, axes=None, norm=None) -> ndarray:
    return _many("fft.rfftn", a, s, axes, norm, "r2c")


def irfftn(a, s=None, axes=None, norm=None) -> ndarray:
    return _many("fft.irfftn", a, s, axes, norm, "c2r")


def fft2(a, s=None, axes=(-2, -1), norm=None) -> ndarray:
    return _many("fft.fftn", a, s, axes, norm, "c2c")


def ifft2(a, s=None, axes=(-2, -1), norm=None) -> ndarray:
    return _many("fft.ifftn", a, s, axes, norm, "c2c")


def rfft2(a, s=None, axes=(-2, -1), norm=None) -> ndarray:
    return _many("fft.rfftn", a, s, axes, norm, "r2c")


def irfft2(a, s=None, axes=(-2, -1), norm=None) -> ndarray:
    return _many("fft.irfftn", a, s, axes, norm, "c2r")


def fftfreq(n, d=1.0) -> ndarray:
    """numpy.fft.fftfreq (made on the host: it depends on ``n`` and ``d`` alone)."""
    return asarray(np.fft.fftfreq(n, d))


def rfftfreq(n, d=1.0) -> ndarray:
    """numpy.fft.rfftfreq (made on the host)."""
    return asarray(np.fft.rfftfreq(n, d))


def _shift(x, axes, sign: int) -> ndarray:
    x = asarray(x)
    if axes is None:
        axes = tuple(range(x.ndim))
        shifts = [sign * (n // 2) for n in x.shape]
    elif isinstance(axes, (int, np.integer)):
        shifts = sign * (x.shape[axes] // 2)
    else:
        shifts = [sign * (x.shape[ax] // 2) for ax in axes]
    return roll(x, shifts, axes)


def fftshift(x, axes=None) -> ndarray:
    """numpy.fft.fftshift: the zero frequency moved to the middle (a roll)."""
    return _shift(x, axes, 1)


def ifftshift(x, axes=None) -> ndarray:
    """numpy.fft.ifftshift: fftshift's inverse (a roll back)."""
    return _shift(x, axes, -1)
