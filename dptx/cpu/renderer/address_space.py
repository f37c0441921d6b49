"""The device address space of the CPU executor (DESIGN.md point 5).

A 64-bit device virtual address is ``window << 40 | offset``. Window 0 is never mapped (null
pointers fault), window 1 is the current block's shared memory, window 2 the current thread's
local memory, and every other window is one device buffer: a module variable or an array
argument. Translating an address is one shift, one table load and one bounds check: a page
table with one page per buffer, so every access is checked to the byte.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ...errors import PtxUnsupportedError
from ...ptx import ir

WINDOW_SHIFT = 40
OFFSET_MASK = (1 << WINDOW_SHIFT) - 1
SHARED_WINDOW = 1
LOCAL_WINDOW = 2
FIRST_BUFFER = 3
# "Addresses" of functions (for function pointers): small ids in window 0, which no data
# access can use.
FUNCTION_ID_BASE = 0x1000

# A row of the buffer table maps the device addresses [first, first + size) of one window to
# host memory at ``host``. ``first`` is the window's base address for a whole buffer; a chunk
# that holds only a window over bytes [lo, hi) of a buffer (its access footprint, DESIGN.md
# point 6) maps first = base + lo, size = hi - lo, so every check ``address - first < size``
# also enforces the footprint, at no extra cost.
TABLE_ROW = 3

# Layout of the per-call context the generated code reads (an array of int64).
CTX_FIELDS = [
    "buftable",       # pointer to int64 triples (first mapped address, host address, size)
                      # per window: see TABLE_ROW
    "nbuf",           # number of windows in the table
    "params",         # pointer to the kernel parameter buffer
    "grid_x", "grid_y", "grid_z",
    "block_x", "block_y", "block_z",
    "shared_size",    # bytes of shared memory per block (static + dynamic)
    "dynamic_smem",   # dynamic shared memory bytes
    "shared",         # pointer to this call's shared memory (one block at a time)
    "local",          # pointer to this call's local memory
    "local_size",     # bytes of local memory per thread
    "error",          # pointer to the error record (int64[8])
    "frames",         # pointer to the per-thread frames (resumable kernels)
    "exchange",       # pointer to the warp exchange area (int64[4] per thread)
    "printf",         # pointer to the printf record buffer
    "printf_cap",     # its capacity in records
    "printf_count",   # records written (atomically incremented)
    "total_smem",     # %total_smem_size
    "arrivals",       # pointer to int64[16]: bar.arrive arrivals per barrier id (this phase)
    "param_windows",  # pointer to int64 triples (window base, host address, size) per kernel
                      # parameter: the buffer a pointer parameter points into (size 0: none)
    "fault_addr",     # pointer to an int64 per thread of a block: the address of the access
                      # that stopped the thread (plain kernels report faults after the loop)
    "stride_history", # pointer to an int64 per global load of a warp-vectorized kernel: the
                      # address the previous warp read there (for stride prefetching)
    "matrix",         # pointer to the tensor-core exchange area (int64[16] per thread): the
                      # fragments a lane gives to its warp's mma and ldmatrix
    "grid_workspace", # device address of a cooperative launch's grid-sync workspace (what
                      # %envreg1:%envreg2 hold on a GPU; 0 for other launches)
    "heap",           # pointer to the launch's device heap (malloc/free; null: none)
    "heap_address",   # its device address
    "heap_size",      # its bytes
    "progress",       # pointer to an int64 counting mbarrier changes (a yielding thread's
                      # wait can end only when it moves)
    "stack_limit",    # lowest native stack address device functions may use (set by
                      # dptx_run on entry: NATIVE_STACK bytes below its frame)
    "stop",           # pointer to the launch's stop request (int32, shared by its threads):
                      # every loop back edge reads it; non-zero (STOP_*) ends the thread
    "thread_ids",     # pointer to the uint32 (x, y, z) thread indices of a block, warp by
                      # warp (``thread_id_table``): the warp-vectorized form reads its lanes'
                      # indices there for blocks of more than one dimension
    "block_cap",      # blocks from here on do not start in this call (the host sets it to
                      # the call's end; a block stalled in a spin-wait lowers it to hand the
                      # blocks after it to another thread: schedulers.scheduler_resumable)
    "stalled",        # set by the call when a block's threads spun without progress for
                      # STALL_SWEEPS sweeps (waiting, perhaps, on a later block)
    "sleep_scale",    # a double: what nanosleep durations are multiplied by (the process's
                      # dptx.nanosleep-scale; lowering/sleep.py)
    "race_shadow",    # racecheck builds (racecheck_ir.py): shadow entries of the block's
                      # shared memory, per thread its epochs, the hazard records (int64:
    "race_epochs",    # the count, then records)
    "hazards",
    "race_global",    # racecheck: per window, the host address of its shadow (global
                      # buffers of a launch run on one thread), or 0; null: none
    "race_blocks",    # racecheck between blocks: the era, then a slot per block (null: none;
                      # racecheck_ir.py)
    "init_maps",      # initcheck: per window, the host address of its init map (a byte per
                      # byte, 0: unwritten) or 0; null: no initcheck (racecheck_ir.py)
]
# Native stack that nested device-function calls may use per call of dptx_run: recursion
# deeper than that is a call stack overflow (ERR_STACK), not a crash of the process. (A GPU's
# default stack, cudaLimitStackSize, is 1 KiB per thread; frames here are ~50-100 bytes.)
NATIVE_STACK = 512 * 1024
NATIVE_STACK_OVERFLOW = -1      # the address ERR_STACK reports for the native stack
CTX = {name: i for i, name in enumerate(CTX_FIELDS)}


@functools.lru_cache(maxsize=64)
def thread_id_table(block: tuple, warp: int = 32):
    """(x, y, z) of each thread of a ``block``-shaped block, warp by warp: uint32
    [warps, 3, warp] (lanes past the block's last thread, which do not exist, continue the
    count). What each warp of a 2-D or 3-D block would otherwise divide out in every block."""
    bx, by, bz = (int(v) for v in block)
    n = bx * by * bz
    warps = -(-n // warp)
    linear = np.arange(warps * warp, dtype=np.uint32)
    table = np.empty((warps, 3, warp), np.uint32)
    table[:, 0, :] = (linear % bx).reshape(warps, warp)
    table[:, 1, :] = (linear // bx % by).reshape(warps, warp)
    table[:, 2, :] = (linear // (bx * by)).reshape(warps, warp)
    table.flags.writeable = False      # shared by every launch of this block shape
    return table

# Error record: [code, address, PTX line, linear thread id, linear block id, access size]
ERR_NONE = 0
ERR_BOUNDS = 1        # out of bounds or unmapped
ERR_MISALIGNED = 2    # an access not at a multiple of its natural alignment (``alignment``)
ERR_TRAP = 3
ERR_DEADLOCK = 4
ERR_STACK = 5         # local memory (call stack) overflow
ERR_PRINTF = 6        # printf buffer full (output truncated, not fatal)
ERR_ASSERT = 7        # a device-side assert() failed (__assertfail)
ERR_FREE = 8          # free() of a pointer malloc() did not return, or freed twice
ERR_MBARRIER = 9      # every live thread waits on an mbarrier phase that cannot complete
ERR_PARAM = 10        # a .param access through a register outside the parameter buffer
ERR_STOPPED = 11      # the launch was asked to stop (time limit, Ctrl-C): seen at a back edge
ERR_WGMMA_DESCRIPTOR = 12   # a wgmma matrix descriptor the executor does not run (the value)

# Values of the stop request: why the host asked the launch's threads to stop
STOP_TIMEOUT = 1
STOP_INTERRUPT = 2
STOP_CANCELLED = 3    # a worker's chunk whose task the client cancelled

# PTX ISA, "Addresses as Operands": an access must be naturally aligned, at a multiple of its
# size (a vector access: of the whole vector); a GPU stops a kernel that is not with
# cudaErrorMisalignedAddress. Bulk copies (cp.async.bulk) need 16 bytes.
BULK_ALIGNMENT = 16
# What the CPU executor assumes of the 64-bit parameters accesses are based on (pointers),
# checked at each launch: cudaMalloc'd buffers are aligned to 256 bytes, and dptx passes
# every whole buffer at a window's start (2**40)
PARAM_ALIGNMENT = 16


def alignment(size) -> int:
    """The alignment an access of ``size`` bytes needs: the largest power of two dividing it
    (1, 2, 4, 8, 16, 32 for .v8); BULK_ALIGNMENT for a size known only at run time."""
    if not isinstance(size, int):
        return BULK_ALIGNMENT
    return size & -size if size > 0 else 1


PRINTF_RECORD_BYTES = 8 + 8 + 256   # format address, argument count bytes, argument bytes


def buffer_address(window: int, offset: int = 0) -> int:
    return (window << WINDOW_SHIFT) | offset


def module_variables(module: ir.Module) -> list:
    """Module variables that are device buffers (.global and .const with a size), in a fixed
    order: their windows are FIRST_BUFFER + index, the same in every process."""
    found = [v for v in module.global_variables
             if v.space in ("global", "const") and v.size and "extern" not in v.linkage]
    seen = {}
    for v in found:
        if v.name in seen:
            raise PtxUnsupportedError(
                f"PTX line {v.line}: variable {v.name} is declared twice with static storage "
                f"(also at line {seen[v.name].line}; two function bodies may not declare "
                f"the same .global name here)")
        seen[v.name] = v
    return found


@dataclass
class SharedLayout:
    offsets: dict        # variable name -> byte offset in the block's shared memory
    static_size: int
    dynamic_offset: int  # where extern (dynamic) shared arrays start
    reserved: int = None  # the reserved region's offset, where the kernel reads it


# The reserved shared memory region (``%reserved_smem_offset_0`` and ``_1``): what the CUDA
# libraries keep per block. Cooperative groups puts the barriers and per-warp scratch of tiles
# larger than a warp at ``%reserved_smem_offset_1`` and counts on 288 bytes there
# (cooperative_groups/details/memory.h). Its layout is the implementation's; here 1 KiB (a
# GPU's reserved shared memory per block since sm_80) after the static variables, the two
# offsets at its start and 16 bytes in. Like all shared memory it is not cleared between the
# blocks of a chunk (a GPU does not clear it either; the libraries initialize what they use).
RESERVED_SMEM = ("%reserved_smem_offset_0", "%reserved_smem_offset_1")
RESERVED_SMEM_OFFSETS = (0, 16)
RESERVED_SMEM_BYTES = 1024


def reads_reserved_smem(functions: list) -> bool:
    return any(isinstance(op, ir.Reg) and op.name in RESERVED_SMEM
               for f in functions for inst in f.instructions for op in inst.operands)


def shared_layout(module: ir.Module, functions: list) -> SharedLayout:
    """Static shared variables (module level and in bodies), the reserved region where the
    kernel reads its offsets, then the dynamic area."""
    offsets, pos, dynamic = {}, 0, []
    candidates = [v for v in module.global_variables if v.space == "shared"]
    for f in functions:
        candidates += [v for v in f.local_variables if v.space == "shared"]
    for v in candidates:
        if v.size is None:
            dynamic.append(v)
            continue
        a = v.alignment
        pos = (pos + a - 1) // a * a
        offsets[v.name] = pos
        pos += v.size
    reserved = None
    if reads_reserved_smem(functions):
        reserved = (pos + 15) // 16 * 16
        pos = reserved + RESERVED_SMEM_BYTES
    dyn = (pos + 15) // 16 * 16
    for v in dynamic:
        offsets[v.name] = dyn
    return SharedLayout(offsets, pos, dyn, reserved)


def _element_bytes(value, ptx_type: str, address_of) -> bytes:
    size = ir.type_size(ptx_type)
    if isinstance(value, ir.SymInit):
        return (address_of(value.name) + value.offset).to_bytes(size, "little", signed=False)
    if value.kind == "int":
        if ptx_type in ("f32", "f64"):
            return np.array(value.value, dtype=np.float32 if ptx_type == "f32" else np.float64).tobytes()
        return (value.value & ((1 << (8 * size)) - 1)).to_bytes(size, "little")
    if value.kind in ("f32", "f64"):
        bits = value.value
        if value.kind == "f32" and ptx_type == "f64":
            return np.array(np.frombuffer(bits.to_bytes(4, "little"), np.float32)[0], np.float64).tobytes()
        if value.kind == "f64" and ptx_type == "f32":
            return np.array(np.frombuffer(bits.to_bytes(8, "little"), np.float64)[0], np.float32).tobytes()
        return bits.to_bytes(size, "little")
    dtype = {"f32": np.float32, "f64": np.float64, "f16": np.float16}.get(ptx_type)
    if dtype is None:
        return (int(value.value) & ((1 << (8 * size)) - 1)).to_bytes(size, "little")
    return np.array(value.value, dtype=dtype).tobytes()


def _flatten(init):
    if isinstance(init, tuple):
        for item in init:
            yield from _flatten(item)
    else:
        yield init


def initial_image(module: ir.Module) -> dict:
    """name -> uint8 array holding each module variable's initial bytes (zeros where there is
    no initializer). Symbol initializers (``generic(sym)``, ``sym+off``) become the device
    address of the symbol, the same in every process."""
    variables = module_variables(module)
    windows = {v.name: FIRST_BUFFER + i for i, v in enumerate(variables)}

    function_ids = {f.name: FUNCTION_ID_BASE + i for i, f in enumerate(module.functions)}

    def address_of(v, name):
        if name in function_ids:
            return function_ids[name]
        if name not in windows:
            # validate() refused names declared nowhere; this one is declared but is no
            # buffer of the image: an .extern without definition (nothing here links it), a
            # .shared/.local variable or an unsized array
            found = next((d for d in module.global_variables if d.name == name), None)
            what = "a symbol" if found is None else (
                f"{'an extern' if 'extern' in found.linkage else 'a'} .{found.space} variable "
                f"(line {found.line})")
            raise PtxUnsupportedError(
                f"PTX line {v.line}: the initializer of {v.name} holds the address of {name}, "
                f"{what} that has no address in the module's image: only .global and .const "
                f"variables defined in the module with a size, and functions, have one; make "
                f"{name} such a variable or store its address into {v.name} at run time")
        return buffer_address(windows[name])

    image = {}
    for v in variables:
        buf = np.zeros(v.size, dtype=np.uint8)
        if v.init is not None:
            raw = b"".join(_element_bytes(x, v.type, functools.partial(address_of, v))
                           for x in _flatten(v.init))
            buf[:min(len(raw), v.size)] = np.frombuffer(raw[:v.size], dtype=np.uint8)
        image[v.name] = buf
    return image
