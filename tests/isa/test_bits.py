"""Bit instructions: popc clz bfind brev bfe bfi prmt bmsk szext fns shf shl/shr lop3 cnot
not and/or/xor."""
import random

import numpy as np

from ._util import kernel_from_cuda, launch, run_op, same_ints, s, u

rng = random.Random(1234)
V32 = [0, 1, 2, 3, 0x80000000, 0x7FFFFFFF, 0xFFFFFFFF, 0xFFFFFFFE, 0x00010000, 0x12345678,
       0xDEADBEEF, 0x0000FFFF, 0xF0000000, 0x00000100] + [rng.getrandbits(32) for _ in range(18)]
V64 = [0, 1, 2**63, 2**63 - 1, 2**64 - 1, 0x123456789ABCDEF0, 0xFFFFFFFF, 2**32,
       0x8000000000000001] + [rng.getrandbits(64) for _ in range(7)]


def _bfind(x, bits, signed, shiftamt=False):
    if signed and x >> (bits - 1):
        x = ~x & ((1 << bits) - 1)
    if x == 0:
        return 0xFFFFFFFF
    d = x.bit_length() - 1
    return (bits - 1 - d) if shiftamt else d


def test_popc_clz_32_64():
    d, e = run_op("popc.b32 %d, %a;\nclz.b32 %e, %a;", [("a", "b32", V32)],
                  [("d", "u32"), ("e", "u32")])
    same_ints(d, [bin(x).count("1") for x in V32], "u32")
    same_ints(e, [32 - x.bit_length() for x in V32], "u32")
    f, g = run_op("popc.b64 %f, %a;\nclz.b64 %g, %a;", [("a", "b64", V64)],
                  [("f", "u32"), ("g", "u32")])
    same_ints(f, [bin(x).count("1") for x in V64], "u32")
    same_ints(g, [64 - x.bit_length() for x in V64], "u32")


def test_bfind_u32_s32_and_shiftamt():
    d, e, f, g = run_op("bfind.u32 %d, %a;\nbfind.s32 %e, %a;\n"
                        "bfind.shiftamt.u32 %f, %a;\nbfind.shiftamt.s32 %g, %a;",
                        [("a", "b32", V32)], [("d", "u32"), ("e", "u32"), ("f", "u32"), ("g", "u32")])
    same_ints(d, [_bfind(x, 32, False) for x in V32], "u32")
    same_ints(e, [_bfind(x, 32, True) for x in V32], "u32")
    same_ints(f, [_bfind(x, 32, False, True) for x in V32], "u32")
    same_ints(g, [_bfind(x, 32, True, True) for x in V32], "u32")


def test_bfind_64():
    d, e = run_op("bfind.u64 %d, %a;\nbfind.s64 %e, %a;", [("a", "b64", V64)],
                  [("d", "u32"), ("e", "u32")])
    same_ints(d, [_bfind(x, 64, False) for x in V64], "u32")
    same_ints(e, [_bfind(x, 64, True) for x in V64], "u32")


def _brev(x, bits):
    return int(format(x, f"0{bits}b")[::-1], 2)


def test_brev():
    d = run_op("brev.b32 %d, %a;", [("a", "b32", V32)], [("d", "b32")])
    same_ints(d, [_brev(x, 32) for x in V32], "b32")
    e = run_op("brev.b64 %e, %a;", [("a", "b64", V64)], [("e", "b64")])
    same_ints(e, [_brev(x, 64) for x in V64], "b64")


def _bfe(a, pos, ln, bits, signed):
    pos &= 0xFF
    ln &= 0xFF
    msb = bits - 1
    bit = lambda i: (a >> i) & 1  # noqa: E731
    sbit = 0 if (not signed or ln == 0) else bit(min(pos + ln - 1, msb))
    d = 0
    for i in range(bits):
        v = bit(pos + i) if (i < ln and pos + i <= msb) else sbit
        d |= v << i
    return d


BFE_CASES = [(a, p, n) for a in (0x80F0A5C3, 0x7F0F5A3C, 0xFFFFFFFF, 0x12345678)
             for p, n in ((0, 8), (4, 4), (28, 4), (24, 8), (16, 16), (0, 32), (0, 0),
                          (31, 1), (30, 8), (32, 4), (40, 3), (8, 0), (0, 40), (0x104, 4),
                          (4, 0x108), (255, 255), (1, 31))]


