"""Kernel launches from the API layer.

Until the distributed runtime lands, a launch runs in-process on the CPU executor; arrays are
numpy arrays updated in place (as ``dptx.cpu.launch``)."""
from __future__ import annotations


def launch(kernel, grid, block, args, shared_mem: int = 0):
    from . import cpu
    return cpu.launch(kernel, grid, block, args, shared_mem=shared_mem)
