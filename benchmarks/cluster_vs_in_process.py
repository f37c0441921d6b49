"""The distributed runtime against one process, side by side from one run (DESIGN.md point 6).

A cluster of 2 worker processes x 1 thread (scheduler plugin and worker preload, as the
embedded default) against ``dptx.cpu.launch`` in-process on 2 threads, same kernels, same
results (checked bitwise), runs of the two taken in turn. Data is on the cluster before timing
and every kernel has been compiled on every worker. Also: the bytes workers fetched from each other during each run,
against what the halos need, and queued one-block launches per second.

    python benchmarks/cluster_vs_in_process.py [--quick] [--runs N]
"""


import argparse
import logging
import time

import numpy as np
from distributed import Client, LocalCluster

import dptx
from dptx import cpu

SOURCE = r'''
extern "C" __global__ void jacobi1d(const float* in, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    if (i == 0 || i == n - 1) { out[i] = in[i]; return; }
    out[i] = (in[i - 1] + in[i] + in[i + 1]) * (1.0f / 3.0f);
}
extern "C" __global__ void stencil2d(const float* in, float* out, int w, int h) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h) return;
    int i = y * w + x;
    if (x == 0 || y == 0 || x == w - 1 || y == h - 1) { out[i] = in[i]; return; }
    out[i] = 0.2f * (in[i] + in[i - 1] + in[i + 1] + in[i - w] + in[i + w]);
}
extern "C" __global__ void vecadd(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
#define TILE 16
extern "C" __global__ void matmul(const float* A, const float* B, float* C, int n) {
    __shared__ float As[TILE][TILE], Bs[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int t = 0; t < n; t += TILE) {
        As[threadIdx.y][threadIdx.x] = A[row * n + t + threadIdx.x];
        Bs[threadIdx.y][threadIdx.x] = B[(t + threadIdx.y) * n + col];
        __syncthreads();
        for (int k = 0; k < TILE; k++) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    C[row * n + col] = acc;
}
extern "C" __global__ void poly(float* y, int iters) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i * 1e-4f, acc = 0.0f;
    for (int k = 0; k < iters; k++) acc = acc * 0.999f + v * k;
    y[i] = acc;
}
extern "C" __global__ void bump(float* x) { x[threadIdx.x] += 1.0f; }
'''


def transferred(client) -> int:
    """Bytes the workers fetched from each other for the launches: not the second copy of a
    host upload, which the scheduler's memory manager makes on its next round (every 2 s),
    whenever that falls (it landed in a timed run now and then: a whole array, 67 MB)."""
    def total(dask_worker):
        return sum(nbytes or 0 for t in dask_worker.transfer_incoming_log
                   for key, nbytes in t.get("keys", {}).items()
                   if not str(key).startswith("dptx-host-"))
    return sum(client.run(total).values())


class Workload:
    """A named sequence of launches over some arrays, runnable in-process and on the cluster."""

    def __init__(self, name, kernel, make, steps, halo_bytes=0):
        self.name, self.kernel, self.make, self.steps = name, kernel, make, steps
        self.halo_bytes = halo_bytes     # bytes per launch per cut between workers

    def in_process_once(self, k):
        """One timed run with ``dptx.cpu.launch`` on 2 threads: (seconds, arrays after)."""
        arrays, schedule = self.make()
        t0 = time.perf_counter()
        for grid, block, args in schedule(arrays):
            cpu.launch(k, grid, block, args, threads=2)
        return time.perf_counter() - t0, arrays

    def on_cluster_once(self, k, client):
        """One timed run on the cluster, data uploaded before: (seconds, arrays after, bytes
        the workers fetched from each other, launches)."""
        host, schedule = self.make()
        arrays = [dptx.asarray(a) for a in host]
        dptx.synchronize()
        before = transferred(client)
        t0 = time.perf_counter()
        launches = schedule(arrays)
        for grid, block, args in launches:
            k(grid, block, args)
        dptx.synchronize()
        elapsed = time.perf_counter() - t0
        return elapsed, [a.get() for a in arrays], transferred(client) - before, len(launches)

    def compare(self, mod, client, runs):
        """In-process and cluster runs taken in turn (the machine's speed drifts; timing all of
        one and then all of the other would compare two different machines); best of each."""
        k = mod.get_function(self.kernel)
        self.in_process_once(k)                       # JIT in this process
        self.on_cluster_once(k, client)               # JIT on the workers, speeds learnt
        local = remote = None
        for _ in range(runs):
            t, host = self.in_process_once(k)
            if local is None or t < local[0]:
                local = (t, host)
            r = self.on_cluster_once(k, client)
            if remote is None or r[0] < remote[0]:
                remote = r
        return local, remote


