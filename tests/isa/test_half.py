"""f16, bf16, f16x2 and bf16x2 arithmetic on packed bits; references round exact rationals."""
import math
import struct
import random
from fractions import Fraction

import numpy as np
import pytest

from ._util import kernel_from_ptx, launch, round_fraction, run_op, same_ints

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


def _rand_bf(n, seed=None):
    r = random.Random(seed) if seed is not None else rng
    out = []
    while len(out) < n:
        b = r.getrandbits(16)
        e = (b >> 7) & 0xFF
        if 100 < e < 150:
            out.append(b)
    return out


def test_bf16_fma_and_bf16x2():
    a, b, c = _rand_bf(32, 'fa'), _rand_bf(32, 'fb'), _rand_bf(32, 'fc')
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


def test_cvt_rn_f16x2_bf16x2_from_two_f32():
    # cvt.rn.f16x2.f32 d, a, b: a goes to the upper half, b to the lower half
    a = [1.0, -2.5, 65504.0, 0.1]
    b = [3.0, 1e-8, -0.0, 100000.0]
    d, e = run_op("cvt.rn.f16x2.f32 %d, %a, %b;\ncvt.rn.bf16x2.f32 %e, %a, %b;",
                  [("a", "f32", a), ("b", "f32", b)], [("d", "b32"), ("e", "b32")])
    a32 = [float(np.float32(x)) for x in a]
    b32 = [float(np.float32(x)) for x in b]

    def h(x):
        return f2h(round_f16(Fraction(x))) if x != 0 else f2h(x)

    def bf(x):
        return round_bf16_bits(Fraction(x)) if x != 0 else (0x8000 if np.signbit(x) else 0)
    same_ints(d, [(h(x) << 16) | h(y) for x, y in zip(a32, b32)], "b32")
    same_ints(e, [(bf(x) << 16) | bf(y) for x, y in zip(a32, b32)], "b32")


def test_fma_f16_no_double_rounding_through_f32():
    # f16: (1+2^-6)(1+2^-5) + 2^-24 = 1 + 2^-5 + 2^-6 + 2^-11 + 2^-24, just above an f16 tie;
    # rounding to f32 first lands on the tie (and rounds down)
    a, b, c = f2h(1 + 2.0**-6), f2h(1 + 2.0**-5), f2h(2.0**-24)
    d = run_op("fma.rn.f16 %d, %a, %b, %c;", [("a", "f16", [a]), ("b", "f16", [b]), ("c", "f16", [c])],
               [("d", "f16")])
    same_ints(d, [f2h(1 + 2.0**-5 + 2.0**-6 + 2.0**-10)], "b16")
    e = run_op("fma.rn.f16x2 %e, %a, %b, %c;", [("a", "f16x2", [(a << 16) | a]),
               ("b", "f16x2", [(b << 16) | b]), ("c", "f16x2", [(c << 16) | c])], [("e", "f16x2")])
    same_ints(e, [(int(d[0]) << 16) | int(d[0])], "b32")


def test_fma_bf16_no_double_rounding_through_f32():
    # bf16: (1+2^-4)^2 + 2^-30 = 1 + 2^-3 + 2^-8 + 2^-30, just above a bf16 tie
    fb = lambda x: int(np.array([x], dtype=np.float32).view(np.uint32)[0]) >> 16  # noqa: E731
    g = run_op("fma.rn.bf16 %g, %a, %b, %c;",
               [("a", "bf16", [fb(1 + 2.0**-4)]), ("b", "bf16", [fb(1 + 2.0**-4)]),
                ("c", "bf16", [fb(2.0**-30)])], [("g", "bf16")])
    same_ints(g, [fb(1 + 2.0**-3 + 2.0**-7)], "b16")


