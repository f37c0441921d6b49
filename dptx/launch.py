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
from .stream import Operation, Submitted, default_stream


def _merge_facts(kernel):
    facts = getattr(kernel, "_merge_facts", None)
    if facts is None:
        from .ptx.analysis import merge_facts
        facts = kernel._merge_facts = merge_facts(kernel.module, kernel.function)
    return facts


def _fixed_chunks(nblocks: int, session) -> list:
    """``dptx.chunks`` set: that many equal chunks, placed by Dask."""
    from graphs.launch import Chunk
    from scheduler_plugins.planner import split
    count = max(1, min(int(config.get("chunks")), nblocks))
    return [Chunk(c.first, c.end) for c in split(None, 0, nblocks, count)]


class LaunchOp(Operation):
    """One launch: the checked arguments, and how to submit it from the buffers' current
    pieces (again, after a replay)."""

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

    def submit(self) -> Submitted:
        from graphs import footprints
        from graphs.launch import Slot, submit_launch, token
        from graphs.tasks import LaunchSpec

        session = runtime.get_session()
        facts = _merge_facts(self.kernel)
        rules, writes = [], []
        for slot_targets in self.targets:
            rule = None
            if facts.mergeable:
                found = {facts.reductions[t] for t in slot_targets if t in facts.reductions}
                if len(found) == 1:
                    rule = found.pop()
            rules.append(rule)
            writes.append(facts.written is None or bool(slot_targets & facts.written))

        maps = [buf.pieces for buf in self.buffers]
        nblocks = self.grid[0] * self.grid[1] * self.grid[2]
        if config.get("chunks") and facts.mergeable:
            chunks = _fixed_chunks(nblocks, session)
        else:
            chunks = session.planner.plan(self.kernel.name, self.grid, self.block,
                                          not facts.mergeable, maps)
        fps = footprints.chunk_footprints(
            self.kernel, self.grid, self.block, self.params, self.globals,
            [buf.nbytes for buf in self.buffers], [(c.first, c.end) for c in chunks])
        launch = token()
        spec = LaunchSpec(self.kernel.name, self.grid, self.block, int(self.shared_mem),
                          self.params, self.globals, self.names, int(config.get("page-bytes")))
        slots = [Slot(m, n, w, r) for m, n, w, r in zip(maps, self.names, writes, rules)]
        done = submit_launch(session.client, session.kernel_image(self.kernel.ptx), spec,
                             slots, chunks, fps, launch,
                             {"kernel": self.kernel.name, "launch": launch, "nblocks": nblocks})
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
