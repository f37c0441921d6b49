"""The throughput model and the launch planner, on given timings (deterministic)."""
import pytest

from scheduler_plugins.model import ThroughputModel
from scheduler_plugins.planner import (GPU_PRIOR, WorkerInfo, even_plan, plan_launch,
                                       proportional_shares)

A, B, G = "tcp://a:1", "tcp://b:1", "tcp://g:1"


def covers(chunks, n):
    pos = 0
    for c in chunks:
        assert c.first == pos and c.end > c.first
        pos = c.end
    assert pos == n


def blocks_by_worker(chunks):
    out = {}
    for c in chunks:
        out[c.worker] = out.get(c.worker, 0) + c.blocks
    return out


def test_proportional_shares():
    assert proportional_shares(10, [1, 1]) == [5, 5]
    assert proportional_shares(10, [2, 1]) == [7, 3]
    assert proportional_shares(7, [1, 1, 1]) == [3, 2, 2]
    assert sum(proportional_shares(1001, [0.3, 0.5, 0.2])) == 1001
    assert proportional_shares(5, [0, 0]) == [0, 0]


def test_model_smoothing_and_outliers():
    m = ThroughputModel(alpha=0.5, outlier_factor=3.0, patience=2)
    m.observe("k", A, 100, 1.0)
    assert m.rate("k", A) == 100
    m.observe("k", A, 200, 1.0)          # within the band: smoothed
    assert m.rate("k", A) == 150
    m.observe("k", A, 10, 1.0)           # one outlier (a page-fault storm): ignored
    assert m.rate("k", A) == 150
    m.observe("k", A, 160, 1.0)          # back to normal clears the suspicion
    assert m.rate("k", A) == 155
    m.observe("k", A, 30, 1.0)
    m.observe("k", A, 40, 1.0)           # twice in a row: the worker really slowed down
    assert m.rate("k", A) == 35
    assert m.rate("k", B) is None and m.rate("other", A) is None
    m.observe("k", A, 0, 1.0)            # empty chunks teach nothing
    assert m.rate("k", A) == 35
    m.forget_worker(A)
    assert m.rate("k", A) is None


def test_short_chunks_do_not_set_the_speed():
    m = ThroughputModel()
    m.observe("k", A, 1, 0.0005)          # a 1-block edge chunk: mostly fixed cost
    assert m.rate("k", A) == 2000
    m.observe("k", A, 40_000, 0.01)       # a real measurement replaces it at once
    assert m.rate("k", A) == 4_000_000
    for _ in range(3):
        m.observe("k", A, 1, 0.0005)      # later edge chunks are ignored
    assert m.rate("k", A) == 4_000_000


def test_rates_for_scales_priors_from_measured_workers():
    m = ThroughputModel()
    priors = {A: 1.0, B: 1.0, G: GPU_PRIOR}
    assert m.rates_for("k", priors) == priors
    m.observe("k", A, 500, 1.0)
    rates = m.rates_for("k", priors)
    assert rates[A] == 500 and rates[B] == 500 and rates[G] == 500 * GPU_PRIOR


def test_plan_is_proportional_to_measured_throughput():
    workers = [WorkerInfo(A, 1), WorkerInfo(B, 1)]
    chunks = plan_launch(3000, workers, {A: 2000.0, B: 1000.0})
    covers(chunks, 3000)
    assert blocks_by_worker(chunks) == {A: 2000, B: 1000}
    # 1 s of work per worker: chunks of at least 40 ms, at most 4 per lane
    assert sum(1 for c in chunks if c.worker == A) == 4


def test_plan_respects_threads_and_gpus():
    workers = [WorkerInfo(A, 4), WorkerInfo(G, 1, "gpu", 1)]
    chunks = plan_launch(10_000, workers, {A: 100.0, G: 3600.0})
    covers(chunks, 10_000)
    shares = blocks_by_worker(chunks)
    assert shares == {A: 1000, G: 9000}     # 400 blocks/s against 3600
    assert sum(1 for c in chunks if c.worker == A) >= 4   # one per thread at least


def test_small_launches_use_few_chunks():
    """Chunks shorter than 20x the task overhead would waste more than 5%."""
    workers = [WorkerInfo(A, 2), WorkerInfo(B, 2)]
    chunks = plan_launch(64, workers, {A: 1e6, B: 1e6})
    covers(chunks, 64)
    assert len(chunks) == 2


