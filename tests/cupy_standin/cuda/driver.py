"""Stand-in for ``cupy.cuda.driver`` (``cupy_backends/cuda/api/driver.pyx``): module loading,
function attributes and launches with CuPy's names and signatures; errors raise
``CUDADriverError`` whose message is ``"<CUresult name>: <message>"``. Tests only."""
from __future__ import annotations

from .. import _state
from .._machine import ERRORS, CudaStatus, api

# CUfunction_attribute (the constants CuPy exports)
CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0
CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1
CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES = 2
CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3
CU_FUNC_ATTRIBUTE_NUM_REGS = 4
CU_FUNC_ATTRIBUTE_PTX_VERSION = 5
CU_FUNC_ATTRIBUTE_BINARY_VERSION = 6
CU_FUNC_ATTRIBUTE_CACHE_MODE_CA = 7
CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT = 9
CU_JIT_INPUT_PTX = 1
# CUresult: the only one CuPy exports
CUDA_ERROR_INVALID_VALUE = 1


class CUDADriverError(RuntimeError):

    def __init__(self, status, log=""):
        self.status = status
        self._log = log
        name, _, message = ERRORS.get(status, (f"CUDA_ERROR_{status}", None, "unknown error"))
        # (the stand-in adds what ptxas or the executor said; CuPy's message stops before)
        super().__init__(f"{name}: {message}" + (f"\n{log}" if log else ""))

    def __reduce__(self):
        return (type(self), (self.status, self._log))


_api = api(CUDADriverError)


def get_build_version() -> int:
    return _state.process().runtime_version


@_api
def moduleLoadData(image: bytes) -> int:
    if not isinstance(image, bytes):
        raise TypeError(f"Argument 'image' has incorrect type (expected bytes, got "
                        f"{type(image).__name__})")
    return _state.process().load_module(image)


@_api
def moduleLoad(filename: str) -> int:
    with open(filename, "rb") as fh:
        return _state.process().load_module(fh.read())


@_api
def moduleUnload(module: int) -> None:
    _state.process().unload_module(module)


@_api
def moduleGetFunction(module: int, funcname: str) -> int:
    handle = _state.process().module(module).functions.get(funcname)
    if handle is None:
        raise CudaStatus(500)
    return handle


@_api
def moduleGetGlobal(module: int, varname: str) -> int:
    """The variable's device pointer (CuPy drops the size cuModuleGetGlobal also gives)."""
    alloc = _state.process().module(module).variables.get(varname)
    if alloc is None:
        raise CudaStatus(500)
    return alloc.ptr


@_api
def launchKernel(f: int, grid_dim_x: int, grid_dim_y: int, grid_dim_z: int, block_dim_x: int,
                 block_dim_y: int, block_dim_z: int, shared_mem_bytes: int, stream: int,
                 kernel_params: int, extra: int) -> None:
    _state.process().launch(f, (grid_dim_x, grid_dim_y, grid_dim_z),
                            (block_dim_x, block_dim_y, block_dim_z), shared_mem_bytes, stream,
                            kernel_params)


@_api
def funcGetAttribute(attribute: int, f: int) -> int:
    p = _state.process()
    fn = p.function(f)
    spec = p.devices[p.current()]
    values = {
        CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: 1024,
        CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: fn.static_shared,
        CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES: 0,
        CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: 0,
        CU_FUNC_ATTRIBUTE_NUM_REGS: fn.registers,
        CU_FUNC_ATTRIBUTE_BINARY_VERSION: int("".join(map(str, spec.major_minor))),
        CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: fn.max_dynamic_shared,
    }
    if attribute not in values:
        return -1       # check_attribute_status: -1 where CUDA does not define it
    return values[attribute]


@_api
def funcSetAttribute(f: int, attribute: int, value: int) -> None:
    p = _state.process()
    fn = p.function(f)
    p.calls.append(("funcSetAttribute", p.current(), fn.name, attribute, value))
    if attribute == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
        if not 0 <= value <= p.devices[p.current()].optin_shared - fn.static_shared:
            raise CudaStatus(1)     # more than the device's opt-in limit with the static part
        fn.max_dynamic_shared = value
    elif attribute != CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
        raise CudaStatus(1)         # the other attributes are read-only
