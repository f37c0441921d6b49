"""The nodes of the value graph (``value_graph.py``): their kinds, and the hash-consing table
that makes one value computed twice one node.

A node is an operation (``op``) on argument nodes (``args``) with constant attributes
(``attrs``: a constant's value, a comparison, a signedness...). Integer nodes stand for a
register of ``width`` bits holding their value modulo 2**width. ``loops`` are the loop
headers in whose iterations the value may change (the narrowing rules need them);
``taint`` says whether the value may hide an address of unknown origin (``ANY``) or of a
pointer parameter used as a number (its index); ``site`` keys a value tied to a place (a
load, a join of paths, a phi) so that two such values are never one node.
"""
from __future__ import annotations

from . import ir

# node kinds ------------------------------------------------------------------------------
CONST, SPECIAL, SCALAR, UNKNOWN = "const", "special", "scalar", "unknown"
ADD, SUB, MUL, NEG, NOT = "add", "sub", "mul", "neg", "not"
SHL, SHR, MULWIDE, MULHI = "shl", "shr", "mulwide", "mulhi"
MIN, MAX, ABS, DIV, REM = "min", "max", "abs", "div", "rem"
AND, OR, XOR, EXT, RANGE, HULL, PHI = "and", "or", "xor", "ext", "range", "hull", "phi"
PTR = "ptr"
SETP, PAND, POR, PNOT, PCONST, PUNKNOWN = "setp", "pand", "por", "pnot", "pconst", "punknown"
PREDICATES = frozenset({SETP, PAND, POR, PNOT, PCONST, PUNKNOWN})

UNKNOWN_ORIGIN = "?"
SPACE_ORIGINS = frozenset({"shared", "local", "paramspace"})
ANY = "*"            # taint: certainly of unknown origin

INT_TYPES = {"s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64", "b8", "b16", "b32", "b64"}
CMP = {"eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge",
        "lo": "lt", "ls": "le", "hi": "gt", "hs": "ge"}
UNSIGNED_CMP = {"lo", "ls", "hi", "hs"}
# special registers with a known launch value or range; others are unknown
LAUNCH_SPECIALS = {"%tid", "%ntid", "%ctaid", "%nctaid"}


class Node:
    __slots__ = ("id", "op", "args", "attrs", "width", "loops", "taint", "site", "extra")

    def __init__(self, id_, op, args, attrs, width, loops, taint, site):
        self.id = id_
        self.op = op
        self.args = args
        self.attrs = attrs
        self.width = width
        self.loops = loops      # loops (headers) in whose iterations the value may change
        self.taint = taint      # {ANY, parameter indices}: see the module docstring
        self.site = site        # the place a non-pure value comes from (None: pure)
        self.extra = None       # phis: their back-edge values, filled after the walk

    def __repr__(self):
        inner = ", ".join(f"#{a.id}" for a in self.args)
        return f"#{self.id}={self.op}{self.attrs if self.attrs is not None else ''}({inner})"


def type_bits(t: str) -> int:
    return ir.TYPE_SIZES[t] * 8


def signed_const(v: int, width: int) -> int:
    v &= (1 << width) - 1
    return v - (1 << width) if v >> (width - 1) else v


class Graph:
    """Hash-consed nodes. Pure operations are shared; values tied to a place (a load, a
    merge of paths, a phi) carry that place in their key."""

    def __init__(self):
        self.nodes: list = []
        self._memo: dict = {}

    def node(self, op, args=(), attrs=None, width=64, loops=frozenset(), taint=frozenset(),
             site=None):
        key = (op, attrs, tuple(a.id for a in args), width, site)
        found = self._memo.get(key)
        if found is not None:
            return found
        for a in args:
            loops = loops | a.loops
            taint = taint | a.taint
        n = Node(len(self.nodes), op, tuple(args), attrs, width, loops, taint, site)
        self.nodes.append(n)
        self._memo[key] = n
        return n

    # -- leaves --------------------------------------------------------------------------
    def const(self, value: int, width: int = 64):
        return self.node(CONST, attrs=signed_const(value, width), width=width)

    def unknown(self, width, taint=frozenset(), loops=frozenset(), site=None):
        return self.node(UNKNOWN, width=width, taint=taint, loops=loops, site=site)

    def special(self, name, comp, width=32):
        return self.node(SPECIAL, attrs=(name, comp), width=width)

    # -- integer arithmetic (pointers handled by the Builder before these) -------------
    def add(self, a, b, width):
        if a.op == CONST and b.op == CONST:
            return self.const(a.attrs + b.attrs, width)
        if a.op == CONST:
            a, b = b, a
        if b.op == CONST and b.attrs == 0:
            return a
        if b.op == CONST and a.op == ADD and a.args[1].op == CONST:
            return self.add(a.args[0], self.const(a.args[1].attrs + b.attrs, width), width)
        return self.node(ADD, (a, b), width=width)

    def sub(self, a, b, width):
        if b.op == CONST:
            return self.add(a, self.const(-b.attrs, width), width)
        if a is b:
            return self.const(0, width)
        if b.op == MUL and b.width == width:
            # a - (a / d) * d is a % d (C's truncating remainder, which PTX's rem is): the
            # form compilers give a remainder whose quotient they compute anyway. As a
            # difference its range would be the dividend's spread; as a remainder, [0, d).
            q, d = b.args if b.args[0].op == DIV else b.args[::-1]
            if q.op == DIV and q.width == width and q.args[0] is a and q.args[1] is d:
                return self.node(REM, (a, d), attrs=q.attrs, width=width)
        return self.node(SUB, (a, b), width=width)

    def mul(self, a, b, width):
        if a.op == CONST and b.op == CONST:
            return self.const(a.attrs * b.attrs, width)
        if a.op == CONST:
            a, b = b, a
        if b.op == CONST and b.attrs == 1:
            return a
        return self.node(MUL, (a, b), width=width)

    def op(self, kind, args, width, attrs=None):
        return self.node(kind, tuple(args), attrs=attrs, width=width)
