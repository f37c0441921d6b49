"""graphs without a cluster: piece maps, chunk windows and outputs, merge rules, placement."""
import numpy as np
import pytest

from graphs.launch import Slot, hull, merge_ranges, window_of, write_mode
from graphs.memcpy import placement
from graphs.pieces import Piece, PieceMap
from graphs.tasks import (ChunkPlan, LaunchSpec, SlotWindow, Step, _changed_runs, cut, fill,
                          host_bytes, merge_range, run_chunk)
from scheduler_plugins.planner import WorkerInfo

PAGE = 16
VIEWS = ((0, None), (1, None))      # a chunk's inputs here: the PTX text, one buffer


# -- pieces -----------------------------------------------------------------------------------------
def test_piece_map_overlap_and_replace():
    m = PieceMap(100, [Piece(0, 40, "f1", 0, "w1"), Piece(40, 100, "f2", 0, "w2")])
    got = m.overlapping(30, 50)
    assert [(p.start, p.end, p.future, p.offset) for p in got] == [(30, 40, "f1", 30), (40, 50, "f2", 0)]
    assert m.overlapping(50, 50) == []
    new = m.replaced([Piece(20, 60, "f3", 0, "w3")])
    assert [(p.start, p.end, p.future, p.offset) for p in new.pieces] == \
        [(0, 20, "f1", 0), (20, 60, "f3", 0), (60, 100, "f2", 20)]
    assert new.pieces[2].length == 60          # a view into f2's 60 bytes
    assert new.bytes_on(0, 100) == {"w1": 20, "w3": 40, "w2": 40}
    assert new.futures() == ["f1", "f3", "f2"]
    with pytest.raises(ValueError):
        PieceMap(100, [Piece(0, 40, "f1"), Piece(50, 100, "f2")])


def test_windows_and_write_modes():
    assert window_of([(5, 9)], [(20, 30)], 100) == (0, 32)      # hull, widened to 16 bytes
    assert window_of([], [], 100) == (0, 0)
    assert window_of([(90, 99)], [], 100) == (80, 100)         # clipped to the buffer
    assert hull([(3, 4), (1, 2), (7, 7)]) == (1, 4)
    slot = Slot(PieceMap(64, [Piece(0, 64, "f")]), "argument 0 (y)", True)
    assert write_mode(slot, [(0, 32), (32, 64)]) == "direct"
    assert write_mode(slot, [(0, 33), (32, 64)]) == "merge"
    assert write_mode(slot, [(0, 64), None]) == "direct"
    assert write_mode(Slot(slot.pieces, "x", False), [(0, 33), (32, 64)]) == "read"


def test_merge_ranges_follow_piece_holders():
    m = PieceMap(10_000, [Piece(0, 5000, "a", 0, "w1"), Piece(5000, 10_000, "b", 0, "w2")])
    assert merge_ranges(m, 0, 10_000, 4096) == [(0, 4096), (4096, 10_000)]
    assert merge_ranges(m, 0, 4000, 4096) == [(0, 4000)]


def test_placement_spreads_large_buffers_by_lanes():
    ws = [WorkerInfo("a", 1), WorkerInfo("b", 3)]
    spots = placement(4 << 20, ws)
    assert [w for w, _, _ in spots] == ["a", "b"]
    assert spots[0][1] == 0 and spots[-1][2] == 4 << 20 and spots[0][2] == 1 << 20
    assert len(placement(1000, ws)) == 1


# -- chunk outputs ----------------------------------------------------------------------------------
def test_changed_runs_are_page_aligned_and_clipped():
    before = np.zeros(80, np.uint8)           # window = buffer bytes [8, 88)
    after = before.copy()
    after[[0, 30, 31, 79]] = 1                # buffer bytes 8, 38, 39, 87
    runs = _changed_runs(before, after, 8, 0, 100, PAGE)
    assert [(s, d.size) for s, d in runs] == [(8, 8), (32, 16), (80, 8)]
    assert _changed_runs(before, after, 8, 40, 80, PAGE) == []
    assert [s for s, _ in _changed_runs(before, after, 8, 36, 48, PAGE)] == [36]


def views(n):
    return tuple((i, None) for i in range(n))


def test_merge_range_writers_and_reductions():
    base = np.arange(64, dtype=np.uint8)
    layout = ((0, 0, 0, 64),)
    a = [(0, np.array([200, 1, 2, 3], np.uint8))]          # changes byte 0 only
    b = [(0, np.array([0, 100, 2, 3], np.uint8)), (40, np.array([101], np.uint8))]
    merged = merge_range(0, 64, None, layout, 1, views(3), base, a, b)
    expected = base.copy()
    expected[[0, 1, 40]] = [200, 100, 101]
    assert np.array_equal(merged, expected)
    assert merge_range(0, 64, None, layout, 1, views(1), base) is not None  # no writer: the base
    # reductions: each run is a chunk's own version of the bytes
    v = np.array([10, 20], np.uint32)
    runs1 = [(0, (v + 5).view(np.uint8))]
    runs2 = [(0, (v + 7).view(np.uint8))]
    got = merge_range(0, 8, ("add", "u32"), ((0, 0, 0, 8),), 1, views(3), v.view(np.uint8),
                      runs1, runs2)
    assert got.view(np.uint32).tolist() == [22, 32]
    w = np.array([0xFFFFFFF0], np.uint32)
    wrap = merge_range(0, 4, ("add", "u32"), ((0, 0, 0, 4),), 1, views(3), w.view(np.uint8),
                       [(0, (w + np.uint32(10)).view(np.uint8))], [(0, (w + np.uint32(10)).view(np.uint8))])
    assert wrap.view(np.uint32)[0] == (0xFFFFFFF0 + 20) % 2**32


