"""Stand-in for ``cupy.cuda.device`` (``cupy/cuda/device.pyx``). Tests only."""
from __future__ import annotations

import threading

from . import runtime

_stack = threading.local()


def get_device_id() -> int:
    return runtime.getDevice()


class Device:
    """A CUDA device; ``with Device(i):`` makes it current and restores the previous one."""

    def __init__(self, device=None):
        self.id = runtime.getDevice() if device is None else int(device)

    def __int__(self):
        return self.id

    def __enter__(self):
        current = runtime.getDevice()
        if not hasattr(_stack, "devices"):
            _stack.devices = []
        _stack.devices.append(current)
        if self.id != current:
            runtime.setDevice(self.id)
        return self

    def __exit__(self, *args):
        runtime.setDevice(_stack.devices.pop())

    def __repr__(self):
        return "<CUDA Device %d>" % self.id

    def use(self):
        runtime.setDevice(self.id)
        return self

    def synchronize(self):
        previous = runtime.getDevice()
        try:
            runtime.setDevice(self.id)
            runtime.deviceSynchronize()
        finally:
            runtime.setDevice(previous)

    @property
    def compute_capability(self) -> str:
        major = runtime.deviceGetAttribute(runtime.deviceAttributeComputeCapabilityMajor, self.id)
        minor = runtime.deviceGetAttribute(runtime.deviceAttributeComputeCapabilityMinor, self.id)
        return "%d%d" % (major, minor)
