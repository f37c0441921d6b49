"""A kernel's compiled forms and their cache on disk.

A form is what one translation of a kernel (``codegen``, with a vector mode and a parameter
alignment) becomes at one LLVM tier (``jit``): the machine code of ``dptx_run`` and the
``Facts`` a launch needs about it (frame sizes, what the kernel uses). On disk a form is
``<key>.o`` (object code) and ``<key>.json`` (its facts), where the key names everything the
form is made from: the PTX, the kernel, the form's options, the tier, the translator's own
source files, the host CPU and LLVM. So a process loads a kernel it (or any process) built
before without translating it again, and a child process can build a form from the PTX
alone: ``python -m dptx.cpu.forms``, the optimized build behind a quick one
(``build_in_background``)."""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import pathlib

from ..ptx import ir
from ..ptx.analysis import reachable_functions
from ..ptx.cfg import build_cfg, sync_kind
from ..ptx.digest import ptx_digest
from . import jit
from .renderer.codegen import Module as Translation

# LLVM tiers: O3; O1 passes with fast instruction selection; no passes at all
OPTIMIZED, QUICK, UNOPTIMIZED = "optimized", "quick", "unoptimized"


@dataclasses.dataclass(frozen=True)
class Facts:
    """What a launch needs to know of a form besides its machine code."""
    aligned_params: tuple       # parameters the build takes as multiples of param_alignment
    resumable: bool             # threads are resumable (sync points): frames per thread
    vector: bool                # warp-vectorized (vector.py)
    vector_reason: str          # why not, where not
    vector_for_loops: bool      # vectorized for a loop only: the plain form is measured too
    spin_waits: bool            # spin-wait loops (ptx/spins.py): blocks may wait on later ones
    prefetch_sites: int
    loops: bool                 # back edges poll the launch's stop request
    uses_printf: bool
    uses_grid_workspace: bool   # cooperative groups' grid.sync()
    uses_malloc: bool           # a device heap per launch
    frame_bytes: int
    local_bytes: int
    shared_static: int
    racecheck: bool = False     # shared memory accesses and sync points noted (racecheck_ir)

    @classmethod
    def of(cls, t: Translation) -> "Facts":
        return cls(tuple(t.aligned_params), t.resumable, t.vector_plan is not None,
                   t.vector_reason, t.vector_for_loops, bool(t.spins), t.prefetch_sites,
                   t.stop_polls > 0, any(f.name == "vprintf" for f in t.functions),
                   t.uses_grid_workspace, t.uses_malloc, t.frame_bytes,
                   t.local_bytes_per_thread(), t.shared.dynamic_offset, t.racecheck)


@functools.lru_cache(maxsize=None)
def translator_fingerprint() -> str:
    """A digest of the translator's source (this package and the PTX front end): a form built
    by other code is never taken for this code's, as during development."""
    h = hashlib.sha256()
    here = pathlib.Path(__file__).parent
    for folder in (here, here.parent / "ptx"):
        for path in sorted(folder.rglob("*.py")):
            h.update(str(path.relative_to(folder)).encode())
            h.update(path.read_bytes())
    return h.hexdigest()


def vector_choice(vector_mode) -> str:
    """The vector mode a translation takes (codegen: DPTX_CPU_VECTOR when none is given)."""
    return (vector_mode or os.environ.get("DPTX_CPU_VECTOR", "1")).strip().lower()


def form_key(ptx: str, name: str, vector_mode, param_alignment: int, tier: str) -> str:
    text = "\0".join((ptx_digest(ptx), name, vector_choice(vector_mode), str(param_alignment),
                      tier, translator_fingerprint(), jit.host_key()))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _paths(key: str) -> tuple:
    base = jit.cache_dir() / key
    return base.with_suffix(".o"), base.with_suffix(".json")


def cached(key: str):
    """(object code, Facts) of the form ``key`` from the disk cache, or None."""
    obj_path, facts_path = _paths(key)
    try:
        facts = json.loads(facts_path.read_text())
        obj = obj_path.read_bytes()
        return obj, Facts(**{k: tuple(v) if isinstance(v, list) else v for k, v in facts.items()})
    except (OSError, ValueError, TypeError):
        return None


def _store(key: str, obj: bytes, facts: Facts) -> None:
    obj_path, facts_path = _paths(key)
    jit.store(obj_path, obj)            # the object first: the facts say the form is there
    jit.store(facts_path, json.dumps(dataclasses.asdict(facts)).encode())


def translate_and_build(module: ir.Module, name: str, vector_mode, param_alignment: int,
                        tier: str) -> tuple:
    """(object code, Facts) of a form, made here."""
    t = Translation(module, name, vector_mode, param_alignment)
    text = t.translate()
    return jit.build_locked(text, quick=tier != OPTIMIZED, passes=tier != UNOPTIMIZED), \
        Facts.of(t)


def build(module: ir.Module, name: str, vector_mode, param_alignment: int, tier: str,
          key: str) -> tuple:
    """(object code, Facts) of the form ``key``: from the disk cache, else made here and
    stored (another process building the same form meanwhile is waited for, not repeated)."""
    found = cached(key)
    if found is None:
        with jit.object_lock(_paths(key)[0]):
            found = cached(key)
            if found is None:
                found = translate_and_build(module, name, vector_mode, param_alignment, tier)
                _store(key, *found)
    return found


def estimated_ir_lines(module: ir.Module, name: str) -> int:
    """About how many lines of LLVM IR the kernel's form takes, what O3's time grows with
    (about 0.1-0.2 ms a line on this project's machines), judged from the PTX before
    translating it: the runtime's ~1,400 lines, ~25 a PTX instruction (of the kernel and
    the functions it calls) in the plain form, ~100 in the warp-vectorized form that
    kernels with sync points or loops take (Rodinia's lud_internal: 94 instructions, 9,346
    lines)."""
    kernel = next(f for f in module.kernels if f.name == name)
    instructions = sum(len(f.instructions) for f in reachable_functions(module, kernel)
                       if f.body is not None)
    vectorized = any(sync_kind(i) for i in kernel.instructions) or \
        bool(build_cfg(kernel).back_edges())
    return 1400 + instructions * (100 if vectorized else 25)


def build_in_background(ptx: str, name: str, vector_mode, param_alignment: int, key: str):
    """Start building the optimized form into the cache in a child process (jit.background);
    the Popen, or None where it could not start."""
    return jit.background(["dptx.cpu.forms", key, name, vector_choice(vector_mode),
                           str(param_alignment)], ptx, key)


if __name__ == "__main__":
    # python -m dptx.cpu.forms KEY NAME VECTOR-MODE ALIGNMENT PTX-FILE PARENT-PID
    import sys
    from ..ptx import parse
    _key, _name, _mode, _align, _source, _parent = sys.argv[1:7]

    def _build(ptx_text):       # (run_background holds the form's lock)
        _store(_key, *translate_and_build(parse(ptx_text), _name, _mode, int(_align), OPTIMIZED))
    jit.run_background(_paths(_key)[0], _source, int(_parent), _build)