def test_bfe_u32_s32():
    d, e = run_op("bfe.u32 %d, %a, %b, %c;\nbfe.s32 %e, %a, %b, %c;",
                  [("a", "u32", [x[0] for x in BFE_CASES]), ("b", "u32", [x[1] for x in BFE_CASES]),
                   ("c", "u32", [x[2] for x in BFE_CASES])], [("d", "u32"), ("e", "u32")])
    same_ints(d, [_bfe(a, p, n, 32, False) for a, p, n in BFE_CASES], "u32")
    same_ints(e, [_bfe(a, p, n, 32, True) for a, p, n in BFE_CASES], "u32")


def test_bfe_u64_s64():
    cases = [(a, p, n) for a in (0x8000F0A5C3000001, 0x7FFF0F5A3C00FFFF, 2**64 - 1)
             for p, n in ((0, 8), (56, 8), (60, 8), (32, 32), (0, 64), (63, 1), (64, 3),
                          (0, 0), (100, 5), (20, 40))]
    d, e = run_op("bfe.u64 %d, %a, %b, %c;\nbfe.s64 %e, %a, %b, %c;",
                  [("a", "u64", [x[0] for x in cases]), ("b", "u32", [x[1] for x in cases]),
                   ("c", "u32", [x[2] for x in cases])], [("d", "u64"), ("e", "u64")])
    same_ints(d, [_bfe(a, p, n, 64, False) for a, p, n in cases], "u64")
    same_ints(e, [_bfe(a, p, n, 64, True) for a, p, n in cases], "u64")


def _bfi(a, b, pos, ln, bits):
    pos &= 0xFF
    ln &= 0xFF
    f = b
    i = 0
    while i < ln and pos + i <= bits - 1:
        f = (f & ~(1 << (pos + i))) | (((a >> i) & 1) << (pos + i))
        i += 1
    return f


def test_bfi_b32_b64():
    cases = [(0xABCDEF12, 0x11111111, p, n) for p, n in
             ((0, 8), (8, 8), (28, 8), (31, 1), (0, 32), (0, 0), (32, 4), (0x100, 4),
              (4, 0x104), (16, 40), (255, 1))]
    d = run_op("bfi.b32 %d, %a, %b, %c, %e;",
               [("a", "b32", [x[0] for x in cases]), ("b", "b32", [x[1] for x in cases]),
                ("c", "u32", [x[2] for x in cases]), ("e", "u32", [x[3] for x in cases])],
               [("d", "b32")])
    same_ints(d, [_bfi(a, b, p, n, 32) for a, b, p, n in cases], "b32")
    cases64 = [(0xFEDCBA9876543210, 0x5555555555555555, p, n) for p, n in
               ((0, 8), (60, 8), (32, 32), (0, 64), (64, 1), (10, 0))]
    d = run_op("bfi.b64 %d, %a, %b, %c, %e;",
               [("a", "b64", [x[0] for x in cases64]), ("b", "b64", [x[1] for x in cases64]),
                ("c", "u32", [x[2] for x in cases64]), ("e", "u32", [x[3] for x in cases64])],
               [("d", "b64")])
    same_ints(d, [_bfi(a, b, p, n, 64) for a, b, p, n in cases64], "b64")


# ---- prmt ------------------------------------------------------------------------------
MODES = {  # (d.b3, d.b2, d.b1, d.b0) selected source bytes for c[1:0] = 0..3
    "f4e": [(3, 2, 1, 0), (4, 3, 2, 1), (5, 4, 3, 2), (6, 5, 4, 3)],
    "b4e": [(5, 6, 7, 0), (6, 7, 0, 1), (7, 0, 1, 2), (0, 1, 2, 3)],
    "rc8": [(0, 0, 0, 0), (1, 1, 1, 1), (2, 2, 2, 2), (3, 3, 3, 3)],
    "ecl": [(3, 2, 1, 0), (3, 2, 1, 1), (3, 2, 2, 2), (3, 3, 3, 3)],
    "ecr": [(0, 0, 0, 0), (1, 1, 1, 0), (2, 2, 1, 0), (3, 2, 1, 0)],
    "rc16": [(1, 0, 1, 0), (3, 2, 3, 2), (1, 0, 1, 0), (3, 2, 3, 2)],
}


