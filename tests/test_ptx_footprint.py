"""Static access footprints (dptx/ptx/footprint.py) against independent references: the byte
offsets computed with numpy over every thread of the range, as the CUDA C computes them.

The contract is per box of blocks (a linear block range is cut into at most five boxes,
``block_boxes``): for each access, the hull of its offsets over the box's threads (under its
guards); the union over accesses and boxes, merged. The references below compute exactly
that, so most tests compare for equality.
"""
import struct
import time

import numpy as np
import pytest

import dptx
from dptx.ptx import parse
from dptx.ptx.footprint import Access, block_boxes, kernel_footprint

P0, P1, P2, P3 = (("param", i) for i in range(4))
BIG = 1 << 40          # buffer sizes that never clip (nothing is allocated)


def footprint(src, name, options=()):
    k = dptx.RawModule(src, options=tuple(options)).get_function(name)
    return kernel_footprint(k.module, k.function)


def footprint_ptx(text, name="k"):
    m = parse(text)
    return kernel_footprint(m, next(f for f in m.kernels if f.name == name))


def i32(v):
    return struct.pack("<i", v)


def u32(v):
    return struct.pack("<I", v)


# -- the reference ------------------------------------------------------------------------------
def box_threads(block, box):
    """Coordinates of every thread of a box of blocks, as flat int64 arrays."""
    x0, x1, y0, y1, z0, z1 = box
    axes = [np.arange(x0, x1 + 1), np.arange(y0, y1 + 1), np.arange(z0, z1 + 1),
            np.arange(block[0]), np.arange(block[1]), np.arange(block[2])]
    grids = np.meshgrid(*axes, indexing="ij")
    names = ("bx", "by", "bz", "tx", "ty", "tz")
    return {n: g.ravel().astype(np.int64) for n, g in zip(names, grids)}


def _merge(intervals):
    out = []
    for lo, hi in sorted(intervals):
        if out and lo <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return tuple(out)


def reference(grid, block, ranges, accesses, sizes):
    """``accesses(t)`` -> [(target, "r"|"w"|"rw", mask, byte offsets, size)] for the threads
    ``t`` of one box; the expected evaluate() result."""
    grid = tuple(grid) + (1,) * (3 - len(grid))
    block = tuple(block) + (1,) * (3 - len(block))
    out = []
    for b0, b1 in ranges:
        found = {}
        for box in block_boxes(grid, b0, b1):
            t = box_threads(block, box)
            for target, kinds, mask, offsets, size in accesses(t):
                mask = np.broadcast_to(mask, offsets.shape)
                if not mask.any():
                    continue
                lo = int(offsets[mask].min())
                hi = int(offsets[mask].max()) + size
                lo, hi = max(lo, 0), min(hi, sizes[target])
                for k in kinds:
                    found.setdefault((target, k), []).append((lo, hi))
        result = {}
        for target in sizes:
            r, w = _merge(found.get((target, "r"), [])), _merge(found.get((target, "w"), []))
            if r or w:
                result[target] = Access(r, w)
        out.append(result)
    return out


def check(fp, grid, block, scalars, ranges, sizes, accesses):
    got = fp.evaluate(grid, block, scalars, ranges, sizes)
    want = reference(grid, block, ranges, accesses, sizes)
    for (b0, b1), g, w in zip(ranges, got, want):
        assert g == w, f"blocks {b0}..{b1}: got {g}, expected {w}"
    return got


def covers(intervals, offsets, size):
    """Whether every [o, o + size) lies inside the intervals."""
    ok = np.zeros(offsets.shape, bool)
    for lo, hi in intervals:
        ok |= (offsets >= lo) & (offsets + size <= hi)
    return bool(ok.all())


# -- boxes --------------------------------------------------------------------------------------
@pytest.mark.parametrize("grid", [(7, 1, 1), (5, 4, 1), (3, 4, 5), (1, 1, 9), (4, 1, 3)])
def test_block_boxes_cover_the_range_exactly(grid):
    n = grid[0] * grid[1] * grid[2]
    for b0 in range(n):
        for b1 in range(b0 + 1, n + 1):
            boxes = block_boxes(grid, b0, b1)
            assert len(boxes) <= 5
            ids = []
            for x0, x1, y0, y1, z0, z1 in boxes:
                for z in range(z0, z1 + 1):
                    for y in range(y0, y1 + 1):
                        for x in range(x0, x1 + 1):
                            ids.append(x + grid[0] * (y + grid[1] * z))
            assert sorted(ids) == list(range(b0, b1))


# -- 1. affine addresses, 1-D, 2-D and 3-D ------------------------------------------------------
VEC = r'''
extern "C" __global__ void vec(const float* a, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] * 2.0f;
}'''


def test_vector_1d_exact():
    fp = footprint(VEC, "vec")
    n, grid, block = 10000, (40,), (256,)
    sizes = {P0: 4 * n, P1: 4 * n}

    def acc(t):
        i = t["bx"] * 256 + t["tx"]
        return [(P0, "r", i < n, 4 * i, 4), (P1, "w", i < n, 4 * i, 4)]

    got = check(fp, grid, block, {2: i32(n)}, [(0, 1), (1, 13), (13, 39), (39, 40)], sizes, acc)
    assert got[0][P0] == Access(((0, 1024),), ())
    assert got[3][P1] == Access((), ((39 * 1024, 40000),))     # the guard cuts the overhang


IMAGE = r'''
extern "C" __global__ void img(const float* in, float* out, int w, int h) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < w && y < h) out[y * w + x] = in[y * w + x] + 1.0f;
}'''


@pytest.mark.parametrize("ranges", [[(0, 5), (5, 10), (10, 35)],         # full block rows
                                    [(0, 3), (3, 12), (12, 13), (13, 35)],  # partial rows
                                    [(b, b + 1) for b in range(35)]])
