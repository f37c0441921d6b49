"""A race dptx sanitize finds: a shared accumulator reset at each row while the block's other
threads may still be reading the last row's (the shape of the race in llm.c's attention
backward kernel). Without a tool it runs and gives a wrong answer now and then, on a GPU as
here; under ``dptx sanitize --tool racecheck`` both lines are named:

    dptx sanitize --tool racecheck -- python examples/race_attention.py
"""
import numpy as np

import dptx

SOURCE = r'''
extern "C" __global__ void attention_backward_sum(const float* dy, float* dx, int n) {
    __shared__ float acc;                       // one accumulator for the block
    int t = threadIdx.x;
    for (int row = 0; row < n; row++) {
        if (t == 0) acc = 0.0f;                 // rewritten at each row...
        __syncthreads();
        atomicAdd(&acc, dy[row * blockDim.x + t]);
        __syncthreads();
        dx[row * blockDim.x + t] = dy[row * blockDim.x + t] - acc / blockDim.x;
    }                                           // ...while others may still read it
}
'''
kernel = dptx.RawModule(SOURCE, options=("-lineinfo",), name="attention.cu") \
    .get_function("attention_backward_sum")
dy = dptx.asarray(np.random.default_rng(0).standard_normal(8 * 64).astype(np.float32))
dx = dptx.zeros(8 * 64, np.float32)
kernel((1,), (64,), (dy, dx, np.int32(8)))
print(f"sum of |dx|: {float(abs(dx.get()).sum()):.3f}")
