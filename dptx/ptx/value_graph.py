"""A symbolic value graph of a PTX function: every register use becomes an expression over
launch values, built once per kernel for the access-footprint analysis (``footprint.py``).

The function is put in SSA form on the fly: blocks are walked in reverse post-order (a
reducible CFG is required), a block's incoming value of a register is its single
predecessor's value or a ``hull`` of its predecessors' values, and a loop header gives every
register its loop defines a ``phi`` whose back-edge values are filled in after the body.
Expressions are hash-consed, so one value computed twice is one node.

Leaves: constants, special registers (``%tid``, ``%ctaid``...), bytes of scalar parameters,
and ``unknown`` (loaded data, float results, anything not modelled). Integer nodes mean
"the register holds this value modulo 2**width" (see ``intervals.py``), so wrap-around is only
checked where a value is interpreted.

Pointers are kept apart: a ``ptr`` node lists its possible origins (a pointer parameter
``("param", i)``, a module variable ``("var", name)``, ``"shared"``, ``"local"``, the parameter
space, or ``"?"`` for an unknown origin), each with an integer offset node. Only additive
arithmetic (add, sub, mad's addend, selp, cvta, moves) keeps a pointer a pointer; any other
use turns it into an integer *tainted* by its origins: ``"*"`` (certainly unknown: loaded
64-bit values, pointers used as numbers) or a parameter index (a 64-bit parameter whose value
is read as a number; unknown only if that parameter is in fact a buffer). A pointer plus a
tainted integer has an unknown origin.

Predicates (``setp``, and/or/not of predicates) are nodes too: the footprint reads the
comparisons behind a branch to narrow the values it guards.
"""
from __future__ import annotations

from . import ir
from .cfg import ENTRY, build_cfg
from .dataflow import natural_loops
from .value_nodes import (ANY, CONST, HULL, INT_TYPES, LAUNCH_SPECIALS, PCONST, PHI, PNOT,
                          PREDICATES, PTR, PUNKNOWN, RANGE, SCALAR, UNKNOWN_ORIGIN, Graph,
                          type_bits)
from .value_ops import SEMANTICS, opaque


