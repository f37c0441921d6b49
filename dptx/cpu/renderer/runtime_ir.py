"""LLVM IR of the executor's runtime: address translation with bounds checks, error and
printf records, bit-manipulation helpers (prmt, lop3...), half-precision helpers and warp
exchanges. The block schedulers that run a chunk's blocks are in ``schedulers``.

Written as textual IR so that everything, scheduler included, is compiled machine code: the
Python side calls ``dptx_run`` once per chunk of blocks.
"""
from __future__ import annotations

from . import address_space as L

C = L.CTX
MASK = L.OFFSET_MASK
# The context is always fully readable: saying so lets LLVM hoist its invariant loads out of
# conditional code in the thread loop.
CTX_ARG = f"align 8 dereferenceable({8 * len(L.CTX_FIELDS)}) %ctx"


def ctx_load(name, field, ty="i64"):
    # The context does not change during a call: invariant loads let LLVM hoist them out of
    # the thread and block loops (stores through kernel pointers could otherwise alias it).
    return (f"  %{name}.p = getelementptr i64, ptr %ctx, i64 {C[field]}\n"
            f"  %{name} = load {ty}, ptr %{name}.p, !invariant.load !0\n")


ADDRESSING = f"""
define internal void @record_error(ptr %ctx, ptr %ti, i64 %code, i64 %addr, i32 %line, i64 %size) alwaysinline {{
entry:
  %tp = getelementptr i32, ptr %ti, i64 6
  %t = load i32, ptr %tp
  %bp = getelementptr i8, ptr %ti, i64 32
  %b = load i64, ptr %bp
  %won = call i1 @record_error_values(ptr %ctx, i32 %t, i64 %b, i64 %code, i64 %addr, i32 %line, i64 %size)
  ret void
}}

; The first error of a call fills the record (true for the caller whose error it is).
define internal i1 @record_error_values(ptr %ctx, i32 %t, i64 %b, i64 %code, i64 %addr, i32 %line, i64 %size) noinline cold {{
entry:
{ctx_load("err", "error", "ptr")}  %pair = cmpxchg ptr %err, i64 0, i64 %code seq_cst seq_cst
  %first = extractvalue {{ i64, i1 }} %pair, 1
  br i1 %first, label %fill, label %done
fill:
  %a = getelementptr i64, ptr %err, i64 1
  store i64 %addr, ptr %a
  %l = getelementptr i64, ptr %err, i64 2
  %line64 = zext i32 %line to i64
  store i64 %line64, ptr %l
  %t64 = zext i32 %t to i64
  %tq = getelementptr i64, ptr %err, i64 3
  store i64 %t64, ptr %tq
  %bq = getelementptr i64, ptr %err, i64 4
  store i64 %b, ptr %bq
  %sq = getelementptr i64, ptr %err, i64 5
  store i64 %size, ptr %sq
  br label %done
done:
  ret i1 %first
}}

; A failed device assert (__assertfail): the error record gets the message, file and
; function addresses (read on the host) and the source line, in the fields the other errors
; leave free: 1 message, 5 file, 6 source line, 7 function.
define internal void @record_assert(ptr %ctx, ptr %ti, i64 %msg, i64 %file, i64 %cline, i64 %func, i32 %line) noinline cold {{
entry:
  %tp = getelementptr i32, ptr %ti, i64 6
  %t = load i32, ptr %tp
  %bp = getelementptr i8, ptr %ti, i64 32
  %b = load i64, ptr %bp
  %first = call i1 @record_error_values(ptr %ctx, i32 %t, i64 %b, i64 {L.ERR_ASSERT}, i64 %msg, i32 %line, i64 %file)
  br i1 %first, label %fill, label %done
fill:
{ctx_load("err", "error", "ptr")}  %cq = getelementptr i64, ptr %err, i64 6
  store i64 %cline, ptr %cq
  %nq = getelementptr i64, ptr %err, i64 7
  store i64 %func, ptr %nq
  br label %done
done:
  ret void
}}

define internal ptr @xshared(ptr %ctx, ptr %ti, ptr %lbase, i64 %off, i64 %size, i32 %line) alwaysinline {{
entry:
{ctx_load("ss", "shared_size")}  %end = add i64 %off, %size
  %ok = icmp ule i64 %end, %ss
  %small = icmp ult i64 %off, {MASK}
  %good = and i1 %ok, %small
  br i1 %good, label %yes, label %no
yes:
{ctx_load("sh", "shared", "ptr")}  %p = getelementptr i8, ptr %sh, i64 %off
  ret ptr %p
no:
  %va = or i64 %off, {L.buffer_address(L.SHARED_WINDOW)}
  call void @record_error(ptr %ctx, ptr %ti, i64 {L.ERR_BOUNDS}, i64 %va, i32 %line, i64 %size)
  ret ptr null
}}

define internal ptr @xlocal(ptr %ctx, ptr %ti, ptr %lbase, i64 %off, i64 %size, i32 %line) alwaysinline {{
entry:
{ctx_load("ls", "local_size")}  %end = add i64 %off, %size
  %ok = icmp ule i64 %end, %ls
  %small = icmp ult i64 %off, {MASK}
  %good = and i1 %ok, %small
  br i1 %good, label %yes, label %no
yes:
  %p = getelementptr i8, ptr %lbase, i64 %off
  ret ptr %p
no:
  %va = or i64 %off, {L.buffer_address(L.LOCAL_WINDOW)}
  call void @record_error(ptr %ctx, ptr %ti, i64 {L.ERR_BOUNDS}, i64 %va, i32 %line, i64 %size)
  ret ptr null
}}

define internal ptr @xlate(ptr %ctx, ptr %ti, ptr %lbase, i64 %va, i64 %size, i32 %line) alwaysinline {{
entry:
  %w = lshr i64 %va, {L.WINDOW_SHIFT}
{ctx_load("nb", "nbuf")}  %inr = icmp ult i64 %w, %nb
  br i1 %inr, label %look, label %bad
look:
{ctx_load("tab", "buftable", "ptr")}  %ei = mul i64 %w, {L.TABLE_ROW}
  %fp = getelementptr i64, ptr %tab, i64 %ei
  %first = load i64, ptr %fp, !invariant.load !0
  %hp = getelementptr i64, ptr %fp, i64 1
  %host = load i64, ptr %hp, !invariant.load !0
  %sp = getelementptr i64, ptr %fp, i64 2
  %sz = load i64, ptr %sp, !invariant.load !0
  ; rel + size <= sz with rel >= 0, as one unsigned compare: rel < usub.sat(sz + 1, size)
  %rel = sub i64 %va, %first
  %room = add i64 %sz, 1
  %bound = call i64 @llvm.usub.sat.i64(i64 %room, i64 %size)
  %fits = icmp ult i64 %rel, %bound
  br i1 %fits, label %good, label %bad, !prof !1
good:
  ; a mapped buffer is never at address 0: telling LLVM lets it drop the caller's null test
  %nn = icmp ne i64 %host, 0
  call void @llvm.assume(i1 %nn)
  %hptr = inttoptr i64 %host to ptr
  %r = getelementptr inbounds i8, ptr %hptr, i64 %rel
  ret ptr %r
bad:
  call void @record_error(ptr %ctx, ptr %ti, i64 {L.ERR_BOUNDS}, i64 %va, i32 %line, i64 %size)
  ret ptr null
}}

define internal i64 @window_remaining(ptr %ctx, i64 %va) {{
entry:
  %w = lshr i64 %va, {L.WINDOW_SHIFT}
  %off = and i64 %va, {MASK}
  switch i64 %w, label %buf [ i64 {L.SHARED_WINDOW}, label %sh
                              i64 {L.LOCAL_WINDOW}, label %lo ]
sh:
{ctx_load("ss", "shared_size")}  %r1 = sub i64 %ss, %off
  ret i64 %r1
lo:
{ctx_load("ls", "local_size")}  %r2 = sub i64 %ls, %off
  ret i64 %r2
buf:
{ctx_load("nb", "nbuf")}  %inr = icmp ult i64 %w, %nb
  br i1 %inr, label %look, label %none
look:
{ctx_load("tab", "buftable", "ptr")}  %ei = mul i64 %w, {L.TABLE_ROW}
  %fp = getelementptr i64, ptr %tab, i64 %ei
  %first = load i64, ptr %fp
  %sp = getelementptr i64, ptr %fp, i64 2
  %sz = load i64, ptr %sp
  %rel = sub i64 %va, %first
  %inside = icmp ult i64 %rel, %sz
  br i1 %inside, label %rest, label %none
rest:
  %r3 = sub i64 %sz, %rel
  ret i64 %r3
none:
  ret i64 0
}}

define internal void @record_printf(ptr %ctx, ptr %ti, ptr %lbase, i64 %fmt, i64 %args) noinline {{
entry:
  %cntp = getelementptr i64, ptr %ctx, i64 {C["printf_count"]}
  %idx = atomicrmw add ptr %cntp, i64 1 seq_cst
{ctx_load("cap", "printf_cap")}  %room = icmp ult i64 %idx, %cap
  br i1 %room, label %write, label %full
full:
  ret void
write:
{ctx_load("buf", "printf", "ptr")}  %off = mul i64 %idx, {L.PRINTF_RECORD_BYTES}
  %rec = getelementptr i8, ptr %buf, i64 %off
  store i64 %fmt, ptr %rec
  %np = getelementptr i8, ptr %rec, i64 8
  %isnull = icmp eq i64 %args, 0
  br i1 %isnull, label %noargs, label %copy
noargs:
  store i64 0, ptr %np
  ret void
copy:
  %rem = call i64 @window_remaining(ptr %ctx, i64 %args)
  %big = icmp ugt i64 %rem, 256
  %n = select i1 %big, i64 256, i64 %rem
  %src = call ptr @xlate(ptr %ctx, ptr %ti, ptr %lbase, i64 %args, i64 %n, i32 0)
  %bad = icmp eq ptr %src, null
  br i1 %bad, label %noargs, label %docopy
docopy:
  store i64 %n, ptr %np
  %dst = getelementptr i8, ptr %rec, i64 16
  call void @llvm.memcpy.p0.p0.i64(ptr %dst, ptr %src, i64 %n, i1 false)
  ret void
}}
declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)
"""


