"""C++ names as users wrote them: ``_Z3putIfEvPT_`` is ``put<float>``.

NVRTC and nvcc mangle ``__global__`` functions that are not ``extern "C"`` with the Itanium C++
ABI, the one GNU's ``__cxa_demangle`` (libstdc++, present wherever CUDA runs) reads; it is
called through ctypes rather than reimplemented. ``short_name`` drops the return type and the
parameter list (the form CuPy's ``name_expressions`` use). ``readable`` rewrites every mangled
name in a message, and PTX parameter names (``<kernel>_param_<i>``) as the CUDA source names
the parameter when a module registered it (``register_parameters``), else as
``<kernel> parameter <i>``."""
from __future__ import annotations

import ctypes
import ctypes.util
import functools
import re
import threading

_MANGLED = re.compile(r"\b_Z[A-Za-z0-9_]+")
_parameters: dict = {}          # mangled kernel name -> CUDA source parameter names
_lock = threading.Lock()


@functools.lru_cache(maxsize=1)
def _cxa_demangle():
    path = ctypes.util.find_library("stdc++")
    if path is None:
        return None
    try:
        lib = ctypes.CDLL(path)
        fn = lib.__cxa_demangle
    except (OSError, AttributeError):
        return None
    fn.restype = ctypes.c_void_p
    fn.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_size_t),
                   ctypes.POINTER(ctypes.c_int)]
    free = ctypes.CDLL(None).free
    free.argtypes = [ctypes.c_void_p]
    return fn, free


@functools.lru_cache(maxsize=4096)
def demangle(name: str) -> str:
    """The full demangled signature (``void put<float>(float*)``), or ``name`` unchanged when
    it is not a mangled C++ name (``extern "C"`` kernels) or no demangler is available."""
    if not name.startswith("_Z"):
        return name
    found = _cxa_demangle()
    if found is None:
        return name
    fn, free = found
    status = ctypes.c_int()
    pointer = fn(name.encode(), None, None, ctypes.byref(status))
    if not pointer or status.value != 0:
        return name
    try:
        return ctypes.string_at(pointer).decode(errors="replace")
    finally:
        free(pointer)


def _top_level(text: str, positions) -> list:
    """Indices of ``positions`` characters in ``text`` outside <...> and (...)."""
    depth, found = 0, []
    for i, c in enumerate(text):
        if c in "<(":
            depth += 1
        elif c in ">)":
            depth -= 1
        elif depth == 0 and c in positions:
            found.append(i)
    return found


@functools.lru_cache(maxsize=4096)
def short_name(name: str) -> str:
    """``put<float>`` for ``_Z3putIfEvPT_`` (``void put<float>(float*)``): the qualified name
    and template arguments, without the return type and the parameters."""
    full = demangle(name)
    if full == name:
        return name
    if full.endswith(")"):          # drop the parameter list: the last top-level (...)
        depth = 0
        for i in range(len(full) - 1, -1, -1):
            depth += full[i] == ")"
            depth -= full[i] == "("
            if depth == 0:
                full = full[:i]
                break
    spaces = _top_level(full, " ")
    if spaces and not full[:spaces[-1]].endswith("operator"):
        full = full[spaces[-1] + 1:]       # a template function's return type
    return full


def register_parameters(kernel: str, names: list) -> None:
    """The CUDA source's names of ``kernel``'s parameters (a module compiled from source).
    Two modules whose kernels share a PTX name but not parameter names make that name
    ambiguous: errors then keep the PTX names rather than risk naming the wrong one."""
    with _lock:
        names = list(names)
        if _parameters.get(kernel, names) != names:
            names = None
        _parameters[kernel] = names


def parameter_name(kernel: str, index: int) -> str:
    names = _parameters.get(kernel)
    if kernel in _parameters and names is None and not kernel.startswith("_Z"):
        return f"{kernel}_param_{index}"
    if names is not None and 0 <= index < len(names) and names[index]:
        return names[index]
    return f"{short_name(kernel)} parameter {index}"


_PARAM_TOKEN = re.compile(r"\b([A-Za-z_$][\w$]*)_param_(\d+)\b")


def readable(text: str) -> str:
    """``text`` with every mangled kernel name, and every PTX parameter name of a mangled or
    registered kernel, as the user wrote it."""
    if "_param_" in text:
        def param(match):
            kernel, index = match.group(1), int(match.group(2))
            if kernel.startswith("_Z") or kernel in _parameters:
                return parameter_name(kernel, index)
            return match.group(0)
        text = _PARAM_TOKEN.sub(param, text)
    return _MANGLED.sub(lambda m: short_name(m.group(0)), text) if "_Z" in text else text


def source_parameters(source: str, kernel: str, count: int):
    """The parameter names of ``__global__`` function ``kernel`` (mangled or not) as the CUDA
    ``source`` declares them, when exactly one declaration with ``count`` parameters says
    so; else None."""
    ident = re.split(r"::", re.sub(r"<.*", "", short_name(kernel)))[-1]
    found = set()
    for match in re.finditer(rf"\b{re.escape(ident)}\s*\(", source):
        start = max(source.rfind(c, 0, match.start()) for c in ";{}")
        if "__global__" not in source[start + 1:match.start()]:
            continue
        depth, i = 0, match.end() - 1
        for i in range(match.end() - 1, len(source)):
            depth += source[i] == "("
            depth -= source[i] == ")"
            if depth == 0:
                break
        inner = source[match.end():i]
        cuts = [-1] + _top_level(inner, ",") + [len(inner)]
        params = [inner[a + 1:b].split("=")[0].strip() for a, b in zip(cuts, cuts[1:])]
        if params == [""] or params == ["void"]:
            params = []
        names = tuple((re.findall(r"[A-Za-z_]\w*", re.sub(r"\[.*", "", p)) or [""])[-1]
                      for p in params)
        if len(names) == count:
            found.add(names)
    return list(found.pop()) if len(found) == 1 else None
