"""``nanosleep``: the thread is suspended for about ``t`` nanoseconds.

The ISA: a duration "approximately close to the delay t", guaranteed in [0, 2t], at most
1 ms; the threads of a warp that sleep may have theirs reduced so that they wake together.
Here a thread sleeps min(t, 1 ms) times the process's ``dptx.nanosleep-scale`` (1 unless
set: a node emulated k times faster sets 1/k). Durations from ``OS_SLEEP_NS`` up are an OS
sleep, which leaves the core to other work (the point of modelling compute by time); shorter
ones wait on the monotonic clock, as an OS sleep would overshoot them by its timer slack
(about 50 us on Linux). A warp-vectorized warp sleeps once, for the shortest delay among its
sleeping lanes (every lane's duration then lies in its [0, 2t]).

A sleep is at most 1 ms (times the scale): the stop request (time limit, Ctrl-C) is seen at
the next loop back edge, as for any other instruction."""
from __future__ import annotations

from .. import address_space as L
from .common import W, vt
from .registry import Registry

MAX_NS = 1_000_000          # the ISA's longest sleep
OS_SLEEP_NS = 200_000       # from here up an OS sleep; below it, a wait on the clock
HELPER = "dptx_nanosleep"

HELPER_IR = f"""
; nanosleep.u32 t (dptx/cpu/renderer/lowering/sleep.py): min(t, {MAX_NS}) ns times the context's
; sleep scale; an OS sleep from {OS_SLEEP_NS} ns up, a wait on the monotonic clock below.
define internal void @{HELPER}(ptr %ctx, i32 %t) noinline {{
entry:
  %ts = alloca [2 x i64], align 8
  %t64 = zext i32 %t to i64
  %capped = call i64 @llvm.umin.i64(i64 %t64, i64 {MAX_NS})
  %scalep = getelementptr i64, ptr %ctx, i64 {L.CTX['sleep_scale']}
  %scale = load double, ptr %scalep, align 8
  %tf = uitofp i64 %capped to double
  %nsf = fmul double %tf, %scale
  %nsf1 = call double @llvm.minnum.f64(double %nsf, double 9.99e8)
  %ns = fptoui double %nsf1 to i64
  %none = icmp eq i64 %ns, 0
  br i1 %none, label %done, label %some
some:
  %long = icmp uge i64 %ns, {OS_SLEEP_NS}
  br i1 %long, label %os, label %clock
os:
  store i64 0, ptr %ts, align 8
  %nsp = getelementptr i64, ptr %ts, i64 1
  store i64 %ns, ptr %nsp, align 8
  %r = call i32 @nanosleep(ptr %ts, ptr null)
  br label %done
clock:
  %start = call i64 @{HELPER}_now(ptr %ts)
  %end = add i64 %start, %ns
  br label %wait
wait:
  %now = call i64 @{HELPER}_now(ptr %ts)
  %left = icmp slt i64 %now, %end
  br i1 %left, label %wait, label %done
done:
  ret void
}}

define internal i64 @{HELPER}_now(ptr %ts) alwaysinline {{
entry:
  %r = call i32 @clock_gettime(i32 1, ptr %ts)
  %sec = load i64, ptr %ts, align 8
  %nsp = getelementptr i64, ptr %ts, i64 1
  %nsec = load i64, ptr %nsp, align 8
  %big = mul i64 %sec, 1000000000
  %now = add i64 %big, %nsec
  ret i64 %now
}}"""


def use_helper(mod) -> None:
    """Add the helper (and what it calls) to the module being translated, once."""
    if HELPER not in mod.directed:
        mod.directed[HELPER] = HELPER_IR
        mod.directed_decls.add("declare i32 @nanosleep(ptr, ptr)")
        mod.uses_clock = True           # (declares clock_gettime)

registry = Registry("sleep")


class SleepLowering:
    """Per-thread lowering (mixed into ``function.Function``)."""

    @registry.lower("nanosleep")
    def op_nanosleep(self, inst):
        t = self.read(inst.operands[0], "i32", inst)
        use_helper(self.mod)
        self.emit(f"call void @{HELPER}(ptr %ctx, i32 {t})")


class SleepVectorLowering:
    """Warp-vectorized lowering (mixed into ``vector.VectorFunction``)."""

    @registry.lower_vector("nanosleep")
    def v_nanosleep(self, inst, em):
        if not self.all_readable(inst.operands[:1]):
            return False
        t = self.vread(inst.operands[0], "i32", inst)
        # the lanes that do not sleep count as the longest delay in the minimum
        asleep = self.vmask(em)
        ts = self.tmp()
        self.emit(f"{ts} = select {vt('i1')} {asleep}, {vt('i32')} {t}, {vt('i32')} "
                  f"splat (i32 -1)")
        shortest = self.tmp()
        reduce = f"llvm.vector.reduce.umin.v{W}i32"
        self.declare_intrinsic(f"declare i32 @{reduce}({vt('i32')})")
        self.emit(f"{shortest} = call i32 @{reduce}({vt('i32')} {ts})")
        use_helper(self.mod)
        some = self.tmp(); self.emit(f"{some} = icmp ne i32 {em}, 0")
        go, past = self.label("sleep"), self.label("slept")
        self.emit(f"br i1 {some}, label %{go}, label %{past}")
        self.block(go)
        self.emit(f"call void @{HELPER}(ptr %ctx, i32 {shortest})")
        self.emit(f"br label %{past}")
        self.block(past)
