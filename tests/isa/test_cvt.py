"""cvt: every integer pair (extension, truncation, .sat), float->int rounding with saturation
and NaN -> 0, int->float rounding modes, f64->f32 rounding, .ftz, round-to-integer in float,
cvt.sat.f32."""
import math
from fractions import Fraction

import numpy as np
import pytest

from ._util import round_f32, round_f64, run_op, same_bits32, same_bits64, same_ints

INTS = ["u8", "s8", "u16", "s16", "u32", "s32", "u64", "s64"]
NAN = float("nan")
INF = float("inf")


def bits(t):
    return int(t[1:])


def rng_of(t):
    n = bits(t)
    return (-(1 << (n - 1)), (1 << (n - 1)) - 1) if t[0] == "s" else (0, (1 << n) - 1)


def interp(v, t):
    n = bits(t)
    v %= 1 << n
    if t[0] == "s" and v >> (n - 1):
        v -= 1 << n
    return v


# register type used to hold a source of type t (8-bit sources live in 16-bit registers,
# whose upper bits must be ignored)
SRC_REG = {"u8": "u16", "s8": "u16"}
SRC_VALS = [0, 1, 0x7F, 0x80, 0xFF, 0x17F, 0x7FFF, 0x8000, 0xFFFF, 0x1FF80, 0x7FFFFFFF,
            0x80000000, 0xFFFFFFFF, 0x123456789, 0x7FFFFFFFFFFFFFFF, 0x8000000000000000,
            0xFFFFFFFFFFFFFFFF, 0xFFFFFFFFFFFFFF80, 0xFFFFFFFF80000000]


def _needs_sat(src, dst):
    lo_s, hi_s = rng_of(src)
    lo_d, hi_d = rng_of(dst)
    return not (lo_d <= lo_s and hi_s <= hi_d)


@pytest.mark.parametrize("src", INTS)
def test_cvt_int_to_int_all_pairs(src):
    reg = SRC_REG.get(src, src)
    rbits = bits(reg)
    vals = sorted({v % (1 << rbits) for v in SRC_VALS})
    dsts = [d for d in INTS if d != src]
    body, outs = [], []
    for d in dsts:
        body.append(f"cvt.{d}.{src} %n_{d}, %a;")
        outs.append((f"n_{d}", d))
        if _needs_sat(src, d):
            body.append(f"cvt.sat.{d}.{src} %s_{d}, %a;")
            outs.append((f"s_{d}", d))
    got = run_op("\n".join(body), [("a", reg, vals)], outs)
    for (name, d), g in zip(outs, got):
        x = [interp(v, src) for v in vals]
        if name.startswith("s_"):
            lo, hi = rng_of(d)
            want = [min(max(v, lo), hi) for v in x]
        else:
            want = x
        same_ints(g, want, d)


def test_cvt_u8_s8_sign_extension_examples():
    d, e, f = run_op("cvt.s32.s8 %d, %a;\ncvt.u32.u8 %e, %a;\ncvt.s64.s8 %f, %a;",
                     [("a", "u16", [0x80, 0xFF, 0x7F, 0x1FE, 0xAB80])],
                     [("d", "s32"), ("e", "u32"), ("f", "s64")])
    same_ints(d, [-128, -1, 127, -2, -128], "s32")
    same_ints(e, [0x80, 0xFF, 0x7F, 0xFE, 0x80], "u32")
    same_ints(f, [-128, -1, 127, -2, -128], "s64")


FVALS = [0.0, -0.0, 0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997, 3.7, -3.7, 1e10, -1e10, NAN,
         INF, -INF, 2147483520.0, 2147483648.0, -2147483648.0, 4294967040.0, 4294967296.0,
         9.2233715e18, 1.8446743e19, 1e30, 255.5, 256.0, -129.0, 65535.4, 32767.5, -32768.6,
         2.0**63, -2.0**63, 2.0**64, 2.0**32, -2147483904.0, 4294967295.5]
