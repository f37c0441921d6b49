"""In-memory form of a PTX module.

The IR is deliberately close to the text: an instruction is an opcode, its dotted modifiers
(types included, in source order) and its operands. Nothing here knows which instructions
exist; back-ends decide what they support (DESIGN.md decision 2).

Equality ignores source positions, so that ``parse(print_module(m)) == m`` holds for a module that
was parsed from text and printed back.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator, Optional, Union

# Fundamental PTX types, with their size in bytes. ``pred`` has no storage size in memory;
# registers of it hold one bit.
TYPE_SIZES = {
    "b8": 1, "b16": 2, "b32": 4, "b64": 8, "b128": 16,
    "u8": 1, "u16": 2, "u32": 4, "u64": 8,
    "s8": 1, "s16": 2, "s32": 4, "s64": 8,
    "f16": 2, "f16x2": 4, "bf16": 2, "bf16x2": 4, "f32": 4, "f64": 8, "tf32": 4,
    "e4m3": 1, "e5m2": 1, "e4m3x2": 2, "e5m2x2": 2, "e2m1x2": 1, "e3m2x2": 2, "e2m3x2": 2,
    "pred": 1,
}
TYPE_NAMES = frozenset(TYPE_SIZES)

STATE_SPACES = ("reg", "sreg", "const", "global", "local", "param", "shared", "tex")

# Opcodes whose first operand is not written by the instruction (stores, branches, barriers...).
# Used only to split operands into destinations and sources for analyses.
NO_DESTINATION_OPCODES = frozenset({
    "st", "red", "bra", "brx", "call", "ret", "exit", "bar", "barrier", "membar", "fence",
    "prefetch", "prefetchu", "trap", "brkpt", "pmevent", "nanosleep", "cp", "stmatrix",
    "discard", "applypriority", "griddepcontrol", "setmaxnreg", "st.async", "red.async",
    "multimem", "wgmma", "tcgen05", "cp.async", "mbarrier",
})


def _plus(offset: int) -> str:
    """``+8``, ``+-8`` (what NVRTC writes: ptxas rejects ``[%rd1-8]`` and ``sym-8``), or
    nothing for 0."""
    return f"+{offset}" if offset else ""


def type_size(ptx_type: str) -> int:
    """Size in bytes of a fundamental type name (without the leading dot)."""
    return TYPE_SIZES[ptx_type]


# ----------------------------------------------------------------------------------------------
# Operands
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Reg:
    """A register, a special register (``%tid``) or a predicate; ``component`` is ``x``/``y``/
    ``z``/``w`` for ``%tid.x`` or a vector register's element; ``negated`` is ``!%p``."""
    name: str
    component: Optional[str] = None
    negated: bool = False

    def __str__(self) -> str:
        text = self.name + (f".{self.component}" if self.component else "")
        return "!" + text if self.negated else text


@dataclass(frozen=True)
class Imm:
    """An immediate. ``kind`` is ``int``; ``f32`` or ``f64`` for the ``0f``/``0d`` bit-pattern
    forms (``value`` holds the bits as an unsigned int); ``float`` for a decimal literal
    (``value`` is a Python float, meaning a double). ``unsigned`` keeps a ``U`` suffix."""
    value: Union[int, float]
    kind: str = "int"
    unsigned: bool = False

    def __str__(self) -> str:
        if self.kind == "f32":
            return "0f%08X" % self.value
        if self.kind == "f64":
            return "0d%016X" % self.value
        if self.kind == "float":
            return repr(float(self.value))
        # Masks and selectors (prmt, lop3, shfl) read better in hex.
        text = hex(self.value) if self.value >= 0x100 else str(self.value)
        return text + ("U" if self.unsigned else "")


@dataclass(frozen=True)
class Sym:
    """A name used as an operand: a label, a variable, a function or a parameter;
    ``offset`` is for ``sym+off`` (the address of a variable plus a constant)."""
    name: str
    offset: int = 0

    def __str__(self) -> str:
        return self.name + _plus(self.offset)


