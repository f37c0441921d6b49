"""``kernel(grid, block, args, shared_mem=0)``: a launch on the cluster.

The launch is checked on the client (shapes, argument count and types), cut into block-chunks
and submitted as a Dask graph (``graphs.launch``); the device arrays it may write get new
segment versions at once, and the call returns without waiting (stream order).
"""
from __future__ import annotations

import time

import numpy as np

from . import config, runtime
from .errors import LaunchError
from .launch_config import check_arg_count, check_shape, convert_scalar
from .stream import LaunchRecord, default_stream

_threads_cache = {"value": None, "at": 0.0, "client": None}


def cluster_threads(client) -> int:
    """Worker threads of the cluster (refreshed every few seconds: workers come and go)."""
    now = time.monotonic()
    c = _threads_cache
    if c["client"] is not client or c["value"] is None or now - c["at"] > 5.0:
        c["value"] = max(1, sum(client.nthreads().values()))
        c["at"], c["client"] = now, client
    return c["value"]


def default_chunks(nblocks: int, threads: int) -> int:
    """Enough chunks for every worker thread, two per thread for large grids."""
    setting = config.get("chunks")
    if setting:
        return max(1, min(int(setting), nblocks))
    per_thread = 2 if nblocks >= 8 * threads else 1
    return max(1, min(nblocks, per_thread * threads))


_no_planner: set = set()  # clients whose scheduler has no dptx plugin


def plan_chunks(client, kernel_name: str, nblocks: int, launch_id: str, single: bool) -> list:
    """(first, end, worker, device) block ranges of a launch. The scheduler plugin plans them from
    measured speeds; without the plugin, or with ``dptx.chunks`` set, an even split."""
    from graphs.launch import split_blocks

    if not config.get("chunks") and id(client) not in _no_planner:
        try:
            plan = client.sync(client.scheduler.dptx_plan, kernel=kernel_name, nblocks=nblocks,
                               launch=launch_id, single_chunk=single)
            if plan:
                return [(int(a), int(b), w, d) for w, a, b, d in plan]
        except Exception as exc:  # no plugin on this scheduler: plan on the client
            if "dptx_plan" not in str(exc) and "unknown operation" not in str(exc).lower():
                raise
            _no_planner.add(id(client))
    nchunks = 1 if single else default_chunks(nblocks, cluster_threads(client))
    return [(a, b, None, "cpu") for a, b in split_blocks(nblocks, nchunks)]


def _merge_facts(kernel):
    facts = getattr(kernel, "_merge_facts", None)
    if facts is None:
        from .ptx.analysis import merge_facts
        facts = kernel._merge_facts = merge_facts(kernel.module, kernel.function)
    return facts


def launch(kernel, grid, block, args, shared_mem: int = 0):
    from graphs.launch import submit_launch, token
    from graphs.tasks import ChunkSpec

    from .array import ndarray

    g, b = check_shape(grid, block, shared_mem)
    check_arg_count(kernel, args)
    buffers, slot_of, targets, params = [], {}, [], []

    def slot_for(buf, target):
        slot = slot_of.get(id(buf))
        if slot is None:
            slot = slot_of[id(buf)] = len(buffers)
            buffers.append(buf)
            targets.append(set())
        targets[slot].add(target)
        return slot

    for i, (p, a) in enumerate(zip(kernel.params, args)):
        if isinstance(a, ndarray):
            if p.size != 8 or p.type not in ("u64", "b64", "s64"):
                raise LaunchError(f"argument {i} ({p.name}: .{p.type}) of kernel {kernel.name} "
                                  f"is not a pointer, got a dptx.ndarray")
            params.append(("buffer", slot_for(a._buffer, ("param", i))))
        elif isinstance(a, np.ndarray) and a.ndim > 0:
            raise LaunchError(f"argument {i} ({p.name}) of kernel {kernel.name} is a numpy array; "
                              f"device arguments must be dptx arrays (dptx.asarray(x))")
        else:
            params.append(("scalar", convert_scalar(p, i, a, kernel.name)))
    global_slots = tuple((name, slot_for(buf, ("var", name)))
                         for name, buf in kernel.raw_module.global_buffers().items())

    facts = _merge_facts(kernel)
    rules, writes = [], []
    for slot_targets in targets:
        rule = None
        if facts.mergeable:
            found = {facts.reductions[t] for t in slot_targets if t in facts.reductions}
            if len(found) == 1:
                rule = found.pop()
        rules.append(rule)
        writes.append(facts.written is None or bool(slot_targets & facts.written))

    client = runtime.get_client()
    nblocks = g[0] * g[1] * g[2]
    launch_id = token()
    chunks = plan_chunks(client, kernel.name, nblocks, launch_id, not facts.mergeable)
    spec = ChunkSpec(
        ptx=kernel.ptx, kernel=kernel.name, grid=g, block=b, shared_mem=int(shared_mem),
        params=tuple(params), buffers=tuple((buf.nbytes, len(buf.segments)) for buf in buffers),
        globals=global_slots, page_bytes=int(config.get("page-bytes")))
    before = [list(buf.segments) for buf in buffers]
    new, chunk_futures = submit_launch(client, spec, [buf.segments for buf in buffers],
                                       [buf.bounds for buf in buffers], chunks, rules, writes,
                                       launch_id)
    changed, produced = [], list(chunk_futures)
    for buf, segs, w in zip(buffers, new, writes):
        if w:
            buf.segments = segs
            changed.append(buf)
            produced.extend(segs)
    default_stream.record(LaunchRecord(
        f"launch of kernel {kernel.name} (grid {g}, block {b})", changed,
        [before[buffers.index(buf)] for buf in changed], produced))
