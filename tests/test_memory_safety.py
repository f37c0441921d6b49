"""Memory safety of the CPU executor against kernels that try to reach what they were not
given (issue 20), in every executor form: the block-level check cannot be fooled by a step
that wraps around 64 bits, an offset cannot carry a pointer into another argument's buffer
or the thread's local memory, parameters and .const data cannot be written or read past.
Each case checks both the error and that nothing outside the kernel's own bytes changed."""
import numpy as np
import pytest

import dptx
from dptx import cpu

MODES = ["0", "1", "all"]
HDR = ".version 7.8\n.target sm_80\n.address_size 64\n"


@pytest.fixture(params=MODES)
def mode(request, monkeypatch):
    monkeypatch.setenv("DPTX_CPU_VECTOR", request.param)
    return request.param


def wrapping_kernel(step: str):
    """p + tid.x * step + tid.y * 16, each register defined once (the block check's form)."""
    return dptx.RawModule(ptx=HDR + f"""
.visible .entry wrap(.param .u64 p) {{
  .reg .b64 %rd<9>; .reg .b32 %r<3>; .reg .f32 %f1;
  ld.param.u64 %rd0, [p]; cvta.to.global.u64 %rd1, %rd0;
  mov.u32 %r1, %tid.x; mov.u32 %r2, %tid.y;
  cvt.u64.u32 %rd2, %r1; cvt.u64.u32 %rd3, %r2;
  mul.lo.u64 %rd4, %rd2, {step}; mul.lo.u64 %rd5, %rd3, 16;
  add.u64 %rd6, %rd1, %rd4; add.u64 %rd7, %rd6, %rd5;
  mov.f32 %f1, 0f42F60000;
  st.global.f32 [%rd7], %f1;
  ret;
}}""").get_function("wrap")


@pytest.mark.parametrize("step", ["0xFFFFFFFFFFFFFFF0", "18446744073709551600"])
def test_a_step_that_wraps_64_bits_does_not_pass_the_block_check(mode, step):
    """Steps 2**64 - 16 and 16 on a (2, 2) block: the first and last threads' addresses are
    equal (the span wraps to 0), threads (1, 0) and (0, 1) reach 16 bytes before and after.
    The one-check-per-block form trusted it and wrote before the array."""
    big = np.zeros(64, np.float32)
    with pytest.raises(dptx.DptxMemoryError, match="16 bytes before the start of argument 0"):
        cpu.launch(wrapping_kernel(step), (1,), (2, 2), [big[8:16]])
    assert not big[:8].any() and not big[16:].any()      # nothing outside the argument


FAR = r'''
extern "C" __global__ void far(float* a, float* b, long long off) {
    if (threadIdx.x == 0) a[off] = 7.0f;
}
extern "C" __global__ void far_sync(float* a, float* b, long long off) {
    __shared__ float s[64];
    s[threadIdx.x] = threadIdx.x;
    __syncthreads();
    a[off + threadIdx.x] = s[63 - threadIdx.x];
}
'''


@pytest.mark.parametrize("kernel", ["far", "far_sync"])
@pytest.mark.parametrize("off, where", [(1 << 38, "into argument 1 \\(b\\)"),
                                        (-(1 << 38), "in the thread's local memory"),
                                        (2 << 38, "not in any device buffer")])
def test_an_offset_cannot_carry_a_pointer_into_another_buffer(mode, kernel, off, where):
    """a[1 << 38] of a float* is 2**40 bytes on: exactly the next buffer's start. It wrote
    b[0]; a negative one wrote the thread's local memory."""
    k = dptx.RawModule(FAR).get_function(kernel)
    a, b = np.zeros(64, np.float32), np.zeros(64, np.float32)
    with pytest.raises(dptx.DptxMemoryError, match=where):
        cpu.launch(k, (1,), (64,), [a, b, np.int64(off)])
    assert not b.any()


