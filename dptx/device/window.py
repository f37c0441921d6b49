"""What a launch is given in place of a whole device buffer: a window of its bytes, the same for
every executor (the CPU executor maps it; a GPU worker copies it to device memory)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Window:
    """Bytes [offset, offset + data.size) of a device buffer of ``nbytes`` bytes, given to a
    launch in place of the whole buffer (a chunk's access footprint, DESIGN.md point 6).
    Addresses keep their meaning (the buffer's base plus an offset into the whole buffer); an
    access inside the buffer but outside the window raises ``FootprintViolation``."""
    data: np.ndarray        # uint8, C-contiguous, writeable
    offset: int
    nbytes: int

    def __post_init__(self):
        if not (0 <= self.offset and self.offset + self.data.size <= self.nbytes):
            raise ValueError(f"window [{self.offset}, {self.offset + self.data.size}) is not "
                             f"inside a buffer of {self.nbytes} bytes")
