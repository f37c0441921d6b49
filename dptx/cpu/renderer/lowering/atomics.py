"""Atomics and reductions: ``atom`` and ``red`` on global and shared memory (scalar, the
vector ``.v2``/``.v4`` and the half forms), and the warp form's combined integer ``red.add``."""
from __future__ import annotations

import contextlib

from ....ptx import ir
from .. import address_space as L
from .common import LLTY, W, unsupported, vector_width, vt
from .registry import Registry
from .float_math import FloatVectorHelpers
from .numeric_helpers import NumericHelpers

registry = Registry("atomics")


class AtomicLowering(NumericHelpers):
    """Per-thread lowerings (mixed into ``function.Function``)."""

    # atomics -----------------------------------------------------------------------------------
    RMW = {("add", "i"): "add", ("add", "f"): "fadd", ("exch", "i"): "xchg", ("exch", "f"): "xchg",
           ("and", "i"): "and", ("or", "i"): "or", ("xor", "i"): "xor",
           ("min", "s"): "min", ("max", "s"): "max", ("min", "u"): "umin", ("max", "u"): "umax",
           ("min", "f"): "fmin", ("max", "f"): "fmax", ("inc", "u"): "uinc_wrap",
           ("dec", "u"): "udec_wrap"}

    def half_atomic_add(self, inst):
        """atom/red.add.noftz on f16, bf16, f16x2, bf16x2: a compare-and-swap loop around
        the half-precision add (computed exactly in f64, rounded once to nearest even)."""
        t = self.itype(inst)
        half = "half" if t.startswith("f16") else "bfloat"
        lanes = 2 if t.endswith("x2") else 1
        storage = "i32" if lanes == 2 else "i16"
        is_red = inst.opcode == "red"
        ops = inst.operands if is_red else inst.operands[1:]
        p = self.address(ops[0], self.space_of(inst), ir.type_size(t), inst)
        v = self.read(ops[1], storage, inst)
        start = self.tmp(); self.emit(f"{start} = load atomic {storage}, ptr {p} monotonic, align {ir.type_size(t)}")
        entry = self.label("hae")
        self.emit(f"br label %{entry}")
        self.block(entry)
        loop, done = self.label("hal"), self.label("had")
        self.emit(f"br label %{loop}")
        self.block(loop)
        old, seen = self.tmp(), self.tmp()
        self.emit(f"{old} = phi {storage} [{start}, %{entry}], [{seen}, %{loop}.tail]")
        acc = "0"
        for lane in range(lanes):
            parts = []
            for x in (old, v):
                sh = self.tmp(); self.emit(f"{sh} = lshr {storage} {x}, {16 * lane}")
                h16 = self.conv(sh, storage, "i16")
                f = self.half_to_float(h16, half)
                d = self.tmp(); self.emit(f"{d} = fpext float {f} to double")
                parts.append(d)
            r = self.tmp(); self.emit(f"{r} = fadd double {parts[0]}, {parts[1]}")
            bits = self.to_half_bits(inst, r, "double", half)
            wide = self.conv(bits, "i16", storage)
            sh = self.tmp(); self.emit(f"{sh} = shl {storage} {wide}, {16 * lane}")
            o = self.tmp(); self.emit(f"{o} = or {storage} {acc}, {sh}")
            acc = o
        self.emit(f"br label %{loop}.tail")
        self.block(f"{loop}.tail")
        pair = self.tmp(); self.emit(f"{pair} = cmpxchg ptr {p}, {storage} {old}, {storage} {acc} seq_cst seq_cst")
        self.emit(f"{seen} = extractvalue {{ {storage}, i1 }} {pair}, 0")
        ok = self.tmp(); self.emit(f"{ok} = extractvalue {{ {storage}, i1 }} {pair}, 1")
        self.emit(f"br i1 {ok}, label %{done}, label %{loop}")
        self.block(done)
        if not is_red:
            self.write(inst.operands[0], old, storage, inst)

    def f32_add(self, inst, addr, p: str, v: str, space: str) -> str:
        """atom/red.add.f32 outside shared memory. The ISA: "Current implementation of
        atom.add.f32 on global memory flushes subnormal inputs and results to sign-preserving
        zero; whereas atom.add.f32 on shared memory supports subnormal inputs and results";
        a generic address is told apart at run time (its window). Returns the old value."""
        if space == "global":
            return self.flushed_f32_add(p, v)
        is_global = self.in_global_memory(addr, space, inst)
        g, sh, gend, join = (self.label(h) for h in ("fag", "fas", "fage", "faj"))
        self.emit(f"br i1 {is_global}, label %{g}, label %{sh}")
        self.block(sh)
        plain = self.tmp(); self.emit(f"{plain} = atomicrmw fadd ptr {p}, float {v} seq_cst")
        self.emit(f"br label %{join}")
        self.block(g)
        flushed = self.flushed_f32_add(p, v)
        self.emit(f"br label %{gend}")
        self.block(gend)
        self.emit(f"br label %{join}")
        self.block(join)
        old = self.tmp()
        self.emit(f"{old} = phi float [{plain}, %{sh}], [{flushed}, %{gend}]")
        return old

    def in_global_memory(self, addr, space: str, inst) -> str:
        """An i1 (or the constant "true"/"false") saying whether the access's address is in
        global memory: a generic address by its window, at run time."""
        if space != "generic":
            return "true" if space == "global" else "false"
        value = self.address_value(addr, inst)
        if isinstance(addr.base, ir.Sym):
            value = self.generic_symbol_address(addr.base.name, value)
        w = self.tmp(); self.emit(f"{w} = lshr i64 {value}, {L.WINDOW_SHIFT}")
        r = self.tmp(); self.emit(f"{r} = icmp uge i64 {w}, {L.FIRST_BUFFER}")
        return r

    def flushed_f32_add(self, p: str, v: str) -> str:
        """A compare-and-swap loop storing flush(flush(old) + flush(v)), rounded to nearest
        even; returns the old value as it was in memory (not flushed). The flushes are done
        on the bits (a zero exponent keeps only the sign): on this chain, which goes through
        integers (the compare-and-swap) from one atomic to the next, they cost less than
        float compares (4M adds to one address, one thread: 33.4 -> 25.4 ms; 17.7 with no
        flush at all). The warp's chain of float adds keeps float compares, for the opposite
        reason."""
        fv = self.flush_subnormal(v)
        start = self.tmp(); self.emit(f"{start} = load atomic i32, ptr {p} monotonic, align 4")
        entry, loop, done = self.label("ffe"), self.label("ffl"), self.label("ffd")
        self.emit(f"br label %{entry}")
        self.block(entry)
        self.emit(f"br label %{loop}")
        self.block(loop)
        old, seen = self.tmp(), self.tmp()
        self.emit(f"{old} = phi i32 [{start}, %{entry}], [{seen}, %{loop}]")
        of = self.tmp(); self.emit(f"{of} = bitcast i32 {self.flush_bits(old)} to float")
        total = self.tmp(); self.emit(f"{total} = fadd float {of}, {fv}")
        tb = self.tmp(); self.emit(f"{tb} = bitcast float {total} to i32")
        new = self.flush_bits(tb)
        pair = self.tmp(); self.emit(f"{pair} = cmpxchg ptr {p}, i32 {old}, i32 {new} seq_cst seq_cst")
        self.emit(f"{seen} = extractvalue {{ i32, i1 }} {pair}, 0")
        ok = self.tmp(); self.emit(f"{ok} = extractvalue {{ i32, i1 }} {pair}, 1")
        self.emit(f"br i1 {ok}, label %{done}, label %{loop}")
        self.block(done)
        r = self.tmp(); self.emit(f"{r} = bitcast i32 {old} to float")
        return r

    def flush_bits(self, bits: str) -> str:
        """The bits of an f32 with a subnormal value made a zero of its sign."""
        e = self.tmp(); self.emit(f"{e} = and i32 {bits}, 2139095040")       # 0x7f800000
        sub = self.tmp(); self.emit(f"{sub} = icmp eq i32 {e}, 0")
        sign = self.tmp(); self.emit(f"{sign} = and i32 {bits}, -2147483648")  # 0x80000000
        r = self.tmp(); self.emit(f"{r} = select i1 {sub}, i32 {sign}, i32 {bits}")
        return r

    def vector_atomic(self, inst, count: int):
        """sm_90 atom/red on .v2/.v4 (.v8 for 16-bit types) in global memory: the ISA makes
        each element atomic on its own, not the vector as a whole, so this is one scalar
        atomic per element, at consecutive addresses."""
        t = self.itype(inst)
        op = next((m for m in inst.modifiers if m in ("add", "min", "max")), None)
        counts = {"f32": (2, 4), "f16": (2, 4, 8), "bf16": (2, 4, 8), "f16x2": (2, 4), "bf16x2": (2, 4)}
        if op != "add" or count not in counts.get(t, ()):
            raise unsupported(inst, f"vector atomic {op} on .v{count}.{t} (only add: .v2/.v4 f32, "
                                    f"f16x2, bf16x2 and .v2/.v4/.v8 f16, bf16)")
        is_red = inst.opcode == "red"
        ops = inst.operands if is_red else inst.operands[1:]
        addr, values = ops[0], ops[1]
        dests = None if is_red else inst.operands[0]
        if not isinstance(addr, ir.Addr) or not isinstance(values, ir.Vec) or len(values.items) != count \
                or (dests is not None and (not isinstance(dests, ir.Vec) or len(dests.items) != count)):
            raise unsupported(inst, f"vector atomic operands (.v{count} wants {count}-element vectors)")
        mods = tuple(m for m in inst.modifiers if m != f"v{count}")
        size = ir.type_size(t)
        for i in range(count):
            at = ir.Addr(addr.base, addr.offset + i * size)
            if is_red:
                operands = (at, values.items[i])
            else:
                sink = dests.items[i] if dests.items[i] is not None else ir.Reg("_")
                operands = (sink, at, values.items[i])
            self.op_atom(ir.Instruction(inst.opcode, mods, operands, None, inst.line, inst.column))

    @registry.lower("atom", "red")
    def op_atom(self, inst):
        t = self.itype(inst)
        count = vector_width(inst)
        if count > 1:
            if self.space_of(inst) not in ("global", "generic"):
                raise unsupported(inst, "vector atomics outside global memory")
            return self.vector_atomic(inst, count)
        if t in ("f16x2", "bf16x2", "f16", "bf16") and "add" in inst.modifiers:
            return self.half_atomic_add(inst)
        if t in ("f16x2", "bf16x2", "f16", "bf16"):
            raise unsupported(inst, f"atomic {'.'.join(m for m in inst.modifiers if m != t)} on .{t}")
        ty = LLTY[t]
        is_red = inst.opcode == "red"
        ops = inst.operands if is_red else inst.operands[1:]
        space = self.space_of(inst)
        p = self.address(ops[0], space, ir.type_size(t), inst)
        op = next((m for m in inst.modifiers if m in ("add", "exch", "and", "or", "xor", "min",
                                                       "max", "inc", "dec", "cas")), None)
        if op is None:
            raise unsupported(inst, "unknown atomic operation")
        kind = "f" if t in ("f32", "f64") else ("s" if t.startswith("s") else ("u" if t.startswith("u") else "i"))
        if op == "add" and t == "f32" and space in ("global", "generic"):
            old = self.f32_add(inst, ops[0], p, self.read(ops[1], ty, inst), space)
        elif op == "cas":
            cmp = self.read(ops[1], ty, inst)
            new = self.read(ops[2], ty, inst)
            pair = self.tmp(); self.emit(f"{pair} = cmpxchg ptr {p}, {ty} {cmp}, {ty} {new} seq_cst seq_cst")
            old = self.tmp(); self.emit(f"{old} = extractvalue {{ {ty}, i1 }} {pair}, 0")
        else:
            key = (op, kind)
            if key not in self.RMW:
                key = (op, "i") if kind in ("s", "u") else key
                if op in ("min", "max") and kind == "i":
                    key = (op, "u")
                if op in ("inc", "dec"):
                    key = (op, "u")
            rmw = self.RMW.get(key)
            if rmw is None:
                raise unsupported(inst, f"atomic {op} on .{t}")
            v = self.read(ops[1], ty, inst)
            old = self.tmp(); self.emit(f"{old} = atomicrmw {rmw} ptr {p}, {ty} {v} seq_cst")
        if not is_red:
            self.write(inst.operands[0], old, ty, inst)


