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


def test_argument_conversion_and_errors():
    k = dptx.RawModule(IDS).get_function("ids")
    out = np.zeros(32, np.int32)
    cpu.launch(k, 1, 32, [out, np.int32(-5)])
    assert out[0] == -5
    with pytest.raises(dptx.LaunchError, match=r"argument 1 \(ids_param_1: .u32\).*float"):
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