def _prmt(a, b, c, mode=None):
    src = (b << 32) | a
    byte = lambda i: (src >> (8 * i)) & 0xFF  # noqa: E731
    d = 0
    if mode is None:
        for i in range(4):
            sel = (c >> (4 * i)) & 0xF
            v = byte(sel & 7)
            if sel & 8:
                v = 0xFF if v & 0x80 else 0
            d |= v << (8 * i)
        return d
    sels = MODES[mode][c & 3]
    for i in range(4):
        d |= byte(sels[3 - i]) << (8 * i)
    return d


def test_prmt_generic():
    a, b = 0x809122B3, 0xC455E6FF
    ctls = [0x3210, 0x7654, 0x0123, 0x5410, 0x7531, 0x8888, 0xBA98, 0xFEDC, 0x0000, 0x1111,
            0x4444, 0xC840, 0xFFFF3210, 0x9D1E]
    d = run_op("prmt.b32 %d, %a, %b, %c;",
               [("a", "b32", [a] * len(ctls)), ("b", "b32", [b] * len(ctls)),
                ("c", "b32", ctls)], [("d", "b32")])
    same_ints(d, [_prmt(a, b, c) for c in ctls], "b32")
    assert _prmt(0x03020100, 0x07060504, 0x7531) == 0x07050301  # sanity of the reference


def test_prmt_modes():
    a, b = 0x809122B3, 0xC455E6FF
    for mode in MODES:
        cs = [0, 1, 2, 3, 0xFFFFFFF4, 0x8F97]
        d = run_op(f"prmt.b32.{mode} %d, %a, %b, %c;",
                   [("a", "b32", [a] * len(cs)), ("b", "b32", [b] * len(cs)), ("c", "b32", cs)],
                   [("d", "b32")])
        same_ints(d, [_prmt(a, b, c, mode) for c in cs], "b32")
    # a known case: c = 0x8F94 selects mode row 0
    assert _prmt(a, b, 0x8F94, "b4e") == 0xE655C4B3
    assert _prmt(a, b, 0x8F94, "rc16") == 0x22B322B3


# ---- fns ------------------------------------------------------------------------------
def _fns(mask, base, offset):
    """The PTX ISA pseudocode of fns.b32, step by step."""
    if offset == 0:
        return base if (mask >> base) & 1 else 0xFFFFFFFF
    pos, count, inc = base, abs(offset) - 1, 1 if offset > 0 else -1
    while 0 <= pos < 32:
        if (mask >> pos) & 1:
            if count == 0:
                return pos
            count -= 1
        pos += inc
    return 0xFFFFFFFF


def test_fns_against_the_isa_pseudocode():
    gen = np.random.default_rng(7)
    cases = [(0xAAAAAAAA, 3, 1), (0xAAAAAAAA, 3, -1), (0xAAAAAAAA, 2, 1), (0xAAAAAAAA, 2, -1),
             (0, 0, 1), (0, 5, 0), (0xFFFFFFFF, 31, 1), (0xFFFFFFFF, 31, -32), (0xFFFFFFFF, 0, 32),
             (0xFFFFFFFF, 0, 33), (0x80000001, 0, 2), (0x80000001, 31, -2), (0x80000001, 31, -3),
             (1, 0, 0), (2, 0, 0), (0x10, 4, 0), (0xFFFFFFFF, 0, -(2**31)), (0xFFFFFFFF, 0, 2**31 - 1)]
    cases += [(int(m), int(b), int(o)) for m, b, o in zip(gen.integers(0, 2**32, 200),
                                                         gen.integers(0, 32, 200),
                                                         gen.integers(-34, 35, 200))]
    d = run_op("fns.b32 %d, %m, %b, %o;",
               [("m", "b32", [m for m, _, _ in cases]), ("b", "u32", [b for _, b, _ in cases]),
                ("o", "s32", [o for _, _, o in cases])], [("d", "b32")])
    same_ints(d, [_fns(m, b, o) for m, b, o in cases], "b32")
    assert [_fns(0xAAAAAAAA, 3, 1), _fns(0xAAAAAAAA, 2, -1)] == [3, 1]   # the ISA's examples


