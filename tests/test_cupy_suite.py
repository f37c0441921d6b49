"""The CuPy test-suite harness (tests/cupy_suite.py) on a part of CuPy's own tests, when
``DPTX_CUPY_SOURCE`` names a CuPy checkout (or a bare git repository of one); skipped
otherwise (CuPy's tests are not in this repository)."""
import io
import os

import pytest

from tests import cupy_suite

SOURCE = os.environ.get("DPTX_CUPY_SOURCE")


@pytest.mark.timeout(1800)
@pytest.mark.skipif(not SOURCE, reason="DPTX_CUPY_SOURCE names no CuPy checkout")
def test_cupy_ranges_tests_pass_against_dptx():
    out = io.StringIO()
    counts = cupy_suite.run(SOURCE, ["creation_tests/test_ranges.py"], timeout=120, out=out)
    passed, failed, _ = counts["all"]
    assert passed + failed >= 50, out.getvalue()
    assert passed >= 0.9 * (passed + failed), out.getvalue()
