"""The functions that Dask runs on workers: memcpys, block-chunks and segment merges.

All are pure functions of their inputs (a segment version is never modified in place), so
Dask may rerun any of them elsewhere when a worker dies and get the same bytes.

Data formats:
- a *segment* is a 1-D ``uint8`` numpy array, a slice of a device allocation;
- a *chunk result* maps a buffer slot to ``(page_indices, page_bytes)``: the pages of that
  buffer the chunk changed (copy-on-write: nothing else comes back), page indices counted
  from the start of the buffer, bytes concatenated in index order.
"""
from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass

import numpy as np

# ----------------------------------------------------------------------------------------------
# memcpys
# ----------------------------------------------------------------------------------------------


def htod(data) -> np.ndarray:
    """Host -> device: the bytes become a segment (a private copy)."""
    return np.frombuffer(memoryview(data).cast("B"), dtype=np.uint8).copy()


def fill(nbytes: int, pattern: bytes) -> np.ndarray:
    """A segment of ``nbytes`` repeating ``pattern`` (one element's bytes)."""
    if not pattern.strip(b"\0"):
        return np.zeros(nbytes, dtype=np.uint8)
    reps = -(-nbytes // len(pattern))
    return np.frombuffer(pattern * reps, dtype=np.uint8)[:nbytes].copy()


def dtod(segment: np.ndarray) -> np.ndarray:
    """Device -> device copy of one segment."""
    return segment.copy()


def dtoh(*segments) -> np.ndarray:
    """Device -> host: the segments of an allocation, joined."""
    if len(segments) == 1:
        return segments[0]
    return np.concatenate(segments)


# ----------------------------------------------------------------------------------------------
# chunks
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ChunkSpec:
    """Everything a chunk needs besides its blocks and its input segments (picklable, the same
    for all chunks of a launch).

    ``params`` has one entry per kernel parameter: ``("buffer", slot)`` for a device array,
    ``("scalar", value)`` for a numpy scalar or bytes (structs). ``buffers`` gives per slot the
    ``(nbytes, segment count)``; ``globals`` maps module variable names to their slot.
    """
    ptx: str
    kernel: str
    grid: tuple
    block: tuple
    shared_mem: int
    params: tuple
    buffers: tuple
    globals: tuple  # ((name, slot), ...)
    page_bytes: int


_kernel_cache: dict = {}
_kernel_lock = threading.Lock()


def load_kernel(ptx: str, name: str):
    """The worker's RawKernel for (PTX, name); parsed once per process (the CPU executor keeps
    its own JIT cache keyed by PTX hash)."""
    key = (hashlib.sha256(ptx.encode()).hexdigest(), name)
    with _kernel_lock:
        kernel = _kernel_cache.get(key)
    if kernel is None:
        from dptx.module import RawModule
        kernel = RawModule(ptx=ptx).get_function(name)
        with _kernel_lock:
            _kernel_cache[key] = kernel
    return kernel


def _split_segments(spec: ChunkSpec, segments: tuple) -> list:
    out, i = [], 0
    for nbytes, count in spec.buffers:
        out.append(segments[i:i + count])
        i += count
    return out


def dirty_pages(base_segments, buffer: np.ndarray, page_bytes: int):
    """(page indices, their bytes) where ``buffer`` differs from the joined base segments."""
    n = buffer.size
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.uint8)
    base = base_segments[0] if len(base_segments) == 1 else np.concatenate(base_segments)
    changed = buffer != base
    npages = -(-n // page_bytes)
    pad = npages * page_bytes - n
    if pad:
        changed = np.concatenate([changed, np.zeros(pad, bool)])
    pages = np.flatnonzero(changed.reshape(npages, page_bytes).any(axis=1))
    if pages.size == 0:
        return pages, np.zeros(0, np.uint8)
    parts = [buffer[p * page_bytes:(p + 1) * page_bytes] for p in pages]
    return pages, np.concatenate(parts)


def _compile_and_report(executor, kernel) -> None:
    """JIT-compile before running, and tell the scheduler plugin how long the compile took,
    so that the first chunk on each worker does not count it as compute time."""
    import time
    t0 = time.perf_counter()
    executor.compile_kernel(kernel)
    seconds = time.perf_counter() - t0
    if seconds > 1e-3:
        try:
            from distributed import get_worker
            from distributed.worker import thread_state
            get_worker().log_event("dptx-compile", {"key": str(thread_state.key),
                                                    "seconds": seconds})
        except Exception:  # not on a Dask worker (a direct call): nothing to report
            pass


def run_chunk(spec: ChunkSpec, first_block: int, end_block: int, device: str, *segments) -> dict:
    """Run blocks [first_block, end_block) of the launch on this worker's CPU (or GPU) and
    return the pages each buffer got changed in (DESIGN.md point 6)."""
    if device == "gpu":
        from dptx import gpu as executor
    else:
        from dptx import cpu as executor

    kernel = load_kernel(spec.ptx, spec.kernel)
    if device != "gpu":
        _compile_and_report(executor, kernel)
    per_slot = _split_segments(spec, segments)
    # Private copies: the chunk writes copy-on-write pages, never the shared segment versions.
    buffers = [np.concatenate(segs) if len(segs) != 1 else segs[0].copy() for segs in per_slot]
    for (nbytes, _), buf in zip(spec.buffers, buffers):
        assert buf.size == nbytes, "segment sizes disagree with the launch plan"
    args = [buffers[v] if kind == "buffer" else v for kind, v in spec.params]
    global_buffers = {name: buffers[slot] for name, slot in spec.globals}
    executor.launch(kernel, spec.grid, spec.block, args, shared_mem=spec.shared_mem,
                    blocks=range(first_block, end_block), globals=global_buffers, threads=1)
    return {slot: dirty_pages(per_slot[slot], buffers[slot], spec.page_bytes)
            for slot in range(len(buffers))}


# ----------------------------------------------------------------------------------------------
# merges
# ----------------------------------------------------------------------------------------------
_NUMPY_TYPES = {
    "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
    "s8": np.int8, "s16": np.int16, "s32": np.int32, "s64": np.int64,
    "b8": np.uint8, "b16": np.uint16, "b32": np.uint32, "b64": np.uint64,
    "f16": np.float16, "f32": np.float32, "f64": np.float64,
}


def _combine(out: np.ndarray, base: np.ndarray, written: np.ndarray, rule) -> None:
    """Fold one chunk's version ``written`` of a byte range into ``out`` (same range)."""
    if rule is None:
        changed = written != base
        out[changed] = written[changed]
        return
    op, ptx_type = rule
    dtype = np.dtype(_NUMPY_TYPES.get(ptx_type, np.uint32))
    # Reductions work element-wise; ranges are whole pages, so they hold whole elements as
    # long as the buffer is element-aligned (dptx arrays and module variables are).
    o, b, w = (x.view(dtype) for x in (out, base, written))
    with np.errstate(over="ignore", invalid="ignore"):
        if op == "add":
            o += w - b  # unsigned/signed wrap; float: the chunk's own partial sum
        elif op == "min":
            np.minimum(o, w, out=o)
        elif op == "max":
            np.maximum(o, w, out=o)
        elif op == "and":
            o &= w
        elif op == "or":
            o |= w
        elif op == "xor":
            o ^= w ^ b
        else:  # pragma: no cover - MergeFacts only admits the ops above
            raise ValueError(f"no merge rule for atomic {op}")


def merge_segment(base: np.ndarray, slot: int, start: int, page_bytes: int, rule,
                  *chunk_results) -> np.ndarray:
    """The next version of one segment (bytes [start, start+len(base)) of buffer ``slot``).

    No writer: the base itself. One writer of a page: its bytes. Several writers: their byte
    differences against the base, applied in chunk order (plain stores to the same byte from
    two blocks are a race in CUDA too). A buffer touched only by reduction atomics (``rule`` =
    (op, type)): the chunks' contributions combined by the operation.
    """
    end = start + base.size
    out = None
    for result in chunk_results:
        pages, data = result.get(slot, (None, None))
        if pages is None or pages.size == 0:
            continue
        offsets = pages * page_bytes
        inside = (offsets < end) & (offsets + page_bytes > start)
        if not inside.any():
            continue
        if out is None:
            out = base.copy()
        pos = 0  # where each page's bytes start in ``data``; only the buffer's last page is short
        for index, page in enumerate(pages):
            lo = int(page) * page_bytes
            size = int(min(page_bytes, data.size - pos))
            if inside[index]:
                a, b = max(lo, start), min(lo + size, end)
                piece = data[pos + (a - lo):pos + (b - lo)]
                _combine(out[a - start:b - start], base[a - start:b - start], piece, rule)
            pos += size
    return base if out is None else out
