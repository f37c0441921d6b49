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
``dptx`` annotation), ``dptx-out-...`` (one output of a chunk with several),
``dptx-cut-...``, ``dptx-merge-<kernel>-<launch>-<slot>-<r>``.
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
_counter = itertools.count()


def token() -> str:
    return f"{next(_counter):x}{uuid.uuid4().hex[:8]}"


def safe_name(name: str) -> str:
    """Kernel names in keys: Dask splits key prefixes at '-', so keep names to [A-Za-z0-9_]."""
    return re.sub(r"[^A-Za-z0-9_]", "_", name)


@dataclass(frozen=True)
class Chunk:
    first: int
    end: int
    worker: str = None      # planned worker (a loose restriction), None: anywhere
    device: str = "cpu"


@dataclass
class Slot:
    """A buffer of a launch as the graph builder sees it."""
    pieces: PieceMap
    name: str               # "argument 1 (x)" / "module variable c"
    written: bool           # the kernel may write it
    rule: object = None     # (op, type) when only reduction atomics write it


@dataclass
class Submitted:
    pieces: list            # per slot: the new PieceMap, or None where nothing is written
    futures: list           # everything the launch produces (to wait on and to hold)
    modes: list             # per slot: "read", "direct" or "merge"


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
    """The parts of current pieces a task reads, as (input index, src offset) pairs; small
    parts of remote pieces become cut tasks (shared between the tasks of the launch)."""

    def __init__(self, graph: GraphBuilder, cuts: dict, launch: str):
        self.graph, self.cuts, self.launch = graph, cuts, launch
        self.args, self._index = [], {}

    def add(self, part: Piece, local_to=None) -> tuple:
        if part.worker == local_to or 2 * part.size >= part.length:
            ref, src = part.future, part.offset
        else:
            k = (part.future.key, part.offset, part.size)
            key = self.cuts.get(k)
            if key is None:
                key = self.cuts[k] = self.graph.task(
                    f"dptx-cut-{self.launch}-{len(self.cuts)}", tasks.cut, part.future,
                    part.offset, part.size)
            ref, src = TaskRef(key), 0
        name = ref.key
        if name not in self._index:
            self._index[name] = len(self.args)
            self.args.append(ref)
        return self._index[name], src


