"""``wmma.load``, ``wmma.store`` and ``wmma.mma`` (CUDA's nvcuda::wmma), per thread; they use
the tensor-core exchange area and the phases of ``matrix.MatrixLowering`` (mixed into the same
``function.Function``), so they run in both executor forms as ``mma.sync`` does."""
from __future__ import annotations

from ....ptx.ir import TYPE_NAMES
from .common import unsupported
from .matrix import DOUBLE_DOUBLE_FINISH, DOUBLE_DOUBLE_PHI, DOUBLE_DOUBLE_STEP, SLOT_BYTES
from .registry import Registry
from .matrix import MatrixHelpers


# -- wmma ----------------------------------------------------------------------------------------
# The element layout of wmma fragments is unspecified by the ISA (only wmma.load, wmma.mma and
# wmma.store, and element-wise operations on all of a fragment's elements, may depend on it).
# Here lane l holds elements l * E .. l * E + E - 1 of the matrix in row-major order (E = its
# elements / 32), in its fragment's first E slots, repeated to fill the registers the ISA
# gives the fragment (an .f16 A fragment of m16n16k16 has 16 slots for 8 elements).
WMMA_SHAPES = {"m16n16k16": (16, 16, 16), "m32n8k16": (32, 8, 16), "m8n32k16": (8, 32, 16),
               "m8n8k32": (8, 8, 32), "m8n8k128": (8, 8, 128),
               "m16n16k8": (16, 16, 8), "m8n8k4": (8, 8, 4)}
# element type -> (LLVM type in memory and in the exchange area, elements per register,
# how it widens for the products: a float type, or sext/zext for integers)
WMMA_ELEMENT = {"f16": ("i16", 2, "half"), "bf16": ("i16", 2, "bfloat"),
                "f32": ("float", 1, None), "tf32": ("float", 1, "float"),
                "f64": ("double", 1, "double"), "s8": ("i8", 4, "sext"),
                "u8": ("i8", 4, "zext"), "s32": ("i32", 1, None)}
# input type -> (the shapes it exists in, accumulator types allowed)
WMMA_INPUTS = {"f16": (("m16n16k16", "m32n8k16", "m8n32k16"), ("f16", "f32")),
               "bf16": (("m16n16k16", "m32n8k16", "m8n32k16"), ("f32",)),
               "tf32": (("m16n16k8",), ("f32",)),
               "f64": (("m8n8k4",), ("f64",)),
               "s8": (("m16n16k16", "m32n8k16", "m8n32k16"), ("s32",)),
               "u8": (("m16n16k16", "m32n8k16", "m8n32k16"), ("s32",))}
ELEMENT_BYTES = {"i8": 1, "i16": 2, "i32": 4, "float": 4, "double": 8}
# Sub-byte inputs (CUDA's wmma::experimental::precision::s4, u4, b1): bits per element and
# their one shape. A is row-major and B column-major in memory (the only layouts the ISA
# allows), so each lane holds 32 bits that lie together there: lane l the elements
# 32 / bits * (l % 4) onwards of row l / 4 of A (column l / 4 of B), element j in bits
# bits * j of its register (the first element in the low bits of the lowest byte).
SUB_BYTE = {"s4": (4, "m8n8k32"), "u4": (4, "m8n8k32"), "b1": (1, "m8n8k128")}

registry = Registry("wmma")


