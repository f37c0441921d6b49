"""Stand-in for ``cupy.cuda.runtime`` (``cupy_backends/cuda/api/runtime.pyx``): the functions
dptx uses, with CuPy's names, arguments and return values; errors raise ``CUDARuntimeError``
whose message is ``"<cudaError name>: <message>"``. Tests only."""
from __future__ import annotations

from .. import _state
from .._machine import ERRORS, CudaStatus, api

memcpyHostToHost = 0
memcpyHostToDevice = 1
memcpyDeviceToHost = 2
memcpyDeviceToDevice = 3
memcpyDefault = 4
hostAllocDefault = 0
hostAllocPortable = 1
streamDefault = 0
streamNonBlocking = 1
streamLegacy = 1
streamPerThread = 2
cudaDevAttrComputeCapabilityMajor = 75
cudaDevAttrComputeCapabilityMinor = 76
cudaDevAttrMultiProcessorCount = 16
cudaDevAttrMaxSharedMemoryPerBlockOptin = 97
deviceAttributeComputeCapabilityMajor = cudaDevAttrComputeCapabilityMajor
deviceAttributeComputeCapabilityMinor = cudaDevAttrComputeCapabilityMinor
errorInvalidValue = cudaErrorInvalidValue = 1
errorMemoryAllocation = cudaErrorMemoryAllocation = 2
cudaErrorIllegalAddress = 700
is_hip = False
_is_hip_environment = False


class CUDARuntimeError(RuntimeError):

    def __init__(self, status, log=""):
        self.status = status
        self._log = log
        name, message = ERRORS.get(status, (None, f"cudaError{status}", "unknown error"))[1:]
        # (the stand-in adds what ptxas or the executor said; CuPy's message stops before)
        super().__init__(f"{name}: {message}" + (f"\n{log}" if log else ""))

    def __reduce__(self):
        return (type(self), (self.status, self._log))


_api = api(CUDARuntimeError)


# -- versions, devices ------------------------------------------------------------------------------
@_api
def driverGetVersion() -> int:
    return _state.process().driver_version


def runtimeGetVersion() -> int:
    return _state.process().runtime_version


@_api
def getDeviceCount() -> int:
    return _state.process().device_count()


@_api
def getDevice() -> int:
    p = _state.process()
    p.check_driver()
    return p.current()


@_api
def setDevice(device: int) -> None:
    _state.process().set_current(int(device))


@_api
def getDeviceProperties(device: int) -> dict:
    p = _state.process()
    p.check_device(device)
    spec = p.devices[device]
    major, minor = spec.major_minor
    return {
        "name": spec.name.encode(), "totalGlobalMem": 80 << 30, "sharedMemPerBlock": 49152,
        "regsPerBlock": 65536, "warpSize": 32, "maxThreadsPerBlock": 1024,
        "maxThreadsDim": (1024, 1024, 64), "maxGridSize": (2**31 - 1, 65535, 65535),
        "clockRate": 1755000, "totalConstMem": 65536, "major": major, "minor": minor,
        "multiProcessorCount": 132, "concurrentKernels": 1, "pciBusID": device + 1,
        "pciDeviceID": 0, "pciDomainID": 0, "l2CacheSize": 50 << 20,
        "maxThreadsPerMultiProcessor": 2048, "unifiedAddressing": 1,
        "sharedMemPerMultiprocessor": spec.optin_shared + 1024,
        "sharedMemPerBlockOptin": spec.optin_shared,
    }


@_api
def deviceGetAttribute(attrib: int, device: int) -> int:
    p = _state.process()
    p.check_device(device)
    spec = p.devices[device]
    values = {cudaDevAttrComputeCapabilityMajor: spec.major_minor[0],
              cudaDevAttrComputeCapabilityMinor: spec.major_minor[1],
              cudaDevAttrMultiProcessorCount: 132,
              cudaDevAttrMaxSharedMemoryPerBlockOptin: spec.optin_shared}
    if attrib not in values:
        raise CudaStatus(1)
    return values[attrib]


@_api
def deviceSynchronize() -> None:
    p = _state.process()
    p.calls.append(("deviceSynchronize", p.current()))
    p.context()


# -- memory ---------------------------------------------------------------------------------------------
@_api
def malloc(size: int) -> int:
    return _state.process().malloc(int(size))


@_api
def mallocAsync(size: int, stream: int) -> int:
    p = _state.process()
    p.stream_context(stream)
    return p.malloc(int(size))


@_api
def free(ptr: int) -> None:
    _state.process().free(int(ptr))


@_api
def freeAsync(ptr: int, stream: int) -> None:
    p = _state.process()
    p.stream_context(stream)
    p.free(int(ptr))


@_api
def hostAlloc(size: int, flags: int) -> int:
    return _state.process().host_alloc(int(size))


@_api
def freeHost(ptr: int) -> None:
    _state.process().free_host(int(ptr))


@_api
def memcpy(dst: int, src: int, size: int, kind: int) -> None:
    _state.process().memcpy(int(dst), int(src), int(size), int(kind))


@_api
def memcpyAsync(dst: int, src: int, size: int, kind: int, stream: int) -> None:
    p = _state.process()
    p.stream_context(stream)
    p.memcpy(int(dst), int(src), int(size), int(kind), stream=stream)


@_api
def memset(ptr: int, value: int, size: int) -> None:
    _state.process().memset(int(ptr), value, int(size))


@_api
def memsetAsync(ptr: int, value: int, size: int, stream: int) -> None:
    p = _state.process()
    p.stream_context(stream)
    p.memset(int(ptr), value, int(size))


@_api
def memGetInfo() -> tuple:
    _state.process().context()
    return (79 << 30, 80 << 30)


# -- streams ---------------------------------------------------------------------------------------------
@_api
def streamCreate() -> int:
    return _state.process().stream_create(streamDefault)


@_api
def streamCreateWithFlags(flags: int) -> int:
    return _state.process().stream_create(int(flags))


@_api
def streamCreateWithPriority(flags: int, priority: int) -> int:
    return _state.process().stream_create(int(flags))


@_api
def streamDestroy(stream: int) -> None:
    _state.process().stream_destroy(int(stream))


@_api
def streamSynchronize(stream: int) -> None:
    p = _state.process()
    p.calls.append(("streamSynchronize", stream))
    p.stream_context(int(stream))


@_api
def streamQuery(stream: int) -> int:
    _state.process().stream_context(int(stream))
    return 0


@_api
def streamGetFlags(stream: int) -> int:
    p = _state.process()
    return p.stream_context(int(stream)).streams.get(int(stream), streamDefault)


def _ensure_context() -> None:
    getDevice()
