"""LLVM IR -> machine code with llvmlite, optimized at O3 for the host CPU, cached in memory
and on disk as object code (key: IR hash, CPU name and features, dptx version)."""
from __future__ import annotations

import contextlib
import ctypes
import functools
import hashlib
import os
import pathlib
import struct
import subprocess
import sys
import tempfile
import threading
import time

import llvmlite.binding as llvm

from .._version import __version__
from ..errors import PtxUnsupportedError

try:
    import fcntl
except ImportError:     # Windows: no lock files; builds are then neither shared nor bounded
    fcntl = None

_lock = threading.Lock()
_engines: list = []   # keep engines (and their code) alive for the life of the process


@functools.lru_cache(maxsize=None)
def _target_machine(opt: int = 3):
    """The host CPU's target machine; ``opt`` 0 for the quick tier's fast instruction
    selection."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    target = llvm.Target.from_default_triple()
    features = llvm.get_host_cpu_features().flatten()
    return target.create_target_machine(cpu=llvm.get_host_cpu_name(), features=features,
                                        opt=opt, reloc="pic", codemodel="jitdefault")


@functools.lru_cache(maxsize=None)
def host_key() -> str:
    return f"{llvm.get_host_cpu_name()}|{llvm.get_host_cpu_features().flatten()}|{__version__}|{llvm.llvm_version_info}"


def cache_dir() -> pathlib.Path:
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
        raise PtxUnsupportedError(
            "the compiled kernel needs runtime functions this process does not provide: "
            + ", ".join(sorted(missing)) + " (an instruction lowered to a library call; "
            "please report it with the PTX)")


def _object_path(text: str, key_extra: str) -> pathlib.Path:
    key = hashlib.sha256((text + "\0" + key_extra + "\0" + host_key()).encode()).hexdigest()
    return cache_dir() / f"{key}.o"


def _cached(path: pathlib.Path):
    try:
        return path.read_bytes()
    except OSError:
        return None


def is_cached(text: str, key_extra: str = "") -> bool:
    """Whether the optimized object code of ``text`` is in the disk cache."""
    return _object_path(text, key_extra).is_file()


def verified_module(text: str):
    """LLVM IR ``text`` parsed and verified. IR that LLVM refuses comes from an instruction
    whose operand types its lowering did not check: a ``PtxUnsupportedError`` with LLVM's
    complaint, not llvmlite's RuntimeError."""
    try:
        module = llvm.parse_assembly(text)
        module.verify()
        return module
    except RuntimeError as exc:
        detail = " ".join(str(exc).split())[:300]
        raise PtxUnsupportedError(f"the CPU executor cannot translate this kernel: an "
                                  f"instruction's operand types do not fit its form "
                                  f"(LLVM: {detail})") from None


def build_object(text: str, quick: bool = False, passes: bool = True) -> bytes:
    """Object code for LLVM IR ``text``: optimized at O3 for this CPU, or, ``quick``, with
    LLVM's O1 passes and fast instruction selection (about a tenth of the time on large
    kernels: the machine-code passes at O3 are most of it), or with no IR passes but the
    removal of unused functions (``passes=False``, with ``quick``: a third of the quick
    tier's time again, for code that runs little, as a test suite's)."""
    tm = _target_machine(0 if quick else 3)
    module = verified_module(text)
    module.triple = tm.triple
    module.data_layout = str(tm.target_data)
    if quick and passes:
        pto = llvm.create_pipeline_tuning_options(speed_level=1)
        pb = llvm.create_pass_builder(tm, pto)
        pb.getModulePassManager().run(module, pb)
    elif quick:
        # the one pass that pays for itself here: dropping the runtime helpers the kernel
        # does not call (a quarter of the time: every module carries all of them)
        pb = llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(speed_level=0))
        pm = llvm.create_new_module_pass_manager()
        pm.add_global_dead_code_eliminate_pass()
        pm.run(module, pb)
    else:
        _optimize(module)
    return tm.emit_object(module)


def store(path: pathlib.Path, obj: bytes) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_bytes(obj)
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only cache directory is not an error


def load_object(obj: bytes) -> tuple:
    """(engine, address of dptx_run) for object code ``obj``."""
    tm = _target_machine()
    with _lock:
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


def compile_ir(text: str, key_extra: str = "", quick: bool = False) -> tuple:
    """(engine, address of dptx_run) for LLVM IR ``text``. The optimized object code is
    cached on disk; a ``quick`` build (``build_object``) only lives in this process."""
    if quick:
        return load_object(build_locked(text, quick=True))
    path = _object_path(text, key_extra)
    obj = _cached(path)
    if obj is None:
        # another process may be building this very object (optimize_in_background): wait
        # for it and take its result rather than build it a second time
        with object_lock(path):
            obj = _cached(path)
            if obj is None:
                obj = build_locked(text)
                store(path, obj)
    return load_object(obj)


