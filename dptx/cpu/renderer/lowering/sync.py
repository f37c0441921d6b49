"""Barriers and warp operations: ``bar``/``barrier``, ``shfl``, ``vote``, ``activemask``,
``elect``, ``redux``, ``match``. Per thread these are sync points (the thread spills and
returns to the block scheduler); warp-vectorized, shuffles and votes are vector
permutations and reductions and a barrier suspends the whole warp."""
from __future__ import annotations

from ....ptx import ir
from .. import address_space as L
from ..racecheck_ir import ALIGNED_BARRIER
from .common import (LLTY, ST_BAR, ST_WARP, ST_ERR, unsupported, W, F_RESUME, F_CURMASK, F_DEAD,
                     F_NOSYNC, SLOT, vt, iota)
from .registry import Registry

registry = Registry("sync")


class SyncLowering:
    """Per-thread lowerings (mixed into ``function.Function``)."""

    # barriers and warp operations (resumable kernels) ---------------------------------------------
    @registry.lower("bar", "barrier")
    def op_bar(self, inst):
        mods = inst.modifiers
        if "warp" in mods:
            mask = self.read(inst.operands[0], "i32", inst) if inst.operands else "-1"
            self.sync_point(ST_WARP, {"count": mask, "line": inst.line})
            return
        if "arrive" in mods:
            # Arrive without waiting: counted towards the threads barrier ``id`` waits for.
            ops = list(inst.operands)
            bar_id = self.read(ops[0], "i32", inst) if ops else "0"
            idx = self.tmp(); self.emit(f"{idx} = and i32 {bar_id}, 15")
            base = self.ctx_ptr("arrivals")
            p = self.tmp(); self.emit(f"{p} = getelementptr i64, ptr {base}, i32 {idx}")
            self.emit(f"atomicrmw add ptr {p}, i64 1 seq_cst")
            return
        ops = list(inst.operands)
        if "red" in mods:
            dst = ops.pop(0)
            bar_id = self.read(ops[0], "i32", inst)
            count = self.read(ops[1], "i32", inst) if len(ops) > 2 else "0"
            pred = self.read(ops[-1], "i1", inst)
            pv = self.conv(pred, "i1", "i32")
            op_code = {"popc": 1, "and": 2, "or": 3}[next(m for m in mods if m in ("popc", "and", "or"))]
            self.sync_point(ST_BAR, {"bar_id": bar_id, "count": count, "red_op": op_code,
                                     "red_value": pv, "line": inst.line})
            res = self.tmp(); p = self.frame_field("red_result"); self.emit(f"{res} = load i32, ptr {p}")
            if op_code == 1:
                self.write(dst, res, "i32", inst)
            else:
                self.write(dst, self.conv(res, "i32", "i1"), "i1", inst)
            return
        bar_id = self.read(ops[0], "i32", inst) if ops else "0"
        count = self.read(ops[1], "i32", inst) if len(ops) > 1 else "0"
        if self.mod.racecheck and (inst.opcode == "bar" or "aligned" in mods):
            # synccheck: an aligned barrier (racecheck_ir.ALIGNED_BARRIER)
            marked = self.tmp(); self.emit(f"{marked} = or i32 {bar_id}, {ALIGNED_BARRIER}")
            bar_id = marked
        self.sync_point(ST_BAR, {"bar_id": bar_id, "count": count, "red_op": 0, "line": inst.line})

    def deposit(self, value: str, aux: str = "0"):
        """Write this thread's contribution to a warp operation and wait for the warp; then a
        second wait, so that no lane overwrites its slot before every lane has read it."""
        p = self.exchange_ptr()
        self.emit(f"store i64 {value}, ptr {p}")
        q = self.tmp(); self.emit(f"{q} = getelementptr i64, ptr {p}, i64 1")
        self.emit(f"store i64 {aux}, ptr {q}")
        # tag the slot with the sync point, so that lanes can tell who waits at the same one
        tag = self.tmp(); self.emit(f"{tag} = getelementptr i64, ptr {p}, i64 3")
        self.emit(f"store i64 {self.sync_points + 1}, ptr {tag}")

    @registry.lower("shfl")
    def op_shfl(self, inst):
        if "sync" not in inst.modifiers:
            raise unsupported(inst, "shfl without .sync (removed in PTX 6.4 for sm_70+)")
        mode = next(m for m in inst.modifiers if m in ("up", "down", "bfly", "idx"))
        dst = inst.operands[0]
        a = self.read(inst.operands[1], "i32", inst)
        mask = self.read(inst.operands[4], "i32", inst) if len(inst.operands) > 4 else "-1"
        self.deposit(self.conv(a, "i32", "i64"))
        self.sync_point(ST_WARP, {"count": mask, "line": inst.line})
        # Values used after a sync point are read after it (registers were reloaded).
        b = self.read(inst.operands[2], "i32", inst)
        c = self.read(inst.operands[3], "i32", inst)
        lane = self.tmp(); self.emit(f"{lane} = and i32 {self.ti(6)}, 31")
        j = self.tmp()
        pv = self.tmp()
        self.emit(f"{j} = call i32 @shfl_lane(i32 {lane}, i32 {b}, i32 {c}, i32 {['up', 'down', 'bfly', 'idx'].index(mode)})")
        self.emit(f"{pv} = icmp sge i32 {j}, 0")
        jj = self.tmp(); self.emit(f"{jj} = select i1 {pv}, i32 {j}, i32 {lane}")
        src = self.exchange_ptr(jj)
        v = self.tmp(); self.emit(f"{v} = load i64, ptr {src}")
        result = self.conv(v, "i64", "i32")
        if isinstance(dst, ir.Pair):
            self.write(dst.first, result, "i32", inst)
            self.write(dst.second, pv, "i1", inst)
        else:
            self.write(dst, result, "i32", inst)
        mask = self.read(inst.operands[4], "i32", inst) if len(inst.operands) > 4 else "-1"
        self.sync_point(ST_WARP, {"count": mask, "line": inst.line})

    def warp_gather(self, inst, value: str, fn: str, mask_op, extra: str, finish):
        """Deposit ``value``, wait for the warp, combine the lanes of the mask with runtime
        ``fn``, let ``finish(result, mask)`` write the destinations, and wait again so that
        no lane overwrites its slot before all have read."""
        mask0 = self.read(mask_op, "i32", inst) if mask_op is not None else "-1"
        self.deposit(value)
        self.sync_point(ST_WARP, {"count": mask0, "line": inst.line})
        mask = self.read(mask_op, "i32", inst) if mask_op is not None else "-1"
        base = self.exchange_ptr("0")
        lane = self.tmp(); self.emit(f"{lane} = and i32 {self.ti(6)}, 31")
        r = self.tmp(); self.emit(f"{r} = call i64 @{fn}(ptr {base}, i32 {mask}, i32 {lane}{extra})")
        finish(r, mask)
        self.sync_point(ST_WARP, {"count": mask, "line": inst.line})

    @registry.lower("vote")
    def op_vote(self, inst):
        mode = next(m for m in inst.modifiers if m in ("all", "any", "uni", "ballot"))
        pred = self.read(inst.operands[1], "i1", inst)
        mask_op = inst.operands[2] if len(inst.operands) > 2 else None

        def finish(ballot, mask):
            b32 = self.conv(ballot, "i64", "i32")
            if mode == "ballot":
                self.write(inst.operands[0], b32, "i32", inst)
                return
            live = self.tmp(); self.emit(f"{live} = and i32 {mask}, {self.active_mask()}")
            r = self.tmp()
            if mode == "all":
                self.emit(f"{r} = icmp eq i32 {b32}, {live}")
            elif mode == "any":
                self.emit(f"{r} = icmp ne i32 {b32}, 0")
            else:
                z = self.tmp(); self.emit(f"{z} = icmp eq i32 {b32}, 0")
                a = self.tmp(); self.emit(f"{a} = icmp eq i32 {b32}, {live}")
                self.emit(f"{r} = or i1 {z}, {a}")
            self.write(inst.operands[0], r, "i1", inst)
        self.warp_gather(inst, self.conv(pred, "i1", "i64"), "warp_ballot", mask_op, "", finish)

    def warp_valid_lanes(self) -> str:
        """How many lanes of this warp exist (the last warp of a block may be partial)."""
        dims = [self.trunc32(self.ctx(f"block_{a}")) for a in "xyz"]
        xy = self.tmp(); self.emit(f"{xy} = mul i32 {dims[0]}, {dims[1]}")
        n = self.tmp(); self.emit(f"{n} = mul i32 {xy}, {dims[2]}")
        wb = self.tmp(); self.emit(f"{wb} = and i32 {self.ti(6)}, -32")
        valid = self.tmp(); self.emit(f"{valid} = sub i32 {n}, {wb}")
        return valid

    def active_mask(self) -> str:
        """Lanes of this warp that exist and have not exited."""
        base = self.exchange_ptr("0")
        valid = self.warp_valid_lanes()
        r = self.tmp(); self.emit(f"{r} = call i32 @warp_active(ptr {base}, i32 {valid})")
        return r

    def arrived_mask(self, finish):
        """Wait for the warp, then ``finish(mask)`` with the lanes waiting at this same point
        (the lanes executing this instruction together: activemask, elect)."""
        tag = self.sync_points + 1
        self.deposit("0")
        self.sync_point(ST_WARP, {"line": 0})
        base = self.exchange_ptr("0")
        valid = self.warp_valid_lanes()
        r = self.tmp(); self.emit(f"{r} = call i32 @warp_arrived(ptr {base}, i32 {valid}, i64 {tag})")
        finish(r)
        self.sync_point(ST_WARP, {"line": 0})

    @registry.lower("activemask")
    def op_activemask(self, inst):
        self.arrived_mask(lambda m: self.write(inst.operands[0], m, "i32", inst))

    @registry.lower("elect")
    def op_elect(self, inst):
        dst = inst.operands[0]

        def finish(active):
            mask = self.read(inst.operands[-1], "i32", inst)
            live = self.tmp(); self.emit(f"{live} = and i32 {mask}, {active}")
            low = self.tmp(); self.emit(f"{low} = call i32 @llvm.cttz.i32(i32 {live}, i1 false)")
            lane = self.tmp(); self.emit(f"{lane} = and i32 {self.ti(6)}, 31")
            me = self.tmp(); self.emit(f"{me} = icmp eq i32 {lane}, {low}")
            if isinstance(dst, ir.Pair):
                self.write(dst.first, low, "i32", inst)
                self.write(dst.second, me, "i1", inst)
            else:
                self.write(dst, me, "i1", inst)
        self.arrived_mask(finish)

    @registry.lower("redux")
    def op_redux(self, inst):
        op = next(m for m in inst.modifiers if m in ("add", "min", "max", "and", "or", "xor"))
        t = self.itype(inst)
        v = self.read(inst.operands[1], "i32", inst)
        ext = self.conv(v, "i32", "i64", signed=t.startswith("s"))
        code = ["add", "min", "max", "and", "or", "xor"].index(op)

        def finish(r, mask):
            self.write(inst.operands[0], self.conv(r, "i64", "i32"), "i32", inst)
        self.warp_gather(inst, ext, "warp_reduce", inst.operands[2],
                         f", i32 {code}, i1 {'true' if t.startswith('s') else 'false'}", finish)

    @registry.lower("match")
    def op_match(self, inst):
        mode = next(m for m in inst.modifiers if m in ("any", "all"))
        t = self.itype(inst)
        ty = LLTY[t]
        v = self.conv(self.read(inst.operands[1], ty, inst), ty, "i64")
        dst = inst.operands[0]

        def finish(r, mask):
            r32 = self.conv(r, "i64", "i32")
            if mode == "all" and isinstance(dst, ir.Pair):
                ok = self.tmp(); self.emit(f"{ok} = icmp ne i32 {r32}, 0")
                self.write(dst.first, r32, "i32", inst)
                self.write(dst.second, ok, "i1", inst)
            else:
                self.write(dst, r32, "i32", inst)
        self.warp_gather(inst, v, "warp_match", inst.operands[2],
                         f", i1 {'true' if mode == 'all' else 'false'}", finish)


