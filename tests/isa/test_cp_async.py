"""cp.async (sm_80 asynchronous copies from global to shared memory): CUDA's
__pipeline_memcpy_async and the masked copies Triton emits (src-size, ignore-src)."""
import numpy as np
import pytest

from ._util import GID, kernel_from_cuda, launch, ptx_kernel

PIPELINE = r'''
#include <cuda_pipeline.h>
extern "C" __global__ void staged(const float4* x, float4* y) {
    __shared__ float4 tile[2][64];
    int t = threadIdx.x, base = blockIdx.x * 128;
    __pipeline_memcpy_async(&tile[0][t], &x[base + t], sizeof(float4));
    __pipeline_commit();
    __pipeline_memcpy_async(&tile[1][t], &x[base + 64 + t], sizeof(float4));
    __pipeline_commit();
    __pipeline_wait_prior(1);
    __syncthreads();
    float4 a = tile[0][63 - t];
    __pipeline_wait_prior(0);
    __syncthreads();
    float4 b = tile[1][63 - t];
    y[blockIdx.x * 64 + t] = make_float4(a.x + b.w, a.y + b.z, a.z + b.y, a.w + b.x);
}'''


def test_pipeline_memcpy_async_from_cuda():
    k = kernel_from_cuda(PIPELINE, "staged")
    assert "cp.async.ca.shared.global" in k.ptx or "cp.async.cg.shared.global" in k.ptx
    x = np.random.default_rng(4).random((4 * 128, 4), dtype=np.float32)
    y = np.zeros((4 * 64, 4), np.float32)
    launch(k, 4, 64, [x, y])
    blocks = x.reshape(4, 2, 64, 4)
    a = blocks[:, 0, ::-1]
    b = blocks[:, 1, ::-1, ::-1]
    np.testing.assert_array_equal(y, (a + b).reshape(-1, 4))


MASKED = """
ld.param.u64 %rd1, [pin];
cvta.to.global.u64 %rd1, %rd1;
ld.param.u32 %r4, [psize];
mov.u32 %r5, shbuf;
shl.b32 %r6, %r0, 4;
add.u32 %r5, %r5, %r6;
mul.wide.u32 %rd2, %r0, 16;
add.u64 %rd3, %rd1, %rd2;
setp.gt.u32 %p1, %r0, 5;
@%p1 mov.u32 %r4, 16;
cp.async.cg.shared.global [%r5], [%rd3], 16, %r4;
cp.async.commit_group;
cp.async.wait_group 0;
bar.sync 0;
ld.shared.v4.u32 {%r7, %r8, %r9, %r10}, [%r5];
ld.param.u64 %rd4, [pout];
cvta.to.global.u64 %rd4, %rd4;
add.u64 %rd4, %rd4, %rd2;
st.global.v4.u32 [%rd4], {%r7, %r8, %r9, %r10};
ret;"""


@pytest.mark.parametrize("src_size", [0, 1, 5, 15, 16])
def test_cp_async_src_size_zero_fills(src_size):
    """Threads 0..5 copy only src-size bytes (the rest of their 16 is zero); the others copy
    all 16. With src-size 0 nothing is read: the source may even lie past the buffer."""
    text = ptx_kernel(".param .u64 pout, .param .u64 pin, .param .u32 psize",
                      "mov.u32 %r0, %tid.x;\n" + MASKED,
                      decls=".shared .align 16 .b8 shbuf[512];")
    x = np.arange(32 * 16, dtype=np.uint8)
    out = np.zeros(32 * 16, np.uint8)
    launch(text, 1, 32, [out, x, np.uint32(src_size)])
    want = x.reshape(32, 16).copy()
    want[:6, src_size:] = 0
    np.testing.assert_array_equal(out.reshape(32, 16), want)


def test_cp_async_ignore_src_predicate_and_4_byte_copies():
    k = ptx_kernel(".param .u64 pout, .param .u64 pin", GID + """
ld.param.u64 %rd1, [pin];
cvta.to.global.u64 %rd1, %rd1;
mov.u32 %r5, shbuf;
shl.b32 %r6, %r0, 2;
add.u32 %r5, %r5, %r6;
mul.wide.u32 %rd2, %r0, 4;
add.u64 %rd3, %rd1, %rd2;
and.b32 %r7, %r0, 1;
setp.eq.u32 %p1, %r7, 1;
cp.async.ca.shared.global [%r5], [%rd3], 4, %p1;
cp.async.wait_all;
bar.sync 0;
ld.shared.u32 %r8, [%r5];
ld.param.u64 %rd4, [pout];
cvta.to.global.u64 %rd4, %rd4;
add.u64 %rd4, %rd4, %rd2;
st.global.u32 [%rd4], %r8;
ret;""", decls=".shared .align 4 .b8 shbuf[256];")
    x = np.arange(1, 65, dtype=np.uint32)
    out = np.full(64, 7, np.uint32)
    launch(k, 1, 64, [out, x])
    np.testing.assert_array_equal(out, np.where(np.arange(64) % 2 == 1, 0, x))


def test_cp_async_out_of_bounds_source_faults():
    import dptx
    text = ptx_kernel(".param .u64 pout, .param .u64 pin, .param .u32 psize",
                      "mov.u32 %r0, %tid.x;\nadd.u32 %r0, %r0, 30;\n" + MASKED,
                      decls=".shared .align 16 .b8 shbuf[1024];")
    x = np.arange(32 * 16, dtype=np.uint8)
    with pytest.raises(dptx.DptxMemoryError, match="cp.async"):
        launch(text, 1, 32, [np.zeros(64 * 16, np.uint8), x, np.uint32(16)])
