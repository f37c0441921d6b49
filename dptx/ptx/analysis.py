"""Static facts about kernels: what a kernel (with every function it calls) uses.

The distributed layer and the scheduler read these facts: barriers and warp operations
decide the CPU thread model, atomics decide how chunk results merge, shared memory sizes
bound occupancy.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import ir
from .cfg import sync_kind

ATOMIC_OPCODES = frozenset({"atom", "red"})


def _operand_names(op, out: set) -> None:
    if isinstance(op, ir.Sym):
        out.add(op.name)
    elif isinstance(op, ir.Addr):
        if isinstance(op.base, ir.Sym):
            out.add(op.base.name)
    elif isinstance(op, (ir.Vec, ir.ParamList, ir.AddrList)):
        for item in op.items:
            if item is not None:
                _operand_names(item, out)


def referenced_names(function: ir.Function) -> set:
    names: set = set()
    for inst in function.instructions:
        for op in inst.operands:
            _operand_names(op, names)
    return names


def callees(module: ir.Module, function: ir.Function) -> list:
    """Functions ``function`` may call: direct calls, plus any function whose address it
    takes (indirect calls through a register can reach those) and ``.calltargets`` lists."""
    defined = {f.name for f in module.functions}
    names = referenced_names(function)
    for s in function.statements():
        if isinstance(s, ir.TargetTable) and s.kind == "calltargets":
            names.update(s.targets)
    return sorted(n for n in names if n in defined)


def reachable_functions(module: ir.Module, kernel: ir.Function) -> list:
    """The kernel and every function it can reach through calls, each once."""
    seen, order, stack = set(), [], [kernel.name]
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        f = module.function(name)
        order.append(f)
        if f.body is not None:
            stack.extend(callees(module, f))
    return order


@dataclass(frozen=True)
class KernelFacts:
    static_shared_bytes: int
    local_bytes: int
    reqntid: tuple
    maxntid: tuple
    uses_barriers: bool
    uses_warp_ops: bool
    uses_atomics: bool
    uses_calls: bool
    uses_local_memory: bool
    uses_printf: bool
    uses_dynamic_shared: bool
    recursive: bool


def kernel_facts(module: ir.Module, kernel: ir.Function) -> KernelFacts:
    functions = reachable_functions(module, kernel)
    module_vars = {v.name: v for v in module.global_variables}
    barriers = warp = atomics = calls = local = printf = dynamic = False
    shared_names, local_bytes = set(), 0
    for f in functions:
        if f.body is None:
            printf |= f.name == "vprintf"
            continue
        for inst in f.instructions:
            kind = sync_kind(inst)
            barriers |= kind == "cta"
            warp |= kind == "warp"
            atomics |= inst.opcode in ATOMIC_OPCODES
            calls |= inst.opcode == "call"
            local |= "local" in inst.modifiers
        for v in f.local_variables:
            if v.space == "local":
                local = True
                local_bytes += v.size or 0
            elif v.space == "shared":
                shared_names.add(("local", f.name, v.name, v.size or 0))
        for name in referenced_names(f):
            v = module_vars.get(name)
            if v is not None and v.space == "shared":
                if v.size is None:
                    dynamic = True
                else:
                    shared_names.add(("module", None, v.name, v.size))
    recursive = any(_calls_back(module, f) for f in functions if f.body is not None)
    perf = kernel.performance
    return KernelFacts(
        static_shared_bytes=sum(s[3] for s in shared_names), local_bytes=local_bytes,
        reqntid=perf.get("reqntid", ()), maxntid=perf.get("maxntid", ()),
        uses_barriers=barriers, uses_warp_ops=warp, uses_atomics=atomics, uses_calls=calls,
        uses_local_memory=local, uses_printf=printf, uses_dynamic_shared=dynamic,
        recursive=recursive)


def _calls_back(module: ir.Module, f: ir.Function) -> bool:
    """Whether ``f`` can reach itself through a chain of calls."""
    seen, stack = set(), list(callees(module, f))
    while stack:
        name = stack.pop()
        if name == f.name:
            return True
        if name in seen:
            continue
        seen.add(name)
        g = module.function(name)
        if g.body is not None:
            stack.extend(callees(module, g))
    return False
