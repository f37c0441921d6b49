"""GPU execution through CuPy (skipped without a GPU): the corpus on the GPU against the CPU
executor, and a sub-range of blocks through the block-offset rewrite."""
import numpy as np
import pytest

import dptx
from dptx import cpu, gpu
from dptx.corpus import CASES, check, source

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not gpu.available(), reason="needs CuPy and an NVIDIA GPU")]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_gpu_matches_cpu(case):
    kernel = dptx.RawModule(source(case), options=case.options).get_function(case.kernel)
    args = case.make_args(np.random.default_rng(7))
    on_cpu = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    on_gpu = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    cpu.launch(kernel, case.grid, case.block, on_cpu, shared_mem=case.shared_mem)
    gpu.launch(kernel, case.grid, case.block, on_gpu, shared_mem=case.shared_mem)
    expected = case.reference([a.copy() if isinstance(a, np.ndarray) else a for a in args])
    for i in expected:
        exact = case.deterministic and case.rtol == 0 and case.atol == 0
        check(on_gpu[i], on_cpu[i], 0 if exact else case.rtol, 0 if exact else case.atol,
              f"{case.name} argument {i}: gpu vs cpu")


def test_gpu_sub_range_matches_whole_launch():
    kernel = dptx.RawModule(r'''extern "C" __global__ void ids(int* out) {
        int b = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
        out[b * blockDim.x + threadIdx.x] = b * 1000 + threadIdx.x + gridDim.x * gridDim.y * gridDim.z;
    }''').get_function("ids")
    grid = (3, 4, 2)
    whole = np.zeros(24 * 32, np.int32)
    gpu.launch(kernel, grid, 32, [whole])
    parts = np.zeros_like(whole)
    for a, b in ((0, 5), (5, 17), (17, 24)):
        gpu.launch(kernel, grid, 32, [parts], blocks=range(a, b))
    assert np.array_equal(parts, whole)
    assert whole[32 * 23 + 5] == 23 * 1000 + 5 + 24
