"""numpy's chapter "Logic functions": comparisons of whole arrays (``comparison``: ``isclose``,
``allclose``, ``array_equal``...) and the array type queries (``array_queries``); the
element-wise comparisons are ufuncs (``dptx._core.ufuncs``)."""
