"""``dptx.RawModule`` and ``dptx.RawKernel``: CUDA C or PTX in, kernels with their parameters
and static facts out, following CuPy's names."""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Optional

from ..demangle import demangle, readable, short_name, source_parameters
from ..device.launch_config import MAX_SHARED_BYTES
from ..errors import DptxError, KernelNotFoundError, VariableNotFoundError
from ..ptx import ir, parse
from ..ptx.analysis import KernelFacts, kernel_facts, used_variables
from ..ptx.digest import ptx_digest
from .module_variables import ModuleVariables, variable_array
from .nvrtc import compile_module


@dataclass(frozen=True)
class KernelParam:
    """One kernel parameter as the PTX declares it, with its place in the parameter buffer."""
    index: int
    name: str
    type: str          # PTX type without the dot: "u64", "f32", "b8" (structs: b8 array)
    size: int          # bytes
    offset: int        # byte offset in the parameter buffer
    align: int
    is_pointer: bool   # .ptr, or a 64-bit integer parameter (how compilers pass pointers)


class RawModule:
    """A module of kernels.

    ``RawModule(code)`` compiles CUDA C with NVRTC (no GPU, no nvcc), ``RawModule(ptx=text)``
    takes PTX, ``RawModule(path=file)`` reads a ``.cu`` or ``.ptx`` file.
    """

    def __init__(self, code: Optional[str] = None, *, ptx: Optional[str] = None,
                 path: Optional[str] = None, options=(), arch: str = "compute_80",
                 name: Optional[str] = None, name_expressions=()):
        given = [x is not None for x in (code, ptx, path)]
        if sum(given) != 1:
            raise DptxError("RawModule needs exactly one of code= (CUDA C), ptx= (PTX text) "
                            "or path= (a .cu or .ptx file)")
        code, ptx = _text(code, "code"), _text(ptx, "ptx")
        self.options = tuple(options)
        self.arch = arch
        self.code = code
        if path is not None:
            try:
                path = os.fspath(path)
                with open(path, encoding="utf-8") as fh:
                    text = fh.read()
            except TypeError:
                raise DptxError(f"RawModule(path=...) takes a file name, got "
                                f"{type(path).__name__}") from None
            except (OSError, UnicodeDecodeError) as exc:
                raise DptxError(f"RawModule(path={path!r}): cannot read the file: "
                                f"{exc.strerror if isinstance(exc, OSError) else exc}") from None
            if path.endswith(".ptx"):
                ptx = text
            else:
                code = self.code = text
        # C++ names: each name expression ("put<float>") -> its mangled name (NVRTC's name
        # lowering); get_function and get_global take either
        self.name_expressions: dict = {}
        if code is not None:
            ptx, self.name_expressions = compile_module(
                code, self.options, arch,
                name=os.path.basename(path) if path else (name or "module.cu"),
                name_expressions=tuple(name_expressions))
        elif name_expressions:
            raise DptxError("name_expressions need CUDA C source (code= or a .cu path): "
                            "PTX has only mangled names")
        self.ptx: str = ptx
        self.module: ir.Module = parse(ptx)
        self._kernels: dict = {}
        self.variables = ModuleVariables(self)   # __device__/__constant__ state

    @property
    def kernel_names(self) -> list:
        return [f.name for f in self.module.kernels]

    def _resolve(self, name: str) -> str:
        """The PTX name of the kernel ``name`` asks for: a name expression, the PTX (mangled)
        name itself, or a C++ name as written (``put<float>``, ``ns::step<4>``,
        ``J_kernel``) that exactly one kernel of the module demangles to."""
        if name in self.name_expressions:
            return self.name_expressions[name]
        if name in self.kernel_names:
            return name
        matches = [k for k in self.kernel_names if short_name(k) == name]
        if len(matches) != 1:       # an overload by its signature: "twice(float*)"
            matches = [k for k in self.kernel_names if _signature(k) == name.replace(" ", "")] \
                or matches
        if len(matches) == 1:
            return matches[0]
        listed = ", ".join(short_name(k) for k in self.kernel_names) or "none"
        if len(matches) > 1:
            raise KernelNotFoundError(
                f"{name!r} names {len(matches)} overloads in this module; ask for one by its "
                f"signature: {', '.join(repr(_signature(k)) for k in matches)}")
        hint = ""
        if "<" in name and self.code is not None:
            hint = (f" (a template kernel is instantiated by name_expressions: "
                    f"RawModule(code, name_expressions=({name!r},)))")
        raise KernelNotFoundError(
            f"no kernel named {name!r} in this module; kernels: {listed}{hint}")

    def get_function(self, name: str) -> "RawKernel":
        if name not in self._kernels:
            self._kernels[name] = RawKernel._from_module(self, self._resolve(name))
        return self._kernels[name]

    @property
    def global_names(self) -> list:
        """Module ``.global`` and ``.const`` variables (``__device__``/``__constant__``)."""
        return [v.name for v in self.module.global_variables
                if v.space in ("global", "const") and v.size and "extern" not in v.linkage]

    def global_buffers(self) -> dict:
        """Device buffers of the module variables on the cluster (moving them there from
        this process if they live here), kept across launches (the module's device state)."""
        return self.variables.cluster()

    def get_global(self, name: str, dtype=None):
        """A ``dptx.ndarray`` over a ``__device__`` or ``__constant__`` variable: read it with
        ``get()``, write it with ``set()`` (as cudaMemcpyToSymbol); launches see the writes,
        in this process (``dptx.cpu.launch``) and on the cluster alike. Its element type and
        shape come from the declaration in the CUDA source (else from the PTX); ``dtype``
        views the bytes as another type."""
        name = self.name_expressions.get(name, name)
        if name not in self.global_names:
            matches = [g for g in self.global_names if short_name(g) == name]
            if len(matches) == 1:
                return variable_array(self.variables, matches[0], dtype)
            listed = ", ".join(short_name(g) for g in self.global_names) or "none"
            raise VariableNotFoundError(f"no module variable named {name!r}; variables: "
                                        f"{listed}")
        return variable_array(self.variables, name, dtype)

    def __repr__(self):
        return f"<dptx.RawModule kernels={self.kernel_names}>"


