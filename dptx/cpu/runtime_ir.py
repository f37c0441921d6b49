"""LLVM IR of the executor's runtime: address translation with bounds checks, error and
printf records, bit-manipulation helpers (prmt, lop3...), warp exchanges, and the two block
schedulers (a plain loop over threads; resumable threads with barriers and warp operations).

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


def _ctx_load(name, field, ty="i64"):
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
{_ctx_load("err", "error", "ptr")}  %pair = cmpxchg ptr %err, i64 0, i64 %code seq_cst seq_cst
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
{_ctx_load("err", "error", "ptr")}  %cq = getelementptr i64, ptr %err, i64 6
  store i64 %cline, ptr %cq
  %nq = getelementptr i64, ptr %err, i64 7
  store i64 %func, ptr %nq
  br label %done
done:
  ret void
}}

define internal ptr @xshared(ptr %ctx, ptr %ti, ptr %lbase, i64 %off, i64 %size, i32 %line) alwaysinline {{
entry:
{_ctx_load("ss", "shared_size")}  %end = add i64 %off, %size
  %ok = icmp ule i64 %end, %ss
  %small = icmp ult i64 %off, {MASK}
  %good = and i1 %ok, %small
  br i1 %good, label %yes, label %no
yes:
{_ctx_load("sh", "shared", "ptr")}  %p = getelementptr i8, ptr %sh, i64 %off
  ret ptr %p
no:
  %va = or i64 %off, {L.buffer_address(L.SHARED_WINDOW)}
  call void @record_error(ptr %ctx, ptr %ti, i64 {L.ERR_BOUNDS}, i64 %va, i32 %line, i64 %size)
  ret ptr null
}}

define internal ptr @xlocal(ptr %ctx, ptr %ti, ptr %lbase, i64 %off, i64 %size, i32 %line) alwaysinline {{
entry:
{_ctx_load("ls", "local_size")}  %end = add i64 %off, %size
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
{_ctx_load("nb", "nbuf")}  %inr = icmp ult i64 %w, %nb
  br i1 %inr, label %look, label %bad
look:
{_ctx_load("tab", "buftable", "ptr")}  %ei = mul i64 %w, {L.TABLE_ROW}
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
{_ctx_load("ss", "shared_size")}  %r1 = sub i64 %ss, %off
  ret i64 %r1
lo:
{_ctx_load("ls", "local_size")}  %r2 = sub i64 %ls, %off
  ret i64 %r2
buf:
{_ctx_load("nb", "nbuf")}  %inr = icmp ult i64 %w, %nb
  br i1 %inr, label %look, label %none
look:
{_ctx_load("tab", "buftable", "ptr")}  %ei = mul i64 %w, {L.TABLE_ROW}
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
{_ctx_load("cap", "printf_cap")}  %room = icmp ult i64 %idx, %cap
  br i1 %room, label %write, label %full
full:
  ret void
write:
{_ctx_load("buf", "printf", "ptr")}  %off = mul i64 %idx, {L.PRINTF_RECORD_BYTES}
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
            f"  call void @thread_constants(ptr %ctx, ptr %kw)\n")


def _block_loop_head() -> str:
    """Loop over blocks %b in [first, end) (exits to %finish, continues from %bnext), with
    the block's coordinates in %ti."""
    return ("bloop:\n"
            "  %b = phi i64 [%first, %entry], [%bn, %bnext]\n"
            "  %bdone = icmp uge i64 %b, %end\n"
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
        out += _ctx_load(name + "64", field) + f"  %{name} = trunc i64 %{name}64 to i32\n"
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
{_dims()}{_ctx_load("lbase", "local", "ptr")}  br label %bloop
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
{_ctx_load("fa", "fault_addr", "ptr")}  %fap = getelementptr i64, ptr %fa, i64 %ft64
  %addr = load i64, ptr %fap
  %won = call i1 @record_error_values(ptr %ctx, i32 %ft, i64 %b, i64 {L.ERR_BOUNDS}, i64 %addr, i32 %line, i64 %size)
  ret i32 100
fail:
  ret i32 %st
finish:
  ret i32 0
}}
"""


def scheduler_resumable(frame_bytes: int, kw_slots: int) -> str:
    """Block scheduler for kernels with sync points. Frame i32 slots: 0 resume point,
    1 status (0 run, 1 at barrier, 2 at warp op, 3 done), 2 barrier id, 3 barrier count,
    4 reduction op, 5 reduction value, 6 reduction result, 7 PTX line of the barrier."""
    return f"""
