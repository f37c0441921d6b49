"""PTX -> LLVM IR (textual, parsed by llvmlite).

One kernel becomes ``i32 @dptx_run(ptr ctx, i64 first_block, i64 end_block)`` that runs a
range of blocks; the per-thread body is ``@thread`` and every device function an LLVM
function. Registers are allocas (SROA/mem2reg make them SSA values). A kernel with sync points
(barriers, warp operations) runs resumable threads (DESIGN.md decision 4): at a sync point a
thread spills its registers to its frame, records where to resume and returns; the block
scheduler in ``@dptx_run`` resumes the threads once all have arrived. Kernels without sync
points run a plain loop over threads.

``Module`` translates a kernel's module: it picks for each function the per-thread
(``function.Function``) or the warp-vectorized form (``vector.VectorFunction``), adds the
once-per-block bounds check (``block_check``) and the block scheduler (``runtime_ir``)."""
from __future__ import annotations

import os
import re

from ...errors import PtxUnsupportedError
from ...ptx import ir
from ...ptx.analysis import pointer_provenance, reachable_functions
from ...ptx.cfg import build_cfg, sync_kind
from ...ptx.printer import format_instruction
from ...ptx.rewrite import unique_scoped_registers
from ...ptx.spins import spin_waits
from . import address_space as L
from .block_check import BlockCheck, trusted_sites
from .function import Function
from .heap_ir import HEAP_IR
from .racecheck_ir import RACE_IR
from .lowering.common import FRAME_HEADER, HOST_FUNCTIONS, ST_SITE, unsupported
from .runtime_ir import RUNTIME_IR
from .schedulers import scheduler_plain, scheduler_resumable, scheduler_warps
from .vector import VectorFunction
from .vector_plan import plan_vector


