"""Helpers for the instruction-semantics tests: wrap a few PTX instructions in a kernel that
loads operands per thread from input arrays, runs the instructions and stores the results."""
from __future__ import annotations

import math
import struct
from fractions import Fraction

import numpy as np
import pytest

import dptx

HEADER = ".version 7.8\n.target sm_80\n.address_size 64\n"

# PTX type -> (numpy dtype of the memory cell, register type to declare)
NP = {
    "u8": np.uint8, "s8": np.int8, "b8": np.uint8,
    "u16": np.uint16, "s16": np.int16, "b16": np.uint16, "f16": np.uint16, "bf16": np.uint16,
    "u32": np.uint32, "s32": np.int32, "b32": np.uint32, "f32": np.float32,
    "f16x2": np.uint32, "bf16x2": np.uint32,
    "u64": np.uint64, "s64": np.int64, "b64": np.uint64, "f64": np.float64,
    "pred": np.uint32,
}
# memory access type used for ld/st of a register of the given type
MEMTY = {"f16": "b16", "bf16": "b16", "f16x2": "b32", "bf16x2": "b32", "pred": "u32"}
# register declaration type
REGTY = {"u8": "b16", "s8": "b16", "b8": "b16", "f16": "b16", "bf16": "b16", "f16x2": "b32", "bf16x2": "b32"}


def cpu_launch():
    cpu = pytest.importorskip("dptx.cpu")
    if not hasattr(cpu, "launch"):
        pytest.skip("dptx.cpu.launch not available yet")
    return cpu.launch


def launch(kernel, grid, block, args, shared_mem=0):
    return cpu_launch()(kernel, grid, block, args, shared_mem=shared_mem)


def kernel_from_ptx(ptx, name="k"):
    return dptx.RawModule(ptx=ptx).get_function(name)


def kernel_from_cuda(src, name, options=()):
    return dptx.RawModule(src, options=tuple(options)).get_function(name)


def _regdecl(name, ty):
    return f"\t.reg .{REGTY.get(ty, ty)} %{name};\n"


SCRATCH = ("\t.reg .pred %p<8>;\n\t.reg .b16 %h<16>;\n\t.reg .b32 %r<32>;\n"
           "\t.reg .b64 %rd<32>;\n\t.reg .f32 %f<32>;\n\t.reg .f64 %fd<32>;\n")


def op_ptx(body, ins, outs, name="k", block_size=None):
    """PTX of a kernel ``name(out0.., in0..)``: thread i loads ins[j][i] into %<in name>,
    runs ``body`` and stores every %<out name> to outs[j][i]. ins/outs: [(name, type)]."""
    params = [f".param .u64 zpo{j}" for j in range(len(outs))] + \
             [f".param .u64 zpi{j}" for j in range(len(ins))]
    s = HEADER + f".visible .entry {name}(\n\t" + ",\n\t".join(params) + "\n)\n{\n"
    s += "\t.reg .b32 %zt, %zgi, %zc, %zn;\n\t.reg .b64 %zidx, %zoff, %zptr;\n"
    s += "\t.reg .pred %zp;\n" + SCRATCH
    declared = set()
    for n, t in list(ins) + list(outs):
        if n not in declared:
            s += _regdecl(n, t)
            declared.add(n)
    s += ("\tmov.u32 %zt, %tid.x;\n\tmov.u32 %zc, %ctaid.x;\n\tmov.u32 %zn, %ntid.x;\n"
          "\tmad.lo.u32 %zgi, %zc, %zn, %zt;\n\tcvt.u64.u32 %zidx, %zgi;\n")

    def addr(param, ty):
        size = np.dtype(NP[ty]).itemsize
        return (f"\tld.param.u64 %zptr, [{param}];\n\tcvta.to.global.u64 %zptr, %zptr;\n"
                f"\tmul.lo.u64 %zoff, %zidx, {size};\n\tadd.u64 %zptr, %zptr, %zoff;\n")

    for j, (n, t) in enumerate(ins):
        s += addr(f"zpi{j}", t)
        if t == "pred":
            s += f"\tld.global.u32 %zt, [%zptr];\n\tsetp.ne.u32 %{n}, %zt, 0;\n"
        else:
            s += f"\tld.global.{MEMTY.get(t, t)} %{n}, [%zptr];\n"
    s += "\t" + body.strip().replace("\n", "\n\t") + "\n"
    for j, (n, t) in enumerate(outs):
        s += addr(f"zpo{j}", t)
        if t == "pred":
            s += f"\tselp.u32 %zt, 1, 0, %{n};\n\tst.global.u32 [%zptr], %zt;\n"
        else:
            s += f"\tst.global.{MEMTY.get(t, t)} [%zptr], %{n};\n"
    s += "\tret;\n}\n"
    return s


