"""The video SIMD instructions on 2 x 16 and 4 x 8 bit lanes: ``vadd2/4``, ``vsub2/4``,
``vavrg2/4``, ``vabsdiff2/4``, ``vmin2/4``, ``vmax2/4``, ``vset2/4``."""
from __future__ import annotations

from ...ptx import ir
from .common import unsupported
from .registry import lower


class VideoLowering:
    """Per-thread lowerings (mixed into ``function.Function``)."""

    # SIMD video instructions (vadd2 ... vset4) ---------------------------------------------
    VIDEO_CMP = {"eq": "eq", "ne": "ne", "lt": "slt", "le": "sle", "gt": "sgt", "ge": "sge"}

    @lower("vadd2", "vsub2", "vavrg2", "vabsdiff2", "vmin2", "vmax2", "vset2", "vadd4", "vsub4", "vavrg4", "vabsdiff4", "vmin4", "vmax4", "vset4")
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
