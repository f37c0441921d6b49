"""``dptx.ndarray``'s surface: every method, operator and protocol that its class body does not
define, in one table (``SURFACE``), attached when ``dptx`` is imported. The class body
(``dptx.runtime.ndarray``) keeps the array itself (buffers, views, copies, basic indexing);
what generates kernels lives above it (``dptx._core`` and numpy's chapters), so the class's
methods that need them are attached from here, and imports go one way down the layers.

Also here: numpy's ``where``, ``copyto`` and ``count_nonzero``, the three functions of the
array API made of the ufunc machinery and a reduction."""
from __future__ import annotations

import numpy as np

from ._array_api import standard as array_api_standard
from ._logic import array_queries, comparison
from ._statistics import binning, covariance, histogramdd, moments, nanfunctions, statistics
from ._math import (bit_packing as bits, calculus, convolution, functional, interpolation, misc,
                    polynomials, rounding, window_functions as windows)
from ._creation import construction, conversions, matrices
from .linalg import _einsum as contractions, _products as tensor_products
from . import cuda, fft, linalg
from ._manipulation import editing, joining, padding, rearranging, views
from ._indexing import flat_iterator, index_tricks, indexing
from ._io import formatting, npyio
from ._core import products, reductions, scan, selection, ufuncs
from ._sorting import setops, sorting
from ._ufunc import ufunc_objects as ufunc_api, ufunc_at
from .runtime.ndarray import (asarray, copy, expand_dims, may_share_memory, ndarray, ravel,
                              reshape, squeeze, swapaxes, transpose, zeros)
from .runtime.layout import new_strides, same_layout


def where(condition, x=None, y=None):
    """numpy.where: ``x`` where ``condition`` else ``y`` (one launch, broadcast); with the
    condition alone, ``nonzero(condition)``."""
    if x is None and y is None:
        return selection.nonzero(condition)
    if x is None or y is None:
        raise ValueError("either both or neither of x and y should be given")
    return ufuncs.where(condition, x, y)


def copyto(dst, src, casting="same_kind", where=True) -> None:
    """numpy.copyto: ``src`` broadcast and converted into ``dst`` (where ``where`` is True),
    one launch on the devices; numpy's casting rule for the conversion."""
    if not isinstance(dst, ndarray):
        raise TypeError(f"copyto() argument 1 must be a dptx array, not {type(dst).__name__}")
    # numpy decides the casting rule on a 0-d host array of dst's type (its errors, and
    # its weak handling of Python scalars)
    probe = np.empty((1,), src.dtype) if isinstance(src, (ndarray, np.ndarray)) else src
    np.copyto(np.empty((), dst.dtype), probe, casting=casting)
    if isinstance(src, np.ndarray):
        src = asarray(src) if src.ndim else src[()]
    if where is True:
        dst[...] = src
        return
    dst[...] = ufuncs.where(asarray(where) if not isinstance(where, ndarray) else where,
                            src, dst)


def count_nonzero(a, axis=None, *, keepdims=False):
    """numpy.count_nonzero as a device array (an int64 0-d array where numpy gives an int, as
    CuPy's): the sum of ``a != 0`` (NaN counts)."""
    return reductions.sum_(ufuncs.apply(np.not_equal, asarray(a), 0), axis=axis,
                           keepdims=keepdims)


# -- ndarray methods ------------------------------------------------------------------------------
def _array_ufunc(self, ufunc, method, *inputs, **kwargs):
    """numpy's ufuncs and their ``reduce``, ``accumulate``, ``outer`` (``dptx._ufunc.ufunc_objects``) and
    ``at`` (``dptx._ufunc.ufunc_at``) on dptx arrays; ``reduceat`` is numpy's TypeError."""
    if method == "__call__":
        return ufunc_api.call(ufunc, *inputs, **kwargs)
    if method == "reduce":
        return ufunc_api.reduce(ufunc, *inputs, **kwargs)
    if method == "outer":
        return ufunc_api.outer(ufunc, *inputs, **kwargs)
    if method == "accumulate":
        return ufunc_api.accumulate(ufunc, *inputs, **kwargs)
    if method == "at" and isinstance(inputs[0], ndarray):
        return ufunc_at.at(ufunc, *inputs, **kwargs)
    return NotImplemented


