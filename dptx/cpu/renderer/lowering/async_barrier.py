"""Asynchronous barriers: ``mbarrier`` objects in shared memory, and the copies that complete
on them (``cp.async.mbarrier.arrive``, ``cp.async.bulk ... mbarrier::complete_tx``).

An mbarrier's 64 bits are opaque to programs (the ISA leaves them to the implementation);
here: bits 0-19 the arrivals still pending in the current phase, 20-39 the expected
arrivals, 40-62 the pending transaction bytes (two's complement), bit 63 the phase's
parity. A phase completes when no arrival and no transaction byte is pending: the parity
flips and the pending arrivals are the expected ones again. A state token (what
``mbarrier.arrive`` returns) is the parity of the phase it arrived in (bit 63) and the
arrivals it left pending (bits 0-19).

The threads of a block run one after another between sync points (per thread, resumable:
``vector_plan`` refuses these kernels), so a thread spinning on ``test_wait``/``try_wait``
would never let the others arrive: a wait that finds its phase incomplete yields (a sync
point with status ``ST_YIELD``) and the block scheduler runs the other threads before it
tries again; when a whole round makes no progress (no arrival, no other thread moved), the
block is deadlocked and the error names a waiting thread. Copies are synchronous: they
complete when issued, so their arrivals and transaction counts apply at once."""
from __future__ import annotations

from ....ptx import ir
from .common import ST_YIELD, unsupported
from .registry import Registry

PENDING_BITS, EXPECTED_SHIFT, TX_SHIFT, TX_BITS = 20, 20, 40, 23
PHASE_BIT = 63

registry = Registry("async_barrier")


class MbarrierHelpers:
    """An mbarrier's pointer and its updates: what ``mbarrier.*`` and the copies that complete
    on an mbarrier (``cp.async.mbarrier.arrive``, ``cp.async.bulk`` in ``memory``) share."""

    def mbarrier_pointer(self, inst, addr) -> str:
        """The mbarrier's host pointer: in shared memory (``.shared::cluster`` addresses
        are the block's own: launches here are clusters of one block), else generic."""
        space = "shared" if any(m.split("::")[0] == "shared" for m in inst.modifiers) \
            else "generic"
        return self.address(addr, space, 8, inst)

    def mbarrier_progress(self) -> None:
        """Count a change of any mbarrier (the scheduler's evidence of progress)."""
        p = self.ctx_ptr("progress")
        self.emit(f"atomicrmw add ptr {p}, i64 1 monotonic")

    def mbarrier_update(self, ptr: str, arrivals: str, tx: str, drop: bool = False,
                        complete: bool = True) -> str:
        """Apply ``arrivals`` (i64, subtracted from pending) and ``tx`` (i64 bytes, added to
        the pending transaction count) to the mbarrier at ``ptr``; complete the phase when
        nothing is pending (unless ``complete`` is False: .noComplete). ``drop``: the
        expected count shrinks by the arrivals too (arrive_drop). Returns the state token of
        the phase the update happened in."""
        fn = self.mbarrier_helper()
        t = self.tmp()
        self.emit(f"{t} = call i64 @\"{fn}\"(ptr {ptr}, i64 {arrivals}, i64 {tx}, "
                  f"i1 {'true' if drop else 'false'}, i1 {'true' if complete else 'false'})")
        self.mbarrier_progress()
        return t

    def mbarrier_helper(self) -> str:
        name = "mbarrier.update"
        if name in self.mod.directed:
            return name
        mask20 = (1 << PENDING_BITS) - 1
        txmask = (1 << TX_BITS) - 1
        self.mod.directed[name] = f'''define internal i64 @"{name}"(ptr %p, i64 %arr, i64 %tx, i1 %drop, i1 %complete) {{
entry:
  %w = load i64, ptr %p, align 8
  %pend = and i64 %w, {mask20}
  %exp0 = lshr i64 %w, {EXPECTED_SHIFT}
  %exp = and i64 %exp0, {mask20}
  %tx0 = lshr i64 %w, {TX_SHIFT}
  %txu = and i64 %tx0, {txmask}
  %txs0 = shl i64 %txu, {64 - TX_BITS}
  %txs = ashr i64 %txs0, {64 - TX_BITS}
  %phase = lshr i64 %w, {PHASE_BIT}
  %pend1 = sub i64 %pend, %arr
  %exp1a = sub i64 %exp, %arr
  %exp1 = select i1 %drop, i64 %exp1a, i64 %exp
  %tx1 = add i64 %txs, %tx
  %p0 = icmp eq i64 %pend1, 0
  %t0 = icmp eq i64 %tx1, 0
  %done0 = and i1 %p0, %t0
  %done = and i1 %done0, %complete
  %nphase = xor i64 %phase, 1
  %phase2 = select i1 %done, i64 %nphase, i64 %phase
  %pend2 = select i1 %done, i64 %exp1, i64 %pend1
  %tx2 = select i1 %done, i64 0, i64 %tx1
  %pm = and i64 %pend2, {mask20}
  %em0 = and i64 %exp1, {mask20}
  %em = shl i64 %em0, {EXPECTED_SHIFT}
  %tm0 = and i64 %tx2, {txmask}
  %tm = shl i64 %tm0, {TX_SHIFT}
  %ph = shl i64 %phase2, {PHASE_BIT}
  %a = or i64 %pm, %em
  %b = or i64 %a, %tm
  %c = or i64 %b, %ph
  store i64 %c, ptr %p, align 8
  %tokph = shl i64 %phase, {PHASE_BIT}
  %tokp = and i64 %pend1, {mask20}
  %tok = or i64 %tokph, %tokp
  ret i64 %tok
}}'''
        return name


