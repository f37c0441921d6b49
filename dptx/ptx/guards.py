"""Conditions that hold at a point of a kernel, for the access-footprint analysis.

A condition holds at a block when a branch edge dominates it: the edge's target has the
branch block as its only predecessor (the function entry counts as one), so every path to
the block took that edge. An access's own ``@%p`` holds at the access.

The integer comparisons in a condition (``induction.comparisons``) become *narrowings*: a
node and a recipe for the interval its value must lie in there (``("cmp", ...)``: from the
other side of the comparison; ``("chain", ...)``: passed down through an add or sub, when
that cannot wrap; ``("ext", ...)``: through a sign or zero extension). A node may only be
narrowed at a use if it cannot have changed between the branch and the use: for every loop
the value changes in, both must lie inside that loop (then they are in the same iteration).
"""
from __future__ import annotations

from . import value_nodes as vn
from .induction import comparisons, flip, taken_block

MAX_CHAIN = 3       # how far a narrowing passes down through add, sub and extensions


class Guards:
    """The conditions known to hold at each block, from the branch edges that dominate it."""

    def __init__(self, builder):
        self.b = builder
        self.cfg = builder.cfg
        self._edge_fact = {}
        for s in builder.reachable:
            preds = self.cfg.predecessors(s)            # (the function entry included)
            if len(preds) == 1 and preds[0] in builder.branch_preds:
                g = preds[0]
                succs = set(self.cfg.successors(g))
                if len(succs) != 2:
                    continue
                pred, taken_holds = builder.branch_preds[g]
                taken = taken_block(self.cfg, g)
                self._edge_fact[s] = (pred, taken_holds if s == taken else not taken_holds, g)

    def facts_at(self, block) -> list:
        """[(predicate, holds, branch block)] for the edges dominating ``block``."""
        out, node = [], block
        idom = self.cfg.immediate_dominators
        seen = set()
        while node is not None and node >= 0 and node not in seen:
            seen.add(node)
            if node in self._edge_fact:
                out.append(self._edge_fact[node])
            parent = idom.get(node)
            node = None if parent == node else parent
        return out

    def same_instance(self, node, branch_block, use_block) -> bool:
        """Whether ``node`` holds at ``use_block`` the value it had at the branch."""
        loops = self.b.loops
        return all(branch_block in loops[h] and use_block in loops[h] for h in node.loops)


def useful(narrowed, dag) -> frozenset:
    """The narrowings that can change a value computed from ``dag`` (node ids): those on
    its nodes, less the ones passed down from a parent that is narrowed itself (the
    parent's own narrowing already bounds what flows through it)."""
    kept = {(n, r) for n, r in narrowed if n.id in dag}
    recipes = {r for _, r in kept}
    out = set()
    for n, r in kept:
        if r[0] == "chain" and r[4] in dag and r[3] in recipes:
            continue
        if r[0] == "ext" and r[2] in dag and r[1] in recipes:
            continue
        out.add((n, r))
    return frozenset(out)


def narrowings(guards, facts, use_block, own=None) -> tuple:
    """(narrowings, atoms) at a use: narrowings are (node, recipe) pairs that hold there;
    atoms are every comparison known to hold (for the unreachability check)."""
    out, atoms = [], []
    items = [(p, h, g) for p, h, g in facts]
    if own is not None:
        items.append((own[0], own[1], None))
    for pred, holds, branch in items:
        for atom in comparisons(pred, holds):
            atoms.append(atom)
            cmp, signed, width, a, b = atom
            for x, other, c in ((a, b, cmp), (b, a, flip(cmp))):
                recipe = ("cmp", c, signed, width, other.id)
                _derive(guards, x, recipe, signed, width, branch, use_block, out, 0)
    return tuple(out), tuple(atoms)


def _derive(guards, node, recipe, signed, width, branch, use_block, out, depth):
    if node.op == vn.CONST or (node.op in (vn.UNKNOWN, vn.RANGE) and node.site is None):
        return                      # nothing to narrow, or a value without identity
    if branch is None or guards.same_instance(node, branch, use_block):
        out.append((node, recipe))
    if depth >= MAX_CHAIN or recipe[:2] == ("cmp", "ne"):
        return
    if node.op in (vn.ADD, vn.SUB) and node.width == width:
        x, y = node.args
        modes = (("x", x, y), ("y", y, x)) if node.op == vn.ADD else (("x", x, y), ("s", y, x))
        for mode, child, sibling in modes:
            sub = ("chain", node.op, mode, recipe, node.id, sibling.id, child.id, signed, width)
            _derive(guards, child, sub, signed, width, branch, use_block, out, depth + 1)
    elif node.op == vn.EXT and node.width == width:
        ext_signed, src_width = node.attrs
        if ext_signed and not signed:
            return
        sub = ("ext", recipe, node.id, signed, width, ext_signed, src_width)
        _derive(guards, node.args[0], sub, ext_signed, src_width, branch, use_block, out,
                depth + 1)
