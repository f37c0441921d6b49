// printf from device code (vprintf); the kernels also write results that can be checked.

extern "C" __global__ void printf_basic(const int* in, int* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    out[i] = in[i] * 2;
    if (threadIdx.x == 0)
        printf("block %d of %d: first value %d doubled %d\n", blockIdx.x, gridDim.x, in[i], out[i]);
}

extern "C" __global__ void printf_formats(const float* f, const double* d, float* out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = f[i] + 1.0f;
    if (i == 0)
        printf("f=%f d=%.3f e=%e u=%u x=%x ll=%lld c=%c s=%s\n", f[0], d[0], d[1],
               4000000000u, 0xbeef, -1234567890123ll, 'Z', "text");
    if (i == 1) printf("no arguments at all\n");
}
