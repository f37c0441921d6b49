"""numpy's element-wise ufuncs on dptx arrays: operators, ``np.sqrt(a)``, ``out=``.

Each ufunc call becomes one ``ElementwiseKernel`` launch (generated CUDA C, compiled once per
dtypes and cached). numpy decides the result: the output dtype and the type the operation is
computed in come from numpy itself, on empty arrays of the operands' dtypes (Python scalars
are weak, as NEP 50 has them; numpy scalars keep their type), so promotion, the errors numpy
raises for a missing loop (``-bool``) and out-of-range Python integers are numpy's. The C of
each operation follows numpy's definitions where C differs: floor division and remainder
round toward minus infinity, shifts by the width or more give 0 (or -1), ``minimum`` and
``maximum`` propagate NaN. The kernels are compiled without contracting ``a * b + c`` into
an fma (``--fmad=false``), as numpy computes."""
from __future__ import annotations

import operator
import warnings

import numpy as np

from ..runtime.ndarray import may_share_memory, ndarray
from ..runtime.layout import c_strides, f_strides, result_strides
from .elementwise import (HALF, ElementwiseKernel, KernelCache, c_type, compute_type,
                          conversion, truth)
from ..errors import DptxError

EXACT = ("--fmad=false",)

# binary: (C expression in x, y with R the computation type); None: not for this kind
_ARITH = {
    np.add: "(R)x + (R)y", np.subtract: "(R)x - (R)y", np.multiply: "(R)x * (R)y",
    np.true_divide: "(R)x / (R)y",
    np.bitwise_and: "(R)x & (R)y", np.bitwise_or: "(R)x | (R)y", np.bitwise_xor: "(R)x ^ (R)y",
    np.arctan2: "atan2((R)x, (R)y)", np.hypot: "hypot((R)x, (R)y)",
    np.copysign: "copysign((R)x, (R)y)",
}
_COMPARE = {np.equal: "==", np.not_equal: "!=", np.less: "<", np.less_equal: "<=",
            np.greater: ">", np.greater_equal: ">="}
_LOGICAL = {np.logical_and: "{x} && {y}", np.logical_or: "{x} || {y}",
            np.logical_xor: "{x} != {y}"}

# unary: C expression in x (R: the result type); "float" ones take the float type R
_UNARY = {
    np.negative: "-(R)x", np.positive: "(R)x", np.square: "(R)x * (R)x",
    np.sqrt: "sqrt((R)x)", np.cbrt: "cbrt((R)x)", np.exp: "exp((R)x)", np.exp2: "exp2((R)x)",
    np.expm1: "expm1((R)x)", np.log: "log((R)x)", np.log2: "log2((R)x)",
    np.log10: "log10((R)x)", np.log1p: "log1p((R)x)", np.sin: "sin((R)x)",
    np.cos: "cos((R)x)", np.tan: "tan((R)x)", np.arcsin: "asin((R)x)",
    np.arccos: "acos((R)x)", np.arctan: "atan((R)x)", np.sinh: "sinh((R)x)",
    np.cosh: "cosh((R)x)", np.tanh: "tanh((R)x)", np.floor: "floor((R)x)",
    np.ceil: "ceil((R)x)", np.trunc: "trunc((R)x)", np.rint: "rint((R)x)",
    np.isnan: "isnan(x)", np.isinf: "isinf(x)", np.isfinite: "isfinite(x)",
    np.signbit: "signbit(x)", np.logical_not: "!(bool)x",
    np.arcsinh: "asinh((R)x)", np.arccosh: "acosh((R)x)", np.arctanh: "atanh((R)x)",
    np.fabs: "fabs((R)x)",
    # numpy's npy_deg2rad/npy_rad2deg: x times the constant folded in the type
    np.deg2rad: "(R)x * ((R)3.14159265358979323846 / (R)180)",
    np.radians: "(R)x * ((R)3.14159265358979323846 / (R)180)",
    np.rad2deg: "(R)x * ((R)180 / (R)3.14159265358979323846)",
    np.degrees: "(R)x * ((R)180 / (R)3.14159265358979323846)",
    # numpy's npy_spacing: NaN for infinities (inf - inf), else the gap to the next value
    # away from 0
    np.spacing: "isinf((R)x) ? (R)x - (R)x : nextafter((R)x, ((R)x < 0 ? (R)-1 : (R)1) / (R)0) - (R)x",
}

