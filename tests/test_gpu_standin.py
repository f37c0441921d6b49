"""``dptx/gpu`` without a GPU, through the CuPy stand-in (``tests/cupy_standin``: CuPy's API
over a fake machine that assembles every module with NVIDIA's ptxas and runs kernels on dptx's
CPU executor): the corpus bitwise equal to the CPU executor, sub-ranges, aliasing, scalars,
structs, module variables, the shared memory opt-in, lanes on two devices, copies of only the
written bytes through pinned memory, and a kernel fault. The stand-in never replaces
``tests/test_gpu.py`` on a real GPU."""
import threading

import numpy as np
import pytest

import dptx
from dptx import cpu, gpu
from dptx.gpu import runner
from dptx.corpus import CASES, check, source
from tests.cupy_standin import testing
from tests.cupy_standin.cuda import driver as standin_driver
from tests.test_ptxas import ptxas

pytestmark = pytest.mark.skipif(not ptxas(), reason="the CuPy stand-in needs ptxas "
                                "(nvidia-cuda-nvcc, the test extra)")


def use_standin(monkeypatch, devices: int = 1, driver: int = None, runtime: int = None):
    """dptx/gpu on the stand-in, in a fresh fake process with ``devices`` devices."""
    monkeypatch.setenv("DPTX_CUPY_MODULE", "tests.cupy_standin")
    monkeypatch.setenv("DPTX_STANDIN_DEVICES", str(devices))
    for name, value in (("DPTX_STANDIN_DRIVER", driver), ("DPTX_STANDIN_RUNTIME", runtime)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, str(value))
    testing.restart_process()
    runner.reset_process_state()


@pytest.fixture
def standin(monkeypatch):
    use_standin(monkeypatch)
    yield testing
    testing.restart_process()
    runner.reset_process_state()


@pytest.fixture
def two_devices(monkeypatch):
    use_standin(monkeypatch, devices=2)
    yield testing
    testing.restart_process()
    runner.reset_process_state()


@pytest.fixture(scope="module")
def corpus_standin():
    """One fake process for the whole corpus (modules stay loaded, as on a worker)."""
    with pytest.MonkeyPatch.context() as mp:
        use_standin(mp)
        yield testing
        testing.restart_process()
        runner.reset_process_state()


def kernel_of(code: str, name: str):
    return dptx.RawModule(code).get_function(name)


