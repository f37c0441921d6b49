"""Full-warp loops of the warp-vectorized form (mixed into ``vector.VectorFunction``).

The grid-stride loop of CUB, Thrust and most library code compiles to one block that
branches back to itself, with all 32 lanes in it for all iterations but the last. The
general form runs every iteration with lane masks: each register write merged with the
lanes' old values, each fast region checked and split into a fast and a general copy, the
lanes that continue sent back through the warp's frame. A full-warp loop is a third copy of
such a block for iterations that every lane runs:

- one check per iteration, before anything is written: the address computations of the
  iteration (its backward slice from the accesses' base registers: pure arithmetic on the
  iteration's inputs) run first, each access's lanes are checked to have their guessed
  pattern and to lie in their buffer, and the registers the slice wrote are put back;
- then the body, every register write a plain vector store (every lane runs it), every
  access a plain half-warp vector access; LLVM merges the slice's computations with the
  body's, so the check costs a few compares;
- while every lane takes the back edge the loop stays here; when some lanes leave, the
  masks go to the frame and the general form takes over, as it does when a check fails
  (it then redoes the iteration, with a fault reported exactly as ever).

Only blocks whose instructions cannot fault or touch memory other than through such
accesses qualify (``FULL_WARP_PURE``). Registers the block writes lose their lane-pattern
flags when the loop is entered (unknown is always safe), so the loop keeps none."""
from __future__ import annotations

from ...ptx import ir
from .lowering.common import SLOT, vt
from .vector_plan import FULL_WARP_PURE


class FullWarpLoop:
    __slots__ = ("accesses", "slice", "slice_writes", "writes", "moves")

    def __init__(self, accesses, slice_, slice_writes, writes, moves):
        self.accesses = accesses          # instruction index -> ((base, space, size, step), offset)
        self.slice = slice_               # instruction indices the accesses' addresses need
        self.slice_writes = slice_writes  # registers those write (put back after the check)
        self.writes = writes              # registers the block writes
        self.moves = moves                # access index -> bytes its address moves per
                                          # iteration, when a constant of the code


def iteration_moves(insts) -> dict:
    """register -> how much it changes from one iteration of a loop block (``insts``, its
    back edge excluded) to the next, where the code fixes it: counters stepped by
    immediates (``k += 128``) and what is computed from them by adds, multiplies by
    immediates and widenings; registers the block does not write move by 0. A counter
    stepped by a register (a grid-stride loop's ``i += gridDim.x * blockDim.x``) is
    unknown, and so is all that depends on it."""
    defs: dict = {}
    written = set()             # every register written, through pairs and vectors too
    for inst in insts:
        for d in inst.destinations:
            parts = (d.first, d.second) if isinstance(d, ir.Pair) else \
                d.items if isinstance(d, ir.Vec) else (d,)
            written |= {r.name for r in parts if isinstance(r, ir.Reg)}
        d = inst.operands[0] if inst.destinations else None
        if isinstance(d, ir.Reg):
            defs.setdefault(d.name, []).append(inst)
    for name in written - set(defs):
        defs[name] = [None]     # written only as part of a pair or vector: unknown

    def self_step(inst, name):
        """k when ``inst`` is ``name = name + k`` (or ``- k``) for an immediate k."""
        if inst is None:
            return None
        srcs = inst.operands[1:]
        if inst.opcode in ("add", "sub") and inst.guard is None and len(srcs) == 2 \
                and isinstance(srcs[0], ir.Reg) and srcs[0].name == name \
                and isinstance(srcs[1], ir.Imm) and isinstance(srcs[1].value, int):
            return srcs[1].value if inst.opcode == "add" else -srcs[1].value
        return None
    moves, unknown = {}, set()
    for name, ds in defs.items():       # counters: every definition steps itself by a constant
        ks = [self_step(inst, name) for inst in ds]
        if None not in ks:
            moves[name] = sum(ks)
        elif None in ds or any(isinstance(o, ir.Reg) and o.name == name
                               for inst in ds for o in inst.operands[1:]):
            unknown.add(name)           # carried from iteration to iteration otherwise
    steps = set(moves) | unknown

    def move(op):
        if isinstance(op, ir.Imm):
            return 0
        if not isinstance(op, ir.Reg) or op.negated or op.component:
            return None
        if op.name in unknown:
            return None
        return moves.get(op.name, 0 if op.name not in written else None)
    for inst in insts:          # what is computed from them, in order
        d = inst.operands[0] if inst.destinations else None
        if not isinstance(d, ir.Reg) or d.name not in written or d.name in steps:
            continue
        srcs, op = inst.operands[1:], inst.opcode
        m = [move(o) for o in srcs]
        imm = [o.value if isinstance(o, ir.Imm) and isinstance(o.value, int) else None
               for o in srcs]
        value = None
        if inst.guard is not None or any(x in inst.modifiers for x in ("hi", "cc", "sat")):
            value = None
        elif op in ("mov", "cvt", "cvta") and len(srcs) == 1:
            value = m[0]
        elif op in ("add", "sub") and len(srcs) == 2 and None not in m:
            value = m[0] + m[1] if op == "add" else m[0] - m[1]
        elif op == "mul" and len(srcs) == 2:
            if m[0] is not None and imm[1] is not None:
                value = m[0] * imm[1]
            elif m[1] is not None and imm[0] is not None:
                value = m[1] * imm[0]
        elif op == "shl" and len(srcs) == 2 and m[0] is not None and imm[1] is not None \
                and 0 <= imm[1] < 64:
            value = m[0] << imm[1]
        if value is None or d.name in moves and moves[d.name] != value:
            unknown.add(d.name)
            moves.pop(d.name, None)
        else:
            moves[d.name] = value
    return moves


