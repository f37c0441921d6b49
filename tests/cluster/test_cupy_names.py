"""CuPy's ``cupy.cuda`` names on dptx's virtual GPU, and ``cupy.testing``: CuPy code that
times, synchronizes, asks about its device and checks its results runs as it is
(``import dptx as cp``)."""
import gc

import numpy as np
import pytest

import dptx
import dptx as cp

pytestmark = pytest.mark.cpu_workers("names over streams, events and buffers, which other "
                                     "tests run on GPUs")


def test_cupy_timing_and_synchronization_code_runs(client):
    x = cp.arange(1 << 16, dtype=np.float32)
    start, end = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    y = x * 2 + 1
    end.record()
    end.synchronize()
    assert cp.cuda.get_elapsed_time(start, end) >= 0
    for wait in (cp.cuda.Stream.null.synchronize, cp.cuda.Device().synchronize,
                 cp.cuda.Device(0).synchronize, cp.cuda.runtime.deviceSynchronize):
        z = y + 1
        wait()
        assert cp.cuda.Stream.null.done        # the launch finished: the wait waited
        np.testing.assert_array_equal(z.get(), np.arange(1 << 16, dtype=np.float32) * 2 + 2)
    with cp.cuda.Device(0):
        with cp.cuda.Stream() as s:
            assert cp.cuda.get_current_stream() is s is cp.cuda.stream.get_current_stream()
            w = cp.ones(8) + 1
        s.synchronize()
    assert cp.cuda.get_current_stream() is cp.cuda.Stream.null
    np.testing.assert_array_equal(w.get(), np.full(8, 2.0))


def test_the_cluster_is_device_0(client):
    assert cp.cuda.runtime.getDeviceCount() == 1 and cp.cuda.runtime.getDevice() == 0
    assert cp.cuda.Device().id == 0 and cp.cuda.Device() == cp.cuda.Device(0)
    assert cp.cuda.Device().compute_capability == "80"     # the arch NVRTC compiles for
    cp.cuda.runtime.setDevice(0)
    cp.cuda.Device(0).use()
    for bad in (lambda: cp.cuda.Device(1), lambda: cp.cuda.runtime.setDevice(2)):
        with pytest.raises(dptx.DptxError, match="invalid device ordinal"):
            bad()


def test_memory_pool_counts_the_live_arrays(client):
    pool = cp.get_default_memory_pool()
    gc.collect()
    before = pool.used_bytes()
    a = cp.zeros(1000, np.float64)
    view = a[::2]
    b = cp.ones((10, 10), np.int32)
    assert pool.used_bytes() - before == 8000 + 400     # a view holds no memory of its own
    assert pool.total_bytes() == pool.used_bytes() and pool.n_free_blocks() == 0
    del a, view
    gc.collect()
    assert pool.used_bytes() - before == 400
    pool.free_all_blocks()
    cp.get_default_pinned_memory_pool().free_all_blocks()
    assert b.sum().get() == 100
    with pytest.raises(dptx.DptxError, match="memory-limit"):
        pool.set_limit(size=1 << 30)


def test_cupy_testing_assertions(client):
    a = cp.arange(4, dtype=np.float32)
    cp.testing.assert_array_equal(a, np.arange(4, dtype=np.float32))
    cp.testing.assert_allclose(a + 1e-6, np.arange(4), rtol=0, atol=1e-5)
    cp.testing.assert_array_almost_equal(a, a + 1e-8)
    cp.testing.assert_array_less(a, a + 1)
    cp.testing.assert_array_max_ulp(a, a)
    cp.testing.assert_array_list_equal([a, cp.ones(2)], [np.arange(4), np.ones(2)])
    for failing in (lambda: cp.testing.assert_array_equal(a, a + 1),
                    lambda: cp.testing.assert_allclose(a, a * 2, rtol=1e-3),
                    lambda: cp.testing.assert_array_list_equal([a], [a, a]),
                    lambda: cp.testing.assert_array_less(a, a)):
        with pytest.raises(AssertionError):
            failing()
