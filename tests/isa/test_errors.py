"""Errors: out-of-bounds loads/stores raise DptxMemoryError naming kernel, block, thread,
address and PTX line; untouched arrays stay unchanged; the process runs kernels afterwards;
deadlocks raise instead of hanging; unsupported instructions name opcode and line."""
import re

import numpy as np
import pytest

import dptx

from ._util import GID, kernel_from_ptx, kernel_text, launch


def _line_of(text, needle):
    for i, line in enumerate(text.splitlines(), 1):
        if needle in line:
            return i
    raise AssertionError(needle)


def _copy_kernel_text(name):
    return kernel_text(".param .u64 pout, .param .u64 pin", GID + """
ld.param.u64 %rd1, [pin];
cvta.to.global.u64 %rd1, %rd1;
mul.wide.u32 %rd2, %r3, 4;
add.u64 %rd3, %rd1, %rd2;
ld.global.u32 %r4, [%rd3];
add.u32 %r4, %r4, 1;
ld.param.u64 %rd5, [pout];
cvta.to.global.u64 %rd5, %rd5;
add.u64 %rd6, %rd5, %rd2;
st.global.u32 [%rd6], %r4;
ret;""", name=name)


def test_out_of_bounds_load_names_kernel_block_thread_address_line():
    text = _copy_kernel_text("oob_load")
    k = kernel_from_ptx(text, "oob_load")
    a = np.arange(100, dtype=np.uint32)          # 100 elements, but 128 threads read
    out = np.zeros(128, dtype=np.uint32)
    untouched = np.arange(7, dtype=np.float64)
    with pytest.raises(dptx.DptxMemoryError) as ei:
        launch(k, 2, 64, [out, a])
    msg = str(ei.value)
    assert "oob_load" in msg
    assert re.search(r"block\s*\(?1", msg), msg          # threads 100.. are in block 1
    assert re.search(r"thread\s*\(?\d+", msg), msg
    m = re.search(r"thread\s*(\d+)", msg)
    assert m and 36 <= int(m.group(1)) < 64, msg          # block 1, thread >= 36
    assert re.search(r"0x[0-9a-fA-F]+", msg), msg        # the address
    line = _line_of(text, "ld.global.u32 %r4")
    assert f"line {line}" in msg, msg
    assert np.array_equal(untouched, np.arange(7, dtype=np.float64))
    assert np.array_equal(a, np.arange(100, dtype=np.uint32))


def test_out_of_bounds_store_leaves_other_arrays_unchanged_and_process_continues():
    text = _copy_kernel_text("oob_store")
    k = kernel_from_ptx(text, "oob_store")
    a = np.arange(128, dtype=np.uint32)
    out = np.zeros(64, dtype=np.uint32)  # too small: threads 64.. store out of bounds
    with pytest.raises(dptx.DptxMemoryError) as ei:
        launch(k, 2, 64, [out, a])
    msg = str(ei.value)
    assert "oob_store" in msg and f"line {_line_of(text, 'st.global.u32')}" in msg, msg
    assert np.array_equal(a, np.arange(128, dtype=np.uint32))   # input not written
    # the process can run another kernel afterwards, correctly
    out2 = np.zeros(128, dtype=np.uint32)
    launch(kernel_from_ptx(_copy_kernel_text("ok_after"), "ok_after"), 2, 64, [out2, a])
    assert np.array_equal(out2, a + 1)


def test_null_pointer_and_negative_offset_raise():
    k = kernel_from_ptx(kernel_text(".param .u64 p", """
mov.u64 %rd1, 0;
ld.global.u32 %r1, [%rd1];
ret;""", name="nullk"), "nullk")
    with pytest.raises(dptx.DptxMemoryError) as ei:
        launch(k, 1, 1, [np.zeros(1, dtype=np.uint32)])
    assert "nullk" in str(ei.value)
    k2 = kernel_from_ptx(kernel_text(".param .u64 p", """
ld.param.u64 %rd1, [p];
cvta.to.global.u64 %rd1, %rd1;
st.global.u32 [%rd1+-4], %r1;
ret;""", name="negk"), "negk")
    buf = np.zeros(4, dtype=np.uint32)
    with pytest.raises(dptx.DptxMemoryError):
        launch(k2, 1, 1, [buf])
    assert (buf == 0).all()


def test_shared_memory_out_of_bounds_raises():
    k = kernel_from_ptx(kernel_text(".param .u64 p", """
mov.u32 %r0, %tid.x;
mov.u32 %r1, sh;
shl.b32 %r2, %r0, 4;
add.u32 %r3, %r1, %r2;
st.shared.u32 [%r3], %r0;
ret;""", name="shoob", decls=".shared .align 4 .b8 sh[64];\n"), "shoob")
    with pytest.raises(dptx.DptxMemoryError) as ei:
        launch(k, 1, 32, [np.zeros(1, dtype=np.uint32)])
    assert "shoob" in str(ei.value)


