"""The device heap (dptx/cpu/renderer/heap_ir.py): malloc and free in kernels, per launch, against
numpy; NULL when the heap is used up (as on a GPU, with a settable size); a second free, or
a free of a pointer malloc did not return, stops the kernel with an error naming it."""
import numpy as np
import pytest

import dptx
from dptx import cpu

SOURCE = r'''
extern "C" __global__ void sums(int* out, int n, int rounds) {
    // each thread allocates, fills, sums and frees a scratch array, several times
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int s = 0;
    for (int r = 0; r < rounds; r++) {
        int* p = (int*)malloc(n * sizeof(int));
        if (p == nullptr) { out[t] = -1; return; }
        for (int i = 0; i < n; i++) p[i] = i * t + r;
        for (int i = 0; i < n; i++) s += p[i];
        free(p);
    }
    out[t] = s;
}
extern "C" __global__ void keep(long long* out, int n) {
    // blocks that stay allocated: distinct, 16-byte aligned, writable
    char* p = (char*)malloc(n);
    if (p != nullptr) for (int i = 0; i < n; i++) p[i] = (char)threadIdx.x;
    out[threadIdx.x] = (long long)p;
}
extern "C" __global__ void bad_free(int* out, int mode) {
    int* p = (int*)malloc(16);
    if (mode == 1) { free(p); free(p); }
    if (mode == 2) free(out);
}'''


@pytest.fixture(scope="module")
def module():
    return dptx.RawModule(SOURCE)


@pytest.mark.parametrize("mode", ["", "0", "all"])
def test_malloc_and_free_in_a_loop(module, monkeypatch, mode):
    monkeypatch.setenv("DPTX_CPU_VECTOR", mode)
    out = np.zeros(256, np.int32)
    cpu.launch(module.get_function("sums"), (4,), (64,), [out, np.int32(10), np.int32(50)])
    t = np.arange(256)
    want = sum((np.arange(10)[:, None] * t[None, :] + r).sum(axis=0) for r in range(50))
    assert np.array_equal(out, want.astype(np.int32))


def test_blocks_are_distinct_aligned_and_null_when_the_heap_is_used_up(module):
    out = np.zeros(32, np.int64)
    cpu.launch(module.get_function("keep"), (1,), (32,), [out, np.int32(100)])
    assert len(set(out.tolist())) == 32 and all(a % 16 == 0 and a != 0 for a in out)
    # a 64 KiB heap (512 bytes of it its header) holds 7 blocks of 8000 bytes (8 KiB each with
    # their 16-byte headers, rounded to a power of two): the other 25 mallocs return NULL
    out[:] = 0
    cpu.launch(module.get_function("keep"), (1,), (32,), [out, np.int32(8000)],
               heap_size=64 << 10)
    got = (out != 0).sum()
    assert 0 < got < 32 and got == (64 * 1024 - 512) // 8192, out
    with pytest.raises(dptx.LaunchError, match="heap"):
        cpu.launch(module.get_function("keep"), (1,), (32,), [out, np.int32(8)], heap_size=16)


@pytest.mark.parametrize("mode,what", [(1, "freed already"), (2, "not a block malloc")])
def test_a_bad_free_is_an_error(module, mode, what):
    with pytest.raises(dptx.DptxMemoryError, match="free\\(\\) of address") as e:
        cpu.launch(module.get_function("bad_free"), (1,), (1,),
                   [np.zeros(4, np.int32), np.int32(mode)])
    assert what.split()[0] in str(e.value) and "block 0" in str(e.value)
