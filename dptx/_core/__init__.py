"""Kernel tools and the primitives numpy's chapters are built from: ``ElementwiseKernel``
(``elementwise``), ``ReductionKernel`` (``reduction_kernel``), numpy's reductions
(``reductions``), ``matmul`` and ``dot`` (``products``, ``matrix_vector``), the ufunc machinery (``ufuncs``), ``dptx.fuse`` (``fuse``), scans
(``scan``), gather and compaction (``selection``) and numpy's ``out=`` (``outputs``). It imports
the runtime below it, never a chapter above it."""
