// Half precision through cuda_fp16.h.
#include <cuda_fp16.h>

// conversions: float -> half (round to nearest even), half -> float, int -> half
extern "C" __global__ void half_convert(const float* f, const __half* h, __half* oh, float* of, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    oh[2 * i + 0] = __float2half(f[i]);
    oh[2 * i + 1] = __int2half_rn(i - 100);
    of[i] = __half2float(h[i]);
}

// scalar half arithmetic: add, sub, mul, div, fma, compare, neg
extern "C" __global__ void half_arith(const __half* a, const __half* b, __half* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    __half x = a[i], y = b[i];
    out[7 * i + 0] = __hadd(x, y);
    out[7 * i + 1] = __hsub(x, y);
    out[7 * i + 2] = __hmul(x, y);
    out[7 * i + 3] = __hdiv(x, y);
    out[7 * i + 4] = __hfma(x, y, x);
    out[7 * i + 5] = __hlt(x, y) ? x : y;
    out[7 * i + 6] = __hneg(x);
}

// operators on __half and __half2 vectors
extern "C" __global__ void half2_ops(const __half2* a, const __half2* b, __half2* out, __half* dot, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    __half2 x = a[i], y = b[i];
    out[3 * i + 0] = __hadd2(x, y);
    out[3 * i + 1] = __hmul2(x, y);
    out[3 * i + 2] = __halves2half2(__high2half(x), __low2half(y));
    __half2 p = __hmul2(x, y);
    dot[i] = __hadd(__low2half(p), __high2half(p));
}

// mixed: half inputs, float accumulation, half output
extern "C" __global__ void half_mixed_accum(const __half* a, __half* out, float* fout, int rows, int cols)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float acc = 0.0f;
    for (int c = 0; c < cols; ++c) acc += __half2float(a[r * cols + c]);
    fout[r] = acc;
    out[r] = __float2half_rn(acc);
}
