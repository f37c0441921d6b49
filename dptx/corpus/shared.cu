// Static and dynamic shared memory, barriers (including barriers inside loops).

#define TILE 16

// C (m x n) = A (m x k) * B (k x n) with 16x16 tiles in shared memory; sizes need not be
// multiples of 16.
extern "C" __global__ void matmul_tiled_f32(const float* A, const float* B, float* C, int m, int n, int k)
{
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty;
    int col = blockIdx.x * TILE + tx;
    float acc = 0.0f;
    for (int t0 = 0; t0 < k; t0 += TILE) {
        As[ty][tx] = (row < m && t0 + tx < k) ? A[row * k + t0 + tx] : 0.0f;
        Bs[ty][tx] = (t0 + ty < k && col < n) ? B[(t0 + ty) * n + col] : 0.0f;
        __syncthreads();
        for (int j = 0; j < TILE; ++j) acc += As[ty][j] * Bs[j][tx];
        __syncthreads();
    }
    if (row < m && col < n) C[row * n + col] = acc;
}

// transpose through a padded shared tile (32 x 8 threads, each moves 4 elements)
extern "C" __global__ void transpose_tiled(const int* in, int* out, int rows, int cols)
{
    __shared__ int tile[32][33];
    int x = blockIdx.x * 32 + threadIdx.x;
    int y = blockIdx.y * 32 + threadIdx.y;
    for (int j = 0; j < 32; j += 8)
        if (x < cols && y + j < rows) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * cols + x];
    __syncthreads();
    x = blockIdx.y * 32 + threadIdx.x;
    y = blockIdx.x * 32 + threadIdx.y;
    for (int j = 0; j < 32; j += 8)
        if (x < rows && y + j < cols) out[(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
}

// tree reduction in static shared memory, __syncthreads inside the loop; one sum per block
extern "C" __global__ void reduce_tree_i32(const int* in, int* block_sums, int n)
{
    __shared__ int sdata[256];
    unsigned tid = threadIdx.x;
    unsigned i = blockIdx.x * blockDim.x * 2 + threadIdx.x;
    int v = 0;
    if (i < n) v = in[i];
    if (i + blockDim.x < n) v += in[i + blockDim.x];
    sdata[tid] = v;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0) block_sums[blockIdx.x] = sdata[0];
}

// reduction in dynamic shared memory (shared_mem = blockDim.x * 4 bytes)
extern "C" __global__ void reduce_dynamic_i32(const int* in, int* block_sums, int n)
{
    extern __shared__ int dyn_i32[];
    unsigned tid = threadIdx.x;
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    dyn_i32[tid] = (i < n) ? in[i] : 0;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) dyn_i32[tid] += dyn_i32[tid + s];
        __syncthreads();
    }
    if (tid == 0) block_sums[blockIdx.x] = dyn_i32[0];
}

// float reduction in dynamic shared memory (tolerance: the sum order differs from numpy)
extern "C" __global__ void reduce_dynamic_f32(const float* in, float* block_sums, int n)
{
    extern __shared__ float dyn_f32[];
    unsigned tid = threadIdx.x;
    float v = 0.0f;
    for (unsigned i = blockIdx.x * blockDim.x + tid; i < n; i += blockDim.x * gridDim.x) v += in[i];
    dyn_f32[tid] = v;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (tid < s) dyn_f32[tid] += dyn_f32[tid + s];
        __syncthreads();
    }
    if (tid == 0) block_sums[blockIdx.x] = dyn_f32[0];
}

// two arrays carved out of one dynamic shared buffer: a double array then an int array
// (shared_mem = blockDim.x * 12 bytes); out[i] = in_d[i] * (neighbour count)
extern "C" __global__ void dynamic_two_arrays(const double* in_d, const int* in_i, double* out, int n)
{
    extern __shared__ double dyn_buf[];
    double* sd = dyn_buf;
    int* si = (int*)(dyn_buf + blockDim.x);
    unsigned tid = threadIdx.x;
    unsigned i = blockIdx.x * blockDim.x + tid;
    sd[tid] = (i < n) ? in_d[i] : 0.0;
    si[tid] = (i < n) ? in_i[i] : 0;
    __syncthreads();
    unsigned r = (tid + 1) % blockDim.x;
    if (i < n) out[i] = sd[r] * (double)si[blockDim.x - 1 - tid];
}

