"""Which Dask cluster dptx runs on: one set with ``dptx.connect``, the ``dptx.scheduler-address``
setting, or else the embedded cluster of worker processes (``dptx.runtime.local_cluster``), started
on first use and closed at exit."""
from __future__ import annotations

import atexit
import gc
import logging
import threading
import weakref

from .. import config
from ..errors import ClusterLostError, DptxError
from . import local_cluster
from .stream import forget_all, on_cancelled

_lock = threading.RLock()
_client = None
_cluster = None
_owns_client = False
_session = None


def connect(address_or_client=None):
    """Use this cluster for every dptx array and launch from now on.

    ``address_or_client`` is a scheduler address (``"tcp://10.0.0.1:8786"``), a
    ``distributed.Client``, or None for the ``dptx.scheduler-address`` setting or, unset, the
    embedded local cluster. Returns the Client. Live dptx arrays move to the new cluster
    (their bytes pass through this process)."""
    with _lock:
        if _client is not None and address_or_client is _client:
            return _client          # already connected to it
        moving = []
        if _client is not None and _closed(_client):
            _lose_closed_locked()       # nothing can be read back from a closed client
        elif _client is not None:
            _leave()                    # module variables come home first (not moved twice)
            moving = _bring_back_arrays()
            _close_locked()
        _connect_locked(address_or_client)
        _close_at_exit()
        for buf, data in moving:        # the arrays follow the program to the new cluster
            buf.upload(data)
        return _client


def _connect_locked(address_or_client) -> None:
    global _client, _cluster, _owns_client
    # lazy: distributed loads on the first cluster call (`import dptx` stays light)
    from distributed import Client

    if isinstance(address_or_client, Client):
        _client, _owns_client = address_or_client, False
        return
    address = address_or_client or config.get("scheduler-address")
    # dptx's own client becomes Dask's default unless the program already has one, so
    # that distributed.wait/progress(handle) and performance_report work as with any
    # Dask client; a program's own default client is never displaced.
    as_default = _no_default_client()
    if address:
        _client = Client(address, set_as_default=as_default)
    else:
        _refuse_inside_a_task()
        _cluster = local_cluster.start()
        _client = Client(_cluster, set_as_default=as_default)
        local_cluster.wait_for(_client, _cluster)
    _owns_client = True


def _refuse_inside_a_task() -> None:
    """No embedded cluster inside a Dask task: it would start worker processes of its own
    inside the task's worker (a dptx array given to ``client.submit`` is unpickled there)."""
    try:
        # lazy: distributed loads on the first cluster call (`import dptx` stays light)
        from distributed import get_worker
        worker = get_worker()
    except ValueError:
        return
    raise DptxError(
        f"dptx needs a cluster inside a Dask task (on worker {worker.address}), and would start "
        f"an embedded cluster inside that worker: give tasks host (numpy) data, not dptx "
        f"arrays (a.get()), or set dptx.scheduler-address (DASK_DPTX__SCHEDULER_ADDRESS) "
        f"where tasks should use a cluster")


def _bring_back_arrays() -> list:
    """The current bytes of every live dptx array's buffer, read from the cluster being left,
    so that ``connect`` elsewhere moves them rather than stranding them."""

    gc.collect()                        # arrays only a reference cycle still holds
    buffers = {id(b): b for b in list(_live_buffers) if b.nbytes and not b.is_lost()}
    moving = []
    for buf in buffers.values():
        try:
            moving.append((buf, buf.read()))
        except Exception as e:
            raise DptxError(
                f"cannot move the {len(buffers)} live dptx array(s) to the new cluster: "
                f"reading one back failed ({e}). get() what you need and delete them, or call "
                f"dptx.shutdown() first (it drops them)") from e
    for buf, _ in moving:
        buf.pieces = None
    return moving


def _no_default_client() -> bool:
    # lazy: distributed loads on the first cluster call (`import dptx` stays light)
    from distributed import default_client
    try:
        default_client()
    except ValueError:
        return True
    return False


def get_client():
    """The client of the current cluster, connecting on first use. A client that lost its
    scheduler raises ``ClusterLostError`` once (its arrays are lost); the call after connects
    again."""
    with _lock:
        check_connection()
        if _client is None or _client.status in ("closed", "closing"):
            connect()
        _quick_messages(_client)
        return _client


def _quick_messages(client) -> None:
    """The client batches its messages to the scheduler, one send per 10 ms at most: a
    launch submitted within 10 ms of the previous message (a loop of launches and
    synchronizations) waits for it. dptx's setting instead (``dptx.message-interval``); the
    connection is made again after a reconnect, hence a check per call."""
    stream = getattr(client, "scheduler_comm", None)
    interval = float(config.get("message-interval") or 0)
    if stream is not None and getattr(stream, "interval", 0) > interval:
        stream.interval = interval


