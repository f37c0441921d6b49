"""Which code lowers each PTX opcode: a registry the instruction families fill, as numba's
``numba.core.imputils.Registry`` is filled by ``numba/cpython/mathimpl.py`` and the like.

``@lower("add", ...)`` on a method of a family's per-thread class registers
``fn(self, inst)``, which emits the LLVM IR of one thread's ``add`` (``self`` is the
``function.Function`` being translated). ``@lower_vector("add")`` on a method of its
warp-vectorized class registers ``fn(self, inst, em)`` (``self`` a ``vector.VectorFunction``,
``em`` the lanes that execute it), which may return False to fall back to the per-thread
lowering run lane by lane. A family registers when its module is imported; ``function.py``
and ``vector.py`` import them all. An opcode with no lowering is refused with
``PtxUnsupportedError`` naming the PTX line."""
from __future__ import annotations

SCALAR: dict = {}      # opcode -> fn(function, inst)
VECTOR: dict = {}      # opcode -> fn(vector_function, inst, em) -> None | False


def _register(table: dict, opcodes: tuple, kind: str):
    def decorate(fn):
        for op in opcodes:
            if op in table and table[op] is not fn:
                raise ValueError(f"two {kind} lowerings of {op}: {table[op].__qualname__} "
                                 f"and {fn.__qualname__}")
            table[op] = fn
        return fn
    return decorate


def lower(*opcodes: str):
    """Register the decorated method as the per-thread lowering of ``opcodes``."""
    return _register(SCALAR, opcodes, "per-thread")


def lower_vector(*opcodes: str):
    """Register the decorated method as the warp-vectorized lowering of ``opcodes``."""
    return _register(VECTOR, opcodes, "warp-vectorized")


def scalar_lowering(opcode: str):
    """The per-thread lowering of ``opcode``, or None."""
    return SCALAR.get(opcode)


def vector_lowering(opcode: str):
    """The warp-vectorized lowering of ``opcode``, or None (then it runs lane by lane)."""
    return VECTOR.get(opcode)