// inclusive Hillis-Steele scan of each block (blockDim.x <= 256), barriers in the loop
extern "C" __global__ void scan_block_i32(const int* in, int* out, int n)
{
    __shared__ int buf[256];
    unsigned tid = threadIdx.x;
    unsigned i = blockIdx.x * blockDim.x + tid;
    buf[tid] = (i < n) ? in[i] : 0;
    __syncthreads();
    for (unsigned off = 1; off < blockDim.x; off <<= 1) {
        int t = (tid >= off) ? buf[tid - off] : 0;
        __syncthreads();
        buf[tid] += t;
        __syncthreads();
    }
    if (i < n) out[i] = buf[tid];
}

// exclusive Blelloch (work-efficient) scan of 2*blockDim.x elements per block
extern "C" __global__ void scan_blelloch_i32(const int* in, int* out, int n)
{
    __shared__ int temp[512];
    int tid = threadIdx.x;
    int m = 2 * blockDim.x;
    int base = blockIdx.x * m;
    temp[2 * tid] = (base + 2 * tid < n) ? in[base + 2 * tid] : 0;
    temp[2 * tid + 1] = (base + 2 * tid + 1 < n) ? in[base + 2 * tid + 1] : 0;
    int offset = 1;
    for (int d = m >> 1; d > 0; d >>= 1) {
        __syncthreads();
        if (tid < d) {
            int ai = offset * (2 * tid + 1) - 1;
            int bi = offset * (2 * tid + 2) - 1;
            temp[bi] += temp[ai];
        }
        offset *= 2;
    }
    if (tid == 0) temp[m - 1] = 0;
    for (int d = 1; d < m; d *= 2) {
        offset >>= 1;
        __syncthreads();
        if (tid < d) {
            int ai = offset * (2 * tid + 1) - 1;
            int bi = offset * (2 * tid + 2) - 1;
            int t = temp[ai];
            temp[ai] = temp[bi];
            temp[bi] += t;
        }
    }
    __syncthreads();
    if (base + 2 * tid < n) out[base + 2 * tid] = temp[2 * tid];
    if (base + 2 * tid + 1 < n) out[base + 2 * tid + 1] = temp[2 * tid + 1];
}

// 1D 3-point stencil with a shared halo: out[i] = in[i-1] + 2 in[i] + in[i+1] (0 outside)
extern "C" __global__ void stencil1d_shared(const int* in, int* out, int n)
{
    __shared__ int s[128 + 2];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int l = threadIdx.x + 1;
    s[l] = (i < n) ? in[i] : 0;
    if (threadIdx.x == 0) s[0] = (i > 0 && i - 1 < n) ? in[i - 1] : 0;
    if (threadIdx.x == blockDim.x - 1) s[l + 1] = (i + 1 < n) ? in[i + 1] : 0;
    __syncthreads();
    if (i < n) out[i] = s[l - 1] + 2 * s[l] + s[l + 1];
}

// barriers in a data-independent loop with a shared accumulator updated by one thread per
// round: out[b*rounds + r] = sum over rounds so far of (sum of the block's inputs * (r+1))
extern "C" __global__ void barrier_rounds(const int* in, int* out, int rounds)
{
    __shared__ int acc;
    __shared__ int vals[64];
    int tid = threadIdx.x;
    if (tid == 0) acc = 0;
    for (int r = 0; r < rounds; ++r) {
        vals[tid] = in[blockIdx.x * blockDim.x + tid] * (r + 1);
        __syncthreads();
        if (tid == r % blockDim.x) {
            int s = 0;
            for (int j = 0; j < blockDim.x; ++j) s += vals[j];
            acc += s;
            out[blockIdx.x * rounds + r] = acc;
        }
        __syncthreads();
    }
}
