"""numpy.interp on the devices: each element finds its interval of the sample points by
bisection and interpolates in float64, as numpy's C loop does (``arr_interp``), its special
cases included (NaN, the ends, an exact sample point, a non-finite slope)."""
from __future__ import annotations

import numpy as np

from .._core import ufuncs
from .._core.elementwise import ElementwiseKernel, KernelCache
from .._manipulation.joining import concatenate
from .._sorting.sorting import argsort
from ..errors import DptxError
from ..runtime.ndarray import asarray, ascontiguousarray, ndarray

# numpy's functions of these names (array_api dispatches numpy's to them)
__all__ = ["interp"]

_kernels = KernelCache()

# xp and fp raw (the whole arrays), n their length, l and r the values beyond the ends; each
# case leaves the do-while with its value in z
_OPERATION = r"""
do {
const double v = (double)x;
if (n == 1) { z = (v < xp[0]) ? l : ((v > xp[0]) ? r : fp[0]); break; }   // NaN: fp[0]
if (v != v) { z = v; break; }
if (v < xp[0]) { z = l; break; }
if (v > xp[n - 1]) { z = r; break; }
long long lo = 0, hi = n - 1;            // the last j with xp[j] <= v (xp[0] <= v here)
#pragma unroll 1
while (hi - lo > 1) {
    const long long mid = lo + (hi - lo) / 2;
    if (xp[mid] <= v) lo = mid; else hi = mid;
}
long long j = (xp[hi] <= v) ? hi : lo;
if (j == n - 1 || xp[j] == v) { z = fp[j]; break; }
const double slope = (fp[j + 1] - fp[j]) / (xp[j + 1] - xp[j]);
double y = slope * (v - xp[j]) + fp[j];
if (y != y) {                             // NaN one way: try from the other end
    y = slope * (v - xp[j + 1]) + fp[j + 1];
    if (y != y && fp[j] == fp[j + 1]) y = fp[j];
}
z = y;
} while (0);
"""


def interp(x, xp, fp, left=None, right=None, period=None) -> ndarray:
    """numpy.interp: the piecewise-linear interpolant of (xp, fp) at x, in float64; ``left``
    and ``right`` (fp's ends by default) beyond the sample points. xp must increase, as
    numpy requires (it does not check). With ``period``: x and xp taken modulo the period,
    xp sorted (fp with it) and extended by one point at each end, as numpy does."""
    if period is not None:
        x, xp, fp = _periodic(x, xp, fp, period)
        left = right = None
    xp_d = ascontiguousarray(asarray(xp).astype(np.float64, copy=False))
    fp_d = ascontiguousarray(asarray(fp).astype(np.float64, copy=False))
    if xp_d.ndim != 1 or fp_d.ndim != 1:
        raise ValueError("object too deep for desired array")
    if xp_d.size == 0:
        raise ValueError("array of sample points is empty")
    if xp_d.size != fp_d.size:
        raise ValueError("fp and xp are not of the same length.")
    x = asarray(x)
    if x.dtype.kind == "c" or fp_d.dtype.kind == "c":
        raise DptxError("complex dtypes are not supported on dptx arrays yet")
    # left/right default to fp's ends, read on the devices: a 0-d view each, no wait
    lval = fp_d[0] if left is None else np.float64(left)
    rval = fp_d[-1] if right is None else np.float64(right)
    kernel = _kernels.get(("interp", str(x.dtype), isinstance(lval, ndarray),
                           isinstance(rval, ndarray)), lambda: ElementwiseKernel(
        f"X x, raw float64 xp, raw float64 fp, int64 n, "
        f"{'raw ' if isinstance(lval, ndarray) else ''}float64 _l, "
        f"{'raw ' if isinstance(rval, ndarray) else ''}float64 _r", "float64 z",
        ("const double l = _l[0]; " if isinstance(lval, ndarray) else "const double l = _l; ")
        + ("const double r = _r[0]; " if isinstance(rval, ndarray) else "const double r = _r; ")
        + _OPERATION, "dptx_interp", options=("--fmad=false",)))
    return kernel(x, xp_d, fp_d, np.int64(xp_d.size), lval, rval)


def _periodic(x, xp, fp, period) -> tuple:
    """numpy's normalization of periodic sample points, on the devices."""
    if period == 0:
        raise ValueError("period must be a non-zero value")
    period = abs(period)
    x = asarray(x).astype(np.float64, copy=False)
    xp = asarray(xp).astype(np.float64, copy=False)
    fp = asarray(fp).astype(np.float64, copy=False)
    if xp.ndim != 1 or fp.ndim != 1:
        raise ValueError("Data points must be 1d sequences")
    if xp.shape[0] != fp.shape[0]:
        raise ValueError("fp and xp are not of the same length")
    x = ufuncs.apply(np.remainder, x, period)
    xp = ufuncs.apply(np.remainder, xp, period)
    order = argsort(xp)         # (stable: numpy's quicksort may order equal points otherwise)
    xp, fp = xp[order], fp[order]
    xp = concatenate((ufuncs.apply(np.subtract, xp[-1:], period), xp,
                      ufuncs.apply(np.add, xp[0:1], period)))
    fp = concatenate((fp[-1:], fp, fp[0:1]))
    return x, xp, fp
