"""PTX -> LLVM IR (textual, parsed by llvmlite).

One kernel becomes ``i32 @dptx_run(ptr ctx, i64 first_block, i64 end_block)`` that runs a
range of blocks; the per-thread body is ``@thread`` and every device function an LLVM
function. Registers are allocas (SROA/mem2reg make them SSA values). A kernel with sync points
(barriers, warp operations) runs resumable threads (DESIGN.md decision 4): at a sync point a
thread spills its registers to its frame, records where to resume and returns; the block
scheduler in ``@dptx_run`` resumes the threads once all have arrived. Kernels without sync
points run a plain loop over threads.
"""
from __future__ import annotations

import os
import re
import struct

from ..errors import PtxUnsupportedError
from ..ptx import ir
from ..ptx.analysis import UNKNOWN, pointer_provenance, reachable_functions
from ..ptx.cfg import EXIT, build_cfg, sync_kind
from ..ptx.rewrite import unique_scoped_registers
from . import address_space as L
from .runtime_ir import CTX_ARG, RUNTIME_IR, scheduler_plain, scheduler_resumable, scheduler_warps

LLTY = {
    "pred": "i1", "b8": "i8", "u8": "i8", "s8": "i8",
    "b16": "i16", "u16": "i16", "s16": "i16", "f16": "i16", "bf16": "i16",
    "b32": "i32", "u32": "i32", "s32": "i32", "f16x2": "i32", "bf16x2": "i32",
    "b64": "i64", "u64": "i64", "s64": "i64", "f32": "float", "f64": "double",
}
BITS = {"i1": 1, "i8": 8, "i16": 16, "i32": 32, "i64": 64, "i128": 128, "float": 32, "double": 64}
INT_OF = {"float": "i32", "double": "i64"}

FUNCTION_ID_BASE = L.FUNCTION_ID_BASE   # mov.u64 %rd, func gives FUNCTION_ID_BASE + index

# Status codes returned by thread functions
ST_DONE, ST_BAR, ST_WARP, ST_ERR = 0, 1, 2, 100
# A plain kernel's thread stopped by a bounds fault returns ST_SITE + the index of the access
# in Module.fault_sites, having stored the address in its fault_addr slot.
ST_SITE = 1000
FRAME_HEADER = 64   # i32 slots: 0 resume, 1 status, 2 bar id, 3 bar count, 4 red op,
#                     5 red value, 6 red result, 7 bar line

SPECIAL_INDEX = {("%tid", "x"): 0, ("%tid", "y"): 1, ("%tid", "z"): 2,
                 ("%ctaid", "x"): 3, ("%ctaid", "y"): 4, ("%ctaid", "z"): 5}


def _fconst(value: float, llty: str) -> str:
    """LLVM spelling of a float constant (hex of the double it widens to)."""
    if llty == "float":
        value = struct.unpack("<f", struct.pack("<f", value))[0] if value == value else value
    return "0x%016X" % struct.unpack("<Q", struct.pack("<d", value))[0]


def _f32_bits_to_double(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits & 0xFFFFFFFF))[0]


