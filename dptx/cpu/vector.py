"""Warp-vectorized translation of a kernel body (DESIGN.md point 4, the fast form).

The 32 threads of a warp run as the lanes of LLVM vectors: every PTX register is a
``<32 x T>`` value (or, when the divergence analysis finds it warp-uniform, one scalar
computed once), the frequent instructions become vector instructions, and the rest run
through the exact per-thread code of ``codegen.Function`` in a loop over the active lanes.
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
"""
from __future__ import annotations

from ..ptx import ir
from ..ptx.cfg import EXIT
from . import address_space as L
from .codegen import BITS, LLTY, ST_ERR, Function, unsupported
from .vector_plan import lane_steps
from .runtime_ir import CTX_ARG

W = 32
ST_BAR = 1
# Frame of a warp (bytes): scalars, then lane thread ids, block masks and register slots.
F_RESUME, F_WARP, F_CURMASK, F_DEAD, F_NOSYNC = 0, 8, 12, 16, 20
F_TID = 64                     # tid.x, tid.y, tid.z, linear tid: <32 x i32> each
F_MASKS = F_TID + 4 * 4 * W    # one i32 lane mask per basic block
SLOT = 8 * W                   # bytes per register slot

INTS = {"b8", "u8", "s8", "b16", "u16", "s16", "b32", "u32", "s32", "b64", "u64", "s64"}
FLOATS = {"f32", "f64"}
_UNIFORM_SPECIALS = {"%ntid", "%nctaid", "%ctaid", "%nwarpid", "%smid", "%gridid", "%nsmid",
                     "%dynamic_smem_size", "%total_smem_size"}


def vt(ty: str) -> str:
    return f"<{W} x {ty}>"


def sfx(ty: str) -> str:
    return {"float": "f32", "double": "f64"}.get(ty, ty)


def iota(scale: int = 1, modulo: int = W) -> str:
    return "<" + ", ".join(f"i64 {(i % modulo) * scale}" for i in range(W)) + ">"


