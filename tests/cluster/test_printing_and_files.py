"""What crosses to the host explicitly: printing (numpy's text, only the shown items read
back), files and text (numpy's formats, the arrays uploaded or read back), pickles (the
values travel), numpy's conversions (asanyarray, asarray_chkfinite, require) and flags."""
import io
import pickle
import re

import numpy as np
import pytest

import dptx
from dptx._io import formatting

pytestmark = pytest.mark.cpu_workers("host-side formatting and files; the few launches "
                                     "are gathers and copies that other tests cover on GPUs")

rng = np.random.default_rng(7)
PRINTED = [
    np.arange(6).reshape(2, 3),
    np.float32(1.5) * np.arange(3, dtype=np.float32),
    np.array(2.5),
    np.array([], np.float32),
    np.zeros((0, 3)),
    rng.random(5000),                                   # summarized, one axis
    rng.random((40, 50)).astype(np.float32),            # summarized, both axes
    np.arange(2000, dtype=np.int16).reshape(10, 200),   # one axis short enough to show whole
    rng.standard_normal((3, 4, 500)) * 1e5,             # scientific notation from the edges
    rng.random(2000) > 0.5,
    np.arange(1001, dtype=np.uint8),
    rng.random((7, 7, 7, 7)),
    np.array([np.nan, np.inf, -1.0] * 400),
    np.asfortranarray(rng.random((30, 40))),
]
FORMATTERS = [
    str,
    np.array2string,
    lambda x: np.array2string(x, separator=",", edgeitems=2),
    lambda x: np.array2string(x, threshold=10, precision=3),
    lambda x: np.array_str(x, precision=2, suppress_small=True),
    lambda x: np.array2string(x, max_line_width=40, sign="+"),
]


@pytest.mark.parametrize("case", range(len(PRINTED)))
def test_printing_is_numpys(client, case):
    host = PRINTED[case]
    d = dptx.asarray(host)
    for fmt in FORMATTERS:
        assert fmt(d) == fmt(host)
    with np.printoptions(edgeitems=1, threshold=5, precision=2):
        assert str(d) == str(host) and dptx.array_str(d) == np.array_str(host)
    # repr: numpy's items and layout, dptx's name and the dtype always (compared on lines
    # long enough that the longer name wraps nothing differently)
    assert repr(d).startswith("dptx.ndarray(") and repr(d).endswith(f"dtype={host.dtype})")
    numpy_repr = np.array_repr(host, max_line_width=10**6)
    ours = dptx.array_repr(d, max_line_width=10**6)
    assert _items(ours, "dptx.ndarray(") == _items(numpy_repr, "array(").replace(
        "\n" + " " * len("array("), "\n" + " " * len("dptx.ndarray("))
    assert ("shape=" in ours) == ("shape=" in numpy_repr)


def _items(text, prefix):
    """The items of an array's repr: the text between the prefix and what follows them."""
    assert text.startswith(prefix)
    return re.sub(r",?\s*(shape=\([^)]*\),?\s*)?(dtype=\w+)?\)$", "", text[len(prefix):])


def test_a_summary_reads_back_only_the_items_it_shows(client):
    d = dptx.arange(1 << 22, dtype=np.float32).reshape(1 << 11, 1 << 11)
    host, summarized = formatting._shown(d)
    assert summarized and host.shape == (7, 7)     # 3 + 1 + 3 per axis (numpy's edgeitems)
    assert str(d) == str(np.arange(1 << 22, dtype=np.float32).reshape(1 << 11, 1 << 11))
    assert repr(d).endswith("shape=(2048, 2048), dtype=float32)")


def test_format(client):
    assert f"{dptx.asarray(np.float32(2.25)):.3f}" == "2.250"
    assert f"{dptx.arange(3)}" == "[0 1 2]" and format(dptx.asarray(7), "04d") == "0007"
    with pytest.raises(TypeError, match="unsupported format string"):
        f"{dptx.arange(3):.2f}"


@pytest.mark.parametrize("make", [lambda h: h, "asfortranarray",
                                  lambda h: h[:, ::2], lambda h: h.T[1:]])
