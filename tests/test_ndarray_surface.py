"""``dptx.ndarray``'s surface in one place: what its class body does not define comes from
``dptx._ndarray_surface.SURFACE``, and nothing else attaches to the class."""
import ast
from pathlib import Path

import numpy as np

import dptx
from dptx._ndarray_surface import SURFACE
from dptx.runtime.ndarray import ndarray

ROOT = Path(__file__).resolve().parents[1]


def test_every_name_of_the_table_is_on_the_class_as_the_table_says():
    for name, value in SURFACE.items():
        assert name in vars(ndarray), name
        assert vars(ndarray)[name] is value, name


def test_the_class_body_and_the_table_together_are_the_whole_class():
    """Every attribute of ndarray was defined by its class body or comes from the table
    (an attribute attached from anywhere else would be neither)."""
    source = (ROOT / "dptx" / "runtime" / "ndarray.py").read_text()
    body = next(n for n in ast.parse(source).body
                if isinstance(n, ast.ClassDef) and n.name == "ndarray")
    defined = set()
    for node in body.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            defined.add(node.name)
        elif isinstance(node, ast.Assign):
            defined |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            defined.add(node.target.id)
    implicit = {"__module__", "__qualname__", "__doc__", "__dict__", "__weakref__",
                "__firstlineno__", "__static_attributes__"}
    stray = set(vars(ndarray)) - defined - set(SURFACE) - implicit
    assert not stray, f"attached to ndarray outside the table: {sorted(stray)}"


def test_no_module_attaches_to_the_class_but_the_surface():
    """``ndarray.x = ...`` or ``setattr(ndarray, ...)`` anywhere in the package but
    dptx/_ndarray_surface.py is refused (the class's reader would not find it)."""
    found = []
    for path in sorted((ROOT / "dptx").rglob("*.py")):
        if path.name == "_ndarray_surface.py" or "corpus" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            targets = node.targets if isinstance(node, ast.Assign) else []
            for t in targets:
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) \
                        and t.value.id == "ndarray":
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                    and node.func.id == "setattr" and node.args \
                    and isinstance(node.args[0], ast.Name) and node.args[0].id == "ndarray":
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not found, found


def test_the_class_docstring_points_to_the_table():
    assert "dptx._ndarray_surface" in ndarray.__doc__ and "SURFACE" in ndarray.__doc__


def test_numpys_methods_that_dptx_has_are_each_found_in_one_of_the_two_places():
    """The methods of numpy's ndarray that dptx's has: each defined by the class body or the
    table (not, say, inherited from object)."""
    have = [n for n in dir(np.ndarray) if not n.startswith("_") and hasattr(ndarray, n)]
    assert len(have) > 50
    for name in have:
        assert name in vars(ndarray), name
    assert dptx.ndarray is ndarray
