"""LLVM IR of the block schedulers: ``@dptx_run(ctx, first_block, end_block)``, which runs a
chunk's blocks and the threads of each (DESIGN.md decision 4), in three forms: a plain loop
over threads (kernels without sync points, with the optional once-per-block bounds check),
resumable threads (a thread returns at a barrier or warp operation; the block's threads are
resumed once all arrived), and warps (the warp-vectorized form, a warp at a time).
The runtime helpers they call are ``runtime_ir``'s."""
from __future__ import annotations

from . import address_space as L
from .lowering.common import FRAME_FIELD, ST_SPIN, ST_YIELD
from .racecheck_ir import ALIGNED_BARRIER, BARRIER_HAZARD, EXITED_HAZARD
from .runtime_ir import CTX_ARG, ctx_load


# Sweeps over a block's threads in a row in which some spin and none moves before the block
# counts as stalled (a sweep of a few spinning threads takes well under a microsecond)
STALL_SWEEPS = 1024


# The shapes the schedulers repeat (a thread's frame, a field of it, an entry of a per-barrier
# array, a counted loop's head and latch) are written once below; each use names its SSA
# values (those the hand-written IR had: the IR generated is the same, byte for byte).


# values the schedulers' loops carry: (name, type, initial value)
_SWEEP_COUNTS = (("ndone", "i32", "0"), ("nwarp", "i32", "0"), ("nyield", "i32", "0"),
                 ("nspin", "i32", "0"), ("moved", "i1", "false"))   # a sweep's threads by state
_READY_COUNT = (("nready", "i32", "0"),)           # threads at warp operations that go on
_LIVE_COUNT = (("nlive", "i32", "0"),)             # threads that have not exited
_ANY_COMPLETE = (("any", "i1", "false"),)          # a barrier completes
_DONE_COUNT = (("ndone", "i32", "0"),)             # warps that ended


def _frame(i: str, prefix: str, frame_bytes: int) -> str:
    """%{prefix}fp: the frame of thread (or warp) %i of the block (through %{i}64 and
    %{prefix}fo)."""
    return (f"  %{i}64 = zext i32 %{i} to i64\n"
            f"  %{prefix}fo = mul i64 %{i}64, {frame_bytes}\n"
            f"  %{prefix}fp = getelementptr i8, ptr %frames, i64 %{prefix}fo\n")


def _field(ptr: str, frame: str, field: str) -> str:
    """%ptr: the address of a field of the frame %frame (FRAME_FIELD)."""
    return f"  %{ptr} = getelementptr i32, ptr %{frame}, i64 {FRAME_FIELD[field]}\n"


def _slot(ptr: str, array: str, index: str) -> str:
    """%ptr: the address of entry %index of a per-barrier (or per-warp) i32 array."""
    return f"  %{ptr} = getelementptr i32, ptr %{array}, i32 %{index}\n"


def _loop(label: str, i: str, enter: str, latch: str, done: str, bound: str, exit: str,
          body: str, carried: tuple = ()) -> str:
    """The head of a counted loop: %i from 0 (entering from %enter) while below ``bound``,
    stepped in %latch (``_step``); ``carried``: (name, type, initial value) of the values
    the loop carries, each updated to %name.n in the latch."""
    out = f"{label}:\n  %{i} = phi i32 [0, %{enter}], [%{i}n, %{latch}]\n"
    for name, ty, init in carried:
        out += f"  %{name} = phi {ty} [{init}, %{enter}], [%{name}.n, %{latch}]\n"
    return out + (f"  %{done} = icmp uge i32 %{i}, {bound}\n"
                  f"  br i1 %{done}, label %{exit}, label %{body}\n")


def _step(label: str, i: str, head: str) -> str:
    """The latch of a counted loop (``_loop``): %i + 1, back to %head."""
    return f"{label}:\n  %{i}n = add i32 %{i}, 1\n  br label %{head}\n"


def _block_coordinates() -> str:
    """IR computing ctaid x/y/z of linear block %b into %ti (and the block id at ti+32)."""
    return """
  %b32 = trunc i64 %b to i32
  %cx = urem i32 %b32, %gx
  %bq = udiv i32 %b32, %gx
  %cy = urem i32 %bq, %gy
  %cz = udiv i32 %bq, %gy
  %cxp = getelementptr i32, ptr %ti, i64 3
  store i32 %cx, ptr %cxp
  %cyp = getelementptr i32, ptr %ti, i64 4
  store i32 %cy, ptr %cyp
  %czp = getelementptr i32, ptr %ti, i64 5
  store i32 %cz, ptr %czp
  %bidp = getelementptr i8, ptr %ti, i64 32
  store i64 %b, ptr %bidp
"""


def _scheduler_entry(kw_slots: int) -> str:
    """Allocas every block scheduler starts with: the thread-id record %ti, and the launch
    constants the thread body reads (buffer windows), loaded once into %kw: after inlining
    they are plain SSA values, invariant in the thread loop."""
    return (f"  %ti = alloca [12 x i32], align 8\n"
            f"  %kw = alloca [{kw_slots} x i64], align 8\n"
            f"  call void @thread_constants(ptr %ctx, ptr %kw)\n"
            # how deep device functions may recurse on this native thread (function.py)
            f"  %sfa = call ptr @llvm.frameaddress.p0(i32 0)\n"
            f"  %sfi = ptrtoint ptr %sfa to i64\n"
            f"  %slim = sub i64 %sfi, {L.NATIVE_STACK}\n"
            f"  %slp = getelementptr i64, ptr %ctx, i64 {L.CTX['stack_limit']}\n"
            f"  store i64 %slim, ptr %slp\n")


