"""Adaptive balancing on an unequal pair of workers, side by side from one run.

Two single-thread workers pinned to separate cores; a bounded busy process competes on the
second core, so that worker runs at about half speed. Printed: the makespan of a launch split
by the dptx scheduler plugin (after 3 warm-up launches), split evenly, and run on the fast
worker alone.

    python benchmarks/balance.py
"""
import logging
import os
import time

import dask.config
import numpy as np
from distributed import Client, LocalCluster

import dptx
from dptx.pinning import pin_process_to, start_busy_process

MANDEL = r'''
extern "C" __global__ void mandel(int* out, int w, int h, int max_iter) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h) return;
    float cr = -2.0f + 3.0f * x / w, ci = -1.2f + 2.4f * y / h, zr = 0, zi = 0;
    int i = 0;
    while (i < max_iter && zr * zr + zi * zi < 4.0f) {
        float t = zr * zr - zi * zi + cr; zi = 2.0f * zr * zi + ci; zr = t; i++;
    }
    out[y * w + x] = i;
}'''
W, H, ITERS = 1024, 768, 400


def timed(kernel, out, repeat=3):
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        kernel((W // 16, H // 16), (16, 16), (out, W, H, ITERS))
        out.get()
        best = min(best, time.perf_counter() - t0)
    return best


def main():
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        raise SystemExit("needs two cores")
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
            busy = start_busy_process(cores[1], 600)
            kernel = dptx.RawModule(MANDEL).get_function("mandel")
            out = dptx.zeros((H, W), np.int32)
            for _ in range(3):  # learn
                kernel((W // 16, H // 16), (16, 16), (out, W, H, ITERS))
                out.get()
            adaptive = timed(kernel, out)
            with dask.config.set({"dptx.chunks": 2}):
                # two equal chunks, one per worker (the plugin is bypassed by dptx.chunks)
                even = timed(kernel, out)
            state = client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.plugins["dptx"].state())
            client.retire_workers([slow])
            alone = timed(kernel, out)
        finally:
            if busy is not None:
                busy.kill()
                busy.wait()
            dptx.shutdown()
    k = {a: w["kernels"].get("mandel", {}) for a, w in state["workers"].items()}
    print(f"mandelbrot {W}x{H}, {ITERS} iterations; worker 2 shares its core with a busy process")
    print(f"{'split':<22}{'makespan (s)':>14}{'vs adaptive':>14}")
    print(f"{'adaptive (dptx)':<22}{adaptive:>14.3f}{1.0:>14.2f}")
    print(f"{'even split':<22}{even:>14.3f}{even / adaptive:>14.2f}")
    print(f"{'fast worker alone':<22}{alone:>14.3f}{alone / adaptive:>14.2f}")
    for label, addr in (("fast", fast), ("slow", slow)):
        e = k.get(addr, {})
        print(f"  {label} worker: {e.get('blocks_per_s', 0):.0f} blocks/s, share of the last "
              f"adaptive launch {e.get('share', 0):.2f}")


if __name__ == "__main__":
    main()
