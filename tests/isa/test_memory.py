"""ld/st of every width (u8/s8 sign extension into wider registers), vectors .v2/.v4, module
globals, scalar parameters, local memory with dynamic indexing, shared memory (static and
dynamic), special registers and vector pack/unpack with mov."""
import numpy as np
import pytest

from ._util import GID, launch, ptx_kernel, run_op, same_ints


def test_ld_u8_s8_u16_s16_extend_into_32_and_64_bit_registers():
    src = np.array([0x00, 0x7F, 0x80, 0xFF, 0x01, 0xFE, 0x55, 0xAA], dtype=np.uint8)
    out = np.zeros((6, 8), dtype=np.int64)
    k = ptx_kernel(".param .u64 pout, .param .u64 pin", GID + """
ld.param.u64 %rd1, [pin];
cvta.to.global.u64 %rd1, %rd1;
add.u64 %rd2, %rd1, %rd0;
ld.global.u8 %r4, [%rd2];
ld.global.s8 %r5, [%rd2];
ld.global.s8 %rd3, [%rd2];
ld.global.u8 %rd4, [%rd2];
and.b64 %rd10, %rd0, -2;
add.u64 %rd11, %rd1, %rd10;
ld.global.s16 %r6, [%rd11];
ld.global.u16 %r7, [%rd11];
ld.param.u64 %rd5, [pout];
cvta.to.global.u64 %rd5, %rd5;
shl.b64 %rd6, %rd0, 3;
add.u64 %rd5, %rd5, %rd6;
cvt.s64.s32 %rd7, %r4;
st.global.u64 [%rd5], %rd7;
cvt.s64.s32 %rd7, %r5;
st.global.u64 [%rd5+64], %rd7;
st.global.u64 [%rd5+128], %rd3;
st.global.u64 [%rd5+192], %rd4;
cvt.s64.s32 %rd7, %r6;
st.global.u64 [%rd5+256], %rd7;
cvt.s64.s32 %rd7, %r7;
st.global.u64 [%rd5+320], %rd7;
ret;""")
    launch(k, 1, 8, [out, src])
    assert list(out[0]) == [int(x) for x in src]
    assert list(out[1]) == [int(x) for x in src.view(np.int8)]
    assert list(out[2]) == [int(x) for x in src.view(np.int8)]
    assert list(out[3]) == [int(x) for x in src]
    h16 = src.view(np.int16)
    assert list(out[4]) == [int(h16[i // 2]) for i in range(8)]
    assert list(out[5]) == [int(h16[i // 2]) & 0xFFFF for i in range(8)]


def test_st_narrow_widths_truncate():
    vals = np.array([0x12345678, -1, 0x000001FF, 0x7FFF8001], dtype=np.int32)
    out8 = np.full(4, 0xEE, dtype=np.uint8)
    out16 = np.full(4, 0xEEEE, dtype=np.uint16)
    out64 = np.zeros(4, dtype=np.int64)
    k = ptx_kernel(".param .u64 p8, .param .u64 p16, .param .u64 p64, .param .u64 pin", GID + """
ld.param.u64 %rd1, [pin];
cvta.to.global.u64 %rd1, %rd1;
shl.b64 %rd2, %rd0, 2;
add.u64 %rd2, %rd1, %rd2;
ld.global.u32 %r4, [%rd2];
ld.param.u64 %rd3, [p8];
cvta.to.global.u64 %rd3, %rd3;
add.u64 %rd3, %rd3, %rd0;
st.global.u8 [%rd3], %r4;
ld.param.u64 %rd4, [p16];
cvta.to.global.u64 %rd4, %rd4;
shl.b64 %rd5, %rd0, 1;
add.u64 %rd4, %rd4, %rd5;
st.global.u16 [%rd4], %r4;
ld.param.u64 %rd6, [p64];
cvta.to.global.u64 %rd6, %rd6;
shl.b64 %rd7, %rd0, 3;
add.u64 %rd6, %rd6, %rd7;
cvt.s64.s32 %rd8, %r4;
st.global.s64 [%rd6], %rd8;
ret;""")
    launch(k, 1, 4, [out8, out16, out64, vals])
    assert list(out8) == [0x78, 0xFF, 0xFF, 0x01]
    assert list(out16) == [0x5678, 0xFFFF, 0x01FF, 0x8001]
    assert list(out64) == [int(v) for v in vals]


def test_vector_loads_and_stores_v2_v4():
    n = 8
    a4 = np.arange(4 * n, dtype=np.uint32) * 3 + 1
    f2 = np.arange(2 * n, dtype=np.float64) * 0.5 - 3
    h4 = (np.arange(4 * n, dtype=np.uint16) * 1111)
    o4 = np.zeros_like(a4)
    of2 = np.zeros_like(f2)
    oh4 = np.zeros_like(h4)
    k = ptx_kernel(".param .u64 po4, .param .u64 pof2, .param .u64 poh4, .param .u64 pa4, "
                   ".param .u64 pf2, .param .u64 ph4", GID + """
shl.b64 %rd1, %rd0, 4;
ld.param.u64 %rd2, [pa4];
cvta.to.global.u64 %rd2, %rd2;
add.u64 %rd2, %rd2, %rd1;
ld.global.v4.u32 {%r4, %r5, %r6, %r7}, [%rd2];
ld.param.u64 %rd3, [po4];
cvta.to.global.u64 %rd3, %rd3;
add.u64 %rd3, %rd3, %rd1;
st.global.v4.u32 [%rd3], {%r7, %r6, %r5, %r4};
ld.param.u64 %rd4, [pf2];
cvta.to.global.u64 %rd4, %rd4;
add.u64 %rd4, %rd4, %rd1;
ld.global.v2.f64 {%fd1, %fd2}, [%rd4];
add.f64 %fd3, %fd1, %fd2;
ld.param.u64 %rd5, [pof2];
cvta.to.global.u64 %rd5, %rd5;
add.u64 %rd5, %rd5, %rd1;
st.global.v2.f64 [%rd5], {%fd3, %fd1};
shl.b64 %rd6, %rd0, 3;
ld.param.u64 %rd7, [ph4];
cvta.to.global.u64 %rd7, %rd7;
add.u64 %rd7, %rd7, %rd6;
ld.global.v4.u16 {%h1, %h2, %h3, %h4}, [%rd7];
ld.param.u64 %rd8, [poh4];
cvta.to.global.u64 %rd8, %rd8;
add.u64 %rd8, %rd8, %rd6;
st.global.v2.u16 [%rd8], {%h4, %h3};
st.global.v2.u16 [%rd8+4], {%h2, %h1};
ret;""")
    launch(k, 1, n, [o4, of2, oh4, a4, f2, h4])
    np.testing.assert_array_equal(o4.reshape(n, 4), a4.reshape(n, 4)[:, ::-1])
    fr = f2.reshape(n, 2)
    np.testing.assert_array_equal(of2.reshape(n, 2), np.stack([fr[:, 0] + fr[:, 1], fr[:, 0]], 1))
    np.testing.assert_array_equal(oh4.reshape(n, 4), h4.reshape(n, 4)[:, ::-1])


def test_scalar_params_of_each_type():
    out = np.zeros(6, dtype=np.float64)
    k = ptx_kernel(".param .u64 pout, .param .s32 pi, .param .f32 pf, .param .f64 pd, "
                   ".param .u64 pu, .param .s16 ps, .param .u8 pb", """
ld.param.u64 %rd1, [pout];
cvta.to.global.u64 %rd1, %rd1;
ld.param.s32 %r1, [pi];
cvt.rn.f64.s32 %fd1, %r1;
st.global.f64 [%rd1], %fd1;
ld.param.f32 %f1, [pf];
cvt.f64.f32 %fd2, %f1;
st.global.f64 [%rd1+8], %fd2;
ld.param.f64 %fd3, [pd];
st.global.f64 [%rd1+16], %fd3;
ld.param.u64 %rd2, [pu];
cvt.rn.f64.u64 %fd4, %rd2;
st.global.f64 [%rd1+24], %fd4;
ld.param.s16 %h1, [ps];
cvt.rn.f64.s16 %fd5, %h1;
st.global.f64 [%rd1+32], %fd5;
ld.param.u8 %h2, [pb];
cvt.rn.f64.u16 %fd6, %h2;
st.global.f64 [%rd1+40], %fd6;
ret;""")
    launch(k, 1, 1, [out, np.int32(-7), np.float32(1.5), np.float64(-2.25), np.uint64(2**40),
                     np.int16(-300), np.uint8(200)])
    assert list(out) == [-7.0, 1.5, -2.25, 2.0**40, -300.0, 200.0]


def test_module_global_with_initializer_and_const():
    decls = (".global .align 4 .u32 gtab[4] = {10, 20, 30, 40};\n"
             ".const .align 8 .f64 ctab[2] = {0d3FF8000000000000, 0d4004000000000000};\n")
    out = np.zeros(4, dtype=np.float64)
    k = ptx_kernel(".param .u64 pout", GID + """
mov.u64 %rd1, gtab;
shl.b64 %rd2, %rd0, 2;
add.u64 %rd3, %rd1, %rd2;
ld.global.u32 %r4, [%rd3];
and.b32 %r5, %r3, 1;
mul.wide.u32 %rd4, %r5, 8;
mov.u64 %rd5, ctab;
add.u64 %rd5, %rd5, %rd4;
ld.const.f64 %fd1, [%rd5];
cvt.rn.f64.u32 %fd2, %r4;
mul.f64 %fd3, %fd1, %fd2;
ld.param.u64 %rd6, [pout];
cvta.to.global.u64 %rd6, %rd6;
shl.b64 %rd7, %rd0, 3;
add.u64 %rd6, %rd6, %rd7;
st.global.f64 [%rd6], %fd3;
ret;""", decls=decls)
    launch(k, 1, 4, [out])
    assert list(out) == [15.0, 50.0, 45.0, 100.0]


def test_local_memory_dynamic_indexing():
    # each thread fills a private array arr[j] = j * (tid + 1), then reads arr[(tid*7) % 16]
    n = 32
    out = np.zeros(2 * n, dtype=np.uint32)
    # .local must be declared inside the kernel body: build the text by hand
    from ._util import HEADER, SCRATCH, kernel_from_ptx, launch as _launch
    body = GID + """
mov.u64 %rd1, arr;
add.u32 %r4, %r3, 1;
mov.u32 %r5, 0;
LOOP:
mul.lo.u32 %r6, %r5, %r4;
mul.wide.u32 %rd2, %r5, 4;
add.u64 %rd3, %rd1, %rd2;
st.local.u32 [%rd3], %r6;
add.u32 %r5, %r5, 1;
setp.lt.u32 %p1, %r5, 17;
@%p1 bra LOOP;
mul.lo.u32 %r7, %r3, 7;
and.b32 %r7, %r7, 15;
mul.wide.u32 %rd4, %r7, 4;
add.u64 %rd5, %rd1, %rd4;
ld.local.u32 %r8, [%rd5];
cvta.local.u64 %rd6, %rd1;
add.u64 %rd6, %rd6, %rd4;
ld.u32 %r9, [%rd6+4];
ld.param.u64 %rd7, [pout];
cvta.to.global.u64 %rd7, %rd7;
mul.wide.u32 %rd8, %r3, 8;
add.u64 %rd7, %rd7, %rd8;
st.global.v2.u32 [%rd7], {%r8, %r9};
ret;"""
    text = (HEADER + ".visible .entry k(.param .u64 pout)\n{\n" + SCRATCH +
            "\t.local .align 4 .b8 arr[68];\n" + body + "\n}\n")
    k = kernel_from_ptx(text)
    _launch(k, 2, n // 2, [out])
    o = out.reshape(n, 2)
    for t in range(n):
        j = (t * 7) % 16
        assert o[t, 0] == j * (t + 1)
        assert o[t, 1] == (j + 1) * (t + 1)


def test_shared_memory_static_exchange():
    n = 64
    a = np.arange(n, dtype=np.int32) * 3 - 50
    out = np.zeros(2 * n, dtype=np.int32)
    k = ptx_kernel(".param .u64 pout, .param .u64 pin", GID + """
ld.param.u64 %rd1, [pin];
cvta.to.global.u64 %rd1, %rd1;
mul.wide.u32 %rd2, %r3, 4;
add.u64 %rd3, %rd1, %rd2;
ld.global.u32 %r4, [%rd3];
mov.u32 %r10, sh;
shl.b32 %r5, %r0, 2;
add.u32 %r6, %r10, %r5;
st.shared.u32 [%r6], %r4;
bar.sync 0;
sub.u32 %r7, %r2, 1;
sub.u32 %r7, %r7, %r0;
shl.b32 %r8, %r7, 2;
add.u32 %r9, %r10, %r8;
ld.shared.u32 %r11, [%r9];
ld.param.u64 %rd4, [pout];
cvta.to.global.u64 %rd4, %rd4;
add.u64 %rd5, %rd4, %rd2;
st.global.u32 [%rd5], %r11;
ret;""", decls=".shared .align 4 .b8 sh[128];\n")
    launch(k, 2, 32, [out, a])
    want = np.concatenate([a[:32][::-1], a[32:][::-1]])
    np.testing.assert_array_equal(out[:n], want)
    assert (out[n:] == 0).all()


def test_shared_memory_dynamic_extern():
    n = 48
    a = np.arange(n, dtype=np.float32) + 0.5
    out = np.zeros(n, dtype=np.float32)
    k = ptx_kernel(".param .u64 pout, .param .u64 pin", GID + """
ld.param.u64 %rd1, [pin];
cvta.to.global.u64 %rd1, %rd1;
mul.wide.u32 %rd2, %r3, 4;
add.u64 %rd3, %rd1, %rd2;
ld.global.f32 %f1, [%rd3];
mov.u64 %rd4, dyn;
mul.wide.u32 %rd5, %r0, 4;
add.u64 %rd6, %rd4, %rd5;
st.shared.f32 [%rd6], %f1;
bar.sync 0;
add.u32 %r4, %r0, 1;
rem.u32 %r4, %r4, %r2;
mul.wide.u32 %rd7, %r4, 4;
add.u64 %rd8, %rd4, %rd7;
ld.shared.f32 %f2, [%rd8];
cvta.shared.u64 %rd9, %rd6;
ld.f32 %f3, [%rd9];
add.f32 %f4, %f2, %f3;
ld.param.u64 %rd10, [pout];
cvta.to.global.u64 %rd10, %rd10;
add.u64 %rd11, %rd10, %rd2;
st.global.f32 [%rd11], %f4;
ret;""", decls=".extern .shared .align 16 .b8 dyn[];\n")
    launch(k, 3, 16, [out, a], shared_mem=16 * 4)
    blocks = a.reshape(3, 16)
    np.testing.assert_array_equal(out.reshape(3, 16), np.roll(blocks, -1, axis=1) + blocks)


def test_special_registers_3d():
    grid, block = (2, 3, 2), (4, 2, 3)
    nthreads = 2 * 3 * 2 * 4 * 2 * 3
    K = 14
    out = np.full(nthreads * K, 0xFFFFFFFF, dtype=np.uint32)
    names = ["%tid.x", "%tid.y", "%tid.z", "%ntid.x", "%ntid.y", "%ntid.z", "%ctaid.x",
             "%ctaid.y", "%ctaid.z", "%nctaid.x", "%nctaid.y", "%nctaid.z", "%laneid", "WARP_SZ"]
    body = "\n".join(f"mov.u32 %r{i + 10}, {nm};" for i, nm in enumerate(names))
    body += """
mad.lo.u32 %r1, %r18, %r20, %r17;
mad.lo.u32 %r1, %r1, %r19, %r16;
mul.lo.u32 %r2, %r13, %r14;
mul.lo.u32 %r2, %r2, %r15;
mad.lo.u32 %r3, %r12, %r14, %r11;
mad.lo.u32 %r3, %r3, %r13, %r10;
mad.lo.u32 %r4, %r1, %r2, %r3;
mul.lo.u32 %r5, %r4, 14;
ld.param.u64 %rd1, [pout];
cvta.to.global.u64 %rd1, %rd1;
mul.wide.u32 %rd2, %r5, 4;
add.u64 %rd1, %rd1, %rd2;
"""
    body += "\n".join(f"st.global.u32 [%rd1+{4 * i}], %r{i + 10};" for i in range(K)) + "\nret;"
    k = ptx_kernel(".param .u64 pout", body)
    launch(k, grid, block, [out])
    o = out.reshape(nthreads, K)
    row = 0
    for bz in range(2):
        for by in range(3):
            for bx in range(2):
                for tz in range(3):
                    for ty in range(2):
                        for tx in range(4):
                            lin = tx + 4 * (ty + 2 * tz)
                            want = [tx, ty, tz, 4, 2, 3, bx, by, bz, 2, 3, 2, lin % 32, 32]
                            assert list(o[row]) == want, (bx, by, bz, tx, ty, tz)
                            row += 1


def test_mov_vector_pack_unpack_64():
    lo = [0x11223344, 0xFFFFFFFF, 0]
    hi = [0x55667788, 0, 0x80000000]
    d, e, f = run_op("mov.b64 %d, {%a, %b};\nmov.b64 {%r1, %r2}, %d;\nmov.b32 %e, %r1;\nmov.b32 %f, %r2;",
                     [("a", "b32", lo), ("b", "b32", hi)], [("d", "b64"), ("e", "b32"), ("f", "b32")])
    same_ints(d, [(h << 32) | l for l, h in zip(lo, hi)], "b64")
    same_ints(e, lo, "b32")
    same_ints(f, hi, "b32")
    g = run_op("mov.b32 %g, {%h1, %h2};\nmov.b32 {%h1, %h2}, %a;\nmov.b32 %g, {%h2, %h1};",
               [("a", "b32", lo)], [("g", "b32")])
    same_ints(g, [((x & 0xFFFF) << 16) | (x >> 16) for x in lo], "b32")


def test_cache_and_volatile_qualifiers():
    a = np.arange(16, dtype=np.float32) * 2
    out = np.zeros(16, dtype=np.float32)
    k = ptx_kernel(".param .u64 pout, .param .u64 pin", GID + """
ld.param.u64 %rd1, [pin];
cvta.to.global.u64 %rd1, %rd1;
mul.wide.u32 %rd2, %r3, 4;
add.u64 %rd3, %rd1, %rd2;
ld.global.nc.f32 %f1, [%rd3];
ld.global.ca.f32 %f2, [%rd3];
ld.global.cg.f32 %f3, [%rd3];
ld.volatile.global.f32 %f4, [%rd3];
ld.relaxed.gpu.global.f32 %f5, [%rd3];
add.f32 %f1, %f1, %f2;
add.f32 %f1, %f1, %f3;
add.f32 %f1, %f1, %f4;
add.f32 %f1, %f1, %f5;
ld.param.u64 %rd4, [pout];
cvta.to.global.u64 %rd4, %rd4;
add.u64 %rd4, %rd4, %rd2;
st.global.cs.f32 [%rd4], %f1;
membar.gl;
fence.acq_rel.gpu;
ret;""")
    launch(k, 1, 16, [out, a])
    np.testing.assert_array_equal(out, a * 5)


def test_ldu_uniform_loads_scalar_and_vector():
    # ldu reads an address the same for all threads of the warp; .v2 and a barrier after it
    # (the warp-vectorized executor) as well as the per-thread form
    table = np.array([7.5, -2.0, 3.25, 11.0], dtype=np.float32)
    out = np.zeros(64, dtype=np.float32)
    k = ptx_kernel(".param .u64 pout, .param .u64 pin", GID + """
ld.param.u64 %rd1, [pin];
cvta.to.global.u64 %rd1, %rd1;
ldu.global.f32 %f1, [%rd1+12];
ldu.global.v2.f32 {%f2, %f3}, [%rd1];
bar.sync 0;
add.f32 %f1, %f1, %f2;
mul.f32 %f1, %f1, %f3;
cvt.rn.f32.u32 %f4, %r3;
add.f32 %f1, %f1, %f4;
ld.param.u64 %rd4, [pout];
cvta.to.global.u64 %rd4, %rd4;
mul.wide.u32 %rd2, %r3, 4;
add.u64 %rd4, %rd4, %rd2;
st.global.f32 [%rd4], %f1;
ret;""")
    launch(k, 2, 32, [out, table])
    expect = (np.float32(11.0) + np.float32(7.5)) * np.float32(-2.0) + np.arange(64, dtype=np.float32)
    np.testing.assert_array_equal(out, expect)


def test_shared_vectors_and_narrow_signed_loads():
    out = np.zeros(32 * 4, dtype=np.int32)
    k = ptx_kernel(".param .u64 pout", GID + """
mov.u64 %rd10, shv;
mul.wide.u32 %rd11, %r0, 16;
add.u64 %rd12, %rd10, %rd11;
cvt.rn.f32.u32 %f1, %r0;
neg.f32 %f2, %f1;
add.f32 %f3, %f1, 0f3F000000;
mov.f32 %f4, 0fBF800000;
st.shared.v4.f32 [%rd12], {%f1, %f2, %f3, %f4};
mov.u64 %rd13, shb;
cvt.u64.u32 %rd14, %r0;
add.u64 %rd15, %rd13, %rd14;
mul.lo.u32 %r5, %r0, 9;
sub.u32 %r5, 128, %r5;
st.shared.u8 [%rd15], %r5;
bar.sync 0;
xor.b32 %r6, %r0, 31;
mul.wide.u32 %rd16, %r6, 16;
add.u64 %rd17, %rd10, %rd16;
ld.shared.v2.f32 {%f5, %f6}, [%rd17+8];
cvt.rzi.s32.f32 %r7, %f5;
cvt.rzi.s32.f32 %r8, %f6;
cvt.u64.u32 %rd18, %r6;
add.u64 %rd19, %rd13, %rd18;
ld.shared.s8 %r9, [%rd19];
ld.shared.u8 %r12, [%rd19];
ld.param.u64 %rd1, [pout];
cvta.to.global.u64 %rd1, %rd1;
mul.wide.u32 %rd2, %r3, 16;
add.u64 %rd1, %rd1, %rd2;
st.global.v4.s32 [%rd1], {%r7, %r8, %r9, %r12};
ret;""", decls=".shared .align 16 .b8 shv[512];\n.shared .align 1 .b8 shb[32];\n")
    launch(k, 1, 32, [out])
    o = out.reshape(32, 4)
    for t in range(32):
        p = t ^ 31
        byte = (128 - 9 * p) & 0xFF
        assert o[t].tolist() == [int(p + 0.5), -1, byte - 256 if byte >= 128 else byte, byte], t


def test_static_and_dynamic_shared_do_not_overlap():
    bs = 32
    out = np.zeros(bs * 2, dtype=np.uint32)
    k = ptx_kernel(".param .u64 pout", GID + """
mov.u64 %rd10, sts;
mov.u64 %rd11, dyn2;
mul.wide.u32 %rd12, %r0, 4;
add.u64 %rd13, %rd10, %rd12;
add.u64 %rd14, %rd11, %rd12;
add.u32 %r4, %r0, 1000;
add.u32 %r5, %r0, 2000;
st.shared.u32 [%rd13], %r4;
st.shared.u32 [%rd14], %r5;
bar.sync 0;
sub.u32 %r6, 31, %r0;
mul.wide.u32 %rd15, %r6, 4;
add.u64 %rd16, %rd10, %rd15;
add.u64 %rd17, %rd11, %rd15;
ld.shared.u32 %r7, [%rd16];
ld.shared.u32 %r8, [%rd17];
ld.param.u64 %rd1, [pout];
cvta.to.global.u64 %rd1, %rd1;
mul.wide.u32 %rd2, %r3, 8;
add.u64 %rd1, %rd1, %rd2;
st.global.v2.u32 [%rd1], {%r7, %r8};
ret;""", decls=".shared .align 4 .b8 sts[128];\n.extern .shared .align 4 .b8 dyn2[];\n")
    launch(k, 1, bs, [out], shared_mem=128)
    o = out.reshape(bs, 2)
    assert o[:, 0].tolist() == [1000 + 31 - t for t in range(bs)]
    assert o[:, 1].tolist() == [2000 + 31 - t for t in range(bs)]


def test_param_pointer_used_as_generic_and_global_without_cvta():
    # compilers often use the parameter value directly as a global/generic address
    a = np.arange(8, dtype=np.uint32) * 5
    out = np.zeros(8, dtype=np.uint32)
    k = ptx_kernel(".param .u64 pout, .param .u64 pin", GID + """
ld.param.u64 %rd1, [pin];
mul.wide.u32 %rd2, %r3, 4;
add.u64 %rd3, %rd1, %rd2;
ld.global.u32 %r4, [%rd3];
ld.u32 %r5, [%rd3];
add.u32 %r4, %r4, %r5;
ld.param.u64 %rd4, [pout];
add.u64 %rd5, %rd4, %rd2;
st.u32 [%rd5], %r4;
ret;""")
    launch(k, 1, 8, [out, a])
    assert out.tolist() == (a * 2).tolist()


def test_isspacep_and_cvta_roundtrip():
    out = np.zeros(8, dtype=np.uint32)
    from ._util import HEADER, SCRATCH, kernel_from_ptx
    body = """
ld.param.u64 %rd1, [pout];
cvta.to.global.u64 %rd9, %rd1;
cvta.global.u64 %rd2, %rd9;
mov.u64 %rd3, shx;
cvta.shared.u64 %rd4, %rd3;
mov.u64 %rd5, loc;
cvta.local.u64 %rd6, %rd5;
isspacep.global %p1, %rd2;
isspacep.shared %p2, %rd4;
isspacep.local %p3, %rd6;
isspacep.shared %p4, %rd2;
isspacep.global %p5, %rd4;
isspacep.local %p6, %rd4;
selp.u32 %r1, 1, 0, %p1;
selp.u32 %r2, 1, 0, %p2;
selp.u32 %r3, 1, 0, %p3;
selp.u32 %r4, 1, 0, %p4;
selp.u32 %r5, 1, 0, %p5;
selp.u32 %r6, 1, 0, %p6;
cvta.to.shared.u64 %rd7, %rd4;
setp.eq.u64 %p7, %rd7, %rd3;
selp.u32 %r7, 1, 0, %p7;
st.shared.u32 [%rd3], 77;
ld.u32 %r8, [%rd4];
st.global.v4.u32 [%rd9], {%r1, %r2, %r3, %r4};
st.global.v4.u32 [%rd9+16], {%r5, %r6, %r7, %r8};
ret;"""
    text = (HEADER + ".shared .align 4 .b8 shx[16];\n.visible .entry k(.param .u64 pout)\n{\n" + SCRATCH +
            "\t.local .align 4 .b8 loc[16];\n" + body + "\n}\n")
    launch(kernel_from_ptx(text), 1, 1, [out])
    assert out.tolist() == [1, 1, 1, 0, 0, 0, 1, 77]


def test_cache_eviction_hint_modifiers_and_clock():
    a = np.arange(8, dtype=np.float32)
    out = np.zeros(8, dtype=np.float32)
    ok = np.zeros(8, dtype=np.uint32)
    k = ptx_kernel(".param .u64 pout, .param .u64 pin, .param .u64 pok", GID + """
mov.u64 %rd20, %clock64;
ld.param.u64 %rd1, [pin];
cvta.to.global.u64 %rd1, %rd1;
mul.wide.u32 %rd2, %r3, 4;
add.u64 %rd3, %rd1, %rd2;
prefetch.global.L2 [%rd3];
ld.global.L1::evict_last.f32 %f1, [%rd3];
ld.global.nc.L1::no_allocate.L2::128B.f32 %f2, [%rd3];
ld.global.lu.f32 %f3, [%rd3];
ld.global.cv.f32 %f4, [%rd3];
add.f32 %f1, %f1, %f2;
add.f32 %f1, %f1, %f3;
add.f32 %f1, %f1, %f4;
ld.param.u64 %rd4, [pout];
cvta.to.global.u64 %rd4, %rd4;
add.u64 %rd5, %rd4, %rd2;
st.global.wt.f32 [%rd5], %f1;
mov.u64 %rd21, %clock64;
setp.ge.u64 %p1, %rd21, %rd20;
selp.u32 %r4, 1, 0, %p1;
ld.param.u64 %rd6, [pok];
cvta.to.global.u64 %rd6, %rd6;
add.u64 %rd6, %rd6, %rd2;
st.global.u32 [%rd6], %r4;
ret;""")
    launch(k, 1, 8, [out, a, ok])
    np.testing.assert_array_equal(out, a * 4)
    assert ok.tolist() == [1] * 8


def test_dynamic_smem_size_register():
    out = np.zeros(1, dtype=np.uint32)
    k = ptx_kernel(".param .u64 pout", """
mov.u32 %r1, %dynamic_smem_size;
ld.param.u64 %rd1, [pout];
cvta.to.global.u64 %rd1, %rd1;
st.global.u32 [%rd1], %r1;
ret;""", decls=".extern .shared .align 4 .b8 dsm[];\n")
    launch(k, 1, 1, [out], shared_mem=384)
    assert out[0] == 384


def test_integer_literal_forms():
    d, e, f, g, h = run_op("mov.u32 %d, 0b1010;\nmov.u32 %e, 017;\nadd.u32 %f, %a, 0x10U;\n"
                           "add.s32 %g, %a, -5;\nmov.u64 %h, 0xFFFFFFFFFFFFFFFF;",
                           [("a", "u32", [100])],
                           [("d", "u32"), ("e", "u32"), ("f", "u32"), ("g", "s32"), ("h", "u64")])
    assert (int(d[0]), int(e[0]), int(f[0]), int(g[0]), int(h[0])) == (10, 15, 116, 95, 2**64 - 1)


def test_large_grid_many_blocks():
    n = 1000 * 32 + 7
    a = np.arange(n, dtype=np.float32)
    out = np.zeros(n, dtype=np.float32)
    k = ptx_kernel(".param .u64 pout, .param .u64 pin, .param .u32 n", GID + """
ld.param.u32 %r4, [n];
setp.ge.u32 %p1, %r3, %r4;
@%p1 bra DONE;
ld.param.u64 %rd1, [pin];
cvta.to.global.u64 %rd1, %rd1;
mul.wide.u32 %rd2, %r3, 4;
add.u64 %rd3, %rd1, %rd2;
ld.global.f32 %f1, [%rd3];
fma.rn.f32 %f2, %f1, 0f40000000, 0f3F800000;
ld.param.u64 %rd4, [pout];
cvta.to.global.u64 %rd4, %rd4;
add.u64 %rd5, %rd4, %rd2;
st.global.f32 [%rd5], %f2;
DONE:
ret;""")
    launch(k, (n + 31) // 32, 32, [out, a, np.uint32(n)])
    np.testing.assert_array_equal(out, a * 2 + 1)


def test_symbol_plus_offset_addressing_and_address_initializers():
    decls = (".global .align 4 .u32 gtab2[4] = {10, 20, 30, 40};\n"
             ".const .align 8 .f64 ctab2[2] = {0d3FF8000000000000, 0d4004000000000000};\n"
             ".global .align 8 .u64 gptr[1] = {gtab2};\n"
             ".shared .align 4 .b8 shs[16];\n")
    out = np.zeros(6, dtype=np.float64)
    k = ptx_kernel(".param .u64 pout", """
ld.global.u32 %r1, [gtab2+8];
ld.const.f64 %fd1, [ctab2+8];
st.shared.u32 [shs+12], %r1;
ld.shared.u32 %r2, [shs+12];
ld.global.u64 %rd2, [gptr];
ld.u32 %r3, [%rd2+4];
mov.u64 %rd3, gtab2;
ld.global.u32 %r4, [%rd3+12];
ld.param.u64 %rd1, [pout];
cvta.to.global.u64 %rd1, %rd1;
cvt.rn.f64.u32 %fd2, %r1;
st.global.f64 [%rd1], %fd2;
st.global.f64 [%rd1+8], %fd1;
cvt.rn.f64.u32 %fd3, %r2;
st.global.f64 [%rd1+16], %fd3;
cvt.rn.f64.u32 %fd4, %r3;
st.global.f64 [%rd1+24], %fd4;
cvt.rn.f64.u32 %fd5, %r4;
st.global.f64 [%rd1+32], %fd5;
ld.param.u64 %rd4, [pout];
st.f64 [%rd4+40], %fd1;
ret;""", decls=decls)
    launch(k, 1, 1, [out])
    assert out.tolist() == [30.0, 2.5, 30.0, 20.0, 40.0, 2.5]


def test_vector_byte_loads_and_stores_extend():
    src = np.array([0x01, 0x80, 0xFF, 0x7F, 0xFE, 0x00, 0x81, 0x10], dtype=np.uint8)
    out = np.zeros(16, dtype=np.int32)
    out8 = np.zeros(8, dtype=np.uint8)
    k = ptx_kernel(".param .u64 pout, .param .u64 pout8, .param .u64 pin", """
ld.param.u64 %rd1, [pin];
cvta.to.global.u64 %rd1, %rd1;
ld.global.v4.s8 {%r1, %r2, %r3, %r4}, [%rd1];
ld.global.v4.u8 {%r5, %r6, %r7, %r8}, [%rd1];
ld.global.v2.s8 {%h1, %h2}, [%rd1+4];
ld.global.v2.u8 {%h3, %h4}, [%rd1+6];
cvt.s32.s16 %r9, %h1;
cvt.s32.s16 %r10, %h2;
cvt.u32.u16 %r11, %h3;
cvt.u32.u16 %r12, %h4;
ld.param.u64 %rd2, [pout];
cvta.to.global.u64 %rd2, %rd2;
st.global.v4.s32 [%rd2], {%r1, %r2, %r3, %r4};
st.global.v4.s32 [%rd2+16], {%r5, %r6, %r7, %r8};
st.global.v4.s32 [%rd2+32], {%r9, %r10, %r11, %r12};
ld.param.u64 %rd3, [pout8];
cvta.to.global.u64 %rd3, %rd3;
st.global.v4.u8 [%rd3], {%r4, %r3, %r2, %r1};
st.global.v2.u8 [%rd3+4], {%h2, %h1};
mov.u32 %r13, 0x1234;
st.global.u8 [%rd3+6], %r13;
st.global.b8 [%rd3+7], %r13;
ret;""")
    launch(k, 1, 1, [out, out8, src])
    s8 = src.view(np.int8).astype(int).tolist()
    u8 = src.astype(int).tolist()
    assert out[:4].tolist() == s8[:4]
    assert out[4:8].tolist() == u8[:4]
    assert out[8:12].tolist() == [s8[4], s8[5], u8[6], u8[7]]
    assert out8.tolist() == [u8[3], u8[2], u8[1], u8[0], u8[5], u8[4], 0x34, 0x34]


def test_cluster_registers_of_a_launch_without_clusters_and_griddepcontrol():
    """sm_90 code reads cluster registers; a launch without cluster dimensions is a grid of
    one-block clusters. griddepcontrol has nothing to wait for (stream order)."""
    out = np.zeros((2 * 3, 8), np.uint32)      # rows of 32 bytes: the .v4 store aligned
    k = ptx_kernel(".param .u64 pout", """
griddepcontrol.wait;
mov.u32 %r0, %tid.x;
mov.u32 %r1, %ctaid.x;
mov.u32 %r2, %ctaid.y;
mov.u32 %r4, %clusterid.x;
mov.u32 %r5, %clusterid.y;
mov.u32 %r6, %nclusterid.x;
mov.u32 %r7, %cluster_ctarank;
mov.u32 %r8, %cluster_nctarank;
mov.u32 %r9, %cluster_ctaid.x;
mov.pred %p1, %is_explicit_cluster;
selp.u32 %r10, 100, 0, %p1;
add.u32 %r9, %r9, %r10;
mov.u32 %r11, %cluster_nctaid.y;
add.u32 %r8, %r8, %r11;
mad.lo.u32 %r3, %r2, 2, %r1;
mul.wide.u32 %rd1, %r3, 32;
ld.param.u64 %rd2, [pout];
cvta.to.global.u64 %rd2, %rd2;
add.u64 %rd2, %rd2, %rd1;
st.global.v4.u32 [%rd2], {%r4, %r5, %r6, %r7};
st.global.v2.u32 [%rd2+16], {%r8, %r9};
griddepcontrol.launch_dependents;
ret;""")
    launch(k, (2, 3), 1, [out])
    cx, cy = np.meshgrid(np.arange(2), np.arange(3))
    want = np.stack([cx.ravel(), cy.ravel(), np.full(6, 2), np.zeros(6), np.full(6, 2), np.zeros(6),
                     np.zeros(6), np.zeros(6)], 1)
    np.testing.assert_array_equal(out, want)


def test_vector_moves_are_one_parallel_assignment():
    """mov.v4 {a, b, c, d}, {c, d, a, b} reads every source before it writes (the ISA's
    vector move is one assignment; element by element it gave [c, d, c, d]); also through a
    vector register (ZLUDA's vector_extract, checked on an NVIDIA GPU: 1 2 3 4 -> 3 4 1 2)."""
    n = 64
    vals = np.arange(4 * n, dtype=np.uint32).reshape(n, 4) * 7 + 1
    body = ("mov.v4.u32 {%a, %b, %c, %d}, {%c, %d, %a, %b};\n"
            "mov.v2.u32 {%e, %f}, {%f, %e};\n"
            "mov.u32 %oa, %a;\nmov.u32 %ob, %b;\nmov.u32 %oc, %c;\nmov.u32 %od, %d;\n"
            "mov.u32 %oe, %e;\nmov.u32 %of, %f;")
    ins = [(x, "u32", vals[:, i]) for i, x in enumerate("abcd")]
    ins += [("e", "u32", vals[:, 0]), ("f", "u32", vals[:, 1])]
    outs = run_op(body, ins, [(f"o{x}", "u32") for x in "abcdef"])
    for got, col in zip(outs, [2, 3, 0, 1, 1, 0]):
        same_ints(got, vals[:, col], "u32")
    # through a .v4 vector register and back, rotating as ZLUDA's test does
    k = ptx_kernel(".param .u64 pout, .param .u64 pin", """
.reg .u16 %t<4>;
.reg .v4 .u16 %foo;
ld.param.u64 %rd1, [pin];
ld.param.u64 %rd2, [pout];
ld.global.v4.u8 {%t0, %t1, %t2, %t3}, [%rd1];
mov.v4.u16 %foo, {%t1, %t2, %t3, %t0};
mov.v4.u16 {%t2, %t3, %t0, %t1}, %foo;
mov.v4.u16 {%t3, %t0, %t1, %t2}, {%t2, %t3, %t0, %t1};
st.global.v4.u8 [%rd2], {%t0, %t1, %t2, %t3};
""")
    src, out = np.array([1, 2, 3, 4], np.uint8), np.zeros(4, np.uint8)
    launch(k, (1,), (1,), [out, src])
    assert out.tolist() == [3, 4, 1, 2]


@pytest.mark.parametrize("mode", ["", "0", "all"])
def test_32_bit_shared_addresses_wrap_at_32_bits(monkeypatch, mode):
    """[%r+12] with a 32-bit %r = s - 8 is s + 4: the sum wraps at 32 bits (Rodinia's nw
    kernel does this). It was computed in 64 bits and raised a false out-of-bounds error
    ("shared memory offset 4294967300"), in every executor form."""
    monkeypatch.setenv("DPTX_CPU_VECTOR", mode)
    k = ptx_kernel(".param .u64 pout", """
.shared .align 4 .b32 s[16];
mov.u32 %r5, %tid.x;
mov.u32 %r1, s;
shl.b32 %r6, %r5, 2;
add.s32 %r7, %r1, %r6;
st.shared.u32 [%r7], %r5;
bar.sync 0;
add.s32 %r2, %r7, -8;
ld.shared.u32 %r4, [%r2+12];
ld.param.u64 %rd1, [pout];
mul.wide.u32 %rd2, %r5, 4;
add.s64 %rd3, %rd1, %rd2;
st.global.u32 [%rd3], %r4;
""")
    out = np.zeros(15, np.uint32)
    launch(k, (1,), (15,), [out])
    assert out[:14].tolist() == list(range(1, 15))     # s[i + 1] (s[15] is never written)


def test_a_kernel_parameter_address_reads_the_parameter():
    """mov.b64 %rd, param gives the parameter's .param address, which ld.param [%rd] reads
    (ZLUDA's param_is_addressable); an offset past the parameters is a bounds fault, not a
    read of host memory."""
    import dptx
    k = ptx_kernel(".param .u64 pout, .param .u64 pv, .param .u32 pk", """
mov.b64 %rd1, pv;
ld.param.b64 %rd2, [%rd1];
mov.b64 %rd3, pk;
ld.param.u32 %r1, [%rd3];
ld.param.u64 %rd4, [pout];
st.global.u64 [%rd4], %rd2;
st.global.u32 [%rd4+8], %r1;
""")
    out = np.zeros(2, np.uint64)
    launch(k, (1,), (1,), [out, np.uint64(0x1234_5678_9ABC_DEF0), np.uint32(77)])
    assert int(out[0]) == 0x1234_5678_9ABC_DEF0 and int(out[1]) & 0xFFFFFFFF == 77
    bad = ptx_kernel(".param .u64 pout", """
mov.b64 %rd1, pout;
add.s64 %rd1, %rd1, 4096;
ld.param.b64 %rd2, [%rd1];
ld.param.u64 %rd4, [pout];
st.global.u64 [%rd4], %rd2;
""")
    with pytest.raises(dptx.DptxMemoryError):
        launch(bad, (1,), (1,), [np.zeros(1, np.uint64)])


def test_globals_declared_in_a_body_and_generic_accesses_to_named_variables():
    """A .global variable declared in a kernel body has static storage like a module
    variable (ZLUDA's cp_async copies from one); a .shared or .local variable named in a
    generic access ([s] without a state space) means its generic address, as cvta gives."""
    k = ptx_kernel(".param .u64 pout", """
.global .b32 table[4] = {1, 2, 3, 4};
.shared .align 16 .b32 s[4];
.local .align 8 .b8 scratch[8];
mov.u32 %r0, %tid.x;
setp.eq.u32 %p1, %r0, 0;
@!%p1 bra.uni DONE;
cp.async.ca.shared.global [s], [table], 16, 12;
cp.async.wait_all;
ld.b32 %r1, [s];
ld.b32 %r2, [s+8];
ld.b32 %r3, [s+12];
st.u32 [scratch+4], %r2;
ld.u32 %r4, [scratch+4];
ld.global.u32 %r5, [table+12];
ld.param.u64 %rd1, [pout];
st.global.v4.u32 [%rd1], {%r1, %r3, %r4, %r5};
DONE:
""")
    out = np.zeros(4, np.uint32)
    launch(k, (1,), (32,), [out])
    assert out.tolist() == [1, 0, 3, 4]      # cp-size 16, src-size 12: the last word is zero


def test_a_register_plus_a_constant_as_a_source_operand():
    """ptxas takes ``reg + imm`` as a source operand (ZLUDA's reg_local stores ``temp + 1``
    to local memory; checked on an NVIDIA GPU: 12 -> 13): the register's value plus the
    constant, at the register's width (wrapping), negative offsets too."""
    vals32 = np.array([0, 5, 0xFFFFFFFF, 0x7FFFFFFF] * 16, np.uint32)
    outs = run_op("add.u32 %oa, %a - 7, %a + 0x10;", [("a", "u32", vals32)], [("oa", "u32")])
    same_ints(outs, (2 * vals32.astype(np.uint64) + 9) % 2**32, "u32")
    k = ptx_kernel(".param .u64 pout, .param .u64 pin", GID + """
.local .align 8 .b8 scratch[8];
ld.param.u64 %rd1, [pin];
ld.param.u64 %rd2, [pout];
shl.b64 %rd0, %rd0, 3;
add.u64 %rd1, %rd1, %rd0;
add.u64 %rd2, %rd2, %rd0;
ld.global.u64 %rd3, [%rd1];
st.u64 [scratch], %rd3 + 1;
ld.u64 %rd3, [scratch+0];
st.global.u64 [%rd2], %rd3;
""")
    vals64 = np.array([12, 0, 2**64 - 1, 2**63], np.uint64)
    out = np.zeros(4, np.uint64)
    launch(k, (1,), (4,), [out, vals64])
    assert out.tolist() == [13, 1, 0, 2**63 + 1]


def test_a_float_register_plus_a_constant_is_refused():
    from dptx.errors import PtxUnsupportedError
    with pytest.raises(PtxUnsupportedError, match=r"line \d+, column \d+: '%f \+ \.\.\.' adds a "
                       r"constant to a register; supported for integer"):
        ptx_kernel(".param .u64 p", ".reg .f32 %f;\nmov.f32 %f, 0f3F800000;\n"
                   "st.global.f32 [%rd1], %f + 1;")
