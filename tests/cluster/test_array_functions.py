"""numpy's functions beyond the core array API (issue 19, what a CuPy user reaches for next):
index helpers, NaN-aware statistics, set operations, padding. Each result is checked against
numpy (dtype, shape, values: exact unless said), errors against numpy's own."""
import itertools
import warnings

import numpy as np
import pytest

import dptx

RNG = np.random.default_rng(1919)


def _same(got, want, exact=True):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w, exact)
        return
    assert isinstance(got, dptx.ndarray), type(got)
    got, want = got.get(), np.asarray(want)
    assert (got.dtype, got.shape) == (want.dtype, want.shape), \
        ((got.dtype, got.shape), (want.dtype, want.shape))
    if exact:
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5 if want.dtype == np.float32 else 1e-12,
                                   atol=1e-5 if want.dtype == np.float32 else 1e-12)


def _same_error(call):
    """``call(numpy)`` and ``call(dptx)`` raise the same type with the same message."""
    with pytest.raises(Exception) as want:
        call(np)
    with pytest.raises(type(want.value)) as got:
        call(dptx)
    assert str(got.value) == str(want.value)


# -- index helpers ------------------------------------------------------------------------------
def test_take_and_put_along_an_axis(client):
    a = RNG.random((4, 5, 6)).astype(np.float32)
    da = dptx.asarray(a)
    for axis in (0, 1, -1):
        order = np.argsort(a, axis=axis)
        _same(np.take_along_axis(da, dptx.argsort(da, axis=axis), axis=axis),
              np.take_along_axis(a, order, axis=axis))
    # fewer indices than elements along the axis, negative ones, host indices
    idx = np.array([[[-1, 0]]]).repeat(4, 0).repeat(5, 1)
    _same(dptx.take_along_axis(da, dptx.asarray(idx), axis=2), np.take_along_axis(a, idx, 2))
    flat = np.array([3, 0, -1, 7])
    _same(dptx.take_along_axis(da, dptx.asarray(flat), None), np.take_along_axis(a, flat, None))
    best = np.argmax(a, axis=1)[:, None, :]
    want = a.copy()
    np.put_along_axis(want, best, 99, axis=1)
    dptx.put_along_axis(da, dptx.asarray(best), 99, axis=1)
    _same(da, want)
    # axis=None: into the flattened array (a contiguous one: numpy raises for a strided one)
    want = np.arange(24.0).reshape(4, 6)
    got = dptx.asarray(want)
    np.put_along_axis(want, np.array([0, 11, 11]), np.array([-1.0, -2.0, -3.0]), None)
    dptx.put_along_axis(got, dptx.asarray(np.array([0, 11, 11])),
                        dptx.asarray(np.array([-1.0, -2.0, -3.0])), None)
    _same(got, want)
    _same_error(lambda xp: xp.put_along_axis(xp.asarray(want)[:, ::2], xp.asarray(flat), 0.0,
                                             None))
    _same_error(lambda xp: xp.take_along_axis(xp.asarray(a), xp.asarray(idx.astype(float)), 2))
    _same_error(lambda xp: xp.take_along_axis(xp.asarray(a), xp.asarray(flat), 2))
    _same_error(lambda xp: xp.take_along_axis(xp.asarray(a), xp.asarray(idx), None))


def test_index_grids_and_flat_indices(client):
    _same(dptx.indices((3, 4)), np.indices((3, 4)))
    _same(dptx.indices((2, 3), dtype=np.int32, sparse=True),
          np.indices((2, 3), dtype=np.int32, sparse=True))
    _same(dptx.ix_([0, 2], [True, False, True], []), np.ix_([0, 2], [True, False, True], []))
    x = np.arange(30).reshape(5, 6)
    _same(dptx.asarray(x)[dptx.ix_([0, 2, 4], [1, 5])], x[np.ix_([0, 2, 4], [1, 5])])
    _same_error(lambda xp: xp.ix_(xp.asarray(np.ones((2, 2), int))))
    flat = np.array([[0, 5], [17, 23]])
    for order in ("C", "F"):
        _same(dptx.unravel_index(dptx.asarray(flat), (4, 6), order=order),
              np.unravel_index(flat, (4, 6), order=order))
    coords = (np.array([1, 3, 0]), np.array([5, 2, -1]))
    dcoords = tuple(dptx.asarray(c) for c in coords)
    for mode, order in (("wrap", "C"), (("clip", "wrap"), "F"), ("clip", "C")):
        _same(dptx.ravel_multi_index(dcoords, (4, 6), mode=mode, order=order),
              np.ravel_multi_index(coords, (4, 6), mode=mode, order=order))
    # numpy's errors: an index out of bounds named, a coordinate outside its axis
    _same_error(lambda xp: xp.unravel_index(xp.asarray(np.array([1, 24, -3])), (4, 6)))
    _same_error(lambda xp: xp.unravel_index(xp.asarray(np.array([1.0])), (4, 6)))
    _same_error(lambda xp: xp.ravel_multi_index(tuple(xp.asarray(c) for c in coords), (4, 6)))
    _same_error(lambda xp: xp.ravel_multi_index(tuple(xp.asarray(c) for c in coords), (4, 6, 2)))


def test_triangle_and_diagonal_indices(client):
    _same(dptx.tril_indices(4), np.tril_indices(4))
    _same(dptx.triu_indices(4, 1, 6), np.triu_indices(4, 1, 6))
    m = np.arange(20).reshape(4, 5)
    dm = dptx.asarray(m)
    _same(dptx.tril_indices_from(dm, -1), np.tril_indices_from(m, -1))
    _same(dptx.triu_indices_from(dm, 2), np.triu_indices_from(m, 2))
    _same(dm[dptx.triu_indices_from(dm)], m[np.triu_indices_from(m)])
    _same(dptx.diag_indices(3, 3), np.diag_indices(3, 3))
    _same(dptx.diag_indices_from(dptx.zeros((4, 4))), np.diag_indices_from(np.zeros((4, 4))))
    _same_error(lambda xp: xp.diag_indices_from(xp.zeros((4, 3))))
    _same_error(lambda xp: xp.tril_indices_from(xp.zeros((4, 3, 2))))


def test_select_follows_numpys_types_and_order(client):
    x = np.arange(10.0)
    dx = dptx.asarray(x)
    _same(dptx.select([dx < 3, dx > 5], [dx, dx ** 2], 42), np.select([x < 3, x > 5],
                                                                     [x, x ** 2], 42))
    # overlapping conditions: the first wins; a weak Python float keeps float64
    _same(np.select([dx < 6, dx > 2], [dx, 7.5]), np.select([x < 6, x > 2], [x, 7.5]))
    small = np.arange(10, dtype=np.int8)
    _same(dptx.select([dx < 3], [dptx.asarray(small)]), np.select([x < 3], [small]))
    _same(dptx.select([dx.reshape(2, 5) > 4, True], [dptx.asarray(small[:5]), -1]),
          np.select([x.reshape(2, 5) > 4, True], [small[:5], -1]))
    _same_error(lambda xp: xp.select([xp.asarray(x) < 3], [1, 2]))
    _same_error(lambda xp: xp.select([xp.asarray(x)], [xp.asarray(x)]))
    _same_error(lambda xp: xp.select([], []))


@pytest.mark.parametrize("values", [np.float64(1.5), [7, 8], [1.5, 2.5], np.array([3, 4]), [],
                                    np.array([-1.0])])
def test_putmask_and_place_repeat_their_values(client, values):
    for name in ("putmask", "place"):
        for rule in (lambda v: v > 2, lambda v: v % 3 == 0, lambda v: v > 99):
            want = np.arange(12).reshape(3, 4)
            got = dptx.asarray(want)
            try:
                getattr(np, name)(want, rule(want), values)
            except (TypeError, ValueError) as exc:
                with pytest.raises(type(exc), match=str(exc).replace("(", r"\(")
                                   .replace(")", r"\)")):
                    getattr(dptx, name)(got, rule(got), values)
                continue
            getattr(dptx, name)(got, rule(got), values)
            _same(got, want)
    # strided views, a flat mask of the same size
    want = np.arange(24.0).reshape(4, 6)
    got = dptx.asarray(want)
    np.putmask(want[:, ::2], want[:, ::2] > 5, [-1.0, -2.0])
    dptx.putmask(got[:, ::2], got[:, ::2] > 5, [-1.0, -2.0])
    np.place(want[::2], (want[::2] > 5).ravel(), [-3.0, -4.0, -5.0])
    dptx.place(got[::2], (got[::2] > 5).ravel(), [-3.0, -4.0, -5.0])
    _same(got, want)
    _same_error(lambda xp: xp.putmask(xp.zeros(6), xp.zeros(5, bool), 1))


# -- NaN-aware functions --------------------------------------------------------------------------
def _with_nans(shape, dtype, fraction=0.3):
    x = (RNG.standard_normal(shape) * 10).astype(dtype)
    if np.dtype(dtype).kind == "f":
        x[RNG.random(shape) < fraction] = np.nan
    return x


@pytest.mark.cpu_workers("compositions of kernels the mixed cluster runs in the tests above")
@pytest.mark.parametrize("dtype", [np.float32, np.int32, pytest.param(
    np.float64, marks=pytest.mark.exhaustive)])        # (float32's kernels at another type)
