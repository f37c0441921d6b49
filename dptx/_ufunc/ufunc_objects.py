"""numpy's ufuncs as dptx functions, as CuPy has them (``dptx.sqrt(a)``, ``dptx.add(a, b,
out=c)``, ``dptx.maximum.reduce(a, axis=1)``, ``dptx.add.accumulate(a)``,
``dptx.multiply.outer(x, y)``): each is a ``ufunc`` object over ``ufuncs.apply``, which
generates the kernel. numpy's own ufuncs on dptx arrays (``np.add.reduce(a)``) come here
through ``__array_ufunc__``."""
from __future__ import annotations

import numpy as np

from .._array_api import standard as array_api_standard
from .._core import products, reductions, scan, ufuncs
from . import ufunc_at
from ..runtime.ndarray import asarray, ndarray
from .._core.elementwise import ElementwiseKernel, KernelCache, compute_type
from ..errors import DptxError
from ..runtime.layout import check_order

# numpy's reductions with an identity or a first element, by the ufunc that combines
_REDUCTIONS = {np.add: reductions.sum_, np.multiply: reductions.prod,
               np.minimum: reductions.min_, np.maximum: reductions.max_,
               np.logical_and: reductions.all_, np.logical_or: reductions.any_}


def _out(out):
    """numpy takes out= as an array or a tuple of one."""
    if isinstance(out, tuple):
        if len(out) != 1:
            raise ValueError(f"out must be a tuple of 1 array, got {len(out)}")
        out = out[0]
    return out


# numpy 2's generalized ufuncs of vectors (``np.vecdot(a, b)`` reaches dptx as a ufunc)
_VECTOR_PRODUCTS = {np.vecdot: array_api_standard.vecdot, np.matvec: array_api_standard.matvec,
                    np.vecmat: array_api_standard.vecmat}


def call(np_ufunc, *inputs, out=None, casting="same_kind", dtype=None, where=True, order="K",
         subok=True, **gufunc):
    """``np_ufunc(*inputs)`` on dptx arrays, with numpy's keywords that dptx honours
    (``np.matmul`` is a generalized ufunc in numpy 2: the array API's product; ``vecdot``
    takes its ``axis``; ``order``: the layout of a new result; ``subok``: there are no
    subclasses)."""
    order = check_order(order)
    if gufunc and not (np_ufunc is np.vecdot and set(gufunc) == {"axis"}):
        raise DptxError(f"{np_ufunc.__name__}: {', '.join(sorted(gufunc))}= not supported on "
                        f"dptx arrays yet")
    if np_ufunc is np.matmul and where is True and dtype is None and casting == "same_kind":
        return products.matmul(*inputs, out=_out(out))
    product = _VECTOR_PRODUCTS.get(np_ufunc)
    if product is not None and where is True and casting == "same_kind" and \
            (dtype is None or np_ufunc is np.vecdot):
        if np_ufunc is np.vecdot:
            gufunc["dtype"] = dtype
        return product(*inputs, out=_out(out), **gufunc)
    if (np_ufunc in _TWO_OUTPUTS or np_ufunc is np.divmod) and where is True and dtype is None:
        return _two_outputs(np_ufunc, inputs, out, casting)
    if where is not True and (np_ufunc is np.matmul or np_ufunc in _TWO_OUTPUTS
                              or np_ufunc is np.divmod or np_ufunc in _VECTOR_PRODUCTS):
        raise DptxError(f"{np_ufunc.__name__}: where= is not supported on dptx arrays yet")
    if dtype is not None:
        inputs = _in_loop_type(np_ufunc, inputs, dtype, casting)
    if casting not in ("same_kind", "unsafe"):
        raise DptxError(f"{np_ufunc.__name__}: casting={casting!r} is not supported on dptx "
                        f"arrays yet ('same_kind', numpy's default, or 'unsafe')")
    if not any(isinstance(v, ndarray) for v in inputs):
        # scalars only (``dptx.sqrt(2.0)``): a 0-d device array of numpy's type, as CuPy's
        inputs = [asarray(np.asarray(v)) if not isinstance(v, np.ndarray) else v
                  for v in inputs]
    if where is not True:
        return _masked(np_ufunc, inputs, _out(out), casting, where)
    return ufuncs.apply(np_ufunc, *inputs, out=_out(out), casting=casting, order=order)


