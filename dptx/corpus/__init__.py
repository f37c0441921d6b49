"""The test kernel corpus: CUDA C kernels with launch configurations, input builders and
independent numpy references.

Each :class:`Case` names a ``.cu`` file in this folder and an ``extern "C"`` kernel in it, a
grid and a block, a ``make_args(rng)`` that builds fresh arguments in kernel-parameter order
(numpy arrays for pointers, numpy scalars for scalars, numpy structured scalars
(``np.void``, C layout through ``align=True``) for structs passed by value), and a
``reference(args)`` that, given copies of the original arguments, returns
``{argument index: expected array after the launch}``. Arguments not in that dict are not
checked (e.g. the slot of an atomicExch whose last writer is not determined).

Typical use::

    ptx = compile_to_ptx(source(case), case.options, arch="compute_80")
    args = case.make_args(np.random.default_rng(0))
    expected = case.reference([a.copy() if isinstance(a, np.ndarray) else a for a in args])
    dptx.cpu.launch(kernel, case.grid, case.block, args, shared_mem=case.shared_mem)
    for k, want in expected.items():
        check(args[k], want, case.rtol, case.atol)   # see :func:`check`

``rtol == atol == 0`` means exact (NaNs compare equal to NaNs).

(Over 1,000 lines for a reason: it is a table, one ``case(...)`` entry per kernel with its
reference beside it, read top to bottom with the .cu files; the helpers above the table are
what the references share.)
"""
from __future__ import annotations

import math
import pathlib
from dataclasses import dataclass
from typing import Callable

import numpy as np

HERE = pathlib.Path(__file__).parent

U32 = 0xFFFFFFFF
U64 = 0xFFFFFFFFFFFFFFFF


@dataclass
class Case:
    name: str
    file: str
    kernel: str
    grid: tuple
    block: tuple
    make_args: Callable[[np.random.Generator], list]
    reference: Callable[[list], dict]
    rtol: float = 0
    atol: float = 0
    shared_mem: int = 0
    options: tuple = ()
    deterministic: bool = True
    features: tuple = ()

    @property
    def threads(self) -> int:
        return int(np.prod(self.grid)) * int(np.prod(self.block))


def source(case) -> str:
    """The CUDA C text of ``case`` (a Case or a file name)."""
    name = case.file if isinstance(case, Case) else str(case)
    return (HERE / name).read_text()


def check(got, want, rtol=0, atol=0, what=""):
    """Compare one output with its expected value: exact (bitwise for non-NaN floats) when
    rtol == atol == 0, else np.testing.assert_allclose (float16 compared as float64)."""
    got = np.asarray(got)
    want = np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    if rtol == 0 and atol == 0:
        np.testing.assert_array_equal(got, want, err_msg=what)
    else:
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64),
                                   rtol=rtol, atol=atol, err_msg=what)


def check_outputs(case, args, outputs: dict, in_process: list, where: str) -> None:
    """Check a launch's outputs (``outputs``: argument index -> array) against the same
    launch in process (``in_process``: the arguments after ``dptx.cpu.launch``; bitwise, for
    deterministic cases) and against the case's numpy reference on ``args``."""
    expected = case.reference(copy_args(args))
    for i, got in outputs.items():
        if case.deterministic:
            check(got, in_process[i], 0, 0, f"{case.name} argument {i}: {where} vs in-process")
        if i in expected:
            check(got, expected[i], case.rtol, case.atol, f"{case.name} argument {i} vs numpy")


# ----------------------------------------------------------------------------------------
# helpers
def _cdiv(a, b):
    return -(-a // b)


def _f32(rng, n, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, n).astype(np.float32)


def _f64(rng, n, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, n)


def _i32(rng, n, lo, hi):
    return rng.integers(lo, hi, n, dtype=np.int64).astype(np.int32)


def _u32(rng, n):
    return rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)


def _u64(rng, n):
    hi = rng.integers(0, 1 << 32, n, dtype=np.uint64)
    return (hi << np.uint64(32)) | rng.integers(0, 1 << 32, n, dtype=np.uint64)


def _wrap32(v):
    """Python int -> value of a signed 32-bit register."""
    v &= U32
    return v - (1 << 32) if v >> 31 else v


def _wrap64(v):
    v &= U64
    return v - (1 << 64) if v >> 63 else v


