"""Checking a launch before it runs: grid and block shapes, and arguments against the kernel's
PTX parameters. Errors name the argument index and the PTX parameter."""
from __future__ import annotations

import numbers

import numpy as np

from ..errors import LaunchError

MAX_THREADS_PER_BLOCK = 1024
MAX_BLOCK = (1024, 1024, 64)
MAX_GRID = (2**31 - 1, 65535, 65535)
MAX_SHARED_BYTES = 227 * 1024  # the largest opt-in shared memory of current GPUs
# Blocks a cooperative launch may have: on the CPU each runs on its own thread, all at once,
# as a GPU keeps every block of a cooperative grid resident (cudaErrorCooperativeLaunchTooLarge)
MAX_COOPERATIVE_BLOCKS = 256

# PTX parameter type -> numpy scalar type for conversion of Python numbers.
SCALAR_TYPES = {
    "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
    "s8": np.int8, "s16": np.int16, "s32": np.int32, "s64": np.int64,
    "b8": np.uint8, "b16": np.uint16, "b32": np.uint32, "b64": np.uint64,
    "f16": np.float16, "f32": np.float32, "f64": np.float64, "pred": np.uint8,
}


def dims3(value, what: str) -> tuple:
    """An int or a 1-3 tuple of ints as an (x, y, z) triple of positive ints (floats,
    strings and other types are refused, as CUDA's dim3 of unsigned ints would be: int(1.7)
    silently running one block is a wrong result)."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        value = (int(value),)
    if isinstance(value, np.ndarray) and value.ndim == 1 and value.dtype.kind in "iu":
        value = tuple(value.tolist())
    if isinstance(value, (str, bytes)) or not isinstance(value, (tuple, list)) or \
            not all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in value):
        raise LaunchError(f"{what} must be an int or a tuple of 1 to 3 ints, got {value!r}")
    t = tuple(int(v) for v in value)
    if not 1 <= len(t) <= 3:
        raise LaunchError(f"{what} must have 1 to 3 dimensions, got {len(t)}: {value!r}")
    if any(v < 1 for v in t):
        raise LaunchError(f"{what} dimensions must be >= 1, got {value!r}")
    return t + (1,) * (3 - len(t))


def check_shape(grid, block, shared_mem: int = 0) -> tuple:
    g, b = dims3(grid, "grid"), dims3(block, "block")
    for axis, (v, limit) in enumerate(zip(b, MAX_BLOCK)):
        if v > limit:
            raise LaunchError(f"block dimension {'xyz'[axis]} = {v} exceeds {limit}")
    if b[0] * b[1] * b[2] > MAX_THREADS_PER_BLOCK:
        raise LaunchError(f"block {b} has {b[0] * b[1] * b[2]} threads; at most "
                          f"{MAX_THREADS_PER_BLOCK} are allowed")
    for axis, (v, limit) in enumerate(zip(g, MAX_GRID)):
        if v > limit:
            raise LaunchError(f"grid dimension {'xyz'[axis]} = {v} exceeds {limit}")
    if not isinstance(shared_mem, numbers.Integral) or isinstance(shared_mem, bool):
        raise LaunchError(f"shared_mem must be an int (bytes of dynamic shared memory), got "
                          f"{shared_mem!r}")
    if not 0 <= int(shared_mem) <= MAX_SHARED_BYTES:
        raise LaunchError(f"shared_mem = {shared_mem} bytes is outside 0..{MAX_SHARED_BYTES}")
    return g, b


def _declared(param) -> str:
    """A parameter's PTX type as declared: ``.f32``, ``.b8[16]`` (a struct by value)."""
    return f".{param.type}" + (f"[{param.size}]" if param.type == "b8" and param.size > 1 else "")


