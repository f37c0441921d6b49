"""What a call does to memory, for the access-footprint analysis (``footprint.py``).

A device function is summarised once per module from pointer provenance
(``analysis.pointer_provenance``): for every global or generic access it makes (and for every
64-bit value it stores, which may be an address escaping), the set of origins the address
may come from: ``("arg", k)`` (its k-th parameter), ``("var", name)`` (a module variable) or
``UNKNOWN``. Calls inside it are followed through the values passed; recursion is not: a
function that reaches itself counts as touching unknown memory if any function it reaches
touches global memory at all.

At a call site in the kernel, ``arg`` origins become the values the kernel passed: the
buffers they point into are then whole for what the callee does with them. An access made
only from numbers the kernel passed (no pointer among its origins) has an unknown origin.
"""
from __future__ import annotations

from . import ir
from .analysis import LOCAL, SHARED, UNKNOWN, pointer_provenance, reachable_functions

READ, WRITE, ESCAPE = "r", "w", "escape"
STRING_FUNCTIONS = frozenset({"vprintf", "__assertfail", "__assert_fail"})
# instructions that take an address but touch no data
IGNORED_OPCODES = frozenset({"prefetch", "prefetchu", "applypriority", "createpolicy",
                             "isspacep", "cvta", "mov", "call"})
_SPACES = ("global", "const", "shared", "local", "param")


def access_space(inst) -> str:
    """The state space an instruction names (``generic`` when none)."""
    for m in inst.modifiers:
        base = m.split("::")[0]
        if base in _SPACES:
            return base
    return "generic"


def call_operands(inst):
    """(callee operand, argument operands) of a ``call``."""
    ops = [o for o in inst.operands if not isinstance(o, ir.ParamList)]
    lists = [o for o in inst.operands if isinstance(o, ir.ParamList)]
    args = lists[-1].items if lists and (len(lists) > 1 or not inst.destinations) else ()
    return (ops[0] if ops else None), args


def string_summary(nargs) -> dict:
    """printf and assert read the strings they are given."""
    return {READ: {frozenset({("arg", k)}) for k in range(nargs)}, WRITE: set(), ESCAPE: set()}


def summary(module, f, memo: dict, _stack=()) -> dict:
    """{"r": origin sets, "w": origin sets, "escape": origin sets} of a device function
    and everything it calls: one set of origins per access (see the module docstring).
    ``memo`` keeps the summaries made so far (function name -> summary)."""
    if f.name in memo:
        return memo[f.name]
    if f.name in _stack:
        return _recursive(module, f)
    prov = pointer_provenance(module, f)
    out = {READ: set(), WRITE: set(), ESCAPE: set()}
    slots: dict = {}                          # .param variable -> origins of what is stored

    def origins(op) -> frozenset:
        if isinstance(op, ir.Addr):
            if isinstance(op.base, ir.Reg):
                found = prov.get(op.base.name) or {UNKNOWN}
            elif isinstance(op.base, ir.Sym):
                found = _symbol_origin(module, f, op.base.name)
            else:
                found = {UNKNOWN}
        elif isinstance(op, ir.Reg):
            found = prov.get(op.name, set())
        else:
            found = set()
        return frozenset(("arg", o[1]) if isinstance(o, tuple) and o[0] == "param" else o
                         for o in found if o not in (SHARED, LOCAL))

    for inst in f.instructions:
        op, space = inst.opcode, access_space(inst)
        if op == "st" and space == "param" and isinstance(inst.operands[0], ir.Addr) \
                and isinstance(inst.operands[0].base, ir.Sym):
            for v in _values(inst.operands[1:]):
                slots.setdefault(inst.operands[0].base.name, set()).update(origins(v))
            continue
        if op == "call":
            _nested_call(module, inst, slots, out, memo, _stack + (f.name,))
            continue
        if is_async_copy(inst):
            _add(out[READ], origins(inst.operands[1]))
            continue
        if op == "cp" or space in ("shared", "local", "param"):
            if touches_memory(inst):
                out[READ].add(frozenset({UNKNOWN}))
                out[WRITE].add(frozenset({UNKNOWN}))
            continue
        if op in ("ld", "ldu"):
            _add(out[READ], origins(inst.operands[1]))
        elif op in ("st", "red"):
            _add(out[WRITE], origins(inst.operands[0]))
            if stores_64_bits(inst):
                for v in _values(inst.operands[1:]):
                    _add(out[ESCAPE], origins(v) - {UNKNOWN})
        elif op == "atom":
            o = origins(inst.operands[1])
            _add(out[READ], o)
            _add(out[WRITE], o)
        elif touches_memory(inst):
            out[READ].add(frozenset({UNKNOWN}))
            out[WRITE].add(frozenset({UNKNOWN}))
    memo[f.name] = out
    return out


