"""``kernel(grid, block, args, shared_mem=0)``: a launch on the cluster.

The launch is checked on the client (shapes, argument count and types) and becomes an
operation of the stream: planned from the client's copy of the scheduler plugin's model, cut
into chunks whose access footprints say which bytes of each buffer they need, and submitted as
one Dask graph (``graphs.launch``). The device arrays it may write get their new pieces at
once, and the call returns without waiting (stream order).
"""
from __future__ import annotations

import numpy as np

from . import config, runtime
from .errors import FootprintViolation, LaunchError
from .launch_config import check_arg_count, check_shape, convert_scalar
from .stream import Group, Operation, Submitted, default_stream


def _merge_facts(kernel):
    facts = getattr(kernel, "_merge_facts", None)
    if facts is None:
        from .ptx.analysis import merge_facts
        facts = kernel._merge_facts = merge_facts(kernel.module, kernel.function)
    return facts


def _fixed_chunks(nblocks: int) -> list:
    """``dptx.chunks`` set: that many equal chunks, placed by Dask."""
    from graphs.launch import Chunk
    from scheduler_plugins.planner import split
    count = max(1, min(int(config.get("chunks")), nblocks))
    return [Chunk(c.first, c.end) for c in split(None, 0, nblocks, count)]


class LaunchOp(Operation):
    """One launch: the checked arguments, and how to plan and submit it from the buffers'
    current pieces (again, after a replay)."""

    def __init__(self, kernel, grid, block, params, buffers, names, targets, shared_mem):
        self.kernel = kernel
        self.grid, self.block, self.shared_mem = grid, block, shared_mem
        self.params = tuple(params)            # ("buffer", slot) | ("scalar", value)
        self.buffers = buffers                  # DeviceBuffer per slot
        self.names = tuple(names)               # per slot, for messages
        self.targets = targets                  # per slot: {("param", i) | ("var", name)}
        self.globals = tuple((t[1], s) for s, ts in enumerate(targets) for t in sorted(ts)
                             if t[0] == "var")
        self.description = f"launch of kernel {kernel.name} (grid {grid}, block {block})"
        self.nblocks = grid[0] * grid[1] * grid[2]
        self.chunks = None                      # the plan, made once per submission

    # -- what the launch does to each buffer ---------------------------------------------------
    def _slots(self) -> list:
        from graphs.launch import Slot
        facts = _merge_facts(self.kernel)
        slots = []
        for buf, name, slot_targets in zip(self.buffers, self.names, self.targets):
            rule = None
            if facts.mergeable:
                found = {facts.reductions[t] for t in slot_targets if t in facts.reductions}
                if len(found) == 1:
                    rule = found.pop()
            written = facts.written is None or bool(slot_targets & facts.written)
            slots.append(Slot(buf.pieces, name, written, rule, id(buf)))
        return slots

    def plan(self) -> list:
        if self.chunks is None:
            facts = _merge_facts(self.kernel)
            if config.get("chunks") and facts.mergeable:
                self.chunks = _fixed_chunks(self.nblocks)
            else:
                self.chunks = runtime.get_session().planner.plan(
                    self.kernel.name, self.grid, self.block, not facts.mergeable,
                    [buf.pieces for buf in self.buffers])
        return self.chunks

    def footprints(self, ranges: list):
        from graphs import footprints
        return footprints.chunk_footprints(
            self.kernel, self.grid, self.block, self.params, self.globals,
            [buf.nbytes for buf in self.buffers], ranges)

    def request(self):
        from graphs.launch import Request
        from graphs.tasks import LaunchSpec
        spec = LaunchSpec(self.kernel.name, self.grid, self.block, int(self.shared_mem),
                          self.params, self.globals)
        return Request(spec, runtime.get_session().kernel_image(self.kernel.ptx), self._slots())

    def open_group(self):
        """A group later launches may join: a batch when the plan is one whole-grid chunk on
        a CPU worker, a fused group when it is a share per CPU worker and the launch can be
        fused (mergeable, no reduction atomics, footprints known); None otherwise."""
        chunks = self.plan()
        if len(chunks) == 1 and chunks[0].device == "cpu" and chunks[0].worker is not None:
            return _BatchGroup(chunks[0].worker, self) if config.get("batch") else None
        shares = self.shares()
        if shares is not None and config.get("fuse") and self.fusable():
            return _FusedGroup(shares, self)
        return None

    def shares(self):
        """The plan as one contiguous share per worker, ((worker, first, end), ...), or None
        when it is not of that form (a chunk anywhere, a GPU chunk, a worker twice)."""
        out = []
        for c in self.plan():
            if c.worker is None or c.device != "cpu":
                return None
            if out and out[-1][0] == c.worker and out[-1][2] == c.first:
                out[-1] = (c.worker, out[-1][1], c.end)
            else:
                out.append((c.worker, c.first, c.end))
        if len({w for w, _, _ in out}) != len(out):
            return None
        return tuple(out)

    def fusable(self) -> bool:
        facts = _merge_facts(self.kernel)
        if not facts.mergeable or any(slot.rule is not None for slot in self._slots()):
            return False
        return self.footprints([(0, self.nblocks)]) is not None

    # -- the stream operation ------------------------------------------------------------------
    def submit(self) -> Submitted:
        from graphs.launch import submit_launch, token
        from graphs.plan import edges_apart

        session = runtime.get_session()
        chunks = self.plan()
        self.chunks = None                      # a replay plans again
        fps = self.footprints([(c.first, c.end) for c in chunks])
        maps = [buf.pieces for buf in self.buffers]
        apart = edges_apart(chunks, fps, maps, self.grid)
        if apart is not chunks:
            chunks, fps = apart, self.footprints([(c.first, c.end) for c in apart])
        launch = token()
        done = submit_launch(session.client, self.request(), chunks, fps, launch,
                             {"kernel": self.kernel.name, "launch": launch,
                              "nblocks": self.nblocks}, int(config.get("page-bytes")))
        changed, before = [], []
        for buf, old, new in zip(self.buffers, maps, done.pieces):
            if new is not None:
                buf.pieces = new
                changed.append(buf)
                before.append(old)
        return Submitted(changed, before, done.futures)

    def footprint_violated(self, exc: FootprintViolation) -> bool:
        from graphs import footprints
        if footprints.distrusted(self.kernel.ptx, self.kernel.name):
            return False    # it ran with whole buffers already: this cannot be a footprint
        footprints.distrust(self.kernel.ptx, self.kernel.name, str(exc))
        return True


