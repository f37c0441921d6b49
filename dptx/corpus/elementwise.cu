// Elementwise kernels: float/double/int32/uint32/int64 arithmetic, conversions, bounds checks,
// grid-stride loops, early exit and divergent branches.

extern "C" __global__ void vecadd_f32(const float* a, const float* b, float* c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

extern "C" __global__ void vecadd_f64(const double* a, const double* b, double* c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

// y = a*x + y (the multiply-add may be contracted to an fma: compared with a tolerance)
extern "C" __global__ void saxpy(int n, float a, const float* x, float* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

// the same compiled with -fmad=false: bitwise equal to numpy float32
extern "C" __global__ void saxpy_nofma(int n, float a, const float* x, float* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

extern "C" __global__ void daxpy(int n, double a, const double* x, double* y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

// float ops that are exact in IEEE: sub, mul, div (prec-div), sqrt (prec-sqrt), abs, neg
extern "C" __global__ void float_ops_f32(const float* a, const float* b, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = a[i], y = b[i];
    out[8 * i + 0] = x - y;
    out[8 * i + 1] = x * y;
    out[8 * i + 2] = x / y;
    out[8 * i + 3] = sqrtf(fabsf(x));
    out[8 * i + 4] = -x;
    out[8 * i + 5] = fminf(x, y);
    out[8 * i + 6] = fmaxf(x, y);
    out[8 * i + 7] = (x < y) ? 1.0f : ((x == y) ? 0.5f : 0.0f);
}

extern "C" __global__ void double_ops_f64(const double* a, const double* b, double* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double x = a[i], y = b[i];
    out[6 * i + 0] = x - y;
    out[6 * i + 1] = x * y;
    out[6 * i + 2] = x / y;
    out[6 * i + 3] = sqrt(fabs(x));
    out[6 * i + 4] = fmin(x, y);
    out[6 * i + 5] = fmax(x, y);
}

// signed 32-bit: division and modulo of negatives (truncate toward zero), shifts, compare
extern "C" __global__ void int_ops_i32(const int* a, const int* b, int* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int x = a[i], y = b[i];
    out[10 * i + 0] = x + y;
    out[10 * i + 1] = x - y;
    out[10 * i + 2] = x * y;
    out[10 * i + 3] = x / y;
    out[10 * i + 4] = x % y;
    out[10 * i + 5] = x >> (y & 31);            // arithmetic shift
    out[10 * i + 6] = (int)((unsigned)x << (y & 31));
    out[10 * i + 7] = min(x, y);
    out[10 * i + 8] = max(x, y);
    out[10 * i + 9] = abs(x) + (x < y) + 2 * (x == y);
}

// unsigned 32-bit with wraparound
extern "C" __global__ void uint_ops_u32(const unsigned* a, const unsigned* b, unsigned* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned x = a[i], y = b[i];
    out[9 * i + 0] = x + y;                       // wraps
    out[9 * i + 1] = x - y;                       // wraps
    out[9 * i + 2] = x * y;                       // wraps
    out[9 * i + 3] = x / (y | 1u);
    out[9 * i + 4] = x % (y | 1u);
    out[9 * i + 5] = x >> (y & 31);               // logical shift
    out[9 * i + 6] = min(x, y);
    out[9 * i + 7] = max(x, y);
    out[9 * i + 8] = __umulhi(x, y);
}

// signed/unsigned 64-bit
extern "C" __global__ void int64_ops(const long long* a, const long long* b, long long* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    long long x = a[i], y = b[i];
    unsigned long long ux = (unsigned long long)x, uy = (unsigned long long)y;
    out[10 * i + 0] = (long long)(ux + uy);
    out[10 * i + 1] = (long long)(ux * uy);
    out[10 * i + 2] = x / y;
    out[10 * i + 3] = x % y;
    out[10 * i + 4] = x >> (y & 63);
    out[10 * i + 5] = (long long)(ux >> (uy & 63));
    out[10 * i + 6] = (long long)(ux << (uy & 63));
    out[10 * i + 7] = min(x, y);
    out[10 * i + 8] = (long long)__umul64hi(ux, uy);
    out[10 * i + 9] = __mul64hi(x, y);
}

// bit manipulation intrinsics
extern "C" __global__ void bit_ops(const unsigned* a, const unsigned* b, unsigned* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned x = a[i], y = b[i];
    unsigned s = y & 0x7777u;                     // byte_perm selector, 3-bit fields
    out[12 * i + 0] = __popc(x);
    out[12 * i + 1] = __clz((int)x);
    out[12 * i + 2] = __brev(x);
    out[12 * i + 3] = __ffs((int)x);
    out[12 * i + 4] = __byte_perm(x, y, s);
    out[12 * i + 5] = __funnelshift_l(x, y, y >> 8);   // shift masked to 0..31
    out[12 * i + 6] = __funnelshift_r(x, y, y >> 8);
    out[12 * i + 7] = __funnelshift_lc(x, y, (y >> 16) & 63);  // shift clamped to 32
    out[12 * i + 8] = __funnelshift_rc(x, y, (y >> 16) & 63);
    out[12 * i + 9] = (x & y) ^ (~x | (y >> 3));
    out[12 * i + 10] = __sad((int)x, (int)y, 7u);
    out[12 * i + 11] = __usad(x, y, 5u);
}

extern "C" __global__ void bit_ops64(const unsigned long long* a, unsigned long long* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned long long x = a[i];
    out[4 * i + 0] = (unsigned long long)__popcll(x);
    out[4 * i + 1] = (unsigned long long)__clzll((long long)x);
    out[4 * i + 2] = __brevll(x);
    out[4 * i + 3] = (unsigned long long)__ffsll((long long)x);
}

// conversions between types
extern "C" __global__ void conversions(const float* f, const double* d, const int* k,
                                       int* oi, float* of, double* od, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = f[i];
    double y = d[i];
    int z = k[i];
    oi[4 * i + 0] = (int)x;                 // truncation
    oi[4 * i + 1] = __float2int_rn(x);      // round half to even
    oi[4 * i + 2] = __float_as_int(x);
    oi[4 * i + 3] = (int)y;
    of[3 * i + 0] = (float)y;               // round to nearest
    of[3 * i + 1] = (float)z;
    of[3 * i + 2] = (float)(unsigned)z;
    od[2 * i + 0] = (double)x;
    od[2 * i + 1] = (double)z;
}

// grid-stride loop: fewer threads than elements
extern "C" __global__ void grid_stride_scale(float* data, int n, float s)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        data[i] = data[i] * s + 1.0f;
}

// early exit: some threads return at once, the others do work (no barrier after the return)
extern "C" __global__ void early_exit(const int* in, int* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int v = in[i];
    if (v < 0) return;                      // out[i] keeps its old value
    int acc = 0;
    for (int k = 0; k < (v & 15); ++k) acc += k * v;
    out[i] = acc + 1;
}

// divergent branches inside a warp: a switch, a data-dependent loop and nested ifs
extern "C" __global__ void divergent(const int* in, int* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int v = in[i];
    int r;
    switch (v & 3) {
    case 0: r = v * 3; break;
    case 1: r = v - 100; break;
    case 2: {
        r = 0;
        int x = v;
        while (x > 1) { x = (x & 1) ? 3 * x + 1 : x >> 1; ++r; }   // Collatz steps
        break;
    }
    default:
        if (threadIdx.x & 1) r = -v;
        else if (v > 500) r = v / 7;
        else r = v % 7;
    }
    out[i] = r;
}
