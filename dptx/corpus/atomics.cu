// Atomics on global and shared memory, every operation and width. The kernels are built so
// that the final result does not depend on the order of the atomics (sums of integers,
// min/max, bitwise ops, wrap counters, "one winner per group" for exch/cas, histograms of
// returned tickets); float sums are order dependent unless the values are exact.

// --- global, 32-bit ---------------------------------------------------------------------
// oi: [add, sub, min, max, and, or, xor] as int; ou: [add, sub, min, max, and, or, xor,
// inc(17), dec(13), inc(5) from 9, dec(7) from 100] as unsigned
extern "C" __global__ void atomic_global_32(const int* a, const unsigned* m, int n, int* oi, unsigned* ou)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int x = a[i];
    unsigned ux = (unsigned)x, mk = m[i];
    atomicAdd(&oi[0], x);
    atomicSub(&oi[1], x);
    atomicMin(&oi[2], x);
    atomicMax(&oi[3], x);
    atomicAnd(&oi[4], (int)mk);
    atomicOr(&oi[5], (int)~mk);
    atomicXor(&oi[6], x);
    atomicAdd(&ou[0], ux);
    atomicSub(&ou[1], ux);
    atomicMin(&ou[2], ux);
    atomicMax(&ou[3], ux);
    atomicAnd(&ou[4], mk);
    atomicOr(&ou[5], ~mk);
    atomicXor(&ou[6], mk);
    atomicInc(&ou[7], 17u);
    atomicDec(&ou[8], 13u);
    atomicInc(&ou[9], 5u);
    atomicDec(&ou[10], 7u);
}

// --- global, 64-bit ---------------------------------------------------------------------
// ol: [min, max] as long long; oul: [add, min, max, and, or, xor] as unsigned long long
extern "C" __global__ void atomic_global_64(const long long* a, const unsigned long long* m, int n,
                                            long long* ol, unsigned long long* oul)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    long long x = a[i];
    unsigned long long ux = (unsigned long long)x, mk = m[i];
    atomicMin(&ol[0], x);
    atomicMax(&ol[1], x);
    atomicAdd(&oul[0], ux);
    atomicMin(&oul[1], ux);
    atomicMax(&oul[2], ux);
    atomicAnd(&oul[3], mk);
    atomicOr(&oul[4], ~mk);
    atomicXor(&oul[5], mk);
}

// --- float/double atomicAdd into bins ----------------------------------------------------
extern "C" __global__ void atomic_add_f32_bins(const float* v, const int* bin, int n, float* bins)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&bins[bin[i]], v[i]);
}

extern "C" __global__ void atomic_add_f64_bins(const double* v, const int* bin, int n, double* bins)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&bins[bin[i]], v[i]);
}

// --- returned values: tickets -------------------------------------------------------------
// Every thread takes a ticket from a 32-bit and a 64-bit counter and an atomicInc wrap
// counter (bound K-1); the tickets are counted in histograms, which are deterministic.
extern "C" __global__ void atomic_tickets(int n, int k, unsigned* ctr, unsigned long long* ctr64,
                                          int* hits, int* hits64, int* hits_inc)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned t = atomicAdd(&ctr[0], 1u);
    atomicAdd(&hits[t], 1);
    unsigned long long t64 = atomicAdd(ctr64, 1ull);
    atomicAdd(&hits64[t64], 1);
    unsigned w = atomicInc(&ctr[1], (unsigned)(k - 1));
    atomicAdd(&hits_inc[w], 1);
}

// --- exch and cas: one winner per group, CAS loops ---------------------------------------
// group g = i / gsize. flags/flags64/fflags start at 0, owners at -1.
// counts[g*4 + 0]: winners of atomicExch(int); +1: winners of atomicExch(ull);
// +2: winners of atomicExch(float); +3: claims won by atomicCAS(int).
// sums[0]: sum of a through an atomicCAS(int) loop; sums64[0]: sum through atomicCAS(ull);
// dmax[0]: max of d through atomicCAS on the bits of a double (values >= 0).
extern "C" __global__ void atomic_exch_cas(const int* a, const double* d, int n, int gsize,
                                           int* flags, unsigned long long* flags64, float* fflags,
                                           int* owners, int* counts, int* sums,
                                           unsigned long long* sums64, double* dmax)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int g = i / gsize;
    if (atomicExch(&flags[g], 1) == 0) atomicAdd(&counts[g * 4 + 0], 1);
    if (atomicExch(&flags64[g], 0x100000000ull + i) == 0ull) atomicAdd(&counts[g * 4 + 1], 1);
    if (atomicExch(&fflags[g], 2.5f) == 0.0f) atomicAdd(&counts[g * 4 + 2], 1);
    if (atomicCAS(&owners[g], -1, i) == -1) atomicAdd(&counts[g * 4 + 3], 1);

    int x = a[i];
    int old = sums[0], assumed;
    do {
        assumed = old;
        old = atomicCAS(&sums[0], assumed, assumed + x);
    } while (old != assumed);

    unsigned long long old64 = sums64[0], assumed64;
    do {
        assumed64 = old64;
        old64 = atomicCAS(&sums64[0], assumed64, assumed64 + (unsigned long long)(long long)x);
    } while (old64 != assumed64);

    unsigned long long* dm = (unsigned long long*)dmax;
    unsigned long long cur = *dm;
    while (__longlong_as_double((long long)cur) < d[i]) {
        unsigned long long prev = atomicCAS(dm, cur, (unsigned long long)__double_as_longlong(d[i]));
        if (prev == cur) break;
        cur = prev;
    }
}

