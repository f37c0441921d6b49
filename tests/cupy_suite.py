"""CuPy's own tests against dptx (issue 45), from a CuPy source checkout the user gives:

    python tests/cupy_suite.py CUPY_SOURCE [--only FOLDER_OR_FILE ...] [--timeout 90] [-n 2]

CUPY_SOURCE is a CuPy checkout (a folder holding ``cupy/testing`` and ``tests/cupy_tests``) or
a bare git repository (its HEAD is read with ``git archive``). Nothing of CuPy is copied into
this repository: in a temporary folder the harness builds a ``cupy`` package that is dptx
(``import cupy`` gives dptx's names; a name dptx lacks is an AttributeError, never numpy's,
which would compare numpy with itself), with CuPy's own ``cupy.testing`` from the checkout,
and runs pytest on the test files of ``SCOPE`` there (each test with a time limit; CuPy's
tests of ``__cuda_array_interface__`` excluded: ``EXCLUDED``), then
prints how many passed per folder and in all. ``tests/test_cupy_suite.py`` runs it on a
small part when ``DPTX_CUPY_SOURCE`` names a checkout."""
from __future__ import annotations

import argparse
import collections
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree

# the test files in scope (under tests/cupy_tests): the numpy chapters dptx implements
SCOPE = [
    "creation_tests/test_basic.py", "creation_tests/test_from_data.py",
    "creation_tests/test_ranges.py", "creation_tests/test_matrix.py",
    "manipulation_tests/test_basic.py", "manipulation_tests/test_dims.py",
    "manipulation_tests/test_join.py", "manipulation_tests/test_rearrange.py",
    "manipulation_tests/test_shape.py", "manipulation_tests/test_split.py",
    "manipulation_tests/test_tiling.py", "manipulation_tests/test_transpose.py",
    "manipulation_tests/test_add_remove.py", "manipulation_tests/test_kind.py",
    "indexing_tests/test_generate.py", "indexing_tests/test_indexing.py",
    "indexing_tests/test_insert.py", "indexing_tests/test_iterate.py",
    "math_tests/test_arithmetic.py", "math_tests/test_explog.py",
    "math_tests/test_floating.py", "math_tests/test_hyperbolic.py", "math_tests/test_misc.py",
    "math_tests/test_rational.py", "math_tests/test_rounding.py",
    "math_tests/test_sumprod.py", "math_tests/test_trigonometric.py",
    "sorting_tests/test_count.py", "sorting_tests/test_search.py", "sorting_tests/test_sort.py",
    "statistics_tests/test_correlation.py", "statistics_tests/test_histogram.py",
    "statistics_tests/test_meanvar.py", "statistics_tests/test_order.py",
    "logic_tests/test_comparison.py", "logic_tests/test_content.py",
    "logic_tests/test_ops.py", "logic_tests/test_truth.py", "logic_tests/test_type_test.py",
    "linalg_tests/test_decomposition.py", "linalg_tests/test_eigenvalue.py",
    "linalg_tests/test_norms.py", "linalg_tests/test_product.py",
    "linalg_tests/test_solve.py", "linalg_tests/test_einsum.py",
    "binary_tests/test_elementwise.py", "binary_tests/test_packing.py",
    "padding_tests/test_pad.py", "fft_tests/test_fft.py",
    "core_tests/test_ndarray_elementwise_op.py", "core_tests/test_ndarray_math.py",
    "core_tests/test_ndarray_reduction.py", "core_tests/test_ndarray_copy_and_view.py",
]

# CuPy's tests of what a dptx array cannot be: __cuda_array_interface__ (its memory lives on
# the cluster's workers, not at a device pointer of this process)
EXCLUDED = "not CudaArrayInterface"

# the ``cupy`` package the tests import: dptx, with CuPy's testing helpers
SHIM = '''"""cupy as dptx, for CuPy's own tests (dptx's tests/cupy_suite.py)."""
import numpy as _numpy
import dptx as _dptx
from dptx import *  # noqa: F401,F403
from dptx import cuda, fft, linalg, random, testing as _assertions  # noqa: F401
from . import exceptions  # noqa: F401
import sys as _sys
for _name in ("cuda", "fft", "linalg", "random"):   # (``import cupy.cuda`` too)
    _sys.modules[__name__ + "." + _name] = getattr(_dptx, _name)


def __getattr__(name):
    # dptx's names only: a name dptx lacks is CuPy's test failing, never numpy's
    return getattr(_dptx, name)


import importlib as _importlib  # noqa: E402
testing = _importlib.import_module(__name__ + ".testing")  # CuPy's helpers, not dptx.testing
'''
EXCEPTIONS = '''from numpy.exceptions import *  # noqa: F401,F403
'''
INTERNAL = '''import functools
import operator


def prod(args):
    return functools.reduce(operator.mul, args, 1)
'''
CONFTEST = '''import numpy
import pytest

# dptx runs on an embedded cluster started by the first array: one per pytest process
'''


