"""Full-warp loops of the warp-vectorized executor (dptx/cpu/renderer/vector_loop.py).

A block that branches back to itself (the grid-stride loop) runs, while all 32 lanes are in
it, as a tight vector loop checked once per iteration; the general masked form takes over
when lanes leave or a check fails. Each kernel here runs in the per-thread form
(DPTX_CPU_VECTOR=0) and the warp-vectorized form (=all): results against numpy, and fault
reports identical in both forms."""
import numpy as np
import pytest

import dptx
from dptx import cpu
from dptx.cpu import executor
from dptx.cpu.renderer.codegen import Module

GRID_STRIDE = r'''
extern "C" __global__ void gs_axpy(double a, const double* x, double* y, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        y[i] = a * x[i] + y[i];
}
extern "C" __global__ void gs_sum(const float* x, float* out, int n) {
    float v = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        v += x[i];
    out[blockIdx.x * blockDim.x + threadIdx.x] = v;
}
extern "C" __global__ void rows(const float* x, float* y, int w, int reps) {
    // rows of w elements, one per threadIdx.y: lanes are consecutive only within a row
    for (int k = 0; k < reps; k++) {
        int i = (blockIdx.x * blockDim.y + threadIdx.y) * w + threadIdx.x + k * blockDim.x;
        y[i] = 2.0f * x[i];
    }
}
extern "C" __global__ void warp_segments(const float* x, float* out, int seg) {
    // each warp sums a segment of its own, lanes side by side (a reduction's pieces): the
    // loop moves by a constant per iteration, the prefetch runs ahead in the segment
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
    const float* p = x + warp * seg;
    float v = 0.0f;
    for (int k = lane; k < seg; k += 32) v += p[k];
    out[blockIdx.x * blockDim.x + threadIdx.x] = v;
}
extern "C" __global__ void gs_gather(const int* idx, const float* x, float* y, int n) {
    // the load through idx[i] is no lane pattern: the loop stays in the general form
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        y[i] = x[idx[i]] * 2.0f;
}
'''

# A pointer bumped at the top of the loop, before the accesses that use it (the check runs
# the bump, checks, and puts the pointer back before the iteration runs it for real), and a
# guarded bump whose guard is the loop counter's parity (odd iterations write the second
# half of dst).
BUMPED = r'''
.version 7.0
.target sm_70
.address_size 64
.visible .entry bumped(.param .u64 src, .param .u64 dst, .param .u32 reps)
{
    .reg .pred %p<3>;
    .reg .b32 %r<10>;
    .reg .f32 %f<4>;
    .reg .b64 %rd<12>;
    ld.param.u64 %rd1, [src];
    ld.param.u64 %rd2, [dst];
    ld.param.u32 %r1, [reps];
    cvta.to.global.u64 %rd1, %rd1;
    cvta.to.global.u64 %rd2, %rd2;
    mov.u32 %r2, %tid.x;
    mov.u32 %r3, %ctaid.x;
    mov.u32 %r4, %ntid.x;
    mad.lo.s32 %r5, %r3, %r4, %r2;
    mov.u32 %r6, %nctaid.x;
    mul.lo.s32 %r7, %r6, %r4;
    mul.wide.s32 %rd3, %r5, 4;
    mul.wide.s32 %rd6, %r7, 4;
    add.s64 %rd4, %rd1, %rd3;
    sub.s64 %rd4, %rd4, %rd6;
    add.s64 %rd5, %rd2, %rd3;
    cvt.s64.s32 %rd9, %r1;
    mul.lo.s64 %rd8, %rd6, %rd9;
    mov.u32 %r8, 0;
LOOP:
    add.s64 %rd4, %rd4, %rd6;
    and.b32 %r9, %r8, 1;
    setp.eq.s32 %p2, %r9, 1;
    mov.b64 %rd7, %rd5;
    @%p2 add.s64 %rd7, %rd7, %rd8;
    ld.global.f32 %f1, [%rd4];
    mul.f32 %f2, %f1, 0f40000000;
    st.global.f32 [%rd7], %f2;
    add.s64 %rd5, %rd5, %rd6;
    add.s32 %r8, %r8, 1;
    setp.lt.s32 %p1, %r8, %r1;
    @%p1 bra LOOP;
    ret;
}
'''


def bumped_reference(src, threads, reps):
    """numpy model of ``bumped``: iteration k of thread t reads src[t + k*S] and writes
    dst[t + k*S], plus S*reps when k is odd."""
    dst = np.zeros(2 * threads * reps, np.float32)
    for k in range(reps):
        at = np.arange(threads) + k * threads
        dst[at + (k & 1) * threads * reps] = src[at] * np.float32(2)
    return dst


@pytest.fixture(scope="module")
def grid_stride():
    return dptx.RawModule(GRID_STRIDE)


