"""Where a PTX line came from in the CUDA source: the ``.file``/``.loc`` directives NVRTC and
nvcc write with ``-lineinfo`` or ``-G``.

``.loc F L C`` says that the instructions after it, up to the next ``.loc`` or the end of the
function, come from line ``L`` of file ``F`` (declared by ``.file F "name"``, anywhere in the
module). ``with_source_lines`` adds ``(file.cu:L)`` after every ``PTX line N`` of a message,
which is how dptx's errors name a place in the kernel."""
from __future__ import annotations

import functools
import os
import re

_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]*)"')
_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)")
_FUNCTION_START = re.compile(r"^\s*(?:\.visible\s+|\.weak\s+|\.extern\s+)*\.(?:entry|func)\b")
_MENTION = re.compile(r"PTX line (\d+)(?!\d)(?! \()")   # not one annotated already


@functools.lru_cache(maxsize=64)
def source_lines(ptx: str) -> dict:
    """{PTX line (1-based): "file.cu:line"} for the lines a ``.loc`` covers; empty without
    line information."""
    if ".loc" not in ptx:
        return {}
    lines = ptx.splitlines()
    files = {}
    for text in lines:
        match = _FILE.match(text)
        if match:
            files[match.group(1)] = os.path.basename(match.group(2))
    out, current = {}, None
    for number, text in enumerate(lines, 1):
        if _FUNCTION_START.match(text):
            current = None
            continue
        match = _LOC.match(text)
        if match:
            name = files.get(match.group(1))
            line = int(match.group(2))
            current = f"{name}:{line}" if name and line else None
            continue
        if current is not None and text.strip() and not text.lstrip().startswith((".", "//", "{", "}")):
            out[number] = current
    return out


def with_source_lines(message: str, ptx: str) -> str:
    """``message`` with ``(file.cu:L)`` after each ``PTX line N`` that line information
    covers."""
    if "PTX line" not in message:
        return message
    where = source_lines(ptx)
    if not where:
        return message

    def one(match):
        place = where.get(int(match.group(1)))
        return f"{match.group(0)} ({place})" if place else match.group(0)
    return _MENTION.sub(one, message)