def test_chunks_follow_the_measured_overhead_and_spread():
    """Chunk counts tuned at run time: exact predictions, two chunks per lane; noisy ones,
    about sqrt(spread * seconds / overhead) per lane, capped; a costly chunk overhead, fewer
    and longer chunks (each at least 20x the overhead)."""
    from scheduler_plugins.planner import MAX_CHUNKS_PER_LANE, Tuning, chunk_count
    # 1000 blocks on 2 lanes at 500 blocks/s per lane: 1 s per lane
    assert chunk_count(1000, 500.0, 2, True, Tuning(0.002, 0.0)) == 2 * 2
    assert chunk_count(1000, 500.0, 2, True, Tuning(0.002, 0.02)) == 2 * 3     # sqrt(10)
    assert chunk_count(1000, 500.0, 2, True, Tuning(0.002, 0.5)) == 2 * MAX_CHUNKS_PER_LANE
    assert chunk_count(1000, 500.0, 2, True, Tuning(0.025, 0.5)) == 2 * 2      # 0.5 s chunks
    assert chunk_count(1000, 500.0, 2, True, Tuning(0.1, 0.5)) == 1            # 2 s: one
    # nothing measured yet: the default of four per lane
    assert chunk_count(1000, 500.0, 2, True) == 8


def test_plans_use_each_workers_tuning():
    from scheduler_plugins.planner import Tuning, split_shares
    workers = [WorkerInfo(A, 1), WorkerInfo(B, 1)]
    tuning = {A: Tuning(0.002, 0.0), B: Tuning(0.002, 0.1)}
    chunks = split_shares(workers, [1000, 1000], {A: 1000.0, B: 1000.0}, True, tuning=tuning)
    covers(chunks, 2000)
    counts = {w: sum(c.worker == w for c in chunks) for w in (A, B)}
    assert counts == {A: 2, B: 7}                         # sqrt(0.1 * 1 / 0.002) = 7.07


def test_unknown_kernel_prior_split():
    workers = [WorkerInfo(A, 2), WorkerInfo(B, 1)]
    chunks = plan_launch(300, workers, {A: 1.0, B: 1.0}, measured=False)
    covers(chunks, 300)
    assert blocks_by_worker(chunks) == {A: 200, B: 100}   # by thread count
    assert len(chunks) == 6                               # two per thread


def test_single_chunk_goes_to_the_fastest():
    workers = [WorkerInfo(A, 1), WorkerInfo(B, 1)]
    assert plan_launch(50, workers, {A: 1.0, B: 3.0}, single_chunk=True)[0].worker == B


def test_even_plan():
    workers = [WorkerInfo(A, 1), WorkerInfo(B, 1)]
    assert blocks_by_worker(even_plan(100, workers)) == {A: 50, B: 50}


@pytest.mark.parametrize("ratio", [1.0, 1.5, 2.0, 4.0])
def test_converges_in_three_launches(ratio):
    """Simulated launches: speeds measured from the chunks of each launch drive the next
    plan; by the third launch the makespan is within 5% of the ideal."""
    speeds = {A: 1000.0 * ratio, B: 1000.0}     # true blocks/s per thread
    workers = [WorkerInfo(A, 1), WorkerInfo(B, 1)]
    model = ThroughputModel()
    n = 20_000
    ideal = n / sum(speeds.values())
    makespans = []
    for _ in range(3):
        priors = {w.address: w.prior for w in workers}
        rates = model.rates_for("k", priors)
        measured = any(model.rate("k", w.address) for w in workers)
        chunks = plan_launch(n, workers, rates, measured=measured)
        busy = {A: 0.0, B: 0.0}
        for c in chunks:
            seconds = c.blocks / speeds[c.worker]
            busy[c.worker] += seconds
            model.observe("k", c.worker, c.blocks, seconds)
        makespans.append(max(busy.values()))
    assert makespans[-1] <= ideal * 1.05
    assert makespans[1] <= ideal * 1.05


# -- the rebalancer, against a stand-in scheduler ---------------------------------------------
class FakeTask:
    def __init__(self, key, launch, index, resources=None, dependencies=()):
        self.key = key
        self.annotations = {"dptx": {"launch": launch, "index": index, "kernel": "k", "blocks": 100}}
        self.resource_restrictions = resources or {"CPU": 1}
        self.dependencies = set(dependencies)


class FakeData:
    def __init__(self, nbytes, who_has):
        self.nbytes = nbytes
        self.who_has = set(who_has)


