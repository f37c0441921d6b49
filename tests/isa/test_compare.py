"""setp (every comparison, with NaN; combined with a predicate through .and/.or/.xor, incl.
negated), selp, slct and set."""
import math

import numpy as np
import pytest

from ._util import run_op, same_bits32, same_ints, u

NAN = float("nan")
INF = float("inf")
IVALS = [0, 1, -1, 5, -5, 0x7FFFFFFF, -0x80000000, 100]
IPAIRS = [(a, b) for a in IVALS for b in IVALS]
INT_CMP = {
    "eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b,
}
UNS_CMP = {"lo": lambda a, b: a < b, "ls": lambda a, b: a <= b,
           "hi": lambda a, b: a > b, "hs": lambda a, b: a >= b}


@pytest.mark.parametrize("ty", ["s32", "u32", "s64", "u64", "s16", "b32"])
def test_setp_integer_all_comparisons(ty):
    bits = int(ty[1:])
    signed = ty[0] == "s"
    ops = list(INT_CMP) + list(UNS_CMP) if ty[0] != "b" else ["eq", "ne"]
    if ty[0] == "u":
        ops = list(INT_CMP) + list(UNS_CMP)
    if ty[0] == "s":
        ops = list(INT_CMP)
    pairs = [(a % (1 << bits), b % (1 << bits)) for a, b in IPAIRS]
    if signed:
        pairs = [(a - (1 << bits) if a >> (bits - 1) else a, b - (1 << bits) if b >> (bits - 1) else b)
                 for a, b in pairs]
    body = "\n".join(f"setp.{op}.{ty} %{op}, %a, %b;" for op in ops)
    outs = run_op(body, [("a", ty, [a for a, _ in pairs]), ("b", ty, [b for _, b in pairs])],
                  [(op, "pred") for op in ops])
    outs = outs if isinstance(outs, list) else [outs]
    for op, got in zip(ops, outs):
        f = INT_CMP.get(op) or UNS_CMP[op]
        same_ints(got, [int(f(a, b)) for a, b in pairs], "u32")


FVALS = [0.0, -0.0, 1.0, -1.0, 2.5, INF, -INF, NAN]
FPAIRS = [(a, b) for a in FVALS for b in FVALS]
ORDERED = {"eq": lambda a, b: a == b, "ne": lambda a, b: a != b and not (math.isnan(a) or math.isnan(b)),
           "lt": lambda a, b: a < b, "le": lambda a, b: a <= b, "gt": lambda a, b: a > b,
           "ge": lambda a, b: a >= b}


def _unordered(op):
    base = {"equ": "eq", "neu": "ne", "ltu": "lt", "leu": "le", "gtu": "gt", "geu": "ge"}[op]
    return lambda a, b: math.isnan(a) or math.isnan(b) or ORDERED[base](a, b)


FLOAT_CMP = dict(ORDERED)
FLOAT_CMP.update({op: _unordered(op) for op in ("equ", "neu", "ltu", "leu", "gtu", "geu")})
FLOAT_CMP["num"] = lambda a, b: not (math.isnan(a) or math.isnan(b))
FLOAT_CMP["nan"] = lambda a, b: math.isnan(a) or math.isnan(b)


@pytest.mark.parametrize("ty", ["f32", "f64"])
def test_setp_float_all_comparisons_with_nan(ty):
    ops = list(FLOAT_CMP)
    body = "\n".join(f"setp.{op}.{ty} %{op}, %a, %b;" for op in ops)
    outs = run_op(body, [("a", ty, [a for a, _ in FPAIRS]), ("b", ty, [b for _, b in FPAIRS])],
                  [(op, "pred") for op in ops])
    for op, got in zip(ops, outs):
        same_ints(got, [int(FLOAT_CMP[op](a, b)) for a, b in FPAIRS], "u32")


def test_setp_two_destinations_and_combiners():
    # setp.CmpOp.BoolOp p|q, a, b, {!}c: p = (a cmp b) BoolOp c ; q = !(a cmp b) BoolOp c
    cases = [(a, b, c) for a in (1, 5) for b in (1, 5) for c in (0, 1)]
    ins = [("a", "s32", [x[0] for x in cases]), ("b", "s32", [x[1] for x in cases]),
           ("c", "pred", [x[2] for x in cases])]
    body = ("setp.lt.and.s32 %p1|%p2, %a, %b, %c;\nsetp.lt.or.s32 %p3|%p4, %a, %b, %c;\n"
            "setp.lt.xor.s32 %p5|%p6, %a, %b, %c;\nsetp.lt.and.s32 %p7, %a, %b, !%c;\n"
            "mov.pred %q1, %p1;\nmov.pred %q2, %p2;\nmov.pred %q3, %p3;\nmov.pred %q4, %p4;\n"
            "mov.pred %q5, %p5;\nmov.pred %q6, %p6;\nmov.pred %q7, %p7;")
    outs = run_op(body, ins, [(f"q{i}", "pred") for i in range(1, 8)])
    t = [int(a < b) for a, b, _ in cases]
    c = [x[2] for x in cases]
    same_ints(outs[0], [x & y for x, y in zip(t, c)], "u32")
    same_ints(outs[1], [(1 - x) & y for x, y in zip(t, c)], "u32")
    same_ints(outs[2], [x | y for x, y in zip(t, c)], "u32")
    same_ints(outs[3], [(1 - x) | y for x, y in zip(t, c)], "u32")
    same_ints(outs[4], [x ^ y for x, y in zip(t, c)], "u32")
    same_ints(outs[5], [(1 - x) ^ y for x, y in zip(t, c)], "u32")
    same_ints(outs[6], [x & (1 - y) for x, y in zip(t, c)], "u32")