def test_cvt_rn_bf16_f16_ties_nan_overflow():
    bits = [0x3F808000, 0x3F818000, 0x3F808001, 0x7F7FFFFF, 0x7FC00000, 0xFF800000, 0x7F800001]
    xs = np.array(bits, dtype=np.uint32).view(np.float32)
    e = run_op("cvt.rn.bf16.f32 %e, %a;", [("a", "f32", xs)], [("e", "bf16")])
    got = [int(v) for v in e]
    assert got[:4] == [0x3F80, 0x3F82, 0x3F81, 0x7F80]
    assert (got[4] & 0x7F80) == 0x7F80 and (got[4] & 0x7F) != 0      # NaN stays NaN
    assert got[5] == 0xFF80
    assert (got[6] & 0x7F80) == 0x7F80 and (got[6] & 0x7F) != 0      # signalling NaN -> NaN
    ys = [1 + 2.0**-11, 1 + 3 * 2.0**-11, 65519.0, 65520.0, 2.0**-25, 3 * 2.0**-25, float("nan")]
    d = run_op("cvt.rn.f16.f32 %d, %a;", [("a", "f32", ys)], [("d", "f16")])
    got = [int(v) for v in d]
    assert got[:6] == [f2h(1.0), f2h(1 + 2.0**-9), f2h(65504.0), 0x7C00, 0x0000, 0x0002]
    assert (got[6] & 0x7C00) == 0x7C00 and (got[6] & 0x3FF) != 0


def test_cvt_rn_bf16_f32_keeps_subnormals():
    # bf16 has the exponent range of f32: f32 subnormals become bf16 subnormals (no .ftz)
    bits = [0x00400000, 0x80400000, 0x00018000, 0x00010000, 0x00008000, 0x80018000, 0x00800000]
    xs = np.array(bits, dtype=np.uint32).view(np.float32)
    e = run_op("cvt.rn.bf16.f32 %e, %a;", [("a", "f32", xs)], [("e", "bf16")])
    same_ints(e, [0x0040, 0x8040, 0x0002, 0x0001, 0x0000, 0x8002, 0x0080], "b16")


def test_fma_bf16_subnormal_operands_and_results():
    # bf16 subnormals (exponent field 0) are kept without .ftz
    fb = lambda x: int(np.array([x], dtype=np.float32).view(np.uint32)[0]) >> 16  # noqa: E731
    a = [0x0040, fb(2.0**-100), 0x0001, fb(3.0)]
    b = [fb(1.0), fb(2.0**-30), fb(2.0), 0x0010]
    c = [0x0000, 0x0000, 0x0001, 0x0000]
    g = run_op("fma.rn.bf16 %g, %a, %b, %c;", [("a", "bf16", a), ("b", "bf16", b), ("c", "bf16", c)],
               [("g", "bf16")])
    want = [round_bf16_bits(Fraction(bf2f(x)) * Fraction(bf2f(y)) + Fraction(bf2f(z)))
            for x, y, z in zip(a, b, c)]
    assert want == [0x0040, 0x0008, 0x0003, 0x0030]
    same_ints(g, want, "b16")


def test_cvt_rn_relu_f16_f32():
    # .relu clamps negative results to +0; NaN stays NaN
    xs = [1.5, -1.5, 0.0, float("nan"), -1e-3, 70000.0]
    d = run_op("cvt.rn.relu.f16.f32 %d, %a;", [("a", "f32", xs)], [("d", "f16")])
    got = [int(v) for v in d]
    assert got[0] == f2h(1.5) and got[1] == 0 and got[2] == 0 and got[4] == 0 and got[5] == 0x7C00
    assert (got[3] & 0x7C00) == 0x7C00 and (got[3] & 0x3FF)


def test_cvt_rn_relu_bf16_f32():
    xs = [1.5, -1.5, 0.0, float("nan"), -1e-3, 70000.0]
    e = run_op("cvt.rn.relu.bf16.f32 %e, %a;", [("a", "f32", xs)], [("e", "bf16")])
    got = [int(v) for v in e]
    assert got[0] == 0x3FC0 and got[1] == 0 and got[2] == 0 and got[4] == 0
    assert (got[3] & 0x7F80) == 0x7F80 and (got[3] & 0x7F)


