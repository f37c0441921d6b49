"""Integer and floating-point arithmetic (one PTX opcode covers both): ``add``, ``sub``,
``addc``/``subc`` and the carry chain, ``mul``, ``mad``/``madc``, ``fma``, ``mul24``/``mad24``,
``dp4a``/``dp2a``, ``sad``, ``div``, ``rem``, ``abs``, ``neg``, ``min``, ``max``; with the rounding,
saturation, flush-to-zero and half/bf16 (scalar and packed x2) helpers they share."""
from __future__ import annotations

from ....ptx import ir
from .common import LLTY, BITS, INT_OF, unsupported, W, INTS, FLOATS, vt, sfx
from .registry import Registry
from .numeric_helpers import NumericHelpers

registry = Registry("arithmetic")


class ArithmeticLowering(NumericHelpers):
    """Per-thread lowerings (mixed into ``function.Function``)."""

    PACKED16 = ("u16x2", "s16x2")

    def add_or_sub(self, inst, op: str):
        """add/sub: float (rounding modes), carry chains, .sat on s32, or wrapping ints."""
        if any(m in self.PACKED16 for m in inst.modifiers) and len(inst.modifiers) == 1:
            return self.packed16(inst, op)
        if self.is_float(inst):
            return self.rounded(inst, "f" + op, "f" + op, 2)
        if "cc" in inst.modifiers:
            return self.carry_op(inst, op)
        if "sat" in inst.modifiers:
            return self.sat_int(inst, "s" + op)
        self.int_binary(inst, op)

    @registry.lower("add")
    def op_add(self, inst):
        self.add_or_sub(inst, "add")

    @registry.lower("sub")
    def op_sub(self, inst):
        self.add_or_sub(inst, "sub")

    @registry.lower("addc")
    def op_addc(self, inst):
        self.carry_op(inst, "add")

    @registry.lower("subc")
    def op_subc(self, inst):
        self.carry_op(inst, "sub")

    def sat_int(self, inst, op):
        ty = self.lt(inst)
        a = self.read(inst.operands[1], ty, inst)
        b = self.read(inst.operands[2], ty, inst)
        r = self.tmp(); self.emit(f"{r} = call {ty} @llvm.{op}.sat.{ty}({ty} {a}, {ty} {b})")
        self.write(inst.operands[0], r, ty, inst)

    def carry_op(self, inst, op):
        """add.cc/addc/sub.cc/subc: the carry flag CC.CF lives in %cc.

        The hardware keeps one carry bit and subtracts by adding the complement:
        sub.cc is a + ~b + 1 and subc is a + ~b + CC.CF, with the carry out of that sum
        written to CC.CF. So after a subtraction CC.CF is 1 where *no* borrow happened. The
        ISA text's "d = a - (b + CC.CF), borrow-out to CC.CF" gives the same results in
        sub.cc/subc chains, but not when a chain mixes the two (addc after sub.cc reads 0
        after a borrow on NVIDIA GPUs; ZLUDA's subc_cc_s32, checked on hardware). The sum is
        unsigned whatever the type's signedness: a carry is a bit of the unsigned sum."""
        ty = self.lt(inst)
        wide = "i64" if ty == "i32" else "i128"
        a = self.conv(self.read(inst.operands[1], ty, inst), ty, wide)
        b = self.read(inst.operands[2], ty, inst)
        if op == "sub":
            b = self.not_bits(b, ty)
        b = self.conv(b, ty, wide)
        r = self.tmp(); self.emit(f"{r} = add {wide} {a}, {b}")
        if inst.opcode in ("addc", "subc"):
            c = self.tmp(); self.emit(f"{c} = load i32, ptr %cc")
            carry_in = self.conv(c, "i32", wide)
        else:
            carry_in = "1" if op == "sub" else None
        if carry_in is not None:
            r2 = self.tmp(); self.emit(f"{r2} = add {wide} {r}, {carry_in}")
            r = r2
        if "cc" in inst.modifiers:
            hi = self.tmp(); self.emit(f"{hi} = lshr {wide} {r}, {BITS[ty]}")
            bit = self.tmp(); self.emit(f"{bit} = and {wide} {hi}, 1")
            self.emit(f"store i32 {self.conv(bit, wide, 'i32')}, ptr %cc")
        self.write(inst.operands[0], self.conv(r, wide, ty), ty, inst)

    def not_bits(self, v: str, ty: str) -> str:
        """~v (all bits flipped)."""
        r = self.tmp(); self.emit(f"{r} = xor {ty} {v}, -1")
        return r

    def widen_mul(self, inst, a, b, ty, signed):
        wide = {"i16": "i32", "i32": "i64", "i64": "i128"}[ty]
        ext = "sext" if signed else "zext"
        aw = self.tmp(); self.emit(f"{aw} = {ext} {ty} {a} to {wide}")
        bw = self.tmp(); self.emit(f"{bw} = {ext} {ty} {b} to {wide}")
        p = self.tmp(); self.emit(f"{p} = mul {wide} {aw}, {bw}")
        return p, wide

    @registry.lower("mul")
    def op_mul(self, inst):
        if self.is_float(inst):
            return self.rounded(inst, "fmul", "fmul", 2)
        t = self.itype(inst)
        ty = self.lt(inst)
        signed = t.startswith("s")
        a = self.read(inst.operands[1], ty, inst)
        b = self.read(inst.operands[2], ty, inst)
        if "wide" in inst.modifiers:
            p, wide = self.widen_mul(inst, a, b, ty, signed)
            self.write(inst.operands[0], p, wide, inst)
        elif "hi" in inst.modifiers:
            p, wide = self.widen_mul(inst, a, b, ty, signed)
            h = self.tmp(); self.emit(f"{h} = lshr {wide} {p}, {BITS[ty]}")
            self.write(inst.operands[0], self.conv(h, wide, ty), ty, inst)
        else:
            r = self.tmp(); self.emit(f"{r} = mul {ty} {a}, {b}")
            self.write(inst.operands[0], r, ty, inst)

    @registry.lower("mad")
    def op_mad(self, inst):
        if self.is_float(inst):
            return self.rounded(inst, "fma", "", 3)
        if "cc" in inst.modifiers:
            return self.mad_carry(inst)
        t = self.itype(inst)
        ty = self.lt(inst)
        signed = t.startswith("s")
        a = self.read(inst.operands[1], ty, inst)
        b = self.read(inst.operands[2], ty, inst)
        if "wide" in inst.modifiers or "hi" in inst.modifiers:
            p, wide = self.widen_mul(inst, a, b, ty, signed)
            if "hi" in inst.modifiers:
                h = self.tmp(); self.emit(f"{h} = lshr {wide} {p}, {BITS[ty]}")
                p, wide_out = self.conv(h, wide, ty), ty
            else:
                wide_out = wide
            c = self.read(inst.operands[3], wide_out, inst, signed)
            r = self.tmp(); self.emit(f"{r} = add {wide_out} {p}, {c}")
            self.write(inst.operands[0], r, wide_out, inst)
            return
        c = self.read(inst.operands[3], ty, inst)
        m = self.tmp(); self.emit(f"{m} = mul {ty} {a}, {b}")
        r = self.tmp(); self.emit(f"{r} = add {ty} {m}, {c}")
        self.write(inst.operands[0], r, ty, inst)

    @registry.lower("madc")
    def op_madc(self, inst):
        self.mad_carry(inst)

    def mad_carry(self, inst):
        """mad.cc/madc .lo/.hi: the low or high half of a*b, plus c (plus the carry flag for
        madc), optionally writing the carry out."""
        t = self.itype(inst)
        ty = self.lt(inst)
        signed = t.startswith("s")
        a = self.read(inst.operands[1], ty, inst)
        b = self.read(inst.operands[2], ty, inst)
        p, wide = self.widen_mul(inst, a, b, ty, signed)
        if "hi" in inst.modifiers:
            h = self.tmp(); self.emit(f"{h} = lshr {wide} {p}, {BITS[ty]}")
            part = self.conv(h, wide, ty)
        else:
            part = self.conv(p, wide, ty)
        big = "i64" if ty == "i32" else "i128"
        acc = self.conv(part, ty, big)
        c = self.conv(self.read(inst.operands[3], ty, inst), ty, big)
        r = self.tmp(); self.emit(f"{r} = add {big} {acc}, {c}")
        if inst.opcode == "madc":
            cin = self.conv(self.tmp_load_cc(), "i32", big)
            r2 = self.tmp(); self.emit(f"{r2} = add {big} {r}, {cin}"); r = r2
        if "cc" in inst.modifiers:
            hi = self.tmp(); self.emit(f"{hi} = lshr {big} {r}, {BITS[ty]}")
            bit = self.tmp(); self.emit(f"{bit} = and {big} {hi}, 1")
            self.emit(f"store i32 {self.conv(bit, big, 'i32')}, ptr %cc")
        self.write(inst.operands[0], self.conv(r, big, ty), ty, inst)

    def tmp_load_cc(self) -> str:
        c = self.tmp(); self.emit(f"{c} = load i32, ptr %cc"); return c

    @registry.lower("fma")
    def op_fma(self, inst):
        self.rounded(inst, "fma", "", 3)

    @registry.lower("mul24", "mad24")
    def op_mul24(self, inst):
        ty = "i32"
        signed = self.itype(inst).startswith("s")
        a, b = (self.read(o, ty, inst) for o in inst.operands[1:3])
        a24, b24 = (self.ext24(v, signed) for v in (a, b))
        p, wide = self.widen_mul(inst, a24, b24, ty, signed)
        shift = 16 if "hi" in inst.modifiers else 0
        h = self.tmp(); self.emit(f"{h} = lshr i64 {p}, {shift}")
        r = self.conv(h, "i64", "i32")
        if inst.opcode == "mad24":
            c = self.read(inst.operands[3], ty, inst)
            r2 = self.tmp(); self.emit(f"{r2} = add i32 {r}, {c}"); r = r2
        self.write(inst.operands[0], r, ty, inst)

    def ext24(self, v, signed):
        s = self.tmp(); self.emit(f"{s} = shl i32 {v}, 8")
        r = self.tmp(); self.emit(f"{r} = {'ashr' if signed else 'lshr'} i32 {s}, 8")
        return r

    @registry.lower("dp4a")
    def op_dp4a(self, inst):
        """d = c + sum of the four byte products of a and b (each signed or not by type)."""
        ta, tb = inst.types[0], inst.types[1]
        a, b, c = (self.read(o, "i32", inst) for o in inst.operands[1:4])
        acc = c
        for k in range(4):
            x = self.byte_lane(a, 8 * k, 8, ta.startswith("s"))
            y = self.byte_lane(b, 8 * k, 8, tb.startswith("s"))
            p = self.tmp(); self.emit(f"{p} = mul i32 {x}, {y}")
            n = self.tmp(); self.emit(f"{n} = add i32 {acc}, {p}")
            acc = n
        self.write(inst.operands[0], acc, "i32", inst)

    @registry.lower("dp2a")
    def op_dp2a(self, inst):
        """d = c + a.h0 * b.byte(i) + a.h1 * b.byte(i+1), i = 0 (.lo) or 2 (.hi)."""
        ta, tb = inst.types[0], inst.types[1]
        a, b, c = (self.read(o, "i32", inst) for o in inst.operands[1:4])
        first = 2 if "hi" in inst.modifiers else 0
        acc = c
        for k in range(2):
            x = self.byte_lane(a, 16 * k, 16, ta.startswith("s"))
            y = self.byte_lane(b, 8 * (first + k), 8, tb.startswith("s"))
            p = self.tmp(); self.emit(f"{p} = mul i32 {x}, {y}")
            n = self.tmp(); self.emit(f"{n} = add i32 {acc}, {p}")
            acc = n
        self.write(inst.operands[0], acc, "i32", inst)

    def byte_lane(self, v, shift, width, signed):
        up = self.tmp(); self.emit(f"{up} = shl i32 {v}, {32 - shift - width}")
        r = self.tmp(); self.emit(f"{r} = {'ashr' if signed else 'lshr'} i32 {up}, {32 - width}")
        return r

    @registry.lower("sad")
    def op_sad(self, inst):
        ty = self.lt(inst)
        signed = self.itype(inst).startswith("s")
        a, b, c = (self.read(o, ty, inst) for o in inst.operands[1:4])
        lt = self.tmp(); self.emit(f"{lt} = icmp {'slt' if signed else 'ult'} {ty} {a}, {b}")
        d1 = self.tmp(); self.emit(f"{d1} = sub {ty} {b}, {a}")
        d2 = self.tmp(); self.emit(f"{d2} = sub {ty} {a}, {b}")
        d = self.tmp(); self.emit(f"{d} = select i1 {lt}, {ty} {d1}, {ty} {d2}")
        r = self.tmp(); self.emit(f"{r} = add {ty} {c}, {d}")
        self.write(inst.operands[0], r, ty, inst)

    @registry.lower("div")
    def op_div(self, inst):
        if self.is_float(inst):
            # .approx and .full are within their documented ulps of the correctly rounded
            # quotient, which is what this computes
            return self.rounded(inst, "fdiv", "fdiv", 2)
        self.int_divrem(inst, "div")

    @registry.lower("rem")
    def op_rem(self, inst):
        self.int_divrem(inst, "rem")

    def int_divrem(self, inst, kind):
        """Integer division without LLVM's undefined behaviour: x/0 gives all ones (u) or
        -1/+1 by sign as the hardware does for div, x for rem; MIN/-1 wraps."""
        t = self.itype(inst)
        ty = self.lt(inst)
        signed = t.startswith("s")
        a = self.read(inst.operands[1], ty, inst)
        b = self.read(inst.operands[2], ty, inst)
        zero = self.tmp(); self.emit(f"{zero} = icmp eq {ty} {b}, 0")
        safe = self.tmp(); self.emit(f"{safe} = select i1 {zero}, {ty} 1, {ty} {b}")
        # A divisor known only at run time, of 32 bits or less: through doubles, where x86
        # has vector division (LLVM scalarizes a vector of integer divisions: 8 idivs for
        # 8 lanes, 3-4x slower for a thread's i / n and i % n). Exact: the quotient's
        # rounding error, under |a| 2**-53 / |b| <= 2**-21 / |b|, never reaches the next
        # integer, 1 / |b| away. A constant divisor stays an integer division (LLVM makes it
        # a multiplication).
        by_double = BITS[ty] <= 32 and not isinstance(inst.operands[2], ir.Imm)
        if signed:
            m1 = self.tmp(); self.emit(f"{m1} = icmp eq {ty} {safe}, -1")
            safe2 = self.tmp(); self.emit(f"{safe2} = select i1 {m1}, {ty} 1, {ty} {safe}")
            if by_double:
                q = self._divrem_by_double(a, safe2, ty, kind, "s")
            else:
                q = self.tmp(); self.emit(f"{q} = {'sdiv' if kind == 'div' else 'srem'} {ty} {a}, {safe2}")
            neg = self.tmp(); self.emit(f"{neg} = sub {ty} 0, {a}")
            fix = neg if kind == "div" else "0"
            r0 = self.tmp(); self.emit(f"{r0} = select i1 {m1}, {ty} {fix}, {ty} {q}")
        elif by_double:
            r0 = self._divrem_by_double(a, safe, ty, kind, "u")
        else:
            r0 = self.tmp(); self.emit(f"{r0} = {'udiv' if kind == 'div' else 'urem'} {ty} {a}, {safe}")
        dz = "-1" if kind == "div" else a
        r = self.tmp(); self.emit(f"{r} = select i1 {zero}, {ty} {dz}, {ty} {r0}")
        self.write(inst.operands[0], r, ty, inst)

    def _divrem_by_double(self, a, b, ty, kind, sign):
        """a / b (truncated) or a % b of integers of 32 bits or less, b not 0 (nor -1 when
        signed), computed in double."""
        fa = self.tmp(); self.emit(f"{fa} = {sign}itofp {ty} {a} to double")
        fb = self.tmp(); self.emit(f"{fb} = {sign}itofp {ty} {b} to double")
        fq = self.tmp(); self.emit(f"{fq} = fdiv double {fa}, {fb}")
        q = self.tmp(); self.emit(f"{q} = fpto{sign}i double {fq} to {ty}")
        if kind == "div":
            return q
        qb = self.tmp(); self.emit(f"{qb} = mul {ty} {q}, {b}")
        r = self.tmp(); self.emit(f"{r} = sub {ty} {a}, {qb}")
        return r

    @registry.lower("abs")
    def op_abs(self, inst):
        if self.half_sign_op(inst, "abs"):
            return
        if self.is_float(inst):
            return self.float_op(inst, lambda a, ty: self.fcall("fabs", a, ty))
        ty = self.lt(inst)
        a = self.read(inst.operands[1], ty, inst)
        r = self.tmp(); self.emit(f"{r} = call {ty} @llvm.abs.{ty}({ty} {a}, i1 false)")
        self.write(inst.operands[0], r, ty, inst)

    @registry.lower("neg")
    def op_neg(self, inst):
        if self.half_sign_op(inst, "neg"):
            return
        if self.is_float(inst):
            def compute(a, ty):
                r = self.tmp(); self.emit(f"{r} = fneg {ty} {a[0]}"); return r
            return self.float_op(inst, compute)
        ty = self.lt(inst)
        a = self.read(inst.operands[1], ty, inst)
        r = self.tmp(); self.emit(f"{r} = sub {ty} 0, {a}")
        self.write(inst.operands[0], r, ty, inst)

    def minmax(self, inst, which):
        packed = [m for m in inst.modifiers if m in self.PACKED16]
        if packed:
            if set(inst.modifiers) - {"relu"} != set(packed) or \
                    ("relu" in inst.modifiers and packed[0] != "s16x2"):
                raise unsupported(inst)
            return self.packed16(inst, which, signed=packed[0] == "s16x2")
        if self.is_float(inst):
            name = ("minimum" if which == "min" else "maximum") if "NaN" in inst.modifiers else \
                ("minnum" if which == "min" else "maxnum")
            mods = inst.modifiers

            def compute(a, ty):
                args = a
                if "abs" in mods:
                    args = [self.fcall("fabs", [x], ty) for x in a]
                r = self.fcall(name, args, ty)
                if "xorsign" in mods:
                    ity = INT_OF[ty]
                    bits = BITS[ty]
                    sa = self.conv(a[0], ty, ity)
                    sb = self.conv(a[1], ty, ity)
                    x = self.tmp(); self.emit(f"{x} = xor {ity} {sa}, {sb}")
                    sgn = self.tmp(); self.emit(f"{sgn} = and {ity} {x}, {-(1 << (bits - 1))}")
                    rb = self.conv(r, ty, ity)
                    mag = self.tmp(); self.emit(f"{mag} = and {ity} {rb}, {(1 << (bits - 1)) - 1}")
                    o = self.tmp(); self.emit(f"{o} = or {ity} {mag}, {sgn}")
                    r = self.conv(o, ity, ty)
                return r
            return self.float_op(inst, compute)
        t = self.itype(inst)
        ty = self.lt(inst)
        pre = "s" if t.startswith("s") else "u"
        a = self.read(inst.operands[1], ty, inst)
        b = self.read(inst.operands[2], ty, inst)
        r = self.tmp(); self.emit(f"{r} = call {ty} @llvm.{pre}{which}.{ty}({ty} {a}, {ty} {b})")
        self.write(inst.operands[0], r, ty, inst)

    @registry.lower("min")
    def op_min(self, inst):
        self.minmax(inst, "min")

    @registry.lower("max")
    def op_max(self, inst):
        self.minmax(inst, "max")