def _text(value, what: str):
    """Source text given as str (or UTF-8 bytes), or None."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray)):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DptxError(f"RawModule({what}=...): the bytes are not UTF-8 text ({exc})") \
                from None
    raise DptxError(f"RawModule({what}=...) takes the source text as a str, got "
                    f"{type(value).__name__}")


class RawKernel:
    """A kernel. ``RawKernel(code, name, options=())`` compiles CUDA C as in CuPy;
    ``RawModule.get_function`` returns one for a kernel of a module."""

    def __init__(self, code: str, name: str, options=(), *, arch: str = "compute_80"):
        raw = RawModule(code, options=options, arch=arch)
        self._init(raw, name)

    @classmethod
    def _from_module(cls, raw_module: RawModule, name: str) -> "RawKernel":
        self = cls.__new__(cls)
        self._init(raw_module, name)
        return self

    def _init(self, raw_module: RawModule, name: str):
        if name not in raw_module.kernel_names:
            raw_module.get_function(name)  # raises the error that lists the kernels
        self.raw_module = raw_module
        self.name = name
        self.module: ir.Module = raw_module.module
        self.ptx: str = raw_module.ptx
        self.function: ir.Function = next(f for f in self.module.kernels if f.name == name)
        # What the scheduler learns a kernel's speeds and cost along the grid by: its name
        # with its module's digest, since two modules may each have a kernel of one name
        # (``kernel``, ElementwiseKernel's default) that are different code.
        self.model_key: str = f"{name}@{ptx_digest(self.ptx)[:12]}"
        self.params = [
            KernelParam(i, p.name, p.type, p.size, off, p.alignment,
                        p.ptr or (p.type in ("u64", "b64", "s64") and not p.dims
                                  and self.module.address_size == 64 and _looks_like_pointer(p)))
            for i, (p, off) in enumerate(self.function.param_layout())
        ]
        self.facts: KernelFacts = kernel_facts(self.module, self.function)
        # the parameters' names in the CUDA source (errors say J_cuda, not ..._param_4)
        code = raw_module.code
        self.source_parameters = source_parameters(code, name, len(self.params)) \
            if code else None

    # Static facts, as attributes for convenience.
    def __getattr__(self, item):
        facts = self.__dict__.get("facts")
        if facts is not None and hasattr(facts, item):
            return getattr(facts, item)
        raise AttributeError(item)

    @property
    def param_size(self) -> int:
        return self.function.param_size

    @property
    def used_variables(self) -> set:
        """Names of the module variables a launch of this kernel can touch (a launch takes
        only those: modules built with CUDA's headers declare dozens it never uses)."""
        used = self.__dict__.get("_used_variables")
        if used is None:
            used = self.__dict__["_used_variables"] = used_variables(self.module, self.function)
        return used

    # -- CuPy's kernel attributes (dptx.runtime.kernel_attributes) ----------------------------------------
    @property
    def _attrs(self):
        attrs = self.__dict__.get("_attributes")
        if attrs is None:
            # lazy: the attributes need ptxas and the GPU toolchain, loaded when asked for
            from .kernel_attributes import KernelAttributes
            attrs = self.__dict__["_attributes"] = KernelAttributes(self)
        return attrs

    @property
    def attributes(self) -> dict:
        """CuPy's ``RawKernel.attributes``: max_threads_per_block, shared_size_bytes,
        const_size_bytes, local_size_bytes, num_regs, ptx_version, binary_version,
        cache_mode_ca, max_dynamic_shared_size_bytes, preferred_shared_memory_carveout."""
        return self._attrs.as_dict()

    max_threads_per_block = property(lambda self: self._attrs.max_threads_per_block)
    shared_size_bytes = property(lambda self: self._attrs.shared_size_bytes)
    const_size_bytes = property(lambda self: self._attrs.const_size_bytes)
    local_size_bytes = property(lambda self: self._attrs.local_size_bytes)
    num_regs = property(lambda self: self._attrs.num_regs)
    ptx_version = property(lambda self: self._attrs.ptx_version)
    binary_version = property(lambda self: self._attrs.binary_version)
    cache_mode_ca = property(lambda self: self._attrs.cache_mode_ca)

    @property
    def max_dynamic_shared_size_bytes(self) -> int:
        return self._attrs.max_dynamic_shared_size_bytes

    @max_dynamic_shared_size_bytes.setter
    def max_dynamic_shared_size_bytes(self, value: int) -> None:
        value = int(value)
        room = MAX_SHARED_BYTES - self.shared_size_bytes
        if not 0 <= value <= room:
            raise ValueError(f"kernel {self.name}: max_dynamic_shared_size_bytes must be in "
                             f"0..{room} (the {MAX_SHARED_BYTES} bytes of shared memory a "
                             f"block may have, less {self.shared_size_bytes} static)")
        self._attrs.max_dynamic_shared_size_bytes = value

    @property
    def preferred_shared_memory_carveout(self) -> int:
        return self._attrs.preferred_shared_memory_carveout

    @preferred_shared_memory_carveout.setter
    def preferred_shared_memory_carveout(self, value: int) -> None:
        value = int(value)
        if not -1 <= value <= 100:
            raise ValueError(f"kernel {self.name}: preferred_shared_memory_carveout is a "
                             f"percentage (0..100) or -1 (no preference), got {value}")
        self._attrs.preferred_shared_memory_carveout = value

    def module_variables(self) -> dict:
        """The module's variables in this process (``dptx.cpu.launch`` runs on these), brought
        back from the cluster first if a launch there has them."""
        return self.raw_module.variables.host()

    def __call__(self, grid, block, args, shared_mem: int = 0, stream=None,
                 enable_cooperative_groups: bool = False):
        """Launch on the cluster, asynchronously, on ``stream`` (default: the current
        stream); returns a ``dptx.LaunchHandle``. ``enable_cooperative_groups`` (as CuPy's):
        a cooperative launch, every block resident at once so that cooperative groups'
        ``this_grid().sync()`` works; it runs as one chunk on one CPU worker."""
        # lazy: the first launch loads the cluster's graphs and planner (distributed)
        from .kernel_launch import launch
        return launch(self, grid, block, args, shared_mem=shared_mem, stream=stream,
                      cooperative=enable_cooperative_groups)

    @property
    def title(self) -> str:
        """The kernel's name as the CUDA source writes it (``put<float>``; ``name`` is the
        PTX, mangled, name)."""
        return short_name(self.name)

    def __repr__(self):
        names = self.source_parameters or [p.name for p in self.params]
        params = ", ".join(f"{p.type}{'*' if p.is_pointer else ''} {n}"
                           for p, n in zip(self.params, names))
        return readable(f"<dptx.RawKernel {self.name}({params})>")


def _signature(name: str) -> str:
    """``twice(float*)`` for ``_Z5twicePf``: the demangled name and parameter types without
    the return type or spaces, to tell overloads apart."""
    full = demangle(name)
    cut = full.find(short_name(name))
    return full[cut:].replace(" ", "") if cut >= 0 else full.replace(" ", "")


def _looks_like_pointer(p: ir.Param) -> bool:
    # nvcc/NVRTC pass pointers as .u64 parameters without .ptr; a 64-bit integer argument is
    # indistinguishable, so callers may pass either an array or an integer there.
    return p.type == "u64"