class Builder:
    """Walks one function and records, for the footprint analysis: the value of every
    address, the predicate of every conditional branch, memory accesses, stores of pointers,
    call sites and the loops' phis."""

    def __init__(self, module: ir.Module, function: ir.Function):
        self.module = module
        self.function = function
        self.g = Graph()
        self.cfg = build_cfg(function)
        self.insts = self.cfg.instructions
        self.registers = function.registers
        self.param_index = {p.name: i for i, p in enumerate(function.params)}
        self.variables = {v.name: v for v in module.global_variables}
        for v in function.local_variables:
            self.variables[v.name] = v
        self.function_names = {f.name for f in module.functions}
        self.reachable = self.cfg.reachable_blocks()
        self.loops = natural_loops(self.cfg, self.reachable)
        self.block_loops = {b: frozenset(h for h, body in self.loops.items() if b in body)
                            for b in self.reachable}
        # results
        self.branch_preds: dict = {}     # block -> (predicate node, taken polarity)
        self.value_at: dict = {}         # (instruction index, register) -> node, for uses
        self.phis: list = []             # phi nodes (attrs: header, register, pointer origin)
        self.param_stores: dict = {}     # index of a call -> {.param variable: [nodes stored]}
        self.env_out: dict = {}
        self.cluster_known = not any(
            k in function.performance and any(d != 1 for d in function.performance[k])
            for k in ("reqnctapercluster", "explicitcluster"))
        self.irreducible = False
        self._site = self._block = None  # the instruction being walked, and its block

    # -- walk ----------------------------------------------------------------------------
    def build(self):
        order = self._reverse_postorder()
        if order is None:
            self.irreducible = True
            return self
        loop_defs = {h: self._defined_in(body) for h, body in self.loops.items()}
        for b in order:
            preds = [p for p in self.cfg.predecessors(b) if p == ENTRY or p in self.reachable]
            if b in self.loops:
                outside = [p for p in preds if p == ENTRY or p not in self.loops[b]]
                env = self._merge([self.env_out.get(p, {}) for p in outside], b)
                for r in loop_defs[b]:
                    env[r] = self._phi(b, r, env.get(r))
            else:
                env = self._merge([self.env_out.get(p, {}) for p in preds], b)
            blk = self.cfg.blocks[b]
            self._param_slots: dict = {}
            for i in range(blk.start, blk.end):
                self._instruction(i, b, env)
            self.env_out[b] = env
        self._close_phis()
        return self

    def _reverse_postorder(self):
        """Blocks in reverse post-order, or None if some cycle is not a natural loop."""
        g = self.cfg.graph
        seen, post = set(), []
        stack = [(0, iter(sorted(s for s in g.successors(0) if s >= 0)))] if self.cfg.blocks else []
        if stack:
            seen.add(0)
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                post.append(node)
                stack.pop()
            elif nxt not in seen:
                seen.add(nxt)
                stack.append((nxt, iter(sorted(s for s in g.successors(nxt) if s >= 0))))
        order = post[::-1]
        position = {b: k for k, b in enumerate(order)}
        back = set(self.cfg.back_edges())
        for u in order:
            for v in g.successors(u):
                if v >= 0 and position[v] <= position[u] and (u, v) not in back:
                    return None
        return order

    def _defined_in(self, body) -> set:
        regs = set()
        for b in body:
            blk = self.cfg.blocks[b]
            for i in range(blk.start, blk.end):
                for d in self.insts[i].destinations:
                    regs |= _register_names(d)
        return regs

    def _merge(self, envs, block):
        envs = [e for e in envs if e is not None]
        if not envs:
            return {}
        if len(envs) == 1:
            return dict(envs[0])
        out = {}
        loops = self.block_loops.get(block, frozenset())
        for r in set().union(*envs):
            per_path = [e.get(r) for e in envs]
            vals = []
            for v in per_path:
                if v is not None and v not in vals:
                    vals.append(v)
            # a register undefined on some path is ignored there: a kernel that used it on
            # that path would read garbage. The join is keyed by the value on each path, so
            # that two registers that swap values (a, b = b, a) are two nodes.
            out[r] = vals[0] if len(vals) == 1 else self.join(
                vals, (block,) + tuple(v.id if v is not None else None for v in per_path), loops)
        return out

    def join(self, vals, site, loops):
        """The value of a register that may come from several definitions (at a join of
        paths, a guarded definition or a selp: ``site``), changing in ``loops``."""
        g = self.g
        if any(v.op in PREDICATES for v in vals):
            return g.node(PUNKNOWN, width=1, site=site + tuple(v.id for v in vals), loops=loops)
        if all(v.op == PTR for v in vals):
            alternatives: dict = {}
            for v in vals:
                for key, off in zip(v.attrs, v.args):
                    alternatives.setdefault(key, []).append(off)
            keys = tuple(sorted(alternatives, key=str))
            offsets = [self.join(alternatives[k], site + (str(k),), loops)
                       if len(alternatives[k]) > 1 else alternatives[k][0] for k in keys]
            return g.node(PTR, offsets, attrs=keys, width=64)
        if any(v.op == PTR for v in vals):
            # a null pointer is no alternative (nothing can be accessed through it)
            vals = [self.as_pointer(v) for v in vals if not (v.op == CONST and v.attrs == 0)]
            return self.join(vals, site, loops) if len(vals) > 1 else vals[0]
        width = max(v.width for v in vals)
        return g.node(HULL, vals, width=width, site=site, loops=loops)

    def _phi(self, header, reg, init):
        g = self.g
        loops = self.block_loops[header]
        if init is not None and init.op == PTR:
            offsets = []
            for key, off in zip(init.attrs, init.args):
                p = g.node(PHI, (off,), attrs=(header, reg, key), width=64, loops=loops,
                           site=(header,))
                self.phis.append(p)
                offsets.append(p)
            return g.node(PTR, offsets, attrs=init.attrs, width=64)
        if self.is_pred_reg(reg) or (init is not None and init.op in PREDICATES):
            return g.node(PUNKNOWN, width=1, site=(header, reg), loops=loops)
        width = init.width if init is not None else self.reg_width(reg)
        args = (init,) if init is not None else ()
        p = g.node(PHI, args, attrs=(header, reg, None), width=width, loops=loops, site=(header,))
        self.phis.append(p)
        return p

    def _close_phis(self):
        """Give each phi its back-edge values, and taint those whose register changes kind
        in the loop (an integer that becomes a pointer, a pointer into another buffer)."""
        latches: dict = {}
        for u, h in self.cfg.back_edges():
            if u in self.reachable:
                latches.setdefault(h, []).append(u)
        for p in self.phis:
            header, reg, key = p.attrs
            values, broken = [], not p.args          # no value before the loop: opaque
            for u in latches.get(header, ()):
                v = self.env_out.get(u, {}).get(reg)
                if v is None:
                    continue
                if key is None:
                    if v.op == PTR or v.op in PREDICATES:
                        broken = True
                    else:
                        values.append(v)
                elif v.op != PTR or not set(v.attrs) <= set(self._phi_keys(header, reg)):
                    broken = True            # the register may point elsewhere after a turn
                elif key in v.attrs:
                    values.append(v.args[v.attrs.index(key)])
            p.extra = values
            if broken:
                p.taint = p.taint | {ANY}
                p.extra = None
        self._propagate_taints()

    def _phi_keys(self, header, reg):
        return [q.attrs[2] for q in self.phis if q.attrs[0] == header and q.attrs[1] == reg]

    def _propagate_taints(self):
        """A phi's taint includes its back-edge values' taints: iterate to a fixpoint (the
        nodes are in creation order, so one pass per loop nesting level suffices)."""
        nodes = self.g.nodes
        changed = True
        while changed:
            changed = False
            for n in nodes:
                t = n.taint
                for a in n.args:
                    t = t | a.taint
                if n.op == PHI and n.extra:
                    for v in n.extra:
                        t = t | v.taint
                if t != n.taint:
                    n.taint = t
                    changed = True

    # -- operands ------------------------------------------------------------------------
    def reg_width(self, name) -> int:
        info = self.registers.get(name)
        if info is None or info[0] == "pred":
            return 1 if info else 32
        return type_bits(info[0])

    def is_pred_reg(self, name) -> bool:
        info = self.registers.get(name)
        return info is not None and info[0] == "pred"

    def read(self, op, env, width=None):
        """The node of a source operand."""
        g = self.g
        if isinstance(op, ir.Imm):
            if op.kind == "int":
                return g.const(op.value, width or 64)
            return g.unknown(width or 32, site=("float", op.value))
        if isinstance(op, ir.Sym):
            return self.symbol_address(op.name, op.offset)
        if isinstance(op, ir.Reg):
            if op.name in self.registers and op.component is None:
                v = env.get(op.name)
                if v is None:
                    v = self._undefined(op.name)
                if op.negated:
                    v = self.pnot(v)
                return v
            return self.special_register(op.name, op.component)
        return g.unknown(width or 64, taint=frozenset({ANY}),
                         site=("operand", self._site, str(op)), loops=self._here())

    def _here(self):
        """The loops around the instruction being walked."""
        return self.block_loops.get(self._block, frozenset())

    def value_range(self, lo, hi, width, i, block, k=0):
        """A value known only to lie in [lo, hi], produced at instruction i (each such
        value is its own node: a condition on one says nothing of another)."""
        return self.g.node(RANGE, attrs=(lo, hi), width=width, site=(i, k),
                           loops=self.block_loops.get(block, frozenset()))

    def _undefined(self, name):
        if self.is_pred_reg(name):
            return self.g.node(PUNKNOWN, width=1)
        return self.g.unknown(self.reg_width(name), site=("undefined", name))

    def special_register(self, name, comp):
        g = self.g
        if name in LAUNCH_SPECIALS and comp in ("x", "y", "z"):
            return g.special(name, comp)
        if name == "%laneid":
            return g.special(name, None)
        if self.cluster_known:
            if name in ("%clusterid", "%nclusterid") and comp in ("x", "y", "z"):
                return g.special("%ctaid" if name == "%clusterid" else "%nctaid", comp)
            if name in ("%cluster_ctaid", "%cluster_ctarank") and comp in (None, "x", "y", "z"):
                return g.const(0, 32)
            if name in ("%cluster_nctaid", "%cluster_nctarank") and comp in (None, "x", "y", "z"):
                return g.const(1, 32)
            if name == "%is_explicit_cluster":
                return g.node(PCONST, attrs=False, width=1)
        width = 64 if name in ("%clock64", "%globaltimer", "%gridid") else 32
        return g.unknown(width, site=("special", name, comp, self._site), loops=self._here())

    def symbol_address(self, name, offset=0):
        """The address of a named variable (or of a parameter, or a function)."""
        g = self.g
        v = self.variables.get(name)
        off = g.const(offset)
        if v is not None:
            if v.space in ("global", "const") and v.size:
                return g.node(PTR, (off,), attrs=(("var", name),))
            if v.space == "shared":
                return g.node(PTR, (off,), attrs=("shared",))
            if v.space == "local":
                return g.node(PTR, (off,), attrs=("local",))
            if v.space == "param":
                return g.node(PTR, (off,), attrs=("paramspace",))
            return g.node(PTR, (off,), attrs=(UNKNOWN_ORIGIN,))
        if name in self.param_index:
            return g.node(PTR, (off,), attrs=("paramspace",))
        # a function's address, or an extern variable: nothing to analyse behind it
        return g.node(PTR, (off,), attrs=(UNKNOWN_ORIGIN,))

    # -- pointers ------------------------------------------------------------------------
    def as_int(self, v, width):
        """A node used as a number of ``width`` bits."""
        g = self.g
        # (each conversion is a function of the node converted: keyed by it)
        if v.op in PREDICATES:
            return g.unknown(width, site=("int", v.id), loops=v.loops)
        if v.op == PTR:
            if len(v.attrs) == 1 and isinstance(v.attrs[0], tuple) and v.attrs[0][0] == "param":
                index = v.attrs[0][1]
                base = g.node(SCALAR, attrs=(index, 0, 8, False), width=64,
                              taint=frozenset({index}))
                return g.add(base, v.args[0], 64)
            return g.unknown(width, taint=frozenset({ANY}) | v.taint, site=("int", v.id),
                             loops=v.loops)
        if v.width < width and v.op != CONST:
            return g.unknown(width, taint=v.taint, site=("widened", v.id), loops=v.loops)
        return v

    def as_pointer(self, v):
        """A node used as an address: a ``ptr`` (an integer is a pointer of unknown origin)."""
        if v.op == PTR:
            return v
        if v.op in PREDICATES:
            v = self.g.unknown(64, site=("int", v.id), loops=v.loops)
        return self.g.node(PTR, (v,), attrs=(UNKNOWN_ORIGIN,))

    def ptr_add(self, a, b, sign=1):
        """a + sign*b where a is a pointer and b a number."""
        g = self.g
        if b.op == PTR or ANY in b.taint:
            return g.node(PTR, (g.unknown(64, taint=frozenset({ANY}), site=("sum", a.id, b.id),
                                          loops=a.loops | b.loops),), attrs=(UNKNOWN_ORIGIN,))
        b = self.as_int(b, 64)
        offsets = [g.add(o, b, 64) if sign > 0 else g.sub(o, b, 64) for o in a.args]
        return g.node(PTR, offsets, attrs=a.attrs)

    def add(self, a, b, width):
        if a.op == PTR and width == 64:
            return self.ptr_add(a, b)
        if b.op == PTR and width == 64:
            return self.ptr_add(b, a)
        return self.g.add(self.as_int(a, width), self.as_int(b, width), width)

    def sub(self, a, b, width):
        g = self.g
        if a.op == PTR and b.op == PTR and width == 64:
            if len(a.attrs) == 1 and a.attrs == b.attrs and a.attrs[0] != UNKNOWN_ORIGIN:
                return g.sub(a.args[0], b.args[0], 64)       # the bases cancel
            return g.unknown(64, taint=frozenset({ANY}), site=("difference", a.id, b.id),
                             loops=a.loops | b.loops)
        if a.op == PTR and width == 64:
            return self.ptr_add(a, b, -1)
        return g.sub(self.as_int(a, width), self.as_int(b, width), width)

    def pnot(self, p):
        if p.op == PNOT:
            return p.args[0]
        if p.op not in PREDICATES:
            return self.g.node(PUNKNOWN, width=1)
        return self.g.node(PNOT, (p,), width=1)

    # -- instructions --------------------------------------------------------------------
    def _instruction(self, i, block, env):
        inst = self.insts[i]
        self._site, self._block = i, block
        op = inst.opcode
        # remember the operands a later analysis needs at this point
        for o in inst.operands:
            if isinstance(o, ir.Addr) and isinstance(o.base, ir.Reg):
                self.value_at[(i, o.base.name)] = self.read(o.base, env)
        if inst.guard is not None:
            self.value_at[(i, inst.guard.name)] = self.read(ir.Reg(inst.guard.name), env)
        ends_block = i == self.cfg.blocks[block].end - 1
        if op in ("bra", "ret", "exit") and inst.guard is not None and ends_block:
            self.branch_preds[block] = (self.read(ir.Reg(inst.guard.name), env),
                                        not inst.guard.negated)
            return
        if op == "st" and "param" in inst.modifiers:
            self._record_param_store(inst, env)
        if op == "call":
            # the values passed (return values come back through .param loads: unknown)
            self.param_stores[i] = self._param_slots
            self._param_slots = {}           # the next call sequence reuses the names
        if op in ("st", "red", "atom", "cp"):
            self._record_stored_values(i, inst, env)
        results = self._semantics(i, block, inst, env)
        if not results:
            return
        for name, node in results:
            if inst.guard is not None:
                old = env.get(name)
                if old is not None and old is not node:
                    node = self.join([old, node], ("guard", i, old.id, node.id),
                                      self.block_loops.get(block, frozenset()))
            env[name] = node

    def _record_param_store(self, inst, env):
        addr = inst.operands[0]
        if isinstance(addr, ir.Addr) and isinstance(addr.base, ir.Sym):
            values = inst.operands[1:]
            items = values[0].items if values and isinstance(values[0], ir.Vec) else values
            for item in items:
                if item is not None:
                    self._param_slots.setdefault(addr.base.name, []).append(self.read(item, env))

    def _record_stored_values(self, i, inst, env):
        """Values written to memory (a pointer stored there escapes)."""
        first_source = 1 if inst.opcode in ("st", "red") else 2
        if inst.opcode == "cp":
            return
        nodes = []
        for o in inst.operands[first_source:]:
            items = o.items if isinstance(o, ir.Vec) else (o,)
            for item in items:
                if isinstance(item, (ir.Reg, ir.Sym)):
                    nodes.append(self.read(item, env))
        self.value_at[(i, "stored")] = nodes

    def _dests(self, inst):
        """Destination register names (vector and pair destinations flattened)."""
        if not inst.destinations:
            return []
        d = inst.destinations[0]
        if isinstance(d, ir.Reg):
            return [d.name]
        if isinstance(d, ir.Vec):
            return [x.name for x in d.items if isinstance(x, ir.Reg)]
        if isinstance(d, ir.Pair):
            return [d.first.name, d.second.name]
        return []

    def _semantics(self, i, block, inst, env):
        """[(register, node)] for the registers ``inst`` writes."""
        dests = self._dests(inst)
        if not dests:
            return []
        try:
            value = SEMANTICS.get(inst.opcode, opaque)(self, i, block, inst, env, dests)
        except (KeyError, IndexError, ValueError, AttributeError, TypeError):
            value = None
        if value is None:
            return self.opaque_results(i, block, inst, env, dests)
        return value

    def opaque_results(self, i, block, inst, env, dests):
        """Results of an instruction whose value is not modelled: unknown, tainted by any
        pointer among its operands, and a possible pointer if 64 bits wide and loaded. A
        floating-point result is no pointer, whatever it was computed from."""
        taint = set()
        types = inst.types
        floating = bool(types) and types[0] not in INT_TYPES and types[0] != "pred"
        for o in () if floating else inst.sources:
            items = o.items if isinstance(o, (ir.Vec, ir.ParamList)) else (o,)
            for item in items:
                if isinstance(item, (ir.Reg, ir.Sym)):
                    v = self.read(item, env)
                    if v.op == PTR:
                        taint.add(ANY)
                    taint |= v.taint
        out = []
        loops = self.block_loops.get(block, frozenset())
        for k, name in enumerate(dests):
            if self.is_pred_reg(name):
                out.append((name, self.g.node(PUNKNOWN, width=1, site=(i, k), loops=loops)))
                continue
            width = self.reg_width(name)
            t = set(taint)
            if width == 64 and not floating and \
                    inst.opcode in ("ld", "ldu", "atom", "shfl", "prmt", "mov"):
                t.add(ANY)             # a 64-bit value from memory may be a pointer
            out.append((name, self.g.unknown(width, taint=frozenset(t), loops=loops,
                                             site=(i, k))))
        return out


def _register_names(op) -> set:
    if isinstance(op, ir.Reg):
        return {op.name}
    if isinstance(op, ir.Vec):
        return {x.name for x in op.items if isinstance(x, ir.Reg)}
    if isinstance(op, ir.Pair):
        return {op.first.name, op.second.name}
    return set()
