"""2^x and log2(x) of ``ex2.approx.f32`` and ``lg2.approx.f32`` as inline arithmetic.

libm's exp2f/log2f are calls LLVM cannot vectorize: a kernel using expf (which libdevice
expands to ``ex2.approx.ftz.f32`` after its range reduction) ran one call per thread. Here
both are computed in double precision from a polynomial and rounded once to float, as plain
IR on a scalar (per-thread form, whose thread loop LLVM then vectorizes) or on a ``<32 x
float>`` (warp-vectorized form); the two forms give the same bits.

Accuracy: the double computation is within about 2^-40 relative of the exact value, so the
float result is the correctly rounded one or, rarely, its neighbour (at most 0.5 ulp plus
2^-16 ulp): tighter than PTX's bounds for the .approx forms (a few ulp for ex2, an absolute
2^-22 for lg2's mantissa) and than libm's exp2f/log2f used before (within an ulp).

- 2^x: x = n + f with n = roundeven(x), |f| <= 1/2 (exact); 2^f by its Taylor series to
  degree 10 (truncation below 2^-42), times 2^n made from its bits. Inputs are clamped to
  [-160, 130] first, where the result is already 0 or infinity in float; NaN stays NaN.
- log2(x): x = m 2^e with m in [sqrt(1/2), sqrt(2)) (subnormal floats are normal doubles),
  ln m = 2 atanh(t), t = (m - 1)/(m + 1), |t| < 0.172, by its series to t^15 (truncation
  below 2^-44 relative); log2 x = e + ln m / ln 2. x = 0 gives -inf, +inf gives +inf,
  x < 0 gives the x86 default NaN (as libm did), NaN stays NaN."""
from __future__ import annotations

import math
import struct

EXP2_TAYLOR = [math.log(2) ** k / math.factorial(k) for k in range(11)]
ATANH_TERMS = [2.0 / (2 * k + 1) for k in range(8)]     # ln m = t * sum 2 t^2k / (2k+1)
INV_LN2 = 1.0 / math.log(2)
SQRT2_MANTISSA = 0x6A09E667F3BCD                        # sqrt(2) = 1.0x6A09E667F3BCD p0


def dconst(x: float) -> str:
    """An LLVM double literal with exactly the bits of ``x``."""
    return "0x%016X" % struct.unpack("<Q", struct.pack("<d", x))[0]


