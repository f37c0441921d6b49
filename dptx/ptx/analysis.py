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


def used_variables(module: ir.Module, kernel: ir.Function) -> set:
    """Names of the module variables a launch of ``kernel`` can touch: those the kernel and
    the functions it reaches name, and those their initializers point to (``.global .u64
    p = a``: through ``p``, ``a``). Modules built with CUDA's headers declare dozens the
    kernel never uses."""
    variables = {v.name: v for v in module.global_variables}
    names = set()
    for f in reachable_functions(module, kernel):
        if f.body is not None:
            names |= referenced_names(f)
    todo = [n for n in names if n in variables]
    used = set()
    while todo:
        name = todo.pop()
        if name in used:
            continue
        used.add(name)
        todo.extend(n for n in _initializer_names(variables[name].init) if n in variables)
    return used


def _initializer_names(init) -> list:
    if isinstance(init, ir.SymInit):
        return [init.name]
    if isinstance(init, tuple):
        return [n for item in init for n in _initializer_names(item)]
    return []


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


# ----------------------------------------------------------------------------------------------
# Where global writes go: what the distributed layer needs to merge chunk results
# (DESIGN.md point 6).
# ----------------------------------------------------------------------------------------------
UNKNOWN = "unknown"   # a pointer of unknown origin (loaded from memory, returned by a call)
SHARED = "shared"
LOCAL = "local"

# Atomic operations whose effects from several chunks combine exactly (or, for float add,
# within rounding) from their results alone.
REDUCIBLE_ATOMICS = frozenset({"add", "min", "max", "and", "or", "xor"})
_ATOMIC_OPS = ("add", "min", "max", "and", "or", "xor", "inc", "dec", "exch", "cas")
_PROPAGATING = frozenset({"mov", "add", "sub", "mad", "cvta", "cvt", "and", "or", "selp", "shl",
                          "mul", "xor", "not"})
_WIDE = frozenset({"u64", "b64", "s64"})


@dataclass(frozen=True)
class MergeFacts:
    """``mergeable``: chunks of a launch may run apart and their results be merged.
    ``reductions`` maps a target (``("param", index)`` or ``("var", name)``) to the single
    ``(op, type)`` of the reduction atomics applied to it; every other written target is merged
    by byte diffs. ``reason`` says why a kernel is not mergeable."""
    mergeable: bool
    reductions: dict
    reason: str = ""
    # Targets the kernel may write (plain stores or atomics); None when a store goes through a
    # pointer of unknown origin, so any buffer may change.
    written: object = None


def _atomic_op(inst: ir.Instruction):
    for m in inst.modifiers:
        if m in _ATOMIC_OPS:
            return m
    return None


def _value_type(inst: ir.Instruction) -> str:
    types = inst.types
    return types[-1] if types else "b32"


