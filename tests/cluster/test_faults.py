"""A worker killed in the middle of a run loses nothing: its chunks (placed on it by the
scheduler plugin, loosely) rerun elsewhere and the result is bitwise the same."""
import logging
import os
import signal
import time

import numpy as np
import pytest
from distributed import Client

import dptx
from tests.cluster.clusters import cpu_cluster

SLOW = r'''
extern "C" __global__ void slow_poly(const float* x, float* y, int n, int iters) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i], acc = 0.0f;
    for (int k = 0; k < iters; k++) acc = acc * 0.999f + sinf(v + k * 1e-3f);
    y[i] = acc;
}'''


@pytest.mark.timeout(300)
def test_killed_worker_changes_nothing():
    kernel = dptx.RawModule(SLOW).get_function("slow_poly")
    n, iters = 1 << 14, 5000      # launches of about 1.5 s in 8 chunks (the suite's tier)
    x_host = np.linspace(-3, 3, n, dtype=np.float32)
    with cpu_cluster(2, logging.CRITICAL) as cluster, \
            Client(cluster, set_as_default=False) as client:
        dptx.connect(client)
        try:
            # Reference run on the healthy cluster
            x = dptx.asarray(x_host)
            y_ref = dptx.zeros(n, np.float32)
            kernel((n // 128,), (128,), (x, y_ref, n, iters))
            reference = y_ref.get()

            y = dptx.zeros(n, np.float32)
            kernel((n // 128,), (128,), (x, y, n, iters))
            # kill one worker process as soon as some chunks have finished
            pids = client.run(os.getpid)
            victim_addr = sorted(pids)[0]

            launch_token = y._buffer.pieces.pieces[0].future.key.split("-")[3]
            prefix = f"dptx-chunk-slow_poly-{launch_token}-"

            def done_chunks(dask_scheduler, prefix=prefix):
                return sum(1 for k, ts in dask_scheduler.tasks.items()
                           if str(k).startswith(prefix) and ts.state == "memory")
            deadline = time.time() + 120
            while client.run_on_scheduler(done_chunks) < 1 and time.time() < deadline:
                time.sleep(0.05)
            def planned_on_victim(dask_scheduler, prefix=prefix, victim=victim_addr):
                return sum(1 for k, ts in dask_scheduler.tasks.items()
                           if str(k).startswith(prefix) and ts.worker_restrictions == {victim})
            assert client.run_on_scheduler(planned_on_victim) >= 1   # loose placement
            os.kill(pids[victim_addr], signal.SIGKILL)
            result = y.get()
            assert np.array_equal(result, reference)
            assert np.isfinite(result).all() and np.abs(result).max() > 0
        finally:
            dptx.shutdown()


@pytest.mark.timeout(300)
def test_killed_worker_keeps_host_uploads():
    """A large upload goes straight to the workers (no task can recompute it), so each piece
    is kept on two workers: killing one loses nothing, and launches go on."""
    host = np.random.default_rng(8).standard_normal(1 << 20).astype(np.float32)
    kernel = dptx.RawModule(r'''extern "C" __global__ void neg(float* x, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] = -x[i]; }''').get_function("neg")
    with cpu_cluster(3, logging.CRITICAL) as cluster, \
            Client(cluster, set_as_default=False) as client:
        dptx.connect(client)
        try:
            a = dptx.asarray(host)
            pieces = a._buffer.pieces.pieces
            assert len(pieces) == 3 and all(p.future.key.startswith("dptx-host-") for p in pieces)
            holders = client.who_has([p.future for p in pieces])
            assert all(len(h) == 2 for h in holders.values()), holders
            victim = pieces[1].worker
            os.kill(client.run(os.getpid)[victim], signal.SIGKILL)
            deadline = time.time() + 60
            while victim in client.nthreads() and time.time() < deadline:
                time.sleep(0.1)
            assert np.array_equal(a.get(), host)
            kernel((1 << 12,), (256,), (a, np.int32(1 << 20)))
            assert np.array_equal(a.get(), -host)
            # the lost copies are made again on the survivors
            deadline = time.time() + 30
            while time.time() < deadline:
                holders = client.who_has([p.future for p in pieces])
                if all(len(h) == 2 for h in holders.values()):
                    break
                time.sleep(0.2)
            assert all(len(h) == 2 for h in holders.values()), holders
        finally:
            dptx.shutdown()


@pytest.mark.timeout(300)
def test_result_copies_keep_an_arrays_contents_through_a_workers_death():
    """With dptx.result-copies 2 (a setting of the scheduler), the pieces of the arrays a
    client holds get a second copy within an Active Memory Manager round: killing a worker
    that held a kernel's results loses nothing. With 1 (the default) the same kill loses
    them (DataLostError): the versions they came from were released."""
    import dask.config
    host = np.random.default_rng(9).standard_normal(1 << 20).astype(np.float32)
    kernel = dptx.RawModule(r'''extern "C" __global__ void neg(float* x, int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] = -x[i]; }''').get_function("neg")
    for copies in (2, 1):
        with dask.config.set({"dptx.result-copies": copies,
                              "distributed.scheduler.active-memory-manager.interval": "100ms"}), \
                cpu_cluster(3, logging.CRITICAL) as cluster, \
                Client(cluster, set_as_default=False) as client:
            dptx.connect(client)
            try:
                a = dptx.asarray(host)
                kernel((1 << 12,), (256,), (a, np.int32(1 << 20)))
                kernel((1 << 12,), (256,), (a, np.int32(1 << 20)))
                kernel((1 << 12,), (256,), (a, np.int32(1 << 20)))
                assert np.array_equal(a.get(), -host)
                pieces = [p for p in a._buffer.pieces.pieces if p.future is not None]
                assert pieces and not any(p.future.key.startswith("dptx-host-") for p in pieces)
                time.sleep(1.0)             # a few AMM rounds
                holders = client.who_has([p.future for p in pieces])
                assert all(len(h) == copies for h in holders.values()), (copies, holders)
                victim = next(iter(holders[pieces[0].future.key]))
                os.kill(client.run(os.getpid)[victim], signal.SIGKILL)
                deadline = time.time() + 60
                while victim in client.nthreads() and time.time() < deadline:
                    time.sleep(0.1)
                if copies == 2:
                    assert np.array_equal(a.get(), -host)
                    kernel((1 << 12,), (256,), (a, np.int32(1 << 20)))
                    assert np.array_equal(a.get(), host)
                else:
                    with pytest.raises(dptx.DataLostError):
                        a.get()
            finally:
                dptx.shutdown()


@pytest.mark.timeout(300)
def test_uploads_right_after_a_worker_leaves():
    """The client's model learns a moment later that a worker left: an upload planned onto it
    goes to the workers still there (not a 30 s wait for it), and the data is right."""
    from graphs import memcpy
    data = np.arange(1 << 20, dtype=np.float32)            # large: scattered, one piece each
    with cpu_cluster(2, logging.CRITICAL) as cluster, \
            Client(cluster, set_as_default=False) as client:
        dptx.connect(client)
        try:
            session = dptx.runtime.cluster.get_session()
            before = session.model.workers()
            assert len(before) == 2
            gone = before[0].address
            client.retire_workers([gone])
            # the plan made with the model from before the worker left
            pieces = memcpy.upload(client, data, before, False)
            assert {p.worker for p in pieces.pieces} <= {None, before[1].address}
            assert np.array_equal(memcpy.download(client, pieces).view(np.float32), data)
            a = dptx.asarray(data)
            assert np.array_equal(a.get(), data)
        finally:
            dptx.shutdown()


@pytest.mark.timeout(300)
def test_workers_out_of_memory_fail_the_launch_with_a_dptx_error():
    """A bincount whose counts (256 MB, a private copy per chunk: atomic adds at computed
    addresses) two 300 MB workers cannot hold: they die together, again and again. The
    upload the chunks read then waited in Dask's ``no-worker`` state for ever (loosely
    restricted to a worker that was gone, and the workers that joined were not offered it):
    the launch hung. Now it fails with dptx's WorkerDiedError, which says why, and the
    cluster runs what comes next."""
    with cpu_cluster(2, logging.CRITICAL, memory_limit="300MB") as cluster, \
            Client(cluster, set_as_default=False) as client:
        dptx.connect(client)
        try:
            x = dptx.asarray(np.array([0, 1, 2**25] * 1000, np.int64))
            with pytest.raises(dptx.WorkerDiedError, match="memory limit"):
                dptx.bincount(x).get()
            y = dptx.asarray(np.arange(10.0))
            assert (y * 2).get().tolist() == [2.0 * k for k in range(10)]
        finally:
            dptx.shutdown()


COUNT = r'''
__device__ int calls;
extern "C" __global__ void count(int* a) {
    a[threadIdx.x] = 1;
    if (threadIdx.x == 0) atomicAdd(&calls, 1);
}'''


@pytest.mark.timeout(240)
def test_closing_the_client_dptx_runs_on_loses_its_data_and_hangs_nothing():
    """The program closes the Client it gave dptx.connect while a module's variables and an
    array live on that cluster. Reading them back asked for a client, which connected again,
    which left the closed one by reading them back...: dptx.cpu.launch of the module's kernel
    hung (issue 40). Now the next call raises ClusterLostError at once, later ones say the
    data are lost, and none starts a cluster."""
    kernel = dptx.RawModule(COUNT).get_function("count")
    with cpu_cluster(1, logging.CRITICAL) as cluster:
        try:
            with Client(cluster, set_as_default=False) as client:
                dptx.connect(client)
                a = dptx.zeros(4, np.int32)
                kernel((1,), (4,), (a,))        # the module's variables move to the cluster
                assert a.get().tolist() == [1, 1, 1, 1]
            out = np.zeros(4, np.int32)
            started = time.monotonic()
            with pytest.raises(dptx.ClusterLostError, match="the distributed.Client dptx ran "
                                                            "on was closed"):
                dptx.cpu.launch(kernel, (1,), (4,), (out,))
            for again in (lambda: dptx.cpu.launch(kernel, (1,), (4,), (out,)), a.get):
                with pytest.raises(dptx.DptxError, match="bytes are lost: the distributed."
                                                         "Client that held it was closed"):
                    again()
            assert time.monotonic() - started < 30
            assert not out.any() and not dptx.runtime.cluster.is_running()
        finally:
            dptx.shutdown()
