"""Fast regions and frame saves of the warp-vectorized executor (dptx/cpu/renderer/vector.py).

A run of instructions between barriers is emitted twice, a fast copy whose accesses assume the
lane pattern that ``vector_plan.lane_steps`` guessed and the general copy; a check at run time
picks one. These tests run kernels where the guess holds, where it does not (other block
shapes, partial warps, a wrapping 32-bit index, out-of-bounds lanes), and loops with barriers
whose registers are saved in the warp's frame when they are made rather than at each barrier.
Every result is compared with numpy."""
import numpy as np
import pytest

import dptx
from dptx import cpu
from dptx.cpu import executor
from dptx.cpu.renderer.vector_plan import lane_steps, plan_vector
from dptx.errors import DptxMemoryError


@pytest.fixture(autouse=True)
def _default_forms(monkeypatch):
    """These tests check the warp-vectorized form's choices: the default mode, whatever
    DPTX_CPU_VECTOR the suite runs under (tests that want another set it themselves)."""
    monkeypatch.delenv("DPTX_CPU_VECTOR", raising=False)


KERNELS = r'''
#define T 16
// a tiled transpose-and-scale: shared tiles indexed by (ty, tx) and by (tx, ty)
extern "C" __global__ void tile_ops(const float* a, float* out, int w, int h) {
    __shared__ float tile[T][T + 1];
    int x = blockIdx.x * T + threadIdx.x, y = blockIdx.y * T + threadIdx.y;
    tile[threadIdx.y][threadIdx.x] = (x < w && y < h) ? a[y * w + x] : 0.0f;
    __syncthreads();
    int ox = blockIdx.y * T + threadIdx.x, oy = blockIdx.x * T + threadIdx.y;
    if (ox < h && oy < w) out[oy * h + ox] = 2.0f * tile[threadIdx.x][threadIdx.y] + tile[threadIdx.y][0];
}

// rows of a 1-D block: consecutive lanes read consecutive words, with a barrier per step
extern "C" __global__ void staged_sum(const float* a, float* out, int steps) {
    __shared__ float s[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float keep = a[i];                    // made before the loop, used after it
    float acc = 0.0f;
    for (int t = 0; t < steps; t++) {
        s[threadIdx.x] = a[i] * (float)(t + 1);
        __syncthreads();
        float inner = 0.0f;              // a loop with no barrier between two barriers
        for (int j = 0; j <= t; j++) inner += s[(threadIdx.x + j) % blockDim.x];
        acc += inner;
        __syncthreads();
    }
    out[i] = acc + keep;
}

// any block shape: a block's tile through dynamic shared memory, read back reversed
extern "C" __global__ void shape_free(const float* a, float* out, int w) {
    extern __shared__ float s[];
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    int t = threadIdx.y * blockDim.x + threadIdx.x;
    s[t] = a[y * w + x];
    __syncthreads();
    out[y * w + x] = s[t] * 3.0f + s[blockDim.x * blockDim.y - 1 - t];
}

// rows of a 16-wide block read the same shared row (a tiled matmul's B tile): both
// half-warps' lanes at the same addresses, one load for the two halves when 16 wide
extern "C" __global__ void shared_rows(const float* a, float* out) {
    __shared__ float s[8][64];
    int tx = threadIdx.x, ty = threadIdx.y, t = ty * blockDim.x + tx, n = blockDim.x * blockDim.y;
    for (int k = t; k < 8 * 64; k += n) s[k / 64][k % 64] = a[blockIdx.x * 512 + k];
    __syncthreads();
    float acc = 0.0f;
    #pragma unroll
    for (int r = 0; r < 8; r++) acc += s[r][tx] * (float)(r + 1);
    out[blockIdx.x * n + t] = acc + s[ty % 8][tx + 1];
}

// the index wraps around 2**32 inside a warp: lanes are not consecutive in memory
extern "C" __global__ void wrapping_index(const float* a, float* out, unsigned base) {
    __shared__ float s[64];
    s[threadIdx.x] = a[base + threadIdx.x];
    __syncthreads();
    out[threadIdx.x] = s[threadIdx.x];
}
'''


@pytest.fixture(scope="module")
def module():
    return dptx.RawModule(KERNELS)


def _vectorized(kernel) -> bool:
    return executor.compile_kernel(kernel).vector


