"""Address registers rebuilt from what they were computed from (the warp form, ``vector.py``).

A fast region's check needs lanes 0 and 16 of each base register, and its pattern check (when
the register's flag does not already say) every lane. Taking them from the register's own
vector keeps that vector (32 lanes of 64-bit addresses: a dozen AVX-512 instructions per
pointer-plus-scaled-index) in the hot path, though only the region's general copy uses it.
Rebuilt from the operands of the instructions that made it (``base + (u64)index * 4``), the
fast path needs only the 32-bit index; the 64-bit vector's computation is then used by cold
code alone, and LLVM moves it there (a tiled matmul: 12-14% of its time).

A rebuilt value equals the register's only where

- the instruction that last wrote the register lies earlier in the same straight-line range
  of PTX (``emit_range``), with no sync point emitted since: a warp stopped at one resumes with
  its live registers reloaded, and those operands may not be;
- none of that instruction's operands was written since, so that their values now are those
  it read (a call's results, which ``writes`` does not list, stop the search);
- it is unpredicated and every lane of the block runs (the region check requires a full
  block mask), so it wrote every lane;
- it is one of the integer operations followed here, computed as the ISA defines them.
"""
from __future__ import annotations

from ...ptx import ir
from .lowering.common import BITS, W, vt


class _NotRebuilt(Exception):
    """An operand the rebuild does not follow."""


class RebuiltAddresses:
    """Mixin of the warp form's function: ``rebuilt(name, lane)``."""

    REBUILD_DEPTH = 3       # instructions followed back from an address register
    # set by ``emit_range`` for the straight-line range being emitted: its first instruction,
    # and the sync points emitted before each instruction's first emission there
    range_start = None
    syncs_before = None

    def rebuildable_def(self, name: str):
        """The index of the instruction that last wrote ``name`` when what it computed can
        be computed again now from its operands (module docstring), else None."""
        start = self.range_start
        if start is None or name in self.uniform:
            return None
        insts = self.f.instructions
        d = None
        for k in range(self.inst_index - 1, start - 1, -1):
            if self.writes_unseen(insts[k]):
                return None
            if name in self.writes(insts[k]):
                d = k
                break
        if d is None or self.syncs_before.get(d) != self.sync_points:
            return None
        inst = insts[d]
        if inst.guard is not None or len(inst.operands) < 2 or inst.operands[0] != ir.Reg(name):
            return None
        sources = inst.operands[1:]
        if any(not isinstance(o, (ir.Reg, ir.Imm)) or (isinstance(o, ir.Reg) and (
                o.component or o.negated or o.name not in self.regs)) for o in sources):
            return None
        read = {o.name for o in sources if isinstance(o, ir.Reg)}
        if name in read or any(read & self.writes(insts[k]) for k in range(d + 1, self.inst_index)):
            return None     # (an operand changed since: not the value the instruction read)
        return d

    def rebuilt_pattern(self, name: str):
        """i1 (cold code, where ``name``'s flag is unset): whether every lane of ``name`` has
        its lane pattern, from the patterns of the operands of the instruction that made it
        (the flag rule of that write, ``plan_pattern_flags``, applied to their checked
        patterns now) rather than from ``name``'s own vector; None where that cannot be
        done. Only with every lane of the block active: the write then covered the warp."""
        d = self.rebuildable_def(name)
        rule = self.flag_rule.get((d, name)) if d is not None else None
        if rule is None or rule[0] not in ("copy", "widen"):
            return None
        ok = self.op2("icmp eq", "i32", self.block_mask, "-1")
        if rule[0] == "copy":
            for src in rule[1]:
                ok = self.op2("and", "i1", ok, self.known_pattern(src, rebuild=True))
            return ok
        _, src, signed = rule
        ok = self.op2("and", "i1", ok, self.known_pattern(src, rebuild=True))
        return self.op2("and", "i1", ok, self.no_wrap(src, signed))

    def rebuilt(self, name: str, lane, depth: int = REBUILD_DEPTH):
        """Register ``name`` (64-bit) as it is now, computed again from the operands of the
        instruction that last wrote it: lane ``lane`` as an i64, or with ``lane`` None every
        lane as a <W x i64>; None where that cannot be exact (module docstring)."""
        if depth <= 0 or self.regs.get(name) != "i64":
            return None
        d = self.rebuildable_def(name)
        if d is None:
            return None
        inst = self.f.instructions[d]
        sources = inst.operands[1:]
        ty = "i64" if lane is not None else vt("i64")

        def operand(o, bits: int, signed: bool) -> str:
            """``o`` as i64 lane(s): an immediate as the instruction reads it, a register
            zero- or sign-extended from its ``bits``."""
            if isinstance(o, ir.Imm):
                if o.kind != "int":
                    raise _NotRebuilt
                v = int(o.value) & ((1 << bits) - 1)
                if signed and v >> (bits - 1):
                    v -= 1 << bits
                c = str(((v + 2 ** 63) % 2 ** 64) - 2 ** 63)       # as i64
                return c if lane is not None else f"splat (i64 {c})"
            rty = self.regs[o.name]
            if BITS.get(rty) != bits or not rty.startswith("i"):
                raise _NotRebuilt
            x = self.rebuilt(o.name, lane, depth - 1) if bits == 64 else None
            if x is not None:
                return x
            return self.conv(self.current(o.name, lane), rty, "i64", signed,
                             lanes=0 if lane is not None else W)

        op, types = inst.opcode, inst.types
        try:
            if op == "add" and types in (("s64",), ("u64",)) and len(sources) == 2:
                return self.op2("add", ty, operand(sources[0], 64, False),
                                operand(sources[1], 64, False))
            if op == "mul" and inst.has("wide") and types in (("u32",), ("s32",)) \
                    and len(sources) == 2:
                signed = types == ("s32",)
                return self.op2("mul", ty, operand(sources[0], 32, signed),
                                operand(sources[1], 32, signed))
            if op == "shl" and types == ("b64",) and len(sources) == 2 \
                    and isinstance(sources[1], ir.Imm) and 0 <= int(sources[1].value) < 64:
                shift = ir.Imm(int(sources[1].value), "int", True)
                return self.op2("shl", ty, operand(sources[0], 64, False),
                                operand(shift, 64, False))
            if op == "mov" and types in (("b64",), ("u64",), ("s64",)) and len(sources) == 1 \
                    and isinstance(sources[0], ir.Reg):
                return operand(sources[0], 64, False)
            if op == "cvt" and types in (("u64", "u32"), ("s64", "s32")) and len(sources) == 1 \
                    and not inst.has("sat") and isinstance(sources[0], ir.Reg):
                return operand(sources[0], 32, types == ("s64", "s32"))
        except _NotRebuilt:
            return None
        return None

    def current(self, name: str, lane):
        """Register ``name`` as it is now, in its own type: lane ``lane``, or every lane."""
        rty = self.regs[name]
        if name in self.uniform:
            scalar = self.scalar_read(ir.Reg(name), rty)
            return scalar if lane is not None else self.splat(scalar, rty)
        value = self.vread(ir.Reg(name), rty, None)
        if lane is None:
            return value
        x = self.tmp(); self.emit(f"{x} = extractelement {vt(rty)} {value}, i32 {lane}")
        return x

    @staticmethod
    def writes_unseen(inst) -> bool:
        """Whether ``inst`` may write registers ``writes`` does not list (a call's results;
        kernels with calls do not take the warp form today: a guard for when they do)."""
        return inst.opcode == "call" or any(
            isinstance(o, ir.ParamList) for o in inst.operands[:len(inst.destinations)])
