"""What importing the packages does, and which way their imports run."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _modules_after(code: str) -> set:
    done = subprocess.run([sys.executable, "-c", code + "\nimport sys\nprint(' '.join(sys.modules))"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return set(done.stdout.split())


def test_importing_scheduler_plugins_has_no_side_effects():
    """The client's planner takes the model and the planner from scheduler_plugins: that
    loads neither the plugin's scheduler hooks nor the dashboard (Bokeh), and registers no
    dashboard page (the plugin adds its page when it starts: tests/cluster/test_dashboard.py)."""
    loaded = _modules_after("import graphs.plan, scheduler_plugins")
    assert "scheduler_plugins.planner" in loaded
    assert not {"bokeh", "scheduler_plugins.plugin", "scheduler_plugins.dashboard",
                "distributed.dashboard.scheduler"} & loaded
    # the package's names still resolve (on first use)
    loaded = _modules_after("from scheduler_plugins import DptxSchedulerPlugin, ThroughputModel")
    assert "scheduler_plugins.plugin" in loaded


# -- which way imports run ---------------------------------------------------------------------
# The layers, bottom first (the rules, written once; docs/architecture.md draws them). A module
# may import its own layer and the layers below, never one above; the units of a layer in
# SIBLINGS do not import each other (the CPU and GPU executors).
# Imports inside functions count: a lazy import guards a cycle or an optional dependency, it
# does not make an upward import right.
LAYERS = [
    ("foundation", ["dptx._version", "dptx.errors", "dptx.demangle", "dptx.config",
                    "dptx.device"]),
    ("PTX front end", ["dptx.ptx"]),
    ("executors", ["dptx.cpu", "dptx.gpu"]),
    ("scheduler plugin", ["scheduler_plugins"]),
    ("task graphs", ["graphs"]),
    ("runtime", ["dptx.runtime"]),
    ("kernel tools", ["dptx._core"]),
    ("numpy's chapters", ["dptx._creation", "dptx._manipulation", "dptx._indexing",
                          "dptx._math", "dptx._sorting", "dptx._statistics", "dptx._logic",
                          "dptx._io", "dptx._ufunc", "dptx._array_api", "dptx.linalg",
                          "dptx.random"]),
    ("public face", ["dptx"]),
]
SIBLINGS = {"executors"}
PACKAGES = ("dptx", "graphs", "scheduler_plugins")
SKIPPED = ("dptx/corpus", "dptx/include")       # data shipped with the package, not its code


def _unit(module: str):
    """(layer index, unit) of a module: the longest unit name that prefixes it."""
    best = None
    for index, (_, units) in enumerate(LAYERS):
        for unit in units:
            if (module == unit or module.startswith(unit + ".")) and \
                    (best is None or len(unit) > len(best[1])):
                best = (index, unit)
    return best


def _imports(module: str, is_package: bool, source: str):
    """(imported module, line) of every import in the source, relative ones resolved."""
    import ast
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1])
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module
            for alias in node.names:
                # "from . import x" / "from pkg import sub": the submodule when it is one
                yield f"{target}.{alias.name}", node.lineno


def upward_imports(module: str, is_package: bool, source: str) -> list:
    """Each import of ``source`` (module ``module``) that runs up the layers or across
    siblings, as "module:line imports target (layer -> layer)"."""
    here = _unit(module)
    found = []
    for target, line in _imports(module, is_package, source):
        if target.split(".")[0] not in PACKAGES:
            continue
        there = _unit(target)
        if there is None or here is None:
            continue
        across = there[0] == here[0] and there[1] != here[1] and LAYERS[here[0]][0] in SIBLINGS
        if there[0] > here[0] or across:
            found.append(f"{module}:{line} imports {target} "
                         f"({LAYERS[here[0]][0]} -> {LAYERS[there[0]][0]})")
    return found


def _package_modules():
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT)
            if any(str(rel).startswith(s) for s in SKIPPED):
                continue
            parts = list(rel.with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            if is_package:
                parts = parts[:-1]
            yield ".".join(parts), is_package, path


def test_imports_run_one_way_down_the_layers():
    found = []
    for module, is_package, path in _package_modules():
        found += upward_imports(module, is_package, path.read_text())
    assert not found, "imports that run up the layers:\n" + "\n".join(found)


def test_a_planted_upward_import_is_found():
    """The checker itself: an executor importing the runtime, the front end importing an
    executor, the CPU executor importing the GPU's (siblings), each lazily inside a function."""
    planted = {("dptx.cpu.jit", False): "def f():\n    from ..runtime import kernel_launch\n",
               ("dptx.ptx", True): "from ..cpu import executor\n",
               ("dptx.cpu.executor", False): "import numpy\n\ndef g():\n    from ..gpu import runner\n",
               ("graphs.tasks", False): "def h():\n    import dptx.runtime.ndarray\n",
               ("dptx.runtime.ndarray", False): "def i():\n    from .._core import ufuncs\n",
               ("dptx._core.ufuncs", False): "from .._manipulation.views import moveaxis\n",
               ("dptx.linalg._svd", False): "from .. import _ndarray_surface\n"}
    for (module, is_package), source in planted.items():
        assert len(upward_imports(module, is_package, source)) == 1, (module, source)
    # and what is allowed: down, and within a unit
    assert upward_imports("dptx.runtime.ndarray", False, "from ..cpu import executor\n"
                          "import graphs.plan\nfrom ..device import Pointer\n") == []
    # numpy's chapters use one another (statistics sorts, linear algebra builds matrices)
    assert upward_imports("dptx._statistics.statistics", False,
                          "from .._sorting import sorting\nfrom ..linalg import _lu\n"
                          "from .._core import reductions\n") == []
    assert upward_imports("dptx.cpu.executor", False, "from . import jit\nfrom ..ptx import ir\n"
                          "from ..device.window import Window\n") == []