def _prmt_ir() -> str:
    # Selector nibbles (result bytes 0..3) of the non-default modes, indexed by c & 3.
    tables = {
        1: [(0, 1, 2, 3), (1, 2, 3, 4), (2, 3, 4, 5), (3, 4, 5, 6)],          # f4e
        2: [(0, 7, 6, 5), (1, 0, 7, 6), (2, 1, 0, 7), (3, 2, 1, 0)],          # b4e
        3: [(0, 0, 0, 0), (1, 1, 1, 1), (2, 2, 2, 2), (3, 3, 3, 3)],          # rc8
        4: [(0, 1, 2, 3), (1, 1, 2, 3), (2, 2, 2, 3), (3, 3, 3, 3)],          # ecl
        5: [(0, 0, 0, 0), (0, 1, 1, 1), (0, 1, 2, 2), (0, 1, 2, 3)],          # ecr
        6: [(0, 1, 0, 1), (2, 3, 2, 3), (0, 1, 0, 1), (2, 3, 2, 3)],          # rc16
    }
    values = []
    for mode in range(1, 7):
        for sel in tables[mode]:
            values.append(sum(b << (4 * i) for i, b in enumerate(sel)))
    table = ", ".join(f"i32 {v}" for v in values)
    lines = [f"@prmt_tab = internal constant [24 x i32] [{table}]",
             "define internal i32 @prmt(i32 %a, i32 %b, i32 %c, i32 %mode) alwaysinline {",
             "entry:",
             "  %isdef = icmp eq i32 %mode, 0",
             "  %m1 = sub i32 %mode, 1",
             "  %m4 = shl i32 %m1, 2",
             "  %c3 = and i32 %c, 3",
             "  %ti = add i32 %m4, %c3",
             "  %safe = select i1 %isdef, i32 0, i32 %ti",
             "  %tix = zext i32 %safe to i64",
             "  %tp = getelementptr [24 x i32], ptr @prmt_tab, i64 0, i64 %tix",
             "  %tv = load i32, ptr %tp",
             "  %sel = select i1 %isdef, i32 %c, i32 %tv",
             "  %lo = zext i32 %a to i64",
             "  %hi0 = zext i32 %b to i64",
             "  %hi = shl i64 %hi0, 32",
             "  %all = or i64 %hi, %lo",
             "  %r0 = add i32 0, 0"]
    prev = "%r0"
    for i in range(4):
        lines += [
            f"  %s{i} = lshr i32 %sel, {4 * i}",
            f"  %n{i} = and i32 %s{i}, 15",
            f"  %ix{i} = and i32 %n{i}, 7",
            f"  %sh{i}a = shl i32 %ix{i}, 3",
            f"  %sh{i} = zext i32 %sh{i}a to i64",
            f"  %by{i}a = lshr i64 %all, %sh{i}",
            f"  %by{i}b = trunc i64 %by{i}a to i32",
            f"  %by{i} = and i32 %by{i}b, 255",
            f"  %msb{i} = lshr i32 %by{i}, 7",
            f"  %rep{i} = mul i32 %msb{i}, 255",
            f"  %sgn{i}a = and i32 %n{i}, 8",
            f"  %sgn{i}b = icmp ne i32 %sgn{i}a, 0",
            f"  %usesign{i} = and i1 %sgn{i}b, %isdef",
            f"  %v{i} = select i1 %usesign{i}, i32 %rep{i}, i32 %by{i}",
            f"  %p{i} = shl i32 %v{i}, {8 * i}",
            f"  %r{i + 1} = or i32 {prev}, %p{i}",
        ]
        prev = f"%r{i + 1}"
    lines += [f"  ret i32 {prev}", "}"]
    return "\n".join(lines)


