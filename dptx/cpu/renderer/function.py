"""The translation core of one PTX function body into LLVM IR, per thread.

``FunctionCore`` keeps what every instruction needs: registers (allocas that SROA/mem2reg
make SSA values), operands read and written, addresses and their windows, frames and
liveness for resumable threads, special registers, and the rendering of the whole function.
The lowering of each instruction is in ``lowering/`` by family, each family a registry
(``lowering.registry``) that ``Function`` installs (``LOWERINGS``, used by ``instruction``);
``Function`` is the core with every family's class mixed in (their helpers);
``vector.VectorFunction`` the warp-vectorized form on top of it, with its own installed
table of warp-vectorized lowerings."""
from __future__ import annotations

import struct

from ...errors import PtxUnsupportedError
from ...ptx import ir
from ...ptx.analysis import LOCAL, SHARED, UNKNOWN
from ...ptx.cfg import EXIT, build_cfg
from . import address_space as L
from .runtime_ir import CTX_ARG
from .alignment_checks import AlignmentChecks
from .stop_polls import StopPolls
from .lowering.common import (LLTY, BITS, INT_OF, FUNCTION_ID_BASE, ST_ERR, ST_SITE, FRAME_FIELD,
                              FRAME_HEADER,
                              ST_BAR, ST_SPIN, ST_WARP, SPECIAL_INDEX, fconst, f32_bits_to_double,
                              f64_bits_to_double, unsupported)
from .lowering.registry import Lowerings
from .lowering import (arithmetic, async_barrier, atomics, bits, compare, control, conversion,
                       float_math, matrix, memory, sleep, sync, video, warpgroup, wmma)
from .lowering.control import ControlLowering
from .lowering.memory import MemoryLowering
from .lowering.arithmetic import ArithmeticLowering
from .lowering.float_math import FloatMathLowering
from .lowering.bits import BitsLowering
from .lowering.video import ScalarVideoLowering, VideoLowering
from .lowering.compare import CompareLowering
from .lowering.conversion import ConversionLowering
from .lowering.atomics import AtomicLowering
from .lowering.sync import SyncLowering
from .lowering.matrix import MatrixLowering
from .lowering.wmma import WmmaLowering
from .lowering.async_barrier import AsyncBarrierLowering
from .lowering.sleep import SleepLowering
from .lowering.warpgroup import WarpgroupLowering
from .racecheck_ir import ATOMIC as RACE_ATOMIC, READ as RACE_READ, WRITE as RACE_WRITE, \
    order_event


def window_fields(origin, windows: dict) -> list:
    """Context fields holding (first mapped address, host address, size) of the buffer a
    pointer of ``origin`` points into: the parameter's triple in ``param_windows``, or the
    module variable's row of the buffer table (address_space.TABLE_ROW)."""
    kind, which = origin
    if kind == "param":
        return [("param_windows", 3 * which + k) for k in range(3)]
    w = windows[which]
    return [("buftable", L.TABLE_ROW * w + k) for k in range(3)]


