"""numpy's arithmetic of polynomials as coefficient arrays (highest power first), on the
devices, step for step as numpy's (numpy/lib/_polynomial_impl.py): ``polyadd``/``polysub``
(the shorter one padded with leading zeros), ``polymul`` (``convolve``), ``polyder`` and
``polyint`` (the coefficients scaled by their powers, integration constants ``k``).
``polyval`` and ``polyfit`` are in ``numeric``."""
from __future__ import annotations

import numpy as np

from .._core import ufuncs
from ..runtime.ndarray import asarray, ndarray, zeros
from .convolution import convolve
from .._manipulation.joining import concatenate
from .._creation.ranges import arange

__all__ = ["polyadd", "polyder", "polyint", "polymul", "polysub"]


def _coefficients(p) -> ndarray:
    if isinstance(p, np.poly1d):
        p = p.coeffs
    p = asarray(p)
    return p.reshape(1) if p.ndim == 0 else p


def _padded_pair(a1, a2) -> tuple:
    """The two coefficient arrays, the shorter with leading zeros of its own type (numpy's
    way: the zeros do not change the result's type)."""
    a1, a2 = _coefficients(a1), _coefficients(a2)
    diff = len(a2) - len(a1)
    if diff > 0:
        a1 = concatenate((zeros(diff, a1.dtype), a1))
    elif diff < 0:
        a2 = concatenate((zeros(-diff, a2.dtype), a2))
    return a1, a2


def polyadd(a1, a2):
    """numpy.polyadd: the sum of two polynomials."""
    a1, a2 = _padded_pair(a1, a2)
    return ufuncs.apply(np.add, a1, a2)


def polysub(a1, a2):
    """numpy.polysub: the difference ``a1 - a2``."""
    a1, a2 = _padded_pair(a1, a2)
    return ufuncs.apply(np.subtract, a1, a2)


def polymul(a1, a2):
    """numpy.polymul: the product (the convolution of the coefficients)."""
    return convolve(_coefficients(a1), _coefficients(a2))


def polyder(p, m=1):
    """numpy.polyder: the ``m``-th derivative."""
    m = int(m)
    if m < 0:
        raise ValueError("Order of derivative must be positive (see polyint)")
    p = asarray(p.coeffs if isinstance(p, np.poly1d) else p)
    for _ in range(m):
        n = len(p) - 1
        p = ufuncs.apply(np.multiply, p[:-1], arange(n, 0, -1))
    return p


def polyint(p, m=1, k=None):
    """numpy.polyint: the ``m``-th antiderivative, the integration constants ``k`` (a scalar
    for all, or one per integration, the first used first)."""
    m = int(m)
    if m < 0:
        raise ValueError("Order of integral must be positive (see polyder)")
    host_k = np.zeros(m, float) if k is None else np.atleast_1d(
        k.get() if isinstance(k, ndarray) else k)
    if len(host_k) == 1 and m > 1:
        host_k = host_k[0] * np.ones(m, float)
    if len(host_k) < m:
        raise ValueError("k must be a scalar or a rank-1 array of length 1 or >m.")
    p = asarray(p.coeffs if isinstance(p, np.poly1d) else p)
    for j in range(m):
        # numpy: p / arange(len(p), 0, -1), then the constant (in the result's type)
        scaled = ufuncs.apply(np.true_divide, p, arange(len(p), 0, -1))
        p = concatenate((scaled, asarray(np.asarray([host_k[j]]))))
    return p
