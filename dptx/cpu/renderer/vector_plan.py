"""Whether a kernel can run warp-vectorized on the CPU, and the facts its translation needs.

Warp-vectorized execution (see ``vector.py``) runs the 32 threads of a warp as the lanes of
LLVM vectors, with a mask per basic block; barriers suspend whole warps. It is exact only if
every barrier is reached by all the live lanes of a warp together. This module proves that
statically (a divergence analysis over the CFG) and refuses everything else, which then runs
on the per-thread executor (``codegen.py``). It also orders the blocks so that each loop is
contiguous (a reducible CFG is required) and finds the blocks from which no barrier can be
reached: lanes that go there never wait at a barrier again.
"""
from __future__ import annotations

from dataclasses import dataclass

import networkx as nx

from ...ptx import ir
from ...ptx.cfg import build_cfg
from ...ptx.dataflow import natural_loops as _natural_loops
from ...ptx.spins import spin_waits
from ...ptx.dataflow import reaching_definitions as _reaching_definitions

# Special registers that differ between the threads of a warp.
_DIVERGENT_SPECIALS = ("%tid", "%laneid", "%lanemask_eq", "%lanemask_lt", "%lanemask_le",
                       "%lanemask_gt", "%lanemask_ge", "%clock", "%clock64", "%globaltimer",
                       "%globaltimer_lo", "%globaltimer_hi")
# instructions that compute from registers only: no memory, no warp state, no fault
FULL_WARP_PURE = frozenset({
    "add", "sub", "mul", "mad", "mul24", "mad24", "sad", "div", "rem", "abs", "neg", "min",
    "max", "fma", "and", "or", "xor", "not", "cnot", "shl", "shr", "bfe", "bfi", "brev",
    "popc", "clz", "bfind", "prmt", "lop3", "shf", "setp", "set", "selp", "slct", "mov",
    "cvt", "sqrt", "rsqrt", "rcp", "sin", "cos", "ex2", "lg2", "tanh", "copysign", "testp",
    "dp4a", "dp2a"})

# what may run once for the lanes that reach it under divergent control (plus the pointer
# conversions nvcc emits there)
_UNIFORM_SAFE = FULL_WARP_PURE | {"cvta"}
# Warp-synchronous operations the vector executor implements (all lanes must reach them
# together).
_MATRIX_OPS = ("mma", "ldmatrix", "stmatrix", "movmatrix", "wmma", "wgmma")
_WARP_OPS = {"shfl", "vote", "activemask", *_MATRIX_OPS}


@dataclass
class VectorPlan:
    cfg: object
    order: list          # block indices, loops contiguous, entry first
    loop_ends: dict      # block index -> loop headers whose body ends there (innermost first)
    nosync: set          # blocks from which no barrier is reachable
    label_block: dict    # PTX label -> block index (EXIT for a label past the end)
    divergent: set       # registers whose value may differ between the lanes of a warp
    divergent_blocks: set  # blocks some live lanes of a warp may skip while others run them
    loops: dict = None   # loop header -> the blocks of its body


