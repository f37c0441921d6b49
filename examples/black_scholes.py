"""Black-Scholes European option pricing, checked against a numpy float64 reference."""
import math
import sys

import numpy as np

import dptx

SOURCE = r'''
__device__ inline float cnd(float d) {
    return 0.5f * erfcf(-d * 0.70710678118654752f);
}
extern "C" __global__ void black_scholes(const float* S, const float* X, const float* T,
                                         float* call, float* put, float r, float v, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        float s = S[i], x = X[i], t = T[i];
        float sqrt_t = sqrtf(t);
        float d1 = (logf(s / x) + (r + 0.5f * v * v) * t) / (v * sqrt_t);
        float d2 = d1 - v * sqrt_t;
        float e = expf(-r * t);
        call[i] = s * cnd(d1) - x * e * cnd(d2);
        put[i] = x * e * cnd(-d2) - s * cnd(-d1);
    }
}
'''


def norm_cdf(x):
    """The standard normal CDF in float64 (math.erf, element by element)."""
    return 0.5 * (1.0 + np.vectorize(math.erf)(x / np.sqrt(2.0)))


def main(n=200_000):
    rng = np.random.default_rng(2)
    S = rng.uniform(5.0, 30.0, n).astype(np.float32)
    X = rng.uniform(1.0, 100.0, n).astype(np.float32)
    T = rng.uniform(0.25, 10.0, n).astype(np.float32)
    r, v = 0.02, 0.30
    kernel = dptx.RawModule(SOURCE).get_function("black_scholes")
    dS, dX, dT = dptx.asarray(S), dptx.asarray(X), dptx.asarray(T)
    call, put = dptx.zeros(n, np.float32), dptx.zeros(n, np.float32)
    kernel((256,), (128,), (dS, dX, dT, call, put, np.float32(r), np.float32(v), np.int32(n)))

    s, x, t = (a.astype(np.float64) for a in (S, X, T))
    d1 = (np.log(s / x) + (r + 0.5 * v * v) * t) / (v * np.sqrt(t))
    d2 = d1 - v * np.sqrt(t)
    e = np.exp(-r * t)
    ref_call = s * norm_cdf(d1) - x * e * norm_cdf(d2)
    ref_put = x * e * norm_cdf(-d2) - s * norm_cdf(-d1)
    err = max(float(np.max(np.abs(call.get() - ref_call))), float(np.max(np.abs(put.get() - ref_put))))
    ok = err < 1e-3
    print(f"black-scholes: {n:,} options, max abs error vs numpy float64 {err:.2e} -> {'OK' if ok else 'FAIL'}")
    return ok


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
