"""The array API's generated reductions have exact access footprints: a chunk of blocks reads
only the elements its blocks reduce. On a cluster the footprint decides what a chunk is
given; a loose one (a loop bounded by a data-dependent end) made every chunk of ``a.sum()``
receive, and copy, the whole array. The reference is the block-to-elements map
``dptx._core.reduction_kernel.pieces`` promises, computed here with plain integers."""
import numpy as np
import pytest

import dptx
from dptx._core import reduction_kernel
from dptx.runtime.module import RawModule
from graphs.footprints import chunk_footprints

F32 = np.dtype(np.float32)


def _kernel(mode: str, layout="t", nkept=0, nred=1):
    k = reduction_kernel.ReductionKernel("float32 x", "float32 y", "x", "a + b", "y = a", "0",
                                   "fp_sum", reduce_type="float32", options=reduction_kernel.EXACT)
    src = k.source({"x": F32, "y": F32}, {}, F32, ("a",), layout, nkept, nred, mode, False)
    return RawModule(src, options=reduction_kernel.EXACT).get_function(f"fp_sum_{mode}")


def _reads(kernel, grid, M, R, P, piece, ranges):
    params = (("buffer", (0, 0)), ("buffer", (1, 0)), ("scalar", np.int32(M)),
              ("scalar", np.int32(R)), ("scalar", np.int32(P)), ("scalar", np.int32(piece)))
    got = chunk_footprints(kernel, grid, (reduction_kernel.BLOCK, 1, 1), params, (),
                           [M * R * 4, M * P * 4], ranges)
    assert got is not None
    return [per_range[0][0] for per_range in got]


