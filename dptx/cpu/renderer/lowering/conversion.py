"""Conversions: ``cvt`` between integers, floats, half, bf16, FP8 and their packed forms,
with rounding, saturation and ``.relu``; ``cvt.pack``."""
from __future__ import annotations

from .common import LLTY, BITS, unsupported, W, INTS, FLOATS, vt, sfx
from .registry import Registry
from .numeric_helpers import NumericHelpers

registry = Registry("conversion")


class ConversionLowering(NumericHelpers):
    """Per-thread lowerings (mixed into ``function.Function``)."""

    PACK_BITS = {"u16": 16, "s16": 16, "u8": 8, "s8": 8, "u4": 4, "s4": 4, "u2": 2, "s2": 2}

    def cvt_pack(self, inst):
        """cvt.pack.sat.{u16,s16}.s32 d, a, b and cvt.pack.sat.{u8,s8,u4,s4,u2,s2}.s32.b32
        d, a, b, c: a and b saturated to the narrow type, b in the lowest bits and a above
        it; the 8-bit and narrower forms fill the rest of d with c's low bits."""
        types = [m for m in inst.modifiers if m not in ("pack", "sat")]   # .u4 is no PTX type name
        ct = types[0] if types else None
        if ct not in self.PACK_BITS or "sat" not in inst.modifiers or types[1:2] != ["s32"]:
            raise unsupported(inst)
        size = self.PACK_BITS[ct]
        with_c = size < 16
        if len(inst.operands) != (4 if with_c else 3) or types[2:] != (["b32"] if with_c else []):
            raise unsupported(inst, "cvt.pack operands")
        fields = []
        for o in inst.operands[1:3]:
            v = self.saturate_i32(self.read(o, "i32", inst), size, ct.startswith("s"))
            m = self.tmp(); self.emit(f"{m} = and i32 {v}, {(1 << size) - 1}")
            fields.append(m)
        up = self.tmp(); self.emit(f"{up} = shl i32 {fields[0]}, {size}")
        r = self.tmp(); self.emit(f"{r} = or i32 {up}, {fields[1]}")
        if with_c:
            c = self.read(inst.operands[3], "i32", inst)
            cs = self.tmp(); self.emit(f"{cs} = shl i32 {c}, {2 * size}")
            r2 = self.tmp(); self.emit(f"{r2} = or i32 {r}, {cs}"); r = r2
        self.write(inst.operands[0], r, "i32", inst)

    @registry.lower("cvt")
    def op_cvt(self, inst):
        if "pack" in inst.modifiers:
            return self.cvt_pack(inst)
        types = inst.types
        if len(types) != 2:
            raise unsupported(inst, "cvt needs a destination and a source type")
        dt, st = types
        mods = inst.modifiers
        if dt == "tf32" and st == "f32" and "rna" in mods:
            # 10-bit mantissa, round to nearest with ties away from zero; NaN kept
            v = self.read(inst.operands[1], "i32", inst)
            f = self.conv(v, "i32", "float")
            nan = self.tmp(); self.emit(f"{nan} = fcmp uno float {f}, 0.0")
            r0 = self.tmp(); self.emit(f"{r0} = add i32 {v}, 4096")
            r1 = self.tmp(); self.emit(f"{r1} = and i32 {r0}, -8192")
            r = self.tmp(); self.emit(f"{r} = select i1 {nan}, i32 {v}, i32 {r1}")
            self.write(inst.operands[0], r, "i32", inst)
            return
        if dt in self.FP8 or st in self.FP8:
            return self.cvt_fp8(inst, dt, st)
        for t in (dt, st):
            if t not in LLTY and t not in ("f16x2", "bf16x2"):
                raise unsupported(inst, f"conversions involving .{t}")
        if dt in ("f16x2", "bf16x2") or st in ("f16x2", "bf16x2"):
            return self.cvt_packed(inst, dt, st)
        sty = LLTY[st]
        dty = LLTY[dt]
        signed_src = st.startswith("s")
        src = self.read(inst.operands[1], sty, inst, signed_src)
        is_f = lambda t: t in ("f32", "f64", "f16", "bf16")  # noqa: E731
        if is_f(st):
            fsrc = src
            fty = sty
            if st in ("f16", "bf16"):
                fsrc = self.half_to_float(src, "half" if st == "f16" else "bfloat")
                fty = "float"
            fsrc = self.ftz(inst, fsrc, fty) if fty == "float" else fsrc
            rounding = next((m for m in mods if m in ("rni", "rzi", "rmi", "rpi")), None)
            if rounding:
                fn = {"rni": "roundeven", "rzi": "trunc", "rmi": "floor", "rpi": "ceil"}[rounding]
                fsrc = self.fcall(fn, [fsrc], fty)
            if is_f(dt):
                v = self.float_to_float(inst, fsrc, fty, dt)
            else:
                if not rounding and dt not in ("pred",):
                    raise unsupported(inst, "float to integer conversion needs .rni/.rzi/.rmi/.rpi")
                fn = "fptosi" if dt.startswith("s") else "fptoui"
                sfx = "f32" if fty == "float" else "f64"
                v = self.tmp()
                # saturating conversions: out of range clamps, NaN gives 0 (as PTX says)
                self.emit(f"{v} = call {dty} @llvm.{fn}.sat.{dty}.{sfx}({fty} {fsrc})")
            self.write(inst.operands[0], v, LLTY[dt] if dt not in ("f16", "bf16") else "i16", inst)
            return
        # integer source
        if is_f(dt):
            rounding = next((m for m in mods if m in ("rn", "rz", "rm", "rp")), "rn")
            target = "float" if dt in ("f16", "bf16") else dty
            conv_op = "sitofp" if signed_src else "uitofp"
            f = self.tmp()
            if rounding != "rn":
                if dt in ("f16", "bf16") or sty not in ("i32", "i64"):
                    raise unsupported(inst, f"conversion to .{dt} with .{rounding}")
                name = self.mod.directed_helper(conv_op, rounding, target, [sty])
                self.emit(f'{f} = call {target} @"{name}"({sty} {src})')
            else:
                self.emit(f"{f} = {conv_op} {sty} {src} to {target}")
            if dt in ("f16", "bf16"):
                v = self.float_to_float(inst, f, "float", dt)
            else:
                v = f
            self.write(inst.operands[0], v, dty if dt not in ("f16", "bf16") else "i16", inst)
            return
        # integer to integer: resize, then saturate if asked
        if "sat" in mods:
            v = self.int_saturate(src, sty, signed_src, dt)
        else:
            v = self.conv(src, sty, dty, signed_src) if BITS[sty] != BITS[dty] else src
        self.write(inst.operands[0], v, dty, inst, signed=dt.startswith("s"))

    def int_saturate(self, v, sty, signed_src, dt):
        dty = LLTY[dt]
        bits = BITS[dty]
        if dt.startswith("s"):
            lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        else:
            lo, hi = 0, (1 << bits) - 1
        wide = "i128"
        w = self.tmp(); self.emit(f"{w} = {'sext' if signed_src else 'zext'} {sty} {v} to {wide}")
        a = self.tmp(); self.emit(f"{a} = call {wide} @llvm.smax.i128({wide} {w}, {wide} {lo})")
        b = self.tmp(); self.emit(f"{b} = call {wide} @llvm.smin.i128({wide} {a}, {wide} {hi})")
        return self.conv(b, wide, dty)

    def float_to_float(self, inst, v, fty, dt):
        mods = inst.modifiers
        rounding = next((m for m in mods if m in ("rn", "rz", "rm", "rp")), None)
        if dt in ("f16", "bf16"):
            half = "half" if dt == "f16" else "bfloat"
            v = self.sat(inst, v, fty)      # .sat: clamp to [0, 1] first, NaN -> 0
            return self.to_half_bits(inst, v, fty, half,
                                     rounding if rounding in ("rz", "rm", "rp") else None)
        dty = LLTY[dt]
        if BITS[dty] > BITS[fty]:
            r = self.tmp(); self.emit(f"{r} = fpext {fty} {v} to {dty}")
        elif BITS[dty] < BITS[fty]:
            r = self.tmp()
            if rounding not in (None, "rn"):
                name = self.mod.directed_helper("fptrunc", rounding, dty, [fty])
                self.emit(f'{r} = call {dty} @"{name}"({fty} {v})')
            else:
                self.emit(f"{r} = fptrunc {fty} {v} to {dty}")
        else:
            r = v
        r = self.ftz(inst, r, dty) if dty == "float" else r
        return self.sat(inst, r, dty)

    FP8 = ("e4m3x2", "e5m2x2")

    def cvt_fp8(self, inst, dt, st):
        """sm_89+ FP8 conversions: cvt.rn.satfinite{.relu}.{e4m3x2,e5m2x2}.f32 d, a, b (a in the
        upper byte) and .f16x2/.bf16x2 d, a (each half to its byte), and back with
        cvt.rn{.relu}.{f16x2,bf16x2}.{e4m3x2,e5m2x2} d, a (exact; NaN becomes the canonical
        NaN 0x7FFF). Helpers @to_fp8 and @from_fp8 in runtime_ir.py."""
        mods = set(inst.modifiers) - {dt, st}
        relu = "true" if "relu" in mods else "false"
        if dt in self.FP8:
            if not {"rn", "satfinite"} <= mods or not mods <= {"rn", "satfinite", "relu"}:
                raise unsupported(inst, "FP8 results need .rn.satfinite")
            e4m3 = "true" if dt == "e4m3x2" else "false"
            def widen(f):
                d = self.tmp(); self.emit(f"{d} = fpext float {f} to double")
                return d

            if st == "f32" and len(inst.operands) == 3:
                halves = [widen(self.read(o, "float", inst)) for o in inst.operands[1:3]]   # upper byte first
            elif st in ("f16x2", "bf16x2") and len(inst.operands) == 2:
                v = self.read(inst.operands[1], "i32", inst)
                half = "half" if st == "f16x2" else "bfloat"
                halves = []
                for shift in (16, 0):
                    sh = self.tmp(); self.emit(f"{sh} = lshr i32 {v}, {shift}")
                    halves.append(widen(self.half_to_float(self.conv(sh, "i32", "i16"), half)))
            else:
                raise unsupported(inst)
            hi, lo = (self.tmp(), self.tmp())
            self.emit(f"{hi} = call i32 @to_fp8(double {halves[0]}, i1 {e4m3}, i1 {relu})")
            self.emit(f"{lo} = call i32 @to_fp8(double {halves[1]}, i1 {e4m3}, i1 {relu})")
            up = self.tmp(); self.emit(f"{up} = shl i32 {hi}, 8")
            r = self.tmp(); self.emit(f"{r} = or i32 {up}, {lo}")
            self.write(inst.operands[0], self.conv(r, "i32", "i16"), "i16", inst)
            return
        if dt not in ("f16x2", "bf16x2") or not mods <= {"rn", "relu"} or len(inst.operands) != 2:
            raise unsupported(inst)
        e4m3 = "true" if st == "e4m3x2" else "false"
        v = self.conv(self.read(inst.operands[1], "i16", inst), "i16", "i32")
        out = "0"
        for shift in (0, 8):
            sh = self.tmp(); self.emit(f"{sh} = lshr i32 {v}, {shift}")
            code = self.tmp(); self.emit(f"{code} = and i32 {sh}, 255")
            d = self.tmp(); self.emit(f"{d} = call double @from_fp8(i32 {code}, i1 {e4m3})")
            if relu == "true":      # as for f16: below zero becomes +0, -0 and NaN stay
                neg = self.tmp(); self.emit(f"{neg} = fcmp olt double {d}, 0.0")
                d2 = self.tmp(); self.emit(f"{d2} = select i1 {neg}, double 0.0, double {d}")
                d = d2
            f = self.tmp(); self.emit(f"{f} = fptrunc double {d} to float")   # exact: FP8 values are f32s
            if dt == "f16x2":
                h = self.tmp(); self.emit(f"{h} = fptrunc float {f} to half")   # exact too
                b = self.tmp(); self.emit(f"{b} = bitcast half {h} to i16")
            else:
                b = self.tmp(); self.emit(f"{b} = call i16 @f32_to_bf16(float {f})")
            nan = self.tmp(); self.emit(f"{nan} = fcmp uno float {f}, 0.0")
            canon = self.tmp(); self.emit(f"{canon} = select i1 {nan}, i16 32767, i16 {b}")
            w = self.conv(canon, "i16", "i32")
            if shift:
                w2 = self.tmp(); self.emit(f"{w2} = shl i32 {w}, 16"); w = w2
            o = self.tmp(); self.emit(f"{o} = or i32 {out}, {w}"); out = o
        self.write(inst.operands[0], out, "i32", inst)

    def cvt_packed(self, inst, dt, st):
        """cvt.{rn,rz}{.relu}{.satfinite}.{f16x2,bf16x2}.f32 d, a, b: two f32 rounded to
        16 bits each and packed, a in the upper half."""
        mods = set(inst.modifiers) - {dt, st}
        rounding = mods & {"rn", "rz"}
        if dt in ("f16x2", "bf16x2") and st == "f32" and len(rounding) == 1 and \
                mods - rounding <= {"relu", "satfinite"} and len(inst.operands) == 3:
            half = "half" if dt == "f16x2" else "bfloat"
            mode = None if rounding == {"rn"} else "rz"
            parts = []
            for o in inst.operands[1:3]:
                f = self.read(o, "float", inst)
                parts.append(self.conv(self.to_half_bits(inst, f, "float", half, mode),
                                       "i16", "i32"))
            hi = self.tmp(); self.emit(f"{hi} = shl i32 {parts[0]}, 16")
            r = self.tmp(); self.emit(f"{r} = or i32 {hi}, {parts[1]}")
            self.write(inst.operands[0], r, "i32", inst)
            return
        raise unsupported(inst, "packed conversion of this form")


