"""Worker preload: ``dask worker ADDR --preload dptx.worker``.

Finds the worker's devices (CuPy GPUs where present, CPU threads), declares the Dask resources
``CPU`` and ``GPU`` that chunk tasks ask for, and records the device facts on the worker for the
scheduler plugin. The JIT cache is per process (``dptx.cpu`` keeps it), so every worker process
compiles a kernel once.
"""
from __future__ import annotations

import logging
import os

logger = logging.getLogger("dptx.worker")


def detect_gpus() -> list:
    """Names of the CUDA devices CuPy can see; empty without CuPy or without a GPU."""
    try:
        import cupy
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception:  # no CuPy, no driver, or no device
        return []
    names = []
    for i in range(count):
        try:
            props = cupy.cuda.runtime.getDeviceProperties(i)
            names.append(props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"]))
        except Exception:
            names.append(f"cuda:{i}")
    return names


def device_facts(nthreads: int) -> dict:
    gpus = [] if os.environ.get("DPTX_DISABLE_GPU") else detect_gpus()
    return {
        "device": "gpu" if gpus else "cpu",
        "gpus": gpus,
        "cpu_threads": nthreads,
        "cpu_count": os.cpu_count() or 1,
    }


def declare_resources(worker) -> dict:
    """Set the worker's CPU/GPU resources before it registers with the scheduler."""
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
    return facts


class _QuietFootprintViolations(logging.Filter):
    """A chunk that oversteps its footprint window is rerun by the client with whole buffers
    (DESIGN.md point 6): not a failure to report as "Compute Failed" in the worker's log."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "FootprintViolation" not in record.getMessage()


def dask_setup(worker):
    logging.getLogger("distributed.worker").addFilter(_QuietFootprintViolations())
    # Results reach the scheduler in batches, one send per 2 ms at most; a chunk that the
    # next launch's chunks wait for should not wait for the batch (see scheduler_plugins).
    worker.batched_stream.interval = min(worker.batched_stream.interval, 0.001)
    facts = declare_resources(worker)
    logger.info("dptx worker: %s, resources %s", facts["device"], dict(worker.state.total_resources))