class WmmaLowering(MatrixHelpers):
    """Per-thread lowerings of wmma.load, wmma.store and wmma.mma (mixed into
    ``function.Function``; they share the exchange area of ``MatrixLowering``)."""

    def wmma_form(self, inst):
        """(shape name, (M, N, K)) of a wmma instruction, or unsupported."""
        shape = next((m for m in inst.modifiers if m in WMMA_SHAPES), None)
        if shape is None or not {"sync", "aligned"} <= set(inst.modifiers):
            raise unsupported(inst, "wmma: only .sync.aligned " + ", ".join(WMMA_SHAPES) +
                                    " are supported")
        return shape, WMMA_SHAPES[shape]

    @staticmethod
    def wmma_types(inst) -> list:
        """The element types named by a wmma instruction (the sub-byte ones are not in the
        ISA's general type table)."""
        return [m for m in inst.modifiers if m in TYPE_NAMES or m in SUB_BYTE]

    @staticmethod
    def wmma_matrix(which: str, dims) -> tuple:
        m, n, k = dims
        return {"a": (m, k), "b": (k, n), "c": (m, n), "d": (m, n)}[which]

    def wmma_slots(self, regs: list, etype: str):
        """(LLVM type of an element, elements per register, slots) of a fragment."""
        ety, per_reg, _ = WMMA_ELEMENT[etype]
        return ety, per_reg, len(regs) * per_reg

    def wmma_element(self, regs: list, slot: int, etype: str, inst) -> str:
        """Element ``slot`` of a fragment held in ``regs``, as its LLVM type."""
        ety, per_reg, _ = WMMA_ELEMENT[etype]
        if per_reg == 1:
            return self.read(regs[slot], ety, inst)
        bits = 32 // per_reg
        v = self.read(regs[slot // per_reg], "i32", inst)
        s = self.tmp(); self.emit(f"{s} = lshr i32 {v}, {bits * (slot % per_reg)}")
        h = self.tmp(); self.emit(f"{h} = trunc i32 {s} to i{bits}")
        return h

    def wmma_fill(self, regs: list, values: list, etype: str, inst) -> None:
        """Write fragment registers from its E elements, repeated over all slots."""
        ety, per_reg, _ = WMMA_ELEMENT[etype]
        slots = len(regs) * per_reg
        if slots % len(values):
            raise unsupported(inst, "wmma fragment register count")
        full = [values[s % len(values)] for s in range(slots)]
        bits = 32 // per_reg
        for r, reg in enumerate(regs):
            if per_reg == 1:
                self.write(reg, full[r], ety, inst)
                continue
            word = "0"
            for j in range(per_reg):
                part = self.conv(full[per_reg * r + j], f"i{bits}", "i32")
                if j:
                    part = self.tmp_shl(part, bits * j)
                w = self.tmp(); self.emit(f"{w} = or i32 {word}, {part}"); word = w
            self.write(reg, word, "i32", inst)

    def wmma_addresses(self, inst, addr_op, stride_op, rows: int, cols: int, layout: str,
                       size: int, count: int, space: str) -> list:
        """Host pointers of this lane's ``count`` elements (row-major indices lane * count
        + j) of a rows x cols matrix at ``addr_op``, ``layout`` in memory with ``stride``
        elements between rows (row) or columns (col), bounds-checked each."""
        base = self.address_value(addr_op, inst)
        if stride_op is None:
            stride = str(cols if layout == "row" else rows)
        else:
            stride = self.conv(self.read(stride_op, "i32", inst), "i32", "i64")
        lane = self.conv(self.lane_id(), "i32", "i64")
        first = self.tmp(); self.emit(f"{first} = mul i64 {lane}, {count}")
        ptrs = []
        for j in range(count):
            e = self.tmp(); self.emit(f"{e} = add i64 {first}, {j}")
            r = self.tmp(); self.emit(f"{r} = udiv i64 {e}, {cols}")
            c = self.tmp(); self.emit(f"{c} = urem i64 {e}, {cols}")
            major, minor = (r, c) if layout == "row" else (c, r)
            o0 = self.tmp(); self.emit(f"{o0} = mul i64 {major}, {stride}")
            o1 = self.tmp(); self.emit(f"{o1} = add i64 {o0}, {minor}")
            o2 = self.tmp(); self.emit(f"{o2} = mul i64 {o1}, {size}")
            a = self.tmp(); self.emit(f"{a} = add i64 {base}, {o2}")
            ptrs.append(self.translate(a, space, size, inst))
        return ptrs

    @registry.lower("wmma")
    def op_wmma(self, inst):
        mods = list(inst.modifiers)
        if "mma" in mods:
            return self.wmma_mma(inst)
        kind = "load" if "load" in mods else "store" if "store" in mods else None
        which = next((m for m in mods if m in ("a", "b", "c", "d")), None)
        layout = next((m for m in mods if m in ("row", "col")), None)
        types = self.wmma_types(inst)
        if kind == "load" and which in ("a", "b") and len(types) == 1 and types[0] in SUB_BYTE:
            return self.wmma_load_packed(inst, which, layout, types[0])
        if kind is None or which is None or layout is None or len(types) != 1 or \
                types[0] not in WMMA_ELEMENT or (kind == "store") != (which == "d"):
            raise unsupported(inst, "wmma.load/.store of this form")
        etype = types[0]
        shape, dims = self.wmma_form(inst)
        rows, cols = self.wmma_matrix(which, dims)
        count = rows * cols // 32
        space = self.space_of(inst)
        if kind == "load":
            regs, addr, stride = inst.operands[0], inst.operands[1], \
                (inst.operands[2] if len(inst.operands) > 2 else None)
        else:
            addr, regs, stride = inst.operands[0], inst.operands[1], \
                (inst.operands[2] if len(inst.operands) > 2 else None)
        regs = list(self.vector_items(regs))
        ety, per_reg, slots = self.wmma_slots(regs, etype)
        if slots < count or slots % count:
            raise unsupported(inst, f"wmma.{kind}.{which} of .{shape}.{etype} with "
                                    f"{len(regs)} registers")
        size = ELEMENT_BYTES[ety]
        ptrs = self.wmma_addresses(inst, addr, stride, rows, cols, layout, size, count, space)
        if kind == "load":
            values = []
            for p in ptrs:
                v = self.tmp(); self.emit(f"{v} = load {ety}, ptr {p}, align {size}")
                values.append(v)
            self.wmma_fill(regs, values, etype, inst)
        else:
            for j, p in enumerate(ptrs):
                v = self.wmma_element(regs, j, etype, inst)
                self.emit(f"store {ety} {v}, ptr {p}, align {size}")

    def wmma_mma(self, inst):
        shape, dims = self.wmma_form(inst)
        m, n, k = dims
        types = self.wmma_types(inst)
        mods = set(inst.modifiers)
        if len(types) == 4 and types[1] in SUB_BYTE:
            return self.wmma_mma_packed(inst, shape, types, mods)
        if len(types) == 2:
            dtype, ctype = types
            atype = btype = "f16"
        elif len(types) == 4:
            dtype, atype, btype, ctype = types
        else:
            raise unsupported(inst, "wmma.mma types")
        shapes, accumulators = WMMA_INPUTS.get(atype, ((), ()))
        integer = atype in ("s8", "u8")
        layouts = [x for x in inst.modifiers if x in ("row", "col")]
        # .f64 takes a rounding mode: .rn is what the double-double sum rounds to
        extra = mods - {"mma", "sync", "aligned", shape, "row", "col"} - set(types) - \
            ({"satfinite"} if integer else {"rn"} if atype == "f64" else set())
        if extra or len(layouts) != 2 or shape not in shapes or dtype not in accumulators or \
                ctype not in accumulators or (atype != "f16" and dtype != ctype) or \
                (btype != atype and not (integer and btype in ("s8", "u8"))):
            raise unsupported(inst, f"wmma.mma.{shape} of .{dtype}.{atype}.{btype}.{ctype}")
        d_op, a_op, b_op, c_op = inst.operands
        a_regs, b_regs = list(self.vector_items(a_op)), list(self.vector_items(b_op))
        c_regs, d_regs = list(self.vector_items(c_op)), list(self.vector_items(d_op))
        ea, eb, ec = m * k // 32, k * n // 32, m * n // 32
        ety = WMMA_ELEMENT[atype][0]
        size = ELEMENT_BYTES[ety]
        dot = self.wmma_dot_helper(atype, btype, dims)

        def give():
            """This lane's A and B elements into its slot (A in the first half, B the
            second)."""
            slot = self.matrix_slot()
            for j in range(ea):
                v = self.wmma_element(a_regs, j, atype, inst)
                p = self.tmp(); self.emit(f"{p} = getelementptr i8, ptr {slot}, i64 {size * j}")
                self.emit(f"store {ety} {v}, ptr {p}")
            for j in range(eb):
                v = self.wmma_element(b_regs, j, btype, inst)
                p = self.tmp()
                self.emit(f"{p} = getelementptr i8, ptr {slot}, i64 {SLOT_BYTES // 2 + size * j}")
                self.emit(f"store {ety} {v}, ptr {p}")

        def take():
            """This lane's elements of D = A B + C: row-major indices lane * ec + j."""
            lane = self.lane_id()
            base = self.matrix_slot("0")
            first = self.tmp(); self.emit(f"{first} = mul i32 {lane}, {ec}")
            results = []
            for j in range(ec):
                e = self.tmp(); self.emit(f"{e} = add i32 {first}, {j}")
                row = self.tmp(); self.emit(f"{row} = udiv i32 {e}, {n}")
                col = self.tmp(); self.emit(f"{col} = urem i32 {e}, {n}")
                c = self.wmma_element(c_regs, j, ctype, inst)
                r = self.tmp()
                if atype == "f64":          # the helper adds C (double-double, as mma's)
                    self.emit(f"{r} = call double @\"{dot}\"(ptr {base}, i32 {row}, i32 {col}, double {c})")
                elif integer:
                    self.emit(f"{r} = call i64 @\"{dot}\"(ptr {base}, i32 {row}, i32 {col})")
                    r = self.integer_accumulate(r, c, "satfinite" in mods)
                else:
                    self.emit(f"{r} = call double @\"{dot}\"(ptr {base}, i32 {row}, i32 {col})")
                    r = self.accumulate(inst, r, c, ctype, dtype)
                results.append(r)
            self.wmma_fill(d_regs, results, dtype, inst)

        self.warp_phases(inst, give, take)

    def wmma_dot_helper(self, atype: str, btype: str, dims) -> str:
        """``@wmma.dot.<a>.<b>.m<M>n<N>k<K>(ptr slots, i32 row, i32 col)``: row ``row`` of
        A times column ``col`` of B from the lanes' slots (A element (i, k) is element
        i * K + k: lane (i * K + k) / EA, its slot's element (i * K + k) % EA; B element
        (k, n) lane (k * N + n) / EB, element (k * N + n) % EB of the slot's second half).
        Exact in i64 for integers, in double for f16/bf16/tf32 (as ``mma_dot_helper``);
        .f64 takes C as a fourth argument and sums in double-double."""
        m, n, k = dims
        name = f"wmma.dot.{atype}.{btype}.m{m}n{n}k{k}"
        if name in self.mod.directed:
            return name
        ea, eb = m * k // 32, k * n // 32
        ety = WMMA_ELEMENT[atype][0]
        size = ELEMENT_BYTES[ety]
        integer = atype in ("s8", "u8")
        f64 = atype == "f64"
        acc_ty = "i64" if integer else "double"

        def widen(side, kind):
            how = WMMA_ELEMENT[kind][2]
            if how in ("sext", "zext"):
                return [f"  %{side}d = {how} i8 %{side}v to i64"]
            if how == "double":
                return [f"  %{side}d = fadd double %{side}v, 0.0"]
            if how == "float":
                return [f"  %{side}d = fpext float %{side}v to double"]
            return [f"  %{side}h = bitcast i16 %{side}v to {how}",
                    f"  %{side}d = fpext {how} %{side}h to double"]

        loads = "\n".join(widen("a", atype) + widen("b", btype))
        if f64:
            step, extra_phi, finish = DOUBLE_DOUBLE_STEP, DOUBLE_DOUBLE_PHI, DOUBLE_DOUBLE_FINISH
            params, start = ", double %c", "%c"
        else:
            mul, add = ("mul", "add") if integer else ("fmul", "fadd")
            step = f"  %prod = {mul} {acc_ty} %ad, %bd\n  %acc1 = {add} {acc_ty} %acc, %prod"
            params, start, extra_phi = "", "0" if integer else "0.0", ""
            finish = f"  ret {acc_ty} %acc1"
        self.mod.directed[name] = f'''define internal {acc_ty} @"{name}"(ptr %s, i32 %row, i32 %col{params}) {{
entry:
  %arow = mul i32 %row, {k}
  br label %loop
loop:
  %k = phi i32 [0, %entry], [%k1, %loop]
  %acc = phi {acc_ty} [{start}, %entry], [%acc1, %loop]{extra_phi}
  %ai = add i32 %arow, %k
  %alane = udiv i32 %ai, {ea}
  %aslot = urem i32 %ai, {ea}
  %aoff0 = mul i32 %alane, {SLOT_BYTES}
  %aoff1 = mul i32 %aslot, {size}
  %aoff = add i32 %aoff0, %aoff1
  %bk = mul i32 %k, {n}
  %bi = add i32 %bk, %col
  %blane = udiv i32 %bi, {eb}
  %bslot = urem i32 %bi, {eb}
  %boff0 = mul i32 %blane, {SLOT_BYTES}
  %boff1 = mul i32 %bslot, {size}
  %boff2 = add i32 %boff0, %boff1
  %boff = add i32 %boff2, {SLOT_BYTES // 2}
  %aw = zext i32 %aoff to i64
  %bw = zext i32 %boff to i64
  %ap = getelementptr i8, ptr %s, i64 %aw
  %bp = getelementptr i8, ptr %s, i64 %bw
  %av = load {ety}, ptr %ap
  %bv = load {ety}, ptr %bp
{loads}
{step}
  %k1 = add i32 %k, 1
  %more = icmp ult i32 %k1, {k}
  br i1 %more, label %loop, label %done
done:
{finish}
}}'''
        return name

    # -- sub-byte inputs (s4, u4, b1) -------------------------------------------------------
    def wmma_load_packed(self, inst, which: str, layout: str, etype: str) -> None:
        """wmma.load.a (row) or .b (col) of .s4/.u4 (m8n8k32) or .b1 (m8n8k128): this lane's
        32 bits, from row (A) or column (B) l / 4 at element 32 / bits * (l % 4). The stride
        counts elements, as CUDA's ldm does (the ISA asks that rows start on 16 bytes)."""
        bits, shape = SUB_BYTE[etype]
        if self.wmma_form(inst)[0] != shape or layout != ("row" if which == "a" else "col"):
            raise unsupported(inst, f"wmma.load.{which} of .{etype}: only .{shape} with A "
                                    f".row and B .col")
        regs = list(self.vector_items(inst.operands[0]))
        if len(regs) != 1:
            raise unsupported(inst, f"wmma.load.{which} of .{etype} writes one register")
        depth = WMMA_SHAPES[shape][2]
        base = self.address_value(inst.operands[1], inst)
        if len(inst.operands) > 2:
            stride = self.conv(self.read(inst.operands[2], "i32", inst), "i32", "i64")
        else:
            stride = str(depth)
        lane = self.conv(self.lane_id(), "i32", "i64")
        major = self.tmp(); self.emit(f"{major} = lshr i64 {lane}, 2")
        quarter = self.tmp(); self.emit(f"{quarter} = and i64 {lane}, 3")
        first = self.tmp(); self.emit(f"{first} = mul i64 {major}, {stride}")
        minor = self.tmp(); self.emit(f"{minor} = mul i64 {quarter}, {32 // bits}")
        element = self.tmp(); self.emit(f"{element} = add i64 {first}, {minor}")
        bit = self.tmp(); self.emit(f"{bit} = mul i64 {element}, {bits}")
        byte = self.tmp(); self.emit(f"{byte} = lshr i64 {bit}, 3")
        a = self.tmp(); self.emit(f"{a} = add i64 {base}, {byte}")
        p = self.translate(a, self.space_of(inst), 4, inst)
        v = self.tmp(); self.emit(f"{v} = load i32, ptr {p}, align 1")
        self.write(regs[0], v, "i32", inst)

    def wmma_mma_packed(self, inst, shape: str, types: list, mods: set) -> None:
        """wmma.mma.row.col of .s4.s4/.u4.u4 (m8n8k32, .satfinite optional) or .b1 (m8n8k128,
        .xor.popc or .and.popc) with .s32 accumulators: D = A B + C exactly, wrapping (or
        clamped with .satfinite); for .b1 the count of set bits of (row op column)."""
        dtype, atype, btype, ctype = types
        own_shape = SUB_BYTE[atype][1]
        binary = atype == "b1"
        allowed = {"xor", "and", "popc"} if binary else {"satfinite"}
        extra = mods - {"mma", "sync", "aligned", shape, "row", "col"} - set(types) - allowed
        layouts = [x for x in inst.modifiers if x in ("row", "col")]
        if shape != own_shape or extra or layouts != ["row", "col"] or \
                (dtype, ctype) != ("s32", "s32") or btype != atype or \
                (binary and not ("popc" in mods and len(mods & {"xor", "and"}) == 1)):
            raise unsupported(inst, f"wmma.mma.{shape} of .{dtype}.{atype}.{btype}.{ctype}"
                              + (" (b1 takes .xor.popc or .and.popc)" if binary else ""))
        d_op, a_op, b_op, c_op = inst.operands
        a_regs, b_regs = list(self.vector_items(a_op)), list(self.vector_items(b_op))
        c_regs, d_regs = list(self.vector_items(c_op)), list(self.vector_items(d_op))
        if (len(a_regs), len(b_regs), len(c_regs), len(d_regs)) != (1, 1, 2, 2):
            raise unsupported(inst, f"wmma.mma.{shape} takes 2, 1, 1 and 2 registers")
        dot = self.wmma_packed_dot_helper(atype, btype, "xor" if "xor" in mods else "and")

        def give():
            slot = self.matrix_slot()
            self.emit(f"store i32 {self.read(a_regs[0], 'i32', inst)}, ptr {slot}")
            p = self.tmp(); self.emit(f"{p} = getelementptr i8, ptr {slot}, i64 {SLOT_BYTES // 2}")
            self.emit(f"store i32 {self.read(b_regs[0], 'i32', inst)}, ptr {p}")

        def take():
            """This lane's elements of D: row-major indices 2 lane and 2 lane + 1."""
            lane = self.lane_id()
            base = self.matrix_slot("0")
            results = []
            for j in range(2):
                e = self.tmp(); self.emit(f"{e} = mul i32 {lane}, 2")
                e1 = self.op_add_const(e, j)
                row = self.tmp(); self.emit(f"{row} = lshr i32 {e1}, 3")
                col = self.tmp(); self.emit(f"{col} = and i32 {e1}, 7")
                r = self.tmp(); self.emit(f"{r} = call i64 @\"{dot}\"(ptr {base}, i32 {row}, i32 {col})")
                results.append(self.integer_accumulate(r, self.read(c_regs[j], "i32", inst),
                                                       "satfinite" in mods))
            for reg, v in zip(d_regs, results):
                self.write(reg, v, "i32", inst)

        self.warp_phases(inst, give, take)

    def wmma_packed_dot_helper(self, atype: str, btype: str, op: str) -> str:
        """``@wmma.packed.<a>.<b>(ptr slots, i32 row, i32 col)``: row ``row`` of A times
        column ``col`` of B, exact in i64, from the 32-bit words lanes 4 row .. 4 row + 3
        (A, first half of their slots) and 4 col .. 4 col + 3 (B, second half) hold; for
        .b1 the set bits of (A word ``op`` B word)."""
        name = f"wmma.packed.{atype}.{btype}" + (f".{op}" if atype == "b1" else "")
        if name in self.mod.directed:
            return name
        if atype == "b1":
            step = [f"  %x = {op} i32 %aw, %bw",
                    "  %n = call i32 @llvm.ctpop.i32(i32 %x)",
                    "  %n64 = zext i32 %n to i64",
                    "  %acc1 = add i64 %acc, %n64"]
        else:
            step, last = [], "%acc"
            for j in range(8):
                for side, kind in (("a", atype), ("b", btype)):
                    # element j: bits 4 j .. 4 j + 3, sign-extended for .s4
                    step.append(f"  %{side}s{j} = shl i32 %{side}w, {28 - 4 * j}")
                    shift = "ashr" if kind == "s4" else "lshr"
                    step.append(f"  %{side}e{j} = {shift} i32 %{side}s{j}, 28")
                    step.append(f"  %{side}x{j} = sext i32 %{side}e{j} to i64")
                step.append(f"  %p{j} = mul i64 %ax{j}, %bx{j}")
                step.append(f"  %t{j} = add i64 {last}, %p{j}")
                last = f"%t{j}"
            step.append(f"  %acc1 = add i64 {last}, 0")
        body = "\n".join(step)
        self.mod.directed[name] = f'''define internal i64 @"{name}"(ptr %s, i32 %row, i32 %col) {{
entry:
  %ab = shl i32 %row, 2
  %bb = shl i32 %col, 2
  br label %loop
loop:
  %q = phi i32 [0, %entry], [%q1, %loop]
  %acc = phi i64 [0, %entry], [%acc1, %loop]
  %alane = add i32 %ab, %q
  %blane = add i32 %bb, %q
  %aoff0 = mul i32 %alane, {SLOT_BYTES}
  %boff0 = mul i32 %blane, {SLOT_BYTES}
  %boff = add i32 %boff0, {SLOT_BYTES // 2}
  %aoff = zext i32 %aoff0 to i64
  %boffw = zext i32 %boff to i64
  %ap = getelementptr i8, ptr %s, i64 %aoff
  %bp = getelementptr i8, ptr %s, i64 %boffw
  %aw = load i32, ptr %ap
  %bw = load i32, ptr %bp
{body}
  %q1 = add i32 %q, 1
  %more = icmp ult i32 %q1, 4
  br i1 %more, label %loop, label %done
done:
  ret i64 %acc1
}}'''
        return name
