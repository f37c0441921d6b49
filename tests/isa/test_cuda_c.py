"""CUDA C kernels through NVRTC: the PTX idioms a compiler emits for common intrinsics."""
import numpy as np

from ._util import kernel_from_cuda, launch

SRC = r"""
#include <cuda_fp16.h>
extern "C" __global__ void intrinsics(const unsigned *a, const unsigned *b, unsigned *o, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned x = a[i], y = b[i];
    o[i * 8 + 0] = __popc(x);
    o[i * 8 + 1] = __brev(x);
    o[i * 8 + 2] = __funnelshift_l(x, y, i);
    o[i * 8 + 3] = __byte_perm(x, y, 0x5140);
    o[i * 8 + 4] = __clz(x);
    o[i * 8 + 5] = __umulhi(x, y);
    o[i * 8 + 6] = __sad(x, y, 7u);
    o[i * 8 + 7] = __ffs(x);
}
extern "C" __global__ void warpsum(const float *x, float *out) {
    float v = x[blockIdx.x * blockDim.x + threadIdx.x];
    for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
    __shared__ float part[32];
    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = v;
    __syncthreads();
    if (threadIdx.x == 0) {
        float s = 0.f;
        for (int w = 0; w < blockDim.x / 32; ++w) s += part[w];
        out[blockIdx.x] = s;
    }
}
extern "C" __global__ void halfops(const float *x, unsigned short *h, float *back) {
    int i = threadIdx.x;
    __half v = __float2half_rn(x[i]);
    h[i] = __half_as_ushort(v);
    back[i] = __half2float(__hmul(v, __float2half_rn(2.0f)));
}
extern "C" __global__ void histo(const int *v, int n, unsigned *bins) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        atomicAdd(&bins[v[i] & 15], 1u);
}
"""


def _s32(v):
    return v - (1 << 32) if v >> 31 else v


def _ref_byte_perm(x, y, s):
    src = (y << 32) | x
    r = 0
    for k in range(4):
        sel = (s >> (4 * k)) & 7
        r |= ((src >> (8 * sel)) & 0xFF) << (8 * k)
    return r


def test_integer_intrinsics():
    k = kernel_from_cuda(SRC, "intrinsics")
    n = 40
    rng = np.random.default_rng(3)
    a = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    a[0] = 0
    b = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    o = np.zeros(n * 8, dtype=np.uint32)
    launch(k, 2, 32, [a, b, o, np.int32(n)])
    o = o.reshape(n, 8)
    for i in range(n):
        x, y = int(a[i]), int(b[i])
        sh = i & 31
        want = [bin(x).count("1"), int(format(x, "032b")[::-1], 2),
                ((((y << 32) | x) << sh) >> 32) & 0xFFFFFFFF, _ref_byte_perm(x, y, 0x5140),
                32 - x.bit_length(), (x * y) >> 32, (abs(_s32(x) - _s32(y)) + 7) & 0xFFFFFFFF,
                (x & -x).bit_length() if x else 0]
        assert o[i].tolist() == want, i


def test_warp_shuffle_reduction_and_syncthreads():
    k = kernel_from_cuda(SRC, "warpsum")
    x = (np.arange(3 * 256) % 17).astype(np.float32) - 8
    out = np.zeros(3, dtype=np.float32)
    launch(k, 3, 256, [x, out])
    np.testing.assert_array_equal(out, x.reshape(3, 256).sum(axis=1))


def test_half_conversion_intrinsics():
    k = kernel_from_cuda(SRC, "halfops")
    x = np.array([0.1, 1.0, -2.5, 65504.0, 1e-6, 3.14159, 70000.0, -0.0], dtype=np.float32)
    h = np.zeros(8, dtype=np.uint16)
    back = np.zeros(8, dtype=np.float32)
    launch(k, 1, 8, [x, h, back])
    with np.errstate(over="ignore"):
        xh = x.astype(np.float16)
        want_back = (xh * np.float16(2)).astype(np.float32)
    np.testing.assert_array_equal(h, xh.view(np.uint16))
    np.testing.assert_array_equal(back, want_back)


def test_grid_stride_histogram_atomics():
    k = kernel_from_cuda(SRC, "histo")
    v = (np.arange(5000, dtype=np.int64) * 7919 % 1000).astype(np.int32)
    bins = np.zeros(16, dtype=np.uint32)
    launch(k, 4, 128, [v, np.int32(len(v)), bins])
    np.testing.assert_array_equal(bins, np.bincount(v & 15, minlength=16))
