"""The array API's generated reductions have exact access footprints: a chunk of blocks reads
only the elements its blocks reduce. On a cluster the footprint decides what a chunk is
given; a loose one (a loop bounded by a data-dependent end) made every chunk of ``a.sum()``
receive, and copy, the whole array. The reference is the block-to-elements map
``dptx.reductions.pieces`` promises, computed here with plain integers."""
import numpy as np
import pytest

from dptx import reductions
from dptx.module import RawModule
from graphs.footprints import chunk_footprints

F32 = np.dtype(np.float32)


def _kernel(mode: str, layout="t", nkept=0, nred=1):
    k = reductions.ReductionKernel("float32 x", "float32 y", "x", "a + b", "y = a", "0",
                                   "fp_sum", reduce_type="float32", options=reductions.EXACT)
    src = k.source({"x": F32, "y": F32}, {}, F32, ("a",), layout, nkept, nred, mode, False)
    return RawModule(src, options=reductions.EXACT).get_function(f"fp_sum_{mode}")


def _reads(kernel, grid, M, R, P, piece, ranges):
    params = (("buffer", (0, 0)), ("buffer", (1, 0)), ("scalar", np.int32(M)),
              ("scalar", np.int32(R)), ("scalar", np.int32(P)), ("scalar", np.int32(piece)))
    got = chunk_footprints(kernel, grid, (reductions.BLOCK, 1, 1), params, (),
                           [M * R * 4, M * P * 4], ranges)
    assert got is not None
    return [per_range[0][0] for per_range in got]


@pytest.mark.parametrize("R", [1 << 24, 3 * 65536 + 1234, 5000, 4096 * 7 + 3])
def test_a_chunk_of_a_full_reduction_reads_only_its_pieces(R):
    M = 1
    P, piece = reductions.pieces(M, R)
    assert piece % reductions.PIECE_ROUND == 0 and (P - 1) * piece < R <= P * piece
    cuts = sorted({0, P // 3, P // 2, P})
    ranges = [(a, b) for a, b in zip(cuts, cuts[1:]) if b > a]
    reads = _reads(_kernel(reductions.PIECES), (P, M, 1), M, R, P, piece, ranges)
    for (b0, b1), got in zip(ranges, reads):
        assert got == [(4 * b0 * piece, 4 * min(b1 * piece, R))], (b0, b1)


@pytest.mark.parametrize("M,R", [(100, 5000), (64, 300), (200, 1), (64, 4096), (70, 2048)])
def test_a_chunk_of_a_block_per_row_reduction_reads_its_rows(M, R):
    """Rows of a multiple of PIECE_ROUND: exactly the chunk's rows; other rows: the last
    row's share may seem to reach less than PIECE_ROUND elements into the next row (the
    analysis does not relate a warp's count to its start), never before the first row."""
    P, piece = reductions.pieces(M, R)
    assert P == 1 and piece >= R
    ranges = [(0, M // 3), (M // 3, M)]
    reads = _reads(_kernel(reductions.ROWS), (M, 1, 1), M, R, P, piece, ranges)
    for (b0, b1), got in zip(ranges, reads):
        assert len(got) == 1 and got[0][0] == 4 * b0 * R, (b0, b1, got)
        end = min(4 * (b1 * R + reductions.PIECE_ROUND), 4 * M * R)
        if R % reductions.PIECE_ROUND == 0:
            assert got[0][1] == 4 * b1 * R
        else:
            assert 4 * b1 * R <= got[0][1] <= end, (b0, b1, got)


@pytest.mark.parametrize("M,R", [(100, 100), (64, 4096), (1000, 1), (77, 33)])
def test_a_chunk_of_a_warp_per_row_reduction_reads_exactly_its_rows(M, R):
    P, piece = reductions.pieces(M, R)
    per_block = reductions.BLOCK // 32
    blocks = -(-M // per_block)
    ranges = [(0, blocks // 3), (blocks // 3, blocks)]
    reads = _reads(_kernel(reductions.WARPS), (blocks, 1, 1), M, R, P, piece, ranges)
    for (b0, b1), got in zip(ranges, reads):
        assert got == [(4 * b0 * per_block * R, 4 * min(b1 * per_block, M) * R)], (b0, b1)
