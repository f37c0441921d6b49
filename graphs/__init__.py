"""Launch -> Dask graph: block-chunk tasks with GPU/CPU resource annotations, page merges and
memcpy tasks (DESIGN.md point 6). Knows nothing of the scheduler's internals.

Filled by the distributed-runtime issue; the front-end and the CPU executor do not need it.
"""