def test_nan_reductions_follow_numpy(client, dtype):
    x = _with_nans((6, 7, 5), dtype)
    if x.dtype.kind == "f":
        x[1] = np.nan               # all-NaN slices along every axis
    d = dptx.asarray(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)     # numpy's all-NaN, dof warnings
        for axis, keepdims in ((None, False), (0, True), (2, False), ((0, 2), True)):
            for name in ("nanmin", "nanmax", "nanmedian", "nansum", "nanmean", "nanvar",
                         "nanstd"):
                _same(getattr(dptx, name)(d, axis=axis, keepdims=keepdims),
                      getattr(np, name)(x, axis=axis, keepdims=keepdims),
                      exact=name in ("nanmin", "nanmax", "nanmedian"))
            for ddof in (1, 6):     # 6: no degrees of freedom left in some slices
                _same(dptx.nanstd(d, axis=axis, ddof=ddof), np.nanstd(x, axis=axis, ddof=ddof),
                      exact=False)
        for axis in (None, 0, 2):
            for name in ("nancumsum", "nancumprod"):
                _same(getattr(dptx, name)(d, axis=axis), getattr(np, name)(x, axis=axis),
                      exact=False)
        # where= (a mask broadcast along the first axis), initial=, mean=
        mask = RNG.random((7, 5)) > 0.3
        for axis, keepdims in ((None, False), (0, True), (2, False)):
            for name in ("nansum", "nanprod", "nanmean", "nanvar", "nanstd"):
                _same(getattr(np, name)(d, axis=axis, keepdims=keepdims, where=mask),
                      getattr(np, name)(x, axis=axis, keepdims=keepdims, where=mask),
                      exact=False)
        _same(np.nansum(d, axis=1, initial=3), np.nansum(x, axis=1, initial=3), exact=False)
        for name in ("nanmin", "nanmax"):
            _same(getattr(np, name)(d, axis=0, where=mask, initial=0.25),
                  getattr(np, name)(x, axis=0, where=mask, initial=0.25))
            _same(getattr(np, name)(d, axis=None, initial=-0.5),
                  getattr(np, name)(x, axis=None, initial=-0.5))
            _same_error(lambda xp: getattr(xp, name)(xp.asarray(x), axis=0, where=mask))
        center = np.nanmean(x, axis=2, keepdims=True)
        _same(np.nanvar(d, axis=2, mean=dptx.asarray(center)), np.nanvar(x, axis=2, mean=center),
              exact=False)
    y = _with_nans((6, 7, 5), dtype, fraction=0.2)
    y[:, 3, 2] = 5.0                # no all-NaN slice along axis 0
    dy = dptx.asarray(y)
    for name in ("nanargmin", "nanargmax"):
        _same(getattr(dptx, name)(dy, axis=0), getattr(np, name)(y, axis=0))
        _same(getattr(dptx, name)(dy, axis=None), getattr(np, name)(y, axis=None))
        if x.dtype.kind == "f":
            _same_error(lambda xp: getattr(xp, name)(xp.asarray(x), axis=1))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")   # numpy's, on the inf and all-NaN slices
@pytest.mark.parametrize("method", ["inverted_cdf", "averaged_inverted_cdf",
                                    "closest_observation", "interpolated_inverted_cdf", "hazen",
                                    "weibull", "linear", "median_unbiased", "normal_unbiased",
                                    "lower", "higher", "midpoint", "nearest"])
def test_nanquantile_methods_bit_for_bit(client, cluster_kind, method):
    if cluster_kind == "mixed" and method not in ("linear", "inverted_cdf", "midpoint"):
        pytest.skip("the same kernels as the methods run on the mixed cluster")
    x = _with_nans((5, 9, 4), np.float32)
    x[2, :, 1] = np.nan             # an all-NaN slice
    x[0, 3] = np.inf
    d = dptx.asarray(x)
    for q, axis in ((0.3, None), (1, 1), ([0.0, 0.5, 0.99], (0, 2)), (np.float32(0.4), 1)):
        _same(dptx.nanquantile(d, q, axis=axis, method=method),
              np.nanquantile(x, q, axis=axis, method=method))
    _same(dptx.nanpercentile(d, [10, 90], axis=1, method=method, keepdims=True),
          np.nanpercentile(x, [10, 90], axis=1, method=method, keepdims=True))
    if method == "linear":
        ints = RNG.integers(-50, 50, (5, 9))
        _same(dptx.nanpercentile(dptx.asarray(ints), 30, axis=1), np.nanpercentile(ints, 30, axis=1))
        _same_error(lambda xp: xp.nanquantile(xp.asarray(x), 1.5))
        _same_error(lambda xp: xp.nanpercentile(xp.asarray(x), -5))


# -- set operations --------------------------------------------------------------------------------
@pytest.mark.parametrize("types", [(np.int32, np.int64), (np.float32, np.float64),
                                   (np.uint8, np.int8), (bool, bool)])
def test_set_operations_follow_numpy(client, cluster_kind, types):
    if cluster_kind == "mixed" and types[0] is not np.float32:
        pytest.skip("the same kernels as the float case runs on the mixed cluster")
    a = RNG.integers(-5, 20, (4, 6)).astype(types[0])
    b = RNG.integers(0, 15, 9).astype(types[1])
    if a.dtype.kind == "f":
        a[0, 0], a[1, 1], b[0], b[1] = np.nan, -0.0, np.nan, 0.0     # NaN equals nothing
    da, db = dptx.asarray(a), dptx.asarray(b)
    for invert in (False, True):
        _same(dptx.isin(da, db, invert=invert), np.isin(a, b, invert=invert))
    _same(np.isin(da, [1, 3], kind="sort"), np.isin(a, [1, 3], kind="sort"))
    for name in ("union1d", "intersect1d", "setdiff1d", "setxor1d"):
        _same(getattr(dptx, name)(da, db), getattr(np, name)(a, b))
    _same(dptx.intersect1d(da, db, return_indices=True), np.intersect1d(a, b, return_indices=True))
    ua, ub = np.unique(a), np.unique(b)
    for name, kw in (("intersect1d", {"return_indices": True}), ("setdiff1d", {}),
                     ("setxor1d", {})):
        _same(getattr(dptx, name)(dptx.asarray(ua), dptx.asarray(ub), assume_unique=True, **kw),
              getattr(np, name)(ua, ub, assume_unique=True, **kw))
    empty = np.array([], a.dtype)
    for name in ("union1d", "intersect1d", "setdiff1d", "setxor1d"):
        _same(getattr(dptx, name)(dptx.asarray(empty), dptx.asarray(empty)),
              getattr(np, name)(empty, empty))
    _same(dptx.isin(da, dptx.asarray(empty)), np.isin(a, empty))
    _same_error(lambda xp: xp.isin(xp.asarray(a), xp.asarray(b), kind="hash"))
    if a.dtype.kind == "f":
        _same_error(lambda xp: xp.isin(xp.asarray(a), xp.asarray(b), kind="table"))


# -- padding -------------------------------------------------------------------------------------
_PAD_MODES = [("constant", {"constant_values": ((1, 2), (3, 4))}), ("constant", {}),
              ("edge", {}), ("wrap", {}), ("reflect", {}), ("reflect", {"reflect_type": "odd"}),
              ("symmetric", {}), ("symmetric", {"reflect_type": "odd"}),
              ("linear_ramp", {"end_values": (5, -3)}), ("maximum", {}),
              ("minimum", {"stat_length": 2}), ("mean", {"stat_length": ((1, 2), (3, 1))}),
              ("median", {"stat_length": 3})]


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_pad_modes_follow_numpy(client, cluster_kind, dtype):
    if cluster_kind == "mixed" and dtype is not np.float32:
        pytest.skip("the same kernels as the float case runs on the mixed cluster")
    a = (RNG.standard_normal((4, 5)) * 10).astype(dtype)
    da = dptx.asarray(a)
    # pads wider than the array (numpy's repeated reflections and wraps), one side empty
    for widths in (((0, 7), (9, 2)), 2):
        for mode, kw in _PAD_MODES:
            # (a mean of floats sums in another order than numpy's: the last bits differ)
            _same(np.pad(da, widths, mode=mode, **kw), np.pad(a, widths, mode=mode, **kw),
                  exact=not (mode == "mean" and a.dtype.kind == "f"))
    v = np.arange(1, 6, dtype=dtype)
    for mode, kw in _PAD_MODES[1:-2] + [("mean", {"stat_length": (1, 2)})]:
        _same(dptx.pad(dptx.asarray(v), (3, 8), mode=mode, **kw), np.pad(v, (3, 8), mode=mode, **kw),
              exact=not (mode == "mean" and v.dtype.kind == "f"))
    _same(dptx.pad(da[:, ::2], {1: (1, 2)}, mode="wrap"), np.pad(a[:, ::2], {1: (1, 2)}, mode="wrap"))
    got = dptx.pad(da, 1, mode="empty")
    assert (got.shape, got.dtype) == ((6, 7), a.dtype)
    for args, kw in (((1,), {"mode": "foo"}), ((1.5,), {}), ((-1,), {}),
                     ((1,), {"mode": "edge", "constant_values": 2}),
                     ((((0, 0), (2, 2)),), {"mode": "maximum", "stat_length": 0})):
        _same_error(lambda xp: xp.pad(xp.asarray(a), *args, **kw))
    _same_error(lambda xp: xp.pad(xp.asarray(np.zeros((0, 3))), 1, mode="edge"))
    if cluster_kind == "cpu" and dtype is np.int32:
        # numpy's legacy callable mode: the function changes each vector in place, in order
        def pad_with(vector, width, axis, kwargs):
            vector[:width[0]] = kwargs.get("padder", 10) + axis
            if width[1]:
                vector[-width[1]:] = vector[width[0]] * 2
        for widths in (2, ((1, 0), (0, 3))):
            _same(np.pad(da, widths, pad_with), np.pad(a, widths, pad_with))
        _same(np.pad(da, 1, pad_with, padder=-7), np.pad(a, 1, pad_with, padder=-7))


