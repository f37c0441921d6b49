"""Comparison and selection: ``setp``, ``set``, ``selp``, ``slct``."""
from __future__ import annotations

from ....ptx import ir
from .common import LLTY, INTS, FLOATS, unsupported, vt
from .registry import Registry
from .numeric_helpers import NumericHelpers

registry = Registry("compare")


class CompareLowering(NumericHelpers):
    """Per-thread lowerings (mixed into ``function.Function``)."""

    # compare and select -------------------------------------------------------------------------
    INT_CMP = {"eq": "eq", "ne": "ne", "lt": "slt", "le": "sle", "gt": "sgt", "ge": "sge",
               "lo": "ult", "ls": "ule", "hi": "ugt", "hs": "uge"}
    FLT_CMP = {"eq": "oeq", "ne": "one", "lt": "olt", "le": "ole", "gt": "ogt", "ge": "oge",
               "equ": "ueq", "neu": "une", "ltu": "ult", "leu": "ule", "gtu": "ugt",
               "geu": "uge", "num": "ord", "nan": "uno"}

    HALF_X2 = {"f16x2": "half", "bf16x2": "bfloat"}
    ONE_BITS = {"f16": 0x3C00, "bf16": 0x3F80, "f16x2": 0x3C00, "bf16x2": 0x3F80}

    def compare(self, inst, a_op, b_op) -> str:
        """a CmpOp b as an i1 (scalar source types)."""
        return self.compare_lanes(inst, a_op, b_op)[0]

    def compare_lanes(self, inst, a_op, b_op) -> list:
        """a CmpOp b per element: one i1, or for .f16x2/.bf16x2 two, [lower half, upper
        half] (the ISA's t[0], t[1])."""
        t = inst.types[-1]
        cmp = next((m for m in inst.modifiers if m in self.FLT_CMP or m in self.INT_CMP), None)
        if cmp is None:
            raise unsupported(inst, "no comparison operator")
        floating = t in self.FLOAT_TYPES or t in ("f16", "bf16") or t in self.HALF_X2
        if floating and cmp not in self.FLT_CMP:
            raise unsupported(inst, f".{cmp} on floating-point .{t}")
        if t in self.HALF_X2:
            half = self.HALF_X2[t]
            halves = []
            for o in (a_op, b_op):
                v = self.read(o, "i32", inst)
                lo = self.conv(v, "i32", "i16")
                sh = self.tmp(); self.emit(f"{sh} = lshr i32 {v}, 16")
                hi = self.conv(sh, "i32", "i16")
                halves.append([self.half_value(inst, x, half) for x in (lo, hi)])
            out = []
            for i in range(2):
                r = self.tmp()
                self.emit(f"{r} = fcmp {self.FLT_CMP[cmp]} float {halves[0][i]}, {halves[1][i]}")
                out.append(r)
            return out
        if floating:
            ty = LLTY[t] if t in self.FLOAT_TYPES else "float"
            if t in ("f16", "bf16"):
                half = "half" if t == "f16" else "bfloat"
                a, b = (self.half_value(inst, self.read(o, "i16", inst), half)
                        for o in (a_op, b_op))
            else:
                a = self.ftz(inst, self.read(a_op, ty, inst), ty)
                b = self.ftz(inst, self.read(b_op, ty, inst), ty)
            r = self.tmp(); self.emit(f"{r} = fcmp {self.FLT_CMP[cmp]} {ty} {a}, {b}")
            return [r]
        if cmp not in self.INT_CMP or t not in LLTY:
            raise unsupported(inst, f".{cmp} on .{t}")
        ty = LLTY[t]
        pred = self.INT_CMP[cmp]
        if t.startswith("u") or t.startswith("b"):
            pred = {"slt": "ult", "sle": "ule", "sgt": "ugt", "sge": "uge"}.get(pred, pred)
        a = self.read(a_op, ty, inst)
        b = self.read(b_op, ty, inst)
        r = self.tmp(); self.emit(f"{r} = icmp {pred} {ty} {a}, {b}")
        return [r]

    def half_value(self, inst, bits: str, half: str) -> str:
        """16 bits of f16/bf16 as a float (exact), subnormal f16 flushed under .ftz."""
        bits = self.ftz16(inst, bits, half)
        h = self.tmp(); self.emit(f"{h} = bitcast i16 {bits} to {half}")
        f = self.tmp(); self.emit(f"{f} = fpext {half} {h} to float")
        return f

    def combine(self, inst, r, c_op):
        bool_op = next((m for m in inst.modifiers if m in ("and", "or", "xor")), None)
        if bool_op is None:
            return r
        c = self.read(c_op, "i1", inst)
        out = self.tmp(); self.emit(f"{out} = {bool_op} i1 {r}, {c}")
        return out

    @registry.lower("setp")
    def op_setp(self, inst):
        """p = BoolOp(t, c), q = BoolOp(!t, c); for .f16x2/.bf16x2, p and q are the lower
        and upper halves' results, each combined with c."""
        dst = inst.operands[0]
        lanes = self.compare_lanes(inst, inst.operands[1], inst.operands[2])
        c_op = inst.operands[3] if len(inst.operands) > 3 else None
        if len(lanes) == 2:
            if not isinstance(dst, ir.Pair):
                raise unsupported(inst, "a .x2 comparison writes two predicates, p|q")
            self.write(dst.first, self.combine(inst, lanes[0], c_op), "i1", inst)
            self.write(dst.second, self.combine(inst, lanes[1], c_op), "i1", inst)
            return
        r = lanes[0]
        if isinstance(dst, ir.Pair):
            nr = self.tmp(); self.emit(f"{nr} = xor i1 {r}, true")
            self.write(dst.first, self.combine(inst, r, c_op), "i1", inst)
            self.write(dst.second, self.combine(inst, nr, c_op), "i1", inst)
        else:
            self.write(dst, self.combine(inst, r, c_op), "i1", inst)

    @registry.lower("set")
    def op_set(self, inst):
        """d = BoolOp(t, c) ? true value : 0, where the true value is 1.0 of a floating
        destination (f32, f16, bf16) and all ones of an integer one; for .x2 sources each
        16-bit half of d holds its half's result (1.0 in f16/bf16 for .f16x2/.bf16x2
        destinations, 0xFFFF for .u32/.s32)."""
        if len(inst.types) != 2:
            raise unsupported(inst, "set needs a destination and a source type")
        dtype, stype = inst.types
        lanes = self.compare_lanes(inst, inst.operands[1], inst.operands[2])
        c_op = inst.operands[3] if len(inst.operands) > 3 else None
        results = [self.combine(inst, r, c_op) for r in lanes]
        if len(results) == 2:
            if dtype in self.HALF_X2 and dtype != stype:
                raise unsupported(inst, f".{dtype} result of a .{stype} comparison")
            if dtype not in self.HALF_X2 and dtype not in ("u32", "s32", "b32"):
                raise unsupported(inst, f".{dtype} result of a .{stype} comparison")
            true = self.ONE_BITS[dtype] if dtype in self.HALF_X2 else 0xFFFF
            halves = []
            for r in results:
                v = self.tmp(); self.emit(f"{v} = select i1 {r}, i32 {true}, i32 0")
                halves.append(v)
            hi = self.tmp(); self.emit(f"{hi} = shl i32 {halves[1]}, 16")
            d = self.tmp(); self.emit(f"{d} = or i32 {hi}, {halves[0]}")
            self.write(inst.operands[0], d, "i32", inst)
            return
        r = results[0]
        if dtype == "f32":
            v = self.tmp(); self.emit(f"{v} = select i1 {r}, float 1.0, float 0.0")
            self.write(inst.operands[0], v, "float", inst)
        elif dtype in ("f16", "bf16"):
            v = self.tmp(); self.emit(f"{v} = select i1 {r}, i16 {self.ONE_BITS[dtype]}, i16 0")
            self.write(inst.operands[0], v, "i16", inst)
        elif dtype in ("u16", "s16", "b16", "u32", "s32", "b32"):
            ty = LLTY[dtype]
            v = self.tmp(); self.emit(f"{v} = select i1 {r}, {ty} -1, {ty} 0")
            self.write(inst.operands[0], v, ty, inst)
        else:
            raise unsupported(inst, f"set with a .{dtype} result")

    @registry.lower("selp")
    def op_selp(self, inst):
        ty = self.lt(inst)
        a = self.read(inst.operands[1], ty, inst)
        b = self.read(inst.operands[2], ty, inst)
        c = self.read(inst.operands[3], "i1", inst)
        r = self.tmp(); self.emit(f"{r} = select i1 {c}, {ty} {a}, {ty} {b}")
        self.write(inst.operands[0], r, ty, inst)

    @registry.lower("slct")
    def op_slct(self, inst):
        ty = LLTY[inst.types[0]]
        ctype = inst.types[-1]
        a = self.read(inst.operands[1], ty, inst)
        b = self.read(inst.operands[2], ty, inst)
        if ctype == "f32":
            c = self.ftz(inst, self.read(inst.operands[3], "float", inst), "float")
            ge = self.tmp(); self.emit(f"{ge} = fcmp oge float {c}, 0.0")   # -0.0 >= 0, NaN: b
        else:
            c = self.read(inst.operands[3], "i32", inst)
            ge = self.tmp(); self.emit(f"{ge} = icmp sge i32 {c}, 0")
        r = self.tmp(); self.emit(f"{r} = select i1 {ge}, {ty} {a}, {ty} {b}")
        self.write(inst.operands[0], r, ty, inst)


