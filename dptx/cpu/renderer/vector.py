"""Warp-vectorized translation of a kernel body (DESIGN.md point 4, the fast form).

The 32 threads of a warp run as the lanes of LLVM vectors: every PTX register is a
``<32 x T>`` value (or, when the divergence analysis finds it warp-uniform, one scalar
computed once), the frequent instructions become vector instructions, and the rest run
through the exact per-thread code of ``function.Function`` in a loop over the active lanes.
Control flow is executed with masks: the blocks run in an order where loops are contiguous
(``vector_plan``), each block with the lanes that branched to it (kept in the warp's frame),
and a loop repeats while lanes wait at its header. Warp operations (shfl, vote) are vector
permutations and reductions; a barrier suspends the whole warp, whose live registers are
kept in its frame, and the scheduler in ``runtime_ir.scheduler_warps`` resumes the warps of a
block once all have arrived. Memory accesses whose lanes are in bounds use a contiguous,
per-half or gathered vector access; any lane out of bounds sends the access through the
per-lane path, which reports the fault exactly as the per-thread executor does.

Two things keep tiled kernels close to native code. Fast regions: between barriers, accesses
whose lane pattern ``vector_plan.lane_steps`` can guess are emitted a second time as plain
half-warp vector accesses, chosen by one check of the pattern and bounds at the region's
start (remembered in the frame until the register changes). Frame saves: registers kept
across barriers are written to the frame where they are made (when that runs at most once
per barrier), so a barrier in a loop saves only what changed.


The lowerings of each instruction family sit in ``lowering/`` beside the per-thread ones;
the memory machinery is ``vector_memory``."""
from __future__ import annotations

from ...ptx import ir
from ...ptx.cfg import EXIT
from .runtime_ir import CTX_ARG
from .vector_plan import lane_steps
from .lowering.common import (LLTY, ST_ERR, unsupported, W, F_WARP, F_DEAD, F_NOSYNC, F_TID,
                              F_MASKS, SLOT, INTS, FLOATS, UNIFORM_SPECIALS, vt, sfx, iota)
from .function import Function
from .lowering import (arithmetic, atomics, bits, compare, conversion, float_math, matrix,
                       memory, sleep, sync)
from .lowering.registry import Lowerings
from .vector_memory import VectorMemoryAccess
from .vector_rebuild import RebuiltAddresses
from .vector_loop import FullWarpLoops
from .lowering.memory import MemoryVectorLowering
from .lowering.arithmetic import ArithmeticVectorLowering
from .lowering.bits import BitsVectorLowering
from .lowering.compare import CompareVectorLowering
from .lowering.conversion import ConversionVectorLowering
from .lowering.sync import SyncVectorLowering
from .lowering.matrix import MatrixVectorLowering
from .lowering.float_math import FloatMathVectorLowering
from .lowering.atomics import AtomicVectorLowering
from .lowering.sleep import SleepVectorLowering


# Warp bodies of up to this many lines of IR are always inlined into the scheduler's loop
# (the size above which executor.quick_tier_wanted also starts with a quick build)
ALWAYS_INLINE_LINES = 12000


