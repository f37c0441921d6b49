// Math library calls (single and double precision) and Black-Scholes.

extern "C" __global__ void math_f32(const float* x, const float* y, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float a = x[i], b = y[i];          // a in [0.1, 10], b in [-3, 3]
    out[10 * i + 0] = sinf(b);
    out[10 * i + 1] = cosf(b);
    out[10 * i + 2] = expf(b);
    out[10 * i + 3] = logf(a);
    out[10 * i + 4] = sqrtf(a);
    out[10 * i + 5] = powf(a, b);
    out[10 * i + 6] = erff(b);
    out[10 * i + 7] = tanhf(b);
    out[10 * i + 8] = atan2f(b, a);
    out[10 * i + 9] = rsqrtf(a);
}

extern "C" __global__ void math_f64(const double* x, const double* y, double* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double a = x[i], b = y[i];         // a in [0.1, 10], b in [-3, 3]
    out[8 * i + 0] = sin(b);
    out[8 * i + 1] = cos(b);
    out[8 * i + 2] = exp(b);
    out[8 * i + 3] = log(a);
    out[8 * i + 4] = sqrt(a);
    out[8 * i + 5] = pow(a, b);
    out[8 * i + 6] = atan(b);
    out[8 * i + 7] = log1p(a) + expm1(b * 0.1);
}

// fast-math intrinsics (approximate): __sinf, __expf, __logf, __fdividef
extern "C" __global__ void math_intrinsics_f32(const float* x, const float* y, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float a = x[i], b = y[i];
    out[4 * i + 0] = __sinf(b);
    out[4 * i + 1] = __expf(b);
    out[4 * i + 2] = __logf(a);
    out[4 * i + 3] = __fdividef(b, a);
}

__device__ inline float cnd(float d)
{
    const float A1 = 0.31938153f, A2 = -0.356563782f, A3 = 1.781477937f,
                A4 = -1.821255978f, A5 = 1.330274429f, RSQRT2PI = 0.39894228040143267794f;
    float K = 1.0f / (1.0f + 0.2316419f * fabsf(d));
    float c = RSQRT2PI * expf(-0.5f * d * d) *
              (K * (A1 + K * (A2 + K * (A3 + K * (A4 + K * A5)))));
    if (d > 0) c = 1.0f - c;
    return c;
}

extern "C" __global__ void black_scholes(float* call, float* put, const float* S, const float* X,
                                         const float* T, float R, float V, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        float s = S[i], x = X[i], t = T[i];
        float sqrtT = sqrtf(t);
        float d1 = (logf(s / x) + (R + 0.5f * V * V) * t) / (V * sqrtT);
        float d2 = d1 - V * sqrtT;
        float cndd1 = cnd(d1), cndd2 = cnd(d2);
        float expRT = expf(-R * t);
        call[i] = s * cndd1 - x * expRT * cndd2;
        put[i] = x * expRT * (1.0f - cndd2) - s * (1.0f - cndd1);
    }
}
