"""``dptx.linalg``: numpy.linalg's routines that are made of products, sums and maxima, as
numpy makes them (its formulas and branches, in its types), each step a device launch:
``norm`` (vector and matrix norms; the singular-value ones from ``svd``), ``multi_dot`` (numpy's
cheapest order of the chain), ``matrix_power``; and those made of an LU factorization
(``solve``, ``inv``, ``det``, ``slogdet``: ``_lu``), ``cholesky`` (``_cholesky``) and
``qr`` (``_qr``), ``eigh``/``eigvalsh`` (``_eigh``), ``svd`` (``_svd``) and those made of
it (``pinv``, ``lstsq``, ``matrix_rank``: ``_pseudoinverse``; ``cond``, here, with the
norms)."""
from __future__ import annotations

import operator

import numpy as np

from .._core import outputs, products, reductions, ufuncs
from ..runtime.ndarray import _axes, asarray, empty, ndarray
from ..errors import DptxError
from .._creation.matrices import eye
from .._manipulation.views import moveaxis

from ._cholesky import cholesky
from ._lu import _matrices, _type, det, inv, inv_unchecked, slogdet, solve
from ._qr import qr
from ._eigh import eigh, eigvalsh
from ._svd import svd
from ._pseudoinverse import lstsq, matrix_rank, pinv

# numpy.linalg's functions of these names (array_api dispatches numpy's to them)
__all__ = ["cholesky", "cond", "det", "eigh", "eigvalsh", "inv", "lstsq", "matrix_power",
           "matrix_rank", "multi_dot", "norm", "pinv", "qr", "slogdet", "solve", "svd"]


def _abs(x):
    return ufuncs.apply(np.absolute, x)


def _sum(x, axis):
    return reductions.sum_(x, axis=axis)


def norm(x, ord=None, axis=None, keepdims=False) -> ndarray:
    """numpy.linalg.norm: a 0-d array (as CuPy's) or an array of norms along ``axis``."""
    x = asarray(x)
    if x.dtype.kind not in "f":
        x = ufuncs.astype(x, np.float64)        # numpy's: integers and bools as float
    if axis is None:
        if ord is None or (ord in ("f", "fro") and x.ndim == 2) or (ord == 2 and x.ndim == 1):
            flat = x.reshape(-1)
            result = ufuncs.apply(np.sqrt, products.dot(flat, flat))
            return result.reshape((1,) * x.ndim) if keepdims else result
        axis = tuple(range(x.ndim))
    elif not isinstance(axis, tuple):
        try:
            axis = (operator.index(axis),)
        except TypeError:
            raise TypeError("'axis' must be None, an integer or a tuple of integers") from None
    if len(axis) == 1:
        return _vector_norm(x, ord, axis, keepdims)
    if len(axis) == 2:
        return _matrix_norm(x, ord, axis, keepdims)
    raise ValueError("Improper number of dimensions to norm.")


def _vector_norm(x, ord, axis, keepdims):
    if isinstance(ord, str):
        raise ValueError(f"Invalid norm order '{ord}' for vectors")
    kw = {"axis": axis, "keepdims": keepdims}
    if ord == np.inf:
        return reductions.max_(_abs(x), **kw)
    if ord == -np.inf:
        return reductions.min_(_abs(x), **kw)
    if ord == 0:
        return reductions.sum_(ufuncs.astype(ufuncs.apply(np.not_equal, x, 0), x.dtype), **kw)
    if ord == 1:
        return reductions.sum_(_abs(x), **kw)
    if ord is None or ord == 2:
        return ufuncs.apply(np.sqrt, reductions.sum_(ufuncs.apply(np.multiply, x, x), **kw))
    try:
        float(ord)
    except TypeError:
        raise ValueError("Invalid norm order for vectors.") from None
    total = reductions.sum_(ufuncs.apply(np.power, _abs(x), ord), **kw)
    # numpy: ret **= reciprocal(ord, dtype=ret.dtype)
    return ufuncs.apply(np.power, total, np.reciprocal(np.asarray(ord, dtype=total.dtype)))


def _matrix_norm(x, ord, axis, keepdims):
    row, col = _axes(axis, x.ndim)
    if row == col:
        raise ValueError("Duplicate axes given.")
    if ord in (2, -2, "nuc"):
        # numpy's _multi_svd_norm: the largest, smallest or the sum of the singular values
        y = moveaxis(x, (row, col), (-2, -1))
        values = svd(y, compute_uv=False)
        if ord == 2:
            result = reductions.max_(values, axis=-1, initial=0)
        elif ord == -2:
            result = reductions.min_(values, axis=-1)
        else:
            result = reductions.sum_(values, axis=-1, initial=0)
    elif ord in (1, -1):
        pick = reductions.max_ if ord == 1 else reductions.min_
        result = pick(_sum(_abs(x), row), axis=col - 1 if col > row else col)
    elif ord in (np.inf, -np.inf):
        pick = reductions.max_ if ord == np.inf else reductions.min_
        result = pick(_sum(_abs(x), col), axis=row - 1 if row > col else row)
    elif ord in (None, "fro", "f"):
        result = ufuncs.apply(np.sqrt, _sum(ufuncs.apply(np.multiply, x, x), (row, col)))
    else:
        raise ValueError("Invalid norm order for matrices.")
    if keepdims:
        shape = list(x.shape)
        shape[row] = shape[col] = 1
        result = result.reshape(tuple(shape))
    return result


