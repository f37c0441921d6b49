"""The video instructions: SIMD on 2 x 16 and 4 x 8 bit lanes (``vadd2/4``, ``vsub2/4``,
``vavrg2/4``, ``vabsdiff2/4``, ``vmin2/4``, ``vmax2/4``, ``vset2/4``), and the scalar ones on
bytes, half-words or words (``vadd``, ``vsub``, ``vabsdiff``, ``vmin``, ``vmax``, ``vshl``,
``vshr``, ``vset``; not ``vmad``)."""
from __future__ import annotations

from ....ptx import ir
from .common import unsupported
from .registry import Registry
from .numeric_helpers import NumericHelpers

registry = Registry("video")


class VideoLowering(NumericHelpers):
    """Per-thread lowerings (mixed into ``function.Function``)."""

    # SIMD video instructions (vadd2 ... vset4) ---------------------------------------------
    VIDEO_CMP = {"eq": "eq", "ne": "ne", "lt": "slt", "le": "sle", "gt": "sgt", "ge": "sge"}

    @registry.lower("vadd2", "vsub2", "vavrg2", "vabsdiff2", "vmin2", "vmax2", "vset2", "vadd4", "vsub4", "vavrg4", "vabsdiff4", "vmin4", "vmax4", "vset4")
    def video_simd(self, inst):
        """vop2/vop4 and vset2/vset4: half-word (2) or byte (4) lanes, selected from the 64 bits
        {b, a} by .asel/.bsel (default .h10/.h32, .b3210/.b7654), each extended by its operand's
        type; the lane results are clamped (.sat) and either merged into c under the
        destination's lane mask or summed into c (.add), as the ISA's pseudocode says."""
        op, lanes = inst.opcode[:-1], int(inst.opcode[-1])
        width = 32 // lanes
        mods = list(inst.modifiers)
        if op == "vset":
            if len(mods) < 3 or mods[2] not in self.VIDEO_CMP:
                raise unsupported(inst)
            dtype, (atype, btype), cmp_ = "u32", mods[:2], mods[2]
        else:
            dtype, atype, btype = mods[:3]
        rest = set(mods[3:])
        if not {dtype, atype, btype} <= {"u32", "s32"} or not rest <= {"sat", "add"} or \
                rest == {"sat", "add"} or len(inst.operands) != 4:
            raise unsupported(inst)
        sat, accumulate = "sat" in rest, "add" in rest
        d, a, b, c = inst.operands
        names = ("h10", "h32") if lanes == 2 else ("b3210", "b7654")
        kind = "h" if lanes == 2 else "b"

        def selector(reg, default, count, limit):
            """The digits of .hxy / .bxyzw, element i being the i-th digit from the right."""
            sel = reg.component or default
            digits = [int(ch) for ch in reversed(sel[1:])] if sel[1:].isdigit() else []
            if sel[0] != kind or len(digits) not in count or any(x >= limit for x in digits):
                raise unsupported(inst, f"lane selector .{sel} of {reg.name}")
            return digits

        asel = selector(a, names[0], (lanes,), 2 * lanes)
        bsel = selector(b, names[1], (lanes,), 2 * lanes)
        mask = set(selector(d, names[0], range(1, lanes + 1), lanes))
        va = self.read(ir.Reg(a.name), "i32", inst)
        vb = self.read(ir.Reg(b.name), "i32", inst)
        vc = self.read(c, "i32", inst)
        both = self.tmp(); self.emit(f"{both} = zext i32 {va} to i64")
        hi = self.tmp(); self.emit(f"{hi} = zext i32 {vb} to i64")
        hs = self.tmp(); self.emit(f"{hs} = shl i64 {hi}, 32")
        ab = self.tmp(); self.emit(f"{ab} = or i64 {both}, {hs}")
        lane_ty = f"i{width}"

        def lane(src64, index, signed):
            sh = self.tmp(); self.emit(f"{sh} = lshr i64 {src64}, {index * width}")
            t = self.tmp(); self.emit(f"{t} = trunc i64 {sh} to {lane_ty}")
            x = self.tmp(); self.emit(f"{x} = {'sext' if signed else 'zext'} {lane_ty} {t} to i32")
            return x

        results = []
        for i in range(lanes):
            x = lane(ab, asel[i], atype == "s32")
            y = lane(ab, bsel[i], btype == "s32")
            t = self.tmp()
            if op == "vadd":
                self.emit(f"{t} = add i32 {x}, {y}")
            elif op == "vsub":
                self.emit(f"{t} = sub i32 {x}, {y}")
            elif op == "vavrg":
                # rounds half up for non-negative sums, truncates (towards -inf) otherwise
                s_ = self.tmp(); self.emit(f"{s_} = add i32 {x}, {y}")
                nn = self.tmp(); self.emit(f"{nn} = icmp sge i32 {s_}, 0")
                up = self.tmp(); self.emit(f"{up} = zext i1 {nn} to i32")
                s1 = self.tmp(); self.emit(f"{s1} = add i32 {s_}, {up}")
                self.emit(f"{t} = ashr i32 {s1}, 1")
            elif op == "vabsdiff":
                df = self.tmp(); self.emit(f"{df} = sub i32 {x}, {y}")
                self.emit(f"{t} = call i32 @llvm.abs.i32(i32 {df}, i1 false)")
            elif op in ("vmin", "vmax"):
                self.emit(f"{t} = call i32 @llvm.s{op[1:]}.i32(i32 {x}, i32 {y})")
            else:
                cc = self.tmp(); self.emit(f"{cc} = icmp {self.VIDEO_CMP[cmp_]} i32 {x}, {y}")
                self.emit(f"{t} = zext i1 {cc} to i32")
            if sat:
                t = self.saturate_i32(t, width, dtype == "s32")
            results.append(t)
        if accumulate:
            acc = vc
            for i in sorted(mask):
                n = self.tmp(); self.emit(f"{n} = add i32 {acc}, {results[i]}"); acc = n
            self.write(ir.Reg(d.name), acc, "i32", inst)
            return
        out = "0"
        for i in range(lanes):
            if i in mask:
                v = self.tmp(); self.emit(f"{v} = and i32 {results[i]}, {(1 << width) - 1}")
                if i:
                    v2 = self.tmp(); self.emit(f"{v2} = shl i32 {v}, {i * width}"); v = v2
            else:
                v = self.tmp(); self.emit(f"{v} = and i32 {vc}, {((1 << width) - 1) << (i * width)}")
            o = self.tmp(); self.emit(f"{o} = or i32 {out}, {v}"); out = o
        self.write(ir.Reg(d.name), out, "i32", inst)


