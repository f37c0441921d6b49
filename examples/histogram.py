"""A 256-bin histogram with global atomics: each chunk of blocks counts on its own pages and
the merge adds the counts (reduction atomics), checked against numpy.bincount."""
import sys

import numpy as np

import dptx

SOURCE = r'''
extern "C" __global__ void histogram(const unsigned char* data, unsigned int* bins, int n) {
    __shared__ unsigned int local[256];
    for (int b = threadIdx.x; b < 256; b += blockDim.x) local[b] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        atomicAdd(&local[data[i]], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < 256; b += blockDim.x)
        if (local[b]) atomicAdd(&bins[b], local[b]);
}
'''


def main(n=2_000_000):
    rng = np.random.default_rng(3)
    data = rng.binomial(255, 0.3, n).astype(np.uint8)
    kernel = dptx.RawModule(SOURCE).get_function("histogram")
    d_data = dptx.asarray(data)
    bins = dptx.zeros(256, np.uint32)
    kernel((64,), (256,), (d_data, bins, np.int32(n)))
    result = bins.get()
    expected = np.bincount(data, minlength=256).astype(np.uint32)
    ok = np.array_equal(result, expected)
    print(f"histogram: {n:,} bytes into 256 bins, total {int(result.sum()):,}; "
          f"matches numpy.bincount: {ok}")
    return ok


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