def multi_dot(arrays, *, out=None) -> ndarray:
    """numpy.linalg.multi_dot: the chain of products in numpy's cheapest order (its dynamic
    programme over the shapes); a 1-D first or last array is a row or column vector."""
    arrays = [asarray(a) for a in arrays]
    n = len(arrays)
    if n < 2:
        raise ValueError("Expecting at least two arrays.")
    if n == 2:
        return products.dot(arrays[0], arrays[1], out=out)
    first_1d, last_1d = arrays[0].ndim == 1, arrays[-1].ndim == 1
    if first_1d:
        arrays[0] = arrays[0].reshape(1, -1)
    if last_1d:
        arrays[-1] = arrays[-1].reshape(-1, 1)
    for a in arrays:
        if a.ndim != 2:
            raise np.linalg.LinAlgError(f"{a.ndim}-dimensional array given. Array must be "
                                        f"two-dimensional")
    order = _chain_order([a.shape[0] for a in arrays] + [arrays[-1].shape[1]])

    def product(i, j):
        if i == j:
            return arrays[i]
        return products.dot(product(i, order[i][j]), product(order[i][j] + 1, j))
    result = product(0, n - 1)
    if first_1d and last_1d:
        result = result.reshape(())
    elif first_1d or last_1d:
        result = result.reshape(-1)
    if out is not None:
        return outputs.store(out, result, "multi_dot", casting="no")    # (dot's rule)
    return result


def _chain_order(p: list) -> list:
    """numpy's ``_multi_dot_matrix_chain_order``: the split of each sub-chain i..j that
    costs the fewest multiplications (ties to the first, as numpy's)."""
    n = len(p) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + p[i] * p[k + 1] * p[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def matrix_power(a, n) -> ndarray:
    """numpy.linalg.matrix_power for n >= 0 (a stack of matrices too), numpy's sequence of
    products (n = 2, 3 directly, else by its binary decomposition); negative n needs an
    inverse, not supported yet."""
    a = asarray(a)
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError("exponent must be an integer") from None
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise np.linalg.LinAlgError("Last 2 dimensions of the array must be square")
    if n < 0:
        raise DptxError("matrix_power with a negative exponent needs an inverse: not "
                        "supported on dptx arrays yet")
    if n == 0:
        result = empty(a.shape, a.dtype)
        result[...] = eye(a.shape[-1], dtype=a.dtype)     # (each matrix of a stack)
        return result
    if n == 1:
        return a                # (numpy returns its argument itself)
    if n == 2:
        return products.matmul(a, a)
    if n == 3:
        return products.matmul(products.matmul(a, a), a)
    z = result = None
    while n > 0:
        z = a if z is None else products.matmul(z, z)
        n, bit = divmod(n, 2)
        if bit:
            result = z if result is None else products.matmul(result, z)
    return result


def cond(x, p=None):
    """numpy.linalg.cond: s_max / s_min (p None or 2; s_min / s_max for -2), else
    norm(x, p) norm(inv(x), p) with a matrix that cannot be inverted giving inf; a result
    NaN where x has no NaN becomes inf, as numpy's."""
    x = asarray(x)
    _matrices(x)
    if x.shape[-1] == 0 or x.shape[-2] == 0:
        raise np.linalg.LinAlgError("cond is not defined on empty arrays")
    if p is None or p == 2 or p == -2:
        s = svd(x, compute_uv=False)
        first, last = s[..., 0], s[..., -1]
        r = ufuncs.apply(np.true_divide, last, first) if p == -2 else \
            ufuncs.apply(np.true_divide, first, last)
    else:
        inverse = inv_unchecked(x)             # (numpy's error for matrices not square)
        r = ufuncs.apply(np.multiply, norm(x, p, axis=(-2, -1)),
                         norm(inverse, p, axis=(-2, -1)))
        r = r.astype(_type(x))
    nan = ufuncs.apply(np.isnan, r)
    had_nan = reductions.any_(ufuncs.apply(np.isnan, x), axis=(-2, -1))
    fix = ufuncs.apply(np.logical_and, nan, ufuncs.apply(np.logical_not, had_nan))
    return ufuncs.where(fix, np.inf, r).astype(r.dtype)
