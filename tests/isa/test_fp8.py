"""FP8 conversions (sm_89+: cvt to and from .e4m3x2/.e5m2x2). The reference is NVIDIA's own:
cuda_fp8.hpp computes the same conversions in integer code for targets before sm_89, so the
same CUDA source compiled for compute_80 (integer code) and compute_90 (cvt instructions)
must agree bit for bit, on every f16 value, every FP8 pair and a wide sample of floats."""
import numpy as np
import pytest

from ._util import kernel_from_cuda, launch, ptx_kernel

FP8_CUDA = r'''
#include <cuda_fp8.h>
#include <cuda_fp16.h>
extern "C" __global__ void k(unsigned short* o4, unsigned short* o5, unsigned* h4, unsigned* h5,
                             unsigned short* p4, unsigned short* p5, const float* x,
                             const unsigned* hx, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float2 v = make_float2(x[2 * i], x[2 * i + 1]);
    o4[i] = __nv_cvt_float2_to_fp8x2(v, __NV_SATFINITE, __NV_E4M3);
    o5[i] = __nv_cvt_float2_to_fp8x2(v, __NV_SATFINITE, __NV_E5M2);
    __half2_raw a = __nv_cvt_fp8x2_to_halfraw2((__nv_fp8x2_storage_t)i, __NV_E4M3);
    __half2_raw b = __nv_cvt_fp8x2_to_halfraw2((__nv_fp8x2_storage_t)i, __NV_E5M2);
    h4[i] = a.x | ((unsigned)a.y << 16);
    h5[i] = b.x | ((unsigned)b.y << 16);
    __half2_raw hr;
    hr.x = hx[i] & 0xffff;
    hr.y = hx[i] >> 16;
    p4[i] = __nv_cvt_halfraw2_to_fp8x2(hr, __NV_SATFINITE, __NV_E4M3);
    p5[i] = __nv_cvt_halfraw2_to_fp8x2(hr, __NV_SATFINITE, __NV_E5M2);
}'''

N = 65536


def _inputs():
    rng = np.random.default_rng(5)
    special = np.array([0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 448, 464, 464.01, 480, -500,
                        57344, 61440, 61439.9, 65536, 2**-9, 2**-10, 2**-10 * 1.01, 2**-16,
                        2**-17, 2**-17 * 1.5, 1e-30, 3e38, 1.0625, 1.1875, 0.5 + 2**-5,
                        240, 248, 232, 2**-6, 2**-7 * 1.5, 2**-14, 2**-15 * 1.25], np.float32)
    bits = rng.integers(0, 2**32, 2 * N, dtype=np.uint64).astype(np.uint32)
    x = bits.view(np.float32).copy()          # every exponent, NaN payloads included
    x[:len(special)] = special
    x[4096:44096] = rng.normal(0, 100, 40000)
    x[44096:64096] = rng.normal(0, 0.01, 20000)
    # every f16 value in the low half, and in reverse order in the high half
    hx = (np.arange(N, dtype=np.uint32) | (np.arange(N, dtype=np.uint32)[::-1] << 16))
    return x, hx


