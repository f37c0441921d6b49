"""numpy's arithmetic of polynomials as coefficient arrays (highest power first), on the
devices, step for step as numpy's (numpy/lib/_polynomial_impl.py): ``polyadd``/``polysub``
(the shorter one padded with leading zeros), ``polymul`` (``convolve``), ``polyder`` and
``polyint`` (the coefficients scaled by their powers, integration constants ``k``).
``polyval`` (Horner's rule) and ``polyfit`` (numpy's scaled Vandermonde matrix through
``linalg.lstsq``)."""
from __future__ import annotations

import warnings

import numpy as np

from .._core import products, reductions, ufuncs
from ..runtime.ndarray import asarray, ndarray, zeros, zeros_like
from .convolution import convolve
from .._manipulation.joining import concatenate
from .._creation.matrices import vander
from .._creation.ranges import arange
from ..linalg._lu import inv
from ..linalg._pseudoinverse import lstsq

__all__ = ["polyadd", "polyder", "polyfit", "polyint", "polymul", "polysub", "polyval"]


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


def polyval(p, x):
    """numpy.polyval: Horner's rule, y = y * x + c for each coefficient, highest first."""
    p, x = asarray(p), asarray(x)
    y = zeros_like(x)
    for k in range(p.shape[0]):
        y = ufuncs.apply(np.add, ufuncs.apply(np.multiply, y, x), p[k])
    return y


def polyfit(x, y, deg, rcond=None, full=False, w=None, cov=False):
    """numpy.polyfit: the least-squares polynomial of degree ``deg`` (coefficients highest
    first; one column per column of a 2-D y), numpy's scaled Vandermonde matrix through
    ``lstsq``; ``full`` adds (residuals, rank, singular values, rcond), ``cov`` the
    covariance matrices (scaled by the residuals over the degrees of freedom, or not with
    'unscaled'); numpy's RankWarning where the rank falls short."""
    order = int(deg) + 1
    x = ufuncs.apply(np.add, asarray(x), 0.0)
    y = ufuncs.apply(np.add, asarray(y), 0.0)
    if deg < 0:
        raise ValueError("expected deg >= 0")
    if x.ndim != 1:
        raise TypeError("expected 1D vector for x")
    if x.size == 0:
        raise TypeError("expected non-empty vector for x")
    if y.ndim < 1 or y.ndim > 2:
        raise TypeError("expected 1D or 2D array for y")
    if x.shape[0] != y.shape[0]:
        raise TypeError("expected x and y to have same length")
    if rcond is None:
        rcond = len(x) * np.finfo(x.dtype).eps
    lhs = vander(x, order)
    rhs = y
    if w is not None:
        w = ufuncs.apply(np.add, asarray(w), 0.0)
        if w.ndim != 1:
            raise TypeError("expected a 1-d array for weights")
        if w.shape[0] != y.shape[0]:
            raise TypeError("expected w and y to have the same length")
        lhs = ufuncs.apply(np.multiply, lhs, w[:, None])
        rhs = ufuncs.apply(np.multiply, rhs, w if rhs.ndim == 1 else w[:, None])
    scale = ufuncs.apply(np.sqrt, reductions.sum_(ufuncs.apply(np.multiply, lhs, lhs), axis=0))
    lhs = ufuncs.apply(np.true_divide, lhs, scale)
    c, resids, rank, s = lstsq(lhs, rhs, rcond)
    c = ufuncs.apply(np.true_divide, c.T, scale).T
    if rank != order and not full:
        warnings.warn("Polyfit may be poorly conditioned", np.exceptions.RankWarning,
                      stacklevel=2)
    if full:
        return c, resids, rank, s, rcond
    if cov:
        Vbase = inv(products.matmul(lhs.T, lhs))
        Vbase = ufuncs.apply(np.true_divide, Vbase, _outer(scale))
        if cov == "unscaled":
            fac = 1
        else:
            if len(x) <= order:
                raise ValueError("the number of data points must exceed order to scale "
                                 "the covariance matrix")
            fac = ufuncs.apply(np.true_divide, resids, len(x) - order)
        if y.ndim == 1:
            return c, ufuncs.apply(np.multiply, Vbase, fac)
        return c, ufuncs.apply(np.multiply, Vbase[:, :, None], fac)
    return c


def _outer(v):
    return ufuncs.apply(np.multiply, v[:, None], v[None, :])
