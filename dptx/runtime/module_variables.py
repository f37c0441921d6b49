"""A module's ``__device__``/``__constant__`` variables: one current copy, in this process or on
the cluster.

They live in this process (the CPU executor's buffers for the module) until a kernel of the
module is launched on the cluster; then they move there (uploaded as they are), and stay until
``dptx.cpu.launch`` runs one of its kernels in this process again, which brings them back
(downloaded, after the launches before it). So ``get_global(name).set(v)`` is seen by the next
launch wherever it runs, ``get()`` reads what the last one wrote, and a program that only uses
``dptx.cpu`` never starts a cluster.

Types: NVRTC declares most variables as ``.b8`` arrays, so the element type and shape of
``get_global`` come from the declaration in the CUDA source when there is one
(``__constant__ float c[4]`` -> float32 (4,)), else from the PTX type; ``dtype=`` overrides.
"""
from __future__ import annotations

import re
import threading

import numpy as np

from ..demangle import short_name
from ..errors import DptxError
from . import cluster as runtime
from .buffers import DeviceBuffer
from .ndarray import _dtype, _shape, ndarray

# C scalar types as CUDA sources spell them -> numpy
C_TYPES = {
    "float": np.float32, "double": np.float64, "__half": np.float16, "half": np.float16,
    "char": np.int8, "signed char": np.int8, "unsigned char": np.uint8, "bool": np.bool_,
    "short": np.int16, "unsigned short": np.uint16, "int": np.int32, "unsigned": np.uint32,
    "unsigned int": np.uint32, "long": np.int64, "unsigned long": np.uint64,
    "long long": np.int64, "unsigned long long": np.uint64, "size_t": np.uint64,
    "int8_t": np.int8, "uint8_t": np.uint8, "int16_t": np.int16, "uint16_t": np.uint16,
    "int32_t": np.int32, "uint32_t": np.uint32, "int64_t": np.int64, "uint64_t": np.uint64,
}
PTX_TYPES = {
    "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
    "s8": np.int8, "s16": np.int16, "s32": np.int32, "s64": np.int64,
    "b8": np.uint8, "b16": np.uint16, "b32": np.uint32, "b64": np.uint64,
    "f16": np.float16, "f32": np.float32, "f64": np.float64,
}
_DECLARATION = re.compile(
    r"__(?:device|constant)__\s+(?:__(?:device|constant)__\s+)?(?:static\s+)?(?:const\s+)?"
    r"(?P<type>(?:unsigned\s+|signed\s+)?(?:long\s+long|long|short|char|int)(?:\s+int)?|"
    r"unsigned|float|double|bool|__half|half|size_t|u?int(?:8|16|32|64)_t)\s+"
    r"(?P<name>[A-Za-z_]\w*)\s*(?P<dims>(?:\[[^\]]*\]\s*)*)\s*(?:=|;)")


def declared_types(code: str) -> dict:
    """name -> (numpy dtype, dims as ints or None where not a plain number) of the variables a
    CUDA source declares with a C scalar element type."""
    out = {}
    if not code:
        return out
    for m in _DECLARATION.finditer(code):
        kind = " ".join(m.group("type").split())
        dtype = C_TYPES.get(kind) or C_TYPES.get(kind.replace(" int", ""))
        if dtype is None:
            continue
        dims = []
        for d in re.findall(r"\[([^\]]*)\]", m.group("dims")):
            d = d.strip()
            dims.append(int(d, 0) if re.fullmatch(r"(0x)?[0-9a-fA-F]+", d) else None)
        out[m.group("name")] = (np.dtype(dtype), tuple(dims))
    return out


