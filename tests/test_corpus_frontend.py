"""Every kernel of the corpus compiles through NVRTC, parses, round-trips through the printer,
and yields a CFG whose blocks tile the body."""
import pytest

import dptx
from dptx.runtime.nvrtc import compile_to_ptx
from dptx.ptx import parse, print_module
from dptx.ptx.cfg import build_cfg
from dptx.corpus import CASES, source

FILES = sorted({c.file for c in CASES})


def test_corpus_size_and_names():
    assert len(CASES) >= 40
    assert len({c.name for c in CASES}) == len(CASES)


@pytest.mark.parametrize("file", FILES)
def test_file_parses_and_round_trips(file):
    options = next(c.options for c in CASES if c.file == file)
    ptx = compile_to_ptx(source(file), options)
    module = parse(ptx)
    printed = print_module(module)
    assert parse(printed) == module
    assert print_module(parse(printed)) == printed
    for f in module.functions:
        if f.body is not None:
            cfg = build_cfg(f)
            assert sum(len(b) for b in cfg.blocks) == len(f.instructions)
    kernels = {c.kernel for c in CASES if c.file == file}
    assert kernels <= {k.name for k in module.kernels}


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_kernel_facts(case):
    kernel = dptx.RawModule(source(case), options=case.options).get_function(case.kernel)
    facts = kernel.facts
    if "barrier" in case.features:
        assert facts.uses_barriers
    if "warp" in case.features:
        assert facts.uses_warp_ops
    if "atomic" in case.features:
        assert facts.uses_atomics
    if "printf" in case.features:
        assert facts.uses_printf
    if "local" in case.features:
        assert facts.uses_local_memory
