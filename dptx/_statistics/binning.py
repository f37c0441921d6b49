"""Counting into bins, as numpy's: ``bincount``, ``histogram`` and ``digitize``. Each element
finds its bin in a thread and adds to it with an atomic add; the runtime combines the
chunks' additions (reduction atomics, DESIGN.md point 5), so a launch splits and balances as
any other. What numpy reads off the data before it can start (``bincount``'s length and its
error for negative values, ``histogram``'s range when none is given) is read back here too,
as in CuPy: one small reduction and a wait."""
from __future__ import annotations

import numpy as np

from .._core import reductions, ufuncs
from .._core.elementwise import KernelCache, c_type, with_type_headers
from .._creation.ranges import linspace
from .._manipulation.joining import stack
from .._sorting import sorting
from ..errors import DptxError
from ..runtime.module import RawModule
from ..runtime.ndarray import asarray, ascontiguousarray, ndarray, zeros
from .moments import std
from .statistics import percentile

# numpy's functions of these names (array_api dispatches numpy's to them)
__all__ = ["bincount", "digitize", "histogram", "histogram_bin_edges"]

BLOCK = 256

_SOURCE = r"""
// I_: sizes; X_: the data; E_: the edges' type; W_: the weights'; F_: the type numpy
// computes a bin's position in (RF rounds each step to it where it is half).
extern "C" __global__ void dptx_bincount(const X_* x, I_ n, unsigned long long* counts) {
    const I_ i = (I_)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&counts[(I_)x[i]], 1ULL);
}
extern "C" __global__ void dptx_bincount_weighted(const X_* x, const W_* w, I_ n,
                                                  double* sums) {
    const I_ i = (I_)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&sums[(I_)x[i]], (double)w[i]);
}
// numpy's histogram bin of one element, or -1 outside the edges. Uniform bins (numpy's fast
// path, its arithmetic step for step): the offset from the first edge in E_, divided by the
// span and scaled in F_ (double, or the data's type where numpy took the range from the
// data's own min and max, scalars of that type), truncated, then moved by one where the
// element lies on the other side of the edge it was put against. Other edges: a bisection
// (numpy's search of the sorted data against the edges, the last bin closed).
__device__ long long bin_of(E_ v, const E_* edges, I_ nbins, E_ first, E_ last, F_ span,
                            int uniform) {
    if (!(v >= first && v <= last)) return -1;          // NaN too
    long long k;
    if (uniform) {
        const F_ f = RF(RF((F_)(E_)(v - first) / span) * (F_)nbins);
        k = (long long)f;
        if (k == nbins) k -= 1;
        if (v < edges[k]) k -= 1;
        if (v >= edges[k + 1] && k != nbins - 1) k += 1;
    } else {
        long long lo = 0, hi = nbins;                   // the last edge <= v, below nbins
        #pragma unroll 1
        while (hi - lo > 1) {
            const long long mid = lo + (hi - lo) / 2;
            if (edges[mid] <= v) lo = mid; else hi = mid;
        }
        k = lo;
    }
    return k;
}
extern "C" __global__ void dptx_histogram(const X_* x, I_ n, const E_* edges, I_ nbins,
                                          E_ first, E_ last, F_ span, int uniform,
                                          unsigned long long* counts) {
    const I_ i = (I_)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const long long k = bin_of((E_)x[i], edges, nbins, first, last, span, uniform);
    if (k >= 0) atomicAdd(&counts[k], 1ULL);
}
extern "C" __global__ void dptx_histogram_weighted(const X_* x, const W_* w, I_ n,
                                                   const E_* edges, I_ nbins, E_ first,
                                                   E_ last, F_ span, int uniform,
                                                   double* sums) {
    const I_ i = (I_)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const long long k = bin_of((E_)x[i], edges, nbins, first, last, span, uniform);
    if (k >= 0) atomicAdd(&sums[k], (double)w[i]);
}
"""

_modules = KernelCache()