def _in_loop_type(np_ufunc, inputs, dtype, casting):
    """numpy's ``dtype=``: the loop whose output is ``dtype`` (numpy's choice and errors, the
    input casts checked under ``casting``); the array operands converted to its input type
    where the loop is of one type throughout (``np.add(i, j, dtype=np.float32)``), so that
    the kernel computes in it. Other loops (``ldexp``'s, comparisons') are refused."""
    probes = [np.empty(0, v.dtype) if isinstance(v, ndarray) else v for v in inputs]
    R = np.asarray(np_ufunc(*probes, dtype=dtype, casting=casting)).dtype
    if R.char * np_ufunc.nin + "->" + R.char * np_ufunc.nout not in np_ufunc.types:
        raise DptxError(f"{np_ufunc.__name__}: dtype={np.dtype(dtype)} is not supported on "
                        f"dptx arrays (a loop of mixed types; convert with astype first)")
    return [v.astype(R, copy=False) if isinstance(v, ndarray) else v for v in inputs]


def _masked(np_ufunc, inputs, out, casting, where):
    """numpy's ``where=``: the result written where ``where`` is True, broadcast with the
    operands; elsewhere ``out`` keeps its values (``np.divide(a, b, out=z, where=b != 0)``).
    Without ``out`` numpy leaves those elements uninitialized: here they hold the result."""
    mask = where if isinstance(where, ndarray) else asarray(np.asarray(where))
    if mask.dtype != np.bool_:
        raise TypeError(f"Cannot cast array data from {mask.dtype!r} to dtype('bool') "
                        f"according to the rule 'safe'")
    result = ufuncs.apply(np_ufunc, *inputs)
    if out is None:
        return result if np.broadcast_shapes(result.shape, mask.shape) == result.shape \
            else ufuncs.where(mask, result, result)
    if not isinstance(out, ndarray):
        raise DptxError(f"out= must be a dptx array, got {type(out).__name__}")
    if not np.can_cast(result.dtype, out.dtype, casting=casting):
        raise TypeError(f"Cannot cast ufunc '{np_ufunc.__name__}' output from "
                        f"{result.dtype} to {out.dtype} with casting rule '{casting}'")
    out[...] = ufuncs.where(mask, result, out)
    return out


# ufuncs of two outputs: (C statement setting both from x, with R the computation type)
_TWO_OUTPUTS = {
    np.modf: "R _i; o1 = modf((R)x, &_i); o2 = _i;",     # C's modf: numpy's npy_modf
    np.frexp: "int _e; o1 = frexp((R)x, &_e); o2 = _e;",
}
_two_kernels = KernelCache()


def _two_outputs(np_ufunc, inputs, out, casting):
    """divmod (floor_divide and remainder), modf and frexp: numpy's two results, the second
    one's type numpy's own (frexp: int32 exponents)."""
    if out is not None and (not isinstance(out, tuple) or len(out) != 2):
        raise ValueError(f"{np_ufunc.__name__}: out must be a tuple of 2 arrays")
    outs = out or (None, None)
    if np_ufunc is np.divmod:
        return (ufuncs.apply(np.floor_divide, *inputs, out=outs[0], casting=casting),
                ufuncs.apply(np.remainder, *inputs, out=outs[1], casting=casting))
    (x,) = inputs
    x = asarray(x)
    types = [r.dtype for r in np_ufunc(np.empty(0, x.dtype))]   # numpy's loop and errors
    if x.dtype.kind == "c" or any(t.kind == "c" for t in types):
        raise DptxError("complex dtypes are not supported on dptx arrays yet")
    for o, t in zip(outs, types):
        if o is not None and not np.can_cast(t, o.dtype, casting):
            raise TypeError(f"Cannot cast ufunc '{np_ufunc.__name__}' output from {t} to "
                            f"{o.dtype} with casting rule '{casting}'")
    R = types[0]
    key = (np_ufunc.__name__, str(x.dtype), str(R))
    kernel = _two_kernels.get(key, lambda: ElementwiseKernel(
        f"{x.dtype} x", f"{types[0]} o1, {types[1]} o2",
        f"typedef {compute_type(R)} R; {_TWO_OUTPUTS[np_ufunc]}",
        f"dptx_{np_ufunc.__name__}", options=("--fmad=false",)))
    results = kernel(x)
    if out is None:
        return results
    for o, r in zip(outs, results):
        if o is not None:
            o[...] = r
    return tuple(o if o is not None else r for o, r in zip(outs, results))


