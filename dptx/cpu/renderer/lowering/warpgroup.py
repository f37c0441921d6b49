"""sm_90's warpgroup-level matrix multiply: ``wgmma.mma_async`` with both multiplicands in
shared memory (matrix descriptors), ``wgmma.fence``, ``wgmma.commit_group`` and
``wgmma.wait_group``: what Triton emits for its sm_90 matmuls.

A warpgroup (four consecutive warps, 128 threads) computes D (64 x N) = A (64 x 16) B (16 x
N) + D. Each thread holds N/2 elements of D in its registers; the ISA's fragment layout
("Register Fragments", m64nNk16) gives thread t of the warpgroup (warp w = t / 32, lane l)
element d_i at row 16 w + l / 4 + 8 ((i / 2) % 2) and column 8 (i / 4) + 2 (l % 4) + i % 2,
the layout of mma.m16n8's accumulator repeated over N/8 column blocks and four warps. With A
and B in shared memory, every thread can compute its own elements alone: no exchange
between threads, so the per-thread lowering serves both forms (the warp-vectorized form runs
it lane by lane). The operation is asynchronous on a GPU: the program may not touch D nor
write A and B until ``wgmma.wait_group``; computing it when issued is one of the executions
that allows, and ``fence``/``commit_group``/``wait_group`` have nothing left to order.

Shared memory layouts: the matrix descriptor (start address, leading and stride dimension
byte offsets, base offset, swizzle mode) and the canonical layouts of the ISA's "Shared
Memory Matrix Layout" (K-major when imm-trans is 0, M/N-major when 1; no swizzle, 32-, 64-
and 128-byte swizzles, whose Swizzle<B,4,3> XORs address bits [4, 4+B) with bits [7, 7+B)
of the shared memory address). A descriptor with a non-zero base offset (a swizzle pattern
not aligned to its size) is refused when it is met; an element outside the block's shared
memory is an out-of-bounds fault.

Arithmetic as ``mma``'s: each product of .f16/.bf16 elements is exact, their sum is taken in
double, scale-a/scale-b of -1 negate, and D's element is added and the result rounded once
to f32 (scale-d false: D = A B). Supported: ``.m64nNk16.f32.f16.f16`` and
``.f32.bf16.bf16`` for every N of the ISA (8 to 256 by 8); refused by name: A in registers,
.f16 accumulators, .tf32/.e4m3/.e5m2/.s8/.u8/.b1 inputs, ``.sp``, and every other shape."""
from __future__ import annotations

from .. import address_space as L
from .common import unsupported
from .matrix import MatrixHelpers
from .registry import Registry

registry = Registry("warpgroup")

ERR_DESCRIPTOR = L.ERR_WGMMA_DESCRIPTOR
ELEMENT = {"f16": (2, "half"), "bf16": (2, "bfloat")}

