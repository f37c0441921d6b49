"""The balancer on a really unequal pair: two single-thread workers pinned to separate cores,
a bounded busy process competing on one of them. After 3 launches the faster worker runs at
least 60% of the blocks (ideal about 67%)."""
import logging
import os

import numpy as np
import pytest
from distributed import Client, LocalCluster

import dptx
from dptx.pinning import pin_process_to, start_busy_process

MANDEL = r'''
extern "C" __global__ void mandel_balance(int* out, int w, int h, int max_iter) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h) return;
    float cr = -2.0f + 3.0f * x / w, ci = -1.2f + 2.4f * y / h, zr = 0, zi = 0;
    int i = 0;
    while (i < max_iter && zr * zr + zi * zi < 4.0f) {
        float t = zr * zr - zi * zi + cr; zi = 2.0f * zr * zi + ci; zr = t; i++;
    }
    out[y * w + x] = i;
}'''


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two cores")
@pytest.mark.timeout(300)
def test_faster_worker_gets_more_blocks():
    cores = sorted(os.sched_getaffinity(0))[:2]
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                      silence_logs=logging.ERROR, preload=["dptx.worker"],
                      scheduler_kwargs={"preload": ["scheduler_plugins"]}) as cluster, \
            Client(cluster, set_as_default=False) as client:
        dptx.connect(client)
        busy = None
        try:
            fast, slow = sorted(client.nthreads())
            client.run(pin_process_to, cores[0], workers=[fast])
            client.run(pin_process_to, cores[1], workers=[slow])
            busy = start_busy_process(cores[1], 120)
            kernel = dptx.RawModule(MANDEL).get_function("mandel_balance")
            w, h = 512, 384
            out = dptx.zeros((h, w), np.int32)
            for _ in range(3):
                kernel((w // 16, h // 16), (16, 16), (out, w, h, 400))
                result = out.get()
            state = client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.plugins["dptx"].state())
            k = {addr: wk["kernels"]["mandel_balance"] for addr, wk in state["workers"].items()}
            share_fast = k[fast]["share"]
            assert k[fast]["blocks"] + k[slow]["blocks"] == (w // 16) * (h // 16)
            assert share_fast >= 0.60, k
            assert k[fast]["blocks_per_s"] > 1.3 * k[slow]["blocks_per_s"], k
            # and the result is right: points inside the set reach the iteration limit
            assert result[h // 2, w // 3] == 400 and result[0, 0] < 5
        finally:
            if busy is not None:
                busy.kill()
                busy.wait()
            dptx.shutdown()
