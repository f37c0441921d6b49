"""numpy's ``cov`` and ``corrcoef`` on dptx arrays, as numpy 2's ``_function_base_impl``
computes them: the (weighted) means removed, the product of the centred rows with their
transpose (a device matmul), scaled by 1 / (the samples, or the weights' sum, less
``ddof``); ``corrcoef`` divides by the standard deviations and clips to [-1, 1]. numpy's dot
calls BLAS, whose additions are in its own order: results agree with numpy's to rounding.
numpy's checks of the weights (whole, not negative) read back one value each."""
from __future__ import annotations

import warnings

import numpy as np

from .._creation import matrices
from .._core import products, reductions, ufuncs
from . import statistics
from ..runtime.ndarray import asarray, empty, ndarray
from ..errors import DptxError
from .._manipulation.joining import concatenate

__all__ = ["corrcoef", "cov"]


def _rows(x, dtype) -> ndarray:
    """``array(x, ndmin=2, dtype=dtype)``: a new device array (numpy's copy)."""
    x = asarray(x)
    x = x.astype(dtype) if x.dtype != dtype else x.copy()
    return x.reshape((1,) * (2 - x.ndim) + x.shape) if x.ndim < 2 else x


def _weights(w, name: str, samples: int) -> ndarray:
    """numpy's checks of ``fweights``/``aweights``, in its order."""
    w = asarray(w)
    w = w.astype(np.float64) if w.dtype != np.float64 else w
    if name == "fweights" and not bool(reductions.all_(
            ufuncs.apply(np.equal, w, ufuncs.apply(np.rint, w)))):
        raise TypeError("fweights must be integer")
    if w.ndim > 1:
        raise RuntimeError(f"cannot handle multidimensional {name}")
    if w.shape[0] != samples:
        raise RuntimeError(f"incompatible numbers of samples and {name}")
    if bool(reductions.any_(ufuncs.apply(np.less, w, 0))):
        raise ValueError(f"{name} cannot be negative")
    return w


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *,
        dtype=None):
    """numpy.cov: the covariance matrix of the variables (rows, or columns when not
    ``rowvar``) of ``m`` (and ``y``)."""
    if ddof is not None and ddof != int(ddof):
        raise ValueError("ddof must be integer")
    m = asarray(m)
    if m.ndim > 2:
        raise ValueError("m has more than 2 dimensions")
    if y is not None:
        y = asarray(y)
        if y.ndim > 2:
            raise ValueError("y has more than 2 dimensions")
    if dtype is None:
        dtype = np.result_type(m.dtype, np.float64) if y is None else \
            np.result_type(m.dtype, y.dtype, np.float64)
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        raise DptxError("complex dtypes are not supported on dptx arrays yet")
    X = _rows(m, dtype)
    if not rowvar and m.ndim != 1:
        X = X.T
    if X.shape[0] == 0:
        return empty((0, 0), np.float64)
    if y is not None:
        Y = _rows(y, dtype)
        if not rowvar and Y.shape[0] != 1:
            Y = Y.T
        X = concatenate((X, Y), axis=0)
    if ddof is None:
        ddof = 1 if bias == 0 else 0

    w = None
    if fweights is not None:
        w = fweights = _weights(fweights, "fweights", X.shape[1])
    if aweights is not None:
        aweights = _weights(aweights, "aweights", X.shape[1])
        w = aweights if w is None else ufuncs.apply(np.multiply, w, aweights)

    avg, w_sum = statistics.average(X, axis=1, weights=w, returned=True)
    w_sum = w_sum[0]
    if w is None:
        fact = X.shape[1] - ddof
        bad = fact <= 0
    else:
        if ddof == 0:
            fact = w_sum
        elif aweights is None:
            fact = ufuncs.apply(np.subtract, w_sum, ddof)
        else:
            correction = ufuncs.apply(np.true_divide, reductions.sum_(
                ufuncs.apply(np.multiply, w, aweights)), w_sum)
            fact = ufuncs.apply(np.subtract, w_sum, ufuncs.apply(np.multiply, ddof, correction))
        bad = bool(ufuncs.apply(np.less_equal, fact, 0))
    if bad:
        warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=2)
        fact = 0.0
    X = ufuncs.apply(np.subtract, X, avg[:, None])
    X_T = X.T if w is None else ufuncs.apply(np.multiply, X, w).T
    c = products.matmul(X, X_T)
    with np.errstate(divide="ignore"):
        scale = np.true_divide(1, fact) if not isinstance(fact, ndarray) else \
            ufuncs.apply(np.true_divide, 1, fact)
    c = ufuncs.apply(np.multiply, c, scale)
    if c.dtype != X.dtype:
        c = ufuncs.astype(c, X.dtype)       # (numpy's in-place c *= ...)
    return c.squeeze()


def corrcoef(x, y=None, rowvar=True, *, dtype=None):
    """numpy.corrcoef: the covariance matrix divided by the standard deviations of both of
    its variables, clipped to [-1, 1]."""
    c = cov(x, y, rowvar, dtype=dtype)
    if c.ndim == 0:
        return ufuncs.apply(np.true_divide, c, c)    # nan for nan, inf and 0, else 1
    d = matrices.diag(c)
    stddev = ufuncs.apply(np.sqrt, d)
    c = ufuncs.apply(np.true_divide, c, stddev[:, None])
    c = ufuncs.apply(np.true_divide, c, stddev[None, :])
    return ufuncs.clip(c, -1, 1)
