"""A progress bar (Dask's) while a synchronization waits for long work: shown once the wait
has lasted a moment, in a terminal or Jupyter; the dptx.progress setting turns it on or off;
"auto" shows nothing when output is not a terminal."""
import dask
import numpy as np
import pytest

import dptx

pytestmark = pytest.mark.client_side("the progress bar is the client's")
import dptx.runtime.progress

SPIN = r'''extern "C" __global__ void spin2(float* x, int iters) {
    float v = x[threadIdx.x];
    for (int k = 0; k < iters; k++) v = v * 0.999999f + 1e-6f;
    x[threadIdx.x] = v;
}'''


@pytest.fixture
def quick_bar(monkeypatch):
    monkeypatch.setattr(dptx.runtime.progress, "SHOW_AFTER", 0.2)


def long_launch():
    x = dptx.zeros(32, np.float32)
    dptx.RawModule(SPIN).get_function("spin2")((1,), (32,), (x, np.int32(600_000_000)))
    return x


def test_a_long_wait_shows_a_bar_when_asked(client, quick_bar, capsys):
    with dask.config.set({"dptx.progress": True}):
        x = long_launch()
        dptx.synchronize()
    out = capsys.readouterr().out
    assert "% Completed" in out and "[" in out
    assert np.isfinite(x.get()).all()


def test_auto_shows_nothing_when_output_is_not_a_terminal(client, quick_bar, capsys):
    assert dptx.config.get("progress") == "auto" and not dptx.runtime.progress.wanted()
    long_launch()
    dptx.synchronize()
    assert "Completed" not in capsys.readouterr().out


def test_off_is_off(client, quick_bar, capsys):
    with dask.config.set({"dptx.progress": False}):
        long_launch().get()
    assert "Completed" not in capsys.readouterr().out
