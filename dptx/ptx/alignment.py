"""Known alignment of a function's registers: how many low bits of each register's value are
zero whatever the thread (LLVM's known bits, for the trailing zeros only).

The CPU executor checks that every access is naturally aligned, as a GPU does; an access
whose address is aligned by construction (``As[ty][k]`` in shared memory: a variable's
declared alignment plus multiples of 4) needs no check. A register's value is known through
every instruction that writes it (a flow-insensitive fixed point over the function, so loop
counters are covered): the minimum over its definitions.

Kernel parameters of 64 bits are pointers in practice, aligned like every cudaMalloc'd buffer
(256 bytes) unless a launch passes a view into one. The caller says how many low bits of them
to take as zero (``param_bits``) and must check at launch time that every 64-bit argument
value has them (``dptx.cpu.executor`` builds a second form, which assumes nothing, for a
launch whose arguments do not).
"""
from __future__ import annotations

from . import ir

WORD = 64       # "every bit known zero": the value 0 (or not known yet, during the fixed point)


def _registers(ops, out: set) -> None:
    for op in ops:
        if isinstance(op, ir.Reg):
            out.add(op.name)
        elif hasattr(op, "items"):
            _registers([i for i in op.items if i is not None], out)
        elif hasattr(op, "first"):
            _registers([op.first, op.second], out)


def trailing_zeros(value: int) -> int:
    value &= (1 << 64) - 1
    return WORD if value == 0 else (value & -value).bit_length() - 1


class KnownAlignment:
    """``bits(operand)``: low bits known zero in a register or immediate; ``aligned(addr,
    alignment)``: whether a memory operand's address is a multiple of ``alignment``."""

    def __init__(self, f: ir.Function, symbols: dict, param_bits: dict):
        """``symbols``: name -> low bits known zero of the variable's address (shared
        offsets, buffer windows); ``param_bits``: kernel parameter name -> low bits known
        zero of its 64-bit value (the parameters not named: none)."""
        self.f = f
        self.symbols = symbols
        self.param_bits = param_bits if f.is_kernel else {}
        self.known = self._solve()

    def bits(self, op) -> int:
        if isinstance(op, ir.Imm):
            return trailing_zeros(op.value) if op.kind == "int" else 0
        if isinstance(op, ir.Reg):
            if op.component is not None or op.negated:
                return 0
            return self.known.get(op.name, 0)
        if isinstance(op, ir.Sym):
            return min(self.symbols.get(op.name, 0), trailing_zeros(op.offset))
        return 0

    def aligned(self, addr, alignment: int) -> bool:
        if alignment <= 1:
            return True
        if not isinstance(addr, ir.Addr):
            return False
        need = alignment.bit_length() - 1
        base = WORD if addr.base is None else self.bits(addr.base)
        return min(base, trailing_zeros(addr.offset)) >= need

    def _solve(self) -> dict:
        defs, other = [], set()
        for inst in self.f.instructions:
            dests = inst.destinations
            if len(dests) == 1 and isinstance(dests[0], ir.Reg) and dests[0].component is None \
                    and dests[0] is inst.operands[0]:
                defs.append(inst)
            else:
                # written as a part (a vector, a pair, a call's return): not known
                _registers(dests, other)
        # every register starts at "all bits zero" and only loses bits: the fixed point is
        # reached in as many rounds as the longest chain of definitions around a loop
        self.known = {inst.operands[0].name: WORD for inst in defs}
        for _ in range(len(defs) + 2):
            changed = False
            for inst in defs:
                name = inst.operands[0].name
                value = self._transfer(inst)
                if value < self.known[name]:
                    self.known[name] = value
                    changed = True
            if not changed:
                break
        for name in other:
            self.known[name] = 0
        return self.known

    def _transfer(self, inst) -> int:
        """Low bits known zero of what ``inst`` writes to its (single) destination."""
        # (a guarded write keeps the old value or writes this: the minimum covers both)
        op, src = inst.opcode, inst.operands[1:]
        b = [self.bits(s) for s in src]
        if op == "mov" and len(src) == 1:
            return b[0]
        if op == "cvta" and len(src) == 1:
            # global/const windows keep the bits; a local address adds the thread's base in
            # the call's local area (a multiple of 16 bytes)
            return min(b[0], 4) if "local" in inst.modifiers else b[0]
        if op == "cvt" and len(src) == 1 and all(t[0] in "usb" for t in inst.types):
            return b[0]
        if op == "ld" and "param" in inst.modifiers and len(src) == 1 \
                and isinstance(src[0], ir.Addr) and isinstance(src[0].base, ir.Sym) \
                and src[0].offset == 0 and inst.types and inst.types[-1] in ("u64", "s64", "b64") \
                and not inst.has("v2", "v4"):
            return self.param_bits.get(src[0].base.name, 0)
        if op in ("add", "sub") and len(b) == 2 and not inst.has("cc", "sat"):
            return min(b)
        if op in ("mul", "mul24") and len(b) == 2 and inst.has("lo", "wide"):
            return min(WORD, b[0] + b[1])
        if op in ("mad", "mad24") and len(b) == 3 and inst.has("lo", "wide") \
                and not inst.has("cc", "hi"):
            return min(WORD, b[0] + b[1], b[2])
        if op == "shl" and len(src) == 2 and isinstance(src[1], ir.Imm) and src[1].kind == "int":
            return min(WORD, b[0] + src[1].value) if src[1].value < WORD else WORD
        if op == "and" and len(b) == 2:
            return max(b)
        if op in ("or", "xor") and len(b) == 2:
            return min(b)
        if op == "selp" and len(b) == 3:
            return min(b[0], b[1])
        if op == "neg" and len(b) == 1:
            return b[0]
        return 0