# -- imports inside functions --------------------------------------------------------------------
# An import inside a function defers loading a module; it is kept only where that guards
# something, and says what in a comment starting "# lazy:" (on its line, or in the comments just
# above the run of imports it belongs to). What the guards keep light is tested below.


def lazy_imports_without_a_reason(source: str) -> list:
    """Line numbers of the imports inside functions that give no "# lazy:" reason."""
    import ast
    lines = source.split("\n")
    tree = ast.parse(source)
    spans = []
    for f in ast.walk(tree):
        if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)):
            spans += [(n.lineno, n.end_lineno) for n in ast.walk(f)
                      if isinstance(n, (ast.Import, ast.ImportFrom))]
    in_import = {i for a, b in spans for i in range(a, b + 1)}
    missing = []
    for a, b in sorted(set(spans)):
        if "# lazy:" in lines[b - 1]:
            continue
        k = a - 1
        while k >= 1 and k in in_import:            # up the run of imports
            k -= 1
        comments = []
        while k >= 1 and lines[k - 1].strip().startswith("#"):
            comments.append(lines[k - 1].strip())
            k -= 1
        if not any(c.startswith("# lazy:") for c in comments):
            missing.append(a)
    return missing


def test_every_import_inside_a_function_says_why():
    found = []
    for module, is_package, path in _package_modules():
        found += [f"{path.relative_to(ROOT)}:{line}"
                  for line in lazy_imports_without_a_reason(path.read_text())]
    assert not found, "imports inside functions with no '# lazy:' reason:\n" + "\n".join(found)


def test_a_lazy_import_without_a_reason_is_found():
    assert lazy_imports_without_a_reason("def f():\n    import json\n") == [2]
    assert lazy_imports_without_a_reason("def f():\n    # why\n    import json\n") == [3]
    assert lazy_imports_without_a_reason(
        "def f():\n    # lazy: optional\n    import a\n    from b import c\n") == []
    assert lazy_imports_without_a_reason("def f():\n    import a  # lazy: optional\n") == []
    assert lazy_imports_without_a_reason("import json\n") == []


def test_what_the_lazy_imports_keep_light():
    """``import dptx`` loads neither Dask's distributed nor the executors (LLVM, CuPy) nor the
    dashboard; a client that builds and submits task graphs loads no executor; the front end
    and the CPU executor load nothing of the cluster."""
    heavy = {"distributed", "graphs", "scheduler_plugins", "llvmlite", "dptx.cpu", "dptx.gpu",
             "cuda.bindings", "cupy", "bokeh", "IPython"}
    assert not heavy & _modules_after("import dptx")
    client = _modules_after("import dptx.runtime.kernel_launch, graphs.launch, graphs.tasks, "
                            "graphs.session, dptx.runtime.groups")
    assert "graphs.tasks" in client
    assert not {"llvmlite", "dptx.cpu", "dptx.gpu", "cupy", "bokeh"} & client
    assert not {"distributed", "graphs", "llvmlite"} & _modules_after("import dptx.ptx")
    assert not {"distributed", "graphs"} & _modules_after("import dptx.cpu")


def test_the_cpu_renderer_knows_nothing_of_running():
    """dptx/cpu/renderer (PTX -> LLVM IR) imports nothing of what runs its output (the
    executor, forms, JIT, address space, watchdog in dptx/cpu): a renderer for another
    target starts from it alone."""
    found = []
    for module, is_package, path in _package_modules():
        if not module.startswith("dptx.cpu.renderer"):
            continue
        for target, line in _imports(module, is_package, path.read_text()):
            if target.startswith("dptx.cpu.") and not target.startswith("dptx.cpu.renderer"):
                found.append(f"{module}:{line} imports {target}")
    assert not found, found
    # the check itself: a planted import of the executor is found
    planted = list(_imports("dptx.cpu.renderer.codegen", False, "from ..executor import launch\n"))
    assert planted[0][0] == "dptx.cpu.executor.launch"
