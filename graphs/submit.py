"""One graph submission per launch (DESIGN.md point 7): tasks with their own annotations
(resources, placement, the ``dptx`` facts the scheduler plugin learns from) sent to the
scheduler in one message, instead of one ``client.submit`` per task.

Several launches can share one message (``held_message``): a reduction's two launches reach
the scheduler together, so that it dispatches the second without handling a message while
the first one's chunks keep the machine busy (on a small machine, a second ``update-graph``
arriving then delayed the second worker's start by milliseconds)."""
from __future__ import annotations

import contextlib
import itertools
import threading
import uuid

from dask._expr import LLGExpr
from dask._task_spec import Task, parse_input
from distributed import Future
from distributed.spans import SpanMetadata


_PREFIX = uuid.uuid4().hex
_count = itertools.count()


class AnnotatedGraph(LLGExpr):
    """A low-level graph whose tasks carry annotations of their own (``LLGExpr`` has none).
    The scheduler applies them per key: ``workers``, ``allow_other_workers``, ``resources``
    become the task's restrictions; every annotation is kept in ``TaskState.annotations``."""

    _parameters = ["dsk", "annotations"]

    def __dask_annotations__(self):
        return self.operand("annotations")


class GraphBuilder:
    """Collects tasks and their annotations; ``submit`` sends them at once and returns the
    futures of the keys asked for."""

    def __init__(self):
        self.dsk = {}
        self.annotations: dict = {}
        self.order = {}

    def task(self, key: str, func, *args, **annotations) -> str:
        """Add ``func(*args)`` under ``key``; Futures and keys of tasks added before (as
        ``TaskRef``) among ``args`` become dependencies. Returns the key."""
        self.dsk[key] = Task(key, func, *(parse_input(a) for a in args))
        self.order[key] = len(self.order)   # submission order is a topological order
        for name, value in annotations.items():
            if value is not None:
                self.annotations.setdefault(name, {})[key] = value
        return key

    def submit(self, client, wanted: list) -> dict:
        """Send the graph (or add it to the message held in this thread for ``client``);
        key -> Future for each of ``wanted``."""
        if not self.dsk:
            return {}
        held = getattr(_held, "message", None)
        if held is not None and held.client in (None, client):
            held.client = client
            return held.add(self, wanted)
        return _send(client, self.dsk, self.annotations, self.order, wanted)


def _send(client, dsk: dict, annotations: dict, order: dict, wanted) -> dict:
    expr = AnnotatedGraph(dsk, annotations, _determ_token=f"{_PREFIX}-{next(_count)}")
    return client._graph_to_futures(
        expr, list(wanted), span_metadata=SpanMetadata(collections=[{"type": "Future"}]),
        internal_priority=order)


_held = threading.local()


class _Message:
    """Graphs held to go to the scheduler as one ``update-graph``. Their futures exist at
    once (a Dask Future is only a key the client counts references to: it tells the
    scheduler nothing until the graph that computes the key arrives)."""

    def __init__(self):
        self.client = None          # that of the first graph held (another client's go alone)
        self.dsk: dict = {}
        self.annotations: dict = {}
        self.order: dict = {}
        self.futures: dict = {}

    def add(self, graph: GraphBuilder, wanted) -> dict:
        base = len(self.order)      # later graphs after earlier ones: still topological
        self.dsk.update(graph.dsk)
        for key, rank in graph.order.items():
            self.order[key] = base + rank
        for name, per_key in graph.annotations.items():
            self.annotations.setdefault(name, {}).update(per_key)
        mine = {}
        for key in wanted:
            if key not in self.futures:
                self.futures[key] = Future(key, self.client)
            mine[key] = self.futures[key]
        return mine

    def send(self) -> None:
        if not self.dsk:
            return
        dsk, annotations, order, futures = self.dsk, self.annotations, self.order, self.futures
        self.dsk, self.annotations, self.order, self.futures = {}, {}, {}, {}
        try:
            duplicates = _send(self.client, dsk, annotations, order, list(futures))
        except BaseException as exc:
            # nothing will ever compute these keys: their futures say why, so whoever
            # waits on them (a synchronization) raises instead of waiting for ever
            for future in futures.values():
                future._state.set_error(exc, exc.__traceback__)
            raise
        # Dask made a second Future per key: drop its reference here, at once. Left to its
        # __del__, each would wake the client's event loop thread (one loop callback per
        # future) in the middle of the next operation's submission.
        client = self.client
        with client._refcount_lock:             # (an RLock: _dec_ref takes it again)
            for future in duplicates.values():
                # only while another Future holds the key: the last reference's release
                # must run on the event loop, as Dask does it
                if client.refcount.get(future.key, 0) > 1:
                    future._cleared = True
                    client._dec_ref(future.key)


@contextlib.contextmanager
def held_message():
    """Graphs submitted in this thread inside the block go to the scheduler in one message
    at its end (or at ``send_held()``). Nested blocks share the outer one's message."""
    if getattr(_held, "message", None) is not None:
        yield
        return
    _held.message = message = _Message()
    try:
        yield
    finally:
        _held.message = None
        message.send()


def send_held() -> None:
    """Send the message held in this thread now: before anything waits on its futures."""
    message = getattr(_held, "message", None)
    if message is not None:
        message.send()
