"""dptx.random: Philox4x32-10 on the devices, checked against an independent numpy
implementation of the generator (itself checked on the known-answer vectors of Salmon et al.)
and of each distribution's transform; the same seed gives the same values however the
launch is cut into chunks."""
import numpy as np
import pytest

import dptx
from dptx.errors import DptxError

M0, M1, W0, W1 = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85
MASK = np.uint64(0xFFFFFFFF)


def philox(c0, c1, c2, c3, k0, k1):
    """Philox4x32-10, vectorized over counters, in uint64 arithmetic."""
    c = [np.asarray(x, np.uint64) & MASK for x in (c0, c1, c2, c3)]
    k0, k1 = np.uint64(k0), np.uint64(k1)
    for _ in range(10):
        p0, p1 = np.uint64(M0) * c[0], np.uint64(M1) * c[2]
        c = [(p1 >> np.uint64(32)) ^ c[1] ^ k0, p1 & MASK, (p0 >> np.uint64(32)) ^ c[3] ^ k1,
             p0 & MASK]
        k0, k1 = (k0 + np.uint64(W0)) & MASK, (k1 + np.uint64(W1)) & MASK
    return [x.astype(np.uint64) for x in c]


def test_the_reference_generator_gives_the_published_answers():
    """Random123's known-answer vectors for philox4x32_10."""
    for counter, key, want in [
            ((0, 0, 0, 0), (0, 0), (0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8)),
            ((0xffffffff,) * 4, (0xffffffff,) * 2, (0x408f276d, 0x41c83b0e, 0xa20bc7c6,
                                                    0x6d5451fd)),
            ((0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344), (0xa4093822, 0x299f31d0),
             (0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1))]:
        assert tuple(int(x) for x in philox(*counter, *key)) == want


def _words(blocks, call, seed, retry=0):
    b = np.arange(blocks, dtype=np.uint64)
    return philox(b & MASK, (b >> np.uint64(32)) | np.uint64(retry << 24), call & 0xFFFFFFFF,
                  call >> 32, seed & 0xFFFFFFFF, seed >> 32)


def _u64(a, b):
    return ((a >> np.uint64(5)).astype(np.float64) * 67108864.0 + (b >> np.uint64(6))) / 2.0 ** 53


def test_uniform_and_normal_values_are_the_generators(client):
    seed = (7 << 32) + 12345
    dptx.random.seed(seed)
    n = 300_007                                  # not a multiple of a block's outputs
    got = dptx.random.rand(n).get()
    w = _words(-(-n // 2), 0, seed)
    want = np.empty(2 * w[0].size)
    want[0::2], want[1::2] = _u64(w[0], w[1]), _u64(w[2], w[3])
    assert got.dtype == np.float64 and np.array_equal(got, want[:n])
    got = dptx.random.uniform(-2.0, 3.0, size=(3, 1001), dtype=np.float32).get()
    w = _words(-(-3003 // 4), 1, seed)
    u = np.stack([(x >> np.uint64(8)).astype(np.float32) * np.float32(2.0 ** -24) for x in w],
                 axis=1).ravel()[:3003]
    assert got.dtype == np.float32 and got.shape == (3, 1001)
    assert np.array_equal(got.ravel(), np.float32(-2.0) + np.float32(5.0) * u)
    got = dptx.random.normal(1.0, 2.0, size=n).get()
    w = _words(-(-n // 2), 2, seed)
    r, t = np.sqrt(-2 * np.log(1 - _u64(w[0], w[1]))), 2 * np.pi * _u64(w[2], w[3])
    want = np.empty(2 * w[0].size)
    want[0::2], want[1::2] = r * np.cos(t), r * np.sin(t)
    np.testing.assert_allclose(got, 1.0 + 2.0 * want[:n], rtol=1e-12, atol=1e-12)
    assert abs(got.mean() - 1.0) < 5 * 2.0 / np.sqrt(n) and abs(got.std() - 2.0) < 0.02
    g32 = dptx.random.randn(4, 50_000, dtype=np.float32).get()
    assert g32.dtype == np.float32 and abs(g32.mean()) < 0.02 and abs(g32.std() - 1) < 0.02


def _lemire(seed, call, n, low, span):
    """The reference for randint: per element, the first of its block's words Lemire's test
    accepts, further draws (retry 1, 2, ...) where all four are rejected."""
    out = np.empty(n, np.int64)
    todo = np.arange(n)
    threshold = (2 ** 32 - span) % span if span < 2 ** 32 else 0
    retry = 0
    while todo.size:
        w = _words(n, call, seed, retry)
        done = np.zeros(todo.size, bool)
        for word in w:
            m = word[todo].astype(object) * span
            ok = ~done & np.array([(v & 0xFFFFFFFF) >= threshold for v in m], bool)
            out[todo[ok]] = low + np.array([v >> 32 for v in m[ok]], np.int64)
            done |= ok
        todo, retry = todo[~done], retry + 1
    return out


def test_integers_are_unbiased_and_the_generators(client):
    dptx.random.seed(99)
    small = dptx.random.randint(3, 10, size=20_000).get()
    assert np.array_equal(small, _lemire(99, 0, 20_000, 3, 7))
    # a range just over 2**31: about half of all words are rejected, and one element in 16
    # needs a second draw
    span = 2 ** 31 + 1
    big = dptx.random.randint(-5, span - 5, size=5_000).get()
    assert np.array_equal(big, _lemire(99, 1, 5_000, -5, span))
    assert big.min() >= -5 and big.max() < span - 5
    full = dptx.random.randint(0, 2 ** 32, size=1000, dtype=np.uint32).get()
    assert full.dtype == np.uint32 and np.array_equal(full, _lemire(99, 2, 1000, 0, 2 ** 32))
    counts = np.bincount(small - 3)
    assert np.all(np.abs(counts - 20_000 / 7) < 5 * np.sqrt(20_000 / 7))
    with pytest.raises(ValueError, match="low >= high"):
        dptx.random.randint(5, 5)
    with pytest.raises(DptxError, match="more than 2\\*\\*32"):
        dptx.random.randint(0, 2 ** 40)
    with pytest.raises(ValueError, match="out of bounds for int8"):
        dptx.random.randint(0, 300, dtype=np.int8)


def test_a_seed_gives_the_same_arrays_and_calls_differ(client):
    dptx.random.seed(5)
    a, b = dptx.random.rand(100_000).get(), dptx.random.rand(100_000).get()
    assert not np.array_equal(a, b)
    dptx.random.seed(5)
    assert np.array_equal(dptx.random.rand(100_000).get(), a)
    state = dptx.random.RandomState(5)
    assert np.array_equal(state.random_sample(100_000).get(), a)
    assert dptx.random.rand().shape == () and dptx.random.random((2, 3)).shape == (2, 3)
    with pytest.raises(TypeError, match="float32 or float64"):
        dptx.random.rand(3, dtype=np.int32)