def test_fma_rn_relu_f16():
    f = run_op("fma.rn.relu.f16 %f, %a, %b, %c;",
               [("a", "f16", [f2h(2.0), f2h(-2.0)]), ("b", "f16", [f2h(3.0), f2h(3.0)]),
                ("c", "f16", [f2h(-1.0), f2h(1.0)])], [("f", "f16")])
    same_ints(f, [f2h(5.0), 0], "b16")


def test_neg_abs_bf16():
    g, h = run_op("neg.bf16 %g, %a;\nabs.bf16 %h, %a;", [("a", "bf16", [0x3F80, 0xC040, 0x0000, 0x8001])],
                  [("g", "bf16"), ("h", "bf16")])
    same_ints(g, [0xBF80, 0x4040, 0x8000, 0x0001], "b16")
    same_ints(h, [0x3F80, 0x4040, 0x0000, 0x0001], "b16")


def test_min_max_bf16_and_bf16x2():
    one, two, nan = 0x3F80, 0x4000, 0x7FC0
    d, e = run_op("min.bf16 %d, %a, %b;\nmax.bf16 %e, %a, %b;",
                  [("a", "bf16", [one, nan, 0xBF80]), ("b", "bf16", [two, one, one])],
                  [("d", "bf16"), ("e", "bf16")])
    same_ints(d, [one, one, 0xBF80], "b16")
    same_ints(e, [two, one, one], "b16")
    f = run_op("max.bf16x2 %f, %a, %b;", [("a", "bf16x2", [(one << 16) | two]),
                                          ("b", "bf16x2", [(two << 16) | one])], [("f", "bf16x2")])
    same_ints(f, [(two << 16) | two], "b32")


def test_f16x2_abs_min_nan_fma_sat_lanes():
    nan = 0x7E00
    a = [(f2h(-1.5) << 16) | f2h(2.0), (nan << 16) | f2h(-0.25)]
    b = [(f2h(1.0) << 16) | f2h(-3.0), (f2h(1.0) << 16) | f2h(0.5)]
    d, e, f = run_op("abs.f16x2 %d, %a;\nmin.NaN.f16x2 %e, %a, %b;\nfma.rn.sat.f16x2 %f, %a, %b, %b;",
                     [("a", "f16x2", a), ("b", "f16x2", b)],
                     [("d", "f16x2"), ("e", "f16x2"), ("f", "f16x2")])
    assert int(d[0]) == (f2h(1.5) << 16) | f2h(2.0)
    d1 = int(d[1])
    assert (d1 & 0xFFFF) == f2h(0.25) and (d1 >> 16) & 0x7C00 == 0x7C00 and (d1 >> 16) & 0x3FF  # NaN
    e0, e1 = int(e[0]), int(e[1])
    assert e0 == (f2h(-1.5) << 16) | f2h(-3.0)
    assert (e1 >> 16) & 0x7C00 == 0x7C00 and (e1 >> 16) & 0x3FF and (e1 & 0xFFFF) == f2h(-0.25)
    # lanes: hi(-1.5*1+1)=-0.5->0, lo(2*-3-3)=-9->0 ; hi(NaN)->0, lo(-0.25*0.5+0.5)=0.375
    same_ints(f, [0, f2h(0.375)], "b32")


def test_bf16_add_mul_rn_exact():
    a, b = _rand_bf(24, 'ma'), _rand_bf(24, 'mb')
    pairs = [(x, y) for x, y in zip(a, b) if Fraction(bf2f(x)) + Fraction(bf2f(y)) != 0]
    d = run_op("add.rn.bf16 %d, %a, %b;", [("a", "bf16", [x for x, _ in pairs]),
                                           ("b", "bf16", [y for _, y in pairs])], [("d", "bf16")])
    same_ints(d, [round_bf16_bits(Fraction(bf2f(x)) + Fraction(bf2f(y))) for x, y in pairs], "b16")
    m = len(a) // 2
    pa = [(a[i + m] << 16) | a[i] for i in range(m)]
    pb = [(b[i + m] << 16) | b[i] for i in range(m)]
    e = run_op("mul.rn.bf16x2 %e, %a, %b;", [("a", "bf16x2", pa), ("b", "bf16x2", pb)], [("e", "bf16x2")])
    want = [(round_bf16_bits(Fraction(bf2f(a[i + m])) * Fraction(bf2f(b[i + m]))) << 16)
            | round_bf16_bits(Fraction(bf2f(a[i])) * Fraction(bf2f(b[i]))) for i in range(m)]
    same_ints(e, want, "b32")


