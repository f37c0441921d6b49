"""Vector addition on the dptx virtual GPU (the embedded local cluster unless
DASK_DPTX__SCHEDULER_ADDRESS names a scheduler), checked against numpy."""
import sys
import time

import numpy as np

import dptx

SOURCE = r'''
extern "C" __global__ void vecadd(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
'''


def main(n=1_000_000):
    rng = np.random.default_rng(0)
    a_host = rng.standard_normal(n, dtype=np.float32)
    b_host = rng.standard_normal(n, dtype=np.float32)
    vecadd = dptx.RawModule(SOURCE).get_function("vecadd")

    t0 = time.perf_counter()
    a, b = dptx.asarray(a_host), dptx.asarray(b_host)
    c = dptx.empty_like(a)
    block = 256
    vecadd(((n + block - 1) // block,), (block,), (a, b, c, np.int32(n)))
    result = c.get()
    elapsed = time.perf_counter() - t0

    expected = a_host + b_host
    ok = np.array_equal(result, expected)
    print(f"vecadd: n={n:,} in {elapsed:.3f} s (first run includes cluster start and JIT); "
          f"matches numpy bitwise: {ok}")
    return ok


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