class ConversionVectorLowering:
    """Warp-vectorized lowerings (mixed into ``vector.VectorFunction``); returning False
    falls back to the per-thread lowering, lane by lane."""

    @registry.lower_vector("cvt")
    def v_cvt(self, inst, em):
        if len(inst.types) != 2 or not self.vreadable(inst.operands[1]):
            return False
        dt, st = inst.types
        mods = self.mods(inst)
        if dt in INTS and st in INTS and not mods:
            sty, dty = LLTY[st], LLTY[dt]
            v = self.vread(inst.operands[1], sty, inst)
            if BITS[dty] < BITS[sty]:
                r = self.tmp(); self.emit(f"{r} = trunc {vt(sty)} {v} to {vt(dty)}")
            elif BITS[dty] > BITS[sty]:
                op = "sext" if st.startswith("s") else "zext"
                r = self.tmp(); self.emit(f"{r} = {op} {vt(sty)} {v} to {vt(dty)}")
            else:
                r = v
            self.vwrite(inst.operands[0], r, dty, em, inst)
            return
        if dt in FLOATS and st in INTS and mods <= {"rn"} and BITS[LLTY[st]] >= 16:
            sty, dty = LLTY[st], LLTY[dt]
            v = self.vread(inst.operands[1], sty, inst)
            op = "sitofp" if st.startswith("s") else "uitofp"
            r = self.tmp(); self.emit(f"{r} = {op} {vt(sty)} {v} to {vt(dty)}")
            self.vwrite(inst.operands[0], r, dty, em, inst)
            return
        if dt == "f64" and st == "f32" and not mods:
            v = self.vread(inst.operands[1], "float", inst)
            r = self.tmp(); self.emit(f"{r} = fpext {vt('float')} {v} to {vt('double')}")
            self.vwrite(inst.operands[0], r, "double", em, inst)
            return
        if dt == "f32" and st == "f64" and mods <= {"rn"}:
            v = self.vread(inst.operands[1], "double", inst)
            r = self.tmp(); self.emit(f"{r} = fptrunc {vt('double')} {v} to {vt('float')}")
            self.vwrite(inst.operands[0], r, "float", em, inst)
            return
        if dt in INTS and st in FLOATS and mods in ({"rzi"}, {"rni"}) and BITS[LLTY[dt]] >= 16:
            sty, dty = LLTY[st], LLTY[dt]
            v = self.vread(inst.operands[1], sty, inst)
            if "rni" in mods:
                v = self.vcall(vt(sty), f"llvm.roundeven.v{W}{sfx(sty)}", [f"{vt(sty)} {v}"])
            # saturating, NaN -> 0: what PTX specifies for float -> integer conversions
            kind = "fptosi" if dt.startswith("s") else "fptoui"
            r = self.vcall(vt(dty), f"llvm.{kind}.sat.v{W}{dty}.v{W}{sfx(sty)}", [f"{vt(sty)} {v}"])
            self.vwrite(inst.operands[0], r, dty, em, inst)
            return
        return False
