"""C++ names as users wrote them: ``_Z3putIfEvPT_`` is ``put<float>``.

NVRTC and nvcc mangle ``__global__`` functions that are not ``extern "C"`` with the Itanium C++
ABI, the one GNU's ``__cxa_demangle`` (libstdc++, present wherever CUDA runs) reads; it is
called through ctypes rather than reimplemented. ``short_name`` drops the return type and the
parameter list (the form CuPy's ``name_expressions`` use). ``readable`` rewrites every mangled
name in a message (every dptx error's text goes through it); ``name_in_source`` names PTX
parameters (``<kernel>_param_<i>``) as the kernel's CUDA source does, where the kernel that
raised is known (a launch, ``dptx.cpu.launch``)."""
from __future__ import annotations

import ctypes
import ctypes.util
import functools
import re

_MANGLED = re.compile(r"\b_Z[A-Za-z0-9_]+")


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


_PARAM_TOKEN = re.compile(r"\b([A-Za-z_$][\w$]*)_param_(\d+)\b")


def readable(text: str) -> str:
    """``text`` with every mangled kernel name as the user wrote it, and the PTX parameters
    of a mangled kernel as ``<kernel> parameter <i>`` (``name_in_source`` gives the source's
    names where the kernel is known)."""
    if "_Z" not in text:
        return text
    text = _PARAM_TOKEN.sub(
        lambda m: f"{short_name(m.group(1))} parameter {m.group(2)}"
        if m.group(1).startswith("_Z") else m.group(0), text)
    return _MANGLED.sub(lambda m: short_name(m.group(0)), text)


def with_parameter_names(text: str, kernel: str, names) -> str:
    """``text`` with kernel ``kernel``'s PTX parameter names (``<kernel>_param_<i>``) as the
    CUDA source names them (``names[i]``)."""
    if not names or f"{kernel}_param_" not in text:
        return text

    def one(match):
        i = int(match.group(1))
        return names[i] if i < len(names) and names[i] else match.group(0)
    return re.sub(rf"\b{re.escape(kernel)}_param_(\d+)\b", one, text)


def name_in_source(exc: BaseException, kernels) -> BaseException:
    """``exc``, raised for ``kernels`` (``dptx.RawKernel`` objects), with their parameters
    named as their CUDA source does where it says; returned, for ``raise``."""
    if not exc.args or not isinstance(exc.args[0], str):
        return exc
    text = exc.args[0]
    for k in kernels:
        if isinstance(getattr(k, "name", None), str):
            text = with_parameter_names(text, k.name, getattr(k, "source_parameters", None))
    if text != exc.args[0]:
        exc.args = (text,) + exc.args[1:]
    return exc


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
