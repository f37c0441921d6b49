"""Dask scheduler plugin of dptx: throughput model, launch planning, placement, rebalancing
and the dashboard page (DESIGN.md point 8).

Install with ``dask scheduler --preload scheduler_plugins``, or from a client with
``client.register_plugin(scheduler_plugins.DptxSchedulerPlugin())``.
"""
from .dashboard import register_page
from .model import ThroughputModel
from .plugin import DptxSchedulerPlugin
from .planner import WorkerInfo, even_plan, plan_launch

# Imported as a preload before the scheduler builds its dashboard: add the page now, so that
# it is also listed in the dashboard's "More" menu.
register_page()


def dask_setup(scheduler):
    """``--preload scheduler_plugins``: install the plugin."""
    scheduler.add_plugin(DptxSchedulerPlugin())


__all__ = ["DptxSchedulerPlugin", "ThroughputModel", "WorkerInfo", "plan_launch", "even_plan",
           "dask_setup"]
