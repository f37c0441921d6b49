"""sin(x) and cos(x) of ``sin.approx.f32`` and ``cos.approx.f32`` as inline arithmetic.

libm's sinf/cosf are calls LLVM cannot vectorize: a warp ran 32 of them per instruction.
Here both are computed in double precision and rounded once to float, as plain IR on a
scalar (per-thread form) or a ``<32 x float>`` (warp form); the two forms give the same bits.

- x = k pi/2 + r with k = roundeven(x 2/pi), |r| <= pi/4: r = ((x - k P1) - k P2) - k P3,
  pi/2 = P1 + P2 + P3 with P1, P2 of 33 significant bits, so that k P1 and k P2 are exact
  for |k| < 2^20 and the first subtraction is exact (Sterbenz): r is within about 2^-53 of
  its exact value while |x| <= 2^19 (LIMIT).
- sin r and cos r by their Taylor series to r^17 and r^18 (truncation below 2^-63), the
  quadrant k mod 4 choosing which and its sign.
- |x| > LIMIT, infinities and NaN: libm's sinf/cosf (the warp form calls it for the whole
  warp when any lane needs it), as before.

Accuracy: the double value is within about 2^-50 of the exact one, so the float result is
the correctly rounded one or, near a halfway point, its neighbour (0.5 ulp plus a hair): far
tighter than PTX's bound for the .approx forms (an absolute 2^-20.5 within +-100 pi).
sin(-0) is -0."""
from __future__ import annotations

import math
from decimal import Decimal, getcontext

from .exp_log import Exp2Log2IR, dconst

getcontext().prec = 80
_PI = Decimal("3.14159265358979323846264338327950288419716939937510582097494459230781640628620899862803")
_HALF_PI = _PI / 2


def _leading(x: Decimal, bits: int) -> float:
    """``x`` rounded to ``bits`` significant bits (exactly a double)."""
    if x == 0:
        return 0.0
    e = math.floor(math.log2(abs(float(x))))
    scale = Decimal(2) ** (bits - 1 - e)
    return float((x * scale).to_integral_value() / scale)


P1 = _leading(_HALF_PI, 33)
P2 = _leading(_HALF_PI - Decimal(P1), 33)
P3 = float(_HALF_PI - Decimal(P1) - Decimal(P2))
TWO_OVER_PI = float(2 / _PI)
LIMIT = 2.0 ** 19
SIN_TAYLOR = [(-1) ** k / math.factorial(2 * k + 1) for k in range(9)]     # r^(2k+1)
COS_TAYLOR = [(-1) ** k / math.factorial(2 * k) for k in range(10)]        # r^(2k)


class SinCosIR(Exp2Log2IR):
    """Mixed into the per-thread (``lanes=0``) and warp-vectorized (``lanes=W``) lowerings,
    with ``Exp2Log2IR`` (``_ty``, ``_k``, ``_op``, ``_intrinsic``, ``_polynomial``); needs ``label``/``block``;
    the rare large inputs go to libm through ``llvm.sin``/``llvm.cos``."""

    def sin_cos_f32(self, x: str, cos: bool, lanes: int = 0) -> str:
        F, B = self._ty("float", lanes), self._ty("i1", lanes)
        name = "cos" if cos else "sin"
        ax = self._intrinsic("fabs", "float", [x], lanes)
        big = self._op(f"fcmp ugt {F} {ax}, {self._k('float', dconst(LIMIT), lanes)}")  # NaN too
        if lanes:
            mask = self._op(f"bitcast {B} {big} to i{lanes}")
            big = self._op(f"icmp ne i{lanes} {mask}, 0")
        inline, libm, join = self.label("sci"), self.label("scl"), self.label("scj")
        self.emit(f"br i1 {big}, label %{libm}, label %{inline}, !prof !1")
        self.block(libm)
        slow = self._intrinsic(name, "float", [x], lanes)
        self.emit(f"br label %{join}")
        self.block(inline)       # (straight-line code: the phi's edge comes from here)
        fast = self._sin_cos_inline(x, cos, lanes)
        self.emit(f"br label %{join}")
        self.block(join)
        return self._op(f"phi {F} [{slow}, %{libm}], [{fast}, %{inline}]")

    def _sin_cos_inline(self, x: str, cos: bool, lanes: int) -> str:
        F, D, I = self._ty("float", lanes), self._ty("double", lanes), self._ty("i64", lanes)
        B = self._ty("i1", lanes)
        d = lambda v: self._k("double", dconst(v), lanes)     # noqa: E731
        i = lambda v: self._k("i64", str(v), lanes)            # noqa: E731
        xd = self._op(f"fpext {F} {x} to {D}")
        k = self._intrinsic("roundeven", "double", [self._op(f"fmul {D} {xd}, {d(TWO_OVER_PI)}")], lanes)
        r = self._op(f"fsub {D} {xd}, {self._op(f'fmul {D} {k}, {d(P1)}')}")
        r = self._op(f"fsub {D} {r}, {self._op(f'fmul {D} {k}, {d(P2)}')}")
        r = self._op(f"fsub {D} {r}, {self._op(f'fmul {D} {k}, {d(P3)}')}")
        r2 = self._op(f"fmul {D} {r}, {r}")
        s = self._op(f"fmul {D} {self._polynomial(SIN_TAYLOR, r2, lanes)}, {r}")
        c = self._polynomial(COS_TAYLOR, r2, lanes)
        # the quadrant: sin x = (s, c, -s, -c)[k mod 4], cos x = sin(x + pi/2)
        q = self._op(f"fptosi {D} {k} to {I}")
        if cos:
            q = self._op(f"add {I} {q}, {i(1)}")
        odd = self._op(f"icmp ne {I} {self._op(f'and {I} {q}, {i(1)}')}, {i(0)}")
        negative = self._op(f"icmp ne {I} {self._op(f'and {I} {q}, {i(2)}')}, {i(0)}")
        v = self._op(f"select {B} {odd}, {D} {c}, {D} {s}")
        v = self._op(f"select {B} {negative}, {D} {self._op(f'fneg {D} {v}')}, {D} {v}")
        result = self._op(f"fptrunc {D} {v} to {F}")
        if not cos:     # sin(-0) is -0 (k = -0 turned r into +0)
            zero = self._op(f"fcmp oeq {F} {x}, {self._k('float', '0.0', lanes)}")
            result = self._op(f"select {B} {zero}, {F} {x}, {F} {result}")
        return result
