"""A cooperative launch on the cluster (``kernel(..., enable_cooperative_groups=True)``, as
CuPy's): one chunk for the whole grid on a CPU worker (its blocks meet at grid.sync()), the
result against numpy, also on the mixed cluster (the GPU path takes no cooperative launch)."""
import numpy as np

import dptx
from tests.test_cooperative import GRID_SYNC, reference


def test_grid_sync_on_the_cluster(client, chunks8):
    k = dptx.RawModule(GRID_SYNC, options=("-rdc=true",)).get_function("rotate_sum")
    nb, bs = 16, 64
    n = nb * bs
    a, b = dptx.zeros(n, np.float32), dptx.zeros(n, np.float32)
    handle = k((nb,), (bs,), (a, b, np.int32(n), np.int32(2)), enable_cooperative_groups=True)
    assert np.array_equal(b.get(), reference(n, 2))
    chunks = [f for f in handle.futures if "dptx-chunk" in str(f.key) or "dptx-batch" in str(f.key)]
    assert len(chunks) == 1                 # the whole grid in one task (dptx.chunks = 8 ignored)
    # without the flag, grid.sync() traps, naming the way out
    try:
        k((nb,), (bs,), (a, b, np.int32(n), np.int32(1)))
        a.get()
    except dptx.DptxError as exc:
        assert "enable_cooperative_groups=True" in str(exc)
    else:
        raise AssertionError("grid.sync() in a launch that is not cooperative ran")
