"""``dptx.fuse``: a chain of element-wise operations as one kernel (CuPy's ``cupy.fuse``).

The decorated function is run once per argument types on stand-ins that record each
operation (numpy's operators and ufuncs, ``numpy.where``) as a statement of C, typed by numpy's
own promotion exactly as the unfused operations are (``dptx._core.ufuncs``); the statements become
one ``ElementwiseKernel``. ``a * 2 + b`` then reads ``a`` and ``b`` and writes the result in
one pass instead of writing and reading a temporary, and costs one launch."""
from __future__ import annotations

import functools
import re
import threading

import numpy as np

from ..errors import DptxError
from ..runtime.ndarray import ndarray
from . import ufuncs
from .elementwise import ElementwiseKernel, c_type, compute_type


def fuse(*args, kernel_name=None):
    """``@dptx.fuse`` or ``@dptx.fuse(kernel_name='name')`` on a function of arrays and
    scalars made of element-wise operations."""
    def wrap(func):
        return Fused(func, kernel_name or func.__name__)
    if len(args) == 1 and callable(args[0]) and kernel_name is None:
        return wrap(args[0])
    if args:
        raise TypeError("fuse takes the function, or only keyword arguments")
    return wrap


class _Var:
    """A value inside a traced function: a C expression (an input or a temporary) and its
    dtype; ``weak`` for a Python scalar (numpy's promotion treats it as weak)."""
    __array_priority__ = 200

    def __init__(self, trace, expr: str, dtype, weak=None):
        self.trace, self.expr, self.dtype, self.weak = trace, expr, np.dtype(dtype), weak

    def probe(self):
        return self.weak if self.weak is not None else np.empty(0, self.dtype)

    def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
        if method != "__call__" or out is not None or kwargs:
            return NotImplemented
        return self.trace.apply(ufunc, inputs)

    def __array_function__(self, func, types, args, kwargs):
        if func is np.where and not kwargs and len(args) == 3:
            return self.trace.where(*args)
        return NotImplemented

    def astype(self, dtype):
        return self.trace.cast(self, np.dtype(dtype))

    def __bool__(self):
        raise DptxError("a fused function cannot branch on an array's values (use "
                        "numpy.where)")


def _ops():
    def binary(name):
        uf = getattr(np, name)
        return (lambda s, o: s.trace.apply(uf, (s, o), operator=True),
                lambda s, o: s.trace.apply(uf, (o, s), operator=True))
    for op, name in (("add", "add"), ("sub", "subtract"), ("mul", "multiply"),
                     ("truediv", "true_divide"), ("floordiv", "floor_divide"),
                     ("mod", "remainder"), ("pow", "power"), ("and", "bitwise_and"),
                     ("or", "bitwise_or"), ("xor", "bitwise_xor"), ("lshift", "left_shift"),
                     ("rshift", "right_shift")):
        f, r = binary(name)
        setattr(_Var, f"__{op}__", f)
        setattr(_Var, f"__r{op}__", r)

    def power(s, o):
        # numpy's ``a ** 2`` is square, ``a ** 0.5`` of floats sqrt..., as unfused
        fast = ufuncs.operator_power(s.dtype, o)
        if fast is not None:
            return s.trace.apply(fast, (s,), operator=True)
        return s.trace.apply(np.power, (s, o), operator=True)
    _Var.__pow__ = power
    for op, name in (("eq", "equal"), ("ne", "not_equal"), ("lt", "less"),
                     ("le", "less_equal"), ("gt", "greater"), ("ge", "greater_equal")):
        setattr(_Var, f"__{op}__", binary(name)[0])
    for op, name in (("neg", "negative"), ("pos", "positive"), ("abs", "absolute"),
                     ("invert", "invert")):
        uf = getattr(np, name)
        setattr(_Var, f"__{op}__", lambda s, uf=uf: s.trace.apply(uf, (s,), operator=True))
    _Var.__hash__ = object.__hash__


_ops()


def _literal(value, dtype) -> str:
    dt = np.dtype(dtype)
    v = np.array(value, dtype=dt)[()]
    if dt.kind == "b":
        return "true" if v else "false"
    if dt.kind == "f":
        return f"(({c_type(dt)}){float(v).hex()})" if np.isfinite(v) else \
            f"(({c_type(dt)})__longlong_as_double({np.float64(v).view(np.int64)}LL))"
    return f"(({c_type(dt)}){int(v)}{'ULL' if dt.kind == 'u' else 'LL'})"


class _WeakParam(_Var):
    """A Python scalar argument: weak in numpy's promotion like a literal, but its value is
    the kernel parameter (converted to each operation's type where it is used)."""

    def __init__(self, trace, expr, dtype, weak):
        super().__init__(trace, expr, dtype, weak=weak)

    def probe(self):
        return self.weak