def test_f16_approx_tanh_ex2():
    xs = [-4.0, -1.0, -0.25, 0.0, 0.5, 1.0, 3.0]
    d = run_op("tanh.approx.f16 %d, %a;", [("a", "f16", [f2h(x) for x in xs])], [("d", "f16")])
    got = np.array([h2f(int(v)) for v in d])
    np.testing.assert_allclose(got, np.tanh(xs), rtol=2e-3, atol=1e-3)
    ys = [-3.0, -0.5, 0.0, 1.0, 2.5, 10.0]
    pk = [(f2h(y) << 16) | f2h(y / 2) for y in ys]
    e = run_op("ex2.approx.f16x2 %e, %a;", [("a", "f16x2", pk)], [("e", "f16x2")])
    hi = np.array([h2f(int(v) >> 16) for v in e])
    lo = np.array([h2f(int(v) & 0xFFFF) for v in e])
    np.testing.assert_allclose(hi, np.exp2(ys), rtol=2e-3)
    np.testing.assert_allclose(lo, np.exp2(np.array(ys) / 2), rtol=2e-3)


def test_cvt_f16_from_f64_and_ints_no_double_rounding():
    # 1 + 2^-11 + 2^-40 is just above an f16 tie; rounding to f32 first would lose 2^-40
    xs = [1 + 2.0**-11 + 2.0**-40, 1 + 2.0**-11, -(1 + 2.0**-11 + 2.0**-40), 1e-7, 65519.99, 0.1]
    d = run_op("cvt.rn.f16.f64 %d, %a;", [("a", "f64", xs)], [("d", "f16")])
    same_ints(d, [f2h(round_f16(Fraction(x))) for x in xs], "b16")
    assert f2h(round_f16(Fraction(xs[0]))) == f2h(1 + 2.0**-10)
    ints_ = [2049, 2051, -2049, 65519, 65520, 100000, -7, 0]
    e = run_op("cvt.rn.f16.s32 %e, %a;", [("a", "s32", ints_)], [("e", "f16")])
    same_ints(e, [f2h(round_f16(Fraction(v))) if v else 0 for v in ints_], "b16")
    hs = [f2h(v) for v in (2.5, 3.5, -2.5, 65504.0, -0.75, 0.0)]
    g, h = run_op("cvt.rni.s32.f16 %g, %a;\ncvt.f64.f16 %h, %a;", [("a", "f16", hs)],
                  [("g", "s32"), ("h", "f64")])
    same_ints(g, [2, 4, -2, 65504, -1, 0], "s32")
    assert h.tolist() == [2.5, 3.5, -2.5, 65504.0, -0.75, 0.0]


def _bf_any(n, seed):
    r = random.Random(seed)
    out = []
    while len(out) < n:
        b = r.getrandbits(16)
        if (b >> 7) & 0xFF != 0xFF:
            out.append(b)
    return out


