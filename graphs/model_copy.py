"""The client's copy of the scheduler plugin's model (DESIGN.md point 8): the workers that can
run chunks and each worker's measured speed per kernel. The plugin publishes it as a Dask
event whenever it changes; the client keeps the latest, so planning a launch needs no call
to the scheduler. Without the plugin (a plain ``dask scheduler``), the workers come from the
client's scheduler info and every kernel runs at its prior speed."""
from __future__ import annotations

import threading
import time

import dask.config

from dptx.errors import DptxError
from scheduler_plugins.planner import TASK_OVERHEAD, Tuning, WorkerInfo
from scheduler_plugins.profile import CostProfile, Learned

MODEL_TOPIC = "dptx-model"


def _laid_over(snapshot: dict, delta: dict) -> dict:
    """``snapshot`` with the entries of the kernels ``delta`` covers replaced by its own (the
    plugin publishes the kernels that changed: scheduler_plugins.plugin.publish). The other
    kernels' entries stay the same objects: ``ModelCopy.profile`` keeps what it built from
    them."""
    kernels = delta.get("kernels", ())
    out = dict(snapshot, workers=delta["workers"], host_replicas=delta.get("host_replicas"))
    for part in ("rates", "profiles", "overheads"):
        entries = dict(snapshot.get(part, {}))
        for kernel in kernels:
            entries.pop(kernel, None)
        entries.update(delta.get(part, {}))
        out[part] = entries
    return out


def allowed(workers: list) -> list:
    """The workers the ``dptx.workers`` setting names (addresses), in order; all where it is
    None. For a part of a cluster (benchmarks/scale_out.py's speed-up table on a deployed
    cluster, a worker kept for other work): chunks and uploads go only there."""
    names = dask.config.get("dptx.workers", None)
    if names is None:
        return workers
    if isinstance(names, str):
        names = [n for n in names.replace(",", " ").split() if n]
    chosen = [w for w in workers if w.address in set(names)]
    if not chosen:
        raise DptxError(f"dptx.workers={list(names)!r} names none of the cluster's workers "
                        f"({', '.join(w.address for w in workers) or 'none'})")
    return chosen


class ModelCopy:
    def __init__(self, client):
        self.client = client
        self._lock = threading.Lock()
        self._snapshot = None
        self._plugin = None           # None: not known yet
        self._fallback_at = 0.0
        self._profiles: dict = {}     # (kernel, nblocks) -> (snapshot entry, Learned)
        self._early: list = []        # deltas that came before the first whole snapshot

    # -- the snapshot ----------------------------------------------------------------------------
    def _on_event(self, event) -> None:
        _, msg = event
        with self._lock:
            if not msg.get("delta"):
                self._snapshot = msg
            elif self._snapshot is None:
                self._early.append(msg)     # before _first's fetch came back
            else:
                self._snapshot = _laid_over(self._snapshot, msg)

    def _first(self) -> None:
        """First use: subscribe to the plugin's updates and fetch the current model once."""
        try:
            snapshot = self.client.sync(self.client.scheduler.dptx_model)
        except Exception as exc:  # no dptx plugin on this scheduler
            if "dptx_model" not in str(exc) and "unknown operation" not in str(exc).lower():
                raise
            self._plugin = False
            return
        self._plugin = True
        self.client.subscribe_topic(MODEL_TOPIC, self._on_event)
        with self._lock:
            if self._snapshot is None:
                self._snapshot = snapshot
                for delta in self._early:
                    self._snapshot = _laid_over(self._snapshot, delta)
            self._early = []

    def snapshot(self) -> dict:
        if self._plugin is None:
            self._first()
        if not self._plugin:
            now = time.monotonic()
            if self._snapshot is None or now - self._fallback_at > 2.0:
                self._snapshot = self._from_scheduler_info()
                self._fallback_at = now
        with self._lock:
            return self._snapshot

    def _from_scheduler_info(self) -> dict:
        workers = {}
        for addr, w in self.client.scheduler_info(n_workers=-1)["workers"].items():
            resources = w.get("resources") or {}
            gpus = int(resources.get("GPU", 0))
            if not resources.get("CPU") and not gpus:
                continue
            workers[addr] = {"nthreads": int(w.get("nthreads", 1)), "device": "gpu" if gpus else "cpu",
                             "gpus": gpus, "memory": int(w.get("memory_limit") or 0)}
        return {"workers": workers, "rates": {}, "host_replicas": False}

    # -- views ---------------------------------------------------------------------------------
    def workers(self) -> list:
        """WorkerInfo of every worker that can run chunks, sorted by address (those the
        ``dptx.workers`` setting names, where it is set)."""
        snap = self.snapshot()
        return allowed([WorkerInfo(addr, int(w["nthreads"]), w["device"], int(w["gpus"]),
                                   int(w.get("memory", 0)))
                        for addr, w in sorted(snap["workers"].items())])

    def profile(self, kernel: str, nblocks: int):
        """The ``scheduler_plugins.profile.Learned`` profile of the kernel at this grid size
        (cost along the grid, speeds in its units), or None before one was learned."""
        entry = self.snapshot().get("profiles", {}).get(kernel, {}).get(str(nblocks))
        if entry is None:
            return None
        cached = self._profiles.get((kernel, nblocks))
        if cached is None or cached[0] is not entry:
            cached = self._profiles[(kernel, nblocks)] = (entry, Learned(
                CostProfile(nblocks, entry["weights"]), dict(entry["speeds"]),
                entry.get("spread")))
        return cached[1]

    def tuning(self, kernel: str, nblocks: int) -> dict:
        """worker -> ``scheduler_plugins.planner.Tuning`` for this kernel and grid size: the
        measured seconds per chunk beyond the kernels and the spread of chunk times (the
        planner's defaults where nothing was measured yet)."""
        snap = self.snapshot()
        overheads = snap.get("overheads", {}).get(kernel, {})
        spread = snap.get("profiles", {}).get(kernel, {}).get(str(nblocks), {}).get("spread")
        # floor: the scheduler's own work per task (~0.5 ms), which a worker's span misses
        return {w: Tuning(max(TASK_OVERHEAD / 4, float(overheads.get(w, TASK_OVERHEAD))), spread)
                for w in snap["workers"]}

    def measured(self, kernel: str) -> dict:
        """worker -> (blocks/s per thread, samples) for ``kernel``."""
        return {w: (float(r), int(n)) for w, (r, n) in self.snapshot()["rates"].get(kernel, {}).items()}

    @property
    def host_replicas(self) -> bool:
        return bool(self.snapshot().get("host_replicas"))
