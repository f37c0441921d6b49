"""numpy's reductions on the devices: ``sum``, ``prod``, ``min``, ``max``, ``mean``, ``argmin``,
``argmax``, ``any``, ``all`` with ``axis``, ``keepdims``, ``dtype``, ``out=``, ``where=`` and
``initial=``, each a ``ReductionKernel`` (``reduction_kernel``) made for the operation and
types (float sums summed in blocks, not pairwise: the last bits differ from numpy's, as
CuPy's)."""
from __future__ import annotations

import numpy as np

from .elementwise import HALF, KernelCache, c_type, conversion
from ..errors import DptxError
from . import outputs, ufuncs
from .reduction_kernel import EXACT, ReductionKernel
from ..runtime.ndarray import _axes, asarray, empty, ndarray
from ..runtime.stream import stream_for

_builtins = KernelCache()   # numpy's reductions, by operation and dtypes


def _extreme(dtype, largest: bool) -> str:
    """C text of the largest (or smallest) value of ``dtype``: min's (max's) identity."""
    dt = np.dtype(dtype)
    if dt.kind == "c":      # (both parts: every value is ordered before it, or after it)
        part = _extreme(dt.char.lower(), largest)
        return f"{c_type(dt)}({part}, {part})"
    if dt.kind == "f":
        return ("" if largest else "-") + "__int_as_float(0x7f800000)" if dt.itemsize == 4 \
            else ("" if largest else "-") + "__longlong_as_double(0x7ff0000000000000LL)"
    if dt.kind == "b":
        return "true" if largest else "false"
    info = np.iinfo(dt)
    v = info.max if largest else info.min
    if dt.kind == "i" and not largest:
        return f"({v + 1}LL - 1)"        # the literal -2**63 does not parse in C
    return f"{v}{'ULL' if dt.kind == 'u' else 'LL'}"


_COMPLEX_NAN = "(({v}).real() != ({v}).real() || ({v}).imag() != ({v}).imag())"


def _complex_order(cmp: str, x: str, y: str) -> str:
    """C: whether complex ``x`` comes before (``cmp`` "<") or after (">") ``y`` in numpy's
    order (real parts, then imaginary ones; NaNs are handled by the caller)."""
    return (f"(({x}).real() {cmp} ({y}).real() || (({x}).real() == ({y}).real() && "
            f"({x}).imag() {cmp} ({y}).imag()))")


def _reduce(a, op: str, axis, dtype, out, keepdims, result_dtype):
    """One of numpy's reductions of ``a``: ``op`` in sum prod min max any all, or fmin fmax
    (numpy's ``fmin.reduce``: NaN only where every element is NaN, ``nanmin``'s core)."""
    a = asarray(a)
    R = np.dtype(result_dtype)
    if op in ("min", "max", "fmin", "fmax"):
        # numpy's rule: an error when the reduced axes hold no element, even where the
        # result is empty too ((0, 0) along 0), none where only the kept axes are empty
        reduced = range(a.ndim) if axis is None else _axes(axis, a.ndim)
        if any(a.shape[k] == 0 for k in reduced):
            name = {"min": "minimum", "max": "maximum"}.get(op, op)
            raise ValueError(f"zero-size array to reduction operation {name} which has no "
                             f"identity")
    if out is not None and out.dtype != R:
        outputs.check(out, out.shape, R, op)        # a dptx array (its shape: below)
        if op in ("sum", "prod") and dtype is None and np.can_cast(a.dtype, out.dtype, "safe"):
            R = out.dtype       # numpy computes in out's type where the input casts to it
        else:                   # numpy's type, then converted into out (an unsafe cast)
            with stream_for(None).together():
                return outputs.store(out, _reduce(a, op, axis, dtype, None, keepdims, R), op)
    X = a.dtype

    # float16 results accumulate in float, as numpy's half loops do, rounded once at the end
    acc = np.dtype(np.float32) if R == HALF else R

    def build():
        # each element converted to the accumulation type as numpy converts (a negative
        # float summed as uint64 wraps)
        if op == "sum":
            spec = (conversion(X, acc), "a + b", "0")
        elif op == "prod":
            spec = (conversion(X, acc), "a * b", "1")
        elif op in ("min", "max"):
            cmp = "<" if op == "min" else ">"
            if R.kind == "c":
                # numpy's minimum/maximum of complex values: by real parts then imaginary
                # ones, a NaN (in either part) propagating
                combine = (f"{_COMPLEX_NAN.format(v='a')} ? a : ({_COMPLEX_NAN.format(v='b')}"
                           f" ? b : ({_complex_order(cmp, 'b', 'a')} ? b : a))")
            elif R.kind == "f":
                combine = f"(a != a) ? a : ((b != b) ? b : ((b {cmp} a) ? b : a))"
            else:
                combine = f"(b {cmp} a) ? b : a"
            spec = ("x", combine, _extreme(acc, op == "min"))
        elif op in ("fmin", "fmax"):
            # a NaN loses to any number; the identity is a NaN (what an all-NaN slice gives)
            cmp = "<" if op == "fmin" else ">"
            spec = ("x", f"(b != b) ? a : ((a != a) ? b : ((b {cmp} a) ? b : a))",
                    "__int_as_float(0x7fc00000)" if acc.itemsize == 4
                    else "__longlong_as_double(0x7ff8000000000000LL)")
        elif op == "any":
            spec = ("(bool)x", "a || b", "false")
        else:
            spec = ("(bool)x", "a && b", "true")
        return ReductionKernel(f"{X} x", f"{R} y", spec[0], spec[1], "y = a", spec[2],
                               f"dptx_{op}", reduce_type=str(acc), options=EXACT)
    kernel = _builtins.get((op, str(X), str(R)), build)
    return kernel(a, axis=axis, keepdims=keepdims, out=out)


