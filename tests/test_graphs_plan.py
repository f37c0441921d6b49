"""The client-side launch planner (graphs.plan) on a given model: shares kept across launches
until a move pays, workers ordered by where the data lies, small launches where their data is,
cuts on whole rows of 2-D grids."""
from graphs.pieces import Piece, PieceMap
from graphs.plan import LaunchPlanner, data_centres, grid_unit, holder
from scheduler_plugins.planner import WorkerInfo

A, B = "tcp://a:1", "tcp://b:1"


class Model:
    def __init__(self, rates=None, workers=(A, B), profiles=None, tuning=None):
        self.rates = rates or {}
        self._workers = [WorkerInfo(w, 1) for w in workers]
        self.profiles = profiles or {}      # (kernel, nblocks) -> (CostProfile, speeds)
        self._tuning = tuning or {}         # worker -> Tuning

    def workers(self):
        return list(self._workers)

    def measured(self, kernel):
        return {w: (r, 10) for w, r in self.rates.items()}

    def profile(self, kernel, nblocks):
        return self.profiles.get((kernel, nblocks))

    def tuning(self, kernel, nblocks):
        return dict(self._tuning)


def spread(nbytes, first=A, second=B):
    half = nbytes // 2
    return PieceMap(nbytes, [Piece(0, half, "f1", 0, first), Piece(half, nbytes, "f2", 0, second)])


def shares(chunks):
    out = {}
    for c in chunks:
        out[c.worker] = out.get(c.worker, 0) + c.end - c.first
    return out


def test_workers_follow_their_data():
    maps = [spread(1 << 24, first=B, second=A)]        # B holds the first half
    assert data_centres(maps) == {B: 0.25, A: 0.75}
    chunks = LaunchPlanner(Model({A: 1000.0, B: 1000.0})).plan("k", (4096, 1, 1), (256, 1, 1), False, maps)
    assert chunks[0].worker == B and chunks[-1].worker == A
    assert shares(chunks) == {A: 2048, B: 2048}


def test_shares_stay_until_a_move_pays():
    model = Model({A: 1000.0, B: 1000.0})
    planner = LaunchPlanner(model, bandwidth=1e9)
    maps = [spread(1 << 24)]
    first = planner.plan("k", (4096, 1, 1), (256, 1, 1), False, maps)
    assert shares(first) == {A: 2048, B: 2048}
    # B becomes 5% slower: over a slow link, the time gained does not pay for moving the
    # bytes of the blocks that would change worker
    planner.bandwidth = 1e6
    model.rates[B] = 950.0
    assert shares(planner.plan("k", (4096, 1, 1), (256, 1, 1), False, maps)) == {A: 2048, B: 2048}
    # B becomes 3x slower: the gain pays, the boundary moves half-way (one noisy measurement
    # cannot swing it far), then the rest of the way (same order of workers)
    planner.bandwidth = 1e9
    for speed in (700.0, 701.0):            # B 30% slower, two new readings: not yet a trend
        model.rates[B] = speed
        assert shares(planner.plan("k", (4096, 1, 1), (256, 1, 1), False, maps)) == {A: 2048, B: 2048}
    for _ in range(3):                      # the same reading again counts once
        planner.plan("k", (4096, 1, 1), (256, 1, 1), False, maps)
    model.rates[B] = 700.5                  # the third: the boundary moves half-way
    moved = planner.plan("k", (4096, 1, 1), (256, 1, 1), False, maps)
    assert 2100 < shares(moved)[A] < 2300 and moved[0].worker == A
    # B becomes 3x slower: a large imbalance moves at once, all the way
    model.rates[B] = 333.0
    moved = planner.plan("k", (4096, 1, 1), (256, 1, 1), False, maps)
    assert shares(moved)[A] > 2950


def test_small_launch_runs_where_its_data_is():
    model = Model({A: 1e6, B: 1e6})
    maps = [PieceMap(1 << 20, [Piece(0, 1 << 20, "f", 0, B)])]
    chunks = LaunchPlanner(model).plan("k", (64, 1, 1), (256, 1, 1), False, maps)
    assert [(c.first, c.end, c.worker) for c in chunks] == [(0, 64, B)]
    # the same small launch with its data split over both workers is split too
    chunks = LaunchPlanner(model).plan("k", (64, 1, 1), (256, 1, 1), False, [spread(64 << 20)])
    assert {c.worker for c in chunks} == {A, B}
    assert holder([spread(100)], [A, B]) == (A, 0.5)


