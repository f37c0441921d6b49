"""Warp's kernels on dptx (docs/frameworks.md's recipe): compiled to PTX by Warp's own compiler
for sm_80 without a GPU, launched with Warp's launch bounds and arrays as structs by value that
hold dptx arrays' ``a.data.ptr``; results against numpy. Skipped without warp-lang."""
import pytest

from tests.test_scripts import frameworks_page_program, run_script

pytest.importorskip("warp")

TWO_D = r'''
import dask.config

@wp.kernel
def scale_rows(m: wp.array2d(dtype=float), s: wp.array(dtype=float)):
    i, j = wp.tid()
    m[i, j] = m[i, j] * s[i]

@wp.kernel
def count(keys: wp.array(dtype=int), counts: wp.array(dtype=int)):
    wp.atomic_add(counts, keys[wp.tid()], 1)

ptx, = wp.compile_aot_module(scale_rows.module, arch=80, module_dir="warp_ptx_more", use_ptx=True,
                             strip_hash=True)
kernels = dptx.RawModule(path=str(ptx))
m, s = dptx.ones((300, 200), dtype=np.float32), dptx.arange(300, dtype=np.float32)
kernels.get_function("scale_rows_cuda_kernel_forward")(((300 * 200 + 255) // 256,), (256,),
                                                       (bounds(300, 200), array(m), array(s)))
print(np.array_equal(m.get(), np.repeat(np.arange(300, dtype=np.float32)[:, None], 200, 1)))
keys = np.random.default_rng(0).integers(0, 40, 5000).astype(np.int32)
counts = dptx.zeros(40, np.int32)
with dask.config.set({"dptx.chunks": 4}):     # atomics from 4 chunks, merged
    kernels.get_function("count_cuda_kernel_forward")(((5000 + 127) // 128,), (128,),
                                                      (bounds(5000), array(dptx.asarray(keys)),
                                                       array(counts)))
print(np.array_equal(counts.get(), np.bincount(keys, minlength=40)))
'''


@pytest.mark.timeout(600)
def test_the_frameworks_pages_warp_program_runs_as_written_and_more(tmp_path):
    program = frameworks_page_program("import warp as wp")
    done = run_script(tmp_path, program + TWO_D)
    assert done.returncode == 0, done.stderr
    words = done.stdout.split()                 # (after Warp's banner)
    assert words[words.index("[1."):] == ["[1.", "3.", "5.", "7.]", "True", "True"]
