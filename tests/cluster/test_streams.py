"""dptx.Stream and dptx.Event with CuPy's calls: stream= on launches and copies, with
stream:, synchronize, done, record, wait_event, get_elapsed_time; work on two streams runs
at the same time on the cluster; one stream keeps its order; errors stay in their stream."""
import gc
import time

import numpy as np
import pytest

import dptx

pytestmark = pytest.mark.client_side("streams, events and groups of launches are the client's")

SRC = r'''
extern "C" __global__ void spin(float* x, int iters) {
    // one thread's long dependent loop: seconds of work in one block
    float v = x[threadIdx.x];
    for (int k = 0; k < iters; k++) v = v * 0.999999f + 1e-6f;
    x[threadIdx.x] = v;
}
extern "C" __global__ void addk(float* x, float k, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * 2.0f + k;
}
extern "C" __global__ void poke(float* x, int at) { x[at + threadIdx.x] = 1.0f; }
'''


@pytest.fixture(scope="module")
def mod():
    return dptx.RawModule(SRC)


def on_other_workers(client):
    """Two small arrays held by different workers (small uploads alternate)."""
    arrays = [dptx.asarray(np.zeros(32, np.float32)) for _ in range(2)]
    dptx.synchronize()
    holders = [a._buffer.pieces.pieces[0].worker for a in arrays]
    assert holders[0] != holders[1], holders
    return arrays


def test_two_streams_run_at_the_same_time(client, mod):
    x, y = on_other_workers(client)
    slow, fast = dptx.Stream(), dptx.Stream(non_blocking=True)
    iters = 1_500_000_000       # about 2 s on one core
    mod.get_function("spin")((1,), (32,), (x, np.int32(iters)), stream=slow)
    mod.get_function("addk")((1,), (32,), (y, np.float32(5), np.int32(32)), stream=fast)
    fast.synchronize()          # waits for its own work only
    assert fast.done and not slow.done      # the slow stream's block is still running
    slow.synchronize()
    assert slow.done
    np.testing.assert_array_equal(y.get(), np.full(32, 5, np.float32))