@dataclass(frozen=True)
class Addr:
    """A memory operand ``[base+offset]``; ``base`` is a Reg, a Sym or None (``[imm]``)."""
    base: Union[Reg, Sym, None]
    offset: int = 0

    def __str__(self) -> str:
        if self.base is None:
            return f"[{self.offset}]"
        if self.offset == 0:
            return f"[{self.base}]"
        return f"[{self.base}{_plus(self.offset)}]"


@dataclass(frozen=True)
class AddrList:
    """A bracketed operand list that is not a plain address (``[tex, {x, y}]``)."""
    items: tuple

    def __str__(self) -> str:
        return "[" + ", ".join(str(i) for i in self.items) + "]"


@dataclass(frozen=True)
class Vec:
    """A vector operand ``{a, b, c, d}``; an element is None for the ``_`` sink."""
    items: tuple

    def __str__(self) -> str:
        return "{" + ", ".join("_" if i is None else str(i) for i in self.items) + "}"


@dataclass(frozen=True)
class Pair:
    """The ``d|p`` destination pair of ``setp``, ``shfl.sync`` and friends."""
    first: Reg
    second: Reg

    def __str__(self) -> str:
        return f"{self.first}|{self.second}"


@dataclass(frozen=True)
class ParamList:
    """A parenthesized operand list, as in ``call (ret), f, (a, b)``."""
    items: tuple

    def __str__(self) -> str:
        return "(" + ", ".join(str(i) for i in self.items) + ")"


Operand = Union[Reg, Imm, Sym, Addr, AddrList, Vec, Pair, ParamList]


# ----------------------------------------------------------------------------------------------
# Declarations
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SymInit:
    """An initializer element naming a symbol: ``sym``, ``sym+off`` or ``generic(sym)+off``."""
    name: str
    offset: int = 0
    generic: bool = False

    def __str__(self) -> str:
        text = f"generic({self.name})" if self.generic else self.name
        return text + _plus(self.offset)


# An initializer is an Imm, a SymInit, or a (nested) tuple of initializers.
Initializer = Union[Imm, SymInit, tuple]


@dataclass
class Variable:
    """A state-space variable: ``.global``, ``.const``, ``.shared``, ``.local``, ``.param``
    (inside a body) or ``.tex``. ``dims`` is the array shape, with None for ``[]``.
    ``attributes`` keeps any other qualifiers in order (``.ptr``, ``.v4``...)."""
    space: str
    type: str
    name: str
    align: Optional[int] = None
    vector: Optional[int] = None
    dims: tuple = ()
    init: Optional[Initializer] = None
    linkage: tuple = ()
    attributes: tuple = ()
    line: int = field(default=0, compare=False)

    @property
    def element_size(self) -> int:
        return type_size(self.type) * (self.vector or 1)

    @property
    def count(self) -> Optional[int]:
        """Number of elements, or None for an unsized array (``.extern .shared a[]``)."""
        n = 1
        for d in self.dims:
            if d is None:
                return None
            n *= d
        return n

    @property
    def size(self) -> Optional[int]:
        count = self.count
        return None if count is None else count * self.element_size

    @property
    def alignment(self) -> int:
        return self.align or self.element_size


@dataclass
class Param:
    """A kernel or function parameter (``.param`` or, in old-style functions, ``.reg``).
    ``ptr_space`` and ``ptr_align`` come from ``.ptr .global .align N``."""
    name: str
    type: str
    space: str = "param"
    align: Optional[int] = None
    vector: Optional[int] = None
    dims: tuple = ()
    ptr: bool = False
    ptr_space: Optional[str] = None
    ptr_align: Optional[int] = None
    line: int = field(default=0, compare=False)

    @property
    def size(self) -> int:
        n = type_size(self.type) * (self.vector or 1)
        for d in self.dims:
            n *= d or 0
        return n

    @property
    def alignment(self) -> int:
        return self.align or type_size(self.type) * (self.vector or 1)


