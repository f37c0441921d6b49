"""The access footprints of a launch's chunks, per buffer slot (DESIGN.md point 6), from the
static analysis in ``dptx.ptx.footprint`` evaluated with the launch's grid, block and scalar
arguments.

A kernel whose footprint a chunk overstepped (the CPU executor raised FootprintViolation)
is distrusted for the rest of the process: its launches get whole buffers, and the reason
is logged once.
"""
from __future__ import annotations

import logging
import threading

from dptx.ptx.digest import ptx_digest
from dptx.ptx.footprint import kernel_footprint

logger = logging.getLogger("dptx")

_static: dict = {}          # (ptx digest, kernel) -> KernelFootprint, or None (not analysable)
_distrusted: dict = {}      # (ptx digest, kernel) -> reason
_evaluated: dict = {}       # small cache of recent evaluations
_lock = threading.Lock()
_CACHE = 256


def kernel_key(ptx: str, kernel: str) -> tuple:
    return ptx_digest(ptx), kernel


def distrust(ptx: str, kernel: str, reason: str) -> None:
    key = kernel_key(ptx, kernel)
    with _lock:
        if key in _distrusted:
            return
        _distrusted[key] = reason
        for k in [k for k in _evaluated if k[0] == key]:
            del _evaluated[k]
    logger.warning("dptx: kernel %s runs with whole buffers from now on: %s", kernel, reason)


def distrusted(ptx: str, kernel: str):
    """The reason ``kernel`` was distrusted, or None."""
    return _distrusted.get(kernel_key(ptx, kernel))


def _analysis(key, module, function):
    with _lock:
        if key in _static:
            return _static[key]
    try:
        fp = kernel_footprint(module, function)
    except Exception:   # an analysis failure must never stop a launch: whole buffers
        logger.debug("dptx: no footprint for %s", function.name, exc_info=True)
        fp = None
    with _lock:
        _static[key] = fp
    return fp


def _from_pointer(intervals, by: int, size: int) -> list:
    """Intervals relative to a pointer ``by`` bytes into a buffer of ``size``, in the buffer's
    terms; "all of it from the pointer" (what the analysis gives when it cannot bound the
    accesses) is the whole buffer, which a pointer into the middle may reach backwards."""
    if not by:
        return list(intervals)
    return [(0, size) if (lo, hi) == (0, size - by) else (lo + by, hi + by)
            for lo, hi in intervals]


def chunk_footprints(kernel, grid: tuple, block: tuple, params: tuple, globals_: tuple,
                     sizes: list, ranges: list):
    """For each block range, per slot, (read intervals, write intervals); None for a range
    (or the whole answer) where the analysis gives nothing, meaning whole buffers.

    ``params`` are the launch's ``("buffer", (slot, offset))``/``("scalar", value)`` entries,
    ``globals_`` its (module variable name, slot) pairs, ``sizes`` the bytes per slot."""
    key = kernel_key(kernel.ptx, kernel.name)
    if key in _distrusted:
        return None
    fp = _analysis(key, kernel.module, kernel.function)
    if fp is None:
        return None
    if any(kind == "struct" for kind, _ in params):
        return None     # pointers inside a struct: accesses the analysis cannot follow
    scalars, targets, offsets = {}, {}, {}
    for i, (kind, value) in enumerate(params):
        if kind == "buffer":            # (a view: the buffer's pointer plus its offset)
            targets[("param", i)], offsets[("param", i)] = value
        else:
            scalars[i] = value if isinstance(value, bytes) else value.tobytes()
    for name, slot in globals_:
        targets[("var", name)] = slot
    memo = (key, tuple(grid), tuple(block), tuple(sorted(scalars.items())), tuple(sizes),
            tuple(sorted(targets.items())), tuple(sorted(offsets.items())), tuple(ranges))
    with _lock:
        if memo in _evaluated:
            return _evaluated[memo]
    # intervals come relative to each pointer; a view's pointer reaches the bytes after its
    # offset (an access before it is outside the footprint: the chunk's window check
    # raises FootprintViolation and the launch runs again with whole buffers)
    result = fp.evaluate(grid, block, scalars, ranges,
                         {t: sizes[s] - offsets.get(t, 0) for t, s in targets.items()})
    out = []
    for per_target in result:
        row = [([], []) for _ in sizes]
        for target, access in per_target.items():
            slot = targets.get(target)
            if slot is None:
                continue
            by = offsets.get(target, 0)
            row[slot][0].extend(_from_pointer(access.reads, by, sizes[slot]))
            row[slot][1].extend(_from_pointer(access.writes, by, sizes[slot]))
        out.append(row)
    with _lock:
        _evaluated[memo] = out
        while len(_evaluated) > _CACHE:
            _evaluated.pop(next(iter(_evaluated)))
    return out