class CompareVectorLowering:
    """Warp-vectorized lowerings (mixed into ``vector.VectorFunction``); returning False
    falls back to the per-thread lowering, lane by lane."""

    @registry.lower_vector("setp")
    def v_setp(self, inst, em):
        t = inst.types[-1]
        cmp = next((m for m in inst.modifiers if m in self.FLT_CMP or m in self.INT_CMP), None)
        extra = self.mods(inst) - {cmp, "and", "or", "xor"}
        if cmp is None or extra or not self.all_readable(inst.operands[1:]):
            return False
        if t in FLOATS:
            ty = LLTY[t]
            a, b = (self.vread(o, ty, inst) for o in inst.operands[1:3])
            r = self.op2(f"fcmp {self.FLT_CMP[cmp]}", vt(ty), a, b)
        elif t in INTS and cmp in self.INT_CMP:
            ty = LLTY[t]
            pred = self.INT_CMP[cmp]
            if t[0] in "ub":
                pred = {"slt": "ult", "sle": "ule", "sgt": "ugt", "sge": "uge"}.get(pred, pred)
            a, b = (self.vread(o, ty, inst) for o in inst.operands[1:3])
            r = self.op2(f"icmp {pred}", vt(ty), a, b)
        else:
            return False
        bool_op = next((m for m in inst.modifiers if m in ("and", "or", "xor")), None)

        def combine(v):
            if bool_op is None:
                return v
            c = self.vread(inst.operands[3], "i1", inst)
            return self.op2(bool_op, vt("i1"), v, c)
        dst = inst.operands[0]
        if isinstance(dst, ir.Pair):
            nr = self.op2("xor", vt("i1"), r, "splat (i1 true)")
            a_val, b_val = combine(r), combine(nr)
            self.vwrite(dst.first, a_val, "i1", em, inst)
            self.vwrite(dst.second, b_val, "i1", em, inst)
        else:
            self.vwrite(dst, combine(r), "i1", em, inst)

    @registry.lower_vector("selp")
    def v_selp(self, inst, em):
        t = self.itype(inst)
        if t not in LLTY or not self.simple(inst) or not self.all_readable(inst.operands[1:4]):
            return False
        ty = LLTY[t]
        a, b = (self.vread(o, ty, inst) for o in inst.operands[1:3])
        c = self.vread(inst.operands[3], "i1", inst)
        r = self.tmp(); self.emit(f"{r} = select {vt('i1')} {c}, {vt(ty)} {a}, {vt(ty)} {b}")
        self.vwrite(inst.operands[0], r, ty, em, inst)