def test_bf16_full_range_random_fma_add_mul():
    # whole exponent range, subnormals and overflow included
    a, b, c = _bf_any(64, "A"), _bf_any(64, "B"), _bf_any(64, "C")
    a += [0x7F7F, 0x0001, 0x0080, 0x8080]
    b += [0x4000, 0x3F00, 0x3F00, 0x3F00]
    c += [0x0000, 0x0001, 0x0000, 0x0000]
    F = lambda x: Fraction(bf2f(x))  # noqa: E731
    trip = [t for t in zip(a, b, c) if F(t[0]) * F(t[1]) + F(t[2]) != 0 and F(t[0]) + F(t[1]) != 0]
    ins = [("a", "bf16", [t[0] for t in trip]), ("b", "bf16", [t[1] for t in trip]),
           ("c", "bf16", [t[2] for t in trip])]
    d, e, f = run_op("fma.rn.bf16 %d, %a, %b, %c;\nadd.rn.bf16 %e, %a, %b;\nmul.rn.bf16 %f, %a, %b;", ins,
                     [("d", "bf16"), ("e", "bf16"), ("f", "bf16")])

    def rb(q):
        x = round_fraction(q, "rn", 7, -126, 127)
        return int(np.array([x], dtype=np.float32).view(np.uint32)[0]) >> 16
    same_ints(d, [rb(F(x) * F(y) + F(z)) for x, y, z in trip], "b16")
    same_ints(e, [rb(F(x) + F(y)) for x, y, _ in trip], "b16")
    same_ints(f, [rb(F(x) * F(y)) if F(x) * F(y) != 0 else int(f[i]) for i, (x, y, _) in enumerate(trip)], "b16")


def test_f16_ftz_flushes_subnormals():
    sub = 0x0200  # f16 subnormal (2^-15)
    a = [sub, sub | 0x8000, f2h(2.0**-10), f2h(1.0)]
    b = [f2h(1.0), f2h(1.0), f2h(2.0**-10), sub]
    d, e = run_op("mul.ftz.f16 %d, %a, %b;\nmul.f16 %e, %a, %b;", [("a", "f16", a), ("b", "f16", b)],
                  [("d", "f16"), ("e", "f16")])
    same_ints(e, [sub, sub | 0x8000, f2h(2.0**-20), sub], "b16")
    same_ints(d, [0x0000, 0x8000, 0x0000, 0x0000], "b16")   # 2^-20 result is subnormal: flushed
    f = run_op("fma.rn.ftz.f16x2 %f, %a, %b, %c;",
               [("a", "f16x2", [(sub << 16) | f2h(1.0)]), ("b", "f16x2", [(f2h(1.0) << 16) | sub]),
                ("c", "f16x2", [0])], [("f", "f16x2")])
    same_ints(f, [0], "b32")   # both lanes: subnormal product flushed to +0


@pytest.mark.parametrize("mode", ["rz", "rm", "rp"])
def test_cvt_f16_f32_directed_rounding(mode):
    xs = [float(np.float32(x)) for x in (1 + 2.0**-11, -(1 + 2.0**-11), 0.1, -0.1, 70000.0, -70000.0,
                                         65519.0, 2.0**-25, -(2.0**-25), 3.14159)]
    d = run_op(f"cvt.{mode}.f16.f32 %d, %a;", [("a", "f32", xs)], [("d", "f16")])

    def ref(x):
        v = round_fraction(Fraction(x), mode, 10, -14, 15)
        return f2h(v) if v != 0 else (0x8000 if x < 0 else 0)
    same_ints(d, [ref(x) for x in xs], "b16")


@pytest.mark.parametrize("mode", ["rni", "rzi", "rmi", "rpi"])
def test_cvt_f16_round_to_integer(mode):
    import math
    vals = [2.5, 3.5, -2.5, -0.25, 0.5, 1000.5, 65504.0]
    d = run_op(f"cvt.{mode}.f16.f16 %d, %a;", [("a", "f16", [f2h(v) for v in vals])], [("d", "f16")])
    fn = {"rni": lambda v: float(round(v)), "rzi": math.trunc, "rmi": math.floor, "rpi": math.ceil}[mode]

    def ref(v):
        r = float(fn(v))
        return f2h(math.copysign(r, v)) if r == 0 else f2h(r)
    same_ints(d, [ref(v) for v in vals], "b16")


