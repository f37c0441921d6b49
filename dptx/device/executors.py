"""The one door to the executors: ``executor("cpu")`` and ``executor("gpu")`` give the executor
package of that name, imported on first use (a client that builds task graphs never loads
LLVM or CuPy; a worker loads the one its chunks run on). Each executor package offers the
same entries for a worker's tasks: ``run_blocks`` (a range of blocks of a launch, on this
process's device; one that cannot take a kernel raises ``dptx.errors.ExecutorRefusedError``,
and the chunk runs on the CPU instead) and ``run_library`` (a library routine,
``dptx.device.library``, with the device's own library). A new executor is a package
``dptx/<name>`` with both, added to ``EXECUTORS``.

This is the one place that reaches an executor by name rather than by an import: the layers
below the executors (this foundation, the front end) never import them."""
from __future__ import annotations

import importlib

EXECUTORS = ("cpu", "gpu")


def executor(name: str):
    """The executor package ``dptx.<name>``."""
    if name not in EXECUTORS:
        raise ValueError(f"no executor named {name!r} (dptx has {', '.join(EXECUTORS)})")
    return importlib.import_module(f"dptx.{name}")
