"""racecheck's runtime (``dptx sanitize --tool racecheck``): hazards between the threads of a
block on shared memory, in the per-thread forms, which a race-checked build always takes.

Every access to shared memory (through .shared or a generic address into it) calls
``@race_note`` with its address, size, kind (read, write, atomic) and PTX line. Each thread
counts the block barriers it has passed and the warp synchronizations (``__syncwarp``,
shuffles, votes, matrix operations) since (``@race_epoch``, called where a sync point
resumes). Two accesses of different threads are ordered when a barrier lies between them
(their block epochs differ) or, in one warp, a warp synchronization does (their warp epochs
differ); otherwise they are concurrent, and a write concurrent with another access to the same
byte is a hazard (a write after a read: WAR; after a write: WAW; a read after a write: RAW;
an atomic and a plain access: ATOMIC). Warp-synchronous code that exchanges through shared
memory without ``__syncwarp`` is therefore a hazard, as Volta's independent thread scheduling
makes it one.

Shadow memory: one entry of SHADOW_BYTES per byte of the block's shared memory, tagged with
the block (a new block finds entries of the old one empty, without clearing), holding the
last write (thread, epochs, line, atomic) and the last read (first reader, whether others read
too in the same epochs, epochs, line). Per thread: its block (tag) and its two epochs. Each
access records at most one hazard (the first byte that shows one) in the launch's hazard
records (``HAZARD_FIELDS`` each), counted past their capacity."""
from __future__ import annotations

from . import address_space as L
from .runtime_ir import ctx_load

SHADOW_BYTES = 64           # i32 x 16 per byte of shared memory
EPOCH_BYTES = 16            # i32 x 4 per thread: block tag, block epoch, warp epoch
HAZARD_FIELDS = 8           # i64: kind, shared offset, thread, line, other thread, other line,
#                             block, size
HAZARD_CAPACITY = 4096      # records per native call; more are counted
READ, WRITE, ATOMIC = 0, 1, 2
KINDS = {1: "RAW", 2: "WAR", 3: "WAW", 4: "ATOMIC", 5: "BARRIER", 6: "MASK"}
RACECHECK_KINDS, SYNCCHECK_KINDS = (1, 2, 3, 4), (5, 6)
BARRIER_HAZARD, MASK_HAZARD = 5, 6
# synccheck: a sync point's barrier id field carries this bit for an aligned barrier (bar.sync,
# barrier.sync.aligned), whose threads must all wait at the same instruction
ALIGNED_BARRIER = 0x100

# entry fields (i32 index): 0 block tag; from WRITE_AT the last plain write, from ATOMIC_AT the
# last atomic, from READ_AT the first read of the interval, each (thread + 1 (0: none), block
# epoch, warp epoch, PTX line); MANY_AT: other threads read too
WRITE_AT, ATOMIC_AT, READ_AT, MANY_AT = 1, 5, 9, 13


def _record(name: str, at: int) -> str:
    """IR loading a record of the entry %e as %<name>_t1 (thread + 1), %<name>_t, its
    epochs and line, and %c_<name>: whether it is concurrent with this access."""
    return "\n".join([
        f"  %{name}_t1_p = getelementptr i32, ptr %e, i64 {at}",
        f"  %{name}_t1 = load i32, ptr %{name}_t1_p",
        f"  %{name}_be_p = getelementptr i32, ptr %e, i64 {at + 1}",
        f"  %{name}_be = load i32, ptr %{name}_be_p",
        f"  %{name}_we_p = getelementptr i32, ptr %e, i64 {at + 2}",
        f"  %{name}_we = load i32, ptr %{name}_we_p",
        f"  %{name}_line_p = getelementptr i32, ptr %e, i64 {at + 3}",
        f"  %{name}_line = load i32, ptr %{name}_line_p",
        f"  %{name}_t = sub i32 %{name}_t1, 1",
        f"  %{name}_has = icmp ne i32 %{name}_t1, 0",
        f"  %{name}_cc = call i1 @race_concurrent(i32 %me, i32 %be, i32 %we, i32 %{name}_t, "
        f"i32 %{name}_be, i32 %{name}_we)",
        f"  %c_{name} = and i1 %{name}_has, %{name}_cc"])


LOADS = "\n".join([_record("w", WRITE_AT), _record("a", ATOMIC_AT), _record("r", READ_AT),
                   f"  %many_p = getelementptr i32, ptr %e, i64 {MANY_AT}",
                   "  %many = load i32, ptr %many_p"])
CLEAR = "\n".join(f"  %z{k} = getelementptr i32, ptr %e, i64 {k}\n  store i32 0, ptr %z{k}"
                   for k in (WRITE_AT, ATOMIC_AT, READ_AT, MANY_AT))

