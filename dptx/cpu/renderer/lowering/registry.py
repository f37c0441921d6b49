"""Which code lowers each PTX opcode: each instruction family fills a registry of its own, and
each form of the executor installs the registries it uses, as numba's targets install
``numba.core.imputils.Registry`` objects that ``numba/cpython/mathimpl.py`` and the like fill.

A family module makes ``registry = Registry("arithmetic")``; ``@registry.lower("add", ...)`` on
a method of its per-thread class registers ``fn(self, inst)``, which emits the LLVM IR of one
thread's ``add`` (``self`` is the ``function.Function`` being translated);
``@registry.lower_vector("add")`` on a method of its warp-vectorized class registers
``fn(self, inst, em)`` (``self`` a ``vector.VectorFunction``, ``em`` the lanes that execute it),
which may return False to fall back to the per-thread lowering run lane by lane.
``function.Function`` installs every family's per-thread lowerings (``Lowerings``), and
``vector.VectorFunction`` the warp-vectorized ones of the families that have them. An opcode
that no installed registry lowers is refused with ``PtxUnsupportedError`` naming the PTX
line."""
from __future__ import annotations


class Registry:
    """One instruction family's lowerings, per thread and warp-vectorized."""

    def __init__(self, family: str):
        self.family = family
        self.scalar: dict = {}      # opcode -> fn(function, inst)
        self.vector: dict = {}      # opcode -> fn(vector_function, inst, em) -> None | False

    def _register(self, table: dict, opcodes: tuple, kind: str):
        def decorate(fn):
            for op in opcodes:
                if op in table and table[op] is not fn:
                    raise ValueError(f"two {kind} lowerings of {op} in the {self.family} "
                                     f"family: {table[op].__qualname__} and {fn.__qualname__}")
                table[op] = fn
            return fn
        return decorate

    def lower(self, *opcodes: str):
        """Register the decorated method as the per-thread lowering of ``opcodes``."""
        return self._register(self.scalar, opcodes, "per-thread")

    def lower_vector(self, *opcodes: str):
        """Register the decorated method as the warp-vectorized lowering of ``opcodes``."""
        return self._register(self.vector, opcodes, "warp-vectorized")

    def __repr__(self) -> str:
        return (f"<lowering registry {self.family}: {len(self.scalar)} per-thread, "
                f"{len(self.vector)} warp-vectorized>")


class Lowerings:
    """What a form of the executor installs: opcode -> lowering, from the given registries'
    per-thread tables (or warp-vectorized ones, ``vector=True``). An opcode two installed
    families both lower is an error, not a silent choice."""

    def __init__(self, *registries: Registry, vector: bool = False):
        self.registries = registries
        self.table: dict = {}
        self.family: dict = {}      # opcode -> the family that lowers it
        for registry in registries:
            for op, fn in (registry.vector if vector else registry.scalar).items():
                if op in self.table:
                    raise ValueError(f"{op} is lowered by two installed families: "
                                     f"{self.family[op]} and {registry.family}")
                self.table[op], self.family[op] = fn, registry.family

    def get(self, opcode: str):
        """The lowering of ``opcode``, or None (refused, or run lane by lane)."""
        return self.table.get(opcode)