def test_cuts_fall_on_whole_rows():
    assert grid_unit((128, 128, 1), 2) == 128 and grid_unit((100, 1, 1), 2) == 1
    assert grid_unit((8, 8, 64), 4) == 64
    chunks = LaunchPlanner(Model({A: 1000.0, B: 700.0})).plan(
        "k", (128, 128, 1), (16, 16, 1), False, [spread(1 << 26)])
    assert all(c.first % 128 == 0 and c.end % 128 == 0 for c in chunks)
    assert shares(chunks)[A] > shares(chunks)[B]


def test_unmergeable_launch_is_one_chunk_on_the_fastest_worker():
    chunks = LaunchPlanner(Model({A: 10.0, B: 30.0})).plan("k", (500, 1, 1), (128, 1, 1), True, [spread(1 << 20)])
    assert [(c.first, c.end, c.worker) for c in chunks] == [(0, 500, B)]


def test_even_split_ignores_speeds():
    model = Model({A: 3000.0, B: 1000.0})           # A measured 3x faster
    maps = [spread(1 << 24)]
    adaptive = LaunchPlanner(model).plan("k", (4096, 1, 1), (256, 1, 1), False, maps)
    assert shares(adaptive) == {A: 3072, B: 1024}
    even = LaunchPlanner(model).plan("k", (4096, 1, 1), (256, 1, 1), False, maps, split="even")
    assert shares(even) == {A: 2048, B: 2048}


def test_a_cost_profile_cuts_at_equal_finish_times():
    """Half the grid costs 3 times the other half; A is twice as fast as B: A's share of the
    cost is 2/3, so its cut falls where 2/3 of the cost lies, not at 2/3 of the blocks."""
    from scheduler_plugins.profile import CostProfile, Learned
    n = 4096
    profile = CostProfile(n, [3.0] * 32 + [1.0] * 32)
    model = Model({A: 2.0, B: 1.0}, profiles={("k", n): Learned(profile, {A: 2.0, B: 1.0})})
    maps = [spread(1 << 24)]
    got = shares(LaunchPlanner(model).plan("k", (n, 1, 1), (256, 1, 1), False, maps))
    # cost: 3 per block on [0, 2048), 1 on [2048, 4096): total 8192; A takes 2/3 = 5461.3,
    # all in the expensive half: 5461.3 / 3 = 1820.4 blocks
    assert abs(got[A] - 1820) <= 1 and got[A] + got[B] == n
    uniform = Model({A: 2.0, B: 1.0})
    got = shares(LaunchPlanner(uniform).plan("k", (n, 1, 1), (256, 1, 1), False, maps))
    assert abs(got[A] - 2731) <= 1                     # without a profile: 2/3 of the blocks


class PerKernelModel(Model):
    def __init__(self, kernel_rates):
        super().__init__()
        self.kernel_rates = kernel_rates        # kernel -> {worker: rate}; absent: unmeasured

    def measured(self, kernel):
        return {w: (r, 10) for w, r in self.kernel_rates.get(kernel, {}).items()}


def test_a_launch_follows_the_latest_split_of_its_shape_within_the_noise():
    """``a * 2 + b``: the second kernel takes the split the first one's launch used (its data
    is there, and the two can run fused) when it has no speeds of its own, or when that
    split is within IMBALANCE of its own balance; not when its speeds say it is far off."""
    maps = [spread(1 << 24)]
    grid, block = (4096, 1, 1), (256, 1, 1)
    model = PerKernelModel({"mul": {A: 1000.0, B: 3000.0}, "near": {A: 1000.0, B: 1100.0},
                            "far": {A: 1000.0, B: 1000.0}})
    planner = LaunchPlanner(model)
    first = shares(planner.plan("mul", grid, block, False, maps))
    assert first == {A: 1024, B: 3072}
    assert shares(planner.plan("unmeasured", grid, block, False, maps)) == first
    assert shares(planner.plan("far", grid, block, False, maps)) == {A: 2048, B: 2048}
    # the latest split is now "far"'s even one; 1000:1100 is within 10% of it
    assert shares(planner.plan("near", grid, block, False, maps)) == {A: 2048, B: 2048}
    # another shape: nothing to follow
    assert shares(planner.plan("unmeasured", (2048, 1, 1), block, False, maps)) == \
        {A: 1024, B: 1024}


