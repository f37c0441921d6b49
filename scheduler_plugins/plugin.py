"""The dptx scheduler plugin: learns per-worker speed per kernel, publishes the model clients
plan launches from, rebalances queued chunks, keeps host uploads replicated and keeps the
state the dashboard shows (DESIGN.md point 8).

It reads only task keys (``dptx-chunk-*``), their ``dptx`` annotation (kernel, launch id,
blocks, grid blocks) and the ``startstops`` of finished chunks; it never looks inside tasks.
"""
from __future__ import annotations

import functools
import logging
import time
import traceback
from collections import Counter, defaultdict, deque
from dataclasses import dataclass, field

import dask.config
from distributed.diagnostics.plugin import SchedulerPlugin
from tornado.ioloop import PeriodicCallback

from . import dashboard
from .model import ThroughputModel
from .overhead import OverheadModel
from .planner import WorkerInfo
from .profile import ProfileModel
from .replicas import install_replicas
from .spans import install as install_span_bounds, prune as prune_spans

logger = logging.getLogger("scheduler_plugins.dptx")

CHUNK_PREFIX = "dptx-chunk-"
CHUNK_REPORT = "dptx-chunk"    # a chunk's kernel time, in its task metadata (graphs.tasks.REPORT)
OWN_PREFIXES = (CHUNK_PREFIX, "dptx-batch-")
MODEL_TOPIC = "dptx-model"
PUBLISH_SECONDS = 0.2
MODEL_EVENTS_KEPT = 4
SPAN_PRUNE_SECONDS = 5.0

# the worker event topic of sanitizer reports (dptx.device.sanitizer.report)
HAZARD_TOPIC = "dptx-hazard"


@dataclass
class LaunchState:
    kernel: str
    nblocks: int
    done: dict = field(default_factory=lambda: defaultdict(int))   # worker -> blocks run
    bytes_returned: int = 0                         # dirty pages the chunks sent back
    started: float = field(default_factory=time.time)
    chunks: list = field(default_factory=list)      # (first, end, worker) of each chunk run


def _may_run_on(ts, ws) -> bool:
    """Whether ``ws`` has the resources (CPU/GPU) that task ``ts`` asks for."""
    have = ws.resources or {}
    return all(have.get(r, 0) >= q for r, q in (ts.resource_restrictions or {}).items())


def message_interval() -> float:
    """Seconds between two batched sends on this process's connections (dptx.message-interval)."""
    return float(dask.config.get("dptx.message-interval", 0) or 0)


def _free_orphans(scheduler) -> None:
    """Loosely restricted tasks waiting in ``no-worker`` whose restrictions name only workers
    that are gone lose those restrictions, so that the worker joining now can take them.
    A chunk or an upload is restricted to the worker chosen for it, loosely (another runs it
    where that one died); Dask reschedules it elsewhere while any worker is left, but when
    every worker died at once (out of memory, say) it waits in ``no-worker``, and a new
    worker only takes the tasks whose restrictions name it
    (``bulk_schedule_unrunnable_after_adding_worker`` does not look at ``loose``): the
    launch would wait for ever. This runs before that, as a plugin's ``add_worker``."""
    for ts in list(scheduler.unrunnable):
        if ts.loose_restrictions and ts.worker_restrictions and \
                not any(addr in scheduler.workers for addr in ts.worker_restrictions):
            ts.worker_restrictions = None


def _quick_stream(stream) -> None:
    """The scheduler batches its messages to a worker (one send per 5 ms at most) and to a
    client (2 ms): a chain of launches pays that on every hop, a launch-and-synchronize loop
    on every iteration. ``stream`` (a ``BatchedSend``, or None) sends at dptx's interval."""
    if stream is not None:
        stream.interval = min(stream.interval, message_interval())