class AsyncBarrierLowering(MbarrierHelpers):
    """Per-thread lowerings (mixed into ``function.Function``)."""

    @registry.lower("mbarrier")
    def op_mbarrier(self, inst):
        mods = list(inst.modifiers)
        op = next((m for m in mods if m in ("init", "inval", "arrive", "arrive_drop",
                                             "expect_tx", "complete_tx", "test_wait",
                                             "try_wait", "pending_count")), None)
        if op is None:
            raise unsupported(inst, "this mbarrier operation")
        ops = list(inst.operands)
        if op == "pending_count":
            v = self.read(ops[1], "i64", inst)
            r = self.tmp(); self.emit(f"{r} = and i64 {v}, {(1 << PENDING_BITS) - 1}")
            self.write(ops[0], self.conv(r, "i64", "i32"), "i32", inst)
            return
        if op in ("test_wait", "try_wait"):
            return self.mbarrier_wait(inst, ops, "parity" in mods)
        if op in ("init", "inval"):
            p = self.mbarrier_pointer(inst, ops[0])
            if op == "inval":
                self.emit(f"store i64 0, ptr {p}, align 8")
                return
            n = self.conv(self.read(ops[1], "i32", inst), "i32", "i64")
            m = self.tmp(); self.emit(f"{m} = and i64 {n}, {(1 << PENDING_BITS) - 1}")
            e = self.tmp(); self.emit(f"{e} = shl i64 {m}, {EXPECTED_SHIFT}")
            w = self.tmp(); self.emit(f"{w} = or i64 {m}, {e}")
            self.emit(f"store i64 {w}, ptr {p}, align 8")
            self.mbarrier_progress()
            return
        if op in ("expect_tx", "complete_tx"):
            p = self.mbarrier_pointer(inst, ops[0])
            n = self.conv(self.read(ops[1], "i32", inst), "i32", "i64")
            if op == "complete_tx":
                neg = self.tmp(); self.emit(f"{neg} = sub i64 0, {n}"); n = neg
            self.mbarrier_update(p, "0", n)
            return
        # arrive, arrive.expect_tx, arrive.noComplete, arrive_drop{...}
        has_state = not isinstance(ops[0], ir.Addr)
        state, rest = (ops[0], ops[1:]) if has_state else (None, ops)
        p = self.mbarrier_pointer(inst, rest[0])
        tx = "0"
        count = "1"
        if "expect_tx" in mods:
            if len(rest) < 2:
                raise unsupported(inst, "arrive.expect_tx needs a transaction count")
            tx = self.conv(self.read(rest[1], "i32", inst), "i32", "i64")
        elif len(rest) > 1:
            count = self.conv(self.read(rest[1], "i32", inst), "i32", "i64")
        token = self.mbarrier_update(p, count, tx, drop=(op == "arrive_drop"),
                                     complete="noComplete" not in mods)
        if state is not None and str(state) != "_":       # ``_``: the token is not wanted
            self.write(state, token, "i64", inst)

    def mbarrier_wait(self, inst, ops, parity: bool):
        """test_wait/try_wait: whether the phase the state token (or, with .parity, the
        phase of that parity) arrived in has completed; when not, this thread yields to
        the others of its block before it returns false."""
        dst, addr, which = ops[0], ops[1], ops[2]
        p = self.mbarrier_pointer(inst, addr)
        w = self.tmp(); self.emit(f"{w} = load i64, ptr {p}, align 8")
        cur = self.tmp(); self.emit(f"{cur} = lshr i64 {w}, {PHASE_BIT}")
        if parity:
            v = self.conv(self.read(which, "i32", inst), "i32", "i64")
            want = self.tmp(); self.emit(f"{want} = and i64 {v}, 1")
        else:
            v = self.read(which, "i64", inst)
            want = self.tmp(); self.emit(f"{want} = lshr i64 {v}, {PHASE_BIT}")
        done = self.tmp(); self.emit(f"{done} = icmp ne i64 {cur}, {want}")
        self.write(dst, done, "i1", inst)
        go, wait, join = self.label("mbdone"), self.label("mbyield"), self.label("mbjoin")
        self.emit(f"br i1 {done}, label %{go}, label %{wait}")
        self.block(wait)
        self.sync_point(ST_YIELD, {"line": inst.line})
        self.emit(f"br label %{join}")
        self.block(go)
        if self.mod.racecheck:
            # racecheck: the completed phase orders what its threads did before arriving
            # before what this one does next, as a block barrier does (racecheck_ir.py; taken
            # for all the block's threads: a race with one that did not arrive goes unseen)
            self.emit("call void @race_epoch(ptr %ctx, ptr %ti, i32 0)")
        self.emit(f"br label %{join}")
        self.block(join)
