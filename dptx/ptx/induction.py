"""Loops of the value graph (``value_graph.py``): affine induction variables and the exit
tests that bound their trip counts, for the access-footprint analysis.

A phi of loop L is an *induction variable* when each of its back-edge values is the phi plus
a step that does not depend on L's phis (several back edges, or a guarded increment that
joins with the unchanged value, give several steps; a step chosen by data in the loop is an
interval). Its header values are then ``init + j * step`` for an
iteration number j shared by every induction variable of L, including the pointer ones that
strength reduction makes (``add.s64 %rd, %rd, 4``).

An *exit test* is a conditional branch inside L (not inside an inner loop) that leaves L and
dominates every back edge, so that every iteration that goes on has passed it. When the
condition to stay is a comparison of an induction variable plus an invariant offset with a
loop-invariant bound (``setp.lt.s32 %p, %r_iv_plus_step, %r_n``), ``intervals.trip_bound``
turns it, at launch time, into a maximum iteration number (after checking that the IV cannot
wrap before the test fails); the loop's bound is the smallest over its tests.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from . import value_nodes as vn
from .cfg import EXIT

_FLIP = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "eq": "eq", "ne": "ne"}
_NEGATE = {"lt": "ge", "le": "gt", "gt": "le", "ge": "lt", "eq": "ne", "ne": "eq"}


def flip(cmp: str) -> str:
    """The comparison with its operands swapped (a < b  <=>  b > a)."""
    return _FLIP[cmp]


def comparisons(pred, holds: bool) -> list:
    """The integer comparisons ``(cmp, signed, width, a, b)`` that all hold when predicate
    node ``pred`` has the value ``holds``: a conjunction, read through and/or/not (a
    disjunction gives nothing)."""
    if pred.op == vn.SETP:
        cmp, signed, width = pred.attrs
        a, b = pred.args
        return [(cmp if holds else _NEGATE[cmp], signed, width, a, b)]
    if pred.op == vn.PNOT:
        return comparisons(pred.args[0], not holds)
    if (pred.op == vn.PAND and holds) or (pred.op == vn.POR and not holds):
        return comparisons(pred.args[0], holds) + comparisons(pred.args[1], holds)
    return []


def _terms(node, sign=1, depth=0) -> list:
    """node as a signed sum of terms, through add and sub."""
    if depth < 8 and node.op == vn.ADD:
        return _terms(node.args[0], sign, depth + 1) + _terms(node.args[1], sign, depth + 1)
    if depth < 8 and node.op == vn.SUB:
        return _terms(node.args[0], sign, depth + 1) + _terms(node.args[1], -sign, depth + 1)
    return [(sign, node)]


def _sum(g, terms, width):
    total = g.const(0, width)
    for sign, n in terms:
        total = g.add(total, n, width) if sign > 0 else g.sub(total, n, width)
    return total


def split_affine(g, node, phis: set, header: int, invariant=True):
    """(phi, offset) when node = phi + offset for one phi of ``phis`` and an offset
    invariant in the loop of ``header`` (None: no offset), else None. With ``invariant``
    false the offset may change from one iteration to the next (a step chosen by data),
    as long as it does not depend on the loop's own phis."""
    terms = _terms(node)
    found = [(s, n) for s, n in terms if n in phis]
    if len(found) != 1 or found[0][0] != 1:
        return None
    rest = [(s, n) for s, n in terms if n not in phis]
    if any(header in n.loops and (invariant or not _free_of_loop_phis(n, header, {}))
           for _, n in rest):
        return None
    return found[0][1], (_sum(g, rest, node.width) if rest else None)


def _free_of_loop_phis(node, header, memo) -> bool:
    """Whether a value is computed without the phis of the loop of ``header`` or of loops
    inside it (its interval then holds in every iteration, whatever the phis)."""
    found = memo.get(node.id)
    if found is None:
        memo[node.id] = True
        found = not (node.op == vn.PHI and header in node.loops) and \
            all(_free_of_loop_phis(a, header, memo) for a in node.args)
        memo[node.id] = found
    return found