def test_image_2d_with_overhanging_grid(ranges):
    fp = footprint(IMAGE, "img")
    w, h, grid, block = 70, 50, (5, 7), (16, 8)      # the grid overhangs in x and y
    sizes = {P0: 4 * w * h, P1: 4 * w * h}

    def acc(t):
        x = t["bx"] * 16 + t["tx"]
        y = t["by"] * 8 + t["ty"]
        ok = (x < w) & (y < h)
        return [(P0, "r", ok, 4 * (y * w + x), 4), (P1, "w", ok, 4 * (y * w + x), 4)]

    got = check(fp, grid, block, {2: i32(w), 3: i32(h)}, ranges, sizes, acc)
    if ranges[0] == (0, 5):
        # chunks of whole block rows own exactly their image rows: no spill into the next
        assert got[0][P1].writes == ((0, 8 * w * 4),)
        assert got[1][P1].writes == ((8 * w * 4, 16 * w * 4),)


SCALE3D = r'''
extern "C" __global__ void s3(const float* in, float* out, int nx, int ny, int nz) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int z = blockIdx.z * blockDim.z + threadIdx.z;
    if (x >= nx || y >= ny || z >= nz) return;
    int idx = (z * ny + y) * nx + x;
    out[idx] = in[idx] * 3.0f;
}'''


def test_3d_grid():
    fp = footprint(SCALE3D, "s3")
    nx, ny, nz, grid, block = 20, 12, 10, (3, 3, 5), (8, 4, 2)
    sizes = {P0: 4 * nx * ny * nz, P1: 4 * nx * ny * nz}

    def acc(t):
        x, y, z = t["bx"] * 8 + t["tx"], t["by"] * 4 + t["ty"], t["bz"] * 2 + t["tz"]
        ok = (x < nx) & (y < ny) & (z < nz)
        idx = (z * ny + y) * nx + x
        return [(P0, "r", ok, 4 * idx, 4), (P1, "w", ok, 4 * idx, 4)]

    check(fp, grid, block, {2: i32(nx), 3: i32(ny), 4: i32(nz)},
          [(0, 9), (9, 20), (20, 44), (44, 45)], sizes, acc)


# -- 2. guards, 3. stencils ----------------------------------------------------------------------
STENCIL1D = r'''
extern "C" __global__ void st1(const int* in, int* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i > 0 && i < n - 1) out[i] = in[i - 1] + 2 * in[i] + in[i + 1];
}'''


def test_stencil_1d_offsets():
    fp = footprint(STENCIL1D, "st1")
    n, grid, block = 1000, (8,), (128,)
    sizes = {P0: 4 * n, P1: 4 * n}

    def acc(t):
        i = t["bx"] * 128 + t["tx"]
        ok = (i > 0) & (i < n - 1)
        return [(P0, "r", ok, 4 * (i - 1), 4), (P0, "r", ok, 4 * i, 4),
                (P0, "r", ok, 4 * (i + 1), 4), (P1, "w", ok, 4 * i, 4)]

    got = check(fp, grid, block, {2: i32(n)}, [(0, 1), (1, 4), (4, 8)], sizes, acc)
    assert got[1][P0].reads == ((127 * 4, 512 * 4 + 4),)      # one element of halo each side


HEAT = r'''
extern "C" __global__ void heat(const float* in, float* out, int w, int h) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h) return;
    int i = y * w + x;
    if (x == 0 || y == 0 || x == w - 1 || y == h - 1) { out[i] = in[i]; return; }
    out[i] = 0.25f * (in[i - 1] + in[i + 1] + in[(y - 1) * w + x] + in[(y + 1) * w + x]);
}'''


def test_stencil_2d_halo_rows():
    fp = footprint(HEAT, "heat")
    w, h, grid, block = 70, 45, (5, 3), (16, 16)
    sizes = {P0: 4 * w * h, P1: 4 * w * h}

    def acc(t):
        x, y = t["bx"] * 16 + t["tx"], t["by"] * 16 + t["ty"]
        inside = (x < w) & (y < h)
        edge = inside & ((x == 0) | (y == 0) | (x == w - 1) | (y == h - 1))
        inner = inside & ~edge
        i = y * w + x
        return [(P0, "r", edge, 4 * i, 4), (P1, "w", edge, 4 * i, 4),
                (P0, "r", inner, 4 * (i - 1), 4), (P0, "r", inner, 4 * (i + 1), 4),
                (P0, "r", inner, 4 * ((y - 1) * w + x), 4),
                (P0, "r", inner, 4 * ((y + 1) * w + x), 4), (P1, "w", inner, 4 * i, 4)]

    got = check(fp, grid, block, {2: i32(w), 3: i32(h)}, [(0, 5), (5, 10), (10, 15)], sizes,
                acc)
    # rows 16..31 and one halo row each side (without the corners the stencil never reads)
    assert got[1][P0].reads == (((15 * w + 1) * 4, (32 * w + w - 1) * 4),)


# -- 4. loops ------------------------------------------------------------------------------------
ROWSUM = r'''
extern "C" __global__ void rowsum(const float* A, float* out, int rows, int K) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float s = 0.0f;
    for (int k = 0; k < K; ++k) s += A[r * K + k];
    out[r] = s;
}'''


@pytest.mark.parametrize("K", [40, 37, 3, 1, 0])
def test_loop_over_a_row_is_exact(K):
    """LLVM unrolls this by 4 with a strength-reduced pointer and a remainder loop counting
    down to zero: both get their trip counts from the exit tests."""
    fp = footprint(ROWSUM, "rowsum")
    rows, grid, block = 300, (5,), (64,)
    sizes = {P0: 4 * rows * max(K, 1), P1: 4 * rows}

    def acc(t):
        r = t["bx"] * 64 + t["tx"]
        out = [(P1, "w", r < rows, 4 * r, 4)]
        if K:
            out += [(P0, "r", r < rows, 4 * (r * K), 4 * K)]    # the row, as one hull
        return out

    check(fp, grid, block, {2: i32(rows), 3: i32(K)}, [(0, 1), (1, 3), (3, 5)], sizes, acc)


