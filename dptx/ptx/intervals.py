"""Interval arithmetic on exact Python ints, the run-time half of the access-footprint
analysis (``footprint.py``): the code that ``footprint.py`` generates for a kernel calls these.

An interval ``(lo, hi)`` describes a register of ``w`` bits: its bit pattern is ``v mod 2**w``
for some ``v`` in ``lo..hi``. Under this reading add, sub, mul.lo, shl, neg and not are exact
integer operations with no overflow check at all (wrapping is the modulo). Only an operation
that *interprets* the pattern (a sign or zero extension, a comparison, a right shift, a
division, min/max, the bitwise operations, and finally the use as an address) first maps
the interval into the window of that interpretation (``norm``): exact when every value falls
in one window, else the whole window (``[-2**31, 2**31)`` for s32: "any value"). That is how a
32-bit index that may wrap becomes "unknown" and, later, the whole buffer.

Every function here takes and returns plain ints, never raises on an empty interval
(``lo > hi``, which the generated code tracks separately) and never loops.
"""
from __future__ import annotations


def window(signed: bool, width: int) -> tuple:
    """The interval of values of a ``width``-bit register read as signed or unsigned."""
    if signed:
        return -(1 << (width - 1)), (1 << (width - 1)) - 1
    return 0, (1 << width) - 1


def norm(lo: int, hi: int, wlo: int, width: int) -> tuple:
    """The values ``lo..hi`` (modulo 2**width) read in the window ``[wlo, wlo + 2**width)``."""
    if wlo <= lo and hi - wlo < (1 << width):
        return lo, hi                            # already there (the common case)
    if hi - lo >= (1 << width):
        return wlo, wlo + (1 << width) - 1
    shift = ((lo - wlo) >> width) << width
    lo -= shift
    hi -= shift
    if hi < wlo + (1 << width):
        return lo, hi
    return wlo, wlo + (1 << width) - 1


def mul(al, ah, bl, bh) -> tuple:
    if al >= 0 and bl >= 0:
        return al * bl, ah * bh
    p1, p2, p3, p4 = al * bl, al * bh, ah * bl, ah * bh
    return min(p1, p2, p3, p4), max(p1, p2, p3, p4)


def mul_wide(al, ah, bl, bh, wlo, width) -> tuple:
    """mul.wide: both operands read in the source window, the product exact."""
    al, ah = norm(al, ah, wlo, width)
    bl, bh = norm(bl, bh, wlo, width)
    return mul(al, ah, bl, bh)


def mul_wide_const(al, ah, wlo, width, c) -> tuple:
    """mul.wide by a constant (an element size, most often)."""
    al, ah = norm(al, ah, wlo, width)
    return (al * c, ah * c) if c >= 0 else (ah * c, al * c)


def mul_hi(al, ah, bl, bh, wlo, width) -> tuple:
    al, ah = norm(al, ah, wlo, width)
    bl, bh = norm(bl, bh, wlo, width)
    pl, ph = mul(al, ah, bl, bh)
    return pl >> width, ph >> width


def shl(xl, xh, kl, kh, width) -> tuple:
    """x << k is x * 2**k modulo 2**width for any k (a shift past the width gives 0, which is
    also x * 2**width modulo 2**width), so only the shift amount is read (as u32)."""
    kl, kh = norm(kl, kh, 0, 32)
    kl, kh = min(kl, width), min(kh, width)
    return mul(xl, xh, 1 << kl, 1 << kh)


def shr(xl, xh, kl, kh, wlo, width) -> tuple:
    """Arithmetic (``wlo < 0``) or logical right shift; PTX clamps the amount to the width."""
    xl, xh = norm(xl, xh, wlo, width)
    kl, kh = norm(kl, kh, 0, 32)
    top = width - 1 if wlo < 0 else width
    kl, kh = min(kl, top), min(kh, top)
    a, b, c, d = xl >> kl, xl >> kh, xh >> kl, xh >> kh
    return min(a, b, c, d), max(a, b, c, d)


def minimum(al, ah, bl, bh, wlo, width) -> tuple:
    al, ah = norm(al, ah, wlo, width)
    bl, bh = norm(bl, bh, wlo, width)
    return min(al, bl), min(ah, bh)


def maximum(al, ah, bl, bh, wlo, width) -> tuple:
    al, ah = norm(al, ah, wlo, width)
    bl, bh = norm(bl, bh, wlo, width)
    return max(al, bl), max(ah, bh)


def absolute(xl, xh, width) -> tuple:
    xl, xh = norm(xl, xh, -(1 << (width - 1)), width)
    if xl >= 0:
        return xl, xh
    if xh <= 0:
        return -xh, -xl
    return 0, max(-xl, xh)


