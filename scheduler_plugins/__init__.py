"""Dask scheduler plugin of dptx: throughput model, launch planning, placement, rebalancing
and the dashboard page (DESIGN.md point 8).

Install with ``dask scheduler --preload scheduler_plugins``, or from a client with
``client.register_plugin(scheduler_plugins.DptxSchedulerPlugin())``.

Importing the package does nothing else: the client's planner (``graphs.plan``) imports the
model and planner modules from here without loading the plugin, its scheduler hooks or the
dashboard (Bokeh); the plugin adds its dashboard page when it starts.
"""
import importlib

_EXPORTS = {"DptxSchedulerPlugin": "plugin", "ThroughputModel": "model",
            "WorkerInfo": "planner", "plan_launch": "planner", "even_plan": "planner"}


def __getattr__(name):
    # the package's names from the modules that define them, on first use (PEP 562)
    if name in _EXPORTS:
        return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def dask_setup(scheduler):
    """``--preload scheduler_plugins``: install the plugin."""
    # lazy: importing scheduler_plugins loads no scheduler hooks (the client takes the planner)
    from .plugin import DptxSchedulerPlugin
    scheduler.add_plugin(DptxSchedulerPlugin())


__all__ = ["DptxSchedulerPlugin", "ThroughputModel", "WorkerInfo", "plan_launch", "even_plan",
           "dask_setup"]
