"""What a chunk costs a worker beyond its kernels, measured per (kernel, worker).

A worker's lanes are busy from the first chunk of a launch it starts to the last it finishes;
what of that time its kernels did not take (Dask's dispatch between tasks, deserializing,
the copies into and out of the chunk's windows, the wait for an input) is overhead, and more
chunks mean more of it. Per launch and worker:

    overhead per chunk = (span * busy lanes - kernel seconds) / chunks

The first launch of a kernel on a worker also compiles it, which no later chunk pays, so it
is left out; the estimate is the median of the last ``history`` launches (one stalled launch
does not count). The planner sizes chunks from it (``planner.Tuning``). No Dask here."""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np


@dataclass
class _Run:
    """One worker's chunks of one launch."""
    kernel: str
    lanes: int
    start: float = float("inf")
    stop: float = float("-inf")
    kernel_seconds: float = 0.0
    chunks: int = 0


class OverheadModel:
    def __init__(self, history: int = 8):
        self.history = history
        self._runs: dict = {}          # (launch, worker) -> _Run, until the launch finishes
        self._seen: set = set()        # (kernel, worker) with a launch measured (compiled)
        self._estimates: dict = {}     # (kernel, worker) -> deque of seconds per chunk

    def observe(self, kernel: str, launch: str, worker: str, lanes: int, start: float,
                stop: float, kernel_seconds: float) -> None:
        """A chunk of ``launch`` ran on ``worker`` from ``start`` to ``stop`` (its task's
        compute time), ``kernel_seconds`` of it in kernels."""
        if not stop >= start:
            return
        run = self._runs.get((launch, worker))
        if run is None:
            run = self._runs[(launch, worker)] = _Run(kernel, max(1, int(lanes)))
            while len(self._runs) > 4096:            # launches that never finished
                self._runs.pop(next(iter(self._runs)))
        run.start, run.stop = min(run.start, start), max(run.stop, stop)
        run.kernel_seconds += max(0.0, kernel_seconds)
        run.chunks += 1

    def finish(self, launch: str) -> None:
        """Every chunk of ``launch`` ran: turn its runs into per-chunk estimates."""
        for key in [k for k in self._runs if k[0] == launch]:
            run = self._runs.pop(key)
            worker = key[1]
            pair = (run.kernel, worker)
            if pair not in self._seen:          # this launch compiled the kernel there
                self._seen.add(pair)
                continue
            busy = (run.stop - run.start) * min(run.lanes, run.chunks)
            per_chunk = max(0.0, busy - run.kernel_seconds) / run.chunks
            self._estimates.setdefault(pair, deque(maxlen=self.history)).append(per_chunk)

    def overhead(self, kernel: str, worker: str):
        """Seconds per chunk of ``kernel`` on ``worker``, or None before a launch after the
        first was measured."""
        values = self._estimates.get((kernel, worker))
        return float(np.median(values)) if values else None

    def forget_worker(self, worker: str) -> None:
        for key in [k for k in self._estimates if k[1] == worker]:
            del self._estimates[key]
        self._seen = {k for k in self._seen if k[1] != worker}
        for key in [k for k in self._runs if k[1] == worker]:
            del self._runs[key]

    def snapshot(self, kernels: set = None) -> dict:
        """kernel -> {worker: seconds per chunk} (plain data, for clients), of every kernel or
        of ``kernels``."""
        out: dict = {}
        for (kernel, worker) in self._estimates:
            if kernels is not None and kernel not in kernels:
                continue
            value = self.overhead(kernel, worker)
            if value is not None:
                out.setdefault(kernel, {})[worker] = value
        return out