# binary ufuncs of floats (integer inputs compute in numpy's float result type)
_FLOAT_BINARY = {
    np.fmod: "fmod((R)x, (R)y)", np.nextafter: "nextafter((R)x, (R)y)",
    np.float_power: "pow((R)x, (R)y)",
    np.ldexp: "ldexp((R)x, (int)max(min((long long)y, 2147483647LL), -2147483647LL - 1))",
    # numpy's npy_heaviside
    np.heaviside: "((R)x != (R)x) ? (R)x : (((R)x == 0) ? (R)y : (((R)x < 0) ? (R)0 : (R)1))",
    # numpy's npy_logaddexp and npy_logaddexp2
    np.logaddexp: "__STMT__R _x = (R)x, _y = (R)y, _t = _x - _y; z = (_x == _y) ? _x + "
                  "(R)0.693147180559945309417232121458176568 : (_t > 0) ? _x + "
                  "log1p(exp(-_t)) : (_t <= 0) ? _y + log1p(exp(_t)) : _t;",
    np.logaddexp2: "__STMT__R _x = (R)x, _y = (R)y, _t = _x - _y; z = (_x == _y) ? _x + 1 : "
                   "(_t > 0) ? _x + (R)1.442695040888963407359924681001892137 * "
                   "log1p(exp2(-_t)) : (_t <= 0) ? _y + "
                   "(R)1.442695040888963407359924681001892137 * log1p(exp2(_t)) : _t;",
}


def _probe(value):
    """What numpy sees of an operand: an empty array of a dptx array's dtype, else the
    scalar itself (weak when it is a Python scalar)."""
    if isinstance(value, ndarray):
        return np.empty(0, value.dtype)
    if isinstance(value, (np.ndarray,)):
        raise DptxError("mixing numpy and dptx arrays: move the numpy array to the device "
                        "first (dptx.asarray)")
    if isinstance(value, (bool, int, float, complex, np.generic)):
        return value
    raise TypeError(f"unsupported operand type {type(value).__name__} for a dptx array "
                    f"operation")


_kernels = KernelCache()     # ufunc kernels by ufunc, dtypes and result


def _as_param(v, dtype) -> object:
    """A scalar operand in ``dtype`` (numpy's errors for Python integers out of range)."""
    if isinstance(v, ndarray):
        return v
    return np.array(v, dtype=dtype)[()]


# numpy's order of complex values (npymath's CLT, CLE): by real parts, then imaginary ones; a
# NaN part is unordered
_COMPLEX_LT = ("((C)x).real() < ((C)y).real() && ((C)x).imag() == ((C)x).imag() && "
               "((C)y).imag() == ((C)y).imag()")
_COMPLEX_ORDER = {
    np.less: f"({_COMPLEX_LT}) || (((C)x).real() == ((C)y).real() && "
             f"((C)x).imag() < ((C)y).imag())",
    np.less_equal: f"({_COMPLEX_LT}) || (((C)x).real() == ((C)y).real() && "
                   f"((C)x).imag() <= ((C)y).imag())",
}
_COMPLEX_ORDER[np.greater] = _COMPLEX_ORDER[np.less].replace("x)", "_X)").replace(
    "y)", "x)").replace("_X)", "y)")
_COMPLEX_ORDER[np.greater_equal] = _COMPLEX_ORDER[np.less_equal].replace("x)", "_X)").replace(
    "y)", "x)").replace("_X)", "y)")


def _complex_binary_expr(ufunc, R: np.dtype, C: np.dtype):
    """numpy's complex loops (npymath's nc_*, the C* order macros); None where numpy has
    none (it refused the operands before) or dptx has none yet."""
    if ufunc in (np.equal, np.not_equal):
        return f"(C)x {_COMPARE[ufunc]} (C)y"
    if ufunc in _COMPLEX_ORDER:
        return _COMPLEX_ORDER[ufunc]
    if ufunc in (np.minimum, np.maximum, np.fmin, np.fmax):
        # numpy: the first where it is ordered before (or equal), or where its own NaN
        # propagates (minimum, maximum) or the other's is skipped (fmin, fmax)
        order = _COMPLEX_ORDER[np.less_equal if ufunc in (np.minimum, np.fmin)
                               else np.greater_equal].replace("(C)", "(R)")
        side = "x" if ufunc in (np.minimum, np.maximum) else "y"
        nan = (f"((R){side}).real() != ((R){side}).real() || "
               f"((R){side}).imag() != ((R){side}).imag()")
        return f"(({order}) || {nan}) ? (R)x : (R)y"
    if ufunc in (np.add, np.subtract, np.multiply, np.true_divide):
        return _ARITH[ufunc]
    if ufunc in (np.power, np.float_power):
        return "dptx::pow((R)x, (R)y)"
    return None


