"""Rules of the PTX ISA that a parsed module must keep, checked once after parsing, as ptxas
checks them (an illegal program is refused before anything runs, whichever back-end runs it):

- no store, atomic or reduction writes the constant state space ("Stores to const memory
  are illegal"; ``atom``/``red`` take .global and .shared only), whether named by the
  instruction's state space or by the ``.const`` variable its address is;
- kernel parameters are read-only: ``st.param`` (``.param::func``) writes the parameters of
  a call a function makes, never a kernel's own;
- a parameter named in an address (``ld.param.u64 %rd, [p+8]``) is accessed inside its
  declared size, so no access reaches past the parameter buffer.

Errors are ``PtxSyntaxError`` with the line and column of the instruction.
"""
from __future__ import annotations

from ..errors import PtxSyntaxError
from . import ir

_WRITES = ("st", "atom", "red")


def validate(module: ir.Module, text: str = "") -> None:
    """Raise PtxSyntaxError for the first instruction that breaks a rule above."""
    lines = text.splitlines()
    constants = {v.name for v in module.global_variables if v.space == "const"}
    for function in module.functions:
        if function.body is None:
            continue
        params = {p.name: p for p in function.params}
        local_consts = constants | {v.name for v in function.local_variables
                                    if v.space == "const"}
        for inst in function.instructions:
            problem = _problem(inst, function, params, local_consts)
            if problem:
                src = lines[inst.line - 1] if 0 < inst.line <= len(lines) else ""
                raise PtxSyntaxError(problem, inst.line, inst.column or 1,
                                     inst.full_opcode, source_line=src)


def _space(inst: ir.Instruction):
    for m in inst.modifiers:
        base = m.split("::")[0]
        if base in ("global", "shared", "local", "param", "const"):
            return base, m
    return "generic", None


def _problem(inst: ir.Instruction, function: ir.Function, params: dict, constants: set):
    space, modifier = _space(inst)
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