def tile_ops_reference(a, w, h):
    """numpy model of tile_ops, tile by tile (the second term reads column 0 of the tile)."""
    out = np.zeros(w * h, np.float32)
    A = a.reshape(h, w)
    for by in range((h + 15) // 16):
        for bx in range((w + 15) // 16):
            tile = np.zeros((16, 17), np.float32)
            sub = A[by * 16:by * 16 + 16, bx * 16:bx * 16 + 16]
            tile[:sub.shape[0], :sub.shape[1]] = sub
            for ty in range(16):
                for tx in range(16):
                    ox, oy = by * 16 + tx, bx * 16 + ty
                    if ox < h and oy < w:
                        out[oy * h + ox] = np.float32(2.0) * tile[tx, ty] + tile[ty, 0]
    return out


@pytest.mark.parametrize("w,h", [(64, 48), (50, 37)])
def test_tiles_on_full_and_partial_grids(module, w, h):
    k = module.get_function("tile_ops")
    a = np.random.default_rng(1).random(w * h, dtype=np.float32)
    out = np.full(w * h, -1, np.float32)
    cpu.launch(k, ((w + 15) // 16, (h + 15) // 16), (16, 16), [a, out, np.int32(w), np.int32(h)])
    assert _vectorized(k)
    np.testing.assert_array_equal(out, tile_ops_reference(a, w, h))


@pytest.mark.parametrize("block", [256, 128, 48, 40])
def test_loops_with_barriers_keep_registers(module, block):
    """Block sizes that fill whole warps (the fast copy runs) and ones with a partial last
    warp (its mask is not full: the general copy runs); registers made before the loop, in
    it, and in a barrier-free inner loop all survive the barriers."""
    k = module.get_function("staged_sum")
    steps, blocks = 5, 6
    n = block * blocks
    a = np.random.default_rng(2).random(n, dtype=np.float32)
    out = np.zeros(n, np.float32)
    cpu.launch(k, (blocks,), (block,), [a, out, np.int32(steps)])
    assert _vectorized(k)
    expected = np.zeros(n, np.float32)
    A = a.reshape(blocks, block)
    for b in range(blocks):
        acc = np.zeros(block, np.float32)
        for t in range(steps):
            s = A[b] * np.float32(t + 1)
            inner = np.zeros(block, np.float32)
            for j in range(t + 1):
                inner = inner + s[(np.arange(block) + j) % block]
            acc = acc + inner
        expected[b * block:(b + 1) * block] = acc + A[b]
    np.testing.assert_allclose(out, expected, rtol=1e-6)


def shape_free_reference(a, w, h, bdx, bdy):
    A = a.reshape(h, w)
    out = np.zeros((h, w), np.float32)
    n = bdx * bdy
    for by in range(h // bdy):
        for bx in range(w // bdx):
            for t in range(n):
                ty, tx = divmod(t, bdx)
                uy, ux = divmod(n - 1 - t, bdx)
                y, x = by * bdy + ty, bx * bdx + tx
                # NVRTC contracts the expression to one fma: exact in float64, rounded once
                out[y, x] = np.float32(np.float64(A[y, x]) * 3 + np.float64(A[by * bdy + uy, bx * bdx + ux]))
    return out.ravel()


@pytest.mark.parametrize("bdx,bdy", [(16, 16), (32, 4), (8, 32), (4, 8), (64, 2)])
def test_block_shapes_where_the_guess_holds_or_not(module, bdx, bdy):
    """``a[y * w + x]`` steps by one word per lane within each half-warp when blocks are 16
    or a multiple of 32 threads wide; 8 or 4 wide it does not, the check at the region's
    start refuses the fast copy, and the general copy gives the same answer."""
    k = module.get_function("shape_free")
    w = h = 64
    a = np.random.default_rng(3).random(w * h, dtype=np.float32)
    out = np.zeros(w * h, np.float32)
    cpu.launch(k, (w // bdx, h // bdy), (bdx, bdy), [a, out, np.int32(w)],
               shared_mem=4 * bdx * bdy)
    assert _vectorized(k)
    np.testing.assert_array_equal(out, shape_free_reference(a, w, h, bdx, bdy))


@pytest.mark.parametrize("bdx,bdy", [(16, 4), (16, 1), (32, 2), (48, 1), (8, 8), (63, 1)])
def test_rows_reading_the_same_shared_row(module, bdx, bdy):
    """16 wide, the two half-warps read the same words (the region's copy that loads them
    once runs); 32 or 48 wide they do not; 8 or 63 wide the lane pattern does not hold at
    all. Integer-valued data: every sum is exact, whatever the order."""
    k = module.get_function("shared_rows")
    blocks = 5
    a = np.random.default_rng(4).integers(-50, 50, blocks * 512).astype(np.float32)
    n = bdx * bdy
    out = np.full(blocks * n, np.nan, np.float32)
    cpu.launch(k, (blocks,), (bdx, bdy), [a, out])
    assert _vectorized(k)
    S = a.reshape(blocks, 8, 64)
    ty, tx = np.divmod(np.arange(n), bdx)
    want = sum(S[:, r, tx] * np.float32(r + 1) for r in range(8)) + S[:, ty % 8, tx + 1]
    np.testing.assert_array_equal(out.reshape(blocks, n), want)


def test_wrapping_index_is_not_taken_for_consecutive(module):
    """``base + tid.x`` wraps around 2**32 in the middle of the warp: the lanes past the wrap
    read the start of the buffer, those before it read far past its end and fault."""
    k = module.get_function("wrapping_index")
    a = np.arange(64, dtype=np.float32)
    out = np.zeros(64, np.float32)
    with pytest.raises(DptxMemoryError, match=r"thread 0 \(0, 0, 0\)"):
        cpu.launch(k, (1,), (64,), [a, out, np.uint32(2**32 - 16)])
    np.testing.assert_array_equal(out, 0)       # the kernel stopped before writing
    cpu.launch(k, (1,), (64,), [a, out, np.uint32(0)])
    np.testing.assert_array_equal(out, a)


def test_out_of_bounds_lane_in_a_region_names_its_thread(module):
    k = module.get_function("staged_sum")
    a = np.ones(200, np.float32)                # 256 threads read a[i]: 56 past the end
    out = np.zeros(256, np.float32)
    with pytest.raises(DptxMemoryError, match=r"thread 200 \(200, 0, 0\)"):
        cpu.launch(k, (1,), (256,), [a, out, np.int32(2)])


def test_lane_steps_of_shared_tile_addresses():
    """The analysis behind the guesses: an address made of tid.x steps by its scale per
    lane, one made of tid.y only by 0, and a reversed index is not guessed."""
    mod = dptx.RawModule(r'''
    extern "C" __global__ void k(const float* a, float* out) {
        __shared__ float s[16][16];
        s[threadIdx.y][threadIdx.x] = a[threadIdx.y * 16 + threadIdx.x];
        __syncthreads();
        out[threadIdx.y * 16 + threadIdx.x] = s[threadIdx.x][threadIdx.y] + s[threadIdx.y][0]
                                              + s[0][15 - threadIdx.x];
    }''')
    f = mod.get_function("k")
    plan = plan_vector(f.module, f.function)
    steps = lane_steps(f.function, plan.divergent)
    found = []
    for inst in f.function.instructions:
        if inst.opcode in ("ld", "st") and "shared" in inst.modifiers:
            addr = inst.operands[1] if inst.opcode == "ld" else inst.operands[0]
            found.append((inst.opcode, steps.get(addr.base.name) if addr.base is not None else 0))
    assert sorted(found, key=str) == sorted([("st", 4), ("ld", 64), ("ld", 0), ("ld", -4)], key=str)


EDGES = r'''
// three accesses through one base register (offsets -4, 0, +4 bytes): one fast region
extern "C" __global__ void around(const float* a, float* out, int shift) {
    int i = threadIdx.x;
    __syncthreads();                      // (the warp form is for kernels with barriers)
    const float* p = a + i + shift;
    out[i] = p[-1] + 2.0f * p[0] + 4.0f * p[1];
}
// the same in shared memory, through 32-bit addresses, near the end of the array
extern "C" __global__ void around_shared(const float* a, float* out, int shift) {
    __shared__ float s[96];
    int i = threadIdx.x;
    for (int k = i; k < 96; k += blockDim.x) s[k] = a[k];
    __syncthreads();
    const float* p = s + i + shift;
    out[i] = p[-1] + 2.0f * p[0] + 4.0f * p[1];
}
'''


@pytest.mark.parametrize("kernel,length", [("around", 100), ("around_shared", 96)])
def test_region_bounds_at_the_edges_of_the_buffer(kernel, length):
    """A region's accesses reaching exactly the first and the last element run (the fast
    copy's bounds test is exact, not off by one into a fault), and one element further
    either way faults naming the thread whose lane stepped out."""
    k = dptx.RawModule(EDGES).get_function(kernel)
    assert _vectorized(k)
    a = (np.arange(length, dtype=np.float32) * 0.5 + 1).astype(np.float32)
    for shift in (1, length - 65):                  # p[-1] is a[0]; p[1] of lane 63 is a[-1]
        out = np.zeros(64, np.float32)
        cpu.launch(k, (1,), (64,), [a, out, np.int32(shift)])
        i = np.arange(64) + shift
        np.testing.assert_array_equal(out, a[i - 1] + 2 * a[i] + 4 * a[i + 1])
    for shift, thread in ((0, 0), (length - 64, 63)):
        out = np.zeros(64, np.float32)
        with pytest.raises(DptxMemoryError, match=rf"thread {thread} \({thread}, 0, 0\)"):
            cpu.launch(k, (1,), (64,), [a, out, np.int32(shift)])


# A fast region's check computes a base register's lanes 0 and 16 again from what the
# register was made of (``vector_rebuild``). Each kernel below makes ``dst[tid] =
# src[f(tid)]`` where taking the register's makings as they are at the access would read the
# wrong element: the rebuild must see each case and fall back to the register itself.
_REBUILD_HEAD = r'''
.version 7.0
.target sm_70
.address_size 64
.visible .entry {name}(.param .u64 src, .param .u64 dst)
{{
    .reg .pred %p<3>;
    .reg .b32 %r<10>;
    .reg .f32 %f<4>;
    .reg .b64 %rd<12>;
    ld.param.u64 %rd1, [src];
    ld.param.u64 %rd2, [dst];
    cvta.to.global.u64 %rd1, %rd1;
    cvta.to.global.u64 %rd2, %rd2;
    mov.u32 %r1, %tid.x;
    bar.sync 0;
{body}
    ret;
}}
'''
REBUILD_CASES = {
    # the index is changed after the address was made from it
    "operand_rewritten": ('''
    mov.u32 %r3, %r1;
    mul.wide.u32 %rd3, %r1, 4;
    add.s64 %rd4, %rd1, %rd3;
    mul.wide.u32 %rd7, %r3, 4;
    add.s64 %rd8, %rd2, %rd7;
    add.u32 %r1, %r1, 64;
    ld.global.f32 %f1, [%rd4];
    st.global.f32 [%rd8], %f1;''', lambda t: t),
    # the address's last write is predicated: half the warps keep the earlier value
    "predicated_write": ('''
    setp.lt.u32 %p1, %r1, 32;
    mul.wide.u32 %rd3, %r1, 4;
    add.s64 %rd4, %rd1, %rd3;
    add.s64 %rd8, %rd2, %rd3;
    add.s64 %rd9, %rd4, 256;
    @%p1 mov.b64 %rd4, %rd9;
    ld.global.f32 %f1, [%rd4];
    st.global.f32 [%rd8], %f1;''', lambda t: t + 64 * (t < 32)),
    # the index is dead after a barrier between the address and the access
    "barrier_between": ('''
    mul.wide.u32 %rd3, %r1, 4;
    add.s64 %rd4, %rd1, %rd3;
    add.s64 %rd8, %rd2, %rd3;
    bar.sync 0;
    mov.u32 %r1, 7;
    ld.global.f32 %f1, [%rd4];
    st.global.f32 [%rd8], %f1;''', lambda t: t),
    # an address made from its own old value
    "reads_itself": ('''
    mul.wide.u32 %rd3, %r1, 4;
    add.s64 %rd4, %rd1, %rd3;
    add.s64 %rd4, %rd4, 8;
    add.s64 %rd8, %rd2, %rd3;
    ld.global.f32 %f1, [%rd4];
    st.global.f32 [%rd8], %f1;''', lambda t: t + 2),
    # a negative signed index (sign-extended), and a zero-extension then a shift
    "signed_index": ('''
    add.s32 %r2, %r1, -16;
    mul.wide.s32 %rd3, %r2, 4;
    add.s64 %rd4, %rd1, 64;
    add.s64 %rd5, %rd4, %rd3;
    cvt.u64.u32 %rd6, %r1;
    shl.b64 %rd7, %rd6, 2;
    add.s64 %rd8, %rd2, %rd7;
    ld.global.f32 %f1, [%rd5];
    st.global.f32 [%rd8], %f1;''', lambda t: t),
}


@pytest.mark.parametrize("case", sorted(REBUILD_CASES))
def test_region_anchors_rebuilt_only_where_exact(case):
    body, source_of = REBUILD_CASES[case]
    k = dptx.RawModule(ptx=_REBUILD_HEAD.format(name=case, body=body)).get_function(case)
    assert _vectorized(k)
    src = np.arange(128, dtype=np.float32) * 3 + 1
    for _ in range(2):          # (again: the pattern flags an earlier run left set)
        dst = np.zeros(64, np.float32)
        cpu.launch(k, (1,), (64,), [src, dst])
        np.testing.assert_array_equal(dst, src[source_of(np.arange(64))])
