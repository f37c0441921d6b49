"""f32/f64 arithmetic: rounding modes checked against exact rational arithmetic, div/rcp/sqrt
variants, approximate transcendentals, abs/neg, min/max with NaN, copysign, testp, .ftz and
.sat."""
import math
import random
from fractions import Fraction

import numpy as np
import pytest

from ._util import (b2f, f2b, round_f32, round_f64, run_op, same_bits32, same_bits64,
                    same_ints)

rng = random.Random(42)
NAN = float("nan")
INF = float("inf")


def _rand_f32(n, emin=-30, emax=30, seed=None):
    r = random.Random(seed) if seed is not None else rng
    out = []
    for _ in range(n):
        m = r.getrandbits(23)
        e = r.randint(emin, emax) + 127
        sgn = r.getrandbits(1)
        out.append(b2f((sgn << 31) | (e << 23) | m))
    return out


def _rand_f64(n, emin=-60, emax=60, seed=None):
    r = random.Random(seed) if seed is not None else rng
    out = []
    for _ in range(n):
        x = np.float64(r.uniform(1, 2)) * 2.0 ** r.randint(emin, emax)
        out.append(float(x if r.getrandbits(1) else -x))
    return out


XA = _rand_f32(48) + [1.0, 1.0, 3.0, 2.0**-126, 1.5, 16777216.0, 3.4e38, -3.4e38, 1e-40]
XB = _rand_f32(48) + [2.0**-24, 3 * 2.0**-25, 1.0 / 3, 2.0**-10, 2.0**-24, 1.0, 3.4e38, -1e38, 1e-40]
XA = [float(np.float32(x)) for x in XA]
XB = [float(np.float32(x)) for x in XB]
XC = _rand_f32(len(XA))
MODES = ["rn", "rz", "rm", "rp"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("op", ["add", "sub", "mul"])
def test_f32_rounding_modes_exact(op, mode):
    pairs = [(a, b) for a, b in zip(XA, XB)
             if not (op != "mul" and (a + b == 0 or a - b == 0))]
    got = run_op(f"{op}.{mode}.f32 %d, %a, %b;",
                 [("a", "f32", [a for a, _ in pairs]), ("b", "f32", [b for _, b in pairs])],
                 [("d", "f32")])
    f = {"add": lambda a, b: Fraction(a) + Fraction(b), "sub": lambda a, b: Fraction(a) - Fraction(b),
         "mul": lambda a, b: Fraction(a) * Fraction(b)}[op]
    same_bits32(got, [round_f32(f(a, b), mode) for a, b in pairs])


@pytest.mark.parametrize("mode", MODES)
def test_f32_fma_rounding_modes_exact(mode):
    trip = list(zip(XA, XB, XC))
    # make some fma cases where the product nearly cancels c
    trip += [(1.0 + 2.0**-23, 1.0 - 2.0**-23, -1.0), (3.0, 1.0 / 3, -1.0), (0.1, 10.0, -1.0)]
    trip = [(np.float32(a).item(), np.float32(b).item(), np.float32(c).item()) for a, b, c in trip]
    trip = [t for t in trip if Fraction(t[0]) * Fraction(t[1]) + Fraction(t[2]) != 0]
    got = run_op(f"fma.{mode}.f32 %d, %a, %b, %c;",
                 [("a", "f32", [t[0] for t in trip]), ("b", "f32", [t[1] for t in trip]),
                  ("c", "f32", [t[2] for t in trip])], [("d", "f32")])
    same_bits32(got, [round_f32(Fraction(a) * Fraction(b) + Fraction(c), mode) for a, b, c in trip])


def test_fma_is_fused_not_mul_then_add():
    # (1+2^-23)*(1-2^-23) - 1 = -2^-46 exactly; unfused gives 0
    got = run_op("fma.rn.f32 %d, %a, %b, %c;",
                 [("a", "f32", [1 + 2.0**-23]), ("b", "f32", [1 - 2.0**-23]), ("c", "f32", [-1.0])],
                 [("d", "f32")])
    same_bits32(got, [-(2.0**-46)])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("op", ["add", "mul", "fma", "div"])
def test_f64_rounding_modes_exact(op, mode):
    xa, xb, xc = (_rand_f64(40, seed=f"{op}-{mode}-{k}") for k in range(3))
    if op == "fma":
        body = f"fma.{mode}.f64 %d, %a, %b, %c;"
        ref = lambda a, b, c: Fraction(a) * Fraction(b) + Fraction(c)  # noqa: E731
    elif op == "div":
        body = f"div.{mode}.f64 %d, %a, %b;"
        ref = lambda a, b, c: Fraction(a) / Fraction(b)  # noqa: E731
    else:
        body = f"{op}.{mode}.f64 %d, %a, %b;"
        ref = {"add": lambda a, b, c: Fraction(a) + Fraction(b),
               "mul": lambda a, b, c: Fraction(a) * Fraction(b)}[op]
    got = run_op(body, [("a", "f64", xa), ("b", "f64", xb), ("c", "f64", xc)], [("d", "f64")])
    same_bits64(got, [round_f64(ref(a, b, c), mode) for a, b, c in zip(xa, xb, xc)])


@pytest.mark.parametrize("mode", MODES)
def test_f32_div_rounding_modes(mode):
    xa, xb = XA[:48], XB[:48]
    got = run_op(f"div.{mode}.f32 %d, %a, %b;", [("a", "f32", xa), ("b", "f32", xb)], [("d", "f32")])
    same_bits32(got, [round_f32(Fraction(a) / Fraction(b), mode) for a, b in zip(xa, xb)])


def test_f32_div_full_and_approx_within_ulps():
    xa = [float(np.float32(x)) for x in _rand_f64(64, -20, 20, seed="divfa")]
    xb = [float(np.float32(x)) for x in _rand_f64(64, -20, 20, seed="divfb")]
    d, e = run_op("div.full.f32 %d, %a, %b;\ndiv.approx.f32 %e, %a, %b;",
                  [("a", "f32", xa), ("b", "f32", xb)], [("d", "f32"), ("e", "f32")])
    exact = np.array([a / b for a, b in zip(xa, xb)])
    # div.full: max 2 ulp; div.approx: max 2 ulp as well for |b| in normal range
    ulp = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
    assert np.all(np.abs(d - exact) <= 2 * ulp)
    assert np.all(np.abs(e - exact) <= 4 * ulp)


def test_rcp_sqrt_rn_exact():
    xs = [abs(x) for x in _rand_f32(64, seed='rcp')] + [2.0, 4.0, 0.25, 3.0]
    d, e = run_op("rcp.rn.f32 %d, %a;\nsqrt.rn.f32 %e, %a;", [("a", "f32", xs)],
                  [("d", "f32"), ("e", "f32")])
    same_bits32(d, [round_f32(1 / Fraction(x)) for x in xs])
    # f64 sqrt correctly rounded then to f32 is correctly rounded (53 >= 2*24+2)
    same_bits32(e, np.sqrt(np.array(xs, dtype=np.float64)).astype(np.float32))
    ys = [abs(x) for x in _rand_f64(32, seed='rcp64')]
    f, g = run_op("rcp.rn.f64 %f, %a;\nsqrt.rn.f64 %g, %a;", [("a", "f64", ys)],
                  [("f", "f64"), ("g", "f64")])
    same_bits64(f, [round_f64(1 / Fraction(y)) for y in ys])
    same_bits64(g, np.sqrt(np.array(ys)))


def test_sqrt_special_values():
    xs = [0.0, -0.0, INF, -1.0, NAN, 1.0]
    d = run_op("sqrt.rn.f32 %d, %a;", [("a", "f32", xs)], [("d", "f32")])
    same_bits32(d, [0.0, -0.0, INF, NAN, NAN, 1.0])


def test_approx_rcp_sqrt_rsqrt():
    xs = [abs(x) for x in _rand_f32(64, -20, 20, seed='approx')]
    d, e, f = run_op("rcp.approx.f32 %d, %a;\nsqrt.approx.f32 %e, %a;\nrsqrt.approx.f32 %f, %a;",
                     [("a", "f32", xs)], [("d", "f32"), ("e", "f32"), ("f", "f32")])
    x = np.array(xs, dtype=np.float64)
    np.testing.assert_allclose(d, 1 / x, rtol=2e-6)
    np.testing.assert_allclose(e, np.sqrt(x), rtol=2e-6)
    np.testing.assert_allclose(f, 1 / np.sqrt(x), rtol=2e-6)
    g = run_op("rsqrt.approx.f64 %g, %a;", [("a", "f64", xs)], [("g", "f64")])
    np.testing.assert_allclose(g, 1 / np.sqrt(x), rtol=1e-8)


def test_approx_transcendentals():
    xs = list(np.linspace(-math.pi, math.pi, 41))
    d, e = run_op("sin.approx.f32 %d, %a;\ncos.approx.f32 %e, %a;", [("a", "f32", xs)],
                  [("d", "f32"), ("e", "f32")])
    x = np.array(xs, dtype=np.float32).astype(np.float64)
    np.testing.assert_allclose(d, np.sin(x), atol=2e-6)
    np.testing.assert_allclose(e, np.cos(x), atol=2e-6)
    ys = list(np.linspace(-20, 20, 33))
    f, t = run_op("ex2.approx.f32 %f, %a;\ntanh.approx.f32 %t, %a;", [("a", "f32", ys)],
                  [("f", "f32"), ("t", "f32")])
    y = np.array(ys, dtype=np.float32).astype(np.float64)
    np.testing.assert_allclose(f, np.exp2(y), rtol=2e-6)
    np.testing.assert_allclose(t, np.tanh(y), rtol=2e-3, atol=1e-6)
    zs = [abs(v) for v in _rand_f32(32, -30, 30, seed='lg2')]
    g = run_op("lg2.approx.f32 %g, %a;", [("a", "f32", zs)], [("g", "f32")])
    np.testing.assert_allclose(g, np.log2(np.array(zs, dtype=np.float64)), atol=2e-6 * 30)
    specials = run_op("ex2.approx.f32 %d, %a;", [("a", "f32", [0.0, -INF, INF])],
                      [("d", "f32")])
    same_bits32(specials, [1.0, 0.0, INF])


def test_abs_neg_f32_f64_signs():
    xs = [0.0, -0.0, 1.5, -1.5, INF, -INF, 1e-40, -1e-40]
    d, e = run_op("abs.f32 %d, %a;\nneg.f32 %e, %a;", [("a", "f32", xs)], [("d", "f32"), ("e", "f32")])
    same_bits32(d, [abs(x) for x in xs])
    same_bits32(e, [-x for x in xs])
    f, g = run_op("abs.f64 %f, %a;\nneg.f64 %g, %a;", [("a", "f64", xs)], [("f", "f64"), ("g", "f64")])
    same_bits64(f, [abs(x) for x in xs])
    same_bits64(g, [-x for x in xs])
    h = run_op("abs.f32 %h, %a;\n", [("a", "f32", [NAN, -NAN])], [("h", "f32")])
    assert np.isnan(h).all()


MM = [(1.0, 2.0), (-1.0, 2.0), (NAN, 2.0), (2.0, NAN), (NAN, NAN), (NAN, -INF), (INF, NAN),
      (-3.5, -3.25), (1e-40, -1e-40)]


def test_min_max_f32_nan_returns_other_operand():
    ins = [("a", "f32", [a for a, _ in MM]), ("b", "f32", [b for _, b in MM])]
    d, e = run_op("min.f32 %d, %a, %b;\nmax.f32 %e, %a, %b;", ins, [("d", "f32"), ("e", "f32")])

    def pick(a, b, f):
        if math.isnan(a):
            return b
        if math.isnan(b):
            return a
        return f(a, b)
    same_bits32(d, [pick(a, b, min) for a, b in MM])
    same_bits32(e, [pick(a, b, max) for a, b in MM])


def test_min_max_nan_modifier_propagates():
    ins = [("a", "f32", [a for a, _ in MM]), ("b", "f32", [b for _, b in MM])]
    d, e = run_op("min.NaN.f32 %d, %a, %b;\nmax.NaN.f32 %e, %a, %b;", ins,
                  [("d", "f32"), ("e", "f32")])

    def pick(a, b, f):
        return NAN if math.isnan(a) or math.isnan(b) else f(a, b)
    same_bits32(d, [pick(a, b, min) for a, b in MM])
    same_bits32(e, [pick(a, b, max) for a, b in MM])


def test_min_max_f64_nan():
    ins = [("a", "f64", [a for a, _ in MM]), ("b", "f64", [b for _, b in MM])]
    d, e = run_op("min.f64 %d, %a, %b;\nmax.f64 %e, %a, %b;", ins, [("d", "f64"), ("e", "f64")])
    pick = lambda a, b, f: b if math.isnan(a) else a if math.isnan(b) else f(a, b)  # noqa: E731
    same_bits64(d, [pick(a, b, min) for a, b in MM])
    same_bits64(e, [pick(a, b, max) for a, b in MM])


def test_copysign_takes_sign_of_first_operand():
    # PTX: copysign d, a, b copies the sign of a onto b.
    cases = [(-1.0, 2.0), (1.0, -2.0), (-0.0, 3.0), (0.0, -INF), (-5.0, 0.0), (2.0, 7.0)]
    d = run_op("copysign.f32 %d, %a, %b;", [("a", "f32", [a for a, _ in cases]),
                                            ("b", "f32", [b for _, b in cases])], [("d", "f32")])
    same_bits32(d, [math.copysign(b, a) for a, b in cases])
    e = run_op("copysign.f64 %e, %a, %b;", [("a", "f64", [a for a, _ in cases]),
                                            ("b", "f64", [b for _, b in cases])], [("e", "f64")])
    same_bits64(e, [math.copysign(b, a) for a, b in cases])


def test_testp_classes():
    xs = [0.0, -0.0, 1.0, -2.5, INF, -INF, NAN, 1e-40, -1e-40, 2.0**-126, 3.4e38]
    kinds = ["finite", "infinite", "number", "notanumber", "normal", "subnormal"]
    body = "\n".join(f"testp.{k}.f32 %{k}, %a;" for k in kinds)
    outs = run_op(body, [("a", "f32", xs)], [(k, "pred") for k in kinds])
    f32 = [np.float32(x) for x in xs]
    ref = {
        "finite": [np.isfinite(x) for x in f32],
        "infinite": [np.isinf(x) for x in f32],
        "number": [not np.isnan(x) for x in f32],
        "notanumber": [np.isnan(x) for x in f32],
        "normal": [bool(np.isfinite(x) and abs(x) >= 2.0**-126) for x in f32],
        "subnormal": [bool(x != 0 and abs(x) < 2.0**-126) for x in f32],
    }
    for k, got in zip(kinds, outs):
        same_ints(got, [int(v) for v in ref[k]], "u32")
    g = run_op("testp.subnormal.f64 %g, %a;", [("a", "f64", [1e-310, 1e-300, 0.0])], [("g", "pred")])
    same_ints(g, [1, 0, 0], "u32")


def test_ftz_flushes_inputs_and_outputs_keeping_sign():
    sub = 1e-40
    cases = [  # (a, b) for mul.ftz: subnormal input -> 0, subnormal product -> 0
        (sub, 2.0**30), (-sub, 2.0**30), (1e-20, 1e-20), (-1e-20, 1e-20), (2.0, 3.0)]
    ins = [("a", "f32", [a for a, _ in cases]), ("b", "f32", [b for _, b in cases])]
    d, e = run_op("mul.ftz.f32 %d, %a, %b;\nmul.rn.f32 %e, %a, %b;", ins,
                  [("d", "f32"), ("e", "f32")])
    same_bits32(d, [0.0, -0.0, 0.0, -0.0, 6.0])
    same_bits32(e, [np.float32(np.float64(np.float32(a)) * b) for a, b in cases])
    f = run_op("add.ftz.f32 %f, %a, %b;", [("a", "f32", [sub, -sub, 2.0**-125]),
                                           ("b", "f32", [0.0, -0.0, -(2.0**-125) * 1.5])],
               [("f", "f32")])
    # 2^-125 - 1.5*2^-125 = -2^-126 is normal: kept; the first two flush to signed zeros
    same_bits32(f, [0.0, -0.0, -(2.0**-126)])


def test_sat_clamps_to_unit_interval_nan_to_zero():
    cases = [(0.5, 0.7), (-2.0, 1.0), (0.25, 0.25), (NAN, 1.0), (INF, 0.0), (-INF, 5.0)]
    ins = [("a", "f32", [a for a, _ in cases]), ("b", "f32", [b for _, b in cases])]
    d, e = run_op("add.sat.f32 %d, %a, %b;\nmul.sat.f32 %e, %a, %b;", ins,
                  [("d", "f32"), ("e", "f32")])
    same_bits32(d, [1.0, 0.0, 0.5, 0.0, 1.0, 0.0])
    same_bits32(e, [0.35, 0.0, 0.0625, 0.0, 0.0, 0.0])


def test_fma_sat_and_f32_special_arith():
    d = run_op("fma.rn.sat.f32 %d, %a, %b, %c;",
               [("a", "f32", [2.0, -1.0, 0.5]), ("b", "f32", [2.0, 1.0, 0.5]),
                ("c", "f32", [1.0, 0.5, 0.25])], [("d", "f32")])
    same_bits32(d, [1.0, 0.0, 0.5])
    e = run_op("add.f32 %e, %a, %b;", [("a", "f32", [INF, INF, 0.0, -0.0, NAN]),
                                       ("b", "f32", [-INF, 1.0, -0.0, -0.0, 1.0])], [("e", "f32")])
    same_bits32(e, [NAN, INF, 0.0, -0.0, NAN])


def test_f32_bits_roundtrip_helpers():
    assert f2b(1.0) == 0x3F800000 and b2f(0x3F800000) == 1.0


def test_special_values_of_approximate_functions():
    xs = [0.0, -0.0, INF, -1.0]
    d, e, f, g = run_op("rcp.approx.f32 %d, %a;\nrsqrt.approx.f32 %e, %a;\nlg2.approx.f32 %f, %a;\n"
                        "sqrt.approx.f32 %g, %a;", [("a", "f32", xs)],
                        [("d", "f32"), ("e", "f32"), ("f", "f32"), ("g", "f32")])
    same_bits32(d, [INF, -INF, 0.0, -1.0])
    same_bits32(e, [INF, -INF, 0.0, NAN])
    same_bits32(f, [-INF, -INF, INF, NAN])
    same_bits32(g, [0.0, -0.0, INF, NAN])
    h = run_op("sin.approx.f32 %h, %a;", [("a", "f32", [INF, -INF, NAN, 0.0, -0.0])], [("h", "f32")])
    same_bits32(h, [NAN, NAN, NAN, 0.0, -0.0])


def test_f64_div_rcp_by_zero_and_nan():
    a = [1.0, -1.0, 0.0, INF, NAN, 1.0]
    b = [0.0, 0.0, 0.0, INF, 1.0, -0.0]
    d = run_op("div.rn.f64 %d, %a, %b;", [("a", "f64", a), ("b", "f64", b)], [("d", "f64")])
    same_bits64(d, [INF, -INF, NAN, NAN, NAN, -INF])
    e = run_op("div.rn.f32 %e, %a, %b;", [("a", "f32", a), ("b", "f32", b)], [("e", "f32")])
    same_bits32(e, [INF, -INF, NAN, NAN, NAN, -INF])


def test_ftz_on_f64_is_not_applied_and_f32_div_ftz():
    # .ftz only exists for .f32; f64 keeps subnormals
    d = run_op("mul.rn.f64 %d, %a, %b;", [("a", "f64", [1e-300]), ("b", "f64", [1e-10])], [("d", "f64")])
    same_bits64(d, [1e-300 * 1e-10])
    e = run_op("div.rn.ftz.f32 %e, %a, %b;", [("a", "f32", [1e-40, 1.0, -1e-30]),
                                              ("b", "f32", [1.0, 1e-40, 1e10])], [("e", "f32")])
    # 1e-40 flushes to 0 -> 0/1 = 0 ; 1/(flushed 0) = inf ; -1e-40 result flushes to -0
    same_bits32(e, [0.0, INF, -0.0])


def test_mov_float_immediates():
    d, e, f = run_op("mov.f32 %d, 0f3FC00000;\nmov.f64 %e, 0dC004000000000000;\n"
                     "mov.b32 %r1, 0f7F800000;\nmov.b32 %f, %r1;", [("a", "f32", [0.0])],
                     [("d", "f32"), ("e", "f64"), ("f", "f32")])
    same_bits32(d, [1.5])
    same_bits64(e, [-2.5])
    same_bits32(f, [INF])


def test_fma_rn_no_double_rounding_f32_f64():
    # f32: (1+2^-12)^2 + 2^-70 = 1 + 2^-11 + 2^-24 + 2^-70: just above an f32 tie. Computing
    # in f64 first would land exactly on the tie and round to even (down).
    a32, c32 = 1 + 2.0**-12, 2.0**-70
    d = run_op("fma.rn.f32 %d, %a, %b, %c;",
               [("a", "f32", [a32, -a32]), ("b", "f32", [a32, a32]), ("c", "f32", [c32, -c32])],
               [("d", "f32")])
    want = 1 + 2.0**-11 + 2.0**-23
    same_bits32(d, [want, -want])
    # f64: (1+2^-26)(1+2^-27) + 2^-200 is just above an f64 tie
    a, b, c = 1 + 2.0**-26, 1 + 2.0**-27, 2.0**-200
    e = run_op("fma.rn.f64 %e, %a, %b, %c;", [("a", "f64", [a]), ("b", "f64", [b]), ("c", "f64", [c])],
               [("e", "f64")])
    same_bits64(e, [round_f64(Fraction(a) * Fraction(b) + Fraction(c))])
    assert round_f64(Fraction(a) * Fraction(b) + Fraction(c)) == 1 + 2.0**-26 + 2.0**-27 + 2.0**-52


def test_add_rn_f32_directly_not_via_wider_tie_cases():
    # sums that are exact in f64 but need rounding in f32, including exact ties
    a = [1.0, 1.0, 1.0 + 2.0**-23, 16777216.0, 16777216.0]
    b = [2.0**-24, 3 * 2.0**-24, 2.0**-24, 1.0, 3.0]
    d = run_op("add.rn.f32 %d, %a, %b;", [("a", "f32", a), ("b", "f32", b)], [("d", "f32")])
    same_bits32(d, [round_f32(Fraction(x) + Fraction(y)) for x, y in zip(a, b)])
    assert [round_f32(Fraction(x) + Fraction(y)) for x, y in zip(a, b)] == \
        [1.0, 1.0 + 2.0**-22, 1.0 + 2.0**-22, 16777216.0, 16777220.0]


SUBN = [1e-40, -1e-40, 1e-45, 2.0**-126, 3e-39, 1.17e-38]


@pytest.mark.parametrize("mode", MODES)
def test_subnormal_operands_and_results_all_modes(mode):
    a = [float(np.float32(x)) for x in SUBN + [1e-38, 3e38, 1.0]]
    b = [float(np.float32(x)) for x in [3.0, 1e-41, 0.5, -(2.0**-127), 1e-40, 7.0, 3e-39, 1e-40, 2.0**-126]]
    d, e, f = run_op(f"add.{mode}.f32 %d, %a, %b;\nmul.{mode}.f32 %e, %a, %b;\ndiv.{mode}.f32 %f, %a, %b;",
                     [("a", "f32", a), ("b", "f32", b)], [("d", "f32"), ("e", "f32"), ("f", "f32")])
    same_bits32(d, [round_f32(Fraction(x) + Fraction(y), mode) for x, y in zip(a, b)])
    same_bits32(e, [round_f32(Fraction(x) * Fraction(y), mode) for x, y in zip(a, b)])
    same_bits32(f, [round_f32(Fraction(x) / Fraction(y), mode) for x, y in zip(a, b)])


def test_sqrt_rcp_rn_subnormal():
    xs = [float(np.float32(x)) for x in [1e-40, 1e-45, 3e38, 2.0**-149, 5e-39]]
    d, e = run_op("sqrt.rn.f32 %d, %a;\nrcp.rn.f32 %e, %a;", [("a", "f32", xs)], [("d", "f32"), ("e", "f32")])
    same_bits32(d, np.sqrt(np.array(xs, dtype=np.float64)).astype(np.float32))
    same_bits32(e, [round_f32(1 / Fraction(x)) for x in xs])


@pytest.mark.parametrize("mode", MODES)
def test_f64_subnormal_directed(mode):
    a = [1e-310, -1e-310, 2.0**-1074, 1e-300, 1e-308]
    b = [3.0, 7e-311, 0.5, 1e-10, -1e-9]
    d, e = run_op(f"mul.{mode}.f64 %d, %a, %b;\nadd.{mode}.f64 %e, %a, %b;",
                  [("a", "f64", a), ("b", "f64", b)], [("d", "f64"), ("e", "f64")])
    same_bits64(d, [round_f64(Fraction(x) * Fraction(y), mode) for x, y in zip(a, b)])
    same_bits64(e, [round_f64(Fraction(x) + Fraction(y), mode) for x, y in zip(a, b)])


def test_max_min_xorsign_abs():
    a = [1.0, -1.0, -3.0, 2.0, -0.5]
    b = [-2.0, -4.0, 1.0, 0.5, 0.25]
    d, e = run_op("max.xorsign.abs.f32 %d, %a, %b;\nmin.xorsign.abs.f32 %e, %a, %b;",
                  [("a", "f32", a), ("b", "f32", b)], [("d", "f32"), ("e", "f32")])
    sgn = [-1.0 if (x < 0) != (y < 0) else 1.0 for x, y in zip(a, b)]
    same_bits32(d, [s_ * max(abs(x), abs(y)) for s_, x, y in zip(sgn, a, b)])
    same_bits32(e, [s_ * min(abs(x), abs(y)) for s_, x, y in zip(sgn, a, b)])


def test_abs_neg_min_ftz_flush_subnormal_inputs():
    xs = [1e-40, -1e-40, 2.0, -3e-39]
    d, e = run_op("abs.ftz.f32 %d, %a;\nneg.ftz.f32 %e, %a;", [("a", "f32", xs)],
                  [("d", "f32"), ("e", "f32")])
    same_bits32(d, [0.0, 0.0, 2.0, 0.0])
    same_bits32(e, [-0.0, 0.0, -2.0, 0.0])


def test_rounding_mode_and_ftz_do_not_leak_between_instructions():
    # a directed or .ftz instruction must not change how the next instructions round
    body = ("add.rp.f32 %r_p, %a, %b;\nadd.f32 %r_n1, %a, %b;\nmul.rm.f32 %r_m, %a, %b;\n"
            "mul.rn.f32 %r_n2, %a, %b;\nmul.ftz.f32 %r_f, %c, %c;\nmul.f32 %r_s, %c, %c;\n"
            "div.rz.f32 %r_z, %a, %b;\nsqrt.rn.f32 %r_q, %b;\ncvt.rn.f32.f64 %r_c, %e;\n"
            "add.rz.f64 %r_dz, %e, %e2;\nadd.f64 %r_dn, %e, %e2;")
    a = [1.0, -1.0, 1.0 + 2.0**-23]
    b = [float(np.float32(x)) for x in (2.0**-24 * 3, 1.0 / 3, 0.7)]
    c = [1e-20, -1e-20, 2e-20]
    e = [1 / 3, 0.1, 2.0 / 3]
    e2 = [2.0**-60, -(2.0**-61), 1e-17]
    outs = run_op(body, [("a", "f32", a), ("b", "f32", b), ("c", "f32", c), ("e", "f64", e),
                         ("e2", "f64", e2)],
                  [("r_p", "f32"), ("r_n1", "f32"), ("r_m", "f32"), ("r_n2", "f32"), ("r_f", "f32"),
                   ("r_s", "f32"), ("r_z", "f32"), ("r_q", "f32"), ("r_c", "f32"), ("r_dz", "f64"),
                   ("r_dn", "f64")])
    F = Fraction
    same_bits32(outs[0], [round_f32(F(x) + F(y), "rp") for x, y in zip(a, b)])
    same_bits32(outs[1], [round_f32(F(x) + F(y), "rn") for x, y in zip(a, b)])
    same_bits32(outs[2], [round_f32(F(x) * F(y), "rm") for x, y in zip(a, b)])
    same_bits32(outs[3], [round_f32(F(x) * F(y), "rn") for x, y in zip(a, b)])
    same_bits32(outs[4], [0.0, 0.0, 0.0])
    c32 = [float(np.float32(x)) for x in c]
    same_bits32(outs[5], [round_f32(F(x) * F(x), "rn") for x in c32])
    same_bits32(outs[6], [round_f32(F(x) / F(y), "rz") for x, y in zip(a, b)])
    same_bits32(outs[7], np.sqrt(np.array(b, dtype=np.float64)).astype(np.float32))
    same_bits32(outs[8], [round_f32(F(x), "rn") for x in e])
    same_bits64(outs[9], [round_f64(F(x) + F(y), "rz") for x, y in zip(e, e2)])
    same_bits64(outs[10], [round_f64(F(x) + F(y), "rn") for x, y in zip(e, e2)])


def test_host_floating_point_environment_unchanged_after_launches():
    import dptx
    run_op("add.rp.f32 %d, %a, %a;\nmul.rm.f64 %e, %b, %b;\nmul.ftz.f32 %f, %a, %a;",
           [("a", "f32", [1e-30]), ("b", "f64", [0.1])], [("d", "f32"), ("e", "f64"), ("f", "f32")])
    # a kernel that changes the rounding mode and then faults
    from ._util import kernel_from_ptx, kernel_text, launch
    k = kernel_from_ptx(kernel_text(".param .u64 p", """
mov.f32 %f1, 0f3F800000;
add.rm.f32 %f2, %f1, %f1;
mov.u64 %rd1, 0;
ld.global.u32 %r1, [%rd1];
ret;"""))
    with pytest.raises(dptx.DptxMemoryError):
        launch(k, 1, 1, [np.zeros(1, dtype=np.uint32)])
    assert 1.0 + 2.0**-53 == 1.0 and 1.0 + 3 * 2.0**-53 == 1.0 + 2.0**-51
    assert np.float32(1.0) + np.float32(2.0**-24) == np.float32(1.0)
    assert np.float32(1.0) + np.float32(3 * 2.0**-24) == np.float32(1.0 + 2.0**-22)
    assert -1.0 - 2.0**-53 == -1.0
    tiny = np.float32(1e-40)
    assert tiny * np.float32(1.0) == tiny and tiny != 0      # no flush-to-zero on the host
    assert 5e-324 / 2 == 0.0 and 5e-324 * 1.0 == 5e-324


def test_ftz_on_many_f32_instructions():
    s_ = 1e-40  # subnormal f32
    xs = [s_, -s_]
    body = ("fma.rn.ftz.f32 %d0, %a, 0f3F800000, 0f80000000;\nsub.ftz.f32 %d1, %a, 0f00000000;\n"
            "min.ftz.f32 %d2, %a, 0f7F800000;\nmax.ftz.f32 %d3, %a, 0fFF800000;\n"
            "sqrt.rn.ftz.f32 %d4, %a;\nrcp.rn.ftz.f32 %d5, %a;\nex2.approx.ftz.f32 %d6, %a;\n"
            "lg2.approx.ftz.f32 %d7, %a;\nrsqrt.approx.ftz.f32 %d8, %a;\nsin.approx.ftz.f32 %d9, %a;\n"
            "cvt.ftz.f32.f32 %d10, %a;\nabs.ftz.f32 %d11, %a;")
    outs = run_op(body, [("a", "f32", xs)], [(f"d{i}", "f32") for i in range(12)])
    want = {
        0: [0.0, -0.0], 1: [0.0, -0.0], 2: [0.0, -0.0], 3: [0.0, -0.0], 4: [0.0, -0.0],
        5: [INF, -INF], 6: [1.0, 1.0], 7: [-INF, -INF], 8: [INF, -INF], 9: [0.0, -0.0],
        10: [0.0, -0.0], 11: [0.0, 0.0]}
    for i, w in want.items():
        try:
            same_bits32(outs[i], w)
        except AssertionError as e:
            raise AssertionError(f"{body.splitlines()[i]}: {e}") from None


def _directed_reference(exact_args, op, mode):
    """IEEE 754 for f32 add/sub/fma rounded by ``mode``, from exact rationals: specials as
    the standard has them, an exact zero sum -0 under .rm unless both addends are +0."""
    a, b, c = exact_args
    if op == "fma":
        p, q = (a, b), c
    else:
        p, q = (a, 1.0), (b if op == "add" else -b)
    if any(math.isnan(x) for x in (*p, q)):
        return NAN
    prod_inf = math.isinf(p[0]) or math.isinf(p[1])
    if prod_inf and (p[0] == 0 or p[1] == 0):
        return NAN
    if prod_inf or math.isinf(q):
        ps = math.copysign(1, p[0]) * math.copysign(1, p[1])
        if prod_inf and math.isinf(q) and ps != math.copysign(1, q):
            return NAN
        return ps * INF if prod_inf else q
    exact = Fraction(p[0]) * Fraction(p[1]) + Fraction(q)
    if exact == 0:
        psign = math.copysign(1, p[0]) * math.copysign(1, p[1])
        if p[0] * p[1] == 0 and q == 0 and psign == math.copysign(1, q):
            return math.copysign(0.0, q)
        return -0.0 if mode == "rm" else 0.0
    return round_f32(exact, mode)


@pytest.mark.parametrize("op", ["fma", "add", "sub"])
def test_f32_directed_add_sub_fma_edges(op):
    """.rm/.rp/.rz (computed without switching the rounding mode: exact in double, then
    the directed choice between the two nearest floats) against IEEE 754 on random operands
    of all magnitudes and the edges: exact cancellation (signed zeros), overflow to the
    largest float or infinity, results in and below the subnormal range, infinities, NaN."""
    r = random.Random(7)
    trips = []
    for _ in range(600):
        a, b, c = _rand_f32(3, emin=-149 + 23, emax=127, seed=r.getrandbits(32))
        trips.append((a, b, c))
    for _ in range(300):      # products that nearly or exactly cancel c
        a, b = _rand_f32(2, emin=-20, emax=20, seed=r.getrandbits(32))
        c = float(np.float32(-(a * b)))
        trips.append((a, b, c))
        trips.append((a, -a, 0.0))
    big, tiny = 3.4028234663852886e38, 2.0 ** -149
    trips += [(big, 2.0, 0.0), (-big, 2.0, 0.0), (big, 1.0, big), (-big, 1.0, -big),
              (tiny, 0.5, 0.0), (-tiny, 0.5, 0.0), (tiny, 0.25, tiny), (2.0 ** -126, -0.5, 0.0),
              (0.0, 5.0, -0.0), (-0.0, 5.0, -0.0), (0.0, -5.0, 0.0), (-0.0, 1.0, 0.0),
              (3.0, -2.0, 6.0), (INF, 2.0, 1.0), (INF, -1.0, 5.0), (INF, 0.0, 1.0),
              (INF, 1.0, -INF), (1.0, 1.0, INF), (NAN, 1.0, 1.0), (1.0, 2.0, NAN),
              (1.0 + 2.0 ** -23, 1.0 - 2.0 ** -23, -1.0), (big, big, -INF)]
    trips = [tuple(float(np.float32(x)) for x in t) for t in trips]
    ins = [("a", "f32", [t[0] for t in trips]), ("b", "f32", [t[1] for t in trips]),
           ("c", "f32", [t[2] for t in trips])]
    for mode in ("rm", "rp", "rz"):
        text = f"fma.{mode}.f32 %d, %a, %b, %c;" if op == "fma" else f"{op}.{mode}.f32 %d, %a, %b;"
        got = run_op(text, ins, [("d", "f32")])
        same_bits32(got, [_directed_reference(t, op, mode) for t in trips])
