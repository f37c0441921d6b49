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
HELPERS = {"common", "registry", "exp_log", "sin_cos", "numeric_helpers"}


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
    assert len(families) == 15
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


def _lowering_classes() -> list:
    classes = []
    for info in pkgutil.iter_modules(lowering.__path__):
        module = importlib.import_module(f"{lowering.__name__}.{info.name}")
        classes += [c for c in vars(module).values()
                    if isinstance(c, type) and c.__module__ == module.__name__]
    return classes


def helpers_found_only_through_the_mixins(cls, classes) -> list:
    """The methods of other lowering modules that ``cls`` calls on ``self`` without having
    them among its own bases: found only because ``function.Function`` mixes every family in."""
    import ast
    import inspect
    import textwrap
    defined_elsewhere = {}
    for other in classes:
        if other.__module__ != cls.__module__:
            for name, value in vars(other).items():
                if callable(value) or isinstance(value, (staticmethod, property)):
                    defined_elsewhere.setdefault(name, other.__qualname__)
    used = {n.attr for n in ast.walk(ast.parse(textwrap.dedent(inspect.getsource(cls))))
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
            and n.value.id == "self"}
    own = {name for klass in cls.__mro__ for name in vars(klass)}
    core = {name for klass in (Function.__mro__[1],) + VectorFunction.__mro__
            if not klass.__module__.startswith(lowering.__name__) for name in vars(klass)}
    return sorted(f"{cls.__qualname__} uses {name} of {defined_elsewhere[name]}"
                  for name in used & set(defined_elsewhere) - own - core)


def test_no_family_relies_on_another_familys_helpers_through_the_mixins():
    """A family that uses another's helpers names the helper class among its bases
    (``NumericHelpers``, ``MbarrierHelpers``, ``MatrixHelpers``...), so that what it relies on
    is written where it is defined."""
    classes = _lowering_classes()
    found = [line for cls in classes for line in helpers_found_only_through_the_mixins(cls, classes)]
    assert not found, "\n".join(found)
    # the check itself: a family calling another's helper without the base is found
    from dptx.cpu.renderer.lowering import numeric_helpers

    class Planted:
        def op(self, inst):
            return self.ftz(inst, "%v", "float")
    assert helpers_found_only_through_the_mixins(Planted, classes) == [
        f"{Planted.__qualname__} uses ftz of {numeric_helpers.NumericHelpers.__qualname__}"]