class Batch(Operation):
    """Consecutive small launches in stream order, run as one task on one worker (like a CUDA
    graph): a launch too small to be worth splitting costs a Dask task round trip otherwise.
    An error names the launch that raised it; the launches before it keep their results."""

    def __init__(self, worker: str, ops: list):
        self.worker = worker
        self.ops = list(ops)

    @property
    def description(self):
        return f"a batch of {len(self.ops)} launches"

    def submit(self) -> Submitted:
        from graphs.launch import submit_batch, token

        session = runtime.get_session()
        requests = [op.request() for op in self.ops]
        rows = []
        for op in self.ops:
            op.chunks = None
            fps = op.footprints([(0, op.nblocks)])
            rows.append(fps[0] if fps is not None else None)
        buffers = {id(b): b for op in self.ops for b in op.buffers}
        before = {k: b.pieces for k, b in buffers.items()}
        new, futures = submit_batch(session.client, requests, rows, self.worker, "cpu",
                                    token(), int(config.get("page-bytes")))
        for k, pieces in new.items():
            buffers[k].pieces = pieces
        return Submitted([buffers[k] for k in new], [before[k] for k in new], futures)

    def footprint_violated(self, exc: FootprintViolation) -> bool:
        """Distrust the kernels the violation names (all of the batch's if it names none)."""
        named = {k.strip() for k in str(getattr(exc, "kernel", "")).split(",")} - {""}
        replay = False
        for op in self.ops:
            if not named or op.kernel.name in named:
                replay |= op.footprint_violated(exc)
        return replay

    def succeeded_before(self, exc):
        """The launches before the one that raised ``exc`` (to run again), and that one's
        description."""
        step = getattr(exc, "dptx_step", None)
        if step is None or not 0 <= step < len(self.ops):
            return None, self.description
        ops = self.ops[:step]
        position = f"launch {step + 1} of {len(self.ops)} batched into one task"
        return (Batch(self.worker, ops) if ops else None,
                f"{self.ops[step].description}, {position}")


