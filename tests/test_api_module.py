"""dptx.RawModule / dptx.RawKernel: NVRTC compilation, PTX and files, parameters, facts."""
import os
import shutil
import time

import pytest

import dptx
from dptx.runtime import nvrtc

SAXPY = r'''
struct Params { float a; int n; double bias; };
__device__ __noinline__ float twice(float x) { return 2.0f * x; }
extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
extern "C" __global__ void with_struct(Params p, float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < p.n) y[i] = twice(p.a) + (float)p.bias;
}
extern "C" __global__ void __launch_bounds__(128) reduce_sum(const float* x, float* out) {
    __shared__ float s[128];
    s[threadIdx.x] = x[blockIdx.x * 128 + threadIdx.x];
    __syncthreads();
    float v = s[threadIdx.x];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
    if ((threadIdx.x & 31) == 0) atomicAdd(out, v);
}
'''


@pytest.fixture(scope="module")
def module():
    return dptx.RawModule(SAXPY)


def test_kernels_and_params(module):
    assert module.kernel_names == ["saxpy", "with_struct", "reduce_sum"]
    k = module.get_function("saxpy")
    assert isinstance(k, dptx.RawKernel) and k.name == "saxpy"
    assert [(p.type, p.size, p.offset, p.is_pointer) for p in k.params] == [
        ("f32", 4, 0, False), ("u64", 8, 8, True), ("u64", 8, 16, True), ("u32", 4, 24, False)]
    assert k.param_size == 28
    s = module.get_function("with_struct")
    # a struct by value is a byte array aligned to its strictest member
    assert [(p.type, p.size, p.offset, p.align) for p in s.params] == [
        ("b8", 16, 0, 8), ("u64", 8, 16, 8)]
    assert module.get_function("saxpy") is k  # cached


def test_static_facts(module):
    saxpy = module.get_function("saxpy")
    assert not (saxpy.uses_barriers or saxpy.uses_warp_ops or saxpy.uses_atomics)
    assert saxpy.static_shared_bytes == 0 and not saxpy.uses_calls
    st = module.get_function("with_struct")
    assert st.uses_calls and not st.uses_barriers
    red = module.get_function("reduce_sum")
    assert red.uses_barriers and red.uses_warp_ops and red.uses_atomics
    assert red.static_shared_bytes == 128 * 4
    assert red.maxntid == (128, 1, 1)


def test_local_memory_printf_recursion():
    m = dptx.RawModule(r'''
    __device__ __noinline__ int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
    extern "C" __global__ void k(int* out, const int* idx) {
        int local[32];
        for (int i = 0; i < 32; i++) local[i] = i * threadIdx.x;
        out[threadIdx.x] = local[idx[threadIdx.x] & 31] + fib(threadIdx.x & 7);
        printf("thread %d\n", threadIdx.x);
    }''')
    k = m.get_function("k")
    assert k.uses_local_memory and k.local_bytes > 0
    assert k.uses_printf and k.uses_calls and k.recursive


def test_unknown_kernel_lists_kernels(module):
    with pytest.raises(dptx.KernelNotFoundError) as info:
        module.get_function("sxapy")
    assert "sxapy" in str(info.value) and "saxpy, with_struct, reduce_sum" in str(info.value)
    assert isinstance(info.value, dptx.DptxError)


def test_cxx_kernel_found_by_its_source_name():
    m = dptx.RawModule("__global__ void plain(int* a) { a[0] = 1; }")
    k = m.get_function("plain")
    assert k.name == "_Z5plainPi" and k.title == "plain"


def test_compile_error_carries_log():
    with pytest.raises(dptx.CompileError) as info:
        dptx.RawModule('extern "C" __global__ void k(int* a) { a[0] = undefined_name; }')
    assert "undefined_name" in info.value.log
    assert "identifier" in info.value.log


def test_rawkernel_like_cupy():
    k = dptx.RawKernel('extern "C" __global__ void neg(int* a) { a[threadIdx.x] = -a[threadIdx.x]; }', "neg")
    assert k.name == "neg" and len(k.params) == 1
    with pytest.raises(dptx.KernelNotFoundError):
        dptx.RawKernel('extern "C" __global__ void neg(int* a) {}', "pos")


def test_ptx_and_path(tmp_path, module):
    by_ptx = dptx.RawModule(ptx=module.ptx)
    assert by_ptx.kernel_names == module.kernel_names
    assert by_ptx.module == module.module
    p = tmp_path / "k.ptx"
    p.write_text(module.ptx)
    assert dptx.RawModule(path=str(p)).module == module.module
    cu = tmp_path / "k.cu"
    cu.write_text(SAXPY)
    assert dptx.RawModule(path=cu).kernel_names == module.kernel_names
    with pytest.raises(dptx.DptxError, match="exactly one"):
        dptx.RawModule(SAXPY, ptx=module.ptx)
    with pytest.raises(dptx.PtxSyntaxError):
        dptx.RawModule(ptx=".version 7.0\n.entry k( {")


def test_options_and_arch_change_the_ptx():
    src = 'extern "C" __global__ void k(float* a) { a[0] = a[1] / a[2]; }'
    precise = dptx.RawModule(src).ptx
    fast = dptx.RawModule(src, options=("--use_fast_math",)).ptx
    assert "div.rn.f32" in precise and "div.rn.f32" not in fast
    assert ".target sm_90" in dptx.RawModule(src, arch="compute_90").ptx


def test_ptx_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DPTX_CACHE_DIR", str(tmp_path))
    src = 'extern "C" __global__ void cached_%d(int* a) { a[0] = %d; }' % (os.getpid(), time.time_ns() % 1000)
    calls = []
    real = nvrtc._compile
    monkeypatch.setattr(nvrtc, "_compile", lambda *a: calls.append(a) or real(*a))
    first = nvrtc.compile_to_ptx(src)
    assert len(calls) == 1 and list(tmp_path.rglob("*.ptx"))
    nvrtc._memory_cache.clear()
    assert nvrtc.compile_to_ptx(src) == first        # from the disk cache
    assert nvrtc.compile_to_ptx(src) == first        # from memory
    assert len(calls) == 1
    nvrtc.compile_to_ptx(src, options=("-lineinfo",))  # other options: another entry
    assert len(calls) == 2


def test_no_nvcc_needed(monkeypatch, tmp_path):
    """NVRTC comes from PyPI: hide any nvcc and compile a new source."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setenv("DPTX_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    assert shutil.which("nvcc") is None
    src = '#include <cuda_fp16.h>\nextern "C" __global__ void h(__half* a) { a[0] = __hadd(a[1], a[2]); }'
    nvrtc._memory_cache.clear()
    m = dptx.RawModule(src + "\n// %d" % time.time_ns())
    assert m.kernel_names == ["h"]
