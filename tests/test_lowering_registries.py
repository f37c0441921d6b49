"""Each instruction family of the CPU renderer is a registry of its own, installed explicitly by
the executor forms that use it (dptx/cpu/renderer/lowering/registry.py)."""
import importlib
import pkgutil

import pytest

from dptx.cpu.renderer import lowering
from dptx.cpu.renderer.function import Function
from dptx.cpu.renderer.lowering.registry import Lowerings, Registry
from dptx.cpu.renderer.vector import VectorFunction

# the family modules: a registry each (the rest are helpers: shared IR, the registry itself)
HELPERS = {"common", "registry", "exp_log", "sin_cos"}


def _families() -> dict:
    found = {}
    for info in pkgutil.iter_modules(lowering.__path__):
        if info.name in HELPERS:
            continue
        module = importlib.import_module(f"{lowering.__name__}.{info.name}")
        found[info.name] = module.registry
    return found


def test_each_family_module_has_its_registry_and_the_per_thread_form_installs_them_all():
    families = _families()
    assert len(families) == 14
    for name, registry in families.items():
        assert isinstance(registry, Registry) and registry.family == name
        assert registry.scalar, f"{name} lowers nothing per thread"
    installed = {r.family for r in Function.LOWERINGS.registries}
    assert installed == set(families)
    # every opcode comes from exactly one family
    assert sum(len(r.scalar) for r in families.values()) == len(Function.LOWERINGS.table)
    assert Function.LOWERINGS.family["add"] == "arithmetic"
    assert Function.LOWERINGS.family["bar"] == "sync"
    assert Function.LOWERINGS.family["shfl"] == "sync"


def test_the_warp_vectorized_form_installs_the_families_with_vector_lowerings():
    families = _families()
    with_vector = {name for name, r in families.items() if r.vector}
    assert {r.family for r in VectorFunction.VECTOR_LOWERINGS.registries} == with_vector
    # every warp-vectorized lowering may fall back to a per-thread one, lane by lane
    assert set(VectorFunction.VECTOR_LOWERINGS.table) <= set(Function.LOWERINGS.table)


def test_an_opcode_two_installed_families_lower_is_refused():
    a, b = Registry("one"), Registry("two")
    a.lower("add")(lambda self, inst: None)
    b.lower("add")(lambda self, inst: None)
    with pytest.raises(ValueError, match="add is lowered by two installed families: one and two"):
        Lowerings(a, b)
    assert Lowerings(a).get("add") is not None and Lowerings(a).get("sub") is None
    with pytest.raises(ValueError, match="two per-thread lowerings of add in the one family"):
        a.lower("add")(lambda self, inst: None)


def test_an_opcode_no_installed_family_lowers_names_its_ptx_line():
    import numpy as np
    import dptx
    from dptx.errors import PtxUnsupportedError
    ptx = """
.version 8.0
.target sm_80
.address_size 64
.visible .entry k(.param .u64 p)
{
    .reg .b32 %r<3>;
    mov.u32 %r1, 1;
    frobnicate.b32 %r2, %r1;
    ret;
}
"""
    kernel = dptx.RawModule(ptx=ptx).get_function("k")
    with pytest.raises(PtxUnsupportedError, match="PTX line 9: frobnicate.b32 is not supported"):
        dptx.cpu.launch(kernel, (1,), (1,), (np.zeros(1, np.int32),))
