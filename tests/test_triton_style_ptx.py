"""PTX in the shapes Triton writes (tests/ptx_samples/triton_row_sum.ptx): masked scalar loads
and stores with one-element brace lists, in every form of the CPU executor (the
warp-vectorized one refused them before: "ld.global.b32 is not supported by the CPU executor
(destination {%r1})")."""
from pathlib import Path

import numpy as np
import pytest

import dptx

PTX = (Path(__file__).parent / "ptx_samples" / "triton_row_sum.ptx").read_text()


def row_sums_by_the_kernels_order(x: np.ndarray, n: int) -> np.ndarray:
    """numpy, in the kernel's order: each warp's butterfly sum over its 32 values (masked ones
    0), then (w0 + w1) + (w2 + w3), in float32."""
    rows = x.reshape(-1, n)
    padded = np.zeros((rows.shape[0], 128), np.float32)
    padded[:, :n] = rows
    warps = padded.reshape(-1, 4, 32)
    for step in (16, 8, 4, 2, 1):
        lanes = np.arange(32)
        warps = (warps + warps[:, :, lanes ^ step]).astype(np.float32)
    w = warps[:, :, 0]
    return ((w[:, 0] + w[:, 1]) + (w[:, 2] + w[:, 3])).astype(np.float32)


@pytest.mark.parametrize("form", ["0", "1", "all"])
def test_triton_style_masked_loads_and_stores_in_every_form(form, monkeypatch):
    monkeypatch.setenv("DPTX_CPU_VECTOR", form)
    kernel = dptx.RawModule(ptx=PTX).get_function("row_sum")
    n, rows = 100, 6
    x = np.random.default_rng(3).standard_normal(rows * n).astype(np.float32)
    out = np.full(rows, -1, np.float32)
    dptx.cpu.launch(kernel, (rows,), (128,), (x, out, np.uint32(n)))
    np.testing.assert_array_equal(out, row_sums_by_the_kernels_order(x, n))
    np.testing.assert_allclose(out, x.reshape(rows, n).sum(axis=1), rtol=1e-5, atol=1e-5)
