"""Stream order and synchronization.

Launches and memcpys are submitted at once and ordered by their data dependencies (each reads
the segment versions the previous operation produced), as in a CUDA stream. A launch whose
chunk fails (an out-of-bounds access, say) surfaces its error at the next synchronization
(``get()``, ``dptx.synchronize()``); the buffers it and later dependent launches would have
written keep the contents they had before it, so no earlier data is lost.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass


@dataclass
class LaunchRecord:
    description: str
    buffers: list          # DeviceBuffers the launch replaced segments of
    before: list           # their segment lists before the launch
    futures: list          # the futures the launch produced


class Stream:
    def __init__(self):
        self._pending: list = []
        self._lock = threading.Lock()

    def record(self, record: LaunchRecord) -> None:
        with self._lock:
            # Forget launches that finished well: nothing can roll them back any more.
            self._pending = [r for r in self._pending
                             if not all(f.status == "finished" for f in r.futures)]
            self._pending.append(record)

    def synchronize(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, []
        if not pending:
            return
        from distributed import wait
        futures = [f for r in pending for f in r.futures]
        with futures[0].client.as_current():  # dptx's client need not be Dask's default
            wait(futures)
        failed = [r for r in pending if any(f.status == "error" for f in r.futures)]
        if not failed:
            return
        for r in reversed(pending):
            if r in failed or any(f.status in ("error", "cancelled") for f in r.futures):
                for buf, before in zip(r.buffers, r.before):
                    buf.segments = before
        first = failed[0]
        exc = next(f.exception() for f in first.futures if f.status == "error")
        if hasattr(exc, "add_note"):
            exc.add_note(f"raised by {first.description}; the arrays it would have written "
                         f"keep their previous contents")
        raise exc


default_stream = Stream()


def synchronize() -> None:
    """Wait for every launch and memcpy submitted so far; raise the first launch error."""
    default_stream.synchronize()
