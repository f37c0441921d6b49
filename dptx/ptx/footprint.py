"""Access footprints: which bytes of each buffer a range of thread blocks may read and write
(DESIGN.md point 6).

    fp = kernel_footprint(module, function)          # once per kernel, no launch values
    fp.evaluate(grid, block, scalars, ranges, sizes) # per launch, on the client, fast
    -> [{target: Access(reads=((lo, hi), ...), writes=(...))} for each range]

A *target* is a buffer the kernel can reach: ``("param", i)`` for a pointer parameter,
``("var", name)`` for a ``.global``/``.const`` module variable. Intervals are half-open byte
offsets in the buffer, sorted, disjoint and clipped to it.

The model, in order:

1. ``value_graph``: the kernel in SSA form as a graph of symbolic values (leaves: constants,
   ``%tid``/``%ctaid``/``%ntid``/``%nctaid``, scalar parameter bytes, unknown data). Every
   address is a pointer node: an origin (target) plus an integer offset expression.
2. ``induction``: loops' affine induction variables and the exit tests that bound them.
3. ``footprint_codegen``: one generated Python function per kernel that evaluates every
   access's offset as an exact interval of Python ints for a *box* of blocks (a range of
   ``%ctaid.x`` x ``.y`` x ``.z``), narrowing values by the branch conditions that guard the
   access; a linear block range is cut into at most five boxes.
4. Here: which accesses exist, and the rules that make a target *whole* (its entire buffer)
   when the analysis cannot say better:

   - an address of unknown origin (loaded from memory, returned by a call, an integer
     parameter used as a pointer): every target, for that access's kind;
   - a target's address stored to memory (it escapes): whole for both kinds (read only
     when stored to local memory, as printf's argument buffer is);
   - calls: a device function's accesses through the pointers it receives make those
     targets whole for what it does (read, write); ``vprintf``/``__assertfail`` read their
     string arguments; any other external function, or an indirect call, makes everything
     whole;
   - ``.address_size 32`` modules, irreducible control flow, and memory instructions this
     analysis does not model (textures, bulk copies...): everything whole.

Soundness: every thread of every block of a range accesses only bytes inside the returned
intervals, under these assumptions: device addresses and offsets stay below 2**62 and two
pointers into one buffer compare as their offsets (no wrap around address 0 between them);
a loop whose exit tests give no trip count runs fewer than 2**40 iterations per thread
(``intervals.MAX_TRIPS``); a register read on a path where it was never written is taken
to be unused there (a kernel that read it would compute from garbage anyway). Bytes outside
a buffer are never in its footprint: an access there faults whatever the footprint says.

Results of ``evaluate`` are also remembered for the last few launches of the kernel
(iterative programs launch the same kernel with the same arguments again and again).
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from . import calls, ir
from . import value_graph as vg
from . import value_nodes as vn
from .analysis import UNKNOWN
from .footprint_codegen import HELPERS, Emitter
from .guards import Guards, narrowings
from .induction import analyse_loops

ANY_TARGET = "*"
READ, WRITE = calls.READ, calls.WRITE
access_space = calls.access_space


class Access(NamedTuple):
    """What a block range may do to one buffer: sorted, disjoint, half-open byte intervals
    ``((lo, hi), ...)`` relative to the buffer's start."""
    reads: tuple
    writes: tuple


@dataclass
class _Site:
    """One memory access through one possible origin."""
    kinds: str              # "r", "w" or "rw"
    target: tuple
    offset: object          # integer node: the address minus the target's base
    const: int              # the [reg+const] part
    size: int               # bytes accessed
    line: int
    block: int
    guard: object           # (predicate node, holds) of the instruction's own guard
    params_as_numbers: frozenset = frozenset()   # see value_graph: taint by parameters


