"""f16, bf16, f16x2 and bf16x2 arithmetic on packed bits; references round exact rationals."""
import random
from fractions import Fraction

import numpy as np
import pytest

from ._util import round_fraction, run_op, same_ints

rng = random.Random(7)


def h2f(bits):
    return float(np.array([bits], dtype=np.uint16).view(np.float16)[0])


def f2h(x):
    return int(np.array([x], dtype=np.float16).view(np.uint16)[0])


def round_f16(q):
    return round_fraction(Fraction(q), "rn", 10, -14, 15)


def bf2f(bits):
    return float(np.array([bits << 16], dtype=np.uint32).view(np.float32)[0])


def round_bf16_bits(q):
    x = round_fraction(Fraction(q), "rn", 7, -126, 127)
    b = int(np.array([x], dtype=np.float32).view(np.uint32)[0])
    assert b & 0xFFFF == 0
    return b >> 16


def _rand_h(n):
    out = []
    while len(out) < n:
        b = rng.getrandbits(16)
        if (b >> 10) & 0x1F not in (0x1F,):  # finite (normal or subnormal)
            out.append(b)
    return out


HA = _rand_h(40) + [f2h(1.0), f2h(65504.0), f2h(2.0**-14), 0x0001, f2h(0.1)]
HB = _rand_h(40) + [f2h(2.0**-11), f2h(65504.0), f2h(-(2.0**-15)), 0x0001, f2h(3.0)]
HC = _rand_h(len(HA))


def _f16_expected(q):
    return f2h(round_f16(q))