def workloads(quick):
    n1 = (1 << 20) if quick else (16 << 20)
    side = 512 if quick else 2048
    nm = 256 if quick else 512

    def jacobi():
        a = np.random.default_rng(1).random(n1).astype(np.float32)
        arrays = [a, np.zeros_like(a)]

        def schedule(arr):
            out = []
            for step in range(30):
                src, dst = (arr[0], arr[1]) if step % 2 == 0 else (arr[1], arr[0])
                out.append(((n1 // 256,), (256,), [src, dst, np.int32(n1)]))
            return out
        return arrays, schedule

    def stencil():
        a = np.random.default_rng(2).random(side * side).astype(np.float32)
        arrays = [a, np.zeros_like(a)]

        def schedule(arr):
            out = []
            for step in range(20):
                src, dst = (arr[0], arr[1]) if step % 2 == 0 else (arr[1], arr[0])
                out.append(((side // 16, side // 16), (16, 16),
                            [src, dst, np.int32(side), np.int32(side)]))
            return out
        return arrays, schedule

    def vecadd():
        rng = np.random.default_rng(3)
        arrays = [rng.random(n1).astype(np.float32), rng.random(n1).astype(np.float32),
                  np.zeros(n1, np.float32)]
        return arrays, lambda arr: [((n1 // 256,), (256,), [arr[0], arr[1], arr[2], np.int32(n1)])] * 5

    def matmul():
        rng = np.random.default_rng(4)
        arrays = [rng.random(nm * nm).astype(np.float32), rng.random(nm * nm).astype(np.float32),
                  np.zeros(nm * nm, np.float32)]
        return arrays, lambda arr: [((nm // 16, nm // 16), (16, 16),
                                     [arr[0], arr[1], arr[2], np.int32(nm)])] * 3

    def compute():
        arrays = [np.zeros(512 * 256, np.float32)]
        iters = 2000 if quick else 20000
        return arrays, lambda arr: [((512,), (256,), [arr[0], np.int32(iters)])] * 2

    return [
        Workload(f"1-D Jacobi {n1 >> 20}M x 30", "jacobi1d", jacobi, 30, halo_bytes=2 * 4),
        Workload(f"2-D stencil {side}x{side} x 20", "stencil2d", stencil, 20, halo_bytes=2 * 4 * side),
        Workload(f"vecadd {n1 >> 20}M x 5", "vecadd", vecadd, 5),
        Workload(f"tiled matmul {nm} x 3", "matmul", matmul, 3),
        Workload("compute-bound poly x 2", "poly", compute, 2),
    ]


def queued_launches(mod, count):
    k = mod.get_function("bump")
    x = dptx.zeros(32, np.float32)
    k((1,), (32,), (x,))
    x.get()
    t0 = time.perf_counter()
    for _ in range(count):
        k((1,), (32,), (x,))
    got = x.get()
    elapsed = time.perf_counter() - t0
    assert np.all(got == count + 1), got[:4]
    return count / elapsed


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    parser.add_argument("--runs", type=int, default=3, help="best of this many runs")
    args = parser.parse_args()
    mod = dptx.RawModule(SOURCE)
    loads = workloads(args.quick)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                      silence_logs=logging.ERROR, preload=["dptx.worker"],
                      scheduler_kwargs={"preload": ["scheduler_plugins"]}) as cluster, \
            Client(cluster, set_as_default=False) as client:
        dptx.connect(client)
        try:
            results = {w.name: w.compare(mod, client, args.runs) for w in loads}
            rate = queued_launches(mod, 500 if args.quick else 2000)
        finally:
            dptx.shutdown()

    print(f"cluster: 2 workers x 1 thread; in-process: dptx.cpu.launch on 2 threads; "
          f"best of {args.runs} (seconds)")
    print(f"{'workload':<30}{'cluster':>10}{'in-process':>12}{'ratio':>8}  {'same':<6}"
          f"{'moved between workers':>24}{'array x launches':>18}{'halos need':>12}")
    for w in loads:
        (t_local, host), (t_remote, got, moved, launches) = results[w.name]
        same = all(np.array_equal(a, b) for a, b in zip(host, got))
        volume = sum(a.nbytes for a in host[:1]) * launches
        halos = w.halo_bytes * launches      # one cut between the two workers
        print(f"{w.name:<30}{t_remote:>10.3f}{t_local:>12.3f}{t_remote / t_local:>7.2f}x  "
              f"{str(same):<6}{moved:>24,}{volume:>18,}{halos:>12,}")
    print(f"queued one-block launches: {rate:,.0f} per second")


if __name__ == "__main__":
    main()
