"""The kernel corpus (dptx/corpus) compiles through NVRTC, its PTX parses and round-trips
through the printer, and the case list is well formed."""
import re

import numpy as np
import pytest

from dptx.runtime.nvrtc import compile_to_ptx
from dptx.corpus import CASES, copy_args, source

ARCH = "compute_80"
IDS = [c.name for c in CASES]


def ptx_of(case):
    return compile_to_ptx(source(case), case.options, arch=ARCH, name=case.file)


def test_corpus_size_and_unique_names():
    assert len(CASES) >= 40
    assert len(set(IDS)) == len(IDS)


def test_corpus_covers_the_features():
    features = {f for c in CASES for f in c.features}
    for f in ("barrier", "warp", "atomic", "shared", "dynamic_shared", "local", "printf", "fp16",
              "call", "recursion", "global_var", "struct", "math", "fp64", "int64", "3d", "2d"):
        assert f in features, f


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_case_compiles(case):
    ptx = ptx_of(case)
    assert re.search(rf"\.entry\s+{re.escape(case.kernel)}\s*\(", ptx), f"no .entry {case.kernel}"


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_case_is_well_formed(case):
    """make_args gives numpy values only, and the reference names array arguments of the
    same shape and dtype (it never runs the kernel)."""
    assert 1 <= len(case.grid) <= 3 and 1 <= len(case.block) <= 3
    assert int(np.prod(case.block)) <= 1024
    args = case.make_args(np.random.default_rng(0))
    for a in args:
        assert isinstance(a, (np.ndarray, np.generic)), type(a)
    expected = case.reference(copy_args(args))
    assert expected
    for k, want in expected.items():
        assert isinstance(args[k], np.ndarray)
        want = np.asarray(want)
        assert want.shape == args[k].shape and want.dtype == args[k].dtype, k
    # the number of arguments matches the kernel's parameter list in the PTX
    ptx = ptx_of(case)
    body = ptx[ptx.index(f".entry {case.kernel}("):]
    params = body[:body.index(")")]
    assert params.count(".param") == len(args)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_case_ptx_parses_and_round_trips(case):
    parse_mod = pytest.importorskip("dptx.ptx")
    parse, print_module = parse_mod.parse, parse_mod.print_module
    m = parse(ptx_of(case))
    assert case.kernel in [k.name for k in m.kernels]
    assert parse(print_module(m)) == m
