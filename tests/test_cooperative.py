"""Cooperative launches (cudaLaunchCooperativeKernel; CuPy's enable_cooperative_groups):
cooperative groups' this_grid().sync() on the CPU executor, every block at once on a thread
of its own, against numpy; the errors of a grid too large and of a grid.sync() in a launch
that is not cooperative."""
import numpy as np
import pytest

import dptx
from dptx import cpu

GRID_SYNC = r'''#include <cooperative_groups.h>
namespace cg = cooperative_groups;
extern "C" __global__ void rotate_sum(float* a, float* b, int n, int rounds) {
    // each round: every thread writes a[i], the whole grid meets, then every thread reads
    // its neighbour's value, which another block wrote
    cg::grid_group grid = cg::this_grid();
    int i = grid.thread_rank();
    for (int r = 0; r < rounds; r++) {
        if (i < n) a[i] = i + r;
        grid.sync();
        if (i < n) b[i] += a[(i + 1) % n];
        grid.sync();
    }
}'''


def reference(n, rounds):
    i = np.arange(n)
    return sum(((i + 1) % n + r).astype(np.float32) for r in range(rounds))


@pytest.fixture(scope="module")
def kernel():
    return dptx.RawModule(GRID_SYNC, options=("-rdc=true",)).get_function("rotate_sum")


@pytest.mark.parametrize("mode", ["", "0"])
def test_grid_sync_in_a_cooperative_launch(kernel, monkeypatch, mode):
    monkeypatch.setenv("DPTX_CPU_VECTOR", mode)
    nb, bs = 24, 64
    n = nb * bs - 5
    a, b = np.zeros(nb * bs, np.float32), np.zeros(nb * bs, np.float32)
    cpu.launch(kernel, (nb,), (bs,), [a, b, np.int32(n), np.int32(3)], cooperative=True)
    assert np.array_equal(b[:n], reference(n, 3))


def test_grid_sync_without_a_cooperative_launch_traps_and_says_why(kernel):
    a, b = np.zeros(64, np.float32), np.zeros(64, np.float32)
    with pytest.raises(dptx.DptxError, match="enable_cooperative_groups=True"):
        cpu.launch(kernel, (2,), (32,), [a, b, np.int32(64), np.int32(1)])


def test_a_cooperative_grid_too_large_is_refused(kernel):
    from dptx.device.launch_config import MAX_COOPERATIVE_BLOCKS
    a = np.zeros(32, np.float32)
    with pytest.raises(dptx.LaunchError, match="too large for a cooperative launch"):
        cpu.launch(kernel, (MAX_COOPERATIVE_BLOCKS + 1,), (1,),
                   [a, a, np.int32(1), np.int32(1)], cooperative=True)
    with pytest.raises(dptx.LaunchError, match="whole grid"):
        cpu.launch(kernel, (4,), (1,), [a, a, np.int32(1), np.int32(1)], blocks=range(2),
                   cooperative=True)


FAULTING = r'''#include <cooperative_groups.h>
namespace cg = cooperative_groups;
extern "C" __global__ void faulting(float* a, int n, int bad) {
    cg::grid_group grid = cg::this_grid();
    int i = grid.thread_rank();
    if (blockIdx.x == bad && threadIdx.x == 0) a[i + (1 << 28)] = 1.0f;   // out of bounds
    grid.sync();
    if (i < n) a[i] += 1.0f;
    grid.sync();
    if (i < n) a[i] += 1.0f;
}'''


@pytest.mark.timeout(120)
def test_a_block_that_faults_does_not_leave_the_others_waiting_at_grid_sync():
    """A GPU aborts the whole grid on a fault; here the other blocks would wait at
    grid.sync() for the stopped one forever: their waits are ended and the launch raises
    the fault, naming the block."""
    k = dptx.RawModule(FAULTING, options=("-rdc=true",)).get_function("faulting")
    a = np.zeros(8 * 64, np.float32)
    with pytest.raises(dptx.DptxMemoryError, match="block 3"):
        cpu.launch(k, (8,), (64,), [a, np.int32(len(a)), np.int32(3)], cooperative=True)
