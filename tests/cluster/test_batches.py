"""Consecutive small launches run as one task (a batch), in stream order, with errors that name
the launch that failed and keep the results of the launches before it."""
import re
import time

import dask.config
import numpy as np
import pytest

import dptx

ADD = r'''extern "C" __global__ void addone(int* y, int at) { y[threadIdx.x + at] += 1; }'''


@pytest.fixture(scope="module")
def addone():
    return dptx.RawModule(ADD).get_function("addone")


def test_small_launches_run_as_batches(client, addone, monkeypatch):
    from dptx.runtime.groups import Batch
    sizes = []
    submit = Batch.submit

    def counting(self):
        sizes.append(len(self.ops))
        return submit(self)
    monkeypatch.setattr(Batch, "submit", counting)
    y = dptx.zeros(32, np.int32)
    for _ in range(300):
        addone((1,), (32,), (y, 0))
    assert np.array_equal(y.get(), np.full(32, 300, np.int32))
    # 128 launches a batch at most; a batch also goes when no launch joined it for a moment
    assert sum(sizes) >= 250 and max(sizes) <= 128 and len(sizes) < 60, sizes


def test_open_batch_starts_without_synchronization(client, addone):
    """Launches are asynchronous: a batch is submitted when no launch joined it for a moment,
    not only at the next get()."""
    y = dptx.zeros(32, np.int32)
    for _ in range(5):
        addone((1,), (32,), (y, 0))
    deadline = time.time() + 10
    while time.time() < deadline:
        if dptx.runtime.stream.default_stream._open is None and dptx.runtime.stream.default_stream._pending:
            break
        time.sleep(0.01)
    assert dptx.runtime.stream.default_stream._open is None
    assert np.array_equal(y.get(), np.full(32, 5, np.int32))


@pytest.mark.cpu_workers("an overrun of a few bytes is caught by the CPU executor's bounds "
                         "checks; a GPU (and the stand-in) lets it land in padding")
def test_error_inside_a_batch_names_the_launch_and_keeps_earlier_results(client, addone):
    y = dptx.zeros(4, np.int32)
    with dask.config.set({"dptx.batch": True}):
        for at in (0, 0, 0, 100, 0, 0):
            addone((1,), (4,), (y, at))
        with pytest.raises(dptx.DptxMemoryError) as info:
            y.get()
    text = str(info.value) + "".join(getattr(info.value, "__notes__", []))
    # the group goes after 4 launches when the workers are idle (Stream.EAGER), else after 6;
    # under load the idle timer may also send the first launch(es) alone: the failing (4th)
    # launch is then launch k of a batch of m that holds the last m - k + 1 <= 3 of them
    found = re.search(r"launch (\d) of (\d) batched into one task", text)
    assert "addone" in text and found, text
    k, m = int(found.group(1)), int(found.group(2))
    assert 1 <= k <= 4 and k <= m and m - k <= 2, text
    # the three launches before the failing one keep their results; the later ones are undone
    assert np.array_equal(y.get(), np.full(4, 3, np.int32))
    addone((1,), (4,), (y, 0))
    assert np.array_equal(y.get(), np.full(4, 4, np.int32))


def test_batching_can_be_turned_off(client, addone):
    y = dptx.zeros(8, np.int32)
    with dask.config.set({"dptx.batch": False}):
        for _ in range(20):
            addone((1,), (8,), (y, 0))
        assert y._buffer.pieces.pieces[0].future.key.startswith("dptx-chunk-addone-")
        assert np.array_equal(y.get(), np.full(8, 20, np.int32))