def test_far_offsets_inside_the_buffer_still_work(mode):
    k = dptx.RawModule(FAR).get_function("far_sync")
    a, b = np.zeros(200, np.float32), np.zeros(64, np.float32)
    cpu.launch(k, (1,), (64,), [a, b, np.int64(100)])
    np.testing.assert_array_equal(a[100:164], np.arange(63, -1, -1, dtype=np.float32))
    assert not b.any()


@pytest.mark.parametrize("body, message", [
    ("ld.param.u64 %rd2, [p+4096]; st.global.u64 [%rd1], %rd2;",
     r"ld.param accesses bytes \[4096, 4104\) of parameter p, which has 8 bytes"),
    ("ld.param.u32 %r1, [p+6]; st.global.u32 [%rd1], %r1;",
     r"ld.param accesses bytes \[6, 10\) of parameter p"),
    ("st.param.u64 [p], %rd1;", "st.param writes kernel parameter p"),
    ("mov.u64 %rd2, p; st.param.u64 [%rd2], %rd1;", "st.param through a register"),
    ("mov.u32 %r1, 9; st.const.u32 [c], %r1;", "st.const writes the constant state space"),
    ("mov.u32 %r1, 9; st.global.u32 [c], %r1;", "st writes .const variable c"),
    ("mov.u32 %r1, 9; atom.global.add.u32 %r2, [c], %r1;", "atom writes .const variable c"),
])
def test_illegal_writes_and_parameter_reads_are_refused_at_compile_time(body, message):
    ptx = HDR + f"""
.const .align 4 .u32 c = 5;
.visible .entry k(.param .u64 p) {{
  .reg .b64 %rd<4>; .reg .b32 %r<3>;
  ld.param.u64 %rd0, [p]; cvta.to.global.u64 %rd1, %rd0;
  {body}
  ret;
}}"""
    with pytest.raises(dptx.PtxSyntaxError, match=message) as info:
        dptx.RawModule(ptx=ptx)
    assert info.value.line == 9


def test_a_parameter_address_in_a_register_is_bounded(mode):
    k = dptx.RawModule(ptx=HDR + """
.visible .entry k(.param .u64 p, .param .u64 at) {
  .reg .b64 %rd<6>;
  ld.param.u64 %rd0, [p]; cvta.to.global.u64 %rd1, %rd0;
  ld.param.u64 %rd2, [at];
  mov.u64 %rd3, p; add.u64 %rd4, %rd3, %rd2;
  ld.param.u64 %rd5, [%rd4];
  st.global.u64 [%rd1], %rd5;
  ret;
}""").get_function("k")
    out = np.zeros(1, np.uint64)
    cpu.launch(k, (1,), (1,), [out, np.uint64(8)])       # the second parameter: itself
    assert out[0] == 8
    with pytest.raises(dptx.DptxMemoryError, match="parameter space offset 4096 \\(\\+8 bytes\\) "
                                                   "is outside the kernel's 16 bytes"):
        cpu.launch(k, (1,), (1,), [out, np.uint64(4096)])


RECURSION = r'''
__device__ __noinline__ int depth(int n, const int* p) {
    if (n <= 0) return p[0];
    int r = depth(n - 1, p);            // no local memory: only the call stack grows
    return (r * 7 + p[n & 1]) & 0xffff;
}
extern "C" __global__ void rec(int* out, int n) { out[threadIdx.x] = depth(n, out); }
'''


def test_unbounded_recursion_is_a_call_stack_overflow_not_a_crash(mode):
    """A million nested calls that use no local memory overflowed the native stack: the
    process died (SIGSEGV). It is the documented call stack overflow now."""
    k = dptx.RawModule(RECURSION).get_function("rec")
    out = np.zeros(4, np.int32)
    cpu.launch(k, (1,), (4,), [out, np.int32(100)])
    with pytest.raises(dptx.DptxMemoryError, match="call stack overflow in kernel rec.*"
                                                   "device-function calls nested deeper"):
        cpu.launch(k, (1,), (4,), [out, np.int32(10**6)])