class _BatchGroup(Group):
    """Small launches in a row on one worker (see ``Batch``)."""

    def __init__(self, worker: str, op: LaunchOp):
        self.worker, self.ops = worker, [op]

    def accept(self, op) -> bool:
        if not isinstance(op, LaunchOp):
            return False
        chunks = op.plan()
        if len(chunks) == 1 and chunks[0].device == "cpu" and chunks[0].worker == self.worker:
            self.ops.append(op)
            return True
        return False

    def operations(self) -> list:
        return [self.ops[0] if len(self.ops) == 1 else Batch(self.worker, self.ops)]


class _FusedGroup(Group):
    """Launches in a row with the same shares (see ``Fused``)."""
    limit = 32          # a group is one task per worker: few enough that they pipeline

    def __init__(self, shares: tuple, op: LaunchOp):
        self.shares, self.ops = shares, [op]

    def accept(self, op) -> bool:
        if isinstance(op, LaunchOp) and op.nblocks == self.ops[0].nblocks and \
                op.shares() == self.shares and op.fusable():
            self.ops.append(op)
            return True
        return False

    def operations(self) -> list:
        """The longest runs of the group that fuse (the ghost zones of a long run of
        stencil launches may outgrow their limit: then shorter runs), each as one ``Fused``;
        launches that fuse with nothing, alone."""
        out, i, ops = [], 0, self.ops
        while i < len(ops):
            best, low, high = None, 2, len(ops) - i     # the longest run from i that fuses
            while low <= high:
                size = (low + high) // 2
                fused = Fused(self.shares, ops[i:i + size])
                if fused.plan() is not None:
                    best, low = fused, size + 1
                else:
                    high = size - 1
            out.append(best if best is not None else ops[i])
            i += len(best.ops) if best is not None else 1
        return out