def keep_chunks_from_stealing(scheduler) -> None:
    """Dask's work stealing judges a task by its key prefix's average duration, the same for
    every kernel, and would move chunks away from the data they were placed next to; dptx
    moves its own chunks (``rebalance``), with the transfer cost of their inputs in mind."""
    stealing = scheduler.extensions.get("stealing")
    if stealing is None or getattr(stealing, "_dptx_wrapped", False):
        return
    original = stealing.put_key_in_stealable

    def put_key_in_stealable(ts):
        if not _key_str(ts.key).startswith(OWN_PREFIXES):
            original(ts)
    stealing.put_key_in_stealable = put_key_in_stealable
    stealing._dptx_wrapped = True


def keep_chunks_runnable(scheduler) -> None:
    """Work around a Dask scheduler bug: a task with a loose worker restriction whose workers
    are gone falls back to *any* worker, even one without the resources it asks for, and
    ``acquire_resources`` then fails (KeyError 'GPU') in the middle of a transition, which
    leaves the scheduler's state broken. That is what happens to GPU chunks when their GPU
    worker dies or restarts after a kernel fault. A dptx chunk goes instead to a worker with
    its resources; with no GPU left in the cluster, a GPU chunk asks for a CPU (it then runs
    on the worker's CPU executor, ``graphs.tasks``: same bytes)."""
    if getattr(scheduler, "_dptx_valid_workers", False):
        return
    original = scheduler.valid_workers

    def valid_workers(ts):
        found = original(ts)
        if (found is None or found or not ts.loose_restrictions or not ts.resource_restrictions
                or not _key_str(ts.key).startswith(OWN_PREFIXES)):
            return found
        able = {ws for ws in scheduler.running if _may_run_on(ts, ws)}
        if not able and "GPU" in ts.resource_restrictions:
            logger.warning("dptx: no GPU worker left for %s; it runs on a CPU", ts.key)
            ts.resource_restrictions = {"CPU": 1}
            able = {ws for ws in scheduler.running if _may_run_on(ts, ws)}
        return able
    scheduler.valid_workers = valid_workers
    scheduler._dptx_valid_workers = True


def _contained(hook):
    """A scheduler hook that logs its own failure as text and returns. Dask logs a plugin's
    exception with ``exc_info`` into the scheduler's record of its last 10,000 log lines
    (``distributed.admin.log-length``): each record keeps the traceback, its frames keep the
    ``TaskState`` they handled, and a forgotten ``TaskState`` keeps the (copied) sets of the
    tasks it depended on and fed, so one failure per chunk kept the history of every launch
    alive in the user's process (the embedded cluster's scheduler runs there)."""
    @functools.wraps(hook)
    def contained(self, *args, **kwargs):
        try:
            return hook(self, *args, **kwargs)
        except Exception as error:  # noqa: BLE001 - a learning hook must not fail the scheduler
            text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
            del error
            self.failed_hooks[hook.__name__] += 1
            logger.error("dptx scheduler plugin: %s failed\n%s", hook.__name__, text)
    return contained


def _key_str(key) -> str:
    return key if isinstance(key, str) else str(key)


