// 2D and 3D indexing: transpose, naive matmul, 3D scale and 3D stencil.

// out[c][r] = in[r][c] for an rows x cols matrix
extern "C" __global__ void transpose_naive(const float* in, float* out, int rows, int cols)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) out[c * rows + r] = in[r * cols + c];
}

// C (m x n) = A (m x k) * B (k x n), float, one thread per output
extern "C" __global__ void matmul_naive_f32(const float* A, const float* B, float* C, int m, int n, int k)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= m || col >= n) return;
    float acc = 0.0f;
    for (int t = 0; t < k; ++t) acc += A[row * k + t] * B[t * n + col];
    C[row * n + col] = acc;
}

// the same in int32: exact
extern "C" __global__ void matmul_naive_i32(const int* A, const int* B, int* C, int m, int n, int k)
{
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= m || col >= n) return;
    int acc = 0;
    for (int t = 0; t < k; ++t) acc += A[row * k + t] * B[t * n + col];
    C[row * n + col] = acc;
}

// 3D grid of 3D blocks: out[z][y][x] = in[z][y][x] * s + (x + 2y + 3z)
extern "C" __global__ void scale3d(const float* in, float* out, int nx, int ny, int nz, float s)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int z = blockIdx.z * blockDim.z + threadIdx.z;
    if (x >= nx || y >= ny || z >= nz) return;
    int idx = (z * ny + y) * nx + x;
    out[idx] = in[idx] * s + (float)(x + 2 * y + 3 * z);
}

// 7-point stencil on an int grid; the boundary copies the input
extern "C" __global__ void stencil3d_i32(const int* in, int* out, int nx, int ny, int nz)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int z = blockIdx.z * blockDim.z + threadIdx.z;
    if (x >= nx || y >= ny || z >= nz) return;
    int idx = (z * ny + y) * nx + x;
    if (x == 0 || y == 0 || z == 0 || x == nx - 1 || y == ny - 1 || z == nz - 1) {
        out[idx] = in[idx];
        return;
    }
    int sxy = nx * ny;
    out[idx] = 6 * in[idx] - in[idx - 1] - in[idx + 1] - in[idx - nx] - in[idx + nx]
               - in[idx - sxy] + in[idx + sxy] * 2;
}

// writes every special register of every thread: out[gid] = packed ids
extern "C" __global__ void thread_ids(int* out)
{
    int bx = blockIdx.x, by = blockIdx.y, bz = blockIdx.z;
    int tx = threadIdx.x, ty = threadIdx.y, tz = threadIdx.z;
    int block = (bz * gridDim.y + by) * gridDim.x + bx;
    int thread = (tz * blockDim.y + ty) * blockDim.x + tx;
    int gid = block * (blockDim.x * blockDim.y * blockDim.z) + thread;
    out[8 * gid + 0] = bx;
    out[8 * gid + 1] = by;
    out[8 * gid + 2] = bz;
    out[8 * gid + 3] = tx;
    out[8 * gid + 4] = ty;
    out[8 * gid + 5] = tz;
    out[8 * gid + 6] = gridDim.x * 10000 + gridDim.y * 100 + gridDim.z;
    out[8 * gid + 7] = blockDim.x * 10000 + blockDim.y * 100 + blockDim.z;
}