IRND = {"rni": lambda q: _rne(q), "rzi": lambda q: int(q),
        "rmi": lambda q: math.floor(q), "rpi": lambda q: math.ceil(q)}


def _rne(q):
    f = math.floor(q)
    r = q - f
    if r > Fraction(1, 2) or (r == Fraction(1, 2) and f % 2):
        f += 1
    return f


def _f2i(x, mode, dst):
    if math.isnan(x):
        return 0
    lo, hi = rng_of(dst)
    if math.isinf(x):
        return hi if x > 0 else lo
    v = IRND[mode](Fraction(x))
    return min(max(v, lo), hi)


@pytest.mark.parametrize("src", ["f32", "f64"])
@pytest.mark.parametrize("mode", ["rni", "rzi", "rmi", "rpi"])
def test_cvt_float_to_int_rounding_saturation_nan(mode, src):
    dsts = ["s32", "u32", "s64", "u64", "s16", "u16", "s8", "u8"]
    vals = [float(np.float32(v)) for v in FVALS] if src == "f32" else FVALS
    body = "\n".join(f"cvt.{mode}.{d}.{src} %o_{d}, %a;" for d in dsts)
    got = run_op(body, [("a", src, vals)], [(f"o_{d}", d) for d in dsts])
    for d, g in zip(dsts, got):
        same_ints(g, [_f2i(v, mode, d) for v in vals], d)


@pytest.mark.parametrize("mode", ["rn", "rz", "rm", "rp"])
def test_cvt_int_to_f32_rounding_modes(mode):
    vals = [16777217, 16777219, -16777217, 0x7FFFFFFF, -0x7FFFFFFF, 0x7FFFFFC1, 123456789,
            -123456789, 33554435, 1, -1, 0]
    uvals = [0xFFFFFFFF, 0xFFFFFF81, 0x80000001, 16777217, 4294967295, 3000000001]
    d = run_op(f"cvt.{mode}.f32.s32 %d, %a;", [("a", "s32", vals)], [("d", "f32")])
    same_bits32(d, [round_f32(Fraction(v), mode) for v in vals])
    e = run_op(f"cvt.{mode}.f32.u32 %e, %a;", [("a", "u32", uvals)], [("e", "f32")])
    same_bits32(e, [round_f32(Fraction(v), mode) for v in uvals])
    v64 = [2**63 - 1, -(2**63 - 1), 2**53 + 1, -(2**53 + 1), 0x123456789ABCDEF, -(2**62 + 3),
           2**62 + 2**38 + 1, -(2**62 + 2**38 + 1), 2**54 + 2**30 + 1]  # f32 ties off by 1: no double rounding
    u64 = [2**64 - 1, 2**53 + 1, 2**63 + 1, 0xFEDCBA9876543211, 2**63 + 2**39 + 1]
    f32u = run_op(f"cvt.{mode}.f32.u64 %d, %a;", [("a", "u64", u64)], [("d", "f32")])
    same_bits32(f32u, [round_f32(Fraction(v), mode) for v in u64])
    f, g = run_op(f"cvt.{mode}.f32.s64 %f, %a;\ncvt.{mode}.f64.s64 %g, %a;", [("a", "s64", v64)],
                  [("f", "f32"), ("g", "f64")])
    same_bits32(f, [round_f32(Fraction(v), mode) for v in v64])
    same_bits64(g, [round_f64(Fraction(v), mode) for v in v64])
    h = run_op(f"cvt.{mode}.f64.u64 %h, %a;", [("a", "u64", u64)], [("h", "f64")])
    same_bits64(h, [round_f64(Fraction(v), mode) for v in u64])


