"""The virtual GPU on the client: the cluster connection (``cluster``, ``local_cluster``), the
device array's storage and views (``ndarray``) and its device buffers (``buffers``), streams and
their operations (``stream``), kernel modules and their variables, launches and groups of
launches, their handles, kernel attributes, NVRTC. Below it: ``graphs`` (a launch or memcpy as
a Dask graph), the executors and the PTX front end; above it: ``dptx._core`` and numpy's
chapters."""
