"""The array API (issue 19): ElementwiseKernel, operators and ufuncs, creation, shapes,
reductions, matmul, ReductionKernel. Every result is checked against numpy (dtype and
values; exact where numpy's and C's operations are the same IEEE operations), on the test
clusters: each call is an ordinary launch of generated CUDA C."""
import itertools
import operator
import re

import numpy as np
import pytest

import dptx
from dptx.errors import DptxError

RNG = np.random.default_rng(19)


def _data(dtype, shape=(5, 7)):
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return RNG.random(shape) > 0.5
    if dt.kind == "f":
        return (RNG.standard_normal(shape) * 10).astype(dt)
    info = np.iinfo(dt)
    lo, hi = max(info.min, -50), min(info.max, 50)
    return RNG.integers(lo, hi, shape).astype(dt)


def _same(got, want, exact=True):
    got = got.get() if isinstance(got, dptx.ndarray) else got
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    if exact:
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=2e-6 if want.dtype == np.float32 else 1e-13,
                                   atol=1e-6 if want.dtype == np.float32 else 1e-13)


def test_elementwise_kernel_placeholders_broadcasting_and_scalars(client):
    k = dptx.ElementwiseKernel("T x, T y", "T z", "z = x * 2 + y", "axpy2")
    a, row = _data(np.float32), _data(np.float32, (7,))
    _same(k(dptx.asarray(a), dptx.asarray(row)), a * np.float32(2) + row)
    _same(k(dptx.asarray(a), 3), a * np.float32(2) + np.float32(3))      # 3 takes T
    i32 = _data(np.int32, (3, 1))
    _same(k(dptx.asarray(i32), dptx.asarray(_data(np.int32, (4,)) * 0 + 1)),
          i32 * 2 + np.ones((3, 4), np.int32))
    # explicit types, the index i, a given output, typedef'd placeholders in the operation
    idx = dptx.ElementwiseKernel("float64 x", "float64 y", "y = x + i", "plus_index")
    out = dptx.empty((4, 5))
    assert idx(dptx.asarray(np.ones((4, 5))), out) is out
    _same(out, 1 + np.arange(20.0).reshape(4, 5))
    cast = dptx.ElementwiseKernel("T x", "U y", "y = (U)(x / (T)2)", "half_of")
    _same(cast(dptx.asarray(np.arange(6, dtype=np.int32)), dptx.empty(6, np.float32)),
          (np.arange(6) // 2).astype(np.float32))
    # raw arrays and size=
    rev = dptx.ElementwiseKernel("raw T x, int32 n", "raw T y", "y[i] = x[n - 1 - i]", "rev")
    src = dptx.asarray(np.arange(10.0))
    dst = dptx.empty(10)
    rev(src, np.int32(10), dst, size=10)
    _same(dst, np.arange(10.0)[::-1])
    # an array for an input declared of another type is read converted to it, as CuPy's
    # (its bytes were read as that type: float64 data doubled as float32 was garbage)
    twice = dptx.ElementwiseKernel("float32 a", "float32 z", "z = a * 2", "twice32")
    for host in (np.arange(10.0), np.arange(-5, 5), np.arange(12.0)[::3]):
        _same(twice(dptx.asarray(host)), (host * 2).astype(np.float32))
    total = dptx.ReductionKernel("float32 x", "float32 y", "x", "a + b", "y = a", "0", "sum32")
    _same(total(dptx.asarray(np.arange(12.0).reshape(3, 4)), axis=1),
          np.array([6, 22, 38], np.float32))


def test_elementwise_kernel_errors_name_the_problem(client):
    k = dptx.ElementwiseKernel("T x, T y", "T z", "z = x + y", "add2")
    # a placeholder's arrays must agree (CuPy's TypeError): a float64 y was read as float32
    with pytest.raises(TypeError, match="placeholder T is float32 .* but y is float64"):
        k(dptx.zeros(3, np.float32), dptx.zeros(3))
    with pytest.raises(TypeError, match="but z is float64"):
        k(dptx.zeros(3, np.float32), 1, dptx.zeros(3))
    with pytest.raises(TypeError, match="but w is int32"):
        dptx.ReductionKernel("T x, T w", "T y", "x * w", "a + b", "y = a", "0", "dot2")(
            dptx.zeros(3), dptx.zeros(3, np.int32))
    with pytest.raises(ValueError, match=r"could not be broadcast together with shapes \(3,\) \(4,\)"):
        k(dptx.zeros(3), dptx.zeros(4))             # numpy's error and message
    with pytest.raises(ValueError, match="could not be broadcast"):
        dptx.zeros(3) + dptx.zeros(4)
    u = dptx.ElementwiseKernel("T x", "U y", "y = x", "unknown_u")
    with pytest.raises(DptxError, match="type U of y is not determined"):
        u(dptx.zeros(3))
    with pytest.raises(DptxError, match="numpy array"):
        k(np.zeros(3), dptx.zeros(3))
    with pytest.raises(DptxError, match="bad parameter"):
        dptx.ElementwiseKernel("T", "T z", "z = 1", "bad")


BINARY = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
          operator.mod, operator.pow, operator.and_, operator.or_, operator.xor,
          operator.lshift, operator.rshift, operator.eq, operator.ne, operator.lt, operator.ge]


# the operator and ufunc matrices compile a kernel per case: they run on the CPU cluster only
# (the mixed one runs the same generated code through the other tests)
@pytest.mark.cpu_workers("the same kernels as on the mixed cluster; compile time")
@pytest.mark.parametrize("op", BINARY, ids=lambda f: f.__name__)
@pytest.mark.parametrize("types", [("int32", "int32"), ("float32", "float32"),
                                   ("float64", "int64"), ("uint8", "int")],
                         ids=lambda t: "-".join(t))
def test_operators_follow_numpy(client, op, types):
    a = _data(types[0])
    if types[1] in ("int", "float"):
        b = 3 if types[1] == "int" else 2.5          # a weak Python scalar
        db = b
    else:
        b = _data(types[1], (7,))                     # broadcast along the last axis
        if op in (operator.floordiv, operator.mod, operator.truediv):
            b = np.where(b == 0, 3, b).astype(b.dtype)
        db = dptx.asarray(b)
    if op in (operator.lshift, operator.rshift):
        if np.result_type(a, b).kind == "f":
            pytest.skip("shifts are for integers")
        b = np.abs(b) % 12 if isinstance(b, np.ndarray) else b
        db = dptx.asarray(b) if isinstance(b, np.ndarray) else b
    if op is operator.pow and np.result_type(a, b).kind in "iu":
        a = np.abs(a) % 5
        b = (np.abs(b) % 4).astype(b.dtype) if isinstance(b, np.ndarray) else b
        db = dptx.asarray(b) if isinstance(b, np.ndarray) else b
    try:
        with np.errstate(all="ignore"):
            want = op(a, b)
    except TypeError:
        with pytest.raises(TypeError):
            op(dptx.asarray(a), db)
        return
    got = op(dptx.asarray(a), db)
    exact = op is not operator.pow or want.dtype.kind != "f"
    _same(got, np.asarray(want), exact=exact)
    # the reflected form with a scalar on the left
    if not isinstance(db, dptx.ndarray) and op not in (operator.lshift, operator.rshift):
        with np.errstate(all="ignore"):
            want = op(b, a)
        if op in (operator.floordiv, operator.mod, operator.truediv):
            return
        _same(op(b, dptx.asarray(a)), np.asarray(want), exact=exact)


@pytest.mark.cpu_workers("element-wise kernels, the same on both clusters")
def test_powers_and_comparisons_at_the_edges_numpy_defines(client, every):
    from fractions import Fraction
    # computed in the result type: an unsigned exponent of 2**63 is not negative
    base, exponent = np.array([3, 250, 1, 0, 2], np.uint8), np.array([2**63, 5, 2**63 + 1, 0, 63],
                                                                     np.uint64)
    _same(dptx.asarray(base) ** dptx.asarray(exponent), base ** exponent)
    _same(dptx.asarray(base.astype(bool)) ** dptx.asarray(exponent),
          base.astype(bool) ** exponent)
    # negative exponents in an array: numpy raises after reading the data, a device cannot;
    # CuPy's values, the power truncated toward zero (0 for a zero base)
    b = np.array([-1, -1, 1, 2, 0, -3, 5, -1], np.int32)
    e = np.array([-1, -2, -5, -1, -3, -2, 2, 3], np.int32)
    want = np.array([0 if x == 0 else int(Fraction(int(x)) ** int(y)) for x, y in zip(b, e)],
                    np.int32)
    _same(dptx.asarray(b) ** dptx.asarray(e), want)
    with pytest.raises(ValueError, match="negative integer powers"):
        dptx.asarray(b) ** -1                     # a scalar exponent is checked as numpy does
    # numpy's a ** 2 is square (a bool array's is int8), ** 0.5 sqrt (-0 stays -0, -inf NaN),
    # ** -1 reciprocal for floats, for Python scalars (also in a fused function); np.power's
    # float32/float64 loops with a scalar 2, -1, 0.5 are the square, reciprocal and sqrt too
    # (bit for bit where pow was an ulp off), float16's is powf (-0 ** 0.5 is +0)
    f = np.array([-0.0, 0.0, -np.inf, np.inf, 4.0, -4.0, np.nan, 1e-300, 3.3, 0.7, 1.9, 5.1])

    def bits(a):
        return np.where(np.isnan(a), np.nan, a).view(np.uint8)     # (NaN payloads aside)
    with np.errstate(all="ignore"):
        for x in (f, f.astype(np.float32), f.astype(np.float16), np.array([True, False]),
                  np.array([3, -2], np.int8)):
            for k in (2, 0.5, -1, 2.0, 3):
                if x.dtype.kind in "iub" and k == -1:
                    continue
                want = x ** k
                for got in ((dptx.asarray(x) ** k).get(),
                            dptx.fuse(lambda v: v ** k)(dptx.asarray(x)).get()):
                    assert got.dtype == want.dtype, (x.dtype, k)
                    assert np.array_equal(bits(got), bits(want)) or \
                        (k in (2.0, 3) and np.allclose(got, want, equal_nan=True)), (x.dtype, k)
            if x.dtype.kind == "f":
                for k in (0.5, 2, -1, np.float16(0.5)):
                    got = np.power(dptx.asarray(x), k).get()
                    assert np.array_equal(bits(got), bits(np.power(x, k))), (x.dtype, k)
        d = dptx.asarray(np.array([1.5, 2.0]))
        d **= 2
        _same(d, np.array([2.25, 4.0]))
    # numpy 2 compares an integer array with a Python integer its type cannot hold
    for dtype, values in [(np.uint8, [0, 7, 255]), (np.int8, [-128, 0, 127]),
                          (np.uint64, [0, 2**64 - 1]), (np.int64, [-2**63, 2**63 - 1])]:
        x = np.array(values, dtype)
        ops = (operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne)
        for k, scalar in enumerate((-1, 300, -300, 2**64, -2**70, 5)):
            # the sample: two comparisons per scalar in turn (each meets a scalar below,
            # above and within the type's range)
            for op in ops if every else (ops[k % 6], ops[(k + 3) % 6]):
                _same(op(dptx.asarray(x), scalar), op(x, scalar))
                _same(op(scalar, dptx.asarray(x)), op(scalar, x))
    with pytest.raises(OverflowError):
        dptx.asarray(np.array([1], np.int8)) + 300          # arithmetic still raises
    # a numpy scalar on the left arrives as a 0-d numpy array: taken as the scalar it is
    x = np.array([1.0, -2.0, 3.5], np.float32)
    _same(np.float32(2) * dptx.asarray(x), np.float32(2) * x)
    _same(np.int64(-2) < dptx.asarray(x), np.int64(-2) < x)


def test_integer_division_and_shifts_at_the_edges(client):
    a = np.array([7, -7, 7, -7, 0, -8, 5], np.int32)
    b = np.array([2, 2, -2, -2, 3, 0, 0], np.int32)
    with np.errstate(all="ignore"):
        _same(dptx.asarray(a) // dptx.asarray(b), a // b)
        _same(dptx.asarray(a) % dptx.asarray(b), a % b)
    f, g = np.array([7.5, -7.5, 7.5, -0.0, 1.0, np.inf]), np.array([2.0, 2.0, -2.0, 3.0, 0.0, 2.0])
    with np.errstate(all="ignore"):
        _same(dptx.asarray(f) // dptx.asarray(g), f // g)
        _same(dptx.asarray(f) % dptx.asarray(g), f % g)
    s = np.array([1, 31, 32, 40, 0], np.int32)
    x = np.array([-5, -5, -5, 3, 9], np.int32)
    _same(dptx.asarray(x) << dptx.asarray(s), x << s)
    _same(dptx.asarray(x) >> dptx.asarray(s), x >> s)


@pytest.mark.cpu_workers("the same kernels as on the mixed cluster; compile time")
@pytest.mark.parametrize("ufunc", [np.sqrt, np.exp, np.log, np.sin, np.cos, np.tanh, np.abs,
                                   np.floor, np.ceil, np.isnan, np.negative, np.sign],
                         ids=lambda u: u.__name__)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
def test_unary_ufuncs_follow_numpy(client, ufunc, dtype):
    a = _data(dtype)
    if ufunc in (np.sqrt, np.log):
        a = np.abs(a) + (1 if a.dtype.kind != "f" else a.dtype.type(0.5))
    if dtype != "int32":
        a.flat[3] = np.nan
    with np.errstate(all="ignore"):
        want = ufunc(a)
    got = ufunc(dptx.asarray(a))
    exact = ufunc in (np.abs, np.floor, np.ceil, np.isnan, np.negative, np.sign, np.sqrt)
    _same(got, want, exact=exact)


def test_minimum_maximum_where_clip_out_and_inplace(client):
    a = np.array([1.0, np.nan, 3.0, -2.0]); b = np.array([2.0, 0.0, np.nan, -3.0])
    da, db = dptx.asarray(a), dptx.asarray(b)
    _same(np.minimum(da, db), np.minimum(a, b))
    _same(np.maximum(da, db), np.maximum(a, b))
    _same(np.fmin(da, db), np.fmin(a, b))
    _same(np.where(da > 0, da, -1.0), np.where(a > 0, a, -1.0))
    _same(dptx.where(db > 0, 1, 0), np.where(b > 0, 1, 0))
    _same(np.clip(da, -1.0, 2.0), np.clip(a, -1.0, 2.0))
    out = dptx.empty(4)
    assert np.add(da, 1.0, out=out) is out
    _same(out, a + 1.0)
    x = dptx.asarray(np.arange(6, dtype=np.float32))
    x += 1
    x *= dptx.asarray(np.full(6, 2, np.float32))
    _same(x, (np.arange(6, dtype=np.float32) + 1) * 2)
    i = dptx.asarray(np.arange(6, dtype=np.int32))
    with pytest.raises(TypeError, match="Cannot cast"):
        np.multiply(i, 1.5, out=i)
    # out= overlapping an input, shifted: numpy's result, not a race
    y = np.arange(8.0)
    dy = dptx.asarray(y)
    np.add(dy[1:], 10.0, out=dy[:-1])
    np.add(y[1:], 10.0, out=y[:-1])
    _same(dy, y)
    assert (dptx.asarray(np.arange(3)).astype(np.float32)).dtype == np.float32
    _same(dptx.asarray(np.array([1.7, -1.7, 0.2])).astype(np.int32), np.array([1, -1, 0], np.int32))


def test_creation_matches_numpy_bit_for_bit(client):
    for args, kw in [((10,), {}), ((2, 20, 3), {}), ((5, -5, -2), {}), ((0.5, 3.2, 0.3), {}),
                     ((0, 1, 0.1), {"dtype": np.float32}), ((1, 11), {"dtype": np.int8}),
                     ((3,), {"dtype": np.float64}), ((5, 1), {})]:
        _same(dptx.arange(*args, **kw), np.arange(*args, **kw))
    for args, kw in [((0, 1, 5), {}), ((-2.5, 7.25, 13), {}), ((0, 1, 10), {"endpoint": False}),
                     ((1, 1, 4), {}), ((0, 10, 1), {}), ((0, 10, 0), {}),
                     ((0, 1, 7), {"dtype": np.float32})]:
        _same(dptx.linspace(*args, **kw), np.linspace(*args, **kw))
    _same(dptx.ones_like(dptx.zeros((2, 3), np.int16)), np.ones((2, 3), np.int16))
    _same(dptx.full_like(dptx.zeros(3), 7.5), np.full(3, 7.5))


def test_strided_views_follow_numpy(client):
    """Transposes, steps (also negative), columns and new axes are views with strides:
    read, written, computed on and reduced as numpy's, through the views."""
    h = np.arange(60, dtype=np.float32).reshape(5, 12)
    d = dptx.asarray(h)
    for key in [(slice(None, None, 2), slice(1, None, 3)), (slice(None, None, -1),
                slice(None, None, -2)), (slice(None), 3), (slice(None), None, slice(2, 4)),
                (Ellipsis, slice(10, 2, -3))]:
        v = d[key]
        assert v.shape == h[key].shape and v.strides == h[key].strides, key
        _same(v, h[key])
    assert d.T.strides == h.T.strides and d.T.flags.f_contiguous and not d.T.flags.c_contiguous
    _same(d.T, h.T)
    _same(d.T + 1, h.T + np.float32(1))
    _same(d.T * d.T[::-1], h.T * h.T[::-1])
    _same(np.sqrt(d[:, ::-3]), np.sqrt(h[:, ::-3]))
    _same(d[::2, 1::5].astype(np.int64), h[::2, 1::5].astype(np.int64))
    _same(d.T.sum(axis=0), h.T.sum(axis=0), exact=False)
    _same(d[:, ::2].max(axis=1), h[:, ::2].max(axis=1))
    _same(d @ d.T, h @ h.T, exact=False)
    _same(dptx.transpose(d.reshape(5, 3, 4), (2, 0, 1)), np.transpose(h.reshape(5, 3, 4),
                                                                      (2, 0, 1)))
    _same(np.swapaxes(d, 0, 1)[1:, ::2], np.swapaxes(h, 0, 1)[1:, ::2])
    _same(d[:, 2:3].squeeze(), h[:, 2:3].squeeze())
    # shapes of strided views: a view where numpy makes one, else a copy
    _same(d.T.ravel(), h.T.ravel())
    _same(d.T.reshape(4, 15), h.T.reshape(4, 15))
    _same(d[:, ::2].reshape(5, 2, 3), h[:, ::2].reshape(5, 2, 3))
    assert d[:, ::2].reshape(5, 2, 3).base is d             # still a view, as numpy's
    c = dptx.ascontiguousarray(d.T)
    assert c.flags.c_contiguous and c.base is None and dptx.ascontiguousarray(d) is d
    _same(c, h.T)
    # writes through strided views: scalars, host arrays, dptx arrays (overlapping too)
    e, g = dptx.asarray(h), h.copy()
    e[::2, ::3] = 7
    g[::2, ::3] = 7
    e[:, 1] = np.arange(5)
    g[:, 1] = np.arange(5)
    e[1::2] = e[::-2][:2]
    g[1::2] = g[::-2][:2]
    e.T[2] = dptx.arange(5)
    g.T[2] = np.arange(5)
    e[:, ::-1][0] = e[0]
    g[:, ::-1][0] = g[0].copy()
    _same(e, g)
    o = dptx.zeros((5, 24), np.float32)
    np.add(d, 1, out=o[:, ::2])
    want = np.zeros((5, 24), np.float32)
    np.add(h, 1, out=want[:, ::2])
    _same(o, want)
    with pytest.raises(ValueError, match=r"could not broadcast input array from shape \(3,\)"):
        e[0] = dptx.arange(3)


def test_a_kernel_given_a_strided_view_names_the_argument(client):
    k = dptx.RawKernel('extern "C" __global__ void ones(float* a) { a[threadIdx.x] = 1; }',
                       "ones")
    d = dptx.zeros((4, 6), np.float32)
    with pytest.raises(dptx.LaunchError, match=r"argument 0 \(a\) of kernel ones is a "
                                               r"non-contiguous view \(shape \(4,\), strides "
                                               r"\(24,\)\)"):
        k((1,), (4,), (d[:, 1],))
    k((1,), (4,), (dptx.ascontiguousarray(d[:, 1]),))      # a copy: d unchanged
    k((1,), (4,), (d[1],))                                  # a contiguous row view
    want = np.zeros((4, 6), np.float32)
    want[1, :4] = 1
    _same(d, want)
    raw = dptx.ElementwiseKernel("raw T x", "T y", "y = x[i]", "rawcopy")
    with pytest.raises(DptxError, match="raw argument x is a non-contiguous view"):
        raw(d.T, dptx.empty(4, np.float32))


def test_assigning_a_dptx_array_stays_on_the_devices(client, monkeypatch):
    d, src = dptx.zeros((4, 6)), dptx.arange(6.0)
    _same(src, np.arange(6.0))                  # (settled before the host is forbidden)

    def no_host(*args, **kwargs):
        raise AssertionError("a device-to-device assignment read an array back to the host")
    monkeypatch.setattr(dptx.ndarray, "get", no_host)
    d[1:3] = src
    d.T[::2] = src[:4][::-1]    # strided on both sides
    monkeypatch.undo()
    want = np.zeros((4, 6))
    want[1:3] = np.arange(6.0)
    want.T[::2] = np.arange(4.0)[::-1]
    _same(d, want)


def test_assigning_a_scalar_where_a_mask_is_true(client, monkeypatch):
    """``a[mask] = scalar``, numpy's way (the value converted as numpy assigns it), on the
    devices; elements where the mask is False keep their values."""
    h = np.arange(42, dtype=np.float32).reshape(6, 7)
    d = dptx.asarray(h)
    _same(d, h)

    def no_host(*args, **kwargs):
        raise AssertionError("a masked assignment read an array back to the host")
    monkeypatch.setattr(dptx.ndarray, "get", no_host)
    d[d > 30] = 0
    host_mask = np.zeros((6, 7), bool)
    host_mask[::2, 1:5] = True
    d[host_mask] = -1.5                         # a numpy mask is uploaded
    v = d[1:, ::3]                              # a strided view, masked by its own values
    v[v < 10] = 7
    monkeypatch.undo()
    h[h > 30] = 0
    h[host_mask] = -1.5
    hv = h[1:, ::3]
    hv[hv < 10] = 7
    _same(d, h)
    b = dptx.asarray(np.array([True, False, True, True]))
    b[b] = False                                # the mask is the array assigned to
    _same(b, np.zeros(4, bool))
    i = dptx.arange(10, dtype=np.uint8)
    i[i > 5] = 3.9                              # truncated, as numpy converts
    _same(i, np.array([0, 1, 2, 3, 4, 5, 3, 3, 3, 3], np.uint8))
    with pytest.raises(OverflowError, match="300 out of bounds for uint8"):
        i[i > 5] = 300
    with pytest.raises(ValueError):             # (numpy: 3 values for more True elements)
        d[d > 1] = dptx.ones(3)
    with pytest.raises(IndexError, match="boolean index did not match indexed array along "
                                         "axis 0; size of axis is 6 but size of corresponding "
                                         "boolean axis is 7"):
        d[dptx.ones(7, dtype=bool)] = 1


def test_selecting_where_a_mask_is_true(client):
    """``a[mask]``: the selected elements in C order as a new 1-D array, numpy's result, on
    the devices (counted per piece, the pieces' offsets, then copied: the total is the one
    value read back)."""
    rng = np.random.default_rng(5)
    h = rng.random((300, 70)).astype(np.float32)        # several pieces of 4096 elements
    d = dptx.asarray(h)
    _same(d[d > 0.5], h[h > 0.5])
    _same(d[d > 2], h[h > 2])                           # none: shape (0,)
    _same(d[d >= 0], h.ravel())                         # all
    v, hv = d[::3, 1::2], h[::3, 1::2]                  # a strided view and its own mask
    _same(v[v < 0.25], hv[hv < 0.25])
    mask = rng.random(h.shape) < 0.1                    # a numpy mask is uploaded
    _same(d[mask], h[mask])
    i = dptx.arange(10, dtype=np.int16)
    _same(i[i % 3 == 0], np.arange(10, dtype=np.int16)[::3])
    assert float(d[d > 0.9].mean()) == pytest.approx(float(h[h > 0.9].mean()), rel=1e-5)
    e = dptx.zeros(0, np.float64)
    assert e[e > 1].shape == (0,)
    with pytest.raises(IndexError, match="size of axis is 300 but size of corresponding "
                                         "boolean axis is 70"):
        d[dptx.ones(70, dtype=bool)]


def test_masks_of_fewer_dimensions_and_with_other_indices(client):
    """numpy's rule: a boolean mask indexes as the integer arrays of its nonzero(), so a mask
    of the first axes selects rows (``x[x[:, 0] > 0]``), ``m[:, mask]`` columns, and masks mix
    with integers, slices, None and ``...``; assigning a scalar, an array of the selection's
    shape, or one that broadcasts to it (a row), from host or device masks."""
    rng = np.random.default_rng(11)
    a = rng.random((5, 4, 3)).astype(np.float32)
    m1, m2, mc = a[:, 0, 0] > 0.5, a[:, :, 0] > 0.5, a[0, :, 0] > 0.3
    keys = [m1, m2, (slice(None), mc), (m1, 1), (m1, slice(1, 3), 2), (Ellipsis, a[0, 0] > 0.4),
            (m1, None), (1, mc), a > 0.5]
    for host in (True, False):
        for key in keys:
            items = key if isinstance(key, tuple) else (key,)
            if not host:
                items = tuple(dptx.asarray(k) if isinstance(k, np.ndarray) else k for k in items)
            dkey = items if isinstance(key, tuple) else items[0]
            want = a[key]
            _same(dptx.asarray(a)[dkey], want)
            for value in (rng.random(want.shape).astype(np.float32), 7.0,
                          rng.random(want.shape[-1:]).astype(np.float32)):
                h, d = a.copy(), dptx.asarray(a)
                h[key] = value
                d[dkey] = dptx.asarray(value) if np.ndim(value) else value
                _same(d, h)
    with pytest.raises(IndexError, match="along axis 1; size of axis is 4 but size of "
                                         "corresponding boolean axis is 3"):
        dptx.asarray(a)[:, np.ones(3, bool)]
    with pytest.raises(IndexError, match="too many indices"):
        dptx.asarray(a)[np.ones((5, 4, 3, 2), bool)]


def test_shapes_views_and_indexing(client):
    a = np.arange(24, dtype=np.float32)
    d = dptx.asarray(a)
    _same(d.reshape(2, 3, 4), a.reshape(2, 3, 4))
    _same(d.reshape((4, -1)), a.reshape(4, -1))
    m = d.reshape(4, 6)
    _same(m.ravel(), a)
    _same(dptx.expand_dims(m, 1), np.expand_dims(a.reshape(4, 6), 1))
    _same(dptx.expand_dims(m, 1).squeeze(), a.reshape(4, 6))
    with pytest.raises(ValueError, match="cannot reshape array of size 24 into shape"):
        d.reshape(5, 5)
    # views share the buffer: an operation through one is seen by the other
    m[1] = 0
    m[2:] = dptx.asarray(np.full(6, 5, np.float32))     # broadcast, on the devices
    want = a.reshape(4, 6).copy(); want[1] = 0; want[2:] = 5
    _same(d, want.ravel())
    e = m[3]
    assert e.shape == (6,) and m[3, 2].shape == ()
    assert float(m[3, 2]) == 5.0
    _same(np.concatenate([dptx.asarray(a[:5]), dptx.asarray(a[5:9])]), a[:9])
    _same(dptx.concatenate([dptx.zeros((2, 2)), dptx.ones((2, 3))], axis=1),
          np.concatenate([np.zeros((2, 2)), np.ones((2, 3))], axis=1))
    # numpy's functions that read only the description
    h = a.reshape(4, 6)
    assert (np.shape(m), np.size(m), np.size(m, 1), np.ndim(m)) == \
        (np.shape(h), np.size(h), np.size(h, 1), np.ndim(h))
    assert np.result_type(m, 2.0) == np.result_type(h, 2.0) == np.float32
    assert np.result_type(m, dptx.ones(2, np.int64)) == np.result_type(h, np.ones(2, np.int64))


def test_orders_concatenation_and_keys_numpy_would_copy_for(client, monkeypatch):
    a = np.arange(24.0).reshape(2, 3, 4)
    d = dptx.asarray(a)
    views = [lambda x: x, lambda x: x.T, lambda x: x[:, ::-1], lambda x: x.transpose(1, 0, 2),
             lambda x: x[::-1].T, lambda x: x.swapaxes(0, 2)[1:]]
    for view in views:
        for order in "CFAK":        # "K": the order of the strides, negative ones as they are
            _same(view(d).ravel(order), view(a).ravel(order))
            _same(view(d).flatten(order), view(a).flatten(order))
        for order in "CFA":
            for shape in [(4, -1), (-1,)]:
                if view(a).size != 24 and shape != (-1,):
                    continue
                _same(view(d).reshape(shape, order=order), view(a).reshape(shape, order=order))
    _same(np.reshape(d, shape=(6, 4), order="F"), np.reshape(a, shape=(6, 4), order="F"))
    with pytest.raises(ValueError, match="Unable to avoid creating a copy"):
        np.reshape(d.T, (24,), copy=False)
    flat = d.flatten()
    flat[0] = 99                                  # a copy, never a view
    assert float(d[0, 0, 0]) == 0.0
    with pytest.raises(ValueError, match="order must be one of"):
        d.reshape(24, order="Z")
    # concatenate: numpy's results, one device copy per part (not one per row)
    b = np.arange(300 * 2, dtype=np.int32).reshape(300, 2)
    c = RNG.random((300, 5))
    copies = []
    assign = dptx.ndarray._device_assign
    monkeypatch.setattr(dptx.ndarray, "_device_assign",
                        staticmethod(lambda *args: (copies.append(1), assign(*args))))
    _same(np.concatenate([dptx.asarray(b), dptx.asarray(c)], axis=1),
          np.concatenate([b, c], axis=1))
    assert len(copies) == 2
    _same(dptx.concatenate([dptx.asarray(b), dptx.asarray(c)], axis=None),
          np.concatenate([b, c], axis=None))
    out = dptx.empty((300, 7))
    assert dptx.concatenate([dptx.asarray(b), dptx.asarray(c)], axis=-1, out=out) is out
    _same(out, np.concatenate([b, c], axis=-1))
    monkeypatch.undo()
    # boolean scalars: numpy's 0-d masks, an axis of length 1 (True) or 0 (False) where
    # numpy puts it, and a copy (writing to it leaves the array as it is)
    for key in [True, (0, False), np.True_, (slice(None), True), (True, slice(None), 0),
                (True, None, 0), (Ellipsis, True), (True, True), (True, False),
                (1, False, slice(1, 3)), np.array(True), (np.array(False), 0)]:
        _same(d[key], a[key])
        want, got = a.copy(), dptx.asarray(a)
        want[key], got[key] = -1.0, -1.0
        _same(got, want)
        row = np.arange(a[key].shape[-1], dtype=a.dtype)
        want[key], got[key] = row, dptx.asarray(row)
        _same(got, want)
    copied = d[True]
    copied[0, 0, 0] = 99.0
    assert float(d[0, 0, 0]) == 0.0
    with pytest.raises(DptxError, match="boolean scalar in a key with index arrays"):
        d[[0, 1], True]
    with pytest.raises(IndexError, match="only integers, slices"):
        d[1.0]


def test_integer_array_indexing_follows_numpy(client):
    """Index arrays from the host and from the devices, with numpy's result shapes (the index
    shape where the advanced indices are adjacent in the key, first otherwise), negative
    indices, numpy's errors, assignment, and take."""
    a = RNG.standard_normal((4, 5, 6)).astype(np.float32)
    d = dptx.asarray(a)
    i, j, k = np.array([3, 0, -1, 2]), np.array([[1, 3], [0, -4]]), np.array([5, 0, 2, 2])
    keys = [(i,), ([0, 1],), (slice(None), i), (i, slice(1, 3)), (0, slice(None), k),
            (i, 2), (1, i), (i, np.array([4, 0, 2, 2])), (slice(None), j), (Ellipsis, k),
            (None, i), (j, None, slice(None, None, -1)), (slice(None), 1, i), (i, slice(None), k),
            (i[:, None], slice(None), k[None, :]), (np.array([], dtype=int),), ([],),
            (2, 3, k), (-1, i, slice(None)), (np.array(2),), ((i % 4).astype(np.uint8),),
            (slice(None, None, 2), i), (j, np.array([4, 0]))]
    for key in keys:
        want = a[key]
        _same(d[key], want)
        on_device = tuple(dptx.asarray(x) if isinstance(x, np.ndarray) and x.ndim else x
                          for x in key)
        _same(d[on_device], want)
    _same(d.T[i], a.T[i])                                   # of a strided view
    for key, error in [((np.array([4]),), IndexError), ((slice(None), np.array([-6])), IndexError),
                       ((i, np.array([1, 2])), IndexError), ((np.array([1.5]),), IndexError),
                       ((i, Ellipsis, i, Ellipsis), IndexError)]:
        with pytest.raises(error) as numpy_error:
            a[key]
        with pytest.raises(error, match=re.escape(str(numpy_error.value)[:30])):
            d[key]
    # indices on the devices wrap around, as CuPy's (no wait, no device-side assert)
    _same(d[dptx.asarray(np.array([1, 4, -9]))], a[np.array([1, 0, 3])])
    with pytest.raises(IndexError, match="out of bounds for axis 1 with size 0"):
        d[:, :0][:, dptx.asarray(np.array([0]))]
    # assignment: scalars anywhere, arrays where each position is named once
    for key, value in [((i,), 7.0), ((slice(None), i), 1.5), ((0, slice(None), k[:3]), -2.0),
                       ((np.array([3, 0, 1, 2]), 2), np.arange(24, dtype=np.float32).reshape(4, 6)),
                       ((slice(None), np.array([0, 2])), np.arange(12.0).reshape(2, 6)),
                       ((i[:, None], slice(None), k[None, :3]), 3.0),
                       ((np.array([1, 3]), slice(None), np.array([0, 5])), np.arange(10.0).reshape(2, 5))]:
        want = a.copy()
        want[key] = value
        got = dptx.asarray(a)
        got[key] = dptx.asarray(value) if isinstance(value, np.ndarray) else value
        _same(got, want)
    # where a position repeats (or may: an index on the devices), the last value lands, as
    # numpy's: each element claims its position by an atomic max of its place in the order
    rng = np.random.default_rng(8)
    for key in [(np.array([1, 1]),), (np.array([3, 0, 3, -1]), slice(None), np.array([2, 5, 5, 2])),
                (slice(None), np.array([0, 0, 2]))]:
        value = rng.random(a[key].shape).astype(np.float32)
        for on_device in (False, True):
            want, got = a.copy(), dptx.asarray(a)
            want[key] = value
            got[tuple(dptx.asarray(x) if on_device and isinstance(x, np.ndarray) else x
                      for x in key)] = dptx.asarray(value)
            _same(got, want)
    idx = rng.integers(-3000, 3000, 20000)      # every position many times, over both workers
    values = rng.integers(0, 1 << 30, idx.size)
    want, got = np.zeros(3000, np.int64), dptx.zeros(3000, np.int64)
    want[idx] = values
    got[dptx.asarray(idx)] = dptx.asarray(values)
    _same(got, want)
    perm = rng.permutation(1 << 16)              # the inverse of a permutation
    inverse = dptx.empty(perm.size, np.int64)
    inverse[dptx.asarray(perm)] = dptx.arange(perm.size)
    _same(inverse, np.argsort(perm))
    flat = np.array([3, 7, 100, -1])
    _same(np.take(d, flat), np.take(a, flat))
    _same(d.take(np.array([1, 0]), axis=2), a.take([1, 0], axis=2))
    _same(dptx.take(d, 2, axis=1), a.take(2, axis=1))


def test_nonzero_argwhere_and_counts(client):
    x = np.array([[0, 1.5, 0, np.nan], [2, 0, 0, -1.0]])
    m = RNG.random((70, 300)) > 0.6                # several pieces of 4096 elements
    for host in (x, m, m.astype(np.int16)[:, 5:9], np.zeros((0, 3)), np.arange(5) % 2 == 0):
        dev = dptx.asarray(host)
        for got, want in zip(np.nonzero(dev), np.nonzero(host)):
            _same(got, want)
        for got, want in zip(dev.nonzero(), host.nonzero()):
            _same(got, want)
        for got, want in zip(dptx.where(dev), np.where(host)):
            _same(got, want)
        _same(np.argwhere(dev), np.argwhere(host))
        _same(np.flatnonzero(dev), np.flatnonzero(host))
        _same(np.count_nonzero(dev), np.asarray(np.count_nonzero(host)))
        if host.ndim == 2:
            _same(np.count_nonzero(dev, axis=0), np.count_nonzero(host, axis=0))
    _same(np.argwhere(dptx.asarray(np.array(3.0))), np.argwhere(np.array(3.0)))
    with pytest.raises(ValueError, match="nonzero on 0d arrays"):
        np.nonzero(dptx.asarray(np.array(1.0)))
    with pytest.raises(ValueError, match="both or neither"):
        np.where(dptx.asarray(x), 1)


def test_reductions_into_an_out_of_another_type(client):
    """numpy's reductions with out= of another dtype: computed in out's type where the input
    casts to it safely (a float32 sum into float64 is a float64 sum), else in numpy's type
    and converted; never the result's bytes read as out's type."""
    f32 = np.full(100_000, 0.1, np.float32)
    x = np.array([[0.6, 0.6, -2.5], [1.5, 2.7, 0.2]])
    i8 = np.array([[100, 100, -3], [7, 0, 1]], np.int8)
    cases = [(np.sum, f32, None, np.float64), (np.sum, x, 0, np.int32), (np.sum, i8, None, np.int8),
             (np.sum, i8, 1, np.float32), (np.prod, i8, 0, np.float64), (np.max, x, 1, np.int32),
             (np.min, i8, 0, np.float64), (np.any, x, 0, np.float32), (np.sum, x > 0, 1, np.float64),
             (np.argmax, x, 1, np.int32), (np.mean, x, 0, np.int32), (np.mean, x, None, np.float32)]
    for fn, host, axis, out_type in cases:
        want = np.zeros(np.asarray(fn(host, axis=axis)).shape, out_type)
        fn(host, axis=axis, out=want)
        got = dptx.zeros(want.shape, out_type)
        assert fn(dptx.asarray(host), axis=axis, out=got) is got
        _same(got, want, exact=fn is not np.mean)
    # numpy's mean with an integer dtype sums in it and truncates the quotient
    for host in (np.array([1.0, 2.0, 4.5]), np.array([[1, 2, 2], [5, 5, 6]], np.int8)):
        for dtype in (np.int64, np.int8, np.float32):
            _same(np.mean(dptx.asarray(host), dtype=dtype), np.asarray(np.mean(host, dtype=dtype)),
                  exact=False)
    # a ReductionKernel writes its declared output type: another out is an error
    r = dptx.ReductionKernel("float32 x", "float32 y", "x", "a + b", "y = a", "0", "rsum")
    with pytest.raises(DptxError, match="y must be float32, got float64"):
        r(dptx.ones(3, np.float32), out=dptx.zeros((), np.float64))


def test_outputs_that_overlap_inputs_give_numpys_results(client):
    """An out= that shares bytes with an input: numpy's result is as if the inputs were read
    whole before out is written. A row reduction wrote row i's sum into a row another warp
    was still reading, a matmul its tiles over the matrix it read."""
    host = (np.arange(256 * 256, dtype=np.float32) % 7).reshape(256, 256)
    cases = [("sum(axis=1, out=x[5])", lambda xp, x: xp.sum(x, axis=1, out=x[5])),
             ("max(axis=1, out=x[200])", lambda xp, x: xp.max(x, axis=1, out=x[200])),
             ("sum(axis=0, out=x[:, 0])", lambda xp, x: xp.sum(x, axis=0, out=x[:, 0])),
             ("matmul(x, x, out=x)", lambda xp, x: xp.matmul(x, x, out=x)),
             ("dot(x, x, out=x)", lambda xp, x: xp.dot(x, x, out=x)),
             ("x[1:] @ x[0] into x[0]", lambda xp, x: xp.matmul(x[1:], x[0], out=x[0, 1:])),
             ("x[0] @ x into x[0]", lambda xp, x: xp.matmul(x[0], x, out=x[0]))]
    for name, f in cases:
        want, got = host.copy(), dptx.asarray(host)
        f(np, want)
        f(dptx, got)
        assert np.array_equal(got.get(), want), name
    assert dptx.may_share_memory(got[1:], got[:-1]) and np.may_share_memory(got[:, 0], got[0])
    assert not dptx.may_share_memory(got[:1], got[1:]) and not dptx.may_share_memory(got, host)
    # out's type and shape, as numpy checks them (matmul: same_kind; dot: exactly)
    d = dptx.asarray(host[:4, :4])
    wide = dptx.zeros((4, 4), np.float64)
    dptx.matmul(d, d, out=wide)
    _same(wide, (host[:4, :4] @ host[:4, :4]).astype(np.float64))
    with pytest.raises(TypeError, match="same_kind"):
        dptx.matmul(d, d, out=dptx.zeros((4, 4), np.int32))
    with pytest.raises(ValueError):
        dptx.matmul(d, d, out=dptx.zeros((4, 5), np.float32))
    for bad in (wide, dptx.zeros((4, 8), np.float32)[:, ::2], dptx.zeros((4, 5), np.float32)):
        with pytest.raises(ValueError, match="output array"):
            np.dot(d, d, out=bad)


def test_outs_are_checked_as_numpy_checks_them(client):
    """out= of another shape or of a type numpy refuses raises numpy's error class, where the
    result was broadcast or converted into it (``trace`` filled all of a (99,) out); the
    types numpy converts into are converted."""
    x = (np.arange(64, dtype=np.float32).reshape(8, 8) % 5) - 1.5
    d = dptx.asarray(x)
    refused = [(ValueError, lambda xp, a: xp.trace(a, out=xp.zeros(99, np.float32))),
               (ValueError, lambda xp, a: xp.sum(a, axis=0, out=xp.zeros((8, 1), np.int32))),
               (ValueError, lambda xp, a: xp.mean(a, axis=0, out=xp.zeros(5, np.float32))),
               (TypeError, lambda xp, a: xp.concatenate([a, a], out=xp.zeros((16, 8), np.int32))),
               (TypeError, lambda xp, a: xp.take(a, [1, 2], out=xp.zeros(2, np.float64))),
               (TypeError, lambda xp, a: xp.argmax(a, axis=0, out=xp.zeros(8, np.float32))),
               (TypeError, lambda xp, a: xp.std(a, axis=0, out=xp.zeros(8, np.int32))),
               (TypeError, lambda xp, a: xp.around(a, 1, out=xp.zeros((8, 8), np.int32)))]
    for error, f in refused:
        with pytest.raises(error):
            f(np, x)
        with pytest.raises(error):
            f(dptx, d)
    converted = [lambda xp, a: xp.take(a, [1, 2], out=xp.zeros(2, np.float16)),
                 lambda xp, a: xp.argmax(a, axis=1, out=xp.zeros(8, np.int32)),
                 lambda xp, a: xp.var(a, axis=1, out=xp.zeros(8, np.int64)),
                 lambda xp, a: xp.concatenate([a, a], out=xp.zeros((16, 8), np.float16)),
                 lambda xp, a: xp.trace(a, out=xp.zeros((), np.int16))]
    for f in converted:
        _same(f(dptx, d), f(np, x))


def _same_sum(got, x, how, **kwargs):
    """A float32 sum (``how``: np.add.reduce or accumulate) in another order than numpy's:
    within a few dozen roundings of the float64 sum of magnitudes, a bound that cancellation
    cannot make small beside a small total (a relative tolerance can)."""
    got = got.get()
    assert got.dtype == x.dtype
    exact = how(x.astype(np.float64), **kwargs)
    assert got.shape == exact.shape
    bound = 32 * np.finfo(x.dtype).eps * how(abs(x).astype(np.float64), **kwargs)
    assert (abs(got - exact) <= bound).all(), (got, exact)


def test_ufuncs_as_dptx_functions_with_their_methods(client):
    """dptx.sqrt, dptx.add, ... under numpy's names and aliases (as CuPy's cupy.sqrt), with
    out=, casting= and numpy's reduce, accumulate and outer (also reached from np.add.reduce
    on a dptx array)."""
    x = _data(np.float32, (6, 5))
    y = _data(np.float32, (6, 5))
    d, e = dptx.asarray(x), dptx.asarray(y)
    for name in ("sqrt", "abs", "absolute", "exp", "negative", "floor", "isnan", "signbit"):
        with np.errstate(all="ignore"):
            _same(getattr(dptx, name)(d), getattr(np, name)(x), exact=False)
    for name in ("add", "subtract", "multiply", "true_divide", "divide", "maximum", "fmin",
                 "hypot", "arctan2", "atan2", "mod", "greater_equal", "logical_xor", "copysign"):
        _same(getattr(dptx, name)(d, e), getattr(np, name)(x, y), exact=False)
    assert repr(dptx.sqrt) == "<dptx.ufunc 'sqrt'>" and dptx.add.nin == 2
    _same(dptx.add(1, 2), np.asarray(np.add(1, 2)))        # scalars: a 0-d device array
    _same(dptx.sqrt(np.float32(2)), np.asarray(np.sqrt(np.float32(2))))
    out = dptx.empty((6, 5), np.int32)
    with pytest.raises(TypeError, match="same_kind"):
        dptx.multiply(d, e, out=out)
    assert dptx.multiply(d, e, out=(out,), casting="unsafe") is out
    _same(out, np.multiply(x, y, out=np.empty((6, 5), np.int32), casting="unsafe"))
    # into another type as numpy's loop then its cast: a negative float into uint8 wraps, a
    # float16 result is rounded to half before it widens (both were C's casts of the float)
    u8 = dptx.empty((6, 5), np.uint8)
    dptx.subtract(d, 100, out=u8, casting="unsafe")
    _same(u8, np.subtract(x, 100, out=np.empty((6, 5), np.uint8), casting="unsafe"))
    # where=: the result where the mask is True, out kept elsewhere (numpy's safe division
    # idiom); the mask broadcasts; a mask of another type is numpy's TypeError
    z = dptx.zeros((6, 5))
    np.divide(d, e, out=z, where=e > 0)
    _same(z, np.divide(x, y, out=np.zeros((6, 5)), where=y > 0))
    rows = np.arange(6)[:, None] % 2 == 0
    u8 = dptx.full((6, 5), 9, np.uint8)
    dptx.multiply(d, 3, out=u8, where=dptx.asarray(rows), casting="unsafe")
    _same(u8, np.multiply(x, 3, out=np.full((6, 5), 9, np.uint8), where=rows, casting="unsafe"))
    with pytest.raises(TypeError, match="to dtype\\('bool'\\)"):
        dptx.add(d, 1, where=dptx.asarray(np.ones(5, np.int64)))
    h = (x * 1000).astype(np.float16)
    f32 = dptx.empty((6, 5), np.float32)
    np.multiply(dptx.asarray(h), np.float16(1.1), out=f32)
    _same(f32, np.multiply(h, np.float16(1.1), out=np.empty((6, 5), np.float32)))
    for ufunc in (np.add, np.multiply, np.minimum, np.maximum, np.logical_and, np.logical_or):
        mine = getattr(dptx, ufunc.__name__)
        for axis in (0, 1, None):
            if ufunc is np.add:
                _same_sum(mine.reduce(d, axis=axis), x, np.add.reduce, axis=axis)
                continue
            _same(mine.reduce(d, axis=axis), np.asarray(ufunc.reduce(x, axis=axis)),
                  exact=ufunc is not np.multiply)
        if ufunc is np.add:
            _same_sum(ufunc.reduce(d, axis=1, keepdims=True), x, np.add.reduce, axis=1,
                      keepdims=True)
        else:
            _same(ufunc.reduce(d, axis=1, keepdims=True), ufunc.reduce(x, axis=1, keepdims=True),
                  exact=ufunc is not np.multiply)
    _same_sum(np.add.accumulate(d), x, np.add.accumulate)
    _same(dptx.multiply.accumulate(d, axis=1), np.multiply.accumulate(x, axis=1), exact=False)
    _same(np.subtract.outer(d[0], d[:, 1]), np.subtract.outer(x[0], x[:, 1]))
    _same(dptx.greater.outer(d[0], d[1:3]), np.greater.outer(x[0], x[1:3]))
    _same(np.sqrt(d, dtype=np.float64), np.sqrt(x, dtype=np.float64))    # numpy's dtype= loop
    with pytest.raises(DptxError, match="subtract.reduce is not supported"):
        dptx.subtract.reduce(d)


def test_numpys_view_functions_make_views(client):
    """broadcast_to, moveaxis, split, rot90, atleast_nd, meshgrid... as numpy makes them
    (numpy works each out on the array's stand-in): views over the same buffer, numpy's
    shapes and values; a broadcast view is read-only, as numpy's."""
    h = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    d = dptx.asarray(h)
    cases = [(lambda xp, a: xp.broadcast_to(a[0, 0], (5, 4)), True),
             (lambda xp, a: xp.broadcast_arrays(a[:, :1], a[0]), True),
             (lambda xp, a: xp.moveaxis(a, 0, -1), True),
             (lambda xp, a: xp.rollaxis(a, 2), True),
             (lambda xp, a: xp.atleast_3d(a[0, 0]), True),
             (lambda xp, a: xp.atleast_2d(a[0, 0], a), True),
             (lambda xp, a: xp.split(a, 2, axis=2), True),
             (lambda xp, a: xp.array_split(a, 3, axis=2), True),
             (lambda xp, a: xp.hsplit(a, [1]), True),
             (lambda xp, a: xp.rot90(a, 3, (1, 2)), True),
             (lambda xp, a: a.view(np.int32), True),
             (lambda xp, a: a.view(np.uint8)[1:], True),
             (lambda xp, a: xp.meshgrid(a[0, 0], a[1, 1, :3]), False),
             (lambda xp, a: xp.meshgrid(a[0, 0], a[1, 1, :3], a[0, 2], indexing="ij",
                                        sparse=True, copy=False), True),
             (lambda xp, a: xp.dstack([a[0], a[1]]), False),
             (lambda xp, a: xp.dstack([a[0, 0], a[1, 0]]), False)]
    for f, is_view in cases:
        want, got = f(np, h), f(dptx, d)
        pairs = zip(got, want) if isinstance(want, (list, tuple)) else [(got, want)]
        if isinstance(want, (list, tuple)):
            assert len(got) == len(want)
        for g, w in pairs:
            _same(g, w)
            assert (g.base is d) == is_view
    b = dptx.broadcast_to(d[0, 0], (5, 4))
    assert not b.flags.writeable and d.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        b[...] = 1
    with pytest.raises(ValueError, match="read-only"):
        np.add(b, 1, out=b)
    _same(b + 1, np.broadcast_to(h[0, 0], (5, 4)) + 1)
    with pytest.raises(ValueError, match="equal division"):
        dptx.split(d, 5)
    _same(dptx.tri(4, 5, -1, np.int32), np.tri(4, 5, -1, np.int32))
    np.testing.assert_allclose(dptx.logspace(0, 3, 7).get(), np.logspace(0, 3, 7), rtol=1e-15)
    _same(dptx.logspace(1, 2, 5, base=2.0, dtype=np.float32),
          np.logspace(1, 2, 5, base=2.0, dtype=np.float32))


@pytest.mark.cpu_workers("the same kernels as on the mixed cluster; a sort per case")
def test_order_statistics_and_nan_reductions_follow_numpy(client, every):
    """median, quantile/percentile (numpy's 'linear' with its _lerp), average, ptp and the
    NaN-ignoring reductions, against numpy over axes, keepdims and dtypes (NaNs placed)."""
    import warnings
    rng = np.random.default_rng(5)
    cases = ((np.float32, (4, 5, 6)), (np.int32, (6, 9)), (np.float64, (17,)),
             (np.float32, (6, 9)), (np.uint8, (17,)))
    # the sample: floats with NaNs over three axes and their pairs, integers over two (the
    # others are the same kernels at other types and ranks)
    for dt, shape in cases if every else cases[:2]:
        x = (rng.standard_normal(shape) * 20).astype(dt)
        if dt in (np.float32, np.float64) and len(shape) != 2:
            x.flat[[1, 3]] = np.nan               # the 2-D case has none
        d = dptx.asarray(x)
        axes = [None] + list(range(len(shape))) + [(0, len(shape) - 1)] * (len(shape) > 1)
        for i, axis in enumerate(axes):
            for kd in (bool(i % 2),):               # (keepdims on every other axis)
                kw = dict(axis=axis, keepdims=kd)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    _same(dptx.ptp(d, **kw), np.asarray(np.ptp(x, **kw)))
                    _same(dptx.nanmax(d, **kw), np.asarray(np.nanmax(x, **kw)))
                    _same(dptx.nanmin(d, **kw), np.asarray(np.nanmin(x, **kw)))
                    _same(dptx.nansum(d, **kw), np.asarray(np.nansum(x, **kw)), exact=False)
                    _same(dptx.nanmean(d, **kw), np.asarray(np.nanmean(x, **kw)), exact=False)
                    _same(dptx.median(d, **kw), np.asarray(np.median(x, **kw)), exact=False)
                    _same(dptx.percentile(d, 37, **kw), np.asarray(np.percentile(x, 37, **kw)),
                          exact=False)
                    for q in (0.3, [0, 0.1, 0.5, 0.99, 1]):
                        _same(dptx.quantile(d, q, **kw), np.asarray(np.quantile(x, q, **kw)),
                              exact=False)
                if axis is None or isinstance(axis, int):
                    _same(dptx.average(d, **kw), np.asarray(np.average(x, **kw)), exact=False)
                    w = rng.random(shape if axis is None else shape[axis]).astype(np.float32)
                    _same(dptx.average(d, weights=dptx.asarray(w), **kw),
                          np.asarray(np.average(x, weights=w, **kw)), exact=False)
    with pytest.raises(ZeroDivisionError):
        dptx.average(dptx.ones(3), weights=dptx.zeros(3))
    with pytest.raises(ZeroDivisionError):          # numpy's a.size / 0 for an empty result
        dptx.average(dptx.ones((4, 0)), axis=0)
    with pytest.raises(ValueError, match="range"):
        dptx.percentile(dptx.ones(3), 101)
    # numpy's 13 methods, bit for bit (a NaN in a slice gives NaN)
    methods = ("inverted_cdf", "averaged_inverted_cdf", "closest_observation",
               "interpolated_inverted_cdf", "hazen", "weibull", "linear", "median_unbiased",
               "normal_unbiased", "lower", "higher", "midpoint", "nearest")
    for x in (np.array([3.5, -1.0, 7.25, 2.0, np.nan, 0.5, 4.0], np.float32),
              rng.integers(-50, 50, (4, 9)).astype(np.int32)):
        d = dptx.asarray(x)
        axis = None if x.ndim == 1 else -1
        qs = (0.25, [0.0, 0.1, 0.5, 0.7, 0.999, 1.0])
        for method in methods:
            # (the sample: a scalar q's 0-d result once per method, on the floats)
            for q in qs if every or x.ndim == 1 else qs[1:]:
                _same(dptx.quantile(d, q, axis=axis, method=method),
                      np.asarray(np.quantile(x, q, axis=axis, method=method)))
    with pytest.raises(ValueError, match="'nope' is not a valid method"):
        dptx.quantile(dptx.ones(3), 0.5, method="nope")


def test_array_methods_and_helpers_numpy_users_reach_for(client):
    h = np.arange(12, dtype=np.float32).reshape(3, 4)
    d = dptx.asarray(h)
    assert d.item(5) == 5.0 and type(d.item(5)) is float and d.item((1, 2)) == 6.0
    assert d.item(1, 3) == 7.0 and d[1, 1].item() == 5.0 and d.tolist() == h.tolist()
    with pytest.raises(IndexError):
        d.item(12)
    assert [r.tolist() for r in d] == h.tolist()
    with pytest.raises(TypeError, match="0-d"):
        iter(d[0, 0])
    import copy
    c = copy.deepcopy(d)
    assert c._buffer is not d._buffer and c.tolist() == h.tolist()
    assert 5 in d and 50 not in d
    _same(round(d / 3, 2), np.round(h / 3, 2))
    for got, want in zip(divmod(d, 5), divmod(h, 5)):
        _same(got, want)
    for got, want in zip(divmod(7, d[:, 1:]), divmod(7, h[:, 1:])):
        _same(got, want)
    _same(d.clip(2, 5), h.clip(2, 5))
    _same(d.ptp(axis=1), np.ptp(h, axis=1))
    _same(d.conj(), h.conj())
    _same(d.real, h.real)
    _same(d.imag, h.imag)
    m = dptx.asarray(np.eye(4, dtype=np.float32) * 2)
    e = d.copy()
    e @= m
    _same(e, h @ (np.eye(4, dtype=np.float32) * 2))
    x = np.array([1.5, np.nan, np.inf, -np.inf, -2.0])
    for dt in (np.float32, np.float64, np.float16):
        for kw in ({}, {"nan": 5, "posinf": 9, "neginf": -9}):
            _same(dptx.nan_to_num(dptx.asarray(x.astype(dt)), **kw), np.nan_to_num(x.astype(dt), **kw))
    dst, want = dptx.zeros(5, np.int32), np.zeros(5, np.int32)
    with pytest.raises(TypeError, match="same_kind"):
        np.copyto(dst, 1.5)
    with pytest.raises(TypeError, match="same_kind"):
        dptx.copyto(dst, dptx.ones(5, np.float32))
    np.copyto(dst, dptx.arange(5, dtype=np.float32) * 2, casting="unsafe")
    np.copyto(want, np.arange(5, dtype=np.float32) * 2, casting="unsafe")
    _same(dst, want)
    np.copyto(dst, 7, where=dptx.arange(5) > 2)
    np.copyto(want, 7, where=np.arange(5) > 2)
    _same(dst, want)


@pytest.mark.cpu_workers("element-wise fills, the same kernels on both clusters")
def test_linspace_computes_in_numpys_type(client):
    """numpy computes linspace in its start's and stop's type (float32 or float16 numpy
    scalars: in that type, one rounding per step), not in float64: up to 787 of 1000 float32
    elements differed before. Bit for bit, with the step and its type."""
    starts = [0.1, -129.25, 7, np.float32(0.1), np.float16(-129.25), np.int32(5), 0,
              np.float32(1e-40)]
    stops = [1000.3, np.float32(1000.3), np.float16(121.125), np.float64(2.5), 3]
    for s in starts:
        for e in stops:
            for n, endpoint, dtype in ((50, True, None), (1000, False, None), (8, True, np.float16),
                                       (50, True, np.int32), (1, True, None), (2, False, np.uint8)):
                with np.errstate(all="ignore"):
                    want, wstep = np.linspace(s, e, n, endpoint=endpoint, dtype=dtype, retstep=True)
                got, step = dptx.linspace(s, e, n, endpoint=endpoint, dtype=dtype, retstep=True)
                _same(got, want)
                assert type(step) is type(wstep) and (step == wstep or np.isnan(wstep))


def test_arange_takes_numpys_type_and_fill(client):
    """numpy's arange type is at least intp with Python numbers at their default types
    (arange(0, 1, np.float32(0.1)) is float64, arange(np.int8(5)) int64), and a float16
    arange is filled in float (numpy's HALF_fill); both differed."""
    cases = [(0, 1, np.float32(0.1), None), (np.int8(1), np.int8(5), 1, None),
             (np.float32(1), np.float32(2), np.float32(0.5), None), (np.uint64(5), None, 1, None),
             (0.1, 2.5, np.float16(0.25), np.float16), (0.1, 2.5, 0.3, np.float16),
             (3000.5, 0, -0.3, np.float16), (True, 5, 1, None), (np.int32(2), 5.0, 1, None)]
    for start, stop, step, dtype in cases:
        _same(dptx.arange(start, stop, step, dtype=dtype), np.arange(start, stop, step, dtype=dtype))
    with pytest.raises(ValueError, match="Maximum allowed size"):
        dptx.arange(np.float16(0.3), 3000.5, 0.001)


def test_binning_interpolation_and_products_follow_numpy(client, every):
    """bincount/histogram/digitize (atomic adds, combined across chunks: exact counts),
    interp (numpy's C loop, bit for bit), tensordot/inner/vdot/kron/cross, partition,
    argpartition, lexsort, put and fill_diagonal, against numpy."""
    rng = np.random.default_rng(3)
    x = rng.integers(0, 50, 100_000)
    _same(dptx.bincount(dptx.asarray(x)), np.bincount(x))
    _same(dptx.bincount(dptx.asarray(x[:10]), minlength=70), np.bincount(x[:10], minlength=70))
    w = rng.random(100_000)
    _same(np.bincount(dptx.asarray(x), dptx.asarray(w)), np.bincount(x, w), exact=False)
    with pytest.raises(ValueError, match="negative"):
        dptx.bincount(dptx.asarray(np.array([1, -1])))
    # the sample: floats with NaNs and an integer type (float16 and uint8: the same kernels
    # at other types)
    for dt in (np.float32, np.int8, np.float16, np.uint8) if every else (np.float32, np.int8):
        a = (rng.standard_normal(50_000) * 30).astype(dt) if dt != np.uint8 else \
            rng.integers(0, 255, 50_000).astype(dt)
        if dt == np.float32:
            a[::97] = np.nan
        d = dptx.asarray(a)
        for kw in ({"bins": 37, "range": (-20.5, 30.25)}, {"bins": [-50, -3, 0, 0, 2.5, 10, 100]},
                   {"bins": 7} if dt != np.float32 else {"bins": 5, "range": (0, 1)},
                   {"bins": 13, "range": (-20, 30), "density": True}):
            got, want = np.histogram(d, **kw), np.histogram(a, **kw)
            _same(got[0], want[0], exact=not kw.get("density"))
            _same(got[1], want[1])
        for bins in ([-5, 0, 3, 10], [10, 3, 0, -5]):
            for right in (False, True):
                _same(np.digitize(d, bins, right), np.digitize(a, bins, right))
    for n in (1, 2, 100):
        xp = np.sort(rng.standard_normal(n) * 10)
        fp = rng.standard_normal(n) * 3
        fp[-1] = np.inf if n == 2 else fp[-1]
        xs = np.concatenate([rng.standard_normal(1000) * 15, xp, [np.nan, np.inf, -np.inf]])
        for kw in ({}, {"left": -7.0, "right": 99}):
            _same(np.interp(dptx.asarray(xs), dptx.asarray(xp), dptx.asarray(fp), **kw),
                  np.interp(xs, xp, fp, **kw))
    a = rng.standard_normal((3, 4, 5)).astype(np.float32)
    b = rng.standard_normal((4, 5, 2)).astype(np.float32)
    da, db = dptx.asarray(a), dptx.asarray(b)
    _same(np.tensordot(da, db), np.tensordot(a, b), exact=False)
    _same(np.tensordot(da, db, axes=([1, 2], [0, 1])), np.tensordot(a, b, axes=([1, 2], [0, 1])),
          exact=False)
    _same(np.inner(da, db[0].T), np.inner(a, b[0].T), exact=False)
    _same(np.vdot(da[0], da[1]), np.asarray(np.vdot(a[0], a[1])), exact=False)
    _same(np.kron(da[0], db[0]), np.kron(a[0], b[0]))
    v, u = rng.standard_normal((7, 3)), rng.standard_normal((7, 3))
    _same(np.cross(dptx.asarray(v), dptx.asarray(u)), np.cross(v, u))
    _same(np.cross(dptx.asarray(v.T.copy()), dptx.asarray(u), axisa=0, axisc=0),
          np.cross(v.T, u, axisa=0, axisc=0))
    # numpy moves the vectors' axes (not swaps them): other axes keep their order, and the
    # result's axis goes to axisc
    t, s = rng.standard_normal((3, 4, 5)), rng.standard_normal((3, 4, 5))
    for axisc in (1, 2, -2):
        _same(np.cross(dptx.asarray(t), dptx.asarray(s), axisa=0, axisb=0, axisc=axisc),
              np.cross(t, s, axisa=0, axisb=0, axisc=axisc))
    # 2-vectors (deprecated by numpy 2, with its warning), with 3-vectors, broadcast
    ints = rng.integers(-9, 9, (5, 1, 2)).astype(np.int32)
    with pytest.warns(DeprecationWarning, match="2-dimensional vectors"):
        for p, q in ((ints, u[:4]), (v[:4], ints[:4, 0, :]), (ints, ints[0])):
            with pytest.warns(DeprecationWarning):
                want = np.cross(p, q)
            _same(np.cross(dptx.asarray(p), dptx.asarray(q)), want)
    z = rng.standard_normal(200)
    part = np.partition(dptx.asarray(z), 50).get()
    assert part[50] == np.sort(z)[50] and np.all(part[:50] <= part[50]) and np.all(part[51:] >= part[50])
    assert z[np.argpartition(dptx.asarray(z), 100).get()[100]] == np.sort(z)[100]
    with pytest.raises(ValueError, match="out of bounds"):
        np.partition(dptx.asarray(z), 200)
    keys = (rng.integers(0, 5, 200), rng.integers(0, 3, 200))
    _same(np.lexsort(tuple(dptx.asarray(k) for k in keys)), np.lexsort(keys))
    for mode in ("raise", "wrap", "clip"):
        h = np.arange(20.0).reshape(4, 5)
        d = dptx.asarray(h)
        ind = [3, -1, 7, 3, 25 if mode != "raise" else 2, 7]       # 3 and 7 repeat: last wins
        np.put(h, ind, [10.0, 20.0, 30.0], mode=mode)
        d.put(ind, dptx.asarray(np.array([10.0, 20.0, 30.0])), mode=mode)
        _same(d, h)
    for shape, wrap, val in (((5, 5), False, 9), ((7, 3), True, 9), ((7, 3), False, [1, 2]),
                             ((3, 3, 3), False, 4)):
        h = np.zeros(shape)
        d = dptx.asarray(h)
        np.fill_diagonal(h, val, wrap)
        np.fill_diagonal(d, val, wrap)
        _same(d, h)


def test_numpys_matmul_ufunc_and_boolean_products(client):
    """np.matmul is a ufunc in numpy 2: on dptx arrays it reached __array_ufunc__ and raised
    "not supported"; now the array API's product, out= included. Boolean products (numpy:
    any of the ands) were refused."""
    rng = np.random.default_rng(4)
    a, b = rng.random((4, 5)).astype(np.float32), rng.random((5, 3)).astype(np.float32)
    _same(np.matmul(dptx.asarray(a), dptx.asarray(b)), np.matmul(a, b), exact=False)
    out = dptx.zeros((4, 3), np.float64)
    assert np.matmul(dptx.asarray(a), dptx.asarray(b), out=out) is out
    np.testing.assert_allclose(out.get(), np.matmul(a, b), rtol=1e-6)     # float32 sums
    for sa, sb in (((5, 7), (7, 3)), ((7,), (7, 4)), ((6, 7), (7,)), ((40, 300), (300, 20))):
        x, y = rng.random(sa) > 0.8, rng.random(sb) > 0.7
        _same(dptx.asarray(x) @ dptx.asarray(y), np.asarray(x @ y))
    x, y = rng.random((5, 7)) > 0.5, rng.random((7, 3)) > 0.5
    got, want = dptx.zeros((5, 3), np.int32), np.zeros((5, 3), np.int32)
    np.matmul(dptx.asarray(x), dptx.asarray(y), out=got)
    np.matmul(x, y, out=want)
    _same(got, want)


@pytest.mark.cpu_workers("the same kernels as on the mixed cluster; a kernel per ufunc and type")
def test_more_of_numpys_ufuncs(client):
    """fabs, deg2rad/radians, rad2deg/degrees, spacing, conjugate, bitwise_count, fmod,
    nextafter, ldexp, heaviside, gcd, lcm, fmin, fmax bit for bit numpy's (numpy's C formulas
    and its C integer arithmetic: lcm is |x| / gcd * |y| in unsigned int or long long,
    wrapped, also where it overflows; fmin/fmax of integers are minimum/maximum); arcsinh,
    arccosh, arctanh, logaddexp(2), float_power within the math library's ulps; float16
    nextafter and spacing on half's own bits, over every half value."""
    rng = np.random.default_rng(9)

    def data(dt, n=300):
        dt = np.dtype(dt)
        if dt.kind == "f":
            x = (rng.standard_normal(n) * 50).astype(dt)
            info = np.finfo(dt)
            x[:12] = [0, -0.0, np.inf, -np.inf, np.nan, 1, -1, 180, 90, info.max, info.tiny, -info.tiny]
            return x
        if dt.kind == "b":
            return rng.random(n) > 0.5
        info = np.iinfo(dt)
        x = rng.integers(max(info.min, -1000), min(info.max, 1000), n).astype(dt)
        x[:3] = [0, info.max, info.min]
        return x
    exact = ["fabs", "deg2rad", "radians", "rad2deg", "degrees", "spacing", "conjugate",
             "bitwise_count", "fmod", "nextafter", "ldexp", "heaviside", "gcd", "lcm", "fmin",
             "fmax"]
    close = ["arcsinh", "arccosh", "arctanh", "logaddexp", "logaddexp2", "float_power"]
    for name in exact + close:
        u = getattr(np, name)
        wider = {"gcd": (np.int64,), "lcm": (np.int64,), "fmin": (np.float16, np.bool_)}
        for dt in (np.float32, np.float64, np.int8, np.int32, np.uint8) + wider.get(name, ()):
            args = [data(dt)] + ([data(np.int32 if name == "ldexp" else dt)[::-1].copy()]
                                 if u.nin == 2 else [])
            with np.errstate(all="ignore"):
                try:
                    want = u(*args)
                except TypeError:
                    with pytest.raises(TypeError):
                        getattr(dptx, name)(*[dptx.asarray(a) for a in args])
                    continue
            got = getattr(dptx, name)(*[dptx.asarray(a) for a in args]).get()
            assert got.dtype == want.dtype, (name, dt)
            if name in exact:
                assert np.array_equal(got, want, equal_nan=True), (name, dt)
            else:
                np.testing.assert_allclose(got, want, rtol=1e-11 if want.dtype == np.float64
                                           else 4e-7, atol=1e-300, equal_nan=True,
                                           err_msg=f"{name} {dt}")
    # float16 nextafter and spacing step half's own bits as numpy's: every half value
    every = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    with np.errstate(all="ignore"):
        assert np.array_equal(np.spacing(dptx.asarray(every)).get().view(np.uint16),
                              np.spacing(every).view(np.uint16))
        for target in (np.inf, -np.inf, -0.0, np.nan, every[rng.permutation(1 << 16)]):
            target = np.broadcast_to(np.float16(target), every.shape).copy()
            got = np.nextafter(dptx.asarray(every), dptx.asarray(target)).get()
            assert np.array_equal(got.view(np.uint16),
                                  np.nextafter(every, target).view(np.uint16))
    # two outputs: modf and frexp in one launch, divmod as floor_divide and remainder
    x = np.array([1.5, -2.25, 0.0, -0.0, np.inf, -np.inf, np.nan, 7.0, 1e-310, 3.75e8])
    for dt in (np.float64, np.float32, np.float16):
        with np.errstate(all="ignore"):
            typed = x.astype(dt)            # (3.75e8 is inf in float16)
        for name in ("modf", "frexp"):
            with np.errstate(all="ignore"):
                want = getattr(np, name)(typed)
            for got, w in zip(getattr(np, name)(dptx.asarray(typed)), want):
                _same(got, w)
    for got, w in zip(np.divmod(dptx.asarray(np.array([7, -7, 9])), 3), np.divmod(np.array([7, -7, 9]), 3)):
        _same(got, w)
    m, e = dptx.zeros(4), dptx.zeros(4, np.int32)
    assert np.frexp(dptx.asarray(np.array([8.0, 0.5, 3.0, 0.0])), out=(m, e))[0] is m
    for got, w in zip((m, e), np.frexp(np.array([8.0, 0.5, 3.0, 0.0]))):
        _same(got, w)


@pytest.mark.cpu_workers("element-wise and reduction kernels tested on both clusters elsewhere")
def test_stacking_rounding_closeness_and_variance_follow_numpy(client, every):
    x = RNG.standard_normal((3, 4)) * 40
    x[0, :3] = [2.5, -0.5, 1.5]                  # halves round to even
    hosts = (x, x.astype(np.int8), x.astype(np.float32), x.astype(np.int32))
    # the sample: a float and an integer type (the others: the same kernels at other types)
    for host in hosts if every else hosts[:2]:
        dev = dptx.asarray(host)
        for decimals in (0, 1, 2, -1, -2):
            _same(np.round(dev, decimals), np.round(host, decimals))
            _same(dev.round(decimals), host.round(decimals))
        for axis in (None, 0, 1):
            for ddof in (0, 1):
                _same(np.var(dev, axis=axis, ddof=ddof), np.asarray(np.var(host, axis=axis, ddof=ddof)),
                      exact=False)
                _same(dev.std(axis=axis, ddof=ddof, keepdims=True),
                      host.std(axis=axis, ddof=ddof, keepdims=True), exact=False)
        # where= (the selected elements' count and sums), correction=, mean=
        mask = RNG.random(4) > 0.3
        mask[0] = True
        for axis in (None, 0, 1):
            _same(np.var(dev, axis=axis, where=mask), np.asarray(np.var(host, axis=axis,
                                                                         where=mask)),
                  exact=False)
            _same(np.std(dev, axis=axis, correction=1, where=mask, keepdims=True),
                  np.std(host, axis=axis, correction=1, where=mask, keepdims=True), exact=False)
        center = host.mean(axis=1, keepdims=True)
        _same(np.var(dev, axis=1, mean=dptx.asarray(center)), np.var(host, axis=1, mean=center),
              exact=False)
        _same(np.stack([dev, dev], axis=1), np.stack([host, host], axis=1))
        _same(dptx.stack([dev, dev], axis=-1), np.stack([host, host], axis=-1))
        _same(np.vstack([dev, dev[0]]), np.vstack([host, host[0]]))
        _same(np.hstack([dev, dev]), np.hstack([host, host]))
        _same(np.hstack([dev[0], dev[1]]), np.hstack([host[0], host[1]]))
        _same(np.column_stack([dev[0], dev[1]]), np.column_stack([host[0], host[1]]))
    with pytest.warns(RuntimeWarning, match="Degrees of freedom <= 0 for slice"):
        np.var(dptx.asarray(x[:, :1]), axis=1, ddof=1)
    with pytest.raises(ValueError, match="ddof and correction can't be provided"):
        np.var(dptx.asarray(x), ddof=1, correction=1)
    _same(np.round(dptx.asarray(x > 0)), np.round(x > 0))             # float16, as numpy
    with pytest.raises(TypeError, match="Cannot cast ufunc 'multiply'"):
        np.round(dptx.asarray(x > 0), 1)
    y = np.array([1.0, np.nan, np.inf, -np.inf, 1e-9, 100.0, 0.0])
    z = np.array([1.0 + 1e-6, np.nan, np.inf, np.inf, 0.0, 100.001, -0.0])
    for equal_nan in (False, True):
        _same(np.isclose(dptx.asarray(y), dptx.asarray(z), equal_nan=equal_nan),
              np.isclose(y, z, equal_nan=equal_nan))
        assert bool(np.allclose(dptx.asarray(y), dptx.asarray(y), equal_nan=equal_nan)) is \
            np.allclose(y, y, equal_nan=equal_nan)
        assert bool(np.array_equal(dptx.asarray(y), dptx.asarray(y), equal_nan=equal_nan)) is \
            np.array_equal(y, y, equal_nan=equal_nan)
    big = np.array([np.iinfo(np.int64).min, 5])        # abs(INT_MIN) taken in float64
    _same(np.isclose(dptx.asarray(big), dptx.asarray(big + [0, 1])), np.isclose(big, big + [0, 1]))
    assert not bool(dptx.array_equal(dptx.asarray(y), dptx.asarray(y[:2])))


def test_running_sums_and_products(client):
    """cumsum/cumprod along each axis in numpy's types: rows of one piece (up to 4096
    elements) bit for bit, longer ones (several pieces, offsets between them) within
    rounding for floats and exactly for integers."""
    short = RNG.standard_normal((3, 7, 5))
    short[0, 0, 0] = -0.0                               # numpy starts from the first element
    long_rows = RNG.standard_normal((2, 9000))
    ints = RNG.integers(-9, 9, (4, 10_000)).astype(np.int32)
    for host in (short, short.astype(np.float32), ints, ints > 0, ints[:, :6].astype(np.int8),
                 long_rows, np.zeros((0, 3)), np.array(5.0)):
        dev = dptx.asarray(host)
        for axis in (None, 0, -1):
            for fn in (np.cumsum, np.cumprod):
                want = fn(host, axis=axis)
                got = fn(dev, axis=axis).get()
                assert got.dtype == want.dtype and got.shape == want.shape
                if host.dtype.kind == "f" and host.shape[-1:] == (9000,) and axis != 0:
                    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
                else:
                    assert np.array_equal(got.view(np.uint8), want.view(np.uint8)), (host.dtype,
                                                                                   axis, fn)
    _same(dptx.arange(5).cumsum(dtype=np.float32), np.arange(5).cumsum(dtype=np.float32))
    out = dptx.zeros((3, 7, 5), np.float32)
    assert np.cumsum(dptx.asarray(short), axis=1, out=out) is out
    _same(out, np.cumsum(short, axis=1).astype(np.float32))


def _same_half(got, want):
    """Equal dtypes, shapes and bits, NaN for NaN (a NaN's payload is not numpy's to fix)."""
    got = got.get() if isinstance(got, dptx.ndarray) else got
    want = np.asarray(want)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype)
    if want.dtype.kind != "f":
        np.testing.assert_array_equal(got, want)
        return
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    assert np.array_equal(got[~nan].view(np.uint8), want[~nan].view(np.uint8)), (got, want)


def test_float16_computes_as_numpys_half_loops(client):
    """float16 operands are computed on in float and each result rounded once to half, as
    numpy's half loops do (so + - * / and sqrt are correctly rounded, bit for bit numpy's);
    conversions to half round once from the source type; sums accumulate in float."""
    x = np.array([1.5, -2.25, 0.0, -0.0, np.inf, np.nan, 65504, 1e-7, 3.3, -7.0, 2.5], np.float16)
    y = np.array([2.0, 0.5, -1.0, 3.0, 1.0, 2.0, 2.0, 1e-3, -3.3, 0.0, 2.5], np.float16)
    d, e = dptx.asarray(x), dptx.asarray(y)
    with np.errstate(all="ignore"):
        for f in (np.add, np.subtract, np.multiply, np.true_divide, np.floor_divide,
                  np.remainder, np.maximum, np.fmin, np.less, np.equal, np.hypot, np.copysign):
            _same_half(f(d, e), f(x, y))
            _same_half(f(d, 2), f(x, 2))                               # a weak scalar
            _same_half(f(d, dptx.asarray(y.astype(np.int8))), f(x, y.astype(np.int8)))
        for f in (np.sqrt, np.negative, np.absolute, np.floor, np.rint, np.sign, np.isnan,
                  np.signbit, lambda v: v ** 2, lambda v: v * 2 + 1, lambda v: v // 2):
            _same_half(f(d), f(x))
        finite = x[np.isfinite(x)]
        for t in (np.float32, np.float64, np.int32, np.uint8, bool):
            _same_half(dptx.asarray(finite).astype(t), finite.astype(t))
        src = np.array([1e-5, 0.1, 2049, 65519, 65520, -3, 1e6, 0.5, 3.14159265, 2 ** -25])
        for t in (np.float64, np.float32, np.int64, np.uint8):
            _same_half(dptx.asarray(src.astype(t)).astype(np.float16), src.astype(t).astype(np.float16))
        big = RNG.standard_normal(100_000).astype(np.float16)
        db = dptx.asarray(big)
        for op in ("max", "min", "argmax", "any"):
            _same_half(getattr(db, op)(), np.asarray(getattr(big, op)()))
        exact = big.astype(np.float64).sum()
        assert db.sum().dtype == np.float16
        assert abs(float(db.sum()) - exact) <= 1e-3 * np.abs(big).astype(np.float64).sum() + 0.5
        assert abs(float(db.mean()) - float(big.mean())) <= 2e-3
        _same_half(db[db > 0], big[big > 0])
        fused = dptx.fuse(lambda v, w: v * w + 1)
        _same_half(fused(d, e), x * y + 1)
        square = dptx.ElementwiseKernel("T v", "T w", "w = v * v + v", "half_square")
        _same_half(square(d), x * x + x)
    mixed = np.ones((2, 3), np.float16) * 1.5
    _same_half(dptx.asarray(mixed) @ dptx.asarray(np.ones((3, 2), np.float32)),
               mixed @ np.ones((3, 2), np.float32))
    # numpy's half products: each sum in float, in order, rounded once (bit for bit; a
    # warp's order of a vector's sums differed from numpy's in the last bit in 2 of 60 such
    # products of this seed)
    rng = np.random.default_rng(5)
    for draw in range(8):
        h1 = (rng.standard_normal((20, 300)) * 2).astype(np.float16)
        h2 = (rng.standard_normal((300, 10)) * 2).astype(np.float16)
        pairs = [(h1, h2[:, 0]), (h1[0], h2[:, 0])]
        if draw == 0:                   # (matrices: the same kernel for every draw)
            pairs += [(h1, h2), (h1.reshape(2, 10, 300), h2), (h1[0], h2),
                      (h1[0], h2.reshape(1, 300, 10))]
        for p, q in pairs:
            _same(dptx.asarray(p) @ dptx.asarray(q), p @ q)
    _same(dptx.dot(dptx.asarray(h1), dptx.asarray(h2)), np.dot(h1, h2))


def test_matrix_and_rearranging_routines(client):
    x = RNG.standard_normal((4, 5))
    d = dptx.asarray(x)
    for k in (-2, 0, 1, 7):
        _same(dptx.eye(4, 6, k), np.eye(4, 6, k))
        _same(np.tril(d, k), np.tril(x, k))
        _same(np.triu(d, k), np.triu(x, k))
        _same(np.diagonal(d, k), np.diagonal(x, k))
        _same(np.trace(d, k), np.asarray(np.trace(x, k)), exact=False)
        _same(dptx.diag(d[0], k), np.diag(x[0], k))
        _same(np.diag(d, k), np.diag(x, k))
    _same(dptx.identity(3, dtype=np.int32), np.identity(3, dtype=np.int32))
    _same(np.outer(d[0], d[1]), np.outer(x[0], x[1]))
    view = d.diagonal(1)                     # a view, as numpy's: writes reach the array
    assert view.base is not None
    for axis in (None, 0, 1, (0, 1)):
        _same(np.flip(d, axis), np.flip(x, axis))
    _same(np.fliplr(d), np.fliplr(x))
    _same(np.flipud(d), np.flipud(x))
    for shift, axis in ((1, None), (-3, None), (2, 0), (7, 1), ((1, 2), (0, 1)), (0, 0)):
        _same(np.roll(d, shift, axis), np.roll(x, shift, axis))
    for count, axis in ((2, None), (3, 0), (2, 1), (0, 1)):
        _same(np.repeat(d, count, axis), np.repeat(x, count, axis))
    for reps in (2, (2, 1), (1, 3), (2, 2, 2), 0):
        _same(np.tile(d, reps), np.tile(x, reps))
    for n, axis in ((1, -1), (2, 0), (0, 1), (3, 1)):
        _same(np.diff(d, n, axis), np.diff(x, n, axis))
    _same(np.diff(d > 0), np.diff(x > 0))
    small = (x * 10).astype(np.int8)
    _same(np.diff(dptx.asarray(small)), np.diff(small))
    # one count per element (on the host or the devices)
    for counts, axis in (([1, 0, 2, 5], 0), (np.array([2, 2, 0, 1, 3]), 1),
                         (np.arange(20) % 3, None)):
        _same(np.repeat(d, counts, axis), np.repeat(x, counts, axis))
        _same(np.repeat(d, dptx.asarray(np.asarray(counts)), axis), np.repeat(x, counts, axis))
    with pytest.raises(ValueError, match="negative values"):
        np.repeat(d, [1, -1, 2, 0], 0)
    # searchsorted: numpy's places, NaN last, both sides, a sorter
    for a in (np.sort(RNG.integers(0, 20, 50)), np.array([1.0, 2.0, 2.0, np.nan]),
              np.sort(RNG.standard_normal(1000)).astype(np.float32), np.array([], np.float64)):
        for v in (np.array([0, 2, 2.5, 19, 25, np.nan, -np.inf]), np.array([[1, 2], [3, 30]])):
            for side in ("left", "right"):
                _same(np.searchsorted(dptx.asarray(a), dptx.asarray(v), side=side),
                      np.searchsorted(a, v, side=side))
    keys = RNG.integers(0, 100, 30)
    order = np.argsort(keys, kind="stable")
    _same(np.searchsorted(dptx.asarray(keys), dptx.asarray(np.array([10, 50])),
                          sorter=dptx.asarray(order)),
          np.searchsorted(keys, [10, 50], sorter=order))


def test_sort_and_argsort_as_numpys_stable_sort(client, cluster_kind):
    """A merge sort on the devices: numpy's values (NaN last, infinities in place), argsort's
    indices those of numpy's kind='stable' (equal elements keep their order), along any axis
    and of the flattened array; rows of one run, of several runs and passes, not powers of
    two. The mixed cluster runs the same kernels for two of the types and unique for one
    (each type's sort modules are compiled and checked with ptxas there: 30 s for all)."""
    cases = (((10,), np.float64), ((1000,), np.float32), ((5000,), np.int32),
             ((3, 2500), np.float64), ((7, 33), np.int8), ((70_000,), np.float32),
             ((4096 * 3 + 5,), np.int64), ((0,), np.float32), ((1,), np.uint8),
             ((300,), np.float16), ((20, 45), np.bool_))
    if cluster_kind == "mixed":
        cases = cases[4:6]
    for shape, dtype in cases:
        x = (RNG.standard_normal(shape) * 50).astype(dtype)
        if x.dtype.kind == "f" and x.size > 5:
            x.flat[::7] = np.nan
            x.flat[3], x.flat[4] = np.inf, -np.inf
        elif x.size > 20:
            x.flat[::3] = 5                      # many ties: stability shows in argsort
        d = dptx.asarray(x)
        for axis in (-1, 0, None) if x.ndim > 1 else (-1, None):   # (1-D: 0 is -1)
            _same(np.sort(d, axis=axis), np.sort(x, axis=axis))
            _same(np.argsort(d, axis=axis), np.argsort(x, axis=axis, kind="stable"))
    y = dptx.asarray(np.array([3.0, np.nan, 1.0, 2.0]))
    y.sort()
    _same(y, np.array([1.0, 2.0, 3.0, np.nan]))
    # unique: values, first indices, inverse (in the input's shape), counts; NaNs one value
    uniques = (np.array([[3, 1], [3, 2]]), RNG.integers(0, 50, 5000),
               np.array([np.nan, 1, np.nan, 2.0, 1.0]), RNG.standard_normal(300).round(1),
               np.array([], np.float32), RNG.random(2000) > 0.5)
    for x in uniques if cluster_kind == "cpu" else uniques[2:4]:
        for equal_nan in (True, False):
            want = np.unique(x, return_index=True, return_inverse=True, return_counts=True,
                             equal_nan=equal_nan)
            got = np.unique(dptx.asarray(x), return_index=True, return_inverse=True,
                            return_counts=True, equal_nan=equal_nan)
            for g, w in zip(got, want):
                _same(g, w)


def test_conversions_and_linspace_as_numpy_rounds(client):
    # a negative float into an unsigned type: numpy wraps it (a GPU's cast would saturate)
    f = np.array([-74.7, -1.0, 0.0, 72.9, 255.0, -300.5, 1e4])
    with np.errstate(invalid="ignore"):
        for dst in (np.uint8, np.uint16, np.uint32, np.uint64, np.int8, np.int32):
            for src in (np.float16, np.float32, np.float64):   # (float16 to uint64 did not
                _same(dptx.asarray(f.astype(src)).astype(dst),    # compile: __half's < 0)
                      f.astype(src).astype(dst))
        u = dptx.zeros(7, np.uint8)
        u[...] = dptx.asarray(f)                 # assignment converts the same way
        _same(u, f.astype(np.uint8))
        # so do reductions and running sums into an integer dtype (they saturated)
        for x in (f, f.astype(np.float16)):
            d = dptx.asarray(x)
            _same(d.sum(dtype=np.uint64), np.asarray(x.sum(dtype=np.uint64)))
            _same(d.prod(dtype=np.int8), np.asarray(x.prod(dtype=np.int8)))
            _same(d.cumsum(dtype=np.uint16), x.cumsum(dtype=np.uint16))
    # numpy 2 floors linspace's values for an integer dtype
    _same(dptx.linspace(-1, 1, 9, dtype=np.int32), np.linspace(-1, 1, 9, dtype=np.int32))
    _same(dptx.linspace(-7.5, 3, 10, dtype=np.int64), np.linspace(-7.5, 3, 10, dtype=np.int64))


@pytest.mark.cpu_workers("a kernel per reduction, dtype and axes; compile time")
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_reductions_follow_numpy(client, dtype):
    a = _data(dtype, (4, 6, 5))
    d = dptx.asarray(a)
    exact = dtype != "float32"
    axes = ((None, False), (1, False), (1, True), (-1, False), ((0, 2), True)) \
        if dtype == "float32" else ((None, False), ((0, 2), True))
    for axis, keepdims in axes:
        kw = {"axis": axis, "keepdims": keepdims}
        if exact:
            _same(d.sum(**kw), np.asarray(a.sum(**kw)))
            _same(d.mean(**kw), np.asarray(a.mean(**kw)), exact=False)
        else:           # float32 sums in another order: within their rounding bound
            _same_sum(d.sum(**kw), a, np.add.reduce, **kw)
            _same_sum(d.mean(**kw), a, np.mean, **kw)
        _same(d.max(**kw), np.asarray(a.max(**kw)))
        _same(d.min(**kw), np.asarray(a.min(**kw)))
        _same(d.any(**kw), np.asarray(a.any(**kw)))
        _same(d.all(**kw), np.asarray(a.all(**kw)))
    _same(d.prod(axis=2), a.prod(axis=2), exact=exact)
    for axis in (None, 0, 2):
        _same(d.argmax(axis=axis), np.asarray(a.argmax(axis=axis)))
        _same(d.argmin(axis=axis), np.asarray(a.argmin(axis=axis)))
    b = a > 0
    _same(dptx.asarray(b).sum(axis=1), b.sum(axis=1))
    _same(dptx.asarray(b).all(axis=(0, 2)), b.all(axis=(0, 2)))


def test_long_reductions_across_pieces_and_warps(client):
    """A reduced axis long enough to be cut into pieces (blocks) and, inside each, into one
    share per warp: every element counted once, extremes and their first index found across
    shares (ties placed in different warps' shares and pieces), integer sums exact."""
    n = 3 * 65536 + 1234                # pieces and warp shares of uneven lengths
    ints = RNG.integers(-1000, 1000, n).astype(np.int64)
    d = dptx.asarray(ints)
    _same(d.sum(), np.asarray(ints.sum()))
    v = RNG.random(n).astype(np.float32)
    for at in (70_000, 5, 150_000, 131_071):    # ties: the first index is numpy's answer
        v[at] = 2.0
    v[[9, 100_000, 196_000]] = -1.0
    dv = dptx.asarray(v)
    _same(dv.argmax(), np.asarray(v.argmax()))
    _same(dv.argmin(), np.asarray(v.argmin()))
    _same(dv.max(), np.asarray(v.max()))
    m = RNG.integers(0, 50, (3, 40_000)).astype(np.int32)
    _same(dptx.asarray(m).sum(axis=1), m.sum(axis=1))
    _same(dptx.asarray(m).max(axis=1), m.max(axis=1))
    np.testing.assert_allclose(dv.sum().get(), v.sum(dtype=np.float64), rtol=1e-5)


def test_row_reductions_in_each_mode(client):
    """Many outputs: a warp per output up to WARP_ROWS elements (lanes, a tail step and a tree
    of shuffles of the value as words: the (value, index) pairs of argmax too), a block per
    output beyond; rows not a multiple of 32 or of 8 per block; ties in different lanes and
    in the tail step, where the first index is numpy's answer; integer sums exact."""
    from dptx._core import reduction_kernel
    for rows, n in ((1001, 77), (70, reduction_kernel.WARP_ROWS),
                    (65, reduction_kernel.WARP_ROWS + 3),
                    (300, 5)):
        ints = RNG.integers(-1000, 1000, (rows, n)).astype(np.int64)
        _same(dptx.asarray(ints).sum(axis=1), ints.sum(axis=1))
        v = RNG.random((rows, n)).astype(np.float32)
        v[:, n - 1] = 2.0                    # the last element (a tail lane) ties ...
        v[::2, n // 2] = 2.0                 # ... with one in the middle of even rows
        v[1::3, 0] = -1.0
        d = dptx.asarray(v)
        _same(d.argmax(axis=1), v.argmax(axis=1))
        _same(d.argmin(axis=1), v.argmin(axis=1))
        _same(d.max(axis=1), v.max(axis=1))
        _same(d.sum(axis=1), v.sum(axis=1), exact=False)
        b = v > 0.5
        _same(dptx.asarray(b).any(axis=1), b.any(axis=1))
        _same(dptx.asarray(b).all(axis=1), b.all(axis=1))
        _same(d.T.sum(axis=0), v.T.sum(axis=0), exact=False)     # a strided view


def test_column_reductions_walk_rows_in_order(client):
    """Reducing the leading axes of a C-contiguous array (``m.sum(axis=0)``): a thread per
    output walking the rows; up to COLUMN_ROWS rows in numpy's own order (bit for bit), more in
    pieces of rows whose partials are added in order (within n * eps * sum |x| of the exact
    sum); argmin/argmax the first index of ties, integer sums exact."""
    from dptx._core import reduction_kernel
    short = RNG.random((reduction_kernel.COLUMN_ROWS, 300)).astype(np.float32)
    _same(dptx.asarray(short).sum(axis=0), short.sum(axis=0))
    _same(dptx.asarray(short).mean(axis=0), short.mean(axis=0))
    for shape in ((1000, 70), (3000, 257)):
        v = RNG.random(shape).astype(np.float32)
        v[::7, 3] = 2.0                          # ties down a column, the first is numpy's
        v[5::11, 10] = -1.0
        d = dptx.asarray(v)
        got = d.sum(axis=0).get()
        exact = v.astype(np.float64).sum(axis=0)
        assert np.all(np.abs(got - exact) <= shape[0] * 6e-8 * np.abs(v).sum(axis=0))
        _same(d.argmax(axis=0), v.argmax(axis=0))
        _same(d.argmin(axis=0), v.argmin(axis=0))
        _same(d.max(axis=0, keepdims=True), v.max(axis=0, keepdims=True))
        ints = RNG.integers(-1000, 1000, shape)
        _same(dptx.asarray(ints).sum(axis=0), ints.sum(axis=0))
    cube = RNG.standard_normal((40, 9, 80))
    _same(dptx.asarray(cube).sum(axis=(0, 1)), cube.sum(axis=(0, 1)), exact=False)
    _same(dptx.asarray(cube).min(axis=(0, 1)), cube.min(axis=(0, 1)))
    # a transposed view is reduced as the array it views (no copy), kept axes in its order
    x = RNG.standard_normal((4, 5, 6, 7))
    dx = dptx.asarray(x)
    for perm in ((1, 0, 2, 3), (3, 2, 1, 0), (2, 0, 3, 1)):
        for axis in (None, 0, 1, (0, 2), (1, 3), -1):
            for keepdims in (False, True):
                _same(dx.transpose(perm).sum(axis=axis, keepdims=keepdims),
                      np.asarray(x.transpose(perm).sum(axis=axis, keepdims=keepdims)),
                      exact=False)
                _same(dx.transpose(perm).max(axis=axis, keepdims=keepdims),
                      np.asarray(x.transpose(perm).max(axis=axis, keepdims=keepdims)))
            if not isinstance(axis, tuple):
                _same(dx.transpose(perm).argmax(axis=axis),
                      np.asarray(x.transpose(perm).argmax(axis=axis)))


def test_reductions_on_every_kind_of_worker(client):
    a = _data("float32", (4, 6, 5))
    d = dptx.asarray(a)
    for axis in (None, 1):
        got = d.sum(axis=axis).get()
        assert got.dtype == np.float32
        # any order of float32 additions is within n * eps * sum |x| of the exact sum
        exact = a.astype(np.float64).sum(axis=axis)
        bound = a[0].size * np.finfo(np.float32).eps * np.abs(a).astype(np.float64).sum(axis=axis)
        assert np.all(np.abs(got - exact) <= bound)
        _same(d.max(axis=axis), np.asarray(a.max(axis=axis)))
        _same(np.argmax(d, axis=axis), np.asarray(a.argmax(axis=axis)))


def test_reductions_of_nan_empty_and_bad_axes(client):
    a = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, np.nan]])
    d = dptx.asarray(a)
    _same(d.max(axis=1), a.max(axis=1))
    _same(d.argmax(axis=1), a.argmax(axis=1))
    _same(d.argmin(), np.asarray(a.argmin()))
    with pytest.raises(np.exceptions.AxisError):
        d.sum(axis=2)
    with pytest.raises(ValueError, match="zero-size array"):
        dptx.zeros((0, 3)).max()
    _same(dptx.zeros((0, 3)).sum(axis=0), np.zeros((0, 3)).sum(axis=0))
    # numpy's rule for min/max/argmax: an error exactly when a reduced axis is empty, even
    # where the result is empty too, none where only a kept axis is
    for shape, axis in [((0, 3), 1), ((3, 0), 0), ((0, 3), 0), ((0, 0), 1), ((2, 0, 3), (0, 2)),
                        ((2, 0, 3), 1), ((0, 3), None)]:
        e = np.zeros(shape, np.float32)
        for op in ("min", "argmax"):
            if op == "argmax" and isinstance(axis, tuple):
                continue
            try:
                want = np.asarray(getattr(e, op)(axis=axis))
            except ValueError as error:
                with pytest.raises(ValueError, match=str(error)):
                    getattr(dptx.asarray(e), op)(axis=axis)
                continue
            _same(getattr(dptx.asarray(e), op)(axis=axis), want)
    big = RNG.random(300_000)
    np.testing.assert_allclose(dptx.asarray(big).sum().get(), big.sum(), rtol=1e-12)


def test_matmul_and_dot(client, linalg_path):
    A, B = RNG.random((37, 19)), RNG.random((19, 23))
    v = RNG.random(19)
    np.testing.assert_allclose((dptx.asarray(A) @ dptx.asarray(B)).get(), A @ B, rtol=1e-12)
    np.testing.assert_allclose(dptx.matmul(dptx.asarray(A), dptx.asarray(v)).get(), A @ v,
                               rtol=1e-12)
    np.testing.assert_allclose(np.dot(dptx.asarray(v), dptx.asarray(v)).get(), v @ v, rtol=1e-12)
    f = dptx.asarray(A.astype(np.float32)) @ dptx.asarray(B.astype(np.int32))
    assert f.dtype == np.result_type(np.float32, np.int32)
    with pytest.raises(ValueError, match="mismatch in its core dimension"):
        dptx.asarray(A) @ dptx.asarray(A)


def test_matmul_of_stacks_and_dot_of_more_dimensions(client, monkeypatch, kernels):
    """matmul of arrays of more than 2 dimensions: stacks of matrices, their stack dimensions
    broadcast (and a vector operand), each output the sum over k in order (bit for bit
    against that sum; integers exact, narrow ones wrapping as numpy's); a stack longer than
    the grid's z runs in several launches. numpy.dot of more dimensions pairs every row of
    a with every column of b (not matmul's stacks)."""
    def in_order(a, b):
        a2 = a[..., None, :] if a.ndim == 1 else a
        b2 = b[..., :, None] if b.ndim == 1 else b
        want = np.zeros(np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
                        + (a2.shape[-2], b2.shape[-1]), np.result_type(a, b))
        for kk in range(a2.shape[-1]):
            want = want + a2[..., :, kk:kk + 1] * b2[..., kk:kk + 1, :]
        return want.reshape(np.matmul(a, b).shape)
    monkeypatch.setattr(dptx._core.products, "_MAX_GRID_Z", 3)     # stacks of 4 and more split
    for sa, sb in [((2, 3, 4), (2, 4, 5)), ((3, 4), (2, 4, 5)), ((4,), (2, 4, 5)),
                   ((2, 3, 4), (4,)), ((2, 1, 3, 4), (5, 4, 6)), ((1, 70, 33), (7, 33, 19)),
                   ((2, 0, 3), (2, 3, 4)), ((2, 3, 0), (2, 0, 4))]:
        a, b = RNG.random(sa), RNG.random(sb)
        got = dptx.asarray(a) @ dptx.asarray(b)
        np.testing.assert_array_equal(got.get(), in_order(a, b))
        assert got.shape == np.matmul(a, b).shape
        ai, bi = RNG.integers(-99, 99, sa).astype(np.int8), RNG.integers(-99, 99, sb).astype(np.int8)
        _same(np.matmul(dptx.asarray(ai), dptx.asarray(bi)), np.matmul(ai, bi))
        _same(dptx.asarray(ai > 0) @ dptx.asarray(bi > 0), (ai > 0) @ (bi > 0))
    a, b = RNG.random((3, 4, 5)).astype(np.float32), RNG.random((5, 6)).astype(np.float32)
    out = dptx.empty((3, 4, 6), np.float64)
    assert dptx.matmul(dptx.asarray(a), dptx.asarray(b), out=out) is out
    np.testing.assert_allclose(out.get(), a @ b, rtol=1e-6)
    with pytest.raises(ValueError, match="could not be broadcast"):
        dptx.ones((2, 3, 4)) @ dptx.ones((3, 4, 5))
    with pytest.raises(ValueError, match="mismatch in its core dimension"):
        dptx.ones((2, 3, 4)) @ dptx.ones((2, 5, 6))
    for sa, sb in [((2, 3, 4), (2, 4, 5)), ((2, 3, 4), (4,)), ((4,), (2, 4, 5)),
                   ((3, 4), (2, 4, 5)), ((2, 3, 4), (4, 5)), ((2, 0, 4), (3, 4, 2))]:
        a, b = RNG.random(sa), RNG.random(sb)
        np.testing.assert_allclose(np.dot(dptx.asarray(a), dptx.asarray(b)).get(), np.dot(a, b),
                                   rtol=1e-12)
        out = dptx.empty(np.dot(a, b).shape)
        assert dptx.dot(dptx.asarray(a), dptx.asarray(b), out=out) is out
        np.testing.assert_allclose(out.get(), np.dot(a, b), rtol=1e-12)
    m, v = RNG.random((3, 4)), RNG.random(4)
    out = dptx.empty(3)          # (a matrix by a vector: out has the vector's shape)
    np.testing.assert_allclose(dptx.dot(dptx.asarray(m), dptx.asarray(v), out=out).get(), m @ v)
    with pytest.raises(ValueError, match=r"shapes \(2,3,4\) and \(5,6\) not aligned"):
        dptx.dot(dptx.ones((2, 3, 4)), dptx.ones((5, 6)))


EINSUMS = [
    ("ij,jk->ik", [(3, 4), (4, 5)]), ("ij,jk", [(3, 4), (4, 5)]), ("ii->i", [(4, 4)]),
    ("ii", [(4, 4)]), ("ij->ji", [(3, 5)]), ("ij->", [(3, 5)]), ("ij->j", [(3, 5)]),
    ("i,i->", [(6,), (6,)]), ("i,j->ij", [(3,), (4,)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("bi,bi->b", [(5, 7), (5, 7)]), ("...ij,...jk->...ik", [(2, 3, 4), (4, 5)]),
    ("ij,ij->ij", [(3, 1), (3, 4)]), ("ijk,jil->kl", [(3, 4, 5), (4, 3, 2)]),
    ("ij,jk,kl->il", [(3, 4), (4, 5), (5, 2)]), ("iij->j", [(3, 3, 4)]), ("j,ij->i", [(5,), (6, 5)]),
    ("...i,...i", [(2, 3, 4), (3, 4)]), ("i...->...", [(3, 2, 4)]), ("ab,bc->ac", [(4, 1), (3, 2)]),
    ("abc,cd,de->abe", [(2, 3, 4), (4, 5), (5, 6)]), ("ijkl,jl->ik", [(2, 3, 4, 5), (3, 5)]),
    (",->", [(), ()]), ("i,->i", [(3,), ()]), ("ij,kl->ijkl", [(2, 3), (3, 2)]),
    ("Ab,bC->AC", [(2, 3), (3, 4)]), ("ij,jk->ik", [(3, 0), (0, 4)]),
]


@pytest.mark.cpu_workers("the same kernels as on the mixed cluster; many small launches")
def test_einsum_follows_numpy(client):
    """numpy.einsum: explicit and implicit outputs, ``...``, repeated labels (diagonals),
    labels of size 1 broadcast, sums, outer products, stacks, three operands in numpy's
    order of contraction or the optimizer's; numpy's result type (bool as "any pair", int8
    wrapping), ``dtype=``/``casting=``/``out=``, the interleaved form, a view where numpy
    returns one, and numpy's errors."""
    for opt in (False, "optimal"):
        for sub, shapes in EINSUMS:
            if opt and len(shapes) < 3:     # one pair (or none): the same steps as without
                continue
            for dt in (np.float64, np.int8, np.bool_):
                ops = [RNG.random(s) > 0.5 if dt == np.bool_ else
                       RNG.integers(-9, 9, s).astype(dt) if dt == np.int8 else RNG.random(s)
                       for s in shapes]
                want = np.asarray(np.einsum(sub, *ops, optimize=opt))
                got = dptx.einsum(sub, *[dptx.asarray(o) for o in ops], optimize=opt)
                if dt == np.float64:
                    assert got.dtype == want.dtype and got.shape == want.shape, sub
                    np.testing.assert_allclose(got.get(), want, rtol=1e-12, err_msg=sub)
                else:
                    _same(got, want)
    a, b = RNG.random((3, 4)).astype(np.float32), RNG.random((4, 5)).astype(np.float32)
    d = np.einsum("ij,jk", dptx.asarray(a), dptx.asarray(b), dtype=np.float64)   # numpy's
    assert isinstance(d, dptx.ndarray) and d.dtype == np.float64
    np.testing.assert_allclose(d.get(), np.einsum("ij,jk", a, b, dtype=np.float64), rtol=1e-12)
    with pytest.raises(TypeError, match="rule 'safe'"):
        dptx.einsum("ij,jk", dptx.asarray(a), dptx.asarray(b), dtype=np.int32)
    out = dptx.empty((3, 5), np.float64)
    assert dptx.einsum("ij,jk", dptx.asarray(a), dptx.asarray(b), out=out) is out
    np.testing.assert_allclose(out.get(), a @ b, rtol=1e-6)
    np.testing.assert_allclose(
        dptx.einsum(dptx.asarray(a), [0, 1], dptx.asarray(b), [1, 2], [0, 2]).get(),
        np.einsum(a, [0, 1], b, [1, 2], [0, 2]), rtol=1e-6)
    x = dptx.asarray(np.arange(12.0).reshape(3, 4))
    t = dptx.einsum("ij->ji", x)                         # a view, as numpy's
    assert dptx.may_share_memory(t, x) and t.shape == (4, 3)
    for sub, shapes, message in [
            ("ij,jk", [(3, 2), (4, 5)], "could not be broadcast"),
            ("ij->k", [(2, 2)], "output subscript 'k' which never appeared"),
            ("ij", [(2, 2, 2)], "more dimensions than subscripts"),
            ("ijk", [(2, 2)], "too many subscripts for operand 0"),
            ("ii->i", [(2, 3)], "collapsing index 'i'"), ("i->ii", [(2,)], "multiple times"),
            ("i1", [(2, 2)], "invalid subscript '1'"), ("ij,jk", [(2, 2)], "more operands")]:
        with pytest.raises(ValueError, match=message):
            np.einsum(sub, *[np.ones(s) for s in shapes])          # (numpy's own)
        with pytest.raises(ValueError, match=message):
            dptx.einsum(sub, *[dptx.ones(s) for s in shapes])


@pytest.mark.cpu_workers("made of the reductions and products tested on both clusters")
@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")   # (numpy's own, ord < 0)
def test_linalg_norms_chains_and_powers_follow_numpy(client, every):
    """dptx.linalg (and numpy.linalg on dptx arrays): norm of vectors and matrices for each
    order numpy has without singular values, along axes, keepdims, integers as float;
    multi_dot in numpy's order with vectors at the ends; matrix_power of stacks, n = 0..8."""
    rng = np.random.default_rng(4)
    shapes, types = [(7,), (4, 5), (3, 4, 5)], (np.float64, np.float32, np.int32)
    # the sample: each rank once and each type once (the kernels take the type as a
    # parameter; the axes handling depends on the rank)
    for shape, dt in itertools.product(shapes, types) if every else zip(shapes, types):
        x = (rng.standard_normal(shape) * 3).astype(dt)
        d = dptx.asarray(x)
        _same(dptx.linalg.norm(d), np.asarray(np.linalg.norm(x)), exact=False)
        _same(np.linalg.norm(d, keepdims=True), np.linalg.norm(x, keepdims=True), exact=False)
        for order in (None, 0, 1, 2, 3, 0.5, -1, np.inf, -np.inf):
            for ax in range(len(shape)):
                _same(dptx.linalg.norm(d, order, ax, True), np.linalg.norm(x, order, ax, True),
                      exact=False)
        if len(shape) > 1:
            for order in (None, "fro", 1, -1, np.inf, -np.inf):
                for ax in [(0, 1), (-1, -2)] + ([(2, 0)] if len(shape) == 3 else []):
                    _same(dptx.linalg.norm(d, order, ax), np.linalg.norm(x, order, ax),
                          exact=False)
    with pytest.raises(ValueError, match="Invalid norm order 'fro' for vectors"):
        dptx.linalg.norm(dptx.ones(3), "fro")
    # the norms of singular values (dptx.linalg.svd's)
    for shape in ((5, 3), (2, 4, 4)):
        x = rng.standard_normal(shape)
        for order in (2, -2, "nuc"):
            for ax in ((-2, -1), (-1, -2)):
                _same(dptx.linalg.norm(dptx.asarray(x), order, ax, keepdims=True),
                      np.linalg.norm(x, order, ax, keepdims=True), exact=False)
    A, B, C, D = rng.random((10, 30)), rng.random((30, 5)), rng.random((5, 60)), rng.random(60)
    _same(dptx.linalg.multi_dot([dptx.asarray(v) for v in (A, B, C, D)]),
          np.linalg.multi_dot([A, B, C, D]), exact=False)
    _same(np.linalg.multi_dot([dptx.asarray(v) for v in (B[:, 0], B, C)]),
          np.linalg.multi_dot([B[:, 0], B, C]), exact=False)
    M, Mi = rng.random((3, 4, 4)) - 0.5, rng.integers(-3, 3, (4, 4))
    for n in range(9):
        _same(dptx.linalg.matrix_power(dptx.asarray(M), n), np.linalg.matrix_power(M, n),
              exact=False)
        _same(np.linalg.matrix_power(dptx.asarray(Mi), n), np.linalg.matrix_power(Mi, n))


@pytest.mark.cpu_workers("made of the reductions and where tested on both clusters")
def test_reductions_with_where_and_initial(client, every):
    """numpy's ``where=`` (a mask that broadcasts; min/max need ``initial``) and
    ``initial=`` (combined with each result; the whole result where the axes are empty) on
    sum prod min max any all mean, host and device masks, keepdims, integer and bool
    inputs; numpy's errors."""
    import warnings
    rng = np.random.default_rng(9)
    a = rng.random((4, 5)) * 10
    ai = rng.integers(-50, 50, (4, 5)).astype(np.int8)
    masks = [rng.random((4, 5)) > 0.5, rng.random(5) > 0.3,
             np.array([[True], [False], [True], [False]]), np.zeros((4, 5), bool)]
    for x in (a, ai, ai > 0):
        d = dptx.asarray(x)
        for n, name in enumerate(("sum", "prod", "min", "max", "any", "all", "mean")):
            for a, (axis, kd) in enumerate(((None, False), (0, True), (1, False))):
                # the sample: each mask (and its initial) with each reduction, along one of
                # the axes in turn (every axis meets every mask over the reductions)
                for k, (w, init) in enumerate(zip(masks + [None], [3, None, -2, 3, 3])):
                    if not every and (n + k) % 3 != a:
                        continue
                    kw = {"axis": axis, "keepdims": kd}
                    if w is not None:
                        kw["where"] = w
                    if init is not None and name not in ("any", "all", "mean"):
                        kw["initial"] = init
                    if name in ("min", "max") and "initial" not in kw and w is not None:
                        with pytest.raises(ValueError, match="to use a where mask one has to "
                                                             "specify 'initial'"):
                            getattr(np, name)(d, **kw)
                        continue
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")     # (numpy: mean of an empty slice)
                        want = np.asarray(getattr(np, name)(x, **kw))
                    if w is not None and w.ndim == 2:
                        kw["where"] = dptx.asarray(w)
                    got = getattr(np, name)(d, **kw)
                    assert got.dtype == want.dtype and got.shape == want.shape, (name, kw)
                    np.testing.assert_allclose(got.get(), want, rtol=1e-12, equal_nan=True)
    _same(dptx.zeros((0, 3)).min(axis=0, initial=7), np.zeros((0, 3)).min(axis=0, initial=7))
    _same(dptx.sum(dptx.zeros(0, np.int32), initial=5), np.asarray(np.sum(np.zeros(0, np.int32), initial=5)))
    with pytest.raises(ValueError, match="non-broadcastable operand"):
        dptx.ones((4, 5)).sum(where=np.ones((3, 4, 5), bool))


def test_linalg_solve_inv_det_by_lu_on_the_devices(client, linalg_path):
    """solve/inv/det/slogdet (one launch: a block per matrix factors it with partial
    pivoting): numpy's values to rounding for float64, float32 and integers (as float64),
    stacks broadcast against the right-hand sides, a vector right-hand side, numpy's
    LinAlgError for a singular matrix and its 0 / (0, -inf) determinant, empty matrices."""
    rng = np.random.default_rng(12)
    for n in (1, 5, 40):
        for dt, rtol in ((np.float64, 1e-9), (np.float32, 2e-3), (np.int32, 1e-9)):
            scale = 0.5 if dt == np.float32 else 4       # (a float32 determinant stays finite)
            a = (rng.standard_normal((n, n)) * scale).astype(dt) + 3 * np.eye(n, dtype=dt)
            b, B = rng.standard_normal(n).astype(dt), rng.standard_normal((n, 3)).astype(dt)
            d = dptx.asarray(a)
            for got, want in [(dptx.linalg.solve(d, dptx.asarray(b)), np.linalg.solve(a, b)),
                              (np.linalg.solve(d, dptx.asarray(B)), np.linalg.solve(a, B)),
                              (dptx.linalg.inv(d), np.linalg.inv(a)),
                              (np.linalg.det(d), np.asarray(np.linalg.det(a)))]:
                assert got.dtype == want.dtype and got.shape == want.shape
                np.testing.assert_allclose(got.get(), want, rtol=rtol, atol=rtol)
            sign, logdet = dptx.linalg.slogdet(d)
            want = np.linalg.slogdet(a)
            assert float(sign) == want.sign
            np.testing.assert_allclose(float(logdet), want.logabsdet, rtol=rtol)
    A, Bs = rng.standard_normal((4, 3, 6, 6)), rng.standard_normal((3, 6, 2))
    np.testing.assert_allclose(dptx.linalg.solve(dptx.asarray(A), dptx.asarray(Bs)).get(),
                               np.linalg.solve(A, Bs), rtol=1e-9)
    np.testing.assert_allclose(dptx.linalg.det(dptx.asarray(A)).get(), np.linalg.det(A),
                               rtol=1e-9)
    singular = dptx.asarray(np.array([[1.0, 2.0], [2.0, 4.0]]))
    for call in (lambda: dptx.linalg.solve(singular, dptx.ones(2)),
                 lambda: dptx.linalg.inv(singular)):
        with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
            call()
    assert float(dptx.linalg.det(singular)) == 0.0
    sign, logdet = dptx.linalg.slogdet(singular)
    assert float(sign) == 0.0 and float(logdet) == -np.inf
    assert dptx.linalg.inv(dptx.zeros((0, 0))).shape == (0, 0)
    with pytest.raises(np.linalg.LinAlgError, match="must be square"):
        dptx.linalg.inv(dptx.ones((2, 3)))
    with pytest.raises(TypeError, match="float16 is unsupported"):
        dptx.linalg.det(dptx.ones((2, 2), np.float16))


@pytest.mark.cpu_workers("made of reductions, sorts and interp tested on both clusters")
def test_histogram_estimators_and_periodic_interp(client, every):
    """histogram's bin estimators (numpy's number of bins from the data's span, deviation,
    quartiles or skew measured on the devices; within a range too) and interp(period=)
    (numpy's normalization, bit for bit); numpy's errors."""
    rng = np.random.default_rng(14)
    for i, x in enumerate((rng.standard_normal(1000), rng.standard_normal(37).astype(np.float32),
                           rng.integers(-20, 20, 500), np.ones(10))):
        d = dptx.asarray(x)
        for j, name in enumerate(("auto", "doane", "fd", "rice", "scott", "sqrt", "sturges")):
            # the sample: each estimator on each input, within a range or not in turn
            # (each estimator sees both, and so does each input)
            ranges = (None, (-0.5, 0.7))
            for value_range in ranges if every else (ranges[(i + j) % 2],):
                counts, edges = np.histogram(x, bins=name, range=value_range)
                got_counts, got_edges = np.histogram(d, bins=name, range=value_range)
                _same(got_counts, counts)
                _same(got_edges, edges, exact=False)
    with pytest.raises(ValueError, match="'nope' is not a valid estimator"):
        dptx.histogram(dptx.ones(5), bins="nope")
    # histogram_bin_edges: the edges histogram bins with, numpy's for each form of bins
    x = rng.standard_normal(300).astype(np.float32)
    d = dptx.asarray(x)
    for kw in ({}, {"bins": 7}, {"bins": 3, "range": (-1, 2)}, {"bins": "fd"},
               {"bins": "sturges", "range": (0, 1)}, {"bins": [-1, 0, 0.5, 3]},
               {"bins": np.array([2, 4, 9])}, {"bins": 5, "weights": np.ones(300)}):
        want = np.histogram_bin_edges(x, **kw)
        got = np.histogram_bin_edges(d, **{k: dptx.asarray(v) if k == "weights" else v
                                           for k, v in kw.items()})
        assert got.dtype == want.dtype
        _same(got, want, exact=False)
        _same(got, np.histogram(d, bins=kw.get("bins", 10), range=kw.get("range"))[1].get())
    _same(dptx.histogram_bin_edges(dptx.arange(10), bins=4), np.linspace(0, 9, 5))
    for bad, error in (({"bins": [3, 1]}, ValueError), ({"bins": 0}, ValueError),
                       ({"bins": "auto", "weights": dptx.ones(300)}, TypeError),
                       ({"weights": dptx.ones(3)}, ValueError)):
        with pytest.raises(error):
            dptx.histogram_bin_edges(d, **bad)
    with pytest.raises(TypeError, match="not supported for weighted data"):
        dptx.histogram(dptx.ones(5), bins="auto", weights=dptx.ones(5))
    for period in (360, -5.0):
        for n in (1, 7, 50):
            xp, fp = rng.uniform(-400, 400, n), rng.standard_normal(n)
            x = np.concatenate(([0, period, -period], rng.uniform(-800, 800, 100)))
            _same(np.interp(dptx.asarray(x), dptx.asarray(xp), dptx.asarray(fp), period=period),
                  np.interp(x, xp, fp, period=period))
    with pytest.raises(ValueError, match="period must be a non-zero value"):
        dptx.interp(dptx.ones(3), dptx.ones(3), dptx.ones(3), period=0)


def test_linalg_cholesky_on_the_devices(client, linalg_path):
    """cholesky (a block per matrix, one launch): numpy's L to rounding for float64, float32
    and integers, upper=, stacks, numpy's LinAlgError for a matrix that is not positive
    definite, and NaNs carried through as numpy's LAPACK carries them."""
    rng = np.random.default_rng(16)
    for n in (1, 5, 40):
        for dt, rtol in ((np.float64, 1e-10), (np.float32, 1e-4), (np.int64, 1e-10)):
            m = rng.standard_normal((n, n))
            a = m @ m.T + n * np.eye(n)
            a = np.round(a).astype(dt) if dt == np.int64 else a.astype(dt)
            for upper in (False, True):
                want = np.linalg.cholesky(a, upper=upper)
                got = np.linalg.cholesky(dptx.asarray(a), upper=upper)
                assert got.dtype == want.dtype and got.shape == want.shape
                np.testing.assert_allclose(got.get(), want, rtol=rtol, atol=rtol)
    s = rng.standard_normal((3, 4, 6, 6))
    s = s @ np.swapaxes(s, -1, -2) + 6 * np.eye(6)
    np.testing.assert_allclose(dptx.linalg.cholesky(dptx.asarray(s)).get(),
                               np.linalg.cholesky(s), rtol=1e-10)
    with pytest.raises(np.linalg.LinAlgError, match="not positive definite"):
        dptx.linalg.cholesky(dptx.asarray(np.array([[1.0, 2.0], [2.0, 1.0]])))
    nan = np.array([[4.0, 1.0], [1.0, np.nan]])
    np.testing.assert_array_equal(dptx.linalg.cholesky(dptx.asarray(nan)).get(),
                                  np.linalg.cholesky(nan))


@pytest.mark.cpu_workers("made of lexsort, take and reductions tested on both clusters")
def test_unique_along_an_axis(client):
    """unique(axis=): numpy's distinct rows (or slices) in its order, first occurrences,
    1-D inverse and counts; NaN rows distinct and -0.0 equal to 0.0 as numpy's; empty rows."""
    rng = np.random.default_rng(22)
    cases = [rng.integers(0, 3, (20, 2)), rng.integers(0, 2, (4, 6, 3)),
             np.array([[1.0, np.nan], [1.0, np.nan], [0.0, 1.0], [-0.0, 1.0]]),
             np.zeros((3, 0)), np.zeros((0, 3))]
    for x in cases:
        for axis in range(x.ndim):
            want = np.unique(x, return_index=True, return_inverse=True, return_counts=True,
                             axis=axis)
            got = dptx.unique(dptx.asarray(x), return_index=True, return_inverse=True,
                              return_counts=True, axis=axis)
            for w, g in zip(want, got):
                assert g.shape == w.shape and g.dtype == w.dtype, (x.shape, axis)
                np.testing.assert_array_equal(g.get(), w)
            _same(np.unique(dptx.asarray(x), axis=axis), np.unique(x, axis=axis))


def test_products_with_a_vector(client):
    """matrix @ vector (a warp per row), vector @ matrix (a thread per column over pieces of
    rows) and vector @ vector: numpy's values, exact for integers (narrow ones wrap as numpy's
    do), for long rows and columns (several pieces)."""
    for dtype in (np.int8, np.uint8, np.int32, np.int64):
        a = RNG.integers(-100, 100, (300, 1000)).astype(dtype)
        x, y = RNG.integers(-100, 100, 1000).astype(dtype), RNG.integers(-100, 100, 300).astype(dtype)
        _same(dptx.asarray(a) @ dptx.asarray(x), a @ x)
        _same(dptx.asarray(y) @ dptx.asarray(a), y @ a)
        _same(np.dot(dptx.asarray(x), dptx.asarray(x)), np.asarray(np.dot(x, x)))
    a = RNG.random((700, 2000))
    x, y = RNG.random(2000), RNG.random(700)
    np.testing.assert_allclose((dptx.asarray(a) @ dptx.asarray(x)).get(), a @ x, rtol=1e-12)
    np.testing.assert_allclose((dptx.asarray(y) @ dptx.asarray(a)).get(), y @ a, rtol=1e-12)
    np.testing.assert_allclose((dptx.asarray(a.T) @ dptx.asarray(y)).get(), a.T @ y, rtol=1e-12)
    f = (dptx.asarray(a.astype(np.float32)) @ dptx.asarray(x)).get()
    assert f.dtype == np.float64
    _same(dptx.zeros((3, 0)) @ dptx.zeros(0), np.zeros(3))


def test_matmul_of_tall_operands_sums_each_output_in_order(client, kernels):
    """Enough rows for four outputs per thread (n >= 64), sizes not multiples of the tiles:
    every output is the sum over k in order of rounded products, bit for bit (the reference
    adds them in that order); integers exact; a matrix-vector product."""
    A, B = RNG.random((130, 33)), RNG.random((33, 45))
    want = np.zeros((130, 45))
    for kk in range(33):
        want = want + A[:, kk:kk + 1] * B[kk:kk + 1, :]
    np.testing.assert_array_equal((dptx.asarray(A) @ dptx.asarray(B)).get(), want)
    Ai, Bi = RNG.integers(-99, 99, (200, 70)).astype(np.int32), \
        RNG.integers(-99, 99, (70, 3)).astype(np.int32)
    np.testing.assert_array_equal((dptx.asarray(Ai) @ dptx.asarray(Bi)).get(), Ai @ Bi)
    v = RNG.random(33)
    np.testing.assert_allclose((dptx.asarray(A) @ dptx.asarray(v)).get(), A @ v, rtol=1e-12)


def test_reduction_kernel_as_cupy_defines_it(client):
    l2 = dptx.ReductionKernel("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm")
    a = RNG.random((6, 1000))
    np.testing.assert_allclose(l2(dptx.asarray(a), axis=1).get(), np.sqrt((a * a).sum(axis=1)),
                               rtol=1e-13)
    np.testing.assert_allclose(l2(dptx.asarray(a)).get(), np.sqrt((a * a).sum()), rtol=1e-13)
    dotk = dptx.ReductionKernel("T x, T y", "T z", "x * y", "a + b", "z = a", "0", "dotk")
    b = RNG.random((6, 1000))
    np.testing.assert_allclose(dotk(dptx.asarray(a), dptx.asarray(b), axis=0).get(),
                               (a * b).sum(axis=0), rtol=1e-13)


def test_fuse_makes_one_kernel_with_numpys_types(client):
    @dptx.fuse
    def hyp(a, b):
        return np.sqrt(a * a + b * b) * 2 + 1

    @dptx.fuse(kernel_name="mix")
    def mix(x, y, s):
        return np.where(x > y, x - s, y // 2), x + np.float32(0.5), -abs(x) % 3

    a, b = _data("float32"), _data("float32")
    _same(hyp(dptx.asarray(a), dptx.asarray(b)), np.sqrt(a * a + b * b) * 2 + 1, exact=False)
    x, y = _data("int32", (40,)), _data("int32", (40,))
    got = mix(dptx.asarray(x), dptx.asarray(y), 3)
    for g, w in zip(got, (np.where(x > y, x - 3, y // 2), x + np.float32(0.5), -abs(x) % 3)):
        _same(g, w)
    assert hyp(3.0, 4.0) == 11.0                       # scalars only: plain Python
    with pytest.raises(DptxError, match="cannot branch"):
        dptx.fuse(lambda v: v if v > 0 else -v)(dptx.zeros(3))
    # Python operators on Python scalars give Python scalars, weak in what follows; a numpy
    # ufunc gives a numpy scalar, which is not
    weak = dptx.fuse(lambda v, w: -v + abs(w) + w ** 2)
    strong = dptx.fuse(lambda v, w: v + np.abs(w))
    for host, scalar in ((x, 2), (a, 2), (a, 0.5)):
        for fn, plain in ((weak, lambda v, w: -v + abs(w) + w ** 2),
                          (strong, lambda v, w: v + np.abs(w))):
            _same(fn(dptx.asarray(host), scalar), plain(host, scalar), exact=False)
    # float16 computes as unfused (and as numpy): in float, each result rounded to half
    # (it computed in cuda_fp16's __half, where floor division did not compile)
    h, k = (_data("float32", (300,)) * 40).astype(np.float16), \
        (_data("float32", (300,)) * 7 + 0.5).astype(np.float16)
    half = dptx.fuse(lambda u, v: (u // v + u % v) * np.float16(1.1) - u * v / 3)
    with np.errstate(all="ignore"):
        _same_half(half(dptx.asarray(h), dptx.asarray(k)),
                   (h // k + h % k) * np.float16(1.1) - h * k / 3)


def test_empty_and_zero_dimensional_arrays(client):
    e = dptx.zeros((0, 3), np.float32)
    _same(e + 1, np.zeros((0, 3), np.float32) + 1)
    z = dptx.asarray(np.float64(2.5))
    _same(z * 2, np.asarray(np.float64(2.5) * 2))
    _same(np.sqrt(z), np.asarray(np.sqrt(2.5)))
    _same(dptx.asarray(np.arange(5.0)).sum(axis=0, keepdims=True), np.array([10.0]))


def test_argument_errors_and_defaults_are_numpys(client):
    """The exception types numpy raises (a caller's ``except ValueError`` catches dptx's too)
    and numpy 2's defaults: clip without bounds or with ``min=``/``max=``, sort kinds by
    their first letter."""
    h = np.arange(12.0).reshape(3, 4) - 5
    d = dptx.asarray(h)
    with pytest.raises(ValueError, match="negative dimensions are not allowed"):
        dptx.zeros(-3)
    with pytest.raises(ValueError, match="negative dimensions are not allowed"):
        dptx.eye(-2)
    with pytest.raises(TypeError, match="cannot be interpreted as an integer"):
        d.argmax(axis=(0, 1))
    with pytest.raises(ValueError, match="can only convert an array of size 1"):
        d.item()
    with pytest.raises(TypeError, match="only arrays of size 1"):
        float(d)
    with pytest.raises(ValueError, match="sort kind must be one of"):
        np.sort(d, kind="bogus")
    with pytest.raises(ValueError, match="select kind must be 'introselect'"):
        np.partition(d, 1, kind="bogus")
    _same(np.sort(d, kind="Quick"), np.sort(h, kind="Quick"))
    _same(np.clip(d), np.clip(h))
    _same(np.clip(d, min=-1, max=2), np.clip(h, min=-1, max=2))
    out = dptx.empty((3, 4))
    assert np.clip(d, 0, None, out=out) is out       # (out= was left unwritten)
    _same(out, np.clip(h, 0, None))


@pytest.mark.parametrize("dtype", [np.float64, np.float16, np.int8, np.uint8])
def test_ufunc_at_applies_every_occurrence_in_order(client, cluster_kind, dtype):
    """``np.add.at(a, idx, b)`` (and every ufunc dptx computes): a repeated index applies once
    per occurrence, in order, as numpy's loop, so float results are numpy's bit for bit (a
    float16 one rounded at each step); numpy's ``at`` converts into ``a`` unsafely."""
    if cluster_kind == "mixed" and dtype != np.float64:
        pytest.skip("the same launches as the float64 case runs on the mixed cluster")
    rng = np.random.default_rng(5)
    idx = rng.integers(-10, 10, 200)
    a = (rng.standard_normal(10) * 5).astype(dtype)
    b = (rng.standard_normal(200) * 3).astype(dtype)
    exact = ["add", "subtract", "multiply", "maximum", "fmax", "floor_divide"]
    exact.append("true_divide" if dtype in (np.float64, np.float16) else "bitwise_xor")

    def check(call, *operands, rtol=0):
        want, got = a.copy(), dptx.asarray(a)
        try:
            call(np, want, *operands)
        except TypeError:                   # a ufunc numpy has no loop of for this type
            with pytest.raises(TypeError):
                call(dptx, got, *[dptx.asarray(v) if isinstance(v, np.ndarray) else v
                                  for v in operands])
            return
        call(dptx, got, *[dptx.asarray(v) if isinstance(v, np.ndarray) else v
                          for v in operands])
        if rtol:
            np.testing.assert_allclose(got.get(), want, rtol=rtol)
        else:
            np.testing.assert_array_equal(got.get(), want)
        assert got.dtype == want.dtype
    for name in exact:
        check(lambda m, x, i, y: getattr(m, name).at(x, i, y), idx, b)       # dptx.add.at
    check(lambda m, x, i, y: np.add.at(x, i, y), idx, b)                     # np.add.at
    check(lambda m, x, i: m.multiply.at(x, i, 3), idx)                       # a scalar
    check(lambda m, x, i: m.negative.at(x, i), idx)                          # unary
    check(lambda m, x, i, y: m.greater.at(x, i, y), idx, b)     # compared in the common type
    check(lambda m, x, i: m.less_equal.at(x, i, 0.5), idx)
    if dtype == np.float64:         # a few ulps, as the ufuncs themselves
        check(lambda m, x, i, y: m.hypot.at(x, i, y), idx, b, rtol=1e-12)


def test_ufunc_at_index_forms_and_errors(client):
    rng = np.random.default_rng(6)
    A = rng.standard_normal((4, 5))

    def same(call, a):
        want, got = a.copy(), dptx.asarray(a)
        call(np, want)
        call(dptx, got)
        np.testing.assert_array_equal(got.get(), want)
    same(lambda m, x: m.add.at(x, np.array([0, 0, 3, 1, 0]), 1.0), A)            # rows
    same(lambda m, x: m.add.at(x, ([0, 0, 1], [1, 1, 4]), [1.0, 2.0, 3.0]), A)   # tuple
    same(lambda m, x: m.add.at(x, (slice(None), [1, 1]), 1.0), A)                # slices
    same(lambda m, x: m.add.at(x, A > 0, 1.0), A)                                # a mask
    same(lambda m, x: m.add.at(x, 2, 5.0), A)
    same(lambda m, x: m.add.at(x[:, ::2], ([0, 0], [1, 2]), 1.0), A)             # a view
    same(lambda m, x: m.add.at(x, [0, 0], 1.5), np.zeros(3, int))
    same(lambda m, x: m.add.at(x, [0] * 7, 0.1), np.zeros(3, np.float32))        # weak 0.1
    same(lambda m, x: m.add.at(x, np.array([], int), 1.0), np.zeros(3))
    got = dptx.zeros(10)                            # device indices, negative ones wrapped
    np.add.at(got, dptx.asarray([1, 1, -1, 3]), 1.0)
    np.testing.assert_array_equal(got.get(), np.bincount([1, 1, 9, 3], minlength=10))
    for call in (lambda m, x: m.add.at(x, [5], 1), lambda m, x: m.add.at(x, [-4], 1),
                 lambda m, x: m.add.at(x, [0], np.array([1.0, 2.0])),
                 lambda m, x: m.negative.at(x, [0], 1), lambda m, x: m.divmod.at(x, [0], 1)):
        with pytest.raises(Exception) as want:
            call(np, np.zeros(3))
        with pytest.raises(type(want.value), match=re.escape(str(want.value))):
            call(dptx, dptx.zeros(3))


@pytest.mark.parametrize("dtype", [np.int32, np.uint64])
def test_ufunc_at_of_integers_by_atomics(client, chunks8, dtype):
    """Integer sums (wrapping), extremes and bitwise ``at`` do not depend on the order of the
    occurrences: atomics, the launch split over the workers and merged by the operation."""
    rng = np.random.default_rng(9)
    a = rng.integers(0, 1000, 50).astype(dtype)
    idx = rng.integers(-50, 50, 100_000)
    b = rng.integers(0, 2**31, 100_000).astype(dtype)
    for name in ("add", "subtract", "maximum", "minimum", "bitwise_or", "bitwise_and",
                 "bitwise_xor"):
        for operand in ((b, 7) if name in ("add", "maximum") else (b,)):
            if isinstance(operand, int) and dtype == np.uint64 and name != "add":
                continue        # numpy's own raises, or computes through float64
            want, got = a.copy(), dptx.asarray(a)
            getattr(np, name).at(want, idx, operand)
            getattr(np, name).at(got, dptx.asarray(idx),
                                 dptx.asarray(operand) if isinstance(operand, np.ndarray)
                                 else operand)
            np.testing.assert_array_equal(got.get(), want, err_msg=name)
