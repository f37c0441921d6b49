"""SIMD video instructions (vadd2 ... vset4, which nvcc emits for __vabsdiffu4, __vsadu2 ...)
and the sm_90 packed half-word add/sub/min/max, against a Python model of the PTX ISA's
pseudocode; then the CUDA SIMD intrinsics that compile to them, against numpy."""
import numpy as np
import pytest

from ._util import kernel_from_cuda, launch, run_op, same_ints

rng = np.random.default_rng(11)
EDGE = [0, 0xFFFFFFFF, 0x80008000, 0x7FFF7FFF, 0x80808080, 0x7F7F7F7F, 0x00FF00FF, 0x01010101,
        0xFFFF0001, 0x12345678]
A = EDGE + [int(x) for x in rng.integers(0, 2**32, 54)]
B = EDGE[::-1] + [int(x) for x in rng.integers(0, 2**32, 54)]
C = [int(x) for x in rng.integers(0, 2**32, 64)]


def _ext(v, width, signed):
    v &= (1 << width) - 1
    return v - (1 << width) if signed and v >> (width - 1) else v


def video_model(op, lanes, types, mods, asel, bsel, mask, a, b, c, cmp=None):
    """The ISA pseudocode of vop2/vop4 and vset2/vset4, lane by lane on Python ints."""
    w = 32 // lanes
    ab = a | (b << 32)
    dtype, atype, btype = types
    t = []
    for i in range(lanes):
        x = _ext(ab >> (asel[i] * w), w, atype == "s32")
        y = _ext(ab >> (bsel[i] * w), w, btype == "s32")
        r = {"vadd": lambda: x + y, "vsub": lambda: x - y,
             "vavrg": lambda: (x + y + 1) >> 1 if x + y >= 0 else (x + y) >> 1,
             "vabsdiff": lambda: abs(x - y), "vmin": lambda: min(x, y), "vmax": lambda: max(x, y),
             "vset": lambda: int({"eq": x == y, "ne": x != y, "lt": x < y, "le": x <= y,
                                  "gt": x > y, "ge": x >= y}[cmp])}[op]()
        if "sat" in mods:
            lo, hi = (-(1 << (w - 1)), (1 << (w - 1)) - 1) if dtype == "s32" else (0, (1 << w) - 1)
            r = min(max(r, lo), hi)
        t.append(r)
    if "add" in mods:
        return (c + sum(t[i] for i in mask)) % 2**32
    d = 0
    for i in range(lanes):
        v = t[i] if i in mask else c >> (i * w)
        d |= (v & ((1 << w) - 1)) << (i * w)
    return d


def _digits(sel):
    return [int(ch) for ch in reversed(sel[1:])]


CASES = [
    # (opcode, types, extra modifiers, dsel, asel, bsel)
    ("vadd2", ("u32", "u32", "u32"), (), "", "", ""),
    ("vadd2", ("s32", "s32", "u32"), ("sat",), "", "", ""),
    ("vsub2", ("s32", "s32", "s32"), ("sat",), "h0", "h10", "h32"),
    ("vsub2", ("u32", "u32", "u32"), ("sat",), "h1", "h01", "h23"),
    ("vavrg2", ("s32", "s32", "s32"), (), "", "h03", "h21"),
    ("vavrg2", ("u32", "u32", "u32"), (), "", "", ""),
    ("vavrg2", ("s32", "s32", "s32"), ("add",), "", "", ""),
    ("vsub4", ("s32", "s32", "s32"), ("add",), "", "", ""),
    ("vabsdiff2", ("u32", "u32", "u32"), ("add",), "", "", ""),
    ("vabsdiff2", ("s32", "s32", "s32"), (), "h10", "h11", "h22"),
    ("vmin2", ("s32", "u32", "u32"), ("add",), "h10", "h00", "h22"),
    ("vmax2", ("s32", "s32", "s32"), (), "", "", ""),
    ("vmax2", ("u32", "s32", "u32"), ("sat",), "", "", ""),
    ("vadd4", ("u32", "u32", "u32"), (), "", "", ""),
    ("vadd4", ("s32", "s32", "s32"), ("sat",), "b20", "b3210", "b7654"),
    ("vsub4", ("u32", "u32", "u32"), ("sat",), "", "b0123", "b4567"),
    ("vavrg4", ("s32", "s32", "s32"), (), "b3210", "b7531", "b6420"),
    ("vabsdiff4", ("u32", "u32", "u32"), (), "", "", ""),
    ("vabsdiff4", ("u32", "u32", "u32"), ("add",), "", "", ""),
    ("vabsdiff4", ("s32", "s32", "s32"), ("add",), "b31", "", ""),
    ("vmin4", ("u32", "u32", "u32"), (), "b0", "", ""),
    ("vmax4", ("s32", "s32", "u32"), ("sat",), "", "b1111", "b0000"),
]


@pytest.mark.parametrize("opcode,types,extra,dsel,asel,bsel", CASES)
def test_video_simd_against_the_isa_pseudocode(opcode, types, extra, dsel, asel, bsel):
    lanes = int(opcode[-1])
    kind = "h" if lanes == 2 else "b"
    defaults = ("h10", "h32") if lanes == 2 else ("b3210", "b7654")
    full = ".".join((opcode,) + types + extra)
    sel = lambda s: f".{s}" if s else ""
    d = run_op(f"{full} %d{sel(dsel)}, %a{sel(asel)}, %b{sel(bsel)}, %c;",
               [("a", "b32", A), ("b", "b32", B), ("c", "b32", C)], [("d", "b32")])
    mask = set(_digits(dsel)) if dsel else set(range(lanes))
    assert all(s[0] == kind for s in (dsel, asel, bsel) if s)
    want = [video_model(opcode[:-1], lanes, types, extra, _digits(asel or defaults[0]),
                        _digits(bsel or defaults[1]), mask, a, b, c) for a, b, c in zip(A, B, C)]
    same_ints(d, want, "b32")