_FUNCTIONS = {np.where: where, np.sort: sorting.sort, np.argsort: sorting.argsort,
              np.unique: sorting.unique, np.searchsorted: sorting.searchsorted, np.diagonal: matrices.diagonal, np.diag: matrices.diag,
              np.trace: matrices.trace, np.tril: matrices.tril, np.triu: matrices.triu,
              np.outer: matrices.outer, np.flip: rearranging.flip,
              np.fliplr: rearranging.fliplr, np.flipud: rearranging.flipud,
              np.roll: rearranging.roll, np.repeat: rearranging.repeat,
              np.tile: rearranging.tile, np.diff: rearranging.diff,
              np.ediff1d: rearranging.ediff1d, np.block: joining.block, np.cumsum: scan.cumsum, np.cumprod: scan.cumprod, np.round: rounding.around, np.around: rounding.around,
              np.isclose: comparison.isclose, np.allclose: comparison.allclose,
              np.array_equal: comparison.array_equal, np.array_equiv: comparison.array_equiv,
              np.var: moments.var, np.std: moments.std,
              np.concatenate: joining.concatenate, np.stack: joining.stack,
              np.vstack: joining.vstack, np.hstack: joining.hstack,
              np.column_stack: joining.column_stack, np.take: indexing.take, np.nonzero: selection.nonzero,
              np.flatnonzero: selection.flatnonzero, np.argwhere: selection.argwhere,
              np.count_nonzero: count_nonzero, np.clip: ufuncs.clip, np.reshape: reshape,
              np.transpose: transpose, np.swapaxes: swapaxes, np.squeeze: squeeze,
              np.expand_dims: expand_dims,
              np.ravel: ravel, np.sum: reductions.sum_, np.prod: reductions.prod,
              np.min: reductions.min_, np.max: reductions.max_, np.amin: reductions.min_,
              np.amax: reductions.max_, np.mean: reductions.mean,
              np.argmin: reductions.argmin, np.argmax: reductions.argmax,
              np.any: reductions.any_, np.all: reductions.all_, np.dot: products.dot,
              np.matmul: products.matmul, np.copy: copy,
              np.may_share_memory: may_share_memory, np.dstack: joining.dstack,
              np.copyto: copyto, np.nan_to_num: misc.nan_to_num,
              np.partition: sorting.partition, np.argpartition: sorting.argpartition,
              np.lexsort: sorting.lexsort, np.put: indexing.put,
              np.fill_diagonal: matrices.fill_diagonal, np.diagflat: matrices.diagflat,
              np.vander: matrices.vander, np.sinc: misc.sinc, np.fix: rounding.fix,
              np.isposinf: comparison.isposinf, np.isneginf: comparison.isneginf,
              np.real: misc.real, np.imag: misc.imag, np.angle: misc.angle,
              np.polyval: polynomials.polyval, np.polyfit: polynomials.polyfit,
              np.unwrap: misc.unwrap,
              # what numpy reads of an array's description only (nothing moves)
              np.shape: lambda a: a.shape, np.ndim: lambda a: a.ndim,
              np.size: lambda a, axis=None: a.size if axis is None else a.shape[axis],
              np.result_type: lambda *xs: np.result_type(
                  *[x.dtype if isinstance(x, ndarray) else x for x in xs])}


# modules whose public functions are numpy's of the same names (each lists them in __all__)
for _module in (array_api_standard, array_queries, binning, bits, calculus, construction,
                contractions, conversions, convolution, covariance, editing, formatting,
                functional, histogramdd, index_tricks, interpolation, nanfunctions, npyio,
                padding, polynomials, setops, statistics, tensor_products, views, windows):
    _FUNCTIONS.update({getattr(np, name): getattr(_module, name) for name in _module.__all__})
_FUNCTIONS.update({getattr(np.linalg, name): getattr(linalg, name) for name in linalg.__all__})
_FUNCTIONS.update({getattr(np.fft, name): getattr(fft, name) for name in fft.__all__})


def _array_function(self, func, types, args, kwargs):
    handler = _FUNCTIONS.get(func)
    if handler is None:
        return NotImplemented
    return handler(*args, **kwargs)


def _binary(ufunc):
    def method(self, other):
        return ufuncs.apply(ufunc, self, other)

    def reflected(self, other):
        return ufuncs.apply(ufunc, other, self)

    def inplace(self, other):
        ufuncs.apply(ufunc, self, other, out=self)
        return self
    return method, reflected, inplace


def _fast_power(self, exponent):
    """The ufunc numpy's ``a ** exponent`` uses instead of ``power`` (ufuncs.operator_power)."""
    return ufuncs.operator_power(self.dtype, exponent)


