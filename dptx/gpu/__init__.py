"""GPU execution of PTX through CuPy: a range of blocks of a launch runs as a sub-grid of the
block-offset-rewritten kernel (``dptx.ptx.rewrite``). CuPy is the ``gpu`` extra; nothing here
is imported on a CPU-only install until a GPU chunk runs."""
from .runner import available, launch

__all__ = ["available", "launch"]
