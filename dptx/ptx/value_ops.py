"""Instruction semantics for the value graph (``value_graph.py``): what each modelled
instruction makes of its operands' nodes. An instruction not listed, or a form not handled
(floating point, carries, saturation...), gives unknown values (``Builder.opaque_results``).

Each function takes the Builder ``b``, the instruction index ``i`` and its block, the
instruction, the register environment and its destination registers, and returns
[(register, node)] or None (not modelled).
"""
from __future__ import annotations

from . import ir
from .value_nodes import (ABS, AND, ANY, CMP, CONST, DIV, EXT, INT_TYPES, MAX, MIN, MULHI,
                          MULWIDE, NEG, NOT, OR, PAND, POR, PREDICATES, PTR, PUNKNOWN, REM,
                          SCALAR, SETP, SHL, SHR, UNKNOWN_ORIGIN, UNSIGNED_CMP, XOR, type_bits)


def _int_type(inst):
    """(width, signed) of an integer instruction type, or None for other types."""
    types = [t for t in inst.types if t in INT_TYPES]
    if not types or len(types) != len(inst.types):
        return None
    t = types[-1]
    return type_bits(t), t.startswith("s")


def opaque(b, i, block, inst, env, dests):
    return None


def _mov(b, i, block, inst, env, dests):
    src = inst.operands[1]
    dst = inst.operands[0]
    if isinstance(dst, ir.Vec):                  # unpack: mov.b64 {lo, hi}, x
        width = 64 if "b64" in inst.types else 32
        whole = b.as_int(b.read(src, env, width), width)
        part = width // len(dst.items)
        out = []
        for k, item in enumerate(dst.items):
            if isinstance(item, ir.Reg):       # (the low part is the value modulo 2**part)
                shifted = whole if k == 0 else b.g.op(SHR, (whole, b.g.const(k * part, 32)),
                                                       width, attrs=False)
                out.append((item.name, shifted))
        return out
    if isinstance(src, ir.Vec):                  # pack: mov.b64 x, {lo, hi}
        width = b.reg_width(dst.name)
        part = width // len(src.items)
        total = b.g.const(0, width)
        for k, item in enumerate(src.items):
            piece = b.as_int(b.read(item, env), part)
            piece = b.g.op(EXT, (piece,), width, attrs=(False, part))
            if k:
                piece = b.g.mul(piece, b.g.const(1 << (k * part), width), width)
            total = b.g.add(total, piece, width)
        return [(dst.name, total)]
    if b.is_pred_reg(dst.name):
        v = b.read(src, env)
        return [(dst.name, v if v.op in PREDICATES else b.g.node(PUNKNOWN, width=1))]
    width = b.reg_width(dst.name)
    v = b.read(src, env, width)
    if v.op in PREDICATES:
        return None
    if v.op != PTR and v.op != CONST and v.width != width:
        v = b.as_int(v, width) if v.width < width else v
    return [(dst.name, v)]


# modifiers that change an integer result beyond what the semantics below model
_UNMODELLED = ("cc", "sat", "relu")


def _arith(b, i, block, inst, env, dests):
    info = _int_type(inst)
    if info is None or any(m in inst.modifiers for m in _UNMODELLED):
        return None
    width, signed = info
    g = b.g
    ops = [b.read(o, env, width) for o in inst.operands[1:]]
    op = inst.opcode
    if op == "add":
        return [(dests[0], b.add(ops[0], ops[1], width))]
    if op == "sub":
        return [(dests[0], b.sub(ops[0], ops[1], width))]
    if op in ("mul", "mad"):
        if "wide" in inst.modifiers:
            x, y = (b.as_int(o, width) for o in ops[:2])
            prod = g.op(MULWIDE, (x, y), 2 * width, attrs=(signed, width))
            out_width = 2 * width
        elif "hi" in inst.modifiers:
            x, y = (b.as_int(o, width) for o in ops[:2])
            prod = g.op(MULHI, (x, y), width, attrs=(signed, width))
            out_width = width
        else:
            prod = g.mul(b.as_int(ops[0], width), b.as_int(ops[1], width), width)
            out_width = width
        if op == "mad":
            return [(dests[0], b.add(prod, b.read(inst.operands[3], env, out_width), out_width))]
        return [(dests[0], prod)]
    return None


def _unary(b, i, block, inst, env, dests):
    if inst.types and inst.types[-1] == "pred":
        if inst.opcode == "not":
            return [(dests[0], b.pnot(b.read(inst.operands[1], env)))]
        return None
    info = _int_type(inst)
    if info is None:
        return None
    width, signed = info
    x = b.as_int(b.read(inst.operands[1], env, width), width)
    kind = {"neg": NEG, "not": NOT, "abs": ABS}[inst.opcode]
    return [(dests[0], b.g.op(kind, (x,), width))]


