"""Windows over buffers (DESIGN.md point 6): a launch given only bytes [lo, hi) of a buffer
runs as on the whole buffer inside them, and an access outside them but inside the buffer
raises FootprintViolation (an access outside the buffer stays an out-of-bounds error)."""
import numpy as np
import pytest

import dptx
from dptx import cpu
from dptx.device.window import Window
from dptx.errors import FootprintViolation

SRC = r'''
__device__ float table[256];
extern "C" __global__ void shift_add(const float* x, float* y, int n, int shift) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i + shift] + table[i & 255];
}
extern "C" __global__ void block_sum(const float* x, float* y, int shift) {
    __shared__ float s[128];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = x[i + shift];
    __syncthreads();
    for (int o = 64; o > 0; o >>= 1) {
        if (threadIdx.x < o) s[threadIdx.x] += s[threadIdx.x + o];
        __syncthreads();
    }
    if (threadIdx.x == 0) y[blockIdx.x] = s[0];
}
'''


@pytest.fixture(scope="module")
def mod():
    return dptx.RawModule(SRC)


def window(host: np.ndarray, lo: int, hi: int) -> Window:
    raw = host.view(np.uint8)
    return Window(raw[lo:hi].copy(), lo, raw.size)


@pytest.mark.parametrize("vector", ["", "0", "all"])
def test_plain_kernel_on_windows(mod, monkeypatch, vector):
    monkeypatch.setenv("DPTX_CPU_VECTOR", vector)
    k = mod.get_function("shift_add")
    n = 4096
    x = np.random.default_rng(1).standard_normal(n + 64).astype(np.float32)
    table = np.arange(256, dtype=np.float32)
    cpu.module_state(k.module)["table"][:] = table.view(np.uint8)
    # blocks 8..15 (elements 1024..2047) read x[1024+3 .. 2048+3) and write y[1024..2048)
    xw = window(x, 4 * (1024 + 3), 4 * (2048 + 3))
    y = np.zeros(n, np.float32)
    yw = window(y, 4 * 1024, 4 * 2048)
    cpu.launch(k, (32,), (128,), [xw, yw, n, 3], blocks=range(8, 16))
    got = yw.data.view(np.float32)
    i = np.arange(1024, 2048)
    assert np.array_equal(got, x[i + 3] + table[i & 255])


@pytest.mark.parametrize("vector", ["", "0", "all"])
def test_read_outside_window_is_a_footprint_violation(mod, monkeypatch, vector):
    monkeypatch.setenv("DPTX_CPU_VECTOR", vector)
    k = mod.get_function("shift_add")
    n = 4096
    x = np.ones(n + 64, np.float32)
    xw = window(x, 4 * 1024, 4 * 2048)         # one element short at the end for shift 1
    yw = window(np.zeros(n, np.float32), 4 * 1024, 4 * 2048)
    with pytest.raises(FootprintViolation) as info:
        cpu.launch(k, (32,), (128,), [xw, yw, n, 1], blocks=range(8, 16))
    message = str(info.value)
    assert "argument 0" in message and "[4096, 8192)" in message and "offset 8192" in message
    assert "block 15" in message and "thread 127" in message
    assert info.value.kernel == "shift_add"


def test_access_past_the_buffer_stays_a_memory_error(mod):
    k = mod.get_function("shift_add")
    n = 256
    x = np.ones(n, np.float32)
    xw = window(x, 0, 4 * n)                   # the whole buffer, as a window
    yw = window(np.zeros(n, np.float32), 0, 4 * n)
    with pytest.raises(dptx.DptxMemoryError) as info:
        cpu.launch(k, (2,), (128,), [xw, yw, n, 1])
    assert not isinstance(info.value, FootprintViolation)
    assert "argument 0" in str(info.value) and "(1024 bytes)" in str(info.value)


def test_module_variable_window(mod):
    k = mod.get_function("shift_add")
    n = 128
    x = np.zeros(n + 1, np.float32)
    table = np.arange(256, dtype=np.float32) * 2
    tw = window(table, 0, 4 * 128)            # i & 255 < 128 for these threads
    y = np.zeros(n, np.float32)
    cpu.launch(k, (1,), (128,), [x, y, n, 0], globals={"table": tw})
    assert np.array_equal(y, table[:128])
    tw_short = window(table, 0, 4 * 64)
    with pytest.raises(FootprintViolation, match="module variable table"):
        cpu.launch(k, (1,), (128,), [x, y, n, 0], globals={"table": tw_short})


@pytest.mark.parametrize("vector", ["", "0"])
def test_kernel_with_barriers_on_windows(mod, monkeypatch, vector):
    monkeypatch.setenv("DPTX_CPU_VECTOR", vector)
    k = mod.get_function("block_sum")
    x = np.random.default_rng(2).integers(-50, 50, 16 * 128 + 8).astype(np.float32)
    xw = window(x, 4 * 128 * 4, 4 * (128 * 12))   # blocks 4..11
    y = np.zeros(16, np.float32)
    yw = window(y, 4 * 4, 4 * 12)
    cpu.launch(k, (16,), (128,), [xw, yw, 0], blocks=range(4, 12))
    assert np.array_equal(yw.data.view(np.float32), x[:16 * 128].reshape(16, 128).sum(1)[4:12])
    with pytest.raises(FootprintViolation):
        cpu.launch(k, (16,), (128,), [xw, yw, 8], blocks=range(4, 12))
