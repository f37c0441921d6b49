"""``dptx.Event`` and ``dptx.get_elapsed_time``, as ``cupy.cuda.Event`` and
``cupy.cuda.get_elapsed_time``.

An event recorded on a stream completes when the work enqueued on that stream before it has
finished. Its time is when this process learns that the last of that work finished (Dask
reports each task's completion to the client within a few milliseconds), or the time of
``record`` when nothing was pending; ``get_elapsed_time(start, end)`` is the difference in
milliseconds, as CUDA's events measure the device's time between two points of a stream."""
from __future__ import annotations

import threading
import time

from .errors import DptxError


class Event:
    def __init__(self, block: bool = False, disable_timing: bool = False,
                 interprocess: bool = False):
        self.disable_timing = bool(disable_timing)
        self._futures: list = []
        self._time = None               # perf_counter() when it completed
        self._recorded = False
        self._lock = threading.Lock()
        self._left = 0

    def record(self, stream=None) -> None:
        """Mark the current end of ``stream`` (the current stream by default)."""
        from .stream import stream_for
        futures = stream_for(stream).pending_futures()
        now = time.perf_counter()
        with self._lock:
            self._recorded = True
            self._futures = futures
            self._left = len(futures)
            self._time = None if futures else now
        for f in futures:
            f.add_done_callback(self._one_done)

    def _one_done(self, _future) -> None:
        now = time.perf_counter()
        with self._lock:
            self._left -= 1
            if self._left == 0:
                self._time = now

    @property
    def done(self) -> bool:
        """Whether the work before the event has finished (CuPy's ``done``)."""
        return self._time is not None or not self._recorded

    def synchronize(self) -> None:
        """Wait until the event completes (the work before it finished, successfully or
        not; its errors are raised by the stream's synchronization)."""
        if self._futures:
            from distributed import wait
            with self._futures[0].client.as_current():
                wait(self._futures)
            deadline = time.monotonic() + 10
            while self._time is None and time.monotonic() < deadline:
                time.sleep(0.0005)      # the completion callbacks run on the client's loop
            if self._time is None:      # (a callback lost with a closing client)
                self._time = time.perf_counter()

    def __repr__(self):
        state = "not recorded" if not self._recorded else "done" if self.done else "pending"
        return f"<dptx.Event {state}>"


def get_elapsed_time(start_event: Event, end_event: Event) -> float:
    """Milliseconds from ``start_event`` to ``end_event`` (both recorded and completed)."""
    for name, event in (("start_event", start_event), ("end_event", end_event)):
        if not isinstance(event, Event):
            raise TypeError(f"{name} must be a dptx.Event, got {type(event).__name__}")
        if event.disable_timing:
            raise DptxError(f"{name} was created with disable_timing=True")
        if not event._recorded:
            raise DptxError(f"{name} was never recorded (event.record(stream))")
        if event._time is None:
            raise DptxError(f"{name} has not completed: call {name}.synchronize() first "
                            f"(CUDA: cudaErrorNotReady)")
    return (end_event._time - start_event._time) * 1000.0
