"""``dptx.ReductionKernel``: CuPy's reduction kernel tool (map, reduce, post-map expressions,
type placeholders, ``axis``, ``keepdims``), as generated CUDA C launched like any user kernel.

A reduction of few outputs runs in two launches. The first cuts each output's reduced
elements into pieces of at least a few thousand and gives each (output, piece) a block: its
threads map and accumulate a strided share of the piece, then combine in shared memory (a
barrier per level) into one partial. The second reduces each output's partials in order and
applies the post-map. Otherwise (many outputs, or few elements each) one launch does it all:
block m reduces output m whole and writes it. The order of the operations is therefore not
numpy's (numpy sums float arrays pairwise along contiguous axes): float sums differ from
numpy's in the last bits, as CuPy's do. Integer, min/max/arg and logical reductions are exact.
numpy's reductions are made of it in ``reductions``."""
from __future__ import annotations

import threading

import numpy as np

from .elementwise import (bind_placeholder, c_type, converted_inputs, element_strides,
                          parse_params, with_type_headers)
from ..errors import DptxError
from ..runtime.ndarray import _axes, empty, may_share_memory, ndarray
from ..runtime.module import RawModule
from ..runtime.stream import stream_for

# numpy's exact float arithmetic: no contraction of a * b + c into one rounding
EXACT = ("--fmad=false",)

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
        mod = RawModule(with_type_headers(src), options=self.options)
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
                    "    int w[(sizeof(_reduce_t) + 3) / 4];\n"
                    "    memcpy(w, &x, sizeof(_reduce_t));\n"
                    "    #pragma unroll\n"
                    "    for (int k = 0; k < (int)((sizeof(_reduce_t) + 3) / 4); k++)\n"
                    "        w[k] = __shfl_down_sync(0xffffffffu, w[k], o);\n"
                    "    memcpy(&x, w, sizeof(_reduce_t));\n"
                    "    return x;\n"
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
