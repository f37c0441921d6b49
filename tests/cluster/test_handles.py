"""What a launch returns (dptx.LaunchHandle), the public client, and connect() with live
arrays."""
import logging

import distributed
from distributed import Client, LocalCluster
import numpy as np
import pytest

import dptx

K = r'''extern "C" __global__ void inc(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] += 1.0f; }'''


def test_launch_returns_a_handle(client):
    k = dptx.RawModule(K).get_function("inc")
    x = dptx.zeros(1 << 16, np.float32)
    handles = [k((256,), (256,), (x, 1 << 16)) for _ in range(3)]
    assert all(isinstance(h, dptx.LaunchHandle) for h in handles)
    with client.as_current():                            # a Dask collection of its futures
        distributed.wait(handles[-1])
        distributed.progress(handles[-1], notebook=False, multi=False)
    assert handles[-1].done() and all(f.status == "finished" for f in handles[-1].futures)
    handles[0].wait()
    assert np.array_equal(x.get(), np.full(1 << 16, 3, np.float32))
    assert "inc" in repr(handles[0])


def test_public_client_and_dashboard(client):
    assert dptx.client() is client
    assert dptx.dashboard_link().startswith("http")


def test_connect_elsewhere_moves_live_arrays(client):
    a = dptx.asarray(np.arange(1 << 12, dtype=np.float32))
    assert dptx.connect(client) is client                # the same cluster: nothing to do
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0",
                      silence_logs=logging.ERROR, preload=["dptx.worker"],
                      scheduler_kwargs={"preload": ["scheduler_plugins"]}) as other:
        with Client(other, set_as_default=False) as c2:
            dptx.connect(c2)
            k = dptx.RawModule(K).get_function("inc")
            k((16,), (256,), (a, 1 << 12))
            assert np.array_equal(a.get(), np.arange(1 << 12, dtype=np.float32) + 1)
            dptx.connect(client)                         # and back, before c2 closes
    assert np.array_equal(a.get(), np.arange(1 << 12, dtype=np.float32) + 1)


def test_arrays_after_shutdown_say_they_are_lost(client):
    a = dptx.zeros(8, np.float32)
    dptx.shutdown()
    with pytest.raises(dptx.DptxError, match=r"32 bytes are lost: dptx.shutdown\(\) closed"):
        a.get()
    # its repr still works (a debugger shows it), and says so
    assert repr(a) == ("<dptx.ndarray shape=(8,) dtype=float32: its bytes are lost, "
                       "dptx.shutdown() closed the cluster that held it>")
    with pytest.raises(dptx.DptxError, match="are lost"):
        str(a)