def _block_loop_head(capped: bool = False) -> str:
    """Loop over blocks %b in [first, end) (exits to %finish, continues from %bnext), with
    the block's coordinates in %ti. ``capped``: no block at or past the context's
    ``block_cap`` starts either (a stalled block lowers it: ``scheduler_resumable``)."""
    if not capped:
        bound = "  %bdone = icmp uge i64 %b, %end\n"
    else:
        bound = (f"  %capp = getelementptr i64, ptr %ctx, i64 {L.CTX['block_cap']}\n"
                 "  %cap = load atomic i64, ptr %capp monotonic, align 8\n"
                 "  %pastcap = icmp uge i64 %b, %cap\n"
                 "  %pastend = icmp uge i64 %b, %end\n"
                 "  %bdone = or i1 %pastcap, %pastend\n")
    return ("bloop:\n"
            "  %b = phi i64 [%first, %entry], [%bn, %bnext]\n" + bound +
            "  br i1 %bdone, label %finish, label %bbody\n"
            "bbody:\n" + _block_coordinates())


def _thread_coordinates(t: str) -> str:
    return f"""
  %tx = urem i32 {t}, %bx
  %tq = udiv i32 {t}, %bx
  %ty = urem i32 %tq, %by
  %tz = udiv i32 %tq, %by
  store i32 %tx, ptr %ti
  %typ = getelementptr i32, ptr %ti, i64 1
  store i32 %ty, ptr %typ
  %tzp = getelementptr i32, ptr %ti, i64 2
  store i32 %tz, ptr %tzp
  %ltp = getelementptr i32, ptr %ti, i64 6
  store i32 {t}, ptr %ltp
"""


def _dims() -> str:
    out = ""
    for name, field in (("gx", "grid_x"), ("gy", "grid_y"), ("bx", "block_x"), ("by", "block_y"),
                        ("bz", "block_z")):
        out += ctx_load(name + "64", field) + f"  %{name} = trunc i64 %{name}64 to i32\n"
    out += "  %bxy = mul i32 %bx, %by\n  %nthr = mul i32 %bxy, %bz\n"
    return out


def _thread_nest(sfx: str, trusted: str) -> str:
    """The loops over a block's threads (z, y, x) around the inlined ``@thread``, labels
    suffixed ``sfx``; they end at %bcheck."""
    return f"""
  br label %zloop{sfx}
zloop{sfx}:
  %tz{sfx} = phi i32 [0, %nest{sfx}], [%tzn{sfx}, %znext{sfx}]
  %zdone{sfx} = icmp uge i32 %tz{sfx}, %bz
  br i1 %zdone{sfx}, label %bcheck, label %yinit{sfx}
yinit{sfx}:
  %tzp{sfx} = getelementptr i32, ptr %ti, i64 2
  store i32 %tz{sfx}, ptr %tzp{sfx}
  br label %yloop{sfx}
yloop{sfx}:
  %ty{sfx} = phi i32 [0, %yinit{sfx}], [%tyn{sfx}, %ynext{sfx}]
  %ydone{sfx} = icmp uge i32 %ty{sfx}, %by
  br i1 %ydone{sfx}, label %znext{sfx}, label %xinit{sfx}
xinit{sfx}:
  %typ{sfx} = getelementptr i32, ptr %ti, i64 1
  store i32 %ty{sfx}, ptr %typ{sfx}
  %rowz{sfx} = mul i32 %tz{sfx}, %by
  %row{sfx} = add i32 %rowz{sfx}, %ty{sfx}
  %base{sfx} = mul i32 %row{sfx}, %bx
  br label %xloop{sfx}
xloop{sfx}:
  %tx{sfx} = phi i32 [0, %xinit{sfx}], [%txn{sfx}, %tbody{sfx}]
  %xdone{sfx} = icmp uge i32 %tx{sfx}, %bx
  br i1 %xdone{sfx}, label %ynext{sfx}, label %tbody{sfx}
tbody{sfx}:
  store i32 %tx{sfx}, ptr %ti
  %lt{sfx} = add i32 %base{sfx}, %tx{sfx}
  %ltp{sfx} = getelementptr i32, ptr %ti, i64 6
  store i32 %lt{sfx}, ptr %ltp{sfx}
  %r{sfx} = call i32 @thread(ptr %ctx, ptr %ti, ptr %lbase, i64 0, ptr null, ptr %kw{trusted})
  ; key: (thread << 32 | status) for a failed thread, all ones otherwise
  %bad{sfx} = icmp ne i32 %r{sfx}, 0
  %lt64{sfx} = zext i32 %lt{sfx} to i64
  %kt{sfx} = shl i64 %lt64{sfx}, 32
  %r64{sfx} = zext i32 %r{sfx} to i64
  %k{sfx} = or i64 %kt{sfx}, %r64{sfx}
  %key{sfx} = select i1 %bad{sfx}, i64 %k{sfx}, i64 -1
  %w0{sfx} = load i64, ptr %worst
  %w1{sfx} = call i64 @llvm.umin.i64(i64 %w0{sfx}, i64 %key{sfx})
  store i64 %w1{sfx}, ptr %worst
  %txn{sfx} = add i32 %tx{sfx}, 1
  br label %xloop{sfx}
ynext{sfx}:
  %tyn{sfx} = add i32 %ty{sfx}, 1
  br label %yloop{sfx}
znext{sfx}:
  %tzn{sfx} = add i32 %tz{sfx}, 1
  br label %zloop{sfx}
"""


