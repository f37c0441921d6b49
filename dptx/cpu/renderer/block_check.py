"""Whole-block bounds checks for plain kernels (DESIGN.md point 5, the fast form).

A plain kernel checks every global access of every thread against its buffer. When an
address is an affine function of the thread index with constant, non-negative steps
(``a + 4 * (blockIdx.x * blockDim.x + threadIdx.x)``: vecadd, saxpy, most element-wise
kernels), one check per block covers all its threads: the address of the block's first
thread and of its last one, computed by the same translated instructions, must be
``steps * (extents - 1)`` apart (then no intermediate wrapped around, since with
non-negative steps any wrap would make the difference smaller) and both inside the buffer,
the first naturally aligned (steps that are multiples of the alignment keep every thread so).
Steps are below 2**32 (MAX_STEP), so that span itself cannot wrap.
The block then runs a copy of the thread loop where those accesses are not checked; any
other block (a partial last block, an index that wraps) runs the checked loop, which
reports faults as before.

The addresses are computed by ``@block_trusted``, which runs the instructions they depend
on (pure integer arithmetic on parameters, special registers and constants, each register
defined once, before its use) for the two corner threads.
"""
from __future__ import annotations

from dataclasses import dataclass

import networkx as nx

from ...ptx import ir
from ...ptx.cfg import build_cfg
from . import address_space as L
from .function import Function, window_fields
from .lowering.common import vector_width

ZERO = (0, 0, 0)
# Steps are at most 2**32 bytes per thread index: the span a block covers, sum(step *
# (extent - 1)) < 3 * 2**42, is then exact in 64-bit arithmetic, so the corners' difference
# proves that no thread's address wrapped (steps of 2**64 - 16 and 16 on a (2, 2) block
# cover 2**64, which wraps to 0: equal corners, and threads 16 bytes before and after).
MAX_STEP = 1 << 32
_TID = {"x": (1, 0, 0), "y": (0, 1, 0), "z": (0, 0, 1)}
UNIFORM_SPECIALS = ("%ctaid", "%ntid", "%nctaid")
# integer operations that cannot trap, allowed on values the same in every thread
_UNIFORM_SAFE = {"and", "or", "xor", "not", "shr", "min", "max", "neg", "abs", "cnot", "popc",
                 "clz", "brev", "bfe", "bfi"}


@dataclass(frozen=True)
class Site:
    base: str            # the address register
    offset: int          # immediate offset of the access
    size: int            # access size in bytes
    steps: tuple         # (x, y, z): bytes per step of tid.x, tid.y, tid.z
    window: tuple        # provenance origin of the buffer (for the window's launch constants)


def _dests(inst) -> list:
    return [o for o in inst.operands[:len(inst.destinations)] if isinstance(o, ir.Reg)]


