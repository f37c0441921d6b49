"""PTX instructions lowered to LLVM IR, one module per family; a map for the next engineer.

The CPU executor's files, top of the layers first (each imports only what is below it); the
renderer (PTX -> LLVM IR) is ``dptx/cpu/renderer/``, what runs its output is ``dptx/cpu/``:

- ``executor.py``: compiles a kernel once per process and runs chunks of blocks (Python
  per chunk, never per thread); errors naming the kernel, block, thread and address.
- ``codegen.py``: ``Module``, the translation of a kernel's module: per function the
  per-thread form (``function.Function``) or the warp-vectorized one
  (``vector.VectorFunction``, where ``vector_plan`` says it fits), the once-per-block bounds
  check (``block_check``), and the block scheduler (``schedulers``).
- ``vector.py``: the warp-vectorized core (32 lanes as LLVM vectors, masks, lane loops,
  frames across barriers); ``vector_memory.py`` its memory accesses and fast regions.
- ``block_check.py``: the once-per-block check of a plain kernel's affine accesses.
- ``function.py``: the per-thread core (registers, operands, addresses and windows, frames,
  liveness, special registers, rendering) and ``Function``, the core with every family.
- ``lowering/``: the families below, each with its own registry (``registry.py``: opcode ->
  lowering, installed by each form of the executor), and
  ``common.py`` (LLVM types, status codes, frame layouts, the unsupported error).
- ``schedulers.py`` and ``runtime_ir.py``: the LLVM IR of the block schedulers and of the
  runtime helpers (address translation, printf records, prmt/lop3, half, warp exchanges).
- ``address_space.py`` (in the renderer: the contract between the rendered code and what runs
  it): the flat device address space, the context layout, error codes; ``jit.py``:
  LLVM IR -> machine code (llvmlite) at three tiers, and the background builds' locks;
  ``forms.py``: a kernel's compiled forms and their disk cache (keyed by the PTX, read back
  without translating); ``executor.py``: launches, and which form and tier runs.

Which family lowers which PTX instruction (each file has the per-thread class
``...Lowering`` and, where vectorized, the warp-vectorized ``...VectorLowering`` side by side):

=================  ================================================================
``control``        bra, brx.idx, ret/exit, trap/brkpt, call (also printf, assert)
``memory``         mov, ld/ldu, st, cvta, isspacep, prefetch(u) and hints, cp.async,
                   membar/fence
``arithmetic``     add, sub, addc/subc, mul, mad/madc, fma, mul24/mad24, dp4a/dp2a,
                   sad, div, rem, abs, neg, min, max (integer, float, half, bf16, x2)
``float_math``     sqrt, rcp, rsqrt, sin, cos, ex2, lg2, tanh, copysign, testp
``bits``           and, or, xor, not, cnot, shl, shr, shf, popc, clz, brev, bfind, bfe,
                   bfi, prmt, lop3, bmsk, fns, szext
``video``          vadd2/4, vsub2/4, vavrg2/4, vabsdiff2/4, vmin2/4, vmax2/4, vset2/4;
                   scalar vadd, vsub, vabsdiff, vmin, vmax, vshl, vshr, vset
``compare``        setp, set, selp, slct
``conversion``     cvt (integer, float, half, bf16, FP8, packed; rounding, .sat, .relu)
``atomics``        atom, red
``sync``           bar/barrier, shfl, vote, activemask, elect, redux, match
``matrix``         tensor cores, per thread: mma.sync (m16n8k16 f16/bf16, m16n8k32
                   s8/u8), ldmatrix, stmatrix, movmatrix, wmma.load/store/mma
``async_barrier``  mbarrier (and cp.async.mbarrier.arrive, cp.async.bulk in ``memory``)
=================  ================================================================

Adding an instruction: find its family in the PTX ISA manual's chapter, add a method to that
family's per-thread class decorated ``@registry.lower("opcode")`` (the module's
``registry``; the method gets the ``Function`` as
``self`` and the ``ir.Instruction``; read operands with ``self.read``, write with
``self.write``, emit IR with ``self.emit``); raise ``unsupported(inst, why)`` for any form
it does not do exactly. That alone makes it work in both executor forms: the
warp-vectorized one runs a per-thread lowering lane by lane where no vector lowering is
registered. For speed, add ``@registry.lower_vector("opcode")`` to the family's
``...VectorLowering``
(``self`` is the ``VectorFunction``, ``em`` the executing lanes; return False to fall back
per lane). Tests go in ``tests/isa/`` against the ISA's pseudocode or numpy. A new family is
a new module here with its ``registry = Registry("name")``, installed in
``function.Function.LOWERINGS`` (and, with vector lowerings, in
``vector.VectorFunction.VECTOR_LOWERINGS``), its classes mixed into those two. Helpers that
several families use live in helper classes that each user names among its bases
(``numeric_helpers.NumericHelpers``: flush-to-zero, saturation, rounding, half bits;
``async_barrier.MbarrierHelpers``; ``matrix.MatrixHelpers``; ``float_math.FloatVectorHelpers``),
never found only through ``Function``'s mixins (``tests/test_lowering_registries.py``).
"""
