"""A worker's chunk on the CPU (the entry every executor offers, ``dptx.device.executors``): a
range of blocks of a launch through ``launch``, on one thread, stoppable at the worker's request
(its watchdog) and within the chunk's time limit."""
from __future__ import annotations

import time

import numpy as np

from .executor import compile_kernel, launch
from .watchdog import stoppable_task


def run_blocks(kernel, grid, block, args, *, shared_mem, blocks, globals, cooperative=False,
               timeout=None, task_key=None, lane=None, writes=None, unwritten=None) -> tuple:
    """(seconds the kernel ran, whether they say how fast this worker runs it): not when the
    launch tried both of the executor's forms (``executor.launch_class``: half the blocks in
    the slower one). A cooperative launch runs its whole grid (``blocks`` ignored). ``lane``
    and ``writes`` are the GPU's (a device, the bytes to copy back)."""
    compiled = compile_kernel(kernel)
    decided = len(compiled.chosen)
    stop_request = np.zeros(1, np.int32)
    t0 = time.perf_counter()
    with stoppable_task(task_key, stop_request):
        launch(kernel, grid, block, args, shared_mem=shared_mem,
               blocks=None if cooperative else blocks, globals=globals, threads=1,
               cooperative=cooperative, timeout=timeout, stop_request=stop_request,
               unwritten=unwritten)
    seconds = time.perf_counter() - t0
    return seconds, len(compiled.chosen) == decided
