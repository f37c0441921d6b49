"""A worker killed in the middle of a run loses nothing: its chunks (placed on it by the
scheduler plugin, loosely) rerun elsewhere and the result is bitwise the same."""
import logging
import os
import signal
import time

import numpy as np
import pytest
from distributed import Client, LocalCluster

import dptx

SLOW = r'''
extern "C" __global__ void slow_poly(const float* x, float* y, int n, int iters) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i], acc = 0.0f;
    for (int k = 0; k < iters; k++) acc = acc * 0.999f + sinf(v + k * 1e-3f);
    y[i] = acc;
}'''


@pytest.mark.timeout(300)
def test_killed_worker_changes_nothing():
    kernel = dptx.RawModule(SLOW).get_function("slow_poly")
    n, iters = 1 << 14, 20000
    x_host = np.linspace(-3, 3, n, dtype=np.float32)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                      silence_logs=logging.CRITICAL, preload=["dptx.worker"],
                      scheduler_kwargs={"preload": ["scheduler_plugins"]}) as cluster, \
            Client(cluster, set_as_default=False) as client:
        dptx.connect(client)
        try:
            # Reference run on the healthy cluster
            x = dptx.asarray(x_host)
            y_ref = dptx.zeros(n, np.float32)
            kernel((n // 128,), (128,), (x, y_ref, n, iters))
            reference = y_ref.get()

            y = dptx.zeros(n, np.float32)
            kernel((n // 128,), (128,), (x, y, n, iters))
            # kill one worker process as soon as some chunks have finished
            pids = client.run(os.getpid)
            victim_addr = sorted(pids)[0]

            launch_token = y._buffer.pieces.pieces[0].future.key.split("-")[3]
            prefix = f"dptx-chunk-slow_poly-{launch_token}-"

            def done_chunks(dask_scheduler, prefix=prefix):
                return sum(1 for k, ts in dask_scheduler.tasks.items()
                           if str(k).startswith(prefix) and ts.state == "memory")
            deadline = time.time() + 120
            while client.run_on_scheduler(done_chunks) < 1 and time.time() < deadline:
                time.sleep(0.05)
            def planned_on_victim(dask_scheduler, prefix=prefix, victim=victim_addr):
                return sum(1 for k, ts in dask_scheduler.tasks.items()
                           if str(k).startswith(prefix) and ts.worker_restrictions == {victim})
            assert client.run_on_scheduler(planned_on_victim) >= 1   # loose placement
            os.kill(pids[victim_addr], signal.SIGKILL)
            result = y.get()
            assert np.array_equal(result, reference)
            assert np.isfinite(result).all() and np.abs(result).max() > 0
        finally:
            dptx.shutdown()
