"""LLVM IR -> machine code with llvmlite, optimized at O3 for the host CPU, cached in memory
and on disk as object code (key: IR hash, CPU name and features, dptx version)."""
from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import pathlib
import struct
import threading

import llvmlite.binding as llvm

_lock = threading.Lock()
_engines: list = []   # keep engines (and their code) alive for the life of the process


@functools.lru_cache(maxsize=None)
def _target_machine():
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    target = llvm.Target.from_default_triple()
    features = llvm.get_host_cpu_features().flatten()
    return target.create_target_machine(cpu=llvm.get_host_cpu_name(), features=features,
                                        opt=3, reloc="pic", codemodel="jitdefault")


@functools.lru_cache(maxsize=None)
def host_key() -> str:
    from .. import __version__
    return f"{llvm.get_host_cpu_name()}|{llvm.get_host_cpu_features().flatten()}|{__version__}|{llvm.llvm_version_info}"


def _cache_dir() -> pathlib.Path:
    base = os.environ.get("DPTX_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "dptx")
    return pathlib.Path(base) / "cpu"


def _optimize(module):
    tm = _target_machine()
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pto.loop_vectorization = True
    pto.slp_vectorization = True
    pb = llvm.create_pass_builder(tm, pto)
    pm = pb.getModulePassManager()
    pm.run(module, pb)


def undefined_symbols(obj: bytes) -> list:
    """Names an ELF64 relocatable object file needs from outside (symbols with no section)."""
    if obj[:4] != b"\x7fELF" or obj[4] != 2:
        return []
    shoff, = struct.unpack_from("<Q", obj, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", obj, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", obj, shoff + i * shentsize) for i in range(shnum)]
    names = []
    for sh_name, sh_type, _, _, off, size, link, _, _, entsize in sections:
        if sh_type != 2 or not entsize:      # SHT_SYMTAB
            continue
        strtab = sections[link]
        for k in range(1, size // entsize):
            st_name, st_info, _, st_shndx, _, _ = struct.unpack_from("<IBBHQQ", obj, off + k * entsize)
            if st_shndx == 0 and st_name:
                start = strtab[4] + st_name
                names.append(obj[start:obj.index(b"\0", start)].decode())
    return names


_process = ctypes.CDLL(None)


def check_resolvable(obj: bytes) -> None:
    """Refuse object code that calls a function this process cannot provide: the JIT would
    otherwise abort the whole process (a worker) at load time or jump to address 0."""
    missing = [n for n in undefined_symbols(obj)
               if n != "_GLOBAL_OFFSET_TABLE_" and not hasattr(_process, n)]
    if missing:
        from ..errors import PtxUnsupportedError
        raise PtxUnsupportedError(
            "the compiled kernel needs runtime functions this process does not provide: "
            + ", ".join(sorted(missing)) + " (an instruction lowered to a library call; "
            "please report it with the PTX)")


def compile_ir(text: str, key_extra: str = "") -> tuple:
    """(engine, address of dptx_run) for LLVM IR ``text``; object code cached on disk."""
    key = hashlib.sha256((text + "\0" + key_extra + "\0" + host_key()).encode()).hexdigest()
    path = _cache_dir() / f"{key}.o"
    tm = _target_machine()
    obj = None
    try:
        obj = path.read_bytes()
    except OSError:
        pass
    with _lock:
        if obj is None:
            module = llvm.parse_assembly(text)
            module.triple = tm.triple
            module.data_layout = str(tm.target_data)
            module.verify()
            _optimize(module)
            obj = tm.emit_object(module)
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
                tmp.write_bytes(obj)
                os.replace(tmp, path)
            except OSError:
                pass  # a read-only cache directory is not an error
        check_resolvable(obj)
        empty = llvm.parse_assembly("")
        empty.triple = tm.triple
        engine = llvm.create_mcjit_compiler(empty, tm)
        engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
        engine.finalize_object()
        address = engine.get_function_address("dptx_run")
        _engines.append(engine)
    if not address:
        raise RuntimeError("JIT-compiled code has no dptx_run entry point")
    return engine, address
