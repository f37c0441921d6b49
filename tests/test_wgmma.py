"""``wgmma.mma_async`` (sm_90) against the PTX ISA: matrices laid out in shared memory by the
ISA's canonical layouts (computed here in numpy, independently of any compiler), multiplied
by a hand-written kernel, and D read back through the ISA's register fragment layout; in
every form of the CPU executor. Triton's own sm_90 matmuls (which swizzle) are in
tests/test_generated_ptx.py."""
import numpy as np
import pytest

import dptx
from dptx.errors import DptxMemoryError, PtxUnsupportedError

FORMS = ["0", "1", "all"]


def kernel_source(n: int, scale_a: int, trans_b: int, atype: str) -> str:
    """A warpgroup copies ``nbytes`` of ``src`` into shared memory, runs one wgmma
    m64n{n}k16 with descriptors ``da``/``db`` (their start address added to the shared
    array's), D starting at 1.0 (scale-d: ``accumulate`` != 0), and stores thread t's D
    registers at out[t * n / 2 + i]."""
    regs = n // 2
    d = ",".join(f"%f{i}" for i in range(regs))
    init = "\n".join(f"    mov.f32 %f{i}, 0f3F800000;" for i in range(regs))
    stores = "\n".join(f"    st.global.f32 [%rd10+{4 * i}], %f{i};" for i in range(regs))
    return f"""
.version 8.0
.target sm_90a
.address_size 64
.visible .entry wg(.param .u64 src, .param .u64 out, .param .u64 da, .param .u64 db,
                   .param .u32 nbytes, .param .u32 accumulate)
{{
    .reg .b32 %r<20>;
    .reg .b64 %rd<20>;
    .reg .pred %p<4>;
    .reg .f32 %f<{regs + 1}>;
    .reg .b16 %h<2>;
    .shared .align 1024 .b8 smem[16384];
    ld.param.u64 %rd1, [src];
    ld.param.u64 %rd2, [out];
    ld.param.u64 %rd3, [da];
    ld.param.u64 %rd4, [db];
    ld.param.u32 %r1, [nbytes];
    ld.param.u32 %r2, [accumulate];
    mov.u32 %r3, %tid.x;
    mov.u32 %r4, smem;
    mov.u32 %r5, %r3;
COPY:
    setp.ge.u32 %p1, %r5, %r1;
    @%p1 bra COPIED;
    cvt.u64.u32 %rd5, %r5;
    add.u64 %rd6, %rd1, %rd5;
    ld.global.u8 %h0, [%rd6];
    add.u32 %r6, %r4, %r5;
    st.shared.u8 [%r6], %h0;
    add.u32 %r5, %r5, 128;
    bra COPY;
COPIED:
    bar.sync 0;
    shr.u32 %r7, %r4, 4;
    cvt.u64.u32 %rd7, %r7;
    add.u64 %rd8, %rd3, %rd7;
    add.u64 %rd9, %rd4, %rd7;
    setp.ne.u32 %p2, %r2, 0;
{init}
    fence.proxy.async.shared::cta;
    wgmma.fence.sync.aligned;
    wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{atype}.{atype} {{{d}}}, %rd8, %rd9, %p2, {scale_a}, 1, 0, {trans_b};
    wgmma.commit_group.sync.aligned;
    wgmma.wait_group.sync.aligned 0;
    mul.lo.u32 %r8, %r3, {4 * regs};
    cvt.u64.u32 %rd11, %r8;
    add.u64 %rd10, %rd2, %rd11;
{stores}
    ret;
}}"""


def descriptor(start: int, lbo: int, sbo: int, swizzle: int = 0, base: int = 0) -> int:
    """The ISA's matrix descriptor: matrix-descriptor-encode(x) = (x & 0x3FFFF) >> 4."""
    enc = lambda x: (x & 0x3FFFF) >> 4
    return enc(start) | enc(lbo) << 16 | enc(sbo) << 32 | base << 49 | swizzle << 62


