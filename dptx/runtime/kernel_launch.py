"""``kernel(grid, block, args, shared_mem=0)``: a launch on the cluster.

The launch is checked on the client (shapes, argument count and types) and becomes an
operation of the stream: planned from the client's copy of the scheduler plugin's model, cut
into chunks whose access footprints say which bytes of each buffer they need, and submitted as
one Dask graph (``graphs.launch``). The device arrays it may write get their new pieces at
once, and the call returns without waiting (stream order).
"""
from __future__ import annotations

import itertools
import logging

import numpy as np

from .. import config
from ..demangle import name_in_source
from ..device.launch_config import (MAX_COOPERATIVE_BLOCKS, check_arg_count, check_shape,
                                    convert_scalar)
from ..errors import FootprintViolation, LaunchError
from ..ptx.analysis import merge_facts
from . import cluster as runtime
from . import device_addresses
from .device_addresses import MemoryPointer
from .groups import BatchGroup, FusedGroup
from .handle import LaunchHandle
from .ndarray import ndarray
from .stream import Operation, Submitted, stream_for
from graphs import footprints
from graphs.launch import Chunk, Request, Slot, submit_launch, token
from graphs.plan import edges_apart
from graphs.tasks import LaunchSpec
from scheduler_plugins.planner import split


def _merge_facts(kernel):
    facts = getattr(kernel, "_merge_facts", None)
    if facts is None:
        facts = kernel._merge_facts = merge_facts(kernel.module, kernel.function)
    return facts


def _gpu_can_take(kernel) -> bool:
    """False (said once per kernel in the log) when no GPU worker could run the kernel's
    chunks: the launch is then planned onto CPU workers."""
    reason = getattr(kernel, "_gpu_refusal", False)
    if reason is False:
        # lazy: a client loads the GPU executor (and the CUDA bindings) only for a cluster
        # with GPU workers
        from ..gpu.loadable import gpu_refusal
        reason = kernel._gpu_refusal = gpu_refusal(kernel)
    if reason is not None and kernel.name not in _refused:
        _refused.add(kernel.name)
        logger.warning("kernel %s runs on CPU workers only: %s", kernel.name, reason)
    return reason is None


_refused: set = set()
logger = logging.getLogger("dptx.launch")


def _fixed_chunks(nblocks: int) -> list:
    """``dptx.chunks`` set: that many equal chunks, placed by Dask (round robin on the
    workers ``dptx.workers`` names, where it is set)."""
    count = max(1, min(int(config.get("chunks")), nblocks))
    pieces = split(None, 0, nblocks, count)
    if config.get("workers") is None:
        return [Chunk(c.first, c.end) for c in pieces]
    workers = runtime.get_session().model.workers()
    return [Chunk.on(c.first, c.end, w) for c, w in zip(pieces, itertools.cycle(workers))]


