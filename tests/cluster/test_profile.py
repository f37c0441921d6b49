"""The cost profile learned on real workers: a kernel whose blocks cost more along the grid
(block b loops b times) is seen as such by the scheduler plugin, and the plan gives the
worker with the cheap end of the grid more blocks, so that both finish together. Asserted:
the learned profile's shape and the block shares, not timings."""
import json
import time

import dask
import numpy as np
import pytest

import dptx

TRIANGLE = r'''extern "C" __global__ void triangle(float* y, int scale) {
    // block b does b * scale steps: the work grows along the grid
    float v = threadIdx.x * 1e-3f;
    int steps = blockIdx.x * scale;
    for (int k = 0; k < steps; k++) v = v * 0.9999f + 1e-4f;
    y[blockIdx.x * blockDim.x + threadIdx.x] = v;
}'''


def settle(client, planner, timeout=10.0):
    """Wait until the client's copy of the plugin's model is the plugin's current one: the
    last launch's chunk times reach the plugin after its data reach the client, and the
    plugin publishes every 0.2 s (reading the copy twice before then sees two models)."""
    deadline = time.monotonic() + timeout
    while True:
        current = json.dumps(client.sync(client.scheduler.dptx_model), sort_keys=True)
        if json.dumps(planner.model.snapshot(), sort_keys=True) == current:
            return
        assert time.monotonic() < deadline, "the plugin's model never reached the client"
        time.sleep(0.05)


def plugin_profile(client, kernel, nblocks):
    def look(dask_scheduler):
        p = dask_scheduler.plugins["dptx"].profiles
        prof = p.profile(kernel, nblocks)
        return None if prof is None else (prof.as_list(), [int(s) for s in prof.sizes])
    return client.run_on_scheduler(look)


@pytest.mark.alone("splits by the chunks' measured times")
@pytest.mark.cpu_workers("the stand-in GPU takes nearly the whole grid in one chunk per device "
                         "(a GPU's prior speed): too few chunk times along the grid to learn "
                         "a profile from")
def test_a_triangular_kernel_is_learned_and_split_at_equal_cost(client):
    nblocks, threads = 256, 32
    k = dptx.RawModule(TRIANGLE).get_function("triangle")
    y = dptx.zeros(nblocks * threads, np.float32)
    with dask.config.set({"dptx.chunks": None}):
        for _ in range(8):
            handle = k((nblocks,), (threads,), (y, np.int32(8000)))   # chunks of ~0.1 s
            y.get()
    planner = dptx.runtime.cluster.get_session().planner
    settle(client, planner)
    weights, sizes = plugin_profile(client, k.model_key, nblocks)
    dense = np.repeat(weights, sizes)
    # the learned cost grows along the grid as the kernel's work does
    # (shared, noisy machine: the bounds leave room; a uniform profile has neither)
    assert np.corrcoef(dense, np.arange(nblocks))[0, 1] > 0.7, weights
    assert dense[-32:].mean() > 2.5 * dense[:32].mean(), weights
    # the last launch: the worker with the cheap first blocks ran more of them
    chunks = handle.futures
    assert chunks
    plan = planner.shares[(k.model_key, (nblocks, 1, 1),
                                                       (threads, 1, 1))]
    first_share = plan.bounds[1] - plan.bounds[0]
    assert first_share > 0.58 * nblocks, plan.bounds  # equal cost: about 0.71 of the blocks

    # chunk counts tuned at run time: the plugin measured each worker's seconds per chunk
    # beyond its kernels and the spread of chunk times, and plans cut shares by them
    snapshot = planner.model.snapshot()          # the client's copy of the plugin's model
    overheads = snapshot["overheads"][k.model_key]
    assert set(overheads) == set(client.nthreads()) and all(v >= 0 for v in overheads.values())
    spread = snapshot["profiles"][k.model_key][str(nblocks)]["spread"]
    assert spread >= 0
    tuning = planner.model.tuning(k.model_key, nblocks)
    assert {w: t.spread for w, t in tuning.items()} == {w: spread for w in overheads}
    from scheduler_plugins.planner import chunk_count
    chunks = planner.plan(k.model_key, (nblocks, 1, 1), (threads, 1, 1), False, [])
    learned = planner.model.profile(k.model_key, nblocks)
    for w in overheads:
        mine = [c for c in chunks if c.worker == w]
        work = learned.profile.cost(mine[0].first, mine[-1].end)
        assert len(mine) == min(mine[-1].end - mine[0].first, chunk_count(
            max(1, round(work)), learned.speeds[w], 1, True, tuning[w])), (w, tuning[w])

    # the dashboard's state: the profile, and the runs of blocks each worker ran last
    state = client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.plugins["dptx"].state())
    entry = next(p for p in state["profiles"] if p["kernel"] == k.model_key)
    assert entry["nblocks"] == nblocks and entry["weights"] == weights
    runs = entry["runs"]
    assert runs[0][0] == 0 and runs[-1][1] == nblocks
    assert all(a[1] == b[0] and a[2] != b[2] for a, b in zip(runs, runs[1:]))
    assert {r[2] for r in runs} == {w["name"] for w in state["workers"].values()}
    from bokeh.palettes import Category10
    from scheduler_plugins.dashboard import profile_lines
    lines, cuts = profile_lines([entry], Category10[10])
    assert lines["xs"][0][0] == 0.0 and lines["xs"][0][-1] == 1.0
    assert cuts["x"] == [r[0] / nblocks for r in runs[1:]]
