"""C++ kernels by the names their source gives them: CuPy's name_expressions through NVRTC's
name lowering, templates and namespaces, overloads, and errors that name kernels and
parameters as written (put<float>, J_cuda) rather than as mangled in the PTX."""
import numpy as np
import pytest

import dptx
from dptx import cpu
from dptx.demangle import demangle, readable, short_name

SRC = r'''
template <typename T> __global__ void put(T* out, T value) { out[threadIdx.x] = value; }
namespace ns {
template <int N> __global__ void scale(const float* in, float* out) {
    out[threadIdx.x] = in[threadIdx.x] * N;
}
__device__ float table[4];
}
__global__ void srad(float* E_C, float* J_cuda, int cols) { J_cuda[threadIdx.x + cols] = E_C[0]; }
__global__ void twice(float* x) { x[threadIdx.x] *= 2.0f; }
__global__ void twice(double* x) { x[threadIdx.x] *= 2.0; }
'''


@pytest.fixture(scope="module")
def mod():
    return dptx.RawModule(SRC, name_expressions=("put<float>", "put<int>", "ns::scale<3>"))


def test_demangling_follows_the_itanium_abi():
    assert demangle("_Z3putIfEvPT_S0_") == "void put<float>(float*, float)"
    assert short_name("_Z3putIfEvPT_S0_") == "put<float>"
    assert short_name("_ZN2ns5scaleILi3EEEvPKfPf") == "ns::scale<3>"
    assert short_name("_Z4sradPfS_i") == "srad"
    assert short_name("saxpy") == "saxpy"            # extern "C": unchanged


def test_name_expressions_instantiate_and_find_templates(mod):
    assert mod.name_expressions["put<float>"] == "_Z3putIfEvPT_S0_"
    f = mod.get_function("put<float>")
    out = np.zeros(8, np.float32)
    cpu.launch(f, 1, 8, [out, np.float32(2.5)])
    np.testing.assert_array_equal(out, np.full(8, 2.5, np.float32))
    i = mod.get_function("put<int>")
    ints = np.zeros(8, np.int32)
    cpu.launch(i, 1, 8, [ints, 7])
    np.testing.assert_array_equal(ints, np.full(8, 7, np.int32))
    s = mod.get_function("ns::scale<3>")
    got = np.zeros(8, np.float32)
    cpu.launch(s, 1, 8, [np.arange(8, dtype=np.float32), got])
    np.testing.assert_array_equal(got, np.arange(8, dtype=np.float32) * 3)
    assert repr(f) == "<dptx.RawKernel put<float>(u64* out, f32 value)>"


def test_plain_cxx_names_and_the_mangled_ones_both_work(mod):
    assert mod.get_function("srad").name == "_Z4sradPfS_i"
    assert mod.get_function("_Z4sradPfS_i").name == "_Z4sradPfS_i"
    with pytest.raises(dptx.KernelNotFoundError, match=r"'twice' names 2 overloads.*"
                       r"signature: 'twice\(float\*\)', 'twice\(double\*\)'"):
        mod.get_function("twice")
    assert mod.get_function("_Z5twicePd").title == "twice"
    assert mod.get_function("twice(double *)").name == "_Z5twicePd"
    x = np.arange(4, dtype=np.float32)
    cpu.launch(mod.get_function("twice(float*)"), 1, 4, [x])
    np.testing.assert_array_equal(x, np.arange(4, dtype=np.float32) * 2)


def test_an_uninstantiated_template_says_how_to_get_it(mod):
    with pytest.raises(dptx.KernelNotFoundError) as info:
        mod.get_function("put<double>")
    text = str(info.value)
    assert "name_expressions=('put<double>',)" in text
    assert "put<float>, put<int>" in text and "_Z" not in text


def test_errors_name_kernels_and_parameters_as_written(mod):
    srad = mod.get_function("srad")
    with pytest.raises(dptx.DptxMemoryError) as info:
        cpu.launch(srad, 1, 8, [np.ones(1, np.float32), np.zeros(8, np.float32), 100])
    text = str(info.value)
    assert "kernel srad" in text and "argument 1 (J_cuda)" in text and "_Z" not in text
    with pytest.raises(dptx.LaunchError, match=r"argument 2 \(cols: \.u32\) of kernel srad"):
        cpu.launch(srad, 1, 8, [np.ones(1, np.float32), np.zeros(8, np.float32), "x"])
    with pytest.raises(dptx.LaunchError, match=r"put<float>"):
        mod.get_function("put<float>")((1,), (8,), (1, 2, 3))


def test_module_variables_by_their_cxx_name(mod):
    table = mod.get_global("ns::table")
    assert table.shape == (4,) and table.dtype == np.float32


def test_name_expressions_need_source():
    with pytest.raises(dptx.DptxError, match="name_expressions need CUDA C source"):
        dptx.RawModule(ptx=dptx.RawModule(SRC).ptx, name_expressions=("put<float>",))


def test_a_bad_name_expression_is_a_compile_error():
    with pytest.raises(dptx.CompileError):
        dptx.RawModule(SRC, name_expressions=("nothing<float>",))


def test_parameter_names_come_from_the_kernel_that_raised():
    assert readable("saxpy_param_1 of saxpy") == "saxpy_param_1 of saxpy"
    # two modules with a kernel of the same name and different parameter names
    one = dptx.RawModule('extern "C" __global__ void twin(int* a, int b) { a[b] = 1; }')
    two = dptx.RawModule('extern "C" __global__ void twin(int* x, int y) { x[y] = 1; }')
    for mod, name in ((one, "a"), (two, "x"), (one, "a")):
        with pytest.raises(dptx.DptxMemoryError, match=rf"argument 0 \({name}\)"):
            cpu.launch(mod.get_function("twin"), 1, 1, [np.zeros(1, np.int32), 5])
    assert readable("_Z7unknowni_param_0") == "unknown parameter 0"