# The scalar video instructions, as the ISA's pseudocode ("Scalar Video Instructions") gives
# them: operands are 32-bit registers; a byte (.b0-.b3) or half-word (.h0, .h1) of a and b,
# or the word, sign- or zero-extended by its type; the operation on 33-bit values; .sat
# clamps to the destination type's range (the byte's or half-word's under a merge into
# d.b0-d.h1); then a secondary operation with c (.add, .min, .max) or a merge into c.
_SELECT = {"b0": (0, 8), "b1": (8, 8), "b2": (16, 8), "b3": (24, 8), "h0": (0, 16),
           "h1": (16, 16)}
_SCALAR_VIDEO = ("vadd", "vsub", "vabsdiff", "vmin", "vmax", "vshl", "vshr", "vset")
_VSET_CMP = {"eq": "eq", "ne": "ne", "lt": "slt", "le": "sle", "gt": "sgt", "ge": "sge"}


class ScalarVideoLowering:
    """Per-thread lowerings of vadd, vsub, vabsdiff, vmin, vmax, vshl, vshr and vset
    (mixed into ``function.Function``); vmad is not done: it raises PtxUnsupportedError."""

    def video_part(self, inst, op, signed: bool) -> str:
        """partSelectSignExtend: the selected part of 32-bit operand ``op``, as an i128."""
        sel = op.component if isinstance(op, ir.Reg) else None
        if sel is not None and sel not in _SELECT:
            raise unsupported(inst, f"selector .{sel}")
        base = ir.Reg(op.name, None, op.negated) if sel is not None else op
        v = self.read(base, "i32", inst)
        if sel is not None:
            shift, width = _SELECT[sel]
            s = self.tmp(); self.emit(f"{s} = lshr i32 {v}, {shift}")
            t = self.tmp(); self.emit(f"{t} = trunc i32 {s} to i{width}")
            r = self.tmp(); self.emit(f"{r} = {'sext' if signed else 'zext'} i{width} {t} to i128")
            return r
        r = self.tmp(); self.emit(f"{r} = {'sext' if signed else 'zext'} i32 {v} to i128")
        return r

    def video_clamp(self, v: str, lo: int, hi: int) -> str:
        a = self.tmp(); self.emit(f"{a} = call i128 @llvm.smax.i128(i128 {v}, i128 {lo})")
        b = self.tmp(); self.emit(f"{b} = call i128 @llvm.smin.i128(i128 {a}, i128 {hi})")
        return b

    @registry.lower(*_SCALAR_VIDEO)
    def op_scalar_video(self, inst):
        op = inst.opcode
        mods = set(inst.modifiers)
        types = list(inst.types)
        if op == "vset":
            if len(types) != 2:
                raise unsupported(inst, "vset takes .atype.btype")
            dtype, (atype, btype) = "u32", types
        elif len(types) != 3:
            raise unsupported(inst, "the scalar video instructions take .dtype.atype.btype")
        else:
            dtype, atype, btype = types
        if any(t not in ("u32", "s32") for t in (dtype, atype, btype)):
            raise unsupported(inst, "types other than .u32 and .s32")
        secop = next((m for m in ("add", "min", "max") if m in mods), None)
        sat = "sat" in mods
        mode = next((m for m in ("clamp", "wrap") if m in mods), None)
        cmp = next((m for m in _VSET_CMP if m in mods), None)
        known = {dtype, atype, btype, "sat", "add", "min", "max", "clamp", "wrap"} | set(_VSET_CMP)
        if mods - known or (op in ("vshl", "vshr")) != (mode is not None) or \
                (op == "vset") != (cmp is not None) or (op == "vset" and sat):
            raise unsupported(inst, "this form")
        ops = list(inst.operands)
        dst = ops[0]
        dsel = dst.component if isinstance(dst, ir.Reg) else None
        if dsel is not None and (dsel not in _SELECT or secop is not None):
            raise unsupported(inst, f"destination selector .{dsel}")
        if (secop is not None or dsel is not None) != (len(ops) == 4):
            raise unsupported(inst, "the third source goes with a secondary operation or merge")
        ta = self.video_part(inst, ops[1], atype == "s32")
        tb = self.video_part(inst, ops[2], btype == "s32" and op not in ("vshl", "vshr"))
        if op in ("vadd", "vsub", "vabsdiff"):
            t = self.tmp(); self.emit(f"{t} = {'add' if op == 'vadd' else 'sub'} i128 {ta}, {tb}")
            if op == "vabsdiff":
                a = self.tmp(); self.emit(f"{a} = call i128 @llvm.abs.i128(i128 {t}, i1 false)")
                t = a
        elif op in ("vmin", "vmax"):
            t = self.tmp()
            self.emit(f"{t} = call i128 @llvm.{'smin' if op == 'vmin' else 'smax'}.i128(i128 {ta}, i128 {tb})")
        elif op == "vset":
            c = self.tmp(); self.emit(f"{c} = icmp {_VSET_CMP[cmp]} i128 {ta}, {tb}")
            t = self.tmp(); self.emit(f"{t} = zext i1 {c} to i128")
        else:
            if mode == "clamp":
                amount = self.tmp(); self.emit(f"{amount} = call i128 @llvm.umin.i128(i128 {tb}, i128 32)")
            else:
                amount = self.tmp(); self.emit(f"{amount} = and i128 {tb}, 31")
            t = self.tmp(); self.emit(f"{t} = {'shl' if op == 'vshl' else 'ashr'} i128 {ta}, {amount}")
        if sat:
            signed = dtype == "s32"
            bits = _SELECT[dsel][1] if dsel is not None else 32
            lo, hi = ((-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1))
            t = self.video_clamp(t, lo, hi)
        if len(ops) == 4:
            c32 = self.read(ops[3], "i32", inst)
            c = self.tmp(); self.emit(f"{c} = {'sext' if dtype == 's32' else 'zext'} i32 {c32} to i128")
            if secop == "add":
                r = self.tmp(); self.emit(f"{r} = add i128 {t}, {c}"); t = r
            elif secop in ("min", "max"):
                r = self.tmp(); self.emit(f"{r} = call i128 @llvm.s{secop}.i128(i128 {t}, i128 {c})"); t = r
            else:
                shift, width = _SELECT[dsel]
                keep = (0xFFFFFFFF ^ (((1 << width) - 1) << shift))
                part = self.tmp(); self.emit(f"{part} = and i128 {t}, {(1 << width) - 1}")
                moved = self.tmp(); self.emit(f"{moved} = shl i128 {part}, {shift}")
                rest = self.tmp(); self.emit(f"{rest} = and i128 {c}, {keep}")
                r = self.tmp(); self.emit(f"{r} = or i128 {moved}, {rest}"); t = r
        out = self.tmp(); self.emit(f"{out} = trunc i128 {t} to i32")
        target = ir.Reg(dst.name, None, dst.negated) if dsel is not None else dst
        self.write(target, out, "i32", inst)
