"""Running compiled kernels: argument marshalling, the buffer table, parallel chunks of blocks
on Python threads (the native call releases the GIL), error reports and printf output."""
from __future__ import annotations

import concurrent.futures
import contextlib
import ctypes
import dataclasses
import functools
import os
import re
import sys
import threading
import time

import numpy as np

from .. import config
from ..demangle import name_in_source
from ..device.launch_config import (MAX_COOPERATIVE_BLOCKS, check_arg_count, check_shape,
                                    convert_scalar)
from ..device.pointer import Pointer, StructValue
from ..device.window import Window
from ..errors import (DptxDeadlockError, DptxError, DptxMemoryError, DptxTimeoutError,
                      FootprintViolation, LaunchError, PtxUnsupportedError)
from ..ptx import ir, print_module
from ..ptx.analysis import merge_facts
from ..ptx.digest import ptx_digest
from ..ptx.source_lines import with_source_lines
from .renderer import address_space as L
from . import forms, jit
from ..device import sanitizer
from .hazards import report_hazards
from .renderer import racecheck_ir as RACE
from .renderer.heap_ir import DEFAULT_HEAP_BYTES, HEADER_BYTES as HEAP_HEADER_BYTES, init_heap
from .watchdog import WATCHDOG, interrupts_stop, request_stop

RUN_SIGNATURE = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)


class CompiledKernel:
    """A kernel compiled for this CPU in one form (``forms``: a vector mode and a parameter
    alignment), with what launches need to know of it (``forms.Facts``, as attributes).

    A form another process (or an earlier run) built loads from the disk cache without
    being translated. A form not there is built here at O3 when the kernel is small; a large
    one (or any, as ``tier_policy`` says) first runs a quick stand-in, its plain per-thread
    form with LLVM's quick tier (a tenth of the instructions of the warp-vectorized form,
    compiled in a tenth of O3's time), while a child process translates and builds the
    optimized form, which a later launch swaps in (``upgrade``)."""

    def __init__(self, module: ir.Module, name: str, ptx: str, vector_mode: str = None,
                 param_alignment: int = L.PARAM_ALIGNMENT):
        t0 = time.perf_counter()
        self.module, self.name, self.ptx = module, name, ptx
        self.vector_mode, self.param_alignment = vector_mode, param_alignment
        self.variables = L.module_variables(module)
        # A plain kernel with a loop in each thread: warp vectorization wins by far on
        # recurrences (25x on a polynomial) and loses on per-thread streams over rows (4x
        # slower). Both forms are built; the first big enough launch of each kind
        # (``launch_class``) runs half of its blocks with each (quarters, A B B A) and keeps
        # the faster for launches of that kind (``chosen``).
        self.alternative = None
        self.chosen = {}
        self._building = None       # (background build, its form's key)
        key = self._key(forms.OPTIMIZED)
        found, tier = forms.cached(key), forms.OPTIMIZED
        if found is None:
            policy = tier_policy(module, name)
            if vector_mode == "racecheck" and policy == "quick first":
                policy = "quick only"   # (the stand-in would run without the checks)
            if policy in ("quick only", "unoptimized"):
                tier = forms.QUICK if policy == "quick only" else forms.UNOPTIMIZED
                found = forms.build(module, name, vector_mode, param_alignment, tier,
                                    self._key(tier))
            elif policy == "optimized":
                found = forms.build(module, name, vector_mode, param_alignment, tier, key)
            else:
                tier = forms.QUICK
                found = forms.build(module, name, "0", param_alignment, tier,
                                    forms.form_key(ptx, name, "0", param_alignment, tier))
                self._building = (forms.build_in_background(ptx, name, vector_mode,
                                                            param_alignment, key), key)
        self._adopt(*found, tier)
        self.compile_seconds = time.perf_counter() - t0

    def _key(self, tier: str) -> str:
        return forms.form_key(self.ptx, self.name, self.vector_mode, self.param_alignment, tier)

    def _adopt(self, obj: bytes, facts: forms.Facts, tier: str) -> None:
        """Run ``obj`` from now on, with its facts as this kernel's attributes."""
        self.engine, address = jit.load_object(obj)
        self.run = RUN_SIGNATURE(address)
        self.tier = tier
        self.__dict__.update(dataclasses.asdict(facts))
        if self.vector_for_loops and self.alternative is None:
            self.alternative = CompiledKernel(self.module, self.name, self.ptx, "0",
                                              self.param_alignment)

    @property
    def final(self) -> bool:
        """No better build of this form is coming (two forms compare fairly only so)."""
        return self._building is None

    def upgrade(self, wait: bool = False) -> None:
        """Swap in the optimized form once the background build is done (``wait``: wait for
        it). A build that failed is redone here, so the optimized code always comes."""
        if self._building is None:
            return
        proc, key = self._building
        if proc is not None and proc.poll() is None:
            if not wait:
                return
            proc.wait()
        found = forms.build(self.module, self.name, self.vector_mode, self.param_alignment,
                            forms.OPTIMIZED, key)
        self._building = None
        self._adopt(*found, forms.OPTIMIZED)


def tier_policy(module: ir.Module, name: str) -> str:
    """How a form not in the disk cache is built, by DPTX_CPU_QUICK_TIER: "0": "optimized"
    (O3 here, now); "1": "quick first" (the stand-in, optimized in the background); "only":
    "quick only" (the form itself at the quick tier, cached, never optimized);
    "unoptimized": the form itself without LLVM passes, cached (test suites, where compile
    time is most of a cold run and kernels run little); else (default) "quick first" for
    kernels whose IR would have more than QUICK_TIER_LINES lines, which take about a second
    at O3."""
    choice = os.environ.get("DPTX_CPU_QUICK_TIER", "").strip().lower()
    policies = {"0": "optimized", "1": "quick first", "only": "quick only",
                "unoptimized": "unoptimized"}
    if choice in policies:
        return policies[choice]
    return "quick first" if forms.estimated_ir_lines(module, name) > QUICK_TIER_LINES \
        else "optimized"


QUICK_TIER_LINES = 6000
_compiled: dict = {}
_compile_lock = threading.Lock()


def _ptx(kernel) -> str:
    ptx = getattr(kernel, "ptx", None)
    return print_module(kernel.module) if ptx is None else ptx


def cache_key(kernel) -> tuple:
    """Key of ``kernel`` in the per-process cache: its PTX, its name, DPTX_CPU_VECTOR, which
    chooses between the warp-vectorized and the per-thread translation, and
    DPTX_CPU_QUICK_TIER, which chooses the builds (``tier_policy``)."""
    return (ptx_digest(_ptx(kernel)), kernel.name, os.environ.get("DPTX_CPU_VECTOR", ""),
            os.environ.get("DPTX_CPU_QUICK_TIER", ""))


def _naming_source_lines(fn):
    """Errors of ``fn(kernel, ...)`` that name a PTX line also name the CUDA source line it
    came from, where the PTX has line information (``-lineinfo``, ``-G``), and parameters
    are named as the kernel's source does."""
    @functools.wraps(fn)
    def wrapper(kernel, *args, **kwargs):
        try:
            return fn(kernel, *args, **kwargs)
        except DptxError as exc:
            ptx = getattr(kernel, "ptx", None)
            if ptx and exc.args and isinstance(exc.args[0], str):
                named = with_source_lines(exc.args[0], ptx)
                if named != exc.args[0]:
                    exc.args = (named,) + exc.args[1:]
            raise name_in_source(exc, [kernel])
    return wrapper


