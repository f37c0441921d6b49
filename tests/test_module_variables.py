"""Module variables (``__device__``/``__constant__``) through ``get_global``: the element type
and shape of the declaration, and one current copy that in-process launches see, in a program
that never starts a cluster."""
import subprocess
import sys

import numpy as np
import pytest

import dptx
from dptx.module_variables import declared_types

SOURCE = r'''
__constant__ float taps[4] = {1.0f, 2.0f, 3.0f, 4.0f};
__device__ int counter;
__device__ unsigned long long big[2][3];
__device__ float3 vec3;
extern "C" __global__ void conv(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float s = 0;
    for (int k = 0; k < 4; k++) s += taps[k] * x[(i + k) % n];
    y[i] = s;
    if (i == 0) counter += 1;
}'''


def test_declared_types():
    found = declared_types(SOURCE)
    assert found["taps"] == (np.dtype(np.float32), (4,))
    assert found["counter"] == (np.dtype(np.int32), ())
    assert found["big"] == (np.dtype(np.uint64), (2, 3))
    assert "vec3" not in found                    # a struct: the PTX type serves


def test_get_global_takes_the_declaration():
    mod = dptx.RawModule(SOURCE)
    taps = mod.get_global("taps")
    assert taps.dtype == np.float32 and taps.shape == (4,)
    assert mod.get_global("counter").shape == () and mod.get_global("counter").dtype == np.int32
    assert mod.get_global("big").shape == (2, 3)
    assert mod.get_global("taps", np.uint8).shape == (16,)       # dtype= still views the bytes
    assert mod.get_global("vec3").dtype == np.uint8               # NVRTC: .b8 [12]


def test_set_is_seen_by_cpu_launches_without_a_cluster():
    """A plain script: set a __constant__ filter, run in-process, read the device counter."""
    script = "\n".join([
        "import numpy as np, dptx, dptx.runtime",
        f"mod = dptx.RawModule({SOURCE!r})",
        "k = mod.get_function('conv')",
        "x = np.arange(8, dtype=np.float32)",
        "y = np.zeros(8, np.float32)",
        "mod.get_global('taps').set(np.array([1, 0, 0, 10], np.float32))",
        "dptx.cpu.launch(k, 1, 8, [x, y, np.int32(8)])",
        "dptx.cpu.launch(k, 1, 8, [x, y, np.int32(8)])",
        "print([y.tolist(), int(mod.get_global('counter').get()), mod.get_global('taps').get().tolist()])",
        "print(dptx.runtime.is_running())",
    ])
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    x = np.arange(8, dtype=np.float32)
    assert eval(lines[0]) == [(x + 10 * np.roll(x, -3)).tolist(), 2, [1.0, 0.0, 0.0, 10.0]]
    assert lines[1] == "False"                   # no cluster was started
