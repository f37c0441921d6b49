"""Cold first-launch compile time of the CPU executor, per kernel, the largest first, beside
NVIDIA's ptxas on the same PTX (``ptxas -arch=sm_80 -e KERNEL``, where the test extra's
wheel is installed): every kernel of the corpus (dptx/corpus), of the examples, and, given a
checkout of Rodinia's GPU programs (``--rodinia DIR``, github.com/yuhc/gpu-rodinia), of its
LU decomposition (``cuda/lud``: three kernels whose unrolled loops make large kernels).

    python benchmarks/jit_time.py [--rodinia DIR] [--runs N] [--top N]

"Cold" is what a first launch pays on a new machine: an empty disk cache (a fresh folder)
and an empty in-process cache, under the default policy (``executor.tier_policy``: a large
kernel's first launch runs a quick stand-in while its optimized form builds in the
background). NVRTC's compile to PTX is not counted (it has its own cache). Then the same
kernels again from the disk cache, as the next process finds them, and the time until the
optimized forms the background built are all in."""
from __future__ import annotations

import argparse
import importlib.util
import os
import pathlib
import subprocess
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent

from dptx.corpus import CASES, source
from dptx.cpu import executor
from dptx.runtime.module import RawModule
from dptx.runtime.nvrtc import compile_to_ptx


def corpus_kernels():
    modules = {}
    for case in CASES:
        key = (case.file, tuple(case.options))
        if key not in modules:
            modules[key] = RawModule(ptx=compile_to_ptx(source(case), case.options,
                                                        arch="compute_80"))
        yield f"corpus/{case.name}", modules[key], case.kernel


def example_kernels():
    """The CUDA C of each example: its module's strings that define kernels (importing an
    example runs nothing: each runs from ``main``)."""
    for path in sorted((HERE.parent / "examples").glob("*.py")):
        spec = importlib.util.spec_from_file_location(f"example_{path.stem}", path)
        example = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(example)
        for var, code in sorted(vars(example).items()):
            if var.isupper() and isinstance(code, str) and "__global__" in code:
                module = RawModule(code)
                for name in module.kernel_names:
                    yield f"examples/{path.stem}.{name}", module, name


def rodinia_kernels(root: pathlib.Path):
    """Rodinia's LU decomposition kernels as its .cu file has them (the host code cut off,
    the kernels given C names)."""
    text = (root / "cuda/lud/cuda/lud_kernel.cu").read_text()
    text = text[:text.index("void lud_cuda")].replace("#include <cuda.h>", "")
    text = text.replace("#include <stdio.h>", "").replace("__global__ void", 'extern "C" __global__ void')
    module = RawModule(text)
    for name in module.kernel_names:
        yield f"rodinia/lud.{name}", module, name


def first_compiles(kernels) -> dict:
    """Seconds of each kernel's first compile (the wait of its first launch), with an empty
    in-process cache; the disk cache is whatever DPTX_CACHE_DIR holds."""
    executor._compiled.clear()
    seconds = {}
    for label, module, name in kernels:
        t0 = time.perf_counter()
        ck = executor.compile_kernel(module.get_function(name))
        seconds[label] = (time.perf_counter() - t0, ck.tier)
    return seconds


def wait_for_background() -> float:
    t0 = time.perf_counter()
    for ck in list(executor._compiled.values()):
        for form in (ck, ck.alternative):
            if form is not None:
                form.upgrade(wait=True)
    return time.perf_counter() - t0


def ptxas_seconds(kernels) -> dict:
    from dptx.gpu.toolchain import newest_ptxas
    found = newest_ptxas("sm_80")
    if found is None:
        return {}
    out = {}
    with tempfile.TemporaryDirectory() as d:
        files = {}
        for label, module, name in kernels:
            path = files.setdefault(id(module), f"{d}/m{len(files)}.ptx")
            if not os.path.exists(path):
                pathlib.Path(path).write_text(module.ptx)
            t0 = time.perf_counter()
            subprocess.run([found.path, "-arch=sm_80", "-e", name, path, "-o", f"{d}/k.cubin"],
                           check=False, capture_output=True, timeout=300)
            out[label] = time.perf_counter() - t0
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rodinia", type=pathlib.Path, help="a checkout of gpu-rodinia")
    parser.add_argument("--runs", type=int, default=1, help="cold runs (each a fresh cache)")
    parser.add_argument("--top", type=int, default=0, help="print only the N slowest")
    args = parser.parse_args()
    kernels = list(corpus_kernels()) + list(example_kernels())
    if args.rodinia:
        kernels += list(rodinia_kernels(args.rodinia))
    ptxas = ptxas_seconds(kernels)
    cold_runs, warm, background = [], None, []
    for _ in range(args.runs):
        os.environ["DPTX_CACHE_DIR"] = tempfile.mkdtemp(prefix="dptx-jit-time-")
        cold_runs.append(first_compiles(kernels))
        background.append(wait_for_background())
        warm = first_compiles(kernels)       # the next process: from the disk cache
    import platform
    print(f"{len(kernels)} kernels, {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} threads; DPTX_CPU_QUICK_TIER="
          f"{os.environ.get('DPTX_CPU_QUICK_TIER', '(default)')}")
    order = sorted(kernels, key=lambda k: -max(r[k[0]][0] for r in cold_runs))
    if args.top:
        order = order[:args.top]
    print(f"{'kernel':48} {'cold first compile (s)':>24} {'tier':>9} {'warm (s)':>9} "
          f"{'ptxas (s)':>9}")
    for label, _, _ in order:
        cold = ", ".join(f"{r[label][0]:.2f}" for r in cold_runs)
        px = f"{ptxas[label]:.2f}" if label in ptxas else "-"
        print(f"{label:48} {cold:>24} {cold_runs[0][label][1]:>9} {warm[label][0]:>9.3f} "
              f"{px:>9}")
    totals = [sum(s for s, _ in r.values()) for r in cold_runs]
    worst = [max(s for s, _ in r.values()) for r in cold_runs]
    print("cold total per run (s): " + ", ".join(f"{t:.1f}" for t in totals) +
          "; slowest first compile: " + ", ".join(f"{w:.2f}" for w in worst) +
          f"; warm total {sum(s for s, _ in warm.values()):.2f}"
          + (f"; ptxas total {sum(ptxas.values()):.1f}" if ptxas else ""))
    print("optimized forms all built in the background after a further (s): "
          + ", ".join(f"{b:.1f}" for b in background))


if __name__ == "__main__":
    main()
