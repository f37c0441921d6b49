"""dptx settings, through ``dask.config`` under the ``dptx`` namespace (DESIGN.md point 10).

Environment variables follow Dask's convention: ``DASK_DPTX__SCHEDULER_ADDRESS``,
``DASK_DPTX__LOCAL__N_WORKERS``, ``DASK_DPTX__LOCAL__THREADS_PER_WORKER``, ``DASK_DPTX__CHUNKS``.
"""
from __future__ import annotations

import dask.config

DEFAULTS = {
    "dptx": {
        # Address of a running scheduler (tcp://host:8786); None starts an embedded cluster.
        "scheduler-address": None,
        "local": {
            # Worker processes and threads of the embedded cluster; None: from the machine.
            "n-workers": None,
            "threads-per-worker": None,
        },
        # Chunks per launch; None: planned by the scheduler plugin's model.
        "chunks": None,
        # How a launch's blocks are shared among workers: "adaptive" (in proportion to each
        # worker's measured speed for the kernel) or "even" (the same share for every
        # worker: a static split, whatever its devices).
        "split": "adaptive",
        # Consecutive small launches (one chunk each, on the same worker) run as one task.
        "batch": True,
        # Consecutive launches with the same shares of blocks run as one task per worker.
        "fuse": True,
        # Granularity of merges: where several chunks may write the same bytes, each returns
        # the pages it changed.
        "page-bytes": 4096,
        # Bytes per second between workers, for the planner's cost of moving a range of
        # blocks (with its data) from one worker to another.
        "transfer-bandwidth": 1e9,
        # Workers that hold each piece of an array's current contents (a setting of the
        # scheduler, scheduler_plugins.replicas): 2 keeps a second copy of every version
        # that lives a couple of seconds, so that a worker's death loses nothing (at the
        # price of the memory and the copies); 1: a dead worker's pieces are lost
        # (DataLostError) unless their tasks can run again. Host uploads always keep 2.
        "result-copies": 1,
        # A progress bar while a synchronization (get(), dptx.synchronize()) waits more than
        # a couple of seconds: "auto" (in a terminal or Jupyter, not when output goes to a
        # file or pipe), True or False.
        "progress": "auto",
        # Seconds a kernel may run in this process (dptx.cpu.launch), or each chunk of a
        # launch on a worker, before it is stopped with DptxTimeoutError. None: no limit
        # in-process, 600 s on workers (graphs.tasks.WORKER_KERNEL_TIMEOUT); 0 or False: no
        # limit anywhere. Seen between pieces of blocks and at every loop back edge, so a
        # thread that loops for ever is stopped too.
        "kernel-timeout": None,
        # Seconds between two batches of messages on a Dask connection dptx uses (client to
        # scheduler, scheduler to clients and workers, worker to scheduler), read by each
        # side from its own settings. Dask batches at most one send per 2-10 ms, which a
        # program that launches and synchronizes in a loop pays at every hop (a 1k-element
        # sum and its synchronization: 10.5-11.3 ms with Dask's intervals, 5.6-8.0 ms with
        # 0). 0: each message goes at once, those queued while a write is in flight together.
        "message-interval": 0,
        # Dask's default spans the scheduler keeps once finished (scheduler_plugins.spans):
        # Dask otherwise keeps every span and task group for ever, which a program that
        # launches and synchronizes in a loop grows by about 7 KB per operation. The
        # dashboard's span views then cover this many. None: keep them all (Dask's way).
        "span-history": 100,
        # The workers this client's launches and uploads use (addresses: a list, or one
        # string separated by commas or spaces); None: every worker of the cluster.
        "workers": None,
        # What the CPU executor multiplies every nanosleep's duration by, in this process
        # (a worker reads its own): kernels that model their compute with nanosleep then
        # run as on a node that much slower (0.25: a node 4 times faster). For emulated
        # clusters and capacity planning (benchmarks/scale_out.py).
        "nanosleep-scale": 1.0,
        # Where numpy's linear algebra runs (matmul, linalg's solve, inv, det, slogdet,
        # cholesky, qr, eigh, eigvalsh, svd): "device" as library routines, one task on the
        # worker holding the operands, with its device's library (OpenBLAS/LAPACK through
        # numpy on CPU workers, cuBLAS/cuSOLVER through CuPy on GPU workers); "kernels" as
        # dptx's own CUDA kernels, run as launches split over the workers like any other.
        "library": "device",
        # A sanitizer tool every launch runs under (dptx sanitize, tests): None, "memcheck"
        # (the checks every launch has, its memory errors reported), "racecheck" (shared
        # memory hazards between a block's threads), "synccheck" (barrier misuse) or
        # "initcheck" (reads of bytes nothing wrote): the last three run the checked build.
        # Read by each process, workers included.
        "sanitize": None,
        # A file each process appends its sanitizer reports to, one JSON object a line
        # (dptx sanitize sets it); None: reports go to stderr only.
        "sanitize-report": None,
    }
}

dask.config.update_defaults(DEFAULTS)


def get(key: str, default=None):
    """A dptx setting, ``key`` relative to the namespace (``"local.n-workers"``)."""
    return dask.config.get(f"dptx.{key}", default=default)