def pointer_provenance(module: ir.Module, function: ir.Function, strict: bool = False) -> dict:
    """Register -> set of origins: ``("param", i)``, ``("var", name)``, ``"shared"``,
    ``"local"`` or ``"unknown"``. A may-analysis iterated to a fixpoint (loops carry pointers).
    Values loaded from memory count as data, except 64-bit ones, which may be pointers.

    ``strict``: only operations that keep a pointer a pointer into the same buffer (mov, add,
    sub, the addend of mad, 64-bit cvt/cvta, selp) carry origins; products, quotients and
    shifts are data (an index scaled to bytes, even of an integer parameter PTX cannot tell
    from a pointer: ``A + (n + i) * 8``); any other operation on a pointer (and, truncation...)
    gives ``"unknown"``. A register whose strict origin is one parameter then holds that
    parameter plus an offset computed from data."""
    param_index = {p.name: i for i, p in enumerate(function.params)}
    variables = {v.name: v for v in module.global_variables}
    for v in function.local_variables:
        variables[v.name] = v

    def symbol_origin(name):
        v = variables.get(name)
        if v is None:
            return set()
        if v.space in ("global", "const"):
            return {("var", name)}
        if v.space == "shared":
            return {SHARED}
        if v.space == "local":
            return {LOCAL}
        return set()

    prov: dict = {}

    def origins(op):
        if isinstance(op, ir.Reg):
            return prov.get(op.name, set())
        if isinstance(op, ir.Sym):
            return symbol_origin(op.name)
        return set()

    changed = True
    insts = function.instructions
    while changed:
        changed = False
        for inst in insts:
            if not inst.operands or not isinstance(inst.operands[0], ir.Reg):
                continue
            dest = inst.operands[0].name
            new = set()
            if inst.opcode in ("ld", "ldu"):
                addr = inst.operands[1] if len(inst.operands) > 1 else None
                if "param" in inst.modifiers and isinstance(addr, ir.Addr) and \
                        isinstance(addr.base, ir.Sym) and addr.base.name in param_index:
                    param = function.params[param_index[addr.base.name]]
                    new = {("param", param_index[addr.base.name])}
                    if param.size > 8:
                        # a field of a struct by value: a pointer there (Warp's arrays,
                        # struct { float* p; }) may point anywhere, as one loaded from memory
                        new = {UNKNOWN} if set(inst.types) & _WIDE else set()
                    elif strict and not (addr.offset == 0 and set(inst.types) & _WIDE and
                                       function.params[param_index[addr.base.name]].size == 8):
                        # a field of a struct, or part of a value: not the parameter itself
                        new = {UNKNOWN} if set(inst.types) & _WIDE else set()
                elif set(inst.types) & _WIDE:
                    new = {UNKNOWN}
            elif strict and inst.opcode in _PROPAGATING:
                new = _strict_origins(inst, origins)
            elif inst.opcode in _PROPAGATING:
                for src in inst.operands[1:]:
                    new |= origins(src)
            elif inst.opcode == "atom" and set(inst.types) & _WIDE:
                new = {UNKNOWN}
            if new - prov.get(dest, set()):
                prov[dest] = prov.get(dest, set()) | new
                changed = True
    return prov


_PRESERVING = frozenset({"mov", "add", "sub", "cvta", "selp"})
# Their results are data, not pointers: an index scaled to bytes (``shl``, ``mul``), divided
# or reduced. A register holding a buffer's parameter plus such a value still holds that
# parameter plus data, which the strict reading promises; where the parameter was an integer
# that PTX cannot tell from a pointer (``long long n``), the offset ``(n + i) * 8`` made every
# access through ``A + (n + i) * 8`` one of unknown buffer, run lane by lane by the warp form
# (20 ns per element instead of 0.4). An access is checked against the window of the one
# origin at run time anyway; a wrong guess only costs the fast path.
_SCALING = frozenset({"shl", "shr", "mul", "mul24", "div", "rem"})


def _strict_origins(inst, origins) -> set:
    sources = inst.operands[1:]
    if inst.opcode == "selp":
        sources = sources[:2]          # the predicate is not part of the value
    if inst.opcode == "mad":
        # (the product is data, see _SCALING)
        return set(origins(sources[2])) if len(sources) > 2 else set()
    if inst.opcode in _SCALING:
        return set()
    found = set()
    for src in sources:
        found |= origins(src)
    if not found:
        return found
    keeps = inst.opcode in _PRESERVING or (inst.opcode == "cvt" and inst.types and
                                           inst.types[0] in _WIDE)
    return found if keeps else {UNKNOWN}


def _address_origins(inst, prov, module, function):
    addr = next((o for o in inst.operands if isinstance(o, ir.Addr)), None)
    if addr is None:
        return {UNKNOWN}
    if isinstance(addr.base, ir.Sym):
        name = addr.base.name
        for v in list(module.global_variables) + function.local_variables:
            if v.name == name:
                if v.space in ("global", "const"):
                    return {("var", name)}
                return {SHARED} if v.space == "shared" else {LOCAL}
        return {UNKNOWN}
    if isinstance(addr.base, ir.Reg):
        return prov.get(addr.base.name) or {UNKNOWN}
    return {UNKNOWN}