def test_setp_float_nan_with_combiner():
    ins = [("a", "f32", [NAN, 1.0, 1.0, NAN]), ("b", "f32", [1.0, 2.0, 0.0, NAN]),
           ("c", "pred", [1, 1, 1, 0])]
    d, e = run_op("setp.lt.and.f32 %d, %a, %b, %c;\nsetp.ltu.or.f32 %e, %a, %b, !%c;", ins,
                  [("d", "pred"), ("e", "pred")])
    same_ints(d, [0, 1, 0, 0], "u32")
    same_ints(e, [1, 1, 0, 1], "u32")


def test_predicated_execution_and_negated_guard():
    ins = [("a", "s32", [1, 5, -3, 7]), ("b", "s32", [2, 2, 2, 7])]
    d, e = run_op("mov.u32 %d, 100;\nmov.u32 %e, 200;\nsetp.lt.s32 %p1, %a, %b;\n"
                  "@%p1 mov.u32 %d, 1;\n@!%p1 mov.u32 %e, 2;", ins, [("d", "u32"), ("e", "u32")])
    same_ints(d, [1, 100, 1, 100], "u32")
    same_ints(e, [200, 2, 200, 2], "u32")


def test_selp_all_types():
    ins = [("a", "s32", [1, 2, 3, 4]), ("b", "s32", [10, 20, 30, 40]), ("c", "pred", [1, 0, 1, 0])]
    d, e, f = run_op("selp.s32 %d, %a, %b, %c;\ncvt.rn.f32.s32 %f1, %a;\ncvt.rn.f32.s32 %f2, %b;\n"
                     "selp.f32 %e, %f1, %f2, %c;\ncvt.s64.s32 %rd1, %a;\ncvt.s64.s32 %rd2, %b;\n"
                     "selp.b64 %f, %rd1, %rd2, %c;", ins,
                     [("d", "s32"), ("e", "f32"), ("f", "s64")])
    same_ints(d, [1, 20, 3, 40], "s32")
    same_bits32(e, [1.0, 20.0, 3.0, 40.0])
    same_ints(f, [1, 20, 3, 40], "s64")


def test_slct_s32_and_f32_selector():
    # slct d, a, b, c: d = (c >= 0) ? a : b ; for .f32 c, -0.0 >= 0 is true
    cs_i = [0, 1, -1, 0x7FFFFFFF, -0x80000000]
    d = run_op("slct.u32.s32 %d, %a, %b, %c;",
               [("a", "u32", [111] * 5), ("b", "u32", [222] * 5), ("c", "s32", cs_i)], [("d", "u32")])
    same_ints(d, [111 if c >= 0 else 222 for c in cs_i], "u32")
    cs_f = [0.0, -0.0, 1.0, -1.0, -1e-40, INF, -INF]
    e = run_op("slct.s32.f32 %e, %a, %b, %c;",
               [("a", "s32", [111] * 7), ("b", "s32", [-222] * 7), ("c", "f32", cs_f)], [("e", "s32")])
    same_ints(e, [111 if c >= 0 else -222 for c in cs_f], "s32")


def test_slct_f32_nan_selector():
    # PTX: for .f32 c, NaN c selects b (comparison c >= 0 is false)
    e = run_op("slct.s32.f32 %e, %a, %b, %c;",
               [("a", "s32", [1]), ("b", "s32", [2]), ("c", "f32", [NAN])], [("e", "s32")])
    same_ints(e, [2], "s32")


def test_set_u32_and_f32_results():
    pairs = [(1, 2), (2, 1), (3, 3), (-1, 1)]
    ins = [("a", "s32", [a for a, _ in pairs]), ("b", "s32", [b for _, b in pairs])]
    d, e, f = run_op("set.lt.u32.s32 %d, %a, %b;\nset.ge.f32.s32 %e, %a, %b;\n"
                     "set.lt.s32.s32 %f, %a, %b;", ins,
                     [("d", "u32"), ("e", "f32"), ("f", "s32")])
    same_ints(d, [0xFFFFFFFF if a < b else 0 for a, b in pairs], "u32")
    same_bits32(e, [1.0 if a >= b else 0.0 for a, b in pairs])
    same_ints(f, [-1 if a < b else 0 for a, b in pairs], "s32")


def test_set_float_nan_and_combiner():
    ins = [("a", "f32", [NAN, 1.0, 2.0, NAN]), ("b", "f32", [1.0, 2.0, 1.0, 1.0]),
           ("c", "pred", [1, 0, 1, 0])]
    d, e = run_op("set.ltu.u32.f32 %d, %a, %b;\nset.gt.or.u32.f32 %e, %a, %b, %c;", ins,
                  [("d", "u32"), ("e", "u32")])
    same_ints(d, [0xFFFFFFFF, 0xFFFFFFFF, 0, 0xFFFFFFFF], "u32")
    same_ints(e, [0xFFFFFFFF, 0, 0xFFFFFFFF, 0], "u32")
    assert u(-1) == 0xFFFFFFFF and np.uint32(1)


def test_setp_ftz_flushes_subnormal_operands():
    ins = [("a", "f32", [1e-40, -1e-40, 1e-40]), ("b", "f32", [0.0, 0.0, 2e-40])]
    d, e = run_op("setp.gt.ftz.f32 %d, %a, %b;\nsetp.gt.f32 %e, %a, %b;", ins,
                  [("d", "pred"), ("e", "pred")])
    same_ints(d, [0, 0, 0], "u32")
    same_ints(e, [1, 0, 0], "u32")