# -- convolution -------------------------------------------------------------------------------------
@pytest.mark.parametrize("types", [(np.int8, np.int8), (np.int32, np.int64), (np.float16, np.float16),
                                   (np.float32, np.float32), (np.float64, np.int16), (bool, bool)])
def test_convolve_and_correlate_follow_numpy(client, cluster_kind, types):
    if cluster_kind == "mixed" and types[0] not in (np.int8, np.float32):
        pytest.skip("the same kernel as the cases the mixed cluster runs")
    R = np.result_type(*types)
    # integers wrap in their type, half floats and booleans add in numpy's order: exact;
    # numpy's float32/float64 loops call BLAS (its own order of additions)
    exact = R.kind in "iub" or R == np.float16
    for n1, n2 in ((10, 3), (3, 10), (7, 7), (1, 5), (200, 37)):
        a = (RNG.standard_normal(n1) * 50).astype(types[0])
        v = (RNG.standard_normal(n2) * 50).astype(types[1])
        da, dv = dptx.asarray(a), dptx.asarray(v)
        for mode in ("full", "same", "valid"):
            for name in ("convolve", "correlate"):
                want = getattr(np, name)(a, v, mode)
                got = getattr(dptx, name)(da, dv, mode)
                if exact:
                    _same(got, want)
                else:
                    assert got.dtype == want.dtype and got.shape == want.shape
                    np.testing.assert_allclose(got.get(), want, rtol=1e-5,
                                               atol=1e-5 * np.abs(want).max())
    x = RNG.standard_normal(20)
    np.testing.assert_allclose(np.convolve(dptx.asarray(x)[::3], dptx.asarray(x)[1:4]).get(),
                               np.convolve(x[::3], x[1:4]), rtol=1e-12)
    ones = np.ones(3)
    _same_error(lambda xp: xp.correlate(xp.asarray(np.ones((2, 2))), xp.asarray(ones)))
    _same_error(lambda xp: xp.convolve(xp.asarray(np.ones(0)), xp.asarray(ones)))
    _same_error(lambda xp: xp.correlate(xp.asarray(ones), xp.asarray(np.ones(0))))
    _same_error(lambda xp: xp.correlate(xp.asarray(ones), xp.asarray(ones), "foo"))


# -- covariance ------------------------------------------------------------------------------------
@pytest.mark.filterwarnings("ignore::RuntimeWarning")   # numpy's, where no degree of freedom is left
def test_cov_and_corrcoef_follow_numpy(client):
    m, y = RNG.standard_normal((3, 20)), RNG.standard_normal((2, 20))
    ints = RNG.integers(0, 9, (4, 10))
    fw, aw = RNG.integers(1, 4, 20), RNG.random(20)

    def close(got, want):
        assert (got.dtype, got.shape) == (want.dtype, want.shape)
        # (numpy's dot is BLAS's: its own order of additions)
        np.testing.assert_allclose(got.get(), want, rtol=1e-5 if want.dtype == np.float32
                                   else 1e-10, atol=1e-12, equal_nan=True)

    for args, kw in (((m,), {}), ((m, y), {}), ((m.T,), {"rowvar": False}), ((m[0], y[0]), {}),
                     ((ints,), {}), ((m.astype(np.float32),), {"dtype": np.float32}),
                     ((m,), {"bias": True}), ((m,), {"ddof": 3}), ((m,), {"fweights": fw}),
                     ((m,), {"fweights": fw, "aweights": aw, "ddof": 2}), ((m[:, :1],), {})):
        dargs = tuple(dptx.asarray(a) for a in args)
        dkw = {k: dptx.asarray(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
        close(np.cov(*dargs, **dkw), np.cov(*args, **kw))
        if not set(kw) & {"fweights", "aweights", "bias", "ddof"}:
            close(np.corrcoef(*dargs, **dkw), np.corrcoef(*args, **kw))
    assert dptx.cov(dptx.zeros((0, 3))).shape == (0, 0)
    _same_error(lambda xp: xp.cov(xp.asarray(np.ones((2, 2, 2)))))
    _same_error(lambda xp: xp.cov(xp.asarray(m), fweights=xp.asarray(np.full(20, 1.5))))
    _same_error(lambda xp: xp.cov(xp.asarray(m), aweights=xp.asarray(-np.ones(20))))
    _same_error(lambda xp: xp.cov(xp.asarray(m), fweights=xp.asarray(np.ones(5))))


# -- calculus -------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
def test_gradient_bit_for_bit_and_trapezoid(client, cluster_kind, dtype):
    if cluster_kind == "mixed" and dtype is not np.float32:
        pytest.skip("the same kernels as the float32 case runs on the mixed cluster")
    f = (RNG.standard_normal((5, 7)) * 10).astype(dtype)
    d = dptx.asarray(f)
    x, even, rows = np.cumsum(RNG.random(7)), np.arange(7) * 0.5, np.arange(5) * 3
    for edge_order in (1, 2):
        _same(dptx.gradient(d, edge_order=edge_order), np.gradient(f, edge_order=edge_order))
        _same(dptx.gradient(d, 2.5, edge_order=edge_order), np.gradient(f, 2.5, edge_order=edge_order))
        # uneven coordinates, and even ones (numpy's scalar path)
        _same(dptx.gradient(d, dptx.asarray(rows), dptx.asarray(x), edge_order=edge_order),
              np.gradient(f, rows, x, edge_order=edge_order))
        _same(np.gradient(d, dptx.asarray(even), axis=1, edge_order=edge_order),
              np.gradient(f, even, axis=1, edge_order=edge_order))
    # (a sum along an axis: the last bits differ from numpy's order of additions)
    _same(dptx.trapezoid(d), np.trapezoid(f), exact=False)
    _same(dptx.trapezoid(d, dptx.asarray(x)), np.trapezoid(f, x), exact=False)
    _same(np.trapezoid(d, dx=0.3, axis=0), np.trapezoid(f, dx=0.3, axis=0), exact=False)
    _same_error(lambda xp: xp.gradient(xp.asarray(f), edge_order=3))
    _same_error(lambda xp: xp.gradient(xp.asarray(f[:, :2]), axis=1, edge_order=2))
    _same_error(lambda xp: xp.gradient(xp.asarray(f), xp.asarray(x)))
    _same_error(lambda xp: xp.gradient(xp.asarray(f), xp.asarray(rows), xp.asarray(rows)))


# -- edited copies ---------------------------------------------------------------------------------
@pytest.mark.cpu_workers("copies between views, the same kernels on both clusters")
def test_append_insert_delete_resize_trim_zeros(client):
    a = RNG.integers(0, 50, (4, 6))
    da = dptx.asarray(a)
    _same(dptx.append(da, dptx.asarray(np.arange(3))), np.append(a, np.arange(3)))
    _same(np.append(da, dptx.asarray(a[:1]), axis=0), np.append(a, a[:1], axis=0))
    mask = np.array([True, False, True, False, False, True])
    for obj in (2, -1, slice(1, 5, 2), slice(None, None, -2), slice(4, 2), [0, 3, 3], mask,
                [], np.array([5])):
        for axis in ((1,) if obj is mask else (None, 1)):
            _same(dptx.delete(da, obj, axis=axis), np.delete(a, obj, axis=axis))
    for obj, values in ((2, 99), (-1, [7, 8, 9, 10]), (slice(1, 5, 2), 5), ([0, 3, 3], [1, 2, 3]),
                        (mask, 0), (6, 2.7), ([1], [[5], [6], [7], [8]])):
        for axis in (None, 1):
            try:
                want = np.insert(a, obj, values, axis=axis)
            except ValueError:      # (a column of values into the flattened array)
                continue
            _same(dptx.insert(da, obj, values, axis=axis), want)
    # a scalar position takes the values' first axis there; a list of one, as they are
    column = np.array([[1], [2], [3], [4]])
    _same(dptx.insert(da, 1, dptx.asarray(column), axis=1), np.insert(a, 1, column, axis=1))
    _same(dptx.insert(da, [1], dptx.asarray(column), axis=1), np.insert(a, [1], column, axis=1))
    for shape in ((3, 9), 7, (0,), (2, 0)):
        _same(dptx.resize(da, shape), np.resize(a, shape))
    z = np.zeros((5, 6), int)
    z[1, 2], z[3, 4] = 3, 1
    for trim in ("fb", "f", "b"):
        for axis in (None, 0, 1):
            _same(dptx.trim_zeros(dptx.asarray(z), trim, axis), np.trim_zeros(z, trim, axis))
    _same(dptx.trim_zeros(dptx.zeros(4)), np.trim_zeros(np.zeros(4)))
    _same_error(lambda xp: xp.delete(xp.asarray(a), 9, axis=1))
    _same_error(lambda xp: xp.delete(xp.asarray(a), [1, 9], axis=1))
    _same_error(lambda xp: xp.delete(xp.asarray(a), np.array([True]), axis=1))
    _same_error(lambda xp: xp.insert(xp.asarray(a), 9, 1, axis=1))
    _same_error(lambda xp: xp.insert(xp.asarray(a), [[1]], 1))
    _same_error(lambda xp: xp.resize(xp.asarray(a), (-1, 2)))
    _same_error(lambda xp: xp.trim_zeros(xp.asarray(z), "x"))


# -- small numeric helpers ----------------------------------------------------------------------
@pytest.mark.filterwarnings("ignore::RuntimeWarning")   # numpy's, on inf and NaN
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16, np.int32])
def test_small_numeric_helpers_follow_numpy(client, cluster_kind, dtype):
    if cluster_kind == "mixed" and dtype is not np.float32:
        pytest.skip("element-wise kernels, the same on both clusters")
    x = np.array([0.0, -0.0, 1.5, -2.5, np.inf, -np.inf, np.nan, 1e-30, 3.0])
    a = x.astype(dtype) if np.dtype(dtype).kind == "f" else np.arange(-4, 5, dtype=dtype)
    d = dptx.asarray(a)
    for name in ("sinc", "fix", "isposinf", "isneginf", "real", "imag", "angle"):
        _same(getattr(dptx, name)(d), getattr(np, name)(a))
    _same(np.angle(d, deg=True), np.angle(a, deg=True))
    _same(dptx.diagflat(d.reshape(3, 3), -1), np.diagflat(a.reshape(3, 3), -1))
    for increasing in (False, True):
        for N in (None, 4, 1, 0):
            _same(dptx.vander(d[2:7], N, increasing), np.vander(a[2:7], N, increasing))
    for p in (np.array([1.5, -2.0, 0.25, 3.0]), np.array([2, 3])):
        _same(dptx.polyval(dptx.asarray(p), d), np.polyval(p, a))
    if dtype is np.float64:
        # pow's last bit is the library's (dptx's and numpy's differ); the ends are exact
        for args, kw in (((1, 1000), {}), ((-1, -1000), {"num": 5}),
                         ((2, 3), {"num": 7, "endpoint": False}),
                         ((np.float32(1), np.float32(1000)), {"num": 5, "dtype": np.float32})):
            got, want = dptx.geomspace(*args, **kw).get(), np.geomspace(*args, **kw)
            assert (got.dtype, got.shape, got[0], got[-1]) == \
                (want.dtype, want.shape, want[0], want[-1])
            np.testing.assert_allclose(got, want, rtol=1e-6 if want.dtype == np.float32 else 1e-14)
        _same_error(lambda xp: xp.geomspace(0, 10))
        _same_error(lambda xp: xp.vander(xp.asarray(np.ones((2, 2)))))


