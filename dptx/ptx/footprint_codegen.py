"""Code generation for the access-footprint analysis: turns the value graph of a kernel, its
guards and its loops into one Python function that evaluates every access's byte interval
for a list of block boxes, at launch time, with no walking of objects.

The generated function has two parts. Its prologue computes what depends only on the launch
(block and grid sizes, scalar parameters, values built from them); its loop body runs once
per box of blocks (``cx0..cx1`` x ``cy0..cy1`` x ``cz0..cz1``) and appends one interval per
access to that access's list.

Guards (``guards.py``). The narrowings that hold at an access apply to the nodes of its
address: the node's interval, read the comparison's way (s32, u64...), is intersected with
what the comparison allows given the other side's default interval, then moved to the
node's alignment (a multiple of 4 for a float offset). A narrowing that comes out empty, or
any comparison at the access that no value of the box can satisfy, makes the access
unreachable for the box: its interval is not appended.

Loops (``induction.py``). A phi is evaluated once per box, in the context of the guards that
dominate its loop's header: an induction variable gives ``init + j*step`` for j up to the
loop's trip bound (``intervals.trip_bound`` per exit test, the smallest wins; none:
``MAX_TRIPS``), a tested one is also capped by its own test; any other phi is "any value".
A loop whose entry conditions cannot hold in the box is not entered: the values that come
only from it make their uses unreachable, and joins leave them out.

Every expression is emitted once (the same text is the same value) and folded when it has
only literals; launch-level code is hoisted out of the loop over boxes.
"""
from __future__ import annotations

import re

from . import intervals as iv
from . import value_nodes as vn
from .guards import narrowings, useful

# the names the generated code calls
HELPERS = {
    "_norm": iv.norm, "_mul": iv.mul, "_mulw": iv.mul_wide, "_mulwc": iv.mul_wide_const,
    "_mulhi": iv.mul_hi, "_shl": iv.shl, "_shr": iv.shr, "_min": iv.minimum,
    "_max": iv.maximum, "_abs": iv.absolute, "_div": iv.divide, "_rem": iv.remainder,
    "_rdown": iv.round_down,
    "_and": iv.bit_and, "_or": iv.bit_or, "_xor": iv.bit_xor, "_hull": iv.hull,
    "_hull_live": iv.hull_live, "_scalar": iv.scalar, "_narrow": iv.narrow,
    "_exclude": iv.exclude, "_fits": iv.sum_fits, "_align": iv.align, "_ivr": iv.iv_range,
    "_trip": iv.trip_bound, "_trips": iv.trips, "_cap": iv.cap,
}

_SPECIALS = {
    ("%tid", "x"): ("0", "tx1"), ("%tid", "y"): ("0", "ty1"), ("%tid", "z"): ("0", "tz1"),
    ("%ntid", "x"): ("ntx", "ntx"), ("%ntid", "y"): ("nty", "nty"), ("%ntid", "z"): ("ntz", "ntz"),
    ("%nctaid", "x"): ("ncx", "ncx"), ("%nctaid", "y"): ("ncy", "ncy"),
    ("%nctaid", "z"): ("ncz", "ncz"), ("%laneid", None): ("0", "lane1"),
}
_BOX_SPECIALS = {("%ctaid", "x"): ("cx0", "cx1"), ("%ctaid", "y"): ("cy0", "cy1"),
                 ("%ctaid", "z"): ("cz0", "cz1")}


def _selp_site(node) -> bool:
    """Whether a hull is a ``selp`` of two integers (site ("selp", predicate, x, y), its
    arguments x then y); a selp of pointers joins per buffer and is a plain hull."""
    site = node.site
    return isinstance(site, tuple) and len(site) == 4 and site[0] == "selp" and \
        len(node.args) == 2 and (node.args[0].id, node.args[1].id) == site[2:]


def _const_arg(node, i):
    arg = node.args[i]
    return arg.attrs if arg.op == vn.CONST else None


