"""CPU executor behaviour beyond single instructions: sub-ranges of blocks, the JIT caches,
module state, function pointers, printf and argument errors."""
import numpy as np
import pytest

import dptx
from dptx import cpu
from dptx.cpu import executor

IDS = r'''
extern "C" __global__ void ids(int* out, int bias) {
    int b = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
    int t = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
    out[b * blockDim.x * blockDim.y * blockDim.z + t] = b * 1000 + t + bias;
}'''


def test_block_sub_ranges_compose_to_the_whole_grid():
    k = dptx.RawModule(IDS).get_function("ids")
    grid, block = (3, 2, 2), (4, 2, 1)
    whole = np.zeros(12 * 8, np.int32)
    cpu.launch(k, grid, block, [whole, 7])
    assert whole[8 * 11 + 5] == 11 * 1000 + 5 + 7
    parts = np.zeros_like(whole)
    for a, b in ((0, 1), (1, 7), (7, 12)):
        cpu.launch(k, grid, block, [parts, 7], blocks=range(a, b))
    assert np.array_equal(parts, whole)
    with pytest.raises(dptx.LaunchError, match="contiguous range"):
        cpu.launch(k, grid, block, [parts, 7], blocks=range(0, 13))


@pytest.mark.parametrize("mode", ["all", "0"])
@pytest.mark.parametrize("block", [(16, 16, 1), (5, 3, 7), (33, 2, 1), (1, 1, 64), (7, 1, 9)])
def test_thread_indices_of_multidimensional_blocks(monkeypatch, mode, block):
    """Each thread's (x, y, z) in blocks whose warps straddle rows and planes, in the
    warp-vectorized form (which reads them from a per-launch table) and per thread."""
    monkeypatch.setenv("DPTX_CPU_VECTOR", mode)
    k = dptx.RawModule(r'''
    extern "C" __global__ void xyz(unsigned* out) {
        unsigned b = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
        unsigned t = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
        unsigned* o = out + 3 * (b * blockDim.x * blockDim.y * blockDim.z + t);
        o[0] = threadIdx.x; o[1] = threadIdx.y; o[2] = threadIdx.z;
    }''').get_function("xyz")
    grid = (3, 1, 2)
    out = np.full(6 * int(np.prod(block)) * 3, 12345, np.uint32)
    cpu.launch(k, grid, block, [out])
    assert executor.compile_kernel(k).vector == (mode == "all")
    z, y, x = np.meshgrid(*(np.arange(n) for n in block[::-1]), indexing="ij")
    want = np.stack([x, y, z], axis=-1)
    assert np.array_equal(out.reshape(6, *block[::-1], 3), np.broadcast_to(want, (6,) + want.shape))


def test_threads_argument_gives_identical_results():
    k = dptx.RawModule(IDS).get_function("ids")
    a, b = np.zeros(64 * 32, np.int32), np.zeros(64 * 32, np.int32)
    cpu.launch(k, 64, 32, [a, 0], threads=1)
    cpu.launch(k, 64, 32, [b, 0], threads=4)
    assert np.array_equal(a, b)


def test_compile_caches(tmp_path, monkeypatch):
    monkeypatch.setenv("DPTX_CACHE_DIR", str(tmp_path))
    k = dptx.RawModule(IDS.replace("bias;", "bias + 1;")).get_function("ids")
    first = cpu.compile_kernel(k)
    assert cpu.compile_kernel(k) is first                      # memory cache
    assert list((tmp_path / "cpu").glob("*.o"))                # object code on disk
    executor._compiled.pop(executor.cache_key(k))
    again = cpu.compile_kernel(k)                              # from the disk cache
    assert again is not first
    out = np.zeros(32, np.int32)
    cpu.launch(k, 1, 32, [out, 0])
    assert out[5] == 6


def test_module_variables_persist_across_launches_and_kernels():
    m = dptx.RawModule(r'''
    __device__ int counter = 40;
    extern "C" __global__ void bump() { atomicAdd(&counter, 1); }
    extern "C" __global__ void read(int* out) { out[0] = counter; }''')
    out = np.zeros(1, np.int32)
    cpu.launch(m.get_function("bump"), 1, 2, [])
    cpu.launch(m.get_function("bump"), 1, 2, [])
    cpu.launch(m.get_function("read"), 1, 1, [out])
    assert out[0] == 44
    fresh = dptx.RawModule(m.code)          # another module: its own device state
    cpu.launch(fresh.get_function("read"), 1, 1, [out])
    assert out[0] == 40


