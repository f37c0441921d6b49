"""The CPU executor against native C and numpy, side by side from one run.

Each kernel runs through ``dptx.cpu.launch`` (all cores), as the same computation in C built
with ``gcc -O3 -march=native -fopenmp`` on as many threads, and in numpy where it fits.
Targets (dptx / C, issue 18's): vecadd and saxpy within 1.3x, Black-Scholes and the
grid-stride loop within 1.5x, tiled matmul and the two reductions within 2x. Also prints JIT compile time, cached reload time, and the cold
compile time of each kernel with an empty cache beside ptxas.
Needs gcc with OpenMP (the benchmark only; dptx itself never needs a C compiler).

    python benchmarks/cpu_vs_native.py
"""
import ctypes
import os
import subprocess
import tempfile
import time

import numpy as np

import dptx
from dptx import cpu
from dptx.cpu import executor

THREADS = os.cpu_count() or 1

CUDA = r'''
extern "C" __global__ void vecadd(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
__device__ inline float cnd(float d) { return 0.5f * erfcf(-d * 0.70710678118654752f); }
extern "C" __global__ void black_scholes(const float* S, const float* X, const float* T,
                                         float* call, float* put, float r, float v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float s = S[i], x = X[i], t = T[i], sq = sqrtf(t);
    float d1 = (logf(s / x) + (r + 0.5f * v * v) * t) / (v * sq), d2 = d1 - v * sq;
    float e = expf(-r * t);
    call[i] = s * cnd(d1) - x * e * cnd(d2);
    put[i] = x * e * cnd(-d2) - s * cnd(-d1);
}
#define TILE 16
extern "C" __global__ void matmul(const float* A, const float* B, float* C, int n) {
    __shared__ float As[TILE][TILE], Bs[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int t = 0; t < n / TILE; t++) {
        As[threadIdx.y][threadIdx.x] = A[row * n + t * TILE + threadIdx.x];
        Bs[threadIdx.y][threadIdx.x] = B[(t * TILE + threadIdx.y) * n + col];
        __syncthreads();
        for (int k = 0; k < TILE; k++) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    C[row * n + col] = acc;
}
extern "C" __global__ void gs_saxpy(double a, const double* x, double* y, int n) {
    // the grid-stride loop of CUB, Thrust and most library code
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        y[i] = a * x[i] + y[i];
}
extern "C" __global__ void tree_reduce(const float* x, float* out, int n) {
    // shared-memory tree (a barrier per level, down to 64 threads), a shuffle tail and one
    // atomicAdd per block
    __shared__ float s[256];
    int i = blockIdx.x * blockDim.x * 2 + threadIdx.x;
    float v = (i < n ? x[i] : 0.0f) + (i + blockDim.x < n ? x[i + blockDim.x] : 0.0f);
    s[threadIdx.x] = v;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride >= 64; stride >>= 1) {
        if (threadIdx.x < stride) s[threadIdx.x] = v = v + s[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x < 32) {
        v = s[threadIdx.x] + s[threadIdx.x + 32];
        for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
        if (threadIdx.x == 0) atomicAdd(out, v);
    }
}
extern "C" __global__ void reduce_shfl(const float* x, float* out, int n) {
    float v = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) v += x[i];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
    if ((threadIdx.x & 31) == 0) out[(blockIdx.x * blockDim.x + threadIdx.x) / 32] = v;
}
'''

# cold-compile only: large kernels of the kind the CUDA samples have
SAMPLES = r'''
extern "C" __global__ void nbody_f64(const double4* pos, double4* acc, int n, double eps2) {
    extern __shared__ double4 sh[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    double4 p = pos[i];
    double ax = 0.0, ay = 0.0, az = 0.0;
    for (int tile = 0; tile < n / blockDim.x; tile++) {
        sh[threadIdx.x] = pos[tile * blockDim.x + threadIdx.x];
        __syncthreads();
        #pragma unroll 128
        for (int j = 0; j < blockDim.x; j++) {
            double4 q = sh[j];
            double dx = q.x - p.x, dy = q.y - p.y, dz = q.z - p.z;
            double inv = rsqrt(dx * dx + dy * dy + dz * dz + eps2);
            double s = q.w * inv * inv * inv;
            ax += dx * s; ay += dy * s; az += dz * s;
        }
        __syncthreads();
    }
    acc[i] = make_double4(ax, ay, az, 0.0);
}
extern "C" __global__ void bitonic_shared(float* a) {
    __shared__ float s[1024];
    unsigned t = threadIdx.x, base = blockIdx.x * 1024;
    s[t] = a[base + t]; s[t + 512] = a[base + t + 512];
    __syncthreads();
    for (unsigned k = 2; k <= 1024; k <<= 1)
        for (unsigned j = k >> 1; j > 0; j >>= 1) {
            unsigned i = 2 * t - (t & (j - 1));
            bool up = ((base + i) & k) == 0;
            float x = s[i], y = s[i + j];
            if ((x > y) == up) { s[i] = y; s[i + j] = x; }
            __syncthreads();
        }
    a[base + t] = s[t]; a[base + t + 512] = s[t + 512];
}
'''