def run_op(body, ins, outs, block_size=64):
    """Run ``body`` once per element. ins: [(name, type, values)], outs: [(name, type)].
    Returns one numpy array per output (a single array when there is one output)."""
    n = max(len(v) for _, _, v in ins) if ins else block_size
    nb = -(-n // block_size)
    total = nb * block_size
    arrays_in = []
    for _, t, v in ins:
        if isinstance(v, np.ndarray) and v.dtype == NP[t]:
            a = v
        elif t in ("f32", "f64"):
            a = np.asarray(v, dtype=NP[t])
        else:
            a = ints(v, t)
        pad = np.empty(total, dtype=NP[t])
        pad[:len(a)] = a
        pad[len(a):] = a[0] if len(a) else 0
        arrays_in.append(pad)
    arrays_out = [np.zeros(total, dtype=NP[t]) for _, t in outs]
    k = kernel_from_ptx(op_ptx(body, [(n, t) for n, t, _ in ins], outs))
    launch(k, (nb,), (block_size,), arrays_out + arrays_in)
    res = [a[:n] for a in arrays_out]
    return res[0] if len(res) == 1 else res


def _ints(values, t):
    """Python ints (any sign) -> numpy array of type t, wrapping modulo 2**bits."""
    dt = np.dtype(NP[t])
    bits = dt.itemsize * 8
    u = np.array([int(x) % (1 << bits) for x in values], dtype=f"u{dt.itemsize}")
    return u.view(dt)


def ints(values, t):
    return _ints(values, t)


# ---- bit helpers -----------------------------------------------------------------------
def f2b(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


def b2f(b):
    return struct.unpack("<f", struct.pack("<I", b & 0xFFFFFFFF))[0]


def d2b(x):
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def b2d(b):
    return struct.unpack("<d", struct.pack("<Q", b & (2**64 - 1)))[0]


def f32bits(arr):
    return np.asarray(arr, dtype=np.float32).view(np.uint32)


def f64bits(arr):
    return np.asarray(arr, dtype=np.float64).view(np.uint64)


def u(x, bits=32):
    return x % (1 << bits)


def s(x, bits=32):
    x %= 1 << bits
    return x - (1 << bits) if x >> (bits - 1) else x


# ---- exact rounding of rationals to binary floating point -------------------------------
def round_fraction(q, mode, mant_bits, emin, emax):
    """Round the exact rational q to a float with ``mant_bits`` fraction bits (precision
    mant_bits+1), minimum normal exponent emin, max exponent emax. Returns a Python float
    (for f32/f64 formats) or ('inf', sign). mode: rn rz rm rp."""
    if q == 0:
        return 0.0
    sign = -1 if q < 0 else 1
    a = abs(q)
    # exponent e with 2**e <= a < 2**(e+1)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    elif Fraction(2) ** (e + 1) <= a:
        e += 1
    e = max(e, emin)
    ulp = Fraction(2) ** (e - mant_bits)
    m = a / ulp
    fl = m.numerator // m.denominator
    rem = m - fl
    if mode == "rn":
        if rem > Fraction(1, 2) or (rem == Fraction(1, 2) and fl % 2 == 1):
            fl += 1
    elif mode == "rz":
        pass
    elif (mode == "rp" and sign > 0) or (mode == "rm" and sign < 0):
        if rem:
            fl += 1
    r = fl * ulp
    maxval = (2 - Fraction(2) ** (-mant_bits)) * Fraction(2) ** emax
    if r > maxval:
        overflow_to_inf = mode == "rn" or (mode == "rp" and sign > 0) or (mode == "rm" and sign < 0)
        if overflow_to_inf:
            return sign * math.inf
        r = maxval
    return sign * float(r) if r != 0 else (0.0 if sign > 0 else -0.0)


def round_f32(q, mode="rn"):
    return round_fraction(Fraction(q), mode, 23, -126, 127)


def round_f64(q, mode="rn"):
    return round_fraction(Fraction(q), mode, 52, -1022, 1023)


def same_bits32(got, want):
    """Compare float32 arrays bit-for-bit, treating every NaN as equal."""
    g = np.asarray(got, dtype=np.float32)
    w = np.asarray(want, dtype=np.float32)
    both_nan = np.isnan(g) & np.isnan(w)
    eq = (g.view(np.uint32) == w.view(np.uint32)) | both_nan
    if not eq.all():
        bad = np.nonzero(~eq)[0]
        raise AssertionError("mismatch at " + ", ".join(
            f"[{i}] got {g[i]!r} ({g.view(np.uint32)[i]:#010x}) want {w[i]!r} "
            f"({w.view(np.uint32)[i]:#010x})" for i in bad[:8]))


def same_bits64(got, want):
    g = np.asarray(got, dtype=np.float64)
    w = np.asarray(want, dtype=np.float64)
    both_nan = np.isnan(g) & np.isnan(w)
    eq = (g.view(np.uint64) == w.view(np.uint64)) | both_nan
    if not eq.all():
        bad = np.nonzero(~eq)[0]
        raise AssertionError("mismatch at " + ", ".join(
            f"[{i}] got {g[i]!r} want {w[i]!r}" for i in bad[:8]))


def same_ints(got, want, t):
    w = ints(want, t)
    g = np.asarray(got)
    if not np.array_equal(g, w):
        bad = np.nonzero(g != w)[0]
        raise AssertionError("mismatch at " + ", ".join(
            f"[{i}] got {int(g[i]):#x} want {int(w[i]):#x}" for i in bad[:8]))


def kernel_text(params, body, name="k", decls=""):
    """A full PTX kernel: ``params`` like ".param .u64 out, .param .u32 n", scratch registers
    (%p %h %r %rd %f %fd) declared, ``decls`` (e.g. .shared arrays) before the body."""
    return (HEADER + decls + f"\n.visible .entry {name}({params})\n{{\n" + SCRATCH +
            "\t" + body.strip().replace("\n", "\n\t") + "\n}\n")


def ptx_kernel(params, body, name="k", decls=""):
    return kernel_from_ptx(kernel_text(params, body, name, decls), name)


# common prologue: %r0 = tid.x, %r1 = ctaid.x, %r2 = ntid.x, %r3 = global index,
# %rd0 = global index as u64
GID = ("mov.u32 %r0, %tid.x;\nmov.u32 %r1, %ctaid.x;\nmov.u32 %r2, %ntid.x;\n"
       "mad.lo.u32 %r3, %r1, %r2, %r0;\ncvt.u64.u32 %rd0, %r3;\n")


def f32_unary_kernel(name: str, ops: list):
    """A kernel applying the four f32 instructions ``ops`` (each ``"opcode.modifiers"``, one
    source) to x[i], writing the four results to out[4 i .. 4 i + 3]."""
    assert len(ops) == 4
    body = "\n".join(f"    {op} %f{k + 2}, %f1;" for k, op in enumerate(ops))
    ptx = f'''
.version 7.0
.target sm_70
.address_size 64
.visible .entry {name}(.param .u64 px, .param .u64 pout, .param .u32 n)
{{
    .reg .pred %p1;
    .reg .b32 %r<6>;
    .reg .f32 %f<6>;
    .reg .b64 %rd<7>;
    ld.param.u64 %rd1, [px];
    ld.param.u64 %rd2, [pout];
    ld.param.u32 %r1, [n];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    setp.ge.s32 %p1, %r5, %r1;
    @%p1 bra DONE;
    mul.wide.s32 %rd3, %r5, 4;
    add.s64 %rd4, %rd1, %rd3;
    ld.global.f32 %f1, [%rd4];
    mul.wide.s32 %rd5, %r5, 16;
    add.s64 %rd6, %rd2, %rd5;
{body}
    st.global.v4.f32 [%rd6], {{%f2, %f3, %f4, %f5}};
DONE:
    ret;
}}
'''
    return dptx.RawModule(ptx=ptx).get_function(name)


def run_in_both_forms(kernel, x: np.ndarray) -> dict:
    """{"0": results per thread, "all": warp-vectorized} of an ``f32_unary_kernel`` on x."""
    from dptx import cpu
    from dptx.cpu import executor
    out = {}
    mp = pytest.MonkeyPatch()
    try:
        for mode in ("0", "all"):
            mp.setenv("DPTX_CPU_VECTOR", mode)
            assert executor.compile_kernel(kernel).vector == (mode == "all")
            r = np.zeros((x.size, 4), np.float32)
            cpu.launch(kernel, ((x.size + 127) // 128,), (128,), [x, r, np.int32(x.size)])
            out[mode] = r
    finally:
        mp.undo()
    return out