class _Affine:
    """Thread-index steps of registers defined once, before their uses."""

    def __init__(self, f: ir.Function):
        self.insts = f.instructions
        self.defs = {}
        for i, inst in enumerate(self.insts):
            for d in _dests(inst):
                self.defs.setdefault(d.name, []).append(i)
        cfg = build_cfg(f)
        self.cfg = cfg
        self.idom = nx.immediate_dominators(cfg.graph, 0) if len(cfg.blocks) else {}
        self.memo = {}

    def dominates(self, d: int, use: int) -> bool:
        bd, bu = self.cfg.block_of(d), self.cfg.block_of(use)
        if bd == bu:
            return d < use
        b = bu
        while b in self.idom and self.idom[b] != b:
            b = self.idom[b]
            if b == bd:
                return True
        return False

    def operand(self, op, use: int):
        """(steps, instruction indices computing it) or None."""
        if isinstance(op, ir.Imm) and isinstance(op.value, int):
            return ZERO, frozenset()
        if not isinstance(op, ir.Reg) or op.negated:
            return None
        if op.name == "%tid":
            return _TID.get(op.component), frozenset()
        if op.name in UNIFORM_SPECIALS:
            return ZERO, frozenset()
        defs = self.defs.get(op.name, [])
        if len(defs) != 1 or not self.dominates(defs[0], use):
            return None
        d = defs[0]
        if d not in self.memo:
            self.memo[d] = None          # (no cycles: the definition dominates its uses)
            got = self.definition(self.insts[d], d)
            self.memo[d] = None if got is None or got[0] is None else (got[0], got[1] | {d})
        return self.memo[d]

    def definition(self, inst, d: int):
        if inst.guard is not None or len(_dests(inst)) != 1 or not inst.types \
                or any(m in inst.modifiers for m in ("cc", "hi", "sat")) \
                or inst.types[-1] in ("f16", "f16x2", "bf16", "bf16x2", "f32", "f64", "pred"):
            return None
        op, srcs = inst.opcode, inst.operands[1:]
        if op == "ld":
            a = srcs[0] if srcs else None
            if "param" in inst.modifiers and isinstance(a, ir.Addr) and isinstance(a.base, ir.Sym):
                return ZERO, frozenset()
            return None
        parts = [self.operand(o, d) for o in srcs]
        if any(p is None for p in parts):
            return None
        steps = [p[0] for p in parts]
        used = frozenset().union(*(p[1] for p in parts)) if parts else frozenset()

        def scaled(s, k):
            return tuple(k * x for x in s) if 0 <= k < MAX_STEP else None

        def imm(o):
            # immediates are taken as they are written, non-negative and small: 0xFF..F0 is
            # -16 in a 64-bit register, whose steps would wrap (see MAX_STEP)
            if isinstance(o, ir.Imm) and isinstance(o.value, int) and 0 <= o.value < MAX_STEP:
                return o.value
            return None

        if op == "cvta" and not any(m in inst.modifiers for m in ("global", "const")):
            return None         # (shared and local conversions depend on the thread's frame)
        if op in ("mov", "cvt", "cvta") and len(srcs) == 1:
            return steps[0], used
        if op == "add" and len(srcs) == 2:
            return tuple(a + b for a, b in zip(*steps)), used
        if op == "sub" and len(srcs) == 2 and steps[1] == ZERO:
            return steps[0], used
        if op in ("mul", "mad") and len(srcs) >= 2:
            a, b = srcs[0], srcs[1]
            if steps[0] == ZERO and steps[1] == ZERO:
                prod = ZERO
            elif imm(b) is not None:
                prod = scaled(steps[0], imm(b))
            elif imm(a) is not None:
                prod = scaled(steps[1], imm(a))
            else:
                prod = None
            if prod is None:
                return None
            if op == "mad":
                if len(srcs) != 3:
                    return None
                prod = tuple(x + y for x, y in zip(prod, steps[2]))
            return prod, used
        if op == "shl" and len(srcs) == 2 and steps[1] == ZERO:
            k = imm(srcs[1])
            if steps[0] == ZERO:
                return ZERO, used
            if k is not None and 0 <= k < 32:
                return scaled(steps[0], 1 << k), used
            return None
        if op in _UNIFORM_SAFE and all(s == ZERO for s in steps):
            return ZERO, used
        return None


def trusted_sites(fn: Function) -> dict:
    """instruction index -> Site, for the accesses of plain kernel ``fn`` that one check per
    block can cover; also the instructions computing their addresses (``fn.check_slice``)."""
    f = fn.f
    affine = _Affine(f)
    sites, needed = {}, set()
    for i, inst in enumerate(f.instructions):
        if inst.opcode not in ("ld", "st"):
            continue
        space = fn.space_of(inst)
        if space not in ("global", "generic", "const") or vector_width(inst) != 1 or not inst.types:
            continue
        addr = inst.operands[1] if inst.opcode == "ld" else inst.operands[0]
        if not isinstance(addr, ir.Addr) or not isinstance(addr.base, ir.Reg):
            continue
        origins = fn.mod.provenance.get(addr.base.name, set())
        if len(origins) != 1 or fn.known_window(addr.base) is None:
            continue
        form = affine.operand(addr.base, i)
        if form is None or any(not 0 <= s < MAX_STEP for s in form[0]):
            continue
        t = fn.itype(inst)
        size = ir.type_size(t) if t != "pred" else 1
        if any(s % L.alignment(size) for s in form[0]):
            continue        # some thread is misaligned if any is not: the per-access check says which
        sites[i] = Site(addr.base.name, addr.offset, size, form[0], next(iter(origins)))
        needed |= form[1]
    fn.check_slice = sorted(needed)
    return sites


