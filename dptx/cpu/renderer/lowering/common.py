"""What the translation core and every instruction family share: the LLVM type of each
PTX type, status codes, frame layouts, constant spelling and the unsupported-instruction
error."""
from __future__ import annotations

import struct

from ....errors import PtxUnsupportedError
from ....ptx import ir
from .. import address_space as L


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
ST_YIELD = 4    # a thread waiting on an mbarrier: run the block's others, then it again
ST_SPIN = 5     # a thread about to poll memory in a spin loop (ptx/spins.py): the same, but
                # what it waits for may come from another block: never a deadlock by itself
# A plain kernel's thread stopped by a bounds fault returns ST_SITE + the index of the access
# in Module.fault_sites, having stored the address in its fault_addr slot.
ST_SITE = 1000
FRAME_HEADER = 64   # bytes of a resumable thread's frame before its spilled registers
# The header's i32 fields, written by the thread at a sync point (function.sync_point) and read
# by the block scheduler (schedulers.py): where it resumes, its status (0 run, 1 at a barrier,
# 2 at a warp operation, 3 done, or ST_YIELD/ST_SPIN), the barrier's id and count (a warp
# operation's member mask in the count's place), the bar.red operation, value and result, and
# the PTX line it waits at
FRAME_FIELD = {"resume": 0, "status": 1, "bar_id": 2, "count": 3, "red_op": 4,
               "red_value": 5, "red_result": 6, "line": 7}

SPECIAL_INDEX = {("%tid", "x"): 0, ("%tid", "y"): 1, ("%tid", "z"): 2,
                 ("%ctaid", "x"): 3, ("%ctaid", "y"): 4, ("%ctaid", "z"): 5}


def fconst(value: float, llty: str) -> str:
    """LLVM spelling of a float constant (hex of the double it widens to)."""
    if llty == "float":
        value = struct.unpack("<f", struct.pack("<f", value))[0] if value == value else value
    return "0x%016X" % struct.unpack("<Q", struct.pack("<d", value))[0]


def f32_bits_to_double(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits & 0xFFFFFFFF))[0]


def f64_bits_to_double(bits: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", bits & (2**64 - 1)))[0]


# Extern device functions the CPU executor provides itself: printf's buffer call, what a
# failed assert() calls, and the device heap's malloc and free (heap_ir.py).
HOST_FUNCTIONS = ("vprintf", "__assertfail", "malloc", "free")


def unsupported(inst: ir.Instruction, why: str = ""):
    return PtxUnsupportedError(
        f"PTX line {inst.line}: {inst.full_opcode} is not supported by the CPU executor"
        + (f" ({why})" if why else ""))



# -- the warp-vectorized form (vector.py) --------------------------------------------------
W = 32
# Frame of a warp (bytes): scalars, then lane thread ids, block masks and register slots.
F_RESUME, F_WARP, F_CURMASK, F_DEAD, F_NOSYNC = 0, 8, 12, 16, 20
F_TID = 64                     # tid.x, tid.y, tid.z, linear tid: <32 x i32> each
F_MASKS = F_TID + 4 * 4 * W    # one i32 lane mask per basic block
SLOT = 8 * W                   # bytes per register slot

INTS = {"b8", "u8", "s8", "b16", "u16", "s16", "b32", "u32", "s32", "b64", "u64", "s64"}
FLOATS = {"f32", "f64"}
UNIFORM_SPECIALS = {"%ntid", "%nctaid", "%ctaid", "%nwarpid", "%smid", "%gridid", "%nsmid",
                     "%dynamic_smem_size", "%total_smem_size"}


def vt(ty: str) -> str:
    return f"<{W} x {ty}>"


def sfx(ty: str) -> str:
    return {"float": "f32", "double": "f64"}.get(ty, ty)


def iota(scale: int = 1, modulo: int = W) -> str:
    return "<" + ", ".join(f"i64 {(i % modulo) * scale}" for i in range(W)) + ">"


def vector_width(inst) -> int:
    """The element count of a vector access (``.v2``, ``.v4``, ``.v8``), else 1."""
    for m in inst.modifiers:
        if m in ("v2", "v4", "v8"):
            return int(m[1:])
    return 1