C_SOURCE = r'''
#include <math.h>
void vecadd(const float* a, const float* b, float* c, int n) {
    #pragma omp parallel for
    for (int i = 0; i < n; i++) c[i] = a[i] + b[i];
}
void saxpy(float a, const float* x, float* y, int n) {
    #pragma omp parallel for
    for (int i = 0; i < n; i++) y[i] = a * x[i] + y[i];
}
static inline float cnd(float d) { return 0.5f * erfcf(-d * 0.70710678118654752f); }
void black_scholes(const float* S, const float* X, const float* T, float* call, float* put,
                   float r, float v, int n) {
    #pragma omp parallel for
    for (int i = 0; i < n; i++) {
        float s = S[i], x = X[i], t = T[i], sq = sqrtf(t);
        float d1 = (logf(s / x) + (r + 0.5f * v * v) * t) / (v * sq), d2 = d1 - v * sq;
        float e = expf(-r * t);
        call[i] = s * cnd(d1) - x * e * cnd(d2);
        put[i] = x * e * cnd(-d2) - s * cnd(-d1);
    }
}
#define TILE 16
void matmul(const float* A, const float* B, float* C, int n) {
    #pragma omp parallel for
    for (int bi = 0; bi < n; bi += TILE)
        for (int bj = 0; bj < n; bj += TILE) {
            float acc[TILE][TILE] = {{0}};
            for (int bk = 0; bk < n; bk += TILE)
                for (int i = 0; i < TILE; i++)
                    for (int k = 0; k < TILE; k++) {
                        float a = A[(bi + i) * n + bk + k];
                        for (int j = 0; j < TILE; j++) acc[i][j] += a * B[(bk + k) * n + bj + j];
                    }
            for (int i = 0; i < TILE; i++)
                for (int j = 0; j < TILE; j++) C[(bi + i) * n + bj + j] = acc[i][j];
        }
}
void gs_saxpy(double a, const double* x, double* y, int n) {
    #pragma omp parallel for
    for (int i = 0; i < n; i++) y[i] = a * x[i] + y[i];
}
float reduce_sum(const float* x, int n) {
    float s = 0.0f;
    #pragma omp parallel for reduction(+:s)
    for (int i = 0; i < n; i++) s += x[i];
    return s;
}
'''


def build_native():
    d = tempfile.mkdtemp(prefix="dptx-bench-")
    src, lib = os.path.join(d, "native.c"), os.path.join(d, "native.so")
    with open(src, "w") as f:
        f.write(C_SOURCE)
    subprocess.run(["gcc", "-O3", "-march=native", "-fopenmp", "-shared", "-fPIC", src,
                    "-o", lib, "-lm"], check=True)
    so = ctypes.CDLL(lib)
    P = ctypes.c_void_p
    so.vecadd.argtypes = [P, P, P, ctypes.c_int]
    so.saxpy.argtypes = [ctypes.c_float, P, P, ctypes.c_int]
    so.black_scholes.argtypes = [P, P, P, P, P, ctypes.c_float, ctypes.c_float, ctypes.c_int]
    so.matmul.argtypes = [P, P, P, ctypes.c_int]
    so.gs_saxpy.argtypes = [ctypes.c_double, P, P, ctypes.c_int]
    so.reduce_sum.argtypes = [P, ctypes.c_int]
    so.reduce_sum.restype = ctypes.c_float
    return so