# -- histograms of several dimensions -----------------------------------------------------------
def test_histogram2d_and_histogramdd_follow_numpy(client):
    x, y, w = RNG.standard_normal(500), RNG.standard_normal(500) * 3, RNG.random(500)
    dx, dy, dw = dptx.asarray(x), dptx.asarray(y), dptx.asarray(w)
    for kw in ({}, {"bins": (4, 6)},
               {"bins": [np.linspace(-2, 2, 5), np.array([-9, -1, 0, 1, 9.0])]},
               {"range": [(-1, 1), (-2, 3)]}, {"weights": w}, {"density": True},
               {"bins": np.array([-3, -1, 0, 2, 3.0])}):
        got_kw = {k: dw if k == "weights" else v for k, v in kw.items()}
        hist, xedges, yedges = np.histogram2d(x, y, **kw)
        got, gx, gy = dptx.histogram2d(dx, dy, **got_kw)
        # counts exactly; sums of weights (atomic adds: in any order) and densities to rounding
        _same(got, hist, exact=not set(kw) & {"weights", "density"})
        _same(gx, xedges)
        _same(gy, yedges)
    ints = np.stack([RNG.integers(0, 10, 300), RNG.integers(-5, 5, 300), RNG.integers(0, 3, 300)],
                    axis=1)
    hist, edges = np.histogramdd(ints, bins=(3, 4, 5))
    got, got_edges = dptx.histogramdd(dptx.asarray(ints), bins=(3, 4, 5))
    _same(got, hist)
    _same(tuple(got_edges), tuple(edges))
    hist, edges = np.histogramdd([ints[:, 0], ints[:, 1]], bins=4)
    got, got_edges = dptx.histogramdd([dptx.asarray(ints[:, 0]), dptx.asarray(ints[:, 1])], bins=4)
    _same(got, hist)
    _same(tuple(got_edges), tuple(edges))
    _same_error(lambda xp: xp.histogram2d(xp.asarray(x), xp.asarray(y[:3])))
    _same_error(lambda xp: xp.histogram2d(xp.asarray(x), xp.asarray(y), bins=0))
    _same_error(lambda xp: xp.histogram2d(xp.asarray(x), xp.asarray(y),
                                          bins=[np.array([3, 1, 2.0]), 4]))
    _same_error(lambda xp: xp.histogramdd(xp.asarray(np.ones((4, 2))), bins=(1, 2, 3)))
    _same_error(lambda xp: xp.histogram2d(xp.asarray(x), xp.asarray(y), bins=2.5))


# -- linalg.qr ----------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int64])
def test_qr_is_lapacks_to_rounding(client, cluster_kind, dtype, linalg_path):
    if cluster_kind == "mixed" and dtype is not np.float64:
        pytest.skip("the same kernels as the float64 case runs on the mixed cluster")
    tol = 1e-4 if dtype is np.float32 else 1e-10

    def close(got, want):
        assert (got.dtype, got.shape) == (want.dtype, want.shape)
        np.testing.assert_allclose(got.get(), want, rtol=tol, atol=tol)

    for shape in ((5, 3), (3, 5), (4, 4), (2, 6, 4), (1, 1), (7, 1), (2, 3, 40, 30)):
        a = (RNG.standard_normal(shape) * 5).astype(dtype)
        d = dptx.asarray(a)
        # LAPACK's reflector signs: Q and R as numpy's, not only some factorization
        for mode in ("reduced", "complete"):
            (gq, gr), (wq, wr) = dptx.linalg.qr(d, mode=mode), np.linalg.qr(a, mode=mode)
            close(gq, wq)
            close(gr, wr)
        close(np.linalg.qr(d, mode="r"), np.linalg.qr(a, mode="r"))
        for got, want in zip(dptx.linalg.qr(d, mode="raw"), np.linalg.qr(a, mode="raw")):
            close(got, want)
    deficient = RNG.standard_normal((5, 3))
    deficient[:, 1], deficient[2:, 0] = 0, 0     # a reflector that is the identity
    for got, want in zip(np.linalg.qr(dptx.asarray(deficient)), np.linalg.qr(deficient)):
        close(got, want.astype(np.float64))
    q, r = dptx.linalg.qr(dptx.zeros((3, 0)), mode="complete")
    _same(q, np.eye(3))
    assert r.shape == (3, 0)
    _same_error(lambda xp: xp.linalg.qr(xp.asarray(np.ones(3))))
    _same_error(lambda xp: xp.linalg.qr(xp.asarray(np.ones((2, 2))), mode="x"))


# -- linalg.eigh -------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_eigh_and_eigvalsh_follow_numpy(client, cluster_kind, dtype, linalg_path):
    if cluster_kind == "mixed" and dtype is not np.float64:
        pytest.skip("the same kernel as the float64 case runs on the mixed cluster")
    tol = 2e-5 if dtype is np.float32 else 1e-10
    shapes = ((4, 4), (7, 7), (1, 1), (2, 2), (3, 5, 5), (40, 40)) if dtype is np.float64 \
        else ((4, 4), (3, 5, 5))
    for shape in shapes:
        a = RNG.standard_normal(shape).astype(dtype)
        for uplo in ("L", "U"):
            w, v = np.linalg.eigh(a, UPLO=uplo)
            gw, gv = dptx.linalg.eigh(dptx.asarray(a), UPLO=uplo)
            assert (gw.dtype, gw.shape, gv.dtype, gv.shape) == (w.dtype, w.shape, v.dtype, v.shape)
            gw, gv = gw.get(), gv.get()
            scale = max(1.0, float(np.abs(w).max()))
            np.testing.assert_allclose(gw, w, rtol=tol, atol=tol * scale)
            # the eigenvectors: numpy's up to each one's sign (distinct eigenvalues here)
            signs = np.sign(np.sum(gv * v, axis=-2, keepdims=True))
            np.testing.assert_allclose(gv * signs, v, atol=100 * tol * scale)
            np.testing.assert_allclose(np.linalg.eigvalsh(dptx.asarray(a), UPLO=uplo).get(), w,
                                       rtol=tol, atol=tol * scale)
    # a repeated eigenvalue: its vectors are any basis of its space; a v = v w still holds
    q, _ = np.linalg.qr(RNG.standard_normal((6, 6)))
    a = (q @ np.diag([1, 1, 2, 3, 3, 3.0]) @ q.T).astype(dtype)
    gw, gv = (x.get() for x in dptx.linalg.eigh(dptx.asarray(a)))
    np.testing.assert_allclose(gw, np.linalg.eigvalsh(a), atol=10 * tol)
    np.testing.assert_allclose(a @ gv, gv * gw, atol=10 * tol)
    np.testing.assert_allclose(gv.T @ gv, np.eye(6), atol=10 * tol)
    _same_error(lambda xp: xp.linalg.eigh(xp.asarray(np.ones((2, 3)))))
    _same_error(lambda xp: xp.linalg.eigh(xp.asarray(np.ones((2, 2))), UPLO="X"))


