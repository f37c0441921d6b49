"""Client side: a launch becomes one Dask graph (DESIGN.md points 6 and 7).

For each chunk (a range of blocks placed on a worker) and each buffer, the chunk's window is
the hull of the bytes its footprint may read or write. The chunk depends only on the pieces
its window overlaps: a piece on the chunk's own worker, or mostly inside the window, comes
whole; of any other piece only the overlapping bytes come, cut by a ``dptx-cut`` task that
runs where the piece is (halos). What the launch writes becomes the new pieces:
- when the chunks' write footprints are pairwise disjoint, each chunk's written bytes are a
  new piece at once (no merge task);
- otherwise (overlapping or unknown writes, reduction atomics across chunks) the written
  span is cut into merge ranges along the current pieces' placement, and each range's merge
  task receives only the changed pages that fall in it, from the chunks whose window
  overlaps it; no task receives every chunk's output.

Keys: ``dptx-chunk-<kernel>-<launch>-<i>`` (the scheduler plugin learns from these and their
``dptx`` annotation; a chunk with several outputs returns a tuple, and pieces name their
element of it), ``dptx-cut-...``, ``dptx-merge-<kernel>-<launch>-<slot>-<r>``.
"""
from __future__ import annotations

import itertools
import re
import uuid
from dataclasses import dataclass

from dask._task_spec import TaskRef

from . import tasks
from .pieces import Piece, PieceMap
from .submit import GraphBuilder

RESOURCES = {"cpu": {"CPU": 1}, "gpu": {"GPU": 1}}
WINDOW_ALIGN = 16          # windows are widened to this many bytes (any access stays inside)
SMALL_PIECE = 64 * 1024    # a piece this small comes whole rather than through a cut task
_counter = itertools.count()


_PROCESS = uuid.uuid4().hex[:8]   # keys of this client never collide with another's


def token() -> str:
    # (uuid4 per launch would read /dev/urandom: a third of a millisecond here)
    return f"{next(_counter):x}{_PROCESS}"


def safe_name(name: str) -> str:
    """Kernel names in keys: Dask splits key prefixes at '-', so keep names to [A-Za-z0-9_]."""
    return re.sub(r"[^A-Za-z0-9_]", "_", name)


@dataclass(frozen=True)
class Chunk:
    first: int
    end: int
    worker: str = None      # planned worker (a loose restriction), None: anywhere
    device: str = "cpu"

    @classmethod
    def on(cls, first: int, end: int, worker) -> "Chunk":
        """Blocks [first, end) planned on ``worker`` (a WorkerInfo), run by its device."""
        return cls(first, end, worker.address, "gpu" if worker.device == "gpu" else "cpu")


@dataclass
class Slot:
    """A buffer of a launch as the graph builder sees it."""
    pieces: PieceMap
    name: str               # "argument 1 (x)" / "module variable c"
    written: bool           # the kernel may write it
    rule: object = None     # (op, type) when only reduction atomics write it
    key: object = None      # the buffer's identity (a batch joins slots of one buffer)


# What one launch's graph gives the runtime (its stream operation wraps it in a
# dptx.runtime.stream.Submitted, with the buffers it replaced)
@dataclass
class SubmittedGraph:
    pieces: list            # per slot: the new PieceMap, or None where nothing is written
    futures: list           # everything the launch produces (to wait on and to hold)


def hull(intervals) -> tuple:
    lo = min((a for a, b in intervals if b > a), default=None)
    if lo is None:
        return None
    return lo, max(b for a, b in intervals if b > a)