def _power_methods():
    method, reflected, inplace = _binary(np.power)

    def power(self, other):
        fast = _fast_power(self, other)
        return ufuncs.apply(fast, self) if fast else method(self, other)

    def inplace_power(self, other):
        fast = _fast_power(self, other)
        if fast is None:
            return inplace(self, other)
        ufuncs.apply(fast, self, out=self)
        return self
    return power, reflected, inplace_power


def _unary(ufunc):
    return lambda self: ufuncs.apply(ufunc, self)


def _astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
    """numpy's ``astype``: values converted as numpy converts them (``ufuncs.conversion``),
    into a new array laid out in ``order`` ("K": as this one); ``casting`` checked as numpy
    does; with ``copy=False``, this array itself where nothing would change."""
    dt = np.dtype(dtype)
    if casting is not None and not np.can_cast(self.dtype, dt, casting):
        raise TypeError(f"Cannot cast array data from {self.dtype!r} to {dt!r} according to "
                        f"the rule {casting!r}")
    strides = new_strides(self.shape, dt.itemsize, order, self)
    if dt == self.dtype:
        if not copy and same_layout(self.shape, strides, self.strides):
            return self
        return self.copy(order)
    return ufuncs.astype(self, dt, ndarray(self.shape, dt, _strides=strides))


def _reduction(fn, with_dtype: bool):
    if with_dtype:
        def method(self, axis=None, dtype=None, out=None, keepdims=False, **kwargs):
            return fn(self, axis=axis, dtype=dtype, out=out, keepdims=keepdims, **kwargs)
    else:
        def method(self, axis=None, out=None, keepdims=False, **kwargs):
            return fn(self, axis=axis, out=out, keepdims=keepdims, **kwargs)
    method.__doc__ = f"numpy's ``{fn.__name__.rstrip('_')}`` on the devices (dptx._core.reductions)."
    return method


def _partition_in_place(self, kth, axis=-1, kind="introselect", order=None) -> None:
    """``a.partition(kth)``: in place (a sort, see ``sorting.partition``)."""
    self[...] = sorting.partition(self, kth, axis, kind, order)


def _inplace_matmul(self, other):
    """``a @= b``: numpy's, where the product has a's shape (into a through a temporary)."""
    products.matmul(self, other, out=self)
    return self


def _conj(self):
    """The complex conjugate (numpy's ``conjugate`` ufunc): of a real array, a copy."""
    if self.dtype.kind == "c":
        return ufuncs.apply(np.conjugate, self)
    return self.copy()


def _real(self):
    """The real part, a view (as numpy's): of a complex array its real parts in place
    (strided), of a real array the array itself."""
    if self.dtype.kind == "c":
        probe = self._stand_in()
        return self._like(probe, probe.real)
    return self[...]


def _imag(self):
    """The imaginary part: of a complex array a view of its imaginary parts (as numpy's),
    of a real array zeros (a new array, read-only in numpy: written to, it changes nothing)."""
    if self.dtype.kind == "c":
        probe = self._stand_in()
        return self._like(probe, probe.imag)
    return zeros(self.shape, self.dtype)


def _copy_to_host(self, ary=None, stream=0):
    """numba-cuda's ``copy_to_host`` (``dptx.numba_cuda``): the values in a new numpy array,
    or into ``ary``."""
    return self.get(out=ary) if ary is not None else self.get()


def _to_device(self, device, /, *, stream=None):
    """The array API's ``to_device``: this array, on the one device there is."""
    if not isinstance(device, cuda.Device):
        raise ValueError(f"unsupported device {device!r}: dptx arrays live on the cluster, "
                         f"dptx.cuda.Device(0) (a.get() copies one to the host)")
    return self


def _binary_operators() -> dict:
    """``__add__``/``__radd__``/``__iadd__``... and the comparisons: numpy's ufunc each."""
    table = {}
    for op, name in (("add", "add"), ("sub", "subtract"), ("mul", "multiply"),
                     ("truediv", "true_divide"), ("floordiv", "floor_divide"),
                     ("mod", "remainder"), ("pow", "power"), ("and", "bitwise_and"),
                     ("or", "bitwise_or"), ("xor", "bitwise_xor"), ("lshift", "left_shift"),
                     ("rshift", "right_shift")):
        f, r, i = _power_methods() if op == "pow" else _binary(getattr(np, name))
        table.update({f"__{op}__": f, f"__r{op}__": r, f"__i{op}__": i})
    for op, name in (("eq", "equal"), ("ne", "not_equal"), ("lt", "less"),
                     ("le", "less_equal"), ("gt", "greater"), ("ge", "greater_equal")):
        table[f"__{op}__"] = _binary(getattr(np, name))[0]
    for op, name in (("neg", "negative"), ("pos", "positive"), ("abs", "absolute"),
                     ("invert", "invert")):
        table[f"__{op}__"] = _unary(getattr(np, name))
    return table


