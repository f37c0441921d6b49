"""``dptx.ElementwiseKernel``: CuPy's elementwise kernels, as generated CUDA C launched like
any user kernel (DESIGN.md point 11: the array API is ordinary launches).

``ElementwiseKernel('T x, T y', 'T z', 'z = x + y', 'add')`` becomes, for the argument types
and dimensions of a call, one kernel in which thread ``i`` computes element ``i`` of the
broadcast shape:

    extern "C" __global__ void add(const float* __restrict__ _in_x, ..., float* _out_z,
                                   long long _n, <shape and strides where broadcasting>) {
        typedef float T;
        long long i = ...; if (i >= _n) return;
        const T x = _in_x[i]; T &z = _out_z[i];
        z = x + y;
    }

One element per thread, not a grid-stride loop: each block's accesses are then a contiguous
range the footprint analysis sees, so chunks run where their pieces are and nothing moves
between workers (a grid-stride loop's blocks each touch the whole array). Arrays whose shape
is the output's are indexed by ``i``; broadcast ones through their strides (0 along broadcast
axes), strided views through theirs, from the start of the span their elements lie in.
Kernels are compiled once per types, dimensions and layout, and cached.

Semantics follow CuPy's: inputs are read as values, outputs are references, ``i`` is the
element index and ``_ind.size()`` the element count; ``raw`` parameters are the whole array as
a pointer (``x[j]``); type placeholders (a name that is not a numpy type, such as ``T``) take
the type of the first array argument that has them, then of scalars, and are usable as type
names in the operation; Python scalars take their placeholder's type, numpy scalars keep
theirs."""
from __future__ import annotations

import re
import threading

import numpy as np

from ..errors import DptxError
from ..runtime.ndarray import check_writeable, empty, ndarray
from ..runtime.module import RawModule

C_TYPES = {
    np.dtype(np.bool_): "bool",
    np.dtype(np.int8): "signed char", np.dtype(np.int16): "short",
    np.dtype(np.int32): "int", np.dtype(np.int64): "long long",
    np.dtype(np.uint8): "unsigned char", np.dtype(np.uint16): "unsigned short",
    np.dtype(np.uint32): "unsigned int", np.dtype(np.uint64): "unsigned long long",
    np.dtype(np.float32): "float", np.dtype(np.float64): "double",
    np.dtype(np.float16): "__half",         # cuda_fp16.h's (``with_type_headers``)
    # dptx_complex.h's (``with_type_headers``): two of the real type, numpy's layout
    np.dtype(np.complex64): "dptx::complex<float>",
    np.dtype(np.complex128): "dptx::complex<double>",
}
HALF = np.dtype(np.float16)

BLOCK = 256
NUMPY_NAMES = {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
               "uint64", "float16", "float32", "float64", "complex64", "complex128"}


def c_type(dtype) -> str:
    dt = np.dtype(dtype)
    try:
        return C_TYPES[dt]
    except KeyError:
        raise DptxError(f"dtype {dt} is not supported by dptx's array kernels (supported: "
                        + ", ".join(sorted(str(d) for d in C_TYPES)) + ")") from None


def conversion(src: np.dtype, dst: np.dtype, x: str = "x") -> str:
    """C for numpy's conversion of ``x`` from ``src`` to ``dst``. C's own cast matches it for
    every value ``dst`` holds; a negative float into an unsigned type is C's undefined case
    (a GPU saturates to 0) where numpy wraps it modulo 2**bits, as through int64."""
    if src.kind == "c" and dst.kind != "c":
        # numpy keeps the real part (with a ComplexWarning), a bool is either part's truth
        if dst.kind == "b":
            return truth(src, x)
        return conversion(real_type(src), dst, f"({x}).real()")
    if dst.kind == "c" and src == HALF:
        return f"({c_type(dst)})(float)({x})"
    if src == HALF and dst.kind in "iu":
        # numpy converts a half to an integer through float (cuda_fp16's own conversions
        # saturate where C's float one wraps, as numpy's)
        return conversion(np.dtype(np.float32), dst, f"(float)({x})")
    if src.kind == "f" and dst.kind == "u":
        if dst.itemsize < 8:
            return f"({c_type(dst)})(long long){x}"
        return f"(({x}) < 0 ? ({c_type(dst)})(long long){x} : ({c_type(dst)}){x})"
    return f"({c_type(dst)}){x}"