def _binary_expr(ufunc, R: np.dtype, C: np.dtype) -> str:
    kind = R.kind
    if "c" in (R.kind, C.kind) and ufunc not in _LOGICAL:
        return _complex_binary_expr(ufunc, R, C)
    if ufunc in _COMPARE:
        return f"(C)x {_COMPARE[ufunc]} (C)y"
    if ufunc in _LOGICAL:
        return _LOGICAL[ufunc].format(x=truth(C, "x"), y=truth(C, "y"))
    if ufunc in (np.minimum, np.maximum, np.fmin, np.fmax):
        op = "<" if ufunc in (np.minimum, np.fmin) else ">"
        if kind != "f":
            # integers and booleans have no NaN: numpy's fmin/fmax are minimum/maximum
            return f"((R)x {op} (R)y) ? (R)x : (R)y"
        # equal operands (+0 and -0) give what numpy's loops give: the second of float32
        # and float64 (its SIMD loops, as x86's max), the first of float16 (npy_half_ge)
        if R == HALF:
            op += "="
        if ufunc in (np.fmin, np.fmax):
            # a NaN gives the other operand
            return (f"((R)x != (R)x) ? (R)y : (((R)y != (R)y) ? (R)x : "
                    f"((R)x {op} (R)y ? (R)x : (R)y))")
        return f"((R)x != (R)x) ? (R)x : (((R)y != (R)y) ? (R)y : ((R)x {op} (R)y ? (R)x : (R)y))"
    if ufunc in (np.floor_divide, np.remainder):
        if kind == "f":
            # numpy's npy_divmod
            mod = "_m"
            body = ("R _m = fmod((R)x, (R)y); R _d; "
                    "if ((R)y == 0) { _d = (R)x / (R)y; } else { _d = ((R)x - _m) / (R)y; "
                    "if (_m != 0) { if (((R)y < 0) != (_m < 0)) { _m += (R)y; _d -= 1; } } "
                    "else { _m = copysign((R)0, (R)y); } "
                    "if (_d != 0) { R _f = floor(_d); if (_d - _f > (R)0.5) _f += 1; _d = _f; } "
                    "else { _d = copysign((R)0, (R)x / (R)y); } }")
            return f"__STMT__{body} z = {'_d' if ufunc is np.floor_divide else mod};"
        if kind in "iu":
            signed = kind == "i"
            if ufunc is np.floor_divide:
                adjust = " if (((R)x % (R)y != 0) && (((R)x < 0) != ((R)y < 0))) _q -= 1;" if signed else ""
                return (f"__STMT__R _q = 0; if ((R)y != 0) {{ _q = (R)x / (R)y;{adjust} }} z = _q;")
            adjust = " if (_r != 0 && ((_r < 0) != ((R)y < 0))) _r += (R)y;" if signed else ""
            return f"__STMT__R _r = 0; if ((R)y != 0) {{ _r = (R)x % (R)y;{adjust} }} z = _r;"
        return None
    if ufunc is np.power:
        if kind == "f":
            return "pow((R)x, (R)y)"
        if kind in "iu":
            # computed in R as numpy does (an unsigned exponent of 2**63 stays positive).
            # numpy raises for a negative integer exponent after looking at the data; a
            # device cannot without a wait, so CuPy's values: 1 and -1 keep their powers
            # (1/x truncated), every other base gives 0
            negative = ("if (_e < 0) { _p = (_b == 1) ? (R)1 : (_b == (R)-1) ? "
                        "((_e & 1) ? (R)-1 : (R)1) : (R)0; } else " if kind == "i" else "")
            return ("__STMT__R _b = (R)x, _p = 1, _e = (R)y; " + negative +
                    "{ while (_e) { if (_e & 1) _p *= _b; _b *= _b; _e >>= 1; } } z = _p;")
        return None
    if ufunc in (np.left_shift, np.right_shift):
        if kind not in "iu":
            return None
        bits = R.itemsize * 8
        if ufunc is np.left_shift:
            return f"((long long)y < 0 || (long long)y >= {bits}) ? (R)0 : (R)((R)x << y)"
        fill = "(((R)x < 0) ? (R)-1 : (R)0)" if kind == "i" else "(R)0"
        return f"((long long)y < 0 || (long long)y >= {bits}) ? {fill} : (R)((R)x >> y)"
    if ufunc in _FLOAT_BINARY:
        if ufunc is np.nextafter and R == HALF:
            return _HALF_NEXTAFTER
        if kind == "f":
            return _FLOAT_BINARY[ufunc]
        if ufunc is np.fmod and kind in "iu":
            # C's % truncates as numpy's fmod; numpy gives 0 for x % 0 and MIN % -1
            guard = f" && !((R)y == (R)-1 && (R)x == (R){np.iinfo(R).min})" if kind == "i" else ""
            return f"__STMT__R _r = 0; if ((R)y != 0{guard}) _r = (R)x % (R)y; z = _r;"
        return None
    if ufunc in (np.gcd, np.lcm):
        if kind not in "iu":
            return None
        # Euclid on the magnitudes (unsigned: abs of the type's minimum wraps, as numpy's)
        gcd = ("unsigned long long _a = (x < 0) ? 0ULL - (unsigned long long)x : "
               "(unsigned long long)x, _b = (y < 0) ? 0ULL - (unsigned long long)y : "
               "(unsigned long long)y; while (_b) { unsigned long long _t = _a % _b; _a = _b; "
               "_b = _t; } ") if kind == "i" else (
               "unsigned long long _a = x, _b = y; while (_b) { unsigned long long _t = _a % _b; "
               "_a = _b; _b = _t; } ")
        if ufunc is np.gcd:
            return f"__STMT__{gcd}z = (R)_a;"
        # numpy's npy_lcm: |x| / gcd * |y| in unsigned arithmetic of at least int's width
        # (types narrower than int go through npy_lcm on ints), wrapped and cast to the type
        c = c_type(R)
        uw = "unsigned int" if R.itemsize <= 4 else "unsigned long long"
        def magnitude(v):
            return (f"(({v} < 0) ? 0ULL - (unsigned long long){v} : (unsigned long long){v})"
                    if kind == "i" else f"(unsigned long long){v}")
        mx, my = magnitude("x"), magnitude("y")
        return (f"__STMT__{gcd}{uw} _p = (_a == 0) ? 0u : "
                f"({uw})({mx} / _a) * ({uw}){my}; z = ({c})_p;")
    if ufunc in _ARITH:
        if kind == "b" and ufunc in (np.add, np.multiply):
            return "(bool)x || (bool)y" if ufunc is np.add else "(bool)x && (bool)y"
        return _ARITH[ufunc]
    return None