def _lop3_ir() -> str:
    lines = ["define internal i32 @lop3(i32 %a, i32 %b, i32 %c, i32 %lut) alwaysinline {",
             "entry:",
             "  %na = xor i32 %a, -1", "  %nb = xor i32 %b, -1", "  %nc = xor i32 %c, -1",
             "  %r0 = add i32 0, 0"]
    prev = "%r0"
    for k in range(8):
        a = "%a" if k & 4 else "%na"
        b = "%b" if k & 2 else "%nb"
        c = "%c" if k & 1 else "%nc"
        lines += [
            f"  %ab{k} = and i32 {a}, {b}",
            f"  %t{k} = and i32 %ab{k}, {c}",
            f"  %l{k}a = lshr i32 %lut, {k}",
            f"  %l{k}b = and i32 %l{k}a, 1",
            f"  %m{k} = sub i32 0, %l{k}b",
            f"  %u{k} = and i32 %t{k}, %m{k}",
            f"  %r{k + 1} = or i32 {prev}, %u{k}",
        ]
        prev = f"%r{k + 1}"
    lines += [f"  ret i32 {prev}", "}"]
    return "\n".join(lines)


BITS_IR = _prmt_ir() + "\n" + _lop3_ir() + """
define internal i32 @bmsk(i32 %a, i32 %b, i1 %clamp) alwaysinline {
entry:
  %aw = and i32 %a, 31
  %bw = and i32 %b, 31
  %ac = call i32 @llvm.umin.i32(i32 %a, i32 32)
  %bc = call i32 @llvm.umin.i32(i32 %b, i32 32)
  %pa = select i1 %clamp, i32 %ac, i32 %aw
  %pb = select i1 %clamp, i32 %bc, i32 %bw
  %a64 = zext i32 %pa to i64
  %b64 = zext i32 %pb to i64
  %one = shl i64 1, %b64
  %m = sub i64 %one, 1
  %s = shl i64 %m, %a64
  %r = trunc i64 %s to i32
  ret i32 %r
}

; fns.b32: the position of the |offset|-th set bit of mask counting from bit base, upwards
; for offset > 0 and downwards for offset < 0 (offset 0: base itself if set), 0xffffffff if
; there is none. Both directions become "the n-th set bit from the bottom of m": downwards,
; the |offset|-th from the top of popc(m) bits is the (popc(m) - |offset| + 1)-th from the
; bottom. base is masked to 0..31 (the ISA leaves base > 31 undefined).
define internal i32 @fns(i32 %mask, i32 %base, i32 %offset) {
entry:
  %b = and i32 %base, 31
  %up.m = shl i32 -1, %b
  %dn.sh = sub i32 31, %b
  %dn.m = lshr i32 -1, %dn.sh
  %upward = icmp sgt i32 %offset, 0
  %zero = icmp eq i32 %offset, 0
  %window = select i1 %upward, i32 %up.m, i32 %dn.m
  %bit = shl i32 1, %b
  %window0 = select i1 %zero, i32 %bit, i32 %window
  %m = and i32 %mask, %window0
  %cnt = call i32 @llvm.ctpop.i32(i32 %m)
  %neg = sub i32 0, %offset
  %abs0 = select i1 %upward, i32 %offset, i32 %neg
  %abs = select i1 %zero, i32 1, i32 %abs0
  %enough = icmp ule i32 %abs, %cnt
  br i1 %enough, label %pick, label %none
pick:
  %from.top = sub i32 %cnt, %abs
  %skip = select i1 %upward, i32 %abs0, i32 %from.top
  %skip1 = select i1 %upward, i32 -1, i32 0
  %k = add i32 %skip, %skip1
  br label %loop
loop:
  %i = phi i32 [ %k, %pick ], [ %i.n, %body ]
  %v = phi i32 [ %m, %pick ], [ %v.n, %body ]
  %more = icmp sgt i32 %i, 0
  br i1 %more, label %body, label %done
body:
  %v1 = sub i32 %v, 1
  %v.n = and i32 %v, %v1
  %i.n = sub i32 %i, 1
  br label %loop
done:
  %pos = call i32 @llvm.cttz.i32(i32 %v, i1 true)
  ret i32 %pos
none:
  ret i32 -1
}

define internal i32 @szext(i32 %a, i32 %b, i1 %clamp, i1 %signed) alwaysinline {
entry:
  %bw = and i32 %b, 31
  %bc = call i32 @llvm.umin.i32(i32 %b, i32 32)
  %n = select i1 %clamp, i32 %bc, i32 %bw
  %full = icmp uge i32 %n, 32
  %zero = icmp eq i32 %n, 0
  %sh = sub i32 32, %n
  %shs = select i1 %full, i32 0, i32 %sh
  %up = shl i32 %a, %shs
  %sx = ashr i32 %up, %shs
  %zx = lshr i32 %up, %shs
  %v = select i1 %signed, i32 %sx, i32 %zx
  %v2 = select i1 %zero, i32 0, i32 %v
  ret i32 %v2
}

define internal float @tanh_float(float %x) alwaysinline {
entry:
  %d = fpext float %x to double
  %r = call double @tanh_double(double %d)
  %f = fptrunc double %r to float
  ret float %f
}

define internal double @tanh_double(double %x) alwaysinline {
entry:
  %ax = call double @llvm.fabs.f64(double %x)
  %big = fcmp ogt double %ax, 20.0
  %x2 = fmul double %ax, -2.0
  %e = call double @llvm.exp.f64(double %x2)
  %num = fsub double 1.0, %e
  %den = fadd double 1.0, %e
  %t = fdiv double %num, %den
  %t1 = select i1 %big, double 1.0, double %t
  %r = call double @llvm.copysign.f64(double %t1, double %x)
  ret double %r
}
"""

