"""Warp-vectorized execution (dptx/cpu/renderer/vector.py): when it is chosen, that its results match
numpy and the per-thread executor, that faults name the right thread, and that kernels it
cannot prove exact fall back to the per-thread executor. The corpus runs both ways too
(tests/test_corpus_cpu.py)."""
import numpy as np
import pytest

import dptx
from dptx import cpu
from dptx.cpu import executor


@pytest.fixture(autouse=True)
def _default_forms(monkeypatch):
    """These tests check the warp-vectorized form's choices: the default mode, whatever
    DPTX_CPU_VECTOR the suite runs under (tests that want another set it themselves)."""
    monkeypatch.delenv("DPTX_CPU_VECTOR", raising=False)


KERNELS = r'''
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

// threads past n leave before the barrier; the others still synchronize
extern "C" __global__ void early_exit(const int* a, int* out, int n) {
    __shared__ int s[128];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    s[threadIdx.x] = a[i] * 3;
    __syncthreads();
    out[i] = s[threadIdx.x] + s[0];
}

// per-thread trip counts (divergent loop), then a barrier that all threads reach
extern "C" __global__ void divergent_loop(const int* a, int* out) {
    __shared__ int s[64];
    int t = threadIdx.x, acc = 0;
    for (int k = 0; k < (t % 7) + 1; k++) acc += a[blockIdx.x * 64 + t] * (k + 1);
    s[t] = acc;
    __syncthreads();
    out[blockIdx.x * 64 + t] = s[63 - t] - acc;
}

// 2-D blocks 16 wide: a warp is two rows; butterfly reduction over each row half-warp and
// a ballot over the whole warp
extern "C" __global__ void warp_rows(const float* x, float* sums, unsigned* ballots) {
    int t = threadIdx.y * blockDim.x + threadIdx.x;
    int g = blockIdx.x * blockDim.x * blockDim.y + t;
    float v = x[g];
    for (int o = 8; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffff, v, o, 16);
    unsigned b = __ballot_sync(0xffffffff, x[g] > 0.5f);
    if (threadIdx.x == 0) sums[g / 16] = v;
    if ((t & 31) == 0) ballots[g / 32] = b;
}

// the barrier sits under a branch whose sides both reach one: legal on sm_70+, and not
// something the vector executor can prove (it runs per thread)
extern "C" __global__ void split_barrier(int* out) {
    __shared__ int s[64];
    int t = threadIdx.x;
    if (t & 1) { s[t] = t * 2; __syncthreads(); }
    else       { s[t] = t * 3; __syncthreads(); }
    out[blockIdx.x * 64 + t] = s[t ^ 1];
}

// thread 37 of block 2 reads one element past the end
extern "C" __global__ void oob_after_barrier(const float* a, float* out, int n) {
    __shared__ float s[64];
    int i = blockIdx.x * 64 + threadIdx.x;
    s[threadIdx.x] = a[i];
    __syncthreads();
    int j = (blockIdx.x == 2 && threadIdx.x == 37) ? n : i;
    out[i] = s[63 - threadIdx.x] + a[j];
}
'''


@pytest.fixture(scope="module")
def module():
    return dptx.RawModule(KERNELS)