def reduce(np_ufunc, a, axis=0, dtype=None, out=None, keepdims=False, **kwargs):
    """``np_ufunc.reduce``: numpy's reductions by their combining ufunc (axis 0 by default,
    as numpy's)."""
    fn = _REDUCTIONS.get(np_ufunc)
    if fn is None:
        raise DptxError(f"{np_ufunc.__name__}.reduce is not supported on dptx arrays yet "
                        f"(add, multiply, minimum, maximum, logical_and, logical_or)")
    out = _out(out)
    if np_ufunc in (np.add, np.multiply):
        return fn(a, axis=axis, dtype=dtype, out=out, keepdims=keepdims, **kwargs)
    if dtype is not None:
        raise DptxError(f"{np_ufunc.__name__}.reduce: dtype= is not supported on dptx arrays")
    return fn(a, axis=axis, out=out, keepdims=keepdims, **kwargs)


def accumulate(np_ufunc, a, axis=0, dtype=None, out=None):
    """``np_ufunc.accumulate`` for add and multiply: numpy's running sums and products."""
    fn = {np.add: scan.cumsum, np.multiply: scan.cumprod}.get(np_ufunc)
    if fn is None:
        raise DptxError(f"{np_ufunc.__name__}.accumulate is not supported on dptx arrays yet "
                        f"(add, multiply)")
    a = asarray(a)
    if a.ndim == 0:
        raise TypeError("cannot accumulate on a scalar")     # numpy's error
    return fn(a, axis=axis, dtype=dtype, out=_out(out))


def outer(np_ufunc, a, b, **kwargs):
    """``np_ufunc.outer``: every element of ``a`` with every element of ``b``, in a result of
    shape ``a.shape + b.shape`` (one launch, by broadcasting)."""
    a, b = asarray(a), asarray(b)
    return call(np_ufunc, a.reshape(a.shape + (1,) * b.ndim), b, **kwargs)


class ufunc:
    """A numpy ufunc on dptx arrays: ``dptx.sqrt``, ``dptx.add``... (CuPy's ``cupy.ufunc``)."""

    def __init__(self, np_ufunc, name: str = None):
        self._ufunc = np_ufunc
        self.__name__ = name or np_ufunc.__name__
        self.nin, self.nout, self.nargs = np_ufunc.nin, np_ufunc.nout, np_ufunc.nargs
        self.__doc__ = f"numpy.{np_ufunc.__name__} on dptx arrays (one launch)."

    def __repr__(self):
        return f"<dptx.ufunc '{self.__name__}'>"

    def __call__(self, *inputs, out=None, **kwargs):
        if len(inputs) != self.nin:
            raise TypeError(f"{self.__name__}() takes {self.nin} positional arguments, got "
                            f"{len(inputs)}")
        return call(self._ufunc, *inputs, out=out, **kwargs)

    def reduce(self, a, axis=0, dtype=None, out=None, keepdims=False, **kwargs):
        return reduce(self._ufunc, a, axis=axis, dtype=dtype, out=out, keepdims=keepdims,
                      **kwargs)

    def accumulate(self, a, axis=0, dtype=None, out=None):
        return accumulate(self._ufunc, a, axis=axis, dtype=dtype, out=out)

    def outer(self, a, b, **kwargs):
        return outer(self._ufunc, a, b, **kwargs)

    def at(self, a, indices, b=None) -> None:
        ufunc_at.at(self._ufunc, a, indices, b)


def ufuncs_by_name() -> dict:
    """name -> ``ufunc`` for every ufunc dptx computes, under numpy's names and aliases
    (``abs``, ``mod``, ``true_divide``, ``acos``...)."""
    out = {}
    for name in dir(np):
        u = getattr(np, name)
        if isinstance(u, np.ufunc) and (u in ufuncs.SUPPORTED or u in _TWO_OUTPUTS
                                        or u is np.divmod):
            out[name] = ufunc(u, name)
    return out
