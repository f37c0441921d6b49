"""numpy's chapter "Array creation routines": numerical ranges, building matrices, arrays from
buffers and functions, conversions. The allocations themselves (``empty``, ``zeros``,
``asarray``...) belong to the array's storage: ``dptx.runtime.ndarray``."""
