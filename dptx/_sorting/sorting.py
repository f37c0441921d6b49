"""``sort`` and ``argsort`` along an axis, on the devices: a stable merge sort (numpy's
``kind='stable'``; its values are those of every numpy kind), NaN last as in numpy.

The axis is moved last and made contiguous: rows of L elements. One launch sorts each run of
RUN elements (a warp, a lane per element, by a bitonic network of shuffles on (key,
position): stable); one launch merges them up to runs of PIECE, a thread per slice of PIECE
level after level;
then each launch merges pairs of sorted runs of width w into runs of 2w, a thread per PIECE
elements of output (2w while runs are shorter): it finds where its slice starts in the two
runs by a binary search along the merge path (Green et al.), then merges its slice in order,
the left run winning ties (stability). log2(L / RUN) passes, between two buffers, each
chunk writing only its own rows' pieces (the footprint is exact: loops are counts bounded
by constants, stored-to positions clamped to the run), reading its pairs of runs.
``argsort`` carries each element's index along with its key.
"""
from __future__ import annotations

import numpy as np

from .._core import reductions, scan, selection, ufuncs
from .._core.elementwise import HALF, KernelCache, c_type, with_type_headers
from .._indexing import indexing
from .._manipulation import joining, views
from ..errors import DptxError
from ..runtime.module import RawModule
from ..runtime.ndarray import _axes, asarray, empty, ndarray

PIECE = 1024       # outputs per thread in a merge pass
RUN = 32           # elements per run sorted by a warp before the merges
BLOCK = 128