# -- linalg.svd ---------------------------------------------------------------------------------
@pytest.mark.cpu_workers("a block per matrix as eigh's and qr's, which run on the mixed one")
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_svd_follows_numpy(client, dtype, linalg_path):
    tol = 1e-4 if dtype is np.float32 else 1e-10
    rank2 = RNG.standard_normal((6, 2)) @ RNG.standard_normal((2, 5))
    shapes = ((5, 3), (3, 5), (4, 4), (1, 1), (6, 1), (1, 6), (2, 7, 4), (30, 20)) \
        if dtype is np.float64 else ((5, 3), (3, 5), (2, 7, 4))
    for a in [RNG.standard_normal(s).astype(dtype) for s in shapes] + \
             [rank2.astype(dtype), np.zeros((4, 3), dtype)]:
        for full in (True, False):
            u, s, vh = np.linalg.svd(a, full_matrices=full)
            gu, gs, gvh = (x.get() for x in dptx.linalg.svd(dptx.asarray(a), full_matrices=full))
            assert [(x.shape, x.dtype) for x in (gu, gs, gvh)] == \
                [(x.shape, x.dtype) for x in (u, s, vh)]
            scale = max(1.0, float(np.abs(s).max()))
            np.testing.assert_allclose(gs, s, rtol=tol, atol=tol * scale)
            k = s.shape[-1]
            # a = U S Vh, U and Vh orthonormal (completed where a value is 0, or full)
            np.testing.assert_allclose((gu[..., :k] * gs[..., None, :]) @ gvh[..., :k, :], a,
                                       atol=10 * tol * scale)
            eye_u = np.broadcast_to(np.eye(gu.shape[-1]), gu.shape[:-2] + (gu.shape[-1],) * 2)
            np.testing.assert_allclose(np.swapaxes(gu, -1, -2) @ gu, eye_u, atol=10 * tol)
            eye_v = np.broadcast_to(np.eye(gvh.shape[-2]), gvh.shape[:-2] + (gvh.shape[-2],) * 2)
            np.testing.assert_allclose(gvh @ np.swapaxes(gvh, -1, -2), eye_v, atol=10 * tol)
            if np.all(np.diff(s, axis=-1) < -1e-3) and np.all(s > 1e-3):
                # distinct values: numpy's vectors up to each one's sign
                sign = np.sign(np.sum(gu[..., :k] * u[..., :k], axis=-2, keepdims=True))
                np.testing.assert_allclose(gu[..., :k] * sign, u[..., :k], atol=1000 * tol)
        np.testing.assert_allclose(np.linalg.svd(dptx.asarray(a), compute_uv=False).get(),
                                   np.linalg.svd(a, compute_uv=False), rtol=tol,
                                   atol=tol * max(1.0, float(np.abs(a).sum())))
    _same_error(lambda xp: xp.linalg.svd(xp.asarray(np.ones(3))))


@pytest.mark.cpu_workers("made of svd, qr and products, which run on the mixed one")
def test_pinv_lstsq_matrix_rank_cond_follow_numpy(client, linalg_path):
    """The routines made of an SVD, against numpy's to rounding: pseudo-inverses of tall,
    wide, square, stacked and rank-deficient matrices, least squares (the minimum-norm
    solution of a deficient system, residuals only at full rank with more rows), ranks and
    condition numbers of every norm, a singular matrix's inf."""
    deficient = RNG.standard_normal((6, 2)) @ RNG.standard_normal((2, 4))      # rank 2
    for a in (RNG.standard_normal((5, 3)), RNG.standard_normal((3, 5)),
              RNG.standard_normal((2, 4, 4)), deficient):
        d = dptx.asarray(a)
        _same(np.linalg.pinv(d), np.linalg.pinv(a), exact=False)
        _same(np.linalg.matrix_rank(d), np.linalg.matrix_rank(a))
    _same(np.linalg.pinv(dptx.asarray(deficient), rtol=None),
          np.linalg.pinv(deficient, rtol=None), exact=False)
    _same_error(lambda xp: xp.linalg.pinv(xp.asarray(deficient), rcond=1e-3, rtol=1e-3))
    _same(np.linalg.matrix_rank(dptx.asarray(np.zeros(4))), np.array(0))
    sq = RNG.standard_normal((2, 4, 4))
    for p in (None, 2, -2, 1, -1, np.inf, -np.inf, "fro"):
        _same(np.linalg.cond(dptx.asarray(sq), p), np.linalg.cond(sq, p), exact=False)
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])
    for p in (1, np.inf):
        _same(np.linalg.cond(dptx.asarray(singular), p), np.linalg.cond(singular, p))
    for a, b in ((RNG.standard_normal((7, 3)), RNG.standard_normal(7)),
                 (RNG.standard_normal((7, 3)), RNG.standard_normal((7, 2))),
                 (deficient, RNG.standard_normal(6)), (RNG.standard_normal((3, 5)),
                                                       RNG.standard_normal(3))):
        x, res, rank, s = np.linalg.lstsq(dptx.asarray(a), dptx.asarray(b))
        wx, wres, wrank, ws = np.linalg.lstsq(a, b)
        _same(x, wx, exact=False)
        _same(res, wres, exact=False)
        _same(s, ws, exact=False)
        assert rank == wrank and isinstance(rank, int)
    _same_error(lambda xp: xp.linalg.lstsq(xp.asarray(np.ones((3, 2))), xp.asarray(np.ones(4))))


@pytest.mark.cpu_workers("gathers, takes and copies the mixed cluster runs in the tests above")
def test_choose_compress_extract_ediff1d_block_follow_numpy(client):
    a = RNG.integers(0, 3, (4, 5))
    choices = [RNG.standard_normal((4, 5)), RNG.standard_normal(5), np.float64(7.5)]
    dchoices = [dptx.asarray(np.asarray(c)) for c in choices]
    _same(np.choose(dptx.asarray(a), dchoices), np.choose(a, choices))
    for mode in ("wrap", "clip"):
        _same(np.choose(dptx.asarray(a * 2 - 2), dchoices, mode=mode),
              np.choose(a * 2 - 2, choices, mode=mode))
    _same_error(lambda xp: xp.choose(xp.asarray(a + 1), [xp.asarray(np.asarray(c))
                                                         for c in choices]))
    x = RNG.standard_normal((3, 4))
    for condition, axis in (([True, False, True], 0), ([False, True], 1),
                            ([False, True, True, False, True], None)):
        _same(np.compress(dptx.asarray(np.array(condition)), dptx.asarray(x), axis=axis),
              np.compress(condition, x, axis=axis))
    _same(np.extract(dptx.asarray(x > 0), dptx.asarray(x)), np.extract(x > 0, x))
    v = RNG.integers(-9, 9, (2, 5)).astype(np.int16)
    _same(np.ediff1d(dptx.asarray(v), to_begin=dptx.asarray(np.array([-5, 7], np.int16)),
                     to_end=dptx.asarray(np.array(99, np.int16))),
          np.ediff1d(v, to_begin=np.array([-5, 7], np.int16), to_end=np.int16(99)))
    _same(np.ediff1d(dptx.asarray(v.astype(np.float32))), np.ediff1d(v.astype(np.float32)))
    _same_error(lambda xp: xp.ediff1d(xp.asarray(v), to_end=xp.asarray(np.array([1.5]))))
    A, B = np.eye(2), np.arange(6.0).reshape(2, 3)
    for nest in ([[A, B], [np.zeros((1, 2)), np.full((1, 3), 7.0)]], [A[0], B[0]],
                 [[A], [A]], [[[1.0, 2.0]], [[3.0, 4.0]]]):
        def device(x):
            return [device(y) for y in x] if isinstance(x, list) else dptx.asarray(np.asarray(x))
        _same(dptx.block(device(nest)), np.block(nest))
    for bad in ([[A], A], [[[A, A]], [[A]], [A]], [], (A, A)):
        _same_error(lambda xp: xp.block(bad))


