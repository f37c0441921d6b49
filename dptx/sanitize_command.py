"""``dptx sanitize``: a program run with every dptx launch checked, as compute-sanitizer runs a
CUDA program.

    dptx sanitize [--tool memcheck|racecheck|synccheck|initcheck] [--error-exitcode N]
                  [--print-limit N] [--save FILE] -- python script.py ARGS

The program runs as a child process with the ``dptx.sanitize`` setting (its launches in the
process and the chunks on the workers of its cluster, which inherit the setting) and a report
file each of its processes appends to (``dptx.device.sanitizer``). Each hazard is printed
once, with how many times it was seen; the summary counts them. Exit status: N when any
hazard was found and ``--error-exitcode N`` is given, else the program's."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

from .device.sanitizer import TOOLS


def main(argv: list) -> int:
    parser = argparse.ArgumentParser(
        prog="dptx sanitize", description="run a program with every dptx launch checked")
    parser.add_argument("--tool", choices=TOOLS, default="memcheck",
                        help="memcheck (default): memory errors; racecheck: hazards between "
                        "a block's threads on shared memory; synccheck: divergent barriers, "
                        "warp masks that leave out their own thread; initcheck: reads of "
                        "memory nothing wrote (dptx.empty)")
    parser.add_argument("--error-exitcode", type=int, default=None, metavar="N",
                        help="exit with N when any hazard was found")
    parser.add_argument("--print-limit", type=int, default=100, metavar="N",
                        help="print at most N distinct hazards (default 100; 0: all)")
    parser.add_argument("--save", metavar="FILE", help="write the hazards to FILE as JSON")
    parser.add_argument("program", nargs=argparse.REMAINDER,
                        help="the program and its arguments, after --")
    opts = parser.parse_args(argv)
    program = opts.program[1:] if opts.program[:1] == ["--"] else opts.program
    if not program:
        parser.error("no program to run: dptx sanitize [options] -- python script.py ARGS")
    fd, path = tempfile.mkstemp(prefix="dptx-sanitize-", suffix=".jsonl")
    os.close(fd)
    env = dict(os.environ, DASK_DPTX__SANITIZE=opts.tool, DASK_DPTX__SANITIZE_REPORT=path)
    print(f"========= dptx sanitize --tool {opts.tool}: {' '.join(program)}", file=sys.stderr,
          flush=True)
    try:
        try:
            status = subprocess.run(program, env=env).returncode
        except FileNotFoundError as exc:
            print(f"========= cannot run {program[0]}: {exc}", file=sys.stderr)
            return 127
        hazards = summarize(path)
    finally:
        os.unlink(path)
    shown = hazards if opts.print_limit == 0 else hazards[:opts.print_limit]
    for h in shown:
        times = f" ({h['count']} times)" if h["count"] > 1 else ""
        print(f"========= {h['tool']}: {h['message']}{times}", file=sys.stderr)
    if len(shown) < len(hazards):
        print(f"========= ... {len(hazards) - len(shown)} more (--print-limit)", file=sys.stderr)
    word = "error" if opts.tool == "memcheck" else "hazard"
    print(f"========= {opts.tool.upper()} SUMMARY: {len(hazards)} {word}"
          f"{'' if len(hazards) == 1 else 's'}", file=sys.stderr)
    if opts.save:
        with open(opts.save, "w") as f:
            json.dump({"tool": opts.tool, "program": program, "status": status,
                       "hazards": hazards}, f, indent=1)
    if hazards and opts.error_exitcode is not None:
        return opts.error_exitcode
    return status


def summarize(path: str) -> list:
    """The distinct hazards of a report file (every process's lines), each with its count,
    in the order first seen."""
    found: dict = {}
    with open(path) as f:
        for line in f:
            try:
                entry = json.loads(line)
            except ValueError:
                continue        # (a process killed mid-line)
            key = json.dumps(entry.get("key", [entry.get("kernel"), entry.get("message")]))
            if key in found:
                found[key]["count"] += 1
            else:
                entry.pop("pid", None)
                found[key] = {**entry, "count": 1}
    return list(found.values())
