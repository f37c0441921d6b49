"""One graph submission per launch (DESIGN.md point 7): tasks with their own annotations
(resources, placement, the ``dptx`` facts the scheduler plugin learns from) sent to the
scheduler in one message, instead of one ``client.submit`` per task."""
from __future__ import annotations

import itertools
import uuid

from dask._expr import LLGExpr
from dask._task_spec import Task, parse_input


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
        """Send the graph; key -> Future for each of ``wanted``."""
        if not self.dsk:
            return {}
        from distributed.spans import SpanMetadata
        expr = AnnotatedGraph(self.dsk, self.annotations, _determ_token=f"{_PREFIX}-{next(_count)}")
        return client._graph_to_futures(
            expr, list(wanted), span_metadata=SpanMetadata(collections=[{"type": "Future"}]),
            internal_priority=self.order)
