"""Module variables (``__device__``/``__constant__``) through ``get_global``: the element type
and shape of the declaration, and one current copy that in-process launches see, in a program
that never starts a cluster."""
import subprocess
import sys

import numpy as np
import pytest

import dptx
from dptx.runtime.module_variables import declared_types

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
        "import numpy as np, dptx, dptx.runtime.cluster",
        f"mod = dptx.RawModule({SOURCE!r})",
        "k = mod.get_function('conv')",
        "x = np.arange(8, dtype=np.float32)",
        "y = np.zeros(8, np.float32)",
        "mod.get_global('taps').set(np.array([1, 0, 0, 10], np.float32))",
        "dptx.cpu.launch(k, 1, 8, [x, y, np.int32(8)])",
        "dptx.cpu.launch(k, 1, 8, [x, y, np.int32(8)])",
        "print([y.tolist(), int(mod.get_global('counter').get()), mod.get_global('taps').get().tolist()])",
        "print(dptx.runtime.cluster.is_running())",
    ])
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    x = np.arange(8, dtype=np.float32)
    assert eval(lines[0]) == [(x + 10 * np.roll(x, -3)).tolist(), 2, [1.0, 0.0, 0.0, 10.0]]
    assert lines[1] == "False"                   # no cluster was started


INIT_PTX = (".version 7.8\n.target sm_80\n.address_size 64\n{decl}\n"
            ".visible .entry k(.param .u64 out) {{\n"
            "  .reg .b64 %rd<4>; .reg .b32 %r<2>;\n"
            "  ld.param.u64 %rd1, [out]; cvta.to.global.u64 %rd1, %rd1;\n"
            "  ld.global.u64 %rd2, [where]; ld.u32 %r1, [%rd2];\n"
            "  st.global.u32 [%rd1], %r1;\n  ret;\n}}\n")


def test_initializers_hold_addresses_of_module_variables():
    kernel = dptx.RawModule(ptx=INIT_PTX.format(
        decl=".global .u32 value[2] = {7, 9};\n.global .u64 where = generic(value)+4;")
    ).get_function("k")
    out = np.zeros(1, np.uint32)
    dptx.cpu.launch(kernel, (1,), (1,), (out,))
    assert out[0] == 9


@pytest.mark.parametrize("decl", [".global .u64 where = nosuch;",
                                  ".global .u64 where = generic(nosuch)+8;"])
def test_an_initializer_naming_an_undeclared_symbol_is_a_syntax_error(decl):
    """It raised ValueError from the CPU executor's initial image at the first launch; the
    PTX is wrong, so it is a PtxSyntaxError at its line when the module is made. Issue 40."""
    with pytest.raises(dptx.PtxSyntaxError) as info:
        dptx.RawModule(ptx=INIT_PTX.format(decl=decl))
    assert info.value.line == 4 and info.value.text == "nosuch"
    assert "the initializer of where names nosuch, which is not declared" in str(info.value)


@pytest.mark.parametrize("decl, what", [
    (".shared .u32 sh;\n.global .u64 where = generic(sh);", "sh, a .shared variable (line 4)"),
    (".extern .global .u32 sh;\n.global .u64 where = generic(sh);",
     "sh, an extern .global variable (line 4)")])
def test_an_initializer_naming_a_variable_without_an_address_is_unsupported(decl, what):
    """A declared variable that is no buffer of the module's image (shared memory, an extern
    that nothing here links): PtxUnsupportedError naming the PTX line and both variables
    (it was a ValueError). Issue 40."""
    kernel = dptx.RawModule(ptx=INIT_PTX.format(decl=decl)).get_function("k")
    out = np.zeros(1, np.uint32)
    with pytest.raises(dptx.PtxUnsupportedError) as info:
        dptx.cpu.launch(kernel, (1,), (1,), (out,))
    message = str(info.value)
    assert message.startswith("PTX line 5: the initializer of where holds the address of "
                              + what), message
    assert "no address in the module's image" in message
