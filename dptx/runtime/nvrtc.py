"""CUDA C -> PTX through NVRTC from PyPI (``cuda-bindings`` + ``nvidia-cuda-nvrtc``).

No GPU and no nvcc are needed: NVRTC is a library, and the CUDA headers (``cuda_fp16.h``...)
come from the ``nvidia-cuda-runtime``/``nvidia-cuda-crt`` wheels. Results are cached in memory
and on disk by (source, options, arch, NVRTC version), since compiling takes 0.1-1 s.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import pathlib
import re
import threading

import nvidia

from ..errors import CompileError

_lock = threading.Lock()
_memory_cache: dict = {}
SHIMS = pathlib.Path(__file__).parents[1] / "include"   # dptx/include


def _nvrtc():
    try:
        # lazy: the CUDA bindings load on the first compile (and may be missing)
        from cuda.bindings import nvrtc
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise CompileError(
            "compiling CUDA C needs NVRTC: pip install cuda-bindings nvidia-cuda-nvrtc "
            "nvidia-cuda-runtime nvidia-cuda-crt (or pass PTX with ptx=...)") from exc
    return nvrtc


@functools.lru_cache(maxsize=None)
def version() -> tuple:
    err, major, minor = _nvrtc().nvrtcVersion()
    _check(err, "nvrtcVersion")
    return (major, minor)


@functools.lru_cache(maxsize=None)
def include_dirs() -> tuple:
    """Directories holding the CUDA headers shipped in the nvidia-* wheels; nvidia-cuda-cccl
    puts libcu++ (cuda/std/..., which cooperative_groups needs), CUB and Thrust in a cccl/
    folder beside them."""
    dirs = []
    try:
        for root in getattr(nvidia, "__path__", []):
            for sub in sorted(pathlib.Path(root).glob("cu*/include")) + [pathlib.Path(root) / "cuda_runtime" / "include"]:
                if (sub / "cuda_fp16.h").exists() or (sub / "cuda_runtime.h").exists():
                    dirs.append(str(sub))
                    if (sub / "cccl" / "cuda").is_dir():
                        dirs.append(str(sub / "cccl"))
    except ImportError:
        pass
    # Last, so that any real header wins: device-side stand-ins for the C library headers
    # that CUDA sources include (NVRTC ships none).
    dirs.append(str(SHIMS))
    return tuple(dict.fromkeys(dirs))


def _check(err, what, log=""):
    nvrtc = _nvrtc()
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        _, msg = nvrtc.nvrtcGetErrorString(err)
        raise CompileError(f"NVRTC {what} failed: {msg.decode()}", log)


def _cache_dir() -> pathlib.Path:
    base = os.environ.get("DPTX_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "dptx")
    return pathlib.Path(base) / "nvrtc"


def compile_to_ptx(source: str, options=(), arch: str = "compute_80", name: str = "kernel.cu") -> str:
    """Compile CUDA C ``source`` to PTX text. Raises CompileError with NVRTC's log."""
    return compile_module(source, options, arch, name)[0]


def compile_module(source: str, options=(), arch: str = "compute_80", name: str = "kernel.cu",
                   name_expressions=()) -> tuple:
    """(PTX text, {name expression: lowered (mangled) name}) for CUDA C ``source``: each of
    ``name_expressions`` (``"put<float>"``, ``"ns::step<4>"``...) is instantiated and its
    mangled name found through NVRTC's name lowering, as CuPy's ``name_expressions`` do.
    Raises CompileError with NVRTC's log."""
    options, expressions = tuple(options), tuple(dict.fromkeys(name_expressions))
    key_text = "\0".join([source, arch, *options, repr(version())] +
                          ([repr(expressions)] if expressions else []))
    key = hashlib.sha256(key_text.encode()).hexdigest()
    with _lock:
        if key in _memory_cache:
            return _memory_cache[key]
    path = _cache_dir() / f"{key}.ptx"
    names_path = path.with_suffix(".names.json")
    try:
        ptx = path.read_text()
        lowered = json.loads(names_path.read_text()) if expressions else {}
    except (OSError, ValueError):
        ptx, lowered = _compile(source, options, arch, name, expressions)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            if expressions:
                _write_atomically(names_path, json.dumps(lowered))
            _write_atomically(path, ptx)
        except OSError:
            pass  # a read-only cache is not an error
    with _lock:
        _memory_cache[key] = (ptx, lowered)
    return ptx, lowered


def _write_atomically(path: pathlib.Path, text: str) -> None:
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _compile(source: str, options: tuple, arch: str, name: str, expressions: tuple) -> tuple:
    nvrtc = _nvrtc()
    err, prog = nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], [])
    _check(err, "nvrtcCreateProgram")
    try:
        for expression in expressions:
            (err,) = nvrtc.nvrtcAddNameExpression(prog, expression.encode())
            _check(err, f"nvrtcAddNameExpression({expression!r})")
        opts = [f"--gpu-architecture={arch}".encode()]
        opts += [f"-I{d}".encode() for d in include_dirs()]
        opts += [o.encode() if isinstance(o, str) else o for o in options]
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        _, size = nvrtc.nvrtcGetProgramLogSize(prog)
        # NVRTC writes into the buffers it is given: a bytearray, never bytes. (b" " * 1 is
        # the interpreter's shared one-byte object: an empty log's terminating NUL written
        # there made every later b" " in the process b"\0": print(a, b) printed a NUL.)
        log = bytearray(size)
        nvrtc.nvrtcGetProgramLog(prog, log)
        log = bytes(log).rstrip(b"\0 ").decode(errors="replace")
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise CompileError(f"CUDA C compilation of {name} failed (arch {arch}):"
                               f"{_missing_header_hint(log)}", log)
        lowered = {}
        for expression in expressions:
            err, mangled = nvrtc.nvrtcGetLoweredName(prog, expression.encode())
            if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
                raise CompileError(f"name expression {expression!r} names no __global__ "
                                   f"function or __device__/__constant__ variable of {name}",
                                   log)
            lowered[expression] = mangled.decode() if isinstance(mangled, bytes) else mangled
        err, size = nvrtc.nvrtcGetPTXSize(prog)
        _check(err, "nvrtcGetPTXSize")
        buf = bytearray(size)
        (err,) = nvrtc.nvrtcGetPTX(prog, buf)
        _check(err, "nvrtcGetPTX")
        return bytes(buf).rstrip(b"\0").decode(), lowered
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def _missing_header_hint(log: str) -> str:
    """Why a header NVRTC cannot open is missing, and what to do."""
    hosts = sorted({pathlib.Path(f).name for f in re.findall(r"([^\s(]+\.h)\(\d+\): error: A function "
                                                           r"without execution space", log)})
    if hosts:
        return (f" {', '.join(hosts)} declares host functions, which NVRTC cannot compile: it "
                f"is a host API header (cuda.h is the driver API for host code); device code "
                f"does not need it: remove the include or guard it with #ifndef __CUDACC_RTC__.")
    missing = re.findall(r'cannot open source file "([^"]+)"', log)
    if not missing:
        return ""
    shims = sorted(p.name for p in SHIMS.iterdir() if p.suffix == ".h")
    return (f" {', '.join(sorted(set(missing)))} is not available to NVRTC, which compiles "
            f"device code only and has no C library: dptx provides device-side "
            f"{', '.join(shims)} (and their <c...> forms); host-only headers (cuda.h, "
            f"host I/O, OS headers) must stay out of the kernel source, or be guarded with "
            f"#ifndef __CUDACC_RTC__.")