NESTED = r'''
extern "C" __global__ void nested(const float* M, float* out, int n, int R, int C) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= n) return;
    float s = 0.0f;
    for (int i = 0; i < R; ++i)
        for (int j = 0; j < C; ++j)
            s += M[(r * R + i) * C + j];      // the inner start depends on the outer IV
    out[r] = s;
}'''


def test_nested_loops():
    fp = footprint(NESTED, "nested")
    n, R, C, grid, block = 200, 3, 17, (4,), (64,)
    sizes = {P0: 4 * n * R * C, P1: 4 * n}

    def acc(t):
        r = t["bx"] * 64 + t["tx"]
        return [(P0, "r", r < n, 4 * r * R * C, 4 * R * C), (P1, "w", r < n, 4 * r, 4)]

    check(fp, grid, block, {2: i32(n), 3: i32(R), 4: i32(C)}, [(0, 1), (1, 2), (2, 4)],
          sizes, acc)


GRID_STRIDE = r'''
extern "C" __global__ void gs(float* d, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        d[i] = d[i] * 2.0f;
}'''


def test_grid_stride_loop_is_bounded_by_n():
    fp = footprint(GRID_STRIDE, "gs")
    n, grid, block = 20000, (8,), (128,)
    ranges = [(0, 1), (1, 5), (5, 8)]
    got = fp.evaluate(grid, block, {1: i32(n)}, ranges, {P0: 4 * n})
    for (b0, b1), res in zip(ranges, got):
        start = b0 * 128
        touched = np.concatenate([np.arange(s, n, 1024) for s in range(start, b1 * 128)])
        for intervals in (res[P0].reads, res[P0].writes):
            assert covers(intervals, 4 * touched, 4)
            assert intervals[0][0] >= 4 * start and intervals[-1][1] <= 4 * n


MATMUL = r'''
extern "C" __global__ void mm(const float* A, const float* B, float* C, int m, int n, int k) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < m && col < n) {
        float acc = 0.0f;
        for (int t = 0; t < k; ++t) acc += A[row * k + t] * B[t * n + col];
        C[row * n + col] = acc;
    }
}'''


@pytest.mark.parametrize("k", [40, 45])
def test_naive_matmul_rows_exact_and_b_whole(k):
    """5. a whole-buffer read where that is the truth (B), without the others becoming whole."""
    fp = footprint(MATMUL, "mm")
    m, n, grid, block = 70, 50, (4, 5), (16, 16)
    sizes = {P0: 4 * m * k, P1: 4 * k * n, P2: 4 * m * n}
    ranges = [(0, 4), (4, 12), (12, 20)]         # whole block rows
    got = fp.evaluate(grid, block, {3: i32(m), 4: i32(n), 5: i32(k)}, ranges, sizes)
    for (b0, b1), res in zip(ranges, got):
        r0, r1 = b0 // 4 * 16, min(m, b1 // 4 * 16)
        assert res[P0] == Access(((4 * r0 * k, 4 * r1 * k),), ())
        assert res[P2] == Access((), ((4 * r0 * n, 4 * r1 * n),))
        assert res[P1] == Access(((0, 4 * k * n),), ())
    assert fp.reason(P1) is None and fp.reason(P0) is None


BITONIC = r'''
extern "C" __global__ void bitonic(int* a, int j, int k) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned ixj = i ^ j;
    if (ixj > i) {
        int x = a[i], y = a[ixj];
        if ((i & k) == 0) { if (x > y) { a[i] = y; a[ixj] = x; } }
        else { if (x < y) { a[i] = y; a[ixj] = x; } }
    }
}'''


@pytest.mark.parametrize("j", [1, 8, 64])
def test_bitonic_xor_partner_stays_near_the_range(j):
    """i ^ j with j in [0, J] lies in [lo & ~M, hi | M], M = 2**bitlen(J) - 1, and the guard
    ixj > i cuts it below."""
    fp = footprint(BITONIC, "bitonic")
    grid, block, n = (8,), (128,), 1024
    ranges = [(0, 2), (2, 5), (5, 8)]
    got = fp.evaluate(grid, block, {1: i32(j), 2: i32(512)}, ranges, {P0: 4 * n})
    m = (1 << j.bit_length()) - 1
    for (b0, b1), res in zip(ranges, got):
        lo, hi = b0 * 128, b1 * 128 - 1
        partner = (max(lo + 1, lo & ~m), hi | m)
        expected = _merge([(4 * lo, 4 * hi + 4), (4 * partner[0], 4 * partner[1] + 4)])
        assert res[P0].reads == expected and res[P0].writes == expected
        i = np.arange(lo, hi + 1)
        p = i ^ j
        assert covers(res[P0].reads, 4 * p[p > i], 4)


# -- the whole-buffer rules ---------------------------------------------------------------------
def test_pointer_loaded_from_memory_makes_every_target_whole():
    fp = footprint(r'''
extern "C" __global__ void ind(float** ptrs, const float* x, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { ptrs[1][i] = x[i]; out[i] = 1.0f; }
}''', "ind")
    sizes = {P0: 16, P1: 4000, P2: 4000}
    [res] = fp.evaluate((4,), (256,), {3: i32(1000)}, [(1, 2)], sizes)
    assert res[P1].reads == ((1024, 2048),)        # reads stay precise: only writes are unknown
    assert res[P0].reads == ((8, 16),)
    for t in sizes:
        assert res[t].writes == ((0, sizes[t]),)
    assert "loaded from memory" in fp.reason(P2, "w")