def test_a_launch_follows_the_latest_split_where_moving_its_data_costs_more():
    """Two kernels measured at slightly different speeds (noise on shared cores): the second
    takes the first one's split when its own would gain less time than moving the bytes of
    the blocks that change worker costs (the first left its output in its split), and keeps
    its own when the gain is larger (a fast link, or a large difference)."""
    from graphs.plan import blocks_changing_worker
    assert blocks_changing_worker((A, B), (0, 100, 200), (A, B), (0, 110, 200)) == 10
    assert blocks_changing_worker((A, B), (0, 100, 200), (B, A), (0, 100, 200)) == 200
    grid, block = (16384, 1, 1), (256, 1, 1)
    maps = [spread(1 << 26), spread(1 << 26), spread(1 << 26)]    # 192 MiB: 12 KiB per block
    # "add" alone would take 9076 blocks on A: its balance is 12% better than "mul"'s
    # even split, more than IMBALANCE, and gains 1.1 ms; moving 884 blocks' bytes over 1 GB/s
    # takes 10.9 ms
    rates = {"mul": {A: 1.0e7, B: 1.0e7}, "add": {A: 1.0e7, B: 0.8052e7}}
    planner = LaunchPlanner(PerKernelModel(rates), bandwidth=1e9)
    assert shares(planner.plan("mul", grid, block, False, maps)) == {A: 8192, B: 8192}
    assert shares(planner.plan("add", grid, block, False, maps)) == {A: 8192, B: 8192}
    # the same over a 100 GB/s link: moving costs 0.11 ms, less than the gain
    planner = LaunchPlanner(PerKernelModel(rates), bandwidth=1e11)
    planner.plan("mul", grid, block, False, maps)
    got = shares(planner.plan("add", grid, block, False, maps))
    assert abs(got[A] - 9076) <= 2


def test_a_published_delta_replaces_only_the_kernels_it_names():
    from graphs.model_copy import _laid_over
    a_rates, b_profile = {"w1": [10.0, 3]}, {"64": {"weights": [1.0], "speeds": {}, "spread": None}}
    whole = {"workers": {"w1": {}}, "rates": {"a": a_rates, "b": {"w1": [5.0, 1]}},
             "profiles": {"b": b_profile, "c": {"64": {}}}, "overheads": {"b": {"w1": 0.001}},
             "host_replicas": False, "delta": False}
    delta = {"workers": {"w1": {}, "w2": {}}, "rates": {"b": {"w1": [6.0, 2]}}, "profiles": {},
             "overheads": {"b": {"w1": 0.002}}, "host_replicas": True, "delta": True,
             "kernels": ["b", "c"]}
    got = _laid_over(whole, delta)
    assert got["rates"] == {"a": {"w1": [10.0, 3]}, "b": {"w1": [6.0, 2]}}
    assert got["rates"]["a"] is a_rates                 # untouched entries are the same objects
    assert got["profiles"] == {}                         # b's and c's profiles are gone
    assert got["overheads"] == {"b": {"w1": 0.002}}
    assert set(got["workers"]) == {"w1", "w2"} and got["host_replicas"] is True
    assert whole["rates"]["b"] == {"w1": [5.0, 1]}       # the old snapshot is not changed


def test_a_launch_runs_alone_only_where_that_finishes_sooner():
    """A launch whose data is all on one worker runs there alone when splitting it would
    not finish sooner (the overheads of more chunks and the scheduler's handing out); with
    enough work per worker, all the workers share it (before: alone whenever the work was
    under 20 chunk overheads, 170 ms of work on one of 32 workers)."""
    from graphs.plan import LaunchPlanner
    from scheduler_plugins.planner import Tuning
    planner = LaunchPlanner(model=None)
    workers = [f"w{i}" for i in range(32)]
    throughput = {w: 1000.0 for w in workers}                   # blocks per second each
    tuning = {w: Tuning(0.005) for w in workers}                 # 5 ms a chunk
    assert planner._sooner_alone(5, throughput, "w0", tuning, [], 1.0)           # 5 ms
    assert not planner._sooner_alone(170, throughput, "w0", tuning, [], 1.0)     # 170 ms
    # where the data is large and all on w0, moving 31/32 of it counts against splitting
    class Map:
        nbytes = 400 << 20
    assert planner._sooner_alone(170, throughput, "w0", tuning, [Map()], 1.0)
