"""Client side of memcpys (DESIGN.md point 6): host to device, fills, device to device, device
to host, as pieces.

Host data of more than ``SMALL_BYTES`` goes from the client straight to the workers
(``scatter``), spread over them in the order the planner lays blocks out, never through the
scheduler; since no task can recompute it, it is then replicated on a second worker (the
scheduler plugin keeps two copies, see ``scheduler_plugins.replicas``). Smaller data travels
inside a task (recomputable anywhere). ``get()`` gathers the pieces directly from the
workers that hold them.
"""
from __future__ import annotations

import concurrent.futures
import itertools

import numpy as np

from . import tasks
from .launch import token
from .pieces import ZEROS, Piece, PieceMap
from .submit import GraphBuilder, send_held

SMALL_BYTES = 256 * 1024
_round_robin = itertools.count()


def placement(nbytes: int, workers: list, page_bytes: int = 4096) -> list:
    """(worker, start, end): [0, nbytes) spread over ``workers`` in order, in proportion to
    their lanes, on page boundaries; small buffers on one worker (taken in turn)."""
    if not workers:
        return [(None, 0, nbytes)]
    if nbytes <= SMALL_BYTES or len(workers) == 1:
        w = workers[next(_round_robin) % len(workers)]
        return [(w.address, 0, nbytes)]
    weights = [w.lanes for w in workers]
    total = sum(weights)
    out, start, acc = [], 0, 0
    for w, weight in zip(workers, weights):
        acc += weight
        end = nbytes if acc == total else min(nbytes, round(nbytes * acc / total / page_bytes) * page_bytes)
        if end > start:
            out.append((w.address, start, end))
            start = end
    return out


def _placed(worker) -> dict:
    return {"workers": [worker], "allow_other_workers": True} if worker else {}


# How long a scatter waits for the worker the plan chose before placing the piece anywhere:
# the client's model of the cluster can name a worker that has just left (it learns of it a
# moment later), and Dask would wait its whole connect timeout for it.
PLACED_SCATTER_WAIT = 2.0
UPLOAD_ATTEMPTS = 3     # an upload made again when a worker dies before its copies are made


def _scatter(client, key: str, raw: np.ndarray, worker):
    """(future, worker holding it or None) for ``raw`` scattered to ``worker``, else to any
    running worker when that one is gone; through the scheduler when the client cannot reach
    the workers."""
    try:
        if worker is not None:
            try:
                return client.scatter({key: raw}, workers=[worker], direct=True, hash=False,
                                      timeout=PLACED_SCATTER_WAIT)[key], worker
            except TimeoutError:        # "No valid workers found": it left, or is leaving
                pass
        return client.scatter({key: raw}, direct=True, hash=False)[key], None
    except TimeoutError:
        raise
    except OSError:   # the client cannot reach the workers: send through the scheduler
        return client.scatter({key: raw}, direct=False, hash=False)[key], None


def upload(client, data: np.ndarray, workers: list, replicate: bool) -> PieceMap:
    """Host -> device: the bytes of ``data`` as pieces on the workers."""
    raw = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
    n = raw.nbytes
    if n == 0:
        return PieceMap(0, [])
    spots = placement(n, workers)
    t = token()
    if n <= SMALL_BYTES:
        worker = spots[0][0]
        # a copy: the task's argument is serialized when its message is written, later, in
        # the client's event loop; the program may change its array by then
        future = client.submit(tasks.host_bytes, raw.copy(), key=f"dptx-htod-{t}", pure=False,
                               **_placed(worker))
        return PieceMap(n, [Piece(0, n, future, 0, worker)])
    for attempt in range(UPLOAD_ATTEMPTS):
        pieces = []
        for i, (worker, a, b) in enumerate(spots):
            key = f"dptx-host-{t}-{i}"
            future, worker = _scatter(client, key, raw[a:b], worker)
            pieces.append(Piece(a, b, future, 0, worker))
        if not (replicate and len(workers) > 1):
            break
        try:
            client.replicate([p.future for p in pieces], n=2)
            break
        except concurrent.futures.CancelledError:
            # a worker died holding a piece before its second copy was made: the bytes are
            # still here, so the upload is made again (under new keys)
            if attempt == UPLOAD_ATTEMPTS - 1:
                raise
            t = token()
    return PieceMap(n, pieces)


def filled(client, nbytes: int, pattern: bytes, workers: list) -> PieceMap:
    """``nbytes`` repeating ``pattern``, made on the workers (nothing travels); zeros are
    zero pieces, made by whichever chunk first reads them (no task)."""
    if nbytes == 0:
        return PieceMap(0, [])
    spots = placement(nbytes, workers)
    if not pattern.strip(b"\0"):
        return PieceMap(nbytes, [Piece(a, b, ZEROS, 0, w) for w, a, b in spots])
    graph, t = GraphBuilder(), token()
    keys = [graph.task(f"dptx-fill-{t}-{i}", tasks.fill, b - a, pattern, **_placed(w))
            for i, (w, a, b) in enumerate(spots)]
    futures = graph.submit(client, keys)
    return PieceMap(nbytes, [Piece(a, b, futures[k], 0, w) for k, (w, a, b) in zip(keys, spots)])


def copied(client, pieces: PieceMap) -> PieceMap:
    """Device -> device: a copy of every piece, made where the piece is (zero pieces stay
    zero pieces)."""
    if not pieces.pieces:
        return PieceMap(pieces.nbytes, [])
    graph, t = GraphBuilder(), token()
    keys = {i: graph.task(f"dptx-copy-{t}-{i}", tasks.cut, p.future, p.offset, p.size,
                          p.element)
            for i, p in enumerate(pieces.pieces) if not p.zero}
    futures = graph.submit(client, list(keys.values())) if keys else {}
    return PieceMap(pieces.nbytes, [
        Piece(p.start, p.end, futures[keys[i]], 0, p.worker) if i in keys else
        Piece(p.start, p.end, ZEROS, 0, p.worker) for i, p in enumerate(pieces.pieces)])


def download(client, pieces: PieceMap) -> np.ndarray:
    """Device -> host: the pieces gathered straight from the workers (a piece that is a small
    part of a larger array, or one output of a task that made several, is cut where it is
    first)."""
    out = np.empty(pieces.nbytes, np.uint8)
    held = []
    for p in pieces.pieces:
        if p.zero:
            out[p.start:p.end] = 0
        else:
            held.append(p)
    if not held:
        return out
    graph, t = GraphBuilder(), token()
    sources = []
    for i, p in enumerate(held):
        if 2 * p.size < p.length or p.element is not None:
            sources.append((graph.task(f"dptx-cut-{t}-{i}", tasks.cut, p.future, p.offset,
                                       p.size, p.element), 0))
        else:
            sources.append((p.future, p.offset))
    cut = graph.submit(client, [s for s, _ in sources if isinstance(s, str)])
    send_held()     # gathered at once: the scheduler must have the cuts
    futures = [cut[s] if isinstance(s, str) else s for s, _ in sources]
    values = client.gather(futures, direct=True)
    for p, (_, offset), value in zip(held, sources, values):
        out[p.start:p.end] = np.asarray(value, dtype=np.uint8)[offset:offset + p.size]
    return out
