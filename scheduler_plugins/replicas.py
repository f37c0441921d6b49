"""Host uploads survive a worker's death (DESIGN.md point 6): the bytes of a large
``dptx.asarray``/``set`` go from the client straight to a worker (never through the
scheduler), so no task can recompute them; instead they are kept on two workers.

Dask's Active Memory Manager drops replicas that no waiting task needs (``ReduceReplicas``);
here that policy leaves dptx host pieces alone, and ``KeepHostReplicas`` makes a new copy
when a worker holding one goes away.
"""
from __future__ import annotations

import logging

logger = logging.getLogger("scheduler_plugins.dptx")

HOST_PREFIX = "dptx-host-"
HOST_COPIES = 2


def _is_host_piece(ts) -> bool:
    key = ts.key
    return isinstance(key, str) and key.startswith(HOST_PREFIX)


def _policies():
    from distributed.active_memory_manager import ActiveMemoryManagerPolicy, ReduceReplicas

    class ReduceOtherReplicas(ReduceReplicas):
        """``ReduceReplicas`` for everything but dptx host pieces."""

        def run(self):
            for suggestion in super().run():
                if not _is_host_piece(suggestion.ts):
                    yield suggestion

    class KeepHostReplicas(ActiveMemoryManagerPolicy):
        """Each dptx host piece in memory on ``copies`` workers (as many as there are)."""

        def __init__(self, copies: int = HOST_COPIES):
            self.copies = copies

        def run(self):
            scheduler = self.manager.scheduler
            want = min(self.copies, len(scheduler.running))
            for ts in list(scheduler.tasks.values()):
                if ts.state == "memory" and _is_host_piece(ts):
                    for _ in range(want - len(ts.who_has or ())):
                        yield Suggestion("replicate", ts)

    from distributed.active_memory_manager import Suggestion
    return ReduceReplicas, ReduceOtherReplicas, KeepHostReplicas


def install_host_replicas(scheduler) -> bool:
    """Swap the AMM's ``ReduceReplicas`` for one that spares host pieces and add
    ``KeepHostReplicas``. False when the scheduler runs no Active Memory Manager (then a host
    piece lives on one worker; see README)."""
    amm = scheduler.extensions.get("amm")
    if amm is None:
        return False
    try:
        reduce_replicas, reduce_others, keep = _policies()
        for policy in list(amm.policies):
            if type(policy) is reduce_replicas:
                amm.policies.discard(policy)
                amm.add_policy(reduce_others())
        amm.add_policy(keep())
        return True
    except Exception:  # an AMM of another shape: host pieces keep one copy
        logger.warning("could not install the dptx replica policies", exc_info=True)
        return False