class LaunchOp(Operation):
    """One launch: the checked arguments, and how to plan and submit it from the buffers'
    current pieces (again, after a replay)."""
    kind = "launch"

    def __init__(self, kernel, grid, block, params, buffers, names, targets, shared_mem,
                 cooperative: bool = False):
        self.kernel = kernel
        self.cooperative = cooperative          # every block at once: one chunk, CPU
        self.grid, self.block, self.shared_mem = grid, block, shared_mem
        # ("buffer", (slot, byte offset)) | ("scalar", value) | ("struct", (bytes, ((byte in
        # the struct, slot, byte offset), ...))): a struct by value holding device pointers
        self.params = tuple(params)
        self.buffers = buffers                  # DeviceBuffer per slot
        self.names = tuple(names)               # per slot, for messages
        self.targets = targets  # per slot: {("param", i) | ("var", name) | ("struct", i, byte)}
        self.globals = tuple((t[1], s) for s, ts in enumerate(targets) for t in sorted(ts)
                             if t[0] == "var")
        self.description = f"launch of kernel {kernel.title} (grid {grid}, block {block})"
        self.nblocks = grid[0] * grid[1] * grid[2]
        self.chunks = None                      # the plan, made once per submission
        self.unwritten = None                   # initcheck: per slot, bytes nothing wrote

    # -- what the launch does to each buffer ---------------------------------------------------
    def _slots(self) -> list:
        facts = _merge_facts(self.kernel)
        slots = []
        for buf, name, slot_targets in zip(self.buffers, self.names, self.targets):
            rule = None
            if facts.mergeable:
                found = {facts.reductions[t] for t in slot_targets if t in facts.reductions}
                if len(found) == 1:
                    rule = found.pop()
            # (a buffer a struct argument points to is reached by pointers the analysis
            # cannot follow: taken as written)
            written = facts.written is None or bool(slot_targets & facts.written) or \
                any(t[0] == "struct" for t in slot_targets)
            slots.append(Slot(buf.pieces, name, written, rule, id(buf)))
        return slots

    def plan(self) -> list:
        if self.chunks is None:
            facts = _merge_facts(self.kernel)
            if config.get("chunks") and facts.mergeable and not self.cooperative:
                self.chunks = _fixed_chunks(self.nblocks)
            else:
                split = config.get("split")
                if split not in ("adaptive", "even"):
                    raise LaunchError(f"dptx.split is {split!r}: it must be 'adaptive' or "
                                      f"'even'")
                planner = runtime.get_session().planner
                # (a cooperative launch runs as one chunk, on a CPU worker: its blocks meet
                # at grid.sync(), which neither chunks on several workers nor the GPU path's
                # block ranges could do)
                gpu = not self.cooperative and \
                    (not planner.has_gpus() or _gpu_can_take(self.kernel))
                self.chunks = planner.plan(
                    self.kernel.model_key, self.grid, self.block,
                    not facts.mergeable or self.cooperative,
                    [buf.pieces for buf in self.buffers], split=split, gpu=gpu)
        return self.chunks

    def footprints(self, ranges: list):
        return footprints.chunk_footprints(
            self.kernel, self.grid, self.block, self.params, self.globals,
            [buf.nbytes for buf in self.buffers], ranges)

    def request(self):
        # initcheck (dptx sanitize): what nothing wrote in each buffer before this launch
        unwritten = self.unwritten or ()
        spec = LaunchSpec(self.kernel.name, self.grid, self.block, int(self.shared_mem),
                          self.params, self.globals, self.cooperative,
                          config.get("kernel-timeout"), unwritten,
                          tuple(getattr(self.kernel, "source_parameters", None) or ()) or None)
        return Request(spec, runtime.get_session().kernel_image(self.kernel.ptx), self._slots(),
                       self.kernel.model_key, self.kernel.title)

    def open_group(self):
        """A group later launches may join: a batch when the plan is one whole-grid chunk on
        one worker (its CPU or its GPU), a fused group when it is a share per CPU worker and
        the launch can be fused (mergeable, no reduction atomics, footprints known); None
        otherwise. (GPU chunks take whole buffers, so there are no ghost zones to fuse by.)"""
        chunks = self.plan()
        if len(chunks) == 1 and chunks[0].worker is not None:
            return BatchGroup(chunks[0].worker, chunks[0].device, self) \
                if config.get("batch") else None
        shares = self.shares()
        if shares is not None and config.get("fuse") and self.fusable():
            return FusedGroup(shares, self)
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

    def account_writes(self) -> None:
        """initcheck (dptx sanitize), in stream order as the launch is queued: what nothing
        wrote in each buffer before it (``unwritten``, for its chunks), then the bytes it may
        write count as written: its footprint's writes where known, else each buffer it may
        write, whole."""
        self.unwritten = tuple(tuple(buf.unwritten) for buf in self.buffers)
        if not any(self.unwritten):
            self.unwritten = None
            return
        fps = self.footprints([(0, self.nblocks)])
        for k, (buf, slot) in enumerate(zip(self.buffers, self._slots())):
            if not buf.unwritten or not slot.written:
                continue
            if fps is None or fps[0] is None:
                buf.written(0, buf.nbytes)
                continue
            for lo, hi in fps[0][k][1]:
                buf.written(lo, hi)

    # -- the stream operation ------------------------------------------------------------------
    def submit(self) -> Submitted:

        session = runtime.get_session()
        chunks = self.plan()
        self.chunks = None                      # a replay plans again
        fps = self.footprints([(c.first, c.end) for c in chunks])
        maps = [buf.pieces for buf in self.buffers]
        # (a kernel whose chunks cannot be merged runs whole: its blocks share what they
        # write through atomics or read each other's stores, and cut apart they would not)
        mergeable = _merge_facts(self.kernel).mergeable
        apart = chunks if self.cooperative or not mergeable else \
            edges_apart(chunks, fps, maps, self.grid)
        if apart is not chunks:
            chunks, fps = apart, self.footprints([(c.first, c.end) for c in apart])
        launch = token()
        done = submit_launch(session.client, self.request(), chunks, fps, launch,
                             {"kernel": self.kernel.model_key, "title": self.kernel.title, "launch": launch,
                              "nblocks": self.nblocks}, int(config.get("page-bytes")))
        changed, before = [], []
        for buf, old, new in zip(self.buffers, maps, done.pieces):
            if new is not None:
                buf.pieces = new
                changed.append(buf)
                before.append(old)
        return Submitted(changed, before, done.futures)

    def footprint_violated(self, exc: FootprintViolation) -> bool:
        if footprints.distrusted(self.kernel.ptx, self.kernel.name):
            return False    # it ran with whole buffers already: this cannot be a footprint
        footprints.distrust(self.kernel.ptx, self.kernel.name, str(exc))
        return True


