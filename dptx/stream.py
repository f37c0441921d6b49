"""Stream order and synchronization (DESIGN.md point 7).

Launches and memcpys are operations submitted at once and ordered by their data (each reads
the piece versions the previous operation produced), as in a CUDA stream. An operation knows
how to submit itself from the current state of its buffers, so the stream can replay it:
- a launch whose chunk stepped outside its access footprint (``FootprintViolation``) marks
  its kernel distrusted (whole buffers from then on); the stream rolls back that launch and
  everything after it and submits them again, then waits again; the user sees only the right
  result (and one logged warning);
- any other failure (an out-of-bounds access, say) surfaces at the next synchronization
  (``get()``, ``dptx.synchronize()``); the buffers the failed operation and later dependent
  ones would have written keep the contents they had before it, so no earlier data is lost.
"""
from __future__ import annotations

import abc
import threading
from dataclasses import dataclass

from .errors import FootprintViolation


@dataclass
class Submitted:
    buffers: list          # DeviceBuffers whose pieces the operation replaced
    before: list           # their PieceMaps before it
    futures: list          # what it produced (held until it finishes, and waited on)


class Operation(abc.ABC):
    """A launch or a memcpy in a stream."""
    description = "operation"

    @abc.abstractmethod
    def submit(self) -> Submitted:
        """Submit the operation's tasks from the current pieces of its buffers, and give the
        buffers their new pieces."""

    def footprint_violated(self, exc: FootprintViolation) -> bool:
        """Make a replay safe after ``exc``; False when this operation cannot (then the error
        is raised)."""
        return False


def _finished(sub: Submitted) -> bool:
    return all(f.status == "finished" for f in sub.futures)


class Stream:
    REPLAYS = 8     # at most this many footprint replays per synchronization

    def __init__(self):
        self._pending: list = []       # (operation, Submitted), in stream order
        self._lock = threading.RLock()

    def enqueue(self, op: Operation) -> None:
        with self._lock:
            # Forget a finished prefix: nothing can roll those back any more. (A replay
            # resubmits a contiguous suffix, so a finished operation after an unfinished
            # one stays.)
            while self._pending and _finished(self._pending[0][1]):
                self._pending.pop(0)
            self._pending.append((op, op.submit()))

    def forget(self) -> None:
        """Drop every pending operation (the cluster is going away)."""
        with self._lock:
            self._pending = []

    def synchronize(self) -> None:
        from distributed import wait

        with self._lock:
            for _ in range(self.REPLAYS + 1):
                if not self._pending:
                    return
                futures = [f for _, sub in self._pending for f in sub.futures]
                if futures:
                    with futures[0].client.as_current():  # dptx's client need not be the default
                        wait(futures)
                failed = next((i for i, (_, sub) in enumerate(self._pending)
                               if any(f.status in ("error", "cancelled") for f in sub.futures)),
                              None)
                if failed is None:
                    self._pending = []
                    return
                op, sub = self._pending[failed]
                exc = _first_exception(sub)
                replay = isinstance(exc, FootprintViolation) and op.footprint_violated(exc)
                suffix = self._pending[failed:]
                for _, s in reversed(suffix):
                    for buf, before in zip(s.buffers, s.before):
                        buf.pieces = before
                if not replay:
                    self._pending = self._pending[:failed]
                    if hasattr(exc, "add_note"):
                        exc.add_note(f"raised by {op.description}; the arrays it would have "
                                     f"written keep their previous contents")
                    raise exc
                self._pending = self._pending[:failed]
                for o, _ in suffix:
                    self._pending.append((o, o.submit()))
            raise RuntimeError("dptx: launches kept overstepping their footprints after "
                               f"{self.REPLAYS} replays")


def _first_exception(sub: Submitted):
    for f in sub.futures:
        if f.status == "error":
            return f.exception()
    for f in sub.futures:
        if f.status == "cancelled":
            try:
                f.result()
            except BaseException as exc:   # noqa: BLE001 - the reason it was cancelled
                return exc
    return RuntimeError("an operation failed without an exception")


default_stream = Stream()


def synchronize() -> None:
    """Wait for every launch and memcpy submitted so far; raise the first launch error."""
    default_stream.synchronize()
