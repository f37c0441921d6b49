"""What the client keeps per cluster connection: its copy of the scheduler plugin's model,
the launch planner (with the shares it keeps across launches) and the kernel images sent to
the cluster."""
from __future__ import annotations

import threading

from . import tasks
from dptx.ptx.digest import ptx_digest
from .model_copy import ModelCopy
from .plan import LaunchPlanner


class Session:
    def __init__(self, client, bandwidth: float = 1e9):
        self.client = client        # (its batching interval: dptx.runtime.cluster._quick_messages)
        self.model = ModelCopy(client)
        self.planner = LaunchPlanner(self.model, bandwidth)
        self._images: dict = {}
        self._lock = threading.Lock()

    def kernel_image(self, ptx: str):
        """The future of a module's PTX on the cluster: sent once (inside a task, so Dask can
        recompute it anywhere), then fetched by each worker once; chunk tasks depend on it
        instead of carrying the text."""
        digest = ptx_digest(ptx)[:24]
        with self._lock:
            future = self._images.get(digest)
            if future is None:
                future = self._images[digest] = self.client.submit(
                    tasks.kernel_text, ptx, key=f"dptx-ptx-{digest}", pure=False)
        return future
