"""Threads that wait for other threads by polling memory (dptx/ptx/spins.py): cooperative
groups' tiles larger than a warp (their barrier and collectives live in the reserved shared
memory, ``%reserved_smem_offset_1``), a flag one warp raises for another, a spin lock taken
with atomicCAS, blocks that wait for lower-numbered blocks. On a GPU the other threads run
meanwhile; on the CPU executor the poll yields to them. Each against numpy; a hang fails by
timeout."""
import numpy as np
import pytest

import dptx
from dptx import cpu
from dptx.ptx.parser import parse
from dptx.ptx.spins import spin_waits

TILES = r'''#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;
template <int N>
__device__ void tile_work(const int* in, int* out) {
    cg::thread_block block = cg::this_thread_block();
    auto tile = cg::tiled_partition<N>(block);
    int v = in[blockIdx.x * blockDim.x + block.thread_rank()];
    int sum = cg::reduce(tile, v, cg::plus<int>());
    tile.sync();
    int fifth = tile.shfl(v, 5);
    out[blockIdx.x * blockDim.x + block.thread_rank()] =
        sum * 1000 + (fifth % 1000) + 1000000 * (int)tile.meta_group_rank();
}
extern "C" __global__ void tiles64(const int* in, int* out) { tile_work<64>(in, out); }
extern "C" __global__ void tiles128(const int* in, int* out) { tile_work<128>(in, out); }
'''