def _module(x: np.dtype, e: np.dtype, w: np.dtype, wide: bool,
            f: np.dtype = np.dtype(np.float64)) -> RawModule:
    key = (str(x), str(e), str(w), wide, str(f))
    half = f == np.float16
    return _modules.get(key, lambda: RawModule(with_type_headers(
        f"typedef {c_type(x)} X_;\ntypedef {c_type(e)} E_;\ntypedef {c_type(w)} W_;\n"
        f"typedef {'float' if half else c_type(f)} F_;\n"
        f"#define RF(v) {'((float)(__half)(v))' if half else '(v)'}\n"
        f"typedef {'long long' if wide else 'int'} I_;\n" + _SOURCE),
        options=("--fmad=false",)))


def _flat(a) -> ndarray:
    return ascontiguousarray(asarray(a).reshape(-1))


def _index(n: int):
    return np.int64(n) if n > np.iinfo(np.int32).max else np.int32(n)


def bincount(x, weights=None, minlength=0) -> ndarray:
    """numpy.bincount of non-negative integers: int64 counts (float64 sums of ``weights``), of
    length max(x) + 1 or ``minlength``; numpy's errors (the smallest and largest values are
    read back for them and for the length, as CuPy does)."""
    x = _flat(x)
    if x.dtype.kind not in "iub":
        raise TypeError(f"Cannot cast array data from {x.dtype!r} to dtype('int64') "
                        f"according to the rule 'safe'")
    if minlength is None or minlength < 0:
        raise ValueError("'minlength' must not be negative")
    n = x.size
    length = int(minlength)
    if n:
        lo, hi = (int(v) for v in _extremes(x))
        if lo < 0:
            raise ValueError("'list' argument must have no negative elements")
        length = max(length, hi + 1)
    wide = max(n, length) > np.iinfo(np.int32).max
    if weights is None:
        counts = zeros((length,), np.uint64)
        if n:
            mod = _module(x.dtype, np.dtype(np.float64), np.dtype(np.float64), wide)
            mod.get_function("dptx_bincount")((-(-n // BLOCK),), (BLOCK,),
                                              [x, _index(n), counts])
        return counts.view(np.int64)
    w = _flat(weights)
    if w.size != n:
        raise ValueError("The weights and list don't have the same length.")
    sums = zeros((length,), np.float64)
    if n:
        mod = _module(x.dtype, np.dtype(np.float64), w.dtype, wide)
        mod.get_function("dptx_bincount_weighted")((-(-n // BLOCK),), (BLOCK,),
                                                   [x, w, _index(n), sums])
    return sums


def _extremes(x: ndarray) -> tuple:
    """(min, max) of a non-empty array, read back together (one wait)."""
    both = stack([reductions.min_(x), reductions.max_(x)]).get()
    return both[0], both[1]


def histogram_bin_edges(a, bins=10, range=None, weights=None) -> ndarray:
    """numpy.histogram_bin_edges: the edges ``histogram`` bins ``a`` with (equal bins over
    the range, an estimator's number of them, or the edges given, checked)."""
    x = _flat(a)
    if weights is not None and _flat(weights).size != x.size:
        raise ValueError("weights should have the same shape as a.")
    return _Bins(x, bins, range, weights).returned


class _Bins:
    """numpy's bins of a histogram of ``x``: ``edges`` (in ``etype``, the type values are
    compared in), ``returned`` (what numpy returns: the edges as given, for given ones),
    ``nbins``, the outer edges, and for equal bins the span and the type numpy computes a
    value's bin in (``uniform``)."""

    def __init__(self, x: ndarray, bins, range_, weights):
        if x.dtype.kind == "c":
            raise DptxError("complex dtypes are not supported on dptx arrays yet")
        if isinstance(bins, str):
            if weights is not None:
                raise TypeError("Automated estimation of the number of bins is not supported "
                                "for weighted data")
            bins = _estimated_bins(x, bins, range_)
        if np.ndim(bins) == 0:
            nbins = int(bins)
            if nbins != bins:
                raise TypeError("`bins` must be an integer, a string, or an array")
            if nbins < 1:
                raise ValueError("`bins` must be positive, when an integer")
            first, last = _outer_edges(x, range_)
            # numpy's edge type: the data's and the range's, at least float
            probe = np.empty(0, x.dtype)
            etype = np.result_type(first, last, probe)
            if etype.kind in "iub":
                etype = np.result_type(etype, float)
            self.edges = self.returned = linspace(first, last, nbins + 1, endpoint=True,
                                                  dtype=etype)
            self.span = _unsigned_subtract(last, first)
            # numpy: (the offset in E / span) * nbins, in the type that division gives
            self.ftype = np.result_type(np.empty(0, etype), self.span)
            self.uniform = 1
            self.first, self.last = np.array(first, etype)[()], np.array(last, etype)[()]
        else:
            host = np.asarray(bins.get() if isinstance(bins, ndarray) else bins)
            if host.ndim != 1:
                raise ValueError("`bins` must be 1d, when an array")
            if np.any(host[:-1] > host[1:]):
                raise ValueError("`bins` must increase monotonically, when an array")
            nbins = host.size - 1
            etype = np.result_type(x.dtype, host.dtype)
            self.returned = asarray(host)           # numpy returns the edges as given
            self.edges = self.returned if host.dtype == etype else asarray(host.astype(etype))
            self.span, self.uniform, self.ftype = np.float64(1.0), 0, np.dtype(np.float64)
            if host.size:
                self.first, self.last = host.astype(etype)[0], host.astype(etype)[-1]
        self.nbins, self.etype = nbins, etype


def histogram(a, bins=10, range=None, density=None, weights=None):
    """numpy.histogram: (counts, bin edges) for a number of equal bins over ``range`` (the
    data's min and max when not given: read back) or for increasing edges; values outside
    the edges left out, the last bin closed; int64 counts, or sums in ``weights``' type, or
    with ``density`` the probability density."""
    x = _flat(a)
    w = None if weights is None else _flat(weights)
    if w is not None and w.size != x.size:
        raise ValueError("weights should have the same shape as a.")
    b = _Bins(x, bins, range, w)
    nbins, etype, ftype, edges = b.nbins, b.etype, b.ftype, b.edges
    wide = x.size > np.iinfo(np.int32).max
    count = _index(x.size)
    if nbins < 1:
        raise ValueError("`bins` must have at least 2 edges")
    grid = (-(-x.size // BLOCK),)
    if w is None:
        counts = zeros((nbins,), np.uint64)
        if x.size:
            mod = _module(x.dtype, etype, np.dtype(np.float64), wide, ftype)
            mod.get_function("dptx_histogram")(grid, (BLOCK,), [
                x, count, edges, _index(nbins), b.first, b.last, _as(b.span, ftype),
                np.int32(b.uniform), counts])
        n = counts.view(np.int64)
    else:
        sums = zeros((nbins,), np.float64)
        if x.size:
            mod = _module(x.dtype, etype, w.dtype, wide, ftype)
            mod.get_function("dptx_histogram_weighted")(grid, (BLOCK,), [
                x, w, count, edges, _index(nbins), b.first, b.last, _as(b.span, ftype),
                np.int32(b.uniform), sums])
        n = sums if w.dtype == np.float64 else ufuncs.astype(sums, w.dtype)
    if density:
        # numpy: the widths as float64, then counts / widths / total
        widths = ufuncs.astype(ufuncs.apply(np.subtract, edges[1:], edges[:-1]), np.float64)
        total = reductions.sum_(n)
        return ufuncs.apply(np.true_divide, ufuncs.apply(np.true_divide, n, widths),
                            total), b.returned
    return n, b.returned


def _as(value, dtype: np.dtype):
    """A kernel's scalar of ``dtype`` (half travels as the float it widens to exactly)."""
    return np.array(value, dtype=dtype).astype(np.float32 if dtype == np.float16 else dtype)[()]


_ESTIMATORS = ("auto", "doane", "fd", "rice", "scott", "sqrt", "stone", "sturges")


def _estimated_bins(x: ndarray, name: str, range_) -> int:
    """numpy's number of equal bins for ``bins=name``: the data (within ``range``) measured
    on the devices (its span, and for some estimators its deviation, quartiles or skew,
    read back), the estimator's bin width as numpy computes it, the span divided by it."""
    if name not in _ESTIMATORS:
        raise ValueError(f"{name!r} is not a valid estimator for `bins`")
    if name == "stone":
        raise DptxError("histogram: bins='stone' (a histogram per candidate number of bins) is "
                        "not supported on dptx arrays yet")
    first, last = _outer_edges(x, range_)
    if range_ is not None:
        keep = ufuncs.apply(np.logical_and, ufuncs.apply(np.greater_equal, x, first),
                            ufuncs.apply(np.less_equal, x, last))
        if not bool(reductions.all_(keep).get()):
            x = x[keep]
    if x.size == 0:
        return 1
    width = _bin_width(x, name)
    if not width:
        return 1
    if x.dtype.kind in "iu" and width < 1:
        width = 1
    return int(np.ceil(_unsigned_subtract(last, first) / width))


def _bin_width(x: ndarray, name: str):
    """numpy's ``_hist_bin_<name>`` of the data ``x`` (1-D, not empty)."""

    def span():
        low, high = _extremes(x)
        return _unsigned_subtract(high, low)
    n = x.size
    if name == "sqrt":
        return span() / np.sqrt(n)
    if name == "sturges":
        return span() / (np.log2(n) + 1.0)
    if name == "rice":
        return span() / (2.0 * n ** (1.0 / 3))
    if name == "scott":
        return (24.0 * np.pi ** 0.5 / n) ** (1.0 / 3.0) * std(x).get()[()]
    if name == "fd":
        high, low = percentile(x, [75, 25]).get()
        return 2.0 * np.subtract(high, low) * n ** (-1.0 / 3.0)
    if name == "auto":
        fd, sturges = _bin_width(x, "fd"), _bin_width(x, "sturges")
        return min(fd, sturges) if fd else sturges
    # doane
    if n > 2:
        sg1 = np.sqrt(6.0 * (n - 2) / ((n + 1.0) * (n + 3)))
        sigma = std(x).get()[()]
        if sigma > 0.0:
            temp = ufuncs.apply(np.subtract, x, reductions.mean(x))
            temp = ufuncs.apply(np.power, ufuncs.apply(np.true_divide, temp, sigma), 3)
            g1 = reductions.mean(temp).get()[()]
            return span() / (1.0 + np.log2(n) + np.log2(1.0 + np.absolute(g1) / sg1))
    return 0.0


def _unsigned_subtract(a, b):
    """numpy's ``_unsigned_subtract``: a - b in their type, in the unsigned type of the same
    size for a signed integer one (the span of int8 data's range does not overflow)."""
    dt = np.result_type(a, b)
    if dt.kind == "i":
        return np.subtract(np.asarray(a, dtype=dt), np.asarray(b, dtype=dt), casting="unsafe",
                           dtype=np.dtype(f"u{dt.itemsize}"))
    return np.subtract(a, b, dtype=dt)


def _outer_edges(x: ndarray, range_):
    """numpy's ``_get_outer_edges``: the range given, or the data's min and max (read
    back), widened by 0.5 each way where they are equal."""
    if range_ is not None:
        first, last = range_
        if first > last:
            raise ValueError("max must be larger than min in range parameter.")
        if not (np.isfinite(first) and np.isfinite(last)):
            raise ValueError(f"supplied range of [{first}, {last}] is not finite")
    elif x.size == 0:
        first, last = 0, 1
    else:
        first, last = _extremes(x)         # numpy scalars of the data's type, as numpy's
        if not (np.isfinite(first) and np.isfinite(last)):
            raise ValueError(f"autodetected range of [{first}, {last}] is not finite")
    if first == last:
        first, last = first - 0.5, last + 0.5
    return first, last


def digitize(x, bins, right=False) -> ndarray:
    """numpy.digitize: the index of the bin each value falls in, for increasing or decreasing
    ``bins`` (``searchsorted`` on the devices, as numpy computes it)."""
    host = np.asarray(bins.get() if isinstance(bins, ndarray) else bins)
    if host.ndim != 1:
        raise ValueError("bins must be 1-dimensional")
    increasing = bool(np.all(host[:-1] <= host[1:]))
    if not increasing and not np.all(host[:-1] >= host[1:]):
        raise ValueError("bins must be monotonically increasing or decreasing")
    x = asarray(x)
    side = "left" if right else "right"
    if increasing:
        return sorting.searchsorted(asarray(host), x, side=side)
    found = sorting.searchsorted(asarray(np.ascontiguousarray(host[::-1])), x, side=side)
    return ufuncs.apply(np.subtract, host.size, found)
