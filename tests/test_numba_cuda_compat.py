"""numba-cuda programs on dptx as their users write them (``from dptx import numba_cuda as
cuda`` in place of ``from numba import cuda``), run as a script from a scratch folder on the
embedded cluster, results against numpy. Skipped without numba-cuda."""
import pytest

from tests.test_scripts import assert_clean, frameworks_page_program, run_script

pytest.importorskip("numba_cuda")

PROGRAM = r'''
import numpy as np
from dptx import numba_cuda as cuda          # was: from numba import cuda
from numba import float32

@cuda.jit
def increment_by_one(an_array, n):
    pos = cuda.grid(1)
    if pos < n:
        an_array[pos] += 1

@cuda.jit
def block_sums(x, out):
    tile = cuda.shared.array(128, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    tile[t] = x[i] if i < x.shape[0] else 0
    cuda.syncthreads()
    s = 64
    while s > 0:
        if t < s:
            tile[t] += tile[t + s]
        cuda.syncthreads()
        s //= 2
    if t == 0:
        cuda.atomic.add(out, 0, tile[0])

@cuda.jit
def transpose(a, b):
    r, c = cuda.grid(2)
    if r < a.shape[0] and c < a.shape[1]:
        b[c, r] = a[r, c]

a = np.arange(1000, dtype=np.float32)
d_a = cuda.to_device(a)
increment_by_one[8, 128](d_a, a.size)
print(np.array_equal(d_a.copy_to_host(), a + 1))
host = np.zeros(5, np.int64)
increment_by_one[1, 32](host, 5)              # a host array: there and back, as numba does
print(host.tolist())
total = cuda.to_device(np.zeros(1, np.float32))
block_sums[8, 128](cuda.to_device(a), total)
cuda.synchronize()
print(total.copy_to_host()[0] == a.sum())
m = np.arange(35 * 20, dtype=np.int32).reshape(35, 20)
t = cuda.device_array((20, 35), np.int32)
transpose[(3, 2), (16, 16)](cuda.to_device(m), t)
out = np.empty((20, 35), np.int32)
t.copy_to_host(out)
print(np.array_equal(out, m.T), cuda.is_available())
'''


@pytest.mark.timeout(600)
def test_a_numba_cuda_program_runs_with_one_import_changed(tmp_path):
    done = run_script(tmp_path, PROGRAM)
    assert_clean(done)
    assert done.stdout.split("\n")[:4] == ["True", "[1, 1, 1, 1, 1]", "True", "True True"]


@pytest.mark.timeout(600)
def test_the_frameworks_pages_numba_program_runs_as_written(tmp_path):
    done = run_script(tmp_path, frameworks_page_program("from dptx import numba_cuda as cuda"))
    assert_clean(done)
    assert done.stdout.split() == ["499500.0", "499500.0"]