@pytest.mark.parametrize("op, dtype, combine", [
    ("min", np.int32, np.minimum), ("max", np.float64, np.maximum),
    ("and", np.uint32, np.bitwise_and), ("or", np.uint64, np.bitwise_or),
    ("xor", np.uint32, np.bitwise_xor)])
def test_reduction_rules(op, dtype, combine):
    rng = np.random.default_rng(0)
    base = rng.integers(0, 1000, 4).astype(dtype)
    contributions = [rng.integers(0, 1000, 4).astype(dtype) for _ in range(3)]
    runs = [[(0, combine(base, c).view(np.uint8))] for c in contributions]
    ptx_type = {np.int32: "s32", np.float64: "f64", np.uint32: "u32", np.uint64: "u64"}[dtype]
    got = merge_range(0, base.nbytes, (op, ptx_type), ((0, 0, 0, base.nbytes),), 1,
                      views(4), base.view(np.uint8), *runs).view(dtype)
    assert np.array_equal(got, combine.reduce([base] + contributions))


def test_memcpy_task_helpers():
    data = np.arange(10, dtype=np.int16)
    assert np.array_equal(host_bytes(data).view(np.int16), data)
    assert fill(7, b"\x01\x02").tolist() == [1, 2, 1, 2, 1, 2, 1]
    assert cut(np.arange(10, dtype=np.uint8), 3, 4).tolist() == [3, 4, 5, 6]
    pair = (np.zeros(4, np.uint8), np.arange(10, dtype=np.uint8))
    assert cut(pair, 3, 4, element=1).tolist() == [3, 4, 5, 6]      # one output of several


def test_run_chunk_direct_output_and_footprint_check():
    """A chunk over a window returns exactly its write footprint, and a store outside it (but
    inside the window) is a FootprintViolation, not a silently lost write."""
    import dptx
    from dptx.errors import FootprintViolation
    ptx = dptx.RawModule(r'''extern "C" __global__ void put(float* y, int shift) {
        int i = blockIdx.x * blockDim.x + threadIdx.x; y[i + shift] = i; }''').ptx
    spec = LaunchSpec("put", (4, 1, 1), (32, 1, 1), 0, (("buffer", (0, 0)), ("scalar", np.int32(0))), ())
    y = np.full(128, -1, np.float32).view(np.uint8)
    window = SlotWindow(128, 384, 512, ((1, 128, 0, 256),), "direct", 128, 256)

    def chunk(spec, steps=1):
        return ChunkPlan(VIEWS, tuple(Step(spec, 1, 2, 0, (0,)) for _ in range(steps)), "cpu",
                         (window,), ("argument 0 (y)",), PAGE)
    out = run_chunk(chunk(spec), ptx, y)
    assert np.array_equal(out.view(np.float32), np.arange(32, 64, dtype=np.float32))
    spec2 = LaunchSpec("put", (4, 1, 1), (32, 1, 1), 0, (("buffer", (0, 0)), ("scalar", np.int32(1))), ())
    with pytest.raises(FootprintViolation, match=r"byte 25[6-9] of argument 0 \(y\).*\[128, 256\)"):
        run_chunk(chunk(spec2), ptx, y)


def test_run_chunk_steps_run_in_order_and_errors_name_their_step():
    """A batch: several launches over the same windows, in order; an error carries the index
    of the launch that raised it."""
    import dptx
    ptx = dptx.RawModule(r'''extern "C" __global__ void addone(int* y, int at) {
        y[threadIdx.x + at] += 1; }''').ptx
    good = LaunchSpec("addone", (1, 1, 1), (4, 1, 1), 0, (("buffer", (0, 0)), ("scalar", np.int32(0))), ())
    bad = LaunchSpec("addone", (1, 1, 1), (4, 1, 1), 0, (("buffer", (0, 0)), ("scalar", np.int32(100))), ())
    y = np.zeros(4, np.int32).view(np.uint8)
    window = SlotWindow(0, 16, 16, ((1, 0, 0, 16),), "direct", 0, 16)
    steps = tuple(Step(good, 0, 1, 0, (0,)) for _ in range(3))
    out = run_chunk(ChunkPlan(VIEWS, steps, "cpu", (window,), ("argument 0 (y)",), PAGE), ptx, y)
    assert out.view(np.int32).tolist() == [3, 3, 3, 3]
    with pytest.raises(dptx.DptxMemoryError) as info:
        run_chunk(ChunkPlan(VIEWS, steps[:2] + (Step(bad, 0, 1, 0, (0,)),), "cpu", (window,),
                            ("argument 0 (y)",), PAGE), ptx, y)
    assert info.value.dptx_step == 2


def test_run_chunk_check_mode_catches_a_write_the_footprint_denied():
    """A buffer the kernel may write but whose footprint says this chunk does not: the chunk
    works on a private copy (never the piece itself) and any change is a violation."""
    import dptx
    from dptx.errors import FootprintViolation
    ptx = dptx.RawModule(r'''extern "C" __global__ void put(float* y, int shift) {
        int i = blockIdx.x * blockDim.x + threadIdx.x; y[i + shift] = i; }''').ptx
    spec = LaunchSpec("put", (4, 1, 1), (32, 1, 1), 0, (("buffer", (0, 0)), ("scalar", np.int32(0))), ())
    y = np.full(128, -1, np.float32).view(np.uint8)
    window = SlotWindow(128, 384, 512, ((1, 128, 0, 256),), "check")
    plan = ChunkPlan(VIEWS, (Step(spec, 1, 2, 0, (0,)),), "cpu", (window,), ("argument 0 (y)",), PAGE)
    with pytest.raises(FootprintViolation, match="do not write"):
        run_chunk(plan, ptx, y)
    assert np.all(y.view(np.float32) == -1)           # the input piece was never touched
