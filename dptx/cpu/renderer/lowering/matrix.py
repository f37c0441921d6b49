"""Tensor-core (warp-wide matrix) instructions: ``mma.sync``, ``ldmatrix``, ``stmatrix``,
``movmatrix`` and ``wmma``.

A warp's 32 threads hold the fragments of the matrices between them, in the layouts the PTX
ISA documents ("Matrix Fragments for mma.m16n8k16"; ``ldmatrix``'s row addresses). Per
thread, each of these is a warp sync point: every lane writes what it holds (its fragment
registers, or its row address) into its slot of the tensor-core exchange area (``matrix`` in
the context, 128 bytes per thread), the warp meets, each lane computes its own part of the
result from the slots of the lanes that hold the elements it needs, and the warp meets again
before any lane may overwrite its slot (``MatrixLowering.warp_phases``). In the
warp-vectorized form the whole warp runs together: each phase runs for every active lane in
turn and no meeting is needed (``MatrixVectorLowering``); both forms share the per-lane code,
so their results agree bit for bit. As the ISA says of ``.aligned``, every lane of the warp
must execute the instruction: with only some, both forms compute from the others' stale
slots (a GPU's behaviour is undefined).

Supported, each checked against NVIDIA's results (ZLUDA's tests, run on GPUs) and numpy:
``mma.sync.aligned.<shape>.row.col`` for every shape and type of the ISA's sm_80/sm_90 table
but Volta's m8n8k4 .f16: .f16 (m16n8k8, m16n8k16; .f16 or .f32 C and D, mixed), .e4m3/.e5m2
(m16n8k16, m16n8k32, either with either; .f16 or .f32 C and D, the same; sm_89), .bf16
(m16n8k8, m16n8k16; .f32), .tf32 (m16n8k4, m16n8k8), .f64 (m8n8k4, m16n8k4/k8/k16), .s8/.u8
(m8n8k16, m16n8k16, m16n8k32), .s4/.u4 (m8n8k32, m16n8k32, m16n8k64), with .s32 accumulators
(wrapping, or clamped with .satfinite), and .b1 (m8n8k128, m16n8k128, m16n8k256, .xor.popc and
.and.popc); ``ldmatrix``/``stmatrix.sync.aligned.m8n8`` ``.x1/.x2/.x4`` with and without
``.trans`` (shared memory, or a generic address of it) and ``movmatrix.m8n8.trans``;
``wmma.load``/``.store``/``.mma`` for ``.m16n16k16``, ``.m32n8k16`` and ``.m8n32k16`` with
``.f16``/``.bf16`` inputs and ``.f32`` (or, with ``.f16`` inputs, ``.f16``) accumulators or
``.s8``/``.u8`` inputs and ``.s32`` accumulators, ``.m16n16k8`` ``.tf32`` and ``.m8n8k4``
``.f64`` (``.rn``), any layouts and strides, and the sub-byte ``.m8n8k32`` ``.s4``/``.u4``
and ``.m8n8k128`` ``.b1`` (A row-major, B column-major; wmma's fragment layout is the
implementation's to choose; see ``wmma.py``). Integer products are exact. Float products are exact and accumulated in
double, then rounded once to the accumulator type; .f64 in double-double (the hardware's own
accumulation order and rounding are not specified by the ISA; results agree with it to the
last bit on ZLUDA's tests and within one ulp of the exact result elsewhere). Every other
shape, type or layout raises ``PtxUnsupportedError``."""
from __future__ import annotations

from ....ptx.ir import TYPE_NAMES
from .common import ST_WARP, unsupported
from .registry import Registry
from .numeric_helpers import NumericHelpers

SLOT_BYTES = 128         # per thread in the tensor-core exchange area