def _steps(g, value, phi, header):
    """The per-iteration changes of ``phi`` along one back edge, or None if not affine."""
    if value is phi:
        return [g.const(0, phi.width)]
    if value.op == vn.HULL:
        out = []
        for a in value.args:
            s = _steps(g, a, phi, header)
            if s is None:
                return None
            out += s
        return out
    split = split_affine(g, value, {phi}, header, invariant=False)
    if split is None:
        return None
    return [split[1] if split[1] is not None else g.const(0, phi.width)]


@dataclass
class TripTest:
    """The loop goes on only while ``(phi + offset) cmp bound``: ``window`` is how the IV is
    read ((signed, width): the comparison's, or the source's of a compared extension),
    ``cmp_window`` how the bound is."""
    phi: object
    offset: object          # node or None
    cmp: str
    window: tuple
    cmp_window: tuple
    bound: object
    line: int


@dataclass
class Loop:
    header: int
    body: set
    steps: dict = field(default_factory=dict)   # phi node -> [step nodes] (IVs only)
    tests: list = field(default_factory=list)


def analyse_loops(builder) -> dict:
    """header -> Loop for every natural loop of the builder's function."""
    g, cfg = builder.g, builder.cfg
    back = [(u, h) for u, h in cfg.back_edges() if u in builder.reachable]
    loops = {}
    for header, body in builder.loops.items():
        loop = Loop(header, body)
        for phi in builder.phis:
            if phi.attrs[0] != header or phi.extra is None or not phi.args:
                continue
            steps = []
            for v in phi.extra:
                s = _steps(g, v, phi, header)
                if s is None:
                    steps = None
                    break
                steps += s
            if steps:
                loop.steps[phi] = steps
        latches = [u for u, h in back if h == header]
        loop.tests = _exit_tests(builder, loop, latches) if loop.steps else []
        loops[header] = loop
    return loops


def _innermost(builder, block, header) -> bool:
    body = builder.loops[header]
    return not any(h != header and block in b and b < body for h, b in builder.loops.items())


def taken_block(cfg, block):
    """The block a conditional branch at the end of ``block`` goes to when taken."""
    inst = cfg.instructions[cfg.blocks[block].end - 1]
    if inst.opcode == "bra":
        return cfg._label_block(inst.operands[0], inst)
    return EXIT


def _exit_tests(builder, loop, latches) -> list:
    cfg = builder.cfg
    tests = []
    for block in sorted(loop.body):
        if block not in builder.branch_preds or not _innermost(builder, block, loop.header):
            continue
        if not all(cfg.dominates(block, u) for u in latches):
            continue
        succs = set(cfg.successors(block))
        taken = taken_block(cfg, block)
        fall = next((s for s in succs if s != taken), None)
        if fall is None:
            continue
        pred, taken_holds = builder.branch_preds[block]
        if taken in loop.body and fall not in loop.body:
            stay = taken_holds
        elif fall in loop.body and taken not in loop.body:
            stay = not taken_holds
        else:
            continue
        line = cfg.instructions[cfg.blocks[block].end - 1].line
        for cmp, signed, width, a, b in comparisons(pred, stay):
            for lhs, rhs, c in ((a, b, cmp), (b, a, flip(cmp))):
                test = _trip_test(builder.g, loop, lhs, rhs, c, (signed, width), line)
                if test is not None:
                    tests.append(test)
    return tests


def _trip_test(g, loop, lhs, rhs, cmp, cmp_window, line):
    if loop.header in rhs.loops:
        return None
    window = cmp_window
    if lhs.op == vn.EXT:
        ext_signed, src_width = lhs.attrs
        # sext(x) read signed is x read signed; zext(x) read either way is x unsigned
        if ext_signed and not cmp_window[0]:
            return None
        window = (ext_signed, src_width)
        lhs = lhs.args[0]
    split = split_affine(g, lhs, set(loop.steps), loop.header, invariant=False)
    if split is None:
        return None
    phi, offset = split
    if offset is not None and loop.header in offset.loops and loop.steps[phi] != [offset]:
        # an offset that changes per iteration is fine only as the IV's own step: the
        # test then reads the next value of the IV
        return None
    return TripTest(phi, offset, cmp, window, cmp_window, rhs, line)
