"""Cold translation and JIT time of the CPU executor on every kernel of the corpus
(dptx/corpus): PTX -> LLVM IR (dptx.cpu.codegen, both executor forms where a kernel has
two) and LLVM -> machine code (llvmlite), per kernel and in total, beside NVIDIA's ptxas on
the same PTX where the wheel is installed. NVRTC's compile to PTX is not counted.

    python benchmarks/jit_time.py [--runs N]

Each run compiles every kernel afresh (the in-process caches are cleared); the totals of
each run are printed, then the slowest kernels of the best run."""
from __future__ import annotations

import argparse
import os
import tempfile
import time

from dptx.corpus import CASES, source
from dptx.cpu import executor
from dptx.module import RawModule
from dptx.nvrtc import compile_to_ptx


def compile_all(kernels) -> dict:
    """Seconds per kernel, compiled cold: the in-memory cache cleared, and the object-code
    cache on disk in a fresh, empty folder."""
    executor._compiled.clear()
    os.environ["DPTX_CACHE_DIR"] = tempfile.mkdtemp(prefix="dptx-jit-time-")
    seconds = {}
    for name, kernel in kernels:
        t0 = time.perf_counter()
        executor.compile_kernel(kernel)
        seconds[name] = time.perf_counter() - t0
    return seconds


def ptxas_seconds(ptx_by_file: dict):
    from dptx.gpu.toolchain import newest_ptxas
    found = newest_ptxas("sm_80")
    if found is None:
        return None
    tool = found.path
    import subprocess
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as d:
        for i, ptx in enumerate(ptx_by_file.values()):
            path = f"{d}/k{i}.ptx"
            open(path, "w").write(ptx)
            subprocess.run([tool, "-arch=sm_80", path, "-o", f"{d}/k{i}.cubin"],
                           check=False, capture_output=True, timeout=300)
    return time.perf_counter() - t0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    ptx_by_file, kernels = {}, []
    for case in CASES:
        key = (case.file, tuple(case.options))
        if key not in ptx_by_file:
            ptx_by_file[key] = compile_to_ptx(source(case), case.options, arch="compute_80")
        kernels.append((case.name, RawModule(ptx=ptx_by_file[key]).get_function(case.kernel)))
    runs = [compile_all(kernels) for _ in range(args.runs)]
    totals = [sum(r.values()) for r in runs]
    print(f"{len(kernels)} corpus kernels, {len(ptx_by_file)} modules")
    print("dptx translate + JIT, total per run (s): " + ", ".join(f"{t:.2f}" for t in totals))
    best = runs[totals.index(min(totals))]
    slowest = sorted(best.items(), key=lambda kv: -kv[1])[:5]
    print("slowest (best run): " + ", ".join(f"{n} {s:.2f}s" for n, s in slowest))
    ptxas = ptxas_seconds(ptx_by_file)
    if ptxas is not None:
        print(f"ptxas -arch=sm_80 on the same {len(ptx_by_file)} modules (all kernels): "
              f"{ptxas:.2f} s  (dptx/ptxas: {min(totals) / ptxas:.1f}x)")


if __name__ == "__main__":
    main()