@pytest.mark.cpu_workers("host-side answers and element-wise launches tested on both")
def test_array_queries_and_construction_follow_numpy(client):
    h = np.arange(24.0).reshape(4, 6)
    x = dptx.asarray(h)
    for pick in (lambda m: (m[:, ::2], m[:, 1::2]), lambda m: (m[0], m[1]),
                 lambda m: (m[1:3], m[2:]), lambda m: (m[::-1, 1], m[:, 1]),
                 lambda m: (m.T, m), lambda m: (m[:, 1::3], m[:, 2::3])):
        assert np.shares_memory(*pick(x)) == np.shares_memory(*pick(h))
    assert dptx.get_array_module(h, x) is dptx and dptx.get_array_module(h) is np
    assert not np.iscomplexobj(x) and np.isrealobj(x)
    _same(np.isreal(x), np.isreal(h))
    _same(np.iscomplex(x), np.iscomplex(h))
    _same(dptx.fromfunction(lambda i, j: i * 10 + j, (3, 4), dtype=np.int32),
          np.fromfunction(lambda i, j: i * 10 + j, (3, 4), dtype=np.int32))
    raw = np.arange(10, dtype=np.int16).tobytes()
    _same(dptx.frombuffer(raw, dtype=np.int16, count=4, offset=2),
          np.frombuffer(raw, dtype=np.int16, count=4, offset=2))
    _same_error(lambda xp: xp.frombuffer(b"abc", dtype=np.int16))


@pytest.mark.cpu_workers("randint, argsort, take and searchsorted run on the mixed cluster elsewhere")
def test_permutation_shuffle_choice(client):
    """The random orders and samples: permutations of the right elements (rows whole),
    reproducible by seed; choice's values in range, its frequencies near p (a fixed seed:
    the bounds are 6 standard deviations), no repeats without replacement, numpy's errors."""
    rs = dptx.random.RandomState(42)
    p = rs.permutation(1000).get()
    assert np.array_equal(np.sort(p), np.arange(1000)) and not np.array_equal(p, np.arange(1000))
    assert np.array_equal(dptx.random.RandomState(42).permutation(1000).get(), p)
    rows = dptx.asarray(np.arange(20).reshape(10, 2))
    shuffled = rs.permutation(rows).get()
    assert np.array_equal(np.sort(shuffled[:, 0]), np.arange(0, 20, 2))
    assert np.array_equal(shuffled[:, 1], shuffled[:, 0] + 1)
    rs.shuffle(rows)
    got = rows.get()
    assert np.array_equal(np.sort(got[:, 0]), np.arange(0, 20, 2))
    n = 200_000
    for weights in (None, np.array([0.1, 0.2, 0.3, 0.4])):
        draws = rs.choice(dptx.asarray(np.array([10, 20, 30, 40])), size=n, p=weights).get()
        want = np.full(4, 0.25) if weights is None else weights
        counts = np.array([np.sum(draws == v) for v in (10, 20, 30, 40)])
        assert counts.sum() == n
        assert np.all(np.abs(counts - n * want) < 6 * np.sqrt(n * want * (1 - want)))
    unique = rs.choice(50, size=(5, 4), replace=False).get()
    assert unique.shape == (5, 4) and len(set(unique.ravel())) == 20 and unique.max() < 50
    weighted = rs.choice(6, size=3, replace=False, p=[0.2, 0, 0.3, 0.1, 0, 0.4]).get()
    assert len(set(weighted)) == 3 and not set(weighted) & {1, 4}
    for call in (lambda xp: xp.random.choice(5, size=6, replace=False),
                 lambda xp: xp.random.choice(4, size=3, replace=False, p=[0.5, 0.5, 0, 0]),
                 lambda xp: xp.random.choice(3, p=[0.5, 0.6, 0.1]),
                 lambda xp: xp.random.choice(3, p=[0.5, 0.5]),
                 lambda xp: xp.random.choice(0)):
        _same_error(call)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")   # numpy's, on kaiser's sqrt of < 0
def test_windows_and_i0_follow_numpy(client):
    """The window functions and i0, against numpy's: to an ulp of the devices' cos and exp
    (i0 of float64 is numpy's bit for bit on the CPU workers), float32 and float16 computed
    in their own types."""
    x = np.concatenate([np.linspace(-20, 20, 41), [0.0, 8.0, 8.000001, 80.0]])
    _same(np.i0(dptx.asarray(x)), np.i0(x), exact=False)
    _same(np.i0(dptx.asarray(x.astype(np.float32))), np.i0(x.astype(np.float32)), exact=False)
    _same(np.i0(dptx.asarray(np.arange(-9, 10))), np.i0(np.arange(-9, 10)), exact=False)
    half = np.linspace(-10, 10, 21).astype(np.float16)
    _same(np.i0(dptx.asarray(half)), np.i0(half))
    for M in (-3, 0, 1, 2, 5, 5.5, 51):
        for name in ("bartlett", "blackman", "hamming", "hanning"):
            _same(getattr(dptx, name)(M), getattr(np, name)(M), exact=False)
        if M >= 1:
            for beta in (0.0, 14.0):
                _same(dptx.kaiser(M, beta), np.kaiser(M, beta), exact=False)


@pytest.mark.cpu_workers("masks, reductions and copies tested on both elsewhere")
def test_piecewise_apply_along_axis_apply_over_axes_follow_numpy(client):
    x = np.linspace(-2.5, 2.5, 11)
    d = dptx.asarray(x)
    for conditions, functions in (
            (lambda v: [v < 0, v >= 0], [-1, 1]),
            (lambda v: [v < 0, v >= 0], [lambda v: -v, lambda v: v * 2]),
            (lambda v: [v < -1, v > 1], [lambda v: v ** 2, 7.5, lambda v: v + 100]),
            (lambda v: v > 0, [lambda v: v * 10, -1]),
            (lambda v: [v > 100], [lambda v: v * 10, -1])):      # a condition never true
        _same(np.piecewise(d, conditions(d), functions), np.piecewise(x, conditions(x), functions))
    m = np.arange(6).reshape(2, 3)
    _same(np.piecewise(dptx.asarray(m), [dptx.asarray(m) > 2], [lambda v: v * 10, -1]),
          np.piecewise(m, [m > 2], [lambda v: v * 10, -1]))
    _same_error(lambda xp: xp.piecewise(xp.asarray(x), [xp.asarray(x) < 0], [1, 2, 3]))
    a = np.arange(24.0).reshape(2, 3, 4)
    da = dptx.asarray(a)
    for axis in (0, 2, -2):
        _same(np.apply_along_axis(lambda v: v.sum(), axis, da),
              np.apply_along_axis(lambda v: v.sum(), axis, a))
        _same(np.apply_along_axis(lambda v: v[::-1] * 2, axis, da),
              np.apply_along_axis(lambda v: v[::-1] * 2, axis, a))
    _same(np.apply_along_axis(lambda v: np.outer(v, v), 1, da),
          np.apply_along_axis(lambda v: np.outer(v, v), 1, a))
    _same(np.apply_over_axes(np.sum, da, [0, 2]), np.apply_over_axes(np.sum, a, [0, 2]))
    _same_error(lambda xp: xp.apply_along_axis(lambda v: v, 0, xp.asarray(np.ones((3, 0)))))


@pytest.mark.cpu_workers("made of lstsq (svd) and element-wise launches tested on both")
def test_polyfit_and_unwrap_follow_numpy(client):
    x = np.linspace(0, 3, 20)
    y = 2 * x ** 3 - x + 1 + RNG.standard_normal(20) * 0.1
    Y = np.stack([y, 2 * y], axis=1)
    weights = RNG.random(20)
    dx, dy, dY = dptx.asarray(x), dptx.asarray(y), dptx.asarray(Y)
    for deg in (0, 1, 3):
        _same(np.polyfit(dx, dy, deg), np.polyfit(x, y, deg), exact=False)
    _same(np.polyfit(dx, dY, 2), np.polyfit(x, Y, 2), exact=False)
    _same(np.polyfit(dx, dy, 2, w=dptx.asarray(weights)), np.polyfit(x, y, 2, w=weights),
          exact=False)
    for cov in (True, "unscaled"):
        for target, host in ((dy, y), (dY, Y)):
            got, want = np.polyfit(dx, target, 2, cov=cov), np.polyfit(x, host, 2, cov=cov)
            _same(got[0], want[0], exact=False)
            np.testing.assert_allclose(got[1].get(), want[1], rtol=1e-8)
    got, want = np.polyfit(dx, dy, 2, full=True), np.polyfit(x, y, 2, full=True)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g.get() if isinstance(g, dptx.ndarray) else g), w,
                                   rtol=1e-8)
    with pytest.warns(np.exceptions.RankWarning, match="poorly conditioned"):
        np.polyfit(dptx.asarray(np.ones(5)), dptx.asarray(np.ones(5)), 2)
    _same_error(lambda xp: xp.polyfit(xp.asarray(np.ones((2, 2))), xp.asarray(np.ones(2)), 1))
    phase = np.cumsum(RNG.uniform(-2.5, 2.5, 60))
    wrapped = np.angle(np.exp(1j * phase))
    _same(np.unwrap(dptx.asarray(wrapped)), np.unwrap(wrapped), exact=False)
    _same(np.unwrap(dptx.asarray(wrapped.reshape(6, 10)), axis=0),
          np.unwrap(wrapped.reshape(6, 10), axis=0), exact=False)
    steps = np.array([0, 3, 7, 2, 9, 1, 6])
    for period in (6, 7):                  # integer periods: numpy's exact boundary rule
        _same(np.unwrap(dptx.asarray(steps), period=period), np.unwrap(steps, period=period))
    _same(np.unwrap(dptx.asarray(wrapped), discont=4.0), np.unwrap(wrapped, discont=4.0),
          exact=False)


