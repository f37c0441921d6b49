"""Rules of the PTX ISA that a parsed module must keep, checked once after parsing, as ptxas
checks them (an illegal program is refused before anything runs, whichever back-end runs it):

- no store, atomic or reduction writes the constant state space ("Stores to const memory
  are illegal"; ``atom``/``red`` take .global and .shared only), whether named by the
  instruction's state space or by the ``.const`` variable its address is;
- kernel parameters are read-only: ``st.param`` (``.param::func``) writes the parameters of
  a call a function makes, never a kernel's own;
- a parameter named in an address (``ld.param.u64 %rd, [p+8]``) is accessed inside its
  declared size, so no access reaches past the parameter buffer.

- every label a ``bra`` names is defined once in its function;
- every symbol a variable's initializer names (``p = x``, ``generic(x)+4``) is declared: a
  variable or function of the module, or a variable of the same body;
- the resources a module declares stay within a GPU's limits, checked before anything is
  allocated: registers per function (a virtual-register count, generous: ptxas allocates
  the physical ones), local memory per thread (512 KiB), static shared memory per kernel
  (48 KiB, as ptxas), constant data per module (64 KiB) and a module variable (4 GiB).

Errors are ``PtxSyntaxError`` with the line and column of the instruction or declaration.
"""
from __future__ import annotations

from ..errors import PtxSyntaxError
from . import ir

_WRITES = ("st", "atom", "red")
# Operand counts of the instructions whose forms all take a fixed number (destination
# included), with the operands' roles for the message. Wrong counts are malformed PTX that
# ptxas refuses; caught here, they cannot reach a back-end's lowering.
_OPERANDS = {}
for _names, _counts, _roles in (
        (("add", "sub", "mul", "div", "rem", "and", "or", "xor", "shl", "shr", "copysign",
          "mul24"), (3,), "d, a, b"),
        (("mad", "fma", "selp", "slct", "mad24", "bfe", "sad"), (4,), "d, a, b, c"),
        (("bfi",), (5,), "f, a, b, c, d"),
        (("mov", "neg", "not", "cnot", "abs", "popc", "clz", "brev", "sqrt", "rsqrt", "rcp",
          "sin", "cos", "lg2", "ex2", "cvta", "bfind", "isspacep"), (2,), "d, a"),
        (("min", "max"), (3, 4), "d, a, b[, c]"),
        (("cvt",), (2, 3, 4), "d, a[, b[, c]]"),
        (("setp",), (3, 4), "p[|q], a, b[, c]"),
        (("ld", "ldu", "st"), (2, 3), "the address and a value[, a cache policy]")):
    for _name in _names:
        _OPERANDS[_name] = (_counts, _roles)
MAX_REGISTERS = 1 << 18             # virtual registers declared per function
MAX_LOCAL = 512 * 1024              # bytes of local memory per thread (CUDA's limit)
MAX_STATIC_SHARED = 48 * 1024       # static shared memory of a kernel (ptxas's limit)
MAX_CONST = 64 * 1024               # constant bank of a module
MAX_VARIABLE = 1 << 32              # one module variable


def validate(module: ir.Module, text: str = "") -> None:
    """Raise PtxSyntaxError for the first statement that breaks a rule above."""
    lines = text.splitlines()

    def fail(problem, line, column=1, found=""):
        src = lines[line - 1] if 0 < line <= len(lines) else ""
        raise PtxSyntaxError(problem, line, column or 1, found, source_line=src)

    # The names an initializer may take the address of: the module's variables and functions
    # (and .alias names), and in a function body also that body's own variables. Whether a
    # back-end can place the one named (an .extern without definition, a .shared variable)
    # is the back-end's to say; a name declared nowhere is an error of the PTX.
    module_names = {i.name for i in module.items if isinstance(i, (ir.Variable, ir.Function))}
    module_names.update(n for a in module.aliases for n in a[1:])
    scopes = {id(v): module_names for v in module.items if isinstance(v, ir.Variable)}
    for f in module.functions:
        if f.body is not None:
            local = module_names | {v.name for v in f.local_variables}
            scopes.update((id(v), local) for v in f.local_variables)
    const_bytes = 0
    for v in module.global_variables:
        size = v.size or 0
        if v.space == "const":
            const_bytes += size
            if const_bytes > MAX_CONST:
                fail(f".const data of the module reaches {const_bytes} bytes; a GPU's "
                     f"constant bank holds {MAX_CONST}", v.line, 1, v.name)
        limit = {"shared": MAX_STATIC_SHARED, "local": MAX_LOCAL}.get(v.space, MAX_VARIABLE)
        if size > limit:
            fail(f".{v.space} variable {v.name} has {size} bytes; at most {limit}", v.line, 1,
                 v.name)
        named = _addresses(v.init)
        unknown = [n for n in named if n not in scopes.get(id(v), module_names)]
        if unknown:
            fail(f"the initializer of {v.name} names {unknown[0]}, which is not declared: an "
                 f"initializer may hold the address of a module variable or function",
                 v.line, 1, unknown[0])
        if named and v.element_size != module.address_size // 8:
            fail(f"{v.name} is initialized with the address of {named[0]}, which needs "
                 f"{module.address_size}-bit elements (.u{module.address_size} or "
                 f".b{module.address_size}), not .{v.type}", v.line, 1, v.name)
    constants = {v.name for v in module.global_variables if v.space == "const"}
    for function in module.functions:
        if function.body is None:
            continue
        _resources(function, fail)
        labels = set()
        for s in function.statements():
            if isinstance(s, ir.Label):
                if s.name in labels:
                    fail(f"label {s.name} is defined twice in {function.name}", s.line, 1,
                         s.name)
                labels.add(s.name)
        params = {p.name: p for p in function.params}
        local_consts = constants | {v.name for v in function.local_variables
                                    if v.space == "const"}
        for inst in function.instructions:
            problem = _problem(inst, function, params, local_consts) or \
                _branch_problem(inst, labels)
            if problem:
                fail(problem, inst.line, inst.column, inst.full_opcode)


