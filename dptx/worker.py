"""Worker preload: ``dask worker ADDR --preload dptx.worker``.

Finds the worker's devices (CuPy GPUs where present, CPU threads), declares the Dask resources
``CPU`` and ``GPU`` (= number of CUDA devices) that chunk tasks ask for, and records the device
facts on the worker for the scheduler plugin, with why a worker uses no GPU (``gpu_error``).
Each GPU chunk holds one CUDA device while it runs (``dptx.gpu.runner.lane``: the free device
idle longest), so a worker with N GPUs runs N GPU chunks at once, one per device. A kernel
fault that corrupts a device's CUDA context restarts the worker (CUDA cannot recover the
context in the same process). The JIT cache is per process (``dptx.cpu`` keeps it), so every
worker process compiles a kernel once.
"""
from __future__ import annotations

import logging
import os

from . import config
from dptx.gpu import runner

logger = logging.getLogger("dptx.worker")
# After a GPU fault, the worker restarts this much later: the failed chunk's error then
# reaches the scheduler before the worker leaves (else its chunk would rerun elsewhere).
RESTART_DELAY = 1.0


def detect_gpus() -> tuple:
    """(names of the CUDA devices this process can use, why it can use none or None). The
    reasons (CuPy not installed or broken, a driver older than CuPy's CUDA, no device) are
    the ones ``dptx.gpu.runner.probe`` names; any other exception is a bug and propagates."""
    try:
        infos = runner.devices()
    except runner.GpuUnavailable as exc:
        return [], str(exc)
    return [i.name for i in infos], None


def device_facts(nthreads: int) -> dict:
    """What the worker reports in its ``dptx`` metrics (the scheduler plugin's state and the
    dashboard show it): its kind, its GPUs, and ``gpu_error`` when it has none it can use."""
    if os.environ.get("DPTX_DISABLE_GPU"):
        gpus, error = [], None
    else:
        gpus, error = detect_gpus()
    if error is not None:
        not_installed = error.startswith("CuPy (cupy) cannot be imported: No module named 'cupy'")
        # a CPU node without CuPy is normal; anything else is a GPU node that went wrong
        logger.log(logging.INFO if not_installed else logging.WARNING,
                   "dptx worker: no GPU: %s", error)
    return {
        "device": "gpu" if gpus else "cpu",
        "gpus": gpus,
        "gpu_error": error,
        "cpu_threads": nthreads,
        "cpu_count": os.cpu_count() or 1,
    }


def declare_resources(worker) -> dict:
    """Set the worker's CPU/GPU resources before it registers with the scheduler: ``GPU`` is
    its number of CUDA devices, so that it runs at most one GPU chunk per device at a time
    (each chunk holds a device of its own, ``dptx.gpu.runner.lane``)."""
    facts = device_facts(worker.state.nthreads)
    resources = {"CPU": float(worker.state.nthreads)}
    if facts["gpus"]:
        resources["GPU"] = float(len(facts["gpus"]))
    for name, quantity in resources.items():
        # Keep what the operator declared with --resources; add what is missing.
        if name not in worker.state.total_resources:
            worker.state.total_resources[name] = quantity
            worker.state.available_resources[name] = quantity
    worker.dptx_devices = facts
    # Metrics travel to the scheduler with registration and every heartbeat; the dptx
    # scheduler plugin reads them from WorkerState.metrics["dptx"].
    worker.metrics["dptx"] = lambda w: w.dptx_devices
    if facts["gpus"]:
        runner.on_device_lost(lambda device, message: _device_lost(worker, device, message))
    return facts


def _device_lost(worker, device: int, message: str) -> None:
    """A kernel fault corrupted a CUDA context: CUDA needs a new process before that device
    works again. Say so on the dashboard and restart the worker through its nanny (after the
    scheduler moves its data away, as a worker reaching its lifetime does); its other GPU
    chunks run on the CPU meanwhile. Called from the thread that ran the chunk."""
    logger.error("dptx worker: CUDA device %d lost: %s", device, message)
    worker.dptx_devices = dict(worker.dptx_devices,
                               gpu_error=f"device {device} lost, restarting: {message}")
    if worker.nanny is None:
        logger.error("dptx worker: no nanny to restart this worker; it goes on without the "
                     "device")
        return
    if getattr(worker, "_dptx_restarting", False):
        return
    worker._dptx_restarting = True

    def restart():
        worker.loop.call_later(RESTART_DELAY, lambda: worker.loop.add_callback(
            worker.close_gracefully, restart=True,
            reason=f"dptx: CUDA device {device} lost to a kernel fault"))
    worker.loop.add_callback(restart)


# Set by the embedded cluster (dptx.runtime.local_cluster): its workers share the program's terminal,
# where every chunk's error is raised by the program itself.
QUIET_CHUNK_ERRORS = "DPTX_QUIET_CHUNK_ERRORS"


class _QuietChunkErrors(logging.Filter):
    """"Compute Failed" records the worker's log does not need: a chunk that oversteps its
    footprint window is rerun by the client with whole buffers (DESIGN.md point 6), not a
    failure; and on the embedded cluster, any dptx chunk's error is raised in the program."""

    def __init__(self, every_chunk: bool):
        super().__init__()
        self.every_chunk = every_chunk

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if "FootprintViolation" in message:
            return False
        return not (self.every_chunk and message.startswith("Compute Failed")
                    and "Key:       dptx-" in message)


class StopReleasedChunks:
    """Worker plugin: a chunk task the scheduler releases while it runs (its launch was
    cancelled) is asked to stop at its kernel's next loop back edge or piece of blocks
    (``dptx.cpu.watchdog.stop_task``), instead of running on, up to its time limit."""
    idempotent = True

    def setup(self, worker):
        pass

    def teardown(self, worker):
        # the worker closes (its scheduler is gone...): nothing waits for its chunks
        # lazy: the CPU executor (LLVM) loads only where a kernel runs in this process
        from dptx.cpu.watchdog import stop_all_tasks
        stop_all_tasks()

    def transition(self, key, start, finish, **kwargs):
        if start in ("executing", "long-running") and finish == "released":
            # lazy: the CPU executor (LLVM) loads only where a kernel runs in this process
            from dptx.cpu.watchdog import stop_task
            stop_task(key)


def dask_setup(worker):
    logging.getLogger("distributed.worker").addFilter(
        _QuietChunkErrors(bool(os.environ.get(QUIET_CHUNK_ERRORS))))
    # Results reach the scheduler in batches, one send per 2 ms at most; a chunk that the
    # next launch's chunks (or the program's synchronization) wait for should not wait for
    # the batch (dptx.message-interval, see scheduler_plugins.plugin).
    worker.batched_stream.interval = min(worker.batched_stream.interval,
                                         float(config.get("message-interval") or 0))
    worker.plugins["dptx-stop-released-chunks"] = StopReleasedChunks()
    facts = declare_resources(worker)
    logger.info("dptx worker: %s, resources %s", facts["device"], dict(worker.state.total_resources))