def _full_warp_loops(kernel, mode="all"):
    m = Module(kernel.module, kernel.name, mode)
    m.translate()
    return m.kernel_function.full_warp_loops


@pytest.fixture(params=["all", "0"])
def form(request, monkeypatch):
    monkeypatch.setenv("DPTX_CPU_VECTOR", request.param)
    return request.param


def test_the_grid_stride_loop_runs_as_a_full_warp_loop(grid_stride):
    assert len(_full_warp_loops(grid_stride.get_function("gs_axpy"))) == 1
    assert len(_full_warp_loops(grid_stride.get_function("gs_sum"))) == 1
    # an address loaded from memory cannot be checked before the iteration runs
    assert not _full_warp_loops(grid_stride.get_function("gs_gather"))


def test_how_far_each_loop_moves_its_accesses(grid_stride):
    """A grid-stride loop steps by a register (gridDim.x * blockDim.x): unknown, it gets
    the grid-stride prefetch; a warp's own segment (``tid.x & 31``, ``tid.x >> 5``, a
    counter stepped by 32 words, unrolled by NVRTC) moves by a constant it streams along."""
    gs = _full_warp_loops(grid_stride.get_function("gs_sum"))
    assert [loop.moves for loop in gs.values()] == [{}]
    seg = _full_warp_loops(grid_stride.get_function("warp_segments"))
    moves = {m for loop in seg.values() for m in loop.moves.values()}
    assert moves and moves <= {128, 512}            # 32 lanes x 4 bytes, x 4 when unrolled
    assert all(len(loop.moves) == len(loop.accesses) for loop in seg.values())


def test_iteration_moves_of_counters_and_what_they_compute():
    """``bumped``'s loop: its counter steps by 1; its pointers by a register (unknown), and
    so is what is made from them or from a masked counter."""
    from dptx.cpu.renderer.vector_loop import iteration_moves
    insts = dptx.RawModule(ptx=BUMPED).get_function("bumped").function.instructions
    first = next(k for k, i in enumerate(insts) if i.opcode == "add"
                 and [o.name for o in i.operands[:2]] == ["%rd4", "%rd4"])
    last = next(k for k, i in enumerate(insts) if i.opcode == "bra")
    assert iteration_moves(insts[first:last]) == {"%r8": 1}


def test_iteration_moves_of_what_pairs_and_vectors_write():
    """A register written as part of ``{a, b}`` or ``d|p`` is unknown (not loop-invariant),
    and so is what is made from it; what is made from a counter moves with it."""
    from dptx.cpu.renderer.vector_loop import iteration_moves
    ptx = """
.version 7.0
.target sm_70
.address_size 64
.visible .entry k(.param .u64 p)
{
    .reg .pred %p<3>;
    .reg .b32 %r<10>;
    .reg .b64 %rd<4>;
    mov.u32 %r1, 0;
L:
    add.s32 %r1, %r1, 4;
    setp.lt.s32 %p1|%p2, %r1, 100;
    mov.b64 {%r3, %r4}, %rd1;
    add.s32 %r5, %r3, %r1;
    add.s32 %r6, %r1, 8;
    @%p1 bra L;
    ret;
}"""
    insts = dptx.RawModule(ptx=ptx).get_function("k").function.instructions
    first = next(k for k, i in enumerate(insts) if i.opcode == "add")
    last = next(k for k, i in enumerate(insts) if i.opcode == "bra")
    assert iteration_moves(insts[first:last]) == {"%r1": 4, "%r6": 4}


@pytest.mark.parametrize("seg", [1024, 1000, 32, 7])
def test_warp_segments_match_numpy(grid_stride, form, seg):
    """Each lane's own order of additions; the last warp's segment ends the buffer, so the
    prefetch ahead of it points past the end (prefetches never fault)."""
    k = grid_stride.get_function("warp_segments")
    blocks, threads = 3, 128
    warps = blocks * threads // 32
    x = np.random.default_rng(seg).integers(-60, 60, warps * seg).astype(np.float32)
    out = np.zeros(blocks * threads, np.float32)
    cpu.launch(k, (blocks,), (threads,), [x, out, np.int32(seg)])
    want = np.zeros((warps, 32), np.float32)
    X = x.reshape(warps, seg)
    for k0 in range(0, seg, 32):
        part = X[:, k0:k0 + 32]
        want[:, :part.shape[1]] += part
    assert np.array_equal(out.reshape(warps, 32), want)


@pytest.mark.parametrize("n", [40 * 64 * 3, 40 * 64 * 3 + 77, 100, 40 * 64 * 5 - 1])
def test_grid_stride_axpy_matches_numpy(grid_stride, form, n):
    k = grid_stride.get_function("gs_axpy")
    assert executor.compile_kernel(k).vector == (form == "all")
    rng = np.random.default_rng(n)
    # values whose products and sums are exact, so that fma and numpy's a*x+y agree
    x, y = rng.integers(-999, 999, n + 50) / 8.0, rng.integers(-999, 999, n + 50) / 16.0
    expect = y.copy()
    expect[:n] = 2.5 * x[:n] + y[:n]
    cpu.launch(k, (40,), (64,), [np.float64(2.5), x, y, np.int32(n)])
    assert np.array_equal(y, expect)