def _is_address(param, value) -> bool:
    """An integer argument of a 64-bit integer parameter that is a device address handed out
    by ``a.data.ptr``."""
    return param.size == 8 and param.type in ("u64", "b64", "s64") and \
        isinstance(value, (int, np.integer)) and not isinstance(value, bool) and \
        device_addresses.in_range(int(value))


def _check_address(buf, offset: int, where: str) -> None:
    if not 0 <= offset <= buf.nbytes:
        raise LaunchError(f"{where}: the address is {offset} bytes into a {buf.nbytes}-byte "
                          f"array, outside it")


def launch(kernel, grid, block, args, shared_mem: int = 0, stream=None, cooperative=False):
    try:
        return _launch(kernel, grid, block, args, shared_mem, stream, bool(cooperative))
    except LaunchError as exc:
        raise name_in_source(exc, [kernel]) from None


def _launch(kernel, grid, block, args, shared_mem: int, stream, cooperative: bool):

    g, b = check_shape(grid, block, shared_mem)
    check_arg_count(kernel, args, on_cluster=True)
    if cooperative and g[0] * g[1] * g[2] > MAX_COOPERATIVE_BLOCKS:
        raise LaunchError(f"cooperative launch of kernel {kernel.name}: its "
                          f"{g[0] * g[1] * g[2]} blocks must all run at once, and at most "
                          f"{MAX_COOPERATIVE_BLOCKS} can (too large for a cooperative launch, "
                          f"as cudaErrorCooperativeLaunchTooLarge)")
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
            if not (a.flags.c_contiguous or a.flags.f_contiguous):
                raise LaunchError(f"argument {i} ({p.name}) of kernel {kernel.name} is a "
                                  f"non-contiguous view (shape {a.shape}, strides {a.strides}"
                                  f"): a kernel receives a pointer to its first element, and "
                                  f"takes C- or F-contiguous arrays (the elements one after "
                                  f"the other); pass dptx.ascontiguousarray(x) or "
                                  f"dptx.asfortranarray(x)")
            slot = slot_for(a._buffer, ("param", i), f"argument {i} ({p.name})")
            # the buffer's pointer plus the array's offset in it (a view: d_ptr + n)
            params.append(("buffer", (slot, a._offset)))
        elif isinstance(a, np.ndarray) and a.ndim > 0 and a.dtype.fields is None:
            raise LaunchError(f"argument {i} ({p.name}) of kernel {kernel.name} is a numpy array; "
                              f"device arguments must be dptx arrays (dptx.asarray(x))")
        elif isinstance(a, MemoryPointer) or _is_address(p, a):
            # a.data.ptr (plus an offset), as CuPy's users pass pointers
            buf, offset = (a.mem, a._offset) if isinstance(a, MemoryPointer) \
                else device_addresses.resolve(int(a))
            _check_address(buf, offset, f"argument {i} ({p.name}) of kernel {kernel.name}")
            params.append(("buffer", (slot_for(buf, ("param", i), f"argument {i} ({p.name})"),
                                      offset)))
        else:
            value = convert_scalar(p, i, a, kernel.name)
            held = device_addresses.embedded_addresses(value, getattr(a, "dtype", None)) \
                if isinstance(value, bytes) else []
            if not held:
                params.append(("scalar", value))
                continue
            # a struct by value holding device pointers: each chunk writes the address its
            # executor maps the buffer at into these bytes
            fields = []
            for at, buf, offset in held:
                where = f"argument {i} ({p.name}), the pointer at byte {at} of the struct"
                _check_address(buf, offset, f"{where} of kernel {kernel.name}")
                slot = slot_for(buf, ("struct", i, at), where)
                if p.size == 8:     # the struct is the pointer: the analysis follows it
                    slot_for(buf, ("param", i), where)
                fields.append((at, slot, offset))
            params.append(("struct", (value, tuple(fields))))
    used = kernel.used_variables
    for name, buf in kernel.raw_module.global_buffers().items():
        if name in used:        # (the rest stay where they are: this launch cannot see them)
            slot_for(buf, ("var", name), f"module variable {name}")
    op = LaunchOp(kernel, g, b, params, buffers, names, targets, shared_mem, cooperative)
    if config.get("sanitize") == "initcheck":
        op.account_writes()
    target = stream_for(stream)
    target.enqueue(op)
    return LaunchHandle(op, target)
