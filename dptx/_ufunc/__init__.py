"""numpy's ufunc objects (``dptx.add``, ``dptx.maximum.reduce``...) and ``ufunc.at``, on top of
the ufunc machinery of ``dptx._core.ufuncs``."""