@_naming_source_lines
def compile_kernel(kernel, aligned_params: bool = True, racecheck: bool = False) -> CompiledKernel:
    """The compiled form of ``kernel`` (anything with ``.module``, ``.name`` and ideally
    ``.ptx``), cached per process by PTX hash and name. ``aligned_params``: the build that
    takes the pointer parameters as aligned (address_space.PARAM_ALIGNMENT), else the one
    that assumes nothing, for a launch given a pointer off that alignment. ``racecheck``:
    the race-checked build (per thread, shared memory accesses noted: racecheck_ir)."""
    key = cache_key(kernel) + (() if aligned_params else ("unaligned parameters",)) + \
        (("racecheck",) if racecheck else ())
    with _compile_lock:
        ck = _compiled.get(key)
        if ck is None:
            ck = _compiled[key] = CompiledKernel(
                kernel.module, kernel.name, _ptx(kernel),
                vector_mode="racecheck" if racecheck else None,
                param_alignment=L.PARAM_ALIGNMENT if aligned_params else 1)
    return ck


def _misaligned_parameters(ck: CompiledKernel, pointer_values: list) -> bool:
    return any(pointer_values[i] % ck.param_alignment for i in ck.aligned_params)


def module_state(module: ir.Module) -> dict:
    """The device buffers of a module's variables, persisting across launches of kernels of
    the same module (initialized from the initializers on first use)."""
    state = getattr(module, "_dptx_globals", None)
    if state is None:
        state = L.initial_image(module)
        module._dptx_globals = state
    return state


def global_image(module: ir.Module) -> dict:
    """Initial bytes of each module variable (what a fresh device would hold)."""
    return L.initial_image(module)


# -- launches ---------------------------------------------------------------------------------
_LINE = 64