def test_histogram_bins_are_whole_the_data_is_not():
    fp = footprint(r'''
extern "C" __global__ void hist(const int* data, unsigned* bins, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&bins[data[i] & 255], 1u);
}''', "hist")
    [res] = fp.evaluate((10,), (128,), {2: i32(1200)}, [(3, 5)], {P0: 4800, P1: 1024})
    # (the compiler reads only the low byte of each int: data & 255)
    assert res[P0] == Access(((3 * 512, 5 * 512 - 3),), ())
    assert res[P1] == Access(((0, 1024),), ((0, 1024),))


def test_atomics_read_and_write_their_element():
    fp = footprint(r'''
extern "C" __global__ void acc(const int* v, int* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&out[i], v[i]);
}''', "acc")
    [res] = fp.evaluate((10,), (128,), {2: i32(1200)}, [(9, 10)], {P0: 4800, P1: 4800})
    assert res[P1] == Access(((9 * 512, 4800),), ((9 * 512, 4800),))


def test_call_storing_through_a_pointer():
    fp = footprint(r'''
__device__ __noinline__ void put(float* p, float v) { *p = v; }
extern "C" __global__ void callst(const float* a, float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { c[i] = a[i]; put(b + i, a[i] + 1.0f); }
}''', "callst")
    sizes = {P0: 4000, P1: 4000, P2: 4000}
    [res] = fp.evaluate((4,), (256,), {3: i32(1000)}, [(0, 1)], sizes)
    assert res[P1].writes == ((0, 4000),) and not res[P1].reads
    assert res[P0] == Access(((0, 1024),), ()) and res[P2] == Access((), ((0, 1024),))
    assert "put" in fp.reason(P1, "w")


def test_call_to_a_function_without_memory_is_free():
    fp = footprint(r'''
__device__ __noinline__ int twice(int v) { return 2 * v; }
extern "C" __global__ void c2(const int* a, int* b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) b[i] = twice(a[i]);
}''', "c2")
    [res] = fp.evaluate((4,), (256,), {2: i32(1000)}, [(1, 2)], {P0: 4000, P1: 4000})
    assert res == {P0: Access(((1024, 2048),), ()), P1: Access((), ((1024, 2048),))}


def test_printf_reads_its_strings_whole():
    fp = footprint(r'''
extern "C" __global__ void pr(const int* a, int* b) {
    int i = threadIdx.x;
    printf("%d\n", a[i]);
    b[i] = a[i];
}''', "pr")
    strings = [t for t in fp.targets if t[0] == "var"]
    assert strings
    sizes = {P0: 128, P1: 128, **{t: 4 for t in strings}}
    [res] = fp.evaluate((1,), (32,), {}, [(0, 1)], sizes)
    assert all(res[t] == Access(((0, 4),), ()) for t in strings)
    assert res[P1] == Access((), ((0, 128),)) and res[P0] == Access(((0, 128),), ())


# -- wrap-around --------------------------------------------------------------------------------
SPREAD = r'''
extern "C" __global__ void spread(float* a, int stride) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    a[i * stride] = 1.0f;                       // 32-bit: wraps when i * stride >= 2**31
}
extern "C" __global__ void spread_u(float* a, unsigned stride) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    a[i * stride] = 1.0f;                       // unsigned: wraps at 2**32
}
extern "C" __global__ void spread64(float* a, long long stride) {
    long long i = blockIdx.x * blockDim.x + threadIdx.x;
    a[i * stride] = 1.0f;                       // 64-bit: no wrap
}'''


def test_a_32bit_index_that_may_wrap_gives_the_whole_buffer():
    """Once i * stride may leave its type's range, the index is any value of the type: the
    whole buffer (an int index of floats reaches at most 2**33 bytes, unsigned 2**34)."""
    grid, block = (4096,), (1024,)
    signed, unsigned, wide = (footprint(SPREAD, n) for n in ("spread", "spread_u", "spread64"))
    for size in (BIG, 3 << 30):
        sizes = {P0: size}
        a, b, c = signed.evaluate(grid, block, {1: i32(1000)},
                                  [(0, 1), (2000, 2100), (4095, 4096)], sizes)
        assert a[P0].writes == ((0, 4 * 1023 * 1000 + 4),)
        assert b[P0].writes == ((0, min(size, 1 << 33)),)     # crosses 2**31: may wrap
        assert c == {}       # every index wrapped to a negative one: these threads fault
        a, b = unsigned.evaluate(grid, block, {1: u32(2000)}, [(1000, 1100), (2000, 2100)],
                                 sizes)
        if size == BIG:
            assert a[P0].writes == ((4 * 1000 * 1024 * 2000, 4 * (1100 * 1024 - 1) * 2000 + 4),)
        assert b[P0].writes == ((0, min(size, 1 << 34)),)     # crosses 2**32
    [c] = wide.evaluate(grid, block, {1: struct.pack("<q", 1000)}, [(4095, 4096)], {P0: BIG})
    assert c[P0].writes == ((4 * 4095 * 1024 * 1000, 4 * (4096 * 1024 - 1) * 1000 + 4),)


# -- scalars from structs -----------------------------------------------------------------------
def test_scalars_from_a_struct_parameter():
    fp = footprint(r'''
struct P { int n; int stride; float scale; short off; };
extern "C" __global__ void sp(P p, const float* x, float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < p.n) y[i * p.stride + p.off] = x[i] * p.scale;
}''', "sp")
    n, stride, off = 900, 3, -2
    raw = struct.pack("<iifh2x", n, stride, 1.5, off)
    sizes = {P1: 4 * n, P2: 4 * (n * stride + 1)}

    def acc(t):
        i = t["bx"] * 128 + t["tx"]
        return [(P1, "r", i < n, 4 * i, 4), (P2, "w", i < n, 4 * (i * stride + off), 4)]

    check(fp, (8,), (128,), {0: raw}, [(0, 1), (1, 6), (6, 8)], sizes, acc)


# -- hand-written PTX ---------------------------------------------------------------------------
HEAD = ".version 7.8\n.target sm_80\n.address_size 64\n"