@pytest.mark.timeout(60)
def test_deadlock_threads_wait_at_different_barriers_raises():
    # threads 0..15 wait at barrier 1, the others at barrier 0, both expecting the whole
    # block: neither completes
    text = kernel_text(".param .u64 p", """
mov.u32 %r0, %tid.x;
setp.lt.u32 %p1, %r0, 16;
@%p1 bra OTHER;
bar.sync 0;
bra.uni END;
OTHER:
bar.sync 1;
END:
ret;""", name="dead1")
    with pytest.raises(dptx.DptxError) as ei:
        launch(kernel_from_ptx(text, "dead1"), 1, 64, [np.zeros(1, dtype=np.uint32)])
    assert "dead1" in str(ei.value)


@pytest.mark.timeout(60)
def test_deadlock_some_threads_skip_bar_sync_raises():
    # warp 1 skips the barrier and exits; warp 0 waits at a barrier for 64 threads that can
    # never all arrive
    text = kernel_text(".param .u64 p", """
mov.u32 %r0, %tid.x;
setp.ge.u32 %p1, %r0, 32;
@%p1 bra SKIP;
bar.sync 1, 64;
SKIP:
ret;""", name="dead2")
    line = _line_of(text, "bar.sync 1, 64")
    with pytest.raises(dptx.DptxError) as ei:
        launch(kernel_from_ptx(text, "dead2"), 1, 64, [np.zeros(1, dtype=np.uint32)])
    assert "dead2" in str(ei.value) and f"line {line}" in str(ei.value)
    # and the process can still run kernels
    a = np.arange(64, dtype=np.uint32)
    out = np.zeros(64, dtype=np.uint32)
    launch(kernel_from_ptx(_copy_kernel_text("after_dead"), "after_dead"), 1, 64, [out, a])
    assert np.array_equal(out, a + 1)


@pytest.mark.parametrize("inst,opcode", [
    ("frobnicate.b32 %r1, %r2;", "frobnicate.b32"),
    # a tensor-core form not supported: Volta's m8n8k4 with .f16 inputs (quad pairs)
    ("mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32 {%f1,%f2,%f3,%f4,%f5,%f6,%f7,%f8}, "
     "{%r1,%r2}, {%r5,%r6}, {%f1,%f2,%f3,%f4,%f5,%f6,%f7,%f8};", "mma.sync"),
    ("tcgen05.fence::before_thread_sync;", "tcgen05.fence"),
])
def test_unsupported_instruction_names_opcode_and_line(inst, opcode):
    text = kernel_text(".param .u64 p", "mov.u32 %r1, 1;\n" + inst + "\nret;", name="unsup")
    line = _line_of(text, inst.split()[0])
    with pytest.raises(dptx.PtxUnsupportedError) as ei:
        launch(kernel_from_ptx(text, "unsup"), 1, 1, [np.zeros(1, dtype=np.uint32)])
    msg = str(ei.value)
    assert opcode in msg and f"line {line}" in msg, msg


def test_launch_error_on_bad_arguments():
    k = kernel_from_ptx(_copy_kernel_text("argk"), "argk")
    with pytest.raises(dptx.LaunchError):
        launch(k, 1, 32, [np.zeros(32, dtype=np.uint32)])  # one argument missing
    with pytest.raises(dptx.LaunchError):
        launch(k, 1, 2048, [np.zeros(32, dtype=np.uint32), np.zeros(32, dtype=np.uint32)])


def test_local_memory_out_of_bounds_raises():
    text = (".version 7.8\n.target sm_80\n.address_size 64\n"
            ".visible .entry loob(.param .u32 idx)\n{\n\t.local .align 4 .b8 arr[16];\n"
            "\t.reg .b32 %r<4>;\n\t.reg .b64 %rd<4>;\n"
            "\tld.param.u32 %r1, [idx];\n\tmov.u64 %rd1, arr;\n\tmul.wide.u32 %rd2, %r1, 4;\n"
            "\tadd.u64 %rd3, %rd1, %rd2;\n\tcvta.local.u64 %rd3, %rd3;\n\tst.u32 [%rd3], %r1;\n\tret;\n}\n")
    k = kernel_from_ptx(text, "loob")
    launch(k, 1, 4, [np.uint32(3)])           # in bounds
    with pytest.raises(dptx.DptxMemoryError) as ei:
        launch(k, 1, 4, [np.uint32(1 << 20)])  # 4 MiB past a 16-byte array
    assert "loob" in str(ei.value)


