"""Client side of a library routine (``dptx.device.library``): one task, ``dptx-library-
<routine>-<token>``, on the worker that holds the most of its inputs, run there with that
worker's device's library (its GPU's where it has one, else its CPU's). It reads its inputs'
current pieces as a chunk reads a window (a piece elsewhere comes whole, or cut where it is),
and its outputs are pieces of that task (one output; or the elements of its tuple)."""
from __future__ import annotations

from . import tasks
from .launch import RESOURCES, _Inputs, token
from .pieces import Piece, PieceMap
from .submit import GraphBuilder


def submit_library(client, routine: str, inputs: list, kwargs: dict, outputs: list,
                   worker, device: str, status: bool) -> list:
    """Submit ``routine`` over ``inputs`` ((PieceMap, lo, shape, dtype) each: the array's
    bytes start at ``lo`` of the buffer) with ``kwargs`` on ``worker`` (an address, or None:
    anywhere), its ``device`` ("cpu" or "gpu"), making ``outputs`` ((shape, dtype) each;
    with ``status``, one more: an int32 flag). Returns a PieceMap per output."""
    graph, t = GraphBuilder(), token()
    key = f"dptx-library-{routine.replace('.', '_')}-{t}"
    reads = _Inputs(graph, {}, t)
    specs = []
    for pieces, lo, shape, dtype in inputs:
        nbytes = int(_count(shape)) * dtype.itemsize
        parts = []
        for part in pieces.overlapping(lo, lo + nbytes):     # (cut to the array's bytes)
            index, src = reads.add(part, local_to=worker)
            parts.append((index, src, part.start - lo, part.size))
        specs.append((tuple(shape), dtype.str, nbytes, tuple(parts)))
    made = [(tuple(shape), dtype.str) for shape, dtype in outputs]
    plan = tasks.LibraryPlan(routine, tuple(specs), tuple(sorted(kwargs.items())), tuple(made),
                             tuple(reads.views), device, status)
    graph.task(key, tasks.run_library, plan, *reads.args,
               workers=[worker] if worker else None,
               allow_other_workers=True if worker else None,
               resources=RESOURCES[device])
    future = graph.submit(client, [key])[key]
    sizes = [int(_count(shape)) * dtype.itemsize for shape, dtype in outputs] + \
        ([4] if status else [])
    several = len(sizes) > 1
    return [PieceMap(n, [Piece(0, n, future, 0, worker, element=i if several else None)]
                     if n else [])
            for i, n in enumerate(sizes)]


def _count(shape) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n