def window_of(reads, writes, nbytes: int) -> tuple:
    h = hull(list(reads) + list(writes))
    if h is None:
        return 0, 0
    lo = h[0] // WINDOW_ALIGN * WINDOW_ALIGN
    hi = min(nbytes, -(-h[1] // WINDOW_ALIGN) * WINDOW_ALIGN)
    return max(0, lo), hi


def write_mode(slot: Slot, write_hulls: list) -> str:
    if not slot.written:
        return "read"
    spans = sorted(h for h in write_hulls if h is not None)
    if all(a[1] <= b[0] for a, b in zip(spans, spans[1:])):
        return "direct"
    return "merge"


def merge_ranges(pieces: PieceMap, lo: int, hi: int, page_bytes: int) -> list:
    """[lo, hi) cut where the expected holder of the current pieces changes, at page
    boundaries: each range's merge then runs where its base bytes are."""
    cuts = [lo]
    previous = None
    for p in pieces.overlapping(lo, hi):
        if previous is not None and p.worker != previous:
            c = p.start // page_bytes * page_bytes
            if cuts[-1] < c < hi:
                cuts.append(c)
        previous = p.worker
    cuts.append(hi)
    return list(zip(cuts, cuts[1:]))


class _Inputs:
    """What a task reads of current pieces: its arguments (futures, each once) and its
    *views*, (argument index, element or None), which parts and images index. A piece on the
    task's own worker (or mostly needed, or small) comes as it is; a small part of a remote
    piece, or any remote part of one output among several of a task, comes through a cut task
    run where it is (shared between the tasks of the launch), so that only its bytes travel."""

    def __init__(self, graph: GraphBuilder, cuts: dict, launch: str):
        self.graph, self.cuts, self.launch = graph, cuts, launch
        self.args, self.views = [], []
        self._arg, self._view = {}, {}

    def add(self, part: Piece, local_to=None) -> tuple:
        """(view index, offset of the part's first byte in that array); (ZERO_PART, 0) for a
        zero piece's part, which the task makes itself."""
        if part.zero:
            return tasks.ZERO_PART, 0
        local = part.worker == local_to and local_to is not None
        mostly = 2 * part.size >= part.length or part.length <= SMALL_PIECE
        if local or (mostly and part.element is None):
            return self.view(part.future, part.element), part.offset
        k = (part.future.key, part.element, part.offset, part.size)
        key = self.cuts.get(k)
        if key is None:
            key = self.cuts[k] = self.graph.task(
                f"dptx-cut-{self.launch}-{len(self.cuts)}", tasks.cut, part.future,
                part.offset, part.size, part.element)
        return self.view(TaskRef(key), None), 0

    def view(self, ref, element=None) -> int:
        """The view index of element ``element`` of a future (or TaskRef), each once."""
        arg = self._arg.get(ref.key)
        if arg is None:
            arg = self._arg[ref.key] = len(self.args)
            self.args.append(ref)
        index = self._view.get((arg, element))
        if index is None:
            index = self._view[(arg, element)] = len(self.views)
            self.views.append((arg, element))
        return index


@dataclass
class Request:
    """One launch as the graph builder sees it: its spec, its kernel image future and its
    buffers."""
    spec: tasks.LaunchSpec
    image: object
    slots: list
    model_key: str        # what the scheduler's model knows the kernel by (RawKernel.model_key)
    title: str            # its name in the CUDA source (the dashboard's)


def _chunk_windows(slots: list, row, device: str) -> tuple:
    """Per slot: the chunk's window and the hull of what it may write, from its footprint row
    ((reads, writes) per slot, or None for whole buffers)."""
    windows, writes = [], []
    for s, slot in enumerate(slots):
        n = slot.pieces.nbytes
        fp = row[s] if row is not None else None
        if fp is None or device == "gpu":
            reads, wr = [(0, n)], ([(0, n)] if slot.written else [])
        else:
            reads, wr = fp[0], (fp[1] if slot.written else [])
        windows.append(window_of(reads, wr, n))
        writes.append(hull(wr))
    return windows, writes


def _add_chunk(graph: GraphBuilder, cuts: dict, launch: str, key: str, steps: list,
               slots: list, windows: list, modes: list, writes: list, ranges: dict,
               worker, device: str, page_bytes: int, info: dict, checks=None) -> list:
    """Add one chunk task: ``steps`` are (spec, image future, first, end, chunk slot per
    launch slot); ``writes[s]`` the bytes a direct slot returns, ``checks[s]`` the bytes it
    may change (default: the same). Returns its outputs, in order, as (slot, range index or
    None)."""
    inputs = _Inputs(graph, cuts, launch)
    plans, outs = [], []
    for s, slot in enumerate(slots):
        lo, hi = windows[s]
        parts = []
        for part in slot.pieces.overlapping(lo, hi):
            index, src = inputs.add(part, local_to=worker)
            parts.append((index, src, part.start - lo, part.size))
        mode, extra = modes[s], {}
        if mode == "direct":
            if writes[s] is None:
                # this chunk writes nothing of it (others may): a private copy checked
                # unchanged afterwards, never the piece itself, which a wrong footprint
                # would let the kernel overwrite
                mode = "check"
            else:
                extra = dict(write_lo=writes[s][0], write_hi=writes[s][1])
                if checks is not None and checks[s] is not None:
                    extra.update(check_lo=checks[s][0], check_hi=checks[s][1])
                outs.append((s, None))
        elif mode == "merge":
            mine = [(r, rng) for r, rng in enumerate(ranges[s]) if rng[0] < hi and lo < rng[1]]
            extra = dict(ranges=tuple(rng for _, rng in mine))
            outs.extend((s, r) for r, _ in mine)
        plans.append(tasks.SlotWindow(lo, hi, slot.pieces.nbytes, tuple(parts), mode, **extra))
    plan_steps = tuple(tasks.Step(spec, first, end, inputs.view(image), tuple(mapping))
                       for spec, image, first, end, mapping in steps)
    plan = tasks.ChunkPlan(tuple(inputs.views), plan_steps, device, tuple(plans),
                           tuple(s.name for s in slots), page_bytes)
    graph.task(key, tasks.run_chunk, plan, *inputs.args,
               workers=[worker] if worker else None,
               allow_other_workers=True if worker else None,
               resources=RESOURCES[device], dptx=info)
    return outs


def _outputs(key: str, outs: list) -> dict:
    """(slot, range) -> (the chunk's key, element of its value or None when it has one)."""
    if len(outs) == 1:
        return {outs[0]: (key, None)}
    return {o: (key, j) for j, o in enumerate(outs)}


def submit_launch(client, request: Request, chunks: list, footprints: list, launch: str,
                  annotations: dict, page_bytes: int) -> SubmittedGraph:
    """Build and submit the graph of one launch cut into ``chunks``. ``footprints[c][s]`` is
    the (reads, writes) intervals of chunk c on slot s, None (or a None row, or None as a
    whole) for whole buffers; ``annotations`` the ``dptx`` annotation shared by the chunks
    (the plugin learns from kernel, launch, index, blocks, nblocks)."""
    graph = GraphBuilder()
    cuts: dict = {}
    spec, slots = request.spec, request.slots
    name = safe_name(spec.kernel)
    nchunks = len(chunks)
    identity = tuple(range(len(slots)))

    windows, writes = [], []
    for c, chunk in enumerate(chunks):
        w, h = _chunk_windows(slots, footprints[c] if footprints is not None else None,
                              chunk.device)
        windows.append(w)
        writes.append(h)
    modes = [write_mode(slot, [writes[c][s] for c in range(nchunks)])
             for s, slot in enumerate(slots)]

    # merge ranges of the slots written by several chunks
    ranges = {}
    for s, slot in enumerate(slots):
        if modes[s] != "merge":
            continue
        spans = [windows[c][s] for c in range(nchunks) if windows[c][s][1] > windows[c][s][0]]
        lo = min(a for a, _ in spans) // page_bytes * page_bytes
        hi = min(slot.pieces.nbytes, -(-max(b for _, b in spans) // page_bytes) * page_bytes)
        ranges[s] = merge_ranges(slot.pieces, lo, hi, page_bytes)

    chunk_keys, out_keys = [], {}          # (chunk, slot, range) -> (key, element)
    for c, chunk in enumerate(chunks):
        key = f"dptx-chunk-{name}-{launch}-{c}"
        info = dict(annotations, index=c, blocks=chunk.end - chunk.first,
                    first=chunk.first, end=chunk.end)
        outs = _add_chunk(graph, cuts, launch, key,
                          [(spec, request.image, chunk.first, chunk.end, identity)],
                          slots, windows[c], modes, writes[c], ranges, chunk.worker,
                          chunk.device, page_bytes, info)
        chunk_keys.append(key)
        for o, k in _outputs(key, outs).items():
            out_keys[(c,) + o] = k

    merge_keys = {}
    for s, rs in ranges.items():
        slot = slots[s]
        for r, (lo, hi) in enumerate(rs):
            inputs = _Inputs(graph, cuts, launch)
            layout = []
            for part in slot.pieces.overlapping(lo, hi):
                index, src = inputs.add(part)
                layout.append((index, src, part.start - lo, part.size))
            nbase = len(inputs.views)
            for c in range(nchunks):
                if (c, s, r) in out_keys:
                    key, element = out_keys[(c, s, r)]
                    inputs.view(TaskRef(key), element)
            merge_keys[(s, r)] = graph.task(
                f"dptx-merge-{name}-{launch}-{s}-{r}", tasks.merge_range, lo, hi, slot.rule,
                tuple(layout), nbase, tuple(inputs.views), *inputs.args)

    wanted = list(dict.fromkeys(chunk_keys + list(merge_keys.values())))
    futures = graph.submit(client, wanted)

    new = []
    for s, slot in enumerate(slots):
        if modes[s] == "direct":
            made = [Piece(writes[c][s][0], writes[c][s][1], futures[out_keys[(c, s, None)][0]],
                          0, chunks[c].worker, element=out_keys[(c, s, None)][1])
                    for c in range(nchunks) if (c, s, None) in out_keys]
            new.append(slot.pieces.replaced(made))
        elif modes[s] == "merge":
            made = []
            for r, (lo, hi) in enumerate(ranges[s]):
                held = slot.pieces.bytes_on(lo, hi)
                worker = max(held, key=held.get) if held else None
                made.append(Piece(lo, hi, futures[merge_keys[(s, r)]], 0, worker))
            new.append(slot.pieces.replaced(made))
        else:
            new.append(None)
    return SubmittedGraph(new, [futures[k] for k in wanted])


def submit_batch(client, requests: list, footprints: list, worker, device: str, batch: str,
                 page_bytes: int) -> tuple:
    """Consecutive small launches as one task on one worker (like a CUDA graph): each runs
    whole (its grid is one chunk), in order, over windows that are the hulls of the launches'
    windows per buffer. ``footprints[i]`` is launch i's footprint row. A fused group of one
    worker that owns everything it writes. Returns ({buffer key: new PieceMap}, futures)."""
    ranges = [(0, r.spec.grid[0] * r.spec.grid[1] * r.spec.grid[2]) for r in requests]
    return submit_fused(client, requests, [(worker, ranges, footprints, None)], batch,
                        page_bytes, {"batch": batch, "launches": len(requests)},
                        prefix=f"dptx-batch-{batch}", device=device)


def submit_fused(client, requests: list, workers: list, launch: str, page_bytes: int,
                 annotations: dict, prefix: str = None, device: str = "cpu") -> tuple:
    """A group of launches with the same shares as one task per worker (``graphs.fusion``).
    ``workers[i]`` = (address, ranges, rows, owned): the block range of each launch that the
    worker runs (its share, grown by ghost zones), the footprint row of each launch over its
    range, and per buffer key the bytes it returns (what its own blocks write; None: all it
    writes). Slots of the same buffer are joined by ``Slot.key``. Tasks are named
    ``dptx-chunk-<kernel>-<launch>-<i>`` (or ``prefix-<i>``). Returns ({buffer key: new
    PieceMap}, futures)."""
    graph = GraphBuilder()
    cuts: dict = {}
    kernels = list(dict.fromkeys(r.spec.kernel for r in requests))
    name = safe_name(kernels[0]) if len(kernels) == 1 else "fused"
    prefix = prefix or f"dptx-chunk-{name}-{launch}"
    made, keys = {}, []
    for i, (worker, ranges, rows, owned) in enumerate(workers):
        joined, order, spans, writes, steps = {}, [], [], [], []
        for request, (first, end), row in zip(requests, ranges, rows):
            windows, wrote = _chunk_windows(request.slots, row, device)
            mapping = []
            for s, slot in enumerate(request.slots):
                c = joined.get(slot.key)
                if c is None:
                    c = joined[slot.key] = len(order)
                    order.append(slot)
                    spans.append([])
                    writes.append([])
                mapping.append(c)
                if windows[s][1] > windows[s][0]:
                    spans[c].append(windows[s])
                if wrote[s] is not None:
                    writes[c].append(wrote[s])
            steps.append((request.spec, request.image, first, end, tuple(mapping)))
        if owned is None:
            owned = {slot.key: hull(writes[c]) for c, slot in enumerate(order) if writes[c]}
        slots, windows, modes, outputs, checks = [], [], [], [], []
        for c, slot in enumerate(order):
            span = hull(spans[c] + [owned[slot.key]] if slot.key in owned else spans[c])
            windows.append(span or (0, 0))
            ghost = hull(writes[c])
            if slot.key in owned:
                modes.append("direct")
                outputs.append(owned[slot.key])
                checks.append(hull([ghost, owned[slot.key]]) if ghost else owned[slot.key])
            else:
                modes.append("scratch" if ghost else "read")
                outputs.append(None)
                checks.append(None)
            if modes[-1] == "read" and any(sl.written for r in requests for sl in r.slots
                                           if sl.key == slot.key):
                modes[-1] = "check"     # the kernels may write it, the footprints say not here
            slots.append(Slot(slot.pieces, slot.name, slot.key in owned or bool(ghost), None,
                              slot.key))
        key = f"{prefix}-{i}"
        info = dict(annotations, index=i, blocks=sum(end - first for first, end in ranges),
                    share=ranges[-1][1] - ranges[-1][0])
        if "kernel" not in info:
            # several kernels: the scheduler plugin shares the chunk's time out by kernel
            info["steps"] = [(r.model_key, end - first, r.title)
                             for r, (first, end) in zip(requests, ranges)]
        outs = _add_chunk(graph, cuts, launch, key, steps, slots, windows, modes, outputs, {},
                          worker, device, page_bytes, info, checks)
        for (c, _), (out_key, element) in _outputs(key, outs).items():
            made.setdefault(order[c].key, []).append((outputs[c], out_key, element, worker,
                                                      order[c]))
        keys.append(key)
    futures = graph.submit(client, keys)
    new = {}
    for buf, parts in made.items():
        slot = parts[0][4]
        new[buf] = slot.pieces.replaced([Piece(lo, hi, futures[k], 0, w, element=e)
                                         for (lo, hi), k, e, w, _ in parts if hi > lo])
    return new, [futures[k] for k in keys]
