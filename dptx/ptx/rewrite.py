"""PTX -> PTX rewrites.

``add_block_offset`` lets a device run a sub-grid (a range of linear block ids) of a launch as
a launch of its own: a GPU cannot start a grid at block 1000, but it can run a 1-D grid of
``end - begin`` blocks whose kernel adds ``begin`` to its block id and recovers the original
3-D ``%ctaid`` and ``%nctaid`` from parameters (DESIGN.md: dptx/gpu).
"""
from __future__ import annotations

import copy

from ..errors import PtxUnsupportedError
from . import ir
from .analysis import reachable_functions

OFFSET_PARAM = "__dptx_block_offset"
GRID_PARAMS = ("__dptx_grid_x", "__dptx_grid_y", "__dptx_grid_z")
_PREFIX = "%__dptx_"


def _map_registers(op, fn):
    """``op`` with every register ``r`` in it replaced by ``fn(r)``."""
    if isinstance(op, ir.Reg):
        return fn(op)
    if isinstance(op, ir.Addr):
        return ir.Addr(_map_registers(op.base, fn), op.offset)
    if isinstance(op, ir.Pair):
        return ir.Pair(_map_registers(op.first, fn), _map_registers(op.second, fn))
    if isinstance(op, ir.Vec):
        return ir.Vec(tuple(None if i is None else _map_registers(i, fn) for i in op.items))
    if isinstance(op, (ir.ParamList, ir.AddrList)):
        return type(op)(tuple(_map_registers(i, fn) for i in op.items))
    return op


def _replace(op, mapping):
    return _map_registers(op, lambda r: mapping.get((r.name, r.component), r))


def _reads_grid_registers(function: ir.Function) -> bool:
    def visit(op):
        if isinstance(op, ir.Reg):
            return op.name in ("%ctaid", "%nctaid")
        if isinstance(op, (ir.Vec, ir.ParamList, ir.AddrList)):
            return any(i is not None and visit(i) for i in op.items)
        return False
    return any(visit(o) for inst in function.instructions for o in inst.operands)


def _rewrite_body(items, mapping):
    out = []
    for s in items:
        if isinstance(s, ir.Instruction):
            s = copy.copy(s)
            s.operands = tuple(_replace(o, mapping) for o in s.operands)
        elif isinstance(s, ir.Scope):
            s = ir.Scope(_rewrite_body(s.body, mapping), line=s.line)
        out.append(s)
    return out