@dataclass
class RegDecl:
    """``.reg .type name`` or ``.reg .type name<N>`` (N registers name0..name{N-1})."""
    type: str
    name: str
    count: Optional[int] = None
    vector: Optional[int] = None
    line: int = field(default=0, compare=False)

    def names(self) -> list:
        if self.count is None:
            return [self.name]
        return [f"{self.name}{i}" for i in range(self.count)]


@dataclass
class Label:
    name: str
    line: int = field(default=0, compare=False)


@dataclass
class TargetTable:
    """``name: .branchtargets L1, L2;`` or ``name: .calltargets f, g;``."""
    name: str
    kind: str  # "branchtargets" | "calltargets"
    targets: tuple
    line: int = field(default=0, compare=False)


@dataclass
class CallPrototype:
    """``name: .callprototype (.param .b32 _) _ (.param .b64 _, ...);``."""
    name: str
    returns: tuple
    params: tuple
    noreturn: bool = False
    line: int = field(default=0, compare=False)


@dataclass
class Directive:
    """A directive kept for the printer but meaningless to execution (``.loc``, ``.pragma``,
    ``.file``, ``.section`` blocks, ``.maxnreg`` inside a body...). ``text`` is its source
    text without the trailing semicolon."""
    text: str
    line: int = field(default=0, compare=False)


@dataclass
class Instruction:
    opcode: str
    modifiers: tuple = ()
    operands: tuple = ()
    guard: Optional[Reg] = None
    line: int = field(default=0, compare=False)
    column: int = field(default=0, compare=False)

    @property
    def types(self) -> tuple:
        """The type modifiers, in order (``cvt.rn.f32.s32`` -> ``("f32", "s32")``)."""
        return tuple(m for m in self.modifiers if m in TYPE_NAMES)

    @property
    def full_opcode(self) -> str:
        return ".".join((self.opcode,) + tuple(self.modifiers))

    def has(self, *modifiers: str) -> bool:
        return any(m in self.modifiers for m in modifiers)

    @property
    def destinations(self) -> tuple:
        if self.opcode == "wgmma":
            # mma_async writes D (operand 0, and reads it: reads_destinations); fence,
            # commit_group and wait_group write nothing
            return (self.operands[0],) if "mma_async" in self.modifiers and self.operands \
                else ()
        if not self.operands or self.opcode in NO_DESTINATION_OPCODES:
            if self.opcode == "call" and self.operands and isinstance(self.operands[0], ParamList):
                return (self.operands[0],)
            return ()
        return (self.operands[0],)

    @property
    def reads_destinations(self) -> bool:
        """Whether the instruction reads its destination registers too: wgmma.mma_async
        accumulates into D (D = A B + D)."""
        return self.opcode == "wgmma" and "mma_async" in self.modifiers

    @property
    def sources(self) -> tuple:
        if self.opcode == "call":
            return tuple(o for o in self.operands[1:]) if self.destinations else self.operands
        return self.operands[len(self.destinations):]

    def __str__(self) -> str:
        # the instruction's PTX text (the printer's spelling; printer.py prints whole
        # modules and uses this for their instructions)
        text = f"@{self.guard} " if self.guard is not None else ""
        text += self.full_opcode
        if self.operands:
            text += " " + ", ".join(str(o) for o in self.operands)
        return text + ";"


@dataclass
class Scope:
    """A ``{ ... }`` block inside a function body, with declarations of its own."""
    body: list = field(default_factory=list)
    line: int = field(default=0, compare=False)


Statement = Union[Instruction, Label, RegDecl, Variable, TargetTable, CallPrototype, Directive,
                  Scope]


