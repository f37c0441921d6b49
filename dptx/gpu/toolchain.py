"""NVIDIA's ``ptxas`` from the PyPI wheels: ``nvidia-cuda-nvcc`` (CUDA 13:
``nvidia/cu13/bin``) and ``nvidia-cuda-nvcc-cu12`` (CUDA 12: ``nvidia/cuda_nvcc/bin``) can be
installed side by side. dptx uses it to check PTX before GPU workers load it; it needs no GPU."""
from __future__ import annotations

import functools
import pathlib
import re
import subprocess
from dataclasses import dataclass


@dataclass(frozen=True)
class Ptxas:
    path: str
    version: tuple          # (major, minor) of its CUDA release
    archs: frozenset        # the SM numbers it lists ("90"), or None when it cannot list them

    @property
    def version_text(self) -> str:
        return f"{self.version[0]}.{self.version[1]}"


def _candidates() -> list:
    try:
        # lazy: optional (NVIDIA's wheels, where installed)
        import nvidia
    except ImportError:
        return []
    found = []
    for root in getattr(nvidia, "__path__", []):
        found.extend(sorted(pathlib.Path(root).glob("*/bin/ptxas")))
    return found


def _describe(path: pathlib.Path):
    try:
        version = subprocess.run([str(path), "--version"], capture_output=True, text=True,
                                 timeout=60).stdout
        listed = subprocess.run([str(path), "--list-arch"], capture_output=True, text=True,
                                timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r"release (\d+)\.(\d+)", version)
    if match is None:
        return None
    archs = frozenset(re.findall(r"\d+", listed.stdout)) if listed.returncode == 0 else None
    return Ptxas(str(path), (int(match.group(1)), int(match.group(2))), archs)


@functools.lru_cache(maxsize=None)
def installed() -> tuple:
    """Every ptxas found, oldest release first."""
    found = [p for p in (_describe(path) for path in _candidates()) if p is not None]
    return tuple(sorted(found, key=lambda p: p.version))


def newest_ptxas(arch: str = None):
    """The newest installed ptxas (that can assemble for ``arch``, e.g. "sm_90a"), or None."""
    number = re.sub(r"\D", "", arch or "")
    usable = [p for p in installed()
              if arch is None or p.archs is None or number in p.archs]
    return usable[-1] if usable else None


def ptxas_for_release(major: int, minor: int):
    """The ptxas of exactly CUDA ``major.minor``, or None."""
    return next((p for p in installed() if p.version == (major, minor)), None)
