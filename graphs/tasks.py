"""The functions that Dask runs on workers: memcpys, slices, block-chunks and range merges.

All are pure functions of their inputs (an input array is never modified in place), so Dask
may rerun any of them elsewhere when a worker dies and get the same bytes.

A chunk receives, for each buffer of the launch, the parts of the current pieces that cover
its *window*: the hull of the bytes its blocks may read or write (the access footprint,
DESIGN.md point 6). The CPU executor maps only that window, so an access outside it raises
``FootprintViolation`` and the runtime reruns the launch with whole buffers. What a chunk
returns per written buffer:
- ``direct``: the bytes of its write footprint, which no other chunk of the launch writes;
  they become a piece of the new version as they are;
- ``merge``: for each merge range its window overlaps, the runs of pages it changed there,
  ``[(start, bytes), ...]`` (start counted from the buffer's first byte), which the range's
  merge task folds into the range's base.
"""
from __future__ import annotations

import contextlib
import logging
import threading
from dataclasses import dataclass

import numpy as np
from distributed import get_worker
from distributed.worker import thread_state

from .worker_memory import pool
from dptx import config
from dptx.device.executors import executor
from dptx.device.pointer import Pointer, StructValue
from dptx.device.window import Window
from dptx.errors import ExecutorRefusedError, FootprintViolation
from dptx.ptx import parse
from dptx.ptx.digest import ptx_digest

# ----------------------------------------------------------------------------------------------
# memcpys, slices, the kernel image
# ----------------------------------------------------------------------------------------------


def kernel_text(ptx: str) -> str:
    """The value of a kernel image key: the module's PTX (sent through the scheduler once per
    module; chunk tasks depend on the key instead of carrying the text)."""
    return ptx


def host_bytes(data) -> np.ndarray:
    """Host -> device for small arrays: the bytes travel inside the task (so Dask can rerun it
    anywhere) and become a piece (a private copy)."""
    return np.frombuffer(memoryview(data).cast("B"), dtype=np.uint8).copy()