_SOURCE = r"""
// numpy's order: NaN after everything, equal NaNs in place
__device__ __forceinline__ bool before(T_ a, T_ b) {
#if COMPLEX_
    // numpy's order of complex values (npysort's CFLOAT_LT): by real parts, then imaginary
    // ones, a NaN part after the numbers
    const auto ar = a.real(), ai = a.imag(), br = b.real(), bi = b.imag();
    if (ar < br) return ai == ai || bi != bi;
    if (ar > br) return bi != bi && ai == ai;
    if (ar == br || (ar != ar && br != br)) return ai < bi || (bi != bi && ai == ai);
    return br != br;
#elif FLOAT_
    return a < b || (b != b && a == a);
#else
    return a < b;
#endif
}

// x in [lo, hi], as a max then a min: the access footprint then bounds the result by lo
// and hi whatever x is (a compare and select on x would leave it to x's own bounds, which a
// binary search's midpoint does not have); hi where lo > hi (an empty run's clamp stays
// below its end: loads the merges make whatever they then choose stay in the buffer)
__device__ __forceinline__ I_ clamp(I_ x, I_ lo, I_ hi) {
    const I_ above = x > lo ? x : lo;
    return above < hi ? above : hi;
}

// runs of RUN_ (a warp's 32) elements of each row sorted by a bitonic network across the
// warp, a lane per element: each lane holds the position of an element of its run and swaps
// it with its partner's (a shuffle) where the network says. The order is (key, position):
// equal keys keep their order (stable), positions past the row's end (a short last run, or
// the threads past the last run) come after everything.
// a value of any type from lane ^ j: CUDA's own shuffle of the type, narrow integers and
// bool through int (a union through memory cost the CPU executor 4x for 16-bit keys); the
// sort of 64-bit and half keys reads the partner's key again instead (REREAD_)
__device__ __forceinline__ T_ shfl_xor(T_ x, int j) {
#if NARROW_
    return (T_)__shfl_xor_sync(0xffffffffu, (int)x, j);
#elif REREAD_
    return x;       // (never called: the sort reads the partner's key again)
#else
    return __shfl_xor_sync(0xffffffffu, x, j);
#endif
}

// (bitwise operators, no short circuits: no branches for a warp's lanes to diverge on)
__device__ __forceinline__ bool precedes(I_ p, T_ vp, I_ q, T_ vq, I_ L) {
    const bool by_key = before(vp, vq) | (!before(vq, vp) & (p < q));
    return ((p >= L) | (q >= L)) ? p < q : by_key;
}

extern "C" __global__ void dptx_sort_runs(const T_* keys, T_* ok, long long* oi, I_ L,
                                          I_ rows, int with_index) {
    // a block (one warp) per run along x, rows along y (a loop over them past the grid's
    // 65535): no division by a row's length for a thread to find its run, and no thread
    // past the last run (every lane of a warp takes part in the shuffles)
    const I_ lane = threadIdx.x, r0 = (I_)blockIdx.x * RUN_;
    const I_ last = clamp(r0 + RUN_ - 1, r0, L - 1);       // the run's last element
    #pragma unroll 1
    for (I_ row = blockIdx.y; row < rows; row += gridDim.y) {
        const long long base = (long long)row * L;
        I_ p = r0 + lane;
        T_ v = keys[base + clamp(p, r0, last)];
        #pragma unroll
        for (int k = 2; k <= RUN_; k <<= 1) {
            #pragma unroll
            for (int j = k >> 1; j > 0; j >>= 1) {
                const I_ q = __shfl_xor_sync(0xffffffffu, p, j);
#if REREAD_
                // the partner's key read again (a cached load: on the CPU executor a 64-bit
                // or half shuffle costs 4-6x a 32-bit one, the reload about as much as one)
                const T_ w = keys[base + clamp(q, r0, last)];
#else
                const T_ w = shfl_xor(v, j);
#endif
                const bool keep_first = ((lane & k) == 0) == ((lane & j) == 0);
                const bool other_first = precedes(q, w, p, v, L);
                if (keep_first == other_first) { p = q; v = w; }
            }
        }
        if (r0 + lane < L) {
            ok[base + r0 + lane] = v;
            if (with_index) oi[base + r0 + lane] = p;
        }
    }
}

// one pass: runs of width w of each row merged in pairs, a thread per ``slice`` outputs
// (PIECE_, or 2w when the pairs are shorter)
extern "C" __global__ void dptx_sort_merge(const T_* keys, const long long* idx, T_* ok,
                                           long long* oi, I_ L, I_ S, I_ slices, I_ w,
                                           I_ slice, int with_index) {
    const I_ t = (I_)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= slices) return;
    const I_ row = t / S, s = t % S;
    const long long base = (long long)row * L;
    const I_ start = s * slice;                     // the slice's first output in the row
    const I_ lo = start / (2 * w) * (2 * w);        // its pair of runs: [lo, mid), [mid, hi)
    const I_ mid = lo + w < L ? lo + w : L, hi = lo + 2 * w < L ? lo + 2 * w : L;
    // merge path: how many of the first (start - lo) outputs come from the left run
    const I_ d = start - lo, na = mid - lo, nb = hi - mid;
    I_ a0 = d > nb ? d - nb : 0, a1 = d < na ? d : na;
    // (every index read is clamped to its run: no change to the values, but the access
    // footprint then bounds a chunk's reads by its pairs of runs, not the whole array)
    while (a0 < a1) {                               // the smallest i with right[d-i-1] < left[i]
        const I_ i = (a0 + a1) / 2;
        if (before(keys[base + clamp(mid + (d - i - 1), mid, hi - 1)],
                   keys[base + clamp(lo + i, lo, mid - 1)])) a1 = i; else a0 = i + 1;
    }
    I_ i = lo + a0, j = mid + (d - a0);
    // the two runs' next elements in registers: a step loads one element, the one after
    // the element it takes (bitwise operators: a select, not a branch, per step)
    T_ left = keys[base + clamp(i, lo, mid - 1)], right_v = keys[base + clamp(j, mid, hi - 1)];
    // a count from 0 bounded by PIECE_ (the footprint then bounds the writes by the slice)
    #pragma unroll 1
    for (I_ k = 0; k < PIECE_ && k < slice && start + k < hi; k++) {
        const bool right = (j < hi) & ((i >= mid) | before(right_v, left));
        ok[base + start + k] = right ? right_v : left;
        if (with_index)
            oi[base + start + k] = right ? idx[base + clamp(j, mid, hi - 1)]
                                         : idx[base + clamp(i, lo, mid - 1)];
        i += right ? 0 : 1;
        j += right ? 1 : 0;
        const T_ next = keys[base + (right ? clamp(j, mid, hi - 1) : clamp(i, lo, mid - 1))];
        left = right ? left : next;
        right_v = right ? next : right_v;
    }
}
"""