# One step of the .f64 dot products of the IR helpers (mma's and wmma's): (%acc, %lo) +=
# %ad %bd in double-double (each product's rounding error from an fma, each sum's by TwoSum),
# from C in %acc; the result is rounded once at the end.
DOUBLE_DOUBLE_STEP = "\n".join([
    "  %prod = fmul double %ad, %bd",
    "  %nprod = fneg double %prod",
    "  %perr = call double @llvm.fma.f64(double %ad, double %bd, double %nprod)",
    "  %acc1 = fadd double %acc, %prod",
    "  %bb = fsub double %acc1, %acc",
    "  %sb = fsub double %acc1, %bb",
    "  %e1 = fsub double %acc, %sb",
    "  %e2 = fsub double %prod, %bb",
    "  %serr = fadd double %e1, %e2",
    "  %lo0 = fadd double %lo, %serr",
    "  %lo1 = fadd double %lo0, %perr"])
DOUBLE_DOUBLE_PHI = "\n  %lo = phi double [0.0, %entry], [%lo1, %loop]"
DOUBLE_DOUBLE_FINISH = "  %total = fadd double %acc1, %lo1\n  ret double %total"

registry = Registry("matrix")


class MatrixHelpers(NumericHelpers):
    """A warp's matrix fragments and their products, per thread: what ``mma``/``ldmatrix``
    (here) and ``wmma`` (``wmma.py``) share."""

    def matrix_slot(self, lane_expr: str = None) -> str:
        """Pointer to this thread's (or lane ``lane_expr``'s of this warp) slot of the
        tensor-core exchange area."""
        return self.lane_slot("matrix", SLOT_BYTES, lane_expr)

    def accumulate(self, inst, dot: str, c: str, ctype: str, dtype: str) -> str:
        """``dot`` (double, exact) plus the accumulator element ``c`` (a float, or f16
        bits), rounded once to ``dtype`` (f32, or f16 bits)."""
        if ctype == "f16":
            h = self.tmp(); self.emit(f"{h} = bitcast i16 {c} to half")
            wide = self.tmp(); self.emit(f"{wide} = fpext half {h} to double")
        else:
            wide = self.tmp(); self.emit(f"{wide} = fpext float {c} to double")
        total = self.tmp(); self.emit(f"{total} = fadd double {dot}, {wide}")
        if dtype == "f32":
            r = self.tmp(); self.emit(f"{r} = fptrunc double {total} to float")
            return r
        # one rounding to f16 (through f32 rounded to odd: no double rounding)
        return self.to_half_bits(inst, total, "double", "half")

    def integer_accumulate(self, dot: str, c: str, satfinite: bool) -> str:
        """``dot`` (i64, exact) plus the .s32 accumulator element ``c``, as .s32: wrapping,
        or clamped to the s32 range with .satfinite."""
        wide = self.tmp(); self.emit(f"{wide} = sext i32 {c} to i64")
        total = self.tmp(); self.emit(f"{total} = add i64 {dot}, {wide}")
        if satfinite:
            lo = self.tmp(); self.emit(f"{lo} = call i64 @llvm.smax.i64(i64 {total}, i64 -2147483648)")
            total = self.tmp(); self.emit(f"{total} = call i64 @llvm.smin.i64(i64 {lo}, i64 2147483647)")
        r = self.tmp(); self.emit(f"{r} = trunc i64 {total} to i32")
        return r

    def warp_meets(self, inst):
        self.sync_point(ST_WARP, {"line": inst.line})

    def warp_phases(self, inst, *phases) -> None:
        """Emit a warp-wide operation as ``phases`` (callables, each emitting one lane's part
        of a step), the warp meeting after each: every lane has written its slot before any
        reads the others', and has read before any overwrites its own. Per thread, each
        phase is followed by a warp sync point; the warp-vectorized form
        (``MatrixVectorLowering``) runs each phase for every lane in turn instead. So a phase
        must not use SSA values of an earlier one."""
        for phase in phases:
            phase()
            self.warp_meets(inst)

    def lane_id(self) -> str:
        lane = self.tmp(); self.emit(f"{lane} = and i32 {self.ti(6)}, 31")
        return lane

    def lane_group(self) -> tuple:
        """(groupID, threadID_in_group) of this lane: lane / 4 and lane % 4, the ISA's
        coordinates of a lane in every fragment layout."""
        lane = self.lane_id()
        group = self.tmp(); self.emit(f"{group} = lshr i32 {lane}, 2")
        quad = self.tmp(); self.emit(f"{quad} = and i32 {lane}, 3")
        return group, quad

    def op_add_const(self, v: str, k: int) -> str:
        r = self.tmp(); self.emit(f"{r} = add i32 {v}, {k}")
        return r

    def tmp_shl(self, v: str, k: int) -> str:
        r = self.tmp(); self.emit(f"{r} = shl i32 {v}, {k}")
        return r


