"""The checked build's hazard records (renderer/racecheck_ir.py), read after a launch, as
reports in the user's terms: racecheck's (the shared memory offset, both accesses with their
kinds, threads, PTX and CUDA source lines), synccheck's (a divergent barrier's two lines, a
warp mask leaving out its thread) and initcheck's (the first unwritten read: thread, line,
argument and byte)."""
from __future__ import annotations

import re

import numpy as np

from ..demangle import with_parameter_names
from ..device import sanitizer
from ..ptx.source_lines import with_source_lines
from .renderer import racecheck_ir as RACE

# kind -> (this access, the other access, what it means)
_ACCESSES = {1: ("read", "write"), 2: ("write", "read"), 3: ("write", "write"),
             4: ("access", "access")}


def _coords(index: int, shape: tuple) -> tuple:
    x = index % shape[0]
    y = index // shape[0] % shape[1]
    z = index // (shape[0] * shape[1])
    return (x, y, z)


def _named(kernel, text: str) -> str:
    """``text`` with the kernel's parameters named as its CUDA source names them."""
    return with_parameter_names(text, kernel.name, getattr(kernel, "source_parameters", None))


def _where(kernel, line: int) -> str:
    text = f"PTX line {line}"
    ptx = getattr(kernel, "ptx", None)
    return with_source_lines(text, ptx) if ptx else text


def _location(where: str) -> str:
    """``file.cu:line`` of a "PTX line N (file.cu:line)" when the PTX says, else the PTX
    line."""
    found = re.search(r"\(([^()]+:\d+)\)", where)
    return found.group(1) if found else where


def _report_sync(kernel, kind, value, me, line, other, oline, blk, grid, block) -> None:
    where, block_at = _where(kernel, line), f"block {blk} {_coords(blk, grid)}"
    if kind == RACE.BARRIER_HAZARD:
        first = _where(kernel, oline)
        message = (f"divergent barrier in kernel {kernel.name}: thread {other} "
                   f"{_coords(other, block)} waits at barrier {value} at {first} and thread "
                   f"{me} {_coords(me, block)} at {where}, {block_at} (__syncthreads, "
                   f"bar.sync: every thread of the block must reach the same instruction)")
        key = ["synccheck", kernel.name, "BARRIER", _location(first), _location(where)]
        extra = {"first": {"thread": other, "ptx_line": oline, "at": first},
                 "second": {"thread": me, "ptx_line": line, "at": where}}
    elif kind == RACE.EXITED_HAZARD:
        message = (f"warp synchronization in kernel {kernel.name} with member mask "
                   f"{value:#010x} naming thread {other} {_coords(other, block)} (lane "
                   f"{other % 32}), which exited, called by thread {me} {_coords(me, block)} "
                   f"at {where}, {block_at} (the ISA: undefined; a GPU may hang)")
        key = ["synccheck", kernel.name, "EXITED", _location(where)]
        extra = {"second": {"thread": me, "ptx_line": line, "at": where}, "mask": value,
                 "exited": other}
    else:
        message = (f"warp synchronization in kernel {kernel.name} with member mask "
                   f"{value:#010x} leaving out its own thread {me} {_coords(me, block)} "
                   f"(lane {me % 32}) at {where}, {block_at}")
        key = ["synccheck", kernel.name, "MASK", _location(where)]
        extra = {"second": {"thread": me, "ptx_line": line, "at": where}, "mask": value}
    sanitizer.report({"tool": "synccheck", "kind": RACE.KINDS[kind], "kernel": kernel.name,
                      "block": blk, "message": message, "key": key, **extra})


def _report_uninit(kernel, address, me, line, blk, size, grid, block, place) -> None:
    where = _where(kernel, line)
    what = _named(kernel, place(address)) if place else f"address {address:#x}"
    sanitizer.report({
        "tool": "initcheck", "kind": "UNINIT", "kernel": kernel.name, "block": blk,
        "at": where, "key": ["initcheck", kernel.name, _location(where)],
        "message": f"uninitialized read in kernel {kernel.name}: thread {me} "
                   f"{_coords(me, block)} of block {blk} {_coords(blk, grid)} at {where} "
                   f"reads {size} bytes at {what}, which nothing wrote"})


