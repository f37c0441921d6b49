"""A bounded history of Dask's default spans on the scheduler.

Dask keeps every span, and through ``Span.groups`` every ``TaskGroup`` it ever held, for the
life of the scheduler (dask/distributed#7977, open): a new "default" span starts whenever
the previous one is done, so a program that launches and synchronizes in a loop makes one
span per synchronization, and a new ``TaskGroup`` each time a group of dptx's keys empties
and fills again. On the embedded cluster the scheduler lives in the user's process: it grew
by about 7 KB per operation, without bound. ``prune`` forgets the default spans beyond the
newest ``keep`` once they are done and none of their task groups is still in use (the
dashboard's span views and fine performance metrics then cover the spans kept). Spans a user
named (``with dask.annotate(span=...)`` / ``distributed.span``) are never touched.

A worker reports the time its tasks spent per span id at its next heartbeat, which Dask
looks up without a default; ``install`` makes the scheduler drop reports for spans it has
forgotten (a report can arrive after its span was pruned)."""
from __future__ import annotations

DEFAULT = ("default",)


def install(scheduler) -> bool:
    """Make the spans extension's heartbeat skip metrics of spans it no longer holds.
    False when the scheduler has no spans extension."""
    ext = scheduler.extensions.get("spans")
    if ext is None:
        return False
    if getattr(ext, "_dptx_tolerant", False):
        return True
    original = ext.heartbeat

    def heartbeat(ws, data):
        known = {k: v for k, v in data.items() if k[1] in ext.spans}
        return original(ws, known)
    ext.heartbeat = heartbeat
    ext._dptx_tolerant = True
    return True


def prune(scheduler, keep: int) -> int:
    """Forget the default spans older than the newest ``keep`` whose task groups have all
    been forgotten by the scheduler. Returns how many were forgotten."""
    ext = scheduler.extensions.get("spans")
    if ext is None or not getattr(ext, "_dptx_tolerant", False):
        return 0
    defaults = ext.spans_search_by_name.get(DEFAULT, [])
    if len(defaults) <= keep:
        return 0
    live = scheduler.task_groups

    def gone(span) -> bool:
        return not span.children and span.parent is None and \
            all(live.get(tg.name) is not tg for tg in span.groups)

    doomed = {id(s): s for s in defaults[:len(defaults) - keep] if gone(s)}
    if not doomed:
        return 0
    for s in doomed.values():
        del ext.spans[s.id]
    ext.spans_search_by_name[DEFAULT] = [s for s in defaults if id(s) not in doomed]
    for tag in DEFAULT:
        ext.spans_search_by_tag[tag] = [s for s in ext.spans_search_by_tag[tag]
                                        if id(s) not in doomed]
    ext.root_spans = [s for s in ext.root_spans if id(s) not in doomed]
    return len(doomed)
