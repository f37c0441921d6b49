"""numpy's ``histogramdd`` and ``histogram2d`` on dptx arrays, as numpy 2 computes them: per
dimension, equal bins over the given range or the data's (its min and max read back, as
``histogram``'s) or increasing edges; each sample's bin found by a binary search
(``searchsorted`` on the devices, the last edge closed), the bins' flat index, and the counts
(or sums of weights) by atomic adds (``bincount``); float64 counts, or the density."""
from __future__ import annotations

import operator

import numpy as np

from . import binning
from .._core import reductions, ufuncs
from .._sorting import sorting
from ..runtime.ndarray import asarray, ndarray
from ..errors import DptxError
from .._indexing.index_tricks import ravel_multi_index
from .._manipulation.joining import stack
from .._creation.ranges import linspace

__all__ = ["histogram2d", "histogramdd"]
_range = range      # (numpy's parameter is named range)


def _samples(sample) -> ndarray:
    """(N, D) samples: an array of that shape, or a sequence of D 1-D arrays as columns."""
    if isinstance(sample, (ndarray, np.ndarray)) and sample.ndim == 2:
        return asarray(sample)
    if isinstance(sample, (list, tuple)):
        columns = [asarray(s) for s in sample]
        return stack([c.reshape(-1) for c in columns]).T if columns[0].ndim else \
            stack(columns).reshape(1, -1).T
    s = asarray(sample)
    return s.reshape(-1, 1) if s.ndim == 1 else s.reshape(1, 1)


def _edges(column: ndarray, bins, range_, i: int) -> ndarray:
    if np.ndim(bins) == 0:
        if bins < 1:
            raise ValueError(f"`bins[{i}]` must be positive, when an integer")
        smin, smax = binning._outer_edges(column, range_)
        try:
            n = operator.index(bins)
        except TypeError as e:
            raise TypeError(f"`bins[{i}]` must be an integer, when a scalar") from e
        return linspace(smin, smax, n + 1)
    if np.ndim(bins) == 1:
        edges = asarray(bins)
        if edges.size > 1 and bool(reductions.any_(ufuncs.apply(np.greater, edges[:-1],
                                                                edges[1:]))):
            raise ValueError(f"`bins[{i}]` must be monotonically increasing, when an array")
        return edges
    raise ValueError(f"`bins[{i}]` must be a scalar or 1d array")


def histogramdd(sample, bins=10, range=None, density=None, weights=None):
    """numpy.histogramdd: (the D-dimensional float64 histogram, the D arrays of edges)."""
    sample = _samples(sample)
    if sample.dtype.kind == "c":
        raise DptxError("complex dtypes are not supported on dptx arrays yet")
    N, D = sample.shape
    try:
        if len(bins) != D:
            raise ValueError("The dimension of bins must be equal to the dimension of the "
                             "sample x.")
    except TypeError:
        bins = D * [bins]
    if range is None:
        range = (None,) * D
    elif len(range) != D:
        raise ValueError("range argument must have one entry per dimension")
    edges = [_edges(sample[:, i], bins[i], range[i], i) for i in _range(D)]
    nbin = np.array([len(e) + 1 for e in edges], np.intp)   # an outlier bin at each end
    # each sample's bin along each axis (the last edge belongs to the last bin), then the
    # flat bin (every count is inside its axis: 'clip' changes nothing and reads nothing back)
    counts = []
    for i in _range(D):
        column = sample[:, i]
        on_edge = ufuncs.apply(np.equal, column, edges[i][-1])
        found = sorting.searchsorted(edges[i], column, side="right")
        counts.append(ufuncs.apply(np.subtract, found, ufuncs.astype(on_edge, np.int64)))
    flat = ravel_multi_index(counts, tuple(int(n) for n in nbin), mode="clip") if D else None
    if flat is None or flat.size == 0:
        hist = asarray(np.zeros(int(np.prod(nbin))))
    else:
        hist = binning.bincount(flat, weights, minlength=int(np.prod(nbin)))
    hist = hist.reshape(tuple(int(n) for n in nbin))
    if hist.dtype != np.float64:
        hist = ufuncs.astype(hist, np.float64)
    hist = hist[(slice(1, -1),) * D]
    if density:
        s = reductions.sum_(hist)
        for i in _range(D):
            shape = [1] * D
            shape[i] = int(nbin[i]) - 2
            hist = ufuncs.apply(np.true_divide, hist,
                                ufuncs.apply(np.subtract, edges[i][1:],
                                             edges[i][:-1]).reshape(tuple(shape)))
        hist = ufuncs.apply(np.true_divide, hist, s)
    return hist, edges


def histogram2d(x, y, bins=10, range=None, density=None, weights=None):
    """numpy.histogram2d: (the histogram of the pairs (x, y), x edges, y edges)."""
    if len(x) != len(y):
        raise ValueError("x and y must have the same length.")
    try:
        n = len(bins)
    except TypeError:
        n = 1
    if n not in {1, 2}:
        xedges = yedges = asarray(bins)
        bins = [xedges, yedges]
    hist, edges = histogramdd([x, y], bins, range, density, weights)
    return hist, edges[0], edges[1]