def submit_launch(client, image, spec: tasks.LaunchSpec, slots: list, chunks: list,
                  footprints: list, launch: str, annotations: dict) -> Submitted:
    """Build and submit the graph of one launch. ``image`` is the kernel image future;
    ``footprints[c][s]`` the (reads, writes) intervals of chunk c on slot s, or None for the
    whole buffer; ``annotations`` the ``dptx`` annotation shared by the chunks (the plugin
    learns from kernel, launch, index, blocks)."""
    graph = GraphBuilder()
    cuts: dict = {}
    name = safe_name(spec.kernel)
    nchunks = len(chunks)

    # windows and write footprints
    windows, writes = [], []
    for c, chunk in enumerate(chunks):
        row_w, row_h = [], []
        for s, slot in enumerate(slots):
            n = slot.pieces.nbytes
            fp = footprints[c][s] if footprints is not None else None
            if fp is None or chunk.device == "gpu":
                reads, wr = [(0, n)], [(0, n)] if slot.written else []
            else:
                reads, wr = fp
                wr = wr if slot.written else []
            row_w.append(window_of(reads, wr, n))
            row_h.append(hull(wr))
        windows.append(row_w)
        writes.append(row_h)
    modes = [write_mode(slot, [writes[c][s] for c in range(nchunks)])
             for s, slot in enumerate(slots)]

    # merge ranges of the slots written by several chunks
    ranges = {}
    for s, slot in enumerate(slots):
        if modes[s] != "merge":
            continue
        spans = [windows[c][s] for c in range(nchunks) if windows[c][s][1] > windows[c][s][0]]
        if not spans:
            modes[s] = "read"
            continue
        lo = min(a for a, _ in spans) // spec.page_bytes * spec.page_bytes
        hi = min(slot.pieces.nbytes, -(-max(b for _, b in spans) // spec.page_bytes) * spec.page_bytes)
        ranges[s] = merge_ranges(slot.pieces, lo, hi, spec.page_bytes)

    # chunk tasks
    chunk_keys, outputs = [], []      # outputs[c] = list of (slot, range index or None)
    for c, chunk in enumerate(chunks):
        inputs = _Inputs(graph, cuts, launch)
        plans, outs = [], []
        for s, slot in enumerate(slots):
            lo, hi = windows[c][s]
            parts = []
            for part in slot.pieces.overlapping(lo, hi):
                index, src = inputs.add(part, local_to=chunk.worker)
                parts.append((index, src, part.start - lo, part.size))
            mode = modes[s]
            extra = {}
            if mode == "direct":
                w = writes[c][s]
                if w is None:
                    mode = "read"     # this chunk writes nothing of it; the kernel may elsewhere
                else:
                    extra = dict(write_lo=w[0], write_hi=w[1])
                    outs.append((s, None))
            elif mode == "merge":
                mine = tuple((r, rng) for r, rng in enumerate(ranges[s])
                             if rng[0] < hi and lo < rng[1])
                extra = dict(ranges=tuple(rng for _, rng in mine))
                outs.extend((s, r) for r, _ in mine)
            plans.append(tasks.SlotWindow(lo, hi, slot.pieces.nbytes, tuple(parts),
                                          "read" if mode == "read" else mode, **extra))
        plan = tasks.ChunkPlan(chunk.first, chunk.end, chunk.device, tuple(plans))
        info = dict(annotations, index=c, blocks=chunk.end - chunk.first)
        key = graph.task(
            f"dptx-chunk-{name}-{launch}-{c}", tasks.run_chunk, spec, plan, image, *inputs.args,
            workers=[chunk.worker] if chunk.worker else None,
            allow_other_workers=True if chunk.worker else None,
            resources=RESOURCES[chunk.device], dptx=info)
        chunk_keys.append(key)
        outputs.append(outs)

    # outputs: the chunk's value itself, or one getitem per output
    out_keys = {}                     # (chunk, slot, range) -> key
    for c, outs in enumerate(outputs):
        if len(outs) == 1:
            out_keys[(c,) + outs[0]] = chunk_keys[c]
            continue
        for j, (s, r) in enumerate(outs):
            out_keys[(c, s, r)] = graph.task(f"dptx-out-{name}-{launch}-{c}-{j}", tasks.output,
                                             TaskRef(chunk_keys[c]), j)

    # merges
    merge_keys = {}
    for s, rs in ranges.items():
        slot = slots[s]
        for r, (lo, hi) in enumerate(rs):
            inputs = _Inputs(graph, cuts, launch)
            layout = []
            for part in slot.pieces.overlapping(lo, hi):
                index, src = inputs.add(part)
                layout.append((index, src, part.start - lo, part.size))
            runs = [TaskRef(out_keys[(c, s, r)]) for c in range(nchunks) if (c, s, r) in out_keys]
            merge_keys[(s, r)] = graph.task(
                f"dptx-merge-{name}-{launch}-{s}-{r}", tasks.merge_range, lo, hi, slot.rule,
                tuple(layout), len(inputs.args), *inputs.args, *runs)

    wanted = list(dict.fromkeys(chunk_keys + list(out_keys.values()) + list(merge_keys.values())))
    futures = graph.submit(client, wanted)

    # the new versions
    new = []
    for s, slot in enumerate(slots):
        if modes[s] == "direct":
            made = [Piece(writes[c][s][0], writes[c][s][1], futures[out_keys[(c, s, None)]],
                          0, chunks[c].worker)
                    for c in range(nchunks) if (c, s, None) in out_keys
                    and writes[c][s][1] > writes[c][s][0]]
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
    return Submitted(new, [futures[k] for k in wanted], modes)
