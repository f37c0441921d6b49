"""Logic and bit manipulation: ``and``, ``or``, ``xor``, ``not``, ``cnot``, ``shl``, ``shr``,
``shf``, ``popc``, ``clz``, ``brev``, ``bfind``, ``bfe``, ``bfi``, ``prmt``, ``lop3``, ``bmsk``,
``fns``, ``szext``."""
from __future__ import annotations

from ....ptx import ir
from .common import LLTY, BITS, unsupported, INTS, vt
from .registry import Registry
from .numeric_helpers import NumericHelpers

registry = Registry("bits")


class BitsLowering(NumericHelpers):
    """Per-thread lowerings (mixed into ``function.Function``)."""

    # logic and bits -------------------------------------------------------------------------
    @registry.lower("and")
    def op_and(self, inst):
        self.int_binary(inst, "and")

    @registry.lower("or")
    def op_or(self, inst):
        self.int_binary(inst, "or")

    @registry.lower("xor")
    def op_xor(self, inst):
        self.int_binary(inst, "xor")

    @registry.lower("not")
    def op_not(self, inst):
        ty = self.lt(inst)
        a = self.read(inst.operands[1], ty, inst)
        r = self.tmp(); self.emit(f"{r} = xor {ty} {a}, -1" if ty != "i1" else f"{r} = xor i1 {a}, true")
        self.write(inst.operands[0], r, ty, inst)

    @registry.lower("cnot")
    def op_cnot(self, inst):
        ty = self.lt(inst)
        a = self.read(inst.operands[1], ty, inst)
        z = self.tmp(); self.emit(f"{z} = icmp eq {ty} {a}, 0")
        self.write(inst.operands[0], self.conv(z, "i1", ty), ty, inst)

    def shift(self, inst, kind):
        """shl/shr: shift amounts >= the width give 0 (or the sign for shr.s), as PTX says;
        LLVM would give poison."""
        t = self.itype(inst)
        ty = self.lt(inst)
        bits = BITS[ty]
        a = self.read(inst.operands[1], ty, inst)
        b32 = self.read(inst.operands[2], "i32", inst)
        big = self.tmp(); self.emit(f"{big} = icmp ugt i32 {b32}, {bits - 1}")
        amount32 = self.tmp(); self.emit(f"{amount32} = select i1 {big}, i32 {bits - 1}, i32 {b32}")
        amount = self.conv(amount32, "i32", ty)
        r = self.tmp()
        if kind == "shl":
            self.emit(f"{r} = shl {ty} {a}, {amount}")
            out = self.tmp(); self.emit(f"{out} = select i1 {big}, {ty} 0, {ty} {r}")
        elif t.startswith("s"):
            self.emit(f"{r} = ashr {ty} {a}, {amount}")
            out = r
        else:
            self.emit(f"{r} = lshr {ty} {a}, {amount}")
            out = self.tmp(); self.emit(f"{out} = select i1 {big}, {ty} 0, {ty} {r}")
        self.write(inst.operands[0], out, ty, inst)

    @registry.lower("shl")
    def op_shl(self, inst):
        self.shift(inst, "shl")

    @registry.lower("shr")
    def op_shr(self, inst):
        self.shift(inst, "shr")

    @registry.lower("shf")
    def op_shf(self, inst):
        """Funnel shift: .l/.r with .wrap (amount mod 32) or .clamp (min(amount, 32))."""
        a = self.read(inst.operands[1], "i32", inst)
        b = self.read(inst.operands[2], "i32", inst)
        c = self.read(inst.operands[3], "i32", inst)
        if "clamp" in inst.modifiers:
            n = self.tmp(); self.emit(f"{n} = call i32 @llvm.umin.i32(i32 {c}, i32 32)")
        else:
            n = self.tmp(); self.emit(f"{n} = and i32 {c}, 31")
        hi = self.tmp(); self.emit(f"{hi} = zext i32 {b} to i64")
        lo = self.tmp(); self.emit(f"{lo} = zext i32 {a} to i64")
        hs = self.tmp(); self.emit(f"{hs} = shl i64 {hi}, 32")
        both = self.tmp(); self.emit(f"{both} = or i64 {hs}, {lo}")
        n64 = self.conv(n, "i32", "i64")
        r = self.tmp()
        if "l" in inst.modifiers:
            s = self.tmp(); self.emit(f"{s} = shl i64 {both}, {n64}")
            self.emit(f"{r} = lshr i64 {s}, 32")
        else:
            self.emit(f"{r} = lshr i64 {both}, {n64}")
        self.write(inst.operands[0], self.conv(r, "i64", "i32"), "i32", inst)

    @registry.lower("popc")
    def op_popc(self, inst):
        ty = self.lt(inst)
        a = self.read(inst.operands[1], ty, inst)
        r = self.tmp(); self.emit(f"{r} = call {ty} @llvm.ctpop.{ty}({ty} {a})")
        self.write(inst.operands[0], self.conv(r, ty, "i32"), "i32", inst)

    @registry.lower("clz")
    def op_clz(self, inst):
        ty = self.lt(inst)
        a = self.read(inst.operands[1], ty, inst)
        r = self.tmp(); self.emit(f"{r} = call {ty} @llvm.ctlz.{ty}({ty} {a}, i1 false)")
        self.write(inst.operands[0], self.conv(r, ty, "i32"), "i32", inst)

    @registry.lower("brev")
    def op_brev(self, inst):
        ty = self.lt(inst)
        a = self.read(inst.operands[1], ty, inst)
        r = self.tmp(); self.emit(f"{r} = call {ty} @llvm.bitreverse.{ty}({ty} {a})")
        self.write(inst.operands[0], r, ty, inst)

    @registry.lower("bfind")
    def op_bfind(self, inst):
        """Position of the most significant non-sign bit; 0xffffffff if none."""
        t = self.itype(inst)
        ty = self.lt(inst)
        bits = BITS[ty]
        a = self.read(inst.operands[1], ty, inst)
        if t.startswith("s"):
            neg = self.tmp(); self.emit(f"{neg} = icmp slt {ty} {a}, 0")
            inv = self.tmp(); self.emit(f"{inv} = xor {ty} {a}, -1")
            a2 = self.tmp(); self.emit(f"{a2} = select i1 {neg}, {ty} {inv}, {ty} {a}")
            a = a2
        lz = self.tmp(); self.emit(f"{lz} = call {ty} @llvm.ctlz.{ty}({ty} {a}, i1 false)")
        lz32 = self.conv(lz, ty, "i32")
        pos = self.tmp(); self.emit(f"{pos} = sub i32 {bits - 1}, {lz32}")
        if "shiftamt" in inst.modifiers:
            p2 = self.tmp(); self.emit(f"{p2} = sub i32 {bits - 1}, {pos}"); pos = p2
        none = self.tmp(); self.emit(f"{none} = icmp eq {ty} {a}, 0")
        r = self.tmp(); self.emit(f"{r} = select i1 {none}, i32 -1, i32 {pos}")
        self.write(inst.operands[0], r, "i32", inst)

    @registry.lower("bfe")
    def op_bfe(self, inst):
        """Bit field extract; position and length taken from their low 8 bits."""
        t = self.itype(inst)
        ty = self.lt(inst)
        bits = BITS[ty]
        signed = t.startswith("s")
        a = self.read(inst.operands[1], ty, inst)
        pos = self.read(inst.operands[2], "i32", inst)
        ln = self.read(inst.operands[3], "i32", inst)
        p8 = self.tmp(); self.emit(f"{p8} = and i32 {pos}, 255")
        l8 = self.tmp(); self.emit(f"{l8} = and i32 {ln}, 255")
        wide = "i128"
        aw = self.tmp(); self.emit(f"{aw} = {'sext' if signed else 'zext'} {ty} {a} to {wide}")
        pw = self.conv(self.umin127(p8), "i32", wide)
        lw = self.conv(self.umin127(l8), "i32", wide)
        sh = self.tmp(); self.emit(f"{sh} = ashr {wide} {aw}, {pw}")   # sign/zero fill past msb
        one = self.tmp(); self.emit(f"{one} = shl {wide} 1, {lw}")
        mask = self.tmp(); self.emit(f"{mask} = sub {wide} {one}, 1")
        field = self.tmp(); self.emit(f"{field} = and {wide} {sh}, {mask}")
        if signed:
            # sign bit of the field is bit min(pos+len-1, msb) of a
            top = self.tmp(); self.emit(f"{top} = add i32 {p8}, {l8}")
            top1 = self.tmp(); self.emit(f"{top1} = sub i32 {top}, 1")
            topc = self.tmp(); self.emit(f"{topc} = call i32 @llvm.umin.i32(i32 {top1}, i32 {bits - 1})")
            tw = self.conv(topc, "i32", wide)
            sb = self.tmp(); self.emit(f"{sb} = lshr {wide} {aw}, {tw}")
            sbit = self.tmp(); self.emit(f"{sbit} = and {wide} {sb}, 1")
            isneg = self.tmp(); self.emit(f"{isneg} = icmp ne {wide} {sbit}, 0")
            nz = self.tmp(); self.emit(f"{nz} = icmp ne i32 {l8}, 0")
            neg = self.tmp(); self.emit(f"{neg} = and i1 {isneg}, {nz}")
            ext = self.tmp(); self.emit(f"{ext} = or {wide} {field}, {self.negmask(mask, wide)}")
            field2 = self.tmp(); self.emit(f"{field2} = select i1 {neg}, {wide} {ext}, {wide} {field}")
            field = field2
        self.write(inst.operands[0], self.conv(field, wide, ty), ty, inst)

    def negmask(self, mask, wide):
        r = self.tmp(); self.emit(f"{r} = xor {wide} {mask}, -1"); return r

    @registry.lower("bfi")
    def op_bfi(self, inst):
        ty = self.lt(inst)
        a = self.read(inst.operands[1], ty, inst)
        b = self.read(inst.operands[2], ty, inst)
        pos = self.read(inst.operands[3], "i32", inst)
        ln = self.read(inst.operands[4], "i32", inst)
        wide = "i128"
        p8 = self.conv(self.umin127(self.and255(pos)), "i32", wide)
        l8 = self.conv(self.umin127(self.and255(ln)), "i32", wide)
        one = self.tmp(); self.emit(f"{one} = shl {wide} 1, {l8}")
        m0 = self.tmp(); self.emit(f"{m0} = sub {wide} {one}, 1")
        m = self.tmp(); self.emit(f"{m} = shl {wide} {m0}, {p8}")
        aw = self.conv(a, ty, wide)
        bw = self.conv(b, ty, wide)
        ash = self.tmp(); self.emit(f"{ash} = shl {wide} {aw}, {p8}")
        am = self.tmp(); self.emit(f"{am} = and {wide} {ash}, {m}")
        nm = self.negmask(m, wide)
        bm = self.tmp(); self.emit(f"{bm} = and {wide} {bw}, {nm}")
        r = self.tmp(); self.emit(f"{r} = or {wide} {am}, {bm}")
        self.write(inst.operands[0], self.conv(r, wide, ty), ty, inst)

    def umin127(self, v):
        """Shift amounts on i128 stay below 128 (LLVM gives poison past the width)."""
        r = self.tmp(); self.emit(f"{r} = call i32 @llvm.umin.i32(i32 {v}, i32 127)"); return r

    def and255(self, v):
        r = self.tmp(); self.emit(f"{r} = and i32 {v}, 255"); return r

    @registry.lower("prmt")
    def op_prmt(self, inst):
        """Byte permute; default mode and .f4e .b4e .rc8 .ecl .ecr .rc16."""
        a = self.read(inst.operands[1], "i32", inst)
        b = self.read(inst.operands[2], "i32", inst)
        c = self.read(inst.operands[3], "i32", inst)
        mode = next((m for m in inst.modifiers if m in ("f4e", "b4e", "rc8", "ecl", "ecr", "rc16")), None)
        r = self.tmp()
        self.emit(f"{r} = call i32 @prmt(i32 {a}, i32 {b}, i32 {c}, i32 "
                  f"{['f4e', 'b4e', 'rc8', 'ecl', 'ecr', 'rc16'].index(mode) + 1 if mode else 0})")
        self.write(inst.operands[0], r, "i32", inst)

    @registry.lower("lop3")
    def op_lop3(self, inst):
        a, b, c = (self.read(o, "i32", inst) for o in inst.operands[1:4])
        lut = inst.operands[4]
        if not isinstance(lut, ir.Imm):
            raise unsupported(inst, "lop3 with a register truth table")
        r = self.tmp()
        self.emit(f"{r} = call i32 @lop3(i32 {a}, i32 {b}, i32 {c}, i32 {lut.value & 0xFF})")
        self.write(inst.operands[0], r, "i32", inst)

    @registry.lower("bmsk")
    def op_bmsk(self, inst):
        a = self.read(inst.operands[1], "i32", inst)
        b = self.read(inst.operands[2], "i32", inst)
        clamp = "clamp" in inst.modifiers
        r = self.tmp(); self.emit(f"{r} = call i32 @bmsk(i32 {a}, i32 {b}, i1 {'true' if clamp else 'false'})")
        self.write(inst.operands[0], r, "i32", inst)

    @registry.lower("fns")
    def op_fns(self, inst):
        mask = self.read(inst.operands[1], "i32", inst)
        base = self.read(inst.operands[2], "i32", inst)
        offset = self.read(inst.operands[3], "i32", inst)
        r = self.tmp(); self.emit(f"{r} = call i32 @fns(i32 {mask}, i32 {base}, i32 {offset})")
        self.write(inst.operands[0], r, "i32", inst)

    @registry.lower("szext")
    def op_szext(self, inst):
        signed = "s32" in inst.modifiers
        a = self.read(inst.operands[1], "i32", inst)
        b = self.read(inst.operands[2], "i32", inst)
        clamp = "clamp" in inst.modifiers
        r = self.tmp()
        self.emit(f"{r} = call i32 @szext(i32 {a}, i32 {b}, i1 {'true' if clamp else 'false'}, i1 {'true' if signed else 'false'})")
        self.write(inst.operands[0], r, "i32", inst)


