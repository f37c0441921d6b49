"""Spin-waits: loops in which a thread polls memory that another thread will write.

A GPU runs a block's warps side by side, so ``while (ld.acquire(flag) == 0);`` in one warp
sees the store another warp makes (cooperative groups' barrier for tiles larger than a warp,
hand-written flags, spin locks with ``atom.cas``). The CPU back-end runs a block's threads
one after another between sync points, so such a loop would never end: its back edge becomes
a yield point (``ST_SPIN``), and the block scheduler runs the other threads before the thread
polls again. The first poll does not yield: a flag already raised, or a lock that is free,
costs nothing.

A spin loop here is a natural loop that polls (a strong load: ``ld`` with ``.volatile``,
``.relaxed`` or ``.acquire``; an ``atom.exch``; an ``atom.cas`` whose expected value is a
constant or set before the loop, as a lock's 0) and writes nothing else to memory other threads see (no
``st`` or ``red`` outside ``.local``/``.param``, no other atomic) and has no sync point of its
own (a barrier or warp operation already returns to the scheduler). A compare-and-swap retry
loop (``atomicMax`` on floats: the expected value is the one just read) succeeds at once when
no other thread runs in between, and loops that do work with volatile loads and stores are
not waits: neither yields."""
from __future__ import annotations

from . import ir
from .cfg import build_cfg, sync_kind
from .dataflow import natural_loops

STRONG = ("volatile", "relaxed", "acquire")
PRIVATE_SPACES = ("local", "param")


def _space(inst) -> str:
    return next((m.split("::")[0] for m in inst.modifiers
                 if m.split("::")[0] in ("global", "shared", "local", "param", "const")),
                "generic")


def _written(inst) -> set:
    """Register names an instruction writes (its first operand), but for a ``mov`` of a
    constant (a lock's expected 0, materialized in the loop)."""
    if not inst.operands or (inst.opcode == "mov" and len(inst.operands) == 2 and
                             isinstance(inst.operands[1], ir.Imm)):
        return set()
    op = inst.operands[0]
    items = op.items if isinstance(op, ir.Vec) else (op.first, op.second) \
        if isinstance(op, ir.Pair) else (op,)
    return {r.name for r in items if isinstance(r, ir.Reg)}


def _polls(inst, loop_defs: set) -> bool:
    """A load or atomic whose result can change only through another thread."""
    if inst.opcode == "ld":
        return any(m in STRONG for m in inst.modifiers) and _space(inst) not in PRIVATE_SPACES
    if inst.opcode != "atom":
        return False
    if "exch" in inst.modifiers:
        return True
    if "cas" in inst.modifiers and len(inst.operands) > 2:
        expected = inst.operands[2]
        return not (isinstance(expected, ir.Reg) and expected.name in loop_defs)
    return False


def _writes(inst) -> bool:
    if inst.opcode in ("st", "red", "cp", "cp.async"):
        return _space(inst) not in PRIVATE_SPACES
    return inst.opcode in ("atom", "mbarrier")


def spin_waits(function) -> frozenset:
    """Indices (into ``function.instructions``) of the branches that close spin loops: the
    ``bra`` at the end of each back edge's source block."""
    insts = function.instructions
    if function.body is None or not any(i.opcode in ("ld", "atom") for i in insts):
        return frozenset()
    cfg = build_cfg(function)
    loops = natural_loops(cfg, cfg.reachable_blocks())
    found = set()
    for header, body in loops.items():
        members = [i for b in body for i in range(cfg.blocks[b].start, cfg.blocks[b].end)]
        defs = set().union(*(_written(insts[i]) for i in members)) if members else set()
        polling = [i for i in members if _polls(insts[i], defs)]
        others = [i for i in members if i not in polling]
        if not polling or any(sync_kind(insts[i]) or _writes(insts[i]) for i in others):
            continue
        for u, h in cfg.back_edges():
            if h == header and u in body:
                last = cfg.blocks[u].end - 1
                if last >= cfg.blocks[u].start and insts[last].opcode == "bra":
                    found.add(last)
    return frozenset(found)
