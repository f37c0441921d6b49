"""What tests inspect and control of the CuPy stand-in's fake machine (not part of CuPy)."""
from __future__ import annotations

from . import _state


def launches() -> list:
    """One dict per kernel launch: device, kernel, grid, block, shared_mem, stream, fault."""
    return list(_state.process().launches)


def copies() -> list:
    """One dict per memcpy: kind (HtoD/DtoH/DtoD), dst, src, size, stream, device, pinned
    (whether the host side was pinned memory)."""
    return list(_state.process().copies)


def calls() -> list:
    """Other calls tests check: ("funcSetAttribute", device, kernel, attribute, value),
    ("deviceSynchronize", device), ("streamSynchronize", stream)."""
    return list(_state.process().calls)


def clear() -> None:
    p = _state.process()
    p.launches.clear()
    p.copies.clear()
    p.calls.clear()


def sticky_error(device: int) -> int:
    """The status that corrupted the device's context (0: none)."""
    ctx = _state.process().contexts.get(device)
    return ctx.sticky if ctx else 0


def stream_flags(stream: int) -> int:
    for ctx in _state.process().contexts.values():
        if stream in ctx.streams:
            return ctx.streams[stream]
    raise KeyError(stream)


def live_allocations(device: int) -> int:
    """cudaMalloc'd blocks alive on the device (module variables not counted)."""
    ctx = _state.process().contexts.get(device)
    return 0 if ctx is None else sum(1 for a in ctx.allocations.values() if a.what == "cudaMalloc")


def restart_process() -> None:
    """Forget all CUDA state, as a fresh OS process starts (the settings are read again)."""
    _state.restart()
