"""CuPy conformance beside numpy (issue 45): ``dtype=`` on ufuncs (numpy's loop of that type,
its casting errors), ``r_``/``c_``/``mgrid``/``ogrid`` (numpy's values, types, shapes and
directives), and ``ndarray(shape, dtype, strides=..., order=...)``."""
import numpy as np
import pytest

import dptx


def _same(got, want):
    if isinstance(want, (tuple, list)):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w)
        return
    got = got.get()
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype,
                                                                 got.shape, want.shape)
    np.testing.assert_array_equal(got, want)


def test_ufuncs_take_numpys_dtype(client):
    a = np.arange(1, 11, dtype=np.int32)
    b = np.arange(3, 13, dtype=np.int32)
    A, B = dptx.asarray(a), dptx.asarray(b)
    for f, dt in [(np.remainder, np.float32), (np.fmod, np.float64), (np.floor_divide, np.float32),
                  (np.divide, np.float32), (np.add, np.int8), (np.multiply, np.float64)]:
        _same(f(A, B, dtype=dt), f(a, b, dtype=dt))
    got = np.power(A, B, dtype=np.float32)          # (powf: numpy's to an ulp)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got.get(), np.power(a, b, dtype=np.float32), rtol=3e-7)
    _same(np.sqrt(A, dtype=np.float32), np.sqrt(a, dtype=np.float32))
    with pytest.raises(TypeError, match="Cannot cast ufunc 'add' input"):
        np.add(dptx.asarray(np.ones(3)), 1, dtype=np.int32)


def test_grids_and_concatenators_follow_numpy(client):
    for key in [(slice(0, 5), slice(0, 3)), (slice(-1, 1, 5j), slice(0, 3, 0.5)),
                (slice(2, 8, 2), slice(1, 0, -1), slice(0, 1, 3j))]:
        _same(dptx.mgrid[key], np.mgrid[key])
        _same(dptx.ogrid[key], np.ogrid[key])
    _same(dptx.mgrid[0:4], np.mgrid[0:4])
    _same(dptx.mgrid[0:1:4j], np.mgrid[0:1:4j])
    a, b = np.arange(3), np.arange(4, 7)
    A, B = dptx.asarray(a), dptx.asarray(b)
    m = np.arange(6).reshape(2, 3)
    M = dptx.asarray(m)
    row = np.array([[1, 2, 3]])
    for got, want in [
            (dptx.r_[A, B], np.r_[a, b]), (dptx.r_[A, 0, 0, B], np.r_[a, 0, 0, b]),
            (dptx.r_[-1:1:6j, [0] * 3, 5, 6], np.r_[-1:1:6j, [0] * 3, 5, 6]),
            (dptx.r_[A, 2.5], np.r_[a, 2.5]), (dptx.r_['-1', M, M], np.r_['-1', m, m]),
            (dptx.r_['0,2', [1, 2, 3], [4, 5, 6]], np.r_['0,2', [1, 2, 3], [4, 5, 6]]),
            (dptx.r_['0,2,0', [1, 2, 3], [4, 5, 6]], np.r_['0,2,0', [1, 2, 3], [4, 5, 6]]),
            (dptx.r_['1,2,0', [1, 2, 3], [4, 5, 6]], np.r_['1,2,0', [1, 2, 3], [4, 5, 6]]),
            (dptx.c_[A, B], np.c_[a, b]), (dptx.c_[M, M], np.c_[m, m]),
            (dptx.c_[dptx.asarray(row), 0, 0, dptx.asarray(row)], np.c_[row, 0, 0, row])]:
        _same(got, want)
    with pytest.raises(ValueError, match="special directives must be the first"):
        dptx.r_[A, "0"]
    with pytest.raises(NotImplementedError, match="matrix"):
        dptx.r_["r", A]


def test_ndarray_takes_strides_and_order(client):
    a = dptx.ndarray((2, 3), np.float64, strides=(8, 16))
    assert a.strides == np.ndarray((2, 3), np.float64, strides=(8, 16)).strides
    assert a.flags.f_contiguous and not a.flags.c_contiguous
    a[...] = dptx.asarray(np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(a.get(), np.arange(6.0).reshape(2, 3))
    assert dptx.ndarray((2, 3), order="F").strides == (8, 16)
    with pytest.raises(ValueError, match="strides is incompatible"):
        dptx.ndarray((2, 3), np.float64, strides=(8, 32))
