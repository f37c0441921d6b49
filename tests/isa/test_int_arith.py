"""Integer arithmetic: add/sub/mul/mad (lo/hi/wide), mul24/mad24, sad, div/rem, abs/neg,
min/max, saturating add/sub and carry chains."""

import numpy as np

from ._util import run_op, same_ints, s, u

I32 = [0, 1, -1, 2, -2, 7, -7, 100, -100, 0x7FFFFFFF, -0x80000000, 0x12345678, -0x12345678,
       65536, -65536, 0x40000000, 46341, -46341, 3, 0x7FFFFFFE]
# pair every value with every other: a list of (a, b)
PAIRS = [(a, b) for a in I32 for b in I32[::3]]
A = [a for a, _ in PAIRS]
B = [b for _, b in PAIRS]
I64 = [0, 1, -1, 2**63 - 1, -2**63, 0x123456789ABCDEF, -0x123456789ABCDEF, 2**32, -(2**32),
       0xFFFFFFFF, 3, -3, 2**40 + 5]
PAIRS64 = [(a, b) for a in I64 for b in I64]
A64 = [a for a, _ in PAIRS64]
B64 = [b for _, b in PAIRS64]


def test_add_sub_s32_wraps():
    d, e = run_op("add.s32 %d, %a, %b;\nsub.s32 %e, %a, %b;",
                  [("a", "s32", A), ("b", "s32", B)], [("d", "s32"), ("e", "s32")])
    same_ints(d, [a + b for a, b in PAIRS], "s32")
    same_ints(e, [a - b for a, b in PAIRS], "s32")


def test_add_sub_u64():
    d, e = run_op("add.u64 %d, %a, %b;\nsub.u64 %e, %a, %b;",
                  [("a", "u64", A64), ("b", "u64", B64)], [("d", "u64"), ("e", "u64")])
    same_ints(d, [a + b for a, b in PAIRS64], "u64")
    same_ints(e, [a - b for a, b in PAIRS64], "u64")


def test_add_sub_sat_s32():
    d, e = run_op("add.sat.s32 %d, %a, %b;\nsub.sat.s32 %e, %a, %b;",
                  [("a", "s32", A), ("b", "s32", B)], [("d", "s32"), ("e", "s32")])

    def clamp(x):
        return max(-2**31, min(2**31 - 1, x))
    same_ints(d, [clamp(a + b) for a, b in PAIRS], "s32")
    same_ints(e, [clamp(a - b) for a, b in PAIRS], "s32")


def test_mul_lo_hi_s32():
    d, e = run_op("mul.lo.s32 %d, %a, %b;\nmul.hi.s32 %e, %a, %b;",
                  [("a", "s32", A), ("b", "s32", B)], [("d", "s32"), ("e", "s32")])
    same_ints(d, [a * b for a, b in PAIRS], "s32")
    same_ints(e, [(a * b) >> 32 for a, b in PAIRS], "s32")


def test_mul_lo_hi_u32():
    d, e = run_op("mul.lo.u32 %d, %a, %b;\nmul.hi.u32 %e, %a, %b;",
                  [("a", "u32", A), ("b", "u32", B)], [("d", "u32"), ("e", "u32")])
    same_ints(d, [u(a) * u(b) for a, b in PAIRS], "u32")
    same_ints(e, [(u(a) * u(b)) >> 32 for a, b in PAIRS], "u32")


def test_mul_wide_s32_u32():
    d, e = run_op("mul.wide.s32 %d, %a, %b;\nmul.wide.u32 %e, %a, %b;",
                  [("a", "s32", A), ("b", "s32", B)], [("d", "s64"), ("e", "u64")])
    same_ints(d, [a * b for a, b in PAIRS], "s64")
    same_ints(e, [u(a) * u(b) for a, b in PAIRS], "u64")


def test_mul_wide_s16_u16():
    vals = [0, 1, -1, 0x7FFF, -0x8000, 1234, -1234, 255, -256]
    pairs = [(a, b) for a in vals for b in vals]
    d, e = run_op("mul.wide.s16 %d, %a, %b;\nmul.wide.u16 %e, %a, %b;",
                  [("a", "s16", [a for a, _ in pairs]), ("b", "s16", [b for _, b in pairs])],
                  [("d", "s32"), ("e", "u32")])
    same_ints(d, [a * b for a, b in pairs], "s32")
    same_ints(e, [u(a, 16) * u(b, 16) for a, b in pairs], "u32")