def test_fns_from_cuda_in_a_warp_vectorized_kernel():
    """__fns from CUDA C, next to a shuffle (the warp executor runs it lane by lane)."""
    k = kernel_from_cuda(r'''
extern "C" __global__ void k(unsigned* out, const unsigned* m) {
    unsigned i = threadIdx.x;
    unsigned r = __fns(m[i], i % 32, (int)(i % 7) - 3);
    out[i] = r + __shfl_xor_sync(0xffffffffu, 0u, 1);
}''', "k")
    m = np.random.default_rng(3).integers(0, 2**32, 64, dtype=np.uint64).astype(np.uint32)
    out = np.zeros(64, np.uint32)
    launch(k, 1, 64, [out, m])
    assert out.tolist() == [_fns(int(m[i]), i % 32, i % 7 - 3) for i in range(64)]


# ---- bmsk / szext ----------------------------------------------------------------------
def _bmsk(a, b, clamp):
    a1 = a & 0x1F
    mask0 = (0xFFFFFFFF << a1) & 0xFFFFFFFF
    b1 = b & 0x1F
    sm = a1 + b1
    mask1 = (0xFFFFFFFF << sm) & 0xFFFFFFFF if sm < 32 else 0
    pos_ovf = width_ovf = False
    if clamp:
        if a >= 32:
            pos_ovf = True
            mask0 = 0
        if b >= 32:
            width_ovf = True
    if sm >= 32 or pos_ovf or width_ovf:
        mask1 = 0
    elif b1 == 0:
        mask1 = 0xFFFFFFFF
    return mask0 & ~mask1 & 0xFFFFFFFF


BMSK = [(1, 2), (0, 0), (0, 1), (0, 31), (0, 32), (4, 28), (4, 29), (31, 1), (31, 5), (32, 1),
        (33, 2), (5, 33), (0, 64), (16, 0), (40, 40), (3, 7)]


def test_bmsk_clamp_wrap():
    d, e = run_op("bmsk.clamp.b32 %d, %a, %b;\nbmsk.wrap.b32 %e, %a, %b;",
                  [("a", "u32", [x for x, _ in BMSK]), ("b", "u32", [y for _, y in BMSK])],
                  [("d", "b32"), ("e", "b32")])
    same_ints(d, [_bmsk(a, b, True) for a, b in BMSK], "b32")
    same_ints(e, [_bmsk(a, b, False) for a, b in BMSK], "b32")
    assert _bmsk(1, 2, False) == 6


def _szext(a, b, clamp, signed):
    b1 = b & 0x1F
    too_large = b >= 32 and clamp
    mask = 0 if too_large else (0xFFFFFFFF << b1) & 0xFFFFFFFF
    sign_pos = (b1 - 1) & 0x1F
    if b1 == 0 or too_large or not signed:
        sign_bit = 0
    else:
        sign_bit = (a >> sign_pos) & 1
    return ((a & ~mask) | (mask if sign_bit else 0)) & 0xFFFFFFFF


def test_szext():
    cases = [(0xFFFFFFFF, 0), (0x000000F0, 8), (0x00000070, 8), (0x8000, 16), (0x12345678, 4),
             (0xFFFF8000, 32), (0x89ABCDEF, 33), (0x89ABCDEF, 31), (0x89ABCDEF, 1), (0x1, 1),
             (0x40000000, 31), (0xABCDEF01, 40)]
    ins = [("a", "b32", [x for x, _ in cases]), ("b", "u32", [y for _, y in cases])]
    d, e, f, g = run_op("szext.clamp.s32 %d, %a, %b;\nszext.wrap.s32 %e, %a, %b;\n"
                        "szext.clamp.u32 %f, %a, %b;\nszext.wrap.u32 %g, %a, %b;", ins,
                        [("d", "b32"), ("e", "b32"), ("f", "b32"), ("g", "b32")])
    same_ints(d, [_szext(a, b, True, True) for a, b in cases], "b32")
    same_ints(e, [_szext(a, b, False, True) for a, b in cases], "b32")
    same_ints(f, [_szext(a, b, True, False) for a, b in cases], "b32")
    same_ints(g, [_szext(a, b, False, False) for a, b in cases], "b32")
    assert _szext(0xFFFFFFFF, 0, False, False) == 0


