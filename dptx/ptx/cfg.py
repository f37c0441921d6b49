"""Control-flow graphs of PTX functions (networkx), with the facts the back-ends need:
basic blocks, dominators, post-dominators and sync points (barriers and warp operations)."""
from __future__ import annotations

from dataclasses import dataclass, field

import networkx as nx

from . import ir

ENTRY = -1  # virtual node before the first block
EXIT = -2   # virtual node after every ret/exit and the last fall-through

# Instructions that synchronize a CTA or a warp: the CPU back-end cuts bodies at these points
# (DESIGN.md decision 4). Keyed by opcode; the value says which scope they synchronize.
SYNC_OPCODES = {
    "bar": "cta", "barrier": "cta",
    "shfl": "warp", "vote": "warp", "redux": "warp", "match": "warp", "activemask": "warp",
    "elect": "warp", "mma": "warp", "ldmatrix": "warp", "wmma": "warp", "stmatrix": "warp",
    "movmatrix": "warp",
    "mbarrier": "cta",
}


def sync_kind(inst: ir.Instruction):
    """'cta', 'warp' or None. ``bar.warp.sync`` is warp-scoped although its opcode is ``bar``."""
    kind = SYNC_OPCODES.get(inst.opcode)
    if kind == "cta" and inst.modifiers[:1] == ("warp",):
        return "warp"
    return kind


TERMINATORS = frozenset({"bra", "brx", "ret", "exit", "trap"})


@dataclass
class BasicBlock:
    index: int
    start: int                 # first instruction index (into Function.instructions)
    end: int                   # one past the last instruction
    labels: list = field(default_factory=list)

    def __len__(self):
        return self.end - self.start


@dataclass
class SyncPoint:
    instruction: int  # index into Function.instructions
    block: int
    kind: str         # "cta" | "warp"


class CFG:
    """The CFG of one function. ``graph`` is a networkx DiGraph over block indices plus the
    virtual ENTRY and EXIT nodes."""

    def __init__(self, function: ir.Function):
        if function.body is None:
            raise ValueError(f"function {function.name} is a declaration without a body")
        self.function = function
        self.instructions = function.instructions
        self.labels = function.labels
        self.tables = {s.name: s for s in function.statements() if isinstance(s, ir.TargetTable)}
        self.blocks: list = []
        self.graph = nx.DiGraph()
        self._block_of_instruction: list = []
        self._build()
        self._idom = None
        self._ipdom = None

    # -- construction ------------------------------------------------------------------------
    def _build(self):
        insts = self.instructions
        n = len(insts)
        leaders = {0} if n else set()
        for index in self.labels.values():
            if index < n:
                leaders.add(index)
        for i, inst in enumerate(insts):
            if inst.opcode in TERMINATORS and i + 1 < n:
                leaders.add(i + 1)
        starts = sorted(leaders)
        labels_at = {}
        for name, index in self.labels.items():
            labels_at.setdefault(index, []).append(name)
        for b, start in enumerate(starts):
            end = starts[b + 1] if b + 1 < len(starts) else n
            self.blocks.append(BasicBlock(b, start, end, labels_at.get(start, [])))
        self._block_of_instruction = [0] * n
        for blk in self.blocks:
            for i in range(blk.start, blk.end):
                self._block_of_instruction[i] = blk.index
        g = self.graph
        g.add_node(ENTRY)
        g.add_node(EXIT)
        g.add_nodes_from(range(len(self.blocks)))
        g.add_edge(ENTRY, 0 if self.blocks else EXIT)
        for blk in self.blocks:
            last = insts[blk.end - 1]
            fall = blk.index + 1 if blk.index + 1 < len(self.blocks) else EXIT
            guarded = last.guard is not None
            op = last.opcode
            if op == "bra":
                g.add_edge(blk.index, self._label_block(last.operands[0], last))
                if guarded:
                    g.add_edge(blk.index, fall)
            elif op == "brx":
                table = last.operands[1]
                for target in self._table_targets(table, last):
                    g.add_edge(blk.index, self._label_block(ir.Sym(target), last))
                if guarded:
                    g.add_edge(blk.index, fall)
            elif op in ("ret", "exit", "trap"):
                g.add_edge(blk.index, EXIT)
                if guarded:
                    g.add_edge(blk.index, fall)
            else:
                g.add_edge(blk.index, fall)

    def _label_block(self, operand, inst):
        name = getattr(operand, "name", None)
        if name not in self.labels:
            raise ValueError(f"{self.function.name}: line {inst.line}: branch to unknown label {operand}")
        index = self.labels[name]
        return EXIT if index >= len(self.instructions) else self._block_of_instruction[index]

    def _table_targets(self, operand, inst):
        name = getattr(operand, "name", None)
        if name in self.tables:
            return self.tables[name].targets
        raise ValueError(f"{self.function.name}: line {inst.line}: brx.idx needs a .branchtargets table, got {operand}")

    # -- queries -----------------------------------------------------------------------------
    def block_of(self, instruction_index: int) -> int:
        return self._block_of_instruction[instruction_index]

    def successors(self, block: int) -> list:
        return list(self.graph.successors(block))

    def predecessors(self, block: int) -> list:
        return list(self.graph.predecessors(block))

    @property
    def immediate_dominators(self) -> dict:
        if self._idom is None:
            self._idom = {n: d for n, d in nx.immediate_dominators(self.graph, ENTRY).items()
                          if n != ENTRY}
        return self._idom

    @property
    def immediate_post_dominators(self) -> dict:
        """Over the reversed graph from EXIT; blocks that never reach EXIT (endless loops)
        have no post-dominator and are absent."""
        if self._ipdom is None:
            self._ipdom = {n: d for n, d in
                           nx.immediate_dominators(self.graph.reverse(copy=False), EXIT).items()
                           if n != EXIT}
        return self._ipdom

    @staticmethod
    def _chain_contains(idom: dict, a, b) -> bool:
        """Whether ``a`` lies on ``b``'s dominator chain. (networkx >= 3.5 leaves the root
        out of the mapping; older versions map it to itself: both are handled.)"""
        node = b
        while node is not None:
            if node == a:
                return True
            parent = idom.get(node)
            if parent == node:
                return False
            node = parent
        return False

    def dominates(self, a, b) -> bool:
        return self._chain_contains(self.immediate_dominators, a, b)

    def post_dominates(self, a, b) -> bool:
        return self._chain_contains(self.immediate_post_dominators, a, b)

    @property
    def sync_points(self) -> list:
        points = []
        for i, inst in enumerate(self.instructions):
            kind = sync_kind(inst)
            if kind:
                points.append(SyncPoint(i, self.block_of(i), kind))
        return points

    def reachable_blocks(self) -> set:
        return {n for n in nx.descendants(self.graph, ENTRY) if n >= 0}

    def back_edges(self) -> list:
        """Edges (u, v) where v dominates u: the loops of a reducible CFG."""
        return [(u, v) for u, v in self.graph.edges if u >= 0 and v >= 0 and self.dominates(v, u)]


def build_cfg(function: ir.Function) -> CFG:
    return CFG(function)