def test_cvt_int_to_float_exact_and_small_types():
    d, e, f = run_op("cvt.rn.f32.s16 %d, %a;\ncvt.rn.f64.s16 %e, %a;\ncvt.rn.f32.u16 %f, %a;",
                     [("a", "s16", [-32768, -1, 0, 32767])], [("d", "f32"), ("e", "f64"), ("f", "f32")])
    same_bits32(d, [-32768.0, -1.0, 0.0, 32767.0])
    same_bits64(e, [-32768.0, -1.0, 0.0, 32767.0])
    same_bits32(f, [32768.0, 65535.0, 0.0, 32767.0])
    g = run_op("cvt.rn.f64.s32 %g, %a;", [("a", "s32", [-2**31, 2**31 - 1, 5])], [("g", "f64")])
    same_bits64(g, [-2.0**31, 2.0**31 - 1, 5.0])


F64V = [1 / 3, 0.1, -0.1, 1e39, -1e39, 3.4028235677973366e38, 1e-46, -1e-46, 1e-40, 1e-45,
        1.0 + 2.0**-24, 1.0 + 3 * 2.0**-24, 1.0 + 2.0**-24 + 2.0**-50, -(1.0 + 2.0**-24), 2.0**-149,
        0.0, -0.0, INF, -INF]


@pytest.mark.parametrize("mode", ["rn", "rz", "rm", "rp"])
def test_cvt_f64_to_f32_rounding_modes(mode):
    d = run_op(f"cvt.{mode}.f32.f64 %d, %a;", [("a", "f64", F64V)], [("d", "f32")])

    def ref(x):
        if x == 0 or math.isinf(x):
            return x
        return round_f32(Fraction(x), mode)
    same_bits32(d, [ref(x) for x in F64V])


def test_cvt_f32_to_f64_exact_and_nan():
    xs = [1e-40, -1e-40, 3.4e38, 0.1, -0.0, INF, NAN]
    d = run_op("cvt.f64.f32 %d, %a;", [("a", "f32", xs)], [("d", "f64")])
    same_bits64(d, [float(np.float32(x)) for x in xs])


def test_cvt_ftz_flushes_subnormals():
    d = run_op("cvt.rn.ftz.f32.f64 %d, %a;", [("a", "f64", [1e-40, -1e-40, 1e-30])], [("d", "f32")])
    same_bits32(d, [0.0, -0.0, 1e-30])
    e = run_op("cvt.ftz.f64.f32 %e, %a;", [("a", "f32", [1e-40, -1e-40, 1.5])], [("e", "f64")])
    same_bits64(e, [0.0, -0.0, 1.5])


@pytest.mark.parametrize("mode", ["rni", "rzi", "rmi", "rpi"])
def test_cvt_round_to_integer_in_float(mode):
    xs = [2.5, 3.5, -2.5, -0.4, 0.4, 0.5, -0.5, 1e30, 8388607.5, -8388607.5, 1.0, -0.0, INF, NAN,
          1e-40]
    d = run_op(f"cvt.{mode}.f32.f32 %d, %a;", [("a", "f32", xs)], [("d", "f32")])
    e = run_op(f"cvt.{mode}.f64.f64 %e, %a;", [("a", "f64", xs)], [("e", "f64")])

    def ref(x, ty):
        x = float(np.float32(x)) if ty == "f32" else x
        if math.isnan(x) or math.isinf(x) or x == 0:
            return x
        r = IRND[mode](Fraction(x))
        return math.copysign(float(r), x) if r == 0 else float(r)
    same_bits32(d, [ref(x, "f32") for x in xs])
    same_bits64(e, [ref(x, "f64") for x in xs])


def test_cvt_sat_f32_f32():
    xs = [1.5, -0.5, NAN, 0.3, 1.0, 0.0, INF, -INF]
    d = run_op("cvt.sat.f32.f32 %d, %a;", [("a", "f32", xs)], [("d", "f32")])
    same_bits32(d, [1.0, 0.0, 0.0, 0.3, 1.0, 0.0, 1.0, 0.0])


def test_cvt_float_to_int_with_ftz_and_default_saturation():
    # cvt.rzi.s32.f32 saturates: 3e9 -> INT_MAX; -3e9 -> INT_MIN; NaN -> 0
    d = run_op("cvt.rzi.ftz.s32.f32 %d, %a;", [("a", "f32", [3e9, -3e9, NAN, -7.9, 1e-40])],
               [("d", "s32")])
    same_ints(d, [2**31 - 1, -2**31, 0, -7, 0], "s32")


