"""Stopping a running launch: its stop request is the word every loop back edge of the kernel
reads (``function.Function.branch_target``). The time limit (dptx.kernel-timeout) sets it
from one watchdog thread for all launches (a timer thread per launch would cost more than a
small kernel, and workers give every chunk a limit); Ctrl-C sets it through the main
thread's signal wakeup fd (``interrupts_stop``)."""
from __future__ import annotations

import contextlib
import heapq
import itertools
import os
import signal
import threading
import time

import numpy as np

from .renderer import address_space as L


def request_stop(stop_request: np.ndarray, why: int) -> None:
    """Ask a launch's threads to stop (address_space.STOP_*; the first reason stands)."""
    if stop_request[0] == 0:
        stop_request[0] = why


class Watchdog:
    def __init__(self):
        self._cond = threading.Condition()
        self._heap: list = []       # [deadline, sequence, stop request or None (disarmed)]
        self._disarmed = 0
        self._order = itertools.count()
        self._thread = None

    def arm(self, deadline: float, stop_request: np.ndarray) -> list:
        """Set ``stop_request`` to STOP_TIMEOUT at ``deadline`` (time.monotonic()) unless
        disarmed first; returns the entry to disarm."""
        entry = [deadline, next(self._order), stop_request]
        with self._cond:
            heapq.heappush(self._heap, entry)
            if self._thread is None or not self._thread.is_alive():     # (or after a fork)
                self._thread = threading.Thread(target=self._run, name="dptx-watchdog",
                                                daemon=True)
                self._thread.start()
            if self._heap[0] is entry:
                self._cond.notify()
        return entry

    def disarm(self, entry: list) -> None:
        with self._cond:
            if entry[2] is None:
                return
            entry[2] = None
            self._disarmed += 1
            # drop disarmed entries now and then, not at their (far) deadlines: a worker
            # arms one per chunk
            if self._disarmed > 64 and self._disarmed * 2 > len(self._heap):
                self._heap = [e for e in self._heap if e[2] is not None]
                heapq.heapify(self._heap)
                self._disarmed = 0

    def _run(self):
        with self._cond:
            while True:
                while self._heap and self._heap[0][2] is None:
                    heapq.heappop(self._heap)
                    self._disarmed -= 1
                if not self._heap:
                    self._cond.wait()
                    continue
                delay = self._heap[0][0] - time.monotonic()
                if delay > 0:
                    self._cond.wait(delay)
                    continue
                entry = heapq.heappop(self._heap)
                request_stop(entry[2], L.STOP_TIMEOUT)
                entry[2] = None


WATCHDOG = Watchdog()


# -- Ctrl-C ----------------------------------------------------------------------------------
# Python runs its SIGINT handler (KeyboardInterrupt) in the main thread between bytecodes: not
# while that thread is in a kernel's native code. So while the main thread runs a kernel that
# has loops, signal.set_wakeup_fd points at a pipe a reader thread watches; a Ctrl-C sets the
# stop request of the launch, whose threads end at their next back edge, and the
# KeyboardInterrupt follows when the native call returns.
_watched_requests: dict = {}    # id -> the stop request of each launch a Ctrl-C stops
_watch_lock = threading.Lock()
_pipe = None


def _read_signals(fd: int) -> None:
    while True:
        try:
            data = os.read(fd, 64)
        except OSError:
            return
        if signal.SIGINT in data:
            with _watch_lock:
                for request in _watched_requests.values():
                    request_stop(request, L.STOP_INTERRUPT)


def _signal_pipe():
    global _pipe
    with _watch_lock:
        if _pipe is None:
            r, w = os.pipe()
            os.set_blocking(w, False)       # set_wakeup_fd needs it
            threading.Thread(target=_read_signals, args=(r,), name="dptx-sigint",
                             daemon=True).start()
            _pipe = (r, w)
        return _pipe[1]


@contextlib.contextmanager
def interrupts_stop(stop_request: np.ndarray):
    """While the calling thread runs a launch's native code, let Ctrl-C set
    ``stop_request``. Yields True when that is so, or when no Ctrl-C can interrupt this
    thread (not the main one); False when the main thread's wakeup fd is someone else's (an
    asyncio loop's): the caller then waits where Ctrl-C reaches it."""
    if threading.current_thread() is not threading.main_thread():
        yield True
        return
    try:
        previous = signal.set_wakeup_fd(_signal_pipe(), warn_on_full_buffer=False)
    except (ValueError, OSError):
        yield False
        return
    if previous != -1:
        signal.set_wakeup_fd(previous)
        yield False
        return
    key = id(stop_request)
    with _watch_lock:
        _watched_requests[key] = stop_request
    try:
        yield True
    finally:
        signal.set_wakeup_fd(-1)
        with _watch_lock:
            _watched_requests.pop(key, None)


# -- cancelled tasks (workers) -------------------------------------------------------------------
# Dask cannot stop a task that runs: when the client cancels a launch (Ctrl-C, an error before
# it) its chunks would run on, a kernel that loops for ever up to the time limit. A chunk task
# registers its launch's stop request under its key; the worker plugin of ``dptx.worker``
# sets it when the scheduler releases that key while it executes.
_tasks: dict = {}           # task key -> stop request
_tasks_lock = threading.Lock()


@contextlib.contextmanager
def stoppable_task(key, stop_request: np.ndarray):
    with _tasks_lock:
        _tasks[key] = stop_request
    try:
        yield
    finally:
        with _tasks_lock:
            _tasks.pop(key, None)


def stop_task(key) -> bool:
    """Ask the launch task ``key`` runs to stop (STOP_CANCELLED); False if it runs none."""
    with _tasks_lock:
        request = _tasks.get(key)
    if request is None:
        return False
    request_stop(request, L.STOP_CANCELLED)
    return True


def stop_all_tasks() -> None:
    with _tasks_lock:
        keys = list(_tasks)
    for key in keys:
        stop_task(key)
