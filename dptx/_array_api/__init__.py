"""The Python array API standard's own names (``astype``, ``concat``, ``permute_dims``,
``unique_*``, ``vecdot``...), where they differ from numpy's."""