def _local_merges() -> str:
    """The kernel that merges runs of RUN up to PIECE within each PIECE-slice of a row, a
    thread per slice, level after level between the two buffers (one launch for what took a
    launch per level: each cost a Dask round trip). Each level is written out with its own
    source and destination (a pointer chosen at run time would hide from the access
    footprint which buffer a thread writes)."""
    levels, w, out = [], RUN, []
    while w < PIECE:
        levels.append(w)
        w *= 2
    for k, w in enumerate(levels):
        src, dst = ("ka", "kb") if k % 2 == 0 else ("kb", "ka")
        isrc, idst = ("ia", "ib") if k % 2 == 0 else ("ib", "ia")
        # one loop over the slice per level (a nested loop per pair of runs hid from the
        # access footprint that the writes stay in the slice); each read clamped to the
        # slice as well as to its run (no change to the values)
        # the two runs' next elements in registers, as in dptx_sort_merge
        out.append(f"""    if (levels > {k}) {{
        I_ lo = start, mid = start, hi = start, i = start, j = start;
        T_ left = {src}[base + start], right_v = left;
        #pragma unroll 1
        for (I_ k = 0; k < PIECE_ && start + k < end; k++) {{
            if (k % {2 * w} == 0) {{
                lo = start + k;
                mid = lo + {w} < end ? lo + {w} : end;
                hi = lo + {2 * w} < end ? lo + {2 * w} : end;
                i = lo; j = mid;
                left = {src}[base + clamp(clamp(i, lo, mid - 1), start, end - 1)];
                right_v = {src}[base + clamp(clamp(j, mid, hi - 1), start, end - 1)];
            }}
            const bool right = (j < hi) & ((i >= mid) | before(right_v, left));
            {dst}[base + start + k] = right ? right_v : left;
            if (with_index)
                {idst}[base + start + k] = {isrc}[base + (right
                    ? clamp(clamp(j, mid, hi - 1), start, end - 1)
                    : clamp(clamp(i, lo, mid - 1), start, end - 1))];
            i += right ? 0 : 1;
            j += right ? 1 : 0;
            const T_ next = {src}[base + (right ? clamp(clamp(j, mid, hi - 1), start, end - 1)
                                                : clamp(clamp(i, lo, mid - 1), start, end - 1))];
            left = right ? left : next;
            right_v = right ? next : right_v;
        }}
    }}""")
    body = "\n".join(out)
    return f"""
// runs of RUN_ merged up to PIECE_ within each slice of PIECE_ elements (``levels`` of them:
// fewer for short rows), between ka/ia and kb/ib in turn, starting from ka/ia
extern "C" __global__ void dptx_sort_local(T_* ka, long long* ia, T_* kb, long long* ib,
                                           I_ L, I_ S, I_ slices, int levels, int with_index) {{
    const I_ t = (I_)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= slices) return;
    const I_ row = t / S, s = t % S;
    const long long base = (long long)row * L;
    const I_ start = s * PIECE_, end = start + PIECE_ < L ? start + PIECE_ : L;
{body}
}}
"""


_SOURCE += _local_merges()
_modules = KernelCache()


def _module(dtype: np.dtype, wide: bool) -> RawModule:
    return _modules.get(("sort", str(dtype), wide), lambda: RawModule(with_type_headers(
        f"typedef {c_type(dtype)} T_;\ntypedef {'long long' if wide else 'int'} I_;\n"
        f"#define PIECE_ ((I_){PIECE})\n#define RUN_ ((I_){RUN})\n"
        f"#define FLOAT_ {int(dtype.kind == 'f')}\n#define COMPLEX_ {int(dtype.kind == 'c')}\n"
        f"#define NARROW_ {int(dtype.itemsize < 4 and dtype.kind not in 'fc')}\n"
        f"#define REREAD_ {int(dtype.itemsize >= 8 or dtype == HALF)}\n" + _SOURCE),
        options=("--fmad=false",)))