def test_pickles_carry_the_values(client, make):
    host = rng.random((6, 8))
    if make == "asfortranarray":
        d, want = dptx.asfortranarray(host), np.asfortranarray(host)
    else:
        d, want = make(dptx.asarray(host)), make(host)
    back = pickle.loads(pickle.dumps(d))
    assert isinstance(back, dptx.ndarray) and back.dtype == want.dtype
    np.testing.assert_array_equal(back.get(), want)
    assert back.flags.f_contiguous == (want.flags.f_contiguous and not want.flags.c_contiguous
                                       or want.flags.f_contiguous and want.ndim < 2)
    np.testing.assert_array_equal(pickle.loads(d.dumps()).get(), want)


def test_npy_npz_and_text_files(client, tmp_path):
    a = dptx.asarray(rng.random((3, 4)).astype(np.float32))
    host = a.get()
    f = io.BytesIO()
    np.save(f, a)                           # numpy's own save of a dptx array
    f.seek(0)
    np.testing.assert_array_equal(np.load(f), host)
    f = io.BytesIO()
    dptx.save(f, a)
    f.seek(0)
    back = dptx.load(f)
    assert isinstance(back, dptx.ndarray)
    np.testing.assert_array_equal(back.get(), host)
    for save in (dptx.savez, dptx.savez_compressed, np.savez):
        path = tmp_path / f"{save.__name__}.npz"
        save(path, a, b=dptx.arange(3))
        with dptx.load(path) as z:
            assert sorted(z.files) == ["arr_0", "b"] and "b" in z and len(z) == 2
            assert isinstance(z["arr_0"], dptx.ndarray)
            np.testing.assert_array_equal(z["arr_0"].get(), host)
            np.testing.assert_array_equal(z["b"].get(), np.arange(3))
    text = tmp_path / "a.txt"
    dptx.savetxt(text, a, fmt="%.9g")
    np.testing.assert_array_equal(np.loadtxt(text, dtype=np.float32), host)
    np.testing.assert_array_equal(dptx.loadtxt(text, dtype=np.float32).get(), host)
    first, second = dptx.loadtxt(text, usecols=(0, 1), unpack=True)
    np.testing.assert_array_equal(second.get(), np.loadtxt(text, usecols=1))
    got = dptx.genfromtxt(io.StringIO("1,2\n3,nan"), delimiter=",")
    np.testing.assert_array_equal(got.get(), np.array([[1, 2], [3, np.nan]]))
    with pytest.raises(TypeError, match="masked array"):
        dptx.genfromtxt(io.StringIO("1,2\n3,"), delimiter=",", usemask=True)
    raw = tmp_path / "a.raw"
    a.T.tofile(raw)                         # C order of the transposed view's values
    np.testing.assert_array_equal(dptx.fromfile(raw, np.float32).get(), host.T.ravel())
    a.tofile(tmp_path / "a.csv", sep=",")
    np.testing.assert_array_equal(dptx.fromfile(tmp_path / "a.csv", np.float32, sep=",").get(),
                                  host.ravel())
    np.testing.assert_array_equal(dptx.fromstring("1 2 3", sep=" ").get(), [1.0, 2.0, 3.0])
    got = dptx.fromiter((i * i for i in range(5)), np.int32)
    assert got.dtype == np.int32 and got.get().tolist() == [0, 1, 4, 9, 16]
    a.dump(tmp_path / "a.pickle")
    np.testing.assert_array_equal(np.load(tmp_path / "a.pickle", allow_pickle=True).get(),
                                  host)