class VectorFunction(Function):
    """The kernel body for one warp: ``@thread(ctx, ti, null, 0, frame, kw)`` returns 0 when
    the warp is done, ST_BAR at a barrier (to be called again) or ST_ERR on a fault."""

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
        self.pattern_cache = {}     # (base register, space, size) -> access pattern SSA value
        self.range_cache = {}       # (base register, space, size) -> (all in bounds, lo, hi)
        self.decls = set()
        self.lane_step = {}         # register -> step between neighbouring lanes (vector_plan)
        self.dirty_at = {}          # barrier index -> registers it must save (plan_saves)
        self.write_through = set()  # instructions whose kept destinations also go to the frame
        self.region_table = {}      # (start, stop) -> fast regions (plan_regions)
        self.flag_offsets = {}      # tracked register -> byte offset of its pattern flag
        self.flag_rule = {}         # (instruction index, register) -> how it sets the flag
        self.flags_base = 0
        self.fast = None            # in the fast copy of a region: instruction index -> access

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
        if isinstance(op, ir.Reg):
            if op.name in self.regs:
                return not op.component
            if op.name in ("%tid", "%laneid", "%warpid") or op.name in _UNIFORM_SPECIALS:
                return True
            return False
        return isinstance(op, (ir.Imm, ir.Sym))

    def vread(self, op, ty: str, inst, signed=False) -> str:
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
        if em == self.block_mask and self.block_index not in self.plan.divergent_blocks \
                and op.name not in self.waiting_live:
            # every live lane runs this block (the others exited or went where this register
            # is dead): no lane's old value is needed
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

    def lane_loop(self, inst, em: str):
        """Run ``inst`` through the per-thread translation for each lane in ``em``."""
        handler = getattr(self, "op_" + inst.opcode, None)
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
            handler(inst)
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
        handler = getattr(self, "v_" + inst.opcode, None)
        if handler is not None and handler(inst, em) is not False:
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

    def v_mov(self, inst, em):
        d, s = inst.operands[0], inst.operands[1]
        t = self.itype(inst)
        if isinstance(d, ir.Vec) or isinstance(s, ir.Vec) or t not in LLTY or not self.vreadable(s):
            return False
        ty = LLTY[t]
        self.vwrite(d, self.vread(s, ty, inst), ty, em, inst)

    def v_cvta(self, inst, em):
        space = next((m for m in inst.modifiers if m in ("global", "shared", "const")), None)
        if space is None or "local" in inst.modifiers or not self.vreadable(inst.operands[1]):
            return False
        ty = self.lt(inst)
        v = self.vconv(self.vread(inst.operands[1], ty, inst), ty, "i64")
        if space == "shared":
            if "to" in inst.modifiers:
                v = self.op2("and", vt("i64"), v, f"splat (i64 {L.OFFSET_MASK})")
            else:
                v = self.op2("or", vt("i64"), v, f"splat (i64 {L.buffer_address(L.SHARED_WINDOW)})")
        self.vwrite(inst.operands[0], self.vconv(v, "i64", ty), ty, em, inst)

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

    def v_add(self, inst, em):
        return self.arith(inst, em, "add", "fadd")

    def v_sub(self, inst, em):
        return self.arith(inst, em, "sub", "fsub")

    def v_and(self, inst, em):
        t = self.itype(inst)
        return self.binary(inst, em, "and", LLTY[t]) if (t in INTS or t == "pred") and self.simple(inst) else False

    def v_or(self, inst, em):
        t = self.itype(inst)
        return self.binary(inst, em, "or", LLTY[t]) if (t in INTS or t == "pred") and self.simple(inst) else False

    def v_xor(self, inst, em):
        t = self.itype(inst)
        return self.binary(inst, em, "xor", LLTY[t]) if (t in INTS or t == "pred") and self.simple(inst) else False

    def v_not(self, inst, em):
        t = self.itype(inst)
        if not ((t in INTS or t == "pred") and self.simple(inst) and self.vreadable(inst.operands[1])):
            return False
        ty = LLTY[t]
        a = self.vread(inst.operands[1], ty, inst)
        one = "true" if ty == "i1" else "-1"
        self.vwrite(inst.operands[0], self.op2("xor", vt(ty), a, f"splat ({ty} {one})"), ty, em, inst)

    def widened(self, inst, ty, signed):
        wide = {"i16": "i32", "i32": "i64"}.get(ty)
        if wide is None:
            return None
        ext = "sext" if signed else "zext"
        out = []
        for o in inst.operands[1:3]:
            v = self.vread(o, ty, inst)
            w = self.tmp(); self.emit(f"{w} = {ext} {vt(ty)} {v} to {vt(wide)}")
            out.append(w)
        return self.op2("mul", vt(wide), out[0], out[1]), wide

    def v_mul(self, inst, em):
        t = self.itype(inst)
        if "wide" in inst.modifiers and t in INTS and self.simple(inst, ("wide",)) \
                and self.all_readable(inst.operands[1:3]):
            r = self.widened(inst, LLTY[t], t.startswith("s"))
            if r is None:
                return False
            self.vwrite(inst.operands[0], r[0], r[1], em, inst)
            return
        return self.arith(inst, em, "mul", "fmul")

    def fma(self, inst, em):
        t = self.itype(inst)
        if t not in FLOATS or not self.simple(inst, ("rn",)) or not self.all_readable(inst.operands[1:4]):
            return False
        ty = LLTY[t]
        a, b, c = (self.vread(o, ty, inst) for o in inst.operands[1:4])
        r = self.vcall(vt(ty), f"llvm.fma.v{W}{sfx(ty)}", [f"{vt(ty)} {a}", f"{vt(ty)} {b}", f"{vt(ty)} {c}"])
        self.vwrite(inst.operands[0], r, ty, em, inst)

    def v_fma(self, inst, em):
        return self.fma(inst, em)

    def v_mad(self, inst, em):
        t = self.itype(inst)
        if t in FLOATS:
            return self.fma(inst, em)
        if t not in INTS or not self.all_readable(inst.operands[1:4]):
            return False
        ty = LLTY[t]
        if self.simple(inst, ("wide",)) and "wide" in inst.modifiers:
            r = self.widened(inst, ty, t.startswith("s"))
            if r is None:
                return False
            p, wide = r
        elif self.simple(inst, ("lo",)):
            a = self.vread(inst.operands[1], ty, inst)
            b = self.vread(inst.operands[2], ty, inst)
            p, wide = self.op2("mul", vt(ty), a, b), ty
        else:
            return False
        c = self.vread(inst.operands[3], wide, inst, t.startswith("s"))
        self.vwrite(inst.operands[0], self.op2("add", vt(wide), p, c), wide, em, inst)

    def v_shl(self, inst, em):
        return self.vshift(inst, em, "shl")

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

    def v_min(self, inst, em):
        return self.vminmax(inst, em, "min")

    def v_max(self, inst, em):
        return self.vminmax(inst, em, "max")

    def vminmax(self, inst, em, which):
        if len(inst.types) != 1:
            return False
        t = self.itype(inst)
        if t not in INTS or t.startswith("b") or not self.simple(inst) or not self.all_readable(inst.operands[1:3]):
            return False
        ty = LLTY[t]
        a, b = (self.vread(o, ty, inst) for o in inst.operands[1:3])
        name = ("s" if t.startswith("s") else "u") + which
        r = self.vcall(vt(ty), f"llvm.{name}.v{W}{ty}", [f"{vt(ty)} {a}", f"{vt(ty)} {b}"])
        self.vwrite(inst.operands[0], r, ty, em, inst)

    def v_neg(self, inst, em):
        return self.sign_op(inst, em, self.fneg, lambda a, ty: self.op2("sub", vt(ty), "zeroinitializer", a))

    def fneg(self, a: str, ty: str) -> str:
        r = self.tmp(); self.emit(f"{r} = fneg {vt(ty)} {a}"); return r

    def v_abs(self, inst, em):
        return self.sign_op(inst, em,
                            lambda a, ty: self.vcall(vt(ty), f"llvm.fabs.v{W}{sfx(ty)}", [f"{vt(ty)} {a}"]),
                            lambda a, ty: self.vcall(vt(ty), f"llvm.abs.v{W}{ty}", [f"{vt(ty)} {a}", "i1 false"]))

    def sign_op(self, inst, em, on_float, on_int):
        """neg/abs: floats (no .ftz) and signed integers."""
        t = self.itype(inst)
        if not self.simple(inst) or not self.vreadable(inst.operands[1]) or \
                not (t in FLOATS or (t in INTS and t.startswith("s"))):
            return False
        ty = LLTY[t]
        a = self.vread(inst.operands[1], ty, inst)
        r = (on_float if t in FLOATS else on_int)(a, ty)
        self.vwrite(inst.operands[0], r, ty, em, inst)

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

    def v_selp(self, inst, em):
        t = self.itype(inst)
        if t not in LLTY or not self.simple(inst) or not self.all_readable(inst.operands[1:4]):
            return False
        ty = LLTY[t]
        a, b = (self.vread(o, ty, inst) for o in inst.operands[1:3])
        c = self.vread(inst.operands[3], "i1", inst)
        r = self.tmp(); self.emit(f"{r} = select {vt('i1')} {c}, {vt(ty)} {a}, {vt(ty)} {b}")
        self.vwrite(inst.operands[0], r, ty, em, inst)

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

    # -- memory --------------------------------------------------------------------------------
    def v_ld(self, inst, em):
        return self.vmemory(inst, em, load=True)

    v_ldu = v_ld

    def v_st(self, inst, em):
        return self.vmemory(inst, em, load=False)

    def vmemory(self, inst, em, load: bool):
        t = self.itype(inst)
        if self._vector(inst) != 1 or t not in INTS | FLOATS:
            return False
        ty, size = LLTY[t], ir.type_size(t)
        space = self.space_of(inst)
        addr = inst.operands[1] if load else inst.operands[0]
        if not isinstance(addr, ir.Addr):
            return False
        if not load and not self.vreadable(inst.operands[1]):
            return False
        base = addr.base
        if self.fast is not None and self.inst_index in self.fast:
            return self.fast_memory(inst, em, load, self.fast[self.inst_index])
        if space == "param":
            if not (load and self.is_kernel_param(addr)):
                return False
            p = self.address(addr, space, size, inst)
            v = self.tmp(); self.emit(f"{v} = load {ty}, ptr {p}, align 1, !invariant.load !0")
            self.vwrite(inst.operands[0], self.splat(v, ty), ty, em, inst, signed=t.startswith("s"))
            return
        if isinstance(base, ir.Reg) and not self.vreadable(base):
            return False
        if space in ("global", "generic", "const"):
            window = self.known_window(base) if base is not None else None
            if window is None:
                return False
        elif space == "shared":
            sp = self.ctx_ptr("shared")
            host = self.tmp(); self.emit(f"{host} = ptrtoint ptr {sp} to i64")
            window = ("0", host, self.ctx("shared_size"))
        else:
            return False
        wbase, host, limit = window

        def lane_offsets() -> str:
            """Emit the lanes' offsets in the buffer (<32 x i64>) here."""
            if isinstance(base, ir.Reg):
                rty = self.regs.get(base.name, "i64")
                av = self.vconv(self.vread(base, rty, inst), rty, "i64")
            elif base is None:
                av = self.splat("0", "i64")
            else:
                av = self.splat(self.conv(*self.symbol_value(base.name, inst), "i64"), "i64")
            if addr.offset:
                av = self.op2("add", vt("i64"), av, f"splat (i64 {addr.offset})")
            return self.op2("sub", vt("i64"), av, self.splat(wbase, "i64"))

        def in_bounds(rel: str) -> str:
            room = self.op2("add", "i64", limit, "1")
            bound = self.tmp(); self.emit(f"{bound} = call i64 @llvm.usub.sat.i64(i64 {room}, i64 {size})")
            ok = self.op2("icmp ult", vt("i64"), rel, self.splat(bound, "i64"))
            return self.op2("icmp eq", "i32", self.op2("and", "i32", self.bits(ok), em), em)

        # The lanes' pattern is that of the base register: accesses through the same register
        # with other immediate offsets (unrolled loops) reuse it, and one bounds check covers
        # their span, while the register and the block's mask stay the same.
        key = (base.name, space, size) if isinstance(base, ir.Reg) and inst.guard is None else None
        cached = self.pattern_cache.get(key)
        rel = None
        if cached is not None:
            code, first_anchors, first_offset = cached
            delta = addr.offset - first_offset   # the same in every lane
            anchors = tuple(self.op2("add", "i64", a, str(delta)) if delta else a for a in first_anchors)
            range_ok = self.range_check(key, None, addr.offset, limit, em)
        else:
            rel = lane_offsets()
            range_ok = self.range_check(key, rel, addr.offset, limit, em) if key else None
            # Lane offsets compared as 32-bit values: exact when the buffer ends below 2**32
            # minus a warp of the widest access (no lane offset can wrap); larger buffers
            # (rare) gather.
            anchors = self.anchors(rel, em, size)
            code = self.classify_hinted(rel, em, size, anchors)
            if space != "shared":
                small = self.op2("icmp ult", "i64", limit, str((1 << 32) - 1024))
                c = self.tmp(); self.emit(f"{c} = select i1 {small}, i32 {code}, i32 {self.P_GATHER}")
                code = c
            if key is not None:
                self.pattern_cache[key] = (code, anchors, addr.offset)
        vfast, vslow, vjoin = self.label("vmf"), self.label("vms"), self.label("vmj")
        if range_ok is not None:
            each = self.label("vme")
            self.emit(f"br i1 {range_ok}, label %{vfast}, label %{each}, !prof !1")
            self.block(each)
        fast = in_bounds(rel if rel is not None else lane_offsets())
        self.emit(f"br i1 {fast}, label %{vfast}, label %{vslow}, !prof !1")
        self.block(vslow)
        # exact per-lane accesses and fault reports, out of line (one helper per kind)
        rel_slow = lane_offsets()
        device = self.op2("add", vt("i64"), rel_slow, self.splat(wbase, "i64"))
        tmp = "%vtmp"          # one buffer in the entry block (an alloca here would grow the stack)
        ity = f"i{8 * size}"
        if not load:
            raw = self.vconv(self.vread(inst.operands[1], ty, inst), ty, ity)
            wide = self.vconv(raw, ity, "i64")
            self.emit(f"store {vt('i64')} {wide}, ptr {tmp}")
        helper = self.slow_access_helper(space, load, size)
        status = self.tmp()
        self.emit(f"{status} = call i32 @{helper}(ptr %ctx, ptr %ti, ptr %frame, ptr {tmp}, "
                  f"{vt('i64')} {device}, i32 {em}, i32 {inst.line})")
        failed = self.op2("icmp ne", "i32", status, "0")
        after = self.label("vmsok")
        self.emit(f"br i1 {failed}, label %fault, label %{after}")
        self.block(after)
        if load:
            wide = self.tmp(); self.emit(f"{wide} = load {vt('i64')}, ptr {tmp}")
            raw = self.vconv(wide, "i64", ity)
            self.vwrite(inst.operands[0], self.vconv(raw, ity, ty), ty, em, inst, signed=t.startswith("s"))
        self.emit(f"br label %{vjoin}")
        self.block(vfast)
        hp = self.tmp(); self.emit(f"{hp} = inttoptr i64 {host} to ptr")
        if load and space != "shared":
            self.stride_prefetch(hp, anchors)
        if load:
            v = self.vector_load(hp, lane_offsets, em, ty, code, anchors)
            self.vwrite(inst.operands[0], v, ty, em, inst, signed=t.startswith("s"))
        else:
            v = self.vread(inst.operands[1], ty, inst)
            self.vector_store(hp, lane_offsets, em, ty, code, v, anchors)
        self.emit(f"br label %{vjoin}")
        self.block(vjoin)

    # -- fast regions ------------------------------------------------------------------------
    # A run of instructions between barriers whose memory accesses go through registers with
    # a known lane step (``vector_plan.lane_steps``) is emitted twice: a fast copy where each
    # such access is one or two plain vector (or scalar) accesses, and the general copy. One
    # check at the start chooses: every lane of the warp runs the block, and each base
    # register really has the guessed pattern and keeps all the region's accesses in bounds.
    REGION_BREAKERS = {"bar", "barrier", "call", "ret", "exit", "bra"}

    def fast_candidate(self, i):
        """((base register, space, size, step), offset) when instruction ``i`` is an access a
        fast region can take, else None."""
        inst = self.f.instructions[i]
        if inst.opcode not in ("ld", "ldu", "st") or inst.guard is not None \
                or self._vector(inst) != 1 or not inst.types:
            return None
        t = self.itype(inst)
        if t not in INTS | FLOATS:
            return None
        load = inst.opcode != "st"
        addr = inst.operands[1] if load else inst.operands[0]
        if not isinstance(addr, ir.Addr) or not isinstance(addr.base, ir.Reg):
            return None
        base = addr.base
        if base.name not in self.regs or base.name in self.uniform or base.component or base.negated:
            return None
        size = ir.type_size(t)
        step = self.lane_step.get(base.name)
        if step not in ((size, 0) if load else (size,)):
            return None
        if not load and not self.vreadable(inst.operands[1]):
            return None
        space = self.space_of(inst)
        if space not in ("shared", "global", "generic", "const"):
            return None
        if space != "shared" and self.known_window(base) is None:
            return None
        return (base.name, space, size, step), addr.offset

    def regions(self, start: int, stop: int) -> list:
        """(first, end, {instruction index: (key, offset)}) of the fast regions in
        [start, stop): a region ends at a barrier (or call), and before an access whose base
        register was written since the region began (the check is made at its start)."""
        out, cur, written = [], None, set()
        for i in range(start, stop):
            inst = self.f.instructions[i]
            if inst.opcode in self.REGION_BREAKERS and "warp" not in inst.modifiers:
                if cur:
                    out.append((cur[0], i, cur[1]))
                cur = None
                continue
            cand = self.fast_candidate(i)
            if cand is not None:
                if cur is not None and cand[0][0] in written:
                    out.append((cur[0], i, cur[1]))
                    cur = None
                if cur is None:
                    cur, written = (i, {}), set()
                cur[1][i] = cand
            if cur is not None:
                written |= self.writes(inst)
        if cur:
            out.append((cur[0], stop, cur[1]))
        return out

    def emit_range(self, start: int, stop: int):
        insts = self.f.instructions
        i = start
        for first, end, accesses in self.region_table.get((start, stop), ()):
            for k in range(i, first):
                self.inst_index = k
                self.vinstruction(insts[k])
            self.inst_index = first
            ok, plan = self.region_check(accesses)
            fast, slow, join = self.label("rfast"), self.label("rslow"), self.label("rjoin")
            self.emit(f"br i1 {ok}, label %{fast}, label %{slow}, !prof !1")
            saved = (dict(self.pattern_cache), dict(self.range_cache))
            for label, mode in ((fast, plan), (slow, None)):
                self.block(label)
                self.pattern_cache, self.range_cache = dict(saved[0]), dict(saved[1])
                self.fast = mode
                try:
                    for k in range(first, end):
                        self.inst_index = k
                        self.vinstruction(insts[k])
                finally:
                    self.fast = None
                self.emit(f"br label %{join}")
            self.block(join)
            # values computed inside either copy do not reach here
            self.pattern_cache, self.range_cache = {}, {}
            i = end
        for k in range(i, stop):
            self.inst_index = k
            self.vinstruction(insts[k])

    def region_groups(self, accesses: dict) -> dict:
        """(base register, space, size, step) -> [lowest offset, end of the highest access]."""
        groups = {}
        for key, offset in accesses.values():
            span = groups.setdefault(key, [offset, offset + key[2]])
            span[0], span[1] = min(span[0], offset), max(span[1], offset + key[2])
        return groups

    def plan_regions(self):
        """Find every block's fast regions before emitting anything, and the registers whose
        lane pattern is tracked at run time: the regions' base registers and what they are
        computed from (``plan_pattern_flags``)."""
        cfg, insts = self.plan.cfg, self.f.instructions
        bases = set()
        for b in self.plan.order:
            blk = cfg.blocks[b]
            last = insts[blk.end - 1] if blk.end > blk.start else None
            stop = blk.end - (1 if last is not None and last.opcode in ("bra", "ret", "exit") else 0)
            found = self.regions(blk.start, stop)
            self.region_table[(blk.start, stop)] = found
            for _, _, accesses in found:
                bases |= {key[0] for key in self.region_groups(accesses)}
        self.plan_pattern_flags(bases)
        nblocks = len(cfg.blocks)
        self.flags_base = F_MASKS + 4 * nblocks
        self.header_bytes = (self.flags_base + 4 * len(self.flag_offsets) + SLOT - 1) // SLOT * SLOT

    # Pattern flags: one i32 per tracked register in the warp's frame, set when all 32 lanes
    # are known to hold ``v[lane 0 or 16] + step * (lane % 16)`` (mod 2**width), ``step``
    # being the register's lane step. A definition either carries its sources' flags over
    # (plus a uniform, times a constant, a widening that does not wrap: the common address
    # arithmetic, a few scalar operations) or checks its result with one vector compare. A
    # loop that adds a uniform stride to an address thus keeps it known at no cost.
    def flag_sources(self, inst, d: str):
        """How definition ``inst`` of tracked register ``d`` sets its flag: ("copy",
        sources), ("widen", source, signed), or ("check",)."""
        if inst.guard is not None or any(m in inst.modifiers for m in ("cc", "hi", "sat")) \
                or not inst.types or self.regs.get(d) not in ("i32", "i64"):
            return ("check",)
        op, srcs = inst.opcode, inst.operands[1:]

        def kind(o):
            if isinstance(o, (ir.Imm, ir.Sym)):
                return "uniform"
            if isinstance(o, ir.Reg) and not o.negated and not o.component:
                if o.name in self.regs and o.name in self.uniform:
                    return "uniform"
                if o.name in self.regs and self.lane_step.get(o.name) is not None \
                        and self.regs[o.name] in ("i32", "i64"):
                    return "tracked"
                if o.name in _UNIFORM_SPECIALS:
                    return "uniform"
            elif isinstance(o, ir.Reg) and o.name in ("%ctaid", "%ntid", "%nctaid"):
                return "uniform"
            return "other"
        kinds = [kind(o) for o in srcs]
        tracked = [o.name for o, k in zip(srcs, kinds) if k == "tracked"]
        if "other" in kinds or not tracked:
            return ("check",)
        # (a tracked destination has a known lane step, so lane_steps saw one of these forms)
        if op in ("mov", "cvta", "add", "sub") \
                or op in ("mul", "shl") and "wide" not in inst.modifiers and len(tracked) == 1:
            return ("copy", tracked)
        if op == "mul" and "wide" in inst.modifiers and len(tracked) == 1:
            return self.widening(tracked[0], inst.types[-1].startswith("s"))
        if op == "cvt" and len(tracked) == 1 and len(inst.types) == 2:
            dst, src_type = inst.types
            if ir.type_size(dst) * 8 > BITS[self.regs[tracked[0]]]:
                return self.widening(tracked[0], src_type.startswith("s"))
            return ("copy", tracked)
        return ("check",)

    def widening(self, src: str, signed: bool):
        if self.lane_step[src] < 0 or BITS[self.regs[src]] != 32:
            return ("check",)
        return ("widen", src, signed)

    def plan_pattern_flags(self, bases: set):
        tracked = {b for b in bases if self.regs.get(b) in ("i32", "i64")}
        defs = {}
        for i, inst in enumerate(self.f.instructions):
            for name in self.inst_defs[i] if self.inst_defs else ():
                defs.setdefault(name, []).append(i)
        todo = list(tracked)
        while todo:
            name = todo.pop()
            for i in defs.get(name, ()):
                rule = self.flag_sources(self.f.instructions[i], name)
                self.flag_rule[(i, name)] = rule
                sources = rule[1] if rule[0] == "copy" else [rule[1]] if rule[0] == "widen" else []
                for src in sources:
                    if src not in tracked:
                        tracked.add(src)
                        todo.append(src)
        for name in sorted(tracked):
            self.flag_offsets[name] = 4 * len(self.flag_offsets)

    def flag_ptr(self, name: str) -> str:
        return self.frame_ptr(self.flags_base + self.flag_offsets[name])

    def clear_flags(self, names):
        for name in names:
            if name in self.flag_offsets:
                self.frame_store(self.flags_base + self.flag_offsets[name], "0")

    def flag_before_write(self, name: str, inst):
        """Emitted before ``inst`` writes tracked register ``name``: the i1 its flag takes if
        the write covers the whole warp, from the sources as they are now; "check" when the
        written value must be checked instead; None when it is simply unknown."""
        if name not in self.flag_offsets:
            return None
        rule = self.flag_rule.get((self.inst_index, name), ("check",))
        if rule[0] == "check":
            return "check"
        if rule[0] == "copy":
            value = "true"
            for src in rule[1]:
                f = self.tmp(); self.emit(f"{f} = load i32, ptr {self.flag_ptr(src)}")
                value = self.op2("and", "i1", value, self.op2("icmp ne", "i32", f, "0"))
            return value
        _, src, signed = rule
        f = self.tmp(); self.emit(f"{f} = load i32, ptr {self.flag_ptr(src)}")
        value = self.op2("icmp ne", "i32", f, "0")
        # the half-warps' values must not wrap around 2**32 between lane 0 and lane 15
        v = self.vread(ir.Reg(src), "i32", inst)
        top = 0x7FFFFFFF if signed else 0xFFFFFFFF
        for lane in (0, W // 2):
            x = self.tmp(); self.emit(f"{x} = extractelement {vt('i32')} {v}, i32 {lane}")
            wide = self.conv(x, "i32", "i64", signed)
            last = self.op2("add", "i64", wide, str(15 * self.lane_step[src]))
            value = self.op2("and", "i1", value, self.op2("icmp sle", "i64", last, str(top)))
        return value

    def flag_after_write(self, name: str, pending, em: str):
        if pending is None:
            return
        p = self.flag_ptr(name)
        if pending == "check":
            good = self.pattern_check(name)
        else:
            full = self.op2("icmp eq", "i32", em, "-1")
            good = self.op2("and", "i1", pending, full)
        g = self.tmp(); self.emit(f"{g} = zext i1 {good} to i32")
        self.emit(f"store i32 {g}, ptr {p}")

    def pattern_check(self, name: str) -> str:
        """i1: every lane of ``name`` holds its half-warp's first value plus its lane step
        times its position in the half (in the register's width)."""
        rty = self.regs[name]
        v = self.vread(ir.Reg(name), rty, None)
        a0 = self.tmp(); self.emit(f"{a0} = extractelement {vt(rty)} {v}, i32 0")
        a16 = self.tmp(); self.emit(f"{a16} = extractelement {vt(rty)} {v}, i32 {W // 2}")
        sel = self.tmp()
        self.emit(f"{sel} = select {vt('i1')} {self.upper()}, {vt(rty)} {self.splat(a16, rty)}, {vt(rty)} {self.splat(a0, rty)}")
        step = self.lane_step[name]
        bits = BITS[rty]
        steps = "<" + ", ".join(f"{rty} {((i % (W // 2)) * step) % (1 << bits)}" for i in range(W)) + ">"
        expected = self.op2("add", vt(rty), sel, steps) if step else sel
        return self.op2("icmp eq", "i32", self.bits(self.op2("icmp eq", vt(rty), v, expected)), "-1")

    def region_check(self, accesses: dict) -> tuple:
        """(i1: the fast copy is safe, {instruction index: (host, lane-0 offset, lane-16
        offset, step)}). Emitted where the region begins."""
        ok = self.op2("icmp eq", "i32", self.block_mask, "-1")
        info = {}
        for key, (lo, hi) in self.region_groups(accesses).items():
            name, space, size, step = key
            if space == "shared":
                sp = self.ctx_ptr("shared")
                host = self.tmp(); self.emit(f"{host} = ptrtoint ptr {sp} to i64")
                wbase, limit = "0", self.ctx("shared_size")
            else:
                wbase, host, limit = self.known_window(ir.Reg(name))
            rty = self.regs[name]
            value = self.vread(ir.Reg(name), rty, None)
            anchors = []
            for lane in (0, W // 2):
                x = self.tmp(); self.emit(f"{x} = extractelement {vt(rty)} {value}, i32 {lane}")
                anchors.append(self.op2("sub", "i64", self.conv(x, rty, "i64"), wbase))
            r0, r16 = anchors
            # the pattern: known from the register's flag, or checked here (and remembered)
            flag = self.tmp(); self.emit(f"{flag} = load i32, ptr {self.flag_ptr(name)}")
            known = self.op2("icmp ne", "i32", flag, "0")
            start = self.current_label()
            check, done = self.label("rchk"), self.label("rdone")
            self.emit(f"br i1 {known}, label %{done}, label %{check}")
            self.block(check)
            good = self.pattern_check(name)
            g32 = self.tmp(); self.emit(f"{g32} = zext i1 {good} to i32")
            self.emit(f"store i32 {g32}, ptr {self.flag_ptr(name)}")
            check_end = self.current_label()
            self.emit(f"br label %{done}")
            self.block(done)
            passed = self.tmp(); self.emit(f"{passed} = phi i1 [true, %{start}], [{good}, %{check_end}]")
            ok = self.op2("and", "i1", ok, passed)
            # bounds of the whole span, from the two anchors (no lane wraps: a 32-bit base
            # that did would end past 2**32)
            for anchor, raw in zip((r0, r16), anchors):
                first = self.op2("add", "i64", anchor, str(lo))
                last = self.op2("add", "i64", anchor, str(hi + 15 * step))
                ordered = self.op2("icmp ule", "i64", first, last)
                inside = self.op2("icmp ule", "i64", last, limit)
                ok = self.op2("and", "i1", ok, self.op2("and", "i1", ordered, inside))
                if BITS.get(rty) == 32:
                    top = self.op2("add", "i64", self.op2("add", "i64", anchor, wbase), str(15 * step))
                    ok = self.op2("and", "i1", ok, self.op2("icmp ule", "i64", top, str(0xFFFFFFFF)))
            for i, (k, _) in accesses.items():
                if k == key:
                    info[i] = (host, r0, r16, step)
        return ok, info

    def fast_memory(self, inst, em, load: bool, info):
        """An access of a fast region: its pattern and bounds were checked at the region's
        start, so it is two plain half-warp vector accesses (step = size) or two scalar
        loads (step 0)."""
        host, r0, r16, step = info
        t = self.itype(inst)
        ty = LLTY[t]
        addr = inst.operands[1] if load else inst.operands[0]
        h = W // 2
        hty = f"<{h} x {ty}>"
        ptrs = []
        for anchor in (r0, r16):
            a = self.op2("add", "i64", self.op2("add", "i64", host, anchor), str(addr.offset))
            p = self.tmp(); self.emit(f"{p} = inttoptr i64 {a} to ptr")
            ptrs.append(p)
        if not load:
            value = self.vread(inst.operands[1], ty, inst)
            for k, p in enumerate(ptrs):
                part = self.tmp()
                self.emit(f"{part} = shufflevector {vt(ty)} {value}, {vt(ty)} poison, <{h} x i32> <"
                          + ", ".join(f"i32 {j + k * h}" for j in range(h)) + ">")
                self.emit(f"store {hty} {part}, ptr {p}, align 1")
            return
        if self.space_of(inst) != "shared":
            hp = self.tmp(); self.emit(f"{hp} = inttoptr i64 {host} to ptr")
            self.stride_prefetch(hp, (None, r0, r16, None, None))
        if step:
            va = self.tmp(); self.emit(f"{va} = load {hty}, ptr {ptrs[0]}, align 1")
            vb = self.tmp(); self.emit(f"{vb} = load {hty}, ptr {ptrs[1]}, align 1")
            v = self.tmp()
            self.emit(f"{v} = shufflevector {hty} {va}, {hty} {vb}, <{W} x i32> <"
                      + ", ".join(f"i32 {j}" for j in range(W)) + ">")
        else:
            sa = self.tmp(); self.emit(f"{sa} = load {ty}, ptr {ptrs[0]}, align 1")
            sb = self.tmp(); self.emit(f"{sb} = load {ty}, ptr {ptrs[1]}, align 1")
            v = self.tmp()
            self.emit(f"{v} = select {vt('i1')} {self.upper()}, {vt(ty)} {self.splat(sb, ty)}, {vt(ty)} {self.splat(sa, ty)}")
        self.vwrite(inst.operands[0], v, ty, em, inst, signed=t.startswith("s"))

    def slow_access_helper(self, space: str, load: bool, size: int) -> str:
        """Name of a function doing one access per active lane through the per-thread address
        translation (@xlate/@xshared), which records a fault with the lane's thread; values
        pass through an [32 x i64] buffer. Kept out of line: it runs only when some lane is
        out of bounds, and inlining it at every access would double the compile time."""
        name = f"vslow.{space}.{'ld' if load else 'st'}.{size}"
        if any(f"@{name}(" in d for d in self.decls):
            return name
        ity = f"i{8 * size}"
        xl = "xshared" if space == "shared" else "xlate"
        if size == 8:
            access = ("  %v = load i64, ptr %hp, align 1\n  store i64 %v, ptr %vp\n" if load else
                      "  %v = load i64, ptr %vp\n  store i64 %v, ptr %hp, align 1\n")
        else:
            access = (f"  %v = load {ity}, ptr %hp, align 1\n  %vw = zext {ity} %v to i64\n  store i64 %vw, ptr %vp\n"
                      if load else
                      f"  %vw = load i64, ptr %vp\n  %v = trunc i64 %vw to {ity}\n  store {ity} %v, ptr %hp, align 1\n")
        tid_copy = "".join(
            f"  %tp{k} = getelementptr i8, ptr %frame, i64 {F_TID + 4 * W * k}\n"
            f"  %tq{k} = getelementptr i32, ptr %tp{k}, i32 %lane\n"
            f"  %tv{k} = load i32, ptr %tq{k}\n"
            f"  %td{k} = getelementptr i32, ptr %ti, i64 {index}\n"
            f"  store i32 %tv{k}, ptr %td{k}\n"
            for k, index in ((0, 0), (1, 1), (2, 2), (3, 6)))
        self.decls.add(
            f"define internal i32 @{name}(ptr %ctx, ptr %ti, ptr %frame, ptr %vals, {vt('i64')} %addrs, i32 %em, i32 %line) noinline cold {{\n"
            f"entry:\n  br label %head\n"
            f"head:\n  %lane = phi i32 [0, %entry], [%next, %latch]\n"
            f"  %sh = lshr i32 %em, %lane\n  %on = trunc i32 %sh to i1\n"
            f"  br i1 %on, label %body, label %latch\n"
            f"body:\n{tid_copy}"
            f"  %a = extractelement {vt('i64')} %addrs, i32 %lane\n"
            f"  %hp = call ptr @{xl}(ptr %ctx, ptr %ti, ptr null, i64 %a, i64 {size}, i32 %line)\n"
            f"  %bad = icmp eq ptr %hp, null\n"
            f"  br i1 %bad, label %fail, label %do\n"
            f"do:\n  %vp = getelementptr i64, ptr %vals, i32 %lane\n{access}  br label %latch\n"
            f"latch:\n  %next = add i32 %lane, 1\n  %done = icmp eq i32 %next, {W}\n"
            f"  br i1 %done, label %exit, label %head\n"
            f"exit:\n  ret i32 0\n"
            f"fail:\n  ret i32 1\n}}")
        return name

    def stride_prefetch(self, hp: str, anchors: tuple):
        """Warps of a block run one after the other, so a warp's global loads miss the cache
        with nothing else in flight. Each load site remembers where the previous warp read;
        this warp prefetches the same distance further on, for the next warp (the usual
        case: warps read rows one tile-row apart). Prefetches never fault."""
        site = self.mod.prefetch_sites
        self.mod.prefetch_sites += 1
        hist = self.ctx_ptr("stride_history")
        slot = self.tmp(); self.emit(f"{slot} = getelementptr i64, ptr {hist}, i64 {site}")
        prev = self.tmp(); self.emit(f"{prev} = load i64, ptr {slot}")
        _, ha, hb, _, _ = anchors
        base = self.tmp(); self.emit(f"{base} = ptrtoint ptr {hp} to i64")
        here = self.op2("add", "i64", base, ha)
        self.emit(f"store i64 {here}, ptr {slot}")
        step = self.op2("sub", "i64", here, prev)
        for anchor in (ha, hb):
            a = self.op2("add", "i64", self.op2("add", "i64", base, anchor), step)
            p = self.tmp(); self.emit(f"{p} = inttoptr i64 {a} to ptr")
            self.emit(f"call void @llvm.prefetch.p0(ptr {p}, i32 0, i32 3, i32 1)")

    def range_check(self, key, rel: str, offset: int, limit: str, em: str):
        """An i1 saying that every access through the base register of ``key`` from here to
        its next definition (or the block's end, or a barrier) is in bounds for all lanes:
        one check of the span of their immediate offsets instead of one per access."""
        if key in self.range_cache:
            ok, lo, hi = self.range_cache[key]
            return ok if lo <= offset and offset + key[2] <= hi else None
        if rel is None:
            return None
        name, space, size = key
        spans = []
        blk = self.plan.cfg.blocks[self.plan.cfg.block_of(self.inst_index)]
        for i in range(self.inst_index, blk.end):
            inst = self.f.instructions[i]
            if inst.opcode in ("ld", "ldu", "st") and self.space_of(inst) == space \
                    and self._vector(inst) == 1 and inst.types:
                a = inst.operands[1] if inst.opcode != "st" else inst.operands[0]
                if isinstance(a, ir.Addr) and isinstance(a.base, ir.Reg) and a.base.name == name \
                        and ir.type_size(self.itype(inst)) == size:
                    spans.append(a.offset)
            writes = set()
            for k, o in enumerate(inst.operands[:len(inst.destinations)]):
                if isinstance(o, ir.Reg):
                    writes.add(o.name)
                elif isinstance(o, (ir.Vec, ir.Pair)):
                    items = o.items if isinstance(o, ir.Vec) else (o.first, o.second)
                    writes |= {x.name for x in items if isinstance(x, ir.Reg)}
            if name in writes or inst.opcode in ("bar", "barrier"):
                break
        if len(spans) < 2:
            return None
        lo, hi = min(spans), max(spans) + size
        i64 = vt("i64")
        first = self.op2("add", i64, rel, f"splat (i64 {lo - offset})")
        last = self.op2("add", i64, rel, f"splat (i64 {hi - offset})")
        ordered = self.op2("icmp ule", i64, first, last)
        inside = self.op2("icmp ule", i64, last, self.splat(limit, "i64"))
        both = self.bits(self.op2("and", vt("i1"), ordered, inside))
        ok = self.op2("icmp eq", "i32", self.op2("and", "i32", both, em), em)
        self.range_cache[key] = (ok, lo, hi)
        return ok

    # Access patterns of the lanes' addresses: consecutive (one vector access), each half-warp
    # consecutive or uniform (2-D blocks 16 threads wide: two accesses), or anything (gather).
    P_CONSECUTIVE, P_HALVES, P_HALF_UNIFORM, P_GATHER = 0, 1, 2, 3

    def reference_lanes(self, em: str) -> tuple:
        """The first active lane, and the first active lane of each half-warp (an idle half
        takes the other half's). Patterns are anchored there: an inactive lane's offset may
        be anything and must never become an address."""
        h = W // 2
        f = self.tmp(); self.emit(f"{f} = call i32 @llvm.cttz.i32(i32 {em}, i1 true)")
        lo = self.op2("and", "i32", em, str((1 << h) - 1))
        hi = self.op2("lshr", "i32", em, str(h))
        clo = self.tmp(); self.emit(f"{clo} = call i32 @llvm.cttz.i32(i32 {lo}, i1 false)")
        chi = self.tmp(); self.emit(f"{chi} = call i32 @llvm.cttz.i32(i32 {hi}, i1 false)")
        chi16 = self.op2("add", "i32", chi, str(h))
        has_lo = self.op2("icmp ne", "i32", lo, "0")
        has_hi = self.op2("icmp ne", "i32", hi, "0")
        fb0 = self.tmp(); self.emit(f"{fb0} = select i1 {has_hi}, i32 {chi16}, i32 {f}")
        fa = self.tmp(); self.emit(f"{fa} = select i1 {has_lo}, i32 {clo}, i32 {fb0}")
        fb = self.tmp(); self.emit(f"{fb} = select i1 {has_hi}, i32 {chi16}, i32 {fa}")
        return f, fa, fb

    def anchors(self, rel: str, em: str, size: int) -> tuple:
        """For this access: the offset lane 0 would have if the lanes were consecutive, the
        same per half-warp, and the offsets of the two half-warp reference lanes. With all
        lanes active (the usual case) these are lanes 0 and 16, read without going through
        memory."""
        full = self.op2("icmp eq", "i32", em, "-1")
        af, ap, aj = self.label("af"), self.label("ap"), self.label("aj")
        self.emit(f"br i1 {full}, label %{af}, label %{ap}")
        self.block(af)
        r0 = self.tmp(); self.emit(f"{r0} = extractelement {vt('i64')} {rel}, i32 0")
        r16 = self.tmp(); self.emit(f"{r16} = extractelement {vt('i64')} {rel}, i32 {W // 2}")
        fast = (r0, r0, r16, r0, r16)
        self.emit(f"br label %{aj}")
        self.block(ap)
        slow = self.anchors_at(rel, self.reference_lanes(em), size)
        slow_end = self.label("ape")
        self.emit(f"br label %{slow_end}")
        self.block(slow_end)
        self.emit(f"br label %{aj}")
        self.block(aj)
        out = []
        for a, b in zip(fast, slow):
            v = self.tmp(); self.emit(f"{v} = phi i64 [{a}, %{af}], [{b}, %{slow_end}]")
            out.append(v)
        return tuple(out)

    def anchors_at(self, rel: str, lanes: tuple, size: int) -> tuple:
        f, fa, fb = lanes
        out = []
        for lane, period in ((f, W), (fa, W // 2), (fb, W // 2)):
            r = self.tmp(); self.emit(f"{r} = extractelement {vt('i64')} {rel}, i32 {lane}")
            pos = self.op2("urem", "i32", lane, str(period)) if period != W else lane
            back = self.op2("mul", "i64", self.conv(pos, "i32", "i64"), str(size))
            out.append((self.op2("sub", "i64", r, back), r))
        (c32, _), (ha, ra), (hb, rb) = out
        return c32, ha, hb, ra, rb

    def pattern_inputs(self, rel: str, anchors: tuple) -> tuple:
        """The lanes' offsets and the anchors as 32-bit values (exact where patterns are
        checked: the caller knows the buffer ends below 2**32)."""
        r = self.tmp(); self.emit(f"{r} = trunc {vt('i64')} {rel} to {vt('i32')}")
        return (r,) + tuple(self.conv(v, "i64", "i32") for v in anchors)

    def per_half(self, a: str, b: str) -> str:
        """<32 x i32>: ``a`` in the lower half-warp, ``b`` in the upper one."""
        v = self.tmp()
        self.emit(f"{v} = select {vt('i1')} {self.upper()}, {vt('i32')} {self.splat(b, 'i32')}, {vt('i32')} {self.splat(a, 'i32')}")
        return v

    def pattern_holds(self, r: str, base: str, expected: str, em: str) -> str:
        """i1: every lane of ``em`` has offset ``base + expected``."""
        diff = self.op2("sub", vt("i32"), r, base)
        same = self.op2("icmp eq", vt("i32"), diff, expected)
        m = self.op2("and", "i32", self.bits(same), em)
        return self.op2("icmp eq", "i32", m, em)

    def classify(self, inputs: tuple, em: str, size: int) -> str:
        """The pattern of the lanes of ``em`` (P_*), as an i32 SSA value."""
        r, c32, ha, hb, ra, rb = inputs
        iota32 = (lambda scale, mod=W: iota(scale, mod).replace("i64", "i32"))
        is32 = self.pattern_holds(r, self.splat(c32, "i32"), iota32(size), em)
        ish = self.pattern_holds(r, self.per_half(ha, hb), iota32(size, W // 2), em)
        isu = self.pattern_holds(r, self.per_half(ra, rb), "zeroinitializer", em)
        code = self.tmp(); self.emit(f"{code} = select i1 {isu}, i32 {self.P_HALF_UNIFORM}, i32 {self.P_GATHER}")
        code2 = self.tmp(); self.emit(f"{code2} = select i1 {ish}, i32 {self.P_HALVES}, i32 {code}")
        code3 = self.tmp(); self.emit(f"{code3} = select i1 {is32}, i32 {self.P_CONSECUTIVE}, i32 {code2}")
        return code3

    def classify_hinted(self, rel: str, em: str, size: int, anchors: tuple) -> str:
        """classify, trying first the pattern this access had last time (a per-site memory
        in the call's scratch): one vector compare instead of three, nearly always right."""
        site = self.mod.prefetch_sites
        self.mod.prefetch_sites += 1
        hist = self.ctx_ptr("stride_history")
        slot = self.tmp(); self.emit(f"{slot} = getelementptr i64, ptr {hist}, i64 {site}")
        hint64 = self.tmp(); self.emit(f"{hint64} = load i64, ptr {slot}")
        hint = self.tmp(); self.emit(f"{hint} = trunc i64 {hint64} to i32")
        inputs = self.pattern_inputs(rel, anchors)
        r, c32, ha, hb, ra, rb = inputs
        i32 = vt("i32")
        is0 = self.op2("icmp eq", "i32", hint, str(self.P_CONSECUTIVE))
        is1 = self.op2("icmp eq", "i32", hint, str(self.P_HALVES))
        lo = self.tmp(); self.emit(f"{lo} = select i1 {is1}, i32 {ha}, i32 {ra}")
        hi = self.tmp(); self.emit(f"{hi} = select i1 {is1}, i32 {hb}, i32 {rb}")
        base = self.tmp(); self.emit(f"{base} = select i1 {is0}, {i32} {self.splat(c32, 'i32')}, {i32} {self.per_half(lo, hi)}")
        e32 = iota(size).replace("i64", "i32")
        eh = iota(size, W // 2).replace("i64", "i32")
        e_h = self.tmp(); self.emit(f"{e_h} = select i1 {is1}, {i32} {eh}, {i32} zeroinitializer")
        expected = self.tmp(); self.emit(f"{expected} = select i1 {is0}, {i32} {e32}, {i32} {e_h}")
        usable = self.op2("icmp ne", "i32", hint, str(self.P_GATHER))
        good = self.op2("and", "i1", self.pattern_holds(r, base, expected, em), usable)
        miss, miss_end, join = self.label("pm"), self.label("pme"), self.label("pj")
        start = self.current_label()
        self.emit(f"br i1 {good}, label %{join}, label %{miss}, !prof !1")
        self.block(miss)
        code = self.classify(inputs, em, size)
        code64 = self.tmp(); self.emit(f"{code64} = zext i32 {code} to i64")
        self.emit(f"store i64 {code64}, ptr {slot}")
        self.emit(f"br label %{miss_end}")
        self.block(miss_end)
        self.emit(f"br label %{join}")
        self.block(join)
        out = self.tmp(); self.emit(f"{out} = phi i32 [{hint}, %{start}], [{code}, %{miss_end}]")
        return out

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

    # -- warp operations and barriers -----------------------------------------------------------
    def v_shfl(self, inst, em):
        mode = next(m for m in inst.modifiers if m in ("up", "down", "bfly", "idx"))
        if not self.all_readable(inst.operands[1:4]):
            raise unsupported(inst, "shfl operand")
        i32 = vt("i32")
        a = self.vread(inst.operands[1], "i32", inst)
        b = self.vread(inst.operands[2], "i32", inst)
        c = self.vread(inst.operands[3], "i32", inst)
        lane = self.tmp(); self.emit(f"{lane} = trunc <{W} x i64> {iota()} to {i32}")
        clamp = self.op2("and", i32, c, "splat (i32 31)")
        seg = self.op2("and", i32, self.op2("lshr", i32, c, "splat (i32 8)"), "splat (i32 31)")
        nseg = self.op2("xor", i32, seg, "splat (i32 -1)")
        minl = self.op2("and", i32, lane, seg)
        maxl = self.op2("or", i32, minl, self.op2("and", i32, clamp, nseg))
        b5 = self.op2("and", i32, b, "splat (i32 31)")
        if mode == "up":
            j = self.op2("sub", i32, lane, b5); ok = self.op2("icmp sge", i32, j, maxl)
        elif mode == "down":
            j = self.op2("add", i32, lane, b5); ok = self.op2("icmp sle", i32, j, maxl)
        elif mode == "bfly":
            j = self.op2("xor", i32, lane, b5); ok = self.op2("icmp sle", i32, j, maxl)
        else:
            j = self.op2("or", i32, minl, self.op2("and", i32, b5, nseg)); ok = self.op2("icmp sle", i32, j, maxl)
        src = self.tmp(); self.emit(f"{src} = select {vt('i1')} {ok}, {i32} {j}, {i32} {lane}")
        self.emit(f"store {i32} {a}, ptr %shbuf")
        ptrs = self.tmp(); self.emit(f"{ptrs} = getelementptr i32, ptr %shbuf, {i32} {src}")
        v = self.vcall(i32, f"llvm.masked.gather.v{W}i32.v{W}p0",
                       [f"{vt('ptr')} {ptrs}", "i32 4", f"{vt('i1')} {self.vmask('-1')}", f"{i32} poison"])
        dst = inst.operands[0]
        if isinstance(dst, ir.Pair):
            self.vwrite(dst.first, v, "i32", em, inst)
            self.vwrite(dst.second, ok, "i1", em, inst)
        else:
            self.vwrite(dst, v, "i32", em, inst)

    def v_vote(self, inst, em):
        mode = next(m for m in inst.modifiers if m in ("all", "any", "uni", "ballot"))
        p = self.bits(self.vread(inst.operands[1], "i1", inst))
        member = self.uniform_value(inst.operands[-1], em, inst)
        act = self.op2("and", "i32", em, member)
        yes = self.op2("and", "i32", p, act)
        if mode == "ballot":
            self.vwrite(inst.operands[0], self.splat(yes, "i32"), "i32", em, inst)
            return
        if mode == "any":
            r = self.op2("icmp ne", "i32", yes, "0")
        elif mode == "all":
            r = self.op2("icmp eq", "i32", yes, act)
        else:
            none = self.op2("icmp eq", "i32", yes, "0")
            every = self.op2("icmp eq", "i32", yes, act)
            r = self.op2("or", "i1", none, every)
        self.vwrite(inst.operands[0], self.splat(r, "i1"), "i1", em, inst)

    def uniform_value(self, op, em: str, inst) -> str:
        """An i32 operand every active lane holds the same value of (a member mask): the
        value in the first active lane."""
        if isinstance(op, ir.Imm):
            return str(op.value & 0xFFFFFFFF)
        v = self.vread(op, "i32", inst)
        first = self.tmp(); self.emit(f"{first} = call i32 @llvm.cttz.i32(i32 {em}, i1 true)")
        r = self.tmp(); self.emit(f"{r} = extractelement {vt('i32')} {v}, i32 {first}")
        return r

    def v_activemask(self, inst, em):
        self.vwrite(inst.operands[0], self.splat(em, "i32"), "i32", em, inst)

    def v_bar(self, inst, em):
        if "warp" in inst.modifiers:
            return   # the lanes of a warp run together: bar.warp.sync has nothing to wait for
        self.barrier(inst, em)

    v_barrier = v_bar

    def v_membar(self, inst, em):
        self.emit("fence seq_cst")

    v_fence = v_membar

    def barrier(self, inst, em):
        """Suspend the warp until every warp of the block arrives. All its live lanes must be
        here (vector_plan proves it); lanes that exited or will never wait again count."""
        gone = self.op2("or", "i32", self.frame_load(F_DEAD), self.frame_load(F_NOSYNC))
        present = self.op2("or", "i32", em, gone)
        whole = self.op2("icmp eq", "i32", present, "-1")
        ok, bad = self.label("barok"), self.label("barbad")
        self.emit(f"br i1 {whole}, label %{ok}, label %{bad}, !prof !1")
        self.block(bad)
        self.emit(f"call void @record_error(ptr %ctx, ptr %ti, i64 {L.ERR_DEADLOCK}, i64 0, i32 {inst.line}, i64 0)")
        self.emit(f"ret i32 {ST_ERR}")
        self.block(ok)
        self.sync_points += 1
        k = self.sync_points
        reload = []
        dirty = self.dirty_at.get(self.inst_index)
        for name in self.spill_set(self.inst_index):
            rty = self.regs[name] if name in self.uniform else vt(self.regs[name])
            slot = self.spill.setdefault(name, len(self.spill))
            off = self.header_bytes + SLOT * slot
            if dirty is None or name in dirty:
                v = self.tmp(); self.emit(f"{v} = load {rty}, ptr {self.reg_ptr(name)}")
                self.emit(f"store {rty} {v}, ptr {self.frame_ptr(off)}, align 4")
            rp, rv = f"%rl{k}.{slot}p", f"%rl{k}.{slot}v"
            reload += [f"  {rp} = getelementptr i8, ptr %frame, i64 {off}",
                       f"  {rv} = load {rty}, ptr {rp}, align 4",
                       f"  store {rty} {rv}, ptr {self.reg_ptr(name)}"]
        self.frame_store(F_CURMASK, self.cur())
        self.frame_store(F_RESUME, str(k))
        self.emit(f"ret i32 {ST_BAR}")
        after = self.label("after")
        self.block(after)
        # values from before the barrier are not on the resume path
        self.pattern_cache, self.range_cache = {}, {}
        self.block_mask = self.cur()
        reload += [f"  %rm{k}p = getelementptr i8, ptr %frame, i64 {F_CURMASK}",
                   f"  %rm{k} = load i32, ptr %rm{k}p, align 4",
                   f"  store i32 %rm{k}, ptr %curmask"]
        self.resume_blocks.append((reload, after))

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
                self.emit(f"br i1 {again}, label %{names[header]}, label %{cont}")
                self.block(cont)
            self.emit(f"br label %{nxt}")
        self.block("finish")
        self.emit("ret i32 0")
        self.block("fault")
        self.emit(f"ret i32 {ST_ERR}")

        sig = (f"define internal i32 @thread(ptr {CTX_ARG}, ptr %ti, ptr %lbase, i64 %lsp, "
               f"ptr noalias %frame, ptr %kw)")
        head = [sig + " {", "entry:"]
        for name, ty in self.regs.items():
            rt = ty if name in self.uniform else vt(ty)
            head.append(f"  {self.reg_ptr(name)} = alloca {rt}")
            head.append(f"  store {rt} {'zeroinitializer' if rt != ty else ('false' if ty == 'i1' else ('0.0' if ty in ('float', 'double') else '0'))}, ptr {self.reg_ptr(name)}")
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
        return "\n".join(head + self.lines + tail + ["}"])

    def thread_ids(self):
        """First run of the warp in a block: each lane's thread index (x, y, z, linear) into
        the frame, and the lanes that exist. Divisions in double precision (exact for these
        magnitudes), since LLVM has no vector integer division."""
        i32, f64 = vt("i32"), vt("double")
        warp = self.frame_load(F_WARP)
        base = self.splat(self.op2("mul", "i32", warp, str(W)), "i32")
        lane = self.tmp(); self.emit(f"{lane} = trunc <{W} x i64> {iota()} to {i32}")
        lt = self.op2("add", i32, base, lane)
        bx = self.trunc32(self.ctx("block_x"))
        by = self.trunc32(self.ctx("block_y"))
        bz = self.trunc32(self.ctx("block_z"))

        def divmod_(v, d):
            vd = self.tmp(); self.emit(f"{vd} = uitofp {i32} {v} to {f64}")
            dd = self.tmp(); self.emit(f"{dd} = uitofp i32 {d} to double")
            q = self.op2("fdiv", f64, vd, self.splat(dd, "double"))
            qf = self.vcall(f64, f"llvm.floor.v{W}f64", [f"{f64} {q}"])
            qi = self.tmp(); self.emit(f"{qi} = fptoui {f64} {qf} to {i32}")
            r = self.op2("sub", i32, v, self.op2("mul", i32, qi, self.splat(d, "i32")))
            return qi, r
        q1, tx = divmod_(lt, bx)
        tz, ty = divmod_(q1, by)
        for k, v in enumerate((tx, ty, tz, lt)):
            self.emit(f"store {i32} {v}, ptr {self.frame_ptr(F_TID + 4 * W * k)}, align 4")
        nthr = self.op2("mul", "i32", self.op2("mul", "i32", bx, by), bz)
        exists = self.bits(self.op2("icmp ult", i32, lt, self.splat(nthr, "i32")))
        self.frame_store(F_DEAD, self.op2("xor", "i32", exists, "-1"))
        self.frame_store(F_NOSYNC, "0")
        self.frame_store(F_MASKS + 4 * self.plan.order[0], exists)
        # the frame served this warp in the previous block: nothing checked there holds
        for offset in self.flag_offsets.values():
            self.frame_store(self.flags_base + offset, "0")