def test_guard_predicate_vector_loads_and_module_variables():
    fp = footprint_ptx(HEAD + r'''
.global .align 4 .b8 table[64];
.visible .entry k(.param .u64 p0, .param .u64 p1, .param .u32 n)
{
    .reg .pred %p<3>; .reg .b32 %r<8>; .reg .f32 %f<8>; .reg .b64 %rd<12>;
    ld.param.u64 %rd1, [p0];
    ld.param.u64 %rd2, [p1];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %tid.x;
    mov.u32 %r3, %ctaid.x;
    mov.u32 %r4, %ntid.x;
    mad.lo.s32 %r5, %r3, %r4, %r2;
    setp.lt.u32 %p1, %r5, %r1;
    mul.wide.u32 %rd3, %r5, 16;
    add.s64 %rd4, %rd1, %rd3;
    @%p1 ld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd4+16];
    ld.global.f32 %f5, [table+8];
    mul.wide.u32 %rd5, %r5, 4;
    add.s64 %rd6, %rd2, %rd5;
    @!%p1 bra DONE;
    st.global.f32 [%rd6], %f5;
DONE:
    ret;
}''')
    sizes = {P0: 1 << 20, P1: 1 << 20, ("var", "table"): 64}
    [res] = fp.evaluate((8,), (64,), {2: u32(300)}, [(2, 6)], sizes)
    assert res[P0] == Access(((128 * 16 + 16, 299 * 16 + 32),), ())
    assert res[P1] == Access((), ((128 * 4, 300 * 4),))
    assert res[("var", "table")] == Access(((8, 12),), ())


POINTER_IV = HEAD + r'''
.visible .entry k(.param .u64 p0, .param .u32 n, .param .u64 p1)
{
    .reg .pred %p<3>; .reg .b32 %r<8>; .reg .f32 %f<8>; .reg .b64 %rd<12>;
    ld.param.u64 %rd1, [p0];
    ld.param.u32 %r1, [n];
    ld.param.u64 %rd9, [p1];
    mov.u32 %r2, %ctaid.x;
    mul.lo.s32 %r3, %r2, %r1;
    mul.wide.s32 %rd2, %r3, 4;
    add.s64 %rd3, %rd1, %rd2;        // a pointer that walks n floats from row ctaid.x
    mov.u32 %r4, 0;
    mov.f32 %f1, 0f00000000;
LOOP:
    ld.global.f32 %f2, [%rd3];
    add.f32 %f1, %f1, %f2;
    add.s64 %rd3, %rd3, 4;
    add.s32 %r4, %r4, 1;
    setp.ne.s32 %p1, %r4, %r1;
    @%p1 bra LOOP;
    cvta.to.shared.u64 %rd5, %rd1;   // shared memory: not a buffer
    st.shared.f32 [%rd5], %f1;
    mov.u32 %r6, %ctaid.x;
    mul.wide.u32 %rd6, %r6, 4;
    add.s64 %rd7, %rd9, %rd6;
    st.global.f32 [%rd7], %f1;
    ret;
}'''


def test_pointer_induction_variable_with_a_counting_exit_test():
    fp = footprint_ptx(POINTER_IV)
    n = 37
    [a, b] = fp.evaluate((10,), (32,), {1: u32(n)}, [(2, 5), (9, 10)], {P0: 4000, P2: 40})
    assert a == {P0: Access(((2 * n * 4, 5 * n * 4),), ()), P2: Access((), ((8, 20),))}
    assert b[P0] == Access(((9 * n * 4, 10 * n * 4),), ())


def test_a_loop_without_trip_count_reads_to_the_end():
    fp = footprint_ptx(HEAD + r'''
.visible .entry k(.param .u64 p0)
{
    .reg .pred %p<3>; .reg .b32 %r<8>; .reg .b64 %rd<12>;
    ld.param.u64 %rd1, [p0];
    mov.u32 %r2, %ctaid.x;
    mul.wide.u32 %rd2, %r2, 64;
    add.s64 %rd3, %rd1, %rd2;
LOOP:
    ld.global.u32 %r3, [%rd3];        // until a zero: a data-dependent exit
    add.s64 %rd3, %rd3, 4;
    setp.ne.s32 %p1, %r3, 0;
    @%p1 bra LOOP;
    ret;
}''')
    [res] = fp.evaluate((10,), (32,), {}, [(3, 4)], {P0: 4000})
    assert res[P0] == Access(((192, 4000),), ())


def test_32bit_modules_and_unanalysed_memory_are_whole():
    fp = footprint_ptx(".version 7.8\n.target sm_80\n.address_size 32\n"
                       ".visible .entry k(.param .u32 p0) { ret; }")
    [res] = fp.evaluate((1,), (1,), {}, [(0, 1)], {P0: 16})
    assert res[P0] == Access(((0, 16),), ((0, 16),)) and "32-bit" in fp.reason(P0)
    fp = footprint_ptx(HEAD + r'''
.visible .entry k(.param .u64 p0, .param .u64 p1)
{
    .reg .b64 %rd<4>; .reg .b32 %r<4>;
    ld.param.u64 %rd1, [p0];
    ld.global.u64 %rd2, [%rd1];
    st.global.u32 [%rd2+4], %r1;
    ret;
}''')
    [res] = fp.evaluate((1,), (1,), {}, [(0, 1)], {P0: 16, P1: 32})
    assert res[P0] == Access(((0, 8),), ((0, 16),)) and res[P1] == Access((), ((0, 32),))


def test_cp_async_reads_its_source():
    fp = footprint_ptx(HEAD + r'''
.visible .entry k(.param .u64 p0)
{
    .shared .align 16 .b8 buf[4096];
    .reg .b64 %rd<6>; .reg .b32 %r<6>;
    ld.param.u64 %rd1, [p0];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd2, %r1, 16;
    add.s64 %rd3, %rd1, %rd2;
    mov.u32 %r2, buf;
    shl.b32 %r3, %r1, 4;
    add.s32 %r4, %r2, %r3;
    cp.async.ca.shared.global [%r4], [%rd3], 16;
    cp.async.wait_all;
    ret;
}''')
    [res] = fp.evaluate((2,), (64,), {}, [(0, 2)], {P0: 4096})
    assert res == {P0: Access(((0, 1024),), ())}


