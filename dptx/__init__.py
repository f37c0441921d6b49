"""dptx: a distributed PTX virtual machine.

Runs unmodified CUDA kernels (PTX, or CUDA C through NVRTC) on CPUs through LLVM and on a Dask
cluster of CPU and GPU workers. See README.md and docs/architecture.md.
"""
import importlib

from .errors import (CompileError, DptxError, DptxMemoryError, KernelNotFoundError,
                     OutOfMemoryError, VariableNotFoundError, ClusterLostError, DataLostError,
                     WorkerDiedError, DptxTimeoutError, DptxDeadlockError,
                     LaunchError, PtxSyntaxError, PtxUnsupportedError)
from . import config  # registers the dptx.* settings with dask.config
from .runtime.ndarray import (array, asarray, asnumpy, ascontiguousarray, asfortranarray, copy,
                              empty, empty_like, expand_dims, full, full_like, may_share_memory,
                              ndarray, ones, ones_like, ravel, reshape, squeeze, swapaxes,
                              transpose, zeros, zeros_like)
from ._ndarray_surface import copyto, count_nonzero, where
from ._creation.ranges import arange, geomspace, linspace, logspace
from ._manipulation.joining import block, column_stack, concatenate, dstack, hstack, stack, vstack
from ._core.scan import cumprod, cumsum
from ._sorting.sorting import argpartition, argsort, lexsort, partition, searchsorted, sort, unique
from ._statistics.binning import bincount, digitize, histogram, histogram_bin_edges
from ._statistics.histogramdd import histogram2d, histogramdd
from ._math.interpolation import interp
from .linalg._products import cross, inner, kron, tensordot, vdot
from .linalg._einsum import einsum
from . import linalg
from . import fft
from ._creation.matrices import (diag, diagflat, diagonal, eye, fill_diagonal, identity, outer,
                                 trace, tri, tril, triu, vander)
from ._manipulation.rearranging import diff, ediff1d, flip, fliplr, flipud, repeat, roll, tile
from ._manipulation.views import (array_split, atleast_1d, atleast_2d, atleast_3d,
                                  broadcast_arrays, broadcast_to, dsplit, hsplit, meshgrid,
                                  moveaxis, rollaxis, rot90, split, vsplit)
from ._statistics.statistics import average, median, percentile, ptp, quantile
from ._statistics.nanfunctions import (nanargmax, nanargmin, nancumprod, nancumsum, nanmax,
                                       nanmean, nanmedian, nanmin, nanpercentile, nanprod,
                                       nanquantile, nanstd, nansum, nanvar)
from . import random  # noqa: E402  (dptx.random, as cupy.random)
from ._math.rounding import around, fix, round_ as round
from ._math.misc import angle, imag, nan_to_num, real, sinc, unwrap
from ._math.polynomials import polyfit, polyval
from ._logic.comparison import allclose, array_equal, array_equiv, isclose, isneginf, isposinf
from ._statistics.moments import std, var
from ._indexing.indexing import put, take
from ._indexing.grids import c_, mgrid, ogrid, r_
from ._indexing.index_tricks import (choose, compress, diag_indices, diag_indices_from, extract,
                                     indices, ix_, mask_indices, place, put_along_axis, putmask,
                                     ravel_multi_index, select, take_along_axis, tril_indices,
                                     tril_indices_from, triu_indices, triu_indices_from,
                                     unravel_index)
from ._logic.array_queries import (get_array_module, iscomplex, iscomplexobj, isfortran, isreal,
                                   isrealobj, shares_memory)
from ._creation.construction import frombuffer, fromfunction
from ._creation.conversions import asanyarray, asarray_chkfinite, require
from ._io.formatting import array2string, array_repr, array_str
from ._io.npyio import (NpzFile, fromfile, fromiter, fromstring, genfromtxt, load, loadtxt, save,
                        savetxt, savez, savez_compressed)
from ._math.window_functions import bartlett, blackman, hamming, hanning, i0, kaiser
from ._math.functional import apply_along_axis, apply_over_axes, piecewise
from ._core.selection import argwhere, flatnonzero, nonzero
from ._sorting.setops import intersect1d, isin, setdiff1d, setxor1d, union1d
from ._manipulation.padding import pad
from ._math.convolution import convolve, correlate
from ._statistics.covariance import corrcoef, cov
from ._math.calculus import gradient, trapezoid
from ._manipulation.editing import append, delete, insert, resize, trim_zeros
from ._array_api.standard import (astype, concat, cumulative_prod, cumulative_sum,
                                  matrix_transpose, matvec, permute_dims, unique_all,
                                  unique_counts, unique_inverse, unique_values, unstack, vecdot,
                                  vecmat)
from ._math.bit_packing import packbits, unpackbits
from ._math.polynomials import polyadd, polyder, polyint, polymul, polysub
from ._core.elementwise import ElementwiseKernel
from ._core.fuse import fuse
from ._core.reduction_kernel import ReductionKernel
from ._core.reductions import (all_ as all, any_ as any, argmax, argmin, max_ as max,
                               max_ as amax, mean, min_ as min, min_ as amin, prod, sum_ as sum)
from ._core.products import dot, matmul
from ._core.ufuncs import clip
from .runtime.module import KernelParam, RawKernel, RawModule
from .runtime.handle import LaunchHandle
from .runtime.cluster import client, connect, dashboard_link, shutdown
from .runtime.stream import Event, Stream, get_current_stream, get_elapsed_time, synchronize
from . import cuda  # noqa: E402  (CuPy's cupy.cuda names for the virtual GPU)
from .cuda import get_default_memory_pool, get_default_pinned_memory_pool
from ._ufunc.ufunc_objects import ufunc, ufuncs_by_name as _ufuncs_by_name