class Fused(Operation):
    """Consecutive launches with the same shares of blocks, as one task per worker that runs
    its share of each launch in turn (``graphs.fusion``): one Dask round trip and one set of
    window copies for the group. Where a launch reads what an earlier one wrote on another
    worker's share, each worker also computes those blocks (ghost zones); where that cannot
    be made to work, the launches are submitted one by one."""

    def __init__(self, shares: tuple, ops: list):
        self.shares, self.ops = shares, list(ops)
        self._plan_made = False
        self._plan = None
        self._alone = None      # per launch, its futures, when they ran one by one

    @property
    def description(self):
        return f"a group of {len(self.ops)} fused launches"

    def _footprint(self, j: int, first: int, end: int) -> dict:
        op = self.ops[j]
        rows = op.footprints([(first, end)])
        if rows is None or rows[0] is None:
            raise _NotFusable
        out = {}
        for buf, (reads, writes) in zip(op.buffers, rows[0]):
            r, w = out.setdefault(id(buf), ([], []))
            r.extend(reads)
            w.extend(writes)
        return out

    def plan(self):
        """Per worker: (address, ranges, footprint rows, owned bytes per buffer), or None
        when the group cannot run fused (worked out once per submission)."""
        if not self._plan_made:
            self._plan, self._plan_made = self._fuse(), True
        return self._plan

    def _fuse(self):
        from graphs.fusion import Cached, extend_ranges, owned_outputs
        from graphs.plan import grid_unit
        fp = Cached(self._footprint)
        n, grid = self.ops[0].nblocks, self.ops[0].grid
        unit = grid_unit(grid, len(self.shares))
        try:
            owned = owned_outputs(fp, len(self.ops), [(a, b) for _, a, b in self.shares])
            if owned is None:
                return None
            out = []
            for (worker, a, b), mine in zip(self.shares, owned):
                # ghost zones of at most an eighth of the share on each side: what they
                # cost in computing twice must stay below what a task round trip costs
                ranges = extend_ranges(fp, len(self.ops), (a, b), n, unit,
                                       limit=max(unit, (b - a) // 8))
                if ranges is None:
                    return None
                rows = [op.footprints([r])[0] for op, r in zip(self.ops, ranges)]
                out.append((worker, ranges, rows, mine))
            return out
        except _NotFusable:
            return None

    def submit(self) -> Submitted:
        from graphs.launch import submit_fused, token
        plan = self.plan()
        self._plan_made = False                 # a replay works it out again
        self._alone = None
        if plan is None:
            return self._one_by_one()
        session = runtime.get_session()
        buffers = {id(b): b for op in self.ops for b in op.buffers}
        before = {k: b.pieces for k, b in buffers.items()}
        launch = token()
        kernels = {op.kernel.name for op in self.ops}
        annotations = {"kernel": self.ops[0].kernel.name, "launch": launch,
                       "nblocks": self.ops[0].nblocks}
        if len(kernels) > 1:
            annotations = {"launch": launch}
        new, futures = submit_fused(session.client, [op.request() for op in self.ops], plan,
                                    launch, int(config.get("page-bytes")), annotations)
        for k, pieces in new.items():
            buffers[k].pieces = pieces
        return Submitted([buffers[k] for k in new], [before[k] for k in new], futures)

    def _one_by_one(self) -> Submitted:
        buffers, before, futures = [], [], []
        self._alone = []
        for op in self.ops:
            sub = op.submit()
            self._alone.append(sub.futures)
            for buf, old in zip(sub.buffers, sub.before):
                if all(buf is not b for b in buffers):
                    buffers.append(buf)
                    before.append(old)
            futures.extend(sub.futures)
        return Submitted(buffers, before, futures)

    def footprint_violated(self, exc: FootprintViolation) -> bool:
        return Batch.footprint_violated(self, exc)

    def succeeded_before(self, exc):
        if self._alone is not None:     # ran one by one: the first launch that failed
            step = next((i for i, fs in enumerate(self._alone)
                         if any(f.status in ("error", "cancelled") for f in fs)), None)
        else:
            step = getattr(exc, "dptx_step", None)
        if step is None or not 0 <= step < len(self.ops):
            return None, self.description
        ops = self.ops[:step]
        position = f"launch {step + 1} of {len(self.ops)} fused into one task per worker"
        redo = None if not ops else (ops[0] if len(ops) == 1 else Fused(self.shares, ops))
        return redo, f"{self.ops[step].description}, {position}"


class _NotFusable(Exception):
    """A launch of the group has no footprint (distrusted or not analysable)."""


def launch(kernel, grid, block, args, shared_mem: int = 0):
    from .array import ndarray

    g, b = check_shape(grid, block, shared_mem)
    check_arg_count(kernel, args)
    buffers, slot_of, targets, names, params = [], {}, [], [], []

    def slot_for(buf, target, name):
        slot = slot_of.get(id(buf))
        if slot is None:
            slot = slot_of[id(buf)] = len(buffers)
            buffers.append(buf)
            targets.append(set())
            names.append(name)
        targets[slot].add(target)
        return slot

    for i, (p, a) in enumerate(zip(kernel.params, args)):
        if isinstance(a, ndarray):
            if p.size != 8 or p.type not in ("u64", "b64", "s64"):
                raise LaunchError(f"argument {i} ({p.name}: .{p.type}) of kernel {kernel.name} "
                                  f"is not a pointer, got a dptx.ndarray")
            params.append(("buffer", slot_for(a._buffer, ("param", i), f"argument {i} ({p.name})")))
        elif isinstance(a, np.ndarray) and a.ndim > 0:
            raise LaunchError(f"argument {i} ({p.name}) of kernel {kernel.name} is a numpy array; "
                              f"device arguments must be dptx arrays (dptx.asarray(x))")
        else:
            params.append(("scalar", convert_scalar(p, i, a, kernel.name)))
    for name, buf in kernel.raw_module.global_buffers().items():
        slot_for(buf, ("var", name), f"module variable {name}")
    default_stream.enqueue(LaunchOp(kernel, g, b, params, buffers, names, targets, shared_mem))