@dataclass
class _Static:
    """What the instruction walk found: sites, and targets made whole with their reasons."""
    sites: list = field(default_factory=list)
    whole: dict = field(default_factory=dict)        # (target or ANY, kind) -> reason
    dynamic: list = field(default_factory=list)      # (params, target or ANY, kinds, reason)
    targets: set = field(default_factory=set)
    call_summaries: dict = field(default_factory=dict)   # device function -> calls.summary

    def make_whole(self, target, kinds, reason):
        for k in kinds:
            self.whole.setdefault((target, k), reason)
        if target != ANY_TARGET:
            self.targets.add(target)


def access_size(inst):
    vec = 1
    for m in inst.modifiers:
        if m in ("v2", "v4", "v8"):
            vec = int(m[1:])
    types = inst.types
    if not types:
        return None
    return ir.TYPE_SIZES[types[-1]] * vec


# ----------------------------------------------------------------------------------------------
# The static walk
# ----------------------------------------------------------------------------------------------
def _collect(module, function, b) -> _Static:
    st = _Static()
    for i, inst in enumerate(b.insts):
        block = b.cfg.block_of(i)
        if block not in b.reachable:
            continue
        op = inst.opcode
        if op == "call":
            _call(module, b, st, i, inst)
            continue
        if op in ("st", "atom", "red"):
            _escapes(b, st, i, inst)
        if op in ("ld", "ldu", "st", "atom", "red"):
            kinds = {"ld": READ, "ldu": READ, "st": WRITE, "atom": READ + WRITE,
                     "red": WRITE}[op]
            addr = inst.operands[0 if op in ("st", "red") else 1]
            _access(b, st, i, inst, kinds, addr, access_size(inst), access_space(inst))
        elif calls.is_async_copy(inst):        # global -> shared: reads its source
            size = inst.operands[2]
            size = size.value if isinstance(size, ir.Imm) and size.kind == "int" else None
            _access(b, st, i, inst, READ, inst.operands[1], size, "global")
        elif calls.touches_memory(inst):
            st.make_whole(ANY_TARGET, READ + WRITE,
                          f"line {inst.line}: {inst.full_opcode} is not analysed")
    return st


def _address_node(b, i, addr, space):
    """The pointer node of a memory operand (None: an address of unknown origin)."""
    if not isinstance(addr, ir.Addr):
        return None
    if isinstance(addr.base, ir.Reg):
        if space != "generic" and space not in ("global", "const"):
            return None
        if b.reg_width(addr.base.name) != 64:
            return None                    # a 32-bit generic or global address
        node = b.value_at.get((i, addr.base.name))
        return None if node is None else b.as_pointer(node)
    if isinstance(addr.base, ir.Sym):
        return b.symbol_address(addr.base.name)
    return None


def _access(b, st, i, inst, kinds, addr, size, space):
    if space in ("shared", "local", "param"):
        return
    line = inst.line
    ptr = _address_node(b, i, addr, space)
    if ptr is None or size is None:
        st.make_whole(ANY_TARGET, kinds, f"line {line}: address not analysed (a 32-bit or "
                                         f"absolute address, or an unknown size)")
        return
    guard = None
    if inst.guard is not None:
        guard = (b.value_at[(i, inst.guard.name)], not inst.guard.negated)
    for key, offset in zip(ptr.attrs, ptr.args):
        if key in vn.SPACE_ORIGINS:
            continue                       # shared, local or parameter memory: not a buffer
        if key == vn.UNKNOWN_ORIGIN:
            st.make_whole(ANY_TARGET, kinds, f"line {line}: address of unknown origin (a "
                                             f"pointer or 64-bit value loaded from memory, a "
                                             f"call's result, or a number)")
            continue
        if vn.ANY in offset.taint:
            st.make_whole(ANY_TARGET, kinds, f"line {line}: address offset loaded from memory "
                                             f"(a 64-bit value may be a pointer)")
            continue
        st.targets.add(key)
        params = frozenset(t for t in offset.taint if t != vn.ANY)
        st.sites.append(_Site(kinds, key, offset, addr.offset, size, line,
                              b.cfg.block_of(i), guard, params))


