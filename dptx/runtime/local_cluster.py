"""The embedded cluster dptx starts when nothing else is configured.

Its workers are ``python -m dask spec`` processes (Dask's own ``SubprocessWorker``), each a
nanny and its worker: nothing of them is started with ``multiprocessing`` from the user's
program, so a plain script without ``if __name__ == "__main__":`` works (``LocalCluster``'s
spawned workers re-import the program's ``__main__``, and a script with top-level launches
then fails with "Nanny failed to start"). The scheduler runs in this process, as in a
``LocalCluster``; closing the cluster closes the workers first."""
from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import sys

from .. import config
from ..errors import DptxError

# How long the workers have to start and register (a cold start imports numpy, llvmlite and
# Dask in each): past it, the error says so rather than launches waiting forever.
START_TIMEOUT = 120


def machine_defaults() -> tuple:
    """(workers, threads per worker) for this machine: up to 4 workers sharing the cores."""
    cores = os.cpu_count() or 1
    n_workers = min(cores, 4)
    return n_workers, max(1, cores // n_workers)


def sizes() -> tuple:
    """(workers, threads per worker) from the ``dptx.local.*`` settings or the machine."""
    n_default, t_default = machine_defaults()
    n_workers = int(config.get("local.n-workers") or n_default)
    threads = int(config.get("local.threads-per-worker") or t_default)
    if n_workers < 1 or threads < 1:
        raise DptxError("dptx.local.n-workers and dptx.local.threads-per-worker must be >= 1")
    return n_workers, threads


def start():
    """A started cluster of ``sizes()`` workers (close it with ``.close()``); its workers may
    still be registering: ``wait_for(client)`` waits for them."""
    # lazy: distributed loads on the first cluster call (`import dptx` stays light)
    from distributed import Scheduler, SpecCluster

    n_workers, threads = sizes()
    worker_options = {"nthreads": threads, "host": "127.0.0.1", "silence_logs": logging.ERROR,
                      # the preload declares the CPU/GPU resources chunk tasks ask for
                      "preload": ["dptx.worker"],
                      "memory_limit": _memory_limit(n_workers)}
    if sys.platform == "win32":     # Dask's subprocess workers do not run on Windows
        # lazy: distributed loads on the first cluster call (`import dptx` stays light)
        from distributed import Nanny
        worker = {"cls": Nanny, "options": dict(worker_options)}
    else:
        worker = {"cls": _worker_process_class(),
                  "options": {"worker_class": "distributed.Nanny",
                              "worker_kwargs": worker_options}}
    scheduler = {"cls": Scheduler, "options": {"host": "127.0.0.1", "dashboard_address": ":0",
                                               "preload": ["scheduler_plugins"]}}
    _quiet_teardown()
    return SpecCluster(workers={i: worker for i in range(n_workers)}, scheduler=scheduler,
                       worker=worker, silence_logs=logging.ERROR, name="dptx-local")


class _TeardownNoise(logging.Filter):
    """Drops the in-process scheduler's "Batched Comm Closed" reports: distributed logs them
    at INFO, with a traceback, as the workers' connections close at every exit, after the
    cluster has put its loggers back to their level (so ``silence_logs`` cannot catch
    them); a user script would end with a traceback for a normal shutdown."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.ERROR or \
            not str(record.msg).startswith("Batched Comm Closed")


class _ClosedClientNoise(logging.Filter):
    """Drops the scheduler's report of a message it could not write to a client whose
    connection had just closed: at exit, the plugin's model event (published a few times a
    second to the subscribed client) can race the client's goodbye, and distributed logs that at
    CRITICAL with the whole message; nothing is lost, the client is leaving."""

    def filter(self, record: logging.LogRecord) -> bool:
        # (the scheduler logs this only for its connections to clients)
        return not str(record.msg).startswith("Closed comm %r while trying to write")


class _AbandonedAtExitNoise(logging.Filter):
    """Drops the scheduler's report that it could not take in a graph because Python is
    exiting: Python's thread pools take no more work from the start of its exit (before
    atexit handlers run), and the in-process scheduler may still be receiving what a script
    submitted last without waiting for it (``x = dptx.ones(n)`` as its last line). That work
    is abandoned with the process, as a GPU's queue is with its context; the message (an
    ERROR at 4 of 6 such exits) asks nothing of the user."""

    def filter(self, record: logging.LogRecord) -> bool:
        # ("... after interpreter shutdown", and "... after shutdown" from a pool already
        # closed by then: both seen at the exit of a script whose last line submitted work)
        return "cannot schedule new futures after" not in record.getMessage()


def _quiet_teardown() -> None:
    for name, cls in (("distributed.batched", _TeardownNoise),
                      ("distributed.scheduler", _ClosedClientNoise),
                      ("distributed.scheduler", _AbandonedAtExitNoise)):
        logger = logging.getLogger(name)
        if not any(isinstance(f, cls) for f in logger.filters):
            logger.addFilter(cls())


def wait_for(client, cluster) -> None:
    """Wait until the cluster's workers have registered, or raise naming what did not start."""
    wanted = len(cluster.worker_spec)
    try:
        client.wait_for_workers(wanted, timeout=START_TIMEOUT)
    except TimeoutError as exc:
        have = len(client.scheduler_info(n_workers=-1)["workers"])
        raise DptxError(
            f"the embedded dptx cluster started {have} of its {wanted} workers within "
            f"{START_TIMEOUT} s (their output, above, says why); set dptx.local.n-workers, or "
            f"connect to a cluster with dptx.connect(address)") from exc


