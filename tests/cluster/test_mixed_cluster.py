"""A mixed cluster without a GPU: one worker process whose "GPU" is the CuPy stand-in
(``DPTX_CUPY_MODULE=tests.cupy_standin``: CuPy's API, ptxas for the driver's JIT, dptx's CPU
executor for the device), one CPU-only worker (``DPTX_DISABLE_GPU=1``). Corpus kernels and a
multi-launch program run through ``dptx`` bitwise equal to the in-process CPU executor, with
chunks on the GPU worker's GPU path; a kernel fault on the GPU restarts that worker, and the
next launch runs there again."""
import logging
import time

import dask
import numpy as np
import pytest
from distributed import Client

import dptx
from dptx import cpu
from dptx.ptx.analysis import merge_facts
from dptx.corpus import CASES, check_outputs, source
from tests.cluster.clusters import mixed_cluster
from tests.test_ptxas import ptxas

pytestmark = [pytest.mark.timeout(600),
              pytest.mark.skipif(not ptxas(), reason="the CuPy stand-in needs ptxas "
                                 "(nvidia-cuda-nvcc, the test extra)")]

# a kernel that faults on the stand-in only (on the CPU worker it runs fine)
FAULTING = {"DPTX_STANDIN_FAULT_KERNELS": "faults_on_gpu"}


@pytest.fixture(scope="module")
def mixed():
    with mixed_cluster(FAULTING) as cluster, Client(cluster, set_as_default=False) as client:
        client.wait_for_workers(2, timeout=120)
        dptx.shutdown()         # leave the session's cluster (and its arrays) alone
        dptx.connect(client)
        try:
            yield client
        finally:
            dptx.shutdown()


def gpu_worker(client, timeout: float = 30.0) -> str:
    """The GPU worker's address (waiting for it while its nanny restarts it)."""
    deadline = time.monotonic() + timeout
    while True:
        found = [a for a, w in client.scheduler_info()["workers"].items() if w["name"] == "gpu"]
        if found:
            return found[0]
        assert time.monotonic() < deadline, "the GPU worker left and did not come back"
        time.sleep(0.2)


def assert_same_gpu_worker(client, address: str) -> None:
    """A valid kernel must not cost the GPU worker its process: if it was replaced, say why
    (the scheduler's events about the old worker, the reason it gave when it closed)."""
    now = gpu_worker(client)
    if now != address:
        events = client.get_events(address)
        raise AssertionError(f"the GPU worker {address} was replaced by {now} during this "
                             f"test; the scheduler's events about it: {events}")


def standin_launches(client) -> int:
    def count():
        from tests.cupy_standin import testing
        return len(testing.launches())
    return client.run(count, workers=[gpu_worker(client)])[gpu_worker(client)]


def plugin_state(client) -> dict:
    return client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.plugins["dptx"].state())


def chunk_resources(client, kernel: str) -> list:
    """Resource restrictions of the kernel's chunk tasks that the scheduler still knows."""
    def look(dask_scheduler, prefix=f"dptx-chunk-{kernel}-"):
        return [dict(ts.resource_restrictions or {}) for key, ts in dask_scheduler.tasks.items()
                if str(key).startswith(prefix)]
    return client.run_on_scheduler(look)


def standin_kernels(client) -> set:
    """Kernels the GPU worker's stand-in GPU ran."""
    def names():
        from tests.cupy_standin import testing
        return sorted({r["kernel"] for r in testing.launches()})
    return set(client.run(names, workers=[gpu_worker(client)])[gpu_worker(client)])


def test_workers_declare_and_report_their_devices(mixed):
    info = mixed.scheduler_info()["workers"]
    gpu = info[gpu_worker(mixed)]
    assert gpu["resources"].get("GPU") == 1.0
    assert all("GPU" not in w["resources"] for a, w in info.items() if w["name"] == "cpu")
    state = plugin_state(mixed)["workers"]
    by_name = {w["name"]: w for w in state.values()}
    assert by_name["gpu"]["device"] == "gpu" and by_name["gpu"]["gpus"] == [
        "DPTX CuPy stand-in sm_90 #0"] and by_name["gpu"]["gpu_error"] is None
    assert by_name["cpu"]["device"] == "cpu" and by_name["cpu"]["gpus"] == []
    from scheduler_plugins.dashboard import gpu_text
    assert gpu_text(by_name["gpu"]) == "1: DPTX CuPy stand-in sm_90 #0"     # the GPU column