# ---- funnel shift and shifts ---------------------------------------------------------
SHF = [(0x89ABCDEF, 0x01234567, n) for n in (0, 1, 4, 8, 16, 31, 32, 33, 36, 63, 64, 100,
                                             0xFFFFFFFF)]


def _shf(a, b, c, left, clamp):
    n = min(c, 32) if clamp else c & 0x1F
    x = (b << 32) | a
    if left:
        return ((x << n) >> 32) & 0xFFFFFFFF
    return (x >> n) & 0xFFFFFFFF


def test_shf_l_r_wrap_clamp():
    ins = [("a", "b32", [x[0] for x in SHF]), ("b", "b32", [x[1] for x in SHF]),
           ("c", "u32", [x[2] for x in SHF])]
    d, e, f, g = run_op("shf.l.wrap.b32 %d, %a, %b, %c;\nshf.l.clamp.b32 %e, %a, %b, %c;\n"
                        "shf.r.wrap.b32 %f, %a, %b, %c;\nshf.r.clamp.b32 %g, %a, %b, %c;", ins,
                        [("d", "b32"), ("e", "b32"), ("f", "b32"), ("g", "b32")])
    same_ints(d, [_shf(a, b, c, True, False) for a, b, c in SHF], "b32")
    same_ints(e, [_shf(a, b, c, True, True) for a, b, c in SHF], "b32")
    same_ints(f, [_shf(a, b, c, False, False) for a, b, c in SHF], "b32")
    same_ints(g, [_shf(a, b, c, False, True) for a, b, c in SHF], "b32")


SHIFTS = [0, 1, 5, 31, 32, 33, 63, 64, 1000, 0xFFFFFFFF]


def test_shl_shr_32_clamped_at_width():
    vals = [0x80000001, 0x7FFFFFFF, 0xF0F0F0F0]
    cases = [(v, n) for v in vals for n in SHIFTS]
    ins = [("a", "b32", [v for v, _ in cases]), ("b", "u32", [n for _, n in cases])]
    d, e, f = run_op("shl.b32 %d, %a, %b;\nshr.u32 %e, %a, %b;\nshr.s32 %f, %a, %b;", ins,
                     [("d", "b32"), ("e", "u32"), ("f", "s32")])
    same_ints(d, [(v << min(n, 32)) for v, n in cases], "b32")
    same_ints(e, [v >> min(n, 32) for v, n in cases], "u32")
    same_ints(f, [s(v) >> min(n, 32) for v, n in cases], "s32")


def test_shl_shr_64_and_16():
    vals = [0x8000000000000001, 0x7FFFFFFFFFFFFFFF]
    cases = [(v, n) for v in vals for n in SHIFTS]
    ins = [("a", "b64", [v for v, _ in cases]), ("b", "u32", [n for _, n in cases])]
    d, e, f = run_op("shl.b64 %d, %a, %b;\nshr.u64 %e, %a, %b;\nshr.s64 %f, %a, %b;", ins,
                     [("d", "b64"), ("e", "u64"), ("f", "s64")])
    same_ints(d, [v << min(n, 64) for v, n in cases], "b64")
    same_ints(e, [v >> min(n, 64) for v, n in cases], "u64")
    same_ints(f, [s(v, 64) >> min(n, 64) for v, n in cases], "s64")
    v16 = [0x8001, 0x7FFF]
    c16 = [(v, n) for v in v16 for n in (0, 1, 15, 16, 17, 40)]
    ins = [("a", "b16", [v for v, _ in c16]), ("b", "u32", [n for _, n in c16])]
    g, h = run_op("shr.s16 %g, %a, %b;\nshl.b16 %h, %a, %b;", ins, [("g", "s16"), ("h", "b16")])
    same_ints(g, [s(v, 16) >> min(n, 16) for v, n in c16], "s16")
    same_ints(h, [v << min(n, 16) for v, n in c16], "b16")


