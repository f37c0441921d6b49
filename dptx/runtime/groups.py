"""Launches run together (DESIGN.md point 7: cheap launches): a ``Batch`` of small launches
in a row on one worker (one task), and ``Fused`` launches with the same shares of blocks (one
task per worker, ghost zones where a launch reads what another worker's share wrote, see
``graphs.fusion``). The stream forms them through ``BatchGroup`` and ``FusedGroup``; their
launches are ``dptx.runtime.kernel_launch.LaunchOp``s (``kind == "launch"``: plan, footprints, request,
shares...). An error names the launch that raised it; the launches before it keep their
results."""
from __future__ import annotations

from .. import config
from ..errors import FootprintViolation
from . import cluster as runtime
from .stream import Group, Operation, Submitted
from graphs.fusion import Cached, extend_ranges, owned_outputs
from graphs.launch import submit_batch, submit_fused, token
from graphs.plan import grid_unit


class Batch(Operation):
    """Consecutive small launches in stream order, run as one task on one worker (like a CUDA
    graph): a launch too small to be worth splitting costs a Dask task round trip otherwise.
    An error names the launch that raised it; the launches before it keep their results."""

    def __init__(self, worker: str, ops: list, device: str = "cpu"):
        self.worker, self.device = worker, device
        self.ops = list(ops)

    @property
    def description(self):
        return f"a batch of {len(self.ops)} launches"

    def submit(self) -> Submitted:

        session = runtime.get_session()
        requests = [op.request() for op in self.ops]
        rows = []
        for op in self.ops:
            op.chunks = None
            fps = op.footprints([(0, op.nblocks)])
            rows.append(fps[0] if fps is not None else None)
        buffers = {id(b): b for op in self.ops for b in op.buffers}
        before = {k: b.pieces for k, b in buffers.items()}
        new, futures = submit_batch(session.client, requests, rows, self.worker, self.device,
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
        return (Batch(self.worker, ops, self.device) if ops else None,
                f"{self.ops[step].description}, {position}")


class BatchGroup(Group):
    """Small launches in a row on one worker and device kind (see ``Batch``)."""

    def __init__(self, worker: str, device: str, op):
        self.worker, self.device, self.ops = worker, device, [op]

    def accept(self, op) -> bool:
        if getattr(op, "kind", None) != "launch":
            return False
        chunks = op.plan()
        if len(chunks) == 1 and chunks[0].device == self.device and \
                chunks[0].worker == self.worker:
            self.ops.append(op)
            return True
        return False

    def operations(self) -> list:
        return [self.ops[0] if len(self.ops) == 1 else
                Batch(self.worker, self.ops, self.device)]


class FusedGroup(Group):
    """Launches in a row with the same shares (see ``Fused``)."""
    limit = 32          # a group is one task per worker: few enough that they pipeline

    def __init__(self, shares: tuple, op):
        self.shares, self.ops = shares, [op]

    def accept(self, op) -> bool:
        if getattr(op, "kind", None) == "launch" and op.nblocks == self.ops[0].nblocks and \
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
        plan = self.plan()
        self._plan_made = False                 # a replay works it out again
        self._alone = None
        if plan is None:
            return self._one_by_one()
        session = runtime.get_session()
        buffers = {id(b): b for op in self.ops for b in op.buffers}
        before = {k: b.pieces for k, b in buffers.items()}
        launch = token()
        kernels = {op.kernel.model_key for op in self.ops}
        annotations = {"kernel": self.ops[0].kernel.model_key, "title": self.ops[0].kernel.title,
                       "launch": launch,
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