# complex ufuncs as dptx_complex.h computes them (numpy's npymath's formulas, to rounding)
_COMPLEX_UNARY = {
    np.negative: "-(R)x", np.positive: "(R)x", np.square: "(R)x * (R)x",
    np.reciprocal: "(R)1 / (R)x", np.conjugate: "dptx::conj((R)x)",
    np.absolute: "dptx::abs(x)",
    np.sqrt: "dptx::sqrt((R)x)", np.exp: "dptx::exp((R)x)",
    np.log: "dptx::log((R)x)", np.log10: "dptx::log10((R)x)",
    # numpy's nc_exp2 and nc_log2: through e
    np.exp2: "dptx::exp((R)x * (R::value_type)0.693147180559945309417232121458176568)",
    np.log2: "dptx::log((R)x) / (R::value_type)0.693147180559945309417232121458176568",
    np.sin: "dptx::sin((R)x)", np.cos: "dptx::cos((R)x)",
    np.tan: "dptx::tan((R)x)", np.sinh: "dptx::sinh((R)x)",
    np.cosh: "dptx::cosh((R)x)", np.tanh: "dptx::tanh((R)x)",
    np.arcsin: "dptx::asin((R)x)", np.arccos: "dptx::acos((R)x)",
    np.arctan: "dptx::atan((R)x)", np.arcsinh: "dptx::asinh((R)x)",
    np.arccosh: "dptx::acosh((R)x)", np.arctanh: "dptx::atanh((R)x)",
    # numpy 2's sign of a complex value: x / |x| (0 for 0)
    np.sign: "((R)x == (R)0) ? (R)0 : (R)x / dptx::abs((R)x)",
    np.isnan: "(x.real() != x.real() || x.imag() != x.imag())",
    np.isinf: "(isinf(x.real()) || isinf(x.imag()))",
    np.isfinite: "(isfinite(x.real()) && isfinite(x.imag()))",
}


def _unary_expr(ufunc, R: np.dtype, X: np.dtype) -> str:
    if X.kind == "c":
        if ufunc is np.logical_not:
            return f"!{truth(X)}"
        return _COMPLEX_UNARY.get(ufunc)
    if ufunc is np.absolute:
        return "fabs((R)x)" if R.kind == "f" else ("x" if X.kind in "ub" else "(R)(x < 0 ? -x : x)")
    if ufunc is np.reciprocal:
        # integers: numpy's 1/0 is whatever the FPU's conversion gives; not guessed at
        return "(R)1 / (R)x" if R.kind == "f" else None
    if ufunc is np.invert:
        return "!x" if X.kind == "b" else "(R)~x"
    if ufunc is np.sign:
        if R.kind == "f":
            return "(x != x) ? (R)x : (R)((x > 0) - (x < 0))"
        return "(R)((x > 0) - (x < 0))"
    if ufunc in (np.floor, np.ceil, np.trunc, np.rint) and R.kind in "iub":
        return "x"              # integers: numpy returns them unchanged
    if ufunc is np.conjugate:
        return "(R)x" if X.kind != "c" else None
    if ufunc is np.bitwise_count:
        if X.kind == "b":
            return "(R)(x ? 1 : 0)"
        if X.kind not in "iu":
            return None
        magnitude = "(x < 0 ? 0ULL - (unsigned long long)x : (unsigned long long)x)" \
            if X.kind == "i" else "(unsigned long long)x"
        return f"(R)__popcll({magnitude})"
    if ufunc is np.spacing and R == HALF:
        return _HALF_SPACING
    if ufunc in (np.isnan, np.isinf, np.isfinite, np.signbit) and X.kind != "f":
        return {np.isnan: "false", np.isinf: "false", np.isfinite: "true",
                np.signbit: "x < 0" if X.kind == "i" else "false"}[ufunc]
    return _UNARY.get(ufunc)