def test_mul_lo_hi_s64_u64():
    d, e, f = run_op("mul.lo.s64 %d, %a, %b;\nmul.hi.s64 %e, %a, %b;\nmul.hi.u64 %f, %a, %b;",
                     [("a", "s64", A64), ("b", "s64", B64)],
                     [("d", "s64"), ("e", "s64"), ("f", "u64")])
    same_ints(d, [a * b for a, b in PAIRS64], "s64")
    same_ints(e, [(a * b) >> 64 for a, b in PAIRS64], "s64")
    same_ints(f, [(u(a, 64) * u(b, 64)) >> 64 for a, b in PAIRS64], "u64")


def test_mad_lo_hi_wide():
    C = [(i * 0x9E3779B9) - 2**31 for i in range(len(A))]
    C = [s(c) for c in C]
    d, e, f = run_op("mad.lo.s32 %d, %a, %b, %c;\nmad.hi.s32 %e, %a, %b, %c;\n"
                     "cvt.s64.s32 %rd1, %c;\nmad.wide.s32 %f, %a, %b, %rd1;",
                     [("a", "s32", A), ("b", "s32", B), ("c", "s32", C)],
                     [("d", "s32"), ("e", "s32"), ("f", "s64")])
    same_ints(d, [a * b + c for a, b, c in zip(A, B, C)], "s32")
    same_ints(e, [((a * b) >> 32) + c for a, b, c in zip(A, B, C)], "s32")
    same_ints(f, [a * b + c for a, b, c in zip(A, B, C)], "s64")


def test_mad_hi_u32_and_wide_u32():
    C = [u(i * 0x9E3779B9) for i in range(len(A))]
    d, e = run_op("mad.hi.u32 %d, %a, %b, %c;\ncvt.u64.u32 %rd1, %c;\n"
                  "mad.wide.u32 %e, %a, %b, %rd1;",
                  [("a", "u32", A), ("b", "u32", B), ("c", "u32", C)],
                  [("d", "u32"), ("e", "u64")])
    same_ints(d, [((u(a) * u(b)) >> 32) + c for a, b, c in zip(A, B, C)], "u32")
    same_ints(e, [u(a) * u(b) + c for a, b, c in zip(A, B, C)], "u64")


def _s24(x):
    x &= 0xFFFFFF
    return x - (1 << 24) if x & 0x800000 else x


def test_mul24_lo_hi():
    # mul24 multiplies the low 24 bits (sign-extended for .s32); .lo: low 32 bits of the
    # 48-bit product, .hi: bits 47..16 of it.
    d, e, f, g = run_op("mul24.lo.s32 %d, %a, %b;\nmul24.hi.s32 %e, %a, %b;\n"
                        "mul24.lo.u32 %f, %a, %b;\nmul24.hi.u32 %g, %a, %b;",
                        [("a", "s32", A), ("b", "s32", B)],
                        [("d", "s32"), ("e", "s32"), ("f", "u32"), ("g", "u32")])
    same_ints(d, [_s24(a) * _s24(b) for a, b in PAIRS], "s32")
    same_ints(e, [(_s24(a) * _s24(b)) >> 16 for a, b in PAIRS], "s32")
    same_ints(f, [(a & 0xFFFFFF) * (b & 0xFFFFFF) for a, b in PAIRS], "u32")
    same_ints(g, [((a & 0xFFFFFF) * (b & 0xFFFFFF)) >> 16 for a, b in PAIRS], "u32")


def test_mad24_lo():
    C = [s(i * 0x3779B9) for i in range(len(A))]
    d, e = run_op("mad24.lo.s32 %d, %a, %b, %c;\nmad24.lo.u32 %e, %a, %b, %c;",
                  [("a", "s32", A), ("b", "s32", B), ("c", "s32", C)],
                  [("d", "s32"), ("e", "u32")])
    same_ints(d, [_s24(a) * _s24(b) + c for a, b, c in zip(A, B, C)], "s32")
    same_ints(e, [(a & 0xFFFFFF) * (b & 0xFFFFFF) + c for a, b, c in zip(A, B, C)], "u32")