def test_conversions_and_flags(client):
    host = rng.random((4, 6))
    a = dptx.asarray(host)
    view = a[:, ::2]
    assert dptx.asanyarray(a) is a
    np.testing.assert_array_equal(dptx.asanyarray([1, 2]).get(), [1, 2])
    assert dptx.asarray_chkfinite(a) is a
    assert dptx.asarray_chkfinite(dptx.arange(3)).dtype == np.int64
    for bad in ([1.0, np.nan], [np.inf, 0.0]):
        with pytest.raises(ValueError, match="must not contain infs or NaNs"):
            dptx.asarray_chkfinite(np.array(bad))
        with pytest.raises(ValueError, match="must not contain infs or NaNs"):
            np.asarray_chkfinite(dptx.asarray(bad))     # numpy's, through dptx
    # require: numpy's flags and spellings, a copy only where one is missing
    assert dptx.require(a, requirements="C") is a
    c = dptx.require(view, requirements=["C_CONTIGUOUS"])
    assert c.flags.c_contiguous and c is not view
    np.testing.assert_array_equal(c.get(), host[:, ::2])
    f = dptx.require(a, np.float32, ["F", "W", "A"])
    assert f.dtype == np.float32 and f.flags["F"] and not f.flags.c_contiguous
    np.testing.assert_array_equal(f.get(), host.astype(np.float32))
    assert dptx.require(view) is view
    owned = dptx.require(view, requirements="O")
    assert owned.flags.owndata and not view.flags["O"]
    with pytest.raises(ValueError, match="both"):
        dptx.require(a, requirements="CF")
    with pytest.raises(KeyError):
        dptx.require(a, requirements=["Q"])
    # numpy's flag names, letters and combinations, against numpy's own on the same layouts
    for make in (lambda x: x, lambda x: x.T, lambda x: x[:, ::2], lambda x: x[1]):
        d, h = make(a), make(host)
        for key in ("C", "F", "W", "A", "FNC", "FORC", "BEHAVED", "CARRAY",
                    "C_CONTIGUOUS", "FORTRAN", "ALIGNED"):
            assert d.flags[key] == h.flags[key], key
        assert dptx.isfortran(d) == np.isfortran(h) == np.isfortran(d)
    # FARRAY as numpy documents it (behaved, F and not C contiguous); numpy's own flag says
    # True for any aligned view that is not C-contiguous (x[:, ::2] included)
    assert a.T.flags["FA"] and not a.flags.farray and not view.flags.farray
    misaligned = dptx.zeros(17, np.uint8)[1:].view(np.int32)
    assert not misaligned.flags.aligned and not misaligned.flags["B"]
    with pytest.raises(KeyError):
        a.flags["NOPE"]


@pytest.mark.parametrize("k", [-1, 0, 2])
def test_mask_indices(client, k):
    for dptx_fn, numpy_fn in ((dptx.triu, np.triu), (np.tril, np.tril)):
        got = dptx.mask_indices(5, dptx_fn, k)
        want = np.mask_indices(5, numpy_fn, k)
        assert all(isinstance(g, dptx.ndarray) for g in got)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g.get(), w)


def test_numpys_text_helpers_are_numpys():
    assert dptx.base_repr(10, 3) == "101" and dptx.binary_repr(-5, width=8) == "11111011"
    assert dptx.typename("f") == np.typename("f") and dptx.mintypecode("fd") == "d"
    assert dptx.iterable([1]) and not dptx.iterable(3)
    assert dptx.set_printoptions is np.set_printoptions


def _use(x):
    return x.sum()


def _kind(x):
    return type(x).__name__


def _dptx_in_a_task():
    import dptx
    return dptx.zeros(3).get()


def test_dptx_arrays_in_dask_tasks_fail_clearly(client):
    """A dptx array given to ``client.submit`` is pickled on the client's event loop, where
    its values cannot be read back: the task gets a stand-in that raises where it is used
    (the worker lives on), and dptx inside a task refuses to start an embedded cluster in
    the worker; both say what to do."""
    a = dptx.arange(4)
    assert client.submit(_kind, a, pure=False).result(timeout=120) == "Unsent"
    with pytest.raises(TypeError, match=r"cannot travel in a Dask task's arguments.*a.get\(\)"):
        client.submit(_use, a, pure=False).result(timeout=120)
    with pytest.raises(dptx.DptxError, match="inside a Dask task"):
        client.submit(_dptx_in_a_task, pure=False).result(timeout=120)
    # the cluster serves on, and host data travels as ever
    assert client.submit(_use, a.get(), pure=False).result(timeout=120) == 6
    np.testing.assert_array_equal((a + 1).get(), [1, 2, 3, 4])
