"""The warp-vectorized form's memory accesses (mixed into ``vector.VectorFunction``).

An access whose lanes are all in bounds runs as one contiguous, per-half or gathered
vector access, chosen by the lane pattern of its address (``classify``); otherwise it goes
through the per-lane path, which reports a fault exactly as the per-thread executor does.
Fast regions: between barriers, accesses whose lane pattern ``vector_plan.lane_steps`` can
guess are emitted a second time as plain half-warp vector accesses, chosen by one check of
the pattern and bounds at the region's start (remembered in the frame until the register
changes); a region of many loads through one register gets a third copy for when both
half-warps' lanes read the same addresses."""
from __future__ import annotations

from ...ptx import ir
from . import address_space as L
from .lowering.common import (LLTY, BITS, W, F_TID, F_MASKS, SLOT, INTS, FLOATS, UNIFORM_SPECIALS,
                              vector_width, vt, iota)


class VectorMemoryAccess:
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
                or vector_width(inst) != 1 or not inst.types:
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
        i = start
        self.range_start = start        # (``rebuilt`` looks back within this range only)
        # sync points emitted before each instruction's first emission here: a warp that
        # stopped at one resumes with only its live registers reloaded
        self.syncs_before = {}
        for first, end, accesses in self.region_table.get((start, stop), ()):
            for k in range(i, first):
                self.emit_instruction(k)
            self.inst_index = first
            ok, plan = self.region_check(accesses)
            fast, slow, join = self.label("rfast"), self.label("rslow"), self.label("rjoin")
            self.emit(f"br i1 {ok}, label %{fast}, label %{slow}, !prof !1")
            saved = (dict(self.pattern_cache), dict(self.range_cache))
            copies = [(fast, plan), (slow, None)]
            key = self.same_halves_key(first, end, accesses)
            if key is not None:
                # both half-warps' lanes at the same addresses (a 16-wide block's rows reading
                # a shared tile's row by tx): a third copy where one load serves both halves
                # (a tiled matmul's inner loop: 64 loads per warp -> 48, 10% of its time)
                self.block(fast)
                _, r0, r16, _ = next(plan[i] for i, (k, _) in accesses.items() if k == key)
                same = self.op2("icmp eq", "i64", r0, r16)
                once, fast = self.label("rsame"), self.label("rfast")
                self.emit(f"br i1 {same}, label %{once}, label %{fast}")
                once_plan = {i: (info[0], info[1], info[1], info[3], True)
                             if accesses[i][0] == key else info for i, info in plan.items()}
                copies = [(once, once_plan), (fast, plan), (slow, None)]
            for label, mode in copies:
                self.block(label)
                self.pattern_cache, self.range_cache = dict(saved[0]), dict(saved[1])
                if mode is None:
                    self.inst_index = first
                    self.refresh_flags({key[0] for key in self.region_groups(accesses)})
                self.fast = mode
                try:
                    for k in range(first, end):
                        self.emit_instruction(k)
                finally:
                    self.fast = None
                self.emit(f"br label %{join}")
            self.block(join)
            # values computed inside either copy do not reach here
            self.pattern_cache, self.range_cache = {}, {}
            i = end
        for k in range(i, stop):
            self.emit_instruction(k)
        self.range_start = None

    def emit_instruction(self, k: int):
        """Instruction ``k`` of the range, noting the sync points emitted before its first
        emission (``vector_rebuild``)."""
        self.inst_index = k
        self.syncs_before.setdefault(k, self.sync_points)
        self.vinstruction(self.f.instructions[k])

    SAME_HALVES_LOADS = 4       # loads through one base register that justify a third copy
    SAME_HALVES_SPAN = 400      # instructions: regions longer than this are not copied again

    def same_halves_key(self, first: int, end: int, accesses: dict):
        """The group (base register key) of the region's most vector loads, when there are enough
        of them in a short enough region to be worth a copy of the region where both
        half-warps' anchors are equal; else None."""
        if end - first > self.SAME_HALVES_SPAN:
            return None
        loads = {}
        for i, (key, _) in accesses.items():
            if self.f.instructions[i].opcode != "st" and key[3]:    # vector loads (step > 0)
                loads[key] = loads.get(key, 0) + 1
        key = max(loads, key=lambda k: (loads[k], str(k)), default=None)
        return key if key is not None and loads[key] >= self.SAME_HALVES_LOADS else None

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
                if o.name in UNIFORM_SPECIALS:
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
        if self.full_warp:
            return self.loop_flag_ptr(name)
        return self.frame_ptr(self.flags_base + self.flag_offsets[name])

    @staticmethod
    def loop_flag_ptr(name: str) -> str:
        """A flag's copy in the function's frame while a full-warp loop runs (vector_loop)."""
        return f'%"fwf.{name}"'

    def clear_flags(self, names):
        for name in names:
            if name in self.flag_offsets:
                self.emit(f"store i32 0, ptr {self.flag_ptr(name)}")

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
        return self.op2("and", "i1", value, self.no_wrap(src, signed))

    def no_wrap(self, src: str, signed: bool) -> str:
        """i1: the half-warps' values of 32-bit ``src`` do not wrap around 2**32 (signed:
        2**31) between lane 0 and lane 15, so widening keeps its lane pattern."""
        v = self.vread(ir.Reg(src), "i32", None)
        top = 0x7FFFFFFF if signed else 0xFFFFFFFF
        value = "true"
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
        offset, step)}). Emitted where the region begins. A base register's lane pattern is
        taken from its flag alone: where the flag is unset the general copy runs, and checks
        the pattern then (``refresh_flags``) for the next time. No check in the hot path
        reads a whole vector then, so only the general copy needs the base register's
        vector (rebuilt anchors, ``vector_rebuild``) and LLVM makes the region's tests a
        chain of early exits (a tiled matmul, one thread: 9.7-10.7 -> 8.4-9.4 ms)."""
        ok = self.op2("icmp eq", "i32", self.block_mask, "-1")
        info = {}
        for key, (lo, hi) in self.region_groups(accesses).items():
            name, space, size, step = key
            wbase, host, limit = self.access_window(name, space)
            r0, r16 = self.lane_anchors(name, wbase, rebuild=True)
            flag = self.tmp(); self.emit(f"{flag} = load i32, ptr {self.flag_ptr(name)}")
            ok = self.op2("and", "i1", ok, self.op2("icmp ne", "i32", flag, "0"))
            ok = self.op2("and", "i1", ok, self.span_in_bounds(name, (r0, r16), wbase, lo, hi,
                                                                 step, limit))
            offsets = {off for k, off in accesses.values() if k == key}
            ok = self.op2("and", "i1", ok, self.anchors_aligned(name, (r0, r16), wbase, offsets, size))
            for i, (k, _) in accesses.items():
                if k == key:
                    info[i] = (host, r0, r16, step)
        return ok, info

    def refresh_flags(self, names) -> None:
        """In a region's general copy: the unset flags of its base registers, checked now
        (from what each was computed of where it can: ``rebuilt_pattern``, which also sets
        those registers' flags), so that the region's next run takes its fast copy where
        the patterns hold (a flag that the rules of ``plan_pattern_flags`` could not set)."""
        for name in sorted(names):
            self.known_pattern(name, rebuild=True)

    def anchors_aligned(self, name: str, anchors, wbase: str, offsets: set, size: int) -> str:
        """i1: accesses of ``size`` bytes at each of ``offsets`` from both half-warps'
        anchors (offsets from ``wbase``; the other lanes lie whole steps of ``size`` or 0
        further) are naturally aligned. Offsets that differ modulo the alignment never all
        are: false, and the general form reports the one that is not."""
        a = L.alignment(size)
        if all(self.aligned_by_construction(ir.Addr(ir.Reg(name), o), size) for o in offsets):
            return "true"
        residues = {o % a for o in offsets}
        if len(residues) != 1:
            return "false"
        off = next(iter(offsets))
        ok = "true"
        for anchor in anchors:
            device = self.op2("add", "i64", self.op2("add", "i64", anchor, wbase), str(off))
            low = self.op2("and", "i64", device, str(a - 1))
            ok = self.op2("and", "i1", ok, self.op2("icmp eq", "i64", low, "0"))
        return ok

    def access_window(self, name: str, space: str) -> tuple:
        """(window base, host address, size) of the buffer accesses through ``name`` use:
        the block's shared memory, or the one buffer the register points into."""
        if space == "shared":
            sp = self.ctx_ptr("shared")
            host = self.tmp(); self.emit(f"{host} = ptrtoint ptr {sp} to i64")
            return "0", host, self.ctx("shared_size")
        return self.known_window(ir.Reg(name))

    def lane_anchors(self, name: str, wbase: str, rebuild: bool = False) -> tuple:
        """Lanes 0 and 16 of ``name`` as offsets into the window that starts at ``wbase``.
        ``rebuild``: at a region's start, computed again from what ``name`` was made of
        where that is exact (``vector_rebuild``): then only the region's general copy uses
        the register's vector, and LLVM moves its computation there."""
        rty = self.regs[name]
        anchors = []
        for lane in (0, W // 2):
            x = self.rebuilt(name, lane) if rebuild else None
            if x is None:
                x = self.current(name, lane)
            anchors.append(self.op2("sub", "i64", self.conv(x, rty, "i64"), wbase))
        return tuple(anchors)

    def known_pattern(self, name: str, rebuild: bool = False) -> str:
        """i1: every lane of ``name`` has its lane pattern: known from the register's flag, or
        checked here (and remembered in the flag). ``rebuild``: the check (cold) reads the
        register computed again from its operands where it can (``vector_rebuild``), not
        the register's own vector."""
        flag = self.tmp(); self.emit(f"{flag} = load i32, ptr {self.flag_ptr(name)}")
        known = self.op2("icmp ne", "i32", flag, "0")
        start = self.current_label()
        check, done = self.label("rchk"), self.label("rdone")
        self.emit(f"br i1 {known}, label %{done}, label %{check}, !prof !1")
        self.block(check)
        good = self.rebuilt_pattern(name) if rebuild else None
        if good is None:
            good = self.pattern_check(name)
        g32 = self.tmp(); self.emit(f"{g32} = zext i1 {good} to i32")
        self.emit(f"store i32 {g32}, ptr {self.flag_ptr(name)}")
        check_end = self.current_label()
        self.emit(f"br label %{done}")
        self.block(done)
        passed = self.tmp(); self.emit(f"{passed} = phi i1 [true, %{start}], [{good}, %{check_end}]")
        return passed

    def span_in_bounds(self, name: str, anchors, wbase: str, lo: int, hi: int, step: int,
                       limit: str) -> str:
        """i1: both half-warps' accesses [anchor + lo, anchor + hi + 15 * step) lie in the
        window without wrapping (a 32-bit base that wrapped would end past 2**32).

        One unsigned compare per anchor against a bound computed once (from launch
        constants: LLVM hoists it out of every loop). With first = anchor + lo and
        span = hi + 15 * step - lo >= 0, all in wrapping 64-bit arithmetic,
        "first <= first + span <= limit" holds exactly when limit >= span and
        first <= limit - span. A 32-bit register also needs its lane 0 value x plus 15
        steps to stay below 2**32: x = first + (wbase - lo) (as integers), so that is
        first <= 2**32 - 1 - 15 * step - (wbase - lo), given that this bound is >= 0."""
        span = hi + 15 * step - lo
        if span < 0:
            raise AssertionError(f"region span [{lo}, {hi}) with step {step}")
        fits = self.op2("icmp uge", "i64", limit, str(span))
        room = self.op2("sub", "i64", limit, str(span))
        if BITS.get(self.regs[name]) == 32:
            top = 0xFFFFFFFF - 15 * step
            c = self.op2("sub", "i64", wbase, str(lo))
            fits = self.op2("and", "i1", fits, self.op2("icmp sle", "i64", c, str(top)))
            room32 = self.op2("sub", "i64", str(top), c)
            room = self.umin(room, room32)
        ok = fits
        for anchor in anchors:
            first = self.op2("add", "i64", anchor, str(lo)) if lo else anchor
            ok = self.op2("and", "i1", ok, self.op2("icmp ule", "i64", first, room))
        return ok

    def umin(self, a: str, b: str) -> str:
        # (the IR parser declares intrinsics it meets)
        m = self.tmp(); self.emit(f"{m} = call i64 @llvm.umin.i64(i64 {a}, i64 {b})")
        return m

    def fast_memory(self, inst, em, load: bool, info):
        """An access of a fast region: its pattern and bounds were checked at the region's
        start, so it is two plain half-warp vector accesses (step = size) or two scalar
        loads (step 0); one load when ``info`` says both halves' anchors are equal."""
        host, r0, r16, step = info[:4]
        same = len(info) > 4 and info[4]
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
        if self.space_of(inst) != "shared" and self.full_warp and step:
            self.full_warp_prefetch(host, r0, addr.offset, step)
        elif self.space_of(inst) != "shared" and not self.full_warp:
            hp = self.tmp(); self.emit(f"{hp} = inttoptr i64 {host} to ptr")
            self.stride_prefetch(hp, (None, r0, r16, None, None))
        if step:
            va = self.tmp(); self.emit(f"{va} = load {hty}, ptr {ptrs[0]}, align 1")
            vb = va
            if not same:
                vb = self.tmp(); self.emit(f"{vb} = load {hty}, ptr {ptrs[1]}, align 1")
            v = self.tmp()
            self.emit(f"{v} = shufflevector {hty} {va}, {hty} {vb}, <{W} x i32> <"
                      + ", ".join(f"i32 {j}" for j in range(W)) + ">")
        else:
            sa = self.tmp(); self.emit(f"{sa} = load {ty}, ptr {ptrs[0]}, align 1")
            sb = sa
            if not same:
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
        # the lane's address must be in the window of the buffer its pointer came from
        # (%win): past it, a fault, never an access to the next buffer
        own_window = (f"  %aw = lshr i64 %a, {L.WINDOW_SHIFT}\n"
                      f"  %inw = icmp eq i64 %aw, %win\n"
                      f"  br i1 %inw, label %xl, label %outw\n"
                      f"outw:\n"
                      f"  call void @record_error(ptr %ctx, ptr %ti, i64 {L.ERR_BOUNDS}, i64 %a, "
                      f"i32 %line, i64 {size})\n"
                      f"  ret i32 1\n"
                      f"xl:\n")
        # a lane's address must be naturally aligned, as on a GPU
        mask = L.alignment(size) - 1
        # (shared memory lanes hold offsets: reported as generic addresses)
        window = L.buffer_address(L.SHARED_WINDOW) if space == "shared" else 0
        aligned = (f"  %alow = and i64 %a, {mask}\n"
                   f"  %isal = icmp eq i64 %alow, 0\n"
                   f"  br i1 %isal, label %al, label %misal\n"
                   f"misal:\n"
                   f"  %arep = or i64 %a, {window}\n"
                   f"  call void @record_error(ptr %ctx, ptr %ti, i64 {L.ERR_MISALIGNED}, i64 %arep, "
                   f"i32 %line, i64 {size})\n"
                   f"  ret i32 1\n"
                   f"al:\n") if mask else ""
        self.decls.add(
            f"define internal i32 @{name}(ptr %ctx, ptr %ti, ptr %frame, ptr %vals, {vt('i64')} %addrs, i32 %em, i32 %line, i64 %win) noinline cold {{\n"
            f"entry:\n  br label %head\n"
            f"head:\n  %lane = phi i32 [0, %entry], [%next, %latch]\n"
            f"  %sh = lshr i32 %em, %lane\n  %on = trunc i32 %sh to i1\n"
            f"  br i1 %on, label %body, label %latch\n"
            f"body:\n{tid_copy}"
            f"  %a = extractelement {vt('i64')} %addrs, i32 %lane\n"
            + aligned + (own_window if xl == "xlate" else "") +
            f"  %hp = call ptr @{xl}(ptr %ctx, ptr %ti, ptr null, i64 %a, i64 {size}, i32 %line)\n"
            f"  %bad = icmp eq ptr %hp, null\n"
            f"  br i1 %bad, label %fail, label %do\n"
            f"do:\n  %vp = getelementptr i64, ptr %vals, i32 %lane\n{access}  br label %latch\n"
            f"latch:\n  %next = add i32 %lane, 1\n  %done = icmp eq i32 %next, {W}\n"
            f"  br i1 %done, label %exit, label %head\n"
            f"exit:\n  ret i32 0\n"
            f"fail:\n  ret i32 1\n}}")
        return name

    # A full-warp loop whose accesses move by at most STREAM_STEP bytes per iteration (a
    # constant of the code) streams through a segment of its own, a reduction's share: it
    # fetches STREAM_AHEAD bytes on (a 16M-float sum, one thread: 6.5-6.8 ms fetching two
    # warps' spans on as for a grid-stride loop, 4.3-4.9 ms 2 KiB on).
    STREAM_AHEAD = 2048
    STREAM_STEP = 4096

    def full_warp_prefetch(self, host: str, r0: str, offset: int, step: int):
        """Prefetch for a load of a full-warp loop. A grid-stride loop moves each warp's span
        a whole grid further per iteration: the streams of all its iterations interleave,
        too many for the hardware prefetcher, and the warp two after this one reads the span
        two further on at this iteration (addresses affine in the thread index): fetch that.
        A loop whose accesses move by a small constant per iteration (``full_warp_move``,
        from ``vector_loop.iteration_moves``) streams: fetch STREAM_AHEAD bytes on."""
        move = self.full_warp_move
        if move is not None and 0 < abs(move) <= self.STREAM_STEP:
            ahead = self.STREAM_AHEAD if move > 0 else -self.STREAM_AHEAD
        else:
            ahead = 2 * W * step
        start = self.op2("add", "i64", self.op2("add", "i64", host, r0), str(offset + ahead))
        for k in range(0, W * step, 64):
            a = self.op2("add", "i64", start, str(k))
            p = self.tmp(); self.emit(f"{p} = inttoptr i64 {a} to ptr")
            self.emit(f"call void @llvm.prefetch.p0(ptr {p}, i32 0, i32 3, i32 1)")

    def stride_prefetch(self, hp: str, anchors: tuple):
        """Warps of a block run one after the other, so a warp's global loads miss the cache
        with nothing else in flight. Each load site remembers where the previous warp read;
        this warp prefetches sixteen times that distance further on, for the sixteenth warp
        after it (the usual case: warps read rows one tile-row apart; the next warp alone
        comes too soon, a hundred cycles later, to hide a trip to memory: a shared-memory
        tree reduction of 16M floats took 18 ms fetching one warp ahead, 13-14 ms four
        ahead, 11 ms sixteen ahead; a tiled matmul did not change). Prefetches never fault."""
        site = self.mod.prefetch_sites
        self.mod.prefetch_sites += 1
        hist = self.ctx_ptr("stride_history")
        slot = self.tmp(); self.emit(f"{slot} = getelementptr i64, ptr {hist}, i64 {site}")
        prev = self.tmp(); self.emit(f"{prev} = load i64, ptr {slot}")
        _, ha, hb, _, _ = anchors
        base = self.tmp(); self.emit(f"{base} = ptrtoint ptr {hp} to i64")
        here = self.op2("add", "i64", base, ha)
        self.emit(f"store i64 {here}, ptr {slot}")
        step = self.op2("shl", "i64", self.op2("sub", "i64", here, prev), "4")
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
                    and vector_width(inst) == 1 and inst.types:
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

    def lanes_aligned(self, code: str, anchors: tuple, rel: str, wbase: str, size: int,
                      em: str) -> str:
        """i1: every lane of ``em`` is naturally aligned for an access of ``size`` bytes.
        Unless the lanes gather, they lie whole multiples of ``size`` from the two reference
        lanes (``anchors``: real lanes of ``em``), so two scalar tests decide; a gather tests
        each lane (``rel``: the lanes' offsets from ``wbase``)."""
        a = L.alignment(size)
        if a == 1:
            return "true"
        _, _, _, ra, rb = anchors
        both = self.op2("or", "i64", self.op2("add", "i64", ra, wbase),
                        self.op2("add", "i64", rb, wbase))
        refs = self.op2("icmp eq", "i64", self.op2("and", "i64", both, str(a - 1)), "0")
        gather = self.op2("icmp eq", "i32", code, str(self.P_GATHER))
        start = self.current_label()
        each_lane, join = self.label("algather"), self.label("aljoin")
        self.emit(f"br i1 {gather}, label %{each_lane}, label %{join}")
        self.block(each_lane)
        i64 = vt("i64")
        low = self.op2("and", i64, self.op2("add", i64, rel, self.splat(wbase, "i64")),
                       f"splat (i64 {a - 1})")
        each = self.bits(self.op2("icmp eq", i64, low, "zeroinitializer"))
        lanes = self.op2("icmp eq", "i32", self.op2("and", "i32", each, em), em)
        end = self.current_label()
        self.emit(f"br label %{join}")
        self.block(join)
        out = self.tmp(); self.emit(f"{out} = phi i1 [{refs}, %{start}], [{lanes}, %{end}]")
        return out

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
