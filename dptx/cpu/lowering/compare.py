"""Comparison and selection: ``setp``, ``set``, ``selp``, ``slct``."""
from __future__ import annotations

from ...ptx import ir
from .common import LLTY, INTS, FLOATS, vt
from .registry import lower, lower_vector


class CompareLowering:
    """Per-thread lowerings (mixed into ``function.Function``)."""

    # compare and select -------------------------------------------------------------------------
    INT_CMP = {"eq": "eq", "ne": "ne", "lt": "slt", "le": "sle", "gt": "sgt", "ge": "sge",
               "lo": "ult", "ls": "ule", "hi": "ugt", "hs": "uge"}
    FLT_CMP = {"eq": "oeq", "ne": "one", "lt": "olt", "le": "ole", "gt": "ogt", "ge": "oge",
               "equ": "ueq", "neu": "une", "ltu": "ult", "leu": "ule", "gtu": "ugt",
               "geu": "uge", "num": "ord", "nan": "uno"}

    def compare(self, inst, a_op, b_op) -> str:
        t = inst.types[-1]
        cmp = next(m for m in inst.modifiers if m in self.FLT_CMP or m in self.INT_CMP)
        if t in self.FLOAT_TYPES or t in ("f16", "bf16"):
            ty = LLTY[t] if t in self.FLOAT_TYPES else "float"
            if t in ("f16", "bf16"):
                half = "half" if t == "f16" else "bfloat"
                vals = []
                for o in (a_op, b_op):
                    v = self.read(o, "i16", inst)
                    h = self.tmp(); self.emit(f"{h} = bitcast i16 {v} to {half}")
                    f = self.tmp(); self.emit(f"{f} = fpext {half} {h} to float")
                    vals.append(f)
                a, b = vals
            else:
                a = self.ftz(inst, self.read(a_op, ty, inst), ty)
                b = self.ftz(inst, self.read(b_op, ty, inst), ty)
            r = self.tmp(); self.emit(f"{r} = fcmp {self.FLT_CMP[cmp]} {ty} {a}, {b}")
            return r
        ty = LLTY[t]
        pred = self.INT_CMP[cmp]
        if t.startswith("u") or t.startswith("b"):
            pred = {"slt": "ult", "sle": "ule", "sgt": "ugt", "sge": "uge"}.get(pred, pred)
        a = self.read(a_op, ty, inst)
        b = self.read(b_op, ty, inst)
        r = self.tmp(); self.emit(f"{r} = icmp {pred} {ty} {a}, {b}")
        return r

    def combine(self, inst, r, c_op):
        bool_op = next((m for m in inst.modifiers if m in ("and", "or", "xor")), None)
        if bool_op is None:
            return r
        c = self.read(c_op, "i1", inst)
        out = self.tmp(); self.emit(f"{out} = {bool_op} i1 {r}, {c}")
        return out

    @lower("setp")
    def op_setp(self, inst):
        dst = inst.operands[0]
        r = self.compare(inst, inst.operands[1], inst.operands[2])
        c_op = inst.operands[3] if len(inst.operands) > 3 else None
        if isinstance(dst, ir.Pair):
            nr = self.tmp(); self.emit(f"{nr} = xor i1 {r}, true")
            self.write(dst.first, self.combine(inst, r, c_op), "i1", inst)
            self.write(dst.second, self.combine(inst, nr, c_op), "i1", inst)
        else:
            self.write(dst, self.combine(inst, r, c_op), "i1", inst)

    @lower("set")
    def op_set(self, inst):
        dtype = inst.types[0]
        r = self.compare(inst, inst.operands[1], inst.operands[2])
        r = self.combine(inst, r, inst.operands[3] if len(inst.operands) > 3 else None)
        if dtype == "f32":
            v = self.tmp(); self.emit(f"{v} = select i1 {r}, float 1.0, float 0.0")
            self.write(inst.operands[0], v, "float", inst)
        else:
            ty = LLTY[dtype]
            v = self.tmp(); self.emit(f"{v} = select i1 {r}, {ty} -1, {ty} 0")
            self.write(inst.operands[0], v, ty, inst)

    @lower("selp")
    def op_selp(self, inst):
        ty = self.lt(inst)
        a = self.read(inst.operands[1], ty, inst)
        b = self.read(inst.operands[2], ty, inst)
        c = self.read(inst.operands[3], "i1", inst)
        r = self.tmp(); self.emit(f"{r} = select i1 {c}, {ty} {a}, {ty} {b}")
        self.write(inst.operands[0], r, ty, inst)

    @lower("slct")
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

    @lower_vector("setp")
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

    @lower_vector("selp")
    def v_selp(self, inst, em):
        t = self.itype(inst)
        if t not in LLTY or not self.simple(inst) or not self.all_readable(inst.operands[1:4]):
            return False
        ty = LLTY[t]
        a, b = (self.vread(o, ty, inst) for o in inst.operands[1:3])
        c = self.vread(inst.operands[3], "i1", inst)
        r = self.tmp(); self.emit(f"{r} = select {vt('i1')} {c}, {vt(ty)} {a}, {vt(ty)} {b}")
        self.vwrite(inst.operands[0], r, ty, em, inst)