def scheduler_plain(fault_sites: list, site_base: int, kw_slots: int, block_check: bool = False) -> str:
    """Block scheduler for kernels without sync points: a loop over the threads of each
    block around the inlined ``@thread``. The loop has no early exit (a thread's non-zero
    status is folded into a minimum), so LLVM can vectorize it; after each block, the first
    failing thread's fault is reported: a bounds fault through ``fault_sites`` (PTX line and
    access size per site, status ``site_base + index``) and the address the thread stored
    in its ``fault_addr`` slot, any other status was recorded by the thread itself.
    With ``block_check``, ``@block_trusted`` (block_check.py) decides per block between a
    loop whose covered accesses skip their checks and the checked one (@thread's last
    argument)."""
    n = max(len(fault_sites), 1)
    sites = ", ".join(f"{{ i32, i32 }} {{ i32 {line}, i32 {size} }}" for line, size in fault_sites) \
        or "{ i32, i32 } { i32 0, i32 0 }"
    if block_check:
        choose = ("  %trusted = call i1 @block_trusted(ptr %ctx, ptr %ti)\n"
                  "  br i1 %trusted, label %nest.t, label %nest.c\n"
                  "nest.t:" + _thread_nest(".t", ", i1 true") +
                  "nest.c:" + _thread_nest(".c", ", i1 false"))
    else:
        choose = "  br label %nest\nnest:" + _thread_nest("", "")
    return f"""
@fault_sites = internal constant [{n} x {{ i32, i32 }}] [{sites}]

define i32 @dptx_run(ptr {CTX_ARG}, i64 %first, i64 %end) {{
entry:
{_scheduler_entry(kw_slots)}  %worst = alloca i64
{_dims()}{ctx_load("lbase", "local", "ptr")}  br label %bloop
{_block_loop_head()}  store i64 -1, ptr %worst
{choose}bcheck:
  %wk = load i64, ptr %worst
  %failed = icmp ne i64 %wk, -1
  br i1 %failed, label %report, label %bnext
bnext:
  %bn = add i64 %b, 1
  br label %bloop
report:
  %st = trunc i64 %wk to i32
  %ft64 = lshr i64 %wk, 32
  %ft = trunc i64 %ft64 to i32
  %issite = icmp uge i32 %st, {site_base}
  br i1 %issite, label %site, label %fail
site:
  %si = sub i32 %st, {site_base}
  %si64 = zext i32 %si to i64
  %linep = getelementptr [{n} x {{ i32, i32 }}], ptr @fault_sites, i64 0, i64 %si64, i32 0
  %line = load i32, ptr %linep
  %sizep = getelementptr [{n} x {{ i32, i32 }}], ptr @fault_sites, i64 0, i64 %si64, i32 1
  %size32 = load i32, ptr %sizep
  %size = zext i32 %size32 to i64
{ctx_load("fa", "fault_addr", "ptr")}  %fap = getelementptr i64, ptr %fa, i64 %ft64
  %addr = load i64, ptr %fap
  ; the site's check covers bounds and natural alignment (address_space.alignment: the
  ; size's lowest set bit): an address in bounds but not a multiple of it is misaligned
  %negsize = sub i64 0, %size
  %align = and i64 %size, %negsize
  %amask = sub i64 %align, 1
  %alow = and i64 %addr, %amask
  %misaligned = icmp ne i64 %alow, 0
  %code = select i1 %misaligned, i64 {L.ERR_MISALIGNED}, i64 {L.ERR_BOUNDS}
  %won = call i1 @record_error_values(ptr %ctx, i32 %ft, i64 %b, i64 %code, i64 %addr, i32 %line, i64 %size)
  ret i32 100
fail:
  ret i32 %st
finish:
  ret i32 0
}}
"""


def _divergence_check() -> str:
    """IR in @release's tally (a thread %t waits at barrier %id0 from PTX line %l; %first: no
    thread counted there yet, %h0 the first waiter + 1): a waiter at another aligned barrier
    instruction of the same id is a divergent barrier (bar.sync, __syncthreads: .aligned, every
    thread of the block at the same instruction). Recorded once per tally (racecheck_ir)."""
    return f"""  %lprev = load i32, ptr %lq
  %lother = icmp ne i32 %lprev, %l
  %waited = xor i1 %first, true
  %aligned0 = and i32 %id0, {ALIGNED_BARRIER}
  %aligned = icmp ne i32 %aligned0, 0
  %dv0 = and i1 %waited, %lother
  %diverged = and i1 %dv0, %aligned
  br i1 %diverged, label %divergent, label %tallied
divergent:
  %firstw = sub i32 %h0, 1
  %bp0 = getelementptr i8, ptr %ti, i64 32
  %blk0 = load i64, ptr %bp0
  %blk32 = trunc i64 %blk0 to i32
  %btag = add i32 %blk32, 1
  %id64 = zext i32 %id to i64
  call void @race_record(ptr %ctx, i64 {BARRIER_HAZARD}, i64 %id64, i32 %t, i32 %l, i32 %firstw, i32 %lprev, i32 %btag, i64 0, i32 0)
  br label %tallied
tallied:
"""