@pytest.mark.timeout(300)
@pytest.mark.parametrize("size", [64, 128])
def test_cooperative_groups_tiles_larger_than_a_warp(size):
    mod = dptx.RawModule(TILES, arch="compute_80")
    k = mod.get_function(f"tiles{size}")
    blocks, threads = 2, 256
    a = np.random.default_rng(size).integers(0, 100, blocks * threads).astype(np.int32)
    out = np.zeros_like(a)
    cpu.launch(k, (blocks,), (threads,), [a, out])
    tiles = a.reshape(-1, size)
    want = (tiles.sum(1, keepdims=True) * 1000 + tiles[:, 5:6] % 1000
            + 1000000 * (np.arange(len(tiles)) % (threads // size))[:, None])
    np.testing.assert_array_equal(out.reshape(-1, size), np.broadcast_to(want, tiles.shape))


FLAGS = r'''
extern "C" __global__ void handoff(const float* in, float* out) {
    // warp 1 waits for warp 0's data: no barrier, a flag polled with acquire loads
    __shared__ float data[32];
    __shared__ int flag;
    if (threadIdx.x == 0) flag = 0;
    __syncthreads();
    int lane = threadIdx.x & 31;
    if (threadIdx.x < 32) {
        data[lane] = in[blockIdx.x * 32 + lane] * 2.0f;
        __syncwarp();
        if (lane == 0) { __threadfence_block(); atomicExch(&flag, 1); }
    } else {
        while (cuda::std::atomic_ref<int>(flag).load(cuda::std::memory_order_acquire) == 0) { }
        out[blockIdx.x * 32 + lane] = data[31 - lane] + 1.0f;
    }
}
extern "C" __global__ void locked(int* counter, int* lock) {
    // every thread adds to a plain counter inside a critical section taken with atomicCAS
    for (int r = 0; r < 3; r++) {
        while (atomicCAS(lock, 0, 1) != 0) { }
        __threadfence();
        *(volatile int*)counter = *(volatile int*)counter + 1;
        __threadfence();
        atomicExch(lock, 0);
    }
}
extern "C" __global__ void chain(int* flags, int* order, int* next) {
    // block b waits until block b - 1 has finished: blocks start in increasing order, so a
    // block waiting on lower-numbered blocks always completes
    if (threadIdx.x == 0) {
        if (blockIdx.x > 0)
            while (((volatile int*)flags)[blockIdx.x - 1] == 0) { }
        order[blockIdx.x] = atomicAdd(next, 1);
        __threadfence();
        ((volatile int*)flags)[blockIdx.x] = 1;
    }
}
extern "C" __global__ void reverse_chain(int* flags, int* order, int* next, int n) {
    // block b waits until block b + 1 has finished (the last block goes first), its other
    // threads at a barrier meanwhile: on a GPU that holds the blocks resident this completes,
    // though CUDA does not promise it
    __shared__ int mine;
    if (threadIdx.x == 0) {
        if (blockIdx.x + 1 < n)
            while (((volatile int*)flags)[blockIdx.x + 1] == 0) { }
        mine = atomicAdd(next, 1);
    }
    __syncthreads();
    order[blockIdx.x * blockDim.x + threadIdx.x] = mine;
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        ((volatile int*)flags)[blockIdx.x] = 1;
    }
}
'''


@pytest.fixture(scope="module")
def flags_module():
    return dptx.RawModule("#include <cuda/std/atomic>\n" + FLAGS, arch="compute_80")


@pytest.mark.timeout(300)
def test_a_warp_waits_for_a_flag_another_warp_raises(flags_module):
    k = flags_module.get_function("handoff")
    a = np.arange(3 * 32, dtype=np.float32)
    out = np.zeros_like(a)
    cpu.launch(k, (3,), (64,), [a, out])
    np.testing.assert_array_equal(out.reshape(3, 32), a.reshape(3, 32)[:, ::-1] * 2 + 1)


@pytest.mark.timeout(300)
def test_a_spin_lock_taken_with_atomic_cas(flags_module):
    k = flags_module.get_function("locked")
    counter, lock = np.zeros(1, np.int32), np.zeros(1, np.int32)
    cpu.launch(k, (2,), (96,), [counter, lock])
    assert counter[0] == 2 * 96 * 3 and lock[0] == 0


@pytest.mark.timeout(300)
@pytest.mark.parametrize("threads", [1, 2])
def test_blocks_waiting_on_lower_numbered_blocks_complete(flags_module, threads):
    k = flags_module.get_function("chain")
    n = 40
    flags, order, nxt = np.zeros(n, np.int32), np.zeros(n, np.int32), np.zeros(1, np.int32)
    cpu.launch(k, (n,), (32,), [flags, order, nxt], threads=threads)
    np.testing.assert_array_equal(order, np.arange(n))
    assert flags.all()


@pytest.mark.timeout(300)
@pytest.mark.parametrize("threads", [1, 2])
def test_blocks_waiting_on_higher_numbered_blocks_complete(flags_module, threads):
    """A block stalled on a later block's flag lets the later blocks start on threads of
    their own (as a GPU holds them resident), with one thread as with every core."""
    k = flags_module.get_function("reverse_chain")
    n, block = 24, 64
    flags, nxt = np.zeros(n, np.int32), np.zeros(1, np.int32)
    order = np.full(n * block, -1, np.int32)
    cpu.launch(k, (n,), (block,), [flags, order, nxt, np.int32(n)], threads=threads,
               timeout=120)
    np.testing.assert_array_equal(order.reshape(n, block),
                                  np.repeat(np.arange(n)[::-1, None], block, axis=1))
    assert flags.all() and nxt[0] == n


def test_only_polling_loops_are_spin_waits():
    """A loop that polls (a strong load, nothing written) is a spin-wait, and so is a lock
    taken with atom.cas against a constant; its back edge is where it yields. A loop that
    does work with volatile loads and stores is not, nor a compare-and-swap retry loop (the
    expected value is the one just read: it succeeds at once when no other thread runs in
    between), nor a poll outside any loop."""
    ptx = r'''.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 p)
{
    .reg .pred %p<8>;
    .reg .b32 %r<16>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [p];
    ld.volatile.global.u32 %r1, [%rd1];
$poll:
    ld.acquire.gpu.global.u32 %r2, [%rd1+4];
    setp.eq.s32 %p1, %r2, 0;
    @%p1 bra $poll;
    mov.u32 %r3, 0;
$work:
    ld.volatile.global.u32 %r4, [%rd1+8];
    add.s32 %r5, %r4, %r3;
    st.volatile.global.u32 [%rd1+12], %r5;
    add.s32 %r3, %r3, 1;
    setp.lt.s32 %p2, %r3, 10;
    @%p2 bra $work;
    ld.global.u32 %r6, [%rd1+16];
$retry:
    max.s32 %r7, %r6, 5;
    atom.global.cas.b32 %r8, [%rd1+16], %r6, %r7;
    setp.ne.s32 %p3, %r8, %r6;
    mov.u32 %r6, %r8;
    @%p3 bra $retry;
$lock:
    atom.global.cas.b32 %r9, [%rd1+20], 0, 1;
    setp.ne.s32 %p4, %r9, 0;
    @%p4 bra $lock;
    ret;
}
'''
    k = next(f for f in parse(ptx).functions if f.name == "k")
    spins = spin_waits(k)
    # the back edges of the acquire poll and of the lock
    assert [k.instructions[i].line for i in sorted(spins)] == [14, 33]
