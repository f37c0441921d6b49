"""Client side: a launch or a memcpy becomes Dask tasks (DESIGN.md point 6).

A device buffer is a list of segment futures; each launch produces new versions of the
segments it may write. Chunk tasks (keys ``dptx-chunk-<kernel>-<launch>-<i>``) carry the
resource annotation ``{"CPU": 1}``; merge tasks (``dptx-merge-...``) fold the chunks' dirty
pages into the next version of one segment each. Memcpys are ``dptx-memcpy-*`` tasks.
"""
from __future__ import annotations

import itertools
import re
import uuid

import numpy as np

from . import tasks

RESOURCES = {"cpu": {"CPU": 1}, "gpu": {"GPU": 1}}
_counter = itertools.count()


def token() -> str:
    return f"{next(_counter):x}{uuid.uuid4().hex[:8]}"


def _safe(name: str) -> str:
    """Kernel names in keys: Dask splits key prefixes at '-', so keep names to [A-Za-z0-9_]."""
    return re.sub(r"[^A-Za-z0-9_]", "_", name)


def segment_bounds(nbytes: int, segment_bytes: int) -> list:
    """(start, size) of each segment of an allocation; at least one (possibly empty)."""
    if nbytes == 0:
        return [(0, 0)]
    return [(s, min(segment_bytes, nbytes - s)) for s in range(0, nbytes, segment_bytes)]


def split_blocks(nblocks: int, nchunks: int) -> list:
    """[first, end) block ranges of nearly equal size, in order."""
    nchunks = max(1, min(nchunks, nblocks))
    base, extra = divmod(nblocks, nchunks)
    ranges, start = [], 0
    for i in range(nchunks):
        size = base + (1 if i < extra else 0)
        ranges.append((start, start + size))
        start += size
    return ranges


# ----------------------------------------------------------------------------------------------
# memcpys
# ----------------------------------------------------------------------------------------------
def submit_htod(client, data: np.ndarray, bounds: list) -> list:
    """Host -> device. The host bytes travel inside the task, so the scheduler can rerun it if
    the worker holding the segment dies (scattered data could not be recomputed)."""
    raw = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
    t = token()
    return [client.submit(tasks.htod, raw[s:s + n], key=f"dptx-memcpy-htod-{t}-{i}", pure=False)
            for i, (s, n) in enumerate(bounds)]


def submit_fill(client, bounds: list, pattern: bytes) -> list:
    t = token()
    return [client.submit(tasks.fill, n, pattern, key=f"dptx-memcpy-fill-{t}-{i}", pure=False)
            for i, (_, n) in enumerate(bounds)]


def submit_dtod(client, segments: list) -> list:
    t = token()
    return [client.submit(tasks.dtod, s, key=f"dptx-memcpy-dtod-{t}-{i}", pure=False)
            for i, s in enumerate(segments)]


def submit_dtoh(client, segments: list):
    return client.submit(tasks.dtoh, *segments, key=f"dptx-memcpy-dtoh-{token()}", pure=False)


# ----------------------------------------------------------------------------------------------
# launches
# ----------------------------------------------------------------------------------------------
def submit_launch(client, spec: tasks.ChunkSpec, segments: list, bounds: list, chunks: list,
                  rules: list, writes: list, launch: str = None) -> tuple:
    """Submit one launch. ``segments[slot]``/``bounds[slot]`` describe each buffer;
    ``chunks`` are ``(first, end, worker, device)`` block ranges, ``worker`` the planned
    worker (a loose restriction: if it dies the chunk runs elsewhere) or None, ``device``
    "cpu" or "gpu" (the resource the chunk asks for); ``rules[slot]`` is the
    merge rule (None for byte diffs, or (op, type) for reduction atomics) and ``writes[slot]``
    whether the kernel may write the buffer.

    Each chunk carries the annotation ``dptx = {kernel, launch, index, blocks}`` that the
    scheduler plugin learns from. Returns the new segment futures per slot (the old ones where
    the kernel writes nothing) and the chunk futures (to hold and wait on: a launch that
    writes nothing, printf only, say, must still run)."""
    import dask

    t = launch or token()
    name = _safe(spec.kernel)
    flat = [s for segs in segments for s in segs]
    chunk_futures = []
    for i, (a, b, worker, device) in enumerate(chunks):
        placement = {"workers": [worker], "allow_other_workers": True} if worker else {}
        with dask.annotate(dptx={"kernel": spec.kernel, "launch": t, "index": i,
                                 "blocks": b - a}):
            chunk_futures.append(client.submit(
                tasks.run_chunk, spec, a, b, device, *flat, key=f"dptx-chunk-{name}-{t}-{i}",
                resources=RESOURCES[device], pure=False, **placement))
    out = []
    for slot, (segs, bnds) in enumerate(zip(segments, bounds)):
        if not writes[slot]:
            out.append(list(segs))
            continue
        out.append([
            client.submit(tasks.merge_segment, seg, slot, start, spec.page_bytes, rules[slot],
                          *chunk_futures, key=f"dptx-merge-{name}-{t}-{slot}-{i}", pure=False)
            for i, (seg, (start, _)) in enumerate(zip(segs, bnds))
        ])
    return out, chunk_futures
