"""The stand-in driver's module loading (its PTX JIT is NVIDIA's ``ptxas``) and kernel launches
(dptx's CPU executor on the registry's memory). Tests only."""
from __future__ import annotations

import ctypes
import re
import subprocess
import tempfile

import numpy as np

from graphs.tasks import KernelImage

from ._machine import (_SCALARS, DEFAULT_SHARED, CudaStatus, LoadedFunction, LoadedModule,
                       Process)

_ENTRY = re.compile(r"Compiling entry function '([^']+)'")
_USED = re.compile(r"Used (\d+) registers.*?(?:, (\d+) bytes smem)?$", re.M)


# -- loading ---------------------------------------------------------------------------------------
def _max_ptx_for_driver(driver_version: int) -> tuple:
    """The newest PTX ISA version a driver JIT-compiles (NVIDIA's table in cuda-bindings)."""
    from cuda.bindings import utils
    best = (0, 0)
    for major in range(1, 12):
        for minor in range(10):
            try:
                need = int(utils.get_minimal_required_cuda_ver_from_ptx_ver(f"{major}.{minor}"))
            except ValueError:
                continue
            if need <= driver_version:
                best = max(best, (major, minor))
    return best


def _ptxas_for_driver(driver_version: int):
    """The ptxas standing for the driver's JIT: the release of the driver's major version
    closest to its minor, else the newest installed."""
    from dptx.gpu import toolchain
    found = toolchain.installed()
    if not found:
        raise RuntimeError("the CuPy stand-in needs NVIDIA's ptxas (pip install nvidia-cuda-nvcc, "
                           "the test extra) to stand for the driver's PTX JIT")
    major, minor = driver_version // 1000, driver_version % 1000 // 10
    same = [p for p in found if p.version[0] == major]
    if same:
        return min(same, key=lambda p: (abs(p.version[1] - minor), -p.version[1]))
    return found[-1]


def _assemble(ptx: str, arch: str, driver_version: int) -> tuple:
    """(ptxas description, its -v log); raises CUDA_ERROR_INVALID_PTX with its message."""
    ptxas = _ptxas_for_driver(driver_version)
    what = f"ptxas {ptxas.version_text} -arch={arch}"
    with tempfile.TemporaryDirectory() as tmp:
        with open(f"{tmp}/module.ptx", "w") as fh:
            fh.write(ptx)
        done = subprocess.run([ptxas.path, f"-arch={arch}", "-v", f"{tmp}/module.ptx",
                               "-o", f"{tmp}/module.cubin"], capture_output=True, text=True,
                              timeout=600)
    if done.returncode != 0:
        raise CudaStatus(218, f"{what} rejects the module:\n{done.stderr.strip()}")
    return what, done.stdout + done.stderr


def _function_facts(log: str) -> dict:
    """name -> (static shared bytes, registers) from ``ptxas -v``."""
    facts, name = {}, None
    for line in log.splitlines():
        entry = _ENTRY.search(line)
        if entry:
            name = entry.group(1)
            continue
        used = _USED.search(line)
        if used and name is not None:
            facts[name] = (int(used.group(2) or 0), int(used.group(1)))
            name = None
    return facts


def _ptx_text(image: bytes) -> str:
    if image[:4] == b"\x7fELF" or image[:4] == b"\x50\xed\x55\xba":
        # A cubin or fatbin has no PTX left for the CPU executor to run.
        raise NotImplementedError("the CuPy stand-in loads PTX only; it cannot run a cubin or "
                                  "fatbin (the real driver would)")
    try:
        return image.rstrip(b"\0").decode()
    except UnicodeDecodeError:
        raise CudaStatus(200) from None


def load(process: Process, ctx, image: bytes) -> LoadedModule:
    """cuModuleLoadData of PTX: the driver refuses a ``.version`` newer than it knows
    (CUDA_ERROR_UNSUPPORTED_PTX_VERSION), its JIT (ptxas) what ptxas refuses
    (CUDA_ERROR_INVALID_PTX); module variables get device memory with their initial bytes."""
    from dptx.cpu import global_image
    from dptx.cpu.renderer.address_space import module_variables
    from dptx.errors import DptxError
    from dptx.ptx import parse

    ptx = _ptx_text(image)
    version = re.search(r"^\s*\.version\s+(\d+)\.(\d+)", ptx, re.M)
    if version is None:
        raise CudaStatus(218, "no .version directive")
    have = (int(version.group(1)), int(version.group(2)))
    limit = _max_ptx_for_driver(process.driver_version)
    if have > limit:
        raise CudaStatus(222, f"PTX ISA {have[0]}.{have[1]}; driver {process.driver_version} "
                              f"loads up to {limit[0]}.{limit[1]}")
    arch = process.devices[ctx.device].arch
    what, log = _assemble(ptx, arch, process.driver_version)
    try:
        module = parse(ptx)
    except DptxError as exc:  # ptxas took it: dptx's parser must too
        raise AssertionError(f"ptxas accepts PTX that dptx cannot parse: {exc}") from exc
    handle = next(process.handles)
    image0 = global_image(module)
    variables = {}
    for v in module_variables(module):
        ptr = process.malloc(v.size, f"module variable {v.name}", image0[v.name].copy())
        variables[v.name] = process.find(ctx, ptr)
    loaded = LoadedModule(handle, ptx, module, variables, {}, what)
    facts = _function_facts(log)
    for f in module.kernels:
        fh = next(process.handles)
        static, regs = facts.get(f.name, (0, 0))
        ctx.functions[fh] = LoadedFunction(fh, loaded, f.name, static, regs,
                                           max(0, DEFAULT_SHARED - static))
        loaded.functions[f.name] = fh
    return loaded