class DptxSchedulerPlugin(SchedulerPlugin):
    name = "dptx"

    def __init__(self, history: int = 2000):
        self.model = ThroughputModel()
        self.launches: dict = {}                    # launch id -> LaunchState
        self.last_launch: dict = {}                 # kernel -> launch id (latest finished)
        self.titles: dict = {}                      # kernel -> its name in the CUDA source
        self.title_uses: dict = {}                  # that name -> how many kernels have it
        self.profiles = ProfileModel()              # cost along the grid, speeds per kernel
        self.overheads = OverheadModel()            # seconds per chunk beyond its kernels
        self.series = deque(maxlen=history)         # (time, worker, kernel, blocks/s)
        self.scheduler = None
        self.moves = 0
        self.kernel_seconds: dict = {}              # chunk key -> time its kernels ran
        self.failed_hooks: Counter = Counter()      # hook name -> failures (logged as text)
        self.fused_samples = 0                      # fused chunks of several kernels learnt from
        self.host_replicas = False
        self.bandwidth = 1e9          # bytes/s between workers (dptx.transfer-bandwidth)
        self._changed: set = set()   # kernels learned from since the last publish
        self._full = True             # the next publish sends the whole model (workers moved)
        self._publisher = None
        self._span_pruner = None
        self.spans_forgotten = 0

    # -- lifecycle ---------------------------------------------------------------------------
    async def start(self, scheduler) -> None:
        self.scheduler = scheduler
        scheduler.handlers["dptx_model"] = self.model_handler
        scheduler.handlers["dptx_state"] = self.state_handler
        dashboard.install(scheduler, self)
        self.host_replicas = install_replicas(scheduler)
        self.bandwidth = float(dask.config.get("dptx.transfer-bandwidth", 1e9))
        keep_chunks_from_stealing(scheduler)
        keep_chunks_runnable(scheduler)
        history = dask.config.get("dptx.span-history", 100)
        if history is not None and install_span_bounds(scheduler):
            self._span_pruner = PeriodicCallback(
                lambda: self.forget_spans(int(history)), SPAN_PRUNE_SECONDS * 1000)
            self._span_pruner.start()
        for stream in list(scheduler.stream_comms.values()) + list(scheduler.client_comms.values()):
            _quick_stream(stream)
        # Clients plan launches from a copy of the model (DESIGN.md point 8): publish it
        # when it changed, at most every PUBLISH_SECONDS, instead of serving a blocking
        # request per launch.
        self._publisher = PeriodicCallback(self.publish, PUBLISH_SECONDS * 1000)
        self._publisher.start()

    async def close(self) -> None:
        for timer in (self._publisher, self._span_pruner):
            if timer is not None:
                timer.stop()

    @_contained
    def forget_spans(self, keep: int) -> None:
        self.spans_forgotten += prune_spans(self.scheduler, keep)

    @_contained
    def log_event(self, topic, msg) -> None:
        """Workers report how long the kernels of a chunk ran (``dptx-chunk``), without the
        JIT compile and the window copies that the task's own time includes, and whether
        that time is a sample of the worker's speed (not a kernel's first run there, nor the
        CPU executor's trial of its two forms)."""
        if topic == "dptx-chunk" and isinstance(msg, dict) and "key" in msg:
            self.kernel_seconds[msg["key"]] = (float(msg.get("seconds", 0.0)),
                                               bool(msg.get("sample", True)))
            while len(self.kernel_seconds) > 10000:
                self.kernel_seconds.pop(next(iter(self.kernel_seconds)))

    @_contained
    def add_worker(self, scheduler, worker) -> None:
        self._full = True
        _quick_stream(scheduler.stream_comms.get(worker))
        _free_orphans(scheduler)

    @_contained
    def update_graph(self, scheduler, *, client=None, **kwargs) -> None:
        # a client's stream exists from its registration on (add_client runs before it is
        # made): its first graph finds it
        _quick_stream(scheduler.client_comms.get(client))

    @_contained
    def remove_worker(self, scheduler, worker, **kwargs) -> None:
        self.model.forget_worker(worker)
        self.profiles.forget_worker(worker)
        self.overheads.forget_worker(worker)
        self._full = True
        self.publish()      # now: clients must stop placing data and chunks on it

    # -- the device model of the cluster ---------------------------------------------------------
    def worker_infos(self, need: str = "CPU") -> list:
        infos = []
        for addr, ws in self.scheduler.workers.items():
            resources = ws.resources or {}
            gpus = int(resources.get("GPU", 0))
            if need == "GPU" and not gpus:
                continue
            if need == "CPU" and not resources.get("CPU") and not gpus:
                continue
            device = "gpu" if gpus else "cpu"
            infos.append(WorkerInfo(addr, ws.nthreads, device, gpus, int(ws.memory_limit or 0)))
        return sorted(infos, key=lambda w: w.address)

    def model_snapshot(self, kernels: set = None) -> dict:
        """What clients plan from: the workers able to run chunks, blocks/s per thread with
        sample counts per (kernel, worker), per (kernel, grid size) the cost profile along
        the grid with the workers' speeds in its units and the spread of chunk times around
        them, and per (kernel, worker) the seconds a chunk costs beyond its kernels. Plain
        data (it travels as an event). ``kernels``: only theirs (a delta, ``"delta": True``,
        that clients lay over what they have: graphs.model_copy)."""
        profiles: dict = {}
        for kernel, nblocks in self.profiles.keys():
            if kernels is not None and kernel not in kernels:
                continue
            p = self.profiles.profile(kernel, nblocks)
            if p is not None:
                profiles.setdefault(kernel, {})[str(nblocks)] = {
                    "weights": p.as_list(), "speeds": self.profiles.speeds(kernel, nblocks),
                    "spread": self.profiles.spread(kernel, nblocks)}
        return {
            "workers": {w.address: {"nthreads": w.nthreads, "device": w.device, "gpus": w.gpus,
                                    "memory": w.memory}
                        for w in self.worker_infos()},
            "rates": self.model.snapshot(kernels),
            "profiles": profiles,
            "overheads": self.overheads.snapshot(kernels),
            "host_replicas": self.host_replicas,
            "delta": kernels is not None,
            "kernels": sorted(kernels or ()),
        }

    def model_handler(self):
        """Scheduler RPC ``dptx_model``: the snapshot, for a client's first launch."""
        return self.model_snapshot()

    @_contained
    def publish(self) -> None:
        """Send clients what changed: the whole model after workers came or went, else the
        entries of the kernels learned from since the last publish. (Rebuilt whole at every
        change, the snapshot cost the event loop time in proportion to every kernel ever
        run: a long session's thousands of kernels made each launch slower.)"""
        if (self._full or self._changed) and self.scheduler is not None:
            if self._a_subscriber_is_leaving():
                return      # the next publish, once the scheduler has removed it, sends this
            changed, full = self._changed, self._full
            self._changed, self._full = set(), False
            self.scheduler.log_event(MODEL_TOPIC, self.model_snapshot(None if full else changed))
            # clients take each snapshot as it comes (graphs.model_copy): Dask would keep the
            # last 1,000 (distributed.admin.low-level-log-length), megabytes of stale models
            topic = self._model_topic()
            if topic is not None and topic.events.maxlen != MODEL_EVENTS_KEPT:
                topic.events = deque(topic.events, maxlen=MODEL_EVENTS_KEPT)

    def _model_topic(self):
        """Dask's record of the model's event topic (its events, its subscribers), or None."""
        topics = getattr(getattr(self.scheduler, "_broker", None), "_topics", {})
        return topics.get(MODEL_TOPIC)

    def _a_subscriber_is_leaving(self) -> bool:
        """Whether a client subscribed to the model has closed its connection and the
        scheduler has not removed it yet: an event sent to it now makes Dask log a CRITICAL
        "Closed comm ... while trying to write" with the whole model (seen at the end of
        scripts that close their own Client)."""
        for client in getattr(self._model_topic(), "subscribers", ()):
            comm = self.scheduler.client_comms.get(client)
            if comm is not None and comm.comm is not None and comm.comm.closed():
                return True
        return False

    # -- learning ------------------------------------------------------------------------------
    @_contained
    def transition(self, key, start, finish, *args, **kwargs) -> None:
        if start != "processing" or finish != "memory":
            return
        k = _key_str(key)
        if not k.startswith(CHUNK_PREFIX):
            return
        ts = self.scheduler.tasks.get(key)
        info = (ts.annotations or {}).get("dptx") if ts is not None else None
        worker = kwargs.get("worker")
        if not info or worker is None:
            return
        if "kernel" not in info:
            # a fused chunk of several kernels (or a batch): their time together
            if "steps" in info:
                self._learn_fused(info["steps"], worker, k, kwargs.get("startstops", ()),
                                  kwargs.get("metadata"))
            else:
                self.kernel_seconds.pop(k, None)
            return
        self._register(info["kernel"], info.get("title"))
        self._learn(info, worker, k, kwargs.get("startstops", ()), kwargs.get("metadata"))
        self._changed.add(info["kernel"])
        launch = self.launches.get(info["launch"])
        if launch is None and "nblocks" in info:
            launch = self.launches[info["launch"]] = LaunchState(info["kernel"], int(info["nblocks"]))
            while len(self.launches) > 1000:  # keep memory bounded on long runs
                self.launches.pop(next(iter(self.launches)))
        if launch is not None:
            # a fused chunk ran its share of several launches: count one launch's share
            launch.done[worker] += int(info.get("share", info["blocks"]))
            if "first" in info:
                launch.chunks.append((int(info["first"]), int(info["end"]), worker))
            launch.bytes_returned += int(kwargs.get("nbytes") or (ts.nbytes if ts is not None else 0) or 0)
            if sum(launch.done.values()) >= launch.nblocks:
                self.last_launch[launch.kernel] = info["launch"]
                self.overheads.finish(info["launch"])
        self.rebalance(info["launch"], worker)

    def _chunk_seconds(self, key: str, computes: list, metadata=None) -> tuple:
        """(seconds the chunk's kernels ran, whether that is a sample of the worker's speed
        rather than a first run or a trial, whether the worker reported it): the worker's
        report (in the task's metadata, or as an event from an older worker), or else the
        task's compute time."""
        reported = self.kernel_seconds.pop(key, None)
        figures = (metadata or {}).get(CHUNK_REPORT)
        if isinstance(figures, dict):
            reported = (float(figures.get("seconds", 0.0)), bool(figures.get("sample", True)))
        if reported is None:
            return sum(s["stop"] - s["start"] for s in computes), True, False
        return reported[0], reported[1], True

    def _learn_fused(self, steps, worker: str, key: str, startstops, metadata=None) -> None:
        """A fused chunk of several kernels: its time shared out by what the model expects
        of each on this worker, so a worker that has become slower (or faster) is seen in
        every kernel's speed while launches keep running fused; by blocks while some kernel
        has no speed there yet (what the split needs is how the workers compare)."""
        computes = [s for s in startstops if s.get("action") == "compute"]
        seconds, sample, _ = self._chunk_seconds(key, computes, metadata)
        blocks: dict = {}
        for kernel, count, *title in steps:
            blocks[kernel] = blocks.get(kernel, 0) + int(count)
            self._register(kernel, title[0] if title else None)
        if not sample or seconds <= 0 or not any(blocks.values()):
            return
        rates = {kernel: self.model.rate(kernel, worker) for kernel in blocks}
        if all(rates.values()):
            expected = {kernel: blocks[kernel] / rates[kernel] for kernel in blocks}
        else:
            # kernels that have only ever run fused (array operations fuse from their first
            # launch): a block of each taken as the same work, until each has a speed
            expected = dict(blocks)
        total = sum(expected.values())
        ws = self.scheduler.workers.get(worker)
        lanes = ws.nthreads if ws is not None else 1
        for kernel, count in blocks.items():
            if count > 0:
                self.model.observe(kernel, worker, count, seconds * expected[kernel] / total)
                rate = self.model.rate(kernel, worker)
                if rate is not None:
                    self.series.append((time.time(), worker, kernel, rate * lanes))
        self.fused_samples += 1
        self._changed.update(blocks)

    def _learn(self, info: dict, worker: str, key: str, startstops, metadata=None) -> None:
        """A finished chunk's times into the models: blocks/s, the cost along the grid, the
        overhead per chunk."""
        computes = [s for s in startstops if s.get("action") == "compute"]
        seconds, sample, reported = self._chunk_seconds(key, computes, metadata)
        if not sample:          # a first run or a trial: not this worker's speed
            return
        ws = self.scheduler.workers.get(worker)
        lanes = ws.nthreads if ws is not None else 1
        if reported and computes:
            self.overheads.observe(info["kernel"], info["launch"], worker, lanes,
                                   min(s["start"] for s in computes),
                                   max(s["stop"] for s in computes), seconds)
        self.model.observe(info["kernel"], worker, int(info["blocks"]), seconds)
        if "first" in info and "nblocks" in info:      # where along the grid the time went
            self.profiles.observe(info["kernel"], int(info["nblocks"]), info["launch"],
                                  int(info["first"]), int(info["end"]), worker, seconds)
        rate = self.model.rate(info["kernel"], worker)
        if rate is not None:
            self.series.append((time.time(), worker, info["kernel"], rate * lanes))

    # -- rebalancing ---------------------------------------------------------------------------
    def rebalance(self, launch: str, thief_address: str) -> int:
        """If ``thief`` has no queued chunk of ``launch`` left while other workers still have
        chunks of it waiting (not yet started), move the last of those to the thief."""
        s = self.scheduler
        thief = s.workers.get(thief_address)
        if thief is None:
            return 0

        def of_launch(ts):
            info = (ts.annotations or {}).get("dptx")
            return info is not None and info.get("launch") == launch

        if any(of_launch(ts) for ts in thief.processing):
            return 0
        stealing = s.extensions.get("stealing")
        if stealing is None:
            return 0
        best = None
        for ws in s.workers.values():
            if ws is thief:
                continue
            queued = [ts for ts in ws.processing
                      if of_launch(ts) and ts not in ws.executing and _may_run_on(ts, thief)]
            # leave the victim one chunk to work on beside the one it executes
            if len(queued) >= 2 and (best is None or len(queued) > len(best[1])):
                best = (ws, queued)
        if best is None:
            return 0
        victim, queued = best
        ts = max(queued, key=lambda t: t.annotations["dptx"].get("index", 0))
        if not self._worth_moving(ts, victim, thief):
            return 0
        try:
            stealing.move_task_request(ts, victim, thief)
        except Exception:  # the victim may have gone; stealing is best effort
            logger.debug("dptx rebalance of %s failed", ts.key, exc_info=True)
            return 0
        self.moves += 1
        return 1

    def _worth_moving(self, ts, victim, thief) -> bool:
        """Whether the chunk's time on the victim (its queue is at least one chunk long) beats
        moving the bytes of its inputs that the thief does not hold: data stays where it
        is unless moving it pays (DESIGN.md point 8)."""
        missing = sum(dep.nbytes for dep in ts.dependencies
                      if thief not in (dep.who_has or ()) and dep.nbytes > 0)
        if not missing:
            return True
        info = ts.annotations["dptx"]
        rate = self.model.rate(info["kernel"], victim.address)
        if not rate:
            return False
        seconds = int(info.get("blocks", 1)) / rate
        return missing / self.bandwidth < 0.5 * seconds

    # -- state for the dashboard and the JSON API --------------------------------------------
    def state(self) -> dict:
        workers = {}
        for addr, ws in self.scheduler.workers.items():
            metrics = (ws.metrics or {}).get("dptx") or {}
            gpus = int((ws.resources or {}).get("GPU", 0))
            workers[addr] = {
                "name": str(ws.name),
                "device": metrics.get("device") or ("gpu" if gpus else "cpu"),
                "nthreads": ws.nthreads,
                "gpus": list(metrics.get("gpus") or []),
                # why the worker uses no GPU (or lost one): CuPy missing, driver too old...
                "gpu_error": metrics.get("gpu_error"),
                "kernels": {},
            }
        # kernels measured, and kernels run whose chunks were all first runs (no speed yet)
        for kernel in sorted(set(self.model.kernels()) | set(self.last_launch)):
            launch = self.launches.get(self.last_launch.get(kernel, ""))
            total = launch.nblocks if launch else 0
            for addr, entry in workers.items():
                rate = self.model.rate(kernel, addr)
                blocks = launch.done.get(addr, 0) if launch else 0
                if rate is None and not blocks:
                    continue
                entry["kernels"][kernel] = {
                    # the PTX name (the key is the model's: ``name@module digest``, as
                    # ``RawKernel.model_key``), and as the CUDA source names it (put<float>)
                    "name": kernel.partition("@")[0],
                    "title": self.titles.get(kernel, kernel.partition("@")[0]),
                    "label": self.label(kernel),
                    # None: not measured yet (its chunks there were first runs)
                    "blocks_per_s": None if rate is None else rate * entry["nthreads"],
                    "blocks": int(blocks),
                    "share": blocks / total if total else 0.0,
                    # seconds a chunk costs the worker beyond its kernels (None: not yet)
                    "overhead_s": self.overheads.overhead(kernel, addr),
                }
        return {"workers": workers, "profiles": self._profiles_state(workers),
                "hazards": self.hazards()}

    def hazards(self) -> list:
        """The sanitizer's reports workers sent (``dptx sanitize``: the worker event topic
        HAZARD_TOPIC), one per hazard with how many times it was seen, first seen first."""
        found: dict = {}
        for _, entry in self.scheduler.get_events(HAZARD_TOPIC):
            if not isinstance(entry, dict) or "message" not in entry:
                continue
            key = str(entry.get("key", entry["message"]))
            if key in found:
                found[key]["count"] += 1
            else:
                found[key] = {"tool": entry.get("tool"), "kind": entry.get("kind"),
                              "kernel": entry.get("kernel"), "message": entry["message"],
                              "count": 1}
        return list(found.values())

    def _register(self, kernel: str, title) -> None:
        """Note a kernel's name in the CUDA source (and how many kernels have that name)."""
        if kernel not in self.titles:
            title = self.titles[kernel] = title or kernel.partition("@")[0]
            self.title_uses[title] = self.title_uses.get(title, 0) + 1

    def label(self, kernel: str) -> str:
        """How the dashboard names a kernel: its source's name, with its module's digest where
        kernels of several modules have that name (the bars and lines need names apart)."""
        title = self.titles.get(kernel, kernel.partition("@")[0])
        if self.title_uses.get(title, 0) > 1:
            return f"{title} [{kernel.partition('@')[2][:6]}]"
        return title

    def _profiles_state(self, workers: dict) -> list:
        """Each learned cost profile along the grid (bin edges and relative cost per block),
        with the runs of blocks each worker ran in the kernel's last launch of that size
        ([first, end, worker name], in grid order: the plan's cuts, and what idle workers
        took over)."""
        out = []
        for kernel, nblocks in self.profiles.keys():
            profile = self.profiles.profile(kernel, nblocks)
            if profile is None:
                continue
            launch = self.launches.get(self.last_launch.get(kernel, ""))
            runs = []
            if launch is not None and launch.nblocks == nblocks:
                for first, end, w in sorted(launch.chunks):
                    name = workers[w]["name"] if w in workers else w
                    if runs and runs[-1][2] == name and runs[-1][1] == first:
                        runs[-1][1] = end
                    else:
                        runs.append([first, end, name])
            out.append({"kernel": kernel, "title": self.label(kernel),
                        "nblocks": nblocks, "edges": [int(e) for e in profile.edges],
                        "weights": profile.as_list(), "runs": runs,
                        "spread": self.profiles.spread(kernel, nblocks)})
        return out

    def state_handler(self):
        """Scheduler RPC ``dptx_state``."""
        return self.state()