def _result_dtype(a, op: str, dtype):
    probe = np.zeros(1, a.dtype)
    fn = {"sum": np.sum, "prod": np.prod, "min": np.min, "max": np.max,
          "any": np.any, "all": np.all}[op]
    if op in ("sum", "prod"):
        return fn(probe, dtype=dtype).dtype
    return fn(probe).dtype


def sum_(a, axis=None, dtype=None, out=None, keepdims=False, **kwargs):
    where, initial = _extra(kwargs, "sum")
    return _reduce_where(a, "sum", axis, dtype, out, keepdims,
                         _result_dtype(_arr(a), "sum", dtype), where, initial)


def prod(a, axis=None, dtype=None, out=None, keepdims=False, **kwargs):
    where, initial = _extra(kwargs, "prod")
    return _reduce_where(a, "prod", axis, dtype, out, keepdims,
                         _result_dtype(_arr(a), "prod", dtype), where, initial)


def min_(a, axis=None, out=None, keepdims=False, **kwargs):
    where, initial = _extra(kwargs, "min")
    return _reduce_where(a, "min", axis, None, out, keepdims, _arr(a).dtype, where, initial)


def max_(a, axis=None, out=None, keepdims=False, **kwargs):
    where, initial = _extra(kwargs, "max")
    return _reduce_where(a, "max", axis, None, out, keepdims, _arr(a).dtype, where, initial)


def any_(a, axis=None, out=None, keepdims=False, **kwargs):
    where, _ = _extra(kwargs, "any", initial=False)
    return _reduce_where(a, "any", axis, None, out, keepdims, np.bool_, where, None)


def all_(a, axis=None, out=None, keepdims=False, **kwargs):
    where, _ = _extra(kwargs, "all", initial=False)
    return _reduce_where(a, "all", axis, None, out, keepdims, np.bool_, where, None)


_IDENTITY = {"sum": 0, "prod": 1, "any": False, "all": True}
_COMBINE = {"sum": np.add, "prod": np.multiply, "min": np.minimum, "max": np.maximum,
            "fmin": np.fmin, "fmax": np.fmax}
_NO_IDENTITY = {"min": "minimum", "max": "maximum", "fmin": "fmin", "fmax": "fmax"}


