"""tinygrad's kernels, rendered to PTX by tinygrad's own PTX renderer, run on dptx arrays:
docs/frameworks.md's program as written, from a scratch folder (tinygrad on its NULL
device: no backend of its own). Skipped without tinygrad."""
import os
import subprocess
import sys

import pytest

from tests.test_scripts import frameworks_page_program

pytest.importorskip("tinygrad")


@pytest.mark.timeout(600)
def test_the_frameworks_pages_tinygrad_program_runs_as_written(tmp_path):
    (tmp_path / "script.py").write_text(frameworks_page_program("from tinygrad import Tensor"))
    done = subprocess.run([sys.executable, "script.py"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300, env={**os.environ, "DEV": "NULL"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["[1.", "3.", "5.", "7.]", "[1.e+06]"]