def convert_scalar(param, index: int, value, kernel_name: str):
    """A Python or numpy scalar as the numpy scalar (or bytes, for byte arrays such as structs
    passed by value) that the PTX parameter holds."""
    where = f"argument {index} ({param.name}: {_declared(param)}) of kernel {kernel_name}"
    if param.type == "b8" and param.size > 1 or param.size > 8:
        raw = value.tobytes() if isinstance(value, (np.ndarray, np.generic)) else value
        if not isinstance(raw, (bytes, bytearray, memoryview)):
            raise LaunchError(f"{where}: expected {param.size} bytes (a numpy structured "
                              f"scalar or bytes), got {type(value).__name__}")
        raw = bytes(raw)
        if len(raw) != param.size:
            raise LaunchError(f"{where}: expected {param.size} bytes, got {len(raw)}")
        return raw
    target = SCALAR_TYPES.get(param.type)
    if target is None:
        raise LaunchError(f"{where}: parameters of type .{param.type} are not supported")
    if isinstance(value, (bool, np.bool_)):
        value = int(value)
    if isinstance(value, np.generic):
        if np.dtype(type(value)).itemsize != np.dtype(target).itemsize:
            raise LaunchError(f"{where}: got a {np.dtype(type(value)).name} scalar "
                              f"({np.dtype(type(value)).itemsize} bytes) for a "
                              f"{np.dtype(target).itemsize}-byte parameter")
        if np.dtype(type(value)).kind != np.dtype(target).kind:
            # same width, other kind (int32 for .u32, float32 for .b32...): keep the bits
            return np.frombuffer(value.tobytes(), dtype=target)[0]
        return target(value)
    if isinstance(value, numbers.Integral):
        if np.dtype(target).kind == "f":
            return target(value)
        info = np.iinfo(target)
        v = int(value)
        if info.min <= v <= info.max:
            return target(v)
        if np.dtype(target).kind == "u" and -(info.max // 2) - 1 <= v < 0:
            return target(v & info.max)  # a negative value for an untyped/unsigned param
        raise LaunchError(f"{where}: {v} does not fit in .{param.type}")
    if isinstance(value, numbers.Real):
        if np.dtype(target).kind != "f":
            raise LaunchError(f"{where}: got float {value!r} for an integer parameter")
        return target(value)
    raise LaunchError(f"{where}: expected a scalar, got {type(value).__name__}")


# A dptx array (``dptx.runtime.ndarray.ndarray``, a layer above this one, not imported here) says it is
# an array on the cluster by this class attribute, set to True; it is looked up on the type,
# so that numpy's arrays (which lack it) and objects whose attribute access raises cost nothing.
CLUSTER_ARRAY_MARKER = "__dptx_cluster_array__"


def is_cluster_array(value) -> bool:
    """Whether ``value`` is a dptx array, whose bytes live on the cluster's workers."""
    return getattr(type(value), CLUSTER_ARRAY_MARKER, False) is True


def check_arg_count(kernel, args, on_cluster: bool = False) -> None:
    """``args`` is a tuple or list of one argument per parameter. ``on_cluster``: the launch
    runs on the cluster (``kernel(grid, block, args)``), where device arrays are dptx arrays;
    the in-process launches (``dptx.cpu.launch``, a GPU worker's ``dptx.gpu.launch``) run on
    numpy arrays, and refuse a dptx array here, before compiling or waiting for anything."""
    if not isinstance(args, (tuple, list)):
        raise LaunchError(f"kernel {kernel.name}: args must be a tuple or list, got "
                          f"{type(args).__name__}")
    if len(args) != len(kernel.params):
        listed = ", ".join(f".{p.type} {p.name}" for p in kernel.params)
        raise LaunchError(f"kernel {kernel.name} takes {len(kernel.params)} arguments "
                          f"({listed}), got {len(args)}")
    if on_cluster:
        return
    for i, (p, a) in enumerate(zip(kernel.params, args)):
        if is_cluster_array(a):
            raise LaunchError(
                f"argument {i} ({p.name}: {_declared(p)}) of kernel {kernel.name} is a dptx "
                f"cluster array (dptx.ndarray, its bytes on the cluster's workers), and the "
                f"in-process launch dptx.cpu.launch runs on numpy arrays: pass a numpy array "
                f"(h = a.get()) and copy the result back (a.set(h)), or launch on the "
                f"cluster: kernel(grid, block, args)")