def test_function_pointers():
    m = dptx.RawModule(r'''
    typedef float (*op_t)(float, float);
    __device__ __noinline__ float addf(float a, float b) { return a + b; }
    __device__ __noinline__ float mulf(float a, float b) { return a * b; }
    __device__ op_t table[2] = {addf, mulf};
    extern "C" __global__ void apply(const float* x, float* y, int which) {
        int i = threadIdx.x;
        op_t f = table[(i + which) & 1];
        y[i] = f(x[i], 3.0f);
    }''')
    x = np.arange(8, dtype=np.float32)
    y = np.zeros(8, np.float32)
    cpu.launch(m.get_function("apply"), 1, 8, [x, y, 1])
    assert np.array_equal(y, np.where(np.arange(8) % 2 == 1, x + 3, x * 3))


def test_printf_in_block_order(capfd):
    m = dptx.RawModule(r'''extern "C" __global__ void hello(int tag) {
        if (threadIdx.x == 0) printf("block %d tag %d %s %.2f\n", blockIdx.x, tag, "ok", 0.5); }''')
    cpu.launch(m.get_function("hello"), 3, 32, [9], threads=1)
    out = capfd.readouterr().out.splitlines()
    assert out == [f"block {b} tag 9 ok 0.50" for b in range(3)]


def test_printf_in_block_order_across_threads_and_dropped_records(capfd):
    """Threads take pieces of a large launch in any order; the records still come out in
    block order, and a full buffer reports how many were dropped."""
    m = dptx.RawModule(r'''extern "C" __global__ void hello(int tag) {
        if (threadIdx.x == 0) printf("block %d tag %d\n", blockIdx.x, tag); }''')
    k = m.get_function("hello")
    cpu.launch(k, 2000, 32, [3], threads=4)
    out = capfd.readouterr().out.splitlines()
    assert out == [f"block {b} tag 3" for b in range(2000)]
    # each thread has room for 300 records; how many blocks each thread ran (so which records
    # are kept) depends on timing, the total never does
    cpu.launch(k, 2000, 32, [4], threads=2, printf_capacity=300)
    out = capfd.readouterr().out.splitlines()
    kept = len(out) - 1
    assert 300 <= kept <= 600
    assert out[-1] == f"[dptx: {2000 - kept} printf records of kernel hello dropped: buffer full]"
    blocks = [int(line.split()[1]) for line in out[:-1]]
    assert blocks == sorted(blocks) and len(set(blocks)) == kept


def test_fault_in_many_pieces_reports_the_lowest_block():
    """Every block from 700 on faults; whichever thread gets there first, the error names
    block 700, and the blocks before it ran."""
    m = dptx.RawModule(r'''extern "C" __global__ void k(int* out, int limit) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        out[blockIdx.x < limit ? i : i + (1 << 26)] = i; }''')
    out = np.zeros(1200 * 32, np.int32)
    for threads in (1, 2, 5):
        out[:] = -1
        with pytest.raises(dptx.DptxMemoryError, match=r"block 700 \(700, 0, 0\), thread 0 "):
            cpu.launch(m.get_function("k"), 1200, 32, [out, 700], threads=threads)
        assert np.array_equal(out[:700 * 32], np.arange(700 * 32))


def test_argument_conversion_and_errors():
    k = dptx.RawModule(IDS).get_function("ids")
    out = np.zeros(32, np.int32)
    cpu.launch(k, 1, 32, [out, np.int32(-5)])
    assert out[0] == -5
    with pytest.raises(dptx.LaunchError, match=r"argument 1 \(bias: .u32\).*float"):
        cpu.launch(k, 1, 32, [out, 1.5])
    with pytest.raises(dptx.LaunchError, match="C-contiguous"):
        cpu.launch(k, 1, 32, [np.zeros((32, 2), np.int32)[:, 0], 0])
    with pytest.raises(dptx.LaunchError, match="takes 2 arguments"):
        cpu.launch(k, 1, 32, [out])


def test_device_calls_in_a_kernel_with_barriers():
    m = dptx.RawModule(r'''
    __device__ __noinline__ float sq(float x) { return x * x; }
    extern "C" __global__ void k(const float* x, float* y) {
        __shared__ float s[64];
        s[threadIdx.x] = sq(x[threadIdx.x]);
        __syncthreads();
        y[threadIdx.x] = s[63 - threadIdx.x] + sq(2.0f);
    }''')
    x = np.arange(64, dtype=np.float32)
    y = np.zeros(64, np.float32)
    cpu.launch(m.get_function("k"), 1, 64, [x, y])
    assert np.array_equal(y, x[::-1] ** 2 + 4)


