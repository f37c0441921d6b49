"""What ``dptx sanitize --tool racecheck`` costs: kernels with shared memory run in process
(``dptx.cpu.launch``) with and without the tool, warm (each build compiled at O3 and run
once before timing), side by side; results checked equal. memcheck's cost is none (its checks
are every launch's). ``DPTX_CPU_VECTOR=0`` compares with the per-thread build, which the
checked build is.

    python benchmarks/sanitize_overhead.py [--repeat 5] [--threads N]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import dptx
from dptx import cpu
from dptx.cpu.executor import compile_kernel

SOURCE = r'''
extern "C" __global__ void block_sum(const float* x, float* out) {
    __shared__ float tile[256];
    int t = threadIdx.x;
    tile[t] = x[blockIdx.x * 256 + t];
    __syncthreads();
    for (int s = 128; s > 0; s >>= 1) {
        if (t < s) tile[t] += tile[t + s];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = tile[0];
}
extern "C" __global__ void tiled_matmul(const float* a, const float* b, float* c, int n) {
    __shared__ float as[16][16], bs[16][16];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * 16 + ty, col = blockIdx.x * 16 + tx;
    float acc = 0.0f;
    for (int k = 0; k < n; k += 16) {
        as[ty][tx] = a[row * n + k + tx];
        bs[ty][tx] = b[(k + ty) * n + col];
        __syncthreads();
        for (int j = 0; j < 16; j++) acc += as[ty][j] * bs[j][tx];
        __syncthreads();
    }
    c[row * n + col] = acc;
}
extern "C" __global__ void stencil_1d(const float* x, float* y, int n) {
    __shared__ float s[258];
    int g = blockIdx.x * 256 + threadIdx.x, t = threadIdx.x + 1;
    s[t] = x[g];
    if (threadIdx.x == 0) s[0] = g > 0 ? x[g - 1] : 0.0f;
    if (threadIdx.x == 255) s[257] = g + 1 < n ? x[g + 1] : 0.0f;
    __syncthreads();
    y[g] = s[t - 1] + s[t] + s[t + 1];
}
'''


def cases():
    rng = np.random.default_rng(0)
    n = 256
    x = rng.standard_normal(4096 * 256).astype(np.float32)
    a, b = (rng.standard_normal((n, n)).astype(np.float32) for _ in range(2))
    return [
        ("block_sum 1M", "block_sum", (4096,), (256,),
         lambda: (x, np.zeros(4096, np.float32))),
        (f"tiled_matmul {n}", "tiled_matmul", (n // 16, n // 16), (16, 16),
         lambda: (a, b, np.zeros((n, n), np.float32), np.int32(n))),
        ("stencil_1d 1M", "stencil_1d", (4096,), (256,),
         lambda: (x, np.zeros_like(x), np.int32(x.size))),
    ]


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None)
    opts = parser.parse_args(argv)
    module = dptx.RawModule(SOURCE)
    print(f"{'kernel':<18}{'plain ms':>10}{'1 thread':>10}{'racecheck ms':>14}"
          f"{'slowdown':>10}{'per core':>10}")
    for title, name, grid, block, make in cases():
        kernel = module.get_function(name)
        plain_args, checked_args = make(), make()
        run = lambda args, tool, threads=opts.threads: cpu.launch(
            kernel, grid, block, args, threads=threads, sanitize=tool)
        run(plain_args, None)
        run(checked_args, "racecheck")
        for checked in (False, True):   # the optimized builds, not the quick stand-ins
            compile_kernel(kernel, racecheck=checked).upgrade(wait=True)
        for p, c in zip(plain_args, checked_args):
            if isinstance(p, np.ndarray):
                assert np.array_equal(p, c), f"{name}: racecheck changed the results"
        plain = best(lambda: run(plain_args, None), opts.repeat)
        # racecheck runs a launch's blocks one after another on one thread (to compare each
        # block with those before it): "per core" compares it with the usual build on one
        one = best(lambda: run(plain_args, None, 1), opts.repeat)
        checked = best(lambda: run(checked_args, "racecheck"), opts.repeat)
        print(f"{title:<18}{plain * 1e3:>10.2f}{one * 1e3:>10.2f}{checked * 1e3:>14.2f}"
              f"{checked / plain:>9.1f}x{checked / one:>9.1f}x", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
