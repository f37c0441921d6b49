"""PTX front-end: lexer, parser, IR, printer and control-flow analyses. Knows nothing of
execution or of Dask."""
from . import ir
from .ir import (Addr, AddrList, CallPrototype, Directive, Function, Imm, Instruction, Label,
                 Module, Pair, Param, ParamList, Reg, RegDecl, Scope, Sym, SymInit, TargetTable,
                 Variable, Vec)
from .parser import parse
from .printer import format_instruction, print_module

__all__ = [
    "ir", "parse", "print_module", "format_instruction", "Module", "Function", "Instruction",
    "Param", "Variable", "RegDecl", "Label", "Scope", "Directive", "TargetTable",
    "CallPrototype", "Reg", "Imm", "Sym", "SymInit", "Addr", "AddrList", "Vec", "Pair",
    "ParamList",
]
