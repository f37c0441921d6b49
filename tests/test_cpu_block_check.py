"""Whole-block bounds checks of plain kernels (dptx/cpu/renderer/block_check.py): which accesses one
check per block covers, and that blocks the check refuses (partial blocks, out-of-bounds or
wrapping indices) run the checked loop, which computes the same results and reports the
same faults. Results are compared with numpy."""
import numpy as np
import pytest

import dptx
from dptx import cpu
from dptx.cpu.renderer import codegen
from dptx.cpu.renderer.function import Function
from dptx.cpu.renderer.block_check import trusted_sites
from dptx.errors import DptxMemoryError

KERNELS = r'''
extern "C" __global__ void axpy(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
// 2-D blocks: tid.y steps by a constant row of 16 elements
extern "C" __global__ void rows16(const int* src, int* dst) {
    int i = blockIdx.x * (blockDim.x * blockDim.y) + threadIdx.y * 16 + threadIdx.x;
    dst[i] = src[i] * 2 + (int)threadIdx.y;
}
// the index wraps around 2**32 for the first 16 threads
extern "C" __global__ void shifted(const float* src, float* dst, unsigned shift) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    dst[i] = src[i + shift];
}
// an address chosen per thread (two definitions of the pointer): checked per thread
extern "C" __global__ void either(const float* a, const float* b, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    const float* p = (i & 1) ? a : b;
    out[i] = p[i % n];
}
'''


@pytest.fixture(scope="module")
def module():
    return dptx.RawModule(KERNELS)


def sites_of(kernel):
    translation = codegen.Module(kernel.module, kernel.name, "0")
    fn = Function(translation, translation.kernel)
    fn.declare()
    return trusted_sites(fn)


def test_element_wise_accesses_are_covered(module):
    sites = sites_of(module.get_function("axpy"))
    assert sorted(s.steps for s in sites.values()) == [(4, 0, 0)] * 3     # x[i], y[i] twice
    sites = sites_of(module.get_function("rows16"))
    assert sorted(s.steps for s in sites.values()) == [(4, 64, 0)] * 2
    # out[i] is covered; p[i % n] (two definitions of p, and a remainder) is not
    assert [s.steps for s in sites_of(module.get_function("either")).values()] == [(4, 0, 0)]


@pytest.mark.parametrize("n", [4096, 4000, 1])
def test_full_and_partial_blocks(module, n):
    k = module.get_function("axpy")
    rng = np.random.default_rng(4)
    x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    expected = (np.float64(3) * x + y).astype(np.float32)   # one fma, rounded once
    cpu.launch(k, ((n + 255) // 256,), (256,), [np.float32(3), x, y, np.int32(n)])
    np.testing.assert_array_equal(y, expected)


def test_two_dimensional_blocks(module):
    k = module.get_function("rows16")
    src = np.arange(8 * 256, dtype=np.int32)
    dst = np.zeros_like(src)
    cpu.launch(k, (8,), (16, 16), [src, dst])
    np.testing.assert_array_equal(dst, src * 2 + (np.arange(src.size) % 256) // 16)


def test_out_of_bounds_block_reports_the_first_faulting_thread(module):
    k = module.get_function("axpy")
    x = np.ones(1000, np.float32)           # n says 1024: threads 1000.. read past x
    y = np.ones(1024, np.float32)
    with pytest.raises(DptxMemoryError, match=r"block 3 \(3, 0, 0\), thread 232 \(232, 0, 0\)"):
        cpu.launch(k, (4,), (256,), [np.float32(1), x, y, np.int32(1024)])
    # blocks 0-2 may have run; the faulting block wrote nothing at or past its first fault
    np.testing.assert_array_equal(y[1000:], 1)


def test_wrapping_index_faults_in_the_checked_loop(module):
    k = module.get_function("shifted")
    src = np.arange(256, dtype=np.float32)
    dst = np.zeros(256, np.float32)
    cpu.launch(k, (1,), (128,), [src, dst, np.uint32(16)])
    np.testing.assert_array_equal(dst[:128], src[16:144])
    with pytest.raises(DptxMemoryError, match=r"thread 0 \(0, 0, 0\)"):
        cpu.launch(k, (1,), (128,), [src, dst, np.uint32(2**32 - 16)])


def test_per_thread_pointers_stay_checked(module):
    k = module.get_function("either")
    a = np.arange(64, dtype=np.float32)
    b = -np.arange(64, dtype=np.float32)
    out = np.zeros(256, np.float32)
    cpu.launch(k, (2,), (128,), [a, b, out, np.int32(64)])
    i = np.arange(256)
    np.testing.assert_array_equal(out, np.where(i & 1, a[i % 64], b[i % 64]))