def check_connection() -> None:
    """Raise ``ClusterLostError`` at once when dptx's client has lost its scheduler (killed,
    or its machine gone), rather than waiting out distributed's reconnection attempts: the
    arrays that lived there are marked lost, pending operations dropped, and the client
    closed, so the next call starts afresh (``dptx.connect`` or the embedded cluster)."""
    with _lock:
        if _client is None or _client.status in ("running", "newly-created"):
            return
        if _closed(_client):
            # closed under dptx (client.close() of the Client given to dptx.connect, or of
            # dptx.client()): reading its arrays back would ask for a client again, and
            # connect() would leave this one by reading them... (that recursion hung every
            # later dptx call, dptx.cpu.launch of a kernel whose module variables were there
            # included). The next call connects again; this one says what was lost, if any.
            lost = _lose_closed_locked()
            if not lost:
                return
            why = (f"the distributed.Client dptx ran on was closed (dptx.shutdown() or "
                   f"dptx.connect() elsewhere first keeps what it holds), and with it the "
                   f"bytes of {lost} device buffers (dptx arrays, module variables)")
        elif _client.status not in ("connecting",) and not _owns_client:
            return
        else:
            where = getattr(_client.scheduler, "address", None) or "its scheduler"
            why = (f"dptx lost the connection to the scheduler at {where}: the cluster is "
                   f"gone (scheduler stopped or unreachable)")
            for buf in list(_live_buffers):
                buf.lose(why)
            _close_locked()
    forget_all()        # (outside the lock: another thread may hold a stream's)
    raise ClusterLostError(f"{why}; the dptx arrays it held are lost. The next dptx call "
                           f"connects again (to dptx.scheduler-address, else the embedded "
                           f"cluster; dptx.connect(address) chooses)")


def client():
    """The ``distributed.Client`` dptx runs on (connecting on first use): for
    ``performance_report``, ``progress``, the dashboard..."""
    return get_client()


def dashboard_link() -> str:
    """The Dask dashboard of dptx's cluster (its ``dptx`` page is ``/individual-dptx``)."""
    return get_client().dashboard_link


def get_session():
    """The ``graphs.session.Session`` of the current cluster (model copy, planner, kernel
    images), connecting on first use."""
    global _session
    # Without the lock while connected: a stream's timer thread asks for the session while it
    # holds its stream's lock to submit a group, and shutdown/connect hold this lock while
    # they wait for the streams.
    session, client = _session, _client
    if session is not None and client is not None and session.client is client and \
            client.status == "running":
        _quick_messages(client)
        return session
    with _lock:
        client = get_client()
        if _session is None or _session.client is not client:
            # lazy: distributed loads on the first cluster call (`import dptx` stays light)
            from graphs.session import Session
            _session = Session(client, float(config.get("transfer-bandwidth")))
        return _session


_disconnect_hooks = weakref.WeakSet()
_live_buffers = weakref.WeakSet()   # every device buffer alive (dptx.runtime.buffers adds them)


def track_buffer(buf) -> None:
    """``buf`` lives on the current cluster: ``connect`` elsewhere moves its bytes, and
    ``shutdown`` marks them lost."""
    _live_buffers.add(buf)


def before_disconnect(obj) -> None:
    """``obj.before_disconnect()`` runs before dptx leaves its cluster (module variables that
    live there come back to this process)."""
    _disconnect_hooks.add(obj)


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


def _closed(client) -> bool:
    return client.status in ("closed", "closing")


def _lose_closed_locked() -> int:
    """dptx's client is closed: the data it held on the cluster were released with it, so the
    buffers there (arrays, module variables) are marked lost rather than read back, and the
    client is dropped. Returns how many buffers were lost."""
    lost = [b for b in list(_live_buffers) if b.nbytes and not b.is_lost()]
    for buf in lost:
        buf.lose("the distributed.Client that held it was closed")
    _close_locked()
    return len(lost)


def _leave() -> None:
    for obj in list(_disconnect_hooks):
        try:
            obj.before_disconnect()
        except Exception:  # a cluster already gone: nothing to bring back
            logging.getLogger("dptx").debug("before_disconnect failed", exc_info=True)


def shutdown():
    """Close the cluster dptx started (a Client given to ``connect`` stays open)."""
    # The streams first, outside the lock: a stream's timer thread submits its open group
    # holding the stream's lock, and may then ask for this one (a script's last launches
    # still in their group at exit waited on each other here, the exit hung).
    if _client is not None and _client.status == "running":
        _leave()
    forget_all()
    with _lock:
        if _client is not None:
            for buf in list(_live_buffers):     # their bytes go with the cluster: say so on use
                buf.lose("dptx.shutdown() closed the cluster that held it")
        _close_locked()


_exit_hook = []


def _close_at_exit() -> None:
    """Close dptx's client and cluster at exit, before distributed's (and tornado's) own exit
    handlers close the cluster under it: atexit runs handlers last-registered first, so this
    is registered once the first connection is made (distributed and tornado imported, their
    handlers registered). The client releases its data first, and the shutdown is quiet."""
    if not _exit_hook:
        _exit_hook.append(atexit.register(shutdown))


on_cancelled(check_connection)