class _Trace:
    def __init__(self):
        self.lines, self.count = [], 0

    def temp(self, dtype) -> str:
        name = f"_t{self.count}"
        self.count += 1
        self.lines.append(f"{c_type(dtype)} {name};")
        return name

    def operand(self, v):
        if isinstance(v, _Var):
            return v
        if isinstance(v, np.generic):              # a numpy scalar keeps its type
            return _Var(self, _literal(v, v.dtype), v.dtype)
        if isinstance(v, (bool, int, float)):      # a Python scalar is weak
            return _Var(self, None, np.result_type(v), weak=v)
        raise DptxError(f"a fused function got a {type(v).__name__}: only arrays and scalars")

    def apply(self, ufunc, inputs, operator=False):
        """``ufunc`` on traced values; ``operator``: called as a Python operator (``-w``,
        ``w ** 2``), which on Python scalars alone gives a Python scalar (weak), where a numpy
        ufunc (``np.abs(w)``) gives a numpy scalar (strong)."""
        if ufunc not in ufuncs.SUPPORTED or ufunc.nout != 1 or ufunc.nin != len(inputs):
            raise DptxError(f"numpy.{ufunc.__name__} is not supported in a fused function")
        vs = [self.operand(v) for v in inputs]
        R = ufunc(*[v.probe() for v in vs]).dtype
        C = np.result_type(*[v.probe() for v in vs]) if ufunc in ufuncs._COMPARE else R
        types = [v.dtype if v.weak is None else C for v in vs]
        expr = ufuncs.expression(ufunc, R, C, types, inputs)     # as unfused
        if expr is None:
            raise DptxError(f"numpy.{ufunc.__name__} on {', '.join(map(str, types))} is not "
                            f"supported in a fused function")
        t = self.temp(R)
        names = ["x", "y"]
        # as the unfused ufunc: float16 operands and results computed on in float, each
        # result rounded once to half in its temporary (numpy's half loops; cuda_fp16's
        # own arithmetic rounds differently, and its == 0 does not compile)
        decl = " ".join(f"const {compute_type(ty)} {n} = ({compute_type(ty)})"
                        f"({self.value(v, ty)});" for n, v, ty in zip(names, vs, types))
        stmt = expr[len("__STMT__"):] if expr.startswith("__STMT__") else \
            f"z = ({c_type(R)})({expr});"
        self.lines.append(f"{{ typedef {compute_type(R)} R; typedef {compute_type(C)} C; "
                          f"{decl} {c_type(R)} &z = {t}; {stmt} }}")
        if operator and all(v.weak is not None for v in vs):
            # Python scalars only (``-w``, ``w ** 2``, ``abs(w)``): unfused, Python computes
            # them and the result is a Python scalar, weak in what follows
            return _WeakParam(self, t, R, {"b": False, "i": 0, "u": 0, "f": 0.0}[R.kind])
        return _Var(self, t, R)

    @staticmethod
    def value(v, dtype) -> str:
        """C text of ``v`` in ``dtype``."""
        if isinstance(v, _WeakParam):
            return f"(({c_type(dtype)}){v.expr})"
        return _literal(v.weak, dtype) if v.weak is not None else v.expr

    def where(self, cond, x, y):
        c, a, b = (self.operand(v) for v in (cond, x, y))
        R = np.result_type(a.probe(), b.probe())
        t = self.temp(R)
        self.lines.append(f"{t} = ({self.value(c, c.dtype)}) ? ({c_type(R)})({self.value(a, R)})"
                          f" : ({c_type(R)})({self.value(b, R)});")
        return _Var(self, t, R)

    def cast(self, v, dtype):
        t = self.temp(dtype)
        self.lines.append(f"{t} = ({c_type(dtype)})({self.value(v, v.dtype)});")
        return _Var(self, t, dtype)


class Fused:
    """The function and its kernels, one per argument types."""

    def __init__(self, func, name: str):
        # a lambda's name is not a C identifier
        self.func, self.name = func, re.sub(r"\W", "_", name).strip("_") or "kernel"
        self._kernels, self._lock = {}, threading.Lock()
        functools.update_wrapper(self, func)

    def __call__(self, *args):
        if not any(isinstance(a, ndarray) for a in args):
            return self.func(*args)          # scalars only: plain Python, as CuPy does
        key = tuple(str(a.dtype) if isinstance(a, ndarray) else
                    (type(a).__name__, str(np.asarray(a).dtype)) for a in args)
        with self._lock:
            built = self._kernels.get(key)
            if built is None:
                built = self._kernels[key] = self._build(args)
        kernel = built
        inputs = [a if isinstance(a, ndarray) else np.asarray(a)[()] for a in args]
        return kernel(*inputs)

    def _build(self, args):
        trace = _Trace()
        params, vars_ = [], []
        for k, a in enumerate(args):
            if isinstance(a, ndarray):
                dt, weak = a.dtype, None
            elif isinstance(a, (bool, int, float)):
                dt, weak = np.result_type(a), a
            elif isinstance(a, np.generic):
                dt, weak = np.asarray(a).dtype, None
            else:
                raise DptxError(f"{self.name}: argument {k} is a {type(a).__name__}: a fused "
                                f"function takes dptx arrays and scalars")
            params.append(f"{dt} _in{k}")
            v = _Var(trace, f"_in{k}", dt)
            if weak is not None:
                # a Python scalar argument stays weak in the promotion, its value comes in
                # as a parameter of its own type
                v = _WeakParam(trace, f"_in{k}", dt, weak)
            vars_.append(v)
        result = self.func(*vars_)
        results = result if isinstance(result, tuple) else (result,)
        outs = []
        for k, r in enumerate(results):
            r = trace.operand(r)
            outs.append(f"{r.dtype} _out{k}")
            trace.lines.append(f"_out{k} = {trace.value(r, r.dtype)};")
        kernel = ElementwiseKernel(", ".join(params), ", ".join(outs), "\n    ".join(trace.lines),
                                   f"fused_{self.name}", options=ufuncs.EXACT,
                                   return_tuple=isinstance(result, tuple))
        return kernel
