"""Adaptive balancing on an unequal pair of workers, for kernels whose cost is uniform, and
that varies along the grid (Mandelbrot rows, a triangular loop), side by side from one run.

Two single-thread workers pinned to separate cores; a bounded busy process competes on the
second core, so that worker runs at about half speed. Per kernel, printed: each worker alone
on the whole grid (the kernel run in the worker's process, one thread, no Dask), the ideal
makespan of the pair (1 / (1/fast + 1/slow)), the dptx split after LEARN launches (best of 3),
an even split (``dptx.split = "even"``, best of 3), and the fast worker's share of the blocks
beside its ideal share (where the cost measured along the grid splits at the speed ratio).

    python benchmarks/balance.py [--quick] [--scheduler tcp://127.0.0.1:8786]
"""

import argparse
import contextlib
import logging
import os
import time

import dask.config
import numpy as np
from distributed import Client, LocalCluster

import dptx
from dptx.pinning import pin_process_to, start_busy_process

SOURCE = r'''
extern "C" __global__ void poly(float* y, int iters) {
    // the same work for every block
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i * 1e-4f, acc = 0.0f;
    for (int k = 0; k < iters; k++) acc = acc * 0.999f + v * k;
    y[i] = acc;
}
extern "C" __global__ void mandelbrot(float* out, int width, int height, int max_iter) {
    // rows of blocks cross the set's body or miss it: the cost varies along the grid
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= width || y >= height) return;
    float cr = -2.2f + 3.0f * x / width, ci = -1.2f + 2.4f * y / height;
    float zr = 0.0f, zi = 0.0f;
    int k = 0;
    for (; k < max_iter && zr * zr + zi * zi < 4.0f; k++) {
        float t = zr * zr - zi * zi + cr;
        zi = 2.0f * zr * zi + ci;
        zr = t;
    }
    out[y * width + x] = k;
}
extern "C" __global__ void triangle(float* y, int scale) {
    // block b loops b * scale times: the work grows along the grid
    float v = threadIdx.x * 1e-3f;
    int steps = blockIdx.x * scale;
    for (int k = 0; k < steps; k++) v = v * 0.9999f + 1e-4f;
    y[blockIdx.x * blockDim.x + threadIdx.x] = v;
}
'''
LEARN = 5


