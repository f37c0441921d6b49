"""``a.data.ptr`` on the cluster, as CuPy's users write it: a pointer parameter given the
number, a struct by value whose fields point into arrays (Warp's arrays, ``struct { float* p;
int n; }``), pointers into the middle of an array, atomics through such pointers over many
chunks, and the errors for a freed array or an address outside one. Results against numpy."""
import gc

import numpy as np
import pytest

import dptx
from dptx.errors import LaunchError

SOURCE = r'''
struct View { float* p; int n; float scale; };
struct Pair { const float* x; float* y; long long n; };
struct Counts { unsigned int* bins; const int* keys; int n; };
extern "C" __global__ void scale(View v) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < v.n) v.p[i] *= v.scale;
}
extern "C" __global__ void axpy(Pair a, float k) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < a.n) a.y[i] += a.x[i] * k;
}
extern "C" __global__ void histogram(Counts c) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < c.n) atomicAdd(&c.bins[c.keys[i]], 1u);
}
extern "C" __global__ void add(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += x[i];
}
'''
VIEW = np.dtype([("p", "<u8"), ("n", "<i4"), ("scale", "<f4")], align=True)
PAIR = np.dtype([("x", "<u8"), ("y", "<u8"), ("n", "<i8")])
COUNTS = np.dtype([("bins", "<u8"), ("keys", "<u8"), ("n", "<i4")], align=True)


@pytest.fixture(scope="module")
def module():
    return dptx.RawModule(SOURCE)


def test_data_ptr_is_stable_and_moves_by_bytes():
    a = dptx.zeros(10, np.float32)
    assert a.data.ptr == a.data.ptr == int(a.data)
    assert (a.data + 12).ptr == a.data.ptr + 12 == a[3:].data.ptr
    assert dptx.zeros(1).data.ptr != a.data.ptr


def test_struct_with_a_pointer(client, chunks8, module):
    n = 10_000
    host = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    a = dptx.asarray(host)
    view = np.array((a.data.ptr, n, 2.5), dtype=VIEW)
    module.get_function("scale")(((n + 255) // 256,), (256,), (view[()],))
    assert np.array_equal(a.get(), host * np.float32(2.5))
    # the struct's bytes alone do too (every 8-byte word is looked at)
    module.get_function("scale")(((n + 255) // 256,), (256,), (view.tobytes(),))
    assert np.array_equal(a.get(), host * np.float32(2.5) * np.float32(2.5))


def test_two_pointers_one_into_the_middle(client, chunks8, module):
    n = 5000
    hx = np.arange(2 * n, dtype=np.float32)
    x, y = dptx.asarray(hx), dptx.ones(n, np.float32)
    pair = np.array([((x.data + 4 * n).ptr, y.data.ptr, n)], dtype=PAIR)   # a 1-element array
    module.get_function("axpy")(((n + 127) // 128,), (128,), (pair, np.float32(3)))
    assert np.array_equal(y.get(), 1 + hx[n:] * np.float32(3))
    assert np.array_equal(x.get(), hx)


def test_atomics_through_struct_pointers_over_chunks(client, chunks8, module):
    n, bins = 20_000, 64
    keys = np.random.default_rng(2).integers(0, bins, n).astype(np.int32)
    counts = dptx.zeros(bins, np.uint32)
    k = dptx.asarray(keys)
    arg = np.array((counts.data.ptr, k.data.ptr, n), dtype=COUNTS)
    module.get_function("histogram")(((n + 255) // 256,), (256,), (arg[()],))
    assert np.array_equal(counts.get(), np.bincount(keys, minlength=bins))


def test_pointer_parameter_takes_data_ptr(client, chunks8, module):
    n = 3000
    x, y = dptx.arange(n, dtype=np.float32), dptx.ones(n, np.float32)
    module.get_function("add")(((n + 255) // 256,), (256,), (x.data.ptr, y.data, n))
    assert np.array_equal(y.get(), 1 + np.arange(n, dtype=np.float32))
    module.get_function("add")((1,), (256,), ((x.data + 4).ptr, y, 10))
    assert np.array_equal(y.get()[:10], 1 + 2 * np.arange(10, dtype=np.float32) + 1)


def test_freed_and_outside_addresses_are_errors(client, module):
    a = dptx.zeros(100, np.float32)
    gone = a.data.ptr
    a.get()         # (until its fill has run, the stream holds the buffer)
    del a
    gc.collect()
    with pytest.raises(LaunchError, match="no live dptx array"):
        module.get_function("scale")((1,), (128,), (np.array((gone, 100, 1.0), VIEW)[()],))
    b = dptx.zeros(100, np.float32)
    with pytest.raises(LaunchError, match=r"argument 0 \(x\) of kernel add: the address is "
                                          r"404 bytes into a 400-byte array, outside it"):
        module.get_function("add")((1,), (128,), (b.data + 404, b, 1))
    for past in (404, 1 << 50):     # past the array, in the gap after it or far away
        with pytest.raises(LaunchError, match="is the address of no live dptx array"):
            module.get_function("add")((1,), (128,), (b.data.ptr + past, b, 1))