def copies(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


# -- the corpus -------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_corpus_through_standin_matches_cpu(case, corpus_standin):
    kernel = dptx.RawModule(source(case), options=case.options).get_function(case.kernel)
    args = case.make_args(np.random.default_rng(7))
    on_cpu, on_gpu = copies(args), copies(args)
    cpu.launch(kernel, case.grid, case.block, on_cpu, shared_mem=case.shared_mem)
    gpu.launch(kernel, case.grid, case.block, on_gpu, shared_mem=case.shared_mem)
    expected = case.reference(copies(args))
    exact = case.deterministic and case.rtol == 0 and case.atol == 0
    for i in expected:
        check(on_gpu[i], on_cpu[i], 0 if exact else case.rtol, 0 if exact else case.atol,
              f"{case.name} argument {i}: stand-in GPU vs CPU")
        check(on_gpu[i], expected[i], case.rtol, case.atol,
              f"{case.name} argument {i}: stand-in GPU vs reference")
    assert all(r["fault"] is None for r in testing.launches())


IDS = r'''extern "C" __global__ void ids(int* out) {
    int b = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
    out[b * blockDim.x + threadIdx.x] = b * 1000 + threadIdx.x + gridDim.x * gridDim.y * gridDim.z;
}'''


def test_sub_ranges_equal_whole_launch(standin):
    kernel = kernel_of(IDS, "ids")
    grid = (3, 4, 2)
    whole = np.zeros(24 * 32, np.int32)
    gpu.launch(kernel, grid, 32, [whole])
    parts = np.zeros_like(whole)
    for a, b in ((0, 5), (5, 17), (17, 24)):
        gpu.launch(kernel, grid, 32, [parts], blocks=range(a, b))
    on_cpu = np.zeros_like(whole)
    cpu.launch(kernel, grid, 32, [on_cpu])
    assert np.array_equal(parts, whole) and np.array_equal(whole, on_cpu)
    # each sub-range ran as a 1-D sub-grid of its blocks
    assert [r["grid"] for r in standin.launches()[1:]] == [(5, 1, 1), (12, 1, 1), (7, 1, 1)]


# -- arguments -------------------------------------------------------------------------------------
ALIAS = r'''extern "C" __global__ void alias(float* a, float* b) {
    a[0] = 1.0f;
    b[0] += 2.0f;
}'''


def test_same_buffer_twice_is_one_device_allocation(standin):
    kernel = kernel_of(ALIAS, "alias")
    on_gpu, on_cpu = np.full(4, 10.0, np.float32), np.full(4, 10.0, np.float32)
    gpu.launch(kernel, 1, 1, [on_gpu, on_gpu])
    cpu.launch(kernel, 1, 1, [on_cpu, on_cpu])
    assert on_cpu[0] == 3.0 and on_gpu[0] == 3.0      # two device copies would give 12.0
    # overlapping views of one buffer are one allocation too, at their offsets
    base = np.full(8, 10.0, np.float32)
    gpu.launch(kernel, 1, 1, [base[2:], base[2:6]])
    assert base[2] == 3.0 and base[0] == 10.0
    assert len([c for c in standin.copies() if c["kind"] == "HtoD"]) == 2


SCALE = r'''extern "C" __global__ void scale(float a, double b, float* out) {
    out[threadIdx.x] = a * (float)threadIdx.x + (float)b;
}'''


def test_python_floats_become_the_parameter_types(standin):
    kernel = kernel_of(SCALE, "scale")
    on_gpu, on_cpu = np.zeros(32, np.float32), np.zeros(32, np.float32)
    gpu.launch(kernel, 1, 32, [0.1, 1.0 / 3.0, on_gpu])
    cpu.launch(kernel, 1, 32, [0.1, 1.0 / 3.0, on_cpu])
    assert on_gpu.tobytes() == on_cpu.tobytes()
    # a * x + b contracts to one fma: exact product and sum, one rounding (float64 holds
    # the product of two float32 exactly)
    want = (np.float64(np.float32(0.1)) * np.arange(32) + np.float64(np.float32(1.0 / 3.0)))
    assert np.array_equal(on_gpu, want.astype(np.float32))


STRUCT = r'''struct P { int a; float b; double c; };
extern "C" __global__ void fields(P p, double* out) {
    out[0] = p.a; out[1] = p.b; out[2] = p.c;
}'''
P_DTYPE = np.dtype([("a", "<i4"), ("b", "<f4"), ("c", "<f8")], align=True)


def test_structs_by_value(standin):
    kernel = kernel_of(STRUCT, "fields")
    value = np.array([(-7, 2.5, 1e100)], dtype=P_DTYPE)[0]     # a numpy.void scalar
    for arg in (value, value.tobytes()):
        out = np.zeros(3, np.float64)
        gpu.launch(kernel, 1, 1, [arg, out])
        assert out.tolist() == [-7.0, 2.5, 1e100]


POINTERS = r'''struct Pair { const float* x; float* y; int n; };
extern "C" __global__ void axpy(Pair p, float a) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < p.n) p.y[i] += a * p.x[i];
}'''


def test_structs_holding_device_pointers(standin):
    """A struct by value whose fields point into arrays (Warp's arrays, struct { float* p; }):
    the runner copies each array to the device and writes its device address into the bytes;
    two pointers into one array are one allocation."""
    from dptx.device.pointer import Pointer, StructValue
    kernel = kernel_of(POINTERS, "axpy")
    dt = np.dtype([("x", "<u8"), ("y", "<u8"), ("n", "<i4")], align=True)
    raw = np.array([(0, 0, 100)], dt)[0].tobytes()
    x, y = np.arange(100, dtype=np.float32), np.ones(100, np.float32)
    gpu.launch(kernel, 4, 32, [StructValue(raw, ((0, x), (8, y))), np.float32(2)])
    assert np.array_equal(y, 1 + 2 * np.arange(100, dtype=np.float32))
    # y = y[0:100] + 3 * y[100:200] of one array: one allocation, the pointer offset in it
    both = np.concatenate([np.ones(100, np.float32), np.arange(100, dtype=np.float32)])
    gpu.launch(kernel, 4, 32, [StructValue(raw, ((0, Pointer(both, 400)), (8, both))),
                               np.float32(3)])
    assert np.array_equal(both[:100], 1 + 3 * np.arange(100, dtype=np.float32))
    assert len([c for c in standin.copies() if c["kind"] == "HtoD"]) == 3


def test_standin_passes_arguments_as_cupy_13_does(standin):
    """What runner.py must avoid: CuPy 13 refuses a numpy.void struct, and sends a Python float
    as a double whatever the parameter's type."""
    cp = runner.cupy_module()
    kernel = kernel_of(SCALE, "scale")
    module = cp.cuda.function.Module()
    module.load(runner.loadable_for(kernel, runner.devices()[0]))
    func = module.get_function("scale")
    with pytest.raises(TypeError, match="Unsupported type"):
        func((1,), (1,), (np.array([(1, 2, 3)], P_DTYPE)[0],))
    out = cp.zeros(32, np.float32)
    extra = [np.array([v], np.uint32) for v in (0, 1, 1, 1)]
    func((1,), (32,), (0.5, np.float64(0.0), out, *extra))
    assert out.get()[2] != np.float32(1.0)       # the low half of a double, not 0.5f


GLOBALS = r'''__device__ int counter = 5;
__constant__ float coeff[2] = {1.5f, -2.0f};
extern "C" __global__ void bump(float* out) {
    if (threadIdx.x == 0) counter += 1;
    __syncthreads();
    out[threadIdx.x] = coeff[threadIdx.x % 2] * counter;
}'''


def test_module_variables_through_their_device_pointers(standin):
    kernel = kernel_of(GLOBALS, "bump")
    counter = np.frombuffer(np.int32(40).tobytes(), np.uint8).copy()
    coeff = np.frombuffer(np.array([3.0, 0.5], np.float32).tobytes(), np.uint8).copy()
    out = np.zeros(4, np.float32)
    gpu.launch(kernel, 1, 4, [out], globals={"counter": counter, "coeff": coeff})
    assert counter.view(np.int32)[0] == 41
    assert out.tolist() == [3.0 * 41, 0.5 * 41] * 2
    # without ``globals`` the device's own copy (last set by the launch above) persists
    # across launches, as in CUDA
    for _ in range(2):
        gpu.launch(kernel, 1, 4, [out])
    assert out.tolist() == [3.0 * 43, 0.5 * 43] * 2


def test_get_global_var_is_an_int_pointer(standin):
    cp = runner.cupy_module()
    kernel = kernel_of(GLOBALS, "bump")
    module = cp.cuda.function.Module()
    module.load(runner.loadable_for(kernel, runner.devices()[0]))
    ptr = module.get_global_var("counter")
    assert isinstance(ptr, int)
    host = np.zeros(1, np.int32)
    cp.cuda.runtime.memcpy(host.ctypes.data, ptr, 4, cp.cuda.runtime.memcpyDeviceToHost)
    assert host[0] == 5
    with pytest.raises(standin_driver.CUDADriverError, match="CUDA_ERROR_NOT_FOUND"):
        module.get_global_var("nothing")


SHARED = r'''extern "C" __global__ void stage(const float* in, float* out, int n) {
    extern __shared__ float tile[];
    __shared__ float fixed[4096];               // 16 KiB of static shared memory
    for (int i = threadIdx.x; i < n; i += blockDim.x) tile[i] = in[i];
    fixed[threadIdx.x] = 1.0f;
    __syncthreads();
    for (int i = threadIdx.x; i < n; i += blockDim.x) out[i] = tile[n - 1 - i] + fixed[0];
}'''


def _opt_ins(testing_module):
    return [c for c in testing_module.calls() if c[0] == "funcSetAttribute"
            and c[3] == standin_driver.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES]


@pytest.mark.parametrize("n, opted", [(4096, False), (10240, True), (20000, True)])
def test_shared_memory_opt_in_over_48_kib(standin, n, opted):
    """16 KiB static + 16 KiB dynamic fits in 48 KiB; 16 + 40 KiB and 16 + 78 KiB need the
    function's MAX_DYNAMIC_SHARED_SIZE_BYTES attribute (the stand-in refuses the launch
    without it, as CUDA does)."""
    kernel = kernel_of(SHARED, "stage")
    x = np.arange(n, dtype=np.float32)
    out = np.zeros(n, np.float32)
    gpu.launch(kernel, 1, 256, [x, out, n], shared_mem=4 * n)
    assert np.array_equal(out, x[::-1] + 1.0)
    assert [c[4] for c in _opt_ins(standin)] == ([4 * n] if opted else [])


def test_standin_refuses_shared_memory_without_opt_in(standin):
    cp = runner.cupy_module()
    kernel = kernel_of(SHARED, "stage")
    module = cp.cuda.function.Module()
    module.load(runner.loadable_for(kernel, runner.devices()[0]))
    func = module.get_function("stage")
    x, out = cp.zeros(16, np.float32), cp.zeros(16, np.float32)
    extra = [np.array([v], np.uint32) for v in (0, 1, 1, 1)]
    with pytest.raises(standin_driver.CUDADriverError, match="CUDA_ERROR_INVALID_VALUE"):
        func((1,), (32,), (x, out, np.int32(16), *extra), shared_mem=40 * 1024)


def test_shared_memory_over_the_device_limit_is_a_launch_error(standin):
    kernel = kernel_of(SHARED, "stage")
    with pytest.raises(dptx.LaunchError, match="static and .* dynamic shared memory"):
        gpu.launch(kernel, 1, 32, [np.zeros(1, np.float32), np.zeros(1, np.float32), 1],
                   shared_mem=220 * 1024)


# -- devices, streams, copies ---------------------------------------------------------------------
ADD = r'''extern "C" __global__ void add_one(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] + 1.0f;
}'''


def test_two_lanes_use_two_devices_and_their_own_streams(two_devices):
    kernel = kernel_of(ADD, "add_one")
    n = 1 << 12
    x = np.arange(n, dtype=np.float32)
    outs = [np.zeros(n, np.float32) for _ in range(2)]
    both = threading.Barrier(2)
    held = []

    def chunk(k):
        with gpu.lane() as device:
            held.append(device)
            both.wait(timeout=60)       # each thread holds its device while the other asks
            gpu.launch(kernel, n // 128, 128, [x, outs[k], n], device=device,
                       blocks=range(k * 16, (k + 1) * 16))

    threads = [threading.Thread(target=chunk, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert sorted(held) == [0, 1]
    launches = two_devices.launches()
    assert sorted(r["device"] for r in launches) == [0, 1]
    streams = {r["device"]: r["stream"] for r in launches}
    assert streams[0] != streams[1] and 0 not in streams.values()
    assert all(two_devices.stream_flags(s) == 1 for s in streams.values())   # non-blocking
    assert not [c for c in two_devices.calls() if c[0] == "deviceSynchronize"]
    assert [c[1] for c in two_devices.calls() if c[0] == "streamSynchronize"] != []
    for k in range(2):
        lo, hi = k * 16 * 128, (k + 1) * 16 * 128
        assert np.array_equal(outs[k][lo:hi], x[lo:hi] + 1)
    # lanes without an explicit device go round the free devices
    for _ in range(2):
        gpu.launch(kernel, n // 128, 128, [x, outs[0], n])
    assert {r["device"] for r in two_devices.launches()[-2:]} == {0, 1}


def test_only_the_written_bytes_come_back_through_pinned_memory(standin):
    kernel = kernel_of(ADD, "add_one")
    n = 4096
    x = np.arange(n, dtype=np.float32)
    y = np.full(n, -1.0, np.float32)
    gpu.launch(kernel, n // 128, 128, [x, y, n], writes={1: (1024, 2048)})
    back = [c for c in standin.copies() if c["kind"] == "DtoH"]
    assert [c["size"] for c in back] == [1024]              # nothing of x, a quarter of y
    assert np.array_equal(y[256:512], x[256:512] + 1)
    assert (y[:256] == -1).all() and (y[512:] == -1).all()
    assert all(c["pinned"] for c in standin.copies())
    # by default every buffer comes back whole
    gpu.launch(kernel, n // 128, 128, [x, y, n])
    assert np.array_equal(y, x + 1)
    assert sorted(c["size"] for c in standin.copies()[-2:]) == [4 * n, 4 * n]


def test_bad_writes_range_is_a_launch_error(standin):
    kernel = kernel_of(ADD, "add_one")
    with pytest.raises(dptx.LaunchError, match=r"writes\[1\]"):
        gpu.launch(kernel, 1, 32, [np.zeros(8, np.float32), np.zeros(8, np.float32), 8],
                   writes={1: (0, 64)})


# -- faults -------------------------------------------------------------------------------------------
OOB = r'''extern "C" __global__ void overrun(float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i * 1024] = 1.0f;                         // far past the end for most threads
}'''


def test_fault_names_kernel_and_blocks_and_the_process_goes_on(two_devices):
    lost = []
    runner.on_device_lost(lambda device, message: lost.append((device, message)))
    try:
        bad, good = kernel_of(OOB, "overrun"), kernel_of(ADD, "add_one")
        y = np.zeros(64, np.float32)
        with pytest.raises(gpu.GpuFault) as info:
            gpu.launch(bad, 8, 32, [y, 64], blocks=range(2, 6), device=0)
        text = str(info.value)
        assert isinstance(info.value, dptx.DptxError)
        assert "kernel overrun" in text and "blocks [2, 6)" in text and "device 0" in text
        assert "cudaErrorIllegalAddress" in text or "CUDA_ERROR_ILLEGAL_ADDRESS" in text
        assert (y == 0).all()                   # nothing came back
        assert two_devices.sticky_error(0) == 700 and lost and lost[0][0] == 0
        # the lost device is not used again in this process; the other one takes the work
        x = np.arange(256, dtype=np.float32)
        out = np.zeros(256, np.float32)
        gpu.launch(good, 2, 128, [x, out, 256])
        assert np.array_equal(out, x + 1) and two_devices.launches()[-1]["device"] == 1
        with pytest.raises(gpu.GpuFault, match="device 0 of this process is unusable"):
            gpu.launch(good, 2, 128, [x, out, 256], device=0)
        assert [d.index for d in runner.devices()] == [1]
        # a new process (the worker restarts) has the device back
        testing.restart_process()
        runner.reset_process_state()
        out[:] = 0
        gpu.launch(good, 2, 128, [x, out, 256], device=0)
        assert np.array_equal(out, x + 1)
    finally:
        runner._listeners.clear()


def test_no_usable_device_left_is_said(standin):
    kernel = kernel_of(OOB, "overrun")
    with pytest.raises(gpu.GpuFault):
        gpu.launch(kernel, 2, 32, [np.zeros(8, np.float32), 8])
    with gpu.lane() as device:
        assert device is None                   # a chunk then runs on the CPU
    with pytest.raises(gpu.GpuUnavailable, match="no CUDA device of this process is usable"):
        gpu.launch(kernel, 2, 32, [np.zeros(8, np.float32), 8])
    assert not gpu.available()


# -- the stand-in's driver and JIT ----------------------------------------------------------------------
def test_standin_jit_rejects_what_ptxas_rejects(standin):
    cp = runner.cupy_module()
    bad = b""".version 9.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 p)
{
  .reg .b64 %rd<2>;
  ld.param.u64 %rd1, [p];
  st.global.u32 [%rd1-8], 1;
  ret;
}
"""
    module = cp.cuda.function.Module()
    with pytest.raises(standin_driver.CUDADriverError, match="(?s)CUDA_ERROR_INVALID_PTX.*ptxas"):
        module.load(bad)
    newer = bad.replace(b".version 9.0", b".version 9.5").replace(b"-8]", b"+-8]")
    with pytest.raises(standin_driver.CUDADriverError, match="UNSUPPORTED_PTX_VERSION"):
        module.load(newer)                      # a 13.0 driver loads PTX ISA 9.0 at most
    module.load(newer.replace(b".version 9.5", b".version 9.0"))


def test_cuda_12_4_driver(monkeypatch):
    """cupy-cuda12x on a 12.4 driver: the lowered PTX (.version 8.4) goes through ptxas 12.4."""
    use_standin(monkeypatch, driver=12040, runtime=12080)
    try:
        kernel = kernel_of(ADD, "add_one")
        x = np.arange(300, dtype=np.float32)
        y = np.zeros(300, np.float32)
        gpu.launch(kernel, 3, 128, [x, y, 300])
        assert np.array_equal(y, x + 1)
        assert ".version 8.4" in runner.loadable_for(kernel, runner.devices()[0]).decode()
    finally:
        testing.restart_process()
        runner.reset_process_state()


def test_why_no_gpu(monkeypatch):
    from dptx import worker
    use_standin(monkeypatch, driver=12040)      # cupy-cuda13x on a CUDA 12.4 driver
    try:
        with pytest.raises(gpu.GpuUnavailable, match=r"driver \(12.4\) is older than the CUDA "
                                                     r"runtime CuPy was built for \(13.0\)"):
            runner.devices()
        facts = worker.device_facts(2)
        assert facts["device"] == "cpu" and facts["gpus"] == []
        assert "cudaErrorInsufficientDriver" in facts["gpu_error"]
        monkeypatch.setenv("DPTX_CUPY_MODULE", "no_such_cupy")
        runner.reset_process_state()
        assert "cannot be imported" in worker.device_facts(2)["gpu_error"]
        monkeypatch.setenv("DPTX_DISABLE_GPU", "1")
        assert worker.device_facts(2)["gpu_error"] is None
    finally:
        testing.restart_process()
        runner.reset_process_state()
