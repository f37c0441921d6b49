"""The numeric helpers several instruction families share (arithmetic, comparisons,
conversions, float math, bits, atomics, tensor cores, video): flush-to-zero and subnormals,
saturation, directed rounding, half and bf16 bits, float operations through libm or LLVM
intrinsics. A family that uses them names this class among its bases, so that what it
relies on is written where it is defined, not found through ``function.Function``'s mixins."""
from __future__ import annotations

from .common import LLTY, unsupported


class NumericHelpers:
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

    # conversions --------------------------------------------------------------------------------
    def saturate_i32(self, v: str, bits: int, signed: bool) -> str:
        """An i32 clamped to the range of a ``bits``-wide signed or unsigned integer."""
        lo, hi = ((-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1))
        a = self.tmp(); self.emit(f"{a} = call i32 @llvm.smax.i32(i32 {v}, i32 {lo})")
        b = self.tmp(); self.emit(f"{b} = call i32 @llvm.smin.i32(i32 {a}, i32 {hi})")
        return b
