"""``dptx.ReductionKernel`` and numpy's reductions (``sum``, ``prod``, ``min``, ``max``,
``mean``, ``argmin``, ``argmax``, ``any``, ``all`` with ``axis`` and ``keepdims``), ``dot`` and
``matmul``, as generated CUDA C launched like any user kernel.

A reduction of few outputs runs in two launches. The first cuts each output's reduced
elements into pieces of at least a few thousand and gives each (output, piece) a block: its
threads map and accumulate a strided share of the piece, then combine in shared memory (a
barrier per level) into one partial. The second reduces each output's partials in order and
applies the post-map. Otherwise (many outputs, or few elements each) one launch does it all:
block m reduces output m whole and writes it. The order of the operations is therefore not
numpy's (numpy sums float arrays pairwise along contiguous axes): float sums differ from
numpy's in the last bits, as CuPy's do. Integer, min/max/arg and logical reductions are exact."""
from __future__ import annotations

import threading

import numpy as np

from .elementwise import (HALF, KernelCache, bind_placeholder, c_type, conversion,
                          converted_inputs, element_strides, parse_params, with_half_header)
from ..errors import DptxError
from . import matrix_vector, outputs, ufuncs
from ..runtime.ndarray import _axes, asarray, ascontiguousarray, empty, may_share_memory, ndarray
from ..runtime.module import RawModule
from ..runtime.stream import stream_for

BLOCK = 256
MIN_PIECE = 4096          # elements per (output, piece) block at least
MAX_PIECES = 256
# Pieces are whole multiples of this many elements: each of a block's 8 warps takes a
# segment of a multiple of 128, which NVRTC's loop (unrolled by 4) covers in whole steps:
# the access footprint then bounds every block's reads exactly (see source()).
PIECE_ROUND = 8 * 128
# How a reduction's work is given out (ReductionKernel.source): a few long outputs in pieces
# (two launches), else a block per output, or a warp per output when it has at most
# WARP_ROWS elements (a block's barriers would cost more than its loads).
PIECES, ROWS, WARPS = "pieces", "rows", "warps"
WARP_ROWS = 4096
# The reduced axes leading and the kept ones trailing in C-contiguous arrays (``m.sum(axis=0)``)
# with outputs enough for whole warps: a thread per output, its lanes on consecutive outputs,
# each walking the reduced elements in order (every step reads a contiguous row; numpy adds
# the rows in the same order, so sums agree bit for bit). A block per output there read a
# column with a stride of a row, a cache line per element: 57x numpy's time.
# Beyond COLUMN_ROWS rows the reduced axis is cut into pieces of rows too (a grid of (column
# blocks, pieces), then each output's partials added in order): a chunk of blocks then reads
# only its rows, where a column block needed every row of the array on its worker, and a
# float sum runs COLUMN_ROWS additions in a row at a time rather than R (numpy's pairwise
# sum along a contiguous axis is that accurate; up to COLUMN_ROWS rows the order is numpy's
# own for a C-contiguous array, row after row).
COLUMNS, COLUMN_PIECES = "columns", "column_pieces"
COLUMNS_MIN_OUTPUTS = 64
COLUMN_ROWS = 128
MAX_COLUMN_PIECES = 256