@pytest.mark.cpu_workers("made of argsort, cumsum, take and reductions tested on both")
@pytest.mark.filterwarnings("ignore::RuntimeWarning")   # numpy's, on all-NaN slices
def test_weighted_quantiles_follow_numpy(client):
    """weights= with 'inverted_cdf' (numpy's only weighted method), bit for bit: weights of
    a's shape or of its axis, leading zero weights, NaN slices (quantile gives NaN,
    nanquantile leaves the NaNs out), q arrays, keepdims, percentiles; numpy's errors."""
    a = RNG.standard_normal((5, 7))
    a[1, 2] = np.nan
    a[3, :] = np.nan
    a[4, ::2] = np.nan
    w = RNG.random((5, 7))
    w[0, :2] = 0
    da, dw = dptx.asarray(a), dptx.asarray(w)
    for q in (0.5, np.array([0.0, 0.3, 1.0])):
        for axis, weights in ((1, w), (0, w), (None, w), (1, w[0]), (0, w[:, 0])):
            _same(np.quantile(da, q, axis=axis, method="inverted_cdf",
                              weights=dptx.asarray(weights)),
                  np.quantile(a, q, axis=axis, method="inverted_cdf", weights=weights))
        for axis in (1, None):      # (numpy's own nanquantile fails on 1-D weights)
            _same(np.nanquantile(da, q, axis=axis, method="inverted_cdf", weights=dw),
                  np.nanquantile(a, q, axis=axis, method="inverted_cdf", weights=w))
        _same(np.percentile(da, q * 100, axis=0, method="inverted_cdf", weights=dw,
                            keepdims=True),
              np.percentile(a, q * 100, axis=0, method="inverted_cdf", weights=w, keepdims=True))
    ints, counts = RNG.integers(0, 20, (3, 9)), RNG.integers(0, 4, (3, 9)).astype(float)
    _same(np.quantile(dptx.asarray(ints), [0.1, 0.5, 0.9], axis=1, method="inverted_cdf",
                      weights=dptx.asarray(counts)),
          np.quantile(ints, [0.1, 0.5, 0.9], axis=1, method="inverted_cdf", weights=counts))
    for call in (lambda xp: xp.quantile(xp.asarray(a), 0.5, axis=1, weights=xp.asarray(w)),
                 lambda xp: xp.quantile(xp.asarray(a), 0.5, method="inverted_cdf",
                                        weights=xp.asarray(w[0])),
                 lambda xp: xp.quantile(xp.asarray(a), 0.5, axis=1, method="inverted_cdf",
                                        weights=xp.asarray(-w)),
                 lambda xp: xp.quantile(xp.asarray(a), 0.5, axis=1, method="inverted_cdf",
                                        weights=xp.asarray(w[:, :3])),
                 lambda xp: xp.quantile(xp.asarray(a), 0.5, axis=1, method="inverted_cdf",
                                        weights=xp.asarray(np.zeros_like(w)))):
        _same_error(call)


# -- numpy 2's array API names ------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.float16, np.int8, np.uint8,
                                   np.int64, np.bool_])
def test_vecdot_matvec_vecmat(client, cluster_kind, dtype):
    """numpy's gufuncs: products in the operands' type (integers wrap, booleans any-of-and,
    float16 in float32 rounded once), the stacks broadcast, along ``axis``."""
    if cluster_kind == "mixed" and dtype != np.float64:
        pytest.skip("the same launches as the float64 case runs on the mixed cluster")
    x = RNG.standard_normal((3, 4, 5))
    a, b = (x * 4).astype(dtype), (x[::-1] * 3).astype(dtype)
    da, db = dptx.asarray(a), dptx.asarray(b)
    tol = {np.float16: 2e-3, np.float32: 1e-5, np.float64: 1e-12}.get(dtype)

    def same(got, want):
        if tol is None:
            _same(got, want)
        else:
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_allclose(got.get().astype(np.float64), want.astype(np.float64),
                                       rtol=tol, atol=tol)
    same(dptx.vecdot(da, db), np.vecdot(a, b))
    same(dptx.vecdot(da, db, axis=0), np.vecdot(a, b, axis=0))
    same(dptx.vecdot(da, db[0, 0]), np.vecdot(a, b[0, 0]))
    same(dptx.matvec(da, db[0, 0]), np.matvec(a, b[0, 0]))
    same(dptx.vecmat(db[0, :, 0], da), np.vecmat(b[0, :, 0], a))
    if dtype == np.float64:
        _same_error(lambda m: m.vecdot(m.asarray(a), m.asarray(a)[..., :2]))


@pytest.mark.cpu_workers("cumsum, cumprod and joins run on the mixed cluster elsewhere")
def test_cumulative_sum_and_prod(client):
    """numpy 2's cumulative_sum/prod: cumsum/cumprod with the identity first where
    ``include_initial``, an axis required past 1-D, numpy's result types."""
    x = RNG.standard_normal((3, 4, 5))
    for dtype in (np.float64, np.float32, np.int8, np.uint8, np.bool_):
        a = (x * 3).astype(dtype)
        d = dptx.asarray(a)
        for axis in (0, 1, -1):
            for initial in (False, True):
                _same(dptx.cumulative_sum(d, axis=axis, include_initial=initial),
                      np.cumulative_sum(a, axis=axis, include_initial=initial),
                      exact=dtype not in (np.float32, np.float64))
                _same(dptx.cumulative_prod(d, axis=axis, include_initial=initial),
                      np.cumulative_prod(a, axis=axis, include_initial=initial),
                      exact=dtype not in (np.float32, np.float64))
        _same(dptx.cumulative_sum(d.ravel(), dtype=np.int32, include_initial=True),
              np.cumulative_sum(a.ravel(), dtype=np.int32, include_initial=True))
        _same(dptx.cumulative_sum(d[0, 0, 0]), np.cumulative_sum(a[0, 0, 0]))
    out, want = dptx.zeros((3, 5, 5)), np.zeros((3, 5, 5))
    got = dptx.cumulative_sum(dptx.asarray(x), axis=1, include_initial=True, out=out)
    assert got is out
    _same(out, np.cumulative_sum(x, axis=1, include_initial=True, out=want), exact=False)
    _same_error(lambda m: m.cumulative_sum(m.asarray(x)))


@pytest.mark.cpu_workers("unique, views and joins run on the mixed cluster elsewhere")
def test_unique_family_and_other_array_api_names(client):
    """unique_values/counts/inverse/all (NaNs each distinct, the inverse in the input's
    shape, numpy's result names), concat, permute_dims, matrix_transpose and ``.mT``,
    unstack, the astype function, numpy 2's type names."""
    for a in (np.array([[3, 1, np.nan], [2, 1, np.nan]]), np.array([5, 3, 5, 1, 3, 3], np.int16),
              np.array([], np.float32)):
        d = dptx.asarray(a)
        _same(dptx.unique_values(d), np.sort(np.unique_values(a)))
        for name in ("unique_counts", "unique_inverse", "unique_all"):
            got, want = getattr(dptx, name)(d), getattr(np, name)(a)
            assert type(got).__name__ == type(want).__name__ and got._fields == want._fields
            _same(tuple(got), tuple(want))
    x = RNG.standard_normal((2, 3, 4))
    d = dptx.asarray(x)
    _same(dptx.concat([d, d], axis=1), np.concat([x, x], axis=1))
    _same(dptx.concat([d, d], axis=None), np.concat([x, x], axis=None))
    _same(dptx.permute_dims(d, (2, 0, 1)), np.permute_dims(x, (2, 0, 1)))
    _same(dptx.matrix_transpose(d), np.matrix_transpose(x))
    _same(d.mT, x.mT)
    _same(dptx.unstack(d, axis=1), np.unstack(x, axis=1))
    _same(dptx.astype(d * 100, np.int16), np.astype(x * 100, np.int16))
    _same_error(lambda m: m.matrix_transpose(m.asarray(x)[0, 0]))
    _same_error(lambda m: m.unstack(m.asarray(x)[0, 0, 0]))
    assert (dptx.bool, dptx.int_, dptx.uint, dptx.long, dptx.ulong) == \
        (np.bool, np.int_, np.uint, np.long, np.ulong)
    assert dptx.isdtype(dptx.float32, "real floating")


@pytest.mark.cpu_workers("element-wise launches, joins and sorts run on the mixed cluster "
                         "elsewhere")