def _signed_division(node):
    """(x, 2**k) when ``node`` is the signed x / 2**k idiom: shr.s(x + bias, k) with bias
    shr.u(x, w-1) for k = 1, shr.u(shr.s(x, w-1), w-k) for any k; else None."""
    if node.op != vn.SHR or not node.attrs or node.args[0].op != vn.ADD:
        return None
    w, k = node.width, _const_arg(node, 1)
    if k is None or not 0 < k < w:
        return None
    total = node.args[0]
    for x, bias in (total.args, total.args[::-1]):
        if x.width != w or total.width != w or bias.op != vn.SHR or bias.attrs or \
                bias.width != w:
            continue
        inner, amount = bias.args[0], _const_arg(bias, 1)
        if inner is x and k == 1 and amount == w - 1:
            return x, 2
        if amount == w - k and inner.op == vn.SHR and inner.attrs and \
                inner.args[0] is x and _const_arg(inner, 1) == w - 1:
            return x, 1 << k
    return None


def _wlo(signed: bool, width: int) -> int:
    return -(1 << (width - 1)) if signed else 0


class Emitter:
    """Writes the evaluation function. ``value(node, ctx)`` returns the (lo, hi) expressions
    of a node under a set of narrowings, emitting the lines that compute them once."""

    def __init__(self, builder, loops, guards):
        self.b = builder
        self.g = builder.g
        self.loops = loops
        self.guards = guards
        self.launch_lines: list = []
        self.box_lines: list = []
        self._count = 0
        self._values: dict = {}
        self._bounds: dict = {}
        self._dead: dict = {}
        self._trips: dict = {}
        self._phis: dict = {}
        self._dag: dict = {}
        self._header_ctx: dict = {}
        self._exprs: dict = {}
        self._align: dict = {}
        self._stepping = 0          # > 0 while a loop's steps are evaluated

    # -- plumbing ------------------------------------------------------------------------
    def _var(self, prefix="v"):
        self._count += 1
        return f"{prefix}{self._count}"

    def _emit(self, line, box):
        (self.box_lines if box else self.launch_lines).append(line)

    def _assign(self, expr, box, count=1, prefix="v"):
        """Variables holding a pure expression, computed once however often it is asked
        for (the same text means the same value: variables are never reassigned)."""
        found = self._exprs.get(expr)
        if found is None:
            found = _constant(expr, count)
        if found is None:
            found = tuple(self._var(prefix) for _ in range(count))
            self._emit(f"{', '.join(found)} = {expr}", box)
        self._exprs[expr] = found
        return found if count > 1 else found[0]

    def nodes_by_id(self, i):
        return self.g.nodes[i]

    def dag(self, node) -> frozenset:
        """Ids of the nodes a value is computed from (a phi's own inputs are not: it is
        computed once, in its loop's context)."""
        found = self._dag.get(node.id)
        if found is None:
            found = frozenset({node.id})
            if node.op != vn.PHI:
                for a in node.args:
                    found = found | self.dag(a)
            self._dag[node.id] = found
        return found

    # -- values --------------------------------------------------------------------------
    def value(self, node, ctx=frozenset()):
        """(lo, hi, box, flags): expressions of the node's interval, whether they depend
        on the box, and the flags: (variable, box, loop) for the variables that are true when
        no thread of the box can use this value: a narrowing by the use's conditions came
        out empty (loop False), or a loop it comes from is not entered (loop True)."""
        ctx = useful(ctx, self.dag(node))
        # (a loop's steps are read without the selects' refinement: it evaluates other
        # phis, which may be evaluating this loop's: their values are kept apart)
        key = (node.id, ctx, self._stepping > 0)
        found = self._values.get(key)
        if found is None:
            own = [r for n, r in ctx if n is node]
            if own:
                # the node's own value first (shared with other contexts), then narrowed
                base = self.value(node, ctx - {(node, r) for r in own})
                found = self._apply(node, own, base)
            else:
                found = self._compute(node, ctx)
            self._values[key] = found
        return found

    def _compute(self, node, ctx):
        op = node.op
        if op == vn.CONST:
            return repr(node.attrs), repr(node.attrs), False, frozenset()
        if op == vn.RANGE:
            return repr(node.attrs[0]), repr(node.attrs[1]), False, frozenset()
        if op == vn.UNKNOWN or op in vn.PREDICATES or op == vn.PTR:
            lo, hi = iv.window(True, node.width)
            return repr(lo), repr(hi), False, frozenset()
        if op == vn.SPECIAL:
            if node.attrs in _BOX_SPECIALS:
                lo, hi = _BOX_SPECIALS[node.attrs]
                return lo, hi, True, frozenset()
            if node.attrs in _SPECIALS:
                lo, hi = _SPECIALS[node.attrs]
                return lo, hi, False, frozenset()
            lo, hi = iv.window(True, node.width)
            return repr(lo), repr(hi), False, frozenset()
        if op == vn.SCALAR:
            index, offset, size, signed = node.attrs
            return self._call(f"_scalar(S, {index}, {offset}, {size}, {signed}, {node.width})",
                              False, frozenset())
        if op == vn.PHI:
            return self._phi(node)
        if op == vn.HULL and not self._stepping and _selp_site(node):
            return self._selp(node, ctx)
        halved = _signed_division(node)
        if halved is not None:
            # C's x / 2**k as compilers write it, (x + (x < 0 ? 2**k - 1 : 0)) >> k: one
            # division, where apart the sign term and the sum would lose the link to x
            x, divisor = halved
            xl, xh, box, flags = self.value(x, ctx)
            return self._call(f"_div({xl}, {xh}, {divisor}, {divisor}, "
                              f"{_wlo(True, node.width)}, {node.width})", box, flags)
        args = [self.value(a, ctx) for a in node.args]
        box = any(a[2] for a in args)
        flags = frozenset().union(*(a[3] for a in args))
        w = node.width
        if op == vn.ADD:
            (al, ah, *_), (bl, bh, *_) = args
            return self._pair(_plus(al, bl), _plus(ah, bh), box, flags)
        if op == vn.SUB:
            (al, ah, *_), (bl, bh, *_) = args
            x, r = node.args
            if r.op == vn.REM and r.args[0] is x:
                # x - x % y: x rounded down to a multiple of y (what ``x / y * y`` compiles
                # to), monotone in x; apart, the two ends would lose y - 1 each
                yl, yh, ybox, yflags = self.value(r.args[1], ctx)
                return self._call(f"_rdown({al}, {ah}, {yl}, {yh}, {bl}, {bh}, {w})",
                                  box or ybox, flags | yflags)
            return self._pair(f"{al} - {bh}", f"{ah} - {bl}", box, flags)
        if op == vn.NEG:
            al, ah = args[0][:2]
            return self._pair(f"-({ah})", f"-({al})", box, flags)
        if op == vn.NOT:
            al, ah = args[0][:2]
            return self._pair(f"-({ah}) - 1", f"-({al}) - 1", box, flags)
        if op == vn.MUL:
            (al, ah, *_), (bl, bh, *_) = args
            b = node.args[1]
            if b.op == vn.CONST:
                c = b.attrs
                if c >= 0:
                    return self._pair(f"({al}) * {c}", f"({ah}) * {c}", box, flags)
                return self._pair(f"({ah}) * {c}", f"({al}) * {c}", box, flags)
            if all(_never_negative(a) for a in node.args):
                return self._pair(f"{al} * {bl}", f"{ah} * {bh}", box, flags)
            return self._call(f"_mul({al}, {ah}, {bl}, {bh})", box, flags)
        if op == vn.SHL:
            (al, ah, *_), (kl, kh, *_) = args
            k = node.args[1]
            if k.op == vn.CONST:
                factor = 1 << min(k.attrs & 0xFFFFFFFF, w)
                return self._pair(f"({al}) * {factor}", f"({ah}) * {factor}", box, flags)
            return self._call(f"_shl({al}, {ah}, {kl}, {kh}, {w})", box, flags)
        if op in (vn.SHR, vn.MIN, vn.MAX, vn.DIV, vn.REM):
            (al, ah, *_), (bl, bh, *_) = args
            fn = {vn.SHR: "_shr", vn.MIN: "_min", vn.MAX: "_max", vn.DIV: "_div",
                  vn.REM: "_rem"}[op]
            return self._call(f"{fn}({al}, {ah}, {bl}, {bh}, {_wlo(node.attrs, w)}, {w})",
                              box, flags)
        if op in (vn.MULWIDE, vn.MULHI):
            (al, ah, *_), (bl, bh, *_) = args
            signed, src = node.attrs
            if op == vn.MULWIDE and node.args[1].op == vn.CONST:
                c = node.args[1].attrs
                c = c if signed or c >= 0 else c + (1 << src)     # read as the source type
                return self._call(f"_mulwc({al}, {ah}, {_wlo(signed, src)}, {src}, {c})",
                                  box, flags)
            fn = "_mulw" if op == vn.MULWIDE else "_mulhi"
            return self._call(f"{fn}({al}, {ah}, {bl}, {bh}, {_wlo(signed, src)}, {src})",
                              box, flags)
        if op == vn.ABS:
            al, ah = args[0][:2]
            return self._call(f"_abs({al}, {ah}, {w})", box, flags)
        if op in (vn.AND, vn.OR, vn.XOR):
            (al, ah, *_), (bl, bh, *_) = args
            fn = {vn.AND: "_and", vn.OR: "_or", vn.XOR: "_xor"}[op]
            return self._call(f"{fn}({al}, {ah}, {bl}, {bh}, {w})", box, flags)
        if op == vn.EXT:
            al, ah = args[0][:2]
            signed, src = node.attrs
            return self._call(_norm_expr(al, ah, _wlo(signed, src), src), box, flags)
        if op == vn.HULL:
            return self._hull(w, args, box)
        lo, hi = iv.window(True, w)
        return repr(lo), repr(hi), False, frozenset()

    def _hull(self, w, args, box):
        """A join of values. An alternative from a loop that is not entered in this box (its
        loop flags) is left out: the value came from another path. Flags about the use's own
        conditions (not from loops) stay, whichever path."""
        facts = frozenset(f for a in args for f in a[3] if not f[2])
        if not any(f[2] for a in args for f in a[3]):
            parts = ", ".join(f"{a[0]}, {a[1]}" for a in args)
            return self._call(f"_hull({w}, {parts})", box, facts)
        parts, always = [], False
        for a in args:
            loop = sorted(f[0] for f in a[3] if f[2])
            box = box or any(f[1] for f in a[3] if f[2])
            always = always or not loop
            parts.append(f"{a[0]}, {a[1]}, {' or '.join(loop) or 'False'}")
        lo, hi, box, _ = self._call(f"_hull_live({w}, {', '.join(parts)})", box, facts)
        if always:
            return lo, hi, box, facts
        dead = self._assign(f"{lo} > {hi}", box, prefix="p")
        return lo, hi, box, facts | {(dead, box, True)}

    def _selp(self, node, ctx):
        """``selp`` of two values: each read under what its choice says of the predicate
        (``x < lo ? lo : min(x, hi)``, a clamp, then stays in [lo, hi] however unbounded x
        is). A choice whose narrowing comes out empty in the box is never taken there and
        is left out; flags the two share (the use's own conditions) stay."""
        pred = self.g.nodes[node.site[1]]
        alternatives = []
        for arg, holds in zip(node.args, (True, False)):
            plain = self.value(arg, ctx)
            narrowed, atoms = narrowings(self.guards, (), None, own=(pred, holds))
            got = self.value(arg, ctx | frozenset(narrowed)) if narrowed else plain
            # dead where its narrowings come out empty, or its comparisons cannot hold
            never = (got[3] - plain[3]) | {(*self.dead(atom), False) for atom in atoms}
            alternatives.append((got, never))
        box = any(got[2] for got, _ in alternatives)
        facts = frozenset(f for got, never in alternatives for f in got[3] - never
                          if not f[2])
        parts = []
        for got, never in alternatives:
            dead = sorted({f[0] for f in got[3] | never if f[2] or f in never})
            box = box or any(f[1] for f in got[3] | never if f[2] or f in never)
            parts.append(f"{got[0]}, {got[1]}, {' or '.join(dead) or 'False'}")
        lo, hi, box, _ = self._call(f"_hull_live({node.width}, {', '.join(parts)})", box, facts)
        if all(p.endswith(", False") for p in parts):
            return lo, hi, box, facts
        dead = self._assign(f"{lo} > {hi}", box, prefix="p")
        return lo, hi, box, facts | {(dead, box, True)}

    def _pair(self, lo, hi, box, flags):
        lo = lo if lo.isidentifier() or _is_int(lo) else self._assign(lo, box)
        hi = hi if hi.isidentifier() or _is_int(hi) else self._assign(hi, box)
        return lo, hi, box, flags

    def _call(self, expr, box, flags):
        a, b = self._assign(expr, box, 2)
        return a, b, box, flags

    # -- narrowing -----------------------------------------------------------------------
    def _apply(self, node, recipes, found):
        lo, hi, box, flags = found
        # ranges first: an exclusion (x != v) only moves an end equal to v; twice, for
        # exclusions that uncover each other (x != 9 and x != 8)
        ranges = [r for r in recipes if self.bounds(r)[0] != "ne"]
        excluded = [r for r in recipes if self.bounds(r)[0] == "ne"]
        align = self.alignment(node)
        for recipe in ranges + excluded + excluded:
            bound = self.bounds(recipe)
            cl, ch, bbox = bound[1], bound[2], bound[3]
            signed, width = self._recipe_window(recipe)
            box = box or bbox
            wlo = _wlo(signed, width)
            if bound[0] == "ne":
                expr = f"_exclude({lo}, {hi}, {wlo}, {width}, {cl}, {ch})"
            else:
                # inline when x is already in the window (the common case): no call
                expr = (f"({lo} if {lo} > {cl} else {cl}, {hi} if {hi} < {ch} else {ch}) "
                        f"if {wlo} <= {lo} and {hi} <= {wlo + (1 << width) - 1} else "
                        f"_narrow({lo}, {hi}, {wlo}, {width}, {cl}, {ch})")
            lo, hi = self._assign(expr, box, 2)
            if 1 < align < 1 << width:
                # the ends move to values the node can take: multiples of its alignment
                lo, hi = self._assign(f"_align({lo}, {hi}, {align})", box, 2)
            flag = self._assign(f"{lo} > {hi}", box, prefix="e")
            flags = flags | {(flag, box, False)}
        return lo, hi, box, flags

    def alignment(self, node) -> int:
        """A power of two that divides the node's value (its low bits are zero): element
        sizes in offsets, strides of pointer induction variables."""
        found = self._align.get(node.id)
        if found is not None:
            return found
        self._align[node.id] = 1                      # (phis reach themselves)
        op, args = node.op, node.args
        top = 1 << min(node.width, 62)
        if op == vn.CONST:
            found = (node.attrs & -node.attrs) if node.attrs else top
        elif op in (vn.MUL, vn.MULWIDE):
            found = self.alignment(args[0]) * self.alignment(args[1])
        elif op == vn.SHL and args[1].op == vn.CONST:
            found = self.alignment(args[0]) << min(args[1].attrs & 0xFFFFFFFF, 63)
        elif op in (vn.ADD, vn.SUB, vn.HULL):
            found = min(self.alignment(a) for a in args)
        elif op in (vn.NEG, vn.EXT):
            found = self.alignment(args[0])
        elif op == vn.AND and args[1].op == vn.CONST and args[1].attrs:
            found = max(self.alignment(args[0]), args[1].attrs & -args[1].attrs)
        elif op == vn.PHI:
            loop = self.loops.get(node.attrs[0])
            steps = loop.steps.get(node) if loop else None
            found = min([self.alignment(node.args[0])] + [self.alignment(x) for x in steps]) \
                if steps else 1
        else:
            found = 1
        found = min(found, top)
        self._align[node.id] = found
        return found

    @staticmethod
    def _recipe_window(recipe):
        if recipe[0] == "cmp":
            return recipe[2], recipe[3]
        if recipe[0] == "chain":
            return recipe[7], recipe[8]
        return recipe[5], recipe[6]                      # ext: the source's window

    def bounds(self, recipe):
        """("range"|"ne", lo, hi, box): what the recipe allows for its node (read in the
        recipe's window), from the default intervals of the other values involved."""
        found = self._bounds.get(recipe)
        if found is not None:
            return found
        kind = recipe[0]
        if kind == "cmp":
            _, cmp, signed, width, other = recipe
            ol, oh, box, _ = self.value(self.nodes_by_id(other))
            wlo = _wlo(signed, width)
            whi = wlo + (1 << width) - 1
            a, b = self._assign(f"_norm({ol}, {oh}, {wlo}, {width})", box, 2)
            lo, hi = {"lt": (repr(wlo), f"{b} - 1"), "le": (repr(wlo), b),
                      "gt": (f"{a} + 1", repr(whi)), "ge": (a, repr(whi)),
                      "eq": (a, b), "ne": (a, b)}[cmp]
            found = ("ne" if cmp == "ne" else "range", lo, hi, box)
        elif kind == "chain":
            _, op, mode, parent, node_id, sib_id, child_id, signed, width = recipe
            _, pl, ph, pbox = self.bounds(parent)
            sl, sh, sbox, _ = self.value(self.nodes_by_id(sib_id))
            xl, xh, xbox, _ = self.value(self.nodes_by_id(child_id))
            wlo = _wlo(signed, width)
            whi = wlo + (1 << width) - 1
            box = pbox or sbox or xbox
            sign = -1 if op == vn.SUB else 1
            # the fit check reads the operands in node order: child first for "x"
            fit_args = (f"{xl}, {xh}, {sl}, {sh}" if mode == "x"
                        else f"{sl}, {sh}, {xl}, {xh}")
            yl, yh = self._assign(f"_norm({sl}, {sh}, {wlo}, {width})", box, 2)
            fit = self._assign(f"_fits({fit_args}, {wlo}, {width}, {sign})", box)
            if op == vn.ADD:                             # parent = child + sibling
                exprs = (f"{pl} - {yh}", f"{ph} - {yl}")
            elif mode == "x":                            # parent = child - sibling
                exprs = (f"{pl} + {yl}", f"{ph} + {yh}")
            else:                                        # parent = sibling - child
                exprs = (f"{yl} - ({ph})", f"{yh} - ({pl})")
            lo, hi = self._assign(f"({exprs[0]}, {exprs[1]}) if {fit} else ({wlo}, {whi})",
                                  box, 2)
            found = ("range", lo, hi, box)
        else:                                            # ext: sext(x) as s64 is x as s32
            _, parent, _, signed, width, ext_signed, src_width = recipe
            _, pl, ph, pbox = self.bounds(parent)
            clo = _wlo(ext_signed, src_width)
            chi = clo + (1 << src_width) - 1
            lo = self._assign(f"max({pl}, {clo})", pbox)
            hi = self._assign(f"min({ph}, {chi})", pbox)
            found = ("range", lo, hi, pbox)
        self._bounds[recipe] = found
        return found

    def dead(self, atom):
        """A variable that is true when no value of the box satisfies the comparison."""
        cmp, signed, width, a, b = atom
        key = (cmp, signed, width, a.id, b.id)
        found = self._dead.get(key)
        if found is None:
            recipe = ("cmp", cmp, signed, width, b.id)
            al, ah, abox, _ = self.value(a)
            bound = self.bounds(recipe)
            box = abox or bound[3]
            fn = "_exclude" if bound[0] == "ne" else "_narrow"
            lo, hi = self._assign(f"{fn}({al}, {ah}, {_wlo(signed, width)}, {width}, "
                                  f"{bound[1]}, {bound[2]})", box, 2)
            found = (self._assign(f"{lo} > {hi}", box, prefix="d"), box)
            self._dead[key] = found
        return found

    # -- loops ---------------------------------------------------------------------------
    def header_context(self, header):
        """The narrowings that hold on entry to a loop (from the edges dominating it)."""
        found = self._header_ctx.get(header)
        if found is None:
            nar, _ = narrowings(self.guards, self.guards.facts_at(header), header)
            found = frozenset(nar)
            self._header_ctx[header] = found
        return found

    def _steps(self, phi, steps):
        self._stepping += 1
        try:
            vals = [self.value(s) for s in steps]
        finally:
            self._stepping -= 1
        box = any(v[2] for v in vals)
        parts = ", ".join(f"{v[0]}, {v[1]}" for v in vals)
        w = phi.width
        sl, sh = self._assign(f"_hull({w}, {parts})", box, 2)
        sl, sh = self._assign(f"_norm({sl}, {sh}, {_wlo(True, w)}, {w})", box, 2)
        return sl, sh, box

    def trips(self, header):
        """(n, box, tests): the loop's trip bound variable and, per test, the variable
        holding trip_bound's (n, cap_lo, cap_hi)."""
        found = self._trips.get(header)
        if found is not None:
            return found
        loop = self.loops[header]
        hctx = self.header_context(header)
        per_test, box = [], False
        for t in loop.tests:
            il, ih, ibox, _ = self.value(t.phi.args[0], hctx)
            cl, ch, cbox = ("0", "0", False) if t.offset is None else self.value(t.offset)[:3]
            sl, sh, sbox = self._steps(t.phi, loop.steps[t.phi])
            bl, bh, bbox, _ = self.value(t.bound, hctx)
            wsigned, wwidth = t.window
            bsigned, bwidth = t.cmp_window
            tbox = ibox or cbox or sbox or bbox
            tv = self._assign(f"_trip({t.cmp!r}, {il}, {ih}, {cl}, {ch}, {sl}, {sh}, {bl}, {bh}, "
                              f"{_wlo(wsigned, wwidth)}, {wwidth}, {_wlo(bsigned, bwidth)}, "
                              f"{bwidth})", tbox, prefix="t")
            box = box or tbox
            per_test.append((t, tv))
        n = self._assign(f"_trips({', '.join(tv for _, tv in per_test)})", box, prefix="n")
        found = (n, box, per_test)
        self._trips[header] = found
        return found

    def _phi(self, phi):
        found = self._phis.get(phi.id)
        if found is not None:
            return found
        header = phi.attrs[0]
        loop = self.loops.get(header)
        if loop is None or phi not in loop.steps:
            lo, hi = iv.window(True, phi.width)
            found = (repr(lo), repr(hi), False, frozenset())
            self._phis[phi.id] = found
            return found
        n, nbox, tests = self.trips(header)
        il, ih, ibox, iflags = self.value(phi.args[0], self.header_context(header))
        # the loop is not entered in this box when the conditions before it cannot hold
        _, atoms = narrowings(self.guards, self.guards.facts_at(header), header)
        entry = {(f, fbox, True) for f, fbox, _ in iflags}
        entry |= {self.dead(atom) + (True,) for atom in atoms}
        sl, sh, sbox = self._steps(phi, loop.steps[phi])
        box = nbox or ibox or sbox
        lo, hi = self._assign(f"_ivr({il}, {ih}, {sl}, {sh}, {n})", box, 2)
        dead = self._assign(f"{il} > {ih}", ibox, prefix="p")
        for t, tv in tests:
            if t.phi is not phi:
                continue
            signed, width = t.window
            # the tested IV stays within its test's cap (in the IV's window)
            lo, hi = self._assign(f"_cap({lo}, {hi}, {_wlo(signed, width)}, {width}, {tv})",
                                  box, 2)
            align = self.alignment(phi)
            if 1 < align < 1 << width:
                lo, hi = self._assign(f"_align({lo}, {hi}, {align})", box, 2)
        # an empty start (the guards before the loop exclude every value): loop not entered
        found = (lo, hi, box, frozenset(entry | {(dead, box, True)}))
        self._phis[phi.id] = found
        return found


