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


COOPERATIVE = r"""
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;
extern "C" __global__ void groups(const int* x, int* tile_sums, int* ranks, int* coalesced) {
    auto block = cg::this_thread_block();
    auto tile = cg::tiled_partition<16>(block);
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int s = cg::reduce(tile, x[i], cg::plus<int>());
    if (tile.thread_rank() == 0) tile_sums[i / 16] = s;
    ranks[i] = tile.meta_group_rank() * 100 + (int)tile.thread_rank();
    block.sync();
    coalesced[i] = -1;
    if (x[i] % 3 == 0) {
        auto g = cg::coalesced_threads();     // the lanes of this warp that took the branch
        coalesced[i] = (int)g.size() * 100 + (int)g.thread_rank();
    }
}"""


def test_cooperative_groups_tiles_and_coalesced_threads():
    """cooperative_groups through NVRTC (its libcu++ headers come from nvidia-cuda-cccl)."""
    k = kernel_from_cuda(COOPERATIVE, "groups", options=("--std=c++17",))
    n = 256
    x = np.random.default_rng(2).integers(-50, 50, n).astype(np.int32)
    sums, ranks, co = np.zeros(n // 16, np.int32), np.zeros(n, np.int32), np.zeros(n, np.int32)
    launch(k, 2, 128, [x, sums, ranks, co])
    np.testing.assert_array_equal(sums, x.reshape(-1, 16).sum(1))
    t = np.arange(n) % 128
    np.testing.assert_array_equal(ranks, t // 16 * 100 + t % 16)
    want = np.full(n, -1)
    for w in range(n // 32):
        lanes = np.flatnonzero(x[32 * w:32 * w + 32] % 3 == 0)
        want[32 * w + lanes] = len(lanes) * 100 + np.arange(len(lanes))
    np.testing.assert_array_equal(co, want)


CUB = r"""
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/warp/warp_reduce.cuh>
extern "C" __global__ void cubk(const int* x, int* sums, int* scan, int* warp_sums) {
    using Reduce = cub::BlockReduce<int, 128>;
    using Scan = cub::BlockScan<int, 128>;
    using Warp = cub::WarpReduce<int>;
    __shared__ typename Reduce::TempStorage reduce_tmp;
    __shared__ typename Scan::TempStorage scan_tmp;
    __shared__ typename Warp::TempStorage warp_tmp[4];
    int i = blockIdx.x * 128 + threadIdx.x, v = x[i], s = Reduce(reduce_tmp).Sum(v), e;
    if (threadIdx.x == 0) sums[blockIdx.x] = s;
    Scan(scan_tmp).ExclusiveSum(v, e);
    scan[i] = e;
    int w = Warp(warp_tmp[threadIdx.x / 32]).Sum(v);
    if (threadIdx.x % 32 == 0) warp_sums[i / 32] = w;
}"""


def test_cub_block_reduce_scan_and_warp_reduce():
    k = kernel_from_cuda(CUB, "cubk", options=("--std=c++17",))
    x = np.random.default_rng(3).integers(-1000, 1000, 512).astype(np.int32)
    sums, scan, ws = np.zeros(4, np.int32), np.zeros(512, np.int32), np.zeros(16, np.int32)
    launch(k, 4, 128, [x, sums, scan, ws])
    b = x.reshape(4, 128)
    np.testing.assert_array_equal(sums, b.sum(1))
    np.testing.assert_array_equal(scan, (np.cumsum(b, 1) - b).ravel())
    np.testing.assert_array_equal(ws, x.reshape(16, 32).sum(1))