def _binary(b, i, block, inst, env, dests):
    op = inst.opcode
    if inst.types and inst.types[-1] == "pred":
        if op in ("and", "or"):
            p, q = (b.read(o, env) for o in inst.operands[1:3])
            if p.op not in PREDICATES or q.op not in PREDICATES:
                return None
            return [(dests[0], b.g.node(PAND if op == "and" else POR, (p, q), width=1))]
        return None
    info = _int_type(inst)
    if info is None or any(m in inst.modifiers for m in _UNMODELLED):
        return None
    width, signed = info
    g = b.g
    x = b.as_int(b.read(inst.operands[1], env, width), width)
    if op in ("shl", "shr"):
        y = b.as_int(b.read(inst.operands[2], env, 32), 32)     # the amount is a u32
        if op == "shl":
            return [(dests[0], g.op(SHL, (x, y), width))]
        return [(dests[0], g.op(SHR, (x, y), width, attrs=signed))]
    y = b.as_int(b.read(inst.operands[2], env, width), width)
    kind = {"min": MIN, "max": MAX, "div": DIV, "rem": REM, "and": AND, "or": OR,
            "xor": XOR}[op]
    attrs = signed if kind in (MIN, MAX, DIV, REM) else None
    return [(dests[0], g.op(kind, (x, y), width, attrs=attrs))]


def _bits_count(b, i, block, inst, env, dests):
    info = _int_type(inst)
    if info is None:
        return None
    width = info[0]
    lo, hi = (-1, width - 1) if inst.opcode == "bfind" else (0, width)
    return [(dests[0], b.value_range(lo, hi, 32, i, block))]


def _bfe(b, i, block, inst, env, dests):
    info = _int_type(inst)
    length = inst.operands[3]
    if info is None or not isinstance(length, ir.Imm) or length.kind != "int":
        return None
    width, signed = info
    n = min(length.value & 0xFF, width)
    if n == 0:
        return [(dests[0], b.g.const(0, width))]
    lo, hi = (-(1 << (n - 1)), (1 << (n - 1)) - 1) if signed else (0, (1 << n) - 1)
    return [(dests[0], b.value_range(lo, hi, width, i, block))]


def _selp(b, i, block, inst, env, dests):
    if inst.types and inst.types[-1] not in INT_TYPES:
        return None
    x, y = (b.read(o, env, b.reg_width(dests[0])) for o in inst.operands[1:3])
    if x is y:
        return [(dests[0], x)]
    if x.op in PREDICATES or y.op in PREDICATES:
        return None
    # the selected value changes when the predicate does, even if both choices do not
    p = b.read(inst.operands[3], env)
    if x.op == PTR or y.op == PTR:
        x, y = b.as_pointer(x), b.as_pointer(y)
    else:
        width = b.reg_width(dests[0])
        x, y = b.as_int(x, width), b.as_int(y, width)
    return [(dests[0], b.join([x, y], ("selp", p.id, x.id, y.id), p.loops))]


def _cvt(b, i, block, inst, env, dests):
    types = inst.types
    if len(types) != 2 or types[0] not in INT_TYPES or types[1] not in INT_TYPES:
        return None
    if any(m in inst.modifiers for m in ("sat",)):
        return None
    dst_w, src_w = type_bits(types[0]), type_bits(types[1])
    v = b.read(inst.operands[1], env, src_w)
    if v.op == PTR:
        return [(dests[0], v)] if dst_w == 64 and src_w == 64 else None
    x = b.as_int(v, src_w) if v.width < src_w else v
    if dst_w <= src_w:
        # truncation: the same value modulo 2**dst_w (of an extension: the value extended)
        while x.op == EXT and dst_w <= x.attrs[1]:
            x = x.args[0]
        return [(dests[0], x)]
    signed = types[1].startswith("s")
    return [(dests[0], b.g.op(EXT, (x,), dst_w, attrs=(signed, src_w)))]


def _cvta(b, i, block, inst, env, dests):
    v = b.read(inst.operands[1], env)
    mods = inst.modifiers
    for space in ("shared", "local", "param"):
        if any(m.split("::")[0] == space for m in mods):
            key = "paramspace" if space == "param" else space
            return [(dests[0], b.g.node(PTR, (b.g.const(0),), attrs=(key,)))]
    if v.op == PTR:
        return [(dests[0], v)]
    return [(dests[0], b.as_pointer(v))]


