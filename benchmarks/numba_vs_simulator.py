"""numba-cuda programs without a GPU: numba's own CUDA simulator (NUMBA_ENABLE_CUDASIM=1, pure
Python per thread: what numba-cuda users run their CI on) against the same code on dptx
(``from dptx import numba_cuda as cuda``: numba-cuda's compiler, then dptx's embedded cluster).
The same kernels and sizes, one run each side by side; results checked equal to numpy.

    python benchmarks/numba_vs_simulator.py [--n 65536] [--repeat 3]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

PROGRAM = r'''
import json, sys, time
import numpy as np
{cuda_import}
from numba import float32

@cuda.jit
def saxpy(a, x, y, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = a * x[i] + y[i]

@cuda.jit
def block_sums(x, out):
    tile = cuda.shared.array(128, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    tile[t] = x[i] if i < x.shape[0] else 0
    cuda.syncthreads()
    s = 64
    while s > 0:
        if t < s:
            tile[t] += tile[t + s]
        cuda.syncthreads()
        s //= 2
    if t == 0:
        cuda.atomic.add(out, 0, tile[0])

@cuda.jit
def transpose(a, b):
    r, c = cuda.grid(2)
    if r < a.shape[0] and c < a.shape[1]:
        b[c, r] = a[r, c]

n, repeat = {n}, {repeat}
rng = np.random.default_rng(0)
x = rng.integers(-100, 100, n).astype(np.float32)
y = rng.integers(-100, 100, n).astype(np.float32)
side = int(n ** 0.5)
m = rng.integers(0, 1000, (side, side)).astype(np.int32)
blocks = (n + 127) // 128

def best(run):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter(); result = run(); times.append(time.perf_counter() - t0)
    return min(times), result

def run_saxpy():
    out = cuda.device_array(n, np.float32)
    saxpy[blocks, 128](np.float32(2), cuda.to_device(x), cuda.to_device(y), out)
    return out.copy_to_host()

def run_sums():
    total = cuda.to_device(np.zeros(1, np.float32))
    block_sums[blocks, 128](cuda.to_device(x), total)
    return total.copy_to_host()

def run_transpose():
    out = cuda.device_array((side, side), np.int32)
    transpose[((side + 15) // 16, (side + 15) // 16), (16, 16)](cuda.to_device(m), out)
    return out.copy_to_host()

for run in (run_saxpy, run_sums, run_transpose):       # compile and warm up first
    run()
results = {{}}
for name, run, want in (("saxpy", run_saxpy, 2 * x + y), ("block sums", run_sums, [x.sum()]),
                        ("transpose", run_transpose, m.T)):
    seconds, got = best(run)
    results[name] = [seconds, bool(np.array_equal(got, want))]
print(json.dumps(results))
'''


def run(cuda_import: str, n: int, repeat: int, simulator: bool) -> dict:
    env = dict(os.environ)
    if simulator:
        env["NUMBA_ENABLE_CUDASIM"] = "1"
    code = PROGRAM.format(cuda_import=cuda_import, n=n, repeat=repeat)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=3600)
    if done.returncode:
        raise SystemExit(done.stderr)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=65536, help="elements (saxpy, sums; the "
                        "transpose is its square root squared)")
    parser.add_argument("--repeat", type=int, default=3, help="runs each, the best counts")
    opts = parser.parse_args()
    simulator = run("from numba import cuda", opts.n, 1, simulator=True)
    dptx = run("from dptx import numba_cuda as cuda", opts.n, opts.repeat, simulator=False)
    print(f"numba-cuda kernels, n = {opts.n}: numba's CUDA simulator against dptx "
          f"(embedded cluster), wall time of upload + launch + read back")
    print(f"{'kernel':12} {'simulator':>12} {'dptx':>10} {'speed-up':>9}  results equal numpy")
    for name in simulator:
        s, s_ok = simulator[name]
        d, d_ok = dptx[name]
        print(f"{name:12} {s:11.3f}s {d * 1e3:8.1f}ms {s / d:8.0f}x  simulator {s_ok}, dptx {d_ok}")


if __name__ == "__main__":
    main()