def test_irreducible_control_flow_is_whole():
    fp = footprint_ptx(HEAD + r'''
.visible .entry k(.param .u64 p0, .param .u32 c)
{
    .reg .pred %p<3>; .reg .b32 %r<6>; .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [p0];
    ld.param.u32 %r1, [c];
    setp.eq.s32 %p1, %r1, 0;
    @%p1 bra B;
A:
    st.global.u32 [%rd1], %r1;
    add.s32 %r1, %r1, -1;
B:
    setp.gt.s32 %p2, %r1, 0;
    @%p2 bra A;
    ret;
}''')
    [res] = fp.evaluate((1,), (1,), {1: i32(3)}, [(0, 1)], {P0: 64})
    assert res[P0] == Access(((0, 64),), ((0, 64),))
    assert "irreducible" in fp.reason(P0)


# -- timing (printed, never asserted) -----------------------------------------------------------
def test_evaluation_time_benchmark():
    vec = footprint(VEC, "vec")
    mm = footprint(MATMUL, "mm")
    cases = [
        ("vecadd, 1 range", vec, (400,), (256,), {2: i32(100000)}, [(17, 230)],
         {P0: 400000, P1: 400000}),
        ("vecadd, 8 ranges", vec, (400,), (256,), {2: i32(100000)},
         [(50 * i, 50 * i + 50) for i in range(8)], {P0: 400000, P1: 400000}),
        ("matmul 2-D, 8 ranges of whole block rows", mm, (32, 32), (16, 16),
         {3: i32(500), 4: i32(500), 5: i32(300)}, [(128 * i, 128 * i + 128) for i in range(8)],
         {P0: 600000, P1: 600000, P2: 1000000}),
        ("matmul 2-D, 8 ranges cutting rows (24 boxes)", mm, (32, 32), (16, 16),
         {3: i32(500), 4: i32(500), 5: i32(300)},
         [(128 * i + 5, 128 * i + 133) for i in range(7)] + [(901, 1024)],
         {P0: 600000, P1: 600000, P2: 1000000}),
    ]
    for label, fp, grid, block, scalars, ranges, sizes in cases:
        timings = []
        for repeated in (False, True):
            best = float("inf")
            for _ in range(5):
                t0 = time.perf_counter()
                for _ in range(200):
                    if not repeated:
                        fp._recent.clear()       # a launch not seen before
                    fp.evaluate(grid, block, scalars, ranges, sizes)
                best = min(best, (time.perf_counter() - t0) / 200 * 1e6)
            timings.append(best)
        print(f"\nfootprint evaluate, {label}: {timings[0]:.1f} us "
              f"({timings[1]:.1f} us when the same launch repeats)")


# -- tricky control flow, checked against real executions ---------------------------------------
TRICKY = r'''
// a guard inside a loop on a loop variant; the value used after the loop
extern "C" __global__ void after_loop(const int* step, int* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int j = i;
    while (true) { if (j >= n + 40) break; j += 1 + (step[i] & 7); }
    out[j - 40] = j;                            // j in [n + 40, n + 47]
}
// a reverse loop: the IV counts down
extern "C" __global__ void reverse(const float* a, float* out, int n, int len) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= n) return;
    float s = 0.0f;
    for (int k = len - 1; k >= 0; --k) s = s * 0.5f + a[r * len + k];
    out[r] = s;
}
// step 2 with a != test: exact only when len is even, else it never stops (not launched)
extern "C" __global__ void by_two(const int* a, int* out, int n, int len) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= n) return;
    int s = 0;
    for (int k = 0; k != len; k += 2) s += a[r * len + k];
    out[r] = s;
}
// an unsigned counter going down with a post-decrement test
extern "C" __global__ void down_unsigned(const int* a, int* out, unsigned n, unsigned len) {
    unsigned r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= n) return;
    int s = 0;
    for (unsigned k = len; k-- > 0; ) s += a[r * len + k];
    out[r] = s;
}
// a conditionally incremented index, a break in the middle of a loop
extern "C" __global__ void compact_row(const int* a, int* out, int n, int len) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= n) return;
    int w = 0;
    for (int k = 0; k < len; ++k) {
        int v = a[r * len + k];
        if (v < 0) break;
        if (v & 1) { out[r * len + w] = v; ++w; }
    }
}
// one of two buffers, chosen per thread
extern "C" __global__ void pick(float* a, float* b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float* p = (i & 1) ? a : b;
    p[i] = 2.0f * i;
}
// a pointer walking to an end pointer
extern "C" __global__ void walk(float* a, int len) {
    float* p = a + blockIdx.x * len + threadIdx.x;
    float* end = a + (blockIdx.x + 1) * len;
    for (; p < end; p += blockDim.x) *p = 1.0f;
}
// an index read from the buffer itself, checked before use
extern "C" __global__ void checked_gather(const int* idx, const float* src, float* dst, int n,
                                          int m) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int k = idx[i];
    if (k >= 0 && k < m) dst[i] = src[k];
}
// 64-bit sizes: a grid-stride loop over size_t
extern "C" __global__ void stride64(float* d, size_t n) {
    size_t stride = (size_t)blockDim.x * gridDim.x;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += stride)
        d[i] += 1.0f;
}
// two values that swap on a data-dependent branch: a condition on one says nothing of the other
extern "C" __global__ void swapped(const int* flag, int* out) {
    int i = threadIdx.x;
    int a, b;
    if (flag[i] > 0) { a = i; b = i + 1000; } else { a = i + 1000; b = i; }
    if (a < 64) out[b] = 1;
}
// an early return inside a loop, the row of a 2-D block
extern "C" __global__ void first_negative(const int* a, int* pos, int rows, int len) {
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows || c != 0) return;
    for (int k = 0; k < len; ++k)
        if (a[r * len + k] < 0) { pos[r] = k; return; }
    pos[r] = -1;
}
// a bisection in each pair of runs of width w, clamped with compares and selects that
// NVRTC rewrites (the low clamp tests a + b < -1, not j < lo; the midpoint is a signed
// division by 2 done with shifts; lo is t - t % 2w)
extern "C" __global__ void clamped_search(const float* keys, int* out, int n, int w) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    int lo = t / (2 * w) * (2 * w);
    int hi = lo + 2 * w < n ? lo + 2 * w : n;
    float v = keys[t];
    int a = 0, b = hi - lo;
    while (a < b) {
        int m = (a + b) / 2;
        int j = lo + m;
        j = j < lo ? lo : j > hi - 1 ? hi - 1 : j;
        if (keys[j] < v) a = m + 1; else b = m;
    }
    out[t] = a;
}
// a thread per pair of sorted runs merged: two indices stepped by selects of one predicate
// (each loop's steps refer to the other's value)
extern "C" __global__ void merge_pairs(const int* a, int* out, int n, int w) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int lo = t * 2 * w;
    if (lo >= n) return;
    int mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
    int i = lo, j = mid;
    for (int k = lo; k < hi; k++) {
        int x = a[i < mid ? i : mid - 1], y = a[j < hi ? j : hi - 1];
        bool right = (j < hi) & ((i >= mid) | (y < x));
        out[k] = right ? y : x;
        i += right ? 0 : 1;
        j += right ? 1 : 0;
    }
}
// a select whose other choice no thread takes (i is never negative), and signed divisions
// by powers of two of values on both sides of zero (C truncates toward zero)
extern "C" __global__ void select_and_halve(const int* in, int* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int j = i >= 0 ? i : 100000;
    int h = (i - 200) / 2 + 100, q = (i - 200) / 8 + 25;
    out[j] = in[h] + in[q];
}
'''


