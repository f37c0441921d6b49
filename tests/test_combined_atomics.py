"""Reductions a warp combines (issue 18): where every active lane of the warp form adds to one
address (``atomicAdd(&count, v)``), one atomic replaces 32. Integers: one add of the lanes'
sum, exact since integer addition wraps modulo 2**n whatever the order. Floats: the lanes'
adds computed one after the other in lane order, stored with one compare-and-swap, bit for
bit what one-at-a-time atomics give (checked against a sequential reference with one native
thread, where the order is the launch's). Also the ISA's flush of subnormals by
``atom/red.add.f32`` in global memory (not in shared memory), in every form. Checked against
numpy in every executor form, with divergent lanes, varying values, 64-bit and shared-memory
counters, lanes at different addresses (not combined) and a fault."""
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
extern "C" __global__ void float_sums(const float* x, float* s, float* old, const double* xd,
                                      double* sd, double* oldd, float* per_block, int n) {
    __shared__ float sh;
    if (threadIdx.x == 0) sh = 0.0f;
    __syncthreads();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && x[i] != 0.0f) {                // zeros: idle lanes
        old[i] = atomicAdd(&s[0], x[i]);        // global f32: flushed, one address
        oldd[i] = atomicAdd(sd, xd[i]);         // global f64
        atomicAdd(&sh, x[i]);                   // shared f32: subnormals kept
        atomicAdd(&s[1 + (i & 3)], x[i]);       // lanes at four addresses
    }
    __syncthreads();
    if (threadIdx.x == 0) per_block[blockIdx.x] = sh;
}
extern "C" __global__ void bad_float(float* s, int k) {
    atomicAdd(&s[k], 1.0f);
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


def _ftz(v: np.float32) -> np.float32:
    return np.float32(np.copysign(0.0, v)) if 0 < abs(v) < 2.0 ** -126 else v


def _chain(init, values, flush: bool):
    """One-at-a-time adds in order: (final value, the value each add returned); f32 global
    flushes inputs and result (the ISA's atom.add.f32 on global memory)."""
    acc, olds = init, []
    for v in values:
        olds.append(acc)
        acc = _ftz(np.float32(_ftz(acc) + _ftz(v))) if flush else type(acc)(acc + v)
    return acc, olds


@pytest.mark.parametrize("n", [2048, 777])
def test_combined_float_adds_match_one_at_a_time_adds_bit_for_bit(kernels, mode, n):
    rng = np.random.default_rng(n)
    x = (rng.standard_normal(n) * 1e-37).astype(np.float32)
    x[rng.random(n) < 0.4] *= np.float32(1e-3)          # subnormals (flushed in global memory)
    x[rng.random(n) < 0.2] = 0.0                        # idle lanes
    xd = rng.standard_normal(n) * np.exp(rng.uniform(-30, 30, n))
    s = np.zeros(5, np.float32)
    s[0] = np.float32(1e-40)                            # a subnormal in memory: returned as is
    old = np.full(n, 7.0, np.float32)
    sd, oldd = np.full(1, 0.5), np.full(n, 7.0)
    blocks = (n + 127) // 128
    per_block = np.zeros(blocks, np.float32)
    cpu.launch(kernels["float_sums"], (blocks,), (128,),
               [x, s, old, xd, sd, oldd, per_block, np.int32(n)], threads=1)
    live = np.flatnonzero(x != 0)
    want, olds = _chain(np.float32(1e-40), x[live], flush=True)
    assert s[0].tobytes() == want.tobytes()
    np.testing.assert_array_equal(old[live].view(np.uint32), np.array(olds, np.float32).view(np.uint32))
    assert (old[x == 0] == 7.0).all()
    assert olds[0] == np.float32(1e-40)
    want_d, olds_d = _chain(np.float64(0.5), xd[live], flush=False)
    assert sd[0] == want_d
    np.testing.assert_array_equal(oldd[live], olds_d)
    for c in range(4):
        mine = live[(live & 3) == c]
        assert s[1 + c].tobytes() == _chain(np.float32(0), x[mine], flush=True)[0].tobytes(), c
    for b in range(blocks):
        mine = live[live // 128 == b]
        got, want_b = per_block[b], _chain(np.float32(0), x[mine], flush=False)[0]
        assert got.tobytes() == want_b.tobytes(), b
    assert any(0 < abs(v) < 2.0 ** -126 for v in per_block) or \
        _chain(np.float32(0), x[live], flush=False)[0] != want     # the flush mattered


def test_a_combined_float_add_out_of_bounds_names_the_first_lane(kernels, mode):
    s = np.zeros(4, np.float32)
    with pytest.raises(dptx.DptxMemoryError, match=r"kernel bad_float, block 0 .*thread 0 .*"
                                                   r"40 bytes into argument 0"):
        cpu.launch(kernels["bad_float"], (1,), (64,), [s, np.int32(10)])
    assert not s.any()


GENERIC = """.version 7.8
.target sm_80
.address_size 64
.visible .entry generic(.param .u64 pcells, .param .f32 pv)
{
    .reg .b64 %rd<6>;
    .reg .f32 %f<6>;
    .shared .align 4 .f32 scell;
    ld.param.u64 %rd1, [pcells];
    cvta.to.global.u64 %rd1, %rd1;
    ld.param.f32 %f1, [pv];
    cvta.global.u64 %rd2, %rd1;
    atom.add.f32 %f2, [%rd2], %f1;
    st.global.f32 [%rd1+8], %f2;
    mov.u64 %rd3, scell;
    st.shared.f32 [%rd3], 0f00000000;
    cvta.shared.u64 %rd4, %rd3;
    atom.add.f32 %f3, [%rd4], %f1;
    red.add.f32 [%rd4], %f1;
    ld.shared.f32 %f4, [%rd3];
    st.global.f32 [%rd1+4], %f4;
    ret;
}
"""


def test_generic_float_atomics_flush_only_in_global_memory(mode):
    """atom.add.f32 without a state space: a generic address in the global window is
    flushed (1e-40 + 1e-40 gives 0), one in shared memory keeps subnormals (2e-40)."""
    k = dptx.RawModule(ptx=GENERIC).get_function("generic")
    cells = np.array([1e-40, -1, -1], np.float32)
    cpu.launch(k, (1,), (1,), [cells, np.float32(1e-40)])
    assert cells[0] == 0.0 and cells[2] == np.float32(1e-40)      # old: the value as it was
    assert cells[1] == np.float32(1e-40) + np.float32(1e-40)      # subnormal, kept