def compute_type(dtype) -> str:
    """The C type numpy computes an operation on ``dtype`` in: float for float16 (numpy's
    half loops convert to float, compute, and round the result once), else its own."""
    dt = np.dtype(dtype)
    return "float" if dt == HALF else c_type(dt)


def with_type_headers(src: str) -> str:
    """``src`` with the headers of the types it uses included: cuda_fp16.h for ``__half``,
    dptx_complex.h for ``dptx::complex`` (only then: headers cost compile time)."""
    if "dptx::complex" in src and "dptx_complex.h" not in src:
        src = "#include <dptx_complex.h>\n" + src
    if "__half" in src and "cuda_fp16.h" not in src:
        src = "#include <cuda_fp16.h>\n" + src
    return src


def real_type(dtype) -> np.dtype:
    """The type of a complex type's parts (a real type itself)."""
    dt = np.dtype(dtype)
    return np.dtype(dt.char.lower()) if dt.kind == "c" else dt


def truth(dtype, x: str = "x") -> str:
    """C for numpy's truth of ``x`` of ``dtype`` (a complex value: either part non-zero)."""
    if np.dtype(dtype).kind == "c":
        return f"(({x}).real() != 0 || ({x}).imag() != 0)"
    return f"(bool)({x})"


class Param:
    __slots__ = ("name", "type", "raw", "placeholder")

    def __init__(self, text: str):
        words = text.split()
        self.raw = words[0] == "raw"
        if self.raw:
            words = words[1:]
        if len(words) != 2 or not re.fullmatch(r"[A-Za-z_]\w*", words[1]):
            raise DptxError(f"bad parameter {text!r}: expected '[raw] TYPE NAME'")
        self.type, self.name = words
        if not re.fullmatch(r"[A-Za-z_]\w*", self.type):
            raise DptxError(f"bad type {self.type!r} in parameter {text!r}")
        # numpy's type names; any other name is a placeholder (np.dtype("T") would be a
        # string type in numpy 2)
        self.placeholder = self.type not in NUMPY_NAMES


def parse_params(text: str) -> list:
    return [Param(p) for p in text.split(",") if p.strip()]


def _is_array(value) -> bool:
    return isinstance(value, ndarray)


def converted_inputs(params, args, types: dict) -> list:
    """The arguments, an array given for an input declared of another type converted to it
    (as CuPy's kernels read it; its bytes taken as that type would be garbage)."""
    return [v.astype(types[p.name]) if _is_array(v) and not p.raw and
            v.dtype != types[p.name] else v for p, v in zip(params, args)]


def bind_placeholder(bound: dict, kernel: str, param, dtype) -> None:
    """Type placeholder ``param.type`` bound to an array argument's ``dtype``: the first
    array decides, and every other array of that placeholder must agree (CuPy's TypeError;
    a kernel compiled for one would read the other's bytes as that type)."""
    first = bound.setdefault(param.type, np.dtype(dtype))
    if first != np.dtype(dtype):
        raise TypeError(f"{kernel}: type placeholder {param.type} is {first} from an earlier "
                        f"argument, but {param.name} is {np.dtype(dtype)} (CuPy's \"Type is "
                        f"mismatched\"): convert it with astype, or declare its own type")


