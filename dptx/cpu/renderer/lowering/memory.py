"""Data movement: ``mov``, ``ld``/``ldu``, ``st``, ``cvta``, ``isspacep``, ``prefetch``(``u``)
and the other hints, ``cp.async``, ``membar``/``fence``. The warp-vectorized ``ld``/``st``
choose between the fast contiguous, per-half and gathered forms of ``vector_memory``."""
from __future__ import annotations

from ....ptx import ir
from .. import address_space as L
from .common import LLTY, BITS, unsupported, INTS, FLOATS, vector_width, vt
from .registry import Registry
from ..racecheck_ir import order_event
from .async_barrier import MbarrierHelpers

registry = Registry("memory")


class MemoryLowering(MbarrierHelpers):
    """Per-thread lowerings (mixed into ``function.Function``)."""

    # moves ----------------------------------------------------------------------------------
    @registry.lower("mov")
    def op_mov(self, inst):
        d, s = inst.operands[0], inst.operands[1]
        ty = self.lt(inst)
        if vector_width(inst) > 1:   # mov.v4: element by element (vector registers)
            # all sources read before any destination is written: the move is one parallel
            # assignment ({a, b, c, d} <- {c, d, a, b} swaps)
            pairs = [(dst, self.read(src, ty, inst))
                     for dst, src in zip(self.vector_items(d), self.vector_items(s))]
            for dst, value in pairs:
                if dst is not None:
                    self.write(dst, value, ty, inst)
            return
        d_items, s_items = self.vector_items(d), self.vector_items(s)
        if len(d_items) > 1:  # unpack: mov.b64 {lo, hi}, x (or into a .v2 register's parts)
            v = self.read(s, ty, inst)
            width = BITS[ty] // len(d_items)
            ety = f"i{width}"
            for i, item in enumerate(d_items):
                if item is None:
                    continue
                sh = self.tmp(); self.emit(f"{sh} = lshr {ty} {v}, {i * width}")
                self.write(item, self.conv(sh, ty, ety), ety, inst)
            return
        if len(s_items) > 1:  # pack (braces, or a .v2/.v4 register's parts)
            width = BITS[ty] // len(s_items)
            ety = f"i{width}"
            acc = "0"
            for i, item in enumerate(s_items):
                e = self.read(item, ety, inst)
                z = self.conv(e, ety, ty)
                sh = self.tmp(); self.emit(f"{sh} = shl {ty} {z}, {i * width}")
                o = self.tmp(); self.emit(f"{o} = or {ty} {acc}, {sh}")
                acc = o
            self.write(d, acc, ty, inst)
            return
        self.write(d, self.read(s, ty, inst), ty, inst)

    @registry.lower("cvta")
    def op_cvta(self, inst):
        to = "to" in inst.modifiers
        space = next(m for m in inst.modifiers if m in ("global", "shared", "local", "const", "param"))
        ty = self.lt(inst)
        v = self.conv(self.read(inst.operands[1], ty, inst), ty, "i64")
        window = {"shared": L.SHARED_WINDOW, "local": L.LOCAL_WINDOW}.get(space)
        if window is None:
            r = v  # global/const addresses are generic addresses
        elif to:
            r = self.tmp(); self.emit(f"{r} = and i64 {v}, {L.OFFSET_MASK}")
            if space == "local":
                r2 = self.tmp(); self.emit(f"{r2} = sub i64 {r}, {self.local_base_offset()}"); r = r2
        else:
            if space == "local":
                v2 = self.tmp(); self.emit(f"{v2} = add i64 {v}, {self.local_base_offset()}"); v = v2
            r = self.tmp(); self.emit(f"{r} = or i64 {v}, {L.buffer_address(window)}")
        self.write(inst.operands[0], self.conv(r, "i64", ty), ty, inst)

    @registry.lower("isspacep")
    def op_isspacep(self, inst):
        space = inst.modifiers[0]
        v = self.read(inst.operands[1], "i64", inst)
        w = self.tmp(); self.emit(f"{w} = lshr i64 {v}, {L.WINDOW_SHIFT}")
        r = self.tmp()
        if space == "shared":
            self.emit(f"{r} = icmp eq i64 {w}, {L.SHARED_WINDOW}")
        elif space == "local":
            self.emit(f"{r} = icmp eq i64 {w}, {L.LOCAL_WINDOW}")
        elif space in ("global", "const"):
            self.emit(f"{r} = icmp uge i64 {w}, {L.FIRST_BUFFER}")
        else:
            raise unsupported(inst)
        self.write(inst.operands[0], r, "i1", inst)

    @registry.lower("prefetch", "prefetchu", "griddepcontrol", "pmevent")
    def op_prefetch(self, inst):
        pass

    @registry.lower("cp")
    def op_cp(self, inst):
        """cp.async (sm_80): the copy from global to shared memory happens at once, so the
        groups are complete when they are committed and the waits have nothing to wait for.
        A src-size below cp-size (or a true ignore-src predicate) reads only that many bytes
        and zero-fills the rest, as the ISA says; Triton masks its loads this way."""
        mods = inst.modifiers
        if "async" not in mods:
            raise unsupported(inst)
        if "bulk" in mods:
            return self.bulk_copy(inst)
        if "mbarrier" in mods:
            # cp.async.mbarrier.arrive: the copies before it are complete already, so its
            # arrive happens now; without .noinc the pending count was raised by one first
            # (no net change), with .noinc it is one of the expected arrivals
            if "arrive" not in mods or len(inst.operands) != 1:
                raise unsupported(inst)
            p = self.mbarrier_pointer(inst, inst.operands[0])
            self.mbarrier_update(p, "1" if "noinc" in mods else "0", "0")
            return
        if {"commit_group", "wait_group", "wait_all"} & set(mods):
            return
        if not any(m.split("::")[0] == "shared" for m in mods) or "global" not in mods:
            raise unsupported(inst, "cp.async copies from .global to .shared")
        ops = list(inst.operands)
        if len(ops) < 3 or not isinstance(ops[2], ir.Imm) or ops[2].value not in (4, 8, 16):
            raise unsupported(inst, "cp-size must be 4, 8 or 16")
        size = ops[2].value
        rest = ops[3:]
        if any(m.startswith("L2::cache_hint") for m in mods):
            rest = rest[:-1]                     # the cache policy operand
        ty = f"i{8 * size}"
        dst = self.address(ops[0], "shared", size, inst)

        def copy_all():
            src = self.address(ops[1], "global", size, inst)
            v = self.tmp(); self.emit(f"{v} = load {ty}, ptr {src}, align 1")
            self.emit(f"store {ty} {v}, ptr {dst}, align 1")

        if not rest:
            return copy_all()
        extra = rest[0]
        if isinstance(extra, ir.Reg) and self.regs.get(extra.name) == "i1":
            ignore = self.read(extra, "i1", inst)
            n = self.tmp(); self.emit(f"{n} = select i1 {ignore}, i32 0, i32 {size}")
        else:
            n = self.read(extra, "i32", inst)
        full, part, join = self.label("cpfull"), self.label("cppart"), self.label("cpjoin")
        whole = self.tmp(); self.emit(f"{whole} = icmp uge i32 {n}, {size}")
        self.emit(f"br i1 {whole}, label %{full}, label %{part}")
        self.block(full)
        copy_all()
        self.emit(f"br label %{join}")
        self.block(part)
        self.emit(f"store {ty} 0, ptr {dst}, align 1")
        addr = ops[1]
        for k in range(size - 1):               # bytes below src-size only: the rest may be unmapped
            more, nxt = self.label("cpbyte"), self.label("cpnext")
            c = self.tmp(); self.emit(f"{c} = icmp ult i32 {k}, {n}")
            self.emit(f"br i1 {c}, label %{more}, label %{join}")
            self.block(more)
            b = self.address(ir.Addr(addr.base, addr.offset + k), "global", 1, inst)
            x = self.tmp(); self.emit(f"{x} = load i8, ptr {b}, align 1")
            d = self.tmp(); self.emit(f"{d} = getelementptr i8, ptr {dst}, i64 {k}")
            self.emit(f"store i8 {x}, ptr {d}, align 1")
            self.emit(f"br label %{nxt}")
            self.block(nxt)
        self.emit(f"br label %{join}")
        self.block(join)

    def bulk_copy(self, inst):
        """cp.async.bulk (sm_90, non-tensor): global -> shared completing on an mbarrier
        (``mbarrier::complete_tx::bytes``: the bytes counted off its transaction count),
        shared -> global in a bulk group, shared -> shared of the block; done at once (so
        commit and wait are nothing), prefetches ignored."""
        mods = set(inst.modifiers)
        if {"commit_group", "wait_group"} & mods or "prefetch" in mods:
            return
        if "tensor" in mods or any(m.startswith("multicast") for m in mods):
            raise unsupported(inst, "tensor maps and multicast are not supported")
        spaces = [m.split("::")[0] for m in inst.modifiers
                  if m.split("::")[0] in ("global", "shared")]
        if len(spaces) != 2:
            raise unsupported(inst)
        dst_space, src_space = spaces
        ops = list(inst.operands)
        size = self.conv(self.read(ops[2], "i32", inst), "i32", "i64")
        dst = self.translate(self.address_value(ops[0], inst), dst_space, size, inst, kind=1)
        src = self.translate(self.address_value(ops[1], inst), src_space, size, inst, kind=0)
        self.emit(f"call void @llvm.memmove.p0.p0.i64(ptr {dst}, ptr {src}, i64 {size}, i1 false)")
        if any(m.startswith("mbarrier") for m in inst.modifiers):
            if len(ops) < 4:
                raise unsupported(inst, "complete_tx needs its mbarrier")
            bar = self.mbarrier_pointer(inst, ops[3])
            neg = self.tmp(); self.emit(f"{neg} = sub i64 0, {size}")
            self.mbarrier_update(bar, "0", neg)

    @registry.lower("membar", "fence")
    def op_membar(self, inst):
        self.emit("fence seq_cst")
        event = order_event(inst) if self.mod.racecheck else 0
        if event:   # racecheck: a fence orders a block's accesses for others (racecheck_ir)
            self.emit(f"call void @race_order(ptr %ctx, ptr %ti, i32 {event})")

    @registry.lower("ld", "ldu")
    def op_ld(self, inst):
        ty_name = self.itype(inst)
        ty = self.lt(inst)
        size = ir.type_size(ty_name) if ty_name != "pred" else 1
        n = vector_width(inst)
        space = self.space_of(inst)
        dst = inst.operands[0]
        p = self.address(inst.operands[1], space, size * n, inst)
        items = self.vector_items(dst)
        signed = ty_name.startswith("s")
        vol = " volatile" if "volatile" in inst.modifiers or "acquire" in inst.modifiers else ""
        for i, item in enumerate(items):
            q = p
            if i:
                q = self.tmp(); self.emit(f"{q} = getelementptr i8, ptr {p}, i64 {i * size}")
            # kernel parameters and .const data do not change during a launch
            inv = ", !invariant.load !0" if space == "const" or self.is_kernel_param(inst.operands[1]) else ""
            v = self.tmp(); self.emit(f"{v} = load{vol} {ty}, ptr {q}, align 1{inv}")
            if item is not None:
                self.write(item, v, ty, inst, signed=signed)

    def is_kernel_param(self, addr) -> bool:
        return (isinstance(addr, ir.Addr) and isinstance(addr.base, ir.Sym)
                and self.params.get(addr.base.name, ("",))[0] == "kernel")

    @registry.lower("st")
    def op_st(self, inst):
        ty_name = self.itype(inst)
        ty = self.lt(inst)
        size = ir.type_size(ty_name)
        n = vector_width(inst)
        space = self.space_of(inst)
        src = inst.operands[1]
        p = self.address(inst.operands[0], space, size * n, inst)
        items = self.vector_items(src)
        vol = " volatile" if "volatile" in inst.modifiers or "release" in inst.modifiers else ""
        for i, item in enumerate(items):
            v = self.read(item, ty, inst)
            q = p
            if i:
                q = self.tmp(); self.emit(f"{q} = getelementptr i8, ptr {p}, i64 {i * size}")
            self.emit(f"store{vol} {ty} {v}, ptr {q}, align 1")