HALF_IR = """
; float -> bf16 bits, round to nearest even, subnormals kept (LLVM's fptrunc may flush them)
define internal i16 @f32_to_bf16(float %x) alwaysinline {
entry:
  %bits = bitcast float %x to i32
  %nan = fcmp uno float %x, 0.0
  %s16 = lshr i32 %bits, 16
  %lsb = and i32 %s16, 1
  %bias = add i32 %lsb, 32767
  %sum = add i32 %bits, %bias
  %hi = lshr i32 %sum, 16
  %r = trunc i32 %hi to i16
  %out = select i1 %nan, i16 32767, i16 %r
  ret i16 %out
}

; A float (given exactly as a double) -> FP8 code, rounded to nearest even with .satfinite:
; e4m3 (%m = 3 mantissa bits, bias 7, largest finite 0x7E = 448, NaN 0x7F, no infinity) or
; e5m2 (%m = 2, bias 15, largest finite 0x7B = 57344). The quantum is 2^(max(e, emin) - m),
; so round(|x| / quantum) is the mantissa with its leading bit, and adding the biased
; exponent above it gives the code (a carry out of the mantissa bumps the exponent). Any NaN
; becomes the canonical 0x7F in both formats (cuda_fp8.hpp's __nv_cvt_float_to_fp8 first
; makes it 0x7FFFFFFF); .relu gives +0 for values below zero (-0 stays, as for f16).
define internal i32 @to_fp8(double %x, i1 %e4m3, i1 %relu) alwaysinline {
entry:
  %m = select i1 %e4m3, i32 3, i32 2
  %bias = select i1 %e4m3, i32 7, i32 15
  %maxcode = select i1 %e4m3, i32 126, i32 123
  %bits = bitcast double %x to i64
  %sign64 = lshr i64 %bits, 63
  %sign1 = trunc i64 %sign64 to i32
  %sign = shl i32 %sign1, 7
  %abs = and i64 %bits, 9223372036854775807
  %absd = bitcast i64 %abs to double
  %isnan = icmp ugt i64 %abs, 9218868437227405312
  %isinf = icmp eq i64 %abs, 9218868437227405312
  %ebits = lshr i64 %abs, 52
  %e64 = sub i64 %ebits, 1023
  %e = trunc i64 %e64 to i32
  %emin = sub i32 1, %bias
  %elo = call i32 @llvm.smax.i32(i32 %e, i32 %emin)
  %qexp = sub i32 %elo, %m
  %scale.e = sub i32 1023, %qexp
  %scale.e64 = zext i32 %scale.e to i64
  %scale.bits = shl i64 %scale.e64, 52
  %scale = bitcast i64 %scale.bits to double
  %scaled = fmul double %absd, %scale
  %r = call double @llvm.roundeven.f64(double %scaled)
  %ri = fptoui double %r to i32
  %sub = icmp slt i32 %e, %emin
  %be = add i32 %e, %bias
  %bes = shl i32 %be, %m
  %lead = shl i32 1, %m
  %frac = sub i32 %ri, %lead
  %normal = add i32 %bes, %frac
  %code0 = select i1 %sub, i32 %ri, i32 %normal
  %zero = icmp eq i64 %abs, 0
  %code1 = select i1 %zero, i32 0, i32 %code0
  %over = icmp sgt i32 %code1, %maxcode
  %big = or i1 %over, %isinf
  %code = select i1 %big, i32 %maxcode, i32 %code1
  %signed = or i32 %code, %sign
  %neg = icmp ne i32 %sign1, 0
  %nonzero = icmp ne i64 %abs, 0
  %below = and i1 %neg, %nonzero
  %relu.neg = and i1 %relu, %below
  %finite = select i1 %relu.neg, i32 0, i32 %signed
  %out = select i1 %isnan, i32 127, i32 %finite
  ret i32 %out
}

; An FP8 code -> its exact value as a double (NaN for e4m3 0x7F/0xFF and e5m2 NaNs; e5m2
; infinities stay infinite).
define internal double @from_fp8(i32 %code, i1 %e4m3) alwaysinline {
entry:
  %m = select i1 %e4m3, i32 3, i32 2
  %bias = select i1 %e4m3, i32 7, i32 15
  %abs = and i32 %code, 127
  %ef = lshr i32 %abs, %m
  %lead = shl i32 1, %m
  %mmask = sub i32 %lead, 1
  %man = and i32 %abs, %mmask
  %isub = icmp eq i32 %ef, 0
  %withlead = or i32 %man, %lead
  %sig = select i1 %isub, i32 %man, i32 %withlead
  %e1 = select i1 %isub, i32 1, i32 %ef
  %pw0 = sub i32 %e1, %bias
  %pw = sub i32 %pw0, %m
  %sigd = uitofp i32 %sig to double
  %pe = add i32 %pw, 1023
  %pe64 = zext i32 %pe to i64
  %pbits = shl i64 %pe64, 52
  %p = bitcast i64 %pbits to double
  %v = fmul double %sigd, %p
  %e4nan = icmp eq i32 %abs, 127
  %e5inf = icmp eq i32 %abs, 124
  %e5nan = icmp ugt i32 %abs, 124
  %nan = select i1 %e4m3, i1 %e4nan, i1 %e5nan
  %inf = and i1 %e5inf, true
  %isinf = select i1 %e4m3, i1 false, i1 %inf
  %v1 = select i1 %isinf, double 0x7FF0000000000000, double %v
  %v2 = select i1 %nan, double 0x7FF8000000000000, double %v1
  %neg = and i32 %code, 128
  %isneg = icmp ne i32 %neg, 0
  %nv = fneg double %v2
  %out = select i1 %isneg, double %nv, double %v2
  ret double %out
}
"""