def test_one_stream_keeps_its_order(client, mod):
    n = 4096
    host = np.arange(n, dtype=np.float32)
    x = dptx.asarray(host)
    s = dptx.Stream()
    addk = mod.get_function("addk")
    for k in range(6):
        addk((n // 256,), (256,), (x, np.float32(k), np.int32(n)), stream=s)
    s.synchronize()
    want = host.copy()
    for k in range(6):
        want = want * np.float32(2) + np.float32(k)
    np.testing.assert_array_equal(x.get(), want)


def test_with_stream_makes_it_current_and_copies_take_stream(client, mod):
    s = dptx.Stream()
    assert dptx.get_current_stream() is dptx.Stream.null
    x = dptx.zeros(1024, np.float32)
    with s:
        assert dptx.get_current_stream() is s
        x.set(np.arange(1024, dtype=np.float32))
        mod.get_function("addk")((4,), (256,), (x, np.float32(1), np.int32(1024)))
        assert s._pending or s._open is not None      # the work went to s
    assert dptx.get_current_stream() is dptx.Stream.null
    y = x.copy(stream=s)
    s.synchronize()
    np.testing.assert_array_equal(y.get(), np.arange(1024, dtype=np.float32) * 2 + 1)
    with pytest.raises(TypeError, match="dptx.Stream"):
        mod.get_function("addk")((4,), (256,), (x, 1.0, 1024), stream="s")


def test_events_time_the_work_between_them(client, mod):
    x = dptx.zeros(32, np.float32)
    dptx.synchronize()
    s = dptx.Stream()
    start, end = dptx.Event(), dptx.Event()
    start.record(s)
    t0 = time.perf_counter()
    mod.get_function("spin")((1,), (32,), (x, np.int32(300_000_000)), stream=s)
    end.record(s)
    assert not end.done
    with pytest.raises(dptx.DptxError, match="has not completed"):
        dptx.get_elapsed_time(start, end)
    end.synchronize()
    wall = (time.perf_counter() - t0) * 1000
    elapsed = dptx.get_elapsed_time(start, end)
    assert end.done and 0 < elapsed <= wall + 1, (elapsed, wall)
    with pytest.raises(dptx.DptxError, match="never recorded"):
        dptx.get_elapsed_time(dptx.Event(), end)


def test_wait_event_and_data_order_across_streams(client, mod):
    n = 2048
    x = dptx.asarray(np.ones(n, np.float32))
    a, b = dptx.Stream(), dptx.Stream()
    addk = mod.get_function("addk")
    addk((n // 256,), (256,), (x, np.float32(3), np.int32(n)), stream=a)     # x = 2x + 3
    b.wait_event(a.record())
    addk((n // 256,), (256,), (x, np.float32(1), np.int32(n)), stream=b)     # then 2x + 1
    b.synchronize()
    np.testing.assert_array_equal(x.get(), np.full(n, (1 * 2 + 3) * 2 + 1, np.float32))


@pytest.mark.cpu_workers("the error is the CPU executor's bounds check")
def test_an_error_is_raised_by_its_own_stream(client, mod):
    bad, good = dptx.Stream(), dptx.Stream()
    x, y = dptx.zeros(64, np.float32), dptx.zeros(64, np.float32)
    mod.get_function("poke")((1,), (4,), (x, np.int32(1000)), stream=bad)
    mod.get_function("addk")((1,), (64,), (y, np.float32(2), np.int32(64)), stream=good)
    good.synchronize()                       # good's work is fine
    with pytest.raises(dptx.DptxMemoryError, match="kernel poke"):
        bad.synchronize()
    np.testing.assert_array_equal(y.get(), np.full(64, 2, np.float32))


def test_null_stream_is_the_default_one():
    assert dptx.Stream(null=True) is dptx.Stream.null
    assert repr(dptx.Stream.null) == "<dptx.Stream null>"


def test_an_event_recorded_again_follows_its_last_record(client, mod):
    x = dptx.zeros(32, np.float32)
    s = dptx.Stream()
    e = dptx.Event()
    mod.get_function("spin")((1,), (32,), (x, np.int32(300_000_000)), stream=s)
    e.record(s)                          # waits for the spin
    assert not e.done
    e.record(dptx.Stream())              # an idle stream: complete at once
    assert e.done
    s.synchronize()
    assert e.done and e._left == 0       # the first record's callback changed nothing


def _count_messages(client, monkeypatch) -> list:
    """The graphs of launches dptx sends the scheduler from now on (one ``update-graph``
    each; a kernel's image, uploaded at its first launch, goes apart)."""
    sent = []
    real = client._graph_to_futures

    def counting(expr, keys, *args, **kwargs):
        if not all(str(k).startswith("dptx-ptx-") for k in keys):
            sent.append(sorted(str(k) for k in keys))
        return real(expr, keys, *args, **kwargs)

    monkeypatch.setattr(client, "_graph_to_futures", counting)
    return sent


def test_launches_inside_together_reach_the_scheduler_in_one_message(client, mod, monkeypatch):
    n = 1 << 20                 # blocks on both workers: not a batch of small launches
    host = np.arange(n, dtype=np.float32)
    x = dptx.asarray(host)
    dptx.synchronize()
    s = dptx.Stream()
    sent = _count_messages(client, monkeypatch)
    with s.together():
        # different grids and kernels: no group takes them all, each is submitted apart
        mod.get_function("addk")((n // 256,), (256,), (x, np.float32(1), np.int32(n)), stream=s)
        mod.get_function("poke")((1,), (8,), (x, np.int32(100)), stream=s)
        mod.get_function("addk")((n // 128,), (128,), (x, np.float32(3), np.int32(n)), stream=s)
        assert sent == []                       # held until the block ends
    assert len(sent) == 1
    s.synchronize()
    want = host * np.float32(2) + np.float32(1)
    want[100:108] = 1
    np.testing.assert_array_equal(x.get(), want * np.float32(2) + np.float32(3))


def test_a_reduction_is_one_message(client, monkeypatch):
    host = np.random.default_rng(3).random(1 << 20, dtype=np.float32)
    a = dptx.asarray(host)
    dptx.synchronize()
    sent = _count_messages(client, monkeypatch)
    total = a.sum()            # partial sums over the workers, then the final launch
    dptx.synchronize()
    assert len(sent) == 1 and any("sum_final" in k for k in sent[0]), sent
    np.testing.assert_allclose(float(total.get()), host.sum(dtype=np.float64), rtol=1e-5)
    # every key is let go once nothing uses it (the message's own futures hold no extra
    # references: the scheduler would otherwise keep those results for ever)
    keys = set(sent[0])
    del total
    gc.collect()
    deadline = time.time() + 5
    while keys & set(map(str, client.refcount)) and time.time() < deadline:
        time.sleep(0.05)
    assert not keys & set(map(str, client.refcount))
    sent.clear()
    mean = a.mean()             # the sum's two launches and the division
    dptx.synchronize()
    assert len(sent) == 1, sent
    np.testing.assert_allclose(float(mean.get()), host.mean(dtype=np.float64), rtol=1e-5)


@pytest.mark.timeout(120)   # (what it guards against is a wait for ever)
def test_waiting_inside_together_sends_what_it_waits_for(client, mod):
    """A synchronization, an event, or more operations in flight than the stream keeps (it
    then waits for the oldest) inside ``together``: the held message goes first, nothing
    waits on a graph the scheduler never got."""
    n = 1024
    x = dptx.zeros(n, np.float32)
    s = dptx.Stream()
    addk, poke = mod.get_function("addk"), mod.get_function("poke")
    want = np.zeros(n, np.float32)
    with s.together():
        for k in range(3 * s.MAX_QUEUED):       # alternating kernels: no group forms
            addk((n // 256,), (256,), (x, np.float32(1), np.int32(n)), stream=s)
            poke((1,), (4,), (x, np.int32(4 * k)), stream=s)
            want = want * np.float32(2) + np.float32(1)
            want[4 * k:4 * k + 4] = 1
        e = s.record()
        e.synchronize()
        s.synchronize()
        np.testing.assert_array_equal(x.get(), want)
    assert e.done


def test_a_held_message_that_cannot_be_sent_fails_its_futures(client, monkeypatch):
    from graphs.submit import GraphBuilder, held_message

    def broken(*args, **kwargs):
        raise RuntimeError("the scheduler connection broke")

    graph = GraphBuilder()
    key = graph.task(f"dptx-test-held-{time.time_ns()}", int, 7)
    with pytest.raises(RuntimeError, match="connection broke"):
        with held_message():
            futures = graph.submit(client, [key])
            monkeypatch.setattr(client, "_graph_to_futures", broken)
    assert futures[key].status == "error"
    with pytest.raises(RuntimeError, match="connection broke"):
        futures[key].result(timeout=5)


@pytest.mark.timeout(120)
def test_a_group_is_submitted_while_another_thread_holds_the_runtime(client, mod):
    """A stream's timer thread submits its open group holding the stream's lock; meanwhile
    dptx.shutdown (at exit) or dptx.connect holds the runtime's lock and waits for that
    stream. The submission must not need the runtime's lock: a script whose last launch was
    still in its group hung at exit so (1 run in 20)."""
    import threading

    from dptx.runtime import cluster as runtime
    n = 1 << 16
    x = dptx.asarray(np.arange(n, dtype=np.float32))
    kernel = mod.get_function("addk")
    kernel((n // 256,), (256,), (x, np.float32(1), np.int32(n)))   # (the session exists)
    x.get()
    stream = dptx.get_current_stream()
    with runtime._lock:
        kernel((n // 256,), (256,), (x, np.float32(1), np.int32(n)))
        opened = stream._open is not None
        deadline = time.monotonic() + 10
        while stream._open is not None and time.monotonic() < deadline:
            time.sleep(0.01)
        # (the timer thread holds the stream's lock while it submits: take it to see the end)
        got = stream._lock.acquire(timeout=max(0.0, deadline - time.monotonic()))
        if got:
            stream._lock.release()
        holders = [t.name for t in threading.enumerate() if t.name == "dptx-stream-groups"]
    assert got, f"the group's submission waited for the runtime's lock ({holders})"
    assert opened       # (the launch formed a group: what the timer submits)
    np.testing.assert_array_equal(x.get(), (np.arange(n, dtype=np.float32) * 2 + 1) * 2 + 1)