# integer types whose additions a warp may combine: addition modulo 2**n is associative and
# commutative, so one add of the lanes' sum leaves memory as their adds one by one would
_COMBINABLE = ("u32", "s32", "b32", "u64", "s64", "b64")
# float additions a warp applies in one compare-and-swap, lane after lane in lane order
_FLOATS = ("f32", "f64")


class AtomicVectorLowering(NumericHelpers, FloatVectorHelpers):
    """Warp-vectorized lowerings (mixed into ``vector.VectorFunction``)."""

    @registry.lower_vector("atom", "red")
    def v_atomic_add(self, inst, em):
        """``atom.add``/``red.add`` on integers where every active lane adds to one address
        (a counter: ``atomicAdd(&count, v)``): one atomic add of the lanes' sum instead of
        one per lane. Lane k gets the old value plus the sum of the lanes before it, as if the
        lanes had added one after the other in lane order (what the lane-by-lane form does);
        the memory ends the same, since integer addition wraps modulo 2**n in any order.
        Lanes at different addresses, and faults, go lane by lane as before (the first lane's
        thread is named)."""
        t = self.itype(inst)
        if vector_width(inst) != 1 or t not in _COMBINABLE + _FLOATS or "add" not in inst.modifiers:
            return False
        is_red = inst.opcode == "red"
        ops = inst.operands if is_red else inst.operands[1:]
        if len(ops) != 2 or (not is_red and (not isinstance(inst.operands[0], ir.Reg)
                                             or inst.operands[0].component)):
            return False
        addr, value = ops
        space = self.space_of(inst)
        if space not in ("global", "shared", "generic") or not isinstance(addr, ir.Addr) \
                or not isinstance(addr.base, ir.Reg) or addr.base.name not in self.regs \
                or not self.vreadable(addr.base) or not self.vreadable(value):
            return False
        ty = LLTY[t]
        rty = self.regs[addr.base.name]
        bases = self.vread(addr.base, rty, inst)
        first = self.tmp(); self.emit(f"{first} = call i32 @llvm.cttz.i32(i32 {em}, i1 true)")
        b0 = self.tmp(); self.emit(f"{b0} = extractelement {vt(rty)} {bases}, i32 {first}")
        same = self.bits(self.op2("icmp eq", vt(rty), bases, self.splat(b0, rty)))
        one_address = self.op2("icmp eq", "i32", self.op2("and", "i32", same, em), em)
        values = self.vread(value, ty, inst)
        if t in _FLOATS:
            any_lane = self.op2("icmp ne", "i32", em, "0")
            self.combined_float_add(inst, t, addr, space, values,
                                    self.op2("and", "i1", one_address, any_lane), first, em)
            return True
        masked = self.tmp()
        self.emit(f"{masked} = select {vt('i1')} {self.vmask(em)}, {vt(ty)} {values}, "
                  f"{vt(ty)} zeroinitializer")
        # inclusive prefix sums over the lanes (5 doubling steps), the total in the last lane
        scan = masked
        for step in (1, 2, 4, 8, 16):
            shifted = self.tmp()
            idx = ", ".join(f"i32 {j - step if j >= step else W}" for j in range(W))
            self.emit(f"{shifted} = shufflevector {vt(ty)} {scan}, {vt(ty)} zeroinitializer, "
                      f"<{W} x i32> <{idx}>")
            scan = self.op2("add", vt(ty), scan, shifted)
        total = self.tmp(); self.emit(f"{total} = extractelement {vt(ty)} {scan}, i32 {W - 1}")
        with self.combined_else_lane_by_lane(inst, em, one_address):
            p = self.first_lane(first, lambda: self.address(addr, space, ir.type_size(t), inst))
            old = self.tmp(); self.emit(f"{old} = atomicrmw add ptr {p}, {ty} {total} seq_cst")
            if not is_red:
                before = self.op2("sub", vt(ty), scan, masked)      # the lanes before each
                got = self.op2("add", vt(ty), before, self.splat(old, ty))
                self.vwrite(inst.operands[0], got, ty, em, inst)

    @contextlib.contextmanager
    def combined_else_lane_by_lane(self, inst, em: str, combine: str):
        """The code emitted inside runs where ``combine``; else ``inst`` runs lane by lane;
        both go on after the block."""
        combined, each, join = self.label("acc"), self.label("ace"), self.label("acj")
        self.emit(f"br i1 {combine}, label %{combined}, label %{each}")
        self.block(combined)
        yield
        self.emit(f"br label %{join}")
        self.block(each)
        self.lane_loop(inst, em)
        self.emit(f"br label %{join}")
        self.block(join)

    def first_lane(self, first: str, emit):
        """``emit()`` as lane ``first`` (its operands; a fault names its thread, as lane by
        lane would)."""
        self.set_thread_ids(first)
        self.lane = first
        try:
            return emit()
        finally:
            self.lane = None

    def combined_float_add(self, inst, t: str, addr, space: str, values: str, combine: str,
                           first: str, em: str):
        """``atom.add``/``red.add`` on f32/f64 where every active lane adds to one address
        (``atomicAdd(&sum, x[i])``): the lanes' adds computed one after the other in lane
        order from the value in memory, then stored with one compare-and-swap (again from the
        new value if another thread changed it meanwhile). Float addition does not
        reassociate, so nothing is summed ahead: memory ends, and lane k gets, exactly what
        the lanes' atomics one after another give (the lane-by-lane form's order, and one
        of the orders a GPU may apply them in), f32 in global memory flushed as
        ``AtomicLowering.f32_add`` says. Lanes at different addresses go lane by lane."""
        fty, ity = ("float", "i32") if t == "f32" else ("double", "i64")
        is_red = inst.opcode == "red"
        with self.combined_else_lane_by_lane(inst, em, combine):
            p, flush = self.first_lane(first, lambda: (
                self.address(addr, space, ir.type_size(t), inst),
                self.in_global_memory(addr, space, inst) if t == "f32" else "false"))
            olds = self.lane_order_cas_add(p, t, values, em, flush)
            if not is_red:
                self.vwrite(inst.operands[0], olds, fty, em, inst)

    def lane_order_cas_add(self, p: str, t: str, values: str, em: str, flush: str) -> str:
        """Add the lanes' ``values`` (f32/f64) of ``em`` to ``*p`` one after another in lane
        order, from the value in memory, and store the result with one compare-and-swap
        (all again from the new value when another thread changed it). ``flush`` (an i1, or
        "true"/"false"): f32 operands and results flushed as in global memory. Returns the
        vector of what each lane's atomic returns."""
        fty, ity = ("float", "i32") if t == "f32" else ("double", "i64")

        def flushed(x, vector=False):
            if t != "f32" or flush == "false":
                return x
            f = self.vftz(x) if vector else self.flush_subnormal(x)
            if flush == "true":
                return f
            r = self.tmp()
            if vector:
                self.emit(f"{r} = select i1 {flush}, {vt(fty)} {f}, {vt(fty)} {x}")
            else:
                self.emit(f"{r} = select i1 {flush}, float {f}, float {x}")
            return r
        values = flushed(values, vector=True)        # every operand flushed once
        start = self.tmp(); self.emit(f"{start} = load atomic {ity}, ptr {p} monotonic, align {ir.type_size(t)}")
        entry, retry, lanes, cas, done = (self.label(h) for h in ("afn", "afr", "afl", "afs", "afd"))
        self.emit(f"br label %{entry}")
        self.block(entry)
        self.emit(f"br label %{retry}")
        self.block(retry)
        cur, seen = self.tmp(), self.tmp()
        self.emit(f"{cur} = phi {ity} [{start}, %{entry}], [{seen}, %{cas}]")
        curf = self.tmp(); self.emit(f"{curf} = bitcast {ity} {cur} to {fty}")
        curf_in = flushed(curf)          # the memory's value as an input of the first add
        self.emit(f"br label %{lanes}")
        self.block(lanes)
        # acc: the input of this lane's add (flushed); shown: what this lane's atomic returns
        # (the memory's value as it was for the first lane, the previous result after)
        acc, shown, rem, olds = self.tmp(), self.tmp(), self.tmp(), self.tmp()
        nacc, nrem, nolds = self.tmp(), self.tmp(), self.tmp()
        self.emit(f"{acc} = phi {fty} [{curf_in}, %{retry}], [{nacc}, %{lanes}]")
        self.emit(f"{shown} = phi {fty} [{curf}, %{retry}], [{nacc}, %{lanes}]")
        self.emit(f"{rem} = phi i32 [{em}, %{retry}], [{nrem}, %{lanes}]")
        self.emit(f"{olds} = phi {vt(fty)} [zeroinitializer, %{retry}], [{nolds}, %{lanes}]")
        k = self.tmp(); self.emit(f"{k} = call i32 @llvm.cttz.i32(i32 {rem}, i1 true)")
        vk = self.tmp(); self.emit(f"{vk} = extractelement {vt(fty)} {values}, i32 {k}")
        self.emit(f"{nolds} = insertelement {vt(fty)} {olds}, {fty} {shown}, i32 {k}")
        total = self.tmp(); self.emit(f"{total} = fadd {fty} {acc}, {vk}")
        fin = flushed(total)
        self.emit(f"{nacc} = select i1 true, {fty} {fin}, {fty} {fin}")   # the phi's name
        less = self.op2("sub", "i32", rem, "1")
        self.emit(f"{nrem} = and i32 {rem}, {less}")
        more = self.op2("icmp ne", "i32", nrem, "0")
        self.emit(f"br i1 {more}, label %{lanes}, label %{cas}")
        self.block(cas)
        newbits = self.tmp(); self.emit(f"{newbits} = bitcast {fty} {nacc} to {ity}")
        pair = self.tmp(); self.emit(f"{pair} = cmpxchg ptr {p}, {ity} {cur}, {ity} {newbits} seq_cst seq_cst")
        self.emit(f"{seen} = extractvalue {{ {ity}, i1 }} {pair}, 0")
        ok = self.tmp(); self.emit(f"{ok} = extractvalue {{ {ity}, i1 }} {pair}, 1")
        self.emit(f"br i1 {ok}, label %{done}, label %{retry}")
        self.block(done)
        return nolds