def cases(quick: bool) -> list:
    """(name, kernel name, grid, block, argument maker, elements of the output)."""
    scale = 2 if quick else 1
    w, h = 2048 // scale, 1024 // scale
    n_poly, n_tri = 1024 // scale, 512 // scale
    return [
        ("uniform polynomial", "poly", (n_poly,), (256,),
         lambda out: (out, np.int32(40000)), n_poly * 256),
        (f"Mandelbrot {w}x{h}", "mandelbrot", (w // 16, h // 16), (16, 16),
         lambda out: (out, np.int32(w), np.int32(h), np.int32(3000)), w * h),
        ("triangular", "triangle", (n_tri,), (64,),
         lambda out: (out, np.int32(1500)), n_tri * 64),
    ]


def alone(kernel_name: str, grid, block, nelem: int, args_tail: tuple) -> float:
    """Seconds for the whole grid in this (worker) process, one thread (best of 2)."""
    from dptx import cpu
    k = dptx.RawModule(SOURCE).get_function(kernel_name)
    out = np.zeros(nelem, np.float32)
    cpu.launch(k, grid, block, [out, *args_tail], threads=1)       # JIT
    best = float("inf")
    for _ in range(2):
        t0 = time.perf_counter()
        cpu.launch(k, grid, block, [out, *args_tail], threads=1)
        best = min(best, time.perf_counter() - t0)
    return best


def cost_along(kernel_name: str, grid, block, nelem: int, args_tail: tuple,
               pieces: int = 32) -> list:
    """Seconds of each of ``pieces`` equal ranges of the linear block index, in this (worker)
    process, one thread (best of 2): where the work lies along the grid, measured directly."""
    from dptx import cpu
    k = dptx.RawModule(SOURCE).get_function(kernel_name)
    out = np.zeros(nelem, np.float32)
    nblocks = int(np.prod(grid))
    cuts = np.linspace(0, nblocks, pieces + 1).round().astype(int)
    cpu.launch(k, grid, block, [out, *args_tail], threads=1)       # JIT, form chosen
    seconds = []
    for a, b in zip(cuts, cuts[1:]):
        best = float("inf")
        for _ in range(2):
            t0 = time.perf_counter()
            cpu.launch(k, grid, block, [out, *args_tail], blocks=range(a, b), threads=1)
            best = min(best, time.perf_counter() - t0)
        seconds.append((int(a), int(b), best))
    return seconds


def ideal_share(pieces: list, t_fast: float, t_slow: float) -> float:
    """The fast worker's share of the blocks (its range first, as dptx orders them when the
    data gives no order) at which both finish together: where the measured cost reaches the
    fast worker's part of the pair's speed, t_slow / (t_fast + t_slow)."""
    want = t_slow / (t_fast + t_slow)
    cost = np.array([s for _, _, s in pieces])
    edges = np.array([pieces[0][0]] + [b for _, b, _ in pieces], float)
    cumulative = np.concatenate([[0.0], np.cumsum(cost)]) / cost.sum()
    return float(np.interp(want, cumulative, edges) / edges[-1])


def timed(kernel, grid, block, args, out, repeat=3) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        kernel(grid, block, args)
        out.get()
        best = min(best, time.perf_counter() - t0)
    return best


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller grids")
    parser.add_argument("--scheduler", metavar="ADDRESS",
                        help="a deployed cluster on this machine (dask scheduler --preload "
                             "scheduler_plugins, two single-thread dask workers --preload "
                             "dptx.worker) instead of a LocalCluster")
    opts = parser.parse_args()
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        raise SystemExit("needs two cores")
    rows = []
    with contextlib.ExitStack() as stack:
        if opts.scheduler:
            client = stack.enter_context(Client(opts.scheduler, set_as_default=False))
        else:
            cluster = stack.enter_context(LocalCluster(
                n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                silence_logs=logging.ERROR, preload=["dptx.worker"],
                scheduler_kwargs={"preload": ["scheduler_plugins"]}))
            client = stack.enter_context(Client(cluster, set_as_default=False))
        client.wait_for_workers(2)
        if len(client.nthreads()) != 2 or set(client.nthreads().values()) != {1}:
            raise SystemExit(f"needs two single-thread workers, found {client.nthreads()}")
        dptx.connect(client)
        busy = None
        try:
            fast, slow = sorted(client.nthreads())
            client.run(pin_process_to, cores[0], workers=[fast])
            client.run(pin_process_to, cores[1], workers=[slow])
            busy = start_busy_process(cores[1], 900)
            module = dptx.RawModule(SOURCE)
            for name, kname, grid, block, make, nelem in cases(opts.quick):
                out = dptx.zeros(nelem, np.float32)
                args = make(out)
                tail = tuple(args[1:])
                t_fast = client.submit(alone, kname, grid, block, nelem, tail, workers=[fast],
                                       pure=False).result()
                t_slow = client.submit(alone, kname, grid, block, nelem, tail, workers=[slow],
                                       pure=False).result()
                pieces = client.submit(cost_along, kname, grid, block, nelem, tail,
                                       workers=[fast], pure=False).result()
                kernel = module.get_function(kname)
                for _ in range(LEARN):
                    kernel(grid, block, args)
                    out.get()
                adaptive = timed(kernel, grid, block, args, out)
                state = client.run_on_scheduler(
                    lambda dask_scheduler: dask_scheduler.plugins["dptx"].state())
                shares = {a: w["kernels"].get(kernel.model_key, {}).get("share", 0.0)
                          for a, w in state["workers"].items()}
                with dask.config.set({"dptx.split": "even"}):
                    even = timed(kernel, grid, block, args, out)
                rows.append((name, t_fast, t_slow, 1 / (1 / t_fast + 1 / t_slow), adaptive,
                             even, shares.get(fast, 0.0), ideal_share(pieces, t_fast, t_slow)))
        finally:
            if busy is not None:
                busy.kill()
                busy.wait()
            dptx.shutdown()
    print("two single-thread workers on separate cores; the second shares its core with a "
          "busy process")
    print(f"{'kernel':<24}{'fast alone':>11}{'slow alone':>11}{'ideal':>8}{'adaptive':>10}"
          f"{'even':>8}{'adapt/ideal':>12}{'even/ideal':>11}{'fast share':>11}{'ideal':>7}")
    for name, tf, ts, ideal, adaptive, even, share, best_share in rows:
        print(f"{name:<24}{tf:>11.3f}{ts:>11.3f}{ideal:>8.3f}{adaptive:>10.3f}{even:>8.3f}"
              f"{adaptive / ideal:>12.2f}{even / ideal:>11.2f}{share:>11.2f}{best_share:>7.2f}")
    print("(fast share: of the blocks, in the last adaptive launch, beside the ideal one: where "
          "the cost measured along the grid on the fast worker (32 ranges) splits at the "
          "workers' speed ratio; times in seconds; adaptive and even: best of 3, after", LEARN,
          "learning launches)")


if __name__ == "__main__":
    main()