def test_out_of_bounds_atomic_and_vector_access_raise():
    k = kernel_from_ptx(kernel_text(".param .u64 p, .param .u32 off", """
ld.param.u64 %rd1, [p];
cvta.to.global.u64 %rd1, %rd1;
ld.param.u32 %r1, [off];
cvt.u64.u32 %rd2, %r1;
add.u64 %rd1, %rd1, %rd2;
atom.global.add.u32 %r2, [%rd1], 1;
ret;""", name="atomoob"), "atomoob")
    buf = np.zeros(4, dtype=np.uint32)
    launch(k, 1, 1, [buf, np.uint32(12)])
    assert buf.tolist() == [0, 0, 0, 1]
    with pytest.raises(dptx.DptxMemoryError) as ei:
        launch(k, 1, 1, [buf, np.uint32(16)])
    assert "atomoob" in str(ei.value)
    assert buf.tolist() == [0, 0, 0, 1]
    k2 = kernel_from_ptx(kernel_text(".param .u64 p", """
ld.param.u64 %rd1, [p];
cvta.to.global.u64 %rd1, %rd1;
ld.global.v4.u32 {%r1, %r2, %r3, %r4}, [%rd1+16];
ret;""", name="vecoob"), "vecoob")
    with pytest.raises(dptx.DptxMemoryError):
        launch(k2, 1, 1, [np.zeros(6, dtype=np.uint32)])   # 24 bytes: elements 4..7 cross the end


def test_launch_error_too_many_args_and_too_much_shared():
    k = kernel_from_ptx(_copy_kernel_text("argk2"), "argk2")
    a = np.zeros(32, dtype=np.uint32)
    with pytest.raises(dptx.LaunchError):
        launch(k, 1, 32, [a, a, a])
    with pytest.raises(dptx.LaunchError):
        launch(k, 1, 32, [a, a], shared_mem=1 << 30)


def test_memory_error_in_kernel_with_barriers_and_in_called_function():
    text = kernel_text(".param .u64 p", GID + """
ld.param.u64 %rd1, [p];
cvta.to.global.u64 %rd1, %rd1;
bar.sync 0;
mul.wide.u32 %rd2, %r3, 8;
add.u64 %rd3, %rd1, %rd2;
st.global.u32 [%rd3], %r3;
bar.sync 0;
ret;""", name="barsoob")
    buf = np.zeros(40, dtype=np.uint32)      # 160 bytes: threads >= 20 store out of bounds
    with pytest.raises(dptx.DptxMemoryError) as ei:
        launch(kernel_from_ptx(text, "barsoob"), 1, 64, [buf])
    msg = str(ei.value)
    assert "barsoob" in msg and f"line {_line_of(text, 'st.global.u32')}" in msg, msg
    from ._util import HEADER, SCRATCH
    ftext = HEADER + """
.func poke(.param .b64 addr)
{
    .reg .b64 %a<2>;
    ld.param.b64 %a1, [addr];
    st.u32 [%a1], 1;
    ret;
}
.visible .entry callsoob(.param .u64 p)
{
""" + SCRATCH + """
ld.param.u64 %rd1, [p];
add.u64 %rd1, %rd1, 4096;
{
.param .b64 q;
st.param.b64 [q], %rd1;
call poke, (q);
}
ret;
}
"""
    with pytest.raises(dptx.DptxMemoryError) as ei:
        launch(kernel_from_ptx(ftext, "callsoob"), 1, 1, [np.zeros(4, dtype=np.uint32)])
    msg = str(ei.value)
    assert "callsoob" in msg and f"line {_line_of(ftext, 'st.u32 [%a1]')}" in msg, msg


ASSERTING = r'''
#include <cuda/std/cassert>
extern "C" __global__ void checked(int* out, int bad) {
    __shared__ int s[128];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = i;
    __syncthreads();
    assert(s[127 - threadIdx.x] != bad && "no bad element");
    out[i] = s[127 - threadIdx.x];
}
extern "C" __global__ void plain(int* out, int bad) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    assert(i != bad);
    out[i] = 2 * i;
}'''


@pytest.mark.parametrize("name", ["checked", "plain"])
def test_device_assert_names_file_line_condition_block_and_thread(name):
    """assert() calls __assertfail: the launch raises with the message, the source file and
    line, the function, and the failing block and thread; without a failure it runs."""
    from ._util import kernel_from_cuda
    k = kernel_from_cuda(ASSERTING, name, options=("--std=c++17",))
    out = np.zeros(256, np.int32)
    launch(k, 2, 128, [out, np.int32(-1)])
    want = (np.arange(256).reshape(2, 128)[:, ::-1].ravel() if name == "checked" else 2 * np.arange(256))
    np.testing.assert_array_equal(out, want)
    with pytest.raises(dptx.DptxError) as ei:
        launch(k, 2, 128, [out, np.int32(200)])
    msg = str(ei.value)
    thread = 127 - 72 if name == "checked" else 72       # the thread that read 200
    assert f"block 1 (1, 0, 0), thread {thread} " in msg, msg
    assert "module.cu:" in msg and "Assertion `" in msg and "failed" in msg
    assert (f"void {name}(int *, int)") in msg