def _f64_bits_to_double(bits: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", bits & (2**64 - 1)))[0]


# Extern device functions the CPU executor provides itself: printf's buffer call, and what a
# failed assert() calls.
HOST_FUNCTIONS = ("vprintf", "__assertfail")


def unsupported(inst: ir.Instruction, why: str = ""):
    return PtxUnsupportedError(
        f"PTX line {inst.line}: {inst.full_opcode} is not supported by the CPU executor"
        + (f" ({why})" if why else ""))


class Module:
    """Translation of one kernel (and the functions it reaches) to an LLVM IR module."""

    def __init__(self, module: ir.Module, kernel_name: str, vector_mode: str = None):
        self.module = module
        self.kernel = next(f for f in module.kernels if f.name == kernel_name)
        self.functions = reachable_functions(module, self.kernel)
        if any(i.opcode == "call" and len(i.operands) > 1 and isinstance(
                next((o for o in i.operands if not isinstance(o, ir.ParamList)), None), ir.Reg)
               for f in self.functions if f.body is not None for i in f.instructions):
            # an indirect call may reach any function (addresses can come from memory)
            seen = {f.name for f in self.functions}
            self.functions += [f for f in module.functions
                               if f.body is not None and not f.is_kernel and f.name not in seen]
        # one register per name below: give registers of nested { } scopes names of their own
        self.functions = [unique_scoped_registers(f) for f in self.functions]
        self.kernel = next(f for f in self.functions if f.name == kernel_name and f.is_kernel)
        self.windows = {v.name: L.FIRST_BUFFER + i for i, v in enumerate(L.module_variables(module))}
        self.const_vars = {v.name: v for v in module.global_variables}
        self.shared = L.shared_layout(module, [f for f in self.functions if f.body is not None])
        self.resumable = any(sync_kind(i) for i in self.kernel.instructions)
        for f in self.functions:
            if f is not self.kernel and f.body is not None and any(sync_kind(i) for i in f.instructions):
                bad = next(i for i in f.instructions if sync_kind(i))
                raise unsupported(bad, f"barrier or warp operation inside device function {f.name}")
        # Where each kernel register's pointer comes from: an access through a register that
        # holds exactly one parameter (or module variable) plus data is checked against that
        # buffer with loop-invariant bounds, without a table lookup.
        self.provenance = pointer_provenance(module, self.kernel, strict=True)
        # Plain kernels report bounds faults from the thread loop's latch instead of leaving
        # it, so that LLVM can vectorize the loop over threads (DESIGN.md point 4).
        self.deferred_faults = not self.resumable
        # Kernels with barriers, warp operations or loops run warp-vectorized when vector_plan
        # can prove it exact (DPTX_CPU_VECTOR=0 turns it off; =all takes every kernel).
        self.vector_plan, self.vector_reason = None, "kernel without sync points"
        choice = (vector_mode or os.environ.get("DPTX_CPU_VECTOR", "1")).strip().lower()
        # Plain kernels with a loop in each thread go warp-vectorized too: LLVM's vectorizer
        # only works on innermost loops, so a per-thread loop (often a recurrence) would run
        # one thread at a time, while 32 lanes run it side by side (25x on a polynomial).
        has_loop = bool(build_cfg(self.kernel).back_edges())
        self.vector_for_loops = False   # vectorized only because of a loop (the executor
        #                                 also builds the plain form and measures both)
        if choice in ("0", "off", "no", "false"):
            self.vector_reason = f"DPTX_CPU_VECTOR={choice}"
        elif self.resumable or has_loop or choice == "all":
            from .vector_plan import plan_vector
            plan = plan_vector(module, self.kernel)
            if isinstance(plan, str):
                self.vector_reason = plan
            else:
                self.vector_plan, self.vector_reason = plan, None
                self.deferred_faults = False
                self.vector_for_loops = not self.resumable and choice != "all"
        self.fault_sites: list = []    # (PTX line, access size) per deferred fault exit
        self.prefetch_sites = 0        # global loads with a stride-prefetch history slot
        self.uses_clock = False        # %globaltimer reads clock_gettime
        self.local_sizes = {}
        self.frame_bytes = FRAME_HEADER
        self.directed: dict = {}   # helper name -> IR text (directed-rounding operations)
        self.directed_decls: set = set()

    ROUNDING = {"rz": 0, "rn": 1, "rp": 2, "rm": 3}

    def directed_helper(self, op: str, mode: str, ret: str, args: list) -> str:
        """Name of a strictfp helper doing ``op`` under rounding ``mode`` (.rz/.rm/.rp):
        it sets the FP rounding mode (MXCSR), runs the constrained intrinsic and restores
        round-to-nearest. Kept out of line so that no other FP code sees the mode."""
        sig = ".".join([op, mode, ret] + args)
        name = "dr." + sig
        if name in self.directed:
            return name
        params = ", ".join(f"{t} %a{i}" for i, t in enumerate(args))
        call_args = ", ".join(f"{t} %a{i}" for i, t in enumerate(args))
        sfx = {"half": "f16", "float": "f32", "double": "f64", "i32": "i32", "i64": "i64"}
        if op in ("sitofp", "uitofp", "fptrunc"):
            intrinsic = f"llvm.experimental.constrained.{op}.{sfx[ret]}.{sfx[args[0]]}"
        else:
            intrinsic = f"llvm.experimental.constrained.{op}.{sfx[ret]}"
        md = ', metadata !"round.dynamic", metadata !"fpexcept.ignore"'
        self.directed_decls.add(f'declare {ret} @{intrinsic}({", ".join(args)}, metadata, metadata)')
        self.directed[name] = (
            f'define internal {ret} @"{name}"({params}) noinline strictfp {{\n'
            f"entry:\n"
            f"  call void @llvm.set.rounding(i32 {self.ROUNDING[mode]}) strictfp\n"
            f"  %r = call {ret} @{intrinsic}({call_args}{md}) strictfp\n"
            f"  call void @llvm.set.rounding(i32 1) strictfp\n"
            f"  ret {ret} %r\n}}")
        return name

    def local_bytes_per_thread(self) -> int:
        """Local memory per thread: every function's frame once, and room for 64 nested
        activations when there are device functions (recursion); deeper stacks fault."""
        frames = sum((s + 15) // 16 * 16 for s in self.local_sizes.values())
        if len(self.local_sizes) > 1:
            frames = max(frames * 8, frames + 64 * max(self.local_sizes.values()))
        return max(64, frames)

    def translate(self) -> str:
        bodies = []
        kernel_fn = None
        for f in self.functions:
            if f.body is None:
                if f.name not in HOST_FUNCTIONS:
                    raise PtxUnsupportedError(f"PTX line {f.line}: function {f.name} is declared "
                                              f"but not defined in this module")
                continue
            if f is self.kernel and self.vector_plan is not None:
                from .vector import VectorFunction
                fn = VectorFunction(self, f, self.vector_plan)
            else:
                fn = Function(self, f)
            bodies.append(fn.render())
            if f is self.kernel:
                kernel_fn = fn
        kw = max(len(kernel_fn.constant_slots), 1)
        if self.vector_plan is not None:
            self.frame_bytes = kernel_fn.frame_bytes
            sched = scheduler_warps(self.frame_bytes, kernel_fn.header_bytes, kw)
            bodies += sorted(kernel_fn.decls)
        elif self.resumable:
            self.frame_bytes = FRAME_HEADER + 8 * len(kernel_fn.regs)
            sched = scheduler_resumable(self.frame_bytes, kw)
        elif kernel_fn.trusted:
            from .block_check import BlockCheck
            bodies.append(BlockCheck(self, self.kernel, kernel_fn.trusted, kernel_fn.check_slice).render())
            sched = scheduler_plain(self.fault_sites, ST_SITE, kw, block_check=True)
        else:
            sched = scheduler_plain(self.fault_sites, ST_SITE, kw)
        bodies.append(kernel_fn.constants_loader())
        helpers = sorted(self.directed_decls) + list(self.directed.values())
        if self.uses_clock:
            helpers.append("declare i32 @clock_gettime(i32, ptr)")
        if helpers:
            helpers.insert(0, "declare void @llvm.set.rounding(i32)")
        text = "\n".join(bodies + helpers + [RUNTIME_IR, sched])
        return "\n".join(self.intrinsic_declarations(text) + [text]) + "\n"

    @staticmethod
    def intrinsic_declarations(text: str) -> list:
        """``declare`` lines for every LLVM intrinsic the text calls, from the call sites."""
        decls = {}
        for m in re.finditer(r"call (\S+) @(llvm\.[\w.]+)\(([^)]*)\)", text):
            ret, name, args = m.groups()
            if name in decls or name == "llvm.memcpy.p0.p0.i64" or "constrained" in name \
                    or name == "llvm.set.rounding" or re.search(r"\.v\d+", name):
                continue
            types = [a.strip().split(" ")[0] for a in args.split(",")] if args.strip() else []
            decls[name] = f"declare {ret} @{name}({', '.join(types)})"
        return list(decls.values())



def window_fields(origin, windows: dict) -> list:
    """Context fields holding (first mapped address, host address, size) of the buffer a
    pointer of ``origin`` points into: the parameter's triple in ``param_windows``, or the
    module variable's row of the buffer table (address_space.TABLE_ROW)."""
    kind, which = origin
    if kind == "param":
        return [("param_windows", 3 * which + k) for k in range(3)]
    w = windows[which]
    return [("buftable", L.TABLE_ROW * w + k) for k in range(3)]

class Function:
    """Translation of one PTX function body."""

    def __init__(self, mod: Module, f: ir.Function):
        self.mod = mod
        self.f = f
        self.is_kernel = f.is_kernel
        self.lines = []
        self.allocas = []
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
            for i, p in enumerate(f.returns):
                self.params[p.name] = ("ptr", f"%ret{i}", p)
            for i, p in enumerate(f.params):
                self.params[p.name] = ("ptr", f"%arg{i}", p)

    COMPONENTS = {"x": "x", "y": "y", "z": "z", "w": "w", "r": "x", "g": "y", "b": "z", "a": "w"}

    def component_reg(self, op):
        """``%v.y`` of a vector register as the scalar register holding it; other operands
        unchanged."""
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
            raise unsupported(inst, f"taking the address of kernel parameter {name}")
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
                    return _fconst(_f32_bits_to_double(op.value), ty)
                if op.kind == "f64":
                    return _fconst(_f64_bits_to_double(op.value), ty)
                return _fconst(float(op.value), ty)
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
        if isinstance(base, ir.Sym) and space == "generic" and base.name in self.param_vars:
            t = self.tmp(); self.emit(f"{t} = getelementptr i8, ptr {self.param_vars[base.name][0]}, i64 {addr.offset}")
            return t
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
            v = self.conv(v, rty, "i64") if rty != "i64" else v
            value = v
            if addr.offset:
                t = self.tmp(); self.emit(f"{t} = add i64 {v}, {addr.offset}"); value = t
        fn = {"generic": "xlate", "global": "xlate", "const": "xlate", "shared": "xshared",
              "local": "xlocal"}.get(space)
        if fn is None:
            raise unsupported(inst, f"state space .{space}")
        if fn == "xlate":
            window = self.known_window(base)
            if window is not None:
                return self.checked_in_window(window, value, size, inst)
        p = self.tmp()
        self.emit(f"{p} = call ptr @{fn}(ptr %ctx, ptr %ti, ptr %lbase, i64 {value}, i64 {size}, i32 {inst.line})")
        bad = self.tmp(); self.emit(f"{bad} = icmp eq ptr {p}, null")
        ok = self.label("ok")
        self.emit(f"br i1 {bad}, label %fault, label %{ok}")
        self.block(ok)
        return p


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

    def checked_in_window(self, window, value: str, size: int, inst) -> str:
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
        slow = self.tmp()
        self.emit(f"{slow} = call ptr @xlate(ptr %ctx, ptr %ti, ptr %lbase, i64 {value}, i64 {size}, i32 {inst.line})")
        null = self.tmp(); self.emit(f"{null} = icmp eq ptr {slow}, null")
        join = self.label("xj")
        self.emit(f"br i1 {null}, label %fault, label %{join}")
        self.block(good)
        self.emit(f"br label %{join}")
        self.block(join)
        r = self.tmp(); self.emit(f"{r} = phi ptr [{p}, %{good}], [{slow}, %{bad}]")
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
            from .block_check import trusted_sites
            self.trusted = trusted_sites(self)
        for name in self.f.labels:
            self.labels[name] = f"L{len(self.labels)}"
        self.block("start")
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
        self.emit("ret i32 0")
        self.block("fault")
        self.emit(f"ret i32 {ST_ERR}")
        self.block("stack_overflow")
        self.emit(f"call void @record_error(ptr %ctx, ptr %ti, i64 {L.ERR_STACK}, i64 %lsp, i32 {self.f.line}, i64 {self.local_size})")
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
        return "\n".join(head + self.lines + tail + ["}"])

    # -- sync points (resumable kernels) -------------------------------------------------------
    def frame_slot(self, index: int) -> str:
        p = self.tmp(); self.emit(f"{p} = getelementptr i32, ptr %frame, i64 {index}")
        return p

    def sync_point(self, status: int, fields: dict) -> str:
        """Spill registers, record the header fields, return ``status``; the code after
        continues in a fresh block where execution resumes. Returns that block's name."""
        self.sync_points += 1
        k = self.sync_points
        for index, value in fields.items():
            p = self.frame_slot(index)
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
        return after

    def exchange_ptr(self, lane_expr: str = None) -> str:
        """Pointer to this thread's (or lane ``lane_expr``'s of this warp) exchange slot."""
        base = self.ctx_ptr("exchange")
        ltid = self.ti(6)
        if lane_expr is None:
            idx = ltid
        else:
            wb = self.tmp(); self.emit(f"{wb} = and i32 {ltid}, -32")
            idx = self.tmp(); self.emit(f"{idx} = add i32 {wb}, {lane_expr}")
        i64 = self.conv(idx, "i32", "i64")
        off = self.tmp(); self.emit(f"{off} = mul i64 {i64}, 4")
        p = self.tmp(); self.emit(f"{p} = getelementptr i64, ptr {base}, i64 {off}")
        return p

    # -- instructions --------------------------------------------------------------------------
    def instruction(self, inst: ir.Instruction):
        op = inst.opcode
        if op == "bra" and inst.guard is not None:
            g = self.read(inst.guard, "i1", inst)
            fall = self.label("fall")
            self.emit(f"br i1 {g}, label %{self.target(inst)}, label %{fall}")
            self.block(fall)
            return
        skip = None
        if inst.guard is not None:
            g = self.read(inst.guard, "i1", inst)
            do, skip = self.label("do"), self.label("skip")
            self.emit(f"br i1 {g}, label %{do}, label %{skip}")
            self.block(do)
        handler = getattr(self, "op_" + op, None)
        if handler is None:
            raise unsupported(inst)
        handler(inst)
        if skip is not None:
            self.emit(f"br label %{skip}")
            self.block(skip)

    def target(self, inst) -> str:
        name = inst.operands[0].name
        if name not in self.labels:
            raise unsupported(inst, f"branch to unknown label {name}")
        return self.labels[name]

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

    # control --------------------------------------------------------------------------------
    def op_bra(self, inst):
        self.emit(f"br label %{self.target(inst)}")
        self.block(self.label("dead"))

    def op_ret(self, inst):
        self.emit("ret i32 0")
        self.block(self.label("dead"))

    op_exit = op_ret

    def op_trap(self, inst):
        self.emit(f"call void @record_error(ptr %ctx, ptr %ti, i64 {L.ERR_TRAP}, i64 0, i32 {inst.line}, i64 0)")
        self.emit(f"ret i32 {ST_ERR}")
        self.block(self.label("dead"))

    op_brkpt = op_trap

    def op_brx(self, inst):
        table = next((s for s in self.f.statements() if isinstance(s, ir.TargetTable)
                      and s.name == inst.operands[1].name), None)
        if table is None:
            raise unsupported(inst, "brx.idx without a .branchtargets table")
        idx = self.read(inst.operands[0], "i32", inst)
        cases = " ".join(f"i32 {i}, label %{self.labels[t]}" for i, t in enumerate(table.targets))
        self.emit(f"switch i32 {idx}, label %fault [{cases}]")
        self.block(self.label("dead"))

    def op_call(self, inst):
        ops = list(inst.operands)
        rets = []
        if ops and isinstance(ops[0], ir.ParamList):
            rets = list(ops.pop(0).items)
        callee = ops.pop(0)
        args = list(ops.pop(0).items) if ops and isinstance(ops[0], ir.ParamList) else []
        if not isinstance(callee, ir.Sym):
            return self.indirect_call(inst, callee, rets, args)
        name = callee.name
        if name == "vprintf":
            self.printf(inst, args)
            if rets:
                p = self.param_vars[rets[0].name][0]
                self.emit(f"store i32 0, ptr {p}")
            return
        if name == "__assertfail":
            return self.assert_fail(inst, args)
        target = self.mod.module.function(name)
        if target.body is None:
            raise unsupported(inst, f"call to {name}, which has no body in this module")
        ptrs = []
        for r in rets + args:
            if isinstance(r, ir.Sym) and r.name in self.param_vars:
                ptrs.append(f"ptr {self.param_vars[r.name][0]}")
            elif isinstance(r, ir.Reg) and r.name in self.regs:
                ptrs.append(f"ptr {self.reg_ptr(r.name)}")
            else:
                raise unsupported(inst, f"call argument {r}")
        callee_lsp = self.tmp()
        self.emit(f"{callee_lsp} = add i64 %lsp, {(self.local_size + 15) // 16 * 16}")
        st = self.tmp()
        self.emit(f'{st} = call i32 @"f.{name}"(ptr %ctx, ptr %ti, ptr %lbase, i64 {callee_lsp}'
                  + "".join(", " + p for p in ptrs) + ")")
        bad = self.tmp(); self.emit(f"{bad} = icmp ne i32 {st}, 0")
        ok = self.label("ok")
        self.emit(f"br i1 {bad}, label %fault, label %{ok}")
        self.block(ok)

    def call_ptrs(self, inst, items) -> list:
        ptrs = []
        for r in items:
            if isinstance(r, ir.Sym) and r.name in self.param_vars:
                ptrs.append(f"ptr {self.param_vars[r.name][0]}")
            elif isinstance(r, ir.Reg) and r.name in self.regs:
                ptrs.append(f"ptr {self.reg_ptr(r.name)}")
            else:
                raise unsupported(inst, f"call argument {r}")
        return ptrs

    def indirect_call(self, inst, callee, rets, args):
        """``call (r), %rd, (a), proto``: the register holds a function id (``mov.u64 %rd,
        f`` gives FUNCTION_ID_BASE + index); dispatch over the defined functions with as
        many parameters and returns; any other value faults."""
        target_id = self.read(callee, "i64", inst)
        candidates = [(i, f) for i, f in enumerate(self.mod.module.functions)
                      if f.body is not None and not f.is_kernel
                      and len(f.params) == len(args) and len(f.returns) == len(rets)]
        ptrs = self.call_ptrs(inst, rets + args)
        done = self.label("icall_done")
        cases = []
        blocks = []
        for i, f in candidates:
            lbl = self.label("icall")
            cases.append(f"i64 {FUNCTION_ID_BASE + i}, label %{lbl}")
            blocks.append((lbl, f))
        self.emit(f"switch i64 {target_id}, label %fault [{' '.join(cases)}]")
        for lbl, f in blocks:
            self.block(lbl)
            if f.name not in {g.name for g in self.mod.functions}:
                raise unsupported(inst, f"indirect call target {f.name} is not reachable")
            lsp = self.tmp(); self.emit(f"{lsp} = add i64 %lsp, {(self.local_size + 15) // 16 * 16}")
            st = self.tmp()
            self.emit(f'{st} = call i32 @"f.{f.name}"(ptr %ctx, ptr %ti, ptr %lbase, i64 {lsp}'
                      + "".join(", " + p for p in ptrs) + ")")
            bad = self.tmp(); self.emit(f"{bad} = icmp ne i32 {st}, 0")
            self.emit(f"br i1 {bad}, label %fault, label %{done}")
        self.block(done)

    def assert_fail(self, inst, args):
        """__assertfail(message, file, line, function, char size), what assert() calls when
        its condition is false: the thread stops like at a trap, and the launch raises an
        error quoting the message, file, line and function (read back on the host)."""
        if len(args) != 5:
            raise unsupported(inst, "__assertfail takes message, file, line, function, size")
        vals = []
        for a, ty in zip(args[:4], ("i64", "i64", "i32", "i64")):
            p = self.param_vars.get(a.name)
            if p is None:
                raise unsupported(inst, f"__assertfail argument {a}")
            v = self.tmp(); self.emit(f"{v} = load {ty}, ptr {p[0]}")
            vals.append(v)
        cline = self.conv(vals[2], "i32", "i64")
        self.emit(f"call void @record_assert(ptr %ctx, ptr %ti, i64 {vals[0]}, i64 {vals[1]}, "
                  f"i64 {cline}, i64 {vals[3]}, i32 {inst.line})")
        self.emit(f"ret i32 {ST_ERR}")
        self.block(self.label("dead"))

    def printf(self, inst, args):
        if len(args) != 2:
            raise unsupported(inst, "vprintf takes a format and an argument buffer")
        vals = []
        for a in args:
            p = self.param_vars.get(a.name)
            if p is None:
                raise unsupported(inst, f"vprintf argument {a}")
            v = self.tmp(); self.emit(f"{v} = load i64, ptr {p[0]}")
            vals.append(v)
        self.emit(f"call void @record_printf(ptr %ctx, ptr %ti, ptr %lbase, i64 {vals[0]}, i64 {vals[1]})")

    # moves ----------------------------------------------------------------------------------
    def op_mov(self, inst):
        d, s = inst.operands[0], inst.operands[1]
        ty = self.lt(inst)
        if self._vector(inst) > 1:   # mov.v4: element by element (vector registers)
            for dst, src in zip(self.vector_items(d), self.vector_items(s)):
                if dst is not None:
                    self.write(dst, self.read(src, ty, inst), ty, inst)
            return
        if isinstance(d, ir.Vec):  # unpack: mov.b64 {lo, hi}, x
            v = self.read(s, ty, inst)
            width = BITS[ty] // len(d.items)
            ety = f"i{width}"
            for i, item in enumerate(d.items):
                if item is None:
                    continue
                sh = self.tmp(); self.emit(f"{sh} = lshr {ty} {v}, {i * width}")
                self.write(item, self.conv(sh, ty, ety), ety, inst)
            return
        if isinstance(s, ir.Vec):  # pack
            width = BITS[ty] // len(s.items)
            ety = f"i{width}"
            acc = "0"
            for i, item in enumerate(s.items):
                e = self.read(item, ety, inst)
                z = self.conv(e, ety, ty)
                sh = self.tmp(); self.emit(f"{sh} = shl {ty} {z}, {i * width}")
                o = self.tmp(); self.emit(f"{o} = or {ty} {acc}, {sh}")
                acc = o
            self.write(d, acc, ty, inst)
            return
        self.write(d, self.read(s, ty, inst), ty, inst)

    def op_cvta(self, inst):
        to = "to" in inst.modifiers
        space = next(m for m in inst.modifiers if m in ("global", "shared", "local", "const", "param"))
        ty = self.lt(inst)
        v = self.conv(self.read(inst.operands[1], ty, inst), ty, "i64")
        window = {"shared": L.SHARED_WINDOW, "local": L.LOCAL_WINDOW}.get(space)
        if window is None:
            r = v  # global/const addresses are generic addresses
        elif to:
            r = self.tmp(); self.emit(f"{r} = and i64 {v}, {L.OFFSET_MASK}")
            if space == "local":
                r2 = self.tmp(); self.emit(f"{r2} = sub i64 {r}, {self.local_base_offset()}"); r = r2
        else:
            if space == "local":
                v2 = self.tmp(); self.emit(f"{v2} = add i64 {v}, {self.local_base_offset()}"); v = v2
            r = self.tmp(); self.emit(f"{r} = or i64 {v}, {L.buffer_address(window)}")
        self.write(inst.operands[0], self.conv(r, "i64", ty), ty, inst)

    def op_isspacep(self, inst):
        space = inst.modifiers[0]
        v = self.read(inst.operands[1], "i64", inst)
        w = self.tmp(); self.emit(f"{w} = lshr i64 {v}, {L.WINDOW_SHIFT}")
        r = self.tmp()
        if space == "shared":
            self.emit(f"{r} = icmp eq i64 {w}, {L.SHARED_WINDOW}")
        elif space == "local":
            self.emit(f"{r} = icmp eq i64 {w}, {L.LOCAL_WINDOW}")
        elif space in ("global", "const"):
            self.emit(f"{r} = icmp uge i64 {w}, {L.FIRST_BUFFER}")
        else:
            raise unsupported(inst)
        self.write(inst.operands[0], r, "i1", inst)

    def op_prefetch(self, inst):
        pass

    op_prefetchu = op_prefetch
    # sm_90 programmatic dependent launch: launches run in stream order here, so the previous
    # grid has finished before this one starts and there is nothing to wait for or signal
    op_griddepcontrol = op_prefetch
    op_nanosleep = op_prefetch
    op_pmevent = op_prefetch

    def op_cp(self, inst):
        """cp.async (sm_80): the copy from global to shared memory happens at once, so the
        groups are complete when they are committed and the waits have nothing to wait for.
        A src-size below cp-size (or a true ignore-src predicate) reads only that many bytes
        and zero-fills the rest, as the ISA says; Triton masks its loads this way."""
        mods = inst.modifiers
        if "async" not in mods or "bulk" in mods or "mbarrier" in mods:
            raise unsupported(inst)
        if {"commit_group", "wait_group", "wait_all"} & set(mods):
            return
        if not any(m.split("::")[0] == "shared" for m in mods) or "global" not in mods:
            raise unsupported(inst, "cp.async copies from .global to .shared")
        ops = list(inst.operands)
        if len(ops) < 3 or not isinstance(ops[2], ir.Imm) or ops[2].value not in (4, 8, 16):
            raise unsupported(inst, "cp-size must be 4, 8 or 16")
        size = ops[2].value
        rest = ops[3:]
        if any(m.startswith("L2::cache_hint") for m in mods):
            rest = rest[:-1]                     # the cache policy operand
        ty = f"i{8 * size}"
        dst = self.address(ops[0], "shared", size, inst)

        def copy_all():
            src = self.address(ops[1], "global", size, inst)
            v = self.tmp(); self.emit(f"{v} = load {ty}, ptr {src}, align 1")
            self.emit(f"store {ty} {v}, ptr {dst}, align 1")

        if not rest:
            return copy_all()
        extra = rest[0]
        if isinstance(extra, ir.Reg) and self.regs.get(extra.name) == "i1":
            ignore = self.read(extra, "i1", inst)
            n = self.tmp(); self.emit(f"{n} = select i1 {ignore}, i32 0, i32 {size}")
        else:
            n = self.read(extra, "i32", inst)
        full, part, join = self.label("cpfull"), self.label("cppart"), self.label("cpjoin")
        whole = self.tmp(); self.emit(f"{whole} = icmp uge i32 {n}, {size}")
        self.emit(f"br i1 {whole}, label %{full}, label %{part}")
        self.block(full)
        copy_all()
        self.emit(f"br label %{join}")
        self.block(part)
        self.emit(f"store {ty} 0, ptr {dst}, align 1")
        addr = ops[1]
        for k in range(size - 1):               # bytes below src-size only: the rest may be unmapped
            more, nxt = self.label("cpbyte"), self.label("cpnext")
            c = self.tmp(); self.emit(f"{c} = icmp ult i32 {k}, {n}")
            self.emit(f"br i1 {c}, label %{more}, label %{join}")
            self.block(more)
            b = self.address(ir.Addr(addr.base, addr.offset + k), "global", 1, inst)
            x = self.tmp(); self.emit(f"{x} = load i8, ptr {b}, align 1")
            d = self.tmp(); self.emit(f"{d} = getelementptr i8, ptr {dst}, i64 {k}")
            self.emit(f"store i8 {x}, ptr {d}, align 1")
            self.emit(f"br label %{nxt}")
            self.block(nxt)
        self.emit(f"br label %{join}")
        self.block(join)

    def op_membar(self, inst):
        self.emit("fence seq_cst")

    op_fence = op_membar

    # loads and stores -----------------------------------------------------------------------
    def _vector(self, inst) -> int:
        for m in inst.modifiers:
            if m in ("v2", "v4", "v8"):
                return int(m[1:])
        return 1

    def op_ld(self, inst):
        ty_name = self.itype(inst)
        ty = self.lt(inst)
        size = ir.type_size(ty_name) if ty_name != "pred" else 1
        n = self._vector(inst)
        space = self.space_of(inst)
        dst = inst.operands[0]
        p = self.address(inst.operands[1], space, size * n, inst)
        items = self.vector_items(dst)
        signed = ty_name.startswith("s")
        vol = " volatile" if "volatile" in inst.modifiers or "acquire" in inst.modifiers else ""
        for i, item in enumerate(items):
            q = p
            if i:
                q = self.tmp(); self.emit(f"{q} = getelementptr i8, ptr {p}, i64 {i * size}")
            # kernel parameters and .const data do not change during a launch
            inv = ", !invariant.load !0" if space == "const" or self.is_kernel_param(inst.operands[1]) else ""
            v = self.tmp(); self.emit(f"{v} = load{vol} {ty}, ptr {q}, align 1{inv}")
            if item is not None:
                self.write(item, v, ty, inst, signed=signed)

    op_ldu = op_ld

    def is_kernel_param(self, addr) -> bool:
        return (isinstance(addr, ir.Addr) and isinstance(addr.base, ir.Sym)
                and self.params.get(addr.base.name, ("",))[0] == "kernel")

    def op_st(self, inst):
        ty_name = self.itype(inst)
        ty = self.lt(inst)
        size = ir.type_size(ty_name)
        n = self._vector(inst)
        space = self.space_of(inst)
        src = inst.operands[1]
        p = self.address(inst.operands[0], space, size * n, inst)
        items = self.vector_items(src)
        vol = " volatile" if "volatile" in inst.modifiers or "release" in inst.modifiers else ""
        for i, item in enumerate(items):
            v = self.read(item, ty, inst)
            q = p
            if i:
                q = self.tmp(); self.emit(f"{q} = getelementptr i8, ptr {p}, i64 {i * size}")
            self.emit(f"store{vol} {ty} {v}, ptr {q}, align 1")

    # arithmetic helpers -----------------------------------------------------------------------
    FLOAT_TYPES = ("f32", "f64")
    HALF_TYPES = ("f16", "bf16", "f16x2", "bf16x2")

    def ftz(self, inst, v: str, ty: str) -> str:
        """Flush a subnormal f32 to a zero of the same sign (.ftz)."""
        if ty != "float" or "ftz" not in inst.modifiers:
            return v
        a = self.tmp(); self.emit(f"{a} = call float @llvm.fabs.f32(float {v})")
        small = self.tmp(); self.emit(f"{small} = fcmp olt float {a}, 0x3810000000000000")
        z = self.tmp(); self.emit(f"{z} = call float @llvm.copysign.f32(float 0.0, float {v})")
        r = self.tmp(); self.emit(f"{r} = select i1 {small}, float {z}, float {v}")
        return r

    def sat(self, inst, v: str, ty: str) -> str:
        """.sat on floats: clamp to [0, 1], NaN -> 0."""
        if "sat" not in inst.modifiers or ty not in ("float", "double"):
            return v
        sfx = "f32" if ty == "float" else "f64"
        a = self.tmp(); self.emit(f"{a} = call {ty} @llvm.maxnum.{sfx}({ty} {v}, {ty} 0.0)")
        b = self.tmp(); self.emit(f"{b} = call {ty} @llvm.minnum.{sfx}({ty} {a}, {ty} 1.0)")
        nan = self.tmp(); self.emit(f"{nan} = fcmp uno {ty} {v}, 0.0")
        r = self.tmp(); self.emit(f"{r} = select i1 {nan}, {ty} 0.0, {ty} {b}")
        return r

    @staticmethod
    def directed_mode(inst):
        return next((m for m in ("rz", "rm", "rp") if m in inst.modifiers), None)

    def rounded(self, inst, op: str, llop: str, arity: int):
        """A float operation honouring .rn (default) and .rz/.rm/.rp exactly."""
        mode = self.directed_mode(inst)

        def compute(args, ty):
            if mode is None or self.itype(inst) not in self.FLOAT_TYPES:
                if op == "fma":
                    return self.fcall("fma", args, ty)
                if op == "sqrt":
                    return self.fcall("sqrt", args, ty)
                r = self.tmp(); self.emit(f"{r} = {llop} {ty} {', '.join(args)}"); return r
            name = self.mod.directed_helper(op, mode, ty, [ty] * arity)
            r = self.tmp()
            self.emit(f'{r} = call {ty} @"{name}"(' + ", ".join(f"{ty} {a}" for a in args) + ")")
            return r
        self.float_op(inst, compute)

    def float_op(self, inst, compute):
        """Apply ``compute(args, llty) -> value`` to float operands, with .ftz/.sat and the
        f16/bf16 (and packed x2) forms computed in f32 and rounded back."""
        t = self.itype(inst)
        srcs = inst.operands[1:]
        if t in self.FLOAT_TYPES:
            ty = LLTY[t]
            args = [self.ftz(inst, self.read(s, ty, inst), ty) for s in srcs]
            r = self.sat(inst, self.ftz(inst, compute(args, ty), ty), ty)
            self.write(inst.operands[0], r, ty, inst)
            return
        if t in self.HALF_TYPES:
            # Half precision computed in f64, where products and sums of halves are exact
            # (or nearly), then rounded once to the 16-bit format.
            half = "half" if t.startswith("f16") else "bfloat"
            lanes = 2 if t.endswith("x2") else 1
            storage = "i32" if lanes == 2 else "i16"
            raw = [self.read(s, storage, inst) for s in srcs]
            acc = "0"
            for lane in range(lanes):
                args = []
                for v in raw:
                    sh = self.tmp(); self.emit(f"{sh} = lshr {storage} {v}, {16 * lane}")
                    h16 = self.conv(sh, storage, "i16")
                    # through f32: half <-> double conversions are libcalls that the JIT
                    # would have to resolve; half -> float is one instruction (F16C), and
                    # bf16 -> float a shift (exact, subnormals kept)
                    f32 = self.half_to_float(self.ftz16(inst, h16, half), half)
                    f = self.tmp(); self.emit(f"{f} = fpext float {f32} to double")
                    args.append(f)
                r = self.sat(inst, compute(args, "double"), "double")
                bits = self.to_half_bits(inst, r, "double", half)
                wide = self.conv(bits, "i16", storage)
                sh = self.tmp(); self.emit(f"{sh} = shl {storage} {wide}, {16 * lane}")
                o = self.tmp(); self.emit(f"{o} = or {storage} {acc}, {sh}")
                acc = o
            self.write(inst.operands[0], acc, storage, inst)
            return
        raise unsupported(inst, f"type .{t}")

    def half_to_float(self, bits16: str, half: str) -> str:
        if half == "bfloat":
            w = self.tmp(); self.emit(f"{w} = zext i16 {bits16} to i32")
            sh = self.tmp(); self.emit(f"{sh} = shl i32 {w}, 16")
            f = self.tmp(); self.emit(f"{f} = bitcast i32 {sh} to float")
            return f
        h = self.tmp(); self.emit(f"{h} = bitcast i16 {bits16} to half")
        f = self.tmp(); self.emit(f"{f} = fpext half {h} to float")
        return f

    def half_sign_op(self, inst, op: str) -> bool:
        """neg/abs of f16/bf16 (and x2) only touch sign bits: NaNs and subnormals unchanged."""
        t = self.itype(inst)
        if t not in self.HALF_TYPES:
            return False
        storage = "i32" if t.endswith("x2") else "i16"
        sign = 0x80008000 if storage == "i32" else 0x8000
        v = self.read(inst.operands[1], storage, inst)
        r = self.tmp()
        if op == "neg":
            self.emit(f"{r} = xor {storage} {v}, {sign - (1 << 32) if storage == 'i32' else sign - (1 << 16)}")
        else:
            mask = (~sign) & (0xFFFFFFFF if storage == "i32" else 0xFFFF)
            self.emit(f"{r} = and {storage} {v}, {mask}")
        self.write(inst.operands[0], r, storage, inst)
        return True

    def bf16_directed(self, v: str, mode: str) -> str:
        """f32 -> bf16 bits rounded toward zero (.rz), -inf (.rm) or +inf (.rp): bf16 is the
        top half of an f32, so drop the low half and step the magnitude up by one unit when
        the rounding direction is away from zero and something was dropped."""
        bits = self.tmp(); self.emit(f"{bits} = bitcast float {v} to i32")
        top = self.tmp(); self.emit(f"{top} = and i32 {bits}, -65536")
        low = self.tmp(); self.emit(f"{low} = and i32 {bits}, 65535")
        inexact = self.tmp(); self.emit(f"{inexact} = icmp ne i32 {low}, 0")
        negative = self.tmp(); self.emit(f"{negative} = icmp slt i32 {bits}, 0")
        if mode == "rz":
            r = top
        else:
            away = negative if mode == "rm" else self.op_not_i1(negative)
            up = self.tmp(); self.emit(f"{up} = and i1 {inexact}, {away}")
            step = self.tmp(); self.emit(f"{step} = select i1 {up}, i32 65536, i32 0")
            r = self.tmp(); self.emit(f"{r} = add i32 {top}, {step}")
        hi = self.tmp(); self.emit(f"{hi} = lshr i32 {r}, 16")
        h16 = self.conv(hi, "i32", "i16")
        nan = self.tmp(); self.emit(f"{nan} = fcmp uno float {v}, 0.0")
        out = self.tmp(); self.emit(f"{out} = select i1 {nan}, i16 32767, i16 {h16}")
        return out

    def op_not_i1(self, v: str) -> str:
        t = self.tmp(); self.emit(f"{t} = xor i1 {v}, true"); return t

    def to_half_bits(self, inst, v: str, ty: str, half: str, mode=None) -> str:
        """Round a float/double to f16 or bf16 bits (nearest even, once, or the directed
        ``mode``), with .relu and .ftz."""
        if mode is not None:
            if ty == "double":
                # the same directed rounding twice equals doing it once
                name = self.mod.directed_helper("fptrunc", mode, "float", ["double"])
                f = self.tmp(); self.emit(f'{f} = call float @"{name}"(double {v})')
                v, ty = f, "float"
            if half != "half":
                return self.ftz16(inst, self.bf16_directed(v, mode), half)
            name = self.mod.directed_helper("fptrunc", mode, "half", ["float"])
            h = self.tmp(); self.emit(f'{h} = call half @"{name}"(float {v})')
            b = self.tmp(); self.emit(f"{b} = bitcast half {h} to i16")
            return self.ftz16(inst, b, half)
        if "relu" in inst.modifiers:
            neg = self.tmp(); self.emit(f"{neg} = fcmp olt {ty} {v}, 0.0")
            z = self.tmp(); self.emit(f"{z} = select i1 {neg}, {ty} 0.0, {ty} {v}")
            v = z
        nan = self.tmp(); self.emit(f"{nan} = fcmp uno {ty} {v}, 0.0")
        f = v
        if ty == "double":
            # round to odd into f32 (toward zero, sticky bit set when inexact), so that the
            # final rounding to 16 bits is the only one
            name = self.mod.directed_helper("fptrunc", "rz", "float", ["double"])
            fz = self.tmp(); self.emit(f'{fz} = call float @"{name}"(double {v})')
            back = self.tmp(); self.emit(f"{back} = fpext float {fz} to double")
            inexact = self.tmp(); self.emit(f"{inexact} = fcmp one double {back}, {v}")
            fb = self.tmp(); self.emit(f"{fb} = bitcast float {fz} to i32")
            sticky = self.tmp(); self.emit(f"{sticky} = zext i1 {inexact} to i32")
            odd = self.tmp(); self.emit(f"{odd} = or i32 {fb}, {sticky}")
            f = self.tmp(); self.emit(f"{f} = bitcast i32 {odd} to float")
        if half == "half":
            h = self.tmp(); self.emit(f"{h} = fptrunc float {f} to half")
            b = self.tmp(); self.emit(f"{b} = bitcast half {h} to i16")
        else:
            b = self.tmp(); self.emit(f"{b} = call i16 @f32_to_bf16(float {f})")
        out = self.tmp(); self.emit(f"{out} = select i1 {nan}, i16 32767, i16 {b}")
        return self.ftz16(inst, out, half)

    def ftz16(self, inst, bits: str, half: str) -> str:
        """.ftz on f16: a subnormal becomes a zero of the same sign (bf16 has no .ftz)."""
        if "ftz" not in inst.modifiers or half != "half":
            return bits
        e = self.tmp(); self.emit(f"{e} = and i16 {bits}, 31744")
        sub = self.tmp(); self.emit(f"{sub} = icmp eq i16 {e}, 0")
        z = self.tmp(); self.emit(f"{z} = and i16 {bits}, -32768")
        r = self.tmp(); self.emit(f"{r} = select i1 {sub}, i16 {z}, i16 {bits}")
        return r

    def is_float(self, inst) -> bool:
        return any(t in self.FLOAT_TYPES or t in self.HALF_TYPES for t in inst.types)

    def int_binary(self, inst, op: str):
        ty = self.lt(inst)
        a = self.read(inst.operands[1], ty, inst)
        b = self.read(inst.operands[2], ty, inst)
        r = self.tmp(); self.emit(f"{r} = {op} {ty} {a}, {b}")
        self.write(inst.operands[0], r, ty, inst)

    def fcall(self, name: str, args, ty: str) -> str:
        sfx = "f32" if ty == "float" else "f64"
        r = self.tmp()
        self.emit(f"{r} = call {ty} @llvm.{name}.{sfx}(" + ", ".join(f"{ty} {a}" for a in args) + ")")
        return r

    PACKED16 = ("u16x2", "s16x2")

    def packed16(self, inst, op: str, signed: bool = False):
        """sm_90 SIMD on the two half-words of .b32 registers: add/sub wrap in each half-word,
        min/max compare them (signed for .s16x2), .relu clamps a negative result to 0."""
        a = self.read(inst.operands[1], "i32", inst)
        b = self.read(inst.operands[2], "i32", inst)
        va = self.tmp(); self.emit(f"{va} = bitcast i32 {a} to <2 x i16>")
        vb = self.tmp(); self.emit(f"{vb} = bitcast i32 {b} to <2 x i16>")
        r = self.tmp()
        if op in ("add", "sub"):
            self.emit(f"{r} = {op} <2 x i16> {va}, {vb}")
        else:
            fn = ("s" if signed else "u") + op
            self.emit(f"{r} = call <2 x i16> @llvm.{fn}.v2i16(<2 x i16> {va}, <2 x i16> {vb})")
            if "relu" in inst.modifiers:
                z = self.tmp()
                self.emit(f"{z} = call <2 x i16> @llvm.smax.v2i16(<2 x i16> {r}, <2 x i16> zeroinitializer)")
                r = z
        out = self.tmp(); self.emit(f"{out} = bitcast <2 x i16> {r} to i32")
        self.write(inst.operands[0], out, "i32", inst)

    def add_or_sub(self, inst, op: str):
        """add/sub: float (rounding modes), carry chains, .sat on s32, or wrapping ints."""
        if any(m in self.PACKED16 for m in inst.modifiers) and len(inst.modifiers) == 1:
            return self.packed16(inst, op)
        if self.is_float(inst):
            return self.rounded(inst, "f" + op, "f" + op, 2)
        if "cc" in inst.modifiers:
            return self.carry_op(inst, op)
        if "sat" in inst.modifiers:
            return self.sat_int(inst, "s" + op)
        self.int_binary(inst, op)

    def op_add(self, inst):
        self.add_or_sub(inst, "add")

    def op_sub(self, inst):
        self.add_or_sub(inst, "sub")

    def op_addc(self, inst):
        self.carry_op(inst, "add")

    def op_subc(self, inst):
        self.carry_op(inst, "sub")

    def sat_int(self, inst, op):
        ty = self.lt(inst)
        a = self.read(inst.operands[1], ty, inst)
        b = self.read(inst.operands[2], ty, inst)
        r = self.tmp(); self.emit(f"{r} = call {ty} @llvm.{op}.sat.{ty}({ty} {a}, {ty} {b})")
        self.write(inst.operands[0], r, ty, inst)

    def carry_op(self, inst, op):
        """add.cc/addc/sub.cc/subc: the carry (borrow) flag lives in %cc."""
        ty = self.lt(inst)
        wide = "i64" if ty == "i32" else "i128"
        a = self.conv(self.read(inst.operands[1], ty, inst), ty, wide)
        b = self.conv(self.read(inst.operands[2], ty, inst), ty, wide)
        r = self.tmp(); self.emit(f"{r} = {op} {wide} {a}, {b}")
        if inst.opcode in ("addc", "subc"):
            c = self.tmp(); self.emit(f"{c} = load i32, ptr %cc")
            cw = self.conv(c, "i32", wide)
            r2 = self.tmp(); self.emit(f"{r2} = {op} {wide} {r}, {cw}")
            r = r2
        if "cc" in inst.modifiers:
            hi = self.tmp(); self.emit(f"{hi} = lshr {wide} {r}, {BITS[ty]}")
            bit = self.tmp(); self.emit(f"{bit} = and {wide} {hi}, 1")
            self.emit(f"store i32 {self.conv(bit, wide, 'i32')}, ptr %cc")
        self.write(inst.operands[0], self.conv(r, wide, ty), ty, inst)

    def widen_mul(self, inst, a, b, ty, signed):
        wide = {"i16": "i32", "i32": "i64", "i64": "i128"}[ty]
        ext = "sext" if signed else "zext"
        aw = self.tmp(); self.emit(f"{aw} = {ext} {ty} {a} to {wide}")
        bw = self.tmp(); self.emit(f"{bw} = {ext} {ty} {b} to {wide}")
        p = self.tmp(); self.emit(f"{p} = mul {wide} {aw}, {bw}")
        return p, wide

    def op_mul(self, inst):
        if self.is_float(inst):
            return self.rounded(inst, "fmul", "fmul", 2)
        t = self.itype(inst)
        ty = self.lt(inst)
        signed = t.startswith("s")
        a = self.read(inst.operands[1], ty, inst)
        b = self.read(inst.operands[2], ty, inst)
        if "wide" in inst.modifiers:
            p, wide = self.widen_mul(inst, a, b, ty, signed)
            self.write(inst.operands[0], p, wide, inst)
        elif "hi" in inst.modifiers:
            p, wide = self.widen_mul(inst, a, b, ty, signed)
            h = self.tmp(); self.emit(f"{h} = lshr {wide} {p}, {BITS[ty]}")
            self.write(inst.operands[0], self.conv(h, wide, ty), ty, inst)
        else:
            r = self.tmp(); self.emit(f"{r} = mul {ty} {a}, {b}")
            self.write(inst.operands[0], r, ty, inst)

    def op_mad(self, inst):
        if self.is_float(inst):
            return self.rounded(inst, "fma", "", 3)
        if "cc" in inst.modifiers:
            return self.mad_carry(inst)
        t = self.itype(inst)
        ty = self.lt(inst)
        signed = t.startswith("s")
        a = self.read(inst.operands[1], ty, inst)
        b = self.read(inst.operands[2], ty, inst)
        if "wide" in inst.modifiers or "hi" in inst.modifiers:
            p, wide = self.widen_mul(inst, a, b, ty, signed)
            if "hi" in inst.modifiers:
                h = self.tmp(); self.emit(f"{h} = lshr {wide} {p}, {BITS[ty]}")
                p, wide_out = self.conv(h, wide, ty), ty
            else:
                wide_out = wide
            c = self.read(inst.operands[3], wide_out, inst, signed)
            r = self.tmp(); self.emit(f"{r} = add {wide_out} {p}, {c}")
            self.write(inst.operands[0], r, wide_out, inst)
            return
        c = self.read(inst.operands[3], ty, inst)
        m = self.tmp(); self.emit(f"{m} = mul {ty} {a}, {b}")
        r = self.tmp(); self.emit(f"{r} = add {ty} {m}, {c}")
        self.write(inst.operands[0], r, ty, inst)

    def op_madc(self, inst):
        self.mad_carry(inst)

    def mad_carry(self, inst):
        """mad.cc/madc .lo/.hi: the low or high half of a*b, plus c (plus the carry flag for
        madc), optionally writing the carry out."""
        t = self.itype(inst)
        ty = self.lt(inst)
        signed = t.startswith("s")
        a = self.read(inst.operands[1], ty, inst)
        b = self.read(inst.operands[2], ty, inst)
        p, wide = self.widen_mul(inst, a, b, ty, signed)
        if "hi" in inst.modifiers:
            h = self.tmp(); self.emit(f"{h} = lshr {wide} {p}, {BITS[ty]}")
            part = self.conv(h, wide, ty)
        else:
            part = self.conv(p, wide, ty)
        big = "i64" if ty == "i32" else "i128"
        acc = self.conv(part, ty, big)
        c = self.conv(self.read(inst.operands[3], ty, inst), ty, big)
        r = self.tmp(); self.emit(f"{r} = add {big} {acc}, {c}")
        if inst.opcode == "madc":
            cin = self.conv(self.tmp_load_cc(), "i32", big)
            r2 = self.tmp(); self.emit(f"{r2} = add {big} {r}, {cin}"); r = r2
        if "cc" in inst.modifiers:
            hi = self.tmp(); self.emit(f"{hi} = lshr {big} {r}, {BITS[ty]}")
            bit = self.tmp(); self.emit(f"{bit} = and {big} {hi}, 1")
            self.emit(f"store i32 {self.conv(bit, big, 'i32')}, ptr %cc")
        self.write(inst.operands[0], self.conv(r, big, ty), ty, inst)

    def tmp_load_cc(self) -> str:
        c = self.tmp(); self.emit(f"{c} = load i32, ptr %cc"); return c

    def op_fma(self, inst):
        self.rounded(inst, "fma", "", 3)

    def op_mul24(self, inst):
        ty = "i32"
        signed = self.itype(inst).startswith("s")
        a, b = (self.read(o, ty, inst) for o in inst.operands[1:3])
        a24, b24 = (self.ext24(v, signed) for v in (a, b))
        p, wide = self.widen_mul(inst, a24, b24, ty, signed)
        shift = 16 if "hi" in inst.modifiers else 0
        h = self.tmp(); self.emit(f"{h} = lshr i64 {p}, {shift}")
        r = self.conv(h, "i64", "i32")
        if inst.opcode == "mad24":
            c = self.read(inst.operands[3], ty, inst)
            r2 = self.tmp(); self.emit(f"{r2} = add i32 {r}, {c}"); r = r2
        self.write(inst.operands[0], r, ty, inst)

    op_mad24 = op_mul24

    def ext24(self, v, signed):
        s = self.tmp(); self.emit(f"{s} = shl i32 {v}, 8")
        r = self.tmp(); self.emit(f"{r} = {'ashr' if signed else 'lshr'} i32 {s}, 8")
        return r

    def op_dp4a(self, inst):
        """d = c + sum of the four byte products of a and b (each signed or not by type)."""
        ta, tb = inst.types[0], inst.types[1]
        a, b, c = (self.read(o, "i32", inst) for o in inst.operands[1:4])
        acc = c
        for k in range(4):
            x = self.byte_lane(a, 8 * k, 8, ta.startswith("s"))
            y = self.byte_lane(b, 8 * k, 8, tb.startswith("s"))
            p = self.tmp(); self.emit(f"{p} = mul i32 {x}, {y}")
            n = self.tmp(); self.emit(f"{n} = add i32 {acc}, {p}")
            acc = n
        self.write(inst.operands[0], acc, "i32", inst)

    def op_dp2a(self, inst):
        """d = c + a.h0 * b.byte(i) + a.h1 * b.byte(i+1), i = 0 (.lo) or 2 (.hi)."""
        ta, tb = inst.types[0], inst.types[1]
        a, b, c = (self.read(o, "i32", inst) for o in inst.operands[1:4])
        first = 2 if "hi" in inst.modifiers else 0
        acc = c
        for k in range(2):
            x = self.byte_lane(a, 16 * k, 16, ta.startswith("s"))
            y = self.byte_lane(b, 8 * (first + k), 8, tb.startswith("s"))
            p = self.tmp(); self.emit(f"{p} = mul i32 {x}, {y}")
            n = self.tmp(); self.emit(f"{n} = add i32 {acc}, {p}")
            acc = n
        self.write(inst.operands[0], acc, "i32", inst)

    def byte_lane(self, v, shift, width, signed):
        up = self.tmp(); self.emit(f"{up} = shl i32 {v}, {32 - shift - width}")
        r = self.tmp(); self.emit(f"{r} = {'ashr' if signed else 'lshr'} i32 {up}, {32 - width}")
        return r

    def op_sad(self, inst):
        ty = self.lt(inst)
        signed = self.itype(inst).startswith("s")
        a, b, c = (self.read(o, ty, inst) for o in inst.operands[1:4])
        lt = self.tmp(); self.emit(f"{lt} = icmp {'slt' if signed else 'ult'} {ty} {a}, {b}")
        d1 = self.tmp(); self.emit(f"{d1} = sub {ty} {b}, {a}")
        d2 = self.tmp(); self.emit(f"{d2} = sub {ty} {a}, {b}")
        d = self.tmp(); self.emit(f"{d} = select i1 {lt}, {ty} {d1}, {ty} {d2}")
        r = self.tmp(); self.emit(f"{r} = add {ty} {c}, {d}")
        self.write(inst.operands[0], r, ty, inst)

    def op_div(self, inst):
        if self.is_float(inst):
            # .approx and .full are within their documented ulps of the correctly rounded
            # quotient, which is what this computes
            return self.rounded(inst, "fdiv", "fdiv", 2)
        self.int_divrem(inst, "div")

    def op_rem(self, inst):
        self.int_divrem(inst, "rem")

    def int_divrem(self, inst, kind):
        """Integer division without LLVM's undefined behaviour: x/0 gives all ones (u) or
        -1/+1 by sign as the hardware does for div, x for rem; MIN/-1 wraps."""
        t = self.itype(inst)
        ty = self.lt(inst)
        signed = t.startswith("s")
        a = self.read(inst.operands[1], ty, inst)
        b = self.read(inst.operands[2], ty, inst)
        zero = self.tmp(); self.emit(f"{zero} = icmp eq {ty} {b}, 0")
        safe = self.tmp(); self.emit(f"{safe} = select i1 {zero}, {ty} 1, {ty} {b}")
        if signed:
            m1 = self.tmp(); self.emit(f"{m1} = icmp eq {ty} {safe}, -1")
            safe2 = self.tmp(); self.emit(f"{safe2} = select i1 {m1}, {ty} 1, {ty} {safe}")
            q = self.tmp(); self.emit(f"{q} = {'sdiv' if kind == 'div' else 'srem'} {ty} {a}, {safe2}")
            neg = self.tmp(); self.emit(f"{neg} = sub {ty} 0, {a}")
            fix = neg if kind == "div" else "0"
            r0 = self.tmp(); self.emit(f"{r0} = select i1 {m1}, {ty} {fix}, {ty} {q}")
        else:
            r0 = self.tmp(); self.emit(f"{r0} = {'udiv' if kind == 'div' else 'urem'} {ty} {a}, {safe}")
        dz = "-1" if kind == "div" else a
        r = self.tmp(); self.emit(f"{r} = select i1 {zero}, {ty} {dz}, {ty} {r0}")
        self.write(inst.operands[0], r, ty, inst)

    def op_abs(self, inst):
        if self.half_sign_op(inst, "abs"):
            return
        if self.is_float(inst):
            return self.float_op(inst, lambda a, ty: self.fcall("fabs", a, ty))
        ty = self.lt(inst)
        a = self.read(inst.operands[1], ty, inst)
        r = self.tmp(); self.emit(f"{r} = call {ty} @llvm.abs.{ty}({ty} {a}, i1 false)")
        self.write(inst.operands[0], r, ty, inst)

    def op_neg(self, inst):
        if self.half_sign_op(inst, "neg"):
            return
        if self.is_float(inst):
            def compute(a, ty):
                r = self.tmp(); self.emit(f"{r} = fneg {ty} {a[0]}"); return r
            return self.float_op(inst, compute)
        ty = self.lt(inst)
        a = self.read(inst.operands[1], ty, inst)
        r = self.tmp(); self.emit(f"{r} = sub {ty} 0, {a}")
        self.write(inst.operands[0], r, ty, inst)

    def minmax(self, inst, which):
        packed = [m for m in inst.modifiers if m in self.PACKED16]
        if packed:
            if set(inst.modifiers) - {"relu"} != set(packed) or \
                    ("relu" in inst.modifiers and packed[0] != "s16x2"):
                raise unsupported(inst)
            return self.packed16(inst, which, signed=packed[0] == "s16x2")
        if self.is_float(inst):
            name = ("minimum" if which == "min" else "maximum") if "NaN" in inst.modifiers else \
                ("minnum" if which == "min" else "maxnum")
            mods = inst.modifiers

            def compute(a, ty):
                args = a
                if "abs" in mods:
                    args = [self.fcall("fabs", [x], ty) for x in a]
                r = self.fcall(name, args, ty)
                if "xorsign" in mods:
                    ity = INT_OF[ty]
                    bits = BITS[ty]
                    sa = self.conv(a[0], ty, ity)
                    sb = self.conv(a[1], ty, ity)
                    x = self.tmp(); self.emit(f"{x} = xor {ity} {sa}, {sb}")
                    sgn = self.tmp(); self.emit(f"{sgn} = and {ity} {x}, {-(1 << (bits - 1))}")
                    rb = self.conv(r, ty, ity)
                    mag = self.tmp(); self.emit(f"{mag} = and {ity} {rb}, {(1 << (bits - 1)) - 1}")
                    o = self.tmp(); self.emit(f"{o} = or {ity} {mag}, {sgn}")
                    r = self.conv(o, ity, ty)
                return r
            return self.float_op(inst, compute)
        t = self.itype(inst)
        ty = self.lt(inst)
        pre = "s" if t.startswith("s") else "u"
        a = self.read(inst.operands[1], ty, inst)
        b = self.read(inst.operands[2], ty, inst)
        r = self.tmp(); self.emit(f"{r} = call {ty} @llvm.{pre}{which}.{ty}({ty} {a}, {ty} {b})")
        self.write(inst.operands[0], r, ty, inst)

    def op_min(self, inst):
        self.minmax(inst, "min")

    def op_max(self, inst):
        self.minmax(inst, "max")

    def op_copysign(self, inst):
        # copysign.f32 d, a, b: the magnitude of b with the sign of a
        def compute(args, ty):
            return self.fcall("copysign", [args[1], args[0]], ty)
        self.float_op(inst, compute)

    def op_sqrt(self, inst):
        self.rounded(inst, "sqrt", "", 1)

    def op_rcp(self, inst):
        mode = self.directed_mode(inst)

        def compute(a, ty):
            r = self.tmp()
            if mode and self.itype(inst) in self.FLOAT_TYPES:
                name = self.mod.directed_helper("fdiv", mode, ty, [ty, ty])
                self.emit(f'{r} = call {ty} @"{name}"({ty} 1.0, {ty} {a[0]})')
            else:
                self.emit(f"{r} = fdiv {ty} 1.0, {a[0]}")
            return r
        self.float_op(inst, compute)

    def op_rsqrt(self, inst):
        def compute(a, ty):
            s = self.fcall("sqrt", a, ty)
            r = self.tmp(); self.emit(f"{r} = fdiv {ty} 1.0, {s}"); return r
        self.float_op(inst, compute)

    def op_sin(self, inst):
        self.float_op(inst, lambda a, ty: self.fcall("sin", a, ty))

    def op_cos(self, inst):
        self.float_op(inst, lambda a, ty: self.fcall("cos", a, ty))

    def op_ex2(self, inst):
        self.float_op(inst, lambda a, ty: self.fcall("exp2", a, ty))

    def op_lg2(self, inst):
        self.float_op(inst, lambda a, ty: self.fcall("log2", a, ty))

    def op_tanh(self, inst):
        def compute(a, ty):
            r = self.tmp(); self.emit(f"{r} = call {ty} @tanh_{ty}({ty} {a[0]})"); return r
        self.float_op(inst, compute)

    def op_testp(self, inst):
        t = self.itype(inst)
        ty = LLTY[t]
        v = self.read(inst.operands[1], ty, inst)
        a = self.fcall("fabs", [v], ty)
        inf = "0x7FF0000000000000"
        smallest_normal = "0x3810000000000000" if ty == "float" else "0x0010000000000000"
        r = self.tmp()
        kind = next(m for m in inst.modifiers if m in ("finite", "infinite", "number", "notanumber", "normal", "subnormal"))
        if kind == "finite":
            self.emit(f"{r} = fcmp olt {ty} {a}, {inf}")
        elif kind == "infinite":
            self.emit(f"{r} = fcmp oeq {ty} {a}, {inf}")
        elif kind == "number":
            self.emit(f"{r} = fcmp ord {ty} {v}, 0.0")
        elif kind == "notanumber":
            self.emit(f"{r} = fcmp uno {ty} {v}, 0.0")
        elif kind == "normal":
            c1 = self.tmp(); self.emit(f"{c1} = fcmp oge {ty} {a}, {smallest_normal}")
            c2 = self.tmp(); self.emit(f"{c2} = fcmp olt {ty} {a}, {inf}")
            self.emit(f"{r} = and i1 {c1}, {c2}")
        else:
            c1 = self.tmp(); self.emit(f"{c1} = fcmp olt {ty} {a}, {smallest_normal}")
            c2 = self.tmp(); self.emit(f"{c2} = fcmp one {ty} {a}, 0.0")
            self.emit(f"{r} = and i1 {c1}, {c2}")
        self.write(inst.operands[0], r, "i1", inst)

    # logic and bits -------------------------------------------------------------------------
    def op_and(self, inst):
        self.int_binary(inst, "and")

    def op_or(self, inst):
        self.int_binary(inst, "or")

    def op_xor(self, inst):
        self.int_binary(inst, "xor")

    def op_not(self, inst):
        ty = self.lt(inst)
        a = self.read(inst.operands[1], ty, inst)
        r = self.tmp(); self.emit(f"{r} = xor {ty} {a}, -1" if ty != "i1" else f"{r} = xor i1 {a}, true")
        self.write(inst.operands[0], r, ty, inst)

    def op_cnot(self, inst):
        ty = self.lt(inst)
        a = self.read(inst.operands[1], ty, inst)
        z = self.tmp(); self.emit(f"{z} = icmp eq {ty} {a}, 0")
        self.write(inst.operands[0], self.conv(z, "i1", ty), ty, inst)

    def shift(self, inst, kind):
        """shl/shr: shift amounts >= the width give 0 (or the sign for shr.s), as PTX says;
        LLVM would give poison."""
        t = self.itype(inst)
        ty = self.lt(inst)
        bits = BITS[ty]
        a = self.read(inst.operands[1], ty, inst)
        b32 = self.read(inst.operands[2], "i32", inst)
        big = self.tmp(); self.emit(f"{big} = icmp ugt i32 {b32}, {bits - 1}")
        amount32 = self.tmp(); self.emit(f"{amount32} = select i1 {big}, i32 {bits - 1}, i32 {b32}")
        amount = self.conv(amount32, "i32", ty)
        r = self.tmp()
        if kind == "shl":
            self.emit(f"{r} = shl {ty} {a}, {amount}")
            out = self.tmp(); self.emit(f"{out} = select i1 {big}, {ty} 0, {ty} {r}")
        elif t.startswith("s"):
            self.emit(f"{r} = ashr {ty} {a}, {amount}")
            out = r
        else:
            self.emit(f"{r} = lshr {ty} {a}, {amount}")
            out = self.tmp(); self.emit(f"{out} = select i1 {big}, {ty} 0, {ty} {r}")
        self.write(inst.operands[0], out, ty, inst)

    def op_shl(self, inst):
        self.shift(inst, "shl")

    def op_shr(self, inst):
        self.shift(inst, "shr")

    def op_shf(self, inst):
        """Funnel shift: .l/.r with .wrap (amount mod 32) or .clamp (min(amount, 32))."""
        a = self.read(inst.operands[1], "i32", inst)
        b = self.read(inst.operands[2], "i32", inst)
        c = self.read(inst.operands[3], "i32", inst)
        if "clamp" in inst.modifiers:
            n = self.tmp(); self.emit(f"{n} = call i32 @llvm.umin.i32(i32 {c}, i32 32)")
        else:
            n = self.tmp(); self.emit(f"{n} = and i32 {c}, 31")
        hi = self.tmp(); self.emit(f"{hi} = zext i32 {b} to i64")
        lo = self.tmp(); self.emit(f"{lo} = zext i32 {a} to i64")
        hs = self.tmp(); self.emit(f"{hs} = shl i64 {hi}, 32")
        both = self.tmp(); self.emit(f"{both} = or i64 {hs}, {lo}")
        n64 = self.conv(n, "i32", "i64")
        r = self.tmp()
        if "l" in inst.modifiers:
            s = self.tmp(); self.emit(f"{s} = shl i64 {both}, {n64}")
            self.emit(f"{r} = lshr i64 {s}, 32")
        else:
            self.emit(f"{r} = lshr i64 {both}, {n64}")
        self.write(inst.operands[0], self.conv(r, "i64", "i32"), "i32", inst)

    def op_popc(self, inst):
        ty = self.lt(inst)
        a = self.read(inst.operands[1], ty, inst)
        r = self.tmp(); self.emit(f"{r} = call {ty} @llvm.ctpop.{ty}({ty} {a})")
        self.write(inst.operands[0], self.conv(r, ty, "i32"), "i32", inst)

    def op_clz(self, inst):
        ty = self.lt(inst)
        a = self.read(inst.operands[1], ty, inst)
        r = self.tmp(); self.emit(f"{r} = call {ty} @llvm.ctlz.{ty}({ty} {a}, i1 false)")
        self.write(inst.operands[0], self.conv(r, ty, "i32"), "i32", inst)

    def op_brev(self, inst):
        ty = self.lt(inst)
        a = self.read(inst.operands[1], ty, inst)
        r = self.tmp(); self.emit(f"{r} = call {ty} @llvm.bitreverse.{ty}({ty} {a})")
        self.write(inst.operands[0], r, ty, inst)

    def op_bfind(self, inst):
        """Position of the most significant non-sign bit; 0xffffffff if none."""
        t = self.itype(inst)
        ty = self.lt(inst)
        bits = BITS[ty]
        a = self.read(inst.operands[1], ty, inst)
        if t.startswith("s"):
            neg = self.tmp(); self.emit(f"{neg} = icmp slt {ty} {a}, 0")
            inv = self.tmp(); self.emit(f"{inv} = xor {ty} {a}, -1")
            a2 = self.tmp(); self.emit(f"{a2} = select i1 {neg}, {ty} {inv}, {ty} {a}")
            a = a2
        lz = self.tmp(); self.emit(f"{lz} = call {ty} @llvm.ctlz.{ty}({ty} {a}, i1 false)")
        lz32 = self.conv(lz, ty, "i32")
        pos = self.tmp(); self.emit(f"{pos} = sub i32 {bits - 1}, {lz32}")
        if "shiftamt" in inst.modifiers:
            p2 = self.tmp(); self.emit(f"{p2} = sub i32 {bits - 1}, {pos}"); pos = p2
        none = self.tmp(); self.emit(f"{none} = icmp eq {ty} {a}, 0")
        r = self.tmp(); self.emit(f"{r} = select i1 {none}, i32 -1, i32 {pos}")
        self.write(inst.operands[0], r, "i32", inst)

    def op_bfe(self, inst):
        """Bit field extract; position and length taken from their low 8 bits."""
        t = self.itype(inst)
        ty = self.lt(inst)
        bits = BITS[ty]
        signed = t.startswith("s")
        a = self.read(inst.operands[1], ty, inst)
        pos = self.read(inst.operands[2], "i32", inst)
        ln = self.read(inst.operands[3], "i32", inst)
        p8 = self.tmp(); self.emit(f"{p8} = and i32 {pos}, 255")
        l8 = self.tmp(); self.emit(f"{l8} = and i32 {ln}, 255")
        wide = "i128"
        aw = self.tmp(); self.emit(f"{aw} = {'sext' if signed else 'zext'} {ty} {a} to {wide}")
        pw = self.conv(self.umin127(p8), "i32", wide)
        lw = self.conv(self.umin127(l8), "i32", wide)
        sh = self.tmp(); self.emit(f"{sh} = ashr {wide} {aw}, {pw}")   # sign/zero fill past msb
        one = self.tmp(); self.emit(f"{one} = shl {wide} 1, {lw}")
        mask = self.tmp(); self.emit(f"{mask} = sub {wide} {one}, 1")
        field = self.tmp(); self.emit(f"{field} = and {wide} {sh}, {mask}")
        if signed:
            # sign bit of the field is bit min(pos+len-1, msb) of a
            top = self.tmp(); self.emit(f"{top} = add i32 {p8}, {l8}")
            top1 = self.tmp(); self.emit(f"{top1} = sub i32 {top}, 1")
            topc = self.tmp(); self.emit(f"{topc} = call i32 @llvm.umin.i32(i32 {top1}, i32 {bits - 1})")
            tw = self.conv(topc, "i32", wide)
            sb = self.tmp(); self.emit(f"{sb} = lshr {wide} {aw}, {tw}")
            sbit = self.tmp(); self.emit(f"{sbit} = and {wide} {sb}, 1")
            isneg = self.tmp(); self.emit(f"{isneg} = icmp ne {wide} {sbit}, 0")
            nz = self.tmp(); self.emit(f"{nz} = icmp ne i32 {l8}, 0")
            neg = self.tmp(); self.emit(f"{neg} = and i1 {isneg}, {nz}")
            ext = self.tmp(); self.emit(f"{ext} = or {wide} {field}, {self.negmask(mask, wide)}")
            field2 = self.tmp(); self.emit(f"{field2} = select i1 {neg}, {wide} {ext}, {wide} {field}")
            field = field2
        self.write(inst.operands[0], self.conv(field, wide, ty), ty, inst)

    def negmask(self, mask, wide):
        r = self.tmp(); self.emit(f"{r} = xor {wide} {mask}, -1"); return r

    def op_bfi(self, inst):
        ty = self.lt(inst)
        a = self.read(inst.operands[1], ty, inst)
        b = self.read(inst.operands[2], ty, inst)
        pos = self.read(inst.operands[3], "i32", inst)
        ln = self.read(inst.operands[4], "i32", inst)
        wide = "i128"
        p8 = self.conv(self.umin127(self.and255(pos)), "i32", wide)
        l8 = self.conv(self.umin127(self.and255(ln)), "i32", wide)
        one = self.tmp(); self.emit(f"{one} = shl {wide} 1, {l8}")
        m0 = self.tmp(); self.emit(f"{m0} = sub {wide} {one}, 1")
        m = self.tmp(); self.emit(f"{m} = shl {wide} {m0}, {p8}")
        aw = self.conv(a, ty, wide)
        bw = self.conv(b, ty, wide)
        ash = self.tmp(); self.emit(f"{ash} = shl {wide} {aw}, {p8}")
        am = self.tmp(); self.emit(f"{am} = and {wide} {ash}, {m}")
        nm = self.negmask(m, wide)
        bm = self.tmp(); self.emit(f"{bm} = and {wide} {bw}, {nm}")
        r = self.tmp(); self.emit(f"{r} = or {wide} {am}, {bm}")
        self.write(inst.operands[0], self.conv(r, wide, ty), ty, inst)

    def umin127(self, v):
        """Shift amounts on i128 stay below 128 (LLVM gives poison past the width)."""
        r = self.tmp(); self.emit(f"{r} = call i32 @llvm.umin.i32(i32 {v}, i32 127)"); return r

    def and255(self, v):
        r = self.tmp(); self.emit(f"{r} = and i32 {v}, 255"); return r

    def op_prmt(self, inst):
        """Byte permute; default mode and .f4e .b4e .rc8 .ecl .ecr .rc16."""
        a = self.read(inst.operands[1], "i32", inst)
        b = self.read(inst.operands[2], "i32", inst)
        c = self.read(inst.operands[3], "i32", inst)
        mode = next((m for m in inst.modifiers if m in ("f4e", "b4e", "rc8", "ecl", "ecr", "rc16")), None)
        r = self.tmp()
        self.emit(f"{r} = call i32 @prmt(i32 {a}, i32 {b}, i32 {c}, i32 "
                  f"{['f4e', 'b4e', 'rc8', 'ecl', 'ecr', 'rc16'].index(mode) + 1 if mode else 0})")
        self.write(inst.operands[0], r, "i32", inst)

    def op_lop3(self, inst):
        a, b, c = (self.read(o, "i32", inst) for o in inst.operands[1:4])
        lut = inst.operands[4]
        if not isinstance(lut, ir.Imm):
            raise unsupported(inst, "lop3 with a register truth table")
        r = self.tmp()
        self.emit(f"{r} = call i32 @lop3(i32 {a}, i32 {b}, i32 {c}, i32 {lut.value & 0xFF})")
        self.write(inst.operands[0], r, "i32", inst)

    def op_bmsk(self, inst):
        a = self.read(inst.operands[1], "i32", inst)
        b = self.read(inst.operands[2], "i32", inst)
        clamp = "clamp" in inst.modifiers
        r = self.tmp(); self.emit(f"{r} = call i32 @bmsk(i32 {a}, i32 {b}, i1 {'true' if clamp else 'false'})")
        self.write(inst.operands[0], r, "i32", inst)

    def op_fns(self, inst):
        mask = self.read(inst.operands[1], "i32", inst)
        base = self.read(inst.operands[2], "i32", inst)
        offset = self.read(inst.operands[3], "i32", inst)
        r = self.tmp(); self.emit(f"{r} = call i32 @fns(i32 {mask}, i32 {base}, i32 {offset})")
        self.write(inst.operands[0], r, "i32", inst)

    # SIMD video instructions (vadd2 ... vset4) ---------------------------------------------
    VIDEO_CMP = {"eq": "eq", "ne": "ne", "lt": "slt", "le": "sle", "gt": "sgt", "ge": "sge"}

    def video_simd(self, inst):
        """vop2/vop4 and vset2/vset4: half-word (2) or byte (4) lanes, selected from the 64 bits
        {b, a} by .asel/.bsel (default .h10/.h32, .b3210/.b7654), each extended by its operand's
        type; the lane results are clamped (.sat) and either merged into c under the
        destination's lane mask or summed into c (.add), as the ISA's pseudocode says."""
        op, lanes = inst.opcode[:-1], int(inst.opcode[-1])
        width = 32 // lanes
        mods = list(inst.modifiers)
        if op == "vset":
            if len(mods) < 3 or mods[2] not in self.VIDEO_CMP:
                raise unsupported(inst)
            dtype, (atype, btype), cmp_ = "u32", mods[:2], mods[2]
        else:
            dtype, atype, btype = mods[:3]
        rest = set(mods[3:])
        if not {dtype, atype, btype} <= {"u32", "s32"} or not rest <= {"sat", "add"} or \
                rest == {"sat", "add"} or len(inst.operands) != 4:
            raise unsupported(inst)
        sat, accumulate = "sat" in rest, "add" in rest
        d, a, b, c = inst.operands
        names = ("h10", "h32") if lanes == 2 else ("b3210", "b7654")
        kind = "h" if lanes == 2 else "b"

        def selector(reg, default, count, limit):
            """The digits of .hxy / .bxyzw, element i being the i-th digit from the right."""
            sel = reg.component or default
            digits = [int(ch) for ch in reversed(sel[1:])] if sel[1:].isdigit() else []
            if sel[0] != kind or len(digits) not in count or any(x >= limit for x in digits):
                raise unsupported(inst, f"lane selector .{sel} of {reg.name}")
            return digits

        asel = selector(a, names[0], (lanes,), 2 * lanes)
        bsel = selector(b, names[1], (lanes,), 2 * lanes)
        mask = set(selector(d, names[0], range(1, lanes + 1), lanes))
        va = self.read(ir.Reg(a.name), "i32", inst)
        vb = self.read(ir.Reg(b.name), "i32", inst)
        vc = self.read(c, "i32", inst)
        both = self.tmp(); self.emit(f"{both} = zext i32 {va} to i64")
        hi = self.tmp(); self.emit(f"{hi} = zext i32 {vb} to i64")
        hs = self.tmp(); self.emit(f"{hs} = shl i64 {hi}, 32")
        ab = self.tmp(); self.emit(f"{ab} = or i64 {both}, {hs}")
        lane_ty = f"i{width}"

        def lane(src64, index, signed):
            sh = self.tmp(); self.emit(f"{sh} = lshr i64 {src64}, {index * width}")
            t = self.tmp(); self.emit(f"{t} = trunc i64 {sh} to {lane_ty}")
            x = self.tmp(); self.emit(f"{x} = {'sext' if signed else 'zext'} {lane_ty} {t} to i32")
            return x

        results = []
        for i in range(lanes):
            x = lane(ab, asel[i], atype == "s32")
            y = lane(ab, bsel[i], btype == "s32")
            t = self.tmp()
            if op == "vadd":
                self.emit(f"{t} = add i32 {x}, {y}")
            elif op == "vsub":
                self.emit(f"{t} = sub i32 {x}, {y}")
            elif op == "vavrg":
                # rounds half up for non-negative sums, truncates (towards -inf) otherwise
                s_ = self.tmp(); self.emit(f"{s_} = add i32 {x}, {y}")
                nn = self.tmp(); self.emit(f"{nn} = icmp sge i32 {s_}, 0")
                up = self.tmp(); self.emit(f"{up} = zext i1 {nn} to i32")
                s1 = self.tmp(); self.emit(f"{s1} = add i32 {s_}, {up}")
                self.emit(f"{t} = ashr i32 {s1}, 1")
            elif op == "vabsdiff":
                df = self.tmp(); self.emit(f"{df} = sub i32 {x}, {y}")
                self.emit(f"{t} = call i32 @llvm.abs.i32(i32 {df}, i1 false)")
            elif op in ("vmin", "vmax"):
                self.emit(f"{t} = call i32 @llvm.s{op[1:]}.i32(i32 {x}, i32 {y})")
            else:
                cc = self.tmp(); self.emit(f"{cc} = icmp {self.VIDEO_CMP[cmp_]} i32 {x}, {y}")
                self.emit(f"{t} = zext i1 {cc} to i32")
            if sat:
                t = self.saturate_i32(t, width, dtype == "s32")
            results.append(t)
        if accumulate:
            acc = vc
            for i in sorted(mask):
                n = self.tmp(); self.emit(f"{n} = add i32 {acc}, {results[i]}"); acc = n
            self.write(ir.Reg(d.name), acc, "i32", inst)
            return
        out = "0"
        for i in range(lanes):
            if i in mask:
                v = self.tmp(); self.emit(f"{v} = and i32 {results[i]}, {(1 << width) - 1}")
                if i:
                    v2 = self.tmp(); self.emit(f"{v2} = shl i32 {v}, {i * width}"); v = v2
            else:
                v = self.tmp(); self.emit(f"{v} = and i32 {vc}, {((1 << width) - 1) << (i * width)}")
            o = self.tmp(); self.emit(f"{o} = or i32 {out}, {v}"); out = o
        self.write(ir.Reg(d.name), out, "i32", inst)

    op_vadd2 = op_vsub2 = op_vavrg2 = op_vabsdiff2 = op_vmin2 = op_vmax2 = op_vset2 = video_simd
    op_vadd4 = op_vsub4 = op_vavrg4 = op_vabsdiff4 = op_vmin4 = op_vmax4 = op_vset4 = video_simd

    def op_szext(self, inst):
        signed = "s32" in inst.modifiers
        a = self.read(inst.operands[1], "i32", inst)
        b = self.read(inst.operands[2], "i32", inst)
        clamp = "clamp" in inst.modifiers
        r = self.tmp()
        self.emit(f"{r} = call i32 @szext(i32 {a}, i32 {b}, i1 {'true' if clamp else 'false'}, i1 {'true' if signed else 'false'})")
        self.write(inst.operands[0], r, "i32", inst)

    # compare and select -------------------------------------------------------------------------
    INT_CMP = {"eq": "eq", "ne": "ne", "lt": "slt", "le": "sle", "gt": "sgt", "ge": "sge",
               "lo": "ult", "ls": "ule", "hi": "ugt", "hs": "uge"}
    FLT_CMP = {"eq": "oeq", "ne": "one", "lt": "olt", "le": "ole", "gt": "ogt", "ge": "oge",
               "equ": "ueq", "neu": "une", "ltu": "ult", "leu": "ule", "gtu": "ugt",
               "geu": "uge", "num": "ord", "nan": "uno"}

    def compare(self, inst, a_op, b_op) -> str:
        t = inst.types[-1]
        cmp = next(m for m in inst.modifiers if m in self.FLT_CMP or m in self.INT_CMP)
        if t in self.FLOAT_TYPES or t in ("f16", "bf16"):
            ty = LLTY[t] if t in self.FLOAT_TYPES else "float"
            if t in ("f16", "bf16"):
                half = "half" if t == "f16" else "bfloat"
                vals = []
                for o in (a_op, b_op):
                    v = self.read(o, "i16", inst)
                    h = self.tmp(); self.emit(f"{h} = bitcast i16 {v} to {half}")
                    f = self.tmp(); self.emit(f"{f} = fpext {half} {h} to float")
                    vals.append(f)
                a, b = vals
            else:
                a = self.ftz(inst, self.read(a_op, ty, inst), ty)
                b = self.ftz(inst, self.read(b_op, ty, inst), ty)
            r = self.tmp(); self.emit(f"{r} = fcmp {self.FLT_CMP[cmp]} {ty} {a}, {b}")
            return r
        ty = LLTY[t]
        pred = self.INT_CMP[cmp]
        if t.startswith("u") or t.startswith("b"):
            pred = {"slt": "ult", "sle": "ule", "sgt": "ugt", "sge": "uge"}.get(pred, pred)
        a = self.read(a_op, ty, inst)
        b = self.read(b_op, ty, inst)
        r = self.tmp(); self.emit(f"{r} = icmp {pred} {ty} {a}, {b}")
        return r

    def combine(self, inst, r, c_op):
        bool_op = next((m for m in inst.modifiers if m in ("and", "or", "xor")), None)
        if bool_op is None:
            return r
        c = self.read(c_op, "i1", inst)
        out = self.tmp(); self.emit(f"{out} = {bool_op} i1 {r}, {c}")
        return out

    def op_setp(self, inst):
        dst = inst.operands[0]
        r = self.compare(inst, inst.operands[1], inst.operands[2])
        c_op = inst.operands[3] if len(inst.operands) > 3 else None
        if isinstance(dst, ir.Pair):
            nr = self.tmp(); self.emit(f"{nr} = xor i1 {r}, true")
            self.write(dst.first, self.combine(inst, r, c_op), "i1", inst)
            self.write(dst.second, self.combine(inst, nr, c_op), "i1", inst)
        else:
            self.write(dst, self.combine(inst, r, c_op), "i1", inst)

    def op_set(self, inst):
        dtype = inst.types[0]
        r = self.compare(inst, inst.operands[1], inst.operands[2])
        r = self.combine(inst, r, inst.operands[3] if len(inst.operands) > 3 else None)
        if dtype == "f32":
            v = self.tmp(); self.emit(f"{v} = select i1 {r}, float 1.0, float 0.0")
            self.write(inst.operands[0], v, "float", inst)
        else:
            ty = LLTY[dtype]
            v = self.tmp(); self.emit(f"{v} = select i1 {r}, {ty} -1, {ty} 0")
            self.write(inst.operands[0], v, ty, inst)

    def op_selp(self, inst):
        ty = self.lt(inst)
        a = self.read(inst.operands[1], ty, inst)
        b = self.read(inst.operands[2], ty, inst)
        c = self.read(inst.operands[3], "i1", inst)
        r = self.tmp(); self.emit(f"{r} = select i1 {c}, {ty} {a}, {ty} {b}")
        self.write(inst.operands[0], r, ty, inst)

    def op_slct(self, inst):
        ty = LLTY[inst.types[0]]
        ctype = inst.types[-1]
        a = self.read(inst.operands[1], ty, inst)
        b = self.read(inst.operands[2], ty, inst)
        if ctype == "f32":
            c = self.ftz(inst, self.read(inst.operands[3], "float", inst), "float")
            ge = self.tmp(); self.emit(f"{ge} = fcmp oge float {c}, 0.0")   # -0.0 >= 0, NaN: b
        else:
            c = self.read(inst.operands[3], "i32", inst)
            ge = self.tmp(); self.emit(f"{ge} = icmp sge i32 {c}, 0")
        r = self.tmp(); self.emit(f"{r} = select i1 {ge}, {ty} {a}, {ty} {b}")
        self.write(inst.operands[0], r, ty, inst)

    # conversions --------------------------------------------------------------------------------
    def saturate_i32(self, v: str, bits: int, signed: bool) -> str:
        """An i32 clamped to the range of a ``bits``-wide signed or unsigned integer."""
        lo, hi = ((-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1))
        a = self.tmp(); self.emit(f"{a} = call i32 @llvm.smax.i32(i32 {v}, i32 {lo})")
        b = self.tmp(); self.emit(f"{b} = call i32 @llvm.smin.i32(i32 {a}, i32 {hi})")
        return b

    PACK_BITS = {"u16": 16, "s16": 16, "u8": 8, "s8": 8, "u4": 4, "s4": 4, "u2": 2, "s2": 2}

    def cvt_pack(self, inst):
        """cvt.pack.sat.{u16,s16}.s32 d, a, b and cvt.pack.sat.{u8,s8,u4,s4,u2,s2}.s32.b32
        d, a, b, c: a and b saturated to the narrow type, b in the lowest bits and a above
        it; the 8-bit and narrower forms fill the rest of d with c's low bits."""
        types = [m for m in inst.modifiers if m not in ("pack", "sat")]   # .u4 is no PTX type name
        ct = types[0] if types else None
        if ct not in self.PACK_BITS or "sat" not in inst.modifiers or types[1:2] != ["s32"]:
            raise unsupported(inst)
        size = self.PACK_BITS[ct]
        with_c = size < 16
        if len(inst.operands) != (4 if with_c else 3) or types[2:] != (["b32"] if with_c else []):
            raise unsupported(inst, "cvt.pack operands")
        fields = []
        for o in inst.operands[1:3]:
            v = self.saturate_i32(self.read(o, "i32", inst), size, ct.startswith("s"))
            m = self.tmp(); self.emit(f"{m} = and i32 {v}, {(1 << size) - 1}")
            fields.append(m)
        up = self.tmp(); self.emit(f"{up} = shl i32 {fields[0]}, {size}")
        r = self.tmp(); self.emit(f"{r} = or i32 {up}, {fields[1]}")
        if with_c:
            c = self.read(inst.operands[3], "i32", inst)
            cs = self.tmp(); self.emit(f"{cs} = shl i32 {c}, {2 * size}")
            r2 = self.tmp(); self.emit(f"{r2} = or i32 {r}, {cs}"); r = r2
        self.write(inst.operands[0], r, "i32", inst)

    def op_cvt(self, inst):
        if "pack" in inst.modifiers:
            return self.cvt_pack(inst)
        types = inst.types
        if len(types) != 2:
            raise unsupported(inst, "cvt needs a destination and a source type")
        dt, st = types
        mods = inst.modifiers
        if dt == "tf32" and st == "f32" and "rna" in mods:
            # 10-bit mantissa, round to nearest with ties away from zero; NaN kept
            v = self.read(inst.operands[1], "i32", inst)
            f = self.conv(v, "i32", "float")
            nan = self.tmp(); self.emit(f"{nan} = fcmp uno float {f}, 0.0")
            r0 = self.tmp(); self.emit(f"{r0} = add i32 {v}, 4096")
            r1 = self.tmp(); self.emit(f"{r1} = and i32 {r0}, -8192")
            r = self.tmp(); self.emit(f"{r} = select i1 {nan}, i32 {v}, i32 {r1}")
            self.write(inst.operands[0], r, "i32", inst)
            return
        if dt in self.FP8 or st in self.FP8:
            return self.cvt_fp8(inst, dt, st)
        for t in (dt, st):
            if t not in LLTY and t not in ("f16x2", "bf16x2"):
                raise unsupported(inst, f"conversions involving .{t}")
        if dt in ("f16x2", "bf16x2") or st in ("f16x2", "bf16x2"):
            return self.cvt_packed(inst, dt, st)
        sty = LLTY[st]
        dty = LLTY[dt]
        signed_src = st.startswith("s")
        src = self.read(inst.operands[1], sty, inst, signed_src)
        is_f = lambda t: t in ("f32", "f64", "f16", "bf16")  # noqa: E731
        if is_f(st):
            fsrc = src
            fty = sty
            if st in ("f16", "bf16"):
                fsrc = self.half_to_float(src, "half" if st == "f16" else "bfloat")
                fty = "float"
            fsrc = self.ftz(inst, fsrc, fty) if fty == "float" else fsrc
            rounding = next((m for m in mods if m in ("rni", "rzi", "rmi", "rpi")), None)
            if rounding:
                fn = {"rni": "roundeven", "rzi": "trunc", "rmi": "floor", "rpi": "ceil"}[rounding]
                fsrc = self.fcall(fn, [fsrc], fty)
            if is_f(dt):
                v = self.float_to_float(inst, fsrc, fty, dt)
            else:
                if not rounding and dt not in ("pred",):
                    raise unsupported(inst, "float to integer conversion needs .rni/.rzi/.rmi/.rpi")
                fn = "fptosi" if dt.startswith("s") else "fptoui"
                sfx = "f32" if fty == "float" else "f64"
                v = self.tmp()
                # saturating conversions: out of range clamps, NaN gives 0 (as PTX says)
                self.emit(f"{v} = call {dty} @llvm.{fn}.sat.{dty}.{sfx}({fty} {fsrc})")
            self.write(inst.operands[0], v, LLTY[dt] if dt not in ("f16", "bf16") else "i16", inst)
            return
        # integer source
        if is_f(dt):
            rounding = next((m for m in mods if m in ("rn", "rz", "rm", "rp")), "rn")
            target = "float" if dt in ("f16", "bf16") else dty
            conv_op = "sitofp" if signed_src else "uitofp"
            f = self.tmp()
            if rounding != "rn":
                if dt in ("f16", "bf16") or sty not in ("i32", "i64"):
                    raise unsupported(inst, f"conversion to .{dt} with .{rounding}")
                name = self.mod.directed_helper(conv_op, rounding, target, [sty])
                self.emit(f'{f} = call {target} @"{name}"({sty} {src})')
            else:
                self.emit(f"{f} = {conv_op} {sty} {src} to {target}")
            if dt in ("f16", "bf16"):
                v = self.float_to_float(inst, f, "float", dt)
            else:
                v = f
            self.write(inst.operands[0], v, dty if dt not in ("f16", "bf16") else "i16", inst)
            return
        # integer to integer: resize, then saturate if asked
        if "sat" in mods:
            v = self.int_saturate(src, sty, signed_src, dt)
        else:
            v = self.conv(src, sty, dty, signed_src) if BITS[sty] != BITS[dty] else src
        self.write(inst.operands[0], v, dty, inst, signed=dt.startswith("s"))

    def int_saturate(self, v, sty, signed_src, dt):
        dty = LLTY[dt]
        bits = BITS[dty]
        if dt.startswith("s"):
            lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        else:
            lo, hi = 0, (1 << bits) - 1
        wide = "i128"
        w = self.tmp(); self.emit(f"{w} = {'sext' if signed_src else 'zext'} {sty} {v} to {wide}")
        a = self.tmp(); self.emit(f"{a} = call {wide} @llvm.smax.i128({wide} {w}, {wide} {lo})")
        b = self.tmp(); self.emit(f"{b} = call {wide} @llvm.smin.i128({wide} {a}, {wide} {hi})")
        return self.conv(b, wide, dty)

    def float_to_float(self, inst, v, fty, dt):
        mods = inst.modifiers
        rounding = next((m for m in mods if m in ("rn", "rz", "rm", "rp")), None)
        if dt in ("f16", "bf16"):
            half = "half" if dt == "f16" else "bfloat"
            v = self.sat(inst, v, fty)      # .sat: clamp to [0, 1] first, NaN -> 0
            return self.to_half_bits(inst, v, fty, half,
                                     rounding if rounding in ("rz", "rm", "rp") else None)
        dty = LLTY[dt]
        if BITS[dty] > BITS[fty]:
            r = self.tmp(); self.emit(f"{r} = fpext {fty} {v} to {dty}")
        elif BITS[dty] < BITS[fty]:
            r = self.tmp()
            if rounding not in (None, "rn"):
                name = self.mod.directed_helper("fptrunc", rounding, dty, [fty])
                self.emit(f'{r} = call {dty} @"{name}"({fty} {v})')
            else:
                self.emit(f"{r} = fptrunc {fty} {v} to {dty}")
        else:
            r = v
        r = self.ftz(inst, r, dty) if dty == "float" else r
        return self.sat(inst, r, dty)

    FP8 = ("e4m3x2", "e5m2x2")

    def cvt_fp8(self, inst, dt, st):
        """sm_89+ FP8 conversions: cvt.rn.satfinite{.relu}.{e4m3x2,e5m2x2}.f32 d, a, b (a in the
        upper byte) and .f16x2/.bf16x2 d, a (each half to its byte), and back with
        cvt.rn{.relu}.{f16x2,bf16x2}.{e4m3x2,e5m2x2} d, a (exact; NaN becomes the canonical
        NaN 0x7FFF). Helpers @to_fp8 and @from_fp8 in runtime_ir.py."""
        mods = set(inst.modifiers) - {dt, st}
        relu = "true" if "relu" in mods else "false"
        if dt in self.FP8:
            if not {"rn", "satfinite"} <= mods or not mods <= {"rn", "satfinite", "relu"}:
                raise unsupported(inst, "FP8 results need .rn.satfinite")
            e4m3 = "true" if dt == "e4m3x2" else "false"
            def widen(f):
                d = self.tmp(); self.emit(f"{d} = fpext float {f} to double")
                return d

            if st == "f32" and len(inst.operands) == 3:
                halves = [widen(self.read(o, "float", inst)) for o in inst.operands[1:3]]   # upper byte first
            elif st in ("f16x2", "bf16x2") and len(inst.operands) == 2:
                v = self.read(inst.operands[1], "i32", inst)
                half = "half" if st == "f16x2" else "bfloat"
                halves = []
                for shift in (16, 0):
                    sh = self.tmp(); self.emit(f"{sh} = lshr i32 {v}, {shift}")
                    halves.append(widen(self.half_to_float(self.conv(sh, "i32", "i16"), half)))
            else:
                raise unsupported(inst)
            hi, lo = (self.tmp(), self.tmp())
            self.emit(f"{hi} = call i32 @to_fp8(double {halves[0]}, i1 {e4m3}, i1 {relu})")
            self.emit(f"{lo} = call i32 @to_fp8(double {halves[1]}, i1 {e4m3}, i1 {relu})")
            up = self.tmp(); self.emit(f"{up} = shl i32 {hi}, 8")
            r = self.tmp(); self.emit(f"{r} = or i32 {up}, {lo}")
            self.write(inst.operands[0], self.conv(r, "i32", "i16"), "i16", inst)
            return
        if dt not in ("f16x2", "bf16x2") or not mods <= {"rn", "relu"} or len(inst.operands) != 2:
            raise unsupported(inst)
        e4m3 = "true" if st == "e4m3x2" else "false"
        v = self.conv(self.read(inst.operands[1], "i16", inst), "i16", "i32")
        out = "0"
        for shift in (0, 8):
            sh = self.tmp(); self.emit(f"{sh} = lshr i32 {v}, {shift}")
            code = self.tmp(); self.emit(f"{code} = and i32 {sh}, 255")
            d = self.tmp(); self.emit(f"{d} = call double @from_fp8(i32 {code}, i1 {e4m3})")
            if relu == "true":      # as for f16: below zero becomes +0, -0 and NaN stay
                neg = self.tmp(); self.emit(f"{neg} = fcmp olt double {d}, 0.0")
                d2 = self.tmp(); self.emit(f"{d2} = select i1 {neg}, double 0.0, double {d}")
                d = d2
            f = self.tmp(); self.emit(f"{f} = fptrunc double {d} to float")   # exact: FP8 values are f32s
            if dt == "f16x2":
                h = self.tmp(); self.emit(f"{h} = fptrunc float {f} to half")   # exact too
                b = self.tmp(); self.emit(f"{b} = bitcast half {h} to i16")
            else:
                b = self.tmp(); self.emit(f"{b} = call i16 @f32_to_bf16(float {f})")
            nan = self.tmp(); self.emit(f"{nan} = fcmp uno float {f}, 0.0")
            canon = self.tmp(); self.emit(f"{canon} = select i1 {nan}, i16 32767, i16 {b}")
            w = self.conv(canon, "i16", "i32")
            if shift:
                w2 = self.tmp(); self.emit(f"{w2} = shl i32 {w}, 16"); w = w2
            o = self.tmp(); self.emit(f"{o} = or i32 {out}, {w}"); out = o
        self.write(inst.operands[0], out, "i32", inst)

    def cvt_packed(self, inst, dt, st):
        """cvt.rn.f16x2.f32 d, a, b: pack two f32 (a in the upper half)."""
        if dt in ("f16x2", "bf16x2") and st == "f32":
            half = "half" if dt == "f16x2" else "bfloat"
            parts = []
            for o in inst.operands[1:3]:
                f = self.read(o, "float", inst)
                h = self.tmp(); self.emit(f"{h} = fptrunc float {f} to {half}")
                b = self.tmp(); self.emit(f"{b} = bitcast {half} {h} to i16")
                parts.append(self.conv(b, "i16", "i32"))
            hi = self.tmp(); self.emit(f"{hi} = shl i32 {parts[0]}, 16")
            r = self.tmp(); self.emit(f"{r} = or i32 {hi}, {parts[1]}")
            self.write(inst.operands[0], r, "i32", inst)
            return
        raise unsupported(inst, "packed conversion")

    # atomics -----------------------------------------------------------------------------------
    RMW = {("add", "i"): "add", ("add", "f"): "fadd", ("exch", "i"): "xchg", ("exch", "f"): "xchg",
           ("and", "i"): "and", ("or", "i"): "or", ("xor", "i"): "xor",
           ("min", "s"): "min", ("max", "s"): "max", ("min", "u"): "umin", ("max", "u"): "umax",
           ("min", "f"): "fmin", ("max", "f"): "fmax", ("inc", "u"): "uinc_wrap",
           ("dec", "u"): "udec_wrap"}

    def half_atomic_add(self, inst):
        """atom/red.add.noftz on f16, bf16, f16x2, bf16x2: a compare-and-swap loop around
        the half-precision add (computed exactly in f64, rounded once to nearest even)."""
        t = self.itype(inst)
        half = "half" if t.startswith("f16") else "bfloat"
        lanes = 2 if t.endswith("x2") else 1
        storage = "i32" if lanes == 2 else "i16"
        is_red = inst.opcode == "red"
        ops = inst.operands if is_red else inst.operands[1:]
        p = self.address(ops[0], self.space_of(inst), ir.type_size(t), inst)
        v = self.read(ops[1], storage, inst)
        start = self.tmp(); self.emit(f"{start} = load atomic {storage}, ptr {p} monotonic, align {ir.type_size(t)}")
        entry = self.label("hae")
        self.emit(f"br label %{entry}")
        self.block(entry)
        loop, done = self.label("hal"), self.label("had")
        self.emit(f"br label %{loop}")
        self.block(loop)
        old, seen = self.tmp(), self.tmp()
        self.emit(f"{old} = phi {storage} [{start}, %{entry}], [{seen}, %{loop}.tail]")
        acc = "0"
        for lane in range(lanes):
            parts = []
            for x in (old, v):
                sh = self.tmp(); self.emit(f"{sh} = lshr {storage} {x}, {16 * lane}")
                h16 = self.conv(sh, storage, "i16")
                f = self.half_to_float(h16, half)
                d = self.tmp(); self.emit(f"{d} = fpext float {f} to double")
                parts.append(d)
            r = self.tmp(); self.emit(f"{r} = fadd double {parts[0]}, {parts[1]}")
            bits = self.to_half_bits(inst, r, "double", half)
            wide = self.conv(bits, "i16", storage)
            sh = self.tmp(); self.emit(f"{sh} = shl {storage} {wide}, {16 * lane}")
            o = self.tmp(); self.emit(f"{o} = or {storage} {acc}, {sh}")
            acc = o
        self.emit(f"br label %{loop}.tail")
        self.block(f"{loop}.tail")
        pair = self.tmp(); self.emit(f"{pair} = cmpxchg ptr {p}, {storage} {old}, {storage} {acc} seq_cst seq_cst")
        self.emit(f"{seen} = extractvalue {{ {storage}, i1 }} {pair}, 0")
        ok = self.tmp(); self.emit(f"{ok} = extractvalue {{ {storage}, i1 }} {pair}, 1")
        self.emit(f"br i1 {ok}, label %{done}, label %{loop}")
        self.block(done)
        if not is_red:
            self.write(inst.operands[0], old, storage, inst)

    def vector_atomic(self, inst, count: int):
        """sm_90 atom/red on .v2/.v4 (.v8 for 16-bit types) in global memory: the ISA makes
        each element atomic on its own, not the vector as a whole, so this is one scalar
        atomic per element, at consecutive addresses."""
        t = self.itype(inst)
        op = next((m for m in inst.modifiers if m in ("add", "min", "max")), None)
        counts = {"f32": (2, 4), "f16": (2, 4, 8), "bf16": (2, 4, 8), "f16x2": (2, 4), "bf16x2": (2, 4)}
        if op != "add" or count not in counts.get(t, ()):
            raise unsupported(inst, f"vector atomic {op} on .v{count}.{t} (only add: .v2/.v4 f32, "
                                    f"f16x2, bf16x2 and .v2/.v4/.v8 f16, bf16)")
        is_red = inst.opcode == "red"
        ops = inst.operands if is_red else inst.operands[1:]
        addr, values = ops[0], ops[1]
        dests = None if is_red else inst.operands[0]
        if not isinstance(addr, ir.Addr) or not isinstance(values, ir.Vec) or len(values.items) != count \
                or (dests is not None and (not isinstance(dests, ir.Vec) or len(dests.items) != count)):
            raise unsupported(inst, f"vector atomic operands (.v{count} wants {count}-element vectors)")
        mods = tuple(m for m in inst.modifiers if m != f"v{count}")
        size = ir.type_size(t)
        for i in range(count):
            at = ir.Addr(addr.base, addr.offset + i * size)
            if is_red:
                operands = (at, values.items[i])
            else:
                sink = dests.items[i] if dests.items[i] is not None else ir.Reg("_")
                operands = (sink, at, values.items[i])
            self.op_atom(ir.Instruction(inst.opcode, mods, operands, None, inst.line, inst.column))

    def op_atom(self, inst):
        t = self.itype(inst)
        count = self._vector(inst)
        if count > 1:
            if self.space_of(inst) not in ("global", "generic"):
                raise unsupported(inst, "vector atomics outside global memory")
            return self.vector_atomic(inst, count)
        if t in ("f16x2", "bf16x2", "f16", "bf16") and "add" in inst.modifiers:
            return self.half_atomic_add(inst)
        if t in ("f16x2", "bf16x2", "f16", "bf16"):
            raise unsupported(inst, f"atomic {'.'.join(m for m in inst.modifiers if m != t)} on .{t}")
        ty = LLTY[t]
        is_red = inst.opcode == "red"
        ops = inst.operands if is_red else inst.operands[1:]
        space = self.space_of(inst)
        p = self.address(ops[0], space, ir.type_size(t), inst)
        op = next((m for m in inst.modifiers if m in ("add", "exch", "and", "or", "xor", "min",
                                                       "max", "inc", "dec", "cas")), None)
        if op is None:
            raise unsupported(inst, "unknown atomic operation")
        kind = "f" if t in ("f32", "f64") else ("s" if t.startswith("s") else ("u" if t.startswith("u") else "i"))
        if op == "cas":
            cmp = self.read(ops[1], ty, inst)
            new = self.read(ops[2], ty, inst)
            pair = self.tmp(); self.emit(f"{pair} = cmpxchg ptr {p}, {ty} {cmp}, {ty} {new} seq_cst seq_cst")
            old = self.tmp(); self.emit(f"{old} = extractvalue {{ {ty}, i1 }} {pair}, 0")
        else:
            key = (op, kind)
            if key not in self.RMW:
                key = (op, "i") if kind in ("s", "u") else key
                if op in ("min", "max") and kind == "i":
                    key = (op, "u")
                if op in ("inc", "dec"):
                    key = (op, "u")
            rmw = self.RMW.get(key)
            if rmw is None:
                raise unsupported(inst, f"atomic {op} on .{t}")
            v = self.read(ops[1], ty, inst)
            old = self.tmp(); self.emit(f"{old} = atomicrmw {rmw} ptr {p}, {ty} {v} seq_cst")
        if not is_red:
            self.write(inst.operands[0], old, ty, inst)

    op_red = op_atom

    # barriers and warp operations (resumable kernels) ---------------------------------------------
    def op_bar(self, inst):
        mods = inst.modifiers
        if "warp" in mods:
            self.sync_point(ST_WARP, {7: inst.line})
            return
        if "arrive" in mods:
            # Arrive without waiting: counted towards the threads the barrier waits for.
            p = self.ctx_ptr("arrivals")
            self.emit(f"atomicrmw add ptr {p}, i64 1 seq_cst")
            return
        ops = list(inst.operands)
        if "red" in mods:
            dst = ops.pop(0)
            bar_id = self.read(ops[0], "i32", inst)
            count = self.read(ops[1], "i32", inst) if len(ops) > 2 else "0"
            pred = self.read(ops[-1], "i1", inst)
            pv = self.conv(pred, "i1", "i32")
            op_code = {"popc": 1, "and": 2, "or": 3}[next(m for m in mods if m in ("popc", "and", "or"))]
            self.sync_point(ST_BAR, {2: bar_id, 3: count, 4: op_code, 5: pv, 7: inst.line})
            res = self.tmp(); p = self.frame_slot(6); self.emit(f"{res} = load i32, ptr {p}")
            if op_code == 1:
                self.write(dst, res, "i32", inst)
            else:
                self.write(dst, self.conv(res, "i32", "i1"), "i1", inst)
            return
        bar_id = self.read(ops[0], "i32", inst) if ops else "0"
        count = self.read(ops[1], "i32", inst) if len(ops) > 1 else "0"
        self.sync_point(ST_BAR, {2: bar_id, 3: count, 4: 0, 7: inst.line})

    op_barrier = op_bar

    def deposit(self, value: str, aux: str = "0"):
        """Write this thread's contribution to a warp operation and wait for the warp; then a
        second wait, so that no lane overwrites its slot before every lane has read it."""
        p = self.exchange_ptr()
        self.emit(f"store i64 {value}, ptr {p}")
        q = self.tmp(); self.emit(f"{q} = getelementptr i64, ptr {p}, i64 1")
        self.emit(f"store i64 {aux}, ptr {q}")
        # tag the slot with the sync point, so that lanes can tell who waits at the same one
        tag = self.tmp(); self.emit(f"{tag} = getelementptr i64, ptr {p}, i64 3")
        self.emit(f"store i64 {self.sync_points + 1}, ptr {tag}")

    def op_shfl(self, inst):
        if "sync" not in inst.modifiers:
            raise unsupported(inst, "shfl without .sync (removed in PTX 6.4 for sm_70+)")
        mode = next(m for m in inst.modifiers if m in ("up", "down", "bfly", "idx"))
        dst = inst.operands[0]
        a = self.read(inst.operands[1], "i32", inst)
        self.deposit(self.conv(a, "i32", "i64"))
        self.sync_point(ST_WARP, {7: inst.line})
        # Values used after a sync point are read after it (registers were reloaded).
        b = self.read(inst.operands[2], "i32", inst)
        c = self.read(inst.operands[3], "i32", inst)
        lane = self.tmp(); self.emit(f"{lane} = and i32 {self.ti(6)}, 31")
        j = self.tmp()
        pv = self.tmp()
        self.emit(f"{j} = call i32 @shfl_lane(i32 {lane}, i32 {b}, i32 {c}, i32 {['up', 'down', 'bfly', 'idx'].index(mode)})")
        self.emit(f"{pv} = icmp sge i32 {j}, 0")
        jj = self.tmp(); self.emit(f"{jj} = select i1 {pv}, i32 {j}, i32 {lane}")
        src = self.exchange_ptr(jj)
        v = self.tmp(); self.emit(f"{v} = load i64, ptr {src}")
        result = self.conv(v, "i64", "i32")
        if isinstance(dst, ir.Pair):
            self.write(dst.first, result, "i32", inst)
            self.write(dst.second, pv, "i1", inst)
        else:
            self.write(dst, result, "i32", inst)
        self.sync_point(ST_WARP, {7: inst.line})

    def warp_gather(self, inst, value: str, fn: str, mask_op, extra: str, finish):
        """Deposit ``value``, wait for the warp, combine the lanes of the mask with runtime
        ``fn``, let ``finish(result, mask)`` write the destinations, and wait again so that
        no lane overwrites its slot before all have read."""
        self.deposit(value)
        self.sync_point(ST_WARP, {7: inst.line})
        mask = self.read(mask_op, "i32", inst) if mask_op is not None else "-1"
        base = self.exchange_ptr("0")
        lane = self.tmp(); self.emit(f"{lane} = and i32 {self.ti(6)}, 31")
        r = self.tmp(); self.emit(f"{r} = call i64 @{fn}(ptr {base}, i32 {mask}, i32 {lane}{extra})")
        finish(r, mask)
        self.sync_point(ST_WARP, {7: inst.line})

    def op_vote(self, inst):
        mode = next(m for m in inst.modifiers if m in ("all", "any", "uni", "ballot"))
        pred = self.read(inst.operands[1], "i1", inst)
        mask_op = inst.operands[2] if len(inst.operands) > 2 else None

        def finish(ballot, mask):
            b32 = self.conv(ballot, "i64", "i32")
            if mode == "ballot":
                self.write(inst.operands[0], b32, "i32", inst)
                return
            live = self.tmp(); self.emit(f"{live} = and i32 {mask}, {self.active_mask()}")
            r = self.tmp()
            if mode == "all":
                self.emit(f"{r} = icmp eq i32 {b32}, {live}")
            elif mode == "any":
                self.emit(f"{r} = icmp ne i32 {b32}, 0")
            else:
                z = self.tmp(); self.emit(f"{z} = icmp eq i32 {b32}, 0")
                a = self.tmp(); self.emit(f"{a} = icmp eq i32 {b32}, {live}")
                self.emit(f"{r} = or i1 {z}, {a}")
            self.write(inst.operands[0], r, "i1", inst)
        self.warp_gather(inst, self.conv(pred, "i1", "i64"), "warp_ballot", mask_op, "", finish)

    def warp_valid_lanes(self) -> str:
        """How many lanes of this warp exist (the last warp of a block may be partial)."""
        dims = [self.trunc32(self.ctx(f"block_{a}")) for a in "xyz"]
        xy = self.tmp(); self.emit(f"{xy} = mul i32 {dims[0]}, {dims[1]}")
        n = self.tmp(); self.emit(f"{n} = mul i32 {xy}, {dims[2]}")
        wb = self.tmp(); self.emit(f"{wb} = and i32 {self.ti(6)}, -32")
        valid = self.tmp(); self.emit(f"{valid} = sub i32 {n}, {wb}")
        return valid

    def active_mask(self) -> str:
        """Lanes of this warp that exist and have not exited."""
        base = self.exchange_ptr("0")
        valid = self.warp_valid_lanes()
        r = self.tmp(); self.emit(f"{r} = call i32 @warp_active(ptr {base}, i32 {valid})")
        return r

    def arrived_mask(self, finish):
        """Wait for the warp, then ``finish(mask)`` with the lanes waiting at this same point
        (the lanes executing this instruction together: activemask, elect)."""
        tag = self.sync_points + 1
        self.deposit("0")
        self.sync_point(ST_WARP, {7: 0})
        base = self.exchange_ptr("0")
        valid = self.warp_valid_lanes()
        r = self.tmp(); self.emit(f"{r} = call i32 @warp_arrived(ptr {base}, i32 {valid}, i64 {tag})")
        finish(r)
        self.sync_point(ST_WARP, {7: 0})

    def op_activemask(self, inst):
        self.arrived_mask(lambda m: self.write(inst.operands[0], m, "i32", inst))

    def op_elect(self, inst):
        dst = inst.operands[0]

        def finish(active):
            mask = self.read(inst.operands[-1], "i32", inst)
            live = self.tmp(); self.emit(f"{live} = and i32 {mask}, {active}")
            low = self.tmp(); self.emit(f"{low} = call i32 @llvm.cttz.i32(i32 {live}, i1 false)")
            lane = self.tmp(); self.emit(f"{lane} = and i32 {self.ti(6)}, 31")
            me = self.tmp(); self.emit(f"{me} = icmp eq i32 {lane}, {low}")
            if isinstance(dst, ir.Pair):
                self.write(dst.first, low, "i32", inst)
                self.write(dst.second, me, "i1", inst)
            else:
                self.write(dst, me, "i1", inst)
        self.arrived_mask(finish)

    def op_redux(self, inst):
        op = next(m for m in inst.modifiers if m in ("add", "min", "max", "and", "or", "xor"))
        t = self.itype(inst)
        v = self.read(inst.operands[1], "i32", inst)
        ext = self.conv(v, "i32", "i64", signed=t.startswith("s"))
        code = ["add", "min", "max", "and", "or", "xor"].index(op)

        def finish(r, mask):
            self.write(inst.operands[0], self.conv(r, "i64", "i32"), "i32", inst)
        self.warp_gather(inst, ext, "warp_reduce", inst.operands[2],
                         f", i32 {code}, i1 {'true' if t.startswith('s') else 'false'}", finish)

    def op_match(self, inst):
        mode = next(m for m in inst.modifiers if m in ("any", "all"))
        t = self.itype(inst)
        ty = LLTY[t]
        v = self.conv(self.read(inst.operands[1], ty, inst), ty, "i64")
        dst = inst.operands[0]

        def finish(r, mask):
            r32 = self.conv(r, "i64", "i32")
            if mode == "all" and isinstance(dst, ir.Pair):
                ok = self.tmp(); self.emit(f"{ok} = icmp ne i32 {r32}, 0")
                self.write(dst.first, r32, "i32", inst)
                self.write(dst.second, ok, "i1", inst)
            else:
                self.write(dst, r32, "i32", inst)
        self.warp_gather(inst, v, "warp_match", inst.operands[2],
                         f", i1 {'true' if mode == 'all' else 'false'}", finish)