class BitsVectorLowering:
    """Warp-vectorized lowerings (mixed into ``vector.VectorFunction``); returning False
    falls back to the per-thread lowering, lane by lane."""

    @registry.lower_vector("and")
    def v_and(self, inst, em):
        t = self.itype(inst)
        return self.binary(inst, em, "and", LLTY[t]) if (t in INTS or t == "pred") and self.simple(inst) else False

    @registry.lower_vector("or")
    def v_or(self, inst, em):
        t = self.itype(inst)
        return self.binary(inst, em, "or", LLTY[t]) if (t in INTS or t == "pred") and self.simple(inst) else False

    @registry.lower_vector("xor")
    def v_xor(self, inst, em):
        t = self.itype(inst)
        return self.binary(inst, em, "xor", LLTY[t]) if (t in INTS or t == "pred") and self.simple(inst) else False

    @registry.lower_vector("not")
    def v_not(self, inst, em):
        t = self.itype(inst)
        if not ((t in INTS or t == "pred") and self.simple(inst) and self.vreadable(inst.operands[1])):
            return False
        ty = LLTY[t]
        a = self.vread(inst.operands[1], ty, inst)
        one = "true" if ty == "i1" else "-1"
        self.vwrite(inst.operands[0], self.op2("xor", vt(ty), a, f"splat ({ty} {one})"), ty, em, inst)

    @registry.lower_vector("shl")
    def v_shl(self, inst, em):
        return self.vshift(inst, em, "shl")

    @registry.lower_vector("shr")
    def v_shr(self, inst, em):
        return self.vshift(inst, em, "shr")

    def vshift(self, inst, em, kind):
        t = self.itype(inst)
        if t not in INTS or not self.simple(inst) or not self.all_readable(inst.operands[1:3]):
            return False
        ty = LLTY[t]
        bits = BITS[ty]
        a = self.vread(inst.operands[1], ty, inst)
        n = self.vread(inst.operands[2], "i32", inst)
        big = self.op2("icmp ugt", vt("i32"), n, f"splat (i32 {bits - 1})")
        amt32 = self.tmp(); self.emit(f"{amt32} = select {vt('i1')} {big}, {vt('i32')} splat (i32 {bits - 1}), {vt('i32')} {n}")
        amt = self.vconv(amt32, "i32", ty)
        if kind == "shl":
            r = self.op2("shl", vt(ty), a, amt)
        elif t.startswith("s"):
            r = self.op2("ashr", vt(ty), a, amt)
        else:
            r = self.op2("lshr", vt(ty), a, amt)
        if kind == "shl" or not t.startswith("s"):
            z = self.tmp(); self.emit(f"{z} = select {vt('i1')} {big}, {vt(ty)} zeroinitializer, {vt(ty)} {r}")
            r = z
        self.vwrite(inst.operands[0], r, ty, em, inst)
