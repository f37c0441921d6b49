"""Spin-waits: the loads with which a thread polls memory that another thread will write.

A GPU runs a block's warps side by side, so ``while (ld.acquire(flag) == 0);`` in one warp
sees the store another warp makes (cooperative groups' barrier for tiles larger than a warp,
hand-written flags, spin locks with ``atom.cas``). The CPU back-end runs a block's threads
one after another between sync points, so such a loop would never end: it makes the polling
access a yield point (``ST_SPIN``), and the block scheduler runs the other threads before the
thread tries again.

A polling access here is a strong load (``ld`` with ``.volatile``, ``.relaxed`` or
``.acquire``) or an ``atom.cas``/``atom.exch`` inside a natural loop that writes nothing else
to memory visible to other threads (no ``st`` or ``red`` outside ``.local``/``.param``, no
other ``atom``) and has no sync point of its own (a barrier or warp operation already
returns to the scheduler). Loops that do work (a volatile shared-memory reduction) are not
spins: their loads stay plain."""
from __future__ import annotations

from .cfg import build_cfg, sync_kind
from .dataflow import natural_loops

STRONG = ("volatile", "relaxed", "acquire")
PRIVATE_SPACES = ("local", "param")


def _space(inst) -> str:
    return next((m.split("::")[0] for m in inst.modifiers
                 if m.split("::")[0] in ("global", "shared", "local", "param", "const")),
                "generic")


def polls(inst) -> bool:
    """A load or atomic whose result can change without this thread: what a spin polls."""
    if inst.opcode == "ld":
        return any(m in STRONG for m in inst.modifiers) and _space(inst) not in PRIVATE_SPACES
    return inst.opcode == "atom" and any(m in ("cas", "exch") for m in inst.modifiers)


def _writes(inst) -> bool:
    if inst.opcode in ("st", "red", "cp", "cp.async"):
        return _space(inst) not in PRIVATE_SPACES
    return inst.opcode in ("atom", "mbarrier")


def spin_waits(function) -> frozenset:
    """Indices (into ``function.instructions``) of the polling accesses of its spin loops."""
    if function.body is None or not any(polls(i) for i in function.instructions):
        return frozenset()
    cfg = build_cfg(function)
    insts = function.instructions
    found = set()
    for body in natural_loops(cfg, cfg.reachable_blocks()).values():
        members = [i for b in body for i in range(cfg.blocks[b].start, cfg.blocks[b].end)]
        polling = [i for i in members if polls(insts[i])]
        others = [i for i in members if i not in polling]
        if polling and not any(sync_kind(insts[i]) or _writes(insts[i]) for i in others):
            found.update(polling)
    return frozenset(found)
