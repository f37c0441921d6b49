"""A worker's chunk on a GPU (the entry every executor offers, ``dptx.device.executors``): a
range of blocks of a launch as a sub-grid on the device the chunk holds (``runner.lane``)."""
from __future__ import annotations

import time

from .runner import launch


def run_blocks(kernel, grid, block, args, *, shared_mem, blocks, globals, cooperative=False,
               timeout=None, task_key=None, lane=None, writes=None) -> tuple:
    """(seconds the kernel ran, True: they say how fast this device runs it). ``writes``: the
    bytes of each buffer to copy back. Raises ``GpuModuleError`` (an ExecutorRefusedError) where
    the device cannot take the kernel (a driver too old for what it uses...): the chunk then
    runs on the CPU.
    ``cooperative``, ``timeout`` and ``task_key`` are the CPU's (a cooperative launch never
    comes to a GPU worker's chunk; a GPU kernel cannot be stopped midway)."""
    t0 = time.perf_counter()
    launch(kernel, grid, block, args, shared_mem=shared_mem, blocks=blocks, globals=globals,
           device=lane, writes=writes)
    return time.perf_counter() - t0, True
