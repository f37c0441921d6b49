"""CPU pinning helpers for measurements with deliberately unequal workers (tests and
benchmarks of the balancer): pin every thread of a process to one core, and a bounded busy
process that competes for a core."""
from __future__ import annotations

import os
import subprocess
import sys


def pin_process_to(core: int) -> int:
    """Pin every thread of the calling process to ``core``; threads created later inherit it.
    Returns the number of threads pinned."""
    tids = os.listdir("/proc/self/task")
    for tid in tids:
        try:
            os.sched_setaffinity(int(tid), {core})
        except OSError:  # a thread that just ended
            pass
    return len(tids)


def start_busy_process(core: int, seconds: float) -> subprocess.Popen:
    """A process spinning on ``core`` for at most ``seconds`` (it stops by itself)."""
    code = ("import os, time\n"
            f"os.sched_setaffinity(0, {{{core}}})\n"
            f"end = time.time() + {float(seconds)}\n"
            "while time.time() < end:\n"
            "    pass\n")
    return subprocess.Popen([sys.executable, "-c", code])