def test_grid_stride_sum_keeps_each_threads_order(grid_stride, form):
    k = grid_stride.get_function("gs_sum")
    n, threads = 40 * 64 * 7 + 13, 40 * 64
    x = np.random.default_rng(3).random(n, dtype=np.float32)
    out = np.zeros(threads, np.float32)
    cpu.launch(k, (40,), (64,), [x, out, np.int32(n)])
    expect = np.zeros(threads, np.float32)
    for start in range(0, n, threads):       # the same float32 additions, in order
        part = x[start:start + threads]
        expect[:part.size] += part
    assert np.array_equal(out, expect)


@pytest.mark.parametrize("bx", [16, 8, 4])
def test_a_loop_whose_lanes_break_the_guessed_pattern_runs_in_the_general_form(grid_stride, form, bx):
    """Rows of 16 threads keep each half-warp consecutive (the full-warp loop's pattern);
    rows of 8 or 4 do not: the first check fails, and the rest of the block runs the
    general form (a word in the warp's frame remembers it). Results as numpy's."""
    k = grid_stride.get_function("rows")
    reps, rows_per_block = 5, 32 // bx
    w = bx * reps
    x = np.random.default_rng(bx).random(10 * rows_per_block * w, dtype=np.float32)
    y = np.zeros_like(x)
    cpu.launch(k, (10,), (bx, rows_per_block), [x, y, np.int32(w), np.int32(reps)])
    assert np.array_equal(y, 2 * x)


def test_grid_stride_gather_matches_numpy(grid_stride, form):
    k = grid_stride.get_function("gs_gather")
    n = 40 * 64 * 2 + 5
    rng = np.random.default_rng(5)
    idx = rng.integers(0, n, n).astype(np.int32)
    x = rng.random(n, dtype=np.float32)
    y = np.zeros(n, np.float32)
    cpu.launch(k, (40,), (64,), [idx, x, y, np.int32(n)])
    assert np.array_equal(y, x[idx] * np.float32(2))


def test_a_pointer_bumped_before_its_access_is_checked_and_run_once(form):
    k = dptx.RawModule(ptx=BUMPED).get_function("bumped")
    if form == "all":
        assert len(_full_warp_loops(k)) == 1
    threads, reps = 4 * 64, 6
    src = np.random.default_rng(9).random(threads * reps, dtype=np.float32)
    dst = np.zeros(2 * threads * reps, np.float32)
    cpu.launch(k, (4,), (64,), [src, dst, np.int32(reps)])
    assert np.array_equal(dst, bumped_reference(src, threads, reps))


def _fault_text(kernel, grid, block, args):
    with pytest.raises(dptx.DptxMemoryError) as e:
        cpu.launch(kernel, grid, block, args, threads=1)
    return str(e.value)


def test_a_fault_in_a_full_warp_loop_is_reported_as_per_thread(grid_stride, monkeypatch):
    """y is shorter than n: the first thread past its end (iteration 2 of block 3,
    thread 40) faults, with its address, in both forms."""
    k = grid_stride.get_function("gs_axpy")
    n = 40 * 64 * 3
    short = 40 * 64 * 2 + 3 * 64 + 40
    texts = []
    for mode in ("0", "all"):
        monkeypatch.setenv("DPTX_CPU_VECTOR", mode)
        x, y = np.ones(n), np.ones(short)
        texts.append(_fault_text(k, (40,), (64,), [np.float64(2), x, y, np.int32(n)]))
    assert texts[0] == texts[1]
    assert "block 3 (3, 0, 0)" in texts[0] and "thread 40 (40, 0, 0)" in texts[0]
    assert f"{8 * short} bytes into argument 2" in texts[0]


def test_a_fault_after_a_bump_is_reported_as_per_thread(monkeypatch):
    k = dptx.RawModule(ptx=BUMPED).get_function("bumped")
    threads, reps = 2 * 64, 4
    texts = []
    for mode in ("0", "all"):
        monkeypatch.setenv("DPTX_CPU_VECTOR", mode)
        src = np.ones(threads * 3 + 17, np.float32)      # the last iteration runs past its end
        dst = np.zeros(2 * threads * reps, np.float32)
        texts.append(_fault_text(k, (2,), (64,), [src, dst, np.int32(reps)]))
    assert texts[0] == texts[1]
    assert "block 0 (0, 0, 0)" in texts[0] and "thread 17 (17, 0, 0)" in texts[0]
    assert "argument 0" in texts[0]
