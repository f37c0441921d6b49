"""The scalar video instructions (vadd, vsub, vabsdiff, vmin, vmax, vshl, vshr, vset) against
the ISA's pseudocode ("Scalar Video Instructions": partSelectSignExtend, optSaturate,
optSecOp, optMerge), transcribed here in Python over many operands and forms; and ZLUDA's
vshr_clamp values, checked on an NVIDIA GPU."""
import random

import pytest

from ._util import run_op, same_ints

SEL = {"b0": (0, 8), "b1": (8, 8), "b2": (16, 8), "b3": (24, 8), "h0": (0, 16), "h1": (16, 16)}


def part(x, signed, sel):
    shift, width = SEL[sel] if sel else (0, 32)
    v = (x >> shift) & ((1 << width) - 1)
    return v - (1 << width) if signed and v >> (width - 1) else v


def reference(op, dtype, atype, btype, a, asel, b, bsel, sat=False, secop=None, dsel=None,
              c=0, mode=None, cmp=None):
    if op == "vset":
        dtype = "u32"       # "the intermediate result of the comparison is always unsigned"
    ta = part(a, atype == "s32", asel)
    tb = part(b, btype == "s32" and op not in ("vshl", "vshr"), bsel)
    if op == "vadd":
        t = ta + tb
    elif op == "vsub":
        t = ta - tb
    elif op == "vabsdiff":
        t = abs(ta - tb)
    elif op == "vmin":
        t = min(ta, tb)
    elif op == "vmax":
        t = max(ta, tb)
    elif op == "vset":
        t = int({"eq": ta == tb, "ne": ta != tb, "lt": ta < tb, "le": ta <= tb,
                 "gt": ta > tb, "ge": ta >= tb}[cmp])
    else:
        n = min(tb, 32) if mode == "clamp" else tb & 0x1F
        t = ta << n if op == "vshl" else ta >> n
    if sat:
        bits = SEL[dsel][1] if dsel else 32
        lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if dtype == "s32" else \
            (0, (1 << bits) - 1)
        t = max(lo, min(hi, t))
    cc = part(c, dtype == "s32", None)
    if secop == "add":
        t = t + cc
    elif secop == "min":
        t = min(t, cc)
    elif secop == "max":
        t = max(t, cc)
    elif dsel:
        shift, width = SEL[dsel]
        t = ((t & ((1 << width) - 1)) << shift) | (c & (0xFFFFFFFF ^ (((1 << width) - 1) << shift)))
    return t & 0xFFFFFFFF


EDGES = [0, 1, 2, 31, 32, 33, 0x7F, 0x80, 0xFF, 0x7FFF, 0x8000, 0xFFFF, 0x7FFFFFFF,
         0x80000000, 0xFFFFFFFF, 0x8E2DA590, 0x248A9F70, 0x12345678]


def forms():
    rng = random.Random(5)
    out = []
    for op in ("vadd", "vsub", "vabsdiff", "vmin", "vmax", "vshl", "vshr", "vset"):
        for _ in range(6):
            dtype, atype = rng.choice(["u32", "s32"]), rng.choice(["u32", "s32"])
            btype = "u32" if op in ("vshl", "vshr") else rng.choice(["u32", "s32"])
            asel, bsel = rng.choice([None, "b0", "b3", "h0", "h1"]), rng.choice([None, "b1", "h1"])
            sat = op != "vset" and rng.random() < 0.5
            kind = rng.choice(["plain", "secop", "merge"])
            secop = rng.choice(["add", "min", "max"]) if kind == "secop" else None
            dsel = rng.choice(["b0", "b2", "h0", "h1"]) if kind == "merge" else None
            mode = rng.choice(["clamp", "wrap"]) if op in ("vshl", "vshr") else None
            cmp = rng.choice(["eq", "ne", "lt", "le", "gt", "ge"]) if op == "vset" else None
            out.append((op, dtype, atype, btype, asel, bsel, sat, secop, dsel, mode, cmp))
    return out


@pytest.mark.parametrize("form", forms(), ids=lambda f: ".".join(str(x) for x in f if x))
def test_scalar_video_against_the_pseudocode(form):
    op, dtype, atype, btype, asel, bsel, sat, secop, dsel, mode, cmp = form
    rng = random.Random(hash(form) & 0xFFFF)
    values = [(rng.choice(EDGES + [rng.getrandbits(32)]), rng.choice(EDGES + [rng.getrandbits(32)]),
               rng.getrandbits(32)) for _ in range(64)]
    types = f"{atype}.{btype}" if op == "vset" else f"{dtype}.{atype}.{btype}"
    mods = "".join(f".{m}" for m in (sat and "sat", mode, cmp, secop) if m)
    d = "%d" + (f".{dsel}" if dsel else "")
    a = "%a" + (f".{asel}" if asel else "")
    b = "%b" + (f".{bsel}" if bsel else "")
    third = ", %c" if (secop or dsel) else ""
    body = ("mov.u32 %d, %c;\n" if dsel else "") + f"{op}.{types}{mods} {d}, {a}, {b}{third};"
    got = run_op(body, [("a", "u32", [v[0] for v in values]), ("b", "u32", [v[1] for v in values]),
                        ("c", "u32", [v[2] for v in values])], [("d", "u32")])
    want = [reference(op, dtype, atype, btype, x, asel, y, bsel, sat, secop, dsel, z, mode, cmp)
            for x, y, z in values]
    same_ints(got, want, "u32")


def test_zluda_vshr_clamp_add():
    # ZLUDA's vshr_clamp (run on an NVIDIA GPU): a >> min(b, 32) + c
    got = run_op("vshr.u32.u32.u32.clamp.add %d, %a, %b, %c;",
                 [("a", "u32", [0x8E2DA590, 0x8E2DA590]), ("b", "u32", [16, 32]),
                  ("c", "u32", [0x248A9F70, 0x248A9F70])], [("d", "u32")])
    same_ints(got, [613100957, 613064560], "u32")