def _reduce_where(a, op, axis, dtype, out, keepdims, result_dtype, where, initial):
    """numpy's ``where=`` and ``initial=``: the elements where ``where`` is False replaced by
    the reduction's identity (min and max have none: numpy then asks for ``initial``, which
    takes its place), and ``initial`` combined with each result (the whole result where
    the reduced axes are empty)."""
    if where is True and initial is None:
        return _reduce(a, op, axis, dtype, out, keepdims, result_dtype)
    a, R = asarray(a), np.dtype(result_dtype)
    if initial is not None:
        initial = np.asarray(initial).astype(R)[()]     # (numpy's conversion and errors)
    if where is not True:
        if op in _NO_IDENTITY and initial is None:
            raise ValueError(f"reduction operation '{_NO_IDENTITY[op]}' does not have an "
                             f"identity, so to use a where mask one has to specify 'initial'")
        mask = _where_mask(where, a.shape)
        fill = initial if op in _NO_IDENTITY else np.asarray(_IDENTITY[op]).astype(R)[()]
        a = ufuncs.where(mask, a if a.dtype == R else ufuncs.astype(a, R), fill)
    reduced = range(a.ndim) if axis is None else _axes(axis, a.ndim)
    with stream_for(None).together():
        if initial is not None and any(a.shape[k] == 0 for k in reduced):
            shape = tuple(1 if k in reduced else n for k, n in enumerate(a.shape)) \
                if keepdims else tuple(n for k, n in enumerate(a.shape) if k not in reduced)
            result = empty(shape, R)
            result.fill(initial)
        else:
            result = _reduce(a, op, axis, dtype, None, keepdims, R)
            if initial is not None:
                result = ufuncs.apply(_COMBINE[op], result, np.asarray(initial, R))
        return result if out is None else outputs.store(out, result, op)


def _where_mask(where, shape: tuple):
    """``where`` as a boolean dptx array that broadcasts to the reduced array's shape."""
    mask = where if isinstance(where, ndarray) else asarray(np.asarray(where))
    if mask.dtype != np.bool_:
        mask = ufuncs.astype(mask, np.bool_)
    try:
        ok = np.broadcast_shapes(mask.shape, shape) == tuple(shape)
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f"non-broadcastable operand with shape {mask.shape} doesn't match "
                         f"the broadcast shape {tuple(shape)}")
    return mask


def mean(a, axis=None, dtype=None, out=None, keepdims=False, **kwargs):
    """numpy.mean: the sum in numpy's mean type (float64 for integers), divided by the
    count (with ``where=``, the count of True elements of each slice)."""
    where, _ = _extra(kwargs, "mean", initial=False)
    a = _arr(a)
    R = np.dtype(dtype) if dtype is not None else np.mean(np.zeros(1, a.dtype)).dtype
    # numpy sums float16 in float32 for a mean and rounds the quotient once
    S = np.dtype(np.float32) if R == HALF and dtype is None else R
    with stream_for(None).together():       # its launches in one message
        total = _reduce_where(a, "sum", axis, S, None, keepdims, S, where, None)
        if where is True:
            count = a.size // total.size if total.size else 0      # elements per mean
            # (the count as a Python int, weak as numpy's: in float16 100000 would be inf)
            count = int(count)
        else:
            mask = _where_mask(where, a.shape)
            ones = ufuncs.astype(mask, np.int64) if mask.shape == a.shape else \
                _broadcast_count(mask, a.shape)
            count = _reduce(ones, "sum", axis, None, None, keepdims, np.int64)
        # numpy divides the sum (in R) by the count, a float division for an integer R,
        # then converts to R (an integer dtype= truncates) or into out (an unsafe cast)
        quotient = ufuncs.apply(np.true_divide, total, count)
        if where is not True and quotient.dtype != S:
            quotient = ufuncs.astype(quotient, S)      # (numpy divides into the sum's type)
        if out is not None:
            return outputs.store(out, quotient, "mean")
        return quotient if quotient.dtype == R else ufuncs.astype(quotient, R)


def _broadcast_count(mask, shape: tuple):
    """1 where the mask (broadcast to ``shape``) is True, else 0, as int64 of ``shape``."""
    ones = empty(shape, np.int64)
    ones.fill(1)
    return ufuncs.where(mask, ones, np.int64(0))


def argmin(a, axis=None, out=None, keepdims=False):
    return _arg(a, "min", axis, out, keepdims)


def argmax(a, axis=None, out=None, keepdims=False):
    return _arg(a, "max", axis, out, keepdims)