def _addresses(init) -> list:
    """The symbols whose addresses an initializer holds."""
    if isinstance(init, ir.SymInit):
        return [init.name]
    if isinstance(init, tuple):
        return [n for item in init for n in _addresses(item)]
    return []


def _resources(function: ir.Function, fail) -> None:
    registers = 0
    for s in function.statements():
        if isinstance(s, ir.RegDecl):
            registers += s.count or 1
            if registers > MAX_REGISTERS:
                fail(f"{function.name} declares more than {MAX_REGISTERS} registers", s.line,
                     1, s.name)
    for v in function.local_variables:
        limit = {"shared": MAX_STATIC_SHARED, "local": MAX_LOCAL}.get(v.space, MAX_VARIABLE)
        if (v.size or 0) > limit:
            fail(f".{v.space} variable {v.name} has {v.size} bytes; at most {limit}", v.line,
                 1, v.name)


def _branch_problem(inst: ir.Instruction, labels: set):
    if inst.opcode != "bra":
        return None
    if len(inst.operands) != 1:
        return f"bra takes one label, found {len(inst.operands)} operands"
    target = inst.operands[0]
    if not isinstance(target, ir.Sym):
        return "bra takes a label (brx.idx branches through a register)"
    if target.name not in labels:
        return f"bra to {target.name}, which is not a label of this function"
    return None


# Instructions defined on integer and bit-size types only (.b/.u/.s, and .pred for the logic
# ones): a float type there is not a form of them.
_INTEGER_ONLY = frozenset({"shl", "shr", "and", "or", "xor", "not", "cnot", "popc", "clz",
                           "brev", "bfe", "bfi", "bfind", "rem", "prmt", "mul24", "mad24",
                           "sad", "shf"})


def _space(inst: ir.Instruction) -> str:
    for m in inst.modifiers:
        base = m.split("::")[0]
        if base in ("global", "shared", "local", "param", "const"):
            return base
    return "generic"


def _problem(inst: ir.Instruction, function: ir.Function, params: dict, constants: set):
    if inst.opcode in _INTEGER_ONLY and any(t[0] in "fe" or t.startswith("bf")
                                            for t in inst.types):
        return (f"{inst.full_opcode}: {inst.opcode} takes integer or bit types, not "
                f".{next(t for t in inst.types if t[0] in 'fe' or t.startswith('bf'))}")
    form = _OPERANDS.get(inst.opcode)
    if form is not None and len(inst.operands) not in form[0]:
        counts = " or ".join(str(c) for c in form[0])
        return (f"{inst.opcode} takes {counts} operands ({form[1]}), found "
                f"{len(inst.operands)}")
    space = _space(inst)
    writes = inst.opcode in _WRITES
    addr = next((o for o in inst.operands if isinstance(o, ir.Addr)), None)
    base = addr.base.name if addr is not None and isinstance(addr.base, ir.Sym) else None
    if writes and space == "const":
        return (f"{inst.opcode}.const writes the constant state space, which is read-only "
                f"(stores to const memory are illegal)")
    if writes and base in constants:
        return (f"{inst.opcode} writes .const variable {base}, which is read-only (stores to "
                f"const memory are illegal)")
    if space == "param" and inst.opcode == "st" and function.is_kernel and addr is not None \
            and isinstance(addr.base, ir.Reg):
        return ("st.param through a register writes the kernel's parameter space; a kernel's "
                "parameters are read-only")
    if space != "param" or base is None or base not in params:
        return None
    if inst.opcode == "st" and function.is_kernel:
        return (f"st.param writes kernel parameter {base}; a kernel's parameters are "
                f"read-only (st.param is .param::func: the arguments of a call)")
    size = _access_size(inst)
    param = params[base]
    if size is not None and not 0 <= addr.offset <= param.size - size:
        return (f"{inst.opcode}.param accesses bytes [{addr.offset}, {addr.offset + size}) of "
                f"parameter {base}, which has {param.size} bytes")
    return None


def _access_size(inst: ir.Instruction):
    width = 1
    for m in inst.modifiers:
        if m in ("v2", "v4", "v8"):
            width = int(m[1:])
    types = inst.types
    if not types or types[-1] not in ir.TYPE_SIZES:
        return None         # an instruction without a type: its lowering says so
    return ir.type_size(types[-1]) * width
