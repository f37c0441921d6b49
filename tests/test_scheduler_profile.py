"""The cost profile along the grid and the worker speeds, learned together from chunk times
(scheduler_plugins.profile), on simulated workers and kernels: a chunk of blocks [a, b) on
worker w takes sum(true cost[a:b]) / speed[w] seconds (with 3% noise), plans cut the grid at
equal predicted finish times, and the makespan is compared with the ideal one."""
import numpy as np
import pytest

from scheduler_plugins.profile import CostProfile, ProfileModel

N = 1024
X = np.linspace(-1, 1, N)
KERNELS = {
    "uniform": np.ones(N),
    "mandelbrot": 0.05 + 10 * np.exp(-((X + 0.3) / 0.25) ** 2),   # a band of costly rows
    "triangular": np.arange(1, N + 1, dtype=float),              # work grows with the row
}
SPEEDS = {"fast": 2.0, "slow": 1.0}


def run(model, true, launch, rng, speeds=SPEEDS, chunks_per_worker=4, blocks=None):
    """One launch planned from the model as graphs.plan does (by the profile once there is
    one, else in proportion to blocks per second, ``blocks``: a ThroughputModel fed the same
    chunks); returns its makespan / the ideal makespan."""
    from scheduler_plugins.model import ThroughputModel
    blocks = blocks if blocks is not None else model.__dict__.setdefault("_blocks", ThroughputModel())
    true = true / true.mean()
    p, s = model.profile("k", N), model.speeds("k", N)
    order = ["fast", "slow"]
    if p is not None and len(s) == 2:
        bounds = p.cut([s[w] for w in order])
    elif all(blocks.rate("k", w) for w in order):
        bounds = CostProfile(N).cut([blocks.rate("k", w) for w in order])
    else:
        bounds = [0, N // 2, N]
    finish = {}
    for w, a, b in zip(order, bounds, bounds[1:]):
        cuts = np.linspace(a, b, chunks_per_worker + 1).round().astype(int)
        finish[w] = 0.0
        for c0, c1 in zip(cuts, cuts[1:]):
            if c1 > c0:
                seconds = true[c0:c1].sum() / speeds[w] * (1 + 0.03 * rng.standard_normal())
                model.observe("k", N, f"launch-{launch}", c0, c1, w, seconds)
                blocks.observe("k", w, c1 - c0, seconds)
                finish[w] += seconds
    return max(finish.values()) / (true.sum() / sum(speeds.values()))


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_plans_reach_equal_finish_times_within_a_few_launches(name):
    rng = np.random.default_rng(1)
    model = ProfileModel()
    ratios = [run(model, KERNELS[name], i, rng) for i in range(8)]
    assert max(ratios[3:]) < 1.1, ratios            # the benchmark's aim, from launch 4 on
    learned = model.profile("k", N)
    dense = np.repeat(learned.weights, learned.sizes)
    if name != "uniform":
        assert np.corrcoef(dense, KERNELS[name])[0, 1] > 0.9


def test_a_uniform_kernel_reduces_to_blocks_per_second():
    rng = np.random.default_rng(2)
    model = ProfileModel()
    for i in range(5):
        run(model, KERNELS["uniform"], i, rng)
    weights = model.profile("k", N).weights
    assert np.allclose(weights, 1.0, atol=0.1), weights
    speeds = model.speeds("k", N)            # block-equivalents per second: blocks per second
    assert speeds["fast"] == pytest.approx(2.0, rel=0.05)
    assert speeds["slow"] == pytest.approx(1.0, rel=0.05)


def test_a_changing_profile_is_relearned():
    """A Mandelbrot zoom: the costly band moves to the other end of the grid."""
    rng = np.random.default_rng(3)
    model = ProfileModel()
    for i in range(5):
        run(model, KERNELS["mandelbrot"], i, rng)
    moved = 0.05 + 10 * np.exp(-((X - 0.6) / 0.2) ** 2)
    ratios = [run(model, moved, 5 + i, rng) for i in range(7)]
    assert ratios[0] > 2                     # the launch that met the new profile
    assert max(ratios[4:]) < 1.15, ratios    # balanced again within four launches
    dense = np.repeat(model.profile("k", N).weights, model.profile("k", N).sizes)
    assert np.corrcoef(dense, moved)[0, 1] > 0.8


def test_a_profile_is_learned_where_the_shares_never_move():
    """The hardest case for telling the grid from the workers: every launch cuts the grid at
    the same blocks (as on a cluster whose plan has settled), so a step in the chunk times
    at the cut could be either. The triangle is still found, smooth across the cut, with the
    workers' true speed ratio (fitting the profile and the speeds in turn found a step of 2x
    at the cut here: correlation 0.68)."""
    rng = np.random.default_rng(5)
    true = np.arange(256) + 0.5
    speeds = {"a": 300.0, "b": 280.0}
    shares = {"a": [(0, 110), (110, 150), (150, 180)],
              "b": [(180, 200), (200, 219), (219, 234), (234, 246), (246, 256)]}
    model = ProfileModel()
    for launch in range(8):
        for worker, chunks in shares.items():
            for first, end in chunks:
                seconds = true[first:end].sum() / speeds[worker] * rng.normal(1, 0.05)
                model.observe("k", 256, f"launch-{launch}", first, end, worker, seconds)
    learned = model.profile("k", 256)
    dense = np.repeat(learned.weights, learned.sizes)
    assert np.corrcoef(dense, true)[0, 1] > 0.95, learned.weights
    s = model.speeds("k", 256)
    assert s["a"] / s["b"] == pytest.approx(300 / 280, rel=0.1)


def test_cuts_split_the_cost_in_the_given_fractions():
    p = CostProfile(100, [3.0] * 50 + [1.0] * 50, bins=100)     # cost 150 then 50
    assert p.cost(0, 100) == 200 and p.cost(40, 60) == 40
    assert p.cut([1, 1]) == [0, 33, 100]            # 100 of 200 in the first 33.3 blocks
    assert p.cut([3, 1]) == [0, 50, 100]
    assert p.cut([1, 0, 1]) == [0, 33, 33, 100]     # an empty share stays empty
    coarse = CostProfile(1000, [1.0, 3.0], bins=2)
    assert coarse.cost(250, 750) == 250 + 750 and coarse.cut([1, 1]) == [0, 667, 1000]


def test_a_worker_that_leaves_is_forgotten():
    rng = np.random.default_rng(4)
    model = ProfileModel()
    for i in range(3):
        run(model, KERNELS["triangular"], i, rng)
    model.forget_worker("slow")
    assert set(model.speeds("k", N)) == {"fast"}
    assert model.profile("k", N) is not None


def test_cuts_inside_a_range():
    p = CostProfile(100, [3.0] * 50 + [1.0] * 50, bins=100)
    assert p.cut([1, 1], 40, 80) == [40, 50, 80]       # 30 + 30 of the 60 in [40, 80)


def test_chunks_of_a_share_split_its_cost_and_shrink_toward_the_end():
    from scheduler_plugins.planner import WorkerInfo, guided_fractions, split_shares
    p = CostProfile(4096, np.linspace(0.2, 1.8, 64))
    a = WorkerInfo("a", 2)
    chunks = split_shares([a], [4096], {"a": 50.0}, True, profile=p)
    assert chunks[0].first == 0 and chunks[-1].end == 4096
    assert all(x.end == y.first for x, y in zip(chunks, chunks[1:]))
    costs = [p.cost(c.first, c.end) for c in chunks]
    want = np.array(guided_fractions(len(chunks)), float)
    want *= sum(costs) / want.sum()
    assert len(chunks) >= 4 and np.allclose(costs, want, rtol=0.05), (costs, want)
    # the blocks per chunk follow the cost: the costly end of the grid gets short chunks
    assert chunks[-1].end - chunks[-1].first < (chunks[0].end - chunks[0].first) / 3



def _triangle_launch(model, launch, rng, slow=1.0, part=slice(None)):
    """One launch of the triangle over 256 blocks: worker "a" runs [0, 180) in 3 chunks,
    "b" [180, 256) in 3, "b" ``slow`` times slower than it is; ``part``: those of its
    chunks that finish now. The model is read after every chunk, as the scheduler plugin
    publishes it while a launch runs."""
    true = np.arange(256) + 0.5
    chunks = [("a", 0, 110), ("b", 180, 210), ("a", 110, 150),     # in the order they finish
              ("b", 210, 235), ("a", 150, 180), ("b", 235, 256)]
    for worker, first, end in chunks[part]:
        seconds = true[first:end].sum() / 300.0 * rng.normal(1, 0.03)
        model.observe("k", 256, f"launch-{launch}", first, end, worker,
                      seconds * (slow if worker == "b" else 1.0))
        model.profile("k", 256)


def test_one_stalled_launch_keeps_the_profile_and_the_history():
    """Another process took worker b's core for one whole launch: chunk times 4x. That is
    neither a new profile nor a reason to forget the launches before it (from the two
    newest launches alone the grid and the workers cannot be told apart as well); before,
    the newest launch's misfit dropped the history and the profile came out flat."""
    rng = np.random.default_rng(7)
    model = ProfileModel()
    for launch in range(5):
        _triangle_launch(model, launch, rng)
    _triangle_launch(model, 5, rng, slow=4.0)
    assert len(model._kernels[("k", 256)].launches) == model.history
    learned = model.profile("k", 256)
    dense = np.repeat(learned.weights, learned.sizes)
    assert np.corrcoef(dense, np.arange(256))[0, 1] > 0.9, learned.weights


def test_a_worker_that_stays_slow_is_followed_within_two_launches():
    """Worker b stays 4x slower: two whole launches later plans have its new speed (and the
    profile); a launch half done is not judged (its first chunks alone drop nothing)."""
    rng = np.random.default_rng(8)
    model = ProfileModel()
    for launch in range(5):
        _triangle_launch(model, launch, rng)
    _triangle_launch(model, 5, rng, slow=4.0)
    _triangle_launch(model, 6, rng, slow=4.0, part=slice(0, 4))   # 2 of b's chunks so far
    model.profile("k", 256)
    assert len(model._kernels[("k", 256)].launches) == model.history
    _triangle_launch(model, 6, rng, slow=4.0, part=slice(4, None))   # the rest of it
    s = model.speeds("k", 256)
    assert s["a"] / s["b"] == pytest.approx(4.0, rel=0.15), s
    learned = model.profile("k", 256)
    dense = np.repeat(learned.weights, learned.sizes)
    assert np.corrcoef(dense, np.arange(256))[0, 1] > 0.9, learned.weights


def test_a_profile_is_kept_where_most_chunks_lie_where_the_cost_barely_varies():
    """Worker a's share (blocks 0-203 of a triangle) comes in 2 chunks of equal cost, worker
    b's (203-256, where the cost varies by a quarter) in 5: most chunks say nothing of the
    profile. Judged by the median chunk, a uniform cost explained them nearly as well and
    the profile came out flat (as on a loaded CI machine); the mean keeps it, and a noisy
    uniform kernel cut the same way stays flat."""
    true = np.arange(256) + 0.5
    cuts = {"a": [0, 143, 203], "b": [203, 214, 225, 235, 246, 256]}
    for cost, uneven in ((true, True), (np.ones(256), False)):
        rng = np.random.default_rng(12)
        model = ProfileModel()
        for launch in range(6):
            for worker, bounds in cuts.items():
                for first, end in zip(bounds, bounds[1:]):
                    seconds = cost[first:end].sum() / 300.0 * np.exp(0.08 * rng.standard_normal())
                    model.observe("k", 256, f"launch-{launch}", first, end, worker, seconds)
            learned = model.profile("k", 256)
            if launch >= 1:
                dense = np.repeat(learned.weights, learned.sizes)
                if uneven:
                    assert np.corrcoef(dense, true)[0, 1] > 0.9, (launch, learned.weights)
                else:
                    assert np.allclose(learned.weights, 1.0), (launch, learned.weights)


def test_a_launch_is_fitted_once_its_chunks_cover_the_grid(monkeypatch):
    """The scheduler asks for the profile at every publish (5 times a second) while chunks
    come in; a fit costs milliseconds, so it runs when a launch's chunks have covered the
    grid (or a new launch begins after one that never did), not per chunk."""
    from scheduler_plugins import profile as module
    fits = []
    real = module.fit
    monkeypatch.setattr(module, "fit", lambda *a, **k: fits.append(1) or real(*a, **k))
    model = ProfileModel()
    workers = [f"w{i}" for i in range(32)]
    for launch in range(4):
        cuts = np.linspace(0, N, 65).round().astype(int)
        for i, (a, b) in enumerate(zip(cuts, cuts[1:])):
            model.observe("k", N, f"L{launch}", a, b, workers[i // 2], (b - a) * 1e-3)
            model.profile("k", N)                    # as a publish does
        assert len(fits) <= launch + 2, fits        # the first chunk, then once per launch
    assert model.profile("k", N) is not None
    model.observe("k", N, "L4", 0, 10, "w0", 0.01)  # part of a launch: no refit
    model.profile("k", N)
    n = len(fits)
    model.observe("k", N, "L5", 0, 10, "w0", 0.01)  # L4 never covered the grid: fit it now
    model.profile("k", N)
    assert len(fits) == n + 1


def test_the_normal_equations_solve_as_lstsq_does():
    from scheduler_plugins.profile import _least_squares
    rng = np.random.default_rng(3)
    rows = rng.normal(size=(300, 96))
    rhs = rng.normal(size=300)
    np.testing.assert_allclose(_least_squares(rows, rhs),
                               np.linalg.lstsq(rows, rhs, rcond=None)[0], rtol=1e-8, atol=1e-10)
    singular = np.hstack([rows[:, :5], rows[:, :1]])      # two equal columns
    np.testing.assert_allclose(singular @ _least_squares(singular, rhs),     # the same fit
                               singular @ np.linalg.lstsq(singular, rhs, rcond=None)[0],
                               atol=1e-6)
