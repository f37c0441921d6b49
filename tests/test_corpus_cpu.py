"""The corpus on the CPU executor against numpy, and the block-offset rewrite (what GPU chunks
run) on sub-ranges of the grid against the whole launch."""
import numpy as np
import pytest

import dptx
from dptx import cpu
from dptx.ptx import print_module
from dptx.ptx.rewrite import add_block_offset, sub_grid_arguments
from dptx.corpus import CASES, check, source


def fresh(case):
    args = case.make_args(np.random.default_rng(1234))
    expected = case.reference([a.copy() if isinstance(a, np.ndarray) else a for a in args])
    return args, expected


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case_matches_numpy(case, monkeypatch):
    # optimized at O3, as users run it (the suite builds the quick tier: tests/conftest.py)
    monkeypatch.setenv("DPTX_CPU_QUICK_TIER", "0")
    kernel = dptx.RawModule(source(case), options=case.options).get_function(case.kernel)
    args, expected = fresh(case)
    cpu.launch(kernel, case.grid, case.block, args, shared_mem=case.shared_mem)
    for index, want in expected.items():
        check(args[index], want, case.rtol, case.atol, f"{case.name} argument {index}")


def _normally_vectorized(case) -> bool:
    kernel = dptx.RawModule(source(case), options=case.options).get_function(case.kernel)
    return cpu.compile_kernel(kernel).vector


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case_matches_numpy_in_the_other_executor(case, monkeypatch):
    """Kernels with barriers, warp operations or loops normally run warp-vectorized: here
    per thread (DPTX_CPU_VECTOR=0). The others normally run as a plain loop over threads:
    here warp-vectorized (DPTX_CPU_VECTOR=all), which exercises its translations."""
    monkeypatch.setenv("DPTX_CPU_VECTOR", "0" if _normally_vectorized(case) else "all")
    kernel = dptx.RawModule(source(case), options=case.options).get_function(case.kernel)
    args, expected = fresh(case)
    cpu.launch(kernel, case.grid, case.block, args, shared_mem=case.shared_mem)
    for index, want in expected.items():
        check(args[index], want, case.rtol, case.atol, f"{case.name} argument {index}")


SUB_GRID_CASES = [c for c in CASES if c.deterministic]


@pytest.mark.parametrize("case", SUB_GRID_CASES, ids=[c.name for c in SUB_GRID_CASES])
def test_block_offset_rewrite_on_sub_ranges(case):
    raw = dptx.RawModule(source(case), options=case.options)
    kernel = raw.get_function(case.kernel)
    rewritten = dptx.RawModule(ptx=print_module(add_block_offset(raw.module, case.kernel)))
    sub = rewritten.get_function(case.kernel)
    assert len(sub.params) == len(kernel.params) + 4
    # one native call per launch: blocks run in order, so that racing atomics (exch) leave
    # the same values in the whole run and in the sub-range runs
    whole, _ = fresh(case)
    cpu.launch(kernel, case.grid, case.block, whole, shared_mem=case.shared_mem, threads=1)
    parts, _ = fresh(case)
    grid = tuple(case.grid) + (1,) * (3 - len(case.grid))
    n = int(np.prod(grid))
    cuts = sorted({0, n // 3, (2 * n) // 3, n})
    for a, b in zip(cuts, cuts[1:]):
        sub_grid, extra = sub_grid_arguments(grid, a, b)
        cpu.launch(sub, sub_grid, case.block, parts + [np.uint32(v) for v in extra],
                   shared_mem=case.shared_mem, threads=1)
    for i, (p, w) in enumerate(zip(parts, whole)):
        if isinstance(p, np.ndarray):
            check(p, w, 0, 0, f"{case.name} argument {i}")
