"""racecheck's runtime (``dptx sanitize --tool racecheck``): hazards between the threads of a
block on shared and global memory, and between blocks on global memory, in the per-thread
forms, which a race-checked build always takes (synccheck's and initcheck's checks too).

Every access to shared memory (through .shared or a generic address into it) and to a global
buffer with a shadow calls ``@race_note`` with its address, size, kind (read, write, atomic),
PTX line and ordering event. Each thread counts the block barriers it has passed (and
completed mbarrier phases) and the warp synchronizations (``__syncwarp``, shuffles, votes,
matrix operations) since (``@race_epoch``, called where a sync point resumes). Two accesses of
different threads of a block are ordered when a barrier lies between them (their block epochs
differ) or, in one warp, a warp synchronization does (their warp epochs differ); otherwise
they are concurrent, and a write concurrent with another access to the same byte is a hazard
(a write after a read: WAR; after a write: WAW; a read after a write: RAW; an atomic and a
plain access: ATOMIC). Warp-synchronous code that exchanges through shared memory without
``__syncwarp`` is therefore a hazard, as Volta's independent thread scheduling makes it one.
Between blocks: see BLOCK_SLOTS.

Shadow memory: one entry of SHADOW_BYTES per byte of the block's shared memory (of
GLOBAL_SHADOW_BYTES per byte of a global buffer), tagged with the block (a new block finds
entries of the old one empty, without clearing; of a global buffer, compared with it first),
holding the last plain write, the last atomic and the first read of the interval (each packed
in 64 bits: thread, line, epochs) and whether other threads read too. Per thread: its block
(tag) and its two epochs. Each access records at most one hazard (the first byte that shows
one) in the launch's hazard records (``HAZARD_FIELDS`` each), counted past their capacity."""
from __future__ import annotations

from . import address_space as L
from .runtime_ir import ctx_load

SHADOW_BYTES = 32           # per byte of shared memory: i32 block tag, i32 "others read
#                             too", then three packed records (i64): the last plain write,
#                             the last atomic, the first read of the interval
EPOCH_BYTES = 16            # i32 x 4 per thread: block tag, block epoch, warp epoch
GLOBAL_SHADOW_BYTES = 48    # per byte of a global buffer: the same, then the eras (i32) of
#                             the three records (racecheck between blocks, below)
HAZARD_FIELDS = 9           # i64: kind, shared offset, thread, line, other thread, other line,
#                             block, size, the other access's block (-1: the same block)
HAZARD_CAPACITY = 4096      # records per native call; more are counted
READ, WRITE, ATOMIC = 0, 1, 2
KINDS = {1: "RAW", 2: "WAR", 3: "WAW", 4: "ATOMIC", 5: "BARRIER", 6: "MASK", 7: "UNINIT",
         8: "EXITED"}
RACECHECK_KINDS, SYNCCHECK_KINDS, INITCHECK_KINDS = (1, 2, 3, 4), (5, 6, 8), (7,)
UNINIT_HAZARD = 7
BARRIER_HAZARD, MASK_HAZARD, EXITED_HAZARD = 5, 6, 8
# synccheck: a sync point's barrier id field carries this bit for an aligned barrier (bar.sync,
# barrier.sync.aligned), whose threads must all wait at the same instruction
ALIGNED_BARRIER = 0x100

# racecheck between blocks: the blocks of a launch run one after another, and the shadow of a
# global word keeps the last block's records with their eras (a count of ordering events of
# the launch). A block releases what it did before a fence of GPU or system scope once an
# atomic or a strong store follows the fence (or at once, by a .release operation); it
# acquires by an atomic, a fence or a strong load. An access of another block is ordered
# before this one when it was released (its era before the release) and this block acquired
# since; an atomic when this block acquired since it. ``race_blocks`` holds the count, then a
# slot per block (BLOCK_SLOT_BYTES, indexed by block modulo the slot count): i32 block tag,
# its release era, its acquire era, its last fence's era. Two atomics, two strong accesses,
# never race; the location a release and an acquire go through is not compared (an ordering
# through another word counts too: a race may go unreported, never a false one).
BLOCK_SLOT_BYTES = 16
BLOCK_SLOTS = 1 << 16
ORDER_FENCE, ORDER_COMPLETE, ORDER_RELEASE, ORDER_ACQUIRE = 1, 2, 4, 8
ORDER_STRONG = 16   # a strong load or store (.volatile, .relaxed, .acquire, .release): on global
#                     memory, morally strong as an atomic is (two never race)



