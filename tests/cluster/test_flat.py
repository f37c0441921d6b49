"""``a.flat``: numpy's flat iterator (indexing, assignment with numpy's repetition of short
values, iteration) on every layout, against numpy's on the same layout."""
import numpy as np
import pytest

import dptx

pytestmark = pytest.mark.cpu_workers("a.flat is indexing and assignment that other tests "
                                     "run on GPUs")

LAYOUTS = {
    "C": lambda x: x,
    "F": lambda x: x.T,
    "strided": lambda x: x[:, ::2],
    "reversed": lambda x: x[::-1, 1:],
}
rng = np.random.default_rng(3)


def _keys(n, host):
    return [3, -1, np.int64(2), slice(2, 9), slice(None, None, 3), slice(7, 1, -2), Ellipsis,
            (slice(1, 4),), [0, 5, 2], np.array([[1, 2], [3, 0]]),
            dptx.asarray(np.array([4, 1])), host.reshape(-1) > 0.5,
            dptx.asarray(host.reshape(-1) < 0.3)]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_flat_reads_and_writes_as_numpys(client, layout, every):
    make = LAYOUTS[layout]
    base = rng.random((6, 8))
    host = make(base)
    for k, key in enumerate(_keys(host.size, host)):
        hkey = key.get() if isinstance(key, dptx.ndarray) else key
        got = make(dptx.asarray(base)).flat[key]
        want = host.flat[hkey]
        np.testing.assert_array_equal(got.get() if isinstance(got, dptx.ndarray) else got,
                                      want)
        count = np.size(np.arange(host.size)[hkey])
        values = (7, [1.5], [1.0, 2.0], np.arange(100.0), np.arange(count) * 2.0 + 1)
        # the sample: two kinds of value per key and layout in turn (a scalar, one item,
        # fewer items than selected, more, as many): over the four layouts every key meets
        # every kind
        turn = k + list(LAYOUTS).index(layout)
        for value in values if every else (values[turn % 5], values[(turn + 2) % 5]):
            h, d = make(base.copy()), make(dptx.asarray(base))
            try:
                h.flat[hkey] = value
            except ValueError:
                with pytest.raises(ValueError, match="single item"):
                    d.flat[key] = value
                continue
            d.flat[key] = dptx.asarray(value) if isinstance(value, np.ndarray) else value
            np.testing.assert_array_equal(d.get(), h)


def test_a_flat_read_is_a_copy_and_iteration(client):
    a = dptx.arange(12).reshape(3, 4)
    part = a.flat[1:3]
    part[0] = 100                        # numpy's flat indexing never gives a view
    np.testing.assert_array_equal(a.get(), np.arange(12).reshape(3, 4))
    t = a.T
    assert len(t.flat) == 12 and t.flat.base is t
    assert list(t.flat) == list(np.arange(12).reshape(3, 4).T.flat)
    np.testing.assert_array_equal(np.asarray(t.flat), np.arange(12).reshape(3, 4).T.ravel())
    np.testing.assert_array_equal(t.flat.copy().get(), np.arange(12).reshape(3, 4).T.ravel())
    it = t.flat
    next(it), next(it)
    assert it.index == 2 and it.coords == (0, 2)
    t.flat = [7, 8, 9]                      # every element, the value repeated in C order
    want = np.arange(12).reshape(3, 4).T.copy()
    want.flat = [7, 8, 9]
    np.testing.assert_array_equal(t.get(), want)
    with pytest.raises(IndexError):
        a.flat[12]
