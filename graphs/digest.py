"""The digest that names a module's PTX across the cluster: ``dptx.ptx.digest`` (the CPU
executor's JIT cache is keyed by the same)."""
from dptx.ptx.digest import ptx_digest

__all__ = ["ptx_digest"]