def test_setp_f16_and_bf16_with_nan():
    nan = 0x7E00
    a = [f2h(1.0), f2h(2.0), nan, f2h(-0.0)]
    b = [f2h(2.0), f2h(1.0), f2h(1.0), f2h(0.0)]
    d, e, g, h = run_op("setp.lt.f16 %d, %a, %b;\nsetp.ltu.f16 %e, %a, %b;\nsetp.nan.f16 %g, %a, %b;\n"
                        "setp.eq.f16 %h, %a, %b;", [("a", "f16", a), ("b", "f16", b)],
                        [("d", "pred"), ("e", "pred"), ("g", "pred"), ("h", "pred")])
    same_ints(d, [1, 0, 0, 0], "u32")
    same_ints(e, [1, 0, 1, 0], "u32")
    same_ints(g, [0, 0, 1, 0], "u32")
    same_ints(h, [0, 0, 0, 1], "u32")


_BF16_DIRECTED = r'''
.version 8.0
.target sm_90
.address_size 64
.visible .entry t(.param .u64 x, .param .u64 out, .param .u64 xd) {
  .reg .b32 %r<4>; .reg .b64 %rd<8>; .reg .b16 %rs<8>; .reg .f32 %f<2>; .reg .f64 %fd<2>;
  ld.param.u64 %rd1, [x]; ld.param.u64 %rd2, [out]; ld.param.u64 %rd5, [xd];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd3, %r1, 4; add.s64 %rd4, %rd1, %rd3;
  ld.global.f32 %f1, [%rd4];
  mul.wide.u32 %rd3, %r1, 16; add.s64 %rd4, %rd2, %rd3;
  cvt.rz.bf16.f32 %rs1, %f1; st.global.u16 [%rd4], %rs1;
  cvt.rm.bf16.f32 %rs2, %f1; st.global.u16 [%rd4+2], %rs2;
  cvt.rp.bf16.f32 %rs3, %f1; st.global.u16 [%rd4+4], %rs3;
  cvt.rn.sat.f16.f32 %rs4, %f1; st.global.u16 [%rd4+6], %rs4;
  mul.wide.u32 %rd3, %r1, 8; add.s64 %rd6, %rd5, %rd3;
  ld.global.f64 %fd1, [%rd6];
  cvt.rp.bf16.f64 %rs5, %fd1; st.global.u16 [%rd4+8], %rs5;
  cvt.rm.bf16.f64 %rs6, %fd1; st.global.u16 [%rd4+10], %rs6;
  ret;
}'''


def _bf16_directed_reference(x: float, mode: str) -> int:
    """bf16 bits of x rounded toward zero / -inf / +inf, from the exact value."""
    if math.isnan(x):
        return 0x7FFF
    if math.isinf(x) or x == 0:
        return struct.unpack("<I", struct.pack("<f", x))[0] >> 16
    exact = Fraction(x)
    # candidates: the bf16 values around x (truncation of the f32 bits and its neighbour)
    b = struct.unpack("<I", struct.pack("<f", float(np.float32(x))))[0] >> 16
    cands = {(b + d) & 0xFFFF for d in (-1, 0, 1)}

    def val(h):
        f = struct.unpack("<f", struct.pack("<I", h << 16))[0]
        return None if math.isnan(f) else f
    best = None
    for h in cands:
        v = val(h)
        if v is None:
            continue
        fv = Fraction(v) if not math.isinf(v) else None
        if mode == "rz":
            ok = fv is not None and abs(fv) <= abs(exact) and (fv == 0 or (fv > 0) == (exact > 0))
            key = abs(fv) if ok else None
            if ok and (best is None or key > best[0]):
                best = (key, h)
        elif mode == "rm":
            ok = (fv is not None and fv <= exact) or (v == -math.inf)
            if ok and (best is None or (fv if fv is not None else -10**400) > best[0]):
                best = (fv if fv is not None else -10**400, h)
        else:
            ok = (fv is not None and fv >= exact) or (v == math.inf)
            if ok and (best is None or (fv if fv is not None else 10**400) < best[0]):
                best = (fv if fv is not None else 10**400, h)
    return best[1]


