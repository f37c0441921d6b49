"""Which Dask cluster dptx runs on: one set with ``dptx.connect``, the ``dptx.scheduler-address``
setting, or else an embedded ``LocalCluster`` of worker processes, started on first use and
closed at exit."""
from __future__ import annotations

import logging
import atexit
import os
import threading

from . import config
from .errors import DptxError

_lock = threading.RLock()
_client = None
_cluster = None
_owns_client = False
_session = None


def _machine_defaults():
    cores = os.cpu_count() or 1
    n_workers = min(cores, 4)
    return n_workers, max(1, cores // n_workers)


def connect(address_or_client=None):
    """Use this cluster for every dptx array and launch from now on.

    ``address_or_client`` is a scheduler address (``"tcp://10.0.0.1:8786"``), a
    ``distributed.Client``, or None for the ``dptx.scheduler-address`` setting or, unset, the
    embedded local cluster. Returns the Client."""
    global _client, _cluster, _owns_client
    from distributed import Client

    _close_at_exit()
    with _lock:
        if _client is not None:
            _close_locked()
        if isinstance(address_or_client, Client):
            _client, _owns_client = address_or_client, False
            return _client
        address = address_or_client or config.get("scheduler-address")
        if address:
            _client = Client(address, set_as_default=False)
        else:
            _cluster = _start_local_cluster()
            _client = Client(_cluster, set_as_default=False)
        _owns_client = True
        return _client


def _start_local_cluster():
    from distributed import LocalCluster

    n_default, t_default = _machine_defaults()
    n_workers = int(config.get("local.n-workers") or n_default)
    threads = int(config.get("local.threads-per-worker") or t_default)
    if n_workers < 1 or threads < 1:
        raise DptxError("dptx.local.n-workers and dptx.local.threads-per-worker must be >= 1")
    return LocalCluster(
        n_workers=n_workers, threads_per_worker=threads, processes=True,
        dashboard_address=":0", silence_logs=logging.ERROR,
        # The preload declares the CPU/GPU resources that chunk tasks ask for.
        worker_class="distributed.Nanny", preload=["dptx.worker"],
        scheduler_kwargs={"preload": ["scheduler_plugins"]},
    )


def get_client():
    """The client of the current cluster, connecting on first use."""
    with _lock:
        if _client is None or _client.status in ("closed", "closing"):
            connect()
        return _client


def get_session():
    """The ``graphs.session.Session`` of the current cluster (model copy, planner, kernel
    images), connecting on first use."""
    global _session
    with _lock:
        client = get_client()
        if _session is None or _session.client is not client:
            from graphs.session import Session
            _session = Session(client, float(config.get("transfer-bandwidth")))
        return _session


def is_running() -> bool:
    return _client is not None


def _close_locked():
    global _client, _cluster, _owns_client, _session
    client, cluster, owns = _client, _cluster, _owns_client
    _client = _cluster = _session = None
    _owns_client = False
    if owns and client is not None:
        try:
            client.close()
        except Exception:  # closing at exit must not raise
            pass
    if cluster is not None:
        try:
            cluster.close()
        except Exception:
            pass


def shutdown():
    """Close the cluster dptx started (a Client given to ``connect`` stays open)."""
    from .stream import default_stream
    with _lock:
        default_stream.forget()
        _close_locked()


_exit_hook = []


def _close_at_exit() -> None:
    """Close dptx's client and cluster at exit, before distributed's own exit handlers close
    the cluster under it (atexit runs handlers last-registered first, so this is registered
    once distributed is imported, at the first connect): the client releases its data first,
    and the shutdown is quiet."""
    if not _exit_hook:
        _exit_hook.append(atexit.register(shutdown))
