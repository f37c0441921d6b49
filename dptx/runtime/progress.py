"""A progress bar while dptx waits for long work: Dask's own (``distributed.progress``), a
text bar in a terminal and a widget in Jupyter, shown once a wait has lasted
``SHOW_AFTER`` seconds, so that short launches print nothing. The ``dptx.progress`` setting:
``"auto"`` (shown when the program's output is a terminal or a Jupyter kernel), True, False."""
from __future__ import annotations

import sys

from distributed import wait as dask_wait
from distributed.diagnostics.progressbar import progress
from distributed.utils import is_kernel

from .. import config

SHOW_AFTER = 2.0        # seconds a wait lasts before the bar appears


def wanted() -> bool:
    setting = config.get("progress")
    if isinstance(setting, str) and setting.lower() == "auto":
        try:
            terminal = sys.stdout.isatty()
        except (AttributeError, ValueError):
            terminal = False
        return terminal or bool(is_kernel())
    if isinstance(setting, str):
        return setting.lower() in ("1", "true", "yes", "on")
    return bool(setting)


def wait(futures: list) -> None:
    """``distributed.wait(futures)``, with a progress bar once it has lasted SHOW_AFTER s."""
    client = futures[0].client
    with client.as_current():       # dptx's client need not be the default
        if not wanted():
            dask_wait(futures)
            return
        try:
            dask_wait(futures, timeout=SHOW_AFTER)
            return
        except TimeoutError:
            pass
        notebook = bool(is_kernel())
        bar = progress(futures, notebook=notebook, multi=False, complete=True,
                       scheduler=client.scheduler.address)
        if notebook and bar is not None:
            from IPython.display import display     # lazy: optional, only in a notebook
            display(bar)
        dask_wait(futures)
