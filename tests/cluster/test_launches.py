"""Launches on the cluster: chunking, merges, module globals, chained launches, errors."""
import re
import time

import dask.config
import numpy as np
import pytest

import dptx

SAXPY = r'''
extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}'''


@pytest.fixture(scope="module")
def saxpy():
    return dptx.RawModule(SAXPY).get_function("saxpy")


def test_chunk_tasks_carry_resources(client, chunks8, saxpy):
    n = 10_000
    x = dptx.asarray(np.ones(n, np.float32))
    y = dptx.asarray(np.arange(n, dtype=np.float32))
    saxpy(((n + 127) // 128,), (128,), (2.0, x, y, n))
    keys = [p.future.key for p in y._buffer.pieces.pieces]
    assert all(k.startswith(("dptx-chunk-saxpy-", "dptx-out-saxpy-", "dptx-merge-saxpy-"))
               for k in keys), keys

    def restrictions(dask_scheduler, prefix="dptx-chunk-saxpy-"):
        return {str(k): ts.resource_restrictions for k, ts in dask_scheduler.tasks.items()
                if str(k).startswith(prefix)}
    deadline = time.time() + 10   # submission reaches the scheduler asynchronously
    seen = client.run_on_scheduler(restrictions)
    while len(seen) < 8 and time.time() < deadline:
        time.sleep(0.02)
        seen = client.run_on_scheduler(restrictions)
    assert len(seen) == 8 and all(r == {"CPU": 1} for r in seen.values())
    assert np.array_equal(y.get(), np.arange(n, dtype=np.float32) + 2)
    # x is never written: its pieces are not touched by the launch
    assert [p.future.key[:10] for p in x._buffer.pieces.pieces] == ["dptx-htod-"]


def test_workers_declare_resources(client, cluster_kind):
    info = client.scheduler_info()["workers"]
    assert len(info) == 2
    assert all(w["resources"].get("CPU") == 1 for w in info.values())
    facts = client.run(lambda dask_worker: dask_worker.dptx_devices["device"])
    assert sorted(facts.values()) == (["cpu", "gpu"] if cluster_kind == "mixed" else ["cpu", "cpu"])
    assert all((w["resources"].get("GPU") == 1) == (facts[a] == "gpu") for a, w in info.items())


def test_argument_errors(client, saxpy):
    x = dptx.zeros(10, np.float32)
    with pytest.raises(dptx.LaunchError, match="takes 4 arguments"):
        saxpy((1,), (32,), (2.0, x, x))
    with pytest.raises(dptx.LaunchError, match=r"argument 0 \(a: .f32\).*not a pointer"):
        saxpy((1,), (32,), (x, x, x, 10))
    with pytest.raises(dptx.LaunchError, match="argument 1 .*numpy array"):
        saxpy((1,), (32,), (2.0, np.zeros(10, np.float32), x, 10))
    with pytest.raises(dptx.LaunchError, match="argument 3 .*does not fit"):
        saxpy((1,), (32,), (2.0, x, x, 2**40))
    with pytest.raises(dptx.LaunchError, match="argument 3 .*float"):
        saxpy((1,), (32,), (2.0, x, x, 1.5))
    with pytest.raises(dptx.LaunchError, match="block dimension x = 2048 exceeds 1024"):
        saxpy((1,), (2048,), (2.0, x, x, 10))
    with pytest.raises(dptx.LaunchError, match="2048 threads"):
        saxpy((1,), (64, 32), (2.0, x, x, 10))
    with pytest.raises(dptx.LaunchError, match="grid dimension y"):
        saxpy((1, 70000), (32,), (2.0, x, x, 10))
    with pytest.raises(dptx.LaunchError, match="grid"):
        saxpy((0,), (32,), (2.0, x, x, 10))


def test_out_of_bounds_keeps_earlier_data(client, chunks8):
    k = dptx.RawModule(r'''extern "C" __global__ void scatter(int* out, const int* idx) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        out[idx[i]] = i; }''').get_function("scatter")
    out = dptx.asarray(np.full(64, -1, np.int32))
    idx = np.arange(64, dtype=np.int32)
    idx[37] = 1_000_000  # one thread writes far past the end
    k((2,), (32,), (out, dptx.asarray(idx)))
    with pytest.raises(dptx.DptxMemoryError) as info:
        out.get()
    message = str(info.value)
    assert "scatter" in message and "block 1" in message and "thread 5" in message
    # the array keeps what it held before the failed launch, and the cluster goes on
    assert np.array_equal(out.get(), np.full(64, -1, np.int32))
    good = np.arange(64, dtype=np.int32)[::-1].copy()
    k((2,), (32,), (out, dptx.asarray(good)))
    assert np.array_equal(out.get()[good], np.arange(64, dtype=np.int32))


@pytest.mark.cpu_workers("the CPU executor's loop back edges poll the time limit")
def test_a_chunk_that_never_ends_is_stopped_and_the_workers_serve_on(client, chunks8):
    """A kernel that waits for a value nobody writes: the launch's dptx.kernel-timeout
    travels with its chunks, each is stopped on its worker (DptxTimeoutError naming the
    kernel), the array keeps what it held, and the same workers run the next launch."""
    import dask.config
    k = dptx.RawModule(r'''extern "C" __global__ void wait_for(volatile int* flag, int* out) {
        while (*flag != 1);
        out[blockIdx.x * blockDim.x + threadIdx.x] = 1; }''').get_function("wait_for")
    flag = dptx.zeros(1, np.int32)
    out = dptx.asarray(np.full(64, 7, np.int32))
    t0 = time.monotonic()
    with dask.config.set({"dptx.kernel-timeout": 1.0}):
        k((2,), (32,), (flag, out))
        with pytest.raises(dptx.DptxTimeoutError, match=r"kernel wait_for ran past its time "
                                                        r"limit of 1 s"):
            out.get()
    assert time.monotonic() - t0 < 30
    assert (out.get() == 7).all()
    flag[...] = 1
    k((2,), (32,), (flag, out))
    assert (out.get() == 1).all()


def test_module_globals_persist(client, chunks8):
    mod = dptx.RawModule(r'''
    __constant__ float scale[2] = {2.0f, 3.0f};
    __device__ int offset = 5;
    __device__ unsigned int calls = 0;
    extern "C" __global__ void apply(float* x, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) x[i] = x[i] * scale[i & 1] + offset;
        if (i == 0) calls += 1;
    }''')
    assert sorted(mod.global_names) == ["calls", "offset", "scale"]
    assert np.array_equal(mod.get_global("scale", np.float32).get(), np.array([2, 3], np.float32))
    assert mod.get_global("scale").dtype == np.float32   # from the declaration (PTX: .b8 [8])
    assert int(mod.get_global("offset", np.int32).get()) == 5
    k = mod.get_function("apply")
    x = dptx.asarray(np.ones(1000, np.float32))
    k((8,), (128,), (x, 1000))
    assert np.array_equal(x.get(), np.where(np.arange(1000) % 2 == 0, 7, 8).astype(np.float32))
    mod.get_global("offset", np.int32).set(np.array(-1, np.int32))      # cudaMemcpyToSymbol
    mod.get_global("scale", np.float32).set(np.array([10, 20], np.float32))
    k((8,), (128,), (x, 1000))
    assert np.array_equal(x.get(), np.where(np.arange(1000) % 2 == 0, 69, 159).astype(np.float32))
    assert int(mod.get_global("calls", np.uint32).get()) == 2  # the device counter persisted
    with pytest.raises(KeyError, match="variables: "):
        mod.get_global("nope")
    # one current copy: in-process launches continue from the cluster's, and back
    host = np.ones(1000, np.float32)
    dptx.cpu.launch(k, (8,), (128,), [host, 1000])
    assert np.array_equal(host, np.where(np.arange(1000) % 2 == 0, 9, 19).astype(np.float32))
    assert int(mod.get_global("calls").get()) == 3
    mod.get_global("offset").set(np.array(100, np.int32))       # set in this process
    k((8,), (128,), (x, 1000))                                  # seen on the cluster
    assert np.array_equal(x.get(), np.where(np.arange(1000) % 2 == 0, 790, 3280).astype(np.float32))
    assert int(mod.get_global("calls").get()) == 4


def test_atomics_merge_across_chunks(client, chunks8):
    mod = dptx.RawModule(r'''
    extern "C" __global__ void stats(const int* v, int n, unsigned* hist, float* sum,
                                     int* lo, int* hi, unsigned long long* bits) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i >= n) return;
        atomicAdd(&hist[v[i] & 15], 1u);
        atomicAdd(sum, (float)(v[i] % 7));
        atomicMin(lo, v[i]);
        atomicMax(hi, v[i]);
        atomicOr(bits, 1ull << (v[i] & 63));
    }''')
    k = mod.get_function("stats")
    rng = np.random.default_rng(5)
    v = rng.integers(-100_000, 100_000, 20_000).astype(np.int32)
    hist, total = dptx.zeros(16, np.uint32), dptx.zeros(1, np.float32)
    lo = dptx.full(1, 2**31 - 1, np.int32)
    hi = dptx.full(1, -2**31, np.int32)
    bits = dptx.zeros(1, np.uint64)
    k((79,), (256,), (dptx.asarray(v), len(v), hist, total, lo, hi, bits))
    assert np.array_equal(hist.get(), np.bincount(v & 15, minlength=16).astype(np.uint32))
    assert total.get()[0] == pytest.approx(float(np.sum(np.fmod(v, 7))), rel=1e-5)
    assert lo.get()[0] == v.min() and hi.get()[0] == v.max()
    expected_bits = np.bitwise_or.reduce(np.uint64(1) << (v & 63).astype(np.uint64))
    assert bits.get()[0] == expected_bits


def test_unmergeable_last_block_reduction(client, chunks8):
    """The atomic-ticket 'last block' reduction (threadfence + atomicInc return value) cannot be
    split; it runs as one chunk and is right."""
    mod = dptx.RawModule(r'''
    __device__ unsigned int ticket = 0;
    extern "C" __global__ void sum(const float* x, float* partial, float* out, int n) {
        __shared__ float s[128];
        __shared__ bool last;
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        s[threadIdx.x] = i < n ? x[i] : 0.0f;
        __syncthreads();
        for (int o = 64; o > 0; o >>= 1) { if (threadIdx.x < o) s[threadIdx.x] += s[threadIdx.x + o]; __syncthreads(); }
        if (threadIdx.x == 0) {
            partial[blockIdx.x] = s[0];
            __threadfence();
            unsigned t = atomicInc(&ticket, gridDim.x);
            last = (t == gridDim.x - 1);
        }
        __syncthreads();
        if (last && threadIdx.x == 0) {
            float total = 0;
            for (int b = 0; b < gridDim.x; b++) total += partial[b];
            out[0] = total;
            ticket = 0;
        }
    }''')
    from dptx.ptx.analysis import merge_facts
    k = mod.get_function("sum")
    assert not merge_facts(mod.module, k.function).mergeable
    x = np.random.default_rng(6).random(5000).astype(np.float32)
    partial, out = dptx.zeros(40, np.float32), dptx.zeros(1, np.float32)
    k((40,), (128,), (dptx.asarray(x), partial, out, 5000))
    assert out.get()[0] == pytest.approx(float(x.astype(np.float64).sum()), rel=1e-5)
    assert int(mod.get_global("ticket", np.uint32).get()) == 0


def test_unmergeable_launch_is_never_cut_at_its_edges(client):
    """A histogram through 64-bit indices loaded from memory: the atomics' addresses have no
    known origin, so its chunks cannot be merged and it runs as one chunk. Its index array
    was written by an 8-chunk launch (pieces on both workers): latency hiding used to cut the
    chunk's edge blocks off as chunks of their own, merged by byte differences, and the
    counts they added to bins the rest also counted were lost (28558 of 843673)."""
    mod = dptx.RawModule(r'''
    extern "C" __global__ void hist(const long long* bin, long long* counts, long long n) {
        long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) atomicAdd((unsigned long long*)&counts[bin[i]], 1ull);
    }''')
    k = mod.get_function("hist")
    from dptx.ptx.analysis import merge_facts
    assert not merge_facts(mod.module, k.function).mergeable
    n, bins = 843673, 4351
    idx = np.random.default_rng(1).integers(0, bins, n)
    with dask.config.set({"dptx.chunks": 8}):
        held = dptx.asarray(idx) + 0                # eight pieces, on both workers
    assert len(held._buffer.pieces.pieces) == 8
    counts = dptx.zeros(bins, np.int64)
    k((-(-n // 256),), (256,), (held, counts, np.int64(n)))
    assert np.array_equal(counts.get(), np.bincount(idx, minlength=bins))


def test_bitonic_sort_many_launches(client):
    mod = dptx.RawModule(r'''
    extern "C" __global__ void bitonic_step(float* a, int j, int k) {
        unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
        unsigned p = i ^ j;
        if (p > i) {
            bool up = (i & k) == 0;
            float x = a[i], y = a[p];
            if ((x > y) == up) { a[i] = y; a[p] = x; }
        }
    }''')
    step = mod.get_function("bitonic_step")
    n = 4096
    host = np.random.default_rng(7).standard_normal(n).astype(np.float32)
    a = dptx.asarray(host)
    launches = 0
    k = 2
    while k <= n:
        j = k // 2
        while j > 0:
            step((n // 256,), (256,), (a, j, k))
            launches += 1
            j //= 2
        k *= 2
    assert launches == 78
    # and sort the reversed array again, for more than 100 chained launches in all
    assert np.array_equal(a.get(), np.sort(host))
    a.set(np.ascontiguousarray(np.sort(host)[::-1]))
    k = 2
    while k <= n:
        j = k // 2
        while j > 0:
            step((n // 256,), (256,), (a, j, k))
            launches += 1
            j //= 2
        k *= 2
    assert launches == 156
    assert np.array_equal(a.get(), np.sort(host))



def test_messages_go_without_dasks_batching_delay(client):
    """Every connection a launch's messages take (client to scheduler, scheduler to the
    client and to each worker, worker to scheduler) sends at dptx.message-interval (0 by
    default), not Dask's 2-10 ms batching interval, which a launch-and-synchronize loop would
    pay at every hop."""
    import dask.config
    a = dptx.asarray(np.arange(1024, dtype=np.float32))
    np.testing.assert_array_equal((a * 2).get(), np.arange(1024, dtype=np.float32) * 2)
    assert dask.config.get("dptx.message-interval") == 0
    assert client.scheduler_comm.interval == 0

    def scheduler_side(dask_scheduler, client_id=client.id):
        return ([s.interval for s in dask_scheduler.stream_comms.values()],
                dask_scheduler.client_comms[client_id].interval)
    to_workers, to_client = client.run_on_scheduler(scheduler_side)
    assert to_workers and to_workers == [0] * len(to_workers) and to_client == 0
    intervals = client.run(lambda dask_worker: dask_worker.batched_stream.interval)
    assert list(intervals.values()) == [0] * len(intervals)


def test_a_dptx_array_given_to_the_in_process_launch_is_refused(client, saxpy):
    """dptx.cpu.launch runs in this process on numpy arrays: a dptx array there, for a pointer
    or a scalar, is refused before anything compiles or waits, with the kernel, the argument
    and its parameter, and what to do (issue 40)."""
    x = dptx.asarray(np.ones(10, np.float32))
    y = np.zeros(10, np.float32)
    for args, where in [((2.0, x, y, 10), r"argument 1 \(x: .u64\)"),
                        ((dptx.asarray(np.float32(2)), y, y, 10),
                         r"argument 0 \(a: .f32\)"),
                        ((2.0, y, y, dptx.asarray(np.array([10], np.int32))),
                         r"argument 3 \(n: .u32\)")]:
        with pytest.raises(dptx.LaunchError) as info:
            dptx.cpu.launch(saxpy, (1,), (32,), args)
        message = str(info.value)
        assert re.search(where + " of kernel saxpy is a dptx cluster array", message), message
        assert "pass a numpy array (h = a.get())" in message
        assert "or launch on the cluster: kernel(grid, block, args)" in message
    assert not y.any()
    # the cluster launch takes it, as before
    saxpy((1,), (32,), (2.0, x, x, 10))
    assert np.array_equal(x.get(), np.full(10, 3, np.float32))


@pytest.mark.client_side("which workers a client plans on is the client's choice")
def test_the_workers_setting_keeps_launches_and_uploads_on_those_workers(client, chunks8,
                                                                         saxpy):
    """``dptx.workers`` names the workers this client uses (a part of a cluster: the
    scale-out benchmark's table on a deployed cluster); a name that matches none is an error
    that says which workers there are."""
    one = sorted(client.scheduler_info()["workers"])[-1]
    n = 20_000
    with dask.config.set({"dptx.workers": [one]}):
        x = dptx.asarray(np.ones(n, np.float32))
        y = dptx.asarray(np.arange(n, dtype=np.float32))
        saxpy(((n + 127) // 128,), (128,), (2.0, x, y, n))
        np.testing.assert_array_equal(y.get(), np.arange(n, dtype=np.float32) + 2)
        # (the scheduler may copy host uploads to a second worker: replicas, not placement)
        assert {p.worker for p in x._buffer.pieces.pieces} == {one}
        ran = {w for p in y._buffer.pieces.pieces for w in client.who_has([p.future])[p.future.key]}
        assert ran == {one}, ran
    with dask.config.set({"dptx.workers": "tcp://10.255.255.1:1"}):
        with pytest.raises(dptx.DptxError, match=r"dptx.workers=.*names none of the "
                                                 r"cluster's workers \(tcp://"):
            dptx.asarray(np.ones(n, np.float32))


def test_triton_style_ptx_on_the_cluster(client, chunks8):
    """tests/ptx_samples/triton_row_sum.ptx (masked loads and stores with one-element brace
    lists, shuffles, a barrier) launched on dptx arrays, cut into chunks: numpy's row sums
    in the kernel's order (tests/test_triton_style_ptx.py), bit for bit."""
    from pathlib import Path
    from tests.test_triton_style_ptx import row_sums_by_the_kernels_order
    ptx = (Path(__file__).parents[1] / "ptx_samples" / "triton_row_sum.ptx").read_text()
    kernel = dptx.RawModule(ptx=ptx).get_function("row_sum")
    n, rows = 100, 40
    x = np.random.default_rng(5).standard_normal(rows * n).astype(np.float32)
    out = dptx.zeros(rows, np.float32)
    kernel((rows,), (128,), (dptx.asarray(x), out, np.uint32(n)))
    np.testing.assert_array_equal(out.get(), row_sums_by_the_kernels_order(x, n))


def test_numba_cuda_ptx_on_the_cluster(client, chunks8):
    """numba-cuda's PTX (tests/generated_ptx) launched on dptx arrays through numba's array
    ABI, cut into chunks: a shared-memory tree with an atomic per block, and a 2-D stencil."""
    from tests.test_generated_ptx import kernel, numba_args
    rng = np.random.default_rng(8)
    n = 3000
    x = rng.integers(-50, 50, 3072).astype(np.float32)
    partial = dptx.zeros(1, np.float32)
    kernel("numba_block_sum.ptx")((24,), (128,), numba_args(dptx.asarray(x), partial,
                                                            np.int32(n)))
    assert partial.get()[0] == x[:n].sum()
    src = rng.integers(-1000, 1000, (64, 48)).astype(np.float32)
    dst = dptx.zeros(src.shape, np.float32)
    kernel("numba_stencil_2d.ptx")((4, 3), (16, 16), numba_args(dptx.asarray(src), dst))
    want = np.zeros_like(src)
    want[1:-1, 1:-1] = (src[:-2, 1:-1] + src[2:, 1:-1] + src[1:-1, :-2] + src[1:-1, 2:]
                        - np.float32(4) * src[1:-1, 1:-1])
    np.testing.assert_array_equal(dst.get(), want)


def test_triton_ptx_on_the_cluster(client, chunks8):
    """Triton's PTX (tests/generated_ptx): softmax rows and an f16 tensor-core matmul on dptx
    arrays, cut into chunks, with the dynamic shared memory Triton's launcher passes."""
    from tests.test_generated_ptx import kernel, triton_args, triton_shared
    rng = np.random.default_rng(9)
    rows, cols = 24, 200
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    out = dptx.zeros((rows, cols), np.float32)
    kernel("triton_softmax.ptx")((rows,), (128,), triton_args(dptx.asarray(x), out, np.int32(cols)),
                                 shared_mem=triton_shared("triton_softmax.ptx"))
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out.get(), e / e.sum(axis=1, keepdims=True), rtol=2e-6, atol=1e-7)
    M, N, K = 64, 64, 64
    a = rng.integers(-4, 4, (M, K)).astype(np.float16)
    b = rng.integers(-4, 4, (K, N)).astype(np.float16)
    c = dptx.zeros((M, N), np.float32)
    kernel("triton_matmul_f16.ptx")((2, 2), (128,), triton_args(dptx.asarray(a), dptx.asarray(b), c,
                                                                np.int32(M), np.int32(N),
                                                                np.int32(K)),
                                    shared_mem=triton_shared("triton_matmul_f16.ptx"))
    np.testing.assert_array_equal(c.get(), a.astype(np.float32) @ b.astype(np.float32))
    # sm_90's wgmma, from shared memory through matrix descriptors
    c90 = dptx.zeros((M, N), np.float32)
    kernel("triton_matmul_f16_sm90.ptx")((1, 1), (128,), triton_args(
        dptx.asarray(a), dptx.asarray(b), c90, np.int32(M), np.int32(N), np.int32(K)),
        shared_mem=triton_shared("triton_matmul_f16_sm90.ptx"))
    np.testing.assert_array_equal(c90.get(), a.astype(np.float32) @ b.astype(np.float32))


def test_warp_ptx_on_the_cluster(client, chunks8):
    """Warp's PTX (tests/generated_ptx): its arrays as structs by value holding dptx arrays'
    a.data.ptr, a grid-stride saxpy and a histogram by atomics cut into chunks."""
    from tests.test_generated_ptx import warp_array, warp_bounds, warp_kernel
    rng = np.random.default_rng(12)
    n = 20_000
    hx, hy = rng.integers(-100, 100, n).astype(np.float32), rng.integers(-100, 100, n).astype(np.float32)
    x, y = dptx.asarray(hx), dptx.asarray(hy)
    warp_kernel("saxpy")((64,), (128,), (warp_bounds(n), warp_array(x), warp_array(y),
                                         np.float32(2)))
    np.testing.assert_array_equal(y.get(), 2 * hx + hy)
    keys = rng.integers(0, 1000, n).astype(np.int32)
    bins = dptx.zeros(16, np.int32)
    warp_kernel("histogram")((64,), (128,), (warp_bounds(n), warp_array(dptx.asarray(keys)),
                                             warp_array(bins)))
    np.testing.assert_array_equal(bins.get(), np.bincount(keys % 16, minlength=16))


def test_tinygrad_ptx_on_the_cluster(client, chunks8):
    """tinygrad's PTX (tests/generated_ptx): a softmax's three kernels over dptx arrays, the
    temporaries as views into one arena array, as tinygrad packs them."""
    from tests.test_generated_ptx import HERE, TINYGRAD, _softmax
    from dptx.ptx import parse
    spec = TINYGRAD["computations"]["softmax"]
    x = np.random.default_rng(13).standard_normal((16, 100)).astype(np.float32)
    memory = {int(slot): dptx.zeros(size, np.uint8) for slot, size in spec["sizes"].items()}
    memory[spec["inputs"][0]] = dptx.asarray(x.reshape(-1).view(np.uint8))
    for k in spec["kernels"]:
        text = (HERE / k["file"]).read_text()
        (entry,) = [f.name for f in parse(text).kernels]
        dptx.RawModule(ptx=text).get_function(entry)(
            tuple(k["grid"]), tuple(k["block"]),
            tuple(memory[slot][offset:offset + size] for slot, offset, size in k["buffers"]))
    got = memory[spec["output"]].get().view(np.float32).reshape(16, 100)
    np.testing.assert_allclose(got, _softmax(x.astype(np.float64)), rtol=1e-6, atol=1e-7)