# numpy's npy_half_nextafter and npy_half_spacing (npymath's halffloat.c), on half's own bits
# (computing in float and rounding back would step by float's spacing): NaN 0x7e00; a zero
# steps to the smallest subnormal of y's sign; otherwise one step of the bits towards y
_HALF_NEXTAFTER = (
    "__STMT__unsigned short _x = __half_as_ushort((R)x), _y = __half_as_ushort((R)y), _r; "
    "if (((_x & 0x7c00u) == 0x7c00u && (_x & 0x3ffu)) || "
    "((_y & 0x7c00u) == 0x7c00u && (_y & 0x3ffu))) _r = 0x7e00u; "
    "else if (_x == _y || ((_x | _y) & 0x7fffu) == 0) _r = _x; "
    "else if ((_x & 0x7fffu) == 0) _r = (unsigned short)((_y & 0x8000u) + 1); "
    "else if (!(_x & 0x8000u)) _r = (unsigned short)((short)_x > (short)_y ? _x - 1 : _x + 1); "
    "else _r = (unsigned short)((!(_y & 0x8000u) || (_x & 0x7fffu) > (_y & 0x7fffu)) "
    "? _x - 1 : _x + 1); "
    "z = __ushort_as_half(_r);")
_HALF_SPACING = (
    "__STMT__unsigned short _h = __half_as_ushort((R)x), _e = _h & 0x7c00u, "
    "_s = _h & 0x3ffu, _r; "
    "if (_e == 0x7c00u) _r = 0x7e00u; "
    "else if (_h == 0x7bffu) _r = 0x7c00u; "
    "else if ((_h & 0x8000u) && _s == 0) { if (_e > 0x2c00u) _r = _e - 0x2c00u; "
    "else if (_e > 0x0400u) _r = (unsigned short)(1u << ((_e >> 10) - 2)); else _r = 1u; } "
    "else if (_e > 0x2800u) _r = _e - 0x2800u; "
    "else if (_e > 0x0400u) _r = (unsigned short)(1u << ((_e >> 10) - 1)); "
    "else _r = 1u; "
    "z = __ushort_as_half(_r);")

SUPPORTED = set(_ARITH) | set(_COMPARE) | set(_LOGICAL) | set(_UNARY) | set(_FLOAT_BINARY) | {
    np.minimum, np.maximum, np.fmin, np.fmax, np.floor_divide, np.remainder, np.power,
    np.left_shift, np.right_shift, np.absolute, np.invert, np.sign, np.reciprocal, np.gcd, np.lcm,
    np.conjugate, np.bitwise_count}


def apply(ufunc, *operands, out=None, casting="same_kind", order="K"):
    """``ufunc(*operands)`` on dptx arrays (and scalars), into ``out`` when given (its type one
    the result casts to under ``casting``: numpy's same_kind, or unsafe), else into a new
    array laid out in ``order`` (numpy's "K": as the operands)."""
    if ufunc not in SUPPORTED or ufunc.nout != 1:
        raise DptxError(f"numpy.{ufunc.__name__} is not supported on dptx arrays yet")
    if ufunc.nin != len(operands):
        raise TypeError(f"{ufunc.__name__} takes {ufunc.nin} operands, got {len(operands)}")
    if not any(isinstance(v, ndarray) for v in operands):
        return ufunc(*operands)
    # a numpy scalar on the left (``np.float32(2) * a``) reaches us as a 0-d numpy array
    operands = [v[()] if isinstance(v, np.ndarray) and v.ndim == 0 else v for v in operands]
    probes = [_probe(v) for v in operands]
    R = ufunc(*probes).dtype                    # numpy's own promotion and loop errors
    if out is not None:
        if not isinstance(out, ndarray):
            raise DptxError(f"out= must be a dptx array, got {type(out).__name__}")
        if not np.can_cast(R, out.dtype, casting=casting):
            raise TypeError(f"Cannot cast ufunc '{ufunc.__name__}' output from {R} to "
                            f"{out.dtype} with casting rule '{casting}'")
    C = np.result_type(*probes) if ufunc in _COMPARE else R
    types = [v.dtype if isinstance(v, ndarray) else C for v in operands]
    constant = _out_of_range_comparison(ufunc, operands, C)
    if constant is not None:
        # numpy 2 compares an integer array with a Python integer its type cannot hold
        # (``u8 < -1``): the answer is the same for every element
        operands = [v if isinstance(v, ndarray) else 0 for v in operands]
        expr = "true" if constant else "false"
    else:
        expr = expression(ufunc, R, C, types, operands)
    if expr is None:
        raise DptxError(f"numpy.{ufunc.__name__} on {', '.join(str(t) for t in types)} is not "
                        f"supported on dptx arrays yet")
    Z = out.dtype if out is not None else R
    key = (ufunc.__name__, tuple(str(t) for t in types), str(R), str(C), str(Z), expr)

    def build():
        names = ["x", "y"][:ufunc.nin]
        # a float16 operand comes in as _hx and is computed on as a float x, in R and C
        # float: numpy's half loops compute in float and round the result once
        ins = ", ".join(f"{t} {'_h' if t == HALF else ''}{n}" for t, n in zip(types, names))
        pre = f"typedef {compute_type(R)} R; typedef {compute_type(C)} C;" + "".join(
            f" const float {n} = (float)_h{n};" for t, n in zip(types, names) if t == HALF)
        body = expr[len("__STMT__"):] if expr.startswith("__STMT__") else f" z = ({expr});"
        if Z == R:
            return ElementwiseKernel(ins, f"{Z} z", pre + body,
                                     _name(ufunc.__name__, *types, Z), options=EXACT)
        # into an out= of another type, as numpy's loop then its cast: the result in R
        # (a float16 one rounded to half), then converted as numpy converts
        op = (f"{pre} {c_type(R)} z; {{{body}}} zout_ = "
              f"{conversion(R, Z, 'z')};")
        return ElementwiseKernel(ins, f"{Z} zout_", op, _name(ufunc.__name__, *types, Z),
                                 options=EXACT)
    kernel = _kernels.get(key, build)
    args = [_as_param(v, t) for v, t in zip(operands, types)]
    if out is not None:
        args = [_unaliased(v, out) for v in args]
        return kernel(*args, out)
    laid_out = _new_result(operands, Z, order)
    return kernel(*args) if laid_out is None else kernel(*args, laid_out)