// --- shared memory, 32-bit: one record of 16 ints per block ------------------------------
// rec: [add, sub, min, max, and, or, xor, exch winners, cas claims, cas-loop sum,
//       uadd, umin, umax, inc(9) , dec(11), float add (exact values)]
extern "C" __global__ void atomic_shared_32(const int* a, const unsigned* m, const float* f, int n, int* rec)
{
    __shared__ int s[10];
    __shared__ unsigned su[5];
    __shared__ float sf;
    __shared__ int flag[8];
    __shared__ int owner[8];
    int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + tid;
    if (tid == 0) {
        s[0] = 0; s[1] = 1000; s[2] = 0x7fffffff; s[3] = -0x7fffffff - 1; s[4] = -1; s[5] = 0;
        s[6] = 0x5a5a5a5a; s[7] = 0; s[8] = 0; s[9] = 0;
        su[0] = 0; su[1] = 0xffffffffu; su[2] = 0; su[3] = 0; su[4] = 3;
        sf = 0.0f;
    }
    if (tid < 8) { flag[tid] = 0; owner[tid] = -1; }
    __syncthreads();
    if (i < n) {
        int x = a[i];
        unsigned mk = m[i];
        int g = tid & 7;
        atomicAdd(&s[0], x);
        atomicSub(&s[1], x);
        atomicMin(&s[2], x);
        atomicMax(&s[3], x);
        atomicAnd(&s[4], (int)mk);
        atomicOr(&s[5], (int)~mk);
        atomicXor(&s[6], x);
        if (atomicExch(&flag[g], 7) == 0) atomicAdd(&s[7], 1);
        if (atomicCAS(&owner[g], -1, tid) == -1) atomicAdd(&s[8], 1);
        int old = s[9], assumed;
        do {
            assumed = old;
            old = atomicCAS(&s[9], assumed, assumed ^ x);
        } while (old != assumed);
        atomicAdd(&su[0], (unsigned)x);
        atomicMin(&su[1], (unsigned)x);
        atomicMax(&su[2], (unsigned)x);
        atomicInc(&su[3], 9u);
        atomicDec(&su[4], 11u);
        atomicAdd(&sf, f[i]);
    }
    __syncthreads();
    int* r = rec + blockIdx.x * 16;
    if (tid < 10) r[tid] = s[tid];
    else if (tid < 15) r[tid] = (int)su[tid - 10];
    else if (tid == 15) r[15] = __float_as_int(sf);
}

// --- shared memory, 64-bit and double: one record of 9 unsigned long longs per block ------
// rec: [ll min, ll max, ull add, ull min, ull max, and, or, xor, double add (exact values)]
// exch/cas 64: winners and claims in rec2 [exch winners, cas claims]
extern "C" __global__ void atomic_shared_64(const long long* a, const unsigned long long* m,
                                            const double* d, int n,
                                            unsigned long long* rec, int* rec2)
{
    __shared__ long long sl[2];
    __shared__ unsigned long long su[6];
    __shared__ double sd;
    __shared__ unsigned long long flag[4], owner[4];
    __shared__ int cnt[2];
    int tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + tid;
    if (tid == 0) {
        sl[0] = 0x7fffffffffffffffll; sl[1] = -0x7fffffffffffffffll - 1;
        su[0] = 5; su[1] = 0xffffffffffffffffull; su[2] = 0;
        su[3] = 0xffffffffffffffffull; su[4] = 0; su[5] = 0x0123456789abcdefull;
        sd = 0.0; cnt[0] = 0; cnt[1] = 0;
    }
    if (tid < 4) { flag[tid] = 0; owner[tid] = 0xffffffffffffffffull; }
    __syncthreads();
    if (i < n) {
        long long x = a[i];
        unsigned long long mk = m[i];
        int g = tid & 3;
        atomicMin(&sl[0], x);
        atomicMax(&sl[1], x);
        atomicAdd(&su[0], (unsigned long long)x);
        atomicMin(&su[1], (unsigned long long)x);
        atomicMax(&su[2], (unsigned long long)x);
        atomicAnd(&su[3], mk);
        atomicOr(&su[4], ~mk);
        atomicXor(&su[5], mk);
        atomicAdd(&sd, d[i]);
        if (atomicExch(&flag[g], 1ull + tid) == 0ull) atomicAdd(&cnt[0], 1);
        if (atomicCAS(&owner[g], 0xffffffffffffffffull, (unsigned long long)tid) == 0xffffffffffffffffull)
            atomicAdd(&cnt[1], 1);
    }
    __syncthreads();
    unsigned long long* r = rec + blockIdx.x * 9;
    if (tid < 2) r[tid] = (unsigned long long)sl[tid];
    else if (tid < 8) r[tid] = su[tid - 2];
    else if (tid == 8) r[8] = (unsigned long long)__double_as_longlong(sd);
    else if (tid < 11) rec2[blockIdx.x * 2 + tid - 9] = cnt[tid - 9];
}

// --- histograms ----------------------------------------------------------------------------
// global atomics only
extern "C" __global__ void histogram_global(const int* data, int n, int* hist, int nbins)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        int b = data[i] % nbins;
        if (b < 0) b += nbins;
        atomicAdd(&hist[b], 1);
    }
}

// privatized in shared memory, merged into the global histogram (nbins <= 256)
extern "C" __global__ void histogram_shared(const unsigned char* data, int n, unsigned* hist)
{
    __shared__ unsigned local[256];
    for (int b = threadIdx.x; b < 256; b += blockDim.x) local[b] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        atomicAdd(&local[data[i]], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < 256; b += blockDim.x)
        if (local[b]) atomicAdd(&hist[b], local[b]);
}