@pytest.mark.parametrize("R", [1 << 24, 3 * 65536 + 1234, 5000, 4096 * 7 + 3])
def test_a_chunk_of_a_full_reduction_reads_only_its_pieces(R):
    M = 1
    P, piece = reduction_kernel.pieces(M, R)
    assert piece % reduction_kernel.PIECE_ROUND == 0 and (P - 1) * piece < R <= P * piece
    cuts = sorted({0, P // 3, P // 2, P})
    ranges = [(a, b) for a, b in zip(cuts, cuts[1:]) if b > a]
    reads = _reads(_kernel(reduction_kernel.PIECES), (P, M, 1), M, R, P, piece, ranges)
    for (b0, b1), got in zip(ranges, reads):
        assert got == [(4 * b0 * piece, 4 * min(b1 * piece, R))], (b0, b1)


@pytest.mark.parametrize("M,R", [(100, 5000), (64, 300), (200, 1), (64, 4096), (70, 2048)])
def test_a_chunk_of_a_block_per_row_reduction_reads_its_rows(M, R):
    """Rows of a multiple of PIECE_ROUND: exactly the chunk's rows; other rows: the last
    row's share may seem to reach less than PIECE_ROUND elements into the next row (the
    analysis does not relate a warp's count to its start), never before the first row."""
    P, piece = reduction_kernel.pieces(M, R)
    assert P == 1 and piece >= R
    ranges = [(0, M // 3), (M // 3, M)]
    reads = _reads(_kernel(reduction_kernel.ROWS), (M, 1, 1), M, R, P, piece, ranges)
    for (b0, b1), got in zip(ranges, reads):
        assert len(got) == 1 and got[0][0] == 4 * b0 * R, (b0, b1, got)
        end = min(4 * (b1 * R + reduction_kernel.PIECE_ROUND), 4 * M * R)
        if R % reduction_kernel.PIECE_ROUND == 0:
            assert got[0][1] == 4 * b1 * R
        else:
            assert 4 * b1 * R <= got[0][1] <= end, (b0, b1, got)


@pytest.mark.parametrize("M,R", [(100, 100), (64, 4096), (1000, 1), (77, 33)])
def test_a_chunk_of_a_warp_per_row_reduction_reads_exactly_its_rows(M, R):
    P, piece = reduction_kernel.pieces(M, R)
    per_block = reduction_kernel.BLOCK // 32
    blocks = -(-M // per_block)
    ranges = [(0, blocks // 3), (blocks // 3, blocks)]
    reads = _reads(_kernel(reduction_kernel.WARPS), (blocks, 1, 1), M, R, P, piece, ranges)
    for (b0, b1), got in zip(ranges, reads):
        assert got == [(4 * b0 * per_block * R, 4 * min(b1 * per_block, M) * R)], (b0, b1)


# -- element-wise kernels over strided views --------------------------------------------------
def _strided_assign(ndim: int, wide: bool):
    k = dptx.ElementwiseKernel("float32 x", "float32 z", "z = x", "fp_assign",
                               options=("--fmad=false",))
    src = k.source({"x": F32, "z": F32}, {}, ("i", "s"), ndim, wide)
    return RawModule(src, options=("--fmad=false",)).get_function("fp_assign")


def _strided_writes(shape, wide, ranges, block):
    """Per block range, the write hull of ``out[..., :W] = x`` where out's last axis is 2W."""
    from dptx._core.elementwise import fast_divisor
    idx = np.int64 if wide else np.int32
    n = int(np.prod(shape))
    scalars = [("scalar", idx(n))] + [("scalar", idx(d)) for d in shape]
    if not wide:
        for d in shape[1:]:
            scalars += [("scalar", np.uint32(x)) for x in fast_divisor(d)]
    strides = [1]
    for d in reversed((shape[:-1]) + (2 * shape[-1],)):
        strides.insert(0, strides[0] * d)
    scalars += [("scalar", idx(0))] + [("scalar", idx(s)) for s in strides[1:]]
    params = (("buffer", (0, 0)), ("buffer", (1, 0))) + tuple(scalars)
    got = chunk_footprints(_strided_assign(len(shape), wide), (n // block, 1, 1), (block, 1, 1),
                           params, (), [n * 4, 2 * n * 4], ranges)
    assert got is not None
    return [per_range[1][1] for per_range in got]


_DIVIDING = r"""
extern "C" __global__ void fp_divide(const float* x, float* z, int n, int W, int row) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    long long r = i / W, c = i % W;         // the compiler forms c as i - r * W
    z[r * row + c] = x[i];
}
"""


@pytest.mark.parametrize("form", ["fast-divisors", "division"])
def test_a_chunk_writing_a_strided_view_writes_only_its_rows(form):
    """``out[:, :W] = x`` over a (D, 2W) output: thread i writes element (i // W, i % W) of
    the view, found by dividing by the view's extent: the array API's multiply and shift by a
    precomputed divisor, or (a hand-written kernel) a division whose remainder the compiler
    forms as i - (i / W) * W. A chunk of blocks must come out writing only the rows its
    threads reach: otherwise the chunks' writes overlap and every chunk's window is diffed
    byte by byte (the strided assignment behind ``concatenate(axis=1)`` ran 10x slower on
    the cluster)."""
    D, W, block = 3072, 256, 128
    nblocks = D * W // block
    cuts = [0, nblocks // 3, nblocks // 2 + 7, nblocks]
    ranges = list(zip(cuts, cuts[1:]))
    if form == "division":
        kernel = RawModule(_DIVIDING).get_function("fp_divide")
        params = (("buffer", (0, 0)), ("buffer", (1, 0)), ("scalar", np.int32(D * W)),
                  ("scalar", np.int32(W)), ("scalar", np.int32(2 * W)))
        got = chunk_footprints(kernel, (nblocks, 1, 1), (block, 1, 1), params, (),
                               [D * W * 4, 2 * D * W * 4], ranges)
        hulls = [per_range[1][1] for per_range in got]
    else:
        hulls = _strided_writes((D, W), False, ranges, block)
    for (b0, b1), writes in zip(ranges, hulls):
        first, last = b0 * block, b1 * block - 1              # the chunk's threads
        (lo, hi), = writes
        assert first // W * 2 * W * 4 <= lo <= (first // W * 2 * W + first % W) * 4
        assert (last // W * 2 * W + last % W + 1) * 4 <= hi <= (last // W * 2 * W + W) * 4


def test_a_strided_chunk_in_three_dimensions_stays_within_its_planes():
    """Three axes: the middle index is only bounded by its extent where a chunk's rows span
    more than one plane, so the hull is the chunk's planes, never the whole buffer."""
    shape, block = (6, 512, 256), 128
    nblocks = int(np.prod(shape)) // block
    cuts = [0, nblocks // 3, nblocks // 2 + 7, nblocks]
    ranges = list(zip(cuts, cuts[1:]))
    plane = shape[1] * 2 * shape[2] * 4
    for (b0, b1), writes in zip(ranges, _strided_writes(shape, False, ranges, block)):
        first, last = b0 * block, b1 * block - 1
        per_plane = shape[1] * shape[2]
        (lo, hi), = writes
        assert first // per_plane * plane <= lo and hi <= (last // per_plane + 1) * plane


def test_fast_divisors_divide_every_index_exactly():
    from dptx._core.elementwise import fast_divisor
    rng = np.random.default_rng(7)
    for d in list(range(1, 2049)) + [4095, 4097, 65535, 65537, 3 ** 19, 2 ** 30 + 1, 2 ** 31 - 1]:
        m, shift = fast_divisor(d)
        assert 0 < m < 2 ** 32
        n = np.concatenate([rng.integers(0, 2 ** 31, 64), [0, 1, d - 1, d, d + 1, 2 ** 31 - 1]])
        n = n[n < 2 ** 31].astype(object)
        assert [(int(v) * m) >> shift for v in n] == [int(v) // d for v in n], d


def test_a_chunk_of_a_running_sum_touches_only_its_pieces():
    """cumsum's kernels: thread t scans piece t (PIECE elements) of a row. Each chunk must
    read and write its own pieces only; with loops from a start to an end that both depend
    on the thread, the footprint reached about twice as far and every chunk's window was the
    whole array, diffed byte by byte (cumsum of 16M floats: 441 -> 101 ms on the cluster)."""
    from dptx._core import scan
    L = scan.PIECE * 40 + 123
    P = -(-L // scan.PIECE)
    mod = scan._module(F32, F32, "sum", False)
    block = 8
    nblocks = -(-P // block)
    ranges = [(0, 2), (2, 3), (3, nblocks)]
    for name, out_slot in (("dptx_scan_totals", 1), ("dptx_scan_pieces", 2)):
        kernel = mod.get_function(name)
        scalars = (("scalar", np.int32(L)), ("scalar", np.int32(P)), ("scalar", np.int32(P)))
        if name == "dptx_scan_totals":
            params = (("buffer", (0, 0)),) + scalars + (("buffer", (1, 0)),)
            sizes = [L * 4, P * 4]
        else:
            params = (("buffer", (0, 0)),) + scalars + (("buffer", (1, 0)), ("buffer", (2, 0)))
            sizes = [L * 4, P * 4, L * 4]
        got = chunk_footprints(kernel, (nblocks, 1, 1), (block, 1, 1), params, (), sizes, ranges)
        assert got is not None
        for (b0, b1), per_range in zip(ranges, got):
            p0, p1 = b0 * block, min(b1 * block, P)              # the chunk's pieces
            elements = (p0 * scan.PIECE * 4, min(p1 * scan.PIECE, L) * 4)
            assert per_range[0] == ([elements], []), name
            if name == "dptx_scan_totals":
                assert per_range[1] == ([], [(p0 * 4, p1 * 4)])
            else:
                assert per_range[2] == ([], [elements])


def test_a_selection_writes_its_output_and_nothing_else():
    """``a[mask]``'s copy: where each piece's elements land depends on the data, so the
    output is written anywhere, but the footprint must know the stored-to offsets for
    numbers, not pointers that might reach the inputs (64-bit ones were, and every input was
    then diffed as if written)."""
    from dptx._core import selection
    n = selection.PIECE * 10 + 5
    P = -(-n // selection.PIECE)
    kernel = selection._module(F32, np.dtype(bool), False).get_function("dptx_mask_select")
    params = (("buffer", (0, 0)), ("buffer", (1, 0)), ("scalar", np.int32(n)),
              ("buffer", (2, 0)), ("buffer", (3, 0)), ("scalar", np.int32(P)))
    sizes = [n * 4, n, (P + 1) * 4, n * 4]
    got = chunk_footprints(kernel, (P, 1, 1), (1, 1, 1), params, (), sizes, [(0, 4), (4, P)])
    assert got is not None
    for (b0, b1), per_range in zip([(0, 4), (4, P)], got):
        lo, hi = b0 * selection.PIECE, min(b1 * selection.PIECE, n)
        assert per_range[0] == ([(lo * 4, hi * 4)], [])           # its pieces of x, read
        assert per_range[1] == ([(lo, hi)], [])                   # and of the mask
        assert per_range[2][1] == []                              # offsets: only read
        assert per_range[3][0] == [] and per_range[3][1]          # the output: written


def test_a_chunk_of_column_pieces_reads_only_its_rows():
    """``m.sum(axis=0)`` of R rows of M outputs: block (x, p) of the grid reduces outputs
    x*BLOCK.. over rows p*rows..: a chunk of whole pieces must read only its rows and write
    only its partials (piece-major), so chunks on two workers need no rows of each other."""
    M, R = 300, 1000
    P, rows = reduction_kernel.column_pieces(M, R)
    assert P > 1
    k = reduction_kernel.ReductionKernel("float32 x", "float32 y", "x", "a + b", "y = a", "0",
                                   "fp_colsum", reduce_type="float32", options=reduction_kernel.EXACT)
    src = k.source({"x": F32, "y": F32}, {}, F32, ("a",), "c", 1, 1, reduction_kernel.COLUMN_PIECES,
                   False)
    kernel = RawModule(src, options=reduction_kernel.EXACT).get_function("fp_colsum_column_pieces")
    X = -(-M // reduction_kernel.BLOCK)
    params = (("buffer", (0, 0)), ("buffer", (1, 0)), ("scalar", np.int32(M)),
              ("scalar", np.int32(R)), ("scalar", np.int32(P)), ("scalar", np.int32(rows)))
    cut = X * (P // 2)                        # the first half of the pieces, all columns
    got = chunk_footprints(kernel, (X, P, 1), (reduction_kernel.BLOCK, 1, 1), params, (),
                           [M * R * 4, M * P * 4], [(0, cut), (cut, X * P)])
    assert got is not None
    split = P // 2 * rows
    assert got[0][0] == ([(0, split * M * 4)], []) and got[1][0] == ([(split * M * 4, M * R * 4)], [])
    assert got[0][1] == ([], [(0, P // 2 * M * 4)]) and got[1][1] == ([], [(P // 2 * M * 4, P * M * 4)])


@pytest.mark.parametrize("name", ["dptx_sort_runs", "dptx_sort_local"])
def test_a_chunk_of_the_sorts_first_launches_touches_only_its_slices(name):
    """sort's runs (a warp's bitonic network per run of 32, a block per run: each lane's
    reads and writes clamped to its run) and its merges within slices of PIECE (several
    levels in one launch, between the two buffers), on a row of a 1-D sort: a chunk reads
    and writes exactly its own slices of every buffer, so that its writes land directly
    (windows merged byte by byte cost 50-170 ms per launch at 4M floats before)."""
    from dptx._sorting import sorting
    if name == "dptx_sort_runs":
        n = sorting.RUN * 7 - 10                         # seven runs, the last one short
        grid, block = (7, 1, 1), (sorting.RUN, 1, 1)
        cut = 3 * sorting.RUN                            # the first chunk: three runs
        params = (("buffer", (0, 0)), ("buffer", (1, 0)), ("buffer", (2, 0)),
                  ("scalar", np.int32(n)), ("scalar", np.int32(1)), ("scalar", np.int32(1)))
        sizes = [n * 4, n * 4, n * 8]
        ranges = [(0, 3), (3, 7)]
    else:
        n = sorting.BLOCK * sorting.PIECE * 3 - 100      # three blocks, the last one short
        S = -(-n // sorting.PIECE)
        grid, block = (3, 1, 1), (sorting.BLOCK, 1, 1)
        cut = sorting.BLOCK * sorting.PIECE              # block 0's elements
        params = (("buffer", (0, 0)), ("buffer", (1, 0)), ("buffer", (2, 0)), ("buffer", (3, 0)),
                  ("scalar", np.int32(n)), ("scalar", np.int32(S)), ("scalar", np.int32(S)),
                  ("scalar", np.int32(5)), ("scalar", np.int32(1)))
        sizes = [n * 4, n * 8, n * 4, n * 8]
        ranges = [(0, 1), (1, 3)]
    kernel = sorting._module(F32, False).get_function(name)
    got = chunk_footprints(kernel, grid, block, params, (), sizes, ranges)
    assert got is not None
    for k, size in enumerate(sizes):
        item = size // n
        for chunk, (lo, hi) in enumerate([(0, cut * item), (cut * item, size)]):
            reads, writes = got[chunk][k]
            # writes exactly the chunk's slices (the local merges' reads are a hull: each
            # reads its slice, which the analysis bounds only from above there)
            for a, b in writes + (reads if name == "dptx_sort_runs" or chunk == 0 else []):
                assert lo <= a and b <= hi, (name, k, chunk, got[chunk][k])
            assert writes or k == 0, (name, k, chunk, got[chunk][k])
