"""Adaptive balancing on an unequal pair of workers, side by side from one run.

Two single-thread workers pinned to separate cores; a bounded busy process competes on the
second core, so that worker runs at about half speed. Printed: the makespan of a launch split
by the dptx scheduler plugin (after 3 warm-up launches), split evenly, and run on the fast
worker alone.

    python benchmarks/balance.py
"""
import os as _os
import sys as _sys

# benchmarks/distributed.py has the name of the package these scripts import, and Python puts
# a script's folder first on the import path: take this folder off it.
_sys.path[:] = [p for p in _sys.path
                if _os.path.abspath(p or _os.curdir) != _os.path.dirname(_os.path.abspath(__file__))]
import logging
import os
import time

import dask.config
import numpy as np
from distributed import Client, LocalCluster

import dptx
from dptx.pinning import pin_process_to, start_busy_process

POLY = r'''
extern "C" __global__ void poly(float* y, int iters) {
    // the same work for every block: blocks per second is a fair speed measure
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i * 1e-4f, acc = 0.0f;
    for (int k = 0; k < iters; k++) acc = acc * 0.999f + v * k;
    y[i] = acc;
}'''
NBLOCKS, THREADS, ITERS = 1024, 256, 75000


def timed(kernel, out, repeat=3):
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        kernel((NBLOCKS,), (THREADS,), (out, ITERS))
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
            kernel = dptx.RawModule(POLY).get_function("poly")
            out = dptx.zeros(NBLOCKS * THREADS, np.float32)
            for _ in range(3):  # learn
                kernel((NBLOCKS,), (THREADS,), (out, ITERS))
                out.get()
            adaptive = timed(kernel, out)
            state = client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.plugins["dptx"].state())
            with dask.config.set({"dptx.chunks": 2}):
                # two equal chunks, one per worker (the plugin is bypassed by dptx.chunks)
                even = timed(kernel, out)
            client.retire_workers([slow])
            alone = timed(kernel, out)
        finally:
            if busy is not None:
                busy.kill()
                busy.wait()
            dptx.shutdown()
    k = {a: w["kernels"].get("poly", {}) for a, w in state["workers"].items()}
    print(f"poly: {NBLOCKS} blocks x {THREADS} threads x {ITERS} iterations; the second worker "
          f"shares its core with a busy process")
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