def plan_vector(module: ir.Module, function: ir.Function):
    """A VectorPlan, or a string saying why the kernel must run per thread."""
    insts = function.instructions
    spins = spin_waits(function)
    if spins:
        # spin loops yield to the block's other threads (ptx/spins.py)
        return f"spin-wait loop at PTX line {insts[min(spins)].line}"
    bar_ids = set()
    for inst in insts:
        op, mods = inst.opcode, inst.modifiers
        if op in ("call", "brx", "trap", "redux", "match", "elect", "addc", "subc", "madc"):
            return f"{op} at PTX line {inst.line}"
        if "cc" in mods:
            return f"carry flag at PTX line {inst.line}"
        if op in ("bar", "barrier"):
            if "warp" in mods:
                continue
            if inst.guard is not None:
                return f"guarded barrier at PTX line {inst.line}"
            if any(m in mods for m in ("arrive", "red")) or len(inst.operands) != 1 \
                    or not isinstance(inst.operands[0], ir.Imm):
                return f"barrier form at PTX line {inst.line}"
            bar_ids.add(inst.operands[0].value)
        if op == "mbarrier":
            # waits yield to the block's other threads (lowering/async_barrier.py)
            return f"mbarrier at PTX line {inst.line}"
        if op in ("shfl", "vote"):
            if "sync" not in mods:
                return f"{op} without .sync at PTX line {inst.line}"
        for o in inst.operands:
            if isinstance(o, ir.Reg) and o.component and o.name not in ("%tid", "%ntid", "%ctaid", "%nctaid"):
                return f"vector register component at PTX line {inst.line}"
        if any(m == "local" for m in mods) or op == "cvta" and "local" in mods:
            return f"local memory at PTX line {inst.line}"
    if len(bar_ids) > 1:
        return "several barrier ids"
    if any(v.space == "local" for v in function.local_variables):
        return "local variables"
    if any(isinstance(s, ir.RegDecl) and s.vector for s in function.statements()):
        return "vector registers"

    cfg = build_cfg(function)
    g = cfg.graph
    reachable = cfg.reachable_blocks()
    # (an irreducible CFG shows as a cycle that no natural loop explains: no order exists)
    loops = _natural_loops(cfg, reachable)
    order = _ordered_blocks(cfg, reachable, loops)
    if order is None:
        return "irreducible control flow"
    loop_ends = {}
    for header, body in sorted(loops.items(), key=lambda kv: len(kv[1])):
        last = max(body, key=order.index)
        loop_ends.setdefault(last, []).append(header)

    sync_blocks = {cfg.block_of(i) for i, inst in enumerate(insts)
                   if inst.opcode in ("bar", "barrier") and "warp" not in inst.modifiers}
    warp_blocks = {cfg.block_of(i) for i, inst in enumerate(insts) if inst.opcode in _WARP_OPS}
    reaches = {b: (nx.descendants(g, b) | {b}) for b in reachable}
    nosync = {b for b in reachable if not (reaches[b] & sync_blocks)}
    why, divergent, divergent_blocks = _divergent_sync(function, cfg, reachable, reaches,
                                                       sync_blocks | warp_blocks, nosync, loops)
    if why:
        return why
    label_block = {name: cfg._label_block(ir.Sym(name), insts[0]) for name in function.labels}
    return VectorPlan(cfg, order, loop_ends, nosync, label_block, divergent, divergent_blocks,
                      loops)


def _ordered_blocks(cfg, reachable, loops):
    """A topological order of the blocks (back edges ignored) in which every loop's blocks
    are contiguous, header first; None when the CFG does not allow one."""
    g = cfg.graph

    def order_region(nodes: set, header):
        inner = {h: b for h, b in loops.items() if h != header and h in nodes and b <= nodes}
        # maximal inner loops: not contained in another inner loop
        top = {h: b for h, b in inner.items()
               if not any(h2 != h and b < b2 for h2, b2 in inner.items())}
        rep = {}
        for h, b in top.items():
            for n in b:
                rep[n] = h
        dag = nx.DiGraph()
        for n in nodes:
            dag.add_node(rep.get(n, n))
        for n in nodes:
            for s in g.successors(n):
                if s < 0 or s not in nodes or s == header:
                    continue
                a, c = rep.get(n, n), rep.get(s, s)
                if a != c:
                    dag.add_edge(a, c)
        if not nx.is_directed_acyclic_graph(dag):
            return None
        start = rep.get(header, header) if header is not None else 0
        out = []
        for n in nx.lexicographical_topological_sort(dag, key=lambda x: (x != start, x)):
            if n in top:
                sub = order_region(top[n], n)
                if sub is None:
                    return None
                out += sub
            else:
                out.append(n)
        if header is not None and out[0] != header:
            return None
        return out

    order = order_region(set(reachable), None)
    if order is None or order[0] != 0:
        return None
    return order