def fill(nbytes: int, pattern: bytes) -> np.ndarray:
    """A piece of ``nbytes`` repeating ``pattern`` (one element's bytes)."""
    if not pattern.strip(b"\0"):
        return pool.zeros(nbytes)
    out = pool.empty(nbytes)
    reps = -(-nbytes // len(pattern))
    out[:] = np.frombuffer(pattern * reps, dtype=np.uint8)[:nbytes]
    return out


def _copy(a: np.ndarray) -> np.ndarray:
    out = pool.empty(a.size)
    out[:] = a
    return out


def cut(value, offset: int, size: int, element: int = None) -> np.ndarray:
    """A copy of bytes [offset, offset + size) of a piece's array (element ``element`` of the
    value when it is a task's several outputs): run where the array is, so that only these
    bytes travel (halos, device-to-device copies, reads of part of a piece)."""
    array = value if element is None else value[element]
    return _copy(array[offset:offset + size])


def _arrays(views: tuple, inputs: tuple) -> list:
    """The arrays a task reads: ``views[k]`` = (input index, element or None)."""
    return [inputs[i] if e is None else inputs[i][e] for i, e in views]


ZERO_PART = -1     # the array index of a part that is zero bytes (a zero piece's)


def assemble(nbytes: int, layout: tuple, *arrays) -> np.ndarray:
    """Bytes of ``nbytes`` from parts: ``layout`` holds (array index, src offset, dst offset,
    size) of each part; a part of index ZERO_PART is zeros."""
    out = pool.empty(nbytes)
    for index, src, dst, size in layout:
        if index == ZERO_PART:
            out[dst:dst + size] = 0
        else:
            out[dst:dst + size] = arrays[index][src:src + size]
    return out


# ----------------------------------------------------------------------------------------------
# kernels on workers
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class KernelImage:
    """What the executors need of a kernel (parsed once per worker process)."""
    module: object
    function: object
    name: str
    ptx: str
    # the parameters' names in the CUDA source (the client's; for the sanitizer's reports,
    # which workers print: demangle.with_parameter_names)
    source_parameters: tuple = None

    @property
    def params(self) -> list:
        return self.function.params


_kernel_cache: dict = {}
_kernel_lock = threading.Lock()


def load_kernel(ptx: str, name: str, source_parameters: tuple = None) -> KernelImage:
    """The kernel ``name`` of a module, parsed once per process (the CPU executor keeps its
    own JIT cache keyed by PTX hash); ``source_parameters``: its parameters' names in the
    CUDA source, for messages."""

    key = (ptx_digest(ptx), name, source_parameters)
    with _kernel_lock:
        kernel = _kernel_cache.get(key)
    if kernel is None:
        module = parse(ptx)
        function = next(f for f in module.kernels if f.name == name)
        kernel = KernelImage(module, function, name, ptx, source_parameters)
        with _kernel_lock:
            _kernel_cache[key] = kernel
    return kernel


# Seconds a chunk may run on a worker when neither the launch (the client's
# dptx.kernel-timeout) nor the worker's own setting gives a limit: a kernel that never ends
# is stopped with DptxTimeoutError and the worker goes on serving (0 or False: no limit).
WORKER_KERNEL_TIMEOUT = 600.0


def _current_key():
    """The key of the task this thread runs (None outside a worker's task)."""
    try:
        return getattr(thread_state, "key", None)
    except ImportError:
        return None


def chunk_time_limit(requested):
    """The time limit of a chunk on this worker: the launch's, else the worker's
    dptx.kernel-timeout, else WORKER_KERNEL_TIMEOUT."""
    for value in (requested, config.get("kernel-timeout")):
        if value is not None:
            return value
    return WORKER_KERNEL_TIMEOUT


@dataclass(frozen=True)
class LaunchSpec:
    """What every chunk of a launch shares (picklable, small).

    ``params`` has one entry per kernel parameter: ``("buffer", (slot, byte offset))`` for
    a device array (a view's offset in its buffer), ``("scalar", value)`` for a numpy scalar
    or bytes (structs), ``("struct", (bytes, ((byte in the struct, slot, byte offset),
    ...)))`` for a struct by value that holds device pointers; ``globals`` maps module
    variable names to their slot."""
    kernel: str
    grid: tuple
    block: tuple
    shared_mem: int
    params: tuple
    globals: tuple          # ((name, slot), ...)
    cooperative: bool = False   # every block at once (grid.sync()): one chunk, the whole grid
    timeout: object = None      # the client's dptx.kernel-timeout (chunk_time_limit)
    unwritten: tuple = ()       # initcheck (dptx sanitize): per slot, the bytes nothing wrote
    source_parameters: tuple = None     # the kernel's parameters as its source names them


@dataclass(frozen=True)
class SlotWindow:
    """One buffer as one chunk sees it: bytes [lo, hi) of a buffer of ``nbytes``, assembled
    from ``parts`` ((input index, src offset, dst offset, size)); ``mode`` is "read" (the
    kernel never writes the buffer: the piece itself may serve), "check" (the kernel may
    write it, its footprint says not in this chunk: a private copy that must not change),
    "direct" (bytes [write_lo, write_hi) are returned; any change outside [check_lo,
    check_hi), by default the same bytes, is a footprint violation), "merge" (the changed
    pages inside each of ``ranges`` are returned) or "scratch" (written, nothing returned:
    ghost zones of a fused group)."""
    lo: int
    hi: int
    nbytes: int
    parts: tuple
    mode: str
    write_lo: int = 0
    write_hi: int = 0
    ranges: tuple = ()
    check_lo: int = None
    check_hi: int = None

    @property
    def allowed(self) -> tuple:
        """The bytes the chunk may change."""
        if self.mode == "check":
            return self.lo, self.lo
        lo = self.write_lo if self.check_lo is None else self.check_lo
        hi = self.write_hi if self.check_hi is None else self.check_hi
        return lo, hi


@dataclass(frozen=True)
class Step:
    """One launch run by a chunk: blocks [first, end) of ``spec``; ``image`` is the input
    index of its kernel image; ``slots[s]`` the chunk slot holding the launch's slot s."""
    spec: LaunchSpec
    first: int
    end: int
    image: int
    slots: tuple


@dataclass(frozen=True)
class ChunkPlan:
    """A task's work: its ``steps`` run in order over the windows of ``slots`` (a chunk of
    one launch has one step; a batch of small launches has several). Parts and images index
    ``views``: (input index, element or None) of the task's inputs."""
    views: tuple
    steps: tuple
    device: str             # "cpu" | "gpu"
    slots: tuple            # SlotWindow per chunk slot
    names: tuple            # per chunk slot: "argument 1 (x)", "module variable c"
    page_bytes: int


def _window_data(slot: SlotWindow, inputs: tuple) -> np.ndarray:
    size = slot.hi - slot.lo
    if slot.mode == "read" and len(slot.parts) == 1 and slot.parts[0][0] != ZERO_PART:
        index, src, dst, n = slot.parts[0]
        view = inputs[index][src:src + n]
        if n == size and view.flags.writeable and view.flags.c_contiguous:
            # the chunk never writes this buffer: no private copy needed
            return view
    return assemble(size, slot.parts, *inputs)


def _changed_runs(before: np.ndarray, after: np.ndarray, lo: int, rlo: int, rhi: int,
                  page_bytes: int) -> list:
    """Runs of changed pages of the window (its byte 0 is buffer byte ``lo``) inside buffer
    range [rlo, rhi), as [(buffer offset, bytes)]; pages are aligned to the buffer."""
    a, b = max(lo, rlo), min(lo + after.size, rhi)
    if b <= a:
        return []
    first = a // page_bytes
    last = (b - 1) // page_bytes
    edges = np.arange(first, last + 2, dtype=np.int64) * page_bytes
    edges[0], edges[-1] = a, b
    changed = np.not_equal(before[a - lo:b - lo], after[a - lo:b - lo])
    if not changed.any():
        return []
    dirty = np.logical_or.reduceat(changed, edges[:-1] - a)
    runs, i, n = [], 0, dirty.size
    while i < n:
        if not dirty[i]:
            i += 1
            continue
        j = i
        while j + 1 < n and dirty[j + 1]:
            j += 1
        s, e = int(edges[i]), int(edges[j + 1])
        runs.append((s, after[s - lo:e - lo].copy()))
        i = j + 1
    return runs


def _first_difference(before: np.ndarray, after: np.ndarray) -> int:
    return int(np.flatnonzero(before != after)[0])


_timed: set = set()        # (kernel, device, lane) that ran a chunk in this process


def _run_step(step: Step, device: str, views: list, inputs: tuple, lane: int = None,
              slots: tuple = ()) -> tuple:
    """Run one launch of the chunk; returns the seconds its kernel ran (JIT excluded) and
    whether they say how fast this worker runs the kernel: not on the first run of a kernel
    on a device (the driver's JIT, first-touch page faults) nor on a run that tried both of
    the CPU executor's forms (half the blocks in the slower one). On the GPU, ``lane`` is the
    CUDA device the chunk holds."""
    spec = step.spec
    if device == "gpu" and config.get("sanitize"):
        device = "cpu"      # a sanitizer's checks are the CPU executor's (dptx sanitize)
    kernel = load_kernel(inputs[step.image], spec.kernel, spec.source_parameters)
    args = [_argument(kind, v, step, views) for kind, v in spec.params]
    global_buffers = {name: views[step.slots[s]] for name, s in spec.globals}
    blocks = range(step.first, step.end)
    first_run = (id(kernel), device, lane) not in _timed
    _timed.add((id(kernel), device, lane))
    if spec.unwritten:      # initcheck: what the client knows nothing wrote, per argument
        run_unwritten = ({i: spec.unwritten[v[0]] for i, (kind, v) in enumerate(spec.params)
                          if kind == "buffer"},
                         {name: spec.unwritten[s] for name, s in spec.globals})
    run = dict(shared_mem=spec.shared_mem, blocks=blocks, globals=global_buffers,
               cooperative=spec.cooperative, timeout=chunk_time_limit(spec.timeout),
               task_key=_current_key(), lane=lane,
               writes=_gpu_writes(step, slots, views) if device == "gpu" else None)
    if spec.unwritten:
        run["unwritten"] = run_unwritten
    try:
        seconds, measured = executor(device).run_blocks(kernel, spec.grid, spec.block, args,
                                                        **run)
    except ExecutorRefusedError as exc:
        # the device cannot take this kernel (driver too old for what it uses...): the
        # chunk's blocks run on this worker's CPU instead
        _note_once(("module", spec.kernel), "%s; its GPU chunks run on the CPU", exc)
        seconds, measured = executor("cpu").run_blocks(kernel, spec.grid, spec.block, args,
                                                       **run)
    return seconds, measured and not first_run


def _argument(kind: str, value, step: Step, views: list):
    """A kernel argument: a buffer's window (or a pointer into it: a view), a struct whose
    bytes hold pointers into buffers, or a scalar."""
    if kind == "struct":
        raw, fields = value
        return StructValue(raw, tuple((at, _pointer(step, views, slot, offset))
                                      for at, slot, offset in fields))
    if kind != "buffer":
        return value
    return _pointer(step, views, *value)


def _pointer(step: Step, views: list, slot: int, offset: int):
    if not offset:
        return views[step.slots[slot]]
    return Pointer(views[step.slots[slot]], offset)


def _gpu_writes(step: Step, slots: tuple, views: list) -> dict:
    """What a GPU step copies back: every buffer the kernel may write, whole (GPU chunks get
    whole buffers; the chunk's checks and merges then see every byte it changed), and
    nothing of the buffers it only reads."""
    writes = {}
    for i, (kind, v) in enumerate(step.spec.params):
        if kind == "buffer" and slots[step.slots[v[0]]].mode != "read":
            writes[i] = (0, views[step.slots[v[0]]].nbytes)
        elif kind == "struct":
            for at, slot, _ in v[1]:
                if slots[step.slots[slot]].mode != "read":
                    writes[(i, at)] = (0, views[step.slots[slot]].nbytes)
    for name, s in step.spec.globals:
        if slots[step.slots[s]].mode != "read":
            writes[name] = (0, views[step.slots[s]].nbytes)
    return writes


_noted: set = set()
_logger = logging.getLogger("graphs.tasks")


def _note_once(key, message: str, *args) -> None:
    if key not in _noted:
        _noted.add(key)
        _logger.warning(message, *args)


@contextlib.contextmanager
def _chunk_device(kind: str):
    """(device kind, CUDA device) a task of ``kind`` ("cpu" or "gpu") runs on: a GPU task
    holds one of the worker's devices (``dptx.gpu.lane``: one task per device at a time) for
    all its work; without a usable GPU (none, or all lost to faults until the worker
    restarts) it runs on the CPU."""
    if kind != "gpu":
        yield "cpu", None
        return
    with executor("gpu").lane() as device:
        if device is None:
            _note_once(("no-gpu",), "no usable GPU in this worker process: GPU chunks run on "
                       "the CPU")
            yield "cpu", None
        else:
            yield "gpu", device


def run_chunk(chunk: ChunkPlan, *inputs):
    """Run the chunk's steps on this worker's CPU (or GPU) over the windows of
    ``chunk.slots``; returns the outputs described in the module docstring (one value, or a
    tuple when there are several). An error of a step carries ``dptx_step``, its index."""

    inputs = _arrays(chunk.views, inputs)
    datas, kept, views = [], {}, []
    for s, slot in enumerate(chunk.slots):
        data = _window_data(slot, inputs)
        datas.append(data)
        if slot.mode == "merge":
            kept[s] = _copy(data)
        elif slot.mode in ("direct", "check"):
            a, b = (x - slot.lo for x in slot.allowed)
            kept[s] = (_copy(data[:a]), _copy(data[b:]))
        whole = slot.lo == 0 and slot.hi == slot.nbytes
        views.append(data if whole else Window(data, slot.lo, slot.nbytes))

    kernel_seconds, sample = 0.0, True
    with _chunk_device(chunk.device) as (device, lane):
        for i, step in enumerate(chunk.steps):
            try:
                seconds, representative = _run_step(step, device, views, inputs, lane,
                                                    chunk.slots)
            except Exception as exc:
                exc.dptx_step = i
                raise
            kernel_seconds += seconds
            sample &= representative
    _report(kernel_seconds, sample)

    outputs = []
    for s, slot in enumerate(chunk.slots):
        data = datas[s]
        if slot.mode in ("direct", "check"):
            a, b = (x - slot.lo for x in slot.allowed)
            left, right = kept[s]
            for before, after, base in ((left, data[:a], slot.lo), (right, data[b:], slot.lo + b)):
                if not np.array_equal(before, after):
                    at = base + _first_difference(before, after)
                    kernels = ", ".join(dict.fromkeys(st.spec.kernel for st in chunk.steps))
                    first = chunk.steps[0]
                    allowed = (f"outside bytes [{slot.lo + a}, {slot.lo + b}) that the "
                               f"kernel's access footprint says these blocks may write"
                               if b > a else "which the kernel's access footprint says "
                               "these blocks do not write")
                    raise FootprintViolation(
                        f"kernel {kernels}, blocks [{first.first}, {first.end}): a store "
                        f"changed byte {at} of {chunk.names[s]}, {allowed}", kernels,
                        chunk.names[s])
            if slot.mode == "check":
                continue
            out = data[slot.write_lo - slot.lo:slot.write_hi - slot.lo]
            # Keep the window alive only when it is little more than the output.
            outputs.append(out if 4 * out.size >= 3 * data.size else _copy(out))
        elif slot.mode == "merge":
            for rlo, rhi in slot.ranges:
                outputs.append(_changed_runs(kept[s], data, slot.lo, rlo, rhi, chunk.page_bytes))
    return outputs[0] if len(outputs) == 1 else tuple(outputs)


REPORT = "dptx-chunk"     # the task metadata entry (and event topic) of a chunk's kernel time


def _report(kernel_seconds: float, sample: bool) -> None:
    """Tell the scheduler plugin how long the kernels of this chunk ran: it learns each
    worker's speed from that alone, not from the task's whole time, which also counts JIT
    compiles and the copies that build windows (first-touch page faults can make those cost
    more than the kernel, and would make a worker that just received data look slow).
    ``sample`` False: the time is not the worker's speed (see ``_run_step``).

    The figures ride in the task's metadata, which Dask sends with the task-finished
    message (the plugin's ``transition`` reads it): no message of their own (an event per
    chunk was a second message per chunk for the scheduler to take in; 32 workers send many).
    """
    try:
        worker, key = get_worker(), thread_state.key
    except Exception:  # not on a Dask worker (a direct call): nothing to report
        return
    figures = {"seconds": kernel_seconds, "sample": sample}
    ts = worker.state.tasks.get(key)
    if ts is not None:
        ts.metadata[REPORT] = figures
    else:       # (a task the worker's state does not know: say it the older way)
        worker.log_event(REPORT, {"key": str(key), **figures})


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
    # Reductions work element-wise; runs are whole pages (or the range's ends, which merge
    # ranges put on element boundaries), so they hold whole elements.
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


def merge_range(lo: int, hi: int, rule, layout: tuple, nbase: int, views: tuple,
                *inputs) -> np.ndarray:
    """The next version of bytes [lo, hi) of a buffer written by several chunks (or by
    reduction atomics). ``inputs[:nbase]`` hold the current bytes (``layout`` has (input
    index, src offset, dst offset, size) of each part); the rest are the chunks' changed runs
    inside [lo, hi), in chunk order.

    One writer of a byte: its value. Several: their differences against the base, applied in
    chunk order (plain stores to the same byte from two blocks are a race in CUDA too).
    Reduction atomics (``rule`` = (op, type)): the contributions combined by the operation.
    ``views`` says which input (and element of it) each of them is.
    """
    inputs = _arrays(views, inputs)
    base = assemble(hi - lo, layout, *inputs[:nbase])
    out = None
    for runs in inputs[nbase:]:
        for start, data in runs:
            if out is None:
                out = _copy(base)
            a = start - lo
            _combine(out[a:a + data.size], base[a:a + data.size], data, rule)
    return base if out is None else out


# ----------------------------------------------------------------------------------------------
# library routines on workers
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LibraryPlan:
    """A library routine's task (``dptx.device.library``): ``routine`` over the arrays
    ``inputs`` ((shape, dtype, nbytes, parts) each: parts as ``assemble`` takes them, indexing
    ``views``), with keyword arguments ``kwargs`` ((name, value) pairs), returning ``outputs``
    ((shape, dtype) each) on this worker's ``device`` ("cpu" or "gpu"); with ``status``, one
    more output: int32 [0], or [1] where the routine failed as numpy says with LinAlgError
    (then the other outputs hold NaN)."""
    routine: str
    inputs: tuple
    kwargs: tuple
    outputs: tuple
    views: tuple
    device: str
    status: bool


def run_library(plan: LibraryPlan, *inputs):
    """Run a library routine with this worker's device's library (numpy's on the CPU, CuPy's on
    a GPU): its outputs' bytes, one array, or a tuple of them."""
    inputs = _arrays(plan.views, inputs)
    arrays = [assemble(nbytes, parts, *inputs).view(np.dtype(dtype)).reshape(shape)
              for shape, dtype, nbytes, parts in plan.inputs]
    failed = 0
    with _chunk_device(plan.device) as (device, lane):
        try:
            got = executor(device).run_library(plan.routine, arrays, dict(plan.kwargs), lane)
        except np.linalg.LinAlgError:
            if not plan.status:
                raise
            failed = 1
            got = [np.full(shape, np.nan, dtype) for shape, dtype in plan.outputs]
    if len(got) != len(plan.outputs):
        raise RuntimeError(f"{plan.routine} returned {len(got)} arrays, not "
                           f"{len(plan.outputs)}")
    outs = []
    for value, (shape, dtype) in zip(got, plan.outputs):
        value = np.asarray(value)
        if value.shape != tuple(shape):
            raise RuntimeError(f"{plan.routine} returned shape {value.shape}, not {shape}")
        out = pool.empty(value.size * np.dtype(dtype).itemsize)
        out.view(np.dtype(dtype)).reshape(value.shape)[...] = value
        outs.append(out)
    if plan.status:
        outs.append(np.array([failed], np.int32).view(np.uint8))
    return outs[0] if len(outs) == 1 else tuple(outs)