def is_async_copy(inst) -> bool:
    """``cp.async.{ca,cg}.shared.global [dst], [src], size``: reads global memory at src."""
    mods = inst.modifiers
    return inst.opcode == "cp" and "async" in mods and "bulk" not in mods and \
        "shared" in mods and "global" in mods and len(inst.operands) >= 3


def touches_memory(inst) -> bool:
    """Whether an instruction with an address operand may reach global memory in a way
    not modelled (bulk copies, textures, matrix loads from global...)."""
    if inst.opcode in IGNORED_OPCODES or \
            not any(isinstance(o, (ir.Addr, ir.AddrList)) for o in inst.operands):
        return False
    named = {m.split("::")[0] for m in inst.modifiers} & set(_SPACES)
    return not named or bool(named & {"global", "const"})


def stores_64_bits(inst) -> bool:
    """Whether a store writes whole 64-bit values (only those can hold an address)."""
    types = inst.types
    return bool(types) and ir.TYPE_SIZES.get(types[-1], 0) >= 8


def _values(operands):
    for o in operands:
        for item in (o.items if isinstance(o, ir.Vec) else (o,)):
            if isinstance(item, ir.Reg):
                yield item


def _add(sets, origins):
    sets.add(origins if origins else frozenset({UNKNOWN}))


def _symbol_origin(module, f, name):
    for v in list(module.global_variables) + f.local_variables:
        if v.name == name:
            if v.space in ("global", "const"):
                return {("var", name)}
            return {SHARED} if v.space == "shared" else {LOCAL}
    return {UNKNOWN}


def _nested_call(module, inst, slots, out, memo, stack):
    callee, args = call_operands(inst)
    names = {g.name for g in module.functions}
    if not isinstance(callee, ir.Sym) or callee.name not in names:
        out[READ].add(frozenset({UNKNOWN}))
        out[WRITE].add(frozenset({UNKNOWN}))
        return
    g = module.function(callee.name)
    if g.body is None and g.name not in STRING_FUNCTIONS:
        out[READ].add(frozenset({UNKNOWN}))
        out[WRITE].add(frozenset({UNKNOWN}))
        return
    inner = string_summary(len(args)) if g.body is None else summary(module, g, memo, stack)
    for kind in (READ, WRITE, ESCAPE):
        for sources in inner[kind]:
            mapped = set()
            for o in sources:
                if isinstance(o, tuple) and o[0] == "arg":
                    name = args[o[1]].name if o[1] < len(args) and \
                        isinstance(args[o[1]], ir.Sym) else None
                    mapped |= slots.get(name, {UNKNOWN}) if name else {UNKNOWN}
                else:
                    mapped.add(o)
            out[kind].add(frozenset(mapped))


def _recursive(module, f) -> dict:
    """A function that reaches itself: touching unknown memory if anything it reaches
    touches global memory."""
    touches = False
    for g in reachable_functions(module, f):
        if g.body is None:
            touches |= g.name != "vprintf"
            continue
        for inst in g.instructions:
            if inst.opcode in ("ld", "ldu", "st", "atom", "red", "cp") and \
                    access_space(inst) not in ("shared", "local", "param"):
                touches = True
    found = {frozenset({UNKNOWN})} if touches else set()
    return {READ: set(found), WRITE: set(found), ESCAPE: set()}
