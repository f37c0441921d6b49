"""The package version: a module of its own, so that the layers below the package (the JIT
cache key in dptx/cpu/jit.py) read it without importing dptx/__init__.py and all above it."""
__version__ = "0.1.0"