def order_event(inst) -> int:
    """The ORDER_* bits of an instruction between blocks: a fence of GPU or system scope
    (membar.gl/.sys, fence.sc/.acq_rel), an atomic (completes a fence's release, acquires;
    releases itself with .release/.acq_rel), a strong load (.volatile, .relaxed, .acquire:
    acquires) or store (completes a fence's release; .release releases). CTA-scope operations
    order nothing between blocks; 0 for the rest."""
    mods = set(inst.modifiers)
    if mods & {"cta", "proxy"} or inst.opcode not in ("membar", "fence", "atom", "red", "ld", "st"):
        return 0
    if inst.opcode in ("membar", "fence"):
        return ORDER_FENCE
    releases = ORDER_RELEASE if mods & {"release", "acq_rel"} else 0
    if inst.opcode == "atom":
        return ORDER_COMPLETE | ORDER_ACQUIRE | releases
    if inst.opcode == "red":
        return ORDER_COMPLETE | releases
    if not mods & {"volatile", "relaxed", "acquire", "release", "mmio"}:
        return 0        # a weak access
    return ORDER_STRONG | (ORDER_ACQUIRE if inst.opcode == "ld" else ORDER_COMPLETE | releases)


# A record packs an access into an i64 (0: none): thread + 1 in bits 0-10 (blocks have at most
# 1024 threads), its PTX line in bits 11-31, its block epoch in bits 32-51 and its warp epoch
# in bits 52-63 (epochs modulo 2^20 and 2^12: a record is compared with the accesses that
# follow it, never that many synchronizations later in practice)
LINE_SHIFT, EPOCH_SHIFT, WARP_SHIFT = 11, 32, 52
WRITE_AT, ATOMIC_AT, READ_AT = 8, 16, 24      # byte offsets of the records in an entry


def _record(name: str, at: int) -> str:
    """IR loading the record at byte ``at`` of entry %e as %<name> (and its pointer
    %<name>_p), its thread %<name>_t and line %<name>_line, and %c_<name>: whether it is
    concurrent with this access (another thread, the same block epoch, and not in this warp
    behind a warp synchronization)."""
    return "\n".join([
        f"  %{name}_p = getelementptr i8, ptr %e, i64 {at}",
        f"  %{name} = load i64, ptr %{name}_p",
        f"  %{name}_t1 = and i64 %{name}, 2047",
        f"  %{name}_t64 = sub i64 %{name}_t1, 1",
        f"  %{name}_t = trunc i64 %{name}_t64 to i32",
        f"  %{name}_l0 = lshr i64 %{name}, {LINE_SHIFT}",
        f"  %{name}_l1 = and i64 %{name}_l0, 2097151",
        f"  %{name}_line = trunc i64 %{name}_l1 to i32",
        f"  %{name}_x = xor i64 %{name}, %mine",
        f"  %{name}_be0 = lshr i64 %{name}_x, {EPOCH_SHIFT}",
        f"  %{name}_be1 = and i64 %{name}_be0, 1048575",
        f"  %{name}_sameb = icmp eq i64 %{name}_be1, 0",
        f"  %{name}_wed = icmp uge i64 %{name}_x, {1 << WARP_SHIFT}",
        f"  %{name}_w = lshr i64 %{name}_t64, 5",
        f"  %{name}_samew = icmp eq i64 %{name}_w, %mywarp",
        f"  %{name}_wsync = and i1 %{name}_samew, %{name}_wed",
        f"  %{name}_unsynced = xor i1 %{name}_wsync, true",
        f"  %{name}_other = icmp ne i64 %{name}_t1, %me1_64",
        f"  %{name}_has = icmp ne i64 %{name}_t1, 0",
        f"  %{name}_c0 = and i1 %{name}_has, %{name}_other",
        f"  %{name}_c1 = and i1 %{name}_c0, %{name}_sameb",
        f"  %c_{name} = and i1 %{name}_c1, %{name}_unsynced"])


LOADS = "\n".join([_record("w", WRITE_AT), _record("a", ATOMIC_AT), _record("r", READ_AT),
                   "  %many_p = getelementptr i8, ptr %e, i64 4",
                   "  %many = load i32, ptr %many_p"])
CLEAR = "\n".join(f"  %z{k} = getelementptr i8, ptr %e, i64 {k}\n  store i64 0, ptr %z{k}"
                   for k in (WRITE_AT, ATOMIC_AT, READ_AT)) + \
    "\n  %zm = getelementptr i8, ptr %e, i64 4\n  store i32 0, ptr %zm"

