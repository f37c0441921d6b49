"""Every corpus module, as NVRTC compiles it, as dptx prints it back, and as the block-offset
rewrite makes it for each of its kernels (what GPU chunks load), assembles with NVIDIA's
``ptxas`` for sm_75, sm_80 and sm_90, and for sm_70 with CUDA 12's ptxas (CUDA 13's NVRTC and
ptxas dropped sm_70: the sm_70 modules are NVRTC's compute_75 PTX retargeted to sm_70 at
``.version`` 8.4, what a CUDA 12.4 driver on a Volta loads). dptx's own parser accepts more than ptxas does (it reads
``[%rd1-8]`` as well as ``[%rd1+-8]``), so round trips through it alone cannot show that the
printed PTX is valid.

``ptxas`` comes from the ``nvidia-cuda-nvcc`` and ``nvidia-cuda-nvcc-cu12`` wheels (the ``test``
extra); no GPU is needed.
"""
import os
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest

from dptx.errors import CompileError
from dptx.gpu import toolchain
from dptx.runtime.nvrtc import compile_to_ptx
from dptx.ptx import parse, print_module
from dptx.ptx.rewrite import add_block_offset
from dptx.corpus import CASES, source

ARCHS = ("sm_75", "sm_80", "sm_90")


def ptxas() -> str:
    found = toolchain.newest_ptxas()
    return found.path if found else ""


def assemble(ptx: str, arch: str, tmp_path, what: str, tool: str = None, name="module") -> None:
    path = tmp_path / f"{name}.ptx"
    path.write_text(ptx)
    done = subprocess.run([tool or ptxas(), f"-arch={arch}", str(path),
                           "-o", str(tmp_path / f"{name}.cubin")],
                          capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        lines = ptx.splitlines()
        context = ""
        for word in done.stderr.split():
            if word.rstrip(";").isdigit() and ", line" in done.stderr:
                n = int(word.rstrip(";"))
                if 0 < n <= len(lines):
                    context = f"\n  line {n}: {lines[n - 1].strip()}"
                break
        pytest.fail(f"ptxas -arch={arch} rejects {what}:\n{done.stderr.strip()}{context}")


def assemble_all(jobs: list, arch: str, tmp_path, tool: str = None) -> None:
    """``assemble`` each (PTX, what) of ``jobs``, ptxas processes side by side (one per core:
    each is a single-threaded process that the test would otherwise wait for in turn)."""
    with ThreadPoolExecutor(max(1, len(os.sched_getaffinity(0)))) as pool:
        for done in [pool.submit(assemble, ptx, arch, tmp_path, what, tool, f"m{i}")
                     for i, (ptx, what) in enumerate(jobs)]:
            done.result()


MODULES = sorted({(c.file, tuple(c.options)) for c in CASES})


@pytest.mark.skipif(not ptxas(), reason="needs ptxas from the nvidia-cuda-nvcc wheel (the test extra)")
@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("file, options", MODULES, ids=[f"{f}{'-' + '-'.join(o) if o else ''}"
                                                        for f, o in MODULES])
def test_corpus_module_assembles(file, options, arch, tmp_path):
    try:
        ptx = compile_to_ptx(source(file), options, "compute_" + arch[3:])
    except CompileError as exc:
        if arch >= "sm_80":
            raise
        pytest.skip(f"{file} uses what {arch} lacks (the corpus targets sm_80): "
                    f"{str(exc).splitlines()[1].strip() if len(str(exc).splitlines()) > 1 else exc}")
    module = parse(ptx)
    kernels = sorted({c.kernel for c in CASES if c.file == file and tuple(c.options) == options})
    assemble_all([(ptx, f"{file} as NVRTC compiled it"),
                  (print_module(module), f"{file} printed back by dptx")] +
                 [(print_module(add_block_offset(module, name)),
                   f"{file}: kernel {name} after the block-offset rewrite") for name in kernels],
                 arch, tmp_path)


def volta_ptxas() -> str:
    found = toolchain.newest_ptxas("sm_70")
    return found.path if found else ""


@pytest.mark.skipif(not volta_ptxas(), reason="needs a ptxas that targets sm_70 (CUDA 12: the "
                    "nvidia-cuda-nvcc-cu12 wheel, in the test extra)")
@pytest.mark.parametrize("file, options", MODULES, ids=[f"{f}{'-' + '-'.join(o) if o else ''}"
                                                        for f, o in MODULES])
def test_corpus_module_assembles_for_sm_70(file, options, tmp_path):
    try:
        module = parse(compile_to_ptx(source(file), options, "compute_75"))
    except CompileError as exc:
        pytest.skip(f"{file} uses what sm_75 lacks (the corpus targets sm_80): "
                    f"{str(exc).splitlines()[1].strip() if len(str(exc).splitlines()) > 1 else exc}")
    assert module.target[0] == "sm_75"
    module.target = ("sm_70",) + tuple(module.target[1:])
    module.version = "8.4"
    kernels = sorted({c.kernel for c in CASES if c.file == file and tuple(c.options) == options})
    assemble_all([(print_module(module), f"{file} printed for sm_70")] +
                 [(print_module(add_block_offset(module, name)),
                   f"{file}: kernel {name} after the block-offset rewrite, for sm_70")
                  for name in kernels], "sm_70", tmp_path, volta_ptxas())