# byte address in shared memory of element (mn, k) of a matrix described by %desc: the ISA's
# canonical layouts (T elements of %es bytes make 16 bytes; S 16-byte chunks make a swizzle
# row of W = 16 S bytes), then the swizzle's XOR. Sets *%bad to 2 for a non-zero base offset.
ADDRESS_HELPER = """define internal i64 @"wgmma.address"(i64 %desc, i32 %mn32, i32 %k32, i1 %mnmajor, i64 %es, ptr %bad) {
entry:
  %mn = zext i32 %mn32 to i64
  %k = zext i32 %k32 to i64
  %start0 = and i64 %desc, 16383
  %start = shl i64 %start0, 4
  %lbo0 = lshr i64 %desc, 16
  %lbo1 = and i64 %lbo0, 16383
  %lbo = shl i64 %lbo1, 4
  %sbo0 = lshr i64 %desc, 32
  %sbo1 = and i64 %sbo0, 16383
  %sbo = shl i64 %sbo1, 4
  %base0 = lshr i64 %desc, 49
  %base = and i64 %base0, 7
  %mode = lshr i64 %desc, 62
  %swizzled = icmp ne i64 %mode, 0
  %based = icmp ne i64 %base, 0
  %badbase = and i1 %swizzled, %based
  br i1 %badbase, label %refuse, label %go
refuse:
  store i64 2, ptr %bad
  ret i64 0
go:
  ; S: 16-byte chunks per swizzle row (mode 1: 128 B, 2: 64 B, 3: 32 B; 0: none)
  %s0 = sub i64 4, %mode
  %s1 = shl i64 1, %s0
  %s = select i1 %swizzled, i64 %s1, i64 1
  %w = shl i64 %s, 4
  %t = udiv i64 16, %es
  br i1 %mnmajor, label %mnm, label %km
km:
  ; K-major: ((8,m),(T,2k)):((S T,SBO),(1,T)) swizzled, ((1T,SBO),(1,LBO)) without
  %r0 = and i64 %mn, 7
  %r1 = lshr i64 %mn, 3
  %kr0 = mul i64 %r0, %w
  %kr1 = mul i64 %r1, %sbo
  %krow = add i64 %kr0, %kr1
  %kin = urem i64 %k, %t
  %kblk = udiv i64 %k, %t
  %kinb = mul i64 %kin, %es
  %kblkb = mul i64 %kblk, %lbo
  %kplain = add i64 %kinb, %kblkb
  %kswz = mul i64 %k, %es
  %kcol = select i1 %swizzled, i64 %kswz, i64 %kplain
  %koff = add i64 %krow, %kcol
  br label %join
mnm:
  ; M/N-major: ((T,S,m),(8,k)):((1,T,LBO),(S T,SBO)) swizzled, ((T,1,m),(8,k)):((1,T,SBO),(1T,LBO)) without
  %run = mul i64 %s, %t
  %n0 = urem i64 %mn, %run
  %n1 = udiv i64 %mn, %run
  %nb0 = mul i64 %n0, %es
  %nstride = select i1 %swizzled, i64 %lbo, i64 %sbo
  %kstride = select i1 %swizzled, i64 %sbo, i64 %lbo
  %nb1 = mul i64 %n1, %nstride
  %k0 = and i64 %k, 7
  %k1 = lshr i64 %k, 3
  %kb0 = mul i64 %k0, %w
  %kb1 = mul i64 %k1, %kstride
  %m1 = add i64 %nb0, %nb1
  %m2 = add i64 %kb0, %kb1
  %moff = add i64 %m1, %m2
  br label %join
join:
  %off = phi i64 [%koff, %km], [%moff, %mnm]
  %addr = add i64 %start, %off
  ; Swizzle<B,4,3>: bits [4, 4+B) ^= bits [7, 7+B), B = log2 S
  %hi = lshr i64 %addr, 7
  %sm = sub i64 %s, 1
  %sel = and i64 %hi, %sm
  %x = shl i64 %sel, 4
  %swz = xor i64 %addr, %x
  ret i64 %swz
}"""