def _tricky_cases():
    rng = np.random.default_rng(3)
    n, length = 300, 12
    return [
        ("after_loop", (3,), (128,), lambda: [rng.integers(0, 100, 384).astype(np.int32),
                                              np.zeros(400, np.int32), np.int32(n)]),
        ("reverse", (5,), (64,), lambda: [rng.random(n * length, np.float32),
                                          np.zeros(n, np.float32), np.int32(n), np.int32(length)]),
        ("by_two", (5,), (64,), lambda: [rng.integers(-9, 9, n * length).astype(np.int32),
                                         np.zeros(n, np.int32), np.int32(n), np.int32(length)]),
        ("down_unsigned", (5,), (64,), lambda: [rng.integers(-9, 9, n * length).astype(np.int32),
                                                np.zeros(n, np.int32), np.uint32(n),
                                                np.uint32(length)]),
        ("compact_row", (5,), (64,), lambda: [rng.integers(-2, 50, n * length).astype(np.int32),
                                              np.zeros(n * length, np.int32), np.int32(n),
                                              np.int32(length)]),
        ("pick", (4,), (128,), lambda: [np.zeros(500, np.float32), np.zeros(500, np.float32),
                                        np.int32(500)]),
        ("walk", (6,), (32,), lambda: [np.zeros(6 * 100, np.float32), np.int32(100)]),
        ("checked_gather", (4,), (128,), lambda: [rng.integers(-50, 150, 500).astype(np.int32),
                                                  rng.random(100, np.float32),
                                                  np.zeros(500, np.float32), np.int32(500),
                                                  np.int32(100)]),
        ("stride64", (6,), (64,), lambda: [np.zeros(5000, np.float32), np.uint64(5000)]),
        ("swapped", (1,), (64,), lambda: [rng.integers(-5, 5, 64).astype(np.int32),
                                          np.zeros(1100, np.int32)]),
        ("first_negative", (2, 5), (4, 16), lambda: [rng.integers(-3, 60, 70 * 9).astype(np.int32),
                                                     np.zeros(70, np.int32), np.int32(70),
                                                     np.int32(9)]),
        ("clamped_search", (16,), (64,), lambda: [rng.random(1000, np.float32),
                                                  np.zeros(1000, np.int32), np.int32(1000),
                                                  np.int32(32)]),
        ("merge_pairs", (2,), (32,), lambda: [np.sort(rng.integers(0, 99, 1000).reshape(-1, 10),
                                                      axis=1).astype(np.int32).ravel(),
                                              np.zeros(1000, np.int32), np.int32(1000),
                                              np.int32(10)]),
        ("select_and_halve", (4,), (128,), lambda: [rng.integers(0, 9, 400).astype(np.int32),
                                                    np.zeros(400, np.int32), np.int32(400)]),
    ]


@pytest.mark.parametrize("name, grid, block, make", _tricky_cases(),
                         ids=[c[0] for c in _tricky_cases()])
def test_tricky_kernels_against_execution(name, grid, block, make):
    from tests.test_footprint_corpus import check_against_execution
    kernel = dptx.RawModule(TRICKY).get_function(name)
    whole = check_against_execution(kernel, grid, block, make(), label=name)
    print(f"\n{name}: whole targets: {whole}")


