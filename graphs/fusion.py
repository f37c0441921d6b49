"""Fused launches: consecutive launches with the same shares of blocks run as one task per
worker (DESIGN.md point 7: cheap launches), each worker running its share of every launch in
turn over its own windows. A Dask task round trip costs milliseconds, more than a
memory-bound launch on its share; a group of launches pays it once, and copies its windows
once.

When a launch reads what an earlier launch of the group wrote outside the worker's share (a
stencil's halo), the worker also computes, for the earlier launch, the blocks that write those
bytes: its ranges grow backwards through the group by what the access footprints say each
later range reads (ghost zones, as in communication-avoiding stencil codes). Those extra
blocks compute the same values the neighbour computes (launches in a group are mergeable:
no atomics between blocks, no value depends on which worker runs a block); only the bytes a
worker's own blocks write come back, and they must not overlap another worker's.

Everything here works on footprints: ``footprint(j, first, end)`` gives, for launch j of the
group and a block range, {buffer: (read intervals, write intervals)}. Nothing talks to Dask.
"""
from __future__ import annotations

from .launch import hull


def _union_covers(interval: tuple, union: list) -> bool:
    lo, hi = interval
    for a, b in sorted(union):
        if a <= lo < b:
            lo = b
        if lo >= hi:
            return True
    return lo >= hi


def _clip(intervals, span) -> list:
    lo, hi = span
    return [(max(a, lo), min(b, hi)) for a, b in intervals if min(b, hi) > max(a, lo)]


class Cached:
    """A footprint function with its evaluations kept (the search asks the same ones often)."""

    def __init__(self, footprint):
        self.footprint = footprint
        self.memo = {}

    def __call__(self, j: int, first: int, end: int) -> dict:
        key = (j, first, end)
        if key not in self.memo:
            self.memo[key] = self.footprint(j, first, end)
        return self.memo[key]


def _missing(footprint, ranges: list, j: int, nblocks: int, lo: int, hi: int):
    """Which sides of launch j's range [lo, hi) must grow so that it writes every byte the
    later ranges read from what launch j writes anywhere in the grid: (left, right), None
    when nothing is missing, or "hole" when a missing byte lies inside what the range writes
    (growing cannot help)."""
    everywhere = footprint(j, 0, nblocks)
    here = footprint(j, lo, hi)
    left = right = False
    for later in range(j + 1, len(ranges)):
        for buf, (reads, _) in footprint(later, *ranges[later]).items():
            written = everywhere.get(buf, ((), ()))[1]
            mine = list(here.get(buf, ((), ()))[1])
            span = hull(mine)
            for read in reads:
                for part in _clip(written, read):
                    if _union_covers(part, mine):
                        continue
                    if span is None:
                        left = right = True
                    elif part[0] < span[0]:
                        left = True
                    elif part[1] > span[1]:
                        right = True
                    else:
                        return "hole"
    return (left, right) if left or right else None


def extend_ranges(footprint, launches: int, share: tuple, nblocks: int, unit: int,
                  limit: int):
    """Block ranges R[0..launches-1] one worker runs so that its share of every launch gets
    right inputs: R[last] = share, and each earlier range also covers the blocks whose writes
    a later range reads. Ranges grow by multiples of ``unit`` blocks (rows of a 2-D grid), at
    most ``limit`` blocks past the share on each side; None when that is not enough."""
    a, b = share
    ranges = [None] * launches
    ranges[-1] = (a, b)
    for j in range(launches - 2, -1, -1):
        lo = min(r[0] for r in ranges[j + 1:])
        hi = max(r[1] for r in ranges[j + 1:])
        step = unit
        while True:
            need = _missing(footprint, ranges, j, nblocks, lo, hi)
            if need is None:
                break
            if need == "hole":
                return None
            if need[0]:
                lo = max(0, lo - step)
            if need[1]:
                hi = min(nblocks, hi + step)
            if a - lo > limit or hi - b > limit:
                return None
            step *= 2
        ranges[j] = (lo, hi)
    return ranges


def owned_outputs(footprint, launches: int, shares: list):
    """Per worker (in ``shares`` order), per buffer, the hull of what its own blocks write
    over the group; None when two workers' hulls overlap (the group cannot be fused)."""
    out = []
    for a, b in shares:
        mine = {}
        for j in range(launches):
            for buf, (_, writes) in footprint(j, a, b).items():
                mine.setdefault(buf, []).extend(writes)
        out.append({buf: hull(w) for buf, w in mine.items() if hull(w) is not None})
    for buf in {buf for o in out for buf in o}:
        spans = sorted(o[buf] for o in out if buf in o)
        if any(x[1] > y[0] for x, y in zip(spans, spans[1:])):
            return None
    return out