class Module:
    """Translation of one kernel (and the functions it reaches) to an LLVM IR module."""

    def __init__(self, module: ir.Module, kernel_name: str, vector_mode: str = None,
                 param_alignment: int = L.PARAM_ALIGNMENT):
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
        # spin loops' back edges yield to the block's other threads (ptx/spins.py)
        self.spins = spin_waits(self.kernel)
        self.resumable = bool(self.spins) or any(sync_kind(i) for i in self.kernel.instructions)
        for f in self.functions:
            if f is not self.kernel and f.body is not None and any(sync_kind(i) for i in f.instructions):
                bad = next(i for i in f.instructions if sync_kind(i))
                raise unsupported(bad, f"barrier or warp operation inside device function {f.name}")
        # Where each kernel register's pointer comes from: an access through a register that
        # holds exactly one parameter (or module variable) plus data is checked against that
        # buffer with loop-invariant bounds, without a table lookup.
        self.provenance = pointer_provenance(module, self.kernel, strict=True)
        # Every buffer a register may point into, through any operation (a may-analysis):
        # an access through a register whose origins are all known must land in one of
        # their buffers, so no offset, however large, carries a pointer into another
        # argument's buffer (function.allowed_windows).
        self.loose_provenance = pointer_provenance(module, self.kernel)
        # The parameters accesses are based on are taken as multiples of param_alignment
        # (cudaMalloc'd buffers are): accesses aligned by construction from them need no
        # alignment check (ptx/alignment.py). The executor checks each launch's values and
        # takes a form built with param_alignment=1 for a launch that passes a view off it.
        self.param_alignment = param_alignment
        self.aligned_params = address_parameters(self.kernel, self.provenance) \
            if param_alignment > 1 else []
        bits = param_alignment.bit_length() - 1
        self.param_bits = {self.kernel.params[i].name: bits for i in self.aligned_params}
        # Plain kernels report bounds faults from the thread loop's latch instead of leaving
        # it, so that LLVM can vectorize the loop over threads (DESIGN.md point 4).
        self.deferred_faults = not self.resumable
        # Kernels with barriers, warp operations or loops run warp-vectorized when vector_plan
        # can prove it exact (DPTX_CPU_VECTOR=0 turns it off; =all takes every kernel).
        self.vector_plan, self.vector_reason = None, "kernel without sync points"
        choice = (vector_mode or os.environ.get("DPTX_CPU_VECTOR", "1")).strip().lower()
        # a race-checked build (dptx sanitize --tool racecheck): the per-thread forms, every
        # shared memory access and sync point noted (racecheck_ir.py)
        self.racecheck = choice == "racecheck"
        if self.racecheck:
            choice = "0"
        # Plain kernels with a loop in each thread go warp-vectorized too: LLVM's vectorizer
        # only works on innermost loops, so a per-thread loop (often a recurrence) would run
        # one thread at a time, while 32 lanes run it side by side (25x on a polynomial).
        has_loop = bool(build_cfg(self.kernel).back_edges())
        # sin/cos.approx.f32 per thread branch to libm for large inputs (lowering/sin_cos.py),
        # which keeps LLVM from vectorizing the thread loop: 32 lanes run them side by side
        # (4M __sinf/__cosf pairs: 30 ms per thread, 8 ms warp-vectorized)
        has_sin_cos = any(i.opcode in ("sin", "cos") and "f32" in i.modifiers
                          for i in self.kernel.instructions)
        self.vector_for_loops = False   # vectorized only because of a loop or sin/cos (the
        #                                 executor also builds the plain form, measures both)
        if choice in ("0", "off", "no", "false"):
            self.vector_reason = f"DPTX_CPU_VECTOR={choice}"
        elif self.resumable or has_loop or has_sin_cos or choice == "all":
            plan = plan_vector(module, self.kernel)
            if isinstance(plan, str):
                self.vector_reason = plan
            else:
                self.vector_plan, self.vector_reason = plan, None
                self.deferred_faults = False
                self.vector_for_loops = not self.resumable and choice != "all"
        self.fault_sites: list = []    # (PTX line, access size) per deferred fault exit
        self.stop_polls = 0            # back edges that poll the stop request (loops)
        self.prefetch_sites = 0        # global loads with a stride-prefetch history slot
        self.uses_clock = False        # %globaltimer reads clock_gettime
        self.uses_grid_workspace = False   # %envreg1/2: cooperative groups' grid sync
        self.uses_malloc = False       # calls malloc/free: the launch gets a device heap
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
                fn = VectorFunction(self, f, self.vector_plan)
            else:
                fn = Function(self, f)
            bodies.append(_rendered(fn))
            self.stop_polls += len(fn.polls)
            if f is self.kernel:
                kernel_fn = fn
        self.kernel_function = kernel_fn      # what its translation found (tests look)
        kw = max(len(kernel_fn.constant_slots), 1)
        if self.vector_plan is not None:
            self.frame_bytes = kernel_fn.frame_bytes
            sched = scheduler_warps(self.frame_bytes, kernel_fn.header_bytes, kw)
            bodies += sorted(kernel_fn.decls)
        elif self.resumable:
            self.frame_bytes = FRAME_HEADER + 8 * len(kernel_fn.regs)
            sched = scheduler_resumable(self.frame_bytes, kw, synccheck=self.racecheck)
        elif kernel_fn.trusted:
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
        text = "\n".join(bodies + helpers + [RUNTIME_IR, sched] +
                         ([HEAP_IR] if self.uses_malloc else []) +
                         ([RACE_IR] if self.racecheck else []))
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

    @staticmethod
    def trusted_sites(fn) -> dict:
        """The accesses of plain kernel ``fn`` one bounds check per block covers
        (``block_check``; asked by ``Function.render``)."""
        return trusted_sites(fn)


# What a lowering raises when an instruction's operands are not what its form needs (a
# missing operand, a register where an address goes...): the instruction is malformed, and
# the user gets a dptx error naming it, never an IndexError from inside the translator.
_MALFORMED = (IndexError, KeyError, StopIteration, ValueError, TypeError, AttributeError)


def address_parameters(kernel: ir.Function, provenance: dict) -> list:
    """Indices of the 64-bit integer parameters some access's address is built on (a
    pointer, plus offsets): what the known-alignment analysis may take as aligned."""
    out = set()
    for inst in kernel.instructions:
        for op in inst.operands:
            if isinstance(op, ir.Addr) and isinstance(op.base, ir.Reg):
                out |= {o[1] for o in provenance.get(op.base.name, ())
                        if isinstance(o, tuple) and o[0] == "param"}
    return sorted(i for i in out if kernel.params[i].size == 8
                  and kernel.params[i].type in ("u64", "s64", "b64"))


def _rendered(fn) -> str:
    try:
        return fn.render()
    except _MALFORMED as exc:
        insts = fn.f.instructions
        index = getattr(fn, "inst_index", -1)
        if not 0 <= index < len(insts):
            raise
        inst = insts[index]
        raise PtxUnsupportedError(
            f"PTX line {inst.line}: {format_instruction(inst).strip()} its operands or types do "
            f"not fit any form of {inst.opcode} the CPU executor knows (malformed, or a form "
            f"it does not support) [{type(exc).__name__}: {exc}]") from None