def build_locked(text: str, quick: bool = False, passes: bool = True) -> bytes:
    """``build_object`` under this process's LLVM lock (LLVM's context is not shared across
    threads)."""
    with _lock:
        return build_object(text, quick, passes)


# Background builds run in child processes that share two kinds of lock files in the cache
# directory with every process on the machine (Dask workers, test runs), so that the same
# object is never built twice at once and the builds do not crowd out the cores:
#   <key>.lock         held from before a build's cache check to its end: one build per object
#   slots/slot-N.lock  one per running background build, N < _build_slots()
# A waiting child polls the locks (it sleeps, burning no CPU) and gives up once its parent
# has died: nobody is left to use the build. A child that has started building finishes it.
_POLL_SECONDS = 0.1


def _build_slots() -> int:
    """How many background builds may run at once (DPTX_JIT_BUILD_SLOTS, else half the
    cores: the other half runs the kernels, quick builds among them)."""
    return int(os.environ.get("DPTX_JIT_BUILD_SLOTS") or 0) or max(1, (os.cpu_count() or 2) // 2)


def _open_lock(path: pathlib.Path) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    return os.open(path, os.O_RDWR | os.O_CREAT, 0o666)


@contextlib.contextmanager
def object_lock(path: pathlib.Path):
    """Hold the build lock of object ``path``, waiting for it; no lock where the cache
    directory is read-only or there is no fcntl."""
    fd = None
    if fcntl is not None:
        try:
            fd = _open_lock(path.with_suffix(".lock"))
        except OSError:
            pass
    try:
        if fd is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        if fd is not None:
            os.close(fd)        # releases the lock


def _lock_one(paths: list, parent: int):
    """Lock one of the lock files ``paths`` (the first free), polling while all are held:
    its index, or None once the process ``parent`` is no longer this one's parent (it died
    and this one was handed to init). The lock lasts until this process exits."""
    fds = [_open_lock(p) for p in paths]
    while os.getppid() == parent:
        for i, fd in enumerate(fds):
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return i
            except BlockingIOError:
                pass
        time.sleep(_POLL_SECONDS)
    return None


def run_background(path: pathlib.Path, source: str, parent: int, build) -> None:
    """The child's side of ``background``: ``build(text)`` (which stores ``path``) with the
    text of file ``source``, unless another process has built or is building ``path``, once
    a slot is free."""
    p = pathlib.Path(source)
    try:
        text = p.read_text(encoding="utf-8", errors="surrogatepass")
    finally:
        p.unlink()
    slot = None
    if fcntl is not None:
        if _lock_one([path.with_suffix(".lock")], parent) is None or path.is_file():
            return
        slots = [path.parent / "slots" / f"slot-{i}.lock" for i in range(_build_slots())]
        slot = _lock_one(slots, parent)
        if slot is None:
            return
    build(text)
    log = os.environ.get("DPTX_JIT_BUILD_LOG")   # one line per build, for tests and tuning
    if log:
        with open(log, "a") as f:
            f.write(f"{os.getpid()} slot-{slot} {path.name}\n")


def background(args: list, text: str, stem: str = "build"):
    """Start ``python -m ARGS... TEXT-FILE PARENT-PID`` (a module whose main calls
    ``run_background``) with ``text`` in a file of the cache directory; the Popen, or None
    if it could not start (a read-only cache directory). Across all processes on the machine
    one build per object runs, and at most ``_build_slots()`` at once, at a lower priority
    than the programs that run kernels: a child may first wait, and gives up waiting if this
    process exits; one that has started building finishes its cache entry."""
    source = None
    try:
        cache_dir().mkdir(parents=True, exist_ok=True)
        # a file: a pipe would block until the child reads it; a name of its own, as the
        # same object may be asked for again before the first child has read its file
        fd, source = tempfile.mkstemp(".src", stem + ".", cache_dir())
        with open(fd, "w", encoding="utf-8", errors="surrogatepass") as f:
            f.write(text)
        return subprocess.Popen([sys.executable, "-m", *args, source, str(os.getpid())],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True,
                                preexec_fn=_lower_priority)
    except OSError:
        if source is not None:
            try:
                os.unlink(source)
            except OSError:
                pass
        return None


def _lower_priority() -> None:
    try:
        os.nice(10)
    except OSError:
        pass


def optimize_in_background(text: str, key_extra: str = ""):
    """Start building the optimized object code of LLVM IR ``text`` into the disk cache in
    a child process (``background``); returns the process, or None."""
    path = _object_path(text, key_extra)
    return background(["dptx.cpu.jit", str(path)], text, path.stem)


def cached_object(text: str, key_extra: str = ""):
    """The optimized object code of ``text`` from the disk cache, or None."""
    return _cached(_object_path(text, key_extra))


if __name__ == "__main__":
    # python -m dptx.cpu.jit OBJECT IR-FILE PARENT-PID: the child of optimize_in_background
    _path = pathlib.Path(sys.argv[1])
    run_background(_path, sys.argv[2], int(sys.argv[3]), lambda text: store(_path, build_object(text)))
