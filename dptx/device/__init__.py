"""What every executor agrees on, below them all: the launch configuration's checks
(``launch_config``), pointers into device buffers (``pointer``) and the windows of buffers a
launch is given (``window``)."""
from .pointer import Pointer
from .window import Window

__all__ = ["Pointer", "Window"]
