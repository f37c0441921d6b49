"""The shapes the CPU executor's block schedulers are written from
(dptx/cpu/renderer/schedulers.py: a thread's frame and its fields, a counted loop): valid LLVM
IR that computes what they say, run through llvmlite."""
import ctypes

import llvmlite.binding as llvm

from dptx.cpu.renderer.lowering.common import FRAME_FIELD
from dptx.cpu.renderer.schedulers import _field, _frame, _loop, _step

FRAME_BYTES = 48


def _compiled(ir: str, name: str):
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    module = llvm.parse_assembly(ir)
    module.verify()
    target = llvm.Target.from_default_triple().create_target_machine()
    engine = llvm.create_mcjit_compiler(module, target)
    engine.finalize_object()
    return engine, engine.get_function_address(name)


def test_a_counted_loop_over_the_frames_sums_each_threads_status():
    """sum over threads t < n of the status field of t's frame, with a carried value."""
    ir = ("define i32 @statuses(ptr %frames, i32 %nthr) {\nentry:\n  br label %loop\n"
          + _loop("loop", "t", "entry", "next", "d", "%nthr", "done", "body",
                  carried=(("sum", "i32", "0"),))
          + "body:\n" + _frame("t", "", FRAME_BYTES) + _field("sp", "fp", "status")
          + "  %st = load i32, ptr %sp\n  %sum.n = add i32 %sum, %st\n  br label %next\n"
          + _step("next", "t", "loop") + "done:\n  ret i32 %sum\n}\n")
    engine, address = _compiled(ir, "statuses")
    statuses = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_int32)(address)
    n = 5
    frames = (ctypes.c_int32 * (n * FRAME_BYTES // 4))()
    for t in range(n):
        frames[t * FRAME_BYTES // 4 + FRAME_FIELD["status"]] = 10 * t + 1
        frames[t * FRAME_BYTES // 4 + FRAME_FIELD["line"]] = 999      # not summed
    assert statuses(frames, n) == sum(10 * t + 1 for t in range(n))
    assert statuses(frames, 0) == 0


def test_the_frame_fields_are_the_headers_distinct_i32_slots():
    assert sorted(FRAME_FIELD.values()) == list(range(8))     # 32 bytes of the 64-byte header