def _checkout(source: pathlib.Path, into: pathlib.Path) -> pathlib.Path:
    """The CuPy tree: ``source`` itself, or its HEAD extracted into ``into``."""
    if (source / "cupy" / "testing").is_dir():
        return source
    archive = subprocess.run(["git", "--git-dir", str(source), "archive", "HEAD",
                              "cupy/testing", "tests/cupy_tests"], capture_output=True,
                             check=True).stdout
    into.mkdir(parents=True, exist_ok=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def build(source: pathlib.Path, work: pathlib.Path, files: list) -> list:
    """The test folder in ``work``: the shim, CuPy's testing helpers, the files in scope
    (those the checkout has). Returns their paths."""
    tree = _checkout(source, work / "checkout")
    pkg = work / "site" / "cupy"
    (pkg / "_core").mkdir(parents=True)
    (pkg / "__init__.py").write_text(SHIM)
    (pkg / "exceptions.py").write_text(EXCEPTIONS)
    (pkg / "_util.py").write_text("class PerformanceWarning(RuntimeWarning):\n    pass\n")
    (pkg / "_core" / "__init__.py").write_text("")
    (pkg / "_core" / "internal.py").write_text(INTERNAL)
    shutil.copytree(tree / "cupy" / "testing", pkg / "testing")
    # cupyx: what CuPy's helpers ask of it (dptx has no sparse matrices)
    sparse = work / "site" / "cupyx" / "scipy" / "sparse"
    sparse.mkdir(parents=True)
    for folder in (sparse.parent.parent, sparse.parent):
        (folder / "__init__.py").write_text("")
    (sparse / "__init__.py").write_text("def issparse(x):\n    return False\n")
    tests = work / "tests"
    tests.mkdir()
    (tests / "conftest.py").write_text(CONFTEST)
    found = []
    for name in files:
        src = tree / "tests" / "cupy_tests" / name
        if src.is_file():
            dst = tests / name
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(src, dst)
            found.append(dst)
    return found


def run(source, files=SCOPE, timeout: int = 90, processes: int = 1, out=sys.stdout,
        log=None) -> dict:
    """Run the files; {folder: (passed, failed or errors, skipped)} and the total under
    "all", printed as a table; pytest's own output goes to ``log`` (a path) when given."""
    with tempfile.TemporaryDirectory(prefix="dptx-cupy-suite-") as tmp:
        work = pathlib.Path(tmp)
        found = build(pathlib.Path(source), work, files)
        report = work / "report.xml"
        # (the workers of dptx's embedded cluster inherit the path: the GPU executor must
        # not take the shim for CuPy; this harness runs on CPU workers)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [str(work / "site"), os.environ.get("PYTHONPATH", "")]),
            DPTX_CUPY_MODULE="dptx_cupy_suite_has_no_cupy")
        command = [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider",
                   "-o", "addopts=", "--rootdir", str(work / "tests"),
                   f"--timeout={timeout}", f"--junitxml={report}", "-k", EXCLUDED,
                   # (a file that imports CuPy's internals fails alone: one failure)
                   "--continue-on-collection-errors"]
        if processes > 1:
            command += ["-n", str(processes)]
        with open(log or os.devnull, "w") as sink:
            subprocess.run(command + [str(f) for f in found], cwd=work / "tests", env=env,
                           stdout=sink, stderr=subprocess.STDOUT)
        counts = collections.defaultdict(lambda: [0, 0, 0])
        if report.exists():
            for case in ElementTree.parse(report).iter("testcase"):
                folder = (case.get("classname") or "?").split(".")[0]
                kinds = {child.tag for child in case}
                k = 2 if "skipped" in kinds else 1 if kinds & {"failure", "error"} else 0
                counts[folder][k] += 1
                counts["all"][k] += 1
    print(f"{'folder':<22}{'passed':>8}{'failed':>8}{'skipped':>9}{'pass rate':>11}", file=out)
    for folder in sorted(counts, key=lambda f: (f == "all", f)):
        p, f, s = counts[folder]
        rate = f"{100 * p / (p + f):.1f}%" if p + f else "-"
        print(f"{folder:<22}{p:>8}{f:>8}{s:>9}{rate:>11}", file=out)
    return {k: tuple(v) for k, v in counts.items()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("source", help="a CuPy source checkout, or a bare git repository of one")
    ap.add_argument("--only", nargs="*", default=None,
                    help="folders or files of SCOPE to run (default: all of it)")
    ap.add_argument("--timeout", type=int, default=90, help="seconds per test")
    ap.add_argument("-n", type=int, default=1, help="pytest processes (pytest-xdist)")
    ap.add_argument("--log", default=None, help="a file for pytest's own output")
    args = ap.parse_args(argv)
    files = SCOPE if not args.only else [f for f in SCOPE
                                         if any(f.startswith(o) for o in args.only)]
    totals = run(args.source, files, args.timeout, args.n, log=args.log)
    return 0 if totals.get("all") else 1


if __name__ == "__main__":
    raise SystemExit(main())
