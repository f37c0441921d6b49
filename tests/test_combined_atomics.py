"""Integer reductions a warp combines (issue 18): where every active lane of the warp form
adds to one address (``atomicAdd(&count, v)`` with the result unused: ``red.add``), one atomic
add of the lanes' sum replaces 32; exact, since integer addition wraps modulo 2**n whatever
the order. Checked against numpy in every executor form, with divergent lanes, varying values,
64-bit and shared-memory counters, lanes at different addresses (not combined) and a fault."""
import numpy as np
import pytest

import dptx
from dptx import cpu

SOURCE = r'''
extern "C" __global__ void counters(const int* x, unsigned* count, unsigned long long* big,
                                    int* signed_sum, unsigned* hist, int n) {
    __shared__ unsigned local;
    if (threadIdx.x == 0) local = 0;
    __syncthreads();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicAdd(&count[0], 1u);                           // every lane: one address
        if (x[i] % 3 == 0) atomicAdd(&count[1], (unsigned)x[i]);    // divergent lanes
        atomicAdd(&big[blockIdx.x % 2], (unsigned long long)x[i] * 4000000000ull);
        atomicAdd(signed_sum, -x[i]);
        atomicAdd(&hist[x[i] & 15], 1u);                    // lanes at different addresses
        atomicAdd(&local, 1u);                              // shared memory
    }
    __syncthreads();
    if (threadIdx.x == 0) atomicAdd(&count[2], local);
}
extern "C" __global__ void tickets(const unsigned* v, unsigned* acc, unsigned* old, int n) {
    // the values returned: each thread's old value, as if the adds came one after another
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && v[i] != 0) old[i] = atomicAdd(acc, v[i]);
}
extern "C" __global__ void bad_counter(unsigned* count, int k) {
    atomicAdd(&count[k], 1u);
}
'''


@pytest.fixture(params=["0", "1", "all"])
def mode(request, monkeypatch):
    monkeypatch.setenv("DPTX_CPU_VECTOR", request.param)
    return request.param


@pytest.fixture(scope="module")
def kernels():
    mod = dptx.RawModule(SOURCE)
    return {name: mod.get_function(name) for name in mod.kernel_names}


@pytest.mark.parametrize("n", [4096, 1000])      # full warps, and a partial last one
def test_combined_integer_reductions_match_numpy(kernels, mode, n):
    x = np.random.default_rng(n).integers(-50_000, 50_000, n).astype(np.int32)
    count = np.zeros(3, np.uint32)
    big = np.zeros(2, np.uint64)
    signed_sum = np.zeros(1, np.int32)
    hist = np.zeros(16, np.uint32)
    cpu.launch(kernels["counters"], ((n + 127) // 128,), (128,), [x, count, big, signed_sum, hist,
                                                                  np.int32(n)])
    assert count[0] == n
    assert count[1] == x[x % 3 == 0].astype(np.uint32).sum(dtype=np.uint32)
    blocks = np.arange(n) // 128
    for b in (0, 1):
        part = (x[blocks % 2 == b].astype(np.uint64) * np.uint64(4_000_000_000)).sum(dtype=np.uint64)
        assert big[b] == part
    assert signed_sum[0] == np.int32((-x.astype(np.int64)).sum() % (1 << 32) - (1 << 32)
                                     if (-x.astype(np.int64)).sum() % (1 << 32) >= 1 << 31
                                     else (-x.astype(np.int64)).sum() % (1 << 32))
    np.testing.assert_array_equal(hist, np.bincount(x & 15, minlength=16))
    assert count[2] == n


def test_a_combined_reduction_out_of_bounds_names_the_first_lane(kernels, mode):
    count = np.zeros(4, np.uint32)
    with pytest.raises(dptx.DptxMemoryError, match=r"kernel bad_counter, block 0 .*thread 0 .*"
                                                   r"40 bytes into argument 0"):
        cpu.launch(kernels["bad_counter"], (1,), (64,), [count, np.int32(10)])
    assert not count.any()
    cpu.launch(kernels["bad_counter"], (2,), (64,), [count, np.int32(3)])
    np.testing.assert_array_equal(count, [0, 0, 0, 128])


@pytest.mark.parametrize("n", [4096, 999])
def test_combined_adds_return_what_one_after_another_would(kernels, mode, n):
    """Sorted by the old value each thread got, the adds tile [0, total) with no gap or
    overlap: some order of one-at-a-time adds explains every returned value."""
    v = np.random.default_rng(n).integers(0, 5, n).astype(np.uint32)    # zeros: idle lanes
    acc = np.zeros(1, np.uint32)
    old = np.full(n, 0xFFFFFFFF, np.uint32)
    cpu.launch(kernels["tickets"], ((n + 127) // 128,), (128,), [v, acc, old, np.int32(n)])
    assert acc[0] == v.sum()
    done = v != 0
    assert (old[~done] == 0xFFFFFFFF).all()
    order = np.argsort(old[done], kind="stable")
    starts, sizes = old[done][order].astype(np.int64), v[done][order].astype(np.int64)
    np.testing.assert_array_equal(starts, np.concatenate([[0], np.cumsum(sizes)[:-1]]))
