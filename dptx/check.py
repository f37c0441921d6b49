"""Differential check: run a kernel corpus on the CPU executor and, where CuPy sees a GPU, on
the GPU, and compare the outputs.

    python -m dptx.check [--corpus dptx/corpus] [--only NAME ...] [--sub-grids]

The default corpus is the one dptx ships (``dptx.corpus``: CUDA samples, Rodinia-style
kernels, atomics, warp operations, fp16...), so the check runs from any folder on an
installed package. A corpus is a Python package (a directory with ``__init__.py``) exposing ``CASES`` (objects
with ``name, kernel, grid, block, make_args(rng), reference(args) -> {index: array}, rtol,
atol, shared_mem, options, deterministic``) and ``source(case)``. Each case is compared
against its numpy reference on the CPU, and CPU against GPU: bitwise where the kernel is
deterministic and uses no approximate instruction, else within the case's tolerances (the
PTX ISA documents the error bounds of ``.approx`` instructions; the corpus sets its
tolerances from them). ``--sub-grids`` also runs every kernel through the block-offset
rewrite in three sub-ranges on the CPU, which must match the whole launch bitwise.
"""
from __future__ import annotations

import argparse
import importlib.util
import pathlib
import sys
import time

import numpy as np

from . import cpu, gpu
from .runtime.module import RawModule
from .ptx import print_module
from .ptx.rewrite import add_block_offset, sub_grid_arguments


def load_corpus(path: str):
    path = pathlib.Path(path).resolve()
    init = path / "__init__.py"
    if not init.exists():
        raise SystemExit(f"{path} is not a corpus package (no __init__.py)")
    spec = importlib.util.spec_from_file_location(f"_dptx_corpus_{path.name}", init,
                                                  submodule_search_locations=[str(path)])
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _copy_args(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def compare(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> str:
    """'' when equal within tolerance, else a description of the worst difference."""
    if got.shape != want.shape:
        return f"shape {got.shape} != {want.shape}"
    if rtol == 0 and atol == 0:
        if got.dtype.kind == "f":
            same = (got == want) | (np.isnan(got) & np.isnan(want))
        else:
            same = got == want
        if same.all():
            return ""
        i = int(np.flatnonzero(~same.reshape(-1))[0])
        return f"{int((~same).sum())} elements differ; first at {i}: {got.reshape(-1)[i]!r} vs {want.reshape(-1)[i]!r}"
    g, w = got.astype(np.float64), want.astype(np.float64)
    bad = ~np.isclose(g, w, rtol=rtol, atol=atol, equal_nan=True)
    if not bad.any():
        return ""
    i = int(np.flatnonzero(bad.reshape(-1))[0])
    return (f"{int(bad.sum())} elements outside rtol={rtol} atol={atol}; first at {i}: "
            f"{g.reshape(-1)[i]!r} vs {w.reshape(-1)[i]!r}")


def run_case(case, corpus, use_gpu: bool, sub_grids: bool) -> list:
    """Problems found for one case (empty: all good)."""
    problems = []
    kernel = RawModule(corpus.source(case), options=tuple(case.options)).get_function(case.kernel)
    args = case.make_args(np.random.default_rng(1234))
    expected = case.reference(_copy_args(args))
    on_cpu = _copy_args(args)
    cpu.launch(kernel, case.grid, case.block, on_cpu, shared_mem=case.shared_mem)
    for index, want in expected.items():
        msg = compare(on_cpu[index], want, case.rtol, case.atol)
        if msg:
            problems.append(f"cpu vs numpy, argument {index}: {msg}")
    if use_gpu:
        on_gpu = _copy_args(args)
        gpu.launch(kernel, case.grid, case.block, on_gpu, shared_mem=case.shared_mem)
        exact = case.deterministic and case.rtol == 0 and case.atol == 0
        for index in expected:
            msg = compare(on_gpu[index], on_cpu[index], 0 if exact else case.rtol,
                          0 if exact else case.atol)
            if msg:
                problems.append(f"gpu vs cpu, argument {index}: {msg}")
    if sub_grids and case.deterministic:
        problems += _check_sub_grids(kernel, case, args, on_cpu)
    return problems


def _check_sub_grids(kernel, case, args, whole) -> list:
    """The rewritten kernel on three sub-ranges must reproduce the whole launch."""
    grid = tuple(case.grid) + (1,) * (3 - len(case.grid))
    nblocks = grid[0] * grid[1] * grid[2]
    rewritten = RawModule(ptx=print_module(add_block_offset(kernel.module, kernel.name)))
    sub_kernel = rewritten.get_function(kernel.name)
    parts = _copy_args(args)
    cuts = sorted({0, nblocks // 3, 2 * nblocks // 3, nblocks})
    for a, b in zip(cuts, cuts[1:]):
        sub_grid, extra = sub_grid_arguments(grid, a, b)
        cpu.launch(sub_kernel, sub_grid, case.block,
                   parts + [np.uint32(v) for v in extra], shared_mem=case.shared_mem)
    problems = []
    for i, (p, w) in enumerate(zip(parts, whole)):
        if isinstance(p, np.ndarray):
            msg = compare(p, w, 0, 0)
            if msg:
                problems.append(f"sub-grid rewrite vs whole launch, argument {i}: {msg}")
    return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dptx.check", description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", default=str(pathlib.Path(__file__).parent / "corpus"),
                        help="corpus package directory (default: the corpus dptx ships)")
    parser.add_argument("--only", nargs="*", help="case names to run")
    parser.add_argument("--sub-grids", action="store_true",
                        help="also check the block-offset rewrite on sub-ranges (CPU)")
    parser.add_argument("--no-gpu", action="store_true", help="skip the GPU even if present")
    opts = parser.parse_args(argv)
    corpus = load_corpus(opts.corpus)
    unknown = sorted(set(opts.only or ()) - {case.name for case in corpus.CASES})
    if unknown:
        parser.error(f"no case named {', '.join(unknown)} in {opts.corpus}; the cases are: "
                     f"{', '.join(case.name for case in corpus.CASES)}")
    use_gpu = not opts.no_gpu and gpu.available()
    print(f"dptx.check: {len(corpus.CASES)} cases; GPU: {'yes' if use_gpu else 'no (CPU vs numpy only)'}")
    failures = 0
    for case in corpus.CASES:
        if opts.only and case.name not in opts.only:
            continue
        t0 = time.perf_counter()
        try:
            problems = run_case(case, corpus, use_gpu, opts.sub_grids)
        except Exception as exc:  # report and go on with the corpus
            problems = [f"{type(exc).__name__}: {exc}"]
        status = "ok" if not problems else "FAIL"
        print(f"{status:>4}  {case.name:<32} {time.perf_counter() - t0:6.2f} s")
        for p in problems:
            print(f"        {p}")
        failures += bool(problems)
    print(f"{failures} of the cases failed" if failures else "all cases agree")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