class ModuleVariables:
    """The variables of one ``RawModule``: ``host()`` and ``cluster()`` give the current copy
    where it is needed, moving it first if it lives on the other side."""

    def __init__(self, raw_module):
        self.raw = raw_module
        self.home = "host"
        self._buffers = None        # name -> DeviceBuffer, once on the cluster
        self._lock = threading.RLock()

    def host(self) -> dict:
        """name -> uint8 array in this process (the CPU executor's buffers of the module)."""
        # lazy: the CPU executor (LLVM) loads only where a kernel runs in this process
        from ..cpu import module_state
        with self._lock:
            state = module_state(self.raw.module)
            if self.home == "cluster":
                for name, buf in self._buffers.items():
                    state[name][:] = buf.read()          # waits for the launches before
                self.home = "host"
            return state

    def cluster(self) -> dict:
        """name -> DeviceBuffer on the cluster."""
        # lazy: the CPU executor (LLVM) loads only where a kernel runs in this process
        from ..cpu import module_state
        with self._lock:
            if self.home == "host":
                runtime.before_disconnect(self)
                state = module_state(self.raw.module)
                if self._buffers is None:
                    self._buffers = {n: DeviceBuffer.from_host(state[n]) for n in self.raw.global_names}
                else:
                    for n, buf in self._buffers.items():
                        buf.upload(state[n])
                self.home = "cluster"
            return self._buffers

    def before_disconnect(self) -> None:
        """dptx leaves its cluster: the variables come back to this process."""
        with self._lock:
            if self.home == "cluster":
                self.host()
            self._buffers = None

    def element(self, name: str, dtype=None) -> tuple:
        """(dtype, shape) of ``get_global(name)``: ``dtype`` if given, else the declaration's."""
        v = next(v for v in self.raw.module.global_variables if v.name == name)
        # the source declares it by its C++ name (ns::table is table in namespace ns)
        declared = declared_types(self.raw.code or "").get(short_name(name).split("::")[-1])
        if dtype is None and declared is not None:
            dtype, dims = declared
            if dims and all(d is not None for d in dims) and \
                    int(np.prod(dims)) * dtype.itemsize == v.size:
                return dtype, dims
        if dtype is None:
            dtype = np.dtype(PTX_TYPES.get(v.type, np.uint8))
            if v.vector:
                dtype = np.dtype((dtype, (v.vector,)))
        dtype = np.dtype(dtype)
        if v.size % dtype.itemsize:
            raise DptxError(f"module variable {name} has {v.size} bytes, not a whole number "
                            f"of {dtype} elements")
        count = v.size // dtype.itemsize
        scalar = not v.dims and count == 1 and not (declared and declared[1])
        return dtype, (() if scalar else (count,))


class VariableArray:
    """What ``RawModule.get_global`` returns: a ``dptx.ndarray`` over one module variable
    whose reads and writes go to wherever the module's variables live (see the module
    docstring). Made by ``variable_array`` (it subclasses ``dptx.ndarray``)."""


def variable_array(variables: ModuleVariables, name: str, dtype=None):

    class _VariableArray(ndarray, VariableArray):
        __doc__ = VariableArray.__doc__

        def __init__(self):
            dt, shape = variables.element(name, dtype)
            self._shape, self._dtype = _shape(shape), _dtype(dt)
            self._offset, self._base = 0, None

        @property
        def _buffer(self):
            # used by launches on the cluster and by the cluster-side operations
            return variables.cluster()[name]

        nbytes = property(lambda self: self.size * self.itemsize)

        def _host(self):
            return variables.host()[name]

        def get(self, stream=None) -> np.ndarray:
            with variables._lock:
                if variables.home == "host":
                    return self._host().view(self._dtype).reshape(self._shape).copy()
                return ndarray.get(self, stream)

        def set(self, arr, stream=None) -> None:
            arr = np.asarray(arr)
            if arr.shape != self._shape or arr.dtype != self._dtype:
                raise DptxError(f"set() needs an array of shape {self._shape} and dtype "
                                f"{self._dtype}, got shape {arr.shape} and dtype {arr.dtype}")
            with variables._lock:
                if variables.home == "host":
                    self._host()[:] = np.ascontiguousarray(arr).reshape(-1).view(np.uint8)
                else:
                    ndarray.set(self, arr, stream)

        def fill(self, value, stream=None) -> None:
            self.set(np.full(self._shape, value, self._dtype))

        def __repr__(self):
            return f"<dptx module variable {name}: {self._dtype} {self._shape}>"

    return _VariableArray()