def test_sad_s32_u32():
    C = [s(i * 12345) for i in range(len(A))]
    d, e = run_op("sad.s32 %d, %a, %b, %c;\nsad.u32 %e, %a, %b, %c;",
                  [("a", "s32", A), ("b", "s32", B), ("c", "s32", C)],
                  [("d", "s32"), ("e", "u32")])
    same_ints(d, [c + abs(a - b) for a, b, c in zip(A, B, C)], "s32")
    same_ints(e, [c + abs(u(a) - u(b)) for a, b, c in zip(A, B, C)], "u32")


def _tdiv(a, b):
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def test_div_rem_s32_truncates_toward_zero():
    pairs = [(a, b) for a, b in PAIRS if b != 0 and not (a == -2**31 and b == -1)]
    d, e = run_op("div.s32 %d, %a, %b;\nrem.s32 %e, %a, %b;",
                  [("a", "s32", [a for a, _ in pairs]), ("b", "s32", [b for _, b in pairs])],
                  [("d", "s32"), ("e", "s32")])
    same_ints(d, [_tdiv(a, b) for a, b in pairs], "s32")
    # remainder has the sign of the dividend
    same_ints(e, [a - _tdiv(a, b) * b for a, b in pairs], "s32")


def test_div_rem_32_bit_exact_where_the_quotient_is_nearly_whole():
    """32-bit division by a divisor known at run time goes through doubles on the CPU:
    quotients just under, at and just over whole numbers, over the whole range of both
    operands and both signs, against exact integer arithmetic."""
    rng = np.random.default_rng(11)
    b = rng.integers(-2**31, 2**31, 4000, dtype=np.int64)
    b[:300] = rng.integers(-70000, 70000, 300)          # small divisors: large quotients
    b[b == 0] = 7
    q = rng.integers(-2**31, 2**31, b.size) // np.maximum(1, np.abs(b))
    a = np.concatenate([q * b - 1, q * b, q * b + 1, q * b + b - 1, q * b - b + 1,
                        rng.integers(-2**31, 2**31, b.size)])
    bb = np.tile(b, 6)
    keep = (a >= -2**31) & (a < 2**31) & ~((a == -2**31) & (bb == -1))
    a, bb = a[keep].tolist(), bb[keep].tolist()
    d, e = run_op("div.s32 %d, %a, %b;\nrem.s32 %e, %a, %b;",
                  [("a", "s32", a), ("b", "s32", bb)], [("d", "s32"), ("e", "s32")])
    same_ints(d, [_tdiv(x, y) for x, y in zip(a, bb)], "s32")
    same_ints(e, [x - _tdiv(x, y) * y for x, y in zip(a, bb)], "s32")
    ua, ub = [x % 2**32 for x in a], [y % 2**32 for y in bb]
    d, e = run_op("div.u32 %d, %a, %b;\nrem.u32 %e, %a, %b;",
                  [("a", "u32", ua), ("b", "u32", ub)], [("d", "u32"), ("e", "u32")])
    same_ints(d, [x // y for x, y in zip(ua, ub)], "u32")
    same_ints(e, [x % y for x, y in zip(ua, ub)], "u32")


def test_div_rem_small_negative_cases():
    cases = [(7, 2), (-7, 2), (7, -2), (-7, -2), (1, 3), (-1, 3), (-6, 3), (6, -3)]
    d, e = run_op("div.s32 %d, %a, %b;\nrem.s32 %e, %a, %b;",
                  [("a", "s32", [a for a, _ in cases]), ("b", "s32", [b for _, b in cases])],
                  [("d", "s32"), ("e", "s32")])
    same_ints(d, [3, -3, -3, 3, 0, 0, -2, -2], "s32")
    same_ints(e, [1, -1, 1, -1, 1, -1, 0, 0], "s32")


def test_div_rem_u32_u64_s64():
    pairs = [(a, b) for a, b in PAIRS if b != 0]
    d, e = run_op("div.u32 %d, %a, %b;\nrem.u32 %e, %a, %b;",
                  [("a", "u32", [a for a, _ in pairs]), ("b", "u32", [b for _, b in pairs])],
                  [("d", "u32"), ("e", "u32")])
    same_ints(d, [u(a) // u(b) for a, b in pairs], "u32")
    same_ints(e, [u(a) % u(b) for a, b in pairs], "u32")
    p64 = [(a, b) for a, b in PAIRS64 if b != 0 and not (a == -2**63 and b == -1)]
    f, g, h, k = run_op("div.s64 %f, %a, %b;\nrem.s64 %g, %a, %b;\n"
                        "div.u64 %h, %a, %b;\nrem.u64 %k, %a, %b;",
                        [("a", "s64", [a for a, _ in p64]), ("b", "s64", [b for _, b in p64])],
                        [("f", "s64"), ("g", "s64"), ("h", "u64"), ("k", "u64")])
    same_ints(f, [_tdiv(a, b) for a, b in p64], "s64")
    same_ints(g, [a - _tdiv(a, b) * b for a, b in p64], "s64")
    same_ints(h, [u(a, 64) // u(b, 64) for a, b in p64], "u64")
    same_ints(k, [u(a, 64) % u(b, 64) for a, b in p64], "u64")


def test_abs_neg():
    vals = [v for v in I32 if v != -2**31]
    d, e = run_op("abs.s32 %d, %a;\nneg.s32 %e, %a;", [("a", "s32", vals)],
                  [("d", "s32"), ("e", "s32")])
    same_ints(d, [abs(v) for v in vals], "s32")
    same_ints(e, [-v for v in vals], "s32")
    vals64 = [v for v in I64 if v != -2**63]
    f, g = run_op("abs.s64 %f, %a;\nneg.s64 %g, %a;", [("a", "s64", vals64)],
                  [("f", "s64"), ("g", "s64")])
    same_ints(f, [abs(v) for v in vals64], "s64")
    same_ints(g, [-v for v in vals64], "s64")


def test_neg_int_min_wraps():
    d = run_op("neg.s32 %d, %a;", [("a", "s32", [-2**31])], [("d", "s32")])
    same_ints(d, [-2**31], "s32")


def test_min_max_signed_unsigned():
    d, e, f, g = run_op("min.s32 %d, %a, %b;\nmax.s32 %e, %a, %b;\n"
                        "min.u32 %f, %a, %b;\nmax.u32 %g, %a, %b;",
                        [("a", "s32", A), ("b", "s32", B)],
                        [("d", "s32"), ("e", "s32"), ("f", "u32"), ("g", "u32")])
    same_ints(d, [min(a, b) for a, b in PAIRS], "s32")
    same_ints(e, [max(a, b) for a, b in PAIRS], "s32")
    same_ints(f, [min(u(a), u(b)) for a, b in PAIRS], "u32")
    same_ints(g, [max(u(a), u(b)) for a, b in PAIRS], "u32")


def test_min_max_64():
    d, e, f, g = run_op("min.s64 %d, %a, %b;\nmax.s64 %e, %a, %b;\n"
                        "min.u64 %f, %a, %b;\nmax.u64 %g, %a, %b;",
                        [("a", "s64", A64), ("b", "s64", B64)],
                        [("d", "s64"), ("e", "s64"), ("f", "u64"), ("g", "u64")])
    same_ints(d, [min(a, b) for a, b in PAIRS64], "s64")
    same_ints(e, [max(a, b) for a, b in PAIRS64], "s64")
    same_ints(f, [min(u(a, 64), u(b, 64)) for a, b in PAIRS64], "u64")
    same_ints(g, [max(u(a, 64), u(b, 64)) for a, b in PAIRS64], "u64")


def test_16bit_add_mul():
    vals = [0, 1, -1, 0x7FFF, -0x8000, 300, -300, 255]
    pairs = [(a, b) for a in vals for b in vals]
    d, e = run_op("add.s16 %d, %a, %b;\nmul.lo.u16 %e, %a, %b;",
                  [("a", "s16", [a for a, _ in pairs]), ("b", "s16", [b for _, b in pairs])],
                  [("d", "s16"), ("e", "u16")])
    same_ints(d, [a + b for a, b in pairs], "s16")
    same_ints(e, [a * b for a, b in pairs], "u16")


# ---- carry chains --------------------------------------------------------------------
def _limbs(x, n=4):
    return [(x >> (32 * i)) & 0xFFFFFFFF for i in range(n)]


BIG = [0, 1, 2**128 - 1, 2**96 - 1, 2**32 - 1, 2**64 - 1, 0x0123456789ABCDEF0011223344556677,
       0xFFFFFFFF00000000FFFFFFFF00000000, 2**127, 12345678901234567890123]
BIGPAIRS = [(x, y) for x in BIG for y in BIG]


def _carry_io():
    ins = []
    for nm, idx in (("a", 0), ("b", 1)):
        for i in range(4):
            ins.append((f"{nm}{i}", "u32", [_limbs(p[idx])[i] for p in BIGPAIRS]))
    return ins


def test_add_cc_addc_128bit():
    body = ("add.cc.u32 %d0, %a0, %b0;\naddc.cc.u32 %d1, %a1, %b1;\n"
            "addc.cc.u32 %d2, %a2, %b2;\naddc.cc.u32 %d3, %a3, %b3;\naddc.u32 %d4, 0, 0;")
    outs = run_op(body, _carry_io(), [(f"d{i}", "u32") for i in range(5)])
    for i in range(5):
        same_ints(outs[i], [((x + y) >> (32 * i)) & 0xFFFFFFFF for x, y in BIGPAIRS], "u32")


def test_sub_cc_subc_128bit():
    body = ("sub.cc.u32 %d0, %a0, %b0;\nsubc.cc.u32 %d1, %a1, %b1;\n"
            "subc.cc.u32 %d2, %a2, %b2;\nsubc.cc.u32 %d3, %a3, %b3;\nsubc.u32 %d4, 0, 0;")
    outs = run_op(body, _carry_io(), [(f"d{i}", "u32") for i in range(5)])
    for i in range(4):
        same_ints(outs[i], [((x - y) >> (32 * i)) & 0xFFFFFFFF for x, y in BIGPAIRS], "u32")
    # final borrow: 0 - 0 - borrow = 0xFFFFFFFF when x < y
    same_ints(outs[4], [0xFFFFFFFF if x < y else 0 for x, y in BIGPAIRS], "u32")


def test_carry_after_a_subtraction_is_not_borrow():
    """The hardware keeps CC.CF as the carry of a + ~b + 1: after sub.cc it is 1 where no
    borrow happened, which addc reads back (ZLUDA's subc_cc_s32, checked on an NVIDIA GPU:
    a = 0x627ADF75, b = 0x864CCEF5 gives d = 0xDC2E1080 and a carry of 0). subc consumes it
    the same way: a + ~b + CC.CF."""
    pairs = [(0x627ADF75, 0x864CCEF5), (5, 3), (3, 5), (7, 7), (0, 0xFFFFFFFF)]
    d, c, e = run_op("sub.cc.s32 %d, %a, %b;\naddc.u32 %c, 0, 0;\n"
                     "add.cc.u32 %t, 0xFFFFFFFF, 1;\nsubc.u32 %e, %a, %b;",
                     [("a", "u32", [a for a, _ in pairs]), ("b", "u32", [b for _, b in pairs]),
                      ("t", "u32", [0] * len(pairs))],
                     [("d", "u32"), ("c", "u32"), ("e", "u32")])
    same_ints(d, [(a - b) & 0xFFFFFFFF for a, b in pairs], "u32")
    same_ints(c, [int(a >= b) for a, b in pairs], "u32")
    # after add.cc set the carry: a + ~b + 1, no borrow taken
    same_ints(e, [(a - b) & 0xFFFFFFFF for a, b in pairs], "u32")


def test_addc_without_cc_does_not_write_carry():
    # addc (no .cc) consumes CC.CF but leaves it; a following addc sees the same carry.
    body = ("add.cc.u32 %d0, %a0, %b0;\naddc.u32 %d1, 0, 0;\naddc.u32 %d2, 0, 0;")
    vals = [(0xFFFFFFFF, 1), (0xFFFFFFFF, 0), (0x80000000, 0x80000000), (5, 6)]
    d0, d1, d2 = run_op(body, [("a0", "u32", [a for a, _ in vals]),
                               ("b0", "u32", [b for _, b in vals])],
                        [("d0", "u32"), ("d1", "u32"), ("d2", "u32")])
    same_ints(d0, [(a + b) & 0xFFFFFFFF for a, b in vals], "u32")
    same_ints(d1, [(a + b) >> 32 for a, b in vals], "u32")
    same_ints(d2, [(a + b) >> 32 for a, b in vals], "u32")


def test_mad_cc_madc_64bit_product_plus_addend():
    # (a*b + c) over 64 bits from 32-bit pieces: lo via mad.lo.cc, hi via madc.hi.
    vals = [0, 1, 0xFFFFFFFF, 0x80000000, 0x12345678, 0xDEADBEEF]
    cs = [0, 1, 2**64 - 1, 0xFFFFFFFF, 2**63, 0x0123456789ABCDEF]
    cases = [(a, b, c) for a in vals for b in vals for c in cs]
    body = ("mad.lo.cc.u32 %d0, %a, %b, %c0;\nmadc.hi.cc.u32 %d1, %a, %b, %c1;\n"
            "addc.u32 %d2, 0, 0;")
    d0, d1, d2 = run_op(body, [("a", "u32", [x[0] for x in cases]),
                               ("b", "u32", [x[1] for x in cases]),
                               ("c0", "u32", [x[2] & 0xFFFFFFFF for x in cases]),
                               ("c1", "u32", [x[2] >> 32 for x in cases])],
                        [("d0", "u32"), ("d1", "u32"), ("d2", "u32")])
    full = [a * b + c for a, b, c in cases]
    same_ints(d0, [v & 0xFFFFFFFF for v in full], "u32")
    same_ints(d1, [(v >> 32) & 0xFFFFFFFF for v in full], "u32")
    same_ints(d2, [v >> 64 for v in full], "u32")


def test_mad24_hi():
    C = [s(i * 0x1779B9) for i in range(len(A))]
    d, e = run_op("mad24.hi.s32 %d, %a, %b, %c;\nmad24.hi.u32 %e, %a, %b, %c;",
                  [("a", "s32", A), ("b", "s32", B), ("c", "s32", C)],
                  [("d", "s32"), ("e", "u32")])
    same_ints(d, [((_s24(a) * _s24(b)) >> 16) + c for a, b, c in zip(A, B, C)], "s32")
    same_ints(e, [(((a & 0xFFFFFF) * (b & 0xFFFFFF)) >> 16) + c for a, b, c in zip(A, B, C)], "u32")


V16 = [0, 1, -1, 2, 7, -7, 300, -300, 0x7FFF, -0x8000, 255, 0x1234]
P16 = [(a, b) for a in V16 for b in V16]


def test_16bit_family():
    ins = [("a", "s16", [a for a, _ in P16]), ("b", "s16", [b for _, b in P16])]
    body = ("sub.s16 %d0, %a, %b;\nmul.hi.s16 %d1, %a, %b;\nmul.hi.u16 %d2, %a, %b;\n"
            "min.s16 %d3, %a, %b;\nmax.u16 %d4, %a, %b;\nabs.s16 %d5, %a;\nneg.s16 %d6, %a;\n"
            "mad.lo.s16 %d7, %a, %b, %a;")
    outs = run_op(body, ins, [(f"d{i}", "s16") for i in range(8)])
    u16 = lambda x: x % 65536  # noqa: E731
    same_ints(outs[0], [a - b for a, b in P16], "s16")
    same_ints(outs[1], [(a * b) >> 16 for a, b in P16], "s16")
    same_ints(outs[2], [(u16(a) * u16(b)) >> 16 for a, b in P16], "s16")
    same_ints(outs[3], [min(a, b) for a, b in P16], "s16")
    same_ints(outs[4], [max(u16(a), u16(b)) for a, b in P16], "s16")
    same_ints(outs[5], [abs(a) for a, _ in P16], "s16")
    same_ints(outs[6], [-a for a, _ in P16], "s16")
    same_ints(outs[7], [a * b + a for a, b in P16], "s16")


def test_16bit_div_rem():
    pairs = [(a, b) for a, b in P16 if b != 0 and not (a == -0x8000 and b == -1)]
    ins = [("a", "s16", [a for a, _ in pairs]), ("b", "s16", [b for _, b in pairs])]
    d, e, f, g = run_op("div.s16 %d, %a, %b;\nrem.s16 %e, %a, %b;\ndiv.u16 %f, %a, %b;\n"
                        "rem.u16 %g, %a, %b;", ins,
                        [("d", "s16"), ("e", "s16"), ("f", "u16"), ("g", "u16")])
    same_ints(d, [_tdiv(a, b) for a, b in pairs], "s16")
    same_ints(e, [a - _tdiv(a, b) * b for a, b in pairs], "s16")
    same_ints(f, [(a % 65536) // (b % 65536) for a, b in pairs], "u16")
    same_ints(g, [(a % 65536) % (b % 65536) for a, b in pairs], "u16")


def test_add_cc_64bit_and_s32_carry():
    # add.cc on 64-bit operands and signed 32-bit types chain carries the same way
    pairs = [(2**64 - 1, 1), (2**63, 2**63), (5, 7), (2**64 - 1, 2**64 - 1)]
    d, e = run_op("add.cc.u64 %d, %a, %b;\naddc.u64 %e, 0, 0;",
                  [("a", "u64", [a for a, _ in pairs]), ("b", "u64", [b for _, b in pairs])],
                  [("d", "u64"), ("e", "u64")])
    same_ints(d, [a + b for a, b in pairs], "u64")
    same_ints(e, [(a + b) >> 64 for a, b in pairs], "u64")
    f, g = run_op("sub.cc.s32 %f, %a, %b;\nsubc.s32 %g, 0, 0;",
                  [("a", "s32", [0, 5, -1]), ("b", "s32", [1, 3, -1])], [("f", "s32"), ("g", "s32")])
    same_ints(f, [-1, 2, 0], "s32")
    same_ints(g, [-1, 0, 0], "s32")


def _bytes(x, signed):
    out = [(x >> (8 * i)) & 0xFF for i in range(4)]
    return [b - 256 if signed and b >= 128 else b for b in out]


def _halves(x, signed):
    out = [(x >> (16 * i)) & 0xFFFF for i in range(2)]
    return [h - 65536 if signed and h >= 32768 else h for h in out]


DPA = [0x01020304, 0xFFFFFFFF, 0x80807F7F, 0x12345678, 0x00FF00FF, 0x7FFF8000]
DPB = [0x04030201, 0x80FF017F, 0xFFFFFFFF, 0x9ABCDEF0, 0x01010101, 0x11223344]
DPC = [0, 5, -100, 0x7FFFFFF0, -1, 1000]


def test_dp4a_all_signedness():
    ins = [("a", "u32", DPA), ("b", "u32", DPB), ("c", "s32", DPC)]
    outs = run_op("dp4a.u32.u32 %d0, %a, %b, %c;\ndp4a.s32.s32 %d1, %a, %b, %c;\n"
                  "dp4a.s32.u32 %d2, %a, %b, %c;\ndp4a.u32.s32 %d3, %a, %b, %c;", ins,
                  [(f"d{i}", "u32") for i in range(4)])
    for k, (sa, sb) in enumerate([(False, False), (True, True), (True, False), (False, True)]):
        want = [c + sum(x * y for x, y in zip(_bytes(a, sa), _bytes(b, sb)))
                for a, b, c in zip(DPA, DPB, DPC)]
        same_ints(outs[k], want, "u32")


def test_dp2a_lo_hi():
    ins = [("a", "u32", DPA), ("b", "u32", DPB), ("c", "s32", DPC)]
    outs = run_op("dp2a.lo.s32.s32 %d0, %a, %b, %c;\ndp2a.hi.s32.s32 %d1, %a, %b, %c;\n"
                  "dp2a.lo.u32.u32 %d2, %a, %b, %c;\ndp2a.hi.u32.s32 %d3, %a, %b, %c;", ins,
                  [(f"d{i}", "u32") for i in range(4)])
    for k, (hi, sa, sb) in enumerate([(False, True, True), (True, True, True),
                                      (False, False, False), (True, False, True)]):
        want = []
        for a, b, c in zip(DPA, DPB, DPC):
            hs = _halves(a, sa)
            bs = _bytes(b, sb)[2:] if hi else _bytes(b, sb)[:2]
            want.append(c + hs[0] * bs[0] + hs[1] * bs[1])
        same_ints(outs[k], want, "u32")


def test_mad_64bit_and_sad_s64():
    C64 = [(i * 0x9E3779B97F4A7C15) % 2**64 for i in range(len(A64))]
    d, e, f, g = run_op("mad.lo.s64 %d, %a, %b, %c;\nmad.hi.s64 %e, %a, %b, %c;\n"
                        "mad.hi.u64 %f, %a, %b, %c;\nsad.s64 %g, %a, %b, %c;",
                        [("a", "s64", A64), ("b", "s64", B64), ("c", "u64", C64)],
                        [("d", "s64"), ("e", "s64"), ("f", "u64"), ("g", "s64")])
    same_ints(d, [a * b + c for a, b, c in zip(A64, B64, C64)], "s64")
    same_ints(e, [((a * b) >> 64) + c for a, b, c in zip(A64, B64, C64)], "s64")
    same_ints(f, [((u(a, 64) * u(b, 64)) >> 64) + c for a, b, c in zip(A64, B64, C64)], "u64")
    same_ints(g, [abs(a - b) + c for a, b, c in zip(A64, B64, C64)], "s64")
