"""What a GPU worker loads for a chunk (DESIGN.md point 10).

The choice: **PTX text at a ``.version`` the worker's driver accepts**, which the driver
JIT-compiles for its device. Not a cubin built on the worker: that would need the CUDA release
matching each driver on every GPU worker, where the driver's own JIT is always there.

NVRTC from PyPI writes the ``.version`` of its own release (PTX ISA 9.5 for CUDA 13.5), and a
driver refuses any newer than its release (``CUDA_ERROR_UNSUPPORTED_PTX_VERSION``: a CUDA 12.4
driver loads up to 8.4, a 13.0 driver up to 9.0). Most kernels use nothing that recent, so
``ptx_for_device`` lowers the ``.version`` to the newest the driver loads. When the module does
use something newer, NVIDIA's ``ptxas`` (the ``nvidia-cuda-nvcc`` wheel, where installed)
rejects the lowered text naming the feature and the version it needs; that becomes a
``PtxUnsupportedError`` naming the PTX line and the driver the kernel needs. Without ptxas,
the driver's own load error says it.

The PTX ISA version of each CUDA release comes from ``cuda.bindings.utils`` (NVIDIA's table,
in the cuda-bindings wheel dptx depends on).
"""
from __future__ import annotations

import functools
import hashlib
import re
import subprocess
import tempfile

from cuda.bindings import utils

from ..errors import DptxError, PtxUnsupportedError
from ..ptx import ir, print_module
from ..ptx.rewrite import add_block_offset
from . import toolchain

# The oldest PTX ISA version that can target each architecture (PTX ISA manual, "Target ISA
# notes"); a driver older than that version's release cannot run the device at all.
TARGET_MIN_PTX = {
    "sm_75": (6, 3), "sm_80": (7, 0), "sm_86": (7, 1), "sm_87": (7, 4), "sm_88": (9, 0),
    "sm_89": (7, 8), "sm_90": (7, 8), "sm_90a": (8, 0), "sm_100": (8, 6), "sm_100a": (8, 6),
    "sm_101": (8, 6), "sm_103": (8, 8), "sm_110": (9, 0), "sm_120": (8, 7), "sm_120a": (8, 7),
    "sm_121": (8, 8),
}


def _parse_version(text: str) -> tuple:
    major, minor = text.split(".")
    return int(major), int(minor)


@functools.lru_cache(maxsize=None)
def _ptx_releases() -> dict:
    """PTX ISA version -> the first CUDA release (driver version number) that loads it."""
    out = {}
    for major in range(1, 12):
        for minor in range(10):
            try:
                out[(major, minor)] = int(
                    utils.get_minimal_required_cuda_ver_from_ptx_ver(f"{major}.{minor}"))
            except ValueError:
                continue
    return out


def driver_for_ptx(version: tuple) -> int:
    """The oldest driver (``cuDriverGetVersion`` number) that loads PTX of ``version``."""
    releases = _ptx_releases()
    if version not in releases:
        newest = max(releases)
        if version > newest:     # newer than cuda-bindings knows: at least its newest driver
            return releases[newest]
        raise DptxError(f"unknown PTX ISA version {version[0]}.{version[1]}")
    return releases[version]


def max_ptx_version(driver_version: int) -> tuple:
    """The newest PTX ISA version a driver loads."""
    known = [v for v, d in _ptx_releases().items() if d <= int(driver_version)]
    if not known:
        raise DptxError(f"driver version {driver_version} is older than any PTX ISA version "
                        f"dptx knows")
    return max(known)


def _driver_text(version: int) -> str:
    return f"{version // 1000}.{version % 1000 // 10}"


def _sm(arch: str) -> int:
    match = re.fullmatch(r"sm_(\d+)[a-z]?", arch)
    if match is None:
        raise DptxError(f"not a GPU architecture: {arch!r} (expected e.g. 'sm_90')")
    return int(match.group(1))


_loaded: dict = {}