# -- launching ---------------------------------------------------------------------------------------
def _param_bytes(params: int, count: int, sizes: list) -> list:
    """What cuLaunchKernel reads: ``kernelParams`` is an array of ``count`` pointers, the i-th
    to the i-th parameter's value, of which the driver reads the parameter's size."""
    if count and not params:
        raise CudaStatus(1)
    table = (ctypes.c_void_p * count).from_address(params) if count else []
    return [ctypes.string_at(table[i], size) for i, size in enumerate(sizes)]


def _argument(process: Process, ctx, param, raw: bytes):
    """A parameter's bytes as dptx.cpu.launch takes them: a device pointer into this device's
    memory becomes its allocation with the pointer's offset (the kernel may reach the whole
    allocation, as on a GPU), anything else stays a value."""
    if param.type == "b8" and param.size > 1 or param.size > 8:
        # a struct (or array) passed by value: on a GPU, with one flat address space, the
        # device pointers among its 8-byte words need nothing; here each becomes its
        # allocation, as a pointer argument does
        from dptx.device.pointer import Pointer, StructValue
        pointers = []
        for at in range(0, len(raw) - 7, 8):
            ptr = int.from_bytes(raw[at:at + 8], "little")
            alloc = process.find(ctx, ptr) if ptr else None
            if alloc is not None:
                pointers.append((at, Pointer(alloc.data, ptr - alloc.ptr)
                                 if ptr != alloc.ptr else alloc.data))
        return StructValue(raw, tuple(pointers)) if pointers else raw
    value = np.frombuffer(raw, _SCALARS[param.type])[0]
    if param.size == 8:
        ptr = int.from_bytes(raw, "little")
        alloc = process.find(ctx, ptr) if ptr else None
        if alloc is not None:
            from dptx.device.pointer import Pointer
            return Pointer(alloc.data, ptr - alloc.ptr) if ptr != alloc.ptr else alloc.data
    return value


def _status_of(exc) -> int:
    """The CUDA error a GPU reports for what dptx's CPU executor raised."""
    from dptx.errors import DptxMemoryError
    text = str(exc)
    if isinstance(exc, DptxMemoryError):
        return 700
    if text.startswith("device assertion failed"):
        return 710
    if text.startswith("deadlock"):
        return 702                               # a GPU would hang until the watchdog
    return 719


def launch(process: Process, ctx, f: LoadedFunction, grid: tuple, block: tuple, shared: int,
           stream: int, params: int) -> None:
    """cuLaunchKernel: checks what the driver checks, then runs the blocks. A fault corrupts
    the context (reported from the next call, like an asynchronous kernel error)."""
    from dptx.cpu import launch as cpu_launch
    from dptx.errors import DptxError, LaunchError, PtxUnsupportedError

    module = f.module
    function = next(fn for fn in module.ir.kernels if fn.name == f.name)
    if f.kernel is None:
        f.kernel = KernelImage(module.ir, function, f.name, module.ptx)
    limits = (2**31 - 1, 65535, 65535, 1024, 1024, 64)
    if any(not 1 <= v <= top for v, top in zip(grid + block, limits)) \
            or block[0] * block[1] * block[2] > 1024:
        raise CudaStatus(1)     # CUDA_ERROR_INVALID_VALUE, as cuLaunchKernel
    if shared > f.max_dynamic_shared:
        # more dynamic shared memory than the function's attribute allows
        raise CudaStatus(1)
    layout = function.param_layout()
    raws = _param_bytes(params, len(layout), [p.size for p, _ in layout])
    args = [_argument(process, ctx, p, raw) for (p, _), raw in zip(layout, raws)]
    variables = {name: alloc.data for name, alloc in module.variables.items()}
    record = dict(device=ctx.device, kernel=f.name, grid=grid, block=block, shared_mem=shared,
                  stream=stream, fault=None)
    process.launches.append(record)
    try:
        if f.name in process.fault_kernels:
            raise CudaStatus(700, f"DPTX_STANDIN_FAULT_KERNELS names {f.name}")
        cpu_launch(f.kernel, grid, block, args, shared_mem=shared, globals=variables)
    except CudaStatus as exc:
        record["fault"] = exc.log
        process.poison(ctx, exc.status, exc.log)
    except PtxUnsupportedError:
        raise                                   # the stand-in's limit, not the kernel's fault
    except LaunchError as exc:
        record["fault"] = str(exc)
        raise CudaStatus(1, str(exc)) from exc
    except DptxError as exc:
        record["fault"] = str(exc)
        process.poison(ctx, _status_of(exc), str(exc))