class BlockCheck(Function):
    """``define internal i1 @block_trusted(ptr %ctx, ptr %ti)``: true when every site of
    ``sites`` is in bounds for all threads of the block whose ctaid is in %ti."""

    def __init__(self, mod, f: ir.Function, sites: dict, slice_indices: list):
        super().__init__(mod, f)
        self.sites = sites
        self.slice = slice_indices

    def entry_window_loads(self, origin) -> tuple:
        """Read the window straight from the context (this function has no %kw slots)."""
        values = []
        for field, index in window_fields(origin, self.mod.windows):
            k = f"%bw{len(self.prologue)}"
            self.prologue += [f"  {k}.f = getelementptr i64, ptr %ctx, i64 {L.CTX[field]}",
                              f"  {k}.t = load ptr, ptr {k}.f",
                              f"  {k}.p = getelementptr i64, ptr {k}.t, i64 {index}",
                              f"  {k} = load i64, ptr {k}.p"]
            values.append(k)
        return tuple(values)

    def corner(self, tids: list) -> dict:
        """Run the slice as the thread ``tids`` (i32 values); site -> its address (i64)."""
        for k, v in enumerate(tids):
            p = self.tmp(); self.emit(f"{p} = getelementptr i32, ptr %ti, i64 {k}")
            self.emit(f"store i32 {v}, ptr {p}")
        for i in self.slice:
            self.inst_index = i
            self.instruction(self.f.instructions[i])
        out = {}
        for i, site in self.sites.items():
            rty = self.regs.get(site.base, "i64")
            v = self.conv(self.read(ir.Reg(site.base), rty, None), rty, "i64")
            out[i] = self.op2("add", "i64", v, str(site.offset))
        return out

    def op2(self, op: str, ty: str, a: str, b: str) -> str:
        t = self.tmp(); self.emit(f"{t} = {op} {ty} {a}, {b}")
        return t

    def render(self) -> str:
        self.declare()
        self.inst_index = -1
        self.live_across = None
        for name in self.f.labels:
            self.labels[name] = f"L{len(self.labels)}"
        self.block("start")
        extents = [self.trunc32(self.ctx(f"block_{a}")) for a in "xyz"]
        first = self.corner(["0", "0", "0"])
        last = self.corner([self.op2("sub", "i32", e, "1") for e in extents])
        wide = [self.conv(e, "i32", "i64") for e in extents]
        ok = "true"
        for i, site in self.sites.items():
            span = "0"
            for step, e in zip(site.steps, wide):
                if step:
                    span = self.op2("add", "i64", span,
                                    self.op2("mul", "i64", self.op2("sub", "i64", e, "1"), str(step)))
            diff = self.op2("sub", "i64", last[i], first[i])
            ok = self.op2("and", "i1", ok, self.op2("icmp eq", "i64", diff, span))
            wbase, _, limit = self.known_window(ir.Reg(site.base))
            room = self.op2("add", "i64", limit, "1")
            bound = self.tmp(); self.emit(f"{bound} = call i64 @llvm.usub.sat.i64(i64 {room}, i64 {site.size})")
            for a in (first[i], last[i]):
                rel = self.op2("sub", "i64", a, wbase)
                ok = self.op2("and", "i1", ok, self.op2("icmp ult", "i64", rel, bound))
            # every step is a multiple of the alignment (trusted_sites): the first thread's
            # address decides for all
            mask = L.alignment(site.size) - 1
            if mask and not self.aligned_by_construction(ir.Addr(ir.Reg(site.base), site.offset),
                                                         site.size):
                low = self.op2("and", "i64", first[i], str(mask))
                ok = self.op2("and", "i1", ok, self.op2("icmp eq", "i64", low, "0"))
        self.emit(f"ret i1 {ok}")
        self.block("fault")        # (the slice cannot fault: integer arithmetic only)
        self.emit("ret i1 false")
        head = ["define internal i1 @block_trusted(ptr %ctx, ptr %ti) {", "entry:"]
        for name, ty in self.regs.items():
            head.append(f"  {self.reg_ptr(name)} = alloca {ty}")
        head.append("  %cc = alloca i32")
        head.append("  store i32 0, ptr %cc")
        head.append("  %ts = alloca [2 x i64], align 8")
        head += self.prologue
        head.append("  br label %start")
        return "\n".join(head + self.lines + ["}"])