def test_code_calling_missing_functions_is_refused_not_loaded(tmp_path, monkeypatch):
    """Loading object code with an unresolved call would abort the process (a worker)."""
    from dptx.cpu.jit import compile_ir, undefined_symbols
    monkeypatch.setenv("DPTX_CACHE_DIR", str(tmp_path))
    bad = ("declare void @dptx_no_such_function()\n"
           "define i32 @dptx_run(ptr %c, i64 %a, i64 %b) {\n"
           "  call void @dptx_no_such_function()\n  ret i32 0\n}\n")
    with pytest.raises(dptx.PtxUnsupportedError, match="dptx_no_such_function"):
        compile_ir(bad, "missing-symbol-test")
    good = "define i32 @dptx_run(ptr %c, i64 %a, i64 %b) {\n  ret i32 7\n}\n"
    _, address = compile_ir(good, "resolvable-test")
    assert address
    import llvmlite.binding as llvm
    from dptx.cpu.jit import _target_machine
    mod = llvm.parse_assembly("declare float @sinf(float)\n"
                              "define float @f(float %x) {\n  %r = call float @sinf(float %x)\n"
                              "  ret float %r\n}\n")
    assert "sinf" in undefined_symbols(_target_machine().emit_object(mod))


HALF_ATOMICS = r'''
#include <cuda_fp16.h>
#include <cuda_bf16.h>
extern "C" __global__ void half_atomics(__half* h, __half2* h2, __nv_bfloat16* b,
                                        __nv_bfloat162* b2, const float* x, const float* y,
                                        __half* olds) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    __half v = __float2half(x[i]);
    olds[i] = atomicAdd(&h[i % 4], v);
    atomicAdd(&h2[i % 2], __halves2half2(v, __float2half(1.0f)));
    atomicAdd(&b[i % 4], __float2bfloat16(y[i]));
    atomicAdd(&b2[0], __floats2bfloat162_rn(y[i], 0.5f));
}'''