# numpy's ufuncs under their numpy names and aliases, as CuPy's (dptx.sqrt, dptx.add,
# dptx.maximum.reduce, dptx.abs...): one ``ufunc`` object each, made from the list of those
# the array API computes (dptx._core.ufuncs.SUPPORTED), so the two cannot drift apart
_UFUNCS = _ufuncs_by_name()
globals().update(_UFUNCS)
# numpy's types, constants and type queries, as CuPy re-exports them (dptx.float32 is
# numpy.float32, dptx.newaxis, dptx.pi, dptx.finfo...)
from ._numpy_names import names as _numpy_names  # noqa: E402
_NUMPY_NAMES = _numpy_names()
globals().update(_NUMPY_NAMES)

from ._version import __version__  # noqa: E402

# The executors and the front-end as attributes of the package, imported on first use
# (``import dptx; dptx.cpu.launch(...)``): dptx.cpu brings in LLVM, which a program that only
# uses the cluster need not load.
_LAZY = ("cpu", "gpu", "ptx", "check", "testing")


def __getattr__(name):
    if name in _LAZY:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'dptx' has no attribute {name!r}")

__all__ = [
    "ndarray", "array", "asarray", "asnumpy", "empty", "empty_like", "zeros", "zeros_like",
    "ones", "full", "ones_like", "full_like", "copy", "may_share_memory", "arange", "linspace",
    "reshape", "ravel",
    "expand_dims", "squeeze", "transpose", "swapaxes", "ascontiguousarray", "asfortranarray", "concatenate",
    "stack", "vstack", "hstack", "column_stack", "around", "round", "isclose", "allclose",
    "array_equal", "var", "std", "cumsum", "cumprod", "random", "eye", "identity", "diag",
    "diagonal", "trace", "tril", "triu", "outer", "flip", "fliplr", "flipud", "roll", "tile",
    "repeat", "diff", "sort", "argsort", "unique", "searchsorted",
    "where", "nonzero", "flatnonzero", "argwhere", "count_nonzero", "take", "clip", "sum", "prod",
    "min", "max", "mean", "argmin", "argmax", "any", "all", "dot", "matmul", "ElementwiseKernel",
    "ReductionKernel", "fuse", "connect", "shutdown", "synchronize", "client", "dashboard_link",
    "LaunchHandle", "Stream", "Event", "get_elapsed_time", "get_current_stream",
    "RawModule", "RawKernel", "KernelParam", "DptxError", "CompileError", "PtxSyntaxError",
    "PtxUnsupportedError", "LaunchError", "DptxMemoryError", "KernelNotFoundError",
    "VariableNotFoundError", "ClusterLostError", "DataLostError", "WorkerDiedError",
    "OutOfMemoryError", "DptxTimeoutError", "DptxDeadlockError",
    "__version__", "ufunc", "dstack", "tri", "logspace", "array_split", "atleast_1d",
    "atleast_2d", "atleast_3d", "broadcast_arrays", "broadcast_to", "dsplit", "hsplit",
    "meshgrid", "moveaxis", "rollaxis", "rot90", "split", "vsplit", "average", "median",
    "nanmax", "nanmean", "nanmin", "nanprod", "nansum", "percentile", "ptp", "quantile",
    "amin", "amax", "nan_to_num", "copyto", "argpartition", "lexsort", "partition",
    "bincount", "digitize", "histogram", "interp", "cross", "einsum", "inner", "kron", "tensordot",
    "vdot", "fill_diagonal", "put", "linalg", "fft", "mgrid", "ogrid", "r_", "c_",
    "diag_indices", "diag_indices_from", "indices", "ix_", "place", "put_along_axis", "putmask",
    "ravel_multi_index", "select", "take_along_axis", "tril_indices", "tril_indices_from",
    "triu_indices", "triu_indices_from", "unravel_index", "nanargmax", "nanargmin",
    "nancumprod", "nancumsum", "nanmedian", "nanpercentile", "nanquantile", "nanstd", "nanvar",
    "intersect1d", "isin", "setdiff1d", "setxor1d", "union1d", "pad", "convolve", "correlate",
    "corrcoef", "cov", "gradient", "trapezoid", "append", "delete", "insert", "resize",
    "trim_zeros", "geomspace", "diagflat", "vander", "angle", "fix", "imag", "isneginf",
    "isposinf", "polyval", "real", "sinc", "histogram2d", "histogramdd", "block", "choose",
    "compress", "ediff1d", "extract", "frombuffer", "fromfunction", "get_array_module",
    "iscomplex", "iscomplexobj", "isreal", "isrealobj", "shares_memory", "bartlett",
    "blackman", "hamming", "hanning", "i0", "kaiser", "apply_along_axis", "apply_over_axes",
    "piecewise", "polyfit", "unwrap", "astype", "concat", "cumulative_prod", "cumulative_sum",
    "matrix_transpose", "matvec", "permute_dims", "unique_all", "unique_counts",
    "unique_inverse", "unique_values", "unstack", "vecdot", "vecmat", "packbits", "unpackbits",
    "array_equiv", "asanyarray", "asarray_chkfinite", "require", "array2string", "array_repr",
    "array_str", "NpzFile", "fromfile", "fromiter", "fromstring", "genfromtxt", "load",
    "loadtxt", "save", "savetxt", "savez", "savez_compressed", "mask_indices", "isfortran",
    "histogram_bin_edges", "polyadd", "polyder", "polyint", "polymul", "polysub", "cuda",
    "get_default_memory_pool", "get_default_pinned_memory_pool",
]
__all__ += sorted(_UFUNCS) + sorted(_NUMPY_NAMES)