def _run(arch, x, hx):
    k = kernel_from_cuda(FP8_CUDA, "k", options=(f"-arch={arch}",))
    outs = [np.zeros(N, np.uint16), np.zeros(N, np.uint16), np.zeros(N, np.uint32),
            np.zeros(N, np.uint32), np.zeros(N, np.uint16), np.zeros(N, np.uint16)]
    launch(k, N // 256, 256, outs + [x, hx, np.int32(N)])
    return k, outs


def test_fp8_conversions_match_cuda_fp8_integer_reference():
    x, hx = _inputs()
    k80, reference = _run("compute_80", x, hx)
    k90, got = _run("compute_90", x, hx)
    assert "cvt.rn" not in k80.ptx or "e4m3" not in k80.ptx
    for form in ("cvt.rn.satfinite.e4m3x2.f32", "cvt.rn.satfinite.e5m2x2.f32",
                 "cvt.rn.f16x2.e4m3x2", "cvt.rn.f16x2.e5m2x2",
                 "cvt.rn.satfinite.e4m3x2.f16x2", "cvt.rn.satfinite.e5m2x2.f16x2"):
        assert form in k90.ptx
    names = ["f32->e4m3x2", "f32->e5m2x2", "e4m3x2->f16x2", "e5m2x2->f16x2", "f16x2->e4m3x2",
             "f16x2->e5m2x2"]
    for name, want, have in zip(names, reference, got):
        bad = np.flatnonzero(want != have)
        assert bad.size == 0, f"{name}: {bad.size} differ, first at {bad[:4]}"
    # spot values the format defines: 448 is e4m3's largest, 464 ties back to it, NaN 0x7F
    o4 = got[0]
    assert o4[3] == 0x7E7E and o4[2] == 0x7F7F and o4[0] == 0x8000


RELU = """
ld.param.u64 %rd1, [px];
cvta.to.global.u64 %rd1, %rd1;
mul.wide.u32 %rd2, %r3, 8;
add.u64 %rd1, %rd1, %rd2;
ld.global.v2.f32 {%f1, %f2}, [%rd1];
cvt.rn.satfinite.relu.e4m3x2.f32 %h1, %f2, %f1;
cvt.rn.satfinite.relu.e5m2x2.f32 %h2, %f2, %f1;
cvt.rn.relu.f16x2.e4m3x2 %r4, %h3;
ld.param.u64 %rd3, [po];
cvta.to.global.u64 %rd3, %rd3;
mul.wide.u32 %rd4, %r3, 8;
add.u64 %rd3, %rd3, %rd4;
st.global.v2.u16 [%rd3], {%h1, %h2};
st.global.u32 [%rd3+4], %r4;
ret;"""


def test_fp8_relu_forms():
    """.relu: values below zero become +0 (NaN stays the canonical NaN, -0 stays -0, as .relu
    does for f16), the rest converts as without it."""
    x, hx = _inputs()
    n = 4096
    xs = x[:2 * n].copy()
    k = ptx_kernel(".param .u64 po, .param .u64 px",
                   "mov.u32 %r0, %tid.x;\nmov.u32 %r1, %ctaid.x;\nmov.u32 %r2, %ntid.x;\n"
                   "mad.lo.u32 %r3, %r1, %r2, %r0;\ncvt.u16.u32 %h3, %r3;\n" + RELU)
    out = np.zeros((n, 4), np.uint16)
    launch(k, n // 256, 256, [out, xs])
    _, reference = _run("compute_80", _relu_inputs(xs), hx)
    np.testing.assert_array_equal(out[:, 0], reference[0][:n])
    np.testing.assert_array_equal(out[:, 1], reference[1][:n])
    decoded = out[:, 2].astype(np.uint32) | (out[:, 3].astype(np.uint32) << 16)
    halves = reference[2][:n]
    as_f16 = lambda bits: bits.astype(np.uint16).view(np.float16)
    for shift in (0, 16):
        h = as_f16((halves >> shift) & 0xFFFF)
        want = np.where(h < 0, np.float16(0), h)
        got_bits = (decoded >> shift) & 0xFFFF
        want_bits = np.where(np.isnan(want), 0x7FFF, want.view(np.uint16))
        np.testing.assert_array_equal(got_bits, want_bits)


def _relu_inputs(xs):
    """What .relu feeds the conversion: values below zero as +0 (-0 and NaN unchanged), padded
    to N pairs."""
    r = np.where(xs < 0, np.float32(0), xs).astype(np.float32)
    out = np.zeros(2 * N, np.float32)
    out[:r.size] = r
    return out


@pytest.mark.parametrize("form", ["cvt.rn.e4m3x2.f32", "cvt.rz.satfinite.e4m3x2.f32"])
def test_fp8_forms_outside_the_isa_are_refused(form):
    import dptx
    k = ptx_kernel(".param .u64 po", f"mov.f32 %f1, 0f3F800000;\n{form} %h1, %f1, %f1;\nret;")
    with pytest.raises(dptx.PtxUnsupportedError, match="satfinite"):
        launch(k, 1, 1, [np.zeros(1, np.uint16)])


def test_fp8_with_bf16x2():
    """cvt.rn.satfinite.e4m3x2.bf16x2 (each bf16 half to its byte) and cvt.rn.bf16x2.e5m2x2
    (exact): against the integer reference on the same values as floats."""
    n = 4096
    rng = np.random.default_rng(9)
    pairs = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    pairs[:2048] = (rng.normal(0, 50, 4096).astype(np.float32).view(np.uint32) >> 16).reshape(2048, 2) \
        @ np.array([1, 1 << 16], np.uint32)
    k = ptx_kernel(".param .u64 po, .param .u64 pb, .param .u64 pc", """
mov.u32 %r0, %tid.x;
mov.u32 %r1, %ctaid.x;
mov.u32 %r2, %ntid.x;
mad.lo.u32 %r3, %r1, %r2, %r0;
mul.wide.u32 %rd2, %r3, 4;
ld.param.u64 %rd1, [pb];
cvta.to.global.u64 %rd1, %rd1;
add.u64 %rd1, %rd1, %rd2;
ld.global.u32 %r4, [%rd1];
cvt.rn.satfinite.e4m3x2.bf16x2 %h1, %r4;
cvt.u16.u32 %h2, %r3;
cvt.rn.bf16x2.e5m2x2 %r5, %h2;
ld.param.u64 %rd3, [po];
cvta.to.global.u64 %rd3, %rd3;
mul.wide.u32 %rd4, %r3, 2;
add.u64 %rd3, %rd3, %rd4;
st.global.u16 [%rd3], %h1;
ld.param.u64 %rd5, [pc];
cvta.to.global.u64 %rd5, %rd5;
add.u64 %rd5, %rd5, %rd2;
st.global.u32 [%rd5], %r5;
ret;""")
    out = np.zeros(n, np.uint16)
    dec = np.zeros(n, np.uint32)
    launch(k, n // 256, 256, [out, pairs, dec])
    as_f32 = lambda b: (b.astype(np.uint32) << 16).view(np.float32)
    floats = np.zeros(2 * N, np.float32)
    floats[:2 * n:2] = as_f32(pairs & 0xFFFF)       # x (low byte) from the low half
    floats[1:2 * n:2] = as_f32(pairs >> 16)
    x, hx = _inputs()
    _, reference = _run("compute_80", floats, hx)
    np.testing.assert_array_equal(out, reference[0][:n])
    # e5m2 -> bf16: the f16 decode of the same codes, as bf16 (exact), NaN canonical 0x7FFF
    h = reference[3][:n]
    for shift in (0, 16):
        f = ((h >> shift) & 0xFFFF).astype(np.uint16).view(np.float16).astype(np.float32)
        want = np.where(np.isnan(f), 0x7FFF, f.view(np.uint32) >> 16)
        np.testing.assert_array_equal((dec >> shift) & 0xFFFF, want)
