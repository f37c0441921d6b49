"""Bad calls get a clear ``DptxError`` subclass naming the argument (issue 20): shapes that
are not ints, sources of the wrong type, missing files, unknown names, arrays of Python
objects. None of them runs anything."""
import numpy as np
import pytest

import dptx
from dptx import cpu

SRC = 'extern "C" __global__ void ones(float* a) { a[threadIdx.x] = 1; }'


@pytest.fixture(scope="module")
def kernel():
    return dptx.RawKernel(SRC, "ones")


@pytest.mark.parametrize("grid, block", [((1.7,), (4,)), ("4", (4,)), ((1,), (4.0,)),
                                         ((1,), True), ((1, "2"), (4,)), (None, (4,))])
def test_shapes_must_be_ints(kernel, grid, block):
    a = np.zeros(4, np.float32)
    with pytest.raises(dptx.LaunchError, match=r"(grid|block) must be an int or a tuple"):
        cpu.launch(kernel, grid, block, [a])
    assert not a.any()


@pytest.mark.parametrize("shared_mem", [100.5, None, "64", True])
def test_shared_mem_must_be_an_int(kernel, shared_mem):
    with pytest.raises(dptx.LaunchError, match="shared_mem must be an int"):
        cpu.launch(kernel, (1,), (4,), [np.zeros(4, np.float32)], shared_mem=shared_mem)


def test_integer_shapes_of_any_kind_work(kernel):
    a = np.zeros(8, np.float32)
    cpu.launch(kernel, np.int64(1), [np.int32(8)], [a], shared_mem=np.uint32(0))
    cpu.launch(kernel, np.array([1]), (8,), [a])
    assert (a == 1).all()


def test_sources_and_names(tmp_path):
    ptx = dptx.RawModule(SRC).ptx
    assert dptx.RawModule(ptx=ptx.encode()).get_function("ones").name == "ones"
    with pytest.raises(dptx.DptxError, match="not UTF-8"):
        dptx.RawModule(ptx=b"\xff\xfe")
    with pytest.raises(dptx.DptxError, match=r"takes the source text as a str, got int"):
        dptx.RawModule(code=42)
    missing = tmp_path / "nope.cu"
    with pytest.raises(dptx.DptxError, match=r"RawModule\(path='.*nope.cu'\): cannot read the "
                                             r"file: No such file"):
        dptx.RawModule(path=missing)
    m = dptx.RawModule('__device__ int counter; ' + SRC)
    with pytest.raises(dptx.VariableNotFoundError, match="no module variable named 'nope'; "
                                                         "variables: counter"):
        m.get_global("nope")
    with pytest.raises(KeyError):       # still a KeyError, as CuPy's
        m.get_global("nope")


def test_launch_takes_a_kernel_and_plain_data(kernel):
    with pytest.raises(dptx.LaunchError, match="takes a kernel .* got str 'ones'"):
        cpu.launch("ones", (1,), (4,), [np.zeros(4, np.float32)])
    objects = np.array([object(), object()])
    k = dptx.RawKernel('extern "C" __global__ void w(long long* a) { a[threadIdx.x] = 1; }',
                       "w")
    with pytest.raises(dptx.LaunchError, match=r"argument 0 \(a\) of kernel w: an array of "
                                               r"dtype object holds Python objects"):
        cpu.launch(k, (1,), (2,), [objects])
    with pytest.raises(dptx.DptxError, match="holds Python objects"):
        dptx.asarray([object()])
