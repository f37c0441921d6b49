"""Triton programs on dptx as their users write them (``import dptx.triton as triton`` in
place of ``import triton``; ``import triton.language as tl`` unchanged): ``kernel[grid](...)``
on dptx arrays, compiled by Triton's own compiler for sm_80 without a GPU, run as a script
from a scratch folder on the embedded cluster; results against numpy. Skipped without
Triton."""
import pytest

from tests.test_scripts import frameworks_page_program, run_script

pytest.importorskip("triton")

PROGRAM = r'''
import numpy as np
import dptx
import dptx.triton as triton                 # was: import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(axis=0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask),
             mask=mask)


@triton.jit
def softmax_kernel(out_ptr, in_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(in_ptr + row * stride + cols, mask=cols < n_cols, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    tl.store(out_ptr + row * stride + cols, e / tl.sum(e, axis=0), mask=cols < n_cols)


@triton.autotune(configs=[triton.Config({"BM": 32, "BN": 32, "BK": 32}, num_warps=4),
                          triton.Config({"BM": 64, "BN": 32, "BK": 32}, num_warps=4)],
                 key=["M", "N", "K"])
@triton.jit
def matmul_kernel(a, b, c, M, N, K, sam, sbk, scm,
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        x = tl.load(a + rm[:, None] * sam + (k + rk)[None, :],
                    mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0.0)
        y = tl.load(b + (k + rk)[:, None] * sbk + rn[None, :],
                    mask=((k + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(x, y)
    tl.store(c + rm[:, None] * scm + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def histogram_kernel(keys, counts, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    k = tl.load(keys + offs, mask=offs < n)
    tl.atomic_add(counts + k, scale, mask=offs < n)


rng = np.random.default_rng(0)
n = 98_432
hx, hy = rng.random(n, np.float32), rng.random(n, np.float32)
x, y = dptx.asarray(hx), dptx.asarray(hy)
out = dptx.empty_like(x)
add_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, out, n, BLOCK=1024)
print("add", np.array_equal(out.get(), hx + hy))

h = rng.standard_normal((300, 781), np.float32)
a = dptx.asarray(h)
o = dptx.empty_like(a)
softmax_kernel[(300,)](o, a, a.strides[0] // 4, 781, BLOCK=1024)
ref = np.exp(h - h.max(1, keepdims=True))
ref /= ref.sum(1, keepdims=True)
print("softmax", bool(np.abs(o.get() - ref).max() < 1e-6))

M, N, K = 96, 80, 70
ha, hb = rng.standard_normal((M, K)).astype(np.float16), rng.standard_normal((K, N)).astype(np.float16)
c = dptx.zeros((M, N), np.float32)
matmul_kernel[lambda m: (triton.cdiv(M, m["BM"]), triton.cdiv(N, m["BN"]))](
    dptx.asarray(ha), dptx.asarray(hb), c, M, N, K, K, N, N)
# f16 products are exact in f32; only the order of the f32 sums differs from numpy's
print("matmul", bool(np.abs(c.get() - ha.astype(np.float32) @ hb.astype(np.float32)).max() < 1e-4),
      matmul_kernel.best_config.kwargs["BM"] in (32, 64))

keys = rng.integers(0, 50, 10_000).astype(np.int32)
counts = dptx.zeros(50, np.int32)
histogram_kernel[(triton.cdiv(10_000, 512),)](dptx.asarray(keys), counts, 10_000, 3, BLOCK=512)
print("histogram", np.array_equal(counts.get(), 3 * np.bincount(keys, minlength=50)))

try:        # a numpy array where Triton wants a device array: Triton's own refusal
    add_kernel[(1,)](hx, y, out, n, BLOCK=1024)
except Exception as exc:
    print("refused", type(exc).__name__, str(exc))
'''


def _errors(stderr: str) -> list:
    """stderr's lines, without the warning Triton 3.9 itself prints about its FP-fusion default
    (two lines, whatever runs the kernels)."""
    lines = stderr.splitlines()
    return [line for i, line in enumerate(lines)
            if "TRITON_DEFAULT_FP_FUSION" not in line
            and not (line.strip() == "warn_once(FP_FUSION_DEFAULT_WARNING)")]


@pytest.mark.timeout(600)
def test_a_triton_program_runs_with_one_import_changed(tmp_path):
    done = run_script(tmp_path, PROGRAM)
    assert done.returncode == 0, done.stderr
    assert _errors(done.stderr) == [], done.stderr
    assert done.stdout.splitlines() == [
        "add True", "softmax True", "matmul True True", "histogram True",
        "refused TypeError failed to specialize argument of type: ndarray"]


@pytest.mark.timeout(600)
def test_the_frameworks_pages_triton_program_runs_as_written(tmp_path):
    done = run_script(tmp_path, frameworks_page_program("import dptx.triton as triton"))
    assert done.returncode == 0, done.stderr
    assert _errors(done.stderr) == [], done.stderr
    assert done.stdout.strip() == "[1. 2. 3. 4.]"