class ArithmeticVectorLowering:
    """Warp-vectorized lowerings (mixed into ``vector.VectorFunction``); returning False
    falls back to the per-thread lowering, lane by lane."""

    @registry.lower_vector("add")
    def v_add(self, inst, em):
        return self.arith(inst, em, "add", "fadd")

    @registry.lower_vector("sub")
    def v_sub(self, inst, em):
        return self.arith(inst, em, "sub", "fsub")

    def widened(self, inst, ty, signed):
        wide = {"i16": "i32", "i32": "i64"}.get(ty)
        if wide is None:
            return None
        ext = "sext" if signed else "zext"
        out = []
        for o in inst.operands[1:3]:
            v = self.vread(o, ty, inst)
            w = self.tmp(); self.emit(f"{w} = {ext} {vt(ty)} {v} to {vt(wide)}")
            out.append(w)
        return self.op2("mul", vt(wide), out[0], out[1]), wide

    @registry.lower_vector("mul")
    def v_mul(self, inst, em):
        t = self.itype(inst)
        if "wide" in inst.modifiers and t in INTS and self.simple(inst, ("wide",)) \
                and self.all_readable(inst.operands[1:3]):
            r = self.widened(inst, LLTY[t], t.startswith("s"))
            if r is None:
                return False
            self.vwrite(inst.operands[0], r[0], r[1], em, inst)
            return
        return self.arith(inst, em, "mul", "fmul")

    def fma(self, inst, em):
        t = self.itype(inst)
        if t not in FLOATS or not self.simple(inst, ("rn",)) or not self.all_readable(inst.operands[1:4]):
            return False
        ty = LLTY[t]
        a, b, c = (self.vread(o, ty, inst) for o in inst.operands[1:4])
        r = self.vcall(vt(ty), f"llvm.fma.v{W}{sfx(ty)}", [f"{vt(ty)} {a}", f"{vt(ty)} {b}", f"{vt(ty)} {c}"])
        self.vwrite(inst.operands[0], r, ty, em, inst)

    @registry.lower_vector("fma")
    def v_fma(self, inst, em):
        return self.fma(inst, em)

    @registry.lower_vector("mad")
    def v_mad(self, inst, em):
        t = self.itype(inst)
        if t in FLOATS:
            return self.fma(inst, em)
        if t not in INTS or not self.all_readable(inst.operands[1:4]):
            return False
        ty = LLTY[t]
        if self.simple(inst, ("wide",)) and "wide" in inst.modifiers:
            r = self.widened(inst, ty, t.startswith("s"))
            if r is None:
                return False
            p, wide = r
        elif self.simple(inst, ("lo",)):
            a = self.vread(inst.operands[1], ty, inst)
            b = self.vread(inst.operands[2], ty, inst)
            p, wide = self.op2("mul", vt(ty), a, b), ty
        else:
            return False
        c = self.vread(inst.operands[3], wide, inst, t.startswith("s"))
        self.vwrite(inst.operands[0], self.op2("add", vt(wide), p, c), wide, em, inst)

    @registry.lower_vector("min")
    def v_min(self, inst, em):
        return self.vminmax(inst, em, "min")

    @registry.lower_vector("max")
    def v_max(self, inst, em):
        return self.vminmax(inst, em, "max")

    def vminmax(self, inst, em, which):
        if len(inst.types) != 1:
            return False
        t = self.itype(inst)
        if t not in INTS or t.startswith("b") or not self.simple(inst) or not self.all_readable(inst.operands[1:3]):
            return False
        ty = LLTY[t]
        a, b = (self.vread(o, ty, inst) for o in inst.operands[1:3])
        name = ("s" if t.startswith("s") else "u") + which
        r = self.vcall(vt(ty), f"llvm.{name}.v{W}{ty}", [f"{vt(ty)} {a}", f"{vt(ty)} {b}"])
        self.vwrite(inst.operands[0], r, ty, em, inst)

    @registry.lower_vector("neg")
    def v_neg(self, inst, em):
        return self.sign_op(inst, em, self.fneg, lambda a, ty: self.op2("sub", vt(ty), "zeroinitializer", a))

    def fneg(self, a: str, ty: str) -> str:
        r = self.tmp(); self.emit(f"{r} = fneg {vt(ty)} {a}"); return r

    @registry.lower_vector("abs")
    def v_abs(self, inst, em):
        return self.sign_op(inst, em,
                            lambda a, ty: self.vcall(vt(ty), f"llvm.fabs.v{W}{sfx(ty)}", [f"{vt(ty)} {a}"]),
                            lambda a, ty: self.vcall(vt(ty), f"llvm.abs.v{W}{ty}", [f"{vt(ty)} {a}", "i1 false"]))

    def sign_op(self, inst, em, on_float, on_int):
        """neg/abs: floats (no .ftz) and signed integers."""
        t = self.itype(inst)
        if not self.simple(inst) or not self.vreadable(inst.operands[1]) or \
                not (t in FLOATS or (t in INTS and t.startswith("s"))):
            return False
        ty = LLTY[t]
        a = self.vread(inst.operands[1], ty, inst)
        r = (on_float if t in FLOATS else on_int)(a, ty)
        self.vwrite(inst.operands[0], r, ty, em, inst)
