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


def test_uploads_take_the_bytes_at_the_call(client):
    """``asarray`` and ``set`` copy what the array holds when called (cudaMemcpy's contract):
    the program may change its array at once. Small uploads travel as a task's argument,
    serialized later, when the client's event loop writes the message: they used to pick up
    the change (39 of 40 such uploads read the later values)."""
    for n in (1000, 100_000):           # below and above graphs.memcpy.SMALL_BYTES
        for _ in range(5):
            h, h2 = np.arange(float(n)), np.arange(float(n))
            d, e = dptx.asarray(h), dptx.zeros(n)
            e.set(h2)
            h[:], h2[:] = -1, 5
            assert np.array_equal(d.get(), np.arange(float(n)))
            assert np.array_equal(e.get(), np.arange(float(n)))


def test_repr(client):
    a = dptx.asarray(np.array([1.5, 2.0], np.float32))
    assert repr(a) == "dptx.ndarray([1.5, 2. ], dtype=float32)"
    big = dptx.zeros(5000, np.int8)
    assert repr(big) == "dptx.ndarray([0, 0, 0, ..., 0, 0, 0], shape=(5000,), dtype=int8)"


def test_memcpys_are_tasks(client):
    a = dptx.asarray(np.arange(4, dtype=np.int32))
    b = a.copy()
    keys = [p.future.key for p in a._buffer.pieces.pieces + b._buffer.pieces.pieces]
    assert keys[0].startswith("dptx-htod-") and keys[1].startswith("dptx-copy-")
    b.get()


# views of a (2, 3, 4) array whose layouts a new array may follow: C, F, axes permuted, a
# strided permuted view, negative strides, a broadcast, one with axes of length 1
LAYOUTS = {
    "C": lambda m, x: x,
    "F": lambda m, x: m.asfortranarray(x),
    "permuted": lambda m, x: x.transpose(2, 0, 1),
    "strided": lambda m, x: x[:, ::2].transpose(2, 0, 1),
    "reversed": lambda m, x: x[::-1].transpose(2, 0, 1),
    "broadcast": lambda m, x: m.broadcast_to(x[0, 0], (5, 4)),
    "ones axis": lambda m, x: x[:1].T,
}


def _same_layout(got, want):
    """Values, dtype and shape as numpy's, and the elements placed alike (the stride of an
    axis of length 1 is never used)."""
    assert (got.shape, got.dtype) == (want.shape, want.dtype)
    assert [s for s, n in zip(got.strides, got.shape) if n > 1] == \
        [s for s, n in zip(want.strides, want.shape) if n > 1], (got.strides, want.strides)
    assert (got.flags.c_contiguous, got.flags.f_contiguous) == \
        (want.flags.c_contiguous, want.flags.f_contiguous)
    np.testing.assert_array_equal(got.get(), want)


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_new_arrays_are_laid_out_as_numpys(client, cluster_kind, layout):
    """``order=`` in creation, ``*_like``, copies, ``array`` and ``astype``: the strides numpy
    gives ("K" keeps the prototype's order of axes, "A" is F for an F-contiguous one; a
    conversion with "A" follows the source's order, as numpy's), computed on the devices."""
    if cluster_kind == "mixed" and layout not in ("F", "strided"):
        pytest.skip("the same launches as the F and strided cases run on the mixed cluster")
    x = np.arange(24.0).reshape(2, 3, 4)
    p, d = LAYOUTS[layout](np, x), LAYOUTS[layout](dptx, dptx.asarray(x))
    for order in "CFAK":
        _same_layout(dptx.empty_like(d, order=order), np.zeros_like(p, order=order))
        _same_layout(dptx.ones_like(d, np.int16, order=order),
                     np.ones_like(p, np.int16, order=order))
        _same_layout(dptx.full_like(d, 7, order=order, shape=p.shape[::-1]),
                     np.full_like(p, 7, order=order, shape=p.shape[::-1]))
        _same_layout(dptx.copy(d, order=order), np.copy(p, order=order))
        _same_layout(d.copy(order=order), p.copy(order=order))
        _same_layout(dptx.array(d, order=order), np.array(p, order=order))
        _same_layout(dptx.array(p, order=order), np.array(p, order=order))   # uploaded
        _same_layout(dptx.array(d, np.float32, order=order),
                     np.array(p, np.float32, order=order))
        _same_layout(dptx.array(d, order=order, ndmin=4), np.array(p, order=order, ndmin=4))
        _same_layout(d.astype(np.int32, order=order), p.astype(np.int32, order=order))
        for to in "CFA":
            got, want = d.get(order=to), p.copy(order=to)
            assert got.strides == want.strides and np.array_equal(got, want)
        assert d.tobytes(order) == p.tobytes(order)
    _same_layout(dptx.asfortranarray(d), np.asfortranarray(p))
    _same_layout(dptx.ascontiguousarray(d), np.ascontiguousarray(p))
    out = np.empty(p.shape)
    assert d.get(out=out) is out and np.array_equal(out, p)


