"""``dptx.LaunchHandle``: what a launch returns. A launch is asynchronous (it may even wait a
moment in a group of launches that run together); its handle gives its Dask futures, to wait
on, to watch (``distributed.wait(handle)``, ``distributed.progress(handle)``: a handle is a
Dask collection of its futures) or to check (``done()``)."""
from __future__ import annotations


class LaunchHandle:
    def __init__(self, op, stream):
        self._op = op
        self._stream = stream
        self.description = op.description

    @property
    def futures(self) -> list:
        """The Dask futures of the tasks that run the launch (of the group it runs in),
        submitting it now if it was held for a group."""
        if self._op.submitted is None:
            self._stream.flush()
        return list(self._op.submitted.futures)

    def done(self) -> bool:
        """Whether it has finished (well or not); False while it waits to be submitted."""
        sub = self._op.submitted
        return sub is not None and all(f.status in ("finished", "error", "cancelled")
                                       for f in sub.futures)

    def wait(self, timeout=None) -> None:
        """Wait for the launch (and what it depends on). Errors surface at the next
        synchronization (``get()``, ``dptx.synchronize()``), in stream order."""
        # lazy: distributed loads on the first cluster call (`import dptx` stays light)
        from distributed import wait
        futures = self.futures
        if futures:
            with futures[0].client.as_current():
                wait(futures, timeout=timeout)

    # a Dask collection of its futures: distributed.wait/progress/futures_of take it
    def __dask_graph__(self) -> dict:
        return {f.key: f for f in self.futures}

    def __dask_keys__(self) -> list:
        return [f.key for f in self.futures]

    def __repr__(self):
        state = "done" if self.done() else ("held" if self._op.submitted is None else "running")
        return f"<dptx.LaunchHandle {self.description}: {state}>"