_NOT_VARIABLES = frozenset(HELPERS) | {"min", "max", "if", "else", "and", "or", "not", "is",
                                       "None", "True", "False"}


def _constant(expr, count):
    """The literal value(s) of an expression of literals only, computed now; else None."""
    names = re.findall(r"[A-Za-z_]\w*", re.sub(r"'[^']*'", "", expr))    # (not in strings)
    if any(name not in _NOT_VARIABLES for name in names):
        return None
    value = eval(expr, dict(HELPERS))
    return tuple(repr(v) for v in value) if count > 1 else (repr(value),)


def _norm_expr(lo, hi, wlo, width) -> str:
    """intervals.norm inline: no call when the interval is already in the window."""
    return (f"({lo}, {hi}) if {wlo} <= {lo} and {hi} <= {wlo + (1 << width) - 1} else "
            f"_norm({lo}, {hi}, {wlo}, {width})")


def _plus(a, b) -> str:
    return a if b == "0" else b if a == "0" else f"{a} + {b}"


def _is_int(text) -> bool:
    return text.lstrip("-").isdigit()


def _never_negative(node) -> bool:
    """Values whose intervals never go below 0 in any context: the thread and block
    indices and sizes (narrowing keeps them in [0, ...])."""
    return node.op == vn.SPECIAL and node.attrs[0] in ("%tid", "%ntid", "%ctaid", "%nctaid",
                                                        "%laneid")