class ElementwiseKernel:
    """CuPy's ``ElementwiseKernel(in_params, out_params, operation, name='kernel',
    reduce_dims=True, preamble='', no_return=False, return_tuple=False, loop_prep='',
    after_loop='', **kwargs)``; a call launches on the cluster, in the current stream, as a
    ``RawKernel`` would, and returns the output array(s) (allocated when not given)."""

    def __init__(self, in_params: str, out_params: str, operation: str, name: str = "kernel",
                 reduce_dims: bool = True, preamble: str = "", no_return: bool = False,
                 return_tuple: bool = False, loop_prep: str = "", after_loop: str = "",
                 options=(), **kwargs):
        if not re.fullmatch(r"[A-Za-z_]\w*", name):
            raise DptxError(f"kernel name {name!r} is not a C identifier")
        self.in_params = parse_params(in_params)
        self.out_params = parse_params(out_params)
        names = [p.name for p in self.in_params + self.out_params]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise DptxError(f"parameter names repeat: {', '.join(sorted(dup))}")
        if not self.out_params:
            raise DptxError("an elementwise kernel needs an output parameter")
        self.operation, self.name, self.preamble = operation, name, preamble
        self.loop_prep, self.after_loop = loop_prep, after_loop
        self.no_return, self.return_tuple = no_return, return_tuple
        self.options = tuple(options)
        self._kernels = {}
        self._lock = threading.Lock()

    def __repr__(self):
        return f"<dptx.ElementwiseKernel {self.name}>"

    # -- a call ----------------------------------------------------------------------------
    def __call__(self, *args, size=None, block_size=None, stream=None):
        nin, nout = len(self.in_params), len(self.out_params)
        if len(args) not in (nin, nin + nout):
            raise DptxError(f"{self.name}: takes {nin} inputs (and optionally {nout} "
                            f"outputs), got {len(args)} arguments")
        ins, outs = list(args[:nin]), list(args[nin:]) or [None] * nout
        for p, v in zip(self.in_params + self.out_params, ins + outs):
            if v is not None and not _is_array(v) and isinstance(v, np.ndarray):
                raise DptxError(f"{self.name}: argument {p.name} is a numpy array; pass a "
                                f"dptx array (dptx.asarray) or a scalar")
            if p.raw and v is not None and not _is_array(v):
                raise DptxError(f"{self.name}: raw argument {p.name} must be a dptx array")
        for p, v in zip(self.out_params, outs):
            if v is not None and not _is_array(v):
                raise DptxError(f"{self.name}: output {p.name} must be a dptx array, got "
                                f"{type(v).__name__}")
            if v is not None:
                check_writeable(v)
        types, placeholders = self._resolve_types(ins, outs)
        ins = converted_inputs(self.in_params, ins, types)
        # the shape every element-wise (non-raw) argument broadcasts to
        shapes = [v.shape for p, v in zip(self.in_params + self.out_params, ins + outs)
                  if v is not None and _is_array(v) and not p.raw]
        try:
            shape = np.broadcast_shapes(*shapes) if shapes else ()
        except ValueError:
            raise ValueError(f"{self.name}: operands could not be broadcast together with "
                             f"shapes {' '.join(str(s) for s in shapes)}") from None
        if size is not None:
            if shapes:
                raise DptxError(f"{self.name}: size= is for kernels whose arguments are all "
                                f"raw or scalars")
            shape = (int(size),)
        elif not shapes:
            raise DptxError(f"{self.name}: no array argument gives the size: pass size=")
        for p, v in zip(self.out_params, outs):
            if v is not None and not p.raw and v.shape != shape:
                # numpy's ValueError (CuPy's too), in numpy's words
                raise ValueError(f"{self.name}: non-broadcastable output operand {p.name} with "
                                 f"shape {v.shape} doesn't match the broadcast shape {shape}")
        outs = [v if v is not None else empty(shape, types[p.name])
                for p, v in zip(self.out_params, outs)]
        n = int(np.prod(shape, dtype=np.int64))
        if n:
            self._launch(ins, outs, types, placeholders, shape, n, block_size or BLOCK, stream)
        if self.no_return:
            return None
        if nout == 1 and not self.return_tuple:
            return outs[0]
        return tuple(outs)

    def _resolve_types(self, ins, outs) -> tuple:
        """({parameter name: dtype}, {placeholder: dtype}), resolved as CuPy does."""
        bound = {}
        for p, v in zip(self.in_params + self.out_params, ins + outs):
            if p.placeholder and v is not None and _is_array(v):
                bind_placeholder(bound, self.name, p, v.dtype)
        for p, v in zip(self.in_params, ins):
            if p.placeholder and p.type not in bound and not _is_array(v):
                bound[p.type] = np.asarray(v).dtype if isinstance(v, np.generic) else \
                    np.result_type(v)
        types = {}
        for p, v in zip(self.in_params + self.out_params, ins + outs):
            if p.placeholder:
                if p.type not in bound:
                    raise DptxError(f"{self.name}: the type {p.type} of {p.name} is not "
                                    f"determined by any input: pass the output array")
                types[p.name] = np.dtype(bound[p.type])
            else:
                types[p.name] = np.dtype(p.type)
            c_type(types[p.name])
            if v is not None and _is_array(v) and v.dtype != types[p.name] and (
                    p.raw or p in self.out_params):
                raise DptxError(f"{self.name}: {p.name} must be {types[p.name]}, got "
                                f"{v.dtype}")
        placeholders = {p.type: np.dtype(bound[p.type])
                        for p in self.in_params + self.out_params if p.placeholder}
        return types, placeholders

    # -- code ------------------------------------------------------------------------------
    def _layout(self, value, shape) -> str:
        """How thread i finds its element of ``value``: "i" (the output's shape, contiguous),
        "s" (through strides: broadcast, or a strided view), "v" (a scalar, by value)."""
        if not _is_array(value):
            return "v"
        return "i" if value.shape == shape and value._contiguous else "s"

    def _launch(self, ins, outs, types, placeholders, shape, n, block, stream):
        params = self.in_params + self.out_params
        values = ins + outs
        layouts = tuple("r" if p.raw else self._layout(v, shape) for p, v in zip(params, values))
        ndim = len(shape)
        for p, v, lay in zip(params, values, layouts):
            if lay == "r" and not v._contiguous:
                raise DptxError(f"{self.name}: raw argument {p.name} is a non-contiguous view "
                                f"(shape {v.shape}, strides {v.strides}); raw arguments are "
                                f"pointers: pass dptx.ascontiguousarray({p.name})")
        # strided arguments: the span of their elements, the index of element 0 in it, and
        # their element strides along the output's axes
        spans = {p.name: v._span() + (element_strides(v, shape),)
                 for p, v, lay in zip(params, values, layouts) if lay == "s"}
        sizes = [n] + list(shape) + [abs(x) for span, at, st in spans.values()
                                     for x in [span.size, *st]]
        wide = max(sizes) > np.iinfo(np.int32).max
        idx = np.int64 if wide else np.int32
        key = (tuple(str(types[p.name]) for p in params), layouts, ndim, wide,
               tuple(sorted((k, str(v)) for k, v in placeholders.items())))
        with self._lock:
            kernel = self._kernels.get(key)
            if kernel is None:
                kernel = self._kernels[key] = self._compile(types, placeholders, layouts, ndim,
                                                            wide)
        args = []
        for p, v, lay in zip(params, values, layouts):
            if lay == "v":
                args.append(np.asarray(v, dtype=types[p.name])[()])
            elif lay == "s":
                args.append(spans[p.name][0])
            else:
                args.append(v)
        args.append(idx(n))
        if "s" in layouts:
            args += [idx(d) for d in shape]
            if not wide:        # each inner axis's divisor as a multiplier and a shift
                for d in shape[1:]:
                    args += [np.uint32(x) for x in fast_divisor(d)]
            for span, at, st in spans.values():
                args += [idx(at)] + [idx(x) for x in st]
        grid = (n + block - 1) // block
        kernel((grid,), (block,), args, stream=stream)

    def _compile(self, types, placeholders, layouts, ndim, wide):
        src = self.source(types, placeholders, layouts, ndim, wide)
        return RawModule(with_type_headers(src), options=self.options).get_function(self.name)

    def source(self, types, placeholders, layouts, ndim, wide) -> str:
        """The CUDA C of the kernel for these types and layouts (see the module doc).
        ``wide``: sizes and strides as 64-bit parameters; else 32-bit, which the CPU
        executor's pointer analysis knows for data (a 64-bit parameter might be a pointer,
        and an address computed from one could then point into any buffer, which costs the
        fast access paths)."""
        params = self.in_params + self.out_params
        sig, body = [], []
        for p, lay in zip(params, layouts):
            ct = c_type(types[p.name])
            is_in = p in self.in_params
            if lay == "v":
                sig.append(f"const {ct} {p.name}")
            elif lay == "r":
                sig.append(f"{'const ' if is_in else ''}{ct}* __restrict__ {p.name}")
            else:
                sig.append(f"{'const ' if is_in else ''}{ct}* __restrict__ _p_{p.name}")
        sig.append("const _idx_t _n")
        strided = [p for p, lay in zip(params, layouts) if lay == "s"]
        if strided:
            sig += [f"const _idx_t _d{k}" for k in range(ndim)]
            if not wide:
                sig += [f"const unsigned int _m{k}, const unsigned int _h{k}"
                        for k in range(1, ndim)]
            for p in strided:
                sig.append(f"const _idx_t _o_{p.name}")
                sig += [f"const _idx_t _s_{p.name}_{k}" for k in range(ndim)]
        body.append("    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;")
        body.append("    if (i >= _n) return;")
        if strided:
            # the multi-index of element i, last axis fastest (C order)
            if wide:
                body.append("    long long _rest = i;")
                for k in reversed(range(1, ndim)):
                    body.append(f"    const long long _i{k} = _rest % _d{k}; _rest /= _d{k};")
            else:
                # i < 2**31: a division by an invariant as a multiply-high and a shift
                # (``fast_divisor``), which vectorizes where a division does not; the min and
                # max change nothing but tell the footprint analysis the index's range
                body.append("    unsigned int _rest = (unsigned int)i;")
                for k in reversed(range(1, ndim)):
                    body.append(
                        f"    const unsigned int _q{k} = (unsigned int)(((unsigned long long)"
                        f"_rest * _m{k}) >> _h{k});\n"
                        f"    const long long _i{k} = max(0, min((int)(_rest - _q{k} * "
                        f"(unsigned int)_d{k}), _d{k} - 1)); _rest = _q{k};")
            if ndim:            # i < _n: what is left is the first axis's index
                body.append("    const long long _i0 = _rest;")
        for p, lay in zip(params, layouts):
            if lay in ("v", "r"):
                continue
            ct = c_type(types[p.name])
            if lay == "i":
                index = "i"
            else:
                index = " + ".join([f"(long long)_o_{p.name}"] +
                                   [f"_i{k} * _s_{p.name}_{k}" for k in range(ndim)])
            if p in self.in_params:
                body.append(f"    const {ct} {p.name} = _p_{p.name}[{index}];")
            else:
                body.append(f"    {ct} &{p.name} = _p_{p.name}[{index}];")
        typedefs = "".join(f"    typedef {c_type(dt)} {name};\n"
                           for name, dt in placeholders.items())
        return (f"{self.preamble}\n"
                f"typedef {'long long' if wide else 'int'} _idx_t;\n"
                "struct _dptx_index { long long n; __device__ long long size() const "
                "{ return n; } };\n"
                f'extern "C" __global__ void {self.name}({", ".join(sig)}) {{\n'
                f"{typedefs}"
                "    const _dptx_index _ind = {_n};\n"
                + "\n".join(body) + "\n"
                f"    {self.loop_prep}\n"
                f"    {{ {self.operation}; }}\n"
                f"    {self.after_loop}\n"
                "}\n")


class KernelCache:
    """Kernel objects built once per key (operation and dtypes), shared by the threads of
    the client."""

    def __init__(self):
        self._cache, self._lock = {}, threading.Lock()

    def get(self, key, build):
        with self._lock:
            k = self._cache.get(key)
            if k is None:
                k = self._cache[key] = build()
        return k


def fast_divisor(d: int) -> tuple:
    """(multiplier, shift) with n // d == n * multiplier >> shift (a 64-bit product) for
    every 0 <= n < 2**31: shift = 31 + ceil(log2 d), multiplier = ceil(2**shift / d), which
    is below 2**32 (CUTLASS's FastDivmod, with the 64-bit product instead of a multiply-high
    so that d == 1 needs no branch)."""
    p = 31 + (max(d, 1) - 1).bit_length()
    return -(-(1 << p) // max(d, 1)), p


def element_strides(a, out_shape: tuple) -> list:
    """Element strides of array ``a`` (contiguous or a strided view) broadcast to
    ``out_shape``: 0 along the axes it is broadcast along (and the leading ones it lacks)."""
    strides = [0 if n == 1 else s // a.itemsize for n, s in zip(a.shape, a.strides)]
    return [0] * (len(out_shape) - a.ndim) + strides
