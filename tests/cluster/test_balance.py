"""The balancer on a really unequal pair: two single-thread workers pinned to separate cores,
two bounded busy processes competing on one of them (so it runs at about a third of the
speed). Within 8 launches the faster worker runs at least 60% of the blocks (ideal about 75%;
the margin absorbs a noisy machine)."""
import logging
import os

import numpy as np
import pytest
from distributed import Client, LocalCluster

import dptx
from dptx.pinning import pin_process_to, start_busy_process

pytestmark = pytest.mark.alone("pins workers to cores and times their speeds")

POLY = r'''
extern "C" __global__ void poly(float* y, int iters) {
    // the same work for every block: blocks per second is a fair speed measure
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i * 1e-4f, acc = 0.0f;
    for (int k = 0; k < iters; k++) acc = acc * 0.999f + v * k;
    y[i] = acc;
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
        busy = []
        try:
            fast, slow = sorted(client.nthreads())
            client.run(pin_process_to, cores[0], workers=[fast])
            client.run(pin_process_to, cores[1], workers=[slow])
            busy = [start_busy_process(cores[1], 120) for _ in range(2)]
            kernel = dptx.RawModule(POLY).get_function("poly")
            y = dptx.zeros(512 * 256, np.float32)
            # enough work per block that compute, not launch overhead, sets the speeds (the
            # warp-vectorized executor runs this loop about 25x faster than per thread)
            iters = 20000
            # a moderate imbalance moves the split once three new model readings in a row
            # find it (graphs.plan.PERSIST): usually by the fourth launch, later where the
            # scheduler's model reached the client less often than once per launch (a
            # loaded machine); a launch during which the fast worker's core was also busy
            # can mislead a model of two
            for launch in range(8):
                kernel((512,), (256,), (y, iters))
                result = y.get()
                state = client.run_on_scheduler(
                    lambda dask_scheduler: dask_scheduler.plugins["dptx"].state())
                k = {addr: wk["kernels"][kernel.model_key] for addr, wk in state["workers"].items()}
                if launch >= 3 and k[fast]["share"] >= 0.60:
                    break
            assert k[fast]["blocks"] + k[slow]["blocks"] == 512
            assert k[fast]["share"] >= 0.60, k
            assert k[fast]["blocks_per_s"] > 1.3 * k[slow]["blocks_per_s"], k
            # and the result is right (on every 61st thread: the reference loop is numpy)
            pick = np.arange(0, 512 * 256, 61)
            i = pick.astype(np.float32) * np.float32(1e-4)
            acc = np.zeros_like(i)
            for it in range(iters):
                acc = acc * np.float32(0.999) + i * np.float32(it)
            assert np.allclose(result[pick], acc, rtol=1e-4)
        finally:
            for p in busy:
                p.kill()
                p.wait()
            dptx.shutdown()