RACE_IR = f"""
; racecheck (dptx/cpu/renderer/racecheck_ir.py)
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
  ; (the block's ordering slot, for racecheck between blocks)
  %slot = call ptr @race_slot(ptr %ctx, i32 %tag, i1 true)
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

define internal void @race_record(ptr %ctx, i64 %kind, i64 %off, i32 %me, i32 %line, i32 %other, i32 %oline, i32 %tag, i64 %size, i32 %otag) noinline cold {{
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
  %ob0 = sub i32 %otag, 1
  %ob = sext i32 %ob0 to i64
  %f8 = getelementptr i64, ptr %r, i64 8
  store i64 %ob, ptr %f8
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
  call void @race_record(ptr %ctx, i64 {MASK_HAZARD}, i64 %m64, i32 %me, i32 %line, i32 -1, i32 0, i32 %tag, i64 0, i32 0)
  br label %done
done:
  ret void
}}

; one entry %e (of shared byte %at, tag %tag current) against an access (%record, %mine: it
; packed without its line; %found: a hazard of this access was recorded already): checks,
; records the first hazard, notes the access; returns %found or'd with the new one. Bit 31 of
; the "many" field marks a word whose bytes have entries of their own (race_note). %global: an
; entry of a global buffer's shadow, whose records keep their eras (%era: now).
define internal i1 @race_entry(ptr %ctx, ptr %e, i64 %at, i64 %record, i64 %mine, i64 %me1_64, i64 %mywarp, i32 %me, i32 %line, i32 %kind, i32 %tag, i64 %size, i1 %found, i1 %global, i32 %era) alwaysinline {{
entry:
  %isread = icmp eq i32 %kind, {READ}
  %isatomic = icmp eq i32 %kind, {ATOMIC}
  %notread = xor i1 %isread, true
  %notatomic = xor i1 %isatomic, true
{LOADS}
  ; a concurrent plain write: RAW (read), WAW (write), ATOMIC (atomic); a concurrent atomic
  ; beside a plain access (two atomics never race); concurrent reads (the first reader, or
  ; others in this block epoch) before a write or an atomic: WAR, ATOMIC
  %h_w = and i1 %c_w, true
  %h_a = and i1 %c_a, %notatomic
  %others0 = and i32 %many, 1
  %others = icmp ne i32 %others0, 0
  %manyc0 = and i1 %others, %r_sameb
  %manyc = and i1 %manyc0, %r_has
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
  call void @race_record(ptr %ctx, i64 %k, i64 %at, i32 %me, i32 %line, i32 %other, i32 %oline, i32 %tag, i64 %size, i32 0)
  br label %update
update:
  %found1 = or i1 %found, %report
  br i1 %global, label %noteera, label %noted
noteera:
  ; the era of the record this access becomes (the latest read's for reads)
  %eraat = select i1 %isread, i64 40, i64 32
  %eraat1 = select i1 %isatomic, i64 36, i64 %eraat
  %erap = getelementptr i8, ptr %e, i64 %eraat1
  store i32 %era, ptr %erap
  br label %noted
noted:
  br i1 %isread, label %noteread, label %notewrite
notewrite:
  %slot = select i1 %isatomic, ptr %a_p, ptr %w_p
  store i64 %record, ptr %slot
  ret i1 %found1
noteread:
  ; the first reader of this block epoch stays; another thread marks "others"
  %keep = and i1 %r_has, %r_sameb
  br i1 %keep, label %more, label %fresh
more:
  %byother = icmp ne i64 %r_t1, %me1_64
  %m32 = zext i1 %byother to i32
  %m = or i32 %many, %m32
  store i32 %m, ptr %many_p
  ret i1 %found1
fresh:
  store i64 %record, ptr %r_p
  %split = and i32 %many, -2147483648
  store i32 %split, ptr %many_p
  ret i1 %found1
}}

; the entry of byte %at, made current (an entry of an earlier block is empty now; of a global
; buffer, it is compared with this access first: race_blocks)
define internal ptr @race_current(ptr %ctx, ptr %shadow, i64 %at, i32 %tag, i64 %stride, i1 %global, i32 %kind, i32 %me, i32 %line, i64 %size) alwaysinline {{
entry:
  %eoff = mul i64 %at, %stride
  %e = getelementptr i8, ptr %shadow, i64 %eoff
  %etag = load i32, ptr %e
  %ours = icmp eq i32 %etag, %tag
  br i1 %ours, label %done, label %other
other:
  %used = icmp ne i32 %etag, 0
  %between = and i1 %used, %global
  br i1 %between, label %blocks, label %claim
blocks:
  call void @race_blocks(ptr %ctx, ptr %e, i64 %at, i32 %kind, i32 %me, i32 %line, i32 %tag, i64 %size)
  br label %claim
claim:
  store i32 %tag, ptr %e
{CLEAR}
  br label %done
done:
  ret ptr %e
}}

; the slot of block %tag in race_blocks (made the block's when %claim; null: none, or another
; block's)
define internal ptr @race_slot(ptr %ctx, i32 %tag, i1 %claim) alwaysinline {{
entry:
{ctx_load("st", "race_blocks", "ptr")}  %none = icmp eq ptr %st, null
  br i1 %none, label %absent, label %look
look:
  %t64 = zext i32 %tag to i64
  %i = urem i64 %t64, {BLOCK_SLOTS}
  %off0 = mul i64 %i, {BLOCK_SLOT_BYTES}
  %off = add i64 %off0, 8
  %p = getelementptr i8, ptr %st, i64 %off
  %old = load i32, ptr %p
  %ours = icmp eq i32 %old, %tag
  br i1 %ours, label %found, label %notours
notours:
  br i1 %claim, label %take, label %absent
take:
  store i32 %tag, ptr %p
  %f = getelementptr i8, ptr %p, i64 4
  store i32 0, ptr %f
  %f2 = getelementptr i8, ptr %p, i64 8
  store i64 0, ptr %f2
  br label %found
found:
  ret ptr %p
absent:
  ret ptr null
}}

; the launch's next era (the count at %erap, advanced)
define internal i32 @race_tick(ptr %erap) alwaysinline {{
entry:
  %e0 = load i32, ptr %erap
  %e1 = add i32 %e0, 1
  store i32 %e1, ptr %erap
  ret i32 %e1
}}

; an ordering event of this thread's block (racecheck between blocks): %ev holds ORDER_* bits
define internal void @race_order(ptr %ctx, ptr %ti, i32 %ev) noinline {{
entry:
  %bp = getelementptr i8, ptr %ti, i64 32
  %b64 = load i64, ptr %bp
  %b = trunc i64 %b64 to i32
  %tag = add i32 %b, 1
  %s = call ptr @race_slot(ptr %ctx, i32 %tag, i1 true)
  %none = icmp eq ptr %s, null
  br i1 %none, label %done, label %go
go:
{ctx_load("erap", "race_blocks", "ptr")}  %relp = getelementptr i8, ptr %s, i64 4
  %acqp = getelementptr i8, ptr %s, i64 8
  %fencep = getelementptr i8, ptr %s, i64 12
  %fb = and i32 %ev, {ORDER_FENCE}
  %isfence = icmp ne i32 %fb, 0
  br i1 %isfence, label %fence, label %complete
fence:
  ; what came before is released by the next atomic or strong store; a fence acquires too
  ; (a strong load, then the fence)
  %e1 = call i32 @race_tick(ptr %erap)
  store i32 %e1, ptr %fencep
  store i32 %e1, ptr %acqp
  br label %complete
complete:
  %cb = and i32 %ev, {ORDER_COMPLETE}
  %iscomplete = icmp ne i32 %cb, 0
  %fenced = load i32, ptr %fencep
  %released = load i32, ptr %relp
  %later = icmp ugt i32 %fenced, %released
  %publish = and i1 %iscomplete, %later
  br i1 %publish, label %publishing, label %release
publishing:
  store i32 %fenced, ptr %relp
  br label %release
release:
  %rb = and i32 %ev, {ORDER_RELEASE}
  %isrelease = icmp ne i32 %rb, 0
  br i1 %isrelease, label %releasing, label %acquire
releasing:
  %e3 = call i32 @race_tick(ptr %erap)
  store i32 %e3, ptr %relp
  br label %acquire
acquire:
  %ab = and i32 %ev, {ORDER_ACQUIRE}
  %isacquire = icmp ne i32 %ab, 0
  br i1 %isacquire, label %acquiring, label %done
acquiring:
  %e5 = call i32 @race_tick(ptr %erap)
  store i32 %e5, ptr %acqp
  br label %done
done:
  ret void
}}

; racecheck between blocks: the entry %e of global byte %at holds the records of another block
; (an earlier one: blocks run one after another); each is compared with this access unless
; ordered before it (see BLOCK_SLOTS). An old block whose slot went to another is not compared.
define internal void @race_blocks(ptr %ctx, ptr %e, i64 %at, i32 %kind, i32 %me, i32 %line, i32 %tag, i64 %size) noinline {{
entry:
  %etag = load i32, ptr %e
  %os = call ptr @race_slot(ptr %ctx, i32 %etag, i1 false)
  %unknown = icmp eq ptr %os, null
  br i1 %unknown, label %done, label %known
known:
  %ms = call ptr @race_slot(ptr %ctx, i32 %tag, i1 true)
  %relp = getelementptr i8, ptr %os, i64 4
  %rel = load i32, ptr %relp
  %acqp = getelementptr i8, ptr %ms, i64 8
  %acq = load i32, ptr %acqp
  %relsome = icmp ne i32 %rel, 0
  %relbefore = icmp ult i32 %rel, %acq
  %synced = and i1 %relsome, %relbefore
  %isread = icmp eq i32 %kind, {READ}
  %isatomic = icmp eq i32 %kind, {ATOMIC}
  %notread = xor i1 %isread, true
  %notatomic = xor i1 %isatomic, true
  %w_p = getelementptr i8, ptr %e, i64 {WRITE_AT}
  %w = load i64, ptr %w_p
  %a_p = getelementptr i8, ptr %e, i64 {ATOMIC_AT}
  %a = load i64, ptr %a_p
  %r_p = getelementptr i8, ptr %e, i64 {READ_AT}
  %r = load i64, ptr %r_p
  %ew_p = getelementptr i8, ptr %e, i64 32
  %ew = load i32, ptr %ew_p
  %ea_p = getelementptr i8, ptr %e, i64 36
  %ea = load i32, ptr %ea_p
  %er_p = getelementptr i8, ptr %e, i64 40
  %er = load i32, ptr %er_p
  ; plain accesses: released (before the release) and acquired since; atomics: acquired since
  %w_rel = icmp ult i32 %ew, %rel
  %w_ord = and i1 %synced, %w_rel
  %r_rel = icmp ult i32 %er, %rel
  %r_ord = and i1 %synced, %r_rel
  %a_ord = icmp ult i32 %ea, %acq
  %w_has = icmp ne i64 %w, 0
  %a_has = icmp ne i64 %a, 0
  %r_has = icmp ne i64 %r, 0
  %w_un = xor i1 %w_ord, true
  %a_un = xor i1 %a_ord, true
  %r_un = xor i1 %r_ord, true
  %h_w = and i1 %w_has, %w_un
  %h_a0 = and i1 %a_has, %a_un
  %h_a = and i1 %h_a0, %notatomic
  %h_r0 = and i1 %r_has, %r_un
  %h_r = and i1 %h_r0, %notread
  %any0 = or i1 %h_w, %h_a
  %any = or i1 %any0, %h_r
  br i1 %any, label %hazard, label %done
hazard:
  %k_w0 = select i1 %isread, i64 1, i64 3
  %k_w = select i1 %isatomic, i64 4, i64 %k_w0
  %k_r = select i1 %isatomic, i64 4, i64 2
  %k_1 = select i1 %h_r, i64 %k_r, i64 4
  %k = select i1 %h_w, i64 %k_w, i64 %k_1
  %rec_1 = select i1 %h_r, i64 %r, i64 %a
  %rec = select i1 %h_w, i64 %w, i64 %rec_1
  %t1 = and i64 %rec, 2047
  %t64 = sub i64 %t1, 1
  %other = trunc i64 %t64 to i32
  %l0 = lshr i64 %rec, {LINE_SHIFT}
  %l1 = and i64 %l0, 2097151
  %oline = trunc i64 %l1 to i32
  call void @race_record(ptr %ctx, i64 %k, i64 %at, i32 %me, i32 %line, i32 %other, i32 %oline, i32 %tag, i64 %size, i32 %etag)
  br label %done
done:
  ret void
}}

; the host address of the map (a shadow, an init map) of the window of device address %addr
; in the per-window table %maps (null: no table; 0: the window has none), the window's first
; mapped address in *%first
define internal i64 @window_map(ptr %ctx, ptr %maps, i64 %addr, ptr %first) alwaysinline {{
entry:
  %none = icmp eq ptr %maps, null
  br i1 %none, label %absent, label %look
look:
  %win = lshr i64 %addr, {L.WINDOW_SHIFT}
{ctx_load("nbuf", "nbuf")}  %inside = icmp ult i64 %win, %nbuf
  br i1 %inside, label %lookup, label %absent
lookup:
  %mp = getelementptr i64, ptr %maps, i64 %win
  %m = load i64, ptr %mp
{ctx_load("tab", "buftable", "ptr")}  %row = mul i64 %win, {L.TABLE_ROW}
  %fp = getelementptr i64, ptr %tab, i64 %row
  %f = load i64, ptr %fp
  store i64 %f, ptr %first
  ret i64 %m
absent:
  ret i64 0
}}

; initcheck: an access of %size bytes at device address %addr of a buffer with an init map (a
; byte per byte of the buffer's window, 0: nothing wrote it; ctx init_maps: the map's host
; address per window, 0 for none): a read or an atomic of an unwritten byte is a hazard (the
; first of the access), a write or an atomic marks the bytes written
define internal void @init_note(ptr %ctx, ptr %ti, i64 %addr, i64 %size, i32 %kind, i32 %line) noinline {{
entry:
  %firstp = alloca i64
{ctx_load("maps", "init_maps", "ptr")}  %m = call i64 @window_map(ptr %ctx, ptr %maps, i64 %addr, ptr %firstp)
  %nomap = icmp eq i64 %m, 0
  br i1 %nomap, label %done, label %go
go:
  %first = load i64, ptr %firstp
  %rel = sub i64 %addr, %first
  %mapp = inttoptr i64 %m to ptr
  %isread = icmp eq i32 %kind, {READ}
  %iswrite = icmp eq i32 %kind, {WRITE}
  %notread = xor i1 %isread, true
  %notwrite = xor i1 %iswrite, true
  br label %loop
loop:
  %i = phi i64 [0, %go], [%i1, %next]
  %found = phi i1 [false, %go], [%found1, %next]
  %at = add i64 %rel, %i
  %bp = getelementptr i8, ptr %mapp, i64 %at
  %v = load i8, ptr %bp
  %unwritten = icmp eq i8 %v, 0
  %reads = and i1 %unwritten, %notwrite
  %first1 = xor i1 %found, true
  %report = and i1 %reads, %first1
  br i1 %report, label %hazard, label %mark
hazard:
  %tp = getelementptr i32, ptr %ti, i64 6
  %me = load i32, ptr %tp
  %blkp = getelementptr i8, ptr %ti, i64 32
  %b64 = load i64, ptr %blkp
  %b = trunc i64 %b64 to i32
  %tag = add i32 %b, 1
  %where = add i64 %addr, %i
  call void @race_record(ptr %ctx, i64 {UNINIT_HAZARD}, i64 %where, i32 %me, i32 %line, i32 -1, i32 0, i32 %tag, i64 %size, i32 0)
  br label %mark
mark:
  %found1 = or i1 %found, %report
  br i1 %notread, label %set, label %next
set:
  store i8 1, ptr %bp
  br label %next
next:
  %i1 = add i64 %i, 1
  %more = icmp ult i64 %i1, %size
  br i1 %more, label %loop, label %done
done:
  ret void
}}

; an access of %size bytes at device address %addr: kind 0 read, 1 write, 2 atomic; %order:
; the ordering event it is between blocks (ORDER_* bits, for global memory: race_order). Words
; (4 aligned bytes) that only whole-word accesses touched keep one entry, their first
; byte's; the first access to part of a word gives each of its bytes an entry of its own
; (copies of the word's) and marks the word (bit 31 of its first entry's "many" field)
define internal void @race_note(ptr %ctx, ptr %ti, i64 %addr, i64 %size, i32 %kind, i32 %line, i32 %order) noinline {{
entry:
  %gfirstp = alloca i64
  %win = lshr i64 %addr, {L.WINDOW_SHIFT}
  %isshared = icmp eq i64 %win, {L.SHARED_WINDOW}
  br i1 %isshared, label %sharedmem, label %globalmem
sharedmem:
{ctx_load("sshadow", "race_shadow", "ptr")}  %soff = and i64 %addr, {L.OFFSET_MASK}
  br label %go
globalmem:
  ; a buffer with a shadow of its own (ctx race_global, per window; 0: none): entries are
  ; found by device address, from the shadow moved back by the window's first address
{ctx_load("gmaps", "race_global", "ptr")}  %gm = call i64 @window_map(ptr %ctx, ptr %gmaps, i64 %addr, ptr %gfirstp)
  %gnomap = icmp eq i64 %gm, 0
  br i1 %gnomap, label %gunmapped, label %gready
gunmapped:
  ; a buffer without a shadow: still an ordering event
  %gordered = icmp ne i32 %order, 0
  br i1 %gordered, label %event, label %end
gready:
  %gfirst = load i64, ptr %gfirstp
  %gback = mul i64 %gfirst, {GLOBAL_SHADOW_BYTES}
  %gbase = sub i64 %gm, %gback
  %gshadow = inttoptr i64 %gbase to ptr
{ctx_load("gstate", "race_blocks", "ptr")}  %gera = load i32, ptr %gstate
  %gstrong0 = and i32 %order, {ORDER_STRONG}
  %gstrong = icmp ne i32 %gstrong0, 0
  %gkind = select i1 %gstrong, i32 {ATOMIC}, i32 %kind
  br label %go
go:
  %shadow = phi ptr [%sshadow, %sharedmem], [%gshadow, %gready]
  %off = phi i64 [%soff, %sharedmem], [%addr, %gready]
  %global = phi i1 [false, %sharedmem], [true, %gready]
  %stride = phi i64 [{SHADOW_BYTES}, %sharedmem], [{GLOBAL_SHADOW_BYTES}, %gready]
  %era = phi i32 [0, %sharedmem], [%gera, %gready]
  %akind = phi i32 [%kind, %sharedmem], [%gkind, %gready]
  %ep = call ptr @race_thread(ptr %ctx, ptr %ti)
  %tag = load i32, ptr %ep
  %bp = getelementptr i32, ptr %ep, i64 1
  %be = load i32, ptr %bp
  %wp = getelementptr i32, ptr %ep, i64 2
  %we = load i32, ptr %wp
  %tp = getelementptr i32, ptr %ti, i64 6
  %me = load i32, ptr %tp
  %me1 = add i32 %me, 1
  ; this access as a record (racecheck_ir's layout)
  %me1_64 = zext i32 %me1 to i64
  %me64 = zext i32 %me to i64
  %mywarp = lshr i64 %me64, 5
  %line64 = zext i32 %line to i64
  %lbits0 = and i64 %line64, 2097151
  %lbits = shl i64 %lbits0, {LINE_SHIFT}
  %be64 = zext i32 %be to i64
  %bbits0 = and i64 %be64, 1048575
  %bbits = shl i64 %bbits0, {EPOCH_SHIFT}
  %we64 = zext i32 %we to i64
  %wbits = shl i64 %we64, {WARP_SHIFT}
  %mine0 = or i64 %me1_64, %bbits
  %mine = or i64 %mine0, %wbits
  %record = or i64 %mine, %lbits
  %misal0 = or i64 %off, %size
  %misal = and i64 %misal0, 3
  %whole = icmp eq i64 %misal, 0
  br i1 %whole, label %words, label %bytes
words:
  %wend = lshr i64 %size, 2
  br label %wloop
wloop:
  %wi = phi i64 [0, %words], [%wi1, %wnext]
  %wf = phi i1 [false, %words], [%wf1, %wnext]
  %wsh = shl i64 %wi, 2
  %wat = add i64 %off, %wsh
  %we0 = call ptr @race_current(ptr %ctx, ptr %shadow, i64 %wat, i32 %tag, i64 %stride, i1 %global, i32 %akind, i32 %me, i32 %line, i64 %size)
  %wmp = getelementptr i8, ptr %we0, i64 4
  %wmany = load i32, ptr %wmp
  %wsplit = icmp slt i32 %wmany, 0
  br i1 %wsplit, label %wbytes, label %wone
wone:
  %wf_one = call i1 @race_entry(ptr %ctx, ptr %we0, i64 %wat, i64 %record, i64 %mine, i64 %me1_64, i64 %mywarp, i32 %me, i32 %line, i32 %akind, i32 %tag, i64 %size, i1 %wf, i1 %global, i32 %era)
  br label %wnext
wbytes:
  %wf_b0 = call i1 @race_entry(ptr %ctx, ptr %we0, i64 %wat, i64 %record, i64 %mine, i64 %me1_64, i64 %mywarp, i32 %me, i32 %line, i32 %akind, i32 %tag, i64 %size, i1 %wf, i1 %global, i32 %era)
  %wat1 = add i64 %wat, 1
  %we1 = call ptr @race_current(ptr %ctx, ptr %shadow, i64 %wat1, i32 %tag, i64 %stride, i1 %global, i32 %akind, i32 %me, i32 %line, i64 %size)
  %wf_b1 = call i1 @race_entry(ptr %ctx, ptr %we1, i64 %wat1, i64 %record, i64 %mine, i64 %me1_64, i64 %mywarp, i32 %me, i32 %line, i32 %akind, i32 %tag, i64 %size, i1 %wf_b0, i1 %global, i32 %era)
  %wat2 = add i64 %wat, 2
  %we2 = call ptr @race_current(ptr %ctx, ptr %shadow, i64 %wat2, i32 %tag, i64 %stride, i1 %global, i32 %akind, i32 %me, i32 %line, i64 %size)
  %wf_b2 = call i1 @race_entry(ptr %ctx, ptr %we2, i64 %wat2, i64 %record, i64 %mine, i64 %me1_64, i64 %mywarp, i32 %me, i32 %line, i32 %akind, i32 %tag, i64 %size, i1 %wf_b1, i1 %global, i32 %era)
  %wat3 = add i64 %wat, 3
  %we3 = call ptr @race_current(ptr %ctx, ptr %shadow, i64 %wat3, i32 %tag, i64 %stride, i1 %global, i32 %akind, i32 %me, i32 %line, i64 %size)
  %wf_b3 = call i1 @race_entry(ptr %ctx, ptr %we3, i64 %wat3, i64 %record, i64 %mine, i64 %me1_64, i64 %mywarp, i32 %me, i32 %line, i32 %akind, i32 %tag, i64 %size, i1 %wf_b2, i1 %global, i32 %era)
  br label %wnext
wnext:
  %wf1 = phi i1 [%wf_one, %wone], [%wf_b3, %wbytes]
  %wi1 = add i64 %wi, 1
  %wmore = icmp ult i64 %wi1, %wend
  br i1 %wmore, label %wloop, label %done
bytes:
  br label %bloop
bloop:
  %bi = phi i64 [0, %bytes], [%bi1, %bnext]
  %bf = phi i1 [false, %bytes], [%bf1, %bnext]
  %bat = add i64 %off, %bi
  %bw = and i64 %bat, -4
  %be0 = call ptr @race_current(ptr %ctx, ptr %shadow, i64 %bw, i32 %tag, i64 %stride, i1 %global, i32 %akind, i32 %me, i32 %line, i64 %size)
  %bmp = getelementptr i8, ptr %be0, i64 4
  %bmany = load i32, ptr %bmp
  %bsplit = icmp slt i32 %bmany, 0
  br i1 %bsplit, label %bentry, label %split
split:
  ; the word's bytes get entries of their own, copies of the word's
  %src8 = getelementptr i8, ptr %be0, i64 4
  %bmk = or i32 %bmany, -2147483648
  store i32 %bmk, ptr %src8
  br label %copy
copy:
  %cj = phi i64 [1, %split], [%cj1, %copy]
  %cat = add i64 %bw, %cj
  %coff = mul i64 %cat, %stride
  %cdst = getelementptr i8, ptr %shadow, i64 %coff
  call void @llvm.memcpy.p0.p0.i64(ptr %cdst, ptr %be0, i64 %stride, i1 false)
  %cmp = getelementptr i8, ptr %cdst, i64 4
  store i32 %bmany, ptr %cmp
  %cj1 = add i64 %cj, 1
  %cmore = icmp ult i64 %cj1, 4
  br i1 %cmore, label %copy, label %bentry
bentry:
  %bthis = call ptr @race_current(ptr %ctx, ptr %shadow, i64 %bat, i32 %tag, i64 %stride, i1 %global, i32 %akind, i32 %me, i32 %line, i64 %size)
  %bf_e = call i1 @race_entry(ptr %ctx, ptr %bthis, i64 %bat, i64 %record, i64 %mine, i64 %me1_64, i64 %mywarp, i32 %me, i32 %line, i32 %akind, i32 %tag, i64 %size, i1 %bf, i1 %global, i32 %era)
  br label %bnext
bnext:
  %bf1 = phi i1 [%bf_e, %bentry]
  %bi1 = add i64 %bi, 1
  %bmore = icmp ult i64 %bi1, %size
  br i1 %bmore, label %bloop, label %done
done:
  %ordered = icmp ne i32 %order, 0
  %between = and i1 %ordered, %global
  br i1 %between, label %event, label %end
event:
  call void @race_order(ptr %ctx, ptr %ti, i32 %order)
  br label %end
end:
  ret void
}}
"""
