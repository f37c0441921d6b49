"""The dptx page of the Dask dashboard (``/individual-dptx``, in the "More" menu) and the JSON
state at ``/dptx/api/state``."""
from __future__ import annotations

import json
import logging

from tornado import web

PAGE = "/individual-dptx"
API = "/dptx/api/state"


def _plugin(scheduler):
    return scheduler.plugins.get("dptx")


class StateHandler(web.RequestHandler):
    def initialize(self, scheduler):
        self.scheduler = scheduler

    def get(self):
        plugin = _plugin(self.scheduler)
        state = plugin.state() if plugin is not None else {"workers": {}}
        self.set_header("Content-Type", "application/json")
        self.write(json.dumps(state))


def gpu_text(worker: dict) -> str:
    """The GPU column of a worker: its devices, and why it has none it can use."""
    gpus = worker.get("gpus") or []
    text = f"{len(gpus)}: {', '.join(gpus)}" if gpus else "none"
    if worker.get("gpu_error"):
        text += f" ({worker['gpu_error']})"
    return text


def profile_lines(profiles: list, palette) -> tuple:
    """(step lines of each profile, cut segments) for the dashboard, along [0, 1] of the
    grid."""
    lines = dict(xs=[], ys=[], color=[], label=[])
    cuts = dict(x=[], y0=[], y1=[], color=[])
    for i, p in enumerate(profiles):
        n, color = max(1, p["nblocks"]), palette[i % len(palette)]
        xs, ys = [], []
        for lo, hi, w in zip(p["edges"], p["edges"][1:], p["weights"]):
            xs += [lo / n, hi / n]
            ys += [w, w]
        lines["xs"].append(xs)
        lines["ys"].append(ys)
        lines["color"].append(color)
        lines["label"].append(f"{p['title']} ({p['nblocks']} blocks)")
        top = max(p["weights"], default=1.0)
        for first, _, _ in p["runs"][1:]:
            cuts["x"].append(first / n)
            cuts["y0"].append(0.0)
            cuts["y1"].append(top)
            cuts["color"].append(color)
    return lines, cuts


def dptx_doc(scheduler, extra, doc):
    """Bokeh document: per-worker device table, shares of each kernel's last launch, and
    throughput over time."""
    # lazy: Bokeh is optional on a scheduler (without it, the JSON route only)
    from bokeh.layouts import column
    from bokeh.models import ColumnDataSource, DataTable, Div, TableColumn
    from bokeh.palettes import Category10
    from bokeh.plotting import figure

    table_source = ColumnDataSource(dict(worker=[], name=[], device=[], gpu=[], nthreads=[],
                                         kernel=[], blocks_per_s=[], blocks=[], share=[],
                                         overhead_ms=[]))
    table = DataTable(source=table_source, width=1000, height=220, index_position=None, columns=[
        TableColumn(field="worker", title="worker"), TableColumn(field="name", title="name"),
        TableColumn(field="device", title="device"), TableColumn(field="gpu", title="GPU"),
        TableColumn(field="nthreads", title="threads"),
        TableColumn(field="kernel", title="kernel"),
        TableColumn(field="blocks_per_s", title="blocks/s"),
        TableColumn(field="blocks", title="blocks (last launch)"),
        TableColumn(field="share", title="share (last launch)"),
        TableColumn(field="overhead_ms", title="ms per chunk beyond kernels")])

    share_source = ColumnDataSource(dict(label=[], share=[], color=[]))
    shares = figure(title="Share of the last launch, per kernel and worker", height=260,
                    width=1000, x_range=[], y_range=(0, 1), toolbar_location=None)
    shares.vbar(x="label", top="share", width=0.8, color="color", source=share_source)
    shares.xaxis.major_label_orientation = 0.6

    series = figure(title="Throughput (blocks/s per worker)", height=260, width=1000,
                    x_axis_type="datetime", toolbar_location="above")
    # where the work lies along each kernel's grid (learned), and the last plan's cuts
    profile_source = ColumnDataSource(dict(xs=[], ys=[], color=[], label=[]))
    cut_source = ColumnDataSource(dict(x=[], y0=[], y1=[], color=[]))
    along = figure(title="Cost per block along the grid (learned; mean 1) and the last "
                   "launch's cut points", height=260, width=1000, toolbar_location="above",
                   x_axis_label="block (fraction of the grid)")
    along.multi_line("xs", "ys", color="color", legend_field="label", line_width=2,
                     source=profile_source)
    along.segment(x0="x", x1="x", y0="y0", y1="y1", color="color", line_dash="dashed",
                  source=cut_source)
    # hazards the workers' sanitizer found (dptx sanitize; plugin.hazards)
    hazard_source = ColumnDataSource(dict(tool=[], kind=[], kernel=[], count=[], message=[]))
    hazards = DataTable(source=hazard_source, width=1000, height=160, index_position=None,
                        columns=[TableColumn(field="tool", title="tool", width=80),
                                 TableColumn(field="kind", title="hazard", width=70),
                                 TableColumn(field="kernel", title="kernel", width=160),
                                 TableColumn(field="count", title="seen", width=50),
                                 TableColumn(field="message", title="report", width=640)])
    lines = {}
    palette = Category10[10]

    def update():
        plugin = _plugin(scheduler)
        if plugin is None:
            return
        state = plugin.state()
        rows = {k: [] for k in table_source.data}
        labels, values, colors = [], [], []
        for i, (addr, w) in enumerate(sorted(state["workers"].items())):
            for kernel, k in sorted(w["kernels"].items()) or [("-", None)]:
                rows["worker"].append(addr)
                rows["name"].append(w["name"])
                rows["device"].append(w["device"])
                rows["gpu"].append(gpu_text(w))
                rows["nthreads"].append(w["nthreads"])
                rows["kernel"].append(k["label"] if k else kernel)
                rate = k.get("blocks_per_s") if k else None
                rows["blocks_per_s"].append(round(rate, 1) if rate is not None else float("nan"))
                rows["blocks"].append(k["blocks"] if k else 0)
                rows["share"].append(round(k["share"], 3) if k else 0.0)
                overhead = k.get("overhead_s") if k else None
                rows["overhead_ms"].append(round(overhead * 1e3, 2) if overhead is not None
                                           else float("nan"))
                if k:
                    labels.append(f"{k['label']} @ {w['name']}")
                    values.append(k["share"])
                    colors.append(palette[i % len(palette)])
        table_source.data = rows
        found = state.get("hazards", [])
        hazard_source.data = {k: [h.get(k) for h in found] for k in hazard_source.data}
        shares.x_range.factors = labels
        share_source.data = dict(label=labels, share=values, color=colors)
        profile_source.data, cut_source.data = profile_lines(state.get("profiles", []), palette)
        by_worker = {}
        for t, worker, kernel, rate in list(plugin.series):
            # (kernel is the model's key, name@digest: the legend shows the source's name)
            xs, ys = by_worker.setdefault(f"{plugin.label(kernel)} @ {worker}",
                                          ([], []))
            xs.append(t * 1000)
            ys.append(rate)
        for j, (label, (xs, ys)) in enumerate(sorted(by_worker.items())):
            if label not in lines:
                src = ColumnDataSource(dict(t=[], rate=[]))
                series.line("t", "rate", source=src, legend_label=label,
                            color=palette[j % len(palette)], line_width=2)
                lines[label] = src
            lines[label].data = dict(t=xs, rate=ys)

    update()
    doc.add_periodic_callback(update, 500)
    doc.title = "Dask: dptx"
    doc.add_root(column(Div(text="<h2>dptx: devices, kernels, throughput, shares</h2>"),
                        table, shares, series, along,
                        Div(text="<h3>Hazards found by dptx sanitize on the workers</h3>"),
                        hazards))
    doc.template_variables.update(extra)


