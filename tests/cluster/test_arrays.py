"""dptx.ndarray and the creation functions, on the cluster."""
import dask.config
import numpy as np
import pytest

import dptx


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8, np.uint16, np.int64,
                                   np.complex64])
def test_round_trip(client, dtype):
    host = (np.arange(1000) * 3 - 7).astype(dtype).reshape(10, 100)
    a = dptx.asarray(host)
    assert isinstance(a, dptx.ndarray)
    assert a.shape == (10, 100) and a.dtype == np.dtype(dtype) and a.ndim == 2
    assert a.size == 1000 and a.nbytes == host.nbytes and len(a) == 10
    out = a.get()
    assert out.dtype == host.dtype and np.array_equal(out, host)
    assert np.array_equal(np.asarray(a), host)
    assert np.array_equal(dptx.asnumpy(a), host)


def test_creation_functions(client):
    assert np.array_equal(dptx.zeros((3, 4), np.int32).get(), np.zeros((3, 4), np.int32))
    assert np.array_equal(dptx.ones(5).get(), np.ones(5))
    assert dptx.ones(5).dtype == np.float64  # numpy/CuPy default
    assert np.array_equal(dptx.full((2, 2), 7.5, np.float32).get(), np.full((2, 2), 7.5, np.float32))
    assert np.array_equal(dptx.full(3, -1, np.int16).get(), np.full(3, -1, np.int16))
    # numpy's full: the value broadcast (a column fills rows), converted as copyto's unsafe
    # cast (a float -1.5 into uint8 is 255), numpy's error where it does not broadcast
    for shape, value, dtype in (((3, 4), [[1], [2], [3]], np.float32), ((2, 3), [4, 5, 6], None),
                                ((4,), -1.5, np.uint8), ((2, 1, 3), [[[7, 8, 9]]], np.int16)):
        want = np.full(shape, value, dtype)
        got = dptx.full(shape, value, dtype).get()
        assert got.dtype == want.dtype and np.array_equal(got, want), (shape, value)
    with pytest.raises(ValueError, match=r"from shape \(2,\) into shape \(3,3\)"):
        dptx.full((3, 3), [1, 2])
    # an allocation past the address space is numpy's error; past the cluster's memory (its
    # workers' memory limits) an OutOfMemoryError at once, as CuPy's (the chunks that would
    # touch it failed, after their workers died, or the fill was lazy and nothing said so)
    with pytest.raises(ValueError, match="array is too big"):
        dptx.zeros(2**62)
    with pytest.raises(dptx.OutOfMemoryError, match="out of memory allocating"):
        dptx.empty(2**50, np.uint8)
    assert issubclass(dptx.OutOfMemoryError, MemoryError)
    src = dptx.asarray(np.arange(6, dtype=np.uint8))
    assert dptx.empty_like(src).shape == (6,) and dptx.empty_like(src).dtype == np.uint8
    assert np.array_equal(dptx.zeros_like(src).get(), np.zeros(6, np.uint8))
    assert dptx.empty((0,), np.float32).get().shape == (0,)
    assert dptx.array([1, 2, 3], dtype=np.float32).get().tolist() == [1.0, 2.0, 3.0]
    scalar = dptx.asarray(np.float64(2.5))
    assert scalar.shape == () and scalar.get() == 2.5


def test_set_fill_copy_are_independent(client):
    a = dptx.asarray(np.arange(10, dtype=np.int32))
    b = a.copy()
    a.fill(4)
    assert np.array_equal(a.get(), np.full(10, 4, np.int32))
    assert np.array_equal(b.get(), np.arange(10, dtype=np.int32))
    b.set(np.arange(10, 20, dtype=np.int32))
    assert np.array_equal(b.get(), np.arange(10, 20, dtype=np.int32))
    with pytest.raises(dptx.DptxError, match="shape"):
        b.set(np.zeros(3, np.int32))
    assert dptx.asarray(a) is a
    assert dptx.array(a) is not a


def test_large_arrays_spread_over_workers(client):
    """A large upload goes straight to the workers in pieces, one per worker, each kept on two
    workers; launches and copies work across the pieces' boundaries."""
    host = np.random.default_rng(0).standard_normal(200_000).astype(np.float32)
    a = dptx.asarray(host)
    pieces = a._buffer.pieces.pieces
    assert len(pieces) == 2 and pieces[0].end == pieces[1].start
    assert {p.worker for p in pieces} == set(client.nthreads())
    assert all(p.future.key.startswith("dptx-host-") for p in pieces)
    holders = client.who_has([p.future for p in pieces])
    assert all(len(h) == 2 for h in holders.values()), holders
    k = dptx.RawModule(r'''extern "C" __global__ void twice(float* x, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= 2.0f; }''')
    with dask.config.set({"dptx.chunks": 8}):
        k.get_function("twice")((800,), (256,), (a, np.int32(200_000)))
    assert np.array_equal(a.get(), host * np.float32(2))
    assert np.array_equal(a.copy().get(), host * np.float32(2))


def test_repr(client):
    a = dptx.asarray(np.array([1.5, 2.0], np.float32))
    assert repr(a) == "dptx.ndarray([1.5, 2. ], dtype=float32)"
    big = dptx.zeros(5000, np.int8)
    assert repr(big) == "<dptx.ndarray shape=(5000,) dtype=int8>"


def test_memcpys_are_tasks(client):
    a = dptx.asarray(np.arange(4, dtype=np.int32))
    b = a.copy()
    keys = [p.future.key for p in a._buffer.pieces.pieces + b._buffer.pieces.pieces]
    assert keys[0].startswith("dptx-htod-") and keys[1].startswith("dptx-copy-")
    b.get()