def add_block_offset(module: ir.Module, kernel_name: str) -> ir.Module:
    """A copy of ``module`` whose kernel ``kernel_name`` takes four more ``.u32`` parameters
    (block offset, then the full grid's x, y, z) and sees, in a 1-D launch of N blocks, the
    ``%ctaid``/``%nctaid`` of blocks ``offset .. offset+N-1`` of the full grid."""
    module = copy.deepcopy(module)
    kernel = next((f for f in module.kernels if f.name == kernel_name), None)
    if kernel is None or kernel.body is None:
        raise KeyError(f"no kernel named {kernel_name!r} with a body in this module")
    for f in reachable_functions(module, kernel):
        if f is not kernel and f.body is not None and _reads_grid_registers(f):
            raise PtxUnsupportedError(
                f"device function {f.name} (line {f.line}) reads %ctaid/%nctaid; sub-grid "
                f"launches only rewrite kernels")
    kernel.params = kernel.params + [ir.Param(OFFSET_PARAM, "u32")] + \
        [ir.Param(p, "u32") for p in GRID_PARAMS]

    r = {n: f"{_PREFIX}{n}" for n in ("lin", "t", "cx", "cy", "cz", "gx", "gy", "gz")}
    mapping = {("%ctaid", "x"): ir.Reg(r["cx"]), ("%ctaid", "y"): ir.Reg(r["cy"]),
               ("%ctaid", "z"): ir.Reg(r["cz"]), ("%nctaid", "x"): ir.Reg(r["gx"]),
               ("%nctaid", "y"): ir.Reg(r["gy"]), ("%nctaid", "z"): ir.Reg(r["gz"])}

    def inst(op, mods, *operands):
        return ir.Instruction(op, tuple(mods), tuple(operands))

    R = lambda key: ir.Reg(r[key])  # noqa: E731 - local shorthand
    prologue = [ir.RegDecl("b32", name) for name in r.values()] + [
        inst("ld", ("param", "u32"), R("lin"), ir.Addr(ir.Sym(OFFSET_PARAM))),
        inst("mov", ("u32",), R("t"), ir.Reg("%ctaid", "x")),
        inst("add", ("u32",), R("lin"), R("lin"), R("t")),
        inst("ld", ("param", "u32"), R("gx"), ir.Addr(ir.Sym(GRID_PARAMS[0]))),
        inst("ld", ("param", "u32"), R("gy"), ir.Addr(ir.Sym(GRID_PARAMS[1]))),
        inst("ld", ("param", "u32"), R("gz"), ir.Addr(ir.Sym(GRID_PARAMS[2]))),
        inst("rem", ("u32",), R("cx"), R("lin"), R("gx")),
        inst("div", ("u32",), R("t"), R("lin"), R("gx")),
        inst("rem", ("u32",), R("cy"), R("t"), R("gy")),
        inst("div", ("u32",), R("cz"), R("t"), R("gy")),
    ]
    # Declarations stay first (some tools expect .reg before instructions), then the prologue.
    body = _rewrite_body(kernel.body, mapping)
    split = 0
    while split < len(body) and isinstance(body[split], (ir.RegDecl, ir.Variable, ir.Directive)):
        split += 1
    kernel.body = body[:split] + prologue + body[split:]
    return module


def sub_grid_arguments(grid: tuple, first_block: int, end_block: int) -> tuple:
    """(grid of the sub-launch, the four extra argument values) for blocks [first, end)."""
    if not 0 <= first_block < end_block <= grid[0] * grid[1] * grid[2]:
        raise ValueError(f"block range [{first_block}, {end_block}) is outside grid {grid}")
    return (end_block - first_block, 1, 1), (first_block, grid[0], grid[1], grid[2])


def _rename(op, names: dict):
    """``op`` with register names looked up in ``names`` (inner scopes first)."""
    return _map_registers(op, lambda r: r if r.name not in names
                          else ir.Reg(names[r.name], r.component, r.negated))


def unique_scoped_registers(function: ir.Function) -> ir.Function:
    """A copy of ``function`` in which the registers declared inside nested ``{ }`` scopes
    have names of their own (``c`` -> ``c$3``). Inline PTX from the CUDA headers declares
    ``.reg .b16 c`` in one block and ``.reg .b32 c`` in the next: back-ends that keep one
    register per name must not merge them. Returns ``function`` itself when nothing nests."""
    if function.body is None or not any(isinstance(s, ir.Scope) for s in function.body):
        return function
    counter = [0]

    def walk(items, outer: dict, nested: bool):
        names = dict(outer)
        out = []
        if nested:
            counter[0] += 1
            for s in items:
                if isinstance(s, ir.RegDecl):
                    for n in s.names():
                        names[n] = f"{n}${counter[0]}"
        for s in items:
            if isinstance(s, ir.RegDecl) and nested:
                out += [ir.RegDecl(s.type, names[n], None, s.vector, line=s.line) for n in s.names()]
            elif isinstance(s, ir.Instruction):
                s = copy.copy(s)
                s.operands = tuple(_rename(o, names) for o in s.operands)
                if s.guard is not None:
                    s.guard = _rename(s.guard, names)
                out.append(s)
            elif isinstance(s, ir.Scope):
                out.append(ir.Scope(walk(s.body, names, True), line=s.line))
            else:
                out.append(s)
        return out

    result = copy.copy(function)
    result.body = walk(function.body, {}, False)
    return result