WARP_IR = """
define internal i32 @shfl_lane(i32 %lane, i32 %b, i32 %c, i32 %mode) alwaysinline {
entry:
  %clamp = and i32 %c, 31
  %seg0 = lshr i32 %c, 8
  %seg = and i32 %seg0, 31
  %nseg = xor i32 %seg, -1
  %minl = and i32 %lane, %seg
  %cl = and i32 %clamp, %nseg
  %maxl = or i32 %minl, %cl
  %b5 = and i32 %b, 31
  switch i32 %mode, label %idx [ i32 0, label %up
                                 i32 1, label %down
                                 i32 2, label %bfly ]
up:
  %ju = sub i32 %lane, %b5
  %vu = icmp sge i32 %ju, %maxl
  %ru = select i1 %vu, i32 %ju, i32 -1
  ret i32 %ru
down:
  %jd = add i32 %lane, %b5
  %vd = icmp sle i32 %jd, %maxl
  %rd = select i1 %vd, i32 %jd, i32 -1
  ret i32 %rd
bfly:
  %jb = xor i32 %lane, %b5
  %vb = icmp sle i32 %jb, %maxl
  %rb = select i1 %vb, i32 %jb, i32 -1
  ret i32 %rb
idx:
  %bi = and i32 %b5, %nseg
  %ji = or i32 %minl, %bi
  %vi = icmp sle i32 %ji, %maxl
  %ri = select i1 %vi, i32 %ji, i32 -1
  ret i32 %ri
}

; exchange slot of lane l: 4 x i64 at base + 32*l: value, aux, exited, sync-point tag
define internal i32 @warp_active(ptr %base, i32 %valid) {
entry:
  %v = call i32 @llvm.smin.i32(i32 %valid, i32 32)
  br label %loop
loop:
  %l = phi i32 [0, %entry], [%ln, %next]
  %acc = phi i32 [0, %entry], [%acc2, %next]
  %more = icmp slt i32 %l, %v
  br i1 %more, label %body, label %out
body:
  %l64 = zext i32 %l to i64
  %o = mul i64 %l64, 4
  %o2 = add i64 %o, 2
  %ep = getelementptr i64, ptr %base, i64 %o2
  %ex = load i64, ptr %ep
  %alive = icmp eq i64 %ex, 0
  %bit = shl i32 1, %l
  %add = select i1 %alive, i32 %bit, i32 0
  %acc1 = or i32 %acc, %add
  br label %next
next:
  %acc2 = phi i32 [%acc1, %body]
  %ln = add i32 %l, 1
  br label %loop
out:
  ret i32 %acc
}

; lanes (of the first %valid) that wait at the warp operation tagged %tag
define internal i32 @warp_arrived(ptr %base, i32 %valid, i64 %tag) {
entry:
  %v = call i32 @llvm.smin.i32(i32 %valid, i32 32)
  br label %loop
loop:
  %l = phi i32 [0, %entry], [%ln, %body]
  %acc = phi i32 [0, %entry], [%acc1, %body]
  %more = icmp slt i32 %l, %v
  br i1 %more, label %body, label %out
body:
  %l64 = zext i32 %l to i64
  %o = mul i64 %l64, 4
  %o2 = add i64 %o, 2
  %ep = getelementptr i64, ptr %base, i64 %o2
  %ex = load i64, ptr %ep
  %o3 = add i64 %o, 3
  %tp = getelementptr i64, ptr %base, i64 %o3
  %tg = load i64, ptr %tp
  %alive = icmp eq i64 %ex, 0
  %here = icmp eq i64 %tg, %tag
  %both = and i1 %alive, %here
  %bit = shl i32 1, %l
  %add = select i1 %both, i32 %bit, i32 0
  %acc1 = or i32 %acc, %add
  %ln = add i32 %l, 1
  br label %loop
out:
  ret i32 %acc
}

; op: 0 ballot (value != 0), 1..6 reduce add min max and or xor (values sign/zero extended),
; 7 match.any, 8 match.all
define internal i64 @warp_combine(ptr %base, i32 %mask, i32 %lane, i32 %op, i1 %signed) {
entry:
  %my.o = mul i32 %lane, 4
  %my.o64 = zext i32 %my.o to i64
  %my.p = getelementptr i64, ptr %base, i64 %my.o64
  %mine = load i64, ptr %my.p
  %init.and = icmp eq i32 %op, 4
  %init.min = icmp eq i32 %op, 2
  %init.max = icmp eq i32 %op, 3
  %i1 = select i1 %init.and, i64 -1, i64 0
  %smax = select i1 %signed, i64 9223372036854775807, i64 4294967295
  %smin = select i1 %signed, i64 -9223372036854775808, i64 0
  %i2 = select i1 %init.min, i64 %smax, i64 %i1
  %i3 = select i1 %init.max, i64 %smin, i64 %i2
  br label %loop
loop:
  %l = phi i32 [0, %entry], [%ln, %next]
  %acc = phi i64 [%i3, %entry], [%acc.n, %next]
  %same = phi i1 [true, %entry], [%same.n, %next]
  %more = icmp slt i32 %l, 32
  br i1 %more, label %body, label %out
body:
  %bit = shl i32 1, %l
  %inm = and i32 %mask, %bit
  %isin = icmp ne i32 %inm, 0
  %l64 = zext i32 %l to i64
  %o = mul i64 %l64, 4
  %vp = getelementptr i64, ptr %base, i64 %o
  %o2 = add i64 %o, 2
  %ep = getelementptr i64, ptr %base, i64 %o2
  %ex = load i64, ptr %ep
  %alive = icmp eq i64 %ex, 0
  %use = and i1 %isin, %alive
  br i1 %use, label %take, label %next
take:
  %v = load i64, ptr %vp
  %bit64 = zext i32 %bit to i64
  %nz = icmp ne i64 %v, 0
  %bal = select i1 %nz, i64 %bit64, i64 0
  %r.ballot = or i64 %acc, %bal
  %r.add = add i64 %acc, %v
  %lt.s = icmp slt i64 %v, %acc
  %r.min = select i1 %lt.s, i64 %v, i64 %acc
  %gt.s = icmp sgt i64 %v, %acc
  %r.max = select i1 %gt.s, i64 %v, i64 %acc
  %r.and = and i64 %acc, %v
  %r.or = or i64 %acc, %v
  %r.xor = xor i64 %acc, %v
  %eq = icmp eq i64 %v, %mine
  %mbit = select i1 %eq, i64 %bit64, i64 0
  %r.match = or i64 %acc, %mbit
  %same.t = and i1 %same, %eq
  %r.all = or i64 %acc, %bit64
  switch i32 %op, label %s0 [ i32 1, label %s1  i32 2, label %s2  i32 3, label %s3
                              i32 4, label %s4  i32 5, label %s5  i32 6, label %s6
                              i32 7, label %s7  i32 8, label %s8 ]
s0: br label %next
s1: br label %next
s2: br label %next
s3: br label %next
s4: br label %next
s5: br label %next
s6: br label %next
s7: br label %next
s8: br label %next
next:
  %acc.n = phi i64 [%acc, %body], [%r.ballot, %s0], [%r.add, %s1], [%r.min, %s2], [%r.max, %s3],
                   [%r.and, %s4], [%r.or, %s5], [%r.xor, %s6], [%r.match, %s7], [%r.all, %s8]
  %same.n = phi i1 [%same, %body], [%same.t, %s0], [%same.t, %s1], [%same.t, %s2], [%same.t, %s3],
                   [%same.t, %s4], [%same.t, %s5], [%same.t, %s6], [%same.t, %s7], [%same.t, %s8]
  %ln = add i32 %l, 1
  br label %loop
out:
  %isall = icmp eq i32 %op, 8
  %allres = select i1 %same, i64 %acc, i64 0
  %res = select i1 %isall, i64 %allres, i64 %acc
  ret i64 %res
}

define internal i64 @warp_ballot(ptr %base, i32 %mask, i32 %lane) {
entry:
  %r = call i64 @warp_combine(ptr %base, i32 %mask, i32 %lane, i32 0, i1 false)
  ret i64 %r
}

define internal i64 @warp_reduce(ptr %base, i32 %mask, i32 %lane, i32 %code, i1 %signed) {
entry:
  %op = add i32 %code, 1
  %r = call i64 @warp_combine(ptr %base, i32 %mask, i32 %lane, i32 %op, i1 %signed)
  ret i64 %r
}

define internal i64 @warp_match(ptr %base, i32 %mask, i32 %lane, i1 %all) {
entry:
  %op = select i1 %all, i32 8, i32 7
  %r = call i64 @warp_combine(ptr %base, i32 %mask, i32 %lane, i32 %op, i1 false)
  ret i64 %r
}
"""

RUNTIME_IR = ADDRESSING + BITS_IR + HALF_IR + WARP_IR + """
!0 = !{}
!1 = !{!"branch_weights", i32 1000000, i32 1}
"""