class FakeWorker:
    def __init__(self, address, resources=None):
        self.address = address
        self.processing = set()
        self.executing = {}
        self.resources = resources or {"CPU": 1}
        self.nthreads = 1


class FakeStealing:
    def __init__(self):
        self.moves = []

    def move_task_request(self, ts, victim, thief):
        self.moves.append((ts.key, victim.address, thief.address))


class FakeScheduler:
    def __init__(self, workers):
        self.workers = {w.address: w for w in workers}
        self.extensions = {"stealing": FakeStealing()}


def make_plugin(workers):
    from scheduler_plugins import DptxSchedulerPlugin
    plugin = DptxSchedulerPlugin()
    plugin.scheduler = FakeScheduler(workers)
    return plugin


def test_rebalance_moves_the_last_queued_chunk_to_an_idle_worker():
    idle, busy = FakeWorker(A), FakeWorker(B)
    tasks = [FakeTask(f"c{i}", "L1", i) for i in range(4)]
    busy.processing = set(tasks)
    busy.executing = {tasks[0]: 0.0}                  # one runs, three wait
    plugin = make_plugin([idle, busy])
    assert plugin.rebalance("L1", A) == 1
    assert plugin.scheduler.extensions["stealing"].moves == [("c3", B, A)]


def test_rebalance_moves_data_only_when_it_pays():
    """A queued chunk whose inputs the thief lacks moves only if its compute time (from the
    model) is well above the time to move those bytes."""
    idle, busy = FakeWorker(A), FakeWorker(B)
    big = FakeData(500_000_000, [busy])               # 0.5 s at 1 GB/s
    small = FakeData(1_000, [busy])
    tasks = [FakeTask(f"c{i}", "L1", i, dependencies=[big if i == 3 else small]) for i in range(4)]
    busy.processing = set(tasks)
    busy.executing = {tasks[0]: 0.0}
    plugin = make_plugin([idle, busy])
    plugin.model.observe("k", B, 100, 0.2)            # a chunk of 100 blocks takes 0.2 s on B
    assert plugin.rebalance("L1", A) == 0             # moving 0.5 s of data for 0.2 s of work: no
    tasks[3].dependencies = {small}
    assert plugin.rebalance("L1", A) == 1


def test_rebalance_leaves_alone_what_it_should():
    idle, busy = FakeWorker(A), FakeWorker(B)
    running, waiting = FakeTask("c0", "L1", 0), FakeTask("c1", "L1", 1)
    busy.processing = {running, waiting}
    busy.executing = {running: 0.0}
    plugin = make_plugin([idle, busy])
    assert plugin.rebalance("L1", A) == 0             # the victim keeps its only queued chunk
    busy.processing.add(FakeTask("c2", "L1", 2))
    idle.processing = {FakeTask("c9", "L1", 9)}
    assert plugin.rebalance("L1", A) == 0             # the thief still has work of this launch
    idle.processing = set()
    assert plugin.rebalance("L2", A) == 0             # another launch: nothing queued
    gpu_only = FakeWorker(B, {"GPU": 1})
    gpu_only.processing = {FakeTask(f"g{i}", "L3", i, {"GPU": 1}) for i in range(3)}
    plugin = make_plugin([FakeWorker(A), gpu_only])
    assert plugin.rebalance("L3", A) == 0             # GPU chunks never go to a CPU-only worker


@pytest.mark.parametrize("way", ["metadata", "event"])
def test_first_runs_and_trials_do_not_set_the_speed(way):
    """A chunk time the worker flags as no sample (a kernel's first run there, or the CPU
    executor's trial of both forms) counts its blocks as done but teaches no model. Workers
    put the time in the task's metadata (sent with its finished message); older ones sent
    an event."""
    worker = FakeWorker(A)
    plugin = make_plugin([worker])
    plugin.scheduler.tasks = {}
    for i, (seconds, sample) in enumerate([(5.0, False), (0.1, True)]):
        key = f"dptx-chunk-k-{i}"
        ts = FakeTask(key, "L1", i)
        ts.annotations["dptx"].update(first=100 * i, end=100 * i + 100, nblocks=200)
        ts.nbytes = 0
        plugin.scheduler.tasks[key] = ts
        figures = {"seconds": seconds, "sample": sample}
        if way == "event":
            plugin.log_event("dptx-chunk", {"key": key, **figures})
        plugin.transition(key, "processing", "memory", worker=A,
                          startstops=[{"action": "compute", "start": 0.0, "stop": 1.0}],
                          metadata={"dptx-chunk": figures} if way == "metadata" else {})
        if i == 0:
            assert plugin.model.rate("k", A) is None
    assert plugin.model.rate("k", A) == pytest.approx(1000.0)     # 100 blocks in 0.1 s
    assert sum(plugin.launches["L1"].done.values()) == 200