def test_tricky_kernels_stay_precise():
    m = dptx.RawModule(TRICKY)

    def run(name, grid, block, scalars, ranges, sizes):
        k = m.get_function(name)
        return kernel_footprint(k.module, k.function).evaluate(grid, block, scalars, ranges,
                                                               sizes)
    n, length = 300, 12
    [res] = run("reverse", (5,), (64,), {2: i32(n), 3: i32(length)}, [(1, 2)],
                {P0: 4 * n * length, P1: 4 * n})
    assert res[P0].reads == ((4 * 64 * length, 4 * 128 * length),)
    [res] = run("by_two", (5,), (64,), {2: i32(n), 3: i32(length)}, [(1, 2)],
                {P0: 4 * n * length, P1: 4 * n})
    assert res[P0].reads[0][0] == 4 * 64 * length         # from the range's first row on
    [res] = run("down_unsigned", (5,), (64,), {2: u32(n), 3: u32(length)}, [(1, 2)],
                {P0: 4 * n * length, P1: 4 * n})
    assert res[P0].reads == ((4 * 64 * length, 4 * 128 * length),)
    [res] = run("pick", (4,), (128,), {2: i32(500)}, [(1, 2)], {P0: 2000, P1: 2000})
    assert res[P0].writes == res[P1].writes == ((512, 1024),)
    [res] = run("walk", (6,), (32,), {1: i32(100)}, [(2, 3)], {P0: 2400})
    assert res[P0].writes == ((800, 1200),)
    [res] = run("checked_gather", (4,), (128,), {3: i32(500), 4: i32(100)}, [(1, 2)],
                {P0: 2000, P1: 400, P2: 2000})
    assert res[P1].reads == ((0, 400),) and res[P2].writes == ((512, 1024),)
    [res] = run("swapped", (1,), (64,), {}, [(0, 1)], {P0: 256, P1: 4400})
    assert res[P1].writes == ((0, 4 * 1064),)      # b reaches i + 1000 when a < 64


def test_clamps_bisections_and_halving_stay_precise():
    """Each block bisects only its own pair of runs (w = 32: a pair is a block), through
    the clamp's selects, the midpoint's shifts and lo's remainder; a choice no thread takes
    stays out; divisions by 2 and 8 of values either side of zero give their exact ends."""
    k = dptx.RawModule(TRICKY).get_function("clamped_search")
    fp = kernel_footprint(k.module, k.function)
    got = fp.evaluate((16,), (64,), {2: i32(1000), 3: i32(32)}, [(0, 1), (1, 2), (5, 9)],
                      {P0: 4000, P1: 4000})
    assert [r[P0].reads for r in got] == [((0, 256),), ((256, 512),), ((1280, 2304),)]
    got = fp.evaluate((16,), (64,), {2: i32(1000), 3: i32(64)}, [(1, 2), (2, 4)],
                      {P0: 4000, P1: 4000})
    assert [r[P0].reads for r in got] == [((0, 512),), ((512, 1024),)]   # pairs of 2 blocks

    # two indices stepped by selects: each read clamped to its run by a select
    k = dptx.RawModule(TRICKY).get_function("merge_pairs")
    fp = kernel_footprint(k.module, k.function)
    got = fp.evaluate((2,), (32,), {2: i32(1000), 3: i32(10)}, [(0, 1), (1, 2)],
                      {P0: 4000, P1: 4000})
    assert [r[P0].reads for r in got] == [((0, 2560),), ((2560, 4000),)]

    k = dptx.RawModule(TRICKY).get_function("select_and_halve")
    fp = kernel_footprint(k.module, k.function)
    n = 400
    for b in range(4):
        [res] = fp.evaluate((4,), (128,), {2: i32(n)}, [(b, b + 1)], {P0: 4 * n, P1: 4 * n})
        i = np.arange(128 * b, min(128 * (b + 1), n))
        h = np.trunc((i - 200) / 2).astype(int) + 100
        q = np.trunc((i - 200) / 8).astype(int) + 25
        lo, hi = min(h.min(), q.min()), max(h.max(), q.max())
        assert res[P1].writes == ((4 * i[0], 4 * (i[-1] + 1)),)
        # (the two reads' intervals merge where they touch)
        want = _merge([(4 * h.min(), 4 * h.max() + 4), (4 * q.min(), 4 * q.max() + 4)])
        assert res[P0].reads == want, (b, lo, hi)


def test_64bit_parameters_are_buffers_or_numbers_as_the_launch_says():
    """A u64 parameter may be a buffer or a number (size_t): the launch tells which, by
    passing its size or its bytes."""
    fp = footprint(r'''
extern "C" __global__ void sz(float* a, size_t n, unsigned long long where) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) a[i] = 1.0f;
    if (i == 0) *(int*)where = 7;             // an integer used as an address
}''', "sz")
    q = struct.pack("<Q", 1000)
    [res] = fp.evaluate((8,), (128,), {1: q, 2: q}, [(1, 2)], {P0: 4000})
    assert res[P0].writes == ((0, 4000),)      # through `where`: any buffer may change
    assert res[P0].reads == ()
    explain = {}
    [res] = fp.evaluate((8,), (128,), {1: q, 2: q}, [(1, 2)], {P0: 4000}, explain=explain)
    assert "argument 2" in explain[P0]
    fp = footprint(r'''
extern "C" __global__ void sz2(float* a, size_t n) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) a[i] = 1.0f;
}''', "sz2")
    [res] = fp.evaluate((8,), (128,), {1: q}, [(1, 2)], {P0: 4000})
    assert res[P0].writes == ((512, 1024),)    # n is a number: the guard narrows
    [res] = fp.evaluate((8,), (128,), {1: q}, [(7, 8)], {P0: 4000})
    assert res[P0].writes == ((7 * 512, 4000),)


def test_explain_says_why_targets_are_whole():
    fp = footprint(r'''
extern "C" __global__ void hist2(const int* data, unsigned* bins, float** tables, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { atomicAdd(&bins[data[i] & 255], 1u); data = (const int*)tables[0]; }
    if (i < n) bins[i & 7] += (unsigned)data[0];
}''', "hist2")
    explain = {}
    sizes = {P0: 4000, P1: 1024, P2: 64}
    fp.evaluate((8,), (128,), {3: i32(1000)}, [(0, 8)], sizes, explain=explain)
    assert set(explain) == set(sizes)
    assert "unknown origin" in explain[P0] or "loaded from memory" in explain[P0]