def test_directed_rounding_to_bf16_and_saturation_to_f16():
    k = kernel_from_ptx(_BF16_DIRECTED, "t")
    xs = np.array([1.0, -1.0, 1.00390625, 1.0 + 2**-9, -(1.0 + 2**-9), 3.4e38, -3.4e38,
                   np.nan, np.inf, -np.inf, 0.3, 1.7, -2.0, 1e-40, -1e-40, 0.5, 2.5, -0.7],
                  np.float32)
    xd = xs.astype(np.float64) * (1 + 1e-12)
    out = np.zeros((len(xs), 8), np.uint16)
    launch(k, 1, len(xs), [xs, out, xd])
    for i, x in enumerate(xs):
        for j, mode in enumerate(("rz", "rm", "rp")):
            assert out[i, j] == _bf16_directed_reference(float(x), mode), (x, mode, hex(out[i, j]))
        # .sat clamps to [0, 1] before rounding; NaN gives +0
        want = np.float16(0.0 if np.isnan(x) else min(max(float(x), 0.0), 1.0)).view(np.uint16)
        assert out[i, 3] == (want & 0x7FFF if want == 0x8000 else want), (x, hex(out[i, 3]))
        for j, mode in ((4, "rp"), (5, "rm")):
            assert out[i, j] == _bf16_directed_reference(float(xd[i]), mode), (xd[i], mode)


def _to16(x: float, mode: str, half: bool, relu=False, satfinite=False) -> int:
    """The ISA's cvt of an f32 to f16 (``half``) or bf16 bits: rounding ``mode``, .relu (a
    negative result is +0), .satfinite (an infinite result is the largest finite value of its
    sign); NaN is the canonical NaN 0x7FFF."""
    if math.isnan(x):
        return 0x7FFF
    if relu and x < 0:
        x = 0.0
    mant, emin, emax = (10, -14, 15) if half else (7, -126, 127)
    r = round_fraction(Fraction(x), mode, mant, emin, emax) if not math.isinf(x) and x != 0 \
        else x
    if satfinite and math.isinf(r):
        r = math.copysign(float((2 - Fraction(2) ** -mant) * Fraction(2) ** emax), r)
    if half:
        return f2h(r)
    return int(np.array([r], dtype=np.float32).view(np.uint32)[0]) >> 16


def test_cvt_f16x2_bf16x2_from_f32_relu_satfinite_rz():
    """cvt.{rn,rz}{.relu}{.satfinite}.{f16x2,bf16x2}.f32 d, a, b (a to the upper half): the
    modifiers were ignored (ZLUDA's cvt_relu_f16x2_f32, checked on an NVIDIA GPU: -1, 1 gives
    0x00003C00 and 3.14, -inf 0x42480000)."""
    a = [-1.0, 3.14, 70000.0, -70000.0, float("nan"), 1.0009765625, -0.0, 1e-30, float("-inf")]
    b = [1.0, float("-inf"), 0.1, -1.5, 2.0, -1.0009765625, 65520.0, -1e-30, 3e38]
    a32 = [float(np.float32(x)) for x in a]
    b32 = [float(np.float32(x)) for x in b]
    forms = [("cvt.rn.relu.f16x2.f32", "rn", True, True, False),
             ("cvt.rz.f16x2.f32", "rz", True, False, False),
             ("cvt.rn.satfinite.f16x2.f32", "rn", True, False, True),
             ("cvt.rz.relu.satfinite.f16x2.f32", "rz", True, True, True),
             ("cvt.rn.relu.bf16x2.f32", "rn", False, True, False),
             ("cvt.rz.bf16x2.f32", "rz", False, False, False),
             ("cvt.rn.satfinite.bf16x2.f32", "rn", False, False, True)]
    body = "\n".join(f"{op} %d{i}, %a, %b;" for i, (op, *_) in enumerate(forms))
    outs = run_op(body, [("a", "f32", a), ("b", "f32", b)],
                  [(f"d{i}", "b32") for i in range(len(forms))])
    for got, (op, mode, half, relu, sat) in zip(outs, forms):
        want = [(_to16(x, mode, half, relu, sat) << 16) | _to16(y, mode, half, relu, sat)
                for x, y in zip(a32, b32)]
        assert [int(v) for v in got] == want, (op, [hex(int(v)) for v in got],
                                                [hex(w) for w in want])
    # the ISA's example values from ZLUDA
    d = run_op("cvt.rn.relu.f16x2.f32 %d, %a, %b;",
               [("a", "f32", [-1.0, 3.14]), ("b", "f32", [1.0, float("-inf")])], [("d", "b32")])
    assert [int(v) for v in d] == [0x00003C00, 0x42480000]


