"""How fast the PTX front-end parses a large module.

Builds a PTX module of well over 5,000 lines through NVRTC (unrolled math and shared-memory
kernels, the kind of code compilers emit), then times parse, print and CFG construction.
Target: a 5,000-line PTX parses in under 0.5 s. Prints figures; asserts nothing.

    python benchmarks/parse_speed.py
"""
import statistics
import time

from dptx.runtime.nvrtc import compile_to_ptx
from dptx.ptx import parse, print_module
from dptx.ptx.cfg import build_cfg

KERNEL = r'''
extern "C" __global__ void k%(i)d(const float* __restrict__ x, float* __restrict__ y, int n) {
    __shared__ float tile[256];
    int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    float v = i < n ? x[i] : 0.0f;
    #pragma unroll
    for (int j = 0; j < %(unroll)d; j++) v = fmaf(v, 1.0001f + j, sinf(v) * 0.5f);
    tile[t] = v;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) { if (t < s) tile[t] += tile[t + s]; __syncthreads(); }
    if (t == 0) atomicAdd(y, tile[0]);
}
'''


def build_source(kernels=4, unroll=10):
    return "\n".join(KERNEL % {"i": i, "unroll": unroll} for i in range(kernels))


def best_of(fn, repeat=7):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times), statistics.median(times)


def main():
    ptx = compile_to_ptx(build_source())
    lines = ptx.count("\n")
    module = parse(ptx)
    text = print_module(module)
    assert parse(text) == module
    kernels = module.kernels
    parse_best, parse_median = best_of(lambda: parse(ptx))
    print_best, _ = best_of(lambda: print_module(module))
    cfg_best, _ = best_of(lambda: [build_cfg(f) for f in kernels])
    n_inst = sum(len(f.instructions) for f in kernels)
    print(f"PTX module: {lines} lines, {len(kernels)} kernels, {n_inst} instructions")
    print(f"{'step':<12}{'best (s)':>10}{'lines/s':>14}{'target':>10}")
    print(f"{'parse':<12}{parse_best:>10.4f}{lines / parse_best:>14,.0f}{'< 0.5 s':>10}"
          f"   (median {parse_median:.4f} s)")
    print(f"{'print':<12}{print_best:>10.4f}{lines / print_best:>14,.0f}")
    print(f"{'cfg (all)':<12}{cfg_best:>10.4f}{lines / cfg_best:>14,.0f}")
    per_5000 = parse_best * 5000 / lines
    print(f"parse time scaled to 5,000 lines: {per_5000:.4f} s "
          f"({'meets' if per_5000 < 0.5 else 'MISSES'} the 0.5 s target)")


if __name__ == "__main__":
    main()