def _reads(function: ir.Function) -> set:
    names = set()

    def visit(op):
        if isinstance(op, ir.Reg):
            names.add(op.name)
        elif isinstance(op, ir.Addr) and isinstance(op.base, ir.Reg):
            names.add(op.base.name)
        elif isinstance(op, (ir.Vec, ir.ParamList, ir.AddrList)):
            for item in op.items:
                if item is not None:
                    visit(item)
    for inst in function.instructions:
        for op in inst.sources:
            visit(op)
        if inst.guard is not None:
            names.add(inst.guard.name)
        for op in inst.destinations:  # addresses of stores read their base register
            if isinstance(op, ir.Addr) or inst.reads_destinations:
                visit(op)
    return names


def merge_facts(module: ir.Module, kernel: ir.Function) -> MergeFacts:
    """Whether chunks of ``kernel`` can run apart and be merged, and how."""
    def no(reason):
        return MergeFacts(False, {}, reason, None)

    callee_stores = False  # a device function storing through a pointer it was given
    for f in reachable_functions(module, kernel):
        if f is kernel or f.body is None:
            continue
        for inst in f.instructions:
            if inst.opcode in ("atom", "red") and "shared" not in inst.modifiers:
                return no(f"device function {f.name} performs a global atomic (line {inst.line})")
            if inst.opcode == "st" and not any(s in inst.modifiers for s in ("shared", "local", "param")):
                callee_stores = True
    prov = pointer_provenance(module, kernel)
    reads = _reads(kernel)
    reductions: dict = {}
    stores: set = set()
    for inst in kernel.instructions:
        mods = inst.modifiers
        if inst.opcode in ("ld", "ldu") and ("volatile" in mods or "acquire" in mods) and \
                "shared" not in mods and "local" not in mods and "param" not in mods:
            return no(f"line {inst.line}: {inst.full_opcode} reads memory other blocks may write")
        if inst.opcode in ("membar", "fence") and any(m in mods for m in ("gl", "sys", "gpu")):
            return no(f"line {inst.line}: {inst.full_opcode} orders memory between blocks")
        if inst.opcode == "st":
            if not any(s in mods for s in ("shared", "local", "param")):
                stores |= _address_origins(inst, prov, module, kernel) - {SHARED, LOCAL}
            continue
        if inst.opcode not in ("atom", "red") or "shared" in mods:
            continue
        targets = _address_origins(inst, prov, module, kernel) - {SHARED, LOCAL}
        if not targets:
            continue
        if UNKNOWN in targets:
            return no(f"line {inst.line}: {inst.full_opcode} on an address of unknown origin")
        op = _atomic_op(inst)
        if inst.opcode == "atom" and isinstance(inst.operands[0], ir.Reg) and \
                inst.operands[0].name in reads:
            return no(f"line {inst.line}: the value returned by {inst.full_opcode} is used")
        vtype = _value_type(inst)
        if op in ("inc", "dec"):
            limit = inst.operands[-1]
            if not (isinstance(limit, ir.Imm) and limit.kind == "int"
                    and limit.value & 0xFFFFFFFF == 0xFFFFFFFF):  # -1 or 0xffffffff
                return no(f"line {inst.line}: {inst.full_opcode} wraps at a bound")
            # With bound 2^32-1, inc/dec add +-1 modulo 2^32: merged as the sum of deltas.
            op = "add"
            vtype = "u32"
        if op not in REDUCIBLE_ATOMICS:
            return no(f"line {inst.line}: {inst.full_opcode} cannot be merged across chunks")
        for t in targets:
            previous = reductions.setdefault(t, (op, vtype))
            if previous != (op, vtype):
                return no(f"line {inst.line}: {t} receives different atomic operations")
    mixed = stores & set(reductions)
    if mixed:
        return no(f"{sorted(mixed, key=str)[0]} receives both plain stores and atomics")
    written = None if UNKNOWN in stores or callee_stores else frozenset(stores | set(reductions))
    return MergeFacts(True, reductions, "", written)