def k_major_interleaved(mat: np.ndarray, image: np.ndarray, at: int, lbo: int, sbo: int):
    """``mat`` (rows = M or N, 16 columns of K) into ``image`` at byte ``at`` by the ISA's
    K-major no-swizzle layout ((8,m),(T,2k)):((1T,SBO),(1,LBO)), T = 8 for 16-bit types."""
    for r in range(mat.shape[0]):
        for k in range(16):
            byte = at + (r % 8) * 16 + (r // 8) * sbo + (k % 8) * 2 + (k // 8) * lbo
            image[byte:byte + 2] = np.frombuffer(mat[r, k].tobytes(), np.uint8)


def mn_major_interleaved(mat: np.ndarray, image: np.ndarray, at: int, lbo: int, sbo: int):
    """``mat`` (16 rows of K, columns = N) by the ISA's MN-major no-swizzle layout
    ((T,1,m),(8,k)):((1,T,SBO),(1T,LBO))."""
    for k in range(16):
        for c in range(mat.shape[1]):
            byte = at + (c % 8) * 2 + (c // 8) * sbo + (k % 8) * 16 + (k // 8) * lbo
            image[byte:byte + 2] = np.frombuffer(mat[k, c].tobytes(), np.uint8)


def fragments(d: np.ndarray, n: int) -> np.ndarray:
    """The ISA's m64nNk16 accumulator layout: thread t (warp w, lane l) holds d_i at row
    16 w + l / 4 + 8 ((i / 2) % 2), column 8 (i / 4) + 2 (l % 4) + i % 2."""
    out = np.zeros((128, n // 2), np.float32)
    for t in range(128):
        w, lane = divmod(t, 32)
        for i in range(n // 2):
            out[t, i] = d[16 * w + lane // 4 + 8 * ((i // 2) % 2), 8 * (i // 4) + 2 * (lane % 4) + i % 2]
    return out


@pytest.fixture(params=FORMS)
def form(request, monkeypatch):
    monkeypatch.setenv("DPTX_CPU_VECTOR", request.param)
    return request.param


def _launch(n, scale_a, trans_b, atype, image, da, db, accumulate, nbytes=None):
    k = dptx.RawModule(ptx=kernel_source(n, scale_a, trans_b, atype)).get_function("wg")
    out = np.zeros(128 * n // 2, np.float32)
    dptx.cpu.launch(k, (1,), (128,), (image, out, np.uint64(da), np.uint64(db),
                                      np.uint32(image.size if nbytes is None else nbytes),
                                      np.uint32(accumulate)))
    return out.reshape(128, n // 2)


@pytest.mark.parametrize("n, trans_b, scale_a, accumulate", [
    (16, 0, 1, 1), (24, 1, 1, 1), (32, 0, -1, 1), (8, 1, 1, 0)])
def test_wgmma_f16_against_the_isa_layouts(form, n, trans_b, scale_a, accumulate):
    rng = np.random.default_rng(n)
    a = rng.standard_normal((64, 16)).astype(np.float16)
    b = rng.standard_normal((16, n)).astype(np.float16)
    image = np.zeros(16384, np.uint8)
    # A at byte 0: 8 rows of 16 bytes per core matrix, K halves 128 B apart, rows-of-8 256 B
    k_major_interleaved(a, image, 0, lbo=128, sbo=256)
    if trans_b:     # B N-major at 8192: 8 columns per 16 bytes, N blocks 256 B, K halves 128 B
        mn_major_interleaved(b, image, 8192, lbo=128, sbo=256)
    else:           # B K-major at 8192 (stored as N rows of K)
        k_major_interleaved(np.ascontiguousarray(b.T), image, 8192, lbo=128, sbo=256)
    got = _launch(n, scale_a, trans_b, "f16", image, descriptor(0, 128, 256),
                  descriptor(8192, 128, 256), accumulate)
    exact = scale_a * (a.astype(np.float64) @ b.astype(np.float64)) + (1.0 if accumulate else 0.0)
    # one rounding of the exact result to f32 (f16 products are exact; so is their sum here)
    assert np.array_equal(got, fragments(exact.astype(np.float32), n))


def test_wgmma_bf16(form):
    rng = np.random.default_rng(5)
    bits = lambda m: (m.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    a32 = (rng.standard_normal((64, 16)).astype(np.float32).view(np.uint32) & 0xFFFF0000).view(np.float32)
    b32 = (rng.standard_normal((16, 16)).astype(np.float32).view(np.uint32) & 0xFFFF0000).view(np.float32)
    image = np.zeros(16384, np.uint8)
    k_major_interleaved(bits(a32), image, 0, lbo=128, sbo=256)
    mn_major_interleaved(bits(b32), image, 8192, lbo=128, sbo=256)
    got = _launch(16, 1, 1, "bf16", image, descriptor(0, 128, 256), descriptor(8192, 128, 256), 1)
    exact = a32.astype(np.float64) @ b32.astype(np.float64) + 1.0
    assert np.array_equal(got, fragments(exact.astype(np.float32), 16))


def test_wgmma_reading_outside_shared_memory_is_a_fault():
    image = np.zeros(64, np.uint8)
    with pytest.raises(DptxMemoryError, match="shared memory offset"):
        _launch(16, 1, 0, "f16", image, descriptor(16384 - 64, 128, 256),
                descriptor(0, 128, 256), 1)


def test_wgmma_descriptor_with_a_base_offset_is_refused():
    image = np.zeros(64, np.uint8)
    with pytest.raises(PtxUnsupportedError, match="non-zero base offset"):
        _launch(16, 1, 0, "f16", image, descriptor(0, 16, 1024, swizzle=1, base=3),
                descriptor(0, 16, 1024, swizzle=1), 1)


@pytest.mark.parametrize("text, why", [
    ("wgmma.mma_async.sync.aligned.m64n16k16.f16.f16.f16 {%r1,%r2,%r3,%r4}, %rd1, %rd2, %p1, 1, 1, 0, 0;",
     "f32"),
    ("wgmma.mma_async.sync.aligned.m64n16k8.f32.tf32.tf32 {%f0,%f1,%f2,%f3,%f4,%f5,%f6,%f7}, %rd1, %rd2, %p1, 1, 1;",
     "m64nNk16"),
    ("wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16 {%f0,%f1,%f2,%f3,%f4,%f5,%f6,%f7}, {%r1,%r2,%r3,%r4}, %rd2, %p1, 1, 1, 1;",
     "A in registers"),
])
def test_other_wgmma_forms_are_refused_by_name(text, why):
    ptx = f""".version 8.0
.target sm_90a
.address_size 64
.visible .entry k(.param .u64 p)
{{
    .reg .b32 %r<8>;
    .reg .b64 %rd<4>;
    .reg .pred %p<2>;
    .reg .f32 %f<10>;
    {text}
    ret;
}}"""
    k = dptx.RawModule(ptx=ptx).get_function("k")
    with pytest.raises(PtxUnsupportedError, match=why):
        dptx.cpu.launch(k, (1,), (128,), (np.zeros(4, np.uint8),))
