"""Views (basic slicing of a C-contiguous dptx array) share their array's buffer; a kernel
given one receives the buffer's pointer plus the view's offset (CUDA's d_ptr + n), may reach
the whole allocation as on a GPU, and bounds errors name the view."""
import numpy as np
import pytest

import dptx

SRC = r'''
extern "C" __global__ void uniform_add(float* data, const float* sums, int n) {
    // the CUDA samples' scan: uniform_add(d_data + blockSize, d_sums, ...)
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) data[i] += sums[blockIdx.x];
}
extern "C" __global__ void back(float* p) { p[-1 - (int)threadIdx.x] = 7.0f; }
extern "C" __global__ void over(float* p, int n) { p[n + threadIdx.x] = 7.0f; }
extern "C" __global__ void pair(const float* a, float* b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) b[i] = a[i] * 2.0f;
}
'''


@pytest.fixture(scope="module")
def mod():
    return dptx.RawModule(SRC)


def test_a_kernel_on_a_view_writes_the_base_array(client, mod):
    host = np.arange(16 * 1024, dtype=np.float32)
    d = dptx.asarray(host)
    sums = dptx.asarray(np.arange(64, dtype=np.float32) * 1000)
    view = d[1024:]
    assert view.shape == (15 * 1024,) and view.base is d and view.nbytes == 15 * 4096
    mod.get_function("uniform_add")((60,), (256,), (view, sums, np.int32(15 * 1024)))
    want = host.copy()
    want[1024:] += np.repeat(np.arange(60, dtype=np.float32) * 1000, 256)
    np.testing.assert_array_equal(d.get(), want)
    np.testing.assert_array_equal(view.get(), want[1024:])


def test_views_of_one_buffer_as_two_arguments(client, mod):
    host = np.arange(8192, dtype=np.float32)
    d = dptx.asarray(host)
    mod.get_function("pair")((16,), (256,), (d[:4096], d[4096:], np.int32(4096)))
    want = host.copy()
    want[4096:] = host[:4096] * 2
    np.testing.assert_array_equal(d.get(), want)


def test_rows_setitem_fill_and_copy(client):
    host = np.arange(100 * 50, dtype=np.float32).reshape(100, 50)
    m = dptx.asarray(host)
    np.testing.assert_array_equal(m[10:20].get(), host[10:20])
    np.testing.assert_array_equal(m[7].get(), host[7])
    assert m[7, 3].shape == () and m[7, 3].get() == host[7, 3]
    m[3] = 0
    m[5:7] = np.ones((2, 50), np.float32)
    m[8:10, :] = dptx.full((2, 50), 4.0, np.float32)
    c = m[90:].copy()
    m[90:] = -1
    want = host.copy()
    want[3], want[5:7], want[8:10], want[90:] = 0, 1, 4, -1
    np.testing.assert_array_equal(m.get(), want)
    np.testing.assert_array_equal(c.get(), host[90:])
    assert c.base is None


def test_a_view_reaches_back_into_its_allocation_as_on_a_gpu(client, mod):
    d = dptx.zeros(4096, np.float32)
    mod.get_function("back")((1,), (4,), (d[100:],))
    got = d.get()
    np.testing.assert_array_equal(got[96:100], np.full(4, 7, np.float32))
    assert got[:96].sum() == 0 and got[100:].sum() == 0


@pytest.mark.cpu_workers("a small overrun is caught by the CPU executor's bounds checks; a GPU "
                         "(and the stand-in) lets it land in padding")
def test_an_overrun_from_a_view_names_the_view(client, mod):
    d = dptx.zeros(4096, np.float32)
    mod.get_function("over")((1,), (4,), (d[4000:], np.int32(94)))
    with pytest.raises(dptx.DptxMemoryError) as info:
        d.get()
    text = str(info.value)
    assert "kernel over" in text and "thread 2" in text
    assert "argument 0 (p, 16000 bytes into a 16384-byte array)" in text


def test_indexing_that_is_not_contiguous_makes_a_strided_view(client):
    a = dptx.zeros((10, 8), np.float32)
    h = np.zeros((10, 8), np.float32)
    for key in [slice(None, None, 2), (slice(None), slice(1, 3))]:
        assert a[key].strides == h[key].strides and not a[key].flags.c_contiguous
        assert a[key].base is a
    assert a[[1, 2]].base is None           # integer arrays gather a new array, as numpy
    with pytest.raises(IndexError, match="shape \\(10, 8\\)"):
        a[10]
