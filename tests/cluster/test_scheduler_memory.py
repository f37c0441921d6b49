"""What the scheduler keeps of a long run stays bounded (scheduler_plugins.spans and the
model topic): on the embedded cluster it lives in the user's process."""
import time

import numpy as np
import pytest

import dptx

pytestmark = pytest.mark.client_side('what the scheduler and its plugin keep')


def _spans_state(dask_scheduler):
    from scheduler_plugins.spans import DEFAULT
    ext = dask_scheduler.extensions["spans"]
    # (the task groups themselves go when nothing else holds them: Dask's last 100
    # computations do too)
    return {"defaults": len(ext.spans_search_by_name[DEFAULT]), "spans": len(ext.spans),
            "roots": len(ext.root_spans),
            "groups": sum(len(s.groups) for s in ext.spans.values())}


def test_finished_default_spans_and_their_task_groups_are_forgotten(client):
    """Each synchronization ends Dask's default span and the next launch opens a new one,
    which Dask keeps for ever with its task groups; the plugin forgets the finished ones
    beyond the newest ``dptx.span-history`` (here 3, asked for directly), and the scheduler
    still takes the workers' reports on spans it forgot."""
    host = np.arange(5000, dtype=np.int32)
    for i in range(30):
        # nothing kept from one round to the next: its task groups empty, and the next
        # round's are new ones in a new span
        a = dptx.asarray(host + i)
        np.testing.assert_array_equal((a + 1).get(), host + i + 1)
        del a
        time.sleep(0.05)
    before = client.run_on_scheduler(_spans_state)
    assert before["defaults"] >= 20, before

    def forget(dask_scheduler):
        from scheduler_plugins.spans import DEFAULT
        plugin = dask_scheduler.plugins["dptx"]
        older = dask_scheduler.extensions["spans"].spans_search_by_name[DEFAULT][:-3]
        # spans still holding a task group in use (other tests' arrays) stay
        pinned = sum(any(dask_scheduler.task_groups.get(tg.name) is tg for tg in s.groups)
                     for s in older)
        done = plugin.spans_forgotten
        plugin.forget_spans(3)
        return plugin.spans_forgotten - done, pinned
    forgotten, pinned = client.run_on_scheduler(forget)
    after = client.run_on_scheduler(_spans_state)
    assert forgotten >= 20 and after["defaults"] <= 3 + pinned, (forgotten, pinned, before, after)
    assert after["defaults"] == before["defaults"] - forgotten
    assert after["spans"] == before["spans"] - forgotten
    assert after["roots"] == before["roots"] - forgotten
    assert after["groups"] < before["groups"], (before, after)
    # the run goes on: new spans, workers' heartbeats with metrics of forgotten spans
    for i in range(5):
        a = dptx.asarray(host - i)
        np.testing.assert_array_equal((a * 2).get(), (host - i) * 2)
        del a
    time.sleep(1.5)
    assert client.run_on_scheduler(
        lambda dask_scheduler: dask_scheduler.extensions["spans"].merge_all().done) in (True, False)
    assert client.run_on_scheduler(
        lambda dask_scheduler: sum(dask_scheduler.plugins["dptx"].failed_hooks.values())) == 0


def test_the_scheduler_keeps_only_the_latest_models(client):
    """Clients take each published model as it comes; the scheduler keeps the last few, not
    Dask's 1,000 events per topic."""
    a = dptx.asarray(np.ones(1 << 16, np.float32))
    end = time.monotonic() + 2.5       # a model published every 0.2 s while it changes
    while time.monotonic() < end:
        a = a * 1.0001
        a.get()
    time.sleep(0.5)

    def kept(dask_scheduler):
        from scheduler_plugins.plugin import MODEL_TOPIC
        return len(dask_scheduler._broker._topics[MODEL_TOPIC].events)
    assert 1 <= client.run_on_scheduler(kept) <= 4


def test_the_plugin_publishes_only_the_kernels_that_changed(client):
    """Once workers are known, each published model carries the kernels learned from since
    the one before (a whole model per change cost the event loop time in proportion to
    every kernel ever run), and the client's copy lays it over what it has."""
    module = dptx.RawModule(r'''
    extern "C" __global__ void first_one(float* p) { p[blockIdx.x * blockDim.x + threadIdx.x] += 1.0f; }
    extern "C" __global__ void second_one(float* p) { p[blockIdx.x * blockDim.x + threadIdx.x] *= 2.0f; }''')
    first, second = module.get_function("first_one"), module.get_function("second_one")
    a = dptx.zeros(64 * 256, np.float32)
    for _ in range(3):
        first((64,), (256,), (a,))
        a.get()
    time.sleep(0.5)                     # (published every 0.2 s)
    for _ in range(3):
        second((64,), (256,), (a,))
        a.get()
    time.sleep(0.5)
    np.testing.assert_array_equal(a.get(), np.full(64 * 256, (((1 + 1 + 1) * 8)), np.float32))

    def latest(dask_scheduler):
        from scheduler_plugins.plugin import MODEL_TOPIC
        return dask_scheduler._broker._topics[MODEL_TOPIC].events[-1][1]
    last = client.run_on_scheduler(latest)
    assert last["delta"] and last["kernels"] == [second.model_key]
    assert set(last["rates"]) == {second.model_key}
    copy = dptx.runtime.cluster.get_session().planner.model.snapshot()
    assert {first.model_key, second.model_key} <= set(copy["rates"])
    assert set(copy["workers"]) == set(client.nthreads())