def test_creation_in_fortran_order(client):
    for shape in [(2, 3), (3, 1, 2), (4,), ()]:
        for order in "CF":
            _same_layout(dptx.zeros(shape, np.int8, order=order), np.zeros(shape, np.int8, order))
            _same_layout(dptx.empty(shape, order=order), np.zeros(shape, order=order))
            _same_layout(dptx.full(shape, 2.5, np.float32, order),
                         np.full(shape, 2.5, np.float32, order))
            _same_layout(dptx.ones(shape, order=order), np.ones(shape, order=order))
    _same_layout(dptx.full((2, 3), [1, 2, 3], order="F"), np.full((2, 3), [1, 2, 3], order="F"))
    _same_layout(dptx.full((2, 3), [[1], [2]], order="F"), np.full((2, 3), [[1], [2]], order="F"))
    _same_layout(dptx.eye(4, 3, k=1, order="F"), np.eye(4, 3, k=1, order="F"))
    f = dptx.zeros((3, 4), order="F")
    f[1:, ::2] = 5                              # writes through the F layout
    want = np.zeros((3, 4), order="F")
    want[1:, ::2] = 5
    _same_layout(f, want)
    _same_layout(f.reshape(12, order="F"), want.reshape(12, order="F"))
    assert f.reshape(12, order="F")._buffer is f._buffer       # a view, as numpy's
    # ufuncs lay their results out as numpy's nditer does: F operands give an F result (a
    # column-major kernel reads ``2 * f`` as it reads ``f``), an F and a C one a C result
    _same_layout(f * 2 + 1, want * 2 + 1)
    _same_layout(np.sqrt(f[:, ::2]) > 1, np.sqrt(want[:, ::2]) > 1)
    _same_layout(f + dptx.ones((3, 4)), want + np.ones((3, 4)))
    _same_layout(f + dptx.ones(4), want + np.ones(4))
    for order in "CFAK":        # a ufunc's order=
        _same_layout(np.add(f, 1, order=order), np.add(want, 1, order=order))
        _same_layout(dptx.multiply(f.T, 2, order=order), np.multiply(want.T, 2, order=order))
    np.testing.assert_array_equal(f.sum(axis=0).get(), want.sum(axis=0))
    # numpy's errors and numpy 2's copy=False
    for call in (lambda m: m.empty(3, order="K"), lambda m: m.zeros(3, order="x"),
                 lambda m: m.array(m.ones(3), np.float32, copy=False),
                 lambda m: m.array(m.ones((2, 3)), order="F", copy=False),
                 lambda m: m.ones(3).astype(np.int8, casting="safe"),
                 lambda m: m.ones(3).mT):
        with pytest.raises(Exception) as want:
            call(np)
        with pytest.raises(type(want.value)) as got:
            call(dptx)
        assert str(got.value).splitlines()[0] == str(want.value).splitlines()[0]
    d = dptx.ones((2, 3))
    assert dptx.asarray(d) is d and dptx.array(d, copy=False) is d
    assert dptx.asarray(d, order="C") is d and d.astype(np.float64, copy=False) is d
    assert dptx.asfortranarray(5).shape == np.asfortranarray(5).shape == (1,)


def test_kernels_take_fortran_order_arrays(client):
    """A column-major kernel reads an F-contiguous array (``asfortranarray``): the pointer to
    its first element, the elements one column after another, as CuPy passes it."""
    k = dptx.RawModule(r'''extern "C" __global__ void col_sums(const double* a, double* s,
                                                                 int rows, int cols) {
        int j = blockIdx.x * blockDim.x + threadIdx.x;
        if (j < cols) { double t = 0; for (int i = 0; i < rows; i++) t += a[i + j * rows];
                        s[j] = t; } }''').get_function("col_sums")
    host = np.random.default_rng(3).standard_normal((300, 70))
    a, s = dptx.asfortranarray(dptx.asarray(host)), dptx.zeros(70)
    assert a.flags.f_contiguous and not a.flags.c_contiguous
    k((1,), (128,), (a, s, np.int32(300), np.int32(70)))
    np.testing.assert_allclose(s.get(), host.sum(axis=0), rtol=1e-12)
    with pytest.raises(dptx.LaunchError, match="C- or F-contiguous"):
        k((1,), (128,), (a[::2], s, np.int32(150), np.int32(70)))


def test_shape_setter_device_and_truth_values(client):
    """``a.shape = s`` as numpy's (a view in place, numpy's errors where it would need a
    copy or the size differs), the array API's ``device``/``to_device``, numpy 2's error for
    the truth value of an empty array."""
    layouts = (lambda x: x, lambda x: x[::2], lambda x: x.reshape(2, 3).T, lambda x: x[:0],
               lambda x: x[1:5])
    for make in layouts:
        for shape in ((3, 1), (6,), (1, 3), (-1,), (4,), (2, -1), (0, 2), (2, 2), 4):
            h, d = make(np.arange(6.0)), make(dptx.arange(6.0))
            try:
                h.shape = shape
            except (AttributeError, ValueError) as e:
                with pytest.raises(type(e)):
                    d.shape = shape
                continue
            d.shape = shape
            assert d.shape == h.shape and d.strides == h.strides
            np.testing.assert_array_equal(d.get(), h)
    a = dptx.arange(6)
    view = a[1:5]
    view.shape = (2, 2)
    view[0, 0] = 100                                # still a view of a
    assert a.get().tolist() == [0, 100, 2, 3, 4, 5]
    assert a.device == dptx.cuda.Device(0) and a.to_device(a.device) is a
    with pytest.raises(ValueError, match="unsupported device"):
        a.to_device("cpu")
    with pytest.raises(ValueError, match="empty array is ambiguous"):
        bool(a[:0])
    with pytest.raises(ValueError, match="Unable to avoid copy"):
        np.asarray(a, copy=False)           # numpy 2's protocol: the values must travel
    assert np.asarray(a, dtype=np.float32).dtype == np.float32
    with pytest.raises(ValueError, match="more than one element"):
        bool(a)