@dataclass
class Function:
    """An ``.entry`` (kernel) or ``.func``. ``body`` is None for a declaration without
    definition (``.extern .func vprintf(...);``). ``performance`` maps directive names
    (``maxntid``, ``reqntid``, ``minnctapersm``, ``maxnreg``, ``reqnctapercluster``,
    ``maxclusterrank``, ``explicitcluster``, ``noreturn``...) to tuples of ints."""
    kind: str  # "entry" | "func"
    name: str
    params: list = field(default_factory=list)
    returns: list = field(default_factory=list)
    linkage: tuple = ()
    performance: dict = field(default_factory=dict)
    pragmas: tuple = ()
    body: Optional[list] = None
    line: int = field(default=0, compare=False)

    @property
    def is_kernel(self) -> bool:
        return self.kind == "entry"

    @property
    def is_declaration(self) -> bool:
        return self.body is None

    # The flattened body and its instructions are kept until ``body`` is assigned again (the
    # translator asks for them per instruction); bodies are never changed in place.
    def __setattr__(self, name, value):
        if name == "body":
            self.__dict__.pop("_statements", None)
            self.__dict__.pop("_instructions", None)
        object.__setattr__(self, name, value)

    def statements(self) -> Iterator:
        """All statements in order, nested scopes flattened (depth-first)."""
        flat = self.__dict__.get("_statements")
        if flat is None:
            def walk(items):
                for s in items:
                    if isinstance(s, Scope):
                        yield from walk(s.body)
                    else:
                        yield s
            flat = self.__dict__["_statements"] = tuple(walk(self.body or []))
        return iter(flat)

    @property
    def instructions(self) -> list:
        """The body's instructions in order (one list, shared: do not mutate it)."""
        cached = self.__dict__.get("_instructions")
        if cached is None:
            cached = self.__dict__["_instructions"] = [
                s for s in self.statements() if isinstance(s, Instruction)]
        return cached

    @property
    def labels(self) -> dict:
        """Label name -> index in ``instructions`` of the instruction it precedes."""
        result, index = {}, 0
        for s in self.statements():
            if isinstance(s, Instruction):
                index += 1
            elif isinstance(s, Label):
                result[s.name] = index
        return result

    @property
    def registers(self) -> dict:
        """Register name -> (type, vector width or None), all scopes together."""
        result = {}
        for s in self.statements():
            if isinstance(s, RegDecl):
                for n in s.names():
                    result[n] = (s.type, s.vector)
        return result

    @property
    def local_variables(self) -> list:
        """Variables declared in the body (``.local``, ``.shared``, ``.param``...)."""
        return [s for s in self.statements() if isinstance(s, Variable)]

    def param_layout(self) -> list:
        """(param, byte offset) pairs of the parameter buffer, in declaration order, each
        parameter aligned to its alignment (as the CUDA driver lays out kernel arguments)."""
        layout, offset = [], 0
        for p in self.params:
            a = p.alignment
            offset = (offset + a - 1) // a * a
            layout.append((p, offset))
            offset += p.size
        return layout

    @property
    def param_size(self) -> int:
        layout = self.param_layout()
        if not layout:
            return 0
        p, off = layout[-1]
        return off + p.size


@dataclass
class Module:
    version: str = ""
    target: tuple = ()
    address_size: int = 64
    # Module-level items in source order: Variable, Function, Directive (.file, .section,
    # .pragma), and ("alias", a, b) tuples for ``.alias``.
    items: list = field(default_factory=list)

    @property
    def functions(self) -> list:
        return [i for i in self.items if isinstance(i, Function)]

    @property
    def kernels(self) -> list:
        return [f for f in self.functions if f.is_kernel]

    @property
    def global_variables(self) -> list:
        """The module's variables with static storage: those at module level, then the
        ``.global``/``.const`` ones declared in function bodies (static storage too; only
        that body names them)."""
        found = [i for i in self.items if isinstance(i, Variable)]
        for f in self.functions:
            if f.body is not None:
                found += [v for v in f.local_variables if v.space in ("global", "const")]
        return found

    @property
    def aliases(self) -> list:
        return [i for i in self.items if isinstance(i, tuple) and i and i[0] == "alias"]

    def function(self, name: str) -> Function:
        """The definition of ``name`` if there is one, else its declaration."""
        found = None
        for f in self.functions:
            if f.name == name:
                if not f.is_declaration:
                    return f
                found = found or f
        if found is None:
            raise KeyError(name)
        return found
