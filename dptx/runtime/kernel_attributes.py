"""A kernel's attributes as CuPy's ``RawKernel.attributes`` has them (the CUDA driver's
``cuFuncGetAttribute``), for the device the kernel's module targets.

What the PTX says exactly comes from the PTX: ``shared_size_bytes`` (static ``.shared``),
``const_size_bytes`` (the ``__constant__`` variables it uses), ``ptx_version`` and
``binary_version`` (``.version``, ``.target``), the ``.maxntid``/``.reqntid`` limit. What only
the assembler decides (registers per thread, the local stack frame with its spills) comes from
NVIDIA's ``ptxas`` (the ``nvidia-cuda-nvcc`` wheels) run once per kernel with ``-v``; a GPU
worker's driver makes the same choices. ``max_threads_per_block`` is what a launch on such a
GPU may use: 1024, less under ``.maxntid``, and less when the registers of 1024 threads do
not fit a block's 64K registers (as the CUDA occupancy calculator counts them)."""
from __future__ import annotations

import re
import subprocess
import tempfile

from ..errors import DptxError
from ..gpu import toolchain
from ..gpu.loadable import max_ptx_version
from ..ptx.analysis import reachable_functions, referenced_names

REGISTERS_PER_BLOCK = 65536        # every architecture from sm_50 to sm_120
REGISTER_GRANULE = 256             # registers are allocated per warp in units of 256
DEFAULT_DYNAMIC_SHARED = 48 * 1024 # what a kernel may use without the opt-in
MAX_THREADS = 1024


class KernelAttributes:
    """The attributes of one kernel; ``as_dict()`` is CuPy's ``RawKernel.attributes``."""

    def __init__(self, kernel):
        self._kernel = kernel
        self._assembled = None
        self.max_dynamic_shared_size_bytes = DEFAULT_DYNAMIC_SHARED - self.shared_size_bytes
        self.preferred_shared_memory_carveout = -1

    # -- from the PTX ----------------------------------------------------------------------------
    @property
    def shared_size_bytes(self) -> int:
        return int(self._kernel.facts.static_shared_bytes)

    @property
    def const_size_bytes(self) -> int:
        """The ``__constant__`` variables the kernel (or a function it calls) uses."""
        module = self._kernel.module
        used = set()
        for f in reachable_functions(module, self._kernel.function):
            if f.body is not None:
                used |= referenced_names(f)
        return sum(v.size or 0 for v in module.global_variables
                   if v.space == "const" and v.name in used)

    @property
    def ptx_version(self) -> int:
        major, minor = (int(x) for x in self._kernel.module.version.split("."))
        return major * 10 + minor

    @property
    def binary_version(self) -> int:
        return _sm_number(self._target())

    @property
    def cache_mode_ca(self) -> bool:
        return False        # set by "-Xptxas -dlcm=ca", which NVRTC does not take

    # -- from ptxas ------------------------------------------------------------------------------
    @property
    def num_regs(self) -> int:
        return self._ptxas()["registers"]

    @property
    def local_size_bytes(self) -> int:
        return self._ptxas()["stack"]

    @property
    def max_threads_per_block(self) -> int:
        limit = MAX_THREADS
        facts = self._kernel.facts
        for declared in (facts.maxntid, facts.reqntid):
            if declared:
                n = 1
                for d in declared:
                    n *= int(d)
                limit = min(limit, n)
        per_warp = -(-self.num_regs * 32 // REGISTER_GRANULE) * REGISTER_GRANULE
        if per_warp:
            limit = min(limit, REGISTERS_PER_BLOCK // per_warp * 32)
        return limit

    def as_dict(self) -> dict:
        return {name: getattr(self, name) for name in (
            "max_threads_per_block", "shared_size_bytes", "const_size_bytes",
            "local_size_bytes", "num_regs", "ptx_version", "binary_version", "cache_mode_ca",
            "max_dynamic_shared_size_bytes", "preferred_shared_memory_carveout")}

    # -- helpers ---------------------------------------------------------------------------------
    def _target(self) -> str:
        target = next((t for t in self._kernel.module.target if t.startswith("sm_")), None)
        if target is None:
            raise DptxError(f"kernel {self._kernel.name}: the module's .target names no sm_ "
                            f"architecture ({', '.join(self._kernel.module.target)})")
        return target

    def _ptxas(self) -> dict:
        if self._assembled is None:
            self._assembled = assemble(self._kernel, self._target())
        return self._assembled


def _sm_number(target: str) -> int:
    return int(re.sub(r"\D", "", target))


def assemble(kernel, arch: str) -> dict:
    """{"registers", "stack"} of ``kernel`` as ptxas allocates them for ``arch``."""
    found = toolchain.newest_ptxas(arch)
    if found is None:
        raise DptxError(
            f"kernel {kernel.name}: num_regs, local_size_bytes and max_threads_per_block are "
            f"what NVIDIA's ptxas allocates for {arch}, and no installed ptxas knows {arch} "
            f"(pip install nvidia-cuda-nvcc, or install dptx[gpu])")
    text = kernel.ptx
    limit = max_ptx_version(found.version[0] * 1000 + found.version[1] * 10)
    version = tuple(int(x) for x in kernel.module.version.split("."))
    if version > limit:     # most modules use nothing that new; ptxas says when one does
        text = re.sub(r"^\s*\.version\s+\S+", f".version {limit[0]}.{limit[1]}", text,
                      count=1, flags=re.M)
    with tempfile.TemporaryDirectory() as tmp:
        with open(f"{tmp}/kernel.ptx", "w") as fh:
            fh.write(text)
        done = subprocess.run([found.path, f"-arch={arch}", "-v", f"{tmp}/kernel.ptx", "-o",
                               f"{tmp}/kernel.cubin"], capture_output=True, text=True,
                              timeout=600)
    if done.returncode != 0:
        raise DptxError(f"kernel {kernel.name}: ptxas {found.version_text} rejects the module "
                        f"for {arch}:\n{done.stderr.strip()}")
    return _entry_resources(done.stderr, kernel.name)


def _entry_resources(log: str, name: str) -> dict:
    """Registers and stack frame of entry ``name`` from ``ptxas -v``'s log."""
    parts = re.split(r"ptxas info\s*: Compiling entry function '([^']+)'", log)
    for entry, body in zip(parts[1::2], parts[2::2]):
        if entry == name:
            registers = re.search(r"Used (\d+) registers", body)
            stack = re.search(r"(\d+) bytes stack frame", body)
            return {"registers": int(registers.group(1)) if registers else 0,
                    "stack": int(stack.group(1)) if stack else 0}
    raise DptxError(f"kernel {name}: ptxas -v reported no entry of that name")