def test_a_fused_chunk_of_several_kernels_is_shared_out_by_the_expected_times():
    """A chunk that ran two kernels' blocks (a fused group) took 1.2x what the model expects
    of this worker: each kernel's share of the time is its expected share, so both speeds
    move towards 1/1.2 of what they were (by the model's smoothing, alpha 0.5)."""
    from types import SimpleNamespace
    plugin = make_plugin([FakeWorker(A)])
    plugin.model.observe("ka", A, 1000, 1.0)          # 1000 blocks/s
    plugin.model.observe("kb", A, 500, 1.0)           # 500 blocks/s
    steps = [("ka", 100), ("kb", 100), ("ka", 100)]   # expected 0.2 s + 0.2 s
    info = {"launch": "L", "index": 0, "blocks": 300, "share": 100, "steps": steps}
    key = "dptx-chunk-fused-L-0"
    plugin.scheduler.tasks = {key: SimpleNamespace(annotations={"dptx": info})}
    plugin.kernel_seconds[key] = (0.48, True)
    plugin.transition(key, "processing", "memory", worker=A, startstops=())
    assert plugin.fused_samples == 1 and not plugin.failed_hooks
    assert plugin.model.rate("ka", A) == pytest.approx(1000 + 0.5 * (200 / 0.24 - 1000))
    assert plugin.model.rate("kb", A) == pytest.approx(500 + 0.5 * (100 / 0.24 - 500))
    # a kernel with no speed there yet (it has only ever run fused): shared out by blocks
    info2 = dict(info, steps=[("kc", 300), ("kd", 100)])
    plugin.scheduler.tasks["dptx-chunk-fused-L-1"] = SimpleNamespace(annotations={"dptx": info2})
    plugin.kernel_seconds["dptx-chunk-fused-L-1"] = (0.5, True)
    plugin.transition("dptx-chunk-fused-L-1", "processing", "memory", worker=A, startstops=())
    assert plugin.fused_samples == 2 and not plugin.kernel_seconds
    assert plugin.model.rate("kc", A) == pytest.approx(300 / 0.375)
    assert plugin.model.rate("kd", A) == pytest.approx(100 / 0.125)
    # a first run or a trial (the worker says so): not a sample of its speed
    plugin.scheduler.tasks["dptx-chunk-fused-L-2"] = SimpleNamespace(annotations={"dptx": info2})
    plugin.kernel_seconds["dptx-chunk-fused-L-2"] = (5.0, False)
    plugin.transition("dptx-chunk-fused-L-2", "processing", "memory", worker=A, startstops=())
    assert plugin.fused_samples == 2 and plugin.model.rate("kc", A) == pytest.approx(800)


def test_no_model_is_sent_to_a_client_whose_connection_closed_until_it_is_removed():
    """A client that closed its connection stays subscribed until the scheduler removes it;
    an event sent in between makes Dask log a CRITICAL "Closed comm" with the whole model.
    The plugin holds the publish, and sends it once the client is gone."""
    from types import SimpleNamespace

    from scheduler_plugins.plugin import MODEL_TOPIC
    plugin = make_plugin([FakeWorker(A)])
    sent = []
    closed = SimpleNamespace(comm=SimpleNamespace(closed=lambda: True))
    topic = SimpleNamespace(subscribers={"client-1"}, events=__import__("collections").deque())
    plugin.scheduler.client_comms = {"client-1": closed}
    plugin.scheduler._broker = SimpleNamespace(_topics={MODEL_TOPIC: topic})
    plugin.scheduler.log_event = lambda name, msg: sent.append((name, msg))
    plugin.model_snapshot = lambda kernels: {"kernels": sorted(kernels)}
    plugin._full = False                        # (a delta, as once workers are known)
    plugin._changed.add("k")
    plugin.publish()
    assert sent == [] and plugin._changed == {"k"}
    topic.subscribers.clear()                   # the scheduler removed the client
    del plugin.scheduler.client_comms["client-1"]
    plugin.publish()
    assert sent == [(MODEL_TOPIC, {"kernels": ["k"]})] and not plugin._changed