def _divergent_sync(function, cfg, reachable, reaches, sync_blocks, nosync, loops):
    """(Why some barrier or warp operation could be reached by part of a warp, or None; the
    registers that may differ between the lanes of a warp)."""
    insts = function.instructions
    divergent: set = set()
    ipdom = cfg.immediate_post_dominators
    regions: dict = {}

    def region(b):
        if b not in regions:
            stop = ipdom.get(b)
            seen, stack = set(), [s for s in cfg.successors(b) if s >= 0]
            while stack:
                n = stack.pop()
                if n in seen or n == stop or n < 0:
                    continue
                seen.add(n)
                stack += [s for s in cfg.successors(n) if s >= 0]
            regions[b] = seen
        return regions[b]

    def names(op):
        out = set()
        if isinstance(op, ir.Reg):
            out.add(op.name)
        elif isinstance(op, ir.Addr) and op.base is not None:
            out |= names(op.base)
        elif isinstance(op, ir.Pair):
            out |= names(op.first) | names(op.second)
        elif isinstance(op, (ir.Vec,)):
            for item in op.items:
                if item is not None:
                    out |= names(item)
        return out

    # Operands of each instruction, and the definitions reaching each use (registers are
    # reused by compilers: a copy of a loop counter is uniform even when a later value of the
    # same register is not, so divergence is tracked per definition, not per name).
    uses, defs = [], []
    for inst in insts:
        nd = len(inst.destinations)
        d, u = set(), set()
        for k, op in enumerate(inst.operands):
            if k < nd and not isinstance(op, ir.Addr):
                d |= names(op)
                if inst.reads_destinations:
                    u |= names(op)
            else:
                u |= names(op)
        guard = names(inst.guard) if inst.guard is not None else set()
        uses.append((u, guard))
        defs.append(d)
    reaching = _reaching_definitions(insts, defs, cfg, reachable)
    same_for_every_reader = _uniform_under_divergence(insts, defs, uses, reaching, cfg, loops)

    div_defs: set = set()           # (instruction index, register) definitions that diverge
    divergent_blocks: set = set()   # blocks where the lanes of a warp may differ
    split_blocks: set = set()       # ... among lanes that may still reach a barrier

    def diverges(i, regs) -> bool:
        return any(r.startswith(_DIVERGENT_SPECIALS) or (d, r) in div_defs
                   for r in regs for d in reaching[i].get(r, ()))

    changed = True
    while changed:
        changed = False
        for i, inst in enumerate(insts):
            if i not in reaching:
                continue                    # unreachable code
            srcs, guard = uses[i]
            blk = cfg.block_of(i)
            if inst.opcode in ("vote", "activemask"):
                # the same result in every lane that executes it together
                is_div = blk in divergent_blocks or diverges(i, guard)
            else:
                # (a lane's share of a matrix differs from its neighbours' whatever the
                # operands: its fragment, or its row of ldmatrix)
                under_divergence = blk in divergent_blocks and i not in same_for_every_reader
                is_div = under_divergence or inst.opcode in ("atom", "shfl", *_MATRIX_OPS) \
                    or diverges(i, srcs | guard) \
                    or any(r.startswith(_DIVERGENT_SPECIALS) for r in srcs | guard)
            if is_div:
                new = {(i, r) for r in defs[i]} - div_defs
                if new:
                    div_defs |= new
                    changed = True
            if inst.opcode in ("bra", "ret", "exit") and (diverges(i, guard) or any(
                    r.startswith(_DIVERGENT_SPECIALS) for r in guard)):
                inside = region(blk)
                if inside - divergent_blocks:
                    divergent_blocks |= inside
                    changed = True
                # lanes that leave towards code with no barrier never wait again: only a
                # branch whose every side can reach a barrier splits the waiting lanes
                if all(s >= 0 and s not in nosync for s in cfg.successors(blk)):
                    split_blocks |= inside
    divergent = {r for _, r in div_defs}
    for b in split_blocks & sync_blocks:
        return (f"a barrier or warp operation under divergent control (block {b})", divergent,
                divergent_blocks)
    return None, divergent, divergent_blocks


def _uniform_under_divergence(insts, defs, uses, reaching, cfg, loops) -> set:
    """Instructions whose result is the same for every lane that reads it although only
    some lanes of a warp run them (a block under divergent control): the setup nvcc puts
    between ``if (i < n)`` and a grid-stride loop (the stride, the global pointers). True of
    a pure instruction that is the only definition of each register it writes, outside every
    loop (so a warp runs it once, every lane that gets there at the same time: no lane can
    keep an older iteration's value), when every read of those registers is reached by this
    definition alone (never by the value at entry: so only lanes that ran it read it). Its
    registers are then scalars; with uniform operands they hold what each lane computes. A
    register defined twice stays a vector: lanes on the other side of a branch would
    overwrite the one scalar another lane still needs."""
    count: dict = {}
    for d in defs:
        for r in d:
            count[r] = count.get(r, 0) + 1
    in_loop = set().union(*loops.values()) if loops else set()
    readers: dict = {}
    for j, (u, guard) in enumerate(uses):
        for r in u | guard:
            readers.setdefault(r, []).append(j)
    out = set()
    for i, inst in enumerate(insts):
        if i not in reaching or not defs[i] or inst.guard is not None \
                or inst.opcode not in _UNIFORM_SAFE or "cc" in inst.modifiers \
                or cfg.block_of(i) in in_loop:
            continue
        if all(count[r] == 1 and all(reaching[j].get(r) == frozenset((i,))
                                     for j in readers.get(r, ()) if j in reaching)
               for r in defs[i]):
            out.add(i)
    return out


# -- lane steps ------------------------------------------------------------------------------
_UNKNOWN = object()


def _same(a, b) -> bool:
    return a is b or (a is not _UNKNOWN and b is not _UNKNOWN and a == b)