def _pointer_targets(node):
    """(targets, unknown, params): the buffers a value may point into, whether it may point
    anywhere, and the parameters whose use as numbers would make it point anywhere."""
    targets, unknown, params = set(), False, set()
    if node.op == vn.PTR:
        for key, off in zip(node.attrs, node.args):
            if key == vn.UNKNOWN_ORIGIN:
                unknown = True
            elif key not in vn.SPACE_ORIGINS:
                targets.add(key)
            unknown |= vn.ANY in off.taint
            params |= {t for t in off.taint if t != vn.ANY}
    else:
        unknown = vn.ANY in node.taint
        params = {t for t in node.taint if t != vn.ANY}
    return targets, unknown, params


def _escapes(b, st, i, inst):
    """A target's address written to memory escapes this analysis."""
    space = access_space(inst)
    if space == "param":
        return
    if not calls.stores_64_bits(inst):
        return                             # part of a pointer is no pointer
    local = space == "local" or _stores_to_local(b, i, inst)
    kinds = READ if local else READ + WRITE
    where = "local memory" if local else "memory"
    for node in b.value_at.get((i, "stored"), []):
        targets, _, params = _pointer_targets(node)
        for t in targets:
            st.make_whole(t, kinds, f"line {inst.line}: its address is stored to {where}")
        for index in params:               # a pointer argument stored as a number
            st.dynamic.append((frozenset({index}), ("param", index), kinds,
                               f"line {inst.line}: its address is stored to {where}"))


def _stores_to_local(b, i, inst) -> bool:
    addr = inst.operands[0]
    node = _address_node(b, i, addr, "generic")
    return node is not None and set(node.attrs) == {"local"}


# -- calls -------------------------------------------------------------------------------------
def _call(module, b, st, i, inst):
    line = inst.line
    callee, args = calls.call_operands(inst)
    if not isinstance(callee, ir.Sym) or callee.name not in b.function_names:
        st.make_whole(ANY_TARGET, READ + WRITE, f"line {line}: indirect call")
        return
    f = module.function(callee.name)
    if f.body is None and f.name not in calls.STRING_FUNCTIONS:
        st.make_whole(ANY_TARGET, READ + WRITE, f"line {line}: call to external {f.name}")
        return
    summary = calls.string_summary(len(args)) if f.body is None else \
        calls.summary(module, f, st.call_summaries)
    stores = b.param_stores.get(i, {})
    arg_nodes = [stores.get(a.name, []) if isinstance(a, ir.Sym) else [] for a in args]
    for kind, kinds, what in ((READ, READ, "reads"), (WRITE, WRITE, "writes"),
                              (calls.ESCAPE, READ + WRITE, "stores the address of")):
        for origins in summary[kind]:
            _call_access(st, origins, arg_nodes, kinds,
                         f"line {line}: {f.name} {what} memory through it")


def _call_access(st, origins, arg_nodes, kinds, reason):
    """One access of a callee, made from ``origins``: the buffers the kernel's values
    point into are whole for it; with no pointer among them, every buffer is."""
    targets, unknown, params, pointer = set(), False, set(), False
    for o in origins:
        if o == UNKNOWN or (o[0] == "arg" and o[1] >= len(arg_nodes)):
            unknown = True
        elif o[0] == "var":
            targets.add(o)
            pointer = True
        else:
            for node in arg_nodes[o[1]]:
                if node.op == vn.CONST and node.attrs == 0:
                    pointer = True            # a null pointer: nothing behind it
                    continue
                t, u, p = _pointer_targets(node)
                targets |= t
                unknown |= u
                params |= p
                pointer |= node.op == vn.PTR
    for t in targets:
        st.make_whole(t, kinds, reason)
    if unknown or not (pointer or params):
        st.make_whole(ANY_TARGET, kinds, reason.replace("through it", "of unknown origin"))
    if params:
        st.dynamic.append((frozenset(params), ANY_TARGET, kinds, reason))