class MemoryVectorLowering:
    """Warp-vectorized lowerings (mixed into ``vector.VectorFunction``); returning False
    falls back to the per-thread lowering, lane by lane."""

    @registry.lower_vector("mov")
    def v_mov(self, inst, em):
        d, s = inst.operands[0], inst.operands[1]
        t = self.itype(inst)
        if isinstance(d, ir.Vec) or isinstance(s, ir.Vec) or t not in LLTY or not self.vreadable(s):
            return False
        ty = LLTY[t]
        self.vwrite(d, self.vread(s, ty, inst), ty, em, inst)

    @registry.lower_vector("cvta")
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

    # -- memory --------------------------------------------------------------------------------
    @registry.lower_vector("ld", "ldu")
    def v_ld(self, inst, em):
        return self.vmemory(inst, em, load=True)

    @registry.lower_vector("st")
    def v_st(self, inst, em):
        return self.vmemory(inst, em, load=False)

    def vmemory(self, inst, em, load: bool):
        t = self.itype(inst)
        if vector_width(inst) != 1 or t not in INTS | FLOATS:
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
            offset = addr.offset
            if isinstance(base, ir.Reg):
                rty = self.regs.get(base.name, "i64")
                av = self.vread(base, rty, inst)
                if offset and rty == "i32":
                    # a 32-bit address wraps at 32 bits (as in FunctionCore.address)
                    av = self.op2("add", vt("i32"), av,
                                  f"splat (i32 {offset & 0xFFFFFFFF})")
                    offset = 0
                av = self.vconv(av, rty, "i64")
            elif base is None:
                av = self.splat("0", "i64")
            else:
                av = self.splat(self.conv(*self.symbol_value(base.name, inst), "i64"), "i64")
            if offset:
                av = self.op2("add", vt("i64"), av, f"splat (i64 {offset})")
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
            code, first_anchors, first_offset, first_aligned = cached
            delta = addr.offset - first_offset   # the same in every lane
            anchors = tuple(self.op2("add", "i64", a, str(delta)) if delta else a for a in first_anchors)
            range_ok = self.range_check(key, None, addr.offset, limit, em)
            # the same lanes moved by a multiple of the alignment are as aligned as before
            if self.aligned_by_construction(addr, size):
                aligned = "true"
            elif delta % L.alignment(size) == 0:
                aligned = first_aligned
            else:
                aligned = self.lanes_aligned(code, anchors, lane_offsets(), wbase, size, em)
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
            aligned = "true" if self.aligned_by_construction(addr, size) else \
                self.lanes_aligned(code, anchors, rel, wbase, size, em)
            if key is not None:
                self.pattern_cache[key] = (code, anchors, addr.offset, aligned)
        vfast, vslow, vjoin = self.label("vmf"), self.label("vms"), self.label("vmj")
        if range_ok is not None:
            each = self.label("vme")
            if aligned != "true":
                range_ok = self.op2("and", "i1", range_ok, aligned)
            self.emit(f"br i1 {range_ok}, label %{vfast}, label %{each}, !prof !1")
            self.block(each)
        fast = in_bounds(rel if rel is not None else lane_offsets())
        if aligned != "true":
            fast = self.op2("and", "i1", fast, aligned)
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
        own = self.op2("lshr", "i64", wbase, str(L.WINDOW_SHIFT)) if space != "shared" else "0"
        status = self.tmp()
        self.emit(f"{status} = call i32 @{helper}(ptr %ctx, ptr %ti, ptr %frame, ptr {tmp}, "
                  f"{vt('i64')} {device}, i32 {em}, i32 {inst.line}, i64 {own})")
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

    @registry.lower_vector("membar", "fence")
    def v_membar(self, inst, em):
        self.emit("fence seq_cst")
