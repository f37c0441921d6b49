"""IR -> PTX text. ``parse(print_module(m)) == m`` for every module the parser produces."""
from __future__ import annotations

from . import ir


def _init_text(init) -> str:
    if isinstance(init, tuple):
        return "{" + ", ".join(_init_text(i) for i in init) + "}"
    return str(init)


def _dims_text(dims) -> str:
    return "".join("[]" if d is None else f"[{d}]" for d in dims)


def format_variable(v: ir.Variable) -> str:
    parts = [f".{l}" for l in v.linkage] + [f".{v.space}"]
    parts += list(v.attributes)
    if v.align is not None:
        parts.append(f".align {v.align}")
    if v.vector:
        parts.append(f".v{v.vector}")
    parts.append(f".{v.type}")
    text = " ".join(parts) + f" {v.name}{_dims_text(v.dims)}"
    if v.init is not None:
        text += " = " + _init_text(v.init)
    return text + ";"


def format_param(p: ir.Param) -> str:
    parts = [f".{p.space}"]
    if p.align is not None:
        parts.append(f".align {p.align}")
    if p.vector:
        parts.append(f".v{p.vector}")
    parts.append(f".{p.type}")
    if p.ptr:
        parts.append(".ptr")
    if p.ptr_space:
        parts.append(f".{p.ptr_space}")
    if p.ptr_align is not None:
        parts.append(f".align {p.ptr_align}")
    return " ".join(parts) + f" {p.name}{_dims_text(p.dims)}"


def format_instruction(inst: ir.Instruction) -> str:
    return str(inst)


def _param_block(params, indent="\t") -> str:
    if not params:
        return "()"
    return "(\n" + ",\n".join(indent + format_param(p) for p in params) + "\n)"


def _statements(items, out: list, depth: int) -> None:
    pad = "\t" * depth
    for s in items:
        if isinstance(s, ir.Instruction):
            out.append(pad + format_instruction(s))
        elif isinstance(s, ir.Label):
            out.append(f"{s.name}:")
        elif isinstance(s, ir.RegDecl):
            vec = f" .v{s.vector}" if s.vector else ""
            count = f"<{s.count}>" if s.count is not None else ""
            out.append(f"{pad}.reg{vec} .{s.type} {s.name}{count};")
        elif isinstance(s, ir.Variable):
            out.append(pad + format_variable(s))
        elif isinstance(s, ir.TargetTable):
            out.append(f"{s.name}: .{s.kind} " + ", ".join(s.targets) + ";")
        elif isinstance(s, ir.CallPrototype):
            rets = "(" + ", ".join(format_param(p) for p in s.returns) + ") " if s.returns else ""
            params = "(" + ", ".join(format_param(p) for p in s.params) + ")"
            nr = " .noreturn" if s.noreturn else ""
            out.append(f"{s.name}: .callprototype {rets}_ {params}{nr};")
        elif isinstance(s, ir.Directive):
            out.append(pad + _directive_text(s))
        elif isinstance(s, ir.Scope):
            out.append(pad + "{")
            _statements(s.body, out, depth + 1)
            out.append(pad + "}")
        else:  # pragma: no cover - the parser makes nothing else
            raise TypeError(f"cannot print {s!r}")


def _directive_text(d: ir.Directive) -> str:
    # .loc and .file end at the end of their line; everything else ends with ';' or a block.
    head = d.text.split(" ", 1)[0]
    if head in (".loc", ".file", ".section"):
        return d.text
    return d.text + ";"


def format_function(f: ir.Function) -> str:
    head = " ".join([f".{l}" for l in f.linkage] + [f".{f.kind}"])
    if f.returns:
        head += " " + _param_block(f.returns)
    head += f" {f.name}"
    if f.params or f.kind == "entry" or f.returns:
        head += _param_block(f.params)
    for key, values in f.performance.items():
        head += f"\n.{key}" + (" " + ", ".join(str(v) for v in values) if values else "")
    for p in f.pragmas:
        head += f"\n{p};"
    if f.body is None:
        return head + ";"
    out = [head, "{"]
    _statements(f.body, out, 1)
    out.append("}")
    return "\n".join(out)


def print_module(m: ir.Module) -> str:
    out = []
    if m.version:
        out.append(f".version {m.version}")
    if m.target:
        out.append(".target " + ", ".join(m.target))
    out.append(f".address_size {m.address_size}")
    out.append("")
    for item in m.items:
        if isinstance(item, ir.Function):
            out.append(format_function(item))
            out.append("")
        elif isinstance(item, ir.Variable):
            out.append(format_variable(item))
        elif isinstance(item, ir.Directive):
            out.append(_directive_text(item))
        elif isinstance(item, tuple) and item[0] == "alias":
            out.append(f".alias {item[1]}, {item[2]};")
        else:  # pragma: no cover
            raise TypeError(f"cannot print {item!r}")
    return "\n".join(out) + "\n"