class FunctionCore(AlignmentChecks, StopPolls):
    """Translation of one PTX function body."""

    def __init__(self, mod, f: ir.Function):
        self.mod = mod
        self.f = f
        self.is_kernel = f.is_kernel
        self.lines = []
        self.allocas = []
        self.reg_returns = []   # ([(register, LLVM type, offset)], return pointer) of .reg returns
        self.n = 0
        self.regs = {}          # name -> llvm type
        self.vector_regs = {}   # vector register name -> number of components
        self.params = {}        # param name -> ("kernel", offset) | ("ptr", llvm arg)
        self.locals = {}        # .local variable name -> offset in this frame
        self.local_size = 0
        self.param_vars = {}    # .param variables declared in the body -> alloca
        self.labels = {}
        self.sync_points = 0
        self.resume_blocks = []
        self.prologue = []      # entry-block lines (loads of launch constants)
        self.constant_slots = []  # (context field, index) per %kw slot
        self.windows_known = {}  # origin -> known_window values
        self.trusted = {}       # instruction index -> block_check.Site (plain kernels)
        self.label_pos = {}     # PTX label -> index of the instruction it precedes
        self.polls = []         # (LLVM label, target label) of the stop polls on back edges
        self._known = None      # KnownAlignment, when first asked

    # -- small helpers -----------------------------------------------------------------------
    def tmp(self) -> str:
        self.n += 1
        return f"%t{self.n}"

    def label(self, hint="b") -> str:
        self.n += 1
        return f"{hint}{self.n}"

    def emit(self, line: str):
        self.lines.append("  " + line)

    def block(self, name: str):
        self.lines.append(f"{name}:")

    # -- declarations ----------------------------------------------------------------------
    def declare(self):
        f = self.f
        for s in f.statements():
            if isinstance(s, ir.RegDecl):
                ty = LLTY.get(s.type)
                if ty is None:
                    raise PtxUnsupportedError(f"PTX line {s.line}: registers of type .{s.type} "
                                              f"are not supported by the CPU executor")
                for name in s.names():
                    if s.vector:
                        # a vector register is its components, each a register of its own
                        self.vector_regs[name] = s.vector
                        for c in "xyzw"[:s.vector]:
                            self.regs.setdefault(f"{name}.{c}", ty)
                    elif name not in self.regs:
                        self.regs[name] = ty
            elif isinstance(s, ir.Variable):
                if s.space == "local":
                    a = s.alignment
                    self.local_size = (self.local_size + a - 1) // a * a
                    self.locals[s.name] = self.local_size
                    self.local_size += s.size or 0
                elif s.space == "param":
                    if s.name not in self.param_vars:
                        self.param_vars[s.name] = (f"%pv.{len(self.param_vars)}", max(s.size or 8, 8))
        self.mod.local_sizes[f.name] = self.local_size
        if self.is_kernel:
            for p, off in f.param_layout():
                self.params[p.name] = ("kernel", off, p)
        else:
            # .param parameters are memory the body reads and writes with ld/st.param;
            # .reg ones (old-style functions) are registers: copied in at entry, out at ret
            for i, p in enumerate(f.returns):
                if p.space == "reg":
                    self.reg_returns.append((self.reg_parameter(p), f"%ret{i}"))
                else:
                    self.params[p.name] = ("ptr", f"%ret{i}", p)
            for i, p in enumerate(f.params):
                if p.space == "reg":
                    self.copy_in(self.reg_parameter(p), f"%arg{i}")
                else:
                    self.params[p.name] = ("ptr", f"%arg{i}", p)

    def reg_parameter(self, p) -> list:
        """Declare a .reg parameter as a register (a vector one as its components);
        returns [(register name, LLVM type, byte offset)] of its parts."""
        ty = LLTY.get(p.type)
        if ty is None or p.dims:
            raise PtxUnsupportedError(f"PTX line {p.line}: .reg parameter {p.name} of type "
                                      f".{p.type} is not supported by the CPU executor")
        if not p.vector:
            self.regs[p.name] = ty
            return [(p.name, ty, 0)]
        self.vector_regs[p.name] = p.vector
        size = ir.type_size(p.type)
        parts = []
        for k, c in enumerate("xyzw"[:p.vector]):
            self.regs[f"{p.name}.{c}"] = ty
            parts.append((f"{p.name}.{c}", ty, k * size))
        return parts

    def copy_in(self, parts: list, ptr: str) -> None:
        for name, ty, offset in parts:
            q = self.tmp(); self.prologue.append(f"  {q} = getelementptr i8, ptr {ptr}, i64 {offset}")
            v = self.tmp(); self.prologue.append(f"  {v} = load {ty}, ptr {q}")
            self.prologue.append(f"  store {ty} {v}, ptr {self.reg_ptr(name)}")

    def return_registers(self) -> None:
        """Before a device function returns: its .reg return values to the caller."""
        for parts, ptr in self.reg_returns:
            for name, ty, offset in parts:
                q = self.tmp(); self.emit(f"{q} = getelementptr i8, ptr {ptr}, i64 {offset}")
                v = self.tmp(); self.emit(f"{v} = load {ty}, ptr {self.reg_ptr(name)}")
                self.emit(f"store {ty} {v}, ptr {q}")

    COMPONENTS = {"x": "x", "y": "y", "z": "z", "w": "w", "r": "x", "g": "y", "b": "z", "a": "w"}

    def component_reg(self, op):
        """``%v.y`` of a vector register as the scalar register holding it, and ``{ %r1 }``
        (a one-element brace list: how Triton writes the value of a scalar load or store) as
        ``%r1``; other operands unchanged."""
        if isinstance(op, ir.Vec) and len(op.items) == 1:
            op = op.items[0]
        if isinstance(op, ir.Reg) and op.component and op.name in self.vector_regs:
            return ir.Reg(f"{op.name}.{self.COMPONENTS.get(op.component, op.component)}",
                          None, op.negated)
        return op

    def vector_items(self, op):
        """The operands of a vector access: a ``{a, b}`` list, a whole vector register
        (its components), or a single operand."""
        if isinstance(op, ir.Vec):
            return op.items
        if isinstance(op, ir.Reg) and op.name in self.vector_regs and not op.component:
            return tuple(ir.Reg(f"{op.name}.{c}") for c in "xyzw"[:self.vector_regs[op.name]])
        return (op,)

    def reg_ptr(self, name: str) -> str:
        return f'%"r.{name}"'

    # -- operand access ----------------------------------------------------------------------
    def conv(self, value: str, src: str, dst: str, signed=False, lanes: int = 0) -> str:
        """Reinterpret or resize a value between LLVM types (bitcast, trunc, zext/sext); with
        ``lanes``, between vectors of that many of them."""
        if src == dst:
            return value
        vec = (lambda ty: f"<{lanes} x {ty}>") if lanes else (lambda ty: ty)
        t = self.tmp()
        if BITS[src] == BITS[dst]:
            self.emit(f"{t} = bitcast {vec(src)} {value} to {vec(dst)}")
            return t
        if src in INT_OF:
            value, src = self.conv(value, src, INT_OF[src], lanes=lanes), INT_OF[src]
            return self.conv(value, src, dst, signed, lanes)
        if dst in INT_OF:
            v = self.conv(value, src, INT_OF[dst], signed, lanes)
            return self.conv(v, INT_OF[dst], dst, lanes=lanes)
        if BITS[src] > BITS[dst]:
            if dst == "i1":
                zero = "zeroinitializer" if lanes else "0"
                self.emit(f"{t} = icmp ne {vec(src)} {value}, {zero}")
            else:
                self.emit(f"{t} = trunc {vec(src)} {value} to {vec(dst)}")
        else:
            op = "sext" if signed and src != "i1" else "zext"
            self.emit(f"{t} = {op} {vec(src)} {value} to {vec(dst)}")
        return t

    def special(self, reg: ir.Reg, inst) -> tuple:
        name, comp = reg.name, reg.component
        key = (name, comp)
        if key in SPECIAL_INDEX:
            return self.ti(SPECIAL_INDEX[key]), "i32"
        ctx_dims = {"%ntid": "block_", "%nctaid": "grid_"}
        if name in ctx_dims and comp in ("x", "y", "z"):
            return self.trunc32(self.ctx(ctx_dims[name] + comp)), "i32"
        if name == "%laneid":
            t = self.tmp(); self.emit(f"{t} = and i32 {self.ti(6)}, 31"); return t, "i32"
        if name == "%warpid":
            t = self.tmp(); self.emit(f"{t} = lshr i32 {self.ti(6)}, 5"); return t, "i32"
        if name == "%nwarpid":
            return "32", "i32"
        if name in ("%smid", "%gridid", "%nsmid"):
            return ("1" if name == "%nsmid" else "0"), "i32"
        if name.startswith("%lanemask_"):
            lane = self.tmp(); self.emit(f"{lane} = and i32 {self.ti(6)}, 31")
            bit = self.tmp(); self.emit(f"{bit} = shl i32 1, {lane}")
            kind = name[len("%lanemask_"):]
            t = self.tmp()
            if kind == "eq":
                return bit, "i32"
            if kind == "lt":
                self.emit(f"{t} = sub i32 {bit}, 1")
            elif kind == "le":
                t0 = self.tmp(); self.emit(f"{t0} = sub i32 {bit}, 1"); self.emit(f"{t} = or i32 {t0}, {bit}")
            elif kind == "gt":
                t0 = self.tmp(); self.emit(f"{t0} = shl i32 {bit}, 1"); self.emit(f"{t} = sub i32 0, {t0}")
            elif kind == "ge":
                self.emit(f"{t} = sub i32 0, {bit}")
            else:
                raise unsupported(inst, f"special register {name}")
            return t, "i32"
        if name in ("%clock", "%clock64"):
            t = self.tmp(); self.emit(f"{t} = call i64 @llvm.readcyclecounter()")
            if name == "%clock":
                return self.trunc32(t), "i32"
            return t, "i64"
        if name in ("%globaltimer", "%globaltimer_lo", "%globaltimer_hi"):
            # nanoseconds of the host's real-time clock (the GPU's is a global ns timer too)
            self.mod.uses_clock = True
            self.emit("call i32 @clock_gettime(i32 0, ptr %ts)")
            sec = self.tmp(); self.emit(f"{sec} = load i64, ptr %ts")
            np_ = self.tmp(); self.emit(f"{np_} = getelementptr i64, ptr %ts, i64 1")
            nsec = self.tmp(); self.emit(f"{nsec} = load i64, ptr {np_}")
            big = self.tmp(); self.emit(f"{big} = mul i64 {sec}, 1000000000")
            t = self.tmp(); self.emit(f"{t} = add i64 {big}, {nsec}")
            if name == "%globaltimer_lo":
                return self.trunc32(t), "i32"
            if name == "%globaltimer_hi":
                h = self.tmp(); self.emit(f"{h} = lshr i64 {t}, 32")
                return self.trunc32(h), "i32"
            return t, "i64"
        # sm_90 clusters: a launch without cluster dimensions is a grid of one-block clusters
        if comp in ("x", "y", "z") and name in ("%clusterid", "%nclusterid"):
            return self.special(ir.Reg("%ctaid" if name == "%clusterid" else "%nctaid", comp), inst)
        if comp in ("x", "y", "z") and name in ("%cluster_ctaid", "%cluster_nctaid"):
            return ("0" if name == "%cluster_ctaid" else "1"), "i32"
        if name in ("%cluster_ctarank", "%cluster_nctarank"):
            return ("0" if name == "%cluster_ctarank" else "1"), "i32"
        if name == "%is_explicit_cluster":
            return "false", "i1"
        if name in ("%envreg1", "%envreg2"):
            # cooperative groups' grid workspace: its address, high and low 32 bits (0 when
            # the launch is not cooperative: grid.sync() then traps, as on a GPU)
            self.mod.uses_grid_workspace = True
            w = self.ctx("grid_workspace")
            if name == "%envreg1":
                h = self.tmp(); self.emit(f"{h} = lshr i64 {w}, 32"); w = h
            return self.trunc32(w), "i32"
        if name in L.RESERVED_SMEM:
            # the reserved region's words, as shared-window offsets (address_space.py)
            return str(self.mod.shared.reserved +
                       L.RESERVED_SMEM_OFFSETS[L.RESERVED_SMEM.index(name)]), "i32"
        if name == "%dynamic_smem_size":
            return self.trunc32(self.ctx("dynamic_smem")), "i32"
        if name == "%total_smem_size":
            return self.trunc32(self.ctx("total_smem")), "i32"
        raise unsupported(inst, f"special register {name}{'.' + comp if comp else ''}")

    def trunc32(self, v: str) -> str:
        t = self.tmp(); self.emit(f"{t} = trunc i64 {v} to i32"); return t

    def ctx(self, field: str) -> str:
        p = self.tmp(); self.emit(f"{p} = getelementptr i64, ptr %ctx, i64 {L.CTX[field]}")
        t = self.tmp(); self.emit(f"{t} = load i64, ptr {p}, !invariant.load !0")
        return t

    def ctx_ptr(self, field: str, dereferenceable: int = 0) -> str:
        """A pointer field of the context. ``dereferenceable``: bytes known readable there,
        which lets LLVM hoist invariant loads through it out of conditional code."""
        p = self.tmp(); self.emit(f"{p} = getelementptr i64, ptr %ctx, i64 {L.CTX[field]}")
        deref = (f", !dereferenceable !{{i64 {dereferenceable}}}, !align !{{i64 8}}"
                 if dereferenceable > 0 else "")
        t = self.tmp(); self.emit(f"{t} = load ptr, ptr {p}, !invariant.load !0{deref}")
        return t

    def local_base_offset(self) -> str:
        """Where this thread's local memory starts in the call's local area (generic local
        addresses are offsets into the whole area, so that one table entry maps them)."""
        lm = self.ctx("local")
        lb = self.tmp(); self.emit(f"{lb} = ptrtoint ptr %lbase to i64")
        r = self.tmp(); self.emit(f"{r} = sub i64 {lb}, {lm}")
        return r

    def ti(self, index: int) -> str:
        p = self.tmp(); self.emit(f"{p} = getelementptr i32, ptr %ti, i64 {index}")
        t = self.tmp(); self.emit(f"{t} = load i32, ptr {p}")
        return t

    def symbol_value(self, name: str, inst) -> tuple:
        """Value of a symbol used as an operand (its address in its state space)."""
        if name in self.mod.windows:
            return str(L.buffer_address(self.mod.windows[name])), "i64"
        if name in self.mod.shared.offsets:
            return str(self.mod.shared.offsets[name]), "i64"
        if name in self.locals:
            t = self.tmp(); self.emit(f"{t} = add i64 %lsp, {self.locals[name]}")
            return t, "i64"
        if name in self.params and self.params[name][0] == "kernel":
            # its address in the .param state space: its offset in the parameter buffer,
            # which ld.param [reg] reads (address); as a generic address it means nothing
            # (cvta.param is not supported): it faults rather than read host memory
            return str(self.params[name][1]), "i64"
        if name == "WARP_SZ":
            return "32", "i32"
        ids = {f.name: i for i, f in enumerate(self.mod.module.functions)}
        if name in ids:
            return str(FUNCTION_ID_BASE + ids[name]), "i64"
        raise unsupported(inst, f"unknown symbol {name}")

    def read(self, op, ty: str, inst, signed=False) -> str:
        """The value of a source operand as LLVM type ``ty``."""
        op = self.component_reg(op)
        if isinstance(op, ir.Reg):
            if op.name in self.regs:
                if op.component:
                    raise unsupported(inst, f"vector register component {op}")
                rty = self.regs[op.name]
                t = self.tmp(); self.emit(f"{t} = load {rty}, ptr {self.reg_ptr(op.name)}")
                v = self.conv(t, rty, ty, signed)
                if op.negated:
                    n = self.tmp(); self.emit(f"{n} = xor i1 {v}, true"); v = n
                return v
            v, vty = self.special(op, inst)
            return self.conv(v, vty, ty, signed)
        if isinstance(op, ir.Imm):
            if ty in ("float", "double"):
                if op.kind == "f32":
                    return fconst(f32_bits_to_double(op.value), ty)
                if op.kind == "f64":
                    return fconst(f64_bits_to_double(op.value), ty)
                return fconst(float(op.value), ty)
            if op.kind == "f32":
                value = op.value
            elif op.kind == "f64":
                value = op.value
            elif op.kind == "float":
                value = struct.unpack("<Q", struct.pack("<d", op.value))[0] if BITS[ty] == 64 else \
                    struct.unpack("<I", struct.pack("<f", op.value))[0]
            else:
                value = op.value
            bits = BITS[ty]
            value &= (1 << bits) - 1
            if ty == "i1":
                return "true" if value else "false"
            if value >= 1 << (bits - 1):
                value -= 1 << bits
            return str(value)
        if isinstance(op, ir.Sym):
            v, vty = self.symbol_value(op.name, inst)
            if op.offset:
                t = self.tmp(); self.emit(f"{t} = add {vty} {v}, {op.offset}"); v = t
            return self.conv(v, vty, ty)
        raise unsupported(inst, f"operand {op}")

    def write(self, op, value: str, ty: str, inst, signed=False):
        op = self.component_reg(op)
        if isinstance(op, ir.Reg) and op.name == "_":
            return
        if not isinstance(op, ir.Reg) or op.name not in self.regs:
            raise unsupported(inst, f"destination {op}")
        rty = self.regs[op.name]
        v = self.conv(value, ty, rty, signed)
        self.emit(f"store {rty} {v}, ptr {self.reg_ptr(op.name)}")

    # -- memory ------------------------------------------------------------------------------
    def space_of(self, inst) -> str:
        for m in inst.modifiers:
            base = m.split("::")[0]
            if base in ("global", "shared", "local", "param", "const"):
                return base
        return "generic"

    def address(self, addr: ir.Addr, space: str, size: int, inst) -> str:
        """Host pointer for a memory operand, bounds-checked (jumps to the fault exit)."""
        if not isinstance(addr, ir.Addr):
            raise unsupported(inst, f"memory operand {addr}")
        base = addr.base
        if isinstance(base, ir.Sym) and space == "param":
            kind = self.params.get(base.name)
            if kind is not None and kind[0] == "kernel":
                params = self.ctx_ptr("params", max(self.f.param_size, 8))
                t = self.tmp(); self.emit(f"{t} = getelementptr i8, ptr {params}, i64 {kind[1] + addr.offset}")
                return t
            if kind is not None:
                t = self.tmp(); self.emit(f"{t} = getelementptr i8, ptr {kind[1]}, i64 {addr.offset}")
                return t
            if base.name in self.param_vars:
                t = self.tmp(); self.emit(f"{t} = getelementptr i8, ptr {self.param_vars[base.name][0]}, i64 {addr.offset}")
                return t
            raise unsupported(inst, f"unknown parameter {base.name}")
        if isinstance(base, ir.Reg) and space == "param":
            return self.kernel_param_address(addr, size, inst)
        if isinstance(base, ir.Sym) and space == "generic" and base.name in self.param_vars:
            t = self.tmp(); self.emit(f"{t} = getelementptr i8, ptr {self.param_vars[base.name][0]}, i64 {addr.offset}")
            return t
        value = self.address_value(addr, inst)
        if space == "generic" and isinstance(base, ir.Sym):
            value = self.generic_symbol_address(base.name, value)
        return self.translate(value, space, size, inst, base,
                              aligned=self.aligned_by_construction(addr, size))

    def generic_symbol_address(self, name: str, value: str) -> str:
        """A .shared or .local variable named in a generic access ([s] in ld without a
        state space) means its generic address, as cvta would give."""
        if name in self.mod.shared.offsets:
            r = self.tmp(); self.emit(f"{r} = or i64 {value}, {L.buffer_address(L.SHARED_WINDOW)}")
            return r
        if name in self.locals:
            v = self.tmp(); self.emit(f"{v} = add i64 {value}, {self.local_base_offset()}")
            r = self.tmp(); self.emit(f"{r} = or i64 {v}, {L.buffer_address(L.LOCAL_WINDOW)}")
            return r
        return value

    def kernel_param_address(self, addr: ir.Addr, size: int, inst) -> str:
        """ld.param [reg+off] in a kernel: the register holds an offset in the parameter
        buffer (``mov.b64 %rd, param`` gives it); outside the buffer, a bounds fault."""
        if not self.is_kernel:
            raise unsupported(inst, "a .param address in a register outside a kernel")
        value = self.address_value(addr, inst)
        limit = max(self.f.param_size, 8)
        params = self.ctx_ptr("params", limit)
        bad = self.tmp()
        if size > limit:
            self.emit(f"{bad} = icmp eq i64 {value}, {value}")     # no room: always a fault
        else:
            self.emit(f"{bad} = icmp ugt i64 {value}, {limit - size}")
        fault, ok = self.label("paramfault"), self.label("paramok")
        self.emit(f"br i1 {bad}, label %{fault}, label %{ok}")
        self.block(fault)
        self.emit(f"call void @record_error(ptr %ctx, ptr %ti, i64 {L.ERR_PARAM}, i64 {value}, "
                  f"i32 {inst.line}, i64 {size})")
        self.emit(f"ret i32 {ST_ERR}")
        self.block(ok)
        p = self.tmp(); self.emit(f"{p} = getelementptr i8, ptr {params}, i64 {value}")
        return p

    def address_value(self, addr: ir.Addr, inst) -> str:
        """The device address (i64) a memory operand names: symbol or register plus offset."""
        base = addr.base
        if base is None:
            value = str(addr.offset)
        elif isinstance(base, ir.Sym):
            v, vty = self.symbol_value(base.name, inst)
            v = self.conv(v, vty, "i64")
            value = v
            if addr.offset:
                t = self.tmp(); self.emit(f"{t} = add i64 {v}, {addr.offset}"); value = t
        else:
            rty = self.regs.get(base.name, "i64")
            v = self.read(base, rty, inst)
            if addr.offset and rty == "i32":
                # a 32-bit address (shared memory, .address_size 32) wraps at 32 bits:
                # [%r+12] with %r = s - 8 is s + 4 (Rodinia's nw), not 2^32 + s + 4
                t = self.tmp(); self.emit(f"{t} = add i32 {v}, {addr.offset & 0xFFFFFFFF}")
                value = self.conv(t, "i32", "i64")
            else:
                v = self.conv(v, rty, "i64") if rty != "i64" else v
                value = v
                if addr.offset:
                    t = self.tmp(); self.emit(f"{t} = add i64 {v}, {addr.offset}"); value = t
        return value

    def translate(self, value: str, space: str, size: int, inst, base=None,
                  aligned: bool = False, kind: int = None) -> str:
        """Host pointer for the device address ``value`` (i64) of ``space``, bounds-checked
        (jumps to the fault exit); ``base``: the register it came from, whose one known
        buffer, if any, makes the check cheaper; ``aligned``: the address is naturally
        aligned by construction (no alignment check). ``kind``: for racecheck builds, what
        the access does (racecheck_ir READ, WRITE, ATOMIC; by default, from the opcode)."""
        fn = {"generic": "xlate", "global": "xlate", "const": "xlate", "shared": "xshared",
              "local": "xlocal"}.get(space)
        if fn is None:
            raise unsupported(inst, f"state space .{space}")
        if fn == "xlate" and base is not None:
            window = self.known_window(base)
            if window is not None:
                p = self.checked_in_window(window, value, size, inst, aligned)
                if self.mod.racecheck:
                    self.note_race(value, size, inst, kind, False)
                    self.note_init(value, size, inst, kind)
                return p
        if not aligned:
            self.require_aligned(value, size, inst, {"xshared": L.SHARED_WINDOW,
                                                     "xlocal": L.LOCAL_WINDOW}.get(fn))
        if fn == "xlate" and base is not None:
            allowed = self.allowed_windows(base)
            if allowed:
                self.require_window(value, allowed, size, inst)
        p = self.tmp()
        self.emit(f"{p} = call ptr @{fn}(ptr %ctx, ptr %ti, ptr %lbase, i64 {value}, i64 {size}, i32 {inst.line})")
        bad = self.tmp(); self.emit(f"{bad} = icmp eq ptr {p}, null")
        ok = self.label("ok")
        self.emit(f"br i1 {bad}, label %fault, label %{ok}")
        self.block(ok)
        if self.mod.racecheck and fn in ("xshared", "xlate"):
            self.note_race(value, size, inst, kind, fn == "xshared")
        if self.mod.racecheck and fn == "xlate":
            self.note_init(value, size, inst, kind)
        return p

    @staticmethod
    def access_kind(inst, kind=None) -> int:
        """What an access does for the checked build (racecheck_ir READ, WRITE, ATOMIC):
        ``kind`` where the caller knows, else from the opcode."""
        if kind is not None:
            return kind
        if inst.opcode == "wmma" and "store" in inst.modifiers:
            return RACE_WRITE
        return {"st": RACE_WRITE, "stmatrix": RACE_WRITE, "atom": RACE_ATOMIC,
                "red": RACE_ATOMIC}.get(inst.opcode, RACE_READ)

    def note_init(self, value: str, size, inst, kind) -> None:
        """Checked builds: tell initcheck of a global access (racecheck_ir.py)."""
        kind = self.access_kind(inst, kind)
        self.emit(f"call void @init_note(ptr %ctx, ptr %ti, i64 {value}, i64 {size}, "
                  f"i32 {kind}, i32 {inst.line})")

    def note_race(self, value: str, size, inst, kind, shared_offset: bool) -> None:
        """racecheck builds: tell the shadow memory of this access (racecheck_ir.py)."""
        if kind is None and inst.opcode == "cp" and shared_offset:
            kind = RACE_WRITE   # cp.async: its .shared operand is where it writes
        kind = self.access_kind(inst, kind)
        if shared_offset:       # (a .shared address is an offset in the block's window)
            t = self.tmp()
            self.emit(f"{t} = or i64 {value}, {L.buffer_address(L.SHARED_WINDOW)}")
            value = t
        self.emit(f"call void @race_note(ptr %ctx, ptr %ti, i64 {value}, i64 {size}, "
                  f"i32 {kind}, i32 {inst.line}, i32 {order_event(inst)})")


    def allowed_windows(self, base) -> list:
        """The window numbers (i64 SSA values or constants) of every buffer ``base`` may
        point into, when they are all known (parameters, module variables, shared or local
        memory); [] otherwise (a pointer loaded from memory, or built from 32-bit data,
        may point anywhere the launch maps)."""
        if not self.is_kernel or not isinstance(base, ir.Reg):
            return []
        origins = self.mod.loose_provenance.get(base.name, set())
        if not origins or UNKNOWN in origins:
            return []
        out = []
        for origin in sorted(origins, key=str):
            if origin == SHARED:
                out.append(str(L.SHARED_WINDOW))
            elif origin == LOCAL:
                out.append(str(L.LOCAL_WINDOW))
            elif isinstance(origin, tuple) and (origin[0] == "param" or
                                                origin[1] in self.mod.windows):
                if origin not in self.windows_known:
                    self.windows_known[origin] = self.entry_window_loads(origin)
                first = self.windows_known[origin][0]
                w = self.tmp(); self.emit(f"{w} = lshr i64 {first}, {L.WINDOW_SHIFT}")
                out.append(w)
            else:
                return []
        return out

    def require_window(self, value: str, allowed: list, size: int, inst) -> None:
        """Fault unless the device address ``value`` is in one of the ``allowed`` windows:
        an offset that carries a pointer past its own buffer into another is a bounds
        fault, as on a GPU, never an access to the other buffer."""
        w = self.tmp(); self.emit(f"{w} = lshr i64 {value}, {L.WINDOW_SHIFT}")
        ok = None
        for a in allowed:
            eq = self.tmp(); self.emit(f"{eq} = icmp eq i64 {w}, {a}")
            if ok is None:
                ok = eq
            else:
                both = self.tmp(); self.emit(f"{both} = or i1 {ok}, {eq}")
                ok = both
        good, bad = self.label("inw"), self.label("outw")
        self.emit(f"br i1 {ok}, label %{good}, label %{bad}, !prof !1")
        self.block(bad)
        self.emit(f"call void @record_error(ptr %ctx, ptr %ti, i64 {L.ERR_BOUNDS}, i64 {value}, "
                  f"i32 {inst.line}, i64 {size})")
        self.emit("br label %fault")
        self.block(good)

    def known_window(self, base):
        """(window base, host address, size) of the one buffer ``base`` can point into, as
        loop-invariant SSA values, or None when its origin is not a single buffer. The values
        are loaded once in the function's entry block, where LLVM hoists them out of the
        thread loop."""
        if not self.is_kernel:
            return None
        if isinstance(base, ir.Sym):
            origins = {("var", base.name)} if base.name in self.mod.windows else set()
        elif isinstance(base, ir.Reg):
            origins = self.mod.provenance.get(base.name, set())
        else:
            return None
        if len(origins) != 1 or UNKNOWN in origins:
            return None
        origin = next(iter(origins))
        if not isinstance(origin, tuple) or (origin[0] == "var" and origin[1] not in self.mod.windows):
            return None
        if origin not in self.windows_known:
            self.windows_known[origin] = self.entry_window_loads(origin)
        return self.windows_known[origin]

    def entry_window_loads(self, origin) -> tuple:
        """(first mapped address, host address, size) of ``origin``'s buffer, read from the
        %kw slots that @thread_constants fills with the launch constants."""
        values = []
        for field in window_fields(origin, self.mod.windows):
            slot = len(self.constant_slots)
            self.constant_slots.append(field)
            k = f"%kw{slot}"
            self.prologue.append(f"  {k}.p = getelementptr i64, ptr %kw, i64 {slot}")
            self.prologue.append(f"  {k} = load i64, ptr {k}.p")
            values.append(k)
        return tuple(values)

    def constants_loader(self) -> str:
        """@thread_constants(ctx, kw): copies the context values @thread reads from %kw."""
        lines = ["define internal void @thread_constants(ptr %ctx, ptr %kw) alwaysinline {", "entry:"]
        for slot, (field, index) in enumerate(self.constant_slots):
            lines += [f"  %f{slot} = getelementptr i64, ptr %ctx, i64 {L.CTX[field]}",
                      f"  %t{slot} = load ptr, ptr %f{slot}",
                      f"  %p{slot} = getelementptr i64, ptr %t{slot}, i64 {index}",
                      f"  %v{slot} = load i64, ptr %p{slot}",
                      f"  %d{slot} = getelementptr i64, ptr %kw, i64 {slot}",
                      f"  store i64 %v{slot}, ptr %d{slot}"]
        return "\n".join(lines + ["  ret void", "}"])

    def checked_in_window(self, window, value: str, size: int, inst, aligned: bool = False) -> str:
        """Host pointer for ``value`` checked against a known buffer: one compare against a
        launch constant. Outside it, a plain kernel's thread stops and reports the fault
        (ST_SITE); a resumable kernel's falls back to the full translation, which reports."""
        wbase, host, limit = window
        rel = self.tmp(); self.emit(f"{rel} = sub i64 {value}, {wbase}")
        # rel + size <= limit with rel >= 0, as one unsigned compare against a loop-invariant
        # bound: rel < usub.sat(limit + 1, size), which is 0 when the buffer is too small
        room = self.tmp(); self.emit(f"{room} = add i64 {limit}, 1")
        bound = self.tmp(); self.emit(f"{bound} = call i64 @llvm.usub.sat.i64(i64 {room}, i64 {size})")
        ok = self.tmp(); self.emit(f"{ok} = icmp ult i64 {rel}, {bound}")
        checked = None if aligned else self.aligned(value, size)
        if checked is not None:
            both = self.tmp(); self.emit(f"{both} = and i1 {ok}, {checked}")
            ok = both
        if self.inst_index in self.trusted:
            # checked once for the whole block when %trusted (block_check.py)
            checked = ok
            ok = self.tmp(); self.emit(f"{ok} = or i1 %trusted, {checked}")
        hp = self.tmp(); self.emit(f"{hp} = inttoptr i64 {host} to ptr")
        p = self.tmp(); self.emit(f"{p} = getelementptr i8, ptr {hp}, i64 {rel}")
        good, bad = self.label("inb"), self.label("oob")
        self.emit(f"br i1 {ok}, label %{good}, label %{bad}, !prof !1")
        self.block(bad)
        if self.mod.deferred_faults:
            site = len(self.mod.fault_sites)
            self.mod.fault_sites.append((inst.line, size))
            fa = self.ctx_ptr("fault_addr")
            lt = self.tmp(); self.emit(f"{lt} = zext i32 {self.ti(6)} to i64")
            slot = self.tmp(); self.emit(f"{slot} = getelementptr i64, ptr {fa}, i64 {lt}")
            self.emit(f"store i64 {value}, ptr {slot}")
            self.emit(f"ret i32 {ST_SITE + site}")
            self.block(good)
            return p
        # outside the known bounds: the full translation reports the fault (or a footprint
        # violation) when the address is in the buffer's own window; another window is a
        # fault, never an access to that buffer
        if not aligned:
            self.require_aligned(value, size, inst)
        own = self.tmp(); self.emit(f"{own} = lshr i64 {wbase}, {L.WINDOW_SHIFT}")
        self.require_window(value, [own], size, inst)
        mine = self.label("xw")
        self.emit(f"br label %{mine}")
        self.block(mine)
        slow = self.tmp()
        self.emit(f"{slow} = call ptr @xlate(ptr %ctx, ptr %ti, ptr %lbase, i64 {value}, i64 {size}, i32 {inst.line})")
        null = self.tmp(); self.emit(f"{null} = icmp eq ptr {slow}, null")
        join = self.label("xj")
        self.emit(f"br i1 {null}, label %fault, label %{join}")
        self.block(good)
        self.emit(f"br label %{join}")
        self.block(join)
        r = self.tmp(); self.emit(f"{r} = phi ptr [{p}, %{good}], [{slow}, %{mine}]")
        return r

    # -- liveness (what a sync point must keep) ----------------------------------------------------
    def _reg_names(self, op, out: set):
        if isinstance(op, ir.Reg):
            if op.name in self.vector_regs:
                if op.component:
                    out.add(self.component_reg(op).name)
                else:
                    out.update(i.name for i in self.vector_items(op))
            elif op.name in self.regs:
                out.add(op.name)
        elif isinstance(op, ir.Pair):
            self._reg_names(op.first, out)
            self._reg_names(op.second, out)
        elif isinstance(op, ir.Addr):
            self._reg_names(op.base, out)
        elif isinstance(op, (ir.Vec, ir.ParamList, ir.AddrList)):
            for item in op.items:
                if item is not None:
                    self._reg_names(item, out)

    def compute_liveness(self):
        """Registers live across each instruction (live-in or live-out), by the classic
        backward dataflow over the CFG. Sync points spill only these, not every register."""
        insts = self.f.instructions
        uses, defs = [], []
        for inst in insts:
            u, d = set(), set()
            ndest = len(inst.destinations)
            for k, op in enumerate(inst.operands):
                if k < ndest and not isinstance(op, (ir.Addr, ir.ParamList)):
                    self._reg_names(op, d)
                    if inst.reads_destinations:
                        self._reg_names(op, u)
                else:
                    self._reg_names(op, u)
            if inst.guard is not None:
                self._reg_names(inst.guard, u)
                u |= d      # a guarded write may not happen: the old value stays live
            uses.append(u)
            defs.append(d)
        cfg = build_cfg(self.f)
        live_in_block = {b.index: set() for b in cfg.blocks}
        changed = True
        while changed:
            changed = False
            for blk in reversed(cfg.blocks):
                live = set()
                for succ in cfg.successors(blk.index):
                    if succ != EXIT:
                        live |= live_in_block[succ]
                for i in range(blk.end - 1, blk.start - 1, -1):
                    live = (live - defs[i]) | uses[i]
                if live != live_in_block[blk.index]:
                    live_in_block[blk.index] = live
                    changed = True
        self.inst_defs = defs
        self.inst_uses = uses
        self.live_in_block = live_in_block
        self.live_across = [None] * len(insts)
        for blk in cfg.blocks:
            live = set()
            for succ in cfg.successors(blk.index):
                if succ != EXIT:
                    live |= live_in_block[succ]
            for i in range(blk.end - 1, blk.start - 1, -1):
                live_in = (live - defs[i]) | uses[i]
                self.live_across[i] = live | live_in
                live = live_in

    # -- the function as a whole -------------------------------------------------------------
    def render(self) -> str:
        self.declare()
        self.inst_index = -1
        self.live_across = None
        if self.is_kernel and self.mod.resumable:
            self.compute_liveness()
        if self.is_kernel and not self.mod.resumable and self.mod.vector_plan is None:
            self.trusted = self.mod.trusted_sites(self)
        for name in self.f.labels:
            self.labels[name] = f"L{len(self.labels)}"
        self.find_label_positions()
        self.block("start")
        if not self.is_kernel:
            # a device function (maybe recursive): its native frame must stay inside the
            # thread's budget, else a call stack overflow is reported, not a crash
            fa = self.tmp(); self.emit(f"{fa} = call ptr @llvm.frameaddress.p0(i32 0)")
            fi = self.tmp(); self.emit(f"{fi} = ptrtoint ptr {fa} to i64")
            low = self.ctx("stack_limit")
            deep = self.tmp(); self.emit(f"{deep} = icmp ult i64 {fi}, {low}")
            room = self.label("native_stack_ok")
            self.emit(f"br i1 {deep}, label %native_stack_overflow, label %{room}, !prof !1")
            self.block(room)
        if self.local_size:
            need = self.tmp(); self.emit(f"{need} = add i64 %lsp, {self.local_size}")
            limit = self.ctx("local_size")
            over = self.tmp(); self.emit(f"{over} = icmp ugt i64 {need}, {limit}")
            ok = self.label("stack_ok")
            self.emit(f"br i1 {over}, label %stack_overflow, label %{ok}")
            self.block(ok)
        for s in self.f.statements():
            if isinstance(s, ir.Label):
                target = self.labels[s.name]
                self.emit(f"br label %{target}")
                self.block(target)
            elif isinstance(s, ir.Instruction):
                self.inst_index += 1
                self.instruction(s)
        self.return_registers()
        self.emit("ret i32 0")
        self.block("fault")
        self.emit(f"ret i32 {ST_ERR}")
        self.block("stack_overflow")
        self.emit(f"call void @record_error(ptr %ctx, ptr %ti, i64 {L.ERR_STACK}, i64 %lsp, i32 {self.f.line}, i64 {self.local_size})")
        self.emit(f"ret i32 {ST_ERR}")
        if not self.is_kernel:
            self.block("native_stack_overflow")
            self.emit(f"call void @record_error(ptr %ctx, ptr %ti, i64 {L.ERR_STACK}, "
                      f"i64 {L.NATIVE_STACK_OVERFLOW}, i32 {self.f.line}, i64 0)")
            self.emit(f"ret i32 {ST_ERR}")

        if self.is_kernel and self.trusted:
            # called from two thread loops (block_check.py), inlined into both
            sig = (f"define internal i32 @thread(ptr {CTX_ARG}, ptr %ti, ptr %lbase, i64 %lsp, "
                   f"ptr %frame, ptr %kw, i1 %trusted) alwaysinline")
        elif self.is_kernel:
            sig = f"define internal i32 @thread(ptr {CTX_ARG}, ptr %ti, ptr %lbase, i64 %lsp, ptr %frame, ptr %kw)"
        else:
            args = ["ptr %ctx", "ptr %ti", "ptr %lbase", "i64 %lsp"]
            args += [f"ptr %ret{i}" for i in range(len(self.f.returns))]
            args += [f"ptr %arg{i}" for i in range(len(self.f.params))]
            sig = f'define internal i32 @"f.{self.f.name}"({", ".join(args)})'
        polls = self.stop_poll_blocks()
        head = [sig + " {", "entry:"]
        for name, ty in self.regs.items():
            head.append(f"  {self.reg_ptr(name)} = alloca {ty}")
        for name, (ptr, size) in self.param_vars.items():
            head.append(f"  {ptr} = alloca [{size} x i8], align 16")
        head.append("  %cc = alloca i32")
        head.append("  store i32 0, ptr %cc")
        head.append("  %ts = alloca [2 x i64], align 8")
        head += self.prologue
        if self.resume_blocks:
            head.append("  %resume = load i32, ptr %frame")
            cases = " ".join(f"i32 {k}, label %resume{k}" for k in range(1, len(self.resume_blocks) + 1))
            head.append(f"  switch i32 %resume, label %start [{cases}]")
        else:
            head.append("  br label %start")
        tail = []
        for k, (reload_lines, target) in enumerate(self.resume_blocks, 1):
            tail.append(f"resume{k}:")
            tail += reload_lines
            tail.append(f"  br label %{target}")
        return "\n".join(head + self.lines + tail + polls + ["}"])

    # -- sync points (resumable kernels) -------------------------------------------------------
    def frame_field(self, field: str) -> str:
        """The address of a field of this thread's frame header (FRAME_FIELD)."""
        p = self.tmp(); self.emit(f"{p} = getelementptr i32, ptr %frame, i64 {FRAME_FIELD[field]}")
        return p

    def sync_point(self, status: int, fields: dict) -> str:
        """Spill registers, record the header fields, return ``status``; the code after
        continues in a fresh block where execution resumes. Returns that block's name."""
        self.sync_points += 1
        k = self.sync_points
        if self.mod.racecheck and status == ST_WARP and fields.get("count", "-1") != "-1":
            # synccheck: the member mask must hold the calling thread (racecheck_ir)
            self.emit(f"call void @sync_mask(ptr %ctx, ptr %ti, i32 {fields['count']}, "
                      f"i32 {fields.get('line', 0)})")
        if status == ST_WARP and "count" not in fields:
            fields = {**fields, "count": "-1"}   # the member mask: the whole warp
        for field, value in fields.items():
            p = self.frame_field(field)
            self.emit(f"store i32 {value}, ptr {p}")
        self.emit(f"store i32 {k}, ptr %frame")
        reload = []
        keep = self.live_across[self.inst_index] if self.live_across else None
        for slot, (name, ty) in enumerate(self.regs.items()):
            if keep is not None and name not in keep:
                continue
            p = self.tmp(); self.emit(f"{p} = getelementptr i8, ptr %frame, i64 {FRAME_HEADER + 8 * slot}")
            v = self.tmp(); self.emit(f"{v} = load {ty}, ptr {self.reg_ptr(name)}")
            self.emit(f"store {ty} {v}, ptr {p}")
            rp, rv = f"%rl{k}.{slot}p", f"%rl{k}.{slot}v"
            reload.append(f"  {rp} = getelementptr i8, ptr %frame, i64 {FRAME_HEADER + 8 * slot}")
            reload.append(f"  {rv} = load {ty}, ptr {rp}")
            reload.append(f"  store {ty} {rv}, ptr {self.reg_ptr(name)}")
        # .param variables of call sequences are not kept: a call sequence (st.param, call,
        # ld.param inside one { } scope) never contains a sync point.
        after = self.label("after")
        self.emit(f"ret i32 {status}")
        self.block(after)
        self.resume_blocks.append((reload, after))
        if self.mod.racecheck and status in (ST_BAR, ST_WARP):
            # a block barrier or a warp synchronization passed (racecheck_ir.py)
            self.emit(f"call void @race_epoch(ptr %ctx, ptr %ti, i32 {0 if status == ST_BAR else 1})")
        return after

    def exchange_ptr(self, lane_expr: str = None) -> str:
        """Pointer to this thread's (or lane ``lane_expr``'s of this warp) exchange slot."""
        return self.lane_slot("exchange", 32, lane_expr)

    def lane_slot(self, field: str, slot_bytes: int, lane_expr: str = None) -> str:
        """Pointer to this thread's slot (or lane ``lane_expr``'s of this warp) in the
        per-thread area the context's ``field`` points to, ``slot_bytes`` per thread."""
        base = self.ctx_ptr(field)
        ltid = self.ti(6)
        if lane_expr is None:
            idx = ltid
        else:
            wb = self.tmp(); self.emit(f"{wb} = and i32 {ltid}, -32")
            idx = self.tmp(); self.emit(f"{idx} = add i32 {wb}, {lane_expr}")
        i64 = self.conv(idx, "i32", "i64")
        off = self.tmp(); self.emit(f"{off} = mul i64 {i64}, {slot_bytes}")
        p = self.tmp(); self.emit(f"{p} = getelementptr i8, ptr {base}, i64 {off}")
        return p

    # -- instructions --------------------------------------------------------------------------
    def instruction(self, inst: ir.Instruction):
        op = inst.opcode
        if self.is_kernel and self.inst_index in self.mod.spins:
            # the back edge of a spin loop: the block's other threads run before the next
            # poll (ptx/spins.py)
            again, fall = self.label("spin"), self.label("fall")
            g = self.read(inst.guard, "i1", inst) if inst.guard is not None else "true"
            self.emit(f"br i1 {g}, label %{again}, label %{fall}")
            self.block(again)
            self.sync_point(ST_SPIN, {"line": inst.line})
            self.emit(f"br label %{self.target(inst)}")
            self.block(fall)
            return
        if op == "bra" and inst.guard is not None:
            g = self.read(inst.guard, "i1", inst)
            fall = self.label("fall")
            name = self.label_of(inst)
            if self.is_back_edge(name):
                self.branch_back(g, self.labels[name], fall)
            else:
                self.emit(f"br i1 {g}, label %{self.labels[name]}, label %{fall}")
            self.block(fall)
            return
        skip = None
        if inst.guard is not None:
            g = self.read(inst.guard, "i1", inst)
            do, skip = self.label("do"), self.label("skip")
            self.emit(f"br i1 {g}, label %{do}, label %{skip}")
            self.block(do)
        handler = self.LOWERINGS.get(op)
        if handler is None:
            raise unsupported(inst)
        handler(self, inst)
        if skip is not None:
            self.emit(f"br label %{skip}")
            self.block(skip)

    def label_of(self, inst) -> str:
        """The PTX label a branch instruction names."""
        name = inst.operands[0].name
        if name not in self.labels:
            raise unsupported(inst, f"branch to unknown label {name}")
        return name

    def target(self, inst) -> str:
        """Where a branch instruction goes (through a stop poll when it goes back)."""
        return self.branch_target(self.label_of(inst))

    # types ----------------------------------------------------------------------------------
    @staticmethod
    def itype(inst) -> str:
        types = inst.types
        if not types:
            raise unsupported(inst, "no type")
        return types[-1]

    def lt(self, inst, ptx_type=None) -> str:
        t = ptx_type or self.itype(inst)
        if t not in LLTY:
            raise unsupported(inst, f"type .{t}")
        return LLTY[t]

    # arithmetic helpers -----------------------------------------------------------------------
    FLOAT_TYPES = ("f32", "f64")
    HALF_TYPES = ("f16", "bf16", "f16x2", "bf16x2")


class Function(FunctionCore, ControlLowering, MemoryLowering, ArithmeticLowering,
               FloatMathLowering, BitsLowering, VideoLowering, CompareLowering,
               ConversionLowering, AtomicLowering, SyncLowering, MatrixLowering,
               WmmaLowering, AsyncBarrierLowering, ScalarVideoLowering, SleepLowering,
               WarpgroupLowering):
    """One PTX function body translated per thread: the core and the lowerings of every
    instruction family (``lowering/``). The per-thread form installs each family's registry
    here, explicitly; an opcode none of them lowers is refused (``instruction``)."""

    LOWERINGS = Lowerings(control.registry, memory.registry, arithmetic.registry,
                          float_math.registry, bits.registry, video.registry, compare.registry,
                          conversion.registry, atomics.registry, sync.registry, matrix.registry,
                          wmma.registry, async_barrier.registry, sleep.registry,
                          warpgroup.registry)