def column_pieces(M: int, R: int) -> tuple:
    """(pieces, rows per piece) for a COLUMNS reduction of R rows of M outputs."""
    rows = max(COLUMN_ROWS, -(-R // MAX_COLUMN_PIECES))
    return max(1, -(-R // rows)), rows


def pieces(M: int, R: int) -> tuple:
    """(pieces per output, elements per piece) for M outputs of R reduced elements each: a
    few outputs are cut into pieces of at least MIN_PIECE elements, multiples of PIECE_ROUND,
    at most MAX_PIECES of them."""
    P = max(1, min(MAX_PIECES, R // MIN_PIECE)) if M < 64 else 1
    piece = -(-R // P // PIECE_ROUND) * PIECE_ROUND if R else 0
    return (-(-R // piece) if R else 1), piece


def _is_array(v) -> bool:
    return isinstance(v, ndarray)


class ReductionKernel:
    """CuPy's ``ReductionKernel(in_params, out_params, map_expr, reduce_expr, post_map_expr,
    identity, name='reduce_kernel', reduce_type=None, reduce_dims=True, preamble='',
    options=())``. ``map_expr`` maps the input elements to a value, ``reduce_expr`` combines
    two values ``a`` and ``b``, ``post_map_expr`` sets the outputs from the result ``a``;
    ``identity`` is the neutral value (C text). A call ``kernel(*args, axis=None,
    keepdims=False)`` reduces over ``axis`` (all axes by default) and returns the output."""

    def __init__(self, in_params, out_params, map_expr, reduce_expr, post_map_expr, identity,
                 name="reduce_kernel", reduce_type=None, reduce_dims=True, preamble="",
                 options=()):
        self.in_params, self.out_params = parse_params(in_params), parse_params(out_params)
        if not self.in_params or len(self.out_params) != 1:
            raise DptxError("a reduction kernel takes inputs and exactly one output")
        if any(p.raw for p in self.in_params + self.out_params):
            raise DptxError("raw parameters are not supported in reduction kernels")
        self.map_expr, self.reduce_expr, self.post_map_expr = map_expr, reduce_expr, post_map_expr
        self.identity, self.name, self.reduce_type = identity, name, reduce_type
        self.preamble, self.options = preamble, tuple(options)
        self._kernels, self._lock = {}, threading.Lock()

    def __repr__(self):
        return f"<dptx.ReductionKernel {self.name}>"

    def __call__(self, *args, out=None, axis=None, keepdims=False, stream=None):
        if len(args) != len(self.in_params):
            raise DptxError(f"{self.name}: takes {len(self.in_params)} inputs, got {len(args)}")
        if out is not None and any(may_share_memory(a, out) for a in args):
            # numpy's rule: as if the inputs were read whole before out is written (one
            # launch reduces rows while the output row it writes is another's input)
            result = self(*args, out=empty(out.shape, out.dtype), axis=axis,
                          keepdims=keepdims, stream=stream)
            out[...] = result
            return out
        permuted = self._permuted(args, axis, keepdims, out, stream)
        if permuted is not None:
            return permuted
        # strided views are read through a contiguous copy (one launch)
        args = [(a if a._contiguous else a.copy()) if _is_array(a) else a for a in args]
        if out is not None and not out._contiguous:
            result = self(*args, out=empty(out.shape, out.dtype), axis=axis,
                          keepdims=keepdims, stream=stream)
            out[...] = result
            return out
        arrays = [a for a in args if _is_array(a)]
        if not arrays:
            raise DptxError(f"{self.name}: needs at least one dptx array input")
        try:
            shape = np.broadcast_shapes(*[a.shape for a in arrays])
        except ValueError:
            raise ValueError(f"{self.name}: operands could not be broadcast together with "
                             f"shapes {' '.join(str(a.shape) for a in arrays)}") from None
        ndim = len(shape)
        red = tuple(range(ndim)) if axis is None else _axes(axis, ndim) if ndim else ()
        if axis is not None and ndim == 0:
            raise np.exceptions.AxisError(axis, 0)
        kept = tuple(k for k in range(ndim) if k not in red)
        out_shape = tuple(1 if k in red else shape[k] for k in range(ndim)) if keepdims \
            else tuple(shape[k] for k in kept)
        types, placeholders = self._types(args, out)
        args = converted_inputs(self.in_params, args, types)
        rtype = np.dtype(self.reduce_type) if self.reduce_type else types[self.out_params[0].name]
        want = types[self.out_params[0].name]
        if out is not None and out.dtype != want:
            # the kernel writes its output type: another one would get reinterpreted bytes
            raise DptxError(f"{self.name}: {self.out_params[0].name} must be {want}, got "
                            f"{out.dtype}")
        if out is None:
            out = empty(out_shape, types[self.out_params[0].name])
        elif out.shape != out_shape:
            raise ValueError(f"{self.name}: out has shape {out.shape}, the result {out_shape}")
        M = int(np.prod([shape[k] for k in kept], dtype=np.int64))
        R = int(np.prod([shape[k] for k in red], dtype=np.int64))
        if M == 0:
            return out
        P, piece = pieces(M, R)
        layout = self._layout(args, shape, kept, red, M)
        kinds = tuple("a" if _is_array(v) else "v" for v in args)
        if layout[0] == "c":
            P, piece = column_pieces(M, R)
            mode = COLUMN_PIECES if P > 1 else COLUMNS
        else:
            mode = PIECES if P > 1 else WARPS if R <= WARP_ROWS else ROWS
        wide = max([M * P, R, M * R, P * piece]
                   + [abs(int(v)) for v in layout[1]]) > np.iinfo(np.int32).max
        idx = np.int64 if wide else np.int32
        key = (tuple(str(types[p.name]) for p in self.in_params + self.out_params),
               str(rtype), kinds, layout[0], len(kept), len(red), mode, wide,
               tuple(sorted((k, str(v)) for k, v in placeholders.items())))
        with self._lock:
            kernels = self._kernels.get(key)
            if kernels is None:
                kernels = self._kernels[key] = self._compile(types, placeholders, rtype, kinds,
                                                            layout[0], len(kept), len(red), mode,
                                                            wide)
        first, second = kernels
        two = mode in (PIECES, COLUMN_PIECES)
        partial = self._partial(M * P, rtype) if two else out
        a1 = [self._arg(p, v, types) for p, v in zip(self.in_params, args)]
        a1 += [partial, idx(M), idx(R), idx(P), idx(piece)]
        a1 += [idx(v) for v in layout[1]]
        grid = {PIECES: (P, M), ROWS: (M,), COLUMNS: (-(-M // BLOCK),),
                COLUMN_PIECES: (-(-M // BLOCK), P)}.get(mode, (-(-M // (BLOCK // 32)),))
        with stream_for(stream).together():     # both launches in one message
            first(grid, (BLOCK,), a1, stream=stream)
            if two:
                second((-(-M // BLOCK),), (BLOCK,), [partial, out, idx(M), idx(P)],
                       stream=stream)
        return out

    def _permuted(self, args, axis, keepdims, out, stream):
        """The reduction of a transposed view (its axes a permutation of a C-contiguous
        array's), the one array argument, as the reduction of the array it views, with no
        copy (``m.T.sum(axis=1)`` is ``m.sum(axis=0)``), the kept axes put back in the view's
        order; None for anything else."""
        arrays = [a for a in args if _is_array(a)]
        if len(arrays) != 1 or arrays[0]._contiguous or arrays[0].ndim < 2 or not arrays[0].size:
            return None
        x = arrays[0]
        perm = sorted(range(x.ndim), key=lambda k: -abs(x.strides[k]))
        y = x.transpose(perm)
        if not y._contiguous:
            return None
        red = tuple(range(x.ndim)) if axis is None else _axes(axis, x.ndim)
        kept = [k for k in range(x.ndim) if k not in red]          # in the view's order
        kept_in_y = [k for k in perm if k not in red]               # in the array's order
        result = ReductionKernel.__call__(self, *[y if a is x else a for a in args],
                                          axis=tuple(sorted(perm.index(k) for k in red)),
                                          stream=stream)
        order = [kept_in_y.index(k) for k in kept]
        if order != list(range(len(order))):
            result = result.transpose(order)
        if keepdims:
            result = result.reshape(tuple(1 if k in red else x.shape[k] for k in range(x.ndim)))
        if out is not None:
            out[...] = result
            return out
        return result if result._contiguous else result.copy()

    def _partial(self, count: int, rtype):
        return empty((count,), rtype)

    @staticmethod
    def _arg(p, v, types):
        return v if _is_array(v) else np.array(v, dtype=types[p.name])[()]

    def _types(self, args, out):
        bound = {}
        for p, v in zip(self.in_params, args):
            if p.placeholder and _is_array(v):
                bind_placeholder(bound, self.name, p, v.dtype)
        for p, v in zip(self.in_params, args):
            if p.placeholder and p.type not in bound:
                bound[p.type] = np.result_type(v)
        o = self.out_params[0]
        if o.placeholder and o.type not in bound:
            if out is None:
                raise DptxError(f"{self.name}: the type {o.type} of the output is not "
                                f"determined by any input: pass out=")
            bound[o.type] = out.dtype
        types = {p.name: np.dtype(bound[p.type]) if p.placeholder else np.dtype(p.type)
                 for p in self.in_params + self.out_params}
        for t in types.values():
            c_type(t)
        return types, {k: np.dtype(v) for k, v in bound.items()}

    @staticmethod
    def _layout(args, shape, kept, red, M) -> tuple:
        """("t", []) when every array is C-contiguous with the full shape and the reduced
        axes are the trailing ones (element j of output m is at m * R + j); ("c", []) when
        they are the leading ones and there are COLUMNS_MIN_OUTPUTS outputs or more (element j
        of output m is at j * M + m); else ("s", [dims and per-array strides]) for index
        arithmetic."""
        full = all(a.shape == shape for a in args if _is_array(a))
        trailing = red == tuple(range(len(shape) - len(red), len(shape)))
        if trailing and full:
            return "t", []
        if full and kept and red == tuple(range(len(red))) and M >= COLUMNS_MIN_OUTPUTS:
            return "c", []
        extra = [shape[k] for k in kept] + [shape[k] for k in red]
        for a in args:
            if _is_array(a):
                st = element_strides(a, shape)
                extra += [st[k] for k in kept] + [st[k] for k in red]
        return "s", extra

    def _compile(self, types, placeholders, rtype, kinds, layout, nkept, nred, mode, wide):
        src = self.source(types, placeholders, rtype, kinds, layout, nkept, nred, mode, wide)
        mod = RawModule(with_half_header(src), options=self.options)
        if mode not in (PIECES, COLUMN_PIECES):
            return mod.get_function(f"{self.name}_{mode}"), None
        return mod.get_function(f"{self.name}_{mode}"), mod.get_function(f"{self.name}_final")

    def source(self, types, placeholders, rtype, kinds, layout, nkept, nred, mode,
               wide) -> str:
        """CUDA C of the reduction (see the module doc) in ``mode``: PIECES, two kernels
        (``<name>_pieces`` on a grid of (pieces, outputs), ``<name>_final``); ROWS, one kernel
        whose block m reduces output m whole and writes it through the post-map; WARPS, one
        kernel whose warp w of block b does that for output 8 b + w (no barrier at all).
        ``wide``: 64-bit sizes (see ``ElementwiseKernel.source``)."""
        typedefs = "".join(f"    typedef {c_type(dt)} {n};\n" for n, dt in placeholders.items())
        sig, loads = [], []
        arrays = [p for p, k in zip(self.in_params, kinds) if k == "a"]
        for p, k in zip(self.in_params, kinds):
            ct = c_type(types[p.name])
            if k == "v":
                sig.append(f"const {ct} {p.name}")
            else:
                sig.append(f"const {ct}* __restrict__ _p_{p.name}")
        out = self.out_params[0]
        out_ct = c_type(types[out.name])
        sig += ["_reduce_t* __restrict__ _partial" if mode in (PIECES, COLUMN_PIECES) else
                f"{out_ct}* __restrict__ _p_{out.name}",
                "const _idx_t _M", "const _idx_t _R", "const _idx_t _P", "const _idx_t _piece"]
        if layout == "t":
            for p in arrays:
                loads.append(f"const {c_type(types[p.name])} {p.name} = _p_{p.name}[_m * _R + _j];")
            index = ""
        elif layout == "c":
            for p in arrays:
                loads.append(f"const {c_type(types[p.name])} {p.name} = "
                             f"_p_{p.name}[(long long)_j * _M + _m];")
            index = ""
        else:
            sig += [f"const _idx_t _dk{k}" for k in range(nkept)]
            sig += [f"const _idx_t _dr{k}" for k in range(nred)]
            for p in arrays:
                sig += [f"const _idx_t _sk_{p.name}_{k}" for k in range(nkept)]
                sig += [f"const _idx_t _sr_{p.name}_{k}" for k in range(nred)]
            lines = ["long long _q = _m;"]
            for k in reversed(range(nkept)):
                lines.append(f"const long long _ik{k} = _q % _dk{k}; _q /= _dk{k};")
            lines.append("_q = _j;")
            for k in reversed(range(nred)):
                lines.append(f"const long long _ir{k} = _q % _dr{k}; _q /= _dr{k};")
            index = " ".join(lines)
            for p in arrays:
                terms = [f"_ik{k} * _sk_{p.name}_{k}" for k in range(nkept)]
                terms += [f"_ir{k} * _sr_{p.name}_{k}" for k in range(nred)]
                loads.append(f"const {c_type(types[p.name])} {p.name} = "
                             f"_p_{p.name}[{' + '.join(terms) or '0'}];")
        reduce_line = f"_reduce_t _c = ({self.reduce_expr}); a = _c;"
        post_map = (f"{out_ct} &{out.name} = _p_{out.name}[_m];\n"
                    f"        {self.post_map_expr};\n")
        # the loop that maps and accumulates the elements _j of output _m a thread takes
        accumulate = ("        const _idx_t _j = _wb + _k;\n"
                      f"        {index}\n"
                      + "".join(f"        {line}\n" for line in loads) +
                      f"        _reduce_t b = ({self.map_expr});\n"
                      f"        {reduce_line}\n"
                      "    }\n")
        # indices in 32 bits unless a size needs more (``wide``): the lanes of a warp on a CPU
        # then fill half the vector registers (a 16M-float sum: 7.7 -> 6.9 ms in-process)
        head = (f"{self.preamble}\n"
                f"typedef {c_type(rtype)} _reduce_t;\n"
                f"typedef {'long long' if wide else 'int'} _idx_t;\n")
        kernel = f'extern "C" __global__ void {self.name}_{mode}({", ".join(sig)}) {{\n{typedefs}'

        def final(index: str) -> str:
            """The second kernel: output m's partials reduced in order, partial p of output m
            at ``index`` (a format of ``p``)."""
            return (f'extern "C" __global__ void {self.name}_final('
                    f"const {c_type(rtype)}* __restrict__ _partial, "
                    f"{out_ct}* __restrict__ _p_{out.name}, const _idx_t _M, const _idx_t _P) {{\n"
                    f"{typedefs}"
                    "    const long long _m = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
                    "    if (_m >= _M) return;\n"
                    f"    _reduce_t a = _partial[{index.format(p='0')}];\n"
                    "    for (long long _p = 1; _p < _P; _p++) {\n"
                    f"        _reduce_t b = _partial[{index.format(p='_p')}];\n"
                    f"        {reduce_line}\n"
                    "    }\n"
                    f"    {post_map}"
                    "}\n")
        if mode in (COLUMNS, COLUMN_PIECES):
            # thread m of the grid's column blocks, its piece of rows blockIdx.y in order;
            # the loop bounded by the piece and R (the footprint is then the piece's rows)
            src = (head + kernel +
                   "    const long long _mw = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
                   "    if (_mw >= _M) return;\n"
                   "    const _idx_t _m = (_idx_t)_mw, _j0 = (_idx_t)blockIdx.y * _piece;\n"
                   f"    _reduce_t a = ({self.identity});\n"
                   "    #pragma unroll 1\n"
                   "    for (_idx_t _k = 0; _k < _piece && _j0 + _k < _R; _k++) {\n"
                   "        const _idx_t _j = _j0 + _k;\n"
                   + "".join(f"        {line}\n" for line in loads) +
                   f"        _reduce_t b = ({self.map_expr});\n"
                   f"        {reduce_line}\n"
                   "    }\n")
            if mode == COLUMNS:
                return src + f"    {post_map}" + "}\n"
            # partials piece-major: a chunk of pieces writes one contiguous range of them
            # (output-major, the chunks' writes would interleave and be merged by diffs)
            return (src + "    _partial[(long long)blockIdx.y * _M + _m] = a;\n}\n"
                    + final("{p} * _M + _m"))
        if mode == WARPS:
            # a warp per output: its lanes side by side along the output's elements, then a
            # tree of shuffles (the value as 32-bit words: _reduce_t may be a struct)
            return (head +
                    "__device__ __forceinline__ _reduce_t _shfl_down(_reduce_t x, int o) {\n"
                    "    union { _reduce_t v; int w[(sizeof(_reduce_t) + 3) / 4]; } u;\n"
                    "    u.v = x;\n"
                    "    #pragma unroll\n"
                    "    for (int k = 0; k < (int)((sizeof(_reduce_t) + 3) / 4); k++)\n"
                    "        u.w[k] = __shfl_down_sync(0xffffffffu, u.w[k], o);\n"
                    "    return u.v;\n"
                    "}\n" + kernel +
                    "    const long long _mw = (long long)blockIdx.x * (blockDim.x >> 5)"
                    " + (threadIdx.x >> 5);\n"
                    "    if (_mw >= _M) return;\n"
                    "    const _idx_t _m = (_idx_t)_mw;\n"
                    "    const _idx_t _wb = 0, _whole = _R & ~(_idx_t)31;\n"
                    f"    _reduce_t a = ({self.identity});\n"
                    # whole steps of the warp, then one step of the lanes left: each bounded
                    # exactly for the access footprint (by its count, by its test); not
                    # unrolled, as NVRTC's unrolled loop seems to read up to 3 steps further
                    "    #pragma unroll 1\n"
                    "    for (_idx_t _k = threadIdx.x & 31; _k < _whole; _k += 32) {\n"
                    + accumulate +
                    "    if ((threadIdx.x & 31) < _R - _whole) {\n"
                    "        const _idx_t _k = _whole + (threadIdx.x & 31);\n"
                    + accumulate +
                    "    for (int _o = 16; _o > 0; _o >>= 1) {\n"
                    "        _reduce_t b = _shfl_down(a, _o);\n"
                    f"        {reduce_line}\n"
                    "    }\n"
                    "    if ((threadIdx.x & 31) == 0) {\n"
                    f"        {post_map}"
                    "    }\n}\n")
        pieces = mode == PIECES
        src = (head + kernel +
               f"    __shared__ _reduce_t _sh[{BLOCK}];\n"
               # one block per output, or a grid of (pieces, outputs): block indices only,
               # so that each block's footprint is its own contiguous range
               + ("    const _idx_t _m = blockIdx.y, _p = blockIdx.x;\n" if pieces else
                  "    const _idx_t _m = blockIdx.x, _p = 0;\n") +
               # _piece is a multiple of PIECE_ROUND: each of the block's 8 warps loops over
               # a segment of _piece / 8 (a multiple of 128) by a count from its lane, so
               # that the access footprint bounds a block's reads by its own elements and a
               # chunk of blocks is given only its part of the array (a loop from a start to
               # an end that depends on the same block index seemed to read twice as far)
               "    const _idx_t _seg = _piece / (blockDim.x >> 5);\n"
               "    const _idx_t _wb = _p * _piece + (threadIdx.x >> 5) * _seg;\n"
               "    const _idx_t _n = _R - _wb < _seg ? _R - _wb : _seg;\n"
               f"    _reduce_t a = ({self.identity});\n"
               # each warp a contiguous share of the piece, its lanes side by side: every
               # step of a warp reads consecutive elements (one coalesced line on a GPU, one
               # streamed vector on a CPU, where a block's warps run one after another)
               "    for (_idx_t _k = threadIdx.x & 31; _k < _n; _k += 32) {\n"
               + accumulate +
               "    _sh[threadIdx.x] = a;\n"
               "    __syncthreads();\n"
               f"    for (int _s = {BLOCK // 2}; _s > 0; _s >>= 1) {{\n"
               "        if (threadIdx.x < _s) {\n"
               "            _reduce_t a = _sh[threadIdx.x], b = _sh[threadIdx.x + _s];\n"
               f"            {reduce_line}\n"
               "            _sh[threadIdx.x] = a;\n"
               "        }\n"
               "        __syncthreads();\n"
               "    }\n")
        if not pieces:
            return (src + "    if (threadIdx.x == 0) {\n"
                    "        _reduce_t a = _sh[0];\n"
                    f"        {post_map}"
                    "    }\n}\n")
        return (src + "    if (threadIdx.x == 0) _partial[_m * _P + _p] = _sh[0];\n}\n"
                + final("_m * _P + {p}"))


# -- numpy's reductions --------------------------------------------------------------------------
_builtins = KernelCache()   # numpy's reductions and products, by operation and dtypes
EXACT = ("--fmad=false",)


def _extreme(dtype, largest: bool) -> str:
    """C text of the largest (or smallest) value of ``dtype``: min's (max's) identity."""
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return ("" if largest else "-") + "__int_as_float(0x7f800000)" if dt.itemsize == 4 \
            else ("" if largest else "-") + "__longlong_as_double(0x7ff0000000000000LL)"
    if dt.kind == "b":
        return "true" if largest else "false"
    info = np.iinfo(dt)
    v = info.max if largest else info.min
    if dt.kind == "i" and not largest:
        return f"({v + 1}LL - 1)"        # the literal -2**63 does not parse in C
    return f"{v}{'ULL' if dt.kind == 'u' else 'LL'}"


def _reduce(a, op: str, axis, dtype, out, keepdims, result_dtype):
    """One of numpy's reductions of ``a``: ``op`` in sum prod min max any all, or fmin fmax
    (numpy's ``fmin.reduce``: NaN only where every element is NaN, ``nanmin``'s core)."""
    a = asarray(a)
    R = np.dtype(result_dtype)
    if op in ("min", "max", "fmin", "fmax"):
        # numpy's rule: an error when the reduced axes hold no element, even where the
        # result is empty too ((0, 0) along 0), none where only the kept axes are empty
        reduced = range(a.ndim) if axis is None else _axes(axis, a.ndim)
        if any(a.shape[k] == 0 for k in reduced):
            name = {"min": "minimum", "max": "maximum"}.get(op, op)
            raise ValueError(f"zero-size array to reduction operation {name} which has no "
                             f"identity")
    if out is not None and out.dtype != R:
        outputs.check(out, out.shape, R, op)        # a dptx array (its shape: below)
        if op in ("sum", "prod") and dtype is None and np.can_cast(a.dtype, out.dtype, "safe"):
            R = out.dtype       # numpy computes in out's type where the input casts to it
        else:                   # numpy's type, then converted into out (an unsafe cast)
            with stream_for(None).together():
                return outputs.store(out, _reduce(a, op, axis, dtype, None, keepdims, R), op)
    X = a.dtype

    # float16 results accumulate in float, as numpy's half loops do, rounded once at the end
    acc = np.dtype(np.float32) if R == HALF else R

    def build():
        # each element converted to the accumulation type as numpy converts (a negative
        # float summed as uint64 wraps)
        if op == "sum":
            spec = (conversion(X, acc), "a + b", "0")
        elif op == "prod":
            spec = (conversion(X, acc), "a * b", "1")
        elif op in ("min", "max"):
            cmp = "<" if op == "min" else ">"
            if R.kind == "f":
                combine = f"(a != a) ? a : ((b != b) ? b : ((b {cmp} a) ? b : a))"
            else:
                combine = f"(b {cmp} a) ? b : a"
            spec = ("x", combine, _extreme(acc, op == "min"))
        elif op in ("fmin", "fmax"):
            # a NaN loses to any number; the identity is a NaN (what an all-NaN slice gives)
            cmp = "<" if op == "fmin" else ">"
            spec = ("x", f"(b != b) ? a : ((a != a) ? b : ((b {cmp} a) ? b : a))",
                    "__int_as_float(0x7fc00000)" if acc.itemsize == 4
                    else "__longlong_as_double(0x7ff8000000000000LL)")
        elif op == "any":
            spec = ("(bool)x", "a || b", "false")
        else:
            spec = ("(bool)x", "a && b", "true")
        return ReductionKernel(f"{X} x", f"{R} y", spec[0], spec[1], "y = a", spec[2],
                               f"dptx_{op}", reduce_type=str(acc), options=EXACT)
    kernel = _builtins.get((op, str(X), str(R)), build)
    return kernel(a, axis=axis, keepdims=keepdims, out=out)


def _result_dtype(a, op: str, dtype):
    probe = np.zeros(1, a.dtype)
    fn = {"sum": np.sum, "prod": np.prod, "min": np.min, "max": np.max,
          "any": np.any, "all": np.all}[op]
    if op in ("sum", "prod"):
        return fn(probe, dtype=dtype).dtype
    return fn(probe).dtype


def sum_(a, axis=None, dtype=None, out=None, keepdims=False, **kwargs):
    where, initial = _extra(kwargs, "sum")
    return _reduce_where(a, "sum", axis, dtype, out, keepdims,
                         _result_dtype(_arr(a), "sum", dtype), where, initial)


def prod(a, axis=None, dtype=None, out=None, keepdims=False, **kwargs):
    where, initial = _extra(kwargs, "prod")
    return _reduce_where(a, "prod", axis, dtype, out, keepdims,
                         _result_dtype(_arr(a), "prod", dtype), where, initial)


def min_(a, axis=None, out=None, keepdims=False, **kwargs):
    where, initial = _extra(kwargs, "min")
    return _reduce_where(a, "min", axis, None, out, keepdims, _arr(a).dtype, where, initial)


def max_(a, axis=None, out=None, keepdims=False, **kwargs):
    where, initial = _extra(kwargs, "max")
    return _reduce_where(a, "max", axis, None, out, keepdims, _arr(a).dtype, where, initial)


def any_(a, axis=None, out=None, keepdims=False, **kwargs):
    where, _ = _extra(kwargs, "any", initial=False)
    return _reduce_where(a, "any", axis, None, out, keepdims, np.bool_, where, None)


def all_(a, axis=None, out=None, keepdims=False, **kwargs):
    where, _ = _extra(kwargs, "all", initial=False)
    return _reduce_where(a, "all", axis, None, out, keepdims, np.bool_, where, None)


_IDENTITY = {"sum": 0, "prod": 1, "any": False, "all": True}
_COMBINE = {"sum": np.add, "prod": np.multiply, "min": np.minimum, "max": np.maximum,
            "fmin": np.fmin, "fmax": np.fmax}
_NO_IDENTITY = {"min": "minimum", "max": "maximum", "fmin": "fmin", "fmax": "fmax"}


def _reduce_where(a, op, axis, dtype, out, keepdims, result_dtype, where, initial):
    """numpy's ``where=`` and ``initial=``: the elements where ``where`` is False replaced by
    the reduction's identity (min and max have none: numpy then asks for ``initial``, which
    takes its place), and ``initial`` combined with each result (the whole result where
    the reduced axes are empty)."""
    if where is True and initial is None:
        return _reduce(a, op, axis, dtype, out, keepdims, result_dtype)
    a, R = asarray(a), np.dtype(result_dtype)
    if initial is not None:
        initial = np.asarray(initial).astype(R)[()]     # (numpy's conversion and errors)
    if where is not True:
        if op in _NO_IDENTITY and initial is None:
            raise ValueError(f"reduction operation '{_NO_IDENTITY[op]}' does not have an "
                             f"identity, so to use a where mask one has to specify 'initial'")
        mask = _where_mask(where, a.shape)
        fill = initial if op in _NO_IDENTITY else np.asarray(_IDENTITY[op]).astype(R)[()]
        a = ufuncs.where(mask, a if a.dtype == R else ufuncs.astype(a, R), fill)
    reduced = range(a.ndim) if axis is None else _axes(axis, a.ndim)
    with stream_for(None).together():
        if initial is not None and any(a.shape[k] == 0 for k in reduced):
            shape = tuple(1 if k in reduced else n for k, n in enumerate(a.shape)) \
                if keepdims else tuple(n for k, n in enumerate(a.shape) if k not in reduced)
            result = empty(shape, R)
            result.fill(initial)
        else:
            result = _reduce(a, op, axis, dtype, None, keepdims, R)
            if initial is not None:
                result = ufuncs.apply(_COMBINE[op], result, np.asarray(initial, R))
        return result if out is None else outputs.store(out, result, op)


def _where_mask(where, shape: tuple):
    """``where`` as a boolean dptx array that broadcasts to the reduced array's shape."""
    mask = where if isinstance(where, ndarray) else asarray(np.asarray(where))
    if mask.dtype != np.bool_:
        mask = ufuncs.astype(mask, np.bool_)
    try:
        ok = np.broadcast_shapes(mask.shape, shape) == tuple(shape)
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f"non-broadcastable operand with shape {mask.shape} doesn't match "
                         f"the broadcast shape {tuple(shape)}")
    return mask


def mean(a, axis=None, dtype=None, out=None, keepdims=False, **kwargs):
    """numpy.mean: the sum in numpy's mean type (float64 for integers), divided by the
    count (with ``where=``, the count of True elements of each slice)."""
    where, _ = _extra(kwargs, "mean", initial=False)
    a = _arr(a)
    R = np.dtype(dtype) if dtype is not None else np.mean(np.zeros(1, a.dtype)).dtype
    # numpy sums float16 in float32 for a mean and rounds the quotient once
    S = np.dtype(np.float32) if R == HALF and dtype is None else R
    with stream_for(None).together():       # its launches in one message
        total = _reduce_where(a, "sum", axis, S, None, keepdims, S, where, None)
        if where is True:
            count = a.size // total.size if total.size else 0      # elements per mean
            # (the count as a Python int, weak as numpy's: in float16 100000 would be inf)
            count = int(count)
        else:
            mask = _where_mask(where, a.shape)
            ones = ufuncs.astype(mask, np.int64) if mask.shape == a.shape else \
                _broadcast_count(mask, a.shape)
            count = _reduce(ones, "sum", axis, None, None, keepdims, np.int64)
        # numpy divides the sum (in R) by the count, a float division for an integer R,
        # then converts to R (an integer dtype= truncates) or into out (an unsafe cast)
        quotient = ufuncs.apply(np.true_divide, total, count)
        if where is not True and quotient.dtype != S:
            quotient = ufuncs.astype(quotient, S)      # (numpy divides into the sum's type)
        if out is not None:
            return outputs.store(out, quotient, "mean")
        return quotient if quotient.dtype == R else ufuncs.astype(quotient, R)


def _broadcast_count(mask, shape: tuple):
    """1 where the mask (broadcast to ``shape``) is True, else 0, as int64 of ``shape``."""
    ones = empty(shape, np.int64)
    ones.fill(1)
    return ufuncs.where(mask, ones, np.int64(0))


def argmin(a, axis=None, out=None, keepdims=False):
    return _arg(a, "min", axis, out, keepdims)


def argmax(a, axis=None, out=None, keepdims=False):
    return _arg(a, "max", axis, out, keepdims)


def _arg(a, op: str, axis, out, keepdims):
    """numpy.argmin/argmax: the index of the first extreme (of the first NaN, for floats),
    over the flattened array when ``axis`` is None."""
    a = _arr(a)
    # as numpy: an error when the searched axis is empty, none where only others are
    if a.size == 0 and (axis is None or a.shape[_axes(axis, a.ndim)[0]] == 0):
        raise ValueError(f"attempt to get arg{op} of an empty sequence")
    if axis is None:
        a = a.reshape(-1)
        axis = 0
    X = a.dtype
    xt = c_type(X)
    cmp = "<" if op == "min" else ">"
    pick = f"(b_v {cmp} a_v) || (b_v == a_v && b_i < a_i)"
    if X.kind == "f":
        pick = (f"(a_v != a_v) ? ((b_v != b_v) && b_i < a_i) : "
                f"((b_v != b_v) || (b_v {cmp} a_v) || (b_v == a_v && b_i < a_i))")
    preamble = (f"struct _arg_t {{ {xt} v; long long i; }};\n"
                f"__device__ _arg_t _arg_pick(_arg_t a, _arg_t b) {{ {xt} a_v = a.v, b_v = b.v;"
                f" long long a_i = a.i, b_i = b.i; return ({pick}) ? b : a; }}\n"
                f"__device__ _arg_t _arg_make({xt} v, long long i) {{ _arg_t r; r.v = v; "
                f"r.i = i; return r; }}\n")

    def build():
        return _ArgKernel(X, op, preamble)
    kernel = _builtins.get(("arg" + op, str(X)), build)
    if out is not None and out.dtype != np.int64:
        # numpy's rule for an index's out is the other way round: out's type must cast
        # safely to int64, the index is then converted into it
        outputs.check(out, out.shape, out.dtype, f"arg{op}")
        if not np.can_cast(out.dtype, np.int64, "safe"):
            raise TypeError(f"Cannot cast array data from {out.dtype!r} to dtype('int64') "
                            f"according to the rule 'safe'")
        with stream_for(None).together():
            return outputs.store(out, kernel(a, axis, None, keepdims), f"arg{op}")
    return kernel(a, axis, out, keepdims)


class _ArgKernel(ReductionKernel):
    """argmin/argmax: the reduced value is a (value, index) pair; ``_j`` is the index along
    the reduced axis."""

    def __init__(self, X, op, preamble):
        super().__init__(f"{X} x", "int64 y", "_arg_make(x, _j)", "_arg_pick(a, b)", "y = a.i",
                         f"_arg_make({_extreme(X, op == 'min')}, 9223372036854775807LL)",
                         name=f"dptx_arg{op}", preamble=preamble, options=EXACT)
        self._X = X

    def __call__(self, a, axis, out, keepdims):
        ax = _axes(axis, a.ndim)
        if len(ax) != 1:
            raise TypeError("'tuple' object cannot be interpreted as an integer")  # numpy's
        return super().__call__(a, axis=ax[0], keepdims=keepdims, out=out)

    def _types(self, args, out):
        types = {"x": np.dtype(self._X), "y": np.dtype(np.int64)}
        return types, {}

    def source(self, types, placeholders, rtype, kinds, layout, nkept, nred, mode,
               wide) -> str:
        # the pair type stands for the reduce type
        src = super().source(types, placeholders, np.dtype(np.int64), kinds, layout, nkept, nred,
                             mode, wide)
        return src.replace("typedef long long _reduce_t;", "typedef _arg_t _reduce_t;") \
                  .replace("const long long* __restrict__ _partial, long long*",
                           "const _arg_t* __restrict__ _partial, long long*") \
                  .replace("_reduce_t* __restrict__ _partial", "_arg_t* __restrict__ _partial")

    def _partial(self, count: int, rtype):
        return empty((2 * count,), np.int64)      # (value, index) pairs of 16 bytes


def _arr(a):
    return asarray(a)


def _extra(kwargs, name, initial=True) -> tuple:
    """numpy's ``where=`` (and, where the reduction takes it, ``initial=``) from ``kwargs``;
    a TypeError for any other keyword, as numpy's."""
    allowed = {"where", "initial"} if initial else {"where"}
    extra = set(kwargs) - allowed
    if extra:
        raise TypeError(f"{name}() got unexpected keyword arguments {sorted(extra)}")
    return kwargs.get("where", True), kwargs.get("initial", None)


def _no_extra(kwargs, name):
    """For reductions that take neither ``where=`` nor ``initial=`` here."""
    where, initial = _extra(kwargs, name)
    if where is not True or initial is not None:
        raise DptxError(f"{name}: where= and initial= are not supported on dptx arrays yet")


# -- products --------------------------------------------------------------------------------------
_MATMUL_TILE = 16
_MATMUL_ROWS_PER_THREAD = 4     # outputs per thread, a column of them, where n allows


def matmul(a, b, out=None):
    """numpy.matmul: a tiled kernel (shared-memory tiles of 16 x 16, four outputs per thread
    where there are rows enough), each output the sum over k in order, in numpy's result
    type; arrays of more than 2 dimensions are stacks of matrices, their stack dimensions
    broadcast (one launch, the stack along the grid's z)."""
    a, b = asarray(a), asarray(b)
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("matmul: Input operand does not have enough dimensions")
    a2 = a.reshape(1, -1) if a.ndim == 1 else a
    b2 = b.reshape(-1, 1) if b.ndim == 1 else b
    if a2.shape[-1] != b2.shape[-2]:
        raise ValueError(f"matmul: Input operand 1 has a mismatch in its core dimension 0, "
                         f"with gufunc signature (n?,k),(k,m?)->(n?,m?) (size {b2.shape[-2]} "
                         f"is different from {a2.shape[-1]})")
    if a.ndim > 2 or b.ndim > 2:
        try:
            np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
        except ValueError:
            def remapped(x):   # (as numpy's message writes it)
                return "(" + ",".join([str(d) for d in x.shape[:-2]] + ["newaxis"] * 2) + ")"
            raise ValueError(
                f"operands could not be broadcast together with remapped shapes "
                f"[original->remapped]: {_shape_text(a.shape)}->{remapped(a2)} "
                f"{_shape_text(b.shape)}->{remapped(b2)}  and requested shape "
                f"{_shape_text((a2.shape[-2], b2.shape[-1]))}") from None
    R = np.result_type(a.dtype, b.dtype)
    if R.kind == "b":
        # numpy's boolean product: any(a[i, k] and b[k, j]), as a count of the pairs that
        # are both true (int32 cannot overflow below 2**31 terms) compared with 0
        wide = np.int64 if a.shape[-1] >= np.iinfo(np.int32).max else np.int32
        counts = matmul(a.astype(wide), b.astype(wide))
        result = ufuncs.apply(np.not_equal, counts, 0)
        return result if out is None else outputs.store(out, result, "matmul",
                                                        casting="same_kind")
    if R == HALF:
        # numpy's half loops multiply and add in float, in order, and round each sum once:
        # the float32 product through the tiled kernel (its sums in order; a vector as a
        # one-row or one-column matrix, as the vector kernels sum in a warp's order), then
        # rounded
        a32, b32 = a.astype(np.float32), b.astype(np.float32)
        product = matmul(a32[None, :] if a.ndim == 1 else a32,
                         b32[:, None] if b.ndim == 1 else b32)
        if b.ndim == 1:
            product = product[..., 0]
        if a.ndim == 1:
            product = product[..., 0, :] if b.ndim > 1 else product[..., 0]
        result = ufuncs.astype(product, HALF)
        return result if out is None else outputs.store(out, result, "matmul",
                                                        casting="same_kind")
    if a.ndim > 2 or b.ndim > 2:
        return _stacked_matmul(a, b, a2, b2, R, out)
    a2 = ascontiguousarray(a2) if a2.dtype == R else a2.astype(R)
    b2 = ascontiguousarray(b2) if b2.dtype == R else b2.astype(R)
    n, k = a2.shape
    m = b2.shape[1]
    shape = (n, m) if a.ndim == 2 and b.ndim == 2 else (n,) if a.ndim == 2 else \
        (m,) if b.ndim == 2 else ()
    if out is not None:
        _check_product_out(out, shape, R)
        if _through_temporary(out, R, a, b):
            out[...] = matmul(a, b)
            return out
    result = out if out is not None else empty(shape, R)
    if n * m == 0:
        return result
    if k and (a.ndim == 1 or b.ndim == 1):       # a vector: a warp per row, or per column
        flat = result.reshape(-1)
        if b.ndim == 1:
            matrix_vector.matvec(a2, b2.reshape(-1), flat)
        else:
            matrix_vector.vecmat(a2.reshape(-1), b2, flat, column_pieces(m, k)[1])
        return result
    wide, T, idx, rows = _tiling(n, k, m)
    kernel = _builtins.get(("matmul", str(R), wide, rows), lambda: _matmul_kernel(R, wide, rows))
    kernel(((m + T - 1) // T, (n + rows - 1) // rows), (T, T),
           [a2, b2, result, idx(n), idx(k), idx(m)])
    return result


_MAX_GRID_Z = 65535     # CUDA's limit on gridDim.z: larger stacks go in several launches


def _through_temporary(out, R, a, b) -> bool:
    """Whether a product goes into ``out`` through a temporary: the kernels write R
    contiguously, and read their inputs as they write (numpy's result is as if the inputs
    were read whole first)."""
    return not out._contiguous or out.dtype != R or may_share_memory(out, a) or \
        may_share_memory(out, b)


def _tiling(n: int, k: int, m: int) -> tuple:
    """(64-bit indices?, tile, index type, rows per block) of the tiled product."""
    wide = max(n * k, k * m, n * m) > np.iinfo(np.int32).max
    T = _MATMUL_TILE
    rows = T * _MATMUL_ROWS_PER_THREAD if n >= T * _MATMUL_ROWS_PER_THREAD else T
    return wide, T, (np.int64 if wide else np.int32), rows


def _shape_text(shape: tuple) -> str:
    return "(" + ",".join(str(d) for d in shape) + ")"


def _stacked_matmul(a, b, a2, b2, R, out):
    """matmul of stacks of matrices (``a2``, ``b2``: the operands with a vector made a
    matrix): each operand contiguous in R, its stack dimensions broadcast by strides of 0,
    the product of stack entry z computed by blocks of grid z."""
    batch = np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
    n, k, m = a2.shape[-2], a2.shape[-1], b2.shape[-1]
    shape = batch + ((n,) if a.ndim > 1 else ()) + ((m,) if b.ndim > 1 else ())
    if out is not None:
        _check_product_out(out, shape, R)
        if _through_temporary(out, R, a, b):
            out[...] = matmul(a, b)
            return out
    result = out.reshape(batch + (n, m)) if out is not None else empty(batch + (n, m), R)
    if result.size == 0:
        return result.reshape(shape) if out is None else out
    A = ascontiguousarray(a2) if a2.dtype == R else a2.astype(R)
    B = ascontiguousarray(b2) if b2.dtype == R else b2.astype(R)
    params = []
    for d, size in enumerate(batch):
        params.append(np.int64(size))
        for op in (A, B):
            dims = (1,) * (len(batch) - (op.ndim - 2)) + op.shape[:-2]
            # elements from one matrix of the stack to the next along d (0: broadcast)
            step = int(np.prod(dims[d + 1:], dtype=np.int64)) * op.shape[-2] * op.shape[-1]
            params.append(np.int64(step if dims[d] == size and size > 1 else 0))
    wide, T, idx, rows = _tiling(n, k, m)
    kernel = _builtins.get(("matmul", str(R), wide, rows, len(batch)),
                           lambda: _matmul_kernel(R, wide, rows, len(batch)))
    total = int(np.prod(batch, dtype=np.int64))
    with stream_for(None).together():
        for z0 in range(0, total, _MAX_GRID_Z):
            kernel(((m + T - 1) // T, (n + rows - 1) // rows, min(_MAX_GRID_Z, total - z0)),
                   (T, T), [A, B, result, idx(n), idx(k), idx(m), *params, np.int64(z0)])
    return result.reshape(shape) if out is None else out


def _check_product_out(out, shape: tuple, R: np.dtype) -> None:
    """numpy's errors for matmul's ``out``: its shape, and a type the result casts to under
    the same_kind rule."""
    if not isinstance(out, ndarray):
        raise DptxError(f"out= must be a dptx array, got {type(out).__name__}")
    if not np.can_cast(R, out.dtype, casting="same_kind"):
        raise TypeError(f"Cannot cast ufunc 'matmul' output from {R!r} to {out.dtype!r} "
                        f"with casting rule 'same_kind'")
    if out.shape != shape:
        raise ValueError(f"matmul: Output operand 0 has shape {out.shape}, the result "
                         f"{shape}")


def _matmul_kernel(R, wide, rows, stacked: int = 0):
    """The tiled product: a block of 16 x 16 threads computes a tile of 16 ``rows`` x 16
    outputs, each thread ``rows // 16`` of them (independent sums: on the CPU executor, a
    warp's multiply-adds no longer wait on one another, and a block's barriers pay for
    ``rows // 16`` times the work), each the sum over k in order. ``stacked``: the number of
    stack dimensions, each with its size and A's and B's steps (0 where broadcast); the
    grid's z (plus ``z0``) is the matrix of the stack."""
    t, T, i = c_type(R), _MATMUL_TILE, ("long long" if wide else "int")
    per = rows // T
    stack_params = "".join(f", long long s{d}, long long sa{d}, long long sb{d}"
                           for d in range(stacked))
    stack_params += ", long long z0" if stacked else ""
    # the offsets of this block's matrices: z's digits in the stack's shape, last fastest
    digits = "".join(f"    {{ const long long q = z % s{d}; z /= s{d}; A += q * sa{d}; "
                     f"B += q * sb{d}; }}\n" for d in reversed(range(stacked)))
    stack = (f"    long long z = (long long)blockIdx.z + z0;\n"
             f"    C += z * (long long)n * m;\n{digits}") if stacked else ""
    src = f'''
extern "C" __global__ void dptx_matmul(const {t}* __restrict__ A, const {t}* __restrict__ B,
                                       {t}* __restrict__ C, {i} n, {i} k, {i} m{stack_params}) {{
{stack}    __shared__ {t} As[{rows}][{T}], Bs[{T}][{T}];
    const long long row0 = (long long)blockIdx.y * {rows} + threadIdx.y;
    const long long col = (long long)blockIdx.x * {T} + threadIdx.x;
    {t} acc[{per}];
    #pragma unroll
    for (int r = 0; r < {per}; r++) acc[r] = 0;
    for (long long t0 = 0; t0 < k; t0 += {T}) {{
        #pragma unroll
        for (int r = 0; r < {per}; r++) {{
            const long long row = row0 + {T} * r;
            As[threadIdx.y + {T} * r][threadIdx.x] =
                (row < n && t0 + threadIdx.x < k) ? A[row * k + t0 + threadIdx.x] : ({t})0;
        }}
        Bs[threadIdx.y][threadIdx.x] = (t0 + threadIdx.y < k && col < m) ? B[(t0 + threadIdx.y) * m + col] : ({t})0;
        __syncthreads();
        for (int j = 0; j < {T}; j++) {{
            const {t} b = Bs[j][threadIdx.x];
            #pragma unroll
            for (int r = 0; r < {per}; r++) acc[r] += As[threadIdx.y + {T} * r][j] * b;
        }}
        __syncthreads();
    }}
    #pragma unroll
    for (int r = 0; r < {per}; r++) {{
        const long long row = row0 + {T} * r;
        if (row < n && col < m) C[row * m + col] = acc[r];
    }}
}}'''
    return RawModule(with_half_header(src), options=EXACT).get_function("dptx_matmul")


def dot(a, b, out=None):
    """numpy.dot: matmul for 1- and 2-D arrays, a product with a scalar for 0-D ones, and
    for more dimensions the sum over a's last axis and b's second-to-last (every pair of
    a's rows and b's columns, unlike matmul's stacks), as one matrix product."""
    if not isinstance(a, ndarray) and np.ndim(a) == 0 or not isinstance(b, ndarray) and np.ndim(b) == 0 \
            or (isinstance(a, ndarray) and a.ndim == 0) or (isinstance(b, ndarray) and b.ndim == 0):
        return ufuncs.apply(np.multiply, a, b, out=out)
    a, b = asarray(a), asarray(b)
    kb = max(b.ndim - 2, 0)              # b's axis summed over
    if a.shape[-1] != b.shape[kb]:
        raise ValueError(f"shapes {_shape_text(a.shape)} and {_shape_text(b.shape)} not "
                         f"aligned: {a.shape[-1]} (dim {a.ndim - 1}) != {b.shape[kb]} (dim {kb})")
    shape = a.shape[:-1] + b.shape[:kb] + b.shape[kb + 1:]
    if out is not None:
        # numpy.dot is stricter than matmul about out: exactly the result's type and shape,
        # C-contiguous
        if not isinstance(out, ndarray) or out.dtype != np.result_type(a.dtype, b.dtype) or \
                out.ndim != len(shape) or not out.flags.c_contiguous:
            raise ValueError("output array is not acceptable (must have the right datatype, "
                             "number of dimensions, and be a C-Array)")
        if out.shape != shape:
            raise ValueError("output array has wrong dimensions")
    if a.ndim <= 2 and b.ndim <= 2:
        return matmul(a, b, out=out)
    # b's summed axis first, then a (rows, k) by (k, columns) product
    moved = b if b.ndim == 1 else b.transpose((kb,) + tuple(d for d in range(b.ndim) if d != kb))
    product = matmul(a.reshape(-1, a.shape[-1]), moved.reshape(b.shape[kb], -1))
    if out is None:
        return product.reshape(shape)
    out.reshape(product.shape)[...] = product
    return out
