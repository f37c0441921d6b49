"""Kernel attributes as CuPy has them: from the PTX where it says (checked against the CUDA
source's declarations), from ptxas where only it decides, and max_threads_per_block as the
CUDA occupancy calculator limits it."""
import re

import pytest

import dptx
from tests.test_ptxas import ptxas

needs_ptxas = pytest.mark.skipif(not ptxas(), reason="needs ptxas (nvidia-cuda-nvcc, the test extra)")

SRC = r'''
__constant__ float taps[4];
__constant__ double unused[8];
__device__ int table[8];
extern "C" __global__ void filt(float* y, int n) {
    __shared__ float tile[64];
    float window[40];                       // indexed by a variable: stays in local memory
    int i = threadIdx.x;
    for (int k = 0; k < 40; k++) window[k] = y[(i + k) % n];
    tile[i % 64] = window[i % 40] * taps[i % 4];
    __syncthreads();
    y[i] = tile[(i + 1) % 64] + table[i % 8];
}
extern "C" __global__ void __launch_bounds__(256) bounded(float* y) { y[threadIdx.x] = 1.0f; }
'''


@pytest.fixture(scope="module")
def mod():
    return dptx.RawModule(SRC)


def test_what_the_ptx_says(mod):
    k = mod.get_function("filt")
    assert k.shared_size_bytes == 64 * 4
    assert k.const_size_bytes == 4 * 4                 # taps; `unused` is not used by filt
    major, minor = re.search(r"^\.version (\d+)\.(\d+)", k.ptx, re.M).groups()
    assert k.ptx_version == int(major) * 10 + int(minor)
    assert k.binary_version == 80 and k.cache_mode_ca is False
    assert dptx.RawModule(SRC, arch="compute_75").get_function("filt").binary_version == 75
    assert k.max_dynamic_shared_size_bytes == 48 * 1024 - 64 * 4
    assert k.preferred_shared_memory_carveout == -1


@needs_ptxas
def test_what_ptxas_allocates(mod):
    k = mod.get_function("filt")
    assert k.local_size_bytes == 40 * 4                # the window array
    assert 8 <= k.num_regs <= 255
    assert k.max_threads_per_block == 1024
    assert mod.get_function("bounded").max_threads_per_block == 256   # __launch_bounds__
    attrs = k.attributes
    assert set(attrs) == {"max_threads_per_block", "shared_size_bytes", "const_size_bytes",
                          "local_size_bytes", "num_regs", "ptx_version", "binary_version",
                          "cache_mode_ca", "max_dynamic_shared_size_bytes",
                          "preferred_shared_memory_carveout"}
    assert attrs["num_regs"] == k.num_regs and attrs["shared_size_bytes"] == 256


@pytest.mark.parametrize("regs, threads", [(32, 1024), (64, 1024), (72, 896), (128, 512),
                                           (255, 256)])
def test_register_limit_as_the_occupancy_calculator_counts(mod, regs, threads):
    # 64K registers per block, allocated per warp in units of 256 (CUDA occupancy calculator)
    k = dptx.RawModule(SRC).get_function("filt")
    k._attrs._assembled = {"registers": regs, "stack": 0}
    assert k.max_threads_per_block == threads


def test_settable_attributes_are_checked(mod):
    k = dptx.RawModule(SRC).get_function("filt")
    k.max_dynamic_shared_size_bytes = 100 * 1024
    assert k.max_dynamic_shared_size_bytes == 100 * 1024
    with pytest.raises(ValueError, match="max_dynamic_shared_size_bytes must be in 0..232192"):
        k.max_dynamic_shared_size_bytes = 227 * 1024
    k.preferred_shared_memory_carveout = 50
    assert k.preferred_shared_memory_carveout == 50
    with pytest.raises(ValueError, match="percentage"):
        k.preferred_shared_memory_carveout = 101