define i32 @dptx_run(ptr {CTX_ARG}, i64 %first, i64 %end) {{
entry:
{_scheduler_entry(kw_slots)}{_dims()}{_ctx_load("lmem", "local", "ptr")}{_ctx_load("lsize", "local_size")}{_ctx_load("frames", "frames", "ptr")}{_ctx_load("exch", "exchange", "ptr")}  %npad0 = add i32 %nthr, 31
  %npad = and i32 %npad0, -32
  br label %bloop
{_block_loop_head()}  br label %iloop
iloop:
  %i = phi i32 [0, %bbody], [%in, %ibody]
  %idone = icmp uge i32 %i, %npad
  br i1 %idone, label %sweep, label %ibody
ibody:
  %i64 = zext i32 %i to i64
  %fo = mul i64 %i64, {frame_bytes}
  %fp = getelementptr i8, ptr %frames, i64 %fo
  %real = icmp ult i32 %i, %nthr
  %st0 = select i1 %real, i32 0, i32 3
  store i32 0, ptr %fp
  %fsp = getelementptr i32, ptr %fp, i64 1
  store i32 %st0, ptr %fsp
  %eo = mul i64 %i64, 4
  %eo2 = add i64 %eo, 2
  %ep = getelementptr i64, ptr %exch, i64 %eo2
  %exv = select i1 %real, i64 0, i64 1
  store i64 %exv, ptr %ep
  %in = add i32 %i, 1
  br label %iloop
sweep:
  br label %tloop
tloop:
  %t = phi i32 [0, %sweep], [%tn, %tnext]
  %ndone = phi i32 [0, %sweep], [%ndone.n, %tnext]
  %nwarp = phi i32 [0, %sweep], [%nwarp.n, %tnext]
  %tdone = icmp uge i32 %t, %nthr
  br i1 %tdone, label %decide, label %tbody
tbody:
  %t64 = zext i32 %t to i64
  %tfo = mul i64 %t64, {frame_bytes}
  %tfp = getelementptr i8, ptr %frames, i64 %tfo
  %tsp = getelementptr i32, ptr %tfp, i64 1
  %status = load i32, ptr %tsp
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
  %cur = load i32, ptr %tsp
  %isd = icmp eq i32 %cur, 3
  %isw = icmp eq i32 %cur, 2
  %dd = zext i1 %isd to i32
  %ww = zext i1 %isw to i32
  %ndone.n = add i32 %ndone, %dd
  %nwarp.n = add i32 %nwarp, %ww
  br label %tnext
tnext:
  %tn = add i32 %t, 1
  br label %tloop
decide:
  %alldone = icmp eq i32 %ndone, %nthr
  br i1 %alldone, label %bnext, label %notdone
notdone:
  %anywarp = icmp ugt i32 %nwarp, 0
  %which = select i1 %anywarp, i32 2, i32 1
  %dl = call i32 @release(ptr %ctx, ptr %ti, ptr %frames, i32 %nthr, i32 %which)
  %isdl = icmp ne i32 %dl, 0
  br i1 %isdl, label %deadlock, label %sweep
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

; Let the threads waiting with status %which run again. For barriers (%which = 1): check
; counted barriers can complete and compute bar.red results. Returns 1 on deadlock.
define internal i32 @release(ptr %ctx, ptr %ti, ptr %frames, i32 %nthr, i32 %which) {{
entry:
  br label %count
count:
  %t = phi i32 [0, %entry], [%tn, %cnext]
  %nbar = phi i32 [0, %entry], [%nbar.n, %cnext]
  %npop = phi i32 [0, %entry], [%npop.n, %cnext]
  %maxc = phi i32 [0, %entry], [%maxc.n, %cnext]
  %line = phi i32 [0, %entry], [%line.n, %cnext]
  %minid = phi i32 [16, %entry], [%minid.n, %cnext]
  %maxid = phi i32 [0, %entry], [%maxid.n, %cnext]
  %allcta = phi i1 [false, %entry], [%allcta.n, %cnext]
  %cd = icmp uge i32 %t, %nthr
  br i1 %cd, label %check, label %cbody
cbody:
  %t64 = zext i32 %t to i64
  %fo = mul i64 %t64, {frame_bytes}
  %fp = getelementptr i8, ptr %frames, i64 %fo
  %sp = getelementptr i32, ptr %fp, i64 1
  %st = load i32, ptr %sp
  %waiting = icmp eq i32 %st, %which
  %cp = getelementptr i32, ptr %fp, i64 3
  %c = load i32, ptr %cp
  %vp = getelementptr i32, ptr %fp, i64 5
  %v = load i32, ptr %vp
  %lp = getelementptr i32, ptr %fp, i64 7
  %l = load i32, ptr %lp
  %w1 = zext i1 %waiting to i32
  %nbar.n = add i32 %nbar, %w1
  %vnz = icmp ne i32 %v, 0
  %vw = and i1 %vnz, %waiting
  %v1 = zext i1 %vw to i32
  %npop.n = add i32 %npop, %v1
  %cw = select i1 %waiting, i32 %c, i32 0
  %maxc.n = call i32 @llvm.umax.i32(i32 %maxc, i32 %cw)
  %line.n = select i1 %waiting, i32 %l, i32 %line
  %idp = getelementptr i32, ptr %fp, i64 2
  %id = load i32, ptr %idp
  %idlo = select i1 %waiting, i32 %id, i32 16
  %idhi = select i1 %waiting, i32 %id, i32 0
  %minid.n = call i32 @llvm.umin.i32(i32 %minid, i32 %idlo)
  %maxid.n = call i32 @llvm.umax.i32(i32 %maxid, i32 %idhi)
  %nocount = icmp eq i32 %c, 0
  %ctawait = and i1 %waiting, %nocount
  %allcta.n = or i1 %allcta, %ctawait
  %tn0 = add i32 %t, 1
  br label %cnext
cnext:
  %tn = phi i32 [%tn0, %cbody]
  br label %count
check:
  %isbar = icmp eq i32 %which, 1
{_ctx_load("arrp", "arrivals", "ptr")}  %arrived64 = load i64, ptr %arrp
  %arrived = trunc i64 %arrived64 to i32
  %present = add i32 %nbar, %arrived
  %warps0 = add i32 %present, 31
  %warps = and i32 %warps0, -32
  %short = icmp ugt i32 %maxc, %warps
  ; threads wait at different barriers while one of them waits for the whole CTA: the
  ; CTA-wide barrier can never complete
  %split = icmp ne i32 %minid, %maxid
  %splitdead = and i1 %split, %allcta
  %bad = or i1 %short, %splitdead
  %dead = and i1 %isbar, %bad
  br i1 %dead, label %deadlock, label %wake
deadlock:
  %addr = zext i32 %maxc to i64
  call void @record_error(ptr %ctx, ptr %ti, i64 {L.ERR_DEADLOCK}, i64 %addr, i32 %line, i64 0)
  ret i32 1
wake:
  br i1 %isbar, label %resetarr, label %wloop
resetarr:
  store i64 0, ptr %arrp
  br label %wloop
wloop:
  %u = phi i32 [0, %wake], [0, %resetarr], [%un, %wnext]
  %wd = icmp uge i32 %u, %nthr
  br i1 %wd, label %done, label %wbody
wbody:
  %u64 = zext i32 %u to i64
  %wfo = mul i64 %u64, {frame_bytes}
  %wfp = getelementptr i8, ptr %frames, i64 %wfo
  %wsp = getelementptr i32, ptr %wfp, i64 1
  %wst = load i32, ptr %wsp
  %wwait = icmp eq i32 %wst, %which
  br i1 %wwait, label %wake1, label %wnext
wake1:
  store i32 0, ptr %wsp
  %opp = getelementptr i32, ptr %wfp, i64 4
  %op = load i32, ptr %opp
  %all = icmp eq i32 %npop, %nbar
  %any = icmp ne i32 %npop, 0
  %alli = zext i1 %all to i32
  %anyi = zext i1 %any to i32
  %isand = icmp eq i32 %op, 2
  %isor = icmp eq i32 %op, 3
  %r1 = select i1 %isand, i32 %alli, i32 %npop
  %r2 = select i1 %isor, i32 %anyi, i32 %r1
  %rp = getelementptr i32, ptr %wfp, i64 6
  store i32 %r2, ptr %rp
  br label %wnext
wnext:
  %un = add i32 %u, 1
  br label %wloop
done:
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
{_scheduler_entry(kw_slots)}{_dims()}{_ctx_load("frames", "frames", "ptr")}  %nw0 = add i32 %nthr, 31
  %nw = lshr i32 %nw0, 5
  br label %bloop
{_block_loop_head()}  br label %iloop
iloop:
  %i = phi i32 [0, %bbody], [%in, %ibody]
  %idone = icmp uge i32 %i, %nw
  br i1 %idone, label %round, label %ibody
ibody:
  %i64 = zext i32 %i to i64
  %fo = mul i64 %i64, {frame_bytes}
  %fp = getelementptr i8, ptr %frames, i64 %fo
  call void @llvm.memset.p0.i64(ptr %fp, i8 0, i64 {header_bytes}, i1 false)
  %wp = getelementptr i8, ptr %fp, i64 8
  store i32 %i, ptr %wp
  %in = add i32 %i, 1
  br label %iloop
round:
  br label %wloop
wloop:
  %w = phi i32 [0, %round], [%wn, %wnext]
  %ndone = phi i32 [0, %round], [%ndone.n, %wnext]
  %wd = icmp uge i32 %w, %nw
  br i1 %wd, label %decide, label %wbody
wbody:
  %w64 = zext i32 %w to i64
  %wfo = mul i64 %w64, {frame_bytes}
  %wfp = getelementptr i8, ptr %frames, i64 %wfo
  %wsp = getelementptr i8, ptr %wfp, i64 4
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
