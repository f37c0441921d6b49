"""Library routines as operations of a stream (issue 45): ``call("linalg.svd", [a], ...)``
runs numpy's routine of that name as one task on the worker that holds the most of its inputs,
with that worker's device's library (OpenBLAS/LAPACK on a CPU worker, cuBLAS/cuSOLVER on a
GPU worker: ``dptx.device.library``), in stream order like a launch, its results new device
arrays where the task ran. A routine numpy ends with ``LinAlgError`` raises it here, at the
call, as numpy does (its status is read back: one wait)."""
from __future__ import annotations

import numpy as np

from . import cluster as runtime
from .. import config
from ..device.library import ROUTINES
from .buffers import DeviceBuffer
from .ndarray import ascontiguousarray, ndarray
from .stream import Operation, Submitted, stream_for


def enabled() -> bool:
    """Whether numpy's linear algebra runs as library routines (the ``dptx.library``
    setting, "device"), else as dptx's kernels ("kernels")."""
    choice = config.get("library")
    if choice not in ("device", "kernels"):
        raise ValueError(f"dptx.library is {choice!r}: it must be 'device' or 'kernels'")
    return choice == "device"


# a product of this many multiply-adds or more is split by rows where its first operand lies
# on several workers (below, one task: the second operand's copies would cost more)
SPLIT_FROM = 1 << 26
MIN_ROWS = 64       # a worker's share of rows at the least (fewer go to its neighbour's)


def _device(worker) -> str:
    """The device a worker runs library routines on: its GPU where it has one."""
    return "gpu" if worker is not None and worker.device == "gpu" and worker.gpus else "cpu"


def _row_shares(call) -> list:
    """[(worker, first row, end row)] of a 2-D matmul whose first operand's rows lie on
    several workers (each range where one worker holds it), or None: one task."""
    if len(call.arrays) != 2 or any(x.ndim != 2 for x in call.arrays):
        return None
    a, b = call.arrays
    n, k, m = a.shape[0], a.shape[1], b.shape[1]
    if n * k * m < SPLIT_FROM or k == 0:
        return None
    row = k * a.dtype.itemsize
    shares = []
    for p in a._buffer.pieces.overlapping(a._offset, a._offset + n * row):
        r0 = -(-(p.start - a._offset) // row)          # the rows that start in this piece
        r1 = min(n, -(-(p.end - a._offset) // row))
        if r1 <= r0:
            continue
        if shares and (shares[-1][0] == p.worker or r1 - r0 < MIN_ROWS):
            shares[-1] = (shares[-1][0], shares[-1][1], r1)
        else:
            shares.append((p.worker, r0, r1))
    if len(shares) > 1 and shares[-1][2] - shares[-1][1] < MIN_ROWS:
        last = shares.pop()
        shares[-1] = (shares[-1][0], shares[-1][1], last[2])
    if len({w for w, _, _ in shares}) < 2 or any(w is None for w, _, _ in shares):
        return None
    return shares


class LibraryCall(Operation):
    """One library routine: its input arrays (C-contiguous), keyword arguments and output
    buffers (with their shapes and types; the last is the status flag where the routine can
    fail)."""
    kind = "library"

    def __init__(self, routine: str, arrays: list, kwargs: dict, outputs: list, status: bool):
        self.routine, self.arrays, self.kwargs = routine, arrays, kwargs
        self.outputs = outputs          # [(DeviceBuffer, shape, dtype)]
        self.status = status
        self.description = f"library routine {routine}"

    def submit(self) -> Submitted:
        # lazy: distributed loads on the first cluster call (`import dptx` stays light)
        from graphs.library import submit_library
        from graphs.plan import holder
        from graphs.pieces import PieceMap
        session = runtime.get_session()
        workers = {w.address: w for w in session.model.workers()}
        rows = _row_shares(self) if self.routine == "matmul" else None
        if rows is not None:
            # a product whose first operand lies on several workers: each computes the rows
            # it holds (the second operand comes whole to each), the result's rows stay there
            a, b = self.arrays
            (buf, shape, dtype), = self.outputs
            row_in, row_out = a.shape[1] * a.dtype.itemsize, shape[1] * dtype.itemsize
            pieces = []
            for address, r0, r1 in rows:
                (part,) = submit_library(
                    session.client, "matmul",
                    [(a._buffer.pieces, a._offset + r0 * row_in, (r1 - r0, a.shape[1]),
                      a.dtype), (b._buffer.pieces, b._offset, b.shape, b.dtype)],
                    self.kwargs, [((r1 - r0, shape[1]), dtype)], address,
                    _device(workers.get(address)), False)
                pieces.extend(p.moved(r0 * row_out) for p in part.pieces)
            made = [PieceMap(buf.nbytes, pieces)]
        else:
            address, _ = holder([a._buffer.pieces for a in self.arrays], sorted(workers))
            made = submit_library(
                session.client, self.routine,
                [(a._buffer.pieces, a._offset, a.shape, a.dtype) for a in self.arrays],
                self.kwargs, [(shape, dtype) for _, shape, dtype in
                              (self.outputs[:-1] if self.status else self.outputs)],
                address, _device(workers.get(address)), self.status)
        buffers = [buf for buf, _, _ in self.outputs]
        before = [buf.pieces for buf in buffers]
        for buf, pieces in zip(buffers, made):
            buf.pieces = pieces
        futures = list({id(p.future): p.future for pm in made for p in pm.pieces}.values())
        return Submitted(buffers, before, futures)


def call(routine: str, arrays: list, outputs: list, stream=None, **kwargs) -> list:
    """Run library routine ``routine`` (numpy's name) over device ``arrays`` with ``kwargs``;
    ``outputs`` are the (shape, dtype) of what it returns, in order. Returns them as new
    device arrays; raises numpy's LinAlgError where numpy would."""
    if routine not in ROUTINES:
        raise ValueError(f"{routine!r} is not a library routine dptx runs")
    arrays = [ascontiguousarray(a) for a in arrays]      # (the bytes in C order)
    made = [(DeviceBuffer(int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize),
             tuple(shape), np.dtype(dtype)) for shape, dtype in outputs]
    failure = ROUTINES[routine]
    if failure is not None:
        made.append((DeviceBuffer(4), (1,), np.dtype(np.int32)))
    stream_for(stream).enqueue(LibraryCall(routine, arrays, kwargs, made, failure is not None))
    if failure is not None and made[-1][0].read().view(np.int32)[0]:
        raise np.linalg.LinAlgError(failure)
    return [ndarray(shape, dtype, _buffer=buf) for buf, shape, dtype in made[:len(outputs)]]
