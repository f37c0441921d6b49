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

Consecutive launches that run better together are held briefly and submitted as one group:
small launches that the planner puts on one worker as one chunk each (a batch: one task), or
launches with the same shares of blocks (fused: one task per worker, see
``graphs.fusion``); a Dask task round trip costs more than such a launch. A group is
submitted when a launch that cannot join it comes, when it is full, when no launch joined it
for ``GROUP_IDLE`` seconds, or at a synchronization.

Streams (``dptx.Stream``, CuPy's calls): each keeps its own order, groups, error reporting
and replays, and ``stream.synchronize()`` waits for its work only. Operations on different
streams run concurrently wherever their data allows: every operation reads the versions of
its buffers that the operations enqueued before it (on any stream) write, so the data
orderings ``wait_event`` asks for always hold, and a program whose streams race on a buffer
sees the program-order result (one of those a GPU may give). ``with stream:`` makes a stream
current in its thread; ``stream=`` on launches and copies names one. Copies back to the host
(``get()``) and ``dptx.synchronize()`` wait for every stream, as the legacy default stream
does in CUDA.
"""
from __future__ import annotations

import abc
import contextlib
import heapq
import logging
import threading
import time
import weakref
from asyncio import CancelledError
from dataclasses import dataclass

from ..demangle import name_in_source
from ..errors import DataLostError, DptxError, FootprintViolation, WorkerDiedError


@dataclass
class Submitted:
    buffers: list          # DeviceBuffers whose pieces the operation replaced
    before: list           # their PieceMaps before it
    futures: list          # what it produced (held until it finishes, and waited on)


class Operation(abc.ABC):
    """A launch or a memcpy in a stream."""
    description = "operation"
    submitted = None        # the Submitted of its last submission (a group's, if grouped)

    @abc.abstractmethod
    def submit(self) -> Submitted:
        """Submit the operation's tasks from the current pieces of its buffers, and give the
        buffers their new pieces."""

    def footprint_violated(self, exc: FootprintViolation) -> bool:
        """Make a replay safe after ``exc``; False when this operation cannot (then the error
        is raised)."""
        return False

    def open_group(self):
        """A ``Group`` this operation starts, that later operations may join (consecutive
        launches that run better as one task), or None: submit it alone."""
        return None

    # True for the first contents of a buffer nothing has used yet (a new array's zeros or
    # upload): no operation before it can see that buffer, so it goes at once without
    # submitting the group being formed (``c = a * 2 + b`` allocates between the launches).
    first_contents = False

    def succeeded_before(self, exc):
        """(an operation redoing what succeeded before ``exc`` was raised, or None; what
        raised it). A batch of launches keeps the results of the launches before the one
        that failed."""
        return None, self.description


class Group(abc.ABC):
    """Operations held back to be submitted together (a batch of small launches on one
    worker, a fused group of launches with the same shares)."""

    ops: list
    limit = 128         # operations at most

    @abc.abstractmethod
    def accept(self, op: Operation) -> bool:
        """Take ``op`` into the group if it fits."""

    @abc.abstractmethod
    def operations(self) -> list:
        """The operations that run the group, in order (the one operation of a group of
        one)."""

    def full(self) -> bool:
        return len(self.ops) >= self.limit


def _finished(sub: Submitted) -> bool:
    return all(f.status == "finished" for f in sub.futures)


class _Deadlines:
    """One daemon thread that calls functions at their deadlines, for every stream's open
    group. (A ``threading.Timer`` per group started a thread per launch group: 0.5-1 ms of
    every small launch's submission on a busy 2-core machine, waiting for the new thread to
    be scheduled.) Started on first use; a call that raises is logged."""

    def __init__(self):
        self._cond = threading.Condition()
        self._queue: list = []          # heap of (deadline, sequence number, function)
        self._count = 0
        self._thread = None

    def call_later(self, delay: float, fn) -> None:
        with self._cond:
            self._count += 1
            heapq.heappush(self._queue, (time.monotonic() + delay, self._count, fn))
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="dptx-stream-groups",
                                                daemon=True)
                self._thread.start()
            self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue or self._queue[0][0] > time.monotonic():
                    self._cond.wait(None if not self._queue
                                    else self._queue[0][0] - time.monotonic())
                _, _, fn = heapq.heappop(self._queue)
            try:
                fn()
            except Exception:   # noqa: BLE001 - no caller to raise to
                logging.getLogger("dptx").exception("dptx: a stream's deferred call failed")


_deadlines = _Deadlines()


class Stream:
    """A stream of launches and copies (``dptx.Stream()``, as ``cupy.cuda.Stream``)."""
    REPLAYS = 8             # at most this many footprint replays per synchronization
    GROUP_IDLE = 0.002      # seconds without a new launch before an open group is submitted
    EAGER = 4               # launches after which a group goes if the workers have nothing
    MAX_QUEUED = 4          # operations in flight before a new one waits for the oldest
    null = None             # the default stream (set below)
    _all = weakref.WeakSet()

    def __init__(self, null: bool = False, non_blocking: bool = False, ptds: bool = False):
        # (CuPy's arguments: ``Stream(null=True)`` is the default stream's object; blocking
        # and per-thread flavours change nothing here, where streams never block each other)
        if "_lock" in self.__dict__:
            return                      # Stream(null=True): the default stream, as it is
        self._pending: list = []       # (operation, Submitted), in stream order
        self._open = None              # the Group being formed, not submitted yet
        self._last_add = 0.0
        self._timer = None
        self._lock = threading.RLock()
        self._awaited: list = []       # events this stream waits for (wait_event)
        Stream._all.add(self)

    def __new__(cls, null: bool = False, non_blocking: bool = False, ptds: bool = False):
        if null and cls.null is not None:
            return cls.null
        return super().__new__(cls)

    # -- CuPy's stream calls -------------------------------------------------------------------
    def __enter__(self) -> "Stream":
        _current_stack().append(self)
        return self

    def __exit__(self, *exc) -> None:
        _current_stack().pop()

    def use(self) -> "Stream":
        """Make this the current stream of the calling thread (until another ``use``)."""
        stack = _current_stack()
        stack[-1:] = [self] if stack else [self]
        return self

    @property
    def done(self) -> bool:
        """Whether everything enqueued on this stream has finished (CuPy's ``done``)."""
        with self._lock:
            self._flush()
            return all(_finished(sub) for _, sub in self._pending)

    def record(self, event=None):
        """An ``Event`` (``event``, or a new one) marking this point of the stream."""
        event = event if event is not None else Event()
        event.record(self)
        return event

    def wait_event(self, event) -> None:
        """Later work on this stream comes after ``event``'s: operations are ordered by the
        data they touch already; ``synchronize`` also waits for the event."""
        with self._lock:
            self._awaited.append(event)

    def pending_futures(self) -> list:
        """The futures of what this stream has enqueued and not seen finish (its open group
        is submitted first): what an event recorded now waits for."""
        # lazy: distributed loads on the first cluster call (`import dptx` stays light)
        from graphs.submit import send_held
        with self._lock:
            self._flush()
            send_held()
            return [f for _, sub in self._pending for f in sub.futures if f.status != "finished"]

    def __repr__(self):
        return "<dptx.Stream null>" if self is Stream.null else f"<dptx.Stream {id(self):#x}>"

    def enqueue(self, op: Operation) -> None:
        with self._lock:
            self._trim()
            if op.first_contents and self._open is not None:
                self._submit(op)
                return
            if self._open is not None and self._open.accept(op):
                self._last_add = time.monotonic()
                # A full group goes; so does a group of a few when nothing else is in flight:
                # the workers would otherwise wait for the whole group to form.
                if self._open.full() or (not self._pending and len(self._open.ops) >= self.EAGER):
                    self._flush()
                return
            self._flush()
            group = op.open_group()
            if group is None:
                self._submit(op)
                return
            self._open = group
            self._last_add = time.monotonic()
            if self._timer is None:
                self._start_timer(self.GROUP_IDLE)

    def _trim(self) -> None:
        """Forget a finished prefix: nothing can roll those back any more. (A replay resubmits
        a contiguous suffix, so a finished operation after an unfinished one stays.) Then, if
        more than MAX_QUEUED operations are still in flight, wait for the oldest: each holds
        the versions of the arrays it replaced until it finishes, and a launch queue without
        bound would hold every version of an iterative program's arrays (and starve the
        workers' memory recycling)."""
        while self._pending and _finished(self._pending[0][1]):
            self._pending.pop(0)
        if len(self._pending) >= self.MAX_QUEUED:
            # lazy: distributed loads on the first cluster call (`import dptx` stays light)
            from distributed import wait

            # lazy: distributed loads on the first cluster call (`import dptx` stays light)
            from graphs.submit import send_held
            send_held()     # what we wait for may be in a message not sent yet
            oldest = self._pending[0][1].futures
            with oldest[0].client.as_current():
                try:
                    wait(oldest)
                except Exception as exc:    # noqa: BLE001 - cancelled: the next
                    if not cancelled(exc):  # synchronization reports it
                        raise
            while self._pending and _finished(self._pending[0][1]):
                self._pending.pop(0)

    def _submit(self, op: Operation) -> None:
        sub = op.submit()
        self._pending.append((op, sub))
        for member in getattr(op, "ops", None) or [op]:   # a group's launches share its tasks
            member.submitted = sub

    @contextlib.contextmanager
    def together(self):
        """Operations enqueued on this stream inside the block reach the scheduler in one
        message at its end, the group being formed included (a reduction's two launches:
        the scheduler then handles nothing between the first one's chunks and the second)."""
        # lazy: distributed loads on the first cluster call (`import dptx` stays light)
        from graphs.submit import held_message
        with self._lock, held_message():
            yield self
            self._flush()

    def flush(self) -> None:
        """Submit the group being formed now (a handle's futures are wanted)."""
        with self._lock:
            self._flush()

    # -- batches ---------------------------------------------------------------------------------
    def _flush(self) -> None:
        group, self._open = self._open, None
        if group is not None:
            for op in group.operations():
                self._submit(op)

    def _start_timer(self, delay: float) -> None:
        self._timer = True
        _deadlines.call_later(delay, self._on_timer)

    def _on_timer(self) -> None:
        """Submit the open group once no launch joined it for GROUP_IDLE seconds (launches
        are asynchronous: they must start without a synchronization)."""
        with self._lock:
            self._timer = None
            if self._open is None:
                return
            idle = time.monotonic() - self._last_add
            if idle < self.GROUP_IDLE:
                self._start_timer(self.GROUP_IDLE - idle)
                return
            try:
                self._flush()
            except Exception:   # noqa: BLE001 - a timer thread has no caller to raise to
                logging.getLogger("dptx").exception("dptx: submitting a group of launches failed")

    # -- synchronization -------------------------------------------------------------------------
    def _cancel_pending(self, futures: list) -> None:
        """Ctrl-C while waiting: cancel every pending operation's tasks (those queued never
        start; a running chunk's result is dropped) and give the arrays they would have
        written their previous contents back, as a failed launch does."""
        for _, sub in reversed(self._pending):
            for buf, before in zip(sub.buffers, sub.before):
                buf.pieces = before
        self._pending = []
        try:
            futures[0].client.cancel(futures)
        except Exception:       # noqa: BLE001 - a client closing meanwhile has nothing to cancel
            pass

    def forget(self) -> None:
        """Drop every pending operation (the cluster is going away)."""
        with self._lock:
            self._pending, self._open, self._awaited = [], None, []

    def synchronize(self) -> None:
        """Wait for everything enqueued on this stream (and the events it waits for); raise
        the first error of its launches. A wait of more than a couple of seconds shows a
        progress bar (``dptx.progress``)."""
        # lazy: distributed loads on the first cluster call (`import dptx` stays light)
        from graphs.submit import send_held

        # lazy: distributed loads on the first cluster call (`import dptx` stays light)
        from . import progress

        with self._lock:
            awaited, self._awaited = self._awaited, []
            for event in awaited:
                event.synchronize()
            self._flush()
            send_held()     # (a synchronization inside ``together``)
            for _ in range(self.REPLAYS + 1):
                if not self._pending:
                    return
                futures = [f for _, sub in self._pending for f in sub.futures]
                if futures:
                    try:
                        progress.wait(futures)
                    except KeyboardInterrupt:
                        self._cancel_pending(futures)
                        raise
                    except Exception as exc:    # noqa: BLE001 - Dask's wait raises when a
                        if not cancelled(exc):  # future was cancelled (its data died with a
                            raise               # worker): that operation's failure, below
                failed = next((i for i, (_, sub) in enumerate(self._pending)
                               if any(f.status in ("error", "cancelled") for f in sub.futures)),
                              None)
                if failed is None:
                    self._pending = []
                    return
                op, sub = self._pending[failed]
                exc = _first_exception(sub)
                if cancelled(exc):
                    for check in _connection_checks:
                        check()         # a lost scheduler says so (runtime.check_connection)
                replay = isinstance(exc, FootprintViolation) and op.footprint_violated(exc)
                suffix = self._pending[failed:]
                for _, s in reversed(suffix):
                    for buf, before in zip(s.buffers, s.before):
                        buf.pieces = before
                self._pending = self._pending[:failed]
                if replay:
                    for o, _ in suffix:
                        self._submit(o)
                    continue
                if cancelled(exc):
                    raise data_lost(op.description, [b for _, s in suffix for b in s.buffers])
                redo, culprit = op.succeeded_before(exc)
                if redo is not None:
                    self._submit(redo)
                if hasattr(exc, "add_note"):
                    exc.add_note(f"raised by {culprit}; the arrays it and later launches would "
                                 f"have written keep their previous contents")
                kernels = [o.kernel for o in (getattr(op, "ops", None) or [op])
                           if hasattr(o, "kernel")]
                raise name_in_source(_workers_died(exc, culprit), kernels)
            raise RuntimeError("dptx: launches kept overstepping their footprints after "
                               f"{self.REPLAYS} replays")


_connection_checks = []     # called when an operation was cancelled: raise if the cluster
                            # is gone (the runtime, a layer above, registers its check)


def on_cancelled(check) -> None:
    _connection_checks.append(check)


def data_lost(what: str, buffers) -> DataLostError:
    """The error for work Dask cancelled because data it needed died with a worker; the
    buffers whose current pieces are gone are marked lost (every later use says so)."""
    why = (f"a worker died holding the only copy of data that {what} needed, and it cannot "
           f"be computed again (the versions it came from were already released)")
    lost = 0
    for buf in {id(b): b for b in buffers}.values():
        pieces = getattr(buf, "pieces", None)
        futures = pieces.futures() if hasattr(pieces, "futures") else []
        if any(f.status in ("cancelled", "lost", "error") for f in futures):
            buf.lose(why)
            lost += 1
    return DataLostError(f"{why}; {lost} array(s) lost with it: create them again. (A worker "
                         f"killed while chunks run loses nothing: they run again elsewhere; "
                         f"results already made only there are lost.)")


def cancelled(exc) -> bool:
    # lazy: distributed loads on the first cluster call (`import dptx` stays light)
    from distributed.client import FutureCancelledError, FuturesCancelledError
    return isinstance(exc, (CancelledError, FutureCancelledError, FuturesCancelledError))


def _workers_died(exc, culprit: str):
    """Dask's ``KilledWorker`` said as dptx's error (``exc`` itself otherwise)."""
    # lazy: distributed loads on the first cluster call (`import dptx` stays light)
    from distributed import KilledWorker
    if not isinstance(exc, KilledWorker):
        return exc
    last = getattr(exc.last_worker, "address", exc.last_worker)
    error = WorkerDiedError(
        f"{culprit} failed: every worker that ran its task {exc.task!r} died while running "
        f"it ({exc.allowed_failures + 1} of them, the last {last}). "
        f"The usual cause is memory: a chunk's buffers (a window of each array it touches, "
        f"the whole array where its accesses cannot be bounded, as atomics at computed "
        f"addresses) took a worker past its memory limit and its nanny stopped it; give the "
        f"workers more memory (``--memory-limit``), or make the arrays smaller. The arrays "
        f"it would have written keep their previous contents.")
    error.__cause__ = exc
    return error


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
Stream.null = default_stream
_local = threading.local()


def _current_stack() -> list:
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    return stack


def get_current_stream() -> Stream:
    """The calling thread's current stream (``with stream:``, ``stream.use()``), else the
    default stream."""
    stack = _current_stack()
    return stack[-1] if stack else default_stream


def stream_for(stream) -> Stream:
    """The stream an operation given ``stream=`` goes to."""
    if stream is None:
        return get_current_stream()
    if not isinstance(stream, Stream):
        raise TypeError(f"stream= takes a dptx.Stream, got {type(stream).__name__}")
    return stream


def synchronize() -> None:
    """Wait for every launch and memcpy submitted so far, on every stream; raise the first
    launch error."""
    for stream in [default_stream] + [s for s in list(Stream._all) if s is not default_stream]:
        stream.synchronize()


def forget_all() -> None:
    """Drop every stream's pending operations (the cluster is going away)."""
    for stream in list(Stream._all):
        stream.forget()


# -- events ------------------------------------------------------------------------------------
class Event:
    """``dptx.Event``, as ``cupy.cuda.Event``: recorded on a stream, it completes when the
    work enqueued on that stream before it has finished. Its time is when this process
    learns that the last of that work finished (Dask reports each task's completion to the
    client within a few milliseconds), or the time of ``record`` when nothing was pending;
    ``get_elapsed_time(start, end)`` is the difference in milliseconds, as CUDA's events
    measure the device's time between two points of a stream."""

    def __init__(self, block: bool = False, disable_timing: bool = False,
                 interprocess: bool = False):
        self.disable_timing = bool(disable_timing)
        self._futures: list = []
        self._time = None               # perf_counter() when it completed
        self._recorded = False
        self._lock = threading.Lock()
        self._left = 0
        self._generation = 0            # a new record() ignores the last one's callbacks

    def record(self, stream=None) -> None:
        """Mark the current end of ``stream`` (the current stream by default)."""
        futures = stream_for(stream).pending_futures()
        now = time.perf_counter()
        with self._lock:
            self._generation += 1
            generation = self._generation
            self._recorded = True
            self._futures = futures
            self._left = len(futures)
            self._time = None if futures else now
        for f in futures:
            f.add_done_callback(lambda _f, g=generation: self._one_done(g))

    def _one_done(self, generation: int) -> None:
        now = time.perf_counter()
        with self._lock:
            if generation != self._generation:
                return
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
            # lazy: distributed loads on the first cluster call (`import dptx` stays light)
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