@pytest.mark.parametrize("op", ["add", "sub", "mul"])
def test_f16_add_sub_mul_rn(op):
    pairs = [(a, b) for a, b in zip(HA, HB)]
    ref = {"add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y}[op]
    pairs = [(a, b) for a, b in pairs if ref(Fraction(h2f(a)), Fraction(h2f(b))) != 0]
    d = run_op(f"{op}.f16 %d, %a, %b;", [("a", "f16", [a for a, _ in pairs]),
                                          ("b", "f16", [b for _, b in pairs])], [("d", "f16")])
    same_ints(d, [_f16_expected(ref(Fraction(h2f(a)), Fraction(h2f(b)))) for a, b in pairs], "b16")


def test_f16_fma_rn():
    trip = [t for t in zip(HA, HB, HC)
            if Fraction(h2f(t[0])) * Fraction(h2f(t[1])) + Fraction(h2f(t[2])) != 0]
    d = run_op("fma.rn.f16 %d, %a, %b, %c;",
               [("a", "f16", [t[0] for t in trip]), ("b", "f16", [t[1] for t in trip]),
                ("c", "f16", [t[2] for t in trip])], [("d", "f16")])
    same_ints(d, [_f16_expected(Fraction(h2f(a)) * Fraction(h2f(b)) + Fraction(h2f(c)))
                  for a, b, c in trip], "b16")


def test_f16x2_add_mul_fma_lanes_independent():
    n = 20
    a = [(HA[i] << 16) | HA[i + 20] for i in range(n)]
    b = [(HB[i] << 16) | HB[i + 20] for i in range(n)]
    c = [(HC[i] << 16) | HC[i + 20] for i in range(n)]
    d, e, f = run_op("add.f16x2 %d, %a, %b;\nmul.f16x2 %e, %a, %b;\nfma.rn.f16x2 %f, %a, %b, %c;",
                     [("a", "f16x2", a), ("b", "f16x2", b), ("c", "f16x2", c)],
                     [("d", "f16x2"), ("e", "f16x2"), ("f", "f16x2")])


    def check(got, fn):
        for i in range(n):
            for sh in (0, 16):
                xa, ya, za = (Fraction(h2f((v >> sh) & 0xFFFF)) for v in (a[i], b[i], c[i]))
                q = fn(xa, ya, za)
                if q == 0:
                    continue  # sign of an exact zero depends on operands; skip
                assert (int(got[i]) >> sh) & 0xFFFF == _f16_expected(q), (i, sh)
    check(d, lambda x, y, z: x + y)
    check(e, lambda x, y, z: x * y)
    check(f, lambda x, y, z: x * y + z)


def test_f16_neg_abs_min_max():
    vals = [f2h(v) for v in (1.5, -2.0, 0.0, -0.0, 65504.0, -(2.0**-24))]
    other = [f2h(v) for v in (-1.0, 3.0, 1.0, 0.5, -65504.0, 2.0**-24)]
    d, e, f, g = run_op("neg.f16 %d, %a;\nabs.f16 %e, %a;\nmin.f16 %f, %a, %b;\nmax.f16 %g, %a, %b;",
                        [("a", "f16", vals), ("b", "f16", other)],
                        [("d", "f16"), ("e", "f16"), ("f", "f16"), ("g", "f16")])
    same_ints(d, [v ^ 0x8000 for v in vals], "b16")
    same_ints(e, [v & 0x7FFF for v in vals], "b16")
    same_ints(f, [f2h(min(h2f(x), h2f(y))) for x, y in zip(vals, other)], "b16")
    same_ints(g, [f2h(max(h2f(x), h2f(y))) for x, y in zip(vals, other)], "b16")


def test_f16_min_max_nan():
    nan = 0x7E00
    one = f2h(1.0)
    d, e = run_op("min.f16 %d, %a, %b;\nmax.NaN.f16 %e, %a, %b;",
                  [("a", "f16", [nan, one, nan]), ("b", "f16", [one, nan, nan])],
                  [("d", "f16"), ("e", "f16")])
    assert list(d[:2]) == [one, one] and np.isnan(h2f(int(d[2])))
    assert all(np.isnan(h2f(int(x))) for x in e)


def _rand_bf(n):
    out = []
    while len(out) < n:
        b = rng.getrandbits(16)
        e = (b >> 7) & 0xFF
        if 100 < e < 150:
            out.append(b)
    return out


def test_bf16_fma_and_bf16x2():
    a, b, c = _rand_bf(32), _rand_bf(32), _rand_bf(32)
    trip = [t for t in zip(a, b, c) if Fraction(bf2f(t[0])) * Fraction(bf2f(t[1])) + Fraction(bf2f(t[2])) != 0]
    d = run_op("fma.rn.bf16 %d, %a, %b, %c;",
               [("a", "bf16", [t[0] for t in trip]), ("b", "bf16", [t[1] for t in trip]),
                ("c", "bf16", [t[2] for t in trip])], [("d", "bf16")])
    same_ints(d, [round_bf16_bits(Fraction(bf2f(x)) * Fraction(bf2f(y)) + Fraction(bf2f(z)))
                  for x, y, z in trip], "b16")
    # bf16x2: low lane from trip[i], high lane from trip[-1-i]
    m = len(trip)
    pk = lambda k: [(trip[m - 1 - i][k] << 16) | trip[i][k] for i in range(m)]  # noqa: E731
    e = run_op("fma.rn.bf16x2 %e, %a, %b, %c;",
               [("a", "bf16x2", pk(0)), ("b", "bf16x2", pk(1)), ("c", "bf16x2", pk(2))],
               [("e", "bf16x2")])
    want = [(int(d[m - 1 - i]) << 16) | int(d[i]) for i in range(m)]
    same_ints(e, want, "b32")


def test_cvt_f32_f16_bf16_roundtrip():
    xs = [1.0, -2.5, 0.1, 65504.0, 65520.0, 1e-8, 3.14159265, -0.0, 1e6, 2.0**-24, 2.0**-25 * 3]
    xs = [float(np.float32(x)) for x in xs]
    d, e = run_op("cvt.rn.f16.f32 %d, %a;\ncvt.rn.bf16.f32 %e, %a;", [("a", "f32", xs)],
                  [("d", "f16"), ("e", "bf16")])
    same_ints(d, [f2h(round_f16(Fraction(x))) if x != 0 else f2h(x) for x in xs], "b16")
    same_ints(e, [round_bf16_bits(Fraction(x)) if x != 0 else 0x8000 for x in xs], "b16")
    hs = [f2h(v) for v in (1.0, -2.5, 65504.0, 2.0**-24, -0.0)]
    f = run_op("cvt.f32.f16 %f, %a;", [("a", "f16", hs)], [("f", "f32")])
    np.testing.assert_array_equal(f.view(np.uint32),
                                  np.array([h2f(h) for h in hs], dtype=np.float32).view(np.uint32))
    bs = [0x3F80, 0xC020, 0x7F7F, 0x0001, 0x8000]
    g = run_op("cvt.f32.bf16 %g, %a;", [("a", "bf16", bs)], [("g", "f32")])
    same_ints(g.view(np.uint32), [b << 16 for b in bs], "u32")


def test_pack_unpack_f16x2_with_mov():
    lo = [f2h(1.0), f2h(-3.0), 0x7C00]
    hi = [f2h(0.5), f2h(65504.0), 0x0001]
    d, e, f = run_op("mov.b32 %d, {%a, %b};\nmov.b32 {%h1, %h2}, %d;\nmov.b16 %e, %h1;\nmov.b16 %f, %h2;",
                     [("a", "f16", lo), ("b", "f16", hi)],
                     [("d", "b32"), ("e", "b16"), ("f", "b16")])
    same_ints(d, [(h << 16) | l for l, h in zip(lo, hi)], "b32")
    same_ints(e, lo, "b16")
    same_ints(f, hi, "b16")