class Exp2Log2IR:
    """Mixed into the per-thread (``lanes=0``) and warp-vectorized (``lanes=W``) lowerings;
    needs ``tmp``/``emit`` (and ``declare_intrinsic`` for vectors)."""

    @staticmethod
    def _ty(base: str, lanes: int) -> str:
        return f"<{lanes} x {base}>" if lanes else base

    @staticmethod
    def _k(base: str, literal: str, lanes: int) -> str:
        return f"splat ({base} {literal})" if lanes else literal

    def _op(self, text: str) -> str:
        r = self.tmp(); self.emit(f"{r} = {text}"); return r

    def _intrinsic(self, name: str, base: str, args: list, lanes: int) -> str:
        ty = self._ty(base, lanes)
        suffix = {"double": "f64", "float": "f32"}[base]
        full = f"llvm.{name}.{'v%d' % lanes if lanes else ''}{suffix}"
        if lanes:   # (scalar intrinsics are declared from their calls: codegen)
            self.declare_intrinsic(f"declare {ty} @{full}({', '.join([ty] * len(args))})")
        return self._op(f"call {ty} @{full}(" + ", ".join(f"{ty} {a}" for a in args) + ")")

    def _polynomial(self, coefficients: list, t: str, lanes: int) -> str:
        """sum c_k t^k in double by Horner's rule with fused multiply-adds."""
        p = self._k("double", dconst(coefficients[-1]), lanes)
        for c in reversed(coefficients[:-1]):
            p = self._intrinsic("fma", "double", [p, t, self._k("double", dconst(c), lanes)], lanes)
        return p

    def exp2_f32(self, x: str, lanes: int = 0) -> str:
        F, D, I = self._ty("float", lanes), self._ty("double", lanes), self._ty("i64", lanes)
        d = lambda v: self._k("double", dconst(v), lanes)     # noqa: E731
        xd = self._op(f"fpext {F} {x} to {D}")
        xc = self._intrinsic("maxnum", "double", [xd, d(-160.0)], lanes)
        xc = self._intrinsic("minnum", "double", [xc, d(130.0)], lanes)
        n = self._intrinsic("roundeven", "double", [xc], lanes)
        f = self._op(f"fsub {D} {xc}, {n}")
        p = self._polynomial(EXP2_TAYLOR, f, lanes)
        ni = self._op(f"fptosi {D} {n} to {I}")
        biased = self._op(f"add {I} {ni}, {self._k('i64', '1023', lanes)}")
        bits = self._op(f"shl {I} {biased}, {self._k('i64', '52', lanes)}")
        scale = self._op(f"bitcast {I} {bits} to {D}")
        r = self._op(f"fptrunc {D} {self._op(f'fmul {D} {p}, {scale}')} to {F}")
        return self._nan_kept(x, r, lanes)

    def _nan_kept(self, x: str, r: str, lanes: int) -> str:
        """``r``, or ``x`` quieted where it is a NaN (as libm returns x + x)."""
        F = self._ty("float", lanes)
        nan = self._op(f"fcmp uno {F} {x}, {x}")
        quiet = self._op(f"fadd {F} {x}, {x}")
        return self._op(f"select {self._ty('i1', lanes)} {nan}, {F} {quiet}, {F} {r}")

    def log2_f32(self, x: str, lanes: int = 0) -> str:
        F, D, I = self._ty("float", lanes), self._ty("double", lanes), self._ty("i64", lanes)
        B = self._ty("i1", lanes)
        d = lambda v: self._k("double", dconst(v), lanes)     # noqa: E731
        i = lambda v: self._k("i64", str(v), lanes)            # noqa: E731
        xd = self._op(f"fpext {F} {x} to {D}")
        bits = self._op(f"bitcast {D} {xd} to {I}")
        exponent = self._op(f"and {I} {self._op(f'lshr {I} {bits}, {i(52)}')}, {i(0x7FF)}")
        mantissa = self._op(f"and {I} {bits}, {i((1 << 52) - 1)}")
        big = self._op(f"icmp uge {I} {mantissa}, {i(SQRT2_MANTISSA)}")
        top = self._op(f"select {B} {big}, {I} {i(0x3FE << 52)}, {I} {i(0x3FF << 52)}")
        m = self._op(f"bitcast {I} {self._op(f'or {I} {mantissa}, {top}')} to {D}")
        bias = self._op(f"select {B} {big}, {I} {i(1022)}, {I} {i(1023)}")
        e = self._op(f"sitofp {I} {self._op(f'sub {I} {exponent}, {bias}')} to {D}")
        t = self._op(f"fdiv {D} {self._op(f'fsub {D} {m}, {d(1.0)}')}, {self._op(f'fadd {D} {m}, {d(1.0)}')}")
        t2 = self._op(f"fmul {D} {t}, {t}")
        s = self._polynomial(ATANH_TERMS, t2, lanes)
        ln_m = self._op(f"fmul {D} {s}, {t}")
        r = self._intrinsic("fma", "double", [ln_m, d(INV_LN2), e], lanes)
        r = self._op(f"fptrunc {D} {r} to {F}")
        f = lambda v: self._k("float", v, lanes)               # noqa: E731
        zero = self._op(f"fcmp oeq {F} {x}, {f('0.0')}")
        r = self._op(f"select {B} {zero}, {F} {f('0xFFF0000000000000')}, {F} {r}")
        inf = self._op(f"fcmp oeq {F} {x}, {f('0x7FF0000000000000')}")
        r = self._op(f"select {B} {inf}, {F} {x}, {F} {r}")
        negative = self._op(f"fcmp olt {F} {x}, {f('0.0')}")
        r = self._op(f"select {B} {negative}, {F} {f('0xFFF8000000000000')}, {F} {r}")
        return self._nan_kept(x, r, lanes)
