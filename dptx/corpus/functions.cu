// Device functions (non-inlined, recursive, with pointer and struct arguments) and local
// (per-thread) arrays with dynamic indexing.

__device__ __noinline__ float poly3(float x, float a, float b, float c)
{
    return (a * x + b) * x + c;
}

__device__ __noinline__ int clamp_add(int x, int y, int lo, int hi)
{
    int s = x + y;
    return s < lo ? lo : (s > hi ? hi : s);
}

// a non-inlined function that writes through a pointer and returns a value
__device__ __noinline__ int minmax_into(const int* p, int len, int* out_max)
{
    int mn = p[0], mx = p[0];
    for (int j = 1; j < len; ++j) { mn = min(mn, p[j]); mx = max(mx, p[j]); }
    *out_max = mx;
    return mn;
}

extern "C" __global__ void call_noinline(const float* x, const int* a, float* fy, int* iy, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    fy[i] = poly3(x[i], 0.5f, -2.0f, 3.0f);
    int mx;
    int mn = minmax_into(a + (i / 4) * 4, 4, &mx);
    iy[3 * i + 0] = clamp_add(a[i], 100, -500, 500);
    iy[3 * i + 1] = mn;
    iy[3 * i + 2] = mx;
}

__device__ __noinline__ int fib(int k)
{
    return k < 2 ? k : fib(k - 1) + fib(k - 2);
}

__device__ __noinline__ unsigned long long factorial(int k)
{
    return k <= 1 ? 1ull : (unsigned long long)k * factorial(k - 1);
}

// Ackermann-like mutual recursion through two functions
__device__ __noinline__ int is_odd(int k);
__device__ __noinline__ int is_even(int k) { return k == 0 ? 1 : is_odd(k - 1); }
__device__ __noinline__ int is_odd(int k) { return k == 0 ? 0 : is_even(k - 1); }

extern "C" __global__ void recursion(const int* k, int* fibs, unsigned long long* facts, int* parity, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int v = k[i];
    fibs[i] = fib(v % 16);
    facts[i] = factorial(v % 21);
    parity[i] = is_even(v % 40);
}

// local array with data-dependent indexing: each thread builds a 16-bin histogram of the
// low nibbles of its 32 inputs, then reports bins chosen by data and the argmax bin
extern "C" __global__ void local_histogram(const unsigned* in, int* out, int nthreads)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= nthreads) return;
    int h[16];
    for (int b = 0; b < 16; ++b) h[b] = 0;
    for (int j = 0; j < 32; ++j) h[in[t * 32 + j] & 15] += 1;
    int best = 0;
    for (int b = 1; b < 16; ++b) if (h[b] > h[best]) best = b;
    out[4 * t + 0] = h[in[t * 32] & 15];
    out[4 * t + 1] = h[(in[t * 32 + 1] >> 4) & 15];
    out[4 * t + 2] = best;
    out[4 * t + 3] = h[best];
}

// per-thread insertion sort of 12 floats in a local array, written back sorted
extern "C" __global__ void local_sort(float* rows, int nrows)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= nrows) return;
    float v[12];
    for (int j = 0; j < 12; ++j) v[j] = rows[t * 12 + j];
    for (int j = 1; j < 12; ++j) {
        float key = v[j];
        int p = j - 1;
        while (p >= 0 && v[p] > key) { v[p + 1] = v[p]; --p; }
        v[p + 1] = key;
    }
    for (int j = 0; j < 12; ++j) rows[t * 12 + j] = v[j];
}

// local array passed to a non-inlined function by pointer (generic addressing of local memory)
__device__ __noinline__ void fill_squares(int* buf, int len, int base)
{
    for (int j = 0; j < len; ++j) buf[j] = (base + j) * (base + j);
}

extern "C" __global__ void local_through_call(const int* idx, int* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int buf[10];
    fill_squares(buf, 10, i);
    out[i] = buf[idx[i] % 10] - buf[0];
}
