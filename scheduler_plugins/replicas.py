"""Data that survives a worker's death (DESIGN.md point 6).

Host uploads: the bytes of a large ``dptx.asarray``/``set`` go from the client straight to a
worker (never through the scheduler), so no task can recompute them; they are kept on two
workers. Results: an array's current contents were computed from versions already released,
so Dask cannot compute them again either; with ``dptx.result-copies`` 2 (a setting of the
scheduler: the operator's choice of memory against safety) every dptx piece a client holds
gets a second copy too, a copy made by the Active Memory Manager on its next round (every
``distributed.scheduler.active-memory-manager.interval``, 2 s by default), so short-lived
intermediate versions are never copied.

Dask's Active Memory Manager drops replicas that no waiting task needs (``ReduceReplicas``);
here that policy leaves the pieces dptx keeps copies of alone, and ``KeepCopies`` makes a new
copy when a worker holding one goes away.
"""
from __future__ import annotations

import logging

import dask.config
from distributed.active_memory_manager import ActiveMemoryManagerPolicy, ReduceReplicas, Suggestion

logger = logging.getLogger("scheduler_plugins.dptx")

HOST_PREFIX = "dptx-host-"
DPTX_PREFIX = "dptx-"
HOST_COPIES = 2


def copies_wanted(ts, result_copies: int) -> int:
    """How many workers should hold the task's data: 0 when dptx has no say."""
    key = ts.key
    if not isinstance(key, str) or not key.startswith(DPTX_PREFIX):
        return 0
    if key.startswith(HOST_PREFIX):
        return HOST_COPIES
    # a piece of an array a client holds (versions it released are not kept)
    return result_copies if ts.who_wants and result_copies > 1 else 0


def _policies(result_copies: int):

    class ReduceOtherReplicas(ReduceReplicas):
        """``ReduceReplicas`` for everything but the pieces dptx keeps copies of."""

        def run(self):
            for suggestion in super().run():
                if copies_wanted(suggestion.ts, result_copies) < 2:
                    yield suggestion

    class KeepCopies(ActiveMemoryManagerPolicy):
        """Each piece dptx keeps copies of in memory on that many workers (as many as
        there are)."""

        def run(self):
            scheduler = self.manager.scheduler
            running = len(scheduler.running)
            if running < 2:
                return
            for ts in list(scheduler.tasks.values()):
                if ts.state != "memory":
                    continue
                want = min(copies_wanted(ts, result_copies), running)
                for _ in range(want - len(ts.who_has or ())):
                    yield Suggestion("replicate", ts)

    return ReduceReplicas, ReduceOtherReplicas, KeepCopies


def install_replicas(scheduler) -> bool:
    """Swap the AMM's ``ReduceReplicas`` for one that spares dptx's copies and add
    ``KeepCopies`` (host pieces: 2 copies; results: ``dptx.result-copies``). False when the
    scheduler runs no Active Memory Manager (then everything lives on one worker; see
    docs/cluster.md)."""
    amm = scheduler.extensions.get("amm")
    if amm is None:
        return False
    try:
        result_copies = int(dask.config.get("dptx.result-copies", 1))
        reduce_replicas, reduce_others, keep = _policies(result_copies)
        for policy in list(amm.policies):
            if type(policy) is reduce_replicas:
                amm.policies.discard(policy)
                amm.add_policy(reduce_others())
        amm.add_policy(keep())
        return True
    except Exception:  # an AMM of another shape: pieces keep one copy
        logger.warning("could not install the dptx replica policies", exc_info=True)
        return False