def _report_race(kernel, kind, offset, me, line, other, oline, blk, oblk, grid, block,
                 place) -> None:
    """racecheck's report of two unordered accesses: of threads of one block (``oblk`` < 0:
    no barrier between them), or of two blocks (no release and acquire between them)."""
    this, that = _ACCESSES[kind]
    name = RACE.KINDS[kind]
    first, second = _where(kernel, oline), _where(kernel, line)
    shared = offset >> RACE.L.WINDOW_SHIFT == 0
    on = f"shared memory offset {offset}" if shared \
        else _named(kernel, place(offset)) if place else f"address {offset:#x}"
    other_thread = f"thread {other} {_coords(other, block)}" if other >= 0 else "another thread"
    this_thread = f"thread {me} {_coords(me, block)}"
    if oblk < 0:
        message = (f"{name} hazard in kernel {kernel.name} on {on}: a {that} by "
                   f"{other_thread} at {first} and a {this} by {this_thread} at {second}, "
                   f"block {blk} {_coords(blk, grid)}, with no barrier between them")
    else:
        message = (f"{name} hazard between blocks in kernel {kernel.name} on {on}: a {that} "
                   f"by {other_thread} of block {oblk} {_coords(oblk, grid)} at {first} and a "
                   f"{this} by {this_thread} of block {blk} {_coords(blk, grid)} at {second}, "
                   f"which nothing orders (blocks run in any order; a block's writes reach "
                   f"another through a __threadfence() and an atomic, or a release and an "
                   f"acquire, that it observes)")
    first_at = {"access": that, "thread": other, "ptx_line": oline, "at": first}
    if oblk >= 0:
        first_at["block"] = oblk
    sanitizer.report({
        "tool": "racecheck", "kind": name, "kernel": kernel.name,
        "space": "shared" if shared else "global", "between_blocks": oblk >= 0,
        "offset": offset, "block": blk, "message": message, "first": first_at,
        "second": {"access": this, "thread": me, "ptx_line": line, "at": second},
        # one hazard per source location (an unrolled loop's copies are one)
        "key": ["racecheck", kernel.name, name, _location(first), _location(second)]
        + (["between blocks"] if oblk >= 0 else [])})


def report_hazards(kernel, records: list, grid: tuple, block: tuple,
                   tool: str = "racecheck", place=None) -> int:
    """Report the hazards of one launch that ``tool`` reports (``records``: each native
    call's int64 array; the checked build records every tool's); ``place(address)`` names a
    device address (initcheck). Returns how many were recorded (counted past the records'
    capacity too)."""
    kinds = {"synccheck": RACE.SYNCCHECK_KINDS, "initcheck": RACE.INITCHECK_KINDS}.get(
        tool, RACE.RACECHECK_KINDS)
    total = 0
    seen = set()
    for hz in records:
        count = int(hz[0])
        total += count
        rows = hz[1:1 + min(count, RACE.HAZARD_CAPACITY) * RACE.HAZARD_FIELDS]
        for kind, offset, me, line, other, oline, blk, size, oblk in \
                np.asarray(rows).reshape(-1, RACE.HAZARD_FIELDS).tolist():
            key = (kind, line, oline, oblk >= 0)
            if kind not in kinds or key in seen:
                continue
            seen.add(key)
            if kind == RACE.UNINIT_HAZARD:
                _report_uninit(kernel, offset, me, line, blk, size, grid, block, place)
                continue
            if kind in RACE.SYNCCHECK_KINDS:
                _report_sync(kernel, kind, offset, me, line, other, oline, blk, grid, block)
                continue
            _report_race(kernel, kind, offset, me, line, other, oline, blk, oblk, grid, block,
                         place)
    return total
