"""The ``dptx`` command.

    dptx check [--only NAME ...] [--sub-grids] [--no-gpu] [--corpus DIR]
        run the kernel corpus dptx ships on the CPU against numpy, and on the GPU against
        the CPU where CuPy sees one (``python -m dptx.check`` is the same)
    dptx sanitize [--tool memcheck|racecheck|synccheck|initcheck] [--error-exitcode N]
                  [--print-limit N] [--save FILE] -- python script.py ARGS
        run a program with every dptx launch checked (in the process and on the cluster's
        workers), each hazard printed once with its count, as compute-sanitizer does
    dptx info [--scheduler ADDRESS]
        without a scheduler: this machine (versions, cores, GPUs and why none, the embedded
        cluster dptx would start); with one (or the ``dptx.scheduler-address`` setting): its
        workers, their devices, and the kernels the balancer has learned
"""
from __future__ import annotations

import argparse
import os
import sys


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="dptx", description="dptx: a distributed PTX virtual "
                                     "machine", formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    sub = parser.add_subparsers(dest="command", metavar="{check,sanitize,info}")
    sub.add_parser("check", help="run the kernel corpus (CPU vs numpy, GPU vs CPU)",
                   add_help=False)
    sub.add_parser("sanitize", help="run a program with every dptx launch checked",
                   add_help=False)
    info = sub.add_parser("info", help="this machine, or a cluster's workers and kernels")
    info.add_argument("--scheduler", help="a scheduler address (default: the "
                      "dptx.scheduler-address setting, else this machine)")
    if argv[:1] == ["check"]:            # check has its own options (python -m dptx.check)
        # lazy: each command loads what it needs, so `dptx --help` stays quick
        from .check import main as check_main
        return check_main(argv[1:])
    if argv[:1] == ["sanitize"]:         # its options, then the program after --
        # lazy: each command loads what it needs, so `dptx --help` stays quick
        from .sanitize_command import main as sanitize_main
        return sanitize_main(argv[1:])
    opts = parser.parse_args(argv)
    if opts.command == "info":
        return info_command(opts.scheduler)
    parser.print_help()
    return 2


def info_command(address: str = None) -> int:
    # lazy: each command loads what it needs, so `dptx --help` stays quick
    from . import config
    address = address or config.get("scheduler-address")
    print(versions())
    if not address:
        print(this_machine())
        return 0
    # lazy: each command loads what it needs, so `dptx --help` stays quick
    from distributed import Client
    refused = _refused(address)
    if refused:
        print(f"cannot reach the scheduler at {address}: {refused}", file=sys.stderr)
        return 1
    try:
        client = Client(address, timeout=10, set_as_default=False)
    except OSError as exc:
        print(f"cannot reach the scheduler at {address}: {exc}", file=sys.stderr)
        return 1
    with client:
        print(cluster_text(client, address))
    return 0


def _refused(address: str):
    """Why nothing listens at a tcp:// or tls:// ``address`` (a refused connection answers
    at once, where Dask's Client would retry it for its whole timeout), or None."""
    # lazy: each command loads what it needs, so `dptx --help` stays quick
    import socket
    from distributed.comm import parse_address, parse_host_port
    try:
        scheme, location = parse_address(address)
        if scheme not in ("tcp", "tls"):
            return None
        host, port = parse_host_port(location)
        socket.create_connection((host, port), timeout=5).close()
    except ConnectionRefusedError as exc:
        return f"connection refused ({exc.strerror or exc})"
    except (OSError, ValueError, TypeError):
        pass        # unreachable, slow or odd: Dask's Client says what it finds
    return None


def versions() -> str:
    # lazy: each command loads what it needs, so `dptx --help` stays quick
    import llvmlite
    import numpy
    import distributed
    from ._version import __version__
    from .runtime.nvrtc import version as nvrtc_version
    from .gpu import toolchain
    ptxas = ", ".join(p.version_text for p in toolchain.installed()) or "none (pip install " \
        "nvidia-cuda-nvcc to check PTX for GPUs)"
    major, minor = nvrtc_version()
    return (f"dptx {__version__}: NVRTC {major}.{minor}, ptxas {ptxas}, llvmlite "
            f"{llvmlite.__version__}, Dask distributed {distributed.__version__}, numpy "
            f"{numpy.__version__}, Python {sys.version.split()[0]}")


def this_machine() -> str:
    # lazy: each command loads what it needs, so `dptx --help` stays quick
    from .runtime.local_cluster import sizes
    from .worker import device_facts
    facts = device_facts(1)
    n_workers, threads = sizes()
    gpus = ", ".join(facts["gpus"]) if facts["gpus"] else f"none ({facts['gpu_error'] or 'disabled'})"
    return (f"this machine: {os.cpu_count()} CPU cores; GPUs: {gpus}\n"
            f"embedded cluster (no scheduler configured): {n_workers} workers x {threads} "
            f"threads")


def cluster_text(client, address: str) -> str:
    lines = [f"scheduler {address}"]
    try:
        state = client.sync(client.scheduler.dptx_state)
    except Exception as exc:     # the RPC is missing: the plugin is not loaded
        lines.append(f"  the dptx scheduler plugin is not loaded ({type(exc).__name__}); start "
                     f"the scheduler with --preload scheduler_plugins")
        for addr, w in sorted(client.scheduler_info(n_workers=-1)["workers"].items()):
            lines.append(f"  worker {w.get('name')} {addr}: {w.get('nthreads')} threads, "
                         f"resources {w.get('resources') or {}}")
        return "\n".join(lines)
    workers = state["workers"]
    lines.append(f"  {len(workers)} workers")
    kernels = {}
    for addr, w in sorted(workers.items()):
        gpus = ", ".join(w["gpus"]) if w["gpus"] else "none"
        why = f" ({w['gpu_error']})" if w.get("gpu_error") else ""
        lines.append(f"  worker {w['name']} {addr}: {w['device']}, {w['nthreads']} threads, "
                     f"GPUs: {gpus}{why}")
        for name, k in w["kernels"].items():
            kernels.setdefault(k.get("label", name), []).append((w["name"], k))
    if kernels:
        lines.append("  learned kernels (blocks/s per worker; share of the last launch):")
        for name, rows in sorted(kernels.items()):
            text = ", ".join(f"{who} {_rate_text(k['blocks_per_s'])} ({k['share']:.0%})"
                             for who, k in rows)
            lines.append(f"    {name}: {text}")
    else:
        lines.append("  no kernels launched yet")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())


def _rate_text(blocks_per_s) -> str:
    """blocks/s, or why there is none yet (a kernel's first run on a worker is no sample)."""
    return "not measured yet" if blocks_per_s is None else f"{blocks_per_s:.3g}"