def _arg(a, op: str, axis, out, keepdims):
    """numpy.argmin/argmax: the index of the first extreme (of the first NaN, for floats),
    over the flattened array when ``axis`` is None."""
    a = _arr(a)
    # as numpy: an error when the searched axis is empty, none where only others are
    if a.size == 0 and (axis is None or a.shape[_axes(axis, a.ndim)[0]] == 0):
        raise ValueError(f"attempt to get arg{op} of an empty sequence")
    if axis is None:
        a = a.reshape(-1)
        axis = 0
    X = a.dtype
    xt = c_type(X)
    cmp = "<" if op == "min" else ">"
    pick = f"(b_v {cmp} a_v) || (b_v == a_v && b_i < a_i)"
    if X.kind == "c":
        # numpy's complex argmin/argmax: the first NaN (in either part), else the first
        # extreme in its order
        a_nan, b_nan = _COMPLEX_NAN.format(v="a_v"), _COMPLEX_NAN.format(v="b_v")
        pick = (f"{a_nan} ? ({b_nan} && b_i < a_i) : ({b_nan} || "
                f"{_complex_order(cmp, 'b_v', 'a_v')} || (b_v == a_v && b_i < a_i))")
    elif X.kind == "f":
        pick = (f"(a_v != a_v) ? ((b_v != b_v) && b_i < a_i) : "
                f"((b_v != b_v) || (b_v {cmp} a_v) || (b_v == a_v && b_i < a_i))")
    preamble = (f"struct _arg_t {{ {xt} v; long long i; }};\n"
                f"__device__ _arg_t _arg_pick(_arg_t a, _arg_t b) {{ {xt} a_v = a.v, b_v = b.v;"
                f" long long a_i = a.i, b_i = b.i; return ({pick}) ? b : a; }}\n"
                f"__device__ _arg_t _arg_make({xt} v, long long i) {{ _arg_t r; r.v = v; "
                f"r.i = i; return r; }}\n")

    def build():
        return _ArgKernel(X, op, preamble)
    kernel = _builtins.get(("arg" + op, str(X)), build)
    if out is not None and out.dtype != np.int64:
        # numpy's rule for an index's out is the other way round: out's type must cast
        # safely to int64, the index is then converted into it
        outputs.check(out, out.shape, out.dtype, f"arg{op}")
        if not np.can_cast(out.dtype, np.int64, "safe"):
            raise TypeError(f"Cannot cast array data from {out.dtype!r} to dtype('int64') "
                            f"according to the rule 'safe'")
        with stream_for(None).together():
            return outputs.store(out, kernel(a, axis, None, keepdims), f"arg{op}")
    return kernel(a, axis, out, keepdims)


class _ArgKernel(ReductionKernel):
    """argmin/argmax: the reduced value is a (value, index) pair; ``_j`` is the index along
    the reduced axis."""

    def __init__(self, X, op, preamble):
        super().__init__(f"{X} x", "int64 y", "_arg_make(x, _j)", "_arg_pick(a, b)", "y = a.i",
                         f"_arg_make({_extreme(X, op == 'min')}, 9223372036854775807LL)",
                         name=f"dptx_arg{op}", preamble=preamble, options=EXACT)
        self._X = X

    def __call__(self, a, axis, out, keepdims):
        ax = _axes(axis, a.ndim)
        if len(ax) != 1:
            raise TypeError("'tuple' object cannot be interpreted as an integer")  # numpy's
        return super().__call__(a, axis=ax[0], keepdims=keepdims, out=out)

    def _types(self, args, out):
        types = {"x": np.dtype(self._X), "y": np.dtype(np.int64)}
        return types, {}

    def source(self, types, placeholders, rtype, kinds, layout, nkept, nred, mode,
               wide) -> str:
        # the pair type stands for the reduce type
        src = super().source(types, placeholders, np.dtype(np.int64), kinds, layout, nkept, nred,
                             mode, wide)
        return src.replace("typedef long long _reduce_t;", "typedef _arg_t _reduce_t;") \
                  .replace("const long long* __restrict__ _partial, long long*",
                           "const _arg_t* __restrict__ _partial, long long*") \
                  .replace("_reduce_t* __restrict__ _partial", "_arg_t* __restrict__ _partial")

    def _partial(self, count: int, rtype):
        return empty((2 * count,), np.int64)      # (value, index) pairs of 16 bytes


def _arr(a):
    return asarray(a)


def _extra(kwargs, name, initial=True) -> tuple:
    """numpy's ``where=`` (and, where the reduction takes it, ``initial=``) from ``kwargs``;
    a TypeError for any other keyword, as numpy's."""
    allowed = {"where", "initial"} if initial else {"where"}
    extra = set(kwargs) - allowed
    if extra:
        raise TypeError(f"{name}() got unexpected keyword arguments {sorted(extra)}")
    return kwargs.get("where", True), kwargs.get("initial", None)


def _no_extra(kwargs, name):
    """For reductions that take neither ``where=`` nor ``initial=`` here."""
    where, initial = _extra(kwargs, name)
    if where is not True or initial is not None:
        raise DptxError(f"{name}: where= and initial= are not supported on dptx arrays yet")


# -- products --------------------------------------------------------------------------------------