def _new_result(operands, Z: np.dtype, order: str = "K"):
    """A new result array laid out as numpy lays out a ufunc's, where that is not C order;
    else None (the kernel makes a C one). "K": as the operands (F for F operands,
    ``layout.result_strides``: a column-major kernel handed ``2 * f`` of an F array reads it
    as numpy's); "A": F where every operand is F-contiguous; "C", "F"."""
    arrays = [v for v in operands if isinstance(v, ndarray)]
    if order == "C" or (order in "AK" and all(a._contiguous for a in arrays)):
        return None
    shape = np.broadcast_shapes(*(a.shape for a in arrays))
    if len(shape) < 2:
        return None
    if order == "A":
        order = "F" if all(a.flags.f_contiguous for a in arrays) else "C"
    if order == "F":
        strides = f_strides(shape, Z.itemsize)
    elif order == "K":
        strides = result_strides(shape, Z.itemsize, [
            np.broadcast_to(a._stand_in(), shape).strides for a in arrays])
    else:
        return None
    if strides == c_strides(shape, Z.itemsize):
        return None
    return ndarray(shape, Z, _strides=strides)


_PYTHON_COMPARE = {np.equal: operator.eq, np.not_equal: operator.ne, np.less: operator.lt,
                   np.less_equal: operator.le, np.greater: operator.gt,
                   np.greater_equal: operator.ge}


def _out_of_range_comparison(ufunc, operands, C: np.dtype):
    """The constant result of comparing an integer array with a Python integer outside its
    type's range, else None: every element lies on the same side of that integer, so the
    type's extreme on that side answers for all of them."""
    if ufunc not in _COMPARE or C.kind not in "iu":
        return None
    info = np.iinfo(C)
    for k, v in enumerate(operands):
        if type(v) is int and not info.min <= v <= info.max:
            extreme = int(info.max) if v > info.max else int(info.min)
            pair = (extreme, v) if k == 1 else (v, extreme)
            return _PYTHON_COMPARE[ufunc](*pair)
    return None


def expression(ufunc, R: np.dtype, C: np.dtype, types, operands):
    """The C of ``ufunc`` on operands of ``types`` (x, y) computing in R (comparisons in C),
    None where dptx has none: with numpy's power fast paths for a scalar exponent and its
    error for a negative one of integers. ``apply`` and fused functions both use it."""
    if ufunc.nin == 1:
        return _unary_expr(ufunc, R, types[0])
    if ufunc in _LOGICAL:
        return _LOGICAL[ufunc].format(x=truth(types[0], "x"), y=truth(types[1], "y"))
    if ufunc is np.power:
        fast = scalar_power(R, operands[1])
        if fast:
            return fast
        if R.kind in "iu":
            _check_scalar_exponent(operands[1])
    return _binary_expr(ufunc, R, C)


def operator_power(dtype: np.dtype, exponent):
    """The ufunc numpy's ``a ** exponent`` uses instead of ``power`` (its
    ``fast_scalar_power``, for Python scalars), else None: ``square`` for 2 (a bool array's
    square is int8, its power int64), ``reciprocal`` for -1 and ``sqrt`` for 0.5 on floats
    (float16's too: -0 ** 0.5 is -0 there, +0 through np.power's powf; a numpy scalar
    exponent goes to np.power, whose float loops have fast paths of their own,
    ``scalar_power``)."""
    if type(exponent) is int and exponent == 2:
        return np.square
    if np.dtype(dtype).kind == "f" and type(exponent) in (int, float):
        if exponent == 0.5 and type(exponent) is float:
            return np.sqrt
        if exponent == -1 and type(exponent) is int:
            return np.reciprocal
    return None