class MatrixLowering(MatrixHelpers):
    """Per-thread lowerings (mixed into ``function.Function``)."""

    # -- mma.sync ---------------------------------------------------------------------------
    # The fragment layouts of every mma.sync shape below share one rule (the ISA's tables
    # "Matrix Fragments for mma.m16n8k*" and "mma.m8n8k*", groupID g = lane / 4,
    # threadID_in_group t = lane % 4): with E elements per register (32-bit registers; one
    # .f64 per 64-bit register) and W = 4 E, element k of row r of A is in lane
    # 4 (r % 8) + (k % W) / E, element (k % W) % E of register (r >= 8) + 2 (k / W) (for
    # M = 16; k / W for M = 8); element (k, n) of B in lane 4 n + (k % W) / E, register k / W.
    # C and D: element i of a lane is at row g + 8 (i >= 2), column 2 t + i % 2.
    MMA_SHAPES = {"m8n8k4": (8, 4), "m8n8k16": (8, 16), "m8n8k32": (8, 32),
                  "m8n8k128": (8, 128), "m16n8k4": (16, 4), "m16n8k8": (16, 8),
                  "m16n8k16": (16, 16), "m16n8k32": (16, 32), "m16n8k64": (16, 64),
                  "m16n8k128": (16, 128), "m16n8k256": (16, 256)}
    # input type -> (bits per element, the shapes it exists in, accumulator types allowed)
    MMA_INPUTS = {
        "f16": (16, ("m16n8k8", "m16n8k16"), ("f16", "f32")),
        "e4m3": (8, ("m16n8k16", "m16n8k32"), ("f16", "f32")),
        "e5m2": (8, ("m16n8k16", "m16n8k32"), ("f16", "f32")),
        "bf16": (16, ("m16n8k8", "m16n8k16"), ("f32",)),
        "tf32": (32, ("m16n8k4", "m16n8k8"), ("f32",)),
        "f64": (64, ("m8n8k4", "m16n8k4", "m16n8k8", "m16n8k16"), ("f64",)),
        "s8": (8, ("m8n8k16", "m16n8k16", "m16n8k32"), ("s32",)),
        "u8": (8, ("m8n8k16", "m16n8k16", "m16n8k32"), ("s32",)),
        "s4": (4, ("m8n8k32", "m16n8k32", "m16n8k64"), ("s32",)),
        "u4": (4, ("m8n8k32", "m16n8k32", "m16n8k64"), ("s32",)),
        "b1": (1, ("m8n8k128", "m16n8k128", "m16n8k256"), ("s32",)),
    }
    INTEGER_INPUTS = ("s8", "u8", "s4", "u4")
    FP8_INPUTS = ("e4m3", "e5m2")

    @registry.lower("mma")
    def op_mma(self, inst):
        mods = set(inst.modifiers)
        # the sub-byte element types exist only here: not in the ISA's general type table
        types = [m for m in inst.modifiers if m in TYPE_NAMES or m in ("s4", "u4", "b1")]
        shape = next((m for m in inst.modifiers if m in self.MMA_SHAPES), None)
        if not {"sync", "aligned"} <= mods or shape is None or len(types) != 4:
            raise unsupported(inst, "tensor cores: mma.sync.aligned with one of the shapes "
                                    + ", ".join(self.MMA_SHAPES) + " and four types")
        rows, depth = self.MMA_SHAPES[shape]
        dtype, atype, btype, ctype = types
        if [m for m in inst.modifiers if m in ("row", "col")] != ["row", "col"]:
            raise unsupported(inst, f"mma.{shape} takes .row.col here (m8n8k4 with .f16, "
                                    "Volta's quad-pair form, is not supported)")
        bits, shapes, accumulators = self.MMA_INPUTS.get(atype, (None, (), ()))
        integer, binary = atype in self.INTEGER_INPUTS, atype == "b1"
        allowed_extra = {"satfinite"} if integer else {"xor", "and", "popc"} if binary else set()
        extra = mods - {"sync", "aligned", shape, "row", "col"} - set(types) - allowed_extra
        same_family = btype == atype or (integer and btype in self.INTEGER_INPUTS and
                                         self.MMA_INPUTS[btype][0] == bits) or \
            (atype in self.FP8_INPUTS and btype in self.FP8_INPUTS)
        if extra or shape not in shapes or not same_family or dtype not in accumulators or \
                ctype not in accumulators or \
                (atype != "f16" and dtype != ctype) or \
                (binary and not ("popc" in mods and len(mods & {"xor", "and"}) == 1)):
            raise unsupported(inst, f"mma.{shape} of .{dtype}.{atype}.{btype}.{ctype}"
                              + (" (b1 takes .xor.popc or .and.popc)" if binary else ""))
        reg_bits = 64 if atype == "f64" else 32
        per_reg = reg_bits // bits
        a_count, b_count = rows * depth // (32 * per_reg), depth * 8 // (32 * per_reg)
        c_count = rows // 8 if ctype == "f16" else rows // 4
        d_count = rows // 8 if dtype == "f16" else rows // 4
        d_op, a_op, b_op, c_op = inst.operands
        a_regs, b_regs = self.vector_items(a_op), self.vector_items(b_op)
        c_regs, d_regs = self.vector_items(c_op), self.vector_items(d_op)
        if (len(a_regs), len(b_regs), len(c_regs), len(d_regs)) != \
                (a_count, b_count, c_count, d_count):
            raise unsupported(inst, f"mma.{shape}.{dtype}.{atype}.{btype}.{ctype} takes "
                                    f"{d_count}, {a_count}, {b_count} and {c_count} registers")
        dot = self.mma_dot_helper(atype, btype, rows, depth, a_count,
                                  "xor" if "xor" in mods else "and")

        def give():
            """This lane's A and B fragment registers into its slot."""
            word = f"i{reg_bits}"
            slot = self.matrix_slot()
            for i, r in enumerate(list(a_regs) + list(b_regs)):
                v = self.read(r, word, inst)
                p = self.tmp(); self.emit(f"{p} = getelementptr i8, ptr {slot}, i64 {reg_bits // 8 * i}")
                self.emit(f"store {word} {v}, ptr {p}")

        def take():
            self.mma_take(inst, dot, rows, atype, ctype, dtype, c_regs, d_regs,
                          integer or binary, "satfinite" in mods)

        self.warp_phases(inst, give, take)

    def mma_take(self, inst, dot: str, rows: int, atype: str, ctype: str, dtype: str,
                 c_regs, d_regs, integer: bool, satfinite: bool) -> None:
        """This lane's elements of D = A B + C (rows g and g + 8, columns 2t and 2t + 1),
        from the warp's slots."""
        g, t = self.lane_group()
        col0 = self.tmp(); self.emit(f"{col0} = shl i32 {t}, 1")
        base = self.matrix_slot("0")
        if ctype == "f16":          # two per register, c0 in the low half
            cs = []
            for r in c_regs:
                v = self.read(r, "i32", inst)
                for shift in (0, 16):
                    s = self.tmp(); self.emit(f"{s} = lshr i32 {v}, {shift}")
                    h = self.tmp(); self.emit(f"{h} = trunc i32 {s} to i16")
                    cs.append(h)
        else:
            cs = [self.read(r, {"f32": "float", "f64": "double"}.get(ctype, "i32"), inst)
                  for r in c_regs]
        results = []
        for i in range(rows // 4):
            row = g if i < 2 else self.op_add_const(g, 8)
            col = col0 if i % 2 == 0 else self.op_add_const(col0, 1)
            r = self.tmp()
            if atype == "f64":      # the helper adds C too (see mma_dot_helper)
                self.emit(f"{r} = call double @\"{dot}\"(ptr {base}, i32 {row}, i32 {col}, "
                          f"double {cs[i]})")
            elif integer:
                self.emit(f"{r} = call i64 @\"{dot}\"(ptr {base}, i32 {row}, i32 {col})")
                r = self.integer_accumulate(r, cs[i], satfinite)
            else:
                self.emit(f"{r} = call double @\"{dot}\"(ptr {base}, i32 {row}, i32 {col})")
                r = self.accumulate(inst, r, cs[i], ctype, dtype)
            results.append(r)
        if dtype == "f16":
            for k, r in enumerate(d_regs):
                lo = self.conv(results[2 * k], "i16", "i32")
                hi0 = self.conv(results[2 * k + 1], "i16", "i32")
                hi = self.tmp(); self.emit(f"{hi} = shl i32 {hi0}, 16")
                v = self.tmp(); self.emit(f"{v} = or i32 {hi}, {lo}")
                self.write(r, v, "i32", inst)
        else:
            ty = {"f32": "float", "f64": "double"}.get(dtype, "i32")
            for r, v in zip(d_regs, results):
                self.write(r, v, ty, inst)

    # input type -> how an element widens to the accumulation type (i64 or double)
    WIDEN = {"s8": "sext", "s4": "sext", "u8": "zext", "u4": "zext", "b1": "zext",
             "f16": "half", "bf16": "bfloat", "tf32": "float", "f64": "double",
             "e4m3": "fp8", "e5m2": "fp8"}

    def mma_dot_helper(self, atype: str, btype: str, rows: int, depth: int, a_count: int,
                       op: str) -> str:
        """Name of ``@mma.dot.<a>.<b>.m<M>k<K>(ptr slots, i32 row, i32 col)``: the dot
        product of row ``row`` of A and column ``col`` of B, read from the warp's slots in
        the fragment layout above (a lane's A registers first, then its B registers).

        Integers: exact, in i64. b1: the number of set bits of (row ``op`` column). Floats
        other than .f64 (.e4m3/.e5m2 through their exact values, NaN codes giving NaN):
        each product is exact in double (at most 24-bit significands), and
        so is the sum but for its last bits; the caller adds C and rounds once. .tf32 takes
        the whole f32 value (NVIDIA leaves the number of precision bits of .tf32 to the
        hardware, at least 10; compilers round the inputs with cvt.rna.tf32.f32 first).
        .f64 (with ``double c`` as a fourth argument; returns D's element): the products
        and C summed in double-double (each product's rounding error from an fma, each
        sum's by TwoSum), then rounded once: the exact result or within an ulp of it."""
        f64 = atype == "f64"
        name = f"mma.dot.{atype}.{btype}.m{rows}k{depth}" + (f".{op}" if atype == "b1" else "")
        if name in self.mod.directed:
            return name
        bits = self.MMA_INPUTS[atype][0]
        reg_bits = 64 if f64 else 32
        per_reg = reg_bits // bits
        reg_bytes = reg_bits // 8
        word = f"i{reg_bits}"
        integer = self.WIDEN[atype] in ("sext", "zext")
        acc_ty = "i64" if integer else "double"

        def element(side: str, kind: str) -> list:
            """IR that loads element %elem of register %<side>reg of lane %<side>lane and
            widens it into %<side>d."""
            widen = self.WIDEN[kind]
            lines = [
                f"  %{side}off0 = mul i32 %{side}lane, {SLOT_BYTES}",
                f"  %{side}off1 = mul i32 %{side}reg, {reg_bytes}",
                f"  %{side}off = add i32 %{side}off0, %{side}off1",
                f"  %{side}offw = zext i32 %{side}off to i64",
                f"  %{side}p = getelementptr i8, ptr %s, i64 %{side}offw",
                f"  %{side}w = load {word}, ptr %{side}p",
                f"  %{side}sh0 = mul i32 %elem, {bits}",
                f"  %{side}sh = zext i32 %{side}sh0 to {word}" if reg_bits == 64 else
                f"  %{side}sh = add i32 %{side}sh0, 0",
                f"  %{side}x = lshr {word} %{side}w, %{side}sh"]
            value = f"%{side}x"
            if bits < reg_bits:
                lines.append(f"  %{side}i = trunc {word} %{side}x to i{bits}")
                value = f"%{side}i"
            if widen in ("sext", "zext"):
                lines.append(f"  %{side}d = {widen} i{bits} {value} to i64")
            elif widen == "double":
                lines.append(f"  %{side}d = bitcast i64 {value} to double")
            elif widen == "fp8":        # the exact value (runtime_ir's @from_fp8)
                lines.append(f"  %{side}z = zext i8 {value} to i32")
                lines.append(f"  %{side}d = call double @from_fp8(i32 %{side}z, "
                             f"i1 {'true' if kind == 'e4m3' else 'false'})")
            else:
                lines.append(f"  %{side}h = bitcast i{bits} {value} to {widen}")
                lines.append(f"  %{side}d = fpext {widen} %{side}h to double")
            return lines

        a_reg = ("  %areg0 = shl i32 %chunk, 1\n  %areg = add i32 %areg0, %rhi" if rows == 16
                 else "  %areg = add i32 %chunk, 0")
        loads = "\n".join(element("a", atype) + element("b", btype))
        if f64:
            step, extra_phi, finish = DOUBLE_DOUBLE_STEP, DOUBLE_DOUBLE_PHI, DOUBLE_DOUBLE_FINISH
            params, start = ", double %c", "%c"
        else:
            if atype == "b1":
                product = f"  %prod = {op} i64 %ad, %bd"
            else:
                product = f"  %prod = {'mul' if integer else 'fmul'} {acc_ty} %ad, %bd"
            step = product + f"\n  %acc1 = {'add' if integer else 'fadd'} {acc_ty} %acc, %prod"
            params, start, extra_phi = "", "0" if integer else "0.0", ""
            finish = f"  ret {acc_ty} %acc1"
        self.mod.directed[name] = f'''define internal {acc_ty} @"{name}"(ptr %s, i32 %row, i32 %col{params}) {{
entry:
  %rlo = and i32 %row, 7
  %rhi = lshr i32 %row, 3
  %alane0 = shl i32 %rlo, 2
  %blane0 = shl i32 %col, 2
  br label %loop
loop:
  %k = phi i32 [0, %entry], [%k1, %loop]
  %acc = phi {acc_ty} [{start}, %entry], [%acc1, %loop]{extra_phi}
  %chunk = udiv i32 %k, {4 * per_reg}
  %kk = urem i32 %k, {4 * per_reg}
  %pair = udiv i32 %kk, {per_reg}
  %elem = urem i32 %kk, {per_reg}
  %alane = add i32 %alane0, %pair
{a_reg}
  %blane = add i32 %blane0, %pair
  %breg = add i32 %chunk, {a_count}
{loads}
{step}
  %k1 = add i32 %k, 1
  %more = icmp ult i32 %k1, {depth}
  br i1 %more, label %loop, label %done
done:
{finish}
}}'''
        return name

    # -- ldmatrix, stmatrix, movmatrix -------------------------------------------------------
    # The fragment of an 8x8 b16 matrix: lane t holds the elements (t / 4, 2 (t % 4) + j),
    # j = 0 in the low half of its register; lanes 8 i .. 8 i + 7 give the addresses of the 8
    # rows (16 bytes each) of matrix i. .trans: lane t holds (2 (t % 4) + j, t / 4) instead.
    def matrix_form(self, inst, name: str) -> tuple:
        """(matrices, state space) of an ldmatrix/stmatrix, or unsupported."""
        mods = set(inst.modifiers)
        count = next((int(m[1:]) for m in mods if m in ("x1", "x2", "x4")), None)
        # no state space: a generic address (of shared memory)
        space = "shared" if any(m.split("::")[0] == "shared" for m in mods) else "generic"
        extra = mods - {"sync", "aligned", "m8n8", "x1", "x2", "x4", "trans", "b16"} - \
            {m for m in mods if m.split("::")[0] == "shared"}
        if not {"sync", "aligned", "m8n8", "b16"} <= mods or count is None or extra:
            raise unsupported(inst, f"{name}: only .sync.aligned.m8n8.x{{1,2,4}}{{.trans}}"
                                    f"{{.shared}}.b16")
        return count, space

    def give_row_addresses(self, inst, addr_op, count: int, space: str) -> None:
        """Lanes 0 .. 8 count - 1 put the host address of their row in their slot (checked
        for its 16 bytes), the others 0 (a phase of ``warp_phases``)."""
        lane = self.lane_id()
        gives = self.tmp(); self.emit(f"{gives} = icmp ult i32 {lane}, {8 * count}")
        yes, join = self.label("rowaddr"), self.label("rowjoin")
        slot = self.matrix_slot()
        self.emit(f"store i64 0, ptr {slot}")
        self.emit(f"br i1 {gives}, label %{yes}, label %{join}")
        self.block(yes)
        row = self.address(addr_op, space, 16, inst)
        addr = self.tmp(); self.emit(f"{addr} = ptrtoint ptr {row} to i64")
        self.emit(f"store i64 {addr}, ptr {slot}")
        self.emit(f"br label %{join}")
        self.block(join)

    def fragment_pointers(self, i: int, trans: bool) -> list:
        """Host pointers of this lane's elements of matrix ``i`` (after the row addresses
        were given): one to both (4 bytes) or, transposed, one per element (2 bytes)."""
        group, quad = self.lane_group()
        if not trans:
            p = self.row_address(self.op_add_const(group, 8 * i))
            off = self.tmp(); self.emit(f"{off} = shl i32 {quad}, 2")
            return [self.byte_offset(p, off)]
        out = []
        for j in range(2):
            r0 = self.tmp(); self.emit(f"{r0} = shl i32 {quad}, 1")
            p = self.row_address(self.op_add_const(self.op_add_const(r0, j), 8 * i))
            off = self.tmp(); self.emit(f"{off} = shl i32 {group}, 1")
            out.append(self.byte_offset(p, off))
        return out

    def move_fragments(self, inst, regs, trans: bool, store: bool) -> None:
        """This lane's register of each matrix read from (ldmatrix) or written to (stmatrix)
        the rows the lanes gave: one 4-byte access, or transposed one 2-byte access per
        element (element 0 in the low half of the register)."""
        for i, r in enumerate(regs):
            ptrs = self.fragment_pointers(i, trans)
            if store:
                v = self.read(r, "i32", inst)
                if not trans:
                    self.emit(f"store i32 {v}, ptr {ptrs[0]}, align 4")
                    continue
                for j, q in enumerate(ptrs):
                    s = self.tmp(); self.emit(f"{s} = lshr i32 {v}, {16 * j}")
                    h = self.tmp(); self.emit(f"{h} = trunc i32 {s} to i16")
                    self.emit(f"store i16 {h}, ptr {q}, align 2")
                continue
            if not trans:
                v = self.tmp(); self.emit(f"{v} = load i32, ptr {ptrs[0]}, align 4")
            else:
                halves = []
                for q in ptrs:
                    h = self.tmp(); self.emit(f"{h} = load i16, ptr {q}, align 2")
                    halves.append(self.conv(h, "i16", "i32"))
                hi = self.tmp(); self.emit(f"{hi} = shl i32 {halves[1]}, 16")
                v = self.tmp(); self.emit(f"{v} = or i32 {hi}, {halves[0]}")
            self.write(r, v, "i32", inst)

    @registry.lower("ldmatrix")
    def op_ldmatrix(self, inst):
        count, space = self.matrix_form(inst, "ldmatrix")
        d_regs = self.vector_items(inst.operands[0])
        if len(d_regs) != count:
            raise unsupported(inst, f"ldmatrix .x{count} writes {count} registers")
        trans = "trans" in inst.modifiers
        self.warp_phases(inst,
                         lambda: self.give_row_addresses(inst, inst.operands[1], count, space),
                         lambda: self.move_fragments(inst, d_regs, trans, store=False))

    @registry.lower("stmatrix")
    def op_stmatrix(self, inst):
        """The inverse of ldmatrix: each lane's fragment elements go where ldmatrix (of the
        same form) would have read them."""
        count, space = self.matrix_form(inst, "stmatrix")
        s_regs = self.vector_items(inst.operands[1])
        if len(s_regs) != count:
            raise unsupported(inst, f"stmatrix .x{count} stores {count} registers")
        trans = "trans" in inst.modifiers
        self.warp_phases(inst,
                         lambda: self.give_row_addresses(inst, inst.operands[0], count, space),
                         lambda: self.move_fragments(inst, s_regs, trans, store=True))

    @registry.lower("movmatrix")
    def op_movmatrix(self, inst):
        """movmatrix.sync.aligned.m8n8.trans.b16 d, a: the transpose of an 8x8 matrix held in
        the fragment layout: lane t's element j becomes M[2 (t % 4) + j][t / 4], which lane
        4 (2 (t % 4) + j) + (t / 4) / 2 holds in half (t / 4) % 2."""
        mods = set(inst.modifiers)
        if mods != {"sync", "aligned", "m8n8", "trans", "b16"}:
            raise unsupported(inst, "movmatrix: only .sync.aligned.m8n8.trans.b16")

        def give():
            v = self.read(inst.operands[1], "i32", inst)
            slot = self.matrix_slot()
            self.emit(f"store i32 {v}, ptr {slot}")

        def take():
            group, quad = self.lane_group()
            gh = self.tmp(); self.emit(f"{gh} = lshr i32 {group}, 1")
            half = self.tmp(); self.emit(f"{half} = and i32 {group}, 1")
            shift = self.tmp(); self.emit(f"{shift} = shl i32 {half}, 4")
            parts = []
            for j in range(2):
                row = self.op_add_const(self.tmp_shl(quad, 1), j)
                src = self.tmp(); self.emit(f"{src} = shl i32 {row}, 2")
                holder = self.tmp(); self.emit(f"{holder} = add i32 {src}, {gh}")
                p = self.matrix_slot(holder)
                w = self.tmp(); self.emit(f"{w} = load i32, ptr {p}")
                s = self.tmp(); self.emit(f"{s} = lshr i32 {w}, {shift}")
                e = self.tmp(); self.emit(f"{e} = and i32 {s}, 65535")
                parts.append(e)
            hi = self.tmp(); self.emit(f"{hi} = shl i32 {parts[1]}, 16")
            d = self.tmp(); self.emit(f"{d} = or i32 {hi}, {parts[0]}")
            self.write(inst.operands[0], d, "i32", inst)

        self.warp_phases(inst, give, take)

    def row_address(self, lane_expr: str) -> str:
        slot = self.matrix_slot(lane_expr)
        a = self.tmp(); self.emit(f"{a} = load i64, ptr {slot}")
        p = self.tmp(); self.emit(f"{p} = inttoptr i64 {a} to ptr")
        return p

    def byte_offset(self, p: str, off32: str) -> str:
        w = self.conv(off32, "i32", "i64")
        q = self.tmp(); self.emit(f"{q} = getelementptr i8, ptr {p}, i64 {w}")
        return q


class MatrixVectorLowering:
    """The warp-vectorized form (mixed into ``vector.VectorFunction``): the whole warp runs
    together, so a warp-wide operation needs no meeting: each of its phases (see
    ``MatrixLowering.warp_phases``) runs for every active lane in turn through the per-thread
    code, and the next phase starts when all have done it. Results are those of the
    per-thread form, bit for bit; a fault names the lane's thread as there."""

    @registry.lower_vector("mma", "ldmatrix", "stmatrix", "movmatrix", "wmma")
    def v_matrix(self, inst, em):
        if inst.opcode == "wmma" and "mma" not in inst.modifiers:
            return False            # wmma.load/.store: each lane alone (the lane loop)
        self.phase_mask = em
        try:
            self.LOWERINGS.get(inst.opcode)(self, inst)
        finally:
            self.phase_mask = None

    def warp_phases(self, inst, *phases) -> None:
        for phase in phases:
            self.lane_loop(inst, self.phase_mask, phase)