def gpu_refusal(kernel):
    """Why no GPU worker can take ``kernel``'s chunks, whatever its driver and device (the
    block-offset rewrite refuses the kernel: a device function reads ``%ctaid``...), or None.
    The client plans such a kernel onto CPU workers only; what depends on a worker's driver
    is found on that worker (``ptx_for_device``), which then runs the chunk on its own CPU."""
    if _reads_grid_workspace(kernel.module):
        return (f"kernel {kernel.name} reads cooperative groups' grid workspace (%envreg1, "
                f"%envreg2): its grid.sync() needs every block of the grid at once, and GPU "
                f"chunks are sub-grids (a GPU would trap)")
    try:
        add_block_offset(kernel.module, kernel.name)
    except PtxUnsupportedError as exc:
        return str(exc)
    return None


def _reads_grid_workspace(module) -> bool:
    return any(isinstance(o, ir.Reg) and o.name in ("%envreg1", "%envreg2")
               for f in module.functions if f.body is not None
               for inst in f.instructions for o in inst.operands)


def ptx_for_device(kernel, *, driver_version: int, arch: str) -> str:
    """The PTX text a GPU worker whose driver reports ``driver_version`` (``cuDriverGetVersion``,
    e.g. 12040) and whose device is ``arch`` (e.g. ``"sm_90"``) loads to run ``kernel``'s
    chunks: the block-offset rewrite of the kernel (a chunk is a sub-grid), at a ``.version``
    the driver accepts. Raises ``PtxUnsupportedError`` when the driver or the device cannot
    take the kernel, naming what it needs."""
    key = (hashlib.sha256(kernel.ptx.encode()).hexdigest(), kernel.name, int(driver_version), arch)
    text = _loaded.get(key)
    if text is None:
        text = _loaded[key] = _lowered(kernel, int(driver_version), arch)
    return text


def _lowered(kernel, driver_version: int, arch: str) -> str:
    module = add_block_offset(kernel.module, kernel.name)
    target = next((t for t in module.target if t.startswith("sm_")), None)
    if target is not None and _sm(target) > _sm(arch):
        raise PtxUnsupportedError(
            f"kernel {kernel.name} was compiled for {target}; a {arch} device cannot run it "
            f"(compile it for compute_{arch[3:]} or older)")
    limit = max_ptx_version(driver_version)
    if target in TARGET_MIN_PTX and TARGET_MIN_PTX[target] > limit:
        need = TARGET_MIN_PTX[target]
        raise PtxUnsupportedError(
            f"kernel {kernel.name} targets {target}, which needs PTX ISA {need[0]}.{need[1]} "
            f"(a CUDA {_driver_text(driver_for_ptx(need))} driver); this worker's driver is "
            f"CUDA {_driver_text(driver_version)}")
    have = _parse_version(module.version) if module.version else limit
    if have > limit:
        module.version = f"{limit[0]}.{limit[1]}"
    text = print_module(module)
    _check(text, kernel.name, arch, driver_version)
    return text


_REQUIRES = re.compile(r"line (\d+);.*?(?:requires|needs) PTX ISA \.version (\d+)\.(\d+)", re.S)


def _check(text: str, kernel: str, arch: str, driver_version: int) -> None:
    """Assemble ``text`` with the newest ptxas at hand (ptxas checks every feature against the
    declared ``.version``); turn its refusal into an error naming the line and the driver
    needed. Nothing to do where no ptxas is installed or it does not know ``arch``."""
    found = toolchain.newest_ptxas(arch)
    if found is None:
        return
    with tempfile.TemporaryDirectory() as tmp:
        source = f"{tmp}/kernel.ptx"
        with open(source, "w") as fh:
            fh.write(text)
        done = subprocess.run([found.path, f"-arch={arch}", source, "-o", f"{tmp}/kernel.cubin"],
                              capture_output=True, text=True, timeout=600)
    if done.returncode == 0:
        return
    lines = text.splitlines()
    match = _REQUIRES.search(done.stderr)
    if match is not None:
        line, need = int(match.group(1)), (int(match.group(2)), int(match.group(3)))
        source_line = lines[line - 1].strip() if 0 < line <= len(lines) else ""
        raise PtxUnsupportedError(
            f"kernel {kernel}: PTX line {line} `{source_line}` needs PTX ISA "
            f"{need[0]}.{need[1]}, which a CUDA {_driver_text(driver_for_ptx(need))} driver "
            f"loads; this worker's driver is CUDA {_driver_text(driver_version)}")
    raise PtxUnsupportedError(
        f"kernel {kernel}: ptxas {found.version_text} rejects the PTX for {arch}:\n"
        f"{done.stderr.strip()}")