def _memory_limit(n_workers: int) -> int:
    """Each worker's share of the machine's memory (what LocalCluster gives by default)."""
    # lazy: distributed loads on the first cluster call (`import dptx` stays light)
    from distributed.worker_memory import parse_memory_limit
    return parse_memory_limit("auto", 1, n_workers, logger=logging.getLogger("dptx"))


def _worker_process_class():
    # lazy: distributed loads on the first cluster call (`import dptx` stays light)
    from distributed.deploy.subprocess import SubprocessWorker

    class QuietSubprocessWorker(SubprocessWorker):
        """Dask's ``SubprocessWorker``, with the nanny process's own ``distributed`` logs at
        the level the worker gets (``silence_logs``): at INFO, the connections closing at
        every exit print tracebacks into the user's terminal; and without the worker's copy
        of a chunk's error, which the program raises itself (``dptx.worker``). ``dptx`` logs
        (a GPU that cannot be used, a fault) still show. Its input is not the terminal."""

        async def _start(self) -> None:
            cmd = [sys.executable, "-m", "dask", "spec", self.scheduler, "--spec",
                   json.dumps({"cls": self.worker_class, "opts": {**self.worker_kwargs}})]
            env = dict(os.environ, DASK_LOGGING__DISTRIBUTED="error", DPTX_QUIET_CHUNK_ERRORS="1")
            self.process = await asyncio.create_subprocess_exec(
                *cmd, env=env, stdin=asyncio.subprocess.DEVNULL)

        async def close(self) -> None:
            # Dask kills the nanny's children first and the nanny last: in between, a
            # nanny that sees its worker die may start another one, and with it a new
            # multiprocessing resource tracker ("resource_tracker: process died
            # unexpectedly, relaunching", printed into the user's terminal at exit, seen
            # on a loaded machine). The nanny is stopped first, so it cannot react.
            _stop_before_kill(self.process)
            await super().close()

    return QuietSubprocessWorker


def _stop_before_kill(process) -> None:
    """SIGSTOP a still-running subprocess (SIGKILL, which follows, ends a stopped process)."""
    if process is not None and process.returncode is None:
        try:
            os.kill(process.pid, signal.SIGSTOP)
        except ProcessLookupError:       # gone already: nothing to stop
            pass