def test_tiled_matmul_is_vectorized_and_matches_numpy(module):
    k = module.get_function("matmul")
    assert executor.compile_kernel(k).vector
    rng = np.random.default_rng(3)
    n = 64
    A, B = rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32)
    C = np.zeros_like(A)
    cpu.launch(k, (n // 16, n // 16), (16, 16), [A, B, C, np.int32(n)])
    np.testing.assert_allclose(C, A.astype(np.float64) @ B, rtol=1e-5)


def test_threads_leaving_before_a_barrier(module):
    k = module.get_function("early_exit")
    assert executor.compile_kernel(k).vector
    n = 300                                  # the last block of 128 is partly empty
    a = np.arange(n, dtype=np.int32)
    out = np.full(3 * 128, -1, np.int32)
    cpu.launch(k, 3, 128, [a, out, np.int32(n)])
    i = np.arange(n)
    first = (i // 128) * 128
    assert np.array_equal(out[:n], 3 * a + 3 * first)
    assert np.all(out[n:] == -1)


def test_divergent_loop_then_barrier(module):
    k = module.get_function("divergent_loop")
    assert executor.compile_kernel(k).vector
    a = np.arange(4 * 64, dtype=np.int32) - 100
    out = np.zeros_like(a)
    cpu.launch(k, 4, 64, [a, out])
    t = np.arange(64)
    acc = np.array([[a[b * 64 + i] * sum(range(1, i % 7 + 2)) for i in t] for b in range(4)])
    assert np.array_equal(out.reshape(4, 64), acc[:, ::-1] - acc)


def test_shuffles_and_ballots_on_two_dimensional_blocks(module):
    k = module.get_function("warp_rows")
    assert executor.compile_kernel(k).vector
    rng = np.random.default_rng(5)
    x = rng.random(3 * 16 * 8, dtype=np.float32)
    sums = np.zeros(x.size // 16, np.float32)
    ballots = np.zeros(x.size // 32, np.uint32)
    cpu.launch(k, 3, (16, 8), [x, sums, ballots])
    np.testing.assert_allclose(sums, x.reshape(-1, 16).astype(np.float64).sum(axis=1), rtol=1e-5)
    bits = (x.reshape(-1, 32) > 0.5).astype(np.uint64) << np.arange(32, dtype=np.uint64)
    assert np.array_equal(ballots, bits.sum(axis=1).astype(np.uint32))


def test_barriers_under_divergent_control_run_per_thread(module):
    k = module.get_function("split_barrier")
    ck = executor.compile_kernel(k)
    assert not ck.vector and "divergent" in ck.vector_reason
    out = np.zeros(2 * 64, np.int32)
    cpu.launch(k, 2, 64, [out])
    t = np.arange(64) ^ 1
    assert np.array_equal(out, np.tile(np.where(t & 1, t * 2, t * 3), 2))


def test_out_of_bounds_in_a_vectorized_kernel_names_the_thread(module):
    k = module.get_function("oob_after_barrier")
    assert executor.compile_kernel(k).vector
    n = 4 * 64
    a = np.ones(n, np.float32)
    out = np.zeros(n, np.float32)
    untouched = np.arange(10, dtype=np.float32)
    with pytest.raises(dptx.DptxMemoryError) as e:
        cpu.launch(k, 4, 64, [a, out, np.int32(n)])
    text = str(e.value)
    assert "block 2" in text and "thread 37" in text and "PTX line" in text
    assert f"{4 * n} bytes into argument 0" in text
    assert np.array_equal(untouched, np.arange(10, dtype=np.float32))
    # the process lives on and the kernel still works with good arguments
    a2 = np.ones(n + 1, np.float32)
    cpu.launch(k, 4, 64, [a2, out, np.int32(n)])
    assert np.all(out == 2.0)


def test_per_thread_and_vectorized_executors_agree(module, monkeypatch):
    rng = np.random.default_rng(11)
    n = 48
    A, B = rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32)
    results = []
    for mode in ("1", "0"):
        monkeypatch.setenv("DPTX_CPU_VECTOR", mode)
        k = module.get_function("matmul")
        assert executor.compile_kernel(k).vector == (mode == "1")
        C = np.zeros_like(A)
        cpu.launch(k, (n // 16, n // 16), (16, 16), [A, B, C, np.int32(n)])
        results.append(C)
    assert np.array_equal(results[0], results[1])      # the same fma chain, bit for bit


PLAIN = r'''
extern "C" __global__ void scale(const float* x, float* y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n + 3) y[i] = a * x[i];
}'''


def test_plain_kernel_fault_reported_after_the_vector_loop(monkeypatch):
    """Plain kernels report a bounds fault from the loop latch (so that the loop over
    threads vectorizes): still the first faulting thread, its address and line."""
    monkeypatch.setenv("DPTX_CPU_VECTOR", "1")     # the plain loop, whatever the caller set
    k = dptx.RawModule(PLAIN).get_function("scale")
    assert not executor.compile_kernel(k).vector
    n = 1000
    x = np.ones(n, np.float32)
    y = np.zeros(n + 24, np.float32)
    with pytest.raises(dptx.DptxMemoryError) as e:
        cpu.launch(k, 4, 256, [x, y, np.float32(2), np.int32(n)], threads=1)
    text = str(e.value)
    assert "block 3" in text and "thread 232" in text            # i = 1000, the first past x
    assert f"{4 * n} bytes into argument 0" in text and "PTX line" in text
    assert np.all(y[:n] == 2.0)                                    # earlier threads ran


MORE = r'''
extern "C" __global__ void tree_reduce(const float* x, float* out, int n) {
    extern __shared__ float s[];
    int t = threadIdx.x, i = blockIdx.x * blockDim.x * 2 + t;
    float v = 0;
    if (i < n) v = x[i];
    if (i + blockDim.x < n) v += x[i + blockDim.x];
    s[t] = v;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k >>= 1) {
        if (t < k) s[t] += s[t + k];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = s[0];
}
extern "C" __global__ void exit_then_shfl(const int* x, int* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int v = x[i];
    unsigned m = __activemask();
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(m, v, o);
    if ((threadIdx.x & 31) == 0) out[i / 32] = v;
}
#define T 32
extern "C" __global__ void transpose(const float* a, float* b, int w, int h) {
    __shared__ float tile[T][T + 1];
    int x = blockIdx.x * T + threadIdx.x, y = blockIdx.y * T + threadIdx.y;
    for (int j = 0; j < T; j += 8)
        if (x < w && y + j < h) tile[threadIdx.y + j][threadIdx.x] = a[(y + j) * w + x];
    __syncthreads();
    x = blockIdx.y * T + threadIdx.x; y = blockIdx.x * T + threadIdx.y;
    for (int j = 0; j < T; j += 8)
        if (x < h && y + j < w) b[(y + j) * h + x] = tile[threadIdx.x][threadIdx.y + j];
}
'''


def test_shared_tree_reduction_with_barriers_in_a_loop():
    k = dptx.RawModule(MORE).get_function("tree_reduce")
    assert executor.compile_kernel(k).vector
    rng = np.random.default_rng(1)
    n = 100000
    x = rng.random(n, dtype=np.float32)
    nb = (n + 511) // 512
    out = np.zeros(nb, np.float32)
    cpu.launch(k, nb, 256, [x, out, np.int32(n)], shared_mem=256 * 4)
    want = np.pad(x.astype(np.float64), (0, nb * 512 - n)).reshape(nb, 512).sum(axis=1)
    np.testing.assert_allclose(out, want, rtol=1e-5)


def test_warp_reduction_after_early_exit():
    k = dptx.RawModule(MORE).get_function("exit_then_shfl")
    assert executor.compile_kernel(k).vector
    rng = np.random.default_rng(2)
    n = 1000
    x = rng.integers(-50, 50, n).astype(np.int32)
    out = np.zeros(32, np.int32)
    cpu.launch(k, 4, 256, [x, out, np.int32(n)])
    want = [x[w * 32:(w + 1) * 32].sum() for w in range(31)]
    assert np.array_equal(out[:31], want)       # whole warps (the last one is partial: UB)


def test_padded_shared_transpose_with_partial_tiles():
    k = dptx.RawModule(MORE).get_function("transpose")
    assert executor.compile_kernel(k).vector
    rng = np.random.default_rng(3)
    w, h = 100, 70
    a = rng.random((h, w), dtype=np.float32)
    b = np.zeros((w, h), np.float32)
    cpu.launch(k, ((w + 31) // 32, (h + 31) // 32), (32, 8), [a, b, np.int32(w), np.int32(h)])
    assert np.array_equal(b, a.T)


LOOPS = r'''
extern "C" __global__ void poly(float* y, int iters) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i * 1e-4f, acc = 0.0f;
    for (int k = 0; k < iters; k++) acc = acc * 0.999f + v * k;
    y[i] = acc;
}
extern "C" __global__ void rowscale(const float* a, float* b, int m, int rows) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    for (int j = 0; j < m; j++) b[r * m + j] = a[r * m + j] * 2.0f + 1.0f;
}'''


def test_plain_kernels_with_loops_measure_both_forms(monkeypatch):
    """A per-thread loop makes both translations candidates: the first launch with enough
    blocks runs half of them with each, and keeps the faster. Results are the same."""
    monkeypatch.delenv("DPTX_CPU_VECTOR", raising=False)
    m = dptx.RawModule(LOOPS)
    poly, rows = m.get_function("poly"), m.get_function("rowscale")
    for k in (poly, rows):
        ck = executor.compile_kernel(k)
        assert ck.vector and ck.alternative is not None and not ck.alternative.vector
    y = np.zeros(64 * 128, np.float32)
    cpu.launch(poly, 64, 128, [y, np.int32(50)])
    i = np.arange(y.size, dtype=np.float32)
    v = (i * np.float32(1e-4)).astype(np.float32)
    acc = np.zeros_like(v)
    for k in range(50):        # the same float32 operations, in the same order
        acc = (acc * np.float32(0.999) + v * np.float32(k)).astype(np.float32)
    np.testing.assert_allclose(y, acc, rtol=1e-6)      # fma contraction may differ by an ulp
    assert executor.compile_kernel(poly).chosen
    a = np.arange(64 * 128 * 16, dtype=np.float32).reshape(-1, 16)
    b = np.zeros_like(a)
    cpu.launch(rows, 64, 128, [a, b, np.int32(16), np.int32(a.shape[0])])
    assert np.array_equal(b, a * 2 + 1)
    assert executor.compile_kernel(rows).chosen


GRID_STRIDE = r'''extern "C" __global__ void gs(const float* x, float* y, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        y[i] = 3.0f * x[i];
}'''


def test_each_kind_of_launch_gets_its_own_choice_of_form(monkeypatch):
    """A grid-stride loop launched first with one iteration per thread, then with eight: the
    form measured faster for the first is not imposed on the second (the per-thread form,
    best for one iteration, ran 4x slower than the warp-vectorized one at eight)."""
    monkeypatch.delenv("DPTX_CPU_VECTOR", raising=False)
    k = dptx.RawModule(GRID_STRIDE).get_function("gs")
    ck = executor.compile_kernel(k)
    assert ck.alternative is not None
    n = 128 * 256
    x = np.arange(n, dtype=np.float32)
    for grid in (128, 16, 128):
        y = np.zeros(n, np.float32)
        cpu.launch(k, (grid,), (256,), [x, y, np.int32(n)], threads=2)
        assert np.array_equal(y, 3 * x)
    assert len(ck.chosen) == 2          # the third launch reused the first one's choice
    one, eight = (executor.launch_class(g, 256, [x, y, np.int32(n)]) for g in (128, 16))
    assert one != eight
    # the integer arguments' magnitudes count too (they set trip counts), floats do not
    assert executor.launch_class(16, 256, [np.int32(n * 64)]) != executor.launch_class(16, 256, [np.int32(n)])
    assert executor.launch_class(16, 256, [np.float32(1), np.int32(n)]) == \
        executor.launch_class(16, 256, [np.float32(1e9), np.int32(n)])


LATE_FAULT = r'''extern "C" __global__ void late_fault(float* y, int n, int bad, int reps) {
    for (int k = 0; k < reps; k++) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (blockIdx.x >= bad) i += n;          // past the end from block ``bad`` on
        y[i] = k;
    }
}'''


@pytest.mark.parametrize("bad", [5, 20, 40, 60])
def test_a_fault_while_both_forms_are_measured_names_the_lowest_block(monkeypatch, bad):
    """The first launch runs the blocks in quarters, the two forms in the order A B B A:
    a fault in any quarter is reported at the lowest faulting block, whichever form ran it."""
    monkeypatch.delenv("DPTX_CPU_VECTOR", raising=False)
    k = dptx.RawModule(LATE_FAULT + f"// {bad}").get_function("late_fault")
    assert executor.compile_kernel(k).alternative is not None
    y = np.zeros(64 * 32, np.float32)
    with pytest.raises(dptx.DptxMemoryError, match=rf"block {bad} \({bad}, 0, 0\)"):
        cpu.launch(k, 64, 32, [y, np.int32(y.size), np.int32(bad), np.int32(3)])


MATH = r'''extern "C" __global__ void math(const float* x, const double* xd, float* out, double* outd) {
    // a barrier makes the kernel warp-vectorized; each result is one PTX math instruction
    __shared__ float s[128];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = x[i];
    double w = xd[i];
    s[threadIdx.x] = v;
    __syncthreads();
    v = s[(threadIdx.x + 1) % blockDim.x];
    out[8 * i + 0] = __fsqrt_rn(v);
    out[8 * i + 1] = __frcp_rn(v);
    out[8 * i + 2] = rsqrtf(v);
    out[8 * i + 3] = __sinf(v);
    out[8 * i + 4] = __cosf(v);
    out[8 * i + 5] = exp2f(v);
    out[8 * i + 6] = __log2f(v);
    out[8 * i + 7] = sqrtf(v);
    outd[2 * i + 0] = sqrt(w);
    outd[2 * i + 1] = __drcp_rn(w);
}'''


def _math_in_both_forms(monkeypatch, k, x, xd):
    """The outputs of kernel ``math`` per thread and warp-vectorized, checked to be the
    same bits; returns the vectorized ones as (n, 8) float32 and (n, 2) float64, and the
    input each thread read (its neighbour's, through shared memory)."""
    n = x.size
    results = {}
    for mode in ("1", "0"):
        monkeypatch.setenv("DPTX_CPU_VECTOR", mode)
        assert executor.compile_kernel(k).vector == (mode == "1")
        out, outd = np.zeros(8 * n, np.float32), np.zeros(2 * n)
        cpu.launch(k, 4, 128, [x, xd, out, outd])
        results[mode] = out.reshape(n, 8), outd.reshape(n, 2)
    assert np.array_equal(results["1"][0].view(np.uint32), results["0"][0].view(np.uint32))
    assert np.array_equal(results["1"][1], results["0"][1])
    v = x.reshape(4, 128)[:, (np.arange(128) + 1) % 128].ravel()
    return results["1"][0], results["1"][1], v


def test_math_functions_run_as_vectors_with_the_per_thread_results(monkeypatch):
    """sqrt, rcp, rsqrt, sin, cos, ex2, lg2 in the warp-vectorized form: bit for bit the
    per-thread form's values; the .rn forms (sqrt, rcp) exactly numpy's."""
    k = dptx.RawModule(MATH).get_function("math")
    rng = np.random.default_rng(11)
    x = rng.uniform(0.01, 50, 4 * 128).astype(np.float32)
    xd = rng.uniform(0.01, 50, 4 * 128)
    out, outd, v = _math_in_both_forms(monkeypatch, k, x, xd)
    assert np.array_equal(out[:, 0], np.sqrt(v)) and np.array_equal(out[:, 7], np.sqrt(v))
    assert np.array_equal(out[:, 1], np.float32(1) / v)
    assert np.array_equal(outd[:, 0], np.sqrt(xd)) and np.array_equal(outd[:, 1], 1.0 / xd)
    np.testing.assert_allclose(out[:, 2], 1 / np.sqrt(v.astype(np.float64)), rtol=2e-7)
    np.testing.assert_allclose(out[:, 5], np.exp2(v.astype(np.float64)), rtol=2e-7)


def test_fast_math_functions_run_as_vectors_with_the_per_thread_results(monkeypatch):
    """The same kernel with --use_fast_math: the .ftz forms (sqrt/rcp/rsqrt/sin/cos/ex2/lg2
    .approx.ftz.f32) also run as vectors, bit for bit the per-thread form's values, on inputs
    that include subnormals (flushed) and values whose results are subnormal."""
    m = dptx.RawModule(MATH + "// fast", options=("--use_fast_math",))
    assert ".ftz.f32" in m.ptx
    k = m.get_function("math")
    rng = np.random.default_rng(12)
    x = rng.uniform(-140, 50, 4 * 128).astype(np.float32)
    x[::7] = (rng.integers(1, 1 << 23, x[::7].size) * np.float32(2) ** -149).astype(np.float32)
    out, _, v = _math_in_both_forms(monkeypatch, k, x, rng.uniform(0.01, 50, 4 * 128))
    ex2 = out[:, 5]
    tiny = np.float32(np.finfo(np.float32).tiny)
    assert np.all(ex2[(v < -127) & (v > -149)] == 0)          # subnormal results flushed
    normal = (v > -120) & (v < 50) & (np.abs(v) >= tiny)
    np.testing.assert_allclose(ex2[normal], np.exp2(v[normal].astype(np.float64)), rtol=2e-7)


def test_accesses_at_a_runtime_offset_from_a_64_bit_size_stay_vector_accesses():
    """``A[n + j]`` and ``A[i * n + j]`` with a ``long long n`` (PTX cannot tell it from a
    pointer): the scaled index is data, so the access has one buffer and the warp form emits
    vector loads and stores for it (lane by lane before: 37x slower on a row update); the
    results are numpy's, and an offset that runs past the buffer still faults exactly."""
    from dptx.cpu.renderer.codegen import Module as Translation
    from dptx.ptx.analysis import pointer_provenance
    src = r'''
    extern "C" __global__ void rows(double* A, long long n, long long reps) {
        // each row below the first: A[i, :] -= (i + 0.5) * A[0, :]
        for (long long i = 1; i < reps; i++)
            for (long long j0 = 0; j0 < n; j0 += 32) {
                long long j = j0 + threadIdx.x;
                if (j < n) A[i * n + j] -= (i + 0.5) * A[j];
            }
    }'''
    kernel = dptx.RawModule(src).get_function("rows")
    strict = pointer_provenance(kernel.module, kernel.function, strict=True)
    stores = [i for i in kernel.function.instructions if i.opcode == "st"]
    assert stores and all(strict[i.operands[0].base.name] == {("param", 0)} for i in stores)
    text = Translation(kernel.module, "rows", None, 16).translate()
    assert "llvm.masked.store" in text          # the vector store path exists for it
    n, reps = 100, 7
    a = np.random.default_rng(3).random((reps, n))
    want = a.copy()
    for i in range(1, reps):
        want[i] -= (i + 0.5) * want[0]
    got = a.copy()
    cpu.launch(kernel, (1,), (32,), [got, np.int64(n), np.int64(reps)])
    np.testing.assert_array_equal(got, want)
    with pytest.raises(dptx.DptxError, match="out-of-bounds"):
        cpu.launch(kernel, (1,), (32,), [a.copy(), np.int64(n), np.int64(reps + 1)])