class VectorFunction(VectorMemoryAccess, RebuiltAddresses, FullWarpLoops, MemoryVectorLowering, ArithmeticVectorLowering,
                     BitsVectorLowering, CompareVectorLowering, ConversionVectorLowering,
                     SyncVectorLowering, MatrixVectorLowering, FloatMathVectorLowering,
                     AtomicVectorLowering, SleepVectorLowering,
                     Function):
    """The kernel body for one warp: ``@thread(ctx, ti, null, 0, frame, kw)`` returns 0 when
    the warp is done, ST_BAR at a barrier (to be called again) or ST_ERR on a fault.

    The warp-vectorized form installs the warp-vectorized lowerings of the families that have
    them; an instruction none lowers runs through ``Function.LOWERINGS`` lane by lane."""

    VECTOR_LOWERINGS = Lowerings(memory.registry, arithmetic.registry, bits.registry,
                                 compare.registry, conversion.registry, sync.registry,
                                 matrix.registry, float_math.registry, atomics.registry,
                                 sleep.registry, vector=True)

    def __init__(self, mod, f, plan):
        super().__init__(mod, f)
        self.plan = plan
        self.lane = None            # lane index SSA value inside a per-lane loop
        self.uniform = set()        # registers held as one scalar for the whole warp
        self.block_mask = None      # the current block's lane mask (SSA), while emitting it
        self.block_index = None
        self.waiting_live = set()   # registers live where lanes may wait (blocks with no barrier)
        nblocks = len(plan.cfg.blocks)
        self.header_bytes = (F_MASKS + 4 * nblocks + SLOT - 1) // SLOT * SLOT
        self.spill = {}             # register -> frame slot index
        self.full_warp_move = None  # bytes the access being emitted moves per full-warp
                                    # loop iteration, when known (vector_loop)
        self.pattern_cache = {}     # (base register, space, size) -> access pattern SSA value
        self.range_cache = {}       # (base register, space, size) -> (all in bounds, lo, hi)
        self.decls = set()
        self._mov_constants = None  # register -> the immediate its sole mov gives it (sync.py)
        self.lane_step = {}         # register -> step between neighbouring lanes (vector_plan)
        self.dirty_at = {}          # barrier index -> registers it must save (plan_saves)
        self.write_through = set()  # instructions whose kept destinations also go to the frame
        self.region_table = {}      # (start, stop) -> fast regions (plan_regions)
        self.flag_offsets = {}      # tracked register -> byte offset of its pattern flag
        self.flag_rule = {}         # (instruction index, register) -> how it sets the flag
        self.flags_base = 0
        self.fast = None            # in the fast copy of a region: instruction index -> access
        self.full_warp = False      # emitting a full-warp loop (vector_loop): every lane runs
        self.full_warp_loops = {}   # block index -> vector_loop.FullWarpLoop

    # -- small vector helpers ----------------------------------------------------------------
    def declare_intrinsic(self, line: str):
        self.decls.add(line)

    def splat(self, value: str, ty: str) -> str:
        a = self.tmp(); self.emit(f"{a} = insertelement {vt(ty)} poison, {ty} {value}, i32 0")
        b = self.tmp(); self.emit(f"{b} = shufflevector {vt(ty)} {a}, {vt(ty)} poison, <{W} x i32> zeroinitializer")
        return b

    def bits(self, vec: str) -> str:
        t = self.tmp(); self.emit(f"{t} = bitcast {vt('i1')} {vec} to i32"); return t

    def vmask(self, bits: str) -> str:
        t = self.tmp(); self.emit(f"{t} = bitcast i32 {bits} to {vt('i1')}"); return t

    def op2(self, op: str, ty: str, a: str, b: str) -> str:
        t = self.tmp(); self.emit(f"{t} = {op} {ty} {a}, {b}"); return t

    def frame_ptr(self, offset: int) -> str:
        p = self.tmp(); self.emit(f"{p} = getelementptr i8, ptr %frame, i64 {offset}"); return p

    def frame_load(self, offset: int, ty: str = "i32") -> str:
        p = self.frame_ptr(offset)
        v = self.tmp(); self.emit(f"{v} = load {ty}, ptr {p}, align 4"); return v

    def frame_store(self, offset: int, value: str, ty: str = "i32"):
        p = self.frame_ptr(offset)
        self.emit(f"store {ty} {value}, ptr {p}, align 4")

    def cur(self) -> str:
        t = self.tmp(); self.emit(f"{t} = load i32, ptr %curmask"); return t

    def vcall(self, ret: str, name: str, args: list) -> str:
        arg_types = [a.rsplit(" ", 1)[0] for a in args]
        self.declare_intrinsic(f"declare {ret} @{name}({', '.join(arg_types)})")
        if ret == "void":
            self.emit(f"call void @{name}({', '.join(args)})")
            return ""
        t = self.tmp(); self.emit(f"{t} = call {ret} @{name}({', '.join(args)})")
        return t

    # -- registers as vectors ----------------------------------------------------------------
    def vconv(self, value: str, src: str, dst: str, signed=False) -> str:
        return self.conv(value, src, dst, signed, lanes=W)

    def vreadable(self, op) -> bool:
        op = self.scalar_operand(op)
        if isinstance(op, ir.Reg):
            if op.name in self.regs:
                return not op.component
            if op.name in ("%tid", "%laneid", "%warpid") or op.name in UNIFORM_SPECIALS:
                return True
            return False
        return isinstance(op, (ir.Imm, ir.Sym))

    @staticmethod
    def scalar_operand(op):
        """``{ %r1 }``, a one-element brace list (Triton's scalar loads and stores), is
        ``%r1``; other operands unchanged."""
        return op.items[0] if isinstance(op, ir.Vec) and len(op.items) == 1 else op

    def vread(self, op, ty: str, inst, signed=False) -> str:
        op = self.scalar_operand(op)
        if isinstance(op, ir.Reg) and op.name in self.uniform:
            return self.splat(self.scalar_read(op, ty, signed), ty)
        if isinstance(op, ir.Reg) and op.name in self.regs:
            rty = self.regs[op.name]
            t = self.tmp(); self.emit(f"{t} = load {vt(rty)}, ptr {self.reg_ptr(op.name)}")
            v = self.vconv(t, rty, ty, signed)
            if op.negated:
                n = self.tmp(); self.emit(f"{n} = xor {vt('i1')} {v}, splat (i1 true)"); v = n
            return v
        if isinstance(op, ir.Reg) and op.name == "%tid":
            k = "xyz".index(op.component)
            t = self.tmp(); self.emit(f"{t} = load {vt('i32')}, ptr {self.frame_ptr(F_TID + 4 * W * k)}, align 4")
            return self.vconv(t, "i32", ty, signed)
        if isinstance(op, ir.Reg) and op.name == "%laneid":
            v = self.tmp(); self.emit(f"{v} = trunc <{W} x i64> {iota()} to {vt('i32')}")
            return self.vconv(v, "i32", ty, signed)
        if isinstance(op, ir.Reg) and op.name == "%warpid":
            return self.vconv(self.splat(self.frame_load(F_WARP), "i32"), "i32", ty, signed)
        scalar = Function.read(self, op, ty, inst, signed)
        return self.splat(scalar, ty)

    def vwrite(self, op, value: str, ty: str, em: str, inst, signed=False):
        op = self.scalar_operand(op)
        if isinstance(op, ir.Reg) and op.name == "_":
            return
        if not isinstance(op, ir.Reg) or op.name not in self.regs:
            raise unsupported(inst, f"destination {op}")
        rty = self.regs[op.name]
        pending = self.flag_before_write(op.name, inst) if op.name not in self.uniform else None
        self.forget_patterns(op.name)
        if op.name in self.uniform:
            # every active lane holds the same value (vote, activemask...): keep one
            first = self.tmp(); self.emit(f"{first} = call i32 @llvm.cttz.i32(i32 {em}, i1 true)")
            one = self.tmp(); self.emit(f"{one} = extractelement {vt(ty)} {value}, i32 {first}")
            scalar = self.conv(one, ty, rty, signed)
            self.emit(f"store {rty} {scalar}, ptr {self.reg_ptr(op.name)}")
            self.save_written(op.name, scalar, rty)
            return
        v = self.vconv(value, ty, rty, signed)
        if (self.full_warp and em == "-1") or (
                em == self.block_mask and self.block_index not in self.plan.divergent_blocks
                and op.name not in self.waiting_live):
            # every live lane runs this block (the others exited or went where this register
            # is dead; or every lane runs a full-warp loop): no lane's old value is needed
            self.emit(f"store {vt(rty)} {v}, ptr {self.reg_ptr(op.name)}")
            self.save_written(op.name, v, vt(rty))
            self.flag_after_write(op.name, pending, em)
            return
        old = self.tmp(); self.emit(f"{old} = load {vt(rty)}, ptr {self.reg_ptr(op.name)}")
        m = self.vmask(em)
        new = self.tmp(); self.emit(f"{new} = select {vt('i1')} {m}, {vt(rty)} {v}, {vt(rty)} {old}")
        self.emit(f"store {vt(rty)} {new}, ptr {self.reg_ptr(op.name)}")
        self.save_written(op.name, new, vt(rty))
        self.flag_after_write(op.name, pending, em)

    def forget_patterns(self, name: str):
        """``name`` is written here: what was learnt about its value no longer holds."""
        self.clear_flags([name])
        for cache in (self.pattern_cache, self.range_cache):
            for key in [k for k in cache if k[0] == name]:
                del cache[key]

    # -- scalar access for the per-lane path ---------------------------------------------------
    def scalar_read(self, op, ty: str, signed=False) -> str:
        rty = self.regs[op.name]
        t = self.tmp(); self.emit(f"{t} = load {rty}, ptr {self.reg_ptr(op.name)}")
        v = self.conv(t, rty, ty, signed)
        if op.negated:
            n = self.tmp(); self.emit(f"{n} = xor i1 {v}, true"); v = n
        return v

    def read(self, op, ty: str, inst, signed=False) -> str:
        op = self.scalar_operand(op)
        if isinstance(op, ir.Reg) and op.name in self.uniform and not op.component:
            return self.scalar_read(op, ty, signed)
        if self.lane is not None and isinstance(op, ir.Reg) and op.name in self.regs:
            if op.component:
                raise unsupported(inst, f"vector register component {op}")
            rty = self.regs[op.name]
            vec = self.tmp(); self.emit(f"{vec} = load {vt(rty)}, ptr {self.reg_ptr(op.name)}")
            t = self.tmp(); self.emit(f"{t} = extractelement {vt(rty)} {vec}, i32 {self.lane}")
            v = self.conv(t, rty, ty, signed)
            if op.negated:
                n = self.tmp(); self.emit(f"{n} = xor i1 {v}, true"); v = n
            return v
        return super().read(op, ty, inst, signed)

    def write(self, op, value: str, ty: str, inst, signed=False):
        op = self.scalar_operand(op)
        if isinstance(op, ir.Reg) and op.name == "_":
            return
        if isinstance(op, ir.Reg) and op.name in self.uniform:
            rty = self.regs[op.name]
            self.forget_patterns(op.name)
            scalar = self.conv(value, ty, rty, signed)
            self.emit(f"store {rty} {scalar}, ptr {self.reg_ptr(op.name)}")
            self.save_written(op.name, scalar, rty)
            return
        if self.lane is None:
            raise unsupported(inst, "scalar write of a divergent register outside a lane loop")
        if not isinstance(op, ir.Reg) or op.name not in self.regs:
            raise unsupported(inst, f"destination {op}")
        rty = self.regs[op.name]
        self.forget_patterns(op.name)
        v = self.conv(value, ty, rty, signed)
        vec = self.tmp(); self.emit(f"{vec} = load {vt(rty)}, ptr {self.reg_ptr(op.name)}")
        n = self.tmp(); self.emit(f"{n} = insertelement {vt(rty)} {vec}, {rty} {v}, i32 {self.lane}")
        self.emit(f"store {vt(rty)} {n}, ptr {self.reg_ptr(op.name)}")
        self.save_written(op.name, n, vt(rty))

    def uniform_instruction(self, inst):
        """A warp-uniform instruction, run once as the first active lane (whose thread a
        fault report names)."""
        first = self.tmp(); self.emit(f"{first} = call i32 @llvm.cttz.i32(i32 {self.cur()}, i1 true)")
        self.set_thread_ids(first)
        self.lane = first
        try:
            Function.instruction(self, inst)
        finally:
            self.lane = None

    def set_thread_ids(self, lane: str):
        for k, index in ((0, 0), (1, 1), (2, 2), (3, 6)):   # tid.x/y/z and linear tid into %ti
            p = self.tmp(); self.emit(f"{p} = getelementptr i8, ptr %frame, i64 {F_TID + 4 * W * k}")
            q = self.tmp(); self.emit(f"{q} = getelementptr i32, ptr {p}, i32 {lane}")
            v = self.tmp(); self.emit(f"{v} = load i32, ptr {q}")
            d = self.tmp(); self.emit(f"{d} = getelementptr i32, ptr %ti, i64 {index}")
            self.emit(f"store i32 {v}, ptr {d}")

    def lane_loop(self, inst, em: str, part=None):
        """Run ``inst`` through the per-thread translation for each lane in ``em`` (or
        ``part()``, one lane's part of it: see ``MatrixVectorLowering``)."""
        handler = self.LOWERINGS.get(inst.opcode)
        if handler is None:
            raise unsupported(inst)
        pre, head, body, latch, done = (self.label(h) for h in ("llp", "llh", "llb", "lll", "lle"))
        self.emit(f"br label %{pre}")
        self.block(pre)
        self.emit(f"br label %{head}")
        self.block(head)
        lane = self.tmp(); nxt = self.tmp()
        self.emit(f"{lane} = phi i32 [0, %{pre}], [{nxt}, %{latch}]")
        sh = self.op2("lshr", "i32", em, lane)
        bit = self.tmp(); self.emit(f"{bit} = trunc i32 {sh} to i1")
        self.emit(f"br i1 {bit}, label %{body}, label %{latch}")
        self.block(body)
        self.set_thread_ids(lane)
        self.lane = lane
        try:
            if part is None:
                handler(self, inst)
            else:
                part()
        finally:
            self.lane = None
        self.emit(f"br label %{latch}")
        self.block(latch)
        self.emit(f"{nxt} = add i32 {lane}, 1")
        end = self.tmp(); self.emit(f"{end} = icmp eq i32 {nxt}, {W}")
        self.emit(f"br i1 {end}, label %{done}, label %{head}")
        self.block(done)

    # -- instructions --------------------------------------------------------------------------
    def effective_mask(self, inst) -> str:
        if inst.guard is None and self.block_mask is not None:
            return self.block_mask
        m = self.cur()
        if inst.guard is None:
            return m
        g = self.bits(self.vread(inst.guard, "i1", inst))
        return self.op2("and", "i32", m, g)

    SCALAR_UNSAFE = {"vote", "activemask", "shfl", "bar", "barrier", "atom", "red", "match",
                     "redux", "elect", "call", "ret", "exit", "bra", "st"}

    def writes(self, inst) -> set:
        out = set()
        for k, o in enumerate(inst.operands[:len(inst.destinations)]):
            if isinstance(o, ir.Reg):
                out.add(o.name)
            elif isinstance(o, ir.Pair):
                out |= {o.first.name, o.second.name}
            elif isinstance(o, ir.Vec):
                out |= {x.name for x in o.items if isinstance(x, ir.Reg)}
        return out

    def vinstruction(self, inst):
        dests = self.writes(inst)
        if dests and dests <= self.uniform and inst.opcode not in self.SCALAR_UNSAFE \
                and (inst.guard is None or inst.guard.name in self.uniform):
            # the same value in every lane: computed once, by the per-thread translation
            self.uniform_instruction(inst)
            return
        em = self.effective_mask(inst)
        handler = self.VECTOR_LOWERINGS.get(inst.opcode)
        if handler is not None and handler(self, inst, em) is not False:
            return
        self.lane_loop(inst, em)

    @staticmethod
    def mods(inst) -> set:
        """Modifiers other than the types."""
        return set(inst.modifiers) - set(inst.types)

    def simple(self, inst, allowed=()) -> bool:
        return self.mods(inst) <= set(allowed)

    def all_readable(self, ops) -> bool:
        return all(self.vreadable(o) for o in ops)

    def binary(self, inst, em, op: str, ty: str):
        if not self.all_readable(inst.operands[1:3]):
            return False
        a = self.vread(inst.operands[1], ty, inst)
        b = self.vread(inst.operands[2], ty, inst)
        self.vwrite(inst.operands[0], self.op2(op, vt(ty), a, b), ty, em, inst)

    def arith(self, inst, em, int_op: str, float_op: str):
        if len(inst.types) != 1:
            return False        # packed .u16x2 and the like: lane by lane
        t = self.itype(inst)
        if t in FLOATS and self.simple(inst, ("rn",)) and float_op:
            return self.binary(inst, em, float_op, LLTY[t])
        if t in INTS and self.simple(inst, ("lo",) if int_op == "mul" else ()) and int_op:
            return self.binary(inst, em, int_op, LLTY[t])
        return False

    def current_label(self) -> str:
        for line in reversed(self.lines):
            if line.endswith(":") and not line.startswith(" "):
                return line[:-1]
        return "entry"

    @staticmethod
    def upper() -> str:
        return "<" + ", ".join(f"i1 {'true' if i >= W // 2 else 'false'}" for i in range(W)) + ">"

    def half_masks(self, mask: str) -> tuple:
        h = W // 2
        lo = self.tmp(); self.emit(f"{lo} = shufflevector {vt('i1')} {mask}, {vt('i1')} poison, <{h} x i32> <" + ", ".join(f"i32 {i}" for i in range(h)) + ">")
        hi = self.tmp(); self.emit(f"{hi} = shufflevector {vt('i1')} {mask}, {vt('i1')} poison, <{h} x i32> <" + ", ".join(f"i32 {i + h}" for i in range(h)) + ">")
        return lo, hi

    def dispatch(self, code: str, cases: list, default: str):
        """Branch on a pattern code with compares (predictable, unlike a jump table)."""
        for value, label in cases:
            no = self.label("pn")
            hit = self.op2("icmp eq", "i32", code, str(value))
            self.emit(f"br i1 {hit}, label %{label}, label %{no}")
            self.block(no)
        self.emit(f"br label %{default}")

    def vector_load(self, hp, rel, em, ty, code, anchors) -> str:
        mask = self.vmask(em)
        h = W // 2
        hty = f"<{h} x {ty}>"
        r0, ha, hb, ra, rb = anchors
        l32, lh, lu, lg, lj = (self.label(x) for x in ("l32", "lh", "lu", "lg", "lj"))
        self.dispatch(code, [(self.P_CONSECUTIVE, l32), (self.P_HALVES, lh), (self.P_HALF_UNIFORM, lu)], lg)
        results = []
        self.block(l32)
        p = self.tmp(); self.emit(f"{p} = getelementptr i8, ptr {hp}, i64 {r0}")
        results.append((self.vcall(vt(ty), f"llvm.masked.load.v{W}{sfx(ty)}.p0",
                                   [f"ptr {p}", "i32 1", f"{vt('i1')} {mask}", f"{vt(ty)} poison"]), l32))
        self.emit(f"br label %{lj}")
        self.block(lh)
        lo_m, hi_m = self.half_masks(mask)
        pa = self.tmp(); self.emit(f"{pa} = getelementptr i8, ptr {hp}, i64 {ha}")
        pb = self.tmp(); self.emit(f"{pb} = getelementptr i8, ptr {hp}, i64 {hb}")
        va = self.vcall(hty, f"llvm.masked.load.v{h}{sfx(ty)}.p0", [f"ptr {pa}", "i32 1", f"<{h} x i1> {lo_m}", f"{hty} poison"])
        vb = self.vcall(hty, f"llvm.masked.load.v{h}{sfx(ty)}.p0", [f"ptr {pb}", "i32 1", f"<{h} x i1> {hi_m}", f"{hty} poison"])
        v2 = self.tmp(); self.emit(f"{v2} = shufflevector {hty} {va}, {hty} {vb}, <{W} x i32> <" + ", ".join(f"i32 {i}" for i in range(W)) + ">")
        results.append((v2, lh))
        self.emit(f"br label %{lj}")
        self.block(lu)
        qa = self.tmp(); self.emit(f"{qa} = getelementptr i8, ptr {hp}, i64 {ra}")
        qb = self.tmp(); self.emit(f"{qb} = getelementptr i8, ptr {hp}, i64 {rb}")
        sa = self.tmp(); self.emit(f"{sa} = load {ty}, ptr {qa}, align 1")
        sb = self.tmp(); self.emit(f"{sb} = load {ty}, ptr {qb}, align 1")
        v3 = self.tmp(); self.emit(f"{v3} = select {vt('i1')} {self.upper()}, {vt(ty)} {self.splat(sb, ty)}, {vt(ty)} {self.splat(sa, ty)}")
        results.append((v3, lu))
        self.emit(f"br label %{lj}")
        self.block(lg)
        ptrs = self.tmp(); self.emit(f"{ptrs} = getelementptr i8, ptr {hp}, {vt('i64')} {rel()}")
        results.append((self.vcall(vt(ty), f"llvm.masked.gather.v{W}{sfx(ty)}.v{W}p0",
                                   [f"{vt('ptr')} {ptrs}", "i32 1", f"{vt('i1')} {mask}", f"{vt(ty)} poison"]), lg))
        self.emit(f"br label %{lj}")
        self.block(lj)
        out = self.tmp()
        self.emit(f"{out} = phi {vt(ty)} " + ", ".join(f"[{v}, %{b}]" for v, b in results))
        return out

    def vector_store(self, hp, rel, em, ty, code, value, anchors):
        mask = self.vmask(em)
        h = W // 2
        hty = f"<{h} x {ty}>"
        r0, ha, hb, ra, rb = anchors
        s32, sh, sg, sj = (self.label(x) for x in ("s32", "sh", "sg", "sj"))
        self.dispatch(code, [(self.P_CONSECUTIVE, s32), (self.P_HALVES, sh)], sg)
        self.block(s32)
        p = self.tmp(); self.emit(f"{p} = getelementptr i8, ptr {hp}, i64 {r0}")
        self.vcall("void", f"llvm.masked.store.v{W}{sfx(ty)}.p0",
                   [f"{vt(ty)} {value}", f"ptr {p}", "i32 1", f"{vt('i1')} {mask}"])
        self.emit(f"br label %{sj}")
        self.block(sh)
        lo_m, hi_m = self.half_masks(mask)
        idx = lambda k: "<" + ", ".join(f"i32 {i + k}" for i in range(h)) + ">"  # noqa: E731
        va = self.tmp(); self.emit(f"{va} = shufflevector {vt(ty)} {value}, {vt(ty)} poison, <{h} x i32> {idx(0)}")
        vb = self.tmp(); self.emit(f"{vb} = shufflevector {vt(ty)} {value}, {vt(ty)} poison, <{h} x i32> {idx(h)}")
        pa = self.tmp(); self.emit(f"{pa} = getelementptr i8, ptr {hp}, i64 {ha}")
        pb = self.tmp(); self.emit(f"{pb} = getelementptr i8, ptr {hp}, i64 {hb}")
        self.vcall("void", f"llvm.masked.store.v{h}{sfx(ty)}.p0", [f"{hty} {va}", f"ptr {pa}", "i32 1", f"<{h} x i1> {lo_m}"])
        self.vcall("void", f"llvm.masked.store.v{h}{sfx(ty)}.p0", [f"{hty} {vb}", f"ptr {pb}", "i32 1", f"<{h} x i1> {hi_m}"])
        self.emit(f"br label %{sj}")
        self.block(sg)
        ptrs = self.tmp(); self.emit(f"{ptrs} = getelementptr i8, ptr {hp}, {vt('i64')} {rel()}")
        self.vcall("void", f"llvm.masked.scatter.v{W}{sfx(ty)}.v{W}p0",
                   [f"{vt(ty)} {value}", f"{vt('ptr')} {ptrs}", "i32 1", f"{vt('i1')} {mask}"])
        self.emit(f"br label %{sj}")
        self.block(sj)

    def plan_saves(self):
        """Where registers kept across barriers are saved in the warp's frame. A definition
        outside loops, or in a loop that has a barrier anyway, writes the frame too (once
        per pass, like the barrier would); the others (in loops with no barrier, which may
        run many times between two barriers) mark the register dirty, and a barrier saves
        only the kept registers that may be dirty there. A loop with barriers (a tiled
        kernel) then saves each value once when it is made, not at every barrier."""
        cfg, insts, plan = self.plan.cfg, self.f.instructions, self.plan
        barriers = {i for i, inst in enumerate(insts)
                    if inst.opcode in ("bar", "barrier") and "warp" not in inst.modifiers}
        kept = {i: set(self.spill_set(i)) for i in barriers}
        for i in sorted(barriers):
            for name in self.spill_set(i):
                self.spill.setdefault(name, len(self.spill))
        barrier_blocks = {cfg.block_of(i) for i in barriers}
        loops = plan.loops or {}
        self.write_through = set()
        for b in plan.order:
            around = [body for body in loops.values() if b in body]
            if not around or (min(around, key=len) & barrier_blocks):
                blk = cfg.blocks[b]
                self.write_through.update(range(blk.start, blk.end))

        def gen(i):
            return frozenset() if i in self.write_through else self.inst_defs[i]

        # registers read before any definition on some path start dirty: their frame slot
        # holds another block's value
        entry = frozenset(self.live_across[0]) if insts else frozenset()
        dirty_in = {b.index: None for b in cfg.blocks}
        dirty_in[plan.order[0]] = entry
        self.dirty_at = {}
        changed = True
        while changed:
            changed = False
            for b in plan.order:
                state = dirty_in[b]
                if state is None:
                    continue
                blk = cfg.blocks[b]
                for i in range(blk.start, blk.end):
                    if i in barriers:
                        self.dirty_at[i] = state
                        state = state - kept[i]
                    state = state | gen(i)
                for succ in cfg.successors(b):
                    if succ < 0:
                        continue
                    old = dirty_in[succ]
                    new = state if old is None else old | state
                    if new != old:
                        dirty_in[succ] = frozenset(new)
                        changed = True

    def save_written(self, name: str, value: str, ty: str):
        """Write-through of a kept register defined here (plan_saves)."""
        if self.inst_index not in self.write_through or name not in self.spill:
            return
        off = self.header_bytes + SLOT * self.spill[name]
        self.emit(f"store {ty} {value}, ptr {self.frame_ptr(off)}, align 4")

    def spill_set(self, index: int) -> list:
        """Registers a barrier must keep: live across it, or live where waiting lanes (in
        blocks with no barrier ahead) will continue."""
        keep = set(self.live_across[index])
        for b in self.plan.nosync:
            blk = self.plan.cfg.blocks[b]
            if blk.start < blk.end:
                keep |= self.live_across[blk.start]
        return [n for n in self.regs if n in keep]

    # -- control flow --------------------------------------------------------------------------
    def send(self, target, lanes: str):
        """Lanes ``lanes`` continue at block ``target`` (EXIT: they are done)."""
        if target == EXIT:
            self.frame_store(F_DEAD, self.op2("or", "i32", self.frame_load(F_DEAD), lanes))
            return
        off = F_MASKS + 4 * target
        self.frame_store(off, self.op2("or", "i32", self.frame_load(off), lanes))
        if target in self.plan.nosync:
            self.frame_store(F_NOSYNC, self.op2("or", "i32", self.frame_load(F_NOSYNC), lanes))

    def terminator(self, blk, inst):
        cfg = self.plan.cfg
        fall = blk.index + 1 if blk.index + 1 < len(cfg.blocks) else EXIT
        cur = self.cur()
        if inst is None:
            self.send(fall, cur)
            return
        op = inst.opcode
        if op == "bra":
            target = self.plan.label_block[inst.operands[0].name]
        else:
            target = EXIT
        if inst.guard is None:
            self.send(target, cur)
            return
        taken = self.effective_mask(inst)
        self.send(target, taken)
        rest = self.op2("and", "i32", cur, self.op2("xor", "i32", taken, "-1"))
        self.send(fall, rest)

    # -- the function as a whole -------------------------------------------------------------
    def render(self) -> str:
        self.declare()
        # warp-uniform registers are scalars: cheaper arithmetic and far fewer vector registers
        self.uniform = {n for n in self.regs if n not in self.plan.divergent}
        self.lane_step = lane_steps(self.f, self.plan.divergent)
        self.compute_liveness()
        self.plan_regions()
        self.plan_full_warp_loops()
        self.plan_saves()
        plan, cfg, insts = self.plan, self.plan.cfg, self.f.instructions
        for b in plan.nosync:
            blk = cfg.blocks[b]
            if blk.start < blk.end:
                self.waiting_live |= self.live_across[blk.start]
        self.block("first")
        self.thread_ids()
        names = {b: f"blk{b}" for b in plan.order}
        self.emit(f"br label %{names[plan.order[0]]}")
        for pos, b in enumerate(plan.order):
            blk = cfg.blocks[b]
            nxt = names[plan.order[pos + 1]] if pos + 1 < len(plan.order) else "finish"
            self.block(names[b])
            m = self.frame_load(F_MASKS + 4 * b)
            self.frame_store(F_MASKS + 4 * b, "0")
            anyl = self.op2("icmp ne", "i32", m, "0")
            body, skip = f"body{b}", f"next{b}"
            self.emit(f"br i1 {anyl}, label %{body}, label %{skip}")
            self.block(body)
            self.pattern_cache, self.range_cache = {}, {}
            self.emit(f"store i32 {m}, ptr %curmask")
            self.block_mask, self.block_index = m, b
            if b in self.full_warp_loops:
                general = self.label("general")
                failed = self.emit_full_warp_loop(b, blk, m, general, skip)
                self.block(general)
                m = self.tmp(); self.emit(f"{m} = phi i32 [{self.block_mask}, %{body}], [-1, %{failed}]")
                self.emit(f"store i32 {m}, ptr %curmask")
                self.block_mask = m
            last = insts[blk.end - 1] if blk.end > blk.start else None
            is_term = last is not None and last.opcode in ("bra", "ret", "exit")
            self.emit_range(blk.start, blk.end - (1 if is_term else 0))
            self.inst_index = blk.end - 1
            self.terminator(blk, last if is_term else None)
            self.block_mask = None
            self.emit(f"br label %{skip}")
            self.block(skip)
            for header in plan.loop_ends.get(b, []):
                mh = self.frame_load(F_MASKS + 4 * header)
                again = self.op2("icmp ne", "i32", mh, "0")
                cont = self.label("cont")
                self.branch_back(again, names[header], cont)     # polls the stop request
                self.block(cont)
            self.emit(f"br label %{nxt}")
        self.block("finish")
        self.emit("ret i32 0")
        self.block("fault")
        self.emit(f"ret i32 {ST_ERR}")

        # One call site (the warp scheduler's loop). Left to LLVM, a body past its inlining
        # threshold stays a function: every run of a warp then pays a call and the set-up of
        # a stack frame for all the vector registers (10 KiB on a tiled matmul: 12% of its
        # time). Bodies too large for that to matter pay for inlining in compile time
        # (a 44k-line bitonic sort: +35%), and LLVM decides.
        inline = " alwaysinline" if len(self.lines) <= ALWAYS_INLINE_LINES else ""
        sig = (f"define internal i32 @thread(ptr {CTX_ARG}, ptr %ti, ptr %lbase, i64 %lsp, "
               f"ptr noalias %frame, ptr %kw){inline}")
        polls = self.stop_poll_blocks()
        head = [sig + " {", "entry:"]
        for name, ty in self.regs.items():
            rt = ty if name in self.uniform else vt(ty)
            head.append(f"  {self.reg_ptr(name)} = alloca {rt}")
            head.append(f"  store {rt} {'zeroinitializer' if rt != ty else ('false' if ty == 'i1' else ('0.0' if ty in ('float', 'double') else '0'))}, ptr {self.reg_ptr(name)}")
        if self.full_warp_loops:
            # the lane-pattern flags, while a full-warp loop runs (LLVM keeps them in registers)
            for name in self.flag_offsets:
                head.append(f"  {self.loop_flag_ptr(name)} = alloca i32")
                head.append(f"  store i32 0, ptr {self.loop_flag_ptr(name)}")
        head.append("  %curmask = alloca i32")
        head.append(f"  %shbuf = alloca [{W} x i32], align 64")
        head.append(f"  %vtmp = alloca [{W} x i64], align 64")
        head.append("  %cc = alloca i32")
        head.append("  %ts = alloca [2 x i64], align 8")
        head += self.prologue
        head.append("  %resume = load i32, ptr %frame")
        cases = " ".join(f"i32 {k}, label %resume{k}" for k in range(1, len(self.resume_blocks) + 1))
        head.append(f"  switch i32 %resume, label %first [{cases}]")
        tail = []
        for k, (reload_lines, target) in enumerate(self.resume_blocks, 1):
            tail.append(f"resume{k}:")
            tail += reload_lines
            tail.append(f"  br label %{target}")
        self.frame_bytes = self.header_bytes + SLOT * max(len(self.spill), 1)
        return "\n".join(head + self.lines + tail + polls + ["}"])

    def thread_ids(self):
        """First run of the warp in a block: each lane's thread index (x, y, z, linear) into
        the frame, and the lanes that exist. A block of more than one dimension reads x, y, z
        from the launch's table (``address_space.thread_id_table``): LLVM has no vector
        integer division, and dividing in double precision cost a tiled matmul 3%."""
        i32 = vt("i32")
        warp = self.frame_load(F_WARP)
        base = self.splat(self.op2("mul", "i32", warp, str(W)), "i32")
        lane = self.tmp(); self.emit(f"{lane} = trunc <{W} x i64> {iota()} to {i32}")
        lt = self.op2("add", i32, base, lane)
        bx = self.trunc32(self.ctx("block_x"))
        by = self.trunc32(self.ctx("block_y"))
        bz = self.trunc32(self.ctx("block_z"))
        # a one-dimensional block (the usual case) needs no table
        flat = self.op2("icmp eq", "i32", self.op2("mul", "i32", by, bz), "1")
        one, many, join = self.label("tid1"), self.label("tidn"), self.label("tidj")
        self.emit(f"br i1 {flat}, label %{one}, label %{many}")
        self.block(one)
        for k, v in enumerate((lt, "zeroinitializer", "zeroinitializer", lt)):
            self.emit(f"store {i32} {v}, ptr {self.frame_ptr(F_TID + 4 * W * k)}, align 4")
        self.emit(f"br label %{join}")
        self.block(many)
        table = self.ctx_ptr("thread_ids")
        warp64 = self.tmp(); self.emit(f"{warp64} = zext i32 {warp} to i64")
        row = self.op2("mul", "i64", warp64, str(3 * W))
        for k in range(3):
            p = self.tmp(); self.emit(f"{p} = getelementptr i32, ptr {table}, i64 {self.op2('add', 'i64', row, str(k * W))}")
            v = self.tmp(); self.emit(f"{v} = load {i32}, ptr {p}, align 4")
            self.emit(f"store {i32} {v}, ptr {self.frame_ptr(F_TID + 4 * W * k)}, align 4")
        self.emit(f"store {i32} {lt}, ptr {self.frame_ptr(F_TID + 4 * W * 3)}, align 4")
        self.emit(f"br label %{join}")
        self.block(join)
        nthr = self.op2("mul", "i32", self.op2("mul", "i32", bx, by), bz)
        exists = self.bits(self.op2("icmp ult", i32, lt, self.splat(nthr, "i32")))
        self.frame_store(F_DEAD, self.op2("xor", "i32", exists, "-1"))
        self.frame_store(F_NOSYNC, "0")
        self.frame_store(F_MASKS + 4 * self.plan.order[0], exists)
        # the frame served this warp in the previous block: nothing checked there holds
        for offset in self.flag_offsets.values():
            self.frame_store(self.flags_base + offset, "0")
