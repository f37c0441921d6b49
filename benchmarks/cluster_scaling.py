"""Distributed runtime figures, side by side from one run:

1. scaling: a compute-bound kernel of uniform cost per block on one worker process against
   two (1 thread each), and the in-process CPU executor on all cores as the floor;
2. per-chunk overhead: the same small launch cut into 1 and into 64 chunks;
3. bytes moved per launch: what workers fetched from each other, and what chunks returned.

    python benchmarks/cluster_scaling.py
"""

import logging
import time

import dask.config
import numpy as np
from distributed import Client, LocalCluster

import dptx
from dptx import cpu

POLY = r'''
extern "C" __global__ void poly(float* y, int iters) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i * 1e-4f, acc = 0.0f;
    for (int k = 0; k < iters; k++) acc = acc * 0.999f + v * k;
    y[i] = acc;
}'''
TOUCH = r'''
extern "C" __global__ void touch(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += 1.0f;
}'''
NBLOCKS, THREADS, ITERS = 1024, 256, 100000


def transferred_bytes(client):
    def total(dask_worker):
        return sum(t.get("total", 0) for t in dask_worker.transfer_incoming_log)
    return sum(client.run(total).values())


def time_launches(kernel, grid, block, args, repeat=3):
    kernel(grid, block, args)  # warm-up: JIT on every worker
    dptx.synchronize()
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        kernel(grid, block, args)
        dptx.synchronize()
        args[0].get()
        best = min(best, time.perf_counter() - t0)
    return best


def on_cluster(n_workers):
    with LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                      dashboard_address=":0", silence_logs=logging.ERROR,
                      preload=["dptx.worker"],
                      scheduler_kwargs={"preload": ["scheduler_plugins"]}) as cluster, \
            Client(cluster, set_as_default=False) as client:
        dptx.connect(client)
        try:
            poly = dptx.RawModule(POLY).get_function("poly")
            out = dptx.zeros(NBLOCKS * THREADS, np.float32)
            t_poly = time_launches(poly, (NBLOCKS,), (THREADS,), [out, ITERS])

            touch = dptx.RawModule(TOUCH).get_function("touch")
            n = 1 << 16
            x = dptx.zeros(n, np.float32)
            timings = {}
            for chunks in (1, 64):
                with dask.config.set({"dptx.chunks": chunks}):
                    timings[chunks] = time_launches(touch, (n // 256,), (256,), [x, n], repeat=5)

            before = transferred_bytes(client)
            touch((n // 256,), (256,), (x, n))       # planned by the plugin
            x.get()
            fetched = transferred_bytes(client) - before

            def returned(dask_scheduler, key=touch.model_key):
                # (the plugin knows a kernel by its model key: name@module digest)
                plugin = dask_scheduler.plugins["dptx"]
                last = plugin.launches[plugin.last_launch[key]]
                return last.bytes_returned
            moved = (client.run_on_scheduler(returned), fetched)
            return t_poly, timings, moved
        finally:
            dptx.shutdown()


def main():
    host = np.zeros(NBLOCKS * THREADS, np.float32)
    kernel = dptx.RawModule(POLY).get_function("poly")
    cpu.launch(kernel, (NBLOCKS,), (THREADS,), [host, np.int32(ITERS)])
    t0 = time.perf_counter()
    cpu.launch(kernel, (NBLOCKS,), (THREADS,), [host, np.int32(ITERS)])
    t_inproc = time.perf_counter() - t0

    one = on_cluster(1)
    two = on_cluster(2)
    print(f"poly: {NBLOCKS} blocks x {THREADS} threads x {ITERS} iterations (best of 3, seconds)")
    print(f"{'in-process (all cores)':<28}{t_inproc:>10.3f}")
    print(f"{'1 worker x 1 thread':<28}{one[0]:>10.3f}")
    print(f"{'2 workers x 1 thread':<28}{two[0]:>10.3f}   speedup over 1 worker: {one[0] / two[0]:.2f}x")
    for label, (_, timings, moved) in (("1 worker", one), ("2 workers", two)):
        overhead_ms = (timings[64] - timings[1]) / 63 * 1e3
        print(f"{label}: small launch {timings[1] * 1e3:.1f} ms as 1 chunk, "
              f"{timings[64] * 1e3:.1f} ms as 64 chunks -> {overhead_ms:.2f} ms per extra chunk")
        print(f"    a launch updating a 256 KiB array: chunks returned {moved[0]:,} bytes "
              f"(what they wrote); workers fetched {moved[1]:,} bytes from each other")


if __name__ == "__main__":
    main()