def best(*fns, repeat=9):
    """Best time of each function, the runs interleaved (a, b, c, a, b, c...) so that all
    see the same machine: these machines are shared, and their speed drifts."""
    for fn in fns:
        fn()
    times = [[] for _ in fns]
    for _ in range(repeat):
        for fn, ts in zip(fns, times):
            t0 = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t0)
    return [min(ts) for ts in times]


def side_by_side(dptx_fn, c_fn, numpy_fn=None, repeat=9):
    """(dptx, C, numpy) best times. dptx and C are interleaved; numpy is timed apart and
    last: its BLAS worker threads keep spinning for a while after a call (up to ~0.1 s),
    which would take the cores from whatever runs next."""
    t_d, t_c = best(dptx_fn, c_fn, repeat=repeat)
    t_n = None
    if numpy_fn is not None:
        t_n, = best(numpy_fn, repeat=repeat)
        time.sleep(0.3)
    return t_d, t_c, t_n


def ptr(a):
    return a.ctypes.data


def main():
    os.environ.setdefault("OMP_NUM_THREADS", str(THREADS))
    # OpenMP threads otherwise spin for a while after each parallel region, taking the cores
    # from whatever runs next (the runs are interleaved)
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    so = build_native()
    mod = dptx.RawModule(CUDA)
    k = {name: mod.get_function(name) for name in mod.kernel_names}
    rng = np.random.default_rng(0)
    rows = []

    n = 1 << 24
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    c = np.empty_like(a)
    t_d, t_c, t_n = side_by_side(lambda: cpu.launch(k["vecadd"], (n // 256,), (256,), [a, b, c, np.int32(n)]),
                                 lambda: so.vecadd(ptr(a), ptr(b), ptr(c), n),
                                 lambda: np.add(a, b, out=c))
    rows.append(("vecadd 16M f32", t_d, t_c, t_n, 1.3))

    y = rng.random(n, dtype=np.float32)
    t_d, t_c, t_n = side_by_side(lambda: cpu.launch(k["saxpy"], (n // 256,), (256,), [np.float32(2), a, y, np.int32(n)]),
                                 lambda: so.saxpy(2.0, ptr(a), ptr(y), n),
                                 lambda: np.add(np.float32(2) * a, y, out=y))
    rows.append(("saxpy 16M f32", t_d, t_c, t_n, 1.3))

    m = 1 << 22
    S = rng.uniform(5, 30, m).astype(np.float32)
    X = rng.uniform(1, 100, m).astype(np.float32)
    T = rng.uniform(0.25, 10, m).astype(np.float32)
    call, put = np.empty_like(S), np.empty_like(S)
    t_d, t_c, _ = side_by_side(lambda: cpu.launch(k["black_scholes"], (m // 128,), (128,),
                                                  [S, X, T, call, put, np.float32(0.02), np.float32(0.3), np.int32(m)]),
                               lambda: so.black_scholes(ptr(S), ptr(X), ptr(T), ptr(call), ptr(put), 0.02, 0.3, m),
                               repeat=5)
    rows.append(("black-scholes 4M", t_d, t_c, None, 1.5))

    s = 512
    A, B = rng.random((s, s), dtype=np.float32), rng.random((s, s), dtype=np.float32)
    C = np.empty_like(A)
    t_d, t_c, t_n = side_by_side(lambda: cpu.launch(k["matmul"], (s // 16, s // 16), (16, 16), [A, B, C, np.int32(s)]),
                                 lambda: so.matmul(ptr(A), ptr(B), ptr(C), s),
                                 lambda: np.matmul(A, B, out=C))
    rows.append(("tiled matmul 512", t_d, t_c, t_n, 2.0))

    r = 1 << 22
    xr = rng.random(r, dtype=np.float32)
    out = np.empty(1024 * 256 // 32, np.float32)
    t_d, t_c, t_n = side_by_side(lambda: cpu.launch(k["reduce_shfl"], (1024,), (256,), [xr, out, np.int32(r)]),
                                 lambda: so.reduce_sum(ptr(xr), r),
                                 lambda: xr.sum())
    rows.append(("shuffle reduction 4M", t_d, t_c, t_n, 2.0))

    g = 1 << 23
    xd, yd = rng.random(g), rng.random(g)
    t_d, t_c, t_n = side_by_side(lambda: cpu.launch(k["gs_saxpy"], (4096,), (256,), [np.float64(2), xd, yd, np.int32(g)]),
                                 lambda: so.gs_saxpy(2.0, ptr(xd), ptr(yd), g),
                                 lambda: np.add(2.0 * xd, yd, out=yd))
    rows.append(("grid-stride saxpy 8M f64", t_d, t_c, t_n, 1.5))

    q = 1 << 24
    xq = rng.random(q, dtype=np.float32)
    total = np.zeros(1, np.float32)
    t_d, t_c, t_n = side_by_side(lambda: cpu.launch(k["tree_reduce"], (q // 512,), (256,), [xq, total, np.int32(q)]),
                                 lambda: so.reduce_sum(ptr(xq), q),
                                 lambda: xq.sum())
    rows.append(("tree reduction 16M", t_d, t_c, t_n, 2.0))
    total[:] = 0
    cpu.launch(k["tree_reduce"], (q // 512,), (256,), [xq, total, np.int32(q)])
    assert np.isclose(total[0], xq.astype(np.float64).sum(), rtol=1e-4), total

    print(f"CPU executor vs native C (gcc -O3 -march=native -fopenmp), {THREADS} threads; best of runs")
    print(f"{'kernel':<24}{'dptx (ms)':>11}{'C (ms)':>10}{'numpy (ms)':>12}{'dptx/C':>9}{'target':>9}")
    for name, d, cc, npy, target in rows:
        print(f"{name:<24}{d * 1e3:>11.2f}{cc * 1e3:>10.2f}"
              f"{(npy * 1e3 if npy else float('nan')):>12.2f}{d / cc:>9.2f}{'<' + str(target):>9}")

    small = dptx.RawModule(r'''extern "C" __global__ void bench_small(int* x) { x[threadIdx.x] += %d; }'''
                           % int(time.time()))
    kern = small.get_function("bench_small")
    t0 = time.perf_counter()
    cpu.compile_kernel(kern)
    compile_s = time.perf_counter() - t0
    executor._compiled.clear()
    t0 = time.perf_counter()
    cpu.compile_kernel(kern)
    reload_s = time.perf_counter() - t0
    print(f"JIT compile of a small kernel: {compile_s * 1e3:.1f} ms (target < 200 ms); "
          f"reload from the disk cache: {reload_s * 1e3:.2f} ms (target < 10 ms)")
    cold_compile(mod)


def cold_compile(mod):
    """Each kernel above, and two large ones of the kind the CUDA samples have (an n-body
    step in double precision with ``#pragma unroll 128``, a bitonic sort of 1024 keys in
    shared memory), translated and JIT-compiled with an empty cache (both forms where the
    executor measures two), beside ptxas on the same module: what a user waits for on a
    first run and after every edit. Large kernels run from a quick build at first while the
    optimized one is made in the background: both times are printed. Target: under 5 s."""
    import shutil
    from dptx.gpu import toolchain
    saved = os.environ.get("DPTX_CACHE_DIR")
    cache = tempfile.mkdtemp(prefix="dptx-cold-")
    os.environ["DPTX_CACHE_DIR"] = cache
    try:
        fresh = [dptx.RawModule(ptx=mod.ptx), dptx.RawModule(SAMPLES)]
        line = []
        for m in fresh:
            for name in m.kernel_names:
                executor._compiled.clear()
                t0 = time.perf_counter()
                ck = cpu.compile_kernel(m.get_function(name))
                ready = time.perf_counter() - t0
                if ck.tier == "quick":
                    ck.upgrade(wait=True)
                    line.append(f"{name} {ready:.2f} s (optimized after {time.perf_counter() - t0:.2f} s)")
                else:
                    line.append(f"{name} {ready:.2f} s")
        print("cold compile (fresh cache, target < 5 s each): " + ", ".join(line))
        found = toolchain.newest_ptxas()
        if found:
            path = os.path.join(cache, "module.ptx")
            with open(path, "w") as f:
                f.write(mod.ptx)
            t0 = time.perf_counter()
            subprocess.run([found.path, "-arch=sm_80", path, "-o", path + ".cubin"], check=True)
            print(f"ptxas -arch=sm_80 on the whole module: {time.perf_counter() - t0:.2f} s")
    finally:
        shutil.rmtree(cache, ignore_errors=True)
        if saved is None:
            os.environ.pop("DPTX_CACHE_DIR", None)
        else:
            os.environ["DPTX_CACHE_DIR"] = saved


if __name__ == "__main__":
    main()