def _menu_entry() -> dict:
    # as distributed.dashboard.scheduler.template_variables lists an "individual-" page
    return {"url": PAGE.strip("/"), "name": "Dptx"}


def _add_to_menus(app) -> None:
    """List the page in the "More" menu of the dashboard already built: the menu is the
    "plots" list its pages' template variables share (made once, when the scheduler built
    its dashboard, from the applications registered then)."""
    for tornado_app in getattr(app, "applications", ()):
        for context in getattr(tornado_app, "_applications", {}).values():
            bokeh_app = getattr(context, "application", context)     # (an ApplicationContext)
            for handler in getattr(bokeh_app, "handlers", ()):
                func = getattr(handler, "_func", None)
                extra = (getattr(func, "args", ()) or (None, None))[-1]
                plots = extra.get("plots") if isinstance(extra, dict) else None
                if isinstance(plots, list) and _menu_entry() not in plots:
                    plots.append(_menu_entry())


def install(scheduler, plugin) -> None:
    """JSON route, and the Bokeh page if the dashboard was built without it (a plugin
    registered from a client after the scheduler started)."""
    try:
        # lazy: Bokeh is optional on a scheduler (without it, the JSON route only)
        from distributed.dashboard import scheduler as dashboard_scheduler
    except ImportError:  # no bokeh: the JSON route only
        dashboard_scheduler = None
    if dashboard_scheduler is not None:
        # for dashboards built later in this process (a scheduler started after this one)
        dashboard_scheduler.applications.setdefault(PAGE, dptx_doc)
    app = getattr(scheduler, "http_application", None)
    if app is None:
        return
    app.add_handlers(r".*", [(API, StateHandler, {"scheduler": scheduler})])
    served = any(PAGE in getattr(a, "_applications", {}) for a in app.applications)
    if served or dashboard_scheduler is None:
        return
    try:
        _add_to_menus(app)
        # lazy: Bokeh is optional on a scheduler (without it, the JSON route only)
        from distributed.dashboard.core import BokehApplication
        from distributed.dashboard.scheduler import template_variables
        from tornado.ioloop import IOLoop
        prefix = getattr(scheduler, "_http_prefix", "") or ""
        bokeh_app = BokehApplication({PAGE: dptx_doc}, scheduler, prefix=prefix,
                                     template_variables=template_variables(scheduler))
        app.add_application(bokeh_app)
        bokeh_app.initialize(IOLoop.current())
    except Exception:  # the page is a convenience; the JSON API stays
        logging.getLogger("scheduler_plugins.dptx").warning("could not add the dptx page",
                                                            exc_info=True)