def test_set_and_setp_on_f16x2_and_bf16x2_compare_each_half():
    """set/setp on .f16x2/.bf16x2 compare the two halves as halves (they were compared as
    one 32-bit integer, and set.gtu.u32.f16x2 failed with an internal KeyError). setp: p is
    the lower half's result, q the upper's; set: each half of d is 1.0 (.f16x2/.bf16x2
    result) or 0xFFFF (.u32 result). ZLUDA's set_gt_f16x2 (checked on a GPU): -0.0 > 0.0 is
    false, 0x38d3 > 0x35aa true: 0x3C000000."""
    nan = 0x7E00
    pairs = [(f2h(-0.0), f2h(0.0)), (0x38D3, 0x35AA), (nan, f2h(1.0)), (f2h(-2.0), f2h(-3.0)),
             (f2h(65504.0), 0x7C00), (0x0001, 0x0000)]
    lo = [pairs[i] for i in range(0, len(pairs), 2)]
    hi = [pairs[i] for i in range(1, len(pairs), 2)]
    a = [(h[0] << 16) | l[0] for l, h in zip(lo, hi)]
    b = [(h[1] << 16) | l[1] for l, h in zip(lo, hi)]

    def gt(x, y, unordered=False):
        fx, fy = h2f(x), h2f(y)
        if math.isnan(fx) or math.isnan(fy):
            return unordered
        return fx > fy
    body = ("set.gt.f16x2.f16x2 %d, %a, %b;\nset.gtu.u32.f16x2 %e, %a, %b;\n"
            "setp.gt.f16x2 %f|%g, %a, %b;\n"
            "set.gt.and.f16x2.f16x2 %k, %a, %b, %g;\nset.gt.ftz.u32.f16x2 %m, %a, %b;")
    d, e, f, g, k, m = run_op(body, [("a", "b32", a), ("b", "b32", b)],
                              [("d", "b32"), ("e", "b32"), ("f", "pred"), ("g", "pred"),
                               ("k", "b32"), ("m", "b32")])
    for i, (l, h) in enumerate(zip(lo, hi)):
        tl, th = gt(*l), gt(*h)
        assert int(d[i]) == (0x3C00 if th else 0) << 16 | (0x3C00 if tl else 0)
        ul, uh = gt(*l, True), gt(*h, True)
        assert int(e[i]) == (0xFFFF if uh else 0) << 16 | (0xFFFF if ul else 0)
        assert (int(f[i]), int(g[i])) == (int(tl), int(th))
        assert int(k[i]) == (0x3C00 if th else 0) << 16 | (0x3C00 if tl and th else 0)
        # .ftz: the subnormal 0x0001 is +0, not greater than +0
        fl, fh = (t and pair != (0x0001, 0x0000) for t, pair in ((tl, l), (th, h)))
        assert int(m[i]) == (0xFFFF if fh else 0) << 16 | (0xFFFF if fl else 0)
    assert int(d[0]) == 0x3C000000
    # a .f16 (and .bf16) destination holds 1.0 in its own format, not all ones
    xs, ys = [1.0, -1.0, 5.0], [0.5, 0.5, 5.0]
    h16, b16 = run_op("set.gt.f16.f32 %h, %a, %b;\nset.gt.bf16.f32 %c, %a, %b;",
                      [("a", "f32", xs), ("b", "f32", ys)], [("h", "b16"), ("c", "b16")])
    assert [int(v) for v in h16] == [0x3C00, 0, 0] and [int(v) for v in b16] == [0x3F80, 0, 0]