def _tdiv(a, b):
    """C division (truncates toward zero) of ints, b != 0."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def divide(al, ah, bl, bh, wlo, width) -> tuple:
    al, ah = norm(al, ah, wlo, width)
    bl, bh = norm(bl, bh, wlo, width)
    if bl <= 0 <= bh:
        return wlo, wlo + (1 << width) - 1       # division by zero is unspecified
    # for a divisor of one sign the quotient is monotone in each operand: corners bound it
    q = (_tdiv(al, bl), _tdiv(al, bh), _tdiv(ah, bl), _tdiv(ah, bh))
    return min(q), max(q)


def remainder(al, ah, bl, bh, wlo, width) -> tuple:
    al, ah = norm(al, ah, wlo, width)
    bl, bh = norm(bl, bh, wlo, width)
    if bl <= 0 <= bh:
        return wlo, wlo + (1 << width) - 1
    small, big = min(abs(bl), abs(bh)), max(abs(bl), abs(bh))
    if 0 <= al and ah < small:
        return al, ah                            # a % b == a
    lo = 0 if al >= 0 else max(al, 1 - big)      # the remainder takes the dividend's sign
    hi = 0 if ah <= 0 else min(ah, big - 1)
    return lo, hi


def round_down(xl, xh, yl, yh, rl, rh, width) -> tuple:
    """x - x % y for x in [xl, xh] and y in [yl, yh], x % y in [rl, rh]: x rounded down to a
    multiple of y. Exact ends for one y and an x that is non-negative read signed or not
    (``x / y * y`` then grows with x); else the plain difference of the intervals."""
    half = 1 << (width - 1)
    if 0 <= xl <= xh < half and 0 < yl == yh < half:
        return xl - xl % yl, xh - xh % yl
    return xl - rh, xh - rl


def _mask_bits(m):
    """2**bitlen(m) - 1: every value in [0, m] fits under this mask."""
    return (1 << m.bit_length()) - 1


def bit_and(al, ah, bl, bh, width) -> tuple:
    top = (1 << width) - 1
    if al == ah and bl != bh:
        al, ah, bl, bh = bl, bh, al, ah          # the constant (if any) in b
    xl, xh = norm(al, ah, 0, width)
    if bl == bh:
        c = bl & top
        low = c ^ top
        if low & (low + 1) == 0:                 # c clears the low bits: monotone
            sl, sh = norm(al, ah, -(1 << (width - 1)), width)
            cs = c - (1 << width) if c >> (width - 1) else c
            if sh - sl < xh - xl:
                return sl & cs, sh & cs
            return xl & c, xh & c
        if c & (c + 1) == 0:                     # c keeps the low bits
            k = c.bit_length()
            if xl >> k == xh >> k:
                return xl & c, xh & c
            return 0, c
        return 0, min(xh, c)
    yl, yh = norm(bl, bh, 0, width)
    return 0, min(xh, yh)


def bit_or(al, ah, bl, bh, width) -> tuple:
    xl, xh = norm(al, ah, 0, width)
    yl, yh = norm(bl, bh, 0, width)
    return max(xl, yl), min(xh | _mask_bits(yh), yh | _mask_bits(xh))


def bit_xor(al, ah, bl, bh, width) -> tuple:
    """x ^ y with y in [0, J] only changes the low bitlen(J) bits of x."""
    top = (1 << width) - 1
    if bl == bh and bl & top == top:             # xor with all ones: not
        return -ah - 1, -al - 1
    if al == ah and al & top == top:
        return -bh - 1, -bl - 1
    xl, xh = norm(al, ah, 0, width)
    yl, yh = norm(bl, bh, 0, width)
    if yh > xh:
        xl, xh, yl, yh, al, ah = yl, yh, xl, xh, bl, bh
    m = _mask_bits(yh)
    sl, sh = norm(al, ah, -(1 << (width - 1)), width)
    if sh - sl < xh - xl:                        # x reads better signed (a small negative)
        return sl & ~m, sh | m
    return xl & ~m, xh | m


def hull(width, *bounds) -> tuple:
    """The union of intervals (lo1, hi1, lo2, hi2, ...) of one register: each read signed
    when that makes them meet (a selp of -1 and 5), else as they are."""
    los, his = bounds[0::2], bounds[1::2]
    lo, hi = min(los), max(his)
    if hi - lo < (1 << (width - 1)):
        return lo, hi
    wlo = -(1 << (width - 1))
    normed = [norm(l, h, wlo, width) for l, h in zip(los, his)]
    slo, shi = min(n[0] for n in normed), max(n[1] for n in normed)
    if shi - slo < hi - lo:
        return slo, shi
    return lo, hi


def hull_live(width, *items) -> tuple:
    """The hull of the (lo, hi, dead) triples whose ``dead`` is false; (1, 0) (empty) if
    none is."""
    live = []
    for k in range(0, len(items), 3):
        if not items[k + 2]:
            live += items[k:k + 2]
    return hull(width, *live) if live else (1, 0)


def scalar(scalars, index, offset, size, signed, width) -> tuple:
    """The value of bytes offset..offset+size of parameter ``index``, or any value of the
    register when the launch did not pass those bytes."""
    raw = scalars.get(index)
    if raw is None or len(raw) < offset + size:
        lo, hi = window(True, width)
        return lo, hi
    v = int.from_bytes(bytes(raw[offset:offset + size]), "little", signed=signed)
    return v, v


def narrow(xl, xh, wlo, width, cl, ch) -> tuple:
    """x (read in the window) restricted to [cl, ch] by a condition that holds there."""
    if not (wlo <= xl and xh - wlo < (1 << width)):
        xl, xh = norm(xl, xh, wlo, width)
    return (xl if xl > cl else cl), (xh if xh < ch else ch)


def align(lo, hi, a) -> tuple:
    """[lo, hi] shrunk to the multiples of ``a`` it contains."""
    return -((-lo) // a) * a, (hi // a) * a


def exclude(xl, xh, wlo, width, vl, vh) -> tuple:
    """x != v: only an end of x's interval equal to a known v moves."""
    xl, xh = norm(xl, xh, wlo, width)
    if vl == vh:
        if xl == vl:
            xl += 1
        if xh == vl:
            xh -= 1
    return xl, xh


