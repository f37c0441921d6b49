"""Integer and floating-point arithmetic (one PTX opcode covers both): ``add``, ``sub``,
``addc``/``subc`` and the carry chain, ``mul``, ``mad``/``madc``, ``fma``, ``mul24``/``mad24``,
``dp4a``/``dp2a``, ``sad``, ``div``, ``rem``, ``abs``, ``neg``, ``min``, ``max``; with the rounding,
saturation, flush-to-zero and half/bf16 (scalar and packed x2) helpers they share."""
from __future__ import annotations

from ....ptx import ir
from .common import LLTY, BITS, INT_OF, unsupported, W, INTS, FLOATS, vt, sfx
from .registry import Registry

registry = Registry('arithmetic')


class ArithmeticLowering:
    """Per-thread lowerings (mixed into ``function.Function``)."""

    def ftz(self, inst, v: str, ty: str) -> str:
        """Flush a subnormal f32 to a zero of the same sign (.ftz)."""
        if ty != "float" or "ftz" not in inst.modifiers:
            return v
        return self.flush_subnormal(v)

    def flush_subnormal(self, v: str) -> str:
        """An f32 that is subnormal becomes a zero of its sign; NaNs and the rest stay."""
        a = self.tmp(); self.emit(f"{a} = call float @llvm.fabs.f32(float {v})")
        small = self.tmp(); self.emit(f"{small} = fcmp olt float {a}, 0x3810000000000000")
        z = self.tmp(); self.emit(f"{z} = call float @llvm.copysign.f32(float 0.0, float {v})")
        r = self.tmp(); self.emit(f"{r} = select i1 {small}, float {z}, float {v}")
        return r

    def sat(self, inst, v: str, ty: str) -> str:
        """.sat on floats: clamp to [0, 1], NaN -> 0."""
        if "sat" not in inst.modifiers or ty not in ("float", "double"):
            return v
        sfx = "f32" if ty == "float" else "f64"
        a = self.tmp(); self.emit(f"{a} = call {ty} @llvm.maxnum.{sfx}({ty} {v}, {ty} 0.0)")
        b = self.tmp(); self.emit(f"{b} = call {ty} @llvm.minnum.{sfx}({ty} {a}, {ty} 1.0)")
        nan = self.tmp(); self.emit(f"{nan} = fcmp uno {ty} {v}, 0.0")
        r = self.tmp(); self.emit(f"{r} = select i1 {nan}, {ty} 0.0, {ty} {b}")
        return r

    @staticmethod
    def directed_mode(inst):
        return next((m for m in ("rz", "rm", "rp") if m in inst.modifiers), None)

    def rounded(self, inst, op: str, llop: str, arity: int):
        """A float operation honouring .rn (default) and .rz/.rm/.rp exactly."""
        mode = self.directed_mode(inst)

        def compute(args, ty):
            if mode is not None and ty == "float" and op in ("fma", "add", "sub") \
                    and self.itype(inst) in self.FLOAT_TYPES:
                return self.directed_f32(op, mode, args)
            if mode is None or self.itype(inst) not in self.FLOAT_TYPES:
                if op == "fma":
                    return self.fcall("fma", args, ty)
                if op == "sqrt":
                    return self.fcall("sqrt", args, ty)
                r = self.tmp(); self.emit(f"{r} = {llop} {ty} {', '.join(args)}"); return r
            name = self.mod.directed_helper(op, mode, ty, [ty] * arity)
            r = self.tmp()
            self.emit(f'{r} = call {ty} @"{name}"(' + ", ".join(f"{ty} {a}" for a in args) + ")")
            return r
        self.float_op(inst, compute)

    def directed_f32(self, op: str, mode: str, args) -> str:
        """f32 fma/add/sub rounded toward -inf (.rm), +inf (.rp) or zero (.rz) with plain
        arithmetic, which LLVM can vectorize (libdevice's expf has an fma.rm; the strictfp
        helper that switches the rounding mode is a call per thread). In double, p = a*b
        (or a) is exact and TwoSum gives s + e = p + c exactly; s rounded to nearest float is
        the directed result or its neighbour, told apart by comparing candidate - s (exact)
        with e. Overflow comes out as the largest float or infinity as the mode says; an
        exact zero is -0 under .rm unless both addends are +0, as IEEE 754 has it."""
        d = []
        for a in args:
            x = self.tmp(); self.emit(f"{x} = fpext float {a} to double"); d.append(x)
        if op == "fma":
            p = self.tmp(); self.emit(f"{p} = fmul double {d[0]}, {d[1]}")
            c = d[2]
        else:
            p = d[0]
            c = d[1] if op == "add" else self.tmp()
            if op == "sub":
                self.emit(f"{c} = fneg double {d[1]}")
        s = self.tmp(); self.emit(f"{s} = fadd double {p}, {c}")
        bb = self.tmp(); self.emit(f"{bb} = fsub double {s}, {p}")
        t1 = self.tmp(); self.emit(f"{t1} = fsub double {s}, {bb}")
        t2 = self.tmp(); self.emit(f"{t2} = fsub double {p}, {t1}")
        t3 = self.tmp(); self.emit(f"{t3} = fsub double {c}, {bb}")
        e = self.tmp(); self.emit(f"{e} = fadd double {t2}, {t3}")
        cand = self.tmp(); self.emit(f"{cand} = fptrunc double {s} to float")
        back = self.tmp(); self.emit(f"{back} = fpext float {cand} to double")
        diff = self.tmp(); self.emit(f"{diff} = fsub double {back}, {s}")
        above = self.tmp(); self.emit(f"{above} = fcmp ogt double {diff}, {e}")   # cand > exact
        below = self.tmp(); self.emit(f"{below} = fcmp olt double {diff}, {e}")   # cand < exact
        bits = self.tmp(); self.emit(f"{bits} = bitcast float {cand} to i32")

        def step(toward_positive: bool) -> str:
            """The float next to cand toward +inf (or -inf), as bits."""
            pos = self.tmp(); self.emit(f"{pos} = fcmp ogt float {cand}, 0.0")
            neg = self.tmp(); self.emit(f"{neg} = fcmp olt float {cand}, 0.0")
            up = self.tmp(); self.emit(f"{up} = add i32 {bits}, 1")
            down = self.tmp(); self.emit(f"{down} = sub i32 {bits}, 1")
            grow, shrink = (pos, neg) if toward_positive else (neg, pos)
            zero_next = "1" if toward_positive else "-2147483647"    # +-smallest subnormal
            r = self.tmp(); self.emit(f"{r} = select i1 {grow}, i32 {up}, i32 {zero_next}")
            r2 = self.tmp(); self.emit(f"{r2} = select i1 {shrink}, i32 {down}, i32 {r}")
            return r2
        if mode in ("rm", "rz"):     # the float at or below the exact value
            lower_bits = self.tmp(); self.emit(f"{lower_bits} = select i1 {above}, i32 {step(False)}, i32 {bits}")
        if mode in ("rp", "rz"):     # at or above
            upper_bits = self.tmp(); self.emit(f"{upper_bits} = select i1 {below}, i32 {step(True)}, i32 {bits}")
        if mode == "rm":
            chosen = lower_bits
        elif mode == "rp":
            chosen = upper_bits
        else:
            negative = self.tmp(); self.emit(f"{negative} = fcmp olt double {s}, 0.0")
            chosen = self.tmp(); self.emit(f"{chosen} = select i1 {negative}, i32 {upper_bits}, i32 {lower_bits}")
        r = self.tmp(); self.emit(f"{r} = bitcast i32 {chosen} to float")
        if mode != "rm":
            return r
        # an exact zero sum: -0 toward -inf, unless both addends are +0
        zero = self.tmp(); self.emit(f"{zero} = fcmp oeq double {s}, 0.0")
        pb = self.tmp(); self.emit(f"{pb} = bitcast double {p} to i64")
        cb = self.tmp(); self.emit(f"{cb} = bitcast double {c} to i64")
        both = self.tmp(); self.emit(f"{both} = or i64 {pb}, {cb}")
        plus = self.tmp(); self.emit(f"{plus} = icmp eq i64 {both}, 0")
        z = self.tmp(); self.emit(f"{z} = select i1 {plus}, float 0.0, float -0.0")
        out = self.tmp(); self.emit(f"{out} = select i1 {zero}, float {z}, float {r}")
        return out

    def float_op(self, inst, compute):
        """Apply ``compute(args, llty) -> value`` to float operands, with .ftz/.sat and the
        f16/bf16 (and packed x2) forms computed in f32 and rounded back."""
        t = self.itype(inst)
        srcs = inst.operands[1:]
        if t in self.FLOAT_TYPES:
            ty = LLTY[t]
            args = [self.ftz(inst, self.read(s, ty, inst), ty) for s in srcs]
            r = self.sat(inst, self.ftz(inst, compute(args, ty), ty), ty)
            self.write(inst.operands[0], r, ty, inst)
            return
        if t in self.HALF_TYPES:
            # Half precision computed in f64, where products and sums of halves are exact
            # (or nearly), then rounded once to the 16-bit format.
            half = "half" if t.startswith("f16") else "bfloat"
            lanes = 2 if t.endswith("x2") else 1
            storage = "i32" if lanes == 2 else "i16"
            raw = [self.read(s, storage, inst) for s in srcs]
            acc = "0"
            for lane in range(lanes):
                args = []
                for v in raw:
                    sh = self.tmp(); self.emit(f"{sh} = lshr {storage} {v}, {16 * lane}")
                    h16 = self.conv(sh, storage, "i16")
                    # through f32: half <-> double conversions are libcalls that the JIT
                    # would have to resolve; half -> float is one instruction (F16C), and
                    # bf16 -> float a shift (exact, subnormals kept)
                    f32 = self.half_to_float(self.ftz16(inst, h16, half), half)
                    f = self.tmp(); self.emit(f"{f} = fpext float {f32} to double")
                    args.append(f)
                r = self.sat(inst, compute(args, "double"), "double")
                bits = self.to_half_bits(inst, r, "double", half)
                wide = self.conv(bits, "i16", storage)
                sh = self.tmp(); self.emit(f"{sh} = shl {storage} {wide}, {16 * lane}")
                o = self.tmp(); self.emit(f"{o} = or {storage} {acc}, {sh}")
                acc = o
            self.write(inst.operands[0], acc, storage, inst)
            return
        raise unsupported(inst, f"type .{t}")

    def half_to_float(self, bits16: str, half: str) -> str:
        if half == "bfloat":
            w = self.tmp(); self.emit(f"{w} = zext i16 {bits16} to i32")
            sh = self.tmp(); self.emit(f"{sh} = shl i32 {w}, 16")
            f = self.tmp(); self.emit(f"{f} = bitcast i32 {sh} to float")
            return f
        h = self.tmp(); self.emit(f"{h} = bitcast i16 {bits16} to half")
        f = self.tmp(); self.emit(f"{f} = fpext half {h} to float")
        return f

    def half_sign_op(self, inst, op: str) -> bool:
        """neg/abs of f16/bf16 (and x2) only touch sign bits: NaNs and subnormals unchanged."""
        t = self.itype(inst)
        if t not in self.HALF_TYPES:
            return False
        storage = "i32" if t.endswith("x2") else "i16"
        sign = 0x80008000 if storage == "i32" else 0x8000
        v = self.read(inst.operands[1], storage, inst)
        r = self.tmp()
        if op == "neg":
            self.emit(f"{r} = xor {storage} {v}, {sign - (1 << 32) if storage == 'i32' else sign - (1 << 16)}")
        else:
            mask = (~sign) & (0xFFFFFFFF if storage == "i32" else 0xFFFF)
            self.emit(f"{r} = and {storage} {v}, {mask}")
        self.write(inst.operands[0], r, storage, inst)
        return True

    def bf16_directed(self, v: str, mode: str) -> str:
        """f32 -> bf16 bits rounded toward zero (.rz), -inf (.rm) or +inf (.rp): bf16 is the
        top half of an f32, so drop the low half and step the magnitude up by one unit when
        the rounding direction is away from zero and something was dropped."""
        bits = self.tmp(); self.emit(f"{bits} = bitcast float {v} to i32")
        top = self.tmp(); self.emit(f"{top} = and i32 {bits}, -65536")
        low = self.tmp(); self.emit(f"{low} = and i32 {bits}, 65535")
        inexact = self.tmp(); self.emit(f"{inexact} = icmp ne i32 {low}, 0")
        negative = self.tmp(); self.emit(f"{negative} = icmp slt i32 {bits}, 0")
        if mode == "rz":
            r = top
        else:
            away = negative if mode == "rm" else self.not_i1(negative)
            up = self.tmp(); self.emit(f"{up} = and i1 {inexact}, {away}")
            step = self.tmp(); self.emit(f"{step} = select i1 {up}, i32 65536, i32 0")
            r = self.tmp(); self.emit(f"{r} = add i32 {top}, {step}")
        hi = self.tmp(); self.emit(f"{hi} = lshr i32 {r}, 16")
        h16 = self.conv(hi, "i32", "i16")
        nan = self.tmp(); self.emit(f"{nan} = fcmp uno float {v}, 0.0")
        out = self.tmp(); self.emit(f"{out} = select i1 {nan}, i16 32767, i16 {h16}")
        return out

    def not_i1(self, v: str) -> str:
        t = self.tmp(); self.emit(f"{t} = xor i1 {v}, true"); return t

    def to_half_bits(self, inst, v: str, ty: str, half: str, mode=None) -> str:
        """Round a float/double to f16 or bf16 bits (nearest even, once, or the directed
        ``mode``), with .relu (a negative result becomes +0), .satfinite (an infinite result
        becomes the largest finite value of its sign) and .ftz; a NaN result is the
        canonical NaN."""
        if "relu" in inst.modifiers:
            neg = self.tmp(); self.emit(f"{neg} = fcmp olt {ty} {v}, 0.0")
            z = self.tmp(); self.emit(f"{z} = select i1 {neg}, {ty} 0.0, {ty} {v}")
            v = z
        nan = self.tmp(); self.emit(f"{nan} = fcmp uno {ty} {v}, 0.0")
        if mode is not None:
            if ty == "double":
                # the same directed rounding twice equals doing it once
                name = self.mod.directed_helper("fptrunc", mode, "float", ["double"])
                f = self.tmp(); self.emit(f'{f} = call float @"{name}"(double {v})')
                v, ty = f, "float"
            if half != "half":
                b = self.bf16_directed(v, mode)
            else:
                name = self.mod.directed_helper("fptrunc", mode, "half", ["float"])
                h = self.tmp(); self.emit(f'{h} = call half @"{name}"(float {v})')
                b = self.tmp(); self.emit(f"{b} = bitcast half {h} to i16")
        else:
            f = v
            if ty == "double":
                # round to odd into f32 (toward zero, sticky bit set when inexact), so that
                # the final rounding to 16 bits is the only one
                name = self.mod.directed_helper("fptrunc", "rz", "float", ["double"])
                fz = self.tmp(); self.emit(f'{fz} = call float @"{name}"(double {v})')
                back = self.tmp(); self.emit(f"{back} = fpext float {fz} to double")
                inexact = self.tmp(); self.emit(f"{inexact} = fcmp one double {back}, {v}")
                fb = self.tmp(); self.emit(f"{fb} = bitcast float {fz} to i32")
                sticky = self.tmp(); self.emit(f"{sticky} = zext i1 {inexact} to i32")
                odd = self.tmp(); self.emit(f"{odd} = or i32 {fb}, {sticky}")
                f = self.tmp(); self.emit(f"{f} = bitcast i32 {odd} to float")
            if half == "half":
                h = self.tmp(); self.emit(f"{h} = fptrunc float {f} to half")
                b = self.tmp(); self.emit(f"{b} = bitcast half {h} to i16")
            else:
                b = self.tmp(); self.emit(f"{b} = call i16 @f32_to_bf16(float {f})")
        if "satfinite" in inst.modifiers:
            inf, largest = (0x7C00, 0x7BFF) if half == "half" else (0x7F80, 0x7F7F)
            mag = self.tmp(); self.emit(f"{mag} = and i16 {b}, 32767")
            is_inf = self.tmp(); self.emit(f"{is_inf} = icmp eq i16 {mag}, {inf}")
            sign = self.tmp(); self.emit(f"{sign} = and i16 {b}, -32768")
            clamp = self.tmp(); self.emit(f"{clamp} = or i16 {sign}, {largest}")
            b2 = self.tmp(); self.emit(f"{b2} = select i1 {is_inf}, i16 {clamp}, i16 {b}")
            b = b2
        out = self.tmp(); self.emit(f"{out} = select i1 {nan}, i16 32767, i16 {b}")
        return self.ftz16(inst, out, half)

    def ftz16(self, inst, bits: str, half: str) -> str:
        """.ftz on f16: a subnormal becomes a zero of the same sign (bf16 has no .ftz)."""
        if "ftz" not in inst.modifiers or half != "half":
            return bits
        e = self.tmp(); self.emit(f"{e} = and i16 {bits}, 31744")
        sub = self.tmp(); self.emit(f"{sub} = icmp eq i16 {e}, 0")
        z = self.tmp(); self.emit(f"{z} = and i16 {bits}, -32768")
        r = self.tmp(); self.emit(f"{r} = select i1 {sub}, i16 {z}, i16 {bits}")
        return r

    def is_float(self, inst) -> bool:
        return any(t in self.FLOAT_TYPES or t in self.HALF_TYPES for t in inst.types)

    def int_binary(self, inst, op: str):
        ty = self.lt(inst)
        a = self.read(inst.operands[1], ty, inst)
        b = self.read(inst.operands[2], ty, inst)
        r = self.tmp(); self.emit(f"{r} = {op} {ty} {a}, {b}")
        self.write(inst.operands[0], r, ty, inst)

    def fcall(self, name: str, args, ty: str) -> str:
        sfx = "f32" if ty == "float" else "f64"
        r = self.tmp()
        self.emit(f"{r} = call {ty} @llvm.{name}.{sfx}(" + ", ".join(f"{ty} {a}" for a in args) + ")")
        return r

    PACKED16 = ("u16x2", "s16x2")

    def packed16(self, inst, op: str, signed: bool = False):
        """sm_90 SIMD on the two half-words of .b32 registers: add/sub wrap in each half-word,
        min/max compare them (signed for .s16x2), .relu clamps a negative result to 0."""
        a = self.read(inst.operands[1], "i32", inst)
        b = self.read(inst.operands[2], "i32", inst)
        va = self.tmp(); self.emit(f"{va} = bitcast i32 {a} to <2 x i16>")
        vb = self.tmp(); self.emit(f"{vb} = bitcast i32 {b} to <2 x i16>")
        r = self.tmp()
        if op in ("add", "sub"):
            self.emit(f"{r} = {op} <2 x i16> {va}, {vb}")
        else:
            fn = ("s" if signed else "u") + op
            self.emit(f"{r} = call <2 x i16> @llvm.{fn}.v2i16(<2 x i16> {va}, <2 x i16> {vb})")
            if "relu" in inst.modifiers:
                z = self.tmp()
                self.emit(f"{z} = call <2 x i16> @llvm.smax.v2i16(<2 x i16> {r}, <2 x i16> zeroinitializer)")
                r = z
        out = self.tmp(); self.emit(f"{out} = bitcast <2 x i16> {r} to i32")
        self.write(inst.operands[0], out, "i32", inst)

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
