"""Tensor-core instructions (dptx/cpu/renderer/lowering/matrix.py) against numpy: mma.sync m16n8k16
and ldmatrix. The fragments each lane holds are built here from the ISA's layout tables
("Matrix Fragments for mma.m16n8k16 with floating point type": groupID = lane / 4,
threadID_in_group = lane % 4), independently of the executor; the product is numpy's."""
import numpy as np
import pytest

from ._util import kernel_from_ptx, kernel_text, launch


def halves_bits(x, kind):
    """16-bit patterns of ``x`` as f16 or bf16 (the values chosen are exact in both)."""
    if kind == "f16":
        return x.astype(np.float16).view(np.uint16)
    return (x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)


def a_fragments(bits):
    """(32, 4) b32 registers of a 16x16 A: a_i at row g + 8 ((i // 2) % 2), column
    2t + i % 2 + 8 (i >= 4); a_2j in the low half of register j."""
    out = np.zeros((32, 4), np.uint32)
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        for i in range(8):
            row, col = g + 8 * ((i // 2) % 2), 2 * t + (i & 1) + 8 * (i >= 4)
            out[lane, i // 2] |= np.uint32(bits[row, col]) << np.uint32(16 * (i & 1))
    return out


def b_fragments(bits):
    """(32, 2) b32 registers of a 16x8 B: b_i at row 2t + i % 2 + 8 (i >= 2), column g."""
    out = np.zeros((32, 2), np.uint32)
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        for i in range(4):
            row = 2 * t + (i & 1) + 8 * (i >= 2)
            out[lane, i // 2] |= np.uint32(bits[row, g]) << np.uint32(16 * (i & 1))
    return out


def cd_positions():
    """(lane, i) -> (row, column) of the 16x8 C and D: row g + 8 (i >= 2), column 2t + i % 2."""
    return {(lane, i): ((lane >> 2) + 8 * (i >= 2), 2 * (lane & 3) + (i & 1))
            for lane in range(32) for i in range(4)}


MMA_F32 = """
ld.param.u64 %rd1, [pa]; ld.param.u64 %rd2, [pb]; ld.param.u64 %rd3, [pc]; ld.param.u64 %rd4, [pd];
mov.u32 %r0, %tid.x;
mul.wide.u32 %rd5, %r0, 16; add.s64 %rd6, %rd1, %rd5;
ld.global.v4.u32 {%r1, %r2, %r3, %r4}, [%rd6];
mul.wide.u32 %rd7, %r0, 8; add.s64 %rd8, %rd2, %rd7;
ld.global.v2.u32 {%r5, %r6}, [%rd8];
add.s64 %rd9, %rd3, %rd5;
ld.global.v4.f32 {%f1, %f2, %f3, %f4}, [%rd9];
mma.sync.aligned.m16n8k16.row.col.f32.TYPE.TYPE.f32 {%f5, %f6, %f7, %f8}, {%r1, %r2, %r3, %r4}, {%r5, %r6}, {%f1, %f2, %f3, %f4};
add.s64 %rd10, %rd4, %rd5;
st.global.v4.f32 [%rd10], {%f5, %f6, %f7, %f8};
"""


@pytest.fixture(autouse=True, params=["warp-vectorized", "per-thread"])
def executor_form(request, monkeypatch):
    """Every test runs in both forms of the CPU executor: warp-vectorized (the default for
    kernels with warp operations: each phase of a matrix operation for all lanes in turn)
    and per thread (DPTX_CPU_VECTOR=0: lanes meet at warp sync points); results must be
    the same, bit for bit, as numpy's."""
    monkeypatch.setenv("DPTX_CPU_VECTOR", "1" if request.param == "warp-vectorized" else "0")
    return request.param


def test_tensor_core_kernels_run_warp_vectorized(executor_form):
    """A kernel with mma runs in the warp-vectorized form unless told otherwise."""
    from dptx.cpu import executor
    params = ".param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u64 pd"
    k = kernel_from_ptx(kernel_text(params, MMA_F32.replace("TYPE", "f16")))
    assert executor.compile_kernel(k).vector == (executor_form == "warp-vectorized")


@pytest.mark.parametrize("kind", ["f16", "bf16"])
def test_mma_m16n8k16_with_f32_accumulators(kind):
    rng = np.random.default_rng(3)
    # multiples of 1/8 in [-4, 4): exact in f16 and bf16, products and sums exact in f32
    A = rng.integers(-32, 32, (16, 16)) / 8.0
    B = rng.integers(-32, 32, (16, 8)) / 8.0
    C = rng.integers(-64, 64, (16, 8)) / 4.0
    k = kernel_from_ptx(kernel_text(".param .u64 pa, .param .u64 pb, .param .u64 pc, "
                                    ".param .u64 pd", MMA_F32.replace("TYPE", kind)))
    cfrag = np.zeros((32, 4), np.float32)
    for (lane, i), (r, c) in cd_positions().items():
        cfrag[lane, i] = C[r, c]
    dfrag = np.zeros((32, 4), np.float32)
    launch(k, (1,), (32,), [a_fragments(halves_bits(A, kind)), b_fragments(halves_bits(B, kind)),
                            cfrag, dfrag])
    D = np.zeros((16, 8), np.float32)
    for (lane, i), (r, c) in cd_positions().items():
        D[r, c] = dfrag[lane, i]
    assert np.array_equal(D, (A @ B + C).astype(np.float32))


def test_mma_m16n8k16_with_f16_accumulators_and_two_warps():
    """.f16 C and D (two f16x2 registers per lane: c0, c1 in the first); two warps of a block
    each run their own mma."""
    rng = np.random.default_rng(4)
    As = [rng.integers(-16, 16, (16, 16)) / 4.0 for _ in range(2)]
    Bs = [rng.integers(-16, 16, (16, 8)) / 4.0 for _ in range(2)]
    Cs = [rng.integers(-16, 16, (16, 8)) / 2.0 for _ in range(2)]
    body = """
ld.param.u64 %rd1, [pa]; ld.param.u64 %rd2, [pb]; ld.param.u64 %rd3, [pc]; ld.param.u64 %rd4, [pd];
mov.u32 %r0, %tid.x;
mul.wide.u32 %rd5, %r0, 16; add.s64 %rd6, %rd1, %rd5;
ld.global.v4.u32 {%r1, %r2, %r3, %r4}, [%rd6];
mul.wide.u32 %rd7, %r0, 8; add.s64 %rd8, %rd2, %rd7;
ld.global.v2.u32 {%r5, %r6}, [%rd8];
add.s64 %rd9, %rd3, %rd7;
ld.global.v2.u32 {%r7, %r8}, [%rd9];
mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%r9, %r10}, {%r1, %r2, %r3, %r4}, {%r5, %r6}, {%r7, %r8};
add.s64 %rd10, %rd4, %rd7;
st.global.v2.u32 [%rd10], {%r9, %r10};
"""
    k = kernel_from_ptx(kernel_text(".param .u64 pa, .param .u64 pb, .param .u64 pc, "
                                    ".param .u64 pd", body))
    afr = np.concatenate([a_fragments(halves_bits(A, "f16")) for A in As])
    bfr = np.concatenate([b_fragments(halves_bits(B, "f16")) for B in Bs])
    cfr = np.zeros((64, 2), np.uint32)
    for w, C in enumerate(Cs):
        bits = halves_bits(C, "f16")
        for (lane, i), (r, c) in cd_positions().items():
            cfr[32 * w + lane, i // 2] |= np.uint32(bits[r, c]) << np.uint32(16 * (i & 1))
    dfr = np.zeros((64, 2), np.uint32)
    launch(k, (1,), (64,), [afr, bfr, cfr, dfr])
    for w in range(2):
        want = (As[w] @ Bs[w] + Cs[w]).astype(np.float16)
        for (lane, i), (r, c) in cd_positions().items():
            got = (dfr[32 * w + lane, i // 2] >> np.uint32(16 * (i & 1))) & np.uint32(0xFFFF)
            assert np.uint16(got).view(np.float16) == want[r, c], (w, lane, i)


def test_unsupported_mma_forms_are_refused():
    import dptx
    body = MMA_F32.replace("m16n8k16.row.col", "m16n8k16.col.col").replace("TYPE", "f16")
    k = kernel_from_ptx(kernel_text(".param .u64 pa, .param .u64 pb, .param .u64 pc, "
                                    ".param .u64 pd", body))
    z = np.zeros(256, np.uint32)
    with pytest.raises(dptx.PtxUnsupportedError, match="row.col"):
        launch(k, (1,), (32,), [z, z, z, z])


@pytest.mark.parametrize("count", [1, 2, 4])
@pytest.mark.parametrize("trans", [False, True])
def test_ldmatrix(count, trans):
    """Lane l gives the address of row l % 8 of matrix l / 8 (16 bytes each, anywhere in
    shared memory); lane l receives, of each matrix, elements (l / 4, 2 (l % 4) + j), or
    transposed (2 (l % 4) + j, l / 4), j = 0 in the low half."""
    rng = np.random.default_rng(count)
    values = rng.integers(0, 1 << 16, 4 * 8 * 8).astype(np.uint16)      # 32 rows of 8
    order = rng.permutation(32)             # row r of matrix i is stored at slot order[8i + r]
    layout = np.zeros(32 * 8, np.uint16)
    for row in range(32):
        layout[8 * order[row]:8 * order[row] + 8] = values[8 * row:8 * row + 8]
    regs = ", ".join(f"%r{10 + i}" for i in range(count))
    body = f"""
ld.param.u64 %rd1, [pin]; ld.param.u64 %rd2, [pslot]; ld.param.u64 %rd3, [pout];
mov.u32 %r0, %tid.x;
mov.u32 %r1, s;
mul.wide.u32 %rd4, %r0, 16; add.s64 %rd5, %rd1, %rd4;
ld.global.v4.u32 {{%r2, %r3, %r4, %r5}}, [%rd5];
mad.lo.u32 %r6, %r0, 16, %r1;
st.shared.v4.u32 [%r6], {{%r2, %r3, %r4, %r5}};
bar.sync 0;
mul.wide.u32 %rd6, %r0, 4; add.s64 %rd7, %rd2, %rd6;
ld.global.u32 %r7, [%rd7];
mad.lo.u32 %r8, %r7, 16, %r1;
ldmatrix.sync.aligned.m8n8.x{count}{'.trans' if trans else ''}.shared.b16 {{{regs}}}, [%r8];
mul.wide.u32 %rd8, %r0, {4 * count}; add.s64 %rd9, %rd3, %rd8;
""" + "".join(f"st.global.u32 [%rd9+{4 * i}], %r{10 + i};\n" for i in range(count))
    k = kernel_from_ptx(kernel_text(".param .u64 pin, .param .u64 pslot, .param .u64 pout",
                                    body, decls=".shared .align 16 .b8 s[512];"))
    slots = np.array([order[lane] for lane in range(32)], np.uint32)
    out = np.zeros(32 * count, np.uint32)
    launch(k, (1,), (32,), [layout, slots, out])
    M = values.reshape(4, 8, 8)
    for lane in range(32):
        for i in range(count):
            got = int(out[lane * count + i])
            for j in range(2):
                r, c = (lane // 4, 2 * (lane % 4) + j)
                want = M[i, c, r] if trans else M[i, r, c]
                assert (got >> (16 * j)) & 0xFFFF == want, (lane, i, j)


@pytest.mark.parametrize("atype,btype,sat", [("s8", "s8", False), ("u8", "s8", False),
                                             ("s8", "u8", True)])
def test_mma_m16n8k32_integer(atype, btype, sat):
    """s8/u8 inputs, s32 accumulators: exact products, the sum wrapping at 32 bits, or
    clamped to the s32 range with .satfinite. Fragments: four 8-bit elements per register,
    a_i at row g + 8 ((i // 4) % 2), column 4t + i % 4 + 16 (i >= 8); b_i at row
    4t + i % 4 + 16 (i >= 4), column g."""
    rng = np.random.default_rng(5)
    lo = {"s8": -128, "u8": 0}
    A = rng.integers(lo[atype], lo[atype] + 256, (16, 32))
    B = rng.integers(lo[btype], lo[btype] + 256, (32, 8))
    C = rng.integers(-2**31, 2**31, (16, 8))
    C[0, :] = 2**31 - 5                 # row 0 overflows: wraps, or clamps with .satfinite
    afr = np.zeros((32, 4), np.uint32)
    bfr = np.zeros((32, 2), np.uint32)
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        for i in range(16):
            row, col = g + 8 * ((i // 4) % 2), 4 * t + (i & 3) + 16 * (i >= 8)
            afr[lane, i // 4] |= np.uint32(int(A[row, col]) & 0xFF) << np.uint32(8 * (i & 3))
        for i in range(8):
            row = 4 * t + (i & 3) + 16 * (i >= 4)
            bfr[lane, i // 4] |= np.uint32(int(B[row, g]) & 0xFF) << np.uint32(8 * (i & 3))
    cfr = np.zeros((32, 4), np.int32)
    for (lane, i), (r, c) in cd_positions().items():
        cfr[lane, i] = C[r, c]
    body = MMA_F32.replace("ld.global.v4.f32 {%f1, %f2, %f3, %f4}", "ld.global.v4.u32 {%r7, %r8, %r9, %r10}") \
        .replace("st.global.v4.f32 [%rd10], {%f5, %f6, %f7, %f8}", "st.global.v4.u32 [%rd10], {%r11, %r12, %r13, %r14}") \
        .replace("mma.sync.aligned.m16n8k16.row.col.f32.TYPE.TYPE.f32 {%f5, %f6, %f7, %f8}, "
                 "{%r1, %r2, %r3, %r4}, {%r5, %r6}, {%f1, %f2, %f3, %f4}",
                 f"mma.sync.aligned.m16n8k32.row.col{'.satfinite' if sat else ''}.s32.{atype}.{btype}.s32 "
                 "{%r11, %r12, %r13, %r14}, {%r1, %r2, %r3, %r4}, {%r5, %r6}, {%r7, %r8, %r9, %r10}")
    k = kernel_from_ptx(kernel_text(".param .u64 pa, .param .u64 pb, .param .u64 pc, "
                                    ".param .u64 pd", body))
    dfr = np.zeros((32, 4), np.int32)
    launch(k, (1,), (32,), [afr, bfr, cfr, dfr])
    exact = A.astype(np.int64) @ B.astype(np.int64) + C
    want = np.clip(exact, -2**31, 2**31 - 1) if sat else \
        ((exact + 2**31) % 2**32 - 2**31)
    for (lane, i), (r, c) in cd_positions().items():
        assert dfr[lane, i] == want[r, c], (lane, i, int(dfr[lane, i]), int(want[r, c]))


WMMA_GEMM = r'''#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <mma.h>
using namespace nvcuda;
extern "C" __global__ void gemm(const IN* a, const IN* b, ACC* c, int M, int N, int K, ACC alpha) {
    // one warp per TM x TN tile of C = alpha A B + C: A is M x K (ALAYOUT in memory),
    // B is K x N (BLAYOUT), C row-major; the leading dimensions are the whole matrices'
    int tm = blockIdx.y, tn = blockIdx.x;
    wmma::fragment<wmma::matrix_a, TM, TN, TK, FRAG, wmma::ALAYOUT> fa;
    wmma::fragment<wmma::matrix_b, TM, TN, TK, FRAG, wmma::BLAYOUT> fb;
    wmma::fragment<wmma::accumulator, TM, TN, TK, ACC> acc;
    wmma::load_matrix_sync(acc, c + tm * TM * N + tn * TN, N, wmma::mem_row_major);
    for (int i = 0; i < acc.num_elements; i++) acc.x[i] = acc.x[i] / alpha;
    for (int kk = 0; kk < K; kk += TK) {
        const IN* pa = ALAYOUT_IS_ROW ? a + tm * TM * K + kk : a + kk * M + tm * TM;
        const IN* pb = BLAYOUT_IS_ROW ? b + kk * N + tn * TN : b + tn * TN * K + kk;
        wmma::load_matrix_sync(fa, pa, ALAYOUT_IS_ROW ? K : M);
        wmma::load_matrix_sync(fb, pb, BLAYOUT_IS_ROW ? N : K);
        wmma::mma_sync(acc, fa, fb, acc);
    }
    for (int i = 0; i < acc.num_elements; i++) acc.x[i] = acc.x[i] * alpha;
    wmma::store_matrix_sync(c + tm * TM * N + tn * TN, acc, N, wmma::mem_row_major);
}'''


@pytest.mark.parametrize("shape", [(16, 16, 16), (32, 8, 16), (8, 32, 16)])
@pytest.mark.parametrize("kind,acc,alayout,blayout", [
    ("half", "float", "row_major", "col_major"), ("half", "float", "col_major", "row_major"),
    ("half", "half", "row_major", "row_major"), ("__nv_bfloat16", "float", "row_major", "col_major")])
def test_wmma_gemm_against_numpy(shape, kind, acc, alayout, blayout):
    """CUDA's WMMA API (nvcuda::wmma, through NVRTC): load_matrix_sync of A, B and C in
    either layout with leading dimensions, mma_sync, element-wise scaling of the accumulator
    fragment, store_matrix_sync; C = alpha (A B + C / alpha) against numpy."""
    import dptx
    from dptx import cpu
    tm, tn, tk = shape
    src = WMMA_GEMM
    for key, value in (("ALAYOUT_IS_ROW", str(alayout == "row_major").lower()),
                       ("BLAYOUT_IS_ROW", str(blayout == "row_major").lower()),
                       ("ALAYOUT", alayout), ("BLAYOUT", blayout), ("FRAG", kind),
                       ("IN", kind), ("ACC", acc),
                       ("TM", str(tm)), ("TN", str(tn)), ("TK", str(tk))):
        src = src.replace(key, value)
    k = dptx.RawModule(src, arch="compute_80").get_function("gemm")
    rng = np.random.default_rng(sum(shape))
    M, N, K = 2 * tm, 3 * tn, 3 * tk
    A = rng.integers(-8, 8, (M, K)) / 4
    B = rng.integers(-8, 8, (K, N)) / 4
    C = rng.integers(-8, 8, (M, N)) / 2
    bits = (lambda x: halves_bits(x, "bf16")) if kind == "__nv_bfloat16" else \
        (lambda x: halves_bits(x, "f16"))
    a_mem = bits(A if alayout == "row_major" else np.ascontiguousarray(A.T))
    b_mem = bits(B if blayout == "row_major" else np.ascontiguousarray(B.T))
    acc_dtype = np.float32 if acc == "float" else np.float16
    c_mem = C.astype(acc_dtype)
    alpha = 2.0
    cpu.launch(k, (N // tn, M // tm), (32,),
               [np.ascontiguousarray(a_mem), np.ascontiguousarray(b_mem), c_mem,
                np.int32(M), np.int32(N), np.int32(K),
                np.float32(alpha) if acc == "float" else np.float16(alpha)])
    want = (alpha * (A @ B + C / alpha)).astype(acc_dtype)
    assert np.array_equal(c_mem, want)


@pytest.mark.parametrize("count", [1, 4])
@pytest.mark.parametrize("trans", [False, True])
def test_stmatrix_writes_where_ldmatrix_reads(count, trans):
    """stmatrix is ldmatrix's inverse: every lane puts its fragment (built here from the
    layout, lane l holding (l / 4, 2 (l % 4) + j), or transposed) at rows whose addresses the
    lanes give; the shared rows, copied out, are numpy's matrices."""
    rng = np.random.default_rng(10 + count)
    M = rng.integers(0, 1 << 16, (count, 8, 8)).astype(np.uint16)
    frag = np.zeros((32, count), np.uint32)
    for lane in range(32):
        for i in range(count):
            for j in range(2):
                r, c = lane // 4, 2 * (lane % 4) + j
                v = M[i, c, r] if trans else M[i, r, c]
                frag[lane, i] |= np.uint32(v) << np.uint32(16 * j)
    order = rng.permutation(32)
    regs = ", ".join(f"%r{10 + i}" for i in range(count))
    body = f"""
ld.param.u64 %rd1, [pfrag]; ld.param.u64 %rd2, [pslot]; ld.param.u64 %rd3, [pout];
mov.u32 %r0, %tid.x;
mov.u32 %r1, s;
mul.wide.u32 %rd4, %r0, {4 * count}; add.s64 %rd5, %rd1, %rd4;
""" + "".join(f"ld.global.u32 %r{10 + i}, [%rd5+{4 * i}];\n" for i in range(count)) + f"""
mul.wide.u32 %rd6, %r0, 4; add.s64 %rd7, %rd2, %rd6;
ld.global.u32 %r7, [%rd7];
mad.lo.u32 %r8, %r7, 16, %r1;
stmatrix.sync.aligned.m8n8.x{count}{'.trans' if trans else ''}.shared.b16 [%r8], {{{regs}}};
bar.sync 0;
mad.lo.u32 %r9, %r0, 16, %r1;
ld.shared.v4.u32 {{%r2, %r3, %r4, %r5}}, [%r9];
mul.wide.u32 %rd8, %r0, 16; add.s64 %rd9, %rd3, %rd8;
st.global.v4.u32 [%rd9], {{%r2, %r3, %r4, %r5}};
"""
    k = kernel_from_ptx(kernel_text(".param .u64 pfrag, .param .u64 pslot, .param .u64 pout",
                                    body, decls=".shared .align 16 .b8 s[512];"))
    out = np.zeros(32 * 8, np.uint16)
    launch(k, (1,), (32,), [frag, order.astype(np.uint32), out])
    rows = out.reshape(32, 8)
    for i in range(count):
        for r in range(8):
            assert rows[order[8 * i + r]].tolist() == M[i, r].tolist(), (i, r)


def test_movmatrix_transposes_a_fragment():
    rng = np.random.default_rng(12)
    M = rng.integers(0, 1 << 16, (8, 8)).astype(np.uint16)

    def fragment(A):
        f = np.zeros(32, np.uint32)
        for lane in range(32):
            for j in range(2):
                f[lane] |= np.uint32(A[lane // 4, 2 * (lane % 4) + j]) << np.uint32(16 * j)
        return f
    body = """
ld.param.u64 %rd1, [pin]; ld.param.u64 %rd2, [pout];
mov.u32 %r0, %tid.x;
mul.wide.u32 %rd3, %r0, 4;
add.s64 %rd4, %rd1, %rd3;
ld.global.u32 %r1, [%rd4];
movmatrix.sync.aligned.m8n8.trans.b16 %r2, %r1;
add.s64 %rd5, %rd2, %rd3;
st.global.u32 [%rd5], %r2;
"""
    k = kernel_from_ptx(kernel_text(".param .u64 pin, .param .u64 pout", body))
    out = np.zeros(32, np.uint32)
    launch(k, (1,), (32,), [fragment(M), out])
    assert out.tolist() == fragment(M.T).tolist()


# -- every mma.sync shape and type: fragments from the ISA's tables ----------------------------
# Each entry: element i of a lane's A (or B) fragment -> (row, column) of A (or (k, n) of B),
# as the ISA's "Matrix Fragments for mma.m<M>n8k<K>" tables give them per type (g = groupID,
# t = threadID_in_group); elements are packed low first, E per register.
def _tables(shape, kind):
    def a16(per_group, k_cols):
        # rows g for the first ``per_group`` elements of each pair of registers, g + 8 for
        # the next; columns per_group * t + i % per_group, + k_cols for the second pair
        return lambda g, t, i: (g + 8 * ((i // per_group) % 2),
                                per_group * t + i % per_group + k_cols * (i >= 2 * per_group))

    def b_rows(per, k_cols):
        return lambda g, t, i: (per * t + i % per + k_cols * (i >= per), g)

    if kind in ("f16", "bf16"):
        if shape == "m16n8k8":      # a0,a1: (g, 2t+i); a2,a3: (g+8, ...); b0,b1: (2t+i, g)
            return a16(2, 8), b_rows(2, 8)
        return a16(2, 8), b_rows(2, 8)      # m16n8k16: the tests above
    if kind == "tf32":
        if shape == "m16n8k4":      # a0: (g, t), a1: (g+8, t); b0: (t, g)
            return (lambda g, t, i: (g + 8 * i, t)), (lambda g, t, i: (t, g))
        # m16n8k8: a0 (g, t), a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4); b0 (t, g), b1 (t+4, g)
        return (lambda g, t, i: (g + 8 * (i % 2), t + 4 * (i // 2))), \
            (lambda g, t, i: (t + 4 * i, g))
    if kind == "f64":
        if shape == "m8n8k4":       # a0: (g, t); b0: (t, g)
            return (lambda g, t, i: (g, t)), (lambda g, t, i: (t, g))
        # m16n8k{4,8,16}: a_i at (g + 8 (i % 2), t + 4 (i / 2)); b_i at (t + 4 i, g)
        return (lambda g, t, i: (g + 8 * (i % 2), t + 4 * (i // 2))), \
            (lambda g, t, i: (t + 4 * i, g))
    per = {"s8": 4, "u8": 4, "e4m3": 4, "e5m2": 4, "s4": 8, "u4": 8, "b1": 32}[kind]
    rows, depth = (8, int(shape.split("k")[1])) if shape.startswith("m8n8") else \
        (16, int(shape.split("k")[1]))
    if rows == 8:                   # one register each: a_i (g, per t + i); b_i (per t + i, g)
        return (lambda g, t, i: (g, per * t + i)), (lambda g, t, i: (per * t + i, g))
    # m16n8: a_i at row g + 8 ((i / per) % 2), column per t + i % per + 4 per (i >= 2 per);
    # b_i at row per t + i % per + 4 per (i >= per), column g
    return a16(per, 4 * per), b_rows(per, 4 * per)


def _cd(rows):
    """(lane, i) -> (row, column) of C and D: row g (+ 8 for i >= 2), column 2t + i % 2."""
    return {(lane, i): ((lane >> 2) + 8 * (i >= 2), 2 * (lane & 3) + (i & 1))
            for lane in range(32) for i in range(rows // 4)}


BITS = {"f16": 16, "bf16": 16, "tf32": 32, "f64": 64, "s8": 8, "u8": 8, "s4": 4, "u4": 4, "b1": 1,
        "e4m3": 8, "e5m2": 8}


def _pack(matrix_bits, position, count, bits, reg_bits):
    """(32, registers) words of each lane's fragment of a matrix given as element bit
    patterns."""
    per = reg_bits // bits
    words = np.zeros((32, count), np.uint64)
    for lane in range(32):
        for i in range(count * per):
            r, c = position(lane >> 2, lane & 3, i)
            words[lane, i // per] |= np.uint64(int(matrix_bits[r, c]) & ((1 << bits) - 1)) \
                << np.uint64(bits * (i % per))
    return words


def _run_mma(shape, dtype, atype, btype, ctype, A_bits, B_bits, C_words, extra=""):
    rows, depth = (8 if shape.startswith("m8n8") else 16), int(shape.split("k")[1])
    reg_bits = 64 if atype == "f64" else 32
    per = reg_bits // BITS[atype]
    na, nb = rows * depth // (32 * per), depth * 8 // (32 * per)
    nc = rows // 8 if ctype == "f16" else rows // 4
    nd = rows // 8 if dtype == "f16" else rows // 4
    apos, bpos = _tables(shape, atype)
    afr = _pack(A_bits, apos, na, BITS[atype], reg_bits)
    bfr = _pack(B_bits, bpos, nb, BITS[btype], reg_bits)
    w = "b64" if reg_bits == 64 else "b32"
    cw = "b64" if ctype == "f64" else "b32"
    dw = "b64" if dtype == "f64" else "b32"
    lines = [f".reg .{w} %ma<{na}>;", f".reg .{w} %mb<{nb}>;", f".reg .{cw} %mc<{nc}>;",
             f".reg .{dw} %md<{nd}>;",
             "ld.param.u64 %rd1, [pa]; ld.param.u64 %rd2, [pb]; ld.param.u64 %rd3, [pc]; "
             "ld.param.u64 %rd4, [pd];",
             "mov.u32 %r0, %tid.x;", "mul.wide.u32 %rd5, %r0, 8;"]
    for name, n, base, width in (("ma", na, "%rd1", w), ("mb", nb, "%rd2", w),
                                 ("mc", nc, "%rd3", cw)):
        lines.append(f"mul.wide.u32 %rd6, %r0, {8 * n}; add.s64 %rd7, {base}, %rd6;")
        for j in range(n):
            lines.append(f"ld.global.u{width[1:]} %{name}{j}, [%rd7+{8 * j}];")
    regs = lambda name, n: "{" + ", ".join(f"%{name}{j}" for j in range(n)) + "}"
    lines.append(f"mma.sync.aligned.{shape}.row.col{extra}.{dtype}.{atype}.{btype}.{ctype} "
                 f"{regs('md', nd)}, {regs('ma', na)}, {regs('mb', nb)}, {regs('mc', nc)};")
    lines.append(f"mul.wide.u32 %rd6, %r0, {8 * nd}; add.s64 %rd7, %rd4, %rd6;")
    for j in range(nd):
        lines.append(f"st.global.u{dw[1:]} [%rd7+{8 * j}], %md{j};")
    k = kernel_from_ptx(kernel_text(".param .u64 pa, .param .u64 pb, .param .u64 pc, "
                                    ".param .u64 pd", "\n".join(lines)))
    # every register travels in a 64-bit word of its lane's row (the low half for b32)
    dfr = np.zeros((32, nd), np.uint64)
    launch(k, (1,), (32,), [afr, bfr, C_words.astype(np.uint64), dfr])
    return dfr


def _c_words(C, ctype, rows):
    """Each lane's C registers (one 64-bit word per register) from the matrix C."""
    if ctype == "f16":
        bits = C.astype(np.float16).view(np.uint16)
        words = np.zeros((32, rows // 8), np.uint64)
        for (lane, i), (r, c) in _cd(rows).items():
            words[lane, i // 2] |= np.uint64(bits[r, c]) << np.uint64(16 * (i & 1))
        return words
    words = np.zeros((32, rows // 4), np.uint64)
    for (lane, i), (r, c) in _cd(rows).items():
        if ctype == "f32":
            words[lane, i] = np.float32(C[r, c]).view(np.uint32)
        elif ctype == "f64":
            words[lane, i] = np.float64(C[r, c]).view(np.uint64)
        else:
            words[lane, i] = int(C[r, c]) & 0xFFFFFFFF
    return words


def _d_matrix(dfr, dtype, rows):
    D = np.zeros((rows, 8), {"f16": np.float16, "f32": np.float32, "f64": np.float64,
                             "s32": np.int64}[dtype])
    for (lane, i), (r, c) in _cd(rows).items():
        if dtype == "f16":
            D[r, c] = np.uint16((int(dfr[lane, i // 2]) >> (16 * (i & 1))) & 0xFFFF).view(np.float16)
        elif dtype == "f32":
            D[r, c] = np.uint32(int(dfr[lane, i]) & 0xFFFFFFFF).view(np.float32)
        elif dtype == "f64":
            D[r, c] = dfr[lane, i].view(np.float64)
        else:
            D[r, c] = np.uint32(int(dfr[lane, i]) & 0xFFFFFFFF).view(np.int32)
    return D


@pytest.mark.parametrize("shape,dtype,kind,ctype", [
    ("m16n8k8", "f32", "f16", "f32"), ("m16n8k8", "f16", "f16", "f16"),
    ("m16n8k8", "f32", "f16", "f16"), ("m16n8k8", "f16", "f16", "f32"),
    ("m16n8k16", "f32", "f16", "f16"),
    ("m16n8k8", "f32", "bf16", "f32"),
    ("m16n8k4", "f32", "tf32", "f32"), ("m16n8k8", "f32", "tf32", "f32")])
def test_mma_float_shapes(shape, dtype, kind, ctype):
    """Multiples of 1/8 in [-4, 4): exact in f16, bf16 and tf32; the exact A B + C rounded
    once to D's type is numpy's."""
    rows, depth = 16, int(shape.split("k")[1])
    rng = np.random.default_rng(depth + len(kind))
    A = rng.integers(-32, 32, (rows, depth)) / 8.0
    B = rng.integers(-32, 32, (depth, 8)) / 8.0
    C = rng.integers(-64, 64, (rows, 8)) / 4.0
    if kind == "tf32":
        A_bits, B_bits = (x.astype(np.float32).view(np.uint32) for x in (A, B))
    else:
        A_bits, B_bits = halves_bits(A, kind), halves_bits(B, kind)
    dfr = _run_mma(shape, dtype, kind, kind, ctype, A_bits, B_bits, _c_words(C, ctype, rows))
    want = A @ B + (C.astype(np.float16).astype(np.float64) if ctype == "f16" else C)
    got = _d_matrix(dfr, dtype, rows)
    assert np.array_equal(got, want.astype(got.dtype)), (got, want)


@pytest.mark.parametrize("shape", ["m8n8k4", "m16n8k4", "m16n8k8", "m16n8k16"])
def test_mma_f64(shape):
    """Doubles of all magnitudes: D within an ulp of the exact A B + C (computed here in
    rationals), where plain double arithmetic can be many ulps off after cancellation."""
    from fractions import Fraction
    rows, depth = (8 if shape == "m8n8k4" else 16), int(shape.split("k")[1])
    rng = np.random.default_rng(depth * rows)
    A = rng.standard_normal((rows, depth)) * 2.0 ** rng.integers(-20, 20, (rows, depth))
    B = rng.standard_normal((depth, 8))
    C = -(A @ B) * (1 + 1e-9)                 # cancellation: the result is tiny
    dfr = _run_mma(shape, "f64", "f64", "f64", "f64", A.view(np.uint64), B.view(np.uint64),
                   _c_words(C, "f64", rows))
    got = _d_matrix(dfr, "f64", rows)
    for r in range(rows):
        for c in range(8):
            exact = sum(Fraction(float(A[r, k])) * Fraction(float(B[k, c])) for k in range(depth)) \
                + Fraction(float(C[r, c]))
            nearest = float(exact)
            assert abs(got[r, c] - nearest) <= np.spacing(abs(nearest)), (r, c, got[r, c], nearest)


@pytest.mark.parametrize("shape,atype,btype,sat", [
    ("m8n8k16", "s8", "u8", False), ("m16n8k16", "u8", "s8", True),
    ("m8n8k32", "s4", "s4", False), ("m16n8k32", "u4", "s4", True),
    ("m16n8k64", "s4", "u4", False)])
def test_mma_integer_shapes(shape, atype, btype, sat):
    """8- and 4-bit integers, s32 accumulators: exact, wrapping at 32 bits or clamped with
    .satfinite (row 0 overflows)."""
    rows, depth = (8 if shape.startswith("m8n8") else 16), int(shape.split("k")[1])
    rng = np.random.default_rng(depth)
    span = {"s8": (-128, 128), "u8": (0, 256), "s4": (-8, 8), "u4": (0, 16)}
    A = rng.integers(*span[atype], (rows, depth))
    B = rng.integers(*span[btype], (depth, 8))
    C = rng.integers(-2**31, 2**31, (rows, 8))
    C[0, :] = 2**31 - 3
    dfr = _run_mma(shape, "s32", atype, btype, "s32", A, B, _c_words(C, "s32", rows),
                   ".satfinite" if sat else "")
    exact = A.astype(np.int64) @ B.astype(np.int64) + C
    want = np.clip(exact, -2**31, 2**31 - 1) if sat else (exact + 2**31) % 2**32 - 2**31
    assert np.array_equal(_d_matrix(dfr, "s32", rows), want)


@pytest.mark.parametrize("shape", ["m8n8k128", "m16n8k128", "m16n8k256"])
@pytest.mark.parametrize("op", ["xor", "and"])
def test_mma_single_bit(shape, op):
    """b1: D = C + popc(row of A op column of B), as the ISA defines .xor.popc/.and.popc."""
    rows, depth = (8 if shape.startswith("m8n8") else 16), int(shape.split("k")[1])
    rng = np.random.default_rng(depth + len(op))
    A = rng.integers(0, 2, (rows, depth))
    B = rng.integers(0, 2, (depth, 8))
    C = rng.integers(-1000, 1000, (rows, 8))
    dfr = _run_mma(shape, "s32", "b1", "b1", "s32", A, B, _c_words(C, "s32", rows),
                   f".{op}.popc")
    combined = (A[:, :, None] ^ B[None]) if op == "xor" else (A[:, :, None] & B[None])
    assert np.array_equal(_d_matrix(dfr, "s32", rows), combined.sum(axis=1) + C)


def test_mma_forms_that_do_not_exist_are_refused():
    """A shape a type does not have, bf16 with f16 accumulators, b1 without its operation,
    Volta's m8n8k4 .f16: refused naming the instruction, never computed some other way."""
    import dptx
    cases = [("m16n8k4", "f32", "f16", "f32", ""), ("m16n8k16", "f16", "bf16", "f16", ""),
             ("m8n8k128", "s32", "b1", "s32", ""), ("m16n8k32", "s32", "s8", "s32", ".xor.popc")]
    for shape, dtype, atype, ctype, extra in cases:
        with pytest.raises(dptx.PtxUnsupportedError, match=f"mma.{shape}"):
            z = np.zeros((256, 256), np.int64)
            _run_mma(shape, dtype, atype, atype, ctype, z, z, np.zeros((32, 4)), extra)


@pytest.mark.parametrize("kind,acc,shape,alayout,blayout", [
    ("double", "double", (8, 8, 4), "row_major", "col_major"),
    ("double", "double", (8, 8, 4), "col_major", "row_major"),
    ("tf32", "float", (16, 16, 8), "row_major", "col_major"),
    ("tf32", "float", (16, 16, 8), "col_major", "row_major"),
    ("signed char", "int", (16, 16, 16), "row_major", "col_major"),
    ("unsigned char", "int", (32, 8, 16), "col_major", "row_major"),
    ("signed char", "int", (8, 32, 16), "row_major", "row_major")])
def test_wmma_gemm_double_tf32_and_int8(kind, acc, shape, alayout, blayout):
    """The other WMMA types nvcuda::wmma has on sm_80: double (m8n8k4), tf32 (m16n16k8,
    fragments of wmma::precision::tf32 loaded from floats) and 8-bit integers with int
    accumulators, through NVRTC, against numpy (exact: the values are small)."""
    import dptx
    from dptx import cpu
    tm, tn, tk = shape
    frag = "wmma::precision::tf32" if kind == "tf32" else kind
    storage = "float" if kind == "tf32" else kind
    src = WMMA_GEMM
    for key, value in (("ALAYOUT_IS_ROW", str(alayout == "row_major").lower()),
                       ("BLAYOUT_IS_ROW", str(blayout == "row_major").lower()),
                       ("ALAYOUT", alayout), ("BLAYOUT", blayout), ("FRAG", frag),
                       ("IN", storage), ("ACC", acc),
                       ("TM", str(tm)), ("TN", str(tn)), ("TK", str(tk))):
        src = src.replace(key, value)
    k = dptx.RawModule(src, arch="compute_80").get_function("gemm")
    rng = np.random.default_rng(sum(shape) + len(kind))
    M, N, K = 2 * tm, 3 * tn, 3 * tk
    dtype = {"double": np.float64, "tf32": np.float32, "signed char": np.int8,
             "unsigned char": np.uint8}[kind]
    acc_dtype = {"double": np.float64, "float": np.float32, "int": np.int32}[acc]
    if kind in ("signed char", "unsigned char"):
        lo = -128 if kind == "signed char" else 0
        A, B = rng.integers(lo, lo + 256, (M, K)), rng.integers(lo, lo + 256, (K, N))
        C = rng.integers(-2**20, 2**20, (M, N)) * 2
        alpha = np.int32(2)
    else:
        A, B = rng.integers(-8, 8, (M, K)) / 4, rng.integers(-8, 8, (K, N)) / 4
        C = rng.integers(-8, 8, (M, N)) / 2
        alpha = acc_dtype(2.0)
    a_mem = (A if alayout == "row_major" else A.T).astype(dtype)
    b_mem = (B if blayout == "row_major" else B.T).astype(dtype)
    c_mem = C.astype(acc_dtype)
    cpu.launch(k, (N // tn, M // tm), (32,),
               [np.ascontiguousarray(a_mem), np.ascontiguousarray(b_mem), c_mem,
                np.int32(M), np.int32(N), np.int32(K), alpha])
    if acc == "int":
        want = (2 * (A.astype(np.int64) @ B.astype(np.int64) + C // 2)).astype(np.int32)
    else:
        want = (2.0 * (A @ B + C / 2.0)).astype(acc_dtype)
    assert np.array_equal(c_mem, want)


SUB_BYTE_GEMM = r'''#include <mma.h>
using namespace nvcuda;
namespace xp = wmma::experimental;
extern "C" __global__ void gemm(const unsigned* a, const unsigned* b, int* c, int M, int N, int K) {
    // one warp per 8x8 tile of C = A B + C (or the bit counts of A op B + C for b1): A is
    // M x K row-major, B K x N column-major, both packed (ELEMS per 32-bit word)
    int tm = blockIdx.y, tn = blockIdx.x;
    wmma::fragment<wmma::matrix_a, 8, 8, TK, xp::precision::AT, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 8, 8, TK, xp::precision::BT, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 8, 8, TK, int> acc;
    wmma::load_matrix_sync(acc, c + tm * 8 * N + tn * 8, N, wmma::mem_row_major);
    for (int kk = 0; kk < K; kk += TK) {
        wmma::load_matrix_sync(fa, a + (tm * 8 * K + kk) / ELEMS, K);
        wmma::load_matrix_sync(fb, b + (tn * 8 * K + kk) / ELEMS, K);
        MMA;
    }
    wmma::store_matrix_sync(c + tm * 8 * N + tn * 8, acc, N, wmma::mem_row_major);
}'''


def _packed(rows, bits):
    """Rows of small integers packed as wmma's sub-byte loads read them: element j of a
    row in bits bits * j onwards (the first in the low bits of the lowest byte)."""
    mask = (1 << bits) - 1
    per_word = 32 // bits
    words = np.zeros((rows.shape[0], rows.shape[1] // per_word), np.uint32)
    for j in range(per_word):
        words |= (rows[:, j::per_word].astype(np.int64) & mask).astype(np.uint32) << np.uint32(bits * j)
    return words


@pytest.mark.parametrize("atype,btype,op", [("s4", "s4", None), ("u4", "u4", None),
                                            ("b1", "b1", "XOR"), ("b1", "b1", "AND")])
def test_wmma_sub_byte_gemm(atype, btype, op):
    """nvcuda::wmma's experimental precisions: s4/u4 (m8n8k32) and b1 (m8n8k128, bmma_sync
    with XOR or AND and POPC) through NVRTC, tiles over a larger matrix, against numpy."""
    import dptx
    from dptx import cpu
    bits = 1 if atype == "b1" else 4
    tk = 128 if bits == 1 else 32
    mma = ("wmma::mma_sync(acc, fa, fb, acc)" if op is None else
           f"wmma::bmma_sync(acc, fa, fb, acc, xp::bmmaBitOp{op}, xp::bmmaAccumulateOpPOPC)")
    src = SUB_BYTE_GEMM
    for key, value in (("TK", str(tk)), ("AT", atype), ("BT", btype),
                       ("ELEMS", str(32 // bits)), ("MMA", mma)):
        src = src.replace(key, value)
    k = dptx.RawModule(src, arch="compute_80").get_function("gemm")
    rng = np.random.default_rng(bits + len(atype + btype) + (op == "AND"))
    M, N, K = 16, 24, 3 * tk
    ranges = {"s4": (-8, 8), "u4": (0, 16), "b1": (0, 2)}
    A = rng.integers(*ranges[atype], (M, K))
    B = rng.integers(*ranges[btype], (K, N))
    C = rng.integers(-1000, 1000, (M, N)).astype(np.int32)
    c = C.copy()
    cpu.launch(k, (N // 8, M // 8), (32,), [_packed(A, bits), _packed(np.ascontiguousarray(B.T), bits),
                                             c, np.int32(M), np.int32(N), np.int32(K)])
    if op is None:
        want = A @ B + C
    elif op == "XOR":
        want = (A[:, None, :] ^ B.T[None, :, :]).sum(-1) + C
    else:
        want = (A[:, None, :] & B.T[None, :, :]).sum(-1) + C
    assert np.array_equal(c, want)


def _fp8_value(code: int, kind: str) -> float:
    """The value of an FP8 code as the OCP 8-bit formats define it (e4m3: bias 7, no
    infinities, S.1111.111 NaN; e5m2: bias 15, IEEE-like)."""
    man_bits, bias = (3, 7) if kind == "e4m3" else (2, 15)
    sign = -1.0 if code & 0x80 else 1.0
    e, m = (code >> man_bits) & ((1 << (7 - man_bits)) - 1), code & ((1 << man_bits) - 1)
    if kind == "e4m3" and (code & 0x7F) == 0x7F or kind == "e5m2" and e == 31 and m:
        return float("nan")
    if kind == "e5m2" and e == 31:
        return sign * float("inf")
    if e == 0:
        return sign * m * 2.0 ** (1 - bias - man_bits)
    return sign * (1 + m / (1 << man_bits)) * 2.0 ** (e - bias)


def _fp8_codes(values, kind):
    table = {}
    for code in range(256):
        v = _fp8_value(code, kind)
        if v == v and (v not in table or code < table[v]):
            table[v] = code
    return np.vectorize(lambda v: table[float(v)])(values).astype(np.uint8)


@pytest.mark.parametrize("shape,atype,btype,dtype,ctype", [
    ("m16n8k32", "e4m3", "e4m3", "f32", "f32"), ("m16n8k32", "e5m2", "e4m3", "f32", "f32"),
    ("m16n8k16", "e4m3", "e5m2", "f32", "f32"), ("m16n8k32", "e5m2", "e5m2", "f16", "f16"),
    ("m16n8k16", "e4m3", "e5m2", "f16", "f16")])
def test_mma_fp8(shape, atype, btype, dtype, ctype):
    """sm_89's FP8 mma (the 8-bit fragment layout of .s8): values that e4m3 (4 significant
    bits) or e5m2 (3) hold exactly, their codes from the OCP formats' definition; the exact
    A B + C rounded once to D's type is numpy's."""
    rows, depth = 16, int(shape.split("k")[1])
    rng = np.random.default_rng(depth + len(atype + btype + dtype))
    span = {"e4m3": 15, "e5m2": 7}
    A = rng.integers(-span[atype], span[atype] + 1, (rows, depth)) / 4.0
    B = rng.integers(-span[btype], span[btype] + 1, (depth, 8)) / 4.0
    C = rng.integers(-64, 64, (rows, 8)) / 4.0
    dfr = _run_mma(shape, dtype, atype, btype, ctype, _fp8_codes(A, atype),
                   _fp8_codes(B, btype), _c_words(C, ctype, rows))
    want = A @ B + (C.astype(np.float16).astype(np.float64) if ctype == "f16" else C)
    got = _d_matrix(dfr, dtype, rows)
    assert np.array_equal(got, want.astype(got.dtype)), (got, want)


def test_fp8_mma_with_mixed_accumulators_is_refused():
    """ptxas rejects .f16 D with .f32 C (and the reverse) for FP8 inputs, as dptx does."""
    import dptx
    C = np.zeros((16, 8))
    with pytest.raises(dptx.PtxUnsupportedError, match="e4m3"):
        _run_mma("m16n8k32", "f16", "e4m3", "e4m3", "f32", np.zeros((16, 32), np.uint8),
                 np.zeros((32, 8), np.uint8), _c_words(C, "f32", 16))


def test_fp8_reference_values():
    """The reference decoder against values the OCP FP8 specification lists."""
    assert _fp8_value(0x7E, "e4m3") == 448.0 and _fp8_value(0x01, "e4m3") == 2.0 ** -9
    assert _fp8_value(0x7B, "e5m2") == 57344.0 and _fp8_value(0x01, "e5m2") == 2.0 ** -16
    assert _fp8_value(0x7C, "e5m2") == float("inf") and _fp8_value(0xFF, "e4m3") != _fp8_value(0xFF, "e4m3")