# ----------------------------------------------------------------------------------------------
# The footprint
# ----------------------------------------------------------------------------------------------
_RECENT = 16       # evaluations remembered per kernel


class KernelFootprint:
    """The access footprint of one kernel; see the module docstring."""

    def __init__(self, name, targets, pointer_params, scalar_params, whole, dynamic, sites,
                 function, source):
        self.kernel = name
        self.targets = tuple(sorted(targets, key=str))
        self.pointer_params = tuple(sorted(pointer_params))
        self.scalar_params = tuple(sorted(scalar_params))
        self._whole = whole            # (target or ANY, kind) -> reason
        self._dynamic = dynamic
        self._sites = sites            # per access: (target, kinds, line, params)
        self._run = function
        self.source = source
        self._recent: dict = {}        # the last evaluations (launches repeat themselves)
        self._read_sites: dict = {}
        self._write_sites: dict = {}
        for index, (target, kinds, _, _) in enumerate(sites):
            if READ in kinds:
                self._read_sites.setdefault(target, []).append(index)
            if WRITE in kinds:
                self._write_sites.setdefault(target, []).append(index)

    def __repr__(self):
        whole = ", ".join(f"{t}{'/'.join(k)}" for t, k in sorted(
            ((t, tuple(sorted(v))) for t, v in self.whole.items()), key=str))
        return (f"<KernelFootprint {self.kernel}: {len(self.targets)} targets, "
                f"{len(self._sites)} accesses{', whole: ' + whole if whole else ''}>")

    @property
    def whole(self) -> dict:
        """{target or "*": {"r": reason, "w": reason}}: what is whole for any launch."""
        out: dict = {}
        for (t, k), reason in self._whole.items():
            out.setdefault(t, {})[k] = reason
        return out

    def reason(self, target, kind=None):
        """Why ``target`` is whole for every launch (reads for kind "r", writes for "w",
        either when None), or None."""
        for k in ((kind,) if kind else (READ, WRITE)):
            found = self._whole.get((target, k)) or self._whole.get((ANY_TARGET, k))
            if found:
                return found
        return None

    # -- evaluation ------------------------------------------------------------------------
    def evaluate(self, grid, block, scalars, ranges, sizes, explain=None) -> list:
        """For each block range (b0, b1), {target: Access(reads, writes)} with the byte
        intervals the blocks b0..b1-1 may read and write in each buffer of ``sizes``
        ({target: nbytes}). ``scalars``: {parameter index: little-endian bytes} of the
        non-pointer parameters. ``explain``: a dict to fill with target -> reason for the
        targets that come out whole."""
        grid = _triple(grid)
        block = _triple(block)
        key = None
        if explain is None:
            try:
                key = (grid, block, tuple(sorted((i, bytes(v)) for i, v in scalars.items())),
                       tuple((int(b0), int(b1)) for b0, b1 in ranges), tuple(sizes.items()))
                found = self._recent.get(key)
            except TypeError:
                key = found = None
            if found is not None:
                return [dict(r) for r in found]
        results = self._evaluate(grid, block, scalars, ranges, sizes, explain)
        if key is not None:
            try:
                if len(self._recent) >= _RECENT:
                    self._recent.pop(next(iter(self._recent)))
                self._recent[key] = results
            except (KeyError, RuntimeError, StopIteration):
                pass                       # another thread evaluating at the same time
            results = [dict(r) for r in results]
        return results

    def _evaluate(self, grid, block, scalars, ranges, sizes, explain):
        buffers = {t[1] for t in sizes if t[0] == "param"}
        whole_read, whole_write = self._launch_wholes(sizes, scalars, buffers, explain)
        all_read = ANY_TARGET in whole_read
        all_write = ANY_TARGET in whole_write
        nblocks = grid[0] * grid[1] * grid[2]
        boxes = [block_boxes(grid, max(0, b0), min(b1, nblocks)) for b0, b1 in ranges]
        if all_read and all_write:
            per_range = [None] * len(boxes)
        else:
            per_range = self._run(grid, block, scalars, boxes)
        # per target and kind: the whole buffer, nothing, or the accesses to merge
        plan = [(target, nbytes,
                 self._kind_plan(target, nbytes, whole_read, self._read_sites),
                 self._kind_plan(target, nbytes, whole_write, self._write_sites))
                for target, nbytes in sizes.items()]
        results = []
        for lists in per_range:
            result = {}
            for target, nbytes, reads, writes in plan:
                if type(reads) is list:
                    reads = merge_intervals([x for i in reads for x in lists[i]], nbytes)
                if type(writes) is list:
                    writes = merge_intervals([x for i in writes for x in lists[i]], nbytes)
                if reads or writes:
                    result[target] = Access(reads, writes)
            results.append(result)
        if explain is not None:
            self._explain_covering(explain, plan, per_range, results)
        return results

    @staticmethod
    def _kind_plan(target, nbytes, whole, sites):
        """((0, nbytes),) when whole for this launch, () when never accessed, else the list
        of the accesses whose intervals make the footprint."""
        if target in whole or ANY_TARGET in whole:
            return ((0, nbytes),) if nbytes else ()
        return list(sites.get(target, ())) or ()

    def _explain_covering(self, explain, plan, per_range, results):
        """Reasons for the targets that came out whole from their addresses."""
        for lists, result in zip(per_range, results):
            for target, nbytes, reads, writes in plan:
                access = result.get(target)
                for indices, got in ((reads, access and access.reads),
                                     (writes, access and access.writes)):
                    if type(indices) is not list or got != ((0, nbytes),) or not nbytes:
                        continue
                    lines = sorted({self._sites[i][2] for i in indices if lists[i]})
                    explain.setdefault(target, f"line{'s' if len(lines) > 1 else ''} "
                                               f"{', '.join(map(str, lines))}: the addresses "
                                               f"cover the buffer")

    def _launch_wholes(self, sizes, scalars, buffers, explain):
        """(reads, writes): targets whole for this launch -> reason ("*": all of them)."""
        out = ({}, {})
        for (target, kind), reason in self._whole.items():
            out[0 if kind == READ else 1].setdefault(target, reason)

        def is_buffer(i):
            return i in buffers or i not in scalars

        for params, target, kinds, reason in self._dynamic:
            if any(is_buffer(i) for i in params):
                for k in kinds:
                    out[0 if k == READ else 1].setdefault(target, reason)
        for target, kinds, line, params in self._sites:
            why = None
            if target not in sizes:
                why = f"line {line}: {_name(target)} is not a buffer of this launch"
            elif any(is_buffer(i) for i in params):
                why = f"line {line}: a pointer argument is used as a number in the address"
            if why:
                for k in kinds:
                    out[0 if k == READ else 1].setdefault(ANY_TARGET, why)
        if explain is not None:
            for d in out:
                for t, reason in d.items():
                    for s in (sizes if t == ANY_TARGET else (t,) if t in sizes else ()):
                        explain.setdefault(s, reason)
        return out