def _lop3(a, b, c, lut):
    d = 0
    for i in range(32):
        idx = (((a >> i) & 1) << 2) | (((b >> i) & 1) << 1) | ((c >> i) & 1)
        d |= ((lut >> idx) & 1) << i
    return d


def test_lop3_luts():
    a, b, c = 0xF0F0CCAA, 0xCCAAF0F0, 0xAAF0CCCC
    luts = [0x00, 0xFF, 0xF0, 0xCC, 0xAA, 0x80, 0xFE, 0x96, 0xE8, 0xCA, 0x1E, 0x3C, 0x5A, 0x01]
    ins = [("a", "b32", [a]), ("b", "b32", [b]), ("c", "b32", [c])]
    body = "\n".join(f"lop3.b32 %r{i}, %a, %b, %c, {lut:#x};" for i, lut in enumerate(luts))
    body += "\n" + "\n".join(f"mov.b32 %d{i}, %r{i};" for i in range(len(luts)))
    outs = run_op(body, ins, [(f"d{i}", "b32") for i in range(len(luts))])
    for i, lut in enumerate(luts):
        same_ints(outs[i], [_lop3(a, b, c, lut)], "b32")
    assert _lop3(a, b, c, 0xF0) == a and _lop3(a, b, c, 0x96) == a ^ b ^ c


def test_logic_not_cnot():
    xs = V32[:16]
    ys = V32[16:32]
    ins = [("a", "b32", xs), ("b", "b32", ys)]
    d, e, f, g, h = run_op("and.b32 %d, %a, %b;\nor.b32 %e, %a, %b;\nxor.b32 %f, %a, %b;\n"
                           "not.b32 %g, %a;\ncnot.b32 %h, %a;", ins,
                           [("d", "b32"), ("e", "b32"), ("f", "b32"), ("g", "b32"), ("h", "b32")])
    same_ints(d, [x & y for x, y in zip(xs, ys)], "b32")
    same_ints(e, [x | y for x, y in zip(xs, ys)], "b32")
    same_ints(f, [x ^ y for x, y in zip(xs, ys)], "b32")
    same_ints(g, [~x for x in xs], "b32")
    same_ints(h, [1 if x == 0 else 0 for x in xs], "b32")


def test_predicate_logic():
    # and/or/xor/not on predicates
    cases = [(a, b) for a in (0, 1) for b in (0, 1)]
    ins = [("a", "pred", [a for a, _ in cases]), ("b", "pred", [b for _, b in cases])]
    d, e, f, g = run_op("and.pred %d, %a, %b;\nor.pred %e, %a, %b;\nxor.pred %f, %a, %b;\n"
                        "not.pred %g, %a;", ins,
                        [("d", "pred"), ("e", "pred"), ("f", "pred"), ("g", "pred")])
    same_ints(d, [a & b for a, b in cases], "u32")
    same_ints(e, [a | b for a, b in cases], "u32")
    same_ints(f, [a ^ b for a, b in cases], "u32")
    same_ints(g, [1 - a for a, _ in cases], "u32")


def test_64bit_logic_and_popc_u():
    xs = V64
    ys = V64[::-1]
    d, e = run_op("xor.b64 %d, %a, %b;\nnot.b64 %e, %a;", [("a", "b64", xs), ("b", "b64", ys)],
                  [("d", "b64"), ("e", "b64")])
    same_ints(d, [x ^ y for x, y in zip(xs, ys)], "b64")
    same_ints(e, [~x for x in xs], "b64")
    assert u(-1) == 0xFFFFFFFF


def test_bfind_shiftamt_64():
    d, e = run_op("bfind.shiftamt.u64 %d, %a;\nbfind.shiftamt.s64 %e, %a;", [("a", "b64", V64)],
                  [("d", "u32"), ("e", "u32")])
    same_ints(d, [_bfind(x, 64, False, True) for x in V64], "u32")
    same_ints(e, [_bfind(x, 64, True, True) for x in V64], "u32")