def sum_fits(al, ah, bl, bh, wlo, width, sign) -> bool:
    """Whether a + sign*b, both read in the window, stays in the window (no wrap)."""
    al, ah = norm(al, ah, wlo, width)
    bl, bh = norm(bl, bh, wlo, width)
    if sign < 0:
        bl, bh = -bh, -bl
    return wlo <= al + bl and ah + bh < wlo + (1 << width)


# -- loops ------------------------------------------------------------------------------------
# A loop with no trip count from its exit tests is taken to run fewer than 2**40 iterations
# per thread (hours of one thread): a 32-bit induction variable then covers its whole range,
# a 64-bit pointer one the buffer from its start on.
MAX_TRIPS = 1 << 40


def iv_range(il, ih, sl, sh, n) -> tuple:
    """Values init + (sum of j steps), j in [0, n], each step in [sl, sh]."""
    return il + min(0, n * sl), ih + max(0, n * sh)


def trip_bound(cmp, il, ih, cl, ch, sl, sh, bl, bh, wlo, width, blo_w, bwidth):
    """(n, cap_lo, cap_hi) for a loop that continues while ``(iv + c) cmp b``: the header
    values of the IV are init + j*step for j in [0, n] (n = -1: no bound), and the IV itself
    lies in [cap_lo, cap_hi] (in its window). ``init``, ``c`` and ``step`` are read in the IV's
    window (wlo, width), ``b`` in the comparison's (blo_w, bwidth): they differ when the test
    compares a sign- or zero-extended IV."""
    none = (-1, None, None)
    if il > ih:
        return none
    il, ih = norm(il, ih, wlo, width)
    sw = -(1 << (width - 1))
    cl, ch = norm(cl, ch, sw, width)
    sl, sh = norm(sl, sh, sw, width)
    bl, bh = norm(bl, bh, blo_w, bwidth)
    whi = wlo + (1 << width) - 1
    al, ah = il + cl, ih + ch                    # the first tested value
    if al < wlo or ah > whi:
        return none
    if cmp in ("lt", "le") and sl >= 1:
        edge = bh if cmp == "le" else bh - 1     # the largest value that continues
        if edge + sh > whi:
            return none                          # the step past the bound could wrap
        n = max(0, -((al - edge - 1) // sl))     # ceil((edge + 1 - al) / sl)
        return n, il, max(ih, edge + sh - cl)
    if cmp in ("gt", "ge") and sh <= -1:
        edge = bl if cmp == "ge" else bl + 1
        if edge + sl < wlo:
            return none
        n = max(0, -((edge - ah - 1) // -sh))
        return n, min(il, edge + sl - ch), ih
    if cmp == "ne" and sl == sh and sl != 0:
        if sl == 1 and ah <= bl:
            return max(0, bh - al), il, max(ih, bh - cl)
        if sl == -1 and al >= bh:
            return max(0, ah - bl), min(il, bl - ch), ih
        if al == ah and bl == bh and (bl - al) % sl == 0 and (bl - al) // sl >= 0:
            n = (bl - al) // sl
            return n, min(il, bl - ch), max(ih, bl - cl)
        return none
    if cmp == "eq" and (sl >= 1 or sh <= -1):
        return 1, None, None
    return none


def trips(*bounds) -> int:
    """A loop's trip bound: the smallest of its tests' (trip_bound), MAX_TRIPS if none."""
    return min([t[0] for t in bounds if t[0] >= 0], default=MAX_TRIPS)


def cap(lo, hi, wlo, width, bound) -> tuple:
    """An induction variable's interval within the cap its own exit test gives."""
    if bound[1] is None:
        return lo, hi
    return narrow(lo, hi, wlo, width, bound[1], bound[2])