def _reductions() -> dict:
    return {name: _reduction(fn, with_dtype) for name, fn, with_dtype in (
        ("sum", reductions.sum_, True), ("prod", reductions.prod, True),
        ("mean", reductions.mean, True), ("min", reductions.min_, False),
        ("max", reductions.max_, False), ("argmin", reductions.argmin, False),
        ("argmax", reductions.argmax, False), ("any", reductions.any_, False),
        ("all", reductions.all_, False))}


# Every attribute of ``dptx.ndarray`` that its class body (dptx/runtime/ndarray.py: storage,
# views, copies, basic indexing) does not define: name -> what implements it. One table, so
# that a reader of the class finds its operators, its numpy methods, its printing and its
# pickling here, and so that nothing else attaches to the class (tests/test_ndarray_surface.py).
SURFACE = {
    # numpy's protocols: ufuncs (np.sqrt(a), np.add.reduce(a)) and functions (np.sum(a))
    "__array_ufunc__": _array_ufunc,
    "__array_function__": _array_function,
    # operators, through numpy's ufuncs (numpy's promotion, Python scalars weak)
    **_binary_operators(),
    "__hash__": None,                           # == is element-wise, as numpy's
    "__matmul__": lambda self, other: products.matmul(self, other),
    "__rmatmul__": lambda self, other: products.matmul(other, self),
    "__imatmul__": _inplace_matmul,
    "__divmod__": lambda self, other: (ufuncs.apply(np.floor_divide, self, other),
                                       ufuncs.apply(np.remainder, self, other)),
    "__rdivmod__": lambda self, other: (ufuncs.apply(np.floor_divide, other, self),
                                        ufuncs.apply(np.remainder, other, self)),
    "__contains__": lambda self, value: bool(reductions.any_(
        ufuncs.apply(np.equal, self, value))),
    "__round__": lambda self, ndigits=None: rounding.around(self, ndigits or 0),
    # numpy's methods
    "astype": _astype,
    **_reductions(),
    "nonzero": selection.nonzero,
    "sort": sorting.sort_in_place,
    "argsort": sorting.argsort,
    "searchsorted": lambda self, v, side="left", sorter=None: sorting.searchsorted(
        self, v, side, sorter),
    "partition": _partition_in_place,
    "argpartition": sorting.argpartition,
    "diagonal": matrices.diagonal,
    "trace": matrices.trace,
    "repeat": rearranging.repeat,
    "round": rounding.around,
    "cumsum": scan.cumsum,
    "cumprod": scan.cumprod,
    "var": moments.var,
    "std": moments.std,
    "ptp": statistics.ptp,                      # gone from numpy 2's ndarray, kept by CuPy
    "take": indexing.take,
    "put": indexing.put,
    "dot": lambda self, other, out=None: products.dot(self, other, out),
    "choose": lambda self, choices, out=None, mode="raise": index_tricks.choose(
        self, choices, out, mode),
    "compress": lambda self, condition, axis=None, out=None: index_tricks.compress(
        condition, self, axis, out),
    "clip": lambda self, min=None, max=None, out=None: ufuncs.clip(self, min, max, out),
    "conj": _conj,
    "conjugate": _conj,
    "real": property(_real),
    "imag": property(_imag),
    "flat": property(flat_iterator.flat_of, flat_iterator.set_flat),
    # the array API's device
    "device": property(lambda self: cuda.Device(0), doc="The device the array is on (the "
                       "array API's and CuPy's ``device``): the cluster, device 0."),
    "to_device": _to_device,
    "copy_to_host": _copy_to_host,            # numba-cuda's name (dptx.numba_cuda)
    # printing (numpy's text), pickling and files (the values travel, not the futures)
    "__repr__": formatting.array_repr,
    "__str__": formatting.array_str,
    "__format__": formatting.format_array,
    "__reduce__": npyio.reduce_array,
    "tofile": npyio.tofile,
    "dump": npyio.dump,
    "dumps": npyio.dumps,
    # the class's hooks: strided and device-to-device assignment, and indexing by masks and
    # index arrays, which generate kernels
    "_device_assign": staticmethod(ufuncs.assign),
    "_advanced_indexing": indexing,
}

for _name, _value in SURFACE.items():
    setattr(ndarray, _name, _value)