@pytest.mark.parametrize("arch", ["compute_90", None])
def test_half_precision_atomic_adds(arch):
    """sm_90 code uses atom.add.noftz.{f16,f16x2,bf16,bf16x2}; older targets get CAS loops
    around inline-asm fma.rn.bf16x2 from the CUDA headers (whose blocks each declare their
    own register ``c``, of different types)."""
    options = ("--std=c++17",) + ((f"-arch={arch}",) if arch else ())
    k = dptx.RawModule(HALF_ATOMICS, options=options).get_function("half_atomics")
    if arch:
        assert "atom.add.noftz.bf16x2" in k.ptx and "atom.add.noftz.f16x2" in k.ptx
    n = 512
    x = (np.arange(n) % 8 / 8.0).astype(np.float32)     # sums of these are exact in f16
    # bf16 keeps 8 significant bits: every partial sum, in any order, stays exact when it
    # is at most 256 quarter steps (the threads race, so the order is not fixed)
    y = ((np.arange(n) // 3) % 2 * 0.25).astype(np.float32)
    assert np.count_nonzero(y) <= 256
    h, h2 = np.zeros(4, np.float16), np.zeros(4, np.float16)
    b, b2 = np.zeros(4, np.uint16), np.zeros(2, np.uint16)
    olds = np.zeros(n, np.float16)
    cpu.launch(k, 4, 128, [h, h2, b, b2, x, y, olds])
    assert np.array_equal(h, x.reshape(-1, 4).sum(axis=0).astype(np.float16))
    assert np.array_equal(h2.reshape(2, 2), np.stack([x.reshape(-1, 2).sum(axis=0), [n / 2] * 2], 1))
    # every old value returned is a partial sum of its slot: a multiple of 1/8 below the total
    assert np.all(olds >= 0) and np.all(olds * 8 == np.round(olds * 8))
    as_f32 = lambda bits: (bits.astype(np.uint32) << 16).view(np.float32)
    assert np.array_equal(as_f32(b), y.reshape(-1, 4).sum(axis=0))   # no update lost
    bf = as_f32(b2)
    assert bf[0] == y.sum()
    # 0.5 steps stop changing the sum at 128 (128 + 0.5 rounds back to 128, to even),
    # whatever the order
    assert bf[1] == 128.0


SCOPED = r'''
.version 8.0
.target sm_80
.address_size 64
.visible .entry scoped(.param .u64 out) {
  .reg .b32 %r<4>; .reg .b64 %rd<2>; .reg .b16 %rs<2>;
  ld.param.u64 %rd1, [out];
  { .reg .b16 c; mov.b16 c, 0x1234; mov.b16 %rs1, c; }
  { .reg .b32 c; mov.b32 c, 0x56789abc; mov.b32 %r1, c; }
  cvt.u32.u16 %r2, %rs1;
  st.global.u32 [%rd1], %r2;
  st.global.u32 [%rd1+4], %r1;
  ret;
}'''


def test_registers_of_nested_scopes_are_separate():
    k = dptx.RawModule(ptx=SCOPED).get_function("scoped")
    out = np.zeros(2, np.uint32)
    cpu.launch(k, 1, 1, [out])
    assert [hex(v) for v in out] == ["0x1234", "0x56789abc"]


def test_globaltimer_is_nanoseconds_of_real_time():
    import time
    k = dptx.RawModule(ptx=r'''
.version 8.0
.target sm_80
.address_size 64
.visible .entry timer(.param .u64 out) {
  .reg .b64 %rd<4>; .reg .b32 %r<3>;
  ld.param.u64 %rd1, [out];
  mov.u64 %rd2, %globaltimer;
  mov.u32 %r1, %globaltimer_lo;
  mov.u32 %r2, %globaltimer_hi;
  st.global.u64 [%rd1], %rd2;
  st.global.u32 [%rd1+8], %r1;
  st.global.u32 [%rd1+12], %r2;
  ret;
}''').get_function("timer")
    out = np.zeros(2, np.uint64)
    before = time.time_ns()
    cpu.launch(k, 1, 1, [out])
    after = time.time_ns()
    assert before <= int(out[0]) <= after
    assert abs(int(out[1]) - int(out[0])) < 10**9     # lo/hi read a moment later


VECTOR_REGISTERS = r'''
.version 8.0
.target sm_80
.address_size 64
.visible .entry vr(.param .u64 a, .param .u64 out) {
  .reg .v4 .f32 %v<2>;
  .reg .v2 .u32 %w;
  .reg .b64 %rd<5>; .reg .b32 %r<3>; .reg .f32 %f<3>;
  ld.param.u64 %rd1, [a]; ld.param.u64 %rd2, [out];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd3, %r1, 16;
  add.s64 %rd4, %rd1, %rd3;
  ld.global.v4.f32 %v0, [%rd4];
  add.f32 %v1.x, %v0.w, %v0.x;
  mul.f32 %v1.y, %v0.y, 0f40000000;
  mov.f32 %v1.z, %v0.b;
  mov.f32 %v1.a, 0f3F800000;
  mov.v2.u32 %w, {%r1, %r1};
  add.s64 %rd4, %rd2, %rd3;
  st.global.v4.f32 [%rd4], %v1;
  ret;
}'''


def test_vector_registers_and_their_components():
    """``.reg .v4 .f32 %v``: whole-register ld/st.v4, components .x/.y/.z/.w and .r/.g/.b/.a."""
    k = dptx.RawModule(ptx=VECTOR_REGISTERS).get_function("vr")
    assert not executor.compile_kernel(k).vector
    a = np.arange(32 * 4, dtype=np.float32).reshape(32, 4)
    out = np.zeros_like(a)
    cpu.launch(k, 1, 32, [a, out])
    want = np.stack([a[:, 3] + a[:, 0], a[:, 1] * 2, a[:, 2], np.ones(32, np.float32)], 1)
    assert np.array_equal(out, want)


def test_an_access_just_before_a_buffer_names_that_buffer():
    """d[i - 128] with d the fourth argument is 512 bytes before d, not 2^40 - 512 bytes into
    the third argument (whose window lies just below)."""
    src = r'''extern "C" __global__ void k(float* a, float* b, float* c, float* d, int n) {
        int i = threadIdx.x; d[i - 128] = a[i] + b[i] + c[i]; }'''
    k = dptx.RawModule(src).get_function("k")
    arrays = [np.ones(64, np.float32) for _ in range(4)]
    with pytest.raises(dptx.DptxMemoryError) as e:
        cpu.launch(k, (1,), (64,), [*arrays, np.int32(64)])
    assert "is 512 bytes before the start of argument 3 (d) (256 bytes)" in str(e.value)
    assert "thread 0 " in str(e.value) and "into argument 2" not in str(e.value)