def _exited_lane_check() -> str:
    """IR in @warp_release's look at lane %v (thread %vt) of thread %u's member mask %umask:
    a lane that exited is a hazard (synccheck: a warp synchronization naming an exited
    thread; the ISA: undefined), recorded with %u's line (racecheck_ir)."""
    return f"""  br i1 %vexited, label %vgone, label %vlive
vgone:
{_field("ulp", "ufp", "line")}  %uline = load i32, ptr %ulp
  %xbp = getelementptr i8, ptr %ti, i64 32
  %xb64 = load i64, ptr %xbp
  %xb = trunc i64 %xb64 to i32
  %xtag = add i32 %xb, 1
  %xmask = zext i32 %umask to i64
  call void @race_record(ptr %ctx, i64 {EXITED_HAZARD}, i64 %xmask, i32 %u, i32 %uline, i32 %vt, i32 0, i32 %xtag, i64 0, i32 0)
  br label %vlive
vlive:
"""


def scheduler_resumable(frame_bytes: int, kw_slots: int, synccheck: bool = False) -> str:
    """Block scheduler for kernels with sync points: each thread's frame header holds the
    fields ``FRAME_FIELD`` names (lowering/common.py). ``synccheck``: threads waiting at one
    barrier id from different aligned barrier instructions (a divergent __syncthreads) are
    recorded as hazards (racecheck_ir.py)."""
    return f"""
define i32 @dptx_run(ptr {CTX_ARG}, i64 %first, i64 %end) {{
entry:
{_scheduler_entry(kw_slots)}{_dims()}{ctx_load("lmem", "local", "ptr")}{ctx_load("lsize", "local_size")}{ctx_load("frames", "frames", "ptr")}{ctx_load("exch", "exchange", "ptr")}{ctx_load("progp", "progress", "ptr")}  %npad0 = add i32 %nthr, 31
  %npad = and i32 %npad0, -32
  br label %bloop
{_block_loop_head(capped=True)}  br label %iloop
{_loop("iloop", "i", "bbody", "ibody", "idone", "%npad", "sweep", "ibody")}ibody:
{_frame("i", "", frame_bytes)}  %real = icmp ult i32 %i, %nthr
  %st0 = select i1 %real, i32 0, i32 3
  store i32 0, ptr %fp
{_field("fsp", "fp", "status")}  store i32 %st0, ptr %fsp
  %eo = mul i64 %i64, 4
  %eo2 = add i64 %eo, 2
  %ep = getelementptr i64, ptr %exch, i64 %eo2
  %exv = select i1 %real, i64 0, i64 1
  store i64 %exv, ptr %ep
  %in = add i32 %i, 1
  br label %iloop
sweep:
  ; sweeps in a row in which threads spun and nothing moved
  %stall = phi i32 [0, %iloop], [%stall.r, %resweep]
  %prog0 = load i64, ptr %progp
  br label %tloop
{_loop("tloop", "t", "sweep", "tnext", "tdone", "%nthr", "decide", "tbody", carried=_SWEEP_COUNTS)}tbody:
{_frame("t", "t", frame_bytes)}{_field("tsp", "tfp", "status")}  %status = load i32, ptr %tsp
  %run = icmp eq i32 %status, 0
  br i1 %run, label %dorun, label %tstat
dorun:
{_thread_coordinates("%t")}  %lo = mul i64 %t64, %lsize
  %lb = getelementptr i8, ptr %lmem, i64 %lo
  %r = call i32 @thread(ptr %ctx, ptr %ti, ptr %lb, i64 0, ptr %tfp, ptr %kw)
  %err = icmp uge i32 %r, {100}
  br i1 %err, label %fail, label %record
record:
  %isdone = icmp eq i32 %r, 0
  %newst = select i1 %isdone, i32 3, i32 %r
  store i32 %newst, ptr %tsp
  br i1 %isdone, label %markexit, label %tstat
markexit:
  %teo = mul i64 %t64, 4
  %teo2 = add i64 %teo, 2
  %tep = getelementptr i64, ptr %exch, i64 %teo2
  store i64 1, ptr %tep
  br label %tstat
tstat:
  %ran = phi i1 [false, %tbody], [true, %record], [true, %markexit]
  %cur = load i32, ptr %tsp
  %isd = icmp eq i32 %cur, 3
  %isw = icmp eq i32 %cur, 2
  %ismb = icmp eq i32 %cur, {ST_YIELD}
  %isspin = icmp eq i32 %cur, {ST_SPIN}
  %isy = or i1 %ismb, %isspin
  %dd = zext i1 %isd to i32
  %ww = zext i1 %isw to i32
  %yy = zext i1 %isy to i32
  %ndone.n = add i32 %ndone, %dd
  %nwarp.n = add i32 %nwarp, %ww
  %nyield.n = add i32 %nyield, %yy
  %ss = zext i1 %isspin to i32
  %nspin.n = add i32 %nspin, %ss
  %notyield = xor i1 %isy, true
  %ranmoved = and i1 %ran, %notyield
  %moved.n = or i1 %moved, %ranmoved
  br label %tnext
{_step("tnext", "t", "tloop")}decide:
  %alldone = icmp eq i32 %ndone, %nthr
  br i1 %alldone, label %bnext, label %notdone
notdone:
  ; threads that yielded (waiting on an mbarrier, or polling in a spin loop) run again
  ; while anything moves: a thread ran to another state, or an mbarrier changed; when
  ; nothing does, threads at barriers and warp operations are released first, and spinning
  ; threads run again regardless (what they wait for may come from another block)
  %spinning0 = icmp ugt i32 %nspin, 0
  %stall.s = add i32 %stall, 1
  %stall.n = select i1 %spinning0, i32 %stall.s, i32 0
  %anyyield = icmp ugt i32 %nyield, 0
  br i1 %anyyield, label %yields, label %blocked
yields:
  %prog1 = load i64, ptr %progp
  %changed = icmp ne i64 %prog1, %prog0
  %progress = or i1 %moved, %changed
  br i1 %progress, label %rerun, label %stuck
rerun:
  %stall.r = phi i32 [0, %yields], [%stall.n, %onlyyields], [%stall.n, %blocked]
  %stalled = icmp uge i32 %stall.r, {STALL_SWEEPS}
  br i1 %stalled, label %stalledblk, label %resweep
stalledblk:
  ; this block waits on what no thread of this call can do (a later block's flag, say):
  ; hand the call's later blocks to another thread (a GPU would hold them resident)
  call void @spin_stalled(ptr %ctx, i64 %b)
  br label %resweep
resweep:
  call void @unyield(ptr %frames, i32 %nthr)
  br label %sweep
stuck:
  ; nothing moved: release what waits at barriers and warp operations, if anything does
  %waiting0 = add i32 %ndone, %nyield
  %others = icmp ult i32 %waiting0, %nthr
  br i1 %others, label %blocked, label %onlyyields
onlyyields:
  %anyspin = icmp ugt i32 %nspin, 0
  br i1 %anyspin, label %rerun, label %ydead
ydead:
  call void @report_yield_deadlock(ptr %ctx, ptr %ti, ptr %frames, i32 %nthr)
  ret i32 {100}
blocked:
  %anywarp = icmp ugt i32 %nwarp, 0
  %which = select i1 %anywarp, i32 2, i32 1
  %spinning = icmp ugt i32 %nspin, 0
  %dl = call i32 @release(ptr %ctx, ptr %ti, ptr %frames, i32 %nthr, i32 %which, i1 %spinning)
  %isdl = icmp eq i32 %dl, 1
  br i1 %isdl, label %deadlock, label %rerun
deadlock:
  ret i32 {100}
bnext:
  %bn = add i64 %b, 1
  br label %bloop
fail:
  ret i32 %r
finish:
  ret i32 0
}}

; A block of this call is stalled in a spin-wait: no block after it starts in this call
; (``block_cap``), the host is told (``stalled``: it gives those blocks to another thread,
; executor._Pieces.release), and this thread gives its core up before polling again.
declare i32 @sched_yield()
define internal void @spin_stalled(ptr %ctx, i64 %b) noinline {{
entry:
  %capp = getelementptr i64, ptr %ctx, i64 {L.CTX['block_cap']}
  %cap = load atomic i64, ptr %capp monotonic, align 8
  %next = add i64 %b, 1
  %lower = icmp ult i64 %next, %cap
  %newcap = select i1 %lower, i64 %next, i64 %cap
  store atomic i64 %newcap, ptr %capp release, align 8
  %flagp = getelementptr i64, ptr %ctx, i64 {L.CTX['stalled']}
  store atomic i64 1, ptr %flagp release, align 8
  %y = call i32 @sched_yield()
  ret void
}}

; Threads at warp operations (status 2) whose member mask's live lanes (frame field 3) all
; wait at the same sync point (frame field 0) run again: a lane at shfl.sync with mask 0x3
; goes on while the warp's other lanes wait at bar.warp.sync for it. When no thread can go
; on by that rule (lanes at different bar.warp.sync instructions, which meet too), all go on.
define internal i32 @warp_release(ptr %frames, i32 %nthr, ptr %ctx, ptr %ti) {{
entry:
  %ready = alloca [32 x i32], align 4
  call void @llvm.memset.p0.i64(ptr %ready, i8 0, i64 128, i1 false)
  br label %uloop
{_loop("uloop", "u", "entry", "unext", "ud", "%nthr", "apply", "ubody", carried=_READY_COUNT)}ubody:
{_frame("u", "u", frame_bytes)}{_field("usp", "ufp", "status")}  %ust = load i32, ptr %usp
  %uw = icmp eq i32 %ust, 2
  br i1 %uw, label %check, label %unext0
check:
  %ures = load i32, ptr %ufp
{_field("ump", "ufp", "count")}  %umask = load i32, ptr %ump
  %ubase = and i32 %u, -32
  br label %vloop
{_loop("vloop", "v", "check", "vnext", "vd", "32", "isready", "vbody")}vbody:
  %vbit = shl i32 1, %v
  %vin0 = and i32 %umask, %vbit
  %vin = icmp ne i32 %vin0, 0
  %vt = add i32 %ubase, %v
  %vreal = icmp ult i32 %vt, %nthr
  %vcheck = and i1 %vin, %vreal
  br i1 %vcheck, label %vlook, label %vnext
vlook:
{_frame("vt", "v", frame_bytes)}{_field("vsp", "vfp", "status")}  %vst = load i32, ptr %vsp
  %vexited = icmp eq i32 %vst, 3
  %vres = load i32, ptr %vfp
  %vsame0 = icmp eq i32 %vres, %ures
  %vat = icmp eq i32 %vst, 2
  %vsame = and i1 %vat, %vsame0
  %vok = or i1 %vexited, %vsame
{_exited_lane_check() if synccheck else ""}  br i1 %vok, label %vnext, label %unext0
{_step("vnext", "v", "vloop")}isready:
  %uwarp = lshr i32 %u, 5
{_slot("rq", "ready", "uwarp")}  %r0 = load i32, ptr %rq
  %ulane = and i32 %u, 31
  %ubit = shl i32 1, %ulane
  %r1 = or i32 %r0, %ubit
  store i32 %r1, ptr %rq
  br label %unext
unext0:
  br label %unext
unext:
  %got = phi i32 [0, %unext0], [1, %isready]
  %nready.n = add i32 %nready, %got
  %un = add i32 %u, 1
  br label %uloop
apply:
  %none = icmp eq i32 %nready, 0
  br label %aloop
{_loop("aloop", "a", "apply", "anext", "ad", "%nthr", "adone", "abody")}abody:
{_frame("a", "a", frame_bytes)}{_field("asp", "afp", "status")}  %ast = load i32, ptr %asp
  %aw = icmp eq i32 %ast, 2
  %awarp = lshr i32 %a, 5
{_slot("aq", "ready", "awarp")}  %am = load i32, ptr %aq
  %alane = and i32 %a, 31
  %abit = shl i32 1, %alane
  %ain0 = and i32 %am, %abit
  %ain = icmp ne i32 %ain0, 0
  %ago0 = or i1 %ain, %none
  %ago = and i1 %aw, %ago0
  br i1 %ago, label %awake, label %anext
awake:
  store i32 0, ptr %asp
  br label %anext
{_step("anext", "a", "aloop")}adone:
  ret i32 %nready
}}

; Threads that yielded (status {ST_YIELD}) may run again.
define internal void @unyield(ptr %frames, i32 %nthr) {{
entry:
  br label %loop
{_loop("loop", "t", "entry", "next", "d", "%nthr", "done", "body")}body:
{_frame("t", "", frame_bytes)}{_field("sp", "fp", "status")}  %st = load i32, ptr %sp
  %y0 = icmp eq i32 %st, {ST_YIELD}
  %y1 = icmp eq i32 %st, {ST_SPIN}
  %y = or i1 %y0, %y1
  %st2 = select i1 %y, i32 0, i32 %st
  store i32 %st2, ptr %sp
  br label %next
{_step("next", "t", "loop")}done:
  ret void
}}

; Every live thread waits on an mbarrier and nothing can move: the error names the first.
define internal void @report_yield_deadlock(ptr %ctx, ptr %ti, ptr %frames, i32 %nthr) {{
entry:
  br label %loop
{_loop("loop", "t", "entry", "next", "d", "%nthr", "none", "body")}body:
{_frame("t", "", frame_bytes)}{_field("sp", "fp", "status")}  %st = load i32, ptr %sp
  %y = icmp eq i32 %st, {ST_YIELD}
  br i1 %y, label %found, label %next
{_step("next", "t", "loop")}found:
{_field("lp", "fp", "line")}  %l = load i32, ptr %lp
  %bp = getelementptr i8, ptr %ti, i64 32
  %b = load i64, ptr %bp
  %won = call i1 @record_error_values(ptr %ctx, i32 %t, i64 %b, i64 {L.ERR_MBARRIER}, i64 0, i32 %l, i64 0)
  ret void
none:
  ret void
}}

; Let the threads waiting with status %which run again. Warp operations (%which = 2): all
; of them. Barriers (%which = 1), by id (0-15) as a GPU counts them: a barrier completes when
; its waiting threads (with bar.arrive arrivals, whole warps) reach its count, or for a
; CTA-wide one (no count) when every thread that has not exited waits there; only the
; threads of completed barriers go on (bar.red results per barrier). When none can
; complete, the block is deadlocked: recorded naming a thread that waits, returns 1.
define internal i32 @release(ptr %ctx, ptr %ti, ptr %frames, i32 %nthr, i32 %which, i1 %quiet) {{
entry:
  %wait = alloca [16 x i32], align 4
  %need = alloca [16 x i32], align 4
  %cta = alloca [16 x i32], align 4
  %pop = alloca [16 x i32], align 4
  %who = alloca [16 x i32], align 4
  %lines = alloca [16 x i32], align 4
  %done = alloca [16 x i32], align 4
  call void @llvm.memset.p0.i64(ptr %wait, i8 0, i64 64, i1 false)
  call void @llvm.memset.p0.i64(ptr %need, i8 0, i64 64, i1 false)
  call void @llvm.memset.p0.i64(ptr %cta, i8 0, i64 64, i1 false)
  call void @llvm.memset.p0.i64(ptr %pop, i8 0, i64 64, i1 false)
  call void @llvm.memset.p0.i64(ptr %who, i8 0, i64 64, i1 false)
  call void @llvm.memset.p0.i64(ptr %lines, i8 0, i64 64, i1 false)
  call void @llvm.memset.p0.i64(ptr %done, i8 0, i64 64, i1 false)
{ctx_load("arrp", "arrivals", "ptr")}  %isbar = icmp eq i32 %which, 1
  br label %count
{_loop("count", "t", "entry", "cnext", "cd", "%nthr", "judge", "cbody", carried=_LIVE_COUNT)}cbody:
{_frame("t", "", frame_bytes)}{_field("sp", "fp", "status")}  %st = load i32, ptr %sp
  %alive = icmp ne i32 %st, 3
  %al1 = zext i1 %alive to i32
  %nlive.n = add i32 %nlive, %al1
  %atbar = icmp eq i32 %st, 1
  br i1 %atbar, label %tally, label %cnext
tally:
{_field("idp", "fp", "bar_id")}  %id0 = load i32, ptr %idp
  %id = and i32 %id0, 15
{_field("cp", "fp", "count")}  %c = load i32, ptr %cp
{_field("vp", "fp", "red_value")}  %v = load i32, ptr %vp
{_field("lp", "fp", "line")}  %l = load i32, ptr %lp
{_slot("wq", "wait", "id")}  %w = load i32, ptr %wq
  %w1 = add i32 %w, 1
  store i32 %w1, ptr %wq
{_slot("nq", "need", "id")}  %n0 = load i32, ptr %nq
  %n1 = call i32 @llvm.umax.i32(i32 %n0, i32 %c)
  store i32 %n1, ptr %nq
  %nocount = icmp eq i32 %c, 0
{_slot("ctq", "cta", "id")}  %ct0 = load i32, ptr %ctq
  %ncz = zext i1 %nocount to i32
  %ct1 = or i32 %ct0, %ncz
  store i32 %ct1, ptr %ctq
{_slot("pq", "pop", "id")}  %p0 = load i32, ptr %pq
  %vnz = icmp ne i32 %v, 0
  %vz = zext i1 %vnz to i32
  %p1 = add i32 %p0, %vz
  store i32 %p1, ptr %pq
{_slot("hq", "who", "id")}  %h0 = load i32, ptr %hq
  %first = icmp eq i32 %h0, 0
  %tp1 = add i32 %t, 1
  %h1 = select i1 %first, i32 %tp1, i32 %h0
  store i32 %h1, ptr %hq
{_slot("lq", "lines", "id")}{_divergence_check() if synccheck else ""}  store i32 %l, ptr %lq
  br label %cnext
{_step("cnext", "t", "count")}judge:
  br i1 %isbar, label %ids, label %warpops
warpops:
  ; threads at warp operations: those whose member lanes all wait at the same one go on
  ; (the others wait for theirs); when no such group exists, every one goes on
  %wdone = call i32 @warp_release(ptr %frames, i32 %nthr, ptr %ctx, ptr %ti)
  ret i32 0
{_loop("ids", "k", "judge", "inext", "kd", "16", "verdict", "ibody", carried=_ANY_COMPLETE)}ibody:
{_slot("wkq", "wait", "k")}  %wk = load i32, ptr %wkq
{_slot("nkq", "need", "k")}  %nk = load i32, ptr %nkq
{_slot("ckq", "cta", "k")}  %ck = load i32, ptr %ckq
  %akq = getelementptr i64, ptr %arrp, i32 %k
  %ak64 = load i64, ptr %akq
  %ak = trunc i64 %ak64 to i32
  %present = add i32 %wk, %ak
  %warps0 = add i32 %present, 31
  %warps = and i32 %warps0, -32
  %counted = icmp uge i32 %warps, %nk
  %everyone = icmp uge i32 %present, %nlive
  %isct = icmp ne i32 %ck, 0
  %reached = select i1 %isct, i1 %everyone, i1 %counted
  %some = icmp ne i32 %wk, 0
  %comp = and i1 %some, %reached
  %compi = zext i1 %comp to i32
{_slot("dkq", "done", "k")}  store i32 %compi, ptr %dkq
  %any.n = or i1 %any, %comp
  br label %inext
{_step("inext", "k", "ids")}verdict:
  br i1 %any, label %wake, label %deadlock
deadlock:
  ; with threads polling in spin loops nothing is final: they may still arrive (2)
  br i1 %quiet, label %notyet, label %dfind
notyet:
  ret i32 2
dfind:
  %j = phi i32 [0, %deadlock], [%jn, %dnext]
{_slot("wjq", "wait", "j")}  %wj = load i32, ptr %wjq
  %has = icmp ne i32 %wj, 0
  %last = icmp eq i32 %j, 15
  %stop = or i1 %has, %last
  br i1 %stop, label %dreport, label %dnext
{_step("dnext", "j", "dfind")}dreport:
{_slot("whq", "who", "j")}  %wh = load i32, ptr %whq
  %waiter = sub i32 %wh, 1
{_slot("njq", "need", "j")}  %nj = load i32, ptr %njq
{_slot("cjq", "cta", "j")}  %cj = load i32, ptr %cjq
  %ctaw = icmp ne i32 %cj, 0
  %wants = select i1 %ctaw, i32 %nlive, i32 %nj
  %addr = zext i32 %wants to i64
{_slot("ljq", "lines", "j")}  %lj = load i32, ptr %ljq
  %bp = getelementptr i8, ptr %ti, i64 32
  %blk = load i64, ptr %bp
  %won = call i1 @record_error_values(ptr %ctx, i32 %waiter, i64 %blk, i64 {L.ERR_DEADLOCK}, i64 %addr, i32 %lj, i64 0)
  ret i32 1
wake:
  br label %wloop
{_loop("wloop", "u", "wake", "wnext", "wd", "%nthr", "reset", "wbody")}wbody:
{_frame("u", "w", frame_bytes)}{_field("wsp", "wfp", "status")}  %wst = load i32, ptr %wsp
  %wwait = icmp eq i32 %wst, %which
  br i1 %wwait, label %which1, label %wnext
which1:
  br i1 %isbar, label %barwake, label %wake1
barwake:
{_field("widp", "wfp", "bar_id")}  %wid0 = load i32, ptr %widp
  %wid = and i32 %wid0, 15
{_slot("wdq", "done", "wid")}  %wdn = load i32, ptr %wdq
  %goes = icmp ne i32 %wdn, 0
  br i1 %goes, label %redres, label %wnext
redres:
{_field("opp", "wfp", "red_op")}  %op = load i32, ptr %opp
{_slot("wpq", "pop", "wid")}  %npop = load i32, ptr %wpq
{_slot("wwq", "wait", "wid")}  %nbar = load i32, ptr %wwq
  %all = icmp eq i32 %npop, %nbar
  %anyp = icmp ne i32 %npop, 0
  %alli = zext i1 %all to i32
  %anyi = zext i1 %anyp to i32
  %isand = icmp eq i32 %op, 2
  %isor = icmp eq i32 %op, 3
  %r1 = select i1 %isand, i32 %alli, i32 %npop
  %r2 = select i1 %isor, i32 %anyi, i32 %r1
{_field("rp", "wfp", "red_result")}  store i32 %r2, ptr %rp
  br label %wake1
wake1:
  store i32 0, ptr %wsp
  br label %wnext
{_step("wnext", "u", "wloop")}reset:
  br i1 %isbar, label %rloop, label %finish
{_loop("rloop", "q", "reset", "rnext", "qd", "16", "finish", "rbody")}rbody:
{_slot("dq", "done", "q")}  %dv = load i32, ptr %dq
  %dz = icmp ne i32 %dv, 0
  br i1 %dz, label %rzero, label %rnext
rzero:
  %aq = getelementptr i64, ptr %arrp, i32 %q
  store i64 0, ptr %aq
  br label %rnext
{_step("rnext", "q", "rloop")}finish:
  ret i32 0
}}
"""