def lane_steps(function: ir.Function, divergent: set) -> dict:
    """register -> the difference between its values in neighbouring lanes of a half-warp,
    when it is the same static integer for every definition, else None.

    When the block's x extent is a multiple of 16, ``%tid.x`` steps by 1 from lane to lane
    within each half-warp and ``%tid.y``/``%tid.z`` are uniform in each half, so an address
    ``base + tid.x * 4`` steps by 4 (each half-warp reads 16 consecutive words) and one made
    of ``tid.y`` steps by 0 (each half-warp reads one word). The translation uses this only
    as a guess of the access pattern, checked at run time before it is relied on, so the
    analysis may ignore wrap-around and control flow: a definition whose step cannot be
    told makes the register unknown."""
    steps = {r: None for r in divergent}
    known: dict = {}          # register -> step, or _UNKNOWN once two definitions disagree

    def step(op):
        if isinstance(op, (ir.Imm, ir.Sym)):
            return 0
        if not isinstance(op, ir.Reg) or op.negated:
            return _UNKNOWN
        if op.name == "%tid":
            return 1 if op.component == "x" else 0
        if op.name == "%laneid":
            return 1
        if op.name.startswith(("%lanemask", "%clock", "%globaltimer")):
            return _UNKNOWN
        if op.name in divergent:
            return known.get(op.name)           # None: not computed yet
        return 0                                # uniform register or special register

    def product(a, b, ka, kb):
        """Step of a * b from the operands' steps and immediate values."""
        if a == 0 and b == 0:
            return 0
        if kb is not None and a is not _UNKNOWN:
            return a * kb
        if ka is not None and b is not _UNKNOWN:
            return b * ka
        return _UNKNOWN

    def imm(op):
        return op.value if isinstance(op, ir.Imm) and isinstance(op.value, int) else None

    def transfer(inst):
        op, ops = inst.opcode, inst.operands
        types = inst.types
        if not types or types[-1] in ("f16", "f16x2", "bf16", "bf16x2", "f32", "f64", "pred") \
                or any(m in inst.modifiers for m in ("cc", "hi", "sat")):
            return _UNKNOWN
        srcs = ops[1:]
        s = [step(o) for o in srcs]
        if any(x is None for x in s):
            return None
        if op in ("mov", "cvt", "cvta") and len(srcs) == 1 and not isinstance(srcs[0], ir.Vec):
            return s[0]
        if op in ("add", "sub") and len(srcs) == 2:
            if _UNKNOWN in s:
                return _UNKNOWN
            return s[0] + s[1] if op == "add" else s[0] - s[1]
        if op == "mul" and len(srcs) == 2:
            return product(s[0], s[1], imm(srcs[0]), imm(srcs[1]))
        if op == "shl" and len(srcs) == 2:
            k = imm(srcs[1])
            if s[1] == 0 and k is not None and 0 <= k < 64 and s[0] is not _UNKNOWN:
                return s[0] << k
            return 0 if s == [0, 0] else _UNKNOWN
        if op == "mad" and len(srcs) == 3:
            p = product(s[0], s[1], imm(srcs[0]), imm(srcs[1]))
            return _UNKNOWN if _UNKNOWN in (p, s[2]) else p + s[2]
        if op == "shr" and len(srcs) == 2:
            # x >> k, the warp of a thread (``tid.x >> 5``): one value per half-warp unless
            # its run of 16 steps straddles a multiple of 2**k
            k = imm(srcs[1])
            if s[1] == 0 and k is not None and 0 <= k < 64 and s[0] is not _UNKNOWN \
                    and (1 << k) >= 16 * abs(s[0]):
                return 0
            return 0 if s == [0, 0] else _UNKNOWN
        if op == "and" and len(srcs) == 2:
            # x & (2**k - 1), the lane of a warp-strided loop (``tid.x & 31``): a half-warp's
            # run of 16 steps stays whole unless it straddles a multiple of 2**k
            for a, mask in ((s[0], imm(srcs[1])), (s[1], imm(srcs[0]))):
                if a is not _UNKNOWN and mask is not None and mask > 0 \
                        and mask & (mask + 1) == 0 and mask + 1 >= 16 * abs(a):
                    return a
            return 0 if s == [0, 0] else _UNKNOWN
        return _UNKNOWN

    changed = True
    while changed:
        changed = False
        for inst in function.instructions:
            dests = [o for o in inst.operands[:len(inst.destinations)]
                     if isinstance(o, ir.Reg) and o.name in divergent]
            if not dests:
                continue
            value = transfer(inst) if len(dests) == 1 else _UNKNOWN
            if value is None:
                continue
            for d in dests:
                old = known.get(d.name)
                new = value if old is None or _same(old, value) else _UNKNOWN
                if old is None or not _same(old, new):
                    known[d.name] = new
                    changed = True
    for r, v in known.items():
        if v is not _UNKNOWN:
            steps[r] = v
    return steps
