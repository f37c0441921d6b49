// Small applications: bitonic sort step, mandelbrot, 2D heat stencil step, saturating
// image filter, and a prefix-sum based stream compaction inside one block.

// one step of a bitonic sort over n (power of two) elements: the host loops over k and j
extern "C" __global__ void bitonic_step(int* a, int j, int k)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned ixj = i ^ j;
    if (ixj > i) {
        int x = a[i], y = a[ixj];
        if ((i & k) == 0) {
            if (x > y) { a[i] = y; a[ixj] = x; }
        } else {
            if (x < y) { a[i] = y; a[ixj] = x; }
        }
    }
}

// iteration counts of the mandelbrot set (compiled with -fmad=false: bitwise reproducible)
extern "C" __global__ void mandelbrot(int* out, int w, int h, float x0, float y0, float dx, float dy, int max_iter)
{
    int px = blockIdx.x * blockDim.x + threadIdx.x;
    int py = blockIdx.y * blockDim.y + threadIdx.y;
    if (px >= w || py >= h) return;
    float cx = x0 + px * dx;
    float cy = y0 + py * dy;
    float x = 0.0f, y = 0.0f;
    int it = 0;
    while (it < max_iter && x * x + y * y <= 4.0f) {
        float xt = x * x - y * y + cx;
        y = 2.0f * x * y + cy;
        x = xt;
        ++it;
    }
    out[py * w + px] = it;
}

// one Jacobi step of the 2D heat equation: interior = 0.25 * (sum of 4 neighbours),
// boundary copied
extern "C" __global__ void heat_step(const float* in, float* out, int w, int h)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h) return;
    int i = y * w + x;
    if (x == 0 || y == 0 || x == w - 1 || y == h - 1) { out[i] = in[i]; return; }
    out[i] = 0.25f * (((in[i - 1] + in[i + 1]) + in[i - w]) + in[i + w]);
}

// 3x3 box blur on an 8-bit image with clamping at the edges and integer rounding
extern "C" __global__ void box_blur_u8(const unsigned char* in, unsigned char* out, int w, int h)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h) return;
    int s = 0;
    for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx) {
            int xx = min(max(x + dx, 0), w - 1);
            int yy = min(max(y + dy, 0), h - 1);
            s += in[yy * w + xx];
        }
    out[y * w + x] = (unsigned char)((s + 4) / 9);
}

// stream compaction per block: keep the positive values, in order, at the start of each
// block's output segment; counts[b] = number kept (blockDim.x == 128)
extern "C" __global__ void compact_block(const int* in, int* out, int* counts, int n)
{
    __shared__ int flags[128];
    int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + tid;
    int v = (i < n) ? in[i] : 0;
    int keep = v > 0;
    flags[tid] = keep;
    __syncthreads();
    for (int off = 1; off < 128; off <<= 1) {
        int t = (tid >= off) ? flags[tid - off] : 0;
        __syncthreads();
        flags[tid] += t;
        __syncthreads();
    }
    if (keep) out[blockIdx.x * blockDim.x + flags[tid] - 1] = v;
    if (tid == 127) counts[blockIdx.x] = flags[127];
}
