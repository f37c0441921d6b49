"""Stand-in for ``cupy.cuda.stream`` (``cupy/cuda/stream.pyx``): streams own a handle from
``runtime.streamCreateWithPriority``; ``with stream:`` makes one current for this thread.
Tests only."""
from __future__ import annotations

import sys
import threading

from .. import _state
from . import runtime

_local = threading.local()


class _BaseStream:

    def __init__(self, ptr, device_id):
        self.ptr = ptr
        self.device_id = device_id

    def __eq__(self, other):
        return isinstance(other, _BaseStream) and self.ptr == other.ptr

    def __hash__(self):
        return self.ptr

    def __enter__(self):
        if not hasattr(_local, "stack"):
            _local.stack = []
        _local.stack.append(get_current_stream())
        _local.current = self
        return self

    def __exit__(self, *args):
        _local.current = _local.stack.pop()

    def __repr__(self):
        return "<{} {} (device {})>".format(type(self).__name__, self.ptr, self.device_id)

    def use(self):
        _local.current = self
        return self

    @property
    def done(self):
        return runtime.streamQuery(self.ptr) == 0

    def synchronize(self):
        """Waits for the stream completing all queued work."""
        runtime.streamSynchronize(self.ptr)

    def is_non_blocking(self):
        return bool(runtime.streamGetFlags(self.ptr) & runtime.streamNonBlocking)


class Stream(_BaseStream):
    """CUDA stream: ``Stream(non_blocking=True)`` does not synchronize with the null stream."""

    null = None
    ptds = None

    def __init__(self, null=False, non_blocking=False, ptds=False, priority=None):
        if null:
            ptr, device_id = 0, -1
        elif ptds:
            ptr, device_id = runtime.streamPerThread, -1
        else:
            flag = runtime.streamNonBlocking if non_blocking else runtime.streamDefault
            ptr = runtime.streamCreateWithPriority(flag, 0 if priority is None else priority)
            device_id = runtime.getDevice()
        super().__init__(ptr, device_id)
        self._generation = _state.generation()

    def __del__(self):
        if sys.is_finalizing():     # as CuPy's is_shutting_down()
            return
        if getattr(self, "ptr", 0) not in (0, runtime.streamLegacy, runtime.streamPerThread) \
                and self._generation == _state.generation():
            runtime.streamDestroy(self.ptr)


Stream.null = Stream(null=True)
Stream.ptds = Stream(ptds=True)


def get_current_stream(device_id=-1):
    return getattr(_local, "current", Stream.null)


def get_current_stream_ptr() -> int:
    return get_current_stream().ptr


class Event:
    """Only what CuPy's Event needs here: record, synchronize, done (everything already ran)."""

    def __init__(self, block=False, disable_timing=False, interprocess=False):
        self.ptr = 0

    def record(self, stream=None):
        pass

    def synchronize(self):
        runtime.deviceSynchronize()

    @property
    def done(self):
        return True
