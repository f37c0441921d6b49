"""``cupy.fft``'s transforms that dptx's GPU executor calls (cuFFT's on a GPU), with CuPy's
signatures: numpy's, through ``_library`` (recorded in ``testing.calls``)."""
from __future__ import annotations

import numpy

from ._library import run


def _one(name):
    def transform(a, n=None, axis=-1, norm=None):
        return run(f"fft.{name}", getattr(numpy.fft, name), a, n=n, axis=axis, norm=norm)
    transform.__name__ = name
    return transform


def _many(name):
    def transform(a, s=None, axes=None, norm=None):
        return run(f"fft.{name}", getattr(numpy.fft, name), a, s=s, axes=axes, norm=norm)
    transform.__name__ = name
    return transform


fft, ifft, rfft, irfft, hfft, ihfft = (_one(n) for n in ("fft", "ifft", "rfft", "irfft", "hfft",
                                                         "ihfft"))
fftn, ifftn, rfftn, irfftn = (_many(n) for n in ("fftn", "ifftn", "rfftn", "irfftn"))