def _name(target) -> str:
    return f"argument {target[1]}" if target[0] == "param" else f"variable {target[1]}"


def _triple(dims) -> tuple:
    dims = tuple(int(d) for d in (dims if isinstance(dims, (tuple, list)) else (dims,)))
    return dims + (1,) * (3 - len(dims))


def merge_intervals(intervals, nbytes) -> tuple:
    """Half-open intervals clipped to [0, nbytes), sorted and merged; the whole buffer when
    one of them may wrap around the 64-bit address space."""
    if len(intervals) == 1:
        lo, hi = intervals[0]
        if lo < -(1 << 63) or hi > 1 << 63:
            return ((0, nbytes),) if nbytes else ()
        lo, hi = max(lo, 0), min(hi, nbytes)
        return ((lo, hi),) if lo < hi else ()
    out: list = []
    low, high = -(1 << 63), 1 << 63
    cur_lo = cur_hi = None
    for lo, hi in sorted(intervals):
        if lo < low or hi > high:
            return ((0, nbytes),) if nbytes else ()
        if lo < 0:
            lo = 0
        if hi > nbytes:
            hi = nbytes
        if lo >= hi:
            continue
        if cur_hi is not None and lo <= cur_hi:
            if hi > cur_hi:
                cur_hi = hi
            continue
        if cur_hi is not None:
            out.append((cur_lo, cur_hi))
        cur_lo, cur_hi = lo, hi
    if cur_hi is not None:
        out.append((cur_lo, cur_hi))
    return tuple(out)