class SyncVectorLowering:
    """Warp-vectorized lowerings (mixed into ``vector.VectorFunction``); returning False
    falls back to the per-thread lowering, lane by lane."""

    # -- warp operations and barriers -----------------------------------------------------------
    @staticmethod
    def shfl_sources(mode: str, b: int, c: int) -> tuple:
        """(source lane, in range) of each lane of ``shfl.sync.mode`` with lane offset or
        index ``b`` and clamp/segment word ``c`` (the PTX ISA's pseudocode): a lane out of
        range keeps its own value."""
        clamp, seg = c & 31, (c >> 8) & 31
        b5 = b & 31
        out = []
        for lane in range(W):
            minl = lane & seg
            maxl = minl | (clamp & ~seg)
            if mode == "up":
                j = lane - b5; ok = j >= maxl
            elif mode == "down":
                j = lane + b5; ok = j <= maxl
            elif mode == "bfly":
                j = lane ^ b5; ok = j <= maxl
            else:
                j = minl | (b5 & ~seg); ok = j <= maxl
            out.append((j if ok else lane, ok))
        return tuple(out)

    def constant_operand(self, op):
        """The integer ``op`` always holds: an immediate, or a register whose only definition
        in the function is an unguarded ``mov`` of one (NVRTC puts a shuffle's offset and
        clamp in such registers); else None."""
        if isinstance(op, ir.Imm):
            return op.value if isinstance(op.value, int) else None
        if not isinstance(op, ir.Reg) or op.negated or op.component:
            return None
        if self._mov_constants is None:
            found, defined = {}, {}
            for i, inst in enumerate(self.f.instructions):
                for name in self.inst_defs[i]:
                    defined[name] = defined.get(name, 0) + 1
                    if inst.opcode == "mov" and inst.guard is None and len(inst.operands) == 2 \
                            and isinstance(inst.operands[1], ir.Imm) \
                            and isinstance(inst.operands[1].value, int):
                        found[name] = inst.operands[1].value
            self._mov_constants = {n: v for n, v in found.items() if defined[n] == 1}
        return self._mov_constants.get(op.name)

    @registry.lower_vector("shfl")
    def v_shfl(self, inst, em):
        mode = next(m for m in inst.modifiers if m in ("up", "down", "bfly", "idx"))
        if not self.all_readable(inst.operands[1:4]):
            raise unsupported(inst, "shfl operand")
        i32 = vt("i32")
        a = self.vread(inst.operands[1], "i32", inst)
        b, c = (self.constant_operand(op) for op in inst.operands[2:4])
        if b is not None and c is not None:
            # offsets known when compiling (a reduction's tree of shfl.down 16, 8, 4, 2, 1):
            # a permute of the lanes, not a gather through memory (a warp-per-row sum of
            # 131072 rows of 128 floats spent half its time in the gathers)
            sources = self.shfl_sources(mode, b, c)
            v = self.tmp()
            self.emit(f"{v} = shufflevector {i32} {a}, {i32} poison, <{W} x i32> <"
                      + ", ".join(f"i32 {j}" for j, _ in sources) + ">")
            ok = "<" + ", ".join(f"i1 {'true' if k else 'false'}" for _, k in sources) + ">"
            self.shfl_write(inst, em, v, ok)
            return
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
        self.shfl_write(inst, em, v, ok)

    def shfl_write(self, inst, em: str, value: str, in_range: str):
        """A shuffle's results: the value, and the predicate of ``d|p`` when there is one."""
        dst = inst.operands[0]
        if isinstance(dst, ir.Pair):
            self.vwrite(dst.first, value, "i32", em, inst)
            self.vwrite(dst.second, in_range, "i1", em, inst)
        else:
            self.vwrite(dst, value, "i32", em, inst)

    @registry.lower_vector("vote")
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

    @registry.lower_vector("activemask")
    def v_activemask(self, inst, em):
        self.vwrite(inst.operands[0], self.splat(em, "i32"), "i32", em, inst)

    @registry.lower_vector("bar", "barrier")
    def v_bar(self, inst, em):
        if "warp" in inst.modifiers:
            return   # the lanes of a warp run together: bar.warp.sync has nothing to wait for
        self.barrier(inst, em)

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