def _tdiv(a, b):
    """C division of Python ints (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _tmod(a, b):
    return a - b * _tdiv(a, b)


def _clz(x, bits):
    return bits - x.bit_length()


def _brev(x, bits):
    return int(format(x, f"0{bits}b")[::-1], 2)


def _ffs(x):
    return (x & -x).bit_length()


def _inc_sim(start, bound, count):
    v = start
    for _ in range(count):
        v = 0 if v >= bound else v + 1
    return v


def _dec_sim(start, bound, count):
    v = start
    for _ in range(count):
        v = bound if (v == 0 or v > bound) else v - 1
    return v


def _struct(dtype, values):
    return np.array(values, dtype=dtype)[()]


def _reduce(fn, values, init):
    acc = init
    for v in values:
        acc = fn(acc, v)
    return acc


CASES: list[Case] = []


def case(**kw):
    c = Case(**kw)
    CASES.append(c)
    return c


# ========================================================================================
# elementwise.cu
N_VEC = 10000
case(name="vecadd_f32", file="elementwise.cu", kernel="vecadd_f32", grid=(_cdiv(N_VEC, 256),), block=(256,),
     make_args=lambda rng: [_f32(rng, N_VEC), _f32(rng, N_VEC), np.zeros(N_VEC, np.float32), np.int32(N_VEC)],
     reference=lambda a: {2: a[0] + a[1]})

case(name="vecadd_f64", file="elementwise.cu", kernel="vecadd_f64", grid=(40,), block=(128,),
     make_args=lambda rng: [_f64(rng, 5000), _f64(rng, 5000), np.zeros(5000), np.int32(5000)],
     reference=lambda a: {2: a[0] + a[1]}, features=("fp64",))

case(name="saxpy", file="elementwise.cu", kernel="saxpy", grid=(32,), block=(128,),
     make_args=lambda rng: [np.int32(4000), np.float32(2.5), _f32(rng, 4000), _f32(rng, 4000)],
     reference=lambda a: {3: a[1] * a[2] + a[3]}, rtol=1e-6, atol=1e-6)

case(name="saxpy_nofma", file="elementwise.cu", kernel="saxpy_nofma", grid=(32,), block=(128,),
     make_args=lambda rng: [np.int32(4000), np.float32(-1.75), _f32(rng, 4000, -100, 100), _f32(rng, 4000, -100, 100)],
     reference=lambda a: {3: (a[1] * a[2]).astype(np.float32) + a[3]}, options=("-fmad=false",))

case(name="daxpy", file="elementwise.cu", kernel="daxpy", grid=(20,), block=(64,),
     make_args=lambda rng: [np.int32(1250), np.float64(0.3), _f64(rng, 1250), _f64(rng, 1250)],
     reference=lambda a: {3: a[1] * a[2] + a[3]}, rtol=1e-15, atol=1e-15, features=("fp64",))


def _float_ops_args(rng, dtype, n):
    a = rng.uniform(-10, 10, n).astype(dtype)
    b = rng.uniform(-10, 10, n).astype(dtype)
    b[::50] = a[::50]            # equal pairs
    a[7::97] = np.nan            # fmin/fmax return the other operand
    b[3::89] = np.nan
    return [a, b, np.zeros(n * (8 if dtype == np.float32 else 6), dtype), np.int32(n)]


def _float_ops_ref(a):
    x, y = a[0], a[1]
    with np.errstate(all="ignore"):
        cols = [x - y, x * y, x / y, np.sqrt(np.abs(x)), -x, np.fmin(x, y), np.fmax(x, y),
                np.where(x < y, 1.0, np.where(x == y, 0.5, 0.0)).astype(np.float32)]
    return {2: np.stack(cols, 1).astype(np.float32).ravel()}


def _double_ops_ref(a):
    x, y = a[0], a[1]
    with np.errstate(all="ignore"):
        cols = [x - y, x * y, x / y, np.sqrt(np.abs(x)), np.fmin(x, y), np.fmax(x, y)]
    return {2: np.stack(cols, 1).ravel()}


case(name="float_ops_f32", file="elementwise.cu", kernel="float_ops_f32", grid=(24,), block=(128,),
     make_args=lambda rng: _float_ops_args(rng, np.float32, 3000), reference=_float_ops_ref)

case(name="double_ops_f64", file="elementwise.cu", kernel="double_ops_f64", grid=(16,), block=(128,),
     make_args=lambda rng: _float_ops_args(rng, np.float64, 2000), reference=_double_ops_ref,
     features=("fp64",))


def _int_ops_args(rng):
    n = 3000
    a = _i32(rng, n, -40000, 40000)
    b = _i32(rng, n, -40000, 40000)
    b[b == 0] = 3
    b[::40] = a[::40]
    b[1::40] = -a[1::40]
    b[b == 0] = -7
    b[5::33] = _i32(rng, len(b[5::33]), -9, 10)   # small divisors and shifts
    b[b == 0] = 1
    return [a, b, np.zeros(10 * n, np.int32), np.int32(n)]


def _int_ops_ref(a):
    x = a[0].astype(np.int64)
    y = a[1].astype(np.int64)
    q = (np.abs(x) // np.abs(y)) * np.sign(x) * np.sign(y)
    r = x - q * y
    s = y & 31
    shl = ((x & U32) << s) & U32
    cols = [x + y, x - y, x * y, q, r, x >> s, shl, np.minimum(x, y), np.maximum(x, y),
            np.abs(x) + (x < y) + 2 * (x == y)]
    return {2: np.stack(cols, 1).astype(np.int32).ravel()}   # int64 -> int32 wraps


case(name="int_ops_i32", file="elementwise.cu", kernel="int_ops_i32", grid=(24,), block=(128,),
     make_args=_int_ops_args, reference=_int_ops_ref)


def _uint_ops_ref(a):
    x = a[0].astype(np.uint64)
    y = a[1].astype(np.uint64)
    m = np.uint64(U32)
    d = y | np.uint64(1)
    cols = [(x + y) & m, (x - y) & m, (x * y) & m, x // d, x % d, x >> (y & np.uint64(31)),
            np.minimum(x, y), np.maximum(x, y), (x * y) >> np.uint64(32)]
    return {2: np.stack(cols, 1).astype(np.uint32).ravel()}


def _uint_ops_args(rng):
    n = 2500
    a, b = _u32(rng, n), _u32(rng, n)
    b[::17] = rng.integers(0, 40, len(b[::17]))
    return [a, b, np.zeros(9 * n, np.uint32), np.int32(n)]


case(name="uint_ops_u32", file="elementwise.cu", kernel="uint_ops_u32", grid=(20,), block=(128,),
     make_args=_uint_ops_args, reference=_uint_ops_ref)


def _int64_args(rng):
    n = 1000
    a = _u64(rng, n).view(np.int64)
    b = _u64(rng, n).view(np.int64)
    a[::2] = rng.integers(-5000, 5000, len(a[::2]))
    b[1::3] = rng.integers(-70, 70, len(b[1::3]))
    b[b == 0] = 5
    a[a == np.iinfo(np.int64).min] = 1
    return [a, b, np.zeros(10 * n, np.int64), np.int32(n)]


def _int64_ref(a):
    out = []
    for x, y in zip(a[0].tolist(), a[1].tolist()):
        ux, uy = x & U64, y & U64
        out += [_wrap64(ux + uy), _wrap64(ux * uy), _tdiv(x, y), _tmod(x, y), x >> (y & 63),
                _wrap64(ux >> (uy & 63)), _wrap64(ux << (uy & 63)), min(x, y),
                _wrap64((ux * uy) >> 64), _wrap64((x * y) >> 64)]
    return {2: np.array(out, np.int64)}


case(name="int64_ops", file="elementwise.cu", kernel="int64_ops", grid=(8,), block=(128,),
     make_args=_int64_args, reference=_int64_ref, features=("int64",))


def _bit_args(rng):
    n = 2000
    a, b = _u32(rng, n), _u32(rng, n)
    a[::37] = 0
    a[1::41] = a[1::41] >> rng.integers(0, 32, len(a[1::41])).astype(np.uint32)
    b[2::29] = (b[2::29] & np.uint32(0xFF00FFFF)) | np.uint32(32 << 16)   # clamp shift of 32
    return [a, b, np.zeros(12 * n, np.uint32), np.int32(n)]


def _bit_ref(a):
    out = []
    for x, y in zip(a[0].tolist(), a[1].tolist()):
        s = y & 0x7777
        src = x | (y << 32)
        perm = 0
        for k in range(4):
            perm |= ((src >> (8 * ((s >> (4 * k)) & 7))) & 0xFF) << (8 * k)
        cat = (y << 32) | x
        sh = (y >> 8) & 31
        shc = min((y >> 16) & 63, 32)
        sx, sy = _wrap32(x), _wrap32(y)
        out += [bin(x).count("1"), _clz(x, 32), _brev(x, 32), _ffs(x), perm,
                ((cat << sh) >> 32) & U32, (cat >> sh) & U32,
                ((cat << shc) >> 32) & U32, (cat >> shc) & U32,
                ((x & y) ^ ((~x & U32) | (y >> 3))) & U32,
                (abs(sx - sy) + 7) & U32, (abs(x - y) + 5) & U32]
    return {2: np.array(out, np.uint64).astype(np.uint32)}


case(name="bit_ops", file="elementwise.cu", kernel="bit_ops", grid=(16,), block=(128,),
     make_args=_bit_args, reference=_bit_ref)


def _bit64_args(rng):
    n = 700
    a = _u64(rng, n)
    a[::31] = 0
    a[1::5] >>= rng.integers(0, 64, len(a[1::5])).astype(np.uint64)
    return [a, np.zeros(4 * n, np.uint64), np.int32(n)]


def _bit64_ref(a):
    out = []
    for x in a[0].tolist():
        out += [bin(x).count("1"), _clz(x, 64), _brev(x, 64), _ffs(x)]
    return {1: np.array(out, np.uint64)}


case(name="bit_ops64", file="elementwise.cu", kernel="bit_ops64", grid=(6,), block=(128,),
     make_args=_bit64_args, reference=_bit64_ref, features=("int64",))


def _conv_args(rng):
    n = 1500
    f = rng.uniform(-1e6, 1e6, n).astype(np.float32)
    f[::3] = rng.uniform(-100, 100, len(f[::3])).astype(np.float32)
    f[:8] = [0.5, 1.5, 2.5, -0.5, -2.5, 3.5, -1e-3, 0.0]
    d = rng.uniform(-1e9, 1e9, n)
    d[::4] = rng.uniform(-3, 3, len(d[::4]))
    k = _i32(rng, n, -(1 << 31), 1 << 31)
    return [f, d, k, np.zeros(4 * n, np.int32), np.zeros(3 * n, np.float32), np.zeros(2 * n, np.float64),
            np.int32(n)]


def _conv_ref(a):
    f, d, k = a[0], a[1], a[2]
    oi = np.stack([np.trunc(f).astype(np.int32), np.rint(f).astype(np.int32), f.view(np.int32),
                   np.trunc(d).astype(np.int32)], 1).ravel()
    of = np.stack([d.astype(np.float32), k.astype(np.float32), k.view(np.uint32).astype(np.float32)], 1).ravel()
    od = np.stack([f.astype(np.float64), k.astype(np.float64)], 1).ravel()
    return {3: oi, 4: of, 5: od}


case(name="conversions", file="elementwise.cu", kernel="conversions", grid=(12,), block=(128,),
     make_args=_conv_args, reference=_conv_ref, features=("fp64",))

case(name="grid_stride_scale", file="elementwise.cu", kernel="grid_stride_scale", grid=(8,), block=(128,),
     make_args=lambda rng: [_f32(rng, 20000, -10, 10), np.int32(20000), np.float32(0.75)],
     reference=lambda a: {0: a[0] * a[2] + np.float32(1.0)}, rtol=1e-6, atol=1e-6)


def _early_exit_args(rng):
    n = 3000
    return [_i32(rng, n, -50, 1000), np.full(n, -7, np.int32), np.int32(n)]


def _early_exit_ref(a):
    v = a[0].astype(np.int64)
    m = v & 15
    res = np.where(v < 0, -7, v * (m * (m - 1) // 2) + 1)
    return {1: res.astype(np.int32)}


case(name="early_exit", file="elementwise.cu", kernel="early_exit", grid=(24,), block=(128,),
     make_args=_early_exit_args, reference=_early_exit_ref)


def _collatz(v):
    r = 0
    while v > 1:
        v = 3 * v + 1 if v & 1 else v >> 1
        r += 1
    return r


def _divergent_ref(a, block=64):
    out = []
    for i, v in enumerate(a[0].tolist()):
        c = v & 3
        if c == 0:
            r = 3 * v
        elif c == 1:
            r = v - 100
        elif c == 2:
            r = _collatz(v)
        elif (i % block) & 1:
            r = -v
        elif v > 500:
            r = v // 7
        else:
            r = v % 7
        out.append(r)
    return {1: np.array(out, np.int32)}


case(name="divergent", file="elementwise.cu", kernel="divergent", grid=(32,), block=(64,),
     make_args=lambda rng: [_i32(rng, 2000, 0, 1000), np.zeros(2000, np.int32), np.int32(2000)],
     reference=_divergent_ref)

# ========================================================================================
# indexing.cu
case(name="transpose_naive", file="indexing.cu", kernel="transpose_naive", grid=(5, 7), block=(16, 16),
     make_args=lambda rng: [_f32(rng, 100 * 75), np.zeros(100 * 75, np.float32), np.int32(100), np.int32(75)],
     reference=lambda a: {1: a[0].reshape(100, 75).T.ravel()}, features=("2d",))


def _mm_args_f32(m, n, k):
    return lambda rng: [_f32(rng, m * k), _f32(rng, k * n), np.zeros(m * n, np.float32),
                        np.int32(m), np.int32(n), np.int32(k)]


def _mm_ref_f32(a):
    m, n, k = int(a[3]), int(a[4]), int(a[5])
    A = a[0].reshape(m, k).astype(np.float64)
    B = a[1].reshape(k, n).astype(np.float64)
    return {2: (A @ B).astype(np.float32).ravel()}


case(name="matmul_naive_f32", file="indexing.cu", kernel="matmul_naive_f32", grid=(4, 5), block=(16, 16),
     make_args=_mm_args_f32(70, 50, 40), reference=_mm_ref_f32, rtol=1e-5, atol=1e-5, features=("2d",))


def _mm_i32_args(rng):
    m, n, k = 33, 47, 29
    return [_i32(rng, m * k, -8, 9), _i32(rng, k * n, -8, 9), np.zeros(m * n, np.int32),
            np.int32(m), np.int32(n), np.int32(k)]


def _mm_i32_ref(a):
    m, n, k = int(a[3]), int(a[4]), int(a[5])
    return {2: (a[0].reshape(m, k).astype(np.int64) @ a[1].reshape(k, n)).astype(np.int32).ravel()}


case(name="matmul_naive_i32", file="indexing.cu", kernel="matmul_naive_i32", grid=(6, 5), block=(8, 8),
     make_args=_mm_i32_args, reference=_mm_i32_ref, features=("2d",))


def _scale3d_ref(a):
    nx, ny, nz, s = int(a[2]), int(a[3]), int(a[4]), a[5]
    z, y, x = np.meshgrid(np.arange(nz), np.arange(ny), np.arange(nx), indexing="ij")
    off = (x + 2 * y + 3 * z).astype(np.float32).ravel()
    return {1: (a[0] * s).astype(np.float32) + off}


case(name="scale3d", file="indexing.cu", kernel="scale3d", grid=(3, 3, 5), block=(8, 4, 2),
     make_args=lambda rng: [_f32(rng, 20 * 12 * 10), np.zeros(20 * 12 * 10, np.float32),
                            np.int32(20), np.int32(12), np.int32(10), np.float32(1.5)],
     reference=_scale3d_ref, options=("-fmad=false",), features=("3d",))


def _stencil3d_ref(a):
    nx, ny, nz = int(a[2]), int(a[3]), int(a[4])
    g = a[0].reshape(nz, ny, nx).astype(np.int64)
    out = g.copy()
    c = g[1:-1, 1:-1, 1:-1]
    out[1:-1, 1:-1, 1:-1] = (6 * c - g[1:-1, 1:-1, :-2] - g[1:-1, 1:-1, 2:] - g[1:-1, :-2, 1:-1]
                             - g[1:-1, 2:, 1:-1] - g[:-2, 1:-1, 1:-1] + 2 * g[2:, 1:-1, 1:-1])
    return {1: out.astype(np.int32).ravel()}


case(name="stencil3d_i32", file="indexing.cu", kernel="stencil3d_i32", grid=(3, 2, 3), block=(8, 8, 4),
     make_args=lambda rng: [_i32(rng, 18 * 13 * 9, -100, 100), np.zeros(18 * 13 * 9, np.int32),
                            np.int32(18), np.int32(13), np.int32(9)],
     reference=_stencil3d_ref, features=("3d",))


def _thread_ids_ref(a, grid=(3, 2, 2), block=(4, 3, 2)):
    rows = []
    for bz in range(grid[2]):
        for by in range(grid[1]):
            for bx in range(grid[0]):
                for tz in range(block[2]):
                    for ty in range(block[1]):
                        for tx in range(block[0]):
                            rows.append([bx, by, bz, tx, ty, tz,
                                         grid[0] * 10000 + grid[1] * 100 + grid[2],
                                         block[0] * 10000 + block[1] * 100 + block[2]])
    return {0: np.array(rows, np.int32).ravel()}


case(name="thread_ids", file="indexing.cu", kernel="thread_ids", grid=(3, 2, 2), block=(4, 3, 2),
     make_args=lambda rng: [np.full(12 * 24 * 8, -1, np.int32)], reference=_thread_ids_ref, features=("3d",))

# ========================================================================================
# shared.cu
case(name="matmul_tiled_f32", file="shared.cu", kernel="matmul_tiled_f32", grid=(5, 4), block=(16, 16),
     make_args=_mm_args_f32(50, 70, 45), reference=_mm_ref_f32, rtol=1e-5, atol=1e-5,
     features=("shared", "barrier", "2d"))

case(name="transpose_tiled", file="shared.cu", kernel="transpose_tiled", grid=(4, 3), block=(32, 8),
     make_args=lambda rng: [_i32(rng, 70 * 100, -1000, 1000), np.zeros(70 * 100, np.int32), np.int32(70), np.int32(100)],
     reference=lambda a: {1: a[0].reshape(70, 100).T.ravel()}, features=("shared", "barrier", "2d"))


def _block_sums(x, per_block, nblocks):
    p = np.zeros(per_block * nblocks, np.int64)
    p[:len(x)] = x
    return p.reshape(nblocks, per_block).sum(1).astype(np.int32)


case(name="reduce_tree_i32", file="shared.cu", kernel="reduce_tree_i32", grid=(20,), block=(256,),
     make_args=lambda rng: [_i32(rng, 10000, -1000, 1000), np.zeros(20, np.int32), np.int32(10000)],
     reference=lambda a: {1: _block_sums(a[0], 512, 20)}, features=("shared", "barrier"))

case(name="reduce_dynamic_i32", file="shared.cu", kernel="reduce_dynamic_i32", grid=(40,), block=(128,),
     make_args=lambda rng: [_i32(rng, 5000, -1000, 1000), np.zeros(40, np.int32), np.int32(5000)],
     reference=lambda a: {1: _block_sums(a[0], 128, 40)}, shared_mem=128 * 4,
     features=("shared", "dynamic_shared", "barrier"))


def _reduce_f32_ref(a):
    x = a[0].astype(np.float64)
    p = np.zeros(_cdiv(len(x), 4096) * 4096)
    p[:len(x)] = x
    return {1: p.reshape(-1, 16, 256).sum(axis=(0, 2)).astype(np.float32)}


case(name="reduce_dynamic_f32", file="shared.cu", kernel="reduce_dynamic_f32", grid=(16,), block=(256,),
     make_args=lambda rng: [_f32(rng, 30000, 0, 1), np.zeros(16, np.float32), np.int32(30000)],
     reference=_reduce_f32_ref, rtol=1e-5, atol=1e-4, shared_mem=256 * 4,
     features=("shared", "dynamic_shared", "barrier"))


def _two_arrays_ref(a, B=64):
    n = int(a[3])
    nb = _cdiv(n, B)
    d = np.zeros(nb * B)
    d[:n] = a[0]
    k = np.zeros(nb * B, np.int64)
    k[:n] = a[1]
    d = d.reshape(nb, B)
    k = k.reshape(nb, B)
    tid = np.arange(B)
    out = d[:, (tid + 1) % B] * k[:, B - 1 - tid].astype(np.float64)
    return {2: out.ravel()[:n]}


case(name="dynamic_two_arrays", file="shared.cu", kernel="dynamic_two_arrays", grid=(16,), block=(64,),
     make_args=lambda rng: [_f64(rng, 1000), _i32(rng, 1000, -50, 50), np.zeros(1000), np.int32(1000)],
     reference=_two_arrays_ref, shared_mem=64 * 12, features=("shared", "dynamic_shared", "barrier", "fp64"))


def _scan_ref(x, seg, exclusive=False):
    out = np.empty(len(x), np.int64)
    for s in range(0, len(x), seg):
        c = np.cumsum(x[s:s + seg].astype(np.int64))
        out[s:s + seg] = c - x[s:s + seg] if exclusive else c
    return out.astype(np.int32)


case(name="scan_block_i32", file="shared.cu", kernel="scan_block_i32", grid=(12,), block=(256,),
     make_args=lambda rng: [_i32(rng, 3000, -100, 100), np.zeros(3000, np.int32), np.int32(3000)],
     reference=lambda a: {1: _scan_ref(a[0], 256)}, features=("shared", "barrier"))

case(name="scan_blelloch_i32", file="shared.cu", kernel="scan_blelloch_i32", grid=(8,), block=(128,),
     make_args=lambda rng: [_i32(rng, 2000, -100, 100), np.zeros(2000, np.int32), np.int32(2000)],
     reference=lambda a: {1: _scan_ref(a[0], 256, exclusive=True)}, features=("shared", "barrier"))


def _stencil1d_ref(a):
    p = np.concatenate([[0], a[0].astype(np.int64), [0]])
    return {1: (p[:-2] + 2 * p[1:-1] + p[2:]).astype(np.int32)}


case(name="stencil1d_shared", file="shared.cu", kernel="stencil1d_shared", grid=(8,), block=(128,),
     make_args=lambda rng: [_i32(rng, 1000, -1000, 1000), np.zeros(1000, np.int32), np.int32(1000)],
     reference=_stencil1d_ref, features=("shared", "barrier"))


def _rounds_ref(a, B=64, G=6):
    rounds = int(a[2])
    s = a[0].astype(np.int64).reshape(G, B).sum(1)
    r = np.arange(rounds)
    return {1: (s[:, None] * ((r + 1) * (r + 2) // 2)[None, :]).astype(np.int32).ravel()}


case(name="barrier_rounds", file="shared.cu", kernel="barrier_rounds", grid=(6,), block=(64,),
     make_args=lambda rng: [_i32(rng, 6 * 64, -100, 100), np.zeros(60, np.int32), np.int32(10)],
     reference=_rounds_ref, features=("shared", "barrier"))

# ========================================================================================
# warp.cu
case(name="warp_reduce_shfl_down", file="warp.cu", kernel="warp_reduce_shfl_down", grid=(8,), block=(128,),
     make_args=lambda rng: [_i32(rng, 1024, -10000, 10000), np.zeros(32, np.int32)],
     reference=lambda a: {1: a[0].reshape(32, 32).sum(1).astype(np.int32)}, features=("warp",))

case(name="warp_allreduce_xor_f32", file="warp.cu", kernel="warp_allreduce_xor_f32", grid=(4,), block=(64,),
     make_args=lambda rng: [_f32(rng, 256), np.zeros(256, np.float32)],
     reference=lambda a: {1: np.repeat(a[0].astype(np.float64).reshape(8, 32).sum(1), 32).astype(np.float32)},
     rtol=1e-5, atol=1e-5, features=("warp",))

case(name="warp_allmax_xor", file="warp.cu", kernel="warp_allmax_xor", grid=(4,), block=(64,),
     make_args=lambda rng: [_i32(rng, 256, -(1 << 31), 1 << 31), np.zeros(256, np.int32)],
     reference=lambda a: {1: np.repeat(a[0].reshape(8, 32).max(1), 32)}, features=("warp",))

case(name="warp_scan_shfl_up", file="warp.cu", kernel="warp_scan_shfl_up", grid=(4,), block=(96,),
     make_args=lambda rng: [_i32(rng, 384, -1000, 1000), np.zeros(384, np.int32)],
     reference=lambda a: {1: _scan_ref(a[0], 32)}, features=("warp",))


def _shfl_bcast_ref(a):
    v, dv, src = a[0], a[1], int(a[4])
    n = len(v)
    i = np.arange(n)
    lane, base = i & 31, i & ~31
    out = np.stack([v[base + src], v[base + (lane & ~7) + ((lane + 3) & 7)]], 1).ravel()
    return {2: out, 3: dv[base + ((lane + 5) & 31)]}


case(name="warp_shfl_broadcast", file="warp.cu", kernel="warp_shfl_broadcast", grid=(3,), block=(64,),
     make_args=lambda rng: [_i32(rng, 192, -1000, 1000), _f64(rng, 192), np.zeros(384, np.int32),
                            np.zeros(192), np.int32(13)],
     reference=_shfl_bcast_ref, features=("warp", "fp64"))


def _votes_args(rng):
    v = _i32(rng, 512, -60, 100)
    v[0:32] = _i32(rng, 32, 0, 90)       # warp 0: all > -50, none > 90
    v[32:64] = _i32(rng, 32, -40, 80)
    v[40] = 95                           # warp 1: all > -50, one > 90
    v[64:96] = -55                       # warp 2: all <= 0
    v[96:128] = 91                       # warp 3: all > 0
    return [v, np.zeros(64, np.uint32)]


def _votes_ref(a):
    out = []
    for w in a[0].reshape(16, 32).astype(np.int64):
        ballot = sum(1 << l for l in range(32) if w[l] > 0)
        half = sum(1 << l for l in range(16) if w[l] & 1)
        out += [ballot, int(all(w > -50)), int(any(w > 90)), half]
    return {1: np.array(out, np.uint32)}


case(name="warp_votes", file="warp.cu", kernel="warp_votes", grid=(4,), block=(128,),
     make_args=_votes_args, reference=_votes_ref, features=("warp",))


def _redux_args(rng):
    v = _u32(rng, 256)
    v[32:64] = rng.integers(0, 1000, 32)
    v[64:96] = np.uint32(0xF0F0F0F0) | rng.integers(0, 16, 32).astype(np.uint32)
    return [v, np.zeros(64, np.uint32)]


def _redux_ref(a):
    out = []
    for w in a[0].reshape(8, 32).tolist():
        s = [_wrap32(x) for x in w]
        out += [sum(w) & U32, min(s) & U32, max(s) & U32, min(w), max(w),
                _reduce(lambda p, q: p & q, w, U32), _reduce(lambda p, q: p | q, w, 0),
                _reduce(lambda p, q: p ^ q, w, 0)]
    return {1: np.array(out, np.uint64).astype(np.uint32)}


case(name="warp_redux", file="warp.cu", kernel="warp_redux", grid=(2,), block=(128,),
     make_args=_redux_args, reference=_redux_ref, features=("warp", "redux"))


def _match_args(rng):
    keys = _i32(rng, 256, 0, 4)
    keys[0:32] = 2                                     # warp 0: one group
    keys[32:64] = np.arange(32)                        # warp 1: all distinct
    keys[64:96] = _i32(rng, 32, 0, 2) | 0x100          # warp 2: match_all on bit 0x100 holds
    keys64 = rng.choice(np.array([1 << 40, -(1 << 35), 7, (1 << 40) + 7], np.int64), 256)
    return [keys, keys64, np.zeros(4 * 256, np.uint32)]


def _match_ref(a):
    out = []
    for w in range(len(a[0]) // 32):
        k = a[0][32 * w:32 * w + 32].tolist()
        k64 = a[1][32 * w:32 * w + 32].tolist()
        bits = {x & 0x100 for x in k}
        allm = U32 if len(bits) == 1 else 0
        for l in range(32):
            m1 = sum(1 << j for j in range(32) if k[j] == k[l])
            m2 = sum(1 << j for j in range(32) if k64[j] == k64[l])
            out += [m1, m2, allm, int(allm != 0)]
    return {2: np.array(out, np.uint64).astype(np.uint32)}


case(name="warp_match", file="warp.cu", kernel="warp_match", grid=(2,), block=(128,),
     make_args=_match_args, reference=_match_ref, features=("warp", "match"))

case(name="block_reduce_warp_shared", file="warp.cu", kernel="block_reduce_warp_shared", grid=(10,), block=(256,),
     make_args=lambda rng: [_i32(rng, 2400, -1000, 1000), np.zeros(10, np.int32), np.int32(2400)],
     reference=lambda a: {1: _block_sums(a[0], 256, 10)}, features=("warp", "shared", "barrier"))

case(name="warp_reverse_syncwarp", file="warp.cu", kernel="warp_reverse_syncwarp", grid=(4,), block=(256,),
     make_args=lambda rng: [_i32(rng, 1024, -1000, 1000), np.zeros(1024, np.int32)],
     reference=lambda a: {1: a[0].reshape(-1, 32)[:, ::-1].ravel()}, features=("warp", "shared"))

# ========================================================================================
# atomics.cu
_INT_MIN, _INT_MAX = -(1 << 31), (1 << 31) - 1
_LL_MIN, _LL_MAX = -(1 << 63), (1 << 63) - 1


def _clear_masks(rng, n, bits, dtype):
    k = rng.integers(0, bits, n).astype(np.uint64)
    full = U32 if dtype == np.uint32 else U64
    return np.array([full & ~(1 << int(b)) for b in k], np.uint64).astype(dtype)


def _ag32_args(rng):
    n = 3000
    a = _i32(rng, n, -1_000_000, 1_000_000)
    m = _clear_masks(rng, n, 20, np.uint32)
    oi = np.array([5, 1000, _INT_MAX, _INT_MIN, -1, 0, 0x12345678], np.int32)
    ou = np.array([7, 0, U32, 0, U32, 0, 0x0F0F0F0F, 0, 0, 9, 100], np.uint32)
    return [a, m, np.int32(n), oi, ou]


def _ag32_ref(a):
    x = a[0].tolist()
    ux = [v & U32 for v in x]
    m = a[1].tolist()
    n = len(x)
    oi, ou = a[3].tolist(), a[4].tolist()
    ri = [_wrap32(oi[0] + sum(x)), _wrap32(oi[1] - sum(x)), min([oi[2]] + x), max([oi[3]] + x),
          _wrap32(_reduce(lambda p, q: p & q, m, oi[4] & U32)),
          _wrap32(_reduce(lambda p, q: p | (~q & U32), m, oi[5] & U32)),
          _wrap32(_reduce(lambda p, q: p ^ q, ux, oi[6] & U32))]
    ru = [(ou[0] + sum(ux)) & U32, (ou[1] - sum(ux)) & U32, min([ou[2]] + ux), max([ou[3]] + ux),
          _reduce(lambda p, q: p & q, m, ou[4]), _reduce(lambda p, q: p | (~q & U32), m, ou[5]),
          _reduce(lambda p, q: p ^ q, m, ou[6]),
          _inc_sim(ou[7], 17, n), _dec_sim(ou[8], 13, n), _inc_sim(ou[9], 5, n), _dec_sim(ou[10], 7, n)]
    return {3: np.array(ri, np.int32), 4: np.array(ru, np.uint32)}


case(name="atomic_global_32", file="atomics.cu", kernel="atomic_global_32", grid=(12,), block=(256,),
     make_args=_ag32_args, reference=_ag32_ref, features=("atomic",))


def _ag64_args(rng):
    n = 2000
    a = _u64(rng, n).view(np.int64)
    m = _clear_masks(rng, n, 40, np.uint64)
    ol = np.array([_LL_MAX, _LL_MIN], np.int64)
    oul = np.array([3, U64, 0, U64, 0, 0xDEADBEEF], np.uint64)
    return [a, m, np.int32(n), ol, oul]


def _ag64_ref(a):
    x = a[0].tolist()
    ux = [v & U64 for v in x]
    m = a[1].tolist()
    ol, oul = a[3].tolist(), a[4].tolist()
    rl = [min([ol[0]] + x), max([ol[1]] + x)]
    ru = [(oul[0] + sum(ux)) & U64, min([oul[1]] + ux), max([oul[2]] + ux),
          _reduce(lambda p, q: p & q, m, oul[3]), _reduce(lambda p, q: p | (~q & U64), m, oul[4]),
          _reduce(lambda p, q: p ^ q, m, oul[5])]
    return {3: np.array(rl, np.int64), 4: np.array(ru, np.uint64)}


case(name="atomic_global_64", file="atomics.cu", kernel="atomic_global_64", grid=(16,), block=(128,),
     make_args=_ag64_args, reference=_ag64_ref, features=("atomic", "int64"))


def _bins_args(dtype, n, nbins, exact):
    def make(rng):
        if exact:   # multiples of 1/4 with small magnitude: every partial sum is exact
            v = (rng.integers(-256, 257, n) / 4.0).astype(dtype)
        else:
            v = rng.uniform(0, 1, n).astype(dtype)
        return [v, _i32(rng, n, 0, nbins), np.int32(n),
                np.full(nbins, 0.5, dtype)]
    return make


def _bins_ref(a):
    v, b, bins = a[0], a[1], a[3]
    sums = np.bincount(b, weights=v.astype(np.float64), minlength=len(bins))
    return {3: (bins.astype(np.float64) + sums).astype(bins.dtype)}


case(name="atomic_add_f32_bins", file="atomics.cu", kernel="atomic_add_f32_bins", grid=(40,), block=(128,),
     make_args=_bins_args(np.float32, 5000, 16, False), reference=_bins_ref, rtol=1e-5, atol=1e-3,
     deterministic=False, features=("atomic", "atomic_float"))

case(name="atomic_add_f32_bins_exact", file="atomics.cu", kernel="atomic_add_f32_bins", grid=(40,), block=(128,),
     make_args=_bins_args(np.float32, 5000, 16, True), reference=_bins_ref, features=("atomic", "atomic_float"))

case(name="atomic_add_f64_bins", file="atomics.cu", kernel="atomic_add_f64_bins", grid=(24,), block=(128,),
     make_args=_bins_args(np.float64, 3000, 10, False), reference=_bins_ref, rtol=1e-12, atol=1e-12,
     deterministic=False, features=("atomic", "atomic_float", "fp64"))

case(name="atomic_add_f64_bins_exact", file="atomics.cu", kernel="atomic_add_f64_bins", grid=(24,), block=(128,),
     make_args=_bins_args(np.float64, 3000, 10, True), reference=_bins_ref,
     features=("atomic", "atomic_float", "fp64"))


def _tickets_args(rng):
    n, k = 2500, 7
    return [np.int32(n), np.int32(k), np.zeros(2, np.uint32), np.zeros(1, np.uint64),
            np.zeros(n, np.int32), np.zeros(n, np.int32), np.zeros(k, np.int32)]


def _tickets_ref(a):
    n, k = int(a[0]), int(a[1])
    return {2: np.array([n, n % k], np.uint32), 3: np.array([n], np.uint64),
            4: np.ones(n, np.int32), 5: np.ones(n, np.int32),
            6: np.bincount(np.arange(n) % k, minlength=k).astype(np.int32)}


case(name="atomic_tickets", file="atomics.cu", kernel="atomic_tickets", grid=(20,), block=(128,),
     make_args=_tickets_args, reference=_tickets_ref, features=("atomic", "atomic_return"))


def _exch_cas_args(rng):
    n, gsize = 3000, 100
    g = n // gsize
    return [_i32(rng, n, -100000, 100000), rng.uniform(0, 1000, n), np.int32(n), np.int32(gsize),
            np.zeros(g, np.int32), np.zeros(g, np.uint64), np.zeros(g, np.float32), np.full(g, -1, np.int32),
            np.zeros(4 * g, np.int32), np.array([11], np.int32), np.array([5], np.uint64), np.zeros(1)]


def _exch_cas_ref(a):
    g = int(a[2]) // int(a[3])
    s = sum(a[0].tolist())
    return {4: np.ones(g, np.int32), 6: np.full(g, 2.5, np.float32), 8: np.ones(4 * g, np.int32),
            9: np.array([_wrap32(11 + s)], np.int32), 10: np.array([(5 + s) & U64], np.uint64),
            11: np.array([a[1].max()])}


# flags64 ends with whichever thread's atomicExch came last: not the same from run to run
case(name="atomic_exch_cas", file="atomics.cu", kernel="atomic_exch_cas", grid=(24,), block=(128,),
     make_args=_exch_cas_args, reference=_exch_cas_ref, deterministic=False,
     features=("atomic", "atomic_return", "atomic_exch", "atomic_cas", "fp64"))


def _as32_args(rng):
    n = 1000
    return [_i32(rng, n, -100000, 100000), _clear_masks(rng, n, 24, np.uint32),
            (rng.integers(-800, 801, n) / 8.0).astype(np.float32), np.int32(n), np.zeros(8 * 16, np.int32)]


def _as32_ref(a, B=128):
    n = int(a[3])
    recs = []
    for b in range(_cdiv(n, B)):
        lo, hi = b * B, min(n, b * B + B)
        x = a[0][lo:hi].tolist()
        ux = [v & U32 for v in x]
        m = a[1][lo:hi].tolist()
        fs = float(np.sum(a[2][lo:hi].astype(np.float64)))
        cnt = hi - lo
        rec = [_wrap32(sum(x)), _wrap32(1000 - sum(x)), min([_INT_MAX] + x), max([_INT_MIN] + x),
               _wrap32(_reduce(lambda p, q: p & q, m, U32)),
               _wrap32(_reduce(lambda p, q: p | (~q & U32), m, 0)),
               _wrap32(_reduce(lambda p, q: p ^ q, ux, 0x5A5A5A5A)),
               min(8, cnt), min(8, cnt), _wrap32(_reduce(lambda p, q: p ^ q, ux, 0)),
               _wrap32(sum(ux)), _wrap32(min([U32] + ux)), _wrap32(max([0] + ux)),
               _wrap32(_inc_sim(0, 9, cnt)), _wrap32(_dec_sim(3, 11, cnt)),
               int(np.array([fs], np.float32).view(np.int32)[0])]
        recs += rec
    return {4: np.array(recs, np.int32)}


case(name="atomic_shared_32", file="atomics.cu", kernel="atomic_shared_32", grid=(8,), block=(128,),
     make_args=_as32_args, reference=_as32_ref,
     features=("atomic", "shared", "barrier", "atomic_return", "atomic_exch", "atomic_cas", "atomic_float"))


def _as64_args(rng):
    n = 500
    a = _u64(rng, n).view(np.int64)
    a[::3] = rng.integers(-1000, 1000, len(a[::3]))
    return [a, _clear_masks(rng, n, 48, np.uint64), rng.integers(-1600, 1601, n) / 16.0, np.int32(n),
            np.zeros(8 * 9, np.uint64), np.zeros(16, np.int32)]


def _as64_ref(a, B=64):
    n = int(a[3])
    recs, rec2 = [], []
    for b in range(_cdiv(n, B)):
        lo, hi = b * B, min(n, b * B + B)
        x = a[0][lo:hi].tolist()
        ux = [v & U64 for v in x]
        m = a[1][lo:hi].tolist()
        ds = float(np.sum(a[2][lo:hi]))
        recs += [min([_LL_MAX] + x) & U64, max([_LL_MIN] + x) & U64, (5 + sum(ux)) & U64,
                 min([U64] + ux), max([0] + ux), _reduce(lambda p, q: p & q, m, U64),
                 _reduce(lambda p, q: p | (~q & U64), m, 0), _reduce(lambda p, q: p ^ q, m, 0x0123456789ABCDEF),
                 int(np.array([ds]).view(np.uint64)[0])]
        rec2 += [min(4, hi - lo), min(4, hi - lo)]
    return {4: np.array(recs, np.uint64), 5: np.array(rec2, np.int32)}


case(name="atomic_shared_64", file="atomics.cu", kernel="atomic_shared_64", grid=(8,), block=(64,),
     make_args=_as64_args, reference=_as64_ref,
     features=("atomic", "shared", "barrier", "int64", "atomic_return", "atomic_exch", "atomic_cas",
               "atomic_float", "fp64"))

case(name="histogram_global", file="atomics.cu", kernel="histogram_global", grid=(16,), block=(128,),
     make_args=lambda rng: [_i32(rng, 20000, -1000, 1000), np.int32(20000), np.zeros(37, np.int32), np.int32(37)],
     reference=lambda a: {2: np.bincount(np.mod(a[0], 37), minlength=37).astype(np.int32)},
     features=("atomic",))

case(name="histogram_shared", file="atomics.cu", kernel="histogram_shared", grid=(8,), block=(256,),
     make_args=lambda rng: [rng.integers(0, 256, 50000).astype(np.uint8) // rng.integers(1, 4, 50000).astype(np.uint8),
                            np.int32(50000), np.zeros(256, np.uint32)],
     reference=lambda a: {2: np.bincount(a[0], minlength=256).astype(np.uint32)},
     features=("atomic", "shared", "barrier"))

# ========================================================================================
# functions.cu
def _noinline_ref(a):
    x, k = a[0], a[1].astype(np.int64)
    fy = (np.float32(0.5) * x + np.float32(-2.0)) * x + np.float32(3.0)
    groups = k.reshape(-1, 4)
    mn = np.repeat(groups.min(1), 4)
    mx = np.repeat(groups.max(1), 4)
    iy = np.stack([np.clip(k + 100, -500, 500), mn, mx], 1).astype(np.int32).ravel()
    return {2: fy.astype(np.float32), 3: iy}


case(name="call_noinline", file="functions.cu", kernel="call_noinline", grid=(8,), block=(128,),
     make_args=lambda rng: [_f32(rng, 1000, -5, 5), _i32(rng, 1000, -700, 700), np.zeros(1000, np.float32),
                            np.zeros(3000, np.int32), np.int32(1000)],
     reference=_noinline_ref, rtol=1e-6, atol=1e-5, features=("call",))


def _recursion_ref(a):
    k = a[0].tolist()
    fibs = [0, 1]
    while len(fibs) < 16:
        fibs.append(fibs[-1] + fibs[-2])
    return {1: np.array([fibs[v % 16] for v in k], np.int32),
            2: np.array([math.factorial(v % 21) for v in k], np.uint64),
            3: np.array([int((v % 40) % 2 == 0) for v in k], np.int32)}


case(name="recursion", file="functions.cu", kernel="recursion", grid=(5,), block=(64,),
     make_args=lambda rng: [_i32(rng, 300, 0, 1000), np.zeros(300, np.int32), np.zeros(300, np.uint64),
                            np.full(300, -1, np.int32), np.int32(300)],
     reference=_recursion_ref, features=("call", "recursion", "int64"))


def _local_hist_ref(a):
    rows = a[0].reshape(-1, 32)
    out = []
    for r in rows:
        h = np.bincount(r & 15, minlength=16)
        best = int(np.argmax(h))
        out += [h[r[0] & 15], h[(r[1] >> 4) & 15], best, h[best]]
    return {1: np.array(out, np.int32)}


case(name="local_histogram", file="functions.cu", kernel="local_histogram", grid=(8,), block=(64,),
     make_args=lambda rng: [_u32(rng, 500 * 32), np.zeros(2000, np.int32), np.int32(500)],
     reference=_local_hist_ref, features=("local",))

case(name="local_sort", file="functions.cu", kernel="local_sort", grid=(11,), block=(64,),
     make_args=lambda rng: [np.round(_f32(rng, 700 * 12, -50, 50), 1).astype(np.float32), np.int32(700)],
     reference=lambda a: {0: np.sort(a[0].reshape(-1, 12), axis=1).ravel()}, features=("local",))


def _local_call_ref(a):
    i = np.arange(len(a[0]), dtype=np.int64)
    j = a[0].astype(np.int64) % 10
    return {1: ((i + j) ** 2 - i ** 2).astype(np.int32)}


case(name="local_through_call", file="functions.cu", kernel="local_through_call", grid=(8,), block=(128,),
     make_args=lambda rng: [_i32(rng, 900, 0, 1000), np.zeros(900, np.int32), np.int32(900)],
     reference=_local_call_ref, features=("local", "call"))

# ========================================================================================
# globals.cu
_COEFFS = np.array([1.0, -0.5, 0.25, 2.0], np.float32)
_TABLE = np.array([3, 1, 4, 1, 5, 9, 2, 6], np.int32)


def _const_poly_ref(a):
    x = a[0].astype(np.float64)
    c = _COEFFS.astype(np.float64)
    return {1: (((c[3] * x + c[2]) * x + c[1]) * x + c[0]).astype(np.float32)}


case(name="const_poly", file="globals.cu", kernel="const_poly", grid=(16,), block=(128,),
     make_args=lambda rng: [_f32(rng, 2000, -3, 3), np.zeros(2000, np.float32), np.int32(2000)],
     reference=_const_poly_ref, rtol=1e-5, atol=1e-5, features=("global_var", "const"))


def _device_table_ref(a):
    k = a[0] & 7
    return {1: np.stack([_TABLE[k] << 3, _TABLE[7 - k]], 1).ravel().astype(np.int32),
            2: 1.5 * _TABLE[k].astype(np.float64)}


case(name="device_table", file="globals.cu", kernel="device_table", grid=(4,), block=(128,),
     make_args=lambda rng: [_i32(rng, 500, -1000, 1000), np.zeros(1000, np.int32), np.zeros(500), np.int32(500)],
     reference=_device_table_ref, features=("global_var", "const", "fp64"))

PARAMS_DTYPE = np.dtype([("scale", "<f4"), ("count", "<i4"), ("bias", "<f8"), ("tag", "i1"), ("step", "<i2"),
                         ("weights", "<f4", (3,)), ("big", "<i8")], align=True)
PAIR2_DTYPE = np.dtype([("a", "<i4"), ("b", "<f4")], align=True)
assert PARAMS_DTYPE.itemsize == 40 and PARAMS_DTYPE.fields["big"][1] == 32


def _struct_args(rng):
    p = _struct(PARAMS_DTYPE, (1.25, 7, 0.5, ord("A"), -3, (0.5, 2.0, -1.0), 1 << 40))
    return [p, _f32(rng, 1000, -10, 10), np.zeros(1000), np.zeros(1000, np.int64), np.int32(1000)]


def _struct_ref(a):
    p, x = a[0], a[1]
    i = np.arange(len(x))
    w = p["weights"].astype(np.float32)[i % 3]
    prod = ((x * np.float32(p["scale"])).astype(np.float32) * w).astype(np.float32)
    out = prod.astype(np.float64) + float(p["bias"]) + (i % int(p["count"])).astype(np.float64)
    lout = int(p["big"]) + int(p["tag"]) * int(p["step"]) + i.astype(np.int64)
    return {2: out, 3: lout.astype(np.int64)}


case(name="struct_param", file="globals.cu", kernel="struct_param", grid=(8,), block=(128,),
     make_args=_struct_args, reference=_struct_ref, features=("struct", "fp64", "int64"))


def _mixed_args(rng):
    return [np.int8(-5), np.int16(-1234), _struct(PAIR2_DTYPE, (77, 3.25)), np.uint8(200),
            np.int64(0x123456789ABCDEF0 - (1 << 62)), np.float32(1.5), np.float64(-2.75), np.uint16(60000),
            np.zeros(7, np.int32), np.zeros(3)]


def _mixed_ref(a):
    ll = int(a[4])
    out = [int(a[0]), int(a[1]), int(a[2]["a"]), int(a[3]), _wrap32(ll >> 32), _wrap32(ll & U32), int(a[7])]
    return {8: np.array(out, np.int32), 9: np.array([float(a[2]["b"]), float(a[5]), float(a[6])])}


case(name="mixed_scalars", file="globals.cu", kernel="mixed_scalars", grid=(1,), block=(32,),
     make_args=_mixed_args, reference=_mixed_ref, features=("struct", "fp64", "int64"))

# ========================================================================================
# fp16.cu
def _half_convert_args(rng):
    n = 1000
    f = _f32(rng, n, -1000, 1000)
    f[::10] = _f32(rng, len(f[::10]), -1e-5, 1e-5)   # half subnormals
    h = _f32(rng, n, -100, 100).astype(np.float16)
    return [f, h, np.zeros(2 * n, np.float16), np.zeros(n, np.float32), np.int32(n)]


def _half_convert_ref(a):
    n = len(a[0])
    oh = np.stack([a[0].astype(np.float16), (np.arange(n) - 100).astype(np.float16)], 1).ravel()
    return {2: oh, 3: a[1].astype(np.float32)}


case(name="half_convert", file="fp16.cu", kernel="half_convert", grid=(8,), block=(128,),
     make_args=_half_convert_args, reference=_half_convert_ref, features=("fp16",))


def _half_arith_args(rng):
    n = 1000
    a = _f32(rng, n, -4, 4).astype(np.float16)
    b = _f32(rng, n, 0.25, 4).astype(np.float16) * np.where(rng.random(n) < 0.5, -1, 1).astype(np.float16)
    return [a, b, np.zeros(7 * n, np.float16), np.int32(n)]


def _half_arith_ref(a):
    x, y = a[0], a[1]
    xd, yd = x.astype(np.float64), y.astype(np.float64)
    cols = [x + y, x - y, x * y, (xd / yd).astype(np.float16), (xd * yd + xd).astype(np.float16),
            np.where(x < y, x, y), -x]
    return {2: np.stack(cols, 1).astype(np.float16).ravel()}


# __hdiv goes through an approximate reciprocal: one half ulp of tolerance
case(name="half_arith", file="fp16.cu", kernel="half_arith", grid=(8,), block=(128,),
     make_args=_half_arith_args, reference=_half_arith_ref, rtol=2e-3, atol=1e-3, features=("fp16",))


def _half2_args(rng):
    n = 800
    return [_f32(rng, 2 * n, -8, 8).astype(np.float16), _f32(rng, 2 * n, -8, 8).astype(np.float16),
            np.zeros(6 * n, np.float16), np.zeros(n, np.float16), np.int32(n)]


def _half2_ref(a):
    x = a[0].reshape(-1, 2)
    y = a[1].reshape(-1, 2)
    s = x + y
    p = x * y
    sw = np.stack([x[:, 1], y[:, 0]], 1)
    out = np.stack([s, p, sw], 1).ravel()
    return {2: out.astype(np.float16), 3: (p[:, 0] + p[:, 1]).astype(np.float16)}


case(name="half2_ops", file="fp16.cu", kernel="half2_ops", grid=(7,), block=(128,),
     make_args=_half2_args, reference=_half2_ref, features=("fp16",))


def _half_accum_ref(a):
    rows, cols = int(a[3]), int(a[4])
    m = a[0].reshape(rows, cols).astype(np.float32)
    acc = np.zeros(rows, np.float32)
    for c in range(cols):
        acc = acc + m[:, c]
    return {1: acc.astype(np.float16), 2: acc}


case(name="half_mixed_accum", file="fp16.cu", kernel="half_mixed_accum", grid=(5,), block=(64,),
     make_args=lambda rng: [_f32(rng, 300 * 24, -10, 10).astype(np.float16), np.zeros(300, np.float16),
                            np.zeros(300, np.float32), np.int32(300), np.int32(24)],
     reference=_half_accum_ref, features=("fp16",))

# ========================================================================================
# printf.cu
case(name="printf_basic", file="printf.cu", kernel="printf_basic", grid=(4,), block=(128,),
     make_args=lambda rng: [_i32(rng, 500, -1000, 1000), np.zeros(500, np.int32), np.int32(500)],
     reference=lambda a: {1: a[0] * 2}, features=("printf",))

case(name="printf_formats", file="printf.cu", kernel="printf_formats", grid=(1,), block=(32,),
     make_args=lambda rng: [_f32(rng, 32), np.array([3.14159, 2.5e-7]), np.zeros(32, np.float32)],
     reference=lambda a: {2: a[0] + np.float32(1.0)}, features=("printf", "fp64"))

# ========================================================================================
# math.cu
def _math_args(dtype, n, width):
    return lambda rng: [rng.uniform(0.1, 10, n).astype(dtype), rng.uniform(-3, 3, n).astype(dtype),
                        np.zeros(width * n, dtype), np.int32(n)]


_erf = np.vectorize(math.erf, otypes=[np.float64])


def _math_f32_ref(a):
    x, y = a[0].astype(np.float64), a[1].astype(np.float64)
    cols = [np.sin(y), np.cos(y), np.exp(y), np.log(x), np.sqrt(x), np.power(x, y), _erf(y), np.tanh(y),
            np.arctan2(y, x), 1.0 / np.sqrt(x)]
    return {2: np.stack(cols, 1).ravel().astype(np.float32)}


case(name="math_f32", file="math.cu", kernel="math_f32", grid=(16,), block=(128,),
     make_args=_math_args(np.float32, 2000, 10), reference=_math_f32_ref, rtol=1e-5, atol=1e-6,
     features=("math",))


def _math_f64_ref(a):
    x, y = a[0], a[1]
    cols = [np.sin(y), np.cos(y), np.exp(y), np.log(x), np.sqrt(x), np.power(x, y), np.arctan(y),
            np.log1p(x) + np.expm1(y * 0.1)]
    return {2: np.stack(cols, 1).ravel()}


case(name="math_f64", file="math.cu", kernel="math_f64", grid=(8,), block=(128,),
     make_args=_math_args(np.float64, 1000, 8), reference=_math_f64_ref, rtol=1e-12, atol=1e-14,
     features=("math", "fp64"))


def _intrin_ref(a):
    x, y = a[0].astype(np.float64), a[1].astype(np.float64)
    return {2: np.stack([np.sin(y), np.exp(y), np.log(x), y / x], 1).ravel().astype(np.float32)}


case(name="math_intrinsics_f32", file="math.cu", kernel="math_intrinsics_f32", grid=(8,), block=(128,),
     make_args=_math_args(np.float32, 1000, 4), reference=_intrin_ref, rtol=1e-5, atol=2e-6,
     features=("math",))


def _bs_args(rng):
    n = 4000
    return [np.zeros(n, np.float32), np.zeros(n, np.float32), _f32(rng, n, 5, 30), _f32(rng, n, 1, 100),
            _f32(rng, n, 0.25, 10), np.float32(0.02), np.float32(0.30), np.int32(n)]


def _bs_ref(a):
    S, X, T = (a[k].astype(np.float64) for k in (2, 3, 4))
    R, V = float(a[5]), float(a[6])

    def cnd(d):
        A1, A2, A3, A4, A5 = 0.31938153, -0.356563782, 1.781477937, -1.821255978, 1.330274429
        K = 1.0 / (1.0 + 0.2316419 * np.abs(d))
        c = 0.39894228040143267794 * np.exp(-0.5 * d * d) * (K * (A1 + K * (A2 + K * (A3 + K * (A4 + K * A5)))))
        return np.where(d > 0, 1.0 - c, c)

    sq = np.sqrt(T)
    d1 = (np.log(S / X) + (R + 0.5 * V * V) * T) / (V * sq)
    d2 = d1 - V * sq
    e = np.exp(-R * T)
    c1, c2 = cnd(d1), cnd(d2)
    return {0: (S * c1 - X * e * c2).astype(np.float32), 1: (X * e * (1.0 - c2) - S * (1.0 - c1)).astype(np.float32)}


case(name="black_scholes", file="math.cu", kernel="black_scholes", grid=(16,), block=(128,),
     make_args=_bs_args, reference=_bs_ref, rtol=1e-4, atol=2e-4, features=("math",))

# ========================================================================================
# apps.cu
def _bitonic_ref(j, k):
    def ref(a):
        x = a[0].copy()
        i = np.arange(len(x))
        p = i ^ j
        sel = p > i
        i, p = i[sel], p[sel]
        lo = np.minimum(x[i], x[p])
        hi = np.maximum(x[i], x[p])
        asc = (i & k) == 0
        y = x.copy()
        y[i] = np.where(asc, lo, hi)
        y[p] = np.where(asc, hi, lo)
        return {0: y}
    return ref


for _j, _k in [(8, 16), (1, 1024), (64, 256)]:
    case(name=f"bitonic_step_k{_k}_j{_j}", file="apps.cu", kernel="bitonic_step", grid=(4,), block=(256,),
         make_args=lambda rng, _j=_j, _k=_k: [_i32(rng, 1024, -5000, 5000), np.int32(_j), np.int32(_k)],
         reference=_bitonic_ref(_j, _k))

MANDEL = dict(w=96, h=64, x0=-2.0, y0=-1.0, dx=3.0 / 96, dy=2.0 / 64, max_iter=200)


def _mandel_args(rng):
    m = MANDEL
    return [np.zeros(m["w"] * m["h"], np.int32), np.int32(m["w"]), np.int32(m["h"]), np.float32(m["x0"]),
            np.float32(m["y0"]), np.float32(m["dx"]), np.float32(m["dy"]), np.int32(m["max_iter"])]


def _mandel_ref(a):
    w, h = int(a[1]), int(a[2])
    x0, y0, dx, dy, max_iter = a[3], a[4], a[5], a[6], int(a[7])
    py, px = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    cx = x0 + (px.astype(np.float32) * dx).astype(np.float32)
    cy = y0 + (py.astype(np.float32) * dy).astype(np.float32)
    x = np.zeros_like(cx)
    y = np.zeros_like(cy)
    it = np.zeros(cx.shape, np.int32)
    two, four = np.float32(2.0), np.float32(4.0)
    for _ in range(max_iter):
        act = (x * x + y * y) <= four
        if not act.any():
            break
        xt = x * x - y * y + cx
        yn = two * x * y + cy
        x = np.where(act, xt, x)
        y = np.where(act, yn, y)
        it += act
    return {0: it.ravel()}


case(name="mandelbrot", file="apps.cu", kernel="mandelbrot", grid=(6, 8), block=(16, 8),
     make_args=_mandel_args, reference=_mandel_ref, options=("-fmad=false",), features=("2d",))


def _heat_ref(a):
    w, h = int(a[2]), int(a[3])
    g = a[0].reshape(h, w)
    out = g.copy()
    out[1:-1, 1:-1] = np.float32(0.25) * (((g[1:-1, :-2] + g[1:-1, 2:]) + g[:-2, 1:-1]) + g[2:, 1:-1])
    return {1: out.ravel()}


case(name="heat_step", file="apps.cu", kernel="heat_step", grid=(5, 3), block=(16, 16),
     make_args=lambda rng: [_f32(rng, 70 * 45, 0, 100), np.zeros(70 * 45, np.float32), np.int32(70), np.int32(45)],
     reference=_heat_ref, features=("2d",))


def _blur_ref(a):
    w, h = int(a[2]), int(a[3])
    g = np.pad(a[0].reshape(h, w).astype(np.int32), 1, mode="edge")
    s = sum(g[1 + dy:1 + dy + h, 1 + dx:1 + dx + w] for dy in (-1, 0, 1) for dx in (-1, 0, 1))
    return {1: ((s + 4) // 9).astype(np.uint8).ravel()}


case(name="box_blur_u8", file="apps.cu", kernel="box_blur_u8", grid=(5, 7), block=(16, 8),
     make_args=lambda rng: [rng.integers(0, 256, 77 * 50).astype(np.uint8), np.zeros(77 * 50, np.uint8),
                            np.int32(77), np.int32(50)],
     reference=_blur_ref, features=("2d",))


def _compact_ref(a, B=128):
    n = int(a[3])
    out = a[1].copy()
    counts = []
    for b in range(_cdiv(n, B)):
        seg = a[0][b * B:min(n, b * B + B)]
        keep = seg[seg > 0]
        out[b * B:b * B + len(keep)] = keep
        counts.append(len(keep))
    return {1: out, 2: np.array(counts, np.int32)}


case(name="compact_block", file="apps.cu", kernel="compact_block", grid=(8,), block=(128,),
     make_args=lambda rng: [_i32(rng, 1000, -100, 100), np.full(1024, -1, np.int32), np.zeros(8, np.int32),
                            np.int32(1000)],
     reference=_compact_ref, features=("shared", "barrier"))


def by_name(name: str) -> Case:
    for c in CASES:
        if c.name == name:
            return c
    raise KeyError(name)


def with_feature(feature: str) -> list:
    return [c for c in CASES if feature in c.features]


def fresh_args(case: Case, seed: int = 0) -> list:
    return case.make_args(np.random.default_rng(seed))


def copy_args(args: list) -> list:
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]