def scalar_power(R: np.dtype, exponent):
    """What numpy's float power loop computes for a scalar exponent of 2, -1 or 0.5, else
    None: float32's and float64's fast paths (the square, reciprocal and sqrt, exact where
    pow may be an ulp off; sqrt keeps -0 and gives NaN for -inf); float16's loop is powf in
    float, the same values (correctly rounded, then rounded to half) but for powf's -0 and
    -inf to the 0.5: +0 and +inf."""
    if R.kind != "f" or isinstance(exponent, (bool, np.bool_)) or \
            not isinstance(exponent, (int, float, np.integer, np.floating)):
        return None
    root = "(isinf((R)x) ? fabs((R)x) : sqrt((R)x) + (R)0)" if R == HALF else "sqrt((R)x)"
    return {2: "(R)x * (R)x", -1: "(R)1 / (R)x", 0.5: root}.get(exponent)


def _check_scalar_exponent(exponent) -> None:
    """numpy's error for an integer power with a negative scalar exponent (an array of
    exponents is not looked at: that would wait for the device; CuPy's values then)."""
    if isinstance(exponent, (int, np.integer)) and not isinstance(exponent, (bool, np.bool_)) \
            and exponent < 0:
        raise ValueError("Integers to negative integer powers are not allowed.")


def _unaliased(value, out):
    """``value``, or a copy of it where it overlaps ``out`` other than element for element
    (``np.add(a[1:], 1, out=a[:-1])``: threads would read what others already wrote)."""
    if not isinstance(value, ndarray) or not may_share_memory(value, out):
        return value
    same = value._offset == out._offset and value.shape == out.shape and \
        value.strides == out.strides and value.dtype == out.dtype
    return value if same else value.copy()


def _name(operation: str, *types) -> str:
    """A generated kernel's name, its types in it (``dptx_multiply_uint16_int64_uint16``): the
    scheduler learns speeds and cost profiles per kernel name, and a uint16 multiply must not
    be planned from a float32 one's (one wrongly learned profile gave a worker 9 of 16384
    blocks)."""
    return "_".join(["dptx", operation] + [str(np.dtype(t)) for t in types])


def _discards_imaginary(src: np.dtype, dst: np.dtype) -> None:
    """numpy's ComplexWarning for a conversion of complex values to a real type."""
    if src.kind == "c" and dst.kind != "c":
        warnings.warn("Casting complex values to real discards the imaginary part",
                      np.exceptions.ComplexWarning, stacklevel=4)


def astype(a, dtype, out=None):
    """A copy of ``a`` converted to ``dtype`` as numpy converts (``conversion``), new or into
    ``out`` (of ``a``'s shape, in any layout)."""
    dt = np.dtype(dtype)
    _discards_imaginary(a.dtype, dt)
    key = ("astype", str(a.dtype), str(dt))
    kernel = _kernels.get(key, lambda: ElementwiseKernel(
        f"{a.dtype} x", f"{dt} z", f"z = {conversion(a.dtype, dt)}",
        _name("astype", a.dtype, dt),
        options=EXACT))
    return kernel(a) if out is None else kernel(a, out)


def assign(dst, src):
    """dst[...] = src for a dptx array or a scalar ``src``: broadcast and converted in one
    launch, through strides on either side."""
    if not dst.size:
        return
    src_type = src.dtype if isinstance(src, ndarray) else dst.dtype
    _discards_imaginary(np.dtype(src_type), dst.dtype)
    key = ("assign", str(src_type), str(dst.dtype))
    kernel = _kernels.get(key, lambda: ElementwiseKernel(
        f"{src_type} x", f"{dst.dtype} z", f"z = {conversion(np.dtype(src_type), dst.dtype)}",
        _name("assign", src_type, dst.dtype), options=EXACT))
    if isinstance(src, ndarray):
        try:
            fits = np.broadcast_shapes(src.shape, dst.shape) == dst.shape
        except ValueError:
            fits = False
        if not fits:
            raise ValueError(f"could not broadcast input array from shape {src.shape} into "
                             f"shape {dst.shape}")
        if may_share_memory(src, dst):
            src = src.copy()        # overlapping views of one buffer: read before writing
    else:
        src = np.array(src, dtype=dst.dtype)[()]
    kernel(src, dst)


def mask_assign(dst, mask, value):
    """dst[mask] = value for a boolean dptx ``mask`` of dst's shape and a scalar ``value``
    (converted to dst's type as numpy assigns): one launch, elements where the mask is False
    keep their values."""
    if not dst.size:
        return
    key = ("mask_assign", str(dst.dtype))
    kernel = _kernels.get(key, lambda: ElementwiseKernel(
        f"bool c, {dst.dtype} x", f"{dst.dtype} z", "if (c) z = x", "dptx_mask_assign",
        options=EXACT))
    scalar = np.array(value, dtype=dst.dtype)[()]       # numpy's own conversion and errors
    src = mask
    if may_share_memory(mask, dst):
        src = mask.copy()           # the mask is a view of dst's own bytes
    kernel(src, scalar, dst)