def test_numpys_keywords_on_ranges_differences_joins_and_sorts(client, every):
    """linspace/logspace of array endpoints along ``axis`` (numpy's steps: exact for
    linspace, pow's few ulps for logspace), diff's prepend/append, the joins' ``casting``
    (numpy raises for floats joined into an int dtype; dptx converted them silently),
    numpy 2's ``stable=`` and ``sorted=``."""
    A, B = np.array([[0.0, 1.5], [-2, 7]]), np.array([10, 3])
    I8, F32 = np.array([1, 9], np.int8), np.array([0.1, 3.3], np.float32)
    dA, dB, dI8, dF32 = (dptx.asarray(v) for v in (A, B, I8, F32))
    for j, (num, endpoint) in enumerate(itertools.product((0, 1, 2, 7), (True, False))):
        # the sample: each count with and without the endpoint (together they set the step),
        # along one axis in turn
        for axis in (0, 1, -1) if every else ((0, 1, -1)[j % 3],):
            kw = dict(num=num, endpoint=endpoint, axis=axis)
            got, step = dptx.linspace(dA, dB, retstep=True, **kw)
            want, wstep = np.linspace(A, B, retstep=True, **kw)
            _same(got, want)
            if (num - 1 if endpoint else num) > 0:
                _same(step, wstep)
            else:
                assert np.isnan(step) and np.isnan(wstep)
            _same(dptx.linspace(3, dB, **kw), np.linspace(3, B, **kw))
            _same(dptx.linspace(dI8, dF32, **kw), np.linspace(I8, F32, **kw))
            _same(dptx.linspace(dA, 5.5, dtype=np.int16, **kw),
                  np.linspace(A, 5.5, dtype=np.int16, **kw))
            for got, want in (
                    (dptx.logspace(dA, dB, **kw), np.logspace(A, B, **kw)),
                    (dptx.logspace(0, dF32, base=dptx.asarray([2.0, 3.0]), **kw),
                     np.logspace(0, F32, base=np.array([2.0, 3.0]), **kw)),
                    (dptx.logspace(0, dF32, dtype=np.float32, **kw),
                     np.logspace(0, F32, dtype=np.float32, **kw))):
                assert (got.dtype, got.shape) == (want.dtype, want.shape)
                np.testing.assert_allclose(got.get(), want, rtol=4 * np.finfo(want.dtype).eps)
    big = (np.array([-2**63, 5]), np.array([2**63 - 1, 6]))     # converted, then subtracted
    _same(dptx.linspace(*map(dptx.asarray, big), 5), np.linspace(*big, 5))
    _same_error(lambda m: m.linspace(m.asarray(A), 1, 5, axis=3))
    x, xb = np.array([[1, 4, 9], [2, 2, 8]]), np.array([True, False, False])
    for kw in (dict(prepend=0), dict(append=[[5], [6]]), dict(prepend=1, append=2, n=2),
               dict(prepend=np.array([[1, 2, 3]]), axis=0), dict(append=1.5)):
        _same(dptx.diff(dptx.asarray(x), **kw), np.diff(x, **kw))
    _same(dptx.diff(dptx.asarray(xb), prepend=True), np.diff(xb, prepend=True))
    dx = dptx.asarray(x)
    assert dptx.diff(dx, n=0) is dx
    _same_error(lambda m: m.diff(m.asarray(x), prepend=[1, 2]))
    A32 = A.astype(np.float32)
    for kw in (dict(dtype=np.int32), dict(casting="no"), dict(casting="bogus")):
        _same_error(lambda m: m.concatenate([m.asarray(A), m.asarray(A32)], **kw))
        _same_error(lambda m: m.stack([m.asarray(A), m.asarray(A32)], **kw))
        _same_error(lambda m: m.hstack([m.asarray(A), m.asarray(A32)], **kw))
        _same_error(lambda m: m.vstack([m.asarray(B), m.asarray(A32[0])], **kw))
    _same(dptx.concatenate([dA, dA], dtype=np.int32, casting="unsafe"),
          np.concatenate([A, A], dtype=np.int32, casting="unsafe"))
    _same(dptx.vstack([dA, dA], dtype=np.float32), np.vstack([A, A], dtype=np.float32))
    _same_error(lambda m: m.concatenate([m.asarray(A)] * 2, out=m.zeros((4, 2), np.int32)))
    _same_error(lambda m: m.concatenate([m.asarray(A)] * 2, out=m.zeros((4, 2)), dtype=float))
    _same(dptx.sort(dA, stable=True), np.sort(A, stable=True))
    _same(dptx.argsort(dA, axis=0, stable=True), np.argsort(A, axis=0, stable=True))
    _same_error(lambda m: m.sort(m.asarray(A), stable=True, kind="stable"))
    _same(dptx.unique(dx, sorted=True), np.unique(x, sorted=True))


def test_packbits_unpackbits(client, every):
    """Eight elements' truth to a byte along an axis (of the flattened array by default),
    most or least significant bit first, and back with ``count`` (numpy's results; numpy's
    own unpackbits of an empty array with a positive count returns uninitialized bytes where
    its documentation says zeros: zeros here)."""
    rng = np.random.default_rng(8)
    for k, shape in enumerate([(0,), (5,), (13,), (3, 10), (4, 0, 3), (2, 9, 17), ()]):
        # the sample: one input type per shape, in turn (packing reads each as its truth)
        for dtype in (np.bool_, np.uint8, np.int64) if every else \
                ((np.bool_, np.uint8, np.int64)[k % 3],):
            a = (rng.integers(0, 3, shape) * (rng.random(shape) < 0.5)).astype(dtype)
            d = dptx.asarray(a)
            for axis in [None, 0, -1] + ([1] if len(shape) > 1 else []):
                for order in ("big", "little"):
                    _same(dptx.packbits(d, axis=axis, bitorder=order),
                          np.packbits(a, axis=axis, bitorder=order))
        u = rng.integers(0, 256, shape, dtype=np.uint8)
        du = dptx.asarray(u)
        for axis in [None, 0, -1] + ([1] if len(shape) > 1 else []):
            for order in ("big", "little"):
                for count in (None, 0, 3, -3, 20):
                    want_error = count is not None and count < 0 and -count > 8 * (
                        u.size if axis is None or not shape else u.shape[axis])
                    if want_error:
                        _same_error(lambda m: m.unpackbits(m.asarray(u), axis, count, order))
                        continue
                    got = dptx.unpackbits(du, axis=axis, count=count, bitorder=order)
                    if u.size == 0 and count:       # numpy's uninitialized bytes: zeros
                        assert got.dtype == np.uint8 and not got.get().any()
                        continue
                    _same(got, np.unpackbits(u, axis=axis, count=count, bitorder=order))
    _same(np.packbits(dptx.asarray(np.arange(9) > 3)), np.packbits(np.arange(9) > 3))
    _same_error(lambda m: m.unpackbits(m.asarray(np.ones(3, np.int8))))
    _same_error(lambda m: m.packbits(m.asarray(np.ones(3)), axis=0))
    _same_error(lambda m: m.packbits(m.asarray(np.ones(3, np.int8)), bitorder="x"))
    _same_error(lambda m: m.packbits(m.asarray(np.ones(3, np.int8)), axis=5))


def test_array_equiv_and_array_methods(client):
    a = np.arange(12).reshape(3, 4)
    d = dptx.asarray(a)
    for other in (a[:1], a[0], a[:, :1], a + 1, a[:, :3], np.zeros((2, 3, 4))):
        got = dptx.array_equiv(d, dptx.asarray(other))
        assert bool(got) == np.array_equiv(a, other)
        assert bool(np.array_equiv(d, dptx.asarray(other))) == np.array_equiv(a, other)
    c = np.array([[0, 1, 0, 1], [1, 0, 1, 0], [0, 0, 1, 1]])
    _same(dptx.asarray(c).choose([d, -d]), c.choose([a, -a]))
    _same(d.compress([True, False, True], axis=0), a.compress([True, False, True], axis=0))
    out = dptx.zeros((3, 3), np.int64)
    assert d.dot(d.T, out=out) is out
    _same(out, a.dot(a.T))
    # numpy 2's gufuncs of vectors reach dptx through __array_ufunc__
    f = a.astype(np.float64)
    df = dptx.asarray(f)
    _same(np.vecdot(df, df, axis=0), np.vecdot(f, f, axis=0), exact=False)
    _same(np.matvec(df, df[0]), np.matvec(f, f[0]), exact=False)
    _same(np.vecmat(df[:, 0], df), np.vecmat(f[:, 0], f), exact=False)


@pytest.mark.cpu_workers("compositions of additions, convolutions and joins tested on both")
def test_polynomial_arithmetic_follows_numpy(client):
    """polyadd/polysub/polymul/polyder/polyint: numpy's coefficients and types, exactly,
    through dptx and numpy's own functions; numpy's errors."""
    pairs = [(np.array([1.0, 2, 3]), np.array([4.0, 5])),
             (np.array([1, 2, 3]), np.array([2])),
             (np.array([1, 2], np.float32), np.array([3.0, 4, 5, 6])),
             (np.array([5]), np.array([1, 2, 3], np.int8)),
             (np.array([True, False]), np.array([1, 2]))]
    for a1, a2 in pairs:
        for name in ("polyadd", "polysub", "polymul"):
            want = getattr(np, name)(a1, a2)
            _same(getattr(dptx, name)(dptx.asarray(a1), dptx.asarray(a2)), want)
            _same(getattr(np, name)(dptx.asarray(a1), a2), want)      # numpy's, dispatched
    for p in (np.array([3.0, 2, 1, 5]), np.array([1, 2, 3]), np.array([2], np.float32),
              np.array([4, 3, 2, 1], np.int16)):
        for m in (0, 1, 2, 5):
            _same(np.polyder(dptx.asarray(p), m), np.polyder(p, m))
            for k in (None, 3, [1, 2, 3, 4, 5]):
                _same(np.polyint(dptx.asarray(p), m, k), np.polyint(p, m, k))
    with pytest.raises(ValueError, match="derivative must be positive"):
        dptx.polyder(dptx.ones(3), -1)
    with pytest.raises(ValueError, match="k must be a scalar"):
        dptx.polyint(dptx.ones(3), 3, k=[1, 2])