def _sorted(a, axis, with_index: bool):
    a = asarray(a)
    if axis is None:
        a, axis = a.reshape(-1), 0
    if a.ndim == 0:
        raise np.exceptions.AxisError(axis, 0)
    ax = _axes((axis,), a.ndim)[0]
    moved = a.swapaxes(ax, -1)
    keys = moved.copy()                          # contiguous, ours to sort in place
    L = keys.shape[-1] if keys.ndim else 1
    rows = keys.size // L if L else 0
    idx = empty(keys.shape, np.int64) if with_index else empty((1,), np.int64)
    if keys.size:
        wide = keys.size > np.iinfo(np.int32).max
        I = np.int64 if wide else np.int32
        mod = _module(keys.dtype, wide)
        flag = np.int32(with_index)
        other = (empty(keys.shape, keys.dtype), empty(keys.shape, np.int64) if with_index else idx)
        mod.get_function("dptx_sort_runs")((-(-L // RUN), min(rows, 65535)), (RUN,), [
            keys, other[0], other[1], I(L), I(rows), flag])
        src, dst = other, (keys, idx)
        w = RUN
        # the levels up to PIECE in one launch, each thread within its slice of PIECE
        levels = 0
        while w < L and w < PIECE:
            levels, w = levels + 1, w * 2
        if levels:
            S = -(-L // PIECE)
            mod.get_function("dptx_sort_local")((-(-(rows * S) // BLOCK),), (BLOCK,), [
                src[0], src[1], dst[0], dst[1], I(L), I(S), I(rows * S), np.int32(levels),
                flag])
            if levels % 2:
                src, dst = dst, src
        while w < L:
            slice_ = min(PIECE, 2 * w)
            S = -(-L // slice_)
            mod.get_function("dptx_sort_merge")((-(-(rows * S) // BLOCK),), (BLOCK,), [
                src[0], src[1], dst[0], dst[1], I(L), I(S), I(rows * S), I(w), I(slice_),
                flag])
            src, dst = dst, src
            w *= 2
        keys, idx = src
    result = idx if with_index else keys
    result = result.swapaxes(ax, -1)
    return result if result._contiguous else result.copy()


def _check_kind(kind) -> None:
    """numpy's kinds (by their first letter, as numpy reads them): each gives the values a
    stable sort gives, and argsort's indices of a stable sort."""
    if kind is not None and (not isinstance(kind, str) or not kind
                             or kind[0].lower() not in "qhms"):
        raise ValueError(f"sort kind must be one of 'quick', 'heap', or 'stable' "
                         f"(got {kind!r})")


def _check_select_kind(kind) -> None:
    if kind != "introselect":
        raise ValueError(f"select kind must be 'introselect' (got {kind!r})")


def _check_stable(kind, stable) -> None:
    """numpy 2's ``stable=`` (every dptx sort is stable: any value is kept)."""
    if stable is not None and kind is not None:
        raise ValueError("`kind` and keyword parameters can't be provided at the same time. "
                         "Use only one of them.")      # (numpy's words)


def sort(a, axis=-1, kind=None, order=None, *, stable=None) -> ndarray:
    """numpy.sort: a sorted copy along ``axis`` (of the flattened array for None), NaN last."""
    _check_stable(kind, stable)
    _check_kind(kind)
    if order is not None:
        raise ValueError("Cannot specify order when the array has no fields.")
    return _sorted(a, axis, with_index=False)


def argsort(a, axis=-1, kind=None, order=None, *, stable=None) -> ndarray:
    """numpy.argsort: the indices that sort ``a`` along ``axis``, equal elements in their
    order (numpy's ``kind='stable'``; any kind's answer where the elements differ)."""
    _check_stable(kind, stable)
    _check_kind(kind)
    if order is not None:
        raise ValueError("Cannot specify order when the array has no fields.")
    return _sorted(a, axis, with_index=True)


def partition(a, kth, axis=-1, kind="introselect", order=None) -> ndarray:
    """numpy.partition: the element at each ``kth`` where a sort would put it, smaller ones
    before it and larger ones after. A full sort (numpy's guarantees hold; how it arranges
    the elements between the kth positions is unspecified, and here they are sorted)."""
    a = asarray(a)
    _check_select_kind(kind)
    _check_kth(a, kth, axis)
    return sort(a, axis, order=order)


def argpartition(a, kth, axis=-1, kind="introselect", order=None) -> ndarray:
    """numpy.argpartition: the indices ``partition`` would take (those of a stable sort)."""
    a = asarray(a)
    _check_select_kind(kind)
    _check_kth(a, kth, axis)
    return argsort(a, axis, order=order)


def _check_kth(a, kth, axis) -> None:
    """numpy's error for a kth outside the axis."""
    n = a.size if axis is None else a.shape[_axes((axis,), a.ndim)[0]] if a.ndim else 1
    for k in np.atleast_1d(np.asarray(kth)):
        if not -n <= int(k) < n:
            raise ValueError(f"kth(={int(k)}) out of bounds ({n})")


def lexsort(keys, axis=-1) -> ndarray:
    """numpy.lexsort of 1-D keys: the indices that sort by the last key, ties by the one
    before, and so on (stable sorts by each key from the first, on the devices)."""
    keys = list(keys) if not isinstance(keys, ndarray) else [keys[k] for k in range(len(keys))]
    if not keys:
        raise TypeError("need sequence of keys with len > 0 in lexsort")
    keys = [asarray(k) for k in keys]
    if any(k.ndim != 1 for k in keys) or axis not in (-1, 0):
        raise DptxError("lexsort of keys other than 1-D arrays is not supported on dptx "
                        "arrays yet")
    if any(k.shape != keys[0].shape for k in keys):
        raise ValueError("all keys need to be the same shape")
    order = argsort(keys[0])
    for key in keys[1:]:
        order = indexing.take(order, argsort(indexing.take(key, order)))
    return order


def sort_in_place(self, axis=-1, kind=None, order=None, *, stable=None) -> None:
    """``a.sort()``: sorted in place (through a sorted copy)."""
    self[...] = sort(self, axis, kind, order, stable=stable)


def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None,
           *, equal_nan=True, sorted=True):
    """numpy.unique of the flattened array: the sorted distinct values (NaNs one value with
    ``equal_nan``, as numpy 2), and where asked the index of each one's first occurrence, the
    index of each element's value in the result (in the input's shape), and the counts. The
    size of the result is read back (one wait), as in CuPy. ``sorted=False`` (numpy 2.3)
    allows any order: the values come sorted all the same."""
    if axis is not None:
        return _unique_along(asarray(ar), axis, return_index, return_inverse, return_counts)
    a = asarray(ar)
    flat = a.reshape(-1)
    order = argsort(flat)
    ordered = indexing.getitem(flat, (order,)) if flat.size else flat.copy()
    first = empty((flat.size,), np.bool_)
    if flat.size:
        first[:1] = True
        later = ufuncs.apply(np.not_equal, ordered[1:], ordered[:-1])
        if equal_nan and a.dtype.kind == "f":
            both = ufuncs.apply(np.logical_and, ufuncs.apply(np.isnan, ordered[1:]),
                                ufuncs.apply(np.isnan, ordered[:-1]))
            later = ufuncs.apply(np.logical_and, later, ufuncs.apply(np.logical_not, both))
        first[1:] = later
    values = selection.mask_select(ordered, first)
    if not (return_index or return_inverse or return_counts):
        return values
    result = [values]
    if return_index:
        result.append(selection.mask_select(order, first))
    if return_inverse:
        rank = ufuncs.apply(np.subtract, scan.cumsum(first, dtype=np.int64), 1)
        inverse = indexing.getitem(rank, (argsort(order),)) if flat.size else rank
        result.append(inverse.reshape(a.shape))
    if return_counts:
        result.append(_run_lengths(first, flat.size))
    return tuple(result)


def _run_lengths(first: ndarray, n: int) -> ndarray:
    """The lengths of the runs that start where ``first`` (of length n) is True."""
    starts = selection.flatnonzero(first)
    ends = joining.concatenate([starts[1:], asarray(np.array([n], np.int64))])
    return ufuncs.apply(np.subtract, ends, starts)


def _unique_along(a: ndarray, axis, return_index, return_inverse, return_counts):
    """numpy.unique(axis=): the distinct slices along ``axis``, as numpy finds them (each
    slice a row, the rows sorted lexicographically, a row kept where it differs from the
    one before in any element: NaN rows stay distinct, as numpy's), with the first
    occurrences, the 1-D inverse and the counts where asked. A lexicographic sort is one
    stable sort per element of a row (numpy sorts the rows as records, in one)."""
    axis = _axes((axis,), a.ndim)[0]
    moved = views.moveaxis(a, axis, 0)
    n = moved.shape[0]
    rows = moved.reshape(n, -1) if n else moved.reshape(0, int(np.prod(moved.shape[1:])))
    width = rows.shape[1]
    if width == 0:                      # every row is the empty row: one, where there is any
        order = asarray(np.arange(n, dtype=np.int64))
        first = asarray(np.arange(n) == 0)
    else:
        order = lexsort([rows[:, j] for j in reversed(range(width))]) if n else \
            empty((0,), np.int64)
        first = empty((n,), np.bool_)
        if n:
            ordered = indexing.take(rows, order, axis=0)
            first[:1] = True
            if n > 1:
                first[1:] = reductions.any_(ufuncs.apply(np.not_equal, ordered[1:],
                                                         ordered[:-1]), axis=1)
    kept = selection.mask_select(order, first) if n else order
    values = indexing.take(moved, kept, axis=0)
    values = views.moveaxis(values, 0, axis)
    if not (return_index or return_inverse or return_counts):
        return values
    result = [values]
    if return_index:
        result.append(kept)
    if return_inverse:
        rank = ufuncs.apply(np.subtract, scan.cumsum(first, dtype=np.int64), 1)
        result.append(indexing.getitem(rank, (argsort(order),)) if n else rank)
    if return_counts:
        result.append(_run_lengths(first, n))
    return tuple(result)


_SEARCH = r"""
// numpy.searchsorted: for each v, the first i with a[i] >= v ('left') or a[i] > v ('right')
// in numpy's order (NaN last), by bisection over the sorted a
extern "C" __global__ void dptx_searchsorted(const T_* a, I_ n, const T_* v, long long* out,
                                             I_ m, int right) {
    const I_ t = (I_)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= m) return;
    const T_ x = v[t];
    I_ lo = 0, hi = n;
    while (lo < hi) {
        const I_ mid = lo + (hi - lo) / 2;
        const T_ y = a[mid < n - 1 ? mid : n - 1];
        if (right ? !before(x, y) : before(y, x)) lo = mid + 1; else hi = mid;
    }
    out[t] = lo;
}
"""


def searchsorted(a, v, side="left", sorter=None) -> ndarray:
    """numpy.searchsorted: where each of ``v`` would go in the sorted 1-D ``a`` to keep it
    sorted (the first such place for 'left', the last for 'right'), in numpy's order (NaN
    last); ``v`` converted to their common type as numpy does."""
    if side not in ("left", "right"):
        raise ValueError(f"side must be 'left' or 'right' (got {side!r})")
    a = asarray(a)
    if a.ndim != 1:
        raise ValueError("object too deep for desired array")
    if sorter is not None:
        a = indexing.getitem(a, (asarray(sorter),))
    scalar = not isinstance(v, ndarray) and np.ndim(v) == 0
    values = asarray(np.asarray(v)) if not isinstance(v, ndarray) else v
    T = np.result_type(a.dtype, values.dtype)
    a = a if a.dtype == T else ufuncs.astype(a, T)
    values = (values if values.dtype == T else ufuncs.astype(values, T)).reshape(-1)
    values = values if values._contiguous else values.copy()
    a = a if a._contiguous else a.copy()
    out = empty(values.shape, np.int64)
    if out.size:
        wide = max(a.size, out.size) > np.iinfo(np.int32).max
        I = np.int64 if wide else np.int32
        mod = _modules.get(("search", str(T), wide), lambda: RawModule(with_type_headers(
            f"typedef {c_type(T)} T_;\ntypedef {'long long' if wide else 'int'} I_;\n"
            f"#define FLOAT_ {int(T.kind == 'f')}\n#define COMPLEX_ {int(T.kind == 'c')}\n"
            + _SOURCE.split("extern")[0] + _SEARCH)))
        if a.size:
            mod.get_function("dptx_searchsorted")((-(-out.size // BLOCK),), (BLOCK,), [
                a, I(a.size), values, out, I(out.size), np.int32(side == "right")])
        else:
            out.fill(0)
    shape = () if scalar else (v.shape if isinstance(v, ndarray) else np.shape(v))
    return out.reshape(shape)