def test_cvt_rna_tf32_f32_ties_away():
    # tf32 keeps 10 fraction bits (13 low bits of the f32 cleared), rounding ties away from 0
    bits = [0x3F800000, 0x3F801000, 0x3F803000, 0x3F800FFF, 0xBF801000, 0x3F802000, 0x7F7FF000]
    xs = np.array(bits, dtype=np.uint32).view(np.float32)
    d = run_op("cvt.rna.tf32.f32 %d, %a;", [("a", "f32", xs)], [("d", "b32")])

    def rna(b):
        low = b & 0x1FFF
        b &= ~0x1FFF
        if low >= 0x1000:
            b += 0x2000
        return b & 0xFFFFFFFF
    want = [rna(b) for b in bits]
    assert want[:6] == [0x3F800000, 0x3F802000, 0x3F804000, 0x3F800000, 0xBF802000, 0x3F802000]
    same_ints(d, want, "b32")


def _pack_model(ct, a, b, c=None):
    """The ISA's cvt.pack pseudocode: saturate a and b to ct, b in the low bits, a above, then
    (narrower than 16 bits) c's low bits above both."""
    size = int(ct[1:])
    lo, hi = (-(1 << (size - 1)), (1 << (size - 1)) - 1) if ct[0] == "s" else (0, (1 << size) - 1)
    sat = lambda v: min(max(v, lo), hi) & ((1 << size) - 1)
    d = sat(b) | (sat(a) << size)
    if size < 16:
        d |= (c << (2 * size))
    return d & 0xFFFFFFFF


PACK_VALUES = [0, 1, -1, 2, -2, 3, -3, 7, -8, 8, 15, 16, -16, 127, 128, -128, -129, 255, 256,
               32767, 32768, -32768, -32769, 65535, 65536, 2**31 - 1, -2**31, 0x12345678]


@pytest.mark.parametrize("ct", ["u16", "s16", "u8", "s8", "u4", "s4", "u2", "s2"])
def test_cvt_pack_sat(ct):
    pairs = [(a, b) for a in PACK_VALUES for b in PACK_VALUES[::2]]
    cs = [(i * 0x9E3779B9) & 0xFFFFFFFF for i in range(len(pairs))]
    wide = ct in ("u16", "s16")
    body = (f"cvt.pack.sat.{ct}.s32 %d, %a, %b;" if wide else f"cvt.pack.sat.{ct}.s32.b32 %d, %a, %b, %c;")
    ins = [("a", "s32", [a for a, _ in pairs]), ("b", "s32", [b for _, b in pairs])]
    if not wide:
        ins.append(("c", "b32", cs))
    d = run_op(body, ins, [("d", "b32")])
    same_ints(d, [_pack_model(ct, a, b, c) for (a, b), c in zip(pairs, cs)], "b32")


def test_cvt_pack_four_bytes_as_cutlass_does():
    """Two cvt.pack.sat.u8 in a row pack four s32 into the bytes of one word (CUTLASS's idiom)."""
    vals = [(-5, 300, 17, 255), (0, 1, 2, 3), (256, -1, 128, 127)]
    d = run_op("cvt.pack.sat.u8.s32.b32 %r9, %w, %z, 0;\ncvt.pack.sat.u8.s32.b32 %d, %y, %x, %r9;",
               [("x", "s32", [v[0] for v in vals]), ("y", "s32", [v[1] for v in vals]),
                ("z", "s32", [v[2] for v in vals]), ("w", "s32", [v[3] for v in vals])],
               [("d", "b32")])
    sat = lambda v: min(max(v, 0), 255)
    same_ints(d, [sat(x) | sat(y) << 8 | sat(z) << 16 | sat(w) << 24 for x, y, z, w in vals], "b32")
