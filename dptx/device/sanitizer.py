"""Where sanitizer reports go (``dptx sanitize``; the ``dptx.sanitize`` setting): each
process (the program's, every worker's) prints each hazard once, the first time it sees it,
and appends every report to the ``dptx.sanitize-report`` file when one is set, one JSON
object a line, for ``dptx sanitize`` to count and summarize. A report is a dict with at least
``tool``, ``kind``, ``kernel`` and ``message``; ``key`` (what makes two reports the same
hazard: the kernel and the PTX lines) deduplicates."""
from __future__ import annotations

import json
import os
import sys
import threading

from .. import config
from ..errors import LaunchError

TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")

_lock = threading.Lock()
_seen: dict = {}        # key -> count, in this process


def tool(requested=None):
    """The tool a launch runs under: ``requested`` (an argument), else the setting; None
    for none. An unknown name is an error, not a silent no-op."""
    name = requested if requested is not None else config.get("sanitize")
    if name in (None, False, "", "none"):
        return None
    if name not in TOOLS:
        raise LaunchError(f"sanitize={name!r}: the tools are {', '.join(TOOLS)}")
    return name


def report(entry: dict) -> None:
    """Record one hazard: printed on stderr the first time its key is seen in this
    process, appended to the report file (every time, for the counts)."""
    key = json.dumps(entry.get("key", [entry["kernel"], entry["message"]]))
    with _lock:
        first = key not in _seen
        _seen[key] = _seen.get(key, 0) + 1
        path = config.get("sanitize-report")
        if path:
            with open(path, "a") as f:
                f.write(json.dumps({**entry, "pid": os.getpid()}) + "\n")
    if first and not path:
        print(f"========= {entry['tool']}: {entry['message']}", file=sys.stderr, flush=True)
    _to_scheduler(entry)


def _to_scheduler(entry: dict) -> None:
    """On a worker, the report goes to the scheduler too (its event log, topic
    ``dptx-hazard``), where the dashboard's dptx page lists it."""
    worker = None
    if "distributed" in sys.modules:        # (a worker has loaded it; a plain program may not)
        from distributed import get_worker  # lazy: only where distributed is loaded already
        try:
            worker = get_worker()
        except ValueError:
            return                          # not in a worker
    if worker is not None:
        worker.log_event("dptx-hazard", entry)


def seen() -> dict:
    """This process's hazards so far: key -> count."""
    with _lock:
        return dict(_seen)


def reset() -> None:
    """Forget this process's hazards (each is printed again the next time it is seen)."""
    with _lock:
        _seen.clear()
