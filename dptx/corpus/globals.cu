// Module variables with initializers (__constant__, __device__) and structs passed by value.

__constant__ float coeffs[4] = {1.0f, -0.5f, 0.25f, 2.0f};
__constant__ int cshift = 3;
__device__ int table[8] = {3, 1, 4, 1, 5, 9, 2, 6};
__device__ double dscale = 1.5;
__device__ const int* table_ptr = table;     // a pointer initialized with a variable's address

// out[i] = c0 + c1 x + c2 x^2 + c3 x^3 (Horner, contraction allowed: tolerance)
extern "C" __global__ void const_poly(const float* x, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    out[i] = ((coeffs[3] * v + coeffs[2]) * v + coeffs[1]) * v + coeffs[0];
}

// table lookups with data-dependent indices, a __device__ double and a __constant__ int
extern "C" __global__ void device_table(const int* idx, int* out, double* dout, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int k = idx[i] & 7;
    out[2 * i + 0] = table[k] << cshift;
    out[2 * i + 1] = table_ptr[7 - k];
    dout[i] = dscale * (double)table[k];
}

struct Params {
    float scale;      // offset 0
    int count;        // offset 4
    double bias;      // offset 8
    char tag;         // offset 16
    short step;       // offset 18
    float weights[3]; // offset 20
    long long big;    // offset 32
};                    // size 40, align 8

// a struct with mixed fields passed by value
extern "C" __global__ void struct_param(Params p, const float* x, double* out, long long* lout, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float w = p.weights[i % 3];
    out[i] = (double)(x[i] * p.scale * w) + p.bias + (double)(i % p.count);
    lout[i] = p.big + (long long)p.tag * p.step + i;
}

struct Pair2 { int a; float b; };

// small struct by value plus scalars of every width around it
extern "C" __global__ void mixed_scalars(char c, short s, Pair2 pr, unsigned char uc, long long ll,
                                         float f, double d, unsigned short us, int* out, double* dout)
{
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        out[0] = c;
        out[1] = s;
        out[2] = pr.a;
        out[3] = uc;
        out[4] = (int)(ll >> 32);
        out[5] = (int)(ll & 0xffffffff);
        out[6] = us;
        dout[0] = pr.b;
        dout[1] = f;
        dout[2] = d;
    }
}