def _setp(b, i, block, inst, env, dests):
    g = b.g
    cmp = next((m for m in inst.modifiers if m in CMP), None)
    combine = next((m for m in inst.modifiers if m in ("and", "or", "xor")), None)
    t = inst.types[-1] if inst.types else None
    ops = inst.operands[1:]
    base = None
    if cmp is not None and t in INT_TYPES:
        width = type_bits(t)
        signed = t.startswith("s") and cmp not in UNSIGNED_CMP
        x, y = (b.read(o, env, width) for o in ops[:2])
        if x.op == PTR and y.op == PTR and len(x.attrs) == 1 and x.attrs == y.attrs \
                and x.attrs[0] != UNKNOWN_ORIGIN and width == 64:
            # two pointers into one buffer compare as their offsets (addresses are taken
            # not to wrap around 0 or 2**64 between them)
            x, y, signed = x.args[0], y.args[0], True
        x, y = b.as_int(x, width), b.as_int(y, width)
        base = g.node(SETP, (x, y), attrs=(CMP[cmp], signed, width), width=1)
    if base is None:
        base = g.node(PUNKNOWN, width=1, site=(i,), loops=b.block_loops.get(block, frozenset()))
    first, second = base, b.pnot(base)
    if combine is not None and len(ops) > 2:
        c = b.read(ops[2], env)
        kind = {"and": PAND, "or": POR}.get(combine)
        if kind is None or c.op not in PREDICATES:
            first = second = g.node(PUNKNOWN, width=1, site=(i, "c"))
        else:
            first = g.node(kind, (first, c), width=1)
            second = g.node(kind, (second, c), width=1)
    out = [(dests[0], first)]
    if len(dests) > 1:
        out.append((dests[1], second))
    return out


def _loaded(b, i, block, inst, env, dests):
    """Values read from memory: data, only bounded by their type when it is narrower than
    the register (ld.u8 into a .b64 register is in [0, 255]); a 64-bit integer may be a
    pointer (tainted)."""
    t = inst.types[-1] if inst.types else None
    if t is None:
        return None
    bits = type_bits(t)
    loops = b.block_loops.get(block, frozenset())
    out = []
    for k, name in enumerate(dests):
        width = b.reg_width(name)
        if b.is_pred_reg(name):
            out.append((name, b.g.node(PUNKNOWN, width=1, site=(i, k), loops=loops)))
        elif t in INT_TYPES and bits < width:
            lo, hi = ((-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if t.startswith("s")
                      else (0, (1 << bits) - 1))
            out.append((name, b.value_range(lo, hi, width, i, block, k)))
        else:
            taint = frozenset({ANY}) if bits == 64 and t in INT_TYPES else frozenset()
            out.append((name, b.g.unknown(width, taint=taint, loops=loops, site=(i, k))))
    return out


def _ld(b, i, block, inst, env, dests):
    """Loads of kernel parameters are launch values; other loads give data."""
    if "param" not in inst.modifiers or b.function.kind != "entry":
        return _loaded(b, i, block, inst, env, dests)
    addr = inst.operands[1]
    if not (isinstance(addr, ir.Addr) and isinstance(addr.base, ir.Sym)
            and addr.base.name in b.param_index):
        return _loaded(b, i, block, inst, env, dests)
    index = b.param_index[addr.base.name]
    param = b.function.params[index]
    t = inst.types[-1]
    if t not in INT_TYPES:
        return None
    size = ir.TYPE_SIZES[t]
    g = b.g
    out = []
    for k, name in enumerate(dests):
        offset = addr.offset + k * size
        width = b.reg_width(name)
        if size == 8 and offset == 0 and param.size == 8 and len(dests) == 1:
            # a 64-bit parameter: a buffer's address, unless the launch passes a number
            out.append((name, g.node(PTR, (g.const(0),), attrs=(("param", index),))))
            continue
        taint = frozenset({ANY}) if size == 8 else frozenset()
        out.append((name, g.node(SCALAR, attrs=(index, offset, size, t.startswith("s")),
                                 width=max(width, size * 8), taint=taint)))
    return out


SEMANTICS = {
    "mov": _mov, "add": _arith, "sub": _arith, "mul": _arith, "mad": _arith,
    "neg": _unary, "not": _unary, "abs": _unary,
    "shl": _binary, "shr": _binary, "min": _binary, "max": _binary, "div": _binary,
    "rem": _binary, "and": _binary, "or": _binary, "xor": _binary,
    "popc": _bits_count, "clz": _bits_count, "bfind": _bits_count, "bfe": _bfe,
    "selp": _selp, "cvt": _cvt, "cvta": _cvta, "setp": _setp, "ld": _ld, "ldu": _loaded,
    "atom": _loaded,
}
