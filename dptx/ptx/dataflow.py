"""Classic data-flow facts over a function's CFG (``cfg.CFG``): natural loops and reaching
definitions. Shared by the CPU back-end (warp-vectorized plans) and the static analyses of
this package (access footprints)."""
from __future__ import annotations


def natural_loops(cfg, reachable) -> dict:
    """Loop header -> the set of blocks of its natural loop (the loops of all back edges to
    one header merged), over the ``reachable`` blocks."""
    loops = {}
    for u, h in cfg.back_edges():
        if u not in reachable:
            continue
        body = {h, u}
        stack = [u]
        while stack:
            n = stack.pop()
            if n == h:
                continue
            for p in cfg.predecessors(n):
                if p >= 0 and p not in body and p in reachable:
                    body.add(p)
                    stack.append(p)
        loops.setdefault(h, set()).update(body)
    return loops


def reaching_definitions(insts, defs, cfg, reachable) -> dict:
    """instruction index -> {register: set of instruction indices whose definition of it may
    reach there} (-1: the value at entry). A guarded definition does not kill the others."""
    def transfer(state, i):
        out = dict(state)
        for r in defs[i]:
            if insts[i].guard is None:
                out[r] = frozenset((i,))
            else:
                out[r] = state.get(r, frozenset((-1,))) | {i}
        return out

    blocks = {b.index: b for b in cfg.blocks}
    block_in = {b: {} for b in reachable}
    block_out = {}
    order = [b for b in sorted(reachable)]
    changed = True
    while changed:
        changed = False
        for b in order:
            state = {}
            preds = [p for p in cfg.predecessors(b) if p >= 0 and p in reachable]
            for p in preds:
                for r, ds in block_out.get(p, {}).items():
                    state[r] = state.get(r, frozenset()) | ds
            block_in[b] = state
            blk = blocks[b]
            for i in range(blk.start, blk.end):
                state = transfer(state, i)
            if block_out.get(b) != state:
                block_out[b] = state
                changed = True
    result = {}
    for b in order:
        blk = blocks[b]
        state = block_in[b]
        for i in range(blk.start, blk.end):
            result[i] = {r: (ds if ds else frozenset((-1,))) for r, ds in state.items()}
            state = transfer(state, i)
    return result
