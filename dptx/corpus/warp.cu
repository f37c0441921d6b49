// Warp-level operations: shuffles, votes, redux (sm_80) and match.

#define FULL 0xffffffffu

// warp sum with __shfl_down_sync; lane 0 writes the warp's sum
extern "C" __global__ void warp_reduce_shfl_down(const int* in, int* warp_sums)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = in[i];
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(FULL, v, off);
    if ((threadIdx.x & 31) == 0) warp_sums[i >> 5] = v;
}

// float warp sum (tolerance), every lane gets the result through __shfl_xor_sync
extern "C" __global__ void warp_allreduce_xor_f32(const float* in, float* out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = in[i];
    for (int m = 1; m < 32; m <<= 1) v += __shfl_xor_sync(FULL, v, m);
    out[i] = v;
}

// butterfly max with __shfl_xor_sync (int: exact)
extern "C" __global__ void warp_allmax_xor(const int* in, int* out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = in[i];
    for (int m = 16; m >= 1; m >>= 1) v = max(v, __shfl_xor_sync(FULL, v, m));
    out[i] = v;
}

// inclusive warp scan with __shfl_up_sync
extern "C" __global__ void warp_scan_shfl_up(const int* in, int* out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x & 31;
    int v = in[i];
    for (int off = 1; off < 32; off <<= 1) {
        int t = __shfl_up_sync(FULL, v, off);
        if (lane >= off) v += t;
    }
    out[i] = v;
}

// __shfl_sync broadcast from lane src, and a shuffle within groups of 8 lanes
// (width 8: reads lane (lane + 3) % 8 of its group), and an indexed rotation of a double
extern "C" __global__ void warp_shfl_broadcast(const int* in, const double* din, int* out, double* dout, int src)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x & 31;
    int v = in[i];
    out[2 * i + 0] = __shfl_sync(FULL, v, src);
    out[2 * i + 1] = __shfl_sync(FULL, v, (lane + 3) & 7, 8);
    dout[i] = __shfl_sync(FULL, din[i], (lane + 5) & 31);
}

// votes: ballot, all, any; one record per warp, plus a ballot in a divergent branch with a
// partial mask (only lanes 0-15 take part)
extern "C" __global__ void warp_votes(const int* in, unsigned* out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x & 31;
    int w = i >> 5;
    int v = in[i];
    unsigned b = __ballot_sync(FULL, v > 0);
    int all = __all_sync(FULL, v > -50);
    int any = __any_sync(FULL, v > 90);
    unsigned half = 0;
    if (lane < 16) half = __ballot_sync(0x0000ffffu, (v & 1) != 0);
    if (lane == 0) {
        out[4 * w + 0] = b;
        out[4 * w + 1] = all ? 1u : 0u;
        out[4 * w + 2] = any ? 1u : 0u;
        out[4 * w + 3] = half;
    }
}

// redux.sync: one record per warp
extern "C" __global__ void warp_redux(const unsigned* in, unsigned* out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int w = i >> 5;
    unsigned v = in[i];
    unsigned add = __reduce_add_sync(FULL, v);
    int mn = __reduce_min_sync(FULL, (int)v);
    int mx = __reduce_max_sync(FULL, (int)v);
    unsigned umn = __reduce_min_sync(FULL, v);
    unsigned umx = __reduce_max_sync(FULL, v);
    unsigned a = __reduce_and_sync(FULL, v);
    unsigned o = __reduce_or_sync(FULL, v);
    unsigned x = __reduce_xor_sync(FULL, v);
    if ((threadIdx.x & 31) == 0) {
        out[8 * w + 0] = add;
        out[8 * w + 1] = (unsigned)mn;
        out[8 * w + 2] = (unsigned)mx;
        out[8 * w + 3] = umn;
        out[8 * w + 4] = umx;
        out[8 * w + 5] = a;
        out[8 * w + 6] = o;
        out[8 * w + 7] = x;
    }
}

// __match_any_sync: each lane gets the mask of lanes holding the same key;
// __match_all_sync: whether all lanes of the warp hold the same value
extern "C" __global__ void warp_match(const int* keys, const long long* keys64, unsigned* out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int pred = 0;
    out[4 * i + 0] = __match_any_sync(FULL, keys[i]);
    out[4 * i + 1] = __match_any_sync(FULL, keys64[i]);
    unsigned m = __match_all_sync(FULL, keys[i] & 0x100, &pred);
    out[4 * i + 2] = m;
    out[4 * i + 3] = (unsigned)pred;
}

// block reduction that combines warp shuffles and shared memory (warp sums, then warp 0)
extern "C" __global__ void block_reduce_warp_shared(const int* in, int* block_sums, int n)
{
    __shared__ int warp_part[32];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    int v = (i < n) ? in[i] : 0;
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(FULL, v, off);
    if (lane == 0) warp_part[wid] = v;
    __syncthreads();
    if (wid == 0) {
        v = (lane < (blockDim.x >> 5)) ? warp_part[lane] : 0;
        for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(FULL, v, off);
        if (lane == 0) block_sums[blockIdx.x] = v;
    }
}

// __syncwarp with a warp-private shared staging area: reverse each warp's 32 values
extern "C" __global__ void warp_reverse_syncwarp(const int* in, int* out)
{
    __shared__ int stage[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x & 31, base = threadIdx.x & ~31;
    stage[threadIdx.x] = in[i];
    __syncwarp();
    out[i] = stage[base + 31 - lane];
}
