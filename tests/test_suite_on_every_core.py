"""The suite's own machinery under pytest-xdist (tests/conftest.py): a test marked ``alone``
runs with no other test of the run beside it, while the others run side by side."""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

TESTS = '''
import json, os, time
import pytest

def _record(name):
    t0 = time.monotonic()
    time.sleep(0.4)
    with open(os.environ["SPANS"], "a") as f:
        f.write(json.dumps([name, t0, time.monotonic()]) + "\\n")

@pytest.mark.parametrize("i", range(6))
def test_beside(i):
    _record(f"beside-{i}")

@pytest.mark.alone("times itself")
@pytest.mark.parametrize("i", range(2))
def test_alone(i):
    _record(f"alone-{i}")
'''


@pytest.mark.skipif(sys.platform == "win32", reason="flock")
def test_an_alone_test_runs_with_nothing_beside_it_and_the_others_in_parallel(tmp_path):
    (tmp_path / "test_spans.py").write_text(textwrap.dedent(TESTS))
    spans = tmp_path / "spans.jsonl"
    # the suite's conftest as a plugin, on a folder of its own (no setup.cfg: its options)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "tests.conftest", "-p", "no:cacheprovider",
         "-n", "2", "--dist", "load", "-c", "/dev/null", "--rootdir", str(tmp_path),
         str(tmp_path / "test_spans.py")],
        cwd=ROOT, capture_output=True, text=True, timeout=240,
        env={**os.environ, "SPANS": str(spans), "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [json.loads(line) for line in spans.read_text().splitlines()]
    assert len(rows) == 8, rows
    alone = [r for r in rows if r[0].startswith("alone")]
    beside = [r for r in rows if r[0].startswith("beside")]
    for name, a0, a1 in alone:
        for other, b0, b1 in rows:
            if other != name:
                assert b1 <= a0 or b0 >= a1, (name, other, rows)    # no overlap
    # and the others did run two at once (6 sleeps of 0.4 s on 2 workers)
    overlapping = sum(1 for i, (_, a0, a1) in enumerate(beside)
                      for (_, b0, b1) in beside[i + 1:] if a0 < b1 and b0 < a1)
    assert overlapping >= 1, rows