def where(condition, x, y):
    """numpy.where(condition, x, y) on dptx arrays and scalars, broadcast."""
    probes = [_probe(v) for v in (x, y)]
    R = np.result_type(*probes)
    cond_t = condition.dtype if isinstance(condition, ndarray) else np.dtype(bool)
    types = [cond_t] + [v.dtype if isinstance(v, ndarray) else R for v in (x, y)]
    key = ("where",) + tuple(str(t) for t in types) + (str(R),)
    kernel = _kernels.get(key, lambda: ElementwiseKernel(
        f"{types[0]} c, {types[1]} x, {types[2]} y", f"{R} z",
        f"z = c ? ({c_type(R)})x : ({c_type(R)})y", "dptx_where", options=EXACT))
    return kernel(*[_as_param(v, t) for v, t in zip((condition, x, y), types)])


def clip(a, a_min=None, a_max=None, out=None, *, min=None, max=None):
    """numpy.clip: minimum(maximum(a, a_min), a_max); numpy 2's ``min=``/``max=`` and no
    bounds at all (a copy, or ``a`` written into ``out``)."""
    if min is not None or max is not None:
        if a_min is not None or a_max is not None:
            raise ValueError("Passing `min` or `max` keyword argument when `a_min` and "
                             "`a_max` are provided is forbidden.")
        a_min, a_max = min, max
    if a_max is None:
        if a_min is not None:
            return apply(np.maximum, a, a_min, out=out)
        if out is None:
            return a.copy()
        out[...] = a
        return out
    r = apply(np.maximum, a, a_min) if a_min is not None else a
    return apply(np.minimum, r, a_max, out=out)


def fill_arange(out, start, step):
    """out[i] = start, start + step, then s0 + i * (s1 - s0) in out's type (numpy's fill)."""
    T = out.dtype
    s0 = np.array(start, dtype=T)[()]
    s1 = np.array(start + step, dtype=T)[()]
    if T == HALF:
        # numpy's HALF_fill: the first two as float, their difference and each value in
        # float, rounded to half once
        f0, f1 = np.float32(s0), np.float32(s1)
        kernel = _kernels.get(("arange", str(T)), lambda: ElementwiseKernel(
            "float32 s0, float32 s1, float32 d", f"{T} z",
            "z = (__half)((i == 0) ? s0 : (i == 1) ? s1 : s0 + (float)i * d)",
            "dptx_arange", options=EXACT))
        kernel(f0, f1, f1 - f0, out)
        return
    with np.errstate(over="ignore"):
        delta = (np.array(s1, T) - np.array(s0, T))[()]
    kernel = _kernels.get(("arange", str(T)), lambda: ElementwiseKernel(
        f"{T} s0, {T} s1, {T} d", f"{T} z",
        f"z = (i == 0) ? s0 : (i == 1) ? s1 : ({c_type(T)})(s0 + ({c_type(T)})i * d)",
        "dptx_arange", options=EXACT))
    kernel(s0, s1, delta, out)


def fill_linspace(out, dt, start, stop, step, div, delta, step_is_zero, last_is_stop):
    """numpy.linspace's values, computed as numpy computes them in ``dt`` (its computation
    type: float64, or the start's and stop's float32 or float16), one rounding per
    operation: i * step + start, or i / div * delta + start where the step is 0, floored
    for an integer type, converted to out's type; the last one ``stop`` when
    ``last_is_stop``. The scalars come in as numpy made them in ``dt``."""
    T, dt = out.dtype, np.dtype(dt)
    # float16 computes in float, each result rounded to half, as numpy's half loops
    K = np.dtype(np.float32) if dt == HALF else dt
    rnd = "(float)(__half)" if dt == HALF else ""
    kernel = _kernels.get(("linspace", str(T), str(dt)), lambda: ElementwiseKernel(
        f"{K} start, {K} stop, {K} step, {K} div, {K} delta, bool zero, bool last", f"{T} z",
        f"typedef {c_type(K)} K_; K_ y = {rnd}((K_)i);"
        f" if (zero) {{ y = {rnd}(y / div); y = {rnd}(y * delta); }}"
        f" else {{ y = {rnd}(y * step); }}"
        f" y = {rnd}(y + start);"
        " if (last && i == _ind.size() - 1) y = stop;"
        # numpy 2 rounds toward minus infinity for an integer dtype, not toward zero
        + (" y = floor(y);" if T.kind in "iu" else "") +
        f" z = {conversion(K, T, 'y')};", "dptx_linspace", options=EXACT))
    kernel(*[np.array(v, dtype=dt).astype(K)[()] for v in (start, stop, step, div, delta)],
           np.bool_(step_is_zero), np.bool_(last_is_stop), out)
