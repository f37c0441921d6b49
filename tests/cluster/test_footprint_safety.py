"""The footprint is enforced (DESIGN.md point 6): a chunk given too small a window by a wrong
analysis raises FootprintViolation on its worker, the launch reruns with whole buffers, the
kernel is distrusted from then on (with a logged reason), and the result is right."""
import logging
import warnings

import dask.config
import numpy as np
import pytest

import dptx
from graphs import footprints

SAXPY = r'''
extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}'''


class Access:
    def __init__(self, reads, writes):
        self.reads, self.writes = reads, writes


class Shrunk:
    """A stand-in for an analysis that is wrong: saxpy's exact footprints, minus some bytes
    at the end of each chunk's reads of x (argument 1) or writes of y (argument 2)."""

    def __init__(self, reads_short: int, writes_short: int):
        self.reads_short, self.writes_short = reads_short, writes_short

    def evaluate(self, grid, block, scalars, ranges, sizes):
        n = sizes[("param", 1)] // 4
        rows = []
        for a, b in ranges:
            lo, hi = 4 * min(a * block[0], n), 4 * min(b * block[0], n)
            rows.append({("param", 1): Access([(lo, max(lo, hi - self.reads_short))], []),
                         ("param", 2): Access([(lo, hi)], [(lo, max(lo, hi - self.writes_short))])})
        return rows


@pytest.fixture
def fresh_trust(monkeypatch):
    monkeypatch.setattr(footprints, "_distrusted", {})
    monkeypatch.setattr(footprints, "_evaluated", {})


@pytest.mark.parametrize("reads_short, writes_short", [(64, 0), (0, 64)])
def test_wrong_footprint_reruns_with_whole_buffers(client, chunks8, fresh_trust, monkeypatch,
                                                   caplog, reads_short, writes_short):
    kernel = dptx.RawModule(SAXPY).get_function("saxpy")
    monkeypatch.setattr(footprints, "_analysis", lambda *a: Shrunk(reads_short, writes_short))
    n = 1 << 16
    x_host = np.arange(n, dtype=np.float32)
    x = dptx.asarray(x_host)
    y = dptx.ones(n, np.float32)
    with caplog.at_level(logging.WARNING, logger="dptx"):
        kernel((n // 256,), (256,), (np.float32(2.0), x, y, n))
        kernel((n // 256,), (256,), (np.float32(3.0), x, y, n))    # queued behind it
        got = y.get()
    assert np.array_equal(got, 5 * x_host + 1)
    reason = footprints.distrusted(kernel.ptx, "saxpy")
    assert reason and "saxpy" in reason
    assert any("saxpy runs with whole buffers" in r.getMessage() for r in caplog.records)


def test_large_upload_sends_no_data_through_the_scheduler(client):
    host = np.random.default_rng(3).random(4 << 20).astype(np.float32)     # 16 MiB
    # the cluster is shared by the session's tests: only this test's tasks are weighed (another
    # test's small upload, a task of up to graphs.memcpy.SMALL_BYTES, may still be held there)
    before = client.run_on_scheduler(lambda dask_scheduler: {str(k) for k in dask_scheduler.tasks})
    with warnings.catch_warnings():
        warnings.simplefilter("error")       # Dask warns of large graphs; there must be none
        a = dptx.asarray(host)
        with dask.config.set({"dptx.chunks": 4}):
            dptx.RawModule(r'''extern "C" __global__ void half(float* x) {
                x[blockIdx.x * blockDim.x + threadIdx.x] *= 0.5f; }''').get_function("half")(
                    (len(host) // 256,), (256,), (a,))
        got = a.get()
    assert np.array_equal(got, host * np.float32(0.5))

    def graph_bytes(dask_scheduler, before):
        # (a module's PTX text travels once in a task of its own, dptx-ptx-*: code, not data;
        # a sort's module is about 60-110 KB of it)
        import pickle
        return max((len(pickle.dumps(ts.run_spec)) for k, ts in dask_scheduler.tasks.items()
                    if str(k).startswith("dptx-") and not str(k).startswith("dptx-ptx-")
                    and str(k) not in before and ts.run_spec is not None), default=0)
    assert client.run_on_scheduler(graph_bytes, before=before) < 64 * 1024
