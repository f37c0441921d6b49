"""The stand-in's one (fake) process: its CUDA state lives until ``testing.restart_process()``,
which stands for the fresh OS process that CUDA requires after a sticky error."""
from __future__ import annotations

import threading

from ._machine import Process

_lock = threading.Lock()
_process = None
_generation = 0


def process() -> Process:
    global _process
    with _lock:
        if _process is None:
            _process = Process()
        return _process


def generation() -> int:
    """Which process objects were made in: handles of an older one mean nothing now."""
    return _generation


def restart() -> None:
    global _process, _generation
    with _lock:
        _process = None
        _generation += 1