class WarpgroupLowering(MatrixHelpers):
    """``wgmma`` per thread (and, lane by lane, in the warp-vectorized form)."""

    @registry.lower("wgmma")
    def op_wgmma(self, inst):
        mods = set(inst.modifiers)
        if not {"sync", "aligned"} <= mods:
            raise unsupported(inst, "wgmma takes .sync.aligned")
        if mods & {"fence", "commit_group", "wait_group"}:
            # each mma_async completed when issued: nothing is left to order or wait for
            return
        if "mma_async" not in mods:
            raise unsupported(inst)
        self.wgmma_mma(inst, mods)

    def wgmma_mma(self, inst, mods: set) -> None:
        shape = next((m for m in inst.modifiers if m.startswith("m64n")), None)
        types = list(inst.types)
        n = int(shape[4:-3]) if shape and shape.endswith("k16") and shape[4:-3].isdigit() else 0
        if "sp" in mods or not (8 <= n <= 256 and n % 8 == 0) or len(types) != 3 or \
                types[0] != "f32" or types[1] != types[2] or types[1] not in ELEMENT or \
                mods - {"mma_async", "sync", "aligned", shape} - set(types):
            raise unsupported(inst, "wgmma.mma_async runs here as .m64nNk16.f32 with .f16 or "
                                    ".bf16 multiplicands, both in shared memory (descriptors)")
        ops = list(inst.operands)
        if len(ops) != 8:
            raise unsupported(inst, "wgmma.mma_async with A in registers (only A and B "
                                    "through shared memory descriptors run here)")
        d_op, a_op, b_op, scale_d, scale_a, scale_b, trans_a, trans_b = ops
        d_regs = self.vector_items(d_op)
        if len(d_regs) != n // 2:
            raise unsupported(inst, f"wgmma.mma_async.{shape}.f32 takes {n // 2} D registers")
        imms = []
        for op, name in ((scale_a, "imm-scale-a"), (scale_b, "imm-scale-b"),
                         (trans_a, "imm-trans-a"), (trans_b, "imm-trans-b")):
            value = getattr(op, "value", None)
            if getattr(op, "kind", None) != "int" or value not in ((1, -1) if "scale" in name
                                                                   else (0, 1)):
                raise unsupported(inst, f"wgmma.mma_async's {name} must be an immediate "
                                        f"{'1 or -1' if 'scale' in name else '0 or 1'}")
            imms.append(value)
        negate = (imms[0] * imms[1]) < 0
        dot = self.wgmma_dot_helper(types[1])
        desc_a = self.read(a_op, "i64", inst)
        desc_b = self.read(b_op, "i64", inst)
        accumulate = self.read(scale_d, "i1", inst)
        smem = self.ctx_ptr("shared")
        sp = self.tmp(); self.emit(f"{sp} = getelementptr i64, ptr %ctx, i64 {L.CTX['shared_size']}")
        size = self.tmp(); self.emit(f"{size} = load i64, ptr {sp}")
        bad = self.tmp()        # (in the entry block: an alloca in a loop would grow the stack)
        self.prologue.append(f"  {bad} = alloca [2 x i64]")
        self.emit(f"store i64 0, ptr {bad}")
        # this thread's place in its warpgroup: warp w (of 4), lane group g = l / 4, t = l % 4
        tid = self.ti(6)
        w0 = self.tmp(); self.emit(f"{w0} = lshr i32 {tid}, 5")
        w = self.tmp(); self.emit(f"{w} = and i32 {w0}, 3")
        g, t = self.lane_group()
        row0a = self.tmp(); self.emit(f"{row0a} = shl i32 {w}, 4")
        row0 = self.tmp(); self.emit(f"{row0} = add i32 {row0a}, {g}")
        row8 = self.op_add_const(row0, 8)
        col0 = self.tmp(); self.emit(f"{col0} = shl i32 {t}, 1")
        ta, tb = ("true" if v else "false" for v in imms[2:])
        results = []
        for i in range(n // 2):
            row = row8 if (i // 2) % 2 else row0
            col = self.op_add_const(col0, 8 * (i // 4) + i % 2)
            prod = self.tmp()
            self.emit(f"{prod} = call double @\"{dot}\"(ptr {smem}, i64 {size}, i64 {desc_a}, "
                      f"i64 {desc_b}, i32 {row}, i32 {col}, i1 {ta}, i1 {tb}, ptr {bad})")
            if negate:
                neg = self.tmp(); self.emit(f"{neg} = fneg double {prod}")
                prod = neg
            c = self.read(d_regs[i], "float", inst)
            wide = self.tmp(); self.emit(f"{wide} = fpext float {c} to double")
            total = self.tmp(); self.emit(f"{total} = fadd double {prod}, {wide}")
            chosen = self.tmp()
            self.emit(f"{chosen} = select i1 {accumulate}, double {total}, double {prod}")
            r = self.tmp(); self.emit(f"{r} = fptrunc double {chosen} to float")
            results.append(r)
        code = self.tmp(); self.emit(f"{code} = load i64, ptr {bad}")
        failed = self.tmp(); self.emit(f"{failed} = icmp ne i64 {code}, 0")
        fault, ok = self.label("wgbad"), self.label("wgok")
        self.emit(f"br i1 {failed}, label %{fault}, label %{ok}, !prof !1")
        self.block(fault)
        where = self.tmp(); self.emit(f"{where} = getelementptr i64, ptr {bad}, i64 1")
        value = self.tmp(); self.emit(f"{value} = load i64, ptr {where}")
        es = ELEMENT[types[1]][0]
        self.emit(f"call void @record_error(ptr %ctx, ptr %ti, i64 {code}, i64 {value}, "
                  f"i32 {inst.line}, i64 {es})")
        self.emit("br label %fault")
        self.block(ok)
        for reg, v in zip(d_regs, results):
            self.write(reg, v, "float", inst)

    def wgmma_dot_helper(self, atype: str) -> str:
        """Name of ``@wgmma.dot.<type>(ptr smem, i64 size, i64 desc_a, i64 desc_b, i32 row,
        i32 col, i1 a_mn_major, i1 b_mn_major, ptr bad)``: the dot product of row ``row`` of
        A and column ``col`` of B (16 elements each) read from shared memory through the
        descriptors, in double (exact products). An element outside the ``size`` bytes of
        shared memory sets bad[0] to 1 (``ERR_BOUNDS``) and bad[1] to its address; a
        descriptor refused sets bad[0] to ``ERR_DESCRIPTOR`` and bad[1] to the descriptor."""
        name = f"wgmma.dot.{atype}"
        if name in self.mod.directed:
            return name
        self.mod.directed["wgmma.address"] = ADDRESS_HELPER
        es, kind = ELEMENT[atype]
        shared_base = L.SHARED_WINDOW << L.WINDOW_SHIFT

        def element(side: str, desc: str, mn: str, major: str) -> str:
            return f"""  %{side}a = call i64 @"wgmma.address"(i64 {desc}, i32 {mn}, i32 %k, i1 {major}, i64 {es}, ptr %{side}flag)
  %{side}f = load i64, ptr %{side}flag
  %{side}end = add i64 %{side}a, {es}
  %{side}out = icmp ugt i64 %{side}end, %size
  %{side}refused = icmp ne i64 %{side}f, 0
  br i1 %{side}refused, label %refused_{side}, label %{side}chk
{side}chk:
  br i1 %{side}out, label %out_{side}, label %{side}ok
{side}ok:
  %{side}p = getelementptr i8, ptr %s, i64 %{side}a
  %{side}h = load {kind}, ptr %{side}p, align 1
  %{side}d = fpext {kind} %{side}h to double"""

        def failure(side: str, desc: str) -> str:
            return f"""refused_{side}:
  store i64 {ERR_DESCRIPTOR}, ptr %bad
  store i64 {desc}, ptr %badv
  ret double 0.0
out_{side}:
  store i64 {L.ERR_BOUNDS}, ptr %bad
  %{side}addr = or i64 %{side}a, {shared_base}
  store i64 %{side}addr, ptr %badv
  ret double 0.0"""

        self.mod.directed[name] = f'''define internal double @"{name}"(ptr %s, i64 %size, i64 %da, i64 %db, i32 %row, i32 %col, i1 %ta, i1 %tb, ptr %bad) noinline {{   ; (called N/2 times per instruction: not inlined)
entry:
  %aflag = alloca i64
  %bflag = alloca i64
  store i64 0, ptr %aflag
  store i64 0, ptr %bflag
  %badv = getelementptr i64, ptr %bad, i64 1
  br label %loop
loop:
  %k = phi i32 [0, %entry], [%k1, %bok]
  %acc = phi double [0.0, %entry], [%acc1, %bok]
{element("a", "%da", "%row", "%ta")}
{element("b", "%db", "%col", "%tb")}
  %prod = fmul double %ad, %bd
  %acc1 = fadd double %acc, %prod
  %k1 = add i32 %k, 1
  %more = icmp ult i32 %k1, 16
  br i1 %more, label %loop, label %done
done:
  ret double %acc1
{failure("a", "%da")}
{failure("b", "%db")}
}}'''
        return name