@pytest.mark.parametrize("cmp", ["eq", "ne", "lt", "le", "gt", "ge"])
@pytest.mark.parametrize("opcode,types,add", [("vset2", ("s32", "s32"), False),
                                              ("vset2", ("u32", "u32"), True),
                                              ("vset4", ("u32", "s32"), False),
                                              ("vset4", ("s32", "s32"), True)])
def test_vset_against_the_isa_pseudocode(opcode, types, add, cmp):
    lanes = int(opcode[-1])
    defaults = ("h10", "h32") if lanes == 2 else ("b3210", "b7654")
    mods = (cmp, "add") if add else (cmp,)
    d = run_op(f"{'.'.join((opcode,) + types + mods)} %d, %a, %b, %c;",
               [("a", "b32", A), ("b", "b32", B), ("c", "b32", C)], [("d", "b32")])
    want = [video_model("vset", lanes, ("u32",) + types, ("add",) if add else (),
                        _digits(defaults[0]), _digits(defaults[1]), set(range(lanes)), a, b, c, cmp)
            for a, b, c in zip(A, B, C)]
    same_ints(d, want, "b32")


def _halves(v, signed):
    return [_ext(v, 16, signed), _ext(v >> 16, 16, signed)]


def _pack(h):
    return (h[0] & 0xFFFF) | ((h[1] & 0xFFFF) << 16)


def test_packed_half_word_add_sub_min_max_relu():
    body = ("add.u16x2 %d, %a, %b;\nadd.s16x2 %e, %a, %b;\nsub.u16x2 %f, %a, %b;\n"
            "min.s16x2 %g, %a, %b;\nmax.u16x2 %h, %a, %b;\nmin.relu.s16x2 %i, %a, %b;\n"
            "max.relu.s16x2 %j, %a, %b;\nmin.u16x2 %k, %a, %b;\nmax.s16x2 %l, %a, %b;")
    outs = run_op(body, [("a", "b32", A), ("b", "b32", B)],
                  [(n, "b32") for n in "defghijkl"])
    lane = lambda f, signed: [_pack([f(x, y) for x, y in zip(_halves(a, signed), _halves(b, signed))])
                              for a, b in zip(A, B)]
    relu = lambda f: lambda x, y: max(f(x, y), 0)
    want = [lane(lambda x, y: x + y, False), lane(lambda x, y: x + y, True),
            lane(lambda x, y: x - y, False), lane(min, True), lane(max, False),
            lane(relu(min), True), lane(relu(max), True), lane(min, False), lane(max, True)]
    for got, ref in zip(outs, want):
        same_ints(got, ref, "b32")


SIMD_CUDA = r'''
extern "C" __global__ void simd(unsigned* out, const unsigned* a, const unsigned* b) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x, x = a[i], y = b[i];
    unsigned* o = out + 8 * i;
    o[0] = __vabsdiffu4(x, y);
    o[1] = __vsadu4(x, y);
    o[2] = __vsadu2(x, y);
    o[3] = __vadd2(x, y);
    o[4] = __vmaxs2(x, y);
    o[5] = __vminu2(x, y);
    o[6] = __vabsdiffu2(x, y);
    o[7] = __vimax_s16x2_relu(x, y);
}'''


@pytest.mark.parametrize("arch", ["compute_75", "compute_90"])
def test_cuda_simd_intrinsics_match_numpy(arch):
    """compute_75 gets video instructions (vabsdiff4, vabsdiff2.add), compute_90 also the packed
    half-word min/max; the results are the same bytes and half-words in numpy."""
    k = kernel_from_cuda(SIMD_CUDA, "simd", options=(f"-arch={arch}",))
    if arch == "compute_90":
        assert "vabsdiff4" in k.ptx and "16x2" in k.ptx
    n = 256
    a = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    b = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    a[:4] = [0, 0xFFFFFFFF, 0x80008000, 0x7FFF7FFF]
    b[:4] = [0xFFFFFFFF, 0, 0x7FFF7FFF, 0x80008000]
    out = np.zeros((n, 8), np.uint32)
    launch(k, 2, 128, [out, a, b])
    ub, vb = a.view(np.uint8).reshape(n, 4).astype(np.int32), b.view(np.uint8).reshape(n, 4).astype(np.int32)
    uh, vh = a.view(np.uint16).reshape(n, 2).astype(np.int32), b.view(np.uint16).reshape(n, 2).astype(np.int32)
    sh, th = a.view(np.int16).reshape(n, 2).astype(np.int32), b.view(np.int16).reshape(n, 2).astype(np.int32)
    pack4 = lambda v: (v.astype(np.uint32) & 0xFF) @ np.array([1, 1 << 8, 1 << 16, 1 << 24], np.uint64)
    pack2 = lambda v: (v.astype(np.uint32) & 0xFFFF) @ np.array([1, 1 << 16], np.uint64)
    want = np.stack([pack4(np.abs(ub - vb)), np.abs(ub - vb).sum(1), np.abs(uh - vh).sum(1),
                     pack2(uh + vh), pack2(np.maximum(sh, th)), pack2(np.minimum(uh, vh)),
                     pack2(np.abs(uh - vh)), pack2(np.maximum(np.maximum(sh, th), 0))], 1)
    np.testing.assert_array_equal(out, want.astype(np.uint32))