def _private_set(sizes: list) -> tuple:
    """Zeroed arrays of (count, dtype) each, on cache lines of their own, carved from one
    allocation, and their addresses. The chunks run in parallel and write their scratch
    constantly (frames, prefetch history), and two small numpy arrays often share a line,
    which would then bounce between the cores; one ``np.zeros`` for a native call's dozen
    arrays rather than twelve also shortens a small launch's set-up, as do addresses worked
    out from the allocation's (``ndarray.ctypes`` costs a microsecond an array)."""
    spans, total = [], 0
    for count, dtype in sizes:
        nbytes = count * np.dtype(dtype).itemsize
        spans.append((total, nbytes, dtype))
        total += -(-nbytes // _LINE) * _LINE + _LINE     # a spare line between neighbours
    raw = np.zeros(total + 2 * _LINE, np.uint8)
    address = raw.ctypes.data
    start = (-address) % _LINE + _LINE
    return ([raw[start + at:start + at + nbytes].view(dtype) for at, nbytes, dtype in spans],
            [address + start + at for at, _, _ in spans])


class _Chunk:
    """Scratch memory and the context array for one native call."""

    def __init__(self, ck: CompiledKernel, base_ctx: np.ndarray, base_table: np.ndarray,
                 nthreads: int, shared_size: int, printf_cap: int, windows: np.ndarray,
                 race_global: "_GlobalShadows" = None):
        nlocal = nthreads if ck.resumable else 1
        npad = (nthreads + 31) // 32 * 32
        if ck.vector:
            frame_bytes = ck.frame_bytes * (npad // 32)         # one per warp
        else:
            frame_bytes = ck.frame_bytes * npad if ck.resumable else 16
        if not ck.uses_printf:
            printf_cap = 0          # no record buffer (1 MiB by default) for kernels that never print
        arrays, addresses = _private_set([
            (base_ctx.size, base_ctx.dtype),
            (max(shared_size, 16), np.uint8),
            (max(ck.local_bytes * nlocal, 16), np.uint8),
            (8, np.int64),                                      # the error record
            (frame_bytes, np.uint8),
            (4 * npad if ck.resumable else 4, np.int64),        # warp exchange
            (16 * npad if ck.resumable else 16, np.int64),      # tensor-core exchange
            (max(L.PRINTF_RECORD_BYTES * printf_cap, 16), np.uint8),
            (16, np.int64),                                     # bar.arrive, per barrier id
            (1, np.int64),                                      # mbarrier changes
            (max(nthreads, 1), np.int64),                       # fault addresses
            (max(ck.prefetch_sites, 1), np.int64),
            (base_table.size, np.int64),                        # the buffer table
            (windows.size, np.int64)])                          # each parameter's buffer
        (self.ctx, self.shared, self.local, self.error, self.frames, self.exchange, self.matrix,
         self.printf, self.arrivals, self.progress, self.fault_addr, self.stride_history,
         table, self.param_windows) = arrays
        (_, shared_at, local_at, error_at, frames_at, exchange_at, matrix_at, printf_at,
         arrivals_at, progress_at, fault_at, history_at, table_at, windows_at) = addresses
        self.hazards = None
        if ck.racecheck:        # shadow memory, epochs, hazard records (racecheck_ir)
            (shadow, epochs, self.hazards), race_at = _private_set([
                (max(shared_size, 1) * RACE.SHADOW_BYTES, np.uint8),
                (max(nthreads, 1) * RACE.EPOCH_BYTES, np.uint8),
                (1 + RACE.HAZARD_CAPACITY * RACE.HAZARD_FIELDS, np.int64)])
            self.race_arrays = (shadow, epochs)
        self.ctx[:] = base_ctx
        # Each call has its own table: windows 1 and 2 map its shared and local memory, so
        # that generic addresses translate with one lookup whatever their window.
        self.table = table.reshape(base_table.shape)
        self.table[...] = base_table
        self.table[L.SHARED_WINDOW] = (L.buffer_address(L.SHARED_WINDOW), shared_at, shared_size)
        self.table[L.LOCAL_WINDOW] = (L.buffer_address(L.LOCAL_WINDOW), local_at,
                                      self.local.nbytes)
        self.param_windows[:] = windows.reshape(-1)
        c = self.ctx
        c[L.CTX["buftable"]] = table_at
        c[L.CTX["shared"]] = shared_at
        c[L.CTX["local"]] = local_at
        c[L.CTX["local_size"]] = ck.local_bytes
        c[L.CTX["error"]] = error_at
        c[L.CTX["frames"]] = frames_at
        c[L.CTX["exchange"]] = exchange_at
        c[L.CTX["matrix"]] = matrix_at
        c[L.CTX["printf"]] = printf_at
        c[L.CTX["arrivals"]] = arrivals_at
        c[L.CTX["progress"]] = progress_at
        c[L.CTX["fault_addr"]] = fault_at
        c[L.CTX["stride_history"]] = history_at
        c[L.CTX["param_windows"]] = windows_at
        c[L.CTX["printf_cap"]] = printf_cap
        c[L.CTX["printf_count"]] = 0
        if self.hazards is not None:
            c[L.CTX["race_shadow"]], c[L.CTX["race_epochs"]], c[L.CTX["hazards"]] = race_at
        if race_global is not None:     # racecheck: shadows of global buffers
            self.race_global = race_global
            c[L.CTX["race_global"]] = race_global.table.ctypes.data
            c[L.CTX["race_blocks"]] = race_global.blocks.ctypes.data
        self.address = self.ctx.ctypes.data


_pools: dict = {}
_pools_lock = threading.Lock()


def _pool(n: int) -> concurrent.futures.ThreadPoolExecutor:
    """A thread pool of ``n`` workers kept for the life of the process: starting threads
    for every launch costs more than a small kernel."""
    with _pools_lock:
        pool = _pools.get(n)
        if pool is None:
            pool = _pools[n] = concurrent.futures.ThreadPoolExecutor(n, thread_name_prefix="dptx-cpu")
        return pool


def param_windows(values: list, table: np.ndarray) -> np.ndarray:
    """The buffer-table row (first mapped address, host address, size) of the buffer each
    parameter value points into; zeros (nothing is inside) for values in no buffer."""
    out = np.zeros((max(len(values), 1), L.TABLE_ROW), np.int64)
    for i, value in enumerate(values):
        window = value >> L.WINDOW_SHIFT
        if 0 < window < len(table) and table[window, 1]:
            out[i] = table[window]
    return out


class _Buffers:
    """The device buffers of a launch in window order (module variables, then array
    arguments), whole numpy arrays or ``Window``s over part of a buffer."""

    def __init__(self):
        self.data = []      # host arrays (uint8 views of windows)
        self.offsets = []   # where each array starts in its buffer (0 unless a window)
        self.sizes = []     # bytes of each whole buffer
        self.names = []     # "argument 2 (p)", "module variable c"

    def add(self, buf, name: str) -> int:
        """Append a buffer; returns its window number."""
        if isinstance(buf, Window):
            self.data.append(buf.data)
            self.offsets.append(int(buf.offset))
        else:
            self.data.append(buf)
            self.offsets.append(0)
        self.sizes.append(int(buf.nbytes))
        self.names.append(name)
        return L.FIRST_BUFFER + len(self.data) - 1

    def table(self) -> np.ndarray:
        table = np.zeros((L.FIRST_BUFFER + len(self.data), L.TABLE_ROW), np.int64)
        for w, (data, offset) in enumerate(zip(self.data, self.offsets), L.FIRST_BUFFER):
            table[w] = (L.buffer_address(w, offset), data.ctypes.data, data.nbytes)
        return table

    def __len__(self):
        return len(self.data)

    def bytes_at(self, window: int, offset: int):
        """The host bytes from ``offset`` of buffer ``window`` to the end of what this launch
        holds of it; None where it holds nothing there."""
        i = window - L.FIRST_BUFFER
        if not 0 <= i < len(self.data):
            return None
        rel = offset - self.offsets[i]
        if not 0 <= rel < self.data[i].size:
            return None
        return self.data[i].view(np.uint8)[rel:]


def _release_grid_waits(workspace: np.ndarray) -> None:
    """Let blocks waiting at a cooperative groups grid.sync() go on (after another block
    stopped with an error): a wait ends when the top bit of the barrier word (bytes 4-7 of
    the workspace) changes, as the last block's arrival makes it."""
    word = workspace[4:8].view(np.uint32)
    word[0] ^= np.uint32(0x80000000)


def _piece_count(nblocks: int, workers: int) -> int:
    """Pieces to cut a launch into: several per thread when there are blocks enough, so that
    a thread slowed by another process (or by heavier blocks) gets fewer of them; one per
    thread for small launches, where each extra native call (a few microseconds) shows."""
    return workers * 8 if nblocks >= 64 * workers else workers


class _Pieces:
    """The blocks of a launch handed to threads a piece at a time. Pieces start at
    ``len / parts`` blocks and halve (to one block) while a piece runs longer than
    PIECE_SECONDS, so that a stop (an error, the time limit, Ctrl-C, all seen between
    pieces) takes effect within a fraction of a second of any kernel whose blocks do."""

    def __init__(self, blocks: range, parts: int, adapt: bool = True):
        # block ranges not started, lowest first: the launch's, and the tails of pieces that
        # a stalled block gave back (``release``)
        self.pending = [(blocks.start, blocks.stop)] if len(blocks) else []
        self.end = blocks.stop
        self.size = max(1, -(-len(blocks) // max(1, parts)))
        self.count = max(1, min(parts, len(blocks)))
        self.adapt = adapt
        self.running: set = set()
        self.stopped: set = set()

    def take(self):
        if not self.pending:
            return None
        a, end = self.pending[0]
        z = min(end, a + self.size)
        if z < end:
            self.pending[0] = (z, end)
        else:
            self.pending.pop(0)
        self.running.add((a, z))
        return a, z

    def release(self, a: int, z: int, cap: int) -> None:
        """Running piece [a, z) will stop before block ``cap`` (a block of it is stalled in
        a spin-wait): [cap, z) goes back to be taken, before any later block."""
        self.running.discard((a, z))
        self.running.add((a, cap))
        self.pending.append((cap, z))
        self.pending.sort()

    def done(self, a: int, z: int, seconds: float, stopped: bool = False) -> None:
        """Piece [a, z) ended (``stopped``: by the launch's stop request, unfinished)."""
        self.running.discard((a, z))
        if stopped:
            self.stopped.add((a, z))
        if self.adapt and seconds > PIECE_SECONDS and self.size > 1:
            self.size = max(1, int(self.size * PIECE_SECONDS / seconds))

    def unfinished(self) -> bool:
        return bool(self.pending) or bool(self.running) or bool(self.stopped)

    def describe_unfinished(self, launch_end: int) -> str:
        """The block ranges stopped, still running or not started (up to the launch's last
        block), adjacent ones merged."""
        ranges = sorted(self.running | self.stopped | set(self.pending)
                        | ({(self.end, launch_end)} if self.end < launch_end else set()))
        merged = []
        for a, z in ranges:
            if merged and merged[-1][1] == a:
                merged[-1][1] = z
            else:
                merged.append([a, z])
        return ", ".join(f"[{a}, {z})" for a, z in merged)


PIECE_SECONDS = 0.2
_BLOCK_CAP, _STALLED = L.CTX["block_cap"], L.CTX["stalled"]


def resident_blocks(threads_per_block: int) -> int:
    """Blocks of a launch a GPU runs at once: an A100's 108 SMs each hold up to 32 blocks
    and 2048 threads (compute capability 8.0). Blocks that wait on later ones complete up
    to this many on a GPU, as they do here."""
    return 108 * max(1, min(32, 2048 // max(1, threads_per_block)))


def nanosleep_scale() -> float:
    """The ``dptx.nanosleep-scale`` setting (what nanosleep durations are multiplied by)."""
    value = config.get("nanosleep-scale", 1.0)
    try:
        scale = float(1.0 if value is None else value)
    except (TypeError, ValueError):
        scale = -1.0
    if not scale >= 0 or scale == float("inf"):
        raise DptxError(f"dptx.nanosleep-scale={value!r}: a factor >= 0 (1: as the kernel "
                        f"asks; 0.25: a node 4 times faster)")
    return scale


GLOBAL_SHADOW_BYTES = 256 << 20     # racecheck's shadows of global buffers, at most, per launch


def _global_shadows(kernel, buffers, arg_windows: dict, var_windows: dict) -> list:
    """racecheck: [(window, shadow bytes)] of the global buffers of a launch to shadow: one
    entry per byte (renderer/racecheck_ir.GLOBAL_SHADOW_BYTES) of each buffer the kernel may
    write (one it only reads cannot race), in order while they fit in GLOBAL_SHADOW_BYTES (the
    rest go unchecked)."""
    written = merge_facts(kernel.module, kernel.function).written     # None: any
    read_only = set() if written is None else \
        {w for i, w in arg_windows.items() if ("param", i) not in written} | \
        {w for name, w in var_windows.items() if ("var", name) not in written}
    found, total = [], 0
    for i, data in enumerate(buffers.data):
        size = data.nbytes * RACE.GLOBAL_SHADOW_BYTES
        if not size or L.FIRST_BUFFER + i in read_only or total + size > GLOBAL_SHADOW_BYTES:
            continue
        found.append((L.FIRST_BUFFER + i, size))
        total += size
    return found


class _GlobalShadows:
    """racecheck on global memory: the shadows of the buffers ``_global_shadows`` chose (a
    table of their host addresses per window) and the blocks' ordering state
    (renderer/racecheck_ir.py, BLOCK_SLOTS). One for the whole launch when its blocks run one
    after another, so that every block is compared with those before it; one per native call
    where blocks run side by side (cooperative launches, spin-waits)."""

    def __init__(self, race_windows: list, nwindows: int):
        self.table = np.zeros(nwindows, np.int64)
        self.shadows = [np.zeros(size, np.uint8) for _, size in race_windows]
        for (w, _), shadow in zip(race_windows, self.shadows):
            self.table[w] = shadow.ctypes.data
        self.blocks = np.zeros(8 + RACE.BLOCK_SLOTS * RACE.BLOCK_SLOT_BYTES, np.uint8)


def _init_maps(buffers, table, unwritten, arg_windows: dict, var_windows: dict):
    """initcheck: (the per-window table of init map addresses, {window: map}): a byte per byte
    of each window holding unwritten bytes, 0 for those. (Module variables are written: .global
    variables without an initializer hold zeros, as C++ zero-initializes static storage.)"""
    by_window = {}
    given_args, given_vars = unwritten or ({}, {})
    for i, ranges in (given_args or {}).items():
        if i in arg_windows and ranges:
            by_window.setdefault(arg_windows[i], []).extend(ranges)
    for name, ranges in (given_vars or {}).items():
        if name in var_windows and ranges:
            by_window.setdefault(var_windows[name], []).extend(ranges)
    addresses = np.zeros(max(len(table), 1), np.int64)
    maps = {}
    for w, ranges in by_window.items():
        i = w - L.FIRST_BUFFER
        data, offset = buffers.data[i], buffers.offsets[i]
        m = np.ones(data.nbytes, np.uint8)
        for lo, hi in ranges:
            lo, hi = max(lo - offset, 0), min(hi - offset, data.nbytes)
            if lo < hi:
                m[lo:hi] = 0
        maps[w] = m
        addresses[w] = m.ctypes.data
    return addresses, maps


def _map_pointer(buffers, a, name: str, kernel) -> int:
    """Map a pointer argument's buffer (a numpy array, a ``Window`` over one, or a ``Pointer``
    into one: a view, ``d_ptr + n``, which maps its whole buffer, as it may reach any byte
    of it) and return the device address the kernel gets. ``name`` is "argument i (p" ."""
    whole = a.base if isinstance(a, Pointer) else a
    data = whole.data if isinstance(whole, Window) else whole
    if data.dtype.hasobject:
        raise LaunchError(f"{name}) of kernel {kernel.name}: an array of dtype {data.dtype} "
                          f"holds Python objects, not device data; pass an array of numbers")
    if not (data.flags.c_contiguous and data.flags.writeable):
        raise LaunchError(f"{name}) of kernel {kernel.name}: arrays must be C-contiguous and "
                          f"writeable (np.ascontiguousarray)")
    window = buffers.add(whole, f"{name}, {a.describe()})" if isinstance(a, Pointer)
                         else f"{name})")
    return L.buffer_address(window) + (a.offset if isinstance(a, Pointer) else 0)


@_naming_source_lines
def launch(kernel, grid, block, args, shared_mem: int = 0, blocks=None, globals=None,
           threads=None, printf_capacity: int = 4096, cooperative: bool = False,
           heap_size: int = DEFAULT_HEAP_BYTES, timeout: float = None,
           stop_request: np.ndarray = None, sanitize: str = None, unwritten=None):
    """Run ``kernel`` on numpy arrays in this process. ``blocks`` restricts the run to a range
    of linear block ids; ``globals`` maps module variable names to uint8 buffers to use
    instead of the module's own (the distributed layer passes private copies); ``threads``
    is the number of parallel native calls (default: every core). ``cooperative``: a
    cooperative launch (cudaLaunchCooperativeKernel): every block runs at once on a thread
    of its own, and cooperative groups' grid.sync() has its workspace. ``heap_size``: the
    bytes of the launch's device heap, for kernels that call malloc (CUDA's default 8 MiB;
    malloc returns NULL when it is used up). ``timeout``: seconds the launch may run
    (default: the ``dptx.kernel-timeout`` setting, None: no limit), checked between pieces
    of blocks and at every loop back edge; past it, ``DptxTimeoutError``. Ctrl-C stops a
    launch the same way (KeyboardInterrupt). ``sanitize``: a sanitizer tool ("memcheck",
    "racecheck", "synccheck", "initcheck"; default: the ``dptx.sanitize`` setting), whose
    reports go to ``dptx.device.sanitizer``. ``unwritten``: for initcheck, the bytes nothing
    wrote, ({argument index: [(lo, hi), ...]}, {module variable: [...]}) in each buffer's
    terms (the cluster's tasks pass what the client knows of arrays made by ``dptx.empty``)."""
    if not hasattr(kernel, "function") or not hasattr(kernel, "module"):
        raise LaunchError(f"dptx.cpu.launch takes a kernel (RawModule(...).get_function(name) "
                          f"or dptx.RawKernel), got {type(kernel).__name__} {kernel!r}")
    g, b = check_shape(grid, block, shared_mem)
    check_arg_count(kernel, args)
    tool = sanitizer.tool(sanitize)
    try:
        return _launch(kernel, g, b, args, shared_mem, blocks, globals, threads,
                       printf_capacity, cooperative, heap_size, timeout, stop_request,
                       tool, unwritten)
    except DptxMemoryError as exc:
        if tool is not None:    # memcheck's report (racecheck's builds check memory too)
            named = name_in_source(exc, [kernel]).args[0]
            ptx = getattr(kernel, "ptx", None)
            named = with_source_lines(named, ptx) if ptx else named
            sanitizer.report({"tool": "memcheck", "kind": "memory", "kernel": kernel.name,
                              "message": named,
                              "key": ["memcheck", kernel.name, named.split(":")[0]]})
        raise
    except DptxDeadlockError as exc:
        if tool == "synccheck":     # a barrier count that cannot be met: synccheck's report
            named = name_in_source(exc, [kernel]).args[0]
            ptx = getattr(kernel, "ptx", None)
            named = with_source_lines(named, ptx) if ptx else named
            sanitizer.report({"tool": "synccheck", "kind": "DEADLOCK", "kernel": kernel.name,
                              "message": named,
                              "key": ["synccheck", kernel.name, "DEADLOCK",
                                      _statement(named)]})
        raise


def _statement(message: str) -> str:
    """The "PTX line N (file.cu:M)" an error message names (else the message)."""
    found = re.search(r"PTX line \d+(?: \([^()]+\))?", message)
    return found.group(0) if found else message


def _launch(kernel, g, b, args, shared_mem, blocks, globals, threads, printf_capacity,
            cooperative, heap_size, timeout, stop_request, tool, unwritten):
    # the checked build serves racecheck, synccheck and initcheck (renderer/racecheck_ir.py)
    racecheck = tool in ("racecheck", "synccheck", "initcheck")
    ck = compile_kernel(kernel, racecheck=racecheck)
    for form in (ck, ck.alternative):
        if form is not None:
            form.upgrade()
    nblocks = g[0] * g[1] * g[2]
    rng = range(nblocks) if blocks is None else blocks
    if not isinstance(rng, range) or rng.step != 1 or not (0 <= rng.start <= rng.stop <= nblocks):
        raise LaunchError(f"blocks={blocks!r} must be a contiguous range inside the "
                          f"{nblocks} blocks of the grid")
    if cooperative and (len(rng) != nblocks or nblocks > MAX_COOPERATIVE_BLOCKS):
        raise LaunchError(
            f"cooperative launch of kernel {kernel.name}: its {nblocks} blocks must all run "
            f"at once, and at most {MAX_COOPERATIVE_BLOCKS} can (too large for a cooperative "
            f"launch, as cudaErrorCooperativeLaunchTooLarge)" if len(rng) == nblocks else
            f"cooperative launch of kernel {kernel.name}: the whole grid runs at once "
            f"(blocks={blocks!r} is a part of it)")
    if len(rng) == 0:
        return
    nthreads = b[0] * b[1] * b[2]

    # buffer table: module variables first (fixed windows), then array arguments; a kernel
    # that knows where its module's variables live in this process says so (dptx.RawKernel:
    # they may have been on the cluster)
    located = getattr(kernel, "module_variables", None)
    state = located() if globals is None and located is not None else module_state(kernel.module)
    buffers = _Buffers()
    var_windows, arg_windows = {}, {}     # (for initcheck's maps)
    for v in ck.variables:
        buf = (globals or {}).get(v.name, state[v.name])
        if buf.nbytes != v.size:    # (a Window's nbytes is its whole buffer's)
            raise LaunchError(f"buffer for module variable {v.name} has {buf.nbytes} "
                              f"bytes, the variable {v.size}")
        var_windows[v.name] = buffers.add(buf, f"module variable {v.name}")
    param_buf = np.zeros(max(kernel.function.param_size, 8), np.uint8)
    pointer_values = []     # each parameter's 64-bit value (0 for narrower ones)
    for i, ((p, off), a) in enumerate(zip(kernel.function.param_layout(), args)):
        if isinstance(a, (np.ndarray, Window, Pointer)) and \
                not (isinstance(a, np.ndarray) and a.dtype.fields is not None):
            if p.size != 8:
                raise LaunchError(f"argument {i} ({p.name}: .{p.type}) of kernel {kernel.name} "
                                  f"is not a pointer, got a numpy array")
            address = _map_pointer(buffers, a, f"argument {i} ({p.name}", kernel)
            arg_windows[i] = address >> L.WINDOW_SHIFT
            raw = address.to_bytes(8, "little")
        elif isinstance(a, StructValue):
            if len(a.raw) != p.size:
                raise LaunchError(f"argument {i} ({p.name}) of kernel {kernel.name}: expected "
                                  f"{p.size} bytes, got a {len(a.raw)}-byte struct")
            raw = a.patched(lambda at, target: _map_pointer(
                buffers, target, f"argument {i} ({p.name}), the pointer at byte {at}", kernel))
        else:
            value = convert_scalar(p, i, a, kernel.name)
            raw = value if isinstance(value, bytes) else value.tobytes()
        param_buf[off:off + len(raw)] = np.frombuffer(raw, np.uint8)
        pointer_values.append(int.from_bytes(raw, "little") if p.size == 8 else 0)
    if _misaligned_parameters(ck, pointer_values):
        # a view off the alignment the build assumed of pointers: the build that assumes none
        ck = compile_kernel(kernel, aligned_params=False, racecheck=racecheck)
        for form in (ck, ck.alternative):
            if form is not None:
                form.upgrade()
    workspace = None
    if cooperative:
        # what cooperative groups' grid.sync() counts arrivals in (zeroed per launch)
        workspace = np.zeros(64, np.uint8)
        workspace_address = L.buffer_address(buffers.add(workspace, "the grid-sync workspace"))
    heap = None
    if ck.uses_malloc:
        if int(heap_size) < HEAP_HEADER_BYTES:
            raise LaunchError(f"heap_size={heap_size}: the device heap needs at least "
                              f"{HEAP_HEADER_BYTES} bytes")
        heap = np.zeros(int(heap_size), np.uint8)
        init_heap(heap)
        heap_address = L.buffer_address(buffers.add(heap, "the device heap (malloc)"))
    table = buffers.table()

    shared_size = ck.shared_static + int(shared_mem)
    base = np.zeros(len(L.CTX_FIELDS), np.int64)
    base[L.CTX["buftable"]] = table.ctypes.data
    base[L.CTX["nbuf"]] = len(table)
    base[L.CTX["params"]] = param_buf.ctypes.data
    for axis, i in zip("xyz", range(3)):
        base[L.CTX["grid_" + axis]] = g[i]
        base[L.CTX["block_" + axis]] = b[i]
    base[L.CTX["shared_size"]] = shared_size
    base[L.CTX["dynamic_smem"]] = int(shared_mem)
    base[L.CTX["total_smem"]] = shared_size
    if workspace is not None:
        base[L.CTX["grid_workspace"]] = workspace_address
    if heap is not None:
        base[L.CTX["heap"]] = heap.ctypes.data
        base[L.CTX["heap_address"]] = heap_address
        base[L.CTX["heap_size"]] = heap.nbytes

    workers = threads or os.cpu_count() or 1
    timeout = config.get("kernel-timeout") if timeout is None else timeout
    timeout = float(timeout) if timeout not in (None, False, 0) else None
    if timeout is not None and timeout < 0:
        raise LaunchError(f"timeout={timeout}: a kernel time limit is a number of seconds > 0")
    deadline = time.monotonic() + timeout if timeout is not None else None
    # what every loop back edge of the kernel reads (address_space.STOP_*): set at the
    # deadline by a timer, or on Ctrl-C, it ends the threads still looping
    if stop_request is None:        # (a worker's chunk passes its own: watchdog.stop_task)
        stop_request = np.zeros(1, np.int32)
    base[L.CTX["stop"]] = stop_request.ctypes.data
    thread_ids = L.thread_id_table(tuple(b))     # (cached per block shape: lives on)
    base[L.CTX["thread_ids"]] = thread_ids.ctypes.data
    base.view(np.float64)[L.CTX["sleep_scale"]] = nanosleep_scale()
    # racecheck: shadows of the global buffers; blocks that may run side by side (cooperative
    # launches, spin-waits) are compared within each native call, the others one after another
    # on one thread, each with the blocks before it
    race_windows = _global_shadows(kernel, buffers, arg_windows, var_windows) \
        if tool == "racecheck" else []
    race_launch = None
    if race_windows and not cooperative and not any(
            form is not None and form.spin_waits for form in (ck, ck.alternative)):
        race_launch = _GlobalShadows(race_windows, len(table))
        workers = 1

    def race_global():
        """The global shadows a new native call uses (None: no racecheck on global memory)."""
        if race_launch is not None or not race_windows:
            return race_launch
        return _GlobalShadows(race_windows, len(table))
    init_maps = None
    if tool == "initcheck":
        init_maps = _init_maps(buffers, table, unwritten, arg_windows, var_windows)
        base[L.CTX["init_maps"]] = init_maps[0].ctypes.data

    def execute(form, blocks_range):
        """Run ``blocks_range`` with compiled ``form`` on ``workers`` threads that take pieces
        of the range as they come free (a busy core or uneven blocks then cost less than a
        fixed split would). Returns (chunks, failures, printed): the scratch of each thread,
        (piece start, chunk) of the pieces that stopped with an error, and (piece start,
        chunk, first, end) ranges of printf records, to print in block order."""
        if cooperative:     # every block at once, each on a thread of its own
            pieces = _Pieces(blocks_range, len(blocks_range), adapt=False)
            nthr = len(blocks_range)
        else:
            pieces = _Pieces(blocks_range, _piece_count(len(blocks_range), workers))
            nthr = min(workers, pieces.count)
        windows = param_windows(pointer_values, table)
        chunks = [_Chunk(form, base, table, nthreads, shared_size, printf_capacity, windows,
                         race_global())
                  for _ in range(nthr)]
        lock = threading.Lock()
        failures, printed = [], []
        held = [None] * nthr        # the piece each thread's native call runs
        stop = threading.Event()    # set by the first failure, a timeout or Ctrl-C: start no
                                    # more pieces anywhere

        def reclaim(w):
            """(Under ``lock``.) A block of thread ``w``'s piece stalled in a spin-wait and
            lowered its call's block_cap: the blocks after it go back to be taken."""
            if held[w] is not None:
                a, z = held[w]
                cap = int(chunks[w].ctx[_BLOCK_CAP])
                if a < cap < z:
                    pieces.release(a, z, cap)
                    held[w] = (a, cap)

        def work(w):
            chunk = chunks[w]
            ctx = chunk.address
            while not stop.is_set():
                if stop_request[0] or (deadline is not None and time.monotonic() > deadline):
                    stop.set()
                    return
                with lock:
                    piece = held[w] = pieces.take()
                if piece is None:
                    return
                a, z = piece
                chunk.ctx[_BLOCK_CAP] = z
                chunk.ctx[_STALLED] = 0
                started = time.perf_counter()
                before = int(chunk.ctx[L.CTX["printf_count"]])
                r = form.run(ctx, a, z)
                after = int(chunk.ctx[L.CTX["printf_count"]])
                stopped = r != 0 and int(chunk.error[0]) == L.ERR_STOPPED
                with lock:
                    reclaim(w)
                    a, z = held[w]
                    held[w] = None
                    pieces.done(a, z, time.perf_counter() - started, stopped)
                    if after != before:
                        printed.append((a, chunk, before, after))
                    if r != 0 and not stopped:
                        failures.append((a, chunk))
                    if r != 0:
                        stop.set()
                if r != 0:
                    return

        def interrupted():
            """Ctrl-C (or another exception) while the launch runs: ask every thread to
            stop, at its next piece or loop back edge."""
            request_stop(stop_request, L.STOP_INTERRUPT)
            stop.set()

        def resident():
            """(Under ``lock``.) Blocks of a kernel with spin-waits may wait on later ones,
            which a GPU runs beside them: once every thread's block is stalled, the next
            blocks get a thread of their own, up to the blocks a GPU holds resident."""
            for w in range(len(chunks)):
                if chunks[w].ctx[_STALLED]:
                    reclaim(w)
            alive = [w for w, t in enumerate(block_threads) if t.is_alive()]
            if pieces.pending and len(chunks) < resident_blocks(nthreads) and \
                    all(held[w] is not None and chunks[w].ctx[_STALLED] for w in alive):
                chunks.append(_Chunk(form, base, table, nthreads, shared_size,
                                     printf_capacity, windows))
                held.append(None)
                block_threads.append(threading.Thread(
                    target=work, args=(len(chunks) - 1,), daemon=True,
                    name=f"dptx-block-{len(chunks) - 1}"))
                block_threads[-1].start()

        others = []
        if (cooperative and nthr > 1) or form.spin_waits:
            block_threads = [threading.Thread(target=work, args=(w,), daemon=True,
                                              name=f"dptx-block-{w}") for w in range(nthr)]
            for t in block_threads:
                t.start()
            try:
                watch = form.spin_waits and not cooperative
                while any(t.is_alive() for t in block_threads):
                    next(t for t in block_threads if t.is_alive()).join(0.002 if watch else 0.01)
                    if watch:
                        with lock:
                            resident()
                    if cooperative and (failures or stop.is_set()):
                        # a GPU aborts the whole grid on a fault; here the other blocks may
                        # wait at a grid.sync() for the one that stopped: end their waits
                        _release_grid_waits(workspace)
            except BaseException:
                interrupted()
                if workspace is not None:
                    _release_grid_waits(workspace)
                for t in list(block_threads):
                    t.join()
                raise
        else:
            with (interrupts_stop(stop_request) if form.loops else contextlib.nullcontext(True)) \
                    as reachable:
                if reachable:
                    # the calling thread works too: one thread fewer to wake and wait on
                    others = [_pool(nthr - 1).submit(work, w) for w in range(1, nthr)]
                    try:
                        work(0)
                    except BaseException:   # Ctrl-C (raised once this thread's piece ended):
                        interrupted()       # the others stop at their next back edge or piece
                        raise
                    finally:
                        concurrent.futures.wait(others)   # never leave a piece running behind
                else:
                    # a block may loop for ever and Ctrl-C cannot reach the stop request
                    # from native code: every piece on a pool thread, this one waiting
                    others = [_pool(nthr).submit(work, w) for w in range(nthr)]
                    try:
                        while concurrent.futures.wait(others, timeout=0.1)[1]:
                            pass
                    except BaseException:
                        interrupted()
                        concurrent.futures.wait(others)
                        raise
            for f in others:
                f.result()
        if not failures and pieces.unfinished():
            if stop_request[0] == L.STOP_INTERRUPT:
                raise KeyboardInterrupt
            if stop_request[0] == L.STOP_CANCELLED:
                raise DptxError(f"kernel {kernel.name}: the launch was cancelled and stopped")
            if deadline is not None:
                raise DptxTimeoutError(
                    f"kernel {kernel.name} ran past its time limit of {timeout:g} s "
                    f"(dptx.kernel-timeout) and was stopped: blocks "
                    f"{pieces.describe_unfinished(rng.stop)} "
                    f"of the launch's {nblocks} had not finished; arrays it wrote are partly "
                    f"written")
        if form.racecheck:
            found_hazards.extend(chunk.hazards.copy() for chunk in chunks)
        return chunks, sorted(failures, key=lambda f: f[0]), printed

    found_hazards = []      # racecheck builds: each native call's hazard records
    alarm = WATCHDOG.arm(deadline, stop_request) if deadline is not None else None
    try:
        runs = _run_forms(ck, execute, nblocks, nthreads, args, rng, workers, cooperative)
    finally:
        if alarm is not None:
            WATCHDOG.disarm(alarm)
    keep_alive = (table, param_buf, buffers, heap, stop_request)  # noqa: F841 - native code points into these
    _print_records(kernel, [p for run in runs for p in run[2]], buffers)
    if found_hazards:
        report_hazards(kernel, found_hazards, g, b, tool,
                       place=lambda addr: _place(addr, buffers))
    for form, failures, _ in runs:
        if failures:
            raise _error(kernel, form, failures[0][1].error, g, b, buffers, shared_size)


def _run_forms(ck, execute, nblocks, nthreads, args, rng, workers, cooperative) -> list:
    """Run the launch's blocks with the kernel's form for this kind of launch, or, the
    first time, measure both forms on halves of the blocks and keep the faster. Returns
    (form, failures, printed) per run."""
    kind = launch_class(nblocks, nthreads, args) if ck.alternative is not None else None
    if ck.alternative is not None and kind not in ck.chosen and len(rng) >= 8 * workers \
            and not cooperative and ck.final and ck.alternative.final \
            and ck.tier == ck.alternative.tier:
        # measure both forms on half of the blocks each, keep the faster per block; in the
        # order A B B A over quarters, so that neither form alone pays for the first run's
        # cold caches and page faults (run first on half the blocks, the vector form of a
        # grid-stride loop once measured 3x slower than it is, and lost)
        cuts = [rng.start + len(rng) * q // 4 for q in range(5)]
        spent = {ck: [0.0, 0], ck.alternative: [0.0, 0]}     # form -> [seconds, blocks]
        runs = []
        for form, a, z in zip((ck, ck.alternative, ck.alternative, ck), cuts, cuts[1:]):
            if z <= a:
                continue
            t0 = time.perf_counter()
            chunks, failures, printed = execute(form, range(a, z))
            spent[form][0] += time.perf_counter() - t0
            spent[form][1] += z - a
            runs.append((form, failures, printed))
            if failures:    # the lowest faulting block is in this quarter: no more blocks
                break
        if len(ck.chosen) >= 64:      # a kernel launched in endless kinds of ways
            ck.chosen.pop(next(iter(ck.chosen)))
        ck.chosen[kind] = min((f for f in spent if spent[f][1]), key=lambda f: spent[f][0] / spent[f][1])
    else:
        form = ck.chosen.get(kind, ck)
        chunks, failures, printed = execute(form, rng)
        runs = [(form, failures, printed)]
    return runs


def launch_class(nblocks: int, nthreads: int, args) -> tuple:
    """Launches alike for the choice between a kernel's two forms: the block size and the
    magnitudes (powers of two) of the grid and of the integer scalar arguments. A loop's trip
    count follows these (a grid-stride loop runs n / (grid * block) times): a first launch
    whose threads loop once picks the per-thread form, which runs 4x slower than the
    warp-vectorized one where each loops 8 times."""
    sizes = tuple(int(a).bit_length() for a in args
                  if isinstance(a, (int, np.integer)) and not isinstance(a, (bool, np.bool_)))
    return nthreads, nblocks.bit_length(), sizes


# -- errors --------------------------------------------------------------------------------------
def _coords(linear: int, dims: tuple) -> tuple:
    x = linear % dims[0]
    y = (linear // dims[0]) % dims[1]
    z = linear // (dims[0] * dims[1])
    return (x, y, z)


def _source_line(kernel, line: int) -> str:
    ptx = getattr(kernel, "ptx", "") or ""
    lines = ptx.splitlines()
    return lines[line - 1].strip() if 0 < line <= len(lines) else ""


def _before_next_buffer(addr: int, i: int, buffers):
    """Bytes from ``addr`` up to the start of buffer ``i``, where buffer ``i`` exists and
    ``addr`` lies in the window just below its own (an index gone negative: p[-128])."""
    if not 0 <= i < len(buffers):
        return None
    start = (L.FIRST_BUFFER + i) << L.WINDOW_SHIFT
    below = start - addr
    return below if 0 < below <= L.OFFSET_MASK + 1 else None


def _place(addr: int, buffers) -> str:
    """Where a device address lies, in the user's terms."""
    window, offset = addr >> L.WINDOW_SHIFT, addr & L.OFFSET_MASK
    if window == L.SHARED_WINDOW:
        return f"shared memory offset {offset}"
    if window == L.LOCAL_WINDOW:
        return f"local memory offset {offset}"
    if L.FIRST_BUFFER <= window < L.FIRST_BUFFER + len(buffers):
        return f"byte {offset} of {buffers.names[window - L.FIRST_BUFFER]}"
    return "not in any device buffer"


def _error(kernel, ck, record, g, b, buffers, shared_size):
    code, addr, line, tid, blk, size = (int(v) for v in record[:6])
    where = (f"kernel {kernel.name}, block {blk} {_coords(blk, g)}, thread {tid} "
             f"{_coords(tid, b)}, PTX line {line}")
    text = _source_line(kernel, line)
    if text:
        where += f": {text}"
    if code == L.ERR_BOUNDS:
        window, offset = addr >> L.WINDOW_SHIFT, addr & L.OFFSET_MASK
        # an access inside a mapped region faults when its pointer came from another buffer
        # (function.require_window): a large offset carried it out of its own
        elsewhere = ("; the pointer it was computed from points into another buffer: a large "
                     "offset carried it out of its own")
        if window == L.SHARED_WINDOW:
            what = f"shared memory offset {offset} (+{size} bytes) is outside the block's {shared_size} bytes"
            if offset + size <= shared_size:
                what = f"address {addr:#x} is in the block's shared memory{elsewhere}"
        elif window == L.LOCAL_WINDOW:
            what = f"local memory offset {offset} (+{size} bytes) is outside the thread's {ck.local_bytes} bytes"
            before = _before_next_buffer(addr, 0, buffers)
            if offset + size <= ck.local_bytes:
                what = f"address {addr:#x} is in the thread's local memory{elsewhere}"
            elif before is not None and before <= 1 << 32:     # an index gone negative
                what = (f"address {addr:#x} is {before} bytes before the start of "
                        f"{buffers.names[0]} ({buffers.sizes[0]} bytes)")
        elif L.FIRST_BUFFER <= window < L.FIRST_BUFFER + len(buffers):
            i = window - L.FIRST_BUFFER
            name, nbytes = buffers.names[i], buffers.sizes[i]
            lo = buffers.offsets[i]
            hi = lo + buffers.data[i].size
            if offset + size <= nbytes and not (lo <= offset and offset + size <= hi):
                return FootprintViolation(
                    f"{where}: the {size}-byte access at offset {offset} of {name} "
                    f"({nbytes} bytes) is outside bytes [{lo}, {hi}), the window this chunk "
                    f"was given by the kernel's access footprint", kernel.name, name)
            what = (f"address {addr:#x} is {offset} bytes into {name} "
                    f"({nbytes} bytes); the {size}-byte access ends past it")
            if offset + size <= nbytes:
                what = f"address {addr:#x} is {offset} bytes into {name}{elsewhere}"
            before = _before_next_buffer(addr, i + 1, buffers)
            if before is not None and before < offset - nbytes:
                what = (f"address {addr:#x} is {before} bytes before the start of "
                        f"{buffers.names[i + 1]} ({buffers.sizes[i + 1]} bytes)")
        elif _before_next_buffer(addr, 0, buffers) is not None:
            what = (f"address {addr:#x} is {_before_next_buffer(addr, 0, buffers)} bytes before "
                    f"the start of {buffers.names[0]} ({buffers.sizes[0]} bytes)")
        else:
            what = f"address {addr:#x} is not in any device buffer"
        return DptxMemoryError(f"out-of-bounds access in {where}: {what}. The kernel was "
                               f"stopped; arrays it did not write are unchanged.")
    if code == L.ERR_MISALIGNED:
        return DptxMemoryError(
            f"misaligned address in {where}: the {size}-byte access at {addr:#x} "
            f"({_place(addr, buffers)}) is not at a multiple of {L.alignment(size)} bytes, as "
            f"PTX requires (a GPU stops with cudaErrorMisalignedAddress). The kernel was "
            f"stopped; arrays it did not write are unchanged.")
    if code == L.ERR_PARAM:
        return DptxMemoryError(
            f"out-of-bounds access in {where}: parameter space offset {addr} (+{size} bytes) "
            f"is outside the kernel's {max(kernel.function.param_size, 8)} bytes of "
            f"parameters. The kernel was stopped.")
    if code == L.ERR_DEADLOCK:
        return DptxDeadlockError(
            f"deadlock in {where}: threads wait at a barrier for {addr} threads, which never "
            f"all arrive (the others exited or wait elsewhere)")
    if code == L.ERR_STACK and addr == L.NATIVE_STACK_OVERFLOW:
        return DptxMemoryError(f"call stack overflow in {where}: device-function calls nested "
                               f"deeper than the CPU executor's {L.NATIVE_STACK // 1024} KiB "
                               f"call stack per thread (unbounded recursion?). The kernel was "
                               f"stopped.")
    if code == L.ERR_STACK:
        return DptxMemoryError(f"local memory (call stack) overflow in {where}: recursion "
                               f"deeper than the {ck.local_bytes}-byte per-thread stack")
    if code == L.ERR_WGMMA_DESCRIPTOR:
        return PtxUnsupportedError(
            f"wgmma matrix descriptor {addr:#x} in {where}: a non-zero base offset (a swizzle "
            f"pattern that does not start at a multiple of its size) is not supported by the "
            f"CPU executor")
    if code == L.ERR_MBARRIER:
        return DptxDeadlockError(f"deadlock in {where}: threads wait on an mbarrier phase that never "
                         f"completes (its expected arrivals or transaction bytes are never "
                         f"all there)")
    if code == L.ERR_FREE:
        return DptxMemoryError(f"free() of address {addr:#x} in {where}: not a block malloc() "
                               f"returned in this launch, or freed already. The kernel was "
                               f"stopped.")
    if code == L.ERR_TRAP:
        hint = ""
        if getattr(ck, "uses_grid_workspace", False):
            hint = (" (the kernel uses cooperative groups' grid: grid.sync() traps unless the "
                    "launch is cooperative: kernel(..., enable_cooperative_groups=True), "
                    "dptx.cpu.launch(..., cooperative=True))")
        return DptxError(f"trap instruction executed in {where}{hint}")
    if code == L.ERR_ASSERT:
        file, cline, func = int(record[5]), int(record[6]), int(record[7])
        return DptxError(f"device assertion failed in {where}: {_read_cstring(file, buffers)}:"
                         f"{cline}: {_read_cstring(func, buffers)}: Assertion "
                         f"`{_read_cstring(addr, buffers)}` failed. The kernel was stopped.")
    return DptxError(f"kernel {kernel.name} failed with code {code} in {where}")


# -- printf ----------------------------------------------------------------------------------------
_SPEC = re.compile(r"%([-+ #0]*)(\*|\d+)?(?:\.(\*|\d+))?(hh|h|ll|l|j|z|t|L)?([diouxXeEfFgGaAcspn%])")


def _read_cstring(addr: int, buffers) -> str:
    raw = buffers.bytes_at(addr >> L.WINDOW_SHIFT, addr & L.OFFSET_MASK)
    if raw is None:
        return "(bad string pointer)"
    raw = raw.tobytes()
    end = raw.find(b"\0")
    return raw[:end if end >= 0 else len(raw)].decode(errors="replace")


def format_printf(fmt: str, args: bytes, buffers) -> str:
    out, pos, last = [], 0, 0
    for m in _SPEC.finditer(fmt):
        out.append(fmt[last:m.start()])
        last = m.end()
        flags, width, prec, length, conv = m.groups()
        if conv == "%":
            out.append("%")
            continue
        if conv in "eEfFgGaA":
            size, kind = 8, "d"
        elif conv in "sp":
            size, kind = 8, "Q"
        elif length in ("ll", "l", "j", "z", "t"):
            size, kind = 8, ("q" if conv in "di" else "Q")
        else:
            size, kind = 4, ("i" if conv in "dic" else "I")
        pos = (pos + size - 1) // size * size
        if pos + size > len(args):
            out.append(m.group(0))
            continue
        value = np.frombuffer(args[pos:pos + size], {"d": np.float64, "Q": np.uint64, "q": np.int64,
                                                     "i": np.int32, "I": np.uint32}[kind])[0]
        pos += size
        spec = "%" + (flags or "") + (width or "") + ("." + prec if prec else "")
        if conv == "s":
            out.append((spec + "s") % _read_cstring(int(value), buffers))
        elif conv == "p":
            out.append("0x%x" % int(value))
        elif conv == "c":
            out.append((spec + "c") % chr(int(value) & 0xFF))
        elif conv in "aA":
            out.append(float(value).hex())
        elif conv == "u":
            out.append((spec + "d") % int(value))
        else:
            out.append((spec + conv) % (float(value) if kind == "d" else int(value)))
    out.append(fmt[last:])
    return "".join(out)


def _print_records(kernel, printed, buffers):
    """Print the printf records of each piece, pieces in block order (threads took them in
    any order), then a line for records dropped because a thread's buffer was full."""
    lines = []
    dropped = 0
    for _, chunk, first, end in sorted(printed, key=lambda p: p[0]):
        cap = int(chunk.ctx[L.CTX["printf_cap"]])
        for i in range(first, min(end, cap)):
            rec = chunk.printf[i * L.PRINTF_RECORD_BYTES:(i + 1) * L.PRINTF_RECORD_BYTES]
            fmt_addr = int(rec[:8].view(np.uint64)[0])
            n = int(rec[8:16].view(np.int64)[0])
            lines.append(format_printf(_read_cstring(fmt_addr, buffers), rec[16:16 + n].tobytes(), buffers))
        dropped += end - max(first, min(end, cap))
    if dropped > 0:
        lines.append(f"[dptx: {dropped} printf records of kernel {kernel.name} dropped: buffer full]\n")
    if lines:
        sys.stdout.write("".join(lines))
        sys.stdout.flush()