class FullWarpLoops:
    def plan_full_warp_loops(self):
        """Find the blocks that get a full-warp loop, and give each a word in the warp's
        frame header (zeroed per block) that a failed check sets: a loop whose lanes do not
        have the guessed pattern (a stride of two elements) then stays in the general form
        for the rest of the block instead of checking again at every iteration."""
        self.full_warp_loops = {}
        for b in self.plan.order:
            spec = self.full_warp_loop_spec(b)
            if spec is not None:
                self.full_warp_loops[b] = spec
        self.fw_failed_base = self.flags_base + 4 * len(self.flag_offsets)
        self.fw_failed = {b: self.fw_failed_base + 4 * k for k, b in enumerate(self.full_warp_loops)}
        end = self.fw_failed_base + 4 * len(self.full_warp_loops)
        self.header_bytes = max(self.header_bytes, (end + SLOT - 1) // SLOT * SLOT)

    def full_warp_loop_spec(self, b: int):
        """A ``FullWarpLoop`` when block ``b`` branches back to itself, holds at least one
        access, and every access has a guessed lane pattern in a known buffer, with an
        address computed by pure instructions of the block (or coming in); else None."""
        blk = self.plan.cfg.blocks[b]
        insts = self.f.instructions
        if blk.end - blk.start < 2:
            return None
        last = insts[blk.end - 1]
        if last.opcode != "bra" or last.guard is None \
                or self.plan.label_block.get(last.operands[0].name) != b:
            return None
        accesses, writes = {}, set()
        for i in range(blk.start, blk.end - 1):
            inst = insts[i]
            if inst.opcode in ("ld", "ldu", "st"):
                cand = self.fast_candidate(i)
                if cand is None:
                    return None
                accesses[i] = cand
            elif inst.opcode not in FULL_WARP_PURE or "cc" in inst.modifiers:
                return None
            writes |= self.writes(inst)
        if not accesses:
            return None
        chosen = set()

        def need(name: str, before: int) -> bool:
            """The definitions of ``name`` that reach instruction ``before`` within the
            block go into the slice (with what they read); False when one is not pure."""
            for j in range(before - 1, blk.start - 1, -1):
                if name not in self.inst_defs[j]:
                    continue
                if j in chosen:
                    return True
                if insts[j].opcode not in FULL_WARP_PURE:
                    return False
                chosen.add(j)
                if not all(need(src, j) for src in sorted(self.inst_uses[j])):
                    return False
                # a guarded definition may leave the older value: that one is needed too
                return insts[j].guard is None or need(name, j)
            return True
        for i, (key, _) in accesses.items():
            if not need(key[0], i):
                return None
        slice_writes = set()
        for j in chosen:
            slice_writes |= self.inst_defs[j]
        moved = iteration_moves(insts[blk.start:blk.end - 1])
        moves = {i: moved[key[0]] for i, (key, _) in accesses.items() if key[0] in moved}
        return FullWarpLoop(accesses, sorted(chosen), sorted(slice_writes), writes, moves)

    # -- emission ------------------------------------------------------------------------------
    def emit_full_warp_loop(self, b: int, blk, mask: str, general: str, after: str) -> str:
        """Emitted at the start of block ``b``'s body, whose lanes are ``mask``: when every
        lane is there, run the full-warp loop. Returns the label (``general``'s predecessor
        besides the body) from which the general form is entered with every lane."""
        spec = self.full_warp_loops[b]
        insts = self.f.instructions
        last = insts[blk.end - 1]
        enter, head, body, fail, leave = (self.label(h) for h in ("fwe", "fwh", "fwb", "fwf", "fwl"))
        full = self.op2("icmp eq", "i32", mask, "-1")
        failed = self.op2("icmp ne", "i32", self.frame_load(self.fw_failed[b]), "0")
        full = self.op2("and", "i1", full, self.op2("xor", "i1", failed, "true"))
        self.emit(f"br i1 {full}, label %{enter}, label %{general}")
        self.block(enter)
        self.move_flags(into_loop=True)
        self.emit("store i32 -1, ptr %curmask")
        self.emit(f"br label %{head}")
        saved_mask, saved_index = self.block_mask, self.block_index
        self.block_mask, self.full_warp = "-1", True
        try:
            # the check: the address slice, then every access's pattern and bounds
            self.block(head)
            self.pattern_cache, self.range_cache = {}, {}
            # registers the iteration writes before any read hold nothing the next needs:
            # zero them so that LLVM does not carry (and spill) last iteration's vectors
            for name in sorted(spec.writes - self.live_in_block[b]):
                ty = self.reg_type(name)
                zero = "zeroinitializer" if ty.startswith("<") else \
                    ("false" if ty == "i1" else "0.0" if ty in ("float", "double") else "0")
                self.emit(f"store {ty} {zero}, ptr {self.reg_ptr(name)}")
            snapshot = {}
            for name in spec.slice_writes:
                snapshot[name] = self.tmp()
                self.emit(f"{snapshot[name]} = load {self.reg_type(name)}, ptr {self.reg_ptr(name)}")
            flags = {}
            for name in spec.slice_writes:
                if name in self.flag_offsets:
                    flags[name] = self.tmp()
                    self.emit(f"{flags[name]} = load i32, ptr {self.flag_ptr(name)}")
            ok = "true"
            slice_ = set(spec.slice)
            for i in range(blk.start, blk.end - 1):
                self.inst_index = i
                if i in slice_:
                    self.vinstruction(insts[i])
                elif i in spec.accesses:
                    ok = self.op2("and", "i1", ok, self.full_warp_access_ok(*spec.accesses[i]))
            for name, value in snapshot.items():
                self.emit(f"store {self.reg_type(name)} {value}, ptr {self.reg_ptr(name)}")
            for name, value in flags.items():
                self.emit(f"store i32 {value}, ptr {self.flag_ptr(name)}")
            self.emit(f"br i1 {ok}, label %{body}, label %{fail}, !prof !1")
            # the iteration, every lane, every access plain
            self.block(body)
            self.pattern_cache, self.range_cache = {}, {}
            for i in range(blk.start, blk.end - 1):
                self.inst_index = i
                if i in spec.accesses:
                    key, _ = spec.accesses[i]
                    self.full_warp_move = spec.moves.get(i)
                    self.fast_memory(insts[i], "-1", insts[i].opcode != "st",
                                     self.full_warp_anchors(key))
                else:
                    self.vinstruction(insts[i])
            self.inst_index = blk.end - 1
            taken = self.effective_mask(last)
            again = self.op2("icmp eq", "i32", taken, "-1")
            self.branch_back(again, head, leave)
            # some lanes leave: the general form's masks, as its terminator would set them
            self.block(leave)
            self.terminator(blk, last)
            self.move_flags(into_loop=False)
            self.emit(f"br label %{after}")
            self.block(fail)
            self.move_flags(into_loop=False)
            self.frame_store(self.fw_failed[b], "1")
            self.emit(f"br label %{general}")
        finally:
            self.block_mask, self.block_index, self.full_warp = saved_mask, saved_index, False
        self.pattern_cache, self.range_cache = {}, {}
        return fail

    def move_flags(self, into_loop: bool):
        """The lane-pattern flags go from the warp's frame into the loop's copies (which
        LLVM keeps in registers, carried from one iteration to the next by the same rules as
        in the frame), and back when the loop is left."""
        for name, offset in self.flag_offsets.items():
            frame = self.frame_ptr(self.flags_base + offset)
            src, dst = (frame, self.loop_flag_ptr(name)) if into_loop else (self.loop_flag_ptr(name), frame)
            v = self.tmp(); self.emit(f"{v} = load i32, ptr {src}")
            self.emit(f"store i32 {v}, ptr {dst}")

    def reg_type(self, name: str) -> str:
        rty = self.regs[name]
        return rty if name in self.uniform else vt(rty)

    def full_warp_anchors(self, key):
        """(host, lane-0 offset, lane-16 offset, step) in the buffer, as ``fast_memory``
        takes them, from the base register as it is here."""
        name, space, _, step = key
        wbase, host, _ = self.access_window(name, space)
        r0, r16 = self.lane_anchors(name, wbase)
        return host, r0, r16, step

    def full_warp_access_ok(self, key, offset: int) -> str:
        """i1: every lane of the access has its lane pattern, is naturally aligned, and both
        half-warps' spans lie in the buffer (the checks of ``region_check``)."""
        name, space, size, step = key
        wbase, _, limit = self.access_window(name, space)
        anchors = self.lane_anchors(name, wbase)
        ok = self.known_pattern(name)
        ok = self.op2("and", "i1", ok, self.anchors_aligned(name, anchors, wbase, {offset}, size))
        return self.op2("and", "i1", ok, self.span_in_bounds(name, anchors, wbase, offset,
                                                             offset + size, step, limit))