RACE_IR = f"""
; racecheck (dptx/cpu/renderer/racecheck_ir.py): ordered(t, be, we) when another thread's access
; at (be, we) is separated from this thread's by a barrier, or a warp sync within one warp
define internal i1 @race_concurrent(i32 %me, i32 %mybe, i32 %mywe, i32 %other, i32 %be, i32 %we) alwaysinline {{
entry:
  %same = icmp eq i32 %other, %me
  %bsame = icmp eq i32 %be, %mybe
  %mw = lshr i32 %me, 5
  %ow = lshr i32 %other, 5
  %warp = icmp eq i32 %mw, %ow
  %wdiff = icmp ne i32 %we, %mywe
  %wordered = and i1 %warp, %wdiff
  %unordered = xor i1 %wordered, true
  %c0 = and i1 %bsame, %unordered
  %notme = xor i1 %same, true
  %c = and i1 %c0, %notme
  ret i1 %c
}}

define internal ptr @race_thread(ptr %ctx, ptr %ti) alwaysinline {{
entry:
  %tp = getelementptr i32, ptr %ti, i64 6
  %t = load i32, ptr %tp
  %bp = getelementptr i8, ptr %ti, i64 32
  %b64 = load i64, ptr %bp
  %b = trunc i64 %b64 to i32
  %tag = add i32 %b, 1
{ctx_load("eps", "race_epochs", "ptr")}  %t64 = zext i32 %t to i64
  %eoff = mul i64 %t64, {EPOCH_BYTES}
  %ep = getelementptr i8, ptr %eps, i64 %eoff
  %old = load i32, ptr %ep
  %fresh = icmp ne i32 %old, %tag
  br i1 %fresh, label %reset, label %done
reset:
  store i32 %tag, ptr %ep
  %b1 = getelementptr i32, ptr %ep, i64 1
  store i32 0, ptr %b1
  %w1 = getelementptr i32, ptr %ep, i64 2
  store i32 0, ptr %w1
  br label %done
done:
  ret ptr %ep
}}

; a sync point resumed: which = 0 a block barrier, 1 a warp synchronization
define internal void @race_epoch(ptr %ctx, ptr %ti, i32 %which) noinline {{
entry:
  %ep = call ptr @race_thread(ptr %ctx, ptr %ti)
  %isbar = icmp eq i32 %which, 0
  %idx = select i1 %isbar, i64 1, i64 2
  %p = getelementptr i32, ptr %ep, i64 %idx
  %v = load i32, ptr %p
  %v1 = add i32 %v, 1
  store i32 %v1, ptr %p
  ret void
}}

define internal void @race_record(ptr %ctx, i64 %kind, i64 %off, i32 %me, i32 %line, i32 %other, i32 %oline, i32 %tag, i64 %size) noinline cold {{
entry:
{ctx_load("hz", "hazards", "ptr")}  %n = atomicrmw add ptr %hz, i64 1 monotonic
  %room = icmp ult i64 %n, {HAZARD_CAPACITY}
  br i1 %room, label %fill, label %done
fill:
  %base0 = mul i64 %n, {HAZARD_FIELDS}
  %base = add i64 %base0, 1
  %r = getelementptr i64, ptr %hz, i64 %base
  store i64 %kind, ptr %r
  %f1 = getelementptr i64, ptr %r, i64 1
  store i64 %off, ptr %f1
  %me64 = zext i32 %me to i64
  %f2 = getelementptr i64, ptr %r, i64 2
  store i64 %me64, ptr %f2
  %l64 = zext i32 %line to i64
  %f3 = getelementptr i64, ptr %r, i64 3
  store i64 %l64, ptr %f3
  %o64 = sext i32 %other to i64
  %f4 = getelementptr i64, ptr %r, i64 4
  store i64 %o64, ptr %f4
  %ol64 = zext i32 %oline to i64
  %f5 = getelementptr i64, ptr %r, i64 5
  store i64 %ol64, ptr %f5
  %b0 = sub i32 %tag, 1
  %b64 = zext i32 %b0 to i64
  %f6 = getelementptr i64, ptr %r, i64 6
  store i64 %b64, ptr %f6
  %f7 = getelementptr i64, ptr %r, i64 7
  store i64 %size, ptr %f7
  br label %done
done:
  ret void
}}

; synccheck: a warp synchronization (bar.warp.sync, shfl.sync, vote.sync...) whose member mask
; leaves out the calling thread (the ISA: undefined)
define internal void @sync_mask(ptr %ctx, ptr %ti, i32 %mask, i32 %line) noinline {{
entry:
  %tp = getelementptr i32, ptr %ti, i64 6
  %me = load i32, ptr %tp
  %lane = and i32 %me, 31
  %bit0 = lshr i32 %mask, %lane
  %bit = and i32 %bit0, 1
  %out = icmp eq i32 %bit, 0
  br i1 %out, label %bad, label %done
bad:
  %bp = getelementptr i8, ptr %ti, i64 32
  %b64 = load i64, ptr %bp
  %b = trunc i64 %b64 to i32
  %tag = add i32 %b, 1
  %m64 = zext i32 %mask to i64
  call void @race_record(ptr %ctx, i64 {MASK_HAZARD}, i64 %m64, i32 %me, i32 %line, i32 -1, i32 0, i32 %tag, i64 0)
  br label %done
done:
  ret void
}}

; an access of %size bytes at device address %addr: kind 0 read, 1 write, 2 atomic
define internal void @race_note(ptr %ctx, ptr %ti, i64 %addr, i64 %size, i32 %kind, i32 %line) noinline {{
entry:
  %win = lshr i64 %addr, {L.WINDOW_SHIFT}
  %isshared = icmp eq i64 %win, {L.SHARED_WINDOW}
  br i1 %isshared, label %go, label %done
go:
  %off = and i64 %addr, {L.OFFSET_MASK}
  %ep = call ptr @race_thread(ptr %ctx, ptr %ti)
  %tag = load i32, ptr %ep
  %bp = getelementptr i32, ptr %ep, i64 1
  %be = load i32, ptr %bp
  %wp = getelementptr i32, ptr %ep, i64 2
  %we = load i32, ptr %wp
  %tp = getelementptr i32, ptr %ti, i64 6
  %me = load i32, ptr %tp
  %me1 = add i32 %me, 1
{ctx_load("shadow", "race_shadow", "ptr")}  %isread = icmp eq i32 %kind, {READ}
  %iswrite = icmp eq i32 %kind, {WRITE}
  %isatomic = icmp eq i32 %kind, {ATOMIC}
  %notread = xor i1 %isread, true
  %notatomic = xor i1 %isatomic, true
  br label %loop
loop:
  %i = phi i64 [0, %go], [%i1, %next]
  %found = phi i1 [false, %go], [%found1, %next]
  %at = add i64 %off, %i
  %eoff = mul i64 %at, {SHADOW_BYTES}
  %e = getelementptr i8, ptr %shadow, i64 %eoff
  %etag = load i32, ptr %e
  %ours = icmp eq i32 %etag, %tag
  br i1 %ours, label %check, label %claim
claim:
  ; an entry of an earlier block: empty now
  store i32 %tag, ptr %e
{CLEAR}
  br label %check
check:
{LOADS}
  ; a concurrent plain write: RAW (read), WAW (write), ATOMIC (atomic)
  %h_w = and i1 %c_w, true
  ; a concurrent atomic: a plain access beside it (two atomics never race)
  %h_a = and i1 %c_a, %notatomic
  ; concurrent reads (another reader, or the first reader not this thread): WAR, ATOMIC
  %others = icmp ne i32 %many, 0
  %samerb = icmp eq i32 %r_be, %be
  %manyc0 = and i1 %others, %samerb
  %has_r = icmp ne i32 %r_t1, 0
  %manyc = and i1 %manyc0, %has_r
  %c_rr = or i1 %c_r, %manyc
  %h_r = and i1 %c_rr, %notread
  %any0 = or i1 %h_w, %h_a
  %any = or i1 %any0, %h_r
  %first = xor i1 %found, true
  %report = and i1 %any, %first
  br i1 %report, label %hazard, label %update
hazard:
  ; kind: 1 RAW, 2 WAR, 3 WAW, 4 ATOMIC
  %k_w0 = select i1 %isread, i64 1, i64 3
  %k_w = select i1 %isatomic, i64 4, i64 %k_w0
  %k_r = select i1 %isatomic, i64 4, i64 2
  %k_1 = select i1 %h_r, i64 %k_r, i64 4
  %k = select i1 %h_w, i64 %k_w, i64 %k_1
  %o_1 = select i1 %h_r, i32 %r_t, i32 %a_t
  %other = select i1 %h_w, i32 %w_t, i32 %o_1
  %ol_1 = select i1 %h_r, i32 %r_line, i32 %a_line
  %oline = select i1 %h_w, i32 %w_line, i32 %ol_1
  call void @race_record(ptr %ctx, i64 %k, i64 %at, i32 %me, i32 %line, i32 %other, i32 %oline, i32 %tag, i64 %size)
  br label %update
update:
  %found1 = or i1 %found, %report
  br i1 %isread, label %noteread, label %notewrite
notewrite:
  %slot = select i1 %isatomic, i64 {ATOMIC_AT}, i64 {WRITE_AT}
  %sp = getelementptr i32, ptr %e, i64 %slot
  store i32 %me1, ptr %sp
  %sp1 = getelementptr i32, ptr %sp, i64 1
  store i32 %be, ptr %sp1
  %sp2 = getelementptr i32, ptr %sp, i64 2
  store i32 %we, ptr %sp2
  %sp3 = getelementptr i32, ptr %sp, i64 3
  store i32 %line, ptr %sp3
  br label %next
noteread:
  ; the first reader of this interval stays; a second thread marks others
  %keep = and i1 %has_r, %samerb
  br i1 %keep, label %more, label %fresh
more:
  %byother = icmp ne i32 %r_t, %me
  %m32 = zext i1 %byother to i32
  %m = or i32 %many, %m32
  store i32 %m, ptr %many_p
  br label %next
fresh:
  store i32 %me1, ptr %r_t1_p
  store i32 %be, ptr %r_be_p
  store i32 %we, ptr %r_we_p
  store i32 %line, ptr %r_line_p
  store i32 0, ptr %many_p
  br label %next
next:
  %i1 = add i64 %i, 1
  %more1 = icmp ult i64 %i1, %size
  br i1 %more1, label %loop, label %done
done:
  ret void
}}
"""