def scheduler_warps(frame_bytes: int, header_bytes: int, kw_slots: int) -> str:
    """Block scheduler for warp-vectorized kernels (``vector.py``): ``@thread`` runs one warp
    until a barrier (status 1) or its end (0). Each round runs every warp that has not ended
    up to its next barrier, so after a round every live warp waits at one: the next round
    releases them all (warps that ended count as arrived, as exited threads do on sm_70+;
    the divergence analysis proved that every barrier is reached by whole warps). There is
    no separate release pass over the frames. Frames: i32 0 resume point, i32 4 status (0
    run, 1 at the barrier, 3 done), i32 8 warp index; the first ``header_bytes`` are zeroed
    per block."""
    return f"""
define i32 @dptx_run(ptr {CTX_ARG}, i64 %first, i64 %end) {{
entry:
{_scheduler_entry(kw_slots)}{_dims()}{ctx_load("frames", "frames", "ptr")}  %nw0 = add i32 %nthr, 31
  %nw = lshr i32 %nw0, 5
  br label %bloop
{_block_loop_head()}  br label %iloop
{_loop("iloop", "i", "bbody", "ibody", "idone", "%nw", "round", "ibody")}ibody:
{_frame("i", "", frame_bytes)}  call void @llvm.memset.p0.i64(ptr %fp, i8 0, i64 {header_bytes}, i1 false)
  %wp = getelementptr i8, ptr %fp, i64 8
  store i32 %i, ptr %wp
  %in = add i32 %i, 1
  br label %iloop
round:
  br label %wloop
{_loop("wloop", "w", "round", "wnext", "wd", "%nw", "decide", "wbody", carried=_DONE_COUNT)}wbody:
{_frame("w", "w", frame_bytes)}  %wsp = getelementptr i8, ptr %wfp, i64 4
  %st = load i32, ptr %wsp
  %ended = icmp eq i32 %st, 3
  br i1 %ended, label %wdone, label %dorun
dorun:
  %r = call i32 @thread(ptr %ctx, ptr %ti, ptr null, i64 0, ptr %wfp, ptr %kw)
  %err = icmp uge i32 %r, 100
  br i1 %err, label %fail, label %record
record:
  %isdone = icmp eq i32 %r, 0
  %newst = select i1 %isdone, i32 3, i32 %r
  store i32 %newst, ptr %wsp
  %dd = zext i1 %isdone to i32
  br label %wnext
wdone:
  br label %wnext
wnext:
  %d = phi i32 [%dd, %record], [1, %wdone]
  %ndone.n = add i32 %ndone, %d
  %wn = add i32 %w, 1
  br label %wloop
decide:
  %alldone = icmp eq i32 %ndone, %nw
  br i1 %alldone, label %bnext, label %round
bnext:
  %bn = add i64 %b, 1
  br label %bloop
fail:
  ret i32 %r
finish:
  ret i32 0
}}
"""
