"""Which launches can be split into chunks and merged (pointer provenance of global writes)."""
import pytest

import dptx
from dptx.ptx.analysis import merge_facts


def facts(src, name="h"):
    m = dptx.RawModule(src)
    return merge_facts(m.module, m.get_function(name).function)


def test_histogram_is_a_reduction_on_its_param():
    f = facts('extern "C" __global__ void h(const int* d, unsigned* hist, int n) {'
              ' int i = blockIdx.x * blockDim.x + threadIdx.x;'
              ' if (i < n) atomicAdd(&hist[d[i] & 15], 1u); }')
    assert f.mergeable and f.reductions == {("param", 1): ("add", "u32")}
    assert f.written == {("param", 1)}


@pytest.mark.parametrize("call, op", [("atomicMin(p, v[i])", ("min", "s32")),
                                      ("atomicMax(p, v[i])", ("max", "s32")),
                                      ("atomicAnd(p, v[i])", ("and", "b32")),
                                      ("atomicOr(p, v[i])", ("or", "b32")),
                                      ("atomicXor(p, v[i])", ("xor", "b32")),
                                      ("atomicAdd((float*)p, 1.0f)", ("add", "f32")),
                                      ("atomicInc((unsigned*)p, 0xffffffffu)", ("add", "u32"))])
def test_reducible_atomics(call, op):
    f = facts('extern "C" __global__ void h(const int* v, int* p) {'
              ' int i = threadIdx.x; %s; }' % call)
    assert f.mergeable and f.reductions == {("param", 1): op}


@pytest.mark.parametrize("body, reason", [
    ("atomicExch(p, 1);", "cannot be merged"),
    ("atomicCAS(p, 0, 1);", "cannot be merged"),
    ("q[threadIdx.x] = atomicAdd(p, 1);", "returned"),
    ("atomicInc((unsigned*)p, 7u);", "wraps at a bound"),
    ("atomicAdd(p, 1); p[threadIdx.x + 1] = 0;", "plain stores and atomics"),
    ("q[0] = 1; __threadfence(); atomicAdd(p, 1);", "orders memory"),
    ("while (*(volatile int*)p == 0) {}", "reads memory other blocks may write"),
    ("atomicAdd((int*)(*(long long*)q), 1);", "unknown origin"),
])
def test_unmergeable(body, reason):
    f = facts('extern "C" __global__ void h(int* p, int* q) { %s }' % body)
    assert not f.mergeable and reason in f.reason


def test_shared_atomics_and_globals():
    f = facts('__device__ int g; extern "C" __global__ void h(int* a) {'
              ' __shared__ int s; atomicAdd(&s, 1); __syncthreads(); a[threadIdx.x] = s;'
              ' atomicAdd(&g, 2); }')
    assert f.mergeable and f.reductions == {("var", "g"): ("add", "u32")}
    assert f.written == {("param", 0), ("var", "g")}


def test_read_only_params_are_not_written():
    f = facts('extern "C" __global__ void h(const float* x, float* y, const float* z) {'
              ' y[threadIdx.x] = x[threadIdx.x] + z[0]; }')
    assert f.mergeable and f.written == {("param", 1)}


def test_device_function_stores_make_every_buffer_written():
    f = facts('__device__ __noinline__ void put(float* p, float v) { *p = v; }'
              'extern "C" __global__ void h(const float* x, float* y) { put(y + threadIdx.x, x[0]); }')
    assert f.mergeable and f.written is None