# The default run takes a sample of the corpus here, each family of kernels (each corpus
# file: shared memory, warps, atomics, calls, module variables, structs, fp16, printf...)
# with its uncommon cases; every case runs through the GPU path in-process
# (tests/test_gpu_standin.py) and through a cluster of CPU workers
# (tests/cluster/test_corpus_cluster.py); the rest run here under -m exhaustive.
MIXED_SAMPLE = {"vecadd_f32", "early_exit", "divergent", "matmul_naive_f32", "stencil3d_i32",
                "matmul_tiled_f32", "scan_blelloch_i32", "warp_reduce_shfl_down", "warp_votes",
                "block_reduce_warp_shared", "atomic_global_64", "histogram_shared", "recursion",
                "local_through_call", "const_poly", "struct_param", "half2_ops", "printf_basic",
                "math_f32", "mandelbrot", "compact_block"}


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name, marks=() if c.name in MIXED_SAMPLE
                                               else pytest.mark.exhaustive) for c in CASES])
def test_corpus_kernels_on_the_mixed_cluster(mixed, case):
    """The whole corpus: elementwise, shared memory and barriers, warp shuffles, structs by
    value, module variables, reduction atomics, fp16..., each launch shared between the GPU
    worker's GPU path and the CPU worker, bitwise equal to the in-process CPU where the
    kernel is deterministic, and against the case's numpy reference."""
    gpu = gpu_worker(mixed)
    before = standin_launches(mixed)
    kernel = dptx.RawModule(source(case), options=case.options).get_function(case.kernel)
    args = case.make_args(np.random.default_rng(3))
    local = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    cpu.launch(kernel, case.grid, case.block, local, shared_mem=case.shared_mem)
    dev = [dptx.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
    # an even split: a kernel seen before (the corpus runs some twice) could otherwise be
    # planned wholly onto the CPU worker once the stand-in's speed is known
    with dask.config.set({"dptx.split": "even"}):
        kernel(case.grid, case.block, dev, shared_mem=case.shared_mem)
    check_outputs(case, args, {i: d.get() for i, d in enumerate(dev)
                               if isinstance(d, dptx.ndarray)}, local, "mixed cluster")
    assert_same_gpu_worker(mixed, gpu)
    # a launch whose chunks cannot be merged (atomics whose results are used...) runs as one
    # chunk on one worker, either one; test_gpu_standin runs those through dptx.gpu
    if np.prod(case.grid) > 1 and merge_facts(kernel.module, kernel.function).mergeable:
        assert standin_launches(mixed) > before      # some blocks ran on the "GPU"


STEP = r'''extern "C" __global__ void relax(const float* u, float* v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i == 0 || i == n - 1) { if (i < n) v[i] = u[i]; return; }
    if (i < n) v[i] = 0.25f * u[i - 1] + 0.5f * u[i] + 0.25f * u[i + 1];
}
extern "C" __global__ void scale(float* v, float s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) v[i] *= s;
}'''


def test_multi_launch_program_bitwise_and_on_the_gpu(mixed):
    module = dptx.RawModule(STEP)
    relax, scale = module.get_function("relax"), module.get_function("scale")
    n, block = 1 << 16, 256
    grid = n // block
    start = np.sin(np.linspace(0, 20, n)).astype(np.float32)
    a, b = start.copy(), np.zeros(n, np.float32)
    for _ in range(6):
        cpu.launch(relax, grid, block, [a, b, n])
        cpu.launch(scale, grid, block, [b, 1.01, n])
        a, b = b, a
    u, v = dptx.asarray(start), dptx.zeros(n, np.float32)
    before = standin_launches(mixed)
    for _ in range(6):
        relax((grid,), (block,), (u, v, n))
        scale((grid,), (block,), (v, 1.01, n))
        u, v = v, u
    assert u.get().tobytes() == a.tobytes()
    assert standin_launches(mixed) > before
    assert {"relax", "scale"} <= standin_kernels(mixed)
    for name in ("relax", "scale"):
        assert {"GPU": 1} in chunk_resources(mixed, name)     # the GPU worker's chunks
        assert {"CPU": 1} in chunk_resources(mixed, name)     # the CPU worker's


ADD = r'''extern "C" __global__ void add_one(int* y) { y[threadIdx.x] += 1; }'''


def test_small_launches_on_the_gpu_worker_run_as_gpu_batches(mixed, monkeypatch):
    """Small launches in a row on data the GPU worker holds run there as one task (a batch
    of GPU steps, like a CUDA graph), not one Dask round trip each."""
    from dptx.runtime.groups import Batch
    devices = []
    submit = Batch.submit

    def recording(self):
        devices.append((self.device, len(self.ops)))
        return submit(self)
    monkeypatch.setattr(Batch, "submit", recording)
    kernel = dptx.RawModule(ADD).get_function("add_one")
    arrays = [dptx.zeros(32, np.int32) for _ in range(2)]    # small uploads alternate workers
    y = next(a for a in arrays if a._buffer.pieces.pieces[0].worker == gpu_worker(mixed))
    before = standin_launches(mixed)
    with dask.config.set({"dptx.batch": True}):
        for _ in range(40):
            kernel((1,), (32,), (y,))
        np.testing.assert_array_equal(y.get(), np.full(32, 40, np.int32))
    assert devices and all(d == "gpu" for d, _ in devices) and sum(n for _, n in devices) >= 30
    assert standin_launches(mixed) - before == 40


BLOCK_ID = r'''__device__ __noinline__ unsigned block_id() { return blockIdx.x; }
extern "C" __global__ void stamp_blocks(unsigned* out) {
    out[blockIdx.x * blockDim.x + threadIdx.x] = block_id() * 1000u + threadIdx.x;
}'''


def test_a_kernel_the_gpu_path_refuses_runs_on_the_cpu_worker(mixed, caplog):
    """A device function reads %ctaid: the block-offset rewrite (what a GPU chunk runs) cannot
    take it, so the client plans the launch onto the CPU worker, and says so once."""
    kernel = dptx.RawModule(BLOCK_ID).get_function("stamp_blocks")
    assert ".func" in kernel.ptx and "%ctaid.x" in kernel.ptx.split(".entry")[0]
    grid, block = 16, 64
    before = standin_launches(mixed)
    out = dptx.zeros(grid * block, np.uint32)
    with caplog.at_level(logging.WARNING, logger="dptx.launch"), \
            dask.config.set({"dptx.split": "even"}):
        for _ in range(2):
            kernel((grid,), (block,), (out,))
        got = out.get()
    want = np.arange(grid)[:, None] * 1000 + np.arange(block)[None, :]
    np.testing.assert_array_equal(got, want.ravel())
    assert standin_launches(mixed) == before
    assert chunk_resources(mixed, "stamp_blocks") and \
        all(r == {"CPU": 1} for r in chunk_resources(mixed, "stamp_blocks"))
    said = [r.getMessage() for r in caplog.records if "stamp_blocks" in r.getMessage()]
    assert len(said) == 1 and "runs on CPU workers only" in said[0] and \
        "device function" in said[0] and "%ctaid" in said[0], said


FAULTY = r'''extern "C" __global__ void faults_on_gpu(float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * i;
}
extern "C" __global__ void after_restart(float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 3.0f * i;
}'''


def test_gpu_fault_restarts_the_worker_and_the_next_launch_runs_there(mixed):
    kernel = dptx.RawModule(FAULTY).get_function("faults_on_gpu")
    old = gpu_worker(mixed)
    n = 1 << 14
    y = dptx.zeros(n, np.float32)
    kernel((n // 128,), (128,), (y, n))
    with pytest.raises(dptx.DptxError, match=r"(?s)kernel faults_on_gpu, blocks \[\d+, \d+\).*"
                                               r"(cudaErrorIllegalAddress|ILLEGAL_ADDRESS)"):
        y.get()
    # the GPU worker restarts (its nanny starts a fresh process) and comes back with its GPU
    deadline = time.time() + 120
    while time.time() < deadline:
        workers = mixed.scheduler_info()["workers"]
        if any(w["name"] == "gpu" for w in workers.values()) and old not in workers:
            break
        time.sleep(0.2)
    assert old not in mixed.scheduler_info()["workers"], "the GPU worker did not restart"
    mixed.wait_for_workers(2, timeout=120)
    new = gpu_worker(mixed)
    planner = dptx.runtime.cluster.get_session().planner
    while time.time() < deadline and not any(w.address == new and w.device == "gpu"
                                             for w in planner.model.workers()):
        time.sleep(0.1)     # the client plans from the plugin's model, published every 0.2 s
    # a kernel the model has not measured yet: its blocks go by the devices' priors, most of
    # them to the GPU
    good = dptx.RawModule(FAULTY).get_function("after_restart")
    x = dptx.zeros(n, np.float32)
    good((n // 128,), (128,), (x, n))
    assert np.array_equal(x.get(), 3 * np.arange(n, dtype=np.float32))
    assert standin_launches(mixed) > 0               # the new process's GPU ran blocks
    state = {w["name"]: w for w in plugin_state(mixed)["workers"].values()}
    assert state["gpu"]["device"] == "gpu" and state["gpu"]["gpu_error"] is None