def block_boxes(grid, b0, b1) -> list:
    """Linear block ids b0..b1-1 (x fastest) as at most five boxes
    (x0, x1, y0, y1, z0, z1), inclusive: partial first row, full rows, full planes, full
    rows, partial last row."""
    gx, gy, gz = grid
    if b1 <= b0:
        return []
    plane = gx * gy
    x0, y0, z0 = b0 % gx, (b0 // gx) % gy, b0 // plane
    last = b1 - 1
    x1, y1, z1 = last % gx, (last // gx) % gy, last // plane
    if (y0, z0) == (y1, z1):
        return [(x0, x1, y0, y0, z0, z0)]
    boxes = []
    if x0 > 0:                                   # partial first row
        boxes.append((x0, gx - 1, y0, y0, z0, z0))
        y0 += 1
        if y0 == gy:
            y0, z0 = 0, z0 + 1
    tail = None
    if x1 < gx - 1:                              # partial last row
        tail = (0, x1, y1, y1, z1, z1)
        y1 -= 1
        if y1 < 0:
            y1, z1 = gy - 1, z1 - 1
    if (z0, y0) <= (z1, y1):
        if z0 == z1:
            boxes.append((0, gx - 1, y0, y1, z0, z0))
        else:
            if y0 > 0:
                boxes.append((0, gx - 1, y0, gy - 1, z0, z0))
                z0 += 1
            end_rows = None
            if y1 < gy - 1:
                end_rows = (0, gx - 1, 0, y1, z1, z1)
                z1 -= 1
            if z0 <= z1:
                boxes.append((0, gx - 1, 0, gy - 1, z0, z1))
            if end_rows:
                boxes.append(end_rows)
    if tail:
        boxes.append(tail)
    return boxes


# ----------------------------------------------------------------------------------------------
# Building
# ----------------------------------------------------------------------------------------------
def kernel_footprint(module: ir.Module, function: ir.Function) -> KernelFootprint:
    """The footprint of a kernel, built once per function object (kept beside it, not on
    it: the IR stays plain data that pickles)."""
    found = _BUILT.get(id(function))
    if found is not None and found[0]() is function:
        return found[1]
    fp = _build(module, function)
    key = id(function)
    _BUILT[key] = (weakref.ref(function, lambda _, key=key: _BUILT.pop(key, None)), fp)
    return fp


_BUILT: dict = {}      # id(function) -> (weak reference to it, its KernelFootprint)


def _everything_whole(function, reason) -> KernelFootprint:
    whole = {(ANY_TARGET, READ): reason, (ANY_TARGET, WRITE): reason}
    return KernelFootprint(function.name, (), (), (), whole, [], [],
                           lambda *a: None, "")


def _build(module, function) -> KernelFootprint:
    if function.body is None:
        raise ValueError(f"{function.name} is a declaration without a body")
    if module.address_size != 64:
        return _everything_whole(function, "32-bit addresses (.address_size 32)")
    b = vg.Builder(module, function).build()
    if b.irreducible:
        return _everything_whole(function, "irreducible control flow")
    st = _collect(module, function, b)
    loops = analyse_loops(b)
    guards = Guards(b)
    em = Emitter(b, loops, guards)
    append_lines = []
    live_sites = []
    for site in _merged_sites(st.sites):
        index = len(live_sites)
        live_sites.append((site.target, site.kinds, site.line, site.params_as_numbers))
        append_lines.append(_site_code(em, guards, site, index))
    source = _source(em, append_lines, len(live_sites))
    namespace = dict(HELPERS)
    exec(compile(source, f"<footprint {function.name}>", "exec"), namespace)
    pointer_params = {t[1] for t in st.targets if t[0] == "param"}
    scalar_params = {n.attrs[0] for n in b.g.nodes if n.op == vn.SCALAR}
    return KernelFootprint(function.name, st.targets, pointer_params, scalar_params,
                           st.whole, st.dynamic, live_sites, namespace["evaluate_boxes"],
                           source)


def _merged_sites(sites) -> list:
    """Accesses to one address at one place under the same conditions, at offsets that
    touch (an unrolled loop's [p], [p+4], [p+8]...), as one access: for any interval of p
    their union is then the hull."""
    groups: dict = {}
    for site in sites:
        guard = None if site.guard is None else (site.guard[0].id, site.guard[1])
        key = (site.target, site.kinds, site.offset.id, site.block, guard,
               site.params_as_numbers)
        groups.setdefault(key, []).append(site)
    out = []
    for group in groups.values():
        group.sort(key=lambda s: s.const)
        current = None
        for site in group:
            if current is not None and site.const <= current.const + current.size:
                end = max(current.const + current.size, site.const + site.size)
                current = replace(current, size=end - current.const)
            else:
                if current is not None:
                    out.append(current)
                current = site
        out.append(current)
    return out


def _site_code(em, guards, site, index):
    """The lines that append one access's interval for the current box."""
    facts = guards.facts_at(site.block)
    nar, atoms = narrowings(guards, facts, site.block, site.guard)
    lo, hi, box, flags = em.value(site.offset, frozenset(nar))
    flag_vars = {f for f, _, _ in flags}
    box = box or any(fbox for _, fbox, _ in flags)
    for atom in atoms:
        flag, fbox = em.dead(atom)
        flag_vars.add(flag)
        box = box or fbox
    start = site.const
    end = site.const + site.size
    cond = " or ".join(sorted(flag_vars))
    append = f"A{index}.append(({lo} + {start}, {hi} + {end}))"
    return (f"if not ({cond}): {append}" if cond else append), box


def _source(em, append_lines, count) -> str:
    lists = ", ".join(f"A{i}" for i in range(count))
    out = ["def evaluate_boxes(G, B, S, boxes_per_range):",
           "    ncx, ncy, ncz = G",
           "    ntx, nty, ntz = B",
           "    tx1, ty1, tz1 = ntx - 1, nty - 1, ntz - 1",
           "    lane1 = min(31, ntx * nty * ntz - 1)"]
    out += ["    " + line for line in em.launch_lines]
    launch_appends = [line for line, box in append_lines if not box]
    box_appends = [line for line, box in append_lines if box]
    out.append("    results = []")
    out.append("    for boxes in boxes_per_range:")
    for i in range(count):
        out.append(f"        A{i} = []")
    if launch_appends:
        # accesses that do not depend on the box: once per range (when it has blocks)
        out.append("        if boxes:")
        out += ["            " + line for line in launch_appends]
    if em.box_lines or box_appends:
        out.append("        for cx0, cx1, cy0, cy1, cz0, cz1 in boxes:")
        out += ["            " + line for line in em.box_lines]
        out += ["            " + line for line in box_appends]
    out.append(f"        results.append(({lists}{',' if count == 1 else ''}))")
    out.append("    return results")
    return "\n".join(out) + "\n"
