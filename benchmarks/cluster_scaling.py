"""Distributed runtime figures, side by side from one run:

1. scaling: a compute-bound kernel (mandelbrot) on one worker process against two (1 thread
   each), and the in-process CPU executor as the floor;
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

MANDEL = r'''
extern "C" __global__ void mandelbrot(int* out, int w, int h, int max_iter) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h) return;
    float cr = -2.0f + 3.0f * x / w, ci = -1.2f + 2.4f * y / h, zr = 0, zi = 0;
    int i = 0;
    while (i < max_iter && zr * zr + zi * zi < 4.0f) {
        float t = zr * zr - zi * zi + cr; zi = 2.0f * zr * zi + ci; zr = t; i++;
    }
    out[y * w + x] = i;
}'''
TOUCH = r'''
extern "C" __global__ void touch(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += 1.0f;
}'''
W, H, ITERS = 1024, 768, 256


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
                      preload=["dptx.worker"]) as cluster, \
            Client(cluster, set_as_default=False) as client:
        dptx.connect(client)
        try:
            mandel = dptx.RawModule(MANDEL).get_function("mandelbrot")
            out = dptx.zeros((H, W), np.int32)
            grid = (W // 16, H // 16)
            t_mandel = time_launches(mandel, grid, (16, 16), [out, W, H, ITERS])

            touch = dptx.RawModule(TOUCH).get_function("touch")
            n = 1 << 16
            x = dptx.zeros(n, np.float32)
            timings = {}
            for chunks in (1, 64):
                with dask.config.set({"dptx.chunks": chunks}):
                    timings[chunks] = time_launches(touch, (n // 256,), (256,), [x, n], repeat=5)

            before = transferred_bytes(client)
            with dask.config.set({"dptx.chunks": 2 * n_workers}):
                touch((n // 256,), (256,), (x, n))
                x.get()
            moved = transferred_bytes(client) - before
            return t_mandel, timings, moved
        finally:
            dptx.shutdown()


def main():
    host = np.zeros((H, W), np.int32)
    kernel = dptx.RawModule(MANDEL).get_function("mandelbrot")
    cpu.launch(kernel, (W // 16, H // 16), (16, 16), [host, W, H, ITERS])
    t0 = time.perf_counter()
    cpu.launch(kernel, (W // 16, H // 16), (16, 16), [host, W, H, ITERS])
    t_inproc = time.perf_counter() - t0

    one = on_cluster(1)
    two = on_cluster(2)
    print(f"mandelbrot {W}x{H}, {ITERS} iterations (best of 3, seconds)")
    print(f"{'in-process (all cores)':<28}{t_inproc:>10.3f}")
    print(f"{'1 worker x 1 thread':<28}{one[0]:>10.3f}")
    print(f"{'2 workers x 1 thread':<28}{two[0]:>10.3f}   speedup over 1 worker: {one[0] / two[0]:.2f}x")
    for label, (_, timings, moved) in (("1 worker", one), ("2 workers", two)):
        overhead_ms = (timings[64] - timings[1]) / 63 * 1e3
        print(f"{label}: small launch {timings[1] * 1e3:.1f} ms as 1 chunk, "
              f"{timings[64] * 1e3:.1f} ms as 64 chunks -> {overhead_ms:.2f} ms per extra chunk; "
              f"bytes moved between workers for a 256 KiB launch: {moved:,}")


if __name__ == "__main__":
    main()
