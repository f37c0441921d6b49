"""Dask scheduler plugin of dptx: throughput model, shares, placement and the dashboard page
(DESIGN.md point 8), loaded with ``dask scheduler --preload scheduler_plugins``.

The balancer lands with its own issue (see the tracker); this package holds only its place in
the fixed layout until then.
"""
